//! # Inspect: the fifth stage, the stateful inspection engine
//!
//! Connection tracking, TCP reassembly, application identification, content rules and per-packet cost accounting,
//! run by whichever worker holds a packet's flow bundle.
//!
//! ```text
//!  dispatcher side                         worker side (any thread holding bundle b)
//!  ───────────────                         ─────────────────────────────────────────
//!  Prestage: decode → defrag → hashes ──▶  Engine::process(ctx, b, rec)
//!  (Desc per packet or datagram)            decode → shard b: flow lookup/create/expire
//!                                           → TCP state + reassembly ─▶ classifier / parser / L7 signatures / rules
//!                                           → events + counters + cost in the worker's WorkerCtx
//!                                          Engine::finish(ctxs): end every flow, merge, sort events
//! ```
//!
//! * [`Prestage`] ([`prestage`], from the decode crate): the pre-scheduling stage both paths share:
//!   defragmentation before scheduling, flow keys and the scheduler's descriptor hashes; built from the engine's
//!   configuration (`Prestage::new(engine.config())`).
//! * [`Engine`] ([`engine`]): immutable and `Sync` apart from the connection table, which is sharded by bundle
//!   ([`table`]) so that a worker reaches its flows without a lock; [`WorkerCtx`] is a worker's own state.
//! * [`reassembly`]: TCP reassembly per direction, validated byte for byte against PcapPlusPlus.
//! * [`app`]: identification (built-in detectors, then L7-filter signatures, then ports; FTP data connections from
//!   the control connection's announcements) and the glue to parsers and content rules.
//! * [`cost`]: cycles per packet, per flow, by position in flow, per stage; the `--cost-out` file format.
//! * [`InspectWorkload`] ([`workload`]): the engine as a `flowbundle_worker::Workload`.
//!
//! The output ([`Event`]s: flow records, application events, alerts) depends only on each flow's own packets in
//! order, so for any thread count and scheduler the sorted events are the same (tests run every policy on real
//! captures). The sinks crate writes them as Suricata EVE JSON.
//!
//! ## Memory is bounded
//! Flows: a global cap ([`EngineConfig::max_flows`]), idle flows of a shard expired when a new flow arrives in it and
//! in every shard by periodic sweeps in capture time ([`sweep`]),
//! eviction of an idle flow when full, and `flow.memcap` counting new flows that could not be tracked. Reassembly:
//! per-direction segment and byte limits plus a global memcap. Parsers: byte caps per buffer (protocols crate).
//! Defragmentation: the defragmenter's caps. Expectations: a capped table. Every cap has a counter.

pub mod alert_filter;
pub mod app;
#[cfg(test)]
mod buffer_keyword_tests;
pub mod config;
pub mod config_file;
pub mod detect;
pub mod each;
pub mod engine;
pub mod expect;
pub mod flow;
#[cfg(test)]
mod keyword_tests;
pub mod live;
pub mod reassembly;
pub mod staged;
pub mod stream;
pub mod sweep;
pub mod table;
pub mod workload;

// What the engine reports lives in the events vocabulary, where the sinks read it; these are its modules.
pub use flowbundle_events::{cost, event};

pub use alert_filter::{AlertFilter, FilterNeeds};
pub use config::{AnomalyTypes, CostConfig, EngineConfig, Timeouts};
pub use config_file::{ConfigError, ConfigFile};
pub use detect::Detection;
pub use each::{BATCH_BUFFER, EachReads, EachWorker, Placement, SHARED_BYTES};
pub use engine::{Engine, EngineStats, Finished, PreDecoded, ProtoCount, WorkerCtx};
pub use event::{
    AlertEvent, AppLabel, ApplicationEvidence, EndReason, Event, EventKind, Evidence, FlowAction,
    FlowRecord, FlowState, TaggedPacket, TcpState, TcpSummary, sort_events,
};
pub use flowbundle_decode::prestage::{self, Prepared, Prestage, PrestageStats, Staged};
pub use live::{
    Applied, Inline, InlineReport, LatencyHistogram, LiveReader, OnFull, ReloadSets, Reloads,
    Signals, signals, stop_on_termination,
};
pub use staged::{DetectVisits, Script, Scripts, StagedInspect};
pub use stream::{
    ArenaSource, Batch, Broadcast, BufferDecodes, EventMerge, EventSender, Forward, Help, Piece,
    Renderer, Run, SHARE_CHUNK, SHARE_IN_FLIGHT, Share, StatsBoard, StreamOrder, StreamReader,
    SweepReport, Tagged,
};
pub use sweep::{SweepClock, SweepConfig};
pub use workload::{FragmentRole, InspectWorkload, PacketSource, PreparedTrace, prev_in_flow};

// The crates the engine is built on, for callers that configure them (the CLI loads signature sets through this).
pub use flowbundle_protocols as protocols;
pub use flowbundle_rules as rules;
pub use flowbundle_signatures as signatures;
