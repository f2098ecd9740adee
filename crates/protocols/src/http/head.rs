//! Request and status lines and header blocks: finding a head's end in a growing buffer, splitting the request
//! line, and reading the header fields the event and the body framing need.

pub(super) fn trim_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

pub(super) fn trim_ws(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = s {
        s = rest;
    }
    s
}

pub(super) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Splits `Host` into (lowercase name, port); IPv6 literals keep their brackets.
pub(super) fn split_host(h: &[u8]) -> (String, Option<u16>) {
    let h = trim_ws(h);
    let (name, port) = if h.first() == Some(&b'[') {
        match h.iter().position(|&b| b == b']') {
            Some(e) => (&h[..=e], h.get(e + 1..).and_then(|r| r.strip_prefix(b":"))),
            None => (h, None),
        }
    } else {
        match h.iter().rposition(|&b| b == b':') {
            Some(c) => (&h[..c], Some(&h[c + 1..])),
            None => (h, None),
        }
    };
    let port = port
        .and_then(|p| std::str::from_utf8(p).ok())
        .and_then(|p| p.parse().ok());
    (lossy(name).to_ascii_lowercase(), port)
}

/// The header fields we read, from one header block.
#[derive(Debug, Default)]
pub(super) struct Head {
    pub(super) host: Option<(String, Option<u16>)>,
    pub(super) user_agent: Option<String>,
    pub(super) content_type: Option<String>,
    pub(super) referer: Option<String>,
    pub(super) xff: Option<String>,
    pub(super) location: Option<String>,
    /// The `filename` parameter of `Content-Disposition` (names the file a body carries).
    pub(super) disposition_filename: Option<Vec<u8>>,
    /// `Content-Type: multipart/...` (a form whose parts are the files, not the body).
    pub(super) multipart: bool,
    /// `Authorization: Basic ...`: credentials in the clear.
    pub(super) basic_credentials: bool,
    pub(super) content_length: Option<u64>,
    /// The service the header fields name (see [`service_from_header`]).
    pub(super) service: Option<&'static str>,
    pub(super) chunked: bool,
    /// A `Transfer-Encoding` field was present, and whether one of its values contains `chunked` anywhere
    /// (case-insensitive, NUL bytes ignored), as libhtp judges a request's transfer coding.
    pub(super) te_present: bool,
    pub(super) te_mentions_chunked: bool,
    pub(super) encoding: Encoding,
    /// Byte range of the header lines (after the first line) inside the head buffer.
    pub(super) headers: std::ops::Range<usize>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Encoding {
    #[default]
    Identity,
    Gzip,
    Deflate,
}

impl Encoding {
    /// The coding's name as EVE's `content_encoding` shows it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
        }
    }
}

/// Whether `value` contains `chunked` anywhere, ignoring case and NUL bytes (libhtp's test of a transfer coding).
fn mentions_chunked(value: &[u8]) -> bool {
    const WORD: &[u8] = b"chunked";
    let bytes: Vec<u8> = value
        .iter()
        .filter(|&&b| b != 0)
        .map(u8::to_ascii_lowercase)
        .collect();
    bytes.windows(WORD.len()).any(|w| w == WORD)
}

/// Parses the header lines of a head block (everything after the first line).
pub(super) fn parse_headers(block: &[u8], base: usize) -> Head {
    let mut h = Head {
        headers: base..base + block.len(),
        ..Head::default()
    };
    for raw in block.split(|&b| b == b'\n') {
        let line = trim_cr(raw);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (trim_ws(&line[..colon]), trim_ws(&line[colon + 1..]));
        let is = |n: &[u8]| name.eq_ignore_ascii_case(n);
        if h.service.is_none() {
            h.service = service_from_header(name, value);
        }
        if is(b"host") {
            h.host.get_or_insert_with(|| split_host(value));
        } else if is(b"user-agent") {
            h.user_agent.get_or_insert_with(|| lossy(value));
        } else if is(b"content-type") {
            h.content_type.get_or_insert_with(|| lossy(value));
            h.multipart |= starts_with_ci(value, b"multipart/");
        } else if is(b"content-disposition") {
            if h.disposition_filename.is_none() {
                h.disposition_filename = disposition_filename(value);
            }
        } else if is(b"referer") {
            h.referer.get_or_insert_with(|| lossy(value));
        } else if is(b"x-forwarded-for") {
            h.xff.get_or_insert_with(|| lossy(value));
        } else if is(b"location") {
            h.location.get_or_insert_with(|| lossy(value));
        } else if is(b"authorization") || is(b"proxy-authorization") {
            h.basic_credentials |= value
                .get(..6)
                .is_some_and(|s| s.eq_ignore_ascii_case(b"basic "));
        } else if is(b"content-length") {
            if h.content_length.is_none() {
                h.content_length = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok());
            }
        } else if is(b"transfer-encoding") {
            h.te_present = true;
            h.te_mentions_chunked |= mentions_chunked(value);
            h.chunked |= value
                .split(|&b| b == b',')
                .any(|t| trim_ws(t).eq_ignore_ascii_case(b"chunked"));
        } else if is(b"content-encoding") {
            // One coding is decoded; a stack of codings (`rc4,gzip`, `gzip,gzip`) is left as it is.
            let mut codings = value
                .split(|&b| b == b',')
                .map(trim_ws)
                .filter(|t| !t.is_empty());
            let coding = |t: &[u8]| {
                if t.eq_ignore_ascii_case(b"gzip") || t.eq_ignore_ascii_case(b"x-gzip") {
                    Some(Encoding::Gzip)
                } else if t.eq_ignore_ascii_case(b"deflate") {
                    Some(Encoding::Deflate)
                } else if t.eq_ignore_ascii_case(b"identity") {
                    Some(Encoding::Identity)
                } else {
                    None
                }
            };
            let non_identity: Vec<_> = codings
                .by_ref()
                .map(coding)
                .filter(|c| *c != Some(Encoding::Identity))
                .collect();
            h.encoding = match non_identity.as_slice() {
                [Some(e)] => *e,
                _ => Encoding::Identity,
            };
        }
    }
    h
}

/// The `filename` parameter of a `Content-Disposition` value (`attachment; filename="a b.exe"`), unquoted, as
/// Suricata reads it (the first `filename=` parameter; RFC 6266's `filename*=` is not decoded).
pub(super) fn disposition_filename(value: &[u8]) -> Option<Vec<u8>> {
    let mut rest = value;
    while !rest.is_empty() {
        let end = rest.iter().position(|&b| b == b';').unwrap_or(rest.len());
        let param = trim_ws(&rest[..end]);
        if let Some(eq) = param.iter().position(|&b| b == b'=')
            && trim_ws(&param[..eq]).eq_ignore_ascii_case(b"filename")
        {
            let v = trim_ws(&param[eq + 1..]);
            if v.first() == Some(&b'"') {
                // A quoted name may hold `;`: it ends at the next quote of the whole value.
                let start = (v.as_ptr() as usize - value.as_ptr() as usize) + 1;
                let inner = value.get(start..).unwrap_or_default();
                let close = inner.iter().position(|&b| b == b'"').unwrap_or(inner.len());
                return Some(inner[..close].to_vec()).filter(|n| !n.is_empty());
            }
            return Some(v.to_vec()).filter(|n| !n.is_empty());
        }
        rest = rest.get(end + 1..).unwrap_or(&[]);
    }
    None
}

/// Whether `s` starts with `prefix`, ignoring ASCII case.
fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

/// The service (nDPI's application name) one header field names by its published media type or header:
/// `application/ocsp-request` and `-response` (RFC 6960, appendix C): `OCSP`; `application/ipp` (RFC 8010):
/// `IPP`; `application/soap+xml` (SOAP 1.2) or a `SOAPAction` header (SOAP 1.1): `SOAP`; `application/dash+xml`
/// (MPEG-DASH manifests, ISO/IEC 23009-1): `MpegDash`; a Gnutella download's `X-Gnutella-*` or `X-Queue` (PARQ)
/// header: `Gnutella`; the user agent of Nexon's patcher (`AspINet`): `MapleStory`.
pub(super) fn service_from_header(name: &[u8], value: &[u8]) -> Option<&'static str> {
    if name.eq_ignore_ascii_case(b"content-type") {
        let media = value.split(|&b| b == b';').next().map(trim_ws)?;
        let is = |m: &[u8]| media.eq_ignore_ascii_case(m);
        if is(b"application/ocsp-request") || is(b"application/ocsp-response") {
            Some("OCSP")
        } else if is(b"application/ipp") {
            Some("IPP")
        } else if is(b"application/soap+xml") {
            Some("SOAP")
        } else if is(b"application/dash+xml") {
            Some("MpegDash")
        } else {
            None
        }
    } else if name.eq_ignore_ascii_case(b"user-agent") {
        // Nexon's game patcher names itself `AspINet`.
        starts_with_ci(value, b"AspINet").then_some("MapleStory")
    } else if name.eq_ignore_ascii_case(b"soapaction") {
        Some("SOAP")
    } else if starts_with_ci(name, b"x-gnutella-") || name.eq_ignore_ascii_case(b"x-queue") {
        Some("Gnutella")
    } else {
        None
    }
}

/// The service a request target names by its published form: a DASH manifest (`.mpd`) or media segment
/// (`.m4s`): `MpegDash`; a Gnutella download by content hash (`/uri-res/N2R?urn:...`, the HUGE convention):
/// `Gnutella`.
pub(super) fn service_from_target(target: &[u8]) -> Option<&'static str> {
    let path = target.split(|&b| b == b'?').next().unwrap_or(target);
    let ends = |ext: &[u8]| {
        path.len() > ext.len() && path[path.len() - ext.len()..].eq_ignore_ascii_case(ext)
    };
    if ends(b".mpd") || ends(b".m4s") {
        Some("MpegDash")
    } else if starts_with_ci(target, b"/uri-res/n2r?urn:") {
        Some("Gnutella")
    } else {
        None
    }
}

/// Splits a request line into (method, target, protocol); the protocol is empty for an HTTP/0.9-style line.
///
/// The target runs from after the method to the *last* space before an `HTTP/` protocol token, so a target
/// containing spaces (`GET /uri afterspace HTTP/1.1`, which curl sends unescaped and servers answer) is kept whole,
/// as libhtp does since Suricata 8: splitting at the first space would hide the rest of the URI from `http.uri`.
/// Without a trailing `HTTP/` token the line is `METHOD target` (one token after the method, else the last token is
/// taken as the protocol and the caller rejects it). Runs of spaces between the parts are tolerated.
pub(super) fn split_request_line(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    fn trim_sp(mut s: &[u8]) -> &[u8] {
        while let [b' ', rest @ ..] = s {
            s = rest;
        }
        while let [rest @ .., b' '] = s {
            s = rest;
        }
        s
    }
    let line = trim_sp(line);
    let sp = memchr::memchr(b' ', line)?;
    let (method, rest) = (&line[..sp], trim_sp(&line[sp + 1..]));
    if rest.is_empty() {
        return None;
    }
    match memchr::memrchr(b' ', rest) {
        None => Some((method, rest, b"")),
        Some(last) => {
            let (uri, proto) = (trim_sp(&rest[..last]), &rest[last + 1..]);
            if proto.starts_with(b"HTTP/") {
                Some((method, uri, proto))
            } else {
                // Not a request line we can split with confidence: the first token as target, the last as the
                // protocol (which the caller checks).
                let first = memchr::memchr(b' ', rest).unwrap_or(rest.len());
                Some((method, &rest[..first], proto))
            }
        }
    }
}

/// Finds the end of a head block in `buf`, scanning from `from`: the index just past the blank line.
pub(super) fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(off) = memchr::memchr(b'\n', buf.get(i..)?) {
        let nl = i + off;
        match buf.get(nl + 1) {
            Some(b'\n') => return Some(nl + 2),
            Some(b'\r') if buf.get(nl + 2) == Some(&b'\n') => return Some(nl + 3),
            _ => {}
        }
        i = nl + 1;
    }
    None
}
