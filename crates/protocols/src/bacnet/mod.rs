//! BACnet/IP (ASHRAE 135 Annex J): nDPI's `BACnet`.
//!
//! Each datagram starts with the BVLC header: type `0x81`, a function code (0x00..=0x0c), and a 16-bit length
//! equal to the datagram's. Original-Unicast/Broadcast NPDUs (functions 0x0a/0x0b) are followed by an NPDU with
//! version 1. Certain from one datagram.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Whether `d` is one BACnet/IP datagram.
pub fn is_bvlc(d: &[u8]) -> bool {
    let (Some(&t), Some(&f), Some(len)) = (d.first(), d.get(1), be16(d, 2)) else {
        return false;
    };
    let npdu_ok = match f {
        0x0a | 0x0b => d.get(4) == Some(&0x01),
        0x04 => d.get(10) == Some(&0x01),
        _ => true,
    };
    t == 0x81 && f <= 0x0c && usize::from(len) == d.len() && npdu_ok
}

/// Detector for BACnet/IP.
pub struct BacnetDetector;

impl Detector for BacnetDetector {
    fn proto(&self) -> AppProto {
        AppProto::Bacnet
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if is_bvlc(ctx.data) {
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
    fn who_is() {
        // Original-Broadcast-NPDU carrying a Who-Is.
        let d = [
            0x81, 0x0b, 0x00, 0x0c, 0x01, 0x20, 0xff, 0xff, 0x00, 0xff, 0x10, 0x08,
        ];
        assert_eq!(
            BacnetDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        assert_eq!(
            BacnetDetector.probe(&ctx_udp(Direction::ToServer, &d[..11], &[])),
            Probe::NotForUs
        );
    }
}
