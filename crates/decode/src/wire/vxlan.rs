//! VXLAN (RFC 7348): 8 bytes (flags with the I bit, 24-bit VNI) before an inner Ethernet frame, on UDP port 4789.
//!
//! A UDP datagram on port 4789 without the I flag is not treated as VXLAN: the decoder leaves it as plain UDP,
//! so a stray flow on that port is not turned into a decode failure.

use super::{Error, Result, be32, byte};

pub const HEADER_LEN: usize = 8;
/// IANA port.
pub const PORT: u16 = 4789;

/// A view of a VXLAN header.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks the length and the I (valid VNI) flag.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if byte(b, 0) & 0x08 == 0 {
            return Err(Error::Malformed);
        }
        Ok(Header { buffer })
    }
    pub fn flags(&self) -> u8 {
        byte(self.buffer.as_ref(), 0)
    }
    pub fn vni(&self) -> u32 {
        be32(self.buffer.as_ref(), 4) >> 8
    }
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn real_header() {
        // malformed/gso-ipv4-vxlan-ipv4.pcap packet 1: VNI 5001, then the inner Ethernet frame.
        let b = hex("0800 0000 0013 8900 fe36");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!((h.flags(), h.vni()), (0x08, 5001));
        assert_eq!(h.payload(), &[0xfe, 0x36]);
        assert_eq!(
            Header::new_checked(&hex("0000 0000 0000 0100")[..]).err(),
            Some(Error::Malformed)
        );
    }
}
