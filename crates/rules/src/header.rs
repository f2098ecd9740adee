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
//! modifiers and an ignore mask), `window`, `seq`, `ack`, `itype`, `icode`, `icmp_id`, `icmp_seq`. Each parser
//! returns a one-line reason for a malformed value. `stream_size` is a condition on the TCP session rather than on
//! one packet's header: see [`crate::stream_size`].

use flowbundle_types::{DecodeEvent, DecodeEvents};

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
    /// The packet belongs to no flow (a fragment, a packet whose transport header did not decode, a frame without
    /// IP): rules with `flow`, `flowbits` or `app-layer-protocol` conditions, which need one, do not match it, as in
    /// Suricata.
    pub flowless: bool,
}

/// TCP header fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    /// The flag bits as on the wire: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10, URG 0x20, ECE 0x40, CWR 0x80.
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    pub window: u16,
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
    /// `fragoffset:[!|<|>]N`: the fragment offset ([`PacketHeader::frag_offset`]).
    FragOffset(Num),
    /// `sameip`: source and destination address are equal.
    SameIp,
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
        let name = if name == "tcp.flags" { "flags" } else { name };
        if name == "sameip" {
            return match v.map(str::trim).filter(|v| !v.is_empty()) {
                None => Ok(Some(HeaderTest::SameIp)),
                Some(v) => Err(format!("sameip takes no value, not `{}`", short(v))),
            };
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
            HeaderTest::FragOffset(n) => n.test(u64::from(h.frag_offset)),
            HeaderTest::SameIp => h.same_ip,
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
            }),
            ..PacketHeader::default()
        }
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
