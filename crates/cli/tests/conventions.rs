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

/// The subcommands under `flowbundle`, `flowbundle trace` and `flowbundle hetero` (from their `--help`).
fn subcommands(parent: &[&str]) -> Vec<String> {
    let mut args = parent.to_vec();
    args.push("--help");
    let help = ok(&flowbundle(&args));
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_json_option_takes_a_file_or_a_dash() {
    // Every command's `--json` is `--json <OUT>`: a required value, so it never takes a bare form that would
    // swallow the positional argument after it.
    let mut commands: Vec<Vec<String>> = Vec::new();
    for top in subcommands(&[]) {
        let subs = subcommands(&[&top]);
        if subs.is_empty() {
            commands.push(vec![top]);
        } else {
            commands.extend(subs.into_iter().map(|s| vec![top.clone(), s]));
        }
    }
    let mut with_json = Vec::new();
    for c in &commands {
        let mut args: Vec<&str> = c.iter().map(String::as_str).collect();
        args.push("--help");
        let help = ok(&flowbundle(&args));
        for l in help.lines().filter(|l| l.contains("--json")) {
            // The option's own column (before its description), not a description that mentions `--json`.
            let option = l.trim_start().split("  ").next().unwrap_or("");
            if option.starts_with('-') && option.contains("--json") {
                assert!(option.contains("--json <OUT>"), "{c:?}: {l}");
                with_json.push(c.join(" "));
            }
        }
    }
    for want in [
        "trace stats",
        "trace synth",
        "trace merge",
        "trace anonymize",
        "trace rescale",
        "trace cut",
        "bench",
        "simulate",
        "hetero profile",
        "hetero run",
    ] {
        assert!(with_json.iter().any(|c| c == want), "{want}: {with_json:?}");
    }
}

#[test]
fn json_to_standard_output_or_a_file_before_the_capture() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/DnsPackets.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name);
    let parse = |bytes: &[u8], what: &str| -> serde_json::Value {
        serde_json::from_slice(bytes)
            .unwrap_or_else(|e| panic!("{what}: not one JSON document ({e})"))
    };
    // `--json -`: the JSON alone on standard output, the text on standard error.
    let run = flowbundle(&["trace", "stats", "--json", "-", "--no-progress", s(&cap)]);
    let json = parse(ok(&run).as_bytes(), "trace stats --json -");
    assert!(json["packets"].as_u64().is_some_and(|n| n > 0), "{json}");
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("packets"),
        "the table goes to standard error"
    );
    // `--json FILE` before the capture: the capture stays an input, the table stays on standard output.
    let run = flowbundle(&[
        "trace",
        "stats",
        "--json",
        s(&out("stats.json")),
        s(&cap),
        "--no-progress",
    ]);
    let text = ok(&run);
    assert!(
        text.contains("packets") && !text.trim_start().starts_with('{'),
        "{text}"
    );
    assert_eq!(
        parse(&std::fs::read(out("stats.json")).unwrap(), "stats.json"),
        json
    );
    // The rewriting commands: the same, and the JSON may not be the pcap they write.
    let cut = |json: &str| {
        flowbundle(&[
            "trace",
            "cut",
            "--json",
            json,
            s(&cap),
            "-o",
            s(&out("cut.pcap")),
            "--packets",
            "1..=4",
            "--no-progress",
        ])
    };
    let report = parse(ok(&cut("-")).as_bytes(), "trace cut --json -");
    assert_eq!(report["counts"]["written"], 4, "{report}");
    ok(&cut(s(&out("cut.json"))));
    assert_eq!(
        parse(&std::fs::read(out("cut.json")).unwrap(), "cut.json")["counts"]["written"],
        4
    );
    let refused = cut(s(&out("cut.pcap")));
    assert!(!refused.status.success(), "the JSON over the output pcap");
    // bench and simulate: the text report moves to standard error.
    let bench = flowbundle(&[
        "bench",
        "--json",
        "-",
        s(&cap),
        "--threads",
        "1",
        "--scheduler",
        "dh",
        "--workload",
        "null",
        "--reps",
        "1",
    ]);
    let b = parse(ok(&bench).as_bytes(), "bench --json -");
    assert_eq!(b["schema"], "flowbundle-bench/1", "{b}");
    let sim = flowbundle(&[
        "simulate",
        "--json",
        "-",
        s(&cap),
        "--cores",
        "1-2",
        "--scheduler",
        "dh",
    ]);
    let m = parse(ok(&sim).as_bytes(), "simulate --json -");
    assert!(m["sim"].is_object(), "{m}");
}
