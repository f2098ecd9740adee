//! Sweeps and reports: every (scheduler, core count) of a configuration simulated the way `flowbundle bench`
//! measures it, written in the bench's JSON schema (`flowbundle-bench/1`, `"source": "simulated"`) so that
//! `flowbundle_lab_core::plot` draws simulated and measured runs together and `flowbundle_lab_core::table` prints either.
//!
//! Per configuration: a raw run gives the raw throughput and, from its per-packet records, order, balance, life of
//! a packet and cache misses (`from: "raw"`); in scaled mode the bench's own search ([`flowbundle_lab_core::search`])
//! finds the highest drop-free rate, each probe one simulated run (deterministic, so one attempt per rate), and a
//! run at 80% of it gives latency, order, balance and life (`from: "latency"`).
//!
//! What the bench schema has no field for goes in a `sim` section beside it (readers of the schema ignore unknown
//! fields): the model's parameters, and per run the cycles, the flow-state misses per packet at each level, and per
//! worker its packets, busy cycles and the share of its packets that belonged to its largest flow (how the paper's
//! "one core processes only the dominant connection" is checked).

use crate::cache::CoreCounters;
use crate::engine::{Mode, Model, RunConfig, SimError, SimRun, simulate};
use crate::input::SimInput;
use crate::params::Params;
use flowbundle_lab_core::BenchMode;
use flowbundle_lab_core::metrics::{
    self, BenchReport, CacheMisses, CacheSupport, Latency, RunConfigInfo, RunMetrics, SCHEMA,
    Source, Stage, Throughput,
};
use flowbundle_lab_core::prep::NO_FLOW;
use flowbundle_lab_core::search::{SearchPolicy, release_times, search};
use flowbundle_scheduler::SchedOptions;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    pub schedulers: Vec<String>,
    pub cores: Vec<usize>,
    pub mode: BenchMode,
    pub max_outstanding: usize,
    /// Tolerance and floor of the scaled-rate search (its attempts are always 1: a simulated run is deterministic).
    pub search: SearchPolicy,
    /// Fraction of the maximum scaled rate at which latency is measured (ANCS'10: 0.8).
    pub latency_fraction: f64,
    pub sched: SchedOptions,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            schedulers: vec!["dh".into(), "ph".into(), "lfb".into()],
            cores: vec![1, 2],
            mode: BenchMode::Raw,
            max_outstanding: flowbundle_worker::MAX_OUTSTANDING,
            search: SearchPolicy {
                attempts: 1,
                ..SearchPolicy::default()
            },
            latency_fraction: 0.8,
            // As the bench harness runs `ph`: the connection entry is claimed after the decode, as in PAM.
            sched: SchedOptions {
                ph_late_claim: true,
                ..SchedOptions::default()
            },
        }
    }
}

/// Flow-state cache behaviour per packet (averages over processed packets).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StateMisses {
    /// State lines accessed per packet.
    pub lines: f64,
    /// Misses of the core's L1d, of its L2, and of its socket (served by another socket or memory).
    pub l1: f64,
    pub l2: f64,
    pub l3: f64,
    /// Lines taken modified from another core of the same socket, and from another socket.
    pub xfer_socket: f64,
    pub xfer_remote: f64,
    pub mem: f64,
    /// Stall cycles charged per packet.
    pub stall_cycles: f64,
    /// Lines streamed per packet (each an L1, L2 and L3 miss, in the base cost).
    pub stream: f64,
}

impl StateMisses {
    pub fn of(c: &CoreCounters, packets: u64) -> Self {
        let n = packets.max(1) as f64;
        StateMisses {
            lines: c.state as f64 / n,
            l1: c.l1_miss as f64 / n,
            l2: c.l2_miss as f64 / n,
            l3: c.l3_miss as f64 / n,
            xfer_socket: c.xfer_socket as f64 / n,
            xfer_remote: c.xfer_remote as f64 / n,
            mem: c.mem as f64 / n,
            stall_cycles: c.stall_cycles as f64 / n,
            stream: c.stream as f64 / n,
        }
    }

    /// Misses at every level, summed: the "misses per packet" of ANCS'10 Figure 8 (L1 + L2 + L3), flow state only.
    pub fn total(&self) -> f64 {
        self.l1 + self.l2 + self.l3
    }
}

/// One simulated worker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerSim {
    pub packets: u64,
    pub busy_cycles: u64,
    /// Flow with the most packets on this worker, and its share of them.
    pub top_flow: Option<u32>,
    pub top_flow_share: f64,
    pub misses: StateMisses,
}

/// What the model knows about one run beyond the bench schema.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimRunInfo {
    pub scheduler: String,
    pub threads: usize,
    pub from: String,
    pub elapsed_cycles: u64,
    /// Busy cycles per processed packet (service time, all workers).
    pub cycles_per_packet: f64,
    pub misses: StateMisses,
    pub workers: Vec<WorkerSim>,
}

/// The simulator's section of a report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimSection {
    pub params: Params,
    pub runs: Vec<SimRunInfo>,
}

/// A bench report plus the simulator's section; its JSON reads as a `BenchReport` too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimReport {
    #[serde(flatten)]
    pub bench: BenchReport,
    pub sim: SimSection,
}

impl SimReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<SimReport, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The bench metrics of one configuration.
    pub fn run(&self, scheduler: &str, threads: usize) -> Option<&RunMetrics> {
        self.bench
            .runs
            .iter()
            .find(|m| m.scheduler == scheduler && m.threads == threads)
    }

    /// The model's figures of one configuration.
    pub fn info(&self, scheduler: &str, threads: usize) -> Option<&SimRunInfo> {
        self.sim
            .runs
            .iter()
            .find(|m| m.scheduler == scheduler && m.threads == threads)
    }

    /// Raw throughput of one configuration, packets per second.
    pub fn raw_pps(&self, scheduler: &str, threads: usize) -> Option<f64> {
        self.run(scheduler, threads)?.raw.as_ref().map(|t| t.pps)
    }
}

/// Wire megabits per packet of the input (converts packets/s to Mb/s).
fn mbps_per_pps(input: &SimInput) -> f64 {
    if input.is_empty() {
        return 0.0;
    }
    input.wire_len.iter().map(|&b| u64::from(b)).sum::<u64>() as f64 * 8.0
        / input.len() as f64
        / 1e6
}

/// Per-worker figures from a run's records.
fn workers_of(run: &SimRun, input: &SimInput) -> Vec<WorkerSim> {
    let n = run.report.workers.len();
    let mut per: Vec<HashMap<u32, u64>> = vec![HashMap::new(); n];
    if let Some(rec) = &run.report.records {
        for (i, &w) in rec.worker.iter().enumerate() {
            let f = input.flows.get(i).copied().unwrap_or(NO_FLOW);
            if let Some(m) = per.get_mut(usize::from(w)) {
                *m.entry(f).or_insert(0) += 1;
            }
        }
    }
    (0..n)
        .map(|w| {
            let packets = run.report.workers[w].packets;
            let top = per[w]
                .iter()
                .max_by_key(|(f, c)| (**c, std::cmp::Reverse(**f)))
                .map(|(f, c)| (*f, *c));
            WorkerSim {
                packets,
                busy_cycles: run.busy_cycles.get(w).copied().unwrap_or(0),
                top_flow: top.map(|t| t.0),
                top_flow_share: top.map_or(0.0, |t| t.1 as f64 / packets.max(1) as f64),
                misses: StateMisses::of(&run.cache.get(w).copied().unwrap_or_default(), packets),
            }
        })
        .collect()
}

fn describe(
    run: &SimRun,
    input: &SimInput,
    params: &Params,
    model: &Model,
    from: &str,
    out: &mut RunMetrics,
) {
    let processed = run.report.processed();
    let total = run.cache_total();
    let n = processed.max(1) as f64;
    if let Some(rec) = &run.report.records {
        out.order = metrics::order(rec, &input.flows, from);
        // Stages inside the service time: the decode before the claim, the flow-state stalls, the rest.
        let mut decode = 0f64;
        if let Some(rec) = &run.report.records {
            for (i, s) in rec.status.iter().enumerate() {
                if *s == flowbundle_worker::Status::Processed {
                    decode += f64::from(model.base.get(i).copied().unwrap_or(0))
                        * params.work.prepare_share;
                }
            }
        }
        let ghz = params.machine.clock_ghz;
        let decode_ns = decode / n / ghz;
        let stall_ns = total.stall_cycles as f64 / n / ghz;
        let life = metrics::life(rec, from, Vec::new());
        let rest = (life.service_ns - decode_ns - stall_ns).max(0.0);
        out.life = metrics::life(
            rec,
            from,
            vec![
                Stage {
                    name: "decode (before the claim)".into(),
                    mean_ns: decode_ns,
                },
                Stage {
                    name: "flow-state stalls".into(),
                    mean_ns: stall_ns,
                },
                Stage {
                    name: "inspection and runtime".into(),
                    mean_ns: rest,
                },
            ],
        );
    }
    out.balance = metrics::balance(&run.report);
    out.cache = CacheMisses {
        supported: true,
        reason: Some("simulated: flow-state misses plus streamed lines".into()),
        l1d_per_packet: Some((total.l1_miss + total.stream) as f64 / n),
        llc_per_packet: Some((total.l3_miss + total.stream) as f64 / n),
    };
}

fn info_of(
    run: &SimRun,
    input: &SimInput,
    scheduler: &str,
    threads: usize,
    from: &str,
) -> SimRunInfo {
    let processed = run.report.processed();
    SimRunInfo {
        scheduler: scheduler.into(),
        threads,
        from: from.into(),
        elapsed_cycles: run.elapsed_cycles,
        cycles_per_packet: run.busy_cycles.iter().sum::<u64>() as f64 / processed.max(1) as f64,
        misses: StateMisses::of(&run.cache_total(), processed),
        workers: workers_of(run, input),
    }
}

/// Simulate one configuration in raw mode and describe it (the building block of [`sweep`]).
pub fn raw_config(
    input: &SimInput,
    model: &Model,
    params: &Params,
    scheduler: &str,
    threads: usize,
    cfg: &SweepConfig,
) -> Result<(RunMetrics, SimRunInfo), SimError> {
    let run = simulate(
        input,
        model,
        params,
        &RunConfig {
            scheduler,
            cores: threads,
            sched: cfg.sched.clone(),
            mode: Mode::Raw,
            max_outstanding: cfg.max_outstanding,
            records: true,
        },
    )?;
    let mut out = RunMetrics {
        scheduler: scheduler.to_string(),
        threads,
        ..RunMetrics::default()
    };
    let pps = run.pps();
    out.raw = Some(Throughput {
        pps,
        pps_min: pps,
        pps_max: pps,
        mbps: pps * mbps_per_pps(input),
        elapsed_ns: run.report.elapsed_ns,
        samples_pps: vec![pps],
        full_waits: run.report.dispatcher.full_waits,
    });
    describe(&run, input, params, model, "raw", &mut out);
    let info = info_of(&run, input, scheduler, threads, "raw");
    Ok((out, info))
}

/// Add the scaled search and the latency run to a configuration.
fn scaled_config(
    input: &SimInput,
    model: &Model,
    params: &Params,
    cfg: &SweepConfig,
    out: &mut RunMetrics,
) -> Result<(), SimError> {
    let conv = mbps_per_pps(input);
    let upper = out.raw.as_ref().map_or(0.0, |r| r.pps);
    let policy = SearchPolicy {
        attempts: 1,
        ..cfg.search
    };
    let scheduler = out.scheduler.clone();
    let threads = out.threads;
    let run_at = |rate: f64, records: bool| -> Result<Option<SimRun>, SimError> {
        let Some(release) = release_times(&input.ts_ns, rate) else {
            return Ok(None);
        };
        simulate(
            input,
            model,
            params,
            &RunConfig {
                scheduler: &scheduler,
                cores: threads,
                sched: cfg.sched.clone(),
                mode: Mode::Scaled {
                    release_ns: &release,
                },
                max_outstanding: cfg.max_outstanding,
                records,
            },
        )
        .map(Some)
    };
    let found = search(upper, &policy, conv, |rate| {
        Ok::<u64, SimError>(match run_at(rate, false)? {
            Some(r) => r.report.dispatcher.dropped_outstanding + r.report.dispatcher.dropped_full,
            // A rate whose replay would last beyond a day counts as failing.
            None => u64::MAX,
        })
    })?;
    if found.found {
        let rate = found.max_pps * cfg.latency_fraction.clamp(0.01, 1.0);
        if let Some(run) = run_at(rate, true)? {
            out.latency = Some(
                run.report
                    .records
                    .as_ref()
                    .map(|r| metrics::latency(r, rate))
                    .unwrap_or_else(|| Latency {
                        rate_pps: rate,
                        ..Latency::default()
                    }),
            );
            describe(&run, input, params, model, "latency", out);
        }
    }
    out.scaled = Some(found);
    Ok(())
}

/// Simulate every scheduler at every core count. `tick` is called before each configuration (progress).
pub fn sweep(
    input: &SimInput,
    params: &Params,
    cfg: &SweepConfig,
    tick: &mut dyn FnMut(&str),
) -> Result<SimReport, SimError> {
    if input.is_empty() {
        return Err(SimError::Input("the trace has no packets".into()));
    }
    if cfg.schedulers.is_empty() || cfg.cores.is_empty() {
        return Err(SimError::Input("no scheduler or no core count".into()));
    }
    let model = Model::new(input, params)?;
    let mut runs = Vec::new();
    let mut infos = Vec::new();
    for &threads in &cfg.cores {
        for name in &cfg.schedulers {
            tick(&format!("{name} × {threads}"));
            let (mut m, info) = raw_config(input, &model, params, name, threads, cfg)?;
            if cfg.mode == BenchMode::Scaled {
                scaled_config(input, &model, params, cfg, &mut m)?;
            }
            runs.push(m);
            infos.push(info);
        }
    }
    Ok(SimReport {
        bench: BenchReport {
            schema: SCHEMA.into(),
            source: Source::Simulated,
            tool: format!("flowbundle simulate {}", env!("CARGO_PKG_VERSION")),
            trace: input.info.clone(),
            config: RunConfigInfo {
                mode: cfg.mode.name().into(),
                workload: format!("model:{}", params.work.name),
                workload_detail: params.describe(),
                reps: 1,
                max_outstanding: cfg.max_outstanding,
                tolerance: cfg.search.tolerance,
                clobber_bytes: 0,
                pinning: vec!["simulated cores (one per worker, dispatcher on its own)".into()],
                cores: cfg.cores.iter().copied().max().unwrap_or(1),
                ph_late_claim: cfg.sched.ph_late_claim,
                fbq_table: cfg.sched.fbq_table,
                capacity: cfg.sched.capacity,
            },
            cache_counters: CacheSupport {
                supported: true,
                reason: Some("simulated by the cache model".into()),
            },
            runs,
        },
        sim: SimSection {
            params: params.clone(),
            runs: infos,
        },
    })
}

/// [`sweep`] with a progress bar on stderr (hidden when `show` is false or stderr is not a terminal).
pub fn sweep_with_progress(
    input: &SimInput,
    params: &Params,
    cfg: &SweepConfig,
    show: bool,
) -> Result<SimReport, SimError> {
    let total = (cfg.schedulers.len() * cfg.cores.len()) as u64;
    let bar = if show {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} configurations  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut started = false;
    let r = sweep(input, params, cfg, &mut |msg| {
        if started {
            bar.inc(1);
        }
        started = true;
        bar.set_message(msg.to_string());
    });
    bar.finish_and_clear();
    r
}

/// The model's table: throughput, cycles per packet, flow-state misses per packet per level, balance (Markdown).
pub fn model_table(r: &SimReport) -> String {
    use std::fmt::Write;
    let mut s = String::from(
        "| scheduler | cores | raw Mpps | cycles/pkt | state L1 / L2 / L3 misses per pkt | transfers (socket / remote) | \
         busiest core (pkts / mean) | its top flow |\n|---|---|---|---|---|---|---|---|\n",
    );
    for info in &r.sim.runs {
        let pps = r.raw_pps(&info.scheduler, info.threads).unwrap_or(0.0);
        let mean = info.workers.iter().map(|w| w.packets).sum::<u64>() as f64
            / info.workers.len().max(1) as f64;
        let busiest = info.workers.iter().max_by_key(|w| w.packets);
        let m = &info.misses;
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.0} | {:.2} / {:.2} / {:.2} | {:.2} / {:.2} | {:.2} | {} |",
            info.scheduler,
            info.threads,
            pps / 1e6,
            info.cycles_per_packet,
            m.l1,
            m.l2,
            m.l3,
            m.xfer_socket,
            m.xfer_remote,
            busiest.map_or(0.0, |w| w.packets as f64 / mean.max(1e-9)),
            busiest.map_or("-".to_string(), |w| format!(
                "{:.0}%",
                w.top_flow_share * 100.0
            )),
        );
    }
    s
}
