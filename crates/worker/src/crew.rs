//! Jobs the reader hands every worker at once ([`Crew::broadcast`]).
//!
//! A streaming run has moments when the reader must do something to the whole of the workers' state: sweep idle
//! flows out of every shard, or end every flow at the end of the input. It can do them alone once the packets in
//! flight have drained (no worker then holds a bundle), but then the workers wait idle while one thread does work
//! that splits by shard: on the merged nDPI trace the sweeps were an eighth of the single-threaded run's time, done
//! serially by the reader in the parallel run. [`Crew::broadcast`] runs a job on every worker instead, each with its
//! own state ([`Workload::Local`](flowbundle_types::Workload::Local)) and its own worker number (so it can take its
//! share), and returns when all have run it.
//!
//! How: the job is posted as a pointer with a generation number; a worker compares the generation with the last it
//! ran before each look for a packet (one load of a line that changes only per job) and, parked, is woken. Each
//! worker runs the job once and records the generation it ran in its own cell, or that it left the run (normally
//! only at its end, which no job outlives; earlier only by panicking); the reader waits until every cell says one or
//! the other, so a worker that ran the job and then left is not counted twice (with one shared count of the workers
//! done and another of those gone, such a worker made the reader return while another still ran the job). The
//! pointer borrows the reader's stack: `broadcast` does not return before every worker has finished with it, and
//! clears it first. The protocol is model-checked with loom (`scripts/loom`: the test at the bottom of this file).
//!
//! The caller decides what a job may touch: it runs between two packets on every worker, so a job that touches the
//! workload's shared state (the engine's shards) must be posted while nothing is in flight.

use std::sync::atomic::Ordering::*;
#[cfg(not(loom))]
use std::time::Duration;

#[cfg(loom)]
use loom::sync::{Mutex, atomic::AtomicU64};
#[cfg(loom)]
use loom::thread::Thread;
#[cfg(not(loom))]
use std::sync::{Mutex, atomic::AtomicU64};
#[cfg(not(loom))]
use std::thread::{Thread, current};

use crossbeam::utils::CachePadded;
use flowbundle_scheduler::WorkerId;

use crate::park::Sleepers;

/// What a worker's cell says once it left the run.
const GONE: u64 = u64::MAX;

/// Longest the reader waits for the workers between two looks (a safety net: each worker wakes it).
#[cfg(not(loom))]
const WAIT: Duration = Duration::from_millis(1);

/// A posted job: the closure's address and the function that calls it with its real type.
struct Posted<L> {
    data: *const (),
    call: unsafe fn(*const (), WorkerId, &mut L),
}

impl<L> Clone for Posted<L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L> Copy for Posted<L> {}

// SAFETY: the pointer is to a `Sync` closure (`broadcast`'s bound), called from the workers while `broadcast` keeps
// it alive.
unsafe impl<L> Send for Posted<L> {}

/// Calls the closure at `data`, of type `F`.
///
/// # Safety
/// `data` points to a live `F`.
unsafe fn call_as<L, F: Fn(WorkerId, &mut L) + Sync>(data: *const (), w: WorkerId, local: &mut L) {
    // SAFETY: the caller's promise.
    let f = unsafe { &*data.cast::<F>() };
    f(w, local);
}

/// The jobs of one run (see the module documentation).
pub(crate) struct Jobs<L> {
    /// Generation of the job posted last (0: none yet).
    generation: CachePadded<AtomicU64>,
    posted: Mutex<Option<Posted<L>>>,
    /// Per worker: the generation of the last job it ran, or [`GONE`] once it left the run.
    ran: Box<[CachePadded<AtomicU64>]>,
    /// The thread waiting in `broadcast`.
    waiter: Mutex<Option<Thread>>,
}

impl<L> Jobs<L> {
    pub(crate) fn new(workers: usize) -> Self {
        Jobs {
            generation: CachePadded::new(AtomicU64::new(0)),
            posted: Mutex::new(None),
            ran: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            waiter: Mutex::new(None),
        }
    }

    fn workers(&self) -> usize {
        self.ran.len()
    }

    /// Worker `w`: runs the job posted since generation `seen`, if any, and notes it ran it.
    #[inline]
    pub(crate) fn run_pending(&self, w: WorkerId, seen: &mut u64, local: &mut L) {
        let g = self.generation.load(Acquire);
        if g == *seen {
            return;
        }
        *seen = g;
        let posted = *self.posted.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = posted {
            // SAFETY: `broadcast` keeps the closure alive until this worker's cell says it ran generation `g`.
            unsafe { (p.call)(p.data, w, local) };
        }
        if let Some(r) = self.ran.get(w) {
            r.store(g, Release);
        }
        self.wake_waiter();
    }

    fn wake_waiter(&self) {
        if let Some(t) = self
            .waiter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            t.unpark();
        }
    }

    /// Worker `w` leaves the run (its loop ended, or it panicked): it runs no job any more.
    pub(crate) fn leave(&self, w: WorkerId) {
        if let Some(r) = self.ran.get(w) {
            r.store(GONE, Release);
        }
        self.wake_waiter();
    }

    /// Posts `job` (the calling thread becomes the one the workers wake) and returns its generation.
    fn post<F: Fn(WorkerId, &mut L) + Sync>(&self, job: &F) -> u64 {
        // Under loom the reader yields instead of parking (see `finish`), and is not unparked either.
        #[cfg(not(loom))]
        {
            *self.waiter.lock().unwrap_or_else(|e| e.into_inner()) = Some(current());
        }
        *self.posted.lock().unwrap_or_else(|e| e.into_inner()) = Some(Posted {
            data: (job as *const F).cast(),
            call: call_as::<L, F>,
        });
        self.generation.fetch_add(1, AcqRel) + 1
    }

    /// Whether every worker ran generation `g` or left.
    fn all_ran(&self, g: u64) -> bool {
        self.ran.iter().all(|r| {
            let v = r.load(Acquire);
            v == g || v == GONE
        })
    }

    /// Waits until every worker ran generation `g` or left, then withdraws the job: no worker calls it any more, and
    /// the borrow `post` took ends here.
    fn finish(&self, g: u64) {
        while !self.all_ran(g) {
            #[cfg(not(loom))]
            std::thread::park_timeout(WAIT);
            // Under loom the wait yields instead of parking: loom's park and unpark next to a join trip an
            // assertion inside loom (`state.notified`, a known limitation of its park), so the model checks the job's
            // borrow and that it runs once, not the wake-up (which the timeout backs up).
            #[cfg(loom)]
            loom::thread::yield_now();
        }
        *self.posted.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Marks worker `.1` gone when dropped, also when its loop unwinds.
pub(crate) struct LeaveGuard<'j, L>(pub(crate) &'j Jobs<L>, pub(crate) WorkerId);

impl<L> Drop for LeaveGuard<'_, L> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

/// The share of the work of a reader that is also worker 0 (see [`StreamConfig::reader_works`]).
///
/// [`StreamConfig::reader_works`]: crate::StreamConfig::reader_works
pub(crate) trait OwnShare {
    /// Processes one packet the policy has for worker 0; `false` when it has none.
    fn help(&self) -> bool;
    /// Runs the job posted last as worker 0.
    fn run_job(&self);
}

/// The reader's handle on the workers of a streaming run: how many there are, [`broadcast`](Self::broadcast), and,
/// when the reader is itself a worker, [`help`](Self::help).
pub struct Crew<'s, L> {
    jobs: &'s Jobs<L>,
    sleepers: &'s Sleepers,
    threads: &'s [std::thread::Thread],
    own: Option<&'s dyn OwnShare>,
}

impl<'s, L> Crew<'s, L> {
    pub(crate) fn new(
        jobs: &'s Jobs<L>,
        sleepers: &'s Sleepers,
        threads: &'s [std::thread::Thread],
        own: Option<&'s dyn OwnShare>,
    ) -> Self {
        Crew {
            jobs,
            sleepers,
            threads,
            own,
        }
    }

    /// Workers of the run (the reader included when it is one).
    pub fn workers(&self) -> usize {
        self.jobs.workers()
    }

    /// When the reader is also worker 0 ([`StreamConfig::reader_works`]): processes one packet the policy has for
    /// it and returns `true`, or returns `false` when it has none (and always when the reader is not a worker).
    /// A feed must call it until it answers `false` before it waits for anything the workers release (a packet
    /// buffer, the packets in flight to drain): what the policy holds for worker 0 only the reader can process.
    ///
    /// [`StreamConfig::reader_works`]: crate::StreamConfig::reader_works
    pub fn help(&self) -> bool {
        self.own.is_some_and(|o| o.help())
    }

    /// Runs `job` once on every worker, with its worker number and its own state, between two of its packets, and
    /// returns when all have run it. Meant for the thread that feeds the run (one job at a time); a reader that is
    /// worker 0 runs it too.
    pub fn broadcast<F: Fn(WorkerId, &mut L) + Sync>(&self, job: &F) {
        let g = self.jobs.post(job);
        self.sleepers.wake_all(self.threads);
        if let Some(o) = self.own {
            o.run_job();
        }
        self.jobs.finish(g);
    }
}

/// Model check of the broadcast protocol (`scripts/loom`): every interleaving of a reader posting one job and two
/// workers that look for it a few times and leave, worker 1 right after running it (as a worker that panics on its
/// next packet). The job reads a cell on the reader's stack that the reader writes once `finish` returns, so loom
/// fails the model if a worker can still be in the job then; and no worker runs the job twice. With one count of
/// the workers done and another of those gone, the leaving worker was counted twice and the reader returned while the
/// other worker could still be in the job.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    /// The reader's cell, shared with the job by reference (the job must be `Sync`; loom checks the accesses).
    struct Cell(UnsafeCell<u32>);
    // SAFETY: every access goes through loom, which fails the model on two unordered accesses.
    unsafe impl Sync for Cell {}

    impl Cell {
        fn read(&self) -> u32 {
            // SAFETY: loom checks the access.
            self.0.with(|p| unsafe { *p })
        }
    }

    #[test]
    fn crew_broadcast_returns_only_after_every_worker_ran_the_job_or_left() {
        // Every interleaving with at most three preemptions (unless `LOOM_MAX_PREEMPTIONS` is set).
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(3);
        }
        builder.check(|| {
            let jobs = Arc::new(Jobs::<u32>::new(2));
            let workers: Vec<_> = (0..2)
                .map(|w| {
                    let jobs = jobs.clone();
                    loom::thread::spawn(move || {
                        let (mut seen, mut ran) = (0, 0u32);
                        let _leave = LeaveGuard(&*jobs, w);
                        // A few looks for a job (a worker between packets), then the worker leaves; worker 1 leaves
                        // as soon as it ran the job.
                        for _ in 0..3 {
                            jobs.run_pending(w, &mut seen, &mut ran);
                            if w == 1 && ran > 0 {
                                break;
                            }
                        }
                        ran
                    })
                })
                .collect();
            let cell = Cell(UnsafeCell::new(7));
            let shared = &cell;
            let job = |_w: WorkerId, ran: &mut u32| {
                assert_eq!(shared.read(), 7);
                *ran += 1;
            };
            let g = jobs.post(&job);
            jobs.finish(g);
            // No worker is in the job any more: this write is ordered after every read the job made.
            // SAFETY: loom checks the access.
            cell.0.with_mut(|p| unsafe { *p = 8 });
            for (w, t) in workers.into_iter().enumerate() {
                let ran = t.join().unwrap();
                assert!(ran <= 1, "worker {w} ran the job {ran} times");
            }
        });
    }
}
