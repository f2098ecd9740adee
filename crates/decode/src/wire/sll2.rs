//! Linux "cooked" capture header, version 2 (LINKTYPE_LINUX_SLL2, 20 bytes): adds the interface index.
//!
//! protocol:2, reserved:2, interface index:4, ARPHRD type:2, packet type:1, address length:1, address:8.

use super::{Error, Result, be16, be32, byte};

pub const HEADER_LEN: usize = 20;

/// A view of an SLL v2 header.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    pub fn new_checked(buffer: T) -> Result<Self> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Header { buffer })
    }
    pub fn protocol(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }
    pub fn interface_index(&self) -> u32 {
        be32(self.buffer.as_ref(), 4)
    }
    pub fn arphrd(&self) -> u16 {
        be16(self.buffer.as_ref(), 8)
    }
    pub fn packet_type(&self) -> u8 {
        byte(self.buffer.as_ref(), 10)
    }
    pub fn addr_len(&self) -> u8 {
        byte(self.buffer.as_ref(), 11)
    }
    pub fn addr(&self) -> &[u8] {
        let n = usize::from(self.addr_len()).min(8);
        self.buffer.as_ref().get(12..12 + n).unwrap_or(&[])
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
    fn real_header_from_sll2_capture() {
        // First packet of reassembly/sll2.pcap.
        let b = hex("0800 0000 00000014 0001 00 06 f03f958f8263 0000 45");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.protocol(), 0x0800);
        assert_eq!(h.interface_index(), 20);
        assert_eq!(h.arphrd(), 1);
        assert_eq!(h.packet_type(), 0);
        assert_eq!(h.addr(), &[0xf0, 0x3f, 0x95, 0x8f, 0x82, 0x63]);
        assert_eq!(h.payload(), &[0x45]);
    }
}
