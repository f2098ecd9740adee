//! HTTP/2 over cleartext TCP with prior knowledge (RFC 9113, section 3.4): nDPI's `HTTP2`.
//!
//! The client's connection preface is the fixed string `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` (then a SETTINGS frame).
//! The preface is certain. (HTTP/2 over TLS is TLS with the ALPN `h2`.)

use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Detector for nDPI's `Http2`.
pub struct Http2Detector;

impl Detector for Http2Detector {
    fn proto(&self) -> AppProto {
        AppProto::Http2
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"P")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let preface: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        if ctx.dir != Direction::ToServer {
            return Probe::NotForUs;
        }
        Probe::magic(d, preface)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        Http2Detector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(
            probe_tcp(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04"),
            Probe::Certain
        );
        assert_eq!(probe_tcp(b"PRI * HTTP/2"), Probe::Unsure);
        assert_eq!(probe_tcp(b"POST / HTTP/1.1\r\n"), Probe::NotForUs);
    }
}
