//! # Direct Hash (`dh`), ANCS'10 §3.1
//!
//! "The FID is then hashed and the result modulo the number of threads determines the PAM thread that will process
//! the packet." The FID is the IP pair, smaller address first, so both directions of a connection meet; its CRC-16 is
//! computed at load time and arrives as [`Desc::fid`]. Each worker has its own bounded FIFO run queue.
//!
//! Invariants:
//! * **Static placement.** A packet with CRC `c` always goes to worker `c mod N`; the policy keeps no state but the
//!   queues.
//! * **Exclusivity.** The bundle is the CRC itself, and a bundle only ever reaches one worker.
//! * **Per-flow order.** One FIFO queue and one worker per FID.
//! * **Bounded queues.** Each worker holds `capacity / N` packets (its queue plus the one it processes); a packet for
//!   a full queue is handed back, even if other queues are empty (that is DH's load imbalance, which the paper
//!   measures).
//!
//! Cost: a modulo and one push into a lock-free ring.

use crate::util::{Counter, Occupancy, RunQueues};
use crate::{Desc, DescHashes, Placed, SchedOptions, SchedStats, Scheduler, WorkerId};

/// The Direct Hash policy. See the module documentation.
pub struct DirectHash {
    queues: RunQueues,
    workers: usize,
    occupancy: Occupancy,
    full: Counter,
}

impl DirectHash {
    pub fn new(workers: usize, opts: &SchedOptions) -> Self {
        let workers = workers.max(1);
        DirectHash {
            queues: RunQueues::new(workers, opts.capacity),
            workers,
            occupancy: Occupancy::new(workers),
            full: Counter::default(),
        }
    }

    /// The worker a packet belongs to: CRC-16 of the FID modulo N.
    #[inline]
    pub fn worker_of(&self, desc: &Desc) -> WorkerId {
        // 32-bit division: half the latency of a 64-bit one on older x86 cores.
        (u32::from(desc.fid) % self.workers as u32) as usize
    }
}

impl Scheduler for DirectHash {
    fn name(&self) -> &'static str {
        "dh"
    }

    fn workers(&self) -> usize {
        self.workers
    }

    #[inline]
    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc> {
        let w = self.worker_of(&desc);
        match self.queues.push(w, desc) {
            Ok(()) => {
                self.occupancy.dispatched();
                Ok(Placed::Worker(w))
            }
            Err(d) => {
                self.full.inc();
                Err(d)
            }
        }
    }

    #[inline]
    fn next(&self, w: WorkerId) -> Option<Desc> {
        self.queues.pop(w)
    }

    #[inline]
    fn done(&self, w: WorkerId, _desc: Desc) {
        self.occupancy.completed(w);
    }

    fn bundle(&self, desc: &Desc) -> u16 {
        desc.fid
    }

    fn hashes_read(&self) -> DescHashes {
        DescHashes::FID
    }

    fn in_system(&self) -> usize {
        self.occupancy.in_system()
    }

    fn stats(&self) -> SchedStats {
        SchedStats {
            dispatched: self.occupancy.total_dispatched(),
            full: self.full.get(),
            ..SchedStats::default()
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

    fn small(workers: usize, capacity: usize) -> DirectHash {
        DirectHash::new(
            workers,
            &SchedOptions {
                capacity,
                ..SchedOptions::default()
            },
        )
    }

    #[test]
    fn crc_modulo_n_picks_the_worker() {
        let s = small(3, 30);
        // fid 0 → 0, 4 → 1, 5 → 2, 9 → 0
        for (id, fid) in [(0, 0), (1, 4), (2, 5), (3, 9)] {
            s.dispatch(pkt(id, fid)).unwrap();
        }
        assert_eq!(s.next(0).map(|d| d.id), Some(0));
        assert_eq!(s.next(0).map(|d| d.id), Some(3));
        assert_eq!(s.next(1).map(|d| d.id), Some(1));
        assert_eq!(s.next(2).map(|d| d.id), Some(2));
        assert_eq!(s.next(1), None);
    }

    #[test]
    fn a_flow_is_fifo_on_one_worker() {
        let s = small(2, 16);
        for id in 0..5 {
            assert_eq!(s.dispatch(pkt(id, 7)), Ok(Placed::Worker(1)));
        }
        let order: Vec<u32> = std::iter::from_fn(|| s.next(1)).map(|d| d.id).collect();
        assert_eq!(order, [0, 1, 2, 3, 4]);
        assert_eq!(s.next(0), None);
    }

    #[test]
    fn a_full_queue_hands_the_packet_back_though_others_are_empty() {
        // capacity 6 over 2 workers: 3 each, the packet in hand plus 2 queued.
        let s = small(2, 6);
        s.dispatch(pkt(0, 2)).unwrap();
        s.dispatch(pkt(1, 2)).unwrap();
        assert_eq!(s.dispatch(pkt(2, 2)), Err(pkt(2, 2)));
        assert_eq!(s.dispatch(pkt(3, 1)), Ok(Placed::Worker(1)));
        assert_eq!(s.stats().full, 1);
        assert_eq!(s.in_system(), 3);
        let d = s.next(0).unwrap();
        s.done(0, d);
        assert!(s.dispatch(pkt(2, 2)).is_ok());
    }

    #[test]
    fn out_of_range_workers_get_nothing() {
        let s = small(2, 4);
        s.dispatch(pkt(0, 0)).unwrap();
        assert_eq!(s.next(5), None);
        s.done(5, pkt(0, 0));
        assert_eq!(s.in_system(), 1);
    }
}
