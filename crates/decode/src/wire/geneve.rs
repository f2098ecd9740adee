//! Geneve (RFC 8926): an 8-byte header, then `opt_len` × 4 bytes of options, then the inner packet named by the
//! protocol type (an Ethernet frame for 0x6558, or an IPv4 or IPv6 packet), on UDP port 6081.
//!
//! A datagram on port 6081 whose version is not 0, whose options run past it, or whose protocol type is not one of
//! those three stays plain UDP (the decoder does not turn a stray flow on that port into a decode failure), as
//! Suricata's Geneve decoder declines it.

use super::{Error, Result, be16, be32, byte};

/// The fixed part of the header.
pub const HEADER_LEN: usize = 8;
/// IANA port.
pub const PORT: u16 = 6081;

/// A view of a Geneve header and its options.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks the version (0) and that the options fit.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if byte(b, 0) >> 6 != 0 {
            return Err(Error::Malformed);
        }
        let h = Header { buffer };
        if h.header_len() > h.buffer.as_ref().len() {
            return Err(Error::Truncated);
        }
        Ok(h)
    }
    /// Header length with the options.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + usize::from(byte(self.buffer.as_ref(), 0) & 0x3f) * 4
    }
    /// The OAM (control packet) flag.
    pub fn oam(&self) -> bool {
        byte(self.buffer.as_ref(), 1) & 0x80 != 0
    }
    /// The protocol type of the inner packet (an EtherType).
    pub fn protocol(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
    pub fn vni(&self) -> u32 {
        be32(self.buffer.as_ref(), 4) >> 8
    }
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn real_header() {
        // suricata-verify geneve-decoder/input.pcap packet 1: no options, transparent Ethernet, VNI 123, then the
        // inner frame (an ARP request to broadcast).
        let b = hex("0000 6558 0000 7b00 ffff ffff ffff");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!((h.header_len(), h.protocol(), h.vni()), (8, 0x6558, 123));
        assert!(!h.oam());
        assert_eq!(h.payload(), &[0xff; 6]);
        // One 4-byte option word: the payload starts after it.
        let b = hex("0100 0800 0000 7b00 0102 0304 45");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!((h.header_len(), h.protocol()), (12, 0x0800));
        assert_eq!(h.payload(), &[0x45]);
        // Options past the end, a version other than 0, a short header.
        assert_eq!(
            Header::new_checked(&hex("0200 6558 0000 7b00 0102")[..]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            Header::new_checked(&hex("4000 6558 0000 7b00")[..]).err(),
            Some(Error::Malformed)
        );
        assert_eq!(
            Header::new_checked(&hex("0000 6558")[..]).err(),
            Some(Error::Truncated)
        );
    }
}
