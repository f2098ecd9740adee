//! Read + decode + flow key + hashes per packet over a big preloaded real trace (the goal: reading
//! plus decoding within 100 ns per packet). Criterion reports packets/s (elements); ns/packet is its time per
//! iteration divided by the trace's packets, printed once at the start.
//!
//! The trace: every capture of `shared/data/ndpi/pcap` and `shared/data/reassembly`, in name order, appended
//! into one in-memory [`Trace`] with [`TraceBuilder`] (about 100,000 packets of many link types, protocols and
//! sizes: real traffic, not one protocol's best case). Timestamps are left as captured: nothing here reads them.
//!
//! Groups (each over the whole trace per iteration):
//! * `iter`: walking the preloaded trace and touching each record (the read part on a preloaded trace);
//! * `read+decode`: plus [`decode`] (default options);
//! * `read+decode+key+hashes`: plus the canonical [`FlowKey`] (fragment ports included) and the three scheduler
//!   hashes [`FlowHasher::hashes`]: what the bench harness' loader does per packet;
//! * `stream+decode+key+hashes`: the same through the streaming [`CaptureReader`] over the Ethernet packets
//!   written as one in-memory pcap (parsing record headers and copying through the reader's buffer);
//! * `trace stats push`: everything [`Collector::push`] does (the `trace stats` command's per-packet cost).
//!
//! Run: `CARGO_TARGET_DIR=... cargo bench -p flowbundle-trace --bench read_decode_hash`.

use std::hint::black_box;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flowbundle_decode::{DecodeOptions, FlowHasher, FlowKey, FragmentPorts, decode};
use flowbundle_ingest::{CaptureReader, LinkType, PcapWriter, Trace, TraceBuilder, WriterOptions};
use flowbundle_trace::stats::{Collector, StatsConfig};

fn captures(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| {
        p.extension()
            .is_some_and(|x| x == "pcap" || x == "pcapng" || x == "cap")
    });
    v.sort();
    v
}

/// All shared captures merged into one trace, or `None` when the data is absent.
fn merged() -> Option<Trace> {
    let d = flowbundle_testsupport::data_root();
    let files: Vec<PathBuf> = captures(&d.join("ndpi/pcap"))
        .into_iter()
        .chain(captures(&d.join("reassembly")))
        .collect();
    if files.is_empty() {
        eprintln!(
            "read_decode_hash: skipped, no captures under {}",
            d.display()
        );
        return None;
    }
    let mut b = TraceBuilder::with_capacity(150_000, 64 << 20);
    for f in &files {
        let Ok((t, _)) = Trace::load_partial(f) else {
            continue;
        };
        for rec in t.iter() {
            b.push_record(&rec);
        }
    }
    Some(b.build())
}

/// The Ethernet packets of `t` as one in-memory pcap.
fn ethernet_pcap(t: &Trace) -> (Vec<u8>, u64) {
    let mut w = match PcapWriter::new(Vec::new(), WriterOptions::new(LinkType::ETHERNET)) {
        Ok(w) => w,
        Err(e) => panic!("pcap writer: {e}"),
    };
    for rec in t.iter().filter(|r| r.link_type == LinkType::ETHERNET) {
        if let Err(e) = w.write(&rec) {
            panic!("pcap writer: {e}");
        }
    }
    let n = w.packets();
    match w.finish() {
        Ok(v) => (v, n),
        Err(e) => panic!("pcap writer: {e}"),
    }
}

fn bench(c: &mut Criterion) {
    let Some(t) = merged() else { return };
    let n = t.len() as u64;
    eprintln!(
        "read_decode_hash: {n} packets, {} bytes preloaded ({:.1} bytes/packet); ns/packet = time / {n}",
        t.bytes(),
        t.bytes() as f64 / n as f64
    );
    let opts = DecodeOptions::default();
    let hasher = FlowHasher::new(1);
    let mut g = c.benchmark_group("read_decode_hash");
    g.throughput(Throughput::Elements(n));

    g.bench_function("iter", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for rec in t.iter() {
                acc += black_box(&rec).data.len();
            }
            black_box(acc)
        })
    });

    g.bench_function("read+decode", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for rec in t.iter() {
                let d = decode(&rec, &opts);
                acc += black_box(&d).payload.len();
            }
            black_box(acc)
        })
    });

    let mut ports = FragmentPorts::new(4096, 30_000_000_000);
    g.bench_function("read+decode+key+hashes", |b| {
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

    let (pcap, eth) = ethernet_pcap(&t);
    g.throughput(Throughput::Elements(eth));
    eprintln!(
        "read_decode_hash: streaming over {eth} Ethernet packets ({} bytes of pcap)",
        pcap.len()
    );
    g.bench_function("stream+decode+key+hashes", |b| {
        b.iter_batched(
            || Cursor::new(pcap.clone()),
            |src| {
                let Ok(mut r) = CaptureReader::new(src) else {
                    return 0;
                };
                let mut ports = FragmentPorts::new(4096, 30_000_000_000);
                let mut acc = 0u32;
                while let Ok(Some(rec)) = r.next_packet() {
                    let d = decode(&rec, &opts);
                    if let Some((k, _)) = FlowKey::from_decoded_with(&d, &mut ports, rec.ts_ns) {
                        let h = hasher.hashes(&k);
                        acc ^= h.conn ^ h.rss ^ u32::from(h.fid);
                    }
                }
                black_box(acc)
            },
            criterion::BatchSize::LargeInput,
        )
    });

    g.throughput(Throughput::Elements(n));
    g.bench_function("trace stats push", |b| {
        b.iter_batched(
            || Collector::new(StatsConfig::default()),
            |mut col| {
                for rec in t.iter() {
                    col.push(&rec);
                }
                black_box(col.packets())
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
