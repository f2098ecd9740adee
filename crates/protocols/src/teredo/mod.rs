//! Teredo, IPv6 over UDP (RFC 4380) on port 3544: nDPI's `Teredo`.
//!
//! A datagram is an IPv6 packet, optionally preceded by an authentication indicator (`00 01`, id and auth
//! lengths, 8-byte nonce, confirmation byte) and/or an origin indication (`00 00`, port, address). The IPv6
//! header's version nibble and payload length must agree with the datagram. Port 3544 is required, as in nDPI.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Teredo.
pub struct TeredoDetector;

impl Detector for TeredoDetector {
    fn proto(&self) -> AppProto {
        AppProto::Teredo
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let mut d = ctx.data;
        if !ctx.either_port_is(3544) {
            return Probe::NotForUs;
        }
        if d.starts_with(&[0x00, 0x01]) {
            let (Some(&id), Some(&au)) = (d.get(2), d.get(3)) else {
                return Probe::NotForUs;
            };
            let Some(rest) = d.get(4 + usize::from(id) + usize::from(au) + 9..) else {
                return Probe::NotForUs;
            };
            d = rest;
        }
        if d.starts_with(&[0x00, 0x00]) {
            let Some(rest) = d.get(8..) else {
                return Probe::NotForUs;
            };
            d = rest;
        }
        let ipv6 = d.first().is_some_and(|b| b >> 4 == 6)
            && be16(d, 4).is_some_and(|l| usize::from(l) + 40 == d.len());
        // A bubble or an authentication-only router solicitation exchange may carry nothing after the headers.
        if ipv6 || (d.is_empty() && ctx.data.len() >= 13) {
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
    use crate::Transport;

    #[allow(non_upper_case_globals)]
    const Det: TeredoDetector = TeredoDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut d = vec![
            0x00, 0x01, 0x00, 0x00, 0xb1, 0x1b, 0x3f, 0xea, 0x46, 0xa9, 0xaf, 0xe9, 0x00,
        ];
        d.extend_from_slice(&[0x60, 0, 0, 0, 0x00, 0x08, 0x3a, 0xff]);
        d.extend_from_slice(&[0u8; 32]);
        d.extend_from_slice(&[0x85, 0, 0x7d, 0x38, 0, 0, 0, 0]);
        let c = crate::testkit::ctx_ports(Transport::Udp, Direction::ToServer, &d, 52513, 3544);
        assert_eq!(Det.probe(&c), Probe::Certain);
        let c = crate::testkit::ctx_ports(
            Transport::Udp,
            Direction::ToServer,
            &d[..d.len() - 1],
            52513,
            3544,
        );
        assert_eq!(Det.probe(&c), Probe::NotForUs);
    }
}
