//! The preloaded trace: one block of bytes plus a packet index, as the ANCS'10 harness loads a capture before it
//! starts its clock.
//!
//! [`Trace::load`] reads the whole (decompressed) file into one `Vec<u8>` and walks it once with the same format
//! parser the streaming reader uses, recording for every packet where its bytes are. After that, reading packet
//! `i` is an index lookup and a slice of the block: no parsing, no copy, no allocation, so the bench harness
//! measures scheduling and inspection, not file I/O, and a dispatcher can hand a worker a packet *number*.
//!
//! ## Memory
//!
//! The file's bytes once (headers included: the block *is* the file) plus **32 bytes per packet** of index:
//! timestamp (8), block offset (8), captured and wire lengths (4 + 4), link type (4) and interface (4). The link type
//! is stored per packet rather than looked up through the interface table so that [`Trace::get`] touches one index
//! entry and the packet bytes, nothing else; two entries share a cache line. A 1 GB capture of 1.5 M packets costs
//! 1 GB + 48 MB.
//!
//! There is no size cap: the point of a `Trace` is to hold the whole capture. Use the streaming
//! [`CaptureReader`](crate::CaptureReader) where memory must stay bounded whatever the input.

use std::fs::File;
use std::io::{Cursor, Read};
use std::ops::Range;
use std::path::Path;

use crate::format::{self, Next, Parser};
use crate::reader::{self, read_error};
use crate::{Error, Format, InterfaceInfo, LinkType, PacketRecord, ReadStats, TsResolution};

/// Index entry of one packet (32 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    ts_ns: u64,
    offset: u64,
    caplen: u32,
    orig_len: u32,
    link_type: u32,
    interface: u32,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 32);

/// A whole capture in memory: packets by number, borrowed from one block.
#[derive(Clone, Debug)]
pub struct Trace {
    block: Vec<u8>,
    index: Vec<Entry>,
    interfaces: Vec<InterfaceInfo>,
    format: Option<Format>,
    stats: ReadStats,
    bytes: u64,
    first_ts_ns: u64,
    last_ts_ns: u64,
    min_ts_ns: u64,
    max_ts_ns: u64,
}

impl Trace {
    /// Load a capture file (pcap or pcapng, gzip or not) and index its packets. Any parse error fails the load;
    /// a truncated final record does not (it is counted in [`Trace::stats`]).
    pub fn load(path: impl AsRef<Path>) -> Result<Trace, Error> {
        let path = path.as_ref();
        let bytes = read_file(path)?;
        Self::from_vec(bytes).map_err(|e| e.with_path(path))
    }

    /// Like [`Trace::load`], but a damaged capture yields the packets before the damage together with the error
    /// that stopped indexing, as tshark prints what it could read and then the error. The outer error is for
    /// inputs with no capture at all (unreadable file, unknown magic, truncated file header).
    pub fn load_partial(path: impl AsRef<Path>) -> Result<(Trace, Option<Error>), Error> {
        let path = path.as_ref();
        let bytes = read_file(path)?;
        Self::from_vec_partial(bytes).map_err(|e| e.with_path(path))
    }

    /// Index a capture already in memory (gzip-compressed or not). Takes ownership so that uncompressed input
    /// becomes the block without a copy.
    pub fn from_vec(bytes: Vec<u8>) -> Result<Trace, Error> {
        match Self::from_vec_partial(bytes)? {
            (trace, None) => Ok(trace),
            (_, Some(e)) => Err(e),
        }
    }

    /// [`Trace::from_vec`] keeping the packets before a parse error, as [`Trace::load_partial`].
    pub fn from_vec_partial(bytes: Vec<u8>) -> Result<(Trace, Option<Error>), Error> {
        let (block, gzip, gzip_error) = if format::is_gzip(&bytes) {
            // Opened exactly as the streaming reader opens it; a damaged stream still yields the bytes before the
            // damage: index those, then report it.
            let opened = reader::open_stream(Box::new(Cursor::new(bytes)))?;
            let mut block = opened.head().to_vec();
            let mut src = opened.src;
            let error = src
                .read_to_end(&mut block)
                .err()
                .map(|e| read_error(e, true, block.len() as u64));
            // The decompressed size was unknown, so the vector grew by doubling; give the slack back.
            block.shrink_to_fit();
            (block, true, error)
        } else {
            (bytes, false, None)
        };
        let head = &block[..block.len().min(format::START_LEN)];
        let (mut parser, mut pos) = Parser::start(head, gzip)?;
        let mut index = Vec::new();
        let mut failure = None;
        while pos < block.len() {
            let rest = &block[pos..];
            let peek = parser.peek_len();
            if rest.len() < peek {
                failure = truncated(&mut parser, peek, rest.len());
                break;
            }
            let next = match parser.next_len(rest, pos as u64) {
                Ok(n) => n,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            match next {
                Next::Read(len) => {
                    let Some(unit) = rest.get(..len) else {
                        failure = truncated(&mut parser, len, rest.len());
                        break;
                    };
                    match parser.parse(unit, pos as u64) {
                        Ok(Some(m)) => index.push(Entry {
                            ts_ns: m.ts_ns,
                            offset: (pos + m.data_start) as u64,
                            caplen: m.caplen,
                            orig_len: m.orig_len,
                            link_type: m.link_type.0,
                            interface: m.interface,
                        }),
                        Ok(None) => {}
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    }
                    pos += len;
                }
                Next::Skip(len) => match usize::try_from(len).ok().filter(|&l| l <= rest.len()) {
                    Some(l) => pos += l,
                    None => {
                        parser.stats.truncated_records += 1;
                        break;
                    }
                },
            }
        }
        if let Some(gz) = gzip_error {
            // The streaming reader stops at the damaged gzip data without counting the record it cut.
            if failure.is_none() {
                parser.stats.truncated_records = 0;
                failure = Some(gz);
            } else if let Some(Error::TruncatedHeader { .. }) = failure {
                failure = Some(gz);
            }
        }
        if let Some(e @ Error::TruncatedHeader { .. }) = failure {
            // A pcapng file cut inside its first section header holds no capture at all.
            return Err(e);
        }
        index.shrink_to_fit();
        let format = parser.format();
        let interfaces = parser.interfaces().to_vec();
        let mut trace = Trace::assemble(block, index, interfaces, parser.stats);
        trace.format = Some(format);
        Ok((trace, failure))
    }

    fn assemble(
        block: Vec<u8>,
        index: Vec<Entry>,
        interfaces: Vec<InterfaceInfo>,
        stats: ReadStats,
    ) -> Trace {
        let bytes = index.iter().map(|e| u64::from(e.caplen)).sum();
        let (min_ts_ns, max_ts_ns) = index.iter().fold((u64::MAX, 0), |(lo, hi), e| {
            (lo.min(e.ts_ns), hi.max(e.ts_ns))
        });
        Trace {
            first_ts_ns: index.first().map_or(0, |e| e.ts_ns),
            last_ts_ns: index.last().map_or(0, |e| e.ts_ns),
            min_ts_ns: if index.is_empty() { 0 } else { min_ts_ns },
            max_ts_ns,
            block,
            index,
            interfaces,
            format: None,
            stats,
            bytes,
        }
    }

    /// Number of packets.
    #[inline]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True when the trace holds no packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Packet number `i`, borrowed from the block.
    ///
    /// # Panics
    ///
    /// If `i >= self.len()`, as slice indexing does: packet numbers come from the program, not from input bytes.
    /// Use [`Trace::try_get`] when `i` is not known to be in range.
    #[inline]
    pub fn get(&self, i: usize) -> PacketRecord<'_> {
        self.record(&self.index[i])
    }

    /// Packet number `i`, or `None` past the end.
    #[inline]
    pub fn try_get(&self, i: usize) -> Option<PacketRecord<'_>> {
        self.index.get(i).map(|e| self.record(e))
    }

    #[inline(always)]
    fn record(&self, e: &Entry) -> PacketRecord<'_> {
        let start = e.offset as usize;
        PacketRecord {
            ts_ns: e.ts_ns,
            orig_len: e.orig_len,
            interface: e.interface,
            link_type: LinkType(e.link_type),
            // Every entry was checked against the block when it was made; `get` keeps this free of panics anyway.
            data: self
                .block
                .get(start..start + e.caplen as usize)
                .unwrap_or_default(),
        }
    }

    /// All packets in capture order.
    #[inline]
    pub fn iter(&self) -> TraceIter<'_> {
        TraceIter {
            trace: self,
            entries: self.index.iter(),
        }
    }

    /// Packets `range` (by number), e.g. for splitting a trace among threads.
    pub fn range(&self, range: Range<usize>) -> TraceIter<'_> {
        let end = range.end.min(self.index.len());
        let start = range.start.min(end);
        TraceIter {
            trace: self,
            entries: self.index[start..end].iter(),
        }
    }

    /// Total captured bytes (sum of `data.len()` over all packets).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Time from the earliest to the latest timestamp, in nanoseconds (captures are not always in time order, so
    /// this is max − min, as `capinfos` computes it, not last − first).
    pub fn duration_ns(&self) -> u64 {
        self.max_ts_ns - self.min_ts_ns
    }

    /// Timestamp of the first packet in file order (0 if empty).
    pub fn first_ts_ns(&self) -> u64 {
        self.first_ts_ns
    }

    /// Timestamp of the last packet in file order (0 if empty).
    pub fn last_ts_ns(&self) -> u64 {
        self.last_ts_ns
    }

    /// The file's container, byte order and compression; `None` for a trace made by [`TraceBuilder`].
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// Interfaces; a record's `interface` field indexes this list.
    pub fn interfaces(&self) -> &[InterfaceInfo] {
        &self.interfaces
    }

    /// Counters of the load: packets, bytes, skipped blocks, a truncated final record.
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    /// Bytes of memory the trace holds: the block plus the index (excluding the small interface table).
    pub fn memory_bytes(&self) -> usize {
        self.block.capacity() + self.index.capacity() * std::mem::size_of::<Entry>()
    }
}

impl<'a> IntoIterator for &'a Trace {
    type Item = PacketRecord<'a>;
    type IntoIter = TraceIter<'a>;
    fn into_iter(self) -> TraceIter<'a> {
        self.iter()
    }
}

/// Iterator over a [`Trace`]'s packets.
#[derive(Clone, Debug)]
pub struct TraceIter<'a> {
    trace: &'a Trace,
    entries: std::slice::Iter<'a, Entry>,
}

impl<'a> Iterator for TraceIter<'a> {
    type Item = PacketRecord<'a>;

    #[inline]
    fn next(&mut self) -> Option<PacketRecord<'a>> {
        self.entries.next().map(|e| self.trace.record(e))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }

    #[inline]
    fn nth(&mut self, n: usize) -> Option<PacketRecord<'a>> {
        self.entries.nth(n).map(|e| self.trace.record(e))
    }
}

impl DoubleEndedIterator for TraceIter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.entries.next_back().map(|e| self.trace.record(e))
    }
}

impl ExactSizeIterator for TraceIter<'_> {}

impl std::iter::FusedIterator for TraceIter<'_> {}

/// Builds an in-memory [`Trace`] from generated or rewritten packets (the trace synthesizer, the bench harness
/// appending defragmented datagrams, tests).
///
/// Each distinct link type becomes one interface (nanosecond resolution, snaplen 0 = unlimited), in order of first
/// use.
#[derive(Debug, Default)]
pub struct TraceBuilder {
    block: Vec<u8>,
    index: Vec<Entry>,
    interfaces: Vec<InterfaceInfo>,
    /// Interface used by the previous push: traces rarely mix link types, so this avoids the search.
    last_interface: u32,
    stats: ReadStats,
}

impl TraceBuilder {
    /// An empty builder.
    pub fn new() -> TraceBuilder {
        TraceBuilder::default()
    }

    /// An empty builder with room for `packets` packets of `bytes` bytes in all.
    pub fn with_capacity(packets: usize, bytes: usize) -> TraceBuilder {
        TraceBuilder {
            block: Vec::with_capacity(bytes),
            index: Vec::with_capacity(packets),
            ..TraceBuilder::default()
        }
    }

    /// Append a packet; returns its packet number. `data` longer than `u32::MAX` bytes (not a packet) is cut there.
    pub fn push(&mut self, ts_ns: u64, link_type: LinkType, data: &[u8], orig_len: u32) -> usize {
        let caplen = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let interface = self.interface_for(link_type);
        let offset = self.block.len() as u64;
        self.block.extend_from_slice(&data[..caplen as usize]);
        self.index.push(Entry {
            ts_ns,
            offset,
            caplen,
            orig_len,
            link_type: link_type.0,
            interface,
        });
        self.stats.packets += 1;
        self.stats.bytes += u64::from(caplen);
        self.stats.wire_bytes += u64::from(orig_len);
        self.index.len() - 1
    }

    /// Append a copy of `rec` (its timestamp, link type, bytes and wire length).
    pub fn push_record(&mut self, rec: &PacketRecord<'_>) -> usize {
        self.push(rec.ts_ns, rec.link_type, rec.data, rec.orig_len)
    }

    /// Packets pushed so far.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True when nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    fn interface_for(&mut self, link_type: LinkType) -> u32 {
        if let Some(i) = self.interfaces.get(self.last_interface as usize)
            && i.link_type == link_type
        {
            return self.last_interface;
        }
        let n = match self
            .interfaces
            .iter()
            .position(|i| i.link_type == link_type)
        {
            Some(n) => n,
            None => {
                self.interfaces.push(InterfaceInfo {
                    link_type,
                    snaplen: 0,
                    resolution: TsResolution::NANO,
                    ts_offset_s: 0,
                    fcs_len: None,
                    section: 0,
                    id_in_section: self.interfaces.len() as u32,
                });
                self.interfaces.len() - 1
            }
        };
        self.last_interface = n as u32;
        self.last_interface
    }

    /// Finish: the packets in push order.
    pub fn build(mut self) -> Trace {
        self.block.shrink_to_fit();
        self.index.shrink_to_fit();
        Trace::assemble(self.block, self.index, self.interfaces, self.stats)
    }
}

/// The input ended `got` bytes into a unit of `needed`: an error if there is no capture yet, else counted.
fn truncated(parser: &mut Parser, needed: usize, got: usize) -> Option<Error> {
    let e = parser.truncation_error(needed, got);
    if e.is_none() {
        parser.stats.truncated_records += 1;
    }
    e
}

fn read_file(path: &Path) -> Result<Vec<u8>, Error> {
    let mut file = File::open(path).map_err(|e| Error::file(path, e))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Error::file(path, e))?;
    Ok(bytes)
}
