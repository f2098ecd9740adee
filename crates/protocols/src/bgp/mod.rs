//! The Border Gateway Protocol (RFC 4271; TCP 179): nDPI's `BGP`.
//!
//! Every BGP message starts with a 16-byte marker of all ones, a 16-bit length (19 to 4096) and a type (1 OPEN,
//! 2 UPDATE, 3 NOTIFICATION, 4 KEEPALIVE, 5 ROUTE-REFRESH). The marker, a valid length and type are certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `Bgp`.
pub struct BgpDetector;

impl Detector for BgpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Bgp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0xff])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let marker = d.iter().take(16).all(|&b| b == 0xff);
        if !marker {
            return Probe::NotForUs;
        }
        match (be16(d, 16), d.get(18)) {
            (Some(len), Some(&ty)) if (19..=4096).contains(&len) && (1..=5).contains(&ty) => {
                Probe::Certain
            }
            (Some(_), Some(_)) => Probe::NotForUs,
            _ => Probe::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        BgpDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        let mut keepalive = vec![0xff; 16];
        keepalive.extend_from_slice(&[0, 19, 4]);
        assert_eq!(probe_tcp(&keepalive), Probe::Certain);
        assert_eq!(probe_tcp(&keepalive[..10]), Probe::Unsure);
        keepalive[18] = 9;
        assert_eq!(probe_tcp(&keepalive), Probe::NotForUs);
    }
}
