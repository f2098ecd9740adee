//! Citrix ICA, the remote display protocol (TCP 1494, and 2598 with session reliability): nDPI's `Citrix`.
//!
//! An ICA connection starts with both ends sending the detect string `7F 7F 49 43 41 00` (`\x7f\x7fICA\0`). That
//! string is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `Citrix`.
pub struct CitrixDetector;

impl Detector for CitrixDetector {
    fn proto(&self) -> AppProto {
        AppProto::Citrix
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x7f])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let want: &[u8] = b"\x7f\x7fICA\x00";
        Probe::magic(d, want)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        CitrixDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(probe_tcp(b"\x7f\x7fICA\x00"), Probe::Certain);
        assert_eq!(probe_tcp(b"\x7f\x7fI"), Probe::Unsure);
        assert_eq!(probe_tcp(b"\x7f\x7fXYZ\x00"), Probe::NotForUs);
    }
}
