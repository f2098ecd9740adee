//! Where do workers idle in a raw run? Runs the `inspect` workload on a trace under one policy and prints, from the
//! per-packet records: run time, each worker's idle time split into the start (before its first packet), the middle
//! and the tail (after its last packet, until the run ends), the gaps in the middle by size, and the dispatcher's
//! refusals and sleeps. A diagnostic for the 1 → 2 worker speedup (BENCHMARKS.md, "Schedulers and runtime").
//!
//! `cargo run --release -p flowbundle-bench --example idle_timeline -- TRACE [POLICY] [THREADS] [REPS]`

use flowbundle_bench::harness::{BenchMode, HarnessConfig};
use flowbundle_bench::inspect::{InspectRunner, prep_options};
use flowbundle_bench::{Runner, prepare_files};
use flowbundle_inspect::EngineConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(trace) = args.get(1) else {
        eprintln!("usage: idle_timeline TRACE [POLICY] [THREADS] [REPS]");
        return Ok(());
    };
    let policy = args.get(2).map_or("lfb", String::as_str);
    let threads: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2);
    let reps: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(3);
    let cfg = EngineConfig::default();
    let prep = prepare_files(&[trace.into()], &prep_options(&cfg))?;
    let runner = InspectRunner::new(cfg, &prep);
    let hc = HarnessConfig {
        mode: BenchMode::Raw,
        reps: 1,
        cache_counters: false,
        ..HarnessConfig::default()
    };
    for _ in 0..reps {
        let (self0, main0) = (cpu_ns(libc::RUSAGE_SELF), cpu_ns(libc::RUSAGE_THREAD));
        let m = runner.measure(&prep, policy, threads, &hc, None)?;
        // CPU of the dispatcher and workers: the process's, less this (the calling) thread's, which builds and
        // finishes the engine and otherwise waits in the join.
        let run_cpu = (cpu_ns(libc::RUSAGE_SELF) - self0) - (cpu_ns(libc::RUSAGE_THREAD) - main0);
        let r = &m.report;
        let Some(rec) = &r.records else { continue };
        let end = r.start_ns + r.elapsed_ns;
        println!(
            "{policy} × {threads}: {:.3} Mpps, {:.1} ms; dispatcher: {} refusals, {} sleeps, done dispatching at {:.1} ms",
            m.pps / 1e6,
            r.elapsed_ns as f64 / 1e6,
            r.dispatcher.full_waits,
            r.dispatcher.sleeps,
            r.dispatcher.end_ns.saturating_sub(r.start_ns) as f64 / 1e6
        );
        let busy: u64 = r.workers.iter().map(|w| w.busy_ns).sum();
        println!(
            "  CPU of dispatcher + workers: {:.1} ms = {:.2} cores over the run ({:.1} ms of it inside packets)",
            run_cpu as f64 / 1e6,
            run_cpu as f64 / r.elapsed_ns.max(1) as f64,
            busy as f64 / 1e6
        );
        for (w, wr) in r.workers.iter().enumerate() {
            let mut spans: Vec<(u64, u64)> = (0..rec.worker.len())
                .filter(|&i| rec.worker[i] as usize == w)
                .map(|i| (rec.start_ns[i], rec.end_ns[i]))
                .collect();
            spans.sort_unstable();
            let first = spans.first().map_or(end, |s| s.0);
            let last = spans.last().map_or(end, |s| s.1);
            let mut gaps = [0u64; 5]; // < 1 µs, < 10 µs, < 100 µs, < 1 ms, ≥ 1 ms
            let mut gap_ns = [0u64; 5];
            for p in spans.windows(2) {
                let g = p[1].0.saturating_sub(p[0].1);
                let k = match g {
                    0..1_000 => 0,
                    1_000..10_000 => 1,
                    10_000..100_000 => 2,
                    100_000..1_000_000 => 3,
                    _ => 4,
                };
                gaps[k] += 1;
                gap_ns[k] += g;
            }
            let ms = |ns: u64| ns as f64 / 1e6;
            println!(
                "  worker {w}: {} pkts, busy {:.1} ms, idle {:.1} ms = start {:.2} + middle {:.2} + tail {:.2} ms; parks {}",
                wr.packets,
                ms(wr.busy_ns),
                ms(wr.idle_ns),
                ms(first.saturating_sub(r.start_ns)),
                ms(gap_ns.iter().sum()),
                ms(end.saturating_sub(last)),
                wr.parks
            );
            println!(
                "    middle gaps <1µs {} ({:.2} ms), <10µs {} ({:.2} ms), <100µs {} ({:.2} ms), <1ms {} ({:.2} ms), ≥1ms {} ({:.2} ms)",
                gaps[0],
                ms(gap_ns[0]),
                gaps[1],
                ms(gap_ns[1]),
                gaps[2],
                ms(gap_ns[2]),
                gaps[3],
                ms(gap_ns[3]),
                gaps[4],
                ms(gap_ns[4])
            );
        }
    }
    Ok(())
}

/// User + system CPU time of `who` (`RUSAGE_SELF` or `RUSAGE_THREAD`), in ns.
fn cpu_ns(who: libc::c_int) -> i64 {
    // SAFETY: getrusage writes into the zeroed struct we pass; no other memory is touched.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return 0;
    }
    let t = |tv: libc::timeval| tv.tv_sec * 1_000_000_000 + tv.tv_usec * 1_000;
    t(ru.ru_utime) + t(ru.ru_stime)
}
