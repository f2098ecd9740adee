//! The Point-to-Point Tunneling Protocol's control connection (RFC 2637; TCP 1723): nDPI's `PPTP`.
//!
//! Every control message starts with its 16-bit length, the PPTP message type 1 (control message) and the magic
//! cookie `0x1A2B3C4D`, then a control message type (1..15). The cookie in place with a valid type is certain.

use crate::scan::{be16, be32};
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `Pptp`.
pub struct PptpDetector;

impl Detector for PptpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Pptp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        match (be16(d, 0), be16(d, 2), be32(d, 4), be16(d, 8)) {
            (Some(len), Some(1), Some(0x1a2b_3c4d), Some(ty))
                if len >= 12 && (1..=15).contains(&ty) =>
            {
                Probe::Certain
            }
            (_, _, None, _) | (_, _, _, None) if d.len() < 10 => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        PptpDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        let mut sccrq = vec![
            0x00, 0x9c, 0x00, 0x01, 0x1a, 0x2b, 0x3c, 0x4d, 0x00, 0x01, 0, 0,
        ];
        sccrq.resize(156, 0);
        assert_eq!(probe_tcp(&sccrq), Probe::Certain);
        assert_eq!(probe_tcp(&sccrq[..6]), Probe::Unsure);
        sccrq[7] = 0;
        assert_eq!(probe_tcp(&sccrq), Probe::NotForUs);
    }
}
