//! World of Warcraft's game connection: nDPI's `WorldOfWarcraft`.
//!
//! Each side of a realm connection opens with its greeting: a 16-bit little-endian length, then the text
//! `WORLD OF WARCRAFT CONNECTION - SERVER TO CLIENT` (or `CLIENT TO SERVER`) and a NUL byte. The length must
//! cover the text; that is certain.

use crate::scan::le16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// The start of both greetings.
const GREETING: &[u8] = b"WORLD OF WARCRAFT CONNECTION";

/// Detector for World of Warcraft.
pub struct WowDetector;

impl Detector for WowDetector {
    fn proto(&self) -> AppProto {
        AppProto::WorldOfWarcraft
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        let Some(len) = le16(p, 0) else {
            return Probe::Unsure;
        };
        if usize::from(len) < GREETING.len() || usize::from(len) > 128 {
            return Probe::NotForUs;
        }
        let text = p.get(2..).unwrap_or(&[]);
        let n = text.len().min(GREETING.len());
        if text[..n] != GREETING[..n] {
            Probe::NotForUs
        } else if n == GREETING.len() {
            Probe::Certain
        } else {
            Probe::Unsure
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[test]
    fn greeting() {
        let text = b"WORLD OF WARCRAFT CONNECTION - SERVER TO CLIENT\0";
        let mut d = (text.len() as u16).to_le_bytes().to_vec();
        d.extend_from_slice(text);
        let probe = |d: &[u8]| WowDetector.probe(&ctx_tcp(Direction::ToClient, d));
        assert_eq!(probe(&d), Probe::Certain);
        assert_eq!(probe(&d[..10]), Probe::Unsure);
        assert_eq!(probe(b"\x30\x00WORLD OF WARCRAFX"), Probe::NotForUs);
        assert_eq!(
            probe(b"\x05\x00WORLD OF"),
            Probe::NotForUs,
            "length too short for the text"
        );
    }
}
