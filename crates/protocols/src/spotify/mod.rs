//! Spotify's LAN discovery broadcasts (UDP 57621): nDPI's `Spotify`.
//!
//! The datagram starts with the ASCII magic `SpotUdp0`: certain.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Spotify.
pub struct SpotifyDetector;

impl Detector for SpotifyDetector {
    fn proto(&self) -> AppProto {
        AppProto::Spotify
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.data.starts_with(b"SpotUdp0") {
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
    const Det: SpotifyDetector = SpotifyDetector;

    #[test]
    fn recognises_real_shapes() {
        let d = b"SpotUdp0\xdc\x15\x74\x28\x2e\x52\x62\x4c\x00\x01\x00\x04";
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, d, &[])),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, b"SpotUdp", &[])),
            Probe::NotForUs
        );
    }
}
