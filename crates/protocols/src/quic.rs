//! QUIC: detection of long-header Initial packets (IETF v1 and v2, drafts, Facebook mvfst, Google QUIC), and
//! decryption of the client's Initial packets to read the ClientHello (SNI, ALPN, JA3/JA4) into an EVE `quic`
//! event.
//!
//! ## Detection
//! A client opens with a long-header packet (`1x` top bits) whose version we know and whose packet type is
//! Initial (type bits 0 in v1 and drafts, 1 in v2), with connection-id lengths that fit. Google QUIC before Q046
//! uses its own public header (flags with the version bit, an 8-byte connection id, `Q0xx`). One datagram
//! decides; nothing is decrypted while probing.
//!
//! ## Decryption (RFC 9001 §5, and RFC 9369 for v2)
//! The Initial keys are public: `initial_secret = HKDF-Extract(salt(version), DCID)`, then `client in` →
//! `quic key` / `quic iv` / `quic hp` (`quicv2 ...` for v2) with HKDF-Expand-Label over SHA-256. Header protection
//! is removed with AES-128-ECB on a 16-byte sample taken 4 bytes after the packet-number offset, then the payload
//! is opened with AES-128-GCM (nonce = iv XOR packet number, AAD = the unprotected header). The payload's CRYPTO
//! frames are placed at their offsets in a reassembly buffer (capped at [`crate::Limits::quic_crypto_cap`]): they
//! can arrive out of order within a packet and across packets (a post-quantum ClientHello spans two Initials).
//! Once the ClientHello is contiguous it is parsed by [`crate::tls::parse_client_hello`]. gQUIC Q050 (encrypted
//! Initials with a `CHLO` inside) and Q043/Q046 (cleartext `CHLO`) yield the SNI and user agent from the CHLO tags.
//!
//! ## Cost
//! Decryption happens in the parser, only for the first client datagrams of an identified QUIC flow (at most
//! [`MAX_INITIALS`] packets); later packets cost a header check. Per flow: one reassembly buffer, grown on use.

use aes::Aes128;
use aes::cipher::{BlockCipherEncrypt, KeyInit};
use aes_gcm::{AeadInOut, Aes128Gcm};
use hkdf::Hkdf;
use sha2::Sha256;

use crate::tls::{ClientHello, Ja3, parse_client_hello};
use crate::{
    AppEvent, AppProto, Detector, Dir, EventSink, Limits, Parser, ParserStats, Probe, ProbeCtx,
    Transport,
};

/// Client Initial packets the parser tries to decrypt before giving up on a flow.
pub const MAX_INITIALS: u32 = 8;

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

const SALT_V1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];
const SALT_V2: [u8; 20] = [
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb,
    0xf9, 0xbd, 0x2e, 0xd9,
];
const SALT_D29: [u8; 20] = [
    0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97, 0x86, 0xf1, 0x9c, 0x61, 0x11, 0xe0,
    0x43, 0x90, 0xa8, 0x99,
];
const SALT_D23: [u8; 20] = [
    0xc3, 0xee, 0xf7, 0x12, 0xc7, 0x2e, 0xbb, 0x5a, 0x11, 0xa7, 0xd2, 0x43, 0x2b, 0xb4, 0x63, 0x65,
    0xbe, 0xf9, 0xf5, 0x02,
];
const SALT_D22: [u8; 20] = [
    0x7f, 0xbc, 0xdb, 0x0e, 0x7c, 0x66, 0xbb, 0xe9, 0x19, 0x3a, 0x96, 0xcd, 0x21, 0x51, 0x9e, 0xbd,
    0x7a, 0x02, 0x64, 0x4a,
];
const SALT_Q50: [u8; 20] = [
    0x50, 0x45, 0x74, 0xef, 0xd0, 0x66, 0xfe, 0x2f, 0x9d, 0x94, 0x5c, 0xfc, 0xdb, 0xd3, 0xa7, 0xf0,
    0xd3, 0xb5, 0x6b, 0x45,
];
const SALT_T50: [u8; 20] = [
    0x7f, 0xf5, 0x79, 0xe5, 0xac, 0xd0, 0x72, 0x91, 0x55, 0x80, 0x30, 0x4c, 0x43, 0xa2, 0x36, 0x7c,
    0x60, 0x48, 0x83, 0x10,
];
const SALT_T51: [u8; 20] = [
    0x7a, 0x4e, 0xde, 0xf4, 0xe7, 0xcc, 0xee, 0x5f, 0xa4, 0x50, 0x6c, 0x19, 0x12, 0x4f, 0xc8, 0xcc,
    0xda, 0x6e, 0x03, 0x3d,
];

const V2: u32 = 0x6b33_43cf;

/// Whether `b` is a gQUIC version tag `Q0dd` / `T0dd`.
fn google_tag(v: u32) -> Option<(u8, u32)> {
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
fn salt(v: u32) -> &'static [u8; 20] {
    match v {
        V2 => &SALT_V2,
        0xff00_0011..=0xff00_0016 => &SALT_D22,
        0xff00_0017..=0xff00_001c => &SALT_D23,
        0xff00_001d..=0xff00_0022 => &SALT_D29,
        0xface_b001 | 0xface_b002 => &SALT_D23,
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

/// Judges one datagram: an Initial with a known version, or a gQUIC public header with a version.
pub fn probe_quic(d: &[u8]) -> Probe {
    let Some(&first) = d.first() else {
        return Probe::NotForUs;
    };
    if first & 0x80 != 0 {
        // Long header (IETF and gQUIC Q046+).
        let Some(v) = d
            .get(1..5)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        else {
            return Probe::NotForUs;
        };
        return match family(v) {
            Some(Family::GoogleLong) => {
                // Q046: 0xc3 with both connection-id length nibbles in one byte (client sends DCID 8).
                if d.len() >= 1200 || d.get(5) == Some(&0x50) {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            // Any long-header packet of a known version: a client's 0-RTT may overtake its Initial, and a flow
            // may be picked up from the server's Initial or Handshake.
            Some(_) => match parse_long_header(d) {
                Some(_) if first & 0x40 != 0 => Probe::Certain,
                _ => Probe::NotForUs,
            },
            None => Probe::NotForUs,
        };
    }
    // gQUIC public header: flags 0x01 (version present) with 0x08 (8-byte connection id), reserved bit 0x80 clear.
    if first & 0x09 == 0x09
        && first & 0x40 == 0
        && let Some(v) = d
            .get(9..13)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        && matches!(family(v), Some(Family::GoogleLegacy))
    {
        return Probe::Certain;
    }
    Probe::NotForUs
}

/// Shortest short-header packet considered: 1 byte, an 8-byte DCID, a packet number and a 16-byte tag.
const MIN_SHORT: usize = 26;

/// A flow picked up after its handshake carries only short-header packets (`01xx xxxx`), whose connection id is
/// not self-describing. On port 443 two consecutive datagrams of one direction with the fixed bit set and the
/// same 8 bytes after the first decide (the destination connection id does not change between packets).
fn probe_short_header(ctx: &ProbeCtx<'_>) -> Probe {
    let d = ctx.data;
    if !ctx.either_port_is(443) || d.len() < MIN_SHORT || d[0] & 0xc0 != 0x40 {
        return Probe::NotForUs;
    }
    let p = ctx.prev;
    if p.is_empty() {
        return Probe::Unsure;
    }
    if p.len() >= MIN_SHORT && p[0] & 0xc0 == 0x40 && p.get(1..9) == d.get(1..9) {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// QUIC over UDP.
#[derive(Clone, Copy, Debug, Default)]
pub struct QuicDetector;

impl Detector for QuicDetector {
    fn proto(&self) -> AppProto {
        AppProto::Quic
    }
    fn transports(&self) -> &'static [Transport] {
        &[Transport::Udp]
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match probe_quic(ctx.data) {
            Probe::NotForUs => probe_short_header(ctx),
            v => v,
        }
    }
    fn default_ports(&self, _t: Transport) -> &'static [u16] {
        &[443]
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(QuicParser::new(limits)))
    }
}

/// HKDF-Expand-Label (RFC 8446 §7.1) with an empty context.
fn expand_label(secret: &[u8], label: &str, out: &mut [u8]) -> Option<()> {
    let hk = Hkdf::<Sha256>::from_prk(secret).ok()?;
    let full = [b"tls13 ".as_slice(), label.as_bytes()].concat();
    let len = u16::try_from(out.len()).ok()?.to_be_bytes();
    let info = [&len[..], &[u8::try_from(full.len()).ok()?], &full, &[0u8]].concat();
    hk.expand(&info, out).ok()
}

/// Initial packet protection keys for one direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitialKeys {
    pub key: [u8; 16],
    pub iv: [u8; 12],
    pub hp: [u8; 16],
}

/// Derives the client's (`client = true`) or server's Initial keys from the client's first DCID.
pub fn initial_keys(version: u32, dcid: &[u8], client: bool) -> Option<InitialKeys> {
    let (initial, _) = Hkdf::<Sha256>::extract(Some(salt(version)), dcid);
    let mut secret = [0u8; 32];
    expand_label(
        &initial,
        if client { "client in" } else { "server in" },
        &mut secret,
    )?;
    let v2 = family(version) == Some(Family::V2);
    let (lk, li, lh) = if v2 {
        ("quicv2 key", "quicv2 iv", "quicv2 hp")
    } else {
        ("quic key", "quic iv", "quic hp")
    };
    let mut k = InitialKeys {
        key: [0; 16],
        iv: [0; 12],
        hp: [0; 16],
    };
    expand_label(&secret, lk, &mut k.key)?;
    expand_label(&secret, li, &mut k.iv)?;
    expand_label(&secret, lh, &mut k.hp)?;
    Some(k)
}

/// Removes header protection and decrypts one Initial packet (`pkt` = this packet only, from its first byte to
/// the end of its Length). Returns the plaintext payload (frames) in `out`.
pub fn decrypt_initial(
    pkt: &[u8],
    h: &LongHeader<'_>,
    keys: &InitialKeys,
    out: &mut Vec<u8>,
) -> Option<()> {
    let sample = pkt.get(h.pn_offset + 4..h.pn_offset + 20)?;
    let hp = Aes128::new_from_slice(&keys.hp).ok()?;
    let mut mask = aes::Block::try_from(sample).ok()?;
    hp.encrypt_block(&mut mask);
    let first = h.first ^ (mask[0] & 0x0f);
    let pn_len = usize::from(first & 3) + 1;
    let mut header = pkt.get(..h.pn_offset + pn_len)?.to_vec();
    header[0] = first;
    let mut pn: u64 = 0;
    for i in 0..pn_len {
        let b = header[h.pn_offset + i] ^ mask[1 + i];
        header[h.pn_offset + i] = b;
        pn = (pn << 8) | u64::from(b);
    }
    let end = h.pn_offset + h.length;
    let ct = pkt.get(h.pn_offset + pn_len..end)?;
    if ct.len() < 16 {
        return None;
    }
    let (body, tag) = ct.split_at(ct.len() - 16);
    let mut nonce = keys.iv;
    for (i, b) in pn.to_be_bytes().iter().enumerate() {
        nonce[4 + i] ^= b;
    }
    let aead = Aes128Gcm::new_from_slice(&keys.key).ok()?;
    out.clear();
    out.extend_from_slice(body);
    let nonce = aes_gcm::Nonce::try_from(&nonce[..]).ok()?;
    let tag = aes_gcm::Tag::try_from(tag).ok()?;
    aead.decrypt_inout_detached(&nonce, &header, out.as_mut_slice().into(), &tag)
        .ok()?;
    Some(())
}

/// Extension names as Suricata logs them in `quic.extensions`.
pub fn ext_name(t: u16) -> Option<&'static str> {
    Some(match t {
        0 => "server_name",
        1 => "max_fragment_length",
        5 => "status_request",
        10 => "supported_groups",
        11 => "ec_point_formats",
        13 => "signature_algorithms",
        14 => "use_srtp",
        15 => "heartbeat",
        16 => "alpn",
        18 => "signed_certificate_timestamp",
        21 => "padding",
        22 => "encrypt_then_mac",
        23 => "extended_master_secret",
        27 => "compress_certificate",
        28 => "record_size_limit",
        35 => "session_ticket",
        41 => "pre_shared_key",
        42 => "early_data",
        43 => "supported_versions",
        44 => "cookie",
        45 => "psk_key_exchange_modes",
        47 => "certificate_authorities",
        49 => "post_handshake_auth",
        50 => "signature_algorithms_cert",
        51 => "key_share",
        57 => "quic_transport_parameters",
        0x4469 => "application_settings",
        0xff01 => "renegotiation_info",
        _ => return None,
    })
}

/// One entry of EVE's `quic.extensions`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QuicExtension {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub kind: u16,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// The EVE `quic` event.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct QuicEvent {
    /// Version as Suricata writes it (`1`, `6b3343cf`, `ff00001d`, `Q050`).
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    /// gQUIC user agent (CHLO `UAID`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ua: Option<String>,
    /// ALPN protocols the client offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alpn: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ja3: Option<Ja3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ja4: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<QuicExtension>,
}

fn event_from_hello(version: u32, ch: &ClientHello) -> QuicEvent {
    let extensions = ch
        .extensions
        .iter()
        .filter(|&&t| !crate::tls::is_grease(t))
        .map(|&t| QuicExtension {
            name: ext_name(t).map(str::to_string),
            kind: t,
            values: match t {
                0 => ch.sni.iter().cloned().collect(),
                16 => ch.alpn.clone(),
                _ => Vec::new(),
            },
        })
        .collect();
    QuicEvent {
        version: version_string(version),
        sni: ch.sni.clone(),
        ua: None,
        alpn: ch.alpn.clone(),
        ja3: Some(ch.ja3()),
        ja4: Some(ch.ja4('q')),
        extensions,
    }
}

/// SNI and user agent from a gQUIC `CHLO` message found in `b`.
pub fn parse_chlo(b: &[u8]) -> Option<(Option<String>, Option<String>)> {
    let at = memchr::memmem::find(b, b"CHLO")?;
    let m = b.get(at..)?;
    let n = usize::from(u16::from_le_bytes([*m.get(4)?, *m.get(5)?]));
    if n > 128 {
        return None;
    }
    let values = 8 + 8 * n;
    let (mut sni, mut ua) = (None, None);
    let mut prev = 0usize;
    for i in 0..n {
        let e = m.get(8 + 8 * i..16 + 8 * i)?;
        let end = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
        if end < prev {
            return None;
        }
        let v = m.get(values + prev..values + end);
        match &e[..4] {
            b"SNI\0" => sni = v.map(|v| String::from_utf8_lossy(v).into_owned()),
            b"UAID" => ua = v.map(|v| String::from_utf8_lossy(v).into_owned()),
            _ => {}
        }
        prev = end;
    }
    Some((sni, ua))
}

/// CRYPTO stream reassembly for the client's Initial packets: a buffer and the ranges received.
#[derive(Debug, Default)]
struct CryptoAsm {
    buf: Vec<u8>,
    /// Received ranges, sorted, merged.
    have: Vec<(usize, usize)>,
}

impl CryptoAsm {
    fn insert(&mut self, off: usize, data: &[u8], cap: usize, stats: &mut ParserStats) {
        let end = off.saturating_add(data.len()).min(cap);
        if off >= end {
            stats.bytes_cut += data.len() as u64;
            return;
        }
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        self.buf[off..end].copy_from_slice(&data[..end - off]);
        stats.bytes_cut += (data.len() - (end - off)) as u64;
        self.have.push((off, end));
        self.have.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(self.have.len());
        for &(s, e) in &self.have {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.have = merged;
        self.have.truncate(64);
    }

    /// Bytes contiguous from offset 0.
    fn contiguous(&self) -> &[u8] {
        match self.have.first() {
            Some(&(0, e)) => self.buf.get(..e).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// The QUIC parser of one flow: decrypts client Initials until the ClientHello (or CHLO) is read.
#[derive(Debug)]
pub struct QuicParser {
    cap: usize,
    crypto: CryptoAsm,
    /// The client's first DCID and version, which fix the Initial keys.
    keys: Option<(u32, InitialKeys)>,
    tried: u32,
    done: bool,
    version: Option<u32>,
    plain: Vec<u8>,
    stats: ParserStats,
}

impl QuicParser {
    /// A parser for one flow.
    pub fn new(limits: &Limits) -> Self {
        QuicParser {
            cap: limits.quic_crypto_cap,
            crypto: CryptoAsm::default(),
            keys: None,
            tried: 0,
            done: false,
            version: None,
            plain: Vec::new(),
            stats: ParserStats::default(),
        }
    }

    fn emit(&mut self, ev: QuicEvent, out: &mut dyn EventSink) {
        self.done = true;
        self.crypto = CryptoAsm::default();
        self.plain = Vec::new();
        out.event(AppEvent::Quic(ev));
    }

    /// Handles one client datagram (possibly several coalesced long-header packets).
    fn client_datagram(&mut self, d: &[u8], out: &mut dyn EventSink) {
        let Some(&first) = d.first() else { return };
        if first & 0x80 == 0 {
            // gQUIC legacy public header: the CHLO is in cleartext.
            if let Some(v) = d
                .get(9..13)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                && first & 0x09 == 0x09
                && family(v) == Some(Family::GoogleLegacy)
            {
                self.version.get_or_insert(v);
                self.cleartext_chlo(v, d, out);
            }
            return;
        }
        let mut rest = d;
        while !rest.is_empty() && !self.done {
            let Some(v) = rest
                .get(1..5)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            else {
                return;
            };
            self.version.get_or_insert(v);
            if family(v) == Some(Family::GoogleLong) {
                self.cleartext_chlo(v, rest, out);
                return;
            }
            let Some(h) = parse_long_header(rest) else {
                return;
            };
            let end = (h.pn_offset + h.length).min(rest.len());
            let (pkt, next) = rest.split_at(end);
            rest = next;
            if !h.is_initial() {
                continue;
            }
            self.tried += 1;
            if self.tried > MAX_INITIALS {
                self.done = true;
                self.stats.gave_up += 1;
                return;
            }
            let keys = match &self.keys {
                Some((kv, k)) if *kv == v => k.clone(),
                _ => match initial_keys(v, h.dcid, true) {
                    Some(k) => {
                        self.keys = Some((v, k.clone()));
                        k
                    }
                    None => return,
                },
            };
            let mut plain = std::mem::take(&mut self.plain);
            if decrypt_initial(pkt, &h, &keys, &mut plain).is_none() {
                self.stats.malformed += 1;
                self.plain = plain;
                continue;
            }
            self.frames(&plain);
            self.plain = plain;
            self.try_hello(v, out);
        }
    }

    fn cleartext_chlo(&mut self, v: u32, d: &[u8], out: &mut dyn EventSink) {
        self.tried += 1;
        if let Some((sni, ua)) = parse_chlo(d) {
            self.emit(
                QuicEvent {
                    version: version_string(v),
                    sni,
                    ua,
                    ..QuicEvent::default()
                },
                out,
            );
        } else if self.tried >= MAX_INITIALS {
            self.done = true;
        }
    }

    /// Walks decrypted frames, collecting CRYPTO data; stops at a frame type it cannot skip.
    fn frames(&mut self, mut p: &[u8]) {
        while let Some(&ty) = p.first() {
            match ty {
                0x00 | 0x01 => p = &p[1..], // PADDING, PING
                0x02 | 0x03 => {
                    // ACK: largest, delay, range count, first range, ranges, [ECN counts]
                    let mut q = &p[1..];
                    let mut fields = [0u64; 4];
                    for f in fields.iter_mut() {
                        let Some((v, n)) = varint(q) else { return };
                        *f = v;
                        q = &q[n..];
                    }
                    for _ in 0..fields[2].min(256) * 2 {
                        let Some((_, n)) = varint(q) else { return };
                        q = &q[n..];
                    }
                    if ty == 0x03 {
                        for _ in 0..3 {
                            let Some((_, n)) = varint(q) else { return };
                            q = &q[n..];
                        }
                    }
                    p = q;
                }
                0x06 => {
                    let Some((off, n1)) = varint(&p[1..]) else {
                        return;
                    };
                    let Some((len, n2)) = p.get(1 + n1..).and_then(varint) else {
                        return;
                    };
                    let start = 1 + n1 + n2;
                    let Some(data) = usize::try_from(len)
                        .ok()
                        .and_then(|l| p.get(start..start + l))
                    else {
                        return;
                    };
                    let off = usize::try_from(off).unwrap_or(usize::MAX);
                    self.crypto.insert(off, data, self.cap, &mut self.stats);
                    p = &p[start + data.len()..];
                }
                0x1c | 0x1d => return, // CONNECTION_CLOSE
                _ => return,
            }
        }
    }

    fn try_hello(&mut self, v: u32, out: &mut dyn EventSink) {
        let c = self.crypto.contiguous();
        if family(v) == Some(Family::GoogleIetf) && google_tag(v).is_some_and(|(k, _)| k == b'Q') {
            // Q050: the crypto stream holds a CHLO, not a TLS ClientHello.
            if c.len() >= 8 && c.starts_with(b"CHLO") {
                let n = usize::from(u16::from_le_bytes([c[4], c[5]]));
                let last = c
                    .get(8 + 8 * n.saturating_sub(1) + 4..8 + 8 * n)
                    .map(|e| u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
                if let Some(last) = last
                    && c.len() >= 8 + 8 * n + last as usize
                    && let Some((sni, ua)) = parse_chlo(c)
                {
                    self.emit(
                        QuicEvent {
                            version: version_string(v),
                            sni,
                            ua,
                            ..QuicEvent::default()
                        },
                        out,
                    );
                }
            }
            return;
        }
        if c.len() < 4 || c[0] != 1 {
            return;
        }
        let len = (usize::from(c[1]) << 16) | (usize::from(c[2]) << 8) | usize::from(c[3]);
        if len + 4 > self.cap {
            self.stats.bytes_cut += len as u64;
            self.done = true;
            return;
        }
        let Some(body) = c.get(4..4 + len) else {
            return;
        };
        match parse_client_hello(body, false) {
            Ok(ch) => {
                let ev = event_from_hello(v, &ch);
                self.emit(ev, out);
            }
            Err(_) => {
                self.stats.malformed += 1;
                self.done = true;
            }
        }
    }
}

impl Parser for QuicParser {
    fn parse(&mut self, dir: Dir, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.done || dir != Dir::ToServer {
            return;
        }
        self.client_datagram(data, out);
    }

    fn finish(&mut self, out: &mut dyn EventSink) {
        // A QUIC flow whose ClientHello we never read still gets its version logged.
        if !self.done
            && let Some(v) = self.version
        {
            self.emit(
                QuicEvent {
                    version: version_string(v),
                    ..QuicEvent::default()
                },
                out,
            );
        }
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}
