//! Arbitrary bytes into the TLS and DTLS handshake parsers, the hello decoders and the fingerprints: no panic.
//! Same entry points as the proptests in `crates/protocols/src/tls/`.
//!
//! Input: `[flags][len][len bytes]` records; bit 0 of `flags` is the direction, bit 1 a gap, bit 2 sends the
//! chunk to the DTLS parser as one datagram instead.
#![no_main]

use flowbundle_protocols::tls::{
    TlsParser, parse_client_hello, parse_server_hello, probe_dtls, probe_tls,
};
use flowbundle_protocols::{AppEvent, Direction, Limits, Parser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = (probe_tls(data), probe_dtls(data));
    if let Ok(ch) = parse_client_hello(data, false) {
        let _ = (ch.ja3(), ch.ja4('t'), ch.handshake());
    }
    let _ = parse_client_hello(data, true);
    let _ = parse_server_hello(data).map(|s| s.ja3s());
    let limits = Limits::default();
    let mut tls = TlsParser::new(&limits, false);
    let mut dtls = TlsParser::new(&limits, true);
    let mut out: Vec<AppEvent> = Vec::new();
    let mut rest = data;
    while let [flags, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let dir = if flags & 1 == 0 {
            Direction::ToServer
        } else {
            Direction::ToClient
        };
        if flags & 4 != 0 {
            dtls.parse(dir, &tail[..n], 0, &mut out);
        } else {
            tls.parse(dir, &tail[..n], 0, &mut out);
            if flags & 2 != 0 {
                tls.gap(dir, u64::from(*len));
            }
        }
        rest = &tail[n..];
    }
    tls.finish(&mut out);
    dtls.finish(&mut out);
    assert!(out.len() <= 2, "one event per flow");
});
