//! Per-packet cost of the dispatcher's decode path in *thread CPU time*, for machines shared with other work
//! (where criterion's wall-clock numbers in `benches/decode.rs` include time the thread was not running).
//!
//! `cargo run --release -p flowbundle-decode --example decode_cost -- [TRACE]` (default:
//! `shared/data/reassembly/example.pcap`). Prints the best of 5 runs of 200 passes over the preloaded trace, with
//! the `etherparse` crate as the same-run reference.

use std::hint::black_box;

use flowbundle_decode::{DecodeOptions, FlowHasher, FlowKey, FragmentPorts, decode};
use flowbundle_ingest::{LinkType, Trace};

fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_THREAD_CPUTIME_ID is always available on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn measure(name: &str, n: usize, mut f: impl FnMut() -> u64) {
    const REPS: usize = 200;
    let mut best = u64::MAX;
    for _ in 0..5 {
        let t = cpu_ns();
        let mut acc = 0;
        for _ in 0..REPS {
            acc ^= f();
        }
        black_box(acc);
        best = best.min(cpu_ns() - t);
    }
    println!(
        "{name:32} {:6.1} ns/packet",
        best as f64 / (n * REPS) as f64
    );
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        flowbundle_testsupport::data_root()
            .join("reassembly/example.pcap")
            .display()
            .to_string()
    });
    let t = match Trace::load(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("decode_cost: cannot load {path}: {e}");
            return;
        }
    };
    let n = t.len();
    let opts = DecodeOptions::default();
    let h = FlowHasher::new(1);
    let mut ports = FragmentPorts::new(4096, 30_000_000_000);
    println!("{path}: {n} packets (thread CPU time, best of 5 × 200 passes)");
    measure("read (iterate the trace)", n, || {
        t.iter().map(|r| r.data.len() as u64).sum()
    });
    measure("read + decode", n, || {
        t.iter()
            .map(|r| black_box(&decode(&r, &opts)).payload.len() as u64)
            .sum()
    });
    measure("read + decode + key", n, || {
        let mut a = 0u64;
        for r in t.iter() {
            let d = decode(&r, &opts);
            if let Some((k, _)) = FlowKey::from_decoded_with(&d, &mut ports, r.ts_ns) {
                a ^= u64::from(black_box(&k).lo_port);
            }
        }
        a
    });
    measure("read + decode + key + 3 hashes", n, || {
        let mut a = 0u64;
        for r in t.iter() {
            let d = decode(&r, &opts);
            if let Some((k, _)) = FlowKey::from_decoded_with(&d, &mut ports, r.ts_ns) {
                let x = h.hashes(&k);
                a ^= u64::from(x.conn ^ x.rss ^ u32::from(x.fid));
            }
        }
        a
    });
    measure("read + etherparse (reference)", n, || {
        t.iter()
            .filter(|r| r.link_type == LinkType::ETHERNET)
            .map(|r| match etherparse::SlicedPacket::from_ethernet(r.data) {
                Ok(p) => u64::from(black_box(&p).transport.is_some()),
                Err(_) => 0,
            })
            .sum()
    });
}
