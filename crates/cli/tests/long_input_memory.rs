//! A long input does not grow the flow table: the same traffic repeated an hour apart (`trace merge --factor N
//! --shift 3600`, every copy in its own address space) keeps the peak of flows tracked at once where a short
//! repetition has it, because idle flows are swept out in capture time, and the streaming runtime on two workers
//! sweeps at the same input positions as the single-threaded loop (same flows, same EVE lines after sorting, each
//! flow's lines in the same order).

use std::path::Path;
use std::process::Command;

fn flowbundle() -> Command {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
}

/// `factor` copies of `input`, an hour apart, into `out`.
fn merge(input: &Path, factor: u32, out: &Path) {
    let r = flowbundle()
        .args(["trace", "merge"])
        .arg(input)
        .arg("-o")
        .arg(out)
        .args(["--factor", &factor.to_string(), "--shift", "3600"])
        .args(["--no-report", "--no-progress"])
        .output()
        .expect("running flowbundle trace merge");
    assert!(
        r.status.success(),
        "trace merge failed: {}",
        String::from_utf8_lossy(&r.stderr)
    );
}

/// Runs `inspect` on `input`; its EVE lines and the summary's peak of flows tracked at once.
fn inspect(input: &Path, extra: &[&str]) -> (Vec<String>, u64) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let eve = dir.path().join("eve.json");
    let r = flowbundle()
        .arg("inspect")
        .arg(input)
        .arg("-o")
        .arg(&eve)
        .arg("--summary")
        .args(extra)
        .output()
        .expect("running flowbundle inspect");
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(
        r.status.success(),
        "inspect {extra:?} failed: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    let peak = text
        .split("(peak ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no peak of tracked flows in the summary:\n{text}"));
    let lines = std::fs::read_to_string(&eve)
        .expect("reading the EVE output")
        .lines()
        .map(str::to_owned)
        .collect();
    (lines, peak)
}

#[test]
fn the_flow_table_stays_bounded_when_the_input_grows() {
    let Some(capture) = flowbundle_testsupport::data("ndpi/pcap/gnutella.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (short, long) = (dir.path().join("x4.pcap"), dir.path().join("x16.pcap"));
    merge(&capture, 4, &short);
    merge(&capture, 16, &long);
    let (_, peak_short) = inspect(&short, &["--threads", "1"]);
    let (serial, peak_long) = inspect(&long, &["--threads", "1"]);
    assert!(peak_short > 0);
    assert!(
        peak_long * 4 <= peak_short * 5,
        "four times the input: peak tracked flows {peak_short} -> {peak_long} (more than 25% growth)"
    );
    // What bounds it is the sweeps: without them the repeated traffic's flows, whose keys never come back and most
    // of whose shards see no new flow, stay tracked until the end.
    let (_, unswept) = inspect(&long, &["--threads", "1", "--flow-sweep", "0"]);
    assert!(
        unswept >= 2 * peak_short,
        "without sweeps the peak should grow with the input ({peak_short} -> {unswept})"
    );
    let mut sorted = serial.clone();
    sorted.sort();
    let serial_flows = flowbundle_testsupport::eve_lines_by_flow(&serial);
    for sched in ["lfb", "ph"] {
        let args = ["--threads", "2", "--scheduler", sched];
        let (_, short_peak) = inspect(&short, &args);
        let (par, peak) = inspect(&long, &args);
        assert!(
            peak * 4 <= short_peak * 5,
            "--threads 2 --scheduler {sched}: four times the input: peak tracked flows {short_peak} -> {peak}"
        );
        let flows = flowbundle_testsupport::eve_lines_by_flow(&par);
        for (id, lines) in &serial_flows {
            assert_eq!(
                flows.get(id),
                Some(lines),
                "--scheduler {sched}: flow {id}'s lines differ or come in another order"
            );
        }
        let mut par = par;
        par.sort();
        assert!(
            par == sorted,
            "--threads 2 --scheduler {sched}: the EVE lines differ from the single-threaded run's"
        );
    }
}
