//! QUIC packet headers: variable-length integers and the long header (RFC 9000 §17.2), Google QUIC's public
//! header included.

use super::*;

/// Reads a QUIC variable-length integer (RFC 9000 §16).
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = (v << 8) | u64::from(x);
    }
    Some((v, len))
}

/// A parsed long header, up to the (protected) packet number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongHeader<'a> {
    pub first: u8,
    pub version: u32,
    pub dcid: &'a [u8],
    pub scid: &'a [u8],
    /// Packet type bits (0..3) as on the wire.
    pub ptype: u8,
    /// Offset of the packet number in the packet.
    pub pn_offset: usize,
    /// Bytes from `pn_offset` to the end of this packet (the Length field), when the type has one.
    pub length: usize,
}

impl LongHeader<'_> {
    /// Whether this is an Initial packet for its version.
    pub fn is_initial(&self) -> bool {
        match family(self.version) {
            Some(Family::V2) => self.ptype == 1,
            Some(Family::V1 | Family::GoogleIetf) => self.ptype == 0,
            _ => false,
        }
    }
}

/// Parses an IETF-style long header. For Initial packets the token and Length are read; for other types
/// `length` is the Length field too (0-RTT, Handshake), so coalesced packets can be walked.
pub fn parse_long_header(p: &[u8]) -> Option<LongHeader<'_>> {
    let first = *p.first()?;
    if first & 0x80 == 0 {
        return None;
    }
    let version = u32::from_be_bytes(p.get(1..5)?.try_into().ok()?);
    let dl = usize::from(*p.get(5)?);
    if dl > 20 {
        return None;
    }
    let dcid = p.get(6..6 + dl)?;
    let sl = usize::from(*p.get(6 + dl)?);
    if sl > 20 {
        return None;
    }
    let scid = p.get(7 + dl..7 + dl + sl)?;
    let mut off = 7 + dl + sl;
    let ptype = (first >> 4) & 3;
    let initial = match family(version) {
        Some(Family::V2) => ptype == 1,
        Some(_) => ptype == 0,
        None => return None,
    };
    let retry = match family(version) {
        Some(Family::V2) => ptype == 0,
        _ => ptype == 3,
    };
    if retry {
        return Some(LongHeader {
            first,
            version,
            dcid,
            scid,
            ptype,
            pn_offset: p.len(),
            length: 0,
        });
    }
    if initial {
        let (tlen, n) = varint(p.get(off..)?)?;
        off = off
            .checked_add(n)?
            .checked_add(usize::try_from(tlen).ok()?)?;
    }
    let (len, n) = varint(p.get(off..)?)?;
    off += n;
    let length = usize::try_from(len).ok()?;
    if off.checked_add(length)? > p.len() {
        return None;
    }
    Some(LongHeader {
        first,
        version,
        dcid,
        scid,
        ptype,
        pn_offset: off,
        length,
    })
}
