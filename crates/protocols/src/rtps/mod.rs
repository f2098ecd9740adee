//! RTPS, the DDS interoperability wire protocol (OMG DDSI-RTPS; UDP 7400 and up): nDPI's `RTPS`.
//!
//! Every message starts with the magic `RTPS`, the protocol version (major 2) and a vendor id, then the 12-byte
//! GUID prefix. The magic with version 2 is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for nDPI's `Rtps`.
pub struct RtpsDetector;

impl Detector for RtpsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Rtps
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"R")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if d.len() < 6 {
            return if ctx.transport == Transport::Tcp && b"RTPS".starts_with(&d[..d.len().min(4)]) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        if d.starts_with(b"RTPS") && d[4] == 2 {
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
    use crate::testkit::{ctx_tcp, ctx_udp};

    fn probe_tcp(d: &[u8]) -> Probe {
        RtpsDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    fn probe_udp(d: &[u8]) -> Probe {
        RtpsDetector.probe(&ctx_udp(Direction::ToServer, d, &[]))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(probe_udp(b"RTPS\x02\x01\x01\x01NDDSPING"), Probe::Certain);
        assert_eq!(probe_udp(b"RTPS\x01\x01"), Probe::NotForUs);
        assert_eq!(probe_tcp(b"RTP"), Probe::Unsure);
    }
}
