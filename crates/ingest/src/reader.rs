//! The streaming reader: any capture size in constant memory.
//!
//! [`CaptureReader`] keeps one refillable buffer. Each call to [`CaptureReader::next_packet`] makes sure the next
//! record or block is whole in that buffer (refilling in 128 KiB reads, so a packet costs no system call), lets the
//! format parser look at it, and returns a [`PacketRecord`] whose `data` points into the buffer. The borrow ends at
//! the next call, which is what lets the buffer be reused: no allocation and no copy per packet.
//!
//! Memory: the buffer starts at 128 KiB and only grows to hold the largest unit seen, which the format caps bound
//! ([`MAX_BLOCK_LEN`](crate::MAX_BLOCK_LEN), 1 MiB). Oversized non-packet blocks are read through and dropped, never
//! held. The interface table grows by one entry per Interface Description Block, at most
//! [`MAX_INTERFACES`](crate::MAX_INTERFACES). Gzip input adds flate2's decoder state (about 40 KiB).
//!
//! Damaged gzip data ends the read with [`Error::Decompress`] after the packets before
//! the damage, less up to one read (128 KiB) of decompressed bytes that flate2 discards with the error.
//!
//! After an error the reader is finished: further calls return `Ok(None)`, so a caller that logs and retries cannot
//! loop forever on a damaged file.
//!
//! ## Keeping records past the next call
//!
//! A streaming runtime hands each packet to another thread and reads on: copying every packet out of the reader's
//! buffer into a buffer of its own was the largest single cost of its reader thread (a memory copy of every byte,
//! into lines the workers' cores had just read: 12% of the whole run's CPU). With [`CaptureReader::keep_records`]
//! the reader never moves or overwrites bytes it has handed out: where it would compact its buffer (copy the
//! unconsumed tail to the front) it continues in another buffer of a [`KeptBuffers`] pool instead, and the buffer it
//! left is retired with the caller's current record number (its *tag*). The caller numbers the records
//! ([`KeptBuffers::set_tag`] before each call: the number the next record will get) and gives retired buffers back
//! once every record numbered before their tag is done ([`KeptBuffers::recycle`]). A record's bytes therefore stay
//! where they are, unchanged, from the call that returned it until the caller recycles past its number: the caller
//! may keep a pointer to them that long. Memory: the pool's buffers (each [`KeptBuffers::new`]'s size, or one
//! record if that is larger), and the caller bounds how many are retired at once ([`KeptBuffers::retired`]).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::format::{self, Next, Parser, START_LEN};
use crate::{Error, Format, InterfaceInfo, PacketRecord, ReadStats};

/// Initial buffer size and the size of each read from the source.
const CHUNK: usize = 128 * 1024;

/// Streaming pcap / pcapng reader (gzip transparently), constant memory, one borrowed record at a time.
///
/// ```no_run
/// # fn main() -> Result<(), flowbundle_ingest::Error> {
/// let mut reader = flowbundle_ingest::CaptureReader::open("trace.pcapng.gz")?;
/// while let Some(pkt) = reader.next_packet()? {
///     println!("{} {} bytes on {}", pkt.ts_ns, pkt.data.len(), pkt.link_type);
/// }
/// println!("{:?}", reader.stats());
/// # Ok(())
/// # }
/// ```
pub struct CaptureReader {
    src: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// The source returned end of file.
    eof: bool,
    /// Stream offset of `buf[start]` (in decompressed bytes).
    offset: u64,
    parser: Parser,
    /// Set after the end, a truncated record or an error: nothing more will be delivered.
    done: bool,
    path: Option<PathBuf>,
    /// With [`CaptureReader::keep_records`]: the buffers rotated through instead of compacting `buf`.
    kept: Option<KeptBuffers>,
}

/// The buffers a [`CaptureReader`] in [`keep_records`](CaptureReader::keep_records) mode reads into, and the ones it
/// left whose records may still be in use. See the module documentation, "Keeping records past the next call".
#[derive(Debug)]
pub struct KeptBuffers {
    size: usize,
    spare: Vec<Vec<u8>>,
    /// Buffers left behind, oldest first, each with the tag current when it was left.
    retired: VecDeque<(Vec<u8>, u64)>,
    tag: u64,
    /// Records handed out from the current buffer (a buffer nothing was handed out from is spare at once).
    handed: u64,
    /// Buffers allocated so far.
    allocated: usize,
}

impl KeptBuffers {
    /// A pool of buffers of `size` bytes (or one record's, when larger), allocated as they are needed. A buffer
    /// much smaller than a read (128 KiB) costs a rotation every few records; 1 MiB suits a file.
    pub fn new(size: usize) -> Self {
        KeptBuffers {
            size: size.max(1),
            spare: Vec::new(),
            retired: VecDeque::new(),
            tag: 0,
            handed: 0,
            allocated: 0,
        }
    }

    /// The number the next record handed out will get (the caller's numbering: it only grows).
    pub fn set_tag(&mut self, tag: u64) {
        self.tag = tag;
    }

    /// Every record numbered below `done` is no longer used: the buffers left before such records were handed out
    /// again are reused.
    pub fn recycle(&mut self, done: u64) {
        while self.retired.front().is_some_and(|(_, t)| *t <= done) {
            if let Some((b, _)) = self.retired.pop_front() {
                self.spare.push(b);
            }
        }
    }

    /// Buffers left behind whose records may still be in use.
    pub fn retired(&self) -> usize {
        self.retired.len()
    }

    /// The tag of the oldest retired buffer: recycling at or past it frees one.
    pub fn oldest_retired(&self) -> Option<u64> {
        self.retired.front().map(|(_, t)| *t)
    }

    /// Buffers allocated so far (in use, retired and spare).
    pub fn allocated(&self) -> usize {
        self.allocated
    }

    /// Takes the oldest retired buffer out of the pool, whatever its tag: every record handed out before it was
    /// retired lies in it (records never straddle buffers), so a caller that hands records on with the buffer
    /// holding them needs no tags. Give it back with [`KeptBuffers::give`] once its records are no longer used.
    pub fn take_retired(&mut self) -> Option<Vec<u8>> {
        self.retired.pop_front().map(|(b, _)| b)
    }

    /// Gives back a buffer taken with [`KeptBuffers::take_retired`], to read into again (one smaller than the pool's
    /// size, or empty, is dropped).
    pub fn give(&mut self, buf: Vec<u8>) {
        if buf.len() >= self.size {
            self.spare.push(buf);
        }
    }

    /// A buffer of at least `min` bytes, spare or new.
    fn take(&mut self, min: usize) -> Vec<u8> {
        let want = min.max(self.size);
        match self.spare.iter().position(|b| b.len() >= want) {
            Some(i) => self.spare.swap_remove(i),
            None => {
                self.allocated += 1;
                vec![0u8; want]
            }
        }
    }

    /// Leaves `buf`, whose records may still be in use until the current tag is recycled.
    fn retire(&mut self, buf: Vec<u8>) {
        if self.handed == 0 {
            self.spare.push(buf);
        } else {
            self.retired.push_back((buf, self.tag));
        }
        self.handed = 0;
    }
}

impl std::fmt::Debug for CaptureReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureReader")
            .field("path", &self.path)
            .field("format", &self.parser.format())
            .field("offset", &self.offset)
            .field("stats", &self.parser.stats)
            .finish_non_exhaustive()
    }
}

/// The input name that stands for standard input.
pub const STDIN: &str = "-";

/// An input [`CaptureReader::probe`] checked, to open for the run with [`open`](Probed::open): a file that can be
/// read again (opened afresh by its path), or an input that can be read only once (standard input, a pipe, a
/// character device), held open with the bytes the check read, which the run reads first. The caller owns it: two
/// runs in one process (tests, the bench) each read their own, and an input probed but never opened is closed
/// with the handle.
pub struct Probed {
    path: PathBuf,
    held: Option<Box<dyn Read + Send>>,
}

impl Probed {
    /// The input's path as the caller named it (`-` for standard input).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the input can be read again from its start (a file, opened afresh by its path); `false` for an input
    /// that can be read only once, held open by this handle.
    pub fn rereadable(&self) -> bool {
        self.held.is_none()
    }

    /// Opens the input for the run: a file afresh by its path (as [`CaptureReader::open`]); an input that can be
    /// read only once from the bytes the check read, then the rest.
    pub fn open(self) -> Result<CaptureReader, Error> {
        let Some(src) = self.held else {
            return CaptureReader::open(&self.path);
        };
        let mut reader = CaptureReader::from_source(src, Some(self.path.clone()))?;
        reader.path = Some(self.path);
        Ok(reader)
    }
}

/// A path not probed: opened by its path when the run comes to it (a file; standard input as it stands then).
impl From<PathBuf> for Probed {
    fn from(path: PathBuf) -> Self {
        Probed { path, held: None }
    }
}

impl From<&Path> for Probed {
    fn from(path: &Path) -> Self {
        Probed::from(path.to_path_buf())
    }
}

impl std::fmt::Debug for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probed")
            .field("path", &self.path)
            .field("held", &self.held.is_some())
            .finish()
    }
}

/// A probed source and every byte read from it so far.
struct Recorded {
    src: Box<dyn Read + Send>,
    bytes: Vec<u8>,
}

/// Reads through to a [`Recorded`] source, keeping a copy of what it read.
struct Recording(std::sync::Arc<std::sync::Mutex<Recorded>>);

impl Read for Recording {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut r = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = r.src.read(buf)?;
        r.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl CaptureReader {
    /// Open a capture file: pcap or pcapng, gzip-compressed or not (recognised by content, not by name). `-` is
    /// standard input (`tcpdump -w - | flowbundle inspect -`), as in tcpdump and tshark.
    ///
    /// Errors name the path.
    pub fn open(path: impl AsRef<Path>) -> Result<CaptureReader, Error> {
        let path = path.as_ref();
        if path.as_os_str() == STDIN {
            let mut reader =
                Self::from_source(Box::new(std::io::stdin()), Some(path.to_path_buf()))?;
            reader.path = Some(path.to_path_buf());
            return Ok(reader);
        }
        let file = File::open(path).map_err(|e| Error::file(path, e))?;
        let mut reader = Self::from_source(Box::new(file), Some(path.to_path_buf()))?;
        reader.path = Some(path.to_path_buf());
        Ok(reader)
    }

    /// Check that `path` opens as a capture (its file header) before a run reads it, and return the input to open
    /// for the run ([`Probed::open`]). A regular file is opened and closed again. An input that can be read only
    /// once (`-` for standard input, a pipe, a character device) stays open in the handle, with the bytes the check
    /// read, which the handle's [`open`](Probed::open) gives back before the rest: nothing of it is lost. Errors as
    /// [`open`](Self::open)'s.
    pub fn probe(path: impl AsRef<Path>) -> Result<Probed, Error> {
        let path = path.as_ref();
        let once = path.as_os_str() == STDIN
            || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
        if !once {
            return Self::open(path).map(|_| Probed::from(path));
        }
        let src: Box<dyn Read + Send> = if path.as_os_str() == STDIN {
            Box::new(io::stdin())
        } else {
            Box::new(File::open(path).map_err(|e| Error::file(path, e))?)
        };
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Recorded {
            src,
            bytes: Vec::new(),
        }));
        // The checking reader (and a gzip decoder's read-ahead in it) is dropped here: what it read is all in
        // `bytes`, and `seen` is the last reference.
        Self::from_source(Box::new(Recording(seen.clone())), Some(path.to_path_buf())).map(drop)?;
        let Ok(rec) = std::sync::Arc::try_unwrap(seen) else {
            return Err(Error::file(
                path,
                io::Error::other("the probed input is still being read"),
            ));
        };
        let rec = rec.into_inner().unwrap_or_else(|p| p.into_inner());
        Ok(Probed {
            path: path.to_path_buf(),
            held: Some(Box::new(io::Cursor::new(rec.bytes).chain(rec.src))),
        })
    }

    /// Read a capture from any byte source (a socket, stdin, an in-memory buffer). Reads the file header now, so
    /// an input that is not a capture fails here.
    pub fn new(src: impl Read + Send + 'static) -> Result<CaptureReader, Error> {
        Self::from_source(Box::new(src), None)
    }

    fn from_source(
        src: Box<dyn Read + Send>,
        path: Option<PathBuf>,
    ) -> Result<CaptureReader, Error> {
        let attach = |e: Error| match &path {
            Some(p) => e.with_path(p),
            None => e,
        };
        let opened = open_stream(src).map_err(attach)?;
        let mut buf = vec![0u8; CHUNK];
        buf[..opened.head_len].copy_from_slice(opened.head());
        let (src, head_len, gzip) = (opened.src, opened.head_len, opened.gzip);
        let (parser, used) = Parser::start(&buf[..head_len], gzip)?;
        Ok(CaptureReader {
            src,
            buf,
            start: used,
            end: head_len,
            eof: false,
            offset: used as u64,
            parser,
            done: false,
            path,
            kept: None,
        })
    }

    /// From now on, never move or overwrite the bytes of a record handed out: continue in another buffer of `bufs`
    /// where the buffer would be compacted, and retire the one left with the current tag (see the module
    /// documentation). A record's bytes stay valid while the pool is alive and not recycled past the record's number:
    /// take the pool back with [`into_kept_buffers`](Self::into_kept_buffers) before dropping the reader while
    /// records may still be in use. Replaces (drops) a pool given before.
    pub fn keep_records(&mut self, mut bufs: KeptBuffers) {
        // The unconsumed bytes move to a buffer of the pool: records handed out before this call borrowed `self`,
        // so none is alive now and the old buffer can go.
        let mut nb = bufs.take(self.end - self.start);
        let n = self.end - self.start;
        nb[..n].copy_from_slice(&self.buf[self.start..self.end]);
        self.buf = nb;
        self.start = 0;
        self.end = n;
        bufs.handed = 0;
        // A pool given before is dropped with its buffers: records kept from them are no longer valid.
        self.kept = Some(bufs);
    }

    /// The kept-records pool ([`keep_records`](Self::keep_records)), to tag and recycle between calls.
    pub fn kept_buffers(&mut self) -> Option<&mut KeptBuffers> {
        self.kept.as_mut()
    }

    /// Ends the reader and gives back its kept-records pool with the buffer it was reading retired (its records
    /// stay valid until recycled), or `None` when it did not keep records.
    pub fn into_kept_buffers(mut self) -> Option<KeptBuffers> {
        let mut k = self.kept.take()?;
        k.retire(std::mem::take(&mut self.buf));
        Some(k)
    }

    /// The container, byte order and compression of the input.
    pub fn format(&self) -> Format {
        self.parser.format()
    }

    /// Interfaces described so far (pcapng declares them as it goes, so the list can grow while reading). A
    /// record's `interface` field indexes this list.
    pub fn interfaces(&self) -> &[InterfaceInfo] {
        self.parser.interfaces()
    }

    /// Counters so far: packets and bytes delivered, blocks skipped by kind, truncated records.
    pub fn stats(&self) -> &ReadStats {
        &self.parser.stats
    }

    /// Decompressed bytes consumed so far (the file offset for uncompressed input).
    pub fn position(&self) -> u64 {
        self.offset
    }

    /// The next packet, or `Ok(None)` at the end of the capture (also after a truncated final record, which is
    /// counted in [`ReadStats::truncated_records`], and after an error).
    ///
    /// The record borrows the reader's buffer: drop it (or copy what you need) before the next call.
    #[inline]
    pub fn next_packet(&mut self) -> Result<Option<PacketRecord<'_>>, Error> {
        if self.done {
            return Ok(None);
        }
        match self.advance() {
            Ok(Some((at, meta))) => {
                if let Some(k) = self.kept.as_mut() {
                    k.handed += 1;
                }
                let data = self
                    .buf
                    .get(at..at + meta.caplen as usize)
                    .unwrap_or_default();
                Ok(Some(PacketRecord {
                    ts_ns: meta.ts_ns,
                    orig_len: meta.orig_len,
                    interface: meta.interface,
                    link_type: meta.link_type,
                    data,
                }))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                Err(match &self.path {
                    Some(p) => e.with_path(p),
                    None => e,
                })
            }
        }
    }

    /// Move to the next packet; returns where its bytes start in `buf` and its metadata.
    #[inline]
    fn advance(&mut self) -> Result<Option<(usize, format::Meta)>, Error> {
        loop {
            let peek = self.parser.peek_len();
            if !self.fill(peek)? {
                return self.end_of_input(peek);
            }
            match self
                .parser
                .next_len(&self.buf[self.start..self.end], self.offset)?
            {
                Next::Read(len) => {
                    if !self.fill(len)? {
                        return self.end_of_input(len);
                    }
                    let unit_start = self.start;
                    let unit = &self.buf[unit_start..unit_start + len];
                    let found = self.parser.parse(unit, self.offset)?;
                    self.start += len;
                    self.offset += len as u64;
                    if let Some(meta) = found {
                        return Ok(Some((unit_start + meta.data_start, meta)));
                    }
                }
                Next::Skip(len) => {
                    if !self.discard(len)? {
                        self.parser.stats.truncated_records += 1;
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// The input ended with fewer than `needed` bytes of the next unit available.
    fn end_of_input(&mut self, needed: usize) -> Result<Option<(usize, format::Meta)>, Error> {
        let got = self.end - self.start;
        if got == 0 {
            return Ok(None);
        }
        if let Some(e) = self.parser.truncation_error(needed, got) {
            return Err(e);
        }
        self.parser.stats.truncated_records += 1;
        Ok(None)
    }

    /// Make `need` unconsumed bytes available in `buf`; false if the input ends first.
    #[inline(always)]
    fn fill(&mut self, need: usize) -> Result<bool, Error> {
        // Called twice a record: the common case (the bytes are there) inline, the rest out of line. As one
        // function the compiler called it, and the call, its prologue and epilogue were about 24 instructions each
        // time, 49 of the about 205 a record took to read (callgrind, a worker reading the x5 merged nDPI trace).
        if self.end - self.start >= need {
            return Ok(true);
        }
        self.fill_more(need)
    }

    /// [`fill`](Self::fill) when the bytes are not all there yet.
    #[cold]
    #[inline(never)]
    fn fill_more(&mut self, need: usize) -> Result<bool, Error> {
        if self.eof {
            return Ok(false);
        }
        if self.start + need > self.buf.len() {
            match self.kept.as_mut() {
                // Keeping records, some handed out of this buffer: continue in another one, the unconsumed tail
                // copied there.
                Some(k) if k.handed > 0 => {
                    let mut nb = k.take(need);
                    let n = self.end - self.start;
                    nb[..n].copy_from_slice(&self.buf[self.start..self.end]);
                    k.retire(std::mem::replace(&mut self.buf, nb));
                    self.start = 0;
                    self.end = n;
                }
                _ => {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                    if need > self.buf.len() {
                        // Bounded by the format caps: `need` is at most MAX_BLOCK_LEN or a pcap record of MAX_CAPLEN.
                        self.buf.resize(need.next_multiple_of(CHUNK), 0);
                    }
                }
            }
        }
        while self.end - self.start < need {
            // One read at most CHUNK long, so what is read is still in the cache when it is parsed (a kept-records
            // buffer is larger).
            let to = self.buf.len().min(self.end + CHUNK.max(need));
            match self.src.read(&mut self.buf[self.end..to]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let at = self.offset + (self.end - self.start) as u64;
                    return Err(read_error(e, self.parser.format().gzip, at));
                }
            }
        }
        Ok(true)
    }

    /// Consume `len` bytes without keeping them (an oversized block); false if the input ends first.
    fn discard(&mut self, len: u64) -> Result<bool, Error> {
        let mut left = len;
        loop {
            let take = ((self.end - self.start) as u64).min(left);
            self.start += take as usize;
            self.offset += take;
            left -= take;
            if left == 0 {
                return Ok(true);
            }
            // The buffer is empty: read the rest through it (keeping records: through another one).
            if let Some(k) = self.kept.as_mut().filter(|k| k.handed > 0) {
                let nb = k.take(CHUNK);
                k.retire(std::mem::replace(&mut self.buf, nb));
            }
            self.start = 0;
            self.end = 0;
            if self.eof {
                return Ok(false);
            }
            let want = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(self.buf.len());
            match self.src.read(&mut self.buf[..want]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => self.end = n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(read_error(e, self.parser.format().gzip, self.offset)),
            }
        }
    }
}

/// A capture byte stream, gzip-decoded when it starts with the gzip magic, with its first [`START_LEN`] bytes read.
pub(crate) struct Opened {
    /// The rest of the (decompressed) stream.
    pub src: Box<dyn Read + Send>,
    head: [u8; START_LEN],
    /// Bytes of `head` that are real (fewer than [`START_LEN`] only for a shorter input).
    pub head_len: usize,
    pub gzip: bool,
}

impl Opened {
    /// The first bytes of the (decompressed) stream.
    pub fn head(&self) -> &[u8] {
        &self.head[..self.head_len]
    }
}

/// Detect gzip and read the first [`START_LEN`] decompressed bytes. Both readers open gzip input through this one
/// function, so a damaged gzip stream fails (or not) identically in both before the format is decided: flate2
/// drops the output of a call that hits corrupt data, so *where* damage is noticed depends on read sizes.
pub(crate) fn open_stream(mut src: Box<dyn Read + Send>) -> Result<Opened, Error> {
    let mut raw = [0u8; START_LEN];
    let n = read_full(&mut src, &mut raw).map_err(Error::Io)?;
    let gzip = format::is_gzip(&raw[..n]);
    let already = io::Cursor::new(raw[..n].to_vec());
    let mut src: Box<dyn Read + Send> = if gzip {
        Box::new(MultiGzDecoder::new(already.chain(src)))
    } else {
        Box::new(already.chain(src))
    };
    let mut head = [0u8; START_LEN];
    let mut head_len = 0;
    while head_len < START_LEN {
        match src.read(&mut head[head_len..]) {
            Ok(0) => break,
            Ok(k) => head_len += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(read_error(e, gzip, head_len as u64)),
        }
    }
    Ok(Opened {
        src,
        head,
        head_len,
        gzip,
    })
}

/// Read until `buf` is full or the input ends; returns how many bytes were read.
fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Classify a read failure: errors the gzip decoder raises about its data become [`Error::Decompress`].
pub(crate) fn read_error(e: io::Error, gzip: bool, offset: u64) -> Error {
    if gzip
        && matches!(
            e.kind(),
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof
        )
    {
        Error::Decompress { offset, source: e }
    } else {
        Error::Io(e)
    }
}
