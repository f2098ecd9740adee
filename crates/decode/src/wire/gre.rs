//! GRE (RFC 2784/2890, version 0) and enhanced GRE (RFC 2637 PPTP, version 1), plus the ERSPAN type II/III
//! headers GRE carries mirrored traffic in.
//!
//! Version 0: flags C (checksum + reserved, 4 bytes), K (key, 4), S (sequence, 4), in that order after the 4-byte
//! base header. Version 1 always has the key (payload length + call id), optionally sequence (S) and
//! acknowledgment (A). The deprecated routing bit (RFC 1701 source routes) is reported as malformed here: no
//! current implementation sends it and its variable-length route list is a classic overflow source.

use super::{Error, Result, be16, be32, byte, ethertype};

pub const BASE_LEN: usize = 4;

const C: u16 = 0x8000;
const R: u16 = 0x4000;
const K: u16 = 0x2000;
const S: u16 = 0x1000;
const A: u16 = 0x0080;

/// A view of a GRE header.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks the version (0 or 1), the routing bit and that all optional fields are present.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < BASE_LEN {
            return Err(Error::Truncated);
        }
        let h = Header { buffer };
        let fv = h.flags_version();
        let version = fv & 7;
        if fv & R != 0 || version > 1 || (version == 1 && fv & K == 0) {
            return Err(Error::Malformed);
        }
        if h.buffer.as_ref().len() < h.header_len() {
            return Err(Error::Truncated);
        }
        Ok(h)
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn flags_version(&self) -> u16 {
        be16(self.b(), 0)
    }
    pub fn version(&self) -> u8 {
        (self.flags_version() & 7) as u8
    }
    /// The EtherType of the payload.
    pub fn protocol(&self) -> u16 {
        be16(self.b(), 2)
    }
    fn has(&self, bit: u16) -> bool {
        self.flags_version() & bit != 0
    }
    /// Header length including the optional fields.
    pub fn header_len(&self) -> usize {
        let mut n = BASE_LEN;
        if self.has(C) {
            n += 4;
        }
        if self.has(K) {
            n += 4;
        }
        if self.has(S) {
            n += 4;
        }
        if self.version() == 1 && self.has(A) {
            n += 4;
        }
        n
    }
    pub fn checksum(&self) -> Option<u16> {
        self.has(C).then(|| be16(self.b(), 4))
    }
    /// The key (version 0), or payload length << 16 | call id (version 1).
    pub fn key(&self) -> Option<u32> {
        let at = BASE_LEN + if self.has(C) { 4 } else { 0 };
        self.has(K).then(|| be32(self.b(), at))
    }
    pub fn sequence(&self) -> Option<u32> {
        let at = BASE_LEN + if self.has(C) { 4 } else { 0 } + if self.has(K) { 4 } else { 0 };
        self.has(S).then(|| be32(self.b(), at))
    }
    /// Acknowledgment number (version 1 only).
    pub fn acknowledgment(&self) -> Option<u32> {
        (self.version() == 1 && self.has(A)).then(|| be32(self.b(), self.header_len() - 4))
    }
    pub fn payload(&self) -> &[u8] {
        self.b().get(self.header_len()..).unwrap_or(&[])
    }
}

/// Length of the ERSPAN header that precedes the mirrored Ethernet frame, for GRE protocol `proto`
/// (type II: 8 bytes; type III: 12, plus an 8-byte platform sub-header when its O bit is set). `None` for other
/// protocols. Truncated when the header is cut.
pub fn erspan_header_len(proto: u16, payload: &[u8]) -> Option<Result<usize>> {
    match proto {
        ethertype::ERSPAN2 => Some(if payload.len() >= 8 {
            Ok(8)
        } else {
            Err(Error::Truncated)
        }),
        ethertype::ERSPAN3 => {
            if payload.len() < 12 {
                return Some(Err(Error::Truncated));
            }
            let n = if byte(payload, 11) & 1 != 0 { 20 } else { 12 };
            Some(if payload.len() >= n {
                Ok(n)
            } else {
                Err(Error::Truncated)
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn real_enhanced_gre_with_key_seq_ack() {
        // reassembly/GrePackets.cap frame 13: PPTP GRE v1, K S A, PPP payload, length 18, call 1, seq 1, ack -1.
        let b = hex("3081 880b 0012 0001 0000 0001 ffff ffff ff03 c021");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.version(), 1);
        assert_eq!(h.protocol(), ethertype::PPP);
        assert_eq!(h.header_len(), 16);
        assert_eq!(h.key(), Some(0x0012_0001));
        assert_eq!(h.sequence(), Some(1));
        assert_eq!(h.acknowledgment(), Some(0xffff_ffff));
        assert_eq!(h.checksum(), None);
        assert_eq!(h.payload(), &[0xff, 0x03, 0xc0, 0x21]);
        assert_eq!(Header::new_checked(&b[..15]).err(), Some(Error::Truncated));
    }

    #[test]
    fn real_gre_v0_with_key() {
        // malformed/various_gre.pcap frame 12 (a keepalive-shaped GRE v0): key 40, protocol 0, nothing after.
        let b = hex("2000 0000 0000 0028");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(
            (h.version(), h.header_len(), h.key(), h.sequence()),
            (0, 8, Some(40), None)
        );
        assert!(h.payload().is_empty());
    }

    #[test]
    fn routing_bit_and_bad_versions() {
        assert_eq!(
            Header::new_checked(&hex("4000 0800 0000 0000")[..]).err(),
            Some(Error::Malformed)
        );
        assert_eq!(
            Header::new_checked(&hex("0002 0800 0000 0000")[..]).err(),
            Some(Error::Malformed)
        );
        assert_eq!(
            Header::new_checked(&hex("0001 880b 0000 0000")[..]).err(),
            Some(Error::Malformed)
        );
    }

    #[test]
    fn erspan_lengths() {
        assert_eq!(erspan_header_len(0x88be, &[0; 8]), Some(Ok(8)));
        assert_eq!(
            erspan_header_len(0x88be, &[0; 7]),
            Some(Err(Error::Truncated))
        );
        let mut iii = [0u8; 20];
        assert_eq!(erspan_header_len(0x22eb, &iii), Some(Ok(12)));
        iii[11] = 1;
        assert_eq!(erspan_header_len(0x22eb, &iii), Some(Ok(20)));
        assert_eq!(erspan_header_len(0x0800, &iii), None);
    }
}
