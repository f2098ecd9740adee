//! One elephant stream's content matching on one thread and split over two (`flowbundle_rules::split`), with the 10k
//! content set: wall time per pass, the ratio, and a check that the split hits equal the serial ones (what
//! BENCHMARKS.md, "Execution models", records).
//!
//! `cargo run --release -p flowbundle-rules --example split_elephant -- [REPS] [REPEAT] [CAPTURE...]`
//! The elephant is the largest TCP direction of the captures (default: the three `reassembly/` captures of the shared
//! data), reassembled, and repeated REPEAT times back to back (default 1; the shared captures' largest direction is
//! half a megabyte, where a thread's start-up is a visible share); it is matched whole, as one connection's stream
//! would be.

#[path = "../tests/common/mod.rs"]
mod common;

use flowbundle_rules::prefilter::PatternSet;
use flowbundle_rules::split::{scan_serial, scan_split};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(21);
    let root = flowbundle_testsupport::data_root();
    let repeat: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let caps: Vec<std::path::PathBuf> = if args.len() > 3 {
        args[3..].iter().map(Into::into).collect()
    } else {
        [
            "reassembly/example.pcap",
            "reassembly/example2.pcap",
            "reassembly/650HttpResponses.pcap",
        ]
        .iter()
        .map(|c| root.join(c))
        .collect()
    };
    let mut elephant: Option<(common::DirKey, Vec<u8>)> = None;
    for cap in &caps {
        if !cap.exists() {
            eprintln!("skipping {}: absent", cap.display());
            continue;
        }
        for (key, parts) in common::tcp_directions(&flowbundle_testcapture::segments(cap)) {
            let bytes = common::assemble(&parts);
            if elephant.as_ref().is_none_or(|e| bytes.len() > e.1.len()) {
                elephant = Some((key, bytes));
            }
        }
    }
    let Some((key, one)) = elephant else {
        eprintln!("no TCP stream in the captures");
        std::process::exit(1);
    };
    let data = one.repeat(repeat);
    let hex = root.join("rules/content-10k.hex");
    let Ok(text) = std::fs::read_to_string(&hex) else {
        eprintln!("{} absent", hex.display());
        std::process::exit(1);
    };
    let set = PatternSet::new(&common::case_sensitive_hex_patterns(text.as_bytes()));
    let mut serial = Vec::new();
    scan_serial(&set, &data, &mut serial);
    let mut split = Vec::new();
    scan_split(&set, &data, 2, &mut split);
    assert!(split == serial, "split hits differ from the serial ones");
    let mut t1 = Vec::new();
    let mut t2 = Vec::new();
    for _ in 0..reps {
        let mut v = Vec::with_capacity(serial.len());
        let s = Instant::now();
        scan_serial(&set, &data, &mut v);
        t1.push(s.elapsed().as_secs_f64());
        let mut v = Vec::with_capacity(serial.len());
        let s = Instant::now();
        scan_split(&set, &data, 2, &mut v);
        t2.push(s.elapsed().as_secs_f64());
    }
    let (m1, m2) = (median(t1), median(t2));
    let mb = data.len() as f64 / 1e6;
    println!(
        "elephant {:?} × {repeat}: {:.2} MB, {} hits of the {}-pattern set ({} distinct patterns); split hits equal serial",
        key,
        mb,
        serial.len(),
        set.len(),
        flowbundle_rules::split::first_per_pattern(&serial).len()
    );
    println!(
        "median of {reps}: one thread {:.2} ms ({:.0} MB/s), two threads {:.2} ms ({:.0} MB/s): {:.2}x",
        m1 * 1e3,
        mb / m1,
        m2 * 1e3,
        mb / m2,
        m1 / m2
    );
}
