//! TeamSpeak 3 voice chat (UDP 9987): nDPI's `TeamSpeak`.
//!
//! A TeamSpeak 3 client opens its connection with init packets whose payload starts with the ASCII marker
//! `TS3INIT1`, followed by the packet id and flags of the init handshake. The marker is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `TeamSpeak`.
pub struct TeamSpeakDetector;

impl Detector for TeamSpeakDetector {
    fn proto(&self) -> AppProto {
        AppProto::TeamSpeak
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"T")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.data.starts_with(b"TS3INIT1") && ctx.data.len() >= 11 {
            Probe::Certain
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    fn probe_udp(d: &[u8]) -> Probe {
        TeamSpeakDetector.probe(&ctx_udp(Direction::ToServer, d, &[]))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(
            probe_udp(b"TS3INIT1\x00\x65\x00\x00\x88\x0d\xd0\x57"),
            Probe::Certain
        );
        assert_eq!(probe_udp(b"TS3INIT"), Probe::NotForUs);
    }
}
