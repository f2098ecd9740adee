//! # Maximum bit rate sustained over a window (ANCS'10: "sustained for a minimum of one millisecond")
//!
//! **Definition.** The window (1 ms by default) is cut into [`BUCKETS`] buckets of equal length (1 µs for 1 ms), and
//! time is cut into buckets from the Unix epoch. A packet's bits (its wire length, `orig_len`, × 8) fall in the
//! bucket of its timestamp. The maximum rate is the largest number of bits in any [`BUCKETS`] consecutive buckets,
//! divided by the window: a window sliding in steps of one bucket. pcap timestamps are microseconds, so for a 1 ms
//! window this is exactly the best window `[t, t + 1 ms)` over every start `t`; with nanosecond timestamps the start
//! is rounded down to the microsecond.
//!
//! Windows of exactly the minimum length, not longer: the paper's harness scales the capture so that this peak
//! matches the link, and a longer window can only average the peak down or (for a gap of a fraction of a window
//! between two bursts) report a rate no single window of the minimum length ever carried.
//!
//! **Cost.** A ring of [`BUCKETS`] counters (8 KiB) and a running sum: O(1) per packet, amortised over the buckets
//! time moves through, and constant memory whatever the rate.
//!
//! **Out-of-order timestamps.** A packet up to one window older than the newest one is added to its bucket and so
//! counts in the current window, but windows already passed are not revisited (counted in
//! [`RateMeter::reordered`]). A packet more than a window older is left out of the maximum (counted in
//! [`RateMeter::too_late`]). Both are zero on captures in time order.

/// Buckets per window: the window's time resolution (1 µs for 1 ms).
pub const BUCKETS: usize = 1000;

/// The best window found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Peak {
    /// Wire bytes in the best window.
    pub bytes: u64,
    /// Start of the best window, ns since the epoch.
    pub start_ns: u64,
}

/// Sliding-window maximum of wire bytes per window.
#[derive(Debug, Clone)]
pub struct RateMeter {
    bucket_ns: u64,
    ring: Box<[u64; BUCKETS]>,
    /// Bucket number of the newest bucket; `None` before the first packet.
    head: Option<u64>,
    /// Bytes in buckets `head - BUCKETS + 1 ..= head`.
    sum: u64,
    best: Peak,
    reordered: u64,
    too_late: u64,
}

impl RateMeter {
    /// A meter for windows of `window_ns` (at least [`BUCKETS`] ns, so that a bucket is at least 1 ns).
    pub fn new(window_ns: u64) -> Self {
        let window_ns = window_ns.max(BUCKETS as u64);
        RateMeter {
            bucket_ns: window_ns / BUCKETS as u64,
            ring: Box::new([0; BUCKETS]),
            head: None,
            sum: 0,
            best: Peak::default(),
            reordered: 0,
            too_late: 0,
        }
    }

    /// The window length actually used (a whole number of buckets).
    pub fn window_ns(&self) -> u64 {
        self.bucket_ns * BUCKETS as u64
    }

    /// Adds a packet of `bytes` wire bytes at `ts_ns`.
    #[inline]
    pub fn add(&mut self, ts_ns: u64, bytes: u64) {
        let b = ts_ns / self.bucket_ns;
        let Some(head) = self.head else {
            self.head = Some(b);
            self.ring[slot(b)] = bytes;
            self.sum = bytes;
            return;
        };
        if b > head {
            self.advance(head, b);
        } else if b < head {
            if head - b >= BUCKETS as u64 {
                self.too_late += 1;
                return;
            }
            self.reordered += 1;
        }
        self.ring[slot(b)] += bytes;
        self.sum += bytes;
    }

    /// Moves the newest bucket from `head` to `to`, closing the window that ends at `head` first: windows ending
    /// between the two hold a subset of its packets, so they cannot beat it.
    fn advance(&mut self, head: u64, to: u64) {
        self.consider(head);
        if to - head >= BUCKETS as u64 {
            self.ring.fill(0);
            self.sum = 0;
        } else {
            for k in head + 1..=to {
                // Bucket k reuses the slot of bucket k - BUCKETS, which leaves the window.
                let s = slot(k);
                self.sum -= self.ring[s];
                self.ring[s] = 0;
            }
        }
        self.head = Some(to);
    }

    fn consider(&mut self, head: u64) {
        if self.sum > self.best.bytes {
            self.best = Peak {
                bytes: self.sum,
                start_ns: (head + 1).saturating_sub(BUCKETS as u64) * self.bucket_ns,
            };
        }
    }

    /// The best window so far (including the one still open).
    pub fn peak(&self) -> Peak {
        let mut m = self.clone();
        if let Some(h) = self.head {
            m.consider(h);
        }
        m.best
    }

    /// Packets older than the newest one but within a window of it.
    pub fn reordered(&self) -> u64 {
        self.reordered
    }

    /// Packets more than a window older than the newest one, left out of the maximum.
    pub fn too_late(&self) -> u64 {
        self.too_late
    }
}

#[inline(always)]
fn slot(bucket: u64) -> usize {
    (bucket % BUCKETS as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    /// The definition by brute force over µs-aligned window starts.
    fn brute(pkts: &[(u64, u64)]) -> u64 {
        let mut best = 0;
        for &(t, _) in pkts {
            // The best window starts at some packet's bucket (moving the start later until it hits a packet never
            // loses bits).
            let start = t / 1000 * 1000;
            let sum: u64 = pkts
                .iter()
                .filter(|&&(u, _)| u / 1000 * 1000 >= start && u / 1000 * 1000 < start + MS)
                .map(|&(_, b)| b)
                .sum();
            best = best.max(sum);
        }
        best
    }

    #[test]
    fn window_edges() {
        let mut m = RateMeter::new(MS);
        // 1000 bytes at t = 0 and 1000 at t = 999 µs: one window; a third at exactly 1 ms starts the next.
        m.add(5 * MS, 1000);
        m.add(5 * MS + 999_000, 1000);
        m.add(6 * MS, 1000);
        assert_eq!(
            m.peak(),
            Peak {
                bytes: 2000,
                start_ns: 5 * MS
            }
        );
        // A burst later wins and reports its start.
        for i in 0..3 {
            m.add(9 * MS + 10_000 + i, 1500);
        }
        assert_eq!(m.peak().bytes, 4500);
        assert_eq!(m.peak().start_ns, 9 * MS + 10_000 + 1000 - MS);
        assert_eq!((m.reordered(), m.too_late()), (0, 0));
    }

    #[test]
    fn out_of_order_is_counted() {
        let mut m = RateMeter::new(MS);
        m.add(10 * MS, 100);
        m.add(10 * MS - 500_000, 100);
        m.add(2 * MS, 100);
        assert_eq!(m.reordered(), 1);
        assert_eq!(m.too_late(), 1);
        assert_eq!(m.peak().bytes, 200);
    }

    proptest! {
        #[test]
        fn sorted_input_matches_brute_force(
            mut pkts in proptest::collection::vec((0u64..20 * MS, 1u64..2000), 1..200)
        ) {
            pkts.sort_unstable();
            let mut m = RateMeter::new(MS);
            for &(t, b) in &pkts {
                m.add(t, b);
            }
            prop_assert_eq!(m.peak().bytes, brute(&pkts));
        }
    }
}
