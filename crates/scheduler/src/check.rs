//! Checking the scheduler contract: [`ExclusivityChecker`] wraps any policy and panics on the first broken promise;
//! [`drive`] runs a policy under the checker through seeded, reproducible interleavings of `dispatch`, `next` and
//! `done` across N virtual workers on one thread.
//!
//! Tests use both for every policy (see `tests/contract.rs`); the threaded stress tests put the checker between the
//! policy and real threads. The checker serialises every call through one mutex, so it is for tests, not benchmarks.
//!
//! What is checked, and when it panics:
//! * **exclusivity**: `next(w)` returns a packet of a bundle another worker holds (between its `next` and `done`);
//! * **exactly once**: `next` returns a packet that was not dispatched, or was already given out; `done` names a
//!   packet the worker does not hold; [`ExclusivityChecker::finish`] finds a dispatched packet never finished;
//! * **one packet per worker**: `next(w)` returns a packet while `w` still holds one;
//! * **claims**: for a late-claiming policy ([`Scheduler::claims_late`]) exclusivity starts at a successful `claim`,
//!   `done` without one panics, and a refused claim puts the packet back in the queued state.
//!
//! Per-flow order (by [`Desc::conn`]) is counted, not enforced, because `ph` does not promise it: tests assert
//! [`CheckReport::order_violations`] is zero for the other policies.
//!
//! With real threads the checker records a hold after the inner `next` returns and releases it before the inner
//! `done` runs, so its view of each hold is inside the real one: it never reports a violation that did not happen.

use crate::{BUNDLES, Desc, Placed, SchedStats, Scheduler, WorkerId};
use std::collections::HashMap;
use std::sync::Mutex;

const FREE: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Life {
    Queued,
    /// Taken by `next` from a late-claiming policy, not yet claimed.
    Given(WorkerId),
    Held(WorkerId),
    Done,
}

struct State {
    holder: Vec<u32>,
    held: Vec<Option<Desc>>,
    /// Packet id → (arrival sequence, life).
    packets: HashMap<u32, (u64, Life)>,
    seq: u64,
    /// Flow → highest arrival sequence started so far.
    last_started: HashMap<u32, u64>,
    order_violations: u64,
    refused: u64,
    finished: u64,
    per_worker: Vec<u64>,
}

/// What a checked run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Packets accepted by `dispatch` (each exactly once processed, or `finish` would have panicked).
    pub dispatched: u64,
    /// Packets finished.
    pub processed: u64,
    /// `dispatch` calls refused (queue full); the packet was retried or dropped by the caller.
    pub refused: u64,
    /// Packets that started before an earlier-arrived packet of the same connection.
    pub order_violations: u64,
    /// Packets finished per worker.
    pub per_worker: Vec<u64>,
}

/// Wraps a policy and checks the contract on every call. See the module documentation.
pub struct ExclusivityChecker {
    inner: Box<dyn Scheduler>,
    state: Mutex<State>,
}

impl ExclusivityChecker {
    pub fn new(inner: Box<dyn Scheduler>) -> Self {
        let workers = inner.workers();
        ExclusivityChecker {
            inner,
            state: Mutex::new(State {
                holder: vec![FREE; BUNDLES],
                held: vec![None; workers],
                packets: HashMap::new(),
                seq: 0,
                last_started: HashMap::new(),
                order_violations: 0,
                refused: 0,
                finished: 0,
                per_worker: vec![0; workers],
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The report so far, without the completeness check.
    pub fn report(&self) -> CheckReport {
        let st = self.state();
        CheckReport {
            dispatched: st.packets.len() as u64,
            processed: st.finished,
            refused: st.refused,
            order_violations: st.order_violations,
            per_worker: st.per_worker.clone(),
        }
    }

    /// Worker `w` now holds `d` exclusively (after `next`, or after a late `claim`); the packet must be in state
    /// `from`. Panics on a broken promise; counts order violations.
    fn hold(&self, st: &mut State, w: WorkerId, d: Desc, from: Life) {
        let name = self.inner.name();
        let b = usize::from(self.inner.bundle(&d));
        if from == Life::Queued
            && let Some(prev) = st.held.get(w).copied().flatten()
        {
            panic!(
                "{name}: worker {w} given packet {} while still holding packet {}",
                d.id, prev.id
            );
        }
        let seq = match st.packets.get(&d.id) {
            Some(&(seq, life)) if life == from => seq,
            Some((_, life)) => panic!(
                "{name}: packet {} given to worker {w} again (it was {life:?})",
                d.id
            ),
            None => panic!(
                "{name}: worker {w} given packet {} that was never dispatched",
                d.id
            ),
        };
        let holder = st.holder[b];
        if holder != FREE {
            panic!(
                "{name}: exclusivity broken: worker {w} given packet {} of bundle {b} held by worker {holder}",
                d.id
            );
        }
        st.holder[b] = w as u32;
        if let Some(h) = st.held.get_mut(w) {
            *h = Some(d);
        }
        st.packets.insert(d.id, (seq, Life::Held(w)));
        let last = st.last_started.entry(d.conn).or_insert(seq);
        if *last > seq {
            st.order_violations += 1;
        } else {
            *last = seq;
        }
    }

    /// End of the run: panics if a dispatched packet was never finished.
    pub fn finish(&self) -> CheckReport {
        {
            let st = self.state();
            let mut lost: Vec<u32> = st
                .packets
                .iter()
                .filter(|(_, (_, life))| *life != Life::Done)
                .map(|(id, _)| *id)
                .collect();
            if !lost.is_empty() {
                lost.sort_unstable();
                lost.truncate(10);
                panic!(
                    "{}: {} packets dispatched but never processed (first ids {:?})",
                    self.inner.name(),
                    st.packets.len() as u64 - st.finished,
                    lost
                );
            }
        }
        self.report()
    }
}

impl Scheduler for ExclusivityChecker {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn workers(&self) -> usize {
        self.inner.workers()
    }

    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc> {
        // Record first: with real threads a worker may take the packet before `dispatch` returns.
        {
            let mut st = self.state();
            let seq = st.seq;
            if let Some((_, life)) = st.packets.insert(desc.id, (seq, Life::Queued)) {
                panic!(
                    "{}: packet {} dispatched twice (it was {:?})",
                    self.inner.name(),
                    desc.id,
                    life
                );
            }
            st.seq += 1;
        }
        let r = self.inner.dispatch(desc);
        if r.is_err() {
            let mut st = self.state();
            st.packets.remove(&desc.id);
            st.refused += 1;
        }
        r
    }

    fn next(&self, w: WorkerId) -> Option<Desc> {
        let d = self.inner.next(w)?;
        let name = self.inner.name();
        let mut st = self.state();
        if self.inner.claims_late() {
            if let Some(prev) = st.held.get(w).copied().flatten() {
                panic!(
                    "{name}: worker {w} given packet {} while still holding packet {}",
                    d.id, prev.id
                );
            }
            match st.packets.get_mut(&d.id) {
                Some((_, life @ Life::Queued)) => *life = Life::Given(w),
                Some((_, life)) => panic!(
                    "{name}: packet {} given to worker {w} again (it was {life:?})",
                    d.id
                ),
                None => panic!(
                    "{name}: worker {w} given packet {} that was never dispatched",
                    d.id
                ),
            }
            if let Some(h) = st.held.get_mut(w) {
                *h = Some(d);
            }
            return Some(d);
        }
        self.hold(&mut st, w, d, Life::Queued);
        Some(d)
    }

    fn claim(&self, w: WorkerId, desc: &Desc) -> bool {
        let name = self.inner.name();
        if !self.inner.claims_late() {
            let ok = self.inner.claim(w, desc);
            assert!(ok, "{name}: claim refused by a policy that claims in next");
            return ok;
        }
        // The lock is held across the inner call: a refused packet goes to another worker's queue inside it, and
        // must be marked queued again before that worker can report taking it.
        let mut st = self.state();
        match st.held.get(w).copied().flatten() {
            Some(h) if h.id == desc.id => {}
            other => panic!(
                "{name}: worker {w} claims packet {} but was given {:?}",
                desc.id,
                other.map(|d| d.id)
            ),
        }
        let ok = self.inner.claim(w, desc);
        if ok {
            self.hold(&mut st, w, *desc, Life::Given(w));
        } else {
            st.held[w] = None;
            if let Some(p) = st.packets.get_mut(&desc.id) {
                p.1 = Life::Queued;
            }
        }
        ok
    }

    fn claims_late(&self) -> bool {
        self.inner.claims_late()
    }

    fn keeps_flow_order(&self) -> bool {
        self.inner.keeps_flow_order()
    }

    fn done(&self, w: WorkerId, desc: Desc) {
        {
            let name = self.inner.name();
            let mut st = self.state();
            match st.held.get(w).copied().flatten() {
                Some(h) if h.id == desc.id => {}
                other => panic!(
                    "{name}: worker {w} finished packet {} but holds {:?}",
                    desc.id,
                    other.map(|d| d.id)
                ),
            }
            if let Some((_, life)) = st.packets.get(&desc.id)
                && *life != Life::Held(w)
            {
                panic!(
                    "{name}: worker {w} finished packet {} without claiming it (it was {life:?})",
                    desc.id
                );
            }
            st.held[w] = None;
            let b = usize::from(self.inner.bundle(&desc));
            st.holder[b] = FREE;
            if let Some(p) = st.packets.get_mut(&desc.id) {
                p.1 = Life::Done;
            }
            st.finished += 1;
            st.per_worker[w] += 1;
        }
        self.inner.done(w, desc);
    }

    fn classified(&self, w: WorkerId, desc: &Desc) {
        self.inner.classified(w, desc);
    }

    fn bundle(&self, desc: &Desc) -> u16 {
        self.inner.bundle(desc)
    }

    fn in_system(&self) -> usize {
        self.inner.in_system()
    }

    fn stats(&self) -> SchedStats {
        self.inner.stats()
    }
}

/// Parameters of a [`drive`] run.
#[derive(Clone, Debug)]
pub struct DriveConfig {
    /// Seed of the interleaving: the same seed gives the same schedule.
    pub seed: u64,
    /// Percent of steps that try to dispatch the next packet (the rest advance a random worker).
    pub dispatch_percent: u64,
    /// A packet takes 1 to this many of its worker's steps to process.
    pub max_service_steps: u64,
    /// Percent of started packets for which the driver reports `classified` (exercises `l7aff`'s hook).
    pub classify_percent: u64,
}

impl Default for DriveConfig {
    fn default() -> Self {
        DriveConfig {
            seed: 1,
            dispatch_percent: 50,
            max_service_steps: 4,
            classify_percent: 10,
        }
    }
}

/// What a [`drive`] run did.
#[derive(Clone, Debug)]
pub struct DriveReport {
    pub check: CheckReport,
    pub stats: SchedStats,
    /// Most packets the policy held at once.
    pub max_in_system: usize,
    /// Steps taken.
    pub steps: u64,
}

/// SplitMix64: a tiny, well-mixed, seedable generator (no dependency needed for test interleavings).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Run `trace` through `sched` under an [`ExclusivityChecker`], one thread, with a seeded interleaving of dispatches
/// and worker steps. Refused dispatches are retried later (nothing is dropped). Panics on any contract violation, on
/// a packet never processed, or when the run stops making progress (a lost packet).
pub fn drive(sched: Box<dyn Scheduler>, trace: &[Desc], cfg: &DriveConfig) -> DriveReport {
    let workers = sched.workers();
    let checker = ExclusivityChecker::new(sched);
    let mut rng = SplitMix64(cfg.seed);
    let mut busy: Vec<Option<(Desc, u64)>> = vec![None; workers];
    let mut next_pkt = 0;
    let mut max_in_system = 0;
    let mut steps = 0u64;
    let budget =
        1_000_000 + 200 * (trace.len() as u64) * cfg.max_service_steps.max(1) * workers as u64;
    loop {
        steps += 1;
        assert!(
            steps < budget,
            "{}: no progress after {steps} steps",
            checker.name()
        );
        let all_dispatched = next_pkt == trace.len();
        if !all_dispatched && rng.below(100) < cfg.dispatch_percent {
            if checker.dispatch(trace[next_pkt]).is_ok() {
                next_pkt += 1;
            }
        } else {
            let w = rng.below(workers as u64) as usize;
            step_worker(&checker, &mut busy[w], w, &mut rng, cfg);
        }
        max_in_system = max_in_system.max(checker.in_system());
        if all_dispatched && busy.iter().all(Option::is_none) {
            // Everyone idle: give each worker one chance; if nobody gets a packet the run is over.
            let mut any = false;
            for (w, slot) in busy.iter_mut().enumerate() {
                step_worker(&checker, slot, w, &mut rng, cfg);
                any |= slot.is_some();
            }
            if !any {
                break;
            }
        }
    }
    let check = checker.finish();
    assert_eq!(
        check.processed,
        trace.len() as u64,
        "{}: packets lost",
        checker.name()
    );
    DriveReport {
        check,
        stats: checker.stats(),
        max_in_system,
        steps,
    }
}

/// One step of worker `w`: finish or advance its packet, or take one. A late-claiming policy's packet is claimed a
/// step after it was taken, so other workers can take packets of the same connection in between (PAM's race).
fn step_worker(
    s: &ExclusivityChecker,
    slot: &mut Option<(Desc, u64)>,
    w: WorkerId,
    rng: &mut SplitMix64,
    cfg: &DriveConfig,
) {
    match slot.take() {
        Some((d, u64::MAX)) => {
            if s.claim(w, &d) {
                start(s, slot, w, d, rng, cfg);
            } // else handed off: the worker takes another packet next step
        }
        Some((d, 0)) => s.done(w, d),
        Some((d, left)) => *slot = Some((d, left - 1)),
        None => {
            if let Some(d) = s.next(w) {
                if s.claims_late() {
                    *slot = Some((d, u64::MAX)); // taken, to be claimed
                } else if s.claim(w, &d) {
                    start(s, slot, w, d, rng, cfg);
                }
            }
        }
    }
}

fn start(
    s: &ExclusivityChecker,
    slot: &mut Option<(Desc, u64)>,
    w: WorkerId,
    d: Desc,
    rng: &mut SplitMix64,
    cfg: &DriveConfig,
) {
    if rng.below(100) < cfg.classify_percent {
        s.classified(w, &d);
    }
    *slot = Some((d, rng.below(cfg.max_service_steps.max(1))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SchedOptions, build};

    /// A deliberately broken policy: one shared FIFO, no bundle ownership.
    struct Broken(std::sync::Mutex<std::collections::VecDeque<Desc>>);

    impl Scheduler for Broken {
        fn name(&self) -> &'static str {
            "broken"
        }
        fn workers(&self) -> usize {
            2
        }
        fn dispatch(&self, d: Desc) -> Result<Placed, Desc> {
            self.0.lock().unwrap().push_back(d);
            Ok(Placed::Any)
        }
        fn next(&self, _w: WorkerId) -> Option<Desc> {
            self.0.lock().unwrap().pop_front()
        }
        fn done(&self, _w: WorkerId, _d: Desc) {}
        fn bundle(&self, d: &Desc) -> u16 {
            d.fid
        }
        fn in_system(&self) -> usize {
            0
        }
        fn stats(&self) -> SchedStats {
            SchedStats::default()
        }
    }

    #[test]
    #[should_panic(expected = "exclusivity broken")]
    fn the_checker_catches_two_workers_on_one_bundle() {
        let c = ExclusivityChecker::new(Box::new(Broken(Default::default())));
        c.dispatch(Desc {
            id: 0,
            fid: 1,
            ..Desc::default()
        })
        .unwrap();
        c.dispatch(Desc {
            id: 1,
            fid: 1,
            ..Desc::default()
        })
        .unwrap();
        c.next(0);
        c.next(1);
    }

    #[test]
    #[should_panic(expected = "never processed")]
    fn the_checker_catches_a_lost_packet() {
        let c = ExclusivityChecker::new(build("dh", 2, &SchedOptions::default()).unwrap());
        c.dispatch(Desc {
            id: 0,
            ..Desc::default()
        })
        .unwrap();
        c.finish();
    }

    #[test]
    #[should_panic(expected = "still holding")]
    fn the_checker_catches_a_worker_taking_two_packets() {
        let c = ExclusivityChecker::new(build("dh", 1, &SchedOptions::default()).unwrap());
        c.dispatch(Desc {
            id: 0,
            ..Desc::default()
        })
        .unwrap();
        c.dispatch(Desc {
            id: 1,
            fid: 1,
            ..Desc::default()
        })
        .unwrap();
        c.next(0);
        c.next(0);
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        let trace: Vec<Desc> = (0..500)
            .map(|i| Desc {
                id: i,
                conn: i % 7,
                fid: (i % 5) as u16,
                ..Desc::default()
            })
            .collect();
        let run = |seed| {
            drive(
                build("lfb", 3, &SchedOptions::default()).unwrap(),
                &trace,
                &DriveConfig {
                    seed,
                    ..Default::default()
                },
            )
        };
        let (a, b) = (run(9), run(9));
        assert_eq!((a.steps, a.check.per_worker), (b.steps, b.check.per_worker));
    }
}
