//! One SIP message's start line and header block (RFC 3261 section 7), read from bytes that hold at least the
//! whole header block.
//!
//! The start line is a request line (`METHOD SP Request-URI SP SIP-Version`) or a status line (`SIP-Version SP
//! 3DIGIT SP Reason-Phrase`); each header is `name HCOLON value`, where the value may be folded over lines that start
//! with a space or a tab (it is kept as sent, folds included, trimmed at both ends, as Suricata keeps it). Compact
//! header names (`f`, `t`, `v`, `c`, `l`, ...) are expanded to their long forms; names compare case-insensitively.
//! The header block ends at an empty line (`CRLF CRLF`; a bare `LF` is accepted as a line end).
//!
//! **Bounds.** At most [`MAX_HEADERS`] header lines are read (the rest are counted in [`Head::headers_cut`] and
//! skipped); only the headers the rules and the framing read are kept, at most [`MAX_VALUES`] values each.

/// Header lines read per message; more are skipped (and counted).
pub const MAX_HEADERS: usize = 256;
/// Values kept per header the rules read (a `Via` per proxy; a message rarely has more than a few).
pub const MAX_VALUES: usize = 32;

/// The first line of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartLine {
    /// `METHOD SP Request-URI SP SIP-Version`.
    Request {
        method: String,
        uri: String,
        version: String,
    },
    /// `SIP-Version SP Status-Code SP Reason-Phrase`.
    Response {
        version: String,
        code: String,
        reason: String,
    },
}

/// The values of the headers the rules read (`sip.from`, `sip.to`, ...), in the order they came, a header given
/// on several lines (or in its long and compact forms) once per line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SipHeaders {
    pub from: Vec<String>,
    pub to: Vec<String>,
    pub via: Vec<String>,
    pub user_agent: Vec<String>,
    pub content_type: Vec<String>,
    pub content_length: Vec<String>,
}

/// A message's start line and headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub start: StartLine,
    /// The start line as sent, without its line end (`sip.request_line`, `sip.response_line`).
    pub line: String,
    pub headers: SipHeaders,
    /// The body's length from the first `Content-Length` that holds a number, if any.
    pub content_length: Option<u64>,
    /// Header lines past [`MAX_HEADERS`], or values past [`MAX_VALUES`], not kept.
    pub headers_cut: u32,
    /// Bytes of the start line and header block, the empty line included: where the body starts.
    pub len: usize,
}

/// What a head parse found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole start line and header block.
    Head(Box<Head>),
    /// No empty line yet: the header block goes on past the bytes given.
    Incomplete,
    /// Not a SIP message.
    Invalid,
}

/// The long form of a compact header name (RFC 3261 section 20 and the extensions registered with IANA), or the
/// name itself.
pub fn long_name(name: &[u8]) -> &[u8] {
    let [c] = name else {
        return name;
    };
    match c.to_ascii_lowercase() {
        b'a' => b"Accept-Contact",
        b'b' => b"Referred-By",
        b'c' => b"Content-Type",
        b'd' => b"Request-Disposition",
        b'e' => b"Content-Encoding",
        b'f' => b"From",
        b'i' => b"Call-ID",
        b'j' => b"Reject-Contact",
        b'k' => b"Supported",
        b'l' => b"Content-Length",
        b'm' => b"Contact",
        b'n' => b"Identity-Info",
        b'o' => b"Event",
        b'r' => b"Refer-To",
        b's' => b"Subject",
        b't' => b"To",
        b'u' => b"Allow-Events",
        b'v' => b"Via",
        b'x' => b"Session-Expires",
        b'y' => b"Identity",
        _ => name,
    }
}

/// Where the header block that starts `d` ends: the offset just past its empty line, if `d` holds it.
pub fn head_end(d: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(p) = d.get(i..).and_then(|r| r.iter().position(|&b| b == b'\n')) {
        let nl = i + p;
        // The next line is empty: `LF` or `CR LF`.
        match d.get(nl + 1) {
            Some(b'\n') => return Some(nl + 2),
            Some(b'\r') if d.get(nl + 2) == Some(&b'\n') => return Some(nl + 3),
            _ => {}
        }
        i = nl + 1;
    }
    None
}

/// The lines of `d` (a header block), each without its line end; a line that starts with a space or a tab is a
/// continuation of the one before (the fold stays in the value).
fn lines(d: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = d;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = 0;
        loop {
            match rest[end..].iter().position(|&b| b == b'\n') {
                Some(p) => {
                    end += p + 1;
                    // Folded: the next line starts with whitespace.
                    if matches!(rest.get(end), Some(b' ' | b'\t')) {
                        continue;
                    }
                    let line = trim_eol(&rest[..end]);
                    rest = &rest[end..];
                    return Some(line);
                }
                None => {
                    let line = trim_eol(rest);
                    rest = &[];
                    return Some(line);
                }
            }
        }
    })
}

fn trim_eol(l: &[u8]) -> &[u8] {
    let l = l.strip_suffix(b"\n").unwrap_or(l);
    l.strip_suffix(b"\r").unwrap_or(l)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-.!%*_+`'~".contains(&b)
}

/// A SIP version (`SIP/2.0`): `SIP/` then digits and dots.
fn is_version(v: &[u8]) -> bool {
    v.len() > 4
        && v[..4].eq_ignore_ascii_case(b"SIP/")
        && v[4..].iter().all(|&b| b.is_ascii_digit() || b == b'.')
}

/// Reads the start line.
fn start_line(line: &[u8]) -> Option<StartLine> {
    if line.len() >= 4 && line[..4].eq_ignore_ascii_case(b"SIP/") {
        let (version, rest) = split_sp(line)?;
        if !is_version(version) {
            return None;
        }
        let code = rest.get(..3)?;
        if !code.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let reason = match rest.get(3) {
            None => &[][..],
            Some(b' ') => &rest[4..],
            Some(_) => return None,
        };
        return Some(StartLine::Response {
            version: text(version),
            code: text(code),
            reason: text(reason),
        });
    }
    let (method, rest) = split_sp(line)?;
    let (uri, version) = split_sp(rest)?;
    if method.is_empty() || !method.iter().all(|&b| is_token(b)) {
        return None;
    }
    if uri.is_empty() || !is_version(version) {
        return None;
    }
    Some(StartLine::Request {
        method: text(method),
        uri: text(uri),
        version: text(version),
    })
}

/// `(before, after)` the first space.
fn split_sp(d: &[u8]) -> Option<(&[u8], &[u8])> {
    let p = d.iter().position(|&b| b == b' ')?;
    Some((&d[..p], &d[p + 1..]))
}

/// Reads the start line and headers at the start of `d` (which must not start with empty lines).
pub fn parse_head(d: &[u8]) -> Parsed {
    let first_end = d.iter().position(|&b| b == b'\n');
    let first = trim_eol(&d[..first_end.map_or(d.len(), |p| p + 1)]);
    let Some(start) = start_line(first) else {
        // A start line still arriving may become one; a complete one that is not, never.
        return if first_end.is_none() && d.len() < 1024 {
            Parsed::Incomplete
        } else {
            Parsed::Invalid
        };
    };
    let Some(len) = head_end(d) else {
        return Parsed::Incomplete;
    };
    let Some(first_end) = first_end else {
        return Parsed::Invalid;
    };
    let mut head = Head {
        start,
        line: text(first),
        headers: SipHeaders::default(),
        content_length: None,
        headers_cut: 0,
        len,
    };
    let block = d.get(first_end + 1..len).unwrap_or_default();
    for (n, line) in lines(block).enumerate() {
        if line.is_empty() {
            break;
        }
        if n >= MAX_HEADERS {
            head.headers_cut += 1;
            continue;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return Parsed::Invalid;
        };
        let name = line[..colon].trim_ascii();
        if name.is_empty() || !name.iter().all(|&b| is_token(b)) {
            return Parsed::Invalid;
        }
        let value = line[colon + 1..].trim_ascii();
        let name = long_name(name);
        let h = &mut head.headers;
        let list = if name.eq_ignore_ascii_case(b"From") {
            &mut h.from
        } else if name.eq_ignore_ascii_case(b"To") {
            &mut h.to
        } else if name.eq_ignore_ascii_case(b"Via") {
            &mut h.via
        } else if name.eq_ignore_ascii_case(b"User-Agent") {
            &mut h.user_agent
        } else if name.eq_ignore_ascii_case(b"Content-Type") {
            &mut h.content_type
        } else if name.eq_ignore_ascii_case(b"Content-Length") {
            if head.content_length.is_none() {
                head.content_length = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            &mut h.content_length
        } else {
            continue;
        };
        if list.len() < MAX_VALUES {
            list.push(text(value));
        } else {
            head.headers_cut += 1;
        }
    }
    Parsed::Head(Box::new(head))
}

impl Head {
    /// Whether the body is a session description (`Content-Type: application/sdp`, parameters aside).
    pub fn is_sdp(&self) -> bool {
        self.headers.content_type.first().is_some_and(|t| {
            let media = t.split(';').next().unwrap_or("").trim();
            media.eq_ignore_ascii_case("application/sdp")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(d: &[u8]) -> Head {
        match parse_head(d) {
            Parsed::Head(h) => *h,
            p => panic!("{p:?}"),
        }
    }

    #[test]
    fn request_with_compact_and_repeated_headers() {
        let d = b"INVITE sip:97239287044@voip.example.net SIP/2.0\r\n\
v: SIP/2.0/UDP 192.168.1.2:5060;branch=z9hG4bK1\r\n\
f: \"arik\" <sip:816666@voip.example.net>;tag=6433ef9\r\n\
t: <sip:97239287044@voip.example.net>\r\n\
To: <sip:12345@voip.example.net>\r\n\
User-Agent: Nero SIPPS\r\n\
c: application/sdp\r\n\
l: 272 \r\n\
\r\nv=0\r\n";
        let h = head(d);
        assert_eq!(
            h.start,
            StartLine::Request {
                method: "INVITE".into(),
                uri: "sip:97239287044@voip.example.net".into(),
                version: "SIP/2.0".into()
            }
        );
        assert_eq!(h.line, "INVITE sip:97239287044@voip.example.net SIP/2.0");
        assert_eq!(
            h.headers.to,
            [
                "<sip:97239287044@voip.example.net>",
                "<sip:12345@voip.example.net>"
            ]
        );
        assert_eq!(h.headers.from.len(), 1);
        assert_eq!(
            h.headers.via,
            ["SIP/2.0/UDP 192.168.1.2:5060;branch=z9hG4bK1"]
        );
        assert_eq!(h.headers.content_length, ["272"]);
        assert_eq!(h.content_length, Some(272));
        assert!(h.is_sdp());
        assert_eq!(&d[h.len..], b"v=0\r\n");
    }

    #[test]
    fn status_lines_folds_and_bad_messages() {
        let h = head(b"SIP/2.0 401 Unauthorized\r\nVia: a,\r\n b\r\n\r\n");
        assert_eq!(
            h.start,
            StartLine::Response {
                version: "SIP/2.0".into(),
                code: "401".into(),
                reason: "Unauthorized".into()
            }
        );
        assert_eq!(h.headers.via, ["a,\r\n b"]);
        assert_eq!(h.content_length, None);
        let h = head(b"SIP/2.0 200\n\n");
        assert!(matches!(h.start, StartLine::Response { ref reason, .. } if reason.is_empty()));
        assert_eq!(
            parse_head(b"REGISTER sip:x SIP/2.0\r\nVia: a\r\n"),
            Parsed::Incomplete
        );
        assert_eq!(parse_head(b"REGIS"), Parsed::Incomplete);
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\n\r\n"), Parsed::Invalid);
        assert_eq!(parse_head(b"SIP/2.0 2x0 OK\r\n\r\n"), Parsed::Invalid);
        assert_eq!(
            parse_head(b"OPTIONS sip:x SIP/2.0\r\nno colon\r\n\r\n"),
            Parsed::Invalid
        );
    }

    #[test]
    fn header_lines_and_values_are_capped() {
        let mut d = b"OPTIONS sip:x SIP/2.0\r\n".to_vec();
        for _ in 0..MAX_HEADERS + 10 {
            d.extend_from_slice(b"Via: v\r\n");
        }
        d.extend_from_slice(b"\r\n");
        let h = head(&d);
        assert_eq!(h.headers.via.len(), MAX_VALUES);
        assert_eq!(h.headers_cut as usize, MAX_HEADERS + 10 - MAX_VALUES);
    }
}
