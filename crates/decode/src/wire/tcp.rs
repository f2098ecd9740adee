//! TCP header (RFC 9293) and its options: MSS, window scale, SACK-permitted, SACK blocks, timestamps.
//!
//! `new_checked` validates the data offset (≥ 5 words, all present). Options are not parsed up front: the
//! dispatcher never needs them, and the engine walks them with [`Options`] only on SYNs.

use std::net::IpAddr;

use super::{Error, Result, be16, be32, byte, checksum, ip_proto, put16, put32};

pub const MIN_HEADER_LEN: usize = 20;

/// Flag bits of byte 13 (and NS, bit 8 of the 16-bit flags word).
pub mod flags {
    pub const FIN: u16 = 0x001;
    pub const SYN: u16 = 0x002;
    pub const RST: u16 = 0x004;
    pub const PSH: u16 = 0x008;
    pub const ACK: u16 = 0x010;
    pub const URG: u16 = 0x020;
    pub const ECE: u16 = 0x040;
    pub const CWR: u16 = 0x080;
    pub const NS: u16 = 0x100;
}

/// A view of a TCP segment.
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < MIN_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let hl = usize::from(byte(b, 12) >> 4) * 4;
        if hl < MIN_HEADER_LEN {
            return Err(Error::Malformed);
        }
        if b.len() < hl {
            return Err(Error::Truncated);
        }
        Ok(Packet { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn src_port(&self) -> u16 {
        be16(self.b(), 0)
    }
    pub fn dst_port(&self) -> u16 {
        be16(self.b(), 2)
    }
    pub fn seq(&self) -> u32 {
        be32(self.b(), 4)
    }
    pub fn ack(&self) -> u32 {
        be32(self.b(), 8)
    }
    /// Header length in bytes (data offset × 4).
    pub fn header_len(&self) -> usize {
        usize::from(byte(self.b(), 12) >> 4) * 4
    }
    /// The nine flag bits (see [`flags`]).
    pub fn flags(&self) -> u16 {
        be16(self.b(), 12) & 0x01ff
    }
    pub fn syn(&self) -> bool {
        self.flags() & flags::SYN != 0
    }
    pub fn ack_flag(&self) -> bool {
        self.flags() & flags::ACK != 0
    }
    pub fn fin(&self) -> bool {
        self.flags() & flags::FIN != 0
    }
    pub fn rst(&self) -> bool {
        self.flags() & flags::RST != 0
    }
    pub fn window(&self) -> u16 {
        be16(self.b(), 14)
    }
    pub fn checksum(&self) -> u16 {
        be16(self.b(), 16)
    }
    pub fn urgent(&self) -> u16 {
        be16(self.b(), 18)
    }
    pub fn options(&self) -> &[u8] {
        self.b()
            .get(MIN_HEADER_LEN..self.header_len())
            .unwrap_or(&[])
    }
    pub fn option_iter(&self) -> Options<'_> {
        Options::new(self.options())
    }
    pub fn payload(&self) -> &[u8] {
        self.b().get(self.header_len()..).unwrap_or(&[])
    }
    /// True when the checksum over the pseudo-header and *all of `buffer`* is right (only meaningful on a segment
    /// that was captured whole).
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        let s = checksum::pseudo_header(src, dst, ip_proto::TCP, self.b().len() as u32)
            + checksum::sum(self.b());
        checksum::fold(s) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    pub fn set_src_port(&mut self, v: u16) {
        put16(self.bm(), 0, v);
    }
    pub fn set_dst_port(&mut self, v: u16) {
        put16(self.bm(), 2, v);
    }
    pub fn set_seq(&mut self, v: u32) {
        put32(self.bm(), 4, v);
    }
    pub fn set_ack(&mut self, v: u32) {
        put32(self.bm(), 8, v);
    }
    /// Sets the data offset (header length in bytes, a multiple of 4) and the flags together.
    pub fn set_header_len_and_flags(&mut self, header_len: usize, flags: u16) {
        let v = (((header_len / 4) as u16) << 12) | (flags & 0x01ff);
        put16(self.bm(), 12, v);
    }
    pub fn set_window(&mut self, v: u16) {
        put16(self.bm(), 14, v);
    }
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.bm(), 16, v);
    }
    pub fn set_urgent(&mut self, v: u16) {
        put16(self.bm(), 18, v);
    }
    /// Recomputes the checksum over the pseudo-header and the whole buffer (header and payload).
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        self.set_checksum(0);
        let b = self.b();
        let s = checksum::pseudo_header(src, dst, ip_proto::TCP, b.len() as u32) + checksum::sum(b);
        self.set_checksum(checksum::finish(s));
    }
}

/// One TCP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    EndOfList,
    Nop,
    Mss(u16),
    WindowScale(u8),
    SackPermitted,
    /// SACK blocks as raw bytes (8 per block); iterate with [`sack_blocks`].
    Sack(&'a [u8]),
    Timestamps {
        tsval: u32,
        tsecr: u32,
    },
    Unknown {
        kind: u8,
        data: &'a [u8],
    },
}

/// The (left, right) edges of each SACK block.
pub fn sack_blocks(raw: &[u8]) -> impl Iterator<Item = (u32, u32)> + '_ {
    raw.chunks_exact(8).map(|c| (be32(c, 0), be32(c, 4)))
}

/// Iterator over TCP options. Stops after End of List; yields one `Err(Malformed)` on an impossible length (or a
/// known option of the wrong size) and then stops.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    rest: &'a [u8],
}

impl<'a> Options<'a> {
    pub fn new(raw: &'a [u8]) -> Self {
        Options { rest: raw }
    }
}

impl<'a> Iterator for Options<'a> {
    type Item = Result<TcpOption<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        let (&kind, tail) = self.rest.split_first()?;
        match kind {
            0 => {
                self.rest = &[];
                return Some(Ok(TcpOption::EndOfList));
            }
            1 => {
                self.rest = tail;
                return Some(Ok(TcpOption::Nop));
            }
            _ => {}
        }
        let len = match tail.first() {
            Some(&l) if l >= 2 && usize::from(l) <= self.rest.len() => usize::from(l),
            _ => {
                self.rest = &[];
                return Some(Err(Error::Malformed));
            }
        };
        let data = &self.rest[2..len];
        self.rest = &self.rest[len..];
        let opt = match (kind, data.len()) {
            (2, 2) => TcpOption::Mss(be16(data, 0)),
            (3, 1) => TcpOption::WindowScale(data[0]),
            (4, 0) => TcpOption::SackPermitted,
            (5, n) if n % 8 == 0 && n > 0 => TcpOption::Sack(data),
            (8, 8) => TcpOption::Timestamps {
                tsval: be32(data, 0),
                tsecr: be32(data, 4),
            },
            (2..=5 | 8, _) => {
                self.rest = &[];
                return Some(Err(Error::Malformed));
            }
            _ => TcpOption::Unknown { kind, data },
        };
        Some(Ok(opt))
    }
}

/// The meaning of a TCP segment, options included, borrowing its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u16,
    pub window: u16,
    pub urgent: u16,
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    /// Up to three SACK blocks (the most that fit beside timestamps).
    pub sack: [Option<(u32, u32)>; 3],
    pub timestamps: Option<(u32, u32)>,
    pub payload: &'a [u8],
}

impl<'a> Repr<'a> {
    /// Reads a segment; malformed options are [`Error::Malformed`], unknown ones are skipped.
    pub fn parse(p: &Packet<&'a [u8]>) -> Result<Repr<'a>> {
        let mut r = Repr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq: p.seq(),
            ack: p.ack(),
            flags: p.flags(),
            window: p.window(),
            urgent: p.urgent(),
            mss: None,
            window_scale: None,
            sack_permitted: false,
            sack: [None; 3],
            timestamps: None,
            payload: p.buffer.get(p.header_len()..).unwrap_or(&[]),
        };
        for o in p.option_iter() {
            match o? {
                TcpOption::Mss(m) => r.mss = Some(m),
                TcpOption::WindowScale(w) => r.window_scale = Some(w),
                TcpOption::SackPermitted => r.sack_permitted = true,
                TcpOption::Sack(raw) => {
                    for (slot, blk) in r.sack.iter_mut().zip(sack_blocks(raw)) {
                        *slot = Some(blk);
                    }
                }
                TcpOption::Timestamps { tsval, tsecr } => r.timestamps = Some((tsval, tsecr)),
                _ => {}
            }
        }
        Ok(r)
    }

    /// Option bytes `emit` writes, padded to a multiple of 4.
    pub fn options_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.window_scale.is_some() {
            n += 3;
        }
        if self.sack_permitted {
            n += 2;
        }
        let blocks = self.sack.iter().flatten().count();
        if blocks > 0 {
            n += 2 + 8 * blocks;
        }
        if self.timestamps.is_some() {
            n += 10;
        }
        n.div_ceil(4) * 4
    }

    pub fn header_len(&self) -> usize {
        MIN_HEADER_LEN + self.options_len()
    }

    /// Header plus payload.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload.len()
    }

    /// Writes header, options and payload into `buf` (at least [`Repr::buffer_len`] bytes; the segment is exactly
    /// that long) and fills the checksum for the given addresses.
    pub fn emit(&self, buf: &mut [u8], src: IpAddr, dst: IpAddr) -> Result<()> {
        let hl = self.header_len();
        if hl > 60 {
            return Err(Error::Malformed);
        }
        let total = self.buffer_len();
        let buf = buf.get_mut(..total).ok_or(Error::Truncated)?;
        {
            let o = &mut buf[MIN_HEADER_LEN..hl];
            let mut i = 0;
            let mut put = |bytes: &[u8]| {
                o[i..i + bytes.len()].copy_from_slice(bytes);
                i += bytes.len();
            };
            if let Some(m) = self.mss {
                let m = m.to_be_bytes();
                put(&[2, 4, m[0], m[1]]);
            }
            if self.sack_permitted {
                put(&[4, 2]);
            }
            if let Some((v, e)) = self.timestamps {
                put(&[8, 10]);
                put(&v.to_be_bytes());
                put(&e.to_be_bytes());
            }
            if let Some(w) = self.window_scale {
                put(&[3, 3, w]);
            }
            let blocks = self.sack.iter().flatten().count();
            if blocks > 0 {
                put(&[5, (2 + 8 * blocks) as u8]);
                for (l, r) in self.sack.iter().flatten() {
                    put(&l.to_be_bytes());
                    put(&r.to_be_bytes());
                }
            }
            // Pad with End of List (zeros).
            o[i..].fill(0);
        }
        buf[hl..].copy_from_slice(self.payload);
        let mut p = Packet { buffer: &mut *buf };
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_seq(self.seq);
        p.set_ack(self.ack);
        p.set_header_len_and_flags(hl, self.flags);
        p.set_window(self.window);
        p.set_urgent(self.urgent);
        p.fill_checksum(src, dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;
    use std::net::Ipv4Addr;

    // ndpi/pcap/443-curl.pcap: a macOS SYN 192.168.1.13:55523 → 178.62.197.130:443 with MSS, NOP, window scale,
    // NOP, NOP, timestamps, SACK-permitted, End of List.
    const SYN: &str = "d8e3 01bb cc77 7695 0000 0000 b002 ffff 7bc1 0000 0204 05b4 0103 0305 0101 080a 1e62 45b7 0000 0000 0402 0000";
    const SYN_SRC: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 13);
    const SYN_DST: Ipv4Addr = Ipv4Addr::new(178, 62, 197, 130);
    // reassembly/example2.pcap frame 34: an ACK 23.21.122.142:80 → 10.0.0.1:55193 with one SACK block.
    const SACK: &str =
        "0050 d799 801f 45fe 3a3d cb3f 8010 004b 2f51 0000 0101 050a 3a3d cb3e 3a3d cb3f";

    #[test]
    fn real_syn_with_options() {
        let b = hex(SYN);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (55523, 443));
        assert_eq!(p.seq(), 0xcc77_7695);
        assert_eq!(p.header_len(), 44);
        assert_eq!(p.flags(), flags::SYN);
        assert!(p.syn() && !p.ack_flag());
        assert_eq!(p.window(), 0xffff);
        assert!(p.verify_checksum(SYN_SRC.into(), SYN_DST.into()));
        let opts: Vec<_> = p.option_iter().map(|o| o.unwrap()).collect();
        assert_eq!(
            opts,
            vec![
                TcpOption::Mss(1460),
                TcpOption::Nop,
                TcpOption::WindowScale(5),
                TcpOption::Nop,
                TcpOption::Nop,
                TcpOption::Timestamps {
                    tsval: 509_756_855,
                    tsecr: 0
                },
                TcpOption::SackPermitted,
                TcpOption::EndOfList,
            ]
        );
        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            (r.mss, r.window_scale, r.sack_permitted),
            (Some(1460), Some(5), true)
        );
        assert_eq!(r.timestamps, Some((509_756_855, 0)));
    }

    #[test]
    fn real_sack_block() {
        let b = hex(SACK);
        let p = Packet::new_checked(&b[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.sack, [Some((0x3a3d_cb3e, 0x3a3d_cb3f)), None, None]);
        assert!(p.verify_checksum(
            Ipv4Addr::new(23, 21, 122, 142).into(),
            Ipv4Addr::new(10, 0, 0, 1).into()
        ));
    }

    #[test]
    fn emit_reproduces_checksum_and_round_trips() {
        let b = hex(SYN);
        let p = Packet::new_checked(&b[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        let mut out = vec![0u8; r.buffer_len()];
        r.emit(&mut out, SYN_SRC.into(), SYN_DST.into()).unwrap();
        let q = Packet::new_checked(&out[..]).unwrap();
        assert!(q.verify_checksum(SYN_SRC.into(), SYN_DST.into()));
        assert_eq!(Repr::parse(&q).unwrap(), r);
    }

    #[test]
    fn bad_offsets_and_options() {
        let mut b = hex(SACK);
        b[12] = 0x40; // data offset 4
        assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Malformed));
        b[12] = 0xf0; // 60 bytes, only 32 present
        assert_eq!(Packet::new_checked(&b[..]).err(), Some(Error::Truncated));
        // MSS with length 3, and a length running past the end.
        assert_eq!(Options::new(&[2, 3, 0]).next(), Some(Err(Error::Malformed)));
        assert_eq!(Options::new(&[9, 9, 0]).next(), Some(Err(Error::Malformed)));
        assert_eq!(Options::new(&[9, 1]).next(), Some(Err(Error::Malformed)));
    }
}
