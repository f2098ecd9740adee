//! # Shared plumbing of the rewriting tools
//!
//! `cut`, `rescale`, `anonymize` and `merge` all read a capture packet by packet ([`CaptureReader`], constant
//! memory), change some bytes or the timestamp, and write classic pcap ([`PcapWriter`]). What they share lives
//! here:
//!
//! * [`addresses`]: rewrite the IP addresses of one packet through an [`AddressMap`], fixing every checksum that
//!   covers them (IPv4 header, TCP, UDP, ICMPv6 through the pseudo-header; the addresses quoted inside ICMP errors;
//!   ARP; optionally the inner header of a tunnel). Incremental (RFC 1624), so it is exact on snap-length-cut
//!   packets whose payload is missing.
//! * [`link`]: turn a raw-IP, loopback or Linux-cooked frame into an Ethernet frame, so captures of different link
//!   types can be merged into one classic pcap (which holds one link type).
//! * [`parse`]: the argument types of the commands (rates such as `10Gbit/s`, packet and time ranges), parsed
//!   here rather than in the binary so the library refuses a bad value with the same message everywhere.
//! * [`progress`]: a progress bar on stderr that appears only after a second.
//! * [`Output`]: a pcap writer created on the first packet, with the link type that packet has.
//!
//! [`CaptureReader`]: flowbundle_ingest::CaptureReader

pub mod addresses;
pub mod link;
pub mod parse;
pub mod progress;

use std::path::{Path, PathBuf};

use flowbundle_ingest::{FileSink, LinkType, PcapWriter, WriterOptions};
use serde::Serialize;

pub use addresses::{AddressMap, AddressRewriter, RewriteStats};
pub use parse::{PacketRange, Rate, TimeBound, TimeRange};

/// Why a trace tool stopped.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// Reading or writing a capture failed (the message names the file).
    #[error(transparent)]
    Capture(#[from] flowbundle_ingest::Error),
    /// An argument or a combination of arguments the tool refuses, with the reason.
    #[error("{0}")]
    Usage(String),
    /// The table of distinct addresses (sequential anonymization, merge remapping) reached its cap: memory is
    /// bounded, so the tool stops instead of growing.
    #[error(
        "more than {cap} distinct IP addresses: the address table is full (memory is capped; split the input with \
         `trace cut` or raise the cap)"
    )]
    AddressCap { cap: usize },
    /// The sequential address space of a method is used up.
    #[error("the {0} address space is exhausted")]
    AddressSpace(&'static str),
}

impl ToolError {
    pub(crate) fn usage(msg: impl Into<String>) -> ToolError {
        ToolError::Usage(msg.into())
    }
}

/// A report as pretty-printed JSON (the commands' `--json`).
pub fn to_json<T: Serialize>(v: &T) -> Result<String, ToolError> {
    serde_json::to_string_pretty(v)
        .map_err(|e| ToolError::Usage(format!("cannot serialise the report: {e}")))
}

/// Counts of what a rewriting run read, wrote and left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RunCounts {
    /// Packets read from the input(s).
    pub read: u64,
    /// Packets written.
    pub written: u64,
    /// Packets not written because their link type differs from the output's and cannot be converted to it.
    pub dropped_link_type: u64,
}

/// A pcap output created lazily: the link type of the file is that of the first packet written (or the fallback
/// given to [`Output::finish`] for an empty output), because a capture's link type is only known once its first
/// packet has been read. A later packet of another link type is converted to Ethernet when the file is Ethernet
/// ([`link::to_ethernet`]), and otherwise counted in [`RunCounts::dropped_link_type`].
pub struct Output {
    path: PathBuf,
    writer: Option<PcapWriter<FileSink>>,
    link: Option<LinkType>,
    scratch: Vec<u8>,
    pub(crate) counts: RunCounts,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output")
            .field("path", &self.path)
            .field("link", &self.link)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl Output {
    /// An output that will be written to `path` (gzip-compressed when the name ends in `.gz`).
    pub fn new(path: impl AsRef<Path>) -> Output {
        Output {
            path: path.as_ref().to_path_buf(),
            writer: None,
            link: None,
            scratch: Vec::new(),
            counts: RunCounts::default(),
        }
    }

    /// An output whose link type is fixed now (merge decides it before the first packet).
    pub fn with_link(path: impl AsRef<Path>, link: LinkType) -> Result<Output, ToolError> {
        let mut o = Output::new(path);
        o.open(link)?;
        Ok(o)
    }

    fn open(&mut self, link: LinkType) -> Result<(), ToolError> {
        self.writer = Some(PcapWriter::create(&self.path, WriterOptions::new(link))?);
        self.link = Some(link);
        Ok(())
    }

    /// The file's link type, once decided.
    pub fn link_type(&self) -> Option<LinkType> {
        self.link
    }

    /// Write one packet (timestamp in ns, captured bytes, wire length).
    pub fn write(
        &mut self,
        ts_ns: u64,
        link: LinkType,
        data: &[u8],
        orig_len: u32,
    ) -> Result<(), ToolError> {
        let out_link = match self.link {
            Some(l) => l,
            None => {
                self.open(link)?;
                link
            }
        };
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        if link == out_link {
            w.write_packet(ts_ns, data, orig_len)?;
        } else if out_link == LinkType::ETHERNET
            && let Some(added) = link::to_ethernet(link, data, &mut self.scratch)
        {
            let orig = i64::from(orig_len) + added;
            let orig = u32::try_from(orig.max(self.scratch.len() as i64)).unwrap_or(u32::MAX);
            w.write_packet(ts_ns, &self.scratch, orig)?;
        } else {
            self.counts.dropped_link_type += 1;
            return Ok(());
        }
        self.counts.written += 1;
        Ok(())
    }

    /// Flush and close the file; an output that received no packet is created now with `fallback` as its link
    /// type, so every run leaves a valid (possibly empty) capture.
    pub fn finish(mut self, fallback: LinkType) -> Result<RunCounts, ToolError> {
        if self.writer.is_none() {
            self.open(fallback)?;
        }
        if let Some(w) = self.writer.take() {
            w.close()?;
        }
        Ok(self.counts)
    }
}
