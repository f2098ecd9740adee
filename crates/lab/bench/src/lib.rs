//! # The evaluation harness (ANCS'10 §4.1): `flowbundle bench`
//!
//! Measures how packet schedulers behave on a real trace, the way Nelms & Ahamad measured DH, PH and LFB: the whole
//! capture preloaded and its flow hashes computed before the clock starts ([`prep`]), the worker runtime
//! (`flowbundle-worker`) replaying it through a policy (`flowbundle-scheduler`) with a workload (the engine, a
//! calibrated synthetic cost, or nothing), and every packet's arrival, enqueue, start and end recorded so that the
//! figures the papers report can be computed after the run instead of being sampled during it ([`metrics`]):
//!
//! * maximum **raw** throughput (enqueue as fast as possible; the median of repetitions);
//! * maximum **scaled** throughput: the capture's timestamps rescaled to a target average rate, arrivals dropped and
//!   counted beyond 4,096 outstanding packets, and the highest drop-free rate found by bisection with a stated
//!   tolerance and repetition policy ([`search`]);
//! * **latency** per packet (mean, p50, p99, max) at 80% of that rate;
//! * per-flow **reordering** and packet delay variation (RFC 3393 IPDV, RFC 5481 PDV);
//! * **balance** (packets, busy and idle time per worker; `ph` handoffs; `lfb` collisions and migrations);
//! * the **life of a packet** (L7-filter ANCS'08 Figures 7–8): dispatch, queueing, service and the workload's stages;
//! * **cache misses** per packet from hardware counters where the machine has them ([`perf`]; reported as not
//!   supported otherwise), and the paper's 4 MB cache clobber thread.
//!
//! [`harness::sweep`] runs it all for a list of schedulers and thread counts and returns a [`metrics::BenchReport`],
//! the JSON document (schema `flowbundle-bench/1`, documented in [`metrics`]) that the simulator writes too, so that
//! [`plot`] can draw measured and simulated runs together and [`table`] can print either.
//!
//! Why post-run records rather than counters in the hot path: the runtime's per-packet cost is two clock reads and
//! four stores into preallocated arrays (about 40 bytes per packet, allocated before the barrier); everything else
//! (percentiles, per-flow order, delay variation) is computed afterwards, off the clock.

pub mod harness;
pub mod inspect;
pub mod perf;

// The input, report, search and cost-file modules are the lab's common ground (`flowbundle-lab-core`), shared with
// the simulator; the harness's API names them, so they are re-exported here.
pub use flowbundle_lab_core::{cost, metrics, plot, prep, search, table};

pub use flowbundle_lab_core::{
    BenchReport, PrepOptions, Prepared, RunMetrics, SCHEMA, SearchPolicy, Source, prepare,
    prepare_files,
};
pub use harness::{
    BenchError, BenchMode, BenchWorkload, HarnessConfig, Runner, measure, measure_config,
    measure_with, sweep,
};
