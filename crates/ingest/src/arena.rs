//! # A bounded arena of packet buffers, for streaming runtimes
//!
//! A reader thread copies each packet it reads into a free slot of the arena ([`PacketArena::acquire`] then
//! [`PacketArena::fill`]), hands the slot's index to whoever processes it (the index travels in a descriptor through
//! a scheduler's queues), and the consumer gives the slot back ([`PacketArena::release`]) when it is done with the
//! bytes. The arena never grows beyond its slot count: when every slot is in use, `acquire` waits (the reader parks
//! until a consumer releases one), which is the backpressure that keeps a fast reader from running ahead of slow
//! workers. Nothing is dropped.
//!
//! Memory: `slots` buffers, each as large as the largest packet it has held (a buffer keeps its capacity, so after
//! the first few thousand packets nothing is allocated per packet). The bound is `slots × (largest packet)`, and a
//! packet is at most a reassembled IP datagram (64 KiB) or the capture's snaplen.
//!
//! A slot may also *borrow* its packet's bytes instead of copying them ([`PacketArena::fill_kept`]): a reader that
//! keeps its records in place ([`CaptureReader::keep_records`](crate::CaptureReader::keep_records)) hands the slot
//! a pointer to them, and promises to leave them unchanged until the slot is released, which it learns from the
//! sequence numbers below (it recycles a buffer only once [`PacketArena::oldest_in_flight`] is past every packet in
//! it). The copy into the arena was the reader thread's largest cost.
//!
//! Every slot also records the *sequence number* of the packet it holds (the packet's position in the input), so a
//! collector can compute the oldest packet still being processed ([`PacketArena::oldest_in_flight`]): everything
//! before it is done. That is the watermark that lets per-worker outputs be merged back into input order.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use crate::{LinkType, PacketRecord};

/// The sequence number of a free slot.
const FREE: u64 = u64::MAX;

/// A buffer's first allocation holds at least this many bytes (an Ethernet frame), so it does not grow packet by
/// packet through the first few sizes it sees.
const MIN_BUFFER: usize = 2048;

/// Most free slots the filler takes from the shared list at once.
const TAKE: usize = 64;

/// Longest the reader parks waiting for a slot before looking again (a safety net: a release that leaves a quarter
/// of the slots free wakes it).
const ACQUIRE_PARK: Duration = Duration::from_millis(1);

/// A slot's packet: one cache line of its own for the header (the reader writes it while the workers read their
/// neighbours').
#[repr(align(64))]
struct Bytes {
    /// The packet's position in its input (see [`PacketArena::set_position`]).
    position: u64,
    ts_ns: u64,
    orig_len: u32,
    interface: u32,
    link_type: LinkType,
    data: Vec<u8>,
    /// Bytes borrowed from the filler ([`PacketArena::fill_kept`]): pointer and length; null when `data` holds the
    /// packet.
    kept: (*const u8, usize),
}

impl Bytes {
    fn record(&self) -> PacketRecord<'_> {
        let data = if self.kept.0.is_null() {
            &self.data[..]
        } else {
            // SAFETY: `fill_kept`'s caller promised the bytes stay valid and unchanged until the slot is released,
            // and a record is read only while its slot is in use.
            unsafe { std::slice::from_raw_parts(self.kept.0, self.kept.1) }
        };
        PacketRecord {
            ts_ns: self.ts_ns,
            orig_len: self.orig_len,
            interface: self.interface,
            link_type: self.link_type,
            data,
        }
    }
}

/// A bounded arena of packet buffers. See the module documentation.
pub struct PacketArena {
    slots: Box<[UnsafeCell<Bytes>]>,
    /// Per slot, the sequence number of the packet in it ([`FREE`] when free). Kept apart from the buffers, eight to a
    /// cache line: the collector's scan ([`PacketArena::oldest_in_flight`]) then reads an eighth of the lines it
    /// would read otherwise, and never the lines the reader is filling.
    seqs: Box<[AtomicU64]>,
    /// Released slots, pushed by the consumers.
    free: Mutex<Vec<u32>>,
    /// The filler's own stock, taken from `free` up to [`TAKE`] at a time: the filler locks the shared list once per
    /// batch instead of once per packet, so the consumers' releases rarely meet it there. Only the filler locks it
    /// (uncontended: a lock is one atomic on a line no other thread writes).
    stock: Mutex<Vec<u32>>,
    /// The next sequence number [`fill`](Self::fill) will be given (published after the slot's own).
    next_seq: AtomicU64,
    /// The thread parked in `acquire`, and whether it waits.
    waiter: OnceLock<Thread>,
    waiting: AtomicBool,
    /// Times `acquire` found no free slot.
    waits: AtomicU64,
    /// Free slots at which a release wakes the waiting reader.
    wake_at: usize,
}

// SAFETY: a slot's bytes are written only by the holder of a slot index taken from the free list (`acquire` gives
// each index to one caller, and `fill` is `unsafe` with that contract), and read only while the slot is in use;
// `release` (also `unsafe`) promises no reader remains. The free list's mutex orders a release before the next fill
// (the filler's stock is filled from it under that mutex). Borrowed bytes (`fill_kept`) are read under the same
// rules, and their owner keeps them unchanged until the slot is released.
unsafe impl Sync for PacketArena {}
// SAFETY: the only non-`Send` part is the pointer to borrowed bytes, which `fill_kept`'s caller keeps valid for
// whichever thread reads the slot (the arena itself is just as valid on another thread).
unsafe impl Send for PacketArena {}

impl std::fmt::Debug for PacketArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacketArena")
            .field("slots", &self.slots.len())
            .field("next_seq", &self.next_seq.load(Relaxed))
            .finish()
    }
}

impl PacketArena {
    /// An arena of `slots` packet buffers (at least 1, at most 2^31).
    pub fn new(slots: usize) -> Self {
        let n = slots.clamp(1, 1 << 31);
        PacketArena {
            slots: (0..n)
                .map(|_| {
                    UnsafeCell::new(Bytes {
                        position: 0,
                        ts_ns: 0,
                        orig_len: 0,
                        interface: 0,
                        link_type: LinkType::RAW,
                        data: Vec::new(),
                        kept: (std::ptr::null(), 0),
                    })
                })
                .collect(),
            seqs: (0..n).map(|_| AtomicU64::new(FREE)).collect(),
            // Popped from the end: slot 0 first.
            free: Mutex::new((0..n as u32).rev().collect()),
            stock: Mutex::new(Vec::with_capacity(TAKE.min(n))),
            next_seq: AtomicU64::new(0),
            waiter: OnceLock::new(),
            waiting: AtomicBool::new(false),
            waits: AtomicU64::new(0),
            wake_at: (n / 4).max(1),
        }
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Times [`acquire`](Self::acquire) had to wait for a slot (the reader was ahead of the consumers).
    pub fn waits(&self) -> u64 {
        self.waits.load(Relaxed)
    }

    /// A free slot's index, or `None` at once when every slot is in use (a live source that must not wait counts
    /// the packet as dropped instead). Meant for the one filling thread, as [`acquire`](Self::acquire).
    pub fn try_acquire(&self) -> Option<u32> {
        let mut stock = self.stock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = stock.pop() {
            return Some(i);
        }
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        // The most recently released last, so it is the next one taken (its buffer is the likeliest in cache).
        let from = free.len().saturating_sub(TAKE);
        stock.extend(free.drain(from..));
        drop(free);
        stock.pop()
    }

    /// A free slot's index, waiting (parked) until a consumer releases one if none is free. Meant for one thread
    /// (the reader): the thread that calls it first is the one releases wake.
    pub fn acquire(&self) -> u32 {
        if let Some(i) = self.try_acquire() {
            return i;
        }
        self.waits.fetch_add(1, Relaxed);
        let me = self.waiter.get_or_init(std::thread::current);
        let mine = me.id() == std::thread::current().id();
        loop {
            self.waiting.store(true, SeqCst);
            if let Some(i) = self.try_acquire() {
                self.waiting.store(false, SeqCst);
                return i;
            }
            if mine {
                std::thread::park_timeout(ACQUIRE_PARK);
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    /// Copies `rec` into slot `i` and gives it the next sequence number, which it returns.
    ///
    /// # Safety
    /// `i` came from [`acquire`](Self::acquire) and the calling thread, the one that acquired it, still holds it
    /// alone: not released, and not handed to a consumer yet (it may fill it again, e.g. to replace a fragment by
    /// the datagram it completed; the slot then takes a new sequence number).
    pub unsafe fn fill(&self, i: u32, rec: &PacketRecord<'_>) -> u64 {
        let (Some(slot), Some(seq_of)) = (self.slots.get(i as usize), self.seqs.get(i as usize))
        else {
            return FREE;
        };
        // SAFETY: the caller holds slot `i` alone (it came from the free list and nobody reads a free slot).
        let b = unsafe { &mut *slot.get() };
        b.ts_ns = rec.ts_ns;
        b.orig_len = rec.orig_len;
        b.interface = rec.interface;
        b.link_type = rec.link_type;
        b.kept = (std::ptr::null(), 0);
        b.data.clear();
        if b.data.capacity() < rec.data.len() {
            b.data.reserve(rec.data.len().max(MIN_BUFFER));
        }
        b.data.extend_from_slice(rec.data);
        self.number(seq_of)
    }

    /// Gives a just-filled slot (its sequence-number cell `seq_of`) the next sequence number.
    fn number(&self, seq_of: &AtomicU64) -> u64 {
        let seq = self.next_seq.load(Relaxed);
        seq_of.store(seq, Release);
        self.next_seq.store(seq + 1, Release);
        seq
    }

    /// Like [`fill_record`](Self::fill_record), but slot `i` borrows `rec`'s bytes instead of copying them.
    ///
    /// # Safety
    /// As for [`fill`](Self::fill); and `rec.data` stays valid and unchanged until slot `i` is released (the filler
    /// may learn that from [`oldest_in_flight`](Self::oldest_in_flight): once it is past the sequence number this
    /// returns, the slot was released, and the release happened before that load).
    pub unsafe fn fill_kept(
        &self,
        i: u32,
        rec: &PacketRecord<'_>,
    ) -> Option<(u64, PacketRecord<'_>)> {
        let (slot, seq_of) = (self.slots.get(i as usize)?, self.seqs.get(i as usize)?);
        // SAFETY: the caller holds slot `i` alone (it came from the free list and nobody reads a free slot).
        let b = unsafe { &mut *slot.get() };
        b.ts_ns = rec.ts_ns;
        b.orig_len = rec.orig_len;
        b.interface = rec.interface;
        b.link_type = rec.link_type;
        b.kept = (rec.data.as_ptr(), rec.data.len());
        let seq = self.number(seq_of);
        Some((seq, b.record()))
    }

    /// [`fill`](Self::fill), also giving the filled packet as [`record`](Self::record) would (without reading back the
    /// slot's sequence number, a line the consumers write).
    ///
    /// # Safety
    /// As for [`fill`](Self::fill).
    pub unsafe fn fill_record(
        &self,
        i: u32,
        rec: &PacketRecord<'_>,
    ) -> Option<(u64, PacketRecord<'_>)> {
        // SAFETY: the caller's promise, as for `fill`.
        let seq = unsafe { self.fill(i, rec) };
        let slot = self.slots.get(i as usize)?;
        // SAFETY: the caller holds the slot it has just filled; nothing writes it until it is released.
        let b = unsafe { &*slot.get() };
        Some((seq, b.record()))
    }

    /// Records that the packet in slot `i` is at `position` in the input (the reader's count of the packets it read,
    /// those a defragmenter absorbed included), which [`position`](Self::position) gives back.
    ///
    /// # Safety
    /// As for [`fill`](Self::fill): the calling thread filled slot `i` and still holds it alone.
    pub unsafe fn set_position(&self, i: u32, position: u64) {
        if let Some(slot) = self.slots.get(i as usize) {
            // SAFETY: the caller holds slot `i` alone.
            unsafe { &mut *slot.get() }.position = position;
        }
    }

    /// The input position of the packet in slot `i` (`None` when free); see [`set_position`](Self::set_position).
    pub fn position(&self, i: u32) -> Option<u64> {
        if self.seqs.get(i as usize)?.load(Acquire) == FREE {
            return None;
        }
        let slot = self.slots.get(i as usize)?;
        // SAFETY: as in `record`.
        Some(unsafe { &*slot.get() }.position)
    }

    /// The packet in slot `i`, if it holds one. The record is valid until the slot is released.
    pub fn record(&self, i: u32) -> Option<PacketRecord<'_>> {
        if self.seqs.get(i as usize)?.load(Acquire) == FREE {
            return None;
        }
        let slot = self.slots.get(i as usize)?;
        // SAFETY: the slot is in use: only `fill` (before it was handed out) writes it, and `release`'s caller
        // promises no record borrowed from it is still alive.
        let b = unsafe { &*slot.get() };
        Some(b.record())
    }

    /// The sequence number of the packet in slot `i` (`None` when free).
    pub fn seq(&self, i: u32) -> Option<u64> {
        let s = self.seqs.get(i as usize)?.load(Acquire);
        (s != FREE).then_some(s)
    }

    /// Gives slot `i` back, waking the reader if it waits for one.
    ///
    /// # Safety
    /// The caller is done with the slot: no [`record`](Self::record) borrowed from it is used afterwards, and the
    /// slot is released once per fill.
    pub unsafe fn release(&self, i: u32) {
        let Some(seq) = self.seqs.get(i as usize) else {
            return;
        };
        seq.store(FREE, Release);
        let free = {
            let mut f = self.free.lock().unwrap_or_else(|e| e.into_inner());
            f.push(i);
            f.len()
        };
        // Wake a waiting reader only once a quarter of the slots are free: woken for every slot, it would take one,
        // fill it and wait again, a context switch per packet on the cores the consumers need.
        if free >= self.wake_at
            && self.waiting.load(SeqCst)
            && self.waiting.swap(false, SeqCst)
            && let Some(t) = self.waiter.get()
        {
            t.unpark();
        }
    }

    /// The sequence number of the oldest packet still in a slot, or the next one to be filled when every slot is
    /// free: every packet before it has been released. Reads every slot (a few microseconds for thousands).
    pub fn oldest_in_flight(&self) -> u64 {
        // The next number first: every slot filled before it is then visible with its number or a later state.
        let next = self.next_seq.load(Acquire);
        self.seqs
            .iter()
            .map(|s| s.load(Acquire))
            .fold(next, u64::min)
    }

    /// Packets filled so far.
    pub fn filled(&self) -> u64 {
        self.next_seq.load(Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(data: &[u8], ts_ns: u64) -> PacketRecord<'_> {
        PacketRecord {
            ts_ns,
            orig_len: data.len() as u32,
            interface: 0,
            link_type: LinkType::RAW,
            data,
        }
    }

    #[test]
    fn slots_are_filled_read_released_and_reused() {
        let a = PacketArena::new(2);
        let i = a.acquire();
        // SAFETY: `i` was just acquired by this thread.
        let s = unsafe { a.fill(i, &rec(b"abc", 7)) };
        assert_eq!(s, 0);
        let r = a.record(i).unwrap();
        assert_eq!((r.data, r.ts_ns), (&b"abc"[..], 7));
        let j = a.acquire();
        // SAFETY: as above.
        unsafe { a.fill(j, &rec(b"de", 8)) };
        assert_eq!(a.oldest_in_flight(), 0);
        // SAFETY: no record of `i` is used after this.
        unsafe { a.release(i) };
        assert!(a.record(i).is_none());
        assert_eq!(a.oldest_in_flight(), 1);
        // SAFETY: as above.
        unsafe { a.release(j) };
        assert_eq!(a.oldest_in_flight(), 2);
        let k = a.acquire();
        assert!(k == i || k == j);
    }

    #[test]
    fn a_full_arena_waits_for_a_release() {
        let a = std::sync::Arc::new(PacketArena::new(1));
        let i = a.acquire();
        // SAFETY: acquired here.
        unsafe { a.fill(i, &rec(b"x", 1)) };
        let b = std::sync::Arc::clone(&a);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            // SAFETY: the main thread reads nothing from the slot any more.
            unsafe { b.release(i) };
        });
        let j = a.acquire();
        assert_eq!(j, i);
        assert!(a.waits() >= 1);
        t.join().unwrap();
    }
}
