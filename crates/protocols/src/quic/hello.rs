//! What the client's hello says: the TLS ClientHello carried in CRYPTO frames, or Google QUIC's `CHLO` tags, as
//! the EVE `quic` event.

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
