//! Helpers shared by the engine's integration tests: paths to the shared test data, and the single-threaded run.
#![allow(dead_code)]

use std::path::PathBuf;

use flowbundle_ingest::CaptureReader;
use flowbundle_inspect::{Engine, EngineConfig, Finished, Prestage};

/// Runs captures through the single-threaded path (streaming reader, prestage, engine) and finishes.
pub fn run_serial(engine: &mut Engine, paths: &[PathBuf]) -> Finished {
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    let mut n = 0u64;
    for p in paths {
        let Ok(mut r) = CaptureReader::open(p) else {
            continue;
        };
        while let Ok(Some(rec)) = r.next_packet() {
            engine.process_serial(&mut ctx, &mut pre, n, &rec);
            n += 1;
        }
    }
    engine.finish([ctx])
}

/// A default engine (no signatures, no rules).
pub fn engine() -> Engine {
    Engine::new(EngineConfig::default(), None, None)
}
