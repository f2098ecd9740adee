//! The ANCS'10 §4.1 harness: runs a prepared trace through each scheduler at each thread count on the worker
//! runtime, and turns the runs into [`RunMetrics`].
//!
//! One measurement ([`measure`]) is one [`flowbundle_worker::run`]: the trace is already in memory and its
//! descriptors computed ([`crate::prep`]); the runtime allocates everything, all threads wait on a barrier, the
//! dispatcher enqueues (raw: as fast as the policy accepts, backing off when full; scaled: each packet at its rescaled
//! time, released in batches on the runtime's 50 µs tick with latency counted from the scheduled time, dropping and
//! counting arrivals beyond `max_outstanding`), an end flag replaces the sentinel packets, and
//! times are monotonic nanoseconds (the vDSO clock; see the worker crate). The workload is wrapped ([`Harnessed`]) to
//! count cache misses per worker around the timed region and to time the stage before the policy's claim.
//!
//! For each (scheduler, threads) [`sweep`] makes:
//! 1. `reps` raw runs without per-packet records; the median by throughput gives the raw figures; one more raw run
//!    with records gives the order, balance and life of a packet (`from: "raw"`) (records stay off the clock: see
//!    [`measure_config`]);
//! 2. in scaled mode, the search for the maximum scaled throughput below the raw median ([`crate::search`]), then
//!    `reps` runs at 80% of it, recorded; the one with the median mean latency gives the latency, order, balance and
//!    life figures (`from: "latency"`).
//!
//! `ph` runs with its late claim ([`SchedOptions::ph_late_claim`]) unless told otherwise, so its packets race
//! through the decode before their connection is claimed, as in PAM, and its reordering is measured rather than
//! assumed.

use crate::metrics::{
    self, BenchReport, CacheMisses, CacheSupport, Latency, RunConfigInfo, RunMetrics, SCHEMA,
    Source, Stage, Throughput,
};
use crate::prep::Prepared;
use crate::search::{SearchPolicy, release_times, search};
use flowbundle_scheduler::check::ExclusivityChecker;
use flowbundle_scheduler::{BuildError, Desc, SchedOptions, Scheduler, WorkerId, build};
use flowbundle_worker::{
    BundleToken, Mode, Null, Outcome, Pinning, RunConfig, RunError, RunReport, Synthetic, Workload,
    run,
};
use std::time::Instant;

pub use flowbundle_lab_core::BenchMode;

/// What to run. See the module documentation.
#[derive(Clone, Debug)]
pub struct HarnessConfig {
    pub schedulers: Vec<String>,
    pub threads: Vec<usize>,
    pub mode: BenchMode,
    /// Raw runs per configuration, latency runs per configuration, and attempts per probed rate.
    pub reps: usize,
    /// Scaled mode: most packets in the system before arrivals are dropped (ANCS'10: 4,096).
    pub max_outstanding: usize,
    /// Scaled-rate search tolerance and floor (its `attempts` is `reps`).
    pub search: SearchPolicy,
    /// Fraction of the maximum scaled rate at which latency is measured (ANCS'10: 0.8).
    pub latency_fraction: f64,
    pub sched: SchedOptions,
    /// The cache clobber thread's buffer (0: off; the paper used 4 MB).
    pub clobber_bytes: usize,
    pub pin: bool,
    /// Open hardware cache counters per worker (reported "not supported" where they cannot be).
    pub cache_counters: bool,
    /// Run every policy under the exclusivity checker (tests: slow, serialises the policy).
    pub check: bool,
    /// Draw a progress bar on stderr (hidden when stderr is not a terminal).
    pub progress: bool,
    /// Per-packet records (arrival, enqueue, start, end, worker) in the runs that give throughput figures: the raw
    /// repetitions and the scaled-rate probes. Off by default; see [`measure_config`] for why.
    pub timed_records: bool,
    /// Per-packet records in a single [`measure`] / [`measure_with`] call (what [`measure_config`] sets per run).
    pub records: bool,
    /// Scaled mode: the dispatcher's release tick (`flowbundle_worker::RunConfig::release_tick_ns`; default 50 µs;
    /// 0 paces each packet on its own). Latency counts from each packet's scheduled time either way.
    pub release_tick_ns: u64,
}

impl Default for HarnessConfig {
    fn default() -> Self {
        HarnessConfig {
            schedulers: vec!["dh".into(), "ph".into(), "lfb".into()],
            threads: vec![1, 2],
            mode: BenchMode::Raw,
            reps: 3,
            max_outstanding: flowbundle_worker::MAX_OUTSTANDING,
            search: SearchPolicy::default(),
            latency_fraction: 0.8,
            sched: SchedOptions {
                ph_late_claim: true,
                ..SchedOptions::default()
            },
            clobber_bytes: 0,
            pin: true,
            cache_counters: true,
            check: false,
            progress: false,
            timed_records: false,
            records: true,
            release_tick_ns: flowbundle_worker::RELEASE_TICK_NS,
        }
    }
}

/// Why a sweep stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("nothing to run: {0}")]
    Empty(&'static str),
    #[error("rate {0} packets/s cannot replay this trace (not positive, or longer than a day)")]
    Rate(f64),
    #[error("{lost} packets dispatched but not processed under {scheduler} with {threads} threads")]
    Lost {
        scheduler: String,
        threads: usize,
        lost: u64,
    },
}

/// A workload the harness can run: a [`Workload`] that can name itself and report its stage times.
pub trait BenchWorkload: Workload {
    /// `synthetic`, `null`, `inspect`.
    fn name(&self) -> String;
    /// Its parameters, for the report.
    fn detail(&self) -> String;
    /// Whether [`Workload::prepare`] does work worth timing as its own stage (the decode).
    fn has_prepare(&self) -> bool {
        false
    }
    /// Mean nanoseconds per packet in each named stage, over the workers' locals, when the workload measures its own
    /// stages (the engine: decode, flow lookup, reassembly, detection). Empty by default.
    fn stages(&self, _locals: &[&Self::Local]) -> Vec<Stage> {
        Vec::new()
    }
}

impl BenchWorkload for Null {
    fn name(&self) -> String {
        "null".into()
    }
    fn detail(&self) -> String {
        "no work per packet: the runtime and the policy alone".into()
    }
}

impl BenchWorkload for Synthetic {
    fn name(&self) -> String {
        "synthetic".into()
    }
    fn detail(&self) -> String {
        format!(
            "calibrated busy loop ({:.3} iterations/ns), {:.0}% of each packet's cost before the claim",
            self.iters_per_ns(),
            self.prepare_share() * 100.0
        )
    }
    fn has_prepare(&self) -> bool {
        self.prepare_share() > 0.0
    }
}

/// Per-worker state of [`Harnessed`]: the workload's own, its cache counters, and the time spent in `prepare`.
pub struct HarnessLocal<L> {
    pub inner: L,
    counters: Option<crate::perf::Counters>,
    pub counter_error: Option<String>,
    pub misses: Option<crate::perf::Misses>,
    pub prepare_ns: u64,
    base: Instant,
}

/// Wraps a workload: cache counters around the timed region, and `prepare` timed when the workload has one.
pub struct Harnessed<'a, W: ?Sized> {
    pub inner: &'a W,
    pub cache_counters: bool,
    pub time_prepare: bool,
}

impl<W: BenchWorkload + ?Sized> Workload for Harnessed<'_, W> {
    type Local = HarnessLocal<W::Local>;

    fn local(&self, w: WorkerId) -> Self::Local {
        // On the worker's own thread, before the barrier: the counters count this thread.
        let (counters, counter_error) = if self.cache_counters {
            match crate::perf::Counters::open() {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, Some("not requested".into()))
        };
        HarnessLocal {
            inner: self.inner.local(w),
            counters,
            counter_error,
            misses: None,
            prepare_ns: 0,
            base: Instant::now(),
        }
    }

    #[inline]
    fn prepare(&self, local: &mut Self::Local, desc: Desc) {
        if self.time_prepare {
            let t = local.base.elapsed();
            self.inner.prepare(&mut local.inner, desc);
            local.prepare_ns += (local.base.elapsed() - t).as_nanos() as u64;
        } else {
            self.inner.prepare(&mut local.inner, desc);
        }
    }

    #[inline]
    fn process(&self, local: &mut Self::Local, desc: Desc, held: &mut BundleToken) -> Outcome {
        self.inner.process(&mut local.inner, desc, held)
    }

    fn on_start(&self, local: &mut Self::Local) {
        if let Some(c) = &local.counters {
            c.start();
        }
        self.inner.on_start(&mut local.inner);
    }

    fn on_stop(&self, local: &mut Self::Local) {
        self.inner.on_stop(&mut local.inner);
        if let Some(c) = &local.counters {
            local.misses = c.stop();
        }
    }
}

/// One run's results, before aggregation.
pub struct Measured {
    pub pps: f64,
    pub elapsed_ns: u64,
    pub dropped: u64,
    pub full_waits: u64,
    pub report: RunReport<()>,
    pub stages: Vec<Stage>,
    pub cache: CacheMisses,
    pub pinning: String,
}

/// What the sweep runs: something that can make one measurement of a prepared trace under a scheduler.
///
/// Every [`BenchWorkload`] is a `Runner` (the same workload object serves every run). A workload with per-run state
/// (the engine: a connection table to start empty, an order guard, a bundle function from the policy) implements
/// `Runner` itself, building what it needs inside [`Runner::measure`] and calling [`measure_with`].
pub trait Runner {
    fn name(&self) -> String;
    fn detail(&self) -> String;
    /// One run of `prep` under `scheduler` with `threads` workers; `release` switches to scaled mode.
    fn measure(
        &self,
        prep: &Prepared,
        scheduler: &str,
        threads: usize,
        cfg: &HarnessConfig,
        release: Option<&[u64]>,
    ) -> Result<Measured, BenchError>;
}

impl<W: BenchWorkload> Runner for W {
    fn name(&self) -> String {
        BenchWorkload::name(self)
    }
    fn detail(&self) -> String {
        BenchWorkload::detail(self)
    }
    fn measure(
        &self,
        prep: &Prepared,
        scheduler: &str,
        threads: usize,
        cfg: &HarnessConfig,
        release: Option<&[u64]>,
    ) -> Result<Measured, BenchError> {
        measure(prep, scheduler, threads, self, cfg, release)
    }
}

/// Make one run of `prep` under `scheduler` with `threads` workers. `release` switches to scaled mode.
pub fn measure<W: BenchWorkload + ?Sized>(
    prep: &Prepared,
    scheduler: &str,
    threads: usize,
    workload: &W,
    cfg: &HarnessConfig,
    release: Option<&[u64]>,
) -> Result<Measured, BenchError> {
    let sched: Box<dyn Scheduler> = build(scheduler, threads, &cfg.sched)?;
    measure_with(prep, sched, workload, cfg, release).map(|(m, _)| m)
}

/// One run with a policy the caller built; also returns the workload's per-worker locals (an engine's contexts, to
/// finish and compare).
pub fn measure_with<W: BenchWorkload + ?Sized>(
    prep: &Prepared,
    sched: Box<dyn Scheduler>,
    workload: &W,
    cfg: &HarnessConfig,
    release: Option<&[u64]>,
) -> Result<(Measured, Vec<W::Local>), BenchError> {
    let scheduler = sched.name();
    let threads = sched.workers();
    let wrapped = Harnessed {
        inner: workload,
        cache_counters: cfg.cache_counters,
        time_prepare: workload.has_prepare(),
    };
    let run_cfg = RunConfig {
        mode: match release {
            Some(r) => Mode::Scaled { release_ns: r },
            None => Mode::Raw,
        },
        max_outstanding: cfg.max_outstanding,
        pin: cfg.pin,
        records: cfg.records,
        clobber_bytes: cfg.clobber_bytes,
        release_tick_ns: cfg.release_tick_ns,
    };
    let report = if cfg.check {
        let checked = ExclusivityChecker::new(sched);
        let r = run(&checked, &wrapped, &prep.descs, &run_cfg)?;
        checked.finish();
        r
    } else {
        run(sched.as_ref(), &wrapped, &prep.descs, &run_cfg)?
    };
    if report.lost > 0 {
        return Err(BenchError::Lost {
            scheduler: scheduler.to_string(),
            threads,
            lost: report.lost,
        });
    }
    let processed = report.processed().max(1);
    let mut stages = Vec::new();
    let prepare_ns: u64 = report.locals.iter().map(|l| l.prepare_ns).sum();
    let inner_locals: Vec<&W::Local> = report.locals.iter().map(|l| &l.inner).collect();
    let own = workload.stages(&inner_locals);
    if own.is_empty() && wrapped.time_prepare {
        let service: u64 = report.workers.iter().map(|w| w.busy_ns).sum();
        stages.push(Stage {
            name: "prepare (decode)".into(),
            mean_ns: prepare_ns as f64 / processed as f64,
        });
        stages.push(Stage {
            name: "process".into(),
            mean_ns: service.saturating_sub(prepare_ns) as f64 / processed as f64,
        });
    }
    stages.extend(own);
    let cache = cache_of(&report.locals, processed);
    let pinning = match &report.pinning {
        Pinning::Pinned { .. } => "pinned".to_string(),
        Pinning::Floating(why) => format!("floating: {why}"),
    };
    let RunReport {
        start_ns,
        elapsed_ns,
        dispatcher,
        workers,
        sched,
        lost,
        records,
        locals,
        pinning: pin,
        clobber_passes,
    } = report;
    let locals: Vec<W::Local> = locals.into_iter().map(|l| l.inner).collect();
    let report = RunReport {
        start_ns,
        elapsed_ns,
        dispatcher,
        workers,
        sched,
        lost,
        records,
        locals: Vec::new(),
        pinning: pin,
        clobber_passes,
    };
    Ok((
        Measured {
            pps: report.pps(),
            elapsed_ns: report.elapsed_ns,
            dropped: report.dispatcher.dropped_outstanding + report.dispatcher.dropped_full,
            full_waits: report.dispatcher.full_waits,
            report,
            stages,
            cache,
            pinning,
        },
        locals,
    ))
}

fn cache_of<L>(locals: &[HarnessLocal<L>], processed: u64) -> CacheMisses {
    if let Some(reason) = locals.iter().find_map(|l| l.counter_error.clone()) {
        return CacheMisses {
            supported: false,
            reason: Some(reason),
            ..CacheMisses::default()
        };
    }
    let mut l1d = 0u64;
    let mut llc = 0u64;
    for l in locals {
        match l.misses {
            Some(m) => {
                l1d += m.l1d;
                llc += m.llc;
            }
            None => {
                return CacheMisses {
                    supported: false,
                    reason: Some("a counter could not be read".into()),
                    ..CacheMisses::default()
                };
            }
        }
    }
    CacheMisses {
        supported: true,
        reason: None,
        l1d_per_packet: Some(l1d as f64 / processed as f64),
        llc_per_packet: Some(llc as f64 / processed as f64),
    }
}

/// Wire bits per packet of the trace, in megabits: converts packets/s to Mb/s.
fn mbps_per_pps(prep: &Prepared) -> f64 {
    if prep.is_empty() {
        return 0.0;
    }
    prep.wire_bytes() as f64 * 8.0 / prep.len() as f64 / 1e6
}

/// Index of the median element by `key` (lower median).
fn median_by<T>(v: &[T], key: impl Fn(&T) -> f64) -> usize {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| key(&v[a]).total_cmp(&key(&v[b])));
    idx.get((idx.len().saturating_sub(1)) / 2)
        .copied()
        .unwrap_or(0)
}

/// Order, balance, life and cache of one measured run.
fn describe_run(m: &Measured, prep: &Prepared, from: &str, out: &mut RunMetrics) {
    if let Some(rec) = &m.report.records {
        out.order = metrics::order(rec, &prep.flows, from);
        out.life = metrics::life(rec, from, m.stages.clone());
    }
    out.balance = metrics::balance(&m.report);
    out.cache = m.cache.clone();
}

/// Everything for one scheduler at one thread count. `tick` is called after each run (progress).
///
/// **Records off the clock.** Unless [`HarnessConfig::timed_records`] is set, the runs that give throughput (the raw
/// repetitions, the scaled-rate probes) keep no per-packet records, and one more raw run with records gives the
/// order, balance and life-of-a-packet figures (`from: "raw"`); the latency runs keep their records (latency is read
/// from them). Recording costs the dispatcher two clock reads and three stores per packet and the workers three
/// stores into arrays indexed by packet id, where two workers finishing neighbouring packets write the same cache
/// lines (false sharing). With one worker the dispatcher has a core of its own and that cost is hidden; with the
/// dispatcher sharing the cores it is not, so recording in the timed runs would understate the speedup of every
/// policy by the measurement's own cost. Measured with the engine on the merged nDPI captures under `lfb` (2 cores,
/// `BENCHMARKS.md`): recording cost 6% of the 1-worker and 14% of the 2-worker throughput, 1.66× instead of 1.81×.
pub fn measure_config<R: Runner + ?Sized>(
    prep: &Prepared,
    scheduler: &str,
    threads: usize,
    workload: &R,
    cfg: &HarnessConfig,
    tick: &mut dyn FnMut(&str),
) -> Result<(RunMetrics, String), BenchError> {
    let reps = cfg.reps.max(1);
    let timed = HarnessConfig {
        records: cfg.timed_records,
        ..cfg.clone()
    };
    let recorded = HarnessConfig {
        records: true,
        ..cfg.clone()
    };
    let mut raws = Vec::with_capacity(reps);
    for rep in 0..reps {
        tick(&format!("{scheduler} × {threads}: raw {}/{reps}", rep + 1));
        raws.push(workload.measure(prep, scheduler, threads, &timed, None)?);
    }
    let k = median_by(&raws, |m| m.pps);
    let conv = mbps_per_pps(prep);
    let mut out = RunMetrics {
        scheduler: scheduler.to_string(),
        threads,
        ..RunMetrics::default()
    };
    let samples: Vec<f64> = raws.iter().map(|m| m.pps).collect();
    out.raw = Some(Throughput {
        pps: raws[k].pps,
        pps_min: samples.iter().copied().fold(f64::INFINITY, f64::min),
        pps_max: samples.iter().copied().fold(0.0, f64::max),
        mbps: raws[k].pps * conv,
        elapsed_ns: raws[k].elapsed_ns,
        samples_pps: samples,
        full_waits: raws[k].full_waits,
    });
    let pinning = raws[k].pinning.clone();
    if raws[k].report.records.is_some() {
        describe_run(&raws[k], prep, "raw", &mut out);
    } else {
        tick(&format!("{scheduler} × {threads}: raw, recorded"));
        let m = workload.measure(prep, scheduler, threads, &recorded, None)?;
        describe_run(&m, prep, "raw", &mut out);
    }
    drop(raws);

    if cfg.mode == BenchMode::Scaled {
        let policy = SearchPolicy {
            attempts: reps,
            ..cfg.search
        };
        let upper = out.raw.as_ref().map_or(0.0, |r| r.pps);
        let found = search(upper, &policy, conv, |rate| {
            tick(&format!("{scheduler} × {threads}: scaled {:.0} pps", rate));
            let release = release_times(&prep.ts_ns, rate).ok_or(BenchError::Rate(rate))?;
            Ok::<u64, BenchError>(
                workload
                    .measure(prep, scheduler, threads, &timed, Some(&release))?
                    .dropped,
            )
        })?;
        if found.found {
            let rate = found.max_pps * cfg.latency_fraction.clamp(0.01, 1.0);
            let release = release_times(&prep.ts_ns, rate).ok_or(BenchError::Rate(rate))?;
            let mut runs = Vec::with_capacity(reps);
            for rep in 0..reps {
                tick(&format!(
                    "{scheduler} × {threads}: latency {}/{reps}",
                    rep + 1
                ));
                let m = workload.measure(prep, scheduler, threads, &recorded, Some(&release))?;
                let lat = m
                    .report
                    .records
                    .as_ref()
                    .map(|r| metrics::latency(r, rate))
                    .unwrap_or_else(|| Latency {
                        rate_pps: rate,
                        ..Latency::default()
                    });
                runs.push((m, lat));
            }
            let k = median_by(&runs, |(_, l)| l.mean_ns);
            let (m, lat) = &runs[k];
            out.latency = Some(lat.clone());
            describe_run(m, prep, "latency", &mut out);
        }
        out.scaled = Some(found);
    }
    Ok((out, pinning))
}

/// Run every configured scheduler at every thread count; the report carries the trace and configuration.
pub fn sweep<R: Runner + ?Sized>(
    prep: &Prepared,
    workload: &R,
    cfg: &HarnessConfig,
) -> Result<BenchReport, BenchError> {
    if prep.is_empty() {
        return Err(BenchError::Empty("the trace has no packets"));
    }
    if cfg.schedulers.is_empty() || cfg.threads.is_empty() {
        return Err(BenchError::Empty("no scheduler or no thread count"));
    }
    let configs = cfg.schedulers.len() * cfg.threads.len();
    let bar = if cfg.progress {
        let b = indicatif::ProgressBar::new(configs as u64);
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
    let support = if cfg.cache_counters {
        match crate::perf::probe() {
            Ok(()) => CacheSupport {
                supported: true,
                reason: None,
            },
            Err(e) => CacheSupport {
                supported: false,
                reason: Some(e),
            },
        }
    } else {
        CacheSupport {
            supported: false,
            reason: Some("not requested".into()),
        }
    };
    let mut runs = Vec::with_capacity(configs);
    let mut pinning = Vec::new();
    for &threads in &cfg.threads {
        for name in &cfg.schedulers {
            let mut tick = |msg: &str| bar.set_message(msg.to_string());
            let (m, pin) = measure_config(prep, name, threads, workload, cfg, &mut tick)?;
            if !pinning
                .iter()
                .any(|p: &String| p.starts_with(&format!("{threads} ")))
            {
                pinning.push(format!("{threads} threads: {pin}"));
            }
            runs.push(m);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(BenchReport {
        schema: SCHEMA.into(),
        source: Source::Measured,
        tool: format!("flowbundle bench {}", env!("CARGO_PKG_VERSION")),
        trace: metrics::trace_info(prep),
        config: RunConfigInfo {
            mode: cfg.mode.name().into(),
            workload: Runner::name(workload),
            workload_detail: Runner::detail(workload),
            reps: cfg.reps.max(1),
            max_outstanding: cfg.max_outstanding,
            tolerance: cfg.search.tolerance,
            clobber_bytes: cfg.clobber_bytes,
            pinning,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ph_late_claim: cfg.sched.ph_late_claim,
            fbq_table: cfg.sched.fbq_table,
            capacity: cfg.sched.capacity,
        },
        cache_counters: support,
        runs,
    })
}
