//! Inputs read one after the other as one time line: [`Timeline`] notices when an input starts before the previous
//! one ended (two copies of one capture, captures given out of order), which merges unrelated flows that share
//! addresses and ports and makes flow timeouts meaningless.

use std::path::{Path, PathBuf};

/// Watches the capture times across the inputs of one run. Call [`Timeline::input`] when an input is opened and
/// [`Timeline::packet`] for each of its packets; the first packet of an input that lies before the latest time of
/// the inputs before it gives a one-line warning.
#[derive(Debug, Default)]
pub struct Timeline {
    /// The latest capture time so far, and the input it came from.
    latest: Option<(u64, PathBuf)>,
    /// The input being read, until its first packet has been seen.
    opened: Option<PathBuf>,
    /// Inputs that started before the end of an earlier one.
    pub backwards: u64,
    /// The earliest capture time seen.
    earliest: Option<u64>,
}

impl Timeline {
    /// An input is about to be read.
    pub fn input(&mut self, path: &Path) {
        self.opened = Some(path.to_path_buf());
    }

    /// A packet of the current input; `Some(warning)` when it is the input's first and time went backwards.
    #[inline]
    pub fn packet(&mut self, ts_ns: u64) -> Option<String> {
        if self.opened.is_some() {
            return self.first_packet(ts_ns);
        }
        // Every packet but an input's first: two comparisons, inline (the whole function, called for every packet
        // read, was 36 instructions a packet).
        if self.earliest.is_none_or(|e| ts_ns < e) {
            self.earliest = Some(ts_ns);
        }
        if let Some((l, _)) = &mut self.latest
            && ts_ns > *l
        {
            *l = ts_ns;
        }
        None
    }

    /// [`Timeline::packet`] for an input's first packet.
    #[cold]
    #[inline(never)]
    fn first_packet(&mut self, ts_ns: u64) -> Option<String> {
        if self.earliest.is_none_or(|e| ts_ns < e) {
            self.earliest = Some(ts_ns);
        }
        let warning = match self.opened.take() {
            Some(path) => {
                let w = match &self.latest {
                    Some((latest, prev)) if ts_ns < *latest => {
                        self.backwards += 1;
                        Some(format!(
                            "warning: {} starts {} before the latest packet of {}: time goes backwards between the \
                             inputs, read as one time line (--per-file inspects each on its own)",
                            path.display(),
                            span(*latest - ts_ns),
                            prev.display()
                        ))
                    }
                    _ => None,
                };
                if self.latest.as_ref().is_none_or(|(l, _)| ts_ns > *l) {
                    self.latest = Some((ts_ns, path));
                } else if let Some((_, p)) = &mut self.latest {
                    *p = path;
                }
                w
            }
            None => None,
        };
        if let Some((l, _)) = &mut self.latest
            && ts_ns > *l
        {
            *l = ts_ns;
        }
        warning
    }
}

impl Timeline {
    /// The earliest and the latest capture time seen (`None` before the first packet).
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((self.earliest?, self.latest.as_ref()?.0))
    }
}

/// A duration in the largest unit that keeps it readable.
fn span(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    match s {
        s if s >= 86_400.0 => format!("{:.1} days", s / 86_400.0),
        s if s >= 3_600.0 => format!("{:.1} h", s / 3_600.0),
        s if s >= 1.0 => format!("{s:.1} s"),
        _ => format!("{:.3} ms", s * 1e3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_once_per_input_that_starts_early() {
        let mut t = Timeline::default();
        t.input(Path::new("a.pcap"));
        assert!(t.packet(10_000_000_000).is_none());
        assert!(t.packet(20_000_000_000).is_none());
        t.input(Path::new("b.pcap"));
        let w = t.packet(12_000_000_000).expect("b starts before a ended");
        assert!(
            w.contains("b.pcap starts 8.0 s before the latest packet of a.pcap"),
            "{w}"
        );
        assert!(
            t.packet(11_000_000_000).is_none(),
            "only an input's first packet is compared"
        );
        t.input(Path::new("c.pcap"));
        assert!(t.packet(30_000_000_000).is_none());
        assert_eq!(t.backwards, 1);
        assert_eq!(t.span(), Some((10_000_000_000, 30_000_000_000)));
    }
}
