//! The capture formats, parsed one *unit* at a time from byte slices.
//!
//! A unit is a pcap record (record header plus captured bytes) or a pcapng block (its total length is in its
//! header). Parsing is split in two calls so that both readers can drive it without copying:
//!
//! 1. `Parser::next_len` looks at the first `Parser::peek_len` bytes of a unit and says how long the unit is
//!    (or that it is an oversized block to skip unread);
//! 2. `Parser::parse` gets exactly that many bytes and returns either a packet (its metadata plus where its bytes
//!    sit inside the unit) or "nothing to deliver" (a section header, an interface description, a skipped block).
//!
//! The streaming [`CaptureReader`](crate::CaptureReader) calls them on its refillable buffer, the preloaded
//! [`Trace`](crate::Trace) on the one big block, so the two give identical records by construction.
//!
//! ## Why our own parser and not `pcap-parser`
//!
//! `pcap-parser` 0.17 was the suggested dependency and was evaluated first. It does not fit four needs:
//!
//! * **Per-packet allocation.** Its Enhanced Packet Block parser collects the block's options into a `Vec` on every
//!   packet; real captures (Wireshark's, macOS `tcpdump`'s) put options (flags, comments, process info) on each EPB.
//! * **Timestamps.** Its `build_ts_resolution` rejects every power-of-two `if_tsresol` (it compares the value with
//!   the high bit still set against 63), its `if_tsoffset` is always decoded little-endian whatever the section's
//!   byte order, and `build_ts` truncates seconds and fractions to `u32`.
//! * **Error context.** Read failures become a bare `ReadError` without the `io::Error`, and there is no way to
//!   tell a capture cut mid-record (count and stop) from a damaged one.
//! * **The preloaded index** needs the byte offset of each packet inside the block; its owned-block API works
//!   against that.
//!
//! The formats are small (the pcap header is 24 bytes, pcapng has four block types that carry packets), so the whole
//! parser is this file, with every length checked before it is used: no indexing can panic, and no length read from
//! the file is ever used to size an allocation beyond the caps below.
//!
//! ## Caps (bounded memory)
//!
//! * [`MAX_CAPLEN`] (256 KiB, libpcap's `MAXIMUM_SNAPLEN`): a packet that claims more captured bytes is an
//!   [`Error::AbsurdLength`]; in a pcap file nothing after such a record can be trusted.
//! * [`MAX_BLOCK_LEN`] (1 MiB): a pcapng block we must hold whole (section header, interface description, packet)
//!   may not be larger. Larger blocks of other kinds (a name-resolution table, a custom block) are skipped unread and
//!   counted in [`ReadStats::oversized_skipped`]; a larger packet block is an error.
//! * [`MAX_INTERFACES`] (65,536) interface descriptions over all sections.

use crate::{Error, LinkType};

/// The longest original length a packet record may claim (libpcap's largest snapshot length, 256 KiB): a larger
/// one (a corrupt 4 GB) is read as the captured length instead of inflating byte counts and rates.
pub const MAX_WIRE_LEN: u32 = MAX_CAPLEN;

/// Largest captured length accepted for one packet (libpcap's `MAXIMUM_SNAPLEN`, 256 KiB).
pub const MAX_CAPLEN: u32 = 262_144;
/// Largest pcapng block that is read whole (1 MiB): room for a [`MAX_CAPLEN`] packet and generous options.
pub const MAX_BLOCK_LEN: u32 = 1 << 20;
/// Most interface descriptions tracked (over all sections of a pcapng file).
pub const MAX_INTERFACES: usize = 65_536;

const PCAP_MICRO: u32 = 0xa1b2_c3d4;
const PCAP_NANO: u32 = 0xa1b2_3c4d;
/// Alexey Kuznetzov's patched libpcap: microseconds, 24-byte record headers.
const PCAP_MODIFIED: u32 = 0xa1b2_cd34;
const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
const PCAPNG_BOM: u32 = 0x1a2b_3c4d;

const BT_IDB: u32 = 0x0000_0001;
const BT_PB: u32 = 0x0000_0002;
const BT_SPB: u32 = 0x0000_0003;
const BT_NRB: u32 = 0x0000_0004;
const BT_ISB: u32 = 0x0000_0005;
const BT_EPB: u32 = 0x0000_0006;
const BT_JOURNAL: u32 = 0x0000_0009;
const BT_DSB: u32 = 0x0000_000a;
const BT_CUSTOM: u32 = 0x0000_0bad;
const BT_CUSTOM_NOCOPY: u32 = 0x4000_0bad;

const OPT_ENDOFOPT: u16 = 0;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_FCSLEN: u16 = 13;
const OPT_IF_TSOFFSET: u16 = 14;

/// Byte order of a pcap file or a pcapng section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Written by a little-endian host (x86, most ARM).
    Little,
    /// Written by a big-endian host (SPARC, PowerPC, MIPS routers).
    Big,
}

impl ByteOrder {
    fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        let a: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(match self {
            ByteOrder::Little => u16::from_le_bytes(a),
            ByteOrder::Big => u16::from_be_bytes(a),
        })
    }

    fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        let a: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(match self {
            ByteOrder::Little => u32::from_le_bytes(a),
            ByteOrder::Big => u32::from_be_bytes(a),
        })
    }

    fn i64(self, b: &[u8], at: usize) -> Option<i64> {
        let a: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(match self {
            ByteOrder::Little => i64::from_le_bytes(a),
            ByteOrder::Big => i64::from_be_bytes(a),
        })
    }
}

/// The unit of an interface's timestamps.
///
/// pcapng's `if_tsresol` is one byte: high bit clear means 10^-n seconds, set means 2^-n seconds. Classic pcap is
/// `Decimal(6)` or, with the nanosecond magic, `Decimal(9)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TsResolution {
    /// One tick is 10^-n seconds (n ≤ 19).
    Decimal(u8),
    /// One tick is 2^-n seconds (n ≤ 63).
    Binary(u8),
}

impl TsResolution {
    /// Microseconds: classic pcap and the pcapng default.
    pub const MICRO: TsResolution = TsResolution::Decimal(6);
    /// Nanoseconds.
    pub const NANO: TsResolution = TsResolution::Decimal(9);

    /// Decode an `if_tsresol` option byte. Resolutions whose ticks-per-second do not fit in a `u64` are refused,
    /// as Wireshark does.
    pub fn from_if_tsresol(v: u8) -> Result<TsResolution, Error> {
        let n = v & 0x7f;
        if v & 0x80 == 0 {
            if n > 19 {
                return Err(Error::BadTsResolution(v));
            }
            Ok(TsResolution::Decimal(n))
        } else {
            if n > 63 {
                return Err(Error::BadTsResolution(v));
            }
            Ok(TsResolution::Binary(n))
        }
    }

    /// Ticks per second.
    pub fn ticks_per_second(self) -> u64 {
        match self {
            TsResolution::Decimal(n) => 10u64.saturating_pow(u32::from(n)),
            TsResolution::Binary(n) => 1u64.checked_shl(u32::from(n)).unwrap_or(u64::MAX),
        }
    }

    /// Convert a tick count to nanoseconds, truncating sub-nanosecond parts as Wireshark does; saturates at
    /// `u64::MAX` (year 2554) instead of wrapping.
    #[inline]
    pub fn ticks_to_ns(self, ticks: u64) -> u64 {
        match self {
            TsResolution::Decimal(9) => ticks,
            TsResolution::Decimal(6) => ticks.saturating_mul(1_000),
            TsResolution::Decimal(n) if n <= 9 => ticks.saturating_mul(10u64.pow(u32::from(9 - n))),
            TsResolution::Decimal(n) => ticks / 10u64.saturating_pow(u32::from(n - 9)),
            TsResolution::Binary(n) => {
                let ns = (u128::from(ticks) * 1_000_000_000) >> n.min(127);
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
        }
    }
}

/// Which container format the file uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Container {
    /// Classic libpcap format.
    Pcap,
    /// Kuznetzov's "modified" pcap (magic `0xa1b2cd34`): 8 more bytes per record header, ignored.
    PcapModified,
    /// pcapng.
    PcapNg,
}

/// What kind of file a reader is reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Format {
    /// pcap or pcapng.
    pub container: Container,
    /// Byte order of the file (of the first section, for pcapng; later sections may differ).
    pub byte_order: ByteOrder,
    /// True when the file was gzip-compressed and is decompressed on the fly.
    pub gzip: bool,
}

/// One capture interface: a pcap file has one, a pcapng file one per Interface Description Block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterfaceInfo {
    /// Link type of every packet captured on it.
    pub link_type: LinkType,
    /// Snapshot length (0 means "no limit" in pcapng).
    pub snaplen: u32,
    /// Timestamp unit.
    pub resolution: TsResolution,
    /// `if_tsoffset`: seconds added to every timestamp (0 for pcap).
    pub ts_offset_s: i64,
    /// FCS bytes at the end of each packet, when the file says so (pcap link-type FCS bits, pcapng `if_fcslen`).
    pub fcs_len: Option<u8>,
    /// pcapng section this interface belongs to (0-based; 0 for pcap).
    pub section: u32,
    /// The interface id packets of that section use to refer to it.
    pub id_in_section: u32,
}

/// Blocks a pcapng file carried that hold no packet, counted by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkippedBlocks {
    /// Name Resolution Blocks.
    pub name_resolution: u64,
    /// Interface Statistics Blocks.
    pub interface_statistics: u64,
    /// Decryption Secrets Blocks (TLS key logs and the like).
    pub decryption_secrets: u64,
    /// Custom blocks (`0x00000BAD`, `0x40000BAD`).
    pub custom: u64,
    /// systemd journal export blocks.
    pub systemd_journal: u64,
    /// Anything else (obsolete, vendor or local-use block types).
    pub other: u64,
}

impl SkippedBlocks {
    /// All skipped blocks together.
    pub fn total(&self) -> u64 {
        self.name_resolution
            + self.interface_statistics
            + self.decryption_secrets
            + self.custom
            + self.systemd_journal
            + self.other
    }

    fn count(&mut self, block_type: u32) {
        let c = match block_type {
            BT_NRB => &mut self.name_resolution,
            BT_ISB => &mut self.interface_statistics,
            BT_DSB => &mut self.decryption_secrets,
            BT_CUSTOM | BT_CUSTOM_NOCOPY => &mut self.custom,
            BT_JOURNAL => &mut self.systemd_journal,
            _ => &mut self.other,
        };
        *c += 1;
    }
}

/// The link types an input's interfaces declared, each once, in the order first declared: what a run reports of
/// the link types its decoder does not follow. Kept here, with the counters the run reads at the end of each input,
/// so that it never opens an input again to learn them (standard input or a pipe cannot be read twice, and a FIFO
/// opened again would wait for a writer). The first [`LinkTypes::KEPT`] distinct ones are kept: a capture declares
/// one or a few, and a hostile one declaring thousands only sets [`LinkTypes::more`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkTypes {
    kept: [LinkType; LinkTypes::KEPT],
    len: u8,
    /// More distinct link types were declared than are kept.
    pub more: bool,
}

impl LinkTypes {
    /// Distinct link types kept.
    pub const KEPT: usize = 8;

    /// The distinct link types declared, in the order first declared (at most [`LinkTypes::KEPT`]).
    pub fn as_slice(&self) -> &[LinkType] {
        &self.kept[..usize::from(self.len)]
    }

    fn note(&mut self, t: LinkType) {
        if self.as_slice().contains(&t) {
            return;
        }
        match self.kept.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = t;
                self.len += 1;
            }
            None => self.more = true,
        }
    }
}

impl Default for LinkTypes {
    fn default() -> Self {
        LinkTypes {
            kept: [LinkType(0); LinkTypes::KEPT],
            len: 0,
            more: false,
        }
    }
}

/// Counters of what a reader delivered, skipped and cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// The link types the input's interfaces declared.
    pub link_types: LinkTypes,
    /// Packets delivered.
    pub packets: u64,
    /// Captured bytes delivered (sum of `data.len()`).
    pub bytes: u64,
    /// Bytes the packets had on the wire (sum of `orig_len`).
    pub wire_bytes: u64,
    /// Records or blocks cut by the end of the input (0 or 1: reading stops there).
    pub truncated_records: u64,
    /// Packets whose recorded original length was impossible (shorter than the bytes captured, or longer than
    /// [`MAX_WIRE_LEN`]), read as their captured length, as Wireshark does.
    pub clamped_lengths: u64,
    /// pcapng sections seen (0 for pcap).
    pub sections: u64,
    /// Non-packet pcapng blocks skipped, by kind.
    pub skipped: SkippedBlocks,
    /// Of the skipped blocks, those over [`MAX_BLOCK_LEN`], passed over without being read into memory.
    pub oversized_skipped: u64,
}

/// What [`Parser::next_len`] decided about the next unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Bring this many bytes (the whole unit) into memory and call [`Parser::parse`].
    Read(usize),
    /// Pass over this many bytes without looking at them (already counted).
    Skip(u64),
}

/// A packet found by [`Parser::parse`]: everything but the bytes, which stay where they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub ts_ns: u64,
    pub orig_len: u32,
    pub interface: u32,
    pub link_type: LinkType,
    /// Offset of the captured bytes from the start of the unit.
    pub data_start: usize,
    pub caplen: u32,
}

/// Where a pcap record header keeps the captured and the wire length. Files older than format 2.3 wrote them in
/// the other order, and some 2.3 writers did too; libpcap and Wireshark swap them back the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lengths {
    /// Captured length, then wire length (format 2.4).
    Normal,
    /// Wire length, then captured length (format 2.0 to 2.2, and the odd major version 543).
    Swapped,
    /// Format 2.3: swapped when the first is the larger.
    MaybeSwapped,
}

impl Lengths {
    /// (captured length, wire length) from the two fields in file order.
    #[inline]
    fn order(self, first: u32, second: u32) -> (u32, u32) {
        match self {
            Lengths::Normal => (first, second),
            Lengths::Swapped => (second, first),
            Lengths::MaybeSwapped if first > second => (second, first),
            Lengths::MaybeSwapped => (first, second),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Pcap {
        order: ByteOrder,
        record_header: usize,
        lengths: Lengths,
    },
    PcapNg {
        /// Byte order of the current section.
        order: ByteOrder,
        /// Index in `interfaces` of the current section's interface 0.
        section_base: usize,
    },
}

/// The state a capture needs to be read: byte order, interfaces, counters.
#[derive(Debug)]
pub(crate) struct Parser {
    kind: Kind,
    format: Format,
    interfaces: Vec<InterfaceInfo>,
    /// Timestamp of the last packet: what a Simple Packet Block, which has none, is given.
    last_ts_ns: u64,
    pub stats: ReadStats,
}

/// Bytes [`Parser::start`] wants to see (fewer only if the input is shorter).
pub(crate) const START_LEN: usize = 24;

/// The leading bytes of a gzip member.
pub(crate) fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// Recognise common non-capture inputs, for a useful error message.
fn magic_hint(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some("zstd-compressed data; decompress it first with `zstd -d`")
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Some("xz-compressed data; decompress it first with `xz -d`")
    } else if head.starts_with(b"BZh") {
        Some("bzip2-compressed data; decompress it first with `bunzip2`")
    } else if head.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
        Some("lz4-compressed data; decompress it first with `lz4 -d`")
    } else if head.starts_with(b"snoop\0") {
        Some("a Solaris snoop capture; convert it with `editcap -F pcap`")
    } else if head.starts_with(b"PK\x03\x04") {
        Some("a zip archive")
    } else if !head.is_empty()
        && head
            .iter()
            .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
    {
        Some("looks like text")
    } else {
        None
    }
}

impl Parser {
    /// Recognise the format from the first bytes (up to [`START_LEN`]; fewer means the input is that short).
    /// Returns the parser and how many bytes the file header took (24 for pcap; 0 for pcapng, whose section header
    /// is read as an ordinary block).
    pub(crate) fn start(head: &[u8], gzip: bool) -> Result<(Parser, usize), Error> {
        let Some(magic) = head.get(..4) else {
            return Err(Error::TruncatedHeader {
                what: "capture file header",
                needed: START_LEN,
                got: head.len(),
            });
        };
        let le = ByteOrder::Little.u32(magic, 0).unwrap_or(0);
        let be = ByteOrder::Big.u32(magic, 0).unwrap_or(0);
        if le == PCAPNG_SHB {
            // The byte order is only known from the section header's byte-order magic; read as a block.
            let order = match head.get(8..12) {
                Some(b) if b == PCAPNG_BOM.to_le_bytes() => ByteOrder::Little,
                Some(b) if b == PCAPNG_BOM.to_be_bytes() => ByteOrder::Big,
                Some(_) => {
                    return Err(Error::Malformed {
                        offset: 0,
                        reason: "pcapng section header has an invalid byte-order magic",
                    });
                }
                None => {
                    return Err(Error::TruncatedHeader {
                        what: "pcapng section header block",
                        needed: 28,
                        got: head.len(),
                    });
                }
            };
            let parser = Parser {
                kind: Kind::PcapNg {
                    order,
                    section_base: 0,
                },
                format: Format {
                    container: Container::PcapNg,
                    byte_order: order,
                    gzip,
                },
                interfaces: Vec::new(),
                last_ts_ns: 0,
                stats: ReadStats::default(),
            };
            return Ok((parser, 0));
        }
        let (order, magic) = match (le, be) {
            (m @ (PCAP_MICRO | PCAP_NANO | PCAP_MODIFIED), _) => (ByteOrder::Little, m),
            (_, m @ (PCAP_MICRO | PCAP_NANO | PCAP_MODIFIED)) => (ByteOrder::Big, m),
            _ => {
                let mut first = [0u8; 8];
                let n = head.len().min(8);
                first[..n].copy_from_slice(&head[..n]);
                return Err(Error::UnknownMagic {
                    first,
                    len: n as u8,
                    hint: magic_hint(head),
                });
            }
        };
        if head.len() < 24 {
            return Err(Error::TruncatedHeader {
                what: "pcap file header",
                needed: 24,
                got: head.len(),
            });
        }
        let field = |at| order.u32(head, at).unwrap_or(0);
        let major = order.u16(head, 4).unwrap_or(0);
        let minor = order.u16(head, 6).unwrap_or(0);
        let lengths = match (major, minor) {
            (2, 0..=2) | (543, _) => Lengths::Swapped,
            (2, 3) => Lengths::MaybeSwapped,
            (2, _) => Lengths::Normal,
            _ => {
                return Err(Error::UnsupportedVersion {
                    format: "pcap",
                    major,
                    minor,
                });
            }
        };
        let snaplen = field(16);
        let network = field(20);
        // libpcap's LT_LINKTYPE: the low 26 bits; bit 26 says an FCS length is in bits 28..31.
        let link_type = LinkType(network & 0x03ff_ffff);
        let fcs_len = (network & 0x0400_0000 != 0).then_some((network >> 28) as u8 * 2);
        let (container, resolution, record_header) = match magic {
            PCAP_NANO => (Container::Pcap, TsResolution::NANO, 16),
            PCAP_MODIFIED => (Container::PcapModified, TsResolution::MICRO, 24),
            _ => (Container::Pcap, TsResolution::MICRO, 16),
        };
        let mut parser = Parser {
            kind: Kind::Pcap {
                order,
                record_header,
                lengths,
            },
            format: Format {
                container,
                byte_order: order,
                gzip,
            },
            interfaces: vec![InterfaceInfo {
                link_type,
                snaplen,
                resolution,
                ts_offset_s: 0,
                fcs_len,
                section: 0,
                id_in_section: 0,
            }],
            last_ts_ns: 0,
            stats: ReadStats::default(),
        };
        parser.stats.link_types.note(link_type);
        Ok((parser, 24))
    }

    pub(crate) fn format(&self) -> Format {
        self.format
    }

    pub(crate) fn interfaces(&self) -> &[InterfaceInfo] {
        &self.interfaces
    }

    /// Bytes [`Parser::next_len`] needs to see. Every unit is at least this long, so fewer bytes at the end of the
    /// input mean a truncated unit.
    #[inline]
    pub(crate) fn peek_len(&self) -> usize {
        match self.kind {
            Kind::Pcap { record_header, .. } => record_header,
            // Block type, total length, and for a section header the byte-order magic.
            Kind::PcapNg { .. } => 12,
        }
    }

    /// The error to report when the input ends `got` bytes into a unit of `needed` bytes, or `None` when that is
    /// an ordinary truncated final record (counted by the caller). Only a pcapng file cut inside its first section
    /// header has no capture at all.
    pub(crate) fn truncation_error(&self, needed: usize, got: usize) -> Option<Error> {
        match self.kind {
            Kind::PcapNg { .. } if self.stats.sections == 0 => Some(Error::TruncatedHeader {
                what: "pcapng section header block",
                needed,
                got,
            }),
            _ => None,
        }
    }

    /// Length of the unit that starts with `head` (at least [`Parser::peek_len`] bytes), found at stream `offset`.
    #[inline]
    pub(crate) fn next_len(&mut self, head: &[u8], offset: u64) -> Result<Next, Error> {
        match self.kind {
            Kind::Pcap {
                order,
                record_header,
                lengths,
            } => {
                let (Some(first), Some(second)) = (order.u32(head, 8), order.u32(head, 12)) else {
                    return Err(Error::Malformed {
                        offset,
                        reason: "short pcap record header",
                    });
                };
                let (caplen, _) = lengths.order(first, second);
                if caplen > MAX_CAPLEN {
                    return Err(Error::AbsurdLength {
                        what: "captured length",
                        len: u64::from(caplen),
                        cap: u64::from(MAX_CAPLEN),
                        offset,
                    });
                }
                Ok(Next::Read(record_header + caplen as usize))
            }
            Kind::PcapNg { order, .. } => {
                let short = Error::Malformed {
                    offset,
                    reason: "short pcapng block header",
                };
                let block_type = ByteOrder::Little.u32(head, 0).ok_or(short)?;
                let order = if block_type == PCAPNG_SHB {
                    match head.get(8..12) {
                        Some(b) if b == PCAPNG_BOM.to_le_bytes() => ByteOrder::Little,
                        Some(b) if b == PCAPNG_BOM.to_be_bytes() => ByteOrder::Big,
                        _ => {
                            return Err(Error::Malformed {
                                offset,
                                reason: "pcapng section header has an invalid byte-order magic",
                            });
                        }
                    }
                } else {
                    order
                };
                let block_type = order.u32(head, 0).unwrap_or(block_type);
                let len = order.u32(head, 4).ok_or(Error::Malformed {
                    offset,
                    reason: "short pcapng block header",
                })?;
                if len < 12 {
                    return Err(Error::Malformed {
                        offset,
                        reason: "pcapng block total length is below the 12-byte minimum",
                    });
                }
                if len % 4 != 0 {
                    return Err(Error::Malformed {
                        offset,
                        reason: "pcapng block total length is not a multiple of 4",
                    });
                }
                if len > MAX_BLOCK_LEN {
                    return match block_type {
                        PCAPNG_SHB | BT_IDB | BT_EPB | BT_SPB | BT_PB => Err(Error::AbsurdLength {
                            what: "pcapng block length",
                            len: u64::from(len),
                            cap: u64::from(MAX_BLOCK_LEN),
                            offset,
                        }),
                        other => {
                            self.stats.skipped.count(other);
                            self.stats.oversized_skipped += 1;
                            Ok(Next::Skip(u64::from(len)))
                        }
                    };
                }
                Ok(Next::Read(len as usize))
            }
        }
    }

    /// Parse one whole unit (exactly the length [`Parser::next_len`] returned), found at stream `offset`.
    /// Returns the packet it holds, if any.
    #[inline]
    pub(crate) fn parse(&mut self, unit: &[u8], offset: u64) -> Result<Option<Meta>, Error> {
        let meta = match self.kind {
            Kind::Pcap {
                order,
                record_header,
                lengths,
            } => {
                let field = |at| order.u32(unit, at).unwrap_or(0);
                let (sec, frac) = (field(0), field(4));
                let (caplen, orig_len) = lengths.order(field(8), field(12));
                if unit.len() < record_header + caplen as usize {
                    return Err(Error::Malformed {
                        offset,
                        reason: "pcap record shorter than its captured length",
                    });
                }
                let iface = self.interfaces.first().copied();
                let (link_type, resolution) = iface
                    .map(|i| (i.link_type, i.resolution))
                    .unwrap_or((LinkType::ETHERNET, TsResolution::MICRO));
                let ts_ns =
                    u64::from(sec) * 1_000_000_000 + resolution.ticks_to_ns(u64::from(frac));
                Meta {
                    ts_ns,
                    orig_len,
                    interface: 0,
                    link_type,
                    data_start: record_header,
                    caplen,
                }
            }
            Kind::PcapNg { order, .. } => match self.parse_block(unit, offset, order)? {
                Some(m) => m,
                None => return Ok(None),
            },
        };
        let mut meta = meta;
        if meta.orig_len < meta.caplen || meta.orig_len > MAX_WIRE_LEN {
            meta.orig_len = meta.caplen;
            self.stats.clamped_lengths += 1;
        }
        self.last_ts_ns = meta.ts_ns;
        self.stats.packets += 1;
        self.stats.bytes += u64::from(meta.caplen);
        self.stats.wire_bytes += u64::from(meta.orig_len);
        Ok(Some(meta))
    }

    fn parse_block(
        &mut self,
        unit: &[u8],
        offset: u64,
        order: ByteOrder,
    ) -> Result<Option<Meta>, Error> {
        let malformed = |reason| Error::Malformed { offset, reason };
        let raw_type = ByteOrder::Little.u32(unit, 0).unwrap_or(0);
        let order = if raw_type == PCAPNG_SHB {
            if unit.get(8..12) == Some(&PCAPNG_BOM.to_be_bytes()[..]) {
                ByteOrder::Big
            } else {
                ByteOrder::Little
            }
        } else {
            order
        };
        let block_type = order.u32(unit, 0).unwrap_or(0);
        let len = unit.len();
        let trailer = len
            .checked_sub(4)
            .and_then(|at| order.u32(unit, at))
            .ok_or_else(|| malformed("short pcapng block"))?;
        if trailer as usize != len {
            return Err(malformed(
                "pcapng block trailing length differs from its leading length",
            ));
        }
        // The body: everything between the 8-byte header and the 4-byte trailer.
        let body = unit
            .get(8..len - 4)
            .ok_or_else(|| malformed("short pcapng block"))?;
        match block_type {
            PCAPNG_SHB => {
                let major = order
                    .u16(body, 4)
                    .ok_or_else(|| malformed("short pcapng section header"))?;
                let minor = order.u16(body, 6).unwrap_or(0);
                if body.len() < 16 {
                    return Err(malformed("short pcapng section header"));
                }
                if major != 1 {
                    return Err(Error::UnsupportedVersion {
                        format: "pcapng",
                        major,
                        minor,
                    });
                }
                self.kind = Kind::PcapNg {
                    order,
                    section_base: self.interfaces.len(),
                };
                self.stats.sections += 1;
                Ok(None)
            }
            BT_IDB => {
                self.parse_idb(body, offset, order)?;
                Ok(None)
            }
            BT_EPB | BT_PB => {
                let (if_id, ts_at) = if block_type == BT_EPB {
                    (order.u32(body, 0), 4)
                } else {
                    (order.u16(body, 0).map(u32::from), 4)
                };
                let short = || malformed("short pcapng packet block");
                let if_id = if_id.ok_or_else(short)?;
                let ts_high = order.u32(body, ts_at).ok_or_else(short)?;
                let ts_low = order.u32(body, ts_at + 4).ok_or_else(short)?;
                let caplen = order.u32(body, 12).ok_or_else(short)?;
                let orig_len = order.u32(body, 16).ok_or_else(short)?;
                if caplen > MAX_CAPLEN {
                    return Err(Error::AbsurdLength {
                        what: "captured length",
                        len: u64::from(caplen),
                        cap: u64::from(MAX_CAPLEN),
                        offset,
                    });
                }
                if caplen as usize > body.len() - 20 {
                    return Err(malformed(
                        "pcapng packet's captured length runs past the end of its block",
                    ));
                }
                let (index, iface) = self.interface(if_id, offset)?;
                let ticks = (u64::from(ts_high) << 32) | u64::from(ts_low);
                let ts_ns = apply_offset(iface.resolution.ticks_to_ns(ticks), iface.ts_offset_s);
                Ok(Some(Meta {
                    ts_ns,
                    orig_len,
                    interface: index,
                    link_type: iface.link_type,
                    data_start: 28,
                    caplen,
                }))
            }
            BT_SPB => {
                let orig_len = order
                    .u32(body, 0)
                    .ok_or_else(|| malformed("short pcapng simple packet block"))?;
                let (index, iface) = self.interface(0, offset)?;
                // The block holds min(orig_len, snaplen) bytes plus padding; the padding is indistinguishable
                // from data, so the lengths decide.
                let mut caplen = orig_len.min((body.len() - 4) as u32);
                if iface.snaplen != 0 {
                    caplen = caplen.min(iface.snaplen);
                }
                if caplen > MAX_CAPLEN {
                    return Err(Error::AbsurdLength {
                        what: "captured length",
                        len: u64::from(caplen),
                        cap: u64::from(MAX_CAPLEN),
                        offset,
                    });
                }
                Ok(Some(Meta {
                    // No timestamp in a Simple Packet Block: reuse the previous packet's, so time never goes
                    // backwards for idle timeouts and rate windows (0 if it is the first packet).
                    ts_ns: self.last_ts_ns,
                    orig_len,
                    interface: index,
                    link_type: iface.link_type,
                    data_start: 12,
                    caplen,
                }))
            }
            other => {
                self.stats.skipped.count(other);
                Ok(None)
            }
        }
    }

    /// Look up interface `if_id` of the current section: its global index and description.
    #[inline]
    fn interface(&self, if_id: u32, offset: u64) -> Result<(u32, InterfaceInfo), Error> {
        let base = match self.kind {
            Kind::PcapNg { section_base, .. } => section_base,
            Kind::Pcap { .. } => 0,
        };
        let declared = self.interfaces.len() - base;
        let index = base.saturating_add(if_id as usize);
        match self.interfaces.get(index) {
            Some(i) if (if_id as usize) < declared => Ok((index as u32, *i)),
            _ => Err(Error::UnknownInterface {
                id: if_id,
                declared,
                offset,
            }),
        }
    }

    fn parse_idb(&mut self, body: &[u8], offset: u64, order: ByteOrder) -> Result<(), Error> {
        let malformed = |reason| Error::Malformed { offset, reason };
        let link = order
            .u16(body, 0)
            .ok_or_else(|| malformed("short pcapng interface description"))?;
        let snaplen = order
            .u32(body, 4)
            .ok_or_else(|| malformed("short pcapng interface description"))?;
        let mut info = InterfaceInfo {
            link_type: LinkType(u32::from(link)),
            snaplen,
            resolution: TsResolution::MICRO,
            ts_offset_s: 0,
            fcs_len: None,
            section: (self.stats.sections.saturating_sub(1)) as u32,
            id_in_section: 0,
        };
        let mut at = 8;
        while at + 4 <= body.len() {
            let code = order.u16(body, at).unwrap_or(0);
            let olen = usize::from(order.u16(body, at + 2).unwrap_or(0));
            if code == OPT_ENDOFOPT {
                break;
            }
            let value = body.get(at + 4..at + 4 + olen).ok_or_else(|| {
                malformed("interface description option runs past the end of its block")
            })?;
            match code {
                OPT_IF_TSRESOL => {
                    if let Some(&v) = value.first() {
                        info.resolution = TsResolution::from_if_tsresol(v)?;
                    }
                }
                OPT_IF_TSOFFSET => {
                    if let Some(v) = order.i64(value, 0) {
                        info.ts_offset_s = v;
                    }
                }
                OPT_IF_FCSLEN => info.fcs_len = value.first().copied(),
                _ => {}
            }
            at += 4 + olen.next_multiple_of(4);
        }
        if self.interfaces.len() >= MAX_INTERFACES {
            return Err(Error::TooManyInterfaces {
                cap: MAX_INTERFACES,
            });
        }
        let base = match self.kind {
            Kind::PcapNg { section_base, .. } => section_base,
            Kind::Pcap { .. } => 0,
        };
        info.id_in_section = (self.interfaces.len() - base) as u32;
        self.stats.link_types.note(info.link_type);
        self.interfaces.push(info);
        Ok(())
    }
}

/// Add `if_tsoffset` seconds, clamping to the representable range instead of wrapping.
#[inline]
fn apply_offset(ns: u64, offset_s: i64) -> u64 {
    if offset_s == 0 {
        return ns;
    }
    let t = i128::from(ns) + i128::from(offset_s) * 1_000_000_000;
    u64::try_from(t.max(0)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_types_are_kept_once_each_and_bounded() {
        let mut t = LinkTypes::default();
        assert!(t.as_slice().is_empty());
        for lt in [147, 1, 147, 1, 101] {
            t.note(LinkType(lt));
        }
        assert_eq!(t.as_slice(), [LinkType(147), LinkType(1), LinkType(101)]);
        assert!(!t.more);
        for lt in 0..1_000 {
            t.note(LinkType(lt));
        }
        assert_eq!(t.as_slice().len(), LinkTypes::KEPT);
        assert_eq!(
            &t.as_slice()[..3],
            [LinkType(147), LinkType(1), LinkType(101)]
        );
        assert!(t.more);
    }

    #[test]
    fn resolutions_convert_to_nanoseconds() {
        assert_eq!(TsResolution::MICRO.ticks_to_ns(1_500_000), 1_500_000_000);
        assert_eq!(TsResolution::NANO.ticks_to_ns(7), 7);
        assert_eq!(TsResolution::Decimal(3).ticks_to_ns(2), 2_000_000);
        assert_eq!(TsResolution::Decimal(12).ticks_to_ns(1_234_567), 1_234);
        // 2^-10 s ticks: 1024 ticks are one second, one tick is 976,562.5 ns, truncated.
        assert_eq!(TsResolution::Binary(10).ticks_to_ns(1024), 1_000_000_000);
        assert_eq!(TsResolution::Binary(10).ticks_to_ns(1), 976_562);
        assert_eq!(TsResolution::Binary(0).ticks_to_ns(3), 3_000_000_000);
        assert_eq!(TsResolution::Decimal(0).ticks_to_ns(u64::MAX), u64::MAX);
    }

    #[test]
    fn if_tsresol_byte_decodes_both_bases() {
        assert_eq!(
            TsResolution::from_if_tsresol(6).unwrap(),
            TsResolution::MICRO
        );
        assert_eq!(
            TsResolution::from_if_tsresol(0x8a).unwrap(),
            TsResolution::Binary(10)
        );
        assert_eq!(
            TsResolution::from_if_tsresol(0x80 | 63).unwrap(),
            TsResolution::Binary(63)
        );
        assert!(matches!(
            TsResolution::from_if_tsresol(20),
            Err(Error::BadTsResolution(20))
        ));
        assert!(matches!(
            TsResolution::from_if_tsresol(0x80 | 64),
            Err(Error::BadTsResolution(0xc0))
        ));
        assert_eq!(TsResolution::Binary(10).ticks_per_second(), 1024);
        assert_eq!(TsResolution::NANO.ticks_per_second(), 1_000_000_000);
    }

    #[test]
    fn offsets_clamp() {
        assert_eq!(apply_offset(5, 0), 5);
        assert_eq!(apply_offset(5, 1), 1_000_000_005);
        assert_eq!(apply_offset(5, -1), 0);
        assert_eq!(apply_offset(u64::MAX, i64::MAX), u64::MAX);
    }

    #[test]
    fn pcap_header_masks_fcs_bits_and_reads_both_orders() {
        let mut h = Vec::new();
        h.extend_from_slice(&PCAP_NANO.to_be_bytes());
        h.extend_from_slice(&2u16.to_be_bytes());
        h.extend_from_slice(&4u16.to_be_bytes());
        h.extend_from_slice(&[0; 8]);
        h.extend_from_slice(&65535u32.to_be_bytes());
        // Ethernet with "FCS present, 2 × 2 bytes" in the high bits.
        h.extend_from_slice(&(1u32 | 0x0400_0000 | (2 << 28)).to_be_bytes());
        let (p, used) = Parser::start(&h, false).unwrap();
        assert_eq!(used, 24);
        assert_eq!(p.format().byte_order, ByteOrder::Big);
        let i = p.interfaces()[0];
        assert_eq!(i.link_type, LinkType::ETHERNET);
        assert_eq!(i.fcs_len, Some(4));
        assert_eq!(i.resolution, TsResolution::NANO);
        assert_eq!(i.snaplen, 65535);
    }

    #[test]
    fn old_pcap_versions_swap_the_record_lengths() {
        assert_eq!(Lengths::Normal.order(10, 60), (10, 60));
        assert_eq!(Lengths::Swapped.order(60, 10), (10, 60));
        assert_eq!(Lengths::MaybeSwapped.order(60, 10), (10, 60));
        assert_eq!(Lengths::MaybeSwapped.order(10, 60), (10, 60));
        let mut h = Vec::new();
        h.extend_from_slice(&PCAP_MICRO.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&[0; 16]);
        let (mut p, _) = Parser::start(&h, false).unwrap();
        let mut rec = Vec::new();
        for v in [1u32, 0, 1500, 2] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        rec.extend_from_slice(&[7, 7]);
        assert_eq!(p.next_len(&rec, 24).unwrap(), Next::Read(18));
        let m = p.parse(&rec, 24).unwrap().unwrap();
        assert_eq!((m.caplen, m.orig_len), (2, 1500));
    }

    #[test]
    fn unknown_magic_reports_the_bytes() {
        match Parser::start(b"hello world, not a capture", false) {
            Err(Error::UnknownMagic { first, len, hint }) => {
                assert_eq!(&first[..usize::from(len)], b"hello wo");
                assert_eq!(hint, Some("looks like text"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            Parser::start(&[0xd4, 0xc3], false),
            Err(Error::TruncatedHeader { got: 2, .. })
        ));
        assert!(matches!(
            Parser::start(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0], false),
            Err(Error::TruncatedHeader {
                what: "pcap file header",
                got: 6,
                ..
            })
        ));
    }
}
