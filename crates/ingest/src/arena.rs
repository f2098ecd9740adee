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
//!
//! ## No shared line per packet
//!
//! A slot's sequence number is also its state (free or in use), and it lives in the first cache line of the slot,
//! beside the header the filler writes and the consumer reads: handing a packet over moves that one line to the
//! consumer's core and back, and nothing else. There is no free list: the filler takes slots round the ring from a
//! cursor only it touches, taking the first free one among the next few ([`SKIP`]), and a consumer frees a slot by
//! storing [`FREE`] in it. Before, sequence numbers sat eight to a cache line apart from the slots, and freed slots went
//! through a mutex-guarded list: per packet, the filler and both workers of a two-worker run wrote the list's line and
//! a sequence-number line their neighbours' slots shared (`perf` on the merged nDPI trace without rules: the arena's
//! `fill_kept`, `record`, `release` and `try_acquire` were 139 of the 639 samples the parallel run spent more than
//! the single-threaded one).
//!
//! When the slots ahead of the cursor are all in use the filler waits for the one half the ring ahead
//! ([`PacketArena::acquire`]): it names that slot and raises a flag, and the consumer that frees the named slot wakes
//! it. Packets finish roughly in the order they were filled, so by then about half the ring is free, and the filler
//! fills it in one go instead of waking once per freed slot (a context switch per packet on the cores the consumers
//! need), while the other half keeps the consumers busy. The flag, the name and the slot's state follow the store-fence-load handshake (the filler raises
//! the flag, then looks at the slot; the consumer frees the slot, then looks at the flag, both sequentially
//! consistent), so either the filler sees the slot free or the consumer sees the flag; a park also times out
//! ([`ACQUIRE_PARK`]). The protocol is model-checked with loom (`scripts/loom`, the test at the bottom of this file).

#[cfg(not(loom))]
use std::sync::OnceLock;
use std::sync::atomic::Ordering::*;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
#[cfg(not(loom))]
use std::thread::Thread;
#[cfg(not(loom))]
use std::time::Duration;

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};

use crate::{LinkType, PacketRecord};

/// The sequence number of a free slot.
const FREE: u64 = u64::MAX;

/// A buffer's first allocation holds at least this many bytes (an Ethernet frame), so it does not grow packet by
/// packet through the first few sizes it sees.
const MIN_BUFFER: usize = 2048;

/// Slots past the cursor the filler looks at when the cursor's slot is in use (a slow packet), before it waits.
const SKIP: usize = 4;

/// Longest the filler parks waiting for a slot before looking again (a safety net: freeing the named slot wakes it).
#[cfg(not(loom))]
const ACQUIRE_PARK: Duration = Duration::from_millis(1);

/// A slot's bytes, written by the holder of the slot alone. Under loom, its accesses are checked.
#[cfg(not(loom))]
struct SlotCell(std::cell::UnsafeCell<Bytes>);
#[cfg(loom)]
struct SlotCell(loom::cell::UnsafeCell<Bytes>);

impl SlotCell {
    fn new(b: Bytes) -> Self {
        #[cfg(not(loom))]
        {
            SlotCell(std::cell::UnsafeCell::new(b))
        }
        #[cfg(loom)]
        {
            SlotCell(loom::cell::UnsafeCell::new(b))
        }
    }

    /// # Safety
    /// The caller holds the slot alone (nobody else reads or writes it meanwhile).
    #[allow(clippy::mut_from_ref)]
    unsafe fn get_mut(&self) -> &mut Bytes {
        #[cfg(not(loom))]
        // SAFETY: the caller's promise.
        unsafe {
            &mut *self.0.get()
        }
        #[cfg(loom)]
        // SAFETY: the caller's promise; loom checks the access.
        self.0.with_mut(|p| unsafe { &mut *p })
    }

    /// # Safety
    /// Nobody writes the slot while the result is used.
    unsafe fn get(&self) -> &Bytes {
        #[cfg(not(loom))]
        // SAFETY: the caller's promise.
        unsafe {
            &*self.0.get()
        }
        #[cfg(loom)]
        // SAFETY: the caller's promise; loom checks the access.
        self.0.with(|p| unsafe { &*p })
    }
}

/// A slot's packet: its position, capture header and bytes. In this order, after the slot's state, everything a
/// consumer reads of a packet whose bytes are borrowed lies in the slot's first cache line.
#[repr(C)]
struct Bytes {
    ts_ns: u64,
    /// Bytes borrowed from the filler ([`PacketArena::fill_kept`]): pointer and length; null when `data` holds the
    /// packet.
    kept: (*const u8, usize),
    orig_len: u32,
    interface: u32,
    link_type: LinkType,
    /// The packet's position in its input (see [`PacketArena::set_position`]).
    position: u64,
    data: Vec<u8>,
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

/// One slot: its state (the sequence number of its packet, or [`FREE`]) and its packet, in one cache line (see the
/// module documentation, "No shared line per packet").
#[repr(C, align(64))]
struct Slot {
    seq: AtomicU64,
    bytes: SlotCell,
}

/// State only the filler writes: the ring's cursor and the next sequence number (read by the collector's scans).
#[repr(align(64))]
struct Filler {
    cursor: AtomicUsize,
    next_seq: AtomicU64,
}

/// The filler's wait for a slot, which consumers read at every release: a line of its own, written only when the
/// filler starts or stops waiting.
#[repr(align(64))]
struct Wait {
    waiting: AtomicBool,
    /// The slot whose release wakes the filler.
    awaited: AtomicU32,
    /// The thread parked in `acquire`.
    #[cfg(not(loom))]
    waiter: OnceLock<Thread>,
}

/// A bounded arena of packet buffers. See the module documentation.
pub struct PacketArena {
    slots: Box<[Slot]>,
    filler: Filler,
    wait: Wait,
    /// Times `acquire` found no free slot.
    waits: AtomicU64,
    /// Raised by [`close`](PacketArena::close): the consumers are gone, nothing will be released any more.
    closed: AtomicBool,
}

// SAFETY: a slot's bytes are written only by the filler while the slot is free or just filled and not yet handed
// out (`acquire` gives each free slot to the one filler, and `fill` is `unsafe` with that contract), and read only
// while the slot is in use; `release` (also `unsafe`) promises no reader remains. A slot's state orders the two: the
// filler publishes a fill with a release store of the slot's sequence number and a consumer reads it with an acquire
// load; the consumer frees it with a release store and the filler takes it with an acquire load. Borrowed bytes
// (`fill_kept`) are read under the same rules, and their owner keeps them unchanged until the slot is released.
unsafe impl Sync for PacketArena {}
// SAFETY: the only non-`Send` part is the pointer to borrowed bytes, which `fill_kept`'s caller keeps valid for
// whichever thread reads the slot (the arena itself is just as valid on another thread).
unsafe impl Send for PacketArena {}

impl std::fmt::Debug for PacketArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacketArena")
            .field("slots", &self.slots.len())
            .field("next_seq", &self.filler.next_seq.load(Relaxed))
            .finish()
    }
}

impl PacketArena {
    /// An arena of `slots` packet buffers (at least 1, at most 2^31).
    pub fn new(slots: usize) -> Self {
        let n = slots.clamp(1, 1 << 31);
        PacketArena {
            slots: (0..n)
                .map(|_| Slot {
                    seq: AtomicU64::new(FREE),
                    bytes: SlotCell::new(Bytes {
                        position: 0,
                        ts_ns: 0,
                        orig_len: 0,
                        interface: 0,
                        link_type: LinkType::RAW,
                        data: Vec::new(),
                        kept: (std::ptr::null(), 0),
                    }),
                })
                .collect(),
            filler: Filler {
                cursor: AtomicUsize::new(0),
                next_seq: AtomicU64::new(0),
            },
            wait: Wait {
                waiting: AtomicBool::new(false),
                awaited: AtomicU32::new(0),
                #[cfg(not(loom))]
                waiter: OnceLock::new(),
            },
            waits: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Closes the arena: the run that consumes its packets is being abandoned (a worker died), so no slot will be
    /// freed any more. A filler waiting in [`acquire`](Self::acquire) is woken and gets `None`, as does every later
    /// call, and whoever waits for the packets in flight to be released (see [`is_closed`](Self::is_closed)) must
    /// stop waiting. Callable from any thread, more than once.
    pub fn close(&self) {
        self.closed.store(true, SeqCst);
        #[cfg(not(loom))]
        if let Some(t) = self.wait.waiter.get() {
            t.unpark();
        }
    }

    /// Whether [`close`](Self::close) was called: a wait for slots to be released would never end.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Acquire)
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Times [`acquire`](Self::acquire) had to wait for a slot (the reader was ahead of the consumers).
    pub fn waits(&self) -> u64 {
        self.waits.load(Relaxed)
    }

    fn is_free(&self, i: usize) -> bool {
        self.slots
            .get(i)
            .is_some_and(|s| s.seq.load(Acquire) == FREE)
    }

    /// A free slot's index, or `None` at once when the cursor's slot and the [`SKIP`] after it are in use (a live
    /// source that must not wait counts the packet as dropped instead). Meant for the one filling thread, as
    /// [`acquire`](Self::acquire); the slot is the caller's until it fills it (and hands it on) or releases it.
    pub fn try_acquire(&self) -> Option<u32> {
        let n = self.slots.len();
        let c = self.filler.cursor.load(Relaxed);
        let i = (0..=SKIP.min(n - 1))
            .map(|k| (c + k) % n)
            .find(|&i| self.is_free(i))?;
        self.filler.cursor.store((i + 1) % n, Relaxed);
        Some(i as u32)
    }

    /// A free slot's index, waiting (parked) until a consumer frees one if none is free; `None` once the arena is
    /// [closed](Self::close) (the wait would never end). Meant for one thread (the reader): the thread that calls
    /// it first is the one releases wake.
    pub fn acquire(&self) -> Option<u32> {
        if self.is_closed() {
            return None;
        }
        if let Some(i) = self.try_acquire() {
            return Some(i);
        }
        self.waits.fetch_add(1, Relaxed);
        #[cfg(not(loom))]
        let mine = {
            let me = self.wait.waiter.get_or_init(std::thread::current);
            me.id() == std::thread::current().id()
        };
        loop {
            if self.is_closed() {
                return None;
            }
            // Wait for the slot half the ring ahead (see the module documentation): by the time it is free, so are
            // most before it.
            let n = self.slots.len();
            let c = self.filler.cursor.load(Relaxed);
            let awaited = (c + n / 2) % n;
            self.wait.awaited.store(awaited as u32, Relaxed);
            self.wait.waiting.store(true, SeqCst);
            let ready = self.slots[awaited].seq.load(SeqCst) == FREE;
            if ready || self.is_free(c) {
                self.wait.waiting.store(false, Relaxed);
                // Every slot from the cursor to the awaited one, in order: the first free one.
                if let Some(i) = (0..=n / 2).map(|k| (c + k) % n).find(|&i| self.is_free(i)) {
                    self.filler.cursor.store((i + 1) % n, Relaxed);
                    return Some(i as u32);
                }
                continue;
            }
            #[cfg(not(loom))]
            if mine {
                std::thread::park_timeout(ACQUIRE_PARK);
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
            // Under loom the wait yields (as `flowbundle-worker`'s broadcast does): the model checks the slot's
            // handover and that the filler never takes a slot in use, the wake-up is backed by the timeout.
            #[cfg(loom)]
            loom::thread::yield_now();
            self.wait.waiting.store(false, Relaxed);
            if let Some(i) = self.try_acquire() {
                return Some(i);
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
        let Some(slot) = self.slots.get(i as usize) else {
            return FREE;
        };
        // SAFETY: the caller holds slot `i` alone (it came from `acquire` and nobody reads a free slot).
        let b = unsafe { slot.bytes.get_mut() };
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
        self.number(&slot.seq)
    }

    /// Frees the copy slot `i` holds from an earlier [`fill`](Self::fill) (its buffer keeps the capacity of the
    /// largest packet it held), so that the next `fill` allocates afresh. For a filler that copies only now and then
    /// (a reader that keeps its records, [`fill_kept`](Self::fill_kept), copies only the datagrams it reassembles): a
    /// buffer it keeps per slot would otherwise stay as large as the largest datagram that slot ever held, and the
    /// longer the input, the more slots would hold one (up to every slot times a datagram's 64 KiB).
    ///
    /// # Safety
    /// As for [`fill`](Self::fill): the calling thread acquired slot `i` and holds it alone.
    pub unsafe fn shed_copy(&self, i: u32) {
        if let Some(slot) = self.slots.get(i as usize) {
            // SAFETY: the caller holds slot `i` alone.
            unsafe { slot.bytes.get_mut() }.data = Vec::new();
        }
    }

    /// Gives a just-filled slot (its state `seq_of`) the next sequence number.
    fn number(&self, seq_of: &AtomicU64) -> u64 {
        let seq = self.filler.next_seq.load(Relaxed);
        seq_of.store(seq, Release);
        self.filler.next_seq.store(seq + 1, Release);
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
        let slot = self.slots.get(i as usize)?;
        // SAFETY: the caller holds slot `i` alone (it came from `acquire` and nobody reads a free slot).
        let b = unsafe { slot.bytes.get_mut() };
        b.ts_ns = rec.ts_ns;
        b.orig_len = rec.orig_len;
        b.interface = rec.interface;
        b.link_type = rec.link_type;
        b.kept = (rec.data.as_ptr(), rec.data.len());
        let seq = self.number(&slot.seq);
        Some((seq, b.record()))
    }

    /// [`fill`](Self::fill), also giving the filled packet as [`record`](Self::record) would.
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
        let b = unsafe { slot.bytes.get() };
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
            unsafe { slot.bytes.get_mut() }.position = position;
        }
    }

    /// The input position of the packet in slot `i` (`None` when free); see [`set_position`](Self::set_position).
    pub fn position(&self, i: u32) -> Option<u64> {
        let slot = self.slots.get(i as usize)?;
        if slot.seq.load(Acquire) == FREE {
            return None;
        }
        // SAFETY: as in `record`.
        Some(unsafe { slot.bytes.get() }.position)
    }

    /// The packet in slot `i`, if it holds one. The record is valid until the slot is released.
    pub fn record(&self, i: u32) -> Option<PacketRecord<'_>> {
        let slot = self.slots.get(i as usize)?;
        if slot.seq.load(Acquire) == FREE {
            return None;
        }
        // SAFETY: the slot is in use: only `fill` (before it was handed out) writes it, and `release`'s caller
        // promises no record borrowed from it is still alive.
        let b = unsafe { slot.bytes.get() };
        Some(b.record())
    }

    /// The sequence number of the packet in slot `i` (`None` when free).
    pub fn seq(&self, i: u32) -> Option<u64> {
        let s = self.slots.get(i as usize)?.seq.load(Acquire);
        (s != FREE).then_some(s)
    }

    /// Gives slot `i` back, waking the filler if it waits for this slot.
    ///
    /// # Safety
    /// The caller is done with the slot: no [`record`](Self::record) borrowed from it is used afterwards, and the
    /// slot is released once per fill.
    pub unsafe fn release(&self, i: u32) {
        let Some(slot) = self.slots.get(i as usize) else {
            return;
        };
        // Sequentially consistent, with the load of the flag below: the handshake of the module documentation.
        slot.seq.store(FREE, SeqCst);
        if self.wait.waiting.load(SeqCst)
            && self.wait.awaited.load(Relaxed) == i
            && self.wait.waiting.swap(false, SeqCst)
        {
            #[cfg(not(loom))]
            if let Some(t) = self.wait.waiter.get() {
                t.unpark();
            }
        }
    }

    /// The sequence number of the oldest packet still in a slot, or the next one to be filled when every slot is
    /// free: every packet before it has been released. Reads every slot (a few microseconds for hundreds).
    pub fn oldest_in_flight(&self) -> u64 {
        // The next number first: every slot filled before it is then visible with its number or a later state.
        let next = self.filler.next_seq.load(Acquire);
        self.slots
            .iter()
            .map(|s| s.seq.load(Acquire))
            .fold(next, u64::min)
    }

    /// Packets filled so far.
    pub fn filled(&self) -> u64 {
        self.filler.next_seq.load(Acquire)
    }
}

#[cfg(all(test, not(loom)))]
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
        let i = a.acquire().unwrap();
        // SAFETY: `i` was just acquired by this thread.
        let s = unsafe { a.fill(i, &rec(b"abc", 7)) };
        assert_eq!(s, 0);
        let r = a.record(i).unwrap();
        assert_eq!((r.data, r.ts_ns), (&b"abc"[..], 7));
        let j = a.acquire().unwrap();
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
        let k = a.acquire().unwrap();
        assert!(k == i || k == j);
    }

    #[test]
    fn a_full_arena_waits_for_a_release() {
        let a = std::sync::Arc::new(PacketArena::new(1));
        let i = a.acquire().unwrap();
        // SAFETY: acquired here.
        unsafe { a.fill(i, &rec(b"x", 1)) };
        let b = std::sync::Arc::clone(&a);
        let t = std::thread::spawn(move || {
            // Released once the main thread waits for it (not after a delay, which a loaded machine may outlast
            // before the main thread even asks).
            while b.waits() == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            // SAFETY: the main thread reads nothing from the slot any more.
            unsafe { b.release(i) };
        });
        let j = a.acquire().unwrap();
        assert_eq!(j, i);
        assert!(a.waits() >= 1);
        t.join().unwrap();
    }

    #[test]
    fn acquire_hands_out_free_slots_only_whatever_order_they_were_freed_in() {
        let n = 16;
        let a = PacketArena::new(n);
        let mut held: Vec<u32> = Vec::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for round in 0..2_000u64 {
            // Fill while a slot is free near the cursor; then free a pseudo-random half of what is held.
            while let Some(i) = a.try_acquire() {
                assert!(a.seq(i).is_none(), "slot {i} handed out while in use");
                assert!(!held.contains(&i));
                // SAFETY: acquired here, not handed on.
                unsafe { a.fill(i, &rec(b"p", round)) };
                held.push(i);
            }
            assert!(!held.is_empty());
            held.retain(|&i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if state & 1 == 0 {
                    return true;
                }
                // SAFETY: no record of `i` is used after this; filled once.
                unsafe { a.release(i) };
                false
            });
        }
        for i in held {
            // SAFETY: as above.
            unsafe { a.release(i) };
        }
        assert_eq!(a.oldest_in_flight(), a.filled());
        // Every slot is free again: a full round of acquisitions finds each once.
        let mut all: Vec<u32> = (0..n).map(|_| a.try_acquire().unwrap()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..n as u32).collect::<Vec<_>>());
    }

    #[test]
    fn a_waiting_filler_is_woken_by_the_release_it_waits_for() {
        // Eight slots filled; once the filler waits (it finds the ring full), a consumer frees them one by one,
        // oldest first, a little apart. The filler gets a slot once they are freed, well before its park's timeout
        // could add up.
        let a = std::sync::Arc::new(PacketArena::new(8));
        for k in 0..8 {
            let i = a.acquire().unwrap();
            // SAFETY: acquired here.
            unsafe { a.fill(i, &rec(b"x", k)) };
        }
        let b = std::sync::Arc::clone(&a);
        let t = std::thread::spawn(move || {
            while b.waits() == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            for i in 0..8 {
                std::thread::sleep(Duration::from_millis(2));
                // SAFETY: the filler reads nothing from these slots.
                unsafe { b.release(i) };
            }
        });
        let i = a.acquire().unwrap();
        assert!(a.seq(i).is_none());
        assert!(a.waits() >= 1);
        t.join().unwrap();
    }

    #[test]
    fn closing_the_arena_ends_a_wait_for_a_slot_nobody_will_free() {
        // One slot, held by a consumer that died: the filler waits in `acquire` until another thread closes the
        // arena, then gets `None`, as does every later call. Without the close this test would never end.
        let a = std::sync::Arc::new(PacketArena::new(1));
        let i = a.acquire().unwrap();
        // SAFETY: acquired here.
        unsafe { a.fill(i, &rec(b"x", 1)) };
        let b = std::sync::Arc::clone(&a);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            b.close();
        });
        assert_eq!(a.acquire(), None);
        assert!(a.is_closed());
        assert_eq!(a.acquire(), None);
        t.join().unwrap();
    }
}

/// Model check of the slot handover (`scripts/loom`): a filler puts three packets through a ring of two slots to a
/// consumer that reads each and frees its slot, in every interleaving with at most three preemptions. The third
/// fill must wait for a release; loom fails the model if the filler can write a slot while the consumer may still
/// read it (the slot's bytes are loom cells), and the consumer checks it reads the packet it was handed.
#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::Arc;

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
    fn arena_never_refills_a_slot_before_its_consumer_released_it() {
        let mut builder = loom::model::Builder::new();
        if builder.preemption_bound.is_none() {
            builder.preemption_bound = Some(3);
        }
        builder.check(|| {
            let arena = Arc::new(PacketArena::new(2));
            let (tx, rx) = loom::sync::mpsc::channel::<(u32, u64)>();
            let consumer = {
                let arena = arena.clone();
                loom::thread::spawn(move || {
                    for k in 0..3u64 {
                        let (i, seq) = rx.recv().unwrap();
                        let r = arena
                            .record(i)
                            .expect("a handed-over slot holds its packet");
                        assert_eq!((r.ts_ns, r.data), (k, &[k as u8][..]));
                        assert_eq!(arena.seq(i), Some(seq));
                        // SAFETY: `r` is not used after this; the slot was filled once.
                        unsafe { arena.release(i) };
                    }
                })
            };
            for k in 0..3u64 {
                let i = arena.acquire().unwrap();
                // SAFETY: acquired by this thread, the only filler, and not handed on yet.
                let seq = unsafe { arena.fill(i, &rec(&[k as u8], k)) };
                tx.send((i, seq)).unwrap();
            }
            consumer.join().unwrap();
            assert_eq!(arena.oldest_in_flight(), 3);
        });
    }
}
