//! A progress bar on stderr that appears only once a run has taken a second, so quick runs print nothing extra
//! and slow ones show how far they got. Drawing is indicatif's (rate-limited to 20 Hz); the reader polls
//! [`DelayedBar::tick`] every few thousand packets, so the clock is read a few hundred times a second at most.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether to show progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Progress {
    /// Never (library use, tests, `--json` into a pipe is still fine with [`Progress::Stderr`]).
    #[default]
    Hidden,
    /// On stderr, for runs that take longer than a second.
    Stderr,
}

/// How long a run goes before the bar appears.
const DELAY: Duration = Duration::from_secs(1);

pub(crate) struct DelayedBar {
    bar: Option<ProgressBar>,
    start: Instant,
    shown: bool,
    /// Total bytes to read when known (uncompressed files), for a bar with an end; else a spinner.
    total: Option<u64>,
}

impl DelayedBar {
    pub(crate) fn new(mode: Progress, total: Option<u64>) -> Self {
        let bar = (mode == Progress::Stderr).then(|| {
            let b = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
            let style = match total {
                Some(_) => ProgressStyle::with_template(
                    "{spinner} {elapsed_precise} [{bar:40}] {bytes}/{total_bytes} ({eta}) {msg}",
                ),
                None => {
                    ProgressStyle::with_template("{spinner} {elapsed_precise} {bytes} read {msg}")
                }
            };
            if let Ok(s) = style {
                b.set_style(s.progress_chars("=> "));
            }
            b
        });
        DelayedBar {
            bar,
            start: Instant::now(),
            shown: false,
            total,
        }
    }

    /// Reports `position` bytes read and `packets` packets so far.
    pub(crate) fn tick(&mut self, position: u64, packets: u64) {
        let Some(bar) = &self.bar else { return };
        if !self.shown {
            if self.start.elapsed() < DELAY {
                return;
            }
            bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        bar.set_position(self.total.map_or(position, |t| position.min(t)));
        bar.set_message(format!("{packets} packets"));
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
