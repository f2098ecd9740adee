//! No allocation per packet in the timed loop: a run of 20,000 packets makes as many allocation calls as a run of
//! 1,000 (setup allocates per run, never per packet). Its own test binary, because it installs a counting allocator.

use flowbundle_scheduler::{Desc, SchedOptions, build};
use flowbundle_worker::{Null, RunConfig, run};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs_for(name: &str, n: u32) -> u64 {
    let descs: Vec<Desc> = (0..n)
        .map(|id| Desc {
            id,
            conn: id % 97,
            fid: (id % 89) as u16,
            rss: id % 83,
            len: 100,
        })
        .collect();
    let sched = build(name, 2, &SchedOptions::default()).unwrap();
    let before = ALLOCS.load(Relaxed);
    let r = run(sched.as_ref(), &Null, &descs, &RunConfig::default()).unwrap();
    let after = ALLOCS.load(Relaxed);
    assert_eq!(r.processed(), u64::from(n));
    after - before
}

#[test]
fn allocation_calls_do_not_grow_with_the_packet_count() {
    for name in flowbundle_scheduler::ALL {
        let small = allocs_for(name, 1_000);
        let large = allocs_for(name, 20_000);
        assert!(
            large.abs_diff(small) <= 8,
            "{name}: {small} allocations for 1,000 packets, {large} for 20,000"
        );
    }
}
