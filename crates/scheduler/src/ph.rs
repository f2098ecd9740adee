//! # Packet Handoff (`ph`), ANCS'10 §3.2
//!
//! "A packet based scheduling algorithm, where the least loaded thread gets the next packet." The dispatcher only
//! enqueues into one receive queue (RQ); idle workers pull from it. Flow state lives in connection entries (CE) of a
//! shared connection table, each with an **owner** flag and a connection queue (**CQ**):
//!
//! * a worker that takes a packet whose CE has no owner becomes its owner and processes the packet;
//! * "if the CE is owned ... the thread enqueues the packet in the connection queue (CQ) associated with the CE and
//!   returns to the RQ for its next packet" (a *handoff*);
//! * "when the thread is finished processing its current packet it checks to see if any packets have been placed in
//!   the CQ ... If no packets are in the CQ it removes itself as the owner"; otherwise it keeps ownership and takes
//!   its next packet from the CQ instead of the RQ.
//!
//! A CE here is a connection bundle: the low 16 bits of the symmetric 5-tuple hash [`Desc::conn`] index a table of
//! 65,536 CEs (ARCHITECTURE.md: connection-granular policies bind at the bundle of `conn`).
//!
//! Invariants:
//! * **A worker owns at most one CE,** from taking a packet of it until its CQ is drained.
//! * **Exclusivity.** Only the owner of a CE processes packets of its bundle; a packet of an owned CE waits in its CQ.
//! * **No per-flow order promised.** Two packets of one connection may be taken from the RQ by two workers; whichever
//!   locks the CE first processes first (the paper's race; the harness measures the reordering).
//!
//! ## When the CE is claimed: inside `next`, or after the decode (`claim`)
//!
//! In PAM a thread parses L2–L4 between taking a packet from the RQ and looking up its CE, so two packets of a flow
//! race through the parse and the later one often claims the CE first: that race is where the paper's reordering
//! comes from. With [`SchedOptions::ph_late_claim`] this module does the same: `next` only pops the RQ, the worker
//! decodes, and [`Scheduler::claim`] then owns the CE or hands the packet off (and answers `false`). A worker holding
//! an unclaimed packet owns no CE yet, so "a worker owns at most one CE" still holds; two workers may hold unclaimed
//! packets of one connection, which is harmless because decoding touches no flow state.
//!
//! Without it (the default, for callers that never call `claim`), the CE is claimed inside `next`, right after the
//! pop: the race window is then only the instructions between the pop and the CE lock, so reordering happens in the
//! threaded runtime only when a worker is preempted there, and never in a single-threaded simulation.
//! * **Bounded.** Every packet occupies one slot of a `capacity`-slot arena from dispatch to `done`; RQ and CQs link
//!   slots, so neither can overflow, and `dispatch` refuses when no slot is free.
//!
//! ## Locking, and why
//!
//! The RQ is lock-free (crossbeam's bounded queue). Each CE has its own mutex guarding its owner and CQ ends: the
//! owner's "CQ empty ⇒ release" must be atomic with another worker's "owned ⇒ append", or a packet could be appended
//! to a CE just released and never processed. The critical sections are a few loads and stores, only workers take
//! them, and two workers contend only when they touch the same connection at once, which is exactly a handoff. The
//! dispatcher never locks, so its cost stays one slot allocation and one queue push. In the simulator (one thread)
//! the mutexes are never contended and never block.

use crate::slots::Slots;
use crate::sync::{ArrayQueue, AtomicU32, Mutex, MutexGuard, Ordering::Relaxed};
use crate::util::{Counter, NIL, Occupancy, conn_bundle, per_worker, sum};
use crate::{Desc, Placed, SchedOptions, SchedStats, Scheduler, WorkerId};
use crossbeam::utils::CachePadded;

/// Packets a worker may hand off in one `next` call before it returns `None` (it calls again): `next` stays bounded.
const MAX_HANDOFFS_PER_CALL: usize = 64;

const NO_OWNER: u16 = u16::MAX;

/// Connection entries: one per connection bundle. The model checker builds a small table instead (every model
/// connection has a bundle below it), since each entry is a mutex it tracks.
#[cfg(not(loom))]
const CE_TABLE: usize = crate::BUNDLES;
#[cfg(loom)]
const CE_TABLE: usize = 16;

/// The CE of a packet: its connection bundle (an identity with the full table).
#[inline]
fn ce_of(desc: &Desc) -> usize {
    usize::from(conn_bundle(desc)) % CE_TABLE
}

/// A connection entry: owner flag and connection queue (a slot list).
struct Ce {
    owner: u16,
    head: u32,
    tail: u32,
}

#[derive(Default)]
struct PhWorker {
    /// Slot of the packet being processed.
    held: AtomicU32,
    /// CE owned, `NIL` when none.
    owned: AtomicU32,
    /// Slot taken off the owned CE's CQ by `done`, to be returned by `next`.
    ready: AtomicU32,
    handoffs: Counter,
}

/// The Packet Handoff policy. See the module documentation.
pub struct PacketHandoff {
    slots: Slots,
    rq: ArrayQueue<u32>,
    table: Box<[Mutex<Ce>]>,
    state: Box<[CachePadded<PhWorker>]>,
    occupancy: Occupancy,
    full: Counter,
    workers: usize,
    /// Claim in `claim` (after the decode) rather than in `next`.
    late: bool,
}

impl PacketHandoff {
    pub fn new(workers: usize, opts: &SchedOptions) -> Self {
        let workers = workers.max(1);
        let slots = Slots::new(opts.capacity);
        PacketHandoff {
            rq: ArrayQueue::new(slots.capacity()),
            slots,
            table: (0..CE_TABLE)
                .map(|_| {
                    Mutex::new(Ce {
                        owner: NO_OWNER,
                        head: NIL,
                        tail: NIL,
                    })
                })
                .collect(),
            state: per_worker(workers, || PhWorker {
                held: AtomicU32::new(NIL),
                owned: AtomicU32::new(NIL),
                ready: AtomicU32::new(NIL),
                handoffs: Counter::default(),
            }),
            occupancy: Occupancy::new(workers),
            full: Counter::default(),
            workers,
            late: opts.ph_late_claim,
        }
    }

    fn ce(&self, c: usize) -> MutexGuard<'_, Ce> {
        // A poisoned CE only means a panic elsewhere; its fields are always consistent between statements.
        self.table[c].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Own the CE of the packet in slot `s`, or append the packet to its CQ. True when `w` now owns it.
    fn own_or_hand_off(&self, w: WorkerId, s: u32, c: usize) -> bool {
        let mut ce = self.ce(c);
        if ce.owner == NO_OWNER {
            ce.owner = w as u16;
            return true;
        }
        if ce.tail == NIL {
            ce.head = s;
        } else {
            self.slots.link(ce.tail, s);
        }
        ce.tail = s;
        false
    }

    /// After processing: take the next CQ packet, or release the CE when its CQ is empty.
    fn next_from_cq_or_release(&self, c: usize) -> Option<u32> {
        let mut ce = self.ce(c);
        if ce.head == NIL {
            ce.owner = NO_OWNER;
            return None;
        }
        let s = ce.head;
        ce.head = self.slots.next(s);
        if ce.head == NIL {
            ce.tail = NIL;
        }
        Some(s)
    }
}

impl Scheduler for PacketHandoff {
    fn name(&self) -> &'static str {
        "ph"
    }

    fn workers(&self) -> usize {
        self.workers
    }

    #[inline]
    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc> {
        let Some(s) = self.slots.alloc(desc) else {
            self.full.inc();
            return Err(desc);
        };
        self.occupancy.dispatched();
        // Cannot fail: the RQ holds as many entries as there are slots.
        let _ = self.rq.push(s);
        Ok(Placed::Any)
    }

    fn next(&self, w: WorkerId) -> Option<Desc> {
        let st = self.state.get(w)?;
        let ready = st.ready.load(Relaxed);
        if ready != NIL {
            st.ready.store(NIL, Relaxed);
            st.held.store(ready, Relaxed);
            return Some(self.slots.desc(ready));
        }
        if self.late {
            // PAM: take the packet, decode, then claim its CE (`claim`). Nothing owned until then.
            let s = self.rq.pop()?;
            st.held.store(s, Relaxed);
            return Some(self.slots.desc(s));
        }
        for _ in 0..MAX_HANDOFFS_PER_CALL {
            let s = self.rq.pop()?;
            let desc = self.slots.desc(s);
            let c = ce_of(&desc);
            if self.own_or_hand_off(w, s, c) {
                st.owned.store(c as u32, Relaxed);
                st.held.store(s, Relaxed);
                return Some(desc);
            }
            st.handoffs.inc();
        }
        None
    }

    fn claim(&self, w: WorkerId, _desc: &Desc) -> bool {
        if !self.late {
            return true;
        }
        let Some(st) = self.state.get(w) else {
            return false;
        };
        let s = st.held.load(Relaxed);
        if s == NIL {
            return false; // nothing taken: nothing to claim
        }
        if st.owned.load(Relaxed) != NIL {
            // The packet came off the CQ of the CE this worker already owns.
            return true;
        }
        let c = ce_of(&self.slots.desc(s));
        if self.own_or_hand_off(w, s, c) {
            st.owned.store(c as u32, Relaxed);
            return true;
        }
        // Handed off: the slot now belongs to the CE's CQ, and its owner will process it.
        st.held.store(NIL, Relaxed);
        st.handoffs.inc();
        false
    }

    fn keeps_flow_order(&self) -> bool {
        false
    }

    fn claims_late(&self) -> bool {
        self.late
    }

    fn done(&self, w: WorkerId, _desc: Desc) {
        let Some(st) = self.state.get(w) else { return };
        let s = st.held.load(Relaxed);
        if s == NIL {
            return;
        }
        let c = st.owned.load(Relaxed);
        if c == NIL {
            // `done` without a successful `claim` (late mode): the caller broke the contract. The packet was never
            // processed under exclusivity, so it goes back to the RQ (room guaranteed: one entry per slot) rather
            // than being freed as if processed.
            st.held.store(NIL, Relaxed);
            let _ = self.rq.push(s);
            return;
        }
        let c = c as usize;
        match self.next_from_cq_or_release(c) {
            Some(next) => st.ready.store(next, Relaxed),
            None => st.owned.store(NIL, Relaxed),
        }
        st.held.store(NIL, Relaxed);
        self.slots.free(s);
        self.occupancy.completed(w);
    }

    fn bundle(&self, desc: &Desc) -> u16 {
        conn_bundle(desc)
    }

    fn in_system(&self) -> usize {
        self.occupancy.in_system()
    }

    fn stats(&self) -> SchedStats {
        SchedStats {
            dispatched: self.occupancy.total_dispatched(),
            handoffs: sum(&self.state, |st| st.handoffs.get()),
            full: self.full.get(),
            ..SchedStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u32, conn: u32) -> Desc {
        Desc {
            id,
            conn,
            ..Desc::default()
        }
    }

    fn ph(workers: usize, capacity: usize) -> PacketHandoff {
        PacketHandoff::new(
            workers,
            &SchedOptions {
                capacity,
                ..SchedOptions::default()
            },
        )
    }

    #[test]
    fn idle_workers_pull_from_one_rq_in_arrival_order() {
        let s = ph(2, 16);
        for (id, conn) in [(0, 1), (1, 2), (2, 3)] {
            assert_eq!(s.dispatch(pkt(id, conn)), Ok(Placed::Any));
        }
        assert_eq!(s.next(1).map(|d| d.id), Some(0));
        assert_eq!(s.next(0).map(|d| d.id), Some(1));
    }

    #[test]
    fn a_packet_of_an_owned_ce_is_handed_off_and_the_worker_returns_to_the_rq() {
        // Trace: a0 a1 b2. Worker 0 owns CE a with a0; worker 1 pulls a1, hands it off to CE a's CQ, and takes b2.
        let s = ph(2, 16);
        for (id, conn) in [(0, 0xa), (1, 0xa), (2, 0xb)] {
            s.dispatch(pkt(id, conn)).unwrap();
        }
        let a0 = s.next(0).unwrap();
        assert_eq!(s.next(1).map(|d| d.id), Some(2));
        assert_eq!(s.stats().handoffs, 1);
        // The owner drains its CQ before releasing: a1 comes to worker 0.
        s.done(0, a0);
        assert_eq!(s.next(0).map(|d| d.id), Some(1));
    }

    #[test]
    fn a_worker_owns_at_most_one_ce_and_releases_it_when_its_cq_is_empty() {
        let s = ph(1, 16);
        s.dispatch(pkt(0, 0xa)).unwrap();
        s.dispatch(pkt(1, 0xb)).unwrap();
        let a = s.next(0).unwrap();
        assert_eq!(s.state[0].owned.load(Relaxed), 0xa);
        s.done(0, a);
        assert_eq!(s.state[0].owned.load(Relaxed), NIL, "CQ empty: CE released");
        let b = s.next(0).unwrap();
        assert_eq!((b.id, s.state[0].owned.load(Relaxed)), (1, 0xb));
        s.done(0, b);
        assert_eq!(s.table[0xa].lock().unwrap().owner, NO_OWNER);
    }

    #[test]
    fn the_cq_is_drained_in_order_by_the_owner() {
        // a0 owned by worker 0; worker 1 hands off a1 and a2 (then finds the RQ empty); worker 0 drains a1, a2.
        let s = ph(2, 16);
        for id in 0..3 {
            s.dispatch(pkt(id, 0xa)).unwrap();
        }
        let mut d = s.next(0).unwrap();
        assert_eq!(s.next(1), None);
        let mut order = vec![d.id];
        for _ in 0..2 {
            s.done(0, d);
            d = s.next(0).unwrap();
            order.push(d.id);
        }
        s.done(0, d);
        assert_eq!(order, [0, 1, 2]);
        assert_eq!(s.next(0), None);
        assert_eq!(s.in_system(), 0);
    }

    fn ph_late(workers: usize) -> PacketHandoff {
        PacketHandoff::new(
            workers,
            &SchedOptions {
                capacity: 16,
                ph_late_claim: true,
                ..SchedOptions::default()
            },
        )
    }

    #[test]
    fn late_claim_lets_the_faster_decoder_win_the_ce_and_reorders() {
        // PAM's race: workers 0 and 1 take a0 and a1 from the RQ; worker 1 finishes decoding first and claims CE a,
        // so worker 0's claim hands a0 off to worker 1's CQ, and a1 is processed before a0.
        let s = ph_late(2);
        for id in 0..2 {
            s.dispatch(pkt(id, 0xa)).unwrap();
        }
        let a0 = s.next(0).unwrap();
        let a1 = s.next(1).unwrap();
        assert_eq!((a0.id, a1.id), (0, 1));
        assert!(s.claim(1, &a1));
        assert!(!s.claim(0, &a0), "CE owned by worker 1: handed off");
        assert_eq!(s.stats().handoffs, 1);
        assert_eq!(s.next(0), None, "worker 0 went back to an empty RQ");
        s.done(1, a1);
        let again = s.next(1).unwrap();
        assert_eq!(again.id, 0, "the owner drains its CQ");
        assert!(s.claim(1, &again), "a CQ packet is already claimed");
        s.done(1, again);
        assert_eq!(s.in_system(), 0);
        assert_eq!(s.table[0xa].lock().unwrap().owner, NO_OWNER);
    }

    #[test]
    fn late_claim_owns_nothing_before_the_claim() {
        let s = ph_late(1);
        s.dispatch(pkt(0, 0xa)).unwrap();
        let d = s.next(0).unwrap();
        assert_eq!(s.state[0].owned.load(Relaxed), NIL, "taken, not claimed");
        assert!(s.claims_late());
        assert!(s.claim(0, &d));
        assert_eq!(s.state[0].owned.load(Relaxed), 0xa);
        s.done(0, d);
        assert_eq!(s.state[0].owned.load(Relaxed), NIL);
    }

    #[test]
    fn late_claim_done_without_claim_puts_the_packet_back() {
        let s = ph_late(1);
        s.dispatch(pkt(0, 0xa)).unwrap();
        let d = s.next(0).unwrap();
        s.done(0, d);
        assert_eq!(s.in_system(), 1, "not processed, not freed");
        let d = s.next(0).unwrap();
        assert!(s.claim(0, &d));
        s.done(0, d);
        assert_eq!(s.in_system(), 0);
    }

    #[test]
    fn early_claim_answers_true_and_is_not_late() {
        let s = ph(1, 4);
        s.dispatch(pkt(0, 1)).unwrap();
        let d = s.next(0).unwrap();
        assert!(!s.claims_late());
        assert!(s.claim(0, &d));
        s.done(0, d);
        assert_eq!(s.in_system(), 0);
    }

    #[test]
    fn capacity_counts_packets_in_cqs_too() {
        let s = ph(2, 3);
        for id in 0..3 {
            s.dispatch(pkt(id, 0xa)).unwrap();
        }
        assert_eq!(s.dispatch(pkt(3, 0xa)), Err(pkt(3, 0xa)));
        let a0 = s.next(0).unwrap();
        assert_eq!(s.next(1), None, "both remaining packets handed off to CE a");
        assert_eq!(s.stats().handoffs, 2);
        assert_eq!(
            s.dispatch(pkt(3, 0xa)),
            Err(pkt(3, 0xa)),
            "still 3 packets in the system"
        );
        s.done(0, a0);
        assert!(s.dispatch(pkt(3, 0xa)).is_ok());
        assert_eq!(s.in_system(), 3);
    }
}
