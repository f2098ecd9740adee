//! `flowbundle demo`: the whole project on a trace it makes itself, needing nothing outside the repository.
//!
//! 1. **Synthesize** a trace in memory with `flowbundle_trace::synth` (the `balanced` profile of ANCS'10 Table 1,
//!    scaled down to `--packets`): HTTP with gzip bodies, TLS, QUIC, DNS, SSH, FTP and opaque flows.
//! 2. **Inspect** it with the engine, single-threaded, with the built-in detectors and a small embedded rule set
//!    ([`RULES`]): the protocol summary, alert counts per rule, and the first EVE lines of each event type.
//! 3. **Bench** it: the ANCS'10 harness (`flowbundle bench --workload inspect`) runs the engine under every scheduler
//!    at 1 and 2 worker threads in raw mode and prints the throughput table and the life of a packet.
//!
//! The default size runs in a few seconds in a release build; the test in `tests/demo.rs` runs a small one.

use anyhow::Context;
use flowbundle_bench::harness::{BenchMode, HarnessConfig};
use flowbundle_bench::inspect::{InspectRunner, prep_options};
use flowbundle_bench::{sweep, table};
use flowbundle_inspect::rules::{RuleSet, Vars};
use flowbundle_inspect::{Engine, EngineConfig, Prestage};
use flowbundle_scheduler::SchedOptions;
use flowbundle_sinks::{RulesInfo, RunInfo, Summary};
use flowbundle_trace::synth::{SynthConfig, generate_trace};
use std::time::Instant;

/// The demo's rules: content rules that the synthetic traffic triggers (curl clients, API paths, SSH banners, and a
/// DNS query for the generator's default name), to show alerts without shipping a rule file.
pub const RULES: &str = r#"
alert tcp any any -> any any (msg:"DEMO curl user agent"; flow:to_server; content:"User-Agent: curl/"; sid:9000001; rev:1;)
alert tcp any any -> any any (msg:"DEMO API request"; flow:to_server; content:"GET /api/v1/"; depth:12; sid:9000002; rev:1;)
alert tcp any any -> any any (msg:"DEMO SSH client banner"; flow:to_server; content:"SSH-2.0-"; depth:8; sid:9000003; rev:1;)
alert http any any -> any any (msg:"DEMO gzip response"; flow:to_client; content:"Content-Encoding: gzip"; sid:9000004; rev:1;)
"#;

/// Build a demo trace, inspect it, and compare the schedulers on it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Packets of the synthetic trace (the `balanced` profile scaled down, connections in proportion).
    #[arg(long, default_value_t = 30_000)]
    packets: u64,

    /// Seed of the synthetic trace.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Worker thread counts for the bench, comma separated (0: every core).
    #[arg(long, default_value = "1,2", value_delimiter = ',')]
    threads: Vec<usize>,

    /// Raw runs per scheduler and thread count (the table reports the median).
    #[arg(long, default_value_t = 3)]
    reps: usize,

    /// EVE lines to print per event type.
    #[arg(long, default_value_t = 2)]
    eve: usize,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.packets == 0 {
        anyhow::bail!("--packets must be at least 1");
    }
    let threads = super::thread_counts(&args.threads, flowbundle_scheduler::MAX_WORKERS)?;

    // 1. The trace.
    let t = Instant::now();
    let mut synth = SynthConfig::profile("balanced").context("the balanced profile")?;
    synth = synth.with_packets(args.packets);
    synth.seed = args.seed;
    let (trace, made) = generate_trace(&synth).map_err(|e| anyhow::anyhow!("synth: {e}"))?;
    outln!(
        "== 1. Synthetic trace (profile balanced, seed {})\n",
        args.seed
    );
    outln!(
        "{} packets, {} bytes on the wire, {} connections over {:.2} s of capture time (generated in {:.2} s)",
        made.packets,
        made.wire_bytes,
        made.connections,
        match (made.first_ns, made.last_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
            _ => 0.0,
        },
        t.elapsed().as_secs_f64()
    );
    let apps: Vec<String> = made
        .apps
        .iter()
        .map(|a| format!("{:?} {}", a.app, a.connections))
        .collect();
    outln!("connections by application: {}\n", apps.join(", "));

    // 2. The engine, single-threaded, with the embedded rules.
    outln!(
        "== 2. Inspection (single-threaded, built-in detectors, {} embedded rules)\n",
        RULES.lines().filter(|l| !l.trim().is_empty()).count()
    );
    let (rules, report) = RuleSet::parse(RULES, &Vars::new()).context("the demo rules")?;
    let mut info = RunInfo {
        inputs: vec![format!("synthetic balanced ({} packets)", made.packets)],
        rules: Some(RulesInfo {
            loaded: report.loaded,
            skipped: report.skipped,
            errors: report.errors_total,
            skip_reasons: report.skip_reasons.clone().into_iter().collect(),
            config_lines_skipped: 0,
            dataset_lines_skipped: 0,
        }),
        rule_names: rules
            .rules()
            .iter()
            .map(|r| (r.sid, r.msg.to_string()))
            .collect(),
        ..RunInfo::default()
    };
    let cfg = EngineConfig::default();
    let mut engine = Engine::new(cfg.clone(), None, Some(rules));
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    let t = Instant::now();
    for (num, rec) in trace.iter().enumerate() {
        engine.process_serial(&mut ctx, &mut pre, num as u64, &rec);
    }
    let finished = engine.finish([ctx]);
    info.packets_read = trace.len() as u64;
    info.elapsed = Some(t.elapsed());
    let prestage = pre.stats();
    out!(
        "{}",
        Summary {
            finished: &finished,
            prestage: Some(&prestage),
            info: &info,
        }
    );
    let mut kinds: Vec<(&'static str, usize)> = Vec::new();
    for e in &finished.events {
        let k = e.kind.event_type();
        match kinds.iter_mut().find(|(n, _)| *n == k) {
            Some((_, c)) => *c += 1,
            None => kinds.push((k, 1)),
        }
    }
    kinds.sort();
    let counts: Vec<String> = kinds.iter().map(|(k, c)| format!("{k} {c}")).collect();
    outln!("\nEVE events: {}", counts.join(", "));
    outln!(
        "alerts: {}",
        kinds
            .iter()
            .find(|(k, _)| *k == "alert")
            .map_or(0, |(_, c)| *c)
    );
    if args.eve > 0 {
        outln!("\nFirst EVE lines of each type:");
        let mut buf = Vec::new();
        for (k, _) in &kinds {
            for e in finished
                .events
                .iter()
                .filter(|e| e.kind.event_type() == *k)
                .take(args.eve)
            {
                buf.clear();
                flowbundle_sinks::eve::render(&mut buf, e);
                outln!("{}", String::from_utf8_lossy(&buf));
            }
        }
    }

    // 3. The schedulers, with the engine as the workload.
    outln!(
        "\n== 3. Schedulers (flowbundle bench --workload inspect --mode raw, threads {:?}, median of {})\n",
        threads,
        args.reps.max(1)
    );
    let prep = flowbundle_bench::prepare(
        vec![("synthetic-balanced".into(), trace)],
        &prep_options(&cfg),
    );
    let runner = InspectRunner::new(cfg, &prep);
    let hc = HarnessConfig {
        schedulers: flowbundle_scheduler::ALL
            .iter()
            .map(|s| s.to_string())
            .collect(),
        threads: threads.clone(),
        mode: BenchMode::Raw,
        reps: args.reps.max(1),
        sched: SchedOptions {
            ph_late_claim: true,
            ..SchedOptions::default()
        },
        progress: true,
        ..HarnessConfig::default()
    };
    let t = Instant::now();
    let report = sweep(&prep, &runner, &hc)?;
    outln!("{}", table::header(&report));
    outln!("{}", table::summary(&report));
    outln!(
        "Life of a packet (mean per packet):\n\n{}",
        table::life(&report)
    );
    outln!("bench: {:.1} s", t.elapsed().as_secs_f64());
    Ok(())
}
