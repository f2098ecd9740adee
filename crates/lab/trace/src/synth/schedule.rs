//! When each flow sends: the concurrency model that sets the connection density.
//!
//! ## Model
//! The ranked flows run in `K` *slots*. A slot holds one flow at a time and, when it ends, takes the next flow of
//! the plan's start order. Every slot sends *trains* (a flow's packets back to back; the length is geometric with
//! the configured mean, cut at the flow's end) at the same average pace in virtual time: after a train of `b`
//! packets the slot waits `b · Exp(1) / rate`, with rate 1, or more for a flow too big to fit a quarter of the
//! trace at rate 1 (so no flow outlives the others). A heap of the slots' next train times yields the trains in
//! time order; memory is the `K` slots.
//!
//! ## Why it gives the density
//! Trains from `K` equal-rate slots arrive like a Poisson mixture: each train comes from a uniformly chosen slot. A
//! window of `w` packets holds about `w / b̄` trains, so about `K · (1 − (1 − 1/K)^(w/b̄))` slots, plus one more
//! flow for each slot that switched flows inside the window (one per mean flow size). The density therefore grows
//! with `K` and falls with the train length, and the flow sizes only enter through the turnover. Rather than trust
//! that approximation, [`calibrate`] runs this very scheduler (same seed, no payloads) on the first packets for
//! candidate `K` and bisects `K` to the requested density; the shares are untouched by `K`, which is what lets
//! one trace hit both.
//!
//! The dominant connection is not in a slot: the generator interleaves its trains so that after every packet its
//! count stays at `share / (1 − share)` of the others' (see `mod.rs`), which keeps its share exact at every point of
//! the trace and adds one flow to (almost) every window.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::plan::Plan;

/// A train to send: which slot, which flow (start index and rank) and how many packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Train {
    pub slot: usize,
    /// 0-based start index of the flow (unique per flow).
    pub flow: u64,
    pub rank: u64,
    pub packets: u64,
    /// This train starts the flow.
    pub first: bool,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    flow: u64,
    rank: u64,
    remaining: u64,
    rate: f64,
    started: bool,
}

/// The slot scheduler.
pub(crate) struct Scheduler {
    slots: Vec<Option<Slot>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    next_flow: u64,
    rng: ChaCha8Rng,
    train_p: f64,
    longest: f64,
}

/// Virtual time as an ordered integer (f64 bits of a non-negative number order like the number).
fn key(t: f64) -> u64 {
    t.max(0.0).to_bits()
}

impl Scheduler {
    /// A scheduler of `k` slots over `plan` with mean train length `train` (≥ 1).
    pub(crate) fn new(plan: &Plan, k: u64, train: f64, seed: u64) -> Scheduler {
        let k = k.clamp(1, plan.flows.max(1)) as usize;
        let mut s = Scheduler {
            slots: vec![None; k],
            heap: BinaryHeap::with_capacity(k),
            next_flow: 0,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7363_6865),
            train_p: 1.0 / train.max(1.0),
            // A flow may last a quarter of the trace's virtual duration (total / K).
            longest: (plan.total as f64 / k as f64 * 0.25).max(1.0),
        };
        for i in 0..k {
            if s.fill(i, plan) {
                let t = s.rng.random::<f64>();
                s.heap.push(Reverse((key(t), i)));
            }
        }
        s
    }

    /// Puts the next flow of the plan into slot `i`; false when the plan is exhausted.
    fn fill(&mut self, i: usize, plan: &Plan) -> bool {
        if self.next_flow >= plan.flows {
            self.slots[i] = None;
            return false;
        }
        let j = self.next_flow;
        self.next_flow += 1;
        let rank = plan.rank_at(j);
        let (_, size) = plan.flow(rank);
        self.slots[i] = Some(Slot {
            flow: j,
            rank,
            remaining: size,
            rate: (size as f64 / self.longest).max(1.0),
            started: false,
        });
        true
    }

    fn train_len(&mut self) -> u64 {
        if self.train_p >= 1.0 {
            return 1;
        }
        // Geometric on {1, 2, ...} with mean 1/p.
        let u: f64 = self.rng.random::<f64>().max(f64::MIN_POSITIVE);
        1 + (u.ln() / (1.0 - self.train_p).ln()).floor() as u64
    }

    /// The next train in virtual-time order, or `None` when every flow is done.
    pub(crate) fn next(&mut self, plan: &Plan) -> Option<Train> {
        let Reverse((t, i)) = self.heap.pop()?;
        let now = f64::from_bits(t);
        let b = self.train_len();
        let slot = self.slots[i].as_mut()?;
        let packets = b.min(slot.remaining);
        let train = Train {
            slot: i,
            flow: slot.flow,
            rank: slot.rank,
            packets,
            first: !slot.started,
        };
        slot.started = true;
        slot.remaining -= packets;
        let rate = slot.rate;
        let more = slot.remaining > 0 || self.fill(i, plan);
        if more {
            let e: f64 = -(self.rng.random::<f64>().max(f64::MIN_POSITIVE)).ln();
            self.heap
                .push(Reverse((key(now + packets as f64 * e / rate), i)));
        }
        Some(train)
    }
}

/// Mean distinct flows per full window of `window` consecutive packets of `k`-slot scheduling, over the first
/// `limit` packets.
pub(crate) fn density(
    plan: &Plan,
    k: u64,
    train: f64,
    seed: u64,
    window: usize,
    limit: u64,
) -> f64 {
    let mut s = Scheduler::new(plan, k, train, seed);
    let window = window.max(1);
    let mut ids: Vec<u64> = Vec::with_capacity(window);
    let (mut sum, mut windows, mut n) = (0u64, 0u64, 0u64);
    while n < limit {
        let Some(t) = s.next(plan) else { break };
        for _ in 0..t.packets {
            ids.push(t.flow);
            n += 1;
            if ids.len() == window {
                ids.sort_unstable();
                ids.dedup();
                sum += ids.len() as u64;
                windows += 1;
                ids.clear();
            }
        }
    }
    if windows == 0 {
        ids.sort_unstable();
        ids.dedup();
        return ids.len() as f64;
    }
    sum as f64 / windows as f64
}

/// The slot count whose density over windows of `window` packets is closest to `target` (bisection; density grows
/// with the slots), judged on the first `limit` packets.
pub(crate) fn calibrate(
    plan: &mut Plan,
    target: f64,
    train: f64,
    seed: u64,
    window: usize,
    limit: u64,
) -> u64 {
    let max_k = plan.flows.clamp(1, 1 << 20);
    let eval = |plan: &mut Plan, k: u64| {
        plan.set_slots(k);
        density(plan, k, train, seed, window, limit)
    };
    let (mut lo, mut hi) = (1u64, max_k);
    if eval(plan, hi) <= target {
        plan.set_slots(hi);
        return hi;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if eval(plan, mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let (dl, dh) = (eval(plan, lo), eval(plan, hi));
    let k = if (target - dl).abs() <= (dh - target).abs() {
        lo
    } else {
        hi
    };
    plan.set_slots(k);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_packet_of_every_flow_is_scheduled_once() {
        let mut plan = Plan::new(2_000, 50_000, 0.9, 3_000, [1.0; 9], 11);
        plan.set_slots(20);
        let mut s = Scheduler::new(&plan, 20, 2.0, 11);
        let mut per_flow = vec![0u64; 2_000];
        let mut total = 0;
        while let Some(t) = s.next(&plan) {
            per_flow[t.flow as usize] += t.packets;
            total += t.packets;
            assert!(t.packets >= 1);
        }
        assert_eq!(total, plan.total);
        for j in 0..2_000u64 {
            assert_eq!(per_flow[j as usize], plan.flow(plan.rank_at(j)).1);
        }
    }

    #[test]
    fn density_grows_with_slots_and_calibration_hits_it() {
        let mut plan = Plan::new(20_000, 300_000, 0.6, 2_000, [1.0; 9], 5);
        let d4 = density(&plan, 4, 1.5, 5, 100, 30_000);
        let d40 = density(&plan, 40, 1.5, 5, 100, 30_000);
        assert!(d4 < d40, "{d4} {d40}");
        let k = calibrate(&mut plan, 30.0, 1.5, 5, 100, 30_000);
        let d = density(&plan, k, 1.5, 5, 100, 30_000);
        assert!((d - 30.0).abs() < 1.5, "k {k} density {d}");
    }
}
