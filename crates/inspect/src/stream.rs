//! # Streaming input for the parallel runtime
//!
//! The pieces that let the engine inspect an input of any length on several workers with bounded memory, events
//! written while the run goes on:
//!
//! * [`StreamReader`]: the reader thread's side. It reads capture files one after the other, puts each packet in a
//!   free slot of a bounded [`PacketArena`] (waiting for one when all are in use: backpressure, not drops), runs the
//!   one pre-scheduling stage on it there ([`Prestage::stage_keeping`]: decode, defragment, hash), keeps the decoded
//!   view for the worker ([`BufferDecodes`]) and returns the descriptor (`id` = the slot's index) for the runtime
//!   to dispatch. A file's packets are not copied: the capture reader keeps each record where it read it
//!   ([`CaptureReader::keep_records`], 1 MiB buffers) and the slot points there; the reader recycles a buffer once
//!   the arena's oldest packet in flight is past every packet in it (so at most [`KEPT_RETIRED`] buffers wait for
//!   their packets). Measured on the merged trace without rules, the copy into the arena was 12% of the parallel
//!   run's CPU (its destination lines had just been read by the workers' cores); a reassembled datagram, made by
//!   the defragmenter, is still copied into its slot. Fragments are inspected as the single-threaded loop inspects
//!   them ([`crate::Engine::inspect_fragment`]): one the defragmenter held or dropped is dispatched in its own
//!   slot, to be inspected without a flow; the one that completed a datagram is kept beside it
//!   ([`BufferDecodes`]) and inspected without a flow just before it, so the events come in the same order.
//! * [`ArenaSource`]: the workers' side, a [`PacketSource`] over the arena. When a packet has been inspected it takes
//!   the events the packet produced from the worker's context, sends them, tagged with the packet's sequence number
//!   (its position among the packets dispatched), to the collector, and frees the buffer.
//! * [`EventMerge`]: the collector's side. Events are released in sequence order up to the *watermark*, the oldest
//!   packet still in the arena ([`PacketArena::oldest_in_flight`]): every packet before it has been inspected and its
//!   events sent. The output is then exactly the single-threaded run's order (a packet's events in the order the
//!   engine produced them, packets in input order), so within a flow events come in packet order and across flows in
//!   capture order; what the collector holds back is bounded by the reader's window
//!   ([`StreamReader::with_window`]): the reader reads at most that many packets ahead of the oldest in flight.
//!
//! * [`StatsBoard`]: each worker's counters, published every few hundred packets, for `stats` records written
//!   while the run goes on.
//!
//! The reader also sweeps idle flows ([`StreamReader::with_sweeps`], see [`crate::sweep`]): at the input positions
//! the single-threaded loop sweeps at, it waits for the arena to drain and sweeps, and what the sweep ended is sent
//! tagged with the next packet's sequence number. Given the runtime's broadcast ([`Broadcast`], with each
//! [`StreamReader::next_desc`]) the sweep runs on every worker at once, each on its share of the shards
//! ([`crate::Engine::expire_shards`]), each share's flows rendered there and sent keyed by deadline and flow id, in
//! messages of bounded size as the share is made ([`Share`]), which the collector merges into the order of one sweep
//! of every shard as they come. The end of the input is done the same way ([`crate::Engine::end_shards`], keyed by
//! [`Event::sort_key`], [`crate::Engine::finish`]'s order). A sweep after a gap in capture time ends every flow at
//! once: in messages, what it holds at a time is bounded by configuration, not by the flows it ends.
//! Why: the sweeps were an eighth of the single-threaded run's time on the merged nDPI trace (flows ended, and
//! their records rendered), which the reader did alone while the workers waited; done by one thread they bounded the
//! speed-up of two workers to about 1.6 whatever else the runtime did.
//!
//! The watermark is computed *before* the channel is drained: a packet below it was freed, and a packet's events are
//! sent before its buffer is freed, so they are in the channel by then.

use std::cell::UnsafeCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::sync::mpsc::{Receiver, Sender, channel};

use flowbundle_decode::{Decoded, FlowKey};
use flowbundle_ingest::{CaptureReader, KeptBuffers, LinkType, PacketArena, PacketRecord, Probed};
use flowbundle_types::Desc;
use hashbrown::HashMap;

use crate::alert_filter::FilterNeeds;
use crate::engine::{EngineStats, WorkerCtx};
use crate::event::Event;
use crate::sweep::SweepClock;
use crate::workload::{FragmentRole, PacketSource};
use flowbundle_decode::prestage::{Dispatch, Keyed, Noted, Prestage};
use flowbundle_decode::{DecodeEvents, DecodeOptions};

/// What a packet produced: its events, or, with a renderer ([`ArenaSource::with_renderer`]), their output lines
/// rendered on the worker (the line count and the bytes); or one message of a worker's share of a sweep or of the
/// end-of-input flush ([`Share`], boxed: a few a sweep, and the packets' messages stay small in the channel).
///
/// A packet's events or lines travel in a buffer the collector hands back once it has written them out (see
/// [`EventSender`]): a worker fills a spent one, so the output path allocates nothing per packet once the buffers
/// in circulation cover what is in flight. Workers that read the input themselves ([`crate::EachReads`]) send
/// their rendered lines in blocks of many packets instead ([`Block`]), which go back to the worker that made them.
#[derive(Debug)]
pub enum Batch {
    Events(Vec<Event>),
    Rendered(u64, Vec<u8>),
    Share(Box<Share>),
    /// Many packets' rendered lines, one after another, from one worker's [`BlockWriter`].
    Block(Block),
}

/// Output as the collector hands it on: events, or rendered lines (their count and bytes), or the rendered lines of
/// several packets one after another (their count and each packet's bytes, in order: see [`PARTS_BYTES`]).
#[derive(Debug, Clone, Copy)]
pub enum Piece<'a> {
    Events(&'a [Event]),
    Rendered(u64, &'a [u8]),
    RenderedParts(u64, &'a [&'a [u8]]),
}

/// Rendered output the collector gathers before handing it on in one [`Piece::RenderedParts`], in bytes, and in
/// packets' messages ([`PARTS_MAX`]).
///
/// Why: handed on one packet at a time, each packet's lines were copied into the output's buffer (256 KiB) and
/// written from there; gathered to at least that buffer's size, they go to the file in one vectored write straight
/// from the workers' buffers (a buffered writer passes a write of its capacity or more through). With the 10k
/// content set on five times the merged nDPI trace the collector copied 188 MB of EVE that way, lines the workers had
/// just written on the other core: its largest cost (40 ms of its 70 ms of CPU, sampled), taken from the workers on
/// two cores.
pub const PARTS_BYTES: usize = 256 << 10;

/// Most packets' messages gathered into one [`Piece::RenderedParts`] (a vectored write takes at most 1,024 parts).
pub const PARTS_MAX: usize = 512;

/// A segment of a [`Run`]: its key, where it ends in the run's `bytes` and in its `events` (one of the two holds it),
/// and the rendered lines up to its end.
type Segment = ((u64, u64, u64), usize, usize, u64);

/// Part of one worker's share of a sweep or of the end-of-input flush run on every worker at once (see
/// [`StreamReader::with_sweeps`]): output in segments, each with the key that places it in the output of the
/// whole (a sweep: one flow's events, by deadline then flow id; the flush: one event, by [`Event::sort_key`]),
/// sorted by it. The collector merges the shares of one sweep by these keys, which gives the output of one thread
/// sweeping every shard. A share is sent in several runs when it is large (see [`Share`]).
///
/// A segment is rendered lines, or whole events where there is no renderer or the collector's filter must see one
/// of them ([`EventSender::whole_when`]).
#[derive(Debug, Default)]
pub struct Run {
    segs: Vec<Segment>,
    events: Vec<Event>,
    bytes: Vec<u8>,
}

impl Run {
    /// Ends a segment with key `key` holding what `ctx` has pending (nothing when it has nothing, or the renderer
    /// wrote nothing), rendered with `render` unless `whole` says the events go whole.
    pub(crate) fn segment(
        &mut self,
        key: (u64, u64, u64),
        ctx: &mut WorkerCtx,
        render: Option<&Renderer>,
        whole: &EventSender,
    ) {
        if ctx.pending_events() == 0 {
            return;
        }
        let lines = self.segs.last().map_or(0, |s| s.3);
        match render {
            Some(r) if !whole.wants_whole(ctx.pending()) => {
                let before = self.bytes.len();
                let n = ctx.render_events(|evs| r(&mut self.bytes, evs));
                if self.bytes.len() > before {
                    self.segs
                        .push((key, self.bytes.len(), self.events.len(), lines + n as u64));
                }
            }
            _ => {
                ctx.take_events(&mut self.events);
                self.segs
                    .push((key, self.bytes.len(), self.events.len(), lines));
            }
        }
    }

    /// Ends a segment with key `key` holding event `e` alone (rendered as [`segment`](Self::segment) says).
    pub(crate) fn event(
        &mut self,
        key: (u64, u64, u64),
        e: Event,
        render: Option<&Renderer>,
        whole: &EventSender,
    ) {
        let lines = self.segs.last().map_or(0, |s| s.3);
        match render {
            Some(r) if !whole.wants_whole(std::slice::from_ref(&e)) => {
                let before = self.bytes.len();
                r(&mut self.bytes, std::slice::from_ref(&e));
                if self.bytes.len() > before {
                    self.segs
                        .push((key, self.bytes.len(), self.events.len(), lines + 1));
                }
            }
            _ => {
                self.events.push(e);
                self.segs
                    .push((key, self.bytes.len(), self.events.len(), lines));
            }
        }
    }

    /// Segment `i`'s output.
    fn piece(&self, i: usize) -> Option<Piece<'_>> {
        let &(_, bytes_end, events_end, lines) = self.segs.get(i)?;
        let (bytes_start, events_start, before) =
            match i.checked_sub(1).and_then(|j| self.segs.get(j)) {
                Some(&(_, b, e, l)) => (b, e, l),
                None => (0, 0, 0),
            };
        Some(if events_end > events_start {
            Piece::Events(self.events.get(events_start..events_end)?)
        } else {
            Piece::Rendered(lines - before, self.bytes.get(bytes_start..bytes_end)?)
        })
    }

    fn key(&self, i: usize) -> Option<(u64, u64, u64)> {
        self.segs.get(i).map(|s| s.0)
    }

    /// The output it holds, in bytes (whole events by their own size).
    fn size(&self) -> usize {
        self.bytes.len() + self.events.len() * std::mem::size_of::<Event>()
    }
}

/// Output bytes (rendered lines, or whole events by their own size) past which a worker sends what it has of its
/// share of a sweep or flush and goes on with an empty [`Run`] (the default of [`EventMerge::with_share_chunk`]).
///
/// Why: a sweep after a long gap in capture time ends every flow at once, and the end of the input ends every flow
/// left; sent as one batch per worker, that output (2.2 MB a worker on the merged nDPI trace's 4,450 flows) was the
/// largest thing the process held, and the longer input met more such sweeps. In messages of this size, with at
/// most [`SHARE_IN_FLIGHT`] of a share's not yet written out, what a share holds at once is bounded by
/// configuration, not by the number of flows it ends.
pub const SHARE_CHUNK: usize = 64 << 10;

/// Most messages of one share sent and not yet written out by the collector: a worker with that many waits (see
/// [`Share`]). Two, so that a worker fills its next message while the collector writes the one before.
pub const SHARE_IN_FLIGHT: usize = 2;

/// Longest a worker waits for the collector to write out one of its share's messages (a collector that does not for
/// that long is starved or gone, or a worker died before it sent its share's end: the sender goes on, so a run is
/// never held up by it for ever, and only one message more is out each time).
const SHARE_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// One message of a worker's share of a sweep or of the end-of-input flush (see [`StreamReader::with_sweeps`] and
/// [`crate::EachReads`]).
///
/// A worker sends its share as it makes it, a message each time it holds [`SHARE_CHUNK`] bytes of output, and waits
/// while [`SHARE_IN_FLIGHT`] of its messages are out (sent, and not yet written by the collector); its last message
/// says so, even when it holds nothing, so that the collector knows the share is complete. Every message of one share
/// is in key order after the one before. The collector merges the shares of one sweep or flush (a *group*: every
/// worker's share of it) as their messages come: it writes the segment with the smallest key as soon as each
/// worker of the group has a segment waiting or has sent its last message, and drops a message once it has written
/// all of it, which lets its worker send the next. The output is the same as when each share came whole.
#[derive(Debug)]
pub struct Share {
    /// Which sweep or flush this is among those tagged with the same sequence number (written in this order).
    group: u64,
    worker: u32,
    workers: u32,
    last: bool,
    run: Run,
    _credit: Credit,
}

/// Counts a message of a share as out until it is dropped (written by the collector, or discarded).
#[derive(Debug)]
struct Credit(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Credit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Release);
    }
}

/// A worker's share of one sweep or flush, sent to the collector while it is made (see [`Share`]).
pub(crate) struct ShareOut<'o, 'a> {
    out: &'o Emitter<'a>,
    seq: u64,
    group: u64,
    worker: u32,
    workers: u32,
    run: Run,
    /// Messages of this share out (sent and not yet dropped by the collector).
    out_now: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl<'o, 'a> ShareOut<'o, 'a> {
    /// Worker `worker`'s share, of `workers`, of sweep or flush `group`, tagged `seq`.
    pub(crate) fn new(
        out: &'o Emitter<'a>,
        seq: u64,
        group: u64,
        worker: usize,
        workers: usize,
    ) -> Self {
        ShareOut {
            out,
            seq,
            group,
            worker: u32::try_from(worker).unwrap_or(u32::MAX),
            workers: u32::try_from(workers.max(1)).unwrap_or(u32::MAX),
            run: Run::default(),
            out_now: Default::default(),
        }
    }

    /// Ends a segment with key `key` holding what `ctx` has pending (see [`Run::segment`]); sends what the share
    /// holds once it is a message's worth.
    pub(crate) fn segment(&mut self, key: (u64, u64, u64), ctx: &mut WorkerCtx) {
        if ctx.pending_events() > 0 {
            self.room();
        }
        self.run
            .segment(key, ctx, self.out.render, &self.out.events);
        self.send_if_full();
    }

    /// Ends a segment with key `key` holding event `e` alone (see [`Run::event`]).
    pub(crate) fn event(&mut self, key: (u64, u64, u64), e: Event) {
        self.room();
        self.run.event(key, e, self.out.render, &self.out.events);
        self.send_if_full();
    }

    /// Gives a message's rendered bytes their whole room at once, before its first line: a message's worth
    /// ([`SHARE_CHUNK`]) and a quarter more for the flow that takes it past that. Grown by doubling from empty, each
    /// message of a large sweep reallocated its bytes three times (26, 53 and 106 KiB on the merged nDPI trace), on
    /// the worker, and the collector freed the last on its own thread: blocks of three sizes coming and going in the
    /// worker's allocator arena at every sweep that ends many flows, whose holes the flows' small allocations then
    /// took. One size, asked for once a message, is served again from the block the last message gave back
    /// (measured with the grown blocks below: the workers' arenas mapped 0.2-0.6 MB less at their most, on the
    /// merged nDPI trace and on ten times it; see `BENCHMARKS.md`).
    fn room(&mut self) {
        if self.out.render.is_some() && self.run.bytes.capacity() == 0 {
            // At most the default's room: a share chunk set larger (a whole share as one message) grows as before.
            let chunk = self.out.events.backlog.share_chunk.min(SHARE_CHUNK);
            self.run
                .bytes
                .reserve_exact(chunk.saturating_add(chunk / 4));
        }
    }

    fn send_if_full(&mut self) {
        if self.run.size() >= self.out.events.backlog.share_chunk {
            self.send(false);
        }
    }

    /// Sends what the share holds, once fewer than [`SHARE_IN_FLIGHT`] of its messages are out.
    fn send(&mut self, last: bool) {
        self.out.events.wait_for_share(&self.out_now);
        self.out_now.fetch_add(1, AcqRel);
        let share = Share {
            group: self.group,
            worker: self.worker,
            workers: self.workers,
            last,
            run: std::mem::take(&mut self.run),
            _credit: Credit(self.out_now.clone()),
        };
        self.out
            .events
            .send(self.seq, Batch::Share(Box::new(share)));
    }

    /// Sends the share's last message (what it still holds, maybe nothing).
    pub(crate) fn finish(mut self) {
        self.send(true);
    }
}

/// A packet's output, tagged with its sequence number.
pub type Tagged = (u64, Batch);

/// Renders events as output lines (e.g. EVE JSON), on the worker that produced them.
pub type Renderer = dyn Fn(&mut Vec<u8>, &[Event]) + Sync;

/// Runs a job on every worker of a streaming run at once, each with its worker number, the number of workers and its
/// own context, and returns when all have run it: the runtime's broadcast (`flowbundle_worker::Crew::broadcast`,
/// which this crate does not know; the binary wires the two).
pub type Broadcast<'b> = dyn Fn(&(dyn Fn(usize, usize, &mut WorkerCtx) + Sync)) + 'b;

/// Inspects one packet that only the calling thread, the reader, can: `true` if it did, `false` when there is none. A
/// reader that is also a worker of the run (the runtime's `Crew::help`) is given one, and calls it until it answers
/// `false` before it waits for the workers to free anything (a packet buffer, the packets in flight), since the
/// packets the policy holds for it would otherwise never be freed. A reader that is not a worker gets none.
pub type Help<'h> = dyn Fn() -> bool + 'h;

/// Called on the worker with each packet once it has been inspected (its buffer, its record), and whether its flow
/// is dropped (an inline sensor forwards it or not: [`crate::live::Inline::forward`]).
pub type Forward<'f> = dyn Fn(u32, &PacketRecord<'_>, bool) + Sync + 'f;

/// Size of each buffer a file is read into, its records kept in place (see the module documentation): eight 128 KiB
/// reads, a few thousand packets.
const KEPT_BUFFER: usize = 1 << 20;

/// Default of [`StreamReader::with_window`]: the most packets the reader reads ahead of the oldest packet still in
/// flight.
///
/// The packet arena bounds how many packets are in flight, not how far apart they are: under a policy that sends new
/// flows to whichever worker is free (`lfb`), a worker stuck on one packet (a heavy one, or a thread the machine
/// took off its core) holds the oldest packet while the other workers and the reader go on. Everything behind that
/// packet waits for it: the output of every later packet, held by the collector until the oldest is done (output
/// leaves in input order), and the capture buffers the later packets were read into (1 MiB each, kept until every
/// packet in them is done). Measured on ten times the merged nDPI trace under `lfb` on a loaded 2-core machine, the
/// span reached 18,700 packets and nine capture buffers, where the trace itself had reached 4,200 and four: the
/// longer the input, the longer the longest stall it meets, and peak memory grew with the input's length. With the
/// window, what waits behind the oldest packet is bounded by configuration: at most this many packets' output and
/// the capture buffers holding this many packets. The default is 8 times the default packet buffers (`lfb` and `dh`
/// on two workers spanned about 600–1,400 packets when neither stalled), so a run that does not stall never waits.
pub const DEFAULT_WINDOW: u64 = 4096;

/// Most buffers left behind whose packets may still be in flight: the reader waits for the oldest when it would
/// leave more (a worker stuck on one old packet while the others go on). With the arena's few hundred slots the
/// packets in flight rarely span more than two.
///
/// This bounds the capture buffers in bytes where the window bounds them in packets: the reader holds at most this
/// many plus the one it reads into (and one spare), 3 MiB. At 8, the window alone bounded them, and the bytes of
/// 4,096 packets depend on where in the input a stall falls: under `lfb` with a reader thread the merged nDPI trace
/// allocated 3–4 buffers and ten times it 4–5, each buffer 1 MiB more peak RSS (alternated runs in `BENCHMARKS.md`,
/// *Peak RSS from 1× to 10×: flows in one store, capture buffers bounded in bytes*); at 2 both allocate 3. The
/// reader waits on the byte bound only where 4,096 packets in flight average more than about 512 bytes.
pub const KEPT_RETIRED: usize = 2;

/// Packets read between two looks for buffers to recycle (a look reads every slot's sequence number).
const RECYCLE_EVERY: u64 = 256;

/// The reader thread's side of a streaming run. See the module documentation.
pub struct StreamReader<'a> {
    stager: Stager<'a>,
    files: std::vec::IntoIter<Probed>,
    reader: Option<(CaptureReader, PathBuf)>,
    /// Packets read from the inputs (fragments absorbed by the defragmenter included).
    pub packets_read: u64,
    /// One line per input that could not be opened or read to its end.
    pub errors: Vec<String>,
    /// Each input read, with its reader's counters (a record cut by the end of the file, clamped lengths, ...).
    pub inputs_read: Vec<(PathBuf, flowbundle_ingest::ReadStats)>,
    /// One line per input that starts before the previous one ended (see [`flowbundle_ingest::Timeline`]).
    pub warnings: Vec<String>,
    timeline: flowbundle_ingest::Timeline,
    /// Input position of the first packet read (packets of earlier runs of the same output).
    first_position: u64,
    stop: Option<&'a std::sync::atomic::AtomicBool>,
    sweeper: Option<Sweeper<'a>>,
    /// The buffers files are read into, between two files (see [`KEPT_BUFFER`]).
    kept: Option<KeptBuffers>,
    /// The arena's fill count at which to look for buffers to recycle next.
    recycle_at: u64,
    /// The end-of-input flush ran on the workers.
    flushed: bool,
    /// The most packets from the oldest still in flight to the newest read ([`with_window`](Self::with_window)).
    window: u64,
    /// The arena's fill count up to which the window is known to have room (no look at the slots before it).
    window_at: u64,
    /// Times the reader waited for the oldest packet in flight because the window was full.
    pub window_waits: u64,
}

/// The reader's idle-flow sweeps (see [`crate::sweep`]): when its clock says a sweep is due, the reader waits for
/// every packet it dispatched to be inspected (the arena drains), sweeps every shard with its own context, and sends
/// what the sweep ended tagged with the next packet's sequence number, so it is written where the single-threaded
/// loop writes it. Shared by the file reader and the live reader ([`crate::live`]).
pub(crate) struct Sweeper<'a> {
    engine: &'a crate::Engine,
    ctx: WorkerCtx,
    clock: SweepClock,
    /// Capture time of the sweep due before the next packet is read.
    due: Option<u64>,
    out: Emitter<'a>,
    /// Sweeps and flushes sent so far (each one's group number, see [`Share`]).
    groups: u64,
    /// Time spent waiting for the arena to drain, and sweeping.
    drain_ns: u64,
    sweep_ns: u64,
}

impl<'a> Sweeper<'a> {
    pub(crate) fn new(
        engine: &'a crate::Engine,
        events: EventSender,
        render: Option<&'a Renderer>,
    ) -> Self {
        Sweeper {
            engine,
            ctx: engine.new_ctx(),
            clock: SweepClock::new(engine.config().sweep),
            due: None,
            out: Emitter { events, render },
            groups: 0,
            drain_ns: 0,
            sweep_ns: 0,
        }
    }

    /// Notes a packet read at capture time `ts_ns` (see [`SweepClock::packet`]).
    pub(crate) fn packet(&mut self, ts_ns: u64) {
        self.due = self.clock.packet(ts_ns);
    }

    /// Runs the sweep due, if any: waits until every packet dispatched to `arena` has been inspected, then sweeps.
    /// Called by the arena's one filler, between two packets.
    pub(crate) fn run_due(&mut self, arena: &PacketArena) {
        self.run_due_on(arena, None, None);
    }

    /// [`run_due`](Self::run_due), the sweep split over the workers by shard when `crew` is given (see
    /// [`StreamReader::with_sweeps`]).
    pub(crate) fn run_due_on(
        &mut self,
        arena: &PacketArena,
        crew: Option<&Broadcast<'_>>,
        help: Option<&Help<'_>>,
    ) {
        let Some(now) = self.due.take() else {
            return;
        };
        let t0 = std::time::Instant::now();
        if !drain_helping(arena, help) {
            // The run is being abandoned: no sweep while workers may still hold shards.
            return;
        }
        let t1 = std::time::Instant::now();
        let seq = arena.filled();
        let group = self.groups;
        self.groups += 1;
        match crew {
            Some(crew) => {
                let (engine, out) = (self.engine, &self.out);
                crew(&|w, n, ctx| {
                    let mut share = ShareOut::new(out, seq, group, w, n);
                    // SAFETY: as below, and each worker sweeps its own share of the shards.
                    unsafe {
                        engine.expire_shards(
                            ctx,
                            now,
                            crate::Engine::shard_share(w, n),
                            |ctx, (d, id)| share.segment((d, id, 0), ctx),
                        )
                    };
                    share.finish();
                });
            }
            // SAFETY: every buffer is free, so every packet dispatched has been inspected and no worker holds a
            // shard (a worker frees a packet's buffer after the engine returned, see `ArenaSource::consumed`); the
            // freeing's release store and `oldest_in_flight`'s acquire loads order the workers' shard writes before
            // this sweep; the next packet is dispatched only after it (the caller is the arena's one filler).
            None => {
                let mut share = ShareOut::new(&self.out, seq, group, 0, 1);
                unsafe {
                    self.engine.expire_shards(
                        &mut self.ctx,
                        now,
                        0..flowbundle_types::BUNDLES,
                        |ctx, (d, id)| share.segment((d, id, 0), ctx),
                    )
                };
                share.finish();
            }
        }
        self.ctx.add_sweep();
        self.drain_ns += (t1 - t0).as_nanos() as u64;
        self.sweep_ns += t1.elapsed().as_nanos() as u64;
    }

    /// The end of the input, split over the workers by shard: waits until every packet dispatched to `arena` has
    /// been inspected, then every worker ends the flows of its share as [`crate::Engine::finish`] would (which then
    /// finds the table empty), its events sorted by [`Event::sort_key`] and sent as a [`Run`] tagged after the last
    /// packet; the collector merges the runs into `finish`'s order.
    pub(crate) fn flush_on(
        &mut self,
        arena: &PacketArena,
        crew: &Broadcast<'_>,
        help: Option<&Help<'_>>,
    ) {
        if !drain_helping(arena, help) {
            return;
        }
        let end = AtomicU64::new(self.ctx.max_ts());
        crew(&|_, _, ctx| {
            end.fetch_max(ctx.max_ts(), AcqRel);
        });
        let end = end.load(Acquire);
        let (engine, out, seq) = (self.engine, &self.out, arena.filled());
        let group = self.groups;
        self.groups += 1;
        crew(&|w, n, ctx| {
            // SAFETY: every packet dispatched has been inspected (see `run_due_on`) and no other is dispatched; each
            // worker ends its own share of the shards.
            unsafe { engine.end_shards(ctx, end, crate::Engine::shard_share(w, n)) };
            send_flush(ShareOut::new(out, seq, group, w, n), ctx);
        });
    }

    /// The context the sweeps ended flows with, and what they did.
    pub(crate) fn finish(self) -> (WorkerCtx, SweepReport) {
        let r = SweepReport {
            sweeps: self.clock.sweeps(),
            drain_ns: self.drain_ns,
            sweep_ns: self.sweep_ns,
        };
        (self.ctx, r)
    }
}

/// Sends the events the end of the input left in `ctx` as `share`, sorted by [`Event::sort_key`] (the order of
/// [`crate::Engine::finish`]), each its own segment.
pub(crate) fn send_flush(mut share: ShareOut<'_, '_>, ctx: &mut WorkerCtx) {
    let mut evs = Vec::new();
    ctx.take_events(&mut evs);
    crate::event::sort_events(&mut evs);
    for e in evs {
        let (ts, id, seq) = e.sort_key();
        share.event((ts, id, u64::from(seq)), e);
    }
    share.finish();
}

/// Waits until every packet filled into `arena` has been inspected and its buffer freed (a quiescent point: no
/// worker holds a packet, so none is inside the engine), or until the arena is closed (the run is being abandoned:
/// its packets will never be freed, and the caller's next `acquire` answers `None`). Yields, then sleeps 20 µs at a
/// time. Returns whether the arena drained: `false` (closed) means workers may still be inside the engine, so the
/// caller must not touch their state.
#[must_use]
pub(crate) fn drain(arena: &PacketArena) -> bool {
    drain_helping(arena, None)
}

/// [`drain`], the calling thread inspecting the packets that only it can (see [`Help`]) before it waits.
#[must_use]
fn drain_helping(arena: &PacketArena, help: Option<&Help<'_>>) -> bool {
    let mut spins = 0u32;
    while arena.oldest_in_flight() < arena.filled() {
        if arena.is_closed() {
            return false;
        }
        if help.is_some_and(|h| h()) {
            continue;
        }
        spins += 1;
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
    true
}

/// Sends a context's pending events to the collector, rendered or whole. Shared by the workers' source and the
/// reader's sweeps.
pub(crate) struct Emitter<'a> {
    pub(crate) events: EventSender,
    pub(crate) render: Option<&'a Renderer>,
}

impl Emitter<'_> {
    /// Sends `ctx`'s pending events tagged `seq`; nothing when there are none (or the renderer wrote nothing).
    pub(crate) fn send(&self, seq: u64, ctx: &mut WorkerCtx) {
        if ctx.pending_events() == 0 {
            return;
        }
        // A spent buffer when the collector has handed one back (see [`EventSender`]), a new one otherwise.
        let batch = match self.render {
            // Rendered here unless the collector's filter must see one of the events first.
            Some(render) if !self.events.wants_whole(ctx.pending()) => {
                let mut bytes = (self.events.backlog.spare_bytes.pop())
                    .unwrap_or_else(|| Vec::with_capacity(FRESH_BYTES));
                let n = ctx.render_events(|evs| render(&mut bytes, evs));
                if bytes.is_empty() {
                    // A renderer that writes nothing (output discarded): nothing to send.
                    if bytes.capacity() > 0 {
                        let _ = self.events.backlog.spare_bytes.push(bytes);
                    }
                    return;
                }
                Batch::Rendered(n as u64, bytes)
            }
            _ => return self.events.send_whole(seq, ctx),
        };
        self.events.send(seq, batch);
    }
}

/// What the reader's sweeps did (see [`StreamReader::with_sweeps`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    pub sweeps: u64,
    /// Time the reader waited for the packets in flight before sweeping, and spent sweeping (ns).
    pub drain_ns: u64,
    pub sweep_ns: u64,
}

impl<'a> StreamReader<'a> {
    /// Reads `files` in order into `arena`, through `prestage`: paths, or inputs a check before the run probed
    /// ([`CaptureReader::probe`], which holds standard input and pipes open with the bytes it read).
    pub fn new<I: Into<Probed>>(
        arena: &'a PacketArena,
        prestage: Prestage,
        files: impl IntoIterator<Item = I>,
    ) -> Self {
        StreamReader {
            stager: Stager::new(arena, prestage),
            files: files
                .into_iter()
                .map(Into::into)
                .collect::<Vec<_>>()
                .into_iter(),
            reader: None,
            packets_read: 0,
            errors: Vec::new(),
            inputs_read: Vec::new(),
            warnings: Vec::new(),
            timeline: flowbundle_ingest::Timeline::default(),
            first_position: 0,
            stop: None,
            sweeper: None,
            kept: None,
            recycle_at: 0,
            flushed: false,
            window: DEFAULT_WINDOW,
            window_at: 0,
            window_waits: 0,
        }
    }

    /// Reads at most `packets` ahead of the oldest packet still in flight (at least 1; default [`DEFAULT_WINDOW`]):
    /// when the newest packet read is that far ahead, the reader waits for the oldest to be inspected. See
    /// [`DEFAULT_WINDOW`] for what it bounds.
    pub fn with_window(mut self, packets: u64) -> Self {
        self.window = packets.max(1);
        self
    }

    /// Sweeps idle flows out of `engine`'s table in capture time, at the positions the single-threaded loop does
    /// (its [`EngineConfig::sweep`](crate::EngineConfig)), sending what they end to `events` (rendered with `render`
    /// when given, as [`ArenaSource::with_renderer`]). The engine must be the one the workers inspect with. With a
    /// [`Broadcast`] given to [`next_desc`](Self::next_desc), the sweeps and the end of the input (every flow still
    /// open ended, as [`crate::Engine::finish`] would) run on the workers, each on its share of the shards.
    pub fn with_sweeps(
        mut self,
        engine: &'a crate::Engine,
        events: EventSender,
        render: Option<&'a Renderer>,
    ) -> Self {
        self.sweeper = Some(Sweeper::new(engine, events, render));
        self
    }

    /// The context the sweeps ended flows with (its counters belong in [`crate::Engine::finish`] with the workers'),
    /// and what they did; `None` without sweeps.
    pub fn take_sweeps(&mut self) -> Option<(WorkerCtx, SweepReport)> {
        self.sweeper.take().map(Sweeper::finish)
    }

    /// Runs the sweep due, if any: waits until every packet dispatched has been inspected, then sweeps (on every
    /// worker, with `crew`).
    fn sweep_if_due(&mut self, crew: Option<&Broadcast<'_>>, help: Option<&Help<'_>>) {
        if let Some(s) = self.sweeper.as_mut() {
            s.run_due_on(self.stager.arena, crew, help);
        }
    }

    /// Links each packet to its flow's previous one in `order` (for a policy that does not keep flow order, `ph`).
    pub fn with_order(mut self, order: &'a StreamOrder) -> Self {
        self.stager.with_order(order);
        self
    }

    /// Keeps each packet's decoded view in `decodes` for the workers (the [`ArenaSource`] must use it too), so they
    /// inspect it without decoding it again.
    pub fn with_decodes(mut self, decodes: &'a BufferDecodes) -> Self {
        self.stager.with_decodes(decodes);
        self
    }

    /// Numbers the packets read from `n` on instead of 0 (the engine's packet numbers: EVE `pcap_cnt`, flow ids),
    /// for a run that continues the numbering of an earlier one.
    pub fn numbered_from(mut self, n: u64) -> Self {
        self.first_position = n;
        self
    }

    /// The earliest and latest capture times read.
    pub fn capture_span(&self) -> Option<(u64, u64)> {
        self.timeline.span()
    }

    /// Stops reading (the next call answers `None`) once `flag` is raised, e.g. when the output failed.
    pub fn stop_when(mut self, flag: &'a std::sync::atomic::AtomicBool) -> Self {
        self.stop = Some(flag);
        self
    }

    /// The pre-scheduling stage (its counters, after the run).
    pub fn prestage(&self) -> &Prestage {
        &self.stager.prestage
    }

    /// The pre-scheduling stage, given back after the run.
    pub fn into_prestage(self) -> Prestage {
        self.stager.prestage
    }

    /// The next descriptor to dispatch, or `None` at the end of the last input. With `crew`, sweeps and the
    /// end-of-input flush run on every worker (see [`with_sweeps`](Self::with_sweeps)).
    pub fn next_desc(
        &mut self,
        crew: Option<&Broadcast<'_>>,
        help: Option<&Help<'_>>,
    ) -> Option<Desc> {
        loop {
            self.sweep_if_due(crew, help);
            if self
                .stop
                .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
            {
                return None;
            }
            if self.reader.is_none() {
                let Some(input) = self.files.next() else {
                    // The end of the last input: the flows still open are ended on the workers, by shard.
                    if let (Some(s), Some(crew)) = (self.sweeper.as_mut(), crew)
                        && !self.flushed
                    {
                        self.flushed = true;
                        s.flush_on(self.stager.arena, crew, help);
                    }
                    return None;
                };
                let path = input.path().to_path_buf();
                match input.open() {
                    Ok(mut r) => {
                        self.timeline.input(&path);
                        r.keep_records(
                            self.kept
                                .take()
                                .unwrap_or_else(|| KeptBuffers::new(KEPT_BUFFER)),
                        );
                        self.reader = Some((r, path));
                    }
                    Err(e) => {
                        self.errors.push(format!("{}: {e}", path.display()));
                        continue;
                    }
                }
            }
            self.recycle_kept(help);
            let (r, path) = self.reader.as_mut()?;
            let rec = match r.next_packet() {
                Ok(Some(rec)) => rec,
                Ok(None) => {
                    self.inputs_read.push((path.clone(), *r.stats()));
                    self.close_input();
                    continue;
                }
                Err(e) => {
                    self.errors.push(format!(
                        "{}: {e} (stopping this input here)",
                        path.display()
                    ));
                    self.inputs_read.push((path.clone(), *r.stats()));
                    self.close_input();
                    continue;
                }
            };
            // The record stays where it is until its buffer is recycled, which `recycle_kept` does only once the
            // arena is past every packet in it: the slot may point to it instead of copying it.
            // SAFETY: ending the borrow of the reader here is sound because the bytes stay put (the reader keeps
            // records, see `CaptureReader::keep_records`) until recycled, and this thread recycles a buffer only
            // when `oldest_in_flight` shows every slot that pointed into it released.
            let rec: PacketRecord<'_> = unsafe { extend_record(rec) };
            let position = self.first_position + self.packets_read;
            self.packets_read += 1;
            if let Some(s) = self.sweeper.as_mut() {
                s.packet(rec.ts_ns);
            }
            if let Some(w) = self.timeline.packet(rec.ts_ns) {
                self.warnings.push(w);
            }
            // `None` (here and below): the arena was closed, the run is being abandoned.
            self.keep_window(help)?;
            let slot = acquire_helping(self.stager.arena, help)?;
            // SAFETY: `rec`'s bytes stay unchanged until the slot is released (see above).
            if let Some(d) = unsafe { self.stager.stage_kept(slot, &rec, position) } {
                return Some(d);
            }
        }
    }

    /// Waits until the packets in flight span less than the window (see [`with_window`](Self::with_window)): when
    /// the newest packet read is `window` ahead of the oldest in flight, until the oldest has moved a quarter of the
    /// window on (so a reader at the limit looks at the slots once per quarter window, not once per packet). The
    /// oldest packet in flight never waits for the reader (it has no earlier packet of its flow in flight, and every
    /// policy hands a worker its queue's packets in order), so the wait ends; a reader that is also a worker
    /// inspects its own share meanwhile. `None` when the arena was closed.
    fn keep_window(&mut self, help: Option<&Help<'_>>) -> Option<()> {
        let arena = self.stager.arena;
        let filled = arena.filled();
        if filled < self.window_at {
            return Some(());
        }
        let mut oldest = arena.oldest_in_flight();
        if filled - oldest.min(filled) >= self.window {
            self.window_waits += 1;
            let target = filled + self.window / 4 + 1 - self.window;
            let mut spins = 0u32;
            while oldest < target {
                if arena.is_closed() {
                    return None;
                }
                if help.is_some_and(|h| h()) {
                    oldest = arena.oldest_in_flight();
                    continue;
                }
                spins += 1;
                if spins < 64 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(std::time::Duration::from_micros(20));
                }
                oldest = arena.oldest_in_flight();
            }
        }
        self.window_at = oldest + self.window;
        Some(())
    }

    /// Ends the current input, keeping the buffers its packets in flight may still point into.
    fn close_input(&mut self) {
        if let Some((r, _)) = self.reader.take()
            && let Some(mut k) = r.into_kept_buffers()
        {
            // Buffers whose packets are done are spare again; a buffer left now waits with the others.
            k.recycle(self.stager.arena.oldest_in_flight());
            self.kept = Some(k);
        }
    }

    /// Tells the capture reader the number the next packet will take and recycles the buffers every packet of which
    /// has been inspected: every [`RECYCLE_EVERY`] packets, and at once (waiting for the oldest) when
    /// [`KEPT_RETIRED`] buffers wait.
    fn recycle_kept(&mut self, help: Option<&Help<'_>>) {
        let arena = self.stager.arena;
        let Some(k) = self.reader.as_mut().and_then(|(r, _)| r.kept_buffers()) else {
            return;
        };
        let filled = arena.filled();
        k.set_tag(filled);
        if k.retired() == 0 || (k.retired() < KEPT_RETIRED && filled < self.recycle_at) {
            return;
        }
        self.recycle_at = filled + RECYCLE_EVERY;
        let mut done = arena.oldest_in_flight();
        let mut spins = 0u32;
        while k.retired() >= KEPT_RETIRED
            && k.oldest_retired().is_some_and(|t| t > done)
            && !arena.is_closed()
        {
            if help.is_some_and(|h| h()) {
                done = arena.oldest_in_flight();
                continue;
            }
            spins += 1;
            if spins < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            done = arena.oldest_in_flight();
        }
        k.recycle(done);
    }
}

/// A free buffer of `arena` ([`PacketArena::acquire`]), the calling thread inspecting the packets that only it can
/// (see [`Help`]) before it waits for one.
fn acquire_helping(arena: &PacketArena, help: Option<&Help<'_>>) -> Option<u32> {
    if let Some(h) = help {
        loop {
            if arena.is_closed() {
                return None;
            }
            if let Some(i) = arena.try_acquire() {
                return Some(i);
            }
            if !h() {
                break;
            }
        }
    }
    arena.acquire()
}

/// Ends a record's borrow of the reader that returned it.
///
/// # Safety
/// The record's bytes stay valid and unchanged for as long as the caller uses the result (a reader keeping its
/// records, whose buffer is not recycled meanwhile).
unsafe fn extend_record<'b>(rec: PacketRecord<'_>) -> PacketRecord<'b> {
    // SAFETY: the caller's promise.
    unsafe { std::mem::transmute::<PacketRecord<'_>, PacketRecord<'b>>(rec) }
}

/// The reader's staging of one packet, shared by every streaming input (files here, interfaces in
/// [`crate::live`]): the packet into an arena buffer, through the pre-scheduling stage there, its decoded view and
/// flow-order link kept for the worker, its descriptor made.
pub(crate) struct Stager<'a> {
    pub(crate) arena: &'a PacketArena,
    pub(crate) prestage: Prestage,
    order: Option<&'a StreamOrder>,
    decodes: Option<&'a BufferDecodes>,
    /// With an order guard: each flow's last packet read (buffer, sequence number); pruned of packets no longer in
    /// a buffer when it grows past four entries per buffer, so it stays bounded by the arena.
    last: HashMap<FlowKey, (u32, u64), foldhash::fast::FixedState>,
    /// Whether the last packet staged was a fragment the defragmenter absorbed, dispatched for inspection alone.
    absorbed: bool,
    /// By buffer: whether it holds copies made for a reassembled datagram (the datagram in the arena's buffer, the
    /// fragment that completed it in [`BufferDecodes`]), which are freed when the buffer is next staged. Kept, each
    /// copy would stay as large as the largest datagram its buffer ever held, and the longer the input, the more
    /// buffers would hold one: on ten times the merged nDPI trace 258 of the 512 buffers did at the peak, 0.5 MB
    /// that the trace itself did not reach (see `BENCHMARKS.md`).
    copies: Vec<bool>,
}

impl<'a> Stager<'a> {
    pub(crate) fn new(arena: &'a PacketArena, prestage: Prestage) -> Self {
        Stager {
            arena,
            prestage,
            order: None,
            decodes: None,
            last: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(1)),
            absorbed: false,
            copies: vec![false; arena.slots()],
        }
    }

    pub(crate) fn with_order(&mut self, order: &'a StreamOrder) {
        self.order = Some(order);
    }

    pub(crate) fn with_decodes(&mut self, decodes: &'a BufferDecodes) {
        self.decodes = Some(decodes);
    }

    /// Whether the descriptor the last [`stage`](Self::stage) returned is a fragment the defragmenter absorbed
    /// (held or dropped), dispatched only to be inspected without a flow (with decoded views kept, see
    /// [`BufferDecodes`]).
    pub(crate) fn absorbed(&self) -> bool {
        self.absorbed
    }

    /// Stages `rec`, the packet at input position `position`, in buffer `slot` (acquired by the calling thread,
    /// the arena's only filler). `None` when the buffer went back unused (a fragment the defragmenter kept, when no
    /// decoded views are kept: with them it is dispatched, see [`absorbed`](Self::absorbed)).
    pub(crate) fn stage(
        &mut self,
        slot: u32,
        rec: &PacketRecord<'_>,
        position: u64,
    ) -> Option<Desc> {
        // SAFETY: the bytes are copied into the slot.
        unsafe { self.stage_with(slot, rec, position, false) }
    }

    /// [`stage`](Self::stage) without copying the packet: the slot points to `rec`'s bytes.
    ///
    /// # Safety
    /// `rec`'s bytes stay valid and unchanged until the slot is released (see [`PacketArena::fill_kept`]).
    pub(crate) unsafe fn stage_kept(
        &mut self,
        slot: u32,
        rec: &PacketRecord<'_>,
        position: u64,
    ) -> Option<Desc> {
        // SAFETY: the caller's promise.
        unsafe { self.stage_with(slot, rec, position, true) }
    }

    /// # Safety
    /// With `keep`, as for [`stage_kept`](Self::stage_kept).
    unsafe fn stage_with(
        &mut self,
        slot: u32,
        rec: &PacketRecord<'_>,
        position: u64,
        keep: bool,
    ) -> Option<Desc> {
        // Into a slot first, then through the stage: the decoded view the stage makes then borrows the slot's
        // bytes, which the worker reads, so the worker need not decode the packet again.
        let arena = self.arena;
        if let Some(c) = self.copies.get_mut(slot as usize)
            && *c
        {
            *c = false;
            // SAFETY: `slot` was acquired by this thread, which holds it alone (the caller's promise).
            unsafe { arena.shed_copy(slot) };
            if let Some(decodes) = self.decodes {
                // SAFETY: as above.
                unsafe { decodes.shed_fragment(slot) };
            }
        }
        // SAFETY: `slot` was acquired by this thread, the arena's only filler (the caller's promise); with `keep`,
        // the caller promised the bytes outlive the slot's use.
        let (mut seq, filled) = if keep {
            unsafe { arena.fill_kept(slot, rec) }?
        } else {
            unsafe { arena.fill_record(slot, rec) }?
        };
        let opts = *self.prestage.decode_options();
        let Noted {
            dispatch,
            decoded,
            events,
        } = self.prestage.stage_noting(&filled);
        self.absorbed = false;
        let (h, keyed, len, decoded, role) = match dispatch {
            None => {
                if self.decodes.is_none() {
                    // Absorbed by the defragmenter, and no worker to inspect the fragment with its view: the
                    // buffer goes back (its sequence number stays unused).
                    // SAFETY: nothing borrowed from the slot is used after this; it was filled once.
                    unsafe { arena.release(slot) };
                    return None;
                }
                // Held or dropped by the defragmenter: dispatched alone, to be inspected without a flow (as the
                // single-threaded loop does), with no place in any flow's order.
                self.absorbed = true;
                let h = self.prestage.hashes_of(&decoded);
                (
                    h,
                    Keyed::None,
                    filled.orig_len,
                    Some(decoded),
                    Role::Absorbed(events),
                )
            }
            Some(Dispatch {
                hashes,
                keyed,
                datagram: Some(b),
            }) => {
                if let Some(decodes) = self.decodes {
                    // The fragment is inspected first, from a copy: its bytes in the buffer are about to go.
                    // SAFETY: this thread holds the filled buffer alone until it dispatches the descriptor.
                    unsafe { decodes.keep_fragment(slot, &filled, &opts) };
                }
                let len = u32::try_from(b.len()).unwrap_or(u32::MAX);
                let whole = PacketRecord {
                    ts_ns: rec.ts_ns,
                    orig_len: len,
                    interface: rec.interface,
                    link_type: LinkType::RAW,
                    data: b,
                };
                // The fragment's bytes in the buffer are replaced by the datagram's (nothing else holds the
                // buffer yet), decoded where they now are.
                // SAFETY: as above; `filled` is not used after this.
                seq = unsafe { arena.fill(slot, &whole) };
                if let Some(c) = self.copies.get_mut(slot as usize) {
                    *c = true;
                }
                let d = arena
                    .record(slot)
                    .map(|r| flowbundle_decode::decode(&r, &opts));
                (hashes, keyed, len, d, Role::Completing(events))
            }
            Some(Dispatch {
                hashes,
                keyed,
                datagram: None,
            }) => (hashes, keyed, filled.orig_len, Some(decoded), Role::Whole),
        };
        // SAFETY: this thread holds the filled buffer alone until it dispatches the descriptor.
        unsafe { self.arena.set_position(slot, position) };
        if let Some(decodes) = self.decodes {
            // SAFETY: this thread holds the filled buffer alone until it dispatches the descriptor.
            unsafe { decodes.set(slot, decoded, role) };
        }
        if let Some(order) = self.order {
            let prev = keyed.flow().and_then(|k| {
                self.last
                    .insert(k, (slot, seq))
                    .filter(|&(s, q)| arena.seq(s) == Some(q))
            });
            order.link(slot, seq, prev);
            if self.last.len() > 4 * arena.slots() {
                self.last.retain(|_, &mut (s, q)| arena.seq(s) == Some(q));
            }
        }
        Some(Desc {
            id: slot,
            conn: h.conn,
            rss: h.rss,
            fid: h.fid,
            len: len.min(u32::from(u16::MAX)) as u16,
        })
    }
}

/// The workers' side of a streaming run: a [`PacketSource`] over the arena. See the module documentation.
pub struct ArenaSource<'a> {
    arena: &'a PacketArena,
    out: Emitter<'a>,
    order: Option<&'a StreamOrder>,
    decodes: Option<&'a BufferDecodes>,
    forward: Option<&'a Forward<'a>>,
    board: Option<&'a StatsBoard>,
}

impl<'a> ArenaSource<'a> {
    /// A source over `arena` that sends each packet's events to `events` (see [`EventMerge::new`]).
    pub fn new(arena: &'a PacketArena, events: EventSender) -> Self {
        ArenaSource {
            arena,
            out: Emitter {
                events,
                render: None,
            },
            order: None,
            decodes: None,
            forward: None,
            board: None,
        }
    }

    /// Hands each packet to `forward` once it has been inspected, before its buffer is freed (on the worker, so a
    /// flow's packets reach it in the flow's order).
    pub fn with_forward(mut self, forward: &'a Forward<'a>) -> Self {
        self.forward = Some(forward);
        self
    }

    /// Publishes each worker's counters on `board` every [`StatsBoard::EVERY`] packets it inspects, for periodic
    /// statistics while the run goes on.
    pub fn with_stats_board(mut self, board: &'a StatsBoard) -> Self {
        self.board = Some(board);
        self
    }

    /// Counts a packet the worker of `ctx` is done with (inspected to the end, or its stage done and the packet
    /// passed on) and publishes the worker's counters every [`StatsBoard::EVERY`] of them: the same schedule for a
    /// run-to-completion worker and for either stage's workers of a staged model. (Counting the context's inspected
    /// packets instead published a detection-stage worker's counters after every packet, since it inspects none,
    /// and a flow-stage worker's never, since it consumes none.)
    fn count_for_board(&self, ctx: &mut WorkerCtx) {
        if let Some(b) = self.board {
            ctx.handled += 1;
            if ctx.handled.is_multiple_of(StatsBoard::EVERY) {
                b.publish(ctx);
            }
        }
    }

    /// Renders each packet's events on the worker (serialising output in parallel; the events are dropped where
    /// they were made) and sends the rendered lines instead.
    pub fn with_renderer(mut self, render: &'a Renderer) -> Self {
        self.out.render = Some(render);
        self
    }

    /// Inspects the decoded views the reader kept in `decodes` ([`StreamReader::with_decodes`]).
    pub fn with_decodes(mut self, decodes: &'a BufferDecodes) -> Self {
        self.decodes = Some(decodes);
        self
    }

    /// Keeps each flow's packets in order with `order` (the reader's [`StreamReader::with_order`] must use it too).
    pub fn with_order(mut self, order: &'a StreamOrder) -> Self {
        self.order = Some(order);
        self
    }
}

impl PacketSource for ArenaSource<'_> {
    fn record(&self, id: u32) -> Option<PacketRecord<'_>> {
        self.arena.record(id)
    }

    fn packet_number(&self, id: u32) -> u64 {
        self.arena.position(id).unwrap_or(u64::MAX)
    }

    fn decoded(&self, id: u32) -> Option<Decoded<'_>> {
        // SAFETY: the descriptor's buffer is in use (this worker was handed it) until `consumed`.
        self.decodes.and_then(|d| unsafe { d.get(id) })
    }

    fn stream_order(&self) -> Option<&StreamOrder> {
        self.order
    }

    fn fragment(&self, id: u32) -> Option<FragmentRole<'_>> {
        // SAFETY: the descriptor's buffer is in use (this worker was handed it) until `consumed`.
        self.decodes.and_then(|d| unsafe { d.fragment(id) })
    }

    unsafe fn consumed(&self, id: u32, ctx: &mut WorkerCtx) {
        // A fragment the defragmenter absorbed went on when it was read (see `crate::live::Inline`); the datagram
        // it completes is forwarded as its frame.
        if let Some(forward) = self.forward
            && !matches!(self.fragment(id), Some(FragmentRole::Absorbed(_)))
            && let Some(rec) = self.arena.record(id)
        {
            forward(id, &rec, ctx.packet_dropped());
        }
        if ctx.pending_events() > 0 {
            self.out.send(self.arena.seq(id).unwrap_or(u64::MAX), ctx);
        }
        // SAFETY: the caller's promise: no record of `id` is used after this, once per inspection.
        unsafe { self.arena.release(id) };
        self.count_for_board(ctx);
    }

    fn passed_on(&self, ctx: &mut WorkerCtx) {
        self.count_for_board(ctx);
    }
}

/// Each worker's counters as it last published them ([`ArenaSource::with_stats_board`]), for statistics written
/// while a streaming run goes on: a worker's context is its own until the run ends, so it publishes a copy every
/// [`StatsBoard::EVERY`] packets (a clone of its counters, a few microseconds: under 10 ns a packet), and a reader
/// of the board sums the copies. Each copy only grows, so the sums do too; they lag each worker by fewer than
/// `EVERY` packets. The exact totals are [`crate::Engine::finish`]'s.
pub struct StatsBoard {
    slots: Box<[std::sync::Mutex<EngineStats>]>,
    /// Per worker, the latest capture time of the packets its copy counts.
    max_ts: Box<[AtomicU64]>,
}

impl StatsBoard {
    /// Packets a worker inspects between two publications.
    pub const EVERY: u64 = 512;

    /// A board for `workers` workers (contexts whose [`WorkerCtx::worker`] is beyond it publish nothing).
    pub fn new(workers: usize) -> Self {
        StatsBoard {
            slots: (0..workers)
                .map(|_| std::sync::Mutex::new(EngineStats::default()))
                .collect(),
            max_ts: (0..workers).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub(crate) fn publish(&self, ctx: &WorkerCtx) {
        let w = ctx.worker();
        if let (Some(slot), Some(ts)) = (self.slots.get(w), self.max_ts.get(w)) {
            slot.lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone_from(ctx.stats());
            ts.store(ctx.max_ts(), Release);
        }
    }

    /// The latest capture time any published copy counts (0 before the first).
    pub fn max_ts(&self) -> u64 {
        self.max_ts
            .iter()
            .map(|t| t.load(Acquire))
            .max()
            .unwrap_or(0)
    }

    /// The sum of the published copies.
    pub fn total(&self) -> EngineStats {
        let mut t = EngineStats::default();
        for s in self.slots.iter() {
            t.merge(&s.lock().unwrap_or_else(|e| e.into_inner()));
        }
        t
    }
}

/// Per packet buffer of a streaming run's arena, the decoded view of the packet in it, made by the reader's
/// pre-scheduling stage and read by the worker that inspects the packet: the packet is decoded once, on the reader
/// (a decoded view is about 150 bytes of offsets and slices into the buffer, cheaper to hand over than to remake).
///
/// A view borrows its buffer's bytes, which stay where they are from the buffer's fill to its release: the reader
/// writes a buffer's view right after filling it and before dispatching its descriptor (the scheduler's queue
/// orders that write before the worker's read), the worker reads it before it frees the buffer, and the reader
/// writes the view again only after it got the buffer back.
///
/// With it, a fragment is dispatched too, as the single-threaded loop inspects it: one the defragmenter held or
/// dropped in its own buffer, inspected without a flow; the one that completed a datagram kept here (its bytes
/// copied into a per-buffer vector, freed when the buffer is next staged: a reassembled datagram is rare) beside the
/// datagram in the buffer, inspected without a flow before the datagram. See [`FragmentRole`].
pub struct BufferDecodes {
    cells: Box<[UnsafeCell<Kept>]>,
}

/// What [`BufferDecodes`] keeps per buffer. Aligned to a cache line: the reader writes one buffer's view while a
/// worker reads the previous buffer's, and the two must not share a line.
#[derive(Default)]
#[repr(align(64))]
struct Kept {
    view: Option<Decoded<'static>>,
    role: Role,
    /// The fragment that completed the datagram in the buffer (with `Role::Completing`): its bytes and its view of
    /// them.
    frag_bytes: Vec<u8>,
    frag_view: Option<Decoded<'static>>,
}

#[derive(Debug, Default, Clone, Copy)]
enum Role {
    #[default]
    Whole,
    Absorbed(DecodeEvents),
    Completing(DecodeEvents),
}

// SAFETY: a buffer's view is written by the reader while it holds the buffer alone and read by the one worker the
// buffer's descriptor was handed to, ordered as the buffer's bytes are (see above and `PacketArena`).
unsafe impl Sync for BufferDecodes {}

impl BufferDecodes {
    /// Views for an arena of `slots` buffers.
    pub fn new(slots: usize) -> Self {
        BufferDecodes {
            cells: (0..slots)
                .map(|_| UnsafeCell::new(Kept::default()))
                .collect(),
        }
    }

    /// Keeps `d`, a view of the bytes in buffer `slot` of the arena this belongs to, and what the packet was to the
    /// defragmenter.
    ///
    /// # Safety
    /// The calling thread holds buffer `slot` alone (acquired and filled, descriptor not dispatched yet), and `d`
    /// borrows that buffer's bytes (or nothing).
    unsafe fn set(&self, slot: u32, d: Option<Decoded<'_>>, role: Role) {
        if let Some(cell) = self.cells.get(slot as usize) {
            // SAFETY: the buffer's bytes outlive every read of the view (see the type's documentation), so erasing
            // the borrow's lifetime here is sound; the caller holds the slot alone.
            unsafe {
                let k = &mut *cell.get();
                k.view = d.map(|d| std::mem::transmute::<Decoded<'_>, Decoded<'static>>(d));
                k.role = role;
            }
        }
    }

    /// Keeps a copy of `frag`, the fragment that completed the datagram buffer `slot` is to hold, decoded with
    /// `opts`; [`set`](Self::set) with `Role::Completing` then tells the worker to inspect it.
    ///
    /// # Safety
    /// As for [`set`](Self::set).
    unsafe fn keep_fragment(&self, slot: u32, frag: &PacketRecord<'_>, opts: &DecodeOptions) {
        if let Some(cell) = self.cells.get(slot as usize) {
            // SAFETY: the caller holds the slot alone, so no worker reads the cell; the view borrows the vector's
            // heap bytes, which stay put until the next `keep_fragment` of this slot, which rewrites the view.
            unsafe {
                let k = &mut *cell.get();
                k.frag_view = None;
                k.frag_bytes.clear();
                k.frag_bytes.extend_from_slice(frag.data);
                let copy = PacketRecord {
                    data: &k.frag_bytes,
                    ..*frag
                };
                let d = flowbundle_decode::decode(&copy, opts);
                k.frag_view = Some(std::mem::transmute::<Decoded<'_>, Decoded<'static>>(d));
            }
        }
    }

    /// Frees the copy of a fragment kept for buffer `slot` ([`keep_fragment`](Self::keep_fragment)).
    ///
    /// # Safety
    /// As for [`set`](Self::set).
    unsafe fn shed_fragment(&self, slot: u32) {
        if let Some(cell) = self.cells.get(slot as usize) {
            // SAFETY: the caller holds the slot alone, so no worker reads the cell; the view goes before the bytes
            // it borrows.
            unsafe {
                let k = &mut *cell.get();
                k.frag_view = None;
                k.frag_bytes = Vec::new();
            }
        }
    }

    /// What buffer `slot`'s packet was to the defragmenter, when it was a fragment.
    ///
    /// # Safety
    /// As for [`get`](Self::get).
    unsafe fn fragment(&self, slot: u32) -> Option<FragmentRole<'_>> {
        let cell = self.cells.get(slot as usize)?;
        // SAFETY: the caller holds the buffer; the reader does not write its cell until it is freed.
        let k = unsafe { &*cell.get() };
        match k.role {
            Role::Whole => None,
            Role::Absorbed(e) => Some(FragmentRole::Absorbed(e)),
            Role::Completing(e) => k.frag_view.map(|f| FragmentRole::Completing(f, e)),
        }
    }

    /// The view of buffer `slot`, borrowed for as long as the caller holds the buffer.
    ///
    /// # Safety
    /// The calling thread was handed buffer `slot`'s descriptor and has not freed the buffer yet.
    unsafe fn get(&self, slot: u32) -> Option<Decoded<'_>> {
        let cell = self.cells.get(slot as usize)?;
        // SAFETY: the caller holds the buffer; the reader does not write its view until it is freed.
        unsafe { (*cell.get()).view }
    }
}

/// Bytes of output the workers have sent and the collector not yet received past which a sender wakes the collector
/// (see [`EventSender`]).
pub const BACKLOG_WAKE: usize = 256 << 10;

/// Bytes of output sent and not yet received past which a sender waits for the collector (see [`EventSender`]).
pub const BACKLOG_MAX: usize = 1 << 20;

/// Longest one send waits for the collector to take the backlog below [`BACKLOG_MAX`] (a collector that does not run
/// for that long while woken is starved or gone: the sender goes on, so a run is never held up by it for ever).
const BACKLOG_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// Packets' messages the channel holds (see [`EventSender`]): a bounded array, allocated once (40 bytes a slot). A
/// packet's output is a line or two of EVE (550 bytes at the median on the merged nDPI trace), so the channel holds
/// about half of [`BACKLOG_MAX`]; a sender that finds it full waits for the collector as for the bytes.
pub const CHANNEL_SLOTS: usize = 1024;

/// Spent output buffers the collector keeps for the workers to fill again (see [`EventSender`]), each kind: more
/// than the packets' outputs in flight when the collector keeps up (a few tens), so that the workers allocate none;
/// a buffer handed back while the spares are full is freed.
pub const SPARE_BUFFERS: usize = 256;

/// Largest buffer kept for reuse, in bytes (a larger one, from a packet with a lot of output, is freed once written
/// out; 99% of the merged nDPI trace's EVE lines are under 1,400 bytes): what the spares hold is at most
/// [`SPARE_BUFFERS`] times this, 1 MiB, and in practice a few hundred KiB.
pub const SPARE_CAPACITY: usize = 4 << 10;

/// Capacity a new output buffer starts with, in bytes: a line or two of EVE (550 bytes at the median on the merged
/// nDPI trace), so that a buffer made for a packet with one short line does not grow again, reallocating, when it is
/// reused for a packet with more.
const FRESH_BYTES: usize = 1 << 10;

/// Capacity a new list of a packet's events starts with (a packet gives one or two at most, nearly always).
const FRESH_EVENTS: usize = 4;

/// The workers' end of the collector's channel ([`EventMerge::new`]), with the output in it bounded.
///
/// The collector takes what the workers sent every couple of milliseconds, when the machine gives its thread a core.
/// On a loaded machine it may get none for tens of milliseconds while the workers go on, and everything they sent
/// meanwhile waited in the channel: peak memory then depended on the longest such stall, which grows with the
/// input's length (measured: `--threads 2` peak RSS on ten times the merged trace 4–10 MiB above the trace's own,
/// varying from run to run, and a 20 ms collector tick raised it further while 0.5 ms lowered it, see
/// `BENCHMARKS.md`). So each send counts the bytes it puts in the channel: past [`BACKLOG_WAKE`] it wakes the
/// collector, past [`BACKLOG_MAX`] it waits (yields, then sleeps) until the collector has taken the backlog below
/// that, for at most [`BACKLOG_WAIT`] a send. What the collector holds back behind its watermark is not counted:
/// the reader's window bounds that ([`StreamReader::with_window`]). The bounds were 1 MiB and 4 MiB: on ten times
/// the merged nDPI trace on a loaded machine the output waiting in the channel still peaked 1–2.5 MiB above the
/// trace's own peak (2.9–4.5 MiB against 1.7–3.1), and at 256 KiB and 1 MiB the peaks on both fell to the
/// 1.7–2.2 MiB that a sweep's own output (one batch per worker) takes.
///
/// No allocation per packet: a packet's output is rendered into a spent buffer that the collector handed back after
/// writing it out (a queue of at most [`SPARE_BUFFERS`] of them, up to [`SPARE_CAPACITY`] bytes each), and its
/// message goes through a bounded array channel ([`CHANNEL_SLOTS`]) that allocates nothing per message. Why: a
/// fresh buffer a packet, and the unbounded channel's blocks (one every 31 messages), were allocated on the workers
/// and freed on the collector, and frees across threads are what spread the allocator's per-thread arenas' high-water
/// marks (peak RSS grew with the input's length; see `BENCHMARKS.md`). A message that finds the array full for
/// [`BACKLOG_WAIT`] (a collector starved or gone) goes through an unbounded channel beside it instead, as do the
/// shares of sweeps (a few a sweep, and ordered among themselves in that one channel). The order between the two
/// channels never matters: a packet's output is one message, with a sequence number of its own.
#[derive(Clone)]
pub struct EventSender {
    tx: crossbeam::channel::Sender<Tagged>,
    spill: Sender<Tagged>,
    backlog: std::sync::Arc<Backlog>,
    /// The events the collector's alert filter must see whole ([`EventSender::whole_when`]).
    needs: Option<std::sync::Arc<FilterNeeds>>,
}

/// Output bytes in the channel, and the collector to wake; the size of a share's messages, and whether the
/// collector still writes them out.
struct Backlog {
    bytes: std::sync::atomic::AtomicUsize,
    collector: std::thread::Thread,
    share_chunk: usize,
    /// The collector writes nothing more (the output failed, the run is being abandoned, or it is gone): a share's
    /// sender does not wait for it.
    closed: AtomicBool,
    /// Waits for a share's message to be written that ran out of time ([`SHARE_WAIT`]).
    share_waits_timed_out: AtomicU64,
    /// Packets' messages that found the channel full for [`BACKLOG_WAIT`] and went through the unbounded one.
    spilled: AtomicU64,
    /// Spent buffers, handed back by the collector for the workers to fill again.
    spare_bytes: crossbeam::queue::ArrayQueue<Vec<u8>>,
    spare_events: crossbeam::queue::ArrayQueue<Vec<Event>>,
}

impl Backlog {
    /// Keeps a batch's buffer, written out, for a worker to fill again (when it is not too large and the spares
    /// are not full); drops the rest.
    fn recycle(&self, b: Batch) {
        match b {
            Batch::Rendered(_, mut bytes) if bytes.capacity() <= SPARE_CAPACITY => {
                bytes.clear();
                let _ = self.spare_bytes.push(bytes);
            }
            Batch::Events(mut evs)
                if evs.capacity() * std::mem::size_of::<Event>() <= SPARE_CAPACITY =>
            {
                evs.clear();
                let _ = self.spare_events.push(evs);
            }
            _ => {}
        }
    }
}

impl EventSender {
    /// Output holding an event `needs` names goes to the collector as events, not rendered lines, wherever the
    /// workers render (a packet's output, a flow's in a sweep's share, an event of the end-of-input flush): the
    /// collector applies its alert filter ([`crate::AlertFilter`]) to those in output order, and writes the lines
    /// rendered on the workers as they are, since the filter keeps every other event unchanged. Set it before the
    /// sender is cloned.
    ///
    /// Why: with a filter the collector rendered every event itself (the filter needs whole events in order), and
    /// on two cores that was the collector's largest cost, taken from the workers: the community rules'
    /// `detection_filter`s need 0 of the 58,433 events on five times the merged nDPI trace.
    pub fn whole_when(mut self, needs: FilterNeeds) -> Self {
        self.needs = Some(std::sync::Arc::new(needs));
        self
    }

    /// Whether `events` go to the collector whole (see [`whole_when`](Self::whole_when)).
    pub(crate) fn wants_whole(&self, events: &[Event]) -> bool {
        self.needs.as_deref().is_some_and(|n| n.any(events))
    }

    /// Sends `ctx`'s pending events whole, tagged `seq`, in a spent buffer when the collector handed one back.
    pub(crate) fn send_whole(&self, seq: u64, ctx: &mut WorkerCtx) {
        let mut evs =
            (self.backlog.spare_events.pop()).unwrap_or_else(|| Vec::with_capacity(FRESH_EVENTS));
        ctx.take_events(&mut evs);
        self.send(seq, Batch::Events(evs));
    }

    /// Sends `batch` tagged `seq`, waking or waiting for the collector when the backlog is large (see the type's
    /// documentation).
    pub fn send(&self, seq: u64, batch: Batch) {
        self.send_checked(seq, batch);
    }

    /// [`send`](Self::send): `false` when the collector is gone (the batch was dropped).
    fn send_checked(&self, seq: u64, batch: Batch) -> bool {
        let size = batch.bytes();
        let before = self.backlog.bytes.fetch_add(size, Relaxed);
        if !self.put((seq, batch)) {
            // A closed channel means the collector is gone (the run is being abandoned): nothing to keep.
            self.backlog.bytes.fetch_sub(size, Relaxed);
            return false;
        }
        let now = before + size;
        if now < BACKLOG_WAKE {
            return true;
        }
        if before < BACKLOG_WAKE || now >= BACKLOG_MAX {
            self.backlog.collector.unpark();
        }
        if now < BACKLOG_MAX {
            return true;
        }
        let since = std::time::Instant::now();
        let mut spins = 0u32;
        while self.backlog.bytes.load(Relaxed) >= BACKLOG_MAX && since.elapsed() < BACKLOG_WAIT {
            spins += 1;
            if spins < 16 {
                std::thread::yield_now();
            } else {
                self.backlog.collector.unpark();
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
        true
    }

    /// Sends a block tagged `seq` (see [`BlockWriter`]): counted in the backlog, waking the collector past
    /// [`BACKLOG_WAKE`], but never waiting for room (a worker's blocks are bounded by their count, and the worker
    /// waits for one to come back before it renders more). `false` when the collector is gone.
    fn send_unwaited(&self, seq: u64, batch: Batch) -> bool {
        let size = batch.bytes();
        let before = self.backlog.bytes.fetch_add(size, Relaxed);
        if !self.put((seq, batch)) {
            self.backlog.bytes.fetch_sub(size, Relaxed);
            return false;
        }
        let now = before + size;
        if (before < BACKLOG_WAKE && now >= BACKLOG_WAKE) || now >= BACKLOG_MAX {
            self.backlog.collector.unpark();
        }
        true
    }

    /// Puts a message in the channel (a share's, or one the array has no room for in [`BACKLOG_WAIT`], in the
    /// unbounded one): `false` when the collector is gone.
    fn put(&self, msg: Tagged) -> bool {
        use crossbeam::channel::{SendTimeoutError, TrySendError};
        let msg = if matches!(msg.1, Batch::Share(_)) {
            msg
        } else {
            match self.tx.try_send(msg) {
                Ok(()) => return true,
                Err(TrySendError::Disconnected(_)) => return false,
                Err(TrySendError::Full(msg)) => {
                    self.backlog.collector.unpark();
                    match self.tx.send_timeout(msg, BACKLOG_WAIT) {
                        Ok(()) => return true,
                        Err(SendTimeoutError::Disconnected(_)) => return false,
                        Err(SendTimeoutError::Timeout(msg)) => {
                            self.backlog.spilled.fetch_add(1, Relaxed);
                            msg
                        }
                    }
                }
            }
        };
        self.spill.send(msg).is_ok()
    }

    /// Waits while `out_now` of a share's messages are out and the collector may still write them (see [`Share`]),
    /// waking the collector, for at most [`SHARE_WAIT`].
    fn wait_for_share(&self, out_now: &std::sync::atomic::AtomicUsize) {
        if out_now.load(Acquire) < SHARE_IN_FLIGHT {
            return;
        }
        self.backlog.collector.unpark();
        let since = std::time::Instant::now();
        let mut spins = 0u32;
        while out_now.load(Acquire) >= SHARE_IN_FLIGHT && !self.backlog.closed.load(Relaxed) {
            if since.elapsed() >= SHARE_WAIT {
                self.backlog.share_waits_timed_out.fetch_add(1, Relaxed);
                return;
            }
            spins += 1;
            if spins < 16 {
                std::thread::yield_now();
            } else {
                self.backlog.collector.unpark();
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
    }

    /// Tells the senders that the collector writes nothing more (the run is being abandoned): a share's messages
    /// no longer wait for it.
    pub fn close(&self) {
        self.backlog.closed.store(true, Relaxed);
    }
}

impl Batch {
    /// The heap bytes it holds, about (whole events by their own size).
    fn bytes(&self) -> usize {
        let events = |n: usize| n * std::mem::size_of::<Event>();
        match self {
            Batch::Events(evs) => events(evs.len()),
            Batch::Rendered(_, b) => b.capacity(),
            Batch::Share(s) => s.run.bytes.capacity() + events(s.run.events.len()),
            Batch::Block(b) => b.bytes.capacity(),
        }
    }
}

/// Output bytes past which a worker hands its block of rendered output to the collector (see [`BlockWriter`]).
/// Measured on the loaded machine (three alternated rounds, `dh`, no rules, 16 blocks a worker): peak RSS on ten
/// times the merged nDPI trace 1.087-1.094 times that on the trace with blocks of 32 KiB, 1.102-1.176 with 64 KiB.
pub const BLOCK_BYTES: usize = 32 << 10;

/// Capacity a block is made with: [`BLOCK_BYTES`] and room for the packet that takes it past them, so that a block
/// does not grow (a packet's lines are a few KiB at most, nearly always; one with more grows its block, on the worker
/// that owns it).
const BLOCK_CAPACITY: usize = BLOCK_BYTES + BLOCK_BYTES / 4;

/// Most blocks a worker makes (see [`BlockWriter`]): what its output takes at the collector and in its hands is at
/// most this many blocks, 640 KiB, whatever the input's length and however long the collector's thread waits to
/// be scheduled. A worker that has them all out waits for one to come back (writing the output out itself while it
/// does, see [`BLOCKS_BEFORE_HELPING`]): a slow output slows the workers.
///
/// Why not more: blocks are never freed during a run, so a worker's blocks are its most ever out at once, and a
/// longer input met a longer stall of the collector or a longer drift between the workers. With up to 64 (5 MiB)
/// and one more after each 20 ms wait, peak RSS on ten times the merged nDPI trace grew 1.06-1.19 times that on the
/// trace against 1.03-1.06 before the blocks (`BENCHMARKS.md`). A worker's blocks out beyond the watermark are what
/// it is ahead of the slowest in output bytes: 512 KiB is about 2,000 packets read of the 10k content set's output
/// (about 450 bytes a packet read, half on each of two workers), and most windows of an input without rules.
pub const BLOCKS_PER_WORKER: usize = 16;

/// Blocks a worker makes before, finding none back, it writes out what can be written itself (when no other thread
/// is at it, [`crate::EachReads::with_helper`]) rather than make one more: blocks made beyond this many are for the
/// output held for ordering (a worker ahead of the slowest), not for a collector that was not scheduled.
pub const BLOCKS_BEFORE_HELPING: usize = 8;

/// Packets read past the first packet whose output a block holds after which the worker hands the block on however
/// full it is (at its next publication of its position), when that packet holds the watermark back (no other worker
/// has published a count past it): the collector cannot write past a packet whose output is still in a block, so a
/// worker with little output (no rules) hands its blocks on at least this often. A worker ahead of the others keeps
/// filling its block: handing it on would hold a block at the collector for little output.
pub const BLOCK_AGE: u64 = 1024;

/// Many packets' rendered output (EVE lines) of one worker, one after another in memory that worker owns, handed to
/// the collector whole and given back to the worker once written (see [`BlockWriter`]).
#[derive(Debug)]
pub struct Block {
    bytes: Vec<u8>,
    /// Per packet: its tag, where its lines end in `bytes`, and how many lines it has.
    index: Vec<(u64, usize, u64)>,
    /// The worker's queue of blocks given back.
    home: std::sync::Arc<crossbeam::queue::ArrayQueue<Block>>,
    worker: u32,
}

impl Block {
    /// Gives the block back to the worker that made it, emptied (after its output was written, or dropped). A block
    /// that finds its worker's queue full (a worker made more after waits that ran out of time) is freed here.
    fn give_back(mut self) {
        self.bytes.clear();
        self.index.clear();
        let home = self.home.clone();
        let _ = home.push(self);
    }

    /// Where packet `i`'s lines start and end in `bytes`, and how many there are.
    fn record(&self, i: usize) -> Option<(usize, usize, u64)> {
        let &(_, end, lines) = self.index.get(i)?;
        let start = i
            .checked_sub(1)
            .and_then(|j| self.index.get(j))
            .map_or(0, |e| e.1);
        Some((start, end, lines))
    }
}

/// One worker's rendered output, written into blocks it owns and reuses: nothing allocated on one thread is freed or
/// grown on another.
///
/// The worker renders each packet's lines at the end of its current block (with the packet's tag, where its lines
/// end, and their count in the block's index), and hands the block to the collector when it holds
/// [`BLOCK_BYTES`], at a sweep, and when its oldest packet is [`BLOCK_AGE`] packets back or the worker is about to
/// wait, these two only while that packet holds the watermark back (see [`crate::EachReads`]). The
/// collector writes straight from the block (vectored writes, the runs of consecutive packets' lines of one block
/// one part each) and gives the block back through the worker's own bounded queue (single producer, the collector;
/// single consumer, the worker), emptied; the worker fills it again. A worker makes at most
/// [`BLOCKS_PER_WORKER`] blocks, then waits for one to come back (no wait makes one more: a slow output slows the
/// workers, and what the collector holds of a worker's output is bounded in bytes whatever the input's length).
/// Past [`BLOCKS_BEFORE_HELPING`], a worker that finds none back first writes out what can be written itself, when
/// no other thread is at it (the merge under a lock each tries: the classic combining of a shared structure), so
/// that its output does not wait for the collector's thread to be scheduled on cores the workers keep busy; it
/// makes one more only when that gives none back (its blocks hold output beyond the watermark). A block is one message, where each packet's output was one (the 10k content
/// set on five times the merged nDPI trace: 74,336 packets' messages, 188 MB of EVE in buffers allocated by one
/// worker, grown by another and freed by the collector, against about 2,900 blocks of 64 KiB).
///
/// The collector can write a packet's output only once it holds every output tagged before it: a worker publishes
/// its position no further than the oldest packet whose output is still in its block ([`pending_since`]).
///
/// [`pending_since`]: BlockWriter::pending_since
pub(crate) struct BlockWriter {
    worker: u32,
    current: Option<Block>,
    home: std::sync::Arc<crossbeam::queue::ArrayQueue<Block>>,
    /// Blocks made (at most [`BLOCKS_PER_WORKER`]).
    pub(crate) made: usize,
    /// The caller's position of the oldest packet whose output the current block holds.
    since: Option<u64>,
}

impl BlockWriter {
    /// Worker `worker`'s writer (its number names its blocks to the collector).
    pub(crate) fn new(worker: usize) -> Self {
        BlockWriter {
            worker: u32::try_from(worker).unwrap_or(u32::MAX),
            current: None,
            home: std::sync::Arc::new(crossbeam::queue::ArrayQueue::new(BLOCKS_PER_WORKER)),
            made: 0,
            since: None,
        }
    }

    /// Whether a block is at hand to render into, taking one back or making one if fewer than
    /// [`BLOCKS_BEFORE_HELPING`] were made (without waiting).
    pub(crate) fn refill(&mut self) -> bool {
        self.refill_upto(BLOCKS_BEFORE_HELPING)
    }

    /// [`refill`](Self::refill), making one if fewer than [`BLOCKS_PER_WORKER`] were made.
    pub(crate) fn refill_upto_bound(&mut self) -> bool {
        self.refill_upto(BLOCKS_PER_WORKER)
    }

    fn refill_upto(&mut self, limit: usize) -> bool {
        if self.current.is_some() {
            return true;
        }
        if let Some(mut b) = self.home.pop() {
            // A block a packet with a lot of output grew goes back to its size here, where it was made: kept grown, a
            // worker's blocks came to the size of the largest output each ever carried (a longer input grows more of
            // them), and a grown block is one more size coming and going in the worker's allocator arena.
            if b.bytes.capacity() > BLOCK_CAPACITY {
                b.bytes = Vec::with_capacity(BLOCK_CAPACITY);
            }
            self.current = Some(b);
            return true;
        }
        if self.made < limit {
            self.make();
            return true;
        }
        false
    }

    /// Wakes the collector (a worker waiting for a block).
    pub(crate) fn wake(&self, events: &EventSender) {
        events.backlog.collector.unpark();
    }

    fn make(&mut self) {
        self.made += 1;
        self.current = Some(Block {
            bytes: Vec::with_capacity(BLOCK_CAPACITY),
            index: Vec::with_capacity(256),
            home: self.home.clone(),
            worker: self.worker,
        });
    }

    /// Renders `ctx`'s pending events with `render` as the output of the packet tagged `seq`, at the caller's
    /// position `at`: `true` when the block is then full (hand it on). Events the collector's filter must see go
    /// to it whole through `events` instead ([`EventSender::whole_when`]): the collector writes them in their place
    /// among the blocks' output by their tag (the worker's position stays before any packet of its block not yet
    /// handed on, which is older).
    pub(crate) fn add(
        &mut self,
        seq: u64,
        at: u64,
        ctx: &mut WorkerCtx,
        render: &Renderer,
        events: &EventSender,
    ) -> bool {
        if ctx.pending_events() == 0 {
            return false;
        }
        if events.wants_whole(ctx.pending()) {
            events.send_whole(seq, ctx);
            return false;
        }
        if self.current.is_none() {
            // The caller makes sure a block is at hand before the packet (see `refill`): not reached, but never
            // lose output.
            self.make();
        }
        let Some(b) = self.current.as_mut() else {
            return false;
        };
        let before = b.bytes.len();
        let n = ctx.render_events(|evs| render(&mut b.bytes, evs));
        if b.bytes.len() > before {
            b.index.push((seq, b.bytes.len(), n as u64));
            self.since.get_or_insert(at);
        }
        b.bytes.len() >= BLOCK_BYTES
    }

    /// The caller's position of the oldest packet whose output is in the current block, not yet handed on.
    pub(crate) fn pending_since(&self) -> Option<u64> {
        self.since
    }

    /// Hands the current block to the collector through `events` when it holds anything, and takes another if one
    /// is at hand without waiting ([`refill`](Self::refill)). When the collector writes nothing more, the output is
    /// dropped here and the block kept.
    pub(crate) fn hand_on(&mut self, events: &EventSender) {
        self.since = None;
        let Some(b) = self.current.take_if(|b| !b.index.is_empty()) else {
            return;
        };
        if events.backlog.closed.load(Relaxed) {
            let mut b = b;
            b.bytes.clear();
            b.index.clear();
            self.current = Some(b);
            return;
        }
        let seq = b.index.first().map_or(0, |e| e.0);
        if !events.send_unwaited(seq, Batch::Block(b)) {
            // The collector is gone: the block was freed here, with its message.
            self.made = self.made.saturating_sub(1);
        }
        self.refill();
    }
}

/// The collector's side of a streaming run. See the module documentation.
pub struct EventMerge {
    rx: crossbeam::channel::Receiver<Tagged>,
    spill: Receiver<Tagged>,
    backlog: std::sync::Arc<Backlog>,
    held: BTreeMap<u64, Held>,
    /// The most packets' outputs and share messages held back at once.
    pub peak_held: usize,
    held_now: usize,
    /// Messages of shares of sweeps and flushes received ([`Share`]), the output bytes of the largest, and the most
    /// output bytes of share messages held at once.
    pub share_messages: u64,
    pub largest_share_message: usize,
    pub peak_share_bytes: usize,
    share_bytes: usize,
    /// Packets' rendered output taken out of `held` and out of the workers' blocks, in order, not yet handed on
    /// (see [`PARTS_BYTES`]).
    gather: Gather,
    /// The most workers' blocks held at once ([`BlockWriter`]).
    pub peak_blocks: usize,
    blocks_now: usize,
}

/// Rendered output gathered in order to be handed on in one piece ([`PARTS_BYTES`]), and the workers' blocks it comes
/// from.
struct Gather {
    parts: Vec<Part>,
    bytes: usize,
    /// Per worker: its blocks received ([`BlockWriter`]).
    streams: Vec<BlockStream>,
}

/// A part of the output gathered: a packet's own message, or consecutive packets' lines in one block.
enum Part {
    Batch(Batch),
    Span {
        stream: usize,
        block: usize,
        start: usize,
        end: usize,
        lines: u64,
    },
}

/// One worker's blocks at the collector, oldest first, with the next packet's output to write: index `at` of
/// `blocks`, record `rec` of it. The blocks before `at` are written (or gathered) and go back to the worker once
/// the output gathered is handed on.
#[derive(Default)]
struct BlockStream {
    blocks: std::collections::VecDeque<Block>,
    at: usize,
    rec: usize,
}

impl BlockStream {
    /// The tag of the next packet's output to write.
    fn head(&self) -> Option<u64> {
        self.blocks.get(self.at)?.index.get(self.rec).map(|e| e.0)
    }
}

impl Gather {
    /// The worker whose next packet's output in its blocks has the smallest tag, with that tag. A worker's blocks
    /// hold its packets' output in the order of their tags (each worker's packets come in input order).
    fn next_block(&self) -> Option<(u64, usize)> {
        let mut best: Option<(u64, usize)> = None;
        for (w, s) in self.streams.iter().enumerate() {
            if let Some(t) = s.head()
                && best.is_none_or(|(b, _)| t < b)
            {
                best = Some((t, w));
            }
        }
        best
    }

    /// Gathers the next packet's output of worker `w`'s blocks, joined to the part before when it follows it in the
    /// same block.
    fn take_block_record(&mut self, w: usize) {
        let Some(s) = self.streams.get_mut(w) else {
            return;
        };
        let block = s.at;
        let Some((start, end, lines)) = s.blocks.get(block).and_then(|b| b.record(s.rec)) else {
            return;
        };
        s.rec += 1;
        if s.blocks.get(block).is_some_and(|b| s.rec >= b.index.len()) {
            s.at += 1;
            s.rec = 0;
        }
        self.bytes += end - start;
        if let Some(Part::Span {
            stream,
            block: b,
            end: e,
            lines: l,
            ..
        }) = self.parts.last_mut()
            && *stream == w
            && *b == block
            && *e == start
        {
            *e = end;
            *l += lines;
            return;
        }
        self.parts.push(Part::Span {
            stream: w,
            block,
            start,
            end,
            lines,
        });
    }

    fn full(&self) -> bool {
        self.bytes >= PARTS_BYTES || self.parts.len() >= PARTS_MAX
    }

    /// Hands on the output gathered in one piece, keeps the packets' own buffers for reuse, and gives the blocks
    /// written out back to their workers (returns how many).
    fn hand<E>(
        &mut self,
        backlog: &Backlog,
        out: &mut impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> (usize, Result<(), E>) {
        let mut r = Ok(());
        if !self.parts.is_empty() {
            let mut lines = 0;
            let mut bytes: [&[u8]; PARTS_MAX] = [&[]; PARTS_MAX];
            let mut k = 0;
            for p in self.parts.iter() {
                let (n, b): (u64, &[u8]) = match p {
                    Part::Batch(Batch::Rendered(n, b)) => (*n, b),
                    &Part::Span {
                        stream,
                        block,
                        start,
                        end,
                        lines,
                    } => {
                        let b = self
                            .streams
                            .get(stream)
                            .and_then(|s| s.blocks.get(block))
                            .and_then(|b| b.bytes.get(start..end));
                        (lines, b.unwrap_or_default())
                    }
                    Part::Batch(_) => continue,
                };
                if let Some(slot) = bytes.get_mut(k) {
                    lines += n;
                    *slot = b;
                    k += 1;
                }
            }
            r = out(Piece::RenderedParts(lines, &bytes[..k]));
            for p in self.parts.drain(..) {
                if let Part::Batch(b) = p {
                    backlog.recycle(b);
                }
            }
        }
        self.bytes = 0;
        let mut given = 0;
        for s in self.streams.iter_mut() {
            for _ in 0..s.at {
                if let Some(b) = s.blocks.pop_front() {
                    b.give_back();
                    given += 1;
                }
            }
            s.at = 0;
        }
        (given, r)
    }
}

/// What the collector holds with one sequence number: the shares of the sweeps and flushes tagged with it, by group
/// number, and the packets' output, in the order it came (one batch, the packet's, kept in place: no allocation
/// for it). A sweep or flush tagged `s` is sent before any packet output tagged `s` (the packet after a sweep is
/// dispatched or inspected only once every share of it was sent), so the groups are written first.
#[derive(Default)]
struct Held {
    groups: BTreeMap<u64, Group>,
    first: Option<Batch>,
    more: Vec<Batch>,
}

impl Held {
    fn push(&mut self, b: Batch) {
        if self.first.is_none() && self.more.is_empty() {
            self.first = Some(b);
        } else {
            self.more.push(b);
        }
    }

    fn has_plain(&self) -> bool {
        self.first.is_some() || !self.more.is_empty()
    }
}

/// The shares of one sweep or flush, as their messages come (see [`Share`]).
#[derive(Default)]
struct Group {
    /// Per worker: its messages received and not yet written out, the index of the next segment to write in the
    /// first, and whether its last message came.
    queues: Vec<std::collections::VecDeque<Share>>,
    at: Vec<usize>,
    ended: Vec<bool>,
}

impl Group {
    /// Takes in a message; `false` when it held nothing (dropped at once).
    fn add(&mut self, s: Share) -> bool {
        let n = (s.workers as usize).max(s.worker as usize + 1);
        if self.queues.len() < n {
            self.queues.resize_with(n, Default::default);
            self.at.resize(n, 0);
            self.ended.resize(n, false);
        }
        let w = s.worker as usize;
        if s.last {
            self.ended[w] = true;
        }
        if s.run.segs.is_empty() {
            return false;
        }
        self.queues[w].push_back(s);
        true
    }

    /// Writes the segments that can be: while every worker has one waiting or has sent its last message (or,
    /// `complete`, every message is in), the one with the smallest key. Returns whether the group is done (every
    /// message in and written); `held` (messages and output bytes held) loses each message dropped once written.
    fn write<E>(
        &mut self,
        complete: bool,
        out: &mut impl FnMut(Piece<'_>) -> Result<(), E>,
        held: &mut (usize, usize),
    ) -> Result<bool, E> {
        loop {
            // Few workers: a scan for the smallest head is cheaper than a heap.
            let mut best: Option<((u64, u64, u64), usize)> = None;
            for (w, q) in self.queues.iter().enumerate() {
                match q.front().and_then(|s| s.run.key(self.at[w])) {
                    Some(k) if best.is_none_or(|(b, _)| k < b) => best = Some((k, w)),
                    Some(_) => {}
                    None if !complete && !self.ended[w] => return Ok(false),
                    None => {}
                }
            }
            let Some((_, w)) = best else {
                return Ok(true);
            };
            let Some(s) = self.queues[w].front() else {
                return Ok(true);
            };
            if let Some(p) = s.run.piece(self.at[w]) {
                out(p)?;
            }
            self.at[w] += 1;
            if self.at[w] >= s.run.segs.len() {
                self.at[w] = 0;
                if let Some(s) = self.queues[w].pop_front() {
                    held.0 = held.0.saturating_sub(1);
                    held.1 = held.1.saturating_sub(s.run.size());
                }
            }
        }
    }
}

impl EventMerge {
    /// A merge and the sender workers tag their events into. Call it on the thread that will collect (call
    /// [`release`](Self::release)): the senders wake that thread when their output piles up.
    pub fn new() -> (EventSender, EventMerge) {
        Self::with_share_chunk(SHARE_CHUNK)
    }

    /// [`new`](Self::new), the shares of sweeps and flushes sent in messages of about `bytes` of output each (see
    /// [`SHARE_CHUNK`]; at least one segment a message).
    pub fn with_share_chunk(bytes: usize) -> (EventSender, EventMerge) {
        let (tx, rx) = crossbeam::channel::bounded(CHANNEL_SLOTS);
        let (spill_tx, spill) = channel();
        let backlog = std::sync::Arc::new(Backlog {
            bytes: std::sync::atomic::AtomicUsize::new(0),
            collector: std::thread::current(),
            share_chunk: bytes.max(1),
            closed: AtomicBool::new(false),
            share_waits_timed_out: AtomicU64::new(0),
            spilled: AtomicU64::new(0),
            spare_bytes: crossbeam::queue::ArrayQueue::new(SPARE_BUFFERS),
            spare_events: crossbeam::queue::ArrayQueue::new(SPARE_BUFFERS),
        });
        (
            EventSender {
                tx,
                spill: spill_tx,
                backlog: backlog.clone(),
                needs: None,
            },
            EventMerge {
                rx,
                spill,
                backlog,
                held: BTreeMap::new(),
                peak_held: 0,
                held_now: 0,
                share_messages: 0,
                largest_share_message: 0,
                peak_share_bytes: 0,
                share_bytes: 0,
                gather: Gather {
                    parts: Vec::with_capacity(PARTS_MAX),
                    bytes: 0,
                    streams: Vec::new(),
                },
                peak_blocks: 0,
                blocks_now: 0,
            },
        )
    }

    /// Takes in what the workers sent.
    fn receive(&mut self) {
        let mut taken = 0;
        // The order between the two channels does not matter (see `EventSender`).
        for (seq, b) in self.rx.try_iter().chain(self.spill.try_iter()) {
            taken += b.bytes();
            match b {
                Batch::Block(b) => {
                    let w = b.worker as usize;
                    let streams = &mut self.gather.streams;
                    if streams.len() <= w {
                        streams.resize_with(w + 1, Default::default);
                    }
                    if let Some(s) = streams.get_mut(w) {
                        s.blocks.push_back(b);
                        self.blocks_now += 1;
                        self.peak_blocks = self.peak_blocks.max(self.blocks_now);
                    }
                }
                Batch::Share(s) => {
                    let size = s.run.size();
                    self.share_messages += 1;
                    self.largest_share_message = self.largest_share_message.max(size);
                    let h = self.held.entry(seq).or_default();
                    if h.groups.entry(s.group).or_default().add(*s) {
                        self.held_now += 1;
                        self.share_bytes += size;
                    }
                }
                b => {
                    self.held_now += 1;
                    self.held.entry(seq).or_default().push(b);
                }
            }
        }
        self.backlog.bytes.fetch_sub(taken, Relaxed);
        self.peak_held = self.peak_held.max(self.held_now);
        self.peak_share_bytes = self.peak_share_bytes.max(self.share_bytes);
    }

    /// Receives what the workers sent and hands `out` the output of every packet before `watermark`, in sequence
    /// order (the shares of one sweep or flush merged by key), and, of the sweeps and flushes tagged `watermark`, what
    /// can be written before the rest of their shares comes (see [`Share`]). `watermark` must have been read before
    /// this call (see the module documentation).
    pub fn release<E>(
        &mut self,
        watermark: u64,
        mut out: impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.receive();
        self.write(Some(watermark), &mut out)
    }

    /// Everything still held, in sequence order (after the run, when every packet has been inspected).
    pub fn release_all<E>(
        &mut self,
        mut out: impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.receive();
        self.write(None, &mut out)
    }

    /// Times a worker stopped waiting for the collector to write one of its share's messages because the wait ran
    /// out of time (see [`Share`]): each let one message more out than the bound.
    pub fn share_waits_timed_out(&self) -> u64 {
        self.backlog.share_waits_timed_out.load(Relaxed)
    }

    /// Packets' messages that found the channel full for a bounded wait and went through the unbounded one (see
    /// [`EventSender`]): each was allocated for.
    pub fn spilled(&self) -> u64 {
        self.backlog.spilled.load(Relaxed)
    }

    /// Drops everything held and everything sent until now, and tells the senders not to wait for the collector any
    /// more (the output failed: nothing more will be written).
    pub fn discard(&mut self) {
        self.backlog.closed.store(true, Relaxed);
        self.receive();
        self.held.clear();
        self.held_now = 0;
        self.share_bytes = 0;
        // The workers' blocks go back to them, their output dropped.
        let g = &mut self.gather;
        g.parts.clear();
        g.bytes = 0;
        for s in g.streams.iter_mut() {
            s.at = 0;
            s.rec = 0;
            for b in s.blocks.drain(..) {
                b.give_back();
            }
        }
        self.blocks_now = 0;
    }

    /// Writes what is held up to `watermark` (everything with `None`), see [`release`](Self::release).
    fn write<E>(
        &mut self,
        watermark: Option<u64>,
        out: &mut impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut held = (self.held_now, self.share_bytes);
        let r = self.write_held(watermark, out, &mut held);
        (self.held_now, self.share_bytes) = held;
        // What was gathered goes out now, whatever its size: the collector hands on everything below the watermark
        // at each call (after an error, it is dropped with the rest).
        let (given, r2) = self.gather.hand(&self.backlog, out);
        self.blocks_now = self.blocks_now.saturating_sub(given);
        r.and(r2)
    }

    /// Writes the outputs held and the workers' blocks' in tag order, up to `watermark` (everything with `None`):
    /// at each step the smaller of the next held output's tag and the next block output's (a held output first at
    /// the same tag: a sweep tagged `s` comes before the packet tagged `s`).
    fn write_held<E>(
        &mut self,
        watermark: Option<u64>,
        out: &mut impl FnMut(Piece<'_>) -> Result<(), E>,
        held: &mut (usize, usize),
    ) -> Result<(), E> {
        loop {
            let first = self.held.first_key_value().map(|(k, _)| *k);
            if let Some((tag, w)) = self.gather.next_block()
                && first.is_none_or(|f| tag < f)
            {
                // A packet's output is complete below the watermark only (as the held packets' below).
                if watermark.is_some_and(|m| tag >= m) {
                    break;
                }
                self.gather.take_block_record(w);
                if self.gather.full() {
                    let (given, r) = self.gather.hand(&self.backlog, out);
                    self.blocks_now = self.blocks_now.saturating_sub(given);
                    r?;
                }
                continue;
            }
            let Some(mut e) = self.held.first_entry() else {
                break;
            };
            let seq = *e.key();
            if watermark.is_some_and(|w| seq > w) {
                break;
            }
            // Below the watermark every output tagged `seq` has been sent; at it, only sweeps and flushes may have
            // been (the packet tagged with it is not done yet), and they are written as their shares come.
            let complete = watermark.is_none_or(|w| seq < w);
            let h = e.get_mut();
            if !h.groups.is_empty() {
                // The packets' output gathered before goes first.
                let (given, r) = self.gather.hand(&self.backlog, out);
                self.blocks_now = self.blocks_now.saturating_sub(given);
                r?;
            }
            while let Some(mut g) = h.groups.first_entry() {
                if !g.get_mut().write(complete, out, held)? {
                    break;
                }
                g.remove();
            }
            if !complete || !h.groups.is_empty() {
                if h.groups.is_empty() && !h.has_plain() {
                    e.remove();
                }
                break;
            }
            let h = e.remove();
            for b in h.first.into_iter().chain(h.more) {
                held.0 = held.0.saturating_sub(1);
                match b {
                    Batch::Rendered(_, ref bytes) => {
                        self.gather.bytes += bytes.len();
                        self.gather.parts.push(Part::Batch(b));
                        if self.gather.full() {
                            let (given, r) = self.gather.hand(&self.backlog, out);
                            self.blocks_now = self.blocks_now.saturating_sub(given);
                            r?;
                        }
                    }
                    Batch::Events(ref evs) => {
                        let (given, r) = self.gather.hand(&self.backlog, out);
                        self.blocks_now = self.blocks_now.saturating_sub(given);
                        r?;
                        out(Piece::Events(evs))?;
                        self.backlog.recycle(b);
                    }
                    Batch::Share(_) | Batch::Block(_) => {}
                }
            }
        }
        Ok(())
    }
}

impl Drop for EventMerge {
    fn drop(&mut self) {
        self.backlog.closed.store(true, Relaxed);
    }
}

/// No predecessor / no successor.
const NONE: u64 = u64::MAX;
const PENDING: u64 = 0;
const DEFERRED: u64 = 1;
const DONE: u64 = 2;

/// The per-flow order guard of a streaming run (see [`crate::InspectWorkload`], "Keeping per-flow order under `ph`"),
/// kept per packet buffer instead of per descriptor of a preloaded trace.
///
/// Per buffer: the state of the packet in it (its sequence number and pending / deferred / done, one word), its
/// predecessor in its flow (buffer and sequence number, when that packet was still in a buffer when this one was
/// read) and its successor (set by the reader when the successor is read). A sequence number that no longer matches
/// a buffer's means the packet it named has been inspected and its buffer reused. The reader is the only thread that
/// refills a buffer, so it can link a successor to a predecessor it sees still in its buffer without a race: that
/// buffer cannot be reused meanwhile. Inspection of a flow's packets, and the checks below, are serialised by the
/// bundle the flow's packets share (the scheduler's exclusivity), as for the preloaded guard.
pub struct StreamOrder {
    state: Box<[AtomicU64]>,
    prev_slot: Box<[AtomicU32]>,
    prev_seq: Box<[AtomicU64]>,
    next_slot: Box<[AtomicU32]>,
    next_seq: Box<[AtomicU64]>,
}

impl StreamOrder {
    /// A guard for an arena of `slots` buffers.
    pub fn new(slots: usize) -> Self {
        let words = |v: u64| (0..slots).map(|_| AtomicU64::new(v)).collect();
        let halves = || (0..slots).map(|_| AtomicU32::new(0)).collect();
        StreamOrder {
            state: words(NONE),
            prev_slot: halves(),
            prev_seq: words(NONE),
            next_slot: halves(),
            next_seq: words(NONE),
        }
    }

    /// Reader: slot `s` now holds packet `seq`, whose flow's previous packet is `prev` (buffer and sequence number)
    /// if that packet is still in its buffer.
    fn link(&self, s: u32, seq: u64, prev: Option<(u32, u64)>) {
        let i = s as usize;
        let (Some(st), Some(ns), Some(ps), Some(pq)) = (
            self.state.get(i),
            self.next_seq.get(i),
            self.prev_slot.get(i),
            self.prev_seq.get(i),
        ) else {
            return;
        };
        ns.store(NONE, Release);
        st.store(seq << 2 | PENDING, Release);
        match prev {
            Some((p, q)) => {
                ps.store(p, Release);
                pq.store(q, Release);
                if let (Some(n), Some(nq)) = (
                    self.next_slot.get(p as usize),
                    self.next_seq.get(p as usize),
                ) {
                    n.store(s, Release);
                    nq.store(seq, Release);
                }
            }
            None => pq.store(NONE, Release),
        }
    }

    /// Whether the packet in slot `s` may be inspected now: its predecessor has been (or it has none).
    pub(crate) fn ready(&self, s: u32) -> bool {
        let i = s as usize;
        let Some(pq) = self.prev_seq.get(i).map(|q| q.load(Acquire)) else {
            return true;
        };
        if pq == NONE {
            return true;
        }
        let p = self.prev_slot.get(i).map_or(0, |p| p.load(Acquire)) as usize;
        let st = self.state.get(p).map_or(NONE, |w| w.load(Acquire));
        st >> 2 != pq || st & 3 == DONE
    }

    /// Marks the packet in slot `s` deferred. Its sequence number is the one [`link`](Self::link) gave the slot: the
    /// caller's own numbering of the packet (an input position, which fragments absorbed by the defragmenter make
    /// differ from the arena's sequence numbers) must not stand in for it, or its predecessor would not recognise it
    /// and it would stay deferred for ever.
    pub(crate) fn defer(&self, s: u32) {
        if let Some(w) = self.state.get(s as usize) {
            w.store(w.load(Acquire) & !3 | DEFERRED, Release);
        }
    }

    /// Marks the packet in slot `s` inspected and returns its successor's slot if that one waits deferred. Call
    /// before the buffer is freed.
    pub(crate) fn done(&self, s: u32) -> Option<u32> {
        let i = s as usize;
        let w = self.state.get(i)?;
        w.store(w.load(Acquire) & !3 | DONE, Release);
        let nq = self.next_seq.get(i)?.load(Acquire);
        if nq == NONE {
            return None;
        }
        let n = self.next_slot.get(i)?.load(Acquire);
        let st = self.state.get(n as usize)?.load(Acquire);
        (st == nq << 2 | DEFERRED).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deferred_packet_is_handed_to_whoever_finishes_its_predecessor() {
        // Flow packets in slots 3 (sequence number 10) and 5 (11, linked to 10). The second is taken first: it is
        // deferred, and finishing the first returns it. Sequence numbers far from the slots' input positions, as
        // after fragments absorbed by the defragmenter, change nothing: the guard keeps its own.
        let o = StreamOrder::new(8);
        o.link(3, 10, None);
        o.link(5, 11, Some((3, 10)));
        assert!(o.ready(3));
        assert!(!o.ready(5));
        o.defer(5);
        assert_eq!(o.done(3), Some(5));
        assert!(o.ready(5));
        assert_eq!(o.done(5), None);
        // A successor taken after its predecessor finished is ready at once, and not handed over again.
        o.link(1, 12, Some((5, 11)));
        assert!(o.ready(1));
        // A predecessor whose slot was reused (its packet long done) does not hold a successor back.
        o.link(5, 20, None);
        o.link(2, 21, Some((3, 10)));
        o.link(3, 22, None);
        assert!(o.ready(2));
    }

    /// A rendered run of one line per key.
    fn run(keys: &[u64]) -> Run {
        let mut r = Run::default();
        for (i, &k) in keys.iter().enumerate() {
            r.bytes.extend_from_slice(format!("{k}\n").as_bytes());
            r.segs.push(((k, 0, 0), r.bytes.len(), 0, i as u64 + 1));
        }
        r
    }

    /// A message of worker `worker`'s share (of 2) of group `group`, one line per key, counted in `out`.
    fn share(
        group: u64,
        worker: u32,
        last: bool,
        keys: &[u64],
        out: &std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> Batch {
        out.fetch_add(1, AcqRel);
        Batch::Share(Box::new(Share {
            group,
            worker,
            workers: 2,
            last,
            run: run(keys),
            _credit: Credit(out.clone()),
        }))
    }

    /// Fills a block of `w` with one line per tag (as [`BlockWriter::add`] does with a packet's lines).
    fn fill(w: &mut BlockWriter, tags: &[u64]) {
        assert!(w.refill_upto_bound());
        let b = w.current.as_mut().unwrap();
        for &t in tags {
            b.bytes.extend_from_slice(format!("{t}\n").as_bytes());
            b.index.push((t, b.bytes.len(), 1));
            w.since.get_or_insert(t);
        }
    }

    /// Two workers' blocks, a packet's own message and a sweep's shares are written in tag order (the shares of a
    /// sweep before the packet with the same tag), a block's consecutive packets in one part; a block goes back to
    /// the worker that made it once all of it is written, and is filled again without a new one being made.
    #[test]
    fn blocks_are_written_in_tag_order_and_go_back_to_their_worker() {
        let (tx, mut m) = EventMerge::new();
        let (mut a, mut b) = (BlockWriter::new(0), BlockWriter::new(1));
        fill(&mut a, &[1, 3, 4, 9]);
        assert_eq!(a.pending_since(), Some(1));
        a.hand_on(&tx);
        assert_eq!(a.pending_since(), None);
        fill(&mut b, &[2, 5, 6]);
        b.hand_on(&tx);
        tx.send(8, Batch::Rendered(1, b"8\n".to_vec()));
        let out = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        tx.send(7, share(0, 0, true, &[70], &out));
        tx.send(7, share(0, 1, true, &[71], &out));
        fill(&mut b, &[7, 10]);
        b.hand_on(&tx);
        assert_eq!(written(&mut m, Some(5)), "1\n2\n3\n4\n");
        assert!(
            a.home.is_empty() && b.home.is_empty(),
            "no block written to its end yet"
        );
        let mut parts = Vec::new();
        m.release(11, |p| {
            if let Piece::RenderedParts(_, ps) = p {
                parts.extend(ps.iter().map(|b| String::from_utf8(b.to_vec()).unwrap()));
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(parts, ["5\n6\n", "7\n", "8\n", "9\n", "10\n"]);
        assert_eq!((a.home.len(), b.home.len()), (1, 2));
        assert_eq!(m.peak_blocks, 3);
        let made = a.made;
        a.current = None;
        assert!(a.refill());
        assert_eq!(a.made, made, "a block given back is filled again");
        let c = a.current.as_ref().unwrap();
        assert!(c.bytes.is_empty() && c.index.is_empty());
    }

    /// A worker makes blocks as it needs them, by itself up to [`BLOCKS_BEFORE_HELPING`] (past them a run writes
    /// out what it can first), never more than [`BLOCKS_PER_WORKER`]: then it has none until the collector writes
    /// one out (or drops them), and none is made after that.
    #[test]
    fn a_worker_has_its_blocks_only_and_gets_them_back() {
        let (tx, mut m) = EventMerge::new();
        let mut a = BlockWriter::new(0);
        for t in 0..BLOCKS_PER_WORKER as u64 {
            fill(&mut a, &[t]);
            a.hand_on(&tx);
            // `hand_on` takes the next block at once while fewer than BLOCKS_BEFORE_HELPING were made.
            assert_eq!(
                a.current.is_some(),
                (t as usize + 1) < BLOCKS_BEFORE_HELPING
            );
        }
        assert_eq!(a.made, BLOCKS_PER_WORKER);
        assert!(
            !a.refill() && !a.refill_upto_bound(),
            "every block is at the collector"
        );
        assert_eq!(written(&mut m, Some(1)), "0\n");
        assert!(a.refill());
        assert_eq!(a.made, BLOCKS_PER_WORKER);
        m.discard();
        assert_eq!(a.home.len(), BLOCKS_PER_WORKER - 1);
        fill(&mut a, &[100]);
        a.hand_on(&tx);
        assert!(a.current.as_ref().is_some_and(|b| b.index.is_empty()));
        assert_eq!(a.made, BLOCKS_PER_WORKER);
    }

    fn written(m: &mut EventMerge, watermark: Option<u64>) -> String {
        let mut out = Vec::new();
        let mut take = |p: Piece<'_>| {
            match p {
                Piece::Rendered(_, b) => out.extend_from_slice(b),
                Piece::RenderedParts(_, parts) => {
                    parts.iter().for_each(|b| out.extend_from_slice(b))
                }
                Piece::Events(_) => {}
            }
            Ok::<(), ()>(())
        };
        match watermark {
            Some(w) => m.release(w, &mut take).unwrap(),
            None => m.release_all(&mut take).unwrap(),
        }
        String::from_utf8(out).unwrap()
    }

    /// The output sent and not yet received is counted: a sender past the bound waits for the collector, which it
    /// wakes, and goes on once the collector has taken the backlog; a sender whose collector never comes goes on
    /// after a bounded wait (no hang); after the collector's release nothing is counted any more.
    #[test]
    fn the_output_waiting_for_the_collector_is_bounded() {
        let (tx, mut m) = EventMerge::new();
        let big = || Batch::Rendered(1, vec![b'x'; BACKLOG_MAX / 2 + 1]);
        // Nobody collects: the second send is past the bound, waits its bounded time, and returns.
        tx.send(1, big());
        tx.send(2, big());
        assert!(tx.backlog.bytes.load(Relaxed) > BACKLOG_MAX);
        let mut n = 0;
        m.release(3, |_| {
            n += 1;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!((n, tx.backlog.bytes.load(Relaxed)), (2, 0));
        // A sender on another thread past the bound, the collector (this thread, which the sender wakes) taking what
        // comes: every batch arrives, and the count ends at 0.
        let sender = {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for seq in 0..8 {
                    tx.send(seq, big());
                }
            })
        };
        let mut got = 0;
        while got < 8 {
            m.release(u64::MAX, |_| {
                got += 1;
                Ok::<(), ()>(())
            })
            .unwrap();
            std::thread::park_timeout(std::time::Duration::from_millis(2));
        }
        sender.join().unwrap();
        assert_eq!(tx.backlog.bytes.load(Relaxed), 0);
    }

    /// Packets' rendered output is handed on gathered, several packets in one piece (at most [`PARTS_MAX`] of them,
    /// and a piece is handed on once it holds [`PARTS_BYTES`]), in sequence order, with their line counts; a
    /// release hands on all it gathered, however little.
    #[test]
    fn packets_rendered_output_is_handed_on_gathered_and_in_order() {
        let (tx, mut m) = EventMerge::new();
        let n = 2 * PARTS_MAX as u64 + 3;
        // Sent out of order, as two workers would.
        for seq in (1..=n)
            .filter(|s| s % 2 == 0)
            .chain((1..=n).filter(|s| s % 2 == 1))
        {
            tx.send(seq, Batch::Rendered(1, format!("{seq}\n").into_bytes()));
        }
        // One large packet's output fills a piece by bytes alone.
        tx.send(n + 1, Batch::Rendered(2, vec![b'x'; PARTS_BYTES]));
        let mut pieces = Vec::new();
        let mut text = Vec::new();
        let mut lines = 0;
        m.release_all(|p| {
            if let Piece::RenderedParts(l, parts) = p {
                pieces.push(parts.len());
                lines += l;
                parts.iter().for_each(|b| text.extend_from_slice(b));
            }
            Ok::<(), ()>(())
        })
        .unwrap();
        let mut want: Vec<u8> = (1..=n)
            .flat_map(|s| format!("{s}\n").into_bytes())
            .collect();
        want.extend(vec![b'x'; PARTS_BYTES]);
        assert!(text == want, "the packets' output in sequence order");
        assert_eq!(lines, n + 2);
        assert_eq!(pieces, [PARTS_MAX, PARTS_MAX, 4]);
        // A release with one small packet's output hands it on.
        tx.send(n + 2, Batch::Rendered(1, b"last\n".to_vec()));
        assert_eq!(written(&mut m, Some(n + 3)), "last\n");
    }

    #[test]
    fn the_shares_of_a_sweep_merge_by_key_and_keep_their_place_among_the_packets() {
        // Packet 5's output, then the two shares of the sweep before packet 6 (one message each), then packet 6's.
        let (tx, mut m) = EventMerge::new();
        let out = std::sync::Arc::default();
        tx.send(5, Batch::Rendered(1, b"p5\n".to_vec()));
        tx.send(6, share(0, 0, true, &[1, 4, 9], &out));
        tx.send(6, share(0, 1, true, &[2, 3, 10, 11], &out));
        tx.send(6, Batch::Rendered(1, b"p6\n".to_vec()));
        // At the watermark 6 the sweep tagged 6 is complete and written; packet 6's output is not yet.
        assert_eq!(written(&mut m, Some(6)), "p5\n1\n2\n3\n4\n9\n10\n11\n");
        assert_eq!(written(&mut m, None), "p6\n");
        assert_eq!(out.load(Acquire), 0, "every message dropped once written");
    }

    /// A share in several messages: the collector writes a segment only once every worker has one waiting or has
    /// sent its last message, so the output is that of whole shares, and it drops each message it has written (the
    /// sender may then send another) while the rest of the shares is still to come.
    #[test]
    fn shares_in_several_messages_are_written_as_they_come_in_key_order() {
        let (tx, mut m) = EventMerge::new();
        let (w0, w1) = (std::sync::Arc::default(), std::sync::Arc::default());
        tx.send(5, Batch::Rendered(1, b"p5\n".to_vec()));
        tx.send(6, share(0, 0, false, &[1, 4], &w0));
        // Worker 1 may still send a key below 1: only what is before the sweep.
        assert_eq!(written(&mut m, Some(6)), "p5\n");
        tx.send(6, share(0, 1, false, &[2, 3], &w1));
        // 4 waits for worker 1's next message.
        assert_eq!(written(&mut m, Some(6)), "1\n2\n3\n");
        assert_eq!(
            w1.load(Acquire),
            0,
            "worker 1's message is written and dropped"
        );
        assert_eq!(w0.load(Acquire), 1, "worker 0's is not written to its end");
        tx.send(6, share(0, 1, true, &[10], &w1));
        assert_eq!(written(&mut m, Some(6)), "4\n");
        // A second group tagged 6 (the end of the input after the sweep) comes after the first, whatever the order
        // its messages come in.
        tx.send(6, share(1, 1, true, &[0], &w1));
        tx.send(6, share(0, 0, true, &[], &w0));
        tx.send(6, share(1, 0, true, &[], &w0));
        assert_eq!(written(&mut m, Some(6)), "10\n0\n");
        tx.send(6, Batch::Rendered(1, b"p6\n".to_vec()));
        assert_eq!(written(&mut m, Some(6)), "");
        assert_eq!(written(&mut m, Some(7)), "p6\n");
        assert_eq!((w0.load(Acquire), w1.load(Acquire)), (0, 0));
        assert_eq!(m.share_messages, 6);
    }

    /// An event to render in a test: its time and flow id are its line.
    pub(super) fn ev(ts: u64, id: u64) -> Event {
        let (key, side) = FlowKey::new(
            std::net::IpAddr::from([10, 0, 0, 1]),
            1,
            std::net::IpAddr::from([10, 0, 0, 2]),
            2,
            17,
        );
        Event {
            ts_ns: ts,
            flow_id: id,
            pcap_cnt: None,
            seq: 0,
            key,
            client: side,
            dir: side,
            kind: crate::event::EventKind::Packet(Box::new(crate::event::TaggedPacket {
                data: Box::new([]),
                linktype: 1,
                wire_len: 0,
                session: true,
            })),
        }
    }

    /// Workers sending large shares in small messages: each waits while two of its messages are out, the collector
    /// writes as they come, and the output is the shares merged by key. What the collector holds at once is a few
    /// messages, not the shares (a wait that ran out of time, on a starved collector, lets one more out).
    #[test]
    fn a_large_share_goes_out_in_bounded_messages_and_merges_whole() {
        let render = |buf: &mut Vec<u8>, evs: &[Event]| {
            for e in evs {
                buf.extend_from_slice(format!("{:06} {}\n", e.ts_ns, e.flow_id).as_bytes());
            }
        };
        let render: &Renderer = &render;
        // Two lines a message (each is 9 or 10 bytes).
        let (tx, mut m) = EventMerge::with_share_chunk(16);
        let want: String = (0..1000u64)
            .map(|ts| format!("{ts:06} {}\n", ts % 2))
            .collect();
        std::thread::scope(|scope| {
            for w in 0..2u64 {
                let tx = tx.clone();
                scope.spawn(move || {
                    let out = Emitter {
                        events: tx,
                        render: Some(render),
                    };
                    let mut share = ShareOut::new(&out, 6, 0, w as usize, 2);
                    for i in 0..500u64 {
                        let ts = 2 * i + w;
                        share.event((ts, w, 0), ev(ts, w));
                    }
                    share.finish();
                });
            }
            let mut text = String::new();
            let since = std::time::Instant::now();
            while text.len() < want.len() && since.elapsed() < std::time::Duration::from_secs(60) {
                text.push_str(&written(&mut m, Some(6)));
                std::thread::park_timeout(std::time::Duration::from_millis(1));
            }
            assert!(text == want, "{} bytes against {}", text.len(), want.len());
        });
        // 1,000 lines in messages of two: about 500, and never more than a few of them held (each at most 20 bytes).
        assert!(m.share_messages >= 500, "{} messages", m.share_messages);
        let most = (2 * SHARE_IN_FLIGHT + m.share_waits_timed_out() as usize) * 20;
        assert!(
            m.peak_share_bytes <= most,
            "the collector held {} bytes of shares at once (bound {most})",
            m.peak_share_bytes
        );
    }
}

/// The workers' output path allocates nothing per packet once buffers circulate (see [`EventSender`]). A counting
/// allocator for this crate's unit tests; it counts only on a thread that asked it to, so the other tests are not
/// affected.
#[cfg(test)]
mod no_alloc {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    struct Counting;

    thread_local! {
        /// Allocation calls on this thread while counting (`None`: not counting).
        static ALLOCS: Cell<Option<u64>> = const { Cell::new(None) };
    }

    fn count() {
        let _ = ALLOCS.try_with(|c| {
            if let Some(n) = c.get() {
                c.set(Some(n + 1));
            }
        });
    }

    // SAFETY: forwards to the system allocator unchanged; only counts calls.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: same contract as the caller's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            count();
            // SAFETY: same contract as the caller's.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: same contract as the caller's.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count();
            // SAFETY: same contract as the caller's.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Allocation calls `f` makes on this thread.
    fn allocs_in(f: impl FnOnce()) -> u64 {
        ALLOCS.with(|c| c.set(Some(0)));
        f();
        ALLOCS.with(|c| c.replace(None)).unwrap_or(0)
    }

    fn ev(ts: u64) -> Event {
        super::tests::ev(ts, ts % 7)
    }

    /// One worker sends 20,000 packets' output (rendered, and whole), at most 64 packets ahead of what the
    /// collector has written out (the reader's window bounds that in a run); the collector writes as it goes. A send
    /// allocates only when no spent buffer is back: each buffer is allocated once, with room for a packet's usual
    /// output, and never more than 65 exist (the 64 in flight and the one being filled), so the whole run allocates
    /// at most 65 times, however many packets. When they are made depends on how far the collector falls behind,
    /// which the machine's load decides (a collector descheduled late in the run lets the worker get further ahead
    /// than it ever did before), so the bound is on the total, not on the first packets. (Before, every send
    /// allocated its buffer and grew it, and the channel a block every 31 messages; and buffers that started empty
    /// grew again when first reused for a packet with more output.)
    #[test]
    fn a_packets_output_is_sent_in_a_spent_buffer_without_allocating() {
        let render = |buf: &mut Vec<u8>, evs: &[Event]| {
            for _ in evs {
                buf.extend_from_slice(b"{\"event_type\":\"flow\"}\n");
            }
        };
        let render: &Renderer = &render;
        for rendered in [true, false] {
            let engine = crate::Engine::new(crate::EngineConfig::default(), None, None);
            let (tx, mut m) = EventMerge::new();
            let sent = AtomicU64::new(0);
            let written = AtomicU64::new(0);
            const N: u64 = 20_000;
            let (early, late, lines) = std::thread::scope(|scope| {
                let worker = scope.spawn(|| {
                    let out = Emitter {
                        events: tx,
                        render: rendered.then_some(render),
                    };
                    let mut ctx = engine.new_ctx();
                    let (mut early, mut late) = (0, 0);
                    for seq in 0..N {
                        while seq > written.load(Acquire) + 64 {
                            std::thread::yield_now();
                        }
                        ctx.events.push(ev(seq));
                        if seq % 3 == 0 {
                            ctx.events.push(ev(seq));
                        }
                        let n = allocs_in(|| out.send(seq, &mut ctx));
                        if seq < 1000 {
                            early += n;
                        } else {
                            late += n;
                        }
                        sent.store(seq + 1, Release);
                    }
                    (early, late)
                });
                let mut lines = 0u64;
                loop {
                    // The watermark first, then the channel.
                    let w = sent.load(Acquire);
                    m.release(w, |p| {
                        lines += match p {
                            Piece::Rendered(n, _) | Piece::RenderedParts(n, _) => n,
                            Piece::Events(evs) => evs.len() as u64,
                        };
                        Ok::<(), ()>(())
                    })
                    .unwrap();
                    written.store(w, Release);
                    if w == N {
                        break;
                    }
                    std::thread::yield_now();
                }
                let (early, late) = worker.join().unwrap();
                (early, late, lines)
            });
            assert_eq!(lines, N + N.div_ceil(3), "every line written");
            assert_eq!(m.spilled(), 0);
            assert!(
                early + late <= 65,
                "rendered {rendered}: {N} sends allocated {} times ({early} in the first 1,000)",
                early + late
            );
        }
    }
}
