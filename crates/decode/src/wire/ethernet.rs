//! Ethernet II (DIX) frame header: destination, source, EtherType. 14 bytes.
//!
//! 802.3 length fields (values below 0x0600) are reported as they are; the decoder treats them as an
//! unsupported EtherType (LLC/SNAP carries almost no IP in practice).

use super::{Error, Result, be16};

/// Header length.
pub const HEADER_LEN: usize = 14;

/// A 6-byte MAC address.
pub type MacAddr = [u8; 6];

/// A read (or, over `&mut [u8]`, write) view of an Ethernet frame.
#[derive(Debug, Clone, Copy)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps `buffer` after checking it holds the 14-byte header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Frame { buffer })
    }

    pub fn dst(&self) -> MacAddr {
        mac(self.buffer.as_ref(), 0)
    }

    pub fn src(&self) -> MacAddr {
        mac(self.buffer.as_ref(), 6)
    }

    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), 12)
    }

    /// Everything after the header (the captured bytes: Ethernet padding included).
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    pub fn set_dst(&mut self, a: MacAddr) {
        self.buffer.as_mut()[0..6].copy_from_slice(&a);
    }
    pub fn set_src(&mut self, a: MacAddr) {
        self.buffer.as_mut()[6..12].copy_from_slice(&a);
    }
    pub fn set_ethertype(&mut self, t: u16) {
        super::put16(self.buffer.as_mut(), 12, t);
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(HEADER_LEN..)
            .unwrap_or(&mut [])
    }
}

fn mac(b: &[u8], at: usize) -> MacAddr {
    let mut m = [0u8; 6];
    if let Some(s) = b.get(at..at + 6) {
        m.copy_from_slice(s);
    }
    m
}

/// The meaning of an Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub src: MacAddr,
    pub dst: MacAddr,
    pub ethertype: u16,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Repr> {
        Ok(Repr {
            src: frame.src(),
            dst: frame.dst(),
            ethertype: frame.ethertype(),
        })
    }

    /// Bytes `emit` writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first 14 bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let mut f = Frame::new_checked(buf)?;
        f.set_dst(self.dst);
        f.set_src(self.src);
        f.set_ethertype(self.ethertype);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    // First frame of reassembly/frag_http_req.pcap (Ethernet → IPv4).
    const FRAME: &str = "00907f3e02d0 d4bed94b2479 0800 4500";

    #[test]
    fn real_frame() {
        let b = hex(FRAME);
        let f = Frame::new_checked(&b[..]).unwrap();
        assert_eq!(f.dst(), [0x00, 0x90, 0x7f, 0x3e, 0x02, 0xd0]);
        assert_eq!(f.src(), [0xd4, 0xbe, 0xd9, 0x4b, 0x24, 0x79]);
        assert_eq!(f.ethertype(), 0x0800);
        assert_eq!(f.payload(), &[0x45, 0x00]);
    }

    #[test]
    fn short_is_truncated() {
        assert_eq!(
            Frame::new_checked(&[0u8; 13][..]).err(),
            Some(Error::Truncated)
        );
    }

    #[test]
    fn emit_parse_round_trip() {
        let b = hex(FRAME);
        let r = Repr::parse(&Frame::new_checked(&b[..]).unwrap()).unwrap();
        let mut out = [0u8; 14];
        r.emit(&mut out).unwrap();
        assert_eq!(&out[..], &b[..14]);
    }
}
