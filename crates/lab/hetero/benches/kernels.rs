//! The three kernels on one core (a one-thread CPU pool), on 1,500-byte packets of real payload, 4,096 packets per
//! batch. References measured in the same run: a plain copy of the batch (memory bandwidth) and, for `dpi`, the
//! `aho-corasick` crate's overlapping search over the same 10k patterns (what the dense DFA is compared with).
//!
//! `cargo bench -p flowbundle-hetero --bench kernels`

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flowbundle_hetero::device::{CpuDevice, Device};
use flowbundle_hetero::profiler::make_batch;
use flowbundle_hetero::{BatchOutput, Dfa, DfaLimits, PacketApp, payload};

fn kernels(c: &mut Criterion) {
    let Some(hex) = flowbundle_testsupport::data("rules/content-10k.hex") else {
        return;
    };
    let payloads = payload::real_payloads(&flowbundle_testsupport::data_root(), 1500, 4096);
    if payloads.is_empty() {
        flowbundle_testsupport::missing_data(
            &flowbundle_testsupport::data_root().join(payload::CORPUS_DIRS[0]),
        );
        return;
    }
    let text = std::fs::read_to_string(&hex).expect("reading the 10k set");
    let (pats, _) = flowbundle_hetero::dfa::parse_hex_patterns(&text);
    let dfa = Arc::new(Dfa::build(&pats, DfaLimits::default()).expect("10k set builds"));
    let batch = make_batch(&payloads, 4096, 0);
    let bytes = batch.bytes() as u64;
    let mut dev = CpuDevice::new(1, dfa.clone()).expect("pool");
    let mut g = c.benchmark_group("one_core_1500B");
    g.throughput(Throughput::Bytes(bytes));
    g.sample_size(10);
    for app in PacketApp::ALL {
        let mut work = vec![batch.clone()];
        let mut out = vec![BatchOutput::default()];
        g.bench_function(app.name(), |b| {
            b.iter(|| {
                // AES encrypts in place: re-encrypting ciphertext costs the same, so no reset is needed.
                dev.run(app, &mut work, &mut out).expect("cpu run")
            })
        });
    }
    let ac = aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::Standard)
        .build(&pats)
        .expect("aho-corasick builds");
    g.bench_function("reference_aho_corasick_crate_overlapping", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for p in &payloads {
                n += ac.find_overlapping_iter(p.as_slice()).count();
            }
            n
        })
    });
    let mut dst = vec![0u8; batch.bytes()];
    g.bench_function("reference_memcpy", |b| {
        b.iter(|| dst.copy_from_slice(batch.data()))
    });
    g.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
