//! The calibration procedure on synthetic measurements (the check against real `bench` runs is
//! `examples/calibrate.rs`, since wall-clock measurements have no place in tests).
//!
//! "Measurements" are made by the simulator itself under a hidden truth (another cost scale and worker cost than the
//! starting parameters), then disturbed by a fixed ±4% pattern that stands for run-to-run noise. The fit starts from
//! the defaults and must bring every run within 15% (the simulator's accuracy goal), and recover the hidden cost scale.

use flowbundle_scheduler::SchedOptions;
use flowbundle_sim::calibrate::{Measured, calibrate, measured_from, predict};
use flowbundle_sim::params::{Machine, Overheads, Params, WorkModel};
use flowbundle_sim::{SweepConfig, profiles, sweep};

fn sched() -> SchedOptions {
    SchedOptions {
        ph_late_claim: true,
        ..SchedOptions::default()
    }
}

fn start_params() -> Params {
    let machine = Machine::nehalem();
    Params {
        overheads: Overheads::at_clock(machine.clock_ghz),
        machine,
        work: WorkModel::synthetic(3000.0, 2.0, 4, 0.1),
    }
}

#[test]
fn calibration_recovers_a_hidden_scale_within_the_limit() {
    let input = profiles::profile("balanced", 6_000, 7).unwrap();
    let start = start_params();
    let mut truth = start.clone();
    truth.work.cost_scale = 1.3;
    truth.overheads.worker = 900;
    let configs: Vec<(String, usize)> = ["dh", "ph", "lfb"]
        .iter()
        .flat_map(|s| [1, 2].map(|t| (s.to_string(), t)))
        .collect();
    let template: Vec<Measured> = configs
        .iter()
        .map(|(s, t)| Measured {
            scheduler: s.clone(),
            threads: *t,
            pps: 1.0,
        })
        .collect();
    let exact = predict(&input, &truth, &sched(), &template).unwrap();
    let noise = [1.04, 0.97, 1.0, 1.03, 0.96, 1.02];
    let measured: Vec<Measured> = template
        .iter()
        .zip(&exact)
        .zip(noise)
        .map(|((m, &p), k)| Measured {
            pps: p * k,
            ..m.clone()
        })
        .collect();

    // Before the fit the defaults are far off (the truth is 30% more work and a costlier runtime).
    let before = predict(&input, &start, &sched(), &measured).unwrap();
    let worst_before = before
        .iter()
        .zip(&measured)
        .map(|(p, m)| (p / m.pps - 1.0).abs())
        .fold(0.0, f64::max);
    assert!(worst_before > 0.2, "the start must be off: {worst_before}");

    let fit = calibrate(&input, &start, &sched(), &measured).unwrap();
    assert_eq!(fit.rows.len(), 6);
    assert!(
        fit.max_abs_error <= 0.15,
        "every run within 15% after the fit: {:?}",
        fit.rows
    );
    // The noise is ±4%: a fit that found the truth leaves about that.
    assert!(fit.max_abs_error <= 0.06, "{:?}", fit.rows);
    // Scale and worker cost are nearly collinear (both add per-packet time); their sum per packet is identified.
    let per_packet = |p: &Params| {
        p.work.cost_scale * 3000.0 * p.machine.clock_ghz + f64::from(p.overheads.worker)
    };
    let rel = per_packet(&fit.params) / per_packet(&truth) - 1.0;
    assert!(
        rel.abs() < 0.05,
        "per-packet time recovered within 5%: {rel}"
    );
    assert!(
        fit.cost_scale > 1.0,
        "the scale moved towards the truth: {}",
        fit.cost_scale
    );
    // The fitted parameters predict what the fit reports.
    let again = predict(&input, &fit.params, &sched(), &measured).unwrap();
    for (r, p) in fit.rows.iter().zip(&again) {
        assert!((r.predicted_pps - p).abs() < 1e-6 * p);
    }
}

#[test]
fn measured_runs_are_taken_from_a_bench_report_at_one_and_two_threads() {
    let input = profiles::profile("many", 3_000, 2).unwrap();
    let cfg = SweepConfig {
        schedulers: vec!["dh".into(), "lfb".into()],
        cores: vec![1, 2, 3],
        ..SweepConfig::default()
    };
    let report = sweep(&input, &start_params(), &cfg, &mut |_| {}).unwrap();
    // The simulator's report is in the bench schema: it reads back as a bench report.
    let bench = flowbundle_lab_core::BenchReport::from_json(&report.to_json()).unwrap();
    let m = measured_from(&bench, 2);
    assert_eq!(m.len(), 4);
    assert!(m.iter().all(|x| x.threads <= 2 && x.pps > 0.0));
    // A report of the model's own runs calibrates to itself: nothing to correct.
    let fit = calibrate(&input, &start_params(), &sched(), &m).unwrap();
    assert!(fit.max_abs_error < 0.01, "{:?}", fit.rows);
}
