//! RTMP, Adobe's Real-Time Messaging Protocol (the 2012 specification, section 5.2): nDPI's `RTMP`.
//!
//! The handshake opens with C0, one version byte (3; 6 for RTMPE), and C1, 1536 bytes (a timestamp, four more
//! bytes, random data); the server answers S0 with the same version byte, S1 and S2. A client stream that
//! started with the version byte and carried the whole of C0 and C1, answered by a server stream starting with
//! the same byte, is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// C0 + C1.
const C0_C1: usize = 1 + 1536;

/// Detector for RTMP.
pub struct RtmpDetector;

impl Detector for RtmpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Rtmp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[3, 6])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.transport != Transport::Tcp {
            return Probe::NotForUs;
        }
        let (mine, peer) = (ctx.prefix, ctx.peer);
        let version = |p: &[u8]| p.first().copied().filter(|v| matches!(v, 3 | 6));
        match (version(mine), version(peer)) {
            (Some(a), Some(b)) if a == b && (mine.len() >= C0_C1 || peer.len() >= C0_C1) => {
                Probe::Certain
            }
            (Some(_), None) if peer.is_empty() => Probe::Unsure,
            (Some(_), Some(_)) if mine.len() < C0_C1 && peer.len() < C0_C1 => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;
    use crate::{Direction, ProbeCtx};

    #[test]
    fn handshake() {
        let mut c0c1 = vec![3, 0, 0, 0x07, 0xaa, 0, 0, 0, 0];
        c0c1.resize(C0_C1, 0x5a);
        let s0s1 = {
            let mut s = vec![3, 0x3d, 0xd5, 0xb7, 0, 0, 0, 0, 0];
            s.resize(C0_C1, 0x17);
            s
        };
        let probe = |d: &[u8], peer: &[u8]| {
            RtmpDetector.probe(&ProbeCtx {
                peer,
                ..ctx_tcp(Direction::ToServer, d)
            })
        };
        assert_eq!(probe(&c0c1[..1460], b""), Probe::Unsure);
        assert_eq!(probe(&s0s1[..1460], &c0c1), Probe::Certain);
        assert_eq!(probe(&s0s1[..1460], &c0c1[..100]), Probe::Unsure);
        let mut tpkt = s0s1.clone();
        tpkt[0] = 6;
        assert_eq!(
            probe(&tpkt[..1460], &c0c1),
            Probe::NotForUs,
            "versions differ"
        );
    }
}
