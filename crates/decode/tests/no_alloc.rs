//! Decoding, keying and hashing a real trace allocates nothing per packet; the defragmenter allocates per
//! fragmented datagram at most (and nothing once its buffers are warm). Counted with a global allocator.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use flowbundle_decode::{
    DecodeOptions, DecodeStats, DefragConfig, Defragmenter, FlowHasher, FlowKey, FragmentPorts,
    decode,
};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn dispatcher_path_allocates_nothing_and_defrag_reuses_buffers() {
    let Some(trace) = common::load("reassembly/example.pcap") else {
        return;
    };
    let Some(frags) = common::load("reassembly/ip4_fragments.pcap") else {
        return;
    };
    let opts = DecodeOptions {
        decap_tunnels: true,
        ..DecodeOptions::default()
    };
    let h = FlowHasher::new(3);
    let mut ports = FragmentPorts::new(1024, 30_000_000_000);
    let mut stats = DecodeStats::default();
    let before = ALLOCS.load(Ordering::Relaxed);
    let mut acc = 0u32;
    for rec in trace.iter() {
        let d = decode(&rec, &opts);
        stats.record(&d);
        if let Some((k, _)) = FlowKey::from_decoded_with(&d, &mut ports, rec.ts_ns) {
            acc ^= h.hashes(&k).conn;
        }
    }
    assert_eq!(
        ALLOCS.load(Ordering::Relaxed) - before,
        0,
        "decode + key + hashes allocated ({acc})"
    );
    assert_eq!(stats.packets(), trace.len() as u64);

    // Defrag: warm up on the capture once, then a second pass over the same fragments reuses the pooled buffers.
    let mut df = Defragmenter::new(DefragConfig::default());
    let run = |df: &mut Defragmenter, shift: u64| {
        for rec in frags.iter() {
            let d = decode(&rec, &opts);
            let _ = df.push(&d, rec.ts_ns + shift);
        }
    };
    run(&mut df, 0);
    let warm = ALLOCS.load(Ordering::Relaxed);
    run(&mut df, 100_000_000_000);
    let second = ALLOCS.load(Ordering::Relaxed) - warm;
    let datagrams = df.stats().reassembled / 2;
    assert!(
        second <= 2 * datagrams,
        "{second} allocations for {datagrams} datagrams on a warm defragmenter"
    );
}
