//! `flowbundle simulate`: the schedulers on 1 to 64 simulated cores with a cache model. Argument parsing only: the
//! work is in `flowbundle-sim`.

use anyhow::{Context, bail};
use flowbundle_lab_core::{BenchMode, plot, table};
use flowbundle_scheduler::SchedOptions;
use flowbundle_sim::calibrate::{self, Measured};
use flowbundle_sim::params::{CostModel, Machine, Overheads, Params, WorkModel};
use flowbundle_sim::report::model_table;
use flowbundle_sim::{SimInput, SweepConfig, findings, profiles};
use std::path::PathBuf;

/// Replay a trace through the real scheduler policies on simulated cores, in virtual time, with a cache model.
///
/// Examples:
///   flowbundle simulate --synth balanced --cores 1,2,4,8,14 --scheduler dh,ph,lfb --findings
///   flowbundle simulate capture.pcap --cores 1-16 --mode scaled --json sim.json --plots plots/
///   flowbundle simulate --synth balanced --model synthetic --machine host --calibrate measured.json
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Capture files (pcap, pcapng, gzip); several are merged by time, as `flowbundle bench` does.
    #[arg(value_name = "TRACE")]
    traces: Vec<PathBuf>,

    /// Generate the trace in memory instead: an ANCS'10 Table 1 shape.
    #[arg(long, value_parser = ["dominant", "many", "balanced"], conflicts_with = "traces")]
    synth: Option<String>,

    /// Packets of the --synth trace.
    #[arg(long, default_value_t = 100_000)]
    synth_packets: usize,

    /// Seed of the --synth trace.
    #[arg(long, default_value_t = 1)]
    synth_seed: u64,

    /// Keep only the first N packets of the (merged) input.
    #[arg(long)]
    packets: Option<usize>,

    /// Schedulers, comma separated (`all` for every policy; an unknown name lists the known ones).
    #[arg(long, default_value = "dh,ph,lfb", value_delimiter = ',')]
    scheduler: Vec<String>,

    /// Simulated core counts (one worker per core), comma separated; `A-B` for a range.
    #[arg(
        long,
        alias = "threads",
        default_value = "1,2,4,8,14",
        value_delimiter = ','
    )]
    cores: Vec<String>,

    /// raw: maximum raw throughput; scaled: also the maximum scaled throughput and latency at 80% of it.
    #[arg(long, default_value = "raw", value_parser = ["raw", "scaled"])]
    mode: String,

    /// Machine preset: `nehalem` (the ANCS'10 Xeon E5540) or `host` (this machine's caches from sysfs).
    #[arg(long, default_value = "nehalem")]
    machine: String,

    /// Work model preset: `pam` (a PAM-like DPI engine) or `synthetic` (the bench's synthetic workload).
    #[arg(long, default_value = "pam", value_parser = ["pam", "synthetic"])]
    model: String,

    /// Read all parameters from a JSON file (as written by --params-out) instead of the presets.
    #[arg(long, value_name = "F")]
    params: Option<PathBuf>,

    /// Write the parameters used as JSON.
    #[arg(long, value_name = "F")]
    params_out: Option<PathBuf>,

    /// Per-packet costs from an engine cost file (`inspect --cost-out`, binary or CSV) instead of the model's.
    #[arg(long, value_name = "F")]
    cost_file: Option<PathBuf>,

    /// The model's parameters, overriding the presets (boxed: the other commands' arguments are much smaller).
    #[command(flatten)]
    knobs: Box<Knobs>,

    /// Scaled mode: packets in the system beyond which arrivals are dropped.
    #[arg(long, default_value_t = flowbundle_worker::MAX_OUTSTANDING)]
    max_outstanding: usize,

    /// Scaled mode: relative tolerance of the rate search.
    #[arg(long, default_value_t = 0.05)]
    tolerance: f64,

    /// Scaled mode: fraction of the maximum scaled rate at which latency is measured.
    #[arg(long, default_value_t = 0.8)]
    latency_at: f64,

    /// Flow bundle queues of lfb and lfb-affinity.
    #[arg(long, default_value_t = 4096)]
    fbq_table: usize,

    /// Packets a policy may hold at once.
    #[arg(long, default_value_t = 8192)]
    capacity: usize,

    /// lfb-bounded: packets of one bundle a worker finishes in a row before it gives the bundle up to waiting work.
    #[arg(long, default_value_t = SchedOptions::default().lfb_bound)]
    lfb_bound: usize,

    /// When ph claims a connection entry: after the worker's decode (`late`, as PAM does) or inside `next`.
    #[arg(long, default_value = "late", value_parser = ["late", "next"])]
    ph_claim: String,

    /// Fit the cost scale and the worker's per-packet cost to a `flowbundle bench --json` report of the same trace
    /// (its raw runs at 1 and 2 threads), print the fit error, and simulate with the fitted parameters.
    #[arg(long, value_name = "BENCH_JSON")]
    calibrate: Option<PathBuf>,

    /// With --calibrate: exit with an error when a run's prediction is off by more than this fraction.
    #[arg(long, default_value_t = 0.15)]
    max_error: f64,

    /// Check the ANCS'10 paper's qualitative findings on the sweep (for --synth profiles); with --exec, the Verdú
    /// thesis' ordering of the execution models.
    #[arg(long)]
    findings: bool,

    /// Execution models to compare instead of the scheduler sweep: rtc (run-to-completion), pipeline (decode |
    /// flow and reassembly | detection), multilayer (a core group per state layer); comma separated. Raw mode; every
    /// group runs the --scheduler policy. Prints throughput, I- and D-cache miss rates and queue contention.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = clap::builder::PossibleValuesParser::new(
            flowbundle_sim::exec::Exec::ALL.map(flowbundle_sim::exec::Exec::name)
        )
    )]
    exec: Vec<String>,

    /// With --exec: multiply the layers' instruction footprints (0: no instruction-cache model).
    #[arg(long, default_value_t = 1.0)]
    exec_code_scale: f64,

    /// With --exec: the layers' cost shares and code footprints from this measurement (the JSON
    /// `scripts/exec-layers` writes) instead of the one built in (balanced, snort3-community.rules); `thesis` for the
    /// Verdú thesis' estimates for Snort-MT.
    #[arg(long, value_name = "FILE|thesis")]
    exec_layers: Option<PathBuf>,

    /// With --exec: what moving a packet from one group to the next costs, from this measurement (the JSON
    /// `scripts/measure-handoff` writes) instead of the one built in; `none` for the policy's overheads and two lines
    /// per hop (what the simulator charged before the hand-off was measured).
    #[arg(long, value_name = "FILE|none")]
    exec_handoff: Option<PathBuf>,

    /// With --exec: what the runtime's reader and collector threads and the single-threaded loop cost per packet,
    /// from this measurement (the JSON `scripts/measure-threads` writes, with the threads' time on a CPU that
    /// `scripts/measure-sched --threads-json` adds, which then replaces their instruction counts) instead of the one
    /// built in; `none` for workers alone, each on a core of its own, and a free dispatcher (what the simulator did
    /// before). The threads are measured against this engine's own per-packet cost: they are charged with
    /// --cost-file (or when this option names a file, or --exec-machine-cores is given), not on top of a modelled
    /// cost.
    #[arg(long, value_name = "FILE|none")]
    exec_threads: Option<PathBuf>,

    /// With --exec: the machine's cores, when not one per worker (`--cores` counts workers): with as many cores as
    /// workers (the default, what `inspect --threads N` does) the reader and the collector take their CPU from the
    /// workers' cores; one more core runs both; two more, one each.
    #[arg(long, value_name = "N")]
    exec_machine_cores: Option<usize>,

    /// With --exec: packets each group's policy may hold (the bounded queue in front of a group).
    #[arg(long, default_value_t = flowbundle_sim::exec::ExecParams::engine().queue)]
    exec_queue: usize,

    /// With --exec: cut detection into its stateless content scan (measured share of detection's cost) and the
    /// rest; a connection backlogged by --exec-split-backlog packets has its scans spread over the cores and
    /// taken back in order (under rtc: only that connection's packets leave their core).
    #[arg(long)]
    exec_split: bool,

    /// With --exec: give the pipeline's and multilayer's core groups their cores by the cost model's estimate of each
    /// layer's cycles instead of by the busy cycles each group took in a first run of the same trace.
    #[arg(long)]
    exec_static_groups: bool,

    /// With --exec-split: packets of one connection inside a group that make it backlogged (0: never spread).
    #[arg(long, default_value_t = flowbundle_sim::exec::SplitScan::measured().backlog)]
    exec_split_backlog: usize,

    /// Write the report as JSON (the bench schema flowbundle-bench/1, plus a `sim` section) to this file, or to
    /// standard output with `-` (the text report then goes to standard error).
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,

    /// Draw SVG plots into this directory (with --overlay, measured runs too).
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,

    /// A `flowbundle bench` JSON report to draw beside the simulated runs.
    #[arg(long, value_name = "BENCH_JSON")]
    overlay: Option<PathBuf>,

    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// Overrides of single model parameters (each default and its source: the sim crate's `params` module).
#[derive(clap::Args, Debug)]
struct Knobs {
    /// Multiply every packet's base cost.
    #[arg(long)]
    cost_scale: Option<f64>,

    /// Synthetic model: ns per packet (the bench's --base-ns).
    #[arg(long)]
    base_ns: Option<f64>,
    /// Synthetic model: ns per wire byte (the bench's --per-byte-ns).
    #[arg(long)]
    per_byte_ns: Option<f64>,

    /// PAM model: cycles per TCP packet.
    #[arg(long)]
    tcp_cycles: Option<f64>,
    /// PAM model: cycles per UDP packet.
    #[arg(long)]
    udp_cycles: Option<f64>,
    /// PAM model: cycles per packet of another protocol.
    #[arg(long)]
    other_cycles: Option<f64>,
    /// PAM model: cycles per payload byte.
    #[arg(long)]
    byte_cycles: Option<f64>,

    /// Flow-state lines per connection.
    #[arg(long)]
    state_lines: Option<usize>,

    /// Lines streamed per packet besides its bytes.
    #[arg(long)]
    stream_lines: Option<usize>,

    /// Do not stream the packet's bytes through the caches.
    #[arg(long)]
    no_payload_stream: bool,

    /// Share of each packet's cost spent decoding before the scheduler's claim.
    #[arg(long)]
    prepare_share: Option<f64>,

    /// Cores per socket (each socket has its own L3 and memory).
    #[arg(long)]
    cores_per_socket: Option<usize>,

    /// Clock of the simulated cores, GHz.
    #[arg(long)]
    ghz: Option<f64>,

    /// Runtime cost in cycles: dispatching a packet.
    #[arg(long)]
    dispatch_cycles: Option<u32>,
    /// Runtime cost in cycles: the second enqueue of lfb.
    #[arg(long)]
    dual_enqueue_cycles: Option<u32>,
    /// Runtime cost in cycles: the worker's own cost per packet.
    #[arg(long)]
    worker_cycles: Option<u32>,
    /// Runtime cost in cycles: a ph handoff.
    #[arg(long)]
    handoff_cycles: Option<u32>,
}

fn parse_cores(v: &[String]) -> anyhow::Result<Vec<usize>> {
    let mut out = Vec::new();
    for s in v {
        let s = s.trim();
        if let Some((a, b)) = s.split_once('-') {
            let (a, b): (usize, usize) = (a.trim().parse()?, b.trim().parse()?);
            if a > b {
                bail!("bad core range `{s}`");
            }
            out.extend(a..=b);
        } else {
            out.push(s.parse().with_context(|| format!("bad core count `{s}`"))?);
        }
    }
    if out.is_empty()
        || out
            .iter()
            .any(|&c| c == 0 || c > flowbundle_sim::params::MAX_CORES)
    {
        bail!(
            "--cores takes counts between 1 and {}",
            flowbundle_sim::params::MAX_CORES
        );
    }
    Ok(out)
}

fn params_of(args: &Args) -> anyhow::Result<Params> {
    let mut p = match &args.params {
        Some(f) => Params::from_json(
            &std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
        )
        .with_context(|| format!("parsing {}", f.display()))?,
        None => {
            let machine = Machine::named(&args.machine)
                .with_context(|| format!("unknown --machine `{}` (nehalem, host)", args.machine))?;
            let overheads = Overheads::at_clock(machine.clock_ghz);
            Params {
                work: WorkModel::named(&args.model).unwrap_or_default(),
                machine,
                overheads,
            }
        }
    };
    let m = &mut p.machine;
    if let Some(g) = args.knobs.ghz {
        m.clock_ghz = g;
    }
    if let Some(c) = args.knobs.cores_per_socket {
        m.cores_per_socket = c;
    }
    let w = &mut p.work;
    if let Some(s) = args.knobs.cost_scale {
        w.cost_scale = s;
    }
    if let Some(n) = args.knobs.state_lines {
        w.state_lines = n;
    }
    if let Some(n) = args.knobs.stream_lines {
        w.stream_lines = n;
    }
    if args.knobs.no_payload_stream {
        w.stream_payload = false;
    }
    if let Some(s) = args.knobs.prepare_share {
        w.prepare_share = s;
    }
    match &mut w.cost {
        CostModel::Nanos {
            base_ns,
            per_wire_byte_ns,
        } => {
            if let Some(b) = args.knobs.base_ns {
                *base_ns = b;
            }
            if let Some(b) = args.knobs.per_byte_ns {
                *per_wire_byte_ns = b;
            }
        }
        CostModel::Cycles {
            tcp,
            udp,
            other,
            per_payload_byte,
        } => {
            for (dst, src) in [
                (tcp, args.knobs.tcp_cycles),
                (udp, args.knobs.udp_cycles),
                (other, args.knobs.other_cycles),
                (per_payload_byte, args.knobs.byte_cycles),
            ] {
                if let Some(v) = src {
                    *dst = v;
                }
            }
        }
        CostModel::PerPacket => {}
    }
    if args.cost_file.is_some() {
        w.cost = CostModel::PerPacket;
    }
    let o = &mut p.overheads;
    for (dst, src) in [
        (&mut o.dispatch, args.knobs.dispatch_cycles),
        (&mut o.dual_enqueue, args.knobs.dual_enqueue_cycles),
        (&mut o.worker, args.knobs.worker_cycles),
        (&mut o.handoff, args.knobs.handoff_cycles),
    ] {
        if let Some(v) = src {
            *dst = v;
        }
    }
    p.validate()
        .map_err(|e| anyhow::anyhow!("bad parameters: {e}"))?;
    Ok(p)
}

fn load(args: &Args) -> anyhow::Result<SimInput> {
    let mut input = if let Some(name) = &args.synth {
        if let Some(cfg) = flowbundle_trace::synth::SynthConfig::profile(name) {
            let mut cfg = cfg.with_packets(args.synth_packets as u64);
            cfg.seed = args.synth_seed;
            super::warn_short_synth(name, &cfg);
        }
        let mut i = profiles::profile(name, args.synth_packets as u64, args.synth_seed)?;
        if let Some(n) = args.packets.filter(|&n| n < i.len()) {
            i = truncate(i, n);
        }
        i
    } else {
        if args.traces.is_empty() {
            bail!(
                "give a TRACE file (or several, merged by time), or --synth dominant|many|balanced"
            );
        }
        profiles::files(&args.traces, args.packets).context("loading the trace")?
    };
    if let Some(f) = &args.cost_file {
        if args.traces.len() != 1 {
            bail!("--cost-file numbers the packets of one capture: give one TRACE");
        }
        let c = flowbundle_sim::input::read_cost_file(f, input.len())
            .with_context(|| format!("reading {}", f.display()))?;
        eprintln!(
            "cost file: {} records used, {} beyond the trace, {} malformed",
            c.rows, c.out_of_range, c.malformed
        );
        input.cost_ns = Some(c.cost_ns);
    }
    Ok(input)
}

/// The first `n` packets of an input.
fn truncate(mut i: SimInput, n: usize) -> SimInput {
    i.descs.truncate(n);
    i.flows.truncate(n);
    i.ts_ns.truncate(n);
    i.wire_len.truncate(n);
    i.payload_len.truncate(n);
    i.proto.truncate(n);
    if let Some(c) = i.cost_ns.as_mut() {
        c.truncate(n);
    }
    i.info.packets = n as u64;
    i
}

/// The files a simulate run reads (none of its outputs may be one of them).
fn inputs(args: &Args) -> Vec<&std::path::Path> {
    args.traces
        .iter()
        .chain(&args.params)
        .chain(&args.cost_file)
        .chain(&args.calibrate)
        .chain(&args.overlay)
        .chain(
            args.exec_layers
                .iter()
                .filter(|p| p.as_os_str() != "thesis"),
        )
        .chain(args.exec_handoff.iter().filter(|p| p.as_os_str() != "none"))
        .chain(args.exec_threads.iter().filter(|p| p.as_os_str() != "none"))
        .map(PathBuf::as_path)
        .collect()
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let schedulers = super::scheduler_list(&args.scheduler)?;
    super::json_start(args.json.as_deref(), inputs(&args))?;
    if let Some(out) = &args.params_out {
        super::check_output(out, inputs(&args))?;
    }
    let cores = parse_cores(&args.cores)?;
    if !(args.latency_at > 0.0 && args.latency_at <= 1.0) {
        bail!("--latency-at must be in (0, 1]");
    }
    if args.max_outstanding == 0 {
        bail!("--max-outstanding must be at least 1");
    }
    let mut params = params_of(&args)?;
    let input = load(&args)?;
    if input.is_empty() {
        bail!("the trace has no packets");
    }
    eprintln!(
        "{} packets, {} flows; {}",
        input.len(),
        input.flow_count,
        params.describe()
    );
    let sched = SchedOptions {
        capacity: args.capacity,
        fbq_table: args.fbq_table,
        ph_late_claim: args.ph_claim == "late",
        lfb_bound: args.lfb_bound,
        ..SchedOptions::default()
    };

    if let Some(f) = &args.calibrate {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let measured_report = flowbundle_lab_core::BenchReport::from_json(&text)
            .with_context(|| format!("parsing {}", f.display()))?;
        if measured_report.trace.packets != input.len() as u64 {
            eprintln!(
                "warning: the measured trace had {} packets, this one {}: calibrate on the same trace",
                measured_report.trace.packets,
                input.len()
            );
        }
        let measured: Vec<Measured> = calibrate::measured_from(&measured_report, 2);
        eprintln!("calibrating on {} measured runs ...", measured.len());
        let fit = calibrate::calibrate(&input, &params, &sched, &measured)?;
        outln!(
            "Calibration ({} evaluations): cost scale {:.4}, worker cost {} cycles ({:.0} ns) per packet\n",
            fit.evaluations,
            fit.cost_scale,
            fit.worker_cycles,
            fit.worker_ns
        );
        outln!(
            "| scheduler | threads | measured Mpps | simulated Mpps | error |\n|---|---|---|---|---|"
        );
        for r in &fit.rows {
            outln!(
                "| {} | {} | {:.4} | {:.4} | {:+.1}% |",
                r.scheduler,
                r.threads,
                r.measured_pps / 1e6,
                r.predicted_pps / 1e6,
                r.error * 100.0
            );
        }
        outln!(
            "\nfit error: max {:.1}%, rms {:.1}% (limit {:.0}%)\n",
            fit.max_abs_error * 100.0,
            fit.rms_error * 100.0,
            args.max_error * 100.0
        );
        params = fit.params.clone();
        if fit.max_abs_error > args.max_error {
            if let Some(out) = &args.params_out {
                super::write_output(out, inputs(&args), params.to_json())?;
            }
            bail!(
                "calibration error {:.1}% exceeds {:.0}%",
                fit.max_abs_error * 100.0,
                args.max_error * 100.0
            );
        }
    }
    if let Some(out) = &args.params_out {
        super::write_output(out, inputs(&args), params.to_json())?;
        eprintln!("wrote {}", out.display());
    }

    if !args.exec.is_empty() {
        return run_exec(&args, &input, &params, schedulers, cores, sched);
    }

    let cfg = SweepConfig {
        schedulers,
        cores,
        mode: if args.mode == "scaled" {
            BenchMode::Scaled
        } else {
            BenchMode::Raw
        },
        max_outstanding: args.max_outstanding,
        search: flowbundle_lab_core::SearchPolicy {
            tolerance: args.tolerance,
            attempts: 1,
            ..flowbundle_lab_core::SearchPolicy::default()
        },
        latency_fraction: args.latency_at,
        sched,
    };
    let total = cfg.schedulers.len() * cfg.cores.len();
    let started = std::time::Instant::now();
    let report = flowbundle_sim::report::sweep_with_progress(&input, &params, &cfg, !args.quiet)?;
    eprintln!(
        "simulated {} configurations of {} packets in {:.2} s",
        total,
        input.len(),
        started.elapsed().as_secs_f64()
    );
    outln!("{}", table::header(&report.bench));
    outln!("{}", table::summary(&report.bench));
    outln!(
        "Model (flow-state misses per packet, busiest core):\n\n{}",
        model_table(&report)
    );
    outln!(
        "Life of a packet (mean per packet):\n\n{}",
        table::life(&report.bench)
    );
    if args.findings {
        let profile = args.synth.as_deref().unwrap_or("");
        outln!("Findings of ANCS'10 on this sweep:\n");
        for f in findings::check(profile, &report, &input) {
            outln!(
                "- [{}] {}: {}",
                if f.holds { "holds" } else { "DOES NOT HOLD" },
                f.name,
                f.detail
            );
        }
        if let Some((n, paper, pname, any, aname)) = findings::headline(&report) {
            outln!(
                "- headline at {n} cores: lfb / {pname} = {paper:.2} (the paper: 1.38 on Balanced at 14 threads); \
                 lfb / {aname} (best of all simulated) = {any:.2}"
            );
        }
        outln!();
    }
    if let Some(out) = &args.json {
        super::write_output(out, inputs(&args), report.to_json())?;
        if out.as_os_str() != "-" {
            eprintln!("wrote {}", out.display());
        }
    }
    if let Some(dir) = &args.plots {
        let overlay = match &args.overlay {
            Some(f) => Some(
                flowbundle_lab_core::BenchReport::from_json(&std::fs::read_to_string(f)?)
                    .with_context(|| format!("parsing {}", f.display()))?,
            ),
            None => None,
        };
        let mut reports = vec![&report.bench];
        if let Some(o) = &overlay {
            reports.push(o);
        }
        for f in plot::write_all(&reports, dir)? {
            eprintln!("wrote {}", f.display());
        }
    }
    Ok(())
}

/// `--exec`: the execution models on the same trace and parameters.
fn run_exec(
    args: &Args,
    input: &SimInput,
    params: &Params,
    schedulers: Vec<String>,
    cores: Vec<usize>,
    sched: SchedOptions,
) -> anyhow::Result<()> {
    use flowbundle_sim::exec::{Exec, ExecParams, ExecSweep, sweep_exec};
    if args.mode != "raw" {
        bail!("--exec simulates raw mode only");
    }
    if !(args.exec_code_scale.is_finite() && (0.0..=16.0).contains(&args.exec_code_scale)) {
        bail!("--exec-code-scale must be between 0 and 16");
    }
    let mut ep = match &args.exec_layers {
        None => ExecParams::engine(),
        Some(p) if p.as_os_str() == "thesis" => ExecParams::thesis(),
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            let m = flowbundle_sim::layers::LayerMeasures::from_json(&text)
                .with_context(|| format!("parsing {}", p.display()))?;
            m.apply(&ExecParams::engine())
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?
        }
    };
    match &args.exec_handoff {
        None => {}
        Some(p) if p.as_os_str() == "none" => ep.handoff = flowbundle_sim::handoff::Handoff::none(),
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            ep.handoff = flowbundle_sim::handoff::Handoff::from_json(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        }
    }
    match &args.exec_threads {
        None => {}
        Some(p) if p.as_os_str() == "none" => {
            ep.threads = flowbundle_sim::threads::RuntimeThreads::none()
        }
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            ep.threads = flowbundle_sim::threads::RuntimeThreads::from_json(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        }
    }
    let engine_costs = args.cost_file.is_some()
        || args
            .exec_threads
            .as_ref()
            .is_some_and(|p| p.as_os_str() != "none");
    let host = match args.exec_machine_cores {
        Some(n) => flowbundle_sim::threads::Host::RuntimeOn { cores: n },
        None if engine_costs => flowbundle_sim::threads::Host::Runtime,
        None => flowbundle_sim::threads::Host::Dedicated,
    };
    ep.scale_code(args.exec_code_scale);
    ep.queue = args.exec_queue;
    if args.exec_split {
        let split = flowbundle_sim::exec::SplitScan {
            backlog: args.exec_split_backlog,
            ..flowbundle_sim::exec::SplitScan::measured()
        };
        ep = ep
            .split_scan(&split)
            .map_err(|e| anyhow::anyhow!("--exec-split: {e}"))?;
    }
    ep.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    let models: Vec<Exec> = args.exec.iter().filter_map(|s| Exec::parse(s)).collect();
    let sweep = ExecSweep {
        models,
        schedulers: schedulers.clone(),
        cores,
        sched,
        measured_allocation: !args.exec_static_groups,
        host,
    };
    let started = std::time::Instant::now();
    let report = sweep_exec(input, params, &ep, &sweep, &mut |r| {
        if !args.quiet {
            eprintln!(
                "{} {} {} cores: {:.3} Mpps",
                r.exec.name(),
                r.scheduler,
                r.cores,
                r.pps / 1e6
            );
        }
    })?;
    eprintln!(
        "simulated {} runs of {} packets in {:.2} s",
        report.runs.len(),
        input.len(),
        started.elapsed().as_secs_f64()
    );
    outln!("{}", report.table());
    if args.findings {
        outln!("Findings of the Verdú thesis on this sweep:\n");
        for s in &schedulers {
            for f in [
                findings::exec_ordering(&report, s, 12),
                findings::exec_icache_lowest(&report, s, 12),
            ] {
                outln!(
                    "- [{}] {}: {}",
                    if f.holds { "holds" } else { "DOES NOT HOLD" },
                    f.name,
                    f.detail
                );
            }
        }
    }
    if let Some(out) = &args.json {
        super::write_output(out, inputs(args), report.to_json())?;
    }
    Ok(())
}
