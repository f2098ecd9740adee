//! Ether-SIO, Saia-Burgess' remote I/O protocol: nDPI's `EtherSIO`.
//!
//! Every datagram starts with the ASCII magic `ESIO`, a 16-bit version (0 or 1) and a message type. Four fixed
//! bytes and a known version are certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for Ether-SIO.
pub struct EtherSioDetector;

impl Detector for EtherSioDetector {
    fn proto(&self) -> AppProto {
        AppProto::EtherSio
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"E")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        match be16(d, 4) {
            Some(0 | 1) if d.starts_with(b"ESIO") && d.len() >= 12 => Probe::Certain,
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
        let probe = |d: &[u8]| EtherSioDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        let d = b"ESIO\x00\x01\x00\x00\x00\x31\x76\x16\x00\x00\x00\x18";
        assert_eq!(probe(d), Probe::Certain);
        assert_eq!(
            probe(b"ESIO\x00\x07\x00\x00\x00\x31\x76\x16"),
            Probe::NotForUs
        );
        assert_eq!(probe(b"ESIO\x00\x01"), Probe::NotForUs);
    }
}
