//! # Every worker reads the input: a streaming run without a dispatcher
//!
//! Under a placement every worker can compute alike from the input alone ([`Placement`]: `dh`'s fixed function of
//! the flow, the CRC-16 of the flow identifier modulo the workers, [`Engine::owns_bundle`]; or an indirection table
//! that every worker rebalances identically at the sweeps), a worker needs nobody to tell it which packets are its
//! own: it can go through the whole input itself, run every packet through its own pre-scheduling stage (decode,
//! defragment), and inspect only those filed under its bundles ([`Engine::process_owned`]), skipping the rest. That
//! is the single-threaded loop with a filter, on each worker. No reader thread (on two cores the reader and two
//! workers are three busy threads time-sharing them), no dispatcher, no wake-ups: the input is read once, in
//! batches of consecutive packets that whichever worker needs one first reads and keys for everyone
//! (module `shared`: each packet's record and its key from its link and IP headers alone,
//! [`flowbundle_decode::keyonly::plain_bundle`], a function of the packet alone), and the other workers take as they
//! are; nothing else crosses between cores but the output. What it costs: each worker goes through the packets it
//! skips (their keys are read, not computed; fragments, tunnels and odd packets are decoded in full, as the
//! single-threaded loop decodes them), and defragments every datagram.
//!
//! Output in input order, as the other streaming runs: each inspected packet's output is tagged with its
//! position, each worker's share of a sweep tagged between the packet it follows and the next one, and the
//! collector ([`crate::EventMerge`]) releases everything below the *watermark*, the least position every worker
//! has published ([`EachReads::watermark`]). Rendered output goes in blocks of many packets' lines that the worker
//! owns and gets back once they are written ([`crate::stream::BlockWriter`]); a worker's published position stops
//! at the oldest packet whose output is still in its block, and it hands its block on at every sweep and, when that
//! packet holds the watermark back (no other worker published a count past it), [`BLOCK_AGE`] packets later or
//! before it waits for anything. A worker with all its blocks out writes out what can be written itself (the
//! collector's work, under the lock the collector takes: [`EachReads::with_helper`]) rather than wait for the
//! collector's thread to be scheduled. Sweeps need no quiescent point: the single-threaded loop's sweep
//! positions depend only on the input ([`crate::SweepClock`]), which every worker reads whole, so each sweeps its
//! own shards ([`Engine::owned_shards`]) when it reaches one, and the collector merges the shares by key as it
//! merges the reader's broadcast sweeps, as their bounded messages come ([`crate::Share`]). The end of the input
//! likewise: each worker ends its own flows at the single-threaded run's end time, which each knows from the packets
//! it read.
//!
//! A worker does not wait for the others at a sweep either. What a flow's end reads of the others' work is the FTP
//! expectation table ([`crate::expect`]): the single-threaded run's sweep sees the announcements of every packet
//! before it and none after. A worker that reaches a sweep before the others takes its timed-out flows out of its
//! shards there (so no later packet finds them, as in the single-threaded run) and goes on with the packets after
//! it; it ends them, and sends its share, once every worker has got past the sweep (its published count stays at
//! the sweep until then, which holds the watermark there: the collector writes nothing after the sweep before the
//! share). Their lookups are made "as of" the sweep's position, which the table answers whatever a worker ahead has
//! applied since. The worker that gets there last ends its flows at once. A sweep that ends more than
//! `DEFER_FLOWS_MAX` flows of a worker (after a jump in capture time, every flow) waits for the others instead, so
//! that a worker never holds the flows before a jump while it makes those after it. Measured on the merged nDPI trace, the two
//! waits of every sweep (until every worker got there, then until every share was swept) were 9-22% of each
//! worker's time: the stretch of input between two sweeps is often one capture, one pair of addresses, so one
//! worker does it while the other skips it, and both waited for the busier each time.
//!
//! A rebalanced table ([`Placement::Balanced`]) moves buckets of bundles between workers only at a sweep. Every
//! worker counts the bytes of each bucket's packets as it reads (its own and those it skips alike), so at the sweep
//! all hold the same counts and compute the same new table, each when it gets there, with nothing exchanged: the
//! placement depends on the input alone, never on timing. It weighs bytes rather than packets, and moves buckets
//! only while the loads differ by more than a quarter of the stretch's bytes (`lfb` and `rss`; see
//! [`Placement::Balanced`]). A stretch of input
//! says little about the next one (on a merged trace, often another capture), so each move is a guess that may
//! unbalance the next stretch, and it makes the bucket's new owner wait for the old one where it is ahead: the
//! fewer moves, the closer the table stays to the hash's own spread. Measured on the merged nDPI trace (callgrind,
//! per thread), the busiest worker executed 410-414 M instructions rebalancing by packets at every sweep, 372-374 M
//! by bytes past a tenth (`dh`'s fixed function: 361 M), with less than half the moves. Its sweeps do not wait for every worker either. A bucket changes hands
//! with its shards: the worker that had it has inspected every packet of it before the sweep, and taken the sweep's
//! timed-out flows out of its shards, when it publishes that sweep (`swept`); the worker that takes it over inspects
//! no packet of it after the sweep, and sweeps none of its shards, before then ([`EachReads::await_takeovers`]). Where
//! the new owner is ahead of the old one, it holds the bucket's packets back (copies them, bounded, `HeldBack`) and
//! goes on with its other buckets' packets, inspecting the held ones in input order once the old owner has published
//! the sweep: it waits only where there is no room left, at an IP fragment (placed by the defragmenter), at its next sweep,
//! or at the end (measured on the ×5 merged nDPI trace with the community rules, waiting at the bucket's first packet
//! after the sweep cost the new owner 16-37 ms of a 0.49 s run). Their output goes in messages of their own, tagged
//! with their positions (a block holds packets in input order), and the worker's published count stays at the oldest
//! packet held. The stores and loads of `swept` order the old owner's use of the shards before the new one's. Every
//! wait of a worker keeps ending its deferred sweeps and publishing its count, so none waits for one that waits for
//! it: the worker behind every other waits for nobody (the ones it could wait for are ahead of it, and a takeover
//! waits only for a worker behind).
//!
//! Memory stays bounded whatever the input's length: a worker that is more than [`EachReads::window`] packets ahead
//! of the slowest published count waits, so the output the collector holds back, and the flows of a worker's sweeps
//! not yet ended, cover at most that many packets; and the batches of the shared read not yet taken by every worker
//! hold at most [`SHARED_BYTES`] bytes of packets ([`EachReads::sharing_at_most`]), past which the worker that would
//! read the next one waits for the slowest too (counted with the window's waits).

mod shared;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use flowbundle_types::BUNDLES;

use flowbundle_ingest::{LinkType, PacketRecord, ReadStats};

pub use shared::{BATCH_BUFFER, SHARED_BYTES};
use shared::{Batch, Next, SharedInput};

use crate::engine::{Engine, Expired, WorkerCtx, packet_at, sweep_at};
use crate::stream::{
    BLOCK_AGE, BlockWriter, Emitter, EventSender, Renderer, ShareOut, StatsBoard, send_flush,
};
use crate::sweep::SweepClock;
use flowbundle_decode::prestage::Prestage;

/// Packets a worker reads between two publications of its position (and two looks at the others').
const PUBLISH_EVERY: u64 = 64;

/// Most flows a sweep takes out of a worker's shards to end once the others got there: a sweep that ends more waits
/// for them instead, and ends its flows then. Such a sweep comes after a jump in capture time, which ends every flow
/// at once (copies of a trace one after another, captures of different days): a worker going on past it would make
/// the flows after the jump while it still held every flow before it, and peak memory would grow with the number
/// of such jumps (measured on ten times the merged nDPI trace: 36.9-37.0 MiB against 34.2-34.5 MiB with every sweep
/// waiting). An ordinary sweep of the merged trace ends a few hundred flows a worker.
const DEFER_FLOWS_MAX: usize = 1024;

/// Most bytes of packets a worker holds back for the buckets it took over ([`HeldBack`]); past it (or past half the
/// window of packets) it waits for the worker that had the bucket instead.
const HELD_BYTES: usize = 1 << 20;

/// A value on cache lines of its own.
#[repr(align(128))]
struct Aligned<T>(T);

impl<T> std::ops::Deref for Aligned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A position published on its own cache line (each worker writes its own, the collector and the other workers read).
#[repr(align(128))]
struct Position(AtomicU64);

// A rebalanced table leaves its buckets where they are while the loads of the stretch of input since the last
// sweep differ by at most `1 / within` of the stretch's bytes, and stops moving buckets once they do (see the
// module documentation): `lfb`'s and `rss`'s tables move only past a quarter.
//
// Why `rss` moves less: its buckets are coarse (128, each 512 bundles), so a move shifts a large share of the load
// on the strength of one stretch, which says little about the next. On the ×5 merged nDPI trace, with each stretch's
// inspected packets, bytes and ended flows per worker priced by a cost model (section *rss moves its buckets only
// past a quarter* of `BENCHMARKS.md`), moving past a tenth left the busier worker more work between the sweeps at
// which the workers meet than `dh`'s fixed function does (whose spread the table starts from); past a quarter it
// moves 30 buckets instead of 84 (each a takeover its new owner may wait for), and leaves less than either.
//
// `lfb`'s finer table (1,024 buckets) moved 147 buckets a run past a tenth, its new owners waiting 15-28 ms a run
// with rules for the takeovers; past a quarter, alternated on the x5 merged trace against a tenth (section
// *End-of-session re-run, sixteenth session* of `BENCHMARKS.md`, 7 rounds, `--threads 1` in the same rounds), the
// speed-up over one thread went 1.53 -> 1.64x without rules, 1.74 -> 1.83x with the community rules and
// 1.69 -> 1.82x with the 10k content set by the minimum.

/// How the workers of an [`EachReads`] run share the bundles: a function of the input alone, which every worker
/// computes alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// `dh`: bundle modulo the workers ([`Engine::owns_bundle`]), for the whole run.
    Fixed,
    /// An indirection table of `buckets` buckets (bundle modulo `buckets`, rounded up to a power of two), which
    /// starts round-robin (bucket `k` on worker `k` modulo the workers) and is rebalanced at every sweep from the
    /// bytes of the packets each bucket received since the previous one: while the most and the least loaded worker
    /// differ by more than `1 / within` of those bytes, the bucket of the most loaded whose count is
    /// closest to half the gap (a move that strictly lowers the larger load) moves to the least loaded, at most
    /// `moves` buckets a sweep. `buckets` is at most the bundles (65,536).
    Balanced {
        buckets: usize,
        moves: usize,
        within: u64,
    },
}

impl Placement {
    /// The placement for a policy's name under `--workers-read`: `dh` keeps its fixed function; `rss` its
    /// 128-bucket indirection table, rebalanced at the sweeps past a quarter; `lfb` a finer one (1,024 buckets, more
    /// moves a sweep, past a quarter too), as it balances bundles rather than hash buckets (see [`Placement::Balanced`]). `None` for a policy that cannot be computed from the input alone.
    pub fn for_policy(name: &str) -> Option<Placement> {
        match name {
            "dh" => Some(Placement::Fixed),
            "rss" => Some(Placement::Balanced {
                buckets: 128,
                moves: 8,
                within: 4,
            }),
            "lfb" => Some(Placement::Balanced {
                buckets: 1024,
                moves: 64,
                within: 4,
            }),
            _ => None,
        }
    }
}

/// One worker's copy of the placement: identical on every worker at every packet (see the module documentation).
struct Owners {
    placement: Placement,
    workers: usize,
    /// The worker this copy belongs to, and the shards of the bundles it owns now (kept with the table).
    me: usize,
    mine: Vec<usize>,
    /// The buckets this worker owns now, in order (room for every bucket, made once; see `list_shards`).
    own: Vec<usize>,
    /// Bucket → worker (empty under [`Placement::Fixed`]).
    owner: Vec<u16>,
    /// Bytes (captured) of each bucket's packets since the last rebalancing (every packet read, whoever inspects
    /// it).
    counts: Vec<Cell<u64>>,
    /// Per bucket this worker took over at a sweep which the worker that had it had not swept yet: that sweep's
    /// number (from 1); 0 when there is nothing to wait for (see [`Owners::takeover_of`]).
    takeover: Vec<u64>,
    /// The buckets with a takeover still to wait for, with the worker that had each.
    pending: Vec<(usize, usize)>,
    /// The buckets a rebalancing moved, with the worker each had before it (room kept between sweeps).
    moved: Vec<(usize, u16)>,
}

impl Owners {
    /// Worker `me`'s copy.
    fn new(placement: Placement, workers: usize, me: usize) -> Self {
        let buckets = match placement {
            Placement::Fixed => 0,
            // A power of two: a bundle's bucket is its low bits.
            Placement::Balanced { buckets, .. } => buckets.clamp(1, BUNDLES).next_power_of_two(),
        };
        let mut o = Owners {
            placement,
            workers,
            me,
            // Room for every shard at once, made once: see `list_shards`.
            mine: Vec::with_capacity(BUNDLES),
            own: Vec::with_capacity(buckets),
            owner: (0..buckets).map(|k| (k % workers) as u16).collect(),
            counts: (0..buckets).map(|_| Cell::new(0)).collect(),
            takeover: vec![0; buckets],
            pending: Vec::new(),
            moved: Vec::new(),
        };
        o.list_shards();
        o
    }

    /// The worker that inspects `bundle`'s packets; under a table, also counts the packet's `bytes` in its bucket
    /// (called once per packet read, on every worker alike).
    #[inline]
    fn place(&self, bundle: u16, bytes: usize) -> usize {
        match self.placement {
            Placement::Fixed => usize::from(bundle) % self.workers,
            Placement::Balanced { .. } => {
                let k = usize::from(bundle) & (self.owner.len() - 1);
                let c = &self.counts[k];
                // At least 1: a packet of no captured bytes still costs its reading.
                c.set(c.get().saturating_add((bytes as u64).max(1)));
                usize::from(self.owner[k])
            }
        }
    }

    /// Whether a bucket this worker took over at a sweep still waits for the worker that had it.
    #[inline]
    fn has_takeovers(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The takeover `bundle`'s packets wait for, if any: `(the worker that had its bucket, the sweep it must have
    /// swept)`. Only a bundle this worker owns now can have one.
    fn takeover_of(&self, bundle: u16) -> Option<(usize, u64)> {
        let k = usize::from(bundle) & self.owner.len().checked_sub(1)?;
        let sweep = *self.takeover.get(k)?;
        if sweep == 0 {
            return None;
        }
        let from = self
            .pending
            .iter()
            .find(|&&(b, _)| b == k)
            .map(|&(_, f)| f)?;
        Some((from, sweep))
    }

    /// Forgets the takeovers whose worker `done(from, sweep)` says is done with the bucket; returns whether none is
    /// left.
    fn clear_takeovers(&mut self, done: impl Fn(usize, u64) -> bool) -> bool {
        let takeover = &mut self.takeover;
        self.pending.retain(|&(k, from)| {
            if done(from, takeover[k]) {
                takeover[k] = 0;
                false
            } else {
                true
            }
        });
        self.pending.is_empty()
    }

    /// The shards of the bundles this worker owns now, for its sweeps.
    fn shards(&self) -> &[usize] {
        &self.mine
    }

    /// Lists the shards of the bundles this worker owns now in `mine`, in the room it was made with.
    ///
    /// Why in place: the list is up to 65,536 shards (512 KiB), and it is remade at every sweep that moves buckets.
    /// Made anew each time, it was the run's largest allocation freed while the run went on (each worker, a few
    /// times a sweep while collecting grew it), and glibc raises its threshold for serving allocations from their own
    /// mappings to the largest such block freed: every smaller block after that (a sweep's output messages, large
    /// tables) came from the workers' arenas, which keep what they once held. Under `lfb` and `rss` with every
    /// worker reading, peak RSS rose by 15% from the merged nDPI trace to ten times it, against 3–5% under `dh`,
    /// whose list never changes.
    fn list_shards(&mut self) {
        let (me, workers) = (self.me, self.workers);
        self.mine.clear();
        match self.placement {
            Placement::Fixed => self.mine.extend(Engine::owned_shards(me, workers)),
            Placement::Balanced { .. } => {
                // The bundles of bucket `k` are `k`, `k + B`, `k + 2B`, ... (`B` buckets, a power of two, at most the
                // bundles): this worker's buckets, listed once in order and repeated at every multiple of `B`, are
                // its shards in ascending order without a test per bundle. (Filtering the 65,536 bundles through the
                // table cost about 25 instructions each, 1.6 M a list, remade at each sweep that moves buckets: 5% of
                // the two workers' instructions under `lfb` on the merged nDPI trace, callgrind.)
                let buckets = self.owner.len();
                self.own.clear();
                self.own
                    .extend((0..buckets).filter(|&k| usize::from(self.owner[k]) == me));
                let own = &self.own;
                for base in (0..BUNDLES).step_by(buckets) {
                    self.mine.extend(own.iter().map(|&k| base + k));
                }
            }
        }
    }

    /// Rebalances the table from the counts since the last call and restarts them; returns the buckets moved. Every
    /// worker computes the same, at its sweep number `sweep` (from 1), once it has taken that sweep's timed-out flows
    /// out of its shards (see the module documentation). A bucket that comes to this worker from one whose sweeps
    /// (`swept`, the count it published) are not yet there becomes a takeover its packets and its sweeps wait for.
    fn rebalance(&mut self, sweep: u64, swept: impl Fn(usize) -> u64) -> usize {
        let Placement::Balanced { moves, within, .. } = self.placement else {
            return 0;
        };
        let mut loads = vec![0u64; self.workers];
        for (k, c) in self.counts.iter().enumerate() {
            let l = &mut loads[usize::from(self.owner[k])];
            *l = l.saturating_add(c.get());
        }
        // Loads this close are left as they are (see `Placement::Balanced`).
        let within = loads.iter().fold(0u64, |a, &l| a.saturating_add(l)) / within.max(1);
        let mut moved = 0;
        while moved < moves {
            // Ties go to the lowest worker number, so that every worker picks the same.
            let hi = (0..self.workers).max_by_key(|&w| (loads[w], std::cmp::Reverse(w)));
            let lo = (0..self.workers).min_by_key(|&w| (loads[w], w));
            let (Some(hi), Some(lo)) = (hi, lo) else {
                break;
            };
            let gap = loads[hi] - loads[lo];
            if gap <= within {
                break;
            }
            // A bucket whose count c is in (0, gap) lowers the larger of the two loads: the closest to gap / 2
            // evens them best (ties: the lowest bucket).
            let best = (0..self.owner.len())
                .filter(|&k| usize::from(self.owner[k]) == hi)
                .map(|k| (k, self.counts[k].get()))
                .filter(|&(_, c)| c > 0 && c < gap)
                .min_by_key(|&(k, c)| ((2 * c).abs_diff(gap), k));
            let Some((k, c)) = best else { break };
            if !self.moved.iter().any(|&(b, _)| b == k) {
                self.moved.push((k, hi as u16));
            }
            self.owner[k] = lo as u16;
            loads[hi] -= c;
            loads[lo] += c;
            moved += 1;
        }
        for c in self.counts.iter() {
            c.set(0);
        }
        // The buckets this worker gets from one not yet done with them (the worker that had each before the sweep:
        // one that had it in between never touched it) become takeovers its packets and its sweeps wait for. None
        // is left from an earlier sweep: this one waited for them before sweeping.
        debug_assert!(
            self.pending.is_empty(),
            "a takeover left from an earlier sweep"
        );
        for (k, was) in self.moved.drain(..) {
            let was = usize::from(was);
            if usize::from(self.owner[k]) == self.me && was != self.me && swept(was) < sweep {
                self.takeover[k] = sweep;
                self.pending.push((k, was));
            }
        }
        if moved > 0 {
            self.list_shards();
        }
        moved
    }
}

/// A streaming run in which every worker reads the input (see the module documentation).
///
/// Aligned to 128 bytes (two cache lines) so that no other value shares a line with it: every worker reads its
/// fields on every packet, and the caller keeps it on the stack of the thread that collects the output.
#[repr(align(128))]
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
    placement: Placement,
    /// The one read of the inputs, in batches every worker takes (module `shared`); boxed on lines of its own, as
    /// every worker locks it once a batch.
    input: Box<Aligned<SharedInput<'a>>>,
    /// Writes out what the collector can write now, unless another thread is at it (`false` then); given the
    /// watermark read just before (see [`EachReads::with_helper`]).
    help: Option<&'a (dyn Fn(u64) -> bool + Sync)>,
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
    /// One line per input that starts before the previous one ended (worker 0's only).
    pub warnings: Vec<String>,
    /// Each input read, with its reader's counters.
    pub inputs_read: Vec<(PathBuf, ReadStats)>,
    /// The earliest and latest capture times read (worker 0's only).
    pub capture_span: Option<(u64, u64)>,
    /// Buckets of bundles that changed workers at the sweeps ([`Placement::Balanced`]; the same on every worker).
    pub moved: u64,
    /// Sweeps done (the same on every worker).
    pub sweeps: u64,
    /// Nanoseconds this worker waited for the others at the sweeps that end more than `DEFER_FLOWS_MAX` flows (after
    /// a jump in capture time); no other sweep waits.
    pub waited_at_sweeps_ns: u64,
    /// Nanoseconds this worker waited at the end of the input until every worker had read it all: what the imbalance
    /// between the workers' whole shares costs.
    pub waited_at_end_ns: u64,
    /// Nanoseconds this worker waited for the workers that had the buckets of a rebalanced table it took over
    /// ([`EachWorker::takeovers`]) to get to the sweep, at a packet (no room left to hold it back, or an IP fragment)
    /// or at the end of the input.
    pub waited_for_takeovers_ns: u64,
    /// The same at this worker's next sweep (the worker that had a bucket not yet at the sweep it moved at).
    pub waited_for_takeovers_at_sweeps_ns: u64,
    /// Nanoseconds this worker waited for the slowest because it was a window ahead ([`EachReads::window`]), or the
    /// batches of the input held for the slowest were at their bound ([`EachReads::sharing_at_most`]).
    pub waited_ahead_ns: u64,
    /// Nanoseconds this worker waited for one of its blocks of rendered output to come back (see
    /// [`crate::stream::BlockWriter`]), the blocks it made, and the times it wrote the output out itself instead
    /// of waiting for the collector (see [`EachReads::with_helper`]).
    pub waited_for_output_ns: u64,
    pub blocks_made: u64,
    pub output_written: u64,
    /// Sweeps whose flows this worker ended after it went on (another worker had not reached the sweep yet).
    pub sweeps_ended_later: u64,
    /// Buckets of a rebalanced table this worker took over from a worker that had not got to the sweep yet (whose
    /// packets and sweeps then waited for it, where this worker got to them first).
    pub takeovers: u64,
    /// Packets of such buckets this worker read before that worker was done with them, held back and inspected once
    /// it was instead of waiting (see the module documentation).
    pub held_back: u64,
    /// The most bytes of packets the batches of the shared read not yet taken by every worker held at once (the
    /// same on every worker; see [`EachReads::sharing_at_most`]).
    pub peak_shared_bytes: usize,
    /// Nanoseconds this worker waited for another to read the batch of the input it needed.
    pub waited_for_input_ns: u64,
}

/// A worker's own: its number, the blocks it renders its packets' output into (see [`BlockWriter`]), and the
/// packets it holds back for the buckets it took over ([`HeldBack`]).
struct Mine {
    w: usize,
    ring: RefCell<BlockWriter>,
    held: RefCell<HeldBack>,
}

/// The packets of buckets a worker took over at a sweep that it read before the worker that had the bucket was done
/// with it (had published that sweep): copied here, already through the pre-scheduling stage
/// ([`Engine::stage_held`]), and inspected in input order as soon as that worker is done
/// ([`EachReads::inspect_held`]), while this worker goes on with the packets of its other buckets instead of
/// waiting. The worker's published count stays at the oldest packet held (its output is not sent yet). Bounded by
/// [`HELD_BYTES`] and half the window of packets: past either, the worker waits as before.
#[derive(Default)]
struct HeldBack {
    bytes: Vec<u8>,
    packets: VecDeque<HeldPacket>,
    /// The sweeps each worker had published when the held packets were last looked at (room made once).
    swept: Vec<u64>,
}

/// One packet held back: its record (its bytes in [`HeldBack::bytes`]), its number among the packets read, its
/// key-only bundle, and the takeover it waits for (the worker that had its bucket, the sweep it must have published).
#[derive(Clone, Copy)]
struct HeldPacket {
    i: u64,
    ts_ns: u64,
    orig_len: u32,
    interface: u32,
    link_type: LinkType,
    start: usize,
    bundle: u16,
    len: usize,
    from: usize,
    sweep: u64,
}

impl HeldBack {
    /// Makes the next pass over the held packets look at them whatever `swept` then reads: a takeover was found done
    /// by a read of `swept` later than the last pass's, and a packet of its bucket held after that pass would
    /// otherwise stay held while the bucket's next packets are inspected before it.
    fn forget_swept(&mut self) {
        self.swept.clear();
    }

    /// Holds packet `i` (`rec`, of `bundle`, waiting for `(from, sweep)`) when there is room (see [`HeldBack`]).
    fn hold(
        &mut self,
        i: u64,
        rec: &PacketRecord<'_>,
        bundle: u16,
        (from, sweep): (usize, u64),
        window: u64,
    ) -> bool {
        let len = rec.data.len();
        if self.bytes.len().saturating_add(len) > HELD_BYTES
            || self
                .packets
                .front()
                .is_some_and(|p| i.saturating_sub(p.i) >= window / 2)
        {
            return false;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(rec.data);
        self.packets.push_back(HeldPacket {
            i,
            ts_ns: rec.ts_ns,
            orig_len: rec.orig_len,
            interface: rec.interface,
            link_type: rec.link_type,
            start,
            bundle,
            len,
            from,
            sweep,
        });
        true
    }

    /// The oldest packet held.
    fn oldest(&self) -> Option<u64> {
        self.packets.front().map(|p| p.i)
    }
}

/// A sweep a worker made before every worker had got there (see the module documentation): the flows it took out of
/// its shards, ended once every worker has inspected every packet before the sweep.
struct Deferred {
    /// The sweep follows the `i`-th packet read (from 0).
    i: u64,
    /// Its number among the sweeps (the group its share belongs to).
    group: u64,
    flows: Vec<Expired>,
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
        // Each worker applies the announcements of its own packets at its own pace: lookups see the table as of
        // their own position.
        engine.expectations().track_positions();
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
            placement: Placement::Fixed,
            input: Box::new(Aligned(SharedInput::new(files, workers, SHARED_BYTES))),
            help: None,
        }
    }

    /// Holds at most `bytes` bytes of packets in the batches of the shared read not yet taken by every worker
    /// instead of [`SHARED_BYTES`]: a worker that would read past it waits for the slowest (see the module `shared`).
    pub fn sharing_at_most(mut self, bytes: usize) -> Self {
        self.input = Box::new(Aligned(SharedInput::new(self.files, self.workers, bytes)));
        self
    }

    /// A worker that finds none of its output blocks at hand writes out what can be written itself with `help`
    /// (the collector's work, when no other thread is doing it: `help` returns `false` then), instead of waiting for
    /// the collector's thread to be scheduled.
    pub fn with_helper(mut self, help: &'a (dyn Fn(u64) -> bool + Sync)) -> Self {
        self.help = Some(help);
        self
    }

    /// Shares the bundles among the workers by `placement` instead of `dh`'s fixed function.
    pub fn placed_by(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
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

    /// The least packet count the workers but `w` have published (`u64::MAX` when there are none).
    fn others_least(&self, w: usize) -> u64 {
        self.done
            .iter()
            .enumerate()
            .filter(|&(v, _)| v != w)
            .map(|(_, d)| d.0.load(Acquire))
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
    /// `2i + 2`, the end of the input after `n` packets `2n` (after the sweep after the last packet, if any); a
    /// worker that has published `k` has sent every packet's output below `k`, but maybe not yet its share of the
    /// sweep after packet `k - 1` (it publishes `k` before that sweep, to say it got there). So while the workers
    /// sweep, the sweep's tag is the watermark, and the collector writes the shares as their messages come (see
    /// [`crate::Share`]).
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
        let mut report = EachWorker {
            ctx: engine.new_ctx(),
            prestage: Prestage::new(engine.config()),
            packets_read: 0,
            errors: Vec::new(),
            warnings: Vec::new(),
            inputs_read: Vec::new(),
            capture_span: None,
            moved: 0,
            sweeps: 0,
            waited_at_sweeps_ns: 0,
            waited_at_end_ns: 0,
            waited_for_takeovers_ns: 0,
            waited_for_takeovers_at_sweeps_ns: 0,
            waited_ahead_ns: 0,
            waited_for_output_ns: 0,
            blocks_made: 0,
            output_written: 0,
            sweeps_ended_later: 0,
            takeovers: 0,
            held_back: 0,
            peak_shared_bytes: 0,
            waited_for_input_ns: 0,
        };
        // The single-threaded run's latest capture time (its end of input), which every worker learns alike.
        let mut latest = 0u64;
        let mut i = 0u64;
        let mut sweeps = 0u64;
        let mut owners = Owners::new(self.placement, n, w);
        let me = Mine {
            w,
            ring: RefCell::new(BlockWriter::new(w)),
            held: RefCell::new(HeldBack {
                swept: Vec::with_capacity(n),
                ..HeldBack::default()
            }),
        };
        // This worker's sweeps made before every worker got there, oldest first (see the module documentation).
        let mut deferred: VecDeque<Deferred> = VecDeque::new();
        let base = self.first_position;
        // The batch of the shared read this worker is in, the next packet of it, and the batches taken so far.
        let mut batch: Option<Arc<Batch>> = None;
        let mut at = 0usize;
        let mut taken = 0u64;
        'inputs: loop {
            // Asked every `PUBLISH_EVERY` packets: the flag lies where the caller put it, maybe beside what
            // the collector writes.
            if i.is_multiple_of(PUBLISH_EVERY) && self.stop.load(Relaxed) {
                break 'inputs;
            }
            if batch.as_ref().is_none_or(|b| at >= b.len()) {
                let done = batch.take();
                batch = self.next_batch(
                    taken,
                    done,
                    (&mut report.waited_ahead_ns, &mut report.waited_for_input_ns),
                    (&me, &mut ctx, &mut deferred, base, i),
                );
                at = 0;
                taken += 1;
            }
            // The packet read once for every worker, with its key-only bundle (`Engine::plain_bundle`).
            let Some((rec, key)) = batch.as_deref().and_then(|b| b.get(at)) else {
                break 'inputs;
            };
            at += 1;
            let num = self.first_position + i;
            let mut held = false;
            if owners.has_takeovers() {
                // The takeovers done since are forgotten, then the packets held back for them inspected (see
                // `await_takeovers`); a packet of a bucket still taken over is held back, room permitting,
                // instead of waiting for the worker that had the bucket.
                let swept = |from: usize, sweep: u64| self.swept[from].0.load(Acquire) >= sweep;
                let pending = owners.pending.len();
                owners.clear_takeovers(swept);
                if owners.pending.len() != pending {
                    // A takeover forgotten here may have been seen done later than the held packets' last
                    // pass read `swept` (a packet of it held since): the pass must look again.
                    me.held.borrow_mut().forget_swept();
                }
                self.inspect_held(&me, &mut ctx, base);
                // A packet the key-only decoding does not place, unless it is an IP fragment, is placed by
                // decoding it in full (what `process_keyed` files it under), so that it waits for its own
                // bucket only, or is held back, rather than wait for every takeover.
                let placed = key.or_else(|| engine.whole_bundle(&rec));
                let taken = placed.and_then(|b| owners.takeover_of(b).map(|t| (b, t)));
                held = taken.is_some_and(|(b, takeover)| {
                    me.held.borrow_mut().hold(i, &rec, b, takeover, self.window)
                });
                if let (true, Some((b, _))) = (held, taken) {
                    engine.stage_held(&mut pre, &rec, &mut latest);
                    // Counted in its bucket as every packet read is.
                    owners.place(b, rec.data.len());
                    report.held_back += 1;
                } else if !self.await_takeovers(
                    &mut owners,
                    placed,
                    &mut report.waited_for_takeovers_ns,
                    (&me, &mut ctx, &mut deferred, base, i),
                ) {
                    break 'inputs;
                }
            }
            // A block to render the packet's output into, before the packet (a wait settles, which may end
            // sweeps with the context: it must hold no packet's events then).
            if !held
                && self.out.render.is_some()
                && !me.ring.borrow_mut().refill()
                && !self.write_out_then_refill(&me, &mut report.output_written)
            {
                let written = Cell::new(0u64);
                let got = |_: &VecDeque<Deferred>| {
                    let mut r = me.ring.borrow_mut();
                    if r.refill_upto_bound() {
                        return true;
                    }
                    // Every block out: write out what can be written, when nobody else is at it.
                    match self.help {
                        Some(help) => {
                            // The watermark first, then the channel (see `crate::stream`).
                            if help(self.watermark()) {
                                written.set(written.get() + 1);
                            }
                        }
                        None => r.wake(&self.out.events),
                    }
                    r.refill_upto_bound()
                };
                if !self.wait_settling(
                    &mut report.waited_for_output_ns,
                    (&me, &mut ctx, &mut deferred, base, i),
                    got,
                ) {
                    break 'inputs;
                }
                report.output_written += written.get();
            }
            // SAFETY: this worker alone inspects packets of the bundles it owns (`owns` partitions them among the
            // workers, and a bucket taken over at a sweep is used only once the worker that had it is done with
            // it, `await_takeovers`), so it alone uses their shards.
            let mine = if held {
                None
            } else {
                let owners = &owners;
                unsafe {
                    engine.process_keyed(
                        &mut ctx,
                        &mut pre,
                        num,
                        &rec,
                        key,
                        |b| {
                            let mine = owners.place(b, rec.data.len()) == w;
                            debug_assert!(!mine || owners.takeover_of(b).is_none());
                            debug_assert!(
                                !mine
                                    || me.held.borrow().packets.iter().all(|p| p.bundle
                                        & ((owners.owner.len().max(1) - 1) as u16)
                                        != b & ((owners.owner.len().max(1) - 1) as u16)),
                                "a packet inspected before an older one of its bucket held back"
                            );
                            mine
                        },
                        &mut latest,
                    )
                }
            };
            if mine.is_some() {
                match self.out.render {
                    Some(render) => {
                        let mut ring = me.ring.borrow_mut();
                        if ring.add(2 * i + 1, i, &mut ctx, render, &self.out.events) {
                            ring.hand_on(&self.out.events);
                        }
                    }
                    None => self.out.send(2 * i + 1, &mut ctx),
                }
                if let Some(b) = self.board {
                    ctx.handled += 1;
                    if ctx.handled.is_multiple_of(StatsBoard::EVERY) {
                        b.publish(&ctx);
                    }
                }
            }
            if let Some(now) = clock.packet(rec.ts_ns) {
                let group = sweeps;
                sweeps += 1;
                if w == 0 {
                    // One sweep, however many shares: counted once.
                    ctx.add_sweep();
                }
                // Made at the sweep's position: its flows look up what every packet before it announced and
                // nothing after (see `crate::expect`).
                ctx.input_at = sweep_at(base + i);
                // The buckets this worker took over at the previous sweep: the workers that had them must be
                // done with their shards before this one sweeps them.
                if owners.has_takeovers()
                    && !self.await_takeovers(
                        &mut owners,
                        None,
                        &mut report.waited_for_takeovers_at_sweeps_ns,
                        (&me, &mut ctx, &mut deferred, base, i + 1),
                    )
                {
                    break 'inputs;
                }
                // Says it got here (its own packets before the sweep inspected, their output handed on), unless
                // an earlier sweep of its own still waits.
                me.ring.borrow_mut().hand_on(&self.out.events);
                self.settle(&me, &mut ctx, &mut deferred, base, i + 1, false);
                ctx.input_at = sweep_at(base + i);
                let mut many = false;
                if deferred.is_empty() && self.slowest() > i {
                    // Every worker has inspected every packet before the sweep: its flows end now.
                    let mut share = ShareOut::new(&self.out, 2 * i + 2, group, w, n);
                    // SAFETY: as above; its own shards only.
                    unsafe {
                        engine.expire_shards(
                            &mut ctx,
                            now,
                            owners.shards().iter().copied(),
                            |ctx, (d, id)| share.segment((d, id, 0), ctx),
                        )
                    };
                    share.finish();
                } else {
                    // Some worker has not got here: the flows leave their shards now (no later packet finds
                    // them) and end once every worker has.
                    // SAFETY: as above; its own shards only, and `EachReads` runs no staged detection.
                    let flows = unsafe {
                        engine.take_expired(&mut ctx, now, owners.shards().iter().copied())
                    };
                    many = flows.len() > DEFER_FLOWS_MAX;
                    deferred.push_back(Deferred { i, group, flows });
                    if !many {
                        report.sweeps_ended_later += 1;
                    }
                }
                // Its shards are swept (what is left of the sweep, ending the flows taken out, touches none): a
                // bucket that leaves it here may be taken over from now on. The stores and loads of `swept`
                // order its last use of the bucket's shards before the next owner's first.
                debug_assert!(
                    me.held.borrow().packets.is_empty(),
                    "swept with packets held"
                );
                self.swept[w].0.store(sweeps, Release);
                if many
                    && !self.wait_settling(
                        &mut report.waited_at_sweeps_ns,
                        (&me, &mut ctx, &mut deferred, base, i + 1),
                        |deferred| deferred.is_empty(),
                    )
                {
                    break 'inputs;
                }
                report.moved += owners.rebalance(sweeps, |v| self.swept[v].0.load(Acquire)) as u64;
                report.takeovers += owners.pending.len() as u64;
            }
            i += 1;
            if i.is_multiple_of(PUBLISH_EVERY) {
                self.settle(&me, &mut ctx, &mut deferred, base, i, false);
                let expect = engine.expectations();
                if !expect.is_empty() {
                    // Every lookup still to come is at or after the slowest worker's position.
                    expect.advance(base.saturating_add(self.slowest()).saturating_mul(2));
                }
                self.wait_settling(
                    &mut report.waited_ahead_ns,
                    (&me, &mut ctx, &mut deferred, base, i),
                    |_| i <= self.slowest().saturating_add(self.window),
                );
            }
        }
        drop(batch);
        // The end of the input once every worker has read it all (as the reader's flush waits for the packets in
        // flight), and its own later sweeps ended: the flows ended look up what every packet announced.
        // The packets held back for takeovers inspected first: this worker's published count stays at the oldest.
        let caught_up = !owners.has_takeovers()
            || self.await_takeovers(
                &mut owners,
                None,
                &mut report.waited_for_takeovers_ns,
                (&me, &mut ctx, &mut deferred, base, i),
            );
        me.ring.borrow_mut().hand_on(&self.out.events);
        if caught_up
            && self.wait_settling(
                &mut report.waited_at_end_ns,
                (&me, &mut ctx, &mut deferred, base, i),
                |deferred| deferred.is_empty() && self.slowest() >= i,
            )
        {
            ctx.input_at = packet_at(base + i);
            // SAFETY: as above; its own shards only.
            unsafe { engine.end_shards(&mut ctx, latest, owners.shards().iter().copied()) };
            // Tagged as a sweep after the last packet would be, at the watermark every worker has now published
            // (so the collector writes it out as it comes), after any such sweep (group numbers are sweep counts).
            send_flush(ShareOut::new(&self.out, 2 * i, u64::MAX, w, n), &mut ctx);
        }
        me.ring.borrow_mut().hand_on(&self.out.events);
        self.done[w].0.store(u64::MAX, Release);
        report.blocks_made = me.ring.borrow().made as u64;
        report.ctx = ctx;
        report.prestage = pre;
        report.packets_read = i;
        report.sweeps = sweeps;
        // What reading the inputs reported, whoever read them: complete, as this worker has taken the last batch
        // (or reading stopped). The time line is worker 0's alone, as the warnings and the span are the run's.
        let log = self.input.log();
        report.errors = log.errors;
        report.inputs_read = log.inputs_read;
        if w == 0 {
            report.warnings = log.warnings;
            report.capture_span = log.capture_span;
        }
        report.peak_shared_bytes = log.peak_shared_bytes;
        report
    }

    /// Batch `k` of the shared read for worker `me` (which has taken `k` batches and is done with `done`): the one
    /// published, or the one it reads now (waiting for another worker reading it is counted in `waited_for_input`);
    /// when reading it would hold more than the bound of bytes in batches the slowest worker has not taken, it waits
    /// as [`EachReads::wait_settling`] (with the rest, counted in `waited`) until it can. `None` at the end of the
    /// input, or when reading stopped.
    fn next_batch(
        &self,
        k: u64,
        done: Option<Arc<Batch>>,
        (waited, waited_for_input): (&mut u64, &mut u64),
        (me, ctx, deferred, base, read): (&Mine, &mut WorkerCtx, &mut VecDeque<Deferred>, u64, u64),
    ) -> Option<Arc<Batch>> {
        let mut done = done;
        loop {
            match self
                .input
                .take(k, self.engine, self.stop, done.take(), waited_for_input)
            {
                Next::Batch(b) => return Some(b),
                Next::End => return None,
                Next::Full => {
                    if !self.wait_settling(
                        waited,
                        (me, &mut *ctx, &mut *deferred, base, read),
                        |_| self.input.can_take(k),
                    ) {
                        return None;
                    }
                }
            }
        }
    }

    /// With [`BLOCKS_BEFORE_HELPING`](crate::stream::BLOCKS_BEFORE_HELPING) blocks made and none back: writes out
    /// what can be written (when no other thread is at it, counted in `written`) before making one more, up to the
    /// bound: `true` when a block is then at hand.
    fn write_out_then_refill(&self, me: &Mine, written: &mut u64) -> bool {
        let mut r = me.ring.borrow_mut();
        if let Some(help) = self.help {
            // The watermark first, then the channel (see `crate::stream`).
            if help(self.watermark()) {
                *written += 1;
            }
            if r.refill() {
                return true;
            }
        }
        r.refill_upto_bound()
    }

    /// Waits, as [`EachReads::wait_settling`] (with `(me, ctx, deferred, base, read)`), until the workers that had
    /// the buckets this worker took over at its last sweep are done with them (have published that sweep): the one
    /// of `bundle` when given (a packet keyed from its headers alone), every one otherwise (a packet whose bundle
    /// only its decoding tells, or a sweep of this worker's shards). False when reading stopped meanwhile.
    ///
    /// No wait here lasts for ever: the worker it waits for is behind this one (it has not got to a sweep this one
    /// is past), and a worker behind every other never waits on a takeover.
    fn await_takeovers(
        &self,
        owners: &mut Owners,
        bundle: Option<u16>,
        waited: &mut u64,
        settling: (&Mine, &mut WorkerCtx, &mut VecDeque<Deferred>, u64, u64),
    ) -> bool {
        let (me, ctx, deferred, base, read) = settling;
        let swept = |from: usize, sweep: u64| self.swept[from].0.load(Acquire) >= sweep;
        let target = bundle.map(|b| owners.takeover_of(b));
        let pending = owners.pending.len();
        let ok = if owners.clear_takeovers(swept) {
            true
        } else {
            let settling = (me, &mut *ctx, &mut *deferred, base, read);
            match target {
                // Not a bucket taken over: nothing to wait for.
                Some(None) => true,
                Some(Some((from, sweep))) => {
                    self.wait_settling(waited, settling, |_| swept(from, sweep))
                }
                None => self.wait_settling(waited, settling, |_| {
                    owners
                        .pending
                        .iter()
                        .all(|&(k, from)| swept(from, owners.takeover[k]))
                }),
            }
        };
        // The takeovers done are forgotten, then the packets held back for them inspected: in that order, a
        // bucket that no longer waits has no packet held back (both read the same `swept`, which only grows), so
        // its next packet comes after them.
        owners.clear_takeovers(swept);
        if owners.pending.len() != pending {
            me.held.borrow_mut().forget_swept();
        }
        self.inspect_held(me, ctx, base);
        ok
    }

    /// Inspects the packets held back for takeovers now done (see [`HeldBack`]), in input order, sending each one's
    /// output tagged with its position; the others stay held. `ctx` holds no packet's events.
    fn inspect_held(&self, me: &Mine, ctx: &mut WorkerCtx, base: u64) {
        let mut held = me.held.borrow_mut();
        if held.packets.is_empty() {
            return;
        }
        let HeldBack {
            bytes,
            packets,
            swept,
        } = &mut *held;
        // Nothing to do where no worker has published a sweep since the last pass: every packet held since was
        // held because its takeover was not done as of then or later (it is asked for every packet read while
        // there are takeovers, and a pass costs a look at every packet held).
        if swept.len() == self.swept.len()
            && swept
                .iter()
                .zip(self.swept.iter())
                .all(|(&was, now)| now.0.load(Acquire) == was)
        {
            return;
        }
        // What each worker has swept, read once: read again for each packet, a later packet of a bucket could find
        // its takeover done where an earlier one, still held, did not.
        swept.clear();
        swept.extend(self.swept.iter().map(|s| s.0.load(Acquire)));
        let mut k = 0;
        while let Some(&p) = packets.get(k) {
            if swept.get(p.from).is_none_or(|&s| s < p.sweep) {
                k += 1;
                continue;
            }
            packets.remove(k);
            let rec = PacketRecord {
                ts_ns: p.ts_ns,
                orig_len: p.orig_len,
                interface: p.interface,
                link_type: p.link_type,
                data: bytes.get(p.start..p.start + p.len).unwrap_or_default(),
            };
            // SAFETY: the packet's bundle is this worker's (it held the packet for a bucket it took over), and the
            // worker that had the bucket is done with its shards (it published the sweep; `swept`'s store and this
            // load order its use before this one).
            unsafe { self.engine.process_held(ctx, base + p.i, &rec, p.bundle) };
            self.sent(ctx, 2 * p.i + 1);
        }
        if packets.is_empty() {
            bytes.clear();
        }
    }

    /// Sends the output of the packet `ctx` just inspected, tagged `seq`, in a message of its own (not in the
    /// worker's block, whose packets come in input order), and publishes the counters when it is time.
    fn sent(&self, ctx: &mut WorkerCtx, seq: u64) {
        self.out.send(seq, ctx);
        if let Some(b) = self.board {
            ctx.handled += 1;
            if ctx.handled.is_multiple_of(StatsBoard::EVERY) {
                b.publish(ctx);
            }
        }
    }

    /// Ends worker `w`'s deferred sweeps that every worker has now got past, oldest first, sending each share, and
    /// publishes how far its output is sent: up to its oldest deferred sweep still waiting, or `read` packets when
    /// none waits (`base` numbers the packets), and no further than the oldest packet whose output is still in its
    /// block (`waiting`: the worker is about to wait or waiting, and hands its block on at once when it holds the
    /// watermark back).
    fn settle(
        &self,
        me: &Mine,
        ctx: &mut WorkerCtx,
        deferred: &mut VecDeque<Deferred>,
        base: u64,
        read: u64,
        waiting: bool,
    ) {
        let w = me.w;
        // The packets held back for the takeovers now done (see `HeldBack`).
        self.inspect_held(me, ctx, base);
        // The oldest deferred sweep keeps this worker's published count at the packet it follows, so the slowest
        // count is past it when every other worker has got past it too.
        while let Some(d) = deferred.front()
            && self.slowest() > d.i
        {
            let Some(d) = deferred.pop_front() else { break };
            ctx.input_at = sweep_at(base + d.i);
            let mut share = ShareOut::new(&self.out, 2 * d.i + 2, d.group, w, self.workers);
            self.engine.end_expired(ctx, d.flows, |ctx, (dl, id)| {
                share.segment((dl, id, 0), ctx)
            });
            share.finish();
        }
        // Its block is handed on when its oldest packet is far enough back (at once when `waiting`) and holds the
        // watermark back (no other worker has published a count past it; a tie hands on, so that workers waiting
        // at the same count never hold it for each other); until then the count stops at that packet (the
        // collector has none of the block's output yet).
        let mut ring = me.ring.borrow_mut();
        if ring.pending_since().is_some_and(|at| {
            (waiting || read.saturating_sub(at) >= BLOCK_AGE) && at <= self.others_least(w)
        }) {
            ring.hand_on(&self.out.events);
        }
        let published = deferred
            .front()
            .map_or(read, |d| d.i + 1)
            .min(ring.pending_since().unwrap_or(u64::MAX))
            .min(me.held.borrow().oldest().unwrap_or(u64::MAX));
        self.done[w].0.store(published, Release);
    }

    /// Waits (yields, then sleeps) until `ready` holds, ending worker `w`'s deferred sweeps as the others get past
    /// them ([`EachReads::settle`], with `(w, ctx, deferred, base, read)`) meanwhile, and adds the time waited to
    /// `waited` (nanoseconds; the clock is read only when `ready` does not hold at once): `true`, or `false` when
    /// reading stopped meanwhile. Every wait of a worker settles: a worker that waited without it could hold the
    /// published count another waits on (see the module documentation).
    fn wait_settling(
        &self,
        waited: &mut u64,
        (me, ctx, deferred, base, read): (&Mine, &mut WorkerCtx, &mut VecDeque<Deferred>, u64, u64),
        ready: impl Fn(&VecDeque<Deferred>) -> bool,
    ) -> bool {
        self.settle(me, ctx, deferred, base, read, false);
        if ready(deferred) {
            return true;
        }
        // About to wait: the output in its block goes on first when it holds the watermark back, so that nobody
        // waits for it meanwhile (and at every turn of the wait, as the others get past it).
        self.settle(me, ctx, deferred, base, read, true);
        let t0 = std::time::Instant::now();
        let mut spins = 0u32;
        let r = loop {
            if self.stop.load(Relaxed) {
                break false;
            }
            spins += 1;
            if spins < 16 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            self.settle(me, ctx, deferred, base, read, true);
            if ready(deferred) {
                break true;
            }
        };
        *waited += u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loads(o: &Owners, counts: &[u32]) -> Vec<u64> {
        let mut l = vec![0u64; o.workers];
        for (k, &c) in counts.iter().enumerate() {
            l[usize::from(o.owner[k])] += u64::from(c);
        }
        l
    }

    #[test]
    fn a_rebalanced_table_evens_the_loads_and_is_the_same_on_every_worker() {
        let placement = Placement::Balanced {
            buckets: 16,
            moves: 8,
            within: 10,
        };
        // Worker 0 starts with the even buckets: all the load.
        let counts: Vec<u32> = (0..16)
            .map(|k| if k % 2 == 0 { 10 + k } else { 0 })
            .collect();
        let mut a = Owners::new(placement, 2, 0);
        let mut b = Owners::new(placement, 2, 1);
        for o in [&a, &b] {
            for (k, &c) in counts.iter().enumerate() {
                for _ in 0..c {
                    o.place(k as u16, 1);
                }
            }
        }
        let before = loads(&a, &counts);
        assert_eq!(before[1], 0);
        // The list of a worker's shards is remade where it was made (no allocation at a sweep).
        let list = a.mine.as_ptr();
        let moved = a.rebalance(1, |_| u64::MAX);
        assert_eq!(a.mine.as_ptr(), list);
        assert_eq!(moved, b.rebalance(1, |_| u64::MAX));
        assert_eq!(a.owner, b.owner, "every worker computes the same table");
        assert!(moved > 0);
        let after = loads(&a, &counts);
        assert_eq!(after.iter().sum::<u64>(), before.iter().sum::<u64>());
        let gap = after[0].abs_diff(after[1]);
        assert!(
            gap < before[0] / 4,
            "loads {after:?} after moving {moved} buckets"
        );
        // The counts restart: a second rebalancing without packets moves nothing.
        assert_eq!(a.rebalance(2, |_| u64::MAX), 0);
        // Every bundle has one owner, and the shards list it under that one.
        let (s0, s1) = (a.shards(), b.shards());
        assert_eq!(s0.len() + s1.len(), BUNDLES);
        assert!(s0.iter().all(|&b| a.owner[b % 16] == 0));
        assert!(s1.iter().all(|&b| a.owner[b % 16] == 1));
        // In ascending order, as the fixed placement's (the end of the input ends the flows shard by shard).
        assert!(s0.windows(2).all(|p| p[0] < p[1]));
        assert!(s1.windows(2).all(|p| p[0] < p[1]));
    }

    #[test]
    fn a_bucket_taken_over_from_a_worker_behind_waits_for_its_sweep_and_only_its_own() {
        let placement = Placement::Balanced {
            buckets: 16,
            moves: 8,
            within: 10,
        };
        // Worker 0 starts with the even buckets and gets all the packets: worker 1 takes some over at sweep 3.
        let mut a = Owners::new(placement, 2, 0);
        let mut b = Owners::new(placement, 2, 1);
        for o in [&a, &b] {
            for k in (0..16u16).step_by(2) {
                for _ in 0..(10 + k) {
                    o.place(k, 1);
                }
            }
        }
        // Worker 0 has published sweep 2 only: worker 1, ahead, waits for it at the buckets it took.
        let moved = b.rebalance(3, |v| if v == 0 { 2 } else { 3 });
        assert!(moved > 0);
        assert_eq!(a.rebalance(3, |_| 3), moved, "worker 1 is there: no wait");
        assert!(
            !a.has_takeovers(),
            "worker 0 gave buckets away and took none"
        );
        assert_eq!(b.pending.len(), moved);
        let taken: Vec<usize> = (0..16).filter(|&k| b.owner[k] == 1 && k % 2 == 0).collect();
        assert_eq!(taken.len(), moved);
        for &k in &taken {
            assert_eq!(b.takeover_of(k as u16), Some((0, 3)));
            // The same bucket's other bundles too (a bundle's bucket is its low bits).
            assert_eq!(b.takeover_of((k + 16 * 7) as u16), Some((0, 3)));
        }
        // Its own buckets from the start, and the ones worker 0 keeps, wait for nothing.
        assert_eq!(b.takeover_of(1), None);
        let kept = (0..16).find(|&k| b.owner[k] == 0).unwrap();
        assert_eq!(b.takeover_of(kept as u16), None);
        // Worker 0 not yet there: still waiting; once it published sweep 3, nothing is left.
        assert!(!b.clear_takeovers(|_, sweep| sweep <= 2));
        assert!(b.has_takeovers());
        assert!(b.clear_takeovers(|_, sweep| sweep <= 3));
        assert!(!b.has_takeovers());
        assert_eq!(b.takeover_of(taken[0] as u16), None);
        // Had worker 0 published the sweep, worker 1 would not have waited at all.
        let mut c = Owners::new(placement, 2, 1);
        for k in (0..16u16).step_by(2) {
            for _ in 0..(10 + k) {
                c.place(k, 1);
            }
        }
        assert_eq!(c.rebalance(3, |_| 3), moved);
        assert!(!c.has_takeovers());
        assert_eq!(c.owner, b.owner);
    }

    #[test]
    fn a_table_weighs_bytes_and_leaves_loads_within_a_tenth_as_they_are() {
        let placement = Placement::Balanced {
            buckets: 16,
            moves: 8,
            within: 10,
        };
        let fill = |o: &Owners, per_bucket: &[(u16, u32, usize)]| {
            for &(k, packets, bytes) in per_bucket {
                for _ in 0..packets {
                    o.place(k, bytes);
                }
            }
        };
        // Worker 0 (even buckets) gets many small packets, worker 1 (odd) a few large ones: more packets on 0, more
        // bytes on 1. The bytes decide: a bucket moves from 1 to 0.
        let mut o = Owners::new(placement, 2, 0);
        // 800 packets, 48,000 bytes against 60 packets, 90,000 bytes: the 30,000-byte bucket moves (the 60,000-byte
        // one would not lower the larger load), then 78,000 against 60,000, and no bucket of worker 0 is smaller
        // than that gap.
        fill(
            &o,
            &[(0, 400, 60), (2, 400, 60), (1, 40, 1500), (3, 20, 1500)],
        );
        assert_eq!(o.rebalance(1, |_| u64::MAX), 1);
        assert_eq!((o.owner[1], o.owner[3]), (1, 0));
        assert_eq!((o.owner[0], o.owner[2]), (0, 0));
        // Loads that differ by a tenth of the stretch's bytes or less stay as they are: 5,251 against 4,751 bytes (a
        // packet without captured bytes counts one).
        let mut o = Owners::new(placement, 2, 0);
        fill(&o, &[(0, 50, 105), (2, 1, 0), (1, 50, 95), (3, 1, 0)]);
        let before = o.owner.clone();
        assert_eq!(o.rebalance(1, |_| u64::MAX), 0);
        assert_eq!(o.owner, before);
        // Past a tenth they move, and stop once within it: 11,000 against 4,000 bytes; the 4,000-byte bucket, the
        // closest to half the gap, leaves 7,000 against 8,000, within a tenth of 15,000.
        let mut o = Owners::new(placement, 2, 0);
        fill(
            &o,
            &[
                (0, 10, 500),
                (2, 10, 100),
                (4, 10, 100),
                (6, 10, 400),
                (1, 40, 100),
            ],
        );
        assert_eq!(o.rebalance(1, |_| u64::MAX), 1);
        assert_eq!(o.owner[6], 1);
        assert_eq!(o.rebalance(2, |_| u64::MAX), 0, "the counts restart");
    }

    /// `rss`'s and `lfb`'s tables move only past a quarter of the stretch's bytes: 6,000 against 4,000 bytes (a
    /// fifth of 10,000 apart) moves no bucket of either; 7,000 against 3,000 moves the 2,000-byte bucket of each.
    #[test]
    fn rss_and_lfb_move_only_past_a_quarter() {
        // Bytes of buckets 0 and 2 (worker 0), 1 and 3 (worker 1), in packets of 100 bytes.
        let moved = |policy: &str, bytes: [usize; 4]| {
            let mut o = Owners::new(Placement::for_policy(policy).unwrap(), 2, 0);
            for (bundle, b) in bytes.iter().enumerate() {
                for _ in 0..b / 100 {
                    o.place(bundle as u16, 100);
                }
            }
            let n = o.rebalance(1, |_| u64::MAX);
            (n, o.owner[2])
        };
        assert_eq!(moved("lfb", [5_000, 2_000, 1_000, 2_000]), (0, 0));
        assert_eq!(moved("rss", [5_000, 2_000, 1_000, 2_000]), (0, 0));
        assert_eq!(moved("lfb", [5_000, 1_500, 2_000, 1_500]), (1, 1));
        assert_eq!(moved("rss", [5_000, 1_500, 2_000, 1_500]), (1, 1));
    }

    #[test]
    fn the_fixed_placement_is_dh_and_never_moves() {
        let mut o = Owners::new(Placement::Fixed, 3, 1);
        for b in [0u16, 1, 2, 3, 65535] {
            assert!(Engine::owns_bundle(o.place(b, 100), 3, b));
        }
        assert_eq!(o.rebalance(1, |_| 0), 0);
        assert!(!o.has_takeovers());
        assert_eq!(o.shards(), Engine::owned_shards(1, 3).collect::<Vec<_>>());
    }

    #[test]
    fn a_table_never_names_a_worker_that_does_not_exist() {
        for workers in 1..6 {
            let mut o = Owners::new(Placement::for_policy("rss").unwrap(), workers, 0);
            for b in 0..4096u16 {
                for _ in 0..(b % 7) {
                    o.place(b, 60);
                }
            }
            o.rebalance(1, |_| u64::MAX);
            assert!(o.owner.iter().all(|&w| usize::from(w) < workers));
        }
    }
}
