//! Stream matching throughput on real payload bytes: the TCP streams of `reassembly/example.pcap` (and the other
//! PcapPlusPlus captures), fed direction by direction in the segments the capture carried, as reassembly hands
//! them over. Compared: no rules (the cost of the calls and per-flow state alone), the 10,000-pattern
//! `content-10k.hex` set, the Snort 3 community rules, and aho-corasick's overlapping search over the same bytes
//! with the same 10,000 patterns (the reference the prefilter was designed against).
//!
//! `cargo bench -p flowbundle-rules --bench scan`. Test material is read from `../shared/data` (or
//! `$FLOWBUNDLE_DATA`); without it the bench prints a message and measures nothing.
//!
//! Time is the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time: the development machines
//! are shared, and CPU time is what a worker core spends. Set `FLOWBUNDLE_BENCH_WALL=1` for wall time.

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, Throughput};
use flowbundle_rules::{Alert, Direction, FlowMatchState, PacketCtx, RuleSet, Vars};

/// CPU time of the calling thread.
struct CpuTime;

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

impl Measurement for CpuTime {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        thread_cpu()
    }
    fn end(&self, i: Duration) -> Duration {
        thread_cpu().saturating_sub(i)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}

struct Stream {
    ctx: PacketCtx<'static>,
    parts: common::Parts,
}

fn streams() -> Vec<Stream> {
    let mut out = Vec::new();
    for cap in [
        "reassembly/example.pcap",
        "reassembly/example2.pcap",
        "reassembly/650HttpResponses.pcap",
    ] {
        let path = flowbundle_testsupport::data_root().join(cap);
        if !path.exists() {
            continue;
        }
        for ((src, sport, dst, dport), parts) in
            common::tcp_directions(&flowbundle_testcapture::segments(&path))
        {
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

fn bench<M: Measurement>(c: &mut Criterion<M>) {
    let streams = streams();
    let hex = flowbundle_testsupport::data_root().join("rules/content-10k.hex");
    if streams.is_empty() || !hex.exists() {
        eprintln!(
            "skipping: test material under {} is absent",
            flowbundle_testsupport::data_root().display()
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
    let community = RuleSet::load_files(&[
        flowbundle_testsupport::data_root().join("rules/snort3-community.rules")
    ])
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
    let pats: Vec<Vec<u8>> = k10.first_contents().into_iter().map(|p| p.0).collect();
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
    // The same comparison with aho-corasick's full DFA (`MatchKind::Standard`, its own prefilter on), and the
    // prefilter alone over the same whole streams: the matchers compared without rule evaluation.
    // (`AhoCorasickKind::DFA` is `aho_corasick::dfa::DFA` behind the common search API.)
    let dfa = aho_corasick::AhoCorasick::builder()
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .match_kind(aho_corasick::MatchKind::Standard)
        .prefilter(true)
        .build(&pats)
        .expect("dfa");
    eprintln!("aho-corasick DFA: {} bytes of tables", dfa.memory_usage());
    g.bench_function("aho-corasick-dfa-10k-reference", |b| {
        b.iter(|| {
            whole
                .iter()
                .map(|s| dfa.find_overlapping_iter(s).count())
                .sum::<usize>()
        })
    });
    let ps = flowbundle_rules::prefilter::PatternSet::new(
        &pats.iter().map(|p| (p.clone(), false)).collect::<Vec<_>>(),
    );
    g.bench_function("prefilter-only-10k", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for s in &whole {
                ps.scan_buffer(s, |_, _| n += 1);
            }
            black_box(n)
        })
    });
    g.finish();
}

fn cpu() -> Criterion<CpuTime> {
    Criterion::default().with_measurement(CpuTime)
}

fn main() {
    if std::env::var_os("FLOWBUNDLE_BENCH_WALL").is_some() {
        let mut c = Criterion::default().configure_from_args();
        bench(&mut c);
        c.final_summary();
    } else {
        let mut c = cpu().configure_from_args();
        bench(&mut c);
        c.final_summary();
    }
}
