//! Inputs that can be read only once (standard input, a FIFO, a shell's `<(...)`): one named twice is refused before
//! anything is read, and what the summary says of an input's link types comes from the run's own reading, never
//! from opening it again.

mod common;

use common::{decode_line, inspect_piped, user0_pcap};
use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A FIFO made in `dir`.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let st = Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("running mkfifo");
    assert!(st.success(), "mkfifo {}", path.display());
    path
}

/// A writer of `bytes` into the FIFO at `path`, on a thread: its open waits for a reader. Returns the thread and
/// whether its open found one.
fn fifo_writer(path: &Path, bytes: Vec<u8>) -> (std::thread::JoinHandle<()>, Arc<AtomicBool>) {
    let opened = Arc::new(AtomicBool::new(false));
    let (p, o) = (path.to_path_buf(), opened.clone());
    let t = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        o.store(true, Ordering::SeqCst);
        // A reader that stops early closes its end: the writer's error is expected then.
        let _ = f.write_all(&bytes);
    });
    (t, opened)
}

/// Ends a [`fifo_writer`] once the run is over: if no reader ever opened the FIFO, the writer still waits in its
/// open, and a reader opened here (the only one now) lets it through.
fn release(path: &Path, writer: std::thread::JoinHandle<()>, opened: &AtomicBool) {
    if !opened.load(Ordering::SeqCst) {
        let mut r = std::fs::File::open(path).unwrap();
        let _ = std::io::copy(&mut r, &mut std::io::sink());
    }
    writer.join().unwrap();
}

const RUNS: [&[&str]; 3] = [
    &["--threads", "1"],
    &["--threads", "2"],
    &["--threads", "2", "--scheduler", "dh"],
];

/// Standard input named as `-` and as `/dev/stdin` is one pipe: the second probe would have read the capture's
/// packets as a header. Refused with one line, nothing read.
#[test]
fn standard_input_named_twice_is_refused() {
    for names in [
        ["-", "/dev/stdin"],
        ["/dev/stdin", "/dev/stdin"],
        ["-", "-"],
    ] {
        let mut args: Vec<&OsStr> = names.iter().map(OsStr::new).collect();
        args.extend(["--threads", "1"].map(OsStr::new));
        let out = inspect_piped(&args, user0_pcap());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{names:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{names:?}: {err}");
        assert!(err.contains("can be read only once"), "{names:?}: {err}");
        assert!(out.stdout.is_empty(), "{names:?}: a run went ahead");
    }
}

/// A FIFO named twice is refused without being opened (an open would wait for a writer, and the two probes would
/// share its bytes).
#[test]
fn a_fifo_named_twice_is_refused_unopened() {
    let dir = tempfile::tempdir().unwrap();
    let path = fifo(dir.path(), "capture.fifo");
    let (writer, opened) = fifo_writer(&path, user0_pcap());
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .args([&path, &path])
        .output()
        .unwrap();
    let run_opened = opened.load(Ordering::SeqCst);
    release(&path, writer, &opened);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("are the same pipe") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!run_opened, "the refused run opened the FIFO");
}

/// The link types named in the summary are the ones the run read: from standard input (by `-` or its path) as from
/// a file (they were not named at all for `-`, and reopening `/dev/stdin` after the run found the pipe drained).
#[test]
fn link_types_of_standard_input_are_named() {
    for input in ["-", "/dev/stdin"] {
        for run in RUNS {
            let mut args: Vec<&OsStr> = run.iter().map(OsStr::new).collect();
            args.push(OsStr::new(input));
            let out = inspect_piped(&args, user0_pcap());
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{input} {run:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = decode_line(&stdout);
            assert!(
                line.contains(&format!(
                    "1 failed: unsupported link type linktype 147 in {input} 1"
                )),
                "{input} {run:?}: {line}"
            );
        }
    }
}

/// A FIFO read once: the run ends (reopening it after the run to learn its link types waited for a writer that
/// would never come) and names its link type.
#[test]
fn a_fifo_is_read_once_and_its_link_types_named() {
    let dir = tempfile::tempdir().unwrap();
    for (i, run) in RUNS.iter().enumerate() {
        let path = fifo(dir.path(), &format!("capture{i}.fifo"));
        let (writer, opened) = fifo_writer(&path, user0_pcap());
        let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .arg("inspect")
            .arg(&path)
            .args(*run)
            .output()
            .unwrap();
        release(&path, writer, &opened);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{run:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = decode_line(&stdout);
        assert!(
            line.contains(&format!(
                "1 failed: unsupported link type linktype 147 in {} 1",
                path.display()
            )),
            "{run:?}: {line}"
        );
    }
}
