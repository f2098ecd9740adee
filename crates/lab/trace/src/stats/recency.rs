//! # Distinct flows since a flow's previous packet, in O(log n) per packet and memory bounded by the flows
//!
//! The unique flow rate (Verdú's thesis, §3.2.2) needs, for every packet of a flow seen before, the number of
//! *distinct* flows among the packets since that flow's previous packet. Counting them by walking the window is
//! O(window) per packet, and windows of thousands of packets are common on busy links (the thesis: "from hundreds
//! to thousands"), so a naive scan is O(n·window).
//!
//! The classic trick: mark, for every flow, only the position of its *last* packet so far. Every flow that appears
//! in the window after flow *f*'s previous packet at position *p* has its last packet after *p*, and every flow
//! whose last packet is after *p* appeared in the window; so the distinct count is the number of marks after *p*,
//! one prefix sum in a Fenwick (binary indexed) tree. Then *f*'s mark moves from *p* to now.
//!
//! Positions grow without bound in a stream, but only live marks matter (one per tracked flow), so marks are kept
//! under *stamps* that are renumbered when they run out: when the stamp space is used up, the live marks are
//! compacted to stamps `0..live` in order (which keeps every count unchanged) and the tree is rebuilt in O(size).
//! The space is at least twice the live marks after a compaction, so compaction costs O(1) amortised per packet,
//! and memory is about 12 bytes per flow, whatever the capture length.

/// Free slot in `owner`.
const NONE: u32 = u32::MAX;

/// Smallest stamp space.
const MIN_SPACE: usize = 1024;

/// Last-packet marks of every flow, answering "how many flows have had a packet since flow `f`'s last one".
#[derive(Debug, Clone, Default)]
pub(crate) struct Recency {
    /// Fenwick tree over stamps, 1-based (`tree[0]` unused): `tree[i]` sums the marks in `(i - lowbit(i), i]`.
    tree: Vec<u32>,
    /// `owner[s]`: the flow whose mark has stamp `s`, or [`NONE`].
    owner: Vec<u32>,
    /// `stamp_of[f]`: the stamp of flow `f`'s mark, or [`NONE`] before its first packet.
    stamp_of: Vec<u32>,
    /// Next stamp to hand out; stamps `next..` are unused.
    next: usize,
    /// Live marks (flows seen).
    live: usize,
    /// Compactions done (for tests and the curious).
    compactions: u64,
}

impl Recency {
    pub(crate) fn new() -> Self {
        Recency::default()
    }

    /// Records a packet of flow `flow` (a dense index: flows are numbered 0, 1, 2, ... as they appear). Returns
    /// `None` for the flow's first packet, else the number of distinct *other* flows with a packet since the
    /// flow's previous one.
    pub(crate) fn touch(&mut self, flow: u32) -> Option<u64> {
        let f = flow as usize;
        if f >= self.stamp_of.len() {
            self.stamp_of.resize(f + 1, NONE);
        }
        let distinct = match self.stamp_of[f] {
            NONE => {
                self.live += 1;
                None
            }
            s => {
                let s = s as usize;
                // Marks after s: every live mark, less those at or before s. Flow f's own mark is at s.
                let after = self.live as u64 - self.prefix(s + 1);
                self.add(s + 1, -1);
                self.owner[s] = NONE;
                Some(after)
            }
        };
        if self.next == self.owner.len() {
            self.compact();
        }
        let s = self.next;
        self.next += 1;
        self.owner[s] = flow;
        self.stamp_of[f] = s as u32;
        self.add(s + 1, 1);
        distinct
    }

    /// Bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        (self.tree.capacity() + self.owner.capacity() + self.stamp_of.capacity()) * 4
    }

    #[cfg(test)]
    pub(crate) fn compactions(&self) -> u64 {
        self.compactions
    }

    /// Sum of marks at 1-based positions `1..=i`.
    fn prefix(&self, mut i: usize) -> u64 {
        let mut sum = 0u64;
        while i > 0 {
            sum += u64::from(self.tree[i]);
            i &= i - 1;
        }
        sum
    }

    fn add(&mut self, mut i: usize, delta: i32) {
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Renumbers the live marks to `0..live` (order kept) in a space at least twice as large, and rebuilds the
    /// tree. `live` counts the flow being touched, whose mark is not placed yet.
    fn compact(&mut self) {
        let space = (self.live * 2).max(MIN_SPACE).next_power_of_two();
        let mut owner = vec![NONE; space];
        let mut n = 0;
        for &f in &self.owner[..self.next] {
            if f != NONE {
                owner[n] = f;
                self.stamp_of[f as usize] = n as u32;
                n += 1;
            }
        }
        // Linear-time Fenwick build: every node adds itself to its parent.
        let mut tree = vec![0u32; space + 1];
        for i in 1..=space {
            tree[i] += u32::from(owner[i - 1] != NONE);
            let parent = i + (i & i.wrapping_neg());
            if parent <= space {
                tree[parent] += tree[i];
            }
        }
        self.owner = owner;
        self.tree = tree;
        self.next = n;
        if self.owner.is_empty() {
            // Unreachable (space >= MIN_SPACE), kept so `touch` can never index an empty vector.
            self.owner.push(NONE);
            self.tree.resize(2, 0);
        }
        self.compactions += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition, by brute force: distinct flows strictly between the flow's previous packet and now.
    fn brute(seq: &[u32]) -> Vec<Option<u64>> {
        seq.iter()
            .enumerate()
            .map(|(i, &f)| {
                let prev = seq[..i].iter().rposition(|&g| g == f)?;
                let mut seen: Vec<u32> = seq[prev + 1..i].to_vec();
                seen.sort_unstable();
                seen.dedup();
                Some(seen.len() as u64)
            })
            .collect()
    }

    #[test]
    fn thesis_figure_3_2() {
        // A B C D E A: four distinct flows in a window of four packets (rate 1).
        let mut r = Recency::new();
        let got: Vec<_> = [0, 1, 2, 3, 4, 0].iter().map(|&f| r.touch(f)).collect();
        assert_eq!(got, vec![None, None, None, None, None, Some(4)]);
        // A B B C C A: two distinct flows in four packets (rate 0.5).
        let mut r = Recency::new();
        let got: Vec<_> = [0, 1, 1, 2, 2, 0].iter().map(|&f| r.touch(f)).collect();
        assert_eq!(got[5], Some(2));
        // Back-to-back packets of one flow: an empty window.
        assert_eq!(got[2], Some(0));
    }

    #[test]
    fn compaction_keeps_counts_over_long_streams() {
        // Three flows cycling for many times the stamp space: every window holds the two others.
        let mut r = Recency::new();
        for i in 0..100_000u32 {
            let d = r.touch(i % 3);
            if i >= 3 {
                assert_eq!(d, Some(2), "packet {i}");
            }
        }
        assert!(r.compactions() > 50);
        // Memory stays at the minimum space: three live marks.
        assert!(r.memory_bytes() < 64 * 1024, "{}", r.memory_bytes());
    }

    proptest! {
        #[test]
        fn matches_brute_force(seq in proptest::collection::vec(0u32..40, 0..1500)) {
            let mut r = Recency::new();
            let got: Vec<_> = seq.iter().map(|&f| r.touch(f)).collect();
            prop_assert_eq!(got, brute(&seq));
        }
    }
}
