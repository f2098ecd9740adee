//! The single-threaded inspection loop of `flowbundle inspect` without output, timed: what `scripts/bench-ndpi`
//! compares with `ndpiReader`.
//!
//! ```text
//! cargo run --release -p flowbundle-inspect --example inspect_serial -- [--reps N] [--signatures DIR] FILE...
//! ```
//!
//! Each repetition builds a fresh engine (no rules, no signatures unless asked) and streams the files through
//! [`Engine::process_serial`] exactly as the CLI's default path does (reader → defragmentation → engine, events
//! taken every 1,024 and dropped, as `flowbundle inspect` without `-o` drops them), then finishes (every flow ended).
//! The time covers reading, decoding, inspection and finishing, like `ndpiReader`'s own figure covers its reading.
//! Printed: one `rep N: ...` line per repetition and a final `inspect_serial: packets=... bytes=... min_s=...
//! median_s=...` line the script parses. Building the whole `flowbundle` binary in release drags every lab crate
//! along; this example builds only the engine, and runs the same engine code.

use std::path::PathBuf;
use std::time::Instant;

use flowbundle_ingest::CaptureReader;
use flowbundle_inspect::signatures::{Options as SigOptions, SignatureSet};
use flowbundle_inspect::{Engine, EngineConfig, Prestage};

fn main() {
    let mut reps = 1usize;
    let mut sigdir: Option<PathBuf> = None;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--reps" => reps = args.next().and_then(|v| v.parse().ok()).unwrap_or(1).max(1),
            "--signatures" => sigdir = args.next().map(PathBuf::from),
            _ => files.push(PathBuf::from(a)),
        }
    }
    if files.is_empty() {
        eprintln!("usage: inspect_serial [--reps N] [--signatures DIR] FILE...");
        std::process::exit(2);
    }
    let mut times = Vec::with_capacity(reps);
    let (mut packets, mut bytes, mut flows) = (0u64, 0u64, 0u64);
    for rep in 0..reps {
        let signatures = sigdir.as_ref().map(|d| {
            SignatureSet::load_dir(d, &SigOptions::default())
                .map(|(s, _)| s)
                .unwrap_or_else(|e| {
                    eprintln!("signatures: {e}");
                    std::process::exit(2)
                })
        });
        let start = Instant::now();
        let mut engine = Engine::new(EngineConfig::default(), signatures, None);
        let mut pre = Prestage::new(engine.config());
        let mut ctx = engine.new_ctx();
        let mut events = Vec::new();
        let mut num = 0u64;
        for path in &files {
            let Ok(mut reader) = CaptureReader::open(path) else {
                eprintln!("{}: cannot open", path.display());
                continue;
            };
            while let Ok(Some(rec)) = reader.next_packet() {
                engine.process_serial(&mut ctx, &mut pre, num, &rec);
                num += 1;
                if ctx.pending_events() >= 1024 {
                    ctx.take_events(&mut events);
                    events.clear();
                }
            }
        }
        let fin = engine.finish([ctx]);
        let secs = start.elapsed().as_secs_f64();
        packets = num;
        bytes = fin.stats.bytes;
        flows = fin.stats.flows_created;
        println!(
            "rep {rep}: {secs:.3} s, {num} packets, {flows} flows, {:.3} Mpps",
            num as f64 / secs / 1e6
        );
        times.push(secs);
    }
    times.sort_by(f64::total_cmp);
    let min = times[0];
    let median = times[times.len() / 2];
    println!(
        "inspect_serial: packets={packets} bytes={bytes} flows={flows} min_s={min:.4} median_s={median:.4}"
    );
}
