//! IPv4 header (RFC 791): options, fragmentation fields and the header checksum.
//!
//! `new_checked` validates only the *header*: version 4, IHL ≥ 5 and the IHL bytes present. The total length may
//! exceed what was captured (a snap length) or be smaller than the bytes present (Ethernet padding); [`Packet::payload`]
//! takes the smaller of the two, which is how padding stops being mistaken for payload. A total length below the
//! header length is [`Error::Malformed`], except 0, which segmentation offload (TSO/GSO) writes into captured packets
//! and which Wireshark also reads as "use the captured length".

use std::net::Ipv4Addr;

use super::{Error, Result, be16, byte, checksum, put16};

/// Minimum header length (no options).
pub const MIN_HEADER_LEN: usize = 20;
/// Maximum header length (15 × 4).
pub const MAX_HEADER_LEN: usize = 60;

/// A view of an IPv4 packet.
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        let Some(&first) = b.first() else {
            return Err(Error::Truncated);
        };
        if first >> 4 != 4 {
            return Err(Error::Malformed);
        }
        let hl = usize::from(first & 0x0f) * 4;
        if hl < MIN_HEADER_LEN {
            return Err(Error::Malformed);
        }
        if b.len() < hl {
            return Err(Error::Truncated);
        }
        let total = usize::from(be16(b, 2));
        if total != 0 && total < hl {
            return Err(Error::Malformed);
        }
        Ok(Packet { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    pub fn version(&self) -> u8 {
        byte(self.b(), 0) >> 4
    }
    /// Header length in bytes (IHL × 4), options included.
    pub fn header_len(&self) -> usize {
        usize::from(byte(self.b(), 0) & 0x0f) * 4
    }
    pub fn dscp(&self) -> u8 {
        byte(self.b(), 1) >> 2
    }
    pub fn ecn(&self) -> u8 {
        byte(self.b(), 1) & 3
    }
    /// The total length field as written (0 under segmentation offload).
    pub fn total_len(&self) -> u16 {
        be16(self.b(), 2)
    }
    /// The datagram length to use: the total length, or the captured length when the field is 0 (offload).
    pub fn effective_total_len(&self) -> usize {
        match self.total_len() {
            0 => self.b().len(),
            n => usize::from(n),
        }
    }
    pub fn ident(&self) -> u16 {
        be16(self.b(), 4)
    }
    pub fn dont_frag(&self) -> bool {
        byte(self.b(), 6) & 0x40 != 0
    }
    pub fn more_frags(&self) -> bool {
        byte(self.b(), 6) & 0x20 != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (be16(self.b(), 6) & 0x1fff) << 3
    }
    /// True for any fragment (MF set or a non-zero offset).
    pub fn is_fragment(&self) -> bool {
        be16(self.b(), 6) & 0x3fff != 0
    }
    pub fn ttl(&self) -> u8 {
        byte(self.b(), 8)
    }
    pub fn protocol(&self) -> u8 {
        byte(self.b(), 9)
    }
    pub fn checksum(&self) -> u16 {
        be16(self.b(), 10)
    }
    pub fn src(&self) -> Ipv4Addr {
        addr(self.b(), 12)
    }
    pub fn dst(&self) -> Ipv4Addr {
        addr(self.b(), 16)
    }
    /// Raw source and destination bytes (8), as hashed by the FID.
    pub fn addr_bytes(&self) -> [u8; 8] {
        let mut a = [0u8; 8];
        if let Some(s) = self.b().get(12..20) {
            a.copy_from_slice(s);
        }
        a
    }
    /// The options bytes (between the fixed header and IHL × 4).
    pub fn options(&self) -> &[u8] {
        self.b()
            .get(MIN_HEADER_LEN..self.header_len())
            .unwrap_or(&[])
    }
    /// Iterates the options.
    pub fn option_iter(&self) -> Options<'_> {
        Options {
            rest: self.options(),
        }
    }
    /// True when the header checksum is right.
    pub fn verify_checksum(&self) -> bool {
        let h = self.b().get(..self.header_len()).unwrap_or(&[]);
        checksum::fold(checksum::sum(h)) == 0xffff
    }
    /// The payload, cut to the total length (no Ethernet padding) and to the captured bytes.
    pub fn payload(&self) -> &[u8] {
        let end = self.effective_total_len().min(self.b().len());
        self.b().get(self.header_len()..end).unwrap_or(&[])
    }
    /// True when fewer bytes were captured than the total length says.
    pub fn payload_truncated(&self) -> bool {
        self.effective_total_len() > self.b().len()
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    pub fn set_version_and_header_len(&mut self, header_len: usize) {
        self.bm()[0] = 0x40 | ((header_len / 4) as u8 & 0x0f);
    }
    pub fn set_dscp_ecn(&mut self, dscp: u8, ecn: u8) {
        self.bm()[1] = (dscp << 2) | (ecn & 3);
    }
    pub fn set_total_len(&mut self, v: u16) {
        put16(self.bm(), 2, v);
    }
    pub fn set_ident(&mut self, v: u16) {
        put16(self.bm(), 4, v);
    }
    /// Sets DF, MF and the offset (in bytes; must be a multiple of 8) at once.
    pub fn set_frag(&mut self, dont_frag: bool, more_frags: bool, offset: u16) {
        let v =
            (u16::from(dont_frag) << 14) | (u16::from(more_frags) << 13) | ((offset >> 3) & 0x1fff);
        put16(self.bm(), 6, v);
    }
    pub fn set_ttl(&mut self, v: u8) {
        self.bm()[8] = v;
    }
    pub fn set_protocol(&mut self, v: u8) {
        self.bm()[9] = v;
    }
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.bm(), 10, v);
    }
    pub fn set_src(&mut self, a: Ipv4Addr) {
        self.bm()[12..16].copy_from_slice(&a.octets());
    }
    pub fn set_dst(&mut self, a: Ipv4Addr) {
        self.bm()[16..20].copy_from_slice(&a.octets());
    }
    /// Recomputes the header checksum.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let hl = self.header_len();
        let c = checksum::checksum(self.b().get(..hl).unwrap_or(&[]));
        self.set_checksum(c);
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        self.bm().get_mut(hl..).unwrap_or(&mut [])
    }
}

fn addr(b: &[u8], at: usize) -> Ipv4Addr {
    match b.get(at..at + 4) {
        Some(s) => Ipv4Addr::new(s[0], s[1], s[2], s[3]),
        None => Ipv4Addr::UNSPECIFIED,
    }
}

/// One IPv4 option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv4Option<'a> {
    EndOfList,
    Nop,
    /// Any other option: its type and data (without the type and length bytes).
    Other {
        kind: u8,
        data: &'a [u8],
    },
}

/// Iterator over IPv4 options; stops after End of List, yields `Err` once on a bad length and then stops.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Options<'a> {
    type Item = Result<Ipv4Option<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        let (&kind, tail) = self.rest.split_first()?;
        match kind {
            0 => {
                self.rest = &[];
                Some(Ok(Ipv4Option::EndOfList))
            }
            1 => {
                self.rest = tail;
                Some(Ok(Ipv4Option::Nop))
            }
            _ => {
                let len = tail.first().map(|&l| usize::from(l));
                match len {
                    Some(l) if l >= 2 && l <= self.rest.len() => {
                        let data = &self.rest[2..l];
                        self.rest = &self.rest[l..];
                        Some(Ok(Ipv4Option::Other { kind, data }))
                    }
                    _ => {
                        self.rest = &[];
                        Some(Err(Error::Malformed))
                    }
                }
            }
        }
    }
}

/// The meaning of an IPv4 header (without options).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    /// Bytes after the header.
    pub payload_len: usize,
    pub ttl: u8,
    pub ident: u16,
    pub dscp: u8,
    pub ecn: u8,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// In bytes, a multiple of 8.
    pub frag_offset: u16,
}

impl Repr {
    /// Reads a header. Options are skipped (not represented); the checksum is not checked (see
    /// [`Packet::verify_checksum`]): captures from offloading NICs carry wrong ones.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        Ok(Repr {
            src: p.src(),
            dst: p.dst(),
            protocol: p.protocol(),
            payload_len: p.effective_total_len().saturating_sub(p.header_len()),
            ttl: p.ttl(),
            ident: p.ident(),
            dscp: p.dscp(),
            ecn: p.ecn(),
            dont_frag: p.dont_frag(),
            more_frags: p.more_frags(),
            frag_offset: p.frag_offset(),
        })
    }

    /// 20: `emit` writes no options.
    pub const fn buffer_len(&self) -> usize {
        MIN_HEADER_LEN
    }

    /// Writes the 20-byte header with its checksum into `buf` (the payload, if any, is the caller's).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let total = self.payload_len + MIN_HEADER_LEN;
        if total > usize::from(u16::MAX)
            || !self.frag_offset.is_multiple_of(8)
            || self.dscp > 63
            || self.ecn > 3
        {
            return Err(Error::Malformed);
        }
        if buf.len() < MIN_HEADER_LEN {
            return Err(Error::Truncated);
        }
        buf[0] = 0x45;
        let mut p = Packet { buffer: buf };
        p.set_dscp_ecn(self.dscp, self.ecn);
        p.set_total_len(total as u16);
        p.set_ident(self.ident);
        p.set_frag(self.dont_frag, self.more_frags, self.frag_offset);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src(self.src);
        p.set_dst(self.dst);
        p.fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    // First fragment of reassembly/frag_http_req.pcap: 172.16.133.54 → 216.137.33.81, id 0x425f, MF, TCP.
    const FIRST_FRAG: &str = "4500 00a4 425f 2000 8006 acd3 ac10 8536 d889 2151 fb9f 0050";

    #[test]
    fn real_first_fragment() {
        let b = hex(FIRST_FRAG);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 164);
        assert_eq!(p.ident(), 0x425f);
        assert!(p.more_frags() && !p.dont_frag() && p.is_fragment());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 128);
        assert_eq!(p.protocol(), 6);
        assert_eq!(p.src(), Ipv4Addr::new(172, 16, 133, 54));
        assert_eq!(p.dst(), Ipv4Addr::new(216, 137, 33, 81));
        assert!(p.verify_checksum());
        assert!(p.payload_truncated());
        assert_eq!(p.payload(), &[0xfb, 0x9f, 0x00, 0x50]);
    }

    #[test]
    fn real_bad_fragment_header_is_truncated() {
        // reassembly/ip4_bad_fragment.pcap after its MPLS label: IHL 15 (60 bytes) but only 42 bytes captured.
        let b = hex(
            "4fa6 0f01 0104 0024 001d f7e3 0000 0001 0000 0001 ff03 c021 0914 0008 433e f21d 0000 0000 0000 0000 0000",
        );
        assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Truncated));
    }

    #[test]
    fn header_len_below_minimum_is_malformed() {
        let mut b = hex(FIRST_FRAG);
        b[0] = 0x44;
        assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Malformed));
        b[0] = 0x65;
        assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Malformed));
    }

    #[test]
    fn padding_is_not_payload() {
        // A 40-byte TCP/IP packet padded to Ethernet's 46-byte minimum.
        let mut b = vec![0u8; 46];
        let r = Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            protocol: 6,
            payload_len: 20,
            ttl: 64,
            ident: 1,
            dscp: 0,
            ecn: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        };
        r.emit(&mut b).unwrap();
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.payload().len(), 20);
        assert!(p.verify_checksum());
        assert_eq!(Repr::parse(&p).unwrap(), r);
    }

    #[test]
    fn options_iterate() {
        // reassembly/IgmpPackets.pcap packet 2 (IGMPv2 leave): one option, Router Alert (94 04 0000).
        let b = hex("4600 0020 1367 0000 0102 0000 a9fe ff42 e000 0002 9404 0000");
        let p = Packet::new_checked(&b[..]).unwrap();
        let opts: Vec<_> = p.option_iter().collect();
        assert_eq!(
            opts,
            vec![Ok(Ipv4Option::Other {
                kind: 0x94,
                data: &[0, 0]
            })]
        );
        let bad = hex("4600 0020 1367 0000 0102 0000 a9fe ff42 e000 0002 9409 0000");
        let p = Packet::new_checked(&bad[..]).unwrap();
        assert_eq!(p.option_iter().next(), Some(Err(Error::Malformed)));
    }

    #[test]
    fn offload_zero_total_length_uses_captured_length() {
        let mut b = hex(FIRST_FRAG);
        b[2] = 0;
        b[3] = 0;
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.payload().len(), 4);
        assert!(!p.payload_truncated());
    }
}
