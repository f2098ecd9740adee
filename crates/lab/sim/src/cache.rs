//! # The cache model
//!
//! Per core an L1d and an L2, per socket an L3, all set-associative with true LRU replacement and 64-byte lines;
//! what they hold decides what each packet's flow-state accesses cost.
//!
//! **Two kinds of line.** *State lines* are a connection's state (a configurable number per connection, at
//! addresses derived from the flow, `[0, STREAM_BASE)`): read and written by every packet of the connection, so they
//! have one owner at a time, tracked in a directory. *Stream lines* are what a packet's own processing brings in
//! (its bytes, the layers its decode writes): fresh addresses from a ring per core, `STREAM_BASE | core << 24 |
//! n`, never looked up, only inserted. They are what evicts other flows' state when flows interleave on a core, which
//! is the effect the schedulers differ by (ANCS'10 §3.3: LFB "increases the cache hit rate by eliminating
//! interleaved flow processing that could evict cache lines associated with the previous packet's flow"). Their own
//! misses are part of the base cost (every schedule streams every packet once); they are counted, not charged.
//!
//! **Inclusion, as on Nehalem.** The L2 includes its L1 (a line leaving an L2 leaves that core's L1) and the L3
//! includes the private caches of its socket's cores (an L3 eviction removes the line from them: the back-
//! invalidation that makes an inclusive L3 a snoop filter). A stream line names its core in its address and a state
//! line's owner is in the directory, so a back-invalidation costs two set lookups, never a scan of the cores.
//!
//! **A state access by core `c`** (a read-modify-write, in this order): a hit in `c`'s L1 costs nothing; in its L2,
//! the L2 latency; if another core holds the line modified in its private caches, a coherence transfer (same socket or
//! not) and that core loses it; else a hit in `c`'s socket L3 costs the L3 latency; else the line comes from another
//! socket's L3 (a remote transfer) or from memory, local or remote to its home socket (first touch). Then it is in
//! `c`'s L1, L2 and L3, and `c` owns it.
//!
//! **Cost.** Tags are `u32` line numbers in one flat array, `ways` per set, with the set's LRU order in one `u64`; a set is found
//! by a mask (or one modulo for non-power-of-two set counts); a lookup scans at most 16 tags, an insertion is O(1).
//! The directory is two bytes per state line. Memory: about 4.5 bytes per modelled line (an 8 MB L3 is 576 KB).

use crate::params::{Latencies, Machine};

/// Marker of an empty way.
const EMPTY: u32 = u32::MAX;

/// First stream line number; state lines are below it.
pub const STREAM_BASE: u32 = 0x8000_0000;

/// Stream lines per core before a core's ring wraps (1 GiB of addresses: never reused while still cached).
const RING: u32 = 1 << 24;

/// First code line: the lines of the engine's instructions ([`Hierarchy::fetch_code`]) carry the core number 127 in a
/// stream-line address, which no simulated core has (at most 64), so an L3 eviction of a code line back-invalidates
/// nobody's private caches: code is read-only, and an L1i is not kept inclusive here (a documented simplification).
pub const CODE_BASE: u32 = STREAM_BASE | (127 << 24);

/// Code lines the model addresses (16 MiB of instructions).
pub const CODE_LINES: u32 = RING;

/// Most ways per set the model supports (each set's LRU order is 16 four-bit way numbers in a `u64`).
pub const MAX_WAYS: usize = 16;

/// A set-associative cache of line numbers with true LRU replacement.
///
/// Each set keeps its tags (`u32` line numbers, `EMPTY` when vacant) and its recency order as a `u64` of 4-bit way
/// numbers, most recent in the low nibble. Inserting takes the way in the top nibble (the least recent, or a vacant
/// one: vacated ways are moved there) and shifts it in at the bottom: O(1). A hit moves its way to the bottom: a
/// 16-nibble scan and two masks. No stamps, no clock, no scan for the oldest.
#[derive(Clone, Debug)]
pub struct SetAssoc {
    sets: u32,
    ways: usize,
    mask: Option<u32>,
    tags: Box<[u32]>,
    order: Box<[u64]>,
    /// Mask of the `ways` low nibbles.
    nibbles: u64,
}

impl SetAssoc {
    /// `lines` lines in sets of `ways` (1 to [`MAX_WAYS`], clamped; at least one set).
    pub fn new(lines: usize, ways: usize) -> Self {
        let ways = ways.clamp(1, MAX_WAYS);
        let sets = (lines / ways).clamp(1, u32::MAX as usize / 2) as u32;
        // Initial order: way 0 least recent, so an empty set fills from way 0.
        let init = (0..ways).fold(0u64, |o, w| o | ((w as u64) << (4 * (ways - 1 - w))));
        SetAssoc {
            sets,
            ways,
            mask: sets.is_power_of_two().then_some(sets - 1),
            tags: vec![EMPTY; sets as usize * ways].into_boxed_slice(),
            order: vec![init; sets as usize].into_boxed_slice(),
            nibbles: if ways == 16 {
                u64::MAX
            } else {
                (1u64 << (4 * ways)) - 1
            },
        }
    }

    #[inline]
    fn set(&self, line: u32) -> usize {
        (match self.mask {
            Some(m) => line & m,
            None => line % self.sets,
        }) as usize
    }

    #[inline]
    fn find(&self, set: usize, line: u32) -> Option<usize> {
        let b = set * self.ways;
        self.tags[b..b + self.ways].iter().position(|&t| t == line)
    }

    /// Position (0 = most recent) of way `w` in a set's order.
    #[inline]
    fn position(&self, order: u64, w: usize) -> usize {
        (0..self.ways)
            .find(|&p| ((order >> (4 * p)) & 15) as usize == w)
            .unwrap_or(self.ways - 1)
    }

    /// Make way `w` the most recent of its set.
    #[inline]
    fn promote(&mut self, set: usize, w: usize) {
        let o = self.order[set];
        let p = self.position(o, w);
        let below = o & ((1u64 << (4 * p)) - 1);
        let above = if p + 1 >= 16 {
            0
        } else {
            o & !((1u64 << (4 * (p + 1))) - 1)
        };
        self.order[set] = (above | (below << 4) | w as u64) & self.nibbles;
    }

    /// A hit refreshes the line (most recently used) and answers true.
    #[inline]
    pub fn touch(&mut self, line: u32) -> bool {
        let set = self.set(line);
        match self.find(set, line) {
            Some(w) => {
                self.promote(set, w);
                true
            }
            None => false,
        }
    }

    /// Whether the line is present (LRU order untouched).
    #[inline]
    pub fn contains(&self, line: u32) -> bool {
        self.find(self.set(line), line).is_some()
    }

    /// Insert a line that is not present, as most recently used; returns the line it evicted, if any.
    #[inline]
    pub fn insert(&mut self, line: u32) -> Option<u32> {
        let set = self.set(line);
        let o = self.order[set];
        let w = ((o >> (4 * (self.ways - 1))) & 15) as usize;
        self.order[set] = ((o << 4) | w as u64) & self.nibbles;
        let slot = set * self.ways + w;
        let evicted = self.tags[slot];
        self.tags[slot] = line;
        (evicted != EMPTY).then_some(evicted)
    }

    /// Remove a line (its way becomes the next victim); true when it was present.
    #[inline]
    pub fn remove(&mut self, line: u32) -> bool {
        let set = self.set(line);
        let Some(w) = self.find(set, line) else {
            return false;
        };
        self.tags[set * self.ways + w] = EMPTY;
        let o = self.order[set];
        let p = self.position(o, w);
        let below = o & ((1u64 << (4 * p)) - 1);
        let above = if p + 1 >= 16 {
            0
        } else {
            o & !((1u64 << (4 * (p + 1))) - 1)
        };
        let top = 4 * (self.ways - 1);
        self.order[set] = ((above >> 4) | below | ((w as u64) << top)) & self.nibbles;
        true
    }

    /// Lines held.
    pub fn occupied(&self) -> usize {
        self.tags.iter().filter(|&&t| t != EMPTY).count()
    }
}

/// Where a state access was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    L1,
    L2,
    /// Modified in another core's private cache on the same socket.
    XferSocket,
    L3,
    /// Modified or held in a cache of another socket.
    XferRemote,
    MemLocal,
    MemRemote,
}

/// Per-core counters of the cache model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreCounters {
    /// State lines accessed, and where they were served.
    pub state: u64,
    pub l1_miss: u64,
    pub l2_miss: u64,
    /// Missed the whole socket's hierarchy (served by another socket or memory).
    pub l3_miss: u64,
    pub xfer_socket: u64,
    pub xfer_remote: u64,
    pub mem: u64,
    /// Stall cycles charged for state accesses.
    pub stall_cycles: u64,
    /// Stream lines inserted (each one an L1, L2 and L3 miss).
    pub stream: u64,
    /// Lines of handed-off packets read from the core that handed them off (also counted as misses and transfers).
    pub handoff_lines: u64,
    /// Code lines fetched (execution models with an instruction footprint), the fetches that missed the L1i, and
    /// those that also missed the L2 (served by the L3, or memory on a first fetch).
    pub code: u64,
    pub code_l1_miss: u64,
    pub code_l2_miss: u64,
    /// Stall cycles charged for code fetches.
    pub code_stall_cycles: u64,
}

impl CoreCounters {
    pub fn add(&mut self, o: &CoreCounters) {
        self.state += o.state;
        self.l1_miss += o.l1_miss;
        self.l2_miss += o.l2_miss;
        self.l3_miss += o.l3_miss;
        self.xfer_socket += o.xfer_socket;
        self.xfer_remote += o.xfer_remote;
        self.mem += o.mem;
        self.stall_cycles += o.stall_cycles;
        self.stream += o.stream;
        self.handoff_lines += o.handoff_lines;
        self.code += o.code;
        self.code_l1_miss += o.code_l1_miss;
        self.code_l2_miss += o.code_l2_miss;
        self.code_stall_cycles += o.code_stall_cycles;
    }
}

/// The caches of all simulated cores and sockets, and the state-line directory.
pub struct Hierarchy {
    l1: Vec<SetAssoc>,
    l1i: Vec<SetAssoc>,
    l2: Vec<SetAssoc>,
    l3: Vec<SetAssoc>,
    socket: Vec<u8>,
    lat: Latencies,
    /// Owner of each state line (core + 1; 0: none yet).
    owner: Vec<u8>,
    /// Home socket of each state line (socket + 1; 0: never touched): memory is allocated on first touch.
    home: Vec<u8>,
    ring: Vec<u32>,
    pub counters: Vec<CoreCounters>,
}

impl Hierarchy {
    /// Caches for `cores` cores (at most 64) of `machine`, and a directory for `state_lines` state lines (capped
    /// below `STREAM_BASE`; the caller maps line numbers into that range).
    pub fn new(machine: &Machine, cores: usize, state_lines: usize) -> Self {
        let cores = cores.clamp(1, crate::params::MAX_CORES);
        let per = machine.cores_per_socket.max(1);
        let sockets = machine.sockets(cores);
        let state_lines = state_lines.min(STREAM_BASE as usize);
        Hierarchy {
            l1: (0..cores)
                .map(|_| SetAssoc::new(machine.l1d.lines(), machine.l1d.ways))
                .collect(),
            l1i: (0..cores)
                .map(|_| SetAssoc::new(machine.l1i.lines(), machine.l1i.ways))
                .collect(),
            l2: (0..cores)
                .map(|_| SetAssoc::new(machine.l2.lines(), machine.l2.ways))
                .collect(),
            l3: (0..sockets)
                .map(|_| SetAssoc::new(machine.l3.lines(), machine.l3.ways))
                .collect(),
            socket: (0..cores).map(|c| (c / per) as u8).collect(),
            lat: machine.lat,
            owner: vec![0; state_lines],
            home: vec![0; state_lines],
            ring: vec![0; cores],
            counters: vec![CoreCounters::default(); cores],
        }
    }

    pub fn cores(&self) -> usize {
        self.l1.len()
    }

    pub fn sockets(&self) -> usize {
        self.l3.len()
    }

    /// The core whose private caches may hold `line`: its owner for a state line, the core in its address for a
    /// stream line.
    #[inline]
    fn holder(&self, line: u32) -> Option<usize> {
        if line >= STREAM_BASE {
            Some(((line - STREAM_BASE) >> 24) as usize).filter(|&c| c < self.l1.len())
        } else {
            match self.owner.get(line as usize) {
                Some(&o) if o > 0 => Some(usize::from(o - 1)),
                _ => None,
            }
        }
    }

    /// Put a line in core `c`'s L2 and L1 (L2 first; its victim leaves that L1 too).
    #[inline]
    fn fill_private(&mut self, c: usize, line: u32) {
        if let Some(v) = self.l2[c].insert(line) {
            self.l1[c].remove(v);
        }
        if !self.l1[c].touch(line) {
            self.l1[c].insert(line);
        }
    }

    /// Make `line` present and most recent in socket `s`'s L3, back-invalidating what it evicts.
    #[inline]
    fn fill_l3(&mut self, s: usize, line: u32) {
        if !self.l3[s].touch(line) {
            self.insert_l3(s, line);
        }
    }

    /// Insert an absent line in socket `s`'s L3; the line it evicts leaves its holder's private caches (inclusion).
    #[inline]
    fn insert_l3(&mut self, s: usize, line: u32) {
        if let Some(v) = self.l3[s].insert(line)
            && let Some(h) = self.holder(v)
            && usize::from(self.socket[h]) == s
        {
            self.l2[h].remove(v);
            self.l1[h].remove(v);
        }
    }

    /// Core `c` reads and writes state line `line`: where it was served and the stall cycles charged.
    pub fn access_state(&mut self, c: usize, line: u32) -> (Served, u32) {
        let c = c.min(self.l1.len() - 1);
        let line = line % STREAM_BASE;
        let s = usize::from(self.socket[c]);
        let lat = self.lat;
        let k = &mut self.counters[c];
        k.state += 1;
        if self.l1[c].touch(line) {
            return (Served::L1, 0);
        }
        k.l1_miss += 1;
        if self.l2[c].touch(line) {
            k.stall_cycles += u64::from(lat.l2);
            if !self.l1[c].touch(line) {
                self.l1[c].insert(line);
            }
            self.set_owner(line, c);
            return (Served::L2, lat.l2);
        }
        k.l2_miss += 1;
        let served = match self.holder(line) {
            Some(h) if h != c && self.l2[h].contains(line) => {
                self.l2[h].remove(line);
                self.l1[h].remove(line);
                let hs = usize::from(self.socket[h]);
                if hs == s {
                    Served::XferSocket
                } else {
                    self.l3[hs].remove(line);
                    Served::XferRemote
                }
            }
            _ => {
                if self.l3[s].contains(line) {
                    Served::L3
                } else {
                    let mut remote = false;
                    for o in 0..self.l3.len() {
                        if o != s && self.l3[o].remove(line) {
                            remote = true;
                        }
                    }
                    if remote {
                        Served::XferRemote
                    } else {
                        let home = self.home.get_mut(line as usize);
                        match home {
                            Some(h) if *h == 0 => {
                                *h = s as u8 + 1;
                                Served::MemLocal
                            }
                            Some(h) if usize::from(*h - 1) != s => Served::MemRemote,
                            _ => Served::MemLocal,
                        }
                    }
                }
            }
        };
        let cost = match served {
            Served::L1 | Served::L2 => 0,
            Served::XferSocket => lat.xfer_socket,
            Served::L3 => lat.l3,
            Served::XferRemote => lat.xfer_remote,
            Served::MemLocal => lat.mem_local,
            Served::MemRemote => lat.mem_remote,
        };
        let k = &mut self.counters[c];
        match served {
            Served::XferSocket => k.xfer_socket += 1,
            Served::XferRemote => {
                k.xfer_remote += 1;
                k.l3_miss += 1;
            }
            Served::MemLocal | Served::MemRemote => {
                k.mem += 1;
                k.l3_miss += 1;
            }
            _ => {}
        }
        k.stall_cycles += u64::from(cost);
        self.fill_l3(s, line);
        self.fill_private(c, line);
        self.set_owner(line, c);
        (served, cost)
    }

    #[inline]
    fn set_owner(&mut self, line: u32, c: usize) {
        if let Some(o) = self.owner.get_mut(line as usize) {
            *o = c as u8 + 1;
        }
    }

    /// Core `c` brings `n` fresh lines into its caches (its packet's bytes and scratch). A core's ring holds 2^24
    /// lines, more than any modelled L3, so a line is long evicted everywhere before its number comes back.
    pub fn stream(&mut self, c: usize, n: usize) {
        let c = c.min(self.l1.len() - 1);
        let s = usize::from(self.socket[c]);
        for _ in 0..n {
            let r = self.ring[c];
            self.ring[c] = (r + 1) % RING;
            let line = STREAM_BASE | ((c as u32) << 24) | r;
            self.insert_l3(s, line);
            if let Some(v) = self.l2[c].insert(line) {
                self.l1[c].remove(v);
            }
            self.l1[c].insert(line);
        }
        self.counters[c].stream += n as u64;
    }

    /// Core `c` reads `n` lines that core `from` just wrote (a `ph` handoff's copied layers): coherence transfers,
    /// counted as L1 and L2 misses, and the lines then occupy `c`'s caches. Returns the stall cycles.
    pub fn transfer(&mut self, c: usize, from: usize, n: usize) -> u64 {
        let c = c.min(self.l1.len() - 1);
        let from = from.min(self.l1.len() - 1);
        if n == 0 || c == from {
            return 0;
        }
        let remote = self.socket[c] != self.socket[from];
        let each = if remote {
            self.lat.xfer_remote
        } else {
            self.lat.xfer_socket
        };
        let cost = u64::from(each) * n as u64;
        let k = &mut self.counters[c];
        k.l1_miss += n as u64;
        k.l2_miss += n as u64;
        if remote {
            k.xfer_remote += n as u64;
            k.l3_miss += n as u64;
        } else {
            k.xfer_socket += n as u64;
        }
        k.handoff_lines += n as u64;
        k.stall_cycles += cost;
        self.stream(c, n);
        self.counters[c].stream -= n as u64;
        cost
    }

    /// Core `c` executes code line `n` (below [`CODE_LINES`]): a hit in its L1i costs nothing; a miss is served by its
    /// L2 (unified: code competes with state and stream lines there), else by its socket's L3, else by memory (the
    /// first fetch on a socket), each at the latency of the level, charged in full as the state accesses are (a
    /// next-line prefetcher would hide part of a sequential run; not modelled). Returns the stall cycles.
    pub fn fetch_code(&mut self, c: usize, n: u32) -> u32 {
        let c = c.min(self.l1.len() - 1);
        let line = CODE_BASE | (n % CODE_LINES);
        let k = &mut self.counters[c];
        k.code += 1;
        if self.l1i[c].touch(line) {
            return 0;
        }
        k.code_l1_miss += 1;
        let s = usize::from(self.socket[c]);
        let cost = if self.l2[c].touch(line) {
            self.lat.l2
        } else {
            k.code_l2_miss += 1;
            let cost = if self.l3[s].contains(line) {
                self.lat.l3
            } else {
                self.lat.mem_local
            };
            self.fill_l3(s, line);
            if let Some(v) = self.l2[c].insert(line) {
                self.l1[c].remove(v);
            }
            cost
        };
        self.l1i[c].insert(line);
        let k = &mut self.counters[c];
        k.code_stall_cycles += u64::from(cost);
        cost
    }

    /// Whether core `c` has state line `line` in its L1 (tests and reports).
    pub fn in_l1(&self, c: usize, line: u32) -> bool {
        self.l1.get(c).is_some_and(|l| l.contains(line))
    }

    /// Whether core `c` has `line` in its L2.
    pub fn in_l2(&self, c: usize, line: u32) -> bool {
        self.l2.get(c).is_some_and(|l| l.contains(line))
    }

    /// Whether socket `s`'s L3 has `line`.
    pub fn in_l3(&self, s: usize, line: u32) -> bool {
        self.l3.get(s).is_some_and(|l| l.contains(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::CacheGeometry;

    #[test]
    fn code_that_fits_the_l1i_misses_once_and_code_that_does_not_keeps_missing() {
        let m = Machine::nehalem();
        let lines = m.l1i.lines() as u32;
        let mut h = Hierarchy::new(&m, 2, 16);
        // Half the L1i, fetched twice: only the first pass misses (to memory, then it is in L2 and L3).
        for _ in 0..2 {
            for n in 0..lines / 2 {
                h.fetch_code(0, n);
            }
        }
        let k = h.counters[0];
        assert_eq!(
            (k.code, k.code_l1_miss, k.code_l2_miss),
            (u64::from(lines), u64::from(lines / 2), u64::from(lines / 2))
        );
        assert_eq!(
            k.code_stall_cycles,
            u64::from(lines / 2) * u64::from(m.lat.mem_local)
        );
        // Twice the L1i in a loop on core 1: LRU keeps missing the L1i, but the L2 holds it all (and the L3 already
        // had the first half from core 0).
        for _ in 0..3 {
            for n in 0..2 * lines {
                h.fetch_code(1, n);
            }
        }
        let k = h.counters[1];
        assert_eq!(
            k.code_l1_miss, k.code,
            "an LRU loop larger than the cache misses every time"
        );
        assert_eq!(
            k.code_l2_miss,
            u64::from(2 * lines),
            "the L2 holds the loop after its first pass"
        );
        assert_eq!(
            h.counters[0].code,
            u64::from(lines),
            "core 1's fetches are its own"
        );
    }

    #[test]
    fn lru_evicts_the_least_recently_used_way() {
        let mut c = SetAssoc::new(4, 2); // 2 sets × 2 ways
        assert_eq!(c.insert(0), None);
        assert_eq!(c.insert(2), None); // same set as 0
        assert!(c.touch(0)); // 2 is now LRU
        assert_eq!(c.insert(4), Some(2));
        assert!(c.contains(0) && c.contains(4) && !c.contains(2));
        assert_eq!(c.insert(1), None, "other set");
        assert!(c.remove(4));
        assert!(!c.remove(4));
        assert_eq!(c.occupied(), 2);
    }

    #[test]
    fn non_power_of_two_sets_and_sixteen_ways_keep_lru_order() {
        let mut c = SetAssoc::new(9, 3); // 3 sets
        for l in [0, 3, 6] {
            c.insert(l);
        }
        assert!(c.touch(0)); // order (old → new): 3, 6, 0
        assert!(c.touch(3)); // 6, 0, 3
        assert_eq!(c.insert(9), Some(6));
        assert_eq!(c.insert(12), Some(0));
        // 16 ways: the order uses every nibble of the u64.
        let mut c = SetAssoc::new(16, 16);
        for l in 0..16 {
            assert_eq!(c.insert(l), None);
        }
        assert!(c.touch(0));
        assert!(c.remove(5));
        assert_eq!(c.insert(100), None, "the vacated way is reused first");
        assert_eq!(c.insert(101), Some(1), "then the least recent");
        assert!(c.contains(0) && c.contains(100) && !c.contains(1));
        assert_eq!(c.occupied(), 16);
    }

    proptest::proptest! {
        /// The nibble order behaves exactly like a reference LRU list per set.
        #[test]
        fn matches_a_reference_lru(ops in proptest::collection::vec((0u8..3, 0u32..40), 0..400), ways in 1usize..=16) {
            let sets = 3usize;
            let mut c = SetAssoc::new(sets * ways, ways);
            let mut reference: Vec<Vec<u32>> = vec![Vec::new(); sets]; // least recent first
            for (op, line) in ops {
                let r = &mut reference[line as usize % sets];
                match op {
                    0 => {
                        let hit = c.touch(line);
                        proptest::prop_assert_eq!(hit, r.contains(&line));
                        if hit {
                            r.retain(|&x| x != line);
                            r.push(line);
                        } else {
                            let ev = c.insert(line);
                            let want = if r.len() == ways { Some(r.remove(0)) } else { None };
                            proptest::prop_assert_eq!(ev, want);
                            r.push(line);
                        }
                    }
                    1 => {
                        let had = r.contains(&line);
                        proptest::prop_assert_eq!(c.remove(line), had);
                        r.retain(|&x| x != line);
                    }
                    _ => proptest::prop_assert_eq!(c.contains(line), r.contains(&line)),
                }
            }
        }
    }

    fn tiny() -> Machine {
        Machine {
            name: "tiny".into(),
            clock_ghz: 1.0,
            cores_per_socket: 2,
            l1d: CacheGeometry {
                bytes: 4 * 64,
                ways: 2,
            },
            l1i: CacheGeometry {
                bytes: 4 * 64,
                ways: 2,
            },
            l2: CacheGeometry {
                bytes: 16 * 64,
                ways: 4,
            },
            l3: CacheGeometry {
                bytes: 64 * 64,
                ways: 4,
            },
            lat: Latencies {
                l2: 10,
                l3: 40,
                mem_local: 200,
                mem_remote: 300,
                xfer_socket: 70,
                xfer_remote: 250,
            },
        }
    }

    #[test]
    fn first_touch_goes_to_memory_then_hits_l1() {
        let mut h = Hierarchy::new(&tiny(), 2, 100);
        assert_eq!(h.access_state(0, 5), (Served::MemLocal, 200));
        assert_eq!(h.access_state(0, 5), (Served::L1, 0));
        let k = h.counters[0];
        assert_eq!(
            (k.state, k.l1_miss, k.l2_miss, k.l3_miss, k.mem),
            (2, 1, 1, 1, 1)
        );
        assert_eq!(k.stall_cycles, 200);
    }

    #[test]
    fn streaming_evicts_state_from_l1_then_l2_then_l3() {
        let mut h = Hierarchy::new(&tiny(), 1, 100);
        h.access_state(0, 1);
        h.stream(0, 4); // 4 fresh lines through a 4-line L1: line 1 leaves L1
        assert!(!h.in_l1(0, 1) && h.in_l2(0, 1));
        assert_eq!(h.access_state(0, 1), (Served::L2, 10));
        h.stream(0, 16); // through the whole L2
        assert!(!h.in_l2(0, 1) && h.in_l3(0, 1));
        assert_eq!(h.access_state(0, 1), (Served::L3, 40));
        h.stream(0, 64); // through the whole L3
        assert!(!h.in_l3(0, 1));
        assert!(
            !h.in_l1(0, 1) && !h.in_l2(0, 1),
            "inclusive L3 back-invalidates"
        );
        assert_eq!(h.access_state(0, 1), (Served::MemLocal, 200));
        assert_eq!(h.counters[0].stream, 84);
    }

    #[test]
    fn state_modified_on_another_core_pays_a_transfer_and_moves() {
        let mut h = Hierarchy::new(&tiny(), 4, 100); // cores 0,1 on socket 0; 2,3 on socket 1
        h.access_state(0, 7);
        assert_eq!(h.access_state(1, 7), (Served::XferSocket, 70));
        assert!(
            !h.in_l1(0, 7) && !h.in_l2(0, 7),
            "the previous owner lost it"
        );
        assert_eq!(h.access_state(2, 7), (Served::XferRemote, 250));
        assert!(!h.in_l3(0, 7) && h.in_l3(1, 7));
        // Back on socket 0: the line now lives on socket 1 only.
        h.stream(2, 16); // push it out of core 2's private caches; socket 1's L3 still has it
        assert_eq!(h.access_state(0, 7), (Served::XferRemote, 250));
        // Its home is socket 0 (first touch): after leaving every cache, socket 1 pays remote memory.
        let mut h = Hierarchy::new(&tiny(), 4, 100);
        h.access_state(0, 9);
        h.stream(0, 64);
        assert_eq!(h.access_state(2, 9), (Served::MemRemote, 300));
    }

    #[test]
    fn out_of_range_inputs_do_not_panic() {
        let mut h = Hierarchy::new(&tiny(), 1, 10);
        assert_eq!(h.access_state(5, 1_000_000).0, Served::MemLocal);
        h.stream(9, 3);
        assert!(!h.in_l1(7, 1));
        let mut z = Hierarchy::new(&tiny(), 0, 0);
        assert_eq!(z.cores(), 1);
        z.access_state(0, STREAM_BASE + 5);
    }
}
