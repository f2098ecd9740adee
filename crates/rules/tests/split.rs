//! Split matching (`flowbundle_rules::split`) with the 10k content set on real bytes: every chunking yields the
//! serial hits, element for element, and so the same alerts. The bytes are a shared capture file read whole (packet
//! headers and payloads back to back: the set's patterns occur in them thousands of times).

mod common;

use flowbundle_rules::prefilter::PatternSet;
use flowbundle_rules::split::{
    chunks, first_per_pattern, overlap, scan_serial, scan_split, scan_split_chunks,
};

#[test]
fn the_10k_set_split_over_any_chunking_finds_the_serial_hits() {
    let Some(hex) = flowbundle_testsupport::data("rules/content-10k.hex") else {
        return;
    };
    let Some(pcap) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let patterns = common::case_sensitive_hex_patterns(&std::fs::read(&hex).unwrap());
    assert_eq!(patterns.len(), 10_000);
    let set = PatternSet::new(&patterns);
    let data = std::fs::read(&pcap).unwrap();
    let mut serial = Vec::new();
    scan_serial(&set, &data, &mut serial);
    assert!(
        serial.len() > 1000,
        "{} hits: too few to test the merge",
        serial.len()
    );
    let ov = overlap(set.max_len());
    for parts in [2, 3, 7, 16] {
        let mut split = Vec::new();
        scan_split_chunks(&set, &data, &chunks(data.len(), parts), &mut split);
        assert_eq!(split.len(), serial.len(), "{parts} parts");
        assert!(split == serial, "{parts} parts: hits differ");
    }
    // Cuts placed right after and right before occurrences: a boundary inside every kind of straddle.
    for &(_, end) in serial.iter().step_by(97).take(50) {
        for cut in [end.saturating_sub(1), end, end + 1, end.saturating_sub(ov)] {
            if cut == 0 || cut >= data.len() {
                continue;
            }
            let mut split = Vec::new();
            scan_split_chunks(&set, &data, &[0..cut, cut..data.len()], &mut split);
            assert!(split == serial, "cut at {cut}");
        }
    }
    let mut split = Vec::new();
    scan_split(&set, &data, 2, &mut split);
    assert!(split == serial);
    assert_eq!(first_per_pattern(&split), first_per_pattern(&serial));
}
