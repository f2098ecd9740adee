//! The command-line conventions of tcpdump, tshark and Suricata: `-r FILE`, `-` for standard input, `--rules` taking
//! one file or a directory per use (it no longer swallows the capture that follows it), `--threads 0` for every
//! core, one-line refusals of out-of-range values, and warnings for options that have no effect.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn flowbundle(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn read_flag_standard_input_and_rules_before_the_capture_read_the_same() {
    let (Some(cap), Some(rules)) = (
        flowbundle_testsupport::data("reassembly/example2.pcap"),
        flowbundle_testsupport::data("rules/snort3-community.rules"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let eve = |name: &str| dir.path().join(name);
    // The reference: capture first, rules after.
    ok(&flowbundle(&[
        "inspect",
        s(&cap),
        "--rules",
        s(&rules),
        "--threads",
        "1",
        "-o",
        s(&eve("a.json")),
    ]));
    let reference = std::fs::read_to_string(eve("a.json")).unwrap();
    assert!(
        reference.contains("\"event_type\":\"alert\""),
        "the rules fire on this capture"
    );
    // `--rules FILE` before the capture takes one value: the capture stays an input.
    ok(&flowbundle(&[
        "inspect",
        "--rules",
        s(&rules),
        s(&cap),
        "--threads",
        "1",
        "-o",
        s(&eve("b.json")),
    ]));
    // `-r FILE`, as tcpdump and Suricata read.
    ok(&flowbundle(&[
        "inspect",
        "--rules",
        s(&rules),
        "-r",
        s(&cap),
        "--threads",
        "1",
        "-o",
        s(&eve("c.json")),
    ]));
    for name in ["b.json", "c.json"] {
        assert_eq!(
            std::fs::read_to_string(eve(name)).unwrap(),
            reference,
            "{name}"
        );
    }
    // `-`: the capture on standard input, single-threaded and streaming.
    for threads in ["1", "2"] {
        let out = eve(&format!("stdin{threads}.json"));
        let run = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .args([
                "inspect",
                "-",
                "--rules",
                s(&rules),
                "--threads",
                threads,
                "-o",
                s(&out),
            ])
            .stdin(Stdio::from(std::fs::File::open(&cap).unwrap()))
            .output()
            .unwrap();
        ok(&run);
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            reference,
            "--threads {threads}"
        );
    }
}

#[test]
fn a_rules_directory_is_its_rules_files_in_name_order() {
    let (Some(cap), Some(rules)) = (
        flowbundle_testsupport::data("reassembly/example2.pcap"),
        flowbundle_testsupport::data("rules/snort3-community.rules"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    std::fs::create_dir(&set).unwrap();
    // Two rule files (a second sid for one of the community rules' contents would be a duplicate; a rule of its
    // own is not) and a file that is not a rule file, which the directory form leaves out.
    std::fs::copy(&rules, set.join("a-community.rules")).unwrap();
    std::fs::write(
        set.join("b-local.rules"),
        "alert tcp any any -> any 80 (msg:\"local GET\"; content:\"GET \"; sid:9000001; rev:1;)\n",
    )
    .unwrap();
    std::fs::write(set.join("notes.txt"), "not rules\n").unwrap();
    let summary = |args: &[&str]| {
        let mut all = vec!["inspect", s(&cap), "--threads", "1"];
        all.extend_from_slice(args);
        ok(&flowbundle(&all))
    };
    let by_dir = summary(&["--rules", s(&set)]);
    let by_files = summary(&[
        "--rules",
        s(&set.join("a-community.rules")),
        "--rules",
        s(&set.join("b-local.rules")),
    ]);
    let rules_line = |text: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with("rules:"))
            .unwrap_or_else(|| panic!("no rules line in {text}"))
            .to_string()
    };
    assert_eq!(rules_line(&by_dir), rules_line(&by_files));
    assert!(
        by_dir.contains("9000001"),
        "the local rule loaded and fired: {by_dir}"
    );
    // A directory without rule files is an error, in one line.
    let empty = tempfile::tempdir().unwrap();
    let run = flowbundle(&["inspect", s(&cap), "--rules", s(empty.path())]);
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no *.rules file"), "{err}");
}

#[test]
fn thread_counts_ranges_and_options_without_effect() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    // 0: every core.
    let run = flowbundle(&["inspect", s(&cap), "--threads", "0"]);
    let out = ok(&run);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores > 1 {
        assert!(out.contains(&format!("workers: {cores} ")), "{out}");
    }
    // Out of range: one line, non-zero exit.
    for args in [
        &["--packet-buffers", "0"][..],
        &["--max-flows", "0"][..],
        &["--flow-sweep", "inf"][..],
        &["--threads", "1", "--seconds", "1"][..],
    ] {
        let mut all = vec!["inspect", s(&cap)];
        all.extend_from_slice(args);
        let run = flowbundle(&all);
        assert!(!run.status.success(), "{args:?} accepted");
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("flowbundle: "), "{err}");
    }
    // An option that does nothing in this mode says so.
    let run = flowbundle(&["inspect", s(&cap), "--threads", "1", "--scheduler", "dh"]);
    ok(&run);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("--scheduler has no effect"), "{err}");
    // bench's thread list reads 0 the same way.
    let run = flowbundle(&[
        "bench",
        s(&cap),
        "--threads",
        "0",
        "--scheduler",
        "lfb",
        "--workload",
        "null",
        "--reps",
        "1",
    ]);
    ok(&run);
}
