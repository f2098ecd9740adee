//! GTP-U version 1 (3GPP TS 29.281) on UDP port 2152: the user-plane tunnel of mobile networks.
//!
//! 8 mandatory bytes (flags, message type, length, TEID); if any of the E, S or PN flags is set, 4 more (sequence,
//! N-PDU number, next extension header type); then a chain of extension headers, each `length × 4` bytes with its
//! next type in its last byte. Only G-PDU messages (type 255) carry a user packet; the extension chain is walked
//! at most [`MAX_EXTENSIONS`] steps.

use super::{Error, Result, be16, be32, byte};

pub const MIN_HEADER_LEN: usize = 8;
pub const PORT: u16 = 2152;
/// Message type of a G-PDU (a tunnelled user packet).
pub const G_PDU: u8 = 255;
/// Longest extension header chain walked.
pub const MAX_EXTENSIONS: usize = 8;

/// A view of a GTP-U header.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
    header_len: usize,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks version 1 with PT = 1 (GTP, not GTP'), walks the optional fields and extension headers.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < MIN_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let flags = byte(b, 0);
        if flags >> 5 != 1 || flags & 0x10 == 0 {
            return Err(Error::Malformed);
        }
        let mut len = MIN_HEADER_LEN;
        if flags & 0x07 != 0 {
            len += 4;
            if b.len() < len {
                return Err(Error::Truncated);
            }
            if flags & 0x04 != 0 {
                let mut next = byte(b, 11);
                let mut steps = 0;
                while next != 0 {
                    steps += 1;
                    if steps > MAX_EXTENSIONS {
                        return Err(Error::Malformed);
                    }
                    let units = usize::from(*b.get(len).ok_or(Error::Truncated)?);
                    if units == 0 {
                        return Err(Error::Malformed);
                    }
                    let end = len + units * 4;
                    if b.len() < end {
                        return Err(Error::Truncated);
                    }
                    next = byte(b, end - 1);
                    len = end;
                }
            }
        }
        if usize::from(be16(b, 2)) + MIN_HEADER_LEN < len {
            return Err(Error::Malformed);
        }
        Ok(Header {
            buffer,
            header_len: len,
        })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn flags(&self) -> u8 {
        byte(self.b(), 0)
    }
    pub fn message_type(&self) -> u8 {
        byte(self.b(), 1)
    }
    /// Bytes after the mandatory 8-byte header.
    pub fn length(&self) -> u16 {
        be16(self.b(), 2)
    }
    pub fn teid(&self) -> u32 {
        be32(self.b(), 4)
    }
    pub fn sequence(&self) -> Option<u16> {
        (self.flags() & 0x02 != 0).then(|| be16(self.b(), 8))
    }
    /// Header length with the optional fields and extension headers.
    pub fn header_len(&self) -> usize {
        self.header_len
    }
    /// The tunnelled packet, cut to the length field and to the captured bytes.
    pub fn payload(&self) -> &[u8] {
        let end = (MIN_HEADER_LEN + usize::from(self.length())).min(self.b().len());
        self.b().get(self.header_len..end).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn real_g_pdu() {
        // ndpi/pcap/ipv6_in_gtp.pcap packet 1: G-PDU, length 92, TEID 0x12808fb8, IPv6 inside.
        let mut b = hex("30ff 005c 1280 8fb8 6008 b852");
        b.resize(8 + 92, 0);
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(
            (h.message_type(), h.length(), h.teid(), h.header_len()),
            (G_PDU, 92, 0x1280_8fb8, 8)
        );
        assert_eq!(h.payload().len(), 92);
        assert_eq!(h.payload()[0] >> 4, 6);
    }

    #[test]
    fn extension_headers() {
        // E and S set, one PDU session container extension (type 0x85, 1 unit), then IPv4.
        let b = hex("36ff 0010 0000 0001 0001 0085 0100 0000 4500");
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.header_len(), 16);
        assert_eq!(h.sequence(), Some(1));
        assert_eq!(h.payload(), &[0x45, 0x00]);
        // Zero-length extension and a chain cut short.
        assert_eq!(
            Header::new_checked(&hex("34ff 0010 0000 0001 0000 0085 0000 0000")[..]).err(),
            Some(Error::Malformed)
        );
        assert_eq!(
            Header::new_checked(&hex("34ff 0010 0000 0001 0000 0085 0200 0000")[..]).err(),
            Some(Error::Truncated)
        );
        // GTP' (PT = 0) and version 2 are not GTP-U.
        assert_eq!(
            Header::new_checked(&hex("20ff 0000 0000 0000")[..]).err(),
            Some(Error::Malformed)
        );
        assert_eq!(
            Header::new_checked(&hex("50ff 0000 0000 0000")[..]).err(),
            Some(Error::Malformed)
        );
    }
}
