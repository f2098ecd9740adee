//! # One read of the inputs for every worker of an [`EachReads`](super::EachReads) run
//!
//! Every worker goes through every packet of the input (it keeps its own sweep clock, placement counts and
//! defragmenter, see the module above), but only one of them reads each packet: the one reader of the run keeps the
//! records it hands out where they are ([`CaptureReader::keep_records`]), and a *batch* is a buffer it has left
//! ([`BATCH_BUFFER`] bytes) with the packets it handed out of it, each keyed once ([`Engine::plain_bundle`]: a
//! function of the packet alone). The first worker that needs batch `k` and finds it not read reads it (and batch
//! `k + 1` ahead, see [`SharedInput`]); every other worker takes the published batch as it is. Nothing crosses
//! between the workers but these immutable batches, and what is in them depends on the input alone: the placement
//! stays the single-threaded run's whatever the timing.
//!
//! Why: with a reader per worker each one read, parsed and keyed every packet, and the kernel copied the file out of
//! the page cache once per worker (measured on the ×5 merged nDPI trace without rules: about a fifth of a worker's
//! time, half of it for packets it then skipped). The batches own the reader's buffers rather than copies: copying
//! every packet into a batch of its own cost the run as much CPU as the second read it saved (×10 merged trace,
//! `dh`, no rules: 0.1-0.15 s more user time, 0.1 s less system time of about 4.1 s).
//!
//! Everything about the inputs happens here once, in input order, as the single-threaded loop does it: opening each
//! input (one that fails is an error line, and the next is read), its reader's counters at its end, a read error
//! midway ("stopping this input here", then the next input), and the time line's warnings and capture span.
//!
//! Memory: a batch is freed once every worker has taken it and gone past it (the last one to drop it hands its
//! buffer back to the reader). The batches published and not yet taken by every worker hold at most the bound given
//! to [`SharedInput::new`] ([`SHARED_BYTES`] by default) of buffers, and one batch more (a batch is read only while
//! they are within it: the worker that would read past it waits for the slowest instead, counted in
//! [`EachWorker::waited_ahead_ns`](super::EachWorker::waited_ahead_ns)); each worker holds one more, and the reader
//! one or two. Emptied buffers are kept for reuse rather than freed, so the run's buffers are at most as many as
//! were ever in use at once. A worker alone never waits for the bound: the batches not yet taken by every worker are
//! there only while some worker is behind.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use flowbundle_ingest::{CaptureReader, KeptBuffers, LinkType, PacketRecord, ReadStats, Timeline};

use crate::engine::Engine;

/// The size of the reader's buffers (a batch is the packets of one, see the module documentation): about 550
/// packets of the merged nDPI trace's (average 470 bytes); two reads of the reader ([`CaptureReader`] reads 128 KiB at
/// a time).
pub const BATCH_BUFFER: usize = 256 << 10;

/// The default bound of the bytes of the reader's buffers in batches not yet taken by every worker (see the module
/// documentation): 1 MiB, 4 batches, about 2,200 packets of the merged nDPI trace's. The more a worker may get ahead,
/// the more the peak RSS grows from that trace to ten times it (a worker gets further ahead at times on the longer
/// trace): `--threads 2 --workers-read` without rules, three rounds of 1x then 10x, worst 10x over best 1x 1.093
/// (lfb) and 1.056 (dh) at 2 MiB, 1.061 and 1.046 at 1 MiB, 1.078 and 1.062 at 512 KiB (at 4 MiB, 11%; with a
/// reader per worker, 3-6%). Alternated 7 rounds, 1 MiB against 2 MiB took the same time within 2% (section *One read
/// of the input for every worker* of `BENCHMARKS.md`).
pub const SHARED_BYTES: usize = 1 << 20;

/// One packet of a batch: its record's metadata, where its bytes lie in [`Batch::bytes`] (while the reader holds it:
/// their address), and its key-only bundle.
#[derive(Clone, Copy)]
struct Packet {
    ts_ns: u64,
    orig_len: u32,
    interface: u32,
    link_type: LinkType,
    start: usize,
    len: usize,
    key: Option<u16>,
}

/// Consecutive packets of the input, read once for every worker: a buffer the reader left, and the packets it
/// handed out of it.
#[derive(Default)]
pub struct Batch {
    bytes: Vec<u8>,
    packets: Vec<Packet>,
}

impl Batch {
    /// Packets in the batch.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether it holds no packet (never published so).
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The `n`-th packet's record, and its key-only bundle ([`Engine::plain_bundle`] of it).
    #[inline]
    pub fn get(&self, n: usize) -> Option<(PacketRecord<'_>, Option<u16>)> {
        let p = self.packets.get(n)?;
        let rec = PacketRecord {
            ts_ns: p.ts_ns,
            orig_len: p.orig_len,
            interface: p.interface,
            link_type: p.link_type,
            data: self.bytes.get(p.start..p.start + p.len)?,
        };
        Some((rec, p.key))
    }
}

/// What reading the inputs reported: the same whichever worker read which batch.
#[derive(Clone, Default)]
pub struct InputLog {
    /// One line per input that could not be opened or read to its end.
    pub errors: Vec<String>,
    /// One line per input that starts before the previous one ended.
    pub warnings: Vec<String>,
    /// Each input read, with its reader's counters.
    pub inputs_read: Vec<(PathBuf, ReadStats)>,
    /// The earliest and latest capture times read.
    pub capture_span: Option<(u64, u64)>,
    /// The most bytes of packets the batches not yet taken by every worker held at once.
    pub peak_shared_bytes: usize,
}

/// What [`SharedInput::take`] gives a worker.
pub enum Next {
    /// The batch asked for.
    Batch(Arc<Batch>),
    /// The input is over (or reading stopped): there is no such batch.
    End,
    /// The batch is not read yet, and reading it would take the batches held past the bound: wait until
    /// [`SharedInput::can_take`].
    Full,
}

/// The batches published (under [`SharedInput`]'s `queue` lock, taken briefly by every worker once a batch).
struct Queue {
    /// The batches not yet taken by every worker, with how many workers took each; the front one is batch `first`.
    batches: VecDeque<(Arc<Batch>, usize)>,
    first: u64,
    /// Bytes of packets in `batches`.
    held: usize,
    /// Every input is read (or reading stopped): no batch is published after the last one in `batches`.
    ended: bool,
    /// Batches every worker is done with, kept to read into (all of them: see `SharedInput::take`).
    spare: Vec<Batch>,
    peak: usize,
}

impl Queue {
    /// The number of the next batch to publish.
    fn published(&self) -> u64 {
        self.first + self.batches.len() as u64
    }

    /// Batch `k`, published, taken by one more worker (`None` when it is not published).
    fn take(&mut self, k: u64, workers: usize) -> Option<Arc<Batch>> {
        let n = usize::try_from(k.checked_sub(self.first)?).ok()?;
        let (batch, takers) = self.batches.get_mut(n)?;
        *takers += 1;
        let batch = Arc::clone(batch);
        self.pop_taken(workers);
        Some(batch)
    }

    /// Whether a batch may be read now: none is held, or those held are within `bound`.
    fn room(&self, bound: usize) -> bool {
        self.batches.is_empty() || self.held < bound
    }

    /// Publishes `batch` as the next one, taken by `takers` workers already.
    fn publish(&mut self, batch: Arc<Batch>, takers: usize, workers: usize) {
        self.held += batch.bytes.len();
        self.peak = self.peak.max(self.held);
        self.batches.push_back((batch, takers));
        self.pop_taken(workers);
    }

    /// Drops the batches at the front that every worker has taken (each one's last taker still holds it).
    fn pop_taken(&mut self, workers: usize) {
        while let Some((b, takers)) = self.batches.front()
            && *takers >= workers
        {
            self.held -= b.bytes.len();
            self.first += 1;
            self.batches.pop_front();
        }
    }
}

/// The reading of the inputs (under [`SharedInput`]'s `reader` lock, held by the worker reading a batch).
struct Reader {
    /// The next input to open.
    next_input: usize,
    /// The input being read, and its reader, which keeps the records it hands out in its buffers
    /// ([`CaptureReader::keep_records`]).
    current: Option<(usize, CaptureReader)>,
    /// The buffers to read into between two inputs (the reader's while one is open).
    pool: Option<KeptBuffers>,
    /// The records handed out of the buffer the reader reads into, each with the address of its bytes: a batch once
    /// the reader leaves that buffer.
    pending: Vec<Packet>,
    /// Batches made and not yet published, in order.
    ready: VecDeque<Batch>,
    /// Emptied packet lists, to make batches with.
    lists: Vec<Vec<Packet>>,
    timeline: Timeline,
    log: InputLog,
}

/// The one read of an [`EachReads`](super::EachReads) run's inputs (see the module documentation).
///
/// Two locks: `reader`, held while a batch is read, and `queue`, held only to publish or take one. The first worker
/// to take batch `k` reads batch `k + 1` ahead (unless another worker is reading), before it goes through batch `k`:
/// the others take batch `k` meanwhile, and find the next one published when they get there rather than wait for
/// its reading. (With one lock and no reading ahead, the workers going through the input side by side took turns
/// waiting for each other's reading: slower than every worker reading on its own.) Locked in that order only: a
/// worker holding `queue` never waits for `reader`.
pub struct SharedInput<'a> {
    files: &'a [PathBuf],
    workers: usize,
    bound: usize,
    reader: Mutex<Reader>,
    queue: Mutex<Queue>,
}

/// Locks `m`; a worker that panicked holding it left it whole (batches are published whole or not at all), and the
/// run is being abandoned anyway.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<'a> SharedInput<'a> {
    /// The inputs `files`, read in order for `workers` workers, holding at most `bound` bytes of packets in batches
    /// not yet taken by every worker (see the module documentation).
    pub fn new(files: &'a [PathBuf], workers: usize, bound: usize) -> Self {
        SharedInput {
            files,
            workers: workers.max(1),
            bound,
            reader: Mutex::new(Reader {
                next_input: 0,
                current: None,
                pool: None,
                pending: Vec::new(),
                ready: VecDeque::new(),
                lists: Vec::new(),
                timeline: Timeline::default(),
                log: InputLog::default(),
            }),
            queue: Mutex::new(Queue {
                batches: VecDeque::new(),
                first: 0,
                held: 0,
                ended: false,
                spare: Vec::new(),
                peak: 0,
            }),
        }
    }

    /// Batch `k` (from 0) for a worker that has taken every batch before it, once each, in order; `done` is the batch
    /// it has gone past (its room is reused once every worker has). Reads the batch when no worker has yet (waiting
    /// for the one reading it, if any: the time goes to `waited`, nanoseconds), keying its packets with `engine`, and
    /// the next one ahead when nobody is reading it, unless `stop` is raised.
    pub fn take(
        &self,
        k: u64,
        engine: &Engine,
        stop: &AtomicBool,
        done: Option<Arc<Batch>>,
        waited: &mut u64,
    ) -> Next {
        let emptied = done.and_then(Arc::into_inner);
        {
            let mut q = lock(&self.queue);
            // Kept, however many: the buffers in circulation are bounded (see the module documentation), and
            // freeing one would raise glibc's threshold for serving allocations from their own mappings past its
            // size, so that every smaller block after it came from the arenas, which keep what they once held (peak
            // RSS grew by 10-12% from the merged nDPI trace to ten times it with three kept, 5-8% from the batches'
            // bound alone).
            if let Some(b) = emptied {
                q.spare.push(b);
            }
            debug_assert!(k >= q.first, "batch {k} taken twice");
            if let Some(b) = q.take(k, self.workers) {
                let ahead = q.ended || q.published() > k + 1;
                drop(q);
                // The next one read ahead, unless another worker is at it.
                if !ahead {
                    let reader = match self.reader.try_lock() {
                        Ok(r) => Some(r),
                        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                        Err(TryLockError::WouldBlock) => None,
                    };
                    if let Some(mut reader) = reader {
                        self.read_ahead(&mut reader, k + 1, engine, stop);
                    }
                }
                return Next::Batch(b);
            }
            if q.ended {
                return Next::End;
            }
            debug_assert_eq!(
                k,
                q.published(),
                "a batch asked for before the one before it"
            );
        }
        // Not published: read it, unless the worker reading it now publishes it meanwhile.
        let mut reader = match self.reader.try_lock() {
            Ok(r) => r,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                let t0 = std::time::Instant::now();
                let r = lock(&self.reader);
                *waited += u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
                r
            }
        };
        let room = {
            let mut q = lock(&self.queue);
            if let Some(b) = q.take(k, self.workers) {
                drop(q);
                self.read_ahead(&mut reader, k + 1, engine, stop);
                return Next::Batch(b);
            }
            if q.ended {
                return Next::End;
            }
            if !q.room(self.bound) {
                return Next::Full;
            }
            q.spare.pop().unwrap_or_default()
        };
        let batch = reader.read_batch(room, self.files, engine, stop);
        let mut q = lock(&self.queue);
        if batch.is_empty() {
            q.ended = true;
            q.spare.push(batch);
            return Next::End;
        }
        let batch = Arc::new(batch);
        q.publish(Arc::clone(&batch), 1, self.workers);
        drop(q);
        self.read_ahead(&mut reader, k + 1, engine, stop);
        Next::Batch(batch)
    }

    /// Reads batch `k` ahead (taken by no worker yet) with `reader`, unless it is published, the input ended, or the
    /// batches held are past the bound.
    fn read_ahead(&self, reader: &mut Reader, k: u64, engine: &Engine, stop: &AtomicBool) {
        let room = {
            let mut q = lock(&self.queue);
            if q.ended || q.published() != k || !q.room(self.bound) {
                return;
            }
            q.spare.pop().unwrap_or_default()
        };
        let ahead = reader.read_batch(room, self.files, engine, stop);
        let mut q = lock(&self.queue);
        if ahead.is_empty() {
            q.ended = true;
            q.spare.push(ahead);
        } else {
            q.publish(Arc::new(ahead), 0, self.workers);
        }
    }

    /// Whether [`SharedInput::take`] of batch `k` would not answer [`Next::Full`] now.
    pub fn can_take(&self, k: u64) -> bool {
        let q = lock(&self.queue);
        k < q.published() || q.ended || q.room(self.bound)
    }

    /// What reading the inputs reported so far (all of it once [`SharedInput::take`] answered [`Next::End`]).
    pub fn log(&self) -> InputLog {
        let peak = lock(&self.queue).peak;
        let r = lock(&self.reader);
        InputLog {
            capture_span: r.timeline.span(),
            peak_shared_bytes: peak,
            ..r.log.clone()
        }
    }
}

impl Reader {
    /// Reads the next batch (reusing `room`'s buffer and list): the packets of the next buffer the reader leaves,
    /// from the inputs in order, noting each input's opening, errors and end as the single-threaded loop does. Empty
    /// at the end of the inputs, or once `stop` is raised.
    fn read_batch(
        &mut self,
        room: Batch,
        files: &[PathBuf],
        engine: &Engine,
        stop: &AtomicBool,
    ) -> Batch {
        let Batch { bytes, mut packets } = room;
        self.give(bytes);
        packets.clear();
        if packets.capacity() > 0 && self.lists.len() < 4 {
            self.lists.push(packets);
        }
        loop {
            if let Some(b) = self.ready.pop_front() {
                return b;
            }
            if stop.load(Relaxed) {
                // The input being read is not reported read to its end (as a worker that stops does not).
                self.current = None;
                self.pending.clear();
                self.next_input = files.len();
                return Batch::default();
            }
            let Some((input, reader)) = &mut self.current else {
                let Some(path) = files.get(self.next_input) else {
                    return Batch::default();
                };
                let input = self.next_input;
                self.next_input += 1;
                match CaptureReader::open(path) {
                    Ok(mut r) => {
                        self.timeline.input(path);
                        r.keep_records(
                            self.pool
                                .take()
                                .unwrap_or_else(|| KeptBuffers::new(BATCH_BUFFER)),
                        );
                        self.current = Some((input, r));
                    }
                    Err(e) => self.log.errors.push(format!("{}: {e}", path.display())),
                }
                continue;
            };
            let input = *input;
            match reader.next_packet() {
                Ok(Some(rec)) => {
                    if let Some(warning) = self.timeline.packet(rec.ts_ns) {
                        self.log.warnings.push(warning);
                    }
                    self.pending.push(Packet {
                        ts_ns: rec.ts_ns,
                        orig_len: rec.orig_len,
                        interface: rec.interface,
                        link_type: rec.link_type,
                        start: rec.data.as_ptr() as usize,
                        len: rec.data.len(),
                        key: engine.plain_bundle(&rec),
                    });
                    // Left a buffer for another one: every record handed out before this one lies in it.
                    if let Some(buf) = reader.kept_buffers().and_then(KeptBuffers::take_retired) {
                        self.batch_of(buf);
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => self.log.errors.push(format!(
                    "{}: {e} (stopping this input here)",
                    files[input].display()
                )),
            }
            let Some((_, reader)) = self.current.take() else {
                continue;
            };
            self.log
                .inputs_read
                .push((files[input].clone(), *reader.stats()));
            // The buffer it was reading into is left too, with the input's last records.
            let mut pool = reader.into_kept_buffers();
            while let Some(buf) = pool.as_mut().and_then(KeptBuffers::take_retired) {
                self.batch_of(buf);
            }
            self.pool = pool;
            if !self.pending.is_empty() {
                // Never so: a reader keeping records hands none out of a buffer it has not left at its end.
                debug_assert!(false, "records outside the reader's buffers");
                self.log.errors.push(format!(
                    "{}: {} packets lost reading (stopping this input here)",
                    files[input].display(),
                    self.pending.len()
                ));
                self.pending.clear();
            }
        }
    }

    /// Makes the records pending that lie in `buf` (the first ones) a batch, ready to publish.
    fn batch_of(&mut self, buf: Vec<u8>) {
        let base = buf.as_ptr() as usize;
        let within = |p: &Packet| {
            p.len == 0
                || p.start
                    .checked_sub(base)
                    .is_some_and(|at| at + p.len <= buf.len())
        };
        let n = self.pending.iter().take_while(|p| within(p)).count();
        if n == 0 {
            self.give(buf);
            return;
        }
        let mut packets = self.lists.pop().unwrap_or_default();
        packets.extend(self.pending.drain(..n).map(|p| Packet {
            start: if p.len == 0 { 0 } else { p.start - base },
            ..p
        }));
        self.ready.push_back(Batch {
            bytes: buf,
            packets,
        });
    }

    /// Gives a batch's buffer back to the pool, to read into again.
    fn give(&mut self, buf: Vec<u8>) {
        if buf.is_empty() {
            return;
        }
        let pool = match &mut self.current {
            Some((_, r)) => r.kept_buffers(),
            None => Some(
                self.pool
                    .get_or_insert_with(|| KeptBuffers::new(BATCH_BUFFER)),
            ),
        };
        if let Some(pool) = pool {
            pool.give(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EngineConfig;
    use flowbundle_ingest::{PcapWriter, WriterOptions};

    /// A pcap of `packets` packets of 100 bytes (their contents do not matter here), in a file of its own.
    fn capture(name: &str, packets: u32) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fb-shared-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("c.pcap");
        let file = std::fs::File::create(&path).expect("creating the capture");
        let mut w = PcapWriter::new(file, WriterOptions::new(LinkType::ETHERNET)).expect("header");
        for k in 0..packets {
            let frame = [k as u8; 100];
            w.write_packet(1_000_000_000 * u64::from(k), &frame, 100)
                .expect("a packet");
        }
        w.finish().expect("a capture");
        path
    }

    impl SharedInput<'_> {
        fn take_(&self, k: u64, e: &Engine, stop: &AtomicBool, done: Option<Arc<Batch>>) -> Next {
            self.take(k, e, stop, done, &mut 0)
        }
    }

    fn batch(next: Next) -> Arc<Batch> {
        match next {
            Next::Batch(b) => b,
            Next::End => panic!("the end instead of a batch"),
            Next::Full => panic!("full instead of a batch"),
        }
    }

    /// Checks that `b` holds the packets from number `from` on (see `capture`); returns the next number.
    fn check(b: &Batch, from: u32, engine: &Engine) -> u32 {
        for n in 0..b.len() {
            let k = from + n as u32;
            let (rec, key) = b.get(n).expect("a packet");
            assert_eq!(rec.ts_ns, 1_000_000_000 * u64::from(k));
            assert_eq!(rec.data, &[k as u8; 100][..]);
            assert_eq!(key, engine.plain_bundle(&rec));
        }
        from + b.len() as u32
    }

    #[test]
    fn a_batch_is_read_once_for_every_worker_and_the_one_ahead_waits_at_the_bound() {
        let files = [capture("bound", 12_000)];
        let engine = Engine::new(EngineConfig::default(), None, None);
        let stop = AtomicBool::new(false);
        // Two batches held at most (each a buffer of the reader's).
        let input = SharedInput::new(&files, 2, 2 * BATCH_BUFFER);
        let a0 = batch(input.take_(0, &engine, &stop, None));
        assert!(a0.len() > 1000, "{} packets in 256 KiB", a0.len());
        // Batch 1 was read ahead with batch 0.
        assert_eq!(lock(&input.queue).published(), 2);
        let a1 = batch(input.take_(1, &engine, &stop, Some(a0.clone())));
        // Two batches not taken by worker 1: worker 0 may not read a third.
        assert!(matches!(input.take_(2, &engine, &stop, None), Next::Full));
        assert!(!input.can_take(2));
        // Worker 1 takes the batch worker 0 read (the same one, not read again): room for one more.
        let b0 = batch(input.take_(0, &engine, &stop, None));
        assert!(Arc::ptr_eq(&a0, &b0));
        assert!(input.can_take(2));
        drop(a0);
        // Worker 0 goes on, worker 1 follows when worker 0 has to wait: each gets every packet, in order.
        let (mut mine, mut theirs) = (vec![b0.clone(), a1], vec![b0]);
        let (mut k0, mut k1) = (2u64, 1u64);
        let (mut end0, mut end1) = (false, false);
        let mut waits = 0;
        while !(end0 && end1) {
            if !end0 {
                match input.take_(k0, &engine, &stop, None) {
                    Next::Batch(b) => {
                        mine.push(b);
                        k0 += 1;
                        continue;
                    }
                    Next::End => end0 = true,
                    Next::Full => waits += 1,
                }
            }
            if !end1 {
                match input.take_(k1, &engine, &stop, theirs.pop()) {
                    Next::Batch(b) => {
                        theirs.push(b);
                        k1 += 1;
                    }
                    Next::End => end1 = true,
                    Next::Full => panic!("the worker behind waits"),
                }
            }
        }
        assert!(waits > 0);
        // Worker 0 kept every batch: each one's packets follow the last one's.
        let mut next = 0;
        for b in &mine {
            next = check(b, next, &engine);
        }
        assert_eq!(next, 12_000);
        let log = input.log();
        assert!(log.errors.is_empty());
        assert_eq!(log.inputs_read.len(), 1);
        assert_eq!(log.inputs_read[0].1.packets, 12_000);
        // Within the bound, and past it by the one batch read while it was not reached.
        assert!(log.peak_shared_bytes >= 2 * BATCH_BUFFER);
        assert!(log.peak_shared_bytes < 3 * BATCH_BUFFER);
        let q = lock(&input.queue);
        assert!(q.batches.is_empty() && q.held == 0, "every batch freed");
        drop(q);
        let _ = std::fs::remove_dir_all(files[0].parent().expect("a directory"));
    }

    #[test]
    fn reading_stops_at_the_next_batch_once_asked_to() {
        let files = [capture("stop", 12_000)];
        let engine = Engine::new(EngineConfig::default(), None, None);
        let stop = AtomicBool::new(false);
        let input = SharedInput::new(&files, 1, SHARED_BYTES);
        let a0 = batch(input.take_(0, &engine, &stop, None));
        stop.store(true, Relaxed);
        // Batch 1 was read ahead with batch 0; none is read after.
        let a1 = batch(input.take_(1, &engine, &stop, Some(a0)));
        assert!(matches!(
            input.take_(2, &engine, &stop, Some(a1)),
            Next::End
        ));
        // The input was not read to its end: not reported read.
        assert!(input.log().inputs_read.is_empty());
        let _ = std::fs::remove_dir_all(files[0].parent().expect("a directory"));
    }
}
