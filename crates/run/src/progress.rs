//! Progress of a run on standard error, when it is a terminal.

use flowbundle_ingest::PacketArena;
use flowbundle_inspect::Engine;

/// Progress of a run on standard error, when it is a terminal: packets read, their rate and the flows tracked now
/// (the engine's live gauge). Hidden otherwise.
pub struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    /// A bar on standard error when it is a terminal, else nothing.
    pub fn new() -> Self {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} {elapsed_precise} {pos} packets ({per_sec}) {msg}",
        ) {
            bar.set_style(style);
        }
        Progress(Some(bar))
    }

    pub fn update(&self, arena: &PacketArena, engine: &Engine, last: bool) {
        self.show(arena.filled(), engine, last);
    }

    /// `packets` read so far; the bar is cleared when `last`.
    pub fn show(&self, packets: u64, engine: &Engine, last: bool) {
        if let Some(bar) = &self.0 {
            bar.set_position(packets);
            bar.set_message(format!("{} flows tracked", engine.table().len()));
            if last {
                bar.finish_and_clear();
            }
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}
