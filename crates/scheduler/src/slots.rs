//! A fixed arena of packet slots, for the policies whose queues are linked lists threaded through their packets
//! (`lfb` and `lfb-affinity` link each flow bundle queue, `ph` each connection queue).
//!
//! Why an arena: 4,096 FBQs (or 65,536 CEs) each with its own bounded ring would need the ring size times the table
//! size in memory, because one dominant flow may put every packet of the system in one queue. Linking packets through
//! one array of `capacity` slots bounds memory by the number of packets in the system, whatever their distribution,
//! and gives the policy its capacity limit for free: no free slot, `dispatch` refuses.
//!
//! Allocation is done by the dispatcher alone (the only producer), so it needs no CAS: a cursor walks the array and
//! takes the first slot whose `used` flag is clear. Slots are freed by workers in any order with a release store.
//! Most packets leave in roughly arrival order, so the slot under the cursor is usually free; when it is not (a
//! long-held bundle), the cursor skips ahead, at most [`PROBES`] slots per call, and `dispatch` reports "full" when
//! none was found: a caller that retries resumes the scan further on, so a free slot is always found eventually.
//!
//! Every field is an atomic so the whole structure is safe Rust: the descriptor is two relaxed `u64`s, published to a
//! worker by the release operation that makes the slot reachable (a queue push or a count increment) and read after
//! the matching acquire.

use crate::Desc;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use crate::util::{DispatcherOnly, NIL};

/// Slots examined per allocation attempt before reporting "full".
pub(crate) const PROBES: usize = 64;

#[repr(align(32))]
struct Slot {
    lo: AtomicU64,
    hi: AtomicU64,
    next: AtomicU32,
    used: AtomicBool,
}

pub(crate) struct Slots {
    slots: Box<[Slot]>,
    /// Next slot to try. Dispatcher only, written at every allocation: on a line of its own.
    cursor: DispatcherOnly<AtomicU32>,
}

impl Slots {
    pub(crate) fn new(capacity: usize) -> Self {
        let capacity = capacity.clamp(1, crate::MAX_CAPACITY);
        let slots = (0..capacity)
            .map(|_| Slot {
                lo: AtomicU64::new(0),
                hi: AtomicU64::new(0),
                next: AtomicU32::new(NIL),
                used: AtomicBool::new(false),
            })
            .collect();
        Slots {
            slots,
            cursor: DispatcherOnly::new(AtomicU32::new(0)),
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Take a free slot for `desc` (dispatcher only). `None` when [`PROBES`] slots in a row are in use.
    #[inline]
    pub(crate) fn alloc(&self, desc: Desc) -> Option<u32> {
        let n = self.slots.len();
        let mut i = self.cursor.load(Relaxed) as usize;
        for _ in 0..PROBES.min(n) {
            if i >= n {
                i = 0;
            }
            let slot = &self.slots[i];
            // Acquire: the worker that freed the slot has finished reading it.
            if !slot.used.load(Acquire) {
                slot.used.store(true, Relaxed);
                let (lo, hi) = split(desc);
                slot.lo.store(lo, Relaxed);
                slot.hi.store(hi, Relaxed);
                slot.next.store(NIL, Relaxed);
                self.cursor.store((i + 1) as u32, Relaxed);
                return Some(i as u32);
            }
            i += 1;
        }
        self.cursor.store(i as u32, Relaxed);
        None
    }

    /// The descriptor in slot `s` (call after an acquire that synchronises with its publication).
    #[inline]
    pub(crate) fn desc(&self, s: u32) -> Desc {
        let slot = &self.slots[s as usize];
        join(slot.lo.load(Relaxed), slot.hi.load(Relaxed))
    }

    /// Link `s` after `tail` (the writer publishes the link with a later release).
    #[inline]
    pub(crate) fn link(&self, tail: u32, s: u32) {
        self.slots[tail as usize].next.store(s, Relaxed);
    }

    #[inline]
    pub(crate) fn next(&self, s: u32) -> u32 {
        self.slots[s as usize].next.load(Relaxed)
    }

    /// Give slot `s` back. Release: everything read from it happens before the dispatcher reuses it.
    #[inline]
    pub(crate) fn free(&self, s: u32) {
        self.slots[s as usize].used.store(false, Release);
    }
}

#[inline]
fn split(d: Desc) -> (u64, u64) {
    (
        u64::from(d.id) | u64::from(d.conn) << 32,
        u64::from(d.rss) | u64::from(d.fid) << 32 | u64::from(d.len) << 48,
    )
}

#[inline]
fn join(lo: u64, hi: u64) -> Desc {
    Desc {
        id: lo as u32,
        conn: (lo >> 32) as u32,
        rss: hi as u32,
        fid: (hi >> 32) as u16,
        len: (hi >> 48) as u16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_round_trip() {
        let d = Desc {
            id: 7,
            conn: 0xdead_beef,
            rss: 0x1234_5678,
            fid: 0xabcd,
            len: 1514,
        };
        let (lo, hi) = split(d);
        assert_eq!(join(lo, hi), d);
    }

    #[test]
    fn allocation_is_bounded_and_resumes_after_free() {
        let s = Slots::new(4);
        let ids: Vec<u32> = (0..4)
            .map(|i| {
                s.alloc(Desc {
                    id: i,
                    ..Desc::default()
                })
                .unwrap()
            })
            .collect();
        assert_eq!(ids, [0, 1, 2, 3]);
        assert_eq!(s.alloc(Desc::default()), None);
        s.free(2);
        assert_eq!(
            s.alloc(Desc {
                id: 9,
                ..Desc::default()
            }),
            Some(2)
        );
        assert_eq!(s.desc(2).id, 9);
    }
}
