//! sFlow version 5 (sflow.org specification; UDP 6343): nDPI's `sFlow`.
//!
//! A datagram starts with the version (5), the agent address type (1 IPv4, 2 IPv6) and address, the sub-agent
//! id, a sequence number, the agent's uptime and the number of samples that follow, each a 32-bit format and a
//! 32-bit length. A version 5 header whose first sample's length fits the datagram is certain.

use crate::scan::be32;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `SFlow`.
pub struct SFlowDetector;

impl Detector for SFlowDetector {
    fn proto(&self) -> AppProto {
        AppProto::SFlow
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let addr = match be32(d, 4) {
            Some(1) => 4,
            Some(2) => 16,
            _ => return Probe::NotForUs,
        };
        let samples_at = 8 + addr + 12;
        let ok = be32(d, 0) == Some(5)
            && be32(d, samples_at).is_some_and(|n| (1..=64).contains(&n))
            && be32(d, samples_at + 8).is_some_and(|l| samples_at + 12 + l as usize <= d.len());
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    fn probe_udp(d: &[u8]) -> Probe {
        SFlowDetector.probe(&ctx_udp(Direction::ToServer, d, &[]))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        let mut dgram = vec![
            0, 0, 0, 5, 0, 0, 0, 1, 192, 0, 2, 1, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 1, 0, 0, 0, 0, 1,
        ];
        dgram.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(probe_udp(&dgram), Probe::Certain);
        dgram[3] = 4;
        assert_eq!(probe_udp(&dgram), Probe::NotForUs);
        dgram[3] = 5;
        dgram[35] = 200;
        assert_eq!(probe_udp(&dgram), Probe::NotForUs);
    }
}
