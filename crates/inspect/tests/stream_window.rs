//! The streaming reader's window (`StreamReader::with_window`): with a worker stuck on one packet while the others go
//! on, the reader never reads more than the window ahead of the oldest packet in flight, waits for it instead, and
//! every packet is still inspected (nothing dropped, no hang). Run over real captures as `flowbundle inspect
//! --threads 2` runs them (a reader filling a bounded packet arena, sweeps and the end of input broadcast to the
//! workers), under every policy, with the reader apart and as worker 0, and with a window of one packet (each packet
//! read only once every earlier one is done). The stuck worker holds its packet until the reader has shown what the
//! test looks for (it waited for the window, or went far ahead without one), not for a fixed time, so a loaded
//! machine that starves the reader changes nothing. Each run goes on a thread of its own, with a deadline far above
//! its time (a harness against a hang; nothing is timed).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use flowbundle_ingest::PacketArena;
use flowbundle_inspect::{
    ArenaSource, BufferDecodes, Engine, EngineConfig, EventMerge, InspectWorkload, Prestage,
    StreamOrder, StreamReader, WorkerCtx,
};
use flowbundle_scheduler::{ALL, Desc, SchedOptions, WorkerId, build};
use flowbundle_worker::{BundleToken, Crew, Outcome, StreamConfig, Workload, run_stream};

const HANG: Duration = Duration::from_secs(120);

/// Longest a stuck worker holds its packet waiting for the reader to show what the test looks for (it always does
/// within milliseconds when the reader behaves): past it the worker goes on, and the test's assertion fails.
const HOLD_AT_MOST: Duration = Duration::from_secs(30);

fn captures() -> Vec<PathBuf> {
    ["ndpi/pcap/1kxun.pcap", "ndpi/pcap/bittorrent.pcap"]
        .iter()
        .filter_map(|r| flowbundle_testsupport::data(r))
        .collect()
}

/// What the stuck worker waits for before it inspects its packet.
enum Until<'a> {
    /// The reader waited for a packet in flight (its `help` was called) while the packet was held: with a window,
    /// the wait for the window. A stuck packet that the reader itself inspects (as worker 0, inside such a wait) is
    /// not held.
    ReaderWaited {
        stuck: &'a AtomicBool,
        waited: &'a AtomicBool,
        /// The reader's thread (set by its first call to the feed).
        reader: &'a std::sync::OnceLock<std::thread::ThreadId>,
    },
    /// The reader went more than this many packets ahead of the held packet.
    Ahead(&'a AtomicU64, u64),
}

/// The engine's workload, its `at`th packet (over all workers) held until `until` before it is inspected: a worker
/// stuck on one packet while the others go on.
struct StallAt<'a> {
    inner: InspectWorkload<'a>,
    at: u64,
    until: Until<'a>,
    seen: AtomicU64,
}

impl StallAt<'_> {
    fn hold(&self) {
        let since = std::time::Instant::now();
        let released = || match &self.until {
            Until::ReaderWaited { waited, .. } => waited.load(SeqCst),
            Until::Ahead(widest, n) => widest.load(Relaxed) > *n,
        };
        if let Until::ReaderWaited { stuck, reader, .. } = &self.until {
            if reader.get() == Some(&std::thread::current().id()) {
                return;
            }
            stuck.store(true, SeqCst);
        }
        while !released() && since.elapsed() < HOLD_AT_MOST {
            std::thread::sleep(Duration::from_micros(100));
        }
        if let Until::ReaderWaited { stuck, .. } = &self.until {
            stuck.store(false, SeqCst);
        }
    }
}

impl Workload for StallAt<'_> {
    type Local = WorkerCtx;
    fn local(&self, w: WorkerId) -> WorkerCtx {
        self.inner.local(w)
    }
    fn prepare(&self, ctx: &mut WorkerCtx, d: Desc) {
        self.inner.prepare(ctx, d)
    }
    fn process(&self, ctx: &mut WorkerCtx, d: Desc, held: &mut BundleToken) -> Outcome {
        if self.seen.fetch_add(1, Relaxed) == self.at {
            self.hold();
        }
        self.inner.process(ctx, d, held)
    }
}

/// What a run did: packets read, packets inspected, the widest span from the oldest packet in flight to the newest
/// read that the reader left behind it, and the times it waited for the window.
#[derive(Debug)]
struct Ran {
    read: u64,
    processed: u64,
    widest: u64,
    waits: u64,
}

/// `flowbundle inspect FILES --threads 2 --scheduler POLICY --reorder-window WINDOW`'s run (`--reader-inspects` with
/// `reader_works`), with the 200th packet held until the reader waited for it (a window narrower than the input) or
/// went more than 64 packets past it (no window).
fn inspect(files: Vec<PathBuf>, policy: &str, window: u64, reader_works: bool) -> Ran {
    let engine = Engine::new(EngineConfig::default(), None, None);
    let opts = SchedOptions {
        ph_late_claim: false,
        ..SchedOptions::default()
    };
    let sched = build(policy, 2, &opts).expect("policy");
    let arena = PacketArena::new(512);
    let (tx, _merge) = EventMerge::new();
    let decodes = BufferDecodes::new(arena.slots());
    let order = StreamOrder::new(arena.slots());
    let keeps_order = sched.shape().keeps_flow_order;
    let mut source = ArenaSource::new(&arena, tx.clone()).with_decodes(&decodes);
    let prestage = Prestage::new(engine.config()).computing(sched.hashes_read());
    let mut reader = StreamReader::new(&arena, prestage, files)
        .with_decodes(&decodes)
        .with_sweeps(&engine, tx, None)
        .with_window(window);
    if !keeps_order {
        source = source.with_order(&order);
        reader = reader.with_order(&order);
    }
    let widest = AtomicU64::new(0);
    let (stuck, waited) = (AtomicBool::new(false), AtomicBool::new(false));
    let reader_thread = std::sync::OnceLock::new();
    let until = if window < u64::MAX / 4 {
        Until::ReaderWaited {
            stuck: &stuck,
            waited: &waited,
            reader: &reader_thread,
        }
    } else {
        Until::Ahead(&widest, 64)
    };
    let work = StallAt {
        inner: InspectWorkload::new(&engine, sched.shape(), &source),
        at: 200,
        until,
        seen: AtomicU64::new(0),
    };
    let cfg = StreamConfig {
        pin: false,
        reader_works,
        ..StreamConfig::default()
    };
    let feed = |crew: &Crew<'_, WorkerCtx>| {
        reader_thread.get_or_init(|| std::thread::current().id());
        let n = crew.workers();
        let broadcast = |job: &(dyn Fn(usize, usize, &mut WorkerCtx) + Sync)| {
            crew.broadcast(&|w, ctx: &mut WorkerCtx| job(w, n, ctx))
        };
        // The reader asks for help only while it waits for packets in flight (the window, a buffer, a drain).
        let help = || {
            if stuck.load(SeqCst) {
                waited.store(true, SeqCst);
            }
            crew.help()
        };
        let d = reader.next_desc(Some(&broadcast), Some(&help));
        // The packet just read is in flight: the span from the oldest to it.
        widest.fetch_max(arena.filled() - arena.oldest_in_flight(), Relaxed);
        d
    };
    let (report, _) =
        run_stream(sched.as_ref(), &work, feed, &mut |_| {}, &cfg).expect("no thread dies");
    Ran {
        read: reader.packets_read,
        processed: report.processed(),
        widest: widest.into_inner(),
        waits: reader.window_waits,
    }
}

/// Runs `inspect` on a thread of its own, failing when it hangs.
fn run(files: &[PathBuf], policy: &'static str, window: u64, reader_works: bool) -> Ran {
    let (tx, rx) = std::sync::mpsc::channel();
    let files = files.to_vec();
    std::thread::spawn(move || {
        let _ = tx.send(inspect(files, policy, window, reader_works));
    });
    match rx.recv_timeout(HANG) {
        Ok(r) => r,
        Err(RecvTimeoutError::Timeout) => {
            panic!("{policy}, window {window}, reader inspects {reader_works}: the run hangs")
        }
        Err(RecvTimeoutError::Disconnected) => {
            panic!("{policy}, window {window}, reader inspects {reader_works}: the run panicked")
        }
    }
}

#[test]
fn the_reader_stays_within_its_window_of_a_stuck_worker_and_loses_nothing() {
    let files = captures();
    if files.is_empty() {
        return;
    }
    for &policy in ALL {
        for reader_works in [false, true] {
            for window in [1, 64] {
                let r = run(&files, policy, window, reader_works);
                let what =
                    format!("{policy}, window {window}, reader inspects {reader_works}: {r:?}");
                assert!(r.read > 1000, "{what}");
                // Every packet read is inspected: the fragments the defragmenter absorbed are dispatched too.
                assert_eq!(r.processed, r.read, "{what}");
                assert!(r.widest <= window, "{what}");
                assert!(r.waits > 0, "{what}");
            }
        }
    }
}

#[test]
fn without_a_window_a_stuck_worker_leaves_the_reader_far_ahead() {
    // The check above can fail: with the window as wide as the input, the reader goes past 64 packets ahead of the
    // stuck one under a policy that gives new flows to the free worker.
    let files = captures();
    if files.is_empty() {
        return;
    }
    let r = run(&files, "lfb", u64::MAX / 2, false);
    assert_eq!(r.processed, r.read, "{r:?}");
    assert!(r.widest > 64 && r.waits == 0, "{r:?}");
}
