//! Small pieces every policy shares: relaxed counters, per-worker cache-padded cells, and bounded per-worker run
//! queues.
//!
//! Counters written by the dispatcher live in plain relaxed atomics (one writer, no contention); counters written by
//! workers live in per-worker padded cells so two workers never bounce one cache line, and are summed when
//! `stats()` is read.

use crate::sync::ArrayQueue;
use crate::{Desc, WorkerId};
use crossbeam::utils::CachePadded;
// Counters order nothing, so they stay on `std` under the model checker too (see `sync.rs`).
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Marker for "no slot / no worker" in 32-bit index cells.
pub(crate) const NIL: u32 = u32::MAX;

/// A monotone event counter with a single writer. Relaxed: counters order nothing, they are read at the end of a run.
#[derive(Default, Debug)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub(crate) fn inc(&self) {
        self.add(1);
    }
    /// Every counter has one writer (the dispatcher, or one worker), so a load and a store suffice: no locked
    /// read-modify-write on the dispatch path (about 7 ns saved per counter). A caller breaking the one-dispatcher
    /// rule could lose counts, never memory safety.
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
    pub(crate) fn reset(&self) {
        self.0.store(0, Relaxed);
    }
}

/// What the dispatcher writes for every packet (a cursor, event counters), on cache lines of its own.
///
/// A policy's fields are read by its workers for every packet too (the pointers to its tables, its sizes), and a line
/// the dispatcher writes once a packet, read by a worker on the other core once a packet, moves between the two
/// cores' caches twice a packet: the worker misses on it, then the dispatcher does. Placed inline among those fields
/// (as `Occupancy`'s dispatch count, the slot cursor and the join counters were, a few bytes from the pointers that
/// `done` and `next` read), such a counter would make every hand-over pay for a line it does not need; padded, the
/// lines the workers read stay shared in both caches. (Measured on the loaded 2-core machine: no change in CPU
/// time outside the noise, see `BENCHMARKS.md`; it removes a cost the layout left to chance.)
#[derive(Default, Debug)]
pub(crate) struct DispatcherOnly<T>(CachePadded<T>);

impl<T> DispatcherOnly<T> {
    pub(crate) fn new(t: T) -> Self {
        DispatcherOnly(CachePadded::new(t))
    }
}

impl<T> std::ops::Deref for DispatcherOnly<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// One value per worker, each on its own cache line.
pub(crate) fn per_worker<T, F: Fn() -> T>(workers: usize, f: F) -> Box<[CachePadded<T>]> {
    (0..workers).map(|_| CachePadded::new(f())).collect()
}

/// Sum of one per-worker counter.
pub(crate) fn sum<T, F: Fn(&T) -> u64>(cells: &[CachePadded<T>], f: F) -> u64 {
    cells.iter().map(|c| f(c)).sum()
}

/// Bounded FIFO run queues, one per worker, fed by the dispatcher (the paper's per-thread queues of `dh`; also the
/// run queues of `l7aff`, `flow` and `rss`). Lock-free (crossbeam's `ArrayQueue`, a Vyukov bounded queue): a push or
/// pop is one CAS on an uncontended line, about 10 ns.
pub(crate) struct RunQueues {
    queues: Box<[CachePadded<ArrayQueue<Desc>>]>,
}

impl RunQueues {
    /// `capacity` packets in all, shared equally; a worker's share includes the packet it is processing, so its queue
    /// holds one less (but at least one: the bound is `max(capacity, 2 × workers)`).
    pub(crate) fn new(workers: usize, capacity: usize) -> Self {
        let each = (capacity / workers).saturating_sub(1).max(1);
        RunQueues {
            queues: per_worker(workers, || ArrayQueue::new(each)),
        }
    }

    #[inline]
    pub(crate) fn push(&self, w: WorkerId, desc: Desc) -> Result<(), Desc> {
        match self.queues.get(w) {
            Some(q) => q.push(desc),
            None => Err(desc),
        }
    }

    #[inline]
    pub(crate) fn pop(&self, w: WorkerId) -> Option<Desc> {
        self.queues.get(w)?.pop()
    }

    #[inline]
    pub(crate) fn len(&self, w: WorkerId) -> usize {
        self.queues.get(w).map_or(0, |q| q.len())
    }

    /// The worker with the shortest run queue; ties go to the lowest id, so hand-made traces have one answer.
    pub(crate) fn shortest(&self) -> WorkerId {
        least_by(self.queues.len(), |w| self.len(w) as u64)
    }
}

/// The worker minimising `load`, lowest id on ties.
#[inline]
pub(crate) fn least_by<F: Fn(WorkerId) -> u64>(workers: usize, load: F) -> WorkerId {
    let mut best = 0;
    let mut best_load = u64::MAX;
    for w in 0..workers {
        let l = load(w);
        if l < best_load {
            best = w;
            best_load = l;
        }
    }
    best
}

/// The low 16 bits of the connection hash: the bundle (and binding granularity) of `ph`, `flow` and `l7aff`.
#[inline]
pub(crate) fn conn_bundle(desc: &Desc) -> u16 {
    desc.conn as u16
}

/// How many packets a policy holds: accepted by `dispatch` (counted by the dispatcher) minus released by `done`
/// (counted per worker). Two counters with one writer each, so neither side writes a line the other writes; and the
/// dispatcher's count sits on a line of its own, not beside the pointer to the workers' counts, which every `done`
/// reads (see [`DispatcherOnly`]).
pub(crate) struct Occupancy {
    dispatched: DispatcherOnly<Counter>,
    completed: Box<[CachePadded<Counter>]>,
}

impl Occupancy {
    pub(crate) fn new(workers: usize) -> Self {
        Occupancy {
            dispatched: DispatcherOnly::new(Counter::default()),
            completed: per_worker(workers, Counter::default),
        }
    }
    #[inline]
    pub(crate) fn dispatched(&self) {
        self.dispatched.inc();
    }
    #[inline]
    pub(crate) fn completed(&self, w: WorkerId) {
        if let Some(c) = self.completed.get(w) {
            c.inc();
        }
    }
    pub(crate) fn total_dispatched(&self) -> u64 {
        self.dispatched.get()
    }
    /// Exact when no call runs concurrently; a snapshot otherwise.
    pub(crate) fn in_system(&self) -> usize {
        let done = sum(&self.completed, Counter::get);
        self.dispatched.get().saturating_sub(done) as usize
    }
}
