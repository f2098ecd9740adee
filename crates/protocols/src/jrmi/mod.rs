//! Java Remote Method Invocation's wire protocol (JRMP; TCP 1099 for the registry): nDPI's `JRMI`.
//!
//! From the Java RMI specification (chapter 10): a client opens with the magic `JRMI`, the version `00 02` and
//! a protocol byte, `0x4B` stream, `0x4C` single-op or `0x4D` multiplex. That header is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `Jrmi`.
pub struct JrmiDetector;

impl Detector for JrmiDetector {
    fn proto(&self) -> AppProto {
        AppProto::Jrmi
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"J")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let head: &[u8] = b"JRMI\x00\x02";
        if d.len() < 7 {
            return if head.starts_with(&d[..d.len().min(6)]) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        if d.starts_with(head) && matches!(d[6], 0x4b..=0x4d) {
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
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        JrmiDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(probe_tcp(b"JRMI\x00\x02\x4b"), Probe::Certain);
        assert_eq!(probe_tcp(b"JRMI\x00"), Probe::Unsure);
        assert_eq!(probe_tcp(b"JRMI\x00\x02\x50"), Probe::NotForUs);
    }
}
