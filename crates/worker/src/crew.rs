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
//! worker runs the job once and counts itself done; the last one wakes the reader. The pointer borrows the reader's
//! stack: `broadcast` does not return before every worker has finished with it (or has left the run, which only a
//! panicking worker does before the end), and clears it first.
//!
//! The caller decides what a job may touch: it runs between two packets on every worker, so a job that touches the
//! workload's shared state (the engine's shards) must be posted while nothing is in flight.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::thread::Thread;
use std::time::Duration;

use crossbeam::utils::CachePadded;
use flowbundle_scheduler::WorkerId;

use crate::park::Sleepers;

/// Longest the reader waits for the workers between two looks (a safety net: the last worker wakes it).
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
    /// Workers that ran the job of the current generation.
    done: AtomicUsize,
    /// Workers that left the run (normally only at its end; earlier only by panicking).
    left: AtomicUsize,
    /// The thread waiting in `broadcast`.
    waiter: Mutex<Option<Thread>>,
    workers: usize,
}

impl<L> Jobs<L> {
    pub(crate) fn new(workers: usize) -> Self {
        Jobs {
            generation: CachePadded::new(AtomicU64::new(0)),
            posted: Mutex::new(None),
            done: AtomicUsize::new(0),
            left: AtomicUsize::new(0),
            waiter: Mutex::new(None),
            workers,
        }
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
            // SAFETY: `broadcast` keeps the closure alive until every worker counted itself done below.
            unsafe { (p.call)(p.data, w, local) };
        }
        self.finished_one();
    }

    fn finished_one(&self) {
        if self.done.fetch_add(1, AcqRel) + 1 + self.left.load(Acquire) >= self.workers {
            self.wake_waiter();
        }
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

    /// A worker leaves the run (its loop ended, or it panicked).
    pub(crate) fn leave(&self) {
        self.left.fetch_add(1, AcqRel);
        self.wake_waiter();
    }
}

/// Marks a worker gone when dropped, also when its loop unwinds.
pub(crate) struct LeaveGuard<'j, L>(pub(crate) &'j Jobs<L>);

impl<L> Drop for LeaveGuard<'_, L> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// The reader's handle on the workers of a streaming run: how many there are, and [`broadcast`](Self::broadcast).
pub struct Crew<'s, L> {
    jobs: &'s Jobs<L>,
    sleepers: &'s Sleepers,
    threads: &'s [Thread],
}

impl<'s, L> Crew<'s, L> {
    pub(crate) fn new(jobs: &'s Jobs<L>, sleepers: &'s Sleepers, threads: &'s [Thread]) -> Self {
        Crew {
            jobs,
            sleepers,
            threads,
        }
    }

    /// Workers of the run.
    pub fn workers(&self) -> usize {
        self.jobs.workers
    }

    /// Runs `job` once on every worker, with its worker number and its own state, between two of its packets, and
    /// returns when all have run it. Meant for the thread that feeds the run (one job at a time).
    pub fn broadcast<F: Fn(WorkerId, &mut L) + Sync>(&self, job: &F) {
        let j = self.jobs;
        *j.waiter.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current());
        *j.posted.lock().unwrap_or_else(|e| e.into_inner()) = Some(Posted {
            data: (job as *const F).cast(),
            call: call_as::<L, F>,
        });
        j.done.store(0, Release);
        j.generation.fetch_add(1, AcqRel);
        self.sleepers.wake_all(self.threads);
        while j.done.load(Acquire) + j.left.load(Acquire) < j.workers {
            std::thread::park_timeout(WAIT);
        }
        // No worker calls the job any more (each ran it, or left): the borrow of `job` ends here.
        *j.posted.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
