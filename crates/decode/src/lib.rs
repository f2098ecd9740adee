//! # Decode: the second stage of the data path
//!
//! Turns a captured packet ([`flowbundle_ingest::PacketRecord`]) into what the rest of flowbundle needs:
//!
//! * [`wire`]: one zero-copy view per header (smoltcp style), with `Repr` emit/parse for the headers the trace
//!   tools write, checksums included;
//! * [`decode()`]: one pass from the link header to the L4 payload into a borrowed [`Decoded`] view, ending in an
//!   [`Outcome`] that [`DecodeStats`] counts per reason;
//! * [`flow`]: the canonical bidirectional [`FlowKey`], the ANCS'10 [`Fid`], and ports for fragments;
//! * [`hash`]: CRC-16 of the FID, Toeplitz (any key, and symmetric RSS), a keyed hash, and [`FlowHasher`], which
//!   computes the three hashes a scheduler descriptor carries;
//! * [`keyonly`]: a packet's bundle from its link and IP headers alone, where they settle it (a worker passing
//!   over another's packets);
//! * [`defrag`]: IPv4/IPv6 defragmentation with bounded memory, run before scheduling;
//! * [`prestage`]: the one pre-scheduling stage (decode, defragment, key, hash into a scheduler descriptor) that
//!   the engine, the bench and the schedulers' tests share.
//!
//! Nothing here panics on any byte sequence, and nothing allocates per packet (the defragmenter allocates per
//! fragmented datagram). `benches/decode.rs` measures the per-packet cost on a real trace.

pub mod decode;
pub mod defrag;
pub mod flow;
pub mod hash;
pub mod keyonly;
pub mod outcome;
pub mod prestage;
pub mod wire;

pub use decode::{
    DecodeOptions, Decoded, Icmp, Ip, L4, Sctp, Tcp, TunnelSet, Udp, decode, decode_bytes,
    follows_link_type,
};
pub use defrag::{
    DefragConfig, DefragDrop, DefragOutcome, DefragStats, Defragmenter, OverlapPolicy,
};
pub use flow::{
    Fid, FlowKey, FragmentPorts, FragmentPortsStats, KeySide, bundle_of, is_icmpv4_error,
    quoted_flow,
};
/// The decoder's anomalies (Suricata's decoder events), defined with the shared vocabulary.
pub use flowbundle_types::{DecodeEvent, DecodeEvents};
pub use hash::{FlowHasher, FlowHashes};
pub use outcome::{DecodeStats, Layer, LayerCounts, Malformed, Outcome, Unsupported};
