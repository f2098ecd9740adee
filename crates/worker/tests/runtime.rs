//! The runtime with every policy: every packet processed exactly once (under the exclusivity checker), records
//! consistent, per-flow order from the records, scaled-mode drops counted, idle workers parking. No timing asserted.

use flowbundle_scheduler::check::ExclusivityChecker;
use flowbundle_scheduler::{ALL, Desc, SchedOptions, Scheduler, build};
use flowbundle_worker::{
    Cost, Crew, Mode, Null, RunConfig, Status, StreamConfig, Synthetic, run, run_stream,
};
use std::collections::HashMap;

fn trace(n: u32, flows: u32) -> Vec<Desc> {
    (0..n)
        .map(|id| {
            let k = (id * 7 + id / 13) % flows;
            let h = k.wrapping_mul(0x9e37_79b9);
            Desc {
                id,
                conn: h,
                rss: h.rotate_left(9),
                fid: (h >> 7) as u16,
                len: 60 + (k % 1400) as u16,
            }
        })
        .collect()
}

/// Per-flow order from the records: within each connection, processing starts in arrival order.
fn reordered(descs: &[Desc], start: &[u64]) -> usize {
    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut bad = 0;
    for d in descs {
        let s = start[d.id as usize];
        let prev = last.entry(d.conn).or_insert(s);
        if *prev > s {
            bad += 1;
        }
        *prev = s;
    }
    bad
}

#[test]
fn raw_mode_processes_every_packet_once_under_every_policy() {
    let descs = trace(20_000, 500);
    let opts = SchedOptions {
        capacity: 1024,
        ..SchedOptions::default()
    };
    for name in ALL {
        for workers in [1, 2, 3] {
            let checked = ExclusivityChecker::new(build(name, workers, &opts).unwrap());
            let r = run(&checked, &Null, &descs, &RunConfig::default()).unwrap();
            let check = checked.finish();
            assert_eq!(check.processed, 20_000, "{name}/{workers}");
            assert_eq!(
                (r.processed(), r.lost, r.dispatcher.dispatched),
                (20_000, 0, 20_000),
                "{name}/{workers}"
            );
            let rec = r.records.as_ref().unwrap();
            for i in 0..descs.len() {
                assert_eq!(rec.status[i], Status::Processed);
                assert!(
                    rec.arrival_ns[i] <= rec.enqueue_ns[i],
                    "{name}: packet {i} enqueued before arriving"
                );
                assert!(rec.start_ns[i] <= rec.end_ns[i]);
                assert!((rec.worker[i] as usize) < workers);
            }
            if *name != "ph" {
                assert_eq!(
                    reordered(&descs, &rec.start_ns),
                    0,
                    "{name}/{workers} reordered a flow"
                );
            }
            let per_worker: Vec<u64> = r.workers.iter().map(|w| w.packets).collect();
            assert_eq!(
                per_worker, check.per_worker,
                "{name}: worker reports agree with the checker"
            );
        }
    }
}

#[test]
fn scaled_mode_counts_every_drop() {
    // Everything released at once onto one slow worker with room for 8 outstanding packets: most arrivals drop.
    let descs = trace(200, 10);
    let release = vec![0u64; descs.len()];
    let work = Synthetic::new(
        Cost::Model {
            base_ns: 20_000.0,
            per_byte_ns: 0.0,
        },
        0,
    );
    for name in ["dh", "lfb", "ph"] {
        let sched = build(name, 1, &SchedOptions::default()).unwrap();
        let cfg = RunConfig {
            mode: Mode::Scaled {
                release_ns: &release,
            },
            max_outstanding: 8,
            ..RunConfig::default()
        };
        let r = run(sched.as_ref(), &work, &descs, &cfg).unwrap();
        let d = &r.dispatcher;
        assert_eq!(
            d.dispatched + d.dropped_outstanding + d.dropped_full,
            200,
            "{name}"
        );
        assert!(d.dropped_outstanding > 0, "{name}");
        assert_eq!(r.processed(), d.dispatched);
        let rec = r.records.unwrap();
        let dropped = rec
            .status
            .iter()
            .filter(|s| **s == Status::DroppedOutstanding)
            .count() as u64;
        assert_eq!(dropped, d.dropped_outstanding);
    }
}

#[test]
fn scaled_mode_with_room_paces_and_processes_all() {
    let descs = trace(300, 20);
    let release: Vec<u64> = (0..descs.len() as u64).map(|i| i * 20_000).collect(); // 50k packets/s
    let sched = build("lfb", 2, &SchedOptions::default()).unwrap();
    let cfg = RunConfig {
        mode: Mode::Scaled {
            release_ns: &release,
        },
        ..RunConfig::default()
    };
    let r = run(sched.as_ref(), &Null, &descs, &cfg).unwrap();
    assert_eq!(
        r.dispatcher.dropped_outstanding + r.dispatcher.dropped_full,
        0
    );
    assert_eq!(r.processed(), 300);
    let rec = r.records.unwrap();
    for (i, &t) in release.iter().enumerate() {
        assert_eq!(
            rec.arrival_ns[i],
            r.start_ns + t,
            "packet {i}: arrival is its scheduled time"
        );
        assert!(
            rec.enqueue_ns[i] >= r.start_ns + t,
            "packet {i} sent before its time"
        );
    }
}

/// Packets released in groups (200 groups of 100 packets sharing a release time, 100 µs apart: 1M packets/s over
/// 20 ms): the dispatcher releases whatever is due on its tick and sleeps in between, instead of pacing each packet
/// (which would hold a core); latency still counts from each packet's scheduled time. A batch takes every packet due
/// by its wake-up, so a group is never split and there are at most as many batches as groups, however late a loaded
/// machine wakes the dispatcher (a dispatcher slower than the schedule only merges groups). Per-packet pacing (tick 0)
/// stays available and releases one packet per wake-up. The first group is due 50 ms after the start, so the
/// dispatcher finds itself early and sleeps at least once (it reads the clock again right after the start).
#[test]
fn scaled_mode_releases_close_packets_in_batches_and_sleeps_between() {
    const GROUPS: u64 = 200;
    const FIRST_NS: u64 = 50_000_000;
    let descs = trace(20_000, 200);
    let release: Vec<u64> = (0..descs.len() as u64)
        .map(|i| FIRST_NS + (i / 100) * 100_000)
        .collect();
    for tick in [flowbundle_worker::RELEASE_TICK_NS, 0] {
        let sched = build("lfb", 2, &SchedOptions::default()).unwrap();
        let cfg = RunConfig {
            mode: Mode::Scaled {
                release_ns: &release,
            },
            release_tick_ns: tick,
            ..RunConfig::default()
        };
        let r = run(sched.as_ref(), &Null, &descs, &cfg).unwrap();
        let d = &r.dispatcher;
        assert_eq!(r.lost, 0);
        assert_eq!(
            r.processed() + d.dropped_outstanding + d.dropped_full,
            20_000,
            "tick {tick}: every packet processed or counted as dropped"
        );
        let rec = r.records.unwrap();
        for (i, &t) in release.iter().enumerate() {
            assert_eq!(rec.arrival_ns[i], r.start_ns + t);
            if rec.status[i] == Status::Processed {
                assert!(rec.enqueue_ns[i] >= rec.arrival_ns[i], "packet {i} early");
                // (The enqueue time is read after the policy accepted the packet: a worker may finish first.)
                assert!(rec.end_ns[i] >= rec.arrival_ns[i]);
            }
        }
        assert!(d.sleeps > 0, "tick {tick}: the dispatcher never slept");
        if tick > 0 {
            assert!(
                (1..=GROUPS).contains(&d.batches),
                "{} batches for {GROUPS} groups: a group was split",
                d.batches
            );
        } else {
            assert_eq!(
                d.batches, 20_000,
                "per-packet pacing: one packet per wake-up"
            );
        }
    }
}

#[test]
fn idle_workers_park_instead_of_spinning() {
    // Ten packets 100 ms apart, all for worker 0 (dh, even FIDs): worker 1 has nothing to do for a whole second, far
    // longer than its spin and yield phases even on a loaded machine, so it must have parked.
    let mut descs = trace(10, 3);
    for d in &mut descs {
        d.fid = 0;
    }
    let release: Vec<u64> = (0..10).map(|i| i * 100_000_000).collect();
    let sched = build("dh", 2, &SchedOptions::default()).unwrap();
    let cfg = RunConfig {
        mode: Mode::Scaled {
            release_ns: &release,
        },
        ..RunConfig::default()
    };
    let r = run(sched.as_ref(), &Null, &descs, &cfg).unwrap();
    assert_eq!(r.processed(), 10);
    assert_eq!(r.workers[1].packets, 0);
    assert!(r.workers[1].parks > 0, "an idle worker never parked");
    assert!(
        r.dispatcher.sleeps > 0,
        "the dispatcher never slept while waiting"
    );
}

#[test]
fn bad_input_is_refused_not_panicked_on() {
    let sched = build("dh", 1, &SchedOptions::default()).unwrap();
    let mut descs = trace(3, 1);
    descs[2].id = 7;
    assert!(run(sched.as_ref(), &Null, &descs, &RunConfig::default()).is_err());
    let descs = trace(3, 1);
    let cfg = RunConfig {
        mode: Mode::Scaled { release_ns: &[0] },
        ..RunConfig::default()
    };
    assert!(run(sched.as_ref(), &Null, &descs, &cfg).is_err());
}

#[test]
fn the_clobber_thread_runs_alongside() {
    let descs = trace(2000, 50);
    let sched = build("lfb", 1, &SchedOptions::default()).unwrap();
    let work = Synthetic::new(
        Cost::Model {
            base_ns: 2_000.0,
            per_byte_ns: 0.0,
        },
        1,
    );
    let cfg = RunConfig {
        clobber_bytes: 1 << 20,
        records: false,
        ..RunConfig::default()
    };
    let r = run(sched.as_ref(), &work, &descs, &cfg).unwrap();
    assert_eq!(r.processed(), 2000);
    assert!(r.records.is_none());
    // At least one pass even when the clobber thread gets a core only after the workers are done (a loaded machine).
    assert!(r.clobber_passes > 0);
    let off = RunConfig {
        clobber_bytes: 0,
        ..cfg
    };
    assert_eq!(
        run(sched.as_ref(), &work, &descs, &off)
            .unwrap()
            .clobber_passes,
        0
    );
}

#[test]
fn a_real_capture_through_every_policy_with_a_synthetic_cost() {
    let Some(p) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let descs = flowbundle_decode::prestage::load_descs(&[p], usize::MAX).unwrap();
    let work = Synthetic::new(
        Cost::Model {
            base_ns: 200.0,
            per_byte_ns: 0.5,
        },
        2,
    );
    for name in ALL {
        let checked = ExclusivityChecker::new(build(name, 2, &SchedOptions::default()).unwrap());
        let r = run(&checked, &work, &descs, &RunConfig::default()).unwrap();
        assert_eq!(r.processed(), descs.len() as u64, "{name}");
        let check = checked.finish();
        if *name != "ph" {
            assert_eq!(check.order_violations, 0, "{name}");
        }
    }
}

/// A workload that records which thread ran it and when its hooks fired.
struct Hooked;

#[derive(Default)]
struct HookLocal {
    started: bool,
    stopped: bool,
    packets_before_start: u64,
    packets: u64,
    /// Jobs run ([`flowbundle_worker::Crew::broadcast`]): the worker number given and the packets processed by then.
    jobs: Vec<(usize, u64)>,
}

impl flowbundle_worker::Workload for Hooked {
    type Local = HookLocal;
    fn local(&self, _w: usize) -> HookLocal {
        HookLocal::default()
    }
    fn process(
        &self,
        l: &mut HookLocal,
        _d: Desc,
        _held: &mut flowbundle_worker::BundleToken,
    ) -> flowbundle_worker::Outcome {
        if !l.started {
            l.packets_before_start += 1;
        }
        l.packets += 1;
        flowbundle_worker::Outcome::Processed
    }
    fn on_start(&self, l: &mut HookLocal) {
        l.started = true;
    }
    fn on_stop(&self, l: &mut HookLocal) {
        l.stopped = true;
    }
}

#[test]
fn locals_come_back_with_their_hooks_run_around_the_packets() {
    let descs = trace(1000, 40);
    let sched = build("lfb", 3, &SchedOptions::default()).unwrap();
    let r = run(sched.as_ref(), &Hooked, &descs, &RunConfig::default()).unwrap();
    assert_eq!(r.locals.len(), 3);
    assert!(
        r.locals
            .iter()
            .all(|l| l.started && l.stopped && l.packets_before_start == 0)
    );
    let per_local: Vec<u64> = r.locals.iter().map(|l| l.packets).collect();
    let per_report: Vec<u64> = r.workers.iter().map(|w| w.packets).collect();
    assert_eq!(per_local, per_report);
}

#[test]
fn a_workload_trait_object_runs_too() {
    let descs = trace(500, 20);
    let work: &dyn flowbundle_worker::Workload<Local = ()> = &Null;
    let sched = build("ph", 2, &SchedOptions::default()).unwrap();
    let r = run(sched.as_ref(), work, &descs, &RunConfig::default()).unwrap();
    assert_eq!(r.processed(), 500);
}

#[test]
fn release_times_that_would_hang_the_run_are_refused() {
    let descs = trace(3, 1);
    let sched = build("dh", 1, &SchedOptions::default()).unwrap();
    for release in [[0, u64::MAX, u64::MAX], [0, 5, 3]] {
        let cfg = RunConfig {
            mode: Mode::Scaled {
                release_ns: &release,
            },
            ..RunConfig::default()
        };
        assert!(
            run(sched.as_ref(), &Null, &descs, &cfg).is_err(),
            "{release:?}"
        );
    }
}

#[test]
fn ph_with_late_claim_hands_off_after_prepare_and_loses_nothing() {
    // Few flows, a decode before the claim: workers race on connection entries, as PAM's threads do.
    let descs = trace(20_000, 8);
    let work = Synthetic::new(
        Cost::Model {
            base_ns: 400.0,
            per_byte_ns: 0.0,
        },
        0,
    )
    .with_prepare_share(0.5);
    let opts = SchedOptions {
        ph_late_claim: true,
        ..SchedOptions::default()
    };
    for workers in [1, 2, 3] {
        let checked = ExclusivityChecker::new(build("ph", workers, &opts).unwrap());
        let r = run(&checked, &work, &descs, &RunConfig::default()).unwrap();
        let check = checked.finish();
        assert_eq!((r.processed(), r.lost), (20_000, 0), "{workers}");
        assert_eq!(check.processed, 20_000);
        let handoffs: u64 = r.workers.iter().map(|w| w.handoffs).sum();
        assert_eq!(handoffs, r.sched.handoffs, "runtime and policy agree");
        if workers == 1 {
            assert_eq!(handoffs, 0);
        }
    }
}

/// A streaming run's feed hands every worker a job three times: before the first packet (the workers have parked by
/// then), in the middle, and after the last. Each worker runs each job once, with its own number and state, and
/// every packet is processed once.
#[test]
fn a_broadcast_job_runs_once_on_every_worker() {
    let descs = trace(2000, 40);
    for policy in ["dh", "lfb", "ph"] {
        let sched = build(policy, 3, &SchedOptions::default()).unwrap();
        let mut next = 0usize;
        let feed = |crew: &Crew<'_, HookLocal>| {
            if next == 0 || next == 1000 || next == descs.len() {
                if next == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                assert_eq!(crew.workers(), 3);
                crew.broadcast(&|w, l: &mut HookLocal| l.jobs.push((w, l.packets)));
            }
            let d = descs.get(next).copied();
            next += 1;
            d
        };
        let (r, _) = run_stream(
            sched.as_ref(),
            &Hooked,
            feed,
            &mut |_| {},
            &StreamConfig::default(),
        )
        .expect("no thread panics");
        assert_eq!(r.processed(), 2000, "{policy}");
        for (w, l) in r.locals.iter().enumerate() {
            assert_eq!(l.jobs.len(), 3, "{policy}: worker {w} ran {:?}", l.jobs);
            assert!(l.jobs.iter().all(|&(jw, _)| jw == w), "{policy}");
            assert_eq!(
                l.jobs[0].1, 0,
                "{policy}: the first job ran before any packet"
            );
        }
        // The last job ran after the last packet was dispatched, so with all packets processed before the run
        // ended, each worker's count at its last job is at most its total.
        assert!(
            r.locals
                .iter()
                .all(|l| l.jobs.windows(2).all(|p| p[0].1 <= p[1].1) && l.jobs[2].1 <= l.packets)
        );
    }
}

/// A streaming run whose reader is worker 0 (`StreamConfig::reader_works`), under every policy and 1 to 3 workers:
/// every packet processed exactly once (under the exclusivity checker), each connection's packets in arrival order
/// where the policy keeps flow order, none lost. The feed takes a buffer per packet from a bounded pool that the
/// packets give back once processed, and inspects its share before it waits (`Crew::help`), as the inspection's
/// reader does: without that, the packets held for worker 0 would never give their buffers back.
#[test]
fn a_reader_that_is_worker_0_processes_its_share_and_loses_nothing() {
    use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::*};
    struct Counted {
        count: Vec<AtomicU32>,
        free: AtomicUsize,
        seen: std::sync::Mutex<Vec<(u32, u32)>>,
    }
    impl flowbundle_worker::Workload for Counted {
        type Local = u64;
        fn local(&self, _w: usize) -> u64 {
            0
        }
        fn process(
            &self,
            l: &mut u64,
            d: Desc,
            _held: &mut flowbundle_worker::BundleToken,
        ) -> flowbundle_worker::Outcome {
            self.count[d.id as usize].fetch_add(1, Relaxed);
            self.seen.lock().unwrap().push((d.conn, d.id));
            *l += 1;
            self.free.fetch_add(1, Release);
            flowbundle_worker::Outcome::Processed
        }
    }
    let n = 20_000usize;
    let descs = trace(n as u32, 300);
    for policy in ALL {
        let opts = SchedOptions {
            capacity: 32,
            ph_late_claim: false,
            ..SchedOptions::default()
        };
        for workers in [1, 2, 3] {
            let sched = ExclusivityChecker::new(build(policy, workers, &opts).unwrap());
            let keeps_order = sched.shape().keeps_flow_order;
            let work = Counted {
                count: (0..n).map(|_| AtomicU32::new(0)).collect(),
                free: AtomicUsize::new(64),
                seen: std::sync::Mutex::new(Vec::new()),
            };
            let mut next = 0usize;
            let feed = |crew: &Crew<'_, u64>| {
                let d = *descs.get(next)?;
                // A buffer: inspect worker 0's share while none is free, else let the others free one.
                loop {
                    let f = work.free.load(Acquire);
                    if f > 0 {
                        if work
                            .free
                            .compare_exchange(f, f - 1, AcqRel, Acquire)
                            .is_ok()
                        {
                            break;
                        }
                        continue;
                    }
                    if !crew.help() {
                        std::thread::yield_now();
                    }
                }
                next += 1;
                Some(d)
            };
            let (r, _) = run_stream(
                &sched,
                &work,
                feed,
                &mut |_| {},
                &StreamConfig {
                    pin: false,
                    reader_works: true,
                    ..StreamConfig::default()
                },
            )
            .expect("no thread panics");
            let check = sched.finish();
            let what = format!("{policy}, {workers} workers");
            assert_eq!((r.processed(), r.lost), (n as u64, 0), "{what}");
            assert_eq!(check.processed, n as u64, "{what}");
            assert!(work.count.iter().all(|c| c.load(Relaxed) == 1), "{what}");
            assert_eq!(r.locals.len(), workers, "{what}");
            assert_eq!(r.locals.iter().sum::<u64>(), n as u64, "{what}");
            if keeps_order {
                let mut last = HashMap::new();
                let seen = work.seen.lock().unwrap();
                assert!(
                    seen.iter()
                        .all(|&(c, id)| last.insert(c, id).is_none_or(|p| p < id)),
                    "{what}: a connection's packets out of order"
                );
            }
        }
    }
}
