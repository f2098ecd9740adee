//! ClientHello and ServerHello: a bounds-checked reader, the fields EVE logs, and the JA3/JA3S/JA4 fingerprints.

use md5::Digest as _;
use sha2::Sha256;

use super::*;

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
    /// The 32 random bytes (the rules' `tls.random` to the server).
    pub random: [u8; 32],
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
    /// The 32 random bytes (the rules' `tls.random` to the client).
    pub random: [u8; 32],
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
    pub(super) buf: &'a [u8],
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

pub(super) fn u16_list(b: &[u8]) -> Vec<u16> {
    b.chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect()
}

/// Most entries kept from any list in a hello (cipher suites, extensions, groups...): a hostile hello cannot make
/// us allocate more than a few KiB.
pub(super) const MAX_LIST: usize = 512;

pub(super) fn push_capped<T>(v: &mut Vec<T>, x: T) {
    if v.len() < MAX_LIST {
        v.push(x);
    }
}

pub(super) fn parse_alpn(body: &[u8]) -> Result<Vec<String>, HelloError> {
    let mut r = Reader::new(body);
    let mut list = Reader::new(r.vec16()?);
    let mut out = Vec::new();
    while !list.is_empty() {
        let p = list.vec8()?;
        push_capped(&mut out, String::from_utf8_lossy(p).into_owned());
    }
    Ok(out)
}

pub(super) fn parse_sni(body: &[u8]) -> Result<Option<String>, HelloError> {
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
    ch.random.copy_from_slice(r.take(32)?);
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
    sh.random.copy_from_slice(r.take(32)?);
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
///
/// The digits come from `itoa`, not `write!`: a client hello's JA3 joins its ciphers, extensions and groups (often
/// 40 values and more), and `core::fmt` per value cost about 230 instructions each (callgrind).
pub(super) fn join<T: itoa::Integer>(it: impl Iterator<Item = T>, sep: &str) -> String {
    let mut s = String::with_capacity(128);
    let mut digits = itoa::Buffer::new();
    for (i, x) in it.enumerate() {
        if i > 0 {
            s.push_str(sep);
        }
        s.push_str(digits.format(x));
    }
    s
}

/// Values as four lowercase hex digits joined by commas (JA4's list form).
///
/// The digits come from a table, not `write!(s, "{x:04x}")`: a client hello's JA4 joins its ciphers and extensions
/// (often 30 and more), and `core::fmt` per value made this function about 4,500 instructions a call, 2.5% of
/// `inspect`'s single-threaded run on the merged nDPI trace (callgrind).
pub(super) fn join_hex4(it: impl Iterator<Item = u16>) -> String {
    let mut s = String::with_capacity(128);
    for (i, x) in it.enumerate() {
        if i > 0 {
            s.push(',');
        }
        let [hi, lo] = x.to_be_bytes();
        push_hex(&mut s, hi, false);
        push_hex(&mut s, lo, false);
    }
    s
}

/// Appends `b` as two hex digits, lowercase or `upper`case (`{b:02x}` / `{b:02X}` without `core::fmt`).
#[inline]
pub(crate) fn push_hex(s: &mut String, b: u8, upper: bool) {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    s.push(char::from(digits[usize::from(b >> 4)]));
    s.push(char::from(digits[usize::from(b & 15)]));
}

pub(crate) fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        push_hex(&mut s, x, false);
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
            join(self.ciphers.iter().filter(ng).copied(), "-"),
            join(self.extensions.iter().filter(ng).copied(), "-"),
            join(self.groups.iter().filter(ng).copied(), "-"),
            join(self.point_formats.iter().copied(), "-"),
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

pub(super) fn trunc_sha(s: &str) -> String {
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
            join(self.extensions.iter().copied(), "-")
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
        client_version: client.map_or(0, |c| c.legacy_version),
        server_version: server.map_or(0, ServerHello::version),
        client_random: client.map(|c| Box::new(c.random)),
        server_random: server.map(|s| Box::new(s.random)),
        ..TlsEvent::default()
    }
}
