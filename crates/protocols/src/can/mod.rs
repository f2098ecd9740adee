//! CAN frames over Ethernet (the `ISO11898` encapsulation): nDPI's `Controller_Area_Network`.
//!
//! Gateways that bridge a CAN bus to IP send UDP datagrams that open with the eight ASCII bytes `ISO11898`, a
//! version byte (1) and the number of CAN frames that follow (at least one). Ten fixed bytes are certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// The encapsulation's magic.
const MAGIC: &[u8] = b"ISO11898";

/// Detector for CAN over Ethernet.
pub struct CanDetector;

impl Detector for CanDetector {
    fn proto(&self) -> AppProto {
        AppProto::Can
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"I")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        match (d.starts_with(MAGIC), d.get(8), d.get(9)) {
            (true, Some(1), Some(&n)) if n > 0 => Probe::Certain,
            _ => Probe::NotForUs,
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
        let mut d = b"ISO11898\x01\x01".to_vec();
        d.extend_from_slice(&[0x00, 0x00, 0x01, 0x23, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0]);
        let probe = |d: &[u8]| CanDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(&d), Probe::Certain);
        d[8] = 2;
        assert_eq!(probe(&d), Probe::NotForUs, "unknown version");
        assert_eq!(probe(b"ISO11898\x01\x00"), Probe::NotForUs, "no frame");
        assert_eq!(probe(b"ISO1189"), Probe::NotForUs);
    }
}
