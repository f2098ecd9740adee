//! A progress bar on stderr for the trace tools, shown only once a run has taken a second (quick runs print
//! nothing extra). The tools call [`Bar::tick`] every few thousand packets; drawing is indicatif's, rate-limited.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::stats::Progress;

const DELAY: Duration = Duration::from_secs(1);

/// Packets between two calls to [`Bar::tick`] in the tools' loops.
pub const TICK_EVERY: u64 = 8192;

/// What the bar counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Input bytes (a file's size is the total).
    Bytes,
    /// Packets (the synthesizer knows how many it will write).
    Packets,
}

/// A delayed progress bar; does nothing in [`Progress::Hidden`] mode.
#[derive(Debug)]
pub struct Bar {
    bar: Option<ProgressBar>,
    start: Instant,
    shown: bool,
    total: Option<u64>,
    unit: Unit,
}

impl Bar {
    /// A bar counting `unit` towards `total` (a spinner when the total is unknown, e.g. gzip input).
    pub fn new(mode: Progress, unit: Unit, total: Option<u64>, label: &str) -> Bar {
        let bar = (mode == Progress::Stderr).then(|| {
            let b = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
            let tmpl = match (unit, total) {
                (Unit::Bytes, Some(_)) => {
                    "{prefix} {elapsed_precise} [{bar:40}] {bytes}/{total_bytes} ({eta}) {msg}"
                }
                (Unit::Bytes, None) => "{prefix} {spinner} {elapsed_precise} {bytes} {msg}",
                (Unit::Packets, Some(_)) => {
                    "{prefix} {elapsed_precise} [{bar:40}] {human_pos}/{human_len} packets ({eta}) {msg}"
                }
                (Unit::Packets, None) => "{prefix} {spinner} {elapsed_precise} {human_pos} packets {msg}",
            };
            if let Ok(s) = ProgressStyle::with_template(tmpl) {
                b.set_style(s.progress_chars("=> "));
            }
            b.set_prefix(label.to_string());
            b
        });
        Bar {
            bar,
            start: Instant::now(),
            shown: false,
            total,
            unit,
        }
    }

    /// A byte bar for reading the file at `path` (its size is the total unless it is gzip-compressed, whose
    /// decompressed size is unknown).
    pub fn for_file(mode: Progress, path: &std::path::Path, gzip: bool, label: &str) -> Bar {
        let total = if gzip {
            None
        } else {
            std::fs::metadata(path).ok().map(|m| m.len())
        };
        Bar::new(mode, Unit::Bytes, total, label)
    }

    /// Report progress: `position` in the bar's unit, and the packets written so far for the message.
    pub fn tick(&mut self, position: u64, packets: u64) {
        let Some(bar) = &self.bar else { return };
        if !self.shown {
            if self.start.elapsed() < DELAY {
                return;
            }
            bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        bar.set_position(self.total.map_or(position, |t| position.min(t)));
        if self.unit == Unit::Bytes {
            bar.set_message(format!("{packets} packets"));
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
