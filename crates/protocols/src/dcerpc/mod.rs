//! DCE/RPC (MS-RPCE), connection-oriented over TCP and connectionless over UDP: nDPI's `DCERPC`.
//!
//! * TCP: version 5, minor 0 or 1, a PDU type 0..=19, the data representation (`0x10` little-endian or `0x00`,
//!   ASCII, IEEE) and a fragment length that equals the bytes that arrived.
//! * UDP: version 4, PDU type 0..=10, the same data representation, and the 80-byte header's fragment length
//!   accounting for the rest of the datagram.

use crate::scan::{be16, le16};
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// Detector for DCERPC.
pub struct DcerpcDetector;

impl Detector for DcerpcDetector {
    fn proto(&self) -> AppProto {
        AppProto::Dcerpc
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let drep_ok = |i: usize| {
            d.get(i).is_some_and(|&b| b & 0xee == 0)
                && d.get(i + 1) == Some(&0)
                && d.get(i + 2) == Some(&0)
        };
        let ok = match ctx.transport {
            Transport::Icmp | Transport::Other(_) => return Probe::NotForUs,
            Transport::Tcp => {
                d.len() >= 16
                    && d[0] == 5
                    && d[1] <= 1
                    && d[2] <= 19
                    && drep_ok(4)
                    && (if d[4] & 0x10 != 0 {
                        le16(d, 8)
                    } else {
                        be16(d, 8)
                    })
                    .is_some_and(|l| usize::from(l) == d.len())
            }
            Transport::Udp => {
                d.len() >= 80
                    && d[0] == 4
                    && d[1] <= 10
                    && drep_ok(4)
                    && (if d[4] & 0x10 != 0 {
                        le16(d, 74)
                    } else {
                        be16(d, 74)
                    })
                    .is_some_and(|l| usize::from(l) + 80 == d.len())
            }
        };
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;

    #[allow(non_upper_case_globals)]
    const Det: DcerpcDetector = DcerpcDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut bind = vec![
            0x05, 0x00, 0x0b, 0x03, 0x10, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x01, 0, 0, 0,
        ];
        bind.extend_from_slice(&[0u8; 56]);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &bind)),
            Probe::Certain
        );
        let mut cl = vec![0x04, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00];
        cl.extend_from_slice(&[0u8; 66]);
        cl.extend_from_slice(&[0x00, 0x04, 0, 0, 0, 0]);
        cl.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_udp(Direction::ToServer, &cl, &[])),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&crate::testkit::ctx_udp(
                Direction::ToServer,
                &cl[..83],
                &[]
            )),
            Probe::NotForUs
        );
    }
}
