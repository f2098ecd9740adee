//! MPLS label stack entry (RFC 3032): label:20, traffic class:3, bottom-of-stack:1, TTL:8.
//!
//! MPLS does not say what the bottom label carries. Like tcpdump and Wireshark's heuristic, the decoder looks at
//! the first nibble after the stack: 4 is IPv4, 6 is IPv6, 0 is a pseudowire control word (RFC 4385) followed by
//! an Ethernet frame; anything else is reported as unsupported.

use super::{Error, Result, be32};

/// Length of one label stack entry.
pub const HEADER_LEN: usize = 4;

/// A view of one label stack entry.
#[derive(Debug, Clone, Copy)]
pub struct Label<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Label<T> {
    pub fn new_checked(buffer: T) -> Result<Self> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Label { buffer })
    }

    fn word(&self) -> u32 {
        be32(self.buffer.as_ref(), 0)
    }
    pub fn label(&self) -> u32 {
        self.word() >> 12
    }
    pub fn traffic_class(&self) -> u8 {
        ((self.word() >> 9) & 7) as u8
    }
    pub fn bottom_of_stack(&self) -> bool {
        self.word() & 0x100 != 0
    }
    pub fn ttl(&self) -> u8 {
        (self.word() & 0xff) as u8
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
    fn real_label_from_capture() {
        // reassembly/ip4_bad_fragment.pcap: 8847 | 00008f01 → label 8, TC 7, bottom of stack, TTL 1.
        let b = hex("0000 8f01 4f");
        let l = Label::new_checked(&b[..]).unwrap();
        assert_eq!(l.label(), 8);
        assert_eq!(l.traffic_class(), 7);
        assert!(l.bottom_of_stack());
        assert_eq!(l.ttl(), 1);
        assert_eq!(l.payload(), &[0x4f]);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Label::new_checked(&[0u8; 3][..]).err(),
            Some(Error::Truncated)
        );
    }
}
