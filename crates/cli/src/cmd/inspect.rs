//! `flowbundle inspect`: captures through the engine, EVE JSON out, a summary.
//!
//! With `--threads 1` one thread streams the input: one packet at a time from the reader,
//! through the pre-scheduling stage (defragmentation) and the engine, events written as they are produced. With
//! `--threads N` (N ≥ 2; the default is the machine's cores) the streaming runtime runs it. Capture files under
//! `dh` (the default), `rss` or `lfb`: every worker reads the input itself and inspects its share of a placement all
//! compute alike (`flowbundle_worker::run_each`, `flowbundle_inspect::each`). Otherwise (live capture, standard
//! input, the other policies, `--exec pipeline|multilayer`, `--reader-inspects`, `--workers-read=false`;
//! `flowbundle_worker::run_stream`): a reader thread reads, pre-stages and copies packets into a bounded arena of
//! packet buffers (`--packet-buffers`) and dispatches them through the chosen scheduler to N persistent workers. This
//! thread writes the events as the run goes on, in the single-threaded run's order (see `flowbundle_inspect::stream`).
//! Memory is the flow state plus the arena, whatever the input's length: both loops sweep idle flows out in capture
//! time (`--flow-sweep`, `flowbundle_inspect::sweep`), at the same input positions. With `--stats-interval` both
//! write Suricata `stats` records during the run, in capture time for files.

use std::path::PathBuf;

use anyhow::{Context, bail};
use flowbundle_ingest::{CaptureMethod, RingConfig, TpacketVersion};
use flowbundle_inspect::EngineConfig;
use flowbundle_run::sink::{CostSink, Sink};
use flowbundle_sinks::{EveOptions, RunInfo};

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
    /// --exec pipeline or multilayer, --reader-inspects, --workers-read=false). Under dh, rss and lfb every worker reads capture files
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

    /// Most flows tracked at once: one budget for all workers together, as Suricata's flow.memcap (default 262,144;
    /// `--threads 4 --max-flows 1000` tracks at most 1,000, not 4,000). A new flow beyond it evicts an idle flow (1 s
    /// or more) of its shard, or is not tracked: counted in flow.memcap, its packets inspected without a flow. A flow
    /// costs about 600 bytes before its protocol state; measured, an open HTTP connection with pipelined requests
    /// held 3.7 KB, so the default cap filled with such flows is about 1 GB: lower it to bound memory. Under the cap
    /// every thread count gives the single-threaded run's output; once a flood fills it, which of the flood's new
    /// flows find room depends on the order the workers reach the table, so the flows tracked (and what is reported
    /// of them) may differ from run to run and from the single-threaded run's, never their number past the cap.
    #[arg(long)]
    max_flows: Option<usize>,

    /// Capture-time seconds between sweeps of idle flows (flows whose timeout passed are ended in every shard, so
    /// memory stays bounded on a long input; a sweep also waits for at least 16,384 packets). 0 turns sweeps off:
    /// idle flows then end only when a packet of theirs comes, or at the end.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    flow_sweep: f64,

    /// With --threads N ≥ 2: packet buffers between the reader and the workers (the bound on packets in flight;
    /// memory is about this many times the largest packet; how far event output lags behind is --reorder-window's).
    /// Default 512: for live capture, whose packets are copied into them, that keeps the buffers within a core's L2
    /// cache (512 × 2 KiB; with 4,096 the reader's copy missed the cache for most packets and the run took about 1.5×
    /// the CPU). 2,048 for a reader thread reading files, whose buffers point into the capture's own: fewer waits for
    /// a free buffer, 0–5% faster on 2 cores than 512 (BENCHMARKS.md).
    #[arg(long)]
    packet_buffers: Option<usize>,

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

    /// With --threads N ≥ 2 reading files: no reader thread; every worker goes through the input itself (read once
    /// for all of them, in batches the first worker to need one reads) and inspects only the packets placed on it,
    /// skipping the rest, so nothing but those batches and the output crosses between cores. The placement
    /// is one every worker computes alike from the input: under `dh` the flow's CRC-16 modulo N; under `rss` and
    /// `lfb` an indirection table of the flows' CRC-16 (128 and 1,024 buckets) that every worker rebalances alike at
    /// each sweep of idle flows, from the bytes each bucket had since the last, when the loads differ by more than
    /// a quarter (`lfb` and `rss`). The default for files under `dh`, `rss` and `lfb` when nothing needs
    /// a reader thread (standard input or a pipe, --exec pipeline or multilayer, --reader-inspects): measured
    /// faster than a reader thread on 2 cores and on 16 under all three, the output the same.
    /// `--workers-read=false` keeps the reader thread (and lfb as the default scheduler). A worker waits when it is
    /// 64 times --packet-buffers packets ahead of the slowest (what bounds the output held back for ordering; 32,768
    /// packets by default, about two sweep periods: measured, 4,096 made the workers wait for each other through
    /// local imbalances and took 8–10% longer).
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
    flowbundle_run::inputs::refuse_one_stream_twice(&args.files)?;
    if args.reorder_window == 0 {
        bail!("--reorder-window must be at least 1");
    }
    if args.packet_buffers == Some(0) {
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
    let asked = flowbundle_run::mode::Asked {
        files: &args.files,
        threads,
        scheduler: args.scheduler.as_deref(),
        exec: args.exec.as_deref().and_then(flowbundle_types::Exec::parse),
        detect_workers: args.detect_workers,
        live: live_run,
        inline: args.inline.is_some(),
        fanout: args.fanout.is_some(),
        workers_read: args.workers_read,
        reader_inspects: args.reader_inspects,
        packet_buffers: args.packet_buffers,
    };
    let exec = flowbundle_run::mode::staged_exec(&asked)?;
    let capture = capture_spec(&args);
    // Open the interface before loading rule sets, so a build without live capture (or a missing permission)
    // says so at once.
    let mut live = match &args.interface {
        Some(iface) => {
            check_live(&args)?;
            Some(flowbundle_run::live::open_live(&capture, iface, threads)?)
        }
        None => None,
    };
    if args.queue_full == flowbundle_inspect::OnFull::Forward && args.inline.is_none() {
        bail!("--queue-full forward (fail-open) applies to --inline");
    }
    let inline = match &args.inline {
        Some(pair) => {
            let sides = check_inline(&args, pair)?;
            let (source, inline) = flowbundle_run::live::open_inline(
                &capture,
                sides,
                args.packet_buffers
                    .unwrap_or(flowbundle_run::mode::DEFAULT_PACKET_BUFFERS),
            )?;
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
    )
    .read_with(&args.files);
    sources.rules_report = args.rules_report.clone();
    // Every file this run reads: no output may be one of them.
    let reads = sources.inputs.clone();
    // The loaded sets live until the process ends, whichever way `run` returns: freeing them is left to the
    // system. Their teardown frees every compiled expression and rule one by one (582 M instructions with the
    // community rules, after the run and its output are complete, in the user's wall time); nothing is written
    // or flushed by it.
    let loaded = std::mem::ManuallyDrop::new(sources.load()?);
    info.signatures = loaded.signatures_info;
    info.rules = loaded.rules_info.clone();
    info.rule_names = loaded.rule_names.clone();
    let rules = loaded.rules.clone();
    let mut reloader =
        signals.map(|sig| flowbundle_run::reload::Reloader::new(sources, &loaded, sig));
    if let Some(r) = &reloader {
        info.reloads = Some(r.info);
    }

    // Every input must open as a capture before anything runs, whatever the thread count.
    let probed = flowbundle_run::inputs::probe(&args.files)?;
    let eve_opts = EveOptions {
        extra: args.eve_extra,
        ..EveOptions::default()
    };
    let inputs: Vec<&std::path::Path> = reads.iter().map(PathBuf::as_path).collect();
    let target = args.eve.target(&conf, args.output.as_deref(), live_run)?;
    let waits = args.eve.waits(&conf)?;
    let mut sink = Sink::open(
        target,
        args.output.as_deref(),
        waits,
        &inputs,
        eve_opts,
        signals,
        cfg.ips,
    )?;
    if sink.eve.is_none() && args.eve_stats {
        bail!("--eve-stats needs an EVE output (-o FILE, or --eve-filetype redis)");
    }
    let mut costs = CostSink::open(args.cost_out.as_deref(), &inputs)?;

    if threads == 1 && args.scheduler.is_some() {
        eprintln!("warning: --scheduler has no effect on a single-threaded run (--threads 1)");
    }

    if threads == 1 && args.reorder_window != flowbundle_inspect::stream::DEFAULT_WINDOW {
        eprintln!("warning: --reorder-window has no effect on a single-threaded run (--threads 1)");
    }

    if threads == 1 && args.packet_buffers.is_some() {
        eprintln!("warning: --packet-buffers has no effect on a single-threaded run (--threads 1)");
    }
    let mode = flowbundle_run::mode::choose(&asked)?;
    if threads == 1 && args.workers_read.is_some() {
        eprintln!("warning: --workers-read has no effect on a single-threaded run (--threads 1)");
    }
    if threads == 1 && args.reader_inspects {
        eprintln!(
            "warning: --reader-inspects has no effect on a single-threaded run (--threads 1)"
        );
    }
    if args.summary && args.output.is_none() {
        eprintln!("warning: --summary has no effect without -o: the summary is printed anyway");
    }
    let config = flowbundle_run::Config {
        engine: cfg,
        per_file: args.per_file,
        threads,
        scheduler: mode.scheduler,
        exec,
        workers_read: mode.workers_read,
        reader_inspects: args.reader_inspects,
        packet_buffers: mode.packet_buffers,
        reorder_window: args.reorder_window,
        stats_interval: args.stats_interval,
        eve_stats: args.eve_stats,
        eve_stats_threads: args.eve_stats_threads,
        eve_extra: args.eve_extra,
        live: flowbundle_run::LiveConfig {
            count: args.count,
            seconds: args.seconds,
            queue_full: args.queue_full,
            capture,
        },
    };
    let mut live_sources = flowbundle_run::Sources {
        files: probed,
        live,
        inline,
    };
    let reports = flowbundle_run::run(
        &config,
        &loaded,
        &mut sink,
        &mut costs,
        &mut live_sources,
        reloader.as_mut(),
        &info,
    )?;
    // A live run's reloader (and the signatures it holds) is left to the process's end as the loaded sets are.
    std::mem::forget(reloader);
    flowbundle_run::ending::finish(
        flowbundle_run::ending::Ending {
            output: args.output.as_deref(),
            summary: args.summary,
            rules_profile: args.rules_profile.as_deref(),
        },
        &mut sink,
        costs,
        reports,
        rules,
        |text| {
            out!("{text}");
            Ok(())
        },
    )
}

/// The capture options of a live run, as the library opens them.
fn capture_spec(args: &Args) -> flowbundle_run::live::CaptureSpec {
    flowbundle_run::live::CaptureSpec {
        interface: args.interface.clone(),
        inline: args.inline.clone(),
        method: args.capture,
        tpacket: args.tpacket,
        fanout: args.fanout,
        ring_blocks: args.ring_blocks,
        block_size: args.block_size,
        block_timeout_ms: args.block_timeout_ms,
        snaplen: args.snaplen,
        promisc: !args.no_promisc,
    }
}

/// `--interface`'s options checked against each other (libpcap or AF_PACKET rings, one per worker under
/// `--fanout`).
fn check_live(args: &Args) -> anyhow::Result<()> {
    match args.fanout {
        Some(_) if args.capture == CaptureMethod::Pcap => {
            bail!("--fanout needs --capture afpacket")
        }
        Some(_) if args.scheduler.is_some() => {
            bail!(
                "--fanout lets the kernel spread the packets over the workers: --scheduler does not apply"
            )
        }
        Some(mode) if !mode.keeps_flows_together() => {
            eprintln!(
                "warning: --fanout {} may split a flow over several workers, each then seeing part of it",
                mode.name()
            );
        }
        _ => {}
    }
    match args.capture {
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
        }
        CaptureMethod::AfPacket => check_ring_version(args, RingConfig::default().version)?,
    }
    Ok(())
}

/// The ring layout of a live run: `--tpacket`, else `default` (TPACKET_V3 for capture, V2 inline). A block timeout
/// means nothing to a TPACKET_V2 ring, so asking for both is refused.
fn check_ring_version(args: &Args, default: TpacketVersion) -> anyhow::Result<()> {
    let v = args.tpacket.unwrap_or(default);
    if v == TpacketVersion::V2 && args.block_timeout_ms.is_some() {
        bail!(
            "--block-timeout-ms applies to TPACKET_V3 rings (--tpacket 3); a TPACKET_V2 ring hands each frame over as it arrives"
        );
    }
    Ok(())
}

/// `--inline IF1:IF2` checked: two interfaces, one AF_PACKET ring on each, whole frames.
fn check_inline<'p>(args: &Args, pair: &'p str) -> anyhow::Result<[&'p str; 2]> {
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
    // Each frame handed over as it arrives: a TPACKET_V3 block would hold it back.
    check_ring_version(args, TpacketVersion::V2)?;
    Ok([a, b])
}
