//! CAPWAP data channel (RFC 5415, RFC 5416): wireless access points tunnel their clients' frames to the controller
//! over UDP port 5247, so a campus capture's wireless traffic hides inside one UDP flow per access point.
//!
//! Header (RFC 5415 §4.3): preamble (version 4 bits, must be 0; type 4 bits: 0 = CAPWAP header, 1 = DTLS, which we
//! cannot read), then a 32-bit word with HLEN (5 bits, header length in 4-byte words, at least 2), RID, WBID (the
//! wireless binding: 1 = IEEE 802.11), T (the payload is in the binding's native format) and F (a fragment), and
//! the optional radio MAC and wireless-specific fields that HLEN already counts. The payload is then an 802.3
//! frame (T = 0) or, with T = 1 and the 802.11 binding, an IEEE 802.11 frame, whose data frames carry an LLC/SNAP
//! header with an EtherType (RFC 1042). [`Header::inner`] says which; anything else (management and control frames,
//! fragments, DTLS) is left as the outer UDP datagram it is, as nDPI's reader does.

use super::{Error, Result, be16, be32};

/// UDP port of the CAPWAP data channel.
pub const DATA_PORT: u16 = 5247;

/// Wireless binding id of IEEE 802.11.
const WBID_IEEE80211: u32 = 1;

/// What a CAPWAP data packet carries, as far as the decoder follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inner {
    /// An 802.3 (Ethernet) frame at this offset from the start of the CAPWAP header.
    Ethernet(usize),
    /// An 802.11 data frame whose LLC/SNAP header names this EtherType; the packet it carries starts at the offset.
    EtherType(u16, usize),
    /// Nothing to follow (802.11 management/control or null data, a fragment, an unknown binding or encapsulation).
    None,
}

/// A view of a CAPWAP header.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks the preamble (version 0, a plain CAPWAP header) and that the header length fits.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < 8 {
            return Err(Error::Truncated);
        }
        let len = b.len();
        let first = b.first().copied();
        let h = Header { buffer };
        if first != Some(0) || h.header_len() < 8 {
            return Err(Error::Malformed);
        }
        if len < h.header_len() {
            return Err(Error::Truncated);
        }
        Ok(h)
    }

    fn word(&self) -> u32 {
        be32(self.buffer.as_ref(), 0)
    }

    /// Header length in bytes (HLEN × 4).
    pub fn header_len(&self) -> usize {
        ((self.word() >> 19) & 0x1f) as usize * 4
    }

    /// Wireless binding id (1: IEEE 802.11).
    pub fn wbid(&self) -> u32 {
        (self.word() >> 9) & 0x1f
    }

    /// T: the payload is in the wireless binding's native frame format (else an 802.3 frame).
    pub fn native(&self) -> bool {
        self.word() & (1 << 8) != 0
    }

    /// F: this packet is a fragment.
    pub fn fragment(&self) -> bool {
        self.word() & (1 << 7) != 0
    }

    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }

    /// What the payload carries (see [`Inner`]).
    pub fn inner(&self) -> Inner {
        if self.fragment() {
            return Inner::None;
        }
        let hl = self.header_len();
        if !self.native() {
            return Inner::Ethernet(hl);
        }
        if self.wbid() != WBID_IEEE80211 {
            return Inner::None;
        }
        match ieee80211_data(self.payload()) {
            Some((et, at)) => Inner::EtherType(et, hl + at),
            None => Inner::None,
        }
    }
}

/// An IEEE 802.11 data frame's LLC/SNAP EtherType and the offset of what follows it, or `None` for every other
/// frame. MAC header (IEEE 802.11-2020 §9.3.2.1): frame control (2), duration (2), three addresses (18), sequence
/// control (2); a fourth address when both To DS and From DS are set; QoS control (2) for QoS subtypes, and an HT
/// control field (4) when a QoS frame has the +HTC/Order bit. Then RFC 1042's LLC/SNAP: AA AA 03 00 00 00 and the
/// EtherType.
///
/// Cisco access points send the frame control field byte-swapped (tshark's "Swap Frame Control" preference, on by
/// default; nDPI's reader only looks for the swapped form): when the first byte is not a version-0 data frame's
/// and the second one is, the two are read the other way round. Where both read as data the two readings agree
/// on the type, so the order chosen does not matter.
fn ieee80211_data(f: &[u8]) -> Option<(u16, usize)> {
    let (&a, &b) = (f.first()?, f.get(1)?);
    let is_data = |fc: u8| fc & 0x0f == 0x08;
    let (fc0, fc1) = if is_data(a) {
        (a, b)
    } else if is_data(b) {
        (b, a)
    } else {
        return None;
    };
    let subtype = fc0 >> 4;
    // Type 2 = data (checked above with version 0); subtypes with bit 2 set carry no frame body (null data,
    // CF-ack/poll only).
    if subtype & 0x4 != 0 {
        return None;
    }
    let mut len = 24;
    if fc1 & 0x03 == 0x03 {
        len += 6;
    }
    let qos = subtype & 0x8 != 0;
    if qos {
        len += 2;
        if fc1 & 0x80 != 0 {
            len += 4;
        }
    }
    // Protected frames are encrypted: no readable LLC header.
    if fc1 & 0x40 != 0 {
        return None;
    }
    let snap = f.get(len..len + 8)?;
    if snap.get(..6)? != [0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00] {
        return None;
    }
    Some((be16(snap, 6), len + 8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    /// nDPI's capwap.pcap frame 280, from the UDP payload on: CAPWAP header (HLEN 4, WBID 1, T), an 802.11 data
    /// frame to the DS with its frame control byte-swapped (a Cisco access point), LLC/SNAP, IPv4 (a DHCP discover).
    const DHCP_IN_CAPWAP: &str = "0020 4320 0000 0000 0104 ed4d 0000 0000 \
        0108 2c00 580a 2069 0e20 1caba7f2139d ffffffffffff 0000 aaaa 0300 0000 0800 4500 0148";

    #[test]
    fn real_data_frame_to_ipv4() {
        let b = hex(DHCP_IN_CAPWAP);
        let h = Header::new_checked(&b[..]).unwrap();
        assert_eq!(h.header_len(), 16);
        assert_eq!(h.wbid(), 1);
        assert!(h.native() && !h.fragment());
        let Inner::EtherType(et, at) = h.inner() else {
            panic!("{:?}", h.inner())
        };
        assert_eq!(et, 0x0800);
        assert_eq!(&b[at..at + 2], &[0x45, 0x00]);
        // The same frame with its frame control in standard order.
        let mut std_order = b.clone();
        std_order.swap(16, 17);
        let h = Header::new_checked(&std_order[..]).unwrap();
        assert_eq!(h.inner(), Inner::EtherType(0x0800, at));
        // A QoS data frame (subtype 8) has two more bytes before the LLC header.
        let mut qos = std_order[..16 + 24].to_vec();
        qos[16] = 0x88;
        qos.extend_from_slice(&[0, 0]);
        qos.extend_from_slice(&b[16 + 24..]);
        let h = Header::new_checked(&qos[..]).unwrap();
        assert_eq!(h.inner(), Inner::EtherType(0x0800, at + 2));
    }

    #[test]
    fn management_frames_fragments_and_dtls_are_not_followed() {
        let mut b = hex(DHCP_IN_CAPWAP);
        // A beacon (type 0, subtype 8), in either byte order.
        b[17] = 0x80;
        assert_eq!(Header::new_checked(&b[..]).unwrap().inner(), Inner::None);
        b.swap(16, 17);
        assert_eq!(Header::new_checked(&b[..]).unwrap().inner(), Inner::None);
        let mut b = hex(DHCP_IN_CAPWAP);
        b[3] |= 0x80; // F
        assert_eq!(Header::new_checked(&b[..]).unwrap().inner(), Inner::None);
        let mut b = hex(DHCP_IN_CAPWAP);
        b[0] = 0x01; // DTLS preamble
        assert_eq!(Header::new_checked(&b[..]).err(), Some(Error::Malformed));
        let mut b = hex(DHCP_IN_CAPWAP);
        b[2] &= !0x01; // T = 0: an 802.3 frame follows the header
        assert_eq!(
            Header::new_checked(&b[..]).unwrap().inner(),
            Inner::Ethernet(16)
        );
    }

    #[test]
    fn short_or_inconsistent_headers() {
        assert_eq!(
            Header::new_checked(&[0u8; 7][..]).err(),
            Some(Error::Truncated)
        );
        // HLEN 4 (16 bytes) but only 8 bytes.
        assert_eq!(
            Header::new_checked(&hex("0020 4320 0000 0000")[..]).err(),
            Some(Error::Truncated)
        );
        // HLEN 1: below the 8-byte minimum.
        assert_eq!(
            Header::new_checked(&hex("0008 4320 0000 0000")[..]).err(),
            Some(Error::Malformed)
        );
        // A data frame cut inside its LLC header is not followed.
        let b = hex(DHCP_IN_CAPWAP);
        assert_eq!(Header::new_checked(&b[..46]).unwrap().inner(), Inner::None);
    }
}
