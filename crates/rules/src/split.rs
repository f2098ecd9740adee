//! # One stream's content matching split over several threads
//!
//! Every scheduler keeps a connection on one worker, so one connection's detection runs on one core, and a
//! connection that carries most of the traffic (an "elephant") caps the whole engine (ANCS'10 lists "a flow that
//! exceeds one core" as open; BENCHMARKS.md, "Simulator", shows the plateau). Matching a *content set* is different
//! from the rest of a connection's processing: it is a pure function of the bytes. So a long reassembled stream can be
//! cut into chunks matched on several threads and the results merged, provided the merge yields exactly what one
//! pass yields:
//!
//! * **Overlap.** Chunk `k` covers `[start_k, end_k)`, and its thread scans `[start_k - overlap, end_k)` with
//!   `overlap = max(longest pattern − 1, 7)`: an occurrence ending inside the chunk starts at most `longest − 1`
//!   bytes before it, so it lies wholly in the scanned bytes. (7: the matcher's first seven windows of a buffer take
//!   a different code path than the rest; with at least that overlap, every kept occurrence comes from the same path
//!   as in one pass, so occurrences ending at one position come in the same order too.)
//! * **Deduplication.** A thread keeps only the occurrences that *end* inside its own chunk (end > `start_k`):
//!   each occurrence ends in exactly one chunk, so none is reported twice and none is lost.
//! * **Order.** One pass reports occurrences by end position; each chunk's are in that order and the chunks are
//!   concatenated in stream order, so the merged list is the serial list, element for element (the property test
//!   below checks it for random streams, chunkings and pattern sets, and `tests/split.rs` on the 10k content set).
//!
//! It uses only the matcher's public entry point ([`PatternSet::scan_buffer`] and [`PatternSet::max_len`]): the
//! tables and the scan loop are the prefilter's business.
//!
//! **Cost.** The overlap is rescanned once per chunk (254 bytes for the 10k set: the prefilter matches a pattern on
//! at most its last 255 bytes, and [`PatternSet::max_len`] says so); each call spawns `parts − 1` scoped threads (tens of µs), so it pays only on long buffers:
//! below [`MIN_CHUNK`] bytes per chunk the call scans on the calling thread. Hits are collected per chunk and copied
//! once into the caller's vector.

use crate::prefilter::PatternSet;
use std::ops::Range;

/// Smallest chunk worth a thread of its own (a spawned scoped thread costs tens of µs; the prefilter scans the 10k
/// set at a few hundred MB/s, so 64 KiB is a few hundred µs of work).
pub const MIN_CHUNK: usize = 64 * 1024;

/// Bytes a chunk's scan reaches back before the chunk for a pattern set whose longest pattern is `max_len`.
pub fn overlap(max_len: usize) -> usize {
    max_len.saturating_sub(1).max(7)
}

/// `parts` nearly equal consecutive ranges covering `0..len` (fewer when `len` is short: at least one byte each,
/// and at least one range).
pub fn chunks(len: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.clamp(1, len.max(1));
    (0..parts)
        .map(|k| (len * k / parts)..(len * (k + 1) / parts))
        .collect()
}

/// Every occurrence `(pattern, end)` (`end` exclusive) of `set`'s patterns in `data`, in the order one pass
/// ([`PatternSet::scan_buffer`]) reports them.
pub fn scan_serial(set: &PatternSet, data: &[u8], out: &mut Vec<(u32, usize)>) {
    set.scan_buffer(data, |p, end| out.push((p, end)));
}

/// The occurrences in `data[range]`'s chunk: those ending inside it, found by scanning it with the overlap before it.
fn scan_chunk(set: &PatternSet, data: &[u8], range: Range<usize>, out: &mut Vec<(u32, usize)>) {
    let from = range.start.saturating_sub(overlap(set.max_len()));
    let Some(bytes) = data.get(from..range.end) else {
        return;
    };
    set.scan_buffer(bytes, |p, end| {
        let end = from + end;
        if end > range.start {
            out.push((p, end));
        }
    });
}

/// [`scan_serial`]'s result, found on up to `parts` threads (the calling one included) over chunks of at least
/// [`MIN_CHUNK`] bytes; appended to `out`.
pub fn scan_split(set: &PatternSet, data: &[u8], parts: usize, out: &mut Vec<(u32, usize)>) {
    let parts = parts.clamp(1, (data.len() / MIN_CHUNK).max(1));
    scan_split_chunks(set, data, &chunks(data.len(), parts), out);
}

/// [`scan_split`] over the given chunks (consecutive ranges covering `data` from 0; any sizes): the first on the
/// calling thread, each other on a scoped thread of its own.
pub fn scan_split_chunks(
    set: &PatternSet,
    data: &[u8],
    ranges: &[Range<usize>],
    out: &mut Vec<(u32, usize)>,
) {
    let Some((first, rest)) = ranges.split_first() else {
        return;
    };
    if rest.is_empty() {
        scan_chunk(set, data, first.clone(), out);
        return;
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = rest
            .iter()
            .map(|r| {
                let r = r.clone();
                s.spawn(move || {
                    let mut v = Vec::new();
                    scan_chunk(set, data, r, &mut v);
                    v
                })
            })
            .collect();
        scan_chunk(set, data, first.clone(), out);
        for (h, r) in handles.into_iter().zip(rest) {
            // A chunk's thread only scans; should it have panicked, its chunk is scanned again here.
            match h.join() {
                Ok(v) => out.extend(v),
                Err(_) => scan_chunk(set, data, r.clone(), out),
            }
        }
    });
}

/// The alerts a content set raises on a stream: the first occurrence of each pattern (one alert per rule per
/// stream direction, as the rule engine raises them), in the order of `hits`.
pub fn first_per_pattern(hits: &[(u32, usize)]) -> Vec<(u32, usize)> {
    let mut seen = std::collections::HashSet::new();
    hits.iter()
        .copied()
        .filter(|&(p, _)| seen.insert(p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(patterns: &[(Vec<u8>, bool)]) -> PatternSet {
        PatternSet::new(patterns)
    }

    #[test]
    fn chunks_cover_the_range_in_order() {
        assert_eq!(chunks(10, 3), vec![0..3, 3..6, 6..10]);
        assert_eq!(chunks(2, 5), vec![0..1, 1..2]);
        let empty = chunks(0, 4);
        assert_eq!((empty.len(), empty.first()), (1, Some(&(0..0))));
    }

    #[test]
    fn an_occurrence_across_a_chunk_boundary_is_reported_once() {
        let s = set(&[(b"abcdef".to_vec(), false), (b"cd".to_vec(), false)]);
        let data = b"xxabcdefxxabcdef";
        let mut serial = Vec::new();
        scan_serial(&s, data, &mut serial);
        assert_eq!(serial, vec![(1, 6), (0, 8), (1, 14), (0, 16)]);
        for cut in 1..data.len() {
            let mut split = Vec::new();
            scan_split_chunks(&s, data, &[0..cut, cut..data.len()], &mut split);
            assert_eq!(split, serial, "cut at {cut}");
        }
        assert_eq!(first_per_pattern(&serial), vec![(1, 6), (0, 8)]);
    }

    fn pattern() -> impl Strategy<Value = (Vec<u8>, bool)> {
        (
            prop::collection::vec(prop::sample::select(b"abcAB\0".to_vec()), 1..12),
            any::<bool>(),
        )
    }

    proptest! {
        #[test]
        fn split_equals_serial(
            patterns in prop::collection::vec(pattern(), 1..20),
            data in prop::collection::vec(prop::sample::select(b"abcAB\0x".to_vec()), 0..600),
            cuts in prop::collection::vec(0usize..600, 0..6),
        ) {
            let s = set(&patterns);
            let mut serial = Vec::new();
            scan_serial(&s, &data, &mut serial);
            let mut points: Vec<usize> = cuts.into_iter().filter(|&c| c < data.len()).collect();
            points.push(0);
            points.push(data.len());
            points.sort_unstable();
            points.dedup();
            let ranges: Vec<Range<usize>> = points.windows(2).map(|w| w[0]..w[1]).collect();
            let ranges = if ranges.is_empty() { std::iter::once(0..0).collect() } else { ranges };
            let mut split = Vec::new();
            scan_split_chunks(&s, &data, &ranges, &mut split);
            prop_assert_eq!(&split, &serial);
            prop_assert_eq!(first_per_pattern(&split), first_per_pattern(&serial));
        }
    }
}
