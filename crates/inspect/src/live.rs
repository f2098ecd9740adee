//! # Live input for the streaming runtime
//!
//! [`LiveReader`] is the reader thread's side of a run on an interface, as [`crate::StreamReader`] is for files: it
//! takes frames from a [`LiveSource`] (one AF_PACKET ring, several rings of a fanout group, or libpcap), stages each
//! one exactly as a file's packet is staged (the same arena buffer, pre-scheduling stage, decoded view and
//! flow-order link), and returns its descriptor for the runtime to dispatch. It stops at the caller's stop flag
//! (raised by a signal, see [`stop_on_termination`]), after `--count` packets or at the `--seconds` deadline; a quiet
//! link costs one wait of at most 100 ms between looks at those.
//!
//! Two ways to spread the traffic over workers:
//! * **one ring, flowbundle's scheduler decides**: the descriptor keeps flowbundle's hashes and any policy applies;
//! * **one ring per worker, the kernel decides** ([`LiveReader::kernel_spreads`]): the descriptor's `rss` field is
//!   set to the ring the kernel put the frame in, and the runtime's `rss` policy with a fixed indirection table
//!   (bucket `k` → worker `k mod N`) sends ring `k` to worker `k`: flowbundle's own hash decides nothing. With
//!   `PACKET_FANOUT_HASH` both directions of a flow share a ring, so a flow's state lives on one worker.
//!
//! When every arena buffer is in use the reader either waits (the default: the kernel's ring is then the queue, and
//! what overflows it the kernel counts in `capture.kernel_drops`) or drops the frame and counts it in
//! [`LiveReader::queue_full`], as a sensor that must never stall its capture would.
//!
//! Between two frames the reader also does what needs every worker idle, at a *quiescent point*: it waits until
//! every packet it dispatched has been inspected (the arena drains: at most `--packet-buffers` packets, well under a
//! millisecond of work at the rates this sensor takes) and then
//! * sweeps idle flows ([`LiveReader::with_sweeps`], the file reader's [`crate::sweep`], at the same packet positions
//!   as the single-threaded live loop);
//! * applies a rule reload ([`LiveReader::with_reloads`]): new signature and rule sets, loaded by another thread
//!   while packets flow, become the engine's ([`crate::Engine::reload`]) before the next frame is dispatched, so every
//!   packet read before the reload is inspected with the old sets and every packet after it with the new ones,
//!   whatever the thread count; [`Reloads::take_applied`] says at which packet (its sequence number), so the
//!   collector can switch what depends on the rule set (thresholds) at exactly that point of the event stream.
//!
//! [`signals`] turns SIGINT/SIGTERM into a stop flag and SIGHUP/SIGUSR2 into counters the caller polls. A stop
//! does not leave behind what the kernel already captured ([`Drain`]): the frames waiting in the ring from before the
//! stop are still read and inspected, however far the sensor lagged behind its link.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use flowbundle_ingest::{LiveSource, PacketArena};

use flowbundle_types::Desc;

use crate::Prestage;
use crate::stream::{BufferDecodes, Renderer, Stager, StreamOrder, SweepReport, Sweeper};

/// What the reader does with a frame when every packet buffer is in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFull {
    /// Wait for a buffer (the kernel's ring absorbs the burst, and counts what overflows it).
    Wait,
    /// Drop the frame, counted in [`LiveReader::queue_full`] (an inline sensor's *fail-closed*).
    Drop,
    /// Inline only: forward the frame uninspected, counted in [`InlineReport::fail_open`] (*fail-open*).
    Forward,
}

/// The end of a live capture at a stop (SIGINT/SIGTERM): the frames the kernel captured before the stop are still
/// read, so what was on the link until the signal is inspected whether or not the sensor kept up with it (its ring
/// holds what it has not read yet). The read ends at the first frame captured after the stop, or when the capture
/// has nothing more within its wait (at most 100 ms, longer than a ring block's retire timeout: a block that was
/// still filling at the stop is handed over meanwhile). Used by the reader thread and the single-threaded loop.
#[derive(Debug, Default)]
pub struct Drain {
    /// Wall-clock time of the stop, nanoseconds since the epoch (the clock of the frames' timestamps).
    at_ns: Option<u64>,
}

impl Drain {
    /// Before each read: the first time `stop` is seen raised, notes the time.
    pub fn note(&mut self, stop: &AtomicBool) {
        if self.at_ns.is_none() && stop.load(Ordering::Relaxed) {
            self.at_ns = Some(now_ns());
        }
    }

    /// True once the stop was seen: a read that finds nothing ends the capture.
    pub fn draining(&self) -> bool {
        self.at_ns.is_some()
    }

    /// Whether a frame captured at `ts_ns` is still read: `false` for one captured after the stop (the capture ends
    /// there, the frame not inspected).
    pub fn keeps(&self, ts_ns: u64) -> bool {
        self.at_ns.is_none_or(|at| ts_ns <= at)
    }
}

/// The reader thread's side of a live run. See the module documentation.
pub struct LiveReader<'a> {
    stager: Stager<'a>,
    source: &'a mut LiveSource,
    stop: &'a AtomicBool,
    limit: u64,
    deadline: Option<Instant>,
    on_full: OnFull,
    kernel_spreads: bool,
    inline: Option<&'a Inline>,
    timeline: flowbundle_ingest::Timeline,
    sweeper: Option<Sweeper<'a>>,
    reloads: Option<(&'a crate::Engine, &'a Reloads)>,
    drain: Drain,
    /// Frames taken from the capture (dropped ones included).
    pub packets_read: u64,
    /// Frames dropped because every packet buffer was in use ([`OnFull::Drop`]).
    pub queue_full: u64,
    /// The capture error that ended the run, if one did.
    pub error: Option<String>,
}

impl<'a> LiveReader<'a> {
    /// Reads `source` into `arena` through `prestage` until `stop` is raised (and what was captured before it read,
    /// see [`Drain`]).
    pub fn new(
        arena: &'a PacketArena,
        prestage: Prestage,
        source: &'a mut LiveSource,
        stop: &'a AtomicBool,
    ) -> Self {
        LiveReader {
            stager: Stager::new(arena, prestage),
            source,
            stop,
            limit: u64::MAX,
            deadline: None,
            on_full: OnFull::Wait,
            kernel_spreads: false,
            inline: None,
            timeline: flowbundle_ingest::Timeline::default(),
            sweeper: None,
            reloads: None,
            drain: Drain::default(),
            packets_read: 0,
            queue_full: 0,
            error: None,
        }
    }

    /// Stops after `n` frames.
    pub fn count(mut self, n: Option<u64>) -> Self {
        self.limit = n.unwrap_or(u64::MAX);
        self
    }

    /// Stops at `deadline`.
    pub fn until(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// What to do when every packet buffer is in use.
    pub fn on_full(mut self, on_full: OnFull) -> Self {
        self.on_full = on_full;
        self
    }

    /// The kernel's fanout decides the worker: each descriptor's `rss` is the ring its frame came from (see the
    /// module documentation).
    pub fn kernel_spreads(mut self) -> Self {
        self.kernel_spreads = true;
        self
    }

    /// An inline run: [`OnFull::Forward`] forwards through `inline`.
    pub fn with_inline(mut self, inline: &'a Inline) -> Self {
        self.inline = Some(inline);
        self
    }

    /// See [`crate::StreamReader::with_order`].
    pub fn with_order(mut self, order: &'a StreamOrder) -> Self {
        self.stager.with_order(order);
        self
    }

    /// See [`crate::StreamReader::with_decodes`].
    pub fn with_decodes(mut self, decodes: &'a BufferDecodes) -> Self {
        self.stager.with_decodes(decodes);
        self
    }

    /// Sweeps idle flows out of `engine`'s table as [`crate::StreamReader::with_sweeps`] does (packet timestamps are
    /// the wall clock at capture, so the sweeps follow real time while traffic flows).
    pub fn with_sweeps(
        mut self,
        engine: &'a crate::Engine,
        events: crate::stream::EventSender,
        render: Option<&'a Renderer>,
    ) -> Self {
        self.sweeper = Some(Sweeper::new(engine, events, render));
        self
    }

    /// See [`crate::StreamReader::take_sweeps`].
    pub fn take_sweeps(&mut self) -> Option<(crate::WorkerCtx, SweepReport)> {
        self.sweeper.take().map(Sweeper::finish)
    }

    /// Applies the rule reloads offered to `reloads` to `engine` (the one the workers inspect with) at quiescent
    /// points (see the module documentation).
    pub fn with_reloads(mut self, engine: &'a crate::Engine, reloads: &'a Reloads) -> Self {
        self.reloads = Some((engine, reloads));
        self
    }

    /// Between two frames: the sweep due and the reload offered, if any.
    fn quiescent_work(&mut self) {
        if let Some(s) = self.sweeper.as_mut() {
            s.run_due(self.stager.arena);
        }
        if let Some((engine, reloads)) = self.reloads
            && reloads.ready.load(Ordering::Acquire)
        {
            let t0 = Instant::now();
            if !crate::stream::drain(self.stager.arena) {
                // The run is being abandoned (the arena was closed): nothing to apply the sets to.
                return;
            }
            let drain_ns = t0.elapsed().as_nanos() as u64;
            // Every packet dispatched has been inspected, and the next is dispatched after the new sets are the
            // engine's: the workers adopt them at that packet (see `Engine::reload`).
            reloads.apply(engine, self.stager.arena.filled(), drain_ns);
        }
    }

    /// The earliest and latest capture times read.
    pub fn capture_span(&self) -> Option<(u64, u64)> {
        self.timeline.span()
    }

    /// The capture, for its counters after the run.
    pub fn source(&mut self) -> &mut LiveSource {
        self.source
    }

    /// The pre-scheduling stage, given back after the run.
    pub fn into_prestage(self) -> Prestage {
        self.stager.prestage
    }

    /// The next descriptor to dispatch, or `None` once the run is to stop.
    pub fn next_desc(&mut self) -> Option<Desc> {
        loop {
            self.quiescent_work();
            self.drain.note(self.stop);
            if self.packets_read >= self.limit || self.deadline.is_some_and(|d| Instant::now() >= d)
            {
                return None;
            }
            let (ring, rec) = match self.source.next_packet() {
                Ok(Some(p)) => p,
                // Stopped, and nothing captured before the stop is left.
                Ok(None) if self.drain.draining() => return None,
                Ok(None) => continue,
                Err(e) => {
                    self.error = Some(e.to_string());
                    return None;
                }
            };
            if !self.drain.keeps(rec.ts_ns) {
                return None;
            }
            let position = self.packets_read;
            self.packets_read += 1;
            // Live timestamps come from one clock; the timeline only keeps the span here.
            let _ = self.timeline.packet(rec.ts_ns);
            if let Some(s) = self.sweeper.as_mut() {
                s.packet(rec.ts_ns);
            }
            let slot = match self.on_full {
                // `None`: the arena was closed, the run is being abandoned.
                OnFull::Wait => self.stager.arena.acquire()?,
                OnFull::Drop | OnFull::Forward => match self.stager.arena.try_acquire() {
                    Some(s) => s,
                    None => {
                        self.queue_full += 1;
                        if self.on_full == OnFull::Forward
                            && let Some(inline) = self.inline
                        {
                            inline.bypass(&rec);
                        }
                        continue;
                    }
                },
            };
            let staged = self.stager.stage(slot, &rec, position);
            if let Some(inline) = self.inline {
                match staged {
                    // A fragment the defragmenter kept: it goes on now (see `Inline`); when dispatched, it is only
                    // inspected.
                    None => inline.pass_fragment(&rec),
                    Some(_) if self.stager.absorbed() => inline.pass_fragment(&rec),
                    // The fragment that completed a datagram: the datagram is inspected, this frame forwarded.
                    Some(d) => {
                        if let Some(r) = self.stager.arena.record(d.id)
                            && (r.link_type != rec.link_type || r.data.len() != rec.data.len())
                        {
                            inline.keep_original(d.id, rec.data);
                        }
                    }
                }
            }
            if let Some(mut d) = staged {
                if self.kernel_spreads {
                    d.rss = ring as u32;
                }
                return Some(d);
            }
        }
    }
}

/// The signature and rule sets of a reload: loaded by one thread, applied by the live reader (see the module
/// documentation), or by whoever owns the engine alone.
pub type ReloadSets = (
    Option<Arc<crate::signatures::SignatureSet>>,
    Option<Arc<crate::rules::RuleSet>>,
);

/// A reload the reader applied: the engine's new epoch, and the sequence number of the first packet inspected with
/// it (every earlier packet was inspected with the sets before).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    pub epoch: u64,
    pub seq: u64,
    /// How long the reader waited for the packets in flight before applying it (ns).
    pub drain_ns: u64,
}

/// Reloads on their way from the thread that loaded them to the live reader that applies them, and back as
/// [`Applied`] to the thread that writes the events. A reload offered while another waits replaces it (the later
/// files are what the operator wants).
#[derive(Default)]
pub struct Reloads {
    ready: AtomicBool,
    next: Mutex<Option<ReloadSets>>,
    applied: Mutex<Vec<Applied>>,
}

impl Reloads {
    /// Offers new sets to the reader.
    pub fn offer(&self, sets: ReloadSets) {
        *self.next.lock().unwrap_or_else(|e| e.into_inner()) = Some(sets);
        self.ready.store(true, Ordering::Release);
    }

    /// Whether sets were offered and not applied yet.
    pub fn pending(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// The reloads applied since the last call, oldest first.
    pub fn take_applied(&self) -> Vec<Applied> {
        std::mem::take(&mut *self.applied.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Makes the offered sets `engine`'s, the first packet to meet them being `seq`. The caller guarantees the
    /// ordering (see [`LiveReader::with_reloads`]).
    fn apply(&self, engine: &crate::Engine, seq: u64, drain_ns: u64) {
        let sets = self.next.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.ready.store(false, Ordering::Release);
        if let Some((signatures, rules)) = sets {
            let epoch = engine.reload(signatures, rules);
            self.applied
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Applied {
                    epoch,
                    seq,
                    drain_ns,
                });
        }
    }
}

/// Receive-to-send latencies, in a log-linear histogram of atomics (16 sub-buckets per power of two, so a
/// quantile is within 1/16 of the true value) that every worker records into without a lock.
pub struct LatencyHistogram {
    buckets: Box<[AtomicU64]>,
    max: AtomicU64,
}

const SUB_BITS: u32 = 4;

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            buckets: (0..(64 << SUB_BITS)).map(|_| AtomicU64::new(0)).collect(),
            max: AtomicU64::new(0),
        }
    }
}

impl LatencyHistogram {
    fn index(ns: u64) -> usize {
        if ns < 1 << SUB_BITS {
            return ns as usize;
        }
        let exp = 63 - ns.leading_zeros();
        let sub = (ns >> (exp - SUB_BITS)) & ((1 << SUB_BITS) - 1);
        (((exp - SUB_BITS + 1) << SUB_BITS) as u64 + sub) as usize
    }

    /// The smallest value of bucket `i` (what a quantile reports: never above the true value by more than a bucket).
    fn floor(i: usize) -> u64 {
        let i = i as u64;
        if i < 1 << SUB_BITS {
            return i;
        }
        let exp = (i >> SUB_BITS) + u64::from(SUB_BITS) - 1;
        let sub = i & ((1 << SUB_BITS) - 1);
        (1 << exp) | (sub << (exp - u64::from(SUB_BITS)))
    }

    /// Records one latency.
    pub fn record(&self, ns: u64) {
        if let Some(b) = self.buckets.get(Self::index(ns)) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        self.max.fetch_max(ns, Ordering::Relaxed);
    }

    /// Latencies recorded.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }

    /// The `q` quantile (0 to 1), to within a bucket; 0 when nothing was recorded.
    pub fn quantile(&self, q: f64) -> u64 {
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= rank {
                return Self::floor(i).min(self.max());
            }
        }
        self.max()
    }

    /// The largest latency recorded.
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }
}

/// An inline sensor's egress: each inspected packet leaves by the interface opposite the one it came in on (the
/// frame's `interface`, its ring: see [`LiveSource::inline`]) unless its flow is dropped. Called on the workers
/// ([`crate::ArenaSource::with_forward`]), right after each packet's inspection, so a flow's packets leave in the
/// order they came (the schedulers keep a flow's packets in order; under `ph` the order guard does). The latency
/// recorded is from the kernel's receive timestamp to the return of the send.
///
/// **IP fragments** are inspected as the datagram they make (the defragmenter reassembles before scheduling), but
/// they leave as they came, as fragments: every fragment but the one that completes a datagram goes on as soon as
/// the reader has handed it to the defragmenter ([`InlineReport::fragments`]), and the completing one waits for the
/// datagram's inspection and goes on (its own frame, kept by the reader: [`Inline::keep_original`]) unless the
/// datagram's flow is dropped, in which case the receiver cannot reassemble the datagram either. A fragment the
/// defragmenter refuses (overlapping, too many) goes on too: this sensor judges datagrams, the receiver's stack
/// judges fragments. Frames the snaplen cut cannot be sent whole: `--inline` captures whole frames (a snaplen above
/// the largest frame), so none should be; any is counted in [`InlineReport::not_forwardable`].
///
/// **Fail-open** (`--queue-full forward`) sends a frame on at once when every packet buffer is in use, without
/// inspection and ahead of any packet of its flow still queued for inspection: the one place this sensor may
/// reorder a flow, chosen by the operator to keep the link up under overload, and counted
/// ([`InlineReport::fail_open`]).
pub struct Inline {
    senders: [flowbundle_ingest::PacketSender; 2],
    latency: LatencyHistogram,
    forwarded: AtomicU64,
    dropped: AtomicU64,
    fail_open: AtomicU64,
    send_errors: AtomicU64,
    not_forwardable: AtomicU64,
    fragments: AtomicU64,
    /// Per packet buffer, the frame that completed the datagram in it (taken when the datagram is forwarded).
    originals: Box<[Mutex<Option<Vec<u8>>>]>,
}

pub use flowbundle_events::InlineReport;

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Inline {
    /// Opens the sending sockets of `sides` (in the order of [`LiveSource::inline`]), for a run of `buffers` packet
    /// buffers.
    pub fn open(sides: [&str; 2], buffers: usize) -> Result<Inline, flowbundle_ingest::Error> {
        Ok(Inline {
            senders: [
                flowbundle_ingest::PacketSender::open(sides[0])?,
                flowbundle_ingest::PacketSender::open(sides[1])?,
            ],
            latency: LatencyHistogram::default(),
            forwarded: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            fail_open: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            not_forwardable: AtomicU64::new(0),
            fragments: AtomicU64::new(0),
            originals: (0..buffers.max(1)).map(|_| Mutex::new(None)).collect(),
        })
    }

    /// Sends `frame`, which came in on `interface`, out of the other side.
    fn send_frame(&self, interface: u32, frame: &[u8]) -> bool {
        let out = if interface == 0 {
            &self.senders[1]
        } else {
            &self.senders[0]
        };
        match out.send(frame) {
            Ok(()) => true,
            Err(_) => {
                self.send_errors.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    fn send(&self, rec: &flowbundle_ingest::PacketRecord<'_>) -> bool {
        // A frame the snaplen cut: not the frame that came in, so not sent on.
        if rec.data.len() < rec.orig_len as usize {
            self.not_forwardable.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.send_frame(rec.interface, rec.data)
    }

    /// Reader: buffer `slot` holds a datagram `frame` completed; the frame is what goes on after its inspection.
    pub fn keep_original(&self, slot: u32, frame: &[u8]) {
        if let Some(m) = self.originals.get(slot as usize) {
            let mut o = m.lock().unwrap_or_else(|e| e.into_inner());
            let v = o.get_or_insert_with(Vec::new);
            v.clear();
            v.extend_from_slice(frame);
        }
    }

    /// Reader: a fragment the defragmenter kept goes on now (see the type's documentation).
    pub fn pass_fragment(&self, rec: &flowbundle_ingest::PacketRecord<'_>) {
        if self.send(rec) {
            self.fragments.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// After inspection of the packet in buffer `slot`: sends it on unless its flow is `dropped` (a reassembled
    /// datagram: the frame that completed it).
    pub fn forward(&self, slot: u32, rec: &flowbundle_ingest::PacketRecord<'_>, dropped: bool) {
        let original = if rec.link_type == flowbundle_ingest::LinkType::RAW {
            self.originals
                .get(slot as usize)
                .and_then(|m| m.lock().unwrap_or_else(|e| e.into_inner()).take())
        } else {
            None
        };
        if dropped {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let sent = match &original {
            Some(frame) => self.send_frame(rec.interface, frame),
            None => self.send(rec),
        };
        if sent {
            self.forwarded.fetch_add(1, Ordering::Relaxed);
            self.latency.record(now_ns().saturating_sub(rec.ts_ns));
        }
    }

    /// Fail-open: sends `rec` on without inspecting it.
    pub fn bypass(&self, rec: &flowbundle_ingest::PacketRecord<'_>) {
        if self.send(rec) {
            self.fail_open.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counters and the latency quantiles so far.
    pub fn report(&self) -> InlineReport {
        let l = &self.latency;
        InlineReport {
            forwarded: self.forwarded.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            fail_open: self.fail_open.load(Ordering::Relaxed),
            send_errors: self.send_errors.load(Ordering::Relaxed),
            not_forwardable: self.not_forwardable.load(Ordering::Relaxed),
            fragments: self.fragments.load(Ordering::Relaxed),
            latency_samples: l.count(),
            latency_p50_ns: l.quantile(0.5),
            latency_p99_ns: l.quantile(0.99),
            latency_max_ns: l.max(),
        }
    }
}

/// The process's stop flag, raised by SIGINT or SIGTERM once [`stop_on_termination`] installed the handlers.
static TERMINATION: AtomicBool = AtomicBool::new(false);

extern "C" fn raise_stop(_signal: libc::c_int) {
    // Async-signal-safe: one atomic store.
    TERMINATION.store(true, Ordering::SeqCst);
}

/// SIGHUPs and SIGUSR2s received since [`signals`] installed the handlers.
static HANGUPS: AtomicU64 = AtomicU64::new(0);
static USR2S: AtomicU64 = AtomicU64::new(0);

extern "C" fn count_signal(signal: libc::c_int) {
    // Async-signal-safe: one atomic add (lock-free on every target with 64-bit atomics).
    if signal == libc::SIGHUP {
        HANGUPS.fetch_add(1, Ordering::SeqCst);
    } else {
        USR2S.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(unix)]
fn install(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) -> std::io::Result<()> {
    // SAFETY: an all-zero `sigaction` is a valid value of the plain C struct; the handler only touches atomics
    // (async-signal-safe) and lives for the whole process; `act` is valid for the call.
    let r = unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler as *const () as libc::sighandler_t;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(sig, &act, std::ptr::null_mut())
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Makes SIGINT and SIGTERM raise the returned flag instead of ending the process, so that a live run drains its
/// queues, flushes its flows and writes its summary. A second signal changes nothing (the flag is already up).
pub fn stop_on_termination() -> std::io::Result<&'static AtomicBool> {
    #[cfg(unix)]
    for sig in [libc::SIGINT, libc::SIGTERM] {
        install(sig, raise_stop)?;
    }
    Ok(&TERMINATION)
}

/// The operator's signals to a running sensor, counted: SIGHUP (reload the rules and reopen the output files, as
/// logrotate's `postrotate` sends it) and SIGUSR2 (reload the rules only: Suricata's rule-reload signal). A
/// consumer remembers the count it last acted on and acts when the count moved, so one signal reaches every
/// consumer, and signals that arrive while one is being handled are handled once more afterwards.
#[derive(Clone, Copy, Debug)]
pub struct Signals {
    hangup: &'static AtomicU64,
    usr2: &'static AtomicU64,
}

impl Signals {
    /// SIGHUPs received so far.
    pub fn hangups(&self) -> u64 {
        self.hangup.load(Ordering::SeqCst)
    }

    /// SIGUSR2s received so far.
    pub fn usr2s(&self) -> u64 {
        self.usr2.load(Ordering::SeqCst)
    }
}

/// Installs the SIGHUP and SIGUSR2 handlers (instead of SIGHUP ending the process) and returns their counters.
pub fn signals() -> std::io::Result<Signals> {
    #[cfg(unix)]
    for sig in [libc::SIGHUP, libc::SIGUSR2] {
        install(sig, count_signal)?;
    }
    Ok(Signals {
        hangup: &HANGUPS,
        usr2: &USR2S,
    })
}

#[cfg(test)]
mod histogram_tests {
    use super::*;

    #[test]
    fn quantiles_are_within_a_sixteenth_of_the_true_value() {
        let h = LatencyHistogram::default();
        for ns in 1..=10_000u64 {
            h.record(ns * 1000);
        }
        assert_eq!(h.count(), 10_000);
        assert_eq!(h.max(), 10_000_000);
        for (q, want) in [(0.5, 5_000_000f64), (0.99, 9_900_000.0)] {
            let got = h.quantile(q) as f64;
            assert!(
                got <= want && got >= want * (1.0 - 1.0 / 16.0),
                "q{q}: {got} vs {want}"
            );
        }
        assert_eq!(LatencyHistogram::default().quantile(0.99), 0);
        // Every bucket's floor maps back to that bucket (the last one holds 2^63 and above).
        for i in 0..=LatencyHistogram::index(u64::MAX) {
            assert_eq!(
                LatencyHistogram::index(LatencyHistogram::floor(i)),
                i,
                "bucket {i}"
            );
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn sighup_and_sigusr2_are_counted_instead_of_ending_the_process() {
        let s = signals().unwrap();
        let (h, u) = (s.hangups(), s.usr2s());
        // SAFETY: sends signals to this process, whose handlers were just installed.
        unsafe {
            libc::raise(libc::SIGHUP);
            libc::raise(libc::SIGUSR2);
            libc::raise(libc::SIGHUP);
        }
        assert_eq!((s.hangups() - h, s.usr2s() - u), (2, 1));
    }

    #[test]
    fn a_stop_drains_what_was_captured_before_it_and_nothing_after() {
        let stop = AtomicBool::new(false);
        let mut d = Drain::default();
        d.note(&stop);
        assert!(!d.draining());
        assert!(d.keeps(u64::MAX), "before the stop every frame is read");
        stop.store(true, Ordering::SeqCst);
        d.note(&stop);
        assert!(d.draining());
        let at = d.at_ns.expect("the stop's time noted");
        assert!(at > 0);
        assert!(
            d.keeps(0) && d.keeps(at),
            "captured before the stop: still read"
        );
        assert!(!d.keeps(at + 1), "captured after the stop: the read ends");
        // The stop's time is noted once, at the first look after it.
        d.note(&stop);
        assert_eq!(d.at_ns, Some(at));
    }

    #[test]
    fn sigterm_raises_the_stop_flag_instead_of_ending_the_process() {
        let flag = stop_on_termination().unwrap();
        // SAFETY: sends a signal to this process, whose handler was just installed.
        unsafe {
            libc::raise(libc::SIGTERM);
        }
        assert!(flag.load(Ordering::SeqCst));
    }
}
