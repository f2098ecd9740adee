//! SVG plots of [`BenchReport`]s (plotters, SVG backend, no font files needed), shared with the simulator so that
//! measured and simulated runs of the same trace can be drawn on one chart.
//!
//! * [`throughput`]: packets per second against threads, one line per scheduler (ANCS'10 Figures 2–4 for raw
//!   throughput, Figure 5 for the maximum scaled throughput), with the min–max over repetitions as error bars.
//!   Series of a simulated report have hollow markers and are labelled "(simulated)".
//! * [`latency`]: mean or maximum latency at the report's fraction of the maximum scaled rate (`--latency-at`), one
//!   group of bars per thread count, one bar per scheduler (Figures 6 and 7).
//!
//! Every plot of every command gives a scheduler the same colour ([`scheduler_colour`], one table); the thread axis
//! has integer ticks only ([`thread_ticks`]), on a log₂ scale when the counts span 8× or more (1–64 simulated
//! cores). The x label names the option the counts came from (`--threads` for `bench`, `--cores` for `simulate`).
//! A plot is rendered in memory and written through a temporary file renamed at the end, as every other output.

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

/// The colours of [`scheduler_colour`], in the order of `flowbundle_scheduler::ALL` (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
];

/// Grey, for a scheduler name outside `flowbundle_scheduler::ALL`.
const UNKNOWN: RGBColor = RGBColor(90, 90, 90);

/// The colour of a scheduler in every plot (`bench`, `simulate`, measured or simulated): its position in
/// `flowbundle_scheduler::ALL` picks it, so the table cannot drift from the list of policies.
pub fn scheduler_colour(name: &str) -> RGBColor {
    flowbundle_scheduler::canonical(name)
        .and_then(|name| flowbundle_scheduler::ALL.iter().position(|s| *s == name))
        .and_then(|i| PALETTE.get(i))
        .copied()
        .unwrap_or(UNKNOWN)
}

/// The ticks of a thread (or core) axis for the counts drawn, and whether the axis is logarithmic: integers only;
/// on a log₂ axis (counts spanning 8× or more) the powers of two that cover them, otherwise every integer from the
/// smallest to the largest count (the counts themselves when that would be more than 16 ticks).
pub fn thread_ticks(counts: &[usize]) -> (Vec<usize>, bool) {
    let mut c: Vec<usize> = counts.iter().copied().filter(|&n| n > 0).collect();
    c.sort_unstable();
    c.dedup();
    let (Some(&lo), Some(&hi)) = (c.first(), c.last()) else {
        return (Vec::new(), false);
    };
    if hi >= lo * 8 {
        let mut t = Vec::new();
        let mut p = 1usize << lo.ilog2();
        while p < hi {
            t.push(p);
            p *= 2;
        }
        t.push(p);
        return (t, true);
    }
    if hi - lo < 16 {
        ((lo..=hi).collect(), false)
    } else {
        (c, false)
    }
}

/// The x label: the option the counts came from.
fn thread_label(reports: &[&BenchReport]) -> &'static str {
    let measured = reports.iter().any(|r| r.source == Source::Measured);
    let simulated = reports.iter().any(|r| r.source == Source::Simulated);
    match (measured, simulated) {
        (true, true) => "threads (--threads) / simulated cores (--cores)",
        (false, true) => "simulated cores (--cores)",
        _ => "threads (--threads)",
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

/// Draws one plot into an SVG string; `None` when there was nothing to draw.
type Drawer<'a> = Box<dyn Fn(&Path) -> Result<Option<String>, PlotError> + 'a>;

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

/// (median, min, max) packets per second of a run.
fn pps_of(m: &RunMetrics, which: Which) -> Option<(f64, f64, f64)> {
    match which {
        Which::Raw => m.raw.as_ref().map(|t| {
            let lo = if t.pps_min > 0.0 { t.pps_min } else { t.pps };
            (t.pps, lo.min(t.pps), t.pps_max.max(t.pps))
        }),
        Which::Scaled => m
            .scaled
            .as_ref()
            .filter(|s| s.found)
            .map(|s| (s.max_pps, s.max_pps, s.max_pps)),
    }
}

/// One point of a throughput series: threads, then Mpps as (median, min, max).
type Point = (usize, (f64, f64, f64));

/// Throughput (Mpps) against threads, one line per (source, scheduler), min–max error bars. Returns the SVG, or
/// `None` when there was nothing to draw; `path` names the plot in errors.
pub fn throughput(
    reports: &[&BenchReport],
    which: Which,
    path: &Path,
) -> Result<Option<String>, PlotError> {
    let e = err(path);
    let mut points: Vec<(SeriesKey, Vec<Point>)> = Vec::new();
    for key in series(reports) {
        let mut v: Vec<Point> = reports
            .iter()
            .filter(|r| r.source == key.0)
            .flat_map(|r| r.runs.iter())
            .filter(|m| m.scheduler == key.1)
            .filter_map(|m| {
                pps_of(m, which).map(|(p, lo, hi)| (m.threads, (p / 1e6, lo / 1e6, hi / 1e6)))
            })
            .collect();
        v.sort_by_key(|p| p.0);
        if !v.is_empty() {
            points.push((key, v));
        }
    }
    if points.is_empty() {
        return Ok(None);
    }
    let counts: Vec<usize> = points
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.0))
        .collect();
    let (ticks, log) = thread_ticks(&counts);
    let x = move |t: usize| if log { (t as f64).log2() } else { t as f64 };
    let (first, last) = (
        x(*ticks.first().unwrap_or(&1)),
        x(*ticks.last().unwrap_or(&1)),
    );
    let pad = if log { 0.25 } else { 0.5 };
    let ymax = points
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1.2))
        .fold(0.0f64, f64::max);
    let trace = reports.first().map_or("", |r| r.trace.name.as_str());
    let title = match which {
        Which::Raw => format!("Maximum raw throughput: {trace}"),
        Which::Scaled => format!("Maximum scaled throughput: {trace}"),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let key_points: Vec<f64> = ticks.iter().map(|&t| x(t)).collect();
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d((first - pad)..(last + pad), 0.0..(ymax * 1.25).max(1e-6))
            .map_err(|x| e(&x))?;
        // plotters places labels at round values (half steps with this many); only those at a tick are written.
        let label_of = |u: &f64| match key_points.iter().position(|k| (k - u).abs() < 1e-6) {
            Some(i) => ticks.get(i).map_or_else(String::new, |t| t.to_string()),
            None => String::new(),
        };
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(key_points.len() * 2 + 1)
            .x_desc(thread_label(reports))
            .y_desc("Mpps")
            .x_label_formatter(&label_of)
            .draw()
            .map_err(|x| e(&x))?;
        for ((source, name), v) in &points {
            let color = scheduler_colour(name).to_rgba();
            let filled = *source == Source::Measured;
            c.draw_series(LineSeries::new(
                v.iter().map(|p| (x(p.0), p.1.0)),
                color.stroke_width(2),
            ))
            .map_err(|x| e(&x))?
            .label(label(*source, name))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
            c.draw_series(
                v.iter()
                    .filter(|p| p.1.2 > p.1.1)
                    .map(|p| ErrorBar::new_vertical(x(p.0), p.1.1, p.1.0, p.1.2, color, 8)),
            )
            .map_err(|x| e(&x))?;
            c.draw_series(v.iter().map(|p| {
                let at = (x(p.0), p.1.0);
                if filled {
                    Circle::new(at, 4, color.filled())
                } else {
                    Circle::new(at, 4, color.stroke_width(2))
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
    }
    Ok(Some(svg))
}

/// Mean or maximum latency (µs): one group of bars per (thread count, source), one bar per scheduler in its
/// colour (hollow when simulated). Returns the SVG, or `None` without latency measurements (raw mode).
pub fn latency(
    reports: &[&BenchReport],
    stat: LatencyStat,
    path: &Path,
) -> Result<Option<String>, PlotError> {
    let e = err(path);
    let mut scheds: Vec<String> = Vec::new();
    let mut groups: Vec<(Source, usize)> = Vec::new();
    let mut values: Vec<(String, (Source, usize), f64)> = Vec::new();
    // The offered rate as a fraction of the maximum scaled rate (`--latency-at`), for the title.
    let mut fraction: Option<f64> = None;
    for r in reports {
        for m in &r.runs {
            let Some(l) = &m.latency else { continue };
            let v = match stat {
                LatencyStat::Mean => l.mean_ns,
                LatencyStat::Max => l.max_ns as f64,
            } / 1e3;
            if fraction.is_none()
                && let Some(s) = m.scaled.as_ref().filter(|s| s.max_pps > 0.0)
            {
                fraction = Some(l.rate_pps / s.max_pps);
            }
            if !scheds.contains(&m.scheduler) {
                scheds.push(m.scheduler.clone());
            }
            let key = (r.source, m.threads);
            if !groups.contains(&key) {
                groups.push(key);
            }
            values.push((m.scheduler.clone(), key, v));
        }
    }
    if values.is_empty() {
        return Ok(None);
    }
    groups.sort_by_key(|&(s, t)| (t, s == Source::Simulated));
    let ymax = values.iter().map(|v| v.2).fold(0.0, f64::max).max(1e-3) * 1.25;
    let trace = reports.first().map_or("", |r| r.trace.name.as_str());
    let at = match fraction {
        Some(f) => format!("{:.0}% of", f * 100.0),
        None => "a fraction of".to_string(),
    };
    let title = match stat {
        LatencyStat::Mean => format!("Average latency at {at} max scaled throughput: {trace}"),
        LatencyStat::Max => format!("Maximum latency at {at} max scaled throughput: {trace}"),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let n = groups.len();
        let names: Vec<String> = groups
            .iter()
            .map(|(s, t)| match s {
                Source::Measured => format!("{t} threads"),
                Source::Simulated => format!("{t} cores (simulated)"),
            })
            .collect();
        let mut c = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..n as f64, 0.0..ymax)
            .map_err(|x| e(&x))?;
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(n * 2 + 1)
            .x_label_formatter(&move |x: &f64| {
                // A group's name under its middle, nothing at its edges.
                if (x - x.floor() - 0.5).abs() < 0.26 {
                    names.get(x.floor() as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_desc(thread_label(reports))
            .y_desc("µs")
            .draw()
            .map_err(|x| e(&x))?;
        let width = 0.8 / scheds.len() as f64;
        for (si, name) in scheds.iter().enumerate() {
            let color = scheduler_colour(name).to_rgba();
            let rects: Vec<Rectangle<(f64, f64)>> = values
                .iter()
                .filter(|v| &v.0 == name)
                .filter_map(|(_, key, v)| {
                    let g = groups.iter().position(|x| x == key)? as f64;
                    let x0 = g + 0.1 + si as f64 * width;
                    let style = if key.0 == Source::Measured {
                        color.filled()
                    } else {
                        color.stroke_width(2)
                    };
                    Some(Rectangle::new([(x0, 0.0), (x0 + width * 0.9, *v)], style))
                })
                .collect();
            c.draw_series(rects)
                .map_err(|x| e(&x))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(Some(svg))
}

/// Draw every plot the reports have data for into `dir`: `throughput_raw.svg`, `throughput_scaled.svg`,
/// `latency_mean.svg`, `latency_max.svg`, each written through a temporary file renamed at the end. Returns the
/// files written.
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
        if let Some(svg) = draw(&p)? {
            write_svg(&p, &svg)?;
            out.push(p);
        }
    }
    Ok(out)
}

/// Writes an SVG through a temporary file renamed at the end ([`flowbundle_ingest::OutputFile`]).
pub fn write_svg(path: &Path, svg: &str) -> Result<(), PlotError> {
    use std::io::Write as _;
    let e = err(path);
    let mut f = flowbundle_ingest::OutputFile::create(path).map_err(|x| e(&x))?;
    f.write_all(svg.as_bytes()).map_err(|x| e(&x))?;
    f.commit().map_err(|x| e(&x))
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
        assert!(lat.contains("2 cores (simulated)") && lat.contains("µs"));
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

    #[test]
    fn one_colour_per_scheduler_in_every_plot() {
        // Every policy has its own colour, and a spelling of it gets the same one.
        let colours: Vec<RGBColor> = flowbundle_scheduler::ALL
            .iter()
            .map(|s| scheduler_colour(s))
            .collect();
        for (i, a) in colours.iter().enumerate() {
            assert_ne!(*a, UNKNOWN);
            assert!(!colours[i + 1..].contains(a), "{i}: {a:?} twice");
        }
        assert_eq!(
            scheduler_colour("lfb_affinity"),
            scheduler_colour("lfb-affinity")
        );
        assert_eq!(scheduler_colour("no-such-policy"), UNKNOWN);
        // The throughput and latency plots draw lfb in lfb's colour, measured or simulated, whatever the order of
        // the series.
        let dir = tempfile::tempdir().unwrap();
        let mut m = report(Source::Measured);
        m.runs.reverse();
        let s = report(Source::Simulated);
        write_all(&[&m, &s], dir.path()).unwrap();
        let RGBColor(r, g, b) = scheduler_colour("lfb");
        let lfb = format!("#{r:02X}{g:02X}{b:02X}");
        for f in ["throughput_raw.svg", "latency_mean.svg"] {
            let svg = std::fs::read_to_string(dir.path().join(f)).unwrap();
            assert!(svg.to_uppercase().contains(&lfb), "{f}: no {lfb}");
        }
    }

    #[test]
    fn thread_ticks_are_integers_on_a_log_axis_for_many_cores() {
        assert_eq!(thread_ticks(&[1, 2]), (vec![1, 2], false));
        assert_eq!(thread_ticks(&[2, 1, 2, 4]), (vec![1, 2, 3, 4], false));
        assert_eq!(
            thread_ticks(&[1, 2, 4, 8, 16, 32, 64]),
            (vec![1, 2, 4, 8, 16, 32, 64], true)
        );
        assert_eq!(thread_ticks(&[3, 40]), (vec![2, 4, 8, 16, 32, 64], true));
        assert_eq!(thread_ticks(&[]), (vec![], false));
        // The drawn axis carries those labels and no fractional one.
        let mut r = report(Source::Simulated);
        r.runs = (0..7)
            .map(|i| RunMetrics {
                scheduler: "lfb".into(),
                threads: 1 << i,
                raw: Some(Throughput {
                    pps: 1e5 * f64::from(i + 1),
                    pps_min: 0.9e5 * f64::from(i + 1),
                    pps_max: 1.1e5 * f64::from(i + 1),
                    ..Throughput::default()
                }),
                ..RunMetrics::default()
            })
            .collect();
        let svg = throughput(&[&r], Which::Raw, Path::new("t.svg"))
            .unwrap()
            .unwrap();
        // The texts of the drawing, trimmed: the x labels are the ticks, in order, and nothing in between.
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>').and_then(|(_, r)| r.split_once("</text>")))
            .map(|(t, _)| t.trim())
            .collect();
        let x_labels: Vec<&str> = texts
            .iter()
            .copied()
            .skip_while(|t| *t != "1")
            .filter(|t| !t.is_empty())
            .take(7)
            .collect();
        assert_eq!(
            x_labels,
            ["1", "2", "4", "8", "16", "32", "64"],
            "{texts:?}"
        );
        assert!(texts.contains(&"simulated cores (--cores)"), "{texts:?}");
        // Min-max error bars: the whiskers are drawn (lines at the min and the max of each point).
        assert!(svg.matches("<polyline").count() + svg.matches("<line").count() > 7);
    }
}
