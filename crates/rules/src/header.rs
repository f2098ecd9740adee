//! Header keywords: tests on one packet's IP, TCP and ICMP header fields (`ttl`, `flags`, `itype`, ...), as
//! Suricata evaluates them.
//!
//! The engine hands the fields of the packet being inspected in [`PacketHeader`] ([`crate::PacketCtx::header`]);
//! a rule with header tests matches only a packet whose fields pass all of them, and never stream data or an HTTP
//! buffer (a rule with header tests and payload content is inspected per packet, as `dsize` makes it). Numbers use
//! Suricata's integer syntax ([`Num`]): `N`, `<N`, `>N`, `<=N`, `>=N`, `!N`, and `N-M` or `N<>M` for the open
//! range between them.
//!
//! Supported: `ttl`, `tos` (IPv4), `id` (IPv4), `ip_proto`, `fragbits`, `flags` or `tcp.flags` (with `+ * !`
//! modifiers and an ignore mask), `window`, `seq`, `ack`, `itype`, `icode`, `icmp_id`, `icmp_seq`, and Suricata's
//! later ones: `ipopts`, `tcp.mss`, `icmpv6.mtu`, `vlan.id`, `vlan.layers`, and the flow counters `flow.age`,
//! `flow.pkts`, `flow.bytes`. The fields only those read ([`HeaderNeeds`]) are filled by the engine only when a loaded
//! rule uses them, so they cost nothing per packet otherwise; so are the checksum tests `ipv4-csum`, `tcpv4-csum`,
//! `tcpv6-csum`, `udpv4-csum`, `udpv6-csum`, `icmpv4-csum`, `icmpv6-csum` (`valid`/`invalid`) and `tcp.wscale`.
//! `l3_proto` tests the IP version. Each parser
//! returns a one-line reason for a malformed value. `stream_size` is a condition on the TCP session rather than on
//! one packet's header: see [`crate::stream_size`].

use flowbundle_types::{DecodeEvent, DecodeEvents, StreamEvent, StreamEvents};

/// The header fields of the packet being inspected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketHeader {
    pub ipv6: bool,
    /// Transport protocol number (after IPv6 extension headers).
    pub ip_proto: u8,
    /// TTL or hop limit.
    pub ttl: u8,
    /// IPv4 type of service (IPv6 traffic class).
    pub tos: u8,
    /// IPv4 identification (IPv6: the fragment header's, 0 without one).
    pub ip_id: u32,
    /// IPv4 flags: reserved, don't fragment, more fragments.
    pub reserved_bit: bool,
    pub dont_fragment: bool,
    pub more_fragments: bool,
    /// The fragment offset as `fragoffset` reads it: IPv4's field (8-byte units), IPv6's fragment header offset
    /// field as Suricata reads it (the 16 bits with the flag bits masked off, i.e. in bytes); 0 for no fragment.
    pub frag_offset: u16,
    /// Source and destination address are the same (`sameip`).
    pub same_ip: bool,
    pub tcp: Option<TcpHeader>,
    pub icmp: Option<IcmpHeader>,
    /// The decoder's anomalies on the packet, for `decode-event`.
    pub events: DecodeEvents,
    /// The TCP stream anomalies this packet caused (connection tracking, reassembly), for `stream-event`.
    pub stream_events: StreamEvents,
    /// The packet belongs to no flow (a fragment, a packet whose transport header did not decode, a frame without
    /// IP): rules with `flow`, `flowbits` or `app-layer-protocol` conditions, which need one, do not match it, as in
    /// Suricata.
    pub flowless: bool,
    /// VLAN ids, outermost first, and how many tags the packet crossed (`vlan.id`, `vlan.layers`). Filled only
    /// when a loaded rule uses them ([`HeaderNeeds::vlan`]).
    pub vlan: [u16; 3],
    pub vlan_layers: u8,
    /// IPv4 options present, one bit per option `ipopts` names ([`IP_OPTS`]). Filled only when a loaded rule uses
    /// `ipopts` ([`HeaderNeeds::ip_opts`]).
    pub ip_opts: u16,
    /// The flow's counters after this packet (`flow.age`, `flow.pkts`, `flow.bytes`); not `known` without a flow,
    /// or when no loaded rule uses them ([`HeaderNeeds::flow`]).
    pub flow: FlowCounters,
    /// The frame has no IP header (only its decoder events are known): `l3_proto` matches neither family.
    pub no_ip: bool,
    /// The checksums' verdicts, computed only while a loaded rule tests one ([`HeaderNeeds::checksums`]).
    pub csum: Checksums,
}

/// The packet's IP and transport headers as on the wire, for the header sticky buffers (`ipv4.hdr`, `ipv6.hdr`,
/// `tcp.hdr`, `udp.hdr`, `icmpv4.hdr`, `icmpv6.hdr`): slices of the packet's own bytes, no copy. Empty (the
/// default) for stream data and application buffers, and when no loaded rule uses a header buffer
/// ([`HeaderNeeds::raw`]): a rule on a header buffer then does not match, as Suricata's does not on a packet without
/// that header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawHeaders<'a> {
    /// The IP header: IPv4's with its options, or IPv6's base header with its extension headers.
    pub ip: &'a [u8],
    /// The transport header as Suricata sizes it ([`RawHeaders::new`]); empty for a non-first fragment.
    pub l4: &'a [u8],
    /// The IP protocol of `l4` (6, 17, 1, 58; 0 when `l4` is empty).
    pub l4_proto: u8,
}

/// IP protocol numbers of the transports with a header buffer.
const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;

impl<'a> RawHeaders<'a> {
    /// The headers of a packet whose IP header (with options or extension headers) is `ip` and whose transport
    /// segment (from the transport header to the end of the datagram as captured) is `segment`, of IP protocol
    /// `proto`. The transport header is cut as Suricata sizes it: TCP's data offset (20 to 60 bytes), UDP's 8 bytes,
    /// ICMPv6's first 8, and ICMPv4's 8, plus the 12 timestamp bytes of a timestamp request or reply (types 13 and
    /// 14) and the address entries of a router advertisement (type 9: entries times entry size in 32-bit words)
    /// when the message holds them. A segment too short for its header leaves `l4` empty.
    pub fn new(ip: &'a [u8], segment: &'a [u8], proto: u8) -> RawHeaders<'a> {
        let len = match proto {
            TCP => segment
                .get(12)
                .map(|b| usize::from(b >> 4) * 4)
                .filter(|&n| n >= 20),
            UDP | ICMPV6 => Some(8),
            ICMP => Some(icmpv4_header_len(segment)),
            _ => None,
        };
        let l4 = len.and_then(|n| segment.get(..n)).unwrap_or(&[]);
        RawHeaders {
            ip,
            l4,
            l4_proto: if l4.is_empty() { 0 } else { proto },
        }
    }

    /// The bytes of header buffer `b`, if the packet has that header (`None` for any other buffer).
    pub fn get(&self, b: crate::Buffer) -> Option<&'a [u8]> {
        use crate::Buffer::*;
        let version = self.ip.first().map(|v| v >> 4);
        let l4 = |p: u8| (self.l4_proto == p).then_some(self.l4);
        match b {
            Ipv4Hdr => (version == Some(4)).then_some(self.ip),
            Ipv6Hdr => (version == Some(6)).then_some(self.ip),
            TcpHdr => l4(TCP),
            UdpHdr => l4(UDP),
            Icmpv4Hdr if version == Some(4) => l4(ICMP),
            Icmpv6Hdr if version == Some(6) => l4(ICMPV6),
            _ => None,
        }
    }
}

/// The ICMPv4 header's length as Suricata's decoder sets it (see [`RawHeaders::new`]); 8 when the message holds
/// no more than that (a message shorter than 8 bytes has no header: then the slice is empty).
fn icmpv4_header_len(seg: &[u8]) -> usize {
    const BASE: usize = 8;
    let extra = match seg.first() {
        // Timestamp request and reply: originate, receive and transmit timestamps.
        Some(13 | 14) => 12,
        // Router advertisement: number of addresses times address entry size (32-bit words).
        Some(9) => match (seg.get(4), seg.get(5)) {
            (Some(&n), Some(&sz)) => usize::from(n) * usize::from(sz) * 4,
            _ => 0,
        },
        _ => 0,
    };
    if seg.len() >= BASE + extra {
        BASE + extra
    } else {
        BASE
    }
}

/// A flow's counters as `flow.pkts`, `flow.bytes` and `flow.age` read them: this packet counted. Kept small (32
/// bytes, no `Option` around it): the header is copied with every packet a rule inspects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCounters {
    /// Bytes (whole frames, as Suricata counts them) to the server and to the client.
    pub bytes: [u64; 2],
    /// Packets to the server and to the client (Suricata's counters are 32-bit; more saturate).
    pub pkts: [u32; 2],
    /// Seconds since the flow's first packet, as Suricata takes them: the difference of the two timestamps'
    /// whole seconds.
    pub age_secs: u32,
    /// The packet has a flow and the counters were filled.
    pub known: bool,
}

/// Which of the optional [`PacketHeader`] fields the loaded rules read: the engine fills only those, so a field no
/// rule uses costs nothing per packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderNeeds {
    pub vlan: bool,
    pub ip_opts: bool,
    pub tcp_mss: bool,
    pub flow: bool,
    /// Some rule tests a checksum (`ipv4-csum`, `tcpv4-csum`, ...).
    pub checksums: bool,
    /// Some rule tests the TCP window scale option (`tcp.wscale`).
    pub tcp_wscale: bool,
    /// Some rule inspects a header buffer (`ipv4.hdr`, `tcp.hdr`, ...): the engine hands the packet's headers
    /// ([`RawHeaders`]). Not part of [`HeaderNeeds::any`]: the bytes are slices of the packet, not header fields.
    pub raw: bool,
}

impl HeaderNeeds {
    /// What `tests` read.
    pub fn of(tests: &[HeaderTest]) -> HeaderNeeds {
        let mut n = HeaderNeeds::default();
        for t in tests {
            match t {
                HeaderTest::VlanId { .. } | HeaderTest::VlanLayers(_) => n.vlan = true,
                HeaderTest::IpOpts(_) => n.ip_opts = true,
                HeaderTest::TcpMss(_) => n.tcp_mss = true,
                HeaderTest::FlowAge(_)
                | HeaderTest::FlowPkts { .. }
                | HeaderTest::FlowBytes { .. } => n.flow = true,
                HeaderTest::Csum { .. } => n.checksums = true,
                HeaderTest::TcpWscale(_) => n.tcp_wscale = true,
                _ => {}
            }
        }
        n
    }

    /// Either's needs.
    pub fn union(self, o: HeaderNeeds) -> HeaderNeeds {
        HeaderNeeds {
            vlan: self.vlan || o.vlan,
            ip_opts: self.ip_opts || o.ip_opts,
            tcp_mss: self.tcp_mss || o.tcp_mss,
            flow: self.flow || o.flow,
            checksums: self.checksums || o.checksums,
            tcp_wscale: self.tcp_wscale || o.tcp_wscale,
            raw: self.raw || o.raw,
        }
    }

    /// Whether anything beyond the always-filled fields is needed.
    pub fn any(self) -> bool {
        self.vlan || self.ip_opts || self.tcp_mss || self.flow || self.checksums || self.tcp_wscale
    }
}

/// The IPv4 options `ipopts` names: (name, option type, bit in [`PacketHeader::ip_opts`]); `any` is every bit.
pub const IP_OPTS: &[(&str, u8, u16)] = &[
    ("eol", 0, 1 << 0),
    ("nop", 1, 1 << 1),
    ("rr", 7, 1 << 2),
    ("ts", 68, 1 << 3),
    ("sec", 130, 1 << 4),
    ("lsrr", 131, 1 << 5),
    ("esec", 133, 1 << 6),
    ("satid", 136, 1 << 7),
    ("ssrr", 137, 1 << 8),
];

/// The options of an IPv4 header's option bytes (after the fixed 20 bytes), as [`IP_OPTS`] bits: walked up to
/// End of List or the first option whose length does not fit.
pub fn ip_opts_of(options: &[u8]) -> u16 {
    let mut bits = 0;
    let mut i = 0;
    while let Some(&t) = options.get(i) {
        if let Some(&(_, _, bit)) = IP_OPTS.iter().find(|(_, ty, _)| *ty == t) {
            bits |= bit;
        }
        match t {
            0 => break,
            1 => i += 1,
            _ => match options.get(i + 1) {
                Some(&len) if len >= 2 && i + usize::from(len) <= options.len() => {
                    i += usize::from(len);
                }
                _ => break,
            },
        }
    }
    bits
}

/// Up to three VLAN ids of an Ethernet frame, outermost first (802.1Q, 802.1ad and the legacy 0x9100 tags), and
/// the number of tags: a bounded walk of the frame's first bytes.
pub fn vlan_ids_of(frame: &[u8]) -> ([u16; 3], u8) {
    let mut ids = [0u16; 3];
    let mut n = 0u8;
    let mut at = 12;
    while let (Some(&a), Some(&b)) = (frame.get(at), frame.get(at + 1)) {
        let ty = u16::from_be_bytes([a, b]);
        if !matches!(ty, 0x8100 | 0x88a8 | 0x9100) {
            break;
        }
        let (Some(&hi), Some(&lo)) = (frame.get(at + 2), frame.get(at + 3)) else {
            break;
        };
        if let Some(slot) = ids.get_mut(usize::from(n)) {
            *slot = u16::from_be_bytes([hi, lo]) & 0x0fff;
        }
        n = n.saturating_add(1);
        at += 4;
    }
    (ids, n)
}

/// Which counter `flow.pkts` and `flow.bytes` compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowCountDir {
    ToServer,
    ToClient,
    /// Either direction's count passes.
    Either,
    /// Both directions' counts pass.
    Both,
}

impl FlowCountDir {
    fn test(self, n: Num, c: [u64; 2]) -> bool {
        match self {
            FlowCountDir::ToServer => n.test(c[0]),
            FlowCountDir::ToClient => n.test(c[1]),
            FlowCountDir::Either => n.test(c[0]) || n.test(c[1]),
            FlowCountDir::Both => n.test(c[0]) && n.test(c[1]),
        }
    }
}

/// Which VLAN layer `vlan.id` tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VlanLayer {
    /// Any layer (the default).
    Any,
    /// Every layer.
    All,
    /// One layer: 0 to 2 from the outermost, -1 to -3 from the innermost.
    Index(i8),
}

/// Whether the packet's checksums hold, for the `*-csum` keywords; `None` where not computed (no loaded rule
/// tests one), not applicable (no such header) or not computable (a fragment, a datagram cut short by the capture).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checksums {
    /// The IPv4 header checksum.
    pub ipv4: Option<bool>,
    /// The transport checksum (TCP, UDP, ICMP or ICMPv6, whichever the packet carries). A UDP-over-IPv4 checksum
    /// of zero (none sent) counts as valid.
    pub l4: Option<bool>,
}

/// TCP header fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    /// The flag bits as on the wire: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10, URG 0x20, ECE 0x40, CWR 0x80.
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    pub window: u16,
    /// The MSS option's value, when the header has one (`tcp.mss`). Filled only when a loaded rule uses `tcp.mss`
    /// ([`HeaderNeeds::tcp_mss`]).
    pub mss: Option<u16>,
    /// The window scale option's shift count, when the segment carries one and a loaded rule tests it
    /// ([`HeaderNeeds::tcp_wscale`]).
    pub wscale: Option<u8>,
}

/// ICMP or ICMPv6 header fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IcmpHeader {
    pub msg_type: u8,
    pub code: u8,
    /// The 4 bytes after the checksum (identifier and sequence number for echo messages).
    pub rest: u32,
}

impl IcmpHeader {
    /// Identifier and sequence number, for the messages that have them (echo, timestamp, information and address
    /// mask request/reply in ICMPv4; echo request/reply in ICMPv6), as Suricata reads them.
    fn id_seq(&self, ipv6: bool) -> Option<(u16, u16)> {
        let has = if ipv6 {
            matches!(self.msg_type, 128 | 129)
        } else {
            matches!(self.msg_type, 0 | 8 | 13..=18)
        };
        has.then_some(((self.rest >> 16) as u16, self.rest as u16))
    }
}

/// A number test in Suricata's syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Num {
    Eq(u64),
    Ne(u64),
    Lt(u64),
    Gt(u64),
    Le(u64),
    Ge(u64),
    /// Strictly between.
    Between(u64, u64),
    /// Not strictly between (`!N-M`): at most `N` or at least `M`.
    Outside(u64, u64),
}

impl Num {
    /// Parses `N`, `<N`, `>N`, `<=N`, `>=N`, `!N`, `=N`, `N-M`, `N<>M`, `!N-M`, with values at most `max`.
    pub fn parse(v: &str, max: u64) -> Result<Num, String> {
        let v = v.trim();
        let n = |t: &str| -> Result<u64, String> {
            let t = t.trim();
            let x = match t.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16),
                None => t.parse::<u64>(),
            }
            .map_err(|_| format!("invalid number `{}`", short(v)))?;
            if x > max {
                return Err(format!("`{}` is above {max}", short(v)));
            }
            Ok(x)
        };
        let r = if let Some(x) = v.strip_prefix("<=") {
            Num::Le(n(x)?)
        } else if let Some(x) = v.strip_prefix(">=") {
            Num::Ge(n(x)?)
        } else if let Some(x) = v.strip_prefix('<') {
            Num::Lt(n(x)?)
        } else if let Some(x) = v.strip_prefix('>') {
            Num::Gt(n(x)?)
        } else if let Some(x) = v.strip_prefix('!') {
            match x.split_once("<>").or_else(|| x.split_once('-')) {
                Some((a, b)) => match Num::parse(&format!("{a}-{b}"), max)? {
                    Num::Between(a, b) => Num::Outside(a, b),
                    _ => return Err(format!("invalid range `{}`", short(v))),
                },
                None => Num::Ne(n(x)?),
            }
        } else if let Some(x) = v.strip_prefix('=') {
            Num::Eq(n(x)?)
        } else if let Some((a, b)) = v.split_once("<>").or_else(|| v.split_once('-')) {
            let (a, b) = (n(a)?, n(b)?);
            if a >= b {
                return Err(format!("empty range `{}`", short(v)));
            }
            Num::Between(a, b)
        } else {
            Num::Eq(n(v)?)
        };
        Ok(r)
    }

    /// Whether `x` passes.
    pub fn test(self, x: u64) -> bool {
        match self {
            Num::Eq(a) => x == a,
            Num::Ne(a) => x != a,
            Num::Lt(a) => x < a,
            Num::Gt(a) => x > a,
            Num::Le(a) => x <= a,
            Num::Ge(a) => x >= a,
            Num::Between(a, b) => a < x && x < b,
            Num::Outside(a, b) => x <= a || x >= b,
        }
    }
}

/// How `flags` and `fragbits` compare the bits they name with the packet's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BitsMode {
    /// No modifier: exactly these bits (outside the ignore mask).
    Exact,
    /// `+`: these bits, and any others.
    All,
    /// `*`: any of these bits.
    Any,
    /// `!`: not all of these bits.
    NotAll,
}

impl BitsMode {
    fn test(self, have: u8, want: u8) -> bool {
        match self {
            BitsMode::Exact => have == want,
            BitsMode::All => have & want == want,
            BitsMode::Any => have & want != 0,
            BitsMode::NotAll => have & want != want,
        }
    }
}

/// One header test of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeaderTest {
    Ttl(Num),
    Tos {
        value: u8,
        negated: bool,
    },
    Id(u16),
    IpProto(Num),
    Fragbits {
        mode: BitsMode,
        bits: u8,
    },
    Flags {
        mode: BitsMode,
        bits: u8,
        ignore: u8,
    },
    Window {
        value: u16,
        negated: bool,
    },
    Seq(u32),
    Ack(u32),
    Itype(Num),
    Icode(Num),
    IcmpId(u16),
    IcmpSeq(u16),
    /// `decode-event:<name>`: the decoder (or the defragmenter) noted this anomaly on the packet.
    DecodeEvent(DecodeEvent),
    /// `stream-event:<name>`: the engine's connection tracking or reassembly noted this anomaly on the packet.
    StreamEvent(StreamEvent),
    /// `fragoffset:[!|<|>]N`: the fragment offset ([`PacketHeader::frag_offset`]).
    FragOffset(Num),
    /// `sameip`: source and destination address are equal.
    SameIp,
    /// `ipopts:<name>`: the IPv4 header carries this option ([`IP_OPTS`]; `any`: at least one).
    IpOpts(u16),
    /// `tcp.mss`: the MSS option's value; no match without the option.
    TcpMss(Num),
    /// `icmpv6.mtu`: the MTU of an ICMPv6 Packet Too Big message (code 0); no match on other messages.
    Icmpv6Mtu(Num),
    /// `vlan.id:[op]id[,layer]`.
    VlanId {
        n: Num,
        layer: VlanLayer,
    },
    /// `vlan.layers`: how many VLAN tags the packet crossed.
    VlanLayers(Num),
    /// `flow.age`: seconds since the flow began ([`FlowCounters::age_secs`]).
    FlowAge(Num),
    /// `flow.pkts:<dir>,[op]N` (and `flow.pkts_toserver`, `flow.pkts_toclient`).
    FlowPkts {
        dir: FlowCountDir,
        n: Num,
    },
    /// `flow.bytes:<dir>,[op]N` (and `flow.bytes_toserver`, `flow.bytes_toclient`).
    FlowBytes {
        dir: FlowCountDir,
        n: Num,
    },
    /// `ipv4-csum`, `tcpv4-csum`, ...: the checksum `kind` names holds (`valid`) or not (`invalid`); a packet
    /// without that header (another family, another transport) matches neither.
    Csum {
        kind: CsumKind,
        valid: bool,
    },
    /// `tcp.wscale:<uint8>`: the window scale option's shift count; a segment without the option does not match.
    TcpWscale(Num),
    /// `l3_proto:ipv4|ip4|ipv6|ip6`: the packet's IP version.
    L3Proto {
        ipv6: bool,
    },
}

/// The checksum a `*-csum` keyword checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CsumKind {
    Ipv4,
    Tcpv4,
    Tcpv6,
    Udpv4,
    Udpv6,
    Icmpv4,
    Icmpv6,
}

impl CsumKind {
    /// The kind a keyword names (`tcpv4-csum`, ...).
    pub fn from_keyword(name: &str) -> Option<CsumKind> {
        Some(match name {
            "ipv4-csum" => CsumKind::Ipv4,
            "tcpv4-csum" => CsumKind::Tcpv4,
            "tcpv6-csum" => CsumKind::Tcpv6,
            "udpv4-csum" => CsumKind::Udpv4,
            "udpv6-csum" => CsumKind::Udpv6,
            "icmpv4-csum" => CsumKind::Icmpv4,
            "icmpv6-csum" => CsumKind::Icmpv6,
            _ => return None,
        })
    }
}

/// Fragbits as bits of one byte.
const FRAG_M: u8 = 1;
const FRAG_D: u8 = 2;
const FRAG_R: u8 = 4;

/// Protocol names `ip_proto` accepts (Suricata reads them from the system's protocol database).
const PROTO_NAMES: &[(&str, u8)] = &[
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("ipv4", 4),
    ("tcp", 6),
    ("egp", 8),
    ("pup", 12),
    ("udp", 17),
    ("ipv6", 41),
    ("ipv6-route", 43),
    ("ipv6-frag", 44),
    ("rsvp", 46),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("ipv6-icmp", 58),
    ("icmpv6", 58),
    ("ipv6-nonxt", 59),
    ("ipv6-opts", 60),
    ("eigrp", 88),
    ("ospf", 89),
    ("pim", 103),
    ("vrrp", 112),
    ("l2tp", 115),
    ("sctp", 132),
];

fn short(s: &str) -> String {
    s.chars().take(32).collect()
}

impl HeaderTest {
    /// The test keyword `name` with value `v` describes, `Ok(None)` when `name` is not a header keyword.
    pub fn parse(name: &str, v: Option<&str>) -> Result<Option<HeaderTest>, String> {
        // Suricata 8's name for `flags`.
        // Suricata 8's names for `flags`, `window`, `seq` and `ack`.
        let name = match name {
            "tcp.flags" => "flags",
            "tcp.window" => "window",
            "tcp.seq" => "seq",
            "tcp.ack" => "ack",
            other => other,
        };
        let name = if name == "tcp.flags" { "flags" } else { name };
        if let Some(kind) = CsumKind::from_keyword(name) {
            // `valid` or `invalid`, quoted or not (Suricata strips the quotes).
            let v = v.map(str::trim).unwrap_or("");
            let bare = v
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .unwrap_or(v)
                .trim();
            return match bare {
                "valid" => Ok(Some(HeaderTest::Csum { kind, valid: true })),
                "invalid" => Ok(Some(HeaderTest::Csum { kind, valid: false })),
                "" => Err(format!("{name} needs a value (valid or invalid)")),
                _ => Err(format!(
                    "{name}: expects valid or invalid, not `{}`",
                    short(v)
                )),
            };
        }
        if name == "l3_proto" {
            let v = v.map(str::trim).unwrap_or("");
            return match v.to_ascii_lowercase().as_str() {
                "ipv4" | "ip4" => Ok(Some(HeaderTest::L3Proto { ipv6: false })),
                "ipv6" | "ip6" => Ok(Some(HeaderTest::L3Proto { ipv6: true })),
                "" => Err("l3_proto needs a value (ipv4 or ipv6)".to_string()),
                _ => Err(format!("l3_proto: invalid l3 proto `{}`", short(v))),
            };
        }
        if name == "sameip" {
            return match v.map(str::trim).filter(|v| !v.is_empty()) {
                None => Ok(Some(HeaderTest::SameIp)),
                Some(v) => Err(format!("sameip takes no value, not `{}`", short(v))),
            };
        }
        if let Some(t) = Self::parse_newer(name, v)? {
            return Ok(Some(t));
        }
        let known = matches!(
            name,
            "ttl"
                | "tos"
                | "id"
                | "ip_proto"
                | "fragbits"
                | "flags"
                | "window"
                | "seq"
                | "ack"
                | "itype"
                | "icode"
                | "icmp_id"
                | "icmp_seq"
                | "fragoffset"
                | "tcp.wscale"
        );
        if !known {
            return Ok(None);
        }
        let v = v
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{name} needs a value"))?;
        let bad = |m: String| format!("{name}: {m}");
        let exact = |max: u64| -> Result<u64, String> {
            match Num::parse(v, max).map_err(bad)? {
                Num::Eq(x) => Ok(x),
                _ => Err(bad(format!("expects a number, not `{}`", short(v)))),
            }
        };
        let negatable = |max: u64| -> Result<(u64, bool), String> {
            let (neg, rest) = match v.strip_prefix('!') {
                Some(r) => (true, r.trim()),
                None => (false, v),
            };
            // `tos` also takes hex as `x10`.
            let rest = rest
                .strip_prefix('x')
                .map_or_else(|| rest.to_string(), |h| format!("0x{h}"));
            match Num::parse(&rest, max).map_err(bad)? {
                Num::Eq(x) => Ok((x, neg)),
                _ => Err(bad(format!("expects a number, not `{}`", short(v)))),
            }
        };
        Ok(Some(match name {
            "ttl" => HeaderTest::Ttl(Num::parse(v, 255).map_err(bad)?),
            "tcp.wscale" => HeaderTest::TcpWscale(Num::parse(v, 255).map_err(bad)?),
            "fragoffset" => match Num::parse(v, 65_535).map_err(bad)? {
                // Suricata's forms: `N`, `!N`, `<N`, `>N`.
                n @ (Num::Eq(_) | Num::Ne(_) | Num::Lt(_) | Num::Gt(_)) => {
                    HeaderTest::FragOffset(n)
                }
                _ => return Err(bad(format!("expects [!|<|>]N, not `{}`", short(v)))),
            },
            "itype" => HeaderTest::Itype(Num::parse(v, 255).map_err(bad)?),
            "icode" => HeaderTest::Icode(Num::parse(v, 255).map_err(bad)?),
            "tos" => {
                let (x, negated) = negatable(255)?;
                HeaderTest::Tos {
                    value: x as u8,
                    negated,
                }
            }
            "window" => {
                let (x, negated) = negatable(65_535)?;
                HeaderTest::Window {
                    value: x as u16,
                    negated,
                }
            }
            "id" => HeaderTest::Id(exact(65_535)? as u16),
            "seq" => HeaderTest::Seq(exact(u64::from(u32::MAX))? as u32),
            "ack" => HeaderTest::Ack(exact(u64::from(u32::MAX))? as u32),
            "icmp_id" => HeaderTest::IcmpId(exact(65_535)? as u16),
            "icmp_seq" => HeaderTest::IcmpSeq(exact(65_535)? as u16),
            "ip_proto" => {
                let lower = v.to_ascii_lowercase();
                let (prefix, word) = match lower.find(|c: char| c.is_ascii_alphanumeric()) {
                    Some(i) => lower.split_at(i),
                    None => return Err(bad(format!("invalid value `{}`", short(v)))),
                };
                let text = match PROTO_NAMES.iter().find(|(n, _)| *n == word) {
                    Some((_, p)) => format!("{prefix}{p}"),
                    None => lower.clone(),
                };
                HeaderTest::IpProto(Num::parse(&text, 255).map_err(bad)?)
            }
            "flags" => flags(v).map_err(bad)?,
            _ => fragbits(v).map_err(bad)?,
        }))
    }

    /// The keywords Suricata added after Snort's set: `ipopts` (Snort's too), `tcp.mss`, `icmpv6.mtu`,
    /// `vlan.id`, `vlan.layers`, `flow.age`, `flow.pkts`, `flow.bytes`; `Ok(None)` for another name.
    fn parse_newer(name: &str, v: Option<&str>) -> Result<Option<HeaderTest>, String> {
        let counted = |rest: &str| -> Option<FlowCountDir> {
            match rest {
                "" => None,
                "_toserver" => Some(FlowCountDir::ToServer),
                "_toclient" => Some(FlowCountDir::ToClient),
                _ => None,
            }
        };
        let family = [
            "ipopts",
            "tcp.mss",
            "icmpv6.mtu",
            "vlan.id",
            "vlan.layers",
            "flow.age",
        ]
        .contains(&name)
            || name
                .strip_prefix("flow.pkts")
                .or_else(|| name.strip_prefix("flow.bytes"))
                .is_some_and(|r| r.is_empty() || counted(r).is_some());
        if !family {
            return Ok(None);
        }
        let v = v
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{name} needs a value"))?;
        let bad = |m: String| format!("{name}: {m}");
        let num = |t: &str, max: u64| Num::parse(t, max).map_err(bad);
        Ok(Some(match name {
            "ipopts" => {
                let w = v.to_ascii_lowercase();
                if w == "any" {
                    HeaderTest::IpOpts(IP_OPTS.iter().fold(0, |a, (_, _, b)| a | b))
                } else {
                    match IP_OPTS.iter().find(|(n, _, _)| *n == w) {
                        Some(&(_, _, bit)) => HeaderTest::IpOpts(bit),
                        None => return Err(bad(format!("unknown option `{}`", short(v)))),
                    }
                }
            }
            "tcp.mss" => HeaderTest::TcpMss(num(v, 65_535)?),
            "icmpv6.mtu" => HeaderTest::Icmpv6Mtu(num(v, u64::from(u32::MAX))?),
            "vlan.layers" => HeaderTest::VlanLayers(num(v, 255)?),
            "flow.age" => HeaderTest::FlowAge(num(v, u64::from(u32::MAX))?),
            "vlan.id" => {
                let (id, layer) = match v.split_once(',') {
                    None => (v, VlanLayer::Any),
                    Some((id, l)) => {
                        let l = l.trim();
                        let layer = match l {
                            "any" => VlanLayer::Any,
                            "all" => VlanLayer::All,
                            _ => match l.parse::<i8>() {
                                Ok(i) if (-3..=2).contains(&i) => VlanLayer::Index(i),
                                _ => {
                                    return Err(bad(format!(
                                        "layer must be 0 to 2, -1 to -3, any or all, not `{}`",
                                        short(l)
                                    )));
                                }
                            },
                        };
                        (id, layer)
                    }
                };
                HeaderTest::VlanId {
                    n: num(id, 4095)?,
                    layer,
                }
            }
            _ => {
                let bytes = name.starts_with("flow.bytes");
                let max = if bytes { u64::MAX } else { u64::from(u32::MAX) };
                let suffix = name
                    .strip_prefix(if bytes { "flow.bytes" } else { "flow.pkts" })
                    .unwrap_or("");
                let (dir, n) = match counted(suffix) {
                    Some(dir) => (dir, v),
                    None => {
                        let (d, n) = v.split_once(',').ok_or_else(|| {
                            bad(format!(
                                "expects <direction>,[op]<number>, not `{}`",
                                short(v)
                            ))
                        })?;
                        let dir = match d.trim() {
                            "toserver" => FlowCountDir::ToServer,
                            "toclient" => FlowCountDir::ToClient,
                            "either" => FlowCountDir::Either,
                            "both" => FlowCountDir::Both,
                            other => {
                                return Err(bad(format!(
                                    "direction must be toserver, toclient, either or both, not `{}`",
                                    short(other)
                                )));
                            }
                        };
                        (dir, n)
                    }
                };
                let n = num(n, max)?;
                if bytes {
                    HeaderTest::FlowBytes { dir, n }
                } else {
                    HeaderTest::FlowPkts { dir, n }
                }
            }
        }))
    }

    /// Whether the packet passes the test. A test on a header the packet does not have fails (`flags` on UDP).
    #[inline]
    pub fn matches(&self, h: &PacketHeader) -> bool {
        match *self {
            HeaderTest::Ttl(n) => n.test(u64::from(h.ttl)),
            HeaderTest::Tos { value, negated } => !h.ipv6 && (h.tos == value) != negated,
            HeaderTest::Id(id) => !h.ipv6 && h.ip_id == u32::from(id),
            HeaderTest::IpProto(n) => n.test(u64::from(h.ip_proto)),
            HeaderTest::Fragbits { mode, bits } => {
                let mut have = 0;
                for (on, bit) in [
                    (h.more_fragments, FRAG_M),
                    (h.dont_fragment, FRAG_D),
                    (h.reserved_bit, FRAG_R),
                ] {
                    if on {
                        have |= bit;
                    }
                }
                !h.ipv6 && mode.test(have, bits)
            }
            HeaderTest::Flags { mode, bits, ignore } => {
                h.tcp.is_some_and(|t| mode.test(t.flags & !ignore, bits))
            }
            HeaderTest::Window { value, negated } => {
                h.tcp.is_some_and(|t| (t.window == value) != negated)
            }
            HeaderTest::Seq(s) => h.tcp.is_some_and(|t| t.seq == s),
            HeaderTest::Ack(a) => h.tcp.is_some_and(|t| t.ack == a),
            HeaderTest::Itype(n) => h.icmp.is_some_and(|i| n.test(u64::from(i.msg_type))),
            HeaderTest::Icode(n) => h.icmp.is_some_and(|i| n.test(u64::from(i.code))),
            HeaderTest::IcmpId(id) => h
                .icmp
                .and_then(|i| i.id_seq(h.ipv6))
                .is_some_and(|(x, _)| x == id),
            HeaderTest::IcmpSeq(seq) => h
                .icmp
                .and_then(|i| i.id_seq(h.ipv6))
                .is_some_and(|(_, x)| x == seq),
            HeaderTest::DecodeEvent(e) => h.events.contains(e),
            HeaderTest::StreamEvent(e) => h.stream_events.contains(e),
            HeaderTest::FragOffset(n) => n.test(u64::from(h.frag_offset)),
            HeaderTest::SameIp => h.same_ip,
            HeaderTest::IpOpts(bits) => !h.ipv6 && h.ip_opts & bits != 0,
            HeaderTest::TcpMss(n) => h
                .tcp
                .and_then(|t| t.mss)
                .is_some_and(|m| n.test(u64::from(m))),
            HeaderTest::Icmpv6Mtu(n) => {
                h.ipv6
                    && h.ip_proto == 58
                    && h.icmp.is_some_and(|i| {
                        i.msg_type == 2 && i.code == 0 && n.test(u64::from(i.rest))
                    })
            }
            HeaderTest::VlanLayers(n) => n.test(u64::from(h.vlan_layers)),
            HeaderTest::VlanId { n, layer } => {
                let count = usize::from(h.vlan_layers.min(3));
                let ids = h.vlan.get(..count).unwrap_or(&[]);
                match layer {
                    VlanLayer::Any => ids.iter().any(|&id| n.test(u64::from(id))),
                    VlanLayer::All => {
                        !ids.is_empty() && ids.iter().all(|&id| n.test(u64::from(id)))
                    }
                    VlanLayer::Index(i) => {
                        let at = if i >= 0 {
                            usize::try_from(i).ok()
                        } else {
                            count.checked_sub(usize::from(i.unsigned_abs()))
                        };
                        at.and_then(|a| ids.get(a))
                            .is_some_and(|&id| n.test(u64::from(id)))
                    }
                }
            }
            HeaderTest::FlowAge(n) => h.flow.known && n.test(u64::from(h.flow.age_secs)),
            HeaderTest::FlowPkts { dir, n } => {
                h.flow.known && dir.test(n, h.flow.pkts.map(u64::from))
            }
            HeaderTest::FlowBytes { dir, n } => h.flow.known && dir.test(n, h.flow.bytes),
            HeaderTest::Csum { kind, valid } => {
                let (v6, present, verdict) = match kind {
                    CsumKind::Ipv4 => (false, true, h.csum.ipv4),
                    CsumKind::Tcpv4 | CsumKind::Tcpv6 => {
                        (kind == CsumKind::Tcpv6, h.tcp.is_some(), h.csum.l4)
                    }
                    CsumKind::Udpv4 | CsumKind::Udpv6 => {
                        (kind == CsumKind::Udpv6, h.ip_proto == 17, h.csum.l4)
                    }
                    CsumKind::Icmpv4 | CsumKind::Icmpv6 => {
                        (kind == CsumKind::Icmpv6, h.icmp.is_some(), h.csum.l4)
                    }
                };
                !h.no_ip && h.ipv6 == v6 && present && verdict == Some(valid)
            }
            HeaderTest::TcpWscale(n) => h
                .tcp
                .and_then(|t| t.wscale)
                .is_some_and(|w| n.test(u64::from(w))),
            HeaderTest::L3Proto { ipv6 } => !h.no_ip && h.ipv6 == ipv6,
        }
    }

    /// `decode-event:<name>`: `Ok(Some)` for an event the decoder raises, `Ok(None)` for another of Suricata's
    /// decoder events (a group it names, `ppp.wrong_type`, which this decoder does not report), `Err` for a value
    /// that is no decoder event at all.
    pub fn decode_event(v: &str) -> Result<Option<HeaderTest>, String> {
        let name = v.trim();
        if let Some(e) = DecodeEvent::from_name(name) {
            return Ok(Some(HeaderTest::DecodeEvent(e)));
        }
        let group = name.split_once('.').map_or(name, |(g, _)| g);
        if SURICATA_EVENT_GROUPS.contains(&group.to_ascii_lowercase().as_str()) {
            Ok(None)
        } else {
            Err(format!("decode-event: unknown event `{}`", short(name)))
        }
    }
}

/// `stream-event:<name>`: Suricata's TCP stream events (the name after `stream.`, its two long spellings
/// accepted). `Ok(Some)` for an event the engine raises ([`StreamEvent`]), `Ok(None)` for another of Suricata's
/// (such a rule is skipped with that reason rather than loaded to never fire), `Err` naming the value for anything
/// else, as Suricata refuses an unknown event.
pub fn stream_event(v: &str) -> Result<Option<HeaderTest>, String> {
    let name = v.trim();
    if let Some(e) = StreamEvent::from_name(name) {
        return Ok(Some(HeaderTest::StreamEvent(e)));
    }
    let canonical = match name.to_ascii_lowercase().as_str() {
        "est_synack_resend_with_different_ack" => "est_synack_resend_with_diff_ack".to_string(),
        "3whs_synack_resend_with_different_ack" => "3whs_synack_resend_with_diff_ack".to_string(),
        other => other.to_string(),
    };
    if SURICATA_STREAM_EVENTS.contains(&canonical.as_str()) {
        Ok(None)
    } else {
        Err(format!("stream-event: unknown event `{}`", short(name)))
    }
}

/// `engine-event:<name>`: a decoder event as `decoder.<name>` (what `decode-event:<name>` reads) or a stream
/// event as `stream.<name>` (what `stream-event:<name>` reads), case-insensitive; anything else is an error naming
/// it.
pub fn engine_event(v: &str) -> Result<Option<HeaderTest>, String> {
    let name = v.trim();
    let lower = name.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("decoder.") {
        HeaderTest::decode_event(rest)
            .map_err(|_| format!("engine-event: unknown event `{}`", short(name)))
    } else if let Some(rest) = lower.strip_prefix("stream.") {
        stream_event(rest).map_err(|_| format!("engine-event: unknown event `{}`", short(name)))
    } else {
        Err(format!("engine-event: unknown event `{}`", short(name)))
    }
}

/// Suricata 8's stream events (`stream.<name>`), the names `stream-event` accepts.
const SURICATA_STREAM_EVENTS: &[&str] = &[
    "3whs_ack_data_inject",
    "3whs_ack_in_wrong_dir",
    "3whs_async_wrong_seq",
    "3whs_right_seq_wrong_ack_evasion",
    "3whs_syn_flood",
    "3whs_syn_resend_diff_seq_on_syn_recv",
    "3whs_syn_toclient_on_syn_recv",
    "3whs_synack_flood",
    "3whs_synack_in_wrong_direction",
    "3whs_synack_resend_with_diff_ack",
    "3whs_synack_resend_with_diff_seq",
    "3whs_synack_tfo_data_ignored",
    "3whs_synack_toserver_on_syn_recv",
    "3whs_synack_with_wrong_ack",
    "3whs_wrong_seq_wrong_ack",
    "4whs_invalid_ack",
    "4whs_synack_with_wrong_ack",
    "4whs_synack_with_wrong_syn",
    "4whs_wrong_seq",
    "closewait_ack_out_of_window",
    "closewait_fin_out_of_window",
    "closewait_invalid_ack",
    "closewait_pkt_before_last_ack",
    "closing_ack_wrong_seq",
    "closing_invalid_ack",
    "est_invalid_ack",
    "est_packet_out_of_window",
    "est_pkt_before_last_ack",
    "est_syn_resend",
    "est_syn_resend_diff_seq",
    "est_syn_toclient",
    "est_synack_resend",
    "est_synack_resend_with_diff_ack",
    "est_synack_resend_with_diff_seq",
    "est_synack_toserver",
    "fin1_ack_wrong_seq",
    "fin1_fin_wrong_seq",
    "fin1_invalid_ack",
    "fin2_ack_wrong_seq",
    "fin2_fin_wrong_seq",
    "fin2_invalid_ack",
    "fin_but_no_session",
    "fin_invalid_ack",
    "fin_out_of_window",
    "fin_syn",
    "lastack_ack_wrong_seq",
    "lastack_invalid_ack",
    "pkt_bad_window_update",
    "pkt_broken_ack",
    "pkt_invalid_ack",
    "pkt_invalid_timestamp",
    "pkt_retransmission",
    "pkt_spurious_retransmission",
    "reassembly_depth_reached",
    "reassembly_insert_invalid",
    "reassembly_insert_limit",
    "reassembly_insert_memcap",
    "reassembly_memcap",
    "reassembly_no_segment",
    "reassembly_overlap_different_data",
    "reassembly_segment_before_base_seq",
    "reassembly_seq_gap",
    "reassembly_urgent_oob_limit_reached",
    "rst_but_no_session",
    "rst_invalid_ack",
    "shutdown_syn_resend",
    "suspected_rst_inject",
    "timewait_ack_wrong_seq",
    "timewait_invalid_ack",
    "wrong_thread",
];

/// The groups of Suricata's decoder events (the part of the name before the dot; `too_many_layers` has none).
const SURICATA_EVENT_GROUPS: &[&str] = &[
    "ipv4",
    "ipv6",
    "icmpv4",
    "icmpv6",
    "tcp",
    "udp",
    "sll",
    "sll2",
    "ethernet",
    "ppp",
    "pppoe",
    "gre",
    "vlan",
    "ieee8021ah",
    "vntag",
    "ipraw",
    "ltnull",
    "mpls",
    "erspan",
    "vxlan",
    "nsh",
    "geneve",
    "chdlc",
    "dce",
    "esp",
    "arp",
    "nflog",
    "too_many_layers",
    "decoder",
];

/// Splits a modifier (`+ * !`, before or after the letters) from `flags`/`fragbits` letters.
fn bits_and_mode(s: &str) -> Result<(BitsMode, &str), String> {
    let s = s.trim();
    let mut mode = BitsMode::Exact;
    let mut letters = s;
    for (m, c) in [
        (BitsMode::All, '+'),
        (BitsMode::Any, '*'),
        (BitsMode::NotAll, '!'),
    ] {
        if let Some(r) = s.strip_prefix(c).or_else(|| s.strip_suffix(c)) {
            if mode != BitsMode::Exact {
                return Err(format!("more than one modifier in `{}`", short(s)));
            }
            mode = m;
            letters = r.trim();
        }
    }
    if letters.is_empty() {
        return Err(format!("no bits in `{}`", short(s)));
    }
    Ok((mode, letters))
}

/// `flags:[modifier]<letters>[,<ignore letters>]`: F S R P A U C E (CWR, ECE; Snort's 1 and 2 too), 0 for none.
fn flags(v: &str) -> Result<HeaderTest, String> {
    let (main, ignore) = match v.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (v, None),
    };
    let bit = |c: char| -> Result<u8, String> {
        Ok(match c.to_ascii_uppercase() {
            'F' => 0x01,
            'S' => 0x02,
            'R' => 0x04,
            'P' => 0x08,
            'A' => 0x10,
            'U' => 0x20,
            'E' | '2' => 0x40,
            'C' | '1' => 0x80,
            '0' => 0,
            other => return Err(format!("unknown flag `{other}`")),
        })
    };
    let (mode, letters) = bits_and_mode(main)?;
    let mut bits = 0u8;
    for c in letters.chars() {
        bits |= bit(c)?;
    }
    let mut mask = 0u8;
    if let Some(ig) = ignore {
        for c in ig.trim().chars() {
            mask |= bit(c)?;
        }
    }
    Ok(HeaderTest::Flags {
        mode,
        bits,
        ignore: mask,
    })
}

/// `fragbits:[modifier]<M D R>`.
fn fragbits(v: &str) -> Result<HeaderTest, String> {
    let (mode, letters) = bits_and_mode(v)?;
    let mut bits = 0u8;
    for c in letters.chars() {
        bits |= match c.to_ascii_uppercase() {
            'M' => FRAG_M,
            'D' => FRAG_D,
            'R' => FRAG_R,
            other => return Err(format!("unknown bit `{other}`")),
        };
    }
    Ok(HeaderTest::Fragbits { mode, bits })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, v: &str) -> HeaderTest {
        HeaderTest::parse(name, Some(v)).unwrap().unwrap()
    }

    fn tcp(flags: u8) -> PacketHeader {
        PacketHeader {
            ip_proto: 6,
            ttl: 64,
            tcp: Some(TcpHeader {
                flags,
                seq: 7,
                ack: 9,
                window: 1024,
                mss: None,
                wscale: Some(7),
            }),
            ..PacketHeader::default()
        }
    }

    #[test]
    fn stream_and_engine_event_names() {
        // Suricata's stream events: raised ones are tests, the others known (not raised here), in either long
        // spelling.
        let gap = stream_event("Reassembly_Seq_Gap").unwrap().unwrap();
        let mut h = PacketHeader::default();
        assert!(!gap.matches(&h));
        h.stream_events.set(StreamEvent::ReassemblySeqGap);
        assert!(gap.matches(&h));
        assert_eq!(
            engine_event("stream.reassembly_seq_gap"),
            Ok(Some(HeaderTest::StreamEvent(StreamEvent::ReassemblySeqGap)))
        );
        assert_eq!(stream_event("est_invalid_ack"), Ok(None));
        assert_eq!(
            stream_event(" 3whs_synack_resend_with_different_ack "),
            Ok(Some(HeaderTest::StreamEvent(
                StreamEvent::ThreeWhsSynackResendWithDiffAck
            )))
        );
        assert_eq!(stream_event("3whs_syn_flood"), Ok(None));
        assert!(
            stream_event("no_such_event")
                .unwrap_err()
                .contains("no_such_event")
        );
        assert_eq!(engine_event("stream.pkt_retransmission"), Ok(None));
        assert_eq!(
            engine_event("decoder.IPV6.frag_overlap"),
            HeaderTest::decode_event("ipv6.frag_overlap")
        );
        assert!(engine_event("decoder.ipv6.frag_overlap").unwrap().is_some());
        for bad in ["ipv6.frag_overlap", "stream.nope", "decoder.nope.x", ""] {
            assert!(engine_event(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn checksum_wscale_and_l3_proto() {
        let mut h = tcp(0x02);
        h.csum = Checksums {
            ipv4: Some(true),
            l4: Some(false),
        };
        assert!(t("ipv4-csum", "valid").matches(&h));
        assert!(!t("ipv4-csum", "invalid").matches(&h));
        assert!(t("tcpv4-csum", "\"invalid\"").matches(&h));
        assert!(!t("tcpv4-csum", "valid").matches(&h));
        // Another family or transport matches neither verdict.
        for k in [
            "tcpv6-csum",
            "udpv4-csum",
            "icmpv4-csum",
            "icmpv6-csum",
            "udpv6-csum",
        ] {
            assert!(
                !t(k, "valid").matches(&h) && !t(k, "invalid").matches(&h),
                "{k}"
            );
        }
        // Not computed: neither.
        let plain = tcp(0x02);
        assert!(!t("tcpv4-csum", "valid").matches(&plain));
        assert!(!t("tcpv4-csum", "invalid").matches(&plain));
        for bad in ["", "ok", "valid,invalid"] {
            assert!(HeaderTest::parse("tcpv4-csum", Some(bad)).is_err(), "{bad}");
        }
        assert!(t("tcp.wscale", "7").matches(&h));
        assert!(t("tcp.wscale", ">6").matches(&h));
        assert!(!t("tcp.wscale", "<7").matches(&h));
        assert!(!t("tcp.wscale", "7").matches(&icmp(8, 0, 0)));
        assert!(HeaderTest::parse("tcp.wscale", Some("256")).is_err());
        assert!(t("l3_proto", "ipv4").matches(&h) && t("l3_proto", "IP4").matches(&h));
        assert!(!t("l3_proto", "ipv6").matches(&h));
        h.ipv6 = true;
        assert!(t("l3_proto", "ip6").matches(&h));
        assert!(HeaderTest::parse("l3_proto", Some("ipx")).is_err());
        let no_ip = PacketHeader {
            no_ip: true,
            ..PacketHeader::default()
        };
        assert!(!t("l3_proto", "ipv4").matches(&no_ip));
        assert_eq!(HeaderNeeds::of(&[t("ttl", "1")]), HeaderNeeds::default());
        let needs = HeaderNeeds::of(&[t("udpv6-csum", "valid"), t("tcp.wscale", "1")]);
        assert!(needs.checksums && needs.tcp_wscale);
    }

    fn icmp(msg_type: u8, code: u8, rest: u32) -> PacketHeader {
        PacketHeader {
            ip_proto: 1,
            icmp: Some(IcmpHeader {
                msg_type,
                code,
                rest,
            }),
            ..PacketHeader::default()
        }
    }

    #[test]
    fn decode_event_names() {
        let t = HeaderTest::decode_event(" ipv6.frag_overlap ")
            .unwrap()
            .unwrap();
        let mut h = PacketHeader::default();
        assert!(!t.matches(&h));
        h.events.set(DecodeEvent::Ipv6FragOverlap);
        assert!(t.matches(&h));
        // Another of Suricata's events: no test (the rule is skipped, named); not an event at all: an error.
        assert_eq!(HeaderTest::decode_event("ppp.wrong_type"), Ok(None));
        assert_eq!(
            HeaderTest::decode_event("too_many_layers").map(|t| t.is_some()),
            Ok(true)
        );
        assert!(HeaderTest::decode_event("bogus_event").is_err());
    }

    #[test]
    fn fragoffset_and_sameip() {
        let mut h = PacketHeader {
            frag_offset: 185,
            ..PacketHeader::default()
        };
        assert!(t("fragoffset", "185").matches(&h) && !t("fragoffset", "!185").matches(&h));
        assert!(t("fragoffset", ">0").matches(&h) && !t("fragoffset", "<185").matches(&h));
        h.frag_offset = 0;
        assert!(t("fragoffset", "!185").matches(&h) && t("fragoffset", "0").matches(&h));
        for bad in ["", "1-5", ">=3", "x", "70000"] {
            assert!(HeaderTest::parse("fragoffset", Some(bad)).is_err(), "{bad}");
        }
        let same = HeaderTest::parse("sameip", None).unwrap().unwrap();
        assert!(!same.matches(&h));
        h.same_ip = true;
        assert!(same.matches(&h));
        assert!(HeaderTest::parse("sameip", Some("1")).is_err());
    }

    /// The examples of Suricata's "Header Keywords" documentation.
    #[test]
    fn documented_examples() {
        let syn = tcp(0x02);
        let synack = tcp(0x12);
        let syn_ecn = tcp(0x02 | 0x40 | 0x80);
        // flags:S exactly; flags:SA+ (at least); flags:*SA (any); flags:!R.
        assert!(t("flags", "S").matches(&syn) && !t("flags", "S").matches(&synack));
        assert!(t("flags", "S,CE").matches(&syn_ecn) && !t("flags", "S").matches(&syn_ecn));
        assert!(t("flags", "S,12").matches(&syn_ecn));
        assert!(t("flags", "+S").matches(&synack) && t("flags", "S+").matches(&synack));
        assert!(t("flags", "*SA").matches(&syn) && !t("flags", "*FR").matches(&syn));
        assert!(t("flags", "!R").matches(&syn) && !t("flags", "!S").matches(&syn));
        assert!(t("flags", "0").matches(&tcp(0)) && !t("flags", "0").matches(&syn));
        assert!(t("tcp.flags", "S").matches(&syn));
        assert!(!t("flags", "S").matches(&icmp(8, 0, 0)));
        // ttl:10; ttl:<10; ttl:>10; ttl:5-10 (open); ttl:!64.
        assert!(t("ttl", "64").matches(&syn) && t("ttl", ">63").matches(&syn));
        assert!(t("ttl", "<65").matches(&syn) && !t("ttl", "<64").matches(&syn));
        assert!(t("ttl", "63-65").matches(&syn) && !t("ttl", "64-65").matches(&syn));
        assert!(t("ttl", "!63").matches(&syn) && !t("ttl", "!64").matches(&syn));
        // itype:>10; icode:0; icmp_id and icmp_seq on echo only.
        let echo = icmp(8, 0, (21_781 << 16) | 2216);
        assert!(t("itype", "8").matches(&echo) && t("itype", "7<>20").matches(&echo));
        assert!(t("icode", "0").matches(&echo) && !t("icode", ">0").matches(&echo));
        assert!(t("icmp_id", "21781").matches(&echo) && t("icmp_seq", "2216").matches(&echo));
        let unreach = icmp(3, 1, (21_781 << 16) | 2216);
        assert!(!t("icmp_id", "21781").matches(&unreach));
        assert!(!t("itype", "8").matches(&syn));
        // window, seq, ack.
        assert!(t("window", "1024").matches(&syn) && t("window", "!55808").matches(&syn));
        assert!(t("seq", "7").matches(&syn) && t("ack", "9").matches(&syn));
        // ip_proto by number, name and comparison.
        assert!(t("ip_proto", "6").matches(&syn) && t("ip_proto", "TCP").matches(&syn));
        assert!(t("ip_proto", "!tcp").matches(&echo) && t("ip_proto", "<2").matches(&echo));
        // fragbits:M (exactly), fragbits:+D, fragbits:!D.
        let df = PacketHeader {
            dont_fragment: true,
            ip_id: 77,
            tos: 0x10,
            ..PacketHeader::default()
        };
        assert!(t("fragbits", "D").matches(&df) && !t("fragbits", "M").matches(&df));
        assert!(t("fragbits", "*MD").matches(&df) && t("fragbits", "!M").matches(&df));
        assert!(t("id", "77").matches(&df) && !t("id", "78").matches(&df));
        assert!(t("tos", "16").matches(&df) && t("tos", "x10").matches(&df));
        assert!(t("tos", "!8").matches(&df));
    }

    /// IPv4 header bytes with options (a real record-route plus NOP and EOL, as `ping -R` sends), and the
    /// options `ipopts` finds in them.
    #[test]
    fn ipopts_on_header_bytes() {
        // 45 + 40 bytes of options would be ihl 15; here ihl 8: 12 bytes of options.
        let hdr: [u8; 32] = [
            0x48, 0x00, 0x00, 0x54, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0x00, 0x00, 10, 0, 0, 1,
            10, 0, 0, 2,
            // NOP, RR (type 7, len 7, pointer 4, one address), EOL, padding.
            0x01, 0x07, 0x07, 0x04, 10, 0, 0, 1, 0x00, 0x00, 0x00, 0x00,
        ];
        let bits = ip_opts_of(&hdr[20..]);
        let mut h = PacketHeader {
            ip_opts: bits,
            ..PacketHeader::default()
        };
        for (name, want) in [
            ("rr", true),
            ("nop", true),
            ("eol", true),
            ("any", true),
            ("lsrr", false),
            ("ts", false),
            ("ssrr", false),
            ("satid", false),
            ("sec", false),
            ("esec", false),
        ] {
            assert_eq!(t("ipopts", name).matches(&h), want, "{name}");
        }
        // No options, or IPv6: nothing.
        h.ip_opts = ip_opts_of(&[]);
        assert!(!t("ipopts", "any").matches(&h));
        // A length running past the header stops the walk; a zero length is not followed.
        assert_eq!(ip_opts_of(&[0x83, 0x20, 0x01]), 1 << 5);
        assert_eq!(ip_opts_of(&[0x07, 0x00, 0x44, 0x04]), 1 << 2);
        assert!(HeaderTest::parse("ipopts", Some("bogus")).is_err());
        assert!(t("ipopts", " SSRR ") == t("ipopts", "ssrr"));
    }

    #[test]
    fn vlan_ids_and_layers() {
        // Ethernet with 802.1ad 666, then 802.1Q 123, then IPv4.
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&[
            0x88, 0xa8, 0x02, 0x9a, 0x81, 0x00, 0x20, 0x7b, 0x08, 0x00, 0x45,
        ]);
        let (ids, n) = vlan_ids_of(&frame);
        assert_eq!((ids, n), ([666, 123, 0], 2));
        let h = PacketHeader {
            vlan: ids,
            vlan_layers: n,
            ..PacketHeader::default()
        };
        assert!(t("vlan.id", "666").matches(&h) && t("vlan.id", "123").matches(&h));
        assert!(t("vlan.id", "666,0").matches(&h) && t("vlan.id", "666,-2").matches(&h));
        assert!(t("vlan.id", "123,1").matches(&h) && t("vlan.id", "123,-1").matches(&h));
        assert!(!t("vlan.id", "123,0").matches(&h) && !t("vlan.id", "1,2").matches(&h));
        assert!(!t("vlan.id", "666,-3").matches(&h));
        assert!(t("vlan.id", ">100,all").matches(&h) && !t("vlan.id", ">200,all").matches(&h));
        assert!(t("vlan.id", "<200,any").matches(&h));
        assert!(t("vlan.layers", "2").matches(&h) && t("vlan.layers", ">1").matches(&h));
        assert!(!t("vlan.layers", "!2").matches(&h));
        let none = PacketHeader::default();
        assert!(t("vlan.layers", "0").matches(&none) && !t("vlan.id", "0").matches(&none));
        assert!(!t("vlan.id", "<4095,all").matches(&none));
        for bad in ["4096", "1,3", "1,-4", "1,x", ""] {
            assert!(HeaderTest::parse("vlan.id", Some(bad)).is_err(), "{bad}");
        }
        // A truncated tag ends the walk.
        assert_eq!(vlan_ids_of(&frame[..15]).1, 0);
    }

    #[test]
    fn tcp_mss_and_icmpv6_mtu() {
        let mut syn = tcp(0x02);
        assert!(!t("tcp.mss", "<536").matches(&syn), "no option, no match");
        if let Some(th) = syn.tcp.as_mut() {
            th.mss = Some(500);
        }
        assert!(t("tcp.mss", "<536").matches(&syn) && t("tcp.mss", "500").matches(&syn));
        assert!(t("tcp.mss", "400-600").matches(&syn) && !t("tcp.mss", ">=536").matches(&syn));
        assert!(!t("tcp.mss", "500").matches(&icmp(8, 0, 0)));
        // ICMPv6 Packet Too Big (type 2, code 0) carries the MTU in the four bytes after the checksum.
        let mut ptb = icmp(2, 0, 1280);
        ptb.ipv6 = true;
        ptb.ip_proto = 58;
        assert!(t("icmpv6.mtu", "1280").matches(&ptb) && t("icmpv6.mtu", "<1500").matches(&ptb));
        let mut echo = icmp(128, 0, 1280);
        echo.ipv6 = true;
        echo.ip_proto = 58;
        assert!(!t("icmpv6.mtu", "1280").matches(&echo));
        // ICMPv4 type 2 is no Packet Too Big.
        assert!(!t("icmpv6.mtu", "1280").matches(&icmp(2, 0, 1280)));
        assert!(HeaderTest::parse("tcp.mss", Some("70000")).is_err());
        assert!(HeaderTest::parse("icmpv6.mtu", Some("x")).is_err());
    }

    #[test]
    fn flow_counters() {
        let mut h = PacketHeader::default();
        let rules = [
            ("flow.pkts", "toserver,10"),
            ("flow.pkts", "toclient,=10"),
            ("flow.pkts", "either,>=10"),
            ("flow.pkts", "both,10"),
            ("flow.pkts_toserver", "10"),
            ("flow.bytes", "toserver,<3000"),
            ("flow.bytes_toclient", ">8000"),
            ("flow.age", ">20"),
        ];
        // No flow: nothing matches.
        for (k, v) in rules {
            assert!(!t(k, v).matches(&h), "{k}:{v}");
        }
        h.flow = FlowCounters {
            pkts: [10, 10],
            bytes: [2000, 9000],
            age_secs: 21,
            known: true,
        };
        for (k, v) in rules {
            assert!(t(k, v).matches(&h), "{k}:{v}");
        }
        h.flow = FlowCounters {
            pkts: [10, 3],
            bytes: [4000, 100],
            age_secs: 20,
            known: true,
        };
        assert!(t("flow.pkts", "either,10").matches(&h) && !t("flow.pkts", "both,10").matches(&h));
        assert!(!t("flow.pkts_toclient", "10").matches(&h));
        assert!(!t("flow.age", ">20").matches(&h) && t("flow.age", "20").matches(&h));
        assert!(t("flow.bytes", "either,>3000").matches(&h));
        for (k, bad) in [
            ("flow.pkts", "10"),
            ("flow.pkts", "sideways,10"),
            ("flow.pkts", "toserver,x"),
            ("flow.pkts", "toserver,5000000000"),
            ("flow.pkts_toserver", "toserver,1"),
            ("flow.age", ""),
        ] {
            let e = HeaderTest::parse(k, Some(bad)).unwrap_err();
            assert!(e.starts_with(k) && !e.contains('\n'), "{k}:{bad}: {e}");
        }
        // 64-bit byte counts.
        assert!(HeaderTest::parse("flow.bytes", Some("toserver,>5000000000")).is_ok());
        assert_eq!(HeaderTest::parse("flow.packets", Some("1")), Ok(None));
    }

    #[test]
    fn needs_follow_the_tests() {
        let tests = [t("ttl", "3"), t("flow.age", "1"), t("vlan.layers", "1")];
        let n = HeaderNeeds::of(&tests);
        assert!(n.flow && n.vlan && !n.ip_opts && !n.tcp_mss && n.any());
        assert!(!HeaderNeeds::of(&[t("ttl", "3"), t("flags", "S")]).any());
        assert!(HeaderNeeds::of(&[t("tcp.mss", "1")]).tcp_mss);
        assert!(HeaderNeeds::of(&[t("ipopts", "rr")]).ip_opts);
    }

    #[test]
    fn suricata_8_tcp_names() {
        let syn = tcp(0x02);
        assert!(t("tcp.window", "1024").matches(&syn) && t("tcp.seq", "7").matches(&syn));
        assert!(t("tcp.ack", "9").matches(&syn));
    }

    #[test]
    fn malformed_values_are_one_line_errors() {
        for (k, v) in [
            ("ttl", "256"),
            ("ttl", "abc"),
            ("ttl", "10-5"),
            ("flags", "SX"),
            ("flags", "+*S"),
            ("flags", "+"),
            ("fragbits", "Q"),
            ("id", ">5"),
            ("icmp_id", "70000"),
            ("seq", "-1"),
            ("ip_proto", "nope"),
            ("window", "!"),
        ] {
            let e = HeaderTest::parse(k, Some(v)).unwrap_err();
            assert!(e.starts_with(k) && !e.contains('\n'), "{k}:{v}: {e}");
        }
        assert!(HeaderTest::parse("ttl", None).is_err());
        assert_eq!(HeaderTest::parse("content", Some("x")), Ok(None));
    }
}
