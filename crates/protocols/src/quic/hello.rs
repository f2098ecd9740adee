//! What the client's hello says: the TLS ClientHello carried in CRYPTO frames, or Google QUIC's `CHLO` tags, as
//! the EVE `quic` event.

use md5::Digest as _;

use super::*;

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
    /// The version as the long header carries it (the rules' `quic.version`: its 4 bytes); not an EVE field.
    #[serde(skip)]
    pub wire_version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    /// gQUIC user agent (CHLO `UAID`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ua: Option<String>,
    /// gQUIC CYU fingerprint of the CHLO (`quic.cyu.hash`, `quic.cyu.string`), for the versions it is defined for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cyu: Vec<Cyu>,
    /// ALPN protocols the client offered. Not written on its own (Suricata's schema has no such key): EVE shows them
    /// as the `alpn` entry of `extensions`.
    #[serde(skip)]
    pub alpn: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ja3: Option<Ja3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ja4: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<QuicExtension>,
}

pub(super) fn event_from_hello(version: u32, ch: &ClientHello) -> QuicEvent {
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
        wire_version: version,
        sni: ch.sni.clone(),
        ua: None,
        cyu: Vec::new(),
        alpn: ch.alpn.clone(),
        ja3: Some(ch.ja3()),
        ja4: Some(ch.ja4('q')),
        extensions,
    }
}

/// One entry of EVE's `quic.cyu`: the CYU fingerprint of a gQUIC client hello (Salesforce's, as Suricata computes
/// it): `string` is the version's number and the CHLO's tags in the order sent (`46,PAD-SNI-VER-...`), `hash` its
/// MD5 in lower-case hex.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Cyu {
    pub hash: String,
    pub string: String,
}

/// Most tags a CHLO may announce before it is not read as one.
pub const MAX_CHLO_TAGS: usize = 128;

/// What a gQUIC `CHLO` says: its server name, user agent and tags in the order sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chlo {
    pub sni: Option<String>,
    pub ua: Option<String>,
    /// Each tag as sent (four bytes, `SNI\0`), at most [`MAX_CHLO_TAGS`].
    pub tags: Vec<[u8; 4]>,
}

impl Chlo {
    /// The CYU fingerprint for version `v` (its tag as the long header carries it): defined, as Suricata defines it,
    /// for Q043 to Q046 only, whose number it writes (`43`, `44`, `44` for Q045 as Suricata does, `46`); each tag is
    /// written up to its first NUL.
    pub fn cyu(&self, v: u32) -> Option<Cyu> {
        let number = match &v.to_be_bytes() {
            b"Q043" => "43",
            b"Q044" | b"Q045" => "44",
            b"Q046" => "46",
            _ => return None,
        };
        let mut string = format!("{number},");
        for (i, t) in self.tags.iter().enumerate() {
            if i > 0 {
                string.push('-');
            }
            let name = t.split(|&c| c == 0).next().unwrap_or_default();
            string.push_str(&String::from_utf8_lossy(name));
        }
        let hash = crate::file::hex(&md5::Md5::digest(string.as_bytes()));
        Some(Cyu { hash, string })
    }
}

/// The `CHLO` message found in `b` (gQUIC's client hello): its SNI, user agent and tags.
pub fn parse_chlo(b: &[u8]) -> Option<Chlo> {
    let at = memchr::memmem::find(b, b"CHLO")?;
    let m = b.get(at..)?;
    let n = usize::from(u16::from_le_bytes([*m.get(4)?, *m.get(5)?]));
    if n > MAX_CHLO_TAGS {
        return None;
    }
    let values = 8 + 8 * n;
    let mut chlo = Chlo::default();
    let mut prev = 0usize;
    for i in 0..n {
        let e = m.get(8 + 8 * i..16 + 8 * i)?;
        let end = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
        if end < prev {
            return None;
        }
        let v = m.get(values + prev..values + end);
        let tag = [e[0], e[1], e[2], e[3]];
        match &tag {
            b"SNI\0" => chlo.sni = v.map(|v| String::from_utf8_lossy(v).into_owned()),
            b"UAID" => chlo.ua = v.map(|v| String::from_utf8_lossy(v).into_owned()),
            _ => {}
        }
        chlo.tags.push(tag);
        prev = end;
    }
    Some(chlo)
}
