//! `flowbundle hetero ...`: packet applications on CPU and OpenCL devices, profiled and placed by policy (Pythia).

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use flowbundle_hetero::device;
use flowbundle_hetero::energy::PowerMeters;
use flowbundle_hetero::monitor::{Monitor, MonitorConfig, Policy};
use flowbundle_hetero::profiler::{ProfilerConfig, profile_device};
use flowbundle_hetero::runtime::{self, DeviceSet, Replay, RuntimeConfig};
use flowbundle_hetero::schedule::RateSchedule;
use flowbundle_hetero::sim::{RunLog, SimConfig, simulate};
use flowbundle_hetero::{Dfa, DfaLimits, PacketApp, Profile, payload};

/// The pattern file under `--data` used when `--patterns` is not given.
const DEFAULT_PATTERNS: &str = "rules/content-10k.hex";

#[derive(clap::Subcommand)]
pub enum Command {
    /// List the devices found (CPU pool, OpenCL devices) and the readable power sources.
    Devices(DevicesArgs),
    /// Measure every application × device × batch size × co-running kernels (the paper's Tables I–III).
    Profile(ProfileArgs),
    /// Place applications on devices under a policy with the online scheduler and a rate schedule.
    Run(RunArgs),
}

#[derive(clap::Args)]
pub struct DevicesArgs {
    /// Pattern file for the dpi kernel (`.hex`, or a Snort/Suricata rule file; default: rules/content-10k.hex
    /// under --data).
    #[arg(long)]
    patterns: Option<PathBuf>,
    /// The shared data folder: the default pattern file and the real payload are read from it (relative paths
    /// are taken from the working directory).
    #[arg(long, default_value = "../shared/data")]
    data: PathBuf,
}

#[derive(clap::Args)]
pub struct ProfileArgs {
    /// Applications, comma-separated.
    #[arg(long, default_value = "dpi,md5,aes", value_delimiter = ',')]
    apps: Vec<PacketApp>,
    /// Batch sizes in packets.
    #[arg(long, default_value = "1024,4096,16384", value_delimiter = ',')]
    batches: Vec<usize>,
    /// Co-running kernel counts.
    #[arg(long, default_value = "0,1,3", value_delimiter = ',')]
    coworkers: Vec<usize>,
    /// Co-worker applications.
    #[arg(long, default_value = "md5,aes,dpi", value_delimiter = ',')]
    coworker_apps: Vec<PacketApp>,
    /// Devices to profile (ids from `hetero devices`); default all.
    #[arg(long, value_delimiter = ',')]
    devices: Vec<String>,
    /// CPU pool threads (0 = every core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Shortest measuring window per configuration, milliseconds.
    #[arg(long, default_value_t = 300)]
    min_time_ms: u64,
    /// Payload bytes per packet (cut from real payload under --data).
    #[arg(long, default_value_t = 1500)]
    packet_bytes: usize,
    /// Pattern file for the dpi kernel (default: rules/content-10k.hex under --data).
    #[arg(long)]
    patterns: Option<PathBuf>,
    /// The shared data folder: the default pattern file and the real payload are read from it (relative paths
    /// are taken from the working directory).
    #[arg(long, default_value = "../shared/data")]
    data: PathBuf,
    /// Also append the modelled devices of the Pythia paper (labelled `modelled`).
    #[arg(long)]
    with_paper: bool,
    /// Write the table as JSON to this file, or to standard output with `-` (the text table then goes to standard
    /// error).
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Trace to replay on the real clock through the devices (CPU pool, OpenCL devices, modelled devices paced in
    /// real time). Without one, the monitor runs on a virtual clock against the profile alone.
    trace: Option<PathBuf>,
    /// Applications, comma-separated (one worker each).
    #[arg(long, default_value = "dpi,aes", value_delimiter = ',')]
    apps: Vec<PacketApp>,
    /// throughput, latency or energy.
    #[arg(long, default_value = "throughput")]
    policy: Policy,
    /// Offered rate per application over time, e.g. `0:5,10:20,20:5,15+0.5:40` (see `schedule` module docs).
    #[arg(long, default_value = "0:5,10:20,20:40,30:10")]
    rate_schedule: String,
    /// Policy changes on the fly, e.g. `15:energy`.
    #[arg(long, value_delimiter = ',')]
    policy_change: Vec<String>,
    /// Monitor interval, milliseconds.
    #[arg(long, default_value_t = 100)]
    interval_ms: u64,
    /// Run length, seconds (default: 10 s past the schedule's last change).
    #[arg(long)]
    duration: Option<f64>,
    /// Profile JSON from `hetero profile --json` (default: the Pythia paper's modelled devices).
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Restrict the candidate devices (ids in the profile).
    #[arg(long, value_delimiter = ',')]
    devices: Vec<String>,
    /// Decision log (JSON lines).
    #[arg(long, default_value = "hetero-decisions.jsonl")]
    log: PathBuf,
    /// Timeline SVG.
    #[arg(long, default_value = "hetero-timeline.svg")]
    svg: PathBuf,
    /// Real clock: slow motion for modelled devices. Their rates (and the offered rates) are multiplied by this
    /// factor, so this host's CPU, which computes their outputs, can keep up; decisions are those of the
    /// full-speed system. Measured devices are left out when it is below 1.
    #[arg(long, default_value_t = 1.0)]
    rate_scale: f64,
    /// Real clock: CPU pool threads (0 = every core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Real clock: pattern file for the dpi kernel (default: rules/content-10k.hex under --data).
    #[arg(long)]
    patterns: Option<PathBuf>,
    /// The shared data folder: the default pattern file and the real payload are read from it (relative paths
    /// are taken from the working directory).
    #[arg(long, default_value = "../shared/data")]
    data: PathBuf,
    /// Real clock: replay the trace once instead of looping over it.
    #[arg(long)]
    once: bool,
    /// Real clock: most packets waiting per application (arrivals beyond are dropped and counted).
    #[arg(long, default_value_t = 1 << 20)]
    max_backlog: usize,
    /// Write the full run report (per-application counters, applied placements, timeline) as JSON to this file, or
    /// to standard output with `-` (the text summary then goes to standard error). `--report` is an older spelling.
    #[arg(long = "json", alias = "report", value_name = "OUT")]
    report: Option<PathBuf>,
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Devices(a) => devices(a),
        Command::Profile(a) => profile(a),
        Command::Run(a) => run_sched(a),
    }
}

fn load_dfa(path: Option<PathBuf>, data: &std::path::Path) -> anyhow::Result<Arc<Dfa>> {
    let path = path.unwrap_or_else(|| data.join(DEFAULT_PATTERNS));
    let (dfa, bad) = Dfa::from_file(&path, DfaLimits::default())
        .with_context(|| format!("loading {}", path.display()))?;
    let st = dfa.stats();
    eprintln!(
        "dpi: {} patterns from {} ({} malformed lines skipped): {} states, stride {}, {:.1} MB table",
        st.patterns,
        path.display(),
        bad,
        st.states,
        st.stride,
        st.table_bytes as f64 / 1e6
    );
    Ok(Arc::new(dfa))
}

fn devices(a: DevicesArgs) -> anyhow::Result<()> {
    let dfa = load_dfa(a.patterns, &a.data)?;
    let (devs, notes) = device::discover(0, dfa);
    for n in notes {
        outln!("note: {n}");
    }
    for d in &devs {
        let i = d.info();
        outln!(
            "{:<8} {:<8} {:<9} {:>4} units  {}",
            i.id,
            i.kind.label(),
            format!("{:?}", i.memory).to_lowercase(),
            i.compute_units,
            i.name
        );
    }
    for id in Profile::pythia_paper().devices() {
        outln!("{id:<8} modelled (Pythia paper Tables I-III; use with `hetero run`)");
    }
    let meters = PowerMeters::open();
    for n in &meters.notes {
        outln!("power: {n}");
    }
    Ok(())
}

fn profile(a: ProfileArgs) -> anyhow::Result<()> {
    super::json_start(a.json.as_deref(), &a.patterns)?;
    let patterns = a.patterns.clone();
    let dfa = load_dfa(a.patterns, &a.data)?;
    let payloads = payload::real_payloads(&a.data, a.packet_bytes, 4096);
    if payloads.is_empty() {
        bail!(
            "no real payload found under {} ({}; pass --data DIR, the shared data folder)",
            a.data.display(),
            payload::CORPUS_DIRS.join(", ")
        );
    }
    let (mut devs, notes) = device::discover(a.threads, dfa);
    for n in notes {
        eprintln!("note: {n}");
    }
    if !a.devices.is_empty() {
        devs.retain(|d| a.devices.contains(&d.info().id));
    }
    let cfg = ProfilerConfig {
        apps: a.apps,
        batches: a.batches,
        coworkers: a.coworkers,
        coworker_apps: a.coworker_apps,
        min_time: Duration::from_millis(a.min_time_ms),
        min_batches: 2,
    };
    let mut meters = PowerMeters::open();
    for n in &meters.notes {
        eprintln!("power: {n}");
    }
    let mut table = Profile::default();
    table.notes.push(format!(
        "packets of {} bytes of real payload; command: {}",
        a.packet_bytes,
        std::env::args().collect::<Vec<_>>().join(" ")
    ));
    for d in &mut devs {
        let p = profile_device(d.as_mut(), &payloads, &cfg, &mut meters, |line| {
            eprintln!("{line}")
        })?;
        table.merge(p);
    }
    if a.with_paper {
        table.merge(Profile::pythia_paper());
    }
    out!("{}", table.render_table());
    if let Some(path) = a.json {
        super::write_output(&path, &patterns, table.to_json())?;
        if path.as_os_str() != "-" {
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}

fn run_sched(a: RunArgs) -> anyhow::Result<()> {
    let inputs: Vec<&std::path::Path> = a
        .trace
        .iter()
        .chain(&a.profile)
        .chain(&a.patterns)
        .map(PathBuf::as_path)
        .collect();
    super::json_start(a.report.as_deref(), &inputs)?;
    for out in [&a.log, &a.svg] {
        super::check_output(out, &inputs)?;
    }
    let profile = match &a.profile {
        Some(p) => Profile::from_json(
            &std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
        )?,
        None => Profile::pythia_paper(),
    };
    let schedule = RateSchedule::parse(&a.rate_schedule).map_err(anyhow::Error::msg)?;
    let mut policy_changes = Vec::new();
    for c in &a.policy_change {
        let (t, p) = c
            .split_once(':')
            .context("--policy-change wants TIME:POLICY")?;
        policy_changes.push((
            t.trim().trim_end_matches('s').parse::<f64>()?,
            p.parse::<Policy>().map_err(anyhow::Error::msg)?,
        ));
    }
    if !(a.rate_scale > 0.0 && a.rate_scale <= 1.0) {
        bail!("--rate-scale must be in (0, 1]");
    }
    let (profile, schedule) = if a.rate_scale < 1.0 {
        (profile.slowed(a.rate_scale), schedule.scaled(a.rate_scale))
    } else {
        (profile, schedule)
    };
    let mut cfg = MonitorConfig::from_profile(&profile);
    if !a.devices.is_empty() {
        cfg.devices.retain(|d| a.devices.contains(d));
    }
    if cfg.devices.is_empty() {
        bail!(
            "no candidate device left (profile devices: {:?})",
            profile.devices()
        );
    }
    if let Some(trace) = a.trace.clone() {
        return run_real(a, trace, profile, cfg, schedule, policy_changes);
    }
    let modelled: Vec<String> = cfg
        .devices
        .iter()
        .filter(|d| profile.kind_of(d) == Some(device::DeviceKind::Modelled))
        .cloned()
        .collect();
    let profile = Arc::new(profile);
    let mut monitor = Monitor::new(profile, a.policy, cfg, &a.apps);
    let duration = a.duration.unwrap_or(schedule.last_change() + 10.0);
    let sim = SimConfig {
        interval_s: a.interval_ms as f64 / 1000.0,
        step_s: (a.interval_ms as f64 / 1000.0) / 10.0,
        duration_s: duration,
        policy_changes,
    };
    let schedules = vec![schedule; a.apps.len()];
    let log = simulate(&mut monitor, &a.apps, &schedules, &sim);
    write_decisions(&log, &a.log)?;
    let title = format!(
        "hetero run: {} under {:?} policy, virtual clock{}",
        a.apps
            .iter()
            .map(|x| x.name())
            .collect::<Vec<_>>()
            .join("+"),
        a.policy,
        if modelled.is_empty() {
            String::new()
        } else {
            format!(", modelled devices: {}", modelled.join(", "))
        }
    );
    flowbundle_hetero::plot::timeline_svg(&log, &a.svg, &title).map_err(anyhow::Error::msg)?;
    outln!(
        "{} decisions -> {}; timeline -> {}; {:.2} Gbit dropped (virtual clock; power estimated from the profile's model)",
        log.decisions.len(),
        a.log.display(),
        a.svg.display(),
        log.dropped_bits / 1e9
    );
    Ok(())
}

/// A rate with the digits it needs: slow-motion runs (`--rate-scale`) offer a few Mbit/s, which `{:.1}` shows as 0.
fn gbps(x: f64) -> String {
    if x.abs() >= 1.0 || x == 0.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.4}")
    }
}

/// Writes the decision log (JSON lines) and prints one line per decision.
fn write_decisions(log: &RunLog, path: &std::path::Path) -> anyhow::Result<()> {
    // The inputs were compared with this path before the run (`run_sched`).
    let mut f = super::Output::open(path, std::iter::empty::<&std::path::Path>())?;
    for d in &log.decisions {
        writeln!(f, "{}", d.to_json_line())?;
        let from = d.from.as_ref().map_or("-".to_string(), |p| {
            format!("{}/{}", p.devices.join("+"), p.batch)
        });
        outln!(
            "{:7.2}s {:<4} {:<15} {} -> {}/{}  offered {} Gbit/s, capacity {}, latency {:.0} µs, power {:.1} W",
            d.t_s,
            d.app.name(),
            format!("{:?}", d.action),
            from,
            d.to.devices.join("+"),
            d.to.batch,
            gbps(d.offered_gbps),
            gbps(d.capacity_gbps),
            d.latency_us,
            d.power_w
        );
    }
    f.finish()
}

/// `hetero run TRACE`: the real-clock runtime.
fn run_real(
    a: RunArgs,
    trace_path: PathBuf,
    profile: Profile,
    cfg: MonitorConfig,
    schedule: RateSchedule,
    policy_changes: Vec<(f64, Policy)>,
) -> anyhow::Result<()> {
    let dfa = load_dfa(a.patterns.clone(), &a.data)?;
    let trace = flowbundle_ingest::Trace::load(&trace_path)
        .with_context(|| format!("loading {}", trace_path.display()))?;
    let replay = Replay::new(&trace);
    let rc = replay.counters();
    eprintln!(
        "replay: {} of {} packets ({} flows, {:.1} MB of payload per pass); not replayed: {} without IP, {} without payload",
        rc.replayed,
        rc.packets,
        rc.flows,
        rc.payload_bytes as f64 / 1e6,
        rc.no_flow_key,
        rc.empty_payload
    );
    let profile = Arc::new(profile);
    let devices = DeviceSet::open(&cfg.devices, &profile, &dfa, a.threads)?;
    for n in devices.notes() {
        eprintln!("note: {n}");
    }
    let modelled: Vec<String> = cfg
        .devices
        .iter()
        .filter(|d| profile.kind_of(d) == Some(device::DeviceKind::Modelled))
        .cloned()
        .collect();
    let peak = schedule
        .steps
        .iter()
        .chain(&schedule.bursts)
        .map(|c| c.gbps)
        .fold(0.0, f64::max);
    if !modelled.is_empty() && peak > 1.0 {
        eprintln!(
            "warning: modelled devices compute their outputs on this host's CPU; at {peak:.1} Gbit/s per application \
             they will fall behind their model. Use --rate-scale (e.g. 0.01) for slow motion."
        );
    }
    let mut monitor = Monitor::new(profile.clone(), a.policy, cfg, &a.apps);
    let duration = a.duration.unwrap_or(schedule.last_change() + 10.0);
    let mut rcfg = RuntimeConfig::new(&a.apps, &schedule);
    rcfg.interval = Duration::from_millis(a.interval_ms.max(1));
    rcfg.duration = Duration::from_secs_f64(duration.max(0.0));
    rcfg.loop_trace = !a.once;
    rcfg.max_backlog_packets = a.max_backlog.max(1);
    rcfg.flush_after = rcfg.interval / 2;
    rcfg.policy_changes = policy_changes;
    let report = runtime::run(&replay, &devices, &mut monitor, &rcfg, &|_| {})?;
    write_decisions(&report.log, &a.log)?;
    for r in &report.apps {
        let secs = report.wall_s.max(1e-9);
        outln!(
            "{:<4} released {} packets ({:.3} Gbit/s), processed {} ({:.3} Gbit/s), dropped {}, failed {}, left at the end {}, {} batches, {} placements applied ({} with a drain){}",
            r.app.map_or("-", |x| x.name()),
            r.arrived_packets,
            r.arrived_bytes as f64 * 8.0 / secs / 1e9,
            r.processed_packets,
            r.processed_bytes as f64 * 8.0 / secs / 1e9,
            r.dropped_packets,
            r.failed_packets,
            r.unprocessed_at_end,
            r.batches,
            r.applied.len(),
            r.applied.iter().filter(|x| x.drained).count(),
            if r.errors.is_empty() {
                String::new()
            } else {
                format!("; errors: {}", r.errors.join("; "))
            }
        );
    }
    for n in &report.notes {
        outln!("note: {n}");
    }
    let power = report
        .log
        .samples
        .first()
        .map_or("-", |s| s.power_source.label());
    let title = format!(
        "hetero run {}: {} under {:?} policy, real clock, power {power}{}{}",
        trace_path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        a.apps
            .iter()
            .map(|x| x.name())
            .collect::<Vec<_>>()
            .join("+"),
        a.policy,
        if modelled.is_empty() {
            String::new()
        } else {
            format!(", modelled devices: {}", modelled.join(", "))
        },
        if a.rate_scale < 1.0 {
            format!(", slow motion ×{}", a.rate_scale)
        } else {
            String::new()
        }
    );
    flowbundle_hetero::plot::timeline_svg(&report.log, &a.svg, &title)
        .map_err(anyhow::Error::msg)?;
    if let Some(p) = &a.report {
        super::write_output(p, std::iter::empty::<&std::path::Path>(), report.to_json())?;
    }
    outln!(
        "{} decisions -> {}; timeline -> {}; {:.1} s on the real clock",
        report.log.decisions.len(),
        a.log.display(),
        a.svg.display(),
        report.wall_s
    );
    Ok(())
}
