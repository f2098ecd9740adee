//! `flowbundle inspect --threads 2` (the streaming runtime) against `--threads 1` (the single-threaded loop) on real
//! captures with content rules and L7-filter signatures, under every scheduler: the EVE output must be the same
//! lines after sorting, and each flow's events must come in the same order without sorting (packet order).
//! Skips when the shared captures are absent (fails under `FLOWBUNDLE_REQUIRE_DATA=1`).

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

#[test]
fn streaming_parallel_output_equals_the_single_threaded_output_under_every_scheduler() {
    let Some(rules) = flowbundle_testsupport::data("rules/snort3-community.rules") else {
        return;
    };
    let Some(sigs) = flowbundle_testsupport::data("l7-protocols") else {
        return;
    };
    let inputs: Vec<PathBuf> = CAPTURES
        .iter()
        .filter_map(|c| flowbundle_testsupport::data(c))
        .collect();
    if inputs.len() != CAPTURES.len() {
        return;
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
    let mut sorted_serial = serial.clone();
    sorted_serial.sort();
    let serial_flows = flowbundle_testsupport::eve_lines_by_flow(&serial);
    for &sched in flowbundle_scheduler::ALL {
        // Few packet buffers: the reader waits for the workers, and the watermark moves often.
        for buffers in ["4096", "512", "8"] {
            let par = eve(
                &inputs,
                &rules,
                &sigs,
                &[
                    "--threads",
                    "2",
                    "--scheduler",
                    sched,
                    "--packet-buffers",
                    buffers,
                ],
            );
            let mut sorted = par.clone();
            sorted.sort();
            assert!(
                sorted == sorted_serial,
                "{sched} ({buffers} buffers): {} lines against {} single-threaded, first difference: {:?}",
                par.len(),
                serial.len(),
                sorted.iter().zip(&sorted_serial).find(|(a, b)| a != b)
            );
            let flows = flowbundle_testsupport::eve_lines_by_flow(&par);
            for (id, evs) in &serial_flows {
                assert_eq!(
                    flows.get(id),
                    Some(evs),
                    "{sched} ({buffers} buffers): flow {id}'s events in another order"
                );
            }
        }
    }
}
