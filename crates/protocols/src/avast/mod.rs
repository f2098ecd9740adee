//! Avast antivirus cloud protocol ("NOSA" framing over TCP, often on port 80): nDPI's `AVAST`.
//!
//! Messages start with the ASCII magic `NOSA` and a 16-bit big-endian length that counts the whole message.
//! Must be probed before nothing in particular: HTTP never starts with `NOSA`.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for AVAST.
pub struct AvastDetector;

impl Detector for AvastDetector {
    fn proto(&self) -> AppProto {
        AppProto::Avast
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        match crate::scan::lit_ci(p, b"NOSA") {
            crate::scan::Lit::Yes if p.starts_with(b"NOSA") => match be16(p, 4) {
                Some(l) if l >= 8 => Probe::Certain,
                Some(_) => Probe::NotForUs,
                None => Probe::Unsure,
            },
            crate::scan::Lit::Maybe => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[allow(non_upper_case_globals)]
    const Det: AvastDetector = AvastDetector;

    #[test]
    fn recognises_real_shapes() {
        let d = b"NOSA\x00\x60\x01\x01\x00\x00\x03\x01";
        assert_eq!(Det.probe(&ctx_tcp(Direction::ToServer, d)), Probe::Certain);
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToServer, b"NO")),
            Probe::Unsure
        );
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToServer, b"NOTIFY * HTTP/1.1")),
            Probe::NotForUs
        );
    }
}
