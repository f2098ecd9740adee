//! # `trace cut`: keep a range of packets or a time window
//!
//! Streams the input once ([`CaptureReader`], constant memory) and writes the packets whose number (1-based, as
//! Wireshark numbers them) and timestamp fall in the requested ranges; with both, a packet must be in both.
//! Relative times count from the *first packet of the file* (not the earliest timestamp: the two differ only in
//! captures that are out of time order). A packet range stops reading at its end; a time range reads the whole
//! file, because captures are not always in time order and a late packet may still belong to the window.
//! Packets are written unchanged (timestamps, lengths, bytes).

use std::path::Path;

use flowbundle_ingest::{CaptureReader, LinkType};
use serde::Serialize;

use crate::rewrite::progress::{Bar, TICK_EVERY};
use crate::rewrite::{Output, PacketRange, RunCounts, TimeRange, ToolError};
use crate::stats::Progress;

/// What to keep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CutConfig {
    /// Packet numbers to keep (1-based).
    pub packets: Option<PacketRange>,
    /// Time window to keep.
    pub time: Option<TimeRange>,
    /// Progress bar on stderr for long runs.
    pub progress: Progress,
}

/// What a cut did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CutReport {
    pub counts: RunCounts,
    /// Number (1-based) of the first and last packet written.
    pub first_kept: Option<u64>,
    pub last_kept: Option<u64>,
    /// Whether reading stopped at the end of the packet range (the rest of the file was not read).
    pub stopped_early: bool,
}

/// Cuts `input` into `output`; see the module documentation. Refuses a configuration without any range.
pub fn cut_file(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    cfg: &CutConfig,
) -> Result<CutReport, ToolError> {
    if cfg.packets.is_none() && cfg.time.is_none() {
        return Err(ToolError::usage(
            "trace cut needs --packets A..B or --time T1..T2 (or both)",
        ));
    }
    let input = input.as_ref();
    let mut reader = CaptureReader::open(input)?;
    let mut bar = Bar::for_file(cfg.progress, input, reader.format().gzip, "cut");
    let mut out = Output::new(output);
    let report = cut_reader(&mut reader, &mut out, cfg, &mut bar);
    bar.finish();
    let mut report = report?;
    let fallback = reader
        .interfaces()
        .first()
        .map_or(LinkType::ETHERNET, |i| i.link_type);
    report.counts = RunCounts {
        read: report.counts.read,
        ..out.finish(fallback)?
    };
    Ok(report)
}

/// The cut loop over an open reader (tests drive it directly).
pub(crate) fn cut_reader(
    reader: &mut CaptureReader,
    out: &mut Output,
    cfg: &CutConfig,
    bar: &mut Bar,
) -> Result<CutReport, ToolError> {
    let mut report = CutReport {
        counts: RunCounts::default(),
        first_kept: None,
        last_kept: None,
        stopped_early: false,
    };
    // Time bounds, resolved against the first packet once it is read.
    let mut bounds: Option<(Option<u64>, Option<u64>)> = None;
    let mut n: u64 = 0;
    loop {
        let position = reader.position();
        let Some(pkt) = reader.next_packet()? else {
            break;
        };
        n += 1;
        report.counts.read += 1;
        if n.is_multiple_of(TICK_EVERY) {
            bar.tick(position, out.counts.written);
        }
        let in_packets = cfg.packets.is_none_or(|r| r.contains(n));
        let in_time = match cfg.time {
            None => true,
            Some(t) => {
                let (lo, hi) =
                    *bounds.get_or_insert((t.start.resolve(pkt.ts_ns), t.end.resolve(pkt.ts_ns)));
                lo.is_none_or(|lo| pkt.ts_ns >= lo)
                    && hi.is_none_or(|hi| pkt.ts_ns < hi || (t.end_inclusive && pkt.ts_ns == hi))
            }
        };
        if in_packets && in_time {
            out.write(pkt.ts_ns, pkt.link_type, pkt.data, pkt.orig_len)?;
            report.first_kept.get_or_insert(n);
            report.last_kept = Some(n);
        }
        if cfg.packets.is_some_and(|r| r.is_past(n)) {
            report.stopped_early = true;
            break;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rewrite::parse::TimeBound;
    use flowbundle_ingest::{PcapWriter, WriterOptions};

    fn capture(dir: &Path, n: u64) -> std::path::PathBuf {
        let path = dir.join("in.pcap");
        let mut w = PcapWriter::create(&path, WriterOptions::new(LinkType::RAW)).unwrap();
        for i in 0..n {
            let pkt = [
                0x45, 0, 0, 20, 0, i as u8, 0, 0, 64, 59, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
            ];
            w.write_packet(1_000_000_000_000 + i * 100_000_000, &pkt, 20)
                .unwrap();
        }
        w.close().unwrap();
        path
    }

    fn kept(path: &Path) -> Vec<u8> {
        let mut r = CaptureReader::open(path).unwrap();
        let mut v = Vec::new();
        while let Some(p) = r.next_packet().unwrap() {
            v.push(p.data[5]);
        }
        v
    }

    #[test]
    fn packet_ranges_are_one_based_and_stop_early() {
        let dir = tempfile::tempdir().unwrap();
        let input = capture(dir.path(), 20);
        let out = dir.path().join("out.pcap");
        let cfg = CutConfig {
            packets: Some("3..=5".parse().unwrap()),
            time: None,
            progress: Progress::Hidden,
        };
        let r = cut_file(&input, &out, &cfg).unwrap();
        assert_eq!(kept(&out), vec![2, 3, 4]);
        assert_eq!(
            (r.first_kept, r.last_kept, r.counts.written),
            (Some(3), Some(5), 3)
        );
        assert!(r.stopped_early);
        assert_eq!(r.counts.read, 5);
    }

    #[test]
    fn relative_and_absolute_time_windows() {
        let dir = tempfile::tempdir().unwrap();
        let input = capture(dir.path(), 20);
        let out = dir.path().join("out.pcap");
        let mut cfg = CutConfig {
            packets: None,
            time: Some("0.5..1".parse().unwrap()),
            progress: Progress::Hidden,
        };
        cut_file(&input, &out, &cfg).unwrap();
        assert_eq!(kept(&out), vec![5, 6, 7, 8, 9]);
        cfg.time = Some(TimeRange {
            start: TimeBound::Absolute(1_000_000_000_000 + 1_500_000_000),
            end: TimeBound::Absolute(1_000_000_000_000 + 1_700_000_000),
            end_inclusive: true,
        });
        cut_file(&input, &out, &cfg).unwrap();
        assert_eq!(kept(&out), vec![15, 16, 17]);
        // Both ranges: the intersection.
        cfg.packets = Some("17..".parse().unwrap());
        cut_file(&input, &out, &cfg).unwrap();
        assert_eq!(kept(&out), vec![16, 17]);
    }

    #[test]
    fn refuses_without_a_range_and_writes_an_empty_capture_when_nothing_matches() {
        let dir = tempfile::tempdir().unwrap();
        let input = capture(dir.path(), 3);
        let out = dir.path().join("out.pcap");
        let none = CutConfig {
            packets: None,
            time: None,
            progress: Progress::Hidden,
        };
        assert!(matches!(
            cut_file(&input, &out, &none),
            Err(ToolError::Usage(_))
        ));
        let far = CutConfig {
            time: Some("100..200".parse().unwrap()),
            ..none
        };
        let r = cut_file(&input, &out, &far).unwrap();
        assert_eq!(r.counts.written, 0);
        assert!(kept(&out).is_empty());
        assert!(!CaptureReader::open(&out).unwrap().format().gzip);
    }
}
