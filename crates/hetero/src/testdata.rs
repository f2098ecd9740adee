//! Locating the shared test material (`../shared/data` beside the checkout) for tests, benches and CLI defaults.
//!
//! Nothing is copied into the repository: every helper returns `None` or an empty list, after printing why, when the
//! material is absent, so callers skip instead of failing.

use std::path::{Path, PathBuf};

/// The shared data folder: `$FLOWBUNDLE_DATA` if set, else `../shared/data` relative to the workspace root.
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FLOWBUNDLE_DATA") {
        return PathBuf::from(d);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// Path of the 10,000-pattern content set.
pub fn content_10k_path() -> PathBuf {
    data_dir().join("rules/content-10k.hex")
}

/// The 10k content patterns, or `None` (with a message) when the file is missing.
pub fn content_10k() -> Option<Vec<Vec<u8>>> {
    let path = content_10k_path();
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(crate::dfa::parse_hex_patterns(&text).0),
        Err(e) => {
            eprintln!("skipping: {} not readable ({e})", path.display());
            None
        }
    }
}

/// Real application payload bytes: the L7-filter protocol samples (first packets of real sessions) and the
/// reassembled TCP streams of the PcapPlusPlus captures, concatenated in a fixed (sorted) order.
pub fn real_corpus() -> Vec<u8> {
    let dir = data_dir();
    let mut files: Vec<PathBuf> = Vec::new();
    for sub in ["l7-protocols/testing/data", "reassembly"] {
        let Ok(rd) = std::fs::read_dir(dir.join(sub)) else {
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
    if corpus.is_empty() {
        eprintln!("skipping: no real payload under {}", dir.display());
    }
    corpus
}

/// Up to `max` payloads of exactly `size` bytes cut from [`real_corpus`] (wrapping around it when it is short).
pub fn real_payloads(size: usize, max: usize) -> Vec<Vec<u8>> {
    let corpus = real_corpus();
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
