//! HTTP/1.x: detection from the request or status line, and a streaming parser of both directions that yields
//! EVE `http` events and the sticky buffers content rules match on.
//!
//! ## Detection
//! A request starts with a method token and a space (`GET `, `POST `, `CONNECT `, WebDAV verbs, ...); the request
//! line must end in `HTTP/1.x` (or `HTTP/0.9`-style `GET /path` with nothing after it), which keeps RTSP
//! (`RTSP/1.0`) and SIP (`SIP/2.0`), which share methods like `OPTIONS`, out. A flow picked up from the server side
//! starts with `HTTP/1.x 3DIGIT`. A prefix that is still a prefix of one of these is `Unsure`.
//!
//! ## Parsing
//! Each direction is a small state machine: *head* (request/status line and header block, collected up to
//! [`Limits::http_header_cap`]), then *body* framed by `Transfer-Encoding: chunked`, `Content-Length`, or (responses
//! only) the end of the connection. Pipelined requests queue transactions that responses complete in order
//! (RFC 9112 §9.3.2); `1xx` responses are interim; `HEAD`, `204` and `304` have no body; `CONNECT` with `2xx` and
//! `101 Switching Protocols` turn the rest of the flow into an opaque tunnel. Data may be split at any byte: the
//! head is found by scanning only the newly appended bytes, and the chunked decoder keeps its position between
//! calls.
//!
//! Bodies with `Content-Encoding: gzip` or `deflate` are inflated incrementally (flate2) into a buffer capped at
//! [`Limits::http_response_body_cap`] (responses) or [`Limits::http_request_body_cap`] (requests: clients compress
//! uploads too, and libhtp decodes them for Suricata's `http.request_body`); once the cap is reached inflation stops
//! and the compressed bytes left are counted in [`ParserStats::decompress_cut`]. This is the expensive case the
//! ANCS'10 paper measures (~30,000 cycles per packet): it only runs when [`Limits::http_decompress`] is set.
//!
//! A head cut short by the end of the connection (`HTTP/1.0 200 OK\r\nServer: x\r\n`, then FIN) is parsed as it
//! stands when the flow finishes, as libhtp does on close, so header rules still see its fields.
//!
//! ## What it costs
//! Per flow: two header buffers (grown to the largest head seen, at most the cap), the body buffers (at most their
//! caps) and, per compressed response, one inflate state (~40 KiB, freed when the body ends). No allocation per
//! packet once the buffers have grown.

use std::collections::VecDeque;
use std::io::Write;

use flate2::write::{DeflateDecoder, GzDecoder, ZlibDecoder};

use crate::{
    AppEvent, AppProto, ByteSet, Detector, Direction, EventSink, HttpBuffer, Limits, Parser,
    ParserStats, Probe, ProbeCtx, Transport,
};

/// Request methods recognised at the start of a flow (RFC 9110, WebDAV, a few common extensions). `probe_http`
/// rejects on the first byte when it is not the initial of one of these.
pub const METHODS: &[&[u8]] = &[
    b"GET",
    b"POST",
    b"HEAD",
    b"PUT",
    b"DELETE",
    b"OPTIONS",
    b"CONNECT",
    b"TRACE",
    b"PATCH",
    b"PROPFIND",
    b"PROPPATCH",
    b"MKCOL",
    b"COPY",
    b"MOVE",
    b"LOCK",
    b"UNLOCK",
    b"SEARCH",
    b"REPORT",
    b"MKACTIVITY",
    b"CHECKOUT",
    b"MERGE",
    b"NOTIFY",
    b"SUBSCRIBE",
    b"UNSUBSCRIBE",
    b"PURGE",
];

/// Most transactions waiting for a response; older ones are logged as request-only when this is exceeded.
const MAX_PENDING_TX: usize = 64;
/// Longest chunk-size line (digits plus extensions) accepted.
const MAX_CHUNK_LINE: usize = 1024;
/// Bytes of a request line looked at while detecting before deciding without its end.
const DETECT_LINE: usize = 1024;

/// The EVE `http` event: one per transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HttpEvent {
    /// Transaction number within the flow (EVE puts it at the top level as `tx_id`).
    #[serde(skip)]
    pub tx_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_user_agent: Option<String>,
    /// The response's Content-Type (Suricata logs the response's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_content_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_refer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xff: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_method: Option<String>,
    /// Request protocol, e.g. `HTTP/1.1` (the response's when there was no request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The response's Location header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect: Option<String>,
    /// Response body bytes as transferred (de-chunked, still compressed).
    pub length: u64,
    /// Request body bytes (de-chunked). Not in Suricata's schema: not written.
    #[serde(skip)]
    pub request_body_length: u64,
    /// Response `Content-Encoding` when it was decoded (`gzip`, `deflate`). Not in Suricata's schema: not written.
    #[serde(skip)]
    pub content_encoding: Option<String>,
    /// The request carried a user name and password in the clear (`Authorization: Basic`). Not in Suricata's
    /// schema: not written.
    #[serde(skip)]
    pub basic_credentials: bool,
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Judges the start of a client stream (a request line) or a server stream (a status line).
pub fn probe_http(p: &[u8]) -> Probe {
    // Cheap reject: the first letter of a method in `METHODS`, or `H` of `HTTP/`.
    match p.first() {
        None => return Probe::Unsure,
        Some(
            b'C' | b'D' | b'G' | b'H' | b'L' | b'M' | b'N' | b'O' | b'P' | b'R' | b'S' | b'T'
            | b'U',
        ) => {}
        Some(_) => return Probe::NotForUs,
    }
    // Response (flow picked up from the reply, or a server speaking first).
    let resp = b"HTTP/1.";
    if p.len() < resp.len() + 5 {
        if resp.starts_with(&p[..p.len().min(resp.len())]) {
            return if p.len() <= resp.len()
                || p[resp.len()..]
                    .iter()
                    .all(|b| b.is_ascii_digit() || *b == b' ')
            {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
    } else if p.starts_with(resp) {
        let rest = &p[resp.len()..];
        return if matches!(rest[0], b'0' | b'1')
            && rest[1] == b' '
            && rest[2..5].iter().all(u8::is_ascii_digit)
        {
            Probe::Certain
        } else {
            Probe::NotForUs
        };
    }
    // Request: METHOD SP target SP HTTP/1.x CRLF
    let Some(sp) = p.iter().take(13).position(|&b| b == b' ') else {
        // No space yet: still a prefix of some method?
        return if p.len() < 12 && METHODS.iter().any(|m| m.starts_with(p)) {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    let method = &p[..sp];
    if !METHODS.contains(&method) {
        return Probe::NotForUs;
    }
    let line_end = memchr::memchr(b'\n', p);
    let Some(end) = line_end else {
        return if p.len() >= DETECT_LINE {
            Probe::Certain
        } else {
            Probe::Unsure
        };
    };
    let line = trim_cr(&p[..end]);
    let mut parts = line[sp + 1..]
        .split(|&b| b == b' ')
        .filter(|s| !s.is_empty());
    let target = parts.next();
    let version = line.rsplit(|&b| b == b' ').next().unwrap_or(b"");
    match target {
        None => Probe::NotForUs,
        Some(_) if version.starts_with(b"HTTP/1.") || version.starts_with(b"HTTP/0.9") => {
            Probe::Certain
        }
        // HTTP/0.9 simple request: "GET /path" and nothing more.
        Some(t) if method == b"GET" && t.first() == Some(&b'/') && parts.next().is_none() => {
            Probe::Certain
        }
        _ => Probe::NotForUs,
    }
}

/// HTTP/1.x over TCP.
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpDetector;

impl Detector for HttpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Http
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        probe_http(ctx.prefix)
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"CDGHLMNOPRSTU")
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(HttpParser::new(limits)))
    }
}

/// HTTP `CONNECT` requests (nDPI's `HTTP_Connect`): the tunnel set-up; the same parser follows the flow.
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpConnectDetector;

impl Detector for HttpConnectDetector {
    fn proto(&self) -> AppProto {
        AppProto::HttpConnect
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"C")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        let verb = b"CONNECT ";
        if !verb.starts_with(&p[..p.len().min(verb.len())]) {
            return Probe::NotForUs;
        }
        if p.len() < verb.len() {
            Probe::Unsure
        } else {
            probe_http(p)
        }
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(HttpParser::new(limits)))
    }
}

/// HTTP requests to a proxy (nDPI's `HTTP_Proxy`): the request target is in absolute form (`GET http://host/`).
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpProxyDetector;

impl Detector for HttpProxyDetector {
    fn proto(&self) -> AppProto {
        AppProto::HttpProxy
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::ranges(&[(b'A', b'Z')])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        if !p.first().is_some_and(u8::is_ascii_uppercase) {
            return Probe::NotForUs;
        }
        let Some(sp) = p.iter().take(13).position(|&b| b == b' ') else {
            return if p.len() < 13 {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let target = &p[sp + 1..];
        let abs = b"http://";
        let n = target.len().min(abs.len());
        if !target[..n].eq_ignore_ascii_case(&abs[..n]) {
            return Probe::NotForUs;
        }
        if n < abs.len() {
            Probe::Unsure
        } else {
            probe_http(p)
        }
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(HttpParser::new(limits)))
    }
}

fn trim_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

fn trim_ws(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = s {
        s = rest;
    }
    s
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Splits `Host` into (lowercase name, port); IPv6 literals keep their brackets.
fn split_host(h: &[u8]) -> (String, Option<u16>) {
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
struct Head {
    host: Option<(String, Option<u16>)>,
    user_agent: Option<String>,
    content_type: Option<String>,
    referer: Option<String>,
    xff: Option<String>,
    location: Option<String>,
    /// `Authorization: Basic ...`: credentials in the clear.
    basic_credentials: bool,
    content_length: Option<u64>,
    chunked: bool,
    encoding: Encoding,
    /// Byte range of the header lines (after the first line) inside the head buffer.
    headers: std::ops::Range<usize>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Encoding {
    #[default]
    Identity,
    Gzip,
    Deflate,
}

impl Encoding {
    /// The coding's name as EVE's `content_encoding` shows it.
    fn name(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
        }
    }
}

/// Parses the header lines of a head block (everything after the first line).
fn parse_headers(block: &[u8], base: usize) -> Head {
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
        if is(b"host") {
            h.host.get_or_insert_with(|| split_host(value));
        } else if is(b"user-agent") {
            h.user_agent.get_or_insert_with(|| lossy(value));
        } else if is(b"content-type") {
            h.content_type.get_or_insert_with(|| lossy(value));
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

/// Splits a request line into (method, target, protocol); the protocol is empty for an HTTP/0.9-style line.
///
/// The target runs from after the method to the *last* space before an `HTTP/` protocol token, so a target
/// containing spaces (`GET /uri afterspace HTTP/1.1`, which curl sends unescaped and servers answer) is kept whole,
/// as libhtp does since Suricata 8: splitting at the first space would hide the rest of the URI from `http.uri`.
/// Without a trailing `HTTP/` token the line is `METHOD target` (one token after the method, else the last token is
/// taken as the protocol and the caller rejects it). Runs of spaces between the parts are tolerated.
fn split_request_line(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
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
fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
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

/// How a message body is delimited, and where its decoder stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

/// Position inside a chunked body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Reading a chunk-size line: value so far, whether a digit was seen, whether we are past the digits
    /// (extensions), and how long the line is.
    Size {
        value: u64,
        digits: bool,
        ext: bool,
        len: usize,
    },
    /// Inside chunk data.
    Data(u64),
    /// After chunk data, expecting CRLF.
    DataEnd,
    /// Trailer section: bytes in the current line (0 = at the start of a line).
    Trailer(usize),
}

/// What one step of body framing produced.
enum Step {
    /// `n` input bytes consumed, of which `data` (a range of the input) is body content.
    Data {
        n: usize,
        data: std::ops::Range<usize>,
    },
    /// The body ended after `n` input bytes.
    Done { n: usize },
    /// Framing error.
    Bad,
}

fn frame_step(f: &mut Framing, input: &[u8]) -> Step {
    match f {
        // The caller sees the length reach zero after taking the data, and finishes the body.
        Framing::Length(rem) => {
            let take = (*rem).min(input.len() as u64) as usize;
            *rem -= take as u64;
            Step::Data {
                n: take,
                data: 0..take,
            }
        }
        Framing::UntilClose => Step::Data {
            n: input.len(),
            data: 0..input.len(),
        },
        Framing::Chunked(c) => chunk_step(c, input),
    }
}

fn chunk_step(c: &mut Chunk, input: &[u8]) -> Step {
    let mut i = 0;
    while i < input.len() {
        match c {
            Chunk::Size {
                value,
                digits,
                ext,
                len,
            } => {
                let b = input[i];
                i += 1;
                *len += 1;
                if *len > MAX_CHUNK_LINE {
                    return Step::Bad;
                }
                match b {
                    b'\n' => {
                        if !*digits {
                            // Tolerate stray empty lines between chunks.
                            *len = 0;
                            continue;
                        }
                        *c = if *value == 0 {
                            Chunk::Trailer(0)
                        } else {
                            Chunk::Data(*value)
                        };
                    }
                    b'\r' => {}
                    _ if *ext => {}
                    b';' | b' ' | b'\t' => *ext = *digits || b != b';',
                    _ => {
                        let Some(d) = (b as char).to_digit(16) else {
                            return Step::Bad;
                        };
                        *value = match value.checked_mul(16) {
                            Some(v) => v + u64::from(d),
                            None => return Step::Bad,
                        };
                        *digits = true;
                    }
                }
            }
            Chunk::Data(rem) => {
                let take = (*rem).min((input.len() - i) as u64) as usize;
                *rem -= take as u64;
                let start = i;
                if *rem == 0 {
                    *c = Chunk::DataEnd;
                }
                if take > 0 {
                    return Step::Data {
                        n: start + take,
                        data: start..start + take,
                    };
                }
            }
            Chunk::DataEnd => {
                let b = input[i];
                i += 1;
                match b {
                    b'\r' => {}
                    b'\n' => {
                        *c = Chunk::Size {
                            value: 0,
                            digits: false,
                            ext: false,
                            len: 0,
                        }
                    }
                    _ => return Step::Bad,
                }
            }
            Chunk::Trailer(len) => {
                let b = input[i];
                i += 1;
                match b {
                    b'\n' if *len == 0 => return Step::Done { n: i },
                    b'\n' => *len = 0,
                    b'\r' if *len == 0 => {}
                    _ => {
                        *len += 1;
                        if *len > MAX_CHUNK_LINE {
                            return Step::Bad;
                        }
                    }
                }
            }
        }
    }
    Step::Data { n: i, data: 0..0 }
}

/// A `Write` that keeps at most `cap` bytes and counts what it refused.
#[derive(Debug, Default)]
struct CapWriter {
    buf: Vec<u8>,
    cap: usize,
    cut: u64,
}

impl CapWriter {
    fn full(&self) -> bool {
        self.buf.len() >= self.cap
    }
}

impl Write for CapWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let room = self.cap.saturating_sub(self.buf.len());
        let take = room.min(b.len());
        self.buf.extend_from_slice(&b[..take]);
        self.cut += (b.len() - take) as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A body inflater. `Sniff` waits for the first body byte: for `gzip` it must start the gzip magic, for `deflate`
/// it tells zlib from raw deflate (servers send both).
///
/// A body labelled compressed that is not (clear text behind `Content-Encoding: gzip`, which Android SDKs send) goes
/// through as it is, as libhtp's "passthrough" does: when the first byte cannot start the announced coding, or the
/// decoder fails on the first bytes fed before producing anything. Rules then see the clear text instead of an empty
/// body.
enum Inflate {
    Gzip(GzDecoder<CapWriter>),
    Zlib(ZlibDecoder<CapWriter>),
    Raw(DeflateDecoder<CapWriter>),
    Sniff(CapWriter, Encoding),
    /// Not compressed after all: bytes are kept as they come.
    Passthrough(CapWriter),
    /// Decoding failed or the cap was reached: the body is kept as decoded so far.
    Stopped(CapWriter),
}

impl std::fmt::Debug for Inflate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Inflate::Gzip(_) => "Gzip",
            Inflate::Zlib(_) => "Zlib",
            Inflate::Raw(_) => "Raw",
            Inflate::Sniff(..) => "Sniff",
            Inflate::Passthrough(_) => "Passthrough",
            Inflate::Stopped(_) => "Stopped",
        })
    }
}

impl Inflate {
    fn writer(&mut self) -> &mut CapWriter {
        match self {
            Inflate::Gzip(d) => d.get_mut(),
            Inflate::Zlib(d) => d.get_mut(),
            Inflate::Raw(d) => d.get_mut(),
            Inflate::Sniff(w, _) | Inflate::Passthrough(w) | Inflate::Stopped(w) => w,
        }
    }

    /// Feeds compressed bytes; returns (compressed bytes skipped because the cap was reached, decode error).
    /// `first`: these are the body's first bytes (a decoder failing on them means the body was never compressed).
    fn feed(&mut self, data: &[u8], first: bool) -> (u64, bool) {
        if let Inflate::Sniff(w, enc) = self {
            let Some(&b0) = data.first() else {
                return (0, false);
            };
            let (w, enc) = (std::mem::take(w), *enc);
            *self = match enc {
                Encoding::Gzip if b0 == 0x1f => Inflate::Gzip(GzDecoder::new(w)),
                Encoding::Gzip | Encoding::Identity => Inflate::Passthrough(w),
                Encoding::Deflate => {
                    // RFC 1950: CMF with method 8, and (CMF*256 + FLG) % 31 == 0.
                    let zlib = b0 & 0x0f == 8
                        && data
                            .get(1)
                            .is_none_or(|&b1| (u16::from(b0) * 256 + u16::from(b1)) % 31 == 0);
                    if zlib {
                        Inflate::Zlib(ZlibDecoder::new(w))
                    } else {
                        Inflate::Raw(DeflateDecoder::new(w))
                    }
                }
            };
        }
        if self.writer().full() {
            return (data.len() as u64, false);
        }
        let r = match self {
            Inflate::Gzip(d) => d.write_all(data),
            Inflate::Zlib(d) => d.write_all(data),
            Inflate::Raw(d) => d.write_all(data),
            Inflate::Passthrough(w) => w.write_all(data),
            Inflate::Sniff(..) | Inflate::Stopped(_) => return (data.len() as u64, false),
        };
        if r.is_err() {
            if first && self.writer().buf.is_empty() {
                let mut w = std::mem::take(self.writer());
                let _ = w.write_all(data);
                *self = Inflate::Passthrough(w);
                return (0, false);
            }
            self.stop();
            return (0, true);
        }
        (0, false)
    }

    /// Flushes the decoder and returns the output buffer.
    /// Flushes the decoder and returns the output buffer, and whether the stream was broken (an incomplete
    /// stream is not an error when we stopped feeding it at the cap).
    fn finish(mut self) -> (CapWriter, bool) {
        let capped = self.writer().full();
        let err = match &mut self {
            Inflate::Gzip(d) => d.try_finish().is_err(),
            Inflate::Zlib(d) => d.try_finish().is_err(),
            Inflate::Raw(d) => d.try_finish().is_err(),
            _ => false,
        };
        (std::mem::take(self.writer()), err && !capped)
    }

    fn stop(&mut self) {
        let w = std::mem::take(self.writer());
        *self = Inflate::Stopped(w);
    }
}

/// One transaction: the request (if seen) and, once parsed, the response.
#[derive(Debug, Default)]
struct Tx {
    ev: HttpEvent,
    head_request: bool,
    connect: bool,
    /// HTTP/0.9 simple request: the response is a bare body until close.
    simple: bool,
    request_done: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Collecting a head block.
    Head,
    /// Inside a body.
    Body(Framing),
    /// Opaque bytes (tunnel after CONNECT/Upgrade): ignored.
    Tunnel,
    /// Unparseable: this direction is no longer parsed.
    Dead,
}

/// One direction's parser state.
#[derive(Debug)]
struct Side {
    state: State,
    head: Vec<u8>,
    /// Where the next scan for the blank line starts.
    scan: usize,
    body: Vec<u8>,
    body_len: u64,
    inflate: Option<Inflate>,
}

impl Side {
    fn new() -> Self {
        Side {
            state: State::Head,
            head: Vec::new(),
            scan: 0,
            body: Vec::new(),
            body_len: 0,
            inflate: None,
        }
    }
}

impl Side {
    /// Gets the body buffer ready for a new message body, with an inflater when the body is compressed
    /// (`Content-Encoding: gzip` or `deflate`) and decompression is on. Returns whether the body is inflated.
    fn start_body(&mut self, enc: Encoding, cap: usize, decompress: bool) -> bool {
        self.body.clear();
        self.body_len = 0;
        self.inflate = None;
        if !decompress || cap == 0 {
            return false;
        }
        if enc == Encoding::Identity {
            return false;
        }
        let w = CapWriter {
            buf: std::mem::take(&mut self.body),
            cap,
            cut: 0,
        };
        self.inflate = Some(Inflate::Sniff(w, enc));
        true
    }

    /// Body bytes as they arrive (de-chunked): inflated, or kept as they are, up to `cap`; what the cap refuses is
    /// counted.
    fn body_data(&mut self, chunk: &[u8], cap: usize, stats: &mut ParserStats) {
        let first = self.body_len == 0;
        self.body_len += chunk.len() as u64;
        match self.inflate.as_mut() {
            Some(inf) => {
                let (skipped, err) = inf.feed(chunk, first);
                stats.decompress_cut += skipped;
                if err {
                    stats.malformed += 1;
                }
            }
            None => {
                let room = cap.saturating_sub(self.body.len());
                let take = room.min(chunk.len());
                self.body.extend_from_slice(&chunk[..take]);
                stats.bytes_cut += (chunk.len() - take) as u64;
            }
        }
    }

    /// The body ended: flush the inflater (if any) into `body`.
    fn finish_inflate(&mut self, stats: &mut ParserStats) {
        if let Some(inf) = self.inflate.take() {
            let (w, err) = inf.finish();
            // A message announced as compressed but without a body is not a broken stream.
            if err && self.body_len > 0 {
                stats.malformed += 1;
            }
            stats.decompress_cut += w.cut;
            self.body = w.buf;
        }
    }
}

/// The HTTP/1.x parser of one flow.
#[derive(Debug)]
pub struct HttpParser {
    limits: Limits,
    req: Side,
    resp: Side,
    /// Transactions whose response is not complete, oldest first.
    txs: VecDeque<Tx>,
    /// Index in `txs` of the transaction the response side is working on (the front, once its head is parsed).
    next_tx: u64,
    stats: ParserStats,
    /// Whether the first data has been seen, and whether it showed the flow's "client" to be the server (a flow
    /// picked up from its responses, whose first sender the engine took for the client).
    oriented: bool,
    swapped: bool,
}

impl HttpParser {
    /// A parser for one flow.
    pub fn new(limits: &Limits) -> Self {
        HttpParser {
            limits: *limits,
            req: Side::new(),
            resp: Side::new(),
            txs: VecDeque::new(),
            next_tx: 0,
            stats: ParserStats::default(),
            oriented: false,
            swapped: false,
        }
    }

    /// Decides once, from the first bytes, which side sends requests.
    fn orient(&mut self, dir: Direction, data: &[u8]) {
        let start = data
            .iter()
            .position(|&b| b != b'\r' && b != b'\n')
            .unwrap_or(data.len());
        let d = &data[start..];
        if d.is_empty() {
            return;
        }
        self.oriented = true;
        let is_status = d.starts_with(b"HTTP/");
        let is_request = d
            .iter()
            .position(|&b| b == b' ')
            .is_some_and(|sp| METHODS.contains(&&d[..sp]));
        self.swapped = match dir {
            Direction::ToServer => is_status,
            Direction::ToClient => is_request,
        };
    }

    /// Collects head bytes; returns the bytes after the head once it is complete (`Some`), or `None` when more are
    /// needed or the side died.
    fn collect_head<'a>(
        side: &mut Side,
        cap: usize,
        stats: &mut ParserStats,
        mut data: &'a [u8],
    ) -> Option<(usize, &'a [u8])> {
        if side.head.is_empty() {
            // Skip stray line ends between messages (clients send CRLF after a POST body).
            while let [b'\r' | b'\n', rest @ ..] = data {
                data = rest;
            }
            if data.is_empty() {
                return None;
            }
        }
        let before = side.head.len();
        let room = cap.saturating_sub(before);
        let take = room.min(data.len());
        side.head.extend_from_slice(&data[..take]);
        match find_head_end(&side.head, side.scan) {
            Some(end) => {
                // Bytes of `data` that belong to the head; the rest is returned.
                let used = end - before;
                side.scan = 0;
                Some((end, &data[used..]))
            }
            None => {
                // An HTTP/0.9 request has no head block: one line and done.
                side.scan = side.head.len().saturating_sub(3);
                if take < data.len() {
                    stats.bytes_cut += (data.len() - take) as u64;
                    stats.gave_up += 1;
                    side.state = State::Dead;
                    side.head = Vec::new();
                }
                None
            }
        }
    }

    fn parse_request(&mut self, mut data: &[u8], out: &mut dyn EventSink) {
        while !data.is_empty() {
            match self.req.state {
                State::Dead | State::Tunnel => return,
                State::Head => {
                    // HTTP/0.9: "GET /path\r\n" with no version ends at the first line.
                    let Some((end, rest)) = Self::collect_head(
                        &mut self.req,
                        self.limits.http_header_cap,
                        &mut self.stats,
                        data,
                    ) else {
                        // No blank line yet; a complete HTTP/0.9 request line is all there will be.
                        if self.req.state == State::Head {
                            self.simple_request(out);
                        }
                        return;
                    };
                    data = rest;
                    if !self.request_head(end, out) {
                        self.req.state = State::Dead;
                        self.stats.malformed += 1;
                        self.stats.gave_up += 1;
                        return;
                    }
                }
                State::Body(mut f) => {
                    let step = frame_step(&mut f, data);
                    match step {
                        Step::Bad => {
                            self.req.state = State::Dead;
                            self.stats.malformed += 1;
                            return;
                        }
                        Step::Data { n, data: r } => {
                            if let Some(chunk) = data.get(r) {
                                self.req.body_data(
                                    chunk,
                                    self.limits.http_request_body_cap,
                                    &mut self.stats,
                                );
                            }
                            data = data.get(n..).unwrap_or(&[]);
                            self.req.state = State::Body(f);
                            if f == Framing::Length(0) {
                                self.request_body_done(out);
                            }
                        }
                        Step::Done { n } => {
                            data = data.get(n..).unwrap_or(&[]);
                            self.request_body_done(out);
                        }
                    }
                }
            }
        }
    }

    /// A request line without a version and without a blank line yet: `GET /path\r\n` is a complete HTTP/0.9
    /// request. Returns whether one was taken.
    fn simple_request(&mut self, out: &mut dyn EventSink) -> bool {
        let Some(nl) = memchr::memchr(b'\n', &self.req.head) else {
            return false;
        };
        let line = trim_cr(&self.req.head[..nl]);
        let mut parts = line.split(|&b| b == b' ').filter(|s| !s.is_empty());
        let (Some(m), Some(uri), None) = (parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        if m != b"GET" {
            return false;
        }
        let id = self.next_tx;
        self.next_tx += 1;
        let tx = Tx {
            ev: HttpEvent {
                tx_id: id,
                url: Some(lossy(uri)),
                http_method: Some("GET".into()),
                ..HttpEvent::default()
            },
            simple: true,
            request_done: true,
            ..Tx::default()
        };
        out.http_buffer(id, HttpBuffer::Method, b"GET");
        out.http_buffer(id, HttpBuffer::Uri, uri);
        self.push_tx(tx, out);
        // Everything after a simple request is not HTTP/1.x framing.
        self.req.state = State::Tunnel;
        self.req.head = Vec::new();
        true
    }

    fn push_tx(&mut self, tx: Tx, out: &mut dyn EventSink) {
        if self.txs.len() >= MAX_PENDING_TX
            && let Some(old) = self.txs.pop_front()
        {
            self.stats.bytes_cut += 1;
            out.event(AppEvent::Http(old.ev));
        }
        self.txs.push_back(tx);
    }

    /// Parses a complete request head (`self.req.head[..end]`); false when it is not a request.
    fn request_head(&mut self, end: usize, out: &mut dyn EventSink) -> bool {
        let head = std::mem::take(&mut self.req.head);
        let ok = self.request_head_in(&head[..end.min(head.len())], out);
        self.req.head = head;
        self.req.head.clear();
        ok
    }

    fn request_head_in(&mut self, head: &[u8], out: &mut dyn EventSink) -> bool {
        let nl = memchr::memchr(b'\n', head).unwrap_or(head.len());
        let line = trim_cr(&head[..nl]);
        let Some((method, uri, proto)) = split_request_line(line) else {
            return false;
        };
        if !method.iter().all(|&b| is_token_byte(b))
            || !(proto.starts_with(b"HTTP/") || proto.is_empty())
        {
            return false;
        }
        let block_start = (nl + 1).min(head.len());
        let h = parse_headers(&head[block_start..], block_start);
        let id = self.next_tx;
        self.next_tx += 1;
        let (hostname, http_port) = match &h.host {
            Some((n, p)) => (Some(n.clone()), *p),
            None => (None, None),
        };
        let ev = HttpEvent {
            tx_id: id,
            hostname,
            http_port,
            url: Some(lossy(uri)),
            http_user_agent: h.user_agent.clone(),
            http_refer: h.referer.clone(),
            xff: h.xff.clone(),
            http_method: Some(lossy(method)),
            protocol: (!proto.is_empty()).then(|| lossy(proto)),
            basic_credentials: h.basic_credentials,
            ..HttpEvent::default()
        };
        out.http_buffer(id, HttpBuffer::RequestLine, line);
        out.http_buffer(id, HttpBuffer::RequestHead, head);
        out.http_buffer(id, HttpBuffer::Method, method);
        out.http_buffer(id, HttpBuffer::Uri, uri);
        if let Some((host, _)) = &h.host {
            out.http_buffer(id, HttpBuffer::Host, host.as_bytes());
        }
        if let Some(ua) = &h.user_agent {
            out.http_buffer(id, HttpBuffer::UserAgent, ua.as_bytes());
        }
        out.http_buffer(
            id,
            HttpBuffer::RequestHeaders,
            head.get(h.headers.clone()).unwrap_or(&[]),
        );
        let tx = Tx {
            ev,
            head_request: method == b"HEAD",
            connect: method == b"CONNECT",
            simple: false,
            request_done: false,
        };
        self.push_tx(tx, out);
        // Request bodies are inflated like response bodies: a client may compress what it uploads (a POST with
        // `Content-Encoding: gzip`), and `http.request_body` rules are written against the decoded form, as
        // libhtp hands it to Suricata.
        self.req.start_body(
            h.encoding,
            self.limits.http_request_body_cap,
            self.limits.http_decompress,
        );
        // RFC 9112 §6.3: a request body is chunked or has a Content-Length; otherwise there is none.
        self.req.state = if h.chunked {
            State::Body(Framing::Chunked(Chunk::Size {
                value: 0,
                digits: false,
                ext: false,
                len: 0,
            }))
        } else {
            match h.content_length {
                Some(n) if n > 0 => State::Body(Framing::Length(n)),
                _ => {
                    self.request_body_done(out);
                    return true;
                }
            }
        };
        true
    }

    fn request_body_done(&mut self, out: &mut dyn EventSink) {
        self.req.finish_inflate(&mut self.stats);
        // The request being completed is the newest transaction.
        if let Some(tx) = self.txs.back_mut()
            && !tx.request_done
        {
            tx.request_done = true;
            tx.ev.request_body_length = self.req.body_len;
            if !self.req.body.is_empty() {
                out.http_buffer(tx.ev.tx_id, HttpBuffer::RequestBody, &self.req.body);
            }
        }
        self.req.body.clear();
        self.req.body_len = 0;
        self.req.state = State::Head;
    }

    fn parse_response(&mut self, mut data: &[u8], out: &mut dyn EventSink) {
        while !data.is_empty() {
            match self.resp.state {
                State::Dead | State::Tunnel => return,
                State::Head => {
                    // HTTP/0.9 response: no status line, the body runs to the end of the connection.
                    if self.resp.head.is_empty() && self.txs.front().is_some_and(|t| t.simple) {
                        self.start_body(Framing::UntilClose, Encoding::Identity);
                        continue;
                    }
                    let Some((end, rest)) = Self::collect_head(
                        &mut self.resp,
                        self.limits.http_header_cap,
                        &mut self.stats,
                        data,
                    ) else {
                        if self.resp.head.len() >= 5 && !self.resp.head.starts_with(b"HTTP/") {
                            self.resp.state = State::Dead;
                            self.stats.malformed += 1;
                            self.stats.gave_up += 1;
                        }
                        return;
                    };
                    data = rest;
                    let head = std::mem::take(&mut self.resp.head);
                    let ok = self.response_head(&head[..end.min(head.len())], out);
                    self.resp.head = head;
                    self.resp.head.clear();
                    if !ok {
                        self.resp.state = State::Dead;
                        self.stats.malformed += 1;
                        self.stats.gave_up += 1;
                        return;
                    }
                }
                State::Body(mut f) => match frame_step(&mut f, data) {
                    Step::Bad => {
                        self.stats.malformed += 1;
                        self.response_done(out);
                        self.resp.state = State::Dead;
                        return;
                    }
                    Step::Data { n, data: r } => {
                        if let Some(chunk) = data.get(r) {
                            self.response_data(chunk);
                        }
                        data = data.get(n..).unwrap_or(&[]);
                        self.resp.state = State::Body(f);
                        if f == Framing::Length(0) {
                            self.response_done(out);
                        }
                    }
                    Step::Done { n } => {
                        data = data.get(n..).unwrap_or(&[]);
                        self.response_done(out);
                    }
                },
            }
        }
    }

    /// Parses a response head; false when it is not a status line.
    fn response_head(&mut self, head: &[u8], out: &mut dyn EventSink) -> bool {
        let nl = memchr::memchr(b'\n', head).unwrap_or(head.len());
        let line = trim_cr(&head[..nl]);
        let mut parts = line.splitn(3, |&b| b == b' ');
        let (Some(proto), Some(code)) = (parts.next(), parts.next()) else {
            return false;
        };
        if !proto.starts_with(b"HTTP/") || code.len() != 3 || !code.iter().all(u8::is_ascii_digit) {
            return false;
        }
        let status = code.iter().fold(0u16, |a, &d| a * 10 + u16::from(d - b'0'));
        let block_start = (nl + 1).min(head.len());
        let h = parse_headers(&head[block_start..], block_start);
        if (100..200).contains(&status) && status != 101 {
            return true; // interim response: the final one follows
        }
        if self.txs.is_empty() {
            // A response whose request we did not see (flow picked up late, or a gap).
            let id = self.next_tx;
            self.next_tx += 1;
            self.txs.push_back(Tx {
                ev: HttpEvent {
                    tx_id: id,
                    protocol: Some(lossy(proto)),
                    ..HttpEvent::default()
                },
                request_done: true,
                ..Tx::default()
            });
        }
        let Some(tx) = self.txs.front_mut() else {
            return false;
        };
        tx.ev.status = Some(status);
        tx.ev.http_content_type = h.content_type.clone();
        tx.ev.redirect = h.location.clone();
        let id = tx.ev.tx_id;
        let (head_req, connect) = (tx.head_request, tx.connect);
        out.http_buffer(id, HttpBuffer::ResponseLine, line);
        out.http_buffer(id, HttpBuffer::ResponseHead, head);
        out.http_buffer(id, HttpBuffer::StatusCode, code);
        out.http_buffer(
            id,
            HttpBuffer::ResponseHeaders,
            head.get(h.headers.clone()).unwrap_or(&[]),
        );
        if status == 101 || (connect && (200..300).contains(&status)) {
            // The connection now carries something else.
            self.resp.body_len = 0;
            self.response_done(out);
            self.resp.state = State::Tunnel;
            self.req.state = State::Tunnel;
            return true;
        }
        let no_body = head_req || status == 204 || status == 304;
        let framing = if no_body {
            None
        } else if h.chunked {
            Some(Framing::Chunked(Chunk::Size {
                value: 0,
                digits: false,
                ext: false,
                len: 0,
            }))
        } else {
            match h.content_length {
                Some(0) => None,
                Some(n) => Some(Framing::Length(n)),
                None => Some(Framing::UntilClose),
            }
        };
        match framing {
            None => {
                self.resp.body_len = 0;
                self.response_done(out);
            }
            Some(f) => self.start_body(f, h.encoding),
        }
        true
    }

    fn start_body(&mut self, f: Framing, enc: Encoding) {
        self.resp.state = State::Body(f);
        let inflating = self.resp.start_body(
            enc,
            self.limits.http_response_body_cap,
            self.limits.http_decompress,
        );
        if let (Some(tx), true) = (self.txs.front_mut(), inflating) {
            tx.ev.content_encoding = Some(enc.name().into());
        }
    }

    fn response_data(&mut self, chunk: &[u8]) {
        self.resp
            .body_data(chunk, self.limits.http_response_body_cap, &mut self.stats);
    }

    /// The response of the front transaction is complete: deliver its body, log it, and get ready for the next.
    fn response_done(&mut self, out: &mut dyn EventSink) {
        self.resp.finish_inflate(&mut self.stats);
        if let Some(mut tx) = self.txs.pop_front() {
            tx.ev.length = self.resp.body_len;
            if !self.resp.body.is_empty() {
                out.http_buffer(tx.ev.tx_id, HttpBuffer::ResponseBody, &self.resp.body);
            }
            out.event(AppEvent::Http(tx.ev));
        }
        self.resp.body.clear();
        self.resp.body_len = 0;
        self.resp.state = State::Head;
    }
}

impl Parser for HttpParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if !self.oriented {
            self.orient(dir, data);
        }
        let dir = if self.swapped { dir.reverse() } else { dir };
        match dir {
            Direction::ToServer => self.parse_request(data, out),
            Direction::ToClient => self.parse_response(data, out),
        }
    }

    fn gap(&mut self, dir: Direction, len: u64) {
        let dir = if self.swapped { dir.reverse() } else { dir };
        let side = match dir {
            Direction::ToServer => &mut self.req,
            Direction::ToClient => &mut self.resp,
        };
        match &mut side.state {
            // A gap inside a body of known length only loses body bytes: keep the framing.
            State::Body(Framing::Length(rem)) if *rem > len => {
                *rem -= len;
                side.body_len += len;
                self.stats.bytes_cut += len;
                if let Some(inf) = side.inflate.as_mut() {
                    inf.stop(); // the compressed stream cannot continue across lost bytes
                }
            }
            State::Body(Framing::UntilClose) => {
                side.body_len += len;
                self.stats.bytes_cut += len;
                if let Some(inf) = side.inflate.as_mut() {
                    inf.stop();
                }
            }
            State::Dead | State::Tunnel => {}
            _ => {
                side.state = State::Dead;
                self.stats.gave_up += 1;
            }
        }
    }

    fn finish(&mut self, out: &mut dyn EventSink) {
        // A request head cut by the close: parse what arrived (a request line at least).
        if self.req.state == State::Head
            && memchr::memchr(b'\n', &self.req.head).is_some()
            && !self.req.head.is_empty()
        {
            let end = self.req.head.len();
            if !self.request_head(end, out) {
                self.stats.malformed += 1;
            }
        }
        // A response head cut by the close: its status line and the header lines that arrived.
        if self.resp.state == State::Head && self.resp.head.starts_with(b"HTTP/") {
            let head = std::mem::take(&mut self.resp.head);
            if !self.response_head(&head, out) {
                self.stats.malformed += 1;
            }
        }
        if matches!(self.resp.state, State::Body(_)) {
            self.response_done(out);
        }
        if matches!(self.req.state, State::Body(_)) {
            self.request_body_done(out);
        }
        while let Some(tx) = self.txs.pop_front() {
            out.event(AppEvent::Http(tx.ev));
        }
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::{GzEncoder, ZlibEncoder};

    /// Records events and buffers in arrival order.
    #[derive(Debug, Default, PartialEq)]
    struct Rec {
        events: Vec<HttpEvent>,
        buffers: Vec<(u64, HttpBuffer, Vec<u8>)>,
    }

    impl EventSink for Rec {
        fn event(&mut self, e: AppEvent) {
            if let AppEvent::Http(h) = e {
                self.events.push(h);
            }
        }
        fn http_buffer(&mut self, tx: u64, b: HttpBuffer, data: &[u8]) {
            self.buffers.push((tx, b, data.to_vec()));
        }
    }

    impl Rec {
        fn buffer(&self, tx: u64, b: HttpBuffer) -> Option<&[u8]> {
            self.buffers
                .iter()
                .find(|x| x.0 == tx && x.1 == b)
                .map(|x| x.2.as_slice())
        }
    }

    /// Feeds a conversation (direction, bytes) with every message cut at the given points.
    fn run(conv: &[(Direction, Vec<u8>)], limits: &Limits, cuts: &[usize]) -> (Rec, ParserStats) {
        let mut p = HttpParser::new(limits);
        let mut r = Rec::default();
        for (dir, data) in conv {
            let mut last = 0;
            for &c in cuts.iter().filter(|&&c| c > 0 && c < data.len()) {
                if c > last {
                    p.parse(*dir, &data[last..c], 0, &mut r);
                    last = c;
                }
            }
            p.parse(*dir, &data[last..], 0, &mut r);
        }
        p.finish(&mut r);
        (r, p.stats())
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn chunked(body: &[u8], size: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for c in body.chunks(size) {
            out.extend_from_slice(format!("{:x};ext=1\r\n", c.len()).as_bytes());
            out.extend_from_slice(c);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\nTrailer: x\r\n\r\n");
        out
    }

    const PAGE: &[u8] = b"<html><head><title>flowbundle</title></head><body>compressed body, inspected by the rules engine</body></html>";

    /// Two pipelined requests (a GET and a chunked POST), two keep-alive responses (gzip+chunked, and a plain one).
    fn conversation() -> Vec<(Direction, Vec<u8>)> {
        let mut req = b"GET /index.html?q=1 HTTP/1.1\r\nHost: Example.COM:8080\r\nUser-Agent: curl/8.0\r\nReferer: http://a/\r\n\r\n".to_vec();
        req.extend_from_slice(
            b"POST /upload HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        req.extend_from_slice(&chunked(b"name=value&x=y", 5));
        let mut resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        resp.extend_from_slice(&chunked(&gzip(PAGE), 17));
        resp.extend_from_slice(
            b"HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 5\r\n\r\nmoved",
        );
        vec![(Direction::ToServer, req), (Direction::ToClient, resp)]
    }

    #[test]
    fn detects_requests_and_responses() {
        assert_eq!(probe_http(b"GET / HTTP/1.1\r\n"), Probe::Certain);
        assert_eq!(
            probe_http(b"CONNECT example.com:443 HTTP/1.1\r\n"),
            Probe::Certain
        );
        assert_eq!(probe_http(b"OPTIONS * HTTP/1.0\r\n"), Probe::Certain);
        assert_eq!(probe_http(b"PROPFIND /dav HTTP/1.1\r\n"), Probe::Certain);
        assert_eq!(probe_http(b"GET /simple\r\n"), Probe::Certain);
        assert_eq!(probe_http(b"HTTP/1.1 200 OK\r\n"), Probe::Certain);
        assert_eq!(probe_http(b"GE"), Probe::Unsure);
        assert_eq!(probe_http(b"GET /long-url-not-finished"), Probe::Unsure);
        assert_eq!(probe_http(b"HTTP/1"), Probe::Unsure);
        // RTSP and SIP share methods with HTTP but not the version.
        assert_eq!(
            probe_http(b"OPTIONS rtsp://cam/ RTSP/1.0\r\n"),
            Probe::NotForUs
        );
        assert_eq!(probe_http(b"OPTIONS sip:a@b SIP/2.0\r\n"), Probe::NotForUs);
        assert_eq!(probe_http(b"PRI * HTTP/2.0\r\n"), Probe::NotForUs);
        assert_eq!(probe_http(b"\x16\x03\x01\x02\x00"), Probe::NotForUs);
        assert_eq!(probe_http(b"SSH-2.0-OpenSSH"), Probe::NotForUs);
        // The first-byte reject lets every method through.
        for m in METHODS {
            assert_eq!(
                probe_http(m),
                Probe::Unsure,
                "{}",
                String::from_utf8_lossy(m)
            );
        }
    }

    fn probe_with(d: &dyn Detector, p: &[u8]) -> Probe {
        d.probe(&ProbeCtx {
            transport: Transport::Tcp,
            client_port: 50000,
            server_port: 8080,
            dir: Direction::ToServer,
            payload_index: 0,
            dir_index: 0,
            prefix: p,
            data: p,
            prev: &[],
        })
    }

    #[test]
    fn proxy_and_connect_requests_are_named_apart() {
        let proxy = b"GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n";
        let connect = b"CONNECT example.com:443 HTTP/1.1\r\n\r\n";
        let plain = b"GET /x HTTP/1.1\r\n\r\n";
        assert_eq!(probe_with(&HttpProxyDetector, proxy), Probe::Certain);
        assert_eq!(probe_with(&HttpProxyDetector, &proxy[..9]), Probe::Unsure);
        assert_eq!(probe_with(&HttpProxyDetector, plain), Probe::NotForUs);
        assert_eq!(probe_with(&HttpProxyDetector, connect), Probe::NotForUs);
        assert_eq!(probe_with(&HttpConnectDetector, connect), Probe::Certain);
        assert_eq!(probe_with(&HttpConnectDetector, b"CONN"), Probe::Unsure);
        assert_eq!(probe_with(&HttpConnectDetector, plain), Probe::NotForUs);
        let reg = crate::Registry::builtin();
        for (req, proto) in [
            (&proxy[..], AppProto::HttpProxy),
            (connect, AppProto::HttpConnect),
            (plain, AppProto::Http),
        ] {
            let mut c = crate::Classifier::new(&reg, Transport::Tcp, 50000, 8080);
            assert_eq!(
                c.feed(&reg, Direction::ToServer, req)
                    .matched()
                    .map(|i| i.proto),
                Some(proto)
            );
        }
    }

    #[test]
    fn pipelined_transactions_with_chunked_gzip() {
        let (r, stats) = run(&conversation(), &Limits::default(), &[]);
        assert_eq!(stats, ParserStats::default());
        assert_eq!(r.events.len(), 2);
        let a = &r.events[0];
        assert_eq!(a.tx_id, 0);
        assert_eq!(a.hostname.as_deref(), Some("example.com"));
        assert_eq!(a.http_port, Some(8080));
        assert_eq!(a.url.as_deref(), Some("/index.html?q=1"));
        assert_eq!(a.http_user_agent.as_deref(), Some("curl/8.0"));
        assert_eq!(a.http_refer.as_deref(), Some("http://a/"));
        assert_eq!(a.http_method.as_deref(), Some("GET"));
        assert_eq!(a.protocol.as_deref(), Some("HTTP/1.1"));
        assert_eq!(a.status, Some(200));
        assert_eq!(a.http_content_type.as_deref(), Some("text/html"));
        assert_eq!(a.content_encoding.as_deref(), Some("gzip"));
        assert_eq!(a.length, gzip(PAGE).len() as u64);
        assert_eq!(r.buffer(0, HttpBuffer::ResponseBody), Some(PAGE));
        assert_eq!(
            r.buffer(0, HttpBuffer::Host),
            Some(b"example.com".as_slice())
        );
        assert_eq!(r.buffer(0, HttpBuffer::Method), Some(b"GET".as_slice()));
        let hdrs = r.buffer(0, HttpBuffer::RequestHeaders).unwrap();
        assert!(hdrs.starts_with(b"Host: Example.COM:8080\r\n") && hdrs.ends_with(b"\r\n\r\n"));
        let b = &r.events[1];
        assert_eq!(
            (b.tx_id, b.http_method.as_deref(), b.status),
            (1, Some("POST"), Some(302))
        );
        assert_eq!(b.redirect.as_deref(), Some("/next"));
        assert_eq!(b.request_body_length, 14);
        assert_eq!(
            r.buffer(1, HttpBuffer::RequestBody),
            Some(b"name=value&x=y".as_slice())
        );
        assert_eq!(
            r.buffer(1, HttpBuffer::ResponseBody),
            Some(b"moved".as_slice())
        );
        assert_eq!(r.buffer(1, HttpBuffer::StatusCode), Some(b"302".as_slice()));
    }

    /// `curl "127.0.0.1:8000/uri afterspace"`: the request of suricata-verify `http-uri-spaces` (input.pcap).
    #[test]
    fn uri_with_spaces_is_kept_whole() {
        let req = b"GET /uri afterspace HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUser-Agent: curl/7.54.0\r\nAccept: */*\r\n\r\n";
        let (r, stats) = run(
            &[(Direction::ToServer, req.to_vec())],
            &Limits::default(),
            &[7, 20],
        );
        assert_eq!(stats, ParserStats::default());
        assert_eq!(
            r.buffer(0, HttpBuffer::Uri),
            Some(b"/uri afterspace".as_slice())
        );
        assert_eq!(r.events[0].url.as_deref(), Some("/uri afterspace"));
        assert_eq!(r.events[0].protocol.as_deref(), Some("HTTP/1.1"));
        assert_eq!(
            split_request_line(b"GET  /a  b   c  HTTP/1.0 "),
            Some((
                b"GET".as_slice(),
                b"/a  b   c".as_slice(),
                b"HTTP/1.0".as_slice()
            ))
        );
        assert_eq!(
            split_request_line(b"GET /simple"),
            Some((b"GET".as_slice(), b"/simple".as_slice(), b"".as_slice()))
        );
        // Not HTTP at the end: the first token is the target, the last the (rejected) protocol.
        assert_eq!(
            split_request_line(b"OPTIONS rtsp://cam/ x RTSP/1.0"),
            Some((
                b"OPTIONS".as_slice(),
                b"rtsp://cam/".as_slice(),
                b"RTSP/1.0".as_slice()
            ))
        );
        assert_eq!(split_request_line(b"GET"), None);
        assert_eq!(split_request_line(b"GET   "), None);
    }

    /// The gzip-compressed form POST of suricata-verify `http-post-data-decompression` (input.pcap, curl 7.55.1).
    const GZIP_POST_BODY: &str = "1f8b0800efc50e5b0003cb4bcc4db5cdcacfc85348492ccdab54c8cd494c29cec8ace402004e5f516019000000";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn gzip_request_body_is_inflated() {
        let body = unhex(GZIP_POST_BODY);
        let mut req = format!(
            "POST /hi.php HTTP/1.1\r\nHost: 192.168.235.101\r\nUser-Agent: curl/7.55.1\r\nAccept: */*\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(&body);
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
        let conv = [
            (Direction::ToServer, req.clone()),
            (Direction::ToClient, resp),
        ];
        let plain = b"name=john dauny mladshiy\n".as_slice();
        // Whole, and cut inside the compressed body.
        for cuts in [&[][..], &[req.len() - 30, req.len() - 3][..]] {
            let (r, stats) = run(&conv, &Limits::default(), cuts);
            assert_eq!(stats, ParserStats::default());
            assert_eq!(r.buffer(0, HttpBuffer::RequestBody), Some(plain));
            assert_eq!(r.events[0].request_body_length, body.len() as u64);
        }
        // The request body cap bounds the inflated output, and what it cut is counted.
        let small = Limits {
            http_request_body_cap: 4,
            ..Limits::default()
        };
        let (r, stats) = run(&conv, &small, &[]);
        assert_eq!(
            r.buffer(0, HttpBuffer::RequestBody),
            Some(b"name".as_slice())
        );
        assert!(stats.decompress_cut > 0);
        // With decompression off the compressed bytes are the body.
        let off = Limits {
            http_decompress: false,
            ..Limits::default()
        };
        let (r, _) = run(&conv, &off, &[]);
        assert_eq!(r.buffer(0, HttpBuffer::RequestBody), Some(body.as_slice()));
        // A compressed request without a body is not counted as malformed.
        let empty = b"GET / HTTP/1.1\r\nContent-Encoding: gzip\r\n\r\n".to_vec();
        let (_, stats) = run(&[(Direction::ToServer, empty)], &Limits::default(), &[]);
        assert_eq!(stats, ParserStats::default());
    }

    /// suricata-verify `http-encoding-gzip-uncompressed`: an Android SDK labels a clear-text JSON POST as gzip.
    #[test]
    fn body_labelled_gzip_but_clear_passes_through() {
        let body: &[u8] = br#"{"sdk_version":11026,"app_package":"com.xcm.huasheng","app_version":"1.7.4","device_id":"350672920106648"}"#;
        let mut req = format!(
            "POST /api/sdk/init2 HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        let head_len = req.len() - body.len();
        // Whole, and with the body arriving one byte at a time at first.
        for cuts in [&[][..], &[head_len + 1, head_len + 2, head_len + 3][..]] {
            let (r, stats) = run(
                &[(Direction::ToServer, req.clone())],
                &Limits::default(),
                cuts,
            );
            assert_eq!(stats, ParserStats::default());
            assert_eq!(r.buffer(0, HttpBuffer::RequestBody), Some(body));
        }
        // Deflate that fails on its first bytes passes through too (`{` is neither zlib nor a valid raw block).
        let deflate = String::from_utf8(req.clone())
            .unwrap()
            .replace("Content-Encoding: gzip", "Content-Encoding: deflate")
            .into_bytes();
        let (r, _) = run(&[(Direction::ToServer, deflate)], &Limits::default(), &[]);
        assert_eq!(r.buffer(0, HttpBuffer::RequestBody), Some(body));
    }

    /// suricata-verify `http-close-headers`: the server sends a status line and one header, then closes the
    /// connection before the blank line.
    #[test]
    fn headers_cut_by_close_are_parsed_at_finish() {
        let req =
            b"GET / HTTP/1.1\r\nHost: 100.64.0.200\r\nConnection: keep-alive\r\n\r\n".to_vec();
        let resp = unhex("485454502f312e3020323030204f4b0a5365727665723a6e67316e780d0a");
        let (r, stats) = run(
            &[(Direction::ToServer, req), (Direction::ToClient, resp)],
            &Limits::default(),
            &[],
        );
        assert_eq!(stats, ParserStats::default());
        assert_eq!(
            r.buffer(0, HttpBuffer::ResponseHeaders),
            Some(b"Server:ng1nx\r\n".as_slice())
        );
        assert_eq!(r.buffer(0, HttpBuffer::StatusCode), Some(b"200".as_slice()));
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.events[0].status, Some(200));
        // A request head cut the same way still yields its request line and headers.
        let (r, _) = run(
            &[(
                Direction::ToServer,
                b"GET /cut HTTP/1.1\r\nHost: a".to_vec(),
            )],
            &Limits::default(),
            &[],
        );
        assert_eq!(r.buffer(0, HttpBuffer::Uri), Some(b"/cut".as_slice()));
        assert_eq!(r.buffer(0, HttpBuffer::Host), Some(b"a".as_slice()));
        // Something that is not a status line is not turned into a response.
        let (r, _) = run(
            &[(Direction::ToClient, b"garbage\r\n".to_vec())],
            &Limits::default(),
            &[],
        );
        assert!(r.buffer(0, HttpBuffer::StatusCode).is_none());
    }

    #[test]
    fn every_single_split_point_gives_the_same_result() {
        let conv = conversation();
        let (whole, _) = run(&conv, &Limits::default(), &[]);
        let longest = conv.iter().map(|c| c.1.len()).max().unwrap();
        for cut in 1..longest {
            let (split, stats) = run(&conv, &Limits::default(), &[cut]);
            assert_eq!(split, whole, "split at {cut}");
            assert_eq!(stats, ParserStats::default(), "split at {cut}");
        }
        // Byte by byte.
        let all: Vec<usize> = (1..longest).collect();
        assert_eq!(run(&conv, &Limits::default(), &all).0, whole);
    }

    #[test]
    fn deflate_zlib_and_raw() {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(PAGE).unwrap();
        let zlib = z.finish().unwrap();
        let mut d = flate2::write::DeflateEncoder::new(Vec::new(), Compression::default());
        d.write_all(PAGE).unwrap();
        let raw = d.finish().unwrap();
        for body in [zlib, raw] {
            let mut resp = format!(
                "HTTP/1.0 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            resp.extend_from_slice(&body);
            let conv = vec![
                (Direction::ToServer, b"GET / HTTP/1.0\r\n\r\n".to_vec()),
                (Direction::ToClient, resp),
            ];
            let (r, stats) = run(&conv, &Limits::default(), &[3, 40, 60]);
            assert_eq!(r.buffer(0, HttpBuffer::ResponseBody), Some(PAGE));
            assert_eq!(stats.malformed, 0);
        }
    }

    #[test]
    fn decompression_stops_at_the_cap_and_counts() {
        let big = vec![b'a'; 1 << 20];
        let gz = gzip(&big);
        let mut resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
            gz.len()
        )
        .into_bytes();
        resp.extend_from_slice(&gz);
        let limits = Limits {
            http_response_body_cap: 1000,
            ..Limits::default()
        };
        let conv = vec![
            (Direction::ToServer, b"GET /big HTTP/1.1\r\n\r\n".to_vec()),
            (Direction::ToClient, resp),
        ];
        let cuts: Vec<usize> = (0..gz.len() + 100).step_by(37).collect();
        let (r, stats) = run(&conv, &limits, &cuts);
        assert_eq!(
            r.buffer(0, HttpBuffer::ResponseBody).map(<[u8]>::len),
            Some(1000)
        );
        assert!(stats.decompress_cut > 0, "{stats:?}");
        assert_eq!(r.events[0].length, gz.len() as u64);
        // Without decompression the body is kept raw.
        let (r, _) = run(
            &conv,
            &Limits {
                http_decompress: false,
                ..Limits::default()
            },
            &[],
        );
        assert_eq!(
            r.buffer(0, HttpBuffer::ResponseBody)
                .map(|b| b[..2].to_vec()),
            Some(vec![0x1f, 0x8b])
        );
    }

    #[test]
    fn bodiless_responses_interim_responses_and_head() {
        let req = b"HEAD /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\nExpect: 100-continue\r\n\r\nGET /c HTTP/1.1\r\n\r\n".to_vec();
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n".to_vec();
        let (r, stats) = run(
            &[(Direction::ToServer, req), (Direction::ToClient, resp)],
            &Limits::default(),
            &[],
        );
        assert_eq!(stats, ParserStats::default());
        let got: Vec<_> = r
            .events
            .iter()
            .map(|e| (e.url.clone().unwrap(), e.status, e.length))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/a".into(), Some(200), 0),
                ("/b".into(), Some(304), 0),
                ("/c".into(), Some(204), 0)
            ]
        );
    }

    #[test]
    fn connect_and_upgrade_become_tunnels() {
        let conv = vec![
            (
                Direction::ToServer,
                b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n".to_vec(),
            ),
            (
                Direction::ToClient,
                b"HTTP/1.1 200 Connection established\r\n\r\n".to_vec(),
            ),
            (Direction::ToServer, b"\x16\x03\x01\x00\x05hello".to_vec()),
            (Direction::ToClient, b"\x16\x03\x03 not http".to_vec()),
        ];
        let (r, stats) = run(&conv, &Limits::default(), &[]);
        assert_eq!(stats, ParserStats::default());
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.events[0].http_method.as_deref(), Some("CONNECT"));
        let conv = vec![
            (
                Direction::ToServer,
                b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n".to_vec(),
            ),
            (
                Direction::ToClient,
                b"HTTP/1.1 101 Switching Protocols\r\n\r\n\x81\x05hello".to_vec(),
            ),
            (Direction::ToServer, b"\x81\x85maskdata".to_vec()),
        ];
        let (r, stats) = run(&conv, &Limits::default(), &[]);
        assert_eq!((r.events.len(), stats), (1, ParserStats::default()));
    }

    #[test]
    fn response_until_close_and_request_without_response() {
        let conv = vec![
            (Direction::ToServer, b"GET /a HTTP/1.0\r\n\r\n".to_vec()),
            (
                Direction::ToClient,
                b"HTTP/1.0 200 OK\r\n\r\nbody until the end".to_vec(),
            ),
        ];
        let (r, _) = run(&conv, &Limits::default(), &[]);
        assert_eq!(
            r.buffer(0, HttpBuffer::ResponseBody),
            Some(b"body until the end".as_slice())
        );
        assert_eq!(r.events[0].length, 18);
        let (r, _) = run(
            &[(
                Direction::ToServer,
                b"GET /lonely HTTP/1.1\r\nHost: h\r\n\r\n".to_vec(),
            )],
            &Limits::default(),
            &[],
        );
        assert_eq!((r.events.len(), r.events[0].status), (1, None));
    }

    #[test]
    fn http09_simple_request() {
        let conv = vec![
            (Direction::ToServer, b"GET /old\r\n".to_vec()),
            (Direction::ToClient, b"<html>raw</html>".to_vec()),
        ];
        let (r, _) = run(&conv, &Limits::default(), &[]);
        assert_eq!(r.events.len(), 1);
        assert_eq!(
            (r.events[0].url.as_deref(), r.events[0].protocol.as_deref()),
            (Some("/old"), None)
        );
        assert_eq!(
            r.buffer(0, HttpBuffer::ResponseBody),
            Some(b"<html>raw</html>".as_slice())
        );
    }

    #[test]
    fn flow_picked_up_from_the_server_side() {
        // The engine took the server for the client: responses arrive "to server".
        let conv = vec![
            (
                Direction::ToServer,
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno".to_vec(),
            ),
            (Direction::ToClient, b"GET /again HTTP/1.1\r\n\r\n".to_vec()),
            (
                Direction::ToServer,
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nyes".to_vec(),
            ),
        ];
        let (r, stats) = run(&conv, &Limits::default(), &[]);
        assert_eq!(stats.gave_up, 0);
        let got: Vec<_> = r.events.iter().map(|e| (e.url.clone(), e.status)).collect();
        assert_eq!(
            got,
            vec![(None, Some(404)), (Some("/again".into()), Some(200))]
        );
    }

    #[test]
    fn header_cap_gives_up_and_counts() {
        let mut req = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..2000 {
            req.extend_from_slice(format!("X-Header-{i}: {}\r\n", "v".repeat(20)).as_bytes());
        }
        req.extend_from_slice(b"\r\n");
        let (r, stats) = run(
            &[(Direction::ToServer, req)],
            &Limits::default(),
            &[1000, 5000],
        );
        assert!(r.events.is_empty());
        assert_eq!(stats.gave_up, 1);
        assert!(stats.bytes_cut > 0);
    }

    #[test]
    fn gap_in_a_sized_body_keeps_the_framing() {
        let mut p = HttpParser::new(&Limits::default());
        let mut r = Rec::default();
        p.parse(
            Direction::ToServer,
            b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
            0,
            &mut r,
        );
        p.parse(
            Direction::ToClient,
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n012",
            0,
            &mut r,
        );
        p.gap(Direction::ToClient, 4);
        p.parse(
            Direction::ToClient,
            b"789HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
            0,
            &mut r,
        );
        p.finish(&mut r);
        let got: Vec<_> = r
            .events
            .iter()
            .map(|e| (e.url.clone().unwrap(), e.status, e.length))
            .collect();
        assert_eq!(
            got,
            vec![("/a".into(), Some(200), 10), ("/b".into(), Some(200), 1)]
        );
        assert_eq!(p.stats().bytes_cut, 4);
    }

    #[test]
    fn garbage_kills_only_its_direction() {
        let conv = vec![
            (Direction::ToServer, b"GET / HTTP/1.1\r\n\r\n".to_vec()),
            (Direction::ToClient, b"\x00\x01garbage\r\n\r\n".to_vec()),
        ];
        let (r, stats) = run(&conv, &Limits::default(), &[]);
        assert_eq!((r.events.len(), stats.gave_up, stats.malformed), (1, 1, 1));
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn arbitrary_bytes_never_panic(a in proptest::collection::vec(any::<u8>(), 0..600),
                                           b in proptest::collection::vec(any::<u8>(), 0..600),
                                           cuts in proptest::collection::vec(0usize..600, 0..8)) {
                let mut cuts = cuts;
                cuts.sort_unstable();
                let _ = probe_http(&a);
                let conv = vec![(Direction::ToServer, a), (Direction::ToClient, b)];
                let _ = run(&conv, &Limits::default(), &cuts);
            }

            #[test]
            fn valid_exchange_any_splits_same_events(cuts in proptest::collection::vec(0usize..700, 0..12)) {
                let conv = conversation();
                let mut cuts = cuts;
                cuts.sort_unstable();
                let whole = run(&conv, &Limits::default(), &[]);
                prop_assert_eq!(run(&conv, &Limits::default(), &cuts), whole);
            }

            #[test]
            fn mutated_exchange_never_panics(pos in 0usize..700, byte in any::<u8>(), cuts in proptest::collection::vec(0usize..700, 0..6)) {
                let mut conv = conversation();
                let i = pos % 2;
                let n = conv[i].1.len();
                conv[i].1[pos % n] = byte;
                let mut cuts = cuts;
                cuts.sort_unstable();
                let _ = run(&conv, &Limits::default(), &cuts);
            }
        }
    }
}
