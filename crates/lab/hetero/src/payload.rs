//! Real application payload for the kernels' benchmarks, profiles and tests, cut from the shared reference material
//! (`../shared/data` beside the checkout, see its `MANIFEST.md`): the caller names the folder, nothing here knows
//! where it is (no build-machine path in any binary; `flowbundle hetero profile --payload-dir`).
//!
//! The corpus is the L7-filter protocol samples (`l7-protocols/testing/data`, first packets of real sessions) and the
//! reassembled TCP streams of the PcapPlusPlus captures (`reassembly/*_output.txt`, `*reassembled.txt`),
//! concatenated in name order so every run cuts the same payloads.

use std::path::{Path, PathBuf};

/// The folders under the data root the corpus is read from.
pub const CORPUS_DIRS: [&str; 2] = ["l7-protocols/testing/data", "reassembly"];

/// The corpus under `root` (the shared data folder), concatenated in a fixed order; empty when none of it is there.
pub fn real_corpus(root: &Path) -> Vec<u8> {
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in CORPUS_DIRS {
        let Ok(rd) = std::fs::read_dir(root.join(sub)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let wanted = sub.starts_with("l7")
                || (name.ends_with("_output.txt") || name.ends_with("reassembled.txt"));
            if p.is_file() && wanted {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut corpus = Vec::new();
    for f in files {
        if let Ok(b) = std::fs::read(&f) {
            corpus.extend_from_slice(&b);
        }
    }
    corpus
}

/// Up to `max` payloads of exactly `size` bytes cut from [`real_corpus`] of `root` (wrapping around it when it is
/// short); empty when the corpus is.
pub fn real_payloads(root: &Path, size: usize, max: usize) -> Vec<Vec<u8>> {
    cut_payloads(&real_corpus(root), size, max)
}

/// Up to `max` payloads of exactly `size` bytes cut from `corpus` in order, wrapping around it.
pub fn cut_payloads(corpus: &[u8], size: usize, max: usize) -> Vec<Vec<u8>> {
    if corpus.is_empty() || size == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(max);
    let mut pos = 0usize;
    for _ in 0..max {
        let mut p = Vec::with_capacity(size);
        while p.len() < size {
            let take = (size - p.len()).min(corpus.len() - pos);
            p.extend_from_slice(&corpus[pos..pos + take]);
            pos = (pos + take) % corpus.len();
        }
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_wrap_around_a_short_corpus() {
        let p = cut_payloads(b"abcde", 3, 3);
        assert_eq!(p, vec![b"abc".to_vec(), b"dea".to_vec(), b"bcd".to_vec()]);
        assert!(cut_payloads(b"", 3, 3).is_empty());
        assert!(cut_payloads(b"abc", 0, 3).is_empty());
    }
}
