//! # Last Flow Bundle (`lfb`), ANCS'10 §3.3
//!
//! "The idea is to process all of the packets in the system that map to the same flow on a single thread and not
//! interleave the processing of packets that map to other flows." Two kinds of queue: one receive queue (RQ) shared by
//! all workers, and a table of flow bundle queues (FBQ), 4,096 by default, indexed by the CRC-16 of the FID
//! ([`Desc::fid`]) modulo the table size.
//!
//! * **Dispatch.** "If the selected FBQ is empty, then the packet is enqueued in it and the RQ. On the other hand, if
//!   the selected FBQ is not empty, the packet is only enqueued in it."
//! * **Workers.** A worker without a bundle takes a packet from the RQ, which associates it with that packet's FBQ.
//!   Workers "dequeue packets from the RQ before they process them" and "from the FBQ after they have fully processed
//!   them": the packet stays at the head of its FBQ while processed, which tells the dispatcher the bundle is held. If
//!   the FBQ is not empty after the dequeue, the worker processes its new head next, without dequeuing it, "until the
//!   FBQ is empty. Once the FBQ is empty the PAM thread returns to the RQ."
//!
//! Invariants (each has a test below):
//! * **At most one RQ entry per FBQ,** the packet that opened the bundle; so the RQ never holds more than the table
//!   size, and its push cannot fail.
//! * **Exclusivity.** A FBQ is associated with at most one worker from the moment its head leaves the RQ until it is
//!   empty; every packet of a bundle (a CRC value) maps to one FBQ.
//! * **Per-flow order.** A FBQ is FIFO and processed serially.
//! * **Affinity before age.** A worker finishing a packet takes the next packet of its bundle before older packets
//!   waiting in the RQ (the source of LFB's cache benefit and of its packet delay variation).
//! * **Bounded.** At most `capacity` packets in the system; beyond it `dispatch` hands the packet back.
//!
//! ## Lock-free design, and why
//!
//! The dispatcher shares the two cores of this lab's machine with the workers, so a worker preempted inside a lock
//! would stall the dispatcher for a scheduler quantum. Nothing here locks:
//!
//! * each FBQ is a linked list through the slots of a fixed slot arena (`slots.rs`) (memory bounded by packets in the system,
//!   however they are distributed), with a per-FBQ atomic **count** of its packets in the system;
//! * the dispatcher is the only producer: it alone allocates slots, keeps each FBQ's tail, and increments counts.
//!   A count it reads as zero stays zero (workers only decrement), so "empty" needs no CAS: the packet opens the
//!   bundle and goes to the RQ. Otherwise it links the packet after the tail and then increments; if the increment
//!   returns zero the last packet was released in between, and the packet opens the bundle after all;
//! * the worker releases a packet by decrementing the count (acquire-release); a previous value above one means a
//!   successor was linked before it was counted, so the worker reads the link and keeps the bundle. The packet's slot
//!   is freed only after its link was read.
//!
//! The RQ is crossbeam's lock-free bounded queue of slot numbers. A dispatch costs a slot allocation (usually the
//! first probe), one count load or RMW and, when the bundle opens, one queue push.

use crate::slots::Slots;
use crate::sync::{ArrayQueue, AtomicU16, AtomicU32, Ordering::*};
use crate::util::{Counter, DispatcherOnly, NIL, Occupancy, per_worker, sum};
use crate::{Desc, DescHashes, Placed, SchedOptions, SchedStats, Scheduler, WorkerId};
use crossbeam::utils::CachePadded;

/// Worker id stored in 16-bit cells for "nobody yet".
pub(crate) const NO_WORKER: u16 = u16::MAX;

/// Log the paper's sizing rule when the table is small for the thread count.
pub(crate) fn warn_if_small(name: &str, workers: usize, fbq_table: usize) {
    if fbq_table < 100 * workers {
        tracing::warn!(
            scheduler = name,
            fbq_table,
            workers,
            "FBQ table has fewer than 100 entries per worker: collisions will limit load balancing (ANCS'10 §3.3)"
        );
    }
}

/// Per-worker state of the FBQ machinery. Only the worker itself writes it.
#[derive(Default)]
pub(crate) struct FbqWorker {
    /// Slot of the packet being processed, `NIL` when none.
    held: AtomicU32,
    /// Slot of the next head of the associated FBQ, set by `done` when the FBQ is not empty.
    ready: AtomicU32,
    /// Packets of the associated FBQ finished since the worker took it from a receive queue (`lfb-bounded`).
    run: AtomicU32,
    migrations: Counter,
    yields: Counter,
}

/// The FBQ table with its slot arena: everything LFB and LFB-affinity share. The policies add the receive queue(s).
pub(crate) struct FbqTable {
    slots: Slots,
    /// Packets of each FBQ in the system (queued or being processed).
    count: Box<[AtomicU32]>,
    /// Dispatcher only: last slot of each FBQ, and the FID it carried (collision counting).
    tail: Box<[AtomicU32]>,
    tail_fid: Box<[AtomicU16]>,
    /// Worker that last opened each FBQ (`NO_WORKER` before the first time).
    last_worker: Box<[AtomicU16]>,
    mask: usize,
    size: usize,
    workers: Box<[CachePadded<FbqWorker>]>,
    occupancy: Occupancy,
    // Dispatcher-written at every join: off the lines of the fields above, which workers read for every packet.
    joins: DispatcherOnly<Counter>,
    collisions: DispatcherOnly<Counter>,
    full: DispatcherOnly<Counter>,
}

impl FbqTable {
    pub(crate) fn new(workers: usize, opts: &SchedOptions) -> Self {
        let size = opts.fbq_table.clamp(1, crate::BUNDLES);
        let cells = |v: u32| (0..size).map(|_| AtomicU32::new(v)).collect::<Box<[_]>>();
        let cells16 = |v: u16| (0..size).map(|_| AtomicU16::new(v)).collect::<Box<[_]>>();
        FbqTable {
            slots: Slots::new(opts.capacity),
            count: cells(0),
            tail: cells(NIL),
            tail_fid: cells16(0),
            last_worker: cells16(NO_WORKER),
            mask: if size.is_power_of_two() {
                size - 1
            } else {
                usize::MAX
            },
            size,
            workers: per_worker(workers, || FbqWorker {
                held: AtomicU32::new(NIL),
                ready: AtomicU32::new(NIL),
                run: AtomicU32::new(0),
                migrations: Counter::default(),
                yields: Counter::default(),
            }),
            occupancy: Occupancy::new(workers),
            joins: DispatcherOnly::default(),
            collisions: DispatcherOnly::default(),
            full: DispatcherOnly::default(),
        }
    }

    /// Receive-queue capacity that can never overflow: at most one entry per FBQ, and per packet in the system.
    pub(crate) fn rq_capacity(&self) -> usize {
        self.size.min(self.slots.capacity()).max(1)
    }

    /// The FBQ of a packet: CRC-16 of the FID modulo the table size.
    #[inline]
    pub(crate) fn fbq(&self, desc: &Desc) -> usize {
        let c = usize::from(desc.fid);
        if self.mask != usize::MAX {
            c & self.mask
        } else {
            c % self.size
        }
    }

    /// Enqueue in the packet's FBQ. `Ok(Some((fbq, slot)))`: the FBQ was empty, the packet opens the bundle and the
    /// caller must put `slot` on a receive queue; `Ok(None)`: it joined a bundle in the system.
    #[inline]
    pub(crate) fn enqueue(&self, desc: Desc) -> Result<Option<(usize, u32)>, Desc> {
        let Some(s) = self.slots.alloc(desc) else {
            self.full.inc();
            return Err(desc);
        };
        let q = self.fbq(&desc);
        self.occupancy.dispatched();
        let opened = if self.count[q].load(Acquire) == 0 {
            // Stable: only the dispatcher raises a count from zero.
            self.count[q].store(1, Release);
            true
        } else {
            self.slots.link(self.tail[q].load(Relaxed), s);
            // AcqRel: publishes the link and the slot's descriptor to the worker that will decrement past us.
            let open = self.count[q].fetch_add(1, AcqRel) == 0;
            if !open {
                self.joins.inc();
                if self.tail_fid[q].load(Relaxed) != desc.fid {
                    self.collisions.inc();
                }
            }
            open
        };
        self.tail[q].store(s, Relaxed);
        self.tail_fid[q].store(desc.fid, Relaxed);
        Ok(opened.then_some((q, s)))
    }

    /// The head of worker `w`'s FBQ if `done` kept the bundle; the worker now holds it.
    #[inline]
    pub(crate) fn resume(&self, w: WorkerId) -> Option<Desc> {
        let st = self.workers.get(w)?;
        let s = st.ready.load(Relaxed);
        if s == NIL {
            return None;
        }
        st.ready.store(NIL, Relaxed);
        st.held.store(s, Relaxed);
        Some(self.slots.desc(s))
    }

    /// Worker `w` took an opening packet (slot `s`, taken from a receive queue with acquire): it is now associated
    /// with the packet's FBQ. Counts a migration when another worker opened the FBQ last time.
    #[inline]
    pub(crate) fn start(&self, w: WorkerId, s: u32) -> Desc {
        let desc = self.slots.desc(s);
        let q = self.fbq(&desc);
        let me = w as u16;
        let last = self.last_worker[q].load(Relaxed);
        if last != me {
            if last != NO_WORKER {
                self.workers[w].migrations.inc();
            }
            self.last_worker[q].store(me, Relaxed);
        }
        self.workers[w].held.store(s, Relaxed);
        self.workers[w].run.store(0, Relaxed);
        desc
    }

    /// Worker `w` finished its packet: dequeue it from its FBQ (after processing, as the paper says) and keep the
    /// bundle when more packets wait in it.
    #[inline]
    pub(crate) fn finish(&self, w: WorkerId) {
        let Some(st) = self.workers.get(w) else {
            return;
        };
        let s = st.held.load(Relaxed);
        if s == NIL {
            return; // `done` without `next`: nothing held, nothing to release.
        }
        let q = self.fbq(&self.slots.desc(s));
        if self.count[q].fetch_sub(1, AcqRel) > 1 {
            st.ready.store(self.slots.next(s), Relaxed);
        }
        st.held.store(NIL, Relaxed);
        self.slots.free(s);
        self.occupancy.completed(w);
    }

    /// As [`finish`](Self::finish), with a bound on how long a worker keeps a bundle (`lfb-bounded`): when the FBQ
    /// still holds packets, the worker has finished `bound` of them in a row, and `waiting()` says other bundles wait
    /// on a receive queue (it is given the bundle's next head), the worker gives the bundle up and returns the slot of its next head, which the caller
    /// must put on a receive queue (the bundle stays in the system, so the invariant of one receive-queue entry per
    /// FBQ holds, and its packets stay in FIFO order behind that head). `None`: kept or drained, as `finish`.
    #[inline]
    pub(crate) fn finish_bounded(
        &self,
        w: WorkerId,
        bound: u32,
        waiting: impl FnOnce(&Desc) -> bool,
    ) -> Option<u32> {
        let st = self.workers.get(w)?;
        let s = st.held.load(Relaxed);
        if s == NIL {
            return None;
        }
        let q = self.fbq(&self.slots.desc(s));
        let mut yielded = None;
        if self.count[q].fetch_sub(1, AcqRel) > 1 {
            let next = self.slots.next(s);
            let run = st.run.load(Relaxed).saturating_add(1);
            if run >= bound && waiting(&self.slots.desc(next)) {
                st.run.store(0, Relaxed);
                st.yields.inc();
                yielded = Some(next);
            } else {
                st.run.store(run, Relaxed);
                st.ready.store(next, Relaxed);
            }
        }
        st.held.store(NIL, Relaxed);
        self.slots.free(s);
        self.occupancy.completed(w);
        yielded
    }

    pub(crate) fn last_worker(&self, q: usize) -> Option<WorkerId> {
        let w = self.last_worker.get(q)?.load(Relaxed);
        (w != NO_WORKER).then_some(usize::from(w))
    }

    /// 1 when worker `w` holds a bundle (a packet in hand or a head waiting), else 0.
    pub(crate) fn busy(&self, w: WorkerId) -> usize {
        self.workers.get(w).map_or(0, |st| {
            usize::from(st.held.load(Relaxed) != NIL || st.ready.load(Relaxed) != NIL)
        })
    }

    pub(crate) fn in_system(&self) -> usize {
        self.occupancy.in_system()
    }

    pub(crate) fn stats(&self) -> SchedStats {
        SchedStats {
            dispatched: self.occupancy.total_dispatched(),
            bundle_joins: self.joins.get(),
            collisions: self.collisions.get(),
            migrations: sum(&self.workers, |st| st.migrations.get()),
            yields: sum(&self.workers, |st| st.yields.get()),
            full: self.full.get(),
            ..SchedStats::default()
        }
    }
}

/// The Last Flow Bundle policy. See the module documentation.
pub struct LastFlowBundle {
    pub(crate) table: FbqTable,
    /// The receive queue: the slot of each bundle's head while no worker holds the bundle.
    pub(crate) rq: ArrayQueue<u32>,
    workers: usize,
}

impl LastFlowBundle {
    pub fn new(workers: usize, opts: &SchedOptions) -> Self {
        Self::named("lfb", workers, opts)
    }

    /// An `lfb` table and receive queue for a policy built on them (`lfb-bounded`), which warns under its own name.
    pub(crate) fn named(name: &str, workers: usize, opts: &SchedOptions) -> Self {
        let workers = workers.max(1);
        warn_if_small(name, workers, opts.fbq_table);
        let table = FbqTable::new(workers, opts);
        let rq = ArrayQueue::new(table.rq_capacity());
        LastFlowBundle { table, rq, workers }
    }

    /// The FBQ a packet maps to.
    pub fn fbq(&self, desc: &Desc) -> usize {
        self.table.fbq(desc)
    }

    /// `next`, calling `started` with a bundle's head when the worker takes it from the receive queue (not when it
    /// resumes the bundle it holds).
    #[inline]
    pub(crate) fn next_noting(&self, w: WorkerId, started: impl FnOnce(&Desc)) -> Option<Desc> {
        if w >= self.workers {
            return None;
        }
        if let Some(d) = self.table.resume(w) {
            return Some(d);
        }
        let s = self.rq.pop()?;
        let d = self.table.start(w, s);
        started(&d);
        Some(d)
    }
}

impl Scheduler for LastFlowBundle {
    fn name(&self) -> &'static str {
        "lfb"
    }

    fn workers(&self) -> usize {
        self.workers
    }

    #[inline]
    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc> {
        match self.table.enqueue(desc)? {
            None => Ok(Placed::Joined),
            Some((_, s)) => {
                // Cannot fail: one RQ entry per FBQ at most (see `rq_capacity`).
                let _ = self.rq.push(s);
                Ok(Placed::Any)
            }
        }
    }

    #[inline]
    fn next(&self, w: WorkerId) -> Option<Desc> {
        self.next_noting(w, |_| {})
    }

    #[inline]
    fn done(&self, w: WorkerId, _desc: Desc) {
        self.table.finish(w);
    }

    fn queues_opening_twice(&self) -> bool {
        true
    }

    fn bundle(&self, desc: &Desc) -> u16 {
        desc.fid
    }

    fn hashes_read(&self) -> DescHashes {
        DescHashes::FID
    }

    fn in_system(&self) -> usize {
        self.table.in_system()
    }

    fn stats(&self) -> SchedStats {
        self.table.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u32, fid: u16) -> Desc {
        Desc {
            id,
            fid,
            ..Desc::default()
        }
    }

    fn lfb(workers: usize, fbq_table: usize, capacity: usize) -> LastFlowBundle {
        LastFlowBundle::new(
            workers,
            &SchedOptions {
                fbq_table,
                capacity,
                ..SchedOptions::default()
            },
        )
    }

    fn ids(v: &[Option<Desc>]) -> Vec<Option<u32>> {
        v.iter().map(|d| d.map(|d| d.id)).collect()
    }

    #[test]
    fn an_empty_fbq_puts_the_packet_on_the_rq_too_a_busy_one_does_not() {
        let s = lfb(2, 16, 64);
        assert_eq!(s.dispatch(pkt(0, 1)), Ok(Placed::Any)); // FBQ 1 empty: FBQ + RQ
        assert_eq!(s.dispatch(pkt(1, 1)), Ok(Placed::Joined)); // FBQ 1 busy: FBQ only
        assert_eq!(s.dispatch(pkt(2, 2)), Ok(Placed::Any));
        assert_eq!(s.rq.len(), 2, "one RQ entry per FBQ");
        assert_eq!(s.stats().bundle_joins, 1);
    }

    #[test]
    fn a_worker_keeps_its_bundle_until_the_fbq_is_empty() {
        // Trace: a0 a1 b2 a3 (a = fid 1, b = fid 2). Worker 0 takes a0 from the RQ, then a1 and a3 from the FBQ head
        // although b2 arrived before a3; worker 1 gets b2 from the RQ meanwhile.
        let s = lfb(2, 16, 64);
        for (id, fid) in [(0, 1), (1, 1), (2, 2), (3, 1)] {
            s.dispatch(pkt(id, fid)).unwrap();
        }
        let a0 = s.next(0);
        let b2 = s.next(1);
        assert_eq!(ids(&[a0, b2]), [Some(0), Some(2)]);
        assert_eq!(s.next(1), None, "worker 1 still holds b2");
        s.done(0, a0.unwrap());
        let a1 = s.next(0);
        s.done(0, a1.unwrap());
        let a3 = s.next(0);
        s.done(0, a3.unwrap());
        assert_eq!(ids(&[a1, a3, s.next(0)]), [Some(1), Some(3), None]);
        s.done(1, b2.unwrap());
        assert_eq!(s.in_system(), 0);
    }

    #[test]
    fn a_held_bundle_is_never_given_to_a_second_worker() {
        let s = lfb(3, 16, 64);
        s.dispatch(pkt(0, 5)).unwrap();
        let first = s.next(0).unwrap();
        for id in 1..4 {
            assert_eq!(s.dispatch(pkt(id, 5)), Ok(Placed::Joined));
        }
        assert_eq!(s.next(1), None);
        assert_eq!(s.next(2), None);
        s.done(0, first);
        assert_eq!(s.next(0).map(|d| d.id), Some(1));
    }

    #[test]
    fn a_drained_bundle_reopens_on_the_rq_and_may_move() {
        let s = lfb(2, 16, 64);
        s.dispatch(pkt(0, 3)).unwrap();
        let d = s.next(0).unwrap();
        s.done(0, d);
        assert_eq!(
            s.dispatch(pkt(1, 3)),
            Ok(Placed::Any),
            "FBQ empty again: back on the RQ"
        );
        let d = s.next(1).unwrap();
        s.done(1, d);
        assert_eq!(s.stats().migrations, 1);
    }

    #[test]
    fn fids_colliding_in_the_table_share_a_bundle_and_are_counted() {
        // Table of 4: fids 1 and 5 both map to FBQ 1.
        let s = lfb(2, 4, 64);
        s.dispatch(pkt(0, 1)).unwrap();
        assert_eq!(s.dispatch(pkt(1, 5)), Ok(Placed::Joined));
        assert_eq!(s.stats().collisions, 1);
        let d = s.next(0).unwrap();
        assert_eq!(s.next(1), None);
        s.done(0, d);
        assert_eq!(s.next(0).map(|d| d.id), Some(1));
    }

    #[test]
    fn capacity_bounds_the_system_and_frees_on_done() {
        let s = lfb(1, 16, 3);
        for id in 0..3 {
            s.dispatch(pkt(id, id as u16)).unwrap();
        }
        assert_eq!(s.dispatch(pkt(3, 9)), Err(pkt(3, 9)));
        assert_eq!(s.stats().full, 1);
        assert_eq!(s.in_system(), 3);
        let d = s.next(0).unwrap();
        s.done(0, d);
        assert!(s.dispatch(pkt(3, 9)).is_ok());
    }

    #[test]
    fn done_without_next_releases_nothing() {
        let s = lfb(1, 16, 4);
        s.dispatch(pkt(0, 1)).unwrap();
        s.done(0, pkt(0, 1));
        assert_eq!(s.in_system(), 1);
        assert_eq!(s.next(0).map(|d| d.id), Some(0));
    }
}
