//! `lfb-bounded` against `lfb` and `dh` in scaled mode: raw and maximum scaled throughput, latency at 80% of each
//! policy's maximum scaled rate (the ANCS'10 harness's measure), and reordering (what BENCHMARKS.md, "Execution
//! models", records).
//!
//! `cargo run --release -p flowbundle-sim --example bounded_latency -- [PACKETS] [CORES] [BOUNDS] [PROFILE]`
//! e.g. `-- 100000 14 4,8,16,32,64 balanced`.

use flowbundle_lab_core::BenchMode;
use flowbundle_scheduler::SchedOptions;
use flowbundle_sim::params::Params;
use flowbundle_sim::{SweepConfig, profiles, sweep};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let packets: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let cores: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(14);
    let bounds: Vec<usize> = args
        .get(3)
        .map_or("4,8,16,32,64", String::as_str)
        .split(',')
        .filter_map(|s| s.parse().ok())
        .collect();
    let profile = args.get(4).map_or("balanced", String::as_str);
    let input = match profiles::profile(profile, packets, 1) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{profile}: {e}");
            std::process::exit(1);
        }
    };
    let params = Params::default();
    let mut rows = vec![(None, "dh".to_string()), (None, "lfb".to_string())];
    rows.extend(bounds.iter().map(|&k| (Some(k), "lfb-bounded".to_string())));
    println!(
        "**{profile}** ({} packets, {} flows), {cores} simulated cores, scaled mode\n",
        input.len(),
        input.flow_count
    );
    println!(
        "| policy | bound | raw Mpps | max scaled Mpps | latency at 80%: p99 µs | max µs | reordered |\n|---|---|---|---|---|---|---|"
    );
    for (bound, name) in rows {
        let defaults = SweepConfig::default();
        let cfg = SweepConfig {
            schedulers: vec![name.clone()],
            cores: vec![cores],
            mode: BenchMode::Scaled,
            sched: SchedOptions {
                lfb_bound: bound.unwrap_or(defaults.sched.lfb_bound),
                ..defaults.sched.clone()
            },
            ..defaults
        };
        let report = match sweep(&input, &params, &cfg, &mut |_| {}) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{name}: {e}");
                continue;
            }
        };
        let Some(m) = report.run(&name, cores) else {
            continue;
        };
        let lat = m.latency.clone().unwrap_or_default();
        println!(
            "| {name} | {} | {:.3} | {:.3} | {:.1} | {:.1} | {} |",
            bound.map_or("-".to_string(), |k| k.to_string()),
            m.raw.as_ref().map_or(0.0, |t| t.pps) / 1e6,
            m.scaled.as_ref().map_or(0.0, |s| s.max_pps) / 1e6,
            lat.p99_ns as f64 / 1e3,
            lat.max_ns as f64 / 1e3,
            m.order.reordered_packets,
        );
    }
}
