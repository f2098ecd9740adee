//! STOMP, the simple text messaging protocol of message brokers (TCP 61613): nDPI's `STOMP`.
//!
//! A session opens with a `CONNECT` or `STOMP` frame from the client, answered by `CONNECTED`: each frame is a
//! command line, header lines `name:value`, a blank line and a body ended by NUL. A first line that is exactly
//! one of those commands, followed by a header line or the blank line, is certain.

use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Detector for nDPI's `Stomp`.
pub struct StompDetector;

impl Detector for StompDetector {
    fn proto(&self) -> AppProto {
        AppProto::Stomp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"CS")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let Some(nl) = d.iter().position(|&b| b == b'\n') else {
            return if d.len() < 16 && d.iter().all(u8::is_ascii_uppercase) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let cmd = d[..nl].strip_suffix(b"\r").unwrap_or(&d[..nl]);
        let ok = match ctx.dir {
            Direction::ToServer => cmd == b"CONNECT" || cmd == b"STOMP",
            Direction::ToClient => cmd == b"CONNECTED",
        };
        if !ok {
            return Probe::NotForUs;
        }
        let rest = &d[nl + 1..];
        let Some(nl2) = rest.iter().position(|&b| b == b'\n') else {
            return if rest.len() < 256 {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let line = rest[..nl2].strip_suffix(b"\r").unwrap_or(&rest[..nl2]);
        if line.is_empty() || line.contains(&b':') {
            Probe::Certain
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        StompDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(
            probe_tcp(b"STOMP\naccept-version:1.1\n\n\0"),
            Probe::Certain
        );
        assert_eq!(probe_tcp(b"CONNECT\r\nhost:b\r\n\r\n\0"), Probe::Certain);
        assert_eq!(
            probe_tcp(b"CONNECT example.org:443 HTTP/1.1\r\n"),
            Probe::NotForUs
        );
        assert_eq!(probe_tcp(b"STOMP"), Probe::Unsure);
    }
}
