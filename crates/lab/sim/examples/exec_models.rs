//! The execution models (run-to-completion, software pipeline, MultiLayer Processing) on the three ANCS'10 profiles,
//! with the thesis' findings checked (what BENCHMARKS.md, "Execution models", records).
//!
//! `cargo run --release -p flowbundle-sim --example exec_models -- [PACKETS] [SCHEDULERS] [CORES] [PROFILES] [CODE_SCALE]`
//! e.g. `-- 100000 lfb 1,2,4,8,12,14,16,24,32,48,64 dominant,many,balanced 1`. The same sweep through the CLI:
//! `flowbundle simulate --synth balanced --exec rtc,pipeline,multilayer --scheduler lfb --cores 1-64 --findings`.
//! A sixth argument `split` cuts detection into its stateless content scan and the rest
//! ([`ExecParams::split_scan`] with [`SplitScan::measured`]; `split:B` with a backlog of B packets); the CLI's
//! `--exec-split` (`-` for none). A seventh, `static` or `measured` (default), says how the staged models' groups get
//! their cores (`ExecSweep::measured_allocation`). An eighth, `dedicated` (default) or `runtime`, where the
//! runtime's reader and collector run (`flowbundle_sim::threads::Host`: `dedicated`, every worker a core of its own
//! and a free dispatcher, the ANCS'10 model the findings are stated in; `runtime`, `inspect --threads N` on N cores:
//! the reader and the collector, measured on this engine, on the workers' cores, and one worker the
//! single-threaded loop; `runtime:M`, the same on M cores).

use flowbundle_scheduler::SchedOptions;
use flowbundle_sim::exec::{Exec, ExecParams, ExecSweep, SplitScan, sweep_exec};
use flowbundle_sim::params::Params;
use flowbundle_sim::threads::Host;
use flowbundle_sim::{findings, profiles};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let packets: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let list = |i: usize, d: &str| -> Vec<String> {
        args.get(i)
            .map_or(d, String::as_str)
            .split(',')
            .map(str::to_string)
            .collect()
    };
    let schedulers = list(2, "lfb");
    let cores: Vec<usize> = list(3, "1,2,4,8,12,14,16,24,32,48,64")
        .iter()
        .filter_map(|x| x.parse().ok())
        .collect();
    let names = list(4, "dominant,many,balanced");
    let code_scale: f64 = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    // Seventh argument: `static` gives the groups their cores by the cost model's estimate, `measured` (the
    // default) by the busy cycles of a first run (`ExecSweep::measured_allocation`).
    let measured = args.get(7).is_none_or(|a| a != "static");
    let host = match args.get(8).map(String::as_str) {
        None | Some("dedicated") => Host::Dedicated,
        Some("runtime") => Host::Runtime,
        Some(h)
            if h.strip_prefix("runtime:")
                .is_some_and(|m| m.parse::<usize>().is_ok()) =>
        {
            Host::RuntimeOn {
                cores: h[8..].parse().unwrap_or(0),
            }
        }
        Some(h) => {
            eprintln!("host: dedicated or runtime, not {h}");
            return;
        }
    };
    let params = Params::default();
    let mut ep = ExecParams::engine();
    ep.scale_code(code_scale);
    if let Some(split) = args.get(6).filter(|s| s.starts_with("split")) {
        let mut sp = SplitScan::measured();
        if let Some(b) = split.strip_prefix("split:").and_then(|b| b.parse().ok()) {
            sp.backlog = b;
        }
        ep = match ep.split_scan(&sp) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("split: {e}");
                return;
            }
        };
    }
    for name in &names {
        let input = match profiles::profile(name, packets, 1) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("{name}: {e}");
                continue;
            }
        };
        let started = std::time::Instant::now();
        let sweep = ExecSweep {
            models: Exec::ALL.to_vec(),
            schedulers: schedulers.clone(),
            cores: cores.clone(),
            sched: SchedOptions::default(),
            measured_allocation: measured,
            host,
        };
        let report = match sweep_exec(&input, &params, &ep, &sweep, &mut |_| {}) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{name}: {e}");
                continue;
            }
        };
        let (largest, share) = input.largest_flow().unwrap_or((0, 0.0));
        println!(
            "**{name}** ({} packets, {} flows, largest flow {largest} {:.1}%; {} runs in {:.1} s wall)\n",
            input.len(),
            input.flow_count,
            share * 100.0,
            report.runs.len(),
            started.elapsed().as_secs_f64()
        );
        if std::env::var_os("EXEC_MODELS_FULL").is_some() {
            println!("{}", report.table());
        }
        for s in &schedulers {
            println!("`{s}` in every group:\n\n{}", report.by_cores(s));
        }
        for s in &schedulers {
            for f in [
                findings::exec_ordering(&report, s, 12),
                findings::exec_icache_lowest(&report, s, 12),
            ] {
                println!(
                    "- [{}] {}: {}",
                    if f.holds { "holds" } else { "does not hold" },
                    f.name,
                    f.detail
                );
            }
        }
        println!();
    }
}
