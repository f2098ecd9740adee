//! The run timeline as an SVG, like the Pythia paper's Figure 4: offered and achieved Gbit/s, latency, devices in
//! use and power, one panel each, sharing the time axis.

use plotters::prelude::*;

use crate::sim::RunLog;

/// Draws `log` into an SVG file at `path`, written through a temporary file renamed at the end (as every other
/// output). `title` goes on top (say whether the clock was virtual and which devices were modelled).
pub fn timeline_svg(log: &RunLog, path: &std::path::Path, title: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut svg = String::new();
    draw_timeline(log, &mut svg, title)?;
    let e = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
    let mut f = flowbundle_ingest::OutputFile::create(path).map_err(|x| e(&x))?;
    f.write_all(svg.as_bytes()).map_err(|x| e(&x))?;
    f.commit().map_err(|x| e(&x))
}

fn draw_timeline(log: &RunLog, svg: &mut String, title: &str) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let root = SVGBackend::with_string(svg, (1000, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let root = root.titled(title, ("sans-serif", 18)).map_err(|x| e(&x))?;
    let panels = root.split_evenly((4, 1));
    let t_max = log.samples.last().map_or(1.0, |s| s.t_s).max(1e-3);
    let s = &log.samples;

    let max_g = s
        .iter()
        .map(|x| x.offered_gbps.max(x.achieved_gbps))
        .fold(1.0, f64::max)
        * 1.1;
    let mut c = ChartBuilder::on(&panels[0])
        .margin(8)
        .x_label_area_size(25)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..t_max, 0.0..max_g)
        .map_err(|x| e(&x))?;
    c.configure_mesh()
        .y_desc("Gbit/s")
        .draw()
        .map_err(|x| e(&x))?;
    c.draw_series(LineSeries::new(
        s.iter().map(|x| (x.t_s, x.offered_gbps)),
        &BLACK,
    ))
    .map_err(|x| e(&x))?
    .label("offered")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], BLACK));
    c.draw_series(LineSeries::new(
        s.iter().map(|x| (x.t_s, x.achieved_gbps)),
        &BLUE,
    ))
    .map_err(|x| e(&x))?
    .label("achieved")
    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], BLUE));
    c.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE)
        .draw()
        .map_err(|x| e(&x))?;

    let max_l = s.iter().map(|x| x.latency_us / 1000.0).fold(0.1, f64::max) * 1.1;
    let mut c = ChartBuilder::on(&panels[1])
        .margin(8)
        .x_label_area_size(25)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..t_max, 0.0..max_l)
        .map_err(|x| e(&x))?;
    c.configure_mesh()
        .y_desc("latency ms")
        .draw()
        .map_err(|x| e(&x))?;
    c.draw_series(LineSeries::new(
        s.iter().map(|x| (x.t_s, x.latency_us / 1000.0)),
        &RED,
    ))
    .map_err(|x| e(&x))?;

    let max_d = s
        .iter()
        .map(|x| x.active_devices.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64
        + 0.5;
    let mut c = ChartBuilder::on(&panels[2])
        .margin(8)
        .x_label_area_size(25)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..t_max, 0.0..max_d)
        .map_err(|x| e(&x))?;
    c.configure_mesh()
        .y_desc("devices")
        .draw()
        .map_err(|x| e(&x))?;
    c.draw_series(LineSeries::new(
        s.iter().map(|x| (x.t_s, x.active_devices.len() as f64)),
        &GREEN,
    ))
    .map_err(|x| e(&x))?;

    let max_p = s.iter().map(|x| x.power_w).fold(1.0, f64::max) * 1.1;
    let src = s.first().map_or("-", |x| x.power_source.label());
    let mut c = ChartBuilder::on(&panels[3])
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..t_max, 0.0..max_p)
        .map_err(|x| e(&x))?;
    c.configure_mesh()
        .x_desc("time (s)")
        .y_desc(format!("power W ({src})"))
        .draw()
        .map_err(|x| e(&x))?;
    c.draw_series(LineSeries::new(
        s.iter().map(|x| (x.t_s, x.power_w)),
        &MAGENTA,
    ))
    .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
