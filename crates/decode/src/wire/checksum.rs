//! The Internet checksum (RFC 1071), its pseudo-headers, incremental update (RFC 1624) and address rewriting.
//!
//! The sum works on 32-bit accumulators over 16-bit words and folds once at the end; on x86-64 that runs at
//! several bytes per cycle, enough for the synthesizer's full recomputation. The anonymizer instead rewrites
//! addresses in captures that are often cut by a snap length, where the transport checksum *cannot* be recomputed
//! (the payload is missing); [`rewrite_addresses`] therefore patches every checksum incrementally from the old and
//! new address bytes, which is exact whatever the capture kept.

use std::net::IpAddr;

use super::{Error, Result, ip_proto, ipv4, ipv6};

/// One's-complement sum of `data` as big-endian 16-bit words (an odd last byte is padded with zero), not folded.
pub fn sum(data: &[u8]) -> u32 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rest = chunks.remainder();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        acc += u64::from(u16::from_be_bytes([p[0], p[1]])) << 16;
    }
    if let [b] = pairs.remainder() {
        acc += u64::from(*b) << 24;
    }
    // Fold 64 → 32 bits; a 32-bit word counts as two 16-bit words, so fold both halves together.
    let folded = (acc & 0xffff_ffff) + (acc >> 32);
    let folded = (folded & 0xffff_ffff) + (folded >> 32);
    let folded = folded as u32;
    (folded >> 16) + (folded & 0xffff)
}

/// Folds a sum to 16 bits (without complementing).
pub fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The checksum field value for data whose words sum to `s`: `!fold(s)`.
pub fn finish(s: u32) -> u16 {
    !fold(s)
}

/// Checksum of a byte string (an IPv4 header with its checksum field zeroed, for example).
pub fn checksum(data: &[u8]) -> u16 {
    finish(sum(data))
}

/// Sum of the TCP/UDP/ICMPv6 pseudo-header. The two addresses must be of one family; a mixed pair sums as zero
/// addresses (the caller made an error, but no panic).
pub fn pseudo_header(src: IpAddr, dst: IpAddr, proto: u8, length: u32) -> u32 {
    let mut s = u32::from(proto);
    s += (length >> 16) + (length & 0xffff);
    match (src, dst) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            s += sum(&a.octets()) + sum(&b.octets());
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            s += sum(&a.octets()) + sum(&b.octets());
        }
        _ => {}
    }
    s
}

/// RFC 1624 incremental update: the new checksum field after the covered bytes `old` were replaced by `new`
/// (equal lengths, at an even offset within the covered data).
pub fn adjust(csum: u16, old: &[u8], new: &[u8]) -> u16 {
    // HC' = ~(~HC + ~m + m')
    let mut s = u32::from(!csum);
    s += u32::from(!fold(sum(old)));
    s += sum(new);
    !fold(s)
}

/// Rewrites the source and destination addresses of a raw IP packet (starting at its IP header) and fixes every
/// checksum that covers them: the IPv4 header checksum, and the TCP, UDP or ICMPv6 checksum through the
/// pseudo-header when this packet carries the transport header (unfragmented or first fragment). Works on
/// snap-length-truncated packets because every fix is incremental.
///
/// A UDP/IPv4 checksum of zero means "none" and stays zero; a UDP checksum that would become zero is written as
/// 0xffff (RFC 768). Addresses must be of the packet's family, otherwise [`Error::Malformed`].
pub fn rewrite_addresses(packet: &mut [u8], new_src: IpAddr, new_dst: IpAddr) -> Result<()> {
    match packet.first().map(|b| b >> 4) {
        Some(4) => {
            let (IpAddr::V4(s), IpAddr::V4(d)) = (new_src, new_dst) else {
                return Err(Error::Malformed);
            };
            let (hl, proto, l4_fixable, old) = {
                let ip = ipv4::Packet::new_checked(&*packet)?;
                let mut old = [0u8; 8];
                old[..4].copy_from_slice(&ip.src().octets());
                old[4..].copy_from_slice(&ip.dst().octets());
                (ip.header_len(), ip.protocol(), ip.frag_offset() == 0, old)
            };
            let mut new = [0u8; 8];
            new[..4].copy_from_slice(&s.octets());
            new[4..].copy_from_slice(&d.octets());
            {
                let mut ip = ipv4::Packet::new_checked(&mut *packet)?;
                ip.set_src(s);
                ip.set_dst(d);
                let c = adjust(ip.checksum(), &old, &new);
                ip.set_checksum(c);
            }
            if l4_fixable {
                let l4 = packet.get_mut(hl..).unwrap_or(&mut []);
                fix_l4(l4, proto, &old, &new, false);
            }
            Ok(())
        }
        Some(6) => {
            let (IpAddr::V6(s), IpAddr::V6(d)) = (new_src, new_dst) else {
                return Err(Error::Malformed);
            };
            let (old, l4) = {
                let ip = ipv6::Packet::new_checked(&*packet)?;
                let mut old = [0u8; 32];
                old[..16].copy_from_slice(&ip.src().octets());
                old[16..].copy_from_slice(&ip.dst().octets());
                let chain = ipv6::walk_extensions(ip.next_header(), ip.payload(), 16);
                let l4 = match chain {
                    Ok(c) if c.fragment.is_none_or(|f| f.offset == 0) && c.transport.is_some() => {
                        c.transport.map(|t| (40 + c.transport_offset, t))
                    }
                    _ => None,
                };
                (old, l4)
            };
            let mut new = [0u8; 32];
            new[..16].copy_from_slice(&s.octets());
            new[16..].copy_from_slice(&d.octets());
            {
                let mut ip = ipv6::Packet::new_checked(&mut *packet)?;
                ip.set_src(s);
                ip.set_dst(d);
            }
            if let Some((off, proto)) = l4 {
                let l4 = packet.get_mut(off..).unwrap_or(&mut []);
                fix_l4(l4, proto, &old, &new, true);
            }
            Ok(())
        }
        Some(_) => Err(Error::Malformed),
        None => Err(Error::Truncated),
    }
}

/// Patches the transport checksum at the start of `l4` after a pseudo-header address change. Leaves headers that
/// were cut by the capture alone.
fn fix_l4(l4: &mut [u8], proto: u8, old: &[u8], new: &[u8], v6: bool) {
    let at = match proto {
        ip_proto::TCP => 16,
        ip_proto::UDP => 6,
        ip_proto::ICMPV6 if v6 => 2,
        _ => return,
    };
    let Some(field) = l4.get_mut(at..at + 2) else {
        return;
    };
    let c = u16::from_be_bytes([field[0], field[1]]);
    if proto == ip_proto::UDP && c == 0 && !v6 {
        return;
    }
    let mut n = adjust(c, old, new);
    if proto == ip_proto::UDP && n == 0 {
        n = 0xffff;
    }
    field.copy_from_slice(&n.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to 0xddf2 (folded).
        assert_eq!(
            fold(sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7])),
            0xddf2
        );
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(&[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn ipv4_header_from_capture_verifies() {
        // The widely reproduced worked example of an IPv4 header (TCP, 172.16.10.99 → 172.16.10.12): with its
        // checksum 0xb1e6 in place the header sums to 0xffff.
        let h = hex("4500 003c 1c46 4000 4006 b1e6 ac10 0a63 ac10 0a0c");
        assert_eq!(fold(sum(&h)), 0xffff);
    }

    #[test]
    fn adjust_matches_recompute() {
        let mut h = hex("4500 003c 1c46 4000 4006 b1e6 ac10 0a63 ac10 0a0c");
        let old = h[12..16].to_vec();
        let new = [10, 1, 2, 3];
        h[12..16].copy_from_slice(&new);
        let inc = adjust(0xb1e6, &old, &new);
        h[10] = 0;
        h[11] = 0;
        assert_eq!(inc, checksum(&h));
    }
}
