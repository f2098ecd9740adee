//! Ether-S-Bus, Saia-Burgess' PLC protocol over UDP: nDPI's `Ether-S-Bus`.
//!
//! Each telegram has an 11-byte header: the telegram's length (32 bits, big-endian, equal to the datagram's),
//! the protocol version (0 or 1), the protocol type (0 S-Bus, 1 data mode), a 16-bit sequence number and a
//! telegram attribute (0 request, 1 response, 2 acknowledge). The length and the small fields are certain.

use crate::scan::be32;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for Ether-S-Bus.
pub struct EtherSBusDetector;

impl Detector for EtherSBusDetector {
    fn proto(&self) -> AppProto {
        AppProto::EtherSBus
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let length_ok = be32(d, 0).is_some_and(|l| l as usize == d.len());
        let fields = matches!(d.get(4), Some(0 | 1))
            && matches!(d.get(5), Some(0 | 1))
            && matches!(d.get(8), Some(0..=2));
        if d.len() >= 11 && length_ok && fields {
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
    fn telegram_header() {
        let probe = |d: &[u8]| EtherSBusDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        // A read-counter request: length 13, version 1, S-Bus, sequence 1, request, then the S-Bus frame.
        let req = [0, 0, 0, 13, 1, 0, 0, 1, 0, 0x0a, 0x20, 0x53, 0x18];
        assert_eq!(probe(&req), Probe::Certain);
        let mut v = req;
        v[8] = 7;
        assert_eq!(probe(&v), Probe::NotForUs, "unknown attribute");
        assert_eq!(probe(&req[..12]), Probe::NotForUs, "length disagrees");
    }
}
