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
//! What the instruction counts leave out: the kernel's side (reads, futex wake-ups and parks, the scheduler's
//! context switches are not user-space instructions), idle spinning (waiting, not work), and any difference between
//! a thread's cycles per instruction and the engine's (the reader copies packet bytes and the workers read them from
//! the reader's core: memory-bound work runs at another rate than the engine's mean). Measured, that is most of
//! what the threads cost: `scripts/measure-sched` reads every thread's time on a CPU (`/proc/PID/task/TID/schedstat`,
//! user and kernel time together) through native runs of `inspect --threads 1` and `--threads 2 --exec rtc`, and
//! per packet of the processing phase (load 4–6) the reader took 1.6–2.7× and the collector 7–9× what their
//! instructions at the engine's rate say (parks, wake-ups and its 2 ms polling are kernel time and cache misses,
//! not instructions), and a hand-off 1.2× (`dominant`) to 3.5× (`balanced`) its instructions (see BENCHMARKS.md,
//! "Where the runtime's threads spend their time"). Time on a CPU depends on the host's load more than instruction
//! counts do (other processes evict the caches): the file says the load it was measured at. With that measurement ([`ThreadsCpu`], the
//! optional `cpu` block of the file) the simulator charges the reader and the collector their measured time on a CPU
//! per packet and the workers the loop's cost plus the measured difference, each as a share of the single-threaded
//! loop's time measured in the same runs ([`RuntimeThreads::cycles_for`]); without it, the instruction counts at the
//! engine's cycles per instruction, as before.
//!
//! A real run's processing time (what `inspect --summary` reports, and calibration compares) also holds a **fixed
//! time** no packet's cost does: measured as the processing time of a run of the trace's first packet alone, about
//! 22 ms single-threaded and 24–25 ms with two workers on the measuring host (tables and threads set up and torn
//! down, the output written), a tenth of a 100,000-packet run of the cheapest profile. The `cpu` block carries it
//! per configuration ([`ThreadsCpu::loop_fixed_ns`], [`ThreadsCpu::runtime_fixed_ns`],
//! [`ThreadsCpu::staged_fixed_ns`]); the simulator reports it beside the run ([`crate::exec::ExecRun::fixed_cycles`],
//! `run_pps`), never in the packets' rate.

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
    /// The threads' time on a CPU per packet, measured on native runs (`scripts/measure-sched`); when present it
    /// replaces the instruction counts for the reader, the collector and the workers beyond the loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<ThreadsCpu>,
}

/// Each thread's time on a CPU (user and kernel, `/proc/PID/task/TID/schedstat`) per packet of the processing
/// phase, measured on native runs of the same trace by `scripts/measure-sched`: the single-threaded loop
/// (`--threads 1`, start-up left out) and the reader, the collector and both workers of `--threads 2 --exec rtc`
/// (medians of alternated runs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadsCpu {
    /// What measured it: the command, the trace, the load.
    pub source: String,
    /// The single-threaded loop's nanoseconds on a CPU per packet.
    pub loop_ns: f64,
    /// The reader's nanoseconds on a CPU per packet (its reads, decode, dispatch, waits in the kernel).
    pub reader_ns: f64,
    /// The collector's (the calling thread's, start-up left out) nanoseconds on a CPU per packet.
    pub collector_ns: f64,
    /// Both workers' nanoseconds on a CPU per packet, together.
    pub workers_ns: f64,
    /// The staged models' workers' nanoseconds on a CPU per packet handed from the flow group to the detection
    /// group beyond run-to-completion's workers' (`--threads 2 --exec pipeline|multilayer` against `--exec rtc`,
    /// the median of both models); 0: not measured (the hand-off's instruction counts stand).
    #[serde(default)]
    pub handoff_ns: f64,
    /// The run's fixed time: the summary's processing time of a run of the trace's first packet alone, in ns, for
    /// the single-threaded loop (`--threads 1`), the runtime's run-to-completion (`--threads 2 --exec rtc`) and its
    /// staged models (`--exec pipeline|multilayer`, the median of both): what a run spends inside its processing
    /// time whatever its packets (tables and threads set up and torn down, the last output written), which no
    /// packet's cost holds. 0: not measured (nothing added).
    #[serde(default)]
    pub loop_fixed_ns: f64,
    #[serde(default)]
    pub runtime_fixed_ns: f64,
    #[serde(default)]
    pub staged_fixed_ns: f64,
}

impl ThreadsCpu {
    fn validate(&self) -> Result<(), String> {
        let ok = |x: f64| x.is_finite() && (0.0..=1e9).contains(&x);
        if [
            self.loop_ns,
            self.reader_ns,
            self.collector_ns,
            self.workers_ns,
            self.handoff_ns,
            self.loop_fixed_ns,
            self.runtime_fixed_ns,
            self.staged_fixed_ns,
        ]
        .into_iter()
        .all(ok)
        {
            Ok(())
        } else {
            Err("thread CPU nanoseconds per packet must be within 0 to 10^9".into())
        }
    }
}

/// What the runtime's threads cost per packet, in cycles of the simulated machine ([`RuntimeThreads::cycles_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadCycles {
    pub reader: u64,
    pub collector: u64,
    /// A worker's cycles per packet beyond the engine's (negative: fewer than the single-threaded engine's).
    pub worker: i64,
    /// The single-threaded loop's cycles per packet beyond the engine's.
    pub looped: u64,
    /// One hand-off between the staged models' groups, sender and receiver together, when measured natively
    /// ([`ThreadsCpu::handoff_ns`]); `None`: the hand-off's own instruction counts.
    pub handoff: Option<u64>,
    /// The run's fixed time ([`ThreadsCpu::loop_fixed_ns`] and the others), in cycles: one worker (the loop), two
    /// or more under run-to-completion, two or more staged. 0 when not measured.
    pub fixed: FixedCycles,
}

/// A run's fixed time in cycles by configuration ([`ThreadCycles::fixed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedCycles {
    pub looped: u64,
    pub runtime: u64,
    pub staged: u64,
}

impl FixedCycles {
    /// The fixed time of a run of `workers` workers, staged or not. More than two workers were not measured: the
    /// two-worker figure stands for them (threads set up and joined cost little beside the tables and the output).
    pub fn of(&self, workers: usize, staged: bool) -> u64 {
        match (workers, staged) {
            (0 | 1, _) => self.looped,
            (_, false) => self.runtime,
            (_, true) => self.staged,
        }
    }
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
            cpu: None,
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

    /// Every thread's cycles per packet, given the simulated single-threaded loop's mean cycles per packet
    /// (`loop_per_packet`: the engine's cost plus [`RuntimeThreads::loop_cycles`]). With the native measurement
    /// ([`ThreadsCpu`]) each thread costs its measured share of the loop's time on a CPU, measured in the same
    /// alternated runs (a ratio, so the host's speed and load at the measurement cancel): the reader
    /// `reader_ns / loop_ns` of the loop's cycles, the collector likewise, and a worker the loop's cycles beyond the
    /// engine plus `(workers_ns − loop_ns) / loop_ns` of the loop's cycles (so one worker stays the loop, and two
    /// cost together what they were measured to cost more, or less). Without it, every instruction count at the
    /// engine's cycles per instruction.
    pub fn cycles_for(&self, loop_per_packet: f64) -> ThreadCycles {
        let looped = self.loop_cycles();
        match &self.cpu {
            Some(cpu)
                if cpu.loop_ns > 0.0 && loop_per_packet.is_finite() && loop_per_packet > 0.0 =>
            {
                let share = |ns: f64| (ns / cpu.loop_ns * loop_per_packet).round();
                ThreadCycles {
                    reader: share(cpu.reader_ns) as u64,
                    collector: share(cpu.collector_ns) as u64,
                    worker: looped as i64 + share(cpu.workers_ns - cpu.loop_ns) as i64,
                    looped,
                    handoff: (cpu.handoff_ns > 0.0).then(|| share(cpu.handoff_ns) as u64),
                    fixed: FixedCycles {
                        looped: share(cpu.loop_fixed_ns) as u64,
                        runtime: share(cpu.runtime_fixed_ns) as u64,
                        staged: share(cpu.staged_fixed_ns) as u64,
                    },
                }
            }
            _ => ThreadCycles {
                reader: self.reader_cycles(),
                collector: self.collector_cycles(),
                worker: self.worker_cycles(),
                looped,
                handoff: None,
                fixed: FixedCycles::default(),
            },
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if let Some(cpu) = &self.cpu {
            cpu.validate()?;
        }
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
    fn the_native_measurement_charges_each_thread_its_share_of_the_loop() {
        let counted = RuntimeThreads::from_json(MEASURED_THREADS).unwrap();
        let counted = RuntimeThreads {
            cpu: None,
            ..counted
        };
        let plain = counted.cycles_for(10_000.0);
        assert_eq!(plain.reader, counted.reader_cycles());
        assert_eq!(plain.collector, counted.collector_cycles());
        assert_eq!(plain.worker, counted.worker_cycles());
        assert_eq!(plain.handoff, None);
        let measured = RuntimeThreads {
            cpu: Some(ThreadsCpu {
                source: "test".into(),
                loop_ns: 2_000.0,
                reader_ns: 500.0,
                collector_ns: 200.0,
                workers_ns: 1_800.0,
                handoff_ns: 400.0,
                loop_fixed_ns: 20_000_000.0,
                runtime_fixed_ns: 24_000_000.0,
                staged_fixed_ns: 26_000_000.0,
            }),
            ..counted.clone()
        };
        let c = measured.cycles_for(10_000.0);
        assert_eq!((c.reader, c.collector), (2_500, 1_000));
        assert_eq!(c.worker, counted.loop_cycles() as i64 - 1_000);
        assert_eq!(c.looped, counted.loop_cycles());
        assert_eq!(c.handoff, Some(2_000));
        // The fixed times, as shares of the loop's too: 10,000 loop packets' worth of cycles per 20 ms.
        assert_eq!(
            (
                c.fixed.of(1, false),
                c.fixed.of(2, false),
                c.fixed.of(2, true)
            ),
            (100_000_000, 120_000_000, 130_000_000)
        );
        assert_eq!(c.fixed.of(14, true), c.fixed.of(2, true));
        assert_eq!(plain.fixed, FixedCycles::default());
        // Not measured, or no loop to take a share of: the counts.
        let no_hop = RuntimeThreads {
            cpu: measured.cpu.clone().map(|x| ThreadsCpu {
                handoff_ns: 0.0,
                ..x
            }),
            ..counted.clone()
        };
        assert_eq!(no_hop.cycles_for(10_000.0).handoff, None);
        assert_eq!(measured.cycles_for(0.0), plain);
        // It survives the file, and garbage in it is refused.
        assert_eq!(
            RuntimeThreads::from_json(&measured.to_json()).unwrap(),
            measured
        );
        let nan = RuntimeThreads {
            cpu: measured.cpu.clone().map(|x| ThreadsCpu {
                reader_ns: f64::NAN,
                ..x
            }),
            ..counted
        };
        assert!(RuntimeThreads::from_json(&nan.to_json()).is_err());
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
