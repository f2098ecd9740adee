//! # Flow-based scheduling (`flow`), ANCS'10 §2.1.2
//!
//! "Flow based scheduling maintains a table of active flows where each flow is associated with a resource. Packets are
//! mapped to flows and scheduled on the resource associated with their flow. New flows are assigned to the least
//! loaded resource." The paper lists its drawbacks (table memory and lookup cost; flows of unequal weight make balance
//! hard); this module is the baseline that shows them.
//!
//! The table has one entry per connection bundle (low 16 bits of [`Desc::conn`], the binding granularity of
//! ARCHITECTURE.md): the bound worker, the full connection hash, packets in flight, and the dispatch count of the
//! flow's last packet. A flow is **active** while it has packets in the system or its last packet was dispatched at
//! most [`SchedOptions::flow_idle_dispatches`] dispatches ago; an inactive entry expires, and the next packet that maps
//! to it starts a new flow. Time is counted in dispatches so that the binding decisions are the same in the threaded
//! runtime, in the simulator and in raw or scaled mode. The table is fixed at 65,536 entries, so memory is bounded
//! whatever the number of flows; two active flows sharing a bundle share its worker (counted as collisions).
//!
//! "Least loaded" is the worker with the fewest bytes outstanding (queued or being processed), per [`Desc::len`].
//!
//! Invariants: **exclusivity** and **per-flow order** (a bundle is rebound only when none of its packets is in the
//! system, and each worker's queue is FIFO); **stickiness** (an active flow keeps its worker); **bounded** (each run
//! queue holds `capacity / N`; a full one hands the packet back).

use crate::util::{Counter, Occupancy, RunQueues, conn_bundle, least_by, per_worker};
use crate::{BUNDLES, Desc, Placed, SchedOptions, SchedStats, Scheduler, WorkerId};
use crossbeam::utils::CachePadded;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering::*};

const UNBOUND: u16 = u16::MAX;

/// One flow table entry. Dispatcher-written except `inflight`, which workers lower.
struct Entry {
    worker: AtomicU16,
    conn: AtomicU32,
    inflight: AtomicU32,
    last: AtomicU64,
}

/// The flow-based policy. See the module documentation.
pub struct FlowBased {
    queues: RunQueues,
    table: Box<[Entry]>,
    /// Bytes given to each worker (dispatcher) and bytes it finished (worker): load = difference.
    bytes_in: Box<[CachePadded<Counter>]>,
    bytes_out: Box<[CachePadded<Counter>]>,
    clock: Counter,
    idle: u64,
    occupancy: Occupancy,
    collisions: Counter,
    migrations: Counter,
    expirations: Counter,
    full: Counter,
    workers: usize,
}

/// Weight of a packet in the load figure; a zero length still counts.
#[inline]
fn weight(desc: &Desc) -> u64 {
    u64::from(desc.len.max(1))
}

impl FlowBased {
    pub fn new(workers: usize, opts: &SchedOptions) -> Self {
        let workers = workers.max(1);
        FlowBased {
            queues: RunQueues::new(workers, opts.capacity),
            table: (0..BUNDLES)
                .map(|_| Entry {
                    worker: AtomicU16::new(UNBOUND),
                    conn: AtomicU32::new(0),
                    inflight: AtomicU32::new(0),
                    last: AtomicU64::new(0),
                })
                .collect(),
            bytes_in: per_worker(workers, Counter::default),
            bytes_out: per_worker(workers, Counter::default),
            clock: Counter::default(),
            idle: opts.flow_idle_dispatches,
            occupancy: Occupancy::new(workers),
            collisions: Counter::default(),
            migrations: Counter::default(),
            expirations: Counter::default(),
            full: Counter::default(),
            workers,
        }
    }

    /// Bytes outstanding at worker `w`.
    fn load(&self, w: WorkerId) -> u64 {
        let out = self.bytes_out[w].get();
        self.bytes_in[w].get().saturating_sub(out)
    }

    /// The worker for `desc` at dispatch count `now`, and whether the entry gets a new binding.
    fn choose(&self, e: &Entry, desc: &Desc, now: u64) -> (WorkerId, bool) {
        let bound = e.worker.load(Relaxed);
        let same_flow = bound != UNBOUND && e.conn.load(Relaxed) == desc.conn;
        if e.inflight.load(Acquire) > 0 {
            if !same_flow {
                self.collisions.inc();
            }
            return (usize::from(bound), false);
        }
        let active = same_flow && now - e.last.load(Relaxed) <= self.idle;
        if active {
            return (usize::from(bound), false);
        }
        let w = least_by(self.workers, |w| self.load(w));
        if same_flow {
            self.expirations.inc();
            if usize::from(bound) != w {
                self.migrations.inc();
            }
        }
        (w, true)
    }
}

impl Scheduler for FlowBased {
    fn name(&self) -> &'static str {
        "flow"
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc> {
        let now = self.clock.get() + 1;
        let e = &self.table[usize::from(conn_bundle(&desc))];
        let (w, rebind) = self.choose(e, &desc, now);
        e.inflight.fetch_add(1, Relaxed);
        if let Err(d) = self.queues.push(w, desc) {
            e.inflight.fetch_sub(1, Relaxed);
            self.full.inc();
            return Err(d);
        }
        if rebind {
            e.worker.store(w as u16, Relaxed);
            e.conn.store(desc.conn, Relaxed);
        }
        e.last.store(now, Relaxed);
        self.clock.inc();
        self.bytes_in[w].add(weight(&desc));
        self.occupancy.dispatched();
        Ok(Placed::Worker(w))
    }

    fn next(&self, w: WorkerId) -> Option<Desc> {
        self.queues.pop(w)
    }

    fn done(&self, w: WorkerId, desc: Desc) {
        if w >= self.workers {
            return;
        }
        self.table[usize::from(conn_bundle(&desc))]
            .inflight
            .fetch_sub(1, Release);
        self.bytes_out[w].add(weight(&desc));
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
            collisions: self.collisions.get(),
            migrations: self.migrations.get(),
            expirations: self.expirations.get(),
            full: self.full.get(),
            ..SchedStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(id: u32, conn: u32, len: u16) -> Desc {
        Desc {
            id,
            conn,
            len,
            ..Desc::default()
        }
    }

    fn flow(workers: usize, idle: u64) -> FlowBased {
        FlowBased::new(
            workers,
            &SchedOptions {
                capacity: 64,
                flow_idle_dispatches: idle,
                ..SchedOptions::default()
            },
        )
    }

    fn serve(s: &FlowBased, w: WorkerId) -> Desc {
        let d = s.next(w).unwrap();
        s.done(w, d);
        d
    }

    #[test]
    fn new_flows_go_to_the_worker_with_fewest_bytes_outstanding() {
        let s = flow(2, 100);
        assert_eq!(s.dispatch(pkt(0, 0xa, 1500)), Ok(Placed::Worker(0)));
        assert_eq!(s.dispatch(pkt(1, 0xb, 60)), Ok(Placed::Worker(1)));
        assert_eq!(
            s.dispatch(pkt(2, 0xc, 60)),
            Ok(Placed::Worker(1)),
            "120 bytes < 1500"
        );
        assert_eq!(s.dispatch(pkt(3, 0xd, 1500)), Ok(Placed::Worker(1)));
        assert_eq!(s.dispatch(pkt(4, 0xe, 60)), Ok(Placed::Worker(0)));
    }

    #[test]
    fn an_active_flow_keeps_its_worker_even_when_idle_briefly() {
        let s = flow(2, 100);
        s.dispatch(pkt(0, 0xa, 100)).unwrap(); // worker 0
        serve(&s, 0);
        s.dispatch(pkt(1, 0xb, 1500)).unwrap(); // worker 0 (tie), which is now the busier one
        assert_eq!(
            s.dispatch(pkt(2, 0xa, 100)),
            Ok(Placed::Worker(0)),
            "flow a is active: sticks to worker 0"
        );
        assert_eq!(s.stats().expirations, 0);
    }

    #[test]
    fn an_idle_flow_expires_and_is_bound_again_as_new() {
        let s = flow(2, 2);
        s.dispatch(pkt(0, 0xa, 100)).unwrap(); // clock 1, worker 0
        serve(&s, 0);
        s.dispatch(pkt(1, 0xb, 1500)).unwrap(); // clock 2, worker 0 (tie)
        s.dispatch(pkt(2, 0xc, 100)).unwrap(); // clock 3, worker 1
        // clock 4: a idle for 3 > 2 dispatches: expired, rebound to the least loaded (worker 1: 100 < 1500).
        assert_eq!(s.dispatch(pkt(3, 0xa, 100)), Ok(Placed::Worker(1)));
        assert_eq!((s.stats().expirations, s.stats().migrations), (1, 1));
    }

    #[test]
    fn packets_in_flight_pin_the_bundle_for_every_flow_in_it() {
        let s = flow(2, 100);
        s.dispatch(pkt(0, 0x1_000a, 1500)).unwrap(); // worker 0
        assert_eq!(
            s.dispatch(pkt(1, 0x2_000a, 60)),
            Ok(Placed::Worker(0)),
            "same bundle, packet in flight"
        );
        assert_eq!(s.stats().collisions, 1);
        let order: Vec<u32> = (0..2).map(|_| serve(&s, 0).id).collect();
        assert_eq!(order, [0, 1]);
    }

    #[test]
    fn a_full_run_queue_hands_the_packet_back() {
        let s = FlowBased::new(
            1,
            &SchedOptions {
                capacity: 1,
                ..SchedOptions::default()
            },
        );
        s.dispatch(pkt(0, 0xa, 60)).unwrap();
        assert_eq!(s.dispatch(pkt(1, 0xa, 60)), Err(pkt(1, 0xa, 60)));
        assert_eq!(s.table[0xa].inflight.load(Relaxed), 1);
        assert_eq!(s.stats().full, 1);
    }
}
