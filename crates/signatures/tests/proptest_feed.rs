//! Property tests: the incremental engine against the literal l7-filter algorithm, and against itself fed in
//! one piece.
//!
//! The data is drawn from bytes and fragments that the test patterns care about (letters in both cases, NULs,
//! control bytes, pieces of the patterns' literals), so that matches, near-misses, literals split across packet
//! boundaries and literals interrupted by NULs all happen often.

use flowbundle_signatures::reference::Reference;
use flowbundle_signatures::{Options, SignatureSet, Verdict};
use proptest::prelude::*;
use std::sync::OnceLock;

use flowbundle_signatures::reference::TEST_PATTERNS as PATTERNS;

const FRAGMENTS: &[&[u8]] = &[
    b"hello world",
    b"HeLLo WoRLD",
    b"hello",
    b" world",
    b"get /",
    b"GET /index",
    b"user-agent: test",
    b"User-Agent: TEST",
    b"post ",
    b"POST /x",
    b" http/1.1",
    b" HTTP/1.0",
    b"abc",
    b"abd",
    b"ssh-2.0",
    b"SSH-1.9",
    b"taau",
    b"tbbcu",
];

fn token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::sample::select(&b"abcdekqtuxyzABCKXZ0129 -]`[/.\x00\x01\x02\n"[..]).prop_map(|b| vec![b]),
        2 => prop::sample::select(FRAGMENTS).prop_map(|f| f.to_vec()),
        1 => any::<u8>().prop_map(|b| vec![b]),
        // Long filler, so that the prefilters (which only run on stretches of 64 bytes or more) get their turn.
        1 => (60usize..100, prop::sample::select(&b". x\x00"[..])).prop_map(|(n, b)| vec![b; n]),
    ]
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(token(), 0..60).prop_map(|t| t.concat())
}

/// Cuts `data` into packets at the given fractions; empty packets included (they count in l7-filter).
fn split(data: &[u8], cuts: &[f64]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| (c * data.len() as f64) as usize)
        .collect();
    at.sort_unstable();
    let mut packets = Vec::new();
    let mut prev = 0;
    for a in at {
        packets.push(data[prev..a.max(prev)].to_vec());
        prev = a.max(prev);
    }
    packets.push(data[prev..].to_vec());
    packets
}

fn small_set(options: &Options) -> (SignatureSet, Reference) {
    let (set, report) = SignatureSet::from_patterns(PATTERNS, options).expect("options are valid");
    assert!(report.rejected.is_empty(), "{report}");
    let reference = Reference::new(&set).expect("reference");
    (set, reference)
}

fn check_against_reference(
    set: &SignatureSet,
    reference: &Reference,
    packets: &[Vec<u8>],
) -> Result<(), TestCaseError> {
    let packets: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
    reference
        .compare(set, &packets)
        .map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Any data, any split, any limits: the engine answers what l7-filter's re-scan answers, packet by packet.
    #[test]
    fn engine_agrees_with_rescanning_l7_filter(
        data in data(),
        cuts in prop::collection::vec(0.0f64..1.0, 0..12),
        max_bytes in prop_oneof![1usize..64, Just(2047usize)],
        max_packets in prop_oneof![1usize..12, Just(10usize)],
        strip_nul in any::<bool>(),
    ) {
        let options = Options { max_bytes, max_packets, strip_nul, ..Options::default() };
        let (set, reference) = small_set(&options);
        check_against_reference(&set, &reference, &split(&data, &cuts))?;
    }

    /// Without `$` and within the limits, where the packet boundaries fall does not change whether a
    /// connection matches, and a one-pattern set gives exactly the one-shot verdict.
    #[test]
    fn split_points_do_not_change_the_verdict(
        data in data(),
        cuts in prop::collection::vec(0.0f64..1.0, 0..9),
        which in 0..PATTERNS.len(),
    ) {
        let options = Options { max_bytes: 65535, max_packets: 255, ..Options::default() };
        let no_end: Vec<(&str, &str)> = PATTERNS.iter().copied().filter(|(_, p)| !p.contains('$')).collect();
        let (set, _) = SignatureSet::from_patterns(&no_end, &options).expect("valid");
        let packets = split(&data, &cuts);
        let (whole, _) = set.classify([&data[..]]);
        let (pieces, _) = set.classify(packets.iter().map(Vec::as_slice));
        let matched = |v: Verdict| matches!(v, Verdict::Matched(_));
        prop_assert_eq!(matched(whole), matched(pieces), "packets {:?}", packets);

        let one = &PATTERNS[which];
        let (single, _) = SignatureSet::from_patterns(&[*one], &options).expect("valid");
        if !one.1.contains('$') {
            let (whole, _) = single.classify([&data[..]]);
            let (pieces, _) = single.classify(packets.iter().map(Vec::as_slice));
            let settle = |v: Verdict| if v == Verdict::Pending { Verdict::NoMatch } else { v };
            prop_assert_eq!(settle(whole), settle(pieces), "{}: packets {:?}", one.0, packets);
        }
    }

    /// `matching()` (one buffer, every signature) agrees with the reference's per-pattern re-scan.
    #[test]
    fn matching_agrees_with_reference(data in data(), strip_nul in any::<bool>()) {
        let options = Options { strip_nul, ..Options::default() };
        let (set, reference) = small_set(&options);
        prop_assert_eq!(set.matching(&data), reference.matching(&data));
    }
}

/// The real protocol set, built once.
fn protocols() -> Option<&'static (SignatureSet, Reference)> {
    static SET: OnceLock<Option<(SignatureSet, Reference)>> = OnceLock::new();
    SET.get_or_init(|| {
        let dir = flowbundle_testsupport::data("l7-protocols")?;
        let (set, _) = SignatureSet::load_dir(dir, &Options::default()).expect("load");
        let reference = Reference::new(&set).expect("reference");
        Some((set, reference))
    })
    .as_ref()
}

/// Real samples, cut and mutated.
fn samples() -> &'static [Vec<u8>] {
    static SAMPLES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let Some(dir) = flowbundle_testsupport::data("l7-protocols/testing/data") else {
            return Vec::new();
        };
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        files.iter().filter_map(|p| std::fs::read(p).ok()).collect()
    })
}

/// The full protocols set on mutated real samples with arbitrary packet boundaries. The shared data is looked up
/// before the property runs, so a missing set skips (or, with `FLOWBUNDLE_REQUIRE_DATA=1`, fails) the test instead of
/// counting as a failing case.
#[test]
fn protocols_set_agrees_with_reference_on_mutated_samples() {
    let Some((set, reference)) = protocols() else {
        return;
    };
    let samples = samples();
    assert!(
        !samples.is_empty(),
        "no samples under l7-protocols/testing/data"
    );
    let strategy = (
        any::<prop::sample::Index>(),
        prop::collection::vec(0.0f64..1.0, 0..10),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    });
    let outcome = runner.run(&strategy, |(pick, cuts, edits)| {
        let mut data = samples[pick.index(samples.len())].clone();
        for (at, byte) in edits {
            if !data.is_empty() {
                let i = at.index(data.len());
                data[i] = byte;
            }
        }
        check_against_reference(set, reference, &split(&data, &cuts))
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

#[test]
fn literal_cut_by_a_packet_boundary_or_nul_still_matches() {
    let (set, _) = small_set(&Options::default());
    let literal = set.find("literal").expect("loaded");
    // Long enough stretches that the prefilter runs, with the literal cut in every possible place.
    let text = b"hello world";
    for cut in 1..text.len() {
        let mut first = vec![b'.'; 100];
        first.extend_from_slice(&text[..cut]);
        let mut second = text[cut..].to_vec();
        second.extend(vec![b'.'; 100]);
        let (v, _) = set.classify([&first[..], &second[..]]);
        assert_eq!(v, Verdict::Matched(literal), "cut at {cut}");
        let mut nul = vec![b'.'; 100];
        nul.extend_from_slice(&text[..cut]);
        nul.push(0);
        nul.extend_from_slice(&text[cut..]);
        let (v, _) = set.classify([&nul[..]]);
        assert_eq!(v, Verdict::Matched(literal), "NUL at {cut}");
    }
}
