//! The EVE `tls` event and its JA3/JA3S objects, with the certificate checks the flow risks read.

use md5::{Digest as _, Md5};

use super::*;

/// JA3 / JA3S: the fingerprint string and its MD5, as EVE `tls.ja3` / `tls.ja3s` objects.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Ja3 {
    pub hash: String,
    pub string: String,
}

impl Ja3 {
    pub(super) fn from_string(string: String) -> Ja3 {
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
    /// The version the client's side recorded, as a number: its ClientHello's `legacy_version` (0x0303 from a TLS
    /// 1.3 client too), 0 without one. The rules' `tls.version` to the server; not an EVE field.
    #[serde(skip)]
    pub client_version: u16,
    /// The version the server's side recorded: the ServerHello's negotiated one (its `supported_versions` choice
    /// for TLS 1.3), 0 without one. The rules' `tls.version` to the client; not an EVE field.
    #[serde(skip)]
    pub server_version: u16,
    /// The ClientHello's and the ServerHello's 32 random bytes (the rules' `tls.random`, `tls.random_time`,
    /// `tls.random_bytes`); not EVE fields.
    #[serde(skip)]
    pub client_random: Option<Box<[u8; 32]>>,
    #[serde(skip)]
    pub server_random: Option<Box<[u8; 32]>>,
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
    /// The subjectAltName entries, each as Suricata's `tls.subjectaltname` reads it: a DNS name or URI as written,
    /// an IP address as the list of its bytes (`[192, 0, 2, 1]`), another kind as x509-parser writes it.
    pub sans: Vec<String>,
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
                    sans: cert_sans(&cert),
                }));
            }
        }
        self.certificates = chain;
    }
}
