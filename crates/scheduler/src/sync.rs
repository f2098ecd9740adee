//! The synchronisation primitives of the structures that the model checker explores: the slot arena
//! ([`slots`](crate::slots)), the FBQ table of [`lfb`](crate::lfb) and [`lfb_affinity`](crate::lfb_affinity), the
//! connection entries of [`ph`](crate::ph), and [`rss`](crate::rss)'s table and its workers' finished counts.
//!
//! In a normal build this module only re-exports `std`'s atomics and mutex and crossbeam's bounded queue, so the hot
//! path is exactly what it would be without it. Built with `--cfg loom` (`scripts/loom`), the same names come from
//! [loom](https://docs.rs/loom), which runs the models in `tests/loom.rs` under every interleaving of their threads
//! (within a preemption bound) and every value a weak-memory load may return, so a missing acquire or release shows as
//! a wrong packet, a lost one, or two workers holding one bundle.
//!
//! The policies' event counters ([`Counter`](crate::util::Counter)) stay on `std`'s atomics in both builds: they have
//! one writer each and order nothing, and modelling them would only multiply the schedules to explore.

#[cfg(not(loom))]
pub(crate) use crossbeam::queue::ArrayQueue;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use model_queue::ArrayQueue;

/// The model's stand-in for crossbeam's `ArrayQueue`, whose atomics loom cannot see (crossbeam-queue has no loom
/// build). It keeps the two properties the policies rely on, and no more:
///
/// * a bounded FIFO that refuses a push when full, each push and pop one step;
/// * a push happens-before the pop that takes its item: the pusher makes a release increment of its cell's stamp
///   before the item becomes visible, and the popper an acquire read-modify-write of the stamp after taking it (a
///   read-modify-write reads the latest value, so it always synchronises with that push).
///
/// The ring itself sits behind a `std` mutex that loom does not model, so the queue adds no other ordering: unlike a
/// loom mutex it cannot order a pop before a later push, or an empty pop after a push, and thereby hide a missing
/// acquire or release in the policy (the real queue orders its pushes among themselves and its pops among themselves
/// as well; the policies must not need that, and the models check that they do not). No loom operation runs while
/// the `std` mutex is held, so a model thread is never switched out holding it. The stamps are created with the
/// queue, so their creation happens-before every use, as loom requires.
#[cfg(loom)]
mod model_queue {
    use loom::sync::atomic::{AtomicUsize, Ordering};

    enum Cell<T> {
        Empty,
        /// A push took the cell and is publishing its stamp.
        Reserved,
        Full(T),
    }

    struct Ring<T> {
        cells: Vec<Cell<T>>,
        /// Pushes and pops so far; `tail - head` cells are reserved or full.
        head: usize,
        tail: usize,
    }

    pub(crate) struct ArrayQueue<T> {
        ring: std::sync::Mutex<Ring<T>>,
        stamps: Box<[AtomicUsize]>,
    }

    impl<T> ArrayQueue<T> {
        pub(crate) fn new(cap: usize) -> Self {
            assert!(cap > 0, "capacity must be non-zero");
            ArrayQueue {
                ring: std::sync::Mutex::new(Ring {
                    cells: (0..cap).map(|_| Cell::Empty).collect(),
                    head: 0,
                    tail: 0,
                }),
                stamps: (0..cap).map(|_| AtomicUsize::new(0)).collect(),
            }
        }

        fn ring(&self) -> std::sync::MutexGuard<'_, Ring<T>> {
            self.ring.lock().unwrap_or_else(|e| e.into_inner())
        }

        pub(crate) fn push(&self, value: T) -> Result<(), T> {
            let i = {
                let mut ring = self.ring();
                let cap = ring.cells.len();
                if ring.tail - ring.head == cap {
                    return Err(value);
                }
                let i = ring.tail % cap;
                assert!(
                    matches!(ring.cells[i], Cell::Empty),
                    "the cell after the tail is free"
                );
                ring.cells[i] = Cell::Reserved;
                ring.tail += 1;
                i
            };
            self.stamps[i].fetch_add(1, Ordering::Release);
            self.ring().cells[i] = Cell::Full(value);
            Ok(())
        }

        /// `None` when empty, or when the oldest push has not finished publishing (it has not happened yet).
        pub(crate) fn pop(&self) -> Option<T> {
            let (i, value) = {
                let mut ring = self.ring();
                if ring.head == ring.tail {
                    return None;
                }
                let i = ring.head % ring.cells.len();
                match std::mem::replace(&mut ring.cells[i], Cell::Empty) {
                    Cell::Full(value) => {
                        ring.head += 1;
                        (i, value)
                    }
                    other => {
                        ring.cells[i] = other;
                        return None;
                    }
                }
            };
            self.stamps[i].fetch_add(0, Ordering::Acquire);
            Some(value)
        }

        pub(crate) fn len(&self) -> usize {
            let ring = self.ring();
            ring.tail - ring.head
        }

        /// As crossbeam's: a racy snapshot (a reservation in progress counts as an entry).
        pub(crate) fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }
}
