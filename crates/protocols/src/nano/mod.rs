//! The Nano cryptocurrency's node protocol: nDPI's `Nano`.
//!
//! Every message starts with an eight-byte header: the magic `R`, a network id (`A` test, `B` beta, `C` live,
//! `X` dev), the maximum, current and minimum protocol versions (so `max >= using >= min`), a message type (2
//! keepalive to 0x12) and 16 bits of extensions. The two letters and consistent versions are certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for Nano.
pub struct NanoDetector;

impl Detector for NanoDetector {
    fn proto(&self) -> AppProto {
        AppProto::Nano
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"R")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        match p {
            [
                b'R',
                b'A' | b'B' | b'C' | b'X',
                max,
                using,
                min,
                kind,
                _,
                _,
                ..,
            ] => {
                if max >= using
                    && using >= min
                    && *min > 0
                    && *max < 0x40
                    && (2..=0x12).contains(kind)
                {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            [b'R'] | [b'R', b'A' | b'B' | b'C' | b'X', ..] => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[test]
    fn header() {
        let probe = |d: &[u8]| NanoDetector.probe(&ctx_tcp(Direction::ToServer, d));
        // A node id handshake on the live network, versions 0x14/0x14/0x12.
        let mut h = vec![b'R', b'C', 0x14, 0x14, 0x12, 0x0a, 0x05, 0x00];
        h.extend_from_slice(&[0xab; 32]);
        assert_eq!(probe(&h), Probe::Certain);
        assert_eq!(probe(&h[..4]), Probe::Unsure);
        h[3] = 0x15;
        assert_eq!(probe(&h), Probe::NotForUs, "using above max");
        assert_eq!(probe(b"RCPT TO:<a@b>"), Probe::NotForUs);
    }
}
