//! Fuzz the IP defragmenter: the input is a sequence of raw IP packets, each `[len: u8][ts step: u8][len bytes]`,
//! decoded with `LinkType::RAW` and pushed into a `Defragmenter` with small caps; the caps must hold after every
//! packet and every reassembled IPv4 datagram must decode as a non-fragment (the proptests
//! `memory_caps_hold_under_fragment_floods` and `any_fragment_order_reassembles_the_same_datagram` call the same
//! entry points).
#![no_main]

use flowbundle_decode::{
    DecodeOptions, DefragConfig, DefragOutcome, Defragmenter, OverlapPolicy, decode_bytes,
};
use flowbundle_ingest::LinkType;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let policy = match sel % 3 {
        0 => OverlapPolicy::First,
        1 => OverlapPolicy::Last,
        _ => OverlapPolicy::RejectInconsistent,
    };
    let cfg = DefragConfig {
        max_datagrams: 8,
        max_bytes: 16 << 10,
        max_fragments: 32,
        timeout_ns: 1_000,
        policy,
        ..DefragConfig::default()
    };
    let mut df = Defragmenter::new(cfg);
    let opts = DecodeOptions::default();
    let mut ts = 0u64;
    while let [len, step, tail @ ..] = rest {
        let n = usize::from(*len).min(tail.len());
        let (pkt, next) = tail.split_at(n);
        rest = next;
        ts += u64::from(*step);
        let d = decode_bytes(LinkType::RAW, pkt, &opts);
        if let DefragOutcome::Reassembled(p) = df.push(&d, ts) {
            // An IPv4 result is never a fragment; an IPv6 one may carry a second fragment header in its payload.
            let r = decode_bytes(LinkType::RAW, p, &opts);
            assert!(r.ip.is_some_and(|ip| ip.is_v6() || !ip.is_fragment()));
        }
        assert!(df.in_progress() <= cfg.max_datagrams);
        assert!(df.bytes_held() <= cfg.max_bytes);
    }
});
