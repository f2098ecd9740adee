//! QUIC versions: the families that share Initial keys, their salts, and the names EVE gives them.

/// QUIC version families, as far as the Initial keys are concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// RFC 9000 v1, drafts 29-34 and mvfst: `quic key` labels, Initial type 0.
    V1,
    /// RFC 9369 v2: `quicv2 key` labels, Initial type 1.
    V2,
    /// Google QUIC Q050 / T050 / T051: IETF-style long header and Initial protection, gQUIC salts.
    GoogleIetf,
    /// Google QUIC Q046: long header, cleartext CHLO.
    GoogleLong,
    /// Google QUIC up to Q043: gQUIC public header, cleartext CHLO.
    GoogleLegacy,
}

pub(super) const SALT_V1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];
pub(super) const SALT_V2: [u8; 20] = [
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb,
    0xf9, 0xbd, 0x2e, 0xd9,
];
pub(super) const SALT_D29: [u8; 20] = [
    0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97, 0x86, 0xf1, 0x9c, 0x61, 0x11, 0xe0,
    0x43, 0x90, 0xa8, 0x99,
];
pub(super) const SALT_D23: [u8; 20] = [
    0xc3, 0xee, 0xf7, 0x12, 0xc7, 0x2e, 0xbb, 0x5a, 0x11, 0xa7, 0xd2, 0x43, 0x2b, 0xb4, 0x63, 0x65,
    0xbe, 0xf9, 0xf5, 0x02,
];
pub(super) const SALT_D22: [u8; 20] = [
    0x7f, 0xbc, 0xdb, 0x0e, 0x7c, 0x66, 0xbb, 0xe9, 0x19, 0x3a, 0x96, 0xcd, 0x21, 0x51, 0x9e, 0xbd,
    0x7a, 0x02, 0x64, 0x4a,
];
pub(super) const SALT_Q50: [u8; 20] = [
    0x50, 0x45, 0x74, 0xef, 0xd0, 0x66, 0xfe, 0x2f, 0x9d, 0x94, 0x5c, 0xfc, 0xdb, 0xd3, 0xa7, 0xf0,
    0xd3, 0xb5, 0x6b, 0x45,
];
pub(super) const SALT_T50: [u8; 20] = [
    0x7f, 0xf5, 0x79, 0xe5, 0xac, 0xd0, 0x72, 0x91, 0x55, 0x80, 0x30, 0x4c, 0x43, 0xa2, 0x36, 0x7c,
    0x60, 0x48, 0x83, 0x10,
];
pub(super) const SALT_T51: [u8; 20] = [
    0x7a, 0x4e, 0xde, 0xf4, 0xe7, 0xcc, 0xee, 0x5f, 0xa4, 0x50, 0x6c, 0x19, 0x12, 0x4f, 0xc8, 0xcc,
    0xda, 0x6e, 0x03, 0x3d,
];

pub(super) const V2: u32 = 0x6b33_43cf;

/// Whether `b` is a gQUIC version tag `Q0dd` / `T0dd`.
pub(super) fn google_tag(v: u32) -> Option<(u8, u32)> {
    let b = v.to_be_bytes();
    if (b[0] == b'Q' || b[0] == b'T')
        && b[1] == b'0'
        && b[2].is_ascii_digit()
        && b[3].is_ascii_digit()
    {
        Some((b[0], u32::from(b[2] - b'0') * 10 + u32::from(b[3] - b'0')))
    } else {
        None
    }
}

/// The family of a long-header version, or `None` for versions we do not know (and version negotiation, 0).
pub fn family(v: u32) -> Option<Family> {
    match v {
        1 => Some(Family::V1),
        V2 => Some(Family::V2),
        // IETF drafts 17..34.
        0xff00_0011..=0xff00_0022 => Some(Family::V1),
        // Facebook mvfst (draft-based).
        0xface_b001
        | 0xface_b002
        | 0xface_b00d
        | 0xface_b00e
        | 0xface_b00f
        | 0xface_b010..=0xface_b013 => Some(Family::V1),
        _ => match google_tag(v) {
            Some((b'Q', 50..)) | Some((b'T', 48..)) => Some(Family::GoogleIetf),
            Some((b'Q', 46..=49)) => Some(Family::GoogleLong),
            Some((b'Q', _)) => Some(Family::GoogleLegacy),
            _ => None,
        },
    }
}

/// The Initial salt for a version (nDPI's table: drafts ≤22, 23-28, 29-34, v1, v2, gQUIC).
pub(super) fn salt(v: u32) -> &'static [u8; 20] {
    match v {
        V2 => &SALT_V2,
        0xff00_0011..=0xff00_0016 => &SALT_D22,
        0xff00_0017..=0xff00_001c => &SALT_D23,
        0xff00_001d..=0xff00_0022 => &SALT_D29,
        // mvfst: its draft-22 version uses draft 22's salt, the draft-27 and experimental ones draft 23's (nDPI).
        0xface_b001 => &SALT_D22,
        0xface_b002 | 0xface_b00e => &SALT_D23,
        0xface_b00d..=0xface_b013 => &SALT_D29,
        0x5130_3530 => &SALT_Q50, // Q050
        0x5430_3530 => &SALT_T50, // T050
        0x5430_3531 => &SALT_T51, // T051
        _ => &SALT_V1,
    }
}

/// How Suricata writes a version in EVE: gQUIC tags as text, others in hex (`1`, `6b3343cf`, `ff00001d`).
pub fn version_string(v: u32) -> String {
    match google_tag(v) {
        Some(_) => String::from_utf8_lossy(&v.to_be_bytes()).into_owned(),
        None => format!("{v:x}"),
    }
}
