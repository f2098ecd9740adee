//! # Ingest: the first stage of the data path
//!
//! Turns capture files (and, behind the `live` feature, interfaces) into [`PacketRecord`]s: a timestamp, the
//! link type the bytes start with, and a borrowed slice of the captured bytes. Nothing here looks inside a
//! packet; that is [`flowbundle-decode`]'s job.
//!
//! Two ways to read, because the two consumers want opposite things:
//!
//! * **Streaming** ([`CaptureReader`]): constant memory whatever the file size; `inspect` and the trace tools use it.
//!   Each record borrows the reader's buffer until the next call (a lending iterator), so no packet is copied.
//! * **Preloaded** ([`Trace`]): the whole capture in one contiguous block plus a packet index, as the ANCS'10 harness
//!   loads a capture before it starts its clock. Records borrow that block; indexing is O(1), so the dispatcher of the
//!   bench harness can hand a worker a `u32` packet number instead of a pointer and a length.
//!
//! Both run the same format parser ([`format`](mod@format)), so they give identical records. Gzip-compressed files are
//! recognised by their magic bytes, not their name. [`PcapWriter`] writes classic pcap (optionally gzip) for the
//! trace tools; [`AfPacketCapture`] reads an interface through a TPACKET_V3 ring on Linux (no native library), and
//! [`LiveCapture`] through libpcap when built with `--features live`.
//!
//! Formats: classic pcap in both byte orders with micro- or nanosecond magic (and Kuznetzov's modified variant);
//! pcapng with any number of sections in either byte order, per-interface link type, snaplen, `if_tsresol`
//! (powers of ten and of two) and `if_tsoffset`; Enhanced, Simple and obsolete Packet Blocks. Other blocks are
//! skipped and counted by kind in [`ReadStats`].
//!
//! [`flowbundle-decode`]: ../flowbundle_decode/index.html

pub mod afpacket;
pub mod arena;
pub mod error;
pub mod format;
pub mod linktype;
pub mod live;
pub mod output;
pub mod reader;
pub mod record;
#[cfg(feature = "testing")]
pub mod testing;
pub mod timeline;
pub mod trace;
pub mod writer;

pub use afpacket::{
    AfPacketCapture, FanoutMode, KernelStats, PacketSender, RingConfig, RingCounters,
    TpacketVersion,
};
pub use arena::PacketArena;
pub use error::Error;
pub use format::{
    ByteOrder, Container, Format, InterfaceInfo, LinkTypes, MAX_BLOCK_LEN, MAX_CAPLEN,
    MAX_INTERFACES, MAX_WIRE_LEN, ReadStats, SkippedBlocks, TsResolution,
};
pub use linktype::LinkType;
pub use live::{CaptureMethod, LiveCapture, LiveSource};
pub use output::{OutputFile, refuse_input_as_output};
pub use reader::{CaptureReader, KeptBuffers, Probed};
pub use record::PacketRecord;
pub use timeline::Timeline;
pub use trace::{Trace, TraceBuilder, TraceIter};
pub use writer::{FileSink, PcapPrecision, PcapWriter, WriterOptions};
