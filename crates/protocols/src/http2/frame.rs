//! The HTTP/2 frame layer (RFC 9113 section 4 and 6): the 9-byte frame header, frame types and flags, and the
//! fixed fields of each frame's payload, read as borrowed views.

/// Bytes of a frame header: length (24 bits), type, flags, reserved bit and stream identifier (31 bits).
pub const HEADER_LEN: usize = 9;

/// Frame types (RFC 9113 section 6), by the names Suricata's `http2.frametype` accepts.
pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const PRIORITY: u8 = 2;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PUSH_PROMISE: u8 = 5;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;

/// Flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

pub use flowbundle_types::http2::{
    ERROR_CODES, FRAME_TYPES, SETTINGS_HEADER_TABLE_SIZE, SETTINGS_NAMES, error_code_from_name,
    frame_type_from_name, setting_from_name,
};

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Payload length.
    pub len: usize,
    pub ty: u8,
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared).
    pub stream: u32,
}

impl FrameHeader {
    /// Reads a frame header from the first [`HEADER_LEN`] bytes, if there are that many.
    pub fn parse(b: &[u8]) -> Option<FrameHeader> {
        let h = b.get(..HEADER_LEN)?;
        Some(FrameHeader {
            len: usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]),
            ty: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        })
    }

    /// The header's wire form.
    pub fn emit(&self) -> [u8; HEADER_LEN] {
        let l = self.len as u32;
        let s = self.stream.to_be_bytes();
        [
            (l >> 16) as u8,
            (l >> 8) as u8,
            l as u8,
            self.ty,
            self.flags,
            s[0],
            s[1],
            s[2],
            s[3],
        ]
    }
}

/// The payload of a frame with the `PADDED` flag without its pad length byte and padding; `None` when the padding
/// is longer than the payload (a protocol error).
pub fn unpad(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    if flags & PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|end| &rest[..end])
}

/// A priority block (HEADERS with the PRIORITY flag, or a PRIORITY frame): exclusive flag, stream dependency and
/// weight (0-255, meaning 1-256).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    pub exclusive: bool,
    pub dependency: u32,
    pub weight: u8,
}

impl Priority {
    pub fn parse(b: &[u8]) -> Option<Priority> {
        let b = b.get(..5)?;
        let d = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Some(Priority {
            exclusive: d & 0x8000_0000 != 0,
            dependency: d & 0x7fff_ffff,
            weight: b[4],
        })
    }
}

/// A 32-bit big-endian field at `at`.
pub fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// The (identifier, value) pairs of a SETTINGS payload; a trailing partial entry is ignored.
pub fn settings(payload: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    payload.chunks_exact(6).map(|c| {
        (
            u16::from_be_bytes([c[0], c[1]]),
            u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_reserved_bit() {
        let h = FrameHeader {
            len: 0x01_02_03,
            ty: HEADERS,
            flags: END_HEADERS | END_STREAM,
            stream: 7,
        };
        let mut wire = h.emit();
        assert_eq!(FrameHeader::parse(&wire), Some(h));
        wire[5] |= 0x80;
        assert_eq!(FrameHeader::parse(&wire).unwrap().stream, 7);
        assert_eq!(FrameHeader::parse(&wire[..8]), None);
    }

    #[test]
    fn padding_priority_settings() {
        assert_eq!(unpad(PADDED, &[2, b'a', b'b', 0, 0]), Some(&b"ab"[..]));
        assert_eq!(unpad(PADDED, &[5, b'a']), None);
        assert_eq!(unpad(PADDED, &[]), None);
        assert_eq!(unpad(0, b"xy"), Some(&b"xy"[..]));
        assert_eq!(
            Priority::parse(&[0x80, 0, 0, 3, 15]),
            Some(Priority {
                exclusive: true,
                dependency: 3,
                weight: 15
            })
        );
        let s: Vec<_> = settings(&[0, 1, 0, 0, 0x10, 0, 0, 4, 0, 1, 0, 0, 9]).collect();
        assert_eq!(s, [(1, 4096), (4, 65536)]);
        assert_eq!(frame_type_from_name("goaway"), Some(GOAWAY));
        assert_eq!(frame_type_from_name("12"), Some(12));
        assert_eq!(error_code_from_name("INADEQUATE_SECURITY"), Some(12));
        assert_eq!(setting_from_name("SETTINGS_MAX_FRAME_SIZE"), Some(5));
        assert_eq!(setting_from_name("nope"), None);
    }
}
