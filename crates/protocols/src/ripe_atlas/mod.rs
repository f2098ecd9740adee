//! RIPE Atlas measurement probes: nDPI's `RipeAtlas`.
//!
//! RIPE Atlas probes fill the payload of their UDP and TCP measurement packets (traceroute, UDP tests) with an
//! ASCII marker, `MGLNDD_`, followed by the destination address, `_` and a number, so that a target's operator can
//! tell measurement traffic apart. The marker followed by an address is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// The marker every measurement payload starts with.
const MARKER: &[u8; 7] = b"MGLNDD_";

/// Detector for RIPE Atlas measurement payloads.
pub struct RipeAtlasDetector;

impl Detector for RipeAtlasDetector {
    fn proto(&self) -> AppProto {
        AppProto::RipeAtlas
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"M")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let Some(rest) = d.strip_prefix(MARKER.as_slice()) else {
            return if d.len() < MARKER.len()
                && MARKER.starts_with(d)
                && ctx.transport == Transport::Tcp
            {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        // The destination address: hex digits, dots and colons (IPv4 or IPv6), then `_`.
        let addr = rest
            .iter()
            .take_while(|b| b.is_ascii_hexdigit() || **b == b'.' || **b == b':')
            .count();
        if addr >= 2 && rest.get(addr) == Some(&b'_') {
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
    fn the_measurement_marker() {
        let probe = |d: &[u8]| RipeAtlasDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(b"MGLNDD_192.0.2.7_33434"), Probe::Certain);
        assert_eq!(probe(b"MGLNDD_2001:db8::1_1"), Probe::Certain);
        assert_eq!(probe(b"MGLNDD_"), Probe::NotForUs);
        assert_eq!(probe(b"MGLNDX_192.0.2.7_1"), Probe::NotForUs);
    }
}
