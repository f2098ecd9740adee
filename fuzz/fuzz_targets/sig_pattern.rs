//! Arbitrary bytes as a `.pat` file: the reader, the regex translator and the DFA compiler must not panic, hang or
//! grow without bound, and a pattern that loads must give the same answers as the literal re-scanning l7-filter
//! (`reference::Reference::compare`, which the crate's proptests also call) on the input itself cut into
//! packets. Layout: the `.pat` file, then optionally `\n\n\n` and the payload (else the file is the payload too).
#![no_main]

use flowbundle_signatures::pat::parse_pat_file;
use flowbundle_signatures::reference::{Reference, split_at};
use flowbundle_signatures::{Options, SignatureSet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (file, payload) = match data.windows(3).position(|w| w == b"\n\n\n") {
        Some(at) => (&data[..at], &data[at + 3..]),
        None => (data, data),
    };
    let Ok(pat) = parse_pat_file(file) else {
        return;
    };
    // Small automaton limits keep each run short; a pattern over them is rejected with a reason, never dropped.
    let options = Options {
        max_bytes: 64,
        max_packets: 4,
        group_size_limit: 256 << 10,
        pattern_size_limit: 256 << 10,
        ..Options::default()
    };
    let (set, report) =
        SignatureSet::from_patterns(&[(pat.name.as_str(), &pat.pattern[..])], &options)
            .expect("options are valid");
    assert_eq!(
        set.len() + report.rejected.len(),
        1,
        "every pattern is loaded or rejected: {report}"
    );
    if set.is_empty() {
        return;
    }
    let reference = Reference::new(&set).expect("a pattern the set compiled compiles alone");
    let cuts: Vec<usize> = payload.iter().take(3).map(|&b| usize::from(b)).collect();
    if let Err(e) = reference.compare(&set, &split_at(payload, &cuts)) {
        panic!("{}: {e}", String::from_utf8_lossy(&pat.pattern));
    }
});
