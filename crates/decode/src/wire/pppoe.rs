//! PPPoE session header (RFC 2516) and the PPP protocol field that follows it.
//!
//! Session stage only (EtherType 0x8864): version/type 0x11, code 0, a session id and a payload length, then a
//! 2-byte PPP protocol (0x0021 IPv4, 0x0057 IPv6). The PPPoE length bounds the PPP frame, so Ethernet padding is cut
//! here already. Discovery frames (0x8863) carry no IP and are reported as unsupported by the decoder.

use super::{Error, Result, be16, byte};

/// PPPoE header plus the PPP protocol field.
pub const HEADER_LEN: usize = 8;

/// PPP protocol numbers the decoder follows.
pub mod ppp_proto {
    pub const IPV4: u16 = 0x0021;
    pub const IPV6: u16 = 0x0057;
}

/// A view of a PPPoE session header.
#[derive(Debug, Clone, Copy)]
pub struct Session<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Session<T> {
    /// Checks the length, the version/type byte (0x11) and the session code (0).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if byte(b, 0) != 0x11 || byte(b, 1) != 0 || be16(b, 4) < 2 {
            return Err(Error::Malformed);
        }
        Ok(Session { buffer })
    }

    pub fn version(&self) -> u8 {
        byte(self.buffer.as_ref(), 0) >> 4
    }
    pub fn code(&self) -> u8 {
        byte(self.buffer.as_ref(), 1)
    }
    pub fn session_id(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
    /// Length of the PPP frame (protocol field included).
    pub fn length(&self) -> u16 {
        be16(self.buffer.as_ref(), 4)
    }
    pub fn ppp_protocol(&self) -> u16 {
        be16(self.buffer.as_ref(), 6)
    }
    /// The PPP payload, cut to the PPPoE length (Ethernet padding removed) and to the captured bytes.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = (6 + usize::from(self.length())).min(b.len());
        b.get(HEADER_LEN..end).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn real_session_frame() {
        // malformed/pppoes.pcap, packet 1: session 0x0017, length 14, PPP LCP echo request.
        let b = hex("1100 0017 000e c021 096a 000c a4cb ea34 0ee2 f609");
        let s = Session::new_checked(&b[..]).unwrap();
        assert_eq!(s.version(), 1);
        assert_eq!(s.code(), 0);
        assert_eq!(s.session_id(), 0x17);
        assert_eq!(s.length(), 14);
        assert_eq!(s.ppp_protocol(), 0xc021);
        assert_eq!(s.payload().len(), 12);
    }

    #[test]
    fn bad_version_is_malformed() {
        let b = hex("2100 0001 0010 0021");
        assert_eq!(Session::new_checked(&b[..]).err(), Some(Error::Malformed));
    }

    #[test]
    fn length_cuts_padding() {
        let b = hex("1100 0001 0004 0021 aabb ccdd");
        assert_eq!(
            Session::new_checked(&b[..]).unwrap().payload(),
            &[0xaa, 0xbb]
        );
    }
}
