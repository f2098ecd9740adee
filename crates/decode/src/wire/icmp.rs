//! ICMP for IPv4 (RFC 792): type, code, checksum and the 4-byte "rest of header" (identifier and sequence for
//! echo). Only the first 4 bytes are required: some captures carry bare type/code headers.

use super::{Error, Result, be16, byte};

/// Bytes required by `new_checked`.
pub const MIN_LEN: usize = 4;

pub const ECHO_REPLY: u8 = 0;
pub const DEST_UNREACHABLE: u8 = 3;
pub const ECHO_REQUEST: u8 = 8;
pub const TIME_EXCEEDED: u8 = 11;

/// A view of an ICMP message.
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_checked(buffer: T) -> Result<Self> {
        if buffer.as_ref().len() < MIN_LEN {
            return Err(Error::Truncated);
        }
        Ok(Packet { buffer })
    }
    pub fn msg_type(&self) -> u8 {
        byte(self.buffer.as_ref(), 0)
    }
    pub fn code(&self) -> u8 {
        byte(self.buffer.as_ref(), 1)
    }
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
    /// Identifier and sequence number of an echo request or reply, when present.
    pub fn echo(&self) -> Option<(u16, u16)> {
        let b = self.buffer.as_ref();
        (matches!(self.msg_type(), ECHO_REQUEST | ECHO_REPLY) && b.len() >= 8)
            .then(|| (be16(b, 4), be16(b, 6)))
    }
    /// The 4 bytes after the checksum (0 when not captured).
    pub fn rest_of_header(&self) -> u32 {
        super::be32(self.buffer.as_ref(), 4)
    }
    /// Everything after the 8-byte header (for errors: the offending datagram's header).
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(8..).unwrap_or(&[])
    }
    pub fn verify_checksum(&self) -> bool {
        super::checksum::fold(super::checksum::sum(self.buffer.as_ref())) == 0xffff
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn real_echo_request() {
        // ndpi/pcap/googledns_android10.pcap frame 81: ping 192.168.1.159 → 8.8.8.8, id 2, seq 1, 56 data bytes.
        let b = hex(
            "0800 e095 0002 0001 7a6d ec5e 0000 0000 eac7 0700 0000 0000 1011 1213 1415 1617 1819 1a1b 1c1d 1e1f \
             2021 2223 2425 2627 2829 2a2b 2c2d 2e2f 3031 3233 3435 3637",
        );
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.msg_type(), p.code()), (ECHO_REQUEST, 0));
        assert_eq!(p.echo(), Some((2, 1)));
        assert!(p.verify_checksum());
        assert_eq!(p.payload().len(), 56);
        assert_eq!(Packet::new_checked(&b[..3]).err(), Some(Error::Truncated));
    }
}
