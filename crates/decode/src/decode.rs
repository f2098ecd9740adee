//! # The decoder: one pass from the link header to the L4 payload
//!
//! [`decode`] turns a [`PacketRecord`] into a [`Decoded`]: a borrowed view that names every layer it crossed
//! (VLAN ids, MPLS depth, PPPoE session, tunnels), the L3 and L4 fields the rest of the path needs, the L4 payload
//! and the offsets of each layer. It allocates nothing and copies no packet bytes: a `Decoded` is 176 bytes of
//! fields and slices into the record (three cache lines, returned by value).
//!
//! ## Why one function instead of a layer iterator
//! The dispatcher needs L3 addresses and ports of every packet at line rate; a straight-line decoder whose common
//! path (Ethernet → IPv4 → TCP) is three length checks and a handful of loads costs a few tens of nanoseconds,
//! within the budget of 100 ns per packet for reading *and* decoding (`benches/decode.rs` measures it,
//! with the `etherparse` crate as the same-run reference).
//!
//! ## Outcomes
//! Every packet ends in one [`Outcome`]; fields are filled as far as decoding got, so a packet whose TCP header
//! was cut by the snap length still has its IP addresses (and its FID). Trailing Ethernet padding is never
//! payload: the IPv4 total length / IPv6 payload length bound everything above L3. A datagram longer than what
//! was captured is still `Decoded`, with `payload_truncated` set.
//!
//! ## Anomalies
//! Besides its outcome, a packet carries the anomalies met on the way as Suricata's decoder events name them
//! ([`Decoded::events`], one bit each: `ipv6.exthdr_useless_fh`, `tcp.opt_duplicate`, ...), for the rules'
//! `decode-event` keyword and the `decoder.event.*` counters; the defragmenter adds its own
//! ([`crate::Defragmenter::push_noting`]). An IPv6 atomic fragment (offset 0, no more fragments) is decoded as a whole
//! packet, as RFC 6946 and Suricata have it.
//!
//! ## Tunnels
//! With [`DecodeOptions::decap_tunnels`], GRE (IPv4, IPv6, transparent Ethernet, ERSPAN II/III, PPTP's PPP), IP-in-IP
//! (4in4, 6in4, 4in6, 6in6), VXLAN, Geneve, GTP-U G-PDUs and CAPWAP data (IP in 802.11 data frames, or 802.3 frames) are
//! decapsulated and the L3/L4 fields describe the *innermost*
//! packet; `tunnels` counts the layers crossed and `tunnel_kinds` names them. A UDP datagram on a tunnel port that
//! does not parse as that tunnel stays a plain UDP datagram. If the inner packet is cut or malformed, the outcome
//! says so (fields then hold what was read of the inner packet). Without decapsulation a tunnel is ordinary L4
//! (`L4::Other` for GRE and IP-in-IP, `L4::Udp` for VXLAN, GTP-U and CAPWAP).
//!
//! ## Bounded work
//! VLAN tags, MPLS labels, PPPoE, NSH and tunnels together are bounded by [`DecodeOptions::max_depth`], IPv6
//! extension headers by [`DecodeOptions::max_ipv6_extensions`], GTP-U extension headers by a constant. Every step
//! consumes at least 4 bytes, so no input loops.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use flowbundle_ingest::{LinkType, PacketRecord};
use flowbundle_types::{DecodeEvent, DecodeEvents};

use crate::outcome::{Layer, Malformed, Outcome, Unsupported};
use crate::wire::{
    self, Error, capwap, chdlc, ethernet, ethertype, geneve, gre, gtpu, icmp, icmpv6, ip_proto,
    ipv4, ipv6, mpls, nsh, null, ppp, pppoe, sctp, sll, sll2, tcp, udp, vlan, vxlan,
};

/// What the decoder does beyond the default path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Decapsulate GRE, IP-in-IP, VXLAN, Geneve, GTP-U and CAPWAP data (802.11 or 802.3 frames on UDP 5247) to the
    /// inner packet. Off by default: the scheduling lab studies
    /// flows as the wire shows them.
    pub decap_tunnels: bool,
    /// Maximum encapsulation headers (VLAN tags + MPLS labels + PPPoE + NSH + tunnels) before giving up with
    /// `Unsupported(TooDeep)`. Default 16.
    pub max_depth: u8,
    /// Maximum IPv6 extension headers walked per IPv6 header before `Malformed(Ipv6Extensions)`. Default 8.
    pub max_ipv6_extensions: u8,
    /// Check the IPv4 header checksum (`Malformed(Ipv4Checksum)` when wrong). Off by default: captures taken on a
    /// host with checksum offload carry wrong checksums on every sent packet.
    pub verify_ipv4_checksum: bool,
    /// UDP destination port recognised as VXLAN. Default 4789.
    pub vxlan_port: u16,
    /// UDP port (source or destination) recognised as GTP-U. Default 2152.
    pub gtpu_port: u16,
    /// UDP port (source or destination) recognised as Geneve. Default 6081.
    pub geneve_port: u16,
    /// Put the tunnel depth in the flow key ([`Decoded::key_depth`]), as Suricata's
    /// `decoder.recursion-level.use-for-tracking` (default on): the same inner 5-tuple at two tunnel depths is two
    /// flows. Off, flows are keyed by their innermost headers alone.
    pub tunnel_depth_in_key: bool,
    /// ICMPv4 errors as Suricata files them: a destination unreachable that quotes a TCP or UDP packet is keyed by
    /// the quoted packet's flow ([`crate::quoted_flow`]), and no ICMPv4 error starts a flow of its own (the engine
    /// inspects it without one). Off by default: each ICMP error is a flow of its own, as nDPI counts them.
    pub icmp_errors_in_quoted_flow: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            decap_tunnels: false,
            max_depth: 16,
            max_ipv6_extensions: 8,
            verify_ipv4_checksum: false,
            vxlan_port: vxlan::PORT,
            gtpu_port: gtpu::PORT,
            geneve_port: geneve::PORT,
            tunnel_depth_in_key: true,
            icmp_errors_in_quoted_flow: false,
        }
    }
}

/// Tunnel kinds crossed, as a bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TunnelSet(pub u8);

impl TunnelSet {
    pub const GRE: u8 = 1;
    pub const IP_IN_IP: u8 = 2;
    pub const VXLAN: u8 = 4;
    pub const GTPU: u8 = 8;
    pub const ERSPAN: u8 = 16;
    pub const CAPWAP: u8 = 32;
    pub const GENEVE: u8 = 64;
    pub fn contains(self, kind: u8) -> bool {
        self.0 & kind != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// The L3 facts of a decoded packet (of the innermost IP header when tunnels were decapsulated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ip {
    pub src: IpAddr,
    pub dst: IpAddr,
    /// The transport protocol: after IPv6 extension headers; ESP (50) when the chain stopped at ESP; 59 (No Next
    /// Header) when there is none.
    pub proto: u8,
    /// TTL or hop limit.
    pub ttl: u8,
    /// IPv4 identification, or the IPv6 fragment header's identification (0 without one).
    pub id: u32,
    /// Fragment offset in bytes.
    pub frag_offset: u16,
    pub more_fragments: bool,
    /// IPv4 DF bit (false for IPv6).
    pub dont_fragment: bool,
    /// True when this packet is a fragment (IPv4 MF or offset; IPv6 fragment header, even an atomic one).
    pub fragmented: bool,
    /// IPv4 header length, or 40 plus the extension headers walked for IPv6.
    pub header_len: u16,
    /// Datagram length the header announces (IPv4 total length, IPv6 40 + payload length; the captured length
    /// when the field is 0 under segmentation offload).
    pub total_len: u32,
    /// IPv6 extension headers walked.
    pub ext_headers: u8,
    /// IPv6 with a fragment header: the position (from the IPv6 header) of the Next Header byte announcing it, and
    /// of the fragment header itself; 0 otherwise. Defragmentation uses them.
    pub frag_announced_at: u16,
    pub frag_header_at: u16,
}

impl Ip {
    pub fn is_v4(&self) -> bool {
        self.src.is_ipv4()
    }
    pub fn is_v6(&self) -> bool {
        self.src.is_ipv6()
    }
    pub fn version(&self) -> u8 {
        if self.is_v4() { 4 } else { 6 }
    }
    /// Any fragment, first or not.
    pub fn is_fragment(&self) -> bool {
        self.fragmented
    }
    /// A fragment that does not start the datagram (carries no transport header).
    pub fn is_later_fragment(&self) -> bool {
        self.fragmented && self.frag_offset != 0
    }
    /// The first fragment of a fragmented datagram.
    pub fn is_first_fragment(&self) -> bool {
        self.fragmented && self.frag_offset == 0 && self.more_fragments
    }
}

/// Whether the decoder follows packets of this link type (others decode as `Unsupported(LinkType)`); for reports
/// that name the link types of an input it could not read.
pub fn follows_link_type(link: LinkType) -> bool {
    matches!(
        link,
        LinkType::ETHERNET
            | LinkType::RAW
            | LinkType::RAW_BSD12
            | LinkType::RAW_BSD14
            | LinkType::IPV4
            | LinkType::IPV6
            | LinkType::LINUX_SLL
            | LinkType::LINUX_SLL2
            | LinkType::C_HDLC
            | LinkType::PPI
            | LinkType::PPP
            | LinkType::PPP_HDLC
            | LinkType::NULL
            | LinkType::LOOP
    )
}

/// TCP header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tcp<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// The nine flag bits (see [`wire::tcp::flags`]).
    pub flags: u16,
    pub window: u16,
    pub header_len: u8,
    /// Raw option bytes; walk them with [`Tcp::options`].
    pub options_raw: &'a [u8],
}

impl<'a> Tcp<'a> {
    pub fn options(&self) -> tcp::Options<'a> {
        tcp::Options::new(self.options_raw)
    }
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
}

/// UDP header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Udp {
    pub src_port: u16,
    pub dst_port: u16,
    pub length: u16,
}

/// ICMP or ICMPv6 type and code, and the 4 "rest of header" bytes (0 when not captured).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Icmp {
    pub msg_type: u8,
    pub code: u8,
    pub rest: u32,
}

/// SCTP common header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sctp {
    pub src_port: u16,
    pub dst_port: u16,
    pub verification_tag: u32,
}

/// The transport layer of a decoded packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum L4<'a> {
    /// No transport header: not IP, a non-first fragment, IPv6 No Next Header, or decoding stopped earlier.
    #[default]
    None,
    Tcp(Tcp<'a>),
    Udp(Udp),
    Icmp(Icmp),
    Icmpv6(Icmp),
    Sctp(Sctp),
    /// Another protocol (`Ip::proto` says which): GRE or IP-in-IP without decapsulation, ESP, IGMP, OSPF, ...
    Other,
}

/// A decoded packet: borrowed fields and slices, no copies. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded<'a> {
    pub outcome: Outcome,
    pub link_type: LinkType,
    /// The whole captured packet.
    pub data: &'a [u8],
    /// VLAN tags crossed (all of them, any depth).
    pub vlan_count: u8,
    /// Outermost and innermost VLAN ids (equal with one tag).
    pub vlan_outer: Option<u16>,
    pub vlan_inner: Option<u16>,
    /// MPLS labels crossed.
    pub mpls_depth: u8,
    /// PPPoE session id, when the packet was inside a PPPoE session.
    pub pppoe_session: Option<u16>,
    /// Tunnels decapsulated and their kinds.
    pub tunnels: u8,
    pub tunnel_kinds: TunnelSet,
    /// The tunnel depth the packet's flow key carries: `tunnels` with [`DecodeOptions::tunnel_depth_in_key`],
    /// else 0.
    pub key_depth: u8,
    /// With tunnels: the length of the innermost tunnel's inner packet, from its first header to the end of the
    /// enclosing datagram (the length Suricata gives the tunnelled packet, and counts in its flow); 0 without.
    pub tunnel_len: u32,
    /// Decoded with [`DecodeOptions::icmp_errors_in_quoted_flow`].
    pub icmp_errors_in_quoted_flow: bool,
    /// L3 facts, when an IP header was read.
    pub ip: Option<Ip>,
    pub l4: L4<'a>,
    /// Offset of the (innermost) IP header in `data`, and the end of its datagram (total length, cut to `data`).
    pub l3_offset: u32,
    pub l3_end: u32,
    /// Offset of the transport header (or of the fragment data for a non-first fragment).
    pub l4_offset: u32,
    /// Offset of `payload` in `data`.
    pub payload_offset: u32,
    /// The L4 payload (for a non-first fragment: the fragment data; for `L4::Other`: everything after the IP
    /// headers), cut to the IP datagram length: Ethernet padding is not payload.
    pub payload: &'a [u8],
    /// The IP datagram was longer than the captured bytes.
    pub payload_truncated: bool,
    /// The anomalies found on the way, as Suricata's decoder events name them (see [`DecodeEvent`]). Most come
    /// with an outcome other than `Decoded`; some (an atomic fragment header, an unknown option, a duplicated
    /// TCP option) are noted on a packet that decodes.
    pub events: DecodeEvents,
}

impl<'a> Decoded<'a> {
    fn empty(link_type: LinkType, data: &'a [u8]) -> Self {
        Decoded {
            outcome: Outcome::Decoded,
            link_type,
            data,
            vlan_count: 0,
            vlan_outer: None,
            vlan_inner: None,
            mpls_depth: 0,
            pppoe_session: None,
            tunnels: 0,
            tunnel_kinds: TunnelSet(0),
            key_depth: 0,
            tunnel_len: 0,
            icmp_errors_in_quoted_flow: false,
            ip: None,
            l4: L4::None,
            l3_offset: 0,
            l3_end: 0,
            l4_offset: 0,
            payload_offset: 0,
            payload: &[],
            payload_truncated: false,
            events: DecodeEvents::EMPTY,
        }
    }

    /// Source and destination ports (TCP, UDP, SCTP).
    pub fn ports(&self) -> Option<(u16, u16)> {
        match self.l4 {
            L4::Tcp(t) => Some((t.src_port, t.dst_port)),
            L4::Udp(u) => Some((u.src_port, u.dst_port)),
            L4::Sctp(s) => Some((s.src_port, s.dst_port)),
            _ => None,
        }
    }

    /// The (innermost) IP datagram as captured: header to total length, cut to the captured bytes. Empty when no
    /// IP header was read.
    pub fn ip_packet(&self) -> &'a [u8] {
        if self.ip.is_none() {
            return &[];
        }
        self.data
            .get(self.l3_offset as usize..self.l3_end as usize)
            .unwrap_or(&[])
    }

    pub fn tcp(&self) -> Option<&Tcp<'a>> {
        match &self.l4 {
            L4::Tcp(t) => Some(t),
            _ => None,
        }
    }
}

/// Decodes one captured packet. Never panics, never allocates; see the module documentation.
pub fn decode<'a>(record: &PacketRecord<'a>, opts: &DecodeOptions) -> Decoded<'a> {
    decode_bytes(record.link_type, record.data, opts)
}

/// Decodes bytes that start with a `link_type` header (a record without its timestamp: tests, the defragmenter's
/// output with [`LinkType::RAW`]).
pub fn decode_bytes<'a>(link_type: LinkType, data: &'a [u8], opts: &DecodeOptions) -> Decoded<'a> {
    let mut d = Decoded::empty(link_type, data);
    let mut s = State {
        data,
        opts,
        depth: 0,
    };
    if let Err(o) = s.link(&mut d) {
        d.outcome = o;
        if o == Outcome::Unsupported(Unsupported::TooDeep) {
            d.events.set(DecodeEvent::TooManyLayers);
        }
    }
    if opts.tunnel_depth_in_key {
        d.key_depth = d.tunnels;
    }
    d.icmp_errors_in_quoted_flow = opts.icmp_errors_in_quoted_flow;
    d
}

type Step = Result<(), Outcome>;

fn trunc_or(layer: Layer, malformed: Malformed) -> impl Fn(Error) -> Outcome {
    move |e| match e {
        Error::Truncated => Outcome::Truncated(layer),
        Error::Malformed => Outcome::Malformed(malformed),
    }
}

struct State<'a, 'o> {
    data: &'a [u8],
    opts: &'o DecodeOptions,
    depth: u8,
}

impl<'a> State<'a, '_> {
    #[inline(always)]
    fn at(&self, off: usize) -> &'a [u8] {
        self.data.get(off..).unwrap_or(&[])
    }

    fn deeper(&mut self) -> Step {
        self.depth = self.depth.saturating_add(1);
        if self.depth > self.opts.max_depth {
            return Err(Outcome::Unsupported(Unsupported::TooDeep));
        }
        Ok(())
    }

    fn link(&mut self, d: &mut Decoded<'a>) -> Step {
        match d.link_type {
            LinkType::ETHERNET => self.ethernet(d, 0),
            LinkType::RAW | LinkType::RAW_BSD12 | LinkType::RAW_BSD14 => self.ip_any(d, 0),
            LinkType::IPV4 => self.ipv4(d, 0),
            LinkType::IPV6 => self.ipv6(d, 0),
            LinkType::LINUX_SLL => {
                let h = sll::Header::new_checked(self.data).map_err(|_| {
                    d.events.set(DecodeEvent::SllPktTooSmall);
                    Outcome::Truncated(Layer::Link)
                })?;
                self.ethertype(d, sll::HEADER_LEN, h.protocol())
            }
            LinkType::LINUX_SLL2 => {
                let h = sll2::Header::new_checked(self.data).map_err(|_| {
                    d.events.set(DecodeEvent::SllPktTooSmall);
                    Outcome::Truncated(Layer::Link)
                })?;
                self.ethertype(d, sll2::HEADER_LEN, h.protocol())
            }
            LinkType::C_HDLC => self.chdlc(d),
            LinkType::PPI => {
                // Version 0, flags, a little-endian header length (fields included), the inner link type.
                let (Some(&[0, _, l0, l1]), Some(inner)) = (
                    self.data
                        .get(..4)
                        .map(|h| [h[0], h[1], h[2], h[3]])
                        .as_ref(),
                    self.data.get(4..8),
                ) else {
                    return Err(Outcome::Truncated(Layer::Link));
                };
                let len = usize::from(u16::from_le_bytes([l0, l1]));
                let inner = u32::from_le_bytes([inner[0], inner[1], inner[2], inner[3]]);
                if len < 8 || len > self.data.len() {
                    return Err(Outcome::Truncated(Layer::Link));
                }
                match LinkType(inner) {
                    LinkType::ETHERNET => self.ethernet(d, len),
                    _ => Err(Outcome::Unsupported(Unsupported::LinkType)),
                }
            }
            LinkType::PPP | LinkType::PPP_HDLC => {
                if ppp::is_chdlc(self.data) {
                    return self.chdlc(d);
                }
                let f = ppp::Frame::new_checked(self.data)
                    .map_err(|_| Outcome::Truncated(Layer::Link))?;
                let at = f.header_len();
                match f.protocol() {
                    ppp::proto::IPV4 => self.ipv4(d, at),
                    ppp::proto::IPV6 => self.ipv6(d, at),
                    ppp::proto::MPLS_UNICAST | ppp::proto::MPLS_MULTICAST => self.mpls(d, at),
                    _ => Err(Outcome::Unsupported(Unsupported::PppProtocol)),
                }
            }
            LinkType::NULL | LinkType::LOOP => {
                let h = if d.link_type == LinkType::NULL {
                    null::Header::new_checked_null(self.data)
                } else {
                    null::Header::new_checked_loop(self.data)
                }
                .map_err(|_| {
                    d.events.set(DecodeEvent::LtnullPktTooSmall);
                    Outcome::Truncated(Layer::Link)
                })?;
                match h.family() {
                    null::Family::Ipv4 => self.ipv4(d, null::HEADER_LEN),
                    null::Family::Ipv6 => self.ipv6(d, null::HEADER_LEN),
                    null::Family::Other(_) => {
                        d.events.set(DecodeEvent::LtnullUnsupportedType);
                        Err(Outcome::Unsupported(Unsupported::LoopbackFamily))
                    }
                }
            }
            _ => Err(Outcome::Unsupported(Unsupported::LinkType)),
        }
    }

    /// A Cisco HDLC frame (its own link type, or on a PPP link).
    fn chdlc(&mut self, d: &mut Decoded<'a>) -> Step {
        let h =
            chdlc::Header::new_checked(self.data).map_err(|_| Outcome::Truncated(Layer::Link))?;
        self.ethertype(d, chdlc::HEADER_LEN, h.protocol())
    }

    fn ethernet(&mut self, d: &mut Decoded<'a>, off: usize) -> Step {
        let f = ethernet::Frame::new_checked(self.at(off)).map_err(|_| {
            d.events.set(DecodeEvent::EthernetPktTooSmall);
            Outcome::Truncated(Layer::Link)
        })?;
        self.ethertype(d, off + ethernet::HEADER_LEN, f.ethertype())
    }

    /// Follows EtherTypes through VLAN tags, MPLS, PPPoE and NSH to IP.
    fn ethertype(&mut self, d: &mut Decoded<'a>, mut off: usize, mut et: u16) -> Step {
        loop {
            match et {
                ethertype::IPV4 => return self.ipv4(d, off),
                ethertype::IPV6 => return self.ipv6(d, off),
                t if vlan::is_tpid(t) => {
                    self.deeper()?;
                    let tag = vlan::Tag::new_checked(self.at(off)).map_err(|_| {
                        d.events.set(DecodeEvent::VlanHeaderTooSmall);
                        Outcome::Truncated(Layer::Vlan)
                    })?;
                    let vid = tag.vid();
                    if d.vlan_outer.is_none() {
                        d.vlan_outer = Some(vid);
                    }
                    d.vlan_inner = Some(vid);
                    d.vlan_count = d.vlan_count.saturating_add(1);
                    if d.vlan_count > MAX_VLAN_LAYERS {
                        d.events.set(DecodeEvent::VlanTooManyLayers);
                    }
                    et = tag.ethertype();
                    off += vlan::HEADER_LEN;
                }
                ethertype::MPLS_UNICAST | ethertype::MPLS_MULTICAST => return self.mpls(d, off),
                ethertype::PPPOE_SESSION => {
                    self.deeper()?;
                    let s = pppoe::Session::new_checked(self.at(off))
                        .map_err(trunc_or(Layer::Pppoe, Malformed::Pppoe))?;
                    d.pppoe_session = Some(s.session_id());
                    let inner = off + pppoe::HEADER_LEN;
                    return match s.ppp_protocol() {
                        pppoe::ppp_proto::IPV4 => self.ipv4(d, inner),
                        pppoe::ppp_proto::IPV6 => self.ipv6(d, inner),
                        _ => Err(Outcome::Unsupported(Unsupported::PppProtocol)),
                    };
                }
                ethertype::NSH => return self.nsh(d, off),
                ethertype::PPPOE_DISCOVERY => {
                    return Err(Outcome::Unsupported(Unsupported::PppoeDiscovery));
                }
                _ => return Err(Outcome::Unsupported(Unsupported::EtherType)),
            }
        }
    }

    fn mpls(&mut self, d: &mut Decoded<'a>, mut off: usize) -> Step {
        loop {
            self.deeper()?;
            let l = mpls::Label::new_checked(self.at(off))
                .map_err(|_| Outcome::Truncated(Layer::Mpls))?;
            d.mpls_depth = d.mpls_depth.saturating_add(1);
            off += mpls::HEADER_LEN;
            if l.bottom_of_stack() {
                break;
            }
        }
        match self.at(off).first().map(|b| b >> 4) {
            Some(4) => self.ipv4(d, off),
            Some(6) => self.ipv6(d, off),
            // RFC 4385 pseudowire control word, then an Ethernet frame.
            Some(0) => {
                if self.at(off).len() < 4 {
                    return Err(Outcome::Truncated(Layer::Mpls));
                }
                self.ethernet(d, off + 4)
            }
            Some(_) => Err(Outcome::Unsupported(Unsupported::MplsPayload)),
            None => Err(Outcome::Truncated(Layer::Mpls)),
        }
    }

    /// A Network Service Header, then the packet it steers. Followed whether or not tunnels are decapsulated: the
    /// outer frame has no IP layer of its own to stop at (as with MPLS and PPPoE).
    fn nsh(&mut self, d: &mut Decoded<'a>, off: usize) -> Step {
        self.deeper()?;
        let h =
            nsh::Header::new_checked(self.at(off)).map_err(trunc_or(Layer::Nsh, Malformed::Nsh))?;
        if !matches!(h.md_type(), nsh::MD_TYPE_1 | nsh::MD_TYPE_2) {
            return Err(Outcome::Unsupported(Unsupported::Nsh));
        }
        let inner = off + h.header_len();
        match h.next_protocol() {
            nsh::next_proto::IPV4 => self.ipv4(d, inner),
            nsh::next_proto::IPV6 => self.ipv6(d, inner),
            nsh::next_proto::ETHERNET => self.ethernet(d, inner),
            nsh::next_proto::MPLS => self.mpls(d, inner),
            _ => Err(Outcome::Unsupported(Unsupported::Nsh)),
        }
    }

    fn ip_any(&mut self, d: &mut Decoded<'a>, off: usize) -> Step {
        match self.at(off).first().map(|b| b >> 4) {
            Some(4) => self.ipv4(d, off),
            Some(6) => self.ipv6(d, off),
            Some(_) => Err(Outcome::Malformed(Malformed::IpVersion)),
            None => Err(Outcome::Truncated(Layer::Ipv4)),
        }
    }

    fn ipv4(&mut self, d: &mut Decoded<'a>, off: usize) -> Step {
        let buf = self.at(off);
        let p = ipv4::Packet::new_checked(buf).map_err(|e| {
            let (event, outcome) = ipv4_error(buf, e);
            d.events.set(event);
            outcome
        })?;
        if self.opts.verify_ipv4_checksum && !p.verify_checksum() {
            return Err(Outcome::Malformed(Malformed::Ipv4Checksum));
        }
        let hl = p.header_len();
        let total = p.effective_total_len();
        let end = off + total.min(buf.len());
        let a = p.addr_bytes();
        let frag_offset = p.frag_offset();
        let more = p.more_frags();
        d.ip = Some(Ip {
            src: IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])),
            dst: IpAddr::V4(Ipv4Addr::new(a[4], a[5], a[6], a[7])),
            proto: p.protocol(),
            ttl: p.ttl(),
            id: u32::from(p.ident()),
            frag_offset,
            more_fragments: more,
            dont_fragment: p.dont_frag(),
            fragmented: more || frag_offset != 0,
            header_len: hl as u16,
            total_len: total as u32,
            ext_headers: 0,
            frag_announced_at: 0,
            frag_header_at: 0,
        });
        d.payload_truncated = total > buf.len();
        if d.payload_truncated {
            d.events.set(DecodeEvent::Ipv4TruncPkt);
        }
        if p.protocol() == ip_proto::ICMPV6 {
            d.events.set(DecodeEvent::Ipv4Icmpv6);
        }
        d.l3_offset = off as u32;
        d.l3_end = end as u32;
        d.l4 = L4::None;
        if frag_offset != 0 {
            return self.fragment_data(d, off + hl, end);
        }
        self.transport(d, p.protocol(), off + hl, end, false)
    }

    fn ipv6(&mut self, d: &mut Decoded<'a>, off: usize) -> Step {
        let buf = self.at(off);
        let p = ipv6::Packet::new_checked(buf).map_err(|e| match e {
            Error::Truncated => {
                d.events.set(DecodeEvent::Ipv6PktTooSmall);
                Outcome::Truncated(Layer::Ipv6)
            }
            Error::Malformed => {
                d.events.set(DecodeEvent::Ipv6WrongIpVersion);
                Outcome::Malformed(Malformed::IpVersion)
            }
        })?;
        let total = ipv6::HEADER_LEN + p.effective_payload_len();
        let end = off + total.min(buf.len());
        let a = p.addr_bytes();
        let mut src = [0u8; 16];
        let mut dst = [0u8; 16];
        src.copy_from_slice(&a[..16]);
        dst.copy_from_slice(&a[16..]);
        let mut ip = Ip {
            src: IpAddr::V6(Ipv6Addr::from(src)),
            dst: IpAddr::V6(Ipv6Addr::from(dst)),
            proto: p.next_header(),
            ttl: p.hop_limit(),
            id: 0,
            frag_offset: 0,
            more_fragments: false,
            dont_fragment: false,
            fragmented: false,
            header_len: ipv6::HEADER_LEN as u16,
            total_len: total as u32,
            ext_headers: 0,
            frag_announced_at: 0,
            frag_header_at: 0,
        };
        d.payload_truncated = total > buf.len();
        if d.payload_truncated {
            d.events.set(DecodeEvent::Ipv6TruncPkt);
        }
        d.l3_offset = off as u32;
        d.l3_end = end as u32;
        d.l4 = L4::None;
        // Record what we know before walking the chain, so a broken chain still leaves the addresses.
        d.ip = Some(ip);
        let chain = ipv6::walk_extensions_noting(
            p.next_header(),
            p.payload(),
            self.opts.max_ipv6_extensions,
            &mut d.events,
        )
        .map_err(trunc_or(Layer::Ipv6Ext, Malformed::Ipv6Extensions))?;
        ip.ext_headers = chain.count;
        ip.header_len = (ipv6::HEADER_LEN + chain.transport_offset) as u16;
        ip.proto = chain.transport.unwrap_or(ip_proto::IPV6_NONXT);
        // An atomic fragment (offset 0, no more fragments: `ipv6.exthdr_useless_fh`) is no fragment: RFC 6946 has
        // it processed as a whole packet, as Suricata does.
        if let Some(f) = chain.fragment.filter(|f| f.offset != 0 || f.more) {
            ip.id = f.ident;
            ip.frag_offset = f.offset;
            ip.more_fragments = f.more;
            ip.fragmented = true;
            ip.frag_announced_at = f.announced_at as u16;
            ip.frag_header_at = (ipv6::HEADER_LEN + f.position) as u16;
        }
        match ip.proto {
            ip_proto::ICMP => d.events.set(DecodeEvent::Ipv6Icmpv4),
            pr if !known_after_ipv6(pr) => d.events.set(DecodeEvent::Ipv6UnknownNextHeader),
            _ => {}
        }
        d.ip = Some(ip);
        let l4_off = off + ipv6::HEADER_LEN + chain.transport_offset;
        if ip.frag_offset != 0 {
            return self.fragment_data(d, l4_off, end);
        }
        match chain.transport {
            None => {
                d.l4_offset = l4_off as u32;
                d.payload_offset = l4_off as u32;
                d.payload = self.data.get(l4_off..end).unwrap_or(&[]);
                Ok(())
            }
            Some(proto) => self.transport(d, proto, l4_off, end, true),
        }
    }

    fn fragment_data(&mut self, d: &mut Decoded<'a>, off: usize, end: usize) -> Step {
        d.l4 = L4::None;
        d.l4_offset = off as u32;
        d.payload_offset = off as u32;
        d.payload = self.data.get(off..end).unwrap_or(&[]);
        Ok(())
    }

    /// Decodes the transport header at `off` (bounded by the IP datagram `end`).
    fn transport(
        &mut self,
        d: &mut Decoded<'a>,
        proto: u8,
        off: usize,
        end: usize,
        v6: bool,
    ) -> Step {
        let seg = self.data.get(off..end).unwrap_or(&[]);
        d.l4_offset = off as u32;
        match proto {
            ip_proto::TCP => {
                let t = tcp::Packet::new_checked(seg).map_err(|e| {
                    d.events.set(match e {
                        Error::Truncated if seg.len() < tcp::MIN_HEADER_LEN => {
                            DecodeEvent::TcpPktTooSmall
                        }
                        Error::Truncated => DecodeEvent::TcpHlenTooSmall,
                        Error::Malformed => DecodeEvent::TcpInvalidOptlen,
                    });
                    trunc_or(Layer::Tcp, Malformed::Tcp)(e)
                })?;
                let hl = t.header_len();
                d.l4 = L4::Tcp(Tcp {
                    src_port: t.src_port(),
                    dst_port: t.dst_port(),
                    seq: t.seq(),
                    ack: t.ack(),
                    flags: t.flags(),
                    window: t.window(),
                    header_len: hl as u8,
                    options_raw: seg.get(tcp::MIN_HEADER_LEN..hl).unwrap_or(&[]),
                });
                if hl > tcp::MIN_HEADER_LEN {
                    let opts = seg.get(tcp::MIN_HEADER_LEN..hl).unwrap_or(&[]);
                    // Most segments carry NOP, NOP, timestamps (12 bytes), which is valid: one compare instead of
                    // the walk (callgrind on the merged nDPI captures, see BENCHMARKS.md).
                    if opts.len() != 12 || opts.get(..4) != Some(&[1, 1, 8, 10]) {
                        tcp_option_events(opts, &mut d.events);
                    }
                }
                self.set_payload(d, off + hl, seg.get(hl..));
                Ok(())
            }
            ip_proto::UDP => {
                let u = udp::Packet::new_checked(seg).map_err(|e| {
                    d.events.set(match e {
                        Error::Truncated => DecodeEvent::UdpHlenTooSmall,
                        Error::Malformed => DecodeEvent::UdpLenInvalid,
                    });
                    trunc_or(Layer::Udp, Malformed::Udp)(e)
                })?;
                let (sp, dp) = (u.src_port(), u.dst_port());
                // The length field against the datagram, unless the capture cut it (then the IP layer said so).
                let ulen = usize::from(u.len());
                if ulen != seg.len() && ulen != 0 && !d.payload_truncated {
                    if ulen > seg.len() {
                        d.events.set(DecodeEvent::UdpPktTooSmall);
                    } else if ulen != seg.len() {
                        d.events.set(DecodeEvent::UdpHlenInvalid);
                    }
                }
                d.l4 = L4::Udp(Udp {
                    src_port: sp,
                    dst_port: dp,
                    length: u.len(),
                });
                let plen = match u.len() {
                    0 => seg.len(),
                    n => usize::from(n).min(seg.len()),
                };
                let payload = seg.get(udp::HEADER_LEN..plen).unwrap_or(&[]);
                self.set_payload(d, off + udp::HEADER_LEN, Some(payload));
                if self.opts.decap_tunnels {
                    return self.udp_tunnel(d, off + udp::HEADER_LEN, payload, sp, dp);
                }
                Ok(())
            }
            ip_proto::ICMP if !v6 => {
                let i = icmp::Packet::new_checked(seg).map_err(|_| {
                    d.events.set(DecodeEvent::Icmpv4PktTooSmall);
                    Outcome::Truncated(Layer::Icmp)
                })?;
                d.l4 = L4::Icmp(Icmp {
                    msg_type: i.msg_type(),
                    code: i.code(),
                    rest: i.rest_of_header(),
                });
                icmpv4_events(seg, &mut d.events);
                self.set_payload(d, off + 8, seg.get(8..));
                Ok(())
            }
            ip_proto::ICMPV6 if v6 => {
                let i = icmpv6::Packet::new_checked(seg).map_err(|_| {
                    d.events.set(DecodeEvent::Icmpv6PktTooSmall);
                    Outcome::Truncated(Layer::Icmpv6)
                })?;
                d.l4 = L4::Icmpv6(Icmp {
                    msg_type: i.msg_type(),
                    code: i.code(),
                    rest: wire::be32(seg, 4),
                });
                let hop_limit = d.ip.map_or(0, |ip| ip.ttl);
                icmpv6_events(seg, hop_limit, &mut d.events);
                self.set_payload(d, off + 8, seg.get(8..));
                Ok(())
            }
            ip_proto::SCTP => {
                let s = sctp::Packet::new_checked(seg).map_err(|_| {
                    d.events.set(DecodeEvent::SctpPktTooSmall);
                    Outcome::Truncated(Layer::Sctp)
                })?;
                d.l4 = L4::Sctp(Sctp {
                    src_port: s.src_port(),
                    dst_port: s.dst_port(),
                    verification_tag: s.verification_tag(),
                });
                self.set_payload(d, off + sctp::HEADER_LEN, seg.get(sctp::HEADER_LEN..));
                Ok(())
            }
            ip_proto::GRE if self.opts.decap_tunnels => self.gre(d, off, seg),
            ip_proto::IPV4 | ip_proto::IPV6 if self.opts.decap_tunnels => {
                if v6 {
                    // Suricata's IPv4-in-IPv6 and IPv6-in-IPv6 checks, before the inner header is read.
                    let (small, wrong, min, version) = if proto == ip_proto::IPV4 {
                        let e = (
                            DecodeEvent::Ipv6Ipv4InIpv6TooSmall,
                            DecodeEvent::Ipv6Ipv4InIpv6WrongVersion,
                        );
                        (e.0, e.1, ipv4::MIN_HEADER_LEN, 4)
                    } else {
                        let e = (
                            DecodeEvent::Ipv6Ipv6InIpv6TooSmall,
                            DecodeEvent::Ipv6Ipv6InIpv6WrongVersion,
                        );
                        (e.0, e.1, ipv6::HEADER_LEN, 6)
                    };
                    if seg.len() < min {
                        d.events.set(small);
                    } else if seg[0] >> 4 != version {
                        d.events.set(wrong);
                    }
                }
                self.enter_tunnel(d, TunnelSet::IP_IN_IP, off)?;
                if proto == ip_proto::IPV4 {
                    self.ipv4(d, off)
                } else {
                    self.ipv6(d, off)
                }
            }
            _ => {
                d.l4 = L4::Other;
                self.set_payload(d, off, Some(seg));
                Ok(())
            }
        }
    }

    #[inline(always)]
    fn set_payload(&self, d: &mut Decoded<'a>, off: usize, p: Option<&'a [u8]>) {
        d.payload_offset = off as u32;
        d.payload = p.unwrap_or(&[]);
    }

    /// Crosses into a tunnel whose inner packet starts at `start` and ends where the enclosing IP datagram does.
    fn enter_tunnel(&mut self, d: &mut Decoded<'a>, kind: u8, start: usize) -> Step {
        self.deeper()?;
        d.tunnels = d.tunnels.saturating_add(1);
        d.tunnel_kinds.0 |= kind;
        d.tunnel_len = d.l3_end.saturating_sub(start as u32);
        // The inner packet starts afresh: no payload or L4 until it is decoded.
        d.l4 = L4::None;
        d.payload = &[];
        d.payload_truncated = false;
        Ok(())
    }

    fn udp_tunnel(
        &mut self,
        d: &mut Decoded<'a>,
        off: usize,
        payload: &'a [u8],
        sp: u16,
        dp: u16,
    ) -> Step {
        if dp == self.opts.vxlan_port {
            if vxlan::Header::new_checked(payload).is_ok() {
                self.enter_tunnel(d, TunnelSet::VXLAN, off + vxlan::HEADER_LEN)?;
                return self.ethernet(d, off + vxlan::HEADER_LEN);
            }
        } else if (sp == capwap::DATA_PORT || dp == capwap::DATA_PORT)
            && let Ok(c) = capwap::Header::new_checked(payload)
        {
            // Only IP inside an 802.11 data frame is followed: a client's ARP or EAPOL stays part of the outer
            // UDP flow rather than turning the datagram into an unsupported EtherType.
            match c.inner() {
                capwap::Inner::Ethernet(at) => {
                    self.enter_tunnel(d, TunnelSet::CAPWAP, off + at)?;
                    return self.ethernet(d, off + at);
                }
                capwap::Inner::EtherType(et @ (ethertype::IPV4 | ethertype::IPV6), at) => {
                    self.enter_tunnel(d, TunnelSet::CAPWAP, off + at)?;
                    return self.ethertype(d, off + at, et);
                }
                _ => {}
            }
        } else if (sp == self.opts.geneve_port || dp == self.opts.geneve_port)
            && let Ok(g) = geneve::Header::new_checked(payload)
        {
            let at = off + g.header_len();
            match g.protocol() {
                ethertype::TEB => {
                    self.enter_tunnel(d, TunnelSet::GENEVE, at)?;
                    return self.ethernet(d, at);
                }
                et @ (ethertype::IPV4 | ethertype::IPV6) => {
                    self.enter_tunnel(d, TunnelSet::GENEVE, at)?;
                    return self.ethertype(d, at, et);
                }
                _ => {}
            }
        } else if (sp == self.opts.gtpu_port || dp == self.opts.gtpu_port)
            && let Ok(g) = gtpu::Header::new_checked(payload)
        {
            let version = g.payload().first().map(|b| b >> 4);
            if g.message_type() == gtpu::G_PDU && matches!(version, Some(4 | 6)) {
                let at = off + g.header_len();
                self.enter_tunnel(d, TunnelSet::GTPU, at)?;
                return if version == Some(4) {
                    self.ipv4(d, at)
                } else {
                    self.ipv6(d, at)
                };
            }
        }
        Ok(())
    }

    fn gre(&mut self, d: &mut Decoded<'a>, off: usize, seg: &'a [u8]) -> Step {
        let g = gre::Header::new_checked(seg).map_err(|e| {
            d.events.set(match e {
                Error::Truncated => DecodeEvent::GrePktTooSmall,
                Error::Malformed => DecodeEvent::GreWrongVersion,
            });
            trunc_or(Layer::Gre, Malformed::Gre)(e)
        })?;
        let inner = off + g.header_len();
        let proto = g.protocol();
        match proto {
            ethertype::IPV4 | ethertype::IPV6 => {
                self.enter_tunnel(d, TunnelSet::GRE, inner)?;
                if proto == ethertype::IPV4 {
                    self.ipv4(d, inner)
                } else {
                    self.ipv6(d, inner)
                }
            }
            ethertype::TEB => {
                self.enter_tunnel(d, TunnelSet::GRE, inner)?;
                self.ethernet(d, inner)
            }
            ethertype::ERSPAN2 | ethertype::ERSPAN3 => {
                // ERSPAN type I shares type II's protocol number but has no header and no GRE sequence number.
                let n = match gre::erspan_header_len(proto, g.payload()) {
                    _ if proto == ethertype::ERSPAN2 && g.sequence().is_none() => 0,
                    Some(Ok(n)) => n,
                    _ => return Err(Outcome::Truncated(Layer::Erspan)),
                };
                self.enter_tunnel(d, TunnelSet::GRE | TunnelSet::ERSPAN, inner + n)?;
                self.ethernet(d, inner + n)
            }
            ethertype::PPP => {
                // PPTP: optional address/control (ff 03), then a 1- or 2-byte protocol (RFC 1661 field compression).
                let f = ppp::Frame::new_checked(g.payload())
                    .map_err(|_| Outcome::Truncated(Layer::Gre))?;
                let at = inner + f.header_len();
                match f.protocol() {
                    ppp::proto::IPV4 => {
                        self.enter_tunnel(d, TunnelSet::GRE, at)?;
                        self.ipv4(d, at)
                    }
                    ppp::proto::IPV6 => {
                        self.enter_tunnel(d, TunnelSet::GRE, at)?;
                        self.ipv6(d, at)
                    }
                    _ => self.gre_opaque(d, off, seg),
                }
            }
            _ => self.gre_opaque(d, off, seg),
        }
    }

    /// A GRE packet whose payload is not a packet we follow (PPP control, keepalives, WCCP): the outer packet is
    /// the decoded one.
    fn gre_opaque(&mut self, d: &mut Decoded<'a>, off: usize, seg: &'a [u8]) -> Step {
        d.l4 = L4::Other;
        self.set_payload(d, off, Some(seg));
        Ok(())
    }
}

/// VLAN tags Suricata decodes before `vlan.too_many_layers`.
const MAX_VLAN_LAYERS: u8 = 3;

/// The event and outcome of an IPv4 header that does not parse.
#[cold]
fn ipv4_error(buf: &[u8], e: Error) -> (DecodeEvent, Outcome) {
    let Some(&first) = buf.first() else {
        return (
            DecodeEvent::Ipv4PktTooSmall,
            Outcome::Truncated(Layer::Ipv4),
        );
    };
    if first >> 4 != 4 {
        return (
            DecodeEvent::Ipv4WrongIpVersion,
            Outcome::Malformed(Malformed::IpVersion),
        );
    }
    let hl = usize::from(first & 0x0f) * 4;
    match e {
        _ if buf.len() < ipv4::MIN_HEADER_LEN => (
            DecodeEvent::Ipv4PktTooSmall,
            Outcome::Truncated(Layer::Ipv4),
        ),
        _ if hl < ipv4::MIN_HEADER_LEN => (
            DecodeEvent::Ipv4HlenTooSmall,
            Outcome::Malformed(Malformed::Ipv4Header),
        ),
        Error::Truncated => (DecodeEvent::Ipv4TruncPkt, Outcome::Truncated(Layer::Ipv4)),
        Error::Malformed => (
            DecodeEvent::Ipv4IplenSmallerThanHlen,
            Outcome::Malformed(Malformed::Ipv4Header),
        ),
    }
}

/// Whether Suricata's IPv6 decoder knows the protocol after the extension headers (else
/// `ipv6.unknown_next_header`).
fn known_after_ipv6(proto: u8) -> bool {
    matches!(
        proto,
        ip_proto::TCP
            | ip_proto::UDP
            | ip_proto::ICMPV6
            | ip_proto::ICMP
            | ip_proto::SCTP
            | ip_proto::GRE
            | ip_proto::IPV4
            | ip_proto::IPV6
            | ip_proto::ESP
            | ip_proto::AH
            | ip_proto::IPV6_NONXT
            | ip_proto::MOBILITY
            | ip_proto::HIP
            | ip_proto::SHIM6
            | 253
            | 254
    )
}

/// The TCP option anomalies Suricata's decoder reports: an option whose length byte is below 2 or runs past the
/// options, or is wrong for its kind (`tcp.opt_invalid_len`), and a kind seen twice (`tcp.opt_duplicate`). An empty
/// SACK option (length 2) is allowed. Only called for headers with options; walks at most 40 bytes.
#[inline(never)]
/// Suricata's checks of an ICMPv4 message (`msg`, 8 bytes at least) that decodes: a type its decoder does not know
/// (`icmpv4.unknown_type`), a code its type does not have (`icmpv4.unknown_code`), and what the message carries cut
/// short or wrong (`icmpv4.ipv4_trunc_pkt`, `icmpv4.ipv4_unknown_ver`): an error's quoted IPv4 header (read only
/// when the code is known, and for all but a source quench only when something follows the 8 bytes), a timestamp's
/// 12 bytes, a router advertisement's addresses. An echo or echo reply of code 0 costs one compare.
fn icmpv4_events(msg: &[u8], events: &mut DecodeEvents) {
    let (kind, code) = match msg {
        [k, c, ..] => (*k, *c),
        _ => return,
    };
    if matches!(kind, 0 | 8) && code == 0 {
        return;
    }
    // An error's quoted datagram: an IPv4 header must fit, of version 4.
    let quoted = |events: &mut DecodeEvents| {
        let q = msg.get(8..).unwrap_or(&[]);
        if q.len() < ipv4::MIN_HEADER_LEN {
            events.set(DecodeEvent::Icmpv4Ipv4TruncPkt);
        } else if q.first().is_some_and(|b| b >> 4 != 4) {
            events.set(DecodeEvent::Icmpv4Ipv4UnknownVer);
        }
    };
    let quotes = msg.len() > 8;
    let bad_code = |events: &mut DecodeEvents| events.set(DecodeEvent::Icmpv4UnknownCode);
    match kind {
        // Echo, information and address mask requests and replies: code 0.
        0 | 8 | 15..=18 => {
            if code != 0 {
                bad_code(events);
            }
        }
        // Timestamp request and reply: code 0, and the three 4-byte timestamps after the header.
        13 | 14 => {
            if code != 0 {
                bad_code(events);
            }
            if msg.len() < 20 {
                events.set(DecodeEvent::Icmpv4Ipv4TruncPkt);
            }
        }
        // Router advertisement: its addresses (count times entry size in 4-byte words) after the header.
        9 => {
            let count = usize::from(msg.get(4).copied().unwrap_or(0));
            let words = usize::from(msg.get(5).copied().unwrap_or(0));
            if msg.len() < 8 + count * words * 4 {
                events.set(DecodeEvent::Icmpv4Ipv4TruncPkt);
            }
        }
        // Destination unreachable (codes 0-15), redirect (0-3), time exceeded (0-1), parameter problem (0).
        3 | 5 | 11 | 12 => {
            let known = match kind {
                3 => code <= 15,
                5 => code <= 3,
                11 => code <= 1,
                _ => code == 0,
            };
            if !known {
                bad_code(events);
            } else if quotes {
                quoted(events);
            }
        }
        // Source quench (code 0): its quote is read however short.
        4 => {
            if code != 0 {
                bad_code(events);
            } else {
                quoted(events);
            }
        }
        _ => events.set(DecodeEvent::Icmpv4UnknownType),
    }
}

/// Suricata's checks of an ICMPv6 message (`msg`, 8 bytes at least) that decodes: a type of no known message
/// (`icmpv6.unassigned_type`, `icmpv6.experimentation_type`, or for types 0 and 127 `icmpv6.unknown_type`), a code
/// its type does not have (`icmpv6.unknown_code`), an MLD message whose hop limit (`hop_limit`, the IPv6 header's)
/// is not 1, and an error's quoted packet cut short or not IPv6 (read only when the code is known). An echo request
/// or reply of code 0 costs one compare.
fn icmpv6_events(msg: &[u8], hop_limit: u8, events: &mut DecodeEvents) {
    let (kind, code) = match msg {
        [k, c, ..] => (*k, *c),
        _ => return,
    };
    if matches!(kind, 128 | 129) && code == 0 {
        return;
    }
    let quoted = |events: &mut DecodeEvents| {
        let q = msg.get(8..).unwrap_or(&[]);
        if q.len() < ipv6::HEADER_LEN {
            events.set(DecodeEvent::Icmpv6Ipv6TruncPkt);
        } else if q.first().is_some_and(|b| b >> 4 != 6) {
            events.set(DecodeEvent::Icmpv6Ipv6UnknownVersion);
        }
    };
    let known = match kind {
        // Destination unreachable (codes 0-6), packet too big (0), time exceeded (0-1), parameter problem (0-2):
        // their quote is read when the code is known.
        1..=4 => {
            let known = match kind {
                1 => code <= 6,
                2 => code == 0,
                3 => code <= 1,
                _ => code <= 2,
            };
            if known {
                quoted(events);
            }
            known
        }
        // MLD query, report and done: code 0, hop limit 1.
        130..=132 => {
            if hop_limit != 1 {
                events.set(DecodeEvent::Icmpv6MldMessageWithInvalidHl);
            }
            code == 0
        }
        // Router renumbering: codes 0-2 and 255.
        138 => code <= 2 || code == 255,
        // Node information query and reply: codes 0-2.
        139 | 140 => code <= 2,
        // RPL control: codes 0-3 and 128-132.
        155 => code <= 3 || (128..=132).contains(&code),
        // Experimental mobility and multicast router discovery: any code.
        150..=153 => true,
        // Echo, neighbour discovery, inverse discovery, MLDv2 report, home agent, mobile prefix, certification
        // path, FMIPv6, locator update, duplicate address and MPL messages: code 0.
        128 | 129 | 133..=137 | 141..=149 | 154 | 156..=159 => code == 0,
        100 | 101 | 200 | 201 => {
            events.set(DecodeEvent::Icmpv6ExperimentationType);
            true
        }
        5..=99 | 102..=126 | 160..=199 | 202..=255 => {
            events.set(DecodeEvent::Icmpv6UnassignedType);
            true
        }
        _ => {
            events.set(DecodeEvent::Icmpv6UnknownType);
            true
        }
    };
    if !known {
        events.set(DecodeEvent::Icmpv6UnknownCode);
    }
}

fn tcp_option_events(opts: &[u8], events: &mut DecodeEvents) {
    // Kinds checked for duplicates: MSS, window scale, SACK permitted, SACK, timestamps, MD5, TCP-AO, fast open.
    const TRACKED: [u8; 8] = [2, 3, 4, 5, 8, 19, 29, 34];
    let mut seen = 0u8;
    let mut i = 0usize;
    while i < opts.len() {
        let kind = opts[i];
        match kind {
            0 => return,
            1 => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let Some(&len) = opts.get(i + 1) else {
            events.set(DecodeEvent::TcpOptInvalidLen);
            return;
        };
        let l = usize::from(len);
        if l < 2 || i + l > opts.len() {
            events.set(DecodeEvent::TcpOptInvalidLen);
            return;
        }
        let ok = match kind {
            2 => l == 4,
            3 => l == 3,
            4 => l == 2,
            5 => l == 2 || ((10..=34).contains(&l) && (l - 2) % 8 == 0),
            8 => l == 10,
            19 => l == 18,
            29 => l >= 4,
            34 => l == 2 || (6..=18).contains(&l),
            _ => true,
        };
        if !ok {
            events.set(DecodeEvent::TcpOptInvalidLen);
        } else if let Some(bit) = TRACKED.iter().position(|&k| k == kind) {
            if seen & (1 << bit) != 0 {
                events.set(DecodeEvent::TcpOptDuplicate);
            }
            seen |= 1 << bit;
        }
        i += l;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;

    /// reassembly/frag_http_req.pcap frame 1: Ethernet, IPv4 first fragment (id 0x425f, MF), TCP 64415 → 80 with the start of a GET.
    const ETH_TCP_FIRST_FRAG: &str = "00907f3e02d0d4bed94b24790800450000a4425f20008006acd3ac108536d8892151fb9f0050888d248a39a869b45018\
     40293e040000474554202f636f6e766572745f646174612e6a733f706172746e65725f69643d323920485454502f312e\
     310d0a486f73743a206a732e62697a6f67726170686963732e636f6d0d0a557365722d4167656e743a204d6f7a696c6c\
     612f352e30202857696e646f7773204e5420362e313b20574f5736343b2072763a31";

    /// reassembly/frag_with_padding.pcap frame 8: VLAN 19, IPv4 first fragment of 28 bytes (UDP header only) padded to 60.
    const PADDED_FRAG: &str = "01005e0002023806b438b3428100001308004500001c631260000311073f0a0d0171e0000202a5a2a47624c1cf110000\
     000000000000000000000000";

    /// malformed/802.1ad_QinQ.pcap frame 1: 802.1ad tag (VLAN 200), 802.1Q tag (VLAN 2001), ARP.
    const QINQ_ARP: &str = "ffffffffffff0020d25afb3f88a800c8810007d1080600010800060400010020d25afb3fac154f61000000000000ac15\
     4f640000000000000000000000000000";

    /// reassembly/VlanPackets.pcap frame 1: two 802.1Q tags (118, 10), ICMP echo request 10.118.10.1 → 10.118.10.2.
    const VLAN_ICMP: &str = "001bd41ba4d80013c3dfae18810000768100000a080045000064000f0000ff01929b0a760a010a760a020800ceb70003\
     000000000000001faf70abcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcd\
     abcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcd";

    /// malformed/erspan-type-ii-1.pcap frame 1: GRE with sequence, ERSPAN II, inner Ethernet, IPv4 PIM hello.
    const ERSPAN2: &str = "00e0009b6d8100259e81b354080045fc006c00ab4000fb2fbc0a01010102c0a8ff05100088be000000ab1156c29a0000\
     7ff801005e00000d001f9ed2a980080045c0003a5bf4000001676c6b0a300601e000000d2000c5300001000200690014\
     00042c6ceec000130004000000010015000401000000fdec0000";

    /// ndpi/pcap/6in4tunnel.pcap frame 1: IPv4 protocol 41, IPv6 ICMPv6 echo request inside.
    const SIX_IN_FOUR: &str = "002290de3bd9000024ce813408004500007cb5814000ff291737ae034918b869ff1a6000000000403a3f200104701f17\
     013f3e970efffe734dec2604a88000010020000000000224b0018000e0bd5d8f015a5d4e155600000000a8dd06000000\
     0000101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637";

    /// ndpi/pcap/ipv6_in_gtp.pcap frame 1: two VLAN tags, IPv4, UDP 2152, GTP-U G-PDU, IPv6 UDP inside.
    const GTP_IPV6: &str = "00000000000234b35407ca5681000ca18100600508004568008068490000ff11ee790aee501a0aeefe4b08680868006c\
     000030ff005c12808fb86008b852003411402607fc204052039e490aea4d17fee09cfd00976abc67193e000000000000\
     0007bfe0643a00343748806e1597c35ac22f32b5ab35f3f8171e4e61ee025025e03ece7388f973f214ffdbb74b976c6d\
     a896cf2e4ac4";

    /// suricata-verify geneve-decoder/input.pcap frame 3: IPv4 UDP to 6081, Geneve (VNI 123, no options,
    /// transparent Ethernet), inner Ethernet, IPv4 ICMP echo request 10.0.0.1 → 10.0.0.2 (98 bytes from the inner
    /// Ethernet header on).
    const GENEVE_ICMP: &str = "080027f21d8c080027ae4d620800450000869ba940004011ad55c0a8380bc0a8380c8b5717c1007200000000655800007b004a7f013ba271ba092b6ef8be080045000054f3ef4000400132b70a0000010a000002080051450d8a00014d9d7c570000000002680e0000000000101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637";

    /// malformed/gso-ipv4-vxlan-ipv4.pcap frame 1, first 120 bytes (a GSO super-packet): IPv4 UDP 4789, VXLAN 5001, inner Ethernet, IPv4, TCP.
    const VXLAN_PREFIX: &str = "b8cef6048b14d4aff7dae173080045001bb430e800003d1115070a19840b0a19840debb912b51ba037fc080000000013\
     8900fe36a567e0ac76bd914a21f9080045001b82282a4000400673f8c0a80102c0a8010190eba24b72c5d5789bd3a673\
     801800a69ec800000101080add7e04af35a5fd466e657470";

    /// reassembly/sll2.pcap frame 1: Linux cooked v2, IPv4, TCP 443 → 57292 carrying a TLS alert.
    const SLL2_TCP: &str = "080000000000001400010006f03f958f8263000045000047872c40002c06716e743f426c07f9977201bbdfccaaceb5ca\
     a7ab9fbf5018003fa1550000150303001a91c1b9659e9ff9c3c493ae82573966caff40dba0f6b6304c5c72";

    /// malformed/erspan-type-i-1.pcap frame 1: GRE without sequence, ERSPAN type I (no header), 802.1Q, ICMP.
    const ERSPAN1: &str = "00e0009b6d8100259e81b354080045fc007e00000000202fd7a501010101c0a8ff05000088be00115c3dde0000259e81\
     b3548100c0650800450000549f430000ff01062a0a3480e90a3480ea0800042aac520003fda18a280d0b1600504e4700\
     fda18a28000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021222324252627";

    fn run(h: &str, decap: bool) -> (Vec<u8>, DecodeOptions) {
        (
            hex(h),
            DecodeOptions {
                decap_tunnels: decap,
                ..DecodeOptions::default()
            },
        )
    }

    fn v4(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ethernet_ipv4_tcp_first_fragment() {
        let (b, o) = run(ETH_TCP_FIRST_FRAG, false);
        let d = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(d.outcome, Outcome::Decoded);
        let ip = d.ip.unwrap();
        assert_eq!((ip.src, ip.dst), (v4("172.16.133.54"), v4("216.137.33.81")));
        assert_eq!(
            (ip.proto, ip.ttl, ip.id, ip.header_len, ip.total_len),
            (6, 128, 0x425f, 20, 164)
        );
        assert!(ip.is_first_fragment() && !ip.is_later_fragment());
        let t = d.tcp().unwrap();
        assert_eq!((t.src_port, t.dst_port, t.header_len), (64415, 80, 20));
        assert!(t.has(tcp::flags::PSH) && t.has(tcp::flags::ACK));
        assert_eq!(
            (d.l3_offset, d.l4_offset, d.payload_offset, d.l3_end),
            (14, 34, 54, 178)
        );
        assert!(d.payload.starts_with(b"GET /convert_data.js"));
        assert_eq!(d.payload.len(), 124);
        assert!(!d.payload_truncated);
        assert_eq!(d.ports(), Some((64415, 80)));
    }

    #[test]
    fn ethernet_padding_is_not_payload() {
        let (b, o) = run(PADDED_FRAG, false);
        let d = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(d.outcome, Outcome::Decoded);
        assert_eq!(
            (d.vlan_count, d.vlan_outer, d.vlan_inner),
            (1, Some(19), Some(19))
        );
        assert_eq!(b.len(), 60);
        assert_eq!(d.l3_end - d.l3_offset, 28);
        assert_eq!(d.ports(), Some((42402, 42102)));
        assert!(
            d.payload.is_empty(),
            "18 bytes of padding must not become UDP payload"
        );
        assert_eq!(d.ip_packet().len(), 28);
    }

    #[test]
    fn qinq_then_arp_is_unsupported_with_both_tags() {
        let (b, o) = run(QINQ_ARP, false);
        let d = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(d.outcome, Outcome::Unsupported(Unsupported::EtherType));
        assert_eq!(
            (d.vlan_count, d.vlan_outer, d.vlan_inner),
            (2, Some(200), Some(2001))
        );
        assert!(d.ip.is_none());
    }

    #[test]
    fn double_vlan_icmp() {
        let (b, o) = run(VLAN_ICMP, false);
        let d = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(d.outcome, Outcome::Decoded);
        assert_eq!(
            (d.vlan_count, d.vlan_outer, d.vlan_inner),
            (2, Some(118), Some(10))
        );
        assert_eq!(
            d.l4,
            L4::Icmp(Icmp {
                msg_type: 8,
                code: 0,
                rest: 0x0003_0000
            })
        );
        assert_eq!(d.ip.unwrap().ttl, 255);
        // Depth limit: one tag allowed, two present.
        let d = decode_bytes(LinkType::ETHERNET, &b, &DecodeOptions { max_depth: 1, ..o });
        assert_eq!(d.outcome, Outcome::Unsupported(Unsupported::TooDeep));
    }

    #[test]
    fn erspan_over_gre() {
        let (b, o) = run(ERSPAN2, false);
        let d = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(d.outcome, Outcome::Decoded);
        assert_eq!(d.ip.unwrap().proto, ip_proto::GRE);
        assert_eq!(d.l4, L4::Other);
        assert_eq!(d.tunnels, 0);
        let d = decode_bytes(
            LinkType::ETHERNET,
            &b,
            &DecodeOptions {
                decap_tunnels: true,
                ..o
            },
        );
        assert_eq!(d.outcome, Outcome::Decoded);
        assert_eq!(d.tunnels, 1);
        assert!(
            d.tunnel_kinds.contains(TunnelSet::ERSPAN) && d.tunnel_kinds.contains(TunnelSet::GRE)
        );
        let ip = d.ip.unwrap();
        assert_eq!(
            (ip.src, ip.dst, ip.proto),
            (v4("10.48.6.1"), v4("224.0.0.13"), 103)
        );
    }

    #[test]
    fn decoded_view_stays_small() {
        // Returned by value on the hot path: keep it within a few cache lines. 200 since the decoder events take
        // two words (8 bytes more; a decode pass measured no more instructions, BENCHMARKS.md "Decoder events").
        let n = std::mem::size_of::<Decoded<'static>>();
        eprintln!("size_of::<Decoded>() = {n}");
        assert!(n <= 200, "{n}");
    }

    #[test]
    fn erspan_type_i() {
        let (b, o) = run(ERSPAN1, true);
        let d = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(d.outcome, Outcome::Decoded);
        assert!(d.tunnel_kinds.contains(TunnelSet::ERSPAN));
        assert_eq!(d.vlan_outer, Some(101));
        let ip = d.ip.unwrap();
        assert_eq!((ip.src, ip.dst), (v4("10.52.128.233"), v4("10.52.128.234")));
        assert!(matches!(d.l4, L4::Icmp(i) if i.msg_type == 8));
    }

    #[test]
    fn six_in_four() {
        let (b, o) = run(SIX_IN_FOUR, true);
        let d = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(d.outcome, Outcome::Decoded);
        assert!(d.tunnel_kinds.contains(TunnelSet::IP_IN_IP));
        let ip = d.ip.unwrap();
        assert_eq!(
            ip.src,
            "2001:470:1f17:13f:3e97:eff:fe73:4dec"
                .parse::<IpAddr>()
                .unwrap()
        );
        assert_eq!(
            ip.dst,
            "2604:a880:1:20::224:b001".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            d.l4,
            L4::Icmpv6(Icmp {
                msg_type: 128,
                code: 0,
                rest: 0x5d8f_015a
            })
        );
        assert_eq!(d.l3_offset, 34);
    }

    #[test]
    fn gtp_u_over_double_vlan() {
        let (b, o) = run(GTP_IPV6, false);
        let plain = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(plain.ports(), Some((2152, 2152)));
        let d = decode_bytes(
            LinkType::ETHERNET,
            &b,
            &DecodeOptions {
                decap_tunnels: true,
                ..o
            },
        );
        assert_eq!(d.outcome, Outcome::Decoded);
        assert_eq!(d.vlan_count, 2);
        assert!(d.tunnel_kinds.contains(TunnelSet::GTPU));
        let ip = d.ip.unwrap();
        assert!(ip.is_v6());
        assert_eq!(ip.proto, ip_proto::UDP);
        assert_eq!(
            ip.src,
            "2607:fc20:4052:39e:490a:ea4d:17fe:e09c"
                .parse::<IpAddr>()
                .unwrap()
        );
    }

    #[test]
    fn geneve_to_inner_icmp() {
        let (b, o) = run(GENEVE_ICMP, true);
        let d = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(d.outcome, Outcome::Decoded);
        assert!(d.tunnel_kinds.contains(TunnelSet::GENEVE));
        assert_eq!((d.tunnels, d.key_depth, d.tunnel_len), (1, 1, 98));
        let ip = d.ip.unwrap();
        assert_eq!((ip.src, ip.dst), (v4("10.0.0.1"), v4("10.0.0.2")));
        assert!(matches!(d.l4, L4::Icmp(i) if i.msg_type == 8));
        // Without decapsulation, or on another port, it is a UDP datagram.
        let (_, plain) = run(GENEVE_ICMP, false);
        assert!(matches!(
            decode_bytes(LinkType::ETHERNET, &b, &plain).l4,
            L4::Udp(_)
        ));
        let other = DecodeOptions {
            geneve_port: 6082,
            ..o
        };
        assert!(matches!(
            decode_bytes(LinkType::ETHERNET, &b, &other).l4,
            L4::Udp(_)
        ));
    }

    #[test]
    fn vxlan_to_inner_tcp() {
        let (b, o) = run(VXLAN_PREFIX, true);
        let d = decode_bytes(LinkType::ETHERNET, &b, &o);
        assert_eq!(d.outcome, Outcome::Decoded);
        assert!(d.tunnel_kinds.contains(TunnelSet::VXLAN));
        let ip = d.ip.unwrap();
        assert_eq!((ip.src, ip.dst), (v4("192.168.1.2"), v4("192.168.1.1")));
        assert_eq!(d.ports(), Some((37099, 41547)));
        assert!(d.payload_truncated, "a 120-byte prefix of a 7 kB packet");
    }

    #[test]
    fn linux_cooked_v2() {
        let (b, o) = run(SLL2_TCP, false);
        let d = decode_bytes(LinkType::LINUX_SLL2, &b, &o);
        assert_eq!(d.outcome, Outcome::Decoded);
        assert_eq!(d.l3_offset, 20);
        assert_eq!(d.ports(), Some((443, 57292)));
        assert_eq!(d.payload.len(), 31);
    }

    #[test]
    fn ppi_around_ethernet() {
        // ndpi/pcap/someip_sd_sample.pcap frame 1: an 8-byte PPI header (inner link type 1), Ethernet, IPv4, UDP.
        let b = hex(
            "0000080001000000 01005e0203050054afe7034008004500005400004000ff11749fc0a85849eb020305771a771a0040e278\
             ffff8100000000300000000301010200c0000000000000100100001000eb00000100001e000000000000000c00090400c0a8\
             58490011c350",
        );
        let d = decode_bytes(LinkType::PPI, &b, &DecodeOptions::default());
        assert_eq!(d.outcome, Outcome::Decoded);
        assert_eq!(d.ports(), Some((30490, 30490)));
        let mut bad = b.clone();
        bad[2] = 0xff; // header longer than the frame
        let d = decode_bytes(LinkType::PPI, &bad, &DecodeOptions::default());
        assert_eq!(d.outcome, Outcome::Truncated(Layer::Link));
        let mut other = b.clone();
        other[4] = 105; // 802.11 inside: not decoded
        let d = decode_bytes(LinkType::PPI, &other, &DecodeOptions::default());
        assert_eq!(d.outcome, Outcome::Unsupported(Unsupported::LinkType));
    }

    #[test]
    fn mpls_then_truncated_ipv4() {
        // reassembly/ip4_bad_fragment.pcap: MPLS label, then an IPv4 header claiming 60 bytes with 42 captured.
        let b = hex(
            "ac853db9fe0dac853db9fde488470000 8f014fa60f0101040024001df7e3000000010000 0001ff03c02109140008433ef21d0000 \
             000000000000000000",
        );
        let d = decode_bytes(LinkType::ETHERNET, &b, &DecodeOptions::default());
        assert_eq!(d.outcome, Outcome::Truncated(Layer::Ipv4));
        assert_eq!(d.mpls_depth, 1);
        assert!(d.ip.is_none());
    }

    #[test]
    fn checksum_verification_is_optional() {
        let mut b = hex(ETH_TCP_FIRST_FRAG);
        b[24] ^= 0xff; // IPv4 checksum byte
        let o = DecodeOptions::default();
        assert_eq!(
            decode_bytes(LinkType::ETHERNET, &b, &o).outcome,
            Outcome::Decoded
        );
        let strict = DecodeOptions {
            verify_ipv4_checksum: true,
            ..o
        };
        assert_eq!(
            decode_bytes(LinkType::ETHERNET, &b, &strict).outcome,
            Outcome::Malformed(Malformed::Ipv4Checksum)
        );
    }

    #[test]
    fn every_prefix_ends_in_an_outcome() {
        // Cutting a real packet anywhere yields Truncated at the layer that was cut, never a panic.
        let b = hex(ETH_TCP_FIRST_FRAG);
        let o = DecodeOptions::default();
        for n in 0..b.len() {
            let d = decode_bytes(LinkType::ETHERNET, &b[..n], &o);
            let want = match n {
                0..14 => Outcome::Truncated(Layer::Link),
                14..34 => Outcome::Truncated(Layer::Ipv4),
                34..54 => Outcome::Truncated(Layer::Tcp),
                _ => Outcome::Decoded,
            };
            assert_eq!(d.outcome, want, "prefix {n}");
        }
    }

    #[test]
    fn raw_and_loopback_links() {
        let b = hex(ETH_TCP_FIRST_FRAG);
        let o = DecodeOptions::default();
        let ip = &b[14..];
        for lt in [LinkType::RAW, LinkType::IPV4, LinkType::RAW_BSD12] {
            assert_eq!(decode_bytes(lt, ip, &o).ports(), Some((64415, 80)));
        }
        assert_eq!(
            decode_bytes(LinkType::IPV6, ip, &o).outcome,
            Outcome::Malformed(Malformed::IpVersion)
        );
        let mut null = vec![2, 0, 0, 0];
        null.extend_from_slice(ip);
        assert_eq!(
            decode_bytes(LinkType::NULL, &null, &o).ports(),
            Some((64415, 80))
        );
        null[..4].copy_from_slice(&[0, 0, 0, 2]);
        assert_eq!(
            decode_bytes(LinkType::LOOP, &null, &o).ports(),
            Some((64415, 80))
        );
        null[..4].copy_from_slice(&[0, 0, 0, 7]);
        assert_eq!(
            decode_bytes(LinkType::LOOP, &null, &o).outcome,
            Outcome::Unsupported(Unsupported::LoopbackFamily)
        );
        assert_eq!(
            decode_bytes(LinkType(147), ip, &o).outcome,
            Outcome::Unsupported(Unsupported::LinkType)
        );
    }

    /// An IPv6 packet (raw) from `src`/`dst` ::1/::2 with `next` as its Next Header and `payload` after the header.
    fn ipv6_raw(next: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        p.extend_from_slice(&[next, 64]);
        p.extend_from_slice(&[0; 15]);
        p.push(1);
        p.extend_from_slice(&[0; 15]);
        p.push(2);
        p.extend_from_slice(payload);
        p
    }

    fn events_of(b: &[u8]) -> Vec<&'static str> {
        let d = decode_bytes(LinkType::RAW, b, &DecodeOptions::default());
        d.events.iter().map(|e| e.name()).collect()
    }

    /// A minimal ICMPv6 echo request.
    const ECHO6: [u8; 8] = [128, 0, 0, 0, 0, 1, 0, 1];

    #[test]
    fn clean_packets_carry_no_events() {
        for h in [ETH_TCP_FIRST_FRAG, VLAN_ICMP, SLL2_TCP, SIX_IN_FOUR] {
            let (b, o) = run(h, true);
            let lt = if h == SLL2_TCP {
                LinkType::LINUX_SLL2
            } else {
                LinkType::ETHERNET
            };
            assert!(decode_bytes(lt, &b, &o).events.is_empty(), "{h}");
        }
        assert!(events_of(&ipv6_raw(58, &ECHO6)).is_empty());
    }

    /// An IPv4 packet (protocol 1, no options) carrying `icmp`.
    fn ipv4_icmp(icmp: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0];
        p.extend_from_slice(&(20 + icmp.len() as u16).to_be_bytes());
        p.extend_from_slice(&[0, 1, 0, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        p.extend_from_slice(icmp);
        p
    }

    /// An ICMP message: type, code, a zero checksum and rest of header, then `body`.
    fn icmp_msg(kind: u8, code: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind, code, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(body);
        m
    }

    /// 20 bytes of an IPv4 header (version 4) as an ICMP error quotes it.
    const QUOTED4: [u8; 20] = [
        0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1,
    ];

    #[test]
    fn icmpv4_type_and_code_events() {
        let ev =
            |kind: u8, code: u8, body: &[u8]| events_of(&ipv4_icmp(&icmp_msg(kind, code, body)));
        let none: [&str; 0] = [];
        // Known types with their codes: no event.
        for (kind, code) in [
            (0, 0),
            (8, 0),
            (3, 15),
            (5, 3),
            (11, 1),
            (12, 0),
            (15, 0),
            (17, 0),
        ] {
            assert_eq!(ev(kind, code, &QUOTED4), none, "type {kind} code {code}");
        }
        assert_eq!(ev(13, 0, &[0; 12]), none);
        // A type Suricata's decoder does not know (a router solicitation among them); a code its type lacks.
        assert_eq!(ev(42, 0, &[]), ["icmpv4.unknown_type"]);
        assert_eq!(ev(10, 0, &[]), ["icmpv4.unknown_type"]);
        for (kind, code) in [
            (0, 1),
            (8, 9),
            (3, 16),
            (4, 1),
            (5, 4),
            (11, 2),
            (12, 1),
            (16, 1),
            (18, 3),
        ] {
            assert_eq!(
                ev(kind, code, &QUOTED4),
                ["icmpv4.unknown_code"],
                "type {kind} code {code}"
            );
        }
    }

    #[test]
    fn icmpv4_quoted_and_trailing_data_events() {
        let ev =
            |kind: u8, code: u8, body: &[u8]| events_of(&ipv4_icmp(&icmp_msg(kind, code, body)));
        let none: [&str; 0] = [];
        // An error quoting less than an IPv4 header, or a header of another version.
        assert_eq!(ev(3, 1, &QUOTED4[..19]), ["icmpv4.ipv4_trunc_pkt"]);
        let mut v6 = QUOTED4;
        v6[0] = 0x65;
        assert_eq!(ev(11, 0, &v6), ["icmpv4.ipv4_unknown_ver"]);
        // Nothing quoted at all: not read, but for a source quench.
        assert_eq!(ev(3, 1, &[]), none);
        assert_eq!(ev(4, 0, &[]), ["icmpv4.ipv4_trunc_pkt"]);
        // An unknown code: the quote is not read.
        assert_eq!(ev(12, 1, &v6), ["icmpv4.unknown_code"]);
        // A timestamp without its 12 bytes; a router advertisement announcing more addresses than it holds.
        assert_eq!(ev(14, 0, &[0; 11]), ["icmpv4.ipv4_trunc_pkt"]);
        assert_eq!(
            ev(13, 1, &[0; 4]),
            ["icmpv4.unknown_code", "icmpv4.ipv4_trunc_pkt"]
        );
        let mut advert = icmp_msg(9, 0, &[0; 8]);
        advert[4] = 1; // one address
        advert[5] = 2; // of two words
        assert_eq!(events_of(&ipv4_icmp(&advert)), none);
        advert[4] = 2;
        assert_eq!(events_of(&ipv4_icmp(&advert)), ["icmpv4.ipv4_trunc_pkt"]);
    }

    #[test]
    fn icmpv6_type_code_and_quote_events() {
        let ev =
            |kind: u8, code: u8, body: &[u8]| events_of(&ipv6_raw(58, &icmp_msg(kind, code, body)));
        let none: [&str; 0] = [];
        let quoted6 = ipv6_raw(59, &[]);
        for (kind, code) in [(1, 6), (2, 0), (3, 1), (4, 2)] {
            assert_eq!(ev(kind, code, &quoted6), none, "type {kind} code {code}");
        }
        for (kind, code) in [
            (133, 0),
            (135, 0),
            (138, 255),
            (139, 2),
            (150, 7),
            (155, 130),
        ] {
            assert_eq!(ev(kind, code, &[]), none, "type {kind} code {code}");
        }
        for (kind, code) in [
            (1, 7),
            (2, 1),
            (3, 2),
            (4, 3),
            (128, 1),
            (136, 1),
            (138, 3),
            (140, 3),
            (155, 4),
            (155, 133),
        ] {
            assert_eq!(
                ev(kind, code, &quoted6),
                ["icmpv6.unknown_code"],
                "type {kind} code {code}"
            );
        }
        assert_eq!(ev(0, 0, &[]), ["icmpv6.unknown_type"]);
        assert_eq!(ev(127, 0, &[]), ["icmpv6.unknown_type"]);
        for kind in [5, 99, 102, 126, 160, 199, 202, 255] {
            assert_eq!(ev(kind, 0, &[]), ["icmpv6.unassigned_type"], "type {kind}");
        }
        for kind in [100, 101, 200, 201] {
            assert_eq!(
                ev(kind, 0, &[]),
                ["icmpv6.experimentation_type"],
                "type {kind}"
            );
        }
        // An error's quote: cut short, or not IPv6.
        assert_eq!(ev(1, 0, &quoted6[..39]), ["icmpv6.ipv6_trunc_pkt"]);
        let mut v4 = quoted6.clone();
        v4[0] = 0x45;
        assert_eq!(ev(3, 0, &v4), ["icmpv6.ipv6_unknown_version"]);
        // MLD: the hop limit must be 1 (`ipv6_raw` sends 64).
        assert_eq!(ev(130, 0, &[0; 16]), ["icmpv6.mld_message_with_invalid_hl"]);
        let mut mld = ipv6_raw(58, &icmp_msg(131, 1, &[0; 16]));
        mld[7] = 1;
        assert_eq!(events_of(&mld), ["icmpv6.unknown_code"]);
    }

    #[test]
    fn atomic_fragment_is_a_whole_packet_with_a_useless_fragment_header() {
        // Fragment header: next 58, reserved 0, offset 0 and M=0, id 7; then the echo request.
        let mut fh = vec![58, 0, 0, 0, 0, 0, 0, 7];
        fh.extend_from_slice(&ECHO6);
        let b = ipv6_raw(44, &fh);
        let d = decode_bytes(LinkType::RAW, &b, &DecodeOptions::default());
        assert!(!d.ip.unwrap().is_fragment());
        assert!(matches!(d.l4, L4::Icmpv6(_)));
        assert_eq!(events_of(&b), ["ipv6.exthdr_useless_fh"]);
        // A second fragment header after the atomic one is stepped over; a reserved byte is noted.
        let mut two = vec![44, 1, 0, 0, 0, 0, 0, 7, 58, 0, 0, 0, 0, 0, 0, 8];
        two.extend_from_slice(&ECHO6);
        assert_eq!(
            events_of(&ipv6_raw(44, &two)),
            [
                "ipv6.exthdr_dupl_fh",
                "ipv6.exthdr_useless_fh",
                "ipv6.fh_non_zero_reserved_field"
            ]
        );
        // An atomic fragment header with nothing after it: the transport cannot start.
        let e = events_of(&ipv6_raw(44, &[6, 0, 0, 0, 0, 0, 0, 7]));
        assert!(e.contains(&"ipv6.trunc_exthdr") && e.contains(&"tcp.pkt_too_small"));
    }

    #[test]
    fn ipv6_options_and_routing_events() {
        // Destination options: an unknown option type 0x1e (len 2), then PadN of length 0 filling the 8 bytes.
        let mut dst = vec![58, 0, 0x1e, 2, 0, 0, 1, 0];
        dst.extend_from_slice(&ECHO6);
        assert_eq!(
            events_of(&ipv6_raw(60, &dst)),
            ["ipv6.dstopts_unknown_opt", "ipv6.zero_len_padn"]
        );
        // Hop-by-hop of padding only (PadN 4), then a routing header of type 0.
        let mut hop = vec![43, 0, 1, 4, 0, 0, 0, 0, 58, 0, 0, 0, 0, 0, 0, 0];
        hop.extend_from_slice(&ECHO6);
        assert_eq!(
            events_of(&ipv6_raw(0, &hop)),
            ["ipv6.hopopts_only_padding", "ipv6.rh_type_0"]
        );
        // An option whose length runs past the header.
        let mut bad = vec![58, 0, 0x05, 9, 0, 0, 0, 0];
        bad.extend_from_slice(&ECHO6);
        assert_eq!(
            events_of(&ipv6_raw(60, &bad)),
            ["ipv6.exthdr_invalid_optlen"]
        );
        // Data after No Next Header; ICMPv4 in IPv6; a header cut short.
        assert_eq!(
            events_of(&ipv6_raw(59, &[1, 2])),
            ["ipv6.data_after_none_header"]
        );
        assert_eq!(
            events_of(&ipv6_raw(1, &[8, 0, 0, 0, 0, 0, 0, 0])),
            ["ipv6.icmpv4"]
        );
        assert_eq!(events_of(&ipv6_raw(60, &[58, 0, 1])), ["ipv6.trunc_exthdr"]);
        assert_eq!(
            events_of(&ipv6_raw(200, &[0; 8])),
            ["ipv6.unknown_next_header"]
        );
    }

    #[test]
    fn transport_header_events() {
        // IPv4 TCP with a 24-byte header carrying MSS twice is impossible in 4 bytes; use 28: MSS, MSS.
        let tcp_with = |opts: &[u8]| -> Vec<u8> {
            let hl = 20 + opts.len();
            let total = 20 + hl;
            let mut p = vec![
                0x45,
                0,
                0,
                total as u8,
                0,
                0,
                0,
                0,
                64,
                6,
                0,
                0,
                10,
                0,
                0,
                1,
                10,
                0,
                0,
                2,
            ];
            p.extend_from_slice(&[
                0,
                80,
                0,
                81,
                0,
                0,
                0,
                1,
                0,
                0,
                0,
                0,
                ((hl / 4) as u8) << 4,
                0x02,
            ]);
            p.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
            p.extend_from_slice(opts);
            p
        };
        assert_eq!(
            events_of(&tcp_with(&[2, 4, 5, 0xb4, 2, 4, 5, 0xb4])),
            ["tcp.opt_duplicate"]
        );
        assert_eq!(events_of(&tcp_with(&[3, 4, 7, 0])), ["tcp.opt_invalid_len"]);
        // An empty SACK (length 2) is allowed.
        assert!(events_of(&tcp_with(&[5, 2, 1, 1])).is_empty());
        assert_eq!(
            events_of(&tcp_with(&[8, 12, 0, 0])),
            ["tcp.opt_invalid_len"]
        );
        // A TCP header shorter than 20 bytes; a data offset below 5.
        let mut short = tcp_with(&[]);
        short.truncate(30);
        short[3] = 30;
        assert_eq!(events_of(&short), ["tcp.pkt_too_small"]);
        let mut low = tcp_with(&[]);
        low[32] = 0x40;
        assert_eq!(events_of(&low), ["tcp.invalid_optlen"]);
        // UDP: length field past the datagram, and a datagram under 8 bytes.
        let udp = |len: u16, body: usize| -> Vec<u8> {
            let total = 20 + 8 + body;
            let mut p = vec![
                0x45,
                0,
                0,
                total as u8,
                0,
                0,
                0,
                0,
                64,
                17,
                0,
                0,
                10,
                0,
                0,
                1,
                10,
                0,
                0,
                2,
            ];
            p.extend_from_slice(&[0, 53, 0, 53]);
            p.extend_from_slice(&len.to_be_bytes());
            p.extend_from_slice(&[0, 0]);
            p.extend(std::iter::repeat_n(0u8, body));
            p
        };
        assert!(events_of(&udp(12, 4)).is_empty());
        assert_eq!(events_of(&udp(20, 4)), ["udp.pkt_too_small"]);
        assert_eq!(events_of(&udp(10, 4)), ["udp.hlen_invalid"]);
        let mut tiny = udp(8, 0);
        tiny.truncate(24);
        tiny[3] = 24;
        assert_eq!(events_of(&tiny), ["udp.hlen_too_small"]);
        // SCTP: its 12-byte common header, whole (no event) or cut to 8 bytes (`sctp.pkt_too_small`).
        let sctp = |len: usize| -> Vec<u8> {
            let mut p = vec![0x45, 0, 0, (20 + len) as u8, 0, 0, 0, 0, 64, 132, 0, 0];
            p.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
            p.extend_from_slice(&[0x0b, 0x59, 0x0b, 0x59, 0, 0, 0, 1, 0, 0, 0, 0][..len]);
            p
        };
        assert!(events_of(&sctp(12)).is_empty());
        assert_eq!(events_of(&sctp(8)), ["sctp.pkt_too_small"]);
    }

    #[test]
    fn ipv4_header_events() {
        let mut p = vec![
            0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        p.extend_from_slice(&[0, 53, 0, 53, 0, 8, 0, 0]);
        assert!(events_of(&p).is_empty());
        let mut hl = p.clone();
        hl[0] = 0x44;
        assert_eq!(events_of(&hl), ["ipv4.hlen_too_small"]);
        let mut iplen = p.clone();
        iplen[3] = 16;
        assert_eq!(events_of(&iplen), ["ipv4.iplen_smaller_than_hlen"]);
        let mut trunc = p.clone();
        trunc[3] = 60;
        assert_eq!(events_of(&trunc), ["ipv4.trunc_pkt"]);
        assert_eq!(events_of(&p[..12]), ["ipv4.pkt_too_small"]);
        let v6 = ipv6_raw(58, &ECHO6);
        let d = decode_bytes(LinkType::IPV4, &v6, &DecodeOptions::default());
        assert_eq!(
            d.events.iter().map(|e| e.name()).collect::<Vec<_>>(),
            ["ipv4.wrong_ip_version"]
        );
    }
}
