//! Flow export: Cisco NetFlow v5 and v9 (RFC 3954) and IPFIX (RFC 7011, "version 10"), over UDP: nDPI's
//! `NetFlow`.
//!
//! * v5: a 24-byte header (version 5, record count 1..=30, ...) and `count` 48-byte records: the datagram is
//!   exactly `24 + 48 * count` bytes.
//! * v9: a 20-byte header (version 9, count, uptime, seconds, sequence, source id) and flowsets, each a 16-bit id
//!   (0 templates, 1 option templates, 256 and up data) and a 16-bit length that fits the datagram.
//! * IPFIX: a 16-byte header (version 10, message length = the datagram's) and sets (2, 3, or 256 and up).
//!
//! A header matching one of these is certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `NetFlow`.
pub struct NetFlowDetector;

impl Detector for NetFlowDetector {
    fn proto(&self) -> AppProto {
        AppProto::NetFlow
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let set_ok = |at: usize, ids: fn(u16) -> bool| match (be16(d, at), be16(d, at + 2)) {
            (Some(id), Some(len)) => ids(id) && len >= 4 && at + usize::from(len) <= d.len(),
            _ => false,
        };
        let ok = match be16(d, 0) {
            Some(5) => be16(d, 2)
                .is_some_and(|c| (1..=30).contains(&c) && d.len() == 24 + 48 * usize::from(c)),
            Some(9) => be16(d, 2).is_some_and(|c| c > 0) && set_ok(20, |id| id <= 1 || id >= 256),
            Some(10) => {
                be16(d, 2).is_some_and(|l| usize::from(l) == d.len())
                    && set_ok(16, |id| id == 2 || id == 3 || id >= 256)
            }
            _ => false,
        };
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    fn probe_udp(d: &[u8]) -> Probe {
        NetFlowDetector.probe(&ctx_udp(Direction::ToServer, d, &[]))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        let mut ipfix = vec![0, 10, 0, 0, 0x59, 0x4a, 0xc5, 0x9d, 0, 0, 0, 1, 0, 0, 0, 0];
        ipfix.extend_from_slice(&[0, 2, 0, 8, 1, 0, 0, 1]);
        let l = ipfix.len() as u16;
        ipfix[2..4].copy_from_slice(&l.to_be_bytes());
        assert_eq!(probe_udp(&ipfix), Probe::Certain);
        let mut v5 = vec![0, 5, 0, 1];
        v5.resize(24 + 48, 0);
        assert_eq!(probe_udp(&v5), Probe::Certain);
        v5.pop();
        assert_eq!(probe_udp(&v5), Probe::NotForUs);
        ipfix[17] = 4;
        assert_eq!(probe_udp(&ipfix), Probe::NotForUs);
    }
}
