//! PPP framing (RFC 1661, RFC 1662): LINKTYPE_PPP (9) and LINKTYPE_PPP_HDLC (50) captures, and PPTP's PPP inside
//! GRE.
//!
//! address:1 (0xFF) and control:1 (0x03), both optional (address-and-control-field compression), then the protocol
//! in one or two bytes: a protocol number is always odd in its low byte and even in its high byte, so a first byte
//! with bit 0 set is a compressed one-byte protocol (protocol-field compression). The header is therefore 1 to 4
//! bytes and is worked out once in `new_checked`.
//!
//! On a PPP link type, a frame that begins with a Cisco HDLC address (0x0F or 0x8F) and a zero control byte is Cisco
//! HDLC: routers' serial links switch framing, and libpcap and tcpdump decode such frames as Cisco HDLC ([`is_chdlc`];
//! nDPI's `BGP_Cisco_hdlc_slarp.pcap` is one).

use super::{Error, Result};

/// PPP protocol numbers the decoder follows.
pub mod proto {
    pub const IPV4: u16 = 0x0021;
    pub const IPV6: u16 = 0x0057;
    pub const MPLS_UNICAST: u16 = 0x0281;
    pub const MPLS_MULTICAST: u16 = 0x0283;
}

/// Whether a frame captured on a PPP link is in fact Cisco HDLC (see the module documentation).
pub fn is_chdlc(frame: &[u8]) -> bool {
    matches!(frame, [0x0f | 0x8f, 0x00, _, _, ..])
}

/// A view of a PPP header.
#[derive(Debug, Clone, Copy)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
    header_len: u8,
    protocol: u16,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Works out the header's length (address and control present or not, protocol in one or two bytes).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        let skip = if b.starts_with(&[0xff, 0x03]) { 2 } else { 0 };
        let (protocol, len) = match b.get(skip..) {
            Some([p, ..]) if p & 1 == 1 => (u16::from(*p), 1),
            Some([hi, lo, ..]) => (u16::from_be_bytes([*hi, *lo]), 2),
            _ => return Err(Error::Truncated),
        };
        Ok(Frame {
            buffer,
            header_len: (skip + len) as u8,
            protocol,
        })
    }

    /// The PPP protocol number of what follows.
    pub fn protocol(&self) -> u16 {
        self.protocol
    }

    /// Bytes of address, control and protocol (1 to 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.header_len)
    }

    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn compressed_address_from_ndpi_capture() {
        // First bytes of nDPI's dlt_ppp.pcap: no address/control, two-byte protocol 0x0021, IPv4.
        let b = hex("0021 4502 04cc");
        let f = Frame::new_checked(&b[..]).unwrap();
        assert_eq!(f.protocol(), proto::IPV4);
        assert_eq!(f.header_len(), 2);
        assert_eq!(f.payload(), &[0x45, 0x02, 0x04, 0xcc]);
        assert!(!is_chdlc(&b));
    }

    #[test]
    fn full_and_one_byte_forms() {
        let head = |s: &str| {
            let f = Frame::new_checked(hex(s)).unwrap();
            (f.protocol(), f.header_len())
        };
        assert_eq!(head("ff03 0057 60"), (proto::IPV6, 4));
        assert_eq!(head("ff03 21 45"), (proto::IPV4, 3));
        assert_eq!(head("21 45"), (proto::IPV4, 1));
        assert_eq!(head("ff03 c021 01"), (0xc021, 4));
    }

    #[test]
    fn short_frames_are_truncated() {
        for b in [&[][..], &[0xff, 0x03], &[0xff, 0x03, 0x00], &[0x00]] {
            assert_eq!(Frame::new_checked(b).err(), Some(Error::Truncated), "{b:?}");
        }
    }

    #[test]
    fn cisco_hdlc_on_a_ppp_link() {
        // First bytes of nDPI's BGP_Cisco_hdlc_slarp.pcap (link type 9): unicast Cisco HDLC, IPv4.
        assert!(is_chdlc(&hex("0f00 0800 45c0")));
        assert!(is_chdlc(&hex("8f00 8035")));
        assert!(!is_chdlc(&hex("0f00 08")));
        assert!(!is_chdlc(&hex("ff03 0021")));
    }
}
