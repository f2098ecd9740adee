//! # Flow keys: the canonical 5-tuple, the paper's FID, and ports for fragments
//!
//! * [`FlowKey`] is the *bidirectional* 5-tuple: the (address, port) endpoint that sorts lower is stored first, so
//!   both directions of a connection produce the same key, and [`KeySide`] says which way a packet went. The
//!   connection table (inspect) and the connection-granular schedulers key on it.
//! * [`Fid`] is the ANCS'10 paper's flow identifier: the IP pair only, smaller address first (§3: ports are not
//!   parsed, are absent from non-first fragments, and did not change the distribution). `dh`, `lfb` and
//!   `lfb-affinity` hash it with CRC-16.
//! * [`FragmentPorts`] gives non-first fragments the ports of their first fragment, for paths that do not
//!   defragment: a bounded, direct-mapped cache keyed by (source, destination, protocol, IP id), filled from first
//!   fragments. Fragments that arrive before their first fragment miss (counted); the defragmenter
//!   ([`crate::defrag`]) handles every order and is what the dispatcher uses.
//!
//! Addresses are stored as 16 bytes (IPv4 in the first 4, the rest zero) with a family flag, so a key is a
//! fixed 41-byte value that compares and hashes without branching on the family.
//!
//! ## Beyond the 5-tuple, as Suricata keys flows
//! * **ICMP**: an endpoint of an ICMP flow is (address, message type it sends): an echo request from A to B and its
//!   reply from B to A are one flow (A sends type 8, B type 0), while an echo request from B to A starts another
//!   (Suricata pairs ICMP packets by type and counterpart type, `CmpFlowICMPPacket`). Types without a counterpart
//!   (router advertisements, ...) give the other endpoint type 0, as Suricata leaves it. ICMPv4 errors filed as
//!   flows of their own (see below) are keyed by their address pair alone.
//! * **Tunnel depth**: [`Decoded::key_depth`], the tunnel layers the packet crossed (Suricata's recursion level,
//!   `decoder.recursion-level.use-for-tracking`, on by default): the same inner 5-tuple at two depths is two flows.
//! * **ICMPv4 errors**, with [`DecodeOptions::icmp_errors_in_quoted_flow`](crate::DecodeOptions): a destination
//!   unreachable that quotes a TCP or UDP packet belongs to the quoted packet's flow (its key is that flow's,
//!   [`quoted_flow`]), and ICMPv4 error messages never start a flow of their own in the engine
//!   ([`is_icmpv4_error`]), as in Suricata. Off (the default), an error is a flow of its own, as nDPI counts it:
//!   the choice has to be made before scheduling, since it decides which flow, and so which bundle, the packet
//!   belongs to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::decode::{Decoded, L4};

/// Which endpoint of its canonical [`FlowKey`] sent a packet (the key orders the two endpoints, so this is not the
/// client/server direction: the engine learns the client side and derives `flowbundle_types::Direction` from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeySide {
    /// The packet's source is the key's `lo` endpoint.
    Forward,
    /// The packet's source is the key's `hi` endpoint.
    Reverse,
}

impl KeySide {
    pub fn flip(self) -> KeySide {
        match self {
            KeySide::Forward => KeySide::Reverse,
            KeySide::Reverse => KeySide::Forward,
        }
    }
    /// 0 for forward, 1 for reverse: an index for per-direction arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

fn addr16(a: IpAddr) -> ([u8; 16], bool) {
    match a {
        IpAddr::V4(v) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&v.octets());
            (b, false)
        }
        IpAddr::V6(v) => (v.octets(), true),
    }
}

fn ip_of(b: &[u8; 16], v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(*b))
    } else {
        IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
    }
}

/// The canonical bidirectional 5-tuple, with the ICMP message types and the tunnel depth (see the module
/// documentation). Protocols without ports (ICMP, GRE, ESP, ...) have ports 0, so all such packets between two
/// hosts form one flow per protocol (per pair of ICMP types for ICMP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub lo_addr: [u8; 16],
    pub hi_addr: [u8; 16],
    pub lo_port: u16,
    pub hi_port: u16,
    pub proto: u8,
    pub v6: bool,
    /// ICMP flows: the message type the `lo` endpoint sends (0 on other protocols).
    pub lo_icmp: u8,
    /// ICMP flows: the message type the `hi` endpoint sends (0 on other protocols).
    pub hi_icmp: u8,
    /// Tunnel layers the flow's packets crossed ([`Decoded::key_depth`]).
    pub depth: u8,
}

/// The type that answers ICMPv4 message type `t` (echo, timestamp, information, address mask), as Suricata pairs
/// them; 0 for types without one.
pub fn icmpv4_counterpart(t: u8) -> u8 {
    match t {
        8 => 0,
        0 => 8,
        13 => 14,
        14 => 13,
        15 => 16,
        16 => 15,
        17 => 18,
        18 => 17,
        _ => 0,
    }
}

/// The type that answers ICMPv6 message type `t` (echo, neighbour and router discovery, MLD, node information,
/// home agent discovery, mobile prefix), as Suricata pairs them; 0 for types without one.
pub fn icmpv6_counterpart(t: u8) -> u8 {
    match t {
        128 => 129,
        129 => 128,
        130 => 131,
        131 => 130,
        133 => 134,
        134 => 133,
        135 => 136,
        136 => 135,
        139 => 140,
        140 => 139,
        144 => 145,
        145 => 144,
        146 => 147,
        147 => 146,
        _ => 0,
    }
}

/// ICMPv4 error messages (destination unreachable, source quench, redirect, time exceeded, parameter problem):
/// they report on another packet, and Suricata never starts a flow for one (`ICMPV4_IS_ERROR_MSG`).
pub fn is_icmpv4_error(d: &Decoded<'_>) -> bool {
    matches!(d.l4, L4::Icmp(i) if matches!(i.msg_type, 3 | 4 | 5 | 11 | 12))
        && d.ip.is_some_and(|ip| !ip.src.is_ipv6())
}

/// The flow an ICMPv4 destination unreachable belongs to when decoded with
/// [`DecodeOptions::icmp_errors_in_quoted_flow`](crate::DecodeOptions): the key of the TCP or UDP packet it quotes
/// (the quoted IPv4 header, then a whole UDP header or the first 20 bytes of the TCP header, as Suricata requires
/// before it files the message under that flow). `None` for any other packet, and without the option.
pub fn quoted_flow(d: &Decoded<'_>) -> Option<FlowKey> {
    if !d.icmp_errors_in_quoted_flow {
        return None;
    }
    let L4::Icmp(i) = d.l4 else { return None };
    if i.msg_type != crate::wire::icmp::DEST_UNREACHABLE || i.code > 15 {
        return None;
    }
    let q = d.payload;
    let ihl = usize::from(*q.first()? & 0x0f) * 4;
    if *q.first()? >> 4 != 4 || ihl < 20 {
        return None;
    }
    let proto = *q.get(9)?;
    let need = match proto {
        6 => 20,
        17 => 8,
        _ => return None,
    };
    let l4 = q.get(ihl..ihl + need)?;
    let addr = |at: usize| -> Option<IpAddr> {
        let b: [u8; 4] = q.get(at..at + 4)?.try_into().ok()?;
        Some(IpAddr::V4(Ipv4Addr::from(b)))
    };
    let port = |at: usize| u16::from_be_bytes([l4[at], l4[at + 1]]);
    let (key, _) = FlowKey::build(
        (addr(12)?, port(0), 0),
        (addr(16)?, port(2), 0),
        proto,
        d.key_depth,
    );
    Some(key)
}

/// The bundle a decoded packet's flow is filed under: the CRC-16 of its [`Fid`] (`dh`'s and `lfb`'s bundle), of the
/// flow it quotes for an ICMPv4 error filed there ([`quoted_flow`]), 0 for a packet without IP addresses. The one
/// definition the engine's single-threaded loop, its workers and [`crate::keyonly`] agree on.
#[inline]
pub fn bundle_of(d: &Decoded<'_>) -> u16 {
    match quoted_flow(d) {
        Some(k) => k.fid().crc16(),
        None => Fid::from_decoded(d).map_or(0, |f| f.crc16()),
    }
}

impl FlowKey {
    /// The key of a packet from `src:sport` to `dst:dport`, and the packet's direction. Both directions of a
    /// conversation give the same key. (Mixing families is a caller error; the key then uses IPv6 layout.)
    #[inline]
    pub fn new(src: IpAddr, sport: u16, dst: IpAddr, dport: u16, proto: u8) -> (FlowKey, KeySide) {
        FlowKey::build((src, sport, 0), (dst, dport, 0), proto, 0)
    }

    /// The key of a packet from `src` to `dst`, each given as (address, port, ICMP type it sends), at tunnel depth
    /// `depth`, and the packet's direction.
    #[inline]
    pub fn build(
        src: (IpAddr, u16, u8),
        dst: (IpAddr, u16, u8),
        proto: u8,
        depth: u8,
    ) -> (FlowKey, KeySide) {
        let (s, sv6) = addr16(src.0);
        let (d, dv6) = addr16(dst.0);
        let v6 = sv6 || dv6;
        // Compare endpoints as integers: a big-endian u128 orders exactly like the bytes, without a memcmp call.
        let forward =
            (u128::from_be_bytes(s), src.1, src.2) <= (u128::from_be_bytes(d), dst.1, dst.2);
        let ((lo, lo_port, lo_icmp), (hi, hi_port, hi_icmp), side) = if forward {
            ((s, src.1, src.2), (d, dst.1, dst.2), KeySide::Forward)
        } else {
            ((d, dst.1, dst.2), (s, src.1, src.2), KeySide::Reverse)
        };
        (
            FlowKey {
                lo_addr: lo,
                hi_addr: hi,
                lo_port,
                hi_port,
                proto,
                v6,
                lo_icmp,
                hi_icmp,
                depth,
            },
            side,
        )
    }

    /// The key of a decoded packet: `None` without an IP header. Ports come from TCP, UDP or SCTP; a non-first
    /// fragment has none (ports 0): use [`FlowKey::from_decoded_with`] or defragment first. An ICMP message gets
    /// its type pair and an ICMPv4 destination unreachable the flow it quotes ([`quoted_flow`]; the side is then
    /// that of the quoted packet's sender, which the message goes back to: the engine decides the direction
    /// against the flow it finds).
    #[inline]
    pub fn from_decoded(d: &Decoded<'_>) -> Option<(FlowKey, KeySide)> {
        let ip = d.ip?;
        let (sp, dp) = d.ports().unwrap_or((0, 0));
        let (st, dt) = match d.l4 {
            L4::Tcp(_) | L4::Udp(_) | L4::Sctp(_) => (0, 0),
            L4::Icmp(i) if !ip.src.is_ipv6() => {
                if let Some(k) = quoted_flow(d) {
                    let towards_lo = addr16(ip.dst).0 == k.lo_addr;
                    return Some((
                        k,
                        if towards_lo {
                            KeySide::Reverse
                        } else {
                            KeySide::Forward
                        },
                    ));
                }
                if is_icmpv4_error(d) {
                    // An error filed as a flow of its own (Suricata files none): one per address pair, as nDPI
                    // counts them, whichever side reports.
                    (0, 0)
                } else {
                    (i.msg_type, icmpv4_counterpart(i.msg_type))
                }
            }
            L4::Icmpv6(i) => (i.msg_type, icmpv6_counterpart(i.msg_type)),
            _ => (0, 0),
        };
        Some(FlowKey::build(
            (ip.src, sp, st),
            (ip.dst, dp, dt),
            ip.proto,
            d.key_depth,
        ))
    }

    /// The same key without the ICMP types and the tunnel depth: the plain canonical 5-tuple, as tools that key
    /// flows by their addresses, ports and protocol alone (nDPI, the ground truth of its captures) name it.
    pub fn five_tuple(&self) -> FlowKey {
        FlowKey {
            lo_icmp: 0,
            hi_icmp: 0,
            depth: 0,
            ..*self
        }
    }

    /// Like [`FlowKey::from_decoded`], but non-first fragments get their ports from `cache` (which first fragments
    /// fill as they pass here). `ts_ns` is the packet's capture time, for the cache's timeout.
    pub fn from_decoded_with(
        d: &Decoded<'_>,
        cache: &mut FragmentPorts,
        ts_ns: u64,
    ) -> Option<(FlowKey, KeySide)> {
        let ip = d.ip?;
        match cache.observe(d, ts_ns) {
            Some((sp, dp)) => Some(FlowKey::build(
                (ip.src, sp, 0),
                (ip.dst, dp, 0),
                ip.proto,
                d.key_depth,
            )),
            None => FlowKey::from_decoded(d),
        }
    }

    pub fn lo_ip(&self) -> IpAddr {
        ip_of(&self.lo_addr, self.v6)
    }
    pub fn hi_ip(&self) -> IpAddr {
        ip_of(&self.hi_addr, self.v6)
    }

    /// The paper's flow identifier of this flow (its IP pair).
    pub fn fid(&self) -> Fid {
        // The key sorts by (address, port): the lower address is `lo` unless the addresses are equal, in which
        // case the order does not matter.
        Fid {
            lo: self.lo_addr,
            hi: self.hi_addr,
            v6: self.v6,
        }
    }

    /// (source address, destination address, source port, destination port) of a packet going in direction `dir`.
    pub fn endpoints(&self, dir: KeySide) -> (IpAddr, IpAddr, u16, u16) {
        match dir {
            KeySide::Forward => (self.lo_ip(), self.hi_ip(), self.lo_port, self.hi_port),
            KeySide::Reverse => (self.hi_ip(), self.lo_ip(), self.hi_port, self.lo_port),
        }
    }
}

impl core::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (lo, hi) = (self.lo_ip(), self.hi_ip());
        if self.v6 {
            write!(
                f,
                "{} [{}]:{} <-> [{}]:{}",
                self.proto, lo, self.lo_port, hi, self.hi_port
            )
        } else {
            write!(
                f,
                "{} {}:{} <-> {}:{}",
                self.proto, lo, self.lo_port, hi, self.hi_port
            )
        }
    }
}

/// The ANCS'10 flow identifier: source and destination IP, smaller address first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fid {
    pub lo: [u8; 16],
    pub hi: [u8; 16],
    pub v6: bool,
}

impl Fid {
    #[inline]
    pub fn new(a: IpAddr, b: IpAddr) -> Fid {
        let (a, av6) = addr16(a);
        let (b, bv6) = addr16(b);
        let (lo, hi) = if u128::from_be_bytes(a) <= u128::from_be_bytes(b) {
            (a, b)
        } else {
            (b, a)
        };
        Fid {
            lo,
            hi,
            v6: av6 || bv6,
        }
    }

    /// The FID of a decoded packet (any IP packet, fragments included).
    #[inline]
    pub fn from_decoded(d: &Decoded<'_>) -> Option<Fid> {
        d.ip.map(|ip| Fid::new(ip.src, ip.dst))
    }

    /// The bytes the CRC-16 covers: smaller address then larger, 8 bytes for IPv4, 32 for IPv6.
    #[inline]
    pub fn bytes(&self) -> ([u8; 32], usize) {
        let mut b = [0u8; 32];
        if self.v6 {
            b[..16].copy_from_slice(&self.lo);
            b[16..].copy_from_slice(&self.hi);
            (b, 32)
        } else {
            b[..4].copy_from_slice(&self.lo[..4]);
            b[4..8].copy_from_slice(&self.hi[..4]);
            (b, 8)
        }
    }

    /// CRC-16 of [`Fid::bytes`]: the bundle number of `dh`, `lfb` and `lfb-affinity`.
    #[inline]
    pub fn crc16(&self) -> u16 {
        let (b, n) = self.bytes();
        crate::hash::crc16(&b[..n])
    }

    pub fn lo_ip(&self) -> IpAddr {
        ip_of(&self.lo, self.v6)
    }
    pub fn hi_ip(&self) -> IpAddr {
        ip_of(&self.hi, self.v6)
    }
}

/// Counters of a [`FragmentPorts`] cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FragmentPortsStats {
    /// First fragments whose ports were stored.
    pub stored: u64,
    /// Non-first fragments that found their ports.
    pub hits: u64,
    /// Non-first fragments that found nothing (first fragment not seen yet, evicted or expired).
    pub misses: u64,
    /// Stored entries overwritten by another datagram before they expired (the cache's capacity limit).
    pub evicted: u64,
    /// Lookups that found their entry older than the timeout.
    pub expired: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct PortsEntry {
    src: [u8; 16],
    dst: [u8; 16],
    id: u32,
    proto: u8,
    v6: bool,
    used: bool,
    ports: (u16, u16),
    ts_ns: u64,
}

/// Ports of recent first fragments, so that later fragments reach the same flow. Fixed memory: `capacity` entries
/// of 56 bytes allocated once, direct-mapped by a hash of (source, destination, protocol, IP id); a new first
/// fragment overwrites whatever occupies its slot (counted in `evicted` when that entry was still live).
#[derive(Debug, Clone)]
pub struct FragmentPorts {
    slots: Box<[PortsEntry]>,
    mask: usize,
    timeout_ns: u64,
    hasher: foldhash::fast::FixedState,
    stats: FragmentPortsStats,
}

impl FragmentPorts {
    /// A cache of `capacity` entries (rounded up to a power of two, at least 16) that forgets first fragments
    /// after `timeout_ns` of capture time.
    pub fn new(capacity: usize, timeout_ns: u64) -> Self {
        let n = capacity.max(16).next_power_of_two();
        FragmentPorts {
            slots: vec![PortsEntry::default(); n].into_boxed_slice(),
            mask: n - 1,
            timeout_ns,
            hasher: foldhash::fast::FixedState::with_seed(0x5eed_f7a6),
            stats: FragmentPortsStats::default(),
        }
    }

    pub fn stats(&self) -> FragmentPortsStats {
        self.stats
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Looks at one decoded packet: a first fragment with ports is remembered; a later fragment gets the ports of
    /// its first fragment if they are known. Returns `Some(ports)` only for later fragments that hit.
    pub fn observe(&mut self, d: &Decoded<'_>, ts_ns: u64) -> Option<(u16, u16)> {
        let ip = d.ip?;
        // Only port-carrying protocols need their ports found; other fragments are not counted.
        if !ip.fragmented || !matches!(ip.proto, 6 | 17 | 132) {
            return None;
        }
        let (src, v6) = addr16(ip.src);
        let (dst, _) = addr16(ip.dst);
        let slot = {
            use core::hash::BuildHasher;
            (self.hasher.hash_one((&src, &dst, ip.id, ip.proto)) as usize) & self.mask
        };
        let e = &mut self.slots[slot];
        if ip.frag_offset == 0 {
            let ports = match d.l4 {
                L4::Tcp(_) | L4::Udp(_) | L4::Sctp(_) => d.ports()?,
                _ => return None,
            };
            let other =
                e.used && !(e.src == src && e.dst == dst && e.id == ip.id && e.proto == ip.proto);
            if other && ts_ns.saturating_sub(e.ts_ns) <= self.timeout_ns {
                self.stats.evicted += 1;
            }
            *e = PortsEntry {
                src,
                dst,
                id: ip.id,
                proto: ip.proto,
                v6,
                used: true,
                ports,
                ts_ns,
            };
            self.stats.stored += 1;
            return None;
        }
        if e.used
            && e.src == src
            && e.dst == dst
            && e.id == ip.id
            && e.proto == ip.proto
            && e.v6 == v6
        {
            if ts_ns.saturating_sub(e.ts_ns) > self.timeout_ns {
                e.used = false;
                self.stats.expired += 1;
                self.stats.misses += 1;
                return None;
            }
            self.stats.hits += 1;
            return Some(e.ports);
        }
        self.stats.misses += 1;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::hex;
    use crate::{DecodeOptions, decode_bytes};
    use flowbundle_ingest::LinkType;

    /// An IPv4 packet (no link header) from `10.0.0.src` to `10.0.0.dst` with protocol `proto` and `l4` after it.
    fn ipv4(src: u8, dst: u8, proto: u8, l4: &[u8]) -> Vec<u8> {
        let mut b = vec![0x45, 0];
        b.extend_from_slice(&(20 + l4.len() as u16).to_be_bytes());
        b.extend_from_slice(&[0, 1, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, src, 10, 0, 0, dst]);
        b.extend_from_slice(l4);
        b
    }

    fn key(b: &[u8], opts: &DecodeOptions) -> (FlowKey, KeySide) {
        FlowKey::from_decoded(&decode_bytes(LinkType::RAW, b, opts)).expect("an IP packet")
    }

    #[test]
    fn an_icmp_echo_flow_is_keyed_by_the_requests_direction() {
        let o = DecodeOptions::default();
        let echo = |src, dst, t| ipv4(src, dst, 1, &[t, 0, 0, 0, 0, 7, 0, 1]);
        let (request, rd) = key(&echo(1, 2, 8), &o);
        let (reply, pd) = key(&echo(2, 1, 0), &o);
        assert_eq!(request, reply, "a request and its reply are one flow");
        assert_ne!(rd, pd);
        // A request from the other host starts another flow, and so does its reply.
        let (other, _) = key(&echo(2, 1, 8), &o);
        assert_ne!(other, request);
        assert_eq!(key(&echo(1, 2, 0), &o).0, other);
        // Types without a counterpart pair with type 0 on the other side.
        let (advert, _) = key(&echo(1, 2, 9), &o);
        assert_eq!((advert.lo_icmp, advert.hi_icmp), (9, 0));
        assert_eq!(request.five_tuple(), advert.five_tuple());
    }

    #[test]
    fn the_tunnel_depth_is_part_of_the_key_unless_switched_off() {
        // The same ICMP echo request bare and inside IPv4-in-IPv4.
        let inner = ipv4(1, 2, 1, &[8, 0, 0, 0, 0, 7, 0, 1]);
        let outer = ipv4(8, 9, 4, &inner);
        let on = DecodeOptions {
            decap_tunnels: true,
            ..DecodeOptions::default()
        };
        let (bare, _) = key(&inner, &on);
        let (tunnelled, _) = key(&outer, &on);
        assert_eq!((bare.depth, tunnelled.depth), (0, 1));
        assert_ne!(bare, tunnelled);
        assert_eq!(
            bare,
            FlowKey {
                depth: 0,
                ..tunnelled
            }
        );
        let off = DecodeOptions {
            tunnel_depth_in_key: false,
            ..on
        };
        assert_eq!(key(&outer, &off).0, bare);
    }

    #[test]
    fn a_destination_unreachable_belongs_to_the_flow_it_quotes() {
        let o = DecodeOptions {
            icmp_errors_in_quoted_flow: true,
            ..DecodeOptions::default()
        };
        // A UDP datagram 10.0.0.1:5000 -> 10.0.0.2:53, and a router's port unreachable about it to 10.0.0.1.
        let udp = ipv4(1, 2, 17, &hex("1388 0035 0008 0000"));
        let (flow, _) = key(&udp, &o);
        let mut icmp = vec![3, 3, 0, 0, 0, 0, 0, 0];
        icmp.extend_from_slice(&udp);
        let unreachable = ipv4(7, 1, 1, &icmp);
        let d = decode_bytes(LinkType::RAW, &unreachable, &o);
        assert!(is_icmpv4_error(&d));
        assert_eq!(quoted_flow(&d), Some(flow));
        // It travels back to the quoted packet's sender, the key's `lo` side here.
        assert_eq!(FlowKey::from_decoded(&d), Some((flow, KeySide::Reverse)));
        // A quote cut inside the UDP header, or another error type, names no flow.
        let cut = ipv4(7, 1, 1, &icmp[..icmp.len() - 2]);
        assert_eq!(quoted_flow(&decode_bytes(LinkType::RAW, &cut, &o)), None);
        icmp[0] = 11;
        let exceeded = ipv4(7, 1, 1, &icmp);
        let exceeded = decode_bytes(LinkType::RAW, &exceeded, &o);
        assert!(is_icmpv4_error(&exceeded));
        assert_eq!(quoted_flow(&exceeded), None);
        // Without the option the message is keyed as its own flow, by its address pair (either side reporting).
        let own = decode_bytes(LinkType::RAW, &unreachable, &DecodeOptions::default());
        assert_eq!(quoted_flow(&own), None);
        let (k, _) = FlowKey::from_decoded(&own).expect("keyed");
        assert_eq!((k.proto, k.lo_icmp, k.hi_icmp), (1, 0, 0));
    }
}
