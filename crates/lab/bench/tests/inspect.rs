//! The `inspect` workload (the real engine) through the harness on real captures from `../shared/data` (skipped with
//! a message when absent): under every scheduler and thread count, in raw and in scaled mode, every packet is
//! processed once and the engine's output (its sorted events: flow records, application events, alerts) is identical
//! to the single-threaded run. The engine crate tests parallel == serial on its own runtime adapter; this checks the
//! harness's side of it: its pre-scheduling stage (decode options, defragmentation, hash seed, per-input salts of a
//! merged trace) gives the engine the flows it would have found alone, and its packet numbering and order guard hold.

use flowbundle_bench::Runner;
use flowbundle_bench::harness::{BenchMode, HarnessConfig, sweep};
use flowbundle_bench::inspect::{InspectRunner, prep_options};
use flowbundle_bench::prep::prepare_files;
use flowbundle_bench::search::release_times;
use flowbundle_inspect::EngineConfig;
use flowbundle_scheduler::{ALL, SchedOptions};
use std::path::PathBuf;

fn checked() -> HarnessConfig {
    HarnessConfig {
        mode: BenchMode::Raw,
        reps: 1,
        check: true,
        progress: false,
        cache_counters: false,
        sched: SchedOptions {
            capacity: 1024,
            ph_late_claim: true,
            ..SchedOptions::default()
        },
        ..HarnessConfig::default()
    }
}

/// Runs every policy at 1–3 threads (raw) and checks each run's output against the serial reference.
fn every_policy_gives_the_serial_output(files: &[PathBuf], what: &str) {
    let cfg = EngineConfig::default();
    let prep = prepare_files(files, &prep_options(&cfg)).unwrap();
    let runner = InspectRunner::new(cfg, &prep).keep_outputs(true);
    let serial = runner.serial();
    assert!(serial.events > 0, "{what}: the engine found nothing");
    assert!(serial.flows_created > 0, "{what}: no flows");
    let hc = checked();
    for name in ALL {
        for threads in [1, 2, 3] {
            let m = runner.measure(&prep, name, threads, &hc, None).unwrap();
            let n = prep.len() as u64;
            assert_eq!(
                (m.report.processed(), m.report.lost, m.dropped),
                (n, 0, 0),
                "{what}: {name}/{threads}"
            );
        }
    }
    let outs = runner.outputs();
    assert_eq!(outs.len(), ALL.len() * 3);
    for o in &outs {
        assert_eq!(
            (o.events, o.digest, o.flows_created),
            (serial.events, serial.digest, serial.flows_created),
            "{what}: {}/{} differs from the serial run",
            o.scheduler,
            o.threads
        );
        assert_eq!(o.deferred, 0, "{what}: nothing is dropped in raw mode");
    }
    eprintln!(
        "{what}: {} packets, {} events, {} flows: identical under {} policies × 3 thread counts",
        prep.len(),
        serial.events,
        serial.flows_created,
        ALL.len()
    );
}

#[test]
fn engine_output_identical_to_serial_on_a_real_capture() {
    let Some(p) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    every_policy_gives_the_serial_output(&[p], "example2.pcap");
}

#[test]
fn engine_output_identical_to_serial_on_merged_captures_with_fragments() {
    let mut files = Vec::new();
    for f in [
        "reassembly/example.pcap",
        "reassembly/frag_http_req.pcap",
        "reassembly/ip4_fragments.pcap",
        "reassembly/ip6_fragments.pcap",
        "reassembly/DnsPackets.pcap",
        "reassembly/GrePackets.cap",
        "reassembly/VlanPackets.pcap",
    ] {
        match flowbundle_testsupport::data(f) {
            Some(p) => files.push(p),
            None => return,
        }
    }
    every_policy_gives_the_serial_output(&files, "merged captures");
}

/// Scaled mode drops arrivals; the engine then sees fewer packets, but a sweep still completes with the engine's
/// stage times in the life-of-a-packet figures, and packets deferred behind a dropped predecessor (ph's order guard)
/// are finished rather than lost.
#[test]
fn a_scaled_inspect_sweep_reports_engine_stages() {
    let Some(p) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let cfg = EngineConfig::default();
    let prep = prepare_files(&[p], &prep_options(&cfg)).unwrap();
    let runner = InspectRunner::new(cfg, &prep).keep_outputs(true);
    let hc = HarnessConfig {
        mode: BenchMode::Scaled,
        schedulers: vec!["lfb".into(), "ph".into()],
        threads: vec![2],
        reps: 1,
        check: false,
        cache_counters: false,
        progress: false,
        ..HarnessConfig::default()
    };
    let report = sweep(&prep, &runner, &hc).unwrap();
    assert_eq!(report.config.workload, "inspect");
    for r in &report.runs {
        let raw = r.raw.as_ref().unwrap();
        assert!(raw.pps > 0.0);
        let names: Vec<&str> = r.life.stages.iter().map(|s| s.name.as_str()).collect();
        for want in ["decode", "flow lookup", "reassembly", "detection"] {
            assert!(names.contains(&want), "{}: stages {names:?}", r.scheduler);
        }
        assert!(r.scaled.is_some());
    }
    // Overload on purpose: everything released within a microsecond, room for 8 packets.
    let release = release_times(&prep.ts_ns, 1e12).unwrap();
    let tight = HarnessConfig {
        max_outstanding: 8,
        ..hc
    };
    let m = runner
        .measure(&prep, "ph", 2, &tight, Some(&release))
        .unwrap();
    let n = prep.len() as u64;
    assert!(m.dropped > 0, "nothing dropped at 8 outstanding");
    assert_eq!(m.report.processed() + m.dropped, n, "dropped + processed");
    let last = runner.outputs().pop().unwrap();
    assert!(last.events > 0);
}

/// `bench --workload inspect --rules F --signatures DIR`: the compiled sets are shared by every run's engine (each
/// run still gets a fresh engine with an empty connection table), and with a few content rules and the L7-filter
/// protocol signatures on a real capture every policy at 1 and 2 workers gives the serial output, alerts included.
#[test]
fn shared_rules_and_signatures_give_the_serial_output_under_every_policy() {
    use flowbundle_inspect::rules::{RuleSet, Vars};
    use flowbundle_inspect::signatures::{Options, SignatureSet};
    use std::sync::Arc;
    let (Some(p), Some(sigdir)) = (
        flowbundle_testsupport::data("reassembly/example2.pcap"),
        flowbundle_testsupport::data("l7-protocols/protocols"),
    ) else {
        return;
    };
    let rules = r#"
alert http any any -> any any (msg:"http GET"; flow:to_server; http.method; content:"GET"; sid:1;)
alert tcp any any -> any any (msg:"HTTP/1.1 in a TCP stream"; flow:established; content:"HTTP/1.1"; sid:2;)
alert tls any any -> any any (msg:"tls flow"; sid:3;)
alert tcp any any -> any any (msg:"Host header"; content:"Host|3a| "; nocase; sid:4;)
"#;
    let (set, report) = RuleSet::parse(rules, &Vars::suricata_defaults()).expect("rules parse");
    assert_eq!(report.loaded, report.rules_read, "{}", report.summary());
    let (sigs, _) = SignatureSet::load_dir(&sigdir, &Options::default()).expect("signatures");
    assert!(!sigs.is_empty());
    let (sigs, set) = (Arc::new(sigs), Arc::new(set));
    let cfg = EngineConfig::default();
    let prep = prepare_files(&[p], &prep_options(&cfg)).unwrap();
    let runner = InspectRunner::new(cfg, &prep)
        .with_sets(Some(sigs.clone()), Some(set.clone()))
        .keep_outputs(true);
    assert!(
        runner.detail().contains("content rules"),
        "{}",
        runner.detail()
    );
    let serial = runner.serial();
    assert!(serial.alerts > 0, "the rules raised no alert");
    let hc = checked();
    for name in ALL {
        for threads in [1, 2] {
            runner.measure(&prep, name, threads, &hc, None).unwrap();
        }
    }
    for o in runner.outputs() {
        assert_eq!(
            (o.events, o.digest, o.alerts),
            (serial.events, serial.digest, serial.alerts),
            "{}/{} differs from the serial run",
            o.scheduler,
            o.threads
        );
    }
    // Every run's engine shared the sets: nothing was copied or rebuilt.
    assert_eq!(Arc::strong_count(&set), 2, "the runner's and this test's");
    assert_eq!(Arc::strong_count(&sigs), 2);
    eprintln!(
        "example2.pcap with {} rules and {} signatures: {} events, {} alerts identical under {} policies × 2",
        set.len(),
        sigs.len(),
        serial.events,
        serial.alerts,
        ALL.len()
    );
}
