//! IPv6 header (RFC 8200) and its extension header chain.
//!
//! The fixed header is 40 bytes. [`walk_extensions`] follows the Next Header chain through hop-by-hop options,
//! routing, destination options, fragment, AH (RFC 4302: length in 4-byte units) and the other RFC 6564-shaped
//! headers (mobility, HIP, shim6), and stops at the first transport protocol, at No Next Header, at ESP (encrypted:
//! nothing after it is readable) or after a fragment header with a non-zero offset (the rest is not a header).
//! The number of headers walked is bounded by the caller, so a hostile chain of thousands of empty options costs
//! at most that many steps.
//!
//! A payload length of 0 is read as "use the captured length": the jumbogram option (RFC 2675) and segmentation
//! offload both write it.

use std::net::Ipv6Addr;

use flowbundle_types::{DecodeEvent, DecodeEvents};

use super::{Error, Result, be16, be32, byte, ip_proto, put16};

pub const HEADER_LEN: usize = 40;

/// A view of an IPv6 packet.
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Checks the version and that the 40-byte header is present.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        let Some(&first) = b.first() else {
            return Err(Error::Truncated);
        };
        if first >> 4 != 6 {
            return Err(Error::Malformed);
        }
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Packet { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn version(&self) -> u8 {
        byte(self.b(), 0) >> 4
    }
    pub fn traffic_class(&self) -> u8 {
        ((be16(self.b(), 0) >> 4) & 0xff) as u8
    }
    pub fn flow_label(&self) -> u32 {
        be32(self.b(), 0) & 0x000f_ffff
    }
    pub fn payload_len(&self) -> u16 {
        be16(self.b(), 4)
    }
    /// Bytes after the fixed header the packet says it has (the captured length when the field is 0).
    pub fn effective_payload_len(&self) -> usize {
        match self.payload_len() {
            0 => self.b().len().saturating_sub(HEADER_LEN),
            n => usize::from(n),
        }
    }
    pub fn next_header(&self) -> u8 {
        byte(self.b(), 6)
    }
    pub fn hop_limit(&self) -> u8 {
        byte(self.b(), 7)
    }
    pub fn src(&self) -> Ipv6Addr {
        addr(self.b(), 8)
    }
    pub fn dst(&self) -> Ipv6Addr {
        addr(self.b(), 24)
    }
    /// Raw source and destination bytes (32).
    pub fn addr_bytes(&self) -> [u8; 32] {
        let mut a = [0u8; 32];
        if let Some(s) = self.b().get(8..40) {
            a.copy_from_slice(s);
        }
        a
    }
    /// Everything after the fixed header, cut to the payload length and to the captured bytes.
    pub fn payload(&self) -> &[u8] {
        let end = (HEADER_LEN + self.effective_payload_len()).min(self.b().len());
        self.b().get(HEADER_LEN..end).unwrap_or(&[])
    }
    pub fn payload_truncated(&self) -> bool {
        HEADER_LEN + self.effective_payload_len() > self.b().len()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    /// Writes version 6, the traffic class and the flow label.
    pub fn set_first_word(&mut self, traffic_class: u8, flow_label: u32) {
        let w = (6u32 << 28) | (u32::from(traffic_class) << 20) | (flow_label & 0x000f_ffff);
        super::put32(self.bm(), 0, w);
    }
    pub fn set_payload_len(&mut self, v: u16) {
        put16(self.bm(), 4, v);
    }
    pub fn set_next_header(&mut self, v: u8) {
        self.bm()[6] = v;
    }
    pub fn set_hop_limit(&mut self, v: u8) {
        self.bm()[7] = v;
    }
    pub fn set_src(&mut self, a: Ipv6Addr) {
        self.bm()[8..24].copy_from_slice(&a.octets());
    }
    pub fn set_dst(&mut self, a: Ipv6Addr) {
        self.bm()[24..40].copy_from_slice(&a.octets());
    }
}

fn addr(b: &[u8], at: usize) -> Ipv6Addr {
    let mut a = [0u8; 16];
    if let Some(s) = b.get(at..at + 16) {
        a.copy_from_slice(s);
    }
    Ipv6Addr::from(a)
}

/// True for the Next Header values [`walk_extensions`] steps over.
pub fn is_extension(nh: u8) -> bool {
    matches!(
        nh,
        ip_proto::HOPOPT
            | ip_proto::IPV6_ROUTE
            | ip_proto::IPV6_FRAG
            | ip_proto::IPV6_OPTS
            | ip_proto::AH
            | ip_proto::MOBILITY
            | ip_proto::HIP
            | ip_proto::SHIM6
    )
}

/// The fragment header (RFC 8200 §4.5) found in a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentHeader {
    /// Offset of the data in bytes.
    pub offset: u16,
    pub more: bool,
    pub ident: u32,
    /// Next Header carried by the fragment header (the protocol of the fragmentable part).
    pub next_header: u8,
    /// Position of the fragment header, counted from the start of the IPv6 payload.
    pub position: usize,
    /// Position of the Next Header byte that announces the fragment header, counted from the start of the IPv6
    /// *packet* (6 when it follows the fixed header). Defragmentation rewrites that byte.
    pub announced_at: usize,
}

/// What walking the extension chain found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chain {
    /// The protocol after the extension headers: TCP, UDP, ICMPv6, ..., or ESP (the walk stops there). `None` for
    /// No Next Header (59).
    pub transport: Option<u8>,
    /// Where that protocol's header starts, counted from the start of the IPv6 payload.
    pub transport_offset: usize,
    /// Extension headers stepped over.
    pub count: u8,
    /// The fragment header, if any. With a non-zero offset the walk stopped right after it.
    pub fragment: Option<FragmentHeader>,
}

/// Walks the extension headers of an IPv6 payload starting with Next Header `first`, at most `max` of them.
/// Truncated when a header runs past `payload`, Malformed when the chain is longer than `max`. A second fragment
/// header after an atomic one (offset 0, no more fragments) is stepped over, as Suricata does.
pub fn walk_extensions(first: u8, payload: &[u8], max: u8) -> Result<Chain> {
    walk_extensions_noting(first, payload, max, &mut DecodeEvents::default())
}

/// [`walk_extensions`], noting the anomalies of the chain in `events` as Suricata's IPv6 decoder names them:
/// duplicated headers (a second fragment, routing, hop-by-hop, AH or ESP header, a third destination options
/// header), routing type 0, a non-zero reserved field in a fragment or AH header, hop-by-hop and destination
/// options of unknown types, options that run past their header, PadN of length 0, options headers holding only
/// padding, data after No Next Header, and a truncated header (`ipv6.trunc_exthdr`, with `Err(Truncated)`).
pub fn walk_extensions_noting(
    first: u8,
    payload: &[u8],
    max: u8,
    events: &mut DecodeEvents,
) -> Result<Chain> {
    let mut nh = first;
    let mut off = 0usize;
    let mut announced_at = 6usize;
    let mut chain = Chain {
        transport: None,
        transport_offset: 0,
        count: 0,
        fragment: None,
    };
    // Headers seen so far, for the duplicate events.
    let (mut hh, mut rh, mut ah, mut dh) = (false, false, false, 0u8);
    loop {
        if !is_extension(nh) {
            if nh == ip_proto::IPV6_NONXT {
                chain.transport = None;
                if payload.len() > off {
                    events.set(DecodeEvent::Ipv6DataAfterNoneHeader);
                }
            } else {
                chain.transport = Some(nh);
                // After extension headers, fewer than 2 bytes cannot start any header.
                if chain.count > 0 && payload.len() < off + 2 {
                    events.set(DecodeEvent::Ipv6TruncExthdr);
                }
            }
            chain.transport_offset = off;
            return Ok(chain);
        }
        if chain.count >= max {
            return Err(Error::Malformed);
        }
        let Some(h) = payload.get(off..off + 8) else {
            events.set(DecodeEvent::Ipv6TruncExthdr);
            return Err(Error::Truncated);
        };
        let next = h[0];
        let len = match nh {
            ip_proto::IPV6_FRAG => {
                if h[1] != 0 {
                    events.set(DecodeEvent::Ipv6FhNonZeroReservedField);
                }
                if chain.fragment.is_some() {
                    // Only after an atomic fragment header (a real one ends the walk): stepped over.
                    events.set(DecodeEvent::Ipv6ExthdrDuplFh);
                    chain.count += 1;
                    announced_at = super::ipv6::HEADER_LEN + off;
                    off += 8;
                    nh = next;
                    continue;
                }
                let fo = be16(h, 2);
                let f = FragmentHeader {
                    offset: fo & 0xfff8,
                    more: fo & 1 != 0,
                    ident: be32(h, 4),
                    next_header: next,
                    position: off,
                    announced_at,
                };
                chain.fragment = Some(f);
                if f.offset != 0 {
                    chain.count += 1;
                    chain.transport = Some(next);
                    chain.transport_offset = off + 8;
                    return Ok(chain);
                }
                if !f.more {
                    events.set(DecodeEvent::Ipv6ExthdrUselessFh);
                }
                8
            }
            ip_proto::AH => {
                if ah {
                    events.set(DecodeEvent::Ipv6ExthdrDuplAh);
                }
                ah = true;
                if h[2] != 0 || h[3] != 0 {
                    events.set(DecodeEvent::Ipv6ExthdrAhResNotNull);
                }
                (usize::from(h[1]) + 2) * 4
            }
            _ => (usize::from(h[1]) + 1) * 8,
        };
        let Some(hdr) = payload.get(off..off + len) else {
            events.set(DecodeEvent::Ipv6TruncExthdr);
            return Err(Error::Truncated);
        };
        match nh {
            ip_proto::HOPOPT => {
                if hh {
                    events.set(DecodeEvent::Ipv6ExthdrDuplHh);
                }
                hh = true;
                options(
                    &hdr[2..],
                    events,
                    DecodeEvent::Ipv6HopoptsUnknownOpt,
                    DecodeEvent::Ipv6HopoptsOnlyPadding,
                );
            }
            ip_proto::IPV6_OPTS => {
                if dh >= 2 {
                    events.set(DecodeEvent::Ipv6ExthdrDuplDh);
                }
                dh = dh.saturating_add(1);
                options(
                    &hdr[2..],
                    events,
                    DecodeEvent::Ipv6DstoptsUnknownOpt,
                    DecodeEvent::Ipv6DstoptsOnlyPadding,
                );
            }
            ip_proto::IPV6_ROUTE => {
                if rh {
                    events.set(DecodeEvent::Ipv6ExthdrDuplRh);
                }
                rh = true;
                if hdr[2] == 0 {
                    events.set(DecodeEvent::Ipv6RhType0);
                }
            }
            _ => {}
        }
        chain.count += 1;
        announced_at = super::ipv6::HEADER_LEN + off;
        off += len;
        nh = next;
    }
}

/// Option types of hop-by-hop and destination options headers the decoder knows: Pad1, PadN, router alert, the
/// jumbo payload and home address options.
const KNOWN_OPTIONS: [u8; 5] = [0x00, 0x01, 0x05, 0xc2, 0xc9];

/// Walks the TLV options of a hop-by-hop or destination options header (after its two leading bytes).
fn options(
    opts: &[u8],
    events: &mut DecodeEvents,
    unknown: DecodeEvent,
    only_padding: DecodeEvent,
) {
    let mut i = 0usize;
    let mut padding_only = true;
    while i < opts.len() {
        let t = opts[i];
        if t == 0 {
            i += 1;
            continue;
        }
        let Some(&l) = opts.get(i + 1) else {
            events.set(DecodeEvent::Ipv6ExthdrInvalidOptlen);
            return;
        };
        let l = usize::from(l);
        if i + 2 + l > opts.len() {
            events.set(DecodeEvent::Ipv6ExthdrInvalidOptlen);
            return;
        }
        if t == 1 {
            if l == 0 {
                events.set(DecodeEvent::Ipv6ZeroLenPadn);
            }
        } else {
            padding_only = false;
            if !KNOWN_OPTIONS.contains(&t) {
                events.set(unknown);
            }
        }
        i += 2 + l;
    }
    if padding_only {
        events.set(only_padding);
    }
}

/// The meaning of a fixed IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub next_header: u8,
    pub payload_len: usize,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub flow_label: u32,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        Ok(Repr {
            src: p.src(),
            dst: p.dst(),
            next_header: p.next_header(),
            payload_len: p.effective_payload_len(),
            hop_limit: p.hop_limit(),
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the 40-byte header into `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        if self.payload_len > usize::from(u16::MAX) || self.flow_label > 0x000f_ffff {
            return Err(Error::Malformed);
        }
        if buf.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let mut p = Packet { buffer: buf };
        p.set_first_word(self.traffic_class, self.flow_label);
        p.set_payload_len(self.payload_len as u16);
        p.set_next_header(self.next_header);
        p.set_hop_limit(self.hop_limit);
        p.set_src(self.src);
        p.set_dst(self.dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    // reassembly/ip6_fragments.pcap, packet 1: fe80::21f:f3ff:fecd:f617 → ff02::fb, a first fragment (ident
    // 0x002c5323, more) of UDP/mDNS. The payload length field (0x80) is what the capture says.
    const FIRST_FRAG: &str = "6000 0000 0080 2cff fe80 0000 0000 0000 021f f3ff fecd f617 ff02 0000 0000 0000 0000 0000 0000 00fb \
                              1100 0001 002c 5323 14e9 14e9 02e1 f77b";

    #[test]
    fn real_first_fragment_chain() {
        let b = hex(FIRST_FRAG);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.next_header(), ip_proto::IPV6_FRAG);
        assert_eq!(p.hop_limit(), 255);
        assert_eq!(
            p.src(),
            "fe80::21f:f3ff:fecd:f617".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(p.dst(), "ff02::fb".parse::<Ipv6Addr>().unwrap());
        let c = walk_extensions(p.next_header(), p.payload(), 8).unwrap();
        assert_eq!(c.transport, Some(ip_proto::UDP));
        assert_eq!(c.transport_offset, 8);
        assert_eq!(c.count, 1);
        let f = c.fragment.unwrap();
        assert_eq!(
            (f.offset, f.more, f.ident, f.announced_at),
            (0, true, 0x002c_5323, 6)
        );
    }

    #[test]
    fn non_first_fragment_stops_walk() {
        // Fragment header with offset 120, more, same ident (packet 2 of the same capture).
        let c = walk_extensions(44, &hex("1100 0079 002c 5323 aaaa"), 8).unwrap();
        let f = c.fragment.unwrap();
        assert_eq!((f.offset, f.more), (120, true));
        assert_eq!(c.transport, Some(17));
        assert_eq!(c.transport_offset, 8);
    }

    #[test]
    fn hop_by_hop_then_icmpv6() {
        // reassembly/IgmpPackets.pcap packet 1 (MLDv2 report): hop-by-hop with Router Alert, then ICMPv6.
        let c = walk_extensions(0, &hex("3a00 0502 0000 0100 8f00 1a3c"), 8).unwrap();
        assert_eq!(c.transport, Some(ip_proto::ICMPV6));
        assert_eq!(c.transport_offset, 8);
        assert!(c.fragment.is_none());
    }

    #[test]
    fn chains_are_bounded_and_checked() {
        // 3 empty destination-options headers, limit 2.
        let three = hex("3c00 0000 0000 0000 3c00 0000 0000 0000 0600 0000 0000 0000");
        assert_eq!(walk_extensions(60, &three, 2), Err(Error::Malformed));
        assert_eq!(walk_extensions(60, &three, 3).unwrap().transport, Some(6));
        assert_eq!(walk_extensions(60, &three[..20], 3), Err(Error::Truncated));
        // ESP stops the walk; No Next Header gives no transport.
        assert_eq!(walk_extensions(50, &[], 3).unwrap().transport, Some(50));
        assert_eq!(walk_extensions(59, &[], 3).unwrap().transport, None);
    }

    #[test]
    fn round_trip() {
        let b = hex(FIRST_FRAG);
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        let mut out = [0u8; 40];
        r.emit(&mut out).unwrap();
        assert_eq!(&out[..], &b[..40]);
    }
}
