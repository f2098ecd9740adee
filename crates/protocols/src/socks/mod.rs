//! SOCKS proxy handshakes, versions 4/4a and 5 (TCP 1080): nDPI's `SOCKS`.
//!
//! * SOCKS5 (RFC 1928): the client greets with `05 N` and N authentication methods (the greeting is exactly
//!   `2 + N` bytes); the server answers with two bytes, `05` and the method it chose (one of the client's, or
//!   `FF` for none).
//! * SOCKS4 (and 4a): the client sends `04`, a command (1 connect, 2 bind), a port, an IPv4 address and a
//!   NUL-terminated user id (4a: address `0.0.0.x` followed by a NUL-terminated host name); the server answers
//!   with 8 bytes, `00` and a status `5A`..`5D`.
//!
//! A client greeting alone is a few bytes other binary protocols could start with, so it is only `Unsure`; the
//! server's matching answer as the first bytes it sends makes it certain.

use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Detector for SOCKS.
pub struct SocksDetector;

/// Whether `d` is a whole SOCKS5 client greeting.
fn socks5_greeting(d: &[u8]) -> bool {
    match d {
        [5, n, methods @ ..] => {
            *n > 0 && methods.len() == usize::from(*n) && !methods.contains(&0xff)
        }
        _ => false,
    }
}

/// Whether `d` is a whole SOCKS4/4a request.
fn socks4_request(d: &[u8]) -> bool {
    let [4, 1 | 2, _, _, a, b, c, x, rest @ ..] = d else {
        return false;
    };
    let Some(user_end) = rest.iter().position(|&b| b == 0) else {
        return false;
    };
    let after = &rest[user_end + 1..];
    let user_ok = rest[..user_end].iter().all(|b| b.is_ascii_graphic());
    if (*a, *b, *c) == (0, 0, 0) && *x != 0 {
        // 4a: a host name follows, NUL-terminated, ending the request.
        after.last() == Some(&0)
            && after.len() > 1
            && after[..after.len() - 1]
                .iter()
                .all(|b| b.is_ascii_graphic())
            && user_ok
    } else {
        after.is_empty() && user_ok
    }
}

impl Detector for SocksDetector {
    fn proto(&self) -> AppProto {
        AppProto::Socks
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0, 4, 5])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        match ctx.dir {
            Direction::ToServer if ctx.dir_index == 0 => {
                if socks5_greeting(d) || socks4_request(d) {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            }
            // The client spoke first with a greeting (else this detector would be out): the server's first bytes.
            Direction::ToClient if ctx.dir_index == 0 && ctx.payload_index > 0 => match d {
                [5, m] if *m != 0xfe => Probe::Certain,
                [0, 0x5a..=0x5d, _, _, _, _, _, _] => Probe::Certain,
                _ => Probe::NotForUs,
            },
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe(dir: Direction, d: &[u8], payload_index: u32) -> Probe {
        let mut c = ctx_tcp(dir, d);
        c.payload_index = payload_index;
        SocksDetector.probe(&c)
    }

    #[test]
    fn a_socks5_greeting_and_its_answer() {
        assert_eq!(probe(Direction::ToServer, &[5, 2, 0, 1], 0), Probe::Unsure);
        assert_eq!(probe(Direction::ToClient, &[5, 0], 1), Probe::Certain);
        // Wrong method count, server speaking first, a longer answer.
        assert_eq!(
            probe(Direction::ToServer, &[5, 3, 0, 1], 0),
            Probe::NotForUs
        );
        assert_eq!(probe(Direction::ToClient, &[5, 0], 0), Probe::NotForUs);
        assert_eq!(probe(Direction::ToClient, &[5, 0, 1], 1), Probe::NotForUs);
    }

    #[test]
    fn a_socks4_request_and_its_answer() {
        let mut req = vec![4, 1, 0, 80, 93, 184, 216, 34];
        req.extend_from_slice(b"user\0");
        assert_eq!(probe(Direction::ToServer, &req, 0), Probe::Unsure);
        let mut req4a = vec![4, 1, 0, 80, 0, 0, 0, 1, 0];
        req4a.extend_from_slice(b"example.com\0");
        assert_eq!(probe(Direction::ToServer, &req4a, 0), Probe::Unsure);
        assert_eq!(
            probe(Direction::ToClient, &[0, 0x5a, 0, 80, 93, 184, 216, 34], 1),
            Probe::Certain
        );
        req.push(7);
        assert_eq!(probe(Direction::ToServer, &req, 0), Probe::NotForUs);
    }
}
