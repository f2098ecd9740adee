//! Fuzz TCP reassembly: the input is a connection's segments, each `[dir+flags: u8][seq: u16][ts step: u8]
//! [len: u8][len bytes]`, pushed into one `Reassembler` with small per-direction limits and a small memcap (the
//! proptest `arbitrary_segments_are_safe` in `crates/inspect/src/reassembly.rs` drives the same entry points).
//! Sequence numbers are taken relative to a base from the first four bytes, so segments overlap, fill holes and wrap
//! around 2^32. Checked after every segment: the limits and the memcap hold, and the sink sees each direction's
//! offsets contiguous (data continues where the previous data or gap ended); after `close`, the memcap is released.
#![no_main]

use flowbundle_decode::KeySide;
use flowbundle_inspect::reassembly::{
    Ctx, Reassembler, ReassemblyConfig, ReassemblyMemcap, ReassemblyStats, Segment, StreamSink,
};
use libfuzzer_sys::fuzz_target;

/// Checks that each direction's stream is contiguous: every delivery or gap starts where the last one ended.
#[derive(Default)]
struct Contiguous {
    next: [u64; 2],
    ok: bool,
}

impl StreamSink for Contiguous {
    fn data(&mut self, dir: KeySide, offset: u64, bytes: &[u8], _ts_ns: u64) {
        let n = &mut self.next[dir.index()];
        self.ok &= offset == *n;
        *n = offset + bytes.len() as u64;
    }
    fn gap(&mut self, dir: KeySide, offset: u64, len: u64) {
        let n = &mut self.next[dir.index()];
        self.ok &= offset == *n;
        *n = offset + len;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((base, mut rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let base = u32::from_be_bytes(*base);
    let cfg = ReassemblyConfig {
        max_segments: 8,
        max_bytes: 1024,
        flush_on_peer_data: base & 1 == 0,
        timeout_ns: 10_000,
    };
    let memcap = ReassemblyMemcap::new(1536);
    let mut stats = ReassemblyStats::default();
    let mut sink = Contiguous {
        ok: true,
        ..Contiguous::default()
    };
    let mut r = Reassembler::new();
    let mut ts = 0u64;
    while let [sel, s0, s1, step, len, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (payload, next) = tail.split_at(n);
        rest = next;
        ts += u64::from(*step) * 100;
        let dir = if sel & 0x80 == 0 {
            KeySide::Forward
        } else {
            KeySide::Reverse
        };
        // SYN 0x02, FIN 0x01, RST 0x04, ACK 0x10 from the low bits.
        let flags = u16::from(sel & 0x17);
        let seq = base.wrapping_add(u32::from(u16::from_be_bytes([*s0, *s1])));
        let mut cx = Ctx {
            cfg: &cfg,
            memcap: &memcap,
            stats: &mut stats,
            sink: &mut sink,
        };
        r.segment(
            dir,
            &Segment {
                seq,
                flags,
                payload,
                ts_ns: ts,
            },
            &mut cx,
        );
        assert!(memcap.held() <= memcap.cap(), "memcap passed");
        assert!(
            r.held_bytes() <= 2 * cfg.max_bytes,
            "per-direction byte limit passed"
        );
        assert_eq!(r.held_bytes(), memcap.held(), "memcap accounting");
        assert!(sink.ok, "stream offsets not contiguous");
    }
    let mut cx = Ctx {
        cfg: &cfg,
        memcap: &memcap,
        stats: &mut stats,
        sink: &mut sink,
    };
    r.close(&mut cx);
    assert_eq!(memcap.held(), 0, "memcap released on close");
    assert!(sink.ok, "stream offsets not contiguous");
});
