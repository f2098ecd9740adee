//! The simulator's calibration check, end to end on this machine: measure a generated trace with the real harness
//! (`flowbundle_bench::sweep`, the bench's `synthetic` workload with the bench CLI's defaults) at 1 and 2 threads,
//! fit the simulator to those measurements (`flowbundle_sim::calibrate`: one cost scale and one per-packet worker
//! cost for every scheduler and thread count together), and print measured against simulated throughput per run.
//! Exits with status 1 when a run is off by more than the limit (15%, the simulator's accuracy goal).
//!
//! `cargo run --release -p flowbundle-sim --example calibrate -- [PROFILE] [PACKETS] [REPS] [SCHEDULERS] [BENCH_JSON]
//! [median|best]` e.g. `-- balanced 100000 3 dh,ph,lfb /tmp/measured.json best` (the JSON, when named, is the bench
//! report, which
//! `flowbundle simulate --synth balanced --synth-packets 100000 --model synthetic --machine host --calibrate F`
//! reads the same way).
//!
//! Measurements are wall-clock throughput of real threads: on a loaded machine they vary from run to run, which is
//! why the bench takes the median of `REPS` runs, and why this is an example and not a test (CONTRIBUTING.md: no
//! timed assertions in tests). `best` fits to the fastest of the `REPS` runs instead of their median: on a machine
//! shared with other work the fastest run is the least disturbed one (the same reasoning as the synthetic loop's own
//! calibration, `flowbundle_worker::spin_rate`, best of seven). The fitting procedure itself is tested on synthetic
//! measurements in `tests/calibrate.rs`.

use flowbundle_bench::HarnessConfig;
use flowbundle_lab_core::{BenchMode, SearchPolicy};
use flowbundle_scheduler::SchedOptions;
use flowbundle_sim::calibrate::{calibrate, measured_from};
use flowbundle_sim::params::{Machine, Overheads, Params, WorkModel};
use flowbundle_sim::{SimInput, profiles};
use flowbundle_worker::{Cost, Synthetic};

/// The bench CLI's synthetic defaults (`flowbundle bench --workload synthetic`).
const BASE_NS: f64 = 3000.0;
const PER_BYTE_NS: f64 = 2.0;
const STATE_LINES: usize = 4;
const PREPARE_SHARE: f64 = 0.1;
const LIMIT: f64 = 0.15;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let profile = args.get(1).map_or("balanced", String::as_str).to_string();
    let packets: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let reps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let schedulers: Vec<String> = args
        .get(4)
        .map_or("dh,ph,lfb", String::as_str)
        .split(',')
        .map(str::to_string)
        .collect();
    let json_out = args.get(5).cloned().filter(|s| !s.is_empty() && s != "-");
    let best = args.get(6).is_some_and(|s| s == "best");

    let prep = match profiles::prepared(&profile, packets, 1) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{profile}: {e}");
            std::process::exit(2);
        }
    };
    let sched = SchedOptions {
        ph_late_claim: true,
        ..SchedOptions::default()
    };
    let cfg = HarnessConfig {
        schedulers: schedulers.clone(),
        threads: vec![1, 2],
        mode: BenchMode::Raw,
        reps: reps.max(1),
        search: SearchPolicy::default(),
        sched: sched.clone(),
        progress: false,
        ..HarnessConfig::default()
    };
    let work = Synthetic::new(
        Cost::Model {
            base_ns: BASE_NS,
            per_byte_ns: PER_BYTE_NS,
        },
        STATE_LINES,
    )
    .with_prepare_share(PREPARE_SHARE);
    let t = std::time::Instant::now();
    let measured_report = match flowbundle_bench::sweep(&prep, &work, &cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    eprintln!(
        "measured {} runs of {} packets ({profile}) in {:.1} s",
        measured_report.runs.len(),
        prep.len(),
        t.elapsed().as_secs_f64()
    );
    if let Some(f) = &json_out
        && let Err(e) = std::fs::write(f, measured_report.to_json())
    {
        eprintln!("writing {f}: {e}");
    }

    let input = SimInput::from_prepared(&prep);
    let machine = Machine::host();
    let params = Params {
        overheads: Overheads::at_clock(machine.clock_ghz),
        machine,
        work: WorkModel::synthetic(BASE_NS, PER_BYTE_NS, STATE_LINES, PREPARE_SHARE),
    };
    let mut fitted_report = measured_report.clone();
    if best {
        for m in &mut fitted_report.runs {
            if let Some(raw) = m.raw.as_mut() {
                raw.pps = raw.pps_max;
            }
        }
    }
    let measured = measured_from(&fitted_report, 2);
    let t = std::time::Instant::now();
    let fit = match calibrate(&input, &params, &sched, &measured) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("calibration: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "## Calibration on `{profile}` ({} packets, {} flows; {} bench runs, {} of {reps})\n",
        input.len(),
        input.flow_count,
        measured.len(),
        if best { "fastest" } else { "median" }
    );
    println!(
        "fitted in {:.1} s ({} evaluations): cost scale {:.4}, worker cost {} cycles ({:.0} ns) per packet\n",
        t.elapsed().as_secs_f64(),
        fit.evaluations,
        fit.cost_scale,
        fit.worker_cycles,
        fit.worker_ns
    );
    println!(
        "| scheduler | threads | measured Mpps | simulated Mpps | error |\n|---|---|---|---|---|"
    );
    for r in &fit.rows {
        println!(
            "| {} | {} | {:.4} | {:.4} | {:+.1}% |",
            r.scheduler,
            r.threads,
            r.measured_pps / 1e6,
            r.predicted_pps / 1e6,
            r.error * 100.0
        );
    }
    println!(
        "\nfit error: max {:.1}%, rms {:.1}% (limit {:.0}%): {}",
        fit.max_abs_error * 100.0,
        fit.rms_error * 100.0,
        LIMIT * 100.0,
        if fit.max_abs_error <= LIMIT {
            "within"
        } else {
            "EXCEEDED"
        }
    );
    if fit.max_abs_error > LIMIT {
        std::process::exit(1);
    }
}
