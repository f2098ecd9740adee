//! # Worker: the fourth stage, the parallel runtime
//!
//! One dispatcher thread (the ANCS'10 paper's "packet scheduler") and N worker threads run a preloaded array of
//! packet descriptors through any [`Scheduler`](flowbundle_scheduler::Scheduler) and a [`Workload`]. The runtime is
//! the measuring instrument of the bench harness (`flowbundle bench`, ANCS'10 §4.1), so it is built to disturb what
//! it measures as little as possible:
//!
//! * **Start barrier** after everything is allocated; per-packet records (arrival, enqueue, start and end of
//!   processing, worker) live in arrays preallocated for the whole trace: nothing is allocated per packet.
//! * **Two dispatcher modes** ([`Mode`]): *raw* enqueues as fast as possible and backs off only when the policy
//!   refuses (queue full); *scaled* enqueues each packet at its rescaled timestamp and drops (and counts) an arrival
//!   when `max_outstanding` packets are already in the system, the paper's oversubscription rule.
//! * **Nobody spins for long.** This lab's machine has 2 cores shared by the dispatcher and the workers, so a thread
//!   that spins steals the core a worker needs. An idle worker spins briefly, yields, then parks; the dispatcher wakes
//!   exactly the worker the policy named ([`Placed`](flowbundle_scheduler::Placed)), and only when that worker has
//!   announced it sleeps: when nobody sleeps a wake-up costs one fence and one load. A dispatcher waiting for a
//!   packet's time sleeps (timer slack lowered to 1 µs) or yields; one facing a full queue yields, then sleeps with
//!   exponential back-off.
//! * **End detection** replaces the paper's sentinel packets: after the last packet the dispatcher raises a flag and
//!   wakes everyone; a worker leaves when the flag is up and the policy has nothing for it (no policy can give a
//!   worker new work once dispatching has ended and it has none, see `run`).
//! * **Prepare, claim, process.** A worker runs the workload's [`Workload::prepare`] (the decode) on the packet the
//!   policy's `next` gave it, then asks the policy to `claim` it, and only then processes it. Every policy but `ph`
//!   with late claim answers yes at once; late-claiming `ph` may hand the packet to the worker that owns its
//!   connection, as PAM does, and the worker goes back to the queue (counted in [`WorkerReport::handoffs`]).
//! * **Timing** is monotonic nanoseconds since one base instant (`Instant`, the vDSO clock: about 20 ns a read).
//! * **Pinning** with `core_affinity` when there is a core for the dispatcher and each worker; otherwise threads float
//!   and the report says why ([`Pinning`]).
//!
//! The workload runs with per-worker local state ([`Workload::Local`]), returned in the report so the harness can
//! read what the engine measured inside a packet (its life-of-a-packet stage times). Workloads here: [`Null`] and
//! [`Synthetic`] (a calibrated busy loop from a cost model or a per-packet cost array, optionally touching per-flow
//! state lines so cache affinity matters); the inspection engine implements [`Workload`] in its own crate.

mod park;
mod runtime;
mod workload;

pub use runtime::{
    DispatchReport, MAX_OUTSTANDING, MAX_RUN_NS, Mode, Pinning, Records, RunConfig, RunError,
    RunReport, Status, WorkerReport, run,
};
pub use workload::{Cost, Null, Outcome, Synthetic, Workload, spin_rate};
