//! One pass of the decoder (and the defragmenter) over a capture, for instruction counts that do not depend on the
//! machine's load:
//!
//! ```text
//! cargo build --release -p flowbundle-decode --example decode_pass
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/decode_pass CAPTURE
//! ```
//!
//! Prints the packets, the decoded ones and a checksum of what was read (so nothing is optimised away).

use std::hint::black_box;

use flowbundle_decode::{DecodeOptions, DefragConfig, Defragmenter, decode};
use flowbundle_ingest::Trace;

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: decode_pass CAPTURE");
        std::process::exit(2);
    };
    let t = match Trace::load(std::path::Path::new(&path)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("decode_pass: {e}");
            std::process::exit(1);
        }
    };
    let opts = DecodeOptions {
        decap_tunnels: true,
        ..DecodeOptions::default()
    };
    let mut defrag = Defragmenter::new(DefragConfig::default());
    let (mut decoded, mut acc) = (0u64, 0usize);
    for rec in t.iter() {
        let d = decode(&rec, &opts);
        decoded += u64::from(d.outcome.is_decoded());
        acc = acc.wrapping_add(black_box(&d).payload.len());
        let _ = black_box(defrag.push(&d, rec.ts_ns));
    }
    println!("{} packets, {decoded} decoded, checksum {acc}", t.len());
}
