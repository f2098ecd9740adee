//! `flowbundle inspect --threads 2` (the streaming runtime) against `--threads 1` (the single-threaded loop) on real
//! captures with content rules and L7-filter signatures, under every scheduler and every execution model
//! (`--exec rtc|pipeline|multilayer`): the EVE output must be the same lines after sorting, and each flow's events
//! must come in the same order without sorting (packet order). Skips when the shared captures are absent (fails
//! under `FLOWBUNDLE_REQUIRE_DATA=1`).

use std::path::PathBuf;
use std::process::Command;

const CAPTURES: &[&str] = &[
    "reassembly/example.pcap",
    "reassembly/example2.pcap",
    "reassembly/frag_http_req.pcap",
    "reassembly/ip4_fragments.pcap",
    "ndpi/pcap/dns.pcap",
    "ndpi/pcap/bt-http.pcapng",
];

/// Runs `inspect` over the captures with the rules and signatures and the extra arguments; the EVE lines.
fn eve(inputs: &[PathBuf], rules: &PathBuf, sigs: &PathBuf, extra: &[&str]) -> Vec<String> {
    let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .args(inputs)
        .arg("--rules")
        .arg(rules)
        .arg("--signatures")
        .arg(sigs)
        .args(["-o", "-"])
        .args(extra)
        .output()
        .expect("running flowbundle inspect");
    assert!(
        r.status.success(),
        "inspect {extra:?} failed: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    String::from_utf8_lossy(&r.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The inputs and the single-threaded run's output, or `None` (skipped) when the shared data is absent.
struct Serial {
    inputs: Vec<PathBuf>,
    rules: PathBuf,
    sigs: PathBuf,
    sorted: Vec<String>,
    flows: std::collections::HashMap<String, Vec<String>>,
    lines: usize,
}

fn serial() -> Option<Serial> {
    let rules = flowbundle_testsupport::data("rules/snort3-community.rules")?;
    let sigs = flowbundle_testsupport::data("l7-protocols")?;
    let inputs: Vec<PathBuf> = CAPTURES
        .iter()
        .filter_map(|c| flowbundle_testsupport::data(c))
        .collect();
    if inputs.len() != CAPTURES.len() {
        return None;
    }
    let serial = eve(&inputs, &rules, &sigs, &["--threads", "1"]);
    assert!(
        serial.len() > 500,
        "too few events to compare: {}",
        serial.len()
    );
    assert!(
        serial
            .iter()
            .any(|l| l.contains("\"event_type\":\"alert\"")),
        "the rules raise no alert on these captures: the comparison would not cover alerts"
    );
    let mut sorted = serial.clone();
    sorted.sort();
    let flows = flowbundle_testsupport::eve_lines_by_flow(&serial)
        .into_iter()
        .map(|(id, evs)| (id, evs.into_iter().map(str::to_owned).collect()))
        .collect();
    Some(Serial {
        flows,
        lines: serial.len(),
        inputs,
        rules,
        sigs,
        sorted,
    })
}

/// A parallel run with `extra` arguments gives the single-threaded output: the same lines, each flow's in order.
fn same_as_serial(s: &Serial, extra: &[&str]) {
    let par = eve(&s.inputs, &s.rules, &s.sigs, extra);
    let mut sorted = par.clone();
    sorted.sort();
    assert!(
        sorted == s.sorted,
        "{extra:?}: {} lines against {} single-threaded, first difference: {:?}",
        par.len(),
        s.lines,
        sorted.iter().zip(&s.sorted).find(|(a, b)| a != b)
    );
    let flows = flowbundle_testsupport::eve_lines_by_flow(&par);
    for (id, evs) in &s.flows {
        assert!(
            flows.get(id).is_some_and(|p| p.iter().eq(evs.iter())),
            "{extra:?}: flow {id}'s events in another order"
        );
    }
}

#[test]
fn streaming_parallel_output_equals_the_single_threaded_output_under_every_scheduler() {
    let Some(s) = serial() else {
        return;
    };
    for &sched in flowbundle_scheduler::ALL {
        // Few packet buffers: the reader waits for the workers, and the watermark moves often.
        for buffers in ["4096", "512", "8"] {
            same_as_serial(
                &s,
                &[
                    "--threads",
                    "2",
                    "--scheduler",
                    sched,
                    "--packet-buffers",
                    buffers,
                ],
            );
        }
    }
}

/// The software pipeline and MultiLayer Processing (a flow group handing packets to a detection group) under every
/// policy that keeps flow order, with one or two workers per group and few or many packet buffers; run-to-completion
/// named explicitly too.
#[test]
fn every_execution_model_gives_the_single_threaded_output() {
    let Some(s) = serial() else {
        return;
    };
    same_as_serial(&s, &["--threads", "2", "--exec", "rtc"]);
    for exec in ["pipeline", "multilayer"] {
        for &sched in flowbundle_scheduler::ALL {
            if sched == "ph" {
                continue;
            }
            same_as_serial(
                &s,
                &[
                    "--threads",
                    "2",
                    "--exec",
                    exec,
                    "--scheduler",
                    sched,
                    "--packet-buffers",
                    "8",
                ],
            );
        }
        for (threads, detect) in [("3", "2"), ("4", "2")] {
            same_as_serial(
                &s,
                &[
                    "--threads",
                    threads,
                    "--detect-workers",
                    detect,
                    "--exec",
                    exec,
                    "--packet-buffers",
                    "512",
                ],
            );
        }
    }
}

/// The staged models on application buffers that reach the rules in several parts (a DCE/RPC call's header and
/// stub: `dcerpc.iface`, `dcerpc.stub_data`) and on packets no flow tracks (decoder events: the packet rules run in
/// the flow stage and their alerts travel in the packet's script): the single-threaded run's output.
#[test]
fn staged_models_match_dcerpc_calls_and_flowless_packets_as_the_single_threaded_run() {
    for (test, pcap) in [
        (
            "dcerpc/dcerpc-dce-iface-01",
            "20171220_smb_psexec_mimikatz_ticket_dump-s2.pcap",
        ),
        ("dcerpc/dcerpc-dce-stub-data-04", "input.pcap"),
        ("decode-too-small", "test.pcap"),
    ] {
        let Some(dir) = flowbundle_testsupport::data(&format!("suricata-verify/{test}")) else {
            return;
        };
        let run = |extra: &[&str]| {
            let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
                .arg("inspect")
                .arg(dir.join(pcap))
                .arg("--rules")
                .arg(dir.join("test.rules"))
                .args(["-o", "-"])
                .args(extra)
                .output()
                .expect("running flowbundle inspect");
            assert!(
                r.status.success(),
                "{test} {extra:?}: {}",
                String::from_utf8_lossy(&r.stderr)
            );
            let mut lines: Vec<String> = String::from_utf8_lossy(&r.stdout)
                .lines()
                .map(str::to_owned)
                .collect();
            lines.sort();
            lines
        };
        let serial = run(&["--threads", "1"]);
        assert!(
            serial
                .iter()
                .any(|l| l.contains("\"event_type\":\"alert\"")),
            "{test}: no alert, nothing to compare"
        );
        for exec in ["pipeline", "multilayer"] {
            assert_eq!(
                run(&["--threads", "2", "--exec", exec]),
                serial,
                "{test} --exec {exec}"
            );
        }
    }
}

#[test]
fn staged_models_refuse_what_they_cannot_do() {
    for (args, says) in [
        (
            &["--exec", "pipeline", "--scheduler", "ph", "--threads", "2"][..],
            "keeps each flow's packets in order",
        ),
        (
            &[
                "--exec",
                "multilayer",
                "--threads",
                "2",
                "--detect-workers",
                "2",
            ][..],
            "--detect-workers must leave",
        ),
        (
            &["--exec", "rtc", "--threads", "2", "--detect-workers", "1"][..],
            "--detect-workers applies",
        ),
    ] {
        let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .args(["inspect", "/nonexistent.pcap"])
            .args(args)
            .output()
            .expect("running flowbundle inspect");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{args:?} ran");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
