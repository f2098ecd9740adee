//! Arbitrary packets through the matcher: `SignatureSet::feed` over the crate's test patterns
//! (`reference::TEST_PATTERNS`: anchors, gaps, brackets, prefilter literals) must agree with the literal
//! re-scanning l7-filter after every packet (`Reference::compare`, as in the proptests), whatever the data,
//! packet boundaries, limits and NUL handling. The first four bytes choose the options and the cuts.
#![no_main]

use flowbundle_signatures::reference::{Reference, TEST_PATTERNS, split_at};
use flowbundle_signatures::{Options, SignatureSet};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn sets() -> &'static [(SignatureSet, Reference)] {
    static SETS: OnceLock<Vec<(SignatureSet, Reference)>> = OnceLock::new();
    SETS.get_or_init(|| {
        let mut out = Vec::new();
        for (max_bytes, max_packets, strip_nul) in [
            (2047, 10, true),
            (16, 3, true),
            (300, 10, false),
            (1, 1, true),
        ] {
            let options = Options {
                max_bytes,
                max_packets,
                strip_nul,
                ..Options::default()
            };
            let (set, _) =
                SignatureSet::from_patterns(TEST_PATTERNS, &options).expect("valid options");
            let reference = Reference::new(&set).expect("reference");
            out.push((set, reference));
        }
        out
    })
}

fuzz_target!(|data: &[u8]| {
    let [which, a, b, c, payload @ ..] = data else {
        return;
    };
    let (set, reference) = &sets()[usize::from(*which) % sets().len()];
    let cuts = [
        usize::from(*a) * 3,
        usize::from(*b) * 5,
        usize::from(*c) * 7,
    ];
    if let Err(e) = reference.compare(set, &split_at(payload, &cuts)) {
        panic!("{e}");
    }
});
