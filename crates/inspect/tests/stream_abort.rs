//! A streaming inspection whose worker dies is abandoned, not hung: the engine's workload, wrapped so that it
//! panics on its Nth packet, run over real captures as `flowbundle inspect --threads N` runs it (a reader filling a
//! bounded packet arena, sweeps and the end of input broadcast to the workers), under every policy with one and two
//! workers. The dead worker never frees the buffer it holds nor drains its queue, so the reader waits for a buffer or
//! a place, or for the arena to drain before a sweep; the run ends only because the runtime abandons it and its hook
//! closes the arena. Each run goes on a thread of its own, with a deadline far above its time (a harness against a
//! hang; nothing is timed).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use flowbundle_ingest::PacketArena;
use flowbundle_inspect::{
    ArenaSource, BufferDecodes, Engine, EngineConfig, EventMerge, InspectWorkload, Prestage,
    StreamOrder, StreamReader, WorkerCtx,
};
use flowbundle_scheduler::{ALL, Desc, SchedOptions, WorkerId, build};
use flowbundle_worker::{Aborted, BundleToken, Crew, Outcome, StreamConfig, Workload, run_stream};

const HANG: Duration = Duration::from_secs(120);

fn captures() -> Vec<PathBuf> {
    ["ndpi/pcap/1kxun.pcap", "ndpi/pcap/bittorrent.pcap"]
        .iter()
        .filter_map(|r| flowbundle_testsupport::data(r))
        .collect()
}

/// The engine's workload, panicking on the `at`th packet processed (over all workers) before inspecting it.
struct PanicAt<'a> {
    inner: InspectWorkload<'a>,
    at: u64,
    seen: AtomicU64,
}

impl Workload for PanicAt<'_> {
    type Local = WorkerCtx;
    fn local(&self, w: WorkerId) -> WorkerCtx {
        self.inner.local(w)
    }
    fn prepare(&self, ctx: &mut WorkerCtx, d: Desc) {
        self.inner.prepare(ctx, d)
    }
    fn process(&self, ctx: &mut WorkerCtx, d: Desc, held: &mut BundleToken) -> Outcome {
        if self.seen.fetch_add(1, Relaxed) == self.at {
            panic!("injected panic at packet {}", self.at);
        }
        self.inner.process(ctx, d, held)
    }
}

/// `flowbundle inspect FILES --threads N --scheduler POLICY`'s run, with a worker panicking at packet `at`.
fn inspect(files: Vec<PathBuf>, policy: &str, workers: usize, at: u64) -> Result<u64, Aborted> {
    let engine = Engine::new(EngineConfig::default(), None, None);
    let opts = SchedOptions {
        ph_late_claim: false,
        ..SchedOptions::default()
    };
    let sched = build(policy, workers, &opts).expect("policy");
    let arena = PacketArena::new(64);
    let (tx, _merge) = EventMerge::new();
    let decodes = BufferDecodes::new(arena.slots());
    let order = StreamOrder::new(arena.slots());
    let keeps_order = sched.shape().keeps_flow_order;
    let mut source = ArenaSource::new(&arena, tx.clone()).with_decodes(&decodes);
    let prestage = Prestage::new(engine.config()).computing(sched.hashes_read());
    let mut reader = StreamReader::new(&arena, prestage, files)
        .with_decodes(&decodes)
        .with_sweeps(&engine, tx, None);
    if !keeps_order {
        source = source.with_order(&order);
        reader = reader.with_order(&order);
    }
    let work = PanicAt {
        inner: InspectWorkload::new(&engine, sched.shape(), &source),
        at,
        seen: AtomicU64::new(0),
    };
    let close = || arena.close();
    let cfg = StreamConfig {
        pin: false,
        on_abort: Some(&close),
        ..StreamConfig::default()
    };
    let feed = |crew: &Crew<'_, WorkerCtx>| {
        let n = crew.workers();
        let broadcast = |job: &(dyn Fn(usize, usize, &mut WorkerCtx) + Sync)| {
            crew.broadcast(&|w, ctx: &mut WorkerCtx| job(w, n, ctx))
        };
        let help = || crew.help();
        reader.next_desc(Some(&broadcast), Some(&help))
    };
    run_stream(sched.as_ref(), &work, feed, &mut |_| {}, &cfg).map(|(r, _)| r.processed())
}

#[test]
fn a_worker_that_panics_abandons_a_streaming_inspection_under_every_policy() {
    let files = captures();
    if files.is_empty() {
        return;
    }
    for policy in ALL {
        for workers in [1, 2] {
            for at in [0, 1000] {
                let what = format!("{policy}, {workers} workers, panic at packet {at}");
                let (tx, rx) = std::sync::mpsc::channel();
                let files = files.clone();
                std::thread::spawn(move || {
                    let _ = tx.send(inspect(files, policy, workers, at));
                });
                let r = match rx.recv_timeout(HANG) {
                    Ok(r) => r,
                    Err(RecvTimeoutError::Timeout) => panic!("{what}: the run hangs"),
                    Err(RecvTimeoutError::Disconnected) => {
                        panic!("{what}: the run panicked instead of failing")
                    }
                };
                let e = r.expect_err(&what);
                assert!(e.thread.starts_with("worker-"), "{what}: {e}");
                assert_eq!(
                    e.message,
                    format!("injected panic at packet {at}"),
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn the_same_run_without_a_panic_inspects_every_packet() {
    // The wrapper and the hook change nothing when no thread dies: the harness itself is sound.
    let files = captures();
    if files.is_empty() {
        return;
    }
    let n = inspect(files, "lfb", 2, u64::MAX).expect("no thread dies");
    assert!(n > 1000, "{n} packets");
}
