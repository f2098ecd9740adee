//! Link-layer header types, numbered as in the tcpdump.org LINKTYPE_ registry.
//!
//! A newtype over the raw number rather than an enum: captures carry link types we do not decode, and the
//! decoder must be able to say "unsupported link type 147" instead of failing to read the file.

use std::fmt;

/// A LINKTYPE_ value from a pcap header or a pcapng Interface Description Block.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkType(pub u32);

impl LinkType {
    /// BSD loopback: a 4-byte address family in the *capturing host's* byte order.
    pub const NULL: LinkType = LinkType(0);
    /// IEEE 802.3 Ethernet.
    pub const ETHERNET: LinkType = LinkType(1);
    /// Cisco HDLC: a 4-byte header (address, control, EtherType), captured on routers' serial links.
    pub const C_HDLC: LinkType = LinkType(104);
    /// PPP: optional address and control bytes, then a 1- or 2-byte PPP protocol (DLT_PPP).
    pub const PPP: LinkType = LinkType(9);
    /// PPP in HDLC-like framing (DLT_PPP_SERIAL); a frame may also be Cisco HDLC.
    pub const PPP_HDLC: LinkType = LinkType(50);
    /// Raw IP; the first nibble tells IPv4 from IPv6. DLT_RAW is 12 or 14 on some BSDs, 101 is the LINKTYPE value.
    pub const RAW: LinkType = LinkType(101);
    /// OpenBSD loopback: like NULL but the family is always big-endian.
    pub const LOOP: LinkType = LinkType(108);
    /// Linux "cooked" capture, version 1 (16-byte header).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// Raw IPv4.
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6.
    pub const IPV6: LinkType = LinkType(229);
    /// Linux "cooked" capture, version 2 (20-byte header).
    pub const LINUX_SLL2: LinkType = LinkType(276);
    /// Per-Packet Information (CACE PPI): a little-endian header (version, flags, length, inner link type) and
    /// optional fields, then the frame of the inner link type.
    pub const PPI: LinkType = LinkType(192);
    /// DLT_RAW as written by some BSD-derived tools.
    pub const RAW_BSD12: LinkType = LinkType(12);
    /// DLT_RAW as written by OpenBSD.
    pub const RAW_BSD14: LinkType = LinkType(14);

    /// Short name as tcpdump prints it, for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::NULL => "NULL",
            Self::ETHERNET => "EN10MB",
            Self::RAW | Self::RAW_BSD12 | Self::RAW_BSD14 => "RAW",
            Self::LOOP => "LOOP",
            Self::C_HDLC => "C_HDLC",
            Self::PPP => "PPP",
            Self::PPP_HDLC => "PPP_SERIAL",
            Self::LINUX_SLL => "LINUX_SLL",
            Self::IPV4 => "IPV4",
            Self::IPV6 => "IPV6",
            Self::LINUX_SLL2 => "LINUX_SLL2",
            Self::PPI => "PPI",
            _ => "OTHER",
        }
    }
}

impl fmt::Debug for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LinkType({} {})", self.0, self.name())
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            "OTHER" => write!(f, "linktype {}", self.0),
            n => f.write_str(n),
        }
    }
}
