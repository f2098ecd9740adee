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
//! ## Layout
//! This file holds the detectors; `head.rs` reads request/status lines and header blocks, `body.rs` frames and
//! inflates bodies, `parser.rs` is the per-flow state machine, `event.rs` the EVE `http` event.
//!
//! ## What it costs
//! Per flow: the parser itself (616 bytes on 64-bit, its inflaters boxed and allocated only for a compressed
//! body), its queue of open transactions (about 340 bytes each), two header buffers (grown to the largest head
//! seen, at most the cap), the body buffers (at most their caps) and, per compressed response, one inflate state
//! (~40 KiB, freed when the body ends). No allocation per packet once the buffers have grown. Measured with
//! heaptrack, an open connection that sent three pipelined requests and got the head of the first response held
//! 3.7 KB in all, engine included (see `flowbundle_inspect::Engine::flow_size`).

use crate::{
    AppEvent, AppLayerEvent, AppProto, ByteSet, Detector, Direction, EventSink, HttpBuffer, Limits,
    Parser, ParserStats, Probe, ProbeCtx, Transport,
};

mod body;
mod event;
mod head;
mod parser;

pub use event::{HeaderField, Http2Info, Http2Setting, Http2Side, HttpEvent, HttpTx};
pub use parser::HttpParser;

use body::*;
use head::*;

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

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use std::io::Write;

    /// Records events and buffers in arrival order.
    #[derive(Debug, Default, PartialEq)]
    struct Rec {
        events: Vec<HttpEvent>,
        buffers: Vec<(u64, HttpBuffer, Vec<u8>)>,
        applications: Vec<&'static str>,
        anomalies: Vec<(u64, crate::AppLayerEvents)>,
        files: Vec<RecFile>,
        fileinfo: Vec<crate::FileInfo>,
        /// The transaction of each buffer and file, in the order they came.
        order: Vec<(u64, Option<HttpBuffer>)>,
    }

    /// A file as the rules get it.
    #[derive(Debug, PartialEq)]
    struct RecFile {
        tx: u64,
        to_server: bool,
        name: Vec<u8>,
        data: Vec<u8>,
        size: u64,
        complete: bool,
        digests: crate::file::Digests,
    }

    impl EventSink for Rec {
        fn event(&mut self, e: AppEvent) {
            match e {
                AppEvent::Http(h) => self.events.push(h),
                AppEvent::Fileinfo(f) => self.fileinfo.push(f),
                _ => {}
            }
        }
        fn file(&mut self, f: &crate::FileData<'_>) {
            assert_eq!(f.proto, AppProto::Http);
            self.order.push((f.tx_id, None));
            self.files.push(RecFile {
                tx: f.tx_id,
                to_server: f.to_server,
                name: f.name.to_vec(),
                data: f.data.to_vec(),
                size: f.size,
                complete: f.complete,
                digests: f.digests,
            });
        }
        fn http_buffer(&mut self, tx: HttpTx<'_>, b: HttpBuffer, data: &[u8]) {
            self.order.push((tx.tx_id(), Some(b)));
            self.buffers.push((tx.tx_id(), b, data.to_vec()));
        }
        fn application(&mut self, name: &'static str) {
            self.applications.push(name);
        }
        fn app_layer_events(&mut self, tx: u64, to_server: bool, events: crate::AppLayerEvents) {
            assert!(to_server);
            self.anomalies.push((tx, events));
        }
    }

    fn sha256(data: &[u8]) -> [u8; 32] {
        use sha2::Digest as _;
        sha2::Sha256::digest(data).into()
    }

    fn hashing() -> Limits {
        Limits {
            http_response_body_cap: 64,
            http_request_body_cap: 64,
            file_hashes: crate::file::FileHashes {
                sha256: true,
                ..Default::default()
            },
            ..Limits::default()
        }
    }

    /// A response body is a file named by the request URI's path, or by `Content-Disposition`; it is hashed over
    /// every byte (past the inspection cap) at any split, chunked or not.
    #[test]
    fn response_bodies_are_files_named_by_the_uri_or_the_disposition() {
        let body: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 256) as u8).collect();
        let mut plain = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".to_vec();
        plain.extend_from_slice(&body);
        let mut named = b"HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"in; voice.pdf\"\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        named.extend_from_slice(&chunked(&body, 77));
        let conv = vec![
            (
                Direction::ToServer,
                b"GET /a/expl/2008.mp4?x=1 HTTP/1.1\r\nHost: h\r\n\r\nGET /dl HTTP/1.1\r\nHost: h\r\n\r\n"
                    .to_vec(),
            ),
            (Direction::ToClient, [plain, named].concat()),
        ];
        for cuts in [&[][..], &[1, 50, 51, 700][..]] {
            let (r, _) = run(&conv, &hashing(), cuts);
            assert_eq!(r.files.len(), 2, "{cuts:?}");
            let (a, b) = (&r.files[0], &r.files[1]);
            assert_eq!(
                (a.tx, a.to_server, a.name.as_slice()),
                (0, false, b"/a/expl/2008.mp4".as_slice())
            );
            assert_eq!((b.tx, b.name.as_slice()), (1, b"in; voice.pdf".as_slice()));
            for f in [a, b] {
                assert_eq!(f.size, 1000);
                assert!(f.complete);
                assert_eq!(f.data.as_slice(), &body[..64]);
                assert_eq!(f.digests.sha256, Some(sha256(&body)));
            }
            assert_eq!(r.fileinfo[0].state, "CLOSED");
            assert_eq!(r.fileinfo[1].filename, "in; voice.pdf");
        }
    }

    /// A multipart/form-data POST's files are its parts with a file name, each named by it, decoded (a base64
    /// part) and hashed, as Suricata's HTTP file extraction makes them: the text field is no file, the body no
    /// file of its own; a form the close cuts inside its last file leaves that file `TRUNCATED`.
    #[test]
    fn multipart_form_parts_are_files() {
        let form = b"--AaB03x\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nnot a file\r\n\
--AaB03x\r\nContent-Disposition: form-data; name=\"f1\"; filename=\"titi.txt\"\r\nContent-Type: text/plain\r\n\r\n\
Titi le minet\r\n--AaB03x\r\nContent-Disposition: form-data; name=\"f2\"; filename=\"toto.txt\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\nYmF0ZWF1\r\n--AaB03x--\r\n";
        let request = |body: &[u8], len: usize| {
            let mut r = format!(
                "POST /upload.cgi HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=AaB03x\r\n\
Content-Length: {len}\r\n\r\n"
            )
            .into_bytes();
            r.extend_from_slice(body);
            vec![(Direction::ToServer, r)]
        };
        let limits = Limits {
            http_request_body_cap: 4096,
            ..hashing()
        };
        let (r, _) = run(&request(form, form.len()), &limits, &[]);
        let got: Vec<_> = r
            .files
            .iter()
            .map(|f| {
                (
                    f.tx,
                    f.to_server,
                    f.name.as_slice(),
                    f.data.as_slice(),
                    f.complete,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    0,
                    true,
                    b"titi.txt".as_slice(),
                    b"Titi le minet".as_slice(),
                    true
                ),
                (0, true, b"toto.txt".as_slice(), b"bateau".as_slice(), true)
            ]
        );
        assert_eq!(r.files[1].digests.sha256, Some(sha256(b"bateau")));
        let states: Vec<_> = r.fileinfo.iter().map(|f| f.state).collect();
        assert_eq!(states, ["CLOSED", "CLOSED"]);
        // Cut inside the second file's data.
        let cut = form.len() - 20;
        let (r, _) = run(&request(&form[..cut], form.len()), &limits, &[]);
        let states: Vec<_> = r
            .fileinfo
            .iter()
            .map(|f| (f.filename.as_str(), f.state))
            .collect();
        assert_eq!(states, [("titi.txt", "CLOSED"), ("toto.txt", "TRUNCATED")]);
    }

    /// A POST or PUT body is a file named by the URI's path; a multipart form and a GET are not; a body the close
    /// cuts is a truncated file without hashes; a compressed body decoded whole is hashed as decoded, one whose
    /// decoding stopped at the cap is not hashed.
    #[test]
    fn request_files_and_cut_or_compressed_bodies() {
        let conv = vec![
            (
                Direction::ToServer,
                b"POST /up/load.php?id=3 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloPOST /form HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 3\r\n\r\nabcPUT /f.bin HTTP/1.1\r\nContent-Length: 10\r\n\r\nshort".to_vec(),
            ),
        ];
        let (r, _) = run(&conv, &hashing(), &[]);
        assert_eq!(r.files.len(), 2);
        let (a, b) = (&r.files[0], &r.files[1]);
        assert_eq!(
            (a.tx, a.to_server, a.name.as_slice(), a.size),
            (0, true, b"/up/load.php".as_slice(), 5)
        );
        assert!(a.complete && a.digests.sha256 == Some(sha256(b"hello")));
        assert_eq!(
            (b.tx, b.name.as_slice(), b.size),
            (2, b"/f.bin".as_slice(), 5)
        );
        assert!(!b.complete && b.digests.sha256.is_none());
        assert_eq!(r.fileinfo[1].state, "TRUNCATED");
        // Compressed: whole, then cut at the decoding cap.
        for (len, hashed) in [(60usize, true), (200, false)] {
            let page: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let z = gzip(&page);
            let mut resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                z.len()
            )
            .into_bytes();
            resp.extend_from_slice(&z);
            let conv = vec![
                (
                    Direction::ToServer,
                    b"GET /p.html HTTP/1.1\r\n\r\n".to_vec(),
                ),
                (Direction::ToClient, resp),
            ];
            let (r, _) = run(&conv, &hashing(), &[]);
            let f = &r.files[0];
            assert_eq!(f.digests.sha256.is_some(), hashed, "{len}");
            assert_eq!(f.complete, hashed, "{len}");
            if hashed {
                assert_eq!(f.digests.sha256, Some(sha256(&page)));
                assert_eq!(f.size, len as u64);
            }
        }
    }

    /// Services named by published media types, headers and request targets; ordinary pages name none.
    #[test]
    fn services_from_content() {
        let named =
            |conv: &[(Direction, Vec<u8>)]| run(conv, &Limits::default(), &[]).0.applications;
        let req = |head: &str| (Direction::ToServer, head.as_bytes().to_vec());
        let resp = |head: &str| (Direction::ToClient, head.as_bytes().to_vec());
        assert_eq!(
            named(&[req(
                "POST / HTTP/1.1\r\nHost: ocsp.example.net\r\nContent-Type: application/ocsp-request\r\nContent-Length: 0\r\n\r\n"
            )]),
            ["OCSP"]
        );
        assert_eq!(
            named(&[
                req("GET /r/MFQw HTTP/1.1\r\nHost: ocsp.example.net\r\n\r\n"),
                resp(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/ocsp-response\r\nContent-Length: 0\r\n\r\n"
                ),
            ]),
            ["OCSP"]
        );
        assert_eq!(
            named(&[req(
                "POST /ipp/print HTTP/1.1\r\nHost: 10.0.0.5:631\r\nContent-Type: application/ipp\r\nContent-Length: 0\r\n\r\n"
            )]),
            ["IPP"]
        );
        assert_eq!(
            named(&[req(
                "POST /svc HTTP/1.1\r\nHost: h\r\nSOAPAction: \"urn:x\"\r\nContent-Length: 0\r\n\r\n"
            )]),
            ["SOAP"]
        );
        assert_eq!(
            named(&[req(
                "POST /svc HTTP/1.1\r\nHost: h\r\nContent-Type: application/soap+xml; charset=utf-8\r\nContent-Length: 0\r\n\r\n"
            )]),
            ["SOAP"]
        );
        assert_eq!(
            named(&[req(
                "GET /live/V2400/206598098.m4s HTTP/1.1\r\nHost: h\r\n\r\n"
            )]),
            ["MpegDash"]
        );
        assert_eq!(
            named(&[req(
                "GET /dash/manifest.MPD?t=1 HTTP/1.1\r\nHost: h\r\n\r\n"
            )]),
            ["MpegDash"]
        );
        assert_eq!(
            named(&[req(
                "GET /uri-res/N2R?urn:sha1:PLSTHIPQGSSZTS5FJUPAKUZWUGYQYPFB HTTP/1.1\r\nHost: 10.0.0.9:6346\r\n\r\n"
            )]),
            ["Gnutella"]
        );
        assert_eq!(
            named(&[req(
                "GET /get/1/a.mp3 HTTP/1.1\r\nHost: 10.0.0.9:6346\r\nX-Queue: 1.1\r\n\r\n"
            )]),
            ["Gnutella"]
        );
        assert!(
            named(&[
                req("GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n"),
                resp("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 0\r\n\r\n"),
            ])
            .is_empty()
        );
        assert!(named(&[req("GET /m4s HTTP/1.1\r\nHost: h\r\n\r\n")]).is_empty());
        assert_eq!(
            named(&[req(
                "GET /maplestory/ HTTP/1.1\r\nHost: patch.example\r\nUser-Agent: AspINet\r\n\r\n"
            )]),
            ["MapleStory"]
        );
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

    /// A response's body is the last buffer or file of its transaction the parser hands over (its file before it),
    /// as `flowbundle_rules::Buffer::ends_transaction` counts on, whatever the cuts.
    #[test]
    fn a_response_body_is_the_last_of_its_transaction() {
        for cuts in [&[][..], &[1, 30, 90, 150][..]] {
            let (r, _) = run(&conversation(), &Limits::default(), cuts);
            let mut bodies = 0;
            for (i, &(tx, b)) in r.order.iter().enumerate() {
                if b == Some(HttpBuffer::ResponseBody) {
                    bodies += 1;
                    assert!(r.order[i + 1..].iter().all(|x| x.0 != tx), "{:?}", r.order);
                }
            }
            assert_eq!(bodies, 2);
        }
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
            peer: &[],
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

    /// `Upgrade: h2c` answered `101 Switching Protocols`: the HTTP/1.1 request is a transaction, stream 1 repeats
    /// it as the first HTTP/2 transaction (its response comes in HTTP/2 frames in the same segment as the 101), and
    /// later streams follow.
    #[test]
    fn h2c_upgrade_hands_the_connection_to_http2() {
        use crate::http2::frame::*;
        use crate::http2::testutil::{Rec as H2Rec, block, frame};
        let req = b"GET /robots.txt HTTP/1.1\r\nHost: nghttp2.org\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nUser-Agent: curl/7.61.0\r\n\r\n";
        let mut resp =
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
                .to_vec();
        resp.extend(frame(SETTINGS, 0, 0, &[]));
        resp.extend(frame(
            HEADERS,
            END_HEADERS,
            1,
            &block(&[(":status", "200"), ("server", "nghttpx")]),
        ));
        resp.extend(frame(DATA, END_STREAM, 1, b"User-agent: *"));
        let mut client = crate::http2::PREFACE.to_vec();
        client.extend(frame(SETTINGS, 0, 0, &[]));
        client.extend(frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            3,
            &block(&[
                (":method", "GET"),
                (":path", "/humans.txt"),
                (":authority", "nghttp2.org"),
            ]),
        ));
        for cut in [usize::MAX, 30, 7] {
            let mut p = HttpParser::new(&Limits::default());
            let mut r = H2Rec::default();
            p.parse(Direction::ToServer, req, 0, &mut r);
            for piece in resp.chunks(cut) {
                p.parse(Direction::ToClient, piece, 0, &mut r);
            }
            for piece in client.chunks(cut) {
                p.parse(Direction::ToServer, piece, 0, &mut r);
            }
            p.finish(&mut r);
            assert_eq!(p.stats(), ParserStats::default());
            assert_eq!(r.buffer(0, HttpBuffer::Uri), Some(&b"/robots.txt"[..]));
            // Stream 1: the upgrade request again, with its HTTP/2 response.
            assert_eq!(r.buffer(1, HttpBuffer::Uri), Some(&b"/robots.txt"[..]));
            assert_eq!(r.buffer(1, HttpBuffer::Host), Some(&b"nghttp2.org"[..]));
            assert_eq!(r.buffer(1, HttpBuffer::UserAgent), None);
            assert_eq!(r.buffer(1, HttpBuffer::StatusCode), Some(&b"200"[..]));
            assert_eq!(
                r.buffer(1, HttpBuffer::ResponseBody),
                Some(&b"User-agent: *"[..])
            );
            // Stream 3 after the client's SETTINGS (transaction 2).
            assert_eq!(r.buffer(4, HttpBuffer::Uri), Some(&b"/humans.txt"[..]));
            let protocols: Vec<_> = r.events.iter().map(|e| e.protocol.as_deref()).collect();
            assert_eq!(
                protocols,
                [Some("HTTP/1.1"), Some("HTTP/2"), Some("HTTP/2")],
                "cut {cut}"
            );
        }
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

    /// What every HTTP flow pays for its parser before any buffer grows: the inflaters are boxed, so a parser that
    /// never sees a compressed body does not carry them (1,352 bytes with them inline, 616 without, on 64-bit).
    #[test]
    fn a_parser_carries_no_inflater_until_a_compressed_body() {
        let size = std::mem::size_of::<HttpParser>();
        assert!(size <= 700, "HttpParser is {size} bytes");
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

    /// A connection with one transaction at a time keeps room for one: a flood of open connections that each sent
    /// one request holds a quarter less memory than with the queue's default first growth (room for four). Pipelined
    /// requests still queue.
    #[test]
    fn one_transaction_at_a_time_keeps_room_for_one() {
        let mut p = HttpParser::new(&Limits::default());
        let mut r = Rec::default();
        p.parse(
            Direction::ToServer,
            b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n",
            0,
            &mut r,
        );
        assert_eq!((p.txs.len(), p.txs.capacity()), (1, 1));
        p.parse(
            Direction::ToServer,
            b"GET /b HTTP/1.1\r\nHost: h\r\n\r\n",
            0,
            &mut r,
        );
        assert_eq!(
            p.txs.len(),
            2,
            "a pipelined request queues behind the first"
        );
        let mut p = HttpParser::new(&Limits::default());
        p.parse(
            Direction::ToClient,
            b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            0,
            &mut r,
        );
        assert!(p.txs.capacity() <= 1, "a response without its request");
    }

    /// A request line goes to detection as soon as it is complete, before the headers end (as libhtp hands it to
    /// Suricata), and the complete head does not hand it over again, also when the close completes the head.
    #[test]
    fn request_line_goes_ahead_of_an_incomplete_head() {
        let mut p = HttpParser::new(&Limits::default());
        let mut r = Rec::default();
        p.parse(Direction::ToServer, b"GET /index.html HT", 0, &mut r);
        assert!(r.buffers.is_empty(), "no line end yet");
        p.parse(Direction::ToServer, b"TP/1.0\r\nHost: a\r\n", 0, &mut r);
        let kinds = |r: &Rec| r.buffers.iter().map(|b| b.1).collect::<Vec<_>>();
        assert_eq!(
            kinds(&r),
            [HttpBuffer::RequestLine, HttpBuffer::Method, HttpBuffer::Uri]
        );
        assert_eq!(
            r.buffer(0, HttpBuffer::RequestLine),
            Some(b"GET /index.html HTTP/1.0".as_slice())
        );
        p.parse(Direction::ToServer, b"User-Agent: x\r\n", 0, &mut r);
        assert_eq!(r.buffers.len(), 3, "the line is handed over once");
        p.parse(Direction::ToServer, b"\r\n", 0, &mut r);
        assert_eq!(
            kinds(&r),
            [
                HttpBuffer::RequestLine,
                HttpBuffer::Method,
                HttpBuffer::Uri,
                HttpBuffer::RequestHead,
                HttpBuffer::Host,
                HttpBuffer::UserAgent,
                HttpBuffer::RequestHeaders
            ]
        );
        // The next request on the connection gets its own line, under its own transaction.
        p.parse(Direction::ToServer, b"POST /b HTTP/1.1\r\n", 0, &mut r);
        assert_eq!(r.buffer(1, HttpBuffer::Method), Some(b"POST".as_slice()));
        // The close completes the head: its other buffers come, the line does not come twice.
        p.finish(&mut r);
        let tx1: Vec<_> = r.buffers.iter().filter(|b| b.0 == 1).map(|b| b.1).collect();
        assert_eq!(
            tx1,
            [
                HttpBuffer::RequestLine,
                HttpBuffer::Method,
                HttpBuffer::Uri,
                HttpBuffer::RequestHead,
                HttpBuffer::RequestHeaders
            ]
        );
        assert_eq!(r.events.len(), 2);
        // A gap that cuts the head after its line went ahead still leaves the transaction, logged at the end.
        let mut p = HttpParser::new(&Limits::default());
        let mut r = Rec::default();
        p.parse(
            Direction::ToServer,
            b"GET /g HTTP/1.1\r\nHost: h\r\n",
            0,
            &mut r,
        );
        p.gap(Direction::ToServer, 100);
        p.parse(
            Direction::ToServer,
            b"ignored after the gap\r\n\r\n",
            0,
            &mut r,
        );
        p.finish(&mut r);
        assert_eq!(r.events.len(), 1);
        assert_eq!(r.events[0].url.as_deref(), Some("/g"));
        assert_eq!(
            r.buffers.iter().filter(|b| b.1 == HttpBuffer::Uri).count(),
            1
        );
        // A line that is not a request line is not handed over.
        let (r, _) = run(
            &[(Direction::ToServer, b"\x85\x00junk line\r\nmore".to_vec())],
            &Limits::default(),
            &[],
        );
        assert!(r.buffer(0, HttpBuffer::Method).is_none());
    }

    /// A request line without a protocol followed by header lines is a request missing its protocol, as libhtp
    /// reports it (`REQUEST_LINE_MISSING_PROTOCOL`), its headers parsed; an HTTP/0.9 request raises nothing.
    #[test]
    fn request_line_missing_protocol() {
        let req = |s: &str| vec![(Direction::ToServer, s.as_bytes().to_vec())];
        let (r, _) = run(
            &req("GET /\nFakeHeader\nHost: localhost\nUser-Agent: myscript\n\n"),
            &Limits::default(),
            &[],
        );
        let missing: crate::AppLayerEvents =
            std::iter::once(AppLayerEvent::HttpRequestLineMissingProtocol).collect();
        assert_eq!(r.anomalies, [(0, missing)]);
        assert_eq!(r.events[0].http_user_agent.as_deref(), Some("myscript"));
        let (r, _) = run(&req("GET / \n \n \n\n"), &Limits::default(), &[]);
        assert_eq!(r.anomalies, [(0, missing)]);
        for clean in [
            "GET /\r\n\r\n",
            "GET /a\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        ] {
            let (r, _) = run(&req(clean), &Limits::default(), &[]);
            assert!(r.anomalies.is_empty(), "{clean:?}");
            assert_eq!(r.events.len(), 1, "{clean:?}");
        }
    }

    /// A request's `Transfer-Encoding` that does not mention `chunked`, or chunked before HTTP/1.1, raises
    /// `INVALID_TRANSFER_ENCODING_VALUE_IN_REQUEST` as libhtp flags it; `chunked` in an HTTP/1.1 request does not.
    #[test]
    fn invalid_transfer_encoding_in_request() {
        let req = |s: &str| vec![(Direction::ToServer, s.as_bytes().to_vec())];
        let invalid: crate::AppLayerEvents =
            std::iter::once(AppLayerEvent::HttpInvalidTransferEncodingValueInRequest).collect();
        for bad in [
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\nContent-Length: 0\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunk\r\nContent-Length: 0\r\n\r\n",
            "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ] {
            let (r, _) = run(&req(bad), &Limits::default(), &[]);
            assert_eq!(r.anomalies, [(0, invalid)], "{bad:?}");
        }
        for good in [
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, CHUNKED\r\n\r\n0\r\n\r\n",
            "POST / HTTP/1.0\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
        ] {
            let (r, _) = run(&req(good), &Limits::default(), &[]);
            assert!(r.anomalies.is_empty(), "{good:?}");
        }
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
