//! Real captures: stream matching fed packet by packet (as reassembly hands data over) finds exactly what matching
//! the whole reassembled stream finds, including matches that straddle packet boundaries.

mod common;

use std::collections::BTreeSet;

use flowbundle_rules::{AlertRecord, Direction, FlowMatchState, PacketCtx, RuleSet};

/// Runs every TCP direction of `capture` through `rules` twice; returns (alerts, alerts straddling a packet
/// boundary, directions compared).
fn compare(rules: &RuleSet, capture: &str) -> Option<(usize, usize, usize)> {
    compare_with(rules, capture, &mut Vec::new())
}

fn compare_with(
    rules: &RuleSet,
    capture: &str,
    seen: &mut Vec<AlertRecord>,
) -> Option<(usize, usize, usize)> {
    let path = flowbundle_testsupport::data(capture)?;
    let segs = flowbundle_testcapture::segments(&path);
    let mut sc = rules.scanner();
    let (mut total, mut straddling, mut dirs) = (0, 0, 0);
    for ((src, sport, dst, dport), parts) in common::tcp_directions(&segs) {
        let ctx = PacketCtx {
            dir: Direction::ToServer,
            src,
            dst,
            src_port: sport,
            dst_port: dport,
            ..Default::default()
        };
        let mut flow = FlowMatchState::default();
        let mut per_packet: Vec<AlertRecord> = Vec::new();
        let gaps_before = sc.stats().stream_gaps;
        for (off, p) in &parts {
            rules.scan_stream(&mut sc, &mut flow, &ctx, p, *off, &mut per_packet);
        }
        rules.finish_flow(&mut sc, &mut flow, &mut per_packet);
        if sc.stats().stream_gaps != gaps_before {
            continue; // out of order in the capture: packet order is not stream order, nothing to compare
        }
        let whole_stream = common::assemble(&parts);
        let mut flow2 = FlowMatchState::default();
        let mut whole: Vec<AlertRecord> = Vec::new();
        rules.scan_stream(&mut sc, &mut flow2, &ctx, &whole_stream, 0, &mut whole);
        rules.finish_flow(&mut sc, &mut flow2, &mut whole);
        let a: BTreeSet<u32> = per_packet.iter().map(|r| r.sid).collect();
        let b: BTreeSet<u32> = whole.iter().map(|r| r.sid).collect();
        assert_eq!(a, b, "{capture}: {src}:{sport} -> {dst}:{dport}");
        let boundaries: BTreeSet<u64> = parts.iter().map(|p| p.0).collect();
        straddling += per_packet
            .iter()
            .filter(|r| {
                boundaries
                    .range(r.offset + 1..r.offset + r.len)
                    .next()
                    .is_some()
            })
            .count();
        total += per_packet.len();
        dirs += 1;
        seen.extend(per_packet);
    }
    Some((total, straddling, dirs))
}

#[test]
fn content_10k_across_packet_boundaries() {
    let Some(hex) = flowbundle_testsupport::data("rules/content-10k.hex") else {
        return;
    };
    let (rules, _) = RuleSet::from_content_hex(hex).unwrap();
    let mut all = (0, 0, 0);
    for cap in [
        "reassembly/example.pcap",
        "reassembly/4KHttpRequests.pcap",
        "reassembly/650HttpResponses.pcap",
    ] {
        if let Some((t, s, d)) = compare(&rules, cap) {
            println!("{cap}: {t} alerts, {s} straddle packet boundaries, {d} directions");
            all = (all.0 + t, all.1 + s, all.2 + d);
        }
    }
    if all.2 > 0 {
        assert!(all.1 > 0, "no straddling match exercised");
    }
}

#[test]
fn community_rules_across_packet_boundaries() {
    let Some(path) = flowbundle_testsupport::data("rules/snort3-community.rules") else {
        return;
    };
    let (rules, _) = RuleSet::load_files(&[path]).unwrap();
    for cap in ["reassembly/example.pcap", "reassembly/example2.pcap"] {
        let mut seen = Vec::new();
        if let Some((t, s, d)) = compare_with(&rules, cap, &mut seen) {
            println!("{cap}: {t} alerts, {s} straddle packet boundaries, {d} directions");
            for a in &seen {
                let r = &rules.rules()[a.rule_index as usize];
                println!("  sid {} @{}+{}: {}", r.sid, a.offset, a.len, r.msg);
            }
        }
    }
}

/// The 10k content set's prefilter over whole capture files (headers, binary payloads, NUL padding, HTTP): the
/// vector gate, the scalar gate and aho-corasick's overlapping search report the same occurrences, in one buffer
/// and in 1,500-byte chunks.
#[test]
fn content_10k_prefilter_on_real_bytes() {
    use aho_corasick::{AhoCorasick, MatchKind};
    use flowbundle_rules::prefilter::{PatternSet, ScanState};

    let Some(hex) = flowbundle_testsupport::data("rules/content-10k.hex") else {
        return;
    };
    let pats = RuleSet::from_content_hex(hex).unwrap().0.first_contents();
    assert_eq!(pats.len(), 10_000);
    let vector = PatternSet::new(&pats);
    let mut scalar = vector.clone();
    scalar.set_vector_gate(false);
    let ac = AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .build(pats.iter().map(|p| &p.0))
        .unwrap();
    for cap in ["reassembly/650HttpResponses.pcap", "ndpi/pcap/1kxun.pcap"] {
        let Some(path) = flowbundle_testsupport::data(cap) else {
            continue;
        };
        let bytes = std::fs::read(path).unwrap();
        let bytes = &bytes[..bytes.len().min(400_000)];
        let run = |ps: &PatternSet, chunk: usize| {
            let mut out = Vec::new();
            let mut st = ScanState::default();
            for (i, c) in bytes.chunks(chunk).enumerate() {
                let start = i * chunk;
                ps.scan(&mut st, &bytes[..start], c, |p, e| out.push((p, start + e)));
            }
            out.sort_unstable();
            out
        };
        let mut want: Vec<(u32, usize)> = ac
            .find_overlapping_iter(bytes)
            .map(|m| (m.pattern().as_u32(), m.end()))
            .collect();
        want.sort_unstable();
        assert!(want.len() > 1000, "{cap}: only {} occurrences", want.len());
        let got = run(&vector, bytes.len());
        assert_eq!(got.len(), want.len(), "{cap}: vector gate, one buffer");
        assert!(got == want, "{cap}: vector gate differs from aho-corasick");
        assert!(run(&scalar, bytes.len()) == want, "{cap}: scalar gate");
        assert!(
            run(&vector, 1500) == want,
            "{cap}: vector gate, 1500-byte chunks"
        );
        println!(
            "{cap}: {} occurrences, vector gate: {}",
            want.len(),
            vector.vector_gate()
        );
    }
}
