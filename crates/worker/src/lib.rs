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
//!   announced it sleeps: when nobody sleeps a wake-up costs one fence and one load. A raw-mode dispatcher facing a
//!   full queue yields, then sleeps with exponential back-off.
//! * **Scaled mode releases in batches.** At a few hundred thousand packets per second the next packet is about a
//!   microsecond away, too close to sleep for (a sleep costs 5–10 µs and overshoots), so a dispatcher replaying each
//!   packet at its own time must spin or yield, holding a core that, on this lab's 2 cores, a worker needs: the
//!   maximum scaled rate with 2 workers then fell *below* the 1-worker one. Instead the dispatcher wakes on a coarse
//!   tick ([`RunConfig::release_tick_ns`], default [`RELEASE_TICK_NS`] = 50 µs), releases every packet whose time
//!   has come, and sleeps (timer slack lowered to 1 µs) until the next tick, or until the next packet's time when
//!   that is later. What it costs: a packet waits up to one tick (about 25 µs on average, plus the timer's
//!   overshoot) before it is enqueued, and packets released together reach the workers as a burst. That delay is
//!   *not* hidden: each packet's arrival time in the records is its scheduled time, and latency is measured from it,
//!   so the batching counts against every scheduler like queueing at a NIC that interrupts every 50 µs
//!   (interrupt moderation), and latencies below about 50 µs are not resolved. Under a real-time policy (the bench
//!   runs use `chrt -r 1`) the scaled-mode dispatcher raises itself one priority level above the workers
//!   ([`DispatchReport::priority_raised`]): a thread woken at the workers' level would otherwise wait for a running
//!   worker to yield (up to `SCHED_RR`'s 100 ms slice), while the wire does not wait for the CPU. A tick of 0 keeps
//!   per-packet pacing (sleep when the next packet is more than 60 µs away, else yield or spin), for comparison.
//! * **End detection** replaces the paper's sentinel packets: after the last packet the dispatcher raises a flag and
//!   wakes everyone; a worker leaves when the flag is up and the policy has nothing for it (no policy can give a
//!   worker new work once dispatching has ended and it has none, see `run`).
//! * **A thread that dies abandons the run** ([`Aborted`], see `abort`): a worker, the dispatcher or reader, or the
//!   collector that panics raises the run's abort flag while it unwinds; every wait of the runtime looks at it, the
//!   caller's hook ([`StreamConfig::on_abort`]) ends the feed's own waits, and the run returns which thread died and
//!   why instead of waiting for ever for what the dead thread would have done.
//! * **Prepare, claim, process.** A worker runs the workload's [`Workload::prepare`] (the decode) on the packet the
//!   policy's `next` gave it, then asks the policy to `claim` it, and only then processes it. Every policy but `ph`
//!   with late claim answers yes at once; late-claiming `ph` may hand the packet to the worker that owns its
//!   connection, as PAM does, and the worker goes back to the queue (counted in [`WorkerReport::handoffs`]).
//! * **Timing** is monotonic nanoseconds since one base instant (`Instant`, the vDSO clock: about 20 ns a read).
//! * **Pinning** with `core_affinity` when there is a core for the dispatcher and each worker; otherwise threads float
//!   and the report says why ([`Pinning`]).
//!
//! **Streaming** ([`run_stream`]): the same dispatch step and worker loop, fed by a reader thread that produces
//! descriptors as it reads (a [`Feed`], e.g. packets in a bounded `flowbundle_ingest::PacketArena`), with a
//! collector on the calling thread that drains output while the run goes on. Memory is bounded by the feed's buffers,
//! not by the input's length; a full arena or a full policy queue slows the reader (backpressure), nothing is dropped.
//! The feed may run a job on every worker at once ([`Crew::broadcast`]: a sweep of the workload's state by shard,
//! the end of the input), and the workers do not time each packet (nothing reads it there).
//!
//! **Every worker reads** ([`run_each`]): for a placement every worker computes alike from the input, no
//! dispatcher at all: each worker runs the caller's loop over the whole input and keeps its own share, while the
//! calling thread collects; the runtime brings the threads, their names, the collector's tick and the abort handling.
//!
//! The workload runs with per-worker local state ([`Workload::Local`]), returned in the report so the harness can
//! read what the engine measured inside a packet (its life-of-a-packet stage times). Workloads here: [`Null`] and
//! [`Synthetic`] (a calibrated busy loop from a cost model or a per-packet cost array, optionally touching per-flow
//! state lines so cache affinity matters); the inspection engine implements [`Workload`] in its own crate.

mod abort;
mod allocator;
mod crew;
mod park;
mod runtime;
mod staged;
mod stream;
mod workload;

pub use abort::{Aborted, panic_reported_by_run};
pub use allocator::{MMAP_THRESHOLD, TRIM_THRESHOLD, fixed_mmap_threshold};
pub use crew::Crew;
pub use flowbundle_types::{BundleToken, Outcome, StagedWorkload, Workload};
pub use runtime::{
    DispatchReport, MAX_OUTSTANDING, MAX_RUN_NS, Mode, Pinning, RELEASE_TICK_NS, Records,
    RunConfig, RunError, RunReport, Status, WorkerReport, run,
};
pub use staged::{GroupReport, HAND_OVER_BATCH, StagedReport, run_stream_staged};
pub use stream::{Feed, StreamConfig, run_each, run_stream};
pub use workload::{Cost, Null, Synthetic, spin_rate};
