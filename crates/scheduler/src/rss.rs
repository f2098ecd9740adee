//! # Adaptive indirect hashing like RSS (`rss`), ANCS'10 §2.1.3–2.1.4
//!
//! "Indirect hash uses the result of the hash function modulo the size of the indirection table as an index into it.
//! Each bin in the indirection table is associated with a resource ... When a load imbalance is detected, the host
//! protocol stack tries to balance the traffic by calculating a new indirection table." Receive-side scaling hashes
//! the 5-tuple with Toeplitz ([`Desc::rss`], symmetric key, so both directions meet) and indexes a 128-entry table.
//!
//! The table starts round-robin (bucket `k` → worker `k mod N`, as NIC drivers fill it). Every
//! [`SchedOptions::rss_interval`] dispatches the policy rebalances: the load of a worker is the number of packets its
//! buckets received during the interval; while the most and least loaded workers differ, it moves from the most loaded
//! to the least loaded worker the bucket whose interval count is closest to half the gap (the move that best evens
//! the pair, and always strictly reduces the larger load), at most [`SchedOptions::rss_max_moves`] buckets a round.
//! Then the interval counts restart from zero. Time is counted in dispatches so decisions do not depend on machine
//! speed (see the crate documentation).
//!
//! Invariants:
//! * **Never move a bucket with packets in flight:** a bucket is moved only when none of its packets is queued or
//!   being processed, so its next packet cannot overtake an earlier one (**per-flow order**) nor run beside it
//!   (**exclusivity**: the bundle, low 16 bits of the Toeplitz hash, determines the bucket, its low 7 bits).
//! * **Bounded:** each run queue holds `capacity / N`; a full one hands the packet back.

use crate::sync::{AtomicU16, AtomicU64, Ordering::*};
use crate::util::{Counter, DispatcherOnly, Occupancy, RunQueues, per_worker};
use crate::{Desc, DescHashes, Placed, SchedOptions, SchedStats, Scheduler, WorkerId};
use crossbeam::utils::CachePadded;

/// Indirection table size (as in Microsoft's RSS specification and most NICs).
pub const TABLE: usize = 128;

/// The adaptive RSS policy. See the module documentation.
pub struct AdaptiveRss {
    queues: RunQueues,
    /// Bucket → worker. Dispatcher only.
    table: [AtomicU16; TABLE],
    /// Packets of each bucket placed on a run queue. Dispatcher only, written for every packet: on lines of its own.
    placed: DispatcherOnly<[Counter; TABLE]>,
    /// Packets of each bucket each worker has finished, one array per worker (its only writer; the dispatcher reads
    /// them at a rebalance). A bucket's packets in the system are its placed count less the sum of these. Not one
    /// counter a bucket that the dispatcher raises and the worker lowers: that line would move between the two cores
    /// twice a packet.
    finished: Box<[CachePadded<[AtomicU64; TABLE]>]>,
    /// Packets each bucket received in the current interval. Dispatcher only.
    counts: DispatcherOnly<[Counter; TABLE]>,
    interval: u64,
    max_moves: usize,
    occupancy: Occupancy,
    rebalances: Counter,
    moved: Counter,
    full: Counter,
    workers: usize,
}

#[inline]
fn bucket(desc: &Desc) -> usize {
    desc.rss as usize % TABLE
}

impl AdaptiveRss {
    pub fn new(workers: usize, opts: &SchedOptions) -> Self {
        let workers = workers.max(1);
        AdaptiveRss {
            queues: RunQueues::new(workers, opts.capacity),
            table: std::array::from_fn(|k| AtomicU16::new((k % workers) as u16)),
            placed: DispatcherOnly::new(std::array::from_fn(|_| Counter::default())),
            finished: per_worker(workers, || std::array::from_fn(|_| AtomicU64::new(0))),
            counts: DispatcherOnly::new(std::array::from_fn(|_| Counter::default())),
            interval: opts.rss_interval.max(1),
            max_moves: opts.rss_max_moves,
            occupancy: Occupancy::new(workers),
            rebalances: Counter::default(),
            moved: Counter::default(),
            full: Counter::default(),
            workers,
        }
    }

    /// The worker bucket `k` points to now.
    pub fn worker_of_bucket(&self, k: usize) -> WorkerId {
        self.table
            .get(k)
            .map_or(0, |c| usize::from(c.load(Relaxed)))
    }

    /// Packets of bucket `k` in the system (queued or being processed). Exact on the dispatcher's thread: it placed
    /// every packet it counts, and a worker's count only grows, so a bucket seen empty stays empty until the
    /// dispatcher places another packet in it.
    fn inflight(&self, k: usize) -> u64 {
        let done: u64 = self.finished.iter().map(|f| f[k].load(Acquire)).sum();
        self.placed[k].get().wrapping_sub(done)
    }

    /// One rebalancing round (see the module documentation); returns the buckets moved.
    fn rebalance(&self) -> usize {
        let mut load = vec![0u64; self.workers];
        for k in 0..TABLE {
            load[self.worker_of_bucket(k)] += self.counts[k].get();
        }
        let mut moved = 0;
        while moved < self.max_moves {
            let Some((hi, lo)) = extremes(&load) else {
                break;
            };
            let gap = load[hi] - load[lo];
            let Some(k) = self.bucket_to_move(hi, gap) else {
                break;
            };
            let c = self.counts[k].get();
            self.table[k].store(lo as u16, Relaxed);
            load[hi] -= c;
            load[lo] += c;
            moved += 1;
        }
        for c in self.counts.iter() {
            c.reset();
        }
        if moved > 0 {
            self.rebalances.inc();
            self.moved.add(moved as u64);
        }
        moved
    }

    /// The bucket of worker `hi` with nothing in flight whose count `c` (0 < c < gap) is closest to `gap / 2`.
    fn bucket_to_move(&self, hi: WorkerId, gap: u64) -> Option<usize> {
        (0..TABLE)
            .filter(|&k| self.worker_of_bucket(k) == hi)
            .map(|k| (k, self.counts[k].get()))
            .filter(|&(_, c)| c > 0 && c < gap)
            // Last: it reads every worker's line of finished counts.
            .filter(|&(k, _)| self.inflight(k) == 0)
            .min_by_key(|&(k, c)| (c.abs_diff(gap / 2), k))
            .map(|(k, _)| k)
    }
}

/// Most and least loaded workers (lowest id on ties), when they differ in load.
fn extremes(load: &[u64]) -> Option<(WorkerId, WorkerId)> {
    let hi = (0..load.len()).rev().max_by_key(|&w| load[w])?;
    let lo = (0..load.len()).min_by_key(|&w| load[w])?;
    (load[hi] > load[lo]).then_some((hi, lo))
}

impl Scheduler for AdaptiveRss {
    fn name(&self) -> &'static str {
        "rss"
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc> {
        let k = bucket(&desc);
        let w = self.worker_of_bucket(k);
        if let Err(d) = self.queues.push(w, desc) {
            self.full.inc();
            return Err(d);
        }
        self.placed[k].inc();
        self.counts[k].inc();
        self.occupancy.dispatched();
        if self
            .occupancy
            .total_dispatched()
            .is_multiple_of(self.interval)
        {
            self.rebalance();
        }
        Ok(Placed::Worker(w))
    }

    fn next(&self, w: WorkerId) -> Option<Desc> {
        self.queues.pop(w)
    }

    fn done(&self, w: WorkerId, desc: Desc) {
        if w >= self.workers {
            return;
        }
        // One writer (this worker): a load and a release store. The release orders this packet's processing before
        // the dispatcher's acquire load that sees the bucket empty and moves it.
        let c = &self.finished[w][bucket(&desc)];
        c.store(c.load(Relaxed) + 1, Release);
        self.occupancy.completed(w);
    }

    fn bundle(&self, desc: &Desc) -> u16 {
        desc.rss as u16
    }

    fn hashes_read(&self) -> DescHashes {
        DescHashes::RSS
    }

    fn in_system(&self) -> usize {
        self.occupancy.in_system()
    }

    fn stats(&self) -> SchedStats {
        SchedStats {
            dispatched: self.occupancy.total_dispatched(),
            rebalances: self.rebalances.get(),
            buckets_moved: self.moved.get(),
            migrations: self.moved.get(),
            full: self.full.get(),
            ..SchedStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u32, rss: u32) -> Desc {
        Desc {
            id,
            rss,
            ..Desc::default()
        }
    }

    fn rss(workers: usize, interval: u64) -> AdaptiveRss {
        AdaptiveRss::new(
            workers,
            &SchedOptions {
                capacity: 256,
                rss_interval: interval,
                ..SchedOptions::default()
            },
        )
    }

    fn drain(s: &AdaptiveRss, w: WorkerId) -> Vec<u32> {
        std::iter::from_fn(|| {
            let d = s.next(w)?;
            s.done(w, d);
            Some(d.id)
        })
        .collect()
    }

    #[test]
    fn buckets_start_round_robin_and_index_by_the_low_seven_bits() {
        let s = rss(3, 1000);
        assert_eq!(s.dispatch(pkt(0, 0)), Ok(Placed::Worker(0)));
        assert_eq!(s.dispatch(pkt(1, 4)), Ok(Placed::Worker(1))); // bucket 4 → 4 mod 3
        assert_eq!(s.dispatch(pkt(2, 128 + 5)), Ok(Placed::Worker(2))); // bucket 5
    }

    #[test]
    fn rebalancing_moves_an_idle_bucket_from_the_busiest_to_the_idlest_worker() {
        // Two workers; buckets 0 and 2 (worker 0) get 3 packets each, bucket 1 (worker 1) none. At the 6th dispatch
        // the gap is 6: moving a bucket of 3 evens it. Both are idle once drained; the lower-numbered one moves.
        let s = rss(2, 6);
        for id in 0..5 {
            s.dispatch(pkt(id, [0, 2][id as usize % 2])).unwrap();
        }
        assert_eq!(drain(&s, 0), [0, 1, 2, 3, 4]);
        s.dispatch(pkt(5, 2)).unwrap(); // 6th dispatch: bucket 2 has a packet in flight, bucket 0 is idle
        assert_eq!(s.worker_of_bucket(0), 1, "idle bucket 0 moved");
        assert_eq!(
            s.worker_of_bucket(2),
            0,
            "bucket 2 has a packet in flight: it stays"
        );
        assert_eq!((s.stats().rebalances, s.stats().buckets_moved), (1, 1));
        assert_eq!(s.dispatch(pkt(6, 0)), Ok(Placed::Worker(1)));
    }

    #[test]
    fn a_bucket_with_packets_in_flight_is_never_moved() {
        let s = rss(2, 4);
        for id in 0..4 {
            s.dispatch(pkt(id, 0)).unwrap(); // all in bucket 0, none processed
        }
        assert_eq!(s.worker_of_bucket(0), 0);
        assert_eq!(s.stats().buckets_moved, 0);
        assert_eq!(drain(&s, 0), [0, 1, 2, 3], "order kept on the one worker");
    }

    #[test]
    fn a_move_never_makes_the_imbalance_worse() {
        // One bucket carries all the load: moving it would just swap the roles, so it stays.
        let s = rss(2, 4);
        for id in 0..4 {
            s.dispatch(pkt(id, 0)).unwrap();
            drain(&s, 0);
        }
        assert_eq!(s.worker_of_bucket(0), 0);
        assert_eq!(s.stats().rebalances, 0);
    }

    #[test]
    fn a_full_run_queue_hands_the_packet_back() {
        let s = AdaptiveRss::new(
            2,
            &SchedOptions {
                capacity: 2,
                ..SchedOptions::default()
            },
        );
        s.dispatch(pkt(0, 0)).unwrap();
        assert_eq!(s.dispatch(pkt(1, 2)), Err(pkt(1, 2)));
        assert_eq!(s.inflight(2), 0);
    }
}
