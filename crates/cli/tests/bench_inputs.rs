//! `bench` and `simulate` say when their input is not what was asked: a `--synth` profile that cannot make the
//! packets asked warns with what it makes, and `bench --rules` reports unreadable rules as `inspect` does (each as
//! `file:line: reason`, and a refusal when nothing loads).

use std::process::{Command, Output};

fn flowbundle(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_short_synthetic_trace_is_named() {
    for (cmd, extra) in [
        (
            "bench",
            &[
                "--workload",
                "null",
                "--threads",
                "1",
                "--scheduler",
                "lfb",
                "--reps",
                "1",
            ][..],
        ),
        ("simulate", &["--cores", "1", "--scheduler", "lfb"][..]),
    ] {
        let mut args = vec![cmd, "--synth", "many", "--synth-packets", "500"];
        args.extend_from_slice(extra);
        let run = flowbundle(&args);
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{cmd}: {err}");
        assert!(
            err.contains("warning: --synth many: cannot make 500 packets")
                && err.contains("they make 68"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn bench_reports_rule_errors_as_inspect_does() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("mixed.rules");
    std::fs::write(
        &rules,
        "alert tcp any any -> any 80 (msg:\"ok\"; content:\"GET\"; sid:1;)\n\
         alert tcp any any -> any 80 (msg:\"broken\"; content:\"GET; sid:2;)\n",
    )
    .unwrap();
    let bench = |rules: &std::path::Path| {
        flowbundle(&[
            "bench",
            cap.to_str().unwrap(),
            "--rules",
            rules.to_str().unwrap(),
            "--threads",
            "1",
            "--scheduler",
            "lfb",
            "--reps",
            "1",
        ])
    };
    let run = bench(&rules);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("mixed.rules:2: "),
        "the broken rule named by file and line: {err}"
    );
    // A capture given as rules loads nothing: refused in one line.
    let run = bench(&cap);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.lines().last().unwrap().starts_with("flowbundle: "),
        "{err}"
    );
}
