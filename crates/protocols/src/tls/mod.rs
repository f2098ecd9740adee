//! TLS and DTLS: detection from the first record, and a streaming handshake parser that yields EVE `tls` events
//! (SNI, version as Suricata writes it, ALPN, JA3/JA3S, JA4, cipher suites).
//!
//! ## Detection
//! A TLS connection starts with a handshake record (`16 03 0x`) holding a ClientHello (or, picked up from the
//! reply, a ServerHello). Eleven bytes decide: record type, record version, a plausible record length, the
//! handshake type, and the ClientHello's own `03 0x` version. A shorter prefix that agrees so far is `Unsure`.
//! SSLv2-compatible ClientHellos (`80 xx 01 03 0x`) are accepted too. DTLS (UDP) is a record header with version
//! `fe ff` / `fe fd` / `fe fc` whose length fits the datagram.
//!
//! ## Parsing
//! Per direction, records are cut from the byte stream without buffering their bodies: only handshake bytes are
//! collected, and only for the messages we read (ClientHello, ServerHello, up to [`crate::Limits::tls_handshake_cap`]);
//! other handshake messages (certificates) are skipped by length. Handshake messages may span records and a
//! record may hold several messages. Once a direction sends ChangeCipherSpec or application data, the rest of it
//! is encrypted and is skipped record by record, which costs a few branches per record.
//!
//! The event is emitted once per flow: when the server side finishes its cleartext part (TLS 1.3 ServerHello,
//! ServerHelloDone, ChangeCipherSpec, application data) or at the end of the flow with whatever was seen.

use md5::{Digest as _, Md5};
use sha2::Sha256;

use crate::{
    AppEvent, AppProto, ByteSet, Detector, Direction, EventSink, Limits, Parser, ParserStats,
    Probe, ProbeCtx, Transport,
};

/// Handshake message types we read.
const HS_CLIENT_HELLO: u8 = 1;
const HS_SERVER_HELLO: u8 = 2;
const HS_SERVER_HELLO_DONE: u8 = 14;
const HS_CERTIFICATE: u8 = 11;

/// Record content types.
const CT_CCS: u8 = 20;
const CT_HANDSHAKE: u8 = 22;
const CT_APPDATA: u8 = 23;
const CT_HEARTBEAT: u8 = 24;

/// Largest record a peer may send (2^14 plus expansion allowance, RFC 8446 §5.2).
const MAX_RECORD: usize = 16384 + 2048;

/// Suricata's spelling of a TLS/DTLS protocol version (`TLS 1.2`, `TLSv1`, `DTLS 1.2`, ...).
pub fn version_name(v: u16) -> &'static str {
    match v {
        0x0002 => "SSLv2",
        0x0300 => "SSLv3",
        0x0301 => "TLSv1",
        0x0302 => "TLS 1.1",
        0x0303 => "TLS 1.2",
        0x0304 => "TLS 1.3",
        0xfeff => "DTLS 1.0",
        0xfefd => "DTLS 1.2",
        0xfefc => "DTLS 1.3",
        0x0100 => "DTLS 1.0",
        _ => "UNDETERMINED",
    }
}

/// Whether `v` is a GREASE value (RFC 8701: `0x?a?a` with equal bytes), skipped by JA3/JA4.
#[inline]
pub fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && (v >> 8) == (v & 0xff)
}

/// JA3 / JA3S: the fingerprint string and its MD5, as EVE `tls.ja3` / `tls.ja3s` objects.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Ja3 {
    pub hash: String,
    pub string: String,
}

impl Ja3 {
    fn from_string(string: String) -> Ja3 {
        let digest = Md5::digest(string.as_bytes());
        Ja3 {
            hash: hex(&digest),
            string,
        }
    }
}

/// The ClientHello fields Suricata 8 logs as `tls.client_handshake`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClientHandshake {
    /// Highest version offered (from `supported_versions` when present), Suricata's spelling.
    pub version: String,
    /// The lists are left out when empty (Suricata's schema wants at least one entry).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ciphers: Vec<u16>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exts: Vec<u16>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sig_algs: Vec<u16>,
}

/// The ServerHello fields: negotiated version and cipher suite.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ServerHandshake {
    pub version: String,
    pub cipher: u16,
}

/// The EVE `tls` event.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TlsEvent {
    /// Server Name Indication from the ClientHello.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
    /// Negotiated version (ServerHello), or the ClientHello's when the server was not seen; Suricata's spelling.
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ja3: Option<Ja3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ja3s: Option<Ja3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ja4: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub client_alpns: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_alpns: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_handshake: Option<ClientHandshake>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_handshake: Option<ServerHandshake>,
    /// The server certificate's subject, as Suricata writes it (`C=US, O=Example, CN=www.example.com`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The server certificate's issuer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuerdn: Option<String>,
    /// The server certificate's serial number: upper-case hex bytes joined by `:`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// SHA-1 of the server certificate: lower-case hex bytes joined by `:`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The server's certificate chain as sent (DER, leaf first; TLS 1.2 and earlier, where it is in the clear): the
    /// rules' `tls.certs`. Not an EVE field.
    #[serde(skip)]
    pub certificates: Vec<Vec<u8>>,
    /// What the flow risks check of the server certificate (validity and names), when its leaf parsed. Not an EVE
    /// field.
    #[serde(skip)]
    pub cert_check: Option<Box<CertCheck>>,
}

/// The facts of a server certificate that the flow risks judge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertCheck {
    /// `notBefore` and `notAfter`, seconds since the Unix epoch.
    pub not_before: i64,
    pub not_after: i64,
    /// The names the certificate is valid for: its subjectAltName DNS names and IP addresses, else its subject's
    /// common names; lowercase.
    pub names: Vec<String>,
}

impl TlsEvent {
    /// Fills the certificate fields from a server certificate chain (DER, leaf first). A leaf that does not parse
    /// as X.509 leaves the text fields empty; the chain is kept either way.
    pub fn set_certificates(&mut self, chain: Vec<Vec<u8>>) {
        if let Some(leaf) = chain.first() {
            use sha1::{Digest as _, Sha1};
            self.fingerprint = Some(hex_colons(&Sha1::digest(leaf), false));
            if let Ok((_, cert)) = x509_parser::parse_x509_certificate(leaf) {
                self.subject = Some(cert.subject().to_string());
                self.issuerdn = Some(cert.issuer().to_string());
                self.serial = Some(hex_colons(cert.raw_serial(), true));
                let v = cert.validity();
                self.cert_check = Some(Box::new(CertCheck {
                    not_before: v.not_before.timestamp(),
                    not_after: v.not_after.timestamp(),
                    names: cert_names(&cert),
                }));
            }
        }
        self.certificates = chain;
    }
}

/// The names a certificate is valid for: subjectAltName DNS names and IP addresses, else the subject's common
/// names (RFC 6125 looks at the CN only when there is no DNS name in the SAN).
fn cert_names(cert: &x509_parser::certificate::X509Certificate<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            match n {
                GeneralName::DNSName(d) => names.push(d.to_ascii_lowercase()),
                GeneralName::IPAddress(b) => {
                    let ip = match b.len() {
                        4 => <[u8; 4]>::try_from(*b).ok().map(std::net::IpAddr::from),
                        16 => <[u8; 16]>::try_from(*b).ok().map(std::net::IpAddr::from),
                        _ => None,
                    };
                    names.extend(ip.map(|ip| ip.to_string()));
                }
                _ => {}
            }
        }
    }
    if names.is_empty() {
        names.extend(
            cert.subject()
                .iter_common_name()
                .filter_map(|cn| cn.as_str().ok())
                .map(str::to_ascii_lowercase),
        );
    }
    names
}

/// Bytes as hex pairs joined by `:`.
fn hex_colons(bytes: &[u8], upper: bool) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        if upper {
            out.push_str(&format!("{b:02X}"));
        } else {
            out.push_str(&format!("{b:02x}"));
        }
    }
    out
}

/// The certificates of a TLS 1.2 (or earlier) Certificate message body: a 3-byte list length, then each one as a
/// 3-byte length and its DER. `None` when the lengths do not add up.
pub fn certificate_list(body: &[u8]) -> Option<Vec<Vec<u8>>> {
    let u24 = |b: &[u8]| -> Option<usize> {
        let b = b.get(..3)?;
        Some((usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]))
    };
    let total = u24(body)?;
    let mut rest = body.get(3..3 + total)?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let n = u24(rest)?;
        out.push(rest.get(3..3 + n)?.to_vec());
        rest = rest.get(3 + n..)?;
    }
    Some(out)
}

/// Why a hello message could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelloError {
    /// The message ended before a field it announced.
    Truncated,
    /// A length or value that cannot be right.
    Invalid,
}

/// A parsed ClientHello (TLS, DTLS, or the one inside a QUIC Initial).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// `legacy_version` (0x0303 for TLS 1.3 too).
    pub legacy_version: u16,
    pub ciphers: Vec<u16>,
    /// Extension types in order of appearance (GREASE included; JA3/JA4 filter it).
    pub extensions: Vec<u16>,
    pub sni: Option<String>,
    pub alpn: Vec<String>,
    /// `supported_versions` (extension 43).
    pub supported_versions: Vec<u16>,
    /// `supported_groups` (extension 10).
    pub groups: Vec<u16>,
    /// `ec_point_formats` (extension 11).
    pub point_formats: Vec<u8>,
    /// `signature_algorithms` (extension 13).
    pub sig_algs: Vec<u16>,
}

/// A parsed ServerHello.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerHello {
    pub legacy_version: u16,
    pub cipher: u16,
    pub extensions: Vec<u16>,
    /// The `supported_versions` selection (TLS 1.3), if present.
    pub selected_version: Option<u16>,
    pub alpn: Vec<String>,
}

impl ServerHello {
    /// The version actually negotiated.
    pub fn version(&self) -> u16 {
        self.selected_version.unwrap_or(self.legacy_version)
    }
}

/// A bounds-checked reader over a byte slice; every read returns `HelloError::Truncated` instead of panicking.
#[derive(Clone, Copy)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], HelloError> {
        if n > self.buf.len() {
            return Err(HelloError::Truncated);
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, HelloError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16, HelloError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    pub(crate) fn u24(&mut self) -> Result<u32, HelloError> {
        let b = self.take(3)?;
        Ok(u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]))
    }
    /// A vector with a 1-byte length prefix.
    pub(crate) fn vec8(&mut self) -> Result<&'a [u8], HelloError> {
        let n = self.u8()? as usize;
        self.take(n)
    }
    /// A vector with a 2-byte length prefix.
    pub(crate) fn vec16(&mut self) -> Result<&'a [u8], HelloError> {
        let n = self.u16()? as usize;
        self.take(n)
    }
}

fn u16_list(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect()
}

/// Most entries kept from any list in a hello (cipher suites, extensions, groups...): a hostile hello cannot make
/// us allocate more than a few KiB.
const MAX_LIST: usize = 512;

fn push_capped<T>(v: &mut Vec<T>, x: T) {
    if v.len() < MAX_LIST {
        v.push(x);
    }
}

fn parse_alpn(body: &[u8]) -> Result<Vec<String>, HelloError> {
    let mut r = Reader::new(body);
    let mut list = Reader::new(r.vec16()?);
    let mut out = Vec::new();
    while !list.is_empty() {
        let p = list.vec8()?;
        push_capped(&mut out, String::from_utf8_lossy(p).into_owned());
    }
    Ok(out)
}

fn parse_sni(body: &[u8]) -> Result<Option<String>, HelloError> {
    let mut r = Reader::new(body);
    let mut list = Reader::new(r.vec16()?);
    while !list.is_empty() {
        let kind = list.u8()?;
        let name = list.vec16()?;
        if kind == 0 {
            return Ok(Some(String::from_utf8_lossy(name).into_owned()));
        }
    }
    Ok(None)
}

/// Parses a ClientHello *body* (after the 4-byte handshake header; for DTLS after the 12-byte one). `dtls` adds
/// the cookie field. Extensions that fail to parse are skipped; a truncated fixed part is an error.
pub fn parse_client_hello(body: &[u8], dtls: bool) -> Result<ClientHello, HelloError> {
    let mut r = Reader::new(body);
    let mut ch = ClientHello {
        legacy_version: r.u16()?,
        ..ClientHello::default()
    };
    r.take(32)?; // random
    r.vec8()?; // session id
    if dtls {
        r.vec8()?; // cookie
    }
    let ciphers = r.vec16()?;
    if ciphers.len() % 2 != 0 {
        return Err(HelloError::Invalid);
    }
    ch.ciphers = u16_list(ciphers);
    ch.ciphers.truncate(MAX_LIST);
    r.vec8()?; // compression methods
    if r.is_empty() {
        return Ok(ch); // no extensions (SSLv3 style)
    }
    let mut exts = Reader::new(r.vec16()?);
    while !exts.is_empty() {
        let ty = exts.u16()?;
        let data = exts.vec16()?;
        push_capped(&mut ch.extensions, ty);
        match ty {
            0 => ch.sni = parse_sni(data).ok().flatten(),
            16 => ch.alpn = parse_alpn(data).unwrap_or_default(),
            10 => {
                if let Ok(l) = Reader::new(data).vec16() {
                    ch.groups = u16_list(l);
                    ch.groups.truncate(MAX_LIST);
                }
            }
            11 => {
                if let Ok(l) = Reader::new(data).vec8() {
                    ch.point_formats = l.to_vec();
                }
            }
            13 => {
                if let Ok(l) = Reader::new(data).vec16() {
                    ch.sig_algs = u16_list(l);
                    ch.sig_algs.truncate(MAX_LIST);
                }
            }
            43 => {
                if let Ok(l) = Reader::new(data).vec8() {
                    ch.supported_versions = u16_list(l);
                    ch.supported_versions.truncate(MAX_LIST);
                }
            }
            _ => {}
        }
    }
    Ok(ch)
}

/// Parses a ServerHello body (after the handshake header). `dtls` is accepted for symmetry (the layout is the
/// same).
pub fn parse_server_hello(body: &[u8]) -> Result<ServerHello, HelloError> {
    let mut r = Reader::new(body);
    let mut sh = ServerHello {
        legacy_version: r.u16()?,
        ..ServerHello::default()
    };
    r.take(32)?;
    r.vec8()?;
    sh.cipher = r.u16()?;
    r.u8()?; // compression
    if r.is_empty() {
        return Ok(sh);
    }
    let mut exts = Reader::new(r.vec16()?);
    while !exts.is_empty() {
        let ty = exts.u16()?;
        let data = exts.vec16()?;
        push_capped(&mut sh.extensions, ty);
        match ty {
            16 => sh.alpn = parse_alpn(data).unwrap_or_default(),
            43 if data.len() == 2 => {
                sh.selected_version = Some(u16::from_be_bytes([data[0], data[1]]))
            }
            _ => {}
        }
    }
    Ok(sh)
}

/// Decimal values joined by `sep`, written into one string (fingerprints are built once per flow, but without an
/// allocation per value).
fn join<T: std::fmt::Display>(it: impl Iterator<Item = T>, sep: &str) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(128);
    for (i, x) in it.enumerate() {
        if i > 0 {
            s.push_str(sep);
        }
        let _ = write!(s, "{x}");
    }
    s
}

/// Values as four lowercase hex digits joined by commas (JA4's list form).
fn join_hex4(it: impl Iterator<Item = u16>) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(128);
    for (i, x) in it.enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{x:04x}");
    }
    s
}

pub(crate) fn hex(b: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(H[(x >> 4) as usize] as char);
        s.push(H[(x & 15) as usize] as char);
    }
    s
}

impl ClientHello {
    /// The highest version offered: `supported_versions` (GREASE removed) if present, else `legacy_version`.
    pub fn max_version(&self) -> u16 {
        self.supported_versions
            .iter()
            .copied()
            .filter(|&v| !is_grease(v))
            .max_by_key(|&v| if v >= 0xfe00 { 0xffff - v } else { v }) // DTLS versions count down
            .unwrap_or(self.legacy_version)
    }

    /// JA3 (Salesforce): `version,ciphers,extensions,groups,point_formats`, GREASE removed, MD5 of the string.
    pub fn ja3(&self) -> Ja3 {
        let ng = |v: &&u16| !is_grease(**v);
        let s = format!(
            "{},{},{},{},{}",
            self.legacy_version,
            join(self.ciphers.iter().filter(ng), "-"),
            join(self.extensions.iter().filter(ng), "-"),
            join(self.groups.iter().filter(ng), "-"),
            join(self.point_formats.iter(), "-"),
        );
        Ja3::from_string(s)
    }

    /// JA4 (FoxIO): `<t|q|d><ver><d|i><nn ciphers><nn exts><alpn>_<sha256(sorted ciphers)[..12]>_<sha256(sorted
    /// exts without SNI/ALPN + "_" + sig algs)[..12]>`. `proto` is `'t'` (TCP), `'q'` (QUIC) or `'d'` (DTLS).
    pub fn ja4(&self, proto: char) -> String {
        let ver = match self.max_version() {
            0x0304 => "13",
            0x0303 => "12",
            0x0302 => "11",
            0x0301 => "10",
            0x0300 => "s3",
            0x0002 => "s2",
            0xfeff => "d1",
            0xfefd => "d2",
            0xfefc => "d3",
            _ => "00",
        };
        let sni = if self.sni.is_some() { 'd' } else { 'i' };
        let mut ciphers: Vec<u16> = self
            .ciphers
            .iter()
            .copied()
            .filter(|&c| !is_grease(c))
            .collect();
        let exts: Vec<u16> = self
            .extensions
            .iter()
            .copied()
            .filter(|&e| !is_grease(e))
            .collect();
        let alpn = match self.alpn.first().map(|a| a.as_bytes()) {
            Some([]) | None => "00".to_string(),
            Some(a) => {
                let (f, l) = (a[0], a[a.len() - 1]);
                if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() {
                    format!("{}{}", f as char, l as char)
                } else {
                    // Non-alphanumeric: first and last hex characters of the value.
                    let h = hex(a);
                    let hb = h.as_bytes();
                    format!("{}{}", hb[0] as char, hb[hb.len() - 1] as char)
                }
            }
        };
        let a = format!(
            "{proto}{ver}{sni}{:02}{:02}{alpn}",
            ciphers.len().min(99),
            exts.len().min(99)
        );
        ciphers.sort_unstable();
        let b = if ciphers.is_empty() {
            "000000000000".to_string()
        } else {
            trunc_sha(&join_hex4(ciphers.iter().copied()))
        };
        let mut e: Vec<u16> = exts.into_iter().filter(|&x| x != 0 && x != 16).collect();
        e.sort_unstable();
        let c = if e.is_empty() {
            "000000000000".to_string()
        } else {
            let mut s = join_hex4(e.iter().copied());
            let sig: Vec<u16> = self
                .sig_algs
                .iter()
                .copied()
                .filter(|&x| !is_grease(x))
                .collect();
            if !sig.is_empty() {
                s.push('_');
                s.push_str(&join_hex4(sig.iter().copied()));
            }
            trunc_sha(&s)
        };
        format!("{a}_{b}_{c}")
    }

    /// Suricata 8's `client_handshake` object.
    pub fn handshake(&self) -> ClientHandshake {
        ClientHandshake {
            version: version_name(self.max_version()).to_string(),
            ciphers: self
                .ciphers
                .iter()
                .copied()
                .filter(|&c| !is_grease(c))
                .collect(),
            exts: self
                .extensions
                .iter()
                .copied()
                .filter(|&c| !is_grease(c))
                .collect(),
            sig_algs: self
                .sig_algs
                .iter()
                .copied()
                .filter(|&c| !is_grease(c))
                .collect(),
        }
    }
}

fn trunc_sha(s: &str) -> String {
    let d = Sha256::digest(s.as_bytes());
    let mut h = hex(&d);
    h.truncate(12);
    h
}

impl ServerHello {
    /// JA3S: `version,cipher,extensions`, MD5.
    pub fn ja3s(&self) -> Ja3 {
        Ja3::from_string(format!(
            "{},{},{}",
            self.legacy_version,
            self.cipher,
            join(self.extensions.iter(), "-")
        ))
    }
}

/// Builds the EVE event from whichever hellos were seen.
pub fn tls_event(
    client: Option<&ClientHello>,
    server: Option<&ServerHello>,
    proto: char,
) -> TlsEvent {
    let version = match (server, client) {
        (Some(s), _) => version_name(s.version()),
        (None, Some(c)) => version_name(c.max_version()),
        (None, None) => "UNDETERMINED",
    };
    TlsEvent {
        sni: client.and_then(|c| c.sni.clone()),
        version: version.to_string(),
        ja3: client.map(ClientHello::ja3),
        ja3s: server.map(ServerHello::ja3s),
        ja4: client.map(|c| c.ja4(proto)),
        client_alpns: client.map(|c| c.alpn.clone()).unwrap_or_default(),
        server_alpns: server.map(|s| s.alpn.clone()).unwrap_or_default(),
        client_handshake: client.map(ClientHello::handshake),
        server_handshake: server.map(|s| ServerHandshake {
            version: version_name(s.version()).into(),
            cipher: s.cipher,
        }),
        ..TlsEvent::default()
    }
}

/// Judges the start of a TCP stream: a TLS handshake record holding a Client/ServerHello, an SSLv2 hello, or
/// (a flow picked up mid-session) a run of well-formed records.
pub fn probe_tls(p: &[u8]) -> Probe {
    let Some(&b0) = p.first() else {
        return Probe::Unsure;
    };
    if b0 & 0x80 != 0 {
        return probe_sslv2(p);
    }
    if b0 == CT_HANDSHAKE
        && let Some(v) = probe_hello(p)
    {
        return v;
    }
    probe_records(p)
}

/// The common case: `16 03 0x LL LL  HT LL LL LL  03 0x` with HT a Client/ServerHello. `None` when the record
/// is a handshake record of another kind (left to the record walker).
fn probe_hello(p: &[u8]) -> Option<Probe> {
    for (off, ok) in [(1, 3u8), (2, 4)] {
        match p.get(off) {
            None => return Some(Probe::Unsure),
            Some(&b) if (off == 1 && b != ok) || (off == 2 && b > ok) => {
                return Some(Probe::NotForUs);
            }
            _ => {}
        }
    }
    match p.get(5) {
        None => return Some(Probe::Unsure),
        Some(&HS_CLIENT_HELLO | &HS_SERVER_HELLO) => {}
        Some(_) => return None,
    }
    let rlen = usize::from(u16::from_be_bytes([*p.get(3)?, *p.get(4)?]));
    if !(4..=MAX_RECORD).contains(&rlen) {
        return Some(Probe::NotForUs);
    }
    Some(match (p.get(9), p.get(10)) {
        (None, _) | (Some(3), None) => Probe::Unsure,
        (Some(3), Some(&m)) if m <= 4 => Probe::Certain,
        _ => Probe::NotForUs,
    })
}

/// A stream picked up mid-session: records (types 20-24, version 3.0-3.4, length within bounds) that tile the
/// prefix. One complete record followed by the end of the prefix or by another valid header is enough (five
/// bytes of structure per header, and the length must land exactly); an incomplete first record is `Unsure`.
fn probe_records(p: &[u8]) -> Probe {
    let mut off = 0usize;
    let mut complete = 0;
    loop {
        let Some(h) = p.get(off..off + 5) else {
            if off == p.len() && complete > 0 {
                return Probe::Certain;
            }
            // A partial header: check what there is.
            let part = p.get(off..).unwrap_or(&[]);
            let bad = part
                .first()
                .is_some_and(|&t| !(CT_CCS..=CT_HEARTBEAT).contains(&t))
                || part.get(1).is_some_and(|&b| b != 3)
                || part.get(2).is_some_and(|&b| b > 4);
            return if bad {
                Probe::NotForUs
            } else if complete > 0 {
                Probe::Certain
            } else {
                Probe::Unsure
            };
        };
        let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
        if !(CT_CCS..=CT_HEARTBEAT).contains(&h[0])
            || h[1] != 3
            || h[2] > 4
            || len == 0
            || len > MAX_RECORD
        {
            return Probe::NotForUs;
        }
        if complete > 0 {
            return Probe::Certain; // a complete record, then another valid header
        }
        off += 5 + len;
        if off > p.len() {
            return Probe::Unsure;
        }
        complete += 1;
    }
}

/// SSLv2 record: 2-byte length with the top bit set, then MSG-CLIENT-HELLO (1) and version 3.x or 0.2.
fn probe_sslv2(p: &[u8]) -> Probe {
    match (p.get(2), p.get(3), p.get(4)) {
        (Some(&t), ..) if t != 1 => Probe::NotForUs,
        (None, ..) | (_, None, _) | (_, _, None) => Probe::Unsure,
        (Some(1), Some(3), Some(&m)) if m <= 4 => {
            let len = usize::from(u16::from_be_bytes([p[0] & 0x7f, p[1]]));
            if (9..=MAX_RECORD).contains(&len) {
                Probe::Certain
            } else {
                Probe::NotForUs
            }
        }
        (Some(1), Some(0), Some(2)) => Probe::Certain,
        _ => Probe::NotForUs,
    }
}

/// TLS over TCP.
#[derive(Clone, Copy, Debug, Default)]
pub struct TlsDetector;

impl Detector for TlsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Tls
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        probe_tls(ctx.prefix)
    }
    fn first_bytes(&self) -> ByteSet {
        // Record types 20-24, or an SSLv2 record length with the top bit set.
        ByteSet::ranges(&[(CT_CCS, CT_HEARTBEAT), (0x80, 0xff)])
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(TlsParser::new(limits, false)))
    }
}

/// Judges one UDP datagram as DTLS: a sequence of records whose headers (type 20..=25, version fe ff/fd/fc, or
/// OpenSSL's pre-RFC `01 00`) and lengths tile the datagram exactly.
///
/// RFC 7983 multiplexes STUN (first byte 0-3), DTLS (20-63) and RTP/RTCP (128-191) on one port, and WebRTC flows
/// start with STUN: those first bytes are `Unsure`, so the DTLS that follows is still seen.
pub fn probe_dtls(d: &[u8]) -> Probe {
    match d.first() {
        Some(0..=3 | 128..=191) => return Probe::Unsure,
        Some(20..=63) => {}
        _ => return Probe::NotForUs,
    }
    let mut r = Reader::new(d);
    let mut records = 0;
    while !r.is_empty() {
        let Ok(hdr) = r.take(13) else {
            return Probe::NotForUs;
        };
        let ty = hdr[0];
        let ver = u16::from_be_bytes([hdr[1], hdr[2]]);
        if !(CT_CCS..=25).contains(&ty) || !matches!(ver, 0xfeff | 0xfefd | 0xfefc | 0x0100) {
            return Probe::NotForUs;
        }
        // The first record of a flow has epoch 0 unless we picked the flow up late; do not insist.
        let len = usize::from(u16::from_be_bytes([hdr[11], hdr[12]]));
        if len > MAX_RECORD || r.take(len).is_err() {
            return Probe::NotForUs;
        }
        records += 1;
    }
    if records > 0 {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// DTLS over UDP.
#[derive(Clone, Copy, Debug, Default)]
pub struct DtlsDetector;

impl Detector for DtlsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Dtls
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        probe_dtls(ctx.data)
    }
    fn first_bytes(&self) -> ByteSet {
        // DTLS records, and the STUN and RTP ranges it shares a port with (RFC 7983).
        ByteSet::ranges(&[(0, 3), (20, 63), (128, 191)])
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(TlsParser::new(limits, true)))
    }
}

/// Where a direction's record cutter stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecState {
    /// Collecting a 5-byte record header (`hdr_len` bytes so far).
    Header,
    /// Inside a record body: `remaining` bytes, of content type `ty`.
    Body { ty: u8, remaining: usize },
    /// Not TLS any more (garbage): ignore the rest of this direction.
    Dead,
}

/// Handshake-layer state of one direction: reassembles messages we read, skips the others by length.
#[derive(Debug)]
struct HsState {
    /// Bytes of the current message's 4-byte header collected.
    hdr: [u8; 4],
    hdr_len: usize,
    /// Type and remaining body bytes of the current message, and whether we keep them.
    msg_type: u8,
    msg_remaining: usize,
    keep: bool,
    body: Vec<u8>,
    /// This is the server's direction (its Certificate message is kept).
    server: bool,
}

impl HsState {
    fn new() -> Self {
        HsState {
            hdr: [0; 4],
            hdr_len: 0,
            msg_type: 0,
            msg_remaining: 0,
            keep: false,
            body: Vec::new(),
            server: false,
        }
    }
}

#[derive(Debug)]
struct DirState {
    rec: RecState,
    rec_hdr: [u8; 5],
    rec_hdr_len: usize,
    hs: HsState,
    /// ChangeCipherSpec or application data seen: handshake records are encrypted from here on.
    encrypted: bool,
}

impl DirState {
    fn new() -> Self {
        DirState {
            rec: RecState::Header,
            rec_hdr: [0; 5],
            rec_hdr_len: 0,
            hs: HsState::new(),
            encrypted: false,
        }
    }
}

/// Messages completed while cutting a chunk, handled after the borrow of the direction ends.
enum HsMsg {
    ClientHello(Vec<u8>),
    ServerHello(Vec<u8>),
    /// The server's Certificate message body.
    Certificate(Vec<u8>),
    ServerDone,
}

/// The TLS/DTLS handshake parser of one flow.
#[derive(Debug)]
pub struct TlsParser {
    dtls: bool,
    cap: usize,
    dirs: [DirState; 2],
    client: Option<ClientHello>,
    server: Option<ServerHello>,
    /// The server's certificate chain, once its Certificate message was read.
    certs: Option<Vec<Vec<u8>>>,
    logged: bool,
    stats: ParserStats,
}

impl TlsParser {
    /// A parser for one flow; `dtls` for datagram framing.
    pub fn new(limits: &Limits, dtls: bool) -> Self {
        TlsParser {
            dtls,
            cap: limits.tls_handshake_cap,
            dirs: [DirState::new(), {
                let mut d = DirState::new();
                d.hs.server = true;
                d
            }],
            client: None,
            server: None,
            certs: None,
            logged: false,
            stats: ParserStats::default(),
        }
    }

    fn emit(&mut self, out: &mut dyn EventSink) {
        if self.logged || (self.client.is_none() && self.server.is_none()) {
            return;
        }
        self.logged = true;
        let proto = if self.dtls { 'd' } else { 't' };
        let mut ev = tls_event(self.client.as_ref(), self.server.as_ref(), proto);
        if let Some(chain) = self.certs.take() {
            ev.set_certificates(chain);
        }
        out.event(AppEvent::Tls(ev));
    }

    fn handle(&mut self, msgs: Vec<HsMsg>, out: &mut dyn EventSink) {
        for m in msgs {
            match m {
                HsMsg::ClientHello(b) => {
                    if self.client.is_none() {
                        match parse_client_hello(&b, self.dtls) {
                            Ok(ch) => self.client = Some(ch),
                            Err(_) => self.stats.malformed += 1,
                        }
                    }
                }
                HsMsg::ServerHello(b) => {
                    if self.server.is_none() {
                        match parse_server_hello(&b) {
                            Ok(sh) => {
                                let tls13 = sh.version() == 0x0304 || sh.version() == 0xfefc;
                                self.server = Some(sh);
                                if tls13 {
                                    self.emit(out);
                                }
                            }
                            Err(_) => self.stats.malformed += 1,
                        }
                    }
                }
                HsMsg::Certificate(b) => {
                    if self.certs.is_none() {
                        match certificate_list(&b) {
                            Some(chain) => self.certs = Some(chain),
                            None => self.stats.malformed += 1,
                        }
                    }
                }
                HsMsg::ServerDone => self.emit(out),
            }
        }
    }

    /// Cuts TLS records from a chunk of stream bytes in direction `d`; returns completed messages.
    fn cut_stream(&mut self, d: usize, mut data: &[u8], msgs: &mut Vec<HsMsg>) {
        let cap = self.cap;
        let Some(st) = self.dirs.get_mut(d) else {
            return;
        };
        while !data.is_empty() {
            match st.rec {
                RecState::Dead => return,
                RecState::Header => {
                    let take = (5 - st.rec_hdr_len).min(data.len());
                    st.rec_hdr[st.rec_hdr_len..st.rec_hdr_len + take]
                        .copy_from_slice(&data[..take]);
                    st.rec_hdr_len += take;
                    data = &data[take..];
                    if st.rec_hdr_len < 5 {
                        return;
                    }
                    st.rec_hdr_len = 0;
                    let h = st.rec_hdr;
                    let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
                    if !(CT_CCS..=CT_HEARTBEAT).contains(&h[0]) || h[1] != 3 || len > MAX_RECORD {
                        st.rec = RecState::Dead;
                        self.stats.gave_up += 1;
                        return;
                    }
                    if h[0] == CT_CCS || h[0] == CT_APPDATA {
                        st.encrypted = true;
                        if d == 1 {
                            msgs.push(HsMsg::ServerDone);
                        }
                    }
                    st.rec = RecState::Body {
                        ty: h[0],
                        remaining: len,
                    };
                    if len == 0 {
                        st.rec = RecState::Header;
                    }
                }
                RecState::Body { ty, remaining } => {
                    let take = remaining.min(data.len());
                    let (chunk, rest) = data.split_at(take);
                    data = rest;
                    if ty == CT_HANDSHAKE && !st.encrypted {
                        feed_handshake(&mut st.hs, chunk, cap, &mut self.stats, msgs);
                    }
                    let left = remaining - take;
                    st.rec = if left == 0 {
                        RecState::Header
                    } else {
                        RecState::Body {
                            ty,
                            remaining: left,
                        }
                    };
                }
            }
        }
    }

    /// One DTLS datagram: a sequence of records, each handshake fragment carrying its own offset.
    fn cut_datagram(&mut self, d: usize, data: &[u8], msgs: &mut Vec<HsMsg>) {
        let mut r = Reader::new(data);
        while !r.is_empty() {
            let Ok(hdr) = r.take(13) else {
                self.stats.malformed += 1;
                return;
            };
            let len = usize::from(u16::from_be_bytes([hdr[11], hdr[12]]));
            let Ok(body) = r.take(len) else {
                self.stats.malformed += 1;
                return;
            };
            let epoch = u16::from_be_bytes([hdr[3], hdr[4]]);
            match hdr[0] {
                CT_HANDSHAKE if epoch == 0 => {
                    let mut hr = Reader::new(body);
                    // type(1) length(3) message_seq(2) fragment_offset(3) fragment_length(3) fragment
                    while let (Ok(ty), Ok(_len), Ok(_seq), Ok(off), Ok(flen)) =
                        (hr.u8(), hr.u24(), hr.u16(), hr.u24(), hr.u24())
                    {
                        let Ok(frag) = hr.take(flen as usize) else {
                            break;
                        };
                        // Only unfragmented hellos are read (fragmented ones are rare and counted as cut).
                        if off == 0 && flen == _len {
                            match ty {
                                HS_CLIENT_HELLO if d == 0 => {
                                    msgs.push(HsMsg::ClientHello(frag.to_vec()))
                                }
                                HS_SERVER_HELLO if d == 1 => {
                                    msgs.push(HsMsg::ServerHello(frag.to_vec()))
                                }
                                HS_SERVER_HELLO_DONE if d == 1 => msgs.push(HsMsg::ServerDone),
                                _ => {}
                            }
                        } else if ty == HS_CLIENT_HELLO || ty == HS_SERVER_HELLO {
                            self.stats.bytes_cut += u64::from(flen);
                        }
                    }
                }
                CT_APPDATA | CT_CCS if d == 1 => msgs.push(HsMsg::ServerDone),
                CT_CCS..=25 => {}
                _ => {
                    self.stats.malformed += 1;
                    return;
                }
            }
        }
    }
}

/// Feeds handshake-record bytes: message headers are collected, bodies of hellos are kept (up to `cap`), all
/// else is skipped by length.
fn feed_handshake(
    hs: &mut HsState,
    mut data: &[u8],
    cap: usize,
    stats: &mut ParserStats,
    msgs: &mut Vec<HsMsg>,
) {
    while !data.is_empty() {
        if hs.msg_remaining == 0 && hs.hdr_len < 4 {
            let take = (4 - hs.hdr_len).min(data.len());
            hs.hdr[hs.hdr_len..hs.hdr_len + take].copy_from_slice(&data[..take]);
            hs.hdr_len += take;
            data = &data[take..];
            if hs.hdr_len < 4 {
                return;
            }
            hs.msg_type = hs.hdr[0];
            hs.msg_remaining = (usize::from(hs.hdr[1]) << 16)
                | (usize::from(hs.hdr[2]) << 8)
                | usize::from(hs.hdr[3]);
            let wanted = matches!(hs.msg_type, HS_CLIENT_HELLO | HS_SERVER_HELLO)
                || (hs.msg_type == HS_CERTIFICATE && hs.server);
            hs.keep = wanted && hs.msg_remaining <= cap;
            if wanted && !hs.keep {
                stats.bytes_cut += hs.msg_remaining as u64;
            }
            hs.body.clear();
            if hs.msg_remaining == 0 {
                finish_msg(hs, msgs);
            }
            continue;
        }
        let take = hs.msg_remaining.min(data.len());
        if hs.keep {
            hs.body.extend_from_slice(&data[..take]);
        }
        data = &data[take..];
        hs.msg_remaining -= take;
        if hs.msg_remaining == 0 {
            finish_msg(hs, msgs);
        }
    }
}

fn finish_msg(hs: &mut HsState, msgs: &mut Vec<HsMsg>) {
    hs.hdr_len = 0;
    match hs.msg_type {
        HS_CLIENT_HELLO if hs.keep => msgs.push(HsMsg::ClientHello(std::mem::take(&mut hs.body))),
        HS_SERVER_HELLO if hs.keep => msgs.push(HsMsg::ServerHello(std::mem::take(&mut hs.body))),
        HS_CERTIFICATE if hs.keep => msgs.push(HsMsg::Certificate(std::mem::take(&mut hs.body))),
        HS_SERVER_HELLO_DONE => msgs.push(HsMsg::ServerDone),
        _ => {}
    }
    hs.keep = false;
}

impl Parser for TlsParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.logged
            && self
                .dirs
                .iter()
                .all(|d| d.encrypted || d.rec == RecState::Dead)
        {
            return; // nothing left to learn: the cheap path for the bulk of a TLS flow
        }
        let mut msgs = Vec::new();
        if self.dtls {
            self.cut_datagram(dir.index(), data, &mut msgs);
        } else {
            self.cut_stream(dir.index(), data, &mut msgs);
        }
        // A hello from the "wrong" side (flow picked up from its reply) is still a hello: the parser keys on the
        // message type, not on which way it went.
        self.handle(msgs, out);
    }

    fn gap(&mut self, dir: Direction, _len: u64) {
        if !self.dtls
            && let Some(st) = self.dirs.get_mut(dir.index())
        {
            // Record boundaries are lost: give up on this direction.
            if st.rec != RecState::Dead {
                st.rec = RecState::Dead;
                self.stats.gave_up += 1;
            }
        }
    }

    fn finish(&mut self, out: &mut dyn EventSink) {
        self.emit(out);
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn certificate_lists_and_hostile_lengths() {
        // Two certificates of 2 and 1 bytes.
        let body = [0, 0, 9, 0, 0, 2, 0xaa, 0xbb, 0, 0, 1, 0xcc];
        assert_eq!(
            certificate_list(&body),
            Some(vec![vec![0xaa, 0xbb], vec![0xcc]])
        );
        assert_eq!(certificate_list(&[0, 0, 0]), Some(vec![]));
        for bad in [
            &[][..],
            &[0, 0],
            &[0, 0, 9, 0, 0, 2, 0xaa],
            &[0, 0, 4, 0, 0, 9, 0xaa],
            &[0xff, 0xff, 0xff],
        ] {
            assert_eq!(certificate_list(bad), None, "{bad:?}");
        }
        // A leaf that is not X.509 keeps the chain and its fingerprint, and no text fields.
        let mut ev = TlsEvent::default();
        ev.set_certificates(vec![vec![1, 2, 3]]);
        assert_eq!(
            ev.fingerprint.as_deref(),
            Some("70:37:80:71:98:c2:2a:7d:2b:08:07:37:1d:76:37:79:a8:4f:df:cf")
        );
        assert_eq!((ev.subject, ev.serial), (None, None));
        assert_eq!(ev.certificates.len(), 1);
    }

    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The ClientHello of RFC 9001 Appendix A.2 (TLS 1.3, SNI example.com, ALPN "alpn"), handshake header included.
    const CLIENT_HELLO: &str = "\
        010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868\
        04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578\
        616d706c652e636f6dff01000100000a00080006001d00170018001000070005\
        04616c706e000500050100000000003300260024001d00209370b2c9caa47fba\
        baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400\
        0d0010000e0403050306030203080408050806002d00020101001c0002400100\
        3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000\
        75300901100f088394c8f03e51570806048000ffff";

    /// The ServerHello of RFC 9001 Appendix A.3 (TLS 1.3, TLS_AES_128_GCM_SHA256).
    const SERVER_HELLO: &str = "\
        020000560303eefce7f7b37ba1d1632e96677825ddf73988cfc79825df566dc5430b9a045a1200130100002e00330024001d00\
        209d3c940d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00020304";

    fn record(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut r = vec![ty, 3, 3];
        r.extend_from_slice(&(body.len() as u16).to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    fn run(conv: &[(Direction, Vec<u8>)], cuts: &[usize]) -> (Vec<AppEvent>, ParserStats) {
        let mut p = TlsParser::new(&Limits::default(), false);
        let mut out = Vec::new();
        for (dir, data) in conv {
            let mut last = 0;
            for &c in cuts {
                if c > last && c < data.len() {
                    p.parse(*dir, &data[last..c], 0, &mut out);
                    last = c;
                }
            }
            p.parse(*dir, &data[last..], 0, &mut out);
        }
        p.finish(&mut out);
        (out, p.stats())
    }

    fn tls13_conversation() -> Vec<(Direction, Vec<u8>)> {
        let ch = unhex(CLIENT_HELLO);
        // The ClientHello split over two records, as a long hello may be.
        let mut c = record(CT_HANDSHAKE, &ch[..100]);
        c.extend_from_slice(&record(CT_HANDSHAKE, &ch[100..]));
        c.extend_from_slice(&record(CT_CCS, &[1]));
        c.extend_from_slice(&record(CT_APPDATA, &[0xaa; 300]));
        let mut s = record(CT_HANDSHAKE, &unhex(SERVER_HELLO));
        s.extend_from_slice(&record(CT_CCS, &[1]));
        s.extend_from_slice(&record(CT_APPDATA, &[0xbb; 2000]));
        vec![(Direction::ToServer, c), (Direction::ToClient, s)]
    }

    #[test]
    fn parses_rfc_hellos() {
        let ch = parse_client_hello(&unhex(CLIENT_HELLO)[4..], false).unwrap();
        assert_eq!(ch.sni.as_deref(), Some("example.com"));
        assert_eq!(ch.alpn, vec!["alpn".to_string()]);
        assert_eq!(ch.ciphers, vec![0x1301, 0x1302]);
        assert_eq!(ch.supported_versions, vec![0x0304]);
        assert_eq!(ch.max_version(), 0x0304);
        assert_eq!(
            ch.ja3().string,
            "771,4865-4866,0-65281-10-16-5-51-43-13-45-28-57,29-23-24,"
        );
        let sh = parse_server_hello(&unhex(SERVER_HELLO)[4..]).unwrap();
        assert_eq!((sh.version(), sh.cipher), (0x0304, 0x1301));
        assert_eq!(sh.ja3s().string, "771,4865,51-43");
    }

    #[test]
    fn tls13_event_at_any_split() {
        let conv = tls13_conversation();
        let (whole, stats) = run(&conv, &[]);
        assert_eq!(stats, ParserStats::default());
        let [AppEvent::Tls(t)] = whole.as_slice() else {
            panic!("{whole:?}")
        };
        assert_eq!(t.sni.as_deref(), Some("example.com"));
        assert_eq!(t.version, "TLS 1.3");
        assert_eq!(t.client_alpns, vec!["alpn".to_string()]);
        assert_eq!(t.server_handshake.as_ref().map(|s| s.cipher), Some(0x1301));
        assert_eq!(
            t.client_handshake.as_ref().map(|c| c.version.as_str()),
            Some("TLS 1.3")
        );
        assert!(
            t.ja4
                .as_deref()
                .is_some_and(|j| j.starts_with("t13d0211an_"))
        );
        for cut in 1..conv[1].1.len().max(conv[0].1.len()) {
            assert_eq!(run(&conv, &[cut]).0, whole, "split at {cut}");
        }
        let all: Vec<usize> = (1..2500).collect();
        assert_eq!(run(&conv, &all).0, whole);
    }

    #[test]
    fn several_handshake_messages_in_one_record() {
        // TLS 1.2: ServerHello, Certificate (skipped by length), ServerHelloDone in one record.
        let mut sh = unhex(SERVER_HELLO);
        // Drop the supported_versions extension: a TLS 1.2 ServerHello (extensions length 0x2e -> 0x28).
        sh.truncate(sh.len() - 6);
        sh[3] -= 6;
        let ext_len_at = sh.len() - 0x28 - 2;
        sh[ext_len_at + 1] = 0x28;
        let mut rec = sh.clone();
        rec.extend_from_slice(&[11, 0, 0, 7, 0, 0, 4, 0, 0, 1, 0x30]);
        rec.extend_from_slice(&[HS_SERVER_HELLO_DONE, 0, 0, 0]);
        let ch = record(CT_HANDSHAKE, &unhex(CLIENT_HELLO));
        let conv = vec![
            (Direction::ToServer, ch),
            (Direction::ToClient, record(CT_HANDSHAKE, &rec)),
        ];
        let (ev, stats) = run(&conv, &[]);
        assert_eq!(stats, ParserStats::default());
        let [AppEvent::Tls(t)] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert_eq!(t.version, "TLS 1.2");
        assert_eq!(
            t.ja3s.as_ref().map(|j| j.string.as_str()),
            Some("771,4865,51")
        );
    }

    #[test]
    fn detection() {
        let ch = record(CT_HANDSHAKE, &unhex(CLIENT_HELLO));
        assert_eq!(probe_tls(&ch), Probe::Certain);
        for n in 0..11 {
            assert_eq!(probe_tls(&ch[..n]), Probe::Unsure, "{n} bytes");
        }
        // Mid-session: application data records.
        let mut mid = record(CT_APPDATA, &[1; 40]);
        assert_eq!(probe_tls(&mid[..20]), Probe::Unsure);
        assert_eq!(probe_tls(&mid), Probe::Certain);
        mid.extend_from_slice(&[CT_APPDATA, 3]);
        assert_eq!(probe_tls(&mid), Probe::Certain);
        assert_eq!(probe_tls(b"GET / HTTP/1.1\r\n"), Probe::NotForUs);
        assert_eq!(probe_tls(&[0x17, 0x03, 0x03, 0x00, 0x00]), Probe::NotForUs);
        assert_eq!(probe_tls(&[0x16, 0x03, 0x09]), Probe::NotForUs);
        // SSLv2-compatible ClientHello.
        assert_eq!(
            probe_tls(&[0x80, 0x2e, 0x01, 0x03, 0x01, 0x00, 0x15]),
            Probe::Certain
        );
    }

    #[test]
    fn dtls_client_hello() {
        let ch = unhex(CLIENT_HELLO);
        // DTLS body: version, random, session id, cookie (empty), then the rest.
        let mut body = vec![0xfe, 0xfd];
        body.extend_from_slice(&ch[6..6 + 33]);
        body.push(0);
        body.extend_from_slice(&ch[6 + 33..]);
        let mut hs = vec![HS_CLIENT_HELLO];
        hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&[0, 0, 0, 0, 0]);
        hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&body);
        let mut dg = vec![CT_HANDSHAKE, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0];
        dg.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        dg.extend_from_slice(&hs);
        assert_eq!(probe_dtls(&dg), Probe::Certain);
        assert_eq!(probe_dtls(&dg[..dg.len() - 1]), Probe::NotForUs);
        assert_eq!(
            probe_dtls(&[0x00, 0x01, 0x00, 0x08, 0x21, 0x12, 0xa4, 0x42]),
            Probe::Unsure,
            "STUN first"
        );
        let mut p = TlsParser::new(&Limits::default(), true);
        let mut out = Vec::new();
        p.parse(Direction::ToServer, &dg, 0, &mut out);
        p.finish(&mut out);
        let [AppEvent::Tls(t)] = out.as_slice() else {
            panic!("{out:?}")
        };
        assert_eq!(t.sni.as_deref(), Some("example.com"));
        assert!(t.ja4.as_deref().is_some_and(|j| j.starts_with('d')));
    }

    #[test]
    fn oversized_hello_is_cut_and_counted() {
        let limits = Limits {
            tls_handshake_cap: 100,
            ..Limits::default()
        };
        let mut p = TlsParser::new(&limits, false);
        let mut out = Vec::new();
        p.parse(
            Direction::ToServer,
            &record(CT_HANDSHAKE, &unhex(CLIENT_HELLO)),
            0,
            &mut out,
        );
        p.finish(&mut out);
        assert!(out.is_empty());
        assert_eq!(p.stats().bytes_cut, 0xed);
    }

    #[test]
    fn grease_and_versions() {
        assert!(is_grease(0x0a0a) && is_grease(0xfafa) && !is_grease(0x0a1a) && !is_grease(0x1301));
        assert_eq!(version_name(0x0303), "TLS 1.2");
        assert_eq!(version_name(0x0301), "TLSv1");
        assert_eq!(version_name(0x1234), "UNDETERMINED");
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn arbitrary_bytes_never_panic(a in proptest::collection::vec(any::<u8>(), 0..800),
                                           b in proptest::collection::vec(any::<u8>(), 0..800),
                                           cuts in proptest::collection::vec(0usize..800, 0..6)) {
                let _ = (probe_tls(&a), probe_dtls(&a));
                let _ = parse_client_hello(&a, false);
                let _ = parse_client_hello(&a, true);
                let _ = parse_server_hello(&a);
                let mut cuts = cuts;
                cuts.sort_unstable();
                let _ = run(&[(Direction::ToServer, a.clone()), (Direction::ToClient, b)], &cuts);
                let mut p = TlsParser::new(&Limits::default(), true);
                p.parse(Direction::ToServer, &a, 0, &mut Vec::new());
            }

            #[test]
            fn mutated_hello_never_panics(pos in 0usize..260, byte in any::<u8>()) {
                let mut ch = unhex(CLIENT_HELLO);
                let n = ch.len();
                ch[pos % n] = byte;
                let _ = parse_client_hello(&ch[4..], false).map(|c| (c.ja3(), c.ja4('t')));
                let _ = run(&[(Direction::ToServer, record(CT_HANDSHAKE, &ch))], &[]);
            }

            #[test]
            fn any_splits_same_event(cuts in proptest::collection::vec(0usize..2400, 0..10)) {
                let conv = tls13_conversation();
                let mut cuts = cuts;
                cuts.sort_unstable();
                prop_assert_eq!(run(&conv, &cuts).0, run(&conv, &[]).0);
            }
        }
    }
}
