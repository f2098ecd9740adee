//! Reading speed: preloaded iteration (the bench harness's path) and streaming (inspect's path), in packets/s.
//!
//! The workload is every Ethernet packet of the nDPI test captures in `../shared/data/ndpi/pcap` (about 100 k
//! packets of real traffic, mixed sizes), merged into one trace; without the data it falls back to a synthetic trace
//! of 100 k packets of 64 to 1,514 bytes and says so. The streaming case reads that trace from memory, written as
//! nanosecond pcap (plain and gzip), so it measures parsing and copying into the reader's buffer, not the disk.
//!
//! Run: `cargo bench -p flowbundle-ingest --bench read`.

use std::hint::black_box;
use std::io::Cursor;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flowbundle_ingest::{CaptureReader, LinkType, PcapWriter, Trace, TraceBuilder, WriterOptions};

fn workload() -> Trace {
    let dir = flowbundle_testsupport::data_root().join("ndpi/pcap");
    let mut b = TraceBuilder::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        let mut ts = 1_600_000_000_000_000_000u64;
        for p in paths {
            let Ok(t) = Trace::load(&p) else { continue };
            for r in t.iter().filter(|r| r.link_type == LinkType::ETHERNET) {
                ts += 1_000;
                b.push(ts, r.link_type, r.data, r.orig_len);
            }
        }
    }
    if b.is_empty() {
        eprintln!("read bench: ../shared/data/ndpi/pcap is absent; using a synthetic trace");
        let mut frame = vec![0u8; 1514];
        for (i, byte) in frame.iter_mut().enumerate() {
            *byte = i as u8;
        }
        for i in 0..100_000u64 {
            let len = 64 + (i * 7919 % 1451) as usize;
            b.push(
                1_600_000_000_000_000_000 + i * 1_000,
                LinkType::ETHERNET,
                &frame[..len],
                len as u32,
            );
        }
    }
    b.build()
}

fn as_pcap(trace: &Trace, gzip: bool) -> Vec<u8> {
    let mut w =
        PcapWriter::new(Vec::new(), WriterOptions::new(LinkType::ETHERNET)).expect("header");
    for r in trace {
        w.write(&r).expect("write");
    }
    let plain = w.finish().expect("finish");
    if !gzip {
        return plain;
    }
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).expect("gzip");
    gz.finish().expect("gzip")
}

fn bench(c: &mut Criterion) {
    let trace = workload();
    let n = trace.len() as u64;
    eprintln!(
        "read bench: {} packets, {} captured bytes, {} bytes of index",
        n,
        trace.bytes(),
        trace.memory_bytes() as u64 - trace.bytes()
    );
    let mut g = c.benchmark_group("read");
    g.throughput(Throughput::Elements(n));

    g.bench_function("preloaded_iter", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for r in trace.iter() {
                acc = acc.wrapping_add(
                    r.ts_ns ^ u64::from(r.data.first().copied().unwrap_or(0)) ^ r.data.len() as u64,
                );
            }
            black_box(acc)
        })
    });

    g.bench_function("preloaded_get", |b| {
        b.iter(|| {
            let mut acc = 0u64;
            for i in 0..trace.len() {
                let r = trace.get(i);
                acc = acc.wrapping_add(
                    r.ts_ns ^ u64::from(r.data.first().copied().unwrap_or(0)) ^ r.data.len() as u64,
                );
            }
            black_box(acc)
        })
    });

    // Leaked so the readers can borrow it as `'static` without a copy per iteration.
    let plain: &'static [u8] = as_pcap(&trace, false).leak();
    // Reference for the streaming cases: copying the file's bytes once, which a reader from `Read` cannot avoid.
    g.bench_function("reference_memcpy", |b| {
        let mut dst = vec![0u8; plain.len()];
        b.iter(|| {
            dst.copy_from_slice(black_box(plain));
            black_box(dst[dst.len() / 2])
        })
    });
    g.bench_function("streaming_pcap", |b| {
        b.iter(|| {
            let mut reader = CaptureReader::new(Cursor::new(plain)).expect("reader");
            let mut acc = 0u64;
            while let Some(r) = reader.next_packet().expect("read") {
                acc = acc.wrapping_add(
                    r.ts_ns ^ u64::from(r.data.first().copied().unwrap_or(0)) ^ r.data.len() as u64,
                );
            }
            black_box(acc)
        })
    });

    let gz: &'static [u8] = as_pcap(&trace, true).leak();
    g.sample_size(10);
    g.bench_function("streaming_pcap_gz", |b| {
        b.iter(|| {
            let mut reader = CaptureReader::new(Cursor::new(gz)).expect("reader");
            let mut acc = 0u64;
            while let Some(r) = reader.next_packet().expect("read") {
                acc = acc.wrapping_add(r.ts_ns ^ r.data.len() as u64);
            }
            black_box(acc)
        })
    });

    g.bench_function("load_pcap", |b| {
        b.iter(|| black_box(Trace::from_vec(plain.to_vec()).expect("load").len()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
