//! Decode cost per packet on a preloaded real trace (ns/packet = time / packets; criterion reports
//! elements/s).
//!
//! * `decode`: [`flowbundle_decode::decode`] alone;
//! * `decode+key+hashes`: what the bench harness does per packet while preloading: decode, canonical flow key with
//!   fragment ports, and the three scheduler hashes (`conn`, `rss`, `fid`);
//! * `etherparse` (reference, same run): the `etherparse` crate's zero-copy `SlicedPacket::from_ethernet`, a
//!   widely used Rust decoder, over the same packets, so the result reads as a ratio;
//! * `hash/*`: each hash alone on the trace's flow keys.
//!
//! Run: `CARGO_TARGET_DIR=... cargo bench -p flowbundle-decode --bench decode`. The trace is
//! `shared/data/reassembly/example.pcap` (4,631 Ethernet packets, 136 flows), or the file named by
//! `FLOWBUNDLE_BENCH_TRACE`.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flowbundle_decode::{DecodeOptions, FlowHasher, FlowKey, FragmentPorts, decode};
use flowbundle_ingest::{LinkType, Trace};

fn trace() -> Option<Trace> {
    let path = match std::env::var_os("FLOWBUNDLE_BENCH_TRACE") {
        Some(p) => PathBuf::from(p),
        None => flowbundle_testsupport::data("reassembly/example.pcap")?,
    };
    match Trace::load(&path) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("decode bench: skipped, cannot load {}: {e}", path.display());
            None
        }
    }
}

fn bench(c: &mut Criterion) {
    let Some(t) = trace() else { return };
    let n = t.len() as u64;
    let opts = DecodeOptions::default();
    let hasher = FlowHasher::new(1);
    let mut g = c.benchmark_group("per_trace");
    g.throughput(Throughput::Elements(n));

    g.bench_function("decode", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for rec in t.iter() {
                // black_box the whole view: otherwise the fields nobody reads would be optimised away.
                let d = decode(&rec, &opts);
                acc += black_box(&d).payload.len();
            }
            black_box(acc)
        })
    });

    let mut ports = FragmentPorts::new(4096, 30_000_000_000);
    g.bench_function("decode+key+hashes", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for rec in t.iter() {
                let d = decode(&rec, &opts);
                if let Some((k, _)) = FlowKey::from_decoded_with(&d, &mut ports, rec.ts_ns) {
                    let h = hasher.hashes(&k);
                    acc ^= h.conn ^ h.rss ^ u32::from(h.fid);
                }
            }
            black_box(acc)
        })
    });

    g.bench_function("etherparse (reference)", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for rec in t.iter() {
                if rec.link_type == LinkType::ETHERNET
                    && let Ok(p) = etherparse::SlicedPacket::from_ethernet(rec.data)
                {
                    acc += p.transport.is_some() as usize;
                }
            }
            black_box(acc)
        })
    });

    let keys: Vec<FlowKey> = t
        .iter()
        .filter_map(|r| FlowKey::from_decoded(&decode(&r, &opts)).map(|(k, _)| k))
        .collect();
    g.throughput(Throughput::Elements(keys.len() as u64));
    g.bench_function("hash/conn (foldhash)", |b| {
        b.iter(|| {
            keys.iter()
                .fold(0u32, |a, k| a ^ hasher.conn_hasher().hash32(black_box(k)))
        })
    });
    g.bench_function("hash/fid (crc16)", |b| {
        b.iter(|| {
            keys.iter()
                .fold(0u16, |a, k| a ^ black_box(k).fid().crc16())
        })
    });
    g.bench_function("hash/all three", |b| {
        b.iter(|| {
            keys.iter().fold(0u32, |a, k| {
                // Use all three fields, or the unused hashes would be optimised away.
                let h = hasher.hashes(black_box(k));
                a ^ h.conn ^ h.rss ^ u32::from(h.fid)
            })
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
