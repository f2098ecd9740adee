//! The HTTP buffers Suricata derives from what the HTTP parser hands over.
//!
//! The parser delivers the request target as sent, the Host value, and header blocks as `Name: value\r\n` lines.
//! Suricata's rules also see a *normalised* URI (`http.uri`), a lowercased host without port (`http.host`), headers
//! without the `Cookie`/`Set-Cookie` lines (`http.header`) and the cookie value alone (`http.cookie`). These
//! functions derive them into caller-owned scratch vectors, so the rules engine allocates nothing per transaction once
//! its scratch has grown to the parser's caps.

/// Percent-decodes the path of `raw` (a request target), removes `.`/`..` segments and repeated slashes, and
/// appends the query string unchanged: libhtp's path normalisation as Suricata configures it by default.
/// An absolute-form target (`http://host/path`) is reduced to its path and query.
pub fn normalize_uri(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut target = raw;
    for scheme in [&b"http://"[..], b"https://"] {
        if target.len() >= scheme.len() && target[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &target[scheme.len()..];
            target = match memchr::memchr(b'/', rest) {
                Some(i) => &rest[i..],
                None => b"/",
            };
            break;
        }
    }
    let (path, query) = match memchr::memchr(b'?', target) {
        Some(i) => (&target[..i], Some(&target[i..])),
        None => (target, None),
    };
    // Decode into `out`, then resolve segments in place.
    let mut i = 0;
    while let Some(&b) = path.get(i) {
        if b == b'%'
            && let (Some(h), Some(l)) = (
                path.get(i + 1).and_then(|c| hex(*c)),
                path.get(i + 2).and_then(|c| hex(*c)),
            )
        {
            out.push(h << 4 | l);
            i += 3;
            continue;
        }
        out.push(b);
        i += 1;
    }
    remove_dot_segments(out);
    if let Some(q) = query {
        out.extend_from_slice(q);
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// RFC 3986 section 5.2.4 on an absolute path, plus collapsing `//`, in place.
fn remove_dot_segments(p: &mut Vec<u8>) {
    if !p.starts_with(b"/") {
        return;
    }
    let mut out: Vec<u8> = Vec::with_capacity(p.len());
    for seg in p.split(|&b| b == b'/').skip(1) {
        match seg {
            b"" | b"." => {}
            b".." => {
                let cut = memchr::memrchr(b'/', &out).unwrap_or(0);
                out.truncate(cut);
            }
            s => {
                out.push(b'/');
                out.extend_from_slice(s);
            }
        }
    }
    // A trailing slash (or trailing dot segment) keeps the path a directory.
    if p.ends_with(b"/") || p.ends_with(b"/.") || p.ends_with(b"/..") || out.is_empty() {
        out.push(b'/');
    }
    *p = out;
}

/// Lowercases a Host value and drops a `:port` suffix and a trailing dot.
pub fn normalize_host(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let raw = raw.trim_ascii();
    let host = if raw.starts_with(b"[") {
        match memchr::memchr(b']', raw) {
            Some(i) => &raw[..=i],
            None => raw,
        }
    } else {
        match memchr::memrchr(b':', raw) {
            Some(i) if raw[i + 1..].iter().all(u8::is_ascii_digit) => &raw[..i],
            _ => raw,
        }
    };
    let host = host.strip_suffix(b".").unwrap_or(host);
    out.extend(host.iter().map(u8::to_ascii_lowercase));
}

/// Splits a header block into Suricata's `http.header` (every line but the cookie one, as `Name: value\r\n`) and
/// `http.cookie` (the `Cookie` values, joined by `; `). `cookie_name` is `cookie` for requests, `set-cookie` for
/// responses. Lines without a colon (a request or status line, the blank line) are dropped; folded continuation
/// lines are joined to their header.
pub fn split_headers(
    block: &[u8],
    cookie_name: &[u8],
    headers: &mut Vec<u8>,
    cookie: &mut Vec<u8>,
) {
    headers.clear();
    cookie.clear();
    let mut last_was_cookie = false;
    for line in block.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.first().is_some_and(|&c| c == b' ' || c == b'\t') {
            // obs-fold: continue the previous header's value.
            let target = if last_was_cookie {
                &mut *cookie
            } else {
                &mut *headers
            };
            if !last_was_cookie && target.ends_with(b"\r\n") {
                target.truncate(target.len() - 2);
                target.push(b' ');
                target.extend_from_slice(line.trim_ascii());
                target.extend_from_slice(b"\r\n");
            } else if last_was_cookie {
                target.push(b' ');
                target.extend_from_slice(line.trim_ascii());
            }
            continue;
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            last_was_cookie = false;
            continue;
        };
        let name = line[..colon].trim_ascii();
        let value = line[colon + 1..].trim_ascii();
        if name.is_empty() || name.contains(&b' ') {
            last_was_cookie = false;
            continue;
        }
        last_was_cookie = name.eq_ignore_ascii_case(cookie_name);
        if last_was_cookie {
            if !cookie.is_empty() {
                cookie.extend_from_slice(b"; ");
            }
            cookie.extend_from_slice(value);
        } else {
            headers.extend_from_slice(name);
            headers.extend_from_slice(b": ");
            headers.extend_from_slice(value);
            headers.extend_from_slice(b"\r\n");
        }
    }
}

/// Header lines of a block (`Name: value`, CR LF or LF ended) as (name, value), trimmed; lines without a colon and
/// continuation lines are passed over.
fn header_lines(block: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    block.split(|&b| b == b'\n').filter_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.first().is_some_and(|&c| c == b' ' || c == b'\t') {
            return None;
        }
        // An HTTP/2 pseudo-header's name begins with its colon (`:method: GET`).
        let from = usize::from(line.first() == Some(&b':'));
        let colon = from + memchr::memchr(b':', line.get(from..)?)?;
        let name = line.get(..colon)?.trim_ascii();
        let value = line.get(colon + 1..)?.trim_ascii();
        (!name.is_empty() && !name.contains(&b' ')).then_some((name, value))
    })
}

/// The value of the first header called `name` (ASCII case-insensitive) in a header block, borrowed from it:
/// Suricata's single-header buffers (`http.content_type`, `http.referer`, ...).
pub fn header_value<'a>(block: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    header_lines(block)
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

/// Suricata's `http.header_names`: each header name preceded by CR LF, and CR LF CR LF at the end
/// (`\r\nHost\r\nAccept\r\n\r\n`); an empty block gives an empty buffer.
pub fn header_names(block: &[u8], out: &mut Vec<u8>) {
    out.clear();
    for (name, _) in header_lines(block) {
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(name);
    }
    if !out.is_empty() {
        out.extend_from_slice(b"\r\n\r\n");
    }
}

/// At most this many distinct headers of a block become [`header_fields`] (libhtp's default header limit).
pub const MAX_HEADER_FIELDS: usize = 1024;

/// Suricata's `http.request_header` / `http.response_header` parts of an HTTP/1 header block: each header as
/// `Name: value` (name as sent, value trimmed, no line end), as libhtp keeps them: a repeated name (ASCII
/// case-insensitive) is one part, its values joined by `, `, under the name as first sent; a folded continuation
/// line continues the value before it after one space. Lines without a colon, or whose name is empty or holds a
/// space, are passed over; past [`MAX_HEADER_FIELDS`] distinct names the rest are dropped. Parts go into `out`
/// (cleared first) end to end, `ends` gets where each ends.
pub fn header_fields(block: &[u8], out: &mut Vec<u8>, ends: &mut Vec<usize>) {
    // (name length, field) per distinct name; built apart because a repeated name grows an earlier field.
    let mut fields: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut last: Option<usize> = None;
    for line in block.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.first().is_some_and(|&c| c == b' ' || c == b'\t') {
            let more = line.trim_ascii();
            if let Some((_, f)) = last.and_then(|i| fields.get_mut(i))
                && !more.is_empty()
            {
                f.push(b' ');
                f.extend_from_slice(more);
            }
            continue;
        }
        last = None;
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let (name, value) = (line[..colon].trim_ascii(), line[colon + 1..].trim_ascii());
        if name.is_empty() || name.contains(&b' ') {
            continue;
        }
        let seen = fields
            .iter()
            .position(|(n, f)| f.get(..*n).is_some_and(|x| x.eq_ignore_ascii_case(name)));
        if let Some((i, (_, f))) = seen.and_then(|i| Some((i, fields.get_mut(i)?))) {
            f.extend_from_slice(b", ");
            f.extend_from_slice(value);
            last = Some(i);
        } else if fields.len() < MAX_HEADER_FIELDS {
            let mut f = Vec::with_capacity(name.len() + 2 + value.len());
            f.extend_from_slice(name);
            f.extend_from_slice(b": ");
            f.extend_from_slice(value);
            fields.push((name.len(), f));
            last = Some(fields.len() - 1);
        }
    }
    out.clear();
    ends.clear();
    for (_, f) in &fields {
        out.extend_from_slice(f);
        ends.push(out.len());
    }
}

/// `http.protocol` of a request line (its last word, `HTTP/1.1`); `None` for an HTTP/0.9 line without one.
pub fn request_protocol(line: &[u8]) -> Option<&[u8]> {
    // HTTP/2's request line ends in CRLF (Suricata builds it so); HTTP/1's comes without its line end.
    let mut words = line
        .trim_ascii_end()
        .split(|&b| b == b' ')
        .filter(|w| !w.is_empty());
    let (_method, _target) = (words.next()?, words.next()?);
    words.next_back().filter(|w| w.starts_with(b"HTTP/"))
}

/// `http.protocol` and `http.stat_msg` of a status line (`HTTP/1.1 404 Not Found` → `HTTP/1.1`, `Not Found`).
pub fn status_line_parts(line: &[u8]) -> (&[u8], &[u8]) {
    let line = line.trim_ascii();
    let (proto, rest) = match memchr::memchr(b' ', line) {
        Some(i) => (&line[..i], line[i + 1..].trim_ascii_start()),
        None => (line, &b""[..]),
    };
    let msg = match memchr::memchr(b' ', rest) {
        Some(i) => rest[i + 1..].trim_ascii(),
        None => &b""[..],
    };
    (proto, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> String {
        let mut v = Vec::new();
        normalize_uri(s.as_bytes(), &mut v);
        String::from_utf8_lossy(&v).into_owned()
    }

    /// HTTP/2's header block begins with its pseudo-headers (`:status: 200`): their names, colon included, are
    /// names like the others (Suricata's `http.header_names` of an HTTP/2 response begins `\r\n:status`).
    #[test]
    fn pseudo_header_names() {
        let block = b":status: 200\r\naccept-ranges: bytes\r\nServer:h2o\r\n";
        let mut names = Vec::new();
        header_names(block, &mut names);
        assert_eq!(names, b"\r\n:status\r\naccept-ranges\r\nServer\r\n\r\n");
        assert_eq!(header_value(block, b":status"), Some(&b"200"[..]));
        assert_eq!(header_value(block, b"server"), Some(&b"h2o"[..]));
    }

    #[test]
    fn uris() {
        assert_eq!(uri("/a/b/../c/./d?x=%41/../"), "/a/c/d?x=%41/../");
        assert_eq!(uri("/%2e%2e/%2E%2e/etc/passwd"), "/etc/passwd");
        assert_eq!(uri("//a///b/"), "/a/b/");
        assert_eq!(uri("/a/.."), "/");
        assert_eq!(uri("http://Example.com/x%20y?q"), "/x y?q");
        assert_eq!(uri("*"), "*");
        assert_eq!(uri("/bad%zz%4"), "/bad%zz%4");
    }

    #[test]
    fn hosts_and_headers() {
        let mut v = Vec::new();
        normalize_host(b" WWW.Example.COM.:8080 ", &mut v);
        assert_eq!(v, b"www.example.com");
        normalize_host(b"[::1]:80", &mut v);
        assert_eq!(v, b"[::1]");
        let (mut h, mut c) = (Vec::new(), Vec::new());
        split_headers(
            b"Host: a\r\nCookie: x=1\r\nX-Long: one\r\n two\r\ncookie:y=2\r\n\r\n",
            b"cookie",
            &mut h,
            &mut c,
        );
        assert_eq!(
            String::from_utf8_lossy(&h),
            "Host: a\r\nX-Long: one two\r\n"
        );
        assert_eq!(c, b"x=1; y=2");
    }

    #[test]
    fn header_fields_as_libhtp_keeps_them() {
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        header_fields(
            b"Host: a\r\nX-Long: one\r\n two\r\nACCEPT: x\r\nbad line\r\nAccept:  y \r\n: empty\r\n\r\n",
            &mut out,
            &mut ends,
        );
        let mut parts = Vec::new();
        let mut start = 0;
        for &e in &ends {
            parts.push(String::from_utf8_lossy(&out[start..e]).into_owned());
            start = e;
        }
        assert_eq!(parts, ["Host: a", "X-Long: one two", "ACCEPT: x, y"]);
        header_fields(b"", &mut out, &mut ends);
        assert!(out.is_empty() && ends.is_empty());
    }
}
