//! The HTTP/1.x parser of one flow: per-direction state machines (head, body, tunnel), the transactions that
//! pair requests with responses, and the events and rule buffers they emit.

use std::collections::VecDeque;

use super::*;
use crate::file::{FileEnd, FileRecord};

/// One transaction: the request (if seen) and, once parsed, the response.
#[derive(Debug, Default)]
pub(super) struct Tx {
    pub(super) ev: HttpEvent,
    pub(super) head_request: bool,
    pub(super) connect: bool,
    /// HTTP/0.9 simple request: the response is a bare body until close.
    pub(super) simple: bool,
    pub(super) request_done: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
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
pub(super) struct Side {
    pub(super) state: State,
    pub(super) head: Vec<u8>,
    /// Where the next scan for the blank line starts.
    pub(super) scan: usize,
    pub(super) body: Vec<u8>,
    pub(super) body_len: u64,
    /// Boxed: allocated only for a compressed body, so the two sides of a parser that never sees one do not carry
    /// an inflater each inline (measured with heaptrack: the parser went from 1,352 to 616 bytes, an open HTTP flow
    /// from 4.4 to 3.7 KB; see `flowbundle_inspect::EngineConfig::max_flows`).
    pub(super) inflate: Option<Box<Inflate>>,
    /// The file the body carries (Suricata's HTTP files: response bodies, and the bodies of `POST` and `PUT`
    /// requests that are not multipart forms), counted and hashed over every byte; its inspected bytes are `body`.
    pub(super) file: Option<FileRecord>,
    /// The body ended before its framing said it would (the flow ended inside it, or the framing broke).
    pub(super) cut: bool,
    /// A request's `Content-Type` when it is a multipart form (its parts with a file name are its files, read
    /// from the kept body when it ends: see [`multipart_files`]).
    pub(super) multipart: Option<String>,
}

/// Body buffer capacity a side keeps between messages (see [`Side::release_body`]).
const RETAINED_BODY_CAPACITY: usize = 4096;

impl Side {
    pub(super) fn new() -> Self {
        Side {
            state: State::Head,
            head: Vec::new(),
            scan: 0,
            body: Vec::new(),
            body_len: 0,
            inflate: None,
            file: None,
            cut: false,
            multipart: None,
        }
    }
}

impl Side {
    /// Gets the body buffer ready for a new message body, with an inflater when the body is compressed
    /// (`Content-Encoding: gzip` or `deflate`) and decompression is on. Returns whether the body is inflated.
    pub(super) fn start_body(&mut self, enc: Encoding, cap: usize, decompress: bool) -> bool {
        self.body.clear();
        self.body_len = 0;
        self.inflate = None;
        self.file = None;
        self.cut = false;
        self.multipart = None;
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
        self.inflate = Some(Box::new(Inflate::Sniff(w, enc)));
        true
    }

    /// Body bytes as they arrive (de-chunked): inflated, or kept as they are, up to `cap`; what the cap refuses is
    /// counted.
    pub(super) fn body_data(&mut self, chunk: &[u8], cap: usize, stats: &mut ParserStats) {
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
                if let Some(f) = &mut self.file {
                    f.count(chunk);
                }
                let room = cap.saturating_sub(self.body.len());
                let take = room.min(chunk.len());
                self.body.extend_from_slice(&chunk[..take]);
                stats.bytes_cut += (chunk.len() - take) as u64;
            }
        }
    }

    /// The message is delivered: forget its body, keeping at most [`RETAINED_BODY_CAPACITY`] of the buffer for the
    /// next one. A delivered body of up to the cap (100 KiB) would otherwise stay allocated for as long as its flow is
    /// tracked, and an idle flow waiting for its timeout held it for nothing.
    pub(super) fn release_body(&mut self) {
        self.body.clear();
        self.body.shrink_to(RETAINED_BODY_CAPACITY);
        self.body_len = 0;
    }

    /// The body ended: flush the inflater (if any) into `body`.
    pub(super) fn finish_inflate(&mut self, stats: &mut ParserStats) {
        if let Some(inf) = self.inflate.take() {
            let (w, err) = inf.finish();
            // A message announced as compressed but without a body is not a broken stream.
            if err && self.body_len > 0 {
                stats.malformed += 1;
            }
            stats.decompress_cut += w.cut;
            // The file is what was decoded: whole only when decoding neither failed nor stopped at the cap.
            if let Some(f) = &mut self.file {
                f.count(&w.buf);
                if err || w.cut > 0 || w.full() {
                    f.unhashable();
                    self.cut = true;
                }
            }
            self.body = w.buf;
        }
    }

    /// The body ended: hands its file (if it carries one) to `out`, with the decoded body as the bytes inspected.
    pub(super) fn close_file(&mut self, tx_id: u64, to_server: bool, out: &mut dyn EventSink) {
        if let Some(f) = self.file.take() {
            let end = FileEnd {
                proto: AppProto::Http,
                tx_id,
                to_server,
                complete: !self.cut,
            };
            f.close_with(end, &self.body, out);
        }
    }
}

/// The files of a multipart request body (`body`, as kept, `content_type` its `Content-Type`): the MIME decoder
/// splits it at its boundary and hands each part that has a file name (`Content-Disposition: form-data;
/// name="f"; filename="a.txt"`) to `files` as a file, decoded; the last part is cut (`TRUNCATED`) unless the body
/// was `whole`. Bounded as the body is (the request body cap) and as the decoder is (see `mail::mime`).
fn multipart_files(content_type: &str, body: &[u8], whole: bool, mut files: MultipartFiles<'_>) {
    use crate::mail::mime::{MimeConfig, MimeParser};
    // A form's parts are files, not mail: no URLs are collected from them.
    let mut mime = MimeParser::new(MimeConfig {
        extract_urls: false,
        ..MimeConfig::default()
    });
    let mut head = b"Content-Type: ".to_vec();
    head.extend_from_slice(content_type.as_bytes());
    mime.line(&head, true, &mut files);
    mime.line(b"", true, &mut files);
    let mut rest = body;
    while !rest.is_empty() {
        let (line, eol, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], true, &rest[i + 1..]),
            None => (rest, false, &rest[rest.len()..]),
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        mime.line(line, eol || whole, &mut files);
        rest = next;
    }
    files.complete = whole;
    mime.end(&mut files);
}

/// Where [`multipart_files`] puts the parts: one file record at a time, closed into `out`.
struct MultipartFiles<'a> {
    tx_id: u64,
    cap: usize,
    opts: crate::file::FileOptions,
    file: Option<FileRecord>,
    /// A file closed now ended as its part did.
    complete: bool,
    out: &'a mut dyn EventSink,
}

impl crate::mail::mime::MimeSink for MultipartFiles<'_> {
    fn file_open(&mut self, name: &[u8]) {
        self.file = Some(FileRecord::new(name, self.cap, self.opts));
    }
    fn file_data(&mut self, data: &[u8]) {
        if let Some(f) = &mut self.file {
            f.data(data);
        }
    }
    fn file_close(&mut self) {
        if let Some(f) = self.file.take() {
            let end = FileEnd {
                proto: AppProto::Http,
                tx_id: self.tx_id,
                to_server: true,
                complete: self.complete,
            };
            f.close(end, self.out);
        }
    }
}

/// The HTTP/1.x parser of one flow.
#[derive(Debug)]
pub struct HttpParser {
    pub(super) limits: Limits,
    pub(super) req: Side,
    pub(super) resp: Side,
    /// Transactions whose response is not complete, oldest first.
    pub(super) txs: VecDeque<Tx>,
    /// Index in `txs` of the transaction the response side is working on (the front, once its head is parsed).
    pub(super) next_tx: u64,
    pub(super) stats: ParserStats,
    /// Whether the first data has been seen, and whether it showed the flow's "client" to be the server (a flow
    /// picked up from its responses, whose first sender the engine took for the client).
    pub(super) oriented: bool,
    pub(super) swapped: bool,
    /// The transaction whose request line was handed to detection before its head was complete (see
    /// [`HttpParser::early_request_line`]), so the head does not hand it over twice.
    pub(super) line_sent: Option<u64>,
    /// The HTTP/2 parser the connection was handed to after `Upgrade: h2c` and `101 Switching Protocols`.
    pub(super) h2: Option<Box<crate::http2::Http2Parser>>,
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
            line_sent: None,
            h2: None,
        }
    }

    /// Decides once, from the first bytes, which side sends requests.
    pub(super) fn orient(&mut self, dir: Direction, data: &[u8]) {
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
    pub(super) fn collect_head<'a>(
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

    pub(super) fn parse_request(&mut self, mut data: &[u8], out: &mut dyn EventSink) {
        while !data.is_empty() {
            match self.req.state {
                State::Tunnel => {
                    if let Some(h2) = self.h2.as_mut() {
                        h2.parse(Direction::ToServer, data, 0, out);
                    }
                    return;
                }
                State::Dead => return,
                State::Head => {
                    // HTTP/0.9: "GET /path\r\n" with no version ends at the first line.
                    let Some((end, rest)) = Self::collect_head(
                        &mut self.req,
                        self.limits.http_header_cap,
                        &mut self.stats,
                        data,
                    ) else {
                        // No blank line yet; a complete HTTP/0.9 request line is all there will be. Otherwise a
                        // complete request line goes to detection now, before its headers.
                        if self.req.state == State::Head && !self.simple_request(out) {
                            self.early_request_line(out);
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
    pub(super) fn simple_request(&mut self, out: &mut dyn EventSink) -> bool {
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
        out.http_buffer(HttpTx::Event(&tx.ev), HttpBuffer::Method, b"GET");
        out.http_buffer(HttpTx::Event(&tx.ev), HttpBuffer::Uri, uri);
        self.push_tx(tx, out);
        // Everything after a simple request is not HTTP/1.x framing.
        self.req.state = State::Tunnel;
        self.req.head = Vec::new();
        true
    }

    /// A request whose line is complete but whose head is not: hands the request line, method and target to
    /// detection now, as libhtp does (its request-line callback runs before the headers arrive), so rules on
    /// `http.method`, `http.uri` or `http.request_line` match on the packet that completes the line. The head,
    /// once complete, hands over the rest without repeating these.
    pub(super) fn early_request_line(&mut self, out: &mut dyn EventSink) {
        if self.line_sent.is_some() {
            return;
        }
        let Some(nl) = memchr::memchr(b'\n', &self.req.head) else {
            return;
        };
        let line = trim_cr(&self.req.head[..nl]);
        let Some((method, uri, protocol)) = request_line_parts(line) else {
            return;
        };
        let id = self.next_tx;
        // The transaction is its line for now, as libhtp's is when its request-line callback runs.
        let tx = HttpTx::RequestLine {
            tx_id: id,
            method,
            uri,
            protocol,
        };
        out.http_buffer(tx, HttpBuffer::RequestLine, line);
        out.http_buffer(tx, HttpBuffer::Method, method);
        out.http_buffer(tx, HttpBuffer::Uri, uri);
        self.line_sent = Some(id);
    }

    pub(super) fn push_tx(&mut self, tx: Tx, out: &mut dyn EventSink) {
        if self.txs.len() >= MAX_PENDING_TX
            && let Some(old) = self.txs.pop_front()
        {
            self.stats.bytes_cut += 1;
            out.event(AppEvent::Http(old.ev));
        }
        self.push_back_tx(tx);
    }

    /// Queues a transaction. The first one gets room for itself alone: most connections carry one request at a
    /// time, and a queue's first growth would make room for four (a transaction is about 340 bytes, so 1 KiB more
    /// per flow: with many flows open, a quarter of their memory).
    fn push_back_tx(&mut self, tx: Tx) {
        if self.txs.capacity() == 0 {
            self.txs.reserve_exact(1);
        }
        self.txs.push_back(tx);
    }

    /// Parses a complete request head (`self.req.head[..end]`); false when it is not a request.
    pub(super) fn request_head(&mut self, end: usize, out: &mut dyn EventSink) -> bool {
        let head = std::mem::take(&mut self.req.head);
        let ok = self.request_head_in(&head[..end.min(head.len())], out);
        self.req.head = head;
        self.req.head.clear();
        ok
    }

    pub(super) fn request_head_in(&mut self, head: &[u8], out: &mut dyn EventSink) -> bool {
        let line_sent = self.line_sent.take();
        let nl = memchr::memchr(b'\n', head).unwrap_or(head.len());
        let line = trim_cr(&head[..nl]);
        let Some((method, uri, proto)) = request_line_parts(line) else {
            return false;
        };
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
        if let Some(service) = h.service.or_else(|| service_from_target(uri)) {
            out.application(service);
        }
        // The same order as when the line went ahead of the head, so the buffers' order does not depend on where the
        // request was cut.
        let tx = HttpTx::Event(&ev);
        if line_sent != Some(id) {
            out.http_buffer(tx, HttpBuffer::RequestLine, line);
            out.http_buffer(tx, HttpBuffer::Method, method);
            out.http_buffer(tx, HttpBuffer::Uri, uri);
        }
        let block = head.get(block_start..).unwrap_or(&[]);
        let mut events = crate::AppLayerEvents::default();
        if proto.is_empty() && block.iter().any(|&b| b != b'\r' && b != b'\n') {
            // Header lines after a request line without a protocol: not HTTP/0.9, a request missing its
            // protocol, as libhtp reports it.
            events.set(AppLayerEvent::HttpRequestLineMissingProtocol);
        }
        if h.te_present && (!h.te_mentions_chunked || !at_least_http_1_1(proto)) {
            // libhtp: a transfer coding that is not chunked, or chunked before HTTP/1.1 (a smuggling attempt).
            events.set(AppLayerEvent::HttpInvalidTransferEncodingValueInRequest);
        }
        if !events.is_empty() {
            out.app_layer_events(id, true, events);
        }
        out.http_buffer(tx, HttpBuffer::RequestHead, head);
        if let Some((host, _)) = &h.host {
            out.http_buffer(tx, HttpBuffer::Host, host.as_bytes());
        }
        if let Some(ua) = &h.user_agent {
            out.http_buffer(tx, HttpBuffer::UserAgent, ua.as_bytes());
        }
        out.http_buffer(
            tx,
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
        // Suricata's request files: the body of a `POST` or `PUT` that is not a multipart form, named by the URI's
        // path (a multipart form's parts are not split into files here).
        if (method == b"POST" || method == b"PUT") && !h.multipart {
            self.req.file = Some(FileRecord::new(
                uri_path(uri),
                0,
                self.limits.file_options(),
            ));
        }
        // A multipart POST's files are its parts that carry a file name, as Suricata's HTTP file extraction makes
        // them (read from the kept body when it ends).
        if method == b"POST" && h.multipart {
            self.req.multipart = h.content_type.clone();
        }
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

    pub(super) fn request_body_done(&mut self, out: &mut dyn EventSink) {
        self.req.finish_inflate(&mut self.stats);
        // The request being completed is the newest transaction.
        if let Some(tx) = self.txs.back_mut()
            && !tx.request_done
        {
            tx.request_done = true;
            tx.ev.request_body_length = self.req.body_len;
            if self.req.body_len > 0 {
                self.req.close_file(tx.ev.tx_id, true, out);
            }
            if let Some(ct) = self.req.multipart.take() {
                // The kept body is all of it unless the cap or the flow's end cut it: a part open there is cut.
                let whole = !self.req.cut && self.req.body_len == self.req.body.len() as u64;
                let files = MultipartFiles {
                    tx_id: tx.ev.tx_id,
                    cap: self.limits.http_request_body_cap,
                    opts: self.limits.file_options(),
                    file: None,
                    complete: true,
                    out: &mut *out,
                };
                multipart_files(&ct, &self.req.body, whole, files);
            }
            if !self.req.body.is_empty() {
                out.http_buffer(
                    HttpTx::Event(&tx.ev),
                    HttpBuffer::RequestBody,
                    &self.req.body,
                );
            }
        }
        self.req.release_body();
        self.req.state = State::Head;
    }

    pub(super) fn parse_response(&mut self, mut data: &[u8], out: &mut dyn EventSink) {
        while !data.is_empty() {
            match self.resp.state {
                State::Tunnel => {
                    if let Some(h2) = self.h2.as_mut() {
                        h2.parse(Direction::ToClient, data, 0, out);
                    }
                    return;
                }
                State::Dead => return,
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
                        self.resp.cut = true;
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
    pub(super) fn response_head(&mut self, head: &[u8], out: &mut dyn EventSink) -> bool {
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
            self.push_back_tx(Tx {
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
        // The media type without its parameters, as Suricata logs it (`text/html` of `text/html; charset=utf-8`).
        tx.ev.http_content_type = h
            .content_type
            .as_deref()
            .map(|c| c.split(';').next().unwrap_or(c).to_string());
        if let Some(service) = h.service {
            out.application(service);
        }
        tx.ev.redirect = h.location.clone();
        let (head_req, connect) = (tx.head_request, tx.connect);
        let tx = HttpTx::Event(&tx.ev);
        out.http_buffer(tx, HttpBuffer::ResponseLine, line);
        out.http_buffer(tx, HttpBuffer::ResponseHead, head);
        out.http_buffer(tx, HttpBuffer::StatusCode, code);
        out.http_buffer(
            tx,
            HttpBuffer::ResponseHeaders,
            head.get(h.headers.clone()).unwrap_or(&[]),
        );
        if status == 101 || (connect && (200..300).contains(&status)) {
            // The connection now carries something else: HTTP/2 after `Upgrade: h2c`.
            if status == 101 && upgrades_to_h2c(head.get(h.headers.clone()).unwrap_or(&[])) {
                let request = self.txs.front().map(upgrade_request).unwrap_or_default();
                let first_tx = self.next_tx;
                self.next_tx += 1;
                self.h2 = Some(Box::new(crate::http2::Http2Parser::upgraded(
                    &self.limits,
                    first_tx,
                    request,
                    out,
                )));
            }
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
            Some(f) => {
                self.start_body(f, h.encoding);
                // Suricata's response files: named by `Content-Disposition`'s `filename`, else by the request
                // URI's path; a response whose request was not seen has no name and no file.
                let name = h.disposition_filename.or_else(|| {
                    self.txs
                        .front()
                        .and_then(|t| t.ev.url.as_deref())
                        .map(|u| uri_path(u.as_bytes()).to_vec())
                });
                if let Some(name) = name {
                    self.resp.file = Some(FileRecord::new(&name, 0, self.limits.file_options()));
                }
            }
        }
        true
    }

    pub(super) fn start_body(&mut self, f: Framing, enc: Encoding) {
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

    pub(super) fn response_data(&mut self, chunk: &[u8]) {
        self.resp
            .body_data(chunk, self.limits.http_response_body_cap, &mut self.stats);
    }

    /// The response of the front transaction is complete: deliver its body, log it, and get ready for the next.
    pub(super) fn response_done(&mut self, out: &mut dyn EventSink) {
        self.resp.finish_inflate(&mut self.stats);
        if let Some(mut tx) = self.txs.pop_front() {
            tx.ev.length = self.resp.body_len;
            if self.resp.body_len > 0 {
                self.resp.close_file(tx.ev.tx_id, false, out);
            }
            if !self.resp.body.is_empty() {
                out.http_buffer(
                    HttpTx::Event(&tx.ev),
                    HttpBuffer::ResponseBody,
                    &self.resp.body,
                );
            }
            out.event(AppEvent::Http(tx.ev));
        }
        self.resp.release_body();
        self.resp.state = State::Head;
    }
}

/// The path of a request target, without its query and fragment (what Suricata names an HTTP file by).
fn uri_path(uri: &[u8]) -> &[u8] {
    let end = uri
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(uri.len());
    &uri[..end]
}

/// Whether a request line's protocol is HTTP/1.1, the one version libhtp reads as allowing chunked transfer coding
/// (`HTTP/1.0`, `HTTP/0.9`, a missing or unreadable protocol are older or invalid to it).
fn at_least_http_1_1(proto: &[u8]) -> bool {
    let p = trim_ws(proto);
    p.len() == 8 && p[..5].eq_ignore_ascii_case(b"HTTP/") && &p[5..] == b"1.1"
}

/// A request line's method, target and protocol, when it is one: a token method and an `HTTP/` protocol (or none,
/// HTTP/0.9).
fn request_line_parts(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let (method, uri, proto) = split_request_line(line)?;
    (method.iter().all(|&b| is_token_byte(b)) && (proto.starts_with(b"HTTP/") || proto.is_empty()))
        .then_some((method, uri, proto))
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
                if let Some(f) = &mut side.file {
                    f.gap(len);
                }
                self.stats.bytes_cut += len;
                if let Some(inf) = side.inflate.as_mut() {
                    inf.stop(); // the compressed stream cannot continue across lost bytes
                }
            }
            State::Body(Framing::UntilClose) => {
                side.body_len += len;
                if let Some(f) = &mut side.file {
                    f.gap(len);
                }
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
        // A request head cut by the close, or by a gap after its request line went to detection (its transaction
        // exists, as in libhtp): parse what arrived (a request line at least).
        let cut = match self.req.state {
            State::Head => true,
            State::Dead => self.line_sent.is_some(),
            _ => false,
        };
        if cut && memchr::memchr(b'\n', &self.req.head).is_some() && !self.req.head.is_empty() {
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
        // A body the close cut short carries a truncated file; one delimited by the close ended as it should.
        if let State::Body(f) = self.resp.state {
            self.resp.cut |= f != Framing::UntilClose;
            self.response_done(out);
        }
        if matches!(self.req.state, State::Body(_)) {
            self.req.cut = true;
            self.request_body_done(out);
        }
        while let Some(tx) = self.txs.pop_front() {
            out.event(AppEvent::Http(tx.ev));
        }
        if let Some(h2) = self.h2.as_mut() {
            h2.finish(out);
        }
    }

    fn stats(&self) -> ParserStats {
        let mut s = self.stats;
        if let Some(h2) = &self.h2 {
            s += h2.stats();
        }
        s
    }
}

/// Whether a 101 response's header lines switch to cleartext HTTP/2 (`Upgrade: h2c`).
fn upgrades_to_h2c(headers: &[u8]) -> bool {
    headers.split(|&b| b == b'\n').any(|raw| {
        let line = trim_cr(raw);
        line.iter().position(|&b| b == b':').is_some_and(|c| {
            trim_ws(&line[..c]).eq_ignore_ascii_case(b"upgrade")
                && trim_ws(&line[c + 1..]).eq_ignore_ascii_case(b"h2c")
        })
    })
}

/// The upgrade request as HTTP/2 header fields (stream 1's request): method, target and host, the fields
/// Suricata carries over to stream 1 (its other header fields stay the HTTP/1 transaction's: suricata-verify's
/// `http2-keywords2` sees `http.user_agent` once on such a connection).
fn upgrade_request(tx: &Tx) -> Vec<(Vec<u8>, Vec<u8>)> {
    let e = &tx.ev;
    [
        (&b":method"[..], e.http_method.as_deref()),
        (b":path", e.url.as_deref()),
        (b":authority", e.hostname.as_deref()),
    ]
    .into_iter()
    .filter_map(|(n, v)| Some((n.to_vec(), v?.as_bytes().to_vec())))
    .collect()
}
