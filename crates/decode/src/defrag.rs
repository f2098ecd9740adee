//! # IP defragmentation (IPv4 and IPv6), before scheduling
//!
//! `ARCHITECTURE.md` puts defragmentation in the decode stage, as Suricata does in its capture threads: only the
//! first fragment carries the ports, and every scheduler must see a datagram's real flow key. [`Defragmenter`]
//! takes decoded packets in capture order and gives back, when a fragment completes a datagram, the whole datagram
//! as a raw IP packet (decode it with `LinkType::RAW`).
//!
//! ## Memory and time are bounded
//! * at most [`DefragConfig::max_datagrams`] datagrams in progress: a new one evicts the oldest (counted);
//! * at most [`DefragConfig::max_bytes`] buffered bytes in total (oldest datagrams are evicted to make room, a
//!   datagram that cannot fit alone is dropped) and [`DefragConfig::max_datagram_bytes`] per datagram;
//! * at most [`DefragConfig::max_fragments`] fragments per datagram (a flood of 8-byte fragments costs range
//!   bookkeeping, not just bytes);
//! * datagrams older than [`DefragConfig::timeout_ns`] of *capture time* (the packets' timestamps, never the wall
//!   clock, so a replayed trace behaves as it did live) are dropped.
//!
//! Every drop has a counter in [`DefragStats`]. Allocation happens per fragmented *datagram* (its buffer), never per
//! packet: buffers of finished datagrams go back to a small pool and the output buffer is reused.
//!
//! ## Overlaps
//! Overlapping fragments are how IDS evasion works (Ptacek & Newsham 1998): if the monitor and the end host keep
//! different bytes, the monitor inspects a datagram the host never sees. [`OverlapPolicy::First`] (the default)
//! keeps the bytes that arrived first, as Windows, Solaris and, for complete overlaps, Linux do, and as PcapPlusPlus
//! does. Every overlap is counted (`overlaps`), and overlaps whose bytes *differ* are counted again
//! (`inconsistent_overlaps`): identical retransmitted fragments are benign, differing ones are an attack or a
//! broken stack. [`OverlapPolicy::RejectInconsistent`] drops the datagram on a differing overlap, which is the
//! safe choice for an IDS that cannot know which copy the host kept (Suricata's `defrag` rejects such datagrams
//! with an event for the same reason). [`OverlapPolicy::Last`] keeps the newest bytes (the old BSD-right behaviour).
//!
//! ## Other rules
//! A fragment with more-fragments set whose length is not a multiple of 8, or empty, is invalid (RFC 791, RFC
//! 8200) and dropped. A datagram whose reassembled length would exceed 65,535 bytes, or whose last fragment
//! disagrees with another last fragment or with data beyond it, is dropped. A fragment captured shorter than its
//! IP length (snap length) cannot be reassembled and is dropped. IPv6 datagrams are keyed by (source,
//! destination, identification), IPv4 by (source, destination, protocol, identification).
//!
//! ## Output
//! IPv4: the first fragment's header (options included) with the flags and offset cleared, the total
//! length set and the checksum recomputed. IPv6: the first fragment's unfragmentable part with the fragment header
//! removed, the Next Header that announced it set to the fragment header's Next Header, and the payload length
//! set. This is byte for byte what PcapPlusPlus' `IPReassembly` produces (tests compare against its reference
//! output in `shared/data/reassembly`).

use std::collections::VecDeque;

use flowbundle_types::{DecodeEvent, DecodeEvents};
use hashbrown::HashMap;

use crate::decode::Decoded;
use crate::wire::{ipv4, put16};

/// What to keep when fragments overlap. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverlapPolicy {
    /// Bytes that arrived first win.
    #[default]
    First,
    /// Bytes that arrived last win.
    Last,
    /// First wins, but a differing overlap drops the whole datagram.
    RejectInconsistent,
}

/// Limits and policy of a [`Defragmenter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefragConfig {
    /// Datagrams in progress at once. Default 4,096.
    pub max_datagrams: usize,
    /// Bytes buffered across all datagrams (header plus data span). Default 32 MiB.
    pub max_bytes: usize,
    /// Bytes per datagram (data span). Default and maximum 65,535.
    pub max_datagram_bytes: usize,
    /// Fragments per datagram. Default 256.
    pub max_fragments: u16,
    /// Capture-time timeout from a datagram's first fragment. Default 30 s (Linux's `ipfrag_time`).
    pub timeout_ns: u64,
    pub policy: OverlapPolicy,
}

impl Default for DefragConfig {
    fn default() -> Self {
        DefragConfig {
            max_datagrams: 4096,
            max_bytes: 32 << 20,
            max_datagram_bytes: 65_535,
            max_fragments: 256,
            timeout_ns: 30_000_000_000,
            policy: OverlapPolicy::First,
        }
    }
}

/// Why a fragment (and, except for `Truncated` and `BadLength`, its whole datagram) was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DefragDrop {
    /// The fragment was captured shorter than its IP length.
    Truncated,
    /// A more-fragments fragment that is empty or not a multiple of 8 bytes long.
    BadLength,
    /// The datagram would exceed 65,535 bytes or `max_datagram_bytes`.
    TooLarge,
    /// Two last fragments disagree, or data lies beyond the last fragment's end.
    ConflictingEnd,
    /// Overlapping fragments with different bytes under [`OverlapPolicy::RejectInconsistent`].
    InconsistentOverlap,
    /// More than `max_fragments` fragments.
    TooManyFragments,
    /// The datagram alone does not fit in `max_bytes`.
    Memcap,
}

/// What happened to one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefragOutcome<'d> {
    /// Not a fragment (or not IP): use the packet as it is.
    NotFragment,
    /// A fragment was stored; its datagram is incomplete.
    Held,
    /// This fragment completed a datagram: the whole datagram as a raw IP packet, valid until the next call.
    Reassembled(&'d [u8]),
    /// The fragment was dropped (counted in [`DefragStats`]).
    Dropped(DefragDrop),
}

/// Counters. Monotone except `in_progress` and `bytes_held`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DefragStats {
    /// Fragments offered.
    pub fragments: u64,
    /// Datagrams reassembled.
    pub reassembled: u64,
    /// Fragments that overlapped data already held (identical or not).
    pub overlaps: u64,
    /// Overlaps whose bytes differed.
    pub inconsistent_overlaps: u64,
    /// Fragment drops by reason.
    pub drop_truncated: u64,
    pub drop_bad_length: u64,
    pub drop_too_large: u64,
    pub drop_conflicting_end: u64,
    pub drop_inconsistent_overlap: u64,
    pub drop_too_many_fragments: u64,
    pub drop_memcap: u64,
    /// Incomplete datagrams given up: timed out, evicted for a new datagram (`max_datagrams`), or evicted to make
    /// room in `max_bytes`.
    pub timed_out: u64,
    pub evicted_capacity: u64,
    pub evicted_memcap: u64,
    /// Datagrams in progress and bytes they hold, now.
    pub in_progress: u64,
    pub bytes_held: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FragKey {
    src: [u8; 16],
    dst: [u8; 16],
    id: u32,
    proto: u8,
    v6: bool,
}

#[derive(Debug, Default)]
struct Datagram {
    key: Option<FragKey>,
    first_ts: u64,
    seq: u64,
    /// IPv4 header of the first fragment, or the IPv6 unfragmentable part (fragment header excluded).
    header: Vec<u8>,
    have_header: bool,
    /// IPv6: the Next Header carried by the fragment header, and where the byte announcing the fragment header is.
    next_header: u8,
    announced_at: usize,
    /// Fragment data by offset; holes are zero until filled.
    data: Vec<u8>,
    /// Covered byte ranges [start, end), sorted and disjoint.
    ranges: Vec<(u32, u32)>,
    end: Option<u32>,
    frags: u16,
}

impl Datagram {
    fn held_bytes(&self) -> usize {
        self.header.len() + self.data.len()
    }
    fn complete(&self) -> bool {
        match (self.have_header, self.end) {
            (true, Some(e)) => self.ranges.len() == 1 && self.ranges[0] == (0, e),
            _ => false,
        }
    }
}

/// The IP defragmenter. See the module documentation.
#[derive(Debug)]
pub struct Defragmenter {
    cfg: DefragConfig,
    index: HashMap<FragKey, usize>,
    slots: Vec<Datagram>,
    free: Vec<usize>,
    /// Creation order: (sequence number, slot). Stale entries (finished datagrams) are skipped.
    order: VecDeque<(u64, usize)>,
    next_seq: u64,
    bytes: usize,
    pool: Vec<Vec<u8>>,
    out: Vec<u8>,
    stats: DefragStats,
}

const POOL_MAX: usize = 32;

impl Defragmenter {
    pub fn new(cfg: DefragConfig) -> Self {
        let cfg = DefragConfig {
            max_datagrams: cfg.max_datagrams.max(1),
            max_datagram_bytes: cfg.max_datagram_bytes.min(65_535),
            max_fragments: cfg.max_fragments.max(1),
            ..cfg
        };
        Defragmenter {
            cfg,
            index: HashMap::with_capacity(cfg.max_datagrams.min(1 << 16)),
            slots: Vec::new(),
            free: Vec::new(),
            order: VecDeque::new(),
            next_seq: 0,
            bytes: 0,
            pool: Vec::new(),
            out: Vec::with_capacity(2048),
            stats: DefragStats::default(),
        }
    }

    pub fn config(&self) -> &DefragConfig {
        &self.cfg
    }

    pub fn stats(&self) -> DefragStats {
        DefragStats {
            in_progress: self.index.len() as u64,
            bytes_held: self.bytes as u64,
            ..self.stats
        }
    }

    /// Datagrams in progress.
    pub fn in_progress(&self) -> usize {
        self.index.len()
    }

    /// Bytes held by datagrams in progress.
    pub fn bytes_held(&self) -> usize {
        self.bytes
    }

    /// Offers one decoded packet captured at `ts_ns`. Expires old datagrams first.
    pub fn push(&mut self, d: &Decoded<'_>, ts_ns: u64) -> DefragOutcome<'_> {
        self.push_noting(d, ts_ns, &mut DecodeEvents::default())
    }

    /// [`push`](Self::push), noting in `events` what Suricata's defragmenter reports on the fragment: an overlap
    /// with data already held (`ipv4.frag_overlap`, `ipv6.frag_overlap`), a datagram that would exceed 65,535 bytes
    /// (`*.frag_pkt_too_large`), an IPv6 fragment with more to come whose length is not a multiple of 8
    /// (`ipv6.frag_invalid_length`).
    #[inline]
    pub fn push_noting(
        &mut self,
        d: &Decoded<'_>,
        ts_ns: u64,
        events: &mut DecodeEvents,
    ) -> DefragOutcome<'_> {
        self.expire(ts_ns);
        let Some(ip) = d.ip else {
            return DefragOutcome::NotFragment;
        };
        if !ip.fragmented {
            return DefragOutcome::NotFragment;
        }
        self.stats.fragments += 1;
        if d.payload_truncated {
            self.stats.drop_truncated += 1;
            return DefragOutcome::Dropped(DefragDrop::Truncated);
        }
        let pkt = d.ip_packet();
        let v6 = ip.is_v6();
        let data_at = if v6 {
            usize::from(ip.frag_header_at) + 8
        } else {
            usize::from(ip.header_len)
        };
        let Some(frag) = pkt.get(data_at..) else {
            self.stats.drop_truncated += 1;
            return DefragOutcome::Dropped(DefragDrop::Truncated);
        };
        let offset = u32::from(ip.frag_offset);
        let len = frag.len() as u32;
        let more = ip.more_fragments;
        if more && (len == 0 || !len.is_multiple_of(8)) {
            if v6 {
                events.set(DecodeEvent::Ipv6FragInvalidLength);
            }
            self.stats.drop_bad_length += 1;
            return DefragOutcome::Dropped(DefragDrop::BadLength);
        }
        let end = offset + len;
        let min_header = if v6 { 0 } else { 20 };
        if end as usize + min_header > 65_535 || end as usize > self.cfg.max_datagram_bytes {
            // Drop what we hold of this datagram too: it can never complete.
            let key = key_of(&ip);
            self.remove_key(&key);
            events.set(if v6 {
                DecodeEvent::Ipv6FragPktTooLarge
            } else {
                DecodeEvent::Ipv4FragPktTooLarge
            });
            self.stats.drop_too_large += 1;
            return DefragOutcome::Dropped(DefragDrop::TooLarge);
        }
        let key = key_of(&ip);
        let slot = match self.index.get(&key) {
            Some(&s) => s,
            None => self.create(key, ts_ns),
        };

        // Ends must agree.
        {
            let dg = &mut self.slots[slot];
            let beyond = dg.ranges.last().is_some_and(|&(_, e)| e > end);
            let conflict = if more {
                dg.end.is_some_and(|e| end > e)
            } else {
                dg.end.is_some_and(|e| e != end) || beyond
            };
            if conflict {
                // Suricata reports the overlap before it weighs the ends.
                if overlap(&dg.ranges, &dg.data, offset, frag).0 {
                    events.set(if v6 {
                        DecodeEvent::Ipv6FragOverlap
                    } else {
                        DecodeEvent::Ipv4FragOverlap
                    });
                }
                self.drop_slot(slot);
                self.stats.drop_conflicting_end += 1;
                return DefragOutcome::Dropped(DefragDrop::ConflictingEnd);
            }
            dg.frags = dg.frags.saturating_add(1);
            if dg.frags > self.cfg.max_fragments {
                self.drop_slot(slot);
                self.stats.drop_too_many_fragments += 1;
                return DefragOutcome::Dropped(DefragDrop::TooManyFragments);
            }
        }

        // Memory: the data span grows to `end`, the header is stored once.
        let header_len = if offset == 0 && !self.slots[slot].have_header {
            data_at_header_len(&ip, data_at)
        } else {
            0
        };
        let grow = (end as usize).saturating_sub(self.slots[slot].data.len()) + header_len;
        if grow > 0 && !self.make_room(grow, slot) {
            self.drop_slot(slot);
            self.stats.drop_memcap += 1;
            return DefragOutcome::Dropped(DefragDrop::Memcap);
        }

        // Copy the data under the overlap policy.
        let policy = self.cfg.policy;
        let dg = &mut self.slots[slot];
        if dg.data.len() < end as usize {
            self.bytes += end as usize - dg.data.len();
            dg.data.resize(end as usize, 0);
        }
        let (overlapped, differs) = overlap(&dg.ranges, &dg.data, offset, frag);
        if overlapped {
            self.stats.overlaps += 1;
            events.set(if v6 {
                DecodeEvent::Ipv6FragOverlap
            } else {
                DecodeEvent::Ipv4FragOverlap
            });
        }
        if differs {
            self.stats.inconsistent_overlaps += 1;
            if policy == OverlapPolicy::RejectInconsistent {
                self.drop_slot(slot);
                self.stats.drop_inconsistent_overlap += 1;
                return DefragOutcome::Dropped(DefragDrop::InconsistentOverlap);
            }
        }
        if policy == OverlapPolicy::Last || !overlapped {
            dg.data[offset as usize..end as usize].copy_from_slice(frag);
        } else {
            copy_uncovered(&dg.ranges, &mut dg.data, offset, frag);
        }
        add_range(&mut dg.ranges, offset, end);
        if !more {
            dg.end = Some(end);
        }
        if offset == 0 && !dg.have_header {
            dg.have_header = true;
            dg.header.clear();
            if v6 {
                dg.header
                    .extend_from_slice(pkt.get(..usize::from(ip.frag_header_at)).unwrap_or(&[]));
                dg.next_header = pkt
                    .get(usize::from(ip.frag_header_at))
                    .copied()
                    .unwrap_or(59);
                dg.announced_at = usize::from(ip.frag_announced_at);
            } else {
                dg.header
                    .extend_from_slice(pkt.get(..usize::from(ip.header_len)).unwrap_or(&[]));
            }
            self.bytes += dg.header.len();
        }
        if !dg.complete() {
            return DefragOutcome::Held;
        }
        self.finish(slot, v6)
    }

    /// Drops datagrams whose first fragment is older than the timeout at capture time `now_ns`.
    pub fn expire(&mut self, now_ns: u64) {
        while let Some(&(seq, slot)) = self.order.front() {
            let live = self
                .slots
                .get(slot)
                .is_some_and(|d| d.key.is_some() && d.seq == seq);
            if !live {
                self.order.pop_front();
                continue;
            }
            if now_ns.saturating_sub(self.slots[slot].first_ts) <= self.cfg.timeout_ns {
                break;
            }
            self.order.pop_front();
            self.drop_slot(slot);
            self.stats.timed_out += 1;
        }
    }

    fn finish(&mut self, slot: usize, v6: bool) -> DefragOutcome<'_> {
        let dg = &self.slots[slot];
        let end = dg.end.unwrap_or(0) as usize;
        self.out.clear();
        self.out.extend_from_slice(&dg.header);
        self.out
            .extend_from_slice(dg.data.get(..end).unwrap_or(&[]));
        let ok = if v6 {
            let payload_len = self.out.len().saturating_sub(40);
            let at = dg.announced_at;
            if payload_len > 65_535 || self.out.len() < 40 || at >= dg.header.len() {
                false
            } else {
                self.out[at] = dg.next_header;
                put16(&mut self.out, 4, payload_len as u16);
                true
            }
        } else if self.out.len() > 65_535 {
            false
        } else {
            let total = self.out.len() as u16;
            match ipv4::Packet::new_checked(&mut self.out[..]) {
                Ok(mut p) => {
                    p.set_total_len(total);
                    p.set_frag(false, false, 0);
                    p.fill_checksum();
                    true
                }
                Err(_) => false,
            }
        };
        self.drop_slot(slot);
        if !ok {
            self.stats.drop_too_large += 1;
            return DefragOutcome::Dropped(DefragDrop::TooLarge);
        }
        self.stats.reassembled += 1;
        DefragOutcome::Reassembled(&self.out)
    }

    fn create(&mut self, key: FragKey, ts: u64) -> usize {
        while self.index.len() >= self.cfg.max_datagrams {
            if !self.evict_oldest(None) {
                break;
            }
            self.stats.evicted_capacity += 1;
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Datagram::default());
                self.slots.len() - 1
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let data = self.pool.pop().unwrap_or_default();
        let header = self.pool.pop().unwrap_or_default();
        let dg = &mut self.slots[slot];
        *dg = Datagram {
            key: Some(key),
            first_ts: ts,
            seq,
            header,
            have_header: false,
            next_header: 59,
            announced_at: 6,
            data,
            ranges: std::mem::take(&mut dg.ranges),
            end: None,
            frags: 0,
        };
        dg.ranges.clear();
        self.index.insert(key, slot);
        self.order.push_back((seq, slot));
        // Stale entries of finished datagrams accumulate behind a long-lived one; compact to keep `order` bounded.
        if self.order.len() > 4 * self.cfg.max_datagrams + 64 {
            let slots = &self.slots;
            self.order
                .retain(|&(q, s)| slots.get(s).is_some_and(|d| d.key.is_some() && d.seq == q));
        }
        slot
    }

    /// Evicts the oldest datagram other than `keep`. False when there is none.
    fn evict_oldest(&mut self, keep: Option<usize>) -> bool {
        let mut i = 0;
        while i < self.order.len() {
            let (seq, slot) = self.order[i];
            let live = self
                .slots
                .get(slot)
                .is_some_and(|d| d.key.is_some() && d.seq == seq);
            if !live {
                if i == 0 {
                    self.order.pop_front();
                } else {
                    i += 1;
                }
                continue;
            }
            if Some(slot) == keep {
                i += 1;
                continue;
            }
            let _ = self.order.remove(i);
            self.drop_slot(slot);
            return true;
        }
        false
    }

    /// Evicts old datagrams until `grow` more bytes fit; false if they cannot (the datagram `keep` is too big).
    fn make_room(&mut self, grow: usize, keep: usize) -> bool {
        while self.bytes + grow > self.cfg.max_bytes {
            if !self.evict_oldest(Some(keep)) {
                return false;
            }
            self.stats.evicted_memcap += 1;
        }
        true
    }

    fn remove_key(&mut self, key: &FragKey) {
        if let Some(&slot) = self.index.get(key) {
            self.drop_slot(slot);
        }
    }

    /// Frees a datagram's slot and recycles its buffers.
    fn drop_slot(&mut self, slot: usize) {
        let Some(dg) = self.slots.get_mut(slot) else {
            return;
        };
        let Some(key) = dg.key.take() else {
            return;
        };
        self.bytes = self.bytes.saturating_sub(dg.held_bytes());
        let mut data = std::mem::take(&mut dg.data);
        let mut header = std::mem::take(&mut dg.header);
        dg.ranges.clear();
        self.index.remove(&key);
        self.free.push(slot);
        for b in [&mut data, &mut header] {
            if self.pool.len() < POOL_MAX && b.capacity() <= 65_536 {
                b.clear();
                self.pool.push(std::mem::take(b));
            }
        }
    }
}

fn key_of(ip: &crate::decode::Ip) -> FragKey {
    let a16 = |a: std::net::IpAddr| match a {
        std::net::IpAddr::V4(v) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&v.octets());
            b
        }
        std::net::IpAddr::V6(v) => v.octets(),
    };
    FragKey {
        src: a16(ip.src),
        dst: a16(ip.dst),
        id: ip.id,
        proto: if ip.is_v6() { 0 } else { ip.proto },
        v6: ip.is_v6(),
    }
}

/// Bytes of header a first fragment brings (IPv4 header, or IPv6 unfragmentable part).
fn data_at_header_len(ip: &crate::decode::Ip, data_at: usize) -> usize {
    if ip.is_v6() {
        data_at.saturating_sub(8)
    } else {
        usize::from(ip.header_len)
    }
}

/// Whether [offset, offset+frag.len()) overlaps held ranges, and whether any overlapping byte differs.
fn overlap(ranges: &[(u32, u32)], data: &[u8], offset: u32, frag: &[u8]) -> (bool, bool) {
    let end = offset + frag.len() as u32;
    let mut any = false;
    let mut differs = false;
    for &(s, e) in ranges {
        if e <= offset || s >= end {
            continue;
        }
        any = true;
        let (a, b) = (s.max(offset) as usize, e.min(end) as usize);
        let old = data.get(a..b).unwrap_or(&[]);
        let new = frag
            .get(a - offset as usize..b - offset as usize)
            .unwrap_or(&[]);
        if old != new {
            differs = true;
        }
    }
    (any, differs)
}

/// Copies the parts of `frag` (at `offset`) not covered by `ranges` (first data wins).
fn copy_uncovered(ranges: &[(u32, u32)], data: &mut [u8], offset: u32, frag: &[u8]) {
    let end = offset + frag.len() as u32;
    let mut pos = offset;
    for &(s, e) in ranges {
        if e <= pos {
            continue;
        }
        if s >= end {
            break;
        }
        if s > pos {
            copy_span(data, frag, offset, pos, s.min(end));
        }
        pos = pos.max(e);
        if pos >= end {
            return;
        }
    }
    if pos < end {
        copy_span(data, frag, offset, pos, end);
    }
}

fn copy_span(data: &mut [u8], frag: &[u8], offset: u32, a: u32, b: u32) {
    let (a, b) = (a as usize, b as usize);
    let o = offset as usize;
    if let (Some(dst), Some(src)) = (data.get_mut(a..b), frag.get(a - o..b - o)) {
        dst.copy_from_slice(src);
    }
}

/// Adds [s, e) to sorted disjoint ranges, merging neighbours.
fn add_range(ranges: &mut Vec<(u32, u32)>, s: u32, e: u32) {
    if s == e {
        return;
    }
    let mut ns = s;
    let mut ne = e;
    let mut i = 0;
    while i < ranges.len() {
        let (rs, re) = ranges[i];
        if re < ns {
            i += 1;
            continue;
        }
        if rs > ne {
            break;
        }
        ns = ns.min(rs);
        ne = ne.max(re);
        ranges.remove(i);
    }
    ranges.insert(i, (ns, ne));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge() {
        let mut r = Vec::new();
        add_range(&mut r, 16, 24);
        add_range(&mut r, 0, 8);
        assert_eq!(r, vec![(0, 8), (16, 24)]);
        add_range(&mut r, 8, 16);
        assert_eq!(r, vec![(0, 24)]);
        add_range(&mut r, 40, 48);
        add_range(&mut r, 20, 44);
        assert_eq!(r, vec![(0, 48)]);
    }

    #[test]
    fn first_wins_copy() {
        let mut data = vec![1u8; 8];
        data.extend([0u8; 8]);
        let ranges = vec![(0u32, 8u32)];
        copy_uncovered(&ranges, &mut data, 4, &[9u8; 12]);
        assert_eq!(&data[..], &[1, 1, 1, 1, 1, 1, 1, 1, 9, 9, 9, 9, 9, 9, 9, 9]);
        assert_eq!(overlap(&ranges, &data, 4, &[1u8; 4]), (true, false));
        assert_eq!(overlap(&ranges, &data, 4, &[2u8; 4]), (true, true));
        assert_eq!(overlap(&ranges, &data, 8, &[2u8; 4]), (false, false));
    }

    /// An IPv6 fragment (raw IP) of datagram 7 at byte `offset` carrying `data`.
    fn v6_frag(offset: u16, more: bool, data: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[44, 64]);
        p.extend_from_slice(&[0; 15]);
        p.push(1);
        p.extend_from_slice(&[0; 15]);
        p.push(2);
        p.extend_from_slice(&[58, 0]);
        p.extend_from_slice(&(offset | u16::from(more)).to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 7]);
        p.extend_from_slice(data);
        p
    }

    fn push_events(df: &mut Defragmenter, pkt: &[u8]) -> Vec<&'static str> {
        let d = crate::decode_bytes(
            flowbundle_ingest::LinkType::RAW,
            pkt,
            &crate::DecodeOptions::default(),
        );
        let mut ev = DecodeEvents::default();
        let _ = df.push_noting(&d, 1, &mut ev);
        ev.iter().map(|e| e.name()).collect()
    }

    #[test]
    fn fragment_events_as_suricata_names_them() {
        let mut df = Defragmenter::new(DefragConfig::default());
        assert!(push_events(&mut df, &v6_frag(0, true, &[1; 16])).is_empty());
        // Overlapping the first fragment's bytes.
        assert_eq!(
            push_events(&mut df, &v6_frag(8, true, &[2; 16])),
            ["ipv6.frag_overlap"]
        );
        // A last fragment that starts inside held data, ending before it: overlap noted before the ends conflict.
        assert_eq!(
            push_events(&mut df, &v6_frag(8, false, &[3; 1])),
            ["ipv6.frag_overlap"]
        );
        // More fragments to come with a length that is no multiple of 8.
        assert_eq!(
            push_events(&mut df, &v6_frag(64, true, &[4; 12])),
            ["ipv6.frag_invalid_length"]
        );
        // Beyond 65,535 bytes.
        assert_eq!(
            push_events(&mut df, &v6_frag(65_528, true, &[5; 16])),
            ["ipv6.frag_pkt_too_large"]
        );
    }
}
