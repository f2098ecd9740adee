//! Helpers shared by the engine's integration tests: the single-threaded run, the run with every worker reading, and
//! the frames the tests' own captures are made of.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use flowbundle_ingest::CaptureReader;
use flowbundle_inspect::{
    EachReads, EachWorker, Engine, EngineConfig, Event, EventMerge, Finished, Piece, Placement,
    Prestage,
};
use flowbundle_worker::{StreamConfig, run_each};

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

/// The events, one line each, as the tests compare them.
pub fn lines(events: &[Event]) -> Vec<String> {
    events.iter().map(|e| format!("{e:?}")).collect()
}

/// `inspect FILE --threads N` with every worker reading, `placement` deciding the shares and `window` bounding how
/// far a worker runs ahead: the events in output order, and each worker's report.
pub fn every_worker_reads(
    cfg: EngineConfig,
    file: &Path,
    workers: usize,
    window: u64,
    placement: Placement,
) -> (Vec<String>, Vec<EachWorker>) {
    every_worker_reads_files(cfg, &[file.to_path_buf()], workers, window, placement, None)
}

/// [`every_worker_reads`] over several inputs, in order, with the batches of the shared read holding at most
/// `shared` bytes when given (`EachReads::sharing_at_most`).
pub fn every_worker_reads_files(
    cfg: EngineConfig,
    files: &[PathBuf],
    workers: usize,
    window: u64,
    placement: Placement,
    shared: Option<usize>,
) -> (Vec<String>, Vec<EachWorker>) {
    let engine = Engine::new(cfg, None, None);
    let (tx, mut merge) = EventMerge::new();
    let stop = AtomicBool::new(false);
    let mut each =
        EachReads::new(&engine, files, workers, tx, None, &stop, window).placed_by(placement);
    if let Some(bytes) = shared {
        each = each.sharing_at_most(bytes);
    }
    let mut out = Vec::new();
    let mut collect = |last: bool| {
        let watermark = each.watermark();
        let write = |p: Piece<'_>| {
            if let Piece::Events(evs) = p {
                out.extend(lines(evs));
            }
            Ok::<(), ()>(())
        };
        let r = if last {
            merge.release_all(write)
        } else {
            merge.release(watermark, write)
        };
        r.expect("writing");
    };
    // A worker that dies stops the others' waits, as `inspect` wires it: the run then fails with the thread's panic
    // instead of leaving the others waiting for it.
    let abandon = || stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let cfg = StreamConfig {
        pin: false,
        on_abort: Some(&abandon),
        ..StreamConfig::default()
    };
    let reports =
        run_each(workers, &|w| each.run_worker(w), &mut collect, &cfg).expect("no thread dies");
    (out, reports)
}

/// An Ethernet frame holding an IPv4 UDP packet from `src:sport` to `dst:dport` with `payload` (IP checksum set,
/// UDP checksum 0).
pub fn udp_frame(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14];
    f[0..6].copy_from_slice(&[0, 1, 2, 3, 4, 5]);
    f[6..12].copy_from_slice(&[0, 1, 2, 3, 4, 6]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(28 + payload.len() as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    flowbundle_decode::wire::ipv4::Packet::new_checked(&mut ip[..])
        .expect("an IPv4 header")
        .fill_checksum();
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}
