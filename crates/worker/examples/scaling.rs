//! Raw throughput of each policy at 1..N workers on a merged real trace, with the synthetic or null workload: the
//! runtime's own scaling, before the bench harness (`flowbundle bench`) and the engine exist.
//!
//! ```text
//! cargo run --release -p flowbundle-worker --example scaling -- \
//!     [--captures 120] [--packets 100000] [--threads 1,2] [--policies dh,ph,lfb,...] \
//!     [--workload synthetic|null] [--base-ns 3000] [--per-byte-ns 2] [--lines 4] [--reps 5]
//! ```
//!
//! Prints one row per policy and thread count: median packets/s over the repetitions, speedup over 1 worker, the
//! workers' idle share, parks, raw-mode full waits and policy migrations.

use flowbundle_scheduler::{ALL, SchedOptions, build};
use flowbundle_worker::{Cost, Null, RunConfig, RunReport, Synthetic, run, spin_rate};

struct Args {
    captures: usize,
    packets: usize,
    threads: Vec<usize>,
    policies: Vec<String>,
    workload: String,
    base_ns: f64,
    per_byte_ns: f64,
    lines: usize,
    reps: usize,
}

fn parse() -> Args {
    let mut a = Args {
        captures: 120,
        packets: 100_000,
        threads: vec![1, 2],
        policies: ALL.iter().map(|s| s.to_string()).collect(),
        workload: "synthetic".into(),
        base_ns: 3000.0,
        per_byte_ns: 2.0,
        lines: 4,
        reps: 5,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let (k, v) = (
            pair[0].as_str(),
            pair.get(1).map(String::as_str).unwrap_or(""),
        );
        match k {
            "--captures" => a.captures = v.parse().expect("--captures N"),
            "--packets" => a.packets = v.parse().expect("--packets N"),
            "--threads" => {
                a.threads = v
                    .split(',')
                    .map(|t| t.parse().expect("--threads 1,2"))
                    .collect()
            }
            "--policies" => a.policies = v.split(',').map(String::from).collect(),
            "--workload" => a.workload = v.into(),
            "--base-ns" => a.base_ns = v.parse().expect("--base-ns X"),
            "--per-byte-ns" => a.per_byte_ns = v.parse().expect("--per-byte-ns X"),
            "--lines" => a.lines = v.parse().expect("--lines N"),
            "--reps" => a.reps = v.parse().expect("--reps N"),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn main() {
    let a = parse();
    let files = flowbundle_testsupport::captures("ndpi/pcap", a.captures);
    let descs = flowbundle_decode::prestage::load_descs(&files, a.packets).unwrap_or_default();
    if descs.is_empty() {
        eprintln!("no captures under ../shared/data/ndpi/pcap");
        return;
    }
    let flows: std::collections::HashSet<u32> = descs.iter().map(|d| d.conn).collect();
    println!(
        "trace: {} packets, {} connections, from {} nDPI captures; workload {} (base {} ns + {} ns/B, {} state lines); \
         spin rate {:.3} iters/ns; {} cores",
        descs.len(),
        flows.len(),
        files.len(),
        a.workload,
        a.base_ns,
        a.per_byte_ns,
        a.lines,
        spin_rate(),
        core_count()
    );
    let synthetic = Synthetic::new(
        Cost::Model {
            base_ns: a.base_ns,
            per_byte_ns: a.per_byte_ns,
        },
        a.lines,
    );
    println!(
        "| policy | threads | Mpps (median of {}) | speedup | idle % | parks | full waits | migrations | pinning |",
        a.reps
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for name in &a.policies {
        let mut base = None;
        for &t in &a.threads {
            let mut runs: Vec<(f64, String)> = (0..a.reps)
                .map(|_| {
                    let sched = build(name, t, &SchedOptions::default()).expect("policy");
                    let cfg = RunConfig {
                        records: false,
                        ..RunConfig::default()
                    };
                    if a.workload == "null" {
                        summarize(&run(sched.as_ref(), &Null, &descs, &cfg).expect("run"))
                    } else {
                        summarize(&run(sched.as_ref(), &synthetic, &descs, &cfg).expect("run"))
                    }
                })
                .collect();
            runs.sort_by(|x, y| x.0.total_cmp(&y.0));
            let (pps, row) = runs.swap_remove(runs.len() / 2);
            let speedup = pps / *base.get_or_insert(pps);
            println!("| {name} | {t} | {:.3} | {speedup:.2} | {row}", pps / 1e6);
        }
    }
}

fn summarize<L>(r: &RunReport<L>) -> (f64, String) {
    assert_eq!(r.lost, 0);
    let idle: u64 = r.workers.iter().map(|w| w.idle_ns).sum();
    let total = r.elapsed_ns.max(1) * r.workers.len() as u64;
    let parks: u64 = r.workers.iter().map(|w| w.parks).sum();
    let pin = match &r.pinning {
        flowbundle_worker::Pinning::Pinned { .. } => "pinned".to_string(),
        flowbundle_worker::Pinning::Floating(why) => format!("floating ({why})"),
    };
    (
        r.pps(),
        format!(
            "{:.1} | {parks} | {} | {} | {pin} |",
            100.0 * idle as f64 / total as f64,
            r.dispatcher.full_waits,
            r.sched.migrations
        ),
    )
}

fn core_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
