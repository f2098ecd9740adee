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

/// A packet's work cut into stages, each run by a group of workers of its own: the execution models beyond
/// run-to-completion (a software pipeline, MultiLayer Processing). The runtime gives every group its own instance of
/// the policy; a worker that finishes stage `s` of a packet hands it to the group of the next stage the packet
/// needs (through that group's policy) *before* it releases the packet's bundle in its own group, so every group
/// sees a bundle's packets in the order the first one did, and `process_stage` runs, like
/// [`Workload::process`], only while the worker holds the bundle in its group: state of a stage sharded by bundle
/// is touched by one worker of that stage's group at a time.
pub trait StagedWorkload: Sync {
    /// Per-worker state (each worker belongs to one stage's group).
    type Local: Send;

    /// How many stages; stage 0 is where the runtime dispatches packets.
    fn stages(&self) -> usize;

    /// Fresh local state for worker `w` of stage `stage`'s group.
    fn local(&self, stage: usize, w: WorkerId) -> Self::Local;

    /// Runs stage `stage` of `desc`; `held` is the packet's bundle, held by this worker in that stage's group.
    /// Returns what to tell the group's policy and the next stage the packet needs (above `stage`), or `None` when
    /// its work is done. A group receives a bundle's packets in order only if they took the same stages before it:
    /// a packet may leave early (skip every later stage), but must not skip a stage that an earlier packet of its
    /// bundle is still in on its way to a stage both need.
    fn process_stage(
        &self,
        stage: usize,
        local: &mut Self::Local,
        desc: Desc,
        held: &mut BundleToken,
    ) -> (Outcome, Option<usize>);
}
