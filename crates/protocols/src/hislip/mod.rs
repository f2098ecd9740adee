//! HiSLIP, the IVI high-speed LAN instrument protocol (TCP 4880): nDPI's `HiSLIP`.
//!
//! A 16-byte header: the prologue `HS`, a message type (0..=25), a control code, a 32-bit parameter and a 64-bit
//! payload length; the first message of a connection (Initialize) fills its segment exactly.

use crate::scan::be32;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for HiSLIP.
pub struct HislipDetector;

impl Detector for HislipDetector {
    fn proto(&self) -> AppProto {
        AppProto::Hislip
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if !d.starts_with(b"HS") {
            return if d.len() < 2 && d.first().is_none_or(|&b| b == b'H') {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        let (Some(&ty), Some(hi), Some(lo)) = (d.get(2), be32(d, 8), be32(d, 12)) else {
            return Probe::Unsure;
        };
        let len = (u64::from(hi) << 32) | u64::from(lo);
        if ty <= 25 && len.checked_add(16) == Some(ctx.data.len() as u64) {
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

    #[allow(non_upper_case_globals)]
    const Det: HislipDetector = HislipDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut m = b"HS\x00\x00\x01\x00RS\x00\x00\x00\x00\x00\x00\x00\x07".to_vec();
        m.extend_from_slice(b"hislip0");
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &m)),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &m[..20])),
            Probe::NotForUs
        );
        // Found by fuzz/proto_detectors: a 64-bit length of all ones must not overflow.
        let mut huge = b"HS\x00\x01\x00\x00\x00\x00".to_vec();
        huge.extend_from_slice(&[0xff; 8]);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &huge)),
            Probe::NotForUs
        );
    }
}
