//! The Checkmk monitoring agent (TCP 6556): nDPI's `CHECKMK`.
//!
//! The agent answers a connection by writing its report at once, which starts with the section header
//! `<<<check_mk>>>`. That header as the first bytes from the server is certain.

use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Detector for nDPI's `CheckMk`.
pub struct CheckMkDetector;

impl Detector for CheckMkDetector {
    fn proto(&self) -> AppProto {
        AppProto::CheckMk
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"<")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let want: &[u8] = b"<<<check_mk>>>";
        if ctx.dir != Direction::ToClient {
            return Probe::NotForUs;
        }
        Probe::magic(d, want)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        CheckMkDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        let mut c = ctx_tcp(Direction::ToClient, b"<<<check_mk>>>\nVersion: 2.1\n");
        c.payload_index = 0;
        assert_eq!(CheckMkDetector.probe(&c), Probe::Certain);
        assert_eq!(probe_tcp(b"<<<check_mk>>>\n"), Probe::NotForUs);
    }
}
