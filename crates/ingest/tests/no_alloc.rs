//! The hot paths do not allocate: streaming reads after the first packet and preloaded iteration make no heap
//! allocation at all, whatever the number of packets. Checked with a counting global allocator that counts only on
//! the thread that asks, so the test harness's other threads do not interfere.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Cursor, Write};

use common::{Ng, Pcap};
use flowbundle_ingest::{CaptureReader, Trace};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    ALLOCS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCS.with(|a| a.get())
}

fn captures() -> Vec<(&'static str, Vec<u8>)> {
    let mut pcap = Pcap::new(false, true, 1, 65535);
    let mut ng = Ng::new();
    ng.shb(false).idb(1, 0, Some(9), None, None);
    for i in 0..20_000u32 {
        let data = vec![i as u8; 60 + (i as usize * 37) % 1400];
        pcap.packet(u64::from(i) * 1000, &data, data.len() as u32);
        ng.epb(0, u64::from(i), &data, data.len() as u32);
        if i % 1000 == 0 {
            ng.block(5, &[0; 20]);
        }
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&ng.buf).unwrap();
    let gz = gz.finish().unwrap();
    vec![("pcap", pcap.buf), ("pcapng", ng.buf), ("pcapng.gz", gz)]
}

#[test]
fn streaming_and_preloaded_reads_make_no_allocation_per_packet() {
    for (name, bytes) in captures() {
        let mut r = CaptureReader::new(Cursor::new(bytes.clone())).unwrap();
        assert!(r.next_packet().unwrap().is_some());
        let mut n = 1u64;
        let allocs = allocations(|| {
            while let Some(p) = r.next_packet().unwrap() {
                std::hint::black_box(p.data);
                n += 1;
            }
        });
        assert_eq!(n, 20_000, "{name}");
        assert_eq!(allocs, 0, "{name}: streaming allocated");

        let t = Trace::from_vec(bytes).unwrap();
        let mut sum = 0u64;
        let allocs = allocations(|| {
            for p in &t {
                sum += p.data.len() as u64;
            }
            for i in 0..t.len() {
                sum += t.get(i).ts_ns;
            }
        });
        std::hint::black_box(sum);
        assert_eq!(allocs, 0, "{name}: preloaded iteration allocated");
    }
}
