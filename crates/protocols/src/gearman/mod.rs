//! Gearman, the job-distribution protocol (TCP 4730): nDPI's `Gearman`.
//!
//! Binary packets start with the magic `\0REQ` (client and worker requests) or `\0RES` (server responses),
//! then a 32-bit packet type (1..42 in the protocol document) and a 32-bit data length. Magic and a known type are
//! certain.

use crate::scan::be32;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `Gearman`.
pub struct GearmanDetector;

impl Detector for GearmanDetector {
    fn proto(&self) -> AppProto {
        AppProto::Gearman
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let Some(magic) = d.get(..4) else {
            return if b"\0REQ".starts_with(d) || b"\0RES".starts_with(d) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        if magic != b"\0REQ" && magic != b"\0RES" {
            return Probe::NotForUs;
        }
        match be32(d, 4) {
            Some(t) if (1..=42).contains(&t) => Probe::Certain,
            Some(_) => Probe::NotForUs,
            None => Probe::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        GearmanDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(probe_tcp(b"\0REQ\0\0\0\x01\0\0\0\x02wc"), Probe::Certain);
        assert_eq!(probe_tcp(b"\0RES\0\0\0\x63\0\0\0\0"), Probe::NotForUs);
        assert_eq!(probe_tcp(b"\0RE"), Probe::Unsure);
        assert_eq!(probe_tcp(b"\0XYZ\0\0\0\x01"), Probe::NotForUs);
    }
}
