//! The prefilter against aho-corasick on long patterns that share their last eight bytes (as 71 patterns of the
//! 10k set end in `</title>`): the second check word (bytes 9 to 16 from the end), the byte-wise comparison beyond
//! 16 bytes, occurrences near the start of a chunk (where the eight bytes before the window come from the tail),
//! and the gate (vector blocks and scalar loop) at every chunk length.

mod common;

use common::prefilter::{oracle_hits, prefilter_hits, quiet_hits};
use flowbundle_rules::prefilter::PatternSet;
use proptest::prelude::*;

fn bytes(min: usize, max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(b"abAB<\x00".to_vec()), min..=max)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
    ))]

    #[test]
    fn shared_suffix_families_equal_aho_corasick(
        suffix in bytes(8, 8),
        mid in bytes(0, 10),
        heads in prop::collection::vec((bytes(1, 8), any::<bool>()), 1..12),
        others in prop::collection::vec((bytes(4, 24), any::<bool>()), 0..6),
        picks in prop::collection::vec((any::<usize>(), bytes(0, 6)), 0..30),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        // Patterns of 9 to 26 bytes that end in one 8-byte suffix, most of them in a longer shared tail (so that
        // one pattern's occurrence holds the last 16 bytes of others), and a few unrelated ones.
        let mut pats: Vec<(Vec<u8>, bool)> = heads
            .iter()
            .map(|(h, nc)| ([h.as_slice(), mid.as_slice(), suffix.as_slice()].concat(), *nc))
            .collect();
        pats.extend(others);
        // A haystack made of pattern occurrences (some case-flipped) and noise, so that hits are common.
        let mut hay = Vec::new();
        for (i, noise) in &picks {
            let (p, _) = &pats[i % pats.len()];
            if i % 3 == 0 {
                hay.extend(p.iter().map(|b| if b.is_ascii_alphabetic() { b ^ 0x20 } else { *b }));
            } else {
                hay.extend_from_slice(p);
            }
            hay.extend_from_slice(noise);
        }
        let ps = PatternSet::new(&pats);
        prop_assert_eq!(prefilter_hits(&ps, &hay, &cuts), oracle_hits(&pats, &hay));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
    ))]

    /// Runs of one byte value, where the hot loop replays the previous position's hits (the all-zero patterns of
    /// the 10k set over NUL padding): patterns of a repeated byte (1 to 40 of them, some behind another byte or
    /// followed by one), haystacks of long runs.
    #[test]
    fn runs_equal_aho_corasick(
        pats in prop::collection::vec(
            (prop::sample::select(b"\x00a".to_vec()), 1usize..40, 0u8..4, any::<bool>()),
            1..10,
        ),
        runs in prop::collection::vec((prop::sample::select(b"\x00aA\x01".to_vec()), 0usize..70), 0..12),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let pats: Vec<(Vec<u8>, bool)> = pats
            .iter()
            .map(|&(b, n, shape, nocase)| {
                let mut p = vec![b; n];
                match shape {
                    1 => p.insert(0, 1),
                    2 => p.push(1),
                    _ => {}
                }
                (p, nocase)
            })
            .collect();
        let hay: Vec<u8> = runs.iter().flat_map(|&(b, n)| std::iter::repeat_n(b, n)).collect();
        let ps = PatternSet::new(&pats);
        prop_assert_eq!(prefilter_hits(&ps, &hay, &cuts), oracle_hits(&pats, &hay));
    }

    /// `scan_quiet` (a flow direction whose rules of some patterns all fired): every occurrence of a pattern that is
    /// not quiet is still reported exactly, nothing that does not occur is, whatever the runs skipped; quiet patterns
    /// may be left out. Patterns behind another byte and longer than 16 bytes are the ones a run can outlive.
    #[test]
    fn quiet_runs_keep_every_other_hit(
        pats in prop::collection::vec(
            (prop::sample::select(b"\x00a".to_vec()), 1usize..40, 0u8..4, any::<bool>()),
            1..10,
        ),
        quiet_mask in any::<u16>(),
        runs in prop::collection::vec((prop::sample::select(b"\x00aA\x01".to_vec()), 0usize..90), 0..12),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let pats: Vec<(Vec<u8>, bool)> = pats
            .iter()
            .map(|&(b, n, shape, nocase)| {
                let mut p = vec![b; n];
                match shape {
                    1 => p.insert(0, 1),
                    2 => p.push(1),
                    _ => {}
                }
                (p, nocase)
            })
            .collect();
        let quiet: Vec<u32> = (0..pats.len() as u32).filter(|i| quiet_mask & (1 << i) != 0).collect();
        let hay: Vec<u8> = runs.iter().flat_map(|&(b, n)| std::iter::repeat_n(b, n)).collect();
        let ps = PatternSet::new(&pats);
        let got = quiet_hits(&ps, &hay, &cuts, &quiet);
        let want = oracle_hits(&pats, &hay);
        let loud = |v: &[(u32, usize)]| -> Vec<(u32, usize)> {
            v.iter().copied().filter(|h| !quiet.contains(&h.0)).collect()
        };
        prop_assert_eq!(loud(&got), loud(&want));
        prop_assert!(got.iter().all(|h| want.contains(h)), "reported a hit that does not occur");
    }
}
