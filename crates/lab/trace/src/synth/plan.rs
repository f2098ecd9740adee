//! Which flows a trace has: their sizes (packets), applications and start order, computed from the rank of each
//! flow without a table, so a plan of a million flows costs a few hundred bytes.
//!
//! **Sizes** follow a rank-size Zipf law: the flow of rank `r` (1 = largest) gets `scale · r^−α` packets, rounded,
//! at most `cap`, at least the smallest size its application allows. `scale` is found by bisection so that the
//! flows sum to the requested packets (the sum is computed per size class, not per flow: O(r₀ + 1024) per step).
//! The dominant connection, when there is one, is apart from the ranks: it gets `share / (1 − share)` times the
//! other flows' packets, which makes its share exact.
//!
//! **Applications** are drawn per rank from the configured mix, among those whose packet range holds the size
//! (a DNS exchange is short, a TLS connection has at least 14 packets), so the mix is by flow count.
//!
//! **Start order** is a pseudo-random permutation of the ranks (a Feistel network over the rank space, cycle
//! walking), except that the few *big* flows (more than 5% of what one concurrency slot carries) are spread over the
//! first half of the order. A big flow started near the end would outlive every other flow and leave a tail of
//! the trace with almost no concurrency; started in the first half, and sped up so that no flow lasts more than a
//! quarter of the trace (see `schedule`), every flow ends before the others do.

use super::apps::GeneratedApp;
use super::content::mix;

/// A keyed permutation of `[0, n)`: a 4-round Feistel network on the smallest even power of two ≥ n, with cycle
/// walking (values ≥ n are permuted again until they fall in range).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Permutation {
    n: u64,
    half_bits: u32,
    key: u64,
}

impl Permutation {
    pub(crate) fn new(n: u64, key: u64) -> Permutation {
        let bits = 64 - n.max(2).saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        Permutation { n, half_bits, key }
    }

    fn round(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for i in 0..4u64 {
            let f = mix(self.key ^ i, r) & mask;
            let nl = r;
            r = l ^ f;
            l = nl;
        }
        (l << self.half_bits) | r
    }

    /// The image of `x < n`.
    pub(crate) fn apply(&self, x: u64) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        let mut y = self.round(x);
        while y >= self.n {
            y = self.round(y);
        }
        y
    }
}

/// The flows of a trace (besides the dominant connection).
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Number of ranked flows.
    pub flows: u64,
    alpha: f64,
    scale: f64,
    cap: u64,
    seed: u64,
    weights: [f64; 9],
    /// Smallest size a flow whose Zipf size is `t` can have, for `t < SMALL`.
    min_for: [u64; SMALL as usize],
    /// Ranks 1..=big are the big flows, placed at the front of the order.
    big: u64,
    /// Packets of all ranked flows.
    pub total: u64,
}

/// Sizes below this are looked up (applications have minimum sizes up to 20 packets).
const SMALL: u64 = 1024;

impl Plan {
    /// A plan of `flows` ranked flows summing to about `packets`, Zipf exponent `alpha`, sizes at most `cap`,
    /// applications drawn with `weights` (indexed like [`GeneratedApp::ALL`]).
    pub(crate) fn new(
        flows: u64,
        packets: u64,
        alpha: f64,
        cap: u64,
        weights: [f64; 9],
        seed: u64,
    ) -> Plan {
        let flows = flows.max(1);
        let cap = cap.max(1);
        let mut min_for = [0u64; SMALL as usize];
        for (t, m) in min_for.iter_mut().enumerate() {
            let t = t as u64;
            *m = GeneratedApp::ALL
                .iter()
                .zip(weights)
                .filter(|(_, w)| *w > 0.0)
                .map(|(a, _)| {
                    if t >= a.min_packets() && t <= a.max_packets() {
                        t
                    } else if t < a.min_packets() {
                        a.min_packets()
                    } else {
                        u64::MAX
                    }
                })
                .min()
                .unwrap_or(t.max(2));
        }
        let mut plan = Plan {
            flows,
            alpha,
            scale: 1.0,
            cap,
            seed,
            weights,
            min_for,
            big: 0,
            total: 0,
        };
        // Bisection on log(scale): the sum grows with the scale.
        let (mut lo, mut hi) = (0.0f64, 60.0f64);
        for _ in 0..64 {
            let mid = (lo + hi) / 2.0;
            plan.scale = mid.exp();
            if plan.sum() < packets {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        plan.scale = hi.exp();
        plan.total = plan.sum();
        plan
    }

    fn zipf(&self, rank: u64) -> u64 {
        let raw = self.scale * (rank as f64).powf(-self.alpha);
        (raw.round() as u64).clamp(1, self.cap)
    }

    fn realized(&self, t: u64) -> u64 {
        if t < SMALL {
            self.min_for[t as usize]
        } else {
            t
        }
    }

    /// Packets of all ranked flows at the current scale.
    fn sum(&self) -> u64 {
        let mut total: u64 = 0;
        // Ranks whose size is at least SMALL one by one, then the rest by size class.
        let mut r = 1;
        while r <= self.flows {
            let t = self.zipf(r);
            if t < SMALL {
                break;
            }
            total = total.saturating_add(t);
            r += 1;
        }
        if r > self.flows {
            return total;
        }
        // Sizes are non-increasing in the rank, so the ranks of size at least t are a prefix [1, R(t)]: estimate
        // R(t) from the inverse of the Zipf law, then step it to the exact boundary.
        let inv = 1.0 / self.alpha.max(1e-9);
        let prefix = |t: u64, floor: u64| -> u64 {
            let est = if self.alpha <= 1e-9 {
                self.flows
            } else {
                ((self.scale / (t as f64 - 0.5)).powf(inv).floor() as u64).clamp(floor, self.flows)
            };
            let mut r = est.max(floor);
            while r < self.flows && self.zipf(r + 1) >= t {
                r += 1;
            }
            while r > floor && self.zipf(r) < t {
                r -= 1;
            }
            r
        };
        let mut prev = r - 1;
        for t in (1..SMALL).rev() {
            let upto = if t == 1 { self.flows } else { prefix(t, prev) };
            if upto > prev {
                total = total.saturating_add((upto - prev) * self.realized(t));
                prev = upto;
            }
            if prev >= self.flows {
                break;
            }
        }
        total
    }

    /// Application and packets of the flow of `rank` (1-based).
    pub(crate) fn flow(&self, rank: u64) -> (GeneratedApp, u64) {
        let t = self.zipf(rank);
        let candidates = GeneratedApp::ALL
            .iter()
            .zip(self.weights)
            .filter(|(a, w)| *w > 0.0 && t >= a.min_packets() && t <= a.max_packets());
        let total: f64 = candidates.clone().map(|(_, w)| w).sum();
        if total > 0.0 {
            let u = (mix(self.seed ^ 0x0061_7070, rank) >> 11) as f64 / (1u64 << 53) as f64 * total;
            let mut acc = 0.0;
            let mut last = GeneratedApp::Dns;
            for (a, w) in candidates {
                acc += w;
                last = *a;
                if u < acc {
                    return (*a, t);
                }
            }
            return (last, t);
        }
        // No application fits this size: the one whose smallest flow is closest.
        let best = GeneratedApp::ALL
            .iter()
            .zip(self.weights)
            .filter(|(a, w)| *w > 0.0 && a.max_packets() >= t)
            .min_by_key(|(a, _)| a.min_packets())
            .map_or(GeneratedApp::OpaqueUdp, |(a, _)| *a);
        (best, t.max(best.min_packets()))
    }

    /// Sets which ranks count as big for a concurrency of `k` slots (more than 5% of a slot's packets).
    pub(crate) fn set_slots(&mut self, k: u64) {
        let slot = self.total as f64 / k.max(1) as f64;
        let limit = (slot * 0.05).max(1.0) as u64;
        let mut big = 0;
        while big < self.flows && big < 1 << 20 && self.flow(big + 1).1 > limit {
            big += 1;
        }
        // Room for them in the first half.
        self.big = big.min(self.flows / 2);
    }

    /// The rank of the `j`-th flow to start (0-based).
    pub(crate) fn rank_at(&self, j: u64) -> u64 {
        let half = (self.flows / 2).max(1);
        if self.big > 0 && j < half {
            // Big flow b sits at position floor(b · half / big).
            let b = (j * self.big).div_ceil(half);
            if b < self.big && b * half / self.big == j {
                return b + 1;
            }
        }
        // Small flows fill the other positions in permuted order.
        let bigs_before = if j < half {
            (j * self.big).div_ceil(half).min(self.big)
        } else {
            self.big
        };
        let s = j - bigs_before;
        let small = self.flows - self.big;
        if small == 0 {
            return (j % self.flows) + 1;
        }
        let p = Permutation::new(small, self.seed ^ 0x736d_616c);
        self.big + 1 + p.apply(s % small)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 10, 1000, 4097] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x) as usize;
                assert!(!seen[y]);
                seen[y] = true;
            }
        }
    }

    #[test]
    fn sizes_sum_to_the_target_and_follow_zipf() {
        let w = [1.0; 9];
        let plan = Plan::new(10_000, 200_000, 0.8, 5_000, w, 7);
        let exact: u64 = (1..=10_000).map(|r| plan.flow(r).1).sum();
        assert_eq!(plan.total, exact, "size-class sum equals the per-flow sum");
        assert!(
            (exact as f64 - 200_000.0).abs() < 0.01 * 200_000.0,
            "{exact}"
        );
        assert!(plan.flow(1).1 >= plan.flow(2).1 && plan.flow(2).1 >= plan.flow(100).1);
        assert!(plan.flow(1).1 <= 5_000);
    }

    #[test]
    fn start_order_visits_every_rank_once_with_big_flows_early() {
        let mut plan = Plan::new(5_000, 200_000, 1.0, 20_000, [1.0; 9], 3);
        plan.set_slots(10);
        assert!(plan.big > 0);
        let mut seen = vec![false; 5_001];
        let mut last_big = 0;
        for j in 0..5_000 {
            let r = plan.rank_at(j) as usize;
            assert!((1..=5_000).contains(&r) && !seen[r], "rank {r} at {j}");
            seen[r] = true;
            if r as u64 <= plan.big {
                last_big = j;
            }
        }
        assert!(last_big < 2_500);
    }
}
