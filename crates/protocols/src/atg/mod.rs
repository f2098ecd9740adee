//! Automatic tank gauges (Veeder-Root TLS-300/350 serial interface over TCP): nDPI's `ATG`.
//!
//! A client sends a command as `SOH` (`0x01`), a function code (a letter, `I` inventory reports, `S` setup,
//! lower case for the computer format) followed by its digits, then optional data and a line end; the gauge
//! answers with the same function code. `SOH`, a code letter and at least five digits are certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Start of heading.
const SOH: u8 = 0x01;

/// Detector for ATG.
pub struct AtgDetector;

impl Detector for AtgDetector {
    fn proto(&self) -> AppProto {
        AppProto::Atg
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[SOH])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        let Some(rest) = p.strip_prefix(&[SOH]) else {
            return Probe::NotForUs;
        };
        match rest.first() {
            None => return Probe::Unsure,
            Some(b'I' | b'i' | b'S' | b's') => {}
            Some(_) => return Probe::NotForUs,
        }
        let digits = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits >= 5 {
            Probe::Certain
        } else if digits == rest.len() - 1 {
            Probe::Unsure
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

    #[test]
    fn commands() {
        let probe = |d: &[u8]| AtgDetector.probe(&ctx_tcp(Direction::ToServer, d));
        assert_eq!(probe(b"\x01I20100\r\n"), Probe::Certain);
        assert_eq!(probe(b"\x01i20100"), Probe::Certain);
        assert_eq!(probe(b"\x01I20"), Probe::Unsure);
        assert_eq!(probe(b"\x01I2x"), Probe::NotForUs);
        assert_eq!(probe(b"\x01\x00\x00\x00"), Probe::NotForUs);
    }
}
