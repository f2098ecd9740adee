//! Suricata's EVE timestamp format, `2026-11-22T00:10:42.123456+0000`, in UTC.
//!
//! The calendar is `jiff`'s (the project's one date crate); the fields are written with `write!`, so formatting an
//! event's timestamp does not allocate.

use std::io::{self, Write};

use jiff::Timestamp;
use jiff::tz::Offset;

/// Writes `ts_ns` (nanoseconds since the Unix epoch) as `YYYY-MM-DDTHH:MM:SS.uuuuuu+0000`.
pub fn write_timestamp(out: &mut impl Write, ts_ns: u64) -> io::Result<()> {
    // Every u64 of nanoseconds (up to year 2554) is inside jiff's range; the fallback is unreachable.
    let ts = Timestamp::from_nanosecond(i128::from(ts_ns)).unwrap_or(Timestamp::UNIX_EPOCH);
    let dt = Offset::UTC.to_datetime(ts);
    write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+0000",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.subsec_nanosecond() / 1_000
    )
}

/// The timestamp as a string.
pub fn timestamp(ts_ns: u64) -> String {
    let mut v = Vec::with_capacity(31);
    let _ = write_timestamp(&mut v, ts_ns);
    String::from_utf8(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_suricata() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000000+0000");
        // 2009-11-13T17:33:34.430569 UTC (one_http_stream_fin.pcap's first packet).
        assert_eq!(
            timestamp(1_258_133_614_430_569_000),
            "2009-11-13T17:33:34.430569+0000"
        );
        // A leap day and the year 2000.
        assert_eq!(
            timestamp(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000000+0000"
        );
        assert_eq!(
            timestamp(1_795_306_242_123_456_789),
            "2026-11-22T00:10:42.123456+0000"
        );
        // Microseconds are truncated, not rounded; the last representable nanosecond still formats.
        assert_eq!(timestamp(999_999), "1970-01-01T00:00:00.000999+0000");
        assert_eq!(timestamp(u64::MAX), "2554-07-21T23:34:33.709551+0000");
    }

    #[test]
    fn agrees_with_day_arithmetic_across_four_centuries() {
        // Day by day from 1970 to 2370 (every leap rule: 4, 100 and 400 years), against the count of days in each
        // year and month kept here independently of the formatting code.
        let mut day: u64 = 0;
        for year in 1970u64..2370 {
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
            let lengths = [
                31,
                if leap { 29 } else { 28 },
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ];
            for (m, &len) in lengths.iter().enumerate() {
                for d in 1..=len {
                    let ns = (day * 86_400 + 3_723) * 1_000_000_000 + 456_789_000;
                    let want = format!("{year:04}-{:02}-{d:02}T01:02:03.456789+0000", m + 1);
                    assert_eq!(timestamp(ns), want);
                    day += 1;
                }
            }
        }
    }
}
