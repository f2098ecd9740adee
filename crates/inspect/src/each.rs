//! # Every worker reads the input: a streaming run without a dispatcher
//!
//! Under a policy that places each packet by a fixed function of its flow (`dh`: the CRC-16 of the flow identifier
//! modulo the workers, [`Engine::owns_bundle`]), a worker needs nobody to tell it which packets are its own: it can
//! read the whole input itself, run every packet through its own pre-scheduling stage (decode, defragment), and
//! inspect only those filed under its bundles ([`Engine::process_owned`]), skipping the rest. That is the
//! single-threaded loop with a filter, on each worker. Nothing crosses between cores but the output: no reader
//! thread (on two cores the reader and two workers are three busy threads time-sharing them), no packet bytes or
//! decoded view read on one core and inspected on another, no queue, no wake-ups. What it costs: each worker reads
//! and decodes the packets it skips (a few percent of inspecting them), and defragments every datagram.
//!
//! Output in input order, as the other streaming runs: each inspected packet's output is sent tagged with its
//! position, each worker's share of a sweep tagged between the packet it follows and the next one, and the
//! collector ([`crate::EventMerge`]) releases everything below the *watermark*, the least position every worker
//! has published ([`EachReads::watermark`]). Sweeps need no quiescent point: the single-threaded loop's sweep
//! positions depend only on the input ([`crate::SweepClock`]), which every worker reads whole, so each sweeps its
//! own shards ([`Engine::owned_shards`]) when it reaches one, and the collector merges the shares by key as it
//! merges the reader's broadcast sweeps. The end of the input likewise: each worker ends its own flows at the
//! single-threaded run's end time, which each knows from the packets it read.
//!
//! Memory stays bounded whatever the input's length: a worker that is more than [`EachReads::window`] packets ahead
//! of the slowest waits, so the output the collector holds back covers at most that many packets.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use flowbundle_ingest::{CaptureReader, ReadStats, Timeline};

use crate::engine::{Engine, WorkerCtx};
use crate::stream::{Emitter, EventSender, Renderer, Run, StatsBoard};
use crate::sweep::SweepClock;
use flowbundle_decode::prestage::Prestage;

/// Packets a worker reads between two publications of its position (and two looks at the others').
const PUBLISH_EVERY: u64 = 64;

/// A position published on its own cache line (each worker writes its own, the collector and the other workers read).
#[repr(align(128))]
struct Position(AtomicU64);

/// A streaming run in which every worker reads the input (see the module documentation).
pub struct EachReads<'a> {
    engine: &'a Engine,
    files: &'a [PathBuf],
    workers: usize,
    first_position: u64,
    out: Emitter<'a>,
    board: Option<&'a StatsBoard>,
    stop: &'a AtomicBool,
    /// Per worker: the packets it has read and sent the output of (see [`EachReads::watermark`]); `u64::MAX` once
    /// it has sent everything.
    done: Box<[Position]>,
    /// Per worker: the sweeps it has done its share of.
    swept: Box<[Position]>,
    window: u64,
}

/// What one worker of an [`EachReads`] run leaves: its context (its counters belong in [`Engine::finish`]), its
/// pre-scheduling stage, and what it read (every worker reads the same).
pub struct EachWorker {
    pub ctx: WorkerCtx,
    pub prestage: Prestage,
    /// Packets read from the inputs (fragments absorbed by the defragmenter included).
    pub packets_read: u64,
    /// One line per input that could not be opened or read to its end.
    pub errors: Vec<String>,
    /// One line per input that starts before the previous one ended.
    pub warnings: Vec<String>,
    /// Each input read, with its reader's counters.
    pub inputs_read: Vec<(PathBuf, ReadStats)>,
    /// The earliest and latest capture times read.
    pub capture_span: Option<(u64, u64)>,
}

impl<'a> EachReads<'a> {
    /// A run of `workers` workers over `files`, inspecting with `engine`, each sending its output to `events`
    /// (rendered with `render` when given, as [`crate::ArenaSource::with_renderer`]); a worker waits when it is more
    /// than `window` packets ahead of the slowest. Reading stops when `stop` is raised (the output failed, or a
    /// thread of the run died).
    pub fn new(
        engine: &'a Engine,
        files: &'a [PathBuf],
        workers: usize,
        events: EventSender,
        render: Option<&'a Renderer>,
        stop: &'a AtomicBool,
        window: u64,
    ) -> Self {
        let workers = workers.max(1);
        EachReads {
            engine,
            files,
            workers,
            first_position: 0,
            out: Emitter { events, render },
            board: None,
            stop,
            done: (0..workers).map(|_| Position(AtomicU64::new(0))).collect(),
            swept: (0..workers).map(|_| Position(AtomicU64::new(0))).collect(),
            window: window.max(PUBLISH_EVERY),
        }
    }

    /// Numbers the packets read from `n` on instead of 0 (the engine's packet numbers: EVE `pcap_cnt`, flow ids).
    pub fn numbered_from(mut self, n: u64) -> Self {
        self.first_position = n;
        self
    }

    /// Publishes each worker's counters on `board` every [`StatsBoard::EVERY`] packets it inspects.
    pub fn with_stats_board(mut self, board: &'a StatsBoard) -> Self {
        self.board = Some(board);
        self
    }

    /// Most packets a worker may be ahead of the slowest.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// The least packet count every worker has published (`u64::MAX` once all are done).
    fn slowest(&self) -> u64 {
        self.done
            .iter()
            .map(|d| d.0.load(Acquire))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Packets every worker has read (what a progress display shows).
    pub fn packets_read(&self) -> u64 {
        match self.slowest() {
            u64::MAX => self
                .done
                .iter()
                .map(|d| d.0.load(Acquire))
                .filter(|&n| n != u64::MAX)
                .max()
                .unwrap_or(0),
            n => n,
        }
    }

    /// The collector's watermark: every output tagged below it has been sent. Read it before draining the channel
    /// (as the arena's watermark, see [`crate::stream`]). Packet `i`'s output is tagged `2i + 1`, the sweep after it
    /// `2i + 2`; a worker that has published `k` has sent every packet's output below `k`, but maybe not yet its
    /// share of the sweep after packet `k - 1` (it publishes `k` before that sweep, to say it got there).
    pub fn watermark(&self) -> u64 {
        self.slowest().saturating_mul(2)
    }

    /// Worker `w`'s run: reads every input, inspects its own share, sweeps its own shards, and at the end ends its
    /// own flows. Call it once per worker, on that worker's thread, all at once.
    pub fn run_worker(&self, w: usize) -> EachWorker {
        let (engine, n) = (self.engine, self.workers);
        let mut ctx = engine.new_ctx();
        ctx.set_worker(w);
        let mut pre = Prestage::new(engine.config());
        let mut clock = SweepClock::new(engine.config().sweep);
        let mut timeline = Timeline::default();
        let mut report = EachWorker {
            ctx: engine.new_ctx(),
            prestage: Prestage::new(engine.config()),
            packets_read: 0,
            errors: Vec::new(),
            warnings: Vec::new(),
            inputs_read: Vec::new(),
            capture_span: None,
        };
        // The single-threaded run's latest capture time (its end of input), which every worker learns alike.
        let mut latest = 0u64;
        let mut i = 0u64;
        let mut sweeps = 0u64;
        let owns = |b: u16| Engine::owns_bundle(w, n, b);
        'inputs: for path in self.files {
            let mut reader = match CaptureReader::open(path) {
                Ok(r) => r,
                Err(e) => {
                    report.errors.push(format!("{}: {e}", path.display()));
                    continue;
                }
            };
            timeline.input(path);
            loop {
                if self.stop.load(Relaxed) {
                    break 'inputs;
                }
                let rec = match reader.next_packet() {
                    Ok(Some(r)) => r,
                    Ok(None) => break,
                    Err(e) => {
                        report.errors.push(format!(
                            "{}: {e} (stopping this input here)",
                            path.display()
                        ));
                        break;
                    }
                };
                if let Some(warning) = timeline.packet(rec.ts_ns) {
                    report.warnings.push(warning);
                }
                let num = self.first_position + i;
                // SAFETY: this worker alone inspects packets of the bundles it owns (`owns` partitions them among the
                // workers), so it alone uses their shards.
                let mine = unsafe {
                    engine.process_owned(&mut ctx, &mut pre, num, &rec, owns, &mut latest)
                };
                if mine.is_some() {
                    self.out.send(2 * i + 1, &mut ctx);
                    if let Some(b) = self.board {
                        ctx.handled += 1;
                        if ctx.handled.is_multiple_of(StatsBoard::EVERY) {
                            b.publish(&ctx);
                        }
                    }
                }
                if let Some(now) = clock.packet(rec.ts_ns) {
                    // As in the reader's sweeps: every packet before the sweep inspected first, none after it until
                    // every share is swept (the flows it ends look up what the packets before it announced, see
                    // `crate::expect`, and nothing after).
                    self.done[w].0.store(i + 1, Release);
                    if !self.wait_until(|| self.slowest() > i) {
                        break 'inputs;
                    }
                    let mut run = Run::default();
                    let render = self.out.render;
                    // SAFETY: as above; its own shards only.
                    unsafe {
                        engine.expire_shards(
                            &mut ctx,
                            now,
                            Engine::owned_shards(w, n),
                            |ctx, (d, id)| run.segment((d, id, 0), ctx, render),
                        )
                    };
                    self.out.send_run(2 * i + 2, run);
                    if w == 0 {
                        // One sweep, however many shares: counted once.
                        ctx.add_sweep();
                    }
                    sweeps += 1;
                    self.swept[w].0.store(sweeps, Release);
                    if !self.wait_until(|| self.swept.iter().all(|s| s.0.load(Acquire) >= sweeps)) {
                        break 'inputs;
                    }
                }
                i += 1;
                if i.is_multiple_of(PUBLISH_EVERY) {
                    self.done[w].0.store(i, Release);
                    self.keep_within_window(i);
                }
            }
            report.inputs_read.push((path.clone(), *reader.stats()));
        }
        self.done[w].0.store(i, Release);
        // The end of the input once every worker has read it all (as the reader's flush waits for the packets in
        // flight): the flows ended look up what every packet announced.
        if self.wait_until(|| self.slowest() >= i) {
            // SAFETY: as above; its own shards only.
            unsafe { engine.end_shards(&mut ctx, latest, Engine::owned_shards(w, n)) };
            let mut evs = Vec::new();
            ctx.take_events(&mut evs);
            crate::event::sort_events(&mut evs);
            let mut run = Run::default();
            for e in evs {
                let (ts, id, seq) = e.sort_key();
                run.event((ts, id, u64::from(seq)), e, self.out.render);
            }
            self.out.send_run(2 * i + 2, run);
        }
        self.done[w].0.store(u64::MAX, Release);
        report.ctx = ctx;
        report.prestage = pre;
        report.packets_read = i;
        report.capture_span = timeline.span();
        report
    }

    /// Waits while this worker, at `i` packets, is more than the window ahead of the slowest.
    fn keep_within_window(&self, i: u64) {
        self.wait_until(|| i <= self.slowest().saturating_add(self.window));
    }

    /// Waits (yields, then sleeps) until `ready` holds: `true`, or `false` when reading stopped meanwhile. Only
    /// waits on the others' progress, and the slowest worker never waits for it, so no wait here lasts for ever.
    fn wait_until(&self, ready: impl Fn() -> bool) -> bool {
        let mut spins = 0u32;
        while !ready() {
            if self.stop.load(Relaxed) {
                return false;
            }
            spins += 1;
            if spins < 16 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
        true
    }
}
