//! Activision's game network (Demonware, Call of Duty titles on UDP 3074): nDPI's `Activision`.
//!
//! A game connection on port 3074 opens with a challenge that the other side returns unchanged but for its first
//! byte: `0d` one way, `0c` back, the same length and the same bytes after it (a version byte, the connection id,
//! a hash and the sender's address). A datagram that mirrors the other side's last one that way, on port 3074, is
//! certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// The Xbox Live / Demonware game port.
const PORT: u16 = 3074;

/// Detector for Activision.
pub struct ActivisionDetector;

/// Whether `a` and `b` are a challenge and its mirror.
fn mirrored(a: &[u8], b: &[u8]) -> bool {
    let kinds = matches!(
        (a.first(), b.first()),
        (Some(0x0c), Some(0x0d)) | (Some(0x0d), Some(0x0c))
    );
    kinds && a.len() == b.len() && a.len() >= 20 && a.get(1..) == b.get(1..)
}

impl Detector for ActivisionDetector {
    fn proto(&self) -> AppProto {
        AppProto::Activision
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x0c, 0x0d])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if !ctx.either_port_is(PORT) {
            return Probe::NotForUs;
        }
        if mirrored(ctx.data, ctx.peer) {
            Probe::Certain
        } else if ctx.peer.is_empty() && ctx.data.len() >= 20 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_ports;
    use crate::{Direction, ProbeCtx, Transport};

    #[test]
    fn challenge_and_mirror() {
        let mut challenge = vec![0x0d, 0x02, 0x00];
        challenge.extend_from_slice(&[0xc4, 0x23, 0x4a, 0x84, 0xb4, 0xb1, 0x34, 0xcf, 0xff, 0xd4]);
        challenge.extend_from_slice(&[
            0x0f, 0x7e, 0x9a, 0x37, 192, 168, 0, 21, 0x02, 0x0c, 0x2d, 0x3f, 0x70, 0x36, 0xb5, 0x87,
        ]);
        let mut mirror = challenge.clone();
        mirror[0] = 0x0c;
        let probe = |d: &[u8], peer: &[u8], port| {
            ActivisionDetector.probe(&ProbeCtx {
                peer,
                ..ctx_ports(Transport::Udp, Direction::ToServer, d, 34741, port)
            })
        };
        assert_eq!(probe(&challenge, &[], PORT), Probe::Unsure);
        assert_eq!(probe(&mirror, &challenge, PORT), Probe::Certain);
        assert_eq!(
            probe(&mirror, &challenge, 3075),
            Probe::NotForUs,
            "off the game port"
        );
        let mut other = mirror.clone();
        other[9] ^= 1;
        assert_eq!(probe(&other, &challenge, PORT), Probe::NotForUs);
    }
}
