//! Simulate the three ANCS'10 profiles on 1–14 cores and print the tables and findings (what BENCHMARKS.md records).
//!
//! `cargo run --release -p flowbundle-sim --example profiles -- [PACKETS] [SCHEDULERS] [CORES] [PROFILES]`
//! e.g. `-- 200000 dh,ph,lfb 1-14 dominant,many,balanced`.

use flowbundle_sim::params::Params;
use flowbundle_sim::report::model_table;
use flowbundle_sim::{SweepConfig, findings, profiles, sweep};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let packets: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let schedulers: Vec<String> = args
        .get(2)
        .map_or("dh,ph,lfb", String::as_str)
        .split(',')
        .map(str::to_string)
        .collect();
    let cores: Vec<usize> = match args.get(3).map(String::as_str) {
        Some(s) if s.contains('-') => {
            let (a, b) = s.split_once('-').unwrap_or(("1", "14"));
            (a.parse().unwrap_or(1)..=b.parse().unwrap_or(14)).collect()
        }
        Some(s) => s.split(',').filter_map(|x| x.parse().ok()).collect(),
        None => (1..=14).collect(),
    };
    let names: Vec<String> = args
        .get(4)
        .map_or("dominant,many,balanced", String::as_str)
        .split(',')
        .map(str::to_string)
        .collect();
    let params = Params::default();
    for name in &names {
        let g = std::time::Instant::now();
        let input = match profiles::profile(name, packets as u64, 1) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("{name}: {e}");
                continue;
            }
        };
        let cfg = SweepConfig {
            schedulers: schedulers.clone(),
            cores: cores.clone(),
            ..SweepConfig::default()
        };
        let t = std::time::Instant::now();
        let r = match sweep(&input, &params, &cfg, &mut |_| {}) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{name}: {e}");
                continue;
            }
        };
        println!(
            "## {name} ({} packets, {} flows, largest {:.1}%; generated in {:.1} s, simulated in {:.1} s wall)\n",
            input.len(),
            input.flow_count,
            input.largest_flow().map_or(0.0, |f| f.1 * 100.0),
            (t - g).as_secs_f64(),
            t.elapsed().as_secs_f64()
        );
        println!("{}", model_table(&r));
        for f in findings::check(name, &r, &input) {
            println!(
                "- [{}] {}: {}",
                if f.holds { "holds" } else { "DOES NOT HOLD" },
                f.name,
                f.detail
            );
        }
        if let Some((n, paper, pname, any, aname)) = findings::headline(&r) {
            println!(
                "- headline at {n} cores: lfb / {pname} = {paper:.3}; lfb / {aname} = {any:.3}"
            );
        }
        println!();
    }
}
