//! The PROXY protocol that HAProxy and other load balancers put in front of a relayed TCP connection: nDPI's
//! `HAProxy`.
//!
//! From HAProxy's specification (`doc/proxy-protocol.txt`): version 1 is one text line, `PROXY TCP4 `,
//! `PROXY TCP6 ` or `PROXY UNKNOWN`, addresses and ports, ending in CRLF within 107 bytes; version 2 starts with
//! the 12-byte signature `0D 0A 0D 0A 00 0D 0A 51 55 49 54 0A` and a version/command byte `0x20` or `0x21`.
//! Either, at the start of the client's stream, is certain.

use crate::scan::find;
use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// The version 2 signature.
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// Longest version 1 line, CRLF included.
const V1_MAX: usize = 107;

/// Detector for the PROXY protocol.
pub struct HaProxyDetector;

impl Detector for HaProxyDetector {
    fn proto(&self) -> AppProto {
        AppProto::HaProxy
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"P\r")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.dir != Direction::ToServer {
            return Probe::NotForUs;
        }
        let d = ctx.prefix;
        let want: &[u8] = if d.first() == Some(&b'P') {
            b"PROXY "
        } else {
            V2_SIGNATURE
        };
        match Probe::magic(d, want) {
            Probe::Certain => {}
            other => return other,
        }
        if want == V2_SIGNATURE {
            return match d.get(12) {
                Some(0x20 | 0x21) => Probe::Certain,
                Some(_) => Probe::NotForUs,
                None => Probe::Unsure,
            };
        }
        let head = &d[..d.len().min(V1_MAX)];
        let family_ok = [&b"PROXY TCP4 "[..], b"PROXY TCP6 ", b"PROXY UNKNOWN"]
            .iter()
            .any(|f| head.starts_with(f) || f.starts_with(head));
        match find(head, b"\r\n") {
            Some(end)
                if family_ok
                    && head[..end]
                        .iter()
                        .all(|b| b.is_ascii_graphic() || *b == b' ') =>
            {
                Probe::Certain
            }
            None if family_ok && head.len() < V1_MAX => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe(d: &[u8]) -> Probe {
        HaProxyDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn version_one_and_two_headers() {
        let mut v1 = b"PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n".to_vec();
        v1.extend_from_slice(&[0x16, 3, 1, 0, 5]);
        assert_eq!(probe(&v1), Probe::Certain);
        assert_eq!(probe(b"PROXY TCP4 192.0.2.1"), Probe::Unsure);
        assert_eq!(probe(b"PROXY FOO bar\r\n"), Probe::NotForUs);
        assert_eq!(probe(b"POST / HTTP/1.1\r\n"), Probe::NotForUs);
        let mut v2 = V2_SIGNATURE.to_vec();
        v2.extend_from_slice(&[0x21, 0x11, 0, 12]);
        assert_eq!(probe(&v2), Probe::Certain);
        v2[12] = 0x31;
        assert_eq!(probe(&v2), Probe::NotForUs);
        assert_eq!(probe(b"\r\n\r\n\0"), Probe::Unsure);
    }
}
