//! BSD loopback headers: LINKTYPE_NULL (a 4-byte address family in the *capturing host's* byte order) and
//! LINKTYPE_LOOP (OpenBSD: the same field, always big-endian).
//!
//! The family values for IPv6 differ by OS (24 NetBSD/OpenBSD, 28 FreeBSD, 30 Darwin, 10 Linux), so all of them are
//! accepted. For NULL the byte order is guessed as libpcap does: a family never exceeds 0xffff, so if the
//! little-endian reading has its high half set, the field was written big-endian.

use super::{Error, Result};

pub const HEADER_LEN: usize = 4;

/// What the family field says follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Ipv4,
    Ipv6,
    /// Another family (OSI, IPX, ...): the decoder calls it unsupported.
    Other(u32),
}

impl Family {
    fn from_value(v: u32) -> Family {
        match v {
            2 => Family::Ipv4,
            10 | 24 | 28 | 30 => Family::Ipv6,
            other => Family::Other(other),
        }
    }
}

/// A view of a loopback header.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
    big_endian_only: bool,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// LINKTYPE_NULL: family in host byte order (detected).
    pub fn new_checked_null(buffer: T) -> Result<Self> {
        Self::check(buffer, false)
    }

    /// LINKTYPE_LOOP: family big-endian.
    pub fn new_checked_loop(buffer: T) -> Result<Self> {
        Self::check(buffer, true)
    }

    fn check(buffer: T, big_endian_only: bool) -> Result<Self> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Header {
            buffer,
            big_endian_only,
        })
    }

    /// The raw family value, in the byte order the header was written in.
    pub fn family_value(&self) -> u32 {
        let b = self.buffer.as_ref();
        let raw = [b[0], b[1], b[2], b[3]];
        if self.big_endian_only {
            return u32::from_be_bytes(raw);
        }
        let le = u32::from_le_bytes(raw);
        if le & 0xffff_0000 != 0 {
            u32::from_be_bytes(raw)
        } else {
            le
        }
    }

    pub fn family(&self) -> Family {
        Family::from_value(self.family_value())
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
    fn real_null_header_darwin_ipv6() {
        // reassembly/null_loopback.pcap, packet 1: 1e000000 little-endian = 30, Darwin's AF_INET6.
        let b = hex("1e00 0000 6000");
        let h = Header::new_checked_null(&b[..]).unwrap();
        assert_eq!(h.family_value(), 30);
        assert_eq!(h.family(), Family::Ipv6);
        assert_eq!(h.payload(), &[0x60, 0x00]);
    }

    #[test]
    fn big_endian_null_and_loop() {
        let b = hex("0000 0002 45");
        assert_eq!(
            Header::new_checked_null(&b[..]).unwrap().family(),
            Family::Ipv4
        );
        assert_eq!(
            Header::new_checked_loop(&b[..]).unwrap().family(),
            Family::Ipv4
        );
        let le = hex("0200 0000");
        assert_eq!(
            Header::new_checked_loop(&le[..]).unwrap().family(),
            Family::Other(0x0200_0000)
        );
    }
}
