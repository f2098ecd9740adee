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
        })
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
    #[inline]
    fn fill(&mut self, need: usize) -> Result<bool, Error> {
        if self.end - self.start >= need {
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
        }
        if self.start + need > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if need > self.buf.len() {
                // Bounded by the format caps: `need` is at most MAX_BLOCK_LEN or a pcap record of MAX_CAPLEN.
                self.buf.resize(need.next_multiple_of(CHUNK), 0);
            }
        }
        while self.end - self.start < need {
            match self.src.read(&mut self.buf[self.end..]) {
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
            // The buffer is empty: read the rest through it.
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
