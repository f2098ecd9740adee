//! `SignatureSet::feed` over real connections: the first 10 packets of every TCP/UDP connection in the nDPI
//! test captures, fed packet by packet until the verdict is final, against the literal l7-filter algorithm
//! (re-scan the whole buffer with every pattern after each packet, `reference::Reference`) on the same data in
//! the same run. Throughput counts the bytes the matchers examined.
//!
//! Run: `cargo bench -p flowbundle-signatures --bench feed` (needs ../shared/data; skips without it).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flowbundle_signatures::reference::Reference;
use flowbundle_signatures::{Options, SignatureSet, Verdict};
use std::hint::black_box;

fn corpus(max_packets: usize) -> Vec<Vec<Vec<u8>>> {
    let Some(dir) = flowbundle_testsupport::data("ndpi/pcap") else {
        return Vec::new();
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    paths.sort();
    let mut conns = Vec::new();
    for p in paths {
        for c in flowbundle_testcapture::connections(&p, max_packets) {
            if c.packets.iter().any(|p| !p.is_empty()) {
                conns.push(c.packets);
            }
        }
    }
    conns
}

fn examined(set: &SignatureSet, conns: &[Vec<Vec<u8>>]) -> u64 {
    conns
        .iter()
        .map(|packets| {
            let mut st = set.new_state();
            for p in packets {
                if set.feed(&mut st, p).is_final() {
                    break;
                }
            }
            st.bytes() as u64
        })
        .sum()
}

fn run_engine(set: &SignatureSet, conns: &[Vec<Vec<u8>>]) -> usize {
    let mut matched = 0;
    for packets in conns {
        let mut st = set.new_state();
        for p in packets {
            let v = set.feed(&mut st, black_box(p));
            if v.is_final() {
                matched += usize::from(v != Verdict::NoMatch);
                break;
            }
        }
    }
    matched
}

fn run_reference(reference: &Reference, conns: &[Vec<Vec<u8>>]) -> usize {
    let mut matched = 0;
    for packets in conns {
        let mut st = reference.new_conn();
        for p in packets {
            let v = reference.feed(&mut st, black_box(p));
            if v.is_final() {
                matched += usize::from(v != Verdict::NoMatch);
                break;
            }
        }
    }
    matched
}

fn bench(c: &mut Criterion) {
    let Some(l7) = flowbundle_testsupport::data("l7-protocols") else {
        return;
    };
    for (label, options) in [("protocols", Options::default()), ("all", Options::all())] {
        let (set, report) = SignatureSet::load_dir(&l7, &options).expect("load");
        eprintln!(
            "{label}: {}",
            report.to_string().lines().last().unwrap_or_default()
        );
        let conns = corpus(set.max_packets());
        // Connections that still had the engine looking after 1000 bytes: where re-scanning hurts most.
        let long: Vec<Vec<Vec<u8>>> = conns
            .iter()
            .filter(|c| examined(&set, std::slice::from_ref(c)) >= 1000)
            .cloned()
            .collect();
        let reference = Reference::new(&set).expect("reference");
        for (subset, conns) in [("all-connections", &conns), ("long-connections", &long)] {
            let bytes = examined(&set, conns);
            eprintln!(
                "{label}/{subset}: {} connections, {bytes} bytes examined",
                conns.len()
            );
            let mut group = c.benchmark_group(format!("signatures/{label}/{subset}"));
            group.throughput(Throughput::Bytes(bytes));
            group.sample_size(10);
            group.bench_function("feed", |b| b.iter(|| run_engine(&set, conns)));
            group.bench_function("l7-filter-rescan", |b| {
                b.iter(|| run_reference(&reference, conns))
            });
            group.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
