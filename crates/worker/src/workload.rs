//! Workloads of the lab: the [`Null`] workload (scheduling cost alone) and the [`Synthetic`] workload (a calibrated
//! amount of CPU work per packet, so scheduling can be studied apart from the engine). The [`Workload`] trait itself
//! is part of the shared vocabulary (`flowbundle-types`).

use flowbundle_types::{BUNDLES, BundleToken, Desc, Outcome, WorkerId, Workload};
use std::hint::black_box;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Does nothing: a run measures the runtime and the policy alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct Null;

impl Workload for Null {
    type Local = ();
    fn local(&self, _w: WorkerId) {}
    #[inline]
    fn process(&self, _local: &mut (), desc: Desc, _held: &mut BundleToken) -> Outcome {
        black_box(desc);
        Outcome::Processed
    }
}

/// Where the synthetic workload's per-packet cost comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Cost {
    /// `base_ns + per_byte_ns × len` (a parametric model, e.g. fitted to the engine).
    Model { base_ns: f64, per_byte_ns: f64 },
    /// Nanoseconds per packet, indexed by `Desc::id` (a cost file recorded by the engine); ids beyond the array cost
    /// nothing.
    PerPacket(Vec<u32>),
}

/// A calibrated busy loop per packet, plus optional per-flow state touched on every packet.
///
/// The loop is a dependent chain of integer multiply-adds whose iteration rate is measured once per process
/// ([`spin_rate`]); a packet costing `c` ns runs `c × rate` iterations. It is CPU work, not wall-clock waiting: a
/// preempted worker resumes its packet where it was, so throughput measures work done, as with the real engine.
///
/// With `state_lines > 0` each connection bundle (low 16 bits of `Desc::conn`) owns that many 64-byte lines of a
/// shared table, read and written on every packet: a packet of a flow whose state is in another core's cache pays
/// the transfer, which is what cache-affine policies (`lfb`) save.
pub struct Synthetic {
    cost: Cost,
    /// Fraction of each packet's cost spent in [`Workload::prepare`] (the decode before the claim).
    prepare_share: f64,
    iters_per_ns: f64,
    state_lines: usize,
    state: Vec<AtomicU64>,
}

/// u64 words per 64-byte line.
const WORDS_PER_LINE: usize = 8;

impl Synthetic {
    /// A synthetic workload calibrated on this machine (the first call measures; later ones reuse the figure).
    pub fn new(cost: Cost, state_lines: usize) -> Self {
        Self::with_rate(cost, state_lines, spin_rate())
    }

    /// With a given loop rate (iterations per ns), e.g. to replay a calibration.
    pub fn with_rate(cost: Cost, state_lines: usize, iters_per_ns: f64) -> Self {
        let words = BUNDLES * state_lines * WORDS_PER_LINE;
        Synthetic {
            cost,
            prepare_share: 0.0,
            iters_per_ns,
            state_lines,
            state: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Nanoseconds of work for a packet.
    pub fn cost_ns(&self, desc: &Desc) -> f64 {
        match &self.cost {
            Cost::Model {
                base_ns,
                per_byte_ns,
            } => base_ns + per_byte_ns * f64::from(desc.len),
            Cost::PerPacket(v) => v.get(desc.id as usize).map_or(0.0, |&c| f64::from(c)),
        }
    }

    pub fn iters_per_ns(&self) -> f64 {
        self.iters_per_ns
    }

    /// Spend `share` (clamped to 0..=1) of each packet's cost in [`Workload::prepare`], before the policy's claim:
    /// the decode a PAM thread does before locking its connection entry. Default 0.
    pub fn with_prepare_share(mut self, share: f64) -> Self {
        self.prepare_share = if share.is_finite() {
            share.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    pub fn prepare_share(&self) -> f64 {
        self.prepare_share
    }
}

impl Workload for Synthetic {
    type Local = u64;

    fn local(&self, _w: WorkerId) -> u64 {
        0
    }

    fn prepare(&self, local: &mut u64, desc: Desc) {
        if self.prepare_share > 0.0 {
            let iters = (self.cost_ns(&desc) * self.prepare_share * self.iters_per_ns) as u64;
            *local = local.wrapping_add(spin(iters));
        }
    }

    fn process(&self, local: &mut u64, desc: Desc, _held: &mut BundleToken) -> Outcome {
        if self.state_lines > 0 {
            let base = usize::from(desc.conn as u16) * self.state_lines * WORDS_PER_LINE;
            for l in 0..self.state_lines {
                if let Some(word) = self.state.get(base + l * WORDS_PER_LINE) {
                    // Plain load and store (no RMW): a worker holding the bundle is its only writer.
                    word.store(word.load(Relaxed).wrapping_add(1), Relaxed);
                }
            }
        }
        let iters = (self.cost_ns(&desc) * (1.0 - self.prepare_share) * self.iters_per_ns) as u64;
        *local = local.wrapping_add(spin(iters));
        Outcome::Processed
    }
}

/// The busy loop: `iters` dependent multiply-adds. Not inlined so its speed does not depend on the call site.
#[inline(never)]
pub(crate) fn spin(iters: u64) -> u64 {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
    for i in 0..iters {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    black_box(x)
}

/// Iterations of the busy loop per nanosecond on this machine: the best of several timed runs (the least disturbed
/// by other threads), measured once per process.
pub fn spin_rate() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        const ITERS: u64 = 2_000_000;
        spin(ITERS / 10); // warm up
        let best = (0..7)
            .map(|_| {
                let t = Instant::now();
                spin(ITERS);
                t.elapsed().as_nanos().max(1) as f64
            })
            .fold(f64::INFINITY, f64::min);
        ITERS as f64 / best
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_model_and_the_cost_array() {
        let m = Synthetic::with_rate(
            Cost::Model {
                base_ns: 100.0,
                per_byte_ns: 0.5,
            },
            0,
            1.0,
        );
        assert_eq!(
            m.cost_ns(&Desc {
                len: 200,
                ..Desc::default()
            }),
            200.0
        );
        let a = Synthetic::with_rate(Cost::PerPacket(vec![5, 7]), 0, 1.0);
        assert_eq!(
            a.cost_ns(&Desc {
                id: 1,
                ..Desc::default()
            }),
            7.0
        );
        assert_eq!(
            a.cost_ns(&Desc {
                id: 9,
                ..Desc::default()
            }),
            0.0,
            "out of range costs nothing, no panic"
        );
    }

    #[test]
    fn flow_state_lines_are_touched_per_bundle() {
        let s = Synthetic::with_rate(
            Cost::Model {
                base_ns: 0.0,
                per_byte_ns: 0.0,
            },
            2,
            1.0,
        );
        let mut local = 0;
        let d = Desc {
            conn: 0x1_0003,
            ..Desc::default()
        };
        // SAFETY: one thread, no other user of the state.
        let mut held = unsafe { BundleToken::assume_held(3) };
        s.process(&mut local, d, &mut held);
        s.process(&mut local, d, &mut held);
        let base = 3 * 2 * WORDS_PER_LINE;
        assert_eq!(s.state[base].load(Relaxed), 2);
        assert_eq!(s.state[base + WORDS_PER_LINE].load(Relaxed), 2);
    }

    #[test]
    fn the_spin_rate_is_positive_and_finite() {
        let r = spin_rate();
        assert!(r.is_finite() && r > 0.0);
    }
}
