//! # The runtime's own threads: the reader and the collector, measured on the real runtime
//!
//! The simulator's workers are the policy's workers. The real streaming runtime (`flowbundle inspect --threads N`,
//! `crates/worker/src/stream.rs` and `staged.rs`) runs two more threads beside them: a **reader**, which reads each
//! packet into a buffer of the arena, decodes it as far as its flow key, defragments, hashes and dispatches it (the
//! scheduler's `dispatch` and the wake-up of a parked worker), and a **collector** on the calling thread, which
//! merges the workers' events in packet order and writes them. On a machine with as many cores as workers (what
//! `inspect` does by default: `--threads` is the machine's cores) those two threads take their CPU from the workers'
//! cores. And `--threads 1` is none of this: one thread runs the single-threaded loop (read, decode, inspect, write)
//! with no policy, no reader and no collector.
//!
//! What each costs per packet is measured with callgrind on the real runtime by `scripts/measure-threads` (instruction
//! counts, exact whatever the load), written to `crates/lab/sim/data/threads.json` ([`MEASURED_THREADS`]):
//!
//! * [`RuntimeThreads::reader_instructions`]: the reader thread's instructions per packet (`--threads 2 --exec rtc`),
//!   its waits (`Backoff::wait`) left out;
//! * [`RuntimeThreads::collector_instructions`]: the calling thread's (the collector's) per packet;
//! * [`RuntimeThreads::worker_instructions`]: the workers' instructions per packet beyond what the single-threaded
//!   engine spends inside `Engine::process_serial` on the same packet (the part the per-packet cost file times),
//!   their idle loops (`idle_round`) left out: the policy's `next`/`claim`/`done`, the arena and output hand-off,
//!   less the decode the reader did for them (so it may be negative);
//! * [`RuntimeThreads::loop_instructions`]: the single-threaded loop's instructions per packet outside
//!   `Engine::process_serial` (reading the capture, writing the output).
//!
//! Each is the difference between a run on the trace and a run on a short trace of the same profile, over the
//! difference of their packets, so what a run costs once (rule loading, start-up, thread creation) cancels. The
//! counts become cycles at the engine's measured cycles per instruction ([`RuntimeThreads::cycles_per_instruction`],
//! CPU time of the single-threaded run over its instructions at the host's clock, as for the hand-off).
//!
//! What the measurement leaves out: the kernel's side (reads, futex wake-ups and the scheduler's context switches
//! are not user-space instructions), idle spinning (waiting, not work), and any difference between the reader's
//! cycles per instruction and the engine's (the reader copies packet bytes: memory-bound work may run at another
//! rate than the engine's mean).

use serde::{Deserialize, Serialize};

/// The runtime's reader and collector threads' per-packet costs, and the single-threaded loop's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuntimeThreads {
    /// What measured it (the script's command line, the commit, the trace and rules), or why there is none.
    pub source: String,
    /// The reader thread's instructions per packet (read, decode to the flow key, defragment, hash, dispatch).
    pub reader_instructions: f64,
    /// The collector's (the calling thread's) instructions per packet (merging events in order, writing them).
    pub collector_instructions: f64,
    /// Each packet's worker instructions beyond the single-threaded engine's own (`Engine::process_serial`): the
    /// runtime's per-packet work on the worker, less the decode the reader did. May be negative.
    pub worker_instructions: f64,
    /// The single-threaded loop's instructions per packet outside `Engine::process_serial`.
    pub loop_instructions: f64,
    /// Cycles per instruction of the engine on the measuring host, to turn the counts into cycles.
    pub cycles_per_instruction: f64,
}

/// The threads measured on this engine by `scripts/measure-threads` (see the module documentation).
pub const MEASURED_THREADS: &str = include_str!("../data/threads.json");

impl RuntimeThreads {
    /// The measurement built in ([`MEASURED_THREADS`]); [`RuntimeThreads::none`] should it not read (a unit test
    /// checks it does).
    pub fn measured() -> Self {
        RuntimeThreads::from_json(MEASURED_THREADS).unwrap_or_else(|_| RuntimeThreads::none())
    }

    /// Nothing measured: no reader or collector thread is modelled, and every worker has a core of its own with the
    /// dispatcher free (what the simulator did before the measurement).
    pub fn none() -> Self {
        RuntimeThreads {
            source: "none: no reader or collector thread; a free dispatcher".into(),
            reader_instructions: 0.0,
            collector_instructions: 0.0,
            worker_instructions: 0.0,
            loop_instructions: 0.0,
            cycles_per_instruction: 0.0,
        }
    }

    /// Whether instruction counts were measured.
    pub fn is_measured(&self) -> bool {
        self.cycles_per_instruction > 0.0 && self.reader_instructions > 0.0
    }

    fn cycles(&self, instructions: f64) -> f64 {
        instructions * self.cycles_per_instruction
    }

    /// The reader's cycles per packet.
    pub fn reader_cycles(&self) -> u64 {
        self.cycles(self.reader_instructions).round() as u64
    }

    /// The collector's cycles per packet.
    pub fn collector_cycles(&self) -> u64 {
        self.cycles(self.collector_instructions).round() as u64
    }

    /// A worker's cycles per packet beyond the engine's (negative: fewer than the single-threaded engine's).
    pub fn worker_cycles(&self) -> i64 {
        self.cycles(self.worker_instructions).round() as i64
    }

    /// The single-threaded loop's cycles per packet beyond the engine's.
    pub fn loop_cycles(&self) -> u64 {
        self.cycles(self.loop_instructions).round() as u64
    }

    pub fn validate(&self) -> Result<(), String> {
        let ok = |x: f64| x.is_finite() && (0.0..=1e7).contains(&x);
        if !ok(self.reader_instructions)
            || !ok(self.collector_instructions)
            || !ok(self.loop_instructions)
            || !ok(self.worker_instructions.abs())
        {
            return Err(
                "thread instructions per packet must be within ±10^7 (reader, collector, loop ≥ 0)"
                    .into(),
            );
        }
        if !(self.cycles_per_instruction.is_finite()
            && (0.0..=100.0).contains(&self.cycles_per_instruction))
        {
            return Err("cycles per instruction 0 to 100".into());
        }
        Ok(())
    }

    pub fn from_json(text: &str) -> Result<Self, String> {
        let t: RuntimeThreads = serde_json::from_str(text).map_err(|e| e.to_string())?;
        t.validate()?;
        Ok(t)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl Default for RuntimeThreads {
    fn default() -> Self {
        RuntimeThreads::measured()
    }
}

/// Where the simulated run's threads run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Host {
    /// Only the workers, each on a core of its own, and a dispatcher that costs nothing but the policy's
    /// `dispatch` overhead and runs on no worker's core (the ANCS'10 model: the NIC and a dedicated dispatcher).
    Dedicated,
    /// What the streaming runtime does (`flowbundle inspect --threads N`): with one worker the single-threaded loop;
    /// with N ≥ 2 a reader and a collector thread besides the workers, on `cores` cores (`None`: as many as
    /// workers, `inspect`'s default). On as many cores as workers, the reader's and the collector's work runs on
    /// the workers' cores (on an idle one when there is one, else taken from a busy one); with one core more, both
    /// share it; with two more, each has its own. The reader is serial in every case: it dispatches one packet per
    /// its measured cycles at best.
    #[default]
    Runtime,
    /// [`Host::Runtime`] on a machine of this many cores (at least the workers).
    RuntimeOn { cores: usize },
}

impl Host {
    /// The machine's cores for `workers` workers.
    pub fn cores(self, workers: usize) -> usize {
        match self {
            Host::Dedicated | Host::Runtime => workers,
            Host::RuntimeOn { cores } => cores,
        }
    }

    pub fn is_runtime(self) -> bool {
        !matches!(self, Host::Dedicated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_measurement_reads_and_is_measured() {
        let t = RuntimeThreads::from_json(MEASURED_THREADS).unwrap();
        assert!(t.is_measured(), "{t:?}");
        assert_eq!(RuntimeThreads::measured(), t);
        assert!(!RuntimeThreads::none().is_measured());
        assert!(t.reader_cycles() > 0 && t.collector_cycles() > 0, "{t:?}");
    }

    #[test]
    fn garbage_is_refused() {
        assert!(RuntimeThreads::from_json("{").is_err());
        let bad = RuntimeThreads {
            cycles_per_instruction: f64::INFINITY,
            ..RuntimeThreads::none()
        };
        assert!(RuntimeThreads::from_json(&bad.to_json()).is_err());
        let negative = RuntimeThreads {
            reader_instructions: -1.0,
            ..RuntimeThreads::none()
        };
        assert!(RuntimeThreads::from_json(&negative.to_json()).is_err());
    }

    #[test]
    fn the_host_gives_the_machine_its_cores() {
        assert_eq!(Host::default(), Host::Runtime);
        assert_eq!(Host::Runtime.cores(14), 14);
        assert_eq!(Host::Dedicated.cores(14), 14);
        assert_eq!(Host::RuntimeOn { cores: 16 }.cores(14), 16);
        assert!(!Host::Dedicated.is_runtime());
    }
}
