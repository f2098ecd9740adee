//! Linux "cooked" capture header, version 1 (LINKTYPE_LINUX_SLL, 16 bytes): what `tcpdump -i any` writes.
//!
//! packet type:2, ARPHRD type:2, link-layer address length:2, address:8, protocol:2. The protocol is an
//! EtherType for ordinary interfaces.

use super::{Error, Result, be16};

pub const HEADER_LEN: usize = 16;

/// A view of an SLL v1 header.
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
    /// 0 to us, 1 broadcast, 2 multicast, 3 to someone else, 4 sent by us.
    pub fn packet_type(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }
    pub fn arphrd(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
    pub fn addr_len(&self) -> u16 {
        be16(self.buffer.as_ref(), 4)
    }
    /// The link-layer address, up to 8 bytes.
    pub fn addr(&self) -> &[u8] {
        let n = usize::from(self.addr_len()).min(8);
        self.buffer.as_ref().get(6..6 + n).unwrap_or(&[])
    }
    pub fn protocol(&self) -> u16 {
        be16(self.buffer.as_ref(), 14)
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
    fn real_header_from_sll_capture() {
        // First packet of reassembly/sll.pcap: broadcast (1), ARPHRD_ETHER, 6-byte address, IPv4.
        let b = hex("0001 0001 0006 30469a23fbfa 0000 0800 45");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.packet_type(), 1);
        assert_eq!(h.arphrd(), 1);
        assert_eq!(h.addr(), &[0x30, 0x46, 0x9a, 0x23, 0xfb, 0xfa]);
        assert_eq!(h.protocol(), 0x0800);
        assert_eq!(h.payload(), &[0x45]);
    }
}
