//! # LFB with bundle affinity (`lfb-affinity`), the future work of ANCS'10 §5
//!
//! "We plan to modify the LFB scheduling algorithm so that thread cache affinity information is maintained even when
//! all packets on a FBQ have exited the system. One way to do this is to record the thread ... associated with the
//! last packet processed on a FBQ. Then, when a new packet on a FBQ arrives, the packet scheduler can use that
//! information to decide which thread should process it (the last or least loaded thread)."
//!
//! This is [`lfb`](crate::lfb) (same FBQ table, same dispatch and release rules) plus one affinity queue per worker.
//! When a packet reopens an empty FBQ, the dispatcher looks up the worker that last opened it; if that worker's load
//! (bundle heads waiting in its affinity queue, plus one if it holds a bundle) is at most the least loaded worker's
//! plus [`SchedOptions::affinity_slack`], the packet goes to that worker's affinity queue; otherwise, or the first time,
//! to the shared RQ as in LFB. A worker looks for work in this order: the head of its own bundle, its affinity queue,
//! the RQ, and finally the longest affinity queue of a worker busy with another bundle (stealing), so a last worker that became busy after the
//! decision never strands a bundle while another worker idles.
//!
//! Invariants: those of LFB (exclusivity, per-flow order, bounded capacity), because every opening packet sits in
//! exactly one receive or affinity queue and whoever takes it is associated with its FBQ exactly as in LFB; plus
//! **affinity**: a bundle that returns while its last worker is within the slack of the least loaded goes to it.
//!
//! Cost over LFB: on the dispatches that open a bundle, one scan of the workers' loads.

use crate::lfb::{FbqTable, warn_if_small};
use crate::sync::ArrayQueue;
use crate::util::{Counter, per_worker};
use crate::{Desc, DescHashes, Placed, SchedOptions, SchedStats, Scheduler, WorkerId};
use crossbeam::utils::CachePadded;

/// The LFB-affinity policy. See the module documentation.
pub struct LfbAffinity {
    table: FbqTable,
    rq: ArrayQueue<u32>,
    /// Per-worker queues of opening packets given to their last worker.
    affinity: Box<[CachePadded<ArrayQueue<u32>>]>,
    steals: Box<[CachePadded<Counter>]>,
    hits: Counter,
    slack: usize,
    workers: usize,
}

impl LfbAffinity {
    pub fn new(workers: usize, opts: &SchedOptions) -> Self {
        let workers = workers.max(1);
        warn_if_small("lfb-affinity", workers, opts.fbq_table);
        let table = FbqTable::new(workers, opts);
        let cap = table.rq_capacity();
        LfbAffinity {
            rq: ArrayQueue::new(cap),
            affinity: per_worker(workers, || ArrayQueue::new(cap)),
            steals: per_worker(workers, Counter::default),
            hits: Counter::default(),
            slack: opts.affinity_slack,
            table,
            workers,
        }
    }

    /// Load of a worker as the dispatcher sees it: opening packets waiting for it, plus the bundle it holds.
    fn load(&self, w: WorkerId) -> usize {
        self.affinity[w].len() + self.table.busy(w)
    }

    /// The last worker of FBQ `q`, if it should get the returning bundle: within the slack of the least loaded.
    fn affine_worker(&self, q: usize) -> Option<WorkerId> {
        let last = self.table.last_worker(q).filter(|&w| w < self.workers)?;
        let least = (0..self.workers).map(|w| self.load(w)).min().unwrap_or(0);
        (self.load(last) <= least + self.slack).then_some(last)
    }

    /// Take a bundle head from the longest affinity queue of another worker that is busy with a bundle (an idle one
    /// is about to take its own heads: stealing from it would only undo the affinity).
    fn steal(&self, w: WorkerId) -> Option<u32> {
        let victim = (0..self.workers)
            .filter(|&v| v != w && self.table.busy(v) == 1)
            .max_by_key(|&v| self.affinity[v].len())?;
        let s = self.affinity[victim].pop()?;
        self.steals[w].inc();
        Some(s)
    }
}

impl Scheduler for LfbAffinity {
    fn name(&self) -> &'static str {
        "lfb-affinity"
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc> {
        let Some((q, s)) = self.table.enqueue(desc)? else {
            return Ok(Placed::Joined);
        };
        // Neither push can fail: one opening packet per FBQ at most, and each queue holds the whole table.
        if let Some(w) = self.affine_worker(q) {
            self.hits.inc();
            let _ = self.affinity[w].push(s);
            // An idle last worker is woken for it. A busy one will see it after its bundle; meanwhile any sleeping
            // worker is woken too, since it may steal the head rather than idle beside it.
            Ok(if self.table.busy(w) == 0 {
                Placed::Worker(w)
            } else {
                Placed::Any
            })
        } else {
            let _ = self.rq.push(s);
            Ok(Placed::Any)
        }
    }

    fn next(&self, w: WorkerId) -> Option<Desc> {
        if w >= self.workers {
            return None;
        }
        if let Some(d) = self.table.resume(w) {
            return Some(d);
        }
        let s = self.affinity[w]
            .pop()
            .or_else(|| self.rq.pop())
            .or_else(|| self.steal(w))?;
        Some(self.table.start(w, s))
    }

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
        SchedStats {
            affinity_hits: self.hits.get(),
            steals: crate::util::sum(&self.steals, Counter::get),
            ..self.table.stats()
        }
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

    fn policy(workers: usize, slack: usize) -> LfbAffinity {
        LfbAffinity::new(
            workers,
            &SchedOptions {
                fbq_table: 64,
                capacity: 64,
                affinity_slack: slack,
                ..SchedOptions::default()
            },
        )
    }

    /// Run one packet through worker `w` to completion.
    fn serve(s: &LfbAffinity, w: WorkerId) -> u32 {
        let d = s.next(w).unwrap();
        s.done(w, d);
        d.id
    }

    #[test]
    fn a_returning_bundle_goes_back_to_its_idle_last_worker() {
        let s = policy(2, 0);
        s.dispatch(pkt(0, 7)).unwrap();
        assert_eq!(serve(&s, 1), 0); // worker 1 opens FBQ 7
        assert_eq!(
            s.dispatch(pkt(1, 7)),
            Ok(Placed::Worker(1)),
            "FBQ 7 returns to worker 1"
        );
        assert_eq!(
            s.next(0),
            None,
            "worker 0 finds nothing: the head waits for idle worker 1"
        );
        assert_eq!(serve(&s, 1), 1);
        assert_eq!(s.stats().affinity_hits, 1);
        assert_eq!(s.stats().migrations, 0);
    }

    #[test]
    fn a_busy_last_worker_loses_the_bundle_to_the_rq() {
        let s = policy(2, 0);
        s.dispatch(pkt(0, 7)).unwrap();
        assert_eq!(serve(&s, 1), 0);
        s.dispatch(pkt(1, 9)).unwrap();
        let held = s.next(1).unwrap(); // worker 1 now busy with FBQ 9, worker 0 idle
        assert_eq!(
            s.dispatch(pkt(2, 7)),
            Ok(Placed::Any),
            "load 1 > least 0 + slack 0"
        );
        assert_eq!(serve(&s, 0), 2);
        assert_eq!(s.stats().migrations, 1);
        s.done(1, held);
    }

    #[test]
    fn the_first_opening_of_a_bundle_goes_to_the_rq() {
        let s = policy(2, 4);
        assert_eq!(s.dispatch(pkt(0, 3)), Ok(Placed::Any));
    }

    #[test]
    fn an_idle_worker_steals_a_stranded_head() {
        // Worker 1 was the last worker of FBQ 7 and, with a large slack, keeps getting it while it works on FBQ 9;
        // worker 0 is idle and takes the head from worker 1's affinity queue.
        let s = policy(2, 8);
        s.dispatch(pkt(0, 7)).unwrap();
        assert_eq!(serve(&s, 1), 0);
        s.dispatch(pkt(1, 9)).unwrap();
        let held = s.next(1).unwrap();
        assert_eq!(
            s.dispatch(pkt(2, 7)),
            Ok(Placed::Any),
            "given to busy worker 1: anyone may be woken to steal"
        );
        assert_eq!(s.stats().affinity_hits, 1);
        assert_eq!(serve(&s, 0), 2);
        assert_eq!(s.stats().steals, 1);
        s.done(1, held);
        assert_eq!(s.in_system(), 0);
    }

    #[test]
    fn joins_and_order_are_those_of_lfb() {
        let s = policy(2, 1);
        for id in 0..4 {
            s.dispatch(pkt(id, 5)).unwrap();
        }
        let order: Vec<u32> = (0..4).map(|_| serve(&s, 0)).collect();
        assert_eq!(order, [0, 1, 2, 3]);
        assert_eq!(s.stats().bundle_joins, 3);
    }
}
