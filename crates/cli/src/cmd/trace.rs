//! `flowbundle trace ...`: tools that describe and rewrite captures (crate `flowbundle-trace`).

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use flowbundle_inspect::{Engine, EngineConfig, Prestage, WorkerCtx};
use flowbundle_trace::stats::{self, Collector, Progress, StatsConfig};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Capture statistics: the ANCS'10 Table 1 attributes (packets, TCP and UDP connections, average and maximum
    /// Mb/s, connection density) and more: unique flow rate, top connections, packet sizes, protocol mix, VLANs,
    /// fragments, decode outcomes. Streams the file in constant memory (the flow table is capped).
    Stats(StatsArgs),
    /// Synthesize realistic traffic (HTTP, TLS, QUIC, DNS, SSH, SMTP, FTP, opaque) with a chosen shape:
    /// connections, Zipf sizes or a dominant connection, density, trains, average and peak rate. Profiles
    /// dominant, many and balanced reproduce the ANCS'10 Table 1 captures.
    Synth(SynthArgs),
    /// Merge captures into one (traffic aggregation, Verdú thesis §3.4.1): common start, disjoint address spaces,
    /// time order; --factor K aggregates K copies of each input.
    Merge(MergeArgs),
    /// Anonymize addresses (sn1, sn2, sn3, prefix-preserving Crypto-PAn) keeping every flow, checksums fixed;
    /// optionally strip or truncate payloads.
    Anonymize(AnonymizeArgs),
    /// Rewrite timestamps to another average rate (--rate 10Gbit/s) or by a factor, keeping relative gaps.
    Rescale(RescaleArgs),
    /// Keep a range of packets (--packets 1..=1000) or a time window (--time 5..10).
    Cut(CutArgs),
}

#[derive(clap::Args)]
pub struct StatsArgs {
    /// Capture file: pcap or pcapng, gzip-compressed or not.
    file: PathBuf,
    /// Write the report as JSON to this file, or to standard output with `-` (the table then goes to standard
    /// error).
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Top connections to list by packets and by bytes.
    #[arg(long, default_value_t = stats::DEFAULT_TOP)]
    top: usize,
    /// Decapsulate GRE, IP-in-IP, VXLAN and GTP-U: flows are then keyed on the innermost packet.
    #[arg(long)]
    decap: bool,
    /// Most flows tracked; packets of further flows are counted as untracked (about 100 bytes per flow).
    #[arg(long, default_value_t = stats::DEFAULT_MAX_FLOWS)]
    max_flows: usize,
    /// Never show the progress bar (it appears on stderr after a second otherwise).
    #[arg(long)]
    no_progress: bool,
    /// Also run every packet through the inspection engine (single-threaded, as `flowbundle inspect`) and report
    /// its cost: average cycles and ns per packet (ANCS'10 Table 1 "Avg. CPP"), the top connections by cycles
    /// (Figure 1) and cost by position in flow (Verdú thesis ch. 4). Cycles are wall-clock TSC cycles: run on a
    /// quiet machine. The engine inspects tunnelled packets' inner flows; add --decap to key the report's
    /// connections and positions on them too.
    #[arg(long)]
    cost: bool,
    /// With --cost: load L7-filter signatures (`.pat` files) into the engine, as `flowbundle inspect --signatures`.
    #[arg(long, requires = "cost")]
    signatures: Option<PathBuf>,
}

/// `--cost`: the engine's own per-packet cycle count ([`flowbundle_inspect::cost`]) as a [`stats::CostModel`].
///
/// Each packet goes through [`Engine::process_serial`] (defragmentation, decoding, flow tracking, reassembly,
/// identification) and its cost is the growth of the engine's cycle total across that call, i.e. exactly the
/// cycles the engine accounts for the packet (its `rdtsc` pair around the packet; fragments held for reassembly
/// cost 0, the datagram is charged to the fragment that completes it). Events are drained and dropped as they
/// come so memory stays bounded by the engine's own caps.
struct EngineCost {
    engine: Engine,
    pre: Prestage,
    ctx: WorkerCtx,
    num: u64,
    events: Vec<flowbundle_inspect::Event>,
}

impl EngineCost {
    fn new(signatures: Option<flowbundle_inspect::signatures::SignatureSet>) -> Self {
        let cfg = EngineConfig {
            // Stage timing (the bench harness' breakdown) adds counter reads this report does not use.
            cost: flowbundle_inspect::CostConfig {
                per_packet_records: false,
                stage_sample_every: 0,
            },
            ..EngineConfig::default()
        };
        let engine = Engine::new(cfg, signatures, None);
        let pre = Prestage::new(engine.config());
        let ctx = engine.new_ctx();
        EngineCost {
            engine,
            pre,
            ctx,
            num: 0,
            events: Vec::new(),
        }
    }
}

impl stats::CostModel for EngineCost {
    fn unit(&self) -> &str {
        "cycles"
    }

    fn cost(
        &mut self,
        rec: &flowbundle_ingest::PacketRecord<'_>,
        _decoded: &flowbundle_decode::Decoded<'_>,
    ) -> u64 {
        let before = self.ctx.cost().cycles;
        self.engine
            .process_serial(&mut self.ctx, &mut self.pre, self.num, rec);
        self.num += 1;
        if self.ctx.pending_events() >= 1024 {
            self.ctx.take_events(&mut self.events);
            self.events.clear();
        }
        self.ctx.cost().cycles.wrapping_sub(before)
    }

    fn ns_per_unit(&self) -> Option<f64> {
        // The engine's cycles are TSC ticks on x86_64, nanoseconds elsewhere (tsc_hz is then 1e9).
        Some(1e9 / flowbundle_inspect::cost::tsc_hz())
    }
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Stats(a) => run_stats(a),
        Command::Synth(a) => run_synth(a),
        Command::Merge(a) => run_merge(a),
        Command::Anonymize(a) => run_anonymize(a),
        Command::Rescale(a) => run_rescale(a),
        Command::Cut(a) => run_cut(a),
    }
}

fn run_stats(a: StatsArgs) -> anyhow::Result<()> {
    super::json_start(a.json.as_deref(), [&a.file])?;
    let mut cfg = StatsConfig {
        top: a.top,
        max_flows: a.max_flows,
        ..StatsConfig::default()
    };
    cfg.decode.decap_tunnels = a.decap;
    let progress = if a.no_progress {
        Progress::Hidden
    } else {
        Progress::Stderr
    };
    let mut collector = Collector::new(cfg);
    if a.cost {
        let signatures = match &a.signatures {
            Some(dir) => Some(flowbundle_run::reload::load_signatures(dir)?.0),
            None => None,
        };
        collector = collector.with_cost(Box::new(EngineCost::new(signatures)));
    }
    let s = stats::run_file(&a.file, collector, progress)
        .with_context(|| format!("trace stats {}", a.file.display()))?;
    if let Some(out) = &a.json {
        super::write_output(out, [&a.file], format!("{}\n", s.to_json()))?;
    }
    out!("{}", s.render_table());
    if s.read.truncated_records > 0 {
        eprintln!(
            "warning: {}: the last record is cut by the end of the file (read up to there)",
            a.file.display()
        );
    }
    if s.read.clamped_lengths > 0 {
        eprintln!(
            "warning: {}: {} packets claim an impossible original length; counted at their captured length",
            a.file.display(),
            s.read.clamped_lengths
        );
    }
    // A read error lost the rest of the file: the report stands for the packets before it, and the status says so
    // (as `inspect`'s does).
    if let Some(e) = &s.read.error {
        bail!(
            "trace stats {}: reading stopped early: {e} (the report covers the packets before)",
            a.file.display()
        );
    }
    Ok(())
}

// ---- synth, merge, anonymize, rescale, cut. Arguments are parsed into the library's types, which
// refuse bad values with the reason; the commands print a short summary (and JSON with `--json OUT`).

fn progress_of(no_progress: bool) -> flowbundle_trace::stats::Progress {
    if no_progress {
        flowbundle_trace::stats::Progress::Hidden
    } else {
        flowbundle_trace::stats::Progress::Stderr
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

#[derive(clap::Args)]
pub struct SynthArgs {
    /// Output pcap (gzip-compressed when the name ends in .gz).
    #[arg(short, long)]
    output: std::path::PathBuf,
    /// Start from an ANCS'10 Table 1 shape: dominant, many or balanced (the other options change it).
    #[arg(long)]
    profile: Option<String>,
    /// Packets to generate (with --profile: the profile scaled to this size, connections in proportion).
    #[arg(long)]
    packets: Option<u64>,
    /// TCP and UDP connections, the dominant one included.
    #[arg(long)]
    connections: Option<u64>,
    /// Zipf exponent of the connection sizes (0 = equal sizes, 1 = classic Zipf).
    #[arg(long)]
    zipf: Option<f64>,
    /// Share of all packets carried by one dominant connection (0 for none).
    #[arg(long)]
    dominant_share: Option<f64>,
    /// No other connection carries more than this share of the packets.
    #[arg(long)]
    max_flow_share: Option<f64>,
    /// Mean packets per train (a connection's packets back to back).
    #[arg(long)]
    train: Option<f64>,
    /// Connection density: distinct connections per 100 packets (ANCS'10).
    #[arg(long, conflicts_with = "concurrency")]
    density: Option<f64>,
    /// Concurrent connections, instead of a density target.
    #[arg(long)]
    concurrency: Option<u64>,
    /// Average rate, e.g. 50Mbit/s.
    #[arg(long, conflicts_with = "duration")]
    rate: Option<flowbundle_trace::rewrite::Rate>,
    /// Duration in seconds, instead of a rate.
    #[arg(long)]
    duration: Option<f64>,
    /// Peak rate (the maximum sustained over 1 ms), e.g. 150Mbit/s.
    #[arg(long)]
    peak: Option<flowbundle_trace::rewrite::Rate>,
    /// Share of connections over IPv6.
    #[arg(long)]
    ipv6_share: Option<f64>,
    /// Application mix by connections, e.g. http=2,tls=3,dns=2,quic=1 (http, tls, ssh, smtp, ftp, opaque-tcp, dns,
    /// quic, opaque-udp; unnamed applications get 0).
    #[arg(long)]
    mix: Option<String>,
    /// Random seed: the same seed gives the same bytes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the summary as JSON to this file, or to standard output with `-` (the text summary then goes to
    /// standard error).
    #[arg(long, value_name = "OUT")]
    json: Option<std::path::PathBuf>,
    /// Never show the progress bar (it appears on stderr after a second otherwise).
    #[arg(long)]
    no_progress: bool,
}

/// The generator's configuration from the options, with `packets` in place of `--packets`.
fn synth_config(
    a: &SynthArgs,
    packets: Option<u64>,
) -> anyhow::Result<flowbundle_trace::synth::SynthConfig> {
    use flowbundle_trace::synth::SynthConfig;
    let mut cfg = match &a.profile {
        Some(p) => SynthConfig::profile(p).ok_or_else(|| {
            anyhow::anyhow!(
                "unknown profile `{p}` (one of {})",
                SynthConfig::PROFILES.join(", ")
            )
        })?,
        None => SynthConfig::default(),
    };
    if let Some(n) = packets {
        cfg = if a.profile.is_some() {
            cfg.with_packets(n)
        } else {
            SynthConfig {
                packets: n,
                connections: (n / 20).max(1),
                ..cfg
            }
        };
    }
    if let Some(c) = a.connections {
        cfg.connections = c;
    }
    if let Some(z) = a.zipf {
        cfg.zipf = z;
    }
    if let Some(s) = a.dominant_share {
        cfg.dominant_share = s;
    }
    if let Some(s) = a.max_flow_share {
        cfg.max_flow_share = s;
    }
    if let Some(t) = a.train {
        cfg.train = t;
    }
    if let Some(d) = a.density {
        cfg.density = Some(d);
    }
    if let Some(k) = a.concurrency {
        cfg.density = None;
        cfg.concurrency = k;
    }
    if let Some(r) = a.rate {
        cfg.rate = Some(r);
        cfg.duration_s = None;
    }
    if let Some(d) = a.duration {
        cfg.duration_s = Some(d);
        cfg.rate = None;
    }
    if let Some(p) = a.peak {
        cfg.peak = Some(p);
    }
    if let Some(s) = a.ipv6_share {
        cfg.ipv6_share = s;
    }
    if let Some(m) = &a.mix {
        cfg.mix = flowbundle_trace::synth::parse_mix(m).map_err(anyhow::Error::msg)?;
    }
    cfg.seed = a.seed;
    Ok(cfg)
}

/// The fewest packets, from `asked` up, that the options deliver exactly (connections and the per-connection cap
/// grow with the packets, so a larger count fits where a smaller one does not); `None` if none up to a billion.
fn least_deliverable(a: &SynthArgs, asked: u64) -> Option<u64> {
    let works = |n: u64| synth_config(a, Some(n)).is_ok_and(|c| c.check_deliverable().is_ok());
    let mut lo = asked;
    let mut hi = asked.max(1);
    while !works(hi) {
        lo = hi;
        hi = hi.checked_mul(2).filter(|&h| h <= 1_000_000_000)?;
    }
    // `lo` fails (or is `asked`), `hi` works: bisect to the boundary.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if works(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

fn run_synth(a: SynthArgs) -> anyhow::Result<()> {
    super::json_start(a.json.as_deref(), [&a.output])?;
    use anyhow::Context as _;
    use flowbundle_trace::synth;
    let cfg = synth_config(&a, a.packets)?;
    if let Err(e) = cfg.check_deliverable() {
        match a.packets.and_then(|asked| least_deliverable(&a, asked)) {
            Some(least) => {
                anyhow::bail!("{e}; the fewest these options deliver is --packets {least}")
            }
            None => return Err(e.into()),
        }
    }
    let s = synth::write_pcap(&cfg, &a.output, progress_of(a.no_progress))
        .with_context(|| format!("trace synth -o {}", a.output.display()))?;
    if let Some(out) = &a.json {
        let json = format!("{}\n", flowbundle_trace::rewrite::to_json(&s)?);
        super::write_output(out, [&a.output], json)?;
    }
    let secs = s.duration_s();
    outln!(
        "{}: {} packets, {} connections ({} concurrent), {:.3} s, {} Mb/s average",
        a.output.display(),
        s.packets,
        s.connections,
        s.concurrency,
        secs,
        opt(
            (secs > 0.0).then(|| s.wire_bytes as f64 * 8.0 / secs / 1e6),
            2
        ),
    );
    if s.dominant_packets > 0 {
        outln!(
            "dominant connection: {} packets ({:.1}%)",
            s.dominant_packets,
            100.0 * s.dominant_packets as f64 / s.packets.max(1) as f64
        );
    }
    for c in s.apps.iter().filter(|c| c.connections > 0) {
        outln!(
            "  {:<11} {:>9} connections {:>11} packets",
            c.app.name(),
            c.connections,
            c.packets
        );
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// Input captures (pcap or pcapng, gzip or not).
    #[arg(required = true)]
    inputs: Vec<std::path::PathBuf>,
    /// Output pcap.
    #[arg(short, long)]
    output: std::path::PathBuf,
    /// Include every input K times (K-times aggregation), each copy time-shifted and in its own address space.
    #[arg(long, default_value_t = 1)]
    factor: u32,
    /// Seconds between successive copies of --factor (default 1).
    #[arg(long)]
    shift: Option<f64>,
    /// Also remap the inner addresses of tunnelled packets.
    #[arg(long)]
    tunnels: bool,
    /// Most distinct (input, address) pairs remapped before refusing (memory cap).
    #[arg(long, default_value_t = flowbundle_trace::merge::DEFAULT_MAX_ADDRESSES)]
    max_addresses: usize,
    /// Skip the before/after aggregation metrics (faster).
    #[arg(long)]
    no_report: bool,
    /// Write the summary as JSON to this file, or to standard output with `-` (the text summary then goes to
    /// standard error).
    #[arg(long, value_name = "OUT")]
    json: Option<std::path::PathBuf>,
    /// Never show the progress bar (it appears on stderr after a second otherwise).
    #[arg(long)]
    no_progress: bool,
}

fn print_aggregation(label: &str, a: &flowbundle_trace::merge::Aggregation) -> anyhow::Result<()> {
    outln!(
        "  {label:<40} {:>10} pkts {:>8} flows  unique flow rate {:>6}  window {:>9}  density {:>6}",
        a.packets,
        a.flows,
        opt(a.unique_flow_rate, 3),
        opt(a.avg_window, 1),
        opt(a.connection_density, 1),
    );
    Ok(())
}

fn run_merge(a: MergeArgs) -> anyhow::Result<()> {
    super::json_start(a.json.as_deref(), a.inputs.iter().chain([&a.output]))?;
    use anyhow::Context as _;
    use flowbundle_trace::merge::{MergeConfig, merge_files};
    let shift_ns = match a.shift {
        Some(s) if s.is_finite() && (0.0..1e9).contains(&s) => Some((s * 1e9).round() as u64),
        Some(s) => anyhow::bail!("--shift must be a non-negative number of seconds, not {s}"),
        None => None,
    };
    let cfg = MergeConfig {
        factor: a.factor,
        shift_ns,
        tunnels: a.tunnels,
        max_addresses: a.max_addresses,
        report: !a.no_report,
        progress: progress_of(a.no_progress),
    };
    super::check_output(&a.output, &a.inputs)?;
    let r = merge_files(&a.inputs, &a.output, &cfg)
        .with_context(|| format!("trace merge -o {}", a.output.display()))?;
    if let Some(out) = &a.json {
        let json = format!("{}\n", flowbundle_trace::rewrite::to_json(&r)?);
        super::write_output(out, a.inputs.iter().chain([&a.output]), json)?;
    }
    outln!(
        "{}: {} packets from {} input(s) × {}, {} addresses remapped{}",
        a.output.display(),
        r.counts.written,
        r.inputs.len(),
        r.factor,
        r.distinct_addresses,
        if r.counts.dropped_link_type > 0 {
            format!(
                ", {} packets of unconvertible link types left out",
                r.counts.dropped_link_type
            )
        } else {
            String::new()
        }
    );
    for i in &r.inputs {
        if let Some(b) = &i.before {
            print_aggregation(&i.path, b)?;
        }
    }
    if let Some(after) = &r.after {
        print_aggregation("merged", after)?;
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct AnonymizeArgs {
    /// Input capture.
    input: std::path::PathBuf,
    /// Output pcap.
    #[arg(short, long)]
    output: std::path::PathBuf,
    /// sn1, sn2, sn3 (Verdú thesis §3.3.1) or prefix (Crypto-PAn, prefix-preserving).
    #[arg(long)]
    method: flowbundle_trace::anonymize::Method,
    /// Secret for sn3 and prefix: 64 hex digits (a Crypto-PAn key) or any passphrase.
    #[arg(long)]
    key: Option<String>,
    /// Seed for sn3 without --key.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// keep, strip (cut after the transport header) or truncate:N (keep N payload bytes).
    #[arg(long, default_value = "keep")]
    payload: flowbundle_trace::anonymize::PayloadMode,
    /// Also rewrite the inner addresses of tunnelled packets.
    #[arg(long)]
    tunnels: bool,
    /// Also map the addresses DNS answers carry (A and AAAA records), as the IP headers are mapped; without it they
    /// are left as they were, and counted.
    #[arg(long)]
    dns: bool,
    /// Most distinct addresses sn1/sn2 number before refusing (memory cap).
    #[arg(long, default_value_t = flowbundle_trace::anonymize::DEFAULT_MAX_ADDRESSES)]
    max_addresses: usize,
    /// Write the summary as JSON to this file, or to standard output with `-` (the text summary then goes to
    /// standard error).
    #[arg(long, value_name = "OUT")]
    json: Option<std::path::PathBuf>,
    /// Never show the progress bar (it appears on stderr after a second otherwise).
    #[arg(long)]
    no_progress: bool,
}

fn run_anonymize(a: AnonymizeArgs) -> anyhow::Result<()> {
    super::json_start(a.json.as_deref(), [&a.input, &a.output])?;
    use anyhow::Context as _;
    use flowbundle_trace::anonymize::{AnonymizeConfig, anonymize_file};
    let cfg = AnonymizeConfig {
        key: a.key,
        seed: a.seed,
        payload: a.payload,
        tunnels: a.tunnels,
        max_addresses: a.max_addresses,
        dns: a.dns,
        progress: progress_of(a.no_progress),
        ..AnonymizeConfig::new(a.method)
    };
    super::check_output(&a.output, [&a.input])?;
    let r = anonymize_file(&a.input, &a.output, &cfg)
        .with_context(|| format!("trace anonymize {}", a.input.display()))?;
    if r.dns_addresses_left > 0 {
        eprintln!(
            "warning: {} addresses in DNS answers (A/AAAA records) were left as they were; --dns maps them as the \
             IP headers are mapped",
            r.dns_addresses_left
        );
    }
    if let Some(out) = &a.json {
        let json = format!("{}\n", flowbundle_trace::rewrite::to_json(&r)?);
        super::write_output(out, [&a.input, &a.output], json)?;
    }
    outln!(
        "{}: {} packets, {} IP headers rewritten ({} ICMP quotes, {} ARP, {} tunnelled), {} payloads cut ({} bytes), {} DNS answer addresses mapped",
        a.output.display(),
        r.counts.written,
        r.rewrite.ip_packets,
        r.rewrite.icmp_quoted,
        r.rewrite.arp_packets,
        r.rewrite.tunnel_inner,
        r.payload_cut_packets,
        r.payload_cut_bytes,
        r.dns_addresses_mapped
    );
    Ok(())
}

#[derive(clap::Args)]
#[group(skip)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["rate", "factor"])))]
pub struct RescaleArgs {
    /// Input capture.
    input: std::path::PathBuf,
    /// Output pcap.
    #[arg(short, long)]
    output: std::path::PathBuf,
    /// The average rate of the output, e.g. 10Gbit/s.
    #[arg(long)]
    rate: Option<flowbundle_trace::rewrite::Rate>,
    /// Multiply the rate by F (2 = twice as fast, half the duration).
    #[arg(long)]
    factor: Option<f64>,
    /// Write the summary as JSON to this file, or to standard output with `-` (the text summary then goes to
    /// standard error).
    #[arg(long, value_name = "OUT")]
    json: Option<std::path::PathBuf>,
    /// Never show the progress bar (it appears on stderr after a second otherwise).
    #[arg(long)]
    no_progress: bool,
}

fn run_rescale(a: RescaleArgs) -> anyhow::Result<()> {
    super::json_start(a.json.as_deref(), [&a.input, &a.output])?;
    use anyhow::Context as _;
    use flowbundle_trace::rescale::{RescaleConfig, RescaleTarget, rescale_file};
    let target = match (a.rate, a.factor) {
        (Some(r), _) => RescaleTarget::Rate(r),
        (None, Some(f)) => RescaleTarget::Factor(f),
        (None, None) => anyhow::bail!("give --rate or --factor"),
    };
    let cfg = RescaleConfig {
        target,
        progress: progress_of(a.no_progress),
    };
    super::check_output(&a.output, [&a.input])?;
    let r = rescale_file(&a.input, &a.output, &cfg)
        .with_context(|| format!("trace rescale {}", a.input.display()))?;
    if let Some(out) = &a.json {
        let json = format!("{}\n", flowbundle_trace::rewrite::to_json(&r)?);
        super::write_output(out, [&a.input, &a.output], json)?;
    }
    outln!(
        "{}: {} packets, {:.6} s → {:.6} s, {:.3} → {:.3} Mb/s (×{:.4})",
        a.output.display(),
        r.counts.written,
        r.duration_before_ns as f64 / 1e9,
        r.duration_after_ns as f64 / 1e9,
        r.rate_before_bps / 1e6,
        r.rate_after_bps / 1e6,
        r.factor
    );
    Ok(())
}

#[derive(clap::Args)]
#[group(skip)]
#[command(group(clap::ArgGroup::new("range").required(true).multiple(true).args(["packets", "time"])))]
pub struct CutArgs {
    /// Input capture.
    input: std::path::PathBuf,
    /// Output pcap.
    #[arg(short, long)]
    output: std::path::PathBuf,
    /// Packet numbers as Wireshark shows them (from 1): A..B (B excluded), A..=B, A.., ..B, or N.
    #[arg(long)]
    packets: Option<flowbundle_trace::rewrite::PacketRange>,
    /// T1..T2 or T1..=T2: seconds from the first packet (1.5), @UNIX-SECONDS, or RFC 3339 times.
    #[arg(long)]
    time: Option<flowbundle_trace::rewrite::TimeRange>,
    /// Write the summary as JSON to this file, or to standard output with `-` (the text summary then goes to
    /// standard error).
    #[arg(long, value_name = "OUT")]
    json: Option<std::path::PathBuf>,
    /// Never show the progress bar (it appears on stderr after a second otherwise).
    #[arg(long)]
    no_progress: bool,
}

fn run_cut(a: CutArgs) -> anyhow::Result<()> {
    super::json_start(a.json.as_deref(), [&a.input, &a.output])?;
    use anyhow::Context as _;
    use flowbundle_trace::cut::{CutConfig, cut_file};
    let cfg = CutConfig {
        packets: a.packets,
        time: a.time,
        progress: progress_of(a.no_progress),
    };
    super::check_output(&a.output, [&a.input])?;
    let r = cut_file(&a.input, &a.output, &cfg)
        .with_context(|| format!("trace cut {}", a.input.display()))?;
    if let Some(out) = &a.json {
        let json = format!("{}\n", flowbundle_trace::rewrite::to_json(&r)?);
        super::write_output(out, [&a.input, &a.output], json)?;
    }
    outln!(
        "{}: {} of {} packets read{}",
        a.output.display(),
        r.counts.written,
        r.counts.read,
        match (r.first_kept, r.last_kept) {
            (Some(f), Some(l)) => format!(" (packets {f} to {l})"),
            _ => String::new(),
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// `flowbundle trace ...` alone, so the tests do not depend on the other command groups.
    #[derive(Parser)]
    struct Trace {
        #[command(subcommand)]
        command: Command,
    }

    fn parse(args: &[&str]) -> Result<Command, String> {
        Trace::try_parse_from(std::iter::once("trace").chain(args.iter().copied()))
            .map(|t| t.command)
            .map_err(|e| e.to_string())
    }

    /// Parses and runs; the error message (with its causes) when either fails.
    fn run_args(args: &[&str]) -> Result<(), String> {
        run(parse(args)?).map_err(|e| format!("{e:#}"))
    }

    fn tmp(name: &str) -> String {
        let dir = std::env::temp_dir().join(format!("flowbundle-cli-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name).display().to_string()
    }

    #[track_caller]
    fn refused(args: &[&str], why: &str) {
        match run_args(args) {
            Ok(()) => panic!("{args:?} was accepted"),
            Err(e) => assert!(e.contains(why), "{args:?}: `{e}` does not say `{why}`"),
        }
    }

    #[test]
    fn bad_arguments_are_refused_with_the_reason() {
        let out = tmp("refused.pcap");
        refused(
            &["synth", "-o", &out, "--profile", "nope"],
            "unknown profile `nope` (one of dominant, many, balanced)",
        );
        refused(&["synth", "-o", &out, "--zipf=-3"], "zipf");
        refused(
            &["synth", "-o", &out, "--mix", "gopher=1"],
            "unknown application `gopher`",
        );
        refused(&["synth", "-o", &out, "--rate", "fast"], "is not a rate");
        refused(
            &["synth", "-o", &out, "--density", "5", "--concurrency", "4"],
            "cannot be used with",
        );
        refused(
            &["anonymize", "in.pcap", "-o", &out, "--method", "sn9"],
            "unknown anonymization method",
        );
        refused(
            &[
                "anonymize",
                "in.pcap",
                "-o",
                &out,
                "--method",
                "sn1",
                "--payload",
                "truncate:x",
            ],
            "payload",
        );
        refused(&["rescale", "in.pcap", "-o", &out], "required");
        refused(
            &[
                "rescale", "in.pcap", "-o", &out, "--rate", "1Gbit/s", "--factor", "2",
            ],
            "cannot be used with",
        );
        refused(&["cut", "in.pcap", "-o", &out], "required");
        refused(
            &["cut", "in.pcap", "-o", &out, "--packets", "9..3"],
            "packets",
        );
        refused(&["merge", "-o", &out], "required");
        refused(
            &["merge", "a.pcap", "-o", &out, "--shift=-1"],
            "--shift must be a non-negative number",
        );
        refused(&["stats", "in.pcap", "--signatures", "/tmp"], "--cost");
        refused(
            &["stats", "/nonexistent/capture.pcap"],
            "trace stats /nonexistent/capture.pcap",
        );
    }

    #[test]
    fn every_command_runs_on_a_generated_trace() {
        let s = tmp("synth.pcap");
        let args = ["--no-progress"];
        let with = |v: &[&str]| -> Vec<String> {
            v.iter().chain(args.iter()).map(|x| x.to_string()).collect()
        };
        let go = |v: Vec<String>| {
            let v: Vec<&str> = v.iter().map(String::as_str).collect();
            run_args(&v).unwrap_or_else(|e| panic!("{v:?}: {e}"));
        };
        go(with(&[
            "synth",
            "-o",
            &s,
            "--profile",
            "balanced",
            "--packets",
            "3000",
            "--seed",
            "7",
        ]));
        go(with(&["stats", &s, "--json", "-"]));
        go(with(&["stats", &s, "--cost"]));
        go(with(&["merge", &s, &s, "-o", &tmp("merged.pcap")]));
        go(with(&[
            "anonymize",
            &s,
            "-o",
            &tmp("anon.pcap"),
            "--method",
            "prefix",
            "--key",
            "k",
        ]));
        go(with(&[
            "rescale",
            &s,
            "-o",
            &tmp("fast.pcap"),
            "--rate",
            "1Gbit/s",
        ]));
        go(with(&[
            "cut",
            &s,
            "-o",
            &tmp("cut.pcap"),
            "--time",
            "0..0.5",
        ]));
        let merged =
            flowbundle_trace::stats::stats_file(tmp("merged.pcap"), &StatsConfig::default())
                .unwrap();
        assert_eq!(merged.packets, 6000, "merge keeps every packet");
        let _ = std::fs::remove_dir_all(std::path::Path::new(&s).parent().unwrap());
    }
}
