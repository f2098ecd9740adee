//! Certificates: the list a Certificate message carries, the names one is valid for, fingerprints as text.

/// The names a certificate is valid for: subjectAltName DNS names and IP addresses, else the subject's common
/// names (RFC 6125 looks at the CN only when there is no DNS name in the SAN).
pub(super) fn cert_names(cert: &x509_parser::certificate::X509Certificate<'_>) -> Vec<String> {
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

/// The certificate's subjectAltName entries as text, in order (see [`super::TlsEvent::sans`]).
pub(super) fn cert_sans(cert: &x509_parser::certificate::X509Certificate<'_>) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .map(|n| match n {
            GeneralName::DNSName(d) | GeneralName::URI(d) => (*d).to_string(),
            GeneralName::IPAddress(b) => format!("{b:?}"),
            other => other.to_string(),
        })
        .collect()
}

/// Bytes as hex pairs joined by `:`.
pub(super) fn hex_colons(bytes: &[u8], upper: bool) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        // Not `format!` per byte: a certificate's fingerprint and serial are 20 bytes and more, every certificate.
        super::hello::push_hex(&mut out, *b, upper);
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
