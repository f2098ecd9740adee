//! NATS, the cloud messaging system (TCP 4222): nDPI's `Nats`.
//!
//! The server greets with `INFO ` and a JSON object describing itself (`server_id`, `version`, ...); the client
//! answers `CONNECT ` and a JSON object of its options (`verbose`, `pedantic`, `lang`, ...). Either, with its
//! characteristic keys, is certain.

use crate::scan::find;
use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Detector for nDPI's `Nats`.
pub struct NatsDetector;

impl Detector for NatsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Nats
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"IC")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let (verb, key): (&[u8], &[u8]) = match ctx.dir {
            Direction::ToClient => (b"INFO {", b"\"server_id\""),
            Direction::ToServer => (b"CONNECT {", b"\"verbose\""),
        };
        match Probe::magic(d, verb) {
            Probe::Certain => {}
            other => return other,
        }
        let line_end = d.iter().position(|&b| b == b'\n');
        let line = &d[..line_end.unwrap_or(d.len())];
        if find(line, key).is_some() {
            Probe::Certain
        } else if line_end.is_none() && d.len() < 4096 {
            Probe::Unsure
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
        NatsDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        let info = b"INFO {\"server_id\":\"N1\",\"version\":\"2.9.0\"}\r\n";
        let mut c = ctx_tcp(Direction::ToClient, info);
        c.payload_index = 0;
        assert_eq!(NatsDetector.probe(&c), Probe::Certain);
        assert_eq!(
            probe_tcp(b"CONNECT {\"verbose\":false,\"lang\":\"go\"}\r\n"),
            Probe::Certain
        );
        assert_eq!(
            probe_tcp(b"CONNECT example.org:443 HTTP/1.1\r\n"),
            Probe::NotForUs
        );
        assert_eq!(probe_tcp(b"CONN"), Probe::Unsure);
    }
}
