//! Flow risks: what a flow's traffic says about its security, named as nDPI names them so that flowbundle's report
//! compares with `ndpiReader -v 2`'s `[Risk: ...]`.
//!
//! The enumeration is generated from one table ([`flow_risks!`]): each row gives the variant, nDPI's enumeration name
//! (`NDPI_TLS_SELFSIGNED_CERTIFICATE`, what its documentation and API call the risk) and the short label
//! ndpiReader prints (`Self-signed Cert`). Only risks the engine computes are listed: a row is a promise that some
//! code sets it. A flow's risks are a [`RiskSet`], one machine word, so collecting them allocates nothing.

/// Generates [`FlowRisk`] from rows `Variant => "NDPI_NAME", "ndpiReader label";`.
macro_rules! flow_risks {
    ($($(#[$doc:meta])* $variant:ident => $ndpi:literal, $label:literal;)*) => {
        /// A flow risk (nDPI's `ndpi_risk_enum`, the subset the engine computes).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        #[non_exhaustive]
        pub enum FlowRisk {
            $($(#[$doc])* $variant,)*
        }

        impl FlowRisk {
            /// Every risk, in declaration order (the bit order of [`RiskSet`]).
            pub const ALL: &'static [FlowRisk] = &[$(FlowRisk::$variant,)*];

            /// nDPI's enumeration name, e.g. `NDPI_TLS_SELFSIGNED_CERTIFICATE`.
            pub fn name(self) -> &'static str {
                match self {
                    $(FlowRisk::$variant => $ndpi,)*
                }
            }

            /// The label `ndpiReader -v 2` prints between `**` in `[Risk: ...]`, e.g. `Self-signed Cert`.
            pub fn label(self) -> &'static str {
                match self {
                    $(FlowRisk::$variant => $label,)*
                }
            }
        }
    };
}

flow_risks! {
    /// An HTTP response carried an executable (Windows PE, ELF, Java class) or was labelled as one.
    BinaryApplicationTransfer => "NDPI_BINARY_APPLICATION_TRANSFER", "Binary App Transfer";
    /// A protocol identified from payload on ports that are none of its default ports.
    KnownProtocolOnNonStandardPort => "NDPI_KNOWN_PROTOCOL_ON_NON_STANDARD_PORT", "Known Proto on Non Std Port";
    /// The TLS server certificate's issuer is its subject.
    TlsSelfsignedCertificate => "NDPI_TLS_SELFSIGNED_CERTIFICATE", "Self-signed Cert";
    /// TLS 1.1 or older (SSL 3, TLS 1.0, TLS 1.1; DTLS 1.0) negotiated.
    TlsObsoleteVersion => "NDPI_TLS_OBSOLETE_VERSION", "Obsolete TLS (v1.1 or older)";
    /// The negotiated cipher suite has no forward secrecy or uses a broken cipher (RC4, DES, 3DES, NULL, export).
    TlsWeakCipher => "NDPI_TLS_WEAK_CIPHER", "Weak TLS Cipher";
    /// The server certificate was not valid at the time of the handshake (expired, or not yet valid).
    TlsCertificateExpired => "NDPI_TLS_CERTIFICATE_EXPIRED", "TLS Cert Expired";
    /// The server certificate names none of the SNI's names.
    TlsCertificateMismatch => "NDPI_TLS_CERTIFICATE_MISMATCH", "TLS Cert Mismatch";
    /// An HTTP request without a User-Agent, or with an empty one.
    HttpSuspiciousUserAgent => "NDPI_HTTP_SUSPICIOUS_USER_AGENT", "HTTP Susp User-Agent";
    /// The HTTP Host, TLS SNI or QUIC SNI is an IP address.
    NumericIpHost => "NDPI_NUMERIC_IP_HOST", "HTTP/TLS/QUIC Numeric Hostname/SNI";
    /// A TLS client offered no ALPN: what it carries is probably not a web browser's HTTPS.
    TlsNotCarryingHttps => "NDPI_TLS_NOT_CARRYING_HTTPS", "TLS (probably) Not Carrying HTTPS";
    /// A protocol that carries credentials or content without encryption by design (Telnet, FTP, POP3, ...).
    UnsafeProtocol => "NDPI_UNSAFE_PROTOCOL", "Unsafe Protocol";
    /// A TLS ClientHello without the server_name extension.
    TlsMissingSni => "NDPI_TLS_MISSING_SNI", "Missing SNI TLS Extn";
    /// A user name or password sent in the clear (FTP USER/PASS, POP3, IMAP LOGIN, HTTP Basic authorization).
    ClearTextCredentials => "NDPI_CLEAR_TEXT_CREDENTIALS", "Clear-Text Credentials";
    /// A DNS message over UDP longer than 512 bytes (RFC 1035's limit without EDNS).
    DnsLargePacket => "NDPI_DNS_LARGE_PACKET", "Large DNS Packet (512+ bytes)";
    /// A DNS message over UDP larger than a typical path MTU allows unfragmented.
    DnsFragmented => "NDPI_DNS_FRAGMENTED", "Fragmented DNS Message";
    /// A DNS query for an unusually long name (a tunnel or exfiltration channel carries data in labels).
    DnsSuspiciousTraffic => "NDPI_DNS_SUSPICIOUS_TRAFFIC", "Susp DNS Traffic";
    /// Packets in one direction only.
    UnidirectionalTraffic => "NDPI_UNIDIRECTIONAL_TRAFFIC", "Unidirectional Traffic";
    /// ALPN offered without SNI: an HTTP client that names its protocol but not the host.
    TlsAlpnSniMismatch => "NDPI_TLS_ALPN_SNI_MISMATCH", "ALPN/SNI Mismatch";
}

impl FlowRisk {
    /// The bit of this risk in a [`RiskSet`].
    #[inline]
    pub const fn bit(self) -> u64 {
        1u64 << (self as u8)
    }

    /// The risk nDPI names `name` (its enumeration name).
    pub fn from_name(name: &str) -> Option<FlowRisk> {
        FlowRisk::ALL.iter().copied().find(|r| r.name() == name)
    }

    /// The risk ndpiReader prints as `label`.
    pub fn from_label(label: &str) -> Option<FlowRisk> {
        FlowRisk::ALL.iter().copied().find(|r| r.label() == label)
    }
}

impl std::fmt::Display for FlowRisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`FlowRisk`]s: one bit per risk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RiskSet(u64);

// One bit per risk must fit the word.
const _: () = assert!(FlowRisk::ALL.len() <= 64);

impl RiskSet {
    /// No risk.
    pub const EMPTY: RiskSet = RiskSet(0);

    /// Adds `risk`.
    #[inline]
    pub fn insert(&mut self, risk: FlowRisk) {
        self.0 |= risk.bit();
    }

    /// Whether `risk` is in the set.
    #[inline]
    pub fn contains(self, risk: FlowRisk) -> bool {
        self.0 & risk.bit() != 0
    }

    #[inline]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many risks are in the set.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The risks in declaration order.
    pub fn iter(self) -> impl Iterator<Item = FlowRisk> {
        FlowRisk::ALL
            .iter()
            .copied()
            .filter(move |r| self.contains(*r))
    }
}

impl std::ops::BitOrAssign for RiskSet {
    #[inline]
    fn bitor_assign(&mut self, o: RiskSet) {
        self.0 |= o.0;
    }
}

impl FromIterator<FlowRisk> for RiskSet {
    fn from_iter<I: IntoIterator<Item = FlowRisk>>(iter: I) -> Self {
        let mut s = RiskSet::EMPTY;
        for r in iter {
            s.insert(r);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_enumeration() {
        for (i, &r) in FlowRisk::ALL.iter().enumerate() {
            assert_eq!(r as usize, i);
            assert_eq!(FlowRisk::from_name(r.name()), Some(r), "{r:?}: unique name");
            assert_eq!(
                FlowRisk::from_label(r.label()),
                Some(r),
                "{r:?}: unique label"
            );
            assert!(r.name().starts_with("NDPI_"), "{r:?}: nDPI's spelling");
        }
    }

    #[test]
    fn sets_hold_each_risk_once() {
        let mut s = RiskSet::EMPTY;
        assert!(s.is_empty());
        s.insert(FlowRisk::TlsWeakCipher);
        s.insert(FlowRisk::UnidirectionalTraffic);
        s.insert(FlowRisk::TlsWeakCipher);
        assert_eq!(s.len(), 2);
        assert!(s.contains(FlowRisk::TlsWeakCipher));
        assert!(!s.contains(FlowRisk::TlsMissingSni));
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [FlowRisk::TlsWeakCipher, FlowRisk::UnidirectionalTraffic]
        );
        let mut t: RiskSet = [FlowRisk::TlsMissingSni].into_iter().collect();
        t |= s;
        assert_eq!(t.len(), 3);
    }
}
