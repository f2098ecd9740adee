//! # The capped flow table of `trace stats`
//!
//! One entry per canonical 5-tuple ([`FlowKey`]), for the whole capture: packets, wire bytes, first and last
//! timestamps, position of the last packet, and inspection cost. Entries are never evicted, so while the table has
//! room every count is exact; when it holds [`FlowTable::cap`] flows, packets of *new* flows are not tracked and
//! are counted in `untracked_packets` / `untracked_bytes` instead (flows already in the table keep being counted).
//! Refusing newcomers rather than evicting old flows keeps the reported connections an exact lower bound: an
//! evicted flow that came back would be counted twice.
//!
//! Memory: about 100 bytes per tracked flow (a 96-byte entry in a vector plus a 4-byte index and a control byte
//! in a `hashbrown::HashTable` at up to 7/8 load), so the default cap of 2^20 flows bounds the table near 100 MiB
//! whatever the capture holds. Growth is by doubling but never past the cap.

use flowbundle_decode::FlowKey;
use hashbrown::HashTable;

/// Per-flow counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEntry {
    pub key: FlowKey,
    pub packets: u64,
    /// Wire bytes (`orig_len`).
    pub bytes: u64,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// Inspection cost summed by a [`CostModel`](super::CostModel) (0 without one).
    pub cost: u64,
    /// Position of the flow's last packet in the capture's sequence of IP packets.
    pub last_seq: u64,
}

/// Where a packet's flow stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The flow was already tracked, at this index.
    Known(u32),
    /// The flow is new and now tracked at this index.
    New(u32),
    /// The flow is new and the table is full: not tracked.
    Full,
}

/// Flow keys to dense indices, capped.
#[derive(Debug, Clone)]
pub struct FlowTable {
    index: HashTable<u32>,
    entries: Vec<FlowEntry>,
    cap: usize,
    untracked_packets: u64,
    untracked_bytes: u64,
}

impl FlowTable {
    /// A table of at most `cap` flows (at least 1; at most `u32::MAX`).
    pub fn new(cap: usize) -> Self {
        FlowTable {
            index: HashTable::new(),
            entries: Vec::new(),
            cap: cap.clamp(1, u32::MAX as usize),
            untracked_packets: 0,
            untracked_bytes: 0,
        }
    }

    /// Finds or inserts `key`, whose hash `hash` must be [`hash_of`]`(key)`, and counts a packet of `bytes` wire bytes at `ts_ns`
    /// on it (or on the untracked counters when the table is full).
    #[inline]
    pub fn count(&mut self, hash: u64, key: &FlowKey, ts_ns: u64, bytes: u64) -> Slot {
        let entries = &self.entries;
        if let Some(&i) = self.index.find(hash, |&i| {
            entries.get(i as usize).is_some_and(|e| e.key == *key)
        }) {
            // `find` only returns indices that were inserted, all below `entries.len()`.
            if let Some(e) = self.entries.get_mut(i as usize) {
                e.packets += 1;
                e.bytes += bytes;
                e.first_ts_ns = e.first_ts_ns.min(ts_ns);
                e.last_ts_ns = e.last_ts_ns.max(ts_ns);
            }
            return Slot::Known(i);
        }
        if self.entries.len() >= self.cap {
            self.untracked_packets += 1;
            self.untracked_bytes += bytes;
            return Slot::Full;
        }
        if self.entries.len() == self.entries.capacity() {
            // Double, but never beyond the cap.
            let want = self
                .entries
                .len()
                .max(1024)
                .min(self.cap - self.entries.len());
            self.entries.reserve_exact(want);
        }
        let i = self.entries.len() as u32;
        self.entries.push(FlowEntry {
            key: *key,
            packets: 1,
            bytes,
            first_ts_ns: ts_ns,
            last_ts_ns: ts_ns,
            cost: 0,
            last_seq: 0,
        });
        let entries = &self.entries;
        self.index.insert_unique(hash, i, |&j| {
            // Growing the index rehashes stored entries from their keys: callers pass `hash == hash_of(key)`.
            entries.get(j as usize).map_or(0, |e| hash_of(&e.key))
        });
        Slot::New(i)
    }

    /// Adds inspection cost to a tracked flow.
    #[inline]
    pub fn add_cost(&mut self, i: u32, cost: u64) {
        if let Some(e) = self.entries.get_mut(i as usize) {
            e.cost += cost;
        }
    }

    /// The entry at index `i` (as returned in a [`Slot`]).
    #[inline]
    pub fn get_mut(&mut self, i: u32) -> Option<&mut FlowEntry> {
        self.entries.get_mut(i as usize)
    }

    pub fn entries(&self) -> &[FlowEntry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    pub fn untracked_packets(&self) -> u64 {
        self.untracked_packets
    }

    pub fn untracked_bytes(&self) -> u64 {
        self.untracked_bytes
    }

    /// Bytes held by the table (entries and index).
    pub fn memory_bytes(&self) -> usize {
        self.entries.capacity() * size_of::<FlowEntry>() + self.index.capacity() * (4 + 1)
    }
}

/// The hash the table indexes keys by: foldhash with a fixed seed (the stats are a lab tool run on captures, not
/// a service facing chosen keys; a fixed seed keeps runs reproducible).
#[inline]
pub fn hash_of(key: &FlowKey) -> u64 {
    use core::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x7ace_57a7).hash_one(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn key(i: u32) -> FlowKey {
        let a = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i));
        let b = IpAddr::V4(Ipv4Addr::new(192, 168, 0, 1));
        FlowKey::new(a, 1000, b, 80, 6).0
    }

    #[test]
    fn counts_both_directions_and_caps() {
        let mut t = FlowTable::new(3);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let (k1, _) = FlowKey::new(a, 1, b, 2, 17);
        let (k2, _) = FlowKey::new(b, 2, a, 1, 17);
        assert_eq!(t.count(hash_of(&k1), &k1, 5, 100), Slot::New(0));
        assert_eq!(t.count(hash_of(&k2), &k2, 3, 60), Slot::Known(0));
        let e = t.entries()[0];
        assert_eq!(
            (e.packets, e.bytes, e.first_ts_ns, e.last_ts_ns),
            (2, 160, 3, 5)
        );
        for i in 0..10 {
            let k = key(i);
            t.count(hash_of(&k), &k, 0, 10);
        }
        assert_eq!(t.len(), 3);
        assert_eq!(t.untracked_packets(), 8);
        assert_eq!(t.untracked_bytes(), 80);
        // A tracked flow keeps counting when the table is full.
        assert_eq!(t.count(hash_of(&k1), &k1, 9, 1), Slot::Known(0));
    }

    #[test]
    fn memory_stays_under_the_cap_in_a_flood() {
        let cap = 10_000;
        let mut t = FlowTable::new(cap);
        for i in 0..200_000 {
            let k = key(i);
            t.count(hash_of(&k), &k, 0, 1);
        }
        assert_eq!(t.len(), cap);
        assert_eq!(t.untracked_packets(), 200_000 - cap as u64);
        // 96-byte entries plus index, within 2x of the cap's worth.
        assert!(t.memory_bytes() <= cap * 2 * 100, "{}", t.memory_bytes());
    }
}
