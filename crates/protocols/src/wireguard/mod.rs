//! WireGuard: nDPI's `WireGuard`.
//!
//! Every message starts with a type byte and three reserved zero bytes. The handshake messages have fixed sizes
//! (initiation 148 bytes, response 92, cookie reply 64): certain from one datagram. Transport data (type 4) is 16
//! bytes of header plus a padded, authenticated payload (a multiple of 16 bytes with a 16-byte tag); it counts
//! with the previous datagram of its direction carrying the same receiver index and the next counter.

use crate::scan::{le16, le32};
use crate::{AppProto, Detector, Probe, ProbeCtx};

fn header(d: &[u8]) -> Option<u8> {
    let ty = *d.first()?;
    (d.get(1..4)? == [0, 0, 0]).then_some(ty)
}

/// Detector for WireGuard.
pub struct WireGuardDetector;

impl Detector for WireGuardDetector {
    fn proto(&self) -> AppProto {
        AppProto::WireGuard
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        match (header(d), d.len()) {
            (Some(1), 148) | (Some(2), 92) | (Some(3), 64) => Probe::Certain,
            (Some(4), n) if n >= 32 && n % 16 == 0 => {
                let same = le32(d, 4) == le32(ctx.prev, 4) && header(ctx.prev) == Some(4);
                let counter = le32(d, 8)
                    .zip(le32(ctx.prev, 8))
                    .map(|(a, b)| a.wrapping_sub(b));
                let high_zero = le16(d, 14) == Some(0);
                if same && high_zero && matches!(counter, Some(1..=64)) {
                    Probe::Certain
                } else if ctx.dir_index < 4 {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            }
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    #[test]
    fn handshake_and_data() {
        let mut init = vec![1, 0, 0, 0];
        init.extend_from_slice(&[0x5a; 144]);
        assert_eq!(
            WireGuardDetector.probe(&ctx_udp(Direction::ToServer, &init, &[])),
            Probe::Certain
        );
        init.push(0);
        assert_eq!(
            WireGuardDetector.probe(&ctx_udp(Direction::ToServer, &init, &[])),
            Probe::NotForUs
        );
        let data = |ctr: u8| {
            let mut v = vec![4, 0, 0, 0, 9, 9, 9, 9, ctr, 0, 0, 0, 0, 0, 0, 0];
            v.extend_from_slice(&[0x77; 32]);
            v
        };
        let (a, b) = (data(1), data(2));
        assert_eq!(
            WireGuardDetector.probe(&ctx_udp(Direction::ToServer, &a, &[])),
            Probe::Unsure
        );
        assert_eq!(
            WireGuardDetector.probe(&ctx_udp(Direction::ToServer, &b, &a)),
            Probe::Certain
        );
    }
}
