//! What a run is asked to do, built by the caller (the binary, from its arguments) and checked there: the inputs,
//! the engine's settings, how many threads drive them and how, what the output records.

use flowbundle_inspect::{DetectVisits, EngineConfig, OnFull};

/// One inspection run's settings. The caller resolves every default (the scheduler, whether every worker reads)
/// and refuses what does not go together before the run starts; the run takes them as they are.
#[derive(Clone, Debug)]
pub struct Config {
    /// The engine's settings (IPS mode, cost records, sweeps, flow cap, ...).
    pub engine: EngineConfig,
    /// Each input file on its own: flow state, timeouts, thresholds and summary start afresh with each (the files
    /// are [`Sources::files`](crate::Sources::files)).
    pub per_file: bool,
    /// Workers: 1 runs the single-threaded loop (but inline, which always runs the streaming runtime).
    pub threads: usize,
    /// The scheduler's name (`None`: lfb).
    pub scheduler: Option<String>,
    /// A staged execution model (`None`: run-to-completion).
    pub exec: Option<StagedExec>,
    /// Every worker reads the files itself (no reader thread): files only, run to completion.
    pub workers_read: bool,
    /// The reader is one of the workers (files, with a reader thread).
    pub reader_inspects: bool,
    /// Packet buffers between the reader and the workers.
    pub packet_buffers: usize,
    /// The most packets a file reader reads ahead of the oldest packet in flight.
    pub reorder_window: u64,
    /// Seconds (capture time for files) between periodic `stats` records.
    pub stats_interval: Option<f64>,
    /// End each input's EVE output with a `stats` record.
    pub eve_stats: bool,
    /// The `stats` record carries each worker's counters.
    pub eve_stats_threads: bool,
    /// EVE flow records carry the `flowbundle` object.
    pub eve_extra: bool,
    /// A live run's limits and how its capture is named.
    pub live: LiveConfig,
}

/// What a live run (an interface, or inline) needs besides its source.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// Stop after this many packets.
    pub count: Option<u64>,
    /// Stop after this many seconds.
    pub seconds: Option<f64>,
    /// When every packet buffer is in use.
    pub queue_full: OnFull,
    /// The interface(s) and how they are captured from.
    pub capture: crate::live::CaptureSpec,
}

impl LiveConfig {
    /// The end of a `seconds` run, from now.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.seconds
            .map(|s| std::time::Instant::now() + std::time::Duration::from_secs_f64(s))
    }
}

/// A staged execution model (pipeline or multilayer) and the size of its detection group.
#[derive(Clone, Copy, Debug)]
pub struct StagedExec {
    pub model: flowbundle_types::Exec,
    pub detect_workers: usize,
}

impl StagedExec {
    /// Which packets the detection group sees under this model.
    pub fn visits(self) -> DetectVisits {
        match self.model {
            flowbundle_types::Exec::Multilayer => DetectVisits::Needed,
            _ => DetectVisits::Every,
        }
    }
}
