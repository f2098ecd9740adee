//! SCTP common header (RFC 9260): ports, verification tag, CRC-32c checksum; then chunks (type, flags, length).
//!
//! The checksum is not verified (CRC-32c over the whole packet costs more than the rest of decoding, and the
//! engine does not need it). [`Chunks`] walks the chunk list with its 4-byte padding.

use super::{Error, Result, be16, be32, byte};

pub const HEADER_LEN: usize = 12;

/// A view of an SCTP packet.
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_checked(buffer: T) -> Result<Self> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Packet { buffer })
    }
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
    pub fn verification_tag(&self) -> u32 {
        be32(self.buffer.as_ref(), 4)
    }
    pub fn checksum(&self) -> u32 {
        be32(self.buffer.as_ref(), 8)
    }
    pub fn chunks(&self) -> Chunks<'_> {
        Chunks {
            rest: self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[]),
        }
    }
}

/// One chunk: type, flags and value (without the 4-byte chunk header and padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk<'a> {
    pub kind: u8,
    pub flags: u8,
    pub value: &'a [u8],
}

/// Iterator over chunks; yields one `Err` on a bad length (or a chunk cut by the capture) and stops.
#[derive(Debug, Clone)]
pub struct Chunks<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Result<Chunk<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let r = self.rest;
        if r.len() < 4 {
            self.rest = &[];
            return Some(Err(Error::Truncated));
        }
        let len = usize::from(be16(r, 2));
        if len < 4 {
            self.rest = &[];
            return Some(Err(Error::Malformed));
        }
        let Some(value) = r.get(4..len) else {
            self.rest = &[];
            return Some(Err(Error::Truncated));
        };
        self.rest = r.get(len.div_ceil(4) * 4..).unwrap_or(&[]);
        Some(Ok(Chunk {
            kind: byte(r, 0),
            flags: byte(r, 1),
            value,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn real_data_chunk() {
        // ndpi/pcap/sctp.cap packet 1 (10.28.6.43 → 10.28.6.44): ports 16384 → 2944, a DATA chunk of 91 bytes.
        let mut b = hex("4000 0b80 0001 6f0a 6db0 1882 0003 005b 2802 4345 0000 a0bd");
        b.resize(12 + 92, 0);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (16384, 2944));
        assert_eq!(p.verification_tag(), 0x0001_6f0a);
        let chunks: Vec<_> = p.chunks().collect();
        assert_eq!(chunks.len(), 1);
        let c = chunks[0].unwrap();
        assert_eq!((c.kind, c.flags, c.value.len()), (0, 3, 87));
    }

    #[test]
    fn bad_chunks() {
        let b = hex("4000 0b80 0001 6f0a 6db0 1882 0003 0002");
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.chunks().next(), Some(Err(Error::Malformed)));
        let b = hex("4000 0b80 0001 6f0a 6db0 1882 0003 0010 aa");
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap().chunks().next(),
            Some(Err(Error::Truncated))
        );
    }
}
