//! Several input files in one run: read as one time line by default, with a warning when time goes backwards
//! between them; `--per-file` inspects each on its own. Either way no two flows of the output share a `flow_id`.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

fn inspect(args: &[&str], files: &[&Path]) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eve.json");
    let run = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .args(args)
        .args(files)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let eve = std::fs::read_to_string(&out).unwrap();
    (run, eve)
}

/// Flow records by flow id.
fn flow_ids(eve: &str) -> HashMap<u64, usize> {
    let mut ids = HashMap::new();
    for line in eve.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["event_type"] == "flow" {
            *ids.entry(v["flow_id"].as_u64().unwrap()).or_default() += 1;
        }
    }
    ids
}

#[test]
fn one_capture_twice_warns_and_per_file_keeps_the_copies_apart() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let (_, single) = inspect(&["--threads", "1"], &[&cap]);
    let single = flow_ids(&single).len();
    for threads in ["1", "2"] {
        // As one time line: the second copy starts before the first ended.
        let (run, eve) = inspect(&["--threads", threads], &[&cap, &cap]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            stderr.contains("time goes backwards between the inputs"),
            "no warning with --threads {threads}: {stderr}"
        );
        let merged = flow_ids(&eve);
        assert!(
            merged.values().all(|&n| n == 1),
            "a flow id shared by two flow records"
        );
        assert!(
            merged.len() < 2 * single,
            "{} flows glued from 2 × {single}",
            merged.len()
        );

        // --per-file: each copy on its own, every flow twice, ids still unique; no warning.
        let (run, eve) = inspect(
            &["--per-file", "--threads", threads, "--summary"],
            &[&cap, &cap],
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(!stderr.contains("time goes backwards"), "{stderr}");
        let apart = flow_ids(&eve);
        assert_eq!(apart.len(), 2 * single, "--threads {threads}");
        assert!(
            apart.values().all(|&n| n == 1),
            "a flow id shared by two flow records"
        );
        // One summary per input.
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert_eq!(stdout.matches("example2.pcap").count(), 2, "{stdout}");
    }
}
