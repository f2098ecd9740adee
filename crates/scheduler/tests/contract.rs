//! The scheduler contract, for every policy: every packet processed exactly once, bundle exclusivity, per-flow order
//! (all but `ph`), bounded queues. Driven by seeded single-threaded interleavings ([`drive`]) on hand-shaped and real
//! traces, by proptest, and by real threads.

use flowbundle_decode::prestage::load_descs;
use flowbundle_scheduler::check::{DriveConfig, ExclusivityChecker, SplitMix64, drive};
use flowbundle_scheduler::{ALL, Desc, SchedOptions, Scheduler, build};
use proptest::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

/// Flows with Zipf-like sizes: flow k gets about n/(k+1) packets, interleaved (the skew of real traffic).
fn zipf_trace(n: usize, flows: u32, seed: u64) -> Vec<Desc> {
    let mut rng = SplitMix64(seed);
    let weights: Vec<f64> = (0..flows).map(|k| 1.0 / f64::from(k + 1)).collect();
    let total: f64 = weights.iter().sum();
    (0..n as u32)
        .map(|id| {
            let mut x = (rng.below(1 << 30) as f64 / f64::from(1u32 << 30)) * total;
            let mut k = 0;
            while k + 1 < flows as usize && x > weights[k] {
                x -= weights[k];
                k += 1;
            }
            flow_desc(id, k as u32)
        })
        .collect()
}

/// A packet of flow `k`: distinct hashes per flow, with collisions in the low bits for some flows.
fn flow_desc(id: u32, k: u32) -> Desc {
    let h = k.wrapping_mul(0x9e37_79b9) ^ (k >> 3);
    Desc {
        id,
        conn: h,
        rss: h.rotate_left(7),
        fid: (h >> 5) as u16,
        len: (64 + k % 1400) as u16,
    }
}

fn check_policy(name: &str, trace: &[Desc], workers: usize, opts: &SchedOptions, seed: u64) {
    let cfg = DriveConfig {
        seed,
        ..DriveConfig::default()
    };
    let r = drive(build(name, workers, opts).unwrap(), trace, &cfg);
    assert_eq!(r.check.processed, trace.len() as u64, "{name}");
    if name != "ph" {
        assert_eq!(
            r.check.order_violations, 0,
            "{name} with {workers} workers reordered a flow"
        );
    }
    let bound = opts.capacity.max(2 * workers);
    assert!(
        r.max_in_system <= bound,
        "{name}: {} in system > bound {bound}",
        r.max_in_system
    );
    assert_eq!(r.stats.dispatched, trace.len() as u64, "{name}");
}

#[test]
fn every_policy_on_skewed_traffic_at_every_thread_count() {
    let trace = zipf_trace(3000, 200, 7);
    for name in ALL {
        for workers in [1, 2, 3, 4, 7] {
            for seed in 1..=3 {
                check_policy(name, &trace, workers, &SchedOptions::default(), seed);
            }
        }
    }
}

#[test]
fn every_policy_with_tiny_queues_refuses_and_loses_nothing() {
    let trace = zipf_trace(2000, 50, 3);
    let opts = SchedOptions {
        capacity: 8,
        fbq_table: 16,
        rss_interval: 64,
        flow_idle_dispatches: 32,
        ..SchedOptions::default()
    };
    for name in ALL {
        for workers in [1, 2, 4] {
            let r = drive(
                build(name, workers, &opts).unwrap(),
                &trace,
                &DriveConfig {
                    seed: 5,
                    dispatch_percent: 80,
                    ..DriveConfig::default()
                },
            );
            assert_eq!(r.check.processed, 2000, "{name}");
            assert!(
                r.check.refused > 0,
                "{name}: a dispatcher this eager must meet full queues"
            );
            assert!(
                r.max_in_system <= 8,
                "{name}: {} packets held with capacity 8",
                r.max_in_system
            );
            assert_eq!(
                r.stats.full, r.check.refused,
                "{name}: every refusal counted"
            );
        }
    }
}

#[test]
fn one_dominant_flow_and_many_small_ones() {
    // Half the packets on one flow (the paper's "dominant" capture shape).
    let trace: Vec<Desc> = (0..4000u32)
        .map(|id| flow_desc(id, if id % 2 == 0 { 0 } else { 1 + id % 300 }))
        .collect();
    for name in ALL {
        for workers in [2, 5] {
            check_policy(name, &trace, workers, &SchedOptions::default(), 11);
        }
    }
}

#[test]
fn every_policy_on_a_real_capture() {
    let Some(p) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let trace = load_descs(&[p], usize::MAX).unwrap();
    assert!(trace.len() > 4000);
    for name in ALL {
        for workers in [1, 2, 4] {
            check_policy(name, &trace, workers, &SchedOptions::default(), 2);
        }
    }
}

#[test]
fn every_policy_on_merged_real_captures_with_a_small_fbq_table() {
    let files = flowbundle_testsupport::captures("ndpi/pcap", 40);
    if files.is_empty() {
        return;
    }
    let trace = load_descs(&files, 20_000).unwrap();
    let opts = SchedOptions {
        fbq_table: 64,
        capacity: 512,
        rss_interval: 500,
        ..SchedOptions::default()
    };
    for name in ALL {
        check_policy(name, &trace, 3, &opts, 4);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_trace_any_interleaving(
        flows in proptest::collection::vec(0u32..40, 1..300),
        workers in 1usize..6,
        capacity in 1usize..64,
        seed in any::<u64>(),
        policy in 0usize..7,
    ) {
        let trace: Vec<Desc> = flows.iter().enumerate().map(|(i, &k)| flow_desc(i as u32, k)).collect();
        let opts = SchedOptions { capacity, fbq_table: 32, rss_interval: 16, flow_idle_dispatches: 8, ..SchedOptions::default() };
        check_policy(ALL[policy], &trace, workers, &opts, seed);
    }
}

/// Real threads: one dispatcher, `workers` workers, the checker in between. Short; no timing asserted.
fn stress(name: &str, workers: usize, trace: &[Desc]) {
    stress_with(name, workers, trace, false);
}

fn stress_with(name: &str, workers: usize, trace: &[Desc], ph_late_claim: bool) {
    let opts = SchedOptions {
        capacity: 256,
        fbq_table: 256,
        rss_interval: 512,
        ph_late_claim,
        ..SchedOptions::default()
    };
    let sched = Arc::new(ExclusivityChecker::new(
        build(name, workers, &opts).unwrap(),
    ));
    let finished = Arc::new(AtomicBool::new(false));
    let processed = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let (sched, finished, processed) = (sched.clone(), finished.clone(), processed.clone());
            std::thread::spawn(move || {
                let mut sink = 0u64;
                loop {
                    let end = finished.load(Acquire);
                    match sched.next(w) {
                        Some(d) => {
                            // The decode before the claim: long enough for two workers to race on one CE.
                            for i in 0..u64::from(d.len % 32) {
                                sink = sink.wrapping_mul(31).wrapping_add(i);
                            }
                            if !sched.claim(w, &d) {
                                continue;
                            }
                            for i in 0..u64::from(d.len % 64) {
                                sink = sink.wrapping_mul(31).wrapping_add(i);
                            }
                            if d.id % 17 == 0 {
                                sched.classified(w, &d);
                            }
                            sched.done(w, d);
                            processed.fetch_add(1, Relaxed);
                        }
                        None if end => break,
                        None => std::thread::yield_now(),
                    }
                }
                std::hint::black_box(sink);
            })
        })
        .collect();
    for d in trace {
        while sched.dispatch(*d).is_err() {
            std::thread::yield_now();
        }
    }
    finished.store(true, Release);
    for h in handles {
        h.join().expect("worker panicked: contract violated");
    }
    let report = sched.finish();
    assert_eq!(report.processed, trace.len() as u64, "{name}");
    assert_eq!(processed.load(Relaxed), trace.len() as u64);
    if name != "ph" {
        assert_eq!(report.order_violations, 0, "{name}");
    }
}

#[test]
fn every_policy_with_real_threads() {
    let trace = zipf_trace(20_000, 300, 13);
    for name in ALL {
        // 8 workers on this 2-core machine: threads are preempted inside every window of the lock-free protocols.
        for workers in [2, 4, 8] {
            stress(name, workers, &trace);
        }
    }
}

#[test]
fn ph_with_late_claim_under_interleavings_and_real_threads() {
    // PAM's parse-then-lock window: `next` pops, `claim` owns the CE or hands the packet off. Every packet is still
    // processed exactly once under exclusivity; handoffs happen at every worker count above one.
    let trace = zipf_trace(3000, 200, 21);
    let opts = SchedOptions {
        ph_late_claim: true,
        ..SchedOptions::default()
    };
    for workers in [1, 2, 3, 4, 7] {
        for seed in 1..=3 {
            let r = drive(
                build("ph", workers, &opts).unwrap(),
                &trace,
                &DriveConfig {
                    seed,
                    ..DriveConfig::default()
                },
            );
            assert_eq!(r.check.processed, 3000);
            if workers == 1 {
                assert_eq!(r.stats.handoffs, 0, "one worker never hands off");
                assert_eq!(r.check.order_violations, 0);
            } else {
                assert!(r.stats.handoffs > 0, "{workers} workers, seed {seed}");
            }
        }
    }
    let trace = zipf_trace(20_000, 300, 17);
    for workers in [2, 4, 8] {
        stress_with("ph", workers, &trace, true);
    }
}
