//! Argument types of the trace tools, parsed with clear refusals.
//!
//! * [`Rate`]: `10Gbit/s`, `10 Gb/s`, `10G`, `100Mbps`, `800kbit/s`, `1.5e9` (bit/s), and byte rates with a
//!   capital `B` (`125MB/s` = 1 Gbit/s). Prefixes are decimal (SI), as link speeds are.
//! * [`PacketRange`]: packet numbers as Wireshark shows them (the first packet is 1): `A..B` (B excluded),
//!   `A..=B`, `A..`, `..B`, `..=B`, or a single `N`.
//! * [`TimeRange`]: `T1..T2` (T2 excluded) or `T1..=T2`, either side open; a bound is seconds relative to the
//!   first packet (`1.5`), Unix epoch seconds after `@` (`@1262304000.25`), or an RFC 3339 UTC time
//!   (`2010-01-01T00:00:00.5Z`, or with an offset such as `+01:00`).

use std::fmt;
use std::str::FromStr;

/// A bit rate in bits per second (finite, > 0).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(f64);

impl Rate {
    /// A rate of `bps` bits per second; `None` unless finite and positive.
    pub fn bits_per_second(bps: f64) -> Option<Rate> {
        (bps.is_finite() && bps > 0.0).then_some(Rate(bps))
    }
    /// Bits per second.
    pub fn bps(self) -> f64 {
        self.0
    }
    /// Megabits per second (the unit of ANCS'10 Table 1).
    pub fn mbps(self) -> f64 {
        self.0 / 1e6
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (v, unit) = match self.0 {
            r if r >= 1e12 => (r / 1e12, "Tbit/s"),
            r if r >= 1e9 => (r / 1e9, "Gbit/s"),
            r if r >= 1e6 => (r / 1e6, "Mbit/s"),
            r if r >= 1e3 => (r / 1e3, "kbit/s"),
            r => (r, "bit/s"),
        };
        write!(f, "{v:.3} {unit}")
    }
}

impl FromStr for Rate {
    type Err = String;

    fn from_str(s: &str) -> Result<Rate, String> {
        let t = s.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')))
            .unwrap_or(t.len());
        // "1e9" is a number, but "1E" alone is not; an exponent needs digits after it.
        let (num, unit) = t.split_at(split);
        let value: f64 = num.parse().map_err(|_| {
            format!("`{s}` is not a rate: expected a number and a unit such as 10Gbit/s")
        })?;
        let unit = unit.trim();
        let (mult, rest) = match unit.chars().next() {
            Some('k' | 'K') => (1e3, &unit[1..]),
            Some('M') => (1e6, &unit[1..]),
            Some('G' | 'g') => (1e9, &unit[1..]),
            Some('T' | 't') => (1e12, &unit[1..]),
            _ => (1.0, unit),
        };
        let per_bit = match rest {
            "" | "b" | "bit" | "bits" | "bps" | "b/s" | "bit/s" | "bits/s" => 1.0,
            "B" | "Bps" | "B/s" | "byte/s" | "bytes/s" => 8.0,
            _ => {
                return Err(format!(
                    "`{s}`: unknown rate unit `{unit}` (use bit/s, b/s, bps or B/s with k, M, G, T)"
                ));
            }
        };
        Rate::bits_per_second(value * mult * per_bit)
            .ok_or_else(|| format!("`{s}`: a rate must be a positive, finite number"))
    }
}

/// A range of packet numbers, 1-based and inclusive at both ends once parsed (`last: None` = to the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketRange {
    /// First packet kept (1 = the first packet of the capture).
    pub first: u64,
    /// Last packet kept, inclusive; `None` for "to the end".
    pub last: Option<u64>,
}

impl PacketRange {
    /// Whether packet number `n` (1-based) is in the range.
    pub fn contains(&self, n: u64) -> bool {
        n >= self.first && self.last.is_none_or(|l| n <= l)
    }
    /// Whether every packet after number `n` lies beyond the range (reading can stop).
    pub fn is_past(&self, n: u64) -> bool {
        self.last.is_some_and(|l| n >= l)
    }
}

fn packet_number(s: &str, what: &str) -> Result<u64, String> {
    s.trim().parse::<u64>().map_err(|_| {
        format!("`{s}` is not a packet number ({what}; packets are numbered from 1, as Wireshark shows them)")
    })
}

impl FromStr for PacketRange {
    type Err = String;

    fn from_str(s: &str) -> Result<PacketRange, String> {
        let t = s.trim();
        let (first, last) = match t.split_once("..") {
            None => {
                let n = packet_number(t, "a single packet")?;
                (n, Some(n))
            }
            Some((a, b)) => {
                let first = if a.trim().is_empty() {
                    1
                } else {
                    packet_number(a, "range start")?
                };
                let last = if let Some(b) = b.strip_prefix('=') {
                    Some(packet_number(b, "inclusive range end")?)
                } else if b.trim().is_empty() {
                    None
                } else {
                    let end = packet_number(b, "range end")?;
                    if end <= first {
                        return Err(format!(
                            "`{s}`: the range is empty (the end of A..B is excluded; write A..=B to include it)"
                        ));
                    }
                    Some(end - 1)
                };
                (first, last)
            }
        };
        if first == 0 {
            return Err(format!(
                "`{s}`: packets are numbered from 1 (as Wireshark shows them), not 0"
            ));
        }
        if let Some(l) = last
            && l < first
        {
            return Err(format!("`{s}`: the range ends before it starts"));
        }
        Ok(PacketRange { first, last })
    }
}

/// One end of a time range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeBound {
    /// No bound on this side.
    Open,
    /// Seconds after the capture's first packet.
    Relative(f64),
    /// Nanoseconds since the Unix epoch.
    Absolute(u64),
}

impl TimeBound {
    /// The bound in ns since the epoch, given the capture's first timestamp. `Open` has none.
    pub fn resolve(self, first_ts_ns: u64) -> Option<u64> {
        match self {
            TimeBound::Open => None,
            TimeBound::Relative(s) => {
                let off = (s * 1e9).round();
                Some(if off <= 0.0 {
                    first_ts_ns.saturating_sub((-off) as u64)
                } else {
                    first_ts_ns.saturating_add(off as u64)
                })
            }
            TimeBound::Absolute(ns) => Some(ns),
        }
    }
}

/// A time range: `[start, end)` or `[start, end]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeRange {
    pub start: TimeBound,
    pub end: TimeBound,
    /// Whether a packet exactly at `end` is kept (`..=`).
    pub end_inclusive: bool,
}

fn time_bound(s: &str) -> Result<TimeBound, String> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(TimeBound::Open);
    }
    if let Some(epoch) = t.strip_prefix('@') {
        let secs: f64 = epoch
            .parse()
            .map_err(|_| format!("`{t}` is not a Unix time (seconds after `@`)"))?;
        if !(secs.is_finite() && (0.0..1.8e10).contains(&secs)) {
            return Err(format!("`{t}`: Unix time out of range"));
        }
        return Ok(TimeBound::Absolute((secs * 1e9).round() as u64));
    }
    if t.contains('T') && t.contains('-') && t.contains(':') {
        return rfc3339(t).map(TimeBound::Absolute);
    }
    let secs: f64 = t.parse().map_err(|_| {
        format!(
            "`{t}` is not a time: use seconds from the first packet (1.5), @UNIX-SECONDS, or an RFC 3339 time"
        )
    })?;
    if !secs.is_finite() {
        return Err(format!("`{t}`: time must be finite"));
    }
    Ok(TimeBound::Relative(secs))
}

/// An RFC 3339 time (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`) to ns since the epoch, read by `jiff`.
fn rfc3339(t: &str) -> Result<u64, String> {
    let ts: jiff::Timestamp = t
        .parse()
        .map_err(|_| format!("`{t}` is not an RFC 3339 time such as 2010-01-01T12:00:00.5Z"))?;
    let ns = ts.as_nanosecond();
    if ns < 0 {
        return Err(format!("`{t}` is before 1970"));
    }
    u64::try_from(ns).map_err(|_| format!("`{t}`: time out of range"))
}

impl FromStr for TimeRange {
    type Err = String;

    fn from_str(s: &str) -> Result<TimeRange, String> {
        let Some((a, b)) = s.split_once("..") else {
            return Err(format!(
                "`{s}` is not a time range: write T1..T2 (seconds from the first packet, @UNIX-SECONDS or RFC 3339)"
            ));
        };
        let (b, end_inclusive) = match b.strip_prefix('=') {
            Some(rest) => (rest, true),
            None => (b, false),
        };
        let range = TimeRange {
            start: time_bound(a)?,
            end: time_bound(b)?,
            end_inclusive,
        };
        if end_inclusive && range.end == TimeBound::Open {
            return Err(format!("`{s}`: `..=` needs an end"));
        }
        // Bounds of one kind can be compared now; mixed kinds are checked against the capture.
        let empty = match (range.start, range.end) {
            (TimeBound::Relative(x), TimeBound::Relative(y)) => y < x || (y == x && !end_inclusive),
            (TimeBound::Absolute(x), TimeBound::Absolute(y)) => y < x || (y == x && !end_inclusive),
            _ => false,
        };
        if empty {
            return Err(format!("`{s}`: the time range is empty"));
        }
        Ok(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        let r = |s: &str| s.parse::<Rate>().map(|r| r.bps());
        assert_eq!(r("10Gbit/s"), Ok(10e9));
        assert_eq!(r("10 Gb/s"), Ok(10e9));
        assert_eq!(r("10G"), Ok(10e9));
        assert_eq!(r("100Mbps"), Ok(100e6));
        assert_eq!(r("800kbit/s"), Ok(800e3));
        assert_eq!(r("1.5e9"), Ok(1.5e9));
        assert_eq!(r("125MB/s"), Ok(1e9));
        assert!(r("0Gbit/s").is_err());
        assert!(r("-1G").is_err());
        assert!(r("fast").is_err());
        assert!(r("10 furlongs").is_err());
        assert!(r("inf").is_err());
    }

    #[test]
    fn packet_ranges() {
        let p = |s: &str| s.parse::<PacketRange>();
        assert_eq!(
            p("1..=10"),
            Ok(PacketRange {
                first: 1,
                last: Some(10)
            })
        );
        assert_eq!(
            p("1..11"),
            Ok(PacketRange {
                first: 1,
                last: Some(10)
            })
        );
        assert_eq!(
            p("5.."),
            Ok(PacketRange {
                first: 5,
                last: None
            })
        );
        assert_eq!(
            p("..3"),
            Ok(PacketRange {
                first: 1,
                last: Some(2)
            })
        );
        assert_eq!(
            p("7"),
            Ok(PacketRange {
                first: 7,
                last: Some(7)
            })
        );
        assert!(p("0..5").unwrap_err().contains("from 1"));
        assert!(p("5..5").unwrap_err().contains("empty"));
        assert!(p("5..=4").is_err());
        assert!(p("a..b").is_err());
        let r = p("2..=3").unwrap();
        assert!(!r.contains(1) && r.contains(2) && r.contains(3) && !r.contains(4));
        assert!(r.is_past(3) && !r.is_past(2));
    }

    #[test]
    fn time_ranges() {
        let t = |s: &str| s.parse::<TimeRange>();
        let r = t("1.5..3").unwrap();
        assert_eq!(
            (r.start, r.end, r.end_inclusive),
            (TimeBound::Relative(1.5), TimeBound::Relative(3.0), false)
        );
        assert_eq!(r.start.resolve(10_000_000_000), Some(11_500_000_000));
        let r = t("@1262304000..@1262304060.5").unwrap();
        assert_eq!(r.start, TimeBound::Absolute(1_262_304_000_000_000_000));
        assert_eq!(r.end, TimeBound::Absolute(1_262_304_060_500_000_000));
        let r = t("2010-01-01T00:00:00Z..=2010-01-01T01:00:00.25+01:00").unwrap();
        assert_eq!(r.start, TimeBound::Absolute(1_262_304_000_000_000_000));
        assert_eq!(r.end, TimeBound::Absolute(1_262_304_000_250_000_000));
        assert!(r.end_inclusive);
        assert_eq!(t("..2").unwrap().start, TimeBound::Open);
        assert_eq!(t("2..").unwrap().end, TimeBound::Open);
        assert!(t("3..1").is_err());
        assert!(t("1..1").is_err());
        assert!(t("1..=1").is_ok());
        assert!(t("2010-13-01T00:00:00Z..").is_err());
        assert!(t("soon..later").is_err());
        assert!(t("5").is_err());
    }

    #[test]
    fn rfc3339_times() {
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(
            rfc3339("2000-03-01T00:00:00Z"),
            Ok(11_017 * 86_400 * 1_000_000_000)
        );
        assert_eq!(
            rfc3339("2024-02-29T00:00:00.000000001-00:30"),
            Ok((19_782 * 86_400 + 1_800) * 1_000_000_000 + 1)
        );
        assert!(rfc3339("2023-02-29T00:00:00Z").is_err());
        assert!(
            rfc3339("1969-12-31T23:59:59Z")
                .unwrap_err()
                .contains("before 1970")
        );
        assert!(
            rfc3339("2010-01-01T00:00:00").is_err(),
            "an offset is required"
        );
        assert!(rfc3339("2010-01-01T25:00:00Z").is_err());
    }
}
