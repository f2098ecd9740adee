//! The tunnel Cisco Meraki devices keep to the Meraki cloud: nDPI's `MerakiCloud`.
//!
//! Meraki devices reach their dashboard over UDP 7351 with datagrams that open with the magic `fe f7 28 91`,
//! then a message type and a 16-bit length equal to the datagram's. The magic and the length are certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// The tunnel's magic.
const MAGIC: [u8; 4] = [0xfe, 0xf7, 0x28, 0x91];

/// Detector for the Meraki cloud tunnel.
pub struct MerakiCloudDetector;

impl Detector for MerakiCloudDetector {
    fn proto(&self) -> AppProto {
        AppProto::MerakiCloud
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[MAGIC[0]])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if d.starts_with(&MAGIC) && be16(d, 6).is_some_and(|l| usize::from(l) == d.len()) {
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
    fn magic_and_length() {
        let mut d = MAGIC.to_vec();
        d.extend_from_slice(&[0x0d, 0x01, 0x00, 0x10]);
        d.extend_from_slice(&[0; 8]);
        let probe = |d: &[u8]| MerakiCloudDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(&d), Probe::Certain);
        d.push(0);
        assert_eq!(probe(&d), Probe::NotForUs, "length disagrees");
    }
}
