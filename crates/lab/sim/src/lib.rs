//! # Discrete-event simulator: the real scheduler policies on 1–64 simulated cores with a cache model
//!
//! `flowbundle simulate` answers what this lab's 2-core machine cannot: how `dh`, `ph`, `lfb` and the other policies
//! of `flowbundle-scheduler` scale on 14 or 64 cores, and *why* (which cache misses, which imbalance). It replays a
//! preloaded trace in virtual time:
//!
//! * [`engine`]: the event loop. One thread calls the **same policy objects** the threaded runtime calls
//!   (`dispatch`, `next`, `claim`, `done`), in the runtime's order, at virtual times given by the model. There is no
//!   second implementation of any policy to drift (ARCHITECTURE.md, "the simulator runs the real policies").
//! * [`cache`]: per-core L1d and L2, a shared inclusive L3 per socket, set-associative LRU over 64-byte lines holding
//!   each connection's state lines, with the pollution of each packet's own processing streamed through them, a
//!   directory for coherence transfers, and first-touch NUMA homes.
//! * [`params`]: the machine (defaults: the ANCS'10 Xeon E5540), the cost of a packet (a PAM-like parametric model,
//!   the bench's synthetic workload, or the engine's per-packet cost file), and the runtime's overheads; every
//!   default with its source.
//! * [`report`]: sweeps written in the bench harness's JSON schema and metrics (raw and scaled throughput, latency,
//!   reordering, balance, life of a packet) plus misses per packet per level, drawn by the bench's plots.
//! * [`calibrate`]: fits the cost scale and the per-packet runtime cost to `flowbundle bench` runs at 1 and 2
//!   threads and reports the fit error.
//! * [`exec`]: the execution models of the Verdú thesis (software pipeline, MultiLayer Processing) beside
//!   run-to-completion: core groups running the same policies, bounded queues between them, and per-layer code
//!   footprints through a per-core L1i; the layers measured on this engine ([`layers`]); and the split scan, which
//!   spreads a backlogged connection's content scan over the cores and stages its detection.
//! * [`handoff`] and [`threads`]: what the real runtime pays beyond the engine, measured on it with callgrind: a
//!   packet's hand-off between stage groups, and the reader and collector threads that share the workers' cores
//!   (and the single-threaded loop that `--threads 1` runs instead).
//! * [`findings`]: the ANCS'10 paper's qualitative results, and the thesis' on the execution models, as checks on a
//!   sweep.
//!
//! ## Why a discrete-event simulation, and what it costs
//!
//! Time advances from event to event (a packet's decode ends, its processing ends, the dispatcher is free), so a run
//! costs per packet a handful of heap operations, the policy's own calls, and the cache lookups of its state and
//! streamed lines: flat arrays of `u32` tags, at most 16 compared per lookup, no hashing. One million packets on 16
//! cores take a few seconds (BENCHMARKS.md, "Simulator"). Memory is the input (24 bytes per packet), optional
//! per-packet records (35 bytes per packet), the caches (8 bytes per modelled line) and the directory (2 bytes per
//! state line).
//!
//! ## What the model leaves out
//!
//! Hyper-threading (the paper's 14 threads ran on 8 cores × 2 hardware threads; here every worker has a core),
//! memory bandwidth and queueing in the memory controller, instruction caches (outside [`exec`], whose layers have
//! code footprints), the dispatcher's own cache, and the
//! engine's `classified` hint to `l7aff` (no engine runs). Each is a documented simplification, not a tuned knob.

pub mod cache;
pub mod calibrate;
pub mod engine;
pub mod exec;
pub mod findings;
pub mod handoff;
pub mod input;
pub mod layers;
pub mod params;
pub mod profiles;
pub mod report;
pub mod threads;

pub use engine::{Mode, Model, RunConfig, SimError, SimRun, simulate};
pub use input::SimInput;
pub use params::{Machine, Overheads, Params, WorkModel};
pub use report::{SimReport, SweepConfig, sweep};
