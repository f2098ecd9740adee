//! # Last Flow Bundle with a latency bound (`lfb-bounded`)
//!
//! [`lfb`](crate::lfb) keeps a worker on its bundle "until the FBQ is empty": a heavy connection keeps its worker
//! for as long as its packets keep arriving, and every bundle that opened meanwhile waits on the receive queue for
//! another worker. That is LFB's cache benefit and the source of its latency tail (ANCS'10 §4.4: packet delay
//! variation). This policy bounds the stint: after a worker has finished [`SchedOptions::lfb_bound`] packets of one
//! bundle in a row, and other bundles wait on the receive queue, it gives the bundle up: the bundle's next head goes
//! to the back of the receive queue, behind the older work, and the worker takes the receive queue's oldest entry.
//!
//! * **Per-flow order and exclusivity** are LFB's: the bundle stays in the system (its FBQ count never reaches zero
//!   while it waits), the receive queue holds its one entry, and whoever takes that entry takes the bundle's head,
//!   with the rest linked behind it in arrival order.
//! * **No clock.** The bound is in packets, not µs: a policy never reads a clock (crate documentation), so its
//!   decisions are the same in the runtime, the simulator and either harness mode. At a known cost per packet K
//!   packets are K × that cost of time; `BENCHMARKS.md` ("Execution models") gives the bound measured against `lfb`
//!   and `dh` in the simulator.
//! * **"Older work"**: the receive queue's entry taken last arrived before the bundle's next packet (the queue is
//!   FIFO and filled in arrival order, so the entries behind it are the next oldest; crossbeam's queue has no peek,
//!   and this bound needs no second structure). That is a lower bound on the waiting entries' age, so the policy
//!   may yield to an entry newer than its next packet when the receive queue has been taken from little (light
//!   load); under load, where the bound matters, it is taken from constantly. And the queue holds more bundles than there are idle workers to
//!   take them. A bundle whose next packet is older than what waits keeps its worker: that is the backlog of a
//!   connection that is the bottleneck, and yielding it would only delay it (measured in the simulator: yielding
//!   whenever the receive queue was non-empty cost a third of LFB's throughput on `balanced` at 14 cores, where the
//!   largest connection is the bottleneck). Under light load, or with one worker, the policy is `lfb`.
//! * **Cost.** One relaxed counter per worker; when the bound is reached, one `len` of the receive queue and a scan
//!   of the other workers' bundle cells (stopping once it has counted as many idle workers as queued bundles); and a
//!   push of the yielded head (the receive queue holds at most one entry per FBQ, so it cannot be full).
//!
//! A yielding worker goes straight back to `next`, so a yielded bundle is never stranded: at worst it waits until
//! that worker (or any other) returns to the receive queue.

use crate::lfb::LastFlowBundle;
use crate::sync::{AtomicU32, Ordering::Relaxed};
use crate::{Desc, DescHashes, Placed, SchedOptions, SchedStats, Scheduler, WorkerId};

/// LFB whose workers give up a bundle after a bounded run when other bundles wait. See the module documentation.
pub struct LfbBounded {
    /// `lfb`'s table and receive queue, whose `dispatch` and `next` this policy keeps.
    lfb: LastFlowBundle,
    bound: u32,
    /// Packet number of the receive queue's entry taken last: the queue is FIFO and the dispatcher pushes in arrival
    /// order, so what waits there arrived after it.
    last_taken: AtomicU32,
}

impl LfbBounded {
    pub fn new(workers: usize, opts: &SchedOptions) -> Self {
        LfbBounded {
            lfb: LastFlowBundle::named("lfb-bounded", workers, opts),
            bound: opts.lfb_bound.clamp(1, u32::MAX as usize) as u32,
            last_taken: AtomicU32::new(0),
        }
    }

    /// Whether older work waits: the receive queue's last taken entry arrived before `next` (the bundle's next
    /// packet), so the entries behind it may have too, and the queue holds more entries than workers (besides `w`)
    /// without a bundle. A snapshot: the idle count reads the other workers' relaxed bundle cells.
    fn work_waits(&self, w: WorkerId, next: &Desc) -> bool {
        if self.last_taken.load(Relaxed) >= next.id {
            return false;
        }
        let queued = self.lfb.rq.len();
        if queued == 0 {
            return false;
        }
        let idle = (0..self.lfb.workers())
            .filter(|&v| v != w && self.lfb.table.busy(v) == 0)
            .take(queued)
            .count();
        queued > idle
    }
}

impl Scheduler for LfbBounded {
    fn name(&self) -> &'static str {
        "lfb-bounded"
    }

    fn workers(&self) -> usize {
        self.lfb.workers()
    }

    #[inline]
    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc> {
        self.lfb.dispatch(desc)
    }

    #[inline]
    fn next(&self, w: WorkerId) -> Option<Desc> {
        self.lfb
            .next_noting(w, |d| self.last_taken.store(d.id, Relaxed))
    }

    #[inline]
    fn done(&self, w: WorkerId, _desc: Desc) {
        if let Some(head) = self
            .lfb
            .table
            .finish_bounded(w, self.bound, |next| self.work_waits(w, next))
        {
            // Cannot fail: the bundle has no other RQ entry (it was held until now).
            let _ = self.lfb.rq.push(head);
        }
    }

    fn queues_opening_twice(&self) -> bool {
        true
    }

    fn bundle(&self, desc: &Desc) -> u16 {
        self.lfb.bundle(desc)
    }

    fn hashes_read(&self) -> DescHashes {
        self.lfb.hashes_read()
    }

    fn in_system(&self) -> usize {
        self.lfb.in_system()
    }

    fn stats(&self) -> SchedStats {
        self.lfb.stats()
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

    fn bounded(workers: usize, bound: usize) -> LfbBounded {
        LfbBounded::new(
            workers,
            &SchedOptions {
                fbq_table: 16,
                capacity: 64,
                lfb_bound: bound,
                ..SchedOptions::default()
            },
        )
    }

    fn drain(s: &LfbBounded, w: WorkerId) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(d) = s.next(w) {
            out.push(d.id);
            s.done(w, d);
        }
        out
    }

    #[test]
    fn after_the_bound_older_waiting_work_goes_first() {
        // a0 a1 b2 a3 a4 a5: plain LFB finishes all of a before b2 (affinity before age); with a bound of 2 the
        // worker gives a up after a0 a1, since b2 arrived before a's next packet a3, takes b2, then returns to a.
        let s = bounded(1, 2);
        for (id, fid) in [(0, 1), (1, 1), (2, 2), (3, 1), (4, 1), (5, 1)] {
            s.dispatch(pkt(id, fid)).unwrap();
        }
        assert_eq!(drain(&s, 0), [0, 1, 2, 3, 4, 5]);
        assert_eq!(s.stats().yields, 1);
        assert_eq!(s.in_system(), 0);
    }

    #[test]
    fn a_backlogged_bundle_older_than_what_waits_keeps_its_worker() {
        // a0..a5 arrived before c6 and b7; worker 1 took c6 from the receive queue, so everything waiting there is
        // newer than a's next packet: a is the backlog (the bottleneck connection), and yielding it would only
        // delay it.
        let s = bounded(2, 2);
        for id in 0..6 {
            s.dispatch(pkt(id, 1)).unwrap();
        }
        s.dispatch(pkt(6, 3)).unwrap();
        s.dispatch(pkt(7, 2)).unwrap();
        let a0 = s.next(0).unwrap();
        let c6 = s.next(1).unwrap();
        assert_eq!((a0.id, c6.id), (0, 6));
        s.done(0, a0);
        assert_eq!(drain(&s, 0), [1, 2, 3, 4, 5, 7]);
        assert_eq!(s.stats().yields, 0);
    }

    #[test]
    fn with_nothing_waiting_the_worker_keeps_its_bundle() {
        let s = bounded(1, 2);
        for id in 0..6 {
            s.dispatch(pkt(id, 1)).unwrap();
        }
        assert_eq!(drain(&s, 0), [0, 1, 2, 3, 4, 5]);
        assert_eq!(s.stats().yields, 0);
    }

    #[test]
    fn a_yielded_bundle_moves_whole_and_in_order_to_the_next_worker() {
        let s = bounded(2, 1);
        for (id, fid) in [(0, 1), (1, 2), (2, 3), (3, 1), (4, 1)] {
            s.dispatch(pkt(id, fid)).unwrap();
        }
        let a0 = s.next(0).unwrap();
        let b1 = s.next(1).unwrap();
        assert_eq!((a0.id, b1.id), (0, 1));
        // Worker 0 finishes a0 while c2, older than a3, waits and worker 1 is busy: a goes behind c2.
        s.done(0, a0);
        assert_eq!(s.stats().yields, 1);
        assert_eq!(s.next(0).map(|d| d.id), Some(2));
        // Worker 1 finishes b1 and takes a3, the head of the yielded bundle, then a4: nothing older waits.
        s.done(1, b1);
        let a3 = s.next(1).unwrap();
        assert_eq!(a3.id, 3);
        s.done(1, a3);
        assert_eq!(s.next(1).map(|d| d.id), Some(4));
        assert_eq!(s.stats().yields, 1);
    }
}
