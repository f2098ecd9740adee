//! HTTP/2 over cleartext TCP (h2c): nDPI's `HTTP2`, Suricata's `http2`.
//!
//! ## Detection
//! With prior knowledge (RFC 9113 section 3.3) the client's connection preface is the fixed string
//! `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` (then a SETTINGS frame): certain. HTTP/2 over TLS is TLS with the ALPN
//! `h2`, encrypted: only cleartext HTTP/2 is parsed. A connection upgraded from HTTP/1.1 (`Upgrade: h2c`, then
//! `101 Switching Protocols`) stays labelled HTTP (nDPI's label); the HTTP/1 parser hands its bytes to this
//! parser ([`Http2Parser::upgraded`]).
//!
//! ## Parsing
//! `frame.rs` reads frame headers and fixed fields, `hpack.rs` decodes header blocks (RFC 7541, with the dynamic
//! table bounded by `SETTINGS_HEADER_TABLE_SIZE`), `parser.rs` keeps one transaction per stream: its request and
//! response header fields, bodies up to the HTTP body caps, priority and error code. The request and response go to
//! the rules through the same buffers HTTP/1's parser fills ([`crate::EventSink::http2_buffer`]: method, path as the URI,
//! `:authority` as the host, header lines, bodies) and each frame's fields through [`crate::EventSink::http2_frame`]
//! (`http2.frametype`, `http2.errorcode`, `http2.priority`, `http2.window`, `http2.settings`,
//! `http2.size_update`). A completed stream is an EVE `http` event with the `http2` object.
//!
//! ## What it costs and what it bounds
//! Per connection: two HPACK tables (at most [`hpack::MAX_TABLE_SIZE`] each), one partial frame per direction (at
//! most [`parser::MAX_FRAME`]; larger frames are skipped and counted), at most [`parser::MAX_STREAMS`] open streams
//! whose header fields are capped by `http_header_cap` and bodies by the HTTP body caps. Bad padding, bad HPACK,
//! huge frames and CONTINUATION out of place are counted ([`Http2Anomalies`], [`crate::ParserStats::malformed`]), never
//! panics.

use crate::{AppProto, ByteSet, Detector, Direction, Limits, Parser, Probe, ProbeCtx, Transport};

pub mod frame;
pub mod hpack;
mod parser;

#[cfg(test)]
pub(crate) use parser::tests as testutil;
pub use parser::{Http2Anomalies, Http2Parser, MAX_FRAME, MAX_STREAMS};

/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// One frame's fields as the rules see them, handed over as each frame is parsed ([`crate::EventSink::http2_frame`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Http2Frame<'a> {
    /// The transaction: the stream's, or a transaction of its own for a frame on stream 0 (as Suricata counts).
    pub tx_id: u64,
    pub to_server: bool,
    /// Frame type ([`frame::DATA`], ...).
    pub ty: u8,
    pub flags: u8,
    pub stream: u32,
    /// RST_STREAM's or GOAWAY's error code.
    pub error_code: Option<u32>,
    /// The priority weight of a PRIORITY frame or a HEADERS frame with the PRIORITY flag.
    pub priority: Option<u8>,
    /// WINDOW_UPDATE's increment.
    pub window: Option<u32>,
    /// A SETTINGS frame's payload (6-byte entries, [`frame::settings`] reads them); empty otherwise.
    pub settings: &'a [u8],
    /// The last dynamic table size update of a header block that ended in this frame.
    pub size_update: Option<u64>,
    /// The header fields (name, value) decoded so far on this frame's side of the stream, when a header block
    /// ended in this frame (`http2.header_name`); empty otherwise.
    pub headers: &'a [(Vec<u8>, Vec<u8>)],
}

/// Detector for nDPI's `Http2`.
pub struct Http2Detector;

impl Detector for Http2Detector {
    fn proto(&self) -> AppProto {
        AppProto::Http2
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"P\0")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let preface = PREFACE;
        if ctx.dir != Direction::ToServer {
            // A server may send its SETTINGS frame before the client's preface arrives: wait for the client.
            return match frame::FrameHeader::parse(d) {
                Some(h)
                    if h.ty == frame::SETTINGS
                        && h.stream == 0
                        && h.flags == 0
                        && h.len.is_multiple_of(6)
                        && h.len <= 6 * 8 =>
                {
                    Probe::Unsure
                }
                _ => Probe::NotForUs,
            };
        }
        Probe::magic(d, preface)
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(Http2Parser::new(limits)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        Http2Detector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(
            probe_tcp(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04"),
            Probe::Certain
        );
        assert_eq!(probe_tcp(b"PRI * HTTP/2"), Probe::Unsure);
        assert_eq!(probe_tcp(b"POST / HTTP/1.1\r\n"), Probe::NotForUs);
        // A server's SETTINGS frame before the client's preface leaves the question open; other bytes do not.
        let server = |d: &[u8]| Http2Detector.probe(&ctx_tcp(Direction::ToClient, d));
        assert_eq!(
            server(&[0, 0, 0x12, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100]),
            Probe::Unsure
        );
        assert_eq!(server(b"HTTP/1.1 200 OK\r\n"), Probe::NotForUs);
        assert_eq!(server(&[0, 0, 0x12, 4, 1, 0, 0, 0, 0]), Probe::NotForUs);
    }
}
