//! Valve's Source engine server queries (A2S over UDP): nDPI's `Source_Engine`.
//!
//! Connectionless packets start with four `0xff` bytes and a query letter; the info query is the fixed string
//! `TSource Engine Query\0`, and the info answer is `I` with a protocol version byte. Certain from one datagram.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Source_Engine.
pub struct SourceEngineDetector;

impl Detector for SourceEngineDetector {
    fn proto(&self) -> AppProto {
        AppProto::SourceEngine
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let Some(q) = ctx.data.strip_prefix(&[0xff, 0xff, 0xff, 0xff]) else {
            return Probe::NotForUs;
        };
        let ok = q.starts_with(b"TSource Engine Query\0")
            || (q.first() == Some(&b'I') && q.len() > 6 && ctx.either_port_is(27015));
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    #[allow(non_upper_case_globals)]
    const Det: SourceEngineDetector = SourceEngineDetector;

    #[test]
    fn recognises_real_shapes() {
        let d = b"\xff\xff\xff\xffTSource Engine Query\0";
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, d, &[])),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&ctx_udp(
                Direction::ToServer,
                b"\xff\xff\xff\xffgetchallenge",
                &[]
            )),
            Probe::NotForUs
        );
    }
}
