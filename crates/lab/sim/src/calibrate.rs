//! `--calibrate`: fit the model to `flowbundle bench` measurements of the same trace on this machine.
//!
//! **What is identifiable.** At 1 and 2 threads on a 2-core machine, raw throughput is set by how long a worker
//! spends per packet; the cache model's latencies move it by a few percent with the bench's synthetic workload (four
//! state lines per packet). Two parameters are fitted:
//!
//! * `cost_scale` ([`crate::params::WorkModel::cost_scale`]): how the machine's real work per packet compares with
//!   the nominal cost (the synthetic loop's calibration under load, or the engine's measured costs on another day);
//! * the worker's per-packet runtime cost ([`crate::params::Overheads::worker`]): `next`, `done`, clock reads,
//!   parking and waking, the lines that cross from the dispatcher.
//!
//! Both act on every scheduler alike (nothing is fitted per scheduler or per thread count), so what the fit cannot
//! absorb, the differences between schedulers and between 1 and 2 threads, is what the model must predict itself;
//! the fit error per run says how well it does.
//!
//! **How.** Minimise the mean squared log error of predicted over measured raw throughput (each prediction one
//! simulated run), with Nelder–Mead over (ln scale, overhead) from (0, the parameters' overhead) and at most 80
//! evaluations. The two parameters are nearly collinear when costs vary little between packets; a weak prior
//! (weight 10⁻⁴ on (ln scale)²) picks the scale closest to 1 among equally good fits.

use crate::engine::{Mode, Model, RunConfig, SimError, simulate};
use crate::input::SimInput;
use crate::params::Params;
use flowbundle_lab_core::metrics::BenchReport;
use flowbundle_scheduler::SchedOptions;
use serde::{Deserialize, Serialize};

/// One measured configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub scheduler: String,
    pub threads: usize,
    pub pps: f64,
}

/// The raw throughputs of a bench report at thread counts up to `max_threads`.
pub fn measured_from(report: &BenchReport, max_threads: usize) -> Vec<Measured> {
    report
        .runs
        .iter()
        .filter(|m| m.threads >= 1 && m.threads <= max_threads)
        .filter_map(|m| {
            let pps = m.raw.as_ref()?.pps;
            (pps.is_finite() && pps > 0.0).then(|| Measured {
                scheduler: m.scheduler.clone(),
                threads: m.threads,
                pps,
            })
        })
        .collect()
}

/// Measured against predicted for one configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitRow {
    pub scheduler: String,
    pub threads: usize,
    pub measured_pps: f64,
    pub predicted_pps: f64,
    /// predicted / measured − 1.
    pub error: f64,
}

/// The fitted parameters and how well they fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub cost_scale: f64,
    /// Fitted worker cost per packet, cycles of the model's clock, and in ns.
    pub worker_cycles: u32,
    pub worker_ns: f64,
    pub rows: Vec<FitRow>,
    pub max_abs_error: f64,
    pub rms_error: f64,
    pub evaluations: usize,
    /// The parameters with the fit applied.
    pub params: Params,
}

/// Why a calibration could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("no measurement to fit (need raw runs at 1 or 2 threads with a positive throughput)")]
    Nothing,
}

fn with(params: &Params, ln_scale: f64, worker: f64) -> Params {
    let mut p = params.clone();
    p.work.cost_scale = params.work.cost_scale * ln_scale.clamp(-5.0, 5.0).exp();
    p.overheads.worker = worker.clamp(0.0, 1e7).round() as u32;
    p
}

/// Predicted raw throughput of each measured configuration under `params`.
pub fn predict(
    input: &SimInput,
    params: &Params,
    sched: &SchedOptions,
    measured: &[Measured],
) -> Result<Vec<f64>, SimError> {
    let model = Model::new(input, params)?;
    measured
        .iter()
        .map(|m| {
            simulate(
                input,
                &model,
                params,
                &RunConfig {
                    scheduler: &m.scheduler,
                    cores: m.threads,
                    sched: sched.clone(),
                    mode: Mode::Raw,
                    max_outstanding: flowbundle_worker::MAX_OUTSTANDING,
                    records: false,
                },
            )
            .map(|r| r.pps())
        })
        .collect()
}

fn loss(pred: &[f64], measured: &[Measured], ln_scale: f64) -> f64 {
    let n = measured.len().max(1) as f64;
    let e: f64 = pred
        .iter()
        .zip(measured)
        .map(|(p, m)| (p.max(1e-9) / m.pps).ln().powi(2))
        .sum();
    e / n + 1e-4 * ln_scale * ln_scale
}

/// Fit `cost_scale` and the worker's per-packet cost to `measured` (see the module documentation).
pub fn calibrate(
    input: &SimInput,
    params: &Params,
    sched: &SchedOptions,
    measured: &[Measured],
) -> Result<Calibration, CalibrateError> {
    if measured.is_empty() {
        return Err(CalibrateError::Nothing);
    }
    let mut evaluations = 0usize;
    let mut f = |x: [f64; 2]| -> Result<f64, SimError> {
        evaluations += 1;
        let p = with(params, x[0], x[1]);
        let pred = predict(input, &p, sched, measured)?;
        Ok(loss(&pred, measured, x[0]))
    };
    // A first guess of the scale from the mean ratio, so the simplex starts near the answer.
    let first = predict(input, params, sched, measured)?;
    let ratio: f64 = first
        .iter()
        .zip(measured)
        .map(|(p, m)| (p.max(1e-9) / m.pps).ln())
        .sum::<f64>()
        / measured.len() as f64;
    let w0 = f64::from(params.overheads.worker);
    let start = [ratio.clamp(-4.0, 4.0), w0];
    let step = [0.15, (w0 * 0.5).max(200.0)];
    let best = nelder_mead(&mut f, start, step, 80)?;
    let fitted = with(params, best[0], best[1]);
    let pred = predict(input, &fitted, sched, measured)?;
    let rows: Vec<FitRow> = measured
        .iter()
        .zip(&pred)
        .map(|(m, &p)| FitRow {
            scheduler: m.scheduler.clone(),
            threads: m.threads,
            measured_pps: m.pps,
            predicted_pps: p,
            error: p / m.pps - 1.0,
        })
        .collect();
    let max_abs_error = rows.iter().map(|r| r.error.abs()).fold(0.0, f64::max);
    let rms_error =
        (rows.iter().map(|r| r.error * r.error).sum::<f64>() / rows.len() as f64).sqrt();
    Ok(Calibration {
        cost_scale: fitted.work.cost_scale,
        worker_cycles: fitted.overheads.worker,
        worker_ns: f64::from(fitted.overheads.worker) / fitted.machine.clock_ghz,
        rows,
        max_abs_error,
        rms_error,
        evaluations: evaluations + 2,
        params: fitted,
    })
}

/// Nelder–Mead in two dimensions (standard coefficients), at most `max_evals` evaluations; the second coordinate
/// is kept non-negative.
fn nelder_mead<E>(
    f: &mut impl FnMut([f64; 2]) -> Result<f64, E>,
    start: [f64; 2],
    step: [f64; 2],
    max_evals: usize,
) -> Result<[f64; 2], E> {
    let clamp = |x: [f64; 2]| [x[0], x[1].max(0.0)];
    let mut pts = [
        clamp(start),
        clamp([start[0] + step[0], start[1]]),
        clamp([start[0], start[1] + step[1]]),
    ];
    let mut vals = [f(pts[0])?, f(pts[1])?, f(pts[2])?];
    let mut evals = 3;
    while evals < max_evals {
        let mut idx = [0usize, 1, 2];
        idx.sort_by(|&a, &b| vals[a].total_cmp(&vals[b]));
        let (b, m, w) = (idx[0], idx[1], idx[2]);
        if (vals[w] - vals[b]).abs() < 1e-10 {
            break;
        }
        let c = [(pts[b][0] + pts[m][0]) / 2.0, (pts[b][1] + pts[m][1]) / 2.0];
        let along = |t: f64| clamp([c[0] + t * (pts[w][0] - c[0]), c[1] + t * (pts[w][1] - c[1])]);
        let r = along(-1.0);
        let fr = f(r)?;
        evals += 1;
        if fr < vals[b] {
            let e = along(-2.0);
            let fe = f(e)?;
            evals += 1;
            if fe < fr {
                pts[w] = e;
                vals[w] = fe;
            } else {
                pts[w] = r;
                vals[w] = fr;
            }
        } else if fr < vals[m] {
            pts[w] = r;
            vals[w] = fr;
        } else {
            let k = if fr < vals[w] {
                along(-0.5)
            } else {
                along(0.5)
            };
            let fk = f(k)?;
            evals += 1;
            if fk < vals[w].min(fr) {
                pts[w] = k;
                vals[w] = fk;
            } else {
                // Shrink towards the best point.
                for i in [m, w] {
                    pts[i] = clamp([
                        pts[b][0] + 0.5 * (pts[i][0] - pts[b][0]),
                        pts[b][1] + 0.5 * (pts[i][1] - pts[b][1]),
                    ]);
                    vals[i] = f(pts[i])?;
                    evals += 1;
                }
            }
        }
    }
    let b = (0..3)
        .min_by(|&a, &b| vals[a].total_cmp(&vals[b]))
        .unwrap_or(0);
    Ok(pts[b])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nelder_mead_finds_a_quadratic_minimum() {
        let mut f =
            |x: [f64; 2]| Ok::<f64, ()>((x[0] - 1.5).powi(2) + ((x[1] - 300.0) / 100.0).powi(2));
        let b = nelder_mead(&mut f, [0.0, 100.0], [0.5, 100.0], 200).unwrap();
        assert!(
            (b[0] - 1.5).abs() < 0.01 && (b[1] - 300.0).abs() < 1.0,
            "{b:?}"
        );
        let mut g = |x: [f64; 2]| Ok::<f64, ()>((x[1] + 50.0).powi(2) + x[0] * x[0]);
        let b = nelder_mead(&mut g, [1.0, 10.0], [0.5, 10.0], 200).unwrap();
        assert!(b[1] >= 0.0 && b[1] < 0.5, "kept non-negative: {b:?}");
    }

    #[test]
    fn no_measurement_is_an_error() {
        let input = SimInput::default();
        assert!(matches!(
            calibrate(&input, &Params::default(), &SchedOptions::default(), &[]),
            Err(CalibrateError::Nothing)
        ));
    }
}
