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
//! | which way data travels in a connection | [`Direction`] | the engine (from the client side) | parsers, rules, events |
//! | transport of a packet or flow | [`Transport`] | the engine | parsers, rules, events |
//! | an application protocol | [`AppProto`] (one generated table) | identification | rules, cost records, sinks |
//! | a decoder anomaly (Suricata's `decode-event`) | [`DecodeEvent`], [`DecodeEvents`] | the decoder, the defragmenter | rules, stats |
//! | a TCP stream anomaly (Suricata's `stream-event`) | [`StreamEvent`], [`StreamEvents`] | the engine's connection tracking and reassembly | rules |
//! | an HTTP buffer handed to detection | [`HttpBuffer`] | the HTTP parser | rules |
//! | what a flow's traffic says about its security (nDPI's flow risks) | [`FlowRisk`], [`RiskSet`] | parsers' events, the engine | flow records, EVE, summary |
//! | where an identification stands | [`Verdict`] | detectors, signatures | the engine |
//! | what a worker runs per packet | [`Workload`], [`Outcome`], [`BundleToken`], [`PolicyShape`] | the engine, the lab's workloads | the runtime |
//! | a packet's work cut into stages, and the execution model | [`StagedWorkload`], [`Exec`] | the engine; the CLI | the staged runtime; the simulator |

mod app_layer_event;
mod app_proto;
mod bundle;
mod decode_event;
mod direction;
mod event_set;
mod exec;
mod http;
pub mod http2;
pub mod krb5;
mod packet;
mod risk;
mod stream_event;
mod transport;
mod verdict;
mod workload;

pub use app_layer_event::{AppLayerEvent, AppLayerEvents};
pub use app_proto::AppProto;
pub use bundle::{BundleToken, PolicyShape};
pub use decode_event::{DecodeEvent, DecodeEvents};
pub use direction::Direction;
pub use event_set::{EventKind, EventSet};
pub use exec::Exec;
pub use http::HttpBuffer;
pub use packet::{BUNDLES, Desc, DescHashes, WorkerId};
pub use risk::{FlowRisk, RiskSet};
pub use stream_event::{StreamEvent, StreamEvents};
pub use transport::Transport;
pub use verdict::Verdict;
pub use workload::{Outcome, StagedWorkload, Workload};
