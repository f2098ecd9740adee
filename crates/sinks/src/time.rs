//! Suricata's EVE timestamp format, `2026-11-22T00:10:42.123456+0000`, in UTC.
//!
//! Written by hand (days-from-civil arithmetic) rather than with a date crate: it is the only date formatting the
//! project needs, it runs once per event, and it must not allocate.

use std::io::{self, Write};

/// Writes `ts_ns` (nanoseconds since the Unix epoch) as `YYYY-MM-DDTHH:MM:SS.uuuuuu+0000`.
pub fn write_timestamp(out: &mut impl Write, ts_ns: u64) -> io::Result<()> {
    let secs = ts_ns / 1_000_000_000;
    let micros = (ts_ns % 1_000_000_000) / 1_000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}+0000",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The timestamp as a string.
pub fn timestamp(ts_ns: u64) -> String {
    let mut v = Vec::with_capacity(31);
    let _ = write_timestamp(&mut v, ts_ns);
    String::from_utf8(v).unwrap_or_default()
}

/// Howard Hinnant's `civil_from_days`: (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
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
    }
}
