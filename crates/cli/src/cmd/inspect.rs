//! `flowbundle inspect`: captures through the engine, EVE JSON out, a summary.
//!
//! With `--threads 1` one thread streams the input: one packet at a time from the reader,
//! through the pre-scheduling stage (defragmentation) and the engine, events written as they are produced. With
//! `--threads N` (N ≥ 2; the default is the machine's cores) the streaming runtime runs it. Capture files under
//! `dh` (the default), `rss` or `lfb`: every worker reads the input itself and inspects its share of a placement all
//! compute alike (`flowbundle_worker::run_each`, `flowbundle_inspect::each`). Otherwise (live capture, standard
//! input, the other policies, `--exec`, `--reader-inspects`, `--workers-read=false`;
//! `flowbundle_worker::run_stream`): a reader thread reads, pre-stages and copies packets into a bounded arena of
//! packet buffers (`--packet-buffers`) and dispatches them through the chosen scheduler to N persistent workers. This
//! thread writes the events as the run goes on, in the single-threaded run's order (see `flowbundle_inspect::stream`).
//! Memory is the flow state plus the arena, whatever the input's length: both loops sweep idle flows out in capture
//! time (`--flow-sweep`, `flowbundle_inspect::sweep`), at the same input positions. With `--stats-interval` both
//! write Suricata `stats` records during the run, in capture time for files.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use flowbundle_ingest::{
    CaptureMethod, CaptureReader, LiveSource, PacketArena, RingConfig, TpacketVersion,
};
use flowbundle_inspect::cost::CostWriter;
use flowbundle_inspect::rules::ThresholdTable;
use flowbundle_inspect::{
    AlertFilter, ArenaSource, Broadcast, BufferDecodes, DetectVisits, Engine, EngineConfig, Event,
    EventMerge, Inline, InspectWorkload, LiveReader, Prestage, Renderer, Scripts, StagedInspect,
    StatsBoard, StreamOrder, StreamReader, WorkerCtx,
};
use flowbundle_run::progress::Progress;
use flowbundle_run::read_end::{note_read_end, unsupported_link_types};
use flowbundle_run::sink::{CostSink, PeriodicStats, Sink, wall_clock_ns, write_rules_profile};
use flowbundle_scheduler::SchedOptions;
use flowbundle_sinks::{CaptureCounters, EveOptions, EveWriter, RunInfo, StatsRecord, Summary};
use flowbundle_worker::{Crew, StreamConfig, run_stream, run_stream_staged};

/// Inspect captures: connections, protocols, content rules; EVE JSON out.
///
/// Examples:
///   flowbundle inspect capture.pcap --summary
///   flowbundle inspect a.pcap b.pcapng -o eve.json --rules local.rules --signatures shared/data/l7-protocols
///   flowbundle inspect big.pcap --threads 2 --scheduler lfb -o eve.json
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Capture files (pcap, pcapng, gzip; `-` for standard input), inspected one after the other as one input.
    #[arg(
        value_name = "FILE",
        required_unless_present_any = ["interface", "inline", "read", "list_keywords"],
        conflicts_with_all = ["interface", "inline"]
    )]
    files: Vec<PathBuf>,

    /// A capture file to read, as tcpdump, tshark, Suricata and Zeek take it (repeatable; read before the FILE
    /// arguments).
    #[arg(short = 'r', long, value_name = "FILE", conflicts_with_all = ["interface", "inline"])]
    read: Vec<PathBuf>,

    /// Print the rule keywords the rules engine knows (name, aliases, kind, buffer) and exit.
    #[arg(long)]
    list_keywords: bool,

    /// Capture live from this network interface instead of files (root or CAP_NET_RAW). Runs until Ctrl-C or
    /// SIGTERM, --count or --seconds, then drains the queues, flushes the flows and writes the summary.
    #[arg(short = 'i', long, value_name = "IFACE", conflicts_with = "inline")]
    interface: Option<String>,

    /// Inline IPS between two interfaces (AF_PACKET, root or CAP_NET_RAW): what comes in on one is sent out of the
    /// other after inspection, except what a `drop` rule dropped (a packet rule's match: that packet; an IP-only,
    /// stream or application-layer match: the rest of the flow, as Suricata scopes rule actions); the summary
    /// reports the receive-to-send latency. Each flow's packets leave in the order they came. Stops as
    /// --interface does. Implies IPS mode (see --simulate-ips).
    #[arg(long, value_name = "IF1:IF2")]
    inline: Option<String>,

    /// IPS mode on any input, as Suricata's option: alerts of `drop` and `reject` rules are reported `blocked`
    /// (EVE `alert.action`). Drops and passes take effect in either mode (flow records carry `flow.action`).
    #[arg(long)]
    simulate_ips: bool,

    /// With --interface: how to capture: `afpacket` (AF_PACKET rings, Linux, the default) or `pcap` (libpcap, a
    /// build with `--features live`).
    #[arg(long, value_name = "METHOD", default_value = "afpacket")]
    capture: flowbundle_ingest::CaptureMethod,

    /// With --capture afpacket: blocks per ring.
    #[arg(long, value_name = "N")]
    ring_blocks: Option<u32>,

    /// With --capture afpacket: bytes per ring block (a multiple of 4096).
    #[arg(long, value_name = "BYTES")]
    block_size: Option<u32>,

    /// With --capture afpacket and TPACKET_V3: milliseconds after which the kernel hands over a block that is not
    /// full.
    #[arg(long, value_name = "MS")]
    block_timeout_ms: Option<u32>,

    /// With --capture afpacket: the ring layout. `3`: TPACKET_V3 blocks, one wake-up per block, but a frame waits in
    /// its block until the block is full or --block-timeout-ms passes (the default for --interface); `2`:
    /// TPACKET_V2 frames, each handed over as soon as it arrives (the default for --inline: Suricata's documentation
    /// advises against TPACKET_V3 in IPS mode for that latency).
    #[arg(long, value_name = "2|3")]
    tpacket: Option<flowbundle_ingest::TpacketVersion>,

    /// With --capture afpacket and --threads N: one ring per worker in a PACKET_FANOUT group and the kernel spreads
    /// the packets (`hash`: both directions of a flow to one worker, Suricata's `workers` mode; `cpu`, `qm`, `lb`);
    /// the worker of a packet is the ring it came from, and --scheduler does not apply. Without it one ring feeds the
    /// dispatcher, and the scheduler spreads.
    #[arg(long, value_name = "MODE")]
    fanout: Option<flowbundle_ingest::FanoutMode>,

    /// With --interface or --inline and --threads N ≥ 2: when every packet buffer is in use, `wait` (the kernel's
    /// ring is the queue; what overflows it is counted in capture.kernel_drops), `drop` (counted as queue full;
    /// inline: fail-closed) or, inline only, `forward` (sent on uninspected, counted: fail-open).
    #[arg(long, value_name = "wait|drop|forward", default_value = "wait", value_parser = parse_on_full)]
    queue_full: flowbundle_inspect::OnFull,

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

    /// A Snort/Suricata rule file, or a directory of them (its `*.rules` files in name order, as ET Open ships);
    /// repeat the option for more.
    #[arg(long, value_name = "FILE|DIR")]
    rules: Vec<PathBuf>,

    #[command(flatten)]
    config: super::config::ConfigArgs,

    /// Suricata's classification.config: each `classtype`'s EVE `alert.category` (description) and `alert.severity`
    /// (priority; a rule's `priority` overrides it), added over the built-in standard table. Default: the
    /// `classification.config` of the first --rules directory that holds one (ET Open ships one).
    #[arg(long, value_name = "FILE")]
    classification_file: Option<PathBuf>,

    /// Suricata's threshold.config: `threshold`/`event_filter` lines (replacing a rule's own threshold, or for
    /// rules without one with gen_id 0 or sig_id 0) and `suppress` lines (all of a rule's alerts, or those whose
    /// source, destination or either address is in an address expression), and `rate_filter` lines (a rule's action
    /// becomes `new_action` after `count` matches in `seconds`, for `timeout` seconds).
    #[arg(long, value_name = "FILE")]
    threshold_file: Option<PathBuf>,

    /// Write every skipped or unreadable rule here, as CSV (file, line, sid, outcome, reason).
    #[arg(long, value_name = "FILE")]
    rules_report: Option<PathBuf>,

    /// Time every rule evaluation and write a rules profile here (standard error without a file name): per
    /// inspection point and rule group (calls, bytes, prefilter time, candidates, evaluation time) and the most
    /// expensive rules (checks, matches, time), as Suricata's rule profiling. Matching is slower while profiling.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    rules_profile: Option<PathBuf>,

    /// Content patterns, one hex string per line (`content-10k.hex`), each loaded as a rule.
    #[arg(long, value_name = "FILE")]
    content_hex: Option<PathBuf>,

    /// Write EVE JSON here (`-` for standard output; a Unix socket's path with --eve-filetype unix_dgram or
    /// unix_stream). A live run appends to a file and reopens it on SIGHUP; an offline run writes it whole.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,

    #[command(flatten)]
    eve: super::eve_output::EveArgs,

    /// EVE flow records also carry a `flowbundle` object (the label in nDPI's spelling, how and at which packet it
    /// was decided, reassembly gaps). Outside Suricata's schema, which refuses unknown keys: off by default.
    #[arg(long)]
    eve_extra: bool,

    /// Inspect each input file on its own (flow state and timeouts start afresh, one summary per file) instead of
    /// as one time line; the EVE output stays one file, flow ids unique across it.
    #[arg(long)]
    per_file: bool,

    /// Print the summary (the default when no -o is given); to standard error when EVE goes to standard output.
    #[arg(long)]
    summary: bool,

    /// Worker threads of the streaming runtime (plus a reader thread where one dispatches: see --scheduler); 1 runs
    /// the single-threaded loop, 0 uses every core. Default: the machine's cores.
    #[arg(long)]
    threads: Option<usize>,

    /// Scheduler of the streaming runtime (--threads 2 or more); an unknown name lists the known ones.
    /// Default: dh for capture files; lfb where a reader thread dispatches (live capture, standard input or a pipe,
    /// --exec, --reader-inspects, --workers-read=false). Under dh, rss and lfb every worker reads capture files
    /// itself (see --workers-read); the other policies have a reader thread dispatching.
    #[arg(long)]
    scheduler: Option<String>,

    /// Execution model of the streaming runtime (--threads 2 or more): `rtc` (run-to-completion: each worker does
    /// all of a packet's work), `pipeline` (a flow group — connection table, reassembly, identification — hands every
    /// packet to a detection group that runs the rules, each group under its own --scheduler), `multilayer` (the same
    /// groups, each owning its state layer; a packet visits the detection group only when its flow stage left rules
    /// work or events for it). The output is the same under every model. Default: rtc.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(flowbundle_types::Exec::ALL.map(flowbundle_types::Exec::name)))]
    exec: Option<String>,

    /// With --exec pipeline or multilayer: workers of the detection group; the others run the flow stage.
    /// Default: half of --threads.
    #[arg(long, value_name = "N")]
    detect_workers: Option<usize>,

    /// Write one cost record per packet (its cycles and stage times): binary, or CSV if the name ends in .csv.
    #[arg(long, value_name = "FILE")]
    cost_out: Option<PathBuf>,

    /// Add the cost block to the summary: cycles per packet, by stage and by position in flow, the costliest
    /// connections (wall-clock TSC cycles: read them on a quiet machine).
    #[arg(long)]
    cost: bool,

    /// Do not emit application events (http, tls, dns, ...); flows and alerts still are.
    #[arg(long)]
    no_app_events: bool,

    /// Most flows tracked at once, all workers together (default 262,144). A flow costs about 600 bytes before its
    /// protocol state; measured, an open HTTP connection with pipelined requests held 3.7 KB, so the default cap
    /// filled with such flows is about 1 GB: lower it to bound memory.
    #[arg(long)]
    max_flows: Option<usize>,

    /// Capture-time seconds between sweeps of idle flows (flows whose timeout passed are ended in every shard, so
    /// memory stays bounded on a long input; a sweep also waits for at least 16,384 packets). 0 turns sweeps off:
    /// idle flows then end only when a packet of theirs comes, or at the end.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    flow_sweep: f64,

    /// With --threads N ≥ 2: packet buffers between the reader and the workers (the bound on packets in flight;
    /// memory is about this many times the largest packet; how far event output lags behind is --reorder-window's).
    /// The default keeps the buffers within a core's L2 cache (512 × 2 KiB): with 4,096 the reader's copy into them
    /// missed the cache for most packets and the run took about 1.5× the CPU.
    #[arg(long, default_value_t = DEFAULT_PACKET_BUFFERS)]
    packet_buffers: usize,

    /// With --threads N ≥ 2 reading files: the most packets the reader reads ahead of the oldest packet still being
    /// inspected; at the limit it waits for that packet. EVE output leaves in input order, so everything read after
    /// the oldest packet in flight (its events, and the capture buffers the packets were read into) waits for it:
    /// the window bounds that memory whatever the input's length, and a worker that lags behind slows the reader
    /// instead of the run growing. Never drops a packet. Live capture does not wait (its ring would overflow).
    #[arg(long, value_name = "PACKETS", default_value_t = flowbundle_inspect::stream::DEFAULT_WINDOW)]
    reorder_window: u64,

    /// With --threads N ≥ 2 reading files: the reader is one of the N workers (N threads instead of N workers and a
    /// reader thread). It reads and dispatches, and inspects its share whenever it would otherwise wait for the
    /// others (for a free packet buffer or a place in a queue). Measured on 2 cores: no faster under `lfb`, slower
    /// under `dh` (the reader's static share of the flows on top of reading), hence not the default. Live capture
    /// always has a reader of its own (it must not stop reading to inspect).
    #[arg(long)]
    reader_inspects: bool,

    /// With --threads N ≥ 2 reading files: no reader thread; every worker reads the input itself and inspects only
    /// the packets placed on it, skipping the rest, so nothing but the output crosses between cores. The placement
    /// is one every worker computes alike from the input: under `dh` the flow's CRC-16 modulo N; under `rss` and
    /// `lfb` an indirection table of the flows' CRC-16 (128 and 1,024 buckets) that every worker rebalances alike at
    /// each sweep of idle flows, from the bytes each bucket had since the last, when the loads differ by more than
    /// a tenth. The default for files under `dh`, `rss` and `lfb` when nothing needs a reader thread (standard
    /// input or a pipe, --exec, --reader-inspects): measured faster than a reader thread on 2 cores under all three
    /// and on 16 under `dh`, the output the same. `--workers-read=false` keeps the reader thread (and lfb as the
    /// default scheduler). A worker waits when it is 64 times --packet-buffers packets ahead of the slowest (what
    /// bounds the output held back for ordering; 32,768 packets by default, about two sweep periods: measured, 4,096
    /// made the workers wait for each other through local imbalances and took 8–10% longer).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    workers_read: Option<bool>,

    /// With an EVE output: end it with Suricata's `stats` record (event_type "stats": capture, decoder, defrag,
    /// flow, tcp and detect counters of the whole run, the summary's own counters).
    #[arg(long)]
    eve_stats: bool,

    /// With --eve-stats: also write a `stats` record every SECS seconds while the run goes on. For files the seconds
    /// are capture time (the packets' timestamps), so a file gives the records its traffic spans however fast it is
    /// read; live capture's packets carry the wall clock. With --threads N ≥ 2 each record sums the workers' counters
    /// as they last published them (at most 512 packets behind each worker); the final record is exact.
    #[arg(long, value_name = "SECS", requires = "eve_stats")]
    stats_interval: Option<f64>,

    /// With --eve-stats: add each worker's counters (Suricata's `threads` section, `W#01`, ...).
    #[arg(long, requires = "eve_stats")]
    eve_stats_threads: bool,
}

const DEFAULT_PACKET_BUFFERS: usize = 512;

fn parse_on_full(s: &str) -> Result<flowbundle_inspect::OnFull, String> {
    match s {
        "wait" => Ok(flowbundle_inspect::OnFull::Wait),
        "drop" => Ok(flowbundle_inspect::OnFull::Drop),
        "forward" => Ok(flowbundle_inspect::OnFull::Forward),
        other => Err(format!("{other:?}: one of wait, drop, forward")),
    }
}

pub fn run(mut args: Args) -> anyhow::Result<()> {
    if args.list_keywords {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        for k in flowbundle_inspect::rules::keyword::KEYWORDS {
            // A closed pipe (`| head`) ends the listing quietly.
            let line = writeln!(
                out,
                "{:<24} {:<16} {:<20} {}",
                k.name,
                k.kind.as_str(),
                k.buffer().unwrap_or("-"),
                k.aliases.join(",")
            );
            if line.is_err() {
                break;
            }
        }
        return Ok(());
    }
    // `-r FILE` first, then the positional files.
    let mut files = std::mem::take(&mut args.read);
    files.append(&mut args.files);
    args.files = files;
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        bail!("standard input (`-`) can be read only once");
    }
    if args.reorder_window == 0 {
        bail!("--reorder-window must be at least 1");
    }
    if args.packet_buffers == 0 {
        bail!("--packet-buffers must be at least 1");
    }
    if args.max_flows == Some(0) {
        bail!("--max-flows must be at least 1");
    }
    if let Some(s) = args.stats_interval
        && !(s.is_finite() && s > 0.0)
    {
        bail!("--stats-interval must be a positive number of seconds, not {s}");
    }
    if !(args.flow_sweep.is_finite() && args.flow_sweep >= 0.0) {
        bail!(
            "--flow-sweep must be a number of seconds, 0 or more, not {}",
            args.flow_sweep
        );
    }
    // The configuration (file, --set, --var): engine settings, and rule files and the EVE file where the command
    // line names none.
    let conf = args.config.load()?;
    let mut defaults = EngineConfig::default();
    conf.apply(&mut defaults);
    let cfg = EngineConfig {
        app_events: !args.no_app_events,
        cost: flowbundle_inspect::CostConfig {
            per_packet_records: args.cost_out.is_some(),
            ..defaults.cost
        },
        max_flows: args.max_flows.unwrap_or(defaults.max_flows),
        sweep: flowbundle_inspect::SweepConfig {
            every_ns: (args.flow_sweep * 1e9) as u64,
            ..defaults.sweep
        },
        rules_profile: args.rules_profile.is_some(),
        ips: args.simulate_ips || args.inline.is_some(),
        ..defaults
    };
    if args.rules.is_empty() && args.content_hex.is_none() && !conf.rule_files.is_empty() {
        eprintln!(
            "rules: {} file(s) from rule-files ({})",
            conf.rule_files.len(),
            conf.rule_files_origin.as_deref().unwrap_or("")
        );
        args.rules = conf.rule_files.clone();
    }
    if args.output.is_none()
        && let Some((eve, from)) = &conf.eve_log
    {
        eprintln!("EVE to {} (eve-log, {from})", eve.display());
        args.output = Some(eve.clone());
    }
    let mut info = RunInfo {
        inputs: match (&args.interface, &args.inline) {
            (Some(iface), _) => vec![format!("live:{iface}")],
            (None, Some(pair)) => vec![format!("inline:{pair}")],
            (None, None) => args.files.iter().map(|p| p.display().to_string()).collect(),
        },
        cost: args.cost,
        ..RunInfo::default()
    };
    let live_run = args.interface.is_some() || args.inline.is_some();
    if !live_run
        && (args.count.is_some()
            || args.seconds.is_some()
            || args.no_promisc
            || args.snaplen != 65_535
            || args.fanout.is_some()
            || args.ring_blocks.is_some()
            || args.block_size.is_some()
            || args.block_timeout_ms.is_some()
            || args.tpacket.is_some())
    {
        bail!(
            "--count, --seconds, --snaplen, --no-promisc, --fanout and the ring options apply to live capture \
             (--interface IFACE)"
        );
    }
    let threads = match (args.threads, &args.interface) {
        (Some(n), _) => super::thread_count(n),
        (None, _) => super::cores(),
    };
    if threads > 1 {
        // Large blocks from mappings of their own all along, before the run allocates: with glibc's moving threshold
        // each thread's arena came to keep large blocks, and peak RSS grew with the input's length (see
        // `flowbundle_worker::fixed_mmap_threshold`). One thread has one arena, which kept nothing it would not reuse
        // (peak RSS 10x / 1x 0.99-1.01), and its large blocks' mappings would cost it page faults for nothing.
        flowbundle_worker::fixed_mmap_threshold();
    }
    // A live run takes SIGHUP (reload the rules, reopen the outputs) and SIGUSR2 (reload the rules) from the start:
    // left at their default action they would end the process.
    let signals = match live_run {
        true => {
            Some(flowbundle_inspect::signals().context("installing the SIGHUP/SIGUSR2 handlers")?)
        }
        false => None,
    };
    let exec = staged_exec(&args, threads)?;
    // Open the interface before loading rule sets, so a build without live capture (or a missing permission)
    // says so at once.
    let mut live = match &args.interface {
        Some(iface) => Some(open_live(&args, iface, threads)?),
        None => None,
    };
    if args.queue_full == flowbundle_inspect::OnFull::Forward && args.inline.is_none() {
        bail!("--queue-full forward (fail-open) applies to --inline");
    }
    let inline = match &args.inline {
        Some(pair) => {
            let (source, inline) = open_inline(&args, pair)?;
            live = Some(source);
            Some(inline)
        }
        None => None,
    };
    if let Some(s) = args.seconds
        && !(s.is_finite() && s > 0.0)
    {
        bail!("--seconds must be a positive number of seconds, not {s}");
    }

    if args.rules.is_empty()
        && (args.threshold_file.is_some() || args.classification_file.is_some())
    {
        bail!("--threshold-file and --classification-file apply to --rules");
    }
    let mut sources = flowbundle_run::reload::DetectionSources::new(
        args.signatures.clone(),
        args.rules.clone(),
        args.content_hex.clone(),
        args.classification_file.clone(),
        args.threshold_file.clone(),
        &conf,
    );
    sources.rules_report = args.rules_report.clone();
    sources.inputs = args
        .files
        .iter()
        .chain(&args.rules)
        .chain(&args.content_hex)
        .chain(&args.classification_file)
        .chain(&args.threshold_file)
        .cloned()
        .collect();
    // The loaded sets live until the process ends, whichever way `run` returns: freeing them is left to the
    // system. Their teardown frees every compiled expression and rule one by one (582 M instructions with the
    // community rules, after the run and its output are complete, in the user's wall time); nothing is written
    // or flushed by it.
    let loaded = std::mem::ManuallyDrop::new(sources.load()?);
    info.signatures = loaded.signatures_info;
    info.rules = loaded.rules_info.clone();
    info.rule_names = loaded.rule_names.clone();
    let threshold_config = loaded.threshold.clone();
    let (signatures, rules) = (loaded.signatures.clone(), loaded.rules.clone());
    let mut reloader =
        signals.map(|sig| flowbundle_run::reload::Reloader::new(sources, &loaded, sig));
    if let Some(r) = &reloader {
        info.reloads = Some(r.info);
    }

    // Every input must open as a capture before anything runs, whatever the thread count: a missing file, an empty
    // one or one that is not a capture is an error, not an empty input (the parallel runs would otherwise count it
    // and go on, the serial one stop at it after inspecting the inputs before it), and no output is left behind.
    // Reading the header costs one read per input; standard input and pipes give the bytes read back to the run
    // (`CaptureReader::probe`).
    for f in &args.files {
        CaptureReader::probe(f).with_context(|| format!("cannot open {}", f.display()))?;
    }
    let eve_to_stdout = args.output.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let eve_opts = EveOptions {
        extra: args.eve_extra,
        ..EveOptions::default()
    };
    // Every file this run reads: no output may be one of them.
    let inputs: Vec<&std::path::Path> = args
        .files
        .iter()
        .chain(&args.rules)
        .chain(&args.content_hex)
        .chain(&args.classification_file)
        .chain(&args.threshold_file)
        .map(PathBuf::as_path)
        .collect();
    let target = args.eve.target(&conf, args.output.as_deref(), live_run)?;
    let waits = args.eve.waits(&conf)?;
    let eve_out = match (target, &args.output) {
        (Some(t), _) => {
            if let flowbundle_sinks::Target::Regular(p) = &t {
                super::check_output(p, &inputs)?;
            }
            let what = t.to_string();
            Some(super::Output::Eve(
                flowbundle_sinks::EveOutput::open_with(t, waits)
                    .map_err(|e| anyhow::anyhow!("EVE output {what}: {e}"))?,
            ))
        }
        (None, Some(p)) => Some(super::Output::open(p, &inputs)?),
        (None, None) => None,
    };
    if eve_out.is_none() && args.eve_stats {
        bail!("--eve-stats needs an EVE output (-o FILE, or --eve-filetype redis)");
    }
    let mut sink = Sink {
        eve: eve_out.map(|o| EveWriter::with_options(o, eve_opts)),
        filter: None,
        retired_filters: Vec::new(),
        reloaded_rules: None,
        signals,
        hangups_seen: 0,
        last_flush: Instant::now(),
        ips: cfg.ips,
    };
    let mut costs = CostSink(match &args.cost_out {
        Some(p) => {
            let csv = p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
            Some(CostWriter::new(super::Output::open(p, &inputs)?, csv)?)
        }
        None => None,
    });

    if threads == 1 && args.scheduler.is_some() {
        eprintln!("warning: --scheduler has no effect on a single-threaded run (--threads 1)");
    }

    if threads == 1 && args.reorder_window != flowbundle_inspect::stream::DEFAULT_WINDOW {
        eprintln!("warning: --reorder-window has no effect on a single-threaded run (--threads 1)");
    }

    if threads == 1 && args.packet_buffers != DEFAULT_PACKET_BUFFERS {
        eprintln!("warning: --packet-buffers has no effect on a single-threaded run (--threads 1)");
    }
    // Every worker reading the inputs reads each once per worker: only regular files can be (not standard input,
    // nor a pipe).
    let rereadable = args
        .files
        .iter()
        .all(|f| std::fs::metadata(f).is_ok_and(|m| m.is_file()));
    if args.workers_read == Some(true) {
        if threads > 1 && !rereadable {
            bail!(
                "--workers-read reads every input once per worker: standard input and pipes can be read only once"
            );
        }
        if args.reader_inspects {
            bail!(
                "--workers-read and --reader-inspects exclude each other: with --workers-read there is no reader"
            );
        }
        if args.exec.is_some() || args.interface.is_some() || args.inline.is_some() {
            bail!(
                "--workers-read reads files, run to completion (no --exec, no --interface or --inline)"
            );
        }
        let policy = args.scheduler.as_deref().unwrap_or("lfb");
        if threads > 1
            && flowbundle_scheduler::canonical(policy)
                .and_then(flowbundle_inspect::Placement::for_policy)
                .is_none()
        {
            bail!(
                "--workers-read needs --scheduler dh, rss or lfb (a placement every worker can compute from the input \
                 alone; {policy} decides as the run goes)"
            );
        }
    }
    if threads == 1 && args.workers_read.is_some() {
        eprintln!("warning: --workers-read has no effect on a single-threaded run (--threads 1)");
    }
    // Whatever needs a reader thread: live capture, standard input or a pipe (read once), --exec (the staged groups
    // are fed by a dispatcher), --reader-inspects (the reader is a worker).
    let needs_reader = !rereadable
        || args.reader_inspects
        || args.exec.is_some()
        || args.interface.is_some()
        || args.inline.is_some();
    // The default scheduler for files: dh with every worker reading. Measured with `scripts/bench-inspect-parallel`
    // (2 cores) and `scripts/bench-inspect-scaling` (16 cores; BENCHMARKS.md, "1 to 16 workers on a 16-core
    // machine"): 1.33x the single-threaded loop at 2 threads without rules against lfb's 1.17x, and 1.89x at 16
    // workers where lfb with its reader thread fell to 0.62x (the reader dispatching for every worker is the
    // bottleneck from 4 workers on). Whatever needs a reader thread, and --workers-read=false, keeps lfb.
    if args.scheduler.is_none() && threads > 1 && args.workers_read != Some(false) && !needs_reader
    {
        args.scheduler = Some("dh".to_string());
    }
    // Every worker reads the files under each policy whose placement every worker can compute from the input (dh,
    // rss, lfb) when nothing needs a reader: measured on 2 cores, lfb and rss with every worker reading ran at
    // 1.54-1.80x the single-threaded loop's speed, with a reader thread at 1.03-1.56x (BENCHMARKS.md).
    args.workers_read = Some(
        args.workers_read.unwrap_or(
            !needs_reader
                && flowbundle_scheduler::canonical(args.scheduler.as_deref().unwrap_or("lfb"))
                    .and_then(flowbundle_inspect::Placement::for_policy)
                    .is_some(),
        ),
    );
    if threads == 1 && args.reader_inspects {
        eprintln!(
            "warning: --reader-inspects has no effect on a single-threaded run (--threads 1)"
        );
    }
    if args.summary && args.output.is_none() {
        eprintln!("warning: --summary has no effect without -o: the summary is printed anyway");
    }
    // `--per-file`: each input on its own (flow state, timeouts, summary), its packets numbered on from the previous
    // input's, so that flow ids stay unique in the one EVE output.
    let groups: Vec<&[PathBuf]> = if args.per_file && !args.files.is_empty() {
        args.files.chunks(1).collect()
    } else {
        vec![args.files.as_slice()]
    };
    // Each worker's counters as it left the run (for the stats record's `threads`).
    let mut worker_stats = Vec::new();
    let mut first_packet = 0u64;
    let mut reports = Vec::new();
    for files in groups {
        // Thresholds count afresh with each input under --per-file, as its flows do.
        sink.filter = rules.as_deref().and_then(|r| {
            AlertFilter::with_config(r, &threshold_config, ThresholdTable::default())
                .map(|f| f.ips(cfg.ips))
        });
        let mut engine = Engine::with_shared(cfg.clone(), signatures.clone(), rules.clone());
        if exec.is_some() {
            engine = engine.staged();
        }
        let mut info = RunInfo {
            inputs: if args.per_file {
                files.iter().map(|p| p.display().to_string()).collect()
            } else {
                info.inputs.clone()
            },
            ..info.clone()
        };
        let start = Instant::now();
        let (mut finished, pre) = inspect_inputs(
            &args,
            files,
            threads,
            exec,
            first_packet,
            &mut engine,
            live.as_mut(),
            inline.as_ref(),
            &mut sink,
            &mut costs,
            &mut info,
            &mut worker_stats,
            reloader.as_mut(),
        )?;
        if let Some(r) = reloader.as_mut() {
            r.abandon();
            info.reloads = Some(r.info);
        }
        info.elapsed = Some(start.elapsed());
        first_packet += info.packets_read;
        sink.write(&std::mem::take(&mut finished.events))?;
        for f in sink.retired_filters.drain(..) {
            f.correct(&mut finished);
        }
        if let Some(f) = &sink.filter {
            f.correct(&mut finished);
            let st = f.stats();
            if st.table_full > 0 {
                eprintln!(
                    "warning: threshold table full: {} matches judged without their count",
                    st.table_full
                );
            }
            let xb = f.xbit_stats();
            if xb.table_full > 0 {
                eprintln!("warning: xbits table full: {} bits not set", xb.table_full);
            }
            let tags = f.host_tag_stats();
            if tags.dropped > 0 {
                eprintln!(
                    "warning: host tag table full: {} host tags not set",
                    tags.dropped
                );
            }
            for (name, st) in f.datasets().stats() {
                if st.memcap_full > 0 {
                    eprintln!(
                        "warning: dataset {name} memcap reached: {} values not set",
                        st.memcap_full
                    );
                }
            }
            let uncaptured = f.datasets().uncaptured;
            if uncaptured > 0 {
                eprintln!(
                    "warning: {uncaptured} alerts dropped: a dataset operation's buffer value was not captured"
                );
            }
            if let Err(e) = f.save_datasets() {
                eprintln!("warning: {e}");
            }
        }
        costs.write(&std::mem::take(&mut finished.cost_records))?;
        let prestage = pre.stats();
        // With --per-file, one stats record per input, as one summary per input.
        if args.eve_stats
            && let Some(w) = &mut sink.eve
        {
            let now_ns = wall_clock_ns();
            let mut line = Vec::new();
            flowbundle_sinks::render_stats(
                &mut line,
                &StatsRecord {
                    now_ns,
                    uptime: start.elapsed(),
                    total: &finished.stats,
                    prestage: Some(&prestage),
                    info: &info,
                    workers: if args.eve_stats_threads {
                        &worker_stats
                    } else {
                        &[]
                    },
                },
            );
            w.write_rendered(&line, 1).context("writing EVE output")?;
        }
        worker_stats.clear();
        let unsupported =
            flowbundle_decode::Outcome::Unsupported(flowbundle_decode::Unsupported::LinkType);
        if finished.stats.decode.count(unsupported) > 0 {
            info.link_types = unsupported_link_types(files);
        }
        reports.push((finished, prestage, info));
    }
    let profiled_rules = sink.reloaded_rules.take().or(rules);
    if let Some(w) = sink.eve {
        let lines = w.lines();
        let counters = w
            .into_inner()
            .context("flushing EVE output")?
            .finish_counted()?;
        if let Some(r) = reports.last_mut() {
            r.2.eve_output = counters.clone();
        }
        // EVE in a file and no summary asked for: one line says what was written.
        let written_to = counters
            .map(|c| c.target)
            .or_else(|| args.output.as_deref().map(|p| p.display().to_string()));
        if let Some(out) = written_to.filter(|_| !eve_to_stdout && !args.summary) {
            let packets: u64 = reports.iter().map(|r| r.2.packets_read).sum();
            let flows: u64 = reports.iter().map(|r| r.0.stats.flows_created).sum();
            let secs: f64 = reports
                .iter()
                .filter_map(|r| r.2.elapsed)
                .map(|d| d.as_secs_f64())
                .sum();
            eprintln!(
                "wrote {lines} EVE events to {out}: {packets} packets, {flows} flows in {secs:.2} s"
            );
        }
    }
    if let Some(w) = costs.0 {
        w.finish().context("flushing cost records")?.finish()?;
    }
    if let Some(path) = &args.rules_profile {
        write_rules_profile(path, profiled_rules.as_deref(), &reports)?;
    }
    // A live run's reloaded sets (the last one, and the signatures the reloader holds) are left to the process's
    // end as the loaded ones are.
    std::mem::forget(profiled_rules);
    std::mem::forget(reloader);
    if args.summary || args.output.is_none() {
        for (finished, prestage, info) in &reports {
            let text = Summary {
                finished,
                prestage: Some(prestage),
                info,
            }
            .to_string();
            if eve_to_stdout {
                eprint!("{text}");
            } else {
                out!("{text}");
            }
        }
    }
    // An input that could not be read to its end (a damaged record, a read error) lost what came after the damage:
    // the output covers what was read, and the exit status says the run was not whole.
    let input_errors: u64 = reports.iter().map(|r| r.2.input_errors).sum();
    if input_errors > 0 {
        bail!(
            "{input_errors} input{} could not be read to the end (named above); the output covers the packets \
             before the damage",
            if input_errors == 1 { "" } else { "s" }
        );
    }
    Ok(())
}

/// Inspects `files` (or the live capture) with a fresh `engine`, the packets numbered from `first_packet`; writes
/// the events as they come and returns what the end of the input left (the last events, the counters) and the
/// pre-scheduling stage.
#[allow(clippy::too_many_arguments)]
fn inspect_inputs(
    args: &Args,
    files: &[PathBuf],
    threads: usize,
    exec: Option<StagedExec>,
    first_packet: u64,
    engine: &mut Engine,
    mut live: Option<&mut LiveSource>,
    inline: Option<&Inline>,
    sink: &mut Sink,
    costs: &mut CostSink,
    info: &mut RunInfo,
    worker_stats: &mut Vec<flowbundle_inspect::EngineStats>,
    mut reloader: Option<&mut flowbundle_run::reload::Reloader>,
) -> anyhow::Result<(flowbundle_inspect::Finished, Prestage)> {
    let mut pre = Prestage::new(engine.config());
    let finished = match threads {
        // Inline runs through the streaming runtime whatever the thread count: its workers forward.
        1 if inline.is_none() => {
            let mut ctx = engine.new_ctx();
            let mut events = Vec::new();
            let mut recs = Vec::new();
            let mut num = first_packet;
            if let Some(cap) = live.as_mut() {
                num = inspect_live(
                    cap,
                    args,
                    engine,
                    &mut ctx,
                    &mut pre,
                    sink,
                    costs,
                    reloader.as_deref_mut(),
                    info,
                )?;
                note_capture(cap, args, 0, info);
            }
            let mut timeline = flowbundle_ingest::Timeline::default();
            let mut sweeps = flowbundle_inspect::SweepClock::new(engine.config().sweep);
            let mut periodic = PeriodicStats::new(args.stats_interval);
            let mut latest_ts = 0;
            let progress = Progress::new();
            for path in files {
                let mut reader = CaptureReader::open(path)
                    .with_context(|| format!("cannot open {}", path.display()))?;
                timeline.input(path);
                loop {
                    let rec = match reader.next_packet() {
                        Ok(Some(r)) => r,
                        Ok(None) => break,
                        Err(e) => {
                            eprintln!("{}: {e} (stopping this input here)", path.display());
                            info.input_errors += 1;
                            break;
                        }
                    };
                    if let Some(w) = timeline.packet(rec.ts_ns) {
                        eprintln!("{w}");
                    }
                    engine.process_serial(&mut ctx, &mut pre, num, &rec);
                    num += 1;
                    if let Some(now) = sweeps.packet(rec.ts_ns) {
                        engine.expire_serial(&mut ctx, now);
                    }
                    latest_ts = latest_ts.max(rec.ts_ns);
                    if let Some(p) = periodic.as_mut()
                        && p.due(latest_ts)
                    {
                        ctx.take_events(&mut events);
                        sink.write(&events)?;
                        events.clear();
                        p.write(sink, ctx.stats(), num - first_packet)?;
                    }
                    if num.is_multiple_of(65_536) {
                        progress.show(num - first_packet, engine, false);
                    }
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
                note_read_end(path, reader.stats(), info);
            }
            progress.show(num - first_packet, engine, true);
            info.packets_read = num - first_packet;
            info.capture_span = timeline.span();
            ctx.take_events(&mut events);
            sink.write(&events)?;
            worker_stats.push(ctx.stats().clone());
            engine.finish([ctx])
        }
        n if args.workers_read == Some(true)
            && live.is_none()
            && inline.is_none()
            && exec.is_none() =>
        {
            inspect_each(
                args,
                files,
                n,
                first_packet,
                engine,
                sink,
                info,
                worker_stats,
                &mut pre,
            )?
        }
        n => {
            // The decode-before-claim of `ph`'s late claim keeps a decoded view of a packet across a handoff; the
            // streaming runtime frees a packet's buffer as soon as it has been inspected, so it claims in `next`.
            let kernel_spreads = live.as_ref().is_some_and(|l| l.rings() > 1);
            let sched_opts = SchedOptions {
                ph_late_claim: false,
                // One ring per worker: the `rss` policy's indirection table, left as it starts (bucket k → worker
                // k mod N), sends ring k's packets to worker k (see `flowbundle_inspect::live`).
                rss_interval: if kernel_spreads {
                    u64::MAX
                } else {
                    SchedOptions::default().rss_interval
                },
                ..SchedOptions::default()
            };
            let scheduler = if kernel_spreads {
                "rss"
            } else {
                args.scheduler.as_deref().unwrap_or("lfb")
            };
            // Staged models: the flow group gets the workers the detection group does not.
            let flow_workers = exec.map_or(n, |e| n - e.detect_workers);
            let sched = flowbundle_scheduler::build(scheduler, flow_workers, &sched_opts)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            info.threads = Some((
                n,
                if kernel_spreads {
                    format!("kernel fanout {}", args.fanout.map_or("?", |m| m.name()))
                } else if let Some(e) = exec {
                    format!(
                        "{} execution: {flow_workers} flow + {} detection workers, {scheduler}",
                        e.model.name(),
                        e.detect_workers
                    )
                } else {
                    scheduler.to_string()
                },
            ));
            let arena = PacketArena::new(args.packet_buffers.max(1));
            let (tx, mut merge) = EventMerge::new();
            // With thresholds, the events the filter must see come here whole (see `EventSender::whole_when`).
            let tx = match &sink.filter {
                Some(f) => tx.whole_when(f.needs()),
                None => tx,
            };
            let order = StreamOrder::new(arena.slots());
            let decodes = BufferDecodes::new(arena.slots());
            let keeps_order = sched.shape().keeps_flow_order;
            // EVE lines are rendered on the workers; without an output the events are dropped there. With
            // thresholds, the events the filter must see come here whole: it sees them in order before anything is
            // written.
            let eve_opts = EveOptions {
                extra: args.eve_extra,
                ..EveOptions::default()
            };
            let render_eve = move |buf: &mut Vec<u8>, events: &[Event]| {
                flowbundle_sinks::eve::render_lines_with(buf, events, eve_opts)
            };
            let render: &Renderer = match sink.eve {
                Some(_) => &render_eve,
                None => &|_, _| {},
            };
            let forward = |slot: u32, rec: &flowbundle_ingest::PacketRecord<'_>, dropped: bool| {
                if let Some(i) = inline {
                    i.forward(slot, rec, dropped)
                }
            };
            let board = StatsBoard::new(n);
            let mut periodic = PeriodicStats::new(args.stats_interval);
            let mut source = ArenaSource::new(&arena, tx.clone()).with_decodes(&decodes);
            if inline.is_some() {
                source = source.with_forward(&forward);
            }
            if periodic.is_some() {
                source = source.with_stats_board(&board);
            }
            // Events are rendered on the workers, but for a live run, whose rule reloads may bring thresholds (and
            // whose inline workers forward sooner without rendering).
            let render_on_workers = live.is_none();
            if render_on_workers {
                source = source.with_renderer(render);
            }
            let stop = AtomicBool::new(false);
            let sweep_render = render_on_workers.then_some(render);
            let reloads = flowbundle_inspect::Reloads::default();
            let mut loaded_sets = std::collections::VecDeque::new();
            let termination = match live {
                Some(_) => Some(
                    flowbundle_inspect::stop_on_termination()
                        .context("installing the SIGINT/SIGTERM handlers")?,
                ),
                None => None,
            };
            // The reader computes only the hashes the policy reads.
            let prestage = || Prestage::new(engine.config()).computing(sched.hashes_read());
            let mut reader = match live {
                Some(cap) => {
                    let mut r = LiveReader::new(&arena, prestage(), cap, &stop)
                        .with_decodes(&decodes)
                        .with_sweeps(engine, tx.clone(), sweep_render)
                        .with_reloads(engine, &reloads)
                        .count(args.count)
                        .until(live_deadline(args))
                        .on_full(args.queue_full);
                    if kernel_spreads {
                        r = r.kernel_spreads();
                    }
                    if let Some(i) = inline {
                        r = r.with_inline(i);
                    }
                    if !keeps_order {
                        r = r.with_order(&order);
                    }
                    Reader::Live(Box::new(r))
                }
                None => {
                    let mut r = StreamReader::new(&arena, prestage(), files.to_vec())
                        .stop_when(&stop)
                        .with_decodes(&decodes)
                        .with_sweeps(engine, tx.clone(), sweep_render)
                        .with_window(args.reorder_window)
                        .numbered_from(first_packet);
                    if !keeps_order {
                        r = r.with_order(&order);
                    }
                    Reader::Files(Box::new(r))
                }
            };
            if !keeps_order {
                source = source.with_order(&order);
            }
            let progress = Progress::new();
            let mut write_error: Option<anyhow::Error> = None;
            let mut collect = |last: bool| {
                if termination.is_some_and(|t| t.load(Ordering::Relaxed)) {
                    stop.store(true, Ordering::Relaxed);
                }
                progress.update(&arena, engine, last);
                // The watermark first, then the channel (see `flowbundle_inspect::stream`).
                let watermark = arena.oldest_in_flight();
                if write_error.is_some() {
                    // Nothing more is written: what the workers send is dropped, and they do not wait for it.
                    merge.discard();
                    return;
                }
                // Rule reloads: loaded on the reloader's thread, applied by the reader between two packets with none
                // in flight; the events of the packets before that one go out through the old set's thresholds.
                if let Some(rl) = reloader.as_deref_mut()
                    && !reloads.pending()
                    && let Some(l) = rl.poll()
                {
                    reloads.offer((l.signatures.clone(), l.rules.clone()));
                    loaded_sets.push_back(l);
                }
                for a in reloads.take_applied() {
                    if let Err(e) = merge.release(a.seq, |p| sink.write_piece(p)) {
                        write_error = Some(e);
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                    if let Some(l) = loaded_sets.pop_front() {
                        sink.adopt(&l, info);
                        if let Some(rl) = reloader.as_deref_mut() {
                            rl.applied(&l);
                        }
                    }
                }
                let r = if last {
                    merge.release_all(|p| sink.write_piece(p))
                } else {
                    merge.release(watermark, |p| sink.write_piece(p))
                };
                let r = r.and_then(|()| sink.maintain());
                let ts = board.max_ts();
                let r = r.and_then(|()| match periodic.as_mut() {
                    Some(p) if !last && ts > 0 => {
                        if p.due(ts) {
                            p.write(sink, &board.total(), arena.filled())
                        } else {
                            Ok(())
                        }
                    }
                    _ => Ok(()),
                });
                if let Err(e) = r {
                    write_error = Some(e);
                    stop.store(true, Ordering::Relaxed);
                }
            };
            let reads_files = matches!(reader, Reader::Files(_));
            let feed = &mut reader;
            // A thread of the run that dies abandons it (`flowbundle_worker::Aborted`): the reader's waits for packet
            // buffers end when the arena closes, and it reads no further.
            let abandon = || {
                arena.close();
                stop.store(true, Ordering::Relaxed);
                tx.close();
            };
            let run_cfg = StreamConfig {
                on_abort: Some(&abandon),
                // `--reader-inspects`, reading files: the reader is worker 0 (see `StreamConfig::reader_works`). A
                // live reader must not stop reading to inspect (the ring would overflow), and does not help.
                reader_works: reads_files && args.reader_inspects,
                ..StreamConfig::default()
            };
            let (lost, locals) = match exec {
                None => {
                    let workload = InspectWorkload::new(engine, sched.shape(), &source);
                    let (report, _) = run_stream(
                        sched.as_ref(),
                        &workload,
                        move |crew: &Crew<'_, WorkerCtx>| {
                            let workers = crew.workers();
                            // The reader's sweeps and end-of-input flush run on every worker, by shard.
                            let broadcast =
                                |job: &(dyn Fn(usize, usize, &mut WorkerCtx) + Sync)| {
                                    crew.broadcast(&|w, ctx: &mut WorkerCtx| job(w, workers, ctx))
                                };
                            // A reader that is worker 0 inspects its share when it would wait.
                            let help = || crew.help();
                            feed.next_desc(Some(&broadcast), Some(&help))
                        },
                        &mut collect,
                        &run_cfg,
                    )
                    .map_err(|e| anyhow::anyhow!("inspection abandoned: {e}"))?;
                    // Where the threads waited (BENCHMARKS.md, "Why dh and rss with a reader thread fall below lfb").
                    if let Some((_, line)) = info.threads.as_mut() {
                        let parks: Vec<String> =
                            report.workers.iter().map(|w| w.parks.to_string()).collect();
                        *line = format!(
                            "reader waited {} times for a packet buffer and {} for a queue, workers parked {} times, {line}",
                            arena.waits(),
                            report.dispatcher.full_waits,
                            parks.join("/")
                        );
                    }
                    (report.lost, report.locals)
                }
                Some(e) => {
                    let detect =
                        flowbundle_scheduler::build(scheduler, e.detect_workers, &sched_opts)
                            .map_err(|e| anyhow::anyhow!("{e}"))?;
                    let scripts = Scripts::new(arena.slots());
                    let workload =
                        StagedInspect::new(engine, &source, &scripts, e.visits(), flow_workers);
                    // The staged groups have no crew: the reader sweeps alone, and the end of input is flushed
                    // after the run.
                    let (report, _) = run_stream_staged(
                        &[sched.as_ref(), detect.as_ref()],
                        &workload,
                        move || feed.next_desc(None, None),
                        &mut collect,
                        &run_cfg,
                    )
                    .map_err(|e| anyhow::anyhow!("inspection abandoned: {e}"))?;
                    // What crossed between the groups, for the summary (`scripts/exec-handoff` reads it).
                    if let (Some((_, line)), Some(g)) =
                        (info.threads.as_mut(), report.groups.get(1))
                    {
                        let at = line.rfind(", ").unwrap_or(line.len());
                        line.insert_str(
                            at,
                            &format!(
                                ", {} packets handed over ({} refusals, {} parks of the receiving workers)",
                                g.received,
                                g.refused,
                                g.workers.iter().map(|w| w.parks).sum::<u64>()
                            ),
                        );
                    }
                    (report.lost, report.locals.into_iter().flatten().collect())
                }
            };
            if let Some(e) = write_error {
                return Err(e);
            }
            // Every packet read must have been inspected (its buffer freed), else its events were never written.
            let oldest = arena.oldest_in_flight();
            if oldest < arena.filled() || lost > 0 {
                bail!(
                    "the {} scheduler left packets uninspected: packet {oldest} of {} is still held ({} lost by the \
                     policy)",
                    scheduler,
                    arena.filled(),
                    lost
                );
            }
            worker_stats.extend(locals.iter().map(|c| c.stats().clone()));
            let mut swept = None;
            pre = match reader {
                Reader::Files(mut reader) => {
                    swept = reader.take_sweeps().map(|(ctx, _)| ctx);
                    for e in reader.errors.iter().chain(&reader.warnings) {
                        eprintln!("{e}");
                    }
                    info.input_errors += reader.errors.len() as u64;
                    for (path, stats) in &reader.inputs_read {
                        note_read_end(path, stats, info);
                    }
                    info.packets_read = reader.packets_read;
                    info.capture_span = reader.capture_span();
                    reader.into_prestage()
                }
                Reader::Live(mut reader) => {
                    if let Some(e) = &reader.error {
                        eprintln!("capture error: {e} (stopped)");
                        info.input_errors += 1;
                    }
                    info.packets_read = reader.packets_read;
                    info.capture_span = reader.capture_span();
                    let queue_full = reader.queue_full;
                    note_capture(reader.source(), args, queue_full, info);
                    info.inline = inline.map(Inline::report);
                    reader.into_prestage()
                }
            };
            engine.finish(locals.into_iter().chain(swept))
        }
    };
    Ok((finished, pre))
}

/// What the collector of an `inspect_each` run holds: the merge, the sink, and the first write error.
struct Collecting<'s> {
    merge: EventMerge,
    sink: &'s mut Sink,
    write_error: Option<anyhow::Error>,
}

/// `--workers-read`: every worker reads the files and inspects its own share of `dh`'s placement
/// (`flowbundle_inspect::each`), the calling thread collecting their output in input order.
#[allow(clippy::too_many_arguments)]
fn inspect_each(
    args: &Args,
    files: &[PathBuf],
    n: usize,
    first_packet: u64,
    engine: &mut Engine,
    sink: &mut Sink,
    info: &mut RunInfo,
    worker_stats: &mut Vec<flowbundle_inspect::EngineStats>,
    pre: &mut Prestage,
) -> anyhow::Result<flowbundle_inspect::Finished> {
    let policy =
        flowbundle_scheduler::canonical(args.scheduler.as_deref().unwrap_or("lfb")).unwrap_or("dh");
    let placement = flowbundle_inspect::Placement::for_policy(policy)
        .unwrap_or(flowbundle_inspect::Placement::Fixed);
    info.threads = Some((n, format!("every worker reading the input, {policy}")));
    let (tx, merge) = EventMerge::new();
    // With thresholds, the events the filter must see come here whole (see `EventSender::whole_when`).
    let tx = match &sink.filter {
        Some(f) => tx.whole_when(f.needs()),
        None => tx,
    };
    let eve_opts = EveOptions {
        extra: args.eve_extra,
        ..EveOptions::default()
    };
    let render_eve = move |buf: &mut Vec<u8>, events: &[Event]| {
        flowbundle_sinks::eve::render_lines_with(buf, events, eve_opts)
    };
    let render: &Renderer = match sink.eve {
        Some(_) => &render_eve,
        None => &|_, _| {},
    };
    let stop = AtomicBool::new(false);
    let board = StatsBoard::new(n);
    let mut periodic = PeriodicStats::new(args.stats_interval);
    let window = (args.packet_buffers as u64).saturating_mul(64);
    // The collector's state, which a worker waiting for its output blocks may take to write out what can be
    // written when no other thread is at it (`EachReads::with_helper`): the output never waits for the collector's
    // own thread to be scheduled.
    let collecting = std::sync::Mutex::new(Collecting {
        merge,
        sink: &mut *sink,
        write_error: None,
    });
    let help = |watermark: u64| -> bool {
        let Ok(mut c) = collecting.try_lock() else {
            return false;
        };
        let Collecting {
            merge,
            sink,
            write_error,
        } = &mut *c;
        if write_error.is_none()
            && let Err(e) = merge.release(watermark, |p| sink.write_piece(p))
        {
            *write_error = Some(e);
            stop.store(true, Ordering::Relaxed);
        }
        true
    };
    let results = {
        let closer = tx.clone();
        let mut each =
            flowbundle_inspect::EachReads::new(engine, files, n, tx, Some(render), &stop, window)
                .numbered_from(first_packet)
                .placed_by(placement)
                .with_helper(&help);
        if periodic.is_some() {
            each = each.with_stats_board(&board);
        }
        let each = &each;
        let progress = Progress::new();
        let mut collect = |last: bool| {
            progress.show(each.packets_read(), engine, last);
            let mut c = collecting.lock().unwrap_or_else(|p| p.into_inner());
            let Collecting {
                merge,
                sink,
                write_error,
            } = &mut *c;
            // The watermark first, then the channel (see `flowbundle_inspect::each`).
            let watermark = each.watermark();
            if write_error.is_some() {
                // Nothing more is written: what the workers send is dropped, and they do not wait for it.
                merge.discard();
                return;
            }
            let r = if last {
                merge.release_all(|p| sink.write_piece(p))
            } else {
                merge.release(watermark, |p| sink.write_piece(p))
            };
            let r = r.and_then(|()| sink.maintain());
            let ts = board.max_ts();
            let r = r.and_then(|()| match periodic.as_mut() {
                Some(p) if !last && ts > 0 => {
                    if p.due(ts) {
                        p.write(sink, &board.total(), each.packets_read())
                    } else {
                        Ok(())
                    }
                }
                _ => Ok(()),
            });
            if let Err(e) = r {
                *write_error = Some(e);
                stop.store(true, Ordering::Relaxed);
            }
        };
        // A worker that dies abandons the run: the others stop reading, and do not wait for the collector.
        let abandon = || {
            stop.store(true, Ordering::Relaxed);
            closer.close();
        };
        let run_cfg = StreamConfig {
            on_abort: Some(&abandon),
            ..StreamConfig::default()
        };
        let results =
            flowbundle_worker::run_each(n, &|w| each.run_worker(w), &mut collect, &run_cfg)
                .map_err(|e| anyhow::anyhow!("inspection abandoned: {e}"))?;
        let c = collecting.into_inner().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = c.write_error {
            return Err(e);
        }
        results
    };
    // What the imbalance between the workers' shares cost: each worker's waits for the others (see the loop below
    // for where it goes in the line).
    let waits = {
        let ms = |ns: u64| format!("{:.1}", ns as f64 / 1e6);
        let sweeps = results.first().map_or(0, |r| r.sweeps);
        let each = |f: &dyn Fn(&flowbundle_inspect::EachWorker) -> String| {
            results.iter().map(f).collect::<Vec<String>>().join(" / ")
        };
        // Buckets taken over only where a table moves them.
        let takeovers = if results.iter().any(|r| r.moved > 0) {
            format!(
                ", {} ms for buckets taken over ({} ms of it at the next sweep; {}; packets held back meanwhile {})",
                each(&|r| ms(r.waited_for_takeovers_ns + r.waited_for_takeovers_at_sweeps_ns)),
                each(&|r| ms(r.waited_for_takeovers_at_sweeps_ns)),
                each(&|r| r.takeovers.to_string()),
                each(&|r| r.held_back.to_string())
            )
        } else {
            String::new()
        };
        format!(
            ", waiting for the others {} ms at the end, {} ms at {sweeps} sweeps{takeovers}, {} ms a window ahead, {} ms for output blocks ({} made, output written out by the workers {} times), sweeps ended after going on {}",
            each(&|r| ms(r.waited_at_end_ns)),
            each(&|r| ms(r.waited_at_sweeps_ns)),
            each(&|r| ms(r.waited_ahead_ns)),
            each(&|r| ms(r.waited_for_output_ns)),
            each(&|r| r.blocks_made.to_string()),
            each(&|r| r.output_written.to_string()),
            each(&|r| r.sweeps_ended_later.to_string())
        )
    };
    let mut ctxs = Vec::with_capacity(results.len());
    for (w, r) in results.into_iter().enumerate() {
        if w == 0 {
            // Every worker read the same: the first one's reading stands for the run's.
            for e in r.errors.iter().chain(&r.warnings) {
                eprintln!("{e}");
            }
            info.input_errors += r.errors.len() as u64;
            for (path, stats) in &r.inputs_read {
                note_read_end(path, stats, info);
            }
            info.packets_read = r.packets_read;
            info.capture_span = r.capture_span;
            if let (Some((_, line)), flowbundle_inspect::Placement::Balanced { .. }) =
                (info.threads.as_mut(), placement)
            {
                let at = line.rfind(", ").unwrap_or(line.len());
                line.insert_str(at, &format!(", {} buckets moved at the sweeps", r.moved));
            }
            *pre = r.prestage;
        }
        worker_stats.push(r.ctx.stats().clone());
        ctxs.push(r.ctx);
    }
    if let Some((_, line)) = info.threads.as_mut() {
        // Before the policy's name, which the summary follows with "scheduler".
        let at = line.rfind(", ").unwrap_or(line.len());
        line.insert_str(at, &waits);
    }
    Ok(engine.finish(ctxs))
}

/// The live loop of `inspect --interface --threads 1`: packets from the interface through the pre-scheduling stage
/// and the engine, one at a time, as the file loop does, until SIGINT/SIGTERM, `--count` or `--seconds`. Returns the
/// packets read.
///
/// A signal only raises a flag: the loop notices it within the capture's wait (100 ms), reads what the kernel
/// captured before it ([`flowbundle_inspect::live::Drain`]), and the flows still open are flushed and the summary is
/// written as for a file.
#[allow(clippy::too_many_arguments)]
fn inspect_live(
    cap: &mut LiveSource,
    args: &Args,
    engine: &mut Engine,
    ctx: &mut WorkerCtx,
    pre: &mut Prestage,
    sink: &mut Sink,
    costs: &mut CostSink,
    mut reloader: Option<&mut flowbundle_run::reload::Reloader>,
    info: &mut RunInfo,
) -> anyhow::Result<u64> {
    let stop = flowbundle_inspect::stop_on_termination()
        .context("installing the SIGINT/SIGTERM handlers")?;
    let deadline = live_deadline(args);
    let limit = args.count.unwrap_or(u64::MAX);
    let (mut events, mut recs) = (Vec::new(), Vec::new());
    let mut periodic = PeriodicStats::new(args.stats_interval);
    let mut sweeps = flowbundle_inspect::SweepClock::new(engine.config().sweep);
    let mut num = 0u64;
    let mut drain = flowbundle_inspect::live::Drain::default();
    while num < limit && deadline.is_none_or(|d| Instant::now() < d) {
        drain.note(stop);
        // A reload loaded meanwhile applies from the next packet on: the events so far go out through the
        // thresholds of the set that made them.
        if let Some(l) = reloader
            .as_deref_mut()
            .and_then(flowbundle_run::reload::Reloader::poll)
        {
            ctx.take_events(&mut events);
            sink.write(&events)?;
            events.clear();
            engine.reload(l.signatures.clone(), l.rules.clone());
            sink.adopt(&l, info);
            if let Some(r) = reloader.as_deref_mut() {
                r.applied(&l);
            }
        }
        if num.is_multiple_of(256) {
            sink.maintain()?;
        }
        let rec = match cap.next_packet() {
            Ok(Some((_, r))) => r,
            // Stopped, and nothing captured before the stop is left.
            Ok(None) if drain.draining() => break,
            Ok(None) => {
                // A quiet link: what is pending goes out now.
                ctx.take_events(&mut events);
                sink.write(&events)?;
                events.clear();
                sink.maintain()?;
                continue;
            }
            Err(e) => {
                eprintln!("capture error: {e} (stopping)");
                break;
            }
        };
        if !drain.keeps(rec.ts_ns) {
            break;
        }
        engine.process_serial(ctx, pre, num, &rec);
        num += 1;
        if let Some(now) = sweeps.packet(rec.ts_ns) {
            engine.expire_serial(ctx, now);
        }
        // A live packet's timestamp is the wall clock at capture: records come every interval of real time while
        // traffic flows.
        if let Some(p) = periodic.as_mut()
            && p.due(rec.ts_ns)
        {
            ctx.take_events(&mut events);
            sink.write(&events)?;
            events.clear();
            p.write(sink, ctx.stats(), num)?;
        }
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
    Ok(num)
}

/// The end of a `--seconds` run.
fn live_deadline(args: &Args) -> Option<Instant> {
    args.seconds
        .map(|s| Instant::now() + std::time::Duration::from_secs_f64(s))
}

/// Opens `--interface` as the options say: libpcap, or AF_PACKET rings (one per worker under `--fanout`).
fn open_live(args: &Args, iface: &str, threads: usize) -> anyhow::Result<LiveSource> {
    let rings = match args.fanout {
        Some(_) if args.capture == CaptureMethod::Pcap => {
            bail!("--fanout needs --capture afpacket")
        }
        Some(_) if args.scheduler.is_some() => {
            bail!(
                "--fanout lets the kernel spread the packets over the workers: --scheduler does not apply"
            )
        }
        Some(mode) => {
            if !mode.keeps_flows_together() {
                eprintln!(
                    "warning: --fanout {} may split a flow over several workers, each then seeing part of it",
                    mode.name()
                );
            }
            threads
        }
        None => 1,
    };
    let source = match args.capture {
        CaptureMethod::Pcap => {
            if args.ring_blocks.is_some()
                || args.block_size.is_some()
                || args.block_timeout_ms.is_some()
                || args.tpacket.is_some()
            {
                bail!(
                    "--ring-blocks, --block-size, --block-timeout-ms and --tpacket apply to --capture afpacket"
                );
            }
            LiveSource::pcap(iface, args.snaplen, !args.no_promisc)
        }
        CaptureMethod::AfPacket => {
            let d = RingConfig::default();
            let cfg = RingConfig {
                version: ring_version(args, d.version)?,
                block_size: args.block_size.unwrap_or(d.block_size),
                blocks: args.ring_blocks.unwrap_or(d.blocks),
                block_timeout_ms: args.block_timeout_ms.unwrap_or(d.block_timeout_ms),
                frame_size: None,
                snaplen: args.snaplen,
                promisc: !args.no_promisc,
                // One group per process: a second sensor on the same interface gets its own copy.
                fanout: args
                    .fanout
                    .map(|m| ((std::process::id() & 0xffff) as u16, m)),
                ignore_outgoing: false,
            };
            LiveSource::af_packet(iface, &cfg, rings)
        }
    }
    .with_context(|| format!("opening interface {iface}"))?;
    eprintln!(
        "capturing on {iface} (link type {}, {}); SIGINT or SIGTERM to stop",
        source.link_type(),
        capture_method(args, source.rings())
    );
    Ok(source)
}

/// The ring layout of a live run: `--tpacket`, else `default` (TPACKET_V3 for capture, V2 inline). A block timeout
/// means nothing to a TPACKET_V2 ring, so asking for both is refused.
fn ring_version(args: &Args, default: TpacketVersion) -> anyhow::Result<TpacketVersion> {
    let v = args.tpacket.unwrap_or(default);
    if v == TpacketVersion::V2 && args.block_timeout_ms.is_some() {
        bail!(
            "--block-timeout-ms applies to TPACKET_V3 rings (--tpacket 3); a TPACKET_V2 ring hands each frame over as it arrives"
        );
    }
    Ok(v)
}

fn capture_method(args: &Args, rings: usize) -> String {
    let default = match args.inline {
        Some(_) => TpacketVersion::V2,
        None => TpacketVersion::V3,
    };
    let v = args.tpacket.unwrap_or(default).name();
    if args.inline.is_some() {
        return format!("afpacket TPACKET_V{v}, one ring per side");
    }
    match (args.capture, args.fanout) {
        (CaptureMethod::Pcap, _) => "libpcap".into(),
        (CaptureMethod::AfPacket, Some(m)) => {
            format!("afpacket TPACKET_V{v}, {rings} rings, fanout {}", m.name())
        }
        (CaptureMethod::AfPacket, None) => format!("afpacket TPACKET_V{v}, 1 ring"),
    }
}

/// At the end of a live run: the capture's counters into the summary.
fn note_capture(cap: &mut LiveSource, args: &Args, queue_full: u64, info: &mut RunInfo) {
    let what = match (&args.interface, &args.inline) {
        (Some(iface), _) => iface.clone(),
        (None, Some(pair)) => format!("{pair} inline"),
        (None, None) => "?".into(),
    };
    let kernel = match cap.kernel_stats() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("warning: the kernel's capture counters could not be read: {e}");
            flowbundle_ingest::KernelStats::default()
        }
    };
    let ring = cap.counters();
    info.capture_drops = Some(kernel.drops + queue_full);
    info.live = Some(CaptureCounters {
        method: format!("{} on {what}", capture_method(args, cap.rings())),
        kernel_packets: kernel.packets,
        kernel_drops: kernel.drops,
        kernel_freeze_q: kernel.freeze_q_count,
        queue_full,
        snaplen_cut: ring.snaplen_cut,
        vlan_restored: ring.vlan_restored,
        malformed: ring.malformed,
        whole_copies: ring.copied,
    });
}

/// What an inline ring keeps of a frame: more than the largest frame a device hands over (a 64 KiB offloaded
/// segment plus its link and IP headers), so that every frame can be forwarded whole.
const INLINE_SNAPLEN: u32 = 128 * 1024;

/// Opens `--inline IF1:IF2`: a ring on each side (ignoring what this host sends) and a sending socket on each.
fn open_inline(args: &Args, pair: &str) -> anyhow::Result<(LiveSource, Inline)> {
    let Some((a, b)) = pair
        .split_once(':')
        .filter(|(a, b)| !a.is_empty() && !b.is_empty() && a != b)
    else {
        bail!("--inline takes two different interfaces as IF1:IF2, not {pair:?}");
    };
    if args.capture == CaptureMethod::Pcap || args.fanout.is_some() {
        bail!(
            "--inline uses one AF_PACKET ring per interface: --capture pcap and --fanout do not apply"
        );
    }
    if args.snaplen != 65_535 {
        bail!("--inline forwards whole frames: --snaplen does not apply");
    }
    let d = RingConfig::default();
    let cfg = RingConfig {
        // Each frame handed over as it arrives: a TPACKET_V3 block would hold it back (see `ring_version`).
        version: ring_version(args, TpacketVersion::V2)?,
        block_size: args.block_size.unwrap_or(d.block_size),
        blocks: args.ring_blocks.unwrap_or(d.blocks),
        // With TPACKET_V3 a packet waits in the ring until its block is handed over: the timeout is the latency floor.
        block_timeout_ms: args.block_timeout_ms.unwrap_or(1),
        frame_size: None,
        // Whole frames, the largest a device hands over included (a 64 KiB offloaded segment and its headers).
        snaplen: INLINE_SNAPLEN,
        promisc: !args.no_promisc,
        fanout: None,
        ignore_outgoing: true,
    };
    let source =
        LiveSource::inline([a, b], &cfg).with_context(|| format!("opening {pair} inline"))?;
    let inline = Inline::open([a, b], args.packet_buffers)
        .with_context(|| format!("opening {pair} inline"))?;
    eprintln!(
        "capturing on {a} and {b}, inline (link type {}); SIGINT or SIGTERM to stop",
        source.link_type()
    );
    Ok((source, inline))
}

/// The reader thread's side of a streaming run: files or an interface.
enum Reader<'a> {
    Files(Box<StreamReader<'a>>),
    Live(Box<LiveReader<'a>>),
}

impl Reader<'_> {
    fn next_desc(
        &mut self,
        crew: Option<&Broadcast<'_>>,
        help: Option<&flowbundle_inspect::Help<'_>>,
    ) -> Option<flowbundle_scheduler::Desc> {
        match self {
            Reader::Files(r) => r.next_desc(crew, help),
            Reader::Live(r) => r.next_desc(),
        }
    }
}

/// A staged execution model chosen with `--exec` (pipeline or multilayer) and the size of its detection group.
#[derive(Clone, Copy, Debug)]
struct StagedExec {
    model: flowbundle_types::Exec,
    detect_workers: usize,
}

impl StagedExec {
    /// Which packets the detection group sees under this model.
    fn visits(self) -> DetectVisits {
        match self.model {
            flowbundle_types::Exec::Multilayer => DetectVisits::Needed,
            _ => DetectVisits::Every,
        }
    }
}

/// `--exec` checked against the rest of the command line: `None` for run-to-completion (the default, and what one
/// worker runs whatever the model: with fewer workers than groups the groups merge, as the simulator merges them).
fn staged_exec(args: &Args, threads: usize) -> anyhow::Result<Option<StagedExec>> {
    use flowbundle_types::Exec;
    let model = match args.exec.as_deref().and_then(Exec::parse) {
        None | Some(Exec::Rtc) => {
            if args.detect_workers.is_some() {
                bail!("--detect-workers applies to --exec pipeline and --exec multilayer");
            }
            return Ok(None);
        }
        Some(m) => m,
    };
    if threads < 2 {
        eprintln!(
            "warning: --exec {} needs a worker per group: one worker runs every stage (run-to-completion)",
            model.name()
        );
        return Ok(None);
    }
    if args.inline.is_some() {
        bail!(
            "--exec {} does not run inline: a packet's verdict is known only after its detection stage, and a flow's \
             packets must leave in order",
            model.name()
        );
    }
    if args.fanout.is_some() {
        bail!(
            "--exec {} runs the groups under --scheduler; --fanout gives each worker its own ring",
            model.name()
        );
    }
    let scheduler = args.scheduler.as_deref().unwrap_or("lfb");
    let opts = SchedOptions {
        ph_late_claim: false,
        ..SchedOptions::default()
    };
    let shape = flowbundle_scheduler::build(scheduler, 2, &opts)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .shape();
    if !shape.keeps_flow_order {
        bail!(
            "--exec {} needs a scheduler that keeps each flow's packets in order (every policy but ph): the \
             detection group must receive a flow's packets in the order the flow group inspected them",
            model.name()
        );
    }
    let detect_workers = args.detect_workers.unwrap_or(threads / 2);
    if detect_workers == 0 || detect_workers >= threads {
        bail!(
            "--detect-workers must leave at least one worker to each group (1 to {})",
            threads - 1
        );
    }
    Ok(Some(StagedExec {
        model,
        detect_workers,
    }))
}
