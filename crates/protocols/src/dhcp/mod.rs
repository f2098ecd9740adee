//! DHCP for IPv4 (RFC 2131) and DHCPv6 (RFC 8415): nDPI's `DHCP` and `DHCPV6`.
//!
//! DHCPv4 is BOOTP with a magic cookie: op 1/2, a hardware address length that fits, and `63 82 53 63` at offset
//! 236. DHCPv6 has no magic; it runs between ports 546 and 547 and its options are a TLV list that must exactly
//! fill the datagram, which together reject almost anything else. Both are decided from one datagram.

use crate::scan::{be16, be32};
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// DHCPv4 magic cookie (RFC 2131 §3).
pub const MAGIC_COOKIE: u32 = 0x6382_5363;

/// Whether `d` is a BOOTP/DHCPv4 message with the DHCP magic cookie.
pub fn is_dhcp4(d: &[u8]) -> bool {
    matches!(d.first(), Some(1 | 2))
        && d.get(1).is_some_and(|&htype| (1..=32).contains(&htype))
        && d.get(2).is_some_and(|&hlen| hlen <= 16)
        && be32(d, 236) == Some(MAGIC_COOKIE)
}

/// Whether `d` is a DHCPv6 client/server or relay message whose options exactly fill it.
pub fn is_dhcp6(d: &[u8]) -> bool {
    let Some(&ty) = d.first() else { return false };
    let opts_at = match ty {
        1..=11 | 14..=36 => 4,
        12 | 13 => 34,
        _ => return false,
    };
    let mut i = opts_at;
    if d.len() < i + 4 {
        return false;
    }
    while i < d.len() {
        let (Some(code), Some(len)) = (be16(d, i), be16(d, i + 2)) else {
            return false;
        };
        if code == 0 {
            return false;
        }
        i += 4 + usize::from(len);
    }
    i == d.len()
}

/// Detector for DHCPv4 (`v6: false`) or DHCPv6 (`v6: true`).
pub struct DhcpDetector {
    pub v6: bool,
}

impl Detector for DhcpDetector {
    fn proto(&self) -> AppProto {
        if self.v6 {
            AppProto::Dhcpv6
        } else {
            AppProto::Dhcp
        }
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let ok = if self.v6 {
            (ctx.either_port_is(546) || ctx.either_port_is(547)) && is_dhcp6(ctx.data)
        } else {
            is_dhcp4(ctx.data)
        };
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::Transport;
    use crate::testkit::ctx_ports;

    #[test]
    fn dhcp4_discover() {
        // A DHCPDISCOVER's fixed part (as in gnutella.pcap: xid a6784b7d, chaddr 08:00:27:e6:e5:59) + options.
        let mut d = vec![0u8; 240];
        d[..4].copy_from_slice(&[1, 1, 6, 0]);
        d[4..8].copy_from_slice(&[0xa6, 0x78, 0x4b, 0x7d]);
        d[28..34].copy_from_slice(&[0x08, 0x00, 0x27, 0xe6, 0xe5, 0x59]);
        d[236..240].copy_from_slice(&MAGIC_COOKIE.to_be_bytes());
        d.extend_from_slice(&[53, 1, 1, 255]);
        let v4 = DhcpDetector { v6: false };
        assert_eq!(
            v4.probe(&ctx_ports(Transport::Udp, Direction::ToServer, &d, 68, 67)),
            Probe::Certain
        );
        d[236] = 0;
        assert_eq!(
            v4.probe(&ctx_ports(Transport::Udp, Direction::ToServer, &d, 68, 67)),
            Probe::NotForUs
        );
    }

    #[test]
    fn dhcp6_solicit() {
        // gnutella.pcap, first bytes of a SOLICIT: type 1, xid 13d1ed, elapsed-time option (8, len 2), client id ...
        let d: Vec<u8> = [
            &[0x01, 0x13, 0xd1, 0xed][..],
            &[0x00, 0x08, 0x00, 0x02, 0x00, 0x00],
            &[
                0x00, 0x01, 0x00, 0x0e, 0x00, 0x01, 0x00, 0x01, 0x24, 0x22, 0xf1, 0xb3, 0x08, 0x00,
                0x27, 0xe6, 0xe5, 0x59,
            ],
        ]
        .concat();
        let v6 = DhcpDetector { v6: true };
        assert_eq!(
            v6.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &d,
                546,
                547
            )),
            Probe::Certain
        );
        assert_eq!(
            v6.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &d[..d.len() - 1],
                546,
                547
            )),
            Probe::NotForUs
        );
        assert_eq!(
            v6.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &d,
                5000,
                5001
            )),
            Probe::NotForUs
        );
    }
}
