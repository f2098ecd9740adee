//! The prefilter fed in chunks, and aho-corasick as its oracle (props.rs, prefilter_long.rs).

use aho_corasick::{AhoCorasick, MatchKind};
use flowbundle_rules::prefilter::{PatternSet, ScanState};

/// Every (pattern, end) the prefilter reports when `hay` arrives in pieces cut at `cuts` (positions taken modulo the
/// length), sorted. The vector gate (where the CPU has one) and the scalar loop must agree.
pub fn prefilter_hits(ps: &PatternSet, hay: &[u8], cuts: &[usize]) -> Vec<(u32, usize)> {
    quiet_hits(ps, hay, cuts, &[])
}

/// [`prefilter_hits`] through `scan_quiet` with `quiet` patterns: the two gates must agree on every pattern that
/// is not quiet (quiet ones may be reported or not).
pub fn quiet_hits(ps: &PatternSet, hay: &[u8], cuts: &[usize], quiet: &[u32]) -> Vec<(u32, usize)> {
    let mut scalar = ps.clone();
    scalar.set_vector_gate(false);
    let a = chunked(ps, hay, cuts, quiet);
    let loud = |v: &[(u32, usize)]| -> Vec<(u32, usize)> {
        v.iter()
            .copied()
            .filter(|h| !quiet.contains(&h.0))
            .collect()
    };
    assert_eq!(
        loud(&a),
        loud(&chunked(&scalar, hay, cuts, quiet)),
        "vector gate != scalar gate"
    );
    a
}

fn chunked(ps: &PatternSet, hay: &[u8], cuts: &[usize], quiet: &[u32]) -> Vec<(u32, usize)> {
    let mut st = ScanState::default();
    let mut out = Vec::new();
    let mut start = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (hay.len() + 1)).collect();
    bounds.push(hay.len());
    bounds.sort();
    for end in bounds {
        if end < start {
            continue;
        }
        ps.scan_quiet(&mut st, &hay[..start], &hay[start..end], quiet, |p, e| {
            out.push((p, start + e))
        });
        start = end;
    }
    out.sort();
    out
}

/// The same from aho-corasick's overlapping search, case-sensitive and case-insensitive patterns apart.
pub fn oracle_hits(pats: &[(Vec<u8>, bool)], hay: &[u8]) -> Vec<(u32, usize)> {
    let mut out = Vec::new();
    for nocase in [false, true] {
        let ids: Vec<usize> = (0..pats.len()).filter(|&i| pats[i].1 == nocase).collect();
        if ids.is_empty() {
            continue;
        }
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .ascii_case_insensitive(nocase)
            .build(ids.iter().map(|&i| &pats[i].0))
            .expect("oracle automaton");
        for m in ac.find_overlapping_iter(hay) {
            out.push((ids[m.pattern().as_usize()] as u32, m.end()));
        }
    }
    out.sort();
    out.dedup();
    out
}
