//! Parking idle workers, and waking them cheaply.
//!
//! A worker with nothing to do announces it sleeps (its flag, then the shared count, both sequentially consistent),
//! asks the policy once more for a packet, and only then parks. The dispatcher, after each accepted packet, issues a
//! sequentially consistent fence and reads the count: zero (the common case under load) costs nothing more. This is
//! the classic store-fence-load handshake: either the worker's second look sees the packet, or the dispatcher sees
//! the flag and unparks it (a pending unpark makes the next park return at once, so the order of the two does not
//! matter). Parks also time out ([`PARK_TIMEOUT`]) as a safety net.

use crossbeam::utils::CachePadded;
use flowbundle_scheduler::{Placed, WorkerId};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*, fence};
use std::thread::Thread;
use std::time::Duration;

/// Longest a parked worker sleeps without being woken.
pub(crate) const PARK_TIMEOUT: Duration = Duration::from_millis(2);

pub(crate) struct Sleepers {
    sleeping: Box<[CachePadded<AtomicBool>]>,
    count: CachePadded<AtomicUsize>,
}

impl Sleepers {
    pub(crate) fn new(workers: usize) -> Self {
        Sleepers {
            sleeping: (0..workers)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
            count: CachePadded::new(AtomicUsize::new(0)),
        }
    }

    /// Worker `w` is about to park: call, then look for work once more, then [`park`](Self::park).
    pub(crate) fn announce(&self, w: WorkerId) {
        self.sleeping[w].store(true, SeqCst);
        self.count.fetch_add(1, SeqCst);
    }

    /// Worker `w` parks (unless woken since announcing) and withdraws its announcement.
    pub(crate) fn park(&self, w: WorkerId) {
        if self.sleeping[w].load(SeqCst) {
            std::thread::park_timeout(PARK_TIMEOUT);
        }
        self.withdraw(w);
    }

    /// Worker `w` found work after announcing: it does not sleep after all.
    pub(crate) fn withdraw(&self, w: WorkerId) {
        self.sleeping[w].store(false, SeqCst);
        self.count.fetch_sub(1, SeqCst);
    }

    /// After a packet was placed: wake the worker that can take it, if it sleeps.
    #[inline]
    pub(crate) fn wake(&self, placed: Placed, threads: &[Thread]) {
        fence(SeqCst);
        if self.count.load(Relaxed) == 0 {
            return;
        }
        match placed {
            Placed::Joined => {}
            Placed::Worker(w) => self.wake_one(w, threads),
            Placed::Any => {
                if let Some(w) = (0..self.sleeping.len()).find(|&w| self.sleeping[w].load(Relaxed))
                {
                    self.wake_one(w, threads);
                }
            }
        }
    }

    fn wake_one(&self, w: WorkerId, threads: &[Thread]) {
        if let (Some(flag), Some(t)) = (self.sleeping.get(w), threads.get(w))
            && flag.swap(false, SeqCst)
        {
            t.unpark();
        }
    }

    /// Wake everyone (end of the run).
    pub(crate) fn wake_all(&self, threads: &[Thread]) {
        for (flag, t) in self.sleeping.iter().zip(threads) {
            flag.store(false, SeqCst);
            t.unpark();
        }
    }
}

impl Sleepers {
    /// Wake every sleeping worker, if any sleeps (the dispatcher facing a full queue).
    pub(crate) fn wake_all_if_any(&self, threads: &[Thread]) {
        fence(SeqCst);
        if self.count.load(Relaxed) == 0 {
            return;
        }
        for w in 0..self.sleeping.len() {
            self.wake_one(w, threads);
        }
    }
}

/// The placements of a batch of packets not yet acted on: who to wake once the batch is placed
/// ([`Sleepers::wake_noted`]). Kept by the worker that hands batches over, its capacity reused.
#[derive(Default)]
pub(crate) struct Wakes {
    /// Packets any idle worker may take.
    any: usize,
    /// Workers packets were placed for (repeats allowed).
    workers: Vec<WorkerId>,
}

impl Wakes {
    pub(crate) fn note(&mut self, placed: Placed) {
        match placed {
            Placed::Joined => {}
            Placed::Worker(w) => self.workers.push(w),
            Placed::Any => self.any += 1,
        }
    }
}

impl Sleepers {
    /// After a batch was placed: wake the workers it was placed for and as many sleepers as it has packets for any
    /// worker, with one fence for the whole batch (nothing more when nobody sleeps); forgets the batch.
    pub(crate) fn wake_noted(&self, wakes: &mut Wakes, threads: &[Thread]) {
        if wakes.any == 0 && wakes.workers.is_empty() {
            return;
        }
        fence(SeqCst);
        if self.count.load(Relaxed) != 0 {
            for &w in &wakes.workers {
                self.wake_one(w, threads);
            }
            let mut any = wakes.any;
            for w in 0..self.sleeping.len() {
                if any == 0 {
                    break;
                }
                if self.sleeping[w].load(Relaxed) {
                    self.wake_one(w, threads);
                    any -= 1;
                }
            }
        }
        wakes.any = 0;
        wakes.workers.clear();
    }
}
