//! One elephant stream's content matching on one thread and split over two (`flowbundle_rules::split`), with the 10k
//! content set: wall time per pass, the ratio, and a check that the split hits equal the serial ones (what
//! BENCHMARKS.md, "Execution models", records).
//!
//! `cargo run --release -p flowbundle-rules --example split_elephant -- [REPS] [REPEAT] [CAPTURE...]`
//! The elephant is the largest TCP direction of the captures (default: the three `reassembly/` captures of the shared
//! data; a generated `dominant` trace, `flowbundle trace synth --profile dominant`, gives its 55% connection),
//! reassembled, and repeated REPEAT times back to back (default 1; the shared captures' largest direction is half a
//! megabyte, where a thread's start-up is a visible share); it is matched whole, as one connection's stream would be.
//!
//! Besides wall time it reports CPU time, which the machine's load does not inflate: the serial pass's thread CPU
//! time, each chunk's scan's thread CPU time (run one after the other on the calling thread: what each of the two
//! threads has to do), and the process's CPU time (user + system) over the split passes (the work of both threads
//! and the threads' start-up). `serial / max(chunk)` is the speed-up two idle cores give, less the start-up;
//! `split CPU / serial CPU` is what splitting costs in all (the overlap rescanned, the threads started).

#[path = "../tests/common/mod.rs"]
mod common;

use flowbundle_rules::prefilter::PatternSet;
use flowbundle_rules::split::{MIN_CHUNK, chunks, scan_serial, scan_split, scan_split_chunks};
use std::time::Instant;

/// CPU time of the calling thread, seconds.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// CPU time (user + system) of the whole process, every thread, seconds.
fn process_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

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
    let (mut c1, mut c2, mut chunk_cpu) = (Vec::new(), Vec::new(), Vec::new());
    let parts = 2usize.clamp(1, (data.len() / MIN_CHUNK).max(1));
    let ranges = chunks(data.len(), parts);
    for _ in 0..reps {
        let mut v = Vec::with_capacity(serial.len());
        let (s, c) = (Instant::now(), thread_cpu());
        scan_serial(&set, &data, &mut v);
        t1.push(s.elapsed().as_secs_f64());
        c1.push(thread_cpu() - c);
        let mut v = Vec::with_capacity(serial.len());
        let (s, c) = (Instant::now(), process_cpu());
        scan_split(&set, &data, 2, &mut v);
        t2.push(s.elapsed().as_secs_f64());
        c2.push(process_cpu() - c);
        // Each chunk alone on this thread: the work one of the split's threads does.
        let per: Vec<f64> = ranges
            .iter()
            .map(|r| {
                let mut v = Vec::new();
                let c = thread_cpu();
                scan_split_chunks(&set, &data, std::slice::from_ref(r), &mut v);
                thread_cpu() - c
            })
            .collect();
        chunk_cpu.push(per);
    }
    let (m1, m2) = (median(t1), median(t2));
    let (cm1, cm2) = (median(c1), median(c2));
    let per_chunk: Vec<f64> = (0..ranges.len())
        .map(|k| median(chunk_cpu.iter().map(|p| p[k]).collect()))
        .collect();
    let longest = per_chunk.iter().copied().fold(0.0, f64::max);
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
        "wall, median of {reps}: one thread {:.2} ms ({:.0} MB/s), two threads {:.2} ms ({:.0} MB/s): {:.2}x",
        m1 * 1e3,
        mb / m1,
        m2 * 1e3,
        mb / m2,
        m1 / m2
    );
    let chunks_ms: Vec<String> = per_chunk
        .iter()
        .map(|c| format!("{:.2}", c * 1e3))
        .collect();
    println!(
        "cpu, median of {reps}: serial {:.2} ms; {} chunks {} ms each (critical path {:.2} ms: {:.2}x); split passes {:.2} ms of process CPU ({:.3}x the serial pass)",
        cm1 * 1e3,
        ranges.len(),
        chunks_ms.join(" / "),
        longest * 1e3,
        cm1 / longest.max(1e-12),
        cm2 * 1e3,
        cm2 / cm1.max(1e-12)
    );
}
