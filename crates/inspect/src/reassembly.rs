//! # TCP reassembly, per direction, in sequence order
//!
//! A [`Reassembler`] belongs to one TCP connection and turns its segments, in capture order, into two in-order byte
//! streams (one per [`KeySide`] of the flow key) delivered to a [`StreamSink`]. The engine's consumers (protocol
//! classifier, L7-filter signatures, application parser, content rules) all sit behind that sink, so they see each
//! byte of a direction once, in order, whatever the capture did to the segments.
//!
//! ## The path of a segment
//! * **In order** (the common case): the segment starts at the next expected byte. Its payload goes to the sink
//!   *straight from the packet* (no copy), then any buffered segment it made contiguous follows.
//! * **Retransmission or overlap with delivered data**: only the bytes past the next expected byte are new; the rest
//!   is dropped and counted (`retransmitted_bytes`). Delivered bytes are not kept, so they cannot be compared with
//!   the retransmitted copy: **first data wins**, as in PcapPlusPlus, Wireshark and Suricata's default policy.
//! * **Out of order** (a hole before it): the segment is copied into the direction's buffer, sorted by stream offset
//!   and kept disjoint: where it overlaps bytes already buffered, the buffered (earlier) bytes win, the overlap is
//!   counted (`overlap_bytes`) and, when the two copies differ, counted again (`overlap_differs`: an evasion attempt
//!   or a broken stack, since the receiving host may have kept either copy).
//!
//! ## When a hole is given up (a *gap*)
//! A hole that nothing fills would hold its direction's data for ever, so the buffered data is released past the
//! hole, and the sink told how many bytes are missing ([`StreamSink::gap`]; the `tcp.reassembly_gap` counter), when:
//! 1. **the other direction starts sending data** while this one has a hole (the rule of PcapPlusPlus and Wireshark:
//!    a response means the request was complete, so its hole is capture loss; [`ReassemblyConfig::flush_on_peer_data`]);
//! 2. **this direction sends FIN or RST** (nothing more is coming; a RST closes both directions);
//! 3. **a limit is passed**: more than [`ReassemblyConfig::max_segments`] segments or
//!    [`ReassemblyConfig::max_bytes`] bytes buffered in the direction: holes are skipped, oldest offset first, until
//!    it fits again (PcapPlusPlus's `maxOutOfOrderFragments`, plus a byte bound);
//! 4. **the global memcap is reached** ([`ReassemblyMemcap`], shared by every flow and worker): the segment that
//!    does not fit is not buffered; the direction skips to it and delivers it at once (`memcap_skips`);
//! 5. **time passes**: the oldest buffered segment is older than [`ReassemblyConfig::timeout_ns`], measured with the
//!    *flow's own* packet timestamps (never a wall clock, so the result does not depend on scheduling);
//! 6. **the connection closes** (FIN in both directions, RST, flow timeout, end of input: [`Reassembler::close`]).
//!
//! Rules 1, 2 and 6 are exactly PcapPlusPlus's `TcpReassembly`, and the tests replay its reference streams
//! (`shared/data/reassembly/*_output.txt`) byte for byte, rendering a gap the way PcapPlusPlus does
//! (`[N bytes missing]`). Like PcapPlusPlus, a direction that has sent FIN or RST is closed: later segments in it
//! are ignored and counted (`after_close`), even retransmissions that would fill a hole before the FIN.
//!
//! ## Sequence numbers
//! Sequence numbers are 32-bit and wrap; stream offsets are 64-bit counts of payload bytes from the start of the
//! direction. The first segment seen in a direction fixes the mapping: a SYN's sequence number plus one (the SYN
//! consumes a number but carries no stream byte), or, for a connection picked up mid-stream, the first data
//! segment's sequence number. Afterwards a segment's offset is the next expected offset plus the signed 32-bit
//! distance between their sequence numbers, which is correct across wraparound as long as a segment is within 2 GiB
//! of the expected byte. Data sent before the handshake completes (TCP Fast Open, or simply a capture that reorders
//! the handshake) is reassembled like any other. Pure ACKs (no payload, no SYN/FIN/RST) do not touch the reassembler.
//!
//! ## Cost and memory
//! In-order segments cost a few comparisons and one sink call, with no copy and no allocation. A [`Reassembler`] is
//! about 100 bytes; out-of-order segments cost one allocation each (their payload), bounded per direction by the
//! limits above and in total by the memcap, whose atomic counter is touched only when a segment is buffered or
//! released, never on the in-order path.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use flowbundle_decode::KeySide;
use flowbundle_decode::wire::tcp::flags;

/// What the reassembler needs to know about one TCP segment.
#[derive(Debug, Clone, Copy)]
pub struct Segment<'a> {
    pub seq: u32,
    /// TCP flag bits ([`flags`]).
    pub flags: u16,
    pub payload: &'a [u8],
    /// Capture time of the packet, for the buffer timeout and for the sink.
    pub ts_ns: u64,
}

impl Segment<'_> {
    fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }
}

/// Receives a connection's in-order bytes and the gaps between them.
pub trait StreamSink {
    /// Bytes of direction `dir` starting at stream offset `offset` (offsets of one direction are contiguous except
    /// across a gap). `ts_ns` is the capture time of the packet that carried them.
    fn data(&mut self, dir: KeySide, offset: u64, bytes: &[u8], ts_ns: u64);
    /// `len` bytes of direction `dir` starting at `offset` will never be delivered.
    fn gap(&mut self, dir: KeySide, offset: u64, len: u64);
}

/// Per-direction limits and the gap policy. One value is shared by every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyConfig {
    /// Most out-of-order segments buffered per direction (PcapPlusPlus's `maxOutOfOrderFragments`). Default 256.
    pub max_segments: usize,
    /// Most out-of-order bytes buffered per direction. Default 1 MiB.
    pub max_bytes: usize,
    /// Give up a direction's holes when the other direction sends data (PcapPlusPlus's and Wireshark's rule). Default
    /// on.
    pub flush_on_peer_data: bool,
    /// Give up a hole when the oldest segment waiting behind it was captured this long before the flow's latest
    /// packet. Default 60 s.
    pub timeout_ns: u64,
}

impl Default for ReassemblyConfig {
    fn default() -> Self {
        ReassemblyConfig {
            max_segments: 256,
            max_bytes: 1 << 20,
            flush_on_peer_data: true,
            timeout_ns: 60_000_000_000,
        }
    }
}

/// The global bound on buffered out-of-order bytes, shared by every connection of every worker. Its counter is
/// touched only when a segment is buffered or released.
#[derive(Debug)]
pub struct ReassemblyMemcap {
    held: AtomicUsize,
    cap: usize,
    peak: AtomicUsize,
    refused: AtomicU64,
}

impl ReassemblyMemcap {
    /// A memcap of `cap` bytes.
    pub fn new(cap: usize) -> Self {
        ReassemblyMemcap {
            held: AtomicUsize::new(0),
            cap,
            peak: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Reserves `n` bytes; false (nothing reserved) when that would pass the cap.
    pub fn try_reserve(&self, n: usize) -> bool {
        let before = self.held.fetch_add(n, Relaxed);
        if before.saturating_add(n) > self.cap {
            self.held.fetch_sub(n, Relaxed);
            self.refused.fetch_add(1, Relaxed);
            return false;
        }
        // Written only when it rises (a `fetch_max` writes the line whatever the value).
        if before + n > self.peak.load(Relaxed) {
            self.peak.fetch_max(before + n, Relaxed);
        }
        true
    }

    /// Gives back `n` reserved bytes.
    pub fn release(&self, n: usize) {
        self.held.fetch_sub(n, Relaxed);
    }

    /// Bytes buffered now, by all connections.
    pub fn held(&self) -> usize {
        self.held.load(Relaxed)
    }

    /// The most ever buffered at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Relaxed)
    }

    /// The cap.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Segments refused because the cap was reached.
    pub fn refused(&self) -> u64 {
        self.refused.load(Relaxed)
    }
}

pub use flowbundle_events::ReassemblyStats;

/// What happened to a segment (mostly for tests and counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentStatus {
    /// No payload and no SYN/FIN/RST: not reassembly's business.
    PureAck,
    /// Its new bytes (if any) were delivered.
    Delivered,
    /// Buffered behind a hole.
    Buffered,
    /// Nothing new in it (a retransmission, or data before the stream start).
    Old,
    /// Its direction or the connection was already closed.
    Closed,
    /// A FIN or RST without payload, handled.
    FinRst,
}

/// One buffered out-of-order segment: `[offset, offset + data.len())` of its direction's stream.
#[derive(Debug)]
struct Held {
    offset: u64,
    ts_ns: u64,
    data: Box<[u8]>,
}

impl Held {
    fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }
}

/// One direction of a connection.
#[derive(Debug, Default)]
struct Half {
    /// A first segment fixed `base`.
    seen: bool,
    /// FIN or RST seen: the direction is closed.
    closed: bool,
    /// Sequence number of stream offset 0.
    base: u32,
    /// Next expected stream offset (everything before it was delivered or given up).
    next: u64,
    /// Buffered segments, sorted by offset, pairwise disjoint, all at or beyond `next`.
    held: Vec<Held>,
    held_bytes: usize,
}

impl Half {
    /// The stream offset of sequence number `seq` (may be negative for bytes before the stream start).
    fn offset_of(&self, seq: u32) -> i128 {
        let expected = self.base.wrapping_add(self.next as u32);
        let delta = seq.wrapping_sub(expected) as i32;
        i128::from(self.next) + i128::from(delta)
    }

    fn oldest_ts(&self) -> Option<u64> {
        self.held.iter().map(|h| h.ts_ns).min()
    }
}

/// Both directions of one TCP connection. See the module documentation.
#[derive(Debug, Default)]
pub struct Reassembler {
    halves: [Half; 2],
    /// KeySide (index) of the previous segment that carried data or SYN: the peer-data rule compares with it.
    prev: Option<KeySide>,
    /// The direction seen first: flushing on close goes first-seen direction first, as PcapPlusPlus does.
    first: Option<KeySide>,
    /// FIN/RST in both directions, a RST, or [`Reassembler::close`]: nothing more is reassembled.
    closed: bool,
}

/// Everything a [`Reassembler`] call needs besides the segment: limits, the memcap, counters and the sink.
pub struct Ctx<'a, S: StreamSink + ?Sized> {
    pub cfg: &'a ReassemblyConfig,
    pub memcap: &'a ReassemblyMemcap,
    pub stats: &'a mut ReassemblyStats,
    pub sink: &'a mut S,
}

impl Reassembler {
    /// A reassembler for a new connection.
    pub fn new() -> Self {
        Reassembler::default()
    }

    /// Whether the connection is closed for reassembly (FIN/RST both ways, a RST, or [`Reassembler::close`]).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Whether direction `dir` has seen FIN or RST.
    pub fn dir_closed(&self, dir: KeySide) -> bool {
        self.halves[dir.index()].closed
    }

    /// Out-of-order bytes buffered now in both directions.
    pub fn held_bytes(&self) -> usize {
        self.halves.iter().map(|h| h.held_bytes).sum()
    }

    /// Next expected stream offset of `dir` (bytes delivered or given up so far).
    pub fn next_offset(&self, dir: KeySide) -> u64 {
        self.halves[dir.index()].next
    }

    /// The sequence number of stream offset `offset` of direction `dir` (modulo 2^32), once its first segment
    /// fixed the mapping.
    pub fn seq_at(&self, dir: KeySide, offset: u64) -> Option<u32> {
        let h = &self.halves[dir.index()];
        h.seen.then(|| h.base.wrapping_add(offset as u32))
    }

    /// Handles one segment of direction `dir`, captured in order with the connection's other packets.
    pub fn segment<S: StreamSink + ?Sized>(
        &mut self,
        dir: KeySide,
        seg: &Segment<'_>,
        cx: &mut Ctx<'_, S>,
    ) -> SegmentStatus {
        let fin_rst = seg.has(flags::FIN) || seg.has(flags::RST);
        let syn = seg.has(flags::SYN);
        if seg.payload.is_empty() && !syn && !fin_rst {
            return SegmentStatus::PureAck;
        }
        cx.stats.segments += 1;
        if self.closed {
            cx.stats.after_close += 1;
            return SegmentStatus::Closed;
        }
        let d = dir.index();
        let other = dir.flip();
        if self.halves[d].closed {
            // A RST on a direction that already sent FIN closes the other one too (PcapPlusPlus does the same).
            if seg.has(flags::RST) && !self.halves[other.index()].closed {
                self.fin_rst(other, true, cx);
                return SegmentStatus::FinRst;
            }
            cx.stats.after_close += 1;
            return SegmentStatus::Closed;
        }
        self.timeout_check(seg.ts_ns, cx);
        if fin_rst && seg.payload.is_empty() {
            self.fin_rst(dir, seg.has(flags::RST), cx);
            return SegmentStatus::FinRst;
        }
        let first = !self.halves[d].seen;
        if cx.cfg.flush_on_peer_data
            && !first
            && !seg.payload.is_empty()
            && self.prev == Some(other)
            && !self.halves[other.index()].held.is_empty()
        {
            self.flush(other, cx);
        }
        self.prev = Some(dir);
        self.first.get_or_insert(dir);

        let status = if first {
            let h = &mut self.halves[d];
            h.seen = true;
            h.base = seg.seq.wrapping_add(u32::from(syn));
            h.next = 0;
            if !seg.payload.is_empty() {
                self.deliver(dir, 0, seg.payload, seg.ts_ns, cx);
            }
            SegmentStatus::Delivered
        } else {
            self.place(dir, seg, syn, cx)
        };
        if fin_rst {
            self.fin_rst(dir, seg.has(flags::RST), cx);
        }
        status
    }

    /// A segment of an already started direction.
    fn place<S: StreamSink + ?Sized>(
        &mut self,
        dir: KeySide,
        seg: &Segment<'_>,
        syn: bool,
        cx: &mut Ctx<'_, S>,
    ) -> SegmentStatus {
        let d = dir.index();
        let h = &mut self.halves[d];
        let start = h.offset_of(seg.seq);
        if syn && start == i128::from(h.next) {
            // A SYN at the expected number (a direction first seen through data, then its SYN): it consumes one
            // sequence number, no stream byte; its payload, if any, starts at the next number, which is `next`
            // once `base` moves.
            h.base = h.base.wrapping_add(1);
        }
        let next = i128::from(h.next);
        let end = start + seg.payload.len() as i128;
        if seg.payload.is_empty() {
            return SegmentStatus::Old;
        }
        if end <= next {
            if end <= 0 {
                cx.stats.before_start += 1;
            } else {
                cx.stats.retransmitted_bytes += seg.payload.len() as u64;
            }
            return SegmentStatus::Old;
        }
        if start <= next {
            // In order, possibly with a retransmitted head.
            let skip = (next - start) as usize;
            cx.stats.retransmitted_bytes += skip as u64;
            let next = h.next;
            let bytes = seg.payload.get(skip..).unwrap_or(&[]);
            self.deliver(dir, next, bytes, seg.ts_ns, cx);
            return SegmentStatus::Delivered;
        }
        // Beyond a hole: buffer (start > next >= 0, so the offset is positive).
        self.buffer(dir, start as u64, seg.payload, seg.ts_ns, cx)
    }

    /// Delivers `bytes` at `offset == next` of direction `dir`, interleaved with buffered segments that overlap or
    /// follow them (buffered bytes were there first, so they win), then drains what became contiguous.
    fn deliver<S: StreamSink + ?Sized>(
        &mut self,
        dir: KeySide,
        offset: u64,
        bytes: &[u8],
        ts_ns: u64,
        cx: &mut Ctx<'_, S>,
    ) {
        let d = dir.index();
        let end = offset + bytes.len() as u64;
        let mut cur = offset;
        loop {
            // Buffered segments that start at or before `cur` go first.
            self.drain(dir, cx);
            let h = &mut self.halves[d];
            cur = cur.max(h.next);
            if cur >= end {
                break;
            }
            let stop = h.held.first().map_or(end, |s| s.offset.min(end));
            let from = (cur - offset) as usize;
            let to = (stop - offset) as usize;
            if let Some(piece) = bytes.get(from..to)
                && !piece.is_empty()
            {
                h.next = stop;
                cx.stats.bytes_delivered += piece.len() as u64;
                cx.sink.data(dir, cur, piece, ts_ns);
            }
            // The packet's bytes under the next buffered segment lose to it: compare them while both exist.
            if stop < end
                && let Some(s) = self.halves[d].held.first()
            {
                let ov_end = s.end().min(end);
                let (a, b) = (
                    s.data.get(..(ov_end - s.offset) as usize).unwrap_or(&[]),
                    bytes
                        .get((s.offset - offset) as usize..(ov_end - offset) as usize)
                        .unwrap_or(&[]),
                );
                cx.stats.overlap_bytes += a.len() as u64;
                if a != b {
                    cx.stats.overlap_differs += 1;
                }
            }
            cur = stop;
        }
        self.drain(dir, cx);
    }

    /// Delivers buffered segments that start at or before the next expected offset (their new bytes only).
    fn drain<S: StreamSink + ?Sized>(&mut self, dir: KeySide, cx: &mut Ctx<'_, S>) {
        let h = &mut self.halves[dir.index()];
        while h.held.first().is_some_and(|s| s.offset <= h.next) {
            let s = h.held.remove(0);
            h.held_bytes -= s.data.len();
            cx.memcap.release(s.data.len());
            if s.end() > h.next {
                let skip = (h.next - s.offset) as usize;
                let piece = s.data.get(skip..).unwrap_or(&[]);
                let at = h.next;
                h.next = s.end();
                cx.stats.bytes_delivered += piece.len() as u64;
                cx.sink.data(dir, at, piece, s.ts_ns);
            } else {
                cx.stats.retransmitted_bytes += s.data.len() as u64;
            }
        }
    }

    /// Buffers a segment `[start, start + payload.len())` beyond the hole at `next`, keeping the buffer disjoint
    /// (earlier bytes win), then enforces the per-direction limits.
    fn buffer<S: StreamSink + ?Sized>(
        &mut self,
        dir: KeySide,
        start: u64,
        payload: &[u8],
        ts_ns: u64,
        cx: &mut Ctx<'_, S>,
    ) -> SegmentStatus {
        let d = dir.index();
        let end = start + payload.len() as u64;
        // Pieces of [start, end) not covered by buffered segments.
        let mut pieces: [(u64, u64); 4] = [(0, 0); 4];
        let mut n_pieces = 0;
        let mut overflow: Vec<(u64, u64)> = Vec::new();
        {
            let h = &self.halves[d];
            let mut cur = start;
            for s in h.held.iter() {
                if s.end() <= cur {
                    continue;
                }
                if s.offset >= end {
                    break;
                }
                if s.offset > cur {
                    push_piece(&mut pieces, &mut n_pieces, &mut overflow, (cur, s.offset));
                }
                // Overlap [max(cur, s.offset), min(end, s.end())).
                let (o1, o2) = (cur.max(s.offset), end.min(s.end()));
                let kept = s
                    .data
                    .get((o1 - s.offset) as usize..(o2 - s.offset) as usize)
                    .unwrap_or(&[]);
                let new = payload
                    .get((o1 - start) as usize..(o2 - start) as usize)
                    .unwrap_or(&[]);
                cx.stats.overlap_bytes += kept.len() as u64;
                if kept != new {
                    cx.stats.overlap_differs += 1;
                }
                cur = s.end();
                if cur >= end {
                    break;
                }
            }
            if cur < end {
                push_piece(&mut pieces, &mut n_pieces, &mut overflow, (cur, end));
            }
        }
        let all: Vec<(u64, u64)> = pieces[..n_pieces].iter().copied().chain(overflow).collect();
        if all.is_empty() {
            return SegmentStatus::Old;
        }
        let mut refused = false;
        for &(a, b) in &all {
            let len = (b - a) as usize;
            if !cx.memcap.try_reserve(len) {
                refused = true;
                break;
            }
            let data: Box<[u8]> = payload
                .get((a - start) as usize..(b - start) as usize)
                .unwrap_or(&[])
                .into();
            let h = &mut self.halves[d];
            let at = h.held.partition_point(|s| s.offset < a);
            h.held.insert(
                at,
                Held {
                    offset: a,
                    ts_ns,
                    data,
                },
            );
            h.held_bytes += len;
        }
        if refused {
            // The memcap is full: give up the holes before this segment and deliver it unbuffered.
            cx.stats.memcap_skips += 1;
            self.skip_to(dir, start, cx);
            let next = self.halves[d].next;
            if next < end {
                let from = (next.max(start) - start) as usize;
                let at = next.max(start);
                self.deliver(dir, at, payload.get(from..).unwrap_or(&[]), ts_ns, cx);
            }
            return SegmentStatus::Delivered;
        }
        cx.stats.segments_buffered += 1;
        // Per-direction limits: skip holes, oldest offset first, until the buffer fits.
        loop {
            let h = &self.halves[d];
            if h.held.len() <= cx.cfg.max_segments && h.held_bytes <= cx.cfg.max_bytes {
                break;
            }
            let Some(first) = h.held.first().map(|s| s.offset) else {
                break;
            };
            cx.stats.limit_skips += 1;
            self.skip_to(dir, first, cx);
        }
        SegmentStatus::Buffered
    }

    /// Gives up the hole(s) of `dir` before stream offset `to`: a gap up to the first buffered segment at or beyond
    /// the hole, delivery of what follows, repeated until `next >= to` or nothing is buffered.
    fn skip_to<S: StreamSink + ?Sized>(&mut self, dir: KeySide, to: u64, cx: &mut Ctx<'_, S>) {
        loop {
            self.drain(dir, cx);
            let h = &mut self.halves[dir.index()];
            if h.next >= to {
                return;
            }
            let target = h.held.first().map_or(to, |s| s.offset.min(to));
            if target > h.next {
                let (at, len) = (h.next, target - h.next);
                h.next = target;
                cx.stats.gaps += 1;
                cx.stats.gap_bytes += len;
                cx.sink.gap(dir, at, len);
            }
        }
    }

    /// Gives up every hole of `dir`, delivering all it buffered.
    fn flush<S: StreamSink + ?Sized>(&mut self, dir: KeySide, cx: &mut Ctx<'_, S>) {
        while let Some(last) = self.halves[dir.index()].held.last().map(Held::end) {
            self.skip_to(dir, last, cx);
        }
    }

    /// FIN or RST in `dir`: the direction closes and gives up its holes; with both directions closed, or on a RST,
    /// the connection closes.
    fn fin_rst<S: StreamSink + ?Sized>(&mut self, dir: KeySide, rst: bool, cx: &mut Ctx<'_, S>) {
        let d = dir.index();
        if self.halves[d].closed {
            return;
        }
        self.halves[d].closed = true;
        if self.halves[dir.flip().index()].closed {
            self.close(cx);
            return;
        }
        self.flush(dir, cx);
        if rst {
            self.close(cx);
        }
    }

    /// The buffer timeout, checked with the current packet's capture time.
    fn timeout_check<S: StreamSink + ?Sized>(&mut self, now_ns: u64, cx: &mut Ctx<'_, S>) {
        for dir in [KeySide::Forward, KeySide::Reverse] {
            let h = &self.halves[dir.index()];
            if h.held.is_empty() {
                continue;
            }
            if h.oldest_ts()
                .is_some_and(|t| now_ns.saturating_sub(t) > cx.cfg.timeout_ns)
            {
                cx.stats.timeout_skips += 1;
                self.flush(dir, cx);
            }
        }
    }

    /// Closes the connection: gives up every hole (first-seen direction first) and ignores further segments. Call it
    /// when the flow ends for any reason, so that buffered data reaches the sink and the memcap is released.
    pub fn close<S: StreamSink + ?Sized>(&mut self, cx: &mut Ctx<'_, S>) {
        if self.closed {
            return;
        }
        let first = self.first.unwrap_or(KeySide::Forward);
        self.flush(first, cx);
        self.flush(first.flip(), cx);
        self.closed = true;
    }

    /// Drops buffered data without delivering it (a flow evicted under memory pressure), releasing the memcap.
    pub fn discard(&mut self, memcap: &ReassemblyMemcap) {
        for h in &mut self.halves {
            memcap.release(h.held_bytes);
            h.held.clear();
            h.held_bytes = 0;
        }
        self.closed = true;
    }
}

fn push_piece(
    pieces: &mut [(u64, u64); 4],
    n: &mut usize,
    overflow: &mut Vec<(u64, u64)>,
    p: (u64, u64),
) {
    if let Some(slot) = pieces.get_mut(*n) {
        *slot = p;
        *n += 1;
    } else {
        overflow.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowbundle_decode::KeySide::{Forward as F, Reverse as R};

    /// Renders a connection's output the way PcapPlusPlus's tests do: both directions' chunks in delivery order,
    /// gaps as `[N bytes missing]`.
    #[derive(Default)]
    struct Render {
        out: Vec<u8>,
        per_dir: [Vec<u8>; 2],
        gaps: Vec<(KeySide, u64, u64)>,
        offsets_ok: bool,
        expect: [u64; 2],
    }

    impl StreamSink for Render {
        fn data(&mut self, dir: KeySide, offset: u64, bytes: &[u8], _ts: u64) {
            if offset != self.expect[dir.index()] {
                self.offsets_ok = false;
            }
            self.expect[dir.index()] = offset + bytes.len() as u64;
            self.out.extend_from_slice(bytes);
            self.per_dir[dir.index()].extend_from_slice(bytes);
        }
        fn gap(&mut self, dir: KeySide, offset: u64, len: u64) {
            if offset != self.expect[dir.index()] {
                self.offsets_ok = false;
            }
            self.expect[dir.index()] = offset + len;
            self.out
                .extend_from_slice(format!("[{len} bytes missing]").as_bytes());
            self.gaps.push((dir, offset, len));
        }
    }

    struct Bench {
        r: Reassembler,
        cfg: ReassemblyConfig,
        memcap: ReassemblyMemcap,
        stats: ReassemblyStats,
        sink: Render,
    }

    impl Bench {
        fn new(cfg: ReassemblyConfig, cap: usize) -> Self {
            Bench {
                r: Reassembler::new(),
                cfg,
                memcap: ReassemblyMemcap::new(cap),
                stats: ReassemblyStats::default(),
                sink: Render {
                    offsets_ok: true,
                    ..Render::default()
                },
            }
        }
        fn seg(&mut self, dir: KeySide, seq: u32, fl: u16, data: &[u8]) -> SegmentStatus {
            self.seg_at(dir, seq, fl, data, 0)
        }
        fn seg_at(
            &mut self,
            dir: KeySide,
            seq: u32,
            fl: u16,
            data: &[u8],
            ts: u64,
        ) -> SegmentStatus {
            let mut cx = Ctx {
                cfg: &self.cfg,
                memcap: &self.memcap,
                stats: &mut self.stats,
                sink: &mut self.sink,
            };
            self.r.segment(
                dir,
                &Segment {
                    seq,
                    flags: fl,
                    payload: data,
                    ts_ns: ts,
                },
                &mut cx,
            )
        }
        fn close(&mut self) {
            let mut cx = Ctx {
                cfg: &self.cfg,
                memcap: &self.memcap,
                stats: &mut self.stats,
                sink: &mut self.sink,
            };
            self.r.close(&mut cx);
        }
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.sink.out).into_owned()
        }
    }

    const A: u16 = flags::ACK;
    const S: u16 = flags::SYN;

    fn bench() -> Bench {
        Bench::new(ReassemblyConfig::default(), 1 << 20)
    }

    #[test]
    fn in_order_after_handshake_and_syn_consumes_one_number() {
        let mut b = bench();
        b.seg(F, 999, S, b"");
        b.seg(R, 4999, S | A, b"");
        assert_eq!(b.seg(F, 1000, A, b""), SegmentStatus::PureAck);
        assert_eq!(b.seg(F, 1000, A, b"hello "), SegmentStatus::Delivered);
        b.seg(F, 1006, A, b"world");
        b.seg(R, 5000, A, b"ok");
        assert_eq!(b.text(), "hello worldok");
        assert_eq!(b.r.next_offset(F), 11);
        assert!(b.sink.offsets_ok);
    }

    #[test]
    fn out_of_order_waits_for_the_hole_then_drains() {
        let mut b = bench();
        b.seg(F, 0, A, b"abc");
        assert_eq!(b.seg(F, 6, A, b"ghi"), SegmentStatus::Buffered);
        assert_eq!(b.seg(F, 9, A, b"jkl"), SegmentStatus::Buffered);
        assert_eq!(b.r.held_bytes(), 6);
        assert_eq!(b.memcap.held(), 6);
        b.seg(F, 3, A, b"def");
        assert_eq!(b.text(), "abcdefghijkl");
        assert_eq!(b.r.held_bytes(), 0);
        assert_eq!(b.memcap.held(), 0);
        assert_eq!(b.stats.gaps, 0);
        assert!(b.sink.offsets_ok);
    }

    #[test]
    fn first_data_wins_and_differing_overlaps_are_counted() {
        let mut b = bench();
        b.seg(F, 0, A, b"0123");
        // Buffered [6, 10) "6789".
        b.seg(F, 6, A, b"6789");
        // Another copy of [8, 12) with different bytes: [8, 10) loses, [10, 12) is new.
        b.seg(F, 8, A, b"XXab");
        assert_eq!(b.stats.overlap_bytes, 2);
        assert_eq!(b.stats.overlap_differs, 1);
        // The hole [4, 6) filled by a segment running over buffered bytes: buffered bytes win.
        b.seg(F, 4, A, b"45YY");
        assert_eq!(b.text(), "0123456789ab");
        assert_eq!(b.stats.overlap_differs, 2);
        // A retransmission of delivered bytes with one new byte.
        b.seg(F, 10, A, b"abc");
        assert_eq!(b.text(), "0123456789abc");
        assert_eq!(b.stats.retransmitted_bytes, 2);
        assert!(b.sink.offsets_ok);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut b = bench();
        let isn = u32::MAX - 3;
        b.seg(F, isn, S, b"");
        b.seg(F, isn.wrapping_add(1), A, b"abc");
        // Crosses 2^32: seq MAX-3+1+3 = MAX+1 = 0.
        b.seg(F, 3, A, b"ghi");
        b.seg(F, 0, A, b"def");
        assert_eq!(b.text(), "abcdefghi");
        assert_eq!(b.r.next_offset(F), 9);
    }

    #[test]
    fn peer_data_gives_up_the_hole() {
        let mut b = bench();
        b.seg(R, 6, S | A, b"");
        b.seg(F, 100, A, b"GET ");
        b.seg(F, 110, A, b"tail");
        b.seg(R, 7, A, b"HTTP");
        assert_eq!(b.text(), "GET [6 bytes missing]tailHTTP");
        assert_eq!(b.stats.gaps, 1);
        assert_eq!(b.sink.gaps, vec![(F, 4, 6)]);
        // The late bytes are old now.
        assert_eq!(b.seg(F, 104, A, b"abcdef"), SegmentStatus::Old);
    }

    #[test]
    fn without_the_peer_rule_holes_wait() {
        let mut b = Bench::new(
            ReassemblyConfig {
                flush_on_peer_data: false,
                ..ReassemblyConfig::default()
            },
            1 << 20,
        );
        b.seg(F, 100, A, b"GET ");
        b.seg(F, 110, A, b"tail");
        b.seg(R, 7, A, b"HTTP");
        b.seg(F, 104, A, b"abcdef");
        assert_eq!(b.text(), "GET HTTPabcdeftail");
    }

    #[test]
    fn fin_closes_a_direction_and_rst_closes_both() {
        let mut b = bench();
        b.seg(F, 0, A, b"ab");
        b.seg(F, 5, A, b"f");
        assert_eq!(b.seg(F, 6, flags::FIN | A, b""), SegmentStatus::FinRst);
        assert_eq!(b.text(), "ab[3 bytes missing]f");
        assert_eq!(b.seg(F, 2, A, b"cde"), SegmentStatus::Closed);
        assert!(!b.r.is_closed());
        b.seg(R, 0, A, b"x");
        b.seg(R, 3, A, b"z");
        assert_eq!(b.seg(R, 4, flags::RST, b""), SegmentStatus::FinRst);
        assert!(b.r.is_closed());
        assert_eq!(b.text(), "ab[3 bytes missing]fx[2 bytes missing]z");
        assert_eq!(b.stats.after_close, 1);
    }

    #[test]
    fn limits_skip_holes_oldest_first() {
        let mut b = Bench::new(
            ReassemblyConfig {
                max_segments: 2,
                ..ReassemblyConfig::default()
            },
            1 << 20,
        );
        b.seg(F, 0, A, b"a");
        b.seg(F, 2, A, b"c");
        b.seg(F, 4, A, b"e");
        assert_eq!(b.text(), "a");
        b.seg(F, 6, A, b"g");
        assert_eq!(b.text(), "a[1 bytes missing]c");
        assert_eq!(b.stats.limit_skips, 1);
        assert_eq!(b.r.held_bytes(), 2);

        let mut b = Bench::new(
            ReassemblyConfig {
                max_bytes: 4,
                ..ReassemblyConfig::default()
            },
            1 << 20,
        );
        b.seg(F, 0, A, b"a");
        b.seg(F, 2, A, b"cde");
        b.seg(F, 10, A, b"klm");
        assert_eq!(b.text(), "a[1 bytes missing]cde");
        assert_eq!(b.r.held_bytes(), 3);
    }

    #[test]
    fn memcap_refuses_and_delivers_unbuffered() {
        let mut b = Bench::new(ReassemblyConfig::default(), 4);
        b.seg(F, 0, A, b"a");
        b.seg(F, 2, A, b"cde");
        assert_eq!(b.memcap.held(), 3);
        assert_eq!(b.seg(F, 10, A, b"klm"), SegmentStatus::Delivered);
        assert_eq!(b.text(), "a[1 bytes missing]cde[5 bytes missing]klm");
        assert_eq!(b.stats.memcap_skips, 1);
        assert_eq!(b.memcap.held(), 0);
        assert_eq!(b.memcap.refused(), 1);
    }

    #[test]
    fn timeout_is_flow_time() {
        let mut b = Bench::new(
            ReassemblyConfig {
                timeout_ns: 10,
                ..ReassemblyConfig::default()
            },
            1 << 20,
        );
        b.seg_at(F, 0, A, b"a", 0);
        b.seg_at(F, 2, A, b"c", 5);
        b.seg_at(F, 2, A, b"c", 15);
        assert_eq!(b.text(), "a");
        b.seg_at(F, 4, A, b"e", 16);
        assert_eq!(b.text(), "a[1 bytes missing]c");
        assert_eq!(b.stats.timeout_skips, 1);
    }

    #[test]
    fn close_flushes_first_seen_direction_first_and_discard_releases() {
        let mut b = bench();
        b.seg(R, 0, A, b"r");
        b.seg(R, 2, A, b"R");
        // The first segment of a direction does not trigger the peer rule (as in PcapPlusPlus).
        b.seg(F, 0, A, b"f");
        b.seg(F, 5, A, b"F");
        assert_eq!(b.text(), "rf");
        b.close();
        assert_eq!(b.text(), "rf[1 bytes missing]R[4 bytes missing]F");
        let mut b = bench();
        b.seg(F, 0, A, b"f");
        b.seg(F, 5, A, b"F");
        assert_eq!(b.memcap.held(), 1);
        b.r.discard(&b.memcap);
        assert_eq!(b.memcap.held(), 0);
        assert_eq!(b.text(), "f");
    }

    #[test]
    fn data_before_the_stream_start_is_ignored() {
        let mut b = bench();
        b.seg(F, 100, S, b"");
        b.seg(F, 90, A, b"0123456789");
        assert_eq!(b.stats.before_start, 1);
        b.seg(F, 95, A, b"01234567");
        assert_eq!(b.text(), "67");
    }

    proptest::proptest! {
        /// Any permutation of a stream's segments (with duplicates) yields the stream once every hole is filled,
        /// with the peer rule off: out-of-order data waits, in any order.
        #[test]
        fn any_order_reassembles(
            cuts in proptest::collection::vec(1usize..200, 1..20),
            order in proptest::collection::vec(0usize..1000, 1..40),
            isn in proptest::prelude::any::<u32>(),
        ) {
            let data: Vec<u8> = (0..cuts.iter().sum::<usize>()).map(|i| (i * 7 % 251) as u8).collect();
            let mut segs = Vec::new();
            let mut at = 0;
            for c in &cuts {
                segs.push((at, at + c));
                at += c;
            }
            let mut b = Bench::new(ReassemblyConfig { flush_on_peer_data: false, ..ReassemblyConfig::default() }, 1 << 30);
            b.seg(F, isn, S, b"");
            let seq = |o: usize| isn.wrapping_add(1).wrapping_add(o as u32);
            for &i in &order {
                let (s, e) = segs[i % segs.len()];
                b.seg(F, seq(s), A, &data[s..e]);
            }
            for &(s, e) in &segs {
                b.seg(F, seq(s), A, &data[s..e]);
            }
            proptest::prop_assert_eq!(&b.sink.per_dir[0], &data);
            proptest::prop_assert_eq!(b.memcap.held(), 0);
            proptest::prop_assert!(b.sink.offsets_ok);
        }

        /// Arbitrary segments never panic, offsets stay contiguous, and the memcap accounting returns to zero.
        #[test]
        fn arbitrary_segments_are_safe(
            segs in proptest::collection::vec((0u8..2, proptest::prelude::any::<u32>(), 0u16..0x20, proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)), 0..60),
            max_segments in 1usize..8,
        ) {
            let mut b = Bench::new(ReassemblyConfig { max_segments, max_bytes: 200, ..ReassemblyConfig::default() }, 300);
            for (d, seq, fl, data) in &segs {
                let dir = if *d == 0 { F } else { R };
                // Keep sequence numbers near each other half the time so segments interact.
                let seq = if seq % 2 == 0 { seq % 400 } else { *seq };
                b.seg(dir, seq, *fl, data);
                proptest::prop_assert!(b.r.halves.iter().all(|h| h.held.len() <= max_segments && h.held_bytes <= 200));
            }
            b.close();
            proptest::prop_assert_eq!(b.memcap.held(), 0);
            proptest::prop_assert!(b.sink.offsets_ok);
        }
    }
}
