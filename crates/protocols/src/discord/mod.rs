//! Discord voice: nDPI's `Discord`.
//!
//! Voice clients open each UDP media flow with *IP discovery*: a 74-byte datagram of type 1 (request) or 2
//! (response), length 70, the SSRC and a NUL-padded address. Keep-alives on the same flows carry the fixed
//! marker `13 37 ca fe`. Either is certain from one datagram.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Discord.
pub struct DiscordDetector;

impl Detector for DiscordDetector {
    fn proto(&self) -> AppProto {
        AppProto::Discord
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let discovery =
            d.len() == 74 && matches!(be16(d, 0), Some(1 | 2)) && be16(d, 2) == Some(70);
        let marker = d.len() >= 8 && d.starts_with(&[0x13, 0x37, 0xca, 0xfe]);
        if discovery || marker {
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
    use crate::testkit::ctx_udp;

    #[allow(non_upper_case_globals)]
    const Det: DiscordDetector = DiscordDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut req = vec![0x00, 0x01, 0x00, 0x46, 0x00, 0x02, 0x4b, 0x18];
        req.extend_from_slice(&[0u8; 66]);
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, &req, &[])),
            Probe::Certain
        );
        let ka = [
            0x13, 0x37, 0xca, 0xfe, 0x0a, 0, 0, 0, 0x13, 0x37, 0xca, 0xfe, 0x0a, 0, 0, 0,
        ];
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, &ka, &[])),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, &req[..73], &[])),
            Probe::NotForUs
        );
    }
}
