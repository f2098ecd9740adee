//! Test support for flowbundle's tests, benches and examples (a dev-dependency only; never part of a binary).
//!
//! One locator for the shared reference material (`../shared/data` beside the checkout, see its `MANIFEST.md`) and
//! one rule for what a test does when that material or an external reference tool is missing:
//!
//! - by default it prints one line naming what is missing (`skipping <test>: ...`, on stderr past the test
//!   harness's output capture, so a plain `cargo test` shows it) and the test returns early;
//! - with `FLOWBUNDLE_REQUIRE_DATA=1` a missing data path panics instead, naming the path, and with
//!   `FLOWBUNDLE_REQUIRE_TOOLS=1` a missing tool (tshark, ndpiReader, an OpenCL platform, ...) does. CI sets both, so
//!   a CI run cannot pass without running every reference check.
//!
//! `FLOWBUNDLE_DATA=<dir>` replaces the data root (e.g. `FLOWBUNDLE_DATA=/nonexistent` to see what a checkout
//! without the data does). Every data path a test finds is recorded: one line `reference: <test> read <path>` on the
//! test's stdout and, when `FLOWBUNDLE_REFERENCE_LOG=<file>` is set, one line `<test>\t<path>` appended to that file,
//! so that a CI run can list the reference tests that ran (`scripts/test-all` does).
//!
//! The helpers never skip on their own: they return `None`/`false` and the caller returns, so a test reads
//! `let Some(dir) = flowbundle_testsupport::data("ndpi/pcap") else { return };`.

pub mod json_schema;
pub mod ndpi;

use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Environment variable: when `1`, missing shared data fails the test instead of skipping it.
pub const REQUIRE_DATA: &str = "FLOWBUNDLE_REQUIRE_DATA";
/// Environment variable: when `1`, a missing external tool fails the test instead of skipping it.
pub const REQUIRE_TOOLS: &str = "FLOWBUNDLE_REQUIRE_TOOLS";
/// Environment variable: the shared data root, replacing `../shared/data` beside the checkout.
pub const DATA_ROOT: &str = "FLOWBUNDLE_DATA";
/// Environment variable: a file that every data lookup appends `<test>\t<path>` to.
pub const REFERENCE_LOG: &str = "FLOWBUNDLE_REFERENCE_LOG";

/// The shared data root: `$FLOWBUNDLE_DATA` when set, else `../shared/data` beside the checkout.
pub fn data_root() -> PathBuf {
    match std::env::var_os(DATA_ROOT) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    }
}

/// `<data root>/<rel>` when it exists (file or folder); otherwise reports it missing (see [`missing_data`]) and
/// returns `None`.
pub fn data(rel: &str) -> Option<PathBuf> {
    let p = data_root().join(rel);
    if p.exists() {
        record(rel);
        Some(p)
    } else {
        missing_data(&p);
        None
    }
}

/// The capture files (`.pcap`, `.pcapng`) directly in the data folder `rel`, in name order, at most `count`; empty
/// when the folder is missing (reported as [`data`] does) or holds none.
pub fn captures(rel: &str, count: usize) -> Vec<PathBuf> {
    let Some(dir) = data(rel) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "pcap" || e == "pcapng"));
    files.sort();
    files.truncate(count);
    if files.is_empty() {
        missing_data(&dir.join("*.pcap"));
    }
    files
}

/// Reports a missing data path: panics naming it under `FLOWBUNDLE_REQUIRE_DATA=1`, else prints one line naming it.
/// For tests that find their material some other way than [`data`] (a file list that came out empty, ...).
pub fn missing_data(path: &Path) {
    missing(
        REQUIRE_DATA,
        &format!("shared test data {} not found", path.display()),
    );
}

/// An external tool on `PATH` (`tshark`, `ndpiReader`, `capinfos`, ...): its path, or `None` after reporting it
/// missing (see [`missing_tool`]).
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
    });
    if found.is_none() {
        missing_tool(&format!("{name} (not on PATH)"));
    }
    found
}

/// Reports a missing external tool or platform (`what` names it, e.g. "an OpenCL platform"): panics under
/// `FLOWBUNDLE_REQUIRE_TOOLS=1`, else prints one line naming it.
pub fn missing_tool(what: &str) {
    missing(
        REQUIRE_TOOLS,
        &format!("reference tool {what} not available"),
    );
}

/// Records that the running test checked reference material: `reference: <test> <what>` on stdout and in the
/// reference log (see the crate docs). [`data`] calls it for every path it finds; a test may add what it checked.
pub fn reference(what: impl Display) {
    let test = test_name();
    println!("reference: {test} {what}");
    let Some(log) = std::env::var_os(REFERENCE_LOG) else {
        return;
    };
    // One short write per line to a file opened for appending: lines from parallel tests do not interleave.
    let line = format!("{test}\t{what}\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!(
            "{REFERENCE_LOG}={}: cannot append: {e}",
            Path::new(&log).display()
        );
    }
}

/// True when `var` is set to `1` (or any value other than empty, `0` or `false`).
pub fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

fn record(rel: &str) {
    reference(format_args!("read {rel}"));
}

fn missing(var: &str, what: &str) {
    let test = test_name();
    if required(var) {
        panic!("{test}: {what} ({var} is set)");
    }
    // Straight to the process's stderr, past the test harness's capture, so a skip shows in a plain `cargo test`
    // run; one write, so it does not interleave with the harness's own lines.
    let line = format!("skipping {test}: {what} (set {var}=1 to fail instead)\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// `<test binary>::<test>`: the test binary's name without cargo's hash, and the test harness's thread name (the
/// test's path) or `main` in a bench, example or `harness = false` test.
fn test_name() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let binary = match exe.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => exe,
    };
    let thread = std::thread::current();
    format!("{binary}::{}", thread.name().unwrap_or("main"))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

/// EVE lines grouped by their `flow_id` (lines without one under ""), each flow's lines in output order: what tests
/// compare to check that a flow's events keep their order whatever the thread count.
pub fn eve_lines_by_flow(lines: &[String]) -> std::collections::HashMap<String, Vec<&str>> {
    let mut m: std::collections::HashMap<String, Vec<&str>> = std::collections::HashMap::new();
    for l in lines {
        let id = l
            .split("\"flow_id\":")
            .nth(1)
            .map(|r| r.split([',', '}']).next().unwrap_or("").to_owned())
            .unwrap_or_default();
        m.entry(id).or_default().push(l);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    // The environment is process-wide: one test sets and restores what it reads, so the cases run in sequence.
    #[test]
    fn missing_material_skips_or_fails_as_the_environment_says() {
        let restore = |var: &str, old: Option<std::ffi::OsString>| match old {
            // SAFETY: this is the only test in this binary that touches the environment.
            Some(v) => unsafe { std::env::set_var(var, v) },
            None => unsafe { std::env::remove_var(var) },
        };
        let (old_root, old_data, old_tools, old_log) = (
            std::env::var_os(DATA_ROOT),
            std::env::var_os(REQUIRE_DATA),
            std::env::var_os(REQUIRE_TOOLS),
            std::env::var_os(REFERENCE_LOG),
        );
        let root =
            std::env::temp_dir().join(format!("flowbundle-testsupport-{}", std::process::id()));
        std::fs::create_dir_all(root.join("present")).unwrap();
        unsafe {
            std::env::set_var(DATA_ROOT, &root);
            std::env::remove_var(REQUIRE_DATA);
            std::env::remove_var(REQUIRE_TOOLS);
            std::env::remove_var(REFERENCE_LOG);
        }
        assert_eq!(data("present"), Some(root.join("present")));
        assert_eq!(data("absent"), None);
        assert_eq!(tool("flowbundle-no-such-tool"), None);

        unsafe { std::env::set_var(REQUIRE_DATA, "1") };
        let err = std::panic::catch_unwind(|| data("absent")).unwrap_err();
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains(&root.join("absent").display().to_string()),
            "{msg}"
        );
        assert!(msg.contains(REQUIRE_DATA), "{msg}");
        assert_eq!(tool("flowbundle-no-such-tool"), None);

        unsafe { std::env::set_var(REQUIRE_TOOLS, "1") };
        let err = std::panic::catch_unwind(|| tool("flowbundle-no-such-tool")).unwrap_err();
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("flowbundle-no-such-tool"), "{msg}");
        assert!(tool("sh").is_some(), "sh is on PATH");

        std::fs::remove_dir_all(&root).unwrap();
        restore(DATA_ROOT, old_root);
        restore(REQUIRE_DATA, old_data);
        restore(REQUIRE_TOOLS, old_tools);
        restore(REFERENCE_LOG, old_log);
    }
}
