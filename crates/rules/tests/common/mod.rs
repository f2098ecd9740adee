//! Helpers shared by the integration tests: a capture's TCP directions (from `flowbundle_testcapture::segments`,
//! the one capture reader of the tests), and the prefilter oracle (`prefilter`).
#![allow(dead_code)]

pub mod prefilter;

use flowbundle_testcapture::Segment;

/// The patterns of a hex pattern file (`content-10k.hex`), read by the rules crate's one hex reader, each
/// case-sensitive as a prefilter input; a malformed line panics naming it.
pub fn case_sensitive_hex_patterns(text: &[u8]) -> Vec<(Vec<u8>, bool)> {
    flowbundle_rules::text::hex_patterns(text)
        .map(|(line, p)| {
            (
                p.unwrap_or_else(|e| panic!("hex pattern line {line}: {e}")),
                false,
            )
        })
        .collect()
}

/// Key of one direction of a TCP connection.
pub type DirKey = (std::net::IpAddr, u16, std::net::IpAddr, u16);

/// Segments of one direction as (stream offset, payload).
pub type Parts = Vec<(u64, Vec<u8>)>;

/// One TCP direction: its segments as (stream offset, payload) in capture order, offsets from the SYN (or the first
/// segment seen).
pub fn tcp_directions(segs: &[Segment]) -> Vec<(DirKey, Parts)> {
    let mut order: Vec<DirKey> = Vec::new();
    let mut map: std::collections::HashMap<DirKey, (u32, Parts)> = Default::default();
    for s in segs.iter().filter(|s| s.tcp) {
        let k = (s.src, s.sport, s.dst, s.dport);
        let e = map.entry(k).or_insert_with(|| {
            order.push(k);
            (
                if s.syn { s.seq.wrapping_add(1) } else { s.seq },
                Vec::new(),
            )
        });
        if s.payload.is_empty() {
            continue;
        }
        let rel = s.seq.wrapping_sub(e.0);
        if rel > 1 << 30 {
            continue; // before the start we chose (a retransmitted SYN-era segment)
        }
        e.1.push((u64::from(rel), s.payload.clone()));
    }
    order
        .into_iter()
        .filter_map(|k| map.remove(&k).map(|(_, v)| (k, v)))
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

/// The contiguous stream from offset 0 built from segments placed by offset (stops at the first hole).
pub fn assemble(segs: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut sorted: Vec<&(u64, Vec<u8>)> = segs.iter().collect();
    sorted.sort_by_key(|s| s.0);
    let mut out: Vec<u8> = Vec::new();
    for (off, p) in sorted {
        let off = *off as usize;
        if off > out.len() {
            break;
        }
        let skip = out.len() - off;
        if skip < p.len() {
            out.extend_from_slice(&p[skip..]);
        }
    }
    out
}
