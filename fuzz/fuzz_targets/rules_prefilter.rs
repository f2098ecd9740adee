//! The prefilter (vector and scalar gate) on arbitrary patterns and data against a brute-force search.
//! Input: byte 0 = number of patterns (1 to 16), then per pattern a length byte (1 to 20, top bit = nocase) and the
//! pattern bytes, then 4 bytes of chunk cuts, then the data. Same entry point as the crate's tests.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&n, mut rest)) = input.split_first() else {
        return;
    };
    let mut pats = Vec::new();
    for _ in 0..(n % 16 + 1) {
        let Some((&l, r)) = rest.split_first() else {
            return;
        };
        let len = usize::from(l & 0x7f) % 20 + 1;
        if r.len() < len {
            return;
        }
        let (p, r) = r.split_at(len);
        pats.push((p.to_vec(), l & 0x80 != 0));
        rest = r;
    }
    let (cuts, data) = rest.split_at(rest.len().min(4));
    let cuts: Vec<usize> = cuts.iter().map(|&c| usize::from(c) * 7).collect();
    if let Err(e) = flowbundle_rules::testing::prefilter_checked(&pats, data, &cuts) {
        panic!("{e}");
    }
});
