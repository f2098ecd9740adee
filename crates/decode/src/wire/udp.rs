//! UDP header (RFC 768). 8 bytes: ports, length, checksum.
//!
//! A length field below 8 is malformed. The payload is cut to the length field and to the captured bytes; with
//! segmentation offload (GSO) the field can be 0 on capture, which is read as "use the captured length".

use std::net::IpAddr;

use super::{Error, Result, be16, checksum, ip_proto, put16};

pub const HEADER_LEN: usize = 8;

/// A view of a UDP datagram.
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let len = be16(b, 4);
        if len != 0 && usize::from(len) < HEADER_LEN {
            return Err(Error::Malformed);
        }
        Ok(Packet { buffer })
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn src_port(&self) -> u16 {
        be16(self.b(), 0)
    }
    pub fn dst_port(&self) -> u16 {
        be16(self.b(), 2)
    }
    pub fn len(&self) -> u16 {
        be16(self.b(), 4)
    }
    /// Never true for a checked view (the header is there); present for clippy's `len` convention.
    pub fn is_empty(&self) -> bool {
        false
    }
    pub fn checksum(&self) -> u16 {
        be16(self.b(), 6)
    }
    /// The payload cut to the length field (when non-zero) and to the captured bytes.
    pub fn payload(&self) -> &[u8] {
        let end = match self.len() {
            0 => self.b().len(),
            n => usize::from(n).min(self.b().len()),
        };
        self.b().get(HEADER_LEN..end).unwrap_or(&[])
    }
    /// Checks the checksum over the pseudo-header and the datagram (length field bytes). A zero checksum over IPv4
    /// means "not computed" and passes.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        if self.checksum() == 0 && src.is_ipv4() {
            return true;
        }
        let end = usize::from(self.len()).min(self.b().len());
        let d = self.b().get(..end).unwrap_or(&[]);
        let s = checksum::pseudo_header(src, dst, ip_proto::UDP, u32::from(self.len()))
            + checksum::sum(d);
        checksum::fold(s) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_src_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), 0, v);
    }
    pub fn set_dst_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), 2, v);
    }
    pub fn set_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), 4, v);
    }
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), 6, v);
    }
    /// Recomputes the checksum over the pseudo-header and the first `len` bytes (0 becomes 0xffff).
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        self.set_checksum(0);
        let len = self.len();
        let b = self.buffer.as_ref();
        let d = b.get(..usize::from(len).min(b.len())).unwrap_or(&[]);
        let s = checksum::pseudo_header(src, dst, ip_proto::UDP, u32::from(len)) + checksum::sum(d);
        let c = match checksum::finish(s) {
            0 => 0xffff,
            c => c,
        };
        self.set_checksum(c);
    }
}

/// The meaning of a UDP datagram, borrowing its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    pub payload: &'a [u8],
}

impl<'a> Repr<'a> {
    pub fn parse(p: &Packet<&'a [u8]>) -> Result<Repr<'a>> {
        let end = match p.len() {
            0 => p.buffer.len(),
            n => usize::from(n).min(p.buffer.len()),
        };
        Ok(Repr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload: p.buffer.get(HEADER_LEN..end).unwrap_or(&[]),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }

    /// Writes header and payload and fills the checksum.
    pub fn emit(&self, buf: &mut [u8], src: IpAddr, dst: IpAddr) -> Result<()> {
        let total = self.buffer_len();
        if total > usize::from(u16::MAX) {
            return Err(Error::Malformed);
        }
        let buf = buf.get_mut(..total).ok_or(Error::Truncated)?;
        buf[HEADER_LEN..].copy_from_slice(self.payload);
        let mut p = Packet { buffer: buf };
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len(total as u16);
        p.fill_checksum(src, dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;
    use std::net::Ipv4Addr;

    // reassembly/sll.pcap packet 1: 10.0.0.138:520 → 10.0.0.255:520 (RIP), length 72.
    fn rip() -> Vec<u8> {
        let mut v = hex("0208 0208 0048 6fdf");
        v.extend(std::iter::repeat_n(0u8, 64));
        v
    }

    #[test]
    fn real_header() {
        let b = rip();
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.src_port(), p.dst_port(), p.len(), p.checksum()),
            (520, 520, 72, 0x6fdf)
        );
        assert_eq!(p.payload().len(), 64);
    }

    #[test]
    fn length_checks() {
        assert_eq!(
            Packet::new_checked(&hex("0208 0208 0007 0000")[..]).err(),
            Some(Error::Malformed)
        );
        assert_eq!(
            Packet::new_checked(&hex("0208 0208 00")[..]).err(),
            Some(Error::Truncated)
        );
        // Length beyond the captured bytes: payload is what is there.
        let b = hex("0035 0035 0100 0000 aabb");
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap().payload(),
            &[0xaa, 0xbb]
        );
    }

    #[test]
    fn emit_round_trip_and_checksum() {
        let (s, d) = (
            Ipv4Addr::new(10, 0, 0, 138).into(),
            Ipv4Addr::new(10, 0, 0, 255).into(),
        );
        let r = Repr {
            src_port: 53,
            dst_port: 4444,
            payload: b"hello",
        };
        let mut out = vec![0u8; r.buffer_len()];
        r.emit(&mut out, s, d).unwrap();
        let p = Packet::new_checked(&out[..]).unwrap();
        assert!(p.verify_checksum(s, d));
        assert_eq!(Repr::parse(&p).unwrap(), r);
    }
}
