//! Helpers shared by the integration tests: locating `../shared/data` and skipping when it is absent.
#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared/data/<rel>` seen from the repository root, or `None` (with a message) when the test material is absent.
pub fn data(rel: &str) -> Option<PathBuf> {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")).join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipping: test material {} is absent", p.display());
        None
    }
}
