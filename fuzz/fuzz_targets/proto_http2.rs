//! Arbitrary chunk sequences into the HTTP/2 parser after the client preface (both directions, gaps), and the
//! first chunk alone as one HPACK header block: no panic, no hang, output bounded by the caps. Same entry points
//! as the proptests in `crates/protocols/src/http2/`.
//!
//! Input: a sequence of `[flags][len][len bytes]` records; bit 0 of `flags` is the direction, bit 1 asks for a
//! reassembly gap of `len` bytes after the chunk.
#![no_main]

use flowbundle_protocols::http2::hpack::Decoder;
use flowbundle_protocols::http2::{Http2Parser, PREFACE};
use flowbundle_protocols::{AppEvent, Direction, EventSink, HttpBuffer, Limits, Parser};
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Sink {
    events: usize,
    max_buffer: usize,
}

impl EventSink for Sink {
    fn event(&mut self, _e: AppEvent) {
        self.events += 1;
    }
    fn http_buffer(
        &mut self,
        tx: flowbundle_protocols::http::HttpTx<'_>,
        _b: HttpBuffer,
        data: &[u8],
    ) {
        self.max_buffer = self.max_buffer.max(data.len());
        // The transaction as an alert on the buffer would carry it, and its comparison with itself.
        let event = tx.event();
        assert_eq!(event.tx_id, tx.tx_id());
        assert!(!matches!(tx, flowbundle_protocols::http::HttpTx::Event(_)) || tx.is(&event));
    }
}

fuzz_target!(|data: &[u8]| {
    let mut d = Decoder::new();
    d.set_limit(1024);
    let _ = d.decode(data, &mut |_| {});
    assert!(d.table_size() <= 1024);

    let limits = Limits {
        http_response_body_cap: 4096,
        http_request_body_cap: 4096,
        http_header_cap: 4096,
        ..Limits::default()
    };
    let mut p = Http2Parser::new(&limits);
    let mut sink = Sink::default();
    p.parse(Direction::ToServer, PREFACE, 0, &mut sink);
    let mut rest = data;
    while let [flags, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let dir = if flags & 1 == 0 {
            Direction::ToServer
        } else {
            Direction::ToClient
        };
        p.parse(dir, &tail[..n], 0, &mut sink);
        if flags & 2 != 0 {
            p.gap(dir, u64::from(*len));
        }
        rest = &tail[n..];
    }
    p.finish(&mut sink);
    // Header lines are rebuilt from decoded fields (at most the cap plus ": " and CRLF per field).
    assert!(sink.max_buffer <= 3 * 4096);
});
