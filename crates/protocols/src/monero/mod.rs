//! Monero's peer-to-peer protocol (TCP 18080), carried in Levin frames: nDPI's `Monero`.
//!
//! Every Levin frame (Monero's `levin` protocol description) starts with a 33-byte header: the signature
//! `0x0101010101012101` (little-endian), the 64-bit body length, a "return data expected" byte, the 32-bit command,
//! the 32-bit return code, 32-bit flags (1 request, 2 response) and the protocol version 1. The signature and a
//! valid flags word are certain.

use crate::scan::le32;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// The Levin signature as it appears on the wire.
const SIGNATURE: [u8; 8] = [0x01, 0x21, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01];

/// Detector for Monero (Levin).
pub struct MoneroDetector;

impl Detector for MoneroDetector {
    fn proto(&self) -> AppProto {
        AppProto::Monero
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x01])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if d.len() < 33 {
            let n = d.len().min(SIGNATURE.len());
            return if d[..n] == SIGNATURE[..n] {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        let flags_ok = matches!(le32(d, 25), Some(1 | 2));
        let version_ok = le32(d, 29) == Some(1);
        if d.starts_with(&SIGNATURE) && flags_ok && version_ok {
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
    use crate::testkit::ctx_tcp;

    #[test]
    fn a_levin_handshake_request() {
        let mut h = SIGNATURE.to_vec();
        h.extend_from_slice(&100u64.to_le_bytes());
        h.push(1);
        h.extend_from_slice(&1001u32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        let probe = |d: &[u8]| MoneroDetector.probe(&ctx_tcp(Direction::ToServer, d));
        assert_eq!(probe(&h), Probe::Certain);
        assert_eq!(probe(&h[..10]), Probe::Unsure);
        let mut bad = h.clone();
        bad[25] = 7;
        assert_eq!(probe(&bad), Probe::NotForUs);
        assert_eq!(probe(&[0x01, 0x22]), Probe::NotForUs);
    }
}
