//! Stream matching throughput on real payload bytes: the TCP streams of `reassembly/example.pcap` (and the other
//! PcapPlusPlus captures), fed direction by direction in the segments the capture carried, as reassembly hands
//! them over. Compared: no rules (the cost of the calls and per-flow state alone), the 10,000-pattern
//! `content-10k.hex` set, the Snort 3 community rules, and aho-corasick's overlapping search over the same bytes
//! with the same 10,000 patterns (the reference the prefilter was designed against).
//!
//! `cargo bench -p flowbundle-rules --bench scan`. Test material is read from `../shared/data` (or
//! `$FLOWBUNDLE_DATA`); without it the bench prints a message and measures nothing.

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flowbundle_rules::{Alert, Direction, FlowMatchState, PacketCtx, RuleSet, Vars};

struct Stream {
    ctx: PacketCtx<'static>,
    parts: common::Parts,
}

fn data_dir() -> PathBuf {
    match std::env::var_os("FLOWBUNDLE_DATA") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")),
    }
}

fn streams() -> Vec<Stream> {
    let mut out = Vec::new();
    for cap in [
        "reassembly/example.pcap",
        "reassembly/example2.pcap",
        "reassembly/650HttpResponses.pcap",
    ] {
        let path = data_dir().join(cap);
        if !path.exists() {
            continue;
        }
        for ((src, sport, dst, dport), parts) in common::tcp_directions(&common::segments(&path)) {
            let dir = if dport < sport {
                Direction::ToServer
            } else {
                Direction::ToClient
            };
            let ctx = PacketCtx {
                dir,
                src,
                dst,
                src_port: sport,
                dst_port: dport,
                ..PacketCtx::default()
            };
            out.push(Stream { ctx, parts });
        }
    }
    out
}

/// Scans every stream as the engine would (one flow state per connection direction); returns the alert count.
fn scan_all(rules: &RuleSet, sc: &mut flowbundle_rules::Scanner, streams: &[Stream]) -> u64 {
    let mut alerts = 0u64;
    let mut sink = |_: &Alert<'_>| alerts += 1;
    for s in streams {
        let mut flow = FlowMatchState::default();
        for (off, p) in &s.parts {
            rules.scan_stream(sc, &mut flow, &s.ctx, p, *off, &mut sink);
        }
        rules.finish_flow(sc, &mut flow, &mut sink);
    }
    alerts
}

fn bench(c: &mut Criterion) {
    let streams = streams();
    let hex = data_dir().join("rules/content-10k.hex");
    if streams.is_empty() || !hex.exists() {
        eprintln!(
            "skipping: test material under {} is absent",
            data_dir().display()
        );
        return;
    }
    let bytes: u64 = streams
        .iter()
        .flat_map(|s| s.parts.iter())
        .map(|p| p.1.len() as u64)
        .sum();
    let (empty, _) = RuleSet::parse("", &Vars::new()).expect("empty set");
    let (k10, _) = RuleSet::from_content_hex(&hex).expect("content-10k");
    let community = RuleSet::load_files(&[data_dir().join("rules/snort3-community.rules")])
        .ok()
        .map(|r| r.0);
    let mut sets: Vec<(&str, &RuleSet)> = vec![("no-rules", &empty), ("content-10k", &k10)];
    if let Some(c) = &community {
        sets.push(("community", c));
    }
    for (name, rules) in &sets {
        let mut sc = rules.scanner();
        let n = scan_all(rules, &mut sc, &streams);
        eprintln!(
            "{name}: {} streams, {bytes} bytes, {n} alerts, {} prefilter hits, {} checks, {} B kept per flow direction",
            streams.len(),
            sc.stats().prefilter_hits,
            sc.stats().verify.checks,
            rules.stream_retain()
        );
    }
    let mut g = c.benchmark_group("stream_scan");
    g.throughput(Throughput::Bytes(bytes));
    for (name, rules) in &sets {
        let mut sc = rules.scanner();
        g.bench_function(*name, |b| {
            b.iter(|| black_box(scan_all(rules, &mut sc, &streams)))
        });
    }
    // Reference: aho-corasick overlapping search, whole streams, no per-flow state, no rule evaluation.
    let pats: Vec<Vec<u8>> = k10
        .rules()
        .iter()
        .filter_map(|r| match r.groups[0].items.first() {
            Some(flowbundle_rules::Item::Content(c)) => Some(c.bytes.clone()),
            _ => None,
        })
        .collect();
    let ac = aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::Standard)
        .build(&pats)
        .expect("automaton");
    let whole: Vec<Vec<u8>> = streams.iter().map(|s| common::assemble(&s.parts)).collect();
    g.bench_function("aho-corasick-10k-reference", |b| {
        b.iter(|| {
            whole
                .iter()
                .map(|s| ac.find_overlapping_iter(s).count())
                .sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
