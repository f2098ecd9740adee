//! Cisco HDLC (LINKTYPE_C_HDLC, 104): the framing Cisco routers use on serial links, as written by captures taken
//! on those links.
//!
//! address:1 (0x0F unicast, 0x8F broadcast), control:1 (0x00), protocol:2. The protocol field is an EtherType,
//! so after these four bytes the decoder continues exactly as after an Ethernet header. The address and control
//! bytes are not checked: like Suricata's and tcpdump's decoders we trust the link type, and a frame whose
//! protocol is not IP (SLARP keepalives, CDP) ends as an unsupported EtherType.

use super::{Error, Result, be16};

/// Length of the Cisco HDLC header.
pub const HEADER_LEN: usize = 4;
/// Address byte of a unicast frame.
pub const ADDR_UNICAST: u8 = 0x0f;
/// Address byte of a broadcast frame.
pub const ADDR_BROADCAST: u8 = 0x8f;

/// A view of a Cisco HDLC header.
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
    pub fn address(&self) -> u8 {
        self.buffer.as_ref().first().copied().unwrap_or(0)
    }
    pub fn control(&self) -> u8 {
        self.buffer.as_ref().get(1).copied().unwrap_or(0)
    }
    /// The EtherType of what follows.
    pub fn protocol(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
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
    fn real_header_from_hdlc_capture() {
        // First packet of suricata-verify decode-chdlc-01/hdlc-http_1tx.pcap: unicast, IPv4.
        let b = hex("0f00 0800 4500 0030");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.address(), ADDR_UNICAST);
        assert_eq!(h.control(), 0);
        assert_eq!(h.protocol(), 0x0800);
        assert_eq!(h.payload(), &[0x45, 0x00, 0x00, 0x30]);
    }

    #[test]
    fn short_header_is_truncated() {
        assert_eq!(
            Header::new_checked(&[0x0f, 0x00, 0x08][..]).err(),
            Some(Error::Truncated)
        );
    }
}
