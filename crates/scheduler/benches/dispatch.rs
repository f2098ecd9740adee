//! Each policy's scheduling cost in ns per packet, with no workload (the null-workload benchmark; goal:
//! `dispatch` ≤ 50 ns for `dh` and `lfb`).
//!
//! Input: a realistic hash mix, the first 200,000 packets of the nDPI captures merged in name order (thousands of
//! flows, real flow-size skew); a synthetic Zipf mix when the shared data is absent. One thread plays dispatcher and
//! workers:
//! * `dispatch/POLICY`: only the `dispatch` calls are timed, in batches of 512; the batch is then drained untimed
//!   (`next`/`done` round-robin over 4 workers), so queues stay short as in a keeping-up system;
//! * `roundtrip/POLICY`: `dispatch` + `next` + `done` for every packet, all timed: the whole scheduling cost a packet
//!   adds, split between dispatcher and workers in a real run.
//!
//! Run: `cargo bench -p flowbundle-scheduler --bench dispatch`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flowbundle_scheduler::check::SplitMix64;
use flowbundle_scheduler::{ALL, Desc, SchedOptions, Scheduler, build};
use std::hint::black_box;
use std::time::{Duration, Instant};

const WORKERS: usize = 4;
const BATCH: usize = 512;

fn trace() -> Vec<Desc> {
    let files = flowbundle_testsupport::captures("ndpi/pcap", usize::MAX);
    let t = flowbundle_decode::prestage::load_descs(&files, 200_000).unwrap_or_default();
    if t.len() >= 10_000 {
        eprintln!(
            "hash mix: {} packets from {} nDPI captures",
            t.len(),
            files.len()
        );
        return t;
    }
    eprintln!("shared captures absent: using a synthetic Zipf mix");
    let mut rng = SplitMix64(1);
    (0..200_000u32)
        .map(|id| {
            let k = (1.0 / (rng.below(1 << 20) as f64 / f64::from(1u32 << 20) + 1e-4)) as u32;
            let h = k.wrapping_mul(0x9e37_79b9);
            Desc {
                id,
                conn: h,
                rss: h.rotate_left(7),
                fid: (h >> 9) as u16,
                len: 64 + (k % 1400) as u16,
            }
        })
        .collect()
}

/// Take everything out of the policy, round-robin over the workers.
fn drain(s: &dyn Scheduler) {
    let mut idle = 0;
    let mut w = 0;
    while idle < WORKERS {
        match s.next(w) {
            Some(d) => {
                s.done(w, black_box(d));
                idle = 0;
            }
            None => idle += 1,
        }
        w = (w + 1) % WORKERS;
    }
}

/// Time `iters` packets through `f`, batch by batch, cycling over the trace.
fn batches(t: &[Desc], iters: u64, mut f: impl FnMut(&[Desc]) -> Duration) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0u64;
    let mut pos = 0usize;
    while done < iters {
        let n = (BATCH as u64).min(iters - done) as usize;
        if pos + n > t.len() {
            pos = 0;
        }
        total += f(&t[pos..pos + n]);
        pos += n;
        done += n as u64;
    }
    total
}

fn bench(c: &mut Criterion) {
    let t = trace();
    let opts = SchedOptions::default();
    let mut g = c.benchmark_group("dispatch");
    g.throughput(Throughput::Elements(1));
    // Reference measured in the same run: one push of a descriptor into a bounded lock-free queue, the least any
    // queueing dispatcher does. BENCHMARKS.md reports each policy as a ratio to it as well as in ns.
    let q = crossbeam::queue::ArrayQueue::<Desc>::new(BATCH);
    g.bench_function("reference-queue-push", |b| {
        b.iter_custom(|iters| {
            batches(&t, iters, |batch| {
                let start = Instant::now();
                for d in batch {
                    let _ = black_box(q.push(*d));
                }
                let e = start.elapsed();
                while q.pop().is_some() {}
                e
            })
        })
    });
    for name in ALL {
        let s = build(name, WORKERS, &opts).unwrap();
        g.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                batches(&t, iters, |batch| {
                    let start = Instant::now();
                    for d in batch {
                        let _ = black_box(s.dispatch(*d));
                    }
                    let e = start.elapsed();
                    drain(s.as_ref());
                    e
                })
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("roundtrip");
    g.throughput(Throughput::Elements(1));
    for name in ALL {
        let s = build(name, WORKERS, &opts).unwrap();
        g.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                batches(&t, iters, |batch| {
                    let start = Instant::now();
                    for d in batch {
                        let _ = black_box(s.dispatch(*d));
                    }
                    drain(s.as_ref());
                    start.elapsed()
                })
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
