//! The per-flow HTTP/2 state machine: connection preface, frames of both directions, header blocks through HPACK,
//! and one transaction per stream.

use super::frame::{self, FrameHeader, HEADER_LEN};
use super::hpack::{Decoder, Field};
use super::{Http2Frame, PREFACE};
use crate::http::{HeaderField, Http2Info, Http2Setting, Http2Side};
use crate::http::{HttpEvent, HttpTx};
use crate::{AppEvent, AppProto, Direction, EventSink, HttpBuffer, Limits, Parser, ParserStats};

/// Largest frame payload buffered. Peers may raise `SETTINGS_MAX_FRAME_SIZE` up to 16 MiB; a frame above this is
/// skipped (DATA's bytes counted as cut) and counted as an anomaly.
pub const MAX_FRAME: usize = 64 * 1024;
/// Most streams (transactions) open at once per connection; a new stream beyond it completes the oldest one.
pub const MAX_STREAMS: usize = 128;

/// HTTP/2 anomalies, counted per connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Http2Anomalies {
    /// Header blocks HPACK could not decode (bad index, bad Huffman, integer overflow, ...).
    pub hpack_errors: u64,
    /// Frames longer than [`MAX_FRAME`].
    pub huge_frames: u64,
    /// Padding longer than its frame, fixed fields missing, frames on the wrong stream, CONTINUATION out of place.
    pub bad_frames: u64,
    /// Streams completed early because [`MAX_STREAMS`] were open.
    pub streams_evicted: u64,
    /// Header bytes beyond the header cap (not kept).
    pub header_bytes_cut: u64,
}

#[derive(Debug, PartialEq, Eq)]
enum Phase {
    /// The client's preface; the number of its bytes matched so far.
    Preface(usize),
    Frames,
    /// Not HTTP/2 (the preface did not match): ignored.
    Dead,
}

/// A header block being collected (HEADERS or PUSH_PROMISE, then CONTINUATION frames).
#[derive(Debug)]
struct Block {
    stream: u32,
    /// The stream a PUSH_PROMISE announces (its request headers); 0 for HEADERS.
    promised: u32,
    end_stream: bool,
    data: Vec<u8>,
}

#[derive(Debug)]
struct Side {
    phase: Phase,
    buf: Vec<u8>,
    /// Payload bytes of an oversized frame still to skip.
    skip: usize,
    hpack: Decoder,
    block: Option<Block>,
}

impl Side {
    fn new(phase: Phase) -> Self {
        Side {
            phase,
            buf: Vec::new(),
            skip: 0,
            hpack: Decoder::new(),
            block: None,
        }
    }
}

/// One direction of a stream.
#[derive(Debug, Default)]
struct Half {
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    header_bytes: usize,
    /// A header block was decoded (the buffers went out).
    headers_done: bool,
    body: Vec<u8>,
    body_len: u64,
    ended: bool,
    error_code: Option<u32>,
    size_update: Option<u64>,
}

impl Half {
    fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

#[derive(Debug)]
struct Stream {
    id: u32,
    tx_id: u64,
    req: Half,
    resp: Half,
    priority: Option<u8>,
}

/// The HTTP/2 parser of one connection.
#[derive(Debug)]
pub struct Http2Parser {
    header_cap: usize,
    body_caps: [usize; 2],
    /// Hashes and magic of each stream's files.
    files: crate::file::FileOptions,
    sides: [Side; 2],
    streams: Vec<Stream>,
    next_tx: u64,
    stats: ParserStats,
    anomalies: Http2Anomalies,
    line: Vec<u8>,
}

fn side_index(dir: Direction) -> usize {
    usize::from(dir != Direction::ToServer)
}

impl Http2Parser {
    /// A connection with prior knowledge: the client starts with the preface.
    pub fn new(limits: &Limits) -> Self {
        Self::with_phases(limits, Phase::Preface(0), 0)
    }

    fn with_phases(limits: &Limits, client: Phase, first_tx: u64) -> Self {
        Http2Parser {
            header_cap: limits.http_header_cap,
            body_caps: [limits.http_request_body_cap, limits.http_response_body_cap],
            files: limits.file_options(),
            sides: [Side::new(client), Side::new(Phase::Frames)],
            streams: Vec::new(),
            next_tx: first_tx,
            stats: ParserStats::default(),
            anomalies: Http2Anomalies::default(),
            line: Vec::new(),
        }
    }

    /// A connection upgraded from HTTP/1.1 (`Upgrade: h2c`, answered `101 Switching Protocols`): the server's next
    /// bytes are frames, the client's the preface. The upgrade request is stream 1's request (RFC 9113 section
    /// 3.2, as RFC 7540 section 3.2 defined it): `request` holds its fields as HTTP/2 names them (`:method`,
    /// `:path`, `:authority`, lowercase names), and its buffers go out now under transaction `first_tx`.
    pub fn upgraded(
        limits: &Limits,
        first_tx: u64,
        request: Vec<(Vec<u8>, Vec<u8>)>,
        out: &mut dyn EventSink,
    ) -> Self {
        let mut p = Self::with_phases(limits, Phase::Preface(0), first_tx);
        let i = p.stream_index(1, out);
        let s = &mut p.streams[i];
        s.req.header_bytes = request.iter().map(|(n, v)| n.len() + v.len()).sum();
        s.req.headers = request;
        s.req.ended = true;
        p.request_buffers(i, out);
        p
    }

    /// What the parser counted as anomalous.
    pub fn anomalies(&self) -> Http2Anomalies {
        self.anomalies
    }

    fn bad_frame(&mut self) {
        self.anomalies.bad_frames += 1;
        self.stats.malformed += 1;
    }

    fn input(&mut self, dir: Direction, mut data: &[u8], out: &mut dyn EventSink) {
        let si = side_index(dir);
        if let Phase::Preface(n) = self.sides[si].phase {
            let take = (PREFACE.len() - n).min(data.len());
            if data[..take] != PREFACE[n..n + take] {
                self.sides[si].phase = Phase::Dead;
                self.stats.gave_up += 1;
                return;
            }
            data = &data[take..];
            self.sides[si].phase = if n + take == PREFACE.len() {
                Phase::Frames
            } else {
                Phase::Preface(n + take)
            };
        }
        if self.sides[si].phase != Phase::Frames {
            return;
        }
        let skip = self.sides[si].skip.min(data.len());
        if skip > 0 {
            self.sides[si].skip -= skip;
            data = &data[skip..];
        }
        if data.is_empty() {
            return;
        }
        let mut buf = std::mem::take(&mut self.sides[si].buf);
        if buf.is_empty() {
            let used = self.frames(dir, data, out);
            buf.extend_from_slice(&data[used..]);
        } else {
            buf.extend_from_slice(data);
            let used = self.frames(dir, &buf, out);
            buf.drain(..used);
        }
        self.sides[si].buf = buf;
    }

    /// Handles the complete frames at the start of `data`; returns the bytes used.
    fn frames(&mut self, dir: Direction, data: &[u8], out: &mut dyn EventSink) -> usize {
        let mut at = 0;
        while let Some(h) = FrameHeader::parse(&data[at..]) {
            if h.len > MAX_FRAME {
                self.anomalies.huge_frames += 1;
                self.stats.malformed += 1;
                if h.ty == frame::DATA {
                    self.stats.bytes_cut += h.len as u64;
                }
                let have = (data.len() - at - HEADER_LEN).min(h.len);
                at += HEADER_LEN + have;
                if have < h.len {
                    self.sides[side_index(dir)].skip = h.len - have;
                    return at;
                }
                continue;
            }
            let end = at + HEADER_LEN + h.len;
            if end > data.len() {
                break;
            }
            self.frame(dir, h, &data[at + HEADER_LEN..end], out);
            at = end;
        }
        at
    }

    fn frame(&mut self, dir: Direction, h: FrameHeader, payload: &[u8], out: &mut dyn EventSink) {
        let si = side_index(dir);
        let to_server = dir == Direction::ToServer;
        // A header block in progress admits only its CONTINUATION frames (RFC 9113 section 6.10).
        if self.sides[si].block.is_some() && (h.ty != frame::CONTINUATION)
            || self.sides[si].block.is_none() && h.ty == frame::CONTINUATION
        {
            self.bad_frame();
            self.sides[si].block = None;
            if h.ty == frame::CONTINUATION {
                return;
            }
        }
        let mut rec = Http2Frame {
            tx_id: 0,
            to_server,
            ty: h.ty,
            flags: h.flags,
            stream: h.stream,
            error_code: None,
            priority: None,
            window: None,
            settings: &[],
            size_update: None,
            headers: &[],
        };
        let needs_stream = matches!(
            h.ty,
            frame::DATA
                | frame::HEADERS
                | frame::PRIORITY
                | frame::RST_STREAM
                | frame::PUSH_PROMISE
                | frame::CONTINUATION
        );
        if needs_stream && h.stream == 0 {
            self.bad_frame();
            return;
        }
        // Frames on stream 0 are transactions of their own, as Suricata counts them.
        let stream = if h.stream == 0 {
            rec.tx_id = self.next_tx;
            self.next_tx += 1;
            None
        } else {
            let i = self.stream_index(h.stream, out);
            rec.tx_id = self.streams[i].tx_id;
            Some(i)
        };
        match h.ty {
            frame::DATA => {
                let Some(body) = frame::unpad(h.flags, payload) else {
                    self.bad_frame();
                    return;
                };
                let i = stream.unwrap_or_default();
                let cap = self.body_caps[si];
                let half = self.half(i, to_server);
                half.body_len += body.len() as u64;
                let room = cap.saturating_sub(half.body.len()).min(body.len());
                half.body.extend_from_slice(&body[..room]);
                self.stats.bytes_cut += (body.len() - room) as u64;
                out.http2_frame(&rec);
                if h.flags & frame::END_STREAM != 0 {
                    self.end_half(i, to_server, out);
                }
            }
            frame::HEADERS | frame::PUSH_PROMISE => {
                let Some(mut frag) = frame::unpad(h.flags, payload) else {
                    self.bad_frame();
                    return;
                };
                let mut promised = 0;
                if h.ty == frame::HEADERS && h.flags & frame::PRIORITY_FLAG != 0 {
                    let Some(p) = frame::Priority::parse(frag) else {
                        self.bad_frame();
                        return;
                    };
                    frag = &frag[5..];
                    rec.priority = Some(p.weight);
                } else if h.ty == frame::PUSH_PROMISE {
                    let Some(id) = frame::be32(frag, 0) else {
                        self.bad_frame();
                        return;
                    };
                    promised = id & 0x7fff_ffff;
                    frag = &frag[4..];
                }
                if let (Some(i), Some(w)) = (stream, rec.priority) {
                    self.streams[i].priority = Some(w);
                }
                let mut block = Block {
                    stream: h.stream,
                    promised,
                    end_stream: h.ty == frame::HEADERS && h.flags & frame::END_STREAM != 0,
                    data: Vec::new(),
                };
                if h.flags & frame::END_HEADERS != 0 {
                    rec.size_update = self.header_block(dir, &block, frag, out);
                    self.block_frame(dir, &block, &mut rec, out);
                    self.after_block(dir, &block, out);
                } else {
                    self.block_append(&mut block, frag);
                    self.sides[si].block = Some(block);
                    out.http2_frame(&rec);
                }
            }
            frame::CONTINUATION => {
                let Some(mut block) = self.sides[si].block.take() else {
                    return;
                };
                if block.stream != h.stream {
                    self.bad_frame();
                    return;
                }
                self.block_append(&mut block, payload);
                if h.flags & frame::END_HEADERS != 0 {
                    let data = std::mem::take(&mut block.data);
                    rec.size_update = self.header_block(dir, &block, &data, out);
                    self.block_frame(dir, &block, &mut rec, out);
                    self.after_block(dir, &block, out);
                } else {
                    out.http2_frame(&rec);
                    self.sides[si].block = Some(block);
                }
            }
            frame::PRIORITY => {
                let Some(p) = frame::Priority::parse(payload) else {
                    self.bad_frame();
                    return;
                };
                rec.priority = Some(p.weight);
                if let Some(i) = stream {
                    self.streams[i].priority = Some(p.weight);
                }
                out.http2_frame(&rec);
            }
            frame::RST_STREAM => {
                let Some(code) = frame::be32(payload, 0) else {
                    self.bad_frame();
                    return;
                };
                rec.error_code = Some(code);
                out.http2_frame(&rec);
                let i = stream.unwrap_or_default();
                self.half(i, to_server).error_code = Some(code);
                // The stream is closed both ways (a body that had not ended is a truncated file).
                self.emit(i, out);
            }
            frame::SETTINGS => {
                if h.flags & frame::ACK == 0 {
                    if !payload.len().is_multiple_of(6) {
                        self.bad_frame();
                    }
                    // The sender's decoder limit bounds what the other side's encoder may use: the HPACK table of
                    // the opposite direction.
                    for (id, v) in frame::settings(payload) {
                        if id == frame::SETTINGS_HEADER_TABLE_SIZE {
                            self.sides[1 - si].hpack.set_limit(u64::from(v));
                        }
                    }
                    rec.settings = payload;
                }
                out.http2_frame(&rec);
            }
            frame::GOAWAY => {
                rec.error_code = frame::be32(payload, 4);
                if rec.error_code.is_none() {
                    self.bad_frame();
                }
                out.http2_frame(&rec);
            }
            frame::WINDOW_UPDATE => {
                rec.window = frame::be32(payload, 0).map(|w| w & 0x7fff_ffff);
                if rec.window.is_none() {
                    self.bad_frame();
                }
                out.http2_frame(&rec);
            }
            // PING and unknown types (RFC 9113 section 5.5: ignored).
            _ => out.http2_frame(&rec),
        }
    }

    /// Hands over the frame that ended a header block, with the fields decoded on its side of the stream.
    fn block_frame(
        &mut self,
        dir: Direction,
        block: &Block,
        rec: &mut Http2Frame<'_>,
        out: &mut dyn EventSink,
    ) {
        let (id, to_server) = if block.promised != 0 {
            (block.promised, true)
        } else {
            (block.stream, dir == Direction::ToServer)
        };
        let headers = self.streams.iter().find(|s| s.id == id).map(|s| {
            if to_server {
                &s.req.headers
            } else {
                &s.resp.headers
            }
        });
        let rec = Http2Frame {
            headers: headers.map_or(&[][..], |h| &h[..]),
            ..*rec
        };
        out.http2_frame(&rec);
    }

    fn block_append(&mut self, block: &mut Block, frag: &[u8]) {
        // The compressed block is bounded by the header cap too (decoded fields are never smaller than their
        // encoding by more than the table's reuse): a block beyond it cannot be decoded and is counted.
        let room = self
            .header_cap
            .saturating_sub(block.data.len())
            .min(frag.len());
        block.data.extend_from_slice(&frag[..room]);
        if room < frag.len() {
            self.anomalies.header_bytes_cut += (frag.len() - room) as u64;
            self.stats.bytes_cut += (frag.len() - room) as u64;
        }
    }

    /// Decodes a complete header block into its stream's half (the promised stream's request for PUSH_PROMISE);
    /// returns the last dynamic table size update it carried.
    fn header_block(
        &mut self,
        dir: Direction,
        block: &Block,
        data: &[u8],
        out: &mut dyn EventSink,
    ) -> Option<u64> {
        let si = side_index(dir);
        let (id, to_server) = if block.promised != 0 {
            (block.promised, true)
        } else {
            (block.stream, dir == Direction::ToServer)
        };
        let i = self.stream_index(id, out);
        let cap = self.header_cap;
        let mut cut = 0u64;
        let mut size_update = None;
        let half = if to_server {
            &mut self.streams[i].req
        } else {
            &mut self.streams[i].resp
        };
        let r = self.sides[si].hpack.decode(data, &mut |f| match f {
            Field::Header(n, v) => {
                if half.header_bytes + n.len() + v.len() > cap {
                    cut += (n.len() + v.len()) as u64;
                    return;
                }
                half.header_bytes += n.len() + v.len();
                half.headers.push((n.to_vec(), v.to_vec()));
            }
            Field::SizeUpdate(s) => size_update = Some(s),
        });
        if size_update.is_some() {
            half.size_update = size_update;
        }
        if r.is_err() {
            self.anomalies.hpack_errors += 1;
            self.stats.malformed += 1;
        }
        self.anomalies.header_bytes_cut += cut;
        self.stats.bytes_cut += cut;
        size_update
    }

    /// After a header block: the half's buffers go out (the first block only; later ones are trailers), and
    /// END_STREAM ends the half.
    fn after_block(&mut self, dir: Direction, block: &Block, out: &mut dyn EventSink) {
        let (id, to_server) = if block.promised != 0 {
            (block.promised, true)
        } else {
            (block.stream, dir == Direction::ToServer)
        };
        let Some(i) = self.streams.iter().position(|s| s.id == id) else {
            return;
        };
        if !self.half(i, to_server).headers_done {
            if to_server {
                self.request_buffers(i, out);
            } else {
                self.response_buffers(i, out);
            }
        }
        if block.end_stream || block.promised != 0 {
            self.end_half(i, to_server, out);
        }
    }

    fn half(&mut self, i: usize, to_server: bool) -> &mut Half {
        let s = &mut self.streams[i];
        if to_server { &mut s.req } else { &mut s.resp }
    }

    /// The index of stream `id`, created (with the next transaction number) when new. At [`MAX_STREAMS`] the
    /// oldest stream is completed first.
    fn stream_index(&mut self, id: u32, out: &mut dyn EventSink) -> usize {
        if let Some(i) = self.streams.iter().position(|s| s.id == id) {
            return i;
        }
        if self.streams.len() >= MAX_STREAMS {
            self.anomalies.streams_evicted += 1;
            self.emit(0, out);
        }
        self.streams.push(Stream {
            id,
            tx_id: self.next_tx,
            req: Half::default(),
            resp: Half::default(),
            priority: None,
        });
        self.next_tx += 1;
        self.streams.len() - 1
    }

    /// The request's buffers, as HTTP/1's parser gives them: method, target, host, user agent, a request line
    /// `METHOD PATH HTTP/2\r\n` (with its line end, as Suricata builds it), and the header lines (pseudo-headers
    /// first, as sent) as `name: value\r\n`.
    fn request_buffers(&mut self, i: usize, out: &mut dyn EventSink) {
        self.streams[i].req.headers_done = true;
        let s = &self.streams[i];
        // The stream's transaction as it stands, built only for an alert.
        let build = || stream_event(s);
        let tx = HttpTx::Built {
            tx_id: s.tx_id,
            build: &build,
        };
        let h = &s.req;
        let method = h.header(b":method");
        let path = h.header(b":path");
        if let Some(m) = method {
            out.http2_buffer(tx, HttpBuffer::Method, m);
        }
        if let Some(p) = path {
            out.http2_buffer(tx, HttpBuffer::Uri, p);
        }
        if let Some(host) = h.header(b":authority").or_else(|| h.header(b"host")) {
            out.http2_buffer(tx, HttpBuffer::Host, host);
        }
        if let Some(ua) = h.header(b"user-agent") {
            out.http2_buffer(tx, HttpBuffer::UserAgent, ua);
        }
        let line = &mut self.line;
        line.clear();
        line.extend_from_slice(method.unwrap_or_default());
        line.push(b' ');
        line.extend_from_slice(path.unwrap_or_default());
        line.extend_from_slice(b" HTTP/2\r\n");
        out.http2_buffer(tx, HttpBuffer::RequestLine, line);
        header_lines(&h.headers, line);
        out.http2_buffer(tx, HttpBuffer::RequestHeaders, line);
    }

    /// The response's buffers: status code, a status line `HTTP/2 STATUS\r\n`, the header lines.
    fn response_buffers(&mut self, i: usize, out: &mut dyn EventSink) {
        self.streams[i].resp.headers_done = true;
        let s = &self.streams[i];
        let build = || stream_event(s);
        let tx = HttpTx::Built {
            tx_id: s.tx_id,
            build: &build,
        };
        let h = &s.resp;
        let status = h.header(b":status");
        if let Some(st) = status {
            out.http2_buffer(tx, HttpBuffer::StatusCode, st);
        }
        let line = &mut self.line;
        line.clear();
        line.extend_from_slice(b"HTTP/2 ");
        line.extend_from_slice(status.unwrap_or_default());
        line.extend_from_slice(b"\r\n");
        out.http2_buffer(tx, HttpBuffer::ResponseLine, line);
        header_lines(&h.headers, line);
        out.http2_buffer(tx, HttpBuffer::ResponseHeaders, line);
    }

    /// END_STREAM in one direction: its body goes out (`http.request_body`/`http.response_body`, and the file
    /// record `file.data` reads); a stream ended both ways completes.
    fn end_half(&mut self, i: usize, to_server: bool, out: &mut dyn EventSink) {
        let half = if to_server {
            &self.streams[i].req
        } else {
            &self.streams[i].resp
        };
        if half.ended {
            return;
        }
        self.close_half(i, to_server, true, out);
        let s = &self.streams[i];
        if s.req.ended && s.resp.ended {
            self.emit(i, out);
        }
    }

    /// One direction of stream `i` is over: its body, if it had one, goes to the rules as the direction's body
    /// buffer and as a file (`file.*`, EVE `fileinfo`), `CLOSED` when END_STREAM ended it (`complete`), else
    /// `TRUNCATED` (the flow ended first), as Suricata logs a file whose stream never ended.
    fn close_half(&mut self, i: usize, to_server: bool, complete: bool, out: &mut dyn EventSink) {
        let s = &mut self.streams[i];
        let path = s.req.header(b":path").unwrap_or_default().to_vec();
        let half = if to_server { &mut s.req } else { &mut s.resp };
        half.ended = true;
        if half.body_len == 0 {
            return;
        }
        let body = std::mem::take(&mut half.body);
        let size = half.body_len;
        let s = &self.streams[i];
        let tx = s.tx_id;
        // The file first, then the body as the direction's buffer, as HTTP/1 hands them over: the body is the last
        // thing of its transaction the rules get, so they need not keep it for a rule led by `file.name`
        // (`flowbundle_rules::Buffer::ends_transaction`).
        // The body kept is the file's first bytes: hashed when it is the whole body, else only counted.
        let mut file = crate::file::FileRecord::new(&path, 0, self.files);
        file.count(&body);
        file.skipped(size.saturating_sub(body.len() as u64));
        let end = crate::file::FileEnd {
            proto: AppProto::Http2,
            tx_id: tx,
            to_server,
            complete,
        };
        file.close_with(end, &body, out);
        let build = || stream_event(s);
        out.http2_buffer(
            HttpTx::Built {
                tx_id: tx,
                build: &build,
            },
            if to_server {
                HttpBuffer::RequestBody
            } else {
                HttpBuffer::ResponseBody
            },
            &body,
        );
    }

    /// Stream `i` ends before END_STREAM ended each of its directions: what a direction that had not ended
    /// carried is a truncated file.
    fn close_open_halves(&mut self, i: usize, out: &mut dyn EventSink) {
        for to_server in [true, false] {
            let s = &self.streams[i];
            let half = if to_server { &s.req } else { &s.resp };
            if !half.ended {
                self.close_half(i, to_server, false, out);
            }
        }
    }

    /// Completes stream `i`: what a direction that END_STREAM had not ended carried is a truncated file (a
    /// reset, an eviction, the flow's end), then its EVE `http` event, and it leaves the table.
    fn emit(&mut self, i: usize, out: &mut dyn EventSink) {
        self.close_open_halves(i, out);
        let s = self.streams.remove(i);
        out.event(AppEvent::Http(stream_event(&s)));
    }
}

/// Header lines `name: value\r\n` of every field, pseudo-headers included (`:method: GET`), into `out` (cleared
/// first), as Suricata builds HTTP/2's `http.header` (which `http.header_names` and the `strip_pseudo_headers`
/// transform then read).
fn header_lines(headers: &[(Vec<u8>, Vec<u8>)], out: &mut Vec<u8>) {
    out.clear();
    for (n, v) in headers {
        out.extend_from_slice(n);
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn error_name(code: u32) -> String {
    frame::ERROR_CODES
        .get(code as usize)
        .map_or_else(|| code.to_string(), |n| (*n).to_string())
}

/// The EVE `http` event of a stream.
fn stream_event(s: &Stream) -> HttpEvent {
    let req = &s.req;
    let resp = &s.resp;
    let fields = |h: &Half| {
        h.headers
            .iter()
            .map(|(n, v)| HeaderField {
                name: lossy(n),
                value: lossy(v),
                table_size_update: None,
            })
            .chain(h.size_update.map(|s| HeaderField {
                name: String::new(),
                value: String::new(),
                table_size_update: Some(s),
            }))
            .collect::<Vec<_>>()
    };
    let side = |h: &Half, priority: Option<u8>| {
        let side = Http2Side {
            error_code: h.error_code.map(error_name),
            priority,
            settings: Vec::<Http2Setting>::new(),
        };
        (!side.is_empty()).then_some(side)
    };
    HttpEvent {
        tx_id: s.tx_id,
        hostname: req
            .header(b":authority")
            .or_else(|| req.header(b"host"))
            .map(lossy),
        url: req.header(b":path").map(lossy),
        http_user_agent: req.header(b"user-agent").map(lossy),
        http_content_type: resp.header(b"content-type").map(lossy),
        http_refer: req.header(b"referer").map(lossy),
        http_method: req.header(b":method").map(lossy),
        protocol: Some("HTTP/2".into()),
        status: resp
            .header(b":status")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|v| v.parse().ok()),
        redirect: resp.header(b"location").map(lossy),
        length: resp.body_len,
        request_body_length: req.body_len,
        http2: Some(Box::new(Http2Info {
            stream_id: s.id,
            request: side(req, s.priority),
            response: side(resp, None),
        })),
        request_headers: fields(req),
        response_headers: fields(resp),
        ..HttpEvent::default()
    }
}

impl Parser for Http2Parser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        self.input(dir, data, out);
    }

    fn gap(&mut self, dir: Direction, _len: u64) {
        // Frame boundaries and the HPACK table are lost: this direction is not parsed further.
        let si = side_index(dir);
        if self.sides[si].phase != Phase::Dead {
            self.sides[si].phase = Phase::Dead;
            self.sides[si].buf = Vec::new();
            self.stats.gave_up += 1;
        }
    }

    fn finish(&mut self, out: &mut dyn EventSink) {
        // Streams still open: what they have goes out (bodies of halves that did not end, as truncated files,
        // then the events).
        while !self.streams.is_empty() {
            self.emit(0, out);
        }
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::http2::frame::*;

    /// Records what the parser hands over (frames as tuples of their fields, files as (tx, to server, name, data,
    /// size)).
    #[derive(Debug, Default)]
    #[allow(clippy::type_complexity)]
    pub(crate) struct Rec {
        pub events: Vec<HttpEvent>,
        pub buffers: Vec<(u64, HttpBuffer, Vec<u8>)>,
        pub frames: Vec<(
            u64,
            bool,
            u8,
            Option<u32>,
            Option<u8>,
            Option<u32>,
            Vec<u8>,
            Option<u64>,
        )>,
        pub files: Vec<(u64, bool, Vec<u8>, Vec<u8>, u64)>,
        /// Each file's EVE `fileinfo` state, in the order of `files`.
        pub file_states: Vec<&'static str>,
        /// The transaction of each buffer and file, in the order they came.
        pub order: Vec<(u64, Option<HttpBuffer>)>,
    }

    impl EventSink for Rec {
        fn event(&mut self, e: AppEvent) {
            match e {
                AppEvent::Http(h) => self.events.push(h),
                AppEvent::Fileinfo(f) => self.file_states.push(f.state),
                _ => {}
            }
        }
        fn http_buffer(&mut self, tx: HttpTx<'_>, b: HttpBuffer, data: &[u8]) {
            self.order.push((tx.tx_id(), Some(b)));
            self.buffers.push((tx.tx_id(), b, data.to_vec()));
        }
        fn http2_frame(&mut self, f: &Http2Frame<'_>) {
            self.frames.push((
                f.tx_id,
                f.to_server,
                f.ty,
                f.error_code,
                f.priority,
                f.window,
                f.settings.to_vec(),
                f.size_update,
            ));
        }
        fn file(&mut self, f: &crate::FileData<'_>) {
            assert_eq!(f.proto, AppProto::Http2);
            self.order.push((f.tx_id, None));
            self.files.push((
                f.tx_id,
                f.to_server,
                f.name.to_vec(),
                f.data.to_vec(),
                f.size,
            ));
        }
    }

    impl Rec {
        pub fn buffer(&self, tx: u64, b: HttpBuffer) -> Option<&[u8]> {
            self.buffers
                .iter()
                .find(|x| x.0 == tx && x.1 == b)
                .map(|x| x.2.as_slice())
        }
    }

    pub(crate) fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut v = FrameHeader {
            len: payload.len(),
            ty,
            flags,
            stream,
        }
        .emit()
        .to_vec();
        v.extend_from_slice(payload);
        v
    }

    /// An HPACK block of literal fields without indexing, new names, no Huffman.
    pub(crate) fn block(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        for (n, v) in fields {
            b.push(0);
            for s in [n, v] {
                assert!(s.len() < 127);
                b.push(s.len() as u8);
                b.extend_from_slice(s.as_bytes());
            }
        }
        b
    }

    fn settings_frame(entries: &[(u16, u32)]) -> Vec<u8> {
        let mut p = Vec::new();
        for (id, v) in entries {
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        frame(SETTINGS, 0, 0, &p)
    }

    /// A GET and a POST on streams 1 and 3, the responses with a padded DATA frame and a header block continued.
    fn conversation() -> (Vec<u8>, Vec<u8>) {
        let mut c = PREFACE.to_vec();
        c.extend(settings_frame(&[(1, 8192), (4, 65535)]));
        c.extend(frame(
            HEADERS,
            END_HEADERS | END_STREAM | PRIORITY_FLAG,
            1,
            &[
                &[0, 0, 0, 0, 41][..],
                &block(&[
                    (":method", "GET"),
                    (":path", "/index.html?q=1"),
                    (":scheme", "http"),
                    (":authority", "example.com"),
                    ("user-agent", "curl/8.0"),
                    ("accept", "*/*"),
                ]),
            ]
            .concat(),
        ));
        let post = block(&[
            (":method", "POST"),
            (":path", "/upload"),
            (":authority", "example.com"),
            ("content-type", "text/plain"),
        ]);
        c.extend(frame(HEADERS, 0, 3, &post[..10]));
        c.extend(frame(CONTINUATION, END_HEADERS, 3, &post[10..]));
        c.extend(frame(DATA, 0, 3, b"name="));
        c.extend(frame(DATA, END_STREAM, 3, b"value"));
        c.extend(frame(WINDOW_UPDATE, 0, 0, &[0, 1, 0, 0]));
        let mut s = settings_frame(&[(3, 100)]);
        s.extend(frame(SETTINGS, ACK, 0, &[]));
        s.extend(frame(
            HEADERS,
            END_HEADERS,
            1,
            &block(&[
                (":status", "200"),
                ("content-type", "text/html"),
                ("server", "h2o"),
            ]),
        ));
        s.extend(frame(DATA, PADDED, 1, &[3, b'<', b'p', b'>', 0, 0, 0]));
        s.extend(frame(DATA, END_STREAM, 1, b"hi"));
        s.extend(frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            3,
            &block(&[(":status", "404")]),
        ));
        s.extend(frame(GOAWAY, 0, 0, &[0, 0, 0, 3, 0, 0, 0, 0]));
        (c, s)
    }

    fn run(c: &[u8], s: &[u8], step: usize) -> (Rec, Http2Parser) {
        let mut p = Http2Parser::new(&Limits::default());
        let mut r = Rec::default();
        for piece in c.chunks(step) {
            p.parse(Direction::ToServer, piece, 0, &mut r);
        }
        for piece in s.chunks(step) {
            p.parse(Direction::ToClient, piece, 0, &mut r);
        }
        p.finish(&mut r);
        (r, p)
    }

    /// A response's body is the last buffer or file of its transaction the parser hands over (its file before it),
    /// as `flowbundle_rules::Buffer::ends_transaction` counts on.
    #[test]
    fn a_response_body_is_the_last_of_its_transaction() {
        let (c, s) = conversation();
        let (r, _) = run(&c, &s, 7);
        let mut bodies = 0;
        for (i, &(tx, b)) in r.order.iter().enumerate() {
            if b == Some(HttpBuffer::ResponseBody) {
                bodies += 1;
                assert!(r.order[i + 1..].iter().all(|x| x.0 != tx), "{:?}", r.order);
            }
        }
        assert_eq!(bodies, 1);
    }

    #[test]
    fn streams_become_transactions_with_http_buffers() {
        let (c, s) = conversation();
        let (r, p) = run(&c, &s, usize::MAX);
        assert_eq!(p.stats(), ParserStats::default());
        assert_eq!(p.anomalies(), Http2Anomalies::default());
        // Stream 1 is the second transaction (the client's SETTINGS frame on stream 0 is the first).
        let (t1, t3) = (1, 2);
        assert_eq!(r.buffer(t1, HttpBuffer::Method), Some(&b"GET"[..]));
        assert_eq!(r.buffer(t1, HttpBuffer::Uri), Some(&b"/index.html?q=1"[..]));
        assert_eq!(r.buffer(t1, HttpBuffer::Host), Some(&b"example.com"[..]));
        assert_eq!(r.buffer(t1, HttpBuffer::UserAgent), Some(&b"curl/8.0"[..]));
        assert_eq!(
            r.buffer(t1, HttpBuffer::RequestLine),
            Some(&b"GET /index.html?q=1 HTTP/2\r\n"[..])
        );
        assert_eq!(
            r.buffer(t1, HttpBuffer::RequestHeaders),
            Some(
                &b":method: GET\r\n:path: /index.html?q=1\r\n:scheme: http\r\n:authority: example.com\r\n\
user-agent: curl/8.0\r\naccept: */*\r\n"[..]
            )
        );
        assert_eq!(r.buffer(t1, HttpBuffer::StatusCode), Some(&b"200"[..]));
        assert_eq!(
            r.buffer(t1, HttpBuffer::ResponseLine),
            Some(&b"HTTP/2 200\r\n"[..])
        );
        assert_eq!(r.buffer(t1, HttpBuffer::ResponseBody), Some(&b"<p>hi"[..]));
        assert_eq!(r.buffer(t3, HttpBuffer::Method), Some(&b"POST"[..]));
        assert_eq!(
            r.buffer(t3, HttpBuffer::RequestBody),
            Some(&b"name=value"[..])
        );
        assert_eq!(r.buffer(t3, HttpBuffer::StatusCode), Some(&b"404"[..]));
        assert_eq!(
            r.files,
            [
                (t3, true, b"/upload".to_vec(), b"name=value".to_vec(), 10),
                (t1, false, b"/index.html?q=1".to_vec(), b"<p>hi".to_vec(), 5),
            ]
        );
        assert_eq!(r.events.len(), 2);
        let e = r.events.iter().find(|e| e.tx_id == t1).unwrap();
        assert_eq!(e.hostname.as_deref(), Some("example.com"));
        assert_eq!(e.url.as_deref(), Some("/index.html?q=1"));
        assert_eq!(e.http_method.as_deref(), Some("GET"));
        assert_eq!(e.protocol.as_deref(), Some("HTTP/2"));
        assert_eq!(e.status, Some(200));
        assert_eq!(e.length, 5);
        assert_eq!(e.http_content_type.as_deref(), Some("text/html"));
        let h2 = e.http2.as_ref().unwrap();
        assert_eq!(h2.stream_id, 1);
        assert_eq!(h2.request.as_ref().unwrap().priority, Some(41));
        assert_eq!(e.request_headers.len(), 6);
        // Frames: types, windows, settings, error codes, priorities.
        let types: Vec<u8> = r.frames.iter().map(|f| f.2).collect();
        assert_eq!(
            types,
            [
                SETTINGS,
                HEADERS,
                HEADERS,
                CONTINUATION,
                DATA,
                DATA,
                WINDOW_UPDATE,
                SETTINGS,
                SETTINGS,
                HEADERS,
                DATA,
                DATA,
                HEADERS,
                GOAWAY
            ]
        );
        assert_eq!(r.frames[1].4, Some(41));
        assert_eq!(r.frames[6].5, Some(65536));
        assert_eq!(r.frames[0].6.len(), 12);
        assert_eq!(r.frames[13].3, Some(0));
        // The client advertised an 8 KiB table: the server's encoder may use it.
        assert_eq!(p.sides[1].hpack.limit_for_tests(), 8192);
    }

    /// A body whose stream never ended (the flow ended first) or that a RST_STREAM cut is a file as one that
    /// ended is, with the `file.*` buffers, in state `TRUNCATED`: the request body of stream 1 (no END_STREAM on
    /// its DATA) at the flow's end, the response body of stream 3 at its reset, stream 5's complete upload
    /// `CLOSED`.
    #[test]
    fn bodies_cut_short_are_truncated_files() {
        let mut c = PREFACE.to_vec();
        let post = |path| block(&[(":method", "POST"), (":path", path)]);
        c.extend(frame(HEADERS, END_HEADERS, 1, &post("/cut")));
        c.extend(frame(DATA, 0, 1, b"partial"));
        c.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &post("/reset")));
        c.extend(frame(HEADERS, END_HEADERS, 5, &post("/whole")));
        c.extend(frame(DATA, END_STREAM, 5, b"done"));
        let mut s = frame(HEADERS, END_HEADERS, 3, &block(&[(":status", "200")]));
        s.extend(frame(DATA, 0, 3, b"half a page"));
        s.extend(frame(RST_STREAM, 0, 3, &[0, 0, 0, 8]));
        let (r, _) = run(&c, &s, usize::MAX);
        assert_eq!(
            r.files,
            [
                (2, true, b"/whole".to_vec(), b"done".to_vec(), 4),
                (1, false, b"/reset".to_vec(), b"half a page".to_vec(), 11),
                (0, true, b"/cut".to_vec(), b"partial".to_vec(), 7),
            ]
        );
        assert_eq!(r.file_states, ["CLOSED", "TRUNCATED", "TRUNCATED"]);
        assert_eq!(r.buffer(0, HttpBuffer::RequestBody), Some(&b"partial"[..]));
        assert_eq!(
            r.buffer(1, HttpBuffer::ResponseBody),
            Some(&b"half a page"[..])
        );
        assert_eq!(r.events.len(), 3);
    }

    /// The same conversation cut at every byte gives the same result.
    #[test]
    fn any_segmentation_gives_the_same_result() {
        let (c, s) = conversation();
        let (whole, _) = run(&c, &s, usize::MAX);
        for step in [1, 2, 3, 7, 9, 10, 64] {
            let (r, p) = run(&c, &s, step);
            assert_eq!(p.stats(), ParserStats::default(), "step {step}");
            assert_eq!(r.buffers, whole.buffers, "step {step}");
            assert_eq!(r.events, whole.events, "step {step}");
            assert_eq!(r.frames, whole.frames, "step {step}");
        }
    }

    /// Bad padding, stream-0 DATA, CONTINUATION out of place, a bad HPACK index and a frame above the cap are
    /// counted; parsing goes on after each.
    #[test]
    fn hostile_frames_are_counted() {
        let mut c = PREFACE.to_vec();
        c.extend(frame(DATA, PADDED, 1, &[9, b'x']));
        c.extend(frame(DATA, 0, 0, b"x"));
        c.extend(frame(CONTINUATION, END_HEADERS, 1, &block(&[("a", "b")])));
        c.extend(frame(HEADERS, END_HEADERS, 5, &[0xff, 0x80, 0x80, 0x01]));
        let huge = MAX_FRAME + 10;
        c.extend(
            FrameHeader {
                len: huge,
                ty: DATA,
                flags: 0,
                stream: 7,
            }
            .emit(),
        );
        c.extend(vec![b'z'; huge]);
        c.extend(frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            9,
            &block(&[(":method", "GET"), (":path", "/after")]),
        ));
        for step in [usize::MAX, 1000, 1] {
            let (r, p) = run(&c, &[], step);
            let a = p.anomalies();
            assert_eq!(
                (a.bad_frames, a.hpack_errors, a.huge_frames),
                (3, 1, 1),
                "step {step}"
            );
            assert!(
                r.buffers
                    .iter()
                    .any(|b| b.1 == HttpBuffer::Uri && b.2 == b"/after")
            );
        }
    }

    /// Streams beyond the cap complete the oldest; header fields beyond the header cap are cut and counted.
    #[test]
    fn streams_and_headers_are_bounded() {
        let mut c = PREFACE.to_vec();
        for i in 0..(MAX_STREAMS as u32 + 10) {
            c.extend(frame(
                HEADERS,
                END_HEADERS,
                2 * i + 1,
                &block(&[(":method", "GET"), (":path", "/")]),
            ));
        }
        let (r, p) = run(&c, &[], usize::MAX);
        assert!(p.streams.is_empty());
        assert_eq!(p.anomalies().streams_evicted, 10);
        assert_eq!(r.events.len(), MAX_STREAMS + 10);
        let small = Limits {
            http_header_cap: 20,
            ..Limits::default()
        };
        let mut p = Http2Parser::new(&small);
        let mut r = Rec::default();
        let mut c = PREFACE.to_vec();
        c.extend(frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            1,
            &block(&[(":method", "GET"), ("x-long", "0123456789")]),
        ));
        p.parse(Direction::ToServer, &c, 0, &mut r);
        assert!(p.anomalies().header_bytes_cut > 0);
        assert_eq!(r.buffer(0, HttpBuffer::Method), Some(&b"GET"[..]));
    }

    /// Not HTTP/2 after all: the client side stops at the first byte that differs from the preface.
    #[test]
    fn wrong_preface_gives_up() {
        let (r, p) = run(b"PRI * HTTP/1.1\r\n", &[], usize::MAX);
        assert_eq!(p.stats().gave_up, 1);
        assert!(r.frames.is_empty());
    }

    /// Arbitrary bytes after the preface, in any segmentation, never panic.
    #[test]
    fn arbitrary_frames_never_panic() {
        use proptest::prelude::*;
        proptest!(|(c in proptest::collection::vec(any::<u8>(), 0..400),
                    s in proptest::collection::vec(any::<u8>(), 0..400),
                    step in 1usize..50)| {
            let mut cc = PREFACE.to_vec();
            cc.extend(c);
            let _ = run(&cc, &s, step);
        });
    }
}
