//! 802.1Q / 802.1ad VLAN tag: the 4 bytes *after* the tag's own TPID (which the preceding EtherType field was).
//!
//! A tag is TCI (priority, drop-eligible bit, 12-bit VLAN id) plus the EtherType of what follows, so tags stack to
//! any depth (QinQ and beyond) by looking at that EtherType again. The decoder bounds the depth with
//! `DecodeOptions::max_depth`.

use super::{Error, Result, be16, ethertype};

/// Length of one tag after its TPID.
pub const HEADER_LEN: usize = 4;

/// True for the EtherTypes that introduce a VLAN tag (802.1Q, 802.1ad and the pre-standard 0x9100/0x9200).
pub fn is_tpid(t: u16) -> bool {
    matches!(
        t,
        ethertype::VLAN | ethertype::QINQ | ethertype::QINQ_OLD | ethertype::QINQ_OLD2
    )
}

/// A view of one VLAN tag.
#[derive(Debug, Clone, Copy)]
pub struct Tag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Tag<T> {
    pub fn new_checked(buffer: T) -> Result<Self> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Tag { buffer })
    }

    /// Tag control information (PCP:3, DEI:1, VID:12).
    pub fn tci(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }
    /// EtherType of what follows the tag.
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Tag<T> {
    pub fn set_tci(&mut self, tci: u16) {
        super::put16(self.buffer.as_mut(), 0, tci);
    }
    pub fn set_ethertype(&mut self, t: u16) {
        super::put16(self.buffer.as_mut(), 2, t);
    }
}

/// The meaning of a VLAN tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Repr {
    pub pcp: u8,
    pub dei: bool,
    pub vid: u16,
    pub ethertype: u16,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(tag: &Tag<T>) -> Result<Repr> {
        Ok(Repr {
            pcp: tag.pcp(),
            dei: tag.dei(),
            vid: tag.vid(),
            ethertype: tag.ethertype(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the tag; a `vid` over 4095 or a `pcp` over 7 is [`Error::Malformed`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        if self.vid > 0x0fff || self.pcp > 7 {
            return Err(Error::Malformed);
        }
        let mut t = Tag::new_checked(buf)?;
        t.set_tci((u16::from(self.pcp) << 13) | (u16::from(self.dei) << 12) | self.vid);
        t.set_ethertype(self.ethertype);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    #[test]
    fn real_tag_from_vlan_capture() {
        // reassembly/frag_with_padding.pcap: 8100 | 0013 0800 → VLAN 19, priority 0, then IPv4.
        let b = hex("0013 0800 4500");
        let t = Tag::new_checked(&b[..]).unwrap();
        assert_eq!(t.vid(), 19);
        assert_eq!(t.pcp(), 0);
        assert!(!t.dei());
        assert_eq!(t.ethertype(), 0x0800);
        assert!(is_tpid(0x8100) && is_tpid(0x88a8) && !is_tpid(0x0800));
    }

    #[test]
    fn round_trip() {
        let r = Repr {
            pcp: 5,
            dei: true,
            vid: 4094,
            ethertype: 0x86dd,
        };
        let mut b = [0u8; 4];
        r.emit(&mut b).unwrap();
        assert_eq!(Repr::parse(&Tag::new_checked(&b[..]).unwrap()).unwrap(), r);
        assert_eq!(Repr { vid: 4096, ..r }.emit(&mut b), Err(Error::Malformed));
    }
}
