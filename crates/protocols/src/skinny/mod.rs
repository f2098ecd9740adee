//! Cisco's Skinny Client Control Protocol (SCCP): nDPI's `CiscoSkinny`.
//!
//! Every message is framed by a 32-bit little-endian length (of what follows the header's first eight bytes),
//! a 32-bit header version (0 for the basic protocol, `0x11`-`0x17` and `0x22` for later call managers) and a
//! 32-bit message id (below `0x200` for phone messages, `0x8000`-`0x8fff` for the call manager's
//! extensions). A complete first message with a known version and id is certain.

use crate::scan::le32;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Skinny.
pub struct SkinnyDetector;

impl Detector for SkinnyDetector {
    fn proto(&self) -> AppProto {
        AppProto::CiscoSkinny
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        let (Some(len), Some(version), Some(id)) = (le32(p, 0), le32(p, 4), le32(p, 8)) else {
            // A length below 64 KiB and a version's zero high bytes, as far as they arrived.
            let plausible = p.get(2..4).is_none_or(|b| b == [0, 0])
                && p.get(5..8).is_none_or(|b| b == [0, 0, 0]);
            return if plausible {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let known_version = matches!(version, 0 | 0x11..=0x17 | 0x22);
        let known_id = id < 0x200 || (0x8000..0x9000).contains(&id);
        if !(4..=8192).contains(&len) || !known_version || !known_id {
            return Probe::NotForUs;
        }
        if p.len() >= len as usize + 8 {
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

    fn message(version: u32, id: u32, body: &[u8]) -> Vec<u8> {
        let mut m = ((body.len() + 4) as u32).to_le_bytes().to_vec();
        m.extend_from_slice(&version.to_le_bytes());
        m.extend_from_slice(&id.to_le_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn framing() {
        let probe = |d: &[u8]| SkinnyDetector.probe(&ctx_tcp(Direction::ToServer, d));
        // KeepAliveMessage (0x0000, no body) and a RegisterMessage-sized body under version 0x14.
        assert_eq!(probe(&message(0, 0, &[])), Probe::Certain);
        let register = message(0x14, 0x0001, &[0; 44]);
        assert_eq!(probe(&register), Probe::Certain);
        assert_eq!(probe(&register[..20]), Probe::Unsure);
        assert_eq!(probe(&register[..3]), Probe::Unsure);
        assert_eq!(
            probe(&message(0x99, 1, &[0; 8])),
            Probe::NotForUs,
            "unknown version"
        );
        assert_eq!(
            probe(&message(0, 0x4444, &[0; 8])),
            Probe::NotForUs,
            "unknown message id"
        );
        assert_eq!(probe(b"GET / HTTP/1.1\r\n"), Probe::NotForUs);
    }
}
