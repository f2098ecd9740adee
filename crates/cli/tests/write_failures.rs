//! Writing fails in two ways a command line tool meets every day, and neither is a crash: a reader that closed its
//! pipe (`| head -1`) ends the run quietly, and any other failed write (a full disk: `/dev/full`) is a one-line
//! error and a non-zero status. Errors are one line without a repeated cause or a backtrace.

use flowbundle_testsupport::data;
use std::process::{Command, Stdio};

fn flowbundle(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flowbundle"));
    c.args(args).env("RUST_BACKTRACE", "1");
    c
}

/// Runs with standard output a pipe whose reading end is closed before the command writes anything.
fn into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let mut child = flowbundle(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running flowbundle");
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs with standard output on `/dev/full` (every write fails with "No space left on device").
fn into_full_disk(args: &[&str]) -> (Option<i32>, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = flowbundle(args)
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .expect("running flowbundle");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let Some(cap) = data("reassembly/DnsPackets.pcap") else {
        return;
    };
    let cap = cap.to_str().unwrap();
    for args in [
        &["trace", "stats", "--json", "-", "--no-progress", cap][..],
        &["trace", "stats", "--no-progress", cap],
        &["simulate", cap, "--cores", "1-2"],
        &["inspect", cap, "-o", "-"],
        &["inspect", cap],
    ] {
        let (code, err) = into_closed_pipe(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_full_disk_is_a_one_line_error() {
    let Some(cap) = data("reassembly/DnsPackets.pcap") else {
        return;
    };
    let cap = cap.to_str().unwrap();
    for args in [
        &["trace", "stats", "--json", "-", "--no-progress", cap][..],
        &["simulate", cap, "--cores", "1-2"],
        &["inspect", cap, "-o", "-"],
        &["inspect", cap, "-o", "/dev/full"],
        &["trace", "cut", cap, "--packets", "1..=3", "-o", "/dev/full"],
    ] {
        let (code, err) = into_full_disk(args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // Progress notes may come first; the error is the last line, and said once.
        let last = err.lines().last().unwrap_or("");
        assert!(
            last.starts_with("flowbundle: ") && last.ends_with("No space left on device"),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("No space left").count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_missing_file_is_one_line_naming_it_once() {
    for args in [
        &["inspect", "missing.pcap"][..],
        &["trace", "stats", "missing.pcap"],
    ] {
        let out = flowbundle(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("flowbundle: "), "{args:?}: {err}");
        assert!(
            err.trim_end()
                .ends_with("missing.pcap: No such file or directory"),
            "{args:?}: {err}"
        );
        assert_eq!(err.matches("missing.pcap").count(), 1, "{args:?}: {err}");
    }
}
