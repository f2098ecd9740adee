//! Message bodies: the framing (`Content-Length`, chunked, until close) as a resumable decoder, and incremental
//! gzip/deflate inflation into a capped buffer.

use std::io::Write;

use flate2::write::{DeflateDecoder, GzDecoder, ZlibDecoder};

use super::*;

/// How a message body is delimited, and where its decoder stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
}

/// Position inside a chunked body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Chunk {
    /// Reading a chunk-size line: value so far, whether a digit was seen, whether we are past the digits
    /// (extensions), and how long the line is.
    Size {
        value: u64,
        digits: bool,
        ext: bool,
        len: usize,
    },
    /// Inside chunk data.
    Data(u64),
    /// After chunk data, expecting CRLF.
    DataEnd,
    /// Trailer section: bytes in the current line (0 = at the start of a line).
    Trailer(usize),
}

/// What one step of body framing produced.
pub(super) enum Step {
    /// `n` input bytes consumed, of which `data` (a range of the input) is body content.
    Data {
        n: usize,
        data: std::ops::Range<usize>,
    },
    /// The body ended after `n` input bytes.
    Done { n: usize },
    /// Framing error.
    Bad,
}

pub(super) fn frame_step(f: &mut Framing, input: &[u8]) -> Step {
    match f {
        // The caller sees the length reach zero after taking the data, and finishes the body.
        Framing::Length(rem) => {
            let take = (*rem).min(input.len() as u64) as usize;
            *rem -= take as u64;
            Step::Data {
                n: take,
                data: 0..take,
            }
        }
        Framing::UntilClose => Step::Data {
            n: input.len(),
            data: 0..input.len(),
        },
        Framing::Chunked(c) => chunk_step(c, input),
    }
}

pub(super) fn chunk_step(c: &mut Chunk, input: &[u8]) -> Step {
    let mut i = 0;
    while i < input.len() {
        match c {
            Chunk::Size {
                value,
                digits,
                ext,
                len,
            } => {
                let b = input[i];
                i += 1;
                *len += 1;
                if *len > MAX_CHUNK_LINE {
                    return Step::Bad;
                }
                match b {
                    b'\n' => {
                        if !*digits {
                            // Tolerate stray empty lines between chunks.
                            *len = 0;
                            continue;
                        }
                        *c = if *value == 0 {
                            Chunk::Trailer(0)
                        } else {
                            Chunk::Data(*value)
                        };
                    }
                    b'\r' => {}
                    _ if *ext => {}
                    b';' | b' ' | b'\t' => *ext = *digits || b != b';',
                    _ => {
                        let Some(d) = (b as char).to_digit(16) else {
                            return Step::Bad;
                        };
                        *value = match value.checked_mul(16) {
                            Some(v) => v + u64::from(d),
                            None => return Step::Bad,
                        };
                        *digits = true;
                    }
                }
            }
            Chunk::Data(rem) => {
                let take = (*rem).min((input.len() - i) as u64) as usize;
                *rem -= take as u64;
                let start = i;
                if *rem == 0 {
                    *c = Chunk::DataEnd;
                }
                if take > 0 {
                    return Step::Data {
                        n: start + take,
                        data: start..start + take,
                    };
                }
            }
            Chunk::DataEnd => {
                let b = input[i];
                i += 1;
                match b {
                    b'\r' => {}
                    b'\n' => {
                        *c = Chunk::Size {
                            value: 0,
                            digits: false,
                            ext: false,
                            len: 0,
                        }
                    }
                    _ => return Step::Bad,
                }
            }
            Chunk::Trailer(len) => {
                let b = input[i];
                i += 1;
                match b {
                    b'\n' if *len == 0 => return Step::Done { n: i },
                    b'\n' => *len = 0,
                    b'\r' if *len == 0 => {}
                    _ => {
                        *len += 1;
                        if *len > MAX_CHUNK_LINE {
                            return Step::Bad;
                        }
                    }
                }
            }
        }
    }
    Step::Data { n: i, data: 0..0 }
}

/// A `Write` that keeps at most `cap` bytes and counts what it refused.
#[derive(Debug, Default)]
pub(super) struct CapWriter {
    pub(super) buf: Vec<u8>,
    pub(super) cap: usize,
    pub(super) cut: u64,
}

impl CapWriter {
    pub(super) fn full(&self) -> bool {
        self.buf.len() >= self.cap
    }
}

impl Write for CapWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let room = self.cap.saturating_sub(self.buf.len());
        let take = room.min(b.len());
        self.buf.extend_from_slice(&b[..take]);
        self.cut += (b.len() - take) as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A body inflater. `Sniff` waits for the first body byte: for `gzip` it must start the gzip magic, for `deflate`
/// it tells zlib from raw deflate (servers send both).
///
/// A body labelled compressed that is not (clear text behind `Content-Encoding: gzip`, which Android SDKs send) goes
/// through as it is, as libhtp's "passthrough" does: when the first byte cannot start the announced coding, or the
/// decoder fails on the first bytes fed before producing anything. Rules then see the clear text instead of an empty
/// body.
pub(super) enum Inflate {
    Gzip(GzDecoder<CapWriter>),
    Zlib(ZlibDecoder<CapWriter>),
    Raw(DeflateDecoder<CapWriter>),
    Sniff(CapWriter, Encoding),
    /// Not compressed after all: bytes are kept as they come.
    Passthrough(CapWriter),
    /// Decoding failed or the cap was reached: the body is kept as decoded so far.
    Stopped(CapWriter),
}

impl std::fmt::Debug for Inflate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Inflate::Gzip(_) => "Gzip",
            Inflate::Zlib(_) => "Zlib",
            Inflate::Raw(_) => "Raw",
            Inflate::Sniff(..) => "Sniff",
            Inflate::Passthrough(_) => "Passthrough",
            Inflate::Stopped(_) => "Stopped",
        })
    }
}

impl Inflate {
    pub(super) fn writer(&mut self) -> &mut CapWriter {
        match self {
            Inflate::Gzip(d) => d.get_mut(),
            Inflate::Zlib(d) => d.get_mut(),
            Inflate::Raw(d) => d.get_mut(),
            Inflate::Sniff(w, _) | Inflate::Passthrough(w) | Inflate::Stopped(w) => w,
        }
    }

    /// Feeds compressed bytes; returns (compressed bytes skipped because the cap was reached, decode error).
    /// `first`: these are the body's first bytes (a decoder failing on them means the body was never compressed).
    pub(super) fn feed(&mut self, data: &[u8], first: bool) -> (u64, bool) {
        if let Inflate::Sniff(w, enc) = self {
            let Some(&b0) = data.first() else {
                return (0, false);
            };
            let (w, enc) = (std::mem::take(w), *enc);
            *self = match enc {
                Encoding::Gzip if b0 == 0x1f => Inflate::Gzip(GzDecoder::new(w)),
                Encoding::Gzip | Encoding::Identity => Inflate::Passthrough(w),
                Encoding::Deflate => {
                    // RFC 1950: CMF with method 8, and (CMF*256 + FLG) % 31 == 0.
                    let zlib = b0 & 0x0f == 8
                        && data
                            .get(1)
                            .is_none_or(|&b1| (u16::from(b0) * 256 + u16::from(b1)) % 31 == 0);
                    if zlib {
                        Inflate::Zlib(ZlibDecoder::new(w))
                    } else {
                        Inflate::Raw(DeflateDecoder::new(w))
                    }
                }
            };
        }
        if self.writer().full() {
            return (data.len() as u64, false);
        }
        let r = match self {
            Inflate::Gzip(d) => d.write_all(data),
            Inflate::Zlib(d) => d.write_all(data),
            Inflate::Raw(d) => d.write_all(data),
            Inflate::Passthrough(w) => w.write_all(data),
            Inflate::Sniff(..) | Inflate::Stopped(_) => return (data.len() as u64, false),
        };
        if r.is_err() {
            if first && self.writer().buf.is_empty() {
                let mut w = std::mem::take(self.writer());
                let _ = w.write_all(data);
                *self = Inflate::Passthrough(w);
                return (0, false);
            }
            self.stop();
            return (0, true);
        }
        (0, false)
    }

    /// Flushes the decoder and returns the output buffer.
    /// Flushes the decoder and returns the output buffer, and whether the stream was broken (an incomplete
    /// stream is not an error when we stopped feeding it at the cap).
    pub(super) fn finish(mut self) -> (CapWriter, bool) {
        let capped = self.writer().full();
        let err = match &mut self {
            Inflate::Gzip(d) => d.try_finish().is_err(),
            Inflate::Zlib(d) => d.try_finish().is_err(),
            Inflate::Raw(d) => d.try_finish().is_err(),
            _ => false,
        };
        (std::mem::take(self.writer()), err && !capped)
    }

    pub(super) fn stop(&mut self) {
        let w = std::mem::take(self.writer());
        *self = Inflate::Stopped(w);
    }
}
