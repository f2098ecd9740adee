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
//! fixed 38-byte value that compares and hashes without branching on the family.

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

/// The canonical bidirectional 5-tuple. Protocols without ports (ICMP, GRE, ESP, ...) have ports 0, so all such
/// packets between two hosts form one flow per protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub lo_addr: [u8; 16],
    pub hi_addr: [u8; 16],
    pub lo_port: u16,
    pub hi_port: u16,
    pub proto: u8,
    pub v6: bool,
}

impl FlowKey {
    /// The key of a packet from `src:sport` to `dst:dport`, and the packet's direction. Both directions of a
    /// conversation give the same key. (Mixing families is a caller error; the key then uses IPv6 layout.)
    #[inline]
    pub fn new(src: IpAddr, sport: u16, dst: IpAddr, dport: u16, proto: u8) -> (FlowKey, KeySide) {
        let (s, sv6) = addr16(src);
        let (d, dv6) = addr16(dst);
        let v6 = sv6 || dv6;
        // Compare endpoints as integers: a big-endian u128 orders exactly like the bytes, without a memcmp call.
        if (u128::from_be_bytes(s), sport) <= (u128::from_be_bytes(d), dport) {
            (
                FlowKey {
                    lo_addr: s,
                    hi_addr: d,
                    lo_port: sport,
                    hi_port: dport,
                    proto,
                    v6,
                },
                KeySide::Forward,
            )
        } else {
            (
                FlowKey {
                    lo_addr: d,
                    hi_addr: s,
                    lo_port: dport,
                    hi_port: sport,
                    proto,
                    v6,
                },
                KeySide::Reverse,
            )
        }
    }

    /// The key of a decoded packet: `None` without an IP header. Ports come from TCP, UDP or SCTP; a non-first
    /// fragment has none (ports 0): use [`FlowKey::from_decoded_with`] or defragment first.
    #[inline]
    pub fn from_decoded(d: &Decoded<'_>) -> Option<(FlowKey, KeySide)> {
        let ip = d.ip?;
        let (sp, dp) = d.ports().unwrap_or((0, 0));
        Some(FlowKey::new(ip.src, sp, ip.dst, dp, ip.proto))
    }

    /// Like [`FlowKey::from_decoded`], but non-first fragments get their ports from `cache` (which first fragments
    /// fill as they pass here). `ts_ns` is the packet's capture time, for the cache's timeout.
    pub fn from_decoded_with(
        d: &Decoded<'_>,
        cache: &mut FragmentPorts,
        ts_ns: u64,
    ) -> Option<(FlowKey, KeySide)> {
        let ip = d.ip?;
        let (sp, dp) = match cache.observe(d, ts_ns) {
            Some(p) => p,
            None => d.ports().unwrap_or((0, 0)),
        };
        Some(FlowKey::new(ip.src, sp, ip.dst, dp, ip.proto))
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
