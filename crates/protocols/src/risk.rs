//! # Flow risks from what the parsers saw
//!
//! nDPI attaches *flow risks* to flows (`NDPI_TLS_SELFSIGNED_CERTIFICATE`, `NDPI_HTTP_SUSPICIOUS_USER_AGENT`, ...);
//! users compare them with ndpiReader's `[Risk: ...]`. The vocabulary is [`FlowRisk`] (nDPI's names and labels,
//! one table in `flowbundle-types`); this module decides the risks an application event shows, written from the
//! protocols' specifications, not from nDPI's code:
//!
//! * **TLS / DTLS** ([`tls_risks`]): TLS 1.1 or older negotiated (RFC 8996 deprecates them), a cipher suite without
//!   forward secrecy or with a broken cipher ([`weak_cipher`], from the IANA registry's key exchange and cipher
//!   columns), a ClientHello without `server_name` (RFC 6066), ALPN without SNI, no ALPN at all (web browsers always
//!   offer `h2`/`http/1.1`), a certificate whose issuer is its subject, that was not valid at the handshake's time,
//!   or that names none of the SNI's names (RFC 6125 wildcard matching), and an IP address as SNI.
//! * **QUIC**: the same checks on the ClientHello inside the Initial (no SNI, ALPN without SNI, numeric SNI).
//! * **HTTP** ([`http_risks`]): a request without a User-Agent or with an empty one, an IP address as Host, an
//!   executable named by the response's Content-Type, credentials in an `Authorization: Basic` header.
//! * **DNS** ([`dns_risks`]): a UDP message over 512 bytes (RFC 1035's limit without EDNS), one too large for an
//!   Ethernet frame (so fragmented on the way), a queried name with a label of [`LONG_DNS_LABEL`] bytes or more (the
//!   shape of DNS tunnels, which carry data in labels).
//!
//! The engine adds the risks that need the whole flow (one direction only, a protocol off its ports, a protocol
//! unsafe by design, see `flowbundle_inspect`). Each check looks at fields the parser already decoded, once per
//! event (per handshake or transaction, never per packet), and allocates nothing.

use crate::{AppEvent, dns::DnsEvent, http::HttpEvent, quic::QuicEvent, tls::TlsEvent};
pub use flowbundle_types::{FlowRisk, RiskSet};

/// A DNS label at least this long is unusual for a host name and usual for a tunnel (hex or base32 payload in
/// labels; RFC 1035 allows 63).
pub const LONG_DNS_LABEL: usize = 48;

/// The largest UDP payload of an unfragmented IPv4 datagram on Ethernet (1500 - 20 - 8).
const ETHERNET_UDP_PAYLOAD: usize = 1472;

/// The risks one application event shows. `ts_ns` is the capture time of the event (a certificate's validity is
/// judged against it).
pub fn event_risks(event: &AppEvent, ts_ns: u64) -> RiskSet {
    match event {
        AppEvent::Tls(t) => tls_risks(t, ts_ns),
        AppEvent::Quic(q) => quic_risks(q),
        AppEvent::Http(h) => http_risks(h),
        AppEvent::Dns(d) => dns_risks(d),
        _ => RiskSet::EMPTY,
    }
}

/// Whether a TLS cipher suite is weak: the key exchange gives no forward secrecy (static RSA or static
/// (EC)DH key exchange), there is no key exchange authentication (anonymous), or the cipher is NULL, export
/// grade, DES, 3DES, RC4 or IDEA. From the IANA TLS Cipher Suites registry; unknown values are not judged.
pub fn weak_cipher(suite: u16) -> bool {
    match suite {
        // SSL 3 / TLS 1.0 era: NULL, export, RC4, IDEA, DES, 3DES, static DH and RSA, anonymous DH. Only the
        // ephemeral DH suites with AES are sound (DHE_DSS/DHE_RSA with AES-128/256-CBC-SHA).
        0x0001..=0x0031 | 0x0034..=0x0037 | 0x003A..=0x003C => true,
        0x0032 | 0x0033 | 0x0038 | 0x0039 => false,
        // TLS_RSA_WITH_AES_256_CBC_SHA256, static DH with SHA-256, anonymous.
        0x003D..=0x003F => true,
        // Camellia-128: RSA, static DH, anonymous (0x0044/0x0045 are DHE).
        0x0041..=0x0043 | 0x0046 => true,
        // Static DH and anonymous with SHA-256 (0x0067, 0x006A, 0x006B are DHE).
        0x0068 | 0x0069 | 0x006C | 0x006D => true,
        // Camellia-256 and SEED: RSA, static DH, anonymous.
        0x0084..=0x0086 | 0x0089 | 0x0096..=0x0098 | 0x009B => true,
        // RSA and static DH with AES-GCM, anonymous AES-GCM.
        0x009C | 0x009D | 0x00A0 | 0x00A1 | 0x00A4..=0x00A7 => true,
        // Static ECDH, ECDHE with NULL, RC4 or 3DES, anonymous ECDH.
        0xC001..=0xC008 | 0xC00B..=0xC012 | 0xC015..=0xC019 => true,
        // Static ECDH with SHA-256/384 and GCM.
        0xC025 | 0xC026 | 0xC029 | 0xC02A | 0xC02D | 0xC02E | 0xC031 | 0xC032 => true,
        // RSA with AES-CCM.
        0xC09C..=0xC0A3 => true,
        _ => false,
    }
}

/// Whether `host` is an IPv4 or IPv6 address literal (brackets allowed).
pub fn is_ip_literal(host: &str) -> bool {
    let h = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    h.parse::<std::net::IpAddr>().is_ok()
}

/// Whether the version as the TLS parser spells it is TLS 1.1 or older.
fn obsolete_version(v: &str) -> bool {
    matches!(v, "SSLv2" | "SSLv3" | "TLSv1" | "TLS 1.1" | "DTLS 1.0")
}

/// Whether a certificate name (`*.example.com` allowed as the leftmost label, RFC 6125 §6.4.3) covers `host`.
fn name_covers(pattern: &str, host: &str) -> bool {
    if pattern.eq_ignore_ascii_case(host) {
        return true;
    }
    match pattern.strip_prefix("*.") {
        Some(rest) => host
            .split_once('.')
            .is_some_and(|(first, tail)| !first.is_empty() && tail.eq_ignore_ascii_case(rest)),
        None => false,
    }
}

/// The risks of a TLS or DTLS handshake (see the module documentation).
pub fn tls_risks(t: &TlsEvent, ts_ns: u64) -> RiskSet {
    let mut r = RiskSet::EMPTY;
    if obsolete_version(&t.version) {
        r.insert(FlowRisk::TlsObsoleteVersion);
    }
    if let Some(sh) = &t.server_handshake
        && weak_cipher(sh.cipher)
    {
        r.insert(FlowRisk::TlsWeakCipher);
    }
    // SNI and ALPN are expected from clients offering TLS 1.2 or later (older clients predate them in practice).
    if let Some(ch) = &t.client_handshake
        && matches!(
            ch.version.as_str(),
            "TLS 1.2" | "TLS 1.3" | "DTLS 1.2" | "DTLS 1.3"
        )
    {
        let (sni, alpn) = (ch.exts.contains(&0), ch.exts.contains(&16));
        if !sni {
            r.insert(FlowRisk::TlsMissingSni);
            if alpn {
                r.insert(FlowRisk::TlsAlpnSniMismatch);
            }
        }
        if !alpn {
            r.insert(FlowRisk::TlsNotCarryingHttps);
        }
    }
    if let Some(sni) = t.sni.as_deref() {
        if is_ip_literal(sni) {
            r.insert(FlowRisk::NumericIpHost);
        }
        if let Some(c) = &t.cert_check
            && !c.names.is_empty()
            && !c.names.iter().any(|n| name_covers(n, sni))
        {
            r.insert(FlowRisk::TlsCertificateMismatch);
        }
    }
    if let (Some(s), Some(i)) = (&t.subject, &t.issuerdn)
        && s == i
    {
        r.insert(FlowRisk::TlsSelfsignedCertificate);
    }
    if let Some(c) = &t.cert_check {
        let now = i64::try_from(ts_ns / 1_000_000_000).unwrap_or(i64::MAX);
        if now < c.not_before || now > c.not_after {
            r.insert(FlowRisk::TlsCertificateExpired);
        }
    }
    r
}

/// The risks of a QUIC Initial's ClientHello.
pub fn quic_risks(q: &QuicEvent) -> RiskSet {
    let mut r = RiskSet::EMPTY;
    // gQUIC before the IETF versions carries no TLS ClientHello: nothing to judge.
    if q.ja4.is_none() {
        return r;
    }
    match q.sni.as_deref() {
        None => {
            r.insert(FlowRisk::TlsMissingSni);
            if !q.alpn.is_empty() {
                r.insert(FlowRisk::TlsAlpnSniMismatch);
            }
        }
        Some(sni) if is_ip_literal(sni) => r.insert(FlowRisk::NumericIpHost),
        Some(_) => {}
    }
    r
}

/// Content types that announce an executable program.
const EXECUTABLE_TYPES: &[&str] = &[
    "application/x-msdownload",
    "application/x-dosexec",
    "application/x-msdos-program",
    "application/x-executable",
    "application/vnd.microsoft.portable-executable",
    "application/java-vm",
    "application/x-java-applet",
];

/// The risks of one HTTP transaction.
pub fn http_risks(h: &HttpEvent) -> RiskSet {
    let mut r = RiskSet::EMPTY;
    if h.http_method.is_some()
        && h.http_user_agent
            .as_deref()
            .is_none_or(|ua| ua.trim().is_empty())
    {
        r.insert(FlowRisk::HttpSuspiciousUserAgent);
    }
    if h.hostname.as_deref().is_some_and(is_ip_literal) {
        r.insert(FlowRisk::NumericIpHost);
    }
    if let Some(ct) = &h.http_content_type {
        let mime = ct.split(';').next().unwrap_or("").trim();
        if EXECUTABLE_TYPES
            .iter()
            .any(|t| t.eq_ignore_ascii_case(mime))
        {
            r.insert(FlowRisk::BinaryApplicationTransfer);
        }
    }
    if h.basic_credentials {
        r.insert(FlowRisk::ClearTextCredentials);
    }
    r
}

/// The risks of one DNS message.
pub fn dns_risks(d: &DnsEvent) -> RiskSet {
    let mut r = RiskSet::EMPTY;
    if d.udp_len > 512 {
        r.insert(FlowRisk::DnsLargePacket);
    }
    if d.udp_len > ETHERNET_UDP_PAYLOAD {
        r.insert(FlowRisk::DnsFragmented);
    }
    if !d.is_response()
        && d.rrname
            .as_deref()
            .is_some_and(|n| n.split('.').any(|l| l.len() >= LONG_DNS_LABEL))
    {
        r.insert(FlowRisk::DnsSuspiciousTraffic);
    }
    r
}

/// Whether a body starts like an executable: a DOS/Windows `MZ` header, an ELF header or a Java class file.
pub fn executable_magic(body: &[u8]) -> bool {
    body.starts_with(b"MZ")
        || body.starts_with(b"\x7fELF")
        || body.starts_with(&[0xca, 0xfe, 0xba, 0xbe])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::{CertCheck, ClientHandshake, ServerHandshake};

    fn hello(exts: &[u16]) -> Option<ClientHandshake> {
        Some(ClientHandshake {
            version: "TLS 1.2".into(),
            exts: exts.to_vec(),
            ..ClientHandshake::default()
        })
    }

    #[test]
    fn tls_handshakes() {
        // A modern browser handshake: SNI, ALPN, ECDHE-GCM, TLS 1.3, a certificate valid now naming the host.
        let good = TlsEvent {
            sni: Some("www.example.com".into()),
            version: "TLS 1.3".into(),
            client_handshake: hello(&[0, 16, 43]),
            server_handshake: Some(ServerHandshake {
                version: "TLS 1.3".into(),
                cipher: 0x1301,
            }),
            subject: Some("CN=www.example.com".into()),
            issuerdn: Some("CN=Example CA".into()),
            cert_check: Some(Box::new(CertCheck {
                not_before: 1_600_000_000,
                not_after: 1_700_000_000,
                names: vec!["*.example.com".into()],
                sans: Vec::new(),
            })),
            ..TlsEvent::default()
        };
        let now = 1_650_000_000 * 1_000_000_000;
        assert_eq!(tls_risks(&good, now), RiskSet::EMPTY);
        let later = 1_800_000_000 * 1_000_000_000;
        let risks: Vec<_> = tls_risks(&good, later).iter().collect();
        assert_eq!(risks, [FlowRisk::TlsCertificateExpired]);

        // TLS 1.0 with static RSA, no SNI, no ALPN, self-signed, for another name.
        let bad = TlsEvent {
            sni: None,
            version: "TLSv1".into(),
            client_handshake: hello(&[10, 11]), // offers TLS 1.2, the server picks 1.0
            server_handshake: Some(ServerHandshake {
                version: "TLSv1".into(),
                cipher: 0x002F, // TLS_RSA_WITH_AES_128_CBC_SHA
            }),
            subject: Some("CN=router".into()),
            issuerdn: Some("CN=router".into()),
            ..TlsEvent::default()
        };
        let r = tls_risks(&bad, now);
        for risk in [
            FlowRisk::TlsObsoleteVersion,
            FlowRisk::TlsWeakCipher,
            FlowRisk::TlsMissingSni,
            FlowRisk::TlsNotCarryingHttps,
            FlowRisk::TlsSelfsignedCertificate,
        ] {
            assert!(r.contains(risk), "{risk:?} in {r:?}");
        }
        assert!(!r.contains(FlowRisk::TlsAlpnSniMismatch));

        // ALPN without SNI; an IP address as SNI that the certificate does not name.
        let alpn_only = TlsEvent {
            client_handshake: hello(&[16]),
            ..TlsEvent::default()
        };
        let r = tls_risks(&alpn_only, now);
        assert!(r.contains(FlowRisk::TlsAlpnSniMismatch) && r.contains(FlowRisk::TlsMissingSni));
        let numeric = TlsEvent {
            sni: Some("192.0.2.7".into()),
            client_handshake: hello(&[0, 16]),
            cert_check: Some(Box::new(CertCheck {
                not_before: 0,
                not_after: i64::MAX,
                names: vec!["www.example.com".into()],
                sans: Vec::new(),
            })),
            ..TlsEvent::default()
        };
        let r: Vec<_> = tls_risks(&numeric, now).iter().collect();
        assert_eq!(
            r,
            [FlowRisk::TlsCertificateMismatch, FlowRisk::NumericIpHost]
        );
    }

    #[test]
    fn cipher_suites_from_the_registry() {
        for weak in [
            0x0004, 0x0005, 0x000A, 0x002F, 0x0035, 0x003C, 0x003D, 0x009C, 0x009D, 0xC011, 0xC012,
        ] {
            assert!(weak_cipher(weak), "{weak:#06x}");
        }
        // ECDHE and DHE with AES-GCM, ChaCha20 and CBC, and the TLS 1.3 suites.
        for sound in [
            0x1301, 0x1302, 0x1303, 0xC02B, 0xC02F, 0xC030, 0xCCA8, 0xC013, 0xC014, 0x0033, 0x009E,
        ] {
            assert!(!weak_cipher(sound), "{sound:#06x}");
        }
    }

    #[test]
    fn wildcards_cover_one_label() {
        assert!(name_covers("*.example.com", "a.example.com"));
        assert!(!name_covers("*.example.com", "a.b.example.com"));
        assert!(!name_covers("*.example.com", "example.com"));
        assert!(name_covers("Example.com", "example.COM"));
    }

    #[test]
    fn http_transactions() {
        let ok = HttpEvent {
            http_method: Some("GET".into()),
            hostname: Some("example.com".into()),
            http_user_agent: Some("curl/8.0".into()),
            ..HttpEvent::default()
        };
        assert_eq!(http_risks(&ok), RiskSet::EMPTY);
        let bare = HttpEvent {
            http_method: Some("GET".into()),
            hostname: Some("10.1.2.3".into()),
            http_user_agent: Some(" ".into()),
            http_content_type: Some("application/x-msdownload; charset=binary".into()),
            basic_credentials: true,
            ..HttpEvent::default()
        };
        let r: Vec<_> = http_risks(&bare).iter().collect();
        assert_eq!(
            r,
            [
                FlowRisk::BinaryApplicationTransfer,
                FlowRisk::HttpSuspiciousUserAgent,
                FlowRisk::NumericIpHost,
                FlowRisk::ClearTextCredentials
            ]
        );
        // A response seen without its request says nothing about the user agent.
        let reply_only = HttpEvent {
            status: Some(200),
            ..HttpEvent::default()
        };
        assert_eq!(http_risks(&reply_only), RiskSet::EMPTY);
        assert!(is_ip_literal("[2001:db8::1]") && !is_ip_literal("example.com"));
    }

    #[test]
    fn dns_messages() {
        let q = |name: &str, len: usize| DnsEvent {
            kind: "request".into(),
            rrname: Some(name.into()),
            udp_len: len,
            ..DnsEvent::default()
        };
        assert_eq!(dns_risks(&q("www.example.com", 40)), RiskSet::EMPTY);
        let tunnel = format!("{}.t.example.org", "a0".repeat(28));
        let r: Vec<_> = dns_risks(&q(&tunnel, 90)).iter().collect();
        assert_eq!(r, [FlowRisk::DnsSuspiciousTraffic]);
        let r: Vec<_> = dns_risks(&q("a.example", 600)).iter().collect();
        assert_eq!(r, [FlowRisk::DnsLargePacket]);
        let r: Vec<_> = dns_risks(&q("a.example", 2000)).iter().collect();
        assert_eq!(r, [FlowRisk::DnsLargePacket, FlowRisk::DnsFragmented]);
        // Over TCP (no datagram length) size is no risk.
        assert_eq!(dns_risks(&q("a.example", 0)), RiskSet::EMPTY);
    }

    #[test]
    fn executables_by_their_first_bytes() {
        assert!(executable_magic(b"MZ\x90\x00"));
        assert!(executable_magic(b"\x7fELF\x02"));
        assert!(!executable_magic(b"<html>"));
    }
}
