//! Arbitrary datagrams into the QUIC detector and Initial parser (header parsing, key derivation, header
//! protection, AEAD, CRYPTO frame reassembly, CHLO tags): no panic. Same entry points as the tests in
//! `crates/protocols/src/quic/`.
//!
//! Input: `[len_hi][len_lo][bytes]` datagrams. To reach the decryption and frame code, a datagram whose first
//! byte is 0xff is replaced by the RFC 9001 client Initial header with the rest of the datagram as payload.
#![no_main]

use flowbundle_protocols::quic::{QuicParser, parse_chlo, parse_long_header, probe_quic};
use flowbundle_protocols::{AppEvent, Direction, Limits, Parser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = (probe_quic(data), parse_long_header(data), parse_chlo(data));
    let mut p = QuicParser::new(&Limits::default());
    let mut out: Vec<AppEvent> = Vec::new();
    let mut rest = data;
    while let [hi, lo, tail @ ..] = rest {
        let n = (usize::from(*hi) << 8 | usize::from(*lo)).min(tail.len());
        let d = &tail[..n];
        if d.first() == Some(&0xff) {
            // Long header, v1, DCID 8394c8f03e515708, no SCID, no token, Length = the rest.
            let body = &d[1..];
            let mut pkt = vec![
                0xc3, 0, 0, 0, 1, 8, 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08, 0, 0,
            ];
            let len = (body.len() as u16).min(0x3fff);
            pkt.extend_from_slice(&(0x4000 | len).to_be_bytes());
            pkt.extend_from_slice(body);
            p.parse(Direction::ToServer, &pkt, 0, &mut out);
        } else {
            p.parse(Direction::ToServer, d, 0, &mut out);
        }
        rest = &tail[n..];
    }
    p.finish(&mut out);
    // One event per flow, but for cleartext gQUIC hellos, each an event up to a bound.
    assert!(out.len() <= flowbundle_protocols::quic::MAX_CLEARTEXT_CHLOS as usize);
    for e in &out {
        if let AppEvent::Quic(q) = e {
            assert!(q.cyu.len() <= 1 && q.cyu.iter().all(|c| c.hash.len() == 32));
        }
    }
});
