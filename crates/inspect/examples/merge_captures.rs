//! Builds one large trace from many captures, for throughput comparisons (`scripts/bench-ndpi`).
//!
//! ```text
//! cargo run --release -p flowbundle-inspect --example merge_captures -- OUT.pcap [--copies K] INPUT...
//! ```
//!
//! Every input is loaded, every packet reduced to its IP datagram (raw-IP link type, so captures of different link
//! types merge into one file; packets without IP are left out), and `K` copies of the whole set are interleaved by
//! time: each copy of each input starts at the same base time plus a small per-copy offset (timestamps rebased, as
//! traffic aggregation does; packets out of order in an input keep their place, gaps over a day shrink to a second), and each copy gets its own address space (its IPv4 addresses, and the low 32 bits of
//! its IPv6 addresses, XORed with a value derived from the input and the copy; IPv4 header checksums recomputed),
//! so flows of different copies or inputs never share a 5-tuple. Inner addresses of tunnels are left as they are.
//! The trace tools' `flowbundle trace merge` does the same job in general; this is the small, fixed version the
//! benchmark script needs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;

use flowbundle_decode::{DecodeOptions, decode};
use flowbundle_ingest::{LinkType, PcapPrecision, PcapWriter, Trace, WriterOptions};

struct Input {
    /// IP datagrams and their capture times relative to the input's first packet (non-decreasing).
    packets: Vec<(u64, Vec<u8>)>,
}

fn load(path: &PathBuf) -> Option<Input> {
    let (trace, _) = Trace::load_partial(path).ok()?;
    let opts = DecodeOptions::default();
    let mut packets = Vec::new();
    for rec in trace.iter() {
        let d = decode(&rec, &opts);
        if d.ip.is_none() {
            continue;
        }
        let ip = rec.data.get(d.l3_offset as usize..).unwrap_or(&[]);
        if ip.len() >= 20 {
            packets.push((rec.ts_ns, ip.to_vec()));
        }
    }
    // Times relative to the input's first packet. A few captures hold packets decades apart (bogus clocks); a gap
    // over a day is shrunk to one second, so every copy stays within the pcap format's 32-bit seconds and the merge
    // interleaves real traffic instead of parking those packets at the far end.
    const DAY: u64 = 86_400_000_000_000;
    let first = packets.first()?.0;
    let mut prev = first;
    let mut rel = 0u64;
    for p in &mut packets {
        let gap = p.0.saturating_sub(prev);
        prev = p.0;
        rel += if gap > DAY { 1_000_000_000 } else { gap };
        p.0 = rel;
    }
    Some(Input { packets })
}

/// Moves a datagram into the address space of `salt`.
fn remap(ip: &mut [u8], salt: u32) {
    let s = salt.to_be_bytes();
    match ip[0] >> 4 {
        4 if ip.len() >= 20 => {
            for i in 0..4 {
                ip[12 + i] ^= s[i];
                ip[16 + i] ^= s[i];
            }
            if let Ok(mut p) = flowbundle_decode::wire::ipv4::Packet::new_checked(&mut ip[..]) {
                p.fill_checksum();
            }
        }
        6 if ip.len() >= 40 => {
            for i in 0..4 {
                ip[20 + i] ^= s[i];
                ip[36 + i] ^= s[i];
            }
        }
        _ => {}
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: merge_captures OUT.pcap [--copies K] INPUT...");
        std::process::exit(2);
    };
    let mut copies = 1usize;
    let mut inputs = Vec::new();
    while let Some(a) = args.next() {
        if a == "--copies" {
            copies = args.next().and_then(|v| v.parse().ok()).unwrap_or(1).max(1);
        } else {
            inputs.push(PathBuf::from(a));
        }
    }
    let loaded: Vec<Input> = inputs.iter().filter_map(load).collect();
    eprintln!(
        "{} of {} inputs loaded, {} IP packets each copy, {copies} copies",
        loaded.len(),
        inputs.len(),
        loaded.iter().map(|i| i.packets.len()).sum::<usize>()
    );
    // Streams: (input, copy); heap of (next timestamp, stream, position).
    const BASE: u64 = 1_700_000_000_000_000_000;
    let mut heap = BinaryHeap::new();
    let offset = |copy: usize| copy as u64 * 7_300_000; // 7.3 ms between copies
    for (i, inp) in loaded.iter().enumerate() {
        for c in 0..copies {
            if let Some(p) = inp.packets.first() {
                heap.push(Reverse((BASE + p.0 + offset(c), i, c, 0usize)));
            }
        }
    }
    let opts = WriterOptions::new(LinkType::RAW).precision(PcapPrecision::Micro);
    let mut w = PcapWriter::create(&out, opts).expect("create output");
    let mut n = 0u64;
    let mut last = 0u64;
    let mut buf = Vec::new();
    while let Some(Reverse((ts, i, c, pos))) = heap.pop() {
        let inp = &loaded[i];
        let (_, data) = &inp.packets[pos];
        buf.clear();
        buf.extend_from_slice(data);
        let salt = (i as u32 + 1).wrapping_mul(0x9e37_79b1) ^ (c as u32).wrapping_mul(0x85eb_ca6b);
        remap(&mut buf, salt);
        // Keep the file's timestamps non-decreasing (inputs are not always sorted).
        let ts = ts.max(last);
        last = ts;
        w.write_packet(ts, &buf, buf.len() as u32)
            .expect("write packet");
        n += 1;
        if let Some(next) = inp.packets.get(pos + 1) {
            let t = BASE + next.0 + offset(c);
            heap.push(Reverse((t, i, c, pos + 1)));
        }
    }
    w.close().expect("close output");
    eprintln!("{n} packets written to {out}");
}
