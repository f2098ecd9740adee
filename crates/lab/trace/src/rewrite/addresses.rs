//! Rewriting the IP addresses of one packet, checksums included.
//!
//! [`AddressRewriter::rewrite`] decodes the packet (read-only), asks an [`AddressMap`] for the new address of each
//! one it finds, and patches the bytes in place:
//!
//! * the (outermost) IPv4 or IPv6 header, with the IPv4 header checksum and the TCP, UDP or ICMPv6 checksum through
//!   the pseudo-header ([`checksum::rewrite_addresses`]);
//! * the packet quoted inside an ICMP or ICMPv6 error (destination unreachable, time exceeded, ...): its addresses,
//!   its own checksums as far as they were quoted, and the ICMP checksum that covers the quote;
//! * ARP over Ethernet/IPv4: sender and target protocol addresses;
//! * with `tunnels`, the innermost IP header of a GRE, IP-in-IP, VXLAN or GTP-U packet, fixing the outer UDP
//!   checksum that covers it (a GRE checksum, rarely present, is not updated: counted in
//!   [`RewriteStats::gre_checksum_stale`]). Intermediate layers of tunnels nested three deep are not rewritten.
//!
//! Every checksum fix is incremental (RFC 1624: the old and new bytes are enough), so a packet cut by a snap
//! length keeps correct checksums for the bytes it had on the wire. Addresses inside payloads (DNS answers, SIP,
//! FTP `PORT`, IPv6 Neighbor Discovery targets, routing headers) are not touched.
//!
//! Cost: one decode (tens of ns), two map lookups, and a few 16-bit additions; no allocation.

use std::net::{IpAddr, Ipv4Addr};

use flowbundle_decode::wire::{checksum, ethertype, ip_proto};
use flowbundle_decode::{DecodeOptions, L4, TunnelSet, decode_bytes};
use flowbundle_ingest::LinkType;
use serde::Serialize;

use super::ToolError;

/// Maps an original address to its replacement. Implementations must be consistent (the same input always gives
/// the same output within a run) and injective, so that flows stay distinct and keep their packets.
pub trait AddressMap {
    /// The replacement of `addr` (of the same family).
    fn map(&mut self, addr: IpAddr) -> Result<IpAddr, ToolError>;
    /// Distinct addresses held, for maps that keep a table.
    fn distinct(&self) -> Option<usize> {
        None
    }
}

/// What the rewriter did, by kind of packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RewriteStats {
    /// Packets whose outer IP header was rewritten.
    pub ip_packets: u64,
    /// ARP packets whose protocol addresses were rewritten.
    pub arp_packets: u64,
    /// ICMP errors whose quoted packet was rewritten.
    pub icmp_quoted: u64,
    /// Inner (tunnelled) IP headers rewritten.
    pub tunnel_inner: u64,
    /// GRE packets with the checksum bit set whose GRE checksum no longer matches after an inner rewrite.
    pub gre_checksum_stale: u64,
    /// Packets without an IP header (left as they are, except ARP).
    pub not_ip: u64,
}

/// Rewrites packets' addresses; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct AddressRewriter {
    tunnels: bool,
    stats: RewriteStats,
}

/// ICMPv4 types whose body quotes the offending datagram.
fn icmp4_quotes(t: u8) -> bool {
    matches!(t, 3 | 4 | 5 | 11 | 12)
}

/// ICMPv6 error types (RFC 4443: 1 to 4 quote the offending packet).
fn icmp6_quotes(t: u8) -> bool {
    (1..=4).contains(&t)
}

/// Bytes of a rewritten region kept to re-sum the checksum that covers it: an IPv4 header with options (60)
/// plus a TCP checksum (18), or an IPv6 header with a few extension headers.
const SNAP: usize = 160;

/// Copies up to [`SNAP`] bytes of `pkt[start..end]`, extended one byte back when `start` is odd relative to `base`
/// (the start of the checksummed area), so the copy begins at an even offset as [`checksum::adjust`] requires.
/// Returns the even-aligned start and the copy length.
fn snapshot(
    pkt: &[u8],
    base: usize,
    start: usize,
    end: usize,
    out: &mut [u8; SNAP],
) -> (usize, usize) {
    let start = if (start - base) % 2 == 1 {
        start - 1
    } else {
        start
    };
    let end = end.min(pkt.len()).min(start + out.len());
    let n = end.saturating_sub(start);
    if let (Some(dst), Some(src)) = (out.get_mut(..n), pkt.get(start..end)) {
        dst.copy_from_slice(src);
    }
    (start, n)
}

/// Re-sums the covering checksum at `pkt[field..field + 2]` after `pkt[start..start + n]` changed from `old`.
fn adjust_field(pkt: &mut [u8], field: usize, start: usize, old: &[u8], zero_means_none: bool) {
    let Some(new) = pkt.get(start..start + old.len()) else {
        return;
    };
    let mut new_copy = [0u8; SNAP];
    let n = new.len();
    new_copy[..n].copy_from_slice(new);
    let Some(f) = pkt.get_mut(field..field + 2) else {
        return;
    };
    let c = u16::from_be_bytes([f[0], f[1]]);
    if zero_means_none && c == 0 {
        return;
    }
    let mut v = checksum::adjust(c, old, &new_copy[..n]);
    if zero_means_none && v == 0 {
        v = 0xffff;
    }
    f.copy_from_slice(&v.to_be_bytes());
}

impl AddressRewriter {
    /// A rewriter; `tunnels` also rewrites the innermost header of tunnelled packets.
    pub fn new(tunnels: bool) -> AddressRewriter {
        AddressRewriter {
            tunnels,
            stats: RewriteStats::default(),
        }
    }

    /// What was rewritten so far.
    pub fn stats(&self) -> RewriteStats {
        self.stats
    }

    /// Rewrites every address of `pkt` (a frame of link type `link`) through `map`. A packet that cannot be
    /// decoded far enough is left as it is; only a map error (a full table) stops the run.
    pub fn rewrite(
        &mut self,
        link: LinkType,
        pkt: &mut [u8],
        map: &mut dyn AddressMap,
    ) -> Result<(), ToolError> {
        let opts = DecodeOptions::default();
        let d = decode_bytes(link, pkt, &opts);
        let Some(ip) = d.ip else {
            self.stats.not_ip += 1;
            return self.rewrite_arp(link, pkt, map);
        };
        let l3 = d.l3_offset as usize;
        let l3_end = (d.l3_end as usize).min(pkt.len());
        let l4 = d.l4_offset as usize;
        let quoted = match d.l4 {
            L4::Icmp(i) if icmp4_quotes(i.msg_type) => Some(l4),
            L4::Icmpv6(i) if icmp6_quotes(i.msg_type) => Some(l4),
            _ => None,
        };
        if self.tunnels {
            self.rewrite_inner(link, pkt, l3, map)?;
        }
        if let Some(icmp) = quoted {
            self.rewrite_quoted(pkt, icmp, l3_end, map)?;
        }
        let (src, dst) = (map.map(ip.src)?, map.map(ip.dst)?);
        if let Some(p) = pkt.get_mut(l3..l3_end)
            && checksum::rewrite_addresses(p, src, dst).is_ok()
        {
            self.stats.ip_packets += 1;
        }
        Ok(())
    }

    /// The packet quoted by an ICMP error at `icmp + 8` up to `end`.
    fn rewrite_quoted(
        &mut self,
        pkt: &mut [u8],
        icmp: usize,
        end: usize,
        map: &mut dyn AddressMap,
    ) -> Result<(), ToolError> {
        let q = icmp + 8;
        let Some(inner) = pkt.get(q..end) else {
            return Ok(());
        };
        let d = decode_bytes(LinkType::RAW, inner, &DecodeOptions::default());
        let Some(ip) = d.ip else { return Ok(()) };
        let (src, dst) = (map.map(ip.src)?, map.map(ip.dst)?);
        // The rewrite touches the quoted IP header and at most the first 8 bytes after it.
        let touched_end = q + (d.l4_offset as usize).max(usize::from(ip.header_len)) + 8;
        let mut old = [0u8; SNAP];
        let (start, n) = snapshot(pkt, icmp, q, touched_end, &mut old);
        let Some(slice) = pkt.get_mut(q..end) else {
            return Ok(());
        };
        if checksum::rewrite_addresses(slice, src, dst).is_err() {
            return Ok(());
        }
        adjust_field(pkt, icmp + 2, start, &old[..n], false);
        self.stats.icmp_quoted += 1;
        Ok(())
    }

    /// The innermost header of a tunnelled packet.
    fn rewrite_inner(
        &mut self,
        link: LinkType,
        pkt: &mut [u8],
        outer_l3: usize,
        map: &mut dyn AddressMap,
    ) -> Result<(), ToolError> {
        let opts = DecodeOptions {
            decap_tunnels: true,
            ..DecodeOptions::default()
        };
        let d = decode_bytes(link, pkt, &opts);
        let Some(ip) = d.ip else { return Ok(()) };
        if d.tunnels == 0 || d.l3_offset as usize == outer_l3 {
            return Ok(());
        }
        let inner = d.l3_offset as usize;
        let inner_end = (d.l3_end as usize).min(pkt.len());
        let touched_end = (d.l4_offset as usize).max(inner + usize::from(ip.header_len)) + 18;
        // Where the outer transport header is (UDP for VXLAN and GTP-U): decode the outer packet alone.
        let outer = decode_bytes(link, pkt, &DecodeOptions::default());
        let udp_at = match outer.l4 {
            L4::Udp(_) => Some(outer.l4_offset as usize),
            _ => None,
        };
        let gre_csum = d.tunnel_kinds.contains(TunnelSet::GRE)
            && outer.ip.is_some_and(|i| i.proto == ip_proto::GRE)
            && pkt
                .get(outer.l4_offset as usize)
                .is_some_and(|b| b & 0x80 != 0);
        let v6_outer = outer.ip.is_some_and(|i| i.is_v6());
        let (src, dst) = (map.map(ip.src)?, map.map(ip.dst)?);
        let mut old = [0u8; SNAP];
        let base = udp_at.unwrap_or(inner);
        let (start, n) = snapshot(pkt, base, inner, touched_end, &mut old);
        let Some(slice) = pkt.get_mut(inner..inner_end) else {
            return Ok(());
        };
        if checksum::rewrite_addresses(slice, src, dst).is_err() {
            return Ok(());
        }
        if let Some(u) = udp_at {
            adjust_field(pkt, u + 6, start, &old[..n], !v6_outer);
        }
        if gre_csum {
            self.stats.gre_checksum_stale += 1;
        }
        self.stats.tunnel_inner += 1;
        Ok(())
    }

    /// ARP (Ethernet/IPv4) sender and target protocol addresses.
    fn rewrite_arp(
        &mut self,
        link: LinkType,
        pkt: &mut [u8],
        map: &mut dyn AddressMap,
    ) -> Result<(), ToolError> {
        let be16 =
            |p: &[u8], at: usize| p.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]]));
        let (mut et, mut off) = match link {
            LinkType::ETHERNET => (be16(pkt, 12), 14),
            LinkType::LINUX_SLL => (be16(pkt, 14), 16),
            LinkType::LINUX_SLL2 => (be16(pkt, 0), 20),
            _ => return Ok(()),
        };
        let mut tags = 0;
        while let Some(t) = et
            && flowbundle_decode::wire::vlan::is_tpid(t)
            && tags < 8
        {
            et = be16(pkt, off + 2);
            off += 4;
            tags += 1;
        }
        if et != Some(ethertype::ARP) {
            return Ok(());
        }
        // htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4.
        if pkt.get(off..off + 6) != Some(&[0, 1, 8, 0, 6, 4][..]) {
            return Ok(());
        }
        for at in [off + 14, off + 24] {
            let Some(b) = pkt.get(at..at + 4) else {
                return Ok(());
            };
            let a = Ipv4Addr::new(b[0], b[1], b[2], b[3]);
            if let IpAddr::V4(n) = map.map(IpAddr::V4(a))?
                && let Some(b) = pkt.get_mut(at..at + 4)
            {
                b.copy_from_slice(&n.octets());
            }
        }
        self.stats.arp_packets += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowbundle_decode::wire::{ipv4, udp};
    use std::net::Ipv6Addr;

    /// Adds 1 to the last octet (an injective toy map).
    struct Plus1;
    impl AddressMap for Plus1 {
        fn map(&mut self, a: IpAddr) -> Result<IpAddr, ToolError> {
            Ok(match a {
                IpAddr::V4(v) => IpAddr::V4(Ipv4Addr::from(u32::from(v).wrapping_add(1))),
                IpAddr::V6(v) => IpAddr::V6(Ipv6Addr::from(u128::from(v).wrapping_add(1))),
            })
        }
    }

    fn udp4(src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let (s, d) = (Ipv4Addr::from(src), Ipv4Addr::from(dst));
        let u = udp::Repr {
            src_port: 1234,
            dst_port: 53,
            payload,
        };
        let ip = ipv4::Repr {
            src: s,
            dst: d,
            protocol: ip_proto::UDP,
            payload_len: u.buffer_len(),
            ttl: 64,
            ident: 7,
            dscp: 0,
            ecn: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        };
        let mut p = vec![0u8; 20 + u.buffer_len()];
        ip.emit(&mut p).unwrap();
        u.emit(&mut p[20..], s.into(), d.into()).unwrap();
        p
    }

    fn verify_udp4(p: &[u8]) {
        let ip = ipv4::Packet::new_checked(p).unwrap();
        assert!(ip.verify_checksum());
        let u = udp::Packet::new_checked(&p[20..]).unwrap();
        assert!(u.verify_checksum(ip.src().into(), ip.dst().into()));
    }

    #[test]
    fn udp_addresses_and_checksums() {
        let mut p = udp4([10, 0, 0, 1], [10, 0, 0, 2], b"hello");
        let mut rw = AddressRewriter::new(false);
        rw.rewrite(LinkType::RAW, &mut p, &mut Plus1).unwrap();
        assert_eq!(&p[12..20], &[10, 0, 0, 2, 10, 0, 0, 3]);
        verify_udp4(&p);
        assert_eq!(rw.stats().ip_packets, 1);
    }

    #[test]
    fn icmp_error_quote_is_rewritten_and_checksums_hold() {
        let quoted = udp4([10, 0, 0, 1], [10, 0, 0, 2], b"hello");
        let mut icmp = vec![3, 3, 0, 0, 0, 0, 0, 0];
        icmp.extend_from_slice(&quoted);
        let c = checksum::checksum(&icmp);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        let ip = ipv4::Repr {
            src: Ipv4Addr::new(10, 0, 0, 2),
            dst: Ipv4Addr::new(10, 0, 0, 1),
            protocol: ip_proto::ICMP,
            payload_len: icmp.len(),
            ttl: 64,
            ident: 9,
            dscp: 0,
            ecn: 0,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
        };
        let mut p = vec![0u8; 20];
        ip.emit(&mut p).unwrap();
        p.extend_from_slice(&icmp);
        let mut rw = AddressRewriter::new(false);
        rw.rewrite(LinkType::RAW, &mut p, &mut Plus1).unwrap();
        assert_eq!(rw.stats().icmp_quoted, 1);
        assert_eq!(
            checksum::fold(checksum::sum(&p[20..])),
            0xffff,
            "ICMP checksum"
        );
        verify_udp4(&p[28..]);
        assert_eq!(&p[28 + 12..28 + 20], &[10, 0, 0, 2, 10, 0, 0, 3]);
    }

    #[test]
    fn arp_protocol_addresses() {
        let mut p = vec![0xff; 6];
        p.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
        p.extend_from_slice(&[
            2, 0, 0, 0, 0, 1, 192, 168, 0, 1, 0, 0, 0, 0, 0, 0, 192, 168, 0, 9,
        ]);
        let mut rw = AddressRewriter::new(false);
        rw.rewrite(LinkType::ETHERNET, &mut p, &mut Plus1).unwrap();
        assert_eq!(&p[28..32], &[192, 168, 0, 2]);
        assert_eq!(&p[38..42], &[192, 168, 0, 10]);
        assert_eq!(rw.stats().arp_packets, 1);
    }

    #[test]
    fn vxlan_inner_header_and_outer_udp_checksum() {
        // Outer IPv4/UDP to port 4789, VXLAN header, inner Ethernet + IPv4/UDP.
        let inner = udp4([192, 168, 1, 1], [192, 168, 1, 2], b"inner payload");
        let mut vx = vec![0x08, 0, 0, 0, 0, 0, 1, 0];
        vx.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0]);
        vx.extend_from_slice(&inner);
        let (s, d) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let u = udp::Repr {
            src_port: 50000,
            dst_port: 4789,
            payload: &vx,
        };
        let ip = ipv4::Repr {
            src: s,
            dst: d,
            protocol: ip_proto::UDP,
            payload_len: u.buffer_len(),
            ttl: 64,
            ident: 1,
            dscp: 0,
            ecn: 0,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
        };
        let mut p = vec![0u8; 20 + u.buffer_len()];
        ip.emit(&mut p).unwrap();
        u.emit(&mut p[20..], s.into(), d.into()).unwrap();
        let mut rw = AddressRewriter::new(true);
        rw.rewrite(LinkType::RAW, &mut p, &mut Plus1).unwrap();
        assert_eq!(rw.stats().tunnel_inner, 1);
        verify_udp4(&p);
        let inner_at = 20 + 8 + 8 + 14;
        verify_udp4(&p[inner_at..]);
        assert_eq!(
            &p[inner_at + 12..inner_at + 20],
            &[192, 168, 1, 2, 192, 168, 1, 3]
        );
    }
}
