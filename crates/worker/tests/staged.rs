//! The staged streaming run (`run_stream_staged`) with every policy that keeps flow order: each stage's group
//! processes every packet that needs it exactly once, under the exclusivity checker in every group; each group sees
//! every connection's packets in arrival order; packets skip the stages they do not need; small queues make workers
//! wait for a place in the next group (the model's contention) without losing anything. No timing asserted.

use flowbundle_scheduler::check::ExclusivityChecker;
use flowbundle_scheduler::{ALL, Desc, SchedOptions, Scheduler, build};
use flowbundle_types::{BundleToken, Outcome, StagedWorkload, WorkerId};
use flowbundle_worker::{StreamConfig, run_stream_staged};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

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
                len: 100,
            }
        })
        .collect()
}

/// Three stages: stage 1 for the packets of every other connection, stage 2 for every packet but each fifth one,
/// which is done after stage 0. (A bundle's packets take the same stages up to any stage they share, the condition
/// for each group to receive them in order; leaving early is always allowed.) Records per stage the order in which
/// each connection's packets were processed, and how often each packet was.
struct Stages {
    seen: Vec<Mutex<Vec<(u32, u32)>>>,
    count: Vec<Vec<AtomicU32>>,
    spin: u32,
}

impl Stages {
    fn new(n: usize, spin: u32) -> Self {
        Stages {
            seen: (0..3).map(|_| Mutex::new(Vec::new())).collect(),
            count: (0..3)
                .map(|_| (0..n).map(|_| AtomicU32::new(0)).collect())
                .collect(),
            spin,
        }
    }
}

impl StagedWorkload for Stages {
    type Local = ();

    fn stages(&self) -> usize {
        3
    }

    fn local(&self, _stage: usize, _w: WorkerId) {}

    fn process_stage(
        &self,
        stage: usize,
        _local: &mut (),
        desc: Desc,
        _held: &mut BundleToken,
    ) -> (Outcome, Option<usize>) {
        self.count[stage][desc.id as usize].fetch_add(1, Relaxed);
        self.seen[stage].lock().unwrap().push((desc.conn, desc.id));
        for _ in 0..self.spin {
            std::hint::spin_loop();
        }
        let next = match stage {
            0 if desc.id.is_multiple_of(5) => None,
            0 if needs_stage1(&desc) => Some(1),
            0 | 1 => Some(2),
            _ => None,
        };
        (Outcome::Processed, next)
    }
}

fn needs_stage1(d: &Desc) -> bool {
    !d.id.is_multiple_of(5) && (d.conn >> 3).is_multiple_of(2)
}

fn needs_stage2(d: &Desc) -> bool {
    !d.id.is_multiple_of(5)
}

/// Per stage: whether every connection's packets came in arrival (id) order.
fn in_order(seen: &[(u32, u32)]) -> bool {
    let mut last = std::collections::HashMap::new();
    seen.iter()
        .all(|&(conn, id)| last.insert(conn, id).is_none_or(|p| p < id))
}

#[test]
fn every_stage_sees_each_packet_it_needs_once_and_in_flow_order() {
    let n = 6_000u32;
    let descs = trace(n, 200);
    for name in ALL {
        let opts = SchedOptions {
            capacity: 64,
            ph_late_claim: false,
            ..SchedOptions::default()
        };
        let probe = build(name, 1, &opts).unwrap();
        if !probe.shape().keeps_flow_order {
            continue;
        }
        // [1, 1, 1] and [1, 2, 1]: one worker feeds the second group, in batches (to one worker, to two); [2, 1, 3]:
        // several workers feed each later group (each packet placed before its `done`, woken per batch).
        for sizes in [[1, 1, 1], [1, 2, 1], [2, 1, 3]] {
            let groups: Vec<ExclusivityChecker> = sizes
                .iter()
                .map(|&k| ExclusivityChecker::new(build(name, k, &opts).unwrap()))
                .collect();
            let scheds: Vec<&dyn Scheduler> = groups.iter().map(|g| g as &dyn Scheduler).collect();
            let work = Stages::new(n as usize, 200);
            let mut next = descs.clone().into_iter();
            let (r, _) = run_stream_staged(
                &scheds,
                &work,
                move || next.next(),
                &mut |_| {},
                &StreamConfig::default(),
            )
            .expect("no thread panics");
            assert_eq!(r.lost, 0, "{name} {sizes:?}");
            let n1 = descs.iter().filter(|d| needs_stage1(d)).count() as u32;
            let n2 = descs.iter().filter(|d| needs_stage2(d)).count() as u32;
            assert!(n1 > 0 && n2 > n1 && n2 < n);
            for (stage, expect) in [(0, n), (1, n1), (2, n2)] {
                let once = descs
                    .iter()
                    .filter(|d| {
                        let needed = match stage {
                            0 => true,
                            1 => needs_stage1(d),
                            _ => needs_stage2(d),
                        };
                        work.count[stage][d.id as usize].load(Relaxed) == u32::from(needed)
                    })
                    .count();
                assert_eq!(once, n as usize, "{name} {sizes:?}: stage {stage}");
                let processed: u64 = r.groups[stage].workers.iter().map(|w| w.packets).sum();
                assert_eq!(
                    processed,
                    u64::from(expect),
                    "{name} {sizes:?}: stage {stage}"
                );
                assert!(
                    in_order(&work.seen[stage].lock().unwrap()),
                    "{name} {sizes:?}: stage {stage} saw a connection out of order"
                );
            }
            assert_eq!(r.groups[1].received, u64::from(n1));
            assert_eq!(r.groups[2].received, u64::from(n2));
            for g in groups {
                let c = g.finish();
                assert!(c.processed > 0, "{name}: checker saw nothing");
            }
        }
    }
}

#[test]
fn a_full_next_group_makes_workers_wait_and_loses_nothing() {
    // The last stage is slow and its queue tiny: the first group's workers wait for places.
    struct Slow(AtomicU32);
    impl StagedWorkload for Slow {
        type Local = ();
        fn stages(&self) -> usize {
            2
        }
        fn local(&self, _stage: usize, _w: WorkerId) {}
        fn process_stage(
            &self,
            stage: usize,
            _local: &mut (),
            _desc: Desc,
            _held: &mut BundleToken,
        ) -> (Outcome, Option<usize>) {
            if stage == 0 {
                return (Outcome::Processed, Some(1));
            }
            self.0.fetch_add(1, Relaxed);
            std::thread::sleep(std::time::Duration::from_micros(20));
            (Outcome::Processed, None)
        }
    }
    let descs = trace(2_000, 50);
    let opts = SchedOptions {
        capacity: 4,
        ..SchedOptions::default()
    };
    let first = build("lfb", 2, &opts).unwrap();
    let last = build("lfb", 1, &opts).unwrap();
    let work = Slow(AtomicU32::new(0));
    let mut next = descs.into_iter();
    let (r, _) = run_stream_staged(
        &[first.as_ref(), last.as_ref()],
        &work,
        move || next.next(),
        &mut |_| {},
        &StreamConfig::default(),
    )
    .expect("no thread panics");
    assert_eq!(work.0.load(Relaxed), 2_000);
    assert_eq!((r.lost, r.groups[1].received), (0, 2_000));
    assert!(r.groups[1].refused > 0, "the tiny queue never refused");
}

/// Several workers hand packets to one group at once, and a policy's `dispatch` is made for one dispatcher thread
/// (`lfb` raises a bundle's count from zero and links its queue's tail without a read-modify-write): the hand-overs
/// must take turns. Four first-stage workers doing nothing but hand packets on to one second-stage worker, under
/// each policy unwrapped (the exclusivity checker's own bookkeeping would space the calls out): every packet reaches
/// the second stage once, each connection's in order.
#[test]
fn concurrent_hand_overs_into_one_group_lose_and_repeat_nothing() {
    struct Pass {
        count: Vec<AtomicU32>,
        seen: Mutex<Vec<(u32, u32)>>,
    }
    impl StagedWorkload for Pass {
        type Local = ();
        fn stages(&self) -> usize {
            2
        }
        fn local(&self, _stage: usize, _w: WorkerId) {}
        fn process_stage(
            &self,
            stage: usize,
            _local: &mut (),
            desc: Desc,
            _held: &mut BundleToken,
        ) -> (Outcome, Option<usize>) {
            if stage == 0 {
                return (Outcome::Processed, Some(1));
            }
            self.count[desc.id as usize].fetch_add(1, Relaxed);
            self.seen.lock().unwrap().push((desc.conn, desc.id));
            (Outcome::Processed, None)
        }
    }
    let n = 40_000u32;
    let descs = trace(n, 5_000);
    for name in ALL {
        let opts = SchedOptions {
            ph_late_claim: false,
            ..SchedOptions::default()
        };
        let first = build(name, 4, &opts).unwrap();
        if !first.shape().keeps_flow_order {
            continue;
        }
        let last = build(name, 1, &opts).unwrap();
        let work = Pass {
            count: (0..n).map(|_| AtomicU32::new(0)).collect(),
            seen: Mutex::new(Vec::with_capacity(n as usize)),
        };
        let mut next = descs.clone().into_iter();
        let (r, _) = run_stream_staged(
            &[first.as_ref(), last.as_ref()],
            &work,
            move || next.next(),
            &mut |_| {},
            &StreamConfig {
                pin: false,
                ..StreamConfig::default()
            },
        )
        .expect("no thread panics");
        let once = work.count.iter().filter(|c| c.load(Relaxed) == 1).count();
        assert_eq!((once, r.lost), (n as usize, 0), "{name}");
        assert_eq!(r.groups[1].received, u64::from(n), "{name}");
        assert!(
            in_order(&work.seen.lock().unwrap()),
            "{name}: the second stage saw a connection out of order"
        );
    }
}
