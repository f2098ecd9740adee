//! SVG plots of [`BenchReport`]s (plotters, SVG backend, no font files needed), shared with the simulator so that
//! measured and simulated runs of the same trace can be drawn on one chart.
//!
//! * [`throughput`]: packets per second against threads, one line per scheduler (ANCS'10 Figures 2–4 for raw
//!   throughput, Figure 5 for the maximum scaled throughput). Series of a simulated report are dashed-looking (hollow
//!   markers) and labelled "(simulated)".
//! * [`latency`]: mean or maximum latency per scheduler at 80% of the maximum scaled rate, one bar per thread count
//!   (Figures 6 and 7).
//!
//! Several reports may be passed (e.g. a measured and a simulated one); each (source, scheduler) gets its own colour.

use crate::metrics::{BenchReport, RunMetrics, Source};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Which throughput to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Raw,
    Scaled,
}

/// Which latency statistic to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyStat {
    Mean,
    Max,
}

/// A drawing failed (the message of plotters' error).
#[derive(Debug, thiserror::Error)]
#[error("plot {path}: {msg}")]
pub struct PlotError {
    pub path: String,
    pub msg: String,
}

fn err(path: &Path) -> impl Fn(&dyn std::fmt::Display) -> PlotError + '_ {
    move |x| PlotError {
        path: path.display().to_string(),
        msg: x.to_string(),
    }
}

fn label(source: Source, scheduler: &str) -> String {
    match source {
        Source::Measured => scheduler.to_string(),
        Source::Simulated => format!("{scheduler} (simulated)"),
    }
}

/// A series: who produced it, and the scheduler.
type SeriesKey = (Source, String);

/// Draws one plot into a path; `false` when there was nothing to draw.
type Drawer<'a> = Box<dyn Fn(&Path) -> Result<bool, PlotError> + 'a>;

/// Distinct (source, scheduler) series in first-seen order.
fn series(reports: &[&BenchReport]) -> Vec<(Source, String)> {
    let mut out: Vec<(Source, String)> = Vec::new();
    for r in reports {
        for m in &r.runs {
            if !out.iter().any(|(s, n)| *s == r.source && *n == m.scheduler) {
                out.push((r.source, m.scheduler.clone()));
            }
        }
    }
    out
}

fn pps_of(m: &RunMetrics, which: Which) -> Option<f64> {
    match which {
        Which::Raw => m.raw.as_ref().map(|t| t.pps),
        Which::Scaled => m.scaled.as_ref().filter(|s| s.found).map(|s| s.max_pps),
    }
}

/// Throughput (Mpps) against threads, one line per (source, scheduler). Returns whether anything was drawn.
pub fn throughput(reports: &[&BenchReport], which: Which, path: &Path) -> Result<bool, PlotError> {
    let e = err(path);
    let mut points: Vec<(SeriesKey, Vec<(f64, f64)>)> = Vec::new();
    for key in series(reports) {
        let mut v: Vec<(f64, f64)> = reports
            .iter()
            .filter(|r| r.source == key.0)
            .flat_map(|r| r.runs.iter())
            .filter(|m| m.scheduler == key.1)
            .filter_map(|m| pps_of(m, which).map(|p| (m.threads as f64, p / 1e6)))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !v.is_empty() {
            points.push((key, v));
        }
    }
    if points.is_empty() {
        return Ok(false);
    }
    let all = points.iter().flat_map(|(_, v)| v.iter());
    let (mut tmin, mut tmax, mut ymax) = (f64::INFINITY, 0.0f64, 0.0f64);
    for &(t, y) in all {
        tmin = tmin.min(t);
        tmax = tmax.max(t);
        ymax = ymax.max(y);
    }
    if tmax <= tmin {
        tmin -= 0.5;
        tmax += 0.5;
    }
    let trace = reports.first().map_or("", |r| r.trace.name.as_str());
    let title = match which {
        Which::Raw => format!("Maximum raw throughput: {trace}"),
        Which::Scaled => format!("Maximum scaled throughput: {trace}"),
    };
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(tmin..tmax, 0.0..(ymax * 1.15).max(1e-6))
        .map_err(|x| e(&x))?;
    c.configure_mesh()
        .x_desc("threads")
        .y_desc("Mpps")
        .x_labels(((tmax - tmin) as usize + 1).min(16))
        .draw()
        .map_err(|x| e(&x))?;
    for (i, ((source, name), v)) in points.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        c.draw_series(LineSeries::new(v.iter().copied(), color.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(label(*source, name))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        let filled = *source == Source::Measured;
        c.draw_series(v.iter().map(|&p| {
            if filled {
                Circle::new(p, 4, color.filled())
            } else {
                Circle::new(p, 4, color.stroke_width(2))
            }
        }))
        .map_err(|x| e(&x))?;
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(true)
}

/// Mean or maximum latency (µs) per scheduler, one bar per (thread count, source). Returns whether anything was
/// drawn (nothing without latency measurements, i.e. in raw mode).
pub fn latency(
    reports: &[&BenchReport],
    stat: LatencyStat,
    path: &Path,
) -> Result<bool, PlotError> {
    let e = err(path);
    let mut scheds: Vec<String> = Vec::new();
    let mut bars: Vec<(Source, usize)> = Vec::new();
    let mut values: Vec<(String, (Source, usize), f64)> = Vec::new();
    for r in reports {
        for m in &r.runs {
            let Some(l) = &m.latency else { continue };
            let v = match stat {
                LatencyStat::Mean => l.mean_ns,
                LatencyStat::Max => l.max_ns as f64,
            } / 1e3;
            if !scheds.contains(&m.scheduler) {
                scheds.push(m.scheduler.clone());
            }
            let key = (r.source, m.threads);
            if !bars.contains(&key) {
                bars.push(key);
            }
            values.push((m.scheduler.clone(), key, v));
        }
    }
    if values.is_empty() {
        return Ok(false);
    }
    bars.sort_by_key(|&(s, t)| (t, s == Source::Simulated));
    let ymax = values.iter().map(|v| v.2).fold(0.0, f64::max).max(1e-3) * 1.15;
    let trace = reports.first().map_or("", |r| r.trace.name.as_str());
    let title = match stat {
        LatencyStat::Mean => format!("Average latency at 80% of max scaled throughput: {trace}"),
        LatencyStat::Max => format!("Maximum latency at 80% of max scaled throughput: {trace}"),
    };
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let n = scheds.len() as f64;
    let mut c = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..n, 0.0..ymax)
        .map_err(|x| e(&x))?;
    let names = scheds.clone();
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(scheds.len() * 2 + 1)
        .x_label_formatter(&move |x: &f64| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.26 {
                names.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("µs")
        .draw()
        .map_err(|x| e(&x))?;
    let width = 0.8 / bars.len() as f64;
    for (bi, key) in bars.iter().enumerate() {
        let color = Palette99::pick(bi).to_rgba();
        let rects: Vec<Rectangle<(f64, f64)>> = values
            .iter()
            .filter(|v| v.1 == *key)
            .filter_map(|(s, _, v)| {
                let i = scheds.iter().position(|x| x == s)? as f64;
                let x0 = i + 0.1 + bi as f64 * width;
                let style = if key.0 == Source::Measured {
                    color.filled()
                } else {
                    color.stroke_width(2)
                };
                Some(Rectangle::new([(x0, 0.0), (x0 + width * 0.9, *v)], style))
            })
            .collect();
        let text = match key.0 {
            Source::Measured => format!("{} threads", key.1),
            Source::Simulated => format!("{} threads (simulated)", key.1),
        };
        c.draw_series(rects)
            .map_err(|x| e(&x))?
            .label(text)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(true)
}

/// Draw every plot the reports have data for into `dir`: `throughput_raw.svg`, `throughput_scaled.svg`,
/// `latency_mean.svg`, `latency_max.svg`. Returns the files written.
pub fn write_all(reports: &[&BenchReport], dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|x| PlotError {
        path: dir.display().to_string(),
        msg: x.to_string(),
    })?;
    let mut out = Vec::new();
    let jobs: [(&str, Drawer<'_>); 4] = [
        (
            "throughput_raw.svg",
            Box::new(|p| throughput(reports, Which::Raw, p)),
        ),
        (
            "throughput_scaled.svg",
            Box::new(|p| throughput(reports, Which::Scaled, p)),
        ),
        (
            "latency_mean.svg",
            Box::new(|p| latency(reports, LatencyStat::Mean, p)),
        ),
        (
            "latency_max.svg",
            Box::new(|p| latency(reports, LatencyStat::Max, p)),
        ),
    ];
    for (name, draw) in jobs {
        let p = dir.join(name);
        if draw(&p)? {
            out.push(p);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::*;

    fn report(source: Source) -> BenchReport {
        let run = |s: &str, t: usize, pps: f64| RunMetrics {
            scheduler: s.into(),
            threads: t,
            raw: Some(Throughput {
                pps,
                ..Throughput::default()
            }),
            scaled: Some(ScaledSearch {
                max_pps: pps * 0.7,
                found: true,
                ..ScaledSearch::default()
            }),
            latency: Some(Latency {
                mean_ns: 20_000.0 / t as f64,
                max_ns: 900_000,
                ..Latency::default()
            }),
            ..RunMetrics::default()
        };
        BenchReport {
            schema: SCHEMA.into(),
            source,
            tool: "test".into(),
            trace: TraceInfo {
                name: "synthetic-dominant".into(),
                ..TraceInfo::default()
            },
            config: RunConfigInfo::default(),
            cache_counters: CacheSupport::default(),
            runs: vec![
                run("dh", 1, 250e3),
                run("dh", 2, 450e3),
                run("lfb", 1, 250e3),
                run("lfb", 2, 490e3),
            ],
        }
    }

    #[test]
    fn measured_and_simulated_series_are_drawn_together() {
        let dir = tempfile::tempdir().unwrap();
        let (m, s) = (report(Source::Measured), report(Source::Simulated));
        let files = write_all(&[&m, &s], dir.path()).unwrap();
        assert_eq!(files.len(), 4);
        let svg = std::fs::read_to_string(dir.path().join("throughput_raw.svg")).unwrap();
        assert!(svg.starts_with("<svg"));
        for label in ["lfb", "dh (simulated)", "Mpps", "threads"] {
            assert!(svg.contains(label), "{label} missing");
        }
        let lat = std::fs::read_to_string(dir.path().join("latency_max.svg")).unwrap();
        assert!(lat.contains("2 threads (simulated)") && lat.contains("µs"));
    }

    #[test]
    fn raw_only_reports_draw_no_latency() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = report(Source::Measured);
        for r in &mut m.runs {
            r.latency = None;
            r.scaled = None;
        }
        let files = write_all(&[&m], dir.path()).unwrap();
        assert_eq!(files, vec![dir.path().join("throughput_raw.svg")]);
    }
}
