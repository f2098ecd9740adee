//! Traces for the simulator: captures prepared exactly as `flowbundle bench` prepares them, and the ANCS'10 profile
//! shapes (`dominant`, `many`, `balanced`) generated in memory by the trace tools' synthesizer
//! (`flowbundle_trace::synth`, the same traces `flowbundle bench --synth` replays).

use crate::input::SimInput;
use flowbundle_lab_core::{PrepOptions, Prepared, prepare, prepare_files};
use flowbundle_trace::synth::{SynthConfig, generate_trace};

/// Profile names [`profile`] knows.
pub const PROFILES: &[&str] = &SynthConfig::PROFILES;

/// Why a trace could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("unknown profile `{0}` (dominant, many, balanced)")]
    Profile(String),
    #[error("generating the trace: {0}")]
    Synth(String),
    #[error(transparent)]
    Ingest(#[from] flowbundle_ingest::Error),
}

/// A generated trace of about `packets` packets with one of the ANCS'10 Table 1 shapes (the profile scaled down,
/// connections in proportion), prepared as the bench prepares it.
pub fn profile(name: &str, packets: u64, seed: u64) -> Result<SimInput, TraceError> {
    Ok(SimInput::from_prepared(&prepared(name, packets, seed)?))
}

/// The same generated trace as [`profile`], as the bench's [`Prepared`] (to measure it with
/// `flowbundle_lab_core::sweep` and simulate the very same descriptors, as the calibration example does).
pub fn prepared(name: &str, packets: u64, seed: u64) -> Result<Prepared, TraceError> {
    let mut cfg = SynthConfig::profile(name)
        .ok_or_else(|| TraceError::Profile(name.to_string()))?
        .with_packets(packets);
    cfg.seed = seed;
    let (trace, _) = generate_trace(&cfg).map_err(|e| TraceError::Synth(e.to_string()))?;
    Ok(prepare(
        vec![(format!("synthetic-{name}"), trace)],
        &PrepOptions::default(),
    ))
}

/// Capture files (merged by time when several), at most `limit` packets.
pub fn files(paths: &[std::path::PathBuf], limit: Option<usize>) -> Result<SimInput, TraceError> {
    let opts = PrepOptions {
        limit: limit.unwrap_or(flowbundle_lab_core::prep::MAX_PACKETS),
        ..PrepOptions::default()
    };
    Ok(SimInput::from_prepared(&prepare_files(paths, &opts)?))
}
