//! Trace tools: statistics (ANCS'10 Table 1), synthesis, merging (traffic aggregation), anonymization, rescaling, cutting.
//!
//! One module per tool; the `flowbundle trace ...` subcommands (crate `cli`, `src/cmd/trace.rs`) call them.

pub mod stats;

// The rewriting tools and the synthesizer; `rewrite` is their shared plumbing.
pub mod anonymize;
pub mod cut;
pub mod merge;
pub mod rescale;
pub mod rewrite;
pub mod synth;
