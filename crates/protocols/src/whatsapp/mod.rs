//! WhatsApp's chat transport (TCP 5222 and 443): nDPI's `WhatsApp`.
//!
//! The client opens with a 4-byte prologue before its Noise handshake: `WA` and a two-byte protocol version
//! (`WA\x01\x05`, `WA\x02\x01`, ...), or `ED\x00\x01` for the edge-routing variant. Four fixed bytes at the
//! start of the client's stream (TLS never starts with them) are certain.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for WhatsApp.
pub struct WhatsAppDetector;

impl Detector for WhatsAppDetector {
    fn proto(&self) -> AppProto {
        AppProto::WhatsApp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        if ctx.dir == crate::Direction::ToClient && ctx.payload_index == ctx.dir_index {
            return Probe::NotForUs;
        }
        match p {
            [b'W', b'A', 1..=9, v, ..] if *v <= 9 => Probe::Certain,
            [b'E', b'D', 0, 1, ..] => Probe::Certain,
            [b'W']
            | [b'W', b'A']
            | [b'W', b'A', 1..=9]
            | [b'E']
            | [b'E', b'D']
            | [b'E', b'D', 0] => Probe::Unsure,
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
    const Det: WhatsAppDetector = WhatsAppDetector;

    #[test]
    fn recognises_real_shapes() {
        let d = [0x57, 0x41, 0x01, 0x05, 0x00, 0x00, 0x17, 0xf8, 0x05, 0x01];
        assert_eq!(Det.probe(&ctx_tcp(Direction::ToServer, &d)), Probe::Certain);
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToServer, b"ED\x00\x01\x00\x00")),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToServer, b"WA")),
            Probe::Unsure
        );
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToServer, b"\x16\x03\x01\x02\x00")),
            Probe::NotForUs
        );
    }
}
