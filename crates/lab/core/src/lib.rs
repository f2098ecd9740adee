//! # The lab's common ground
//!
//! What the lab's two ways of running a scheduler share, so that a measured run (`flowbundle-bench`, real threads)
//! and a simulated one (`flowbundle-sim`, virtual time) start from the same input and end in the same document,
//! without either tool knowing the other:
//!
//! * [`prep`]: a capture preloaded and run through the one pre-scheduling stage into descriptors ([`Prepared`]),
//!   the input of both;
//! * [`metrics`]: the report both write ([`BenchReport`], schema [`SCHEMA`]) and the functions that compute it from
//!   per-packet records; [`plot`] draws measured and simulated reports together, [`table`] prints either;
//! * [`search`]: the bisection for the maximum scaled (drop-free) rate and the rescaled release times it replays;
//! * [`cost`]: per-packet cost files (the engine's measured cost per packet, replayed as calibrated work or
//!   simulated cost).
//!
//! The harness that measures (`flowbundle-bench`) and the simulator (`flowbundle-sim`) each build on this crate and
//! never on each other (`ARCHITECTURE.md`).

pub mod cost;
pub mod metrics;
pub mod plot;
pub mod prep;
pub mod search;
pub mod table;

pub use metrics::{BenchMode, BenchReport, RunMetrics, SCHEMA, Source};
pub use prep::{PrepOptions, Prepared, prepare, prepare_files};
pub use search::SearchPolicy;
