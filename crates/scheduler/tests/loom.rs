//! Model checks of the lock-free scheduler structures with loom: the slot arena, the FBQ table of `lfb`,
//! `lfb-affinity` and `lfb-bounded` (a worker handing its bundle back to the receive queue), the connection handoff of `ph`,
//! and `rss`'s move of an idle bucket (its in-flight count from the workers' finished counts). Built only with `--cfg loom`; run them with `scripts/loom`.
//!
//! Each model is one dispatcher thread (or, for a staged run's hand-over, two threads dispatching in turn under a
//! lock) and two worker threads on a policy built small (a few packets, two or three
//! bundles, an arena small enough to fill), explored by loom under every interleaving within a preemption bound
//! (3; `LOOM_MAX_PREEMPTIONS` overrides it) and every value a weak-memory load may return. The workers
//! touch per-bundle state the way the inspection engine touches its flow shards: through a cell with no lock, which
//! loom reports when two accesses are not ordered by happens-before. After the threads end, the main thread drains
//! what is left through the same worker steps, and the model checks:
//!
//! * **exclusivity**: no two workers hold one bundle (the shard cell records its holder, and each hold has a
//!   scheduling point inside it so a second worker gets the chance to break in), and every access to a bundle's
//!   state is ordered after the previous holder's, which is what lets the engine use it without a lock;
//! * **arena slot reuse**: every packet a worker is given is the exact descriptor dispatched under its id, though its
//!   slot was freed and refilled meanwhile;
//! * **exactly once**: every accepted packet is processed once, and a refused one (arena full) comes back unchanged
//!   and is never processed;
//! * **per-flow order** for the policies that promise it: each connection's packets are processed in arrival order;
//! * the policy's own accounting: nothing left in the system, dispatch and refusal counters equal to what happened;
//! * and that the model reaches what it is about: each names the events (a full arena, a join, a handoff, a steal...)
//!   that must happen in at least one explored execution, so a scenario that stopped exercising its race fails.
//!
//! What loom cannot check: it runs each thread's operations in program order, so it never shows a load reading a
//! store that comes later in another thread (load buffering). The release store that frees an arena slot, which keeps
//! the freeing worker's reads of the old descriptor before the dispatcher's writes of the new one, guards against
//! exactly that, and is argued in `slots.rs` rather than checked here.
#![cfg(loom)]

use flowbundle_scheduler::{Desc, SchedOptions, SchedStats, Scheduler, WorkerId, build};
use loom::cell::UnsafeCell;
use loom::model::Builder;
use loom::sync::atomic::{
    AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// One packet of the model: its id is its index in the trace, and every field differs between packets, so a
/// descriptor read half from a slot's old occupant and half from its new one cannot pass for either.
fn pkt(id: u32, conn: u32, fid: u16) -> Desc {
    Desc {
        id,
        conn,
        rss: 0x5eed_0000 | id,
        fid,
        len: 60 + id as u16,
    }
}

/// A scenario: a policy, its options, the trace the dispatcher offers, and how much each worker thread does before
/// the threads end.
struct Model {
    policy: &'static str,
    opts: SchedOptions,
    trace: Vec<Desc>,
    /// `next` calls each worker thread makes (each followed by `claim`, the hold and `done` when it got a packet).
    steps: usize,
    /// `dispatch` attempts per packet before the dispatcher counts it refused.
    attempts: usize,
    /// Threads that dispatch: 1, the runtime's dispatcher; more, the workers of a staged run's earlier group handing
    /// packets to this group (`flowbundle_worker::run_stream_staged`): packet `i` is handed over by thread
    /// `i % upstreams`, each `dispatch` under the group's hand-over lock, and only once the previous packet of its
    /// bundle has been (the earlier group's own exclusivity orders a bundle's hand-overs).
    upstreams: usize,
    /// Events that must happen in at least one explored execution.
    reaches: &'static [Event],
}

/// Something a model is about, read from the policy's counters at the end of an execution.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// `dispatch` refused a packet: the arena was full.
    Full,
    /// A packet joined a bundle in the system.
    Join,
    /// A join behind a packet of another flow (FBQ table collision).
    Collision,
    /// A bundle started on another worker than last time.
    Migration,
    /// `ph`: a packet went to the connection owner's queue.
    Handoff,
    /// `lfb-affinity`: a returning bundle went to its last worker; an idle worker took a head from a busy one.
    AffinityHit,
    Steal,
    /// `lfb-bounded`: a worker gave its bundle back to the receive queue after its bound.
    Yield,
}

impl Event {
    /// In declaration order, so `event as usize` indexes it.
    const ALL: [Event; 8] = [
        Event::Full,
        Event::Join,
        Event::Collision,
        Event::Migration,
        Event::Handoff,
        Event::AffinityHit,
        Event::Steal,
        Event::Yield,
    ];

    fn count(self, stats: &SchedStats) -> u64 {
        match self {
            Event::Full => stats.full,
            Event::Join => stats.bundle_joins,
            Event::Collision => stats.collisions,
            Event::Migration => stats.migrations,
            Event::Handoff => stats.handoffs,
            Event::AffinityHit => stats.affinity_hits,
            Event::Steal => stats.steals,
            Event::Yield => stats.yields,
        }
    }
}

const WORKERS: usize = 2;

/// Every interleaving with at most this many preemptions is explored (unless `LOOM_MAX_PREEMPTIONS` is set).
const PREEMPTIONS: usize = 3;

impl Model {
    fn check(self) {
        let mut builder = Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(PREEMPTIONS);
        }
        let bound = builder.preemption_bound;
        // Outside the model: what the explored executions did, summed over all of them.
        let tally = std::sync::Arc::new(std::sync::Mutex::new((0u64, [0u64; Event::ALL.len()])));
        let model = std::sync::Arc::new(self);
        let (m, t) = (model.clone(), tally.clone());
        builder.check(move || {
            let stats = m.run_once();
            let mut t = t.lock().unwrap();
            t.0 += 1;
            for (sum, e) in t.1.iter_mut().zip(Event::ALL) {
                *sum += e.count(&stats);
            }
        });
        let (executions, seen) = *tally.lock().unwrap();
        let name = std::thread::current()
            .name()
            .unwrap_or(model.policy)
            .to_string();
        println!("{name}: {executions} executions explored (preemption bound {bound:?})");
        for &e in model.reaches {
            assert!(
                seen[e as usize] > 0,
                "{name}: no explored execution reached {e:?}: the model no longer exercises what it is named for"
            );
        }
    }

    /// One execution; loom calls it once per schedule it explores.
    fn run_once(&self) -> SchedStats {
        let world = Arc::new(World::new(self));
        let upstreams = self.upstreams.max(1);
        // The staged hand-over's lock and, per packet, whether it has been handed over (or refused).
        let lock = Arc::new(Mutex::new(()));
        let handed: Arc<Vec<AtomicUsize>> =
            Arc::new(self.trace.iter().map(|_| AtomicUsize::new(0)).collect());
        let dispatchers: Vec<_> = (0..upstreams)
            .map(|u| {
                let world = world.clone();
                let trace = self.trace.clone();
                let attempts = self.attempts;
                let (lock, handed) = (lock.clone(), handed.clone());
                thread::spawn(move || {
                    let mut refused = Vec::new();
                    let mut refusals = 0;
                    for (i, &d) in trace.iter().enumerate().filter(|(i, _)| i % upstreams == u) {
                        if let Some(prev) = trace[..i].iter().rposition(|p| p.fid == d.fid) {
                            while handed[prev].load(Acquire) == 0 {
                                thread::yield_now();
                            }
                        }
                        let mut accepted = false;
                        for _ in 0..attempts {
                            let placed = if upstreams > 1 {
                                let _one_at_a_time = lock.lock().unwrap();
                                world.sched.dispatch(d)
                            } else {
                                world.sched.dispatch(d)
                            };
                            match placed {
                                Ok(_) => {
                                    accepted = true;
                                    break;
                                }
                                Err(back) => {
                                    assert_eq!(
                                        back, d,
                                        "a refused dispatch hands back another packet"
                                    );
                                    refusals += 1;
                                }
                            }
                        }
                        if !accepted {
                            refused.push(d.id);
                        }
                        handed[i].store(1, Release);
                    }
                    (refused, refusals)
                })
            })
            .collect();
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let world = world.clone();
                let steps = self.steps;
                thread::spawn(move || {
                    for _ in 0..steps {
                        world.step(w);
                    }
                })
            })
            .collect();
        let (mut refused, mut refusals) = (Vec::new(), 0);
        for h in dispatchers {
            let (r, n) = h.join().unwrap();
            refused.extend(r);
            refusals += n;
        }
        for h in workers {
            h.join().unwrap();
        }
        world.drain();
        world.verify(&refused, refusals);
        world.sched.stats()
    }
}

/// A bundle's state as the engine keeps it: only the bundle's holder touches it, without a lock.
struct Shard {
    holder: UnsafeCell<Option<WorkerId>>,
    /// Packets processed under this bundle, in processing order.
    log: UnsafeCell<Vec<u32>>,
}

struct World {
    sched: Box<dyn Scheduler>,
    trace: Vec<Desc>,
    shards: Vec<Shard>,
    /// Per worker: a counter only that worker touches, so updating it is a scheduling point that orders nothing.
    work: Vec<AtomicUsize>,
}

impl World {
    fn new(model: &Model) -> Self {
        let sched = build(model.policy, WORKERS, &model.opts).expect("model options are valid");
        for (i, d) in model.trace.iter().enumerate() {
            assert_eq!(d.id as usize, i, "a model's packet ids are their positions");
        }
        let bundles = model
            .trace
            .iter()
            .map(|d| usize::from(sched.bundle(d)) + 1)
            .max()
            .unwrap_or(0);
        World {
            trace: model.trace.clone(),
            shards: (0..bundles)
                .map(|_| Shard {
                    holder: UnsafeCell::new(None),
                    log: UnsafeCell::new(Vec::new()),
                })
                .collect(),
            work: (0..WORKERS).map(|_| AtomicUsize::new(0)).collect(),
            sched,
        }
    }

    /// One worker step, as the runtime does it: take a packet, claim its bundle, process it, release it. False when
    /// `next` had nothing.
    fn step(&self, w: WorkerId) -> bool {
        let Some(d) = self.sched.next(w) else {
            return false;
        };
        let sent = self.trace.get(d.id as usize);
        assert_eq!(
            Some(&d),
            sent,
            "worker {w} was given a descriptor that was never dispatched under its id"
        );
        if !self.sched.claim(w, &d) {
            return true; // handed off: the packet is the connection owner's now
        }
        let shard = &self.shards[usize::from(self.sched.bundle(&d))];
        // SAFETY (both cells): loom runs one model thread at a time and switches only at its own operations, none of
        // which runs inside these closures; an access not ordered after the previous one is reported by loom.
        shard.holder.with_mut(|h| {
            let h = unsafe { &mut *h };
            assert_eq!(
                *h,
                None,
                "worker {w} holds packet {} of bundle {} while worker {:?} holds it too",
                d.id,
                self.sched.bundle(&d),
                h
            );
            *h = Some(w);
        });
        shard.log.with_mut(|log| unsafe { (*log).push(d.id) });
        // Processing takes time: another thread may run here.
        self.work[w].fetch_add(1, Relaxed);
        shard.holder.with_mut(|h| {
            let h = unsafe { &mut *h };
            assert_eq!(*h, Some(w), "bundle holder changed under worker {w}");
            *h = None;
        });
        self.sched.done(w, d);
        true
    }

    /// After the threads end: run the workers' steps until nothing is left, as the runtime's workers would.
    fn drain(&self) {
        let limit = 4 * self.trace.len() + WORKERS;
        for _ in 0..limit {
            let mut progress = false;
            for w in 0..WORKERS {
                while self.step(w) {
                    progress = true;
                }
            }
            if !progress {
                return;
            }
        }
        panic!("the workers keep getting packets: a packet is never released");
    }

    fn verify(&self, refused: &[u32], refusals: u64) {
        let name = self.sched.name();
        assert_eq!(
            self.sched.in_system(),
            0,
            "{name}: packets left in the system"
        );
        let mut processed = Vec::new();
        for shard in &self.shards {
            // SAFETY: as in `step`; every worker thread has been joined.
            let log = shard.log.with(|log| unsafe { (*log).clone() });
            if self.sched.keeps_flow_order() {
                // Every packet is compared with the last one processed before it on its connection.
                let mut last: Vec<(u32, u32)> = Vec::new();
                for &id in &log {
                    let conn = self.trace[id as usize].conn;
                    match last.iter_mut().find(|(c, _)| *c == conn) {
                        Some((_, prev)) => {
                            assert!(
                                *prev < id,
                                "{name}: packet {id} of connection {conn} processed after packet {prev}"
                            );
                            *prev = id;
                        }
                        None => last.push((conn, id)),
                    }
                }
            }
            processed.extend(log);
        }
        processed.sort_unstable();
        let accepted: Vec<u32> = self
            .trace
            .iter()
            .map(|d| d.id)
            .filter(|id| !refused.contains(id))
            .collect();
        assert_eq!(
            processed, accepted,
            "{name}: every accepted packet is processed exactly once (refused: {refused:?})"
        );
        let stats = self.sched.stats();
        assert_eq!(
            stats.dispatched,
            accepted.len() as u64,
            "{name}: dispatched"
        );
        assert_eq!(stats.full, refusals, "{name}: refusals");
    }
}

fn opts(capacity: usize, fbq_table: usize) -> SchedOptions {
    SchedOptions {
        capacity,
        fbq_table,
        ..SchedOptions::default()
    }
}

#[test]
fn lfb_one_bundle_is_held_by_one_worker_and_processed_in_order() {
    // Four packets of one flow: each join races the holder's release (the count that reaches zero), and a bundle
    // that drains reopens on the receive queue, maybe for the other worker.
    Model {
        policy: "lfb",
        opts: opts(4, 4),
        trace: vec![pkt(0, 1, 1), pkt(1, 1, 1), pkt(2, 1, 1), pkt(3, 1, 1)],
        steps: 3,
        attempts: 1,
        upstreams: 1,
        reaches: &[Event::Join, Event::Migration],
    }
    .check();
}

#[test]
fn rss_moves_a_bucket_only_once_its_worker_has_finished_it() {
    // Buckets 2 and 0 both start on worker 0; after the second dispatch the policy rebalances, and may move a
    // bucket to worker 1 only when all its packets are finished, which it learns from the workers' own counts of
    // finished packets (acquire against their release). Flow 1's second packet (bucket 2) then goes to worker 1:
    // its bundle's state must be ordered after worker 0's use of it, and its packets stay in order.
    let rpkt = |id: u32, conn: u32, rss: u32| Desc {
        id,
        conn,
        rss,
        fid: conn as u16,
        len: 60 + id as u16,
    };
    Model {
        policy: "rss",
        opts: SchedOptions {
            rss_interval: 2,
            ..opts(8, 4)
        },
        trace: vec![rpkt(0, 1, 2), rpkt(1, 2, 0), rpkt(2, 1, 2)],
        steps: 2,
        attempts: 2,
        upstreams: 1,
        reaches: &[Event::Migration],
    }
    .check();
}

#[test]
fn lfb_hand_overs_from_two_threads_take_turns_under_a_lock() {
    // A staged run's hand-over: two workers of the earlier group dispatch into this group's `lfb` (a policy made for
    // one dispatcher thread), one `dispatch` at a time under the group's lock; flow 1's second packet is handed
    // over by the other thread once its first has been. Every packet once, flow order, one holder per bundle.
    Model {
        policy: "lfb",
        opts: opts(4, 4),
        trace: vec![pkt(0, 1, 1), pkt(1, 1, 1), pkt(2, 2, 2)],
        steps: 2,
        attempts: 1,
        upstreams: 2,
        reaches: &[Event::Join, Event::Migration],
    }
    .check();
}

#[test]
fn lfb_colliding_bundles_under_a_full_arena() {
    // Table of 2: fids 1 and 3 share FBQ 1, fid 2 has FBQ 0. Two slots for four packets: dispatch finds the arena
    // full unless a worker frees a slot in time, and the slots are reused.
    Model {
        policy: "lfb",
        opts: opts(2, 2),
        trace: vec![pkt(0, 1, 1), pkt(1, 3, 3), pkt(2, 2, 2), pkt(3, 1, 1)],
        steps: 2,
        attempts: 2,
        upstreams: 1,
        reaches: &[Event::Full, Event::Join, Event::Collision],
    }
    .check();
}

#[test]
fn lfb_a_single_slot_is_reused_safely() {
    // One slot: every packet after the first reuses the slot a worker just freed.
    Model {
        policy: "lfb",
        opts: opts(1, 4),
        trace: vec![pkt(0, 1, 1), pkt(1, 2, 2), pkt(2, 1, 1), pkt(3, 2, 2)],
        steps: 2,
        attempts: 2,
        upstreams: 1,
        reaches: &[Event::Full],
    }
    .check();
}

#[test]
fn lfb_affinity_returning_and_stolen_bundles() {
    // A large slack sends every returning bundle to its last worker, busy or not, so an idle worker steals the head:
    // worker A opens flow 1 and then takes flow 2, flow 1 returns to busy A, and B takes it from A's queue.
    Model {
        policy: "lfb-affinity",
        opts: SchedOptions {
            affinity_slack: 8,
            ..opts(3, 4)
        },
        trace: vec![pkt(0, 1, 1), pkt(1, 2, 2), pkt(2, 1, 1)],
        steps: 2,
        attempts: 1,
        upstreams: 1,
        reaches: &[Event::AffinityHit, Event::Steal, Event::Migration],
    }
    .check();
}

#[test]
fn lfb_bounded_a_yielded_bundle_is_taken_whole_by_one_worker_in_order() {
    // A bound of one packet: whenever flow 1's holder finishes a packet while flow 2 waits on the receive queue, it
    // pushes flow 1's next head back on the receive queue, where the other worker may take it while the dispatcher
    // is still linking flow 1's later packets behind it.
    Model {
        policy: "lfb-bounded",
        opts: SchedOptions {
            lfb_bound: 1,
            ..opts(4, 4)
        },
        trace: vec![pkt(0, 1, 1), pkt(1, 1, 1), pkt(2, 2, 2), pkt(3, 1, 1)],
        steps: 2,
        attempts: 1,
        upstreams: 1,
        reaches: &[Event::Yield, Event::Join, Event::Migration],
    }
    .check();
}

#[test]
fn ph_packets_of_an_owned_connection_are_handed_to_its_owner() {
    // Three slots for four packets; the owner of connection 1 drains its queue before releasing it.
    Model {
        policy: "ph",
        opts: opts(3, 4),
        trace: vec![pkt(0, 1, 1), pkt(1, 1, 1), pkt(2, 2, 2), pkt(3, 1, 1)],
        steps: 3,
        attempts: 1,
        upstreams: 1,
        reaches: &[Event::Handoff, Event::Full],
    }
    .check();
}

#[test]
fn ph_late_claim_hands_off_after_the_decode() {
    // Both workers may take packets of connection 1 and race to claim it; the loser hands its packet to the winner.
    Model {
        policy: "ph",
        opts: SchedOptions {
            ph_late_claim: true,
            ..opts(2, 4)
        },
        trace: vec![pkt(0, 1, 1), pkt(1, 1, 1), pkt(2, 2, 2), pkt(3, 1, 1)],
        steps: 3,
        attempts: 2,
        upstreams: 1,
        reaches: &[Event::Handoff, Event::Full],
    }
    .check();
}
