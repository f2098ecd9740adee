//! One inspection run: capture files (or a live source) through the engine into the sinks, as `flowbundle
//! inspect` runs it. The data path is ingest → decode → scheduler → worker → inspect → sinks; this crate is where
//! its ends meet: the inputs are read (`ingest`), driven through the single-threaded loop or the streaming runtime
//! (`worker`'s threads running `inspect`'s workload), and what comes out goes into the sinks (`sinks`' EVE writer,
//! the cost records, the rules profile, the periodic `stats` records) as the run goes on. The caller (the binary)
//! builds a [`Config`] from its arguments, refuses what does not go together, opens the outputs ([`Sink`],
//! [`sink::CostSink`]) and the live source ([`live`]), loads the rule sets ([`reload`]) and calls [`run`], which
//! returns what each input left for the summary.
//!
//! Why a crate of its own, below `sinks` on the path: the runtime (`worker`) and the engine (`inspect`) never know
//! each other, nor the engine and the sinks (see `ARCHITECTURE.md`'s track table), so the orchestration that needs
//! all three cannot live in any of them without turning a dependency upwards; and the binary only parses arguments.
//! Nothing on the path depends on this crate: it is the last stage before the binary.
//!
//! What is here:
//! - [`run`] ([`drive`]): the loops that drive the inputs: the single-threaded loop (`--threads 1`), every worker
//!   reading the files, the streaming runtime with a reader thread (files, standard input, live capture, inline, the
//!   staged execution models), the live loop of one thread; [`Config`] ([`config`]) is what a run is asked to do.
//! - [`ending`]: the end of a run: the EVE output closed, cost records, the rules profile, the summaries.
//! - [`inputs`]: the capture inputs checked and probed before the run (one read each; a pipe named twice refused).
//! - [`mode`]: the defaults that depend on the inputs and the other options (the scheduler, every worker reading
//!   or a reader thread, the packet buffers), chosen once from what was asked.
//! - [`live`]: a live run's source opened (an interface, an inline pair) and its counters at the end.
//! - [`Output`]: where a streamed output goes (standard output, a file renamed into place at the end, an EVE
//!   output of Suricata's kinds).
//! - [`reload`]: a run's signature and rule sets, loaded at the start and reloaded during a live run.
//! - [`sink`]: where a run's events go (EVE through the rules' thresholds), its cost records, its periodic `stats`
//!   records and its rules profile.
//! - [`progress`]: the progress line on a terminal.
//! - [`read_end`]: what the end of an input tells the user (cut records, impossible lengths, unknown link types).

pub mod config;
pub mod drive;
pub mod ending;
pub mod inputs;
pub mod live;
pub mod mode;
pub mod output;
pub mod progress;
pub mod read_end;
pub mod reload;
pub mod rule_report;
pub mod sink;

pub use config::{Config, LiveConfig, StagedExec};
pub use drive::{Report, Sources, run};
pub use output::Output;
pub use sink::Sink;
