//! Writing classic pcap: what the trace tools (synth, merge, anonymize, cut) produce.
//!
//! Classic pcap rather than pcapng because every tool reads it (tcpdump, Wireshark, nDPI, Suricata, PcapPlusPlus)
//! and one link type per file is all the tools need. Nanosecond resolution is the default so that timestamps from
//! pcapng or a synthesizer survive a round trip exactly; microsecond files are for tools that only know the
//! original magic.
//!
//! The writer writes in the host's byte order (as libpcap does). Each packet is two `write_all` calls (16-byte
//! header, data), so give it a buffered sink; [`PcapWriter::create`] does.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::{Error, LinkType, MAX_CAPLEN, OutputFile, PacketRecord};

/// Timestamp resolution of a classic pcap file (its magic number says which).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PcapPrecision {
    /// Microseconds (magic `0xa1b2c3d4`): readable by the oldest tools; timestamps are truncated to µs.
    Micro,
    /// Nanoseconds (magic `0xa1b23c4d`).
    #[default]
    Nano,
}

/// How to write a pcap file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterOptions {
    /// Link type of every packet in the file.
    pub link_type: LinkType,
    /// Packets are cut to this many bytes (0 means [`MAX_CAPLEN`]; larger values are lowered to it, because our
    /// own reader, like libpcap, refuses records above it).
    pub snaplen: u32,
    /// Timestamp resolution.
    pub precision: PcapPrecision,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            link_type: LinkType::ETHERNET,
            snaplen: MAX_CAPLEN,
            precision: PcapPrecision::Nano,
        }
    }
}

impl WriterOptions {
    /// Nanosecond pcap of `link_type`, no snaplen cut.
    pub fn new(link_type: LinkType) -> WriterOptions {
        WriterOptions {
            link_type,
            ..WriterOptions::default()
        }
    }

    /// The same with another precision.
    pub fn precision(mut self, precision: PcapPrecision) -> WriterOptions {
        self.precision = precision;
        self
    }

    /// The same with another snaplen.
    pub fn snaplen(mut self, snaplen: u32) -> WriterOptions {
        self.snaplen = snaplen;
        self
    }
}

/// Writes packets as a classic pcap file.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    opts: WriterOptions,
    packets: u64,
    bytes: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Write the file header to `out` and return a writer for the packets.
    pub fn new(mut out: W, mut opts: WriterOptions) -> Result<PcapWriter<W>, Error> {
        if opts.snaplen == 0 || opts.snaplen > MAX_CAPLEN {
            opts.snaplen = MAX_CAPLEN;
        }
        let magic: u32 = match opts.precision {
            PcapPrecision::Micro => 0xa1b2_c3d4,
            PcapPrecision::Nano => 0xa1b2_3c4d,
        };
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&magic.to_ne_bytes());
        h[4..6].copy_from_slice(&2u16.to_ne_bytes());
        h[6..8].copy_from_slice(&4u16.to_ne_bytes());
        // thiszone and sigfigs stay 0, as every modern writer leaves them.
        h[16..20].copy_from_slice(&opts.snaplen.to_ne_bytes());
        h[20..24].copy_from_slice(&opts.link_type.0.to_ne_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter {
            out,
            opts,
            packets: 0,
            bytes: 0,
        })
    }

    /// Write a record read from a capture. Its link type must be the file's: a pcap file has one.
    pub fn write(&mut self, rec: &PacketRecord<'_>) -> Result<(), Error> {
        if rec.link_type != self.opts.link_type {
            return Err(Error::Unwritable(
                "the packet's link type differs from the file's (classic pcap holds one link type)",
            ));
        }
        self.write_packet(rec.ts_ns, rec.data, rec.orig_len)
    }

    /// Write one packet: capture time in ns since the epoch, the captured bytes (cut to the snaplen), and the
    /// length it had on the wire (raised to at least the captured length).
    pub fn write_packet(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> Result<(), Error> {
        let secs = u32::try_from(ts_ns / 1_000_000_000).map_err(|_| {
            Error::Unwritable(
                "timestamp after 2106-02-07 does not fit classic pcap's 32-bit seconds",
            )
        })?;
        let nanos = (ts_ns % 1_000_000_000) as u32;
        let frac = match self.opts.precision {
            PcapPrecision::Micro => nanos / 1_000,
            PcapPrecision::Nano => nanos,
        };
        let caplen = data.len().min(self.opts.snaplen as usize);
        let orig_len = orig_len.max(caplen as u32);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&secs.to_ne_bytes());
        h[4..8].copy_from_slice(&frac.to_ne_bytes());
        h[8..12].copy_from_slice(&(caplen as u32).to_ne_bytes());
        h[12..16].copy_from_slice(&orig_len.to_ne_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&data[..caplen])?;
        self.packets += 1;
        self.bytes += caplen as u64;
        Ok(())
    }

    /// Packets written.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Captured bytes written (packet data, without headers).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The options in force (snaplen after clamping).
    pub fn options(&self) -> WriterOptions {
        self.opts
    }

    /// The sink, for inspection.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Flush and return the sink.
    pub fn finish(mut self) -> Result<W, Error> {
        self.out.flush()?;
        Ok(self.out)
    }
}

impl PcapWriter<FileSink> {
    /// Create a pcap file; gzip-compressed when the name ends in `.gz`. Errors name the path.
    ///
    /// The file is written beside `path` under a temporary name ([`OutputFile`]) and takes its name in
    /// [`close`](PcapWriter::close): until then an existing file at `path` is untouched.
    pub fn create(
        path: impl AsRef<Path>,
        opts: WriterOptions,
    ) -> Result<PcapWriter<FileSink>, Error> {
        let path = path.as_ref();
        let file = OutputFile::create(path)?;
        let gzip = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        let sink = FileSink {
            inner: if gzip {
                Sink::Gzip(Box::new(GzEncoder::new(file, Compression::fast())))
            } else {
                Sink::Plain(file)
            },
            path: path.to_path_buf(),
        };
        PcapWriter::new(sink, opts).map_err(|e| e.with_path(path))
    }

    /// Finish the file: flush, write the gzip trailer if compressed, and give it its name; errors carry the path.
    ///
    /// Dropping the writer instead discards what was written (the temporary file is removed).
    pub fn close(self) -> Result<(), Error> {
        let path = self.out.path.clone();
        self.finish().map_err(|e| e.with_path(&path))?.close()
    }
}

/// A file opened by [`PcapWriter::create`]: buffered, optionally gzip-compressed.
#[derive(Debug)]
pub struct FileSink {
    inner: Sink,
    path: PathBuf,
}

#[derive(Debug)]
enum Sink {
    Plain(OutputFile),
    /// Boxed: the encoder's state is large and the sink is made once per file.
    Gzip(Box<GzEncoder<OutputFile>>),
}

impl FileSink {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush everything (and the gzip trailer) to the file and give it its name.
    pub fn close(self) -> Result<(), Error> {
        let file = match self.inner {
            Sink::Plain(w) => w,
            Sink::Gzip(gz) => gz.finish().map_err(|e| Error::file(&self.path, e))?,
        };
        file.commit()
    }
}

impl Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.inner {
            Sink::Plain(w) => w.write_all(buf),
            Sink::Gzip(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
        }
    }
}
