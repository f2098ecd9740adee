//! Network Service Header (NSH, RFC 8300; EtherType 0x894F): the service-function-chaining header that sits
//! between an outer link header and the packet being steered.
//!
//! ```text
//! |Ver:2|O:1|U:1|TTL:6|Length:6|U:4|MD Type:4|Next Protocol:8|
//! |        Service Path Identifier:24        |Service Index:8|
//! |                 context headers (Length*4 - 8 bytes)       |
//! ```
//!
//! `Length` counts 4-byte words of the whole NSH, context headers included, so the inner packet starts at
//! `Length * 4` whatever the MD type. The checks follow Suricata's `decode-nsh.c`: version 0 only; MD type 1 has
//! exactly the fixed 16-byte context (length 6); MD type 2 at least the 8-byte base (length 2). Other MD types are
//! reported as unsupported by the decoder, like a next protocol it does not follow (nested NSH included: one NSH
//! per packet is what every deployment sends, and refusing the nested case keeps the work per packet fixed).

use super::{Error, Result, be16};

/// Length of the base and service path headers, which every NSH has.
pub const BASE_LEN: usize = 8;
/// MD type 1: fixed-length context headers (16 bytes), so the header length is always 6 words.
pub const MD_TYPE_1: u8 = 1;
/// MD type 2: variable-length context headers (TLVs).
pub const MD_TYPE_2: u8 = 2;
/// The header length (in 4-byte words) MD type 1 requires.
pub const MD_TYPE_1_WORDS: u8 = 6;

/// Next Protocol values (IANA "NSH Next Protocol" registry).
pub mod next_proto {
    pub const IPV4: u8 = 1;
    pub const IPV6: u8 = 2;
    pub const ETHERNET: u8 = 3;
    pub const NSH: u8 = 4;
    pub const MPLS: u8 = 5;
}

/// A view of an NSH: the base header, the service path header and the context headers `length()` announces.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks that the base header is there, that the version is 0, that the length fits the MD type, and that the
    /// whole announced header was captured.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < BASE_LEN {
            return Err(Error::Truncated);
        }
        let h = Header { buffer };
        let words = h.length_words();
        if h.version() != 0
            || usize::from(words) * 4 < BASE_LEN
            || (h.md_type() == MD_TYPE_1 && words != MD_TYPE_1_WORDS)
        {
            return Err(Error::Malformed);
        }
        if h.buffer.as_ref().len() < h.header_len() {
            return Err(Error::Truncated);
        }
        Ok(h)
    }

    fn word0(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }
    pub fn version(&self) -> u8 {
        (self.word0() >> 14) as u8
    }
    /// The O bit: an OAM packet.
    pub fn oam(&self) -> bool {
        self.word0() & 0x2000 != 0
    }
    pub fn ttl(&self) -> u8 {
        ((self.word0() >> 6) & 0x3f) as u8
    }
    /// Header length in 4-byte words, context headers included.
    pub fn length_words(&self) -> u8 {
        (self.word0() & 0x3f) as u8
    }
    /// Header length in bytes: where the inner packet starts.
    pub fn header_len(&self) -> usize {
        usize::from(self.length_words()) * 4
    }
    pub fn md_type(&self) -> u8 {
        self.buffer.as_ref().get(2).map_or(0, |b| b & 0x0f)
    }
    pub fn next_protocol(&self) -> u8 {
        self.buffer.as_ref().get(3).copied().unwrap_or(0)
    }
    /// Service Path Identifier (24 bits).
    pub fn spi(&self) -> u32 {
        let b = self.buffer.as_ref();
        match b.get(4..7) {
            Some(s) => u32::from_be_bytes([0, s[0], s[1], s[2]]),
            None => 0,
        }
    }
    /// Service Index.
    pub fn si(&self) -> u8 {
        self.buffer.as_ref().get(7).copied().unwrap_or(0)
    }
    /// The context headers (16 bytes for MD type 1, TLVs for MD type 2).
    pub fn context(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(BASE_LEN..self.header_len())
            .unwrap_or(&[])
    }
    /// The packet after the NSH.
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    /// The NSH of suricata-verify decode-nsh-type1/input.pcap (after its Ethernet header), then the first bytes of
    /// the inner IPv4 header.
    const TYPE1: &str = "0006 0101 0000 0102 0000 0001 0000 0002 0000 0003 0000 0004 4500 0022";

    #[test]
    fn real_md_type_1_header() {
        let b = hex(TYPE1);
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.version(), 0);
        assert!(!h.oam());
        assert_eq!(h.ttl(), 0);
        assert_eq!(h.length_words(), 6);
        assert_eq!(h.header_len(), 24);
        assert_eq!(h.md_type(), MD_TYPE_1);
        assert_eq!(h.next_protocol(), next_proto::IPV4);
        assert_eq!(h.spi(), 1);
        assert_eq!(h.si(), 2);
        assert_eq!(h.context(), &hex("00000001 00000002 00000003 00000004")[..]);
        assert_eq!(h.payload(), &[0x45, 0x00, 0x00, 0x22]);
    }

    #[test]
    fn bad_version_and_lengths_are_malformed() {
        let mut b = hex(TYPE1);
        b[0] |= 0x40; // version 1
        assert_eq!(Header::new_checked(&b[..]).err(), Some(Error::Malformed));
        let mut b = hex(TYPE1);
        b[1] = 5; // MD type 1 with 5 words
        assert_eq!(Header::new_checked(&b[..]).err(), Some(Error::Malformed));
        let mut b = hex(TYPE1);
        b[1] = 1; // shorter than the base header
        b[2] = MD_TYPE_2;
        assert_eq!(Header::new_checked(&b[..]).err(), Some(Error::Malformed));
    }

    #[test]
    fn md_type_2_length_and_truncation() {
        // MD type 2 with no context headers: the inner packet follows the 8-byte base.
        let b = hex("0002 0203 0000 07ff aabb");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.md_type(), MD_TYPE_2);
        assert_eq!(h.next_protocol(), next_proto::ETHERNET);
        assert_eq!(h.spi(), 7);
        assert_eq!(h.si(), 0xff);
        assert_eq!(h.payload(), &[0xaa, 0xbb]);
        // A header announcing more context than was captured.
        let b = hex("0004 0201 0000 0101 0000");
        assert_eq!(Header::new_checked(&b[..]).err(), Some(Error::Truncated));
        assert_eq!(Header::new_checked(&b[..5]).err(), Some(Error::Truncated));
    }
}
