//! The harness end to end on real captures from `../shared/data` (skipped with a message when absent) and on the
//! in-memory synthetic profiles: every packet processed exactly once under every scheduler and thread count (under
//! the exclusivity checker), per-flow order where the policy promises it, drops counted and never lost, and a whole
//! sweep producing a report, JSON and plots. No timing is asserted.

use flowbundle_bench::harness::{BenchMode, HarnessConfig, measure, sweep};
use flowbundle_bench::prep::{NO_FLOW, PrepOptions, Prepared, prepare, prepare_files};
use flowbundle_bench::search::release_times;
use flowbundle_bench::{BenchReport, SearchPolicy, metrics, plot};
use flowbundle_ingest::Trace;
use flowbundle_scheduler::{ALL, SchedOptions};
use flowbundle_trace::synth::{SynthConfig, generate_trace};
use flowbundle_worker::{Cost, Null, Status, Synthetic};
use std::path::PathBuf;

/// The first `n` nDPI captures in name order (a many-protocol mix).
fn ndpi(n: usize) -> Vec<PathBuf> {
    let Some(dir) = flowbundle_testsupport::data("ndpi/pcap") else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "pcap" || e == "pcapng"));
    v.sort();
    v.truncate(n);
    v
}

/// An ANCS'10 Table 1 shape from the trace tools' generator, scaled down to about `packets` packets.
fn synthetic(profile: &str, packets: u64) -> Trace {
    let cfg = SynthConfig::profile(profile).unwrap().with_packets(packets);
    generate_trace(&cfg).unwrap().0
}

fn checked(mode: BenchMode) -> HarnessConfig {
    HarnessConfig {
        mode,
        reps: 1,
        check: true,
        progress: false,
        sched: SchedOptions {
            capacity: 1024,
            ph_late_claim: true,
            ..SchedOptions::default()
        },
        ..HarnessConfig::default()
    }
}

/// Packets that finished before an earlier-arrived packet of their flow, from the records.
fn reordered(prep: &Prepared, end: &[u64]) -> u64 {
    let mut last = std::collections::HashMap::new();
    let mut bad = 0;
    for (i, &f) in prep.flows.iter().enumerate() {
        if f == NO_FLOW {
            continue;
        }
        let s = end[i];
        let prev = last.entry(f).or_insert(s);
        if *prev > s {
            bad += 1;
        }
        *prev = (*prev).max(s);
    }
    bad
}

fn every_policy_every_thread_count(prep: &Prepared, what: &str) {
    let work = Synthetic::new(
        Cost::Model {
            base_ns: 100.0,
            per_byte_ns: 0.1,
        },
        1,
    )
    .with_prepare_share(0.5);
    let cfg = checked(BenchMode::Raw);
    for name in ALL {
        for threads in [1, 2, 3, 4] {
            let m = measure(prep, name, threads, &work, &cfg, None).unwrap();
            let r = &m.report;
            let n = prep.len() as u64;
            assert_eq!(
                (r.processed(), r.lost, r.dispatcher.dispatched, m.dropped),
                (n, 0, n, 0),
                "{what}: {name}/{threads}"
            );
            let rec = r.records.as_ref().unwrap();
            assert!(rec.status.iter().all(|s| *s == Status::Processed));
            assert!(rec.worker.iter().all(|&w| (w as usize) < threads));
            let order = metrics::order(rec, &prep.flows, "raw");
            assert_eq!(order.reordered_packets, reordered(prep, &rec.end_ns));
            if *name != "ph" {
                assert_eq!(
                    order.reordered_packets, 0,
                    "{what}: {name}/{threads} reordered a flow"
                );
            }
            let per_worker: u64 = m.report.workers.iter().map(|w| w.packets).sum();
            assert_eq!(per_worker, n);
            let handoffs: u64 = m.report.workers.iter().map(|w| w.handoffs).sum();
            assert_eq!(handoffs, r.sched.handoffs, "{what}: {name}/{threads}");
        }
    }
}

#[test]
fn every_packet_once_on_a_real_capture() {
    let Some(p) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let prep = prepare_files(&[p], &PrepOptions::default()).unwrap();
    assert!(prep.len() > 4000);
    every_policy_every_thread_count(&prep, "example2.pcap");
}

#[test]
fn every_packet_once_on_merged_ndpi_captures_with_fragments() {
    let mut files = ndpi(25);
    if files.is_empty() {
        return;
    }
    if let Some(f) = flowbundle_testsupport::data("reassembly/frag_http_req.pcap") {
        files.push(f);
    }
    let prep = prepare_files(
        &files,
        &PrepOptions {
            limit: 30_000,
            ..PrepOptions::default()
        },
    )
    .unwrap();
    assert!(prep.len() > 5_000, "{} packets", prep.len());
    every_policy_every_thread_count(&prep, "merged nDPI captures");
}

#[test]
fn scaled_drops_are_counted_never_lost() {
    let Some(p) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let prep = prepare_files(&[p], &PrepOptions::default()).unwrap();
    let n = prep.len() as u64;
    // Everything within a millisecond onto slow workers with room for 8: most arrivals must drop.
    let release = release_times(&prep.ts_ns, n as f64 * 1000.0).unwrap();
    let work = Synthetic::new(
        Cost::Model {
            base_ns: 20_000.0,
            per_byte_ns: 0.0,
        },
        0,
    );
    let cfg = HarnessConfig {
        max_outstanding: 8,
        ..checked(BenchMode::Scaled)
    };
    for name in ALL {
        let m = measure(&prep, name, 2, &work, &cfg, Some(&release)).unwrap();
        let d = &m.report.dispatcher;
        assert_eq!(
            d.dispatched + d.dropped_outstanding + d.dropped_full,
            n,
            "{name}"
        );
        assert!(m.dropped > 0, "{name}");
        assert_eq!(
            m.report.processed(),
            d.dispatched,
            "{name}: dispatched means processed"
        );
        let rec = m.report.records.as_ref().unwrap();
        let lat = metrics::latency(rec, 1.0);
        assert_eq!(
            lat.packets + lat.dropped,
            n,
            "{name}: every packet accounted for"
        );
        assert!(rec.status.iter().all(|s| *s != Status::Pending));
    }
}

#[test]
fn a_scaled_sweep_makes_a_complete_report_json_and_plots() {
    let prep = prepare(
        vec![("balanced".into(), synthetic("balanced", 6_000))],
        &PrepOptions::default(),
    );
    let n = prep.len() as u64;
    let cfg = HarnessConfig {
        schedulers: vec!["dh".into(), "ph".into(), "lfb".into()],
        threads: vec![1, 2],
        mode: BenchMode::Scaled,
        reps: 1,
        search: SearchPolicy {
            tolerance: 0.25,
            attempts: 1,
            ..SearchPolicy::default()
        },
        check: false,
        progress: false,
        ..HarnessConfig::default()
    };
    let work = Synthetic::new(
        Cost::Model {
            base_ns: 500.0,
            per_byte_ns: 0.0,
        },
        1,
    )
    .with_prepare_share(0.2);
    let report = sweep(&prep, &work, &cfg).unwrap();
    assert_eq!(report.runs.len(), 6);
    assert_eq!(report.trace.packets, n);
    assert!(report.trace.connection_density > 20.0);
    for m in &report.runs {
        let raw = m.raw.as_ref().unwrap();
        assert!(raw.pps > 0.0 && raw.samples_pps.len() == 1);
        let s = m.scaled.as_ref().unwrap();
        assert!(!s.probes.is_empty());
        assert!(s.max_pps <= raw.pps * 1.0000001);
        if s.found {
            let l = m.latency.as_ref().unwrap();
            assert!(l.packets + l.dropped == n && l.max_ns >= l.p99_ns && l.p99_ns >= l.p50_ns);
            assert_eq!(m.order.from, "latency");
        } else {
            assert_eq!(m.order.from, "raw");
        }
        assert_eq!(m.balance.workers.len(), m.threads);
        assert_eq!(m.life.stages.len(), 2, "prepare and process timed");
        if m.scheduler != "ph" {
            assert_eq!(m.order.reordered_packets, 0, "{}", m.scheduler);
        }
        assert!(m.cache.supported || m.cache.reason.is_some());
    }
    let json = report.to_json();
    let back = BenchReport::from_json(&json).unwrap();
    assert_eq!(back.runs.len(), report.runs.len());
    assert_eq!(back.schema, "flowbundle-bench/1");
    let dir = tempfile::tempdir().unwrap();
    let files = plot::write_all(&[&report], dir.path()).unwrap();
    assert!(files.iter().any(|f| f.ends_with("throughput_raw.svg")));
    let table = flowbundle_bench::table::summary(&report);
    assert_eq!(table.lines().filter(|l| l.starts_with("| ")).count(), 7);
}

#[test]
fn the_null_workload_runs_every_policy() {
    let prep = prepare(
        vec![("many".into(), synthetic("many", 20_000))],
        &PrepOptions::default(),
    );
    let cfg = checked(BenchMode::Raw);
    for name in ALL {
        let m = measure(&prep, name, 2, &Null, &cfg, None).unwrap();
        assert_eq!(m.report.processed(), prep.len() as u64, "{name}");
        assert!(m.stages.is_empty(), "the null workload has no stages");
    }
}

/// Timed runs go without per-packet records (their cost would be counted in the throughput); the order, balance and
/// life figures then come from one extra recorded run, and are complete either way.
#[test]
fn raw_figures_come_from_a_recorded_run_when_timed_runs_are_not_recorded() {
    let prep = prepare(
        vec![("balanced".into(), synthetic("balanced", 4_000))],
        &PrepOptions::default(),
    );
    let n = prep.len() as u64;
    let work = Synthetic::new(
        Cost::Model {
            base_ns: 200.0,
            per_byte_ns: 0.0,
        },
        1,
    );
    for timed_records in [false, true] {
        let cfg = HarnessConfig {
            schedulers: vec!["lfb".into(), "dh".into()],
            threads: vec![1, 2],
            reps: 3,
            timed_records,
            progress: false,
            ..HarnessConfig::default()
        };
        // A timed run keeps records exactly when asked to.
        let timed = HarnessConfig {
            records: timed_records,
            ..cfg.clone()
        };
        let m = measure(&prep, "lfb", 2, &work, &timed, None).unwrap();
        assert_eq!(m.report.records.is_some(), timed_records);
        assert_eq!(m.report.processed(), n);
        let report = sweep(&prep, &work, &cfg).unwrap();
        for r in &report.runs {
            let raw = r.raw.as_ref().unwrap();
            assert_eq!(raw.samples_pps.len(), 3);
            assert_eq!(r.order.from, "raw");
            assert_eq!(r.order.packets, n, "{} × {}", r.scheduler, r.threads);
            assert_eq!(r.order.reordered_packets, 0);
            assert_eq!(r.life.from, "raw");
            assert!(r.life.service_ns > 0.0);
            let per_worker: u64 = r.balance.workers.iter().map(|w| w.packets).sum();
            assert_eq!(per_worker, n);
        }
    }
}
