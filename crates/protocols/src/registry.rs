//! The set of built-in detectors and the per-flow classifier that probes them.

use crate::Detector;

/// How many leading stream bytes per direction a detector may see in [`crate::ProbeCtx::prefix`].
pub const PROBE_PREFIX: usize = 2048;

/// Every built-in detector, in probing order (cheap, specific detectors first).
pub fn detectors() -> Vec<Box<dyn Detector>> {
    vec![]
}
