//! Library warnings reach the user on standard error: a small FBQ table for the thread count makes the lfb
//! scheduler warn (the ANCS'10 sizing rule), and `RUST_LOG` can silence it.

use std::process::{Command, Output};

fn bench_with_small_fbq_table(rust_log: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_flowbundle"));
    cmd.args([
        "bench",
        "--synth",
        "many",
        "--synth-packets",
        "2000",
        "--workload",
        "null",
        "--scheduler",
        "lfb",
        "--threads",
        "2",
        "--fbq-table",
        "16",
        "--reps",
        "1",
        "--no-pin",
    ])
    .env("NO_COLOR", "1")
    .env_remove("RUST_LOG");
    if let Some(v) = rust_log {
        cmd.env("RUST_LOG", v);
    }
    let out = cmd.output().expect("running flowbundle bench");
    assert!(
        out.status.success(),
        "bench failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

const WARNING: &str = "FBQ table has fewer than 100 entries per worker";

#[test]
fn the_fbq_table_warning_is_printed_by_default() {
    let out = bench_with_small_fbq_table(None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains(WARNING))
        .unwrap_or_else(|| panic!("no warning on stderr:\n{stderr}"));
    assert!(line.trim_start().starts_with("WARN"), "{line}");
    assert!(line.contains("fbq_table=16"), "{line}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains(WARNING),
        "the warning went to standard output"
    );
}

#[test]
fn rust_log_error_silences_the_warning() {
    let out = bench_with_small_fbq_table(Some("error"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains(WARNING), "{stderr}");
}
