//! How a packet's decoding ended, and the counters per outcome and reason.
//!
//! Every packet ends in exactly one [`Outcome`]. The reasons are small enums rather than strings so that
//! [`DecodeStats`] is a handful of fixed arrays: recording a packet is one array increment, with no allocation and
//! no hashing, and per-thread stats merge by addition.

use flowbundle_types::{DecodeEvent, DecodeEvents};
use serde::ser::{Serialize, SerializeMap, Serializer};

macro_rules! reasons {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $name { $($(#[$vm])* $v,)+ }
        impl $name {
            /// Every reason, in declaration order (the order of the counters).
            pub const ALL: &'static [$name] = &[$($name::$v,)+];
            /// Number of reasons.
            pub const COUNT: usize = Self::ALL.len();
            /// Short snake_case name, as it appears in JSON stats.
            pub fn name(self) -> &'static str {
                match self { $($name::$v => $s,)+ }
            }
        }
        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

reasons! {
    /// The header that was cut short (truncated) by the capture or the packet's own lengths.
    Layer {
        Link = "link",
        Vlan = "vlan",
        Mpls = "mpls",
        Pppoe = "pppoe",
        Ipv4 = "ipv4",
        Ipv6 = "ipv6",
        Ipv6Ext = "ipv6_ext",
        Tcp = "tcp",
        Udp = "udp",
        Icmp = "icmp",
        Icmpv6 = "icmpv6",
        Sctp = "sctp",
        Gre = "gre",
        Erspan = "erspan",
        Vxlan = "vxlan",
        GtpU = "gtpu",
        Nsh = "nsh",
    }
}

reasons! {
    /// Well-formed input the decoder does not follow.
    Unsupported {
        /// A link type other than Ethernet, raw IP, Linux cooked v1/v2, BSD loopback and Cisco HDLC.
        LinkType = "link_type",
        /// A non-IP EtherType (ARP, LLDP, 802.3 length field, ...).
        EtherType = "ether_type",
        /// A BSD loopback family other than IPv4 and IPv6.
        LoopbackFamily = "loopback_family",
        /// PPPoE discovery (no IP inside).
        PppoeDiscovery = "pppoe_discovery",
        /// A PPP protocol other than IPv4/IPv6 (LCP, IPCP, ...).
        PppProtocol = "ppp_protocol",
        /// An MPLS payload that is neither IPv4, IPv6 nor a pseudowire control word.
        MplsPayload = "mpls_payload",
        /// An NSH whose MD type is not 1 or 2, or whose next protocol is not IPv4, IPv6, Ethernet or MPLS.
        Nsh = "nsh",
        /// More encapsulation layers than `DecodeOptions::max_depth`.
        TooDeep = "too_deep",
    }
}

reasons! {
    /// Bytes that contradict their own header.
    Malformed {
        /// The IP version nibble is not what the layer below announced (or not 4/6 on raw links).
        IpVersion = "ip_version",
        /// IPv4 header length below 20 or total length below the header length.
        Ipv4Header = "ipv4_header",
        /// IPv4 header checksum wrong (only checked when `DecodeOptions::verify_ipv4_checksum`).
        Ipv4Checksum = "ipv4_checksum",
        /// IPv6 extension header chain too long or with two fragment headers.
        Ipv6Extensions = "ipv6_extensions",
        /// TCP data offset below 5.
        Tcp = "tcp_header",
        /// UDP length field below 8.
        Udp = "udp_length",
        /// PPPoE version/type or code wrong.
        Pppoe = "pppoe_header",
        /// GRE routing bit, unknown version, or version 1 without a key.
        Gre = "gre_header",
        /// A GTP-U extension chain that is empty-length or too long.
        GtpU = "gtpu_header",
        /// An NSH with a version other than 0, or a length below 8 bytes or not 24 bytes for MD type 1.
        Nsh = "nsh_header",
    }
}

/// How decoding a packet ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Outcome {
    /// Every header the decoder follows was read (L4 may still be absent: a non-first fragment, an unknown
    /// protocol, ESP).
    #[default]
    Decoded,
    /// A header was cut short.
    Truncated(Layer),
    /// Something well-formed the decoder does not follow.
    Unsupported(Unsupported),
    /// A header contradicts itself.
    Malformed(Malformed),
}

impl Outcome {
    pub fn is_decoded(self) -> bool {
        matches!(self, Outcome::Decoded)
    }
    /// `decoded`, `truncated`, `unsupported` or `malformed`.
    pub fn kind(self) -> &'static str {
        match self {
            Outcome::Decoded => "decoded",
            Outcome::Truncated(_) => "truncated",
            Outcome::Unsupported(_) => "unsupported",
            Outcome::Malformed(_) => "malformed",
        }
    }
    /// The reason's name (empty for `Decoded`).
    pub fn reason(self) -> &'static str {
        match self {
            Outcome::Decoded => "",
            Outcome::Truncated(l) => l.name(),
            Outcome::Unsupported(u) => u.name(),
            Outcome::Malformed(m) => m.name(),
        }
    }
}

impl core::fmt::Display for Outcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Outcome::Decoded => f.write_str("decoded"),
            o => write!(f, "{}({})", o.kind(), o.reason()),
        }
    }
}

/// Counters per outcome and reason, plus a few facts about decoded packets. Merge per-thread copies with
/// [`DecodeStats::merge`]. Serialises (serde) as an object whose reason maps list only non-zero counters:
///
/// ```json
/// {"packets":10,"decoded":8,"truncated":{"tcp":1},"unsupported":{"ether_type":1},"malformed":{},
///  "payload_truncated":0,"fragments":0,"tunnelled":0}
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeStats {
    pub decoded: u64,
    pub truncated: [u64; Layer::COUNT],
    pub unsupported: [u64; Unsupported::COUNT],
    pub malformed: [u64; Malformed::COUNT],
    /// Decoded packets whose IP datagram was longer than what was captured (snap length).
    pub payload_truncated: u64,
    /// Decoded IP fragments (first or not).
    pub fragments: u64,
    /// Decoded packets that crossed at least one tunnel.
    pub tunnelled: u64,
    /// Decoded packets by (innermost) network and transport layer: what Suricata's `decoder` stats count.
    pub layers: LayerCounts,
    /// Packets per decoder event ([`DecodeEvent`], indexed by its number): Suricata's `decoder.event.*`.
    pub events: [u64; DecodeEvent::COUNT],
}

/// Decoded packets by layer (innermost IP header and its transport), Suricata's `decoder.ipv4`, `decoder.tcp`, ...
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LayerCounts {
    pub ipv4: u64,
    pub ipv6: u64,
    pub tcp: u64,
    pub udp: u64,
    pub icmpv4: u64,
    pub icmpv6: u64,
    pub sctp: u64,
}

impl LayerCounts {
    /// Counts one decoded packet's layers.
    pub fn record(&mut self, d: &crate::Decoded<'_>) {
        match d.ip.map(|ip| ip.src) {
            Some(std::net::IpAddr::V4(_)) => self.ipv4 += 1,
            Some(std::net::IpAddr::V6(_)) => self.ipv6 += 1,
            None => {}
        }
        match d.l4 {
            crate::L4::Tcp(_) => self.tcp += 1,
            crate::L4::Udp(_) => self.udp += 1,
            crate::L4::Icmp(_) => self.icmpv4 += 1,
            crate::L4::Icmpv6(_) => self.icmpv6 += 1,
            crate::L4::Sctp(_) => self.sctp += 1,
            crate::L4::None | crate::L4::Other => {}
        }
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, o: &LayerCounts) {
        self.ipv4 += o.ipv4;
        self.ipv6 += o.ipv6;
        self.tcp += o.tcp;
        self.udp += o.udp;
        self.icmpv4 += o.icmpv4;
        self.icmpv6 += o.icmpv6;
        self.sctp += o.sctp;
    }
}

impl Default for DecodeStats {
    fn default() -> Self {
        DecodeStats {
            decoded: 0,
            truncated: [0; Layer::COUNT],
            unsupported: [0; Unsupported::COUNT],
            malformed: [0; Malformed::COUNT],
            payload_truncated: 0,
            fragments: 0,
            tunnelled: 0,
            layers: LayerCounts::default(),
            events: [0; DecodeEvent::COUNT],
        }
    }
}

impl Unsupported {
    /// A well-formed frame that carries no IP at all (ARP, LLDP, STP and other EtherTypes, PPPoE discovery, PPP
    /// control protocols): not IP, rather than a packet the decoder failed on.
    pub fn carries_no_ip(self) -> bool {
        matches!(
            self,
            Unsupported::EtherType | Unsupported::PppoeDiscovery | Unsupported::PppProtocol
        )
    }
}

impl DecodeStats {
    /// Counts one outcome.
    #[inline]
    pub fn record_outcome(&mut self, o: Outcome) {
        match o {
            Outcome::Decoded => self.decoded += 1,
            Outcome::Truncated(l) => self.truncated[l as usize] += 1,
            Outcome::Unsupported(u) => self.unsupported[u as usize] += 1,
            Outcome::Malformed(m) => self.malformed[m as usize] += 1,
        }
    }

    /// Counts one decoded packet (outcome and facts).
    #[inline]
    pub fn record(&mut self, d: &crate::Decoded<'_>) {
        self.record_outcome(d.outcome);
        if d.outcome.is_decoded() {
            self.payload_truncated += u64::from(d.payload_truncated);
            self.fragments += u64::from(d.ip.is_some_and(|ip| ip.is_fragment()));
            self.tunnelled += u64::from(d.tunnels > 0);
            self.layers.record(d);
        }
        self.record_events(d.events);
    }

    /// Counts each event of one packet.
    #[inline]
    pub fn record_events(&mut self, events: DecodeEvents) {
        if !events.is_empty() {
            for e in events.iter() {
                self.events[e as usize] += 1;
            }
        }
    }

    /// The packets that had event `e`.
    pub fn event_count(&self, e: DecodeEvent) -> u64 {
        self.events[e as usize]
    }

    /// Adds another set of counters.
    pub fn merge(&mut self, other: &DecodeStats) {
        self.decoded += other.decoded;
        for (a, b) in self.truncated.iter_mut().zip(other.truncated) {
            *a += b;
        }
        for (a, b) in self.unsupported.iter_mut().zip(other.unsupported) {
            *a += b;
        }
        for (a, b) in self.malformed.iter_mut().zip(other.malformed) {
            *a += b;
        }
        self.payload_truncated += other.payload_truncated;
        self.fragments += other.fragments;
        self.tunnelled += other.tunnelled;
        self.layers.merge(&other.layers);
        for (a, b) in self.events.iter_mut().zip(other.events) {
            *a += b;
        }
    }

    /// Packets counted.
    pub fn packets(&self) -> u64 {
        self.decoded + self.failed()
    }

    /// Packets not decoded (truncated, unsupported or malformed).
    pub fn failed(&self) -> u64 {
        self.truncated.iter().sum::<u64>()
            + self.unsupported.iter().sum::<u64>()
            + self.malformed.iter().sum::<u64>()
    }

    /// Frames that carry no IP ([`Unsupported::carries_no_ip`]); they are among [`DecodeStats::failed`].
    pub fn not_ip(&self) -> u64 {
        Unsupported::ALL
            .iter()
            .filter(|u| u.carries_no_ip())
            .map(|&u| self.unsupported[u as usize])
            .sum()
    }

    /// The count for one outcome.
    pub fn count(&self, o: Outcome) -> u64 {
        match o {
            Outcome::Decoded => self.decoded,
            Outcome::Truncated(l) => self.truncated[l as usize],
            Outcome::Unsupported(u) => self.unsupported[u as usize],
            Outcome::Malformed(m) => self.malformed[m as usize],
        }
    }

    /// Non-zero failure counters as (outcome, count), in declaration order.
    pub fn failures(&self) -> Vec<(Outcome, u64)> {
        let t = Layer::ALL.iter().map(|&l| Outcome::Truncated(l));
        let u = Unsupported::ALL.iter().map(|&r| Outcome::Unsupported(r));
        let m = Malformed::ALL.iter().map(|&r| Outcome::Malformed(r));
        t.chain(u)
            .chain(m)
            .map(|o| (o, self.count(o)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
}

struct NonZero<'a, R: Copy + 'static> {
    all: &'static [R],
    counts: &'a [u64],
    name: fn(R) -> &'static str,
}

impl<R: Copy + 'static> Serialize for NonZero<'_, R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.counts.iter().filter(|&&c| c > 0).count();
        let mut m = s.serialize_map(Some(n))?;
        for (&r, &c) in self.all.iter().zip(self.counts) {
            if c > 0 {
                m.serialize_entry((self.name)(r), &c)?;
            }
        }
        m.end()
    }
}

impl Serialize for DecodeStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("packets", &self.packets())?;
        m.serialize_entry("decoded", &self.decoded)?;
        m.serialize_entry(
            "truncated",
            &NonZero {
                all: Layer::ALL,
                counts: &self.truncated,
                name: Layer::name,
            },
        )?;
        m.serialize_entry(
            "unsupported",
            &NonZero {
                all: Unsupported::ALL,
                counts: &self.unsupported,
                name: Unsupported::name,
            },
        )?;
        m.serialize_entry(
            "malformed",
            &NonZero {
                all: Malformed::ALL,
                counts: &self.malformed,
                name: Malformed::name,
            },
        )?;
        m.serialize_entry("payload_truncated", &self.payload_truncated)?;
        m.serialize_entry("fragments", &self.fragments)?;
        m.serialize_entry("tunnelled", &self.tunnelled)?;
        if self.events.iter().any(|&c| c > 0) {
            m.serialize_entry(
                "events",
                &NonZero {
                    all: DecodeEvent::ALL,
                    counts: &self.events,
                    name: DecodeEvent::name,
                },
            )?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_merge_and_serialise() {
        let mut a = DecodeStats::default();
        a.record_outcome(Outcome::Decoded);
        a.record_outcome(Outcome::Truncated(Layer::Tcp));
        a.record_outcome(Outcome::Unsupported(Unsupported::EtherType));
        let mut b = DecodeStats::default();
        b.record_outcome(Outcome::Truncated(Layer::Tcp));
        b.record_outcome(Outcome::Malformed(Malformed::Udp));
        a.merge(&b);
        assert_eq!(a.packets(), 5);
        assert_eq!(a.failed(), 4);
        assert_eq!(a.count(Outcome::Truncated(Layer::Tcp)), 2);
        assert_eq!(
            a.failures(),
            vec![
                (Outcome::Truncated(Layer::Tcp), 2),
                (Outcome::Unsupported(Unsupported::EtherType), 1),
                (Outcome::Malformed(Malformed::Udp), 1)
            ]
        );
        let j = serde_json::to_string(&a).unwrap();
        assert_eq!(
            j,
            r#"{"packets":5,"decoded":1,"truncated":{"tcp":2},"unsupported":{"ether_type":1},"malformed":{"udp_length":1},"payload_truncated":0,"fragments":0,"tunnelled":0}"#
        );
        assert_eq!(
            Outcome::Truncated(Layer::Ipv6Ext).to_string(),
            "truncated(ipv6_ext)"
        );
    }
}
