//! IPsec key exchange and NAT traversal: IKEv1/ISAKMP (RFC 2408) and IKEv2 (RFC 7296) on UDP 500/4500, and
//! ESP-in-UDP (RFC 3948) on 4500: nDPI's `IPSec`.
//!
//! An ISAKMP header is 28 bytes: two 8-byte SPIs (the initiator's never zero), next payload, version (`0x10`
//! IKEv1, `0x20` IKEv2), exchange type, flags, message id and a 32-bit length that equals the datagram's. On port
//! 4500 IKE follows a 4-byte zero "non-ESP marker"; anything else there with a non-zero SPI is ESP, which needs two
//! datagrams of the same direction with the same SPI and the next sequence number to be certain.

use crate::scan::be32;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Whether `d` is exactly one ISAKMP/IKE message.
pub fn is_ike(d: &[u8]) -> bool {
    if d.len() < 28 || d[..8].iter().all(|&b| b == 0) {
        return false;
    }
    let (next, version, exchange) = (d[16], d[17], d[18]);
    let ok = match version {
        0x10 => next <= 13 || (128..=132).contains(&next) || next == 20 || next == 21,
        0x20 => next == 0 || (33..=53).contains(&next),
        _ => false,
    };
    let exch_ok = match version {
        0x10 => exchange <= 6 || (32..=35).contains(&exchange),
        _ => (34..=43).contains(&exchange),
    };
    ok && exch_ok && be32(d, 24).is_some_and(|l| l as usize == d.len())
}

/// Detector for IKE and ESP-in-UDP.
pub struct IpSecDetector;

impl Detector for IpSecDetector {
    fn proto(&self) -> AppProto {
        AppProto::IpSec
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if is_ike(d) {
            return Probe::Certain;
        }
        if !ctx.either_port_is(4500) {
            return Probe::NotForUs;
        }
        if d == [0xff] {
            // NAT-keepalive.
            return Probe::Unsure;
        }
        if d.len() >= 4 && d[..4] == [0, 0, 0, 0] {
            return if is_ike(&d[4..]) {
                Probe::Certain
            } else {
                Probe::NotForUs
            };
        }
        let (Some(spi), Some(seq)) = (be32(d, 0), be32(d, 4)) else {
            return Probe::NotForUs;
        };
        match (be32(ctx.prev, 0), be32(ctx.prev, 4)) {
            (Some(pspi), Some(pseq))
                if pspi == spi && seq == pseq.wrapping_add(1) && d.len() >= 16 =>
            {
                Probe::Certain
            }
            _ if spi != 0 && d.len() >= 16 && ctx.dir_index < 4 => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::Transport;
    use crate::testkit::{ctx_ports, ctx_udp};

    fn ikev2_sa_init() -> Vec<u8> {
        let mut d = vec![0x11; 8];
        d.extend_from_slice(&[0; 8]);
        d.extend_from_slice(&[33, 0x20, 34, 0x08, 0, 0, 0, 0, 0, 0, 0, 0]);
        d.extend_from_slice(&[0u8; 40]);
        let n = d.len() as u32;
        d[24..28].copy_from_slice(&n.to_be_bytes());
        d
    }

    #[test]
    fn ike_and_esp() {
        let d = ikev2_sa_init();
        assert_eq!(
            IpSecDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        let mut natt = vec![0, 0, 0, 0];
        natt.extend_from_slice(&d);
        assert_eq!(
            IpSecDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &natt,
                4500,
                4500
            )),
            Probe::Certain
        );
        let esp1 = [0xc0, 0x01, 0x02, 0x03, 0, 0, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9];
        let esp2 = [0xc0, 0x01, 0x02, 0x03, 0, 0, 0, 2, 8, 8, 8, 8, 8, 8, 8, 8];
        let mut c = ctx_ports(Transport::Udp, Direction::ToServer, &esp2, 4500, 4500);
        c.prev = &esp1;
        assert_eq!(IpSecDetector.probe(&c), Probe::Certain);
        assert_eq!(
            IpSecDetector.probe(&ctx_udp(Direction::ToServer, &esp2, &esp1)),
            Probe::NotForUs
        );
    }
}
