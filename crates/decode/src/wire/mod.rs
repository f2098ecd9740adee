//! # Wire formats: one zero-copy view per header
//!
//! Every header lives in its own file and follows the same shape (the smoltcp way):
//!
//! * a view type `Foo<T: AsRef<[u8]>>` wrapping the bytes, built by `new_checked`, which validates lengths *once*;
//!   after that every accessor is a plain read at a known offset and cannot go out of bounds;
//! * for the headers that the trace synthesizer and the anonymizer write (Ethernet, VLAN, IPv4, IPv6, TCP, UDP), a
//!   `Repr` with `parse` (view → meaning) and `emit` (meaning → bytes, checksums included);
//! * tests at the bottom with real bytes taken from captures.
//!
//! Why views instead of a parse-into-struct decoder: the hot path (the dispatcher) reads only two or three fields of
//! most headers, and a view reads exactly those. A view over `&mut [u8]` also rewrites a field in place, which is
//! what the anonymizer needs.
//!
//! Errors are deliberately coarse ([`Error::Truncated`] or [`Error::Malformed`]); the decoder maps them to a
//! layer-specific reason for its counters.

pub mod capwap;
pub mod chdlc;
pub mod checksum;
pub mod ethernet;
pub mod geneve;
pub mod gre;
pub mod gtpu;
pub mod icmp;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod mpls;
pub mod nsh;
pub mod null;
pub mod ppp;
pub mod pppoe;
pub mod sctp;
pub mod sll;
pub mod sll2;
pub mod tcp;
pub mod udp;
pub mod vlan;
pub mod vxlan;

/// Why a view could not be built over some bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// Fewer bytes than the header needs (a short capture or a cut packet).
    Truncated,
    /// The bytes are there but contradict themselves (a header length below the minimum, a bad version...).
    Malformed,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated",
            Error::Malformed => "malformed",
        })
    }
}

impl std::error::Error for Error {}

/// Result of building a view or parsing a `Repr`.
pub type Result<T> = core::result::Result<T, Error>;

/// EtherType values the decoder follows (IEEE registry).
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    /// Transparent Ethernet Bridging: an Ethernet frame inside GRE (NVGRE, Linux gretap).
    pub const TEB: u16 = 0x6558;
    /// 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    pub const IPV6: u16 = 0x86dd;
    pub const MPLS_UNICAST: u16 = 0x8847;
    pub const MPLS_MULTICAST: u16 = 0x8848;
    pub const PPPOE_DISCOVERY: u16 = 0x8863;
    pub const PPPOE_SESSION: u16 = 0x8864;
    /// 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88a8;
    /// ERSPAN type II inside GRE.
    pub const ERSPAN2: u16 = 0x88be;
    /// ERSPAN type III inside GRE.
    pub const ERSPAN3: u16 = 0x22eb;
    /// PPP inside GRE version 1 (PPTP).
    pub const PPP: u16 = 0x880b;
    /// Network Service Header (RFC 8300), service function chaining.
    pub const NSH: u16 = 0x894f;
    /// Pre-standard QinQ outer tag used by older switches.
    pub const QINQ_OLD: u16 = 0x9100;
    /// Another pre-standard QinQ outer tag.
    pub const QINQ_OLD2: u16 = 0x9200;
}

/// IP protocol numbers the decoder follows (IANA registry).
pub mod ip_proto {
    pub const HOPOPT: u8 = 0;
    pub const ICMP: u8 = 1;
    pub const IGMP: u8 = 2;
    pub const IPV4: u8 = 4;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    pub const IPV6: u8 = 41;
    pub const IPV6_ROUTE: u8 = 43;
    pub const IPV6_FRAG: u8 = 44;
    pub const GRE: u8 = 47;
    pub const ESP: u8 = 50;
    pub const AH: u8 = 51;
    pub const ICMPV6: u8 = 58;
    pub const IPV6_NONXT: u8 = 59;
    pub const IPV6_OPTS: u8 = 60;
    pub const SCTP: u8 = 132;
    pub const MOBILITY: u8 = 135;
    pub const HIP: u8 = 139;
    pub const SHIM6: u8 = 140;
}

/// Big-endian reads used by the views after their length check. `at + N <= b.len()` is the caller's promise
/// (established by `new_checked`); the `get` keeps even a broken promise from panicking.
#[inline(always)]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    match b.get(at..at + 2) {
        Some(s) => u16::from_be_bytes([s[0], s[1]]),
        None => 0,
    }
}

#[inline(always)]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    match b.get(at..at + 4) {
        Some(s) => u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

#[inline(always)]
pub(crate) fn byte(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}

#[inline(always)]
pub(crate) fn put16(b: &mut [u8], at: usize, v: u16) {
    if let Some(s) = b.get_mut(at..at + 2) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

#[inline(always)]
pub(crate) fn put32(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

/// Parses a hex string (whitespace ignored) into bytes: the tests' way of writing real packets.
#[cfg(test)]
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap_or("00"), 16).unwrap_or(0))
        .collect()
}
