//! Arbitrary payloads into every built-in detector (the core HTTP, TLS, QUIC and DNS ones too), with arbitrary ports, indices,
//! stream prefix and previous datagram: no panic. Same entry point as `crates/protocols/tests/no_panic_extra.rs`.
//!
//! Input: 8 bytes of context (transport, direction, client and server port, payload and direction index), one byte
//! splitting the rest into `prev` and `data`.
#![no_main]

use flowbundle_protocols::{Direction, ProbeCtx, Transport};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [t, d, c0, c1, s0, s1, pi, di, split, body @ ..] = data else {
        return;
    };
    let transport = if t & 1 == 0 {
        Transport::Tcp
    } else {
        Transport::Udp
    };
    let cut = usize::from(*split).min(body.len());
    let (prev, payload) = body.split_at(cut);
    let ctx = ProbeCtx {
        transport,
        client_port: u16::from_be_bytes([*c0, *c1]),
        server_port: u16::from_be_bytes([*s0, *s1]),
        dir: if d & 1 == 0 {
            Direction::ToServer
        } else {
            Direction::ToClient
        },
        payload_index: u32::from(*pi).max(u32::from(*di)),
        dir_index: u32::from(*di),
        prefix: payload,
        data: payload,
        prev: if transport == Transport::Udp {
            prev
        } else {
            &[]
        },
        // The same bytes stand for the other direction's last datagram or stream start.
        peer: prev,
    };
    let dets = flowbundle_protocols::registry::builtin_detectors();
    for det in &dets {
        if det.transports().contains(&transport) {
            let _ = det.probe(&ctx);
        }
    }
});
