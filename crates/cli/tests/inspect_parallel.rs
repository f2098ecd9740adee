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

/// The policies `--workers-read` runs under (a placement every worker computes from the input alone).
const WORKERS_READ: &[&str] = &["dh", "rss", "lfb"];

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
                    // With a reader thread (every worker reads the input by default under dh).
                    "--workers-read=false",
                ],
            );
        }
        // The reader as one of the two workers, inspecting its share when it would wait.
        for buffers in ["512", "8"] {
            same_as_serial(
                &s,
                &[
                    "--threads",
                    "2",
                    "--scheduler",
                    sched,
                    "--packet-buffers",
                    buffers,
                    "--reader-inspects",
                ],
            );
        }
    }
    // No reader: every worker reads the input and inspects its share of the placement (dh's fixed one; rss's and
    // lfb's tables, rebalanced at the sweeps); a small window (one packet buffer's worth: 64 packets) makes the
    // faster worker wait for the slower one often.
    for sched in WORKERS_READ {
        for threads in ["2", "3"] {
            for buffers in ["512", "1"] {
                same_as_serial(
                    &s,
                    &[
                        "--threads",
                        threads,
                        "--scheduler",
                        sched,
                        "--packet-buffers",
                        buffers,
                        "--workers-read",
                    ],
                );
            }
        }
    }
}

#[test]
fn a_narrow_reorder_window_changes_nothing_in_the_output_under_every_scheduler() {
    // The reader waits for the oldest packet in flight whenever it is the window ahead of it: one packet (each read
    // once every earlier one is done) and a few, with the reader apart and as worker 0, and a staged model.
    let Some(s) = serial() else {
        return;
    };
    for &sched in flowbundle_scheduler::ALL {
        for window in ["1", "5"] {
            same_as_serial(
                &s,
                &[
                    "--threads",
                    "2",
                    "--scheduler",
                    sched,
                    "--reorder-window",
                    window,
                    "--workers-read=false",
                ],
            );
        }
        same_as_serial(
            &s,
            &[
                "--threads",
                "2",
                "--scheduler",
                sched,
                "--reorder-window",
                "3",
                "--reader-inspects",
            ],
        );
    }
    same_as_serial(
        &s,
        &[
            "--threads",
            "2",
            "--exec",
            "pipeline",
            "--reorder-window",
            "2",
        ],
    );
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
        // One flow worker feeding two detection workers; two feeding one (placed packet by packet, woken per batch);
        // two feeding two.
        for (threads, detect) in [("3", "2"), ("3", "1"), ("4", "2")] {
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
/// stub: `dcerpc.iface`, `dcerpc.stub_data`), on packets no flow tracks (decoder events: the packet rules run in
/// the flow stage and their alerts travel in the packet's script), and on alerts that carry their transaction (a DNS
/// message's buffers and anomalies, a SIP message's, the flow stage copying the transaction into the script): the
/// single-threaded run's output.
#[test]
fn staged_models_match_dcerpc_calls_and_flowless_packets_as_the_single_threaded_run() {
    // The test folder, its capture and rules, and the object its alerts carry beside them (`""`: none asserted).
    for (test, pcap, rules, carried) in [
        (
            "dcerpc/dcerpc-dce-iface-01",
            "20171220_smb_psexec_mimikatz_ticket_dump-s2.pcap",
            "test.rules",
            "",
        ),
        (
            "dcerpc/dcerpc-dce-stub-data-04",
            "input.pcap",
            "test.rules",
            "",
        ),
        ("decode-too-small", "test.pcap", "test.rules", ""),
        ("dns/dns-z-bit", "input.pcap", "dns-events.rules", "dns"),
        ("sip-sdp", "sdp.pcap", "test.rules", "sip"),
    ] {
        let Some(dir) = flowbundle_testsupport::data(&format!("suricata-verify/{test}")) else {
            return;
        };
        let run = |extra: &[&str]| {
            let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
                .arg("inspect")
                .arg(dir.join(pcap))
                .arg("--rules")
                .arg(dir.join(rules))
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
        let alerts: Vec<&String> = serial
            .iter()
            .filter(|l| l.contains("\"event_type\":\"alert\""))
            .collect();
        assert!(!alerts.is_empty(), "{test}: no alert, nothing to compare");
        if !carried.is_empty() {
            let key = format!("\"{carried}\":{{");
            assert!(
                alerts.iter().all(|l| l.contains(&key)),
                "{test}: an alert without its transaction's `{carried}` object: {alerts:?}"
            );
        }
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

/// An IPv4 packet (protocol UDP) from 10.0.0.1 to 10.0.0.2 with identification `id`, fragment offset `off8` (in
/// 8-byte units), the more-fragments flag `mf` and `payload`, in an Ethernet frame.
fn ipv4_frame(id: u16, off8: u16, mf: bool, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14];
    f[0..6].copy_from_slice(&[0, 1, 2, 3, 4, 5]);
    f[6..12].copy_from_slice(&[0, 1, 2, 3, 4, 6]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(20 + payload.len() as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[6..8].copy_from_slice(&(off8 | if mf { 0x2000 } else { 0 }).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
    flowbundle_decode::wire::ipv4::Packet::new_checked(&mut ip[..])
        .expect("an IPv4 header")
        .fill_checksum();
    f.extend_from_slice(&ip);
    f.extend_from_slice(payload);
    f
}

/// A UDP header from port 4000 to `dport` for `len` bytes of data (checksum 0: none).
fn udp_header(dport: u16, len: usize) -> Vec<u8> {
    let mut u = Vec::with_capacity(8);
    u.extend_from_slice(&4000u16.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&(8 + len as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u
}

/// Fragmented UDP datagrams: per datagram a first fragment (UDP header and 16 bytes), a middle one, a second copy of
/// the middle one with other bytes (an overlap: `ipv4.frag_overlap`, kept out of the datagram), and the last one,
/// which completes it; fragments of consecutive datagrams interleaved, whole packets between them, and a datagram
/// whose last fragment never comes.
fn fragment_capture(path: &std::path::Path) {
    use flowbundle_ingest::{LinkType, PcapWriter, WriterOptions};
    let mut frames = Vec::new();
    for i in 0..12u16 {
        let data = [
            &b"FIRSTPART-------"[..],
            b"MIDDLEPART-------EVEN---",
            b"LASTPART",
        ];
        let total = data.iter().map(|d| d.len()).sum();
        let mut first = udp_header(5000 + i, total);
        first.extend_from_slice(data[0]);
        frames.push(ipv4_frame(100 + i, 0, true, &first));
        if i % 3 == 0 {
            // A whole packet of another flow between the fragments.
            let mut whole = udp_header(6000, 8);
            whole.extend_from_slice(b"WHOLEPKT");
            frames.push(ipv4_frame(900 + i, 0, false, &whole));
        }
        frames.push(ipv4_frame(100 + i, 3, true, data[1]));
        frames.push(ipv4_frame(100 + i, 3, true, b"OVERLAPEVILDATA-OVERLAP-"));
        if i != 7 {
            frames.push(ipv4_frame(100 + i, 6, false, data[2]));
        }
    }
    let file = std::fs::File::create(path).expect("creating the capture");
    let mut w = PcapWriter::new(file, WriterOptions::new(LinkType::ETHERNET)).expect("pcap header");
    for (n, f) in frames.iter().enumerate() {
        w.write_packet(
            1_700_000_000_000_000_000 + n as u64 * 1_000_000,
            f,
            f.len() as u32,
        )
        .expect("writing a packet");
    }
}

/// `inspect` with `rules` over `capture` and the extra arguments: the EVE lines, sorted.
fn eve_sorted(capture: &std::path::Path, rules: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(capture)
        .arg("--rules")
        .arg(rules)
        .args(["-o", "-"])
        .args(extra)
        .output()
        .expect("running flowbundle inspect");
    assert!(
        r.status.success(),
        "inspect {extra:?} failed: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&r.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// Packet rules on fragments: the single-threaded loop inspects every fragment the defragmenter held, dropped or
/// completed a datagram with, without a flow and with the defragmenter's events; the streaming runtime must give the
/// same alerts.
#[test]
fn streaming_parallel_alerts_on_fragments_equal_the_single_threaded_alerts_under_every_scheduler() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let capture = dir.path().join("fragments.pcap");
    fragment_capture(&capture);
    let rules = dir.path().join("fragments.rules");
    std::fs::write(
        &rules,
        "alert ip any any -> any any (msg:\"overlapping fragment\"; decode-event:ipv4.frag_overlap; sid:1;)\n\
         alert ip any any -> any any (msg:\"overlapping bytes\"; content:\"EVILDATA\"; sid:2;)\n\
         alert ip any any -> any any (msg:\"last part\"; content:\"LASTPART\"; sid:3;)\n\
         alert udp any any -> any 6000 (msg:\"whole\"; content:\"WHOLEPKT\"; sid:4;)\n",
    )
    .expect("writing the rules");
    let serial = eve_sorted(&capture, &rules, &["--threads", "1"]);
    let alerts = |lines: &[String], sid: u32| {
        lines
            .iter()
            .filter(|l| {
                l.contains("\"event_type\":\"alert\"")
                    && l.contains(&format!("\"signature_id\":{sid},"))
            })
            .count()
    };
    // Twelve overlapping fragments; "EVILDATA" only in them (the datagrams keep the first bytes); "LASTPART" in
    // eleven completing fragments and their datagrams.
    assert_eq!(alerts(&serial, 1), 12, "{serial:#?}");
    assert_eq!(alerts(&serial, 2), 12, "{serial:#?}");
    assert_eq!(alerts(&serial, 3), 22, "{serial:#?}");
    assert_eq!(alerts(&serial, 4), 4, "{serial:#?}");
    for &sched in flowbundle_scheduler::ALL {
        for buffers in ["4096", "8", "1"] {
            let par = eve_sorted(
                &capture,
                &rules,
                &[
                    "--threads",
                    "2",
                    "--scheduler",
                    sched,
                    "--packet-buffers",
                    buffers,
                    "--workers-read=false",
                ],
            );
            assert!(
                par == serial,
                "{sched} ({buffers} buffers): {} lines against {} single-threaded, first difference: {:?}",
                par.len(),
                serial.len(),
                par.iter().zip(&serial).find(|(a, b)| a != b)
            );
        }
    }
    // Every worker reading the input, each defragmenting every datagram and inspecting its own.
    for sched in WORKERS_READ {
        for threads in ["2", "3"] {
            let par = eve_sorted(
                &capture,
                &rules,
                &["--threads", threads, "--scheduler", sched, "--workers-read"],
            );
            assert!(
                par == serial,
                "{sched} --workers-read on {threads} threads: {} lines against {} single-threaded, first difference: {:?}",
                par.len(),
                serial.len(),
                par.iter().zip(&serial).find(|(a, b)| a != b)
            );
        }
    }
    // The staged execution models inspect fragments in their flow stage, the alerts travelling in the script.
    for exec in ["pipeline", "multilayer"] {
        for buffers in ["4096", "8"] {
            let par = eve_sorted(
                &capture,
                &rules,
                &[
                    "--threads",
                    "2",
                    "--exec",
                    exec,
                    "--packet-buffers",
                    buffers,
                ],
            );
            assert!(
                par == serial,
                "--exec {exec} ({buffers} buffers): {} lines against {} single-threaded, first difference: {:?}",
                par.len(),
                serial.len(),
                par.iter().zip(&serial).find(|(a, b)| a != b)
            );
        }
    }
}

/// The `workers:` line of `inspect CAPTURE --summary` with `args`.
fn workers_line(capture: &std::path::Path, args: &[&str]) -> String {
    let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(capture)
        .args(["--summary"])
        .args(args)
        .output()
        .expect("running flowbundle inspect");
    assert!(
        r.status.success(),
        "inspect {args:?} failed: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    String::from_utf8_lossy(&r.stdout)
        .lines()
        .find(|l| l.trim_start().starts_with("workers:"))
        .unwrap_or_else(|| panic!("{args:?}: no workers line"))
        .to_owned()
}

#[test]
fn files_are_read_by_every_worker_under_dh_rss_and_lfb_unless_told_otherwise() {
    let Some(capture) = flowbundle_testsupport::data("ndpi/pcap/dns.pcap") else {
        return;
    };
    let reading = "every worker reading the input";
    let dh = workers_line(&capture, &["--threads", "2", "--scheduler", "dh"]);
    assert!(dh.contains(reading) && dh.contains("dh"), "{dh}");
    // What each worker waited for the others, at the sweeps and a window ahead, and the sweeps it ended after
    // going on.
    assert!(
        dh.contains("waiting for the others")
            && dh.contains(" ms at ")
            && dh.contains("window ahead")
            && dh.contains("ms for the input being read")
            && dh.contains("sweeps ended after going on"),
        "{dh}"
    );
    let reader = workers_line(
        &capture,
        &[
            "--threads",
            "2",
            "--scheduler",
            "dh",
            "--workers-read=false",
        ],
    );
    assert!(
        !reader.contains(reading) && !reader.contains("waiting for the others"),
        "{reader}"
    );
    // Named for a file, lfb and rss run without a reader thread too, each worker placing by its table.
    for sched in ["lfb", "rss"] {
        let each = workers_line(&capture, &["--threads", "2", "--scheduler", sched]);
        assert!(
            each.contains(reading)
                && each.contains(sched)
                && each.contains("buckets moved at the sweeps"),
            "{each}"
        );
        let reader = workers_line(
            &capture,
            &[
                "--threads",
                "2",
                "--scheduler",
                sched,
                "--workers-read=false",
            ],
        );
        assert!(
            !reader.contains(reading) && reader.contains(sched),
            "{reader}"
        );
        // The reader as one of the workers needs a reader.
        let inspects = workers_line(
            &capture,
            &["--threads", "2", "--scheduler", sched, "--reader-inspects"],
        );
        assert!(!inspects.contains(reading), "{inspects}");
    }
    // Run-to-completion named (`--exec rtc`) is the default model and runs as the default does; a staged model's
    // groups are fed by a reader thread.
    let rtc = workers_line(&capture, &["--threads", "2", "--exec", "rtc"]);
    assert!(rtc.contains(reading) && rtc.contains("dh"), "{rtc}");
    let rtc_lfb = workers_line(
        &capture,
        &[
            "--threads",
            "2",
            "--exec",
            "rtc",
            "--scheduler",
            "lfb",
            "--workers-read",
        ],
    );
    assert!(rtc_lfb.contains(reading), "{rtc_lfb}");
    let pipeline = workers_line(&capture, &["--threads", "2", "--exec", "pipeline"]);
    assert!(
        !pipeline.contains(reading) && pipeline.contains("pipeline execution"),
        "{pipeline}"
    );
    // A policy that decides as the run goes has a reader thread dispatching.
    let ph = workers_line(&capture, &["--threads", "2", "--scheduler", "ph"]);
    assert!(!ph.contains(reading) && ph.contains("ph"), "{ph}");
    // Without --scheduler, files go to dh with every worker reading; what needs a reader thread keeps lfb.
    let default = workers_line(&capture, &["--threads", "2"]);
    assert!(
        default.contains(reading) && default.contains("dh"),
        "{default}"
    );
    let default_reader = workers_line(&capture, &["--threads", "2", "--workers-read=false"]);
    assert!(
        !default_reader.contains(reading) && default_reader.contains("lfb"),
        "{default_reader}"
    );
    let lfb_each = workers_line(
        &capture,
        &["--threads", "2", "--scheduler", "lfb", "--workers-read"],
    );
    assert!(
        lfb_each.contains(reading) && lfb_each.contains("buckets moved at the sweeps"),
        "{lfb_each}"
    );
    // Standard input can be read only once: the reader reads it, and --workers-read is refused.
    let stdin = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .args([
                "inspect",
                "-",
                "--summary",
                "--threads",
                "2",
                "--scheduler",
                "dh",
            ])
            .args(extra)
            .stdin(std::fs::File::open(&capture).unwrap())
            .output()
            .expect("running flowbundle inspect")
    };
    let r = stdin(&[]);
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(out.contains("workers:") && !out.contains(reading), "{out}");
    let r = stdin(&["--workers-read"]);
    assert!(!r.status.success());
    assert!(
        String::from_utf8_lossy(&r.stderr)
            .contains("standard input and pipes can be read only once"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    // A policy that decides as the run goes cannot be computed by every worker alike.
    let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(&capture)
        .args(["--threads", "2", "--scheduler", "ph", "--workers-read"])
        .output()
        .expect("running flowbundle inspect");
    assert!(!r.status.success());
    assert!(
        String::from_utf8_lossy(&r.stderr)
            .contains("--workers-read needs --scheduler dh, rss or lfb"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
}

/// Rules whose alerts the alert filter decides where events meet in input order: thresholds (one with a session
/// tag the filter decides), xbits (a `noalert` setter, an `isset` reader), a host tag, and plain rules.
const FILTERED_RULES: &str = "\
alert udp any any -> any 53 (msg:\"dns query, twice per source\"; threshold:type limit,track by_src,count 2,seconds 3600; tag:session,3,packets; sid:9001;)
alert tcp any any -> any any (msg:\"syn after three\"; flags:S; detection_filter:track by_src,count 3,seconds 3600; sid:9002;)
alert tcp any any -> any any (msg:\"syn-ack suppressed\"; flags:SA; sid:9003;)
alert http any any -> any any (msg:\"http get\"; http.method; content:\"GET\"; sid:9004;)
alert tcp any any -> any any (msg:\"client\"; flags:S; xbits:set,client,track ip_src,expire 3600; noalert; sid:9005;)
alert tcp any any -> any any (msg:\"answer to a client\"; flags:SA; xbits:isset,client,track ip_dst; sid:9006;)
alert tcp any any -> any any (msg:\"syn-ack tags its client\"; flags:SA; tag:host,5,packets,dst; sid:9007;)
alert http any any -> any any (msg:\"http host\"; http.host; content:\".\"; sid:9008;)
";

/// A suppression, and a rate filter that drops the flows of a rule once it matched three times.
const FILTER_CONFIG: &str = "suppress gen_id 1, sig_id 9003\n\
rate_filter gen_id 1, sig_id 9004, track by_rule, count 3, seconds 3600, new_action drop, timeout 3600\n";

/// Tagged packets written.
const TAGGED_PACKETS: &str = "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - alert:\n            tagged-packets: yes\n        - flow\n        - dns\n        - http\n";

/// `inspect` over the captures with `args`: the EVE output's bytes and the summary's rule lines (alert totals and
/// alerts per rule, corrected by the filter).
fn eve_and_rule_totals(
    inputs: &[PathBuf],
    dir: &std::path::Path,
    args: &[&str],
) -> (Vec<u8>, String) {
    let out = dir.join("eve.json");
    let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .args(inputs)
        .arg("-o")
        .arg(&out)
        .arg("--summary")
        .args(args)
        .output()
        .expect("running flowbundle inspect");
    assert!(
        r.status.success(),
        "inspect {args:?} failed: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    let summary = String::from_utf8_lossy(&r.stdout);
    let rules: String = summary
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("rules:"))
        .take_while(|l| l.trim_start().starts_with("rules:") || l.starts_with("   "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        rules.contains("alerts"),
        "{args:?}: no rules line in\n{summary}"
    );
    (std::fs::read(&out).expect("the EVE output"), rules)
}

/// With the alert filter, the workers render every event it keeps as it is and send it the others whole
/// (`EventSender::whole_when`): the output of `--threads 2` and 3, every worker reading or a reader thread, under
/// every scheduler, small packet buffers among them, is byte for byte the single-threaded run's, and so are the
/// summary's alert totals, which the filter corrects. The filter drops alerts (thresholds, the suppression, xbits
/// whose condition fails, `noalert`), drops packet records no tag covers, and rewrites flow records (the rate
/// filter's action) and, in IPS mode, alerts (blocked).
#[test]
fn the_alert_filter_gives_the_single_threaded_output_byte_for_byte() {
    let inputs: Vec<PathBuf> = CAPTURES
        .iter()
        .filter_map(|c| flowbundle_testsupport::data(c))
        .collect();
    if inputs.len() != CAPTURES.len() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let rules = path("filtered.rules", FILTERED_RULES);
    let untagged: String = FILTERED_RULES
        .lines()
        .filter(|l| !l.contains("tag:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let untagged = path("untagged.rules", &untagged);
    let config = path("threshold.config", FILTER_CONFIG);
    let yaml = path("suricata.yaml", TAGGED_PACKETS);
    let runs: &[&[&str]] = &[
        &["--threads", "2"],
        &["--threads", "3", "--packet-buffers", "1"],
        &["--threads", "2", "--scheduler", "lfb", "--workers-read"],
        &[
            "--threads",
            "2",
            "--scheduler",
            "rss",
            "--workers-read",
            "--packet-buffers",
            "1",
        ],
        &[
            "--threads",
            "2",
            "--scheduler",
            "dh",
            "--workers-read=false",
            "--packet-buffers",
            "8",
        ],
        &[
            "--threads",
            "2",
            "--scheduler",
            "lfb",
            "--workers-read=false",
        ],
        &[
            "--threads",
            "2",
            "--scheduler",
            "rss",
            "--workers-read=false",
        ],
        &[
            "--threads",
            "2",
            "--scheduler",
            "ph",
            "--workers-read=false",
            "--packet-buffers",
            "8",
        ],
        &[
            "--threads",
            "2",
            "--scheduler",
            "lfb",
            "--reader-inspects",
            "--packet-buffers",
            "8",
        ],
    ];
    for (set, extra) in [
        // Every alert, flow and packet record needed by the filter (a rate filter, tags).
        (&rules, &["--threshold-file", &config][..]),
        (&rules, &["--threshold-file", &config, "--simulate-ips"]),
        // Only the alerts of the filtered rules (no rate filter, no tags).
        (&untagged, &[]),
    ] {
        let mut args = vec!["--config", &yaml, "--rules", set];
        args.extend_from_slice(extra);
        let mut serial_args = args.clone();
        serial_args.extend_from_slice(&["--threads", "1"]);
        let (serial, totals) = eve_and_rule_totals(&inputs, dir.path(), &serial_args);
        let text = String::from_utf8_lossy(&serial);
        let alerts = |sid: u32| {
            let needle = format!("\"signature_id\":{sid},");
            text.lines()
                .filter(|l| l.contains("\"event_type\":\"alert\"") && l.contains(&needle))
                .count()
        };
        // What the filter did is in the output: thresholds let some through, the suppression, the unmet xbits
        // and `noalert` none; the rate filter's action in flow records, blocked alerts in IPS mode.
        assert!(alerts(9002) > 0 && alerts(9006) > 0, "{extra:?}");
        // The rule with a session tag is left out of the untagged set.
        assert_eq!(alerts(9001) > 0, *set == rules, "{extra:?}");
        assert_eq!(alerts(9005), 0, "{extra:?}");
        // The suppression is the threshold file's.
        assert_eq!(
            alerts(9003) == 0,
            extra.contains(&"--threshold-file"),
            "{extra:?}"
        );
        assert!(
            text.contains("\"event_type\":\"http\""),
            "rendered records too"
        );
        if extra.contains(&"--threshold-file") {
            assert!(text.contains("\"event_type\":\"packet\""), "tagged packets");
            assert!(
                text.lines()
                    .any(|l| l.contains("\"event_type\":\"flow\"")
                        && l.contains("\"action\":\"drop\"")),
                "a flow record the rate filter rewrote"
            );
        }
        assert_eq!(
            extra.contains(&"--simulate-ips"),
            text.contains("\"action\":\"blocked\""),
            "{extra:?}"
        );
        for run in runs {
            let mut par_args = args.clone();
            par_args.extend_from_slice(run);
            let (par, par_totals) = eve_and_rule_totals(&inputs, dir.path(), &par_args);
            assert!(
                par == serial,
                "{par_args:?}: {} bytes against {} single-threaded, first line differing: {:?}",
                par.len(),
                serial.len(),
                String::from_utf8_lossy(&par)
                    .lines()
                    .zip(text.lines())
                    .find(|(a, b)| a != b)
            );
            assert_eq!(par_totals, totals, "{par_args:?}");
        }
    }
}
