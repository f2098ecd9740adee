//! CNP/IP, LonWorks' control network protocol tunnelled over IP (ISO/IEC 14908-4, EIA-852): nDPI's `CNP-IP`.
//!
//! Every datagram starts with a common header: the packet's length (16 bits, equal to the datagram's), version 1,
//! a packet type (1 for data packets; configuration and status types above), the extended header's size in 32-bit
//! words, protocol flags, a vendor code, a session id and a sequence number. Version, type and a length equal to
//! the datagram's are certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// The common header's length.
const HEADER: usize = 20;

/// Detector for CNP/IP.
pub struct CnpIpDetector;

impl Detector for CnpIpDetector {
    fn proto(&self) -> AppProto {
        AppProto::CnpIp
    }
    fn first_bytes(&self) -> ByteSet {
        // The length's high byte: datagrams below 2 KiB.
        ByteSet::ranges(&[(0, 7)])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let length_ok = be16(d, 0).is_some_and(|l| usize::from(l) == d.len());
        let known_type = matches!(d.get(3), Some(0x01 | 0x03..=0x0a | 0x60..=0x71 | 0x7f));
        if d.len() >= HEADER && length_ok && d.get(2) == Some(&1) && known_type {
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

    #[test]
    fn common_header() {
        let mut d = vec![
            0, 0, 1, 1, 0, 0, 0, 0, 0x6b, 0x8b, 0x45, 0x67, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        d.extend_from_slice(&[0x01, 0x09, 0x01, 0xaa, 0x01, 0xa9, 0x01, 0x03]);
        let n = d.len() as u16;
        d[..2].copy_from_slice(&n.to_be_bytes());
        let probe = |d: &[u8]| CnpIpDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(&d), Probe::Certain);
        let mut v = d.clone();
        v[2] = 2;
        assert_eq!(probe(&v), Probe::NotForUs, "version 1");
        d.push(0);
        assert_eq!(probe(&d), Probe::NotForUs, "length disagrees");
    }
}
