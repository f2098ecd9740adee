//! Content-rule throughput: the single-threaded inspection loop of `flowbundle inspect` on one trace,
//! without rules and with `content-10k.hex` loaded as 10,000 content rules, alternated in one process.
//!
//! ```text
//! cargo run --release -p flowbundle-inspect --example bench_rules -- [--reps N] [--only none|rules] [--stats] --hex content-10k.hex TRACE
//! (`--hex FILE.rules` loads a Snort/Suricata rule file instead, e.g. `snort3-community.rules`)
//! ```
//!
//! The trace is loaded into memory once (so the disk and the page cache stay out of the figure); each repetition
//! builds a fresh engine (the rule set is compiled before the clock starts), streams every packet through
//! [`Engine::process_serial`] as the CLI's default path does (events taken every 1,024 and dropped), and finishes.
//! Time is the thread's CPU time (`/proc/thread-self/schedstat`, nanoseconds), which a noisy shared machine
//! disturbs less than wall time; runs alternate (none, rules, none, rules, ...) so drifts hit both alike. Printed: a
//! line per run and a final `bench_rules:` line with the minimum and median of each, Gbit/s over the trace's
//! captured bytes, and the ratio with-rules / no-rules (the issue's goal: below 1.5).

use std::path::PathBuf;
use std::time::Instant;

use flowbundle_ingest::Trace;
use flowbundle_inspect::rules::RuleSet;
use flowbundle_inspect::{Engine, EngineConfig, Prestage};

/// CPU time of the calling thread in nanoseconds, from the scheduler's statistics; falls back to wall time where the
/// file is missing (the caller says which it used).
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

struct Run {
    cpu_s: f64,
    wall_s: f64,
    alerts: u64,
    /// Bytes the rules inspected (stream, packet, HTTP) and fast-pattern hits.
    scanned: (u64, u64, u64, u64),
    /// Every counter of the rules, printed with `--stats`.
    stats: flowbundle_inspect::rules::ScanStats,
}

fn run(trace: &Trace, rules: Option<RuleSet>) -> Run {
    let mut engine = Engine::new(EngineConfig::default(), None, rules);
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    let mut events = Vec::new();
    let wall = Instant::now();
    let c0 = thread_cpu_ns();
    for (num, rec) in trace.iter().enumerate() {
        engine.process_serial(&mut ctx, &mut pre, num as u64, &rec);
        if ctx.pending_events() >= 1024 {
            ctx.take_events(&mut events);
            events.clear();
        }
    }
    let fin = engine.finish([ctx]);
    let c1 = thread_cpu_ns();
    let wall_s = wall.elapsed().as_secs_f64();
    let cpu_s = match (c0, c1) {
        (Some(a), Some(b)) => (b.saturating_sub(a)) as f64 / 1e9,
        _ => wall_s,
    };
    Run {
        cpu_s,
        wall_s,
        alerts: fin.stats.alerts,
        scanned: (
            fin.stats.rules.stream_bytes,
            fin.stats.rules.packet_bytes,
            fin.stats.rules.http_bytes,
            fin.stats.rules.prefilter_hits,
        ),
        stats: fin.stats.rules,
    }
}

fn stats(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let min = v.first().copied().unwrap_or(0.0);
    let med = v.get(v.len() / 2).copied().unwrap_or(0.0);
    (min, med)
}

fn main() {
    let mut reps = 3usize;
    let mut hex: Option<PathBuf> = None;
    let mut file: Option<PathBuf> = None;
    // `--only none|rules`: run one side only (for a profiler; the ratio then needs both).
    let mut only: Option<String> = None;
    let mut stats_out = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--reps" => reps = args.next().and_then(|v| v.parse().ok()).unwrap_or(3).max(1),
            "--hex" => hex = args.next().map(PathBuf::from),
            "--only" => only = args.next(),
            "--stats" => stats_out = true,
            _ => file = Some(PathBuf::from(a)),
        }
    }
    let (Some(hex), Some(file)) = (hex, file) else {
        eprintln!("usage: bench_rules [--reps N] --hex content-10k.hex TRACE");
        std::process::exit(2);
    };
    let trace = match Trace::load(&file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", file.display());
            std::process::exit(2);
        }
    };
    // A `.rules` file is read as a rule set (ET Open's files, `snort3-community.rules`); anything else as hex patterns.
    let load = |hex: &PathBuf| match if hex.extension().is_some_and(|e| e == "rules") {
        RuleSet::load_files(std::slice::from_ref(hex))
    } else {
        RuleSet::from_content_hex(hex)
    } {
        Ok((set, report)) => (set, report),
        Err(e) => {
            eprintln!("{}: {e}", hex.display());
            std::process::exit(2);
        }
    };
    let (_, report) = load(&hex);
    println!("rules: {}", report.summary().lines().next().unwrap_or(""));
    let bytes = trace.bytes();
    println!(
        "trace: {} packets, {bytes} bytes; clock: {}",
        trace.len(),
        if thread_cpu_ns().is_some() {
            "thread CPU time"
        } else {
            "wall time"
        }
    );
    let (mut none, mut with) = (Vec::new(), Vec::new());
    let mut alerts = 0;
    for rep in 0..reps {
        if only.as_deref() != Some("rules") {
            let r = run(&trace, None);
            println!(
                "rep {rep} no-rules: cpu {:.3} s, wall {:.3} s",
                r.cpu_s, r.wall_s
            );
            none.push(r.cpu_s);
        }
        if only.as_deref() == Some("none") {
            continue;
        }
        let (set, _) = load(&hex);
        let r = run(&trace, Some(set));
        println!(
            "rep {rep} rules:    cpu {:.3} s, wall {:.3} s, {} alerts",
            r.cpu_s, r.wall_s, r.alerts
        );
        if rep == 0 {
            let (st, pk, ht, hits) = r.scanned;
            println!(
                "rules inspected: stream {st} B, packets {pk} B, http {ht} B; {hits} fast-pattern hits"
            );
            if stats_out {
                println!("{:#?}", r.stats);
            }
        }
        alerts = r.alerts;
        with.push(r.cpu_s);
    }
    let (n_min, n_med) = stats(&mut none);
    let (w_min, w_med) = stats(&mut with);
    let gbps = |s: f64| {
        if s > 0.0 {
            bytes as f64 * 8.0 / s / 1e9
        } else {
            0.0
        }
    };
    println!(
        "bench_rules: packets={} bytes={bytes} reps={reps} alerts={alerts} none_min_s={n_min:.3} none_med_s={n_med:.3} \
         rules_min_s={w_min:.3} rules_med_s={w_med:.3} none_gbps={:.3} rules_gbps={:.3} ratio_min={:.3} ratio_med={:.3}",
        trace.len(),
        gbps(n_min),
        gbps(w_min),
        if n_min > 0.0 { w_min / n_min } else { 0.0 },
        if n_med > 0.0 { w_med / n_med } else { 0.0 },
    );
}
