//! Arbitrary payload sequences through the engine's per-flow path: `FlowApp` over `Registry::builtin()` (every
//! detector probes, the winner's parser takes the rest, replay of the saved prefix included). No panic, and the
//! classifier ends within its payload budget. Same entry point as `crates/protocols/tests/ground_truth.rs`.
//!
//! Input: byte 0 picks the transport (bit 0) and ports (bits 1-3, from well-known ones); then `[flags][len][bytes]`
//! records, bit 0 of `flags` the direction, bit 1 a gap after the chunk.
#![no_main]

use std::sync::OnceLock;

use flowbundle_protocols::{AppEvent, Direction, FlowApp, Registry, Transport, Verdict};
use libfuzzer_sys::fuzz_target;

static REG: OnceLock<Registry> = OnceLock::new();

const PORTS: [u16; 8] = [80, 443, 53, 5353, 5355, 22, 25, 40000];

fuzz_target!(|data: &[u8]| {
    let reg = REG.get_or_init(Registry::builtin);
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let transport = if sel & 1 == 0 {
        Transport::Tcp
    } else {
        Transport::Udp
    };
    let server = PORTS[usize::from(sel >> 1) & 7];
    let mut app = FlowApp::new(reg, transport, 50000, server);
    let mut out: Vec<AppEvent> = Vec::new();
    let mut per_dir = [0u32; 2];
    while let [flags, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let dir = if flags & 1 == 0 {
            Direction::ToServer
        } else {
            Direction::ToClient
        };
        if n > 0 {
            per_dir[dir.index()] += 1;
        }
        app.on_payload(reg, dir, &tail[..n], 0, &mut out);
        if flags & 2 != 0 && transport == Transport::Tcp {
            app.on_gap(dir, u64::from(*len));
        }
        rest = &tail[n..];
    }
    let max = reg.config().max_payloads_per_dir;
    let [a, b] = per_dir;
    if (a >= max && (b >= max || b == 0)) || (b >= max && a == 0) {
        assert_ne!(
            app.verdict(),
            Verdict::Pending,
            "budget spent but still probing"
        );
    }
    app.finish(&mut out);
});
