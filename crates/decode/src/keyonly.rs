//! # Key-only decoding: a packet's bundle from its addresses, without decoding it
//!
//! When every worker reads the input and inspects only the packets of its own bundles (`flowbundle-inspect`'s
//! `each`), each worker passes over the packets of the others. All it needs of such a packet is its owner: the
//! CRC-16 of its FID ([`crate::bundle_of`] of the decoded packet), a function of its two IP addresses alone. A full
//! [`crate::decode()`] of it (every layer, the transport header and its options, the 176-byte view), its pass through
//! the defragmenter and its flow key cost about half of what a skipped packet cost a worker (callgrind on the
//! merged nDPI captures, see `BENCHMARKS.md`).
//!
//! [`plain_fid`] reads the fewest bytes that settle the FID: the link header (Ethernet with at most two VLAN tags,
//! Linux cooked capture, raw IP), the IPv4 or IPv6 header's version, length, fragment fields, protocol and
//! addresses, and for UDP under tunnel decapsulation its two ports. It answers only where that is certain to be
//! what the decoder gives: a packet that is no fragment (so the defragmenter passes it through unchanged), whose
//! addresses the decoder keeps (no tunnel it would decapsulate to other addresses, no ICMPv4 error it would file
//! under the flow it quotes). Everything else (fragments, IPv6 extension headers, tunnels, MPLS, PPPoE, other
//! links, malformed or cut headers) is `None`: the caller takes the full path, so the result never changes. The
//! header checks are the decoder's own ([`crate::wire`]'s `new_checked`), and `tests/keyonly.rs` checks the
//! agreement on real captures, the malformed corpus and random bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use flowbundle_ingest::LinkType;

use crate::wire::{capwap, ethernet, ethertype, ip_proto, ipv4, ipv6, sll, vlan};
use crate::{DecodeOptions, Fid};

/// VLAN tags followed before giving up to the full path (QinQ; deeper stacks are rare).
const MAX_TAGS: u8 = 2;

/// The FID of a packet whose link and IP headers settle it, or `None` where only a full decode can tell (see the
/// module documentation). Where it is `Some(f)`, decoding `data` with `opts` gives a packet that is no fragment and
/// whose [`crate::bundle_of`] is `f.crc16()`.
#[inline]
pub fn plain_fid(link_type: LinkType, data: &[u8], opts: &DecodeOptions) -> Option<Fid> {
    Some(match plain_addrs(link_type, data, opts)? {
        Addrs::V4(a) => Fid::new(
            IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])),
            IpAddr::V4(Ipv4Addr::new(a[4], a[5], a[6], a[7])),
        ),
        Addrs::V6(a) => {
            let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
            src.copy_from_slice(&a[..16]);
            dst.copy_from_slice(&a[16..]);
            Fid::new(
                IpAddr::V6(Ipv6Addr::from(src)),
                IpAddr::V6(Ipv6Addr::from(dst)),
            )
        }
    })
}

/// [`plain_fid`]'s `crc16()`, the packet's bundle, straight from the two addresses as the header holds them: the
/// smaller first, then the CRC-16 of their bytes, without building the FID (what a worker that reads every packet
/// asks of each one it passes over).
#[inline]
pub fn plain_bundle(link_type: LinkType, data: &[u8], opts: &DecodeOptions) -> Option<u16> {
    Some(match plain_addrs(link_type, data, opts)? {
        Addrs::V4(a) => {
            let (s, d) = (
                u32::from_be_bytes([a[0], a[1], a[2], a[3]]),
                u32::from_be_bytes([a[4], a[5], a[6], a[7]]),
            );
            let (lo, hi) = if s <= d { (s, d) } else { (d, s) };
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&lo.to_be_bytes());
            b[4..].copy_from_slice(&hi.to_be_bytes());
            crate::hash::crc16(&b)
        }
        Addrs::V6(a) => {
            let (mut s, mut d) = ([0u8; 16], [0u8; 16]);
            s.copy_from_slice(&a[..16]);
            d.copy_from_slice(&a[16..]);
            let (lo, hi) = if u128::from_be_bytes(s) <= u128::from_be_bytes(d) {
                (s, d)
            } else {
                (d, s)
            };
            let mut b = [0u8; 32];
            b[..16].copy_from_slice(&lo);
            b[16..].copy_from_slice(&hi);
            crate::hash::crc16(&b)
        }
    })
}

/// The source and destination address bytes of a packet whose headers settle its FID, as the IP header holds them.
enum Addrs {
    V4([u8; 8]),
    V6([u8; 32]),
}

/// What [`plain_fid`] and [`plain_bundle`] read: the walk over the link and IP headers.
#[inline]
fn plain_addrs(link_type: LinkType, data: &[u8], opts: &DecodeOptions) -> Option<Addrs> {
    let (et, off) = match link_type {
        LinkType::ETHERNET => {
            let f = ethernet::Frame::new_checked(data).ok()?;
            (f.ethertype(), ethernet::HEADER_LEN)
        }
        LinkType::LINUX_SLL => {
            let h = sll::Header::new_checked(data).ok()?;
            (h.protocol(), sll::HEADER_LEN)
        }
        LinkType::RAW | LinkType::RAW_BSD12 | LinkType::RAW_BSD14 => {
            return match data.first()? >> 4 {
                4 => ipv4_fid(data, opts),
                6 => ipv6_fid(data, opts),
                _ => None,
            };
        }
        LinkType::IPV4 => return ipv4_fid(data, opts),
        LinkType::IPV6 => return ipv6_fid(data, opts),
        _ => return None,
    };
    let (mut et, mut off, mut tags) = (et, off, 0u8);
    while vlan::is_tpid(et) {
        tags += 1;
        // The decoder counts each tag against `max_depth` and gives up past it.
        if tags > MAX_TAGS || tags > opts.max_depth {
            return None;
        }
        let t = vlan::Tag::new_checked(data.get(off..)?).ok()?;
        et = t.ethertype();
        off += vlan::HEADER_LEN;
    }
    match et {
        ethertype::IPV4 => ipv4_fid(data.get(off..)?, opts),
        ethertype::IPV6 => ipv6_fid(data.get(off..)?, opts),
        _ => None,
    }
}

/// An IPv4 header at the start of `b`.
#[inline]
fn ipv4_fid(b: &[u8], opts: &DecodeOptions) -> Option<Addrs> {
    let p = ipv4::Packet::new_checked(b).ok()?;
    if p.is_fragment() || (opts.verify_ipv4_checksum && !p.verify_checksum()) {
        return None;
    }
    let proto = p.protocol();
    if opts.icmp_errors_in_quoted_flow && proto == ip_proto::ICMP {
        return None;
    }
    if opts.decap_tunnels && !keeps_addresses(proto, b.get(p.header_len()..)?, opts) {
        return None;
    }
    Some(Addrs::V4(p.addr_bytes()))
}

/// An IPv6 header at the start of `b`, directly followed by its transport (no extension header: one may be a
/// fragment header).
#[inline]
fn ipv6_fid(b: &[u8], opts: &DecodeOptions) -> Option<Addrs> {
    let p = ipv6::Packet::new_checked(b).ok()?;
    let nh = p.next_header();
    if ipv6::is_extension(nh) {
        return None;
    }
    if opts.decap_tunnels && !keeps_addresses(nh, b.get(ipv6::HEADER_LEN..)?, opts) {
        return None;
    }
    Some(Addrs::V6(p.addr_bytes()))
}

/// Under tunnel decapsulation: whether a transport `proto` whose header starts `l4` is certainly no tunnel the
/// decoder would enter. UDP on any port a UDP tunnel is recognised on (either side, whatever the direction the
/// decoder checks) goes to the full path, as do GRE and IP in IP.
#[inline]
fn keeps_addresses(proto: u8, l4: &[u8], opts: &DecodeOptions) -> bool {
    match proto {
        ip_proto::GRE | ip_proto::IPV4 | ip_proto::IPV6 => false,
        ip_proto::UDP => {
            let Some(&[s0, s1, d0, d1]) = l4.get(..4).map(|p| [p[0], p[1], p[2], p[3]]).as_ref()
            else {
                return false;
            };
            let tunnel = |port: u16| {
                port == opts.vxlan_port
                    || port == opts.gtpu_port
                    || port == opts.geneve_port
                    || port == capwap::DATA_PORT
            };
            !tunnel(u16::from_be_bytes([s0, s1])) && !tunnel(u16::from_be_bytes([d0, d1]))
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bundle_of, decode_bytes};

    fn eth_v4(proto: u8, frag: u16, l4: &[u8], vlans: usize) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        for _ in 0..vlans {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let total = (20 + l4.len()) as u16;
        f.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0, 1]);
        f.extend_from_slice(&frag.to_be_bytes());
        f.extend_from_slice(&[64, proto, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1]);
        f.extend_from_slice(l4);
        f
    }

    fn agrees(link: LinkType, b: &[u8], opts: &DecodeOptions) -> Option<u16> {
        let got = plain_fid(link, b, opts)?;
        assert_eq!(plain_bundle(link, b, opts), Some(got.crc16()));
        let d = decode_bytes(link, b, opts);
        assert!(!d.ip.is_some_and(|ip| ip.is_fragment()));
        assert_eq!(bundle_of(&d), got.crc16());
        Some(got.crc16())
    }

    #[test]
    fn plain_tcp_and_udp_over_ethernet_and_vlans() {
        let opts = DecodeOptions {
            decap_tunnels: true,
            ..DecodeOptions::default()
        };
        let tcp = [0u8; 20];
        for vlans in 0..=2 {
            assert!(agrees(LinkType::ETHERNET, &eth_v4(6, 0, &tcp, vlans), &opts).is_some());
        }
        // Three tags: the full path.
        assert_eq!(
            plain_fid(LinkType::ETHERNET, &eth_v4(6, 0, &tcp, 3), &opts),
            None
        );
        let dns = [0x30, 0x39, 0, 53, 0, 8, 0, 0];
        assert!(agrees(LinkType::ETHERNET, &eth_v4(17, 0, &dns, 0), &opts).is_some());
    }

    #[test]
    fn fragments_tunnels_and_quoted_errors_take_the_full_path() {
        let opts = DecodeOptions {
            decap_tunnels: true,
            icmp_errors_in_quoted_flow: true,
            ..DecodeOptions::default()
        };
        let tcp = [0u8; 20];
        // More fragments; a later fragment.
        assert_eq!(
            plain_fid(LinkType::ETHERNET, &eth_v4(6, 0x2000, &tcp, 0), &opts),
            None
        );
        assert_eq!(
            plain_fid(LinkType::ETHERNET, &eth_v4(6, 0x0010, &tcp, 0), &opts),
            None
        );
        // VXLAN to port 4789, GTP-U from 2152, GRE, IP in IP, ICMP.
        let vxlan = [0x30, 0x39, 0x12, 0xb5, 0, 8, 0, 0];
        let gtpu = [0x08, 0x68, 0x30, 0x39, 0, 8, 0, 0];
        for (proto, l4) in [
            (17, &vxlan[..]),
            (17, &gtpu[..]),
            (47, &tcp[..]),
            (4, &tcp[..]),
            (1, &tcp[..]),
        ] {
            assert_eq!(
                plain_fid(LinkType::ETHERNET, &eth_v4(proto, 0, l4, 0), &opts),
                None,
                "protocol {proto}"
            );
        }
        // Without decapsulation, UDP to the VXLAN port is plain UDP.
        let plain = DecodeOptions::default();
        assert!(agrees(LinkType::ETHERNET, &eth_v4(17, 0, &vxlan, 0), &plain).is_some());
        // A cut header.
        let mut cut = eth_v4(6, 0, &tcp, 0);
        cut.truncate(14 + 12);
        assert_eq!(plain_fid(LinkType::ETHERNET, &cut, &opts), None);
    }

    #[test]
    fn ipv6_without_extension_headers_only() {
        let opts = DecodeOptions::default();
        let mut p = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
        p.extend((0..32).map(|i| i as u8));
        p.extend_from_slice(&[0u8; 20]);
        assert!(agrees(LinkType::RAW, &p, &opts).is_some());
        assert!(agrees(LinkType::IPV6, &p, &opts).is_some());
        // A fragment header next.
        p[6] = 44;
        assert_eq!(plain_fid(LinkType::RAW, &p, &opts), None);
    }
}
