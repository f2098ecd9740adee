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
//! * **"Older work"** is read as "the receive queue is not empty": every entry there is a bundle head that arrived
//!   while this worker was busy and has waited since, which is the work a latency bound is for. With an empty receive
//!   queue nothing waits, and the worker keeps its bundle as `lfb` does (so with one worker, or under light load, the
//!   policy is `lfb`).
//! * **Cost.** One relaxed counter per worker, one `len` of the receive queue when the bound is reached, and a push
//!   of the yielded head (the receive queue holds at most one entry per FBQ, so it cannot be full).
//!
//! A yielding worker goes straight back to `next`, so a yielded bundle is never stranded: at worst it waits until
//! that worker (or any other) returns to the receive queue.

use crate::lfb::{FbqTable, warn_if_small};
use crate::sync::ArrayQueue;
use crate::{Desc, Placed, SchedOptions, SchedStats, Scheduler, WorkerId};

/// LFB whose workers give up a bundle after a bounded run when other bundles wait. See the module documentation.
pub struct LfbBounded {
    table: FbqTable,
    rq: ArrayQueue<u32>,
    workers: usize,
    bound: u32,
}

impl LfbBounded {
    pub fn new(workers: usize, opts: &SchedOptions) -> Self {
        let workers = workers.max(1);
        warn_if_small("lfb-bounded", workers, opts.fbq_table);
        let table = FbqTable::new(workers, opts);
        let rq = ArrayQueue::new(table.rq_capacity());
        LfbBounded {
            table,
            rq,
            workers,
            bound: opts.lfb_bound.clamp(1, u32::MAX as usize) as u32,
        }
    }
}

impl Scheduler for LfbBounded {
    fn name(&self) -> &'static str {
        "lfb-bounded"
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
        if w >= self.workers {
            return None;
        }
        if let Some(d) = self.table.resume(w) {
            return Some(d);
        }
        let s = self.rq.pop()?;
        Some(self.table.start(w, s))
    }

    #[inline]
    fn done(&self, w: WorkerId, _desc: Desc) {
        if let Some(head) = self
            .table
            .finish_bounded(w, self.bound, || !self.rq.is_empty())
        {
            // Cannot fail: the bundle has no other RQ entry (it was held until now).
            let _ = self.rq.push(head);
        }
    }

    fn bundle(&self, desc: &Desc) -> u16 {
        desc.fid
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
    fn after_the_bound_a_waiting_bundle_goes_first() {
        // a0..a5 of one bundle, then b6: plain LFB would finish all of a before b; with a bound of 2 the worker
        // yields a after a0 a1 (b waits on the RQ), takes b6, then returns to a.
        let s = bounded(1, 2);
        for id in 0..6 {
            s.dispatch(pkt(id, 1)).unwrap();
        }
        s.dispatch(pkt(6, 2)).unwrap();
        assert_eq!(drain(&s, 0), [0, 1, 6, 2, 3, 4, 5]);
        assert_eq!(s.stats().yields, 1);
        assert_eq!(s.in_system(), 0);
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
        for (id, fid) in [(0, 1), (1, 1), (2, 1), (3, 2), (4, 3)] {
            s.dispatch(pkt(id, fid)).unwrap();
        }
        let a0 = s.next(0).unwrap();
        let b3 = s.next(1).unwrap();
        assert_eq!((a0.id, b3.id), (0, 3));
        // Worker 0 finishes a0 with c4 waiting: a's next head goes behind c4.
        s.done(0, a0);
        assert_eq!(s.next(0).map(|d| d.id), Some(4));
        // Worker 1 finishes b3 and takes a1, the head of the yielded bundle; nobody else may hold a meanwhile.
        s.done(1, b3);
        let a1 = s.next(1).unwrap();
        assert_eq!(a1.id, 1);
        s.done(1, a1);
        assert_eq!(s.next(1).map(|d| d.id), Some(2));
    }
}
