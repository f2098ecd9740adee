//! PFCP, the 5G/LTE control-to-user-plane protocol (3GPP TS 29.244): nDPI's `PFCP`.
//!
//! Every message starts with a header: version 1 in the top three bits of the first byte (two spare bits zero,
//! then the follow-on, message-priority and SEID flags), a message type (node messages 1-15, session messages
//! 50-57) and a 16-bit length of what follows the first four bytes. Version, type and a length that matches the
//! datagram are certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for PFCP.
pub struct PfcpDetector;

impl Detector for PfcpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Pfcp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::ranges(&[(0x20, 0x27)])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let header = d.first().is_some_and(|b| b & 0xf8 == 0x20);
        let known = matches!(d.get(1), Some(1..=15 | 50..=57));
        let length_ok = be16(d, 2).is_some_and(|l| usize::from(l) + 4 == d.len());
        // With the SEID flag the header is 16 bytes, else 8.
        let min = if d.first().is_some_and(|b| b & 1 != 0) {
            16
        } else {
            8
        };
        if header && known && length_ok && d.len() >= min {
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
    fn header() {
        let probe = |d: &[u8]| PfcpDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        // Heartbeat request (type 1) with a Recovery Time Stamp IE.
        let hb = [0x20, 1, 0, 12, 0, 0, 1, 0, 0, 0x60, 0, 4, 0xe0, 0, 0, 0];
        assert_eq!(probe(&hb), Probe::Certain);
        let mut v = hb;
        v[1] = 40;
        assert_eq!(probe(&v), Probe::NotForUs, "unknown message type");
        v = hb;
        v[0] = 0x40;
        assert_eq!(probe(&v), Probe::NotForUs, "version 2");
        assert_eq!(probe(&hb[..15]), Probe::NotForUs);
    }
}
