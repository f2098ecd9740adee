//! HL7 version 2 messages over MLLP, the minimal lower layer protocol of health-care interfaces: nDPI's `HL7`.
//!
//! MLLP frames a message between a start byte `0x0B` and the end bytes `0x1C 0x0D`; every HL7 v2 message starts
//! with its `MSH` segment, whose next byte is the field separator (conventionally `|`). `0x0B` followed by `MSH`
//! and a field separator is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `Hl7`.
pub struct Hl7Detector;

impl Detector for Hl7Detector {
    fn proto(&self) -> AppProto {
        AppProto::Hl7
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x0b])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let want = b"\x0bMSH";
        if d.len() < 5 {
            return if want.starts_with(d) || (d.len() == 4 && d == want) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        if d.starts_with(want) && d[4].is_ascii_punctuation() {
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
        Hl7Detector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(probe_tcp(b"\x0bMSH|^~\\&|SENDER|FACILITY|"), Probe::Certain);
        assert_eq!(probe_tcp(b"\x0bMS"), Probe::Unsure);
        assert_eq!(probe_tcp(b"\x0bPID|1"), Probe::NotForUs);
    }
}
