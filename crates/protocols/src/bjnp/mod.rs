//! Canon BJNP (printer/scanner discovery and control over UDP 8611-8614): nDPI's `BJNP`.
//!
//! Every message starts with the ASCII magic `BJNP` (`BJNB` for some scanners), then a device type (1 printer, 2
//! scanner, with bit 7 set in responses) and a command code. Certain from one datagram.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for BJNP.
pub struct BjnpDetector;

impl Detector for BjnpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Bjnp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let magic = d.starts_with(b"BJNP") || d.starts_with(b"BJNB");
        let ty = d.get(4).map(|t| t & 0x7f);
        if magic && d.len() >= 16 && matches!(ty, Some(1..=3)) {
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

    #[allow(non_upper_case_globals)]
    const Det: BjnpDetector = BjnpDetector;

    #[test]
    fn recognises_real_shapes() {
        let d = [
            0x42, 0x4a, 0x4e, 0x50, 0x02, 0x01, 0x00, 0x00, 0x17, 0xa4, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, &d[..8], &[])),
            Probe::NotForUs
        );
    }
}
