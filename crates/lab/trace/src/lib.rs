//! Trace tools: statistics (ANCS'10 Table 1), synthesis, merging (traffic aggregation), anonymization, rescaling, cutting.
//!
//! One module per tool; the `flowbundle trace ...` subcommands (crate `cli`, `src/cmd/trace.rs`) call them.

pub mod stats;
