//! Redis's RESP protocol: nDPI's `RESP` (it was called `Redis` in older nDPI releases).
//!
//! Clients send commands as RESP arrays of bulk strings: `*<n>\r\n$<len>\r\n<COMMAND>\r\n...`. The array header,
//! the bulk-string header and a command word of letters whose length matches `<len>` make one request certain.
//! Server replies (`+OK`, `-ERR`, `:1`, `$5`) are too short to tell alone, so a server-first payload waits for the
//! client's.

use crate::scan::{parse_u32, starts_ci};
use crate::{AppProto, Detector, Direction, Probe, ProbeCtx};

/// Reads `<prefix><digits>\r\n` at the start of `d`: the number and the bytes used.
fn header(d: &[u8], prefix: u8) -> Option<(u32, usize)> {
    if *d.first()? != prefix {
        return None;
    }
    let end = d.iter().take(12).position(|&b| b == b'\r')?;
    if d.get(end + 1) != Some(&b'\n') {
        return None;
    }
    Some((parse_u32(&d[1..end])?, end + 2))
}

/// Judges a RESP command array at the start of `d`.
fn command(d: &[u8]) -> Probe {
    if d.len() < 4 {
        return if d.first().is_none_or(|&b| b == b'*') {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    }
    let Some((n, a)) = header(d, b'*') else {
        return Probe::NotForUs;
    };
    if !(1..=1024 * 1024).contains(&n) {
        return Probe::NotForUs;
    }
    let rest = &d[a..];
    if rest.len() < 4 {
        return if rest.first().is_none_or(|&b| b == b'$') {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    }
    let Some((len, b)) = header(rest, b'$') else {
        return Probe::NotForUs;
    };
    let word = &rest[b..];
    let len = len as usize;
    if !(3..=32).contains(&len) {
        return Probe::NotForUs;
    }
    if word.len() < len + 2 {
        return if word.iter().all(u8::is_ascii_alphabetic) {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    }
    let cmd_ok = word[..len]
        .iter()
        .all(|b| b.is_ascii_alphabetic() || *b == b'.' || *b == b'_')
        && &word[len..len + 2] == b"\r\n";
    if cmd_ok {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// Detector for Redis / RESP.
pub struct RedisDetector;

impl Detector for RedisDetector {
    fn proto(&self) -> AppProto {
        AppProto::Redis
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.dir {
            Direction::ToServer => command(ctx.prefix),
            Direction::ToClient => {
                let p = ctx.prefix;
                let reply = matches!(
                    p.first(),
                    Some(b'+' | b'-' | b':' | b'$' | b'*' | b'%' | b'_')
                );
                if reply || p.is_empty() || starts_ci(p, b"+OK") {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    #[test]
    fn commands() {
        // resp.pcap: redis-cli sending COMMAND DOCS, then SET.
        assert_eq!(
            RedisDetector.probe(&ctx_tcp(
                Direction::ToServer,
                b"*2\r\n$7\r\nCOMMAND\r\n$4\r\nDOCS\r\n"
            )),
            Probe::Certain
        );
        assert_eq!(
            RedisDetector.probe(&ctx_tcp(
                Direction::ToServer,
                b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n"
            )),
            Probe::Certain
        );
        assert_eq!(
            RedisDetector.probe(&ctx_tcp(Direction::ToServer, b"*3\r\n$3")),
            Probe::Unsure
        );
        assert_eq!(
            RedisDetector.probe(&ctx_tcp(
                Direction::ToServer,
                b"*3\r\n$3\r\n\x00\x01\x02\r\n"
            )),
            Probe::NotForUs
        );
        assert_eq!(
            RedisDetector.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            RedisDetector.probe(&ctx_tcp(Direction::ToClient, b"+OK\r\n")),
            Probe::Unsure
        );
    }
}
