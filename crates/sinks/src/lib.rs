//! # Sinks: the last stage. Suricata-compatible EVE JSON events and human-readable summaries.
//!
//! * [`eve`]: [`EveWriter`] writes the engine's [`flowbundle_events::Event`]s as Suricata EVE JSON, one object per
//!   line (`flow`, `http`, `tls`, `dns`, `quic`, `ssh`, `ftp`, `alert`, ...), with Suricata's field names and
//!   timestamp format, so existing EVE consumers read it.
//! * [`summary`]: the human summary: a protocol table like ndpiReader's and every counter of the run.
//! * [`output`]: where EVE lines go, as Suricata's `eve-log` filetypes: a file (reopened on SIGHUP), a Unix
//!   socket, Redis.
//! * [`time`]: the EVE timestamp format.

pub mod eve;
pub mod output;
pub mod stats;
pub mod summary;
pub mod time;

pub use eve::{EveOptions, EveWriter, render};
pub use output::{EveOutput, FileType, OutputCounters, RedisMode, RedisTarget, Target, Waits};
pub use stats::{StatsRecord, render_stats, stats_event};
pub use summary::{CaptureCounters, ReloadInfo, RulesInfo, RunInfo, Summary};
pub use time::{timestamp, write_timestamp};
