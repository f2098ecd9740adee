//! The one error type of the crate.
//!
//! Every way a capture can be unreadable has its own variant, so callers (the `trace stats` command, the malformed
//! corpus test) can tell "this is not a capture" from "this capture is damaged at byte 81,920" from "the disk
//! failed". Byte offsets are positions in the *decompressed* stream, which is what a hex dump of `zcat FILE` shows.
//!
//! What is deliberately *not* an error: a capture that ends in the middle of a record (a capture cut by a full disk
//! or a killed tcpdump). The readers count it in [`ReadStats::truncated_records`](crate::ReadStats) and end cleanly.

use std::io;
use std::path::PathBuf;

/// Why a capture could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Opening, reading or writing a named file failed.
    #[error("{}: {source}", path.display())]
    File {
        /// The file we were working on.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },

    /// Reading or writing an unnamed stream (a [`std::io::Read`] given to
    /// [`CaptureReader::new`](crate::CaptureReader::new), or a writer's sink) failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),

    /// The gzip layer rejected the compressed data (corrupt, or cut before its end).
    #[error("gzip-compressed capture is damaged at decompressed byte {offset}: {source}")]
    Decompress {
        /// How many decompressed bytes were read before the failure.
        offset: u64,
        /// What flate2 said.
        #[source]
        source: io::Error,
    },

    /// The first bytes are neither a pcap nor a pcapng magic number (nor gzip).
    #[error("not a pcap or pcapng capture: the first bytes are [{}]{}", hex(&first[..usize::from(*len)]), hint.map(|h| format!(" ({h})")).unwrap_or_default())]
    UnknownMagic {
        /// Up to eight leading bytes of the (decompressed) input.
        first: [u8; 8],
        /// How many of `first` are real (the input may be shorter than eight bytes).
        len: u8,
        /// A recognised non-capture format, e.g. "zstd-compressed data; decompress it first".
        hint: Option<&'static str>,
    },

    /// The input ends inside a file or section header: there is no capture to read.
    #[error("truncated {what}: needs {needed} bytes, the input has {got}")]
    TruncatedHeader {
        /// Which header ("pcap file header", "pcapng section header block").
        what: &'static str,
        /// Bytes the header needs.
        needed: usize,
        /// Bytes that were there.
        got: usize,
    },

    /// A length field is beyond what any real capture holds. We refuse it rather than allocate that much.
    #[error("{what} of {len} bytes at byte {offset} exceeds the sanity cap of {cap} bytes")]
    AbsurdLength {
        /// Which length ("captured length", "block length").
        what: &'static str,
        /// The value found.
        len: u64,
        /// The cap it exceeded.
        cap: u64,
        /// Where the record or block starts.
        offset: u64,
    },

    /// A structural rule of the format is broken (e.g. a pcapng block length that is not a multiple of 4, or whose
    /// trailing copy differs).
    #[error("malformed capture at byte {offset}: {reason}")]
    Malformed {
        /// Where the offending record or block starts.
        offset: u64,
        /// What is wrong, in words.
        reason: &'static str,
    },

    /// A pcapng packet names an interface that no Interface Description Block of its section declared.
    #[error(
        "packet at byte {offset} refers to interface {id}, but its section declares only {declared}"
    )]
    UnknownInterface {
        /// The interface id in the packet block.
        id: u32,
        /// How many interfaces the current section declared.
        declared: usize,
        /// Where the packet block starts.
        offset: u64,
    },

    /// More Interface Description Blocks than the reader keeps (a bound on memory).
    #[error("more than {cap} interface descriptions; refusing to track more")]
    TooManyInterfaces {
        /// The cap.
        cap: usize,
    },

    /// A pcap or pcapng version this reader does not know.
    #[error("unsupported {format} version {major}.{minor}")]
    UnsupportedVersion {
        /// "pcap" or "pcapng".
        format: &'static str,
        /// Major version found.
        major: u16,
        /// Minor version found.
        minor: u16,
    },

    /// An `if_tsresol` option whose resolution cannot be represented (finer than 10^-19 s or 2^-63 s).
    #[error("interface timestamp resolution 0x{0:02x} is out of range")]
    BadTsResolution(u8),

    /// A pcap writer was given something classic pcap cannot hold.
    #[error("cannot write packet: {0}")]
    Unwritable(&'static str),

    /// An output path names the same file as one of the inputs (compared by device and inode, not by spelling):
    /// writing it would destroy the input before, or instead of, reading it.
    #[error("refusing to write {}: it is the input {}", output.display(), input.display())]
    OutputIsInput {
        /// The output path as given.
        output: PathBuf,
        /// The input path it names, as given.
        input: PathBuf,
    },

    /// Live capture was requested from a build without the `live` feature.
    #[error(
        "flowbundle was built without the `live` feature; rebuild with `--features live` (needs libpcap)"
    )]
    LiveUnavailable,

    /// libpcap reported an error (only with the `live` feature).
    #[error("live capture on {iface}: {message}")]
    Live {
        /// The interface name given to `open`.
        iface: String,
        /// libpcap's message.
        message: String,
    },
}

/// Lower-case hex with spaces, for error messages about raw bytes.
fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

impl Error {
    /// Attach a path to an I/O error from a named file.
    pub(crate) fn file(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::File {
            path: path.into(),
            source,
        }
    }

    /// Give an error from an unnamed stream the file's name, so the user learns which of many files failed.
    pub(crate) fn with_path(self, path: &std::path::Path) -> Self {
        match self {
            Error::Io(source) => Error::file(path, source),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_magic_names_the_bytes_and_the_hint() {
        let e = Error::UnknownMagic {
            first: [0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0],
            len: 4,
            hint: Some("zstd-compressed data; decompress it first"),
        };
        assert_eq!(
            e.to_string(),
            "not a pcap or pcapng capture: the first bytes are [28 b5 2f fd] \
             (zstd-compressed data; decompress it first)"
        );
    }

    #[test]
    fn file_errors_carry_the_path() {
        let e = Error::file(
            "/nowhere/x.pcap",
            io::Error::new(io::ErrorKind::NotFound, "gone"),
        );
        assert_eq!(e.to_string(), "/nowhere/x.pcap: gone");
    }
}
