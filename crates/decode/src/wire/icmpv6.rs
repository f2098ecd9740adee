//! ICMPv6 (RFC 4443): type, code, checksum. The checksum covers a pseudo-header, so verifying it needs the
//! addresses.

use std::net::IpAddr;

use super::{Error, Result, be16, byte, checksum, ip_proto};

pub const MIN_LEN: usize = 4;

pub const ECHO_REQUEST: u8 = 128;
pub const ECHO_REPLY: u8 = 129;
pub const MLDV2_REPORT: u8 = 143;
pub const NEIGHBOR_SOLICIT: u8 = 135;
pub const NEIGHBOR_ADVERT: u8 = 136;

/// A view of an ICMPv6 message.
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
    /// Identifier and sequence of an echo request or reply.
    pub fn echo(&self) -> Option<(u16, u16)> {
        let b = self.buffer.as_ref();
        (matches!(self.msg_type(), ECHO_REQUEST | ECHO_REPLY) && b.len() >= 8)
            .then(|| (be16(b, 4), be16(b, 6)))
    }
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(4..).unwrap_or(&[])
    }
    /// Checks the checksum over the pseudo-header and the whole message (which must have been captured whole).
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        let b = self.buffer.as_ref();
        let s =
            checksum::pseudo_header(src, dst, ip_proto::ICMPV6, b.len() as u32) + checksum::sum(b);
        checksum::fold(s) == 0xffff
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;
    use std::net::Ipv6Addr;

    #[test]
    fn real_mldv2_report() {
        // reassembly/IgmpPackets.pcap packet 1: fe80::9c09:b416:768:ff42 → ff02::16, MLDv2 report, one record.
        let b = hex("8f00 1a3c 0000 0001 0300 0000 ff02 0000 0000 0000 0000 0000 0001 0003");
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.msg_type(), p.code()), (MLDV2_REPORT, 0));
        assert_eq!(p.echo(), None);
        let src: Ipv6Addr = "fe80::9c09:b416:768:ff42".parse().unwrap();
        let dst: Ipv6Addr = "ff02::16".parse().unwrap();
        assert!(p.verify_checksum(src.into(), dst.into()));
        assert_eq!(Packet::new_checked(&b[..3]).err(), Some(Error::Truncated));
    }
}
