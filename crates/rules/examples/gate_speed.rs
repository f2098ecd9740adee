//! The prefilter alone, vector gate against scalar gate, over any file's bytes (the content-rule throughput goal):
//!
//! ```text
//! cargo run --release -p flowbundle-rules --example gate_speed -- content-10k.hex FILE [REPS [vector]]
//! ```
//!
//! Builds the prefilter of the hex pattern file (loaded by `RuleSet::from_content_hex`: one case-sensitive pattern
//! per line), scans the whole file as one buffer with each gate, alternating, and prints the minimum time of
//! each, the occurrences found (which must be equal) and the ratio.

use std::time::Instant;

use flowbundle_rules::RuleSet;
use flowbundle_rules::prefilter::PatternSet;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(hex), Some(file)) = (args.first(), args.get(1)) else {
        eprintln!("usage: gate_speed PATTERNS.hex FILE [REPS [vector]]");
        std::process::exit(2);
    };
    let reps: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let pats = match RuleSet::from_content_hex(hex) {
        Ok((set, _)) => set.first_contents(),
        Err(e) => {
            eprintln!("{hex}: {e}");
            std::process::exit(2)
        }
    };
    let data = std::fs::read(file).unwrap_or_else(|e| {
        eprintln!("{file}: {e}");
        std::process::exit(2)
    });
    let vector = PatternSet::new(&pats);
    let mut scalar = vector.clone();
    scalar.set_vector_gate(false);
    let time = |ps: &PatternSet| {
        let t = Instant::now();
        let mut n = 0u64;
        ps.scan_buffer(&data, |_, _| n += 1);
        (t.elapsed().as_secs_f64(), n)
    };
    let (mut best_v, mut best_s) = (f64::MAX, f64::MAX);
    let (mut hits_v, mut hits_s) = (0, 0);
    for _ in 0..reps {
        let (t, n) = time(&vector);
        best_v = best_v.min(t);
        hits_v = n;
        if args.get(3).is_some_and(|a| a == "vector") {
            // For a profiler: the vector gate only.
            hits_s = hits_v;
            continue;
        }
        let (t, n) = time(&scalar);
        best_s = best_s.min(t);
        hits_s = n;
    }
    let mb = data.len() as f64 / 1e6;
    println!(
        "gate_speed: {} patterns, {mb:.1} MB, vector gate available: {}; vector {:.1} ms ({:.0} MB/s, {hits_v} hits), \
         scalar {:.1} ms ({:.0} MB/s, {hits_s} hits), scalar/vector {:.2}",
        pats.len(),
        vector.vector_gate(),
        best_v * 1e3,
        mb / best_v,
        best_s * 1e3,
        mb / best_s,
        best_s / best_v
    );
    if hits_v != hits_s {
        eprintln!("gate_speed: the two gates disagree");
        std::process::exit(1);
    }
}
