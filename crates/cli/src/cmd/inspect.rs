//! `flowbundle inspect`: captures through the engine, EVE JSON out, a summary.
//!
//! Single-threaded (the default) the input is streamed: one packet at a time from the reader, through the
//! pre-scheduling stage (defragmentation) and the engine, events written as they are produced; memory is the flow
//! state and nothing else. With `--threads N` the worker runtime runs the engine: the runtime takes a preloaded array
//! of descriptors, so the input is copied batch by batch into a bounded buffer (the descriptors' ids index it), each
//! batch dispatched by the chosen scheduler to N workers, its events sorted and written before the next batch is
//! read. Flow state persists across batches; the workers' contexts too.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use flowbundle_ingest::{CaptureReader, LiveCapture, TraceBuilder};
use flowbundle_inspect::cost::{CostRecord, CostWriter};
use flowbundle_inspect::rules::RuleSet;
use flowbundle_inspect::signatures::{Options as SigOptions, SignatureSet};
use flowbundle_inspect::{
    Engine, EngineConfig, Event, InspectWorkload, PreparedTrace, Prestage, WorkerCtx, sort_events,
};
use flowbundle_scheduler::SchedOptions;
use flowbundle_sinks::{EveWriter, RulesInfo, RunInfo, Summary};
use flowbundle_worker::{RunConfig, run as run_workers};

/// Inspect captures: connections, protocols, content rules; EVE JSON out.
///
/// Examples:
///   flowbundle inspect capture.pcap --summary
///   flowbundle inspect a.pcap b.pcapng -o eve.json --rules local.rules --signatures shared/data/l7-protocols
///   flowbundle inspect big.pcap --threads 2 --scheduler lfb -o eve.json
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Capture files (pcap, pcapng, gzip), inspected one after the other as one input.
    #[arg(
        value_name = "FILE",
        required_unless_present = "interface",
        conflicts_with = "interface"
    )]
    files: Vec<PathBuf>,

    /// Capture live from this network interface instead of files (needs a build with `--features live`, libpcap,
    /// and usually root or CAP_NET_RAW). Runs until Ctrl-C, --count or --seconds, then writes the summary.
    #[arg(short = 'i', long, value_name = "IFACE")]
    interface: Option<String>,

    /// With --interface: stop after this many packets.
    #[arg(long)]
    count: Option<u64>,

    /// With --interface: stop after this many seconds.
    #[arg(long)]
    seconds: Option<f64>,

    /// With --interface: bytes kept per packet.
    #[arg(long, default_value_t = 65_535)]
    snaplen: u32,

    /// With --interface: do not put the interface in promiscuous mode.
    #[arg(long)]
    no_promisc: bool,

    /// Load an L7-filter signature set (a directory of `.pat` files, or the root of an l7-protocols set).
    #[arg(long, value_name = "DIR")]
    signatures: Option<PathBuf>,

    /// Snort/Suricata rule files.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    rules: Vec<PathBuf>,

    /// Content patterns, one hex string per line (`content-10k.hex`), each loaded as a rule.
    #[arg(long, value_name = "FILE")]
    content_hex: Option<PathBuf>,

    /// Write EVE JSON here (`-` for standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Print the summary (the default when no -o is given); to standard error when EVE goes to standard output.
    #[arg(long)]
    summary: bool,

    /// Worker threads (the parallel runtime); without it one thread streams the input.
    #[arg(long)]
    threads: Option<usize>,

    /// Scheduler for --threads: dh, ph, lfb, l7aff, flow, rss, lfb-affinity.
    #[arg(long, default_value = "lfb")]
    scheduler: String,

    /// Write one cost record per packet (binary, or CSV if the name ends in .csv; see the inspect crate's `cost`).
    #[arg(long, value_name = "FILE")]
    cost_out: Option<PathBuf>,

    /// Do not emit application events (http, tls, dns, ...); flows and alerts still are.
    #[arg(long)]
    no_app_events: bool,

    /// Most flows tracked at once.
    #[arg(long)]
    max_flows: Option<usize>,

    /// Packets per batch with --threads.
    #[arg(long, default_value_t = 65_536)]
    batch: usize,
}

enum Sink {
    None,
    Eve(EveWriter<Box<dyn Write>>),
}

impl Sink {
    fn write(&mut self, events: &[Event]) -> anyhow::Result<()> {
        if let Sink::Eve(w) = self {
            w.write_all(events).context("writing EVE output")?;
        }
        Ok(())
    }
}

struct CostSink(Option<CostWriter<BufWriter<File>>>);

impl CostSink {
    fn write(&mut self, recs: &[CostRecord]) -> anyhow::Result<()> {
        if let Some(w) = &mut self.0 {
            for r in recs {
                w.write(r).context("writing cost records")?;
            }
        }
        Ok(())
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let defaults = EngineConfig::default();
    let cfg = EngineConfig {
        app_events: !args.no_app_events,
        cost: flowbundle_inspect::CostConfig {
            per_packet_records: args.cost_out.is_some(),
            ..defaults.cost
        },
        max_flows: args.max_flows.unwrap_or(defaults.max_flows),
        ..defaults
    };
    let mut info = RunInfo {
        inputs: match &args.interface {
            Some(iface) => vec![format!("live:{iface}")],
            None => args.files.iter().map(|p| p.display().to_string()).collect(),
        },
        ..RunInfo::default()
    };
    // Open the interface before loading rule sets, so a build without live capture (or a missing permission)
    // says so at once.
    let mut live = match &args.interface {
        Some(_) if args.threads.is_some_and(|n| n > 0) => {
            bail!(
                "--interface runs single-threaded (the parallel runtime takes batches of a preloaded input)"
            )
        }
        Some(iface) => Some(
            LiveCapture::open(iface, args.snaplen, !args.no_promisc)
                .with_context(|| format!("opening interface {iface}"))?,
        ),
        None => None,
    };
    if args.interface.is_none()
        && (args.count.is_some()
            || args.seconds.is_some()
            || args.no_promisc
            || args.snaplen != 65_535)
    {
        bail!(
            "--count, --seconds, --snaplen and --no-promisc apply to live capture (--interface IFACE)"
        );
    }
    if let Some(s) = args.seconds
        && !(s.is_finite() && s > 0.0)
    {
        bail!("--seconds must be a positive number of seconds, not {s}");
    }

    let signatures = match &args.signatures {
        Some(dir) => {
            let (set, report) = SignatureSet::load_dir(dir, &SigOptions::default())
                .with_context(|| format!("loading signatures from {}", dir.display()))?;
            eprintln!(
                "signatures: {} loaded, {} rejected from {}",
                set.len(),
                report.rejected.len(),
                dir.display()
            );
            info.signatures = Some((set.len(), report.rejected.len()));
            Some(set)
        }
        None => None,
    };
    let rules = if !args.rules.is_empty() || args.content_hex.is_some() {
        if !args.rules.is_empty() && args.content_hex.is_some() {
            bail!("--rules and --content-hex cannot be combined (one rule set per run)");
        }
        let (set, report) = match &args.content_hex {
            Some(p) => {
                RuleSet::from_content_hex(p).with_context(|| format!("loading {}", p.display()))?
            }
            None => RuleSet::load_files(&args.rules).context("loading rules")?,
        };
        eprintln!("{}", report.summary());
        let mut reasons: Vec<(String, usize)> = report.skip_reasons.clone().into_iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        info.rules = Some(RulesInfo {
            loaded: report.loaded,
            skipped: report.skipped,
            errors: report.errors_total,
            skip_reasons: reasons,
        });
        info.rule_names = set
            .rules()
            .iter()
            .map(|r| (r.sid, r.msg.to_string()))
            .collect();
        Some(set)
    } else {
        None
    };

    let eve_to_stdout = args.output.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let mut sink = match &args.output {
        None => Sink::None,
        Some(p) if p.as_os_str() == "-" => Sink::Eve(EveWriter::new(Box::new(BufWriter::new(
            std::io::stdout().lock(),
        )))),
        Some(p) => {
            let f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
            Sink::Eve(EveWriter::new(Box::new(BufWriter::with_capacity(
                1 << 16,
                f,
            ))))
        }
    };
    let mut costs = CostSink(match &args.cost_out {
        Some(p) => {
            let csv = p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
            let f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
            Some(CostWriter::new(BufWriter::new(f), csv)?)
        }
        None => None,
    });

    let mut engine = Engine::new(cfg, signatures, rules);
    let mut pre = Prestage::new(engine.config());
    let start = Instant::now();
    let finished = match args.threads {
        None | Some(0) => {
            let mut ctx = engine.new_ctx();
            let mut events = Vec::new();
            let mut recs = Vec::new();
            let mut num = 0u64;
            if let Some(cap) = live.as_mut() {
                num = inspect_live(
                    cap,
                    &args,
                    &mut engine,
                    &mut ctx,
                    &mut pre,
                    &mut sink,
                    &mut costs,
                )?;
            }
            for path in &args.files {
                let mut reader = CaptureReader::open(path)
                    .with_context(|| format!("opening {}", path.display()))?;
                loop {
                    let rec = match reader.next_packet() {
                        Ok(Some(r)) => r,
                        Ok(None) => break,
                        Err(e) => {
                            eprintln!("{}: {e} (stopping this input here)", path.display());
                            break;
                        }
                    };
                    engine.process_serial(&mut ctx, &mut pre, num, &rec);
                    num += 1;
                    if ctx.pending_events() >= 1024 {
                        ctx.take_events(&mut events);
                        sink.write(&events)?;
                        events.clear();
                    }
                    if num.is_multiple_of(4096) {
                        ctx.take_cost_records(&mut recs);
                        costs.write(&recs)?;
                        recs.clear();
                    }
                }
            }
            info.packets_read = num;
            ctx.take_events(&mut events);
            sink.write(&events)?;
            engine.finish([ctx])
        }
        Some(n) => {
            let sched = flowbundle_scheduler::build(&args.scheduler, n, &SchedOptions::default())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            info.threads = Some((n, args.scheduler.clone()));
            let batch = args.batch.max(1);
            let mut ctxs: Vec<WorkerCtx> = Vec::new();
            let mut num = 0u64;
            let mut files = args.files.iter();
            let mut reader: Option<(CaptureReader, &PathBuf)> = None;
            let mut events = Vec::new();
            let mut recs = Vec::new();
            loop {
                // Fill one batch (copying: streaming records borrow the reader's buffer).
                let mut b = TraceBuilder::with_capacity(batch, batch * 256);
                while b.len() < batch {
                    if reader.is_none() {
                        match files.next() {
                            Some(p) => {
                                let r = CaptureReader::open(p)
                                    .with_context(|| format!("opening {}", p.display()))?;
                                reader = Some((r, p));
                            }
                            None => break,
                        }
                    }
                    let Some((r, p)) = reader.as_mut() else { break };
                    match r.next_packet() {
                        Ok(Some(rec)) => {
                            b.push_record(&rec);
                        }
                        Ok(None) => reader = None,
                        Err(e) => {
                            eprintln!("{}: {e} (stopping this input here)", p.display());
                            reader = None;
                        }
                    }
                }
                if b.is_empty() {
                    break;
                }
                let trace = b.build();
                let prepared = pre.run(&trace);
                let source = PreparedTrace {
                    trace: &trace,
                    prepared: &prepared,
                    number_base: Some(num),
                };
                num += trace.len() as u64;
                let workload = InspectWorkload::new(&engine, sched.shape(), &source)
                    .with_contexts(std::mem::take(&mut ctxs));
                let cfg = RunConfig {
                    records: false,
                    ..RunConfig::default()
                };
                let report = run_workers(sched.as_ref(), &workload, &prepared.descs, &cfg)
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                let mut locals = report.locals;
                if let Some(first) = locals.first_mut() {
                    // SAFETY: `run_workers` joined every worker; this thread alone touches the engine now.
                    unsafe {
                        workload.finish_deferred(first, &prepared.descs, |d| sched.bundle(d))
                    };
                }
                for c in &mut locals {
                    c.take_events(&mut events);
                    c.take_cost_records(&mut recs);
                }
                sort_events(&mut events);
                sink.write(&events)?;
                events.clear();
                costs.write(&recs)?;
                recs.clear();
                ctxs = locals;
            }
            info.packets_read = num;
            engine.finish(ctxs)
        }
    };
    info.elapsed = Some(start.elapsed());
    sink.write(&finished.events)?;
    costs.write(&finished.cost_records)?;
    if let Sink::Eve(w) = sink {
        w.into_inner().context("flushing EVE output")?;
    }
    if let Some(w) = costs.0 {
        w.finish().context("flushing cost records")?;
    }
    if args.summary || args.output.is_none() {
        let prestage = pre.stats();
        let text = Summary {
            finished: &finished,
            prestage: Some(&prestage),
            info: &info,
        }
        .to_string();
        if eve_to_stdout {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
    Ok(())
}

/// The live loop of `inspect --interface`: packets from the interface through the pre-scheduling stage and the
/// engine, one at a time, as the file loop does, until Ctrl-C, `--count` or `--seconds`. Returns the packets read.
///
/// Ctrl-C only sets a flag: the loop notices it within the capture's read timeout (100 ms), so the flows still open
/// are flushed and the summary is written as for a file. A second Ctrl-C is not special-cased; the flag is simply
/// set again.
fn inspect_live(
    cap: &mut LiveCapture,
    args: &Args,
    engine: &mut Engine,
    ctx: &mut WorkerCtx,
    pre: &mut Prestage,
    sink: &mut Sink,
    costs: &mut CostSink,
) -> anyhow::Result<u64> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed))
            .context("installing the Ctrl-C handler")?;
    }
    let deadline = args
        .seconds
        .map(|s| Instant::now() + std::time::Duration::from_secs_f64(s));
    let limit = args.count.unwrap_or(u64::MAX);
    eprintln!(
        "capturing on {} (link type {}); Ctrl-C to stop",
        args.interface.as_deref().unwrap_or("?"),
        cap.link_type()
    );
    let (mut events, mut recs) = (Vec::new(), Vec::new());
    let mut num = 0u64;
    while num < limit
        && !stop.load(Ordering::Relaxed)
        && deadline.is_none_or(|d| Instant::now() < d)
    {
        let rec = match cap.next_packet() {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                eprintln!("capture error: {e} (stopping)");
                break;
            }
        };
        engine.process_serial(ctx, pre, num, &rec);
        num += 1;
        if ctx.pending_events() >= 64 {
            ctx.take_events(&mut events);
            sink.write(&events)?;
            events.clear();
        }
        if num.is_multiple_of(4096) {
            ctx.take_cost_records(&mut recs);
            costs.write(&recs)?;
            recs.clear();
        }
    }
    ctx.take_events(&mut events);
    sink.write(&events)?;
    if let Ok((received, dropped)) = cap.kernel_stats() {
        eprintln!(
            "capture: {num} packets inspected, kernel counted {received} received and {dropped} dropped"
        );
    }
    Ok(num)
}
