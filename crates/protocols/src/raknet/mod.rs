//! RakNet, the UDP game networking engine (Minecraft Bedrock, Roblox and others): nDPI's `RakNet`.
//!
//! RakNet's unconnected messages (ping, pong, open-connection requests and replies, the messages that start
//! every session) carry the 16-byte "offline message" magic `00 FF FF 00 FE FE FE FE FD FD FD FD 12 34 56 78`
//! after the message id (open connection requests and replies), or after the id and an 8-byte time (ping), or the
//! id, time and 8-byte server GUID (pong). The magic at one of those places is certain.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// The offline message magic.
const MAGIC: [u8; 16] = [
    0x00, 0xff, 0xff, 0x00, 0xfe, 0xfe, 0xfe, 0xfe, 0xfd, 0xfd, 0xfd, 0xfd, 0x12, 0x34, 0x56, 0x78,
];

/// Detector for RakNet.
pub struct RakNetDetector;

impl Detector for RakNetDetector {
    fn proto(&self) -> AppProto {
        AppProto::RakNet
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let at = |off: usize| d.get(off..off + MAGIC.len()) == Some(&MAGIC[..]);
        if at(1) || at(9) || at(17) {
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

    #[test]
    fn offline_messages() {
        let probe = |d: &[u8]| RakNetDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        let mut open = vec![0x05];
        open.extend_from_slice(&MAGIC);
        open.extend_from_slice(&[11; 40]);
        assert_eq!(probe(&open), Probe::Certain);
        let mut ping = vec![0x01];
        ping.extend_from_slice(&7u64.to_be_bytes());
        ping.extend_from_slice(&MAGIC);
        assert_eq!(probe(&ping), Probe::Certain);
        open[5] = 0xfd;
        assert_eq!(probe(&open), Probe::NotForUs);
    }
}
