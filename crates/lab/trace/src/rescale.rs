//! # `trace rescale`: the same trace at another rate
//!
//! Rewrites timestamps so that the average rate becomes the requested one (`--rate 10Gbit/s`) or is multiplied by
//! a factor (`--factor 2`: twice as fast, half the duration), keeping every relative gap: packet `i` moves to
//! `t0 + (tᵢ − t0) · s`, where `t0` is the first packet's timestamp (the start stays where it was) and `s` the time
//! scale. Nothing else changes (bytes, lengths, order).
//!
//! The average rate is defined as `trace stats` defines it: wire bits (`orig_len`) over the span between the
//! earliest and the latest timestamp. A target rate therefore needs that span before the first packet is
//! written: the input is read twice (two streaming passes, constant memory; gzip input is decompressed twice).
//! A capture whose packets all share one timestamp has no rate and is refused with `--rate`.
//!
//! Timestamps are computed in 128-bit integer nanoseconds from a scale held as a rational with a 2⁻³² step, so
//! scaling a capture of hours moves no packet by more than a nanosecond of rounding.

use std::path::Path;

use flowbundle_ingest::{CaptureReader, LinkType};
use serde::Serialize;

use crate::rewrite::progress::{Bar, TICK_EVERY};
use crate::rewrite::{Output, Rate, RunCounts, ToolError};
use crate::stats::Progress;

/// The new speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RescaleTarget {
    /// The average rate the output must have.
    Rate(Rate),
    /// Multiply the rate by this (> 0): 2 = twice as fast.
    Factor(f64),
}

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RescaleConfig {
    pub target: RescaleTarget,
    pub progress: Progress,
}

/// What a rescale did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RescaleReport {
    pub counts: RunCounts,
    /// Earliest-to-latest span before and after, in ns.
    pub duration_before_ns: u64,
    pub duration_after_ns: u64,
    /// Average rate before and after, bits per second (0 for a capture spanning no time).
    pub rate_before_bps: f64,
    pub rate_after_bps: f64,
    /// The rate factor applied (after / before).
    pub factor: f64,
}

/// Fixed-point scale: time multiplier in units of 2⁻³².
const SCALE_ONE: u128 = 1 << 32;

/// Summary of a first pass: anchor (first timestamp), span and wire bits.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    first: Option<u64>,
    min: u64,
    max: u64,
    bits: u128,
    packets: u64,
}

fn survey(input: &Path, bar: &mut Bar) -> Result<Span, ToolError> {
    let mut r = CaptureReader::open(input)?;
    let mut s = Span {
        min: u64::MAX,
        ..Span::default()
    };
    while let Some(p) = r.next_packet()? {
        s.first.get_or_insert(p.ts_ns);
        s.min = s.min.min(p.ts_ns);
        s.max = s.max.max(p.ts_ns);
        s.bits += u128::from(p.orig_len) * 8;
        s.packets += 1;
        if s.packets.is_multiple_of(TICK_EVERY) {
            bar.tick(r.position() / 2, s.packets);
        }
    }
    Ok(s)
}

/// `t0 + (t − t0) · scale / 2³²`, rounded to the nearest ns, saturating at 0 and `u64::MAX`.
fn scaled(t: u64, t0: u64, scale: u128) -> u64 {
    let d = i128::from(t) - i128::from(t0);
    let mag = (d.unsigned_abs() * scale + SCALE_ONE / 2) / SCALE_ONE;
    let v = if d >= 0 {
        i128::from(t0) + mag as i128
    } else {
        i128::from(t0) - mag as i128
    };
    v.clamp(0, i128::from(u64::MAX)) as u64
}

/// Rescales `input` into `output`; see the module documentation.
pub fn rescale_file(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    cfg: &RescaleConfig,
) -> Result<RescaleReport, ToolError> {
    let input = input.as_ref();
    if let RescaleTarget::Factor(f) = cfg.target
        && !(f.is_finite() && f > 0.0)
    {
        return Err(ToolError::usage(format!(
            "--factor must be a positive number (2 = twice as fast), not {f}"
        )));
    }
    let gzip = CaptureReader::open(input)?.format().gzip;
    let mut bar = Bar::for_file(cfg.progress, input, gzip, "rescale");
    let span = survey(input, &mut bar)?;
    let duration = span.max.saturating_sub(span.min);
    let rate_before = if duration > 0 {
        span.bits as f64 * 1e9 / duration as f64
    } else {
        0.0
    };
    let factor = match cfg.target {
        RescaleTarget::Factor(f) => f,
        RescaleTarget::Rate(r) => {
            if duration == 0 {
                bar.finish();
                return Err(ToolError::usage(if span.packets == 0 {
                    "the capture has no packets, so it has no rate to rescale".to_string()
                } else {
                    format!(
                        "all {} packets share one timestamp: the capture has no average rate to rescale (use --factor)",
                        span.packets
                    )
                }));
            }
            r.bps() / rate_before
        }
    };
    let scale_f = SCALE_ONE as f64 / factor;
    if !(scale_f.is_finite() && (1.0..1e30).contains(&scale_f)) {
        bar.finish();
        return Err(ToolError::usage(format!(
            "a rate factor of {factor:.3e} is out of range (timestamps would collapse or overflow)"
        )));
    }
    let scale = scale_f.round() as u128;
    let t0 = span.first.unwrap_or(0);
    // The bar spans both passes: the first fills its first half.
    let half = std::fs::metadata(input).map_or(0, |m| m.len() / 2);
    let mut reader = CaptureReader::open(input)?;
    let mut out = Output::new(output);
    let mut read = 0u64;
    let result: Result<(), ToolError> = (|| {
        loop {
            let position = reader.position();
            let Some(p) = reader.next_packet()? else {
                break;
            };
            read += 1;
            if read.is_multiple_of(TICK_EVERY) {
                bar.tick(half + position / 2, out.counts.written);
            }
            out.write(scaled(p.ts_ns, t0, scale), p.link_type, p.data, p.orig_len)?;
        }
        Ok(())
    })();
    bar.finish();
    result?;
    let fallback = reader
        .interfaces()
        .first()
        .map_or(LinkType::ETHERNET, |i| i.link_type);
    let counts = RunCounts {
        read,
        ..out.finish(fallback)?
    };
    let duration_after = scaled(span.max, t0, scale).saturating_sub(scaled(span.min, t0, scale));
    Ok(RescaleReport {
        counts,
        duration_before_ns: duration,
        duration_after_ns: duration_after,
        rate_before_bps: rate_before,
        rate_after_bps: if duration_after > 0 {
            span.bits as f64 * 1e9 / duration_after as f64
        } else {
            0.0
        },
        factor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowbundle_ingest::{PcapWriter, WriterOptions};

    /// 11 packets of 125 bytes, 1 ms apart: 10 ms, 11,000 bits → 1.1 Mbit/s.
    fn capture(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("in.pcap");
        let mut w = PcapWriter::create(&path, WriterOptions::new(LinkType::RAW)).unwrap();
        for i in 0..11u64 {
            w.write_packet(5_000_000_000 + i * 1_000_000, &[0x45; 40], 125)
                .unwrap();
        }
        w.close().unwrap();
        path
    }

    fn stamps(path: &Path) -> Vec<u64> {
        let mut r = CaptureReader::open(path).unwrap();
        let mut v = Vec::new();
        while let Some(p) = r.next_packet().unwrap() {
            v.push(p.ts_ns);
        }
        v
    }

    #[test]
    fn target_rate_is_reached_and_gaps_stay_proportional() {
        let dir = tempfile::tempdir().unwrap();
        let input = capture(dir.path());
        let out = dir.path().join("out.pcap");
        let cfg = RescaleConfig {
            target: RescaleTarget::Rate("11Mbit/s".parse().unwrap()),
            progress: Progress::Hidden,
        };
        let r = rescale_file(&input, &out, &cfg).unwrap();
        assert!((r.rate_before_bps - 1.1e6).abs() < 1.0);
        assert!(
            (r.rate_after_bps - 11e6).abs() < 1.0,
            "{}",
            r.rate_after_bps
        );
        assert!((r.factor - 10.0).abs() < 1e-9);
        let ts = stamps(&out);
        assert_eq!(ts.len(), 11);
        assert_eq!(ts[0], 5_000_000_000);
        for w in ts.windows(2) {
            assert_eq!(w[1] - w[0], 100_000);
        }
    }

    #[test]
    fn factor_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let input = capture(dir.path());
        let out = dir.path().join("out.pcap");
        let slow = RescaleConfig {
            target: RescaleTarget::Factor(0.5),
            progress: Progress::Hidden,
        };
        let r = rescale_file(&input, &out, &slow).unwrap();
        assert_eq!(r.duration_after_ns, 20_000_000);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let cfg = RescaleConfig {
                target: RescaleTarget::Factor(bad),
                progress: Progress::Hidden,
            };
            assert!(matches!(
                rescale_file(&input, &out, &cfg),
                Err(ToolError::Usage(_))
            ));
        }
        // One timestamp: no rate.
        let flat = dir.path().join("flat.pcap");
        let mut w = PcapWriter::create(&flat, WriterOptions::new(LinkType::RAW)).unwrap();
        w.write_packet(1, &[0x45; 20], 20).unwrap();
        w.write_packet(1, &[0x45; 20], 20).unwrap();
        w.close().unwrap();
        let cfg = RescaleConfig {
            target: RescaleTarget::Rate("1G".parse().unwrap()),
            progress: Progress::Hidden,
        };
        let e = rescale_file(&flat, &out, &cfg).unwrap_err().to_string();
        assert!(e.contains("one timestamp"), "{e}");
    }

    #[test]
    fn scaling_is_exact_for_long_spans() {
        // An hour at 1/3 speed: ±1 ns.
        let t0 = 1_600_000_000_000_000_000u64;
        let scale = (SCALE_ONE as f64 * 3.0).round() as u128;
        let t = t0 + 3_600_000_000_000;
        assert_eq!(scaled(t, t0, scale), t0 + 10_800_000_000_000);
        assert_eq!(scaled(t0 - 10, t0, scale), t0 - 30);
    }
}
