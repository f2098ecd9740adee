//! # The shared vocabulary of flowbundle
//!
//! The bottom of the workspace, in the spirit of ripgrep's `grep-matcher`: the few types that more than one stage of
//! the data path (ingest → decode → scheduler → worker → inspect → sinks) has to name, defined once so that no crate
//! keeps a mirrored copy and a hand-written mapping between them. It depends on nothing of ours and is small on
//! purpose: a type belongs here only when two crates that must not know each other both need it.
//!
//! | concept | type | who produces it | who consumes it |
//! |---|---|---|---|
//! | a packet as the scheduler sees it | [`Desc`], [`BUNDLES`], [`WorkerId`] | the prestage | schedulers, runtime, engine |
//! | what a worker runs per packet | [`Workload`], [`Outcome`], [`BundleToken`], [`PolicyShape`] | the engine, the lab's workloads | the runtime |

mod bundle;
mod packet;
mod workload;

pub use bundle::{BundleToken, PolicyShape};
pub use packet::{BUNDLES, Desc, WorkerId};
pub use workload::{Outcome, Workload};
