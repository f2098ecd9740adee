//! The evaluation harness (ANCS'10 §4.1): preloaded traces, raw and scaled throughput, latency, reordering, balance, plots.
//! `flowbundle bench`. Argument parsing only: the work is in `flowbundle-bench`.

use anyhow::{Context, bail};
use flowbundle_bench::harness::{BenchMode, HarnessConfig};
use flowbundle_bench::inspect::{InspectRunner, prep_options};
use flowbundle_bench::{PrepOptions, Prepared, SearchPolicy, cost, plot, table};
use flowbundle_inspect::EngineConfig;
use flowbundle_inspect::rules::RuleSet;
use flowbundle_inspect::signatures::SignatureSet;
use flowbundle_scheduler::SchedOptions;
use flowbundle_trace::synth::{SynthConfig, generate_trace};
use flowbundle_worker::{Cost, Null, Synthetic};
use std::path::PathBuf;
use std::sync::Arc;

/// Replay a trace through packet schedulers and measure them (ANCS'10 §4.1).
///
/// Examples:
///   flowbundle bench capture.pcap --scheduler dh,ph,lfb --threads 1,2 --mode raw
///   flowbundle bench --synth dominant --mode scaled --json out.json --plots plots/
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Capture files (pcap, pcapng, gzip); several are merged in memory: each one's timestamps start at zero and the
    /// packets interleave by time (addresses are kept: `flowbundle trace merge` keeps them apart).
    #[arg(value_name = "TRACE")]
    traces: Vec<PathBuf>,

    /// Generate the trace in memory instead: an ANCS'10 Table 1 shape (`flowbundle trace synth`'s profiles).
    #[arg(long, value_parser = ["dominant", "many", "balanced"], conflicts_with = "traces")]
    synth: Option<String>,

    /// Packets of the --synth trace (the profile scaled down, connections in proportion).
    #[arg(long, default_value_t = 100_000)]
    synth_packets: u64,

    /// Seed of the --synth trace.
    #[arg(long, default_value_t = 1)]
    synth_seed: u64,

    /// Keep only the first N packets of the (merged) input.
    #[arg(long)]
    packets: Option<usize>,

    /// Schedulers, comma separated (`all` for every policy; an unknown name lists the known ones).
    #[arg(long, default_value = "dh,ph,lfb", value_delimiter = ',')]
    scheduler: Vec<String>,

    /// Worker thread counts, comma separated (0: every core).
    #[arg(long, default_value = "1,2", value_delimiter = ',')]
    threads: Vec<usize>,

    /// raw: maximum raw throughput; scaled: also the maximum scaled throughput and latency at 80% of it.
    #[arg(long, default_value = "raw", value_parser = ["raw", "scaled"])]
    mode: String,

    /// What workers do per packet: the inspection engine, a calibrated synthetic cost, or nothing.
    #[arg(long, default_value = "inspect", value_parser = ["inspect", "synthetic", "null"])]
    workload: String,

    /// Inspect workload: a Snort/Suricata rule file or a directory of them (repeat for more); compiled once, shared by
    /// every run.
    #[arg(long, value_name = "F")]
    rules: Vec<PathBuf>,

    /// Inspect workload: L7-filter signatures (a directory of `.pat` files); compiled once, shared by every run.
    #[arg(long, value_name = "DIR")]
    signatures: Option<PathBuf>,

    /// Synthetic workload: per-packet costs (`packet,cost_ns` CSV, e.g. written by the engine) instead of the model.
    #[arg(long, value_name = "F")]
    cost_file: Option<PathBuf>,

    /// Synthetic cost model: fixed ns per packet.
    #[arg(long, default_value_t = 3000.0)]
    base_ns: f64,

    /// Synthetic cost model: ns per wire byte.
    #[arg(long, default_value_t = 2.0)]
    per_byte_ns: f64,

    /// Synthetic workload: 64-byte flow-state lines read and written per packet (cache affinity matters).
    #[arg(long, default_value_t = 4)]
    state_lines: usize,

    /// Synthetic workload: share of each packet's cost spent decoding before the scheduler's claim.
    #[arg(long, default_value_t = 0.1)]
    prepare_share: f64,

    /// Runs per configuration (raw runs, latency runs, and attempts per probed rate).
    #[arg(long, default_value_t = 3)]
    reps: usize,

    /// Scaled mode: packets in the system beyond which arrivals are dropped.
    #[arg(long, default_value_t = flowbundle_worker::MAX_OUTSTANDING)]
    max_outstanding: usize,

    /// Scaled mode: the dispatcher releases the packets due every this many µs, sleeping in between (0: pace each
    /// packet on its own, which holds a core when packets are closer than 60 µs). Latency counts from each packet's
    /// scheduled time either way.
    #[arg(long, default_value_t = flowbundle_worker::RELEASE_TICK_NS / 1000)]
    release_tick_us: u64,

    /// Scaled mode: relative tolerance of the rate search.
    #[arg(long, default_value_t = 0.05)]
    tolerance: f64,

    /// Scaled mode: fraction of the maximum scaled rate at which latency is measured.
    #[arg(long, default_value_t = 0.8)]
    latency_at: f64,

    /// Run the cache clobber thread with a buffer of this many MiB (the paper: 4).
    #[arg(long, value_name = "MIB")]
    clobber: Option<usize>,

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

    /// Do not pin threads to cores.
    #[arg(long)]
    no_pin: bool,

    /// Do not open hardware cache counters.
    #[arg(long)]
    no_cache_counters: bool,

    /// Run every policy under the exclusivity checker (slow; for verification).
    #[arg(long)]
    check: bool,

    /// Write the report as JSON (schema flowbundle-bench/1) to this file, or to standard output with `-` (the text
    /// report then goes to standard error).
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,

    /// Draw SVG plots into this directory.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,

    /// Keep per-packet records in the timed runs too (by default they run without, and one extra recorded run per
    /// configuration gives the order, balance and life-of-a-packet figures).
    #[arg(long)]
    timed_records: bool,

    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// The files a bench run reads (its JSON output may not be one of them).
fn inputs(args: &Args) -> Vec<&std::path::Path> {
    args.traces
        .iter()
        .chain(&args.rules)
        .chain(&args.cost_file)
        .map(PathBuf::as_path)
        .collect()
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let schedulers = super::scheduler_list(&args.scheduler)?;
    super::json_start(args.json.as_deref(), inputs(&args))?;
    let threads = super::thread_counts(&args.threads, flowbundle_scheduler::MAX_WORKERS)?;
    if !(args.latency_at > 0.0 && args.latency_at <= 1.0) {
        bail!("--latency-at must be in (0, 1]");
    }
    if args.max_outstanding == 0 {
        bail!("--max-outstanding must be at least 1");
    }
    if args.workload != "inspect" && (!args.rules.is_empty() || args.signatures.is_some()) {
        bail!("--rules and --signatures need --workload inspect");
    }
    let prep = load(&args)?;
    if prep.is_empty() {
        bail!("the trace has no packets");
    }
    eprintln!(
        "prepared {} packets ({} flows; {} fragments absorbed, {} datagrams reassembled, {} non-IP)",
        prep.len(),
        prep.stats.flows,
        prep.stats.fragments_absorbed,
        prep.stats.reassembled,
        prep.stats.non_ip
    );
    let cfg = HarnessConfig {
        schedulers,
        threads,
        mode: if args.mode == "scaled" {
            BenchMode::Scaled
        } else {
            BenchMode::Raw
        },
        reps: args.reps.max(1),
        max_outstanding: args.max_outstanding,
        search: SearchPolicy {
            tolerance: args.tolerance,
            attempts: args.reps.max(1),
            ..SearchPolicy::default()
        },
        latency_fraction: args.latency_at,
        sched: SchedOptions {
            capacity: args.capacity,
            fbq_table: args.fbq_table,
            ph_late_claim: args.ph_claim == "late",
            lfb_bound: args.lfb_bound,
            ..SchedOptions::default()
        },
        clobber_bytes: args.clobber.unwrap_or(0).saturating_mul(1 << 20),
        pin: !args.no_pin,
        cache_counters: !args.no_cache_counters,
        check: args.check,
        progress: !args.quiet,
        timed_records: args.timed_records,
        records: true,
        release_tick_ns: args.release_tick_us.saturating_mul(1000),
    };
    let report = match args.workload.as_str() {
        "null" => flowbundle_bench::sweep(&prep, &Null, &cfg)?,
        "synthetic" => {
            let cost = match &args.cost_file {
                Some(f) => {
                    if prep.input.iter().any(|&i| i != 0) {
                        bail!("--cost-file numbers the packets of one capture: give one TRACE");
                    }
                    let file = cost::load(
                        f,
                        prep.orig.iter().map(|&o| o as usize + 1).max().unwrap_or(0),
                    )
                    .with_context(|| format!("reading {}", f.display()))?;
                    eprintln!(
                        "cost file: {} rows used, {} beyond the trace, {} malformed {:?}",
                        file.rows, file.out_of_range, file.malformed, file.examples
                    );
                    Cost::PerPacket(cost::per_dispatched(&file, &prep.orig))
                }
                None => Cost::Model {
                    base_ns: args.base_ns.max(0.0),
                    per_byte_ns: args.per_byte_ns.max(0.0),
                },
            };
            let work =
                Synthetic::new(cost, args.state_lines).with_prepare_share(args.prepare_share);
            flowbundle_bench::sweep(&prep, &work, &cfg)?
        }
        "inspect" => {
            // A fresh engine per run (empty flow table) over sets compiled once; see flowbundle_bench::inspect.
            let (signatures, rules) = load_sets(&args)?;
            let runner =
                InspectRunner::new(EngineConfig::default(), &prep).with_sets(signatures, rules);
            flowbundle_bench::sweep(&prep, &runner, &cfg)?
        }
        other => bail!("unknown workload `{other}`"),
    };
    outln!("{}", table::header(&report));
    outln!("{}", table::summary(&report));
    outln!(
        "Life of a packet (mean per packet):\n\n{}",
        table::life(&report)
    );
    if let Some(out) = &args.json {
        super::write_output(out, inputs(&args), report.to_json())?;
        if out.as_os_str() != "-" {
            eprintln!("wrote {}", out.display());
        }
    }
    if let Some(dir) = &args.plots {
        for f in plot::write_all(&[&report], dir)? {
            eprintln!("wrote {}", f.display());
        }
    }
    Ok(())
}

fn load(args: &Args) -> anyhow::Result<Prepared> {
    // The engine must see the flows the policies see: its decode options (tunnels) and hash seed.
    let base = if args.workload == "inspect" {
        prep_options(&EngineConfig::default())
    } else {
        PrepOptions::default()
    };
    let opts = PrepOptions {
        limit: args.packets.unwrap_or(flowbundle_bench::prep::MAX_PACKETS),
        ..base
    };
    if let Some(name) = &args.synth {
        let mut cfg = SynthConfig::profile(name)
            .with_context(|| format!("unknown --synth profile `{name}`"))?
            .with_packets(args.synth_packets);
        cfg.seed = args.synth_seed;
        super::warn_short_synth(name, &cfg);
        let (trace, _) =
            generate_trace(&cfg).map_err(|e| anyhow::anyhow!("--synth {name}: {e}"))?;
        return Ok(flowbundle_bench::prepare(
            vec![(format!("synthetic-{name}"), trace)],
            &opts,
        ));
    }
    if args.traces.is_empty() {
        bail!("give a TRACE file (or several, merged by time), or --synth dominant|many|balanced");
    }
    flowbundle_bench::prepare_files(&args.traces, &opts).context("loading the trace")
}

type Sets = (Option<Arc<SignatureSet>>, Option<Arc<RuleSet>>);

/// The --signatures and --rules sets, compiled once.
fn load_sets(args: &Args) -> anyhow::Result<Sets> {
    let signatures = match &args.signatures {
        Some(dir) => Some(Arc::new(flowbundle_run::reload::load_signatures(dir)?.0)),
        None => None,
    };
    let rules = if args.rules.is_empty() {
        None
    } else {
        let (set, report) = RuleSet::load_files(&args.rules).context("loading rules")?;
        // As inspect reports them: each unreadable rule as `file:line: reason`, and a refusal when nothing loads.
        flowbundle_run::rule_report::check(&report, None, &[])?;
        Some(Arc::new(set))
    };
    Ok((signatures, rules))
}
