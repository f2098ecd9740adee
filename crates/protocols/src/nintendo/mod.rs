//! Nintendo's peer-to-peer game sessions (the PIA library of Switch and 3DS games): nDPI's `Nintendo`.
//!
//! Every PIA datagram starts with the magic `32 ab 98 64` and a version byte; the rest is encrypted. Four fixed
//! bytes plus a small version number (the library's versions are single digits) are certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// PIA's packet magic.
const MAGIC: [u8; 4] = [0x32, 0xab, 0x98, 0x64];

/// Detector for Nintendo PIA.
pub struct NintendoDetector;

impl Detector for NintendoDetector {
    fn proto(&self) -> AppProto {
        AppProto::Nintendo
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[MAGIC[0]])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        match d.get(4) {
            Some(1..=9) if d.starts_with(&MAGIC) && d.len() >= 16 => Probe::Certain,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    #[test]
    fn magic_and_version() {
        let mut d = MAGIC.to_vec();
        d.push(2);
        d.extend_from_slice(&[0x5a; 55]);
        let probe = |d: &[u8]| NintendoDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(&d), Probe::Certain);
        assert_eq!(probe(&d[..10]), Probe::NotForUs, "shorter than a header");
        d[4] = 0x80;
        assert_eq!(probe(&d), Probe::NotForUs);
        d[4] = 2;
        d[1] = 0xac;
        assert_eq!(probe(&d), Probe::NotForUs);
    }
}
