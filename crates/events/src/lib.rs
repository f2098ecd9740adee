//! # Events: what the engine reports and the sinks write
//!
//! The vocabulary between the fifth stage and the sixth, as `flowbundle-types` is between the runtime and the
//! engine: the inspection engine (`flowbundle-inspect`) fills these types, the sinks (`flowbundle-sinks`) write them,
//! and neither knows the other.
//!
//! | module | what | filled by | read by |
//! |---|---|---|---|
//! | [`event`] | [`Event`]s: flow records, application records, alerts, each tagged with its flow and a per-flow sequence number so any number of workers' output sorts into one order | the engine, per flow | EVE JSON, tests comparing runs |
//! | [`stats`] | [`EngineStats`] (every counter of a worker or a run), [`ReassemblyStats`], [`ProtoCount`], [`InlineReport`] | the engine, the inline sensor | the summary, the EVE `stats` record |
//! | [`cost`] | cycles per packet, by position in flow and per stage, the ten costliest connections ([`CostSummary`]); per-packet [`CostRecord`]s and their file format (`--cost-out`) | the engine's cost accounting | the summary, `trace stats --cost`, the lab |
//! | [`finished`] | [`Finished`]: what a run leaves (the events not yet written, the counters, the cost figures, alerts per rule) | the engine's `finish` | the summary, the CLI |
//!
//! The records the identification crates produce travel inside these types as they are, re-exported here so that
//! a sink names them without knowing the parsers: [`AppEvent`] (one application transaction: HTTP, TLS, DNS, ...,
//! from `flowbundle-protocols`) and [`AlertTarget`] (a rule's `target`, from `flowbundle-rules`).
//!
//! Why a crate of its own rather than modules of `flowbundle-types`: these types carry the decoder's flow key and
//! the parsers' records, so they sit above `decode` and the identification crates, where the bottom crate cannot.

pub mod cost;
pub mod event;
pub mod finished;
pub mod stats;

pub use event::{
    AlertEvent, Anomaly, AppLabel, AppRecord, ApplicationEvidence, EndReason, Event, EventKind,
    Evidence, FlowRecord, FlowState, NO_FLOW, PacketHead, TaggedPacket, TcpState, TcpSummary,
    sort_events,
};
pub use finished::Finished;
pub use stats::{EngineStats, InlineReport, ProtoCount, ReassemblyStats};

pub use cost::{CostRecord, CostSummary, StageTimes, TopConn};
pub use flowbundle_protocols::AppEvent;
pub use flowbundle_rules::AlertTarget;
pub use flowbundle_rules::flowvar::AlertVars;
