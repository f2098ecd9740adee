//! What a worker does with a packet: the [`Workload`] trait the runtime drives and the engine (or a lab workload)
//! implements. It lives here, below both, so that the engine does not depend on the runtime nor the runtime on the
//! engine: they meet through this trait and [`Desc`].

use crate::bundle::BundleToken;
use crate::packet::{Desc, WorkerId};

/// What processing a packet told the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to report.
    Processed,
    /// The packet's connection reached a final identification result; the runtime tells the scheduler (its
    /// `classified` hint, which `l7aff` uses to release a connection).
    Classified,
}

/// Per-packet work run by the worker threads.
///
/// `process` is called for a packet only while the worker holds it (between the policy's `next` and `done`); the
/// [`BundleToken`] it receives is the proof, and what lets the workload touch state sharded by the packet's bundle
/// without a lock. Safe code cannot call `process` without one, so it cannot race two workers on one shard.
pub trait Workload: Sync {
    /// Per-worker state: scratch buffers, counters, stage timers. Returned in the run report.
    type Local: Send;

    /// Fresh local state for worker `w` (called on the worker's thread before the start barrier).
    fn local(&self, w: WorkerId) -> Self::Local;

    /// The work that precedes touching flow state (PAM's L2–L4 parse): run on a packet the policy's `next` gave the
    /// worker, *before* the policy's `claim`. The worker does not hold the packet's bundle yet (with `ph`'s late
    /// claim another worker may own its connection), so this must not touch state shared by bundle. If the claim
    /// fails the packet goes to another worker, which calls `prepare` again. Default: nothing.
    fn prepare(&self, _local: &mut Self::Local, _desc: Desc) {}

    /// Process one packet; `held` is the packet's bundle under the running policy, held by this thread.
    fn process(&self, local: &mut Self::Local, desc: Desc, held: &mut BundleToken) -> Outcome;

    /// Called on the worker's thread right after the start barrier, and right before it leaves: where a harness
    /// workload enables and disables per-thread counters (perf_event_open on the calling thread) so that setup and
    /// teardown are not counted.
    fn on_start(&self, _local: &mut Self::Local) {}
    fn on_stop(&self, _local: &mut Self::Local) {}
}
