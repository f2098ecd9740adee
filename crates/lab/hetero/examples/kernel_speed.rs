//! Per-core speed of the CPU kernels, in **thread CPU time** (not wall clock), so that a machine shared with other
//! work still gives the kernel's own cost: every measurement runs on one thread of a one-thread rayon pool and
//! reads `CLOCK_THREAD_CPUTIME_ID` around it. 1,500-byte packets of real payload (`../shared/data`), 4,096 per
//! batch, the 10k content set for `dpi`. Each figure is the median over `--reps` runs, in Gbit/s of payload,
//! beside a reference measured in the same run (a copy of the batch: memory bandwidth) and the ratio to it.
//!
//! Also measured, for comparison: the previous per-core paths (one DFA walk per packet, four interleaved walks,
//! sixteen walks, the prefiltered scan; `md-5` one packet at a time,
//! `cbc` one packet at a time) and the `aho-corasick` crate over the same patterns (contiguous NFA and full DFA,
//! prefilter on and off; overlapping search, which is what the `dpi` count needs).
//!
//! `cargo run --release -p flowbundle-hetero --example kernel_speed -- [--reps 15] [--packets 4096] [--size 1500]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use flowbundle_hetero::kernels::{self, BatchOutput, PacketApp};
use flowbundle_hetero::profiler::make_batch;
use flowbundle_hetero::{Dfa, DfaLimits, PacketBatch, payload};

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

struct Figure {
    name: String,
    cpu_gbps: f64,
    wall_gbps: f64,
}

fn measure(name: &str, bytes: usize, reps: usize, mut f: impl FnMut()) -> Figure {
    f(); // warm-up: caches, lazy tables, CPU feature detection
    let mut cpu = Vec::with_capacity(reps);
    let mut wall = Vec::with_capacity(reps);
    for _ in 0..reps {
        let (c0, w0) = (thread_cpu(), Instant::now());
        f();
        cpu.push(thread_cpu().saturating_sub(c0).as_secs_f64());
        wall.push(w0.elapsed().as_secs_f64());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2].max(1e-12)
    };
    let bits = bytes as f64 * 8.0;
    Figure {
        name: name.to_string(),
        cpu_gbps: bits / median(&mut cpu) / 1e9,
        wall_gbps: bits / median(&mut wall) / 1e9,
    }
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `n` packets of 40 to 1,500 bytes (a fixed pseudo-random mix of seven sizes) cut from `corpus` in order.
fn mixed_batch(corpus: &[u8], n: usize) -> PacketBatch {
    let mut b = PacketBatch::new(flowbundle_hetero::BatchLimits {
        max_packets: n.max(1),
        ..Default::default()
    });
    let (mut x, mut pos) = (12_345u64, 0usize);
    for i in 0..n as u64 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let len =
            [40usize, 100, 300, 576, 1000, 1448, 1500][(x >> 40) as usize % 7].min(corpus.len());
        if pos + len > corpus.len() {
            pos = 0;
        }
        let _ = b.push(i, &[0; 16], 0, i, &corpus[pos..pos + len]);
        pos += len;
    }
    b
}

fn main() {
    let reps = arg("--reps", 15).max(1);
    let packets = arg("--packets", 4096).max(1);
    let size = arg("--size", 1500).max(1);
    let Some(hex) = flowbundle_testsupport::data("rules/content-10k.hex") else {
        return;
    };
    let pats = match std::fs::read_to_string(&hex) {
        Ok(text) => flowbundle_hetero::dfa::parse_hex_patterns(&text).0,
        Err(e) => {
            eprintln!("kernel_speed: {}: {e}", hex.display());
            return;
        }
    };
    let root = flowbundle_testsupport::data_root();
    let corpus = payload::real_corpus(&root);
    let payloads = payload::cut_payloads(&corpus, size, packets);
    if payloads.is_empty() {
        eprintln!("skipping: no real payload");
        return;
    }
    let dfa = Arc::new(Dfa::build(&pats, DfaLimits::default()).expect("10k set builds"));
    let st = dfa.stats();
    // Whether the transition table got 2 MiB pages (dfa.rs asks for them with madvise).
    let huge = std::fs::read_to_string("/proc/self/smaps_rollup")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("AnonHugePages:"))
                .map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_string())
        })
        .unwrap_or_else(|| "?".into());
    let batch = make_batch(&payloads, packets, 0);
    let bytes = batch.bytes();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("one-thread pool");
    let figs: Vec<Figure> = pool.install(|| {
        let mut figs = Vec::new();
        let mut dst = vec![0u8; bytes];
        figs.push(measure(
            "reference: copy of the batch (memcpy)",
            bytes,
            reps,
            || {
                dst.copy_from_slice(batch.data());
                std::hint::black_box(&dst);
            },
        ));
        let mut out = BatchOutput::default();
        let mut work: PacketBatch = batch.clone();
        figs.push(measure(
            "dpi: 8 walks over class blocks (kernel)",
            bytes,
            reps,
            || {
                kernels::run_cpu(PacketApp::Dpi, &dfa, &mut work, &mut out);
            },
        ));
        let p = |i: usize| batch.payload(i).unwrap_or(&[]);
        let plain: Vec<_> = (0..batch.len()).map(|i| dfa.scan(p(i))).collect();
        assert_eq!(plain, out.dpi, "kernel disagrees with the plain walk");
        let pre: Vec<_> = (0..batch.len())
            .map(|i| dfa.scan_prefiltered(p(i)))
            .collect();
        assert_eq!(plain, pre, "prefiltered scan disagrees with the plain walk");
        figs.push(measure(
            "dpi: one walk per packet (scan)",
            bytes,
            reps,
            || {
                for i in 0..batch.len() {
                    std::hint::black_box(dfa.scan(p(i)));
                }
            },
        ));
        figs.push(measure(
            "dpi: 4 interleaved walks (scan4)",
            bytes,
            reps,
            || {
                for i in (0..batch.len()).step_by(4) {
                    std::hint::black_box(dfa.scan4(std::array::from_fn(|k| p(i + k))));
                }
            },
        ));
        figs.push(measure(
            "dpi: 8 walks over class blocks, batch order",
            bytes,
            reps,
            || {
                for i in (0..batch.len()).step_by(8) {
                    std::hint::black_box(dfa.scan_lanes::<8>(std::array::from_fn(|k| p(i + k))));
                }
            },
        ));
        // Mixed sizes (40 to 1,500 bytes, a fixed pseudo-random sequence, payload cut from the same corpus): the
        // kernel groups packets by length, the batch-order walk does not. Figures in Gbit/s of these bytes.
        let mixed = mixed_batch(&corpus, packets);
        let mixed_bytes = mixed.bytes();
        let mut mixed_work = mixed.clone();
        figs.push(measure(
            "dpi, mixed sizes: kernel (grouped by length)",
            mixed_bytes,
            reps,
            || {
                kernels::run_cpu(PacketApp::Dpi, &dfa, &mut mixed_work, &mut out);
            },
        ));
        let mp = |i: usize| mixed.payload(i).unwrap_or(&[]);
        figs.push(measure(
            "dpi, mixed sizes: 8 walks, batch order",
            mixed_bytes,
            reps,
            || {
                for i in (0..mixed.len()).step_by(8) {
                    std::hint::black_box(dfa.scan_lanes::<8>(std::array::from_fn(|k| mp(i + k))));
                }
            },
        ));
        figs.push(measure(
            "dpi: 16 walks over class blocks (scan_lanes)",
            bytes,
            reps,
            || {
                for i in (0..batch.len()).step_by(16) {
                    std::hint::black_box(dfa.scan_lanes::<16>(std::array::from_fn(|k| p(i + k))));
                }
            },
        ));
        figs.push(measure(
            "dpi: prefiltered DFA (scan_prefiltered)",
            bytes,
            reps,
            || {
                for i in 0..batch.len() {
                    std::hint::black_box(dfa.scan_prefiltered(p(i)));
                }
            },
        ));
        figs.push(measure(
            "md5: 16-lane multi-buffer (kernel)",
            bytes,
            reps,
            || {
                kernels::run_cpu(PacketApp::Md5, &dfa, &mut work, &mut out);
            },
        ));
        figs.push(measure(
            "md5: md-5 crate, one packet at a time (before)",
            bytes,
            reps,
            || {
                for i in 0..batch.len() {
                    std::hint::black_box(kernels::md5_packet(batch.payload(i).unwrap_or(&[])));
                }
            },
        ));
        figs.push(measure(
            "aes: 8 interleaved CBC chains (kernel)",
            bytes,
            reps,
            || {
                kernels::run_cpu(PacketApp::Aes, &dfa, &mut work, &mut out);
            },
        ));
        let keys = work.keys().to_vec();
        let conns = work.conns().to_vec();
        let seqs = work.seqs().to_vec();
        figs.push(measure(
            "aes: cbc crate, one packet at a time (before)",
            bytes,
            reps,
            || {
                for (i, p) in work.payloads_mut().into_iter().enumerate() {
                    let key = keys[conns[i] as usize];
                    kernels::aes_encrypt_packet(&key, seqs[i], p);
                }
            },
        ));
        let refs: Vec<&[u8]> = payloads.iter().map(|p| p.as_slice()).collect();
        for (label, kind, prefilter) in [
            (
                "aho-corasick crate: contiguous NFA, prefilter on",
                AhoCorasickKind::ContiguousNFA,
                true,
            ),
            (
                "aho-corasick crate: DFA, prefilter on",
                AhoCorasickKind::DFA,
                true,
            ),
            (
                "aho-corasick crate: DFA, prefilter off",
                AhoCorasickKind::DFA,
                false,
            ),
        ] {
            let ac = AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .kind(Some(kind))
                .prefilter(prefilter)
                .build(&pats)
                .expect("aho-corasick builds");
            figs.push(measure(label, bytes, reps, || {
                let mut n = 0usize;
                for p in &refs {
                    n += ac.find_overlapping_iter(*p).count();
                }
                std::hint::black_box(n);
            }));
        }
        figs
    });
    println!(
        "one core, thread CPU time; {packets} packets of {size} bytes of real payload ({:.1} MB), median of {reps}; \
         10k set: {} states, stride {}, table {} MB, prefilter {}; anonymous huge pages: {huge} kB",
        bytes as f64 / 1e6,
        st.states,
        st.stride,
        st.table_bytes / 1_000_000,
        st.prefilter
    );
    let reference = figs.first().map_or(1.0, |f| f.cpu_gbps);
    println!(
        "{:<52} {:>12} {:>12} {:>14}",
        "kernel", "Gbit/s cpu", "Gbit/s wall", "× memcpy (cpu)"
    );
    for f in &figs {
        println!(
            "{:<52} {:>12.2} {:>12.2} {:>14.4}",
            f.name,
            f.cpu_gbps,
            f.wall_gbps,
            f.cpu_gbps / reference
        );
    }
}
