//! # L7-filter affinity scheduling (`l7aff`), Guo et al., ANCS'08 §3.3
//!
//! The multithreaded L7-filter binds one matching thread (MT) per core, each with a run queue, and schedules at the
//! connection level: "all the assembling buffers for the same connection ... will be scheduled to the same MT", to
//! "the MT run queue that already contains assembling buffers of the same connection"; "if an incoming packet belongs
//! to a new connection, the scheduler will try to balance the workload by looking for an MT that has the shortest run
//! queue"; and "before classifying each entry in the run queue, the MT checks whether the connection status has been
//! changed": entries of already-classified connections are skipped.
//!
//! Mapping to this engine. A connection is the bundle of [`Desc::conn`] (low 16 bits; the full 32-bit hash tells a
//! new connection from the last one seen in the bundle). Each bundle has a binding: worker, connection hash,
//! `classified` flag, and packets in flight. A packet goes to
//!
//! 1. the bound worker while the bundle has packets in the system (the run queue "already contains" it), whatever the
//!    connection: this is what keeps bundle exclusivity (another connection colliding on the bundle is counted);
//! 2. the bound worker when it is the same, still unclassified connection: its classification state (the assembling
//!    buffer of the L7-filter) lives in that worker's cache;
//! 3. otherwise the worker with the shortest run queue, and the bundle is bound to it: a new connection, or a
//!    classified one with nothing in flight.
//!
//! "Skipping classified entries" is done by the engine itself: a worker that processes a packet of a classified
//! connection skips detection (the L7-filter's MT skipping the entry). What the scheduler does with the news, given
//! through [`Scheduler::classified`], is drop the connection's affinity once it is idle (rule 3): after classification
//! its packets no longer need the matching state, so, like the L7-filter's packets of classified connections that
//! bypass the MTs, they are balanced freely. Without the hook (the `synthetic` workload) connections keep their worker
//! until another connection reuses their bundle while it is idle.
//!
//! Invariants: **exclusivity** and **per-flow order** (one FIFO queue per worker, and a bundle is rebound only when no
//! packet of it is in the system); **affinity** (an unclassified connection stays on its worker); **bounded** (each run
//! queue holds `capacity / N`; a full one hands the packet back, the L7-filter's scheduler "sleeps until the run queue
//! is available", which is the caller's back-off here).

use crate::util::{Counter, Occupancy, RunQueues, conn_bundle, per_worker, sum};
use crate::{BUNDLES, Desc, Placed, SchedOptions, SchedStats, Scheduler, WorkerId};
use crossbeam::utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, Ordering::*};

const UNBOUND: u16 = u16::MAX;

/// A bundle's binding. `worker` and `conn` are written by the dispatcher only; `inflight` is raised by the
/// dispatcher and lowered by workers; `classified` is set by workers.
struct Binding {
    worker: AtomicU16,
    conn: AtomicU32,
    inflight: AtomicU32,
    classified: AtomicBool,
}

/// The L7-filter affinity policy. See the module documentation.
pub struct L7Affinity {
    queues: RunQueues,
    table: Box<[Binding]>,
    occupancy: Occupancy,
    classified: Box<[CachePadded<Counter>]>,
    collisions: Counter,
    migrations: Counter,
    full: Counter,
    workers: usize,
}

impl L7Affinity {
    pub fn new(workers: usize, opts: &SchedOptions) -> Self {
        let workers = workers.max(1);
        L7Affinity {
            queues: RunQueues::new(workers, opts.capacity),
            table: (0..BUNDLES)
                .map(|_| Binding {
                    worker: AtomicU16::new(UNBOUND),
                    conn: AtomicU32::new(0),
                    inflight: AtomicU32::new(0),
                    classified: AtomicBool::new(false),
                })
                .collect(),
            occupancy: Occupancy::new(workers),
            classified: per_worker(workers, Counter::default),
            collisions: Counter::default(),
            migrations: Counter::default(),
            full: Counter::default(),
            workers,
        }
    }

    /// Rules 1–3 of the module documentation: the worker for `desc`, and whether the bundle gets a new binding.
    fn choose(&self, e: &Binding, desc: &Desc) -> (WorkerId, bool) {
        let bound = e.worker.load(Relaxed);
        let same_conn = e.conn.load(Relaxed) == desc.conn;
        if e.inflight.load(Acquire) > 0 {
            if !same_conn {
                self.collisions.inc();
            }
            return (usize::from(bound), false);
        }
        if bound != UNBOUND && same_conn && !e.classified.load(Relaxed) {
            return (usize::from(bound), false);
        }
        let w = self.queues.shortest();
        if bound != UNBOUND && same_conn && usize::from(bound) != w {
            self.migrations.inc();
        }
        (w, true)
    }
}

impl Scheduler for L7Affinity {
    fn name(&self) -> &'static str {
        "l7aff"
    }

    fn workers(&self) -> usize {
        self.workers
    }

    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc> {
        let e = &self.table[usize::from(conn_bundle(&desc))];
        let (w, rebind) = self.choose(e, &desc);
        // Raise the count before the packet becomes visible, so the worker's decrement never comes first.
        e.inflight.fetch_add(1, Relaxed);
        if let Err(d) = self.queues.push(w, desc) {
            e.inflight.fetch_sub(1, Relaxed);
            self.full.inc();
            return Err(d);
        }
        if rebind {
            // Nothing of this bundle is in flight except our packet, which no worker has finished: no concurrent
            // `classified` for the old binding is possible.
            let keep = e.conn.load(Relaxed) == desc.conn && e.classified.load(Relaxed);
            e.worker.store(w as u16, Relaxed);
            e.conn.store(desc.conn, Relaxed);
            e.classified.store(keep, Relaxed);
        }
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
        self.occupancy.completed(w);
    }

    fn classified(&self, w: WorkerId, desc: &Desc) {
        let e = &self.table[usize::from(conn_bundle(desc))];
        if w < self.workers
            && e.conn.load(Relaxed) == desc.conn
            && !e.classified.swap(true, Relaxed)
        {
            self.classified[w].inc();
        }
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
            classified: sum(&self.classified, Counter::get),
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

    fn l7(workers: usize) -> L7Affinity {
        L7Affinity::new(
            workers,
            &SchedOptions {
                capacity: 64,
                ..SchedOptions::default()
            },
        )
    }

    fn serve(s: &L7Affinity, w: WorkerId) -> Desc {
        let d = s.next(w).unwrap();
        s.done(w, d);
        d
    }

    #[test]
    fn new_connections_go_to_the_shortest_run_queue() {
        let s = l7(3);
        assert_eq!(s.dispatch(pkt(0, 0xa)), Ok(Placed::Worker(0)));
        assert_eq!(s.dispatch(pkt(1, 0xb)), Ok(Placed::Worker(1)));
        assert_eq!(s.dispatch(pkt(2, 0xc)), Ok(Placed::Worker(2)));
        serve(&s, 1);
        assert_eq!(
            s.dispatch(pkt(3, 0xd)),
            Ok(Placed::Worker(1)),
            "worker 1's queue is now the shortest"
        );
    }

    #[test]
    fn a_connection_follows_its_run_queue_and_stays_while_unclassified() {
        let s = l7(2);
        s.dispatch(pkt(0, 0xa)).unwrap();
        s.dispatch(pkt(1, 0xb)).unwrap(); // worker 1
        assert_eq!(
            s.dispatch(pkt(2, 0xa)),
            Ok(Placed::Worker(0)),
            "a's packets queue behind a0"
        );
        serve(&s, 0);
        serve(&s, 0);
        // Worker 0 is now idle and worker 1 still has b queued, yet b stays with 1 and a with 0.
        assert_eq!(s.dispatch(pkt(3, 0xb)), Ok(Placed::Worker(1)));
        assert_eq!(s.dispatch(pkt(4, 0xa)), Ok(Placed::Worker(0)));
    }

    #[test]
    fn a_classified_idle_connection_is_balanced_like_a_new_one() {
        let s = l7(2);
        s.dispatch(pkt(0, 0xa)).unwrap(); // worker 0
        s.dispatch(pkt(1, 0xb)).unwrap(); // worker 1
        s.dispatch(pkt(2, 0xc)).unwrap(); // worker 0 (tie → lowest id)
        let a0 = s.next(0).unwrap();
        s.classified(0, &a0);
        s.done(0, a0);
        // Queues: worker 0 holds c, worker 1 holds b: a tie, so a returns to worker 0... make worker 0 busier.
        s.dispatch(pkt(3, 0xc)).unwrap();
        assert_eq!(
            s.dispatch(pkt(4, 0xa)),
            Ok(Placed::Worker(1)),
            "classified + idle: shortest queue"
        );
        assert_eq!(s.stats().classified, 1);
        assert_eq!(s.stats().migrations, 1);
    }

    #[test]
    fn a_bundle_with_packets_in_flight_keeps_its_worker_even_for_another_connection() {
        // 0x1_000a and 0x2_000a share bundle 0x000a.
        let s = l7(2);
        s.dispatch(pkt(0, 0x1_000a)).unwrap();
        s.dispatch(pkt(1, 0xb)).unwrap();
        assert_eq!(s.dispatch(pkt(2, 0x2_000a)), Ok(Placed::Worker(0)));
        assert_eq!(s.stats().collisions, 1);
    }

    #[test]
    fn a_full_run_queue_hands_the_packet_back_and_leaves_no_trace() {
        let s = L7Affinity::new(
            1,
            &SchedOptions {
                capacity: 1,
                ..SchedOptions::default()
            },
        );
        s.dispatch(pkt(0, 0xa)).unwrap();
        assert_eq!(s.dispatch(pkt(1, 0xb)), Err(pkt(1, 0xb)));
        assert_eq!(s.table[0xb].inflight.load(Relaxed), 0);
        assert_eq!(s.stats().full, 1);
    }
}
