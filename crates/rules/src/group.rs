//! Rule groups: which rules a packet can meet at all, decided from its header before any rule is looked at.
//!
//! Rules without content (header, `flow`, flowbit and threshold conditions only) have no fast pattern to find
//! them: before this index every packet checked every one of them. ET Open has about 1,500 such rules, nearly all
//! lists of addresses (Tor nodes, Spamhaus DROP, DShield, CI Army, botnet C&Cs: Suricata's "IP-only" rules), and
//! checking them took three quarters of the matching time (see BENCHMARKS.md, "Real rule sets"). Here each such rule
//! is filed under one address field whose set is narrow ([`narrow`]): its source set if narrow, else its
//! destination set, else in a short list checked on every packet. A packet then meets only the rules filed under an
//! interval that holds its source (or destination) address, plus the short list; each is still checked in full
//! ([`crate::scan`]'s `applies`), so the index only ever removes rules that could not match.
//!
//! Rules are handed out in rule order, as the plain list gave them, so flowbits set by one header rule and read by
//! a later one behave as before.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::addr::{AddrSet, Point, PortSet};
use crate::rule::{Proto, Rule};
use crate::ruleset::{Entry, Table, Target};
use crate::scan::{PacketCtx, Transport};

/// Most addresses (IPv4) in a set filed in the index: wider sets (`$HOME_NET`, `!$HOME_NET`, `any`) would put the
/// rule under most intervals.
const NARROW_V4: u64 = 1 << 24;
/// Most addresses (IPv6) in a set filed in the index.
const NARROW_V6: u128 = 1 << 80;

/// Whether an address set is narrow enough to file a rule under.
fn narrow(set: &AddrSet) -> bool {
    if set.is_any() {
        return false;
    }
    let v4: u64 = set
        .v4_ranges()
        .iter()
        .map(|&(lo, hi)| u64::from(hi - lo) + 1)
        .sum();
    let v6 = set.v6_ranges().iter().fold(0u128, |a, &(lo, hi)| {
        a.saturating_add(hi - lo).saturating_add(1)
    });
    v4 <= NARROW_V4 && v6 <= NARROW_V6
}

/// Rules filed under intervals of one value type: the value space cut where any rule's interval starts or ends;
/// each piece lists the rules whose set covers it.
#[derive(Debug)]
struct IntervalIndex<T> {
    /// Piece `i` is `[starts[i], starts[i + 1])`, the last one up to the maximum.
    starts: Vec<T>,
    /// Rules of piece `i`: `rules[offs[i]..offs[i + 1]]`, in rule order.
    offs: Vec<u32>,
    rules: Vec<u32>,
}

impl<T: Point> IntervalIndex<T> {
    /// `sets`: (rule, its sorted intervals), in rule order.
    fn build(sets: &[(u32, &[(T, T)])]) -> Self {
        let mut starts = vec![T::MIN];
        for (_, ranges) in sets {
            for &(lo, hi) in ranges.iter() {
                starts.push(lo);
                if let Some(n) = hi.succ() {
                    starts.push(n);
                }
            }
        }
        starts.sort_unstable();
        starts.dedup();
        let mut per: Vec<Vec<u32>> = vec![Vec::new(); starts.len()];
        for &(rule, ranges) in sets {
            for &(lo, hi) in ranges {
                let a = starts.binary_search(&lo).unwrap_or_else(|i| i);
                let b = match hi.succ() {
                    Some(n) => starts.binary_search(&n).unwrap_or_else(|i| i),
                    None => starts.len(),
                };
                for list in per.iter_mut().take(b).skip(a) {
                    if list.last() != Some(&rule) {
                        list.push(rule);
                    }
                }
            }
        }
        let mut offs = Vec::with_capacity(per.len() + 1);
        let mut rules = Vec::new();
        offs.push(0);
        for list in per {
            rules.extend(list);
            offs.push(rules.len() as u32);
        }
        IntervalIndex {
            starts,
            offs,
            rules,
        }
    }

    /// The rules whose set holds `v`.
    fn lookup(&self, v: T) -> &[u32] {
        let i = match self.starts.binary_search(&v) {
            Ok(i) => i,
            Err(0) => return &[],
            Err(i) => i - 1,
        };
        match (self.offs.get(i), self.offs.get(i + 1)) {
            (Some(&a), Some(&b)) => self.rules.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// Where a rule without content is filed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Filed {
    BySource,
    ByDestination,
    ByDestinationPort,
    BySourcePort,
    Unindexed,
}

impl Filed {
    const ALL: [Filed; 5] = [
        Filed::BySource,
        Filed::ByDestination,
        Filed::ByDestinationPort,
        Filed::BySourcePort,
        Filed::Unindexed,
    ];

    fn name(self) -> &'static str {
        match self {
            Filed::BySource => "by source address",
            Filed::ByDestination => "by destination address",
            Filed::ByDestinationPort => "by destination port",
            Filed::BySourcePort => "by source port",
            Filed::Unindexed => "every packet",
        }
    }
}

/// Transports header rules are split by (a rule is in each its protocol admits).
const TRANSPORTS: [&str; 4] = ["tcp", "udp", "icmp", "other"];

fn transport_index(t: Transport) -> usize {
    match t {
        Transport::Tcp => 0,
        Transport::Udp => 1,
        Transport::Icmp => 2,
        Transport::Other(_) => 3,
    }
}

/// The transports a rule's protocol admits (application protocols: any transport that carries one).
fn transports(proto: Proto) -> &'static [usize] {
    match proto {
        Proto::Tcp => &[0],
        Proto::Udp => &[1],
        Proto::Icmp => &[2],
        Proto::IpProto(_) => &[3],
        Proto::Ip | Proto::App(_) => &[0, 1, 2, 3],
    }
}

/// The rule group a header rule was met through: what the rules profile reports per group.
pub(crate) fn group_id(filed: Filed, transport: Transport) -> u32 {
    (filed as u32) * TRANSPORTS.len() as u32 + transport_index(transport) as u32
}

/// Names of the groups [`group_id`] numbers, by id.
pub(crate) fn group_names() -> Vec<String> {
    Filed::ALL
        .iter()
        .flat_map(|f| {
            TRANSPORTS
                .iter()
                .map(move |t| format!("header-only {t}, {}", f.name()))
        })
        .collect()
}

/// Rules with the port intervals they are filed under, in rule order.
type PortSets<'r> = Vec<(u32, &'r [(u16, u16)])>;

/// The header rules of one transport that no address files: by port.
#[derive(Debug)]
struct PortIndex {
    dst: IntervalIndex<u16>,
    src: IntervalIndex<u16>,
    /// Rules filed under neither port, in rule order.
    any: Vec<u32>,
}

/// The rules without content of one direction, filed by address, else by transport and port (see the module
/// docs).
#[derive(Debug)]
pub(crate) struct AddrIndex {
    src4: IntervalIndex<u32>,
    src6: IntervalIndex<u128>,
    dst4: IntervalIndex<u32>,
    dst6: IntervalIndex<u128>,
    /// Per transport ([`TRANSPORTS`]).
    ports: Vec<PortIndex>,
    empty: bool,
}

impl AddrIndex {
    /// Files `list` (rule indices into `rules`, in rule order); with `grouped` false, every rule in the list is
    /// checked on every packet.
    pub fn build(rules: &[Rule], list: &[u32], grouped: bool) -> AddrIndex {
        let mut by_src = Vec::new();
        let mut by_dst = Vec::new();
        let mut by_port: Vec<[PortSets<'_>; 2]> =
            TRANSPORTS.iter().map(|_| Default::default()).collect();
        let mut any: Vec<Vec<u32>> = TRANSPORTS.iter().map(|_| Vec::new()).collect();
        for &r in list {
            let Some(rule) = rules.get(r as usize) else {
                continue;
            };
            let (how, ts) = if grouped {
                (filed(rule), transports(rule.proto))
            } else {
                (Filed::Unindexed, &[0, 1, 2, 3][..])
            };
            for &t in ts {
                let ports = by_port.get_mut(t);
                match how {
                    Filed::BySource => by_src.push((r, &rule.src)),
                    Filed::ByDestination => by_dst.push((r, &rule.dst)),
                    Filed::ByDestinationPort => {
                        if let Some(p) = ports {
                            p[0].push((r, rule.dst_ports.ranges()));
                        }
                    }
                    Filed::BySourcePort => {
                        if let Some(p) = ports {
                            p[1].push((r, rule.src_ports.ranges()));
                        }
                    }
                    Filed::Unindexed => {
                        if let Some(a) = any.get_mut(t) {
                            a.push(r);
                        }
                    }
                }
                if matches!(how, Filed::BySource | Filed::ByDestination) {
                    break;
                }
            }
        }
        let v4 = |v: &[(u32, &AddrSet)]| -> IntervalIndex<u32> {
            let sets: Vec<(u32, &[(u32, u32)])> =
                v.iter().map(|&(r, s)| (r, s.v4_ranges())).collect();
            IntervalIndex::build(&sets)
        };
        let v6 = |v: &[(u32, &AddrSet)]| -> IntervalIndex<u128> {
            let sets: Vec<(u32, &[(u128, u128)])> =
                v.iter().map(|&(r, s)| (r, s.v6_ranges())).collect();
            IntervalIndex::build(&sets)
        };
        let ports = by_port
            .iter()
            .zip(any)
            .map(|([d, s], any)| PortIndex {
                dst: IntervalIndex::build(d),
                src: IntervalIndex::build(s),
                any,
            })
            .collect();
        AddrIndex {
            src4: v4(&by_src),
            src6: v6(&by_src),
            dst4: v4(&by_dst),
            dst6: v6(&by_dst),
            ports,
            empty: list.is_empty(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// The rules a packet (addresses, ports and transport of `ctx`) can match, in rule order, into `out` (cleared
    /// first), each with where it was filed.
    pub fn candidates(&self, ctx: &PacketCtx<'_>, out: &mut Vec<(u32, Filed)>) {
        out.clear();
        let by_src = match ctx.src {
            IpAddr::V4(a) => self.src4.lookup(u32::from(a)),
            IpAddr::V6(a) => self.src6.lookup(u128::from(a)),
        };
        let by_dst = match ctx.dst {
            IpAddr::V4(a) => self.dst4.lookup(u32::from(a)),
            IpAddr::V6(a) => self.dst6.lookup(u128::from(a)),
        };
        let (dport, sport, any): (&[u32], &[u32], &[u32]) =
            match self.ports.get(transport_index(ctx.transport)) {
                Some(p) => (
                    p.dst.lookup(ctx.dst_port),
                    p.src.lookup(ctx.src_port),
                    &p.any,
                ),
                None => (&[], &[], &[]),
            };
        // Sorted lists, disjoint (each rule is filed once per transport): merge them.
        let lists = [
            (by_src, Filed::BySource),
            (by_dst, Filed::ByDestination),
            (dport, Filed::ByDestinationPort),
            (sport, Filed::BySourcePort),
            (any, Filed::Unindexed),
        ];
        let mut pos = [0usize; 5];
        loop {
            let mut best: Option<(u32, usize)> = None;
            for (i, (list, _)) in lists.iter().enumerate() {
                if let Some(&v) = pos.get(i).and_then(|&p| list.get(p))
                    && best.is_none_or(|(b, _)| v < b)
                {
                    best = Some((v, i));
                }
            }
            let Some((v, i)) = best else { break };
            if let (Some(p), Some((_, how))) = (pos.get_mut(i), lists.get(i)) {
                *p += 1;
                out.push((v, *how));
            }
        }
    }
}

/// A prefilter table (stream, datagrams, single TCP packets) split by port, as Suricata's port groups: the rules
/// filed under a narrow destination (else source) port set ([`filed`]) whose fast pattern is short
/// ([`SPLIT_PATTERN`]), and those without a fast pattern, get one table per set; the rest share one. A packet scans
/// the shared table and the tables of the sets holding its ports, so a rule written for TFTP's port 69 with the fast
/// pattern `|00 02|` no longer makes a candidate of every NUL pair of every datagram. Splitting every port rule out
/// cost more than it saved on ET Open (each table is another pass over the bytes).
///
/// Datagram tables are also split by application protocol: a rule whose header names one (`alert http`, `alert
/// dns`) gets its protocol's table, which a datagram meets only when its flow's protocol is one the rule admits
/// (the check `applies` makes of every candidate). ET Open's HTTP, SMTP and FTP rules with payload contents (`=`,
/// `../`, `GET`, `MKD`) then no longer make the shared UDP table scan for one- to three-byte patterns that cannot
/// lead to a match on a UDP flow. Streams and single TCP packets keep such rules in their shared table: there the
/// protocol is the common case (most TCP flows have one), and its table would be a second pass over the bytes.
#[derive(Debug)]
pub(crate) struct PortTables {
    /// Table 0 is the shared one, then one per port set.
    tables: Vec<Table>,
    /// Per table: its pattern ids' rank in the unsplit order (first use in rule order), for a candidate order
    /// that does not depend on the split.
    ranks: Vec<Vec<u32>>,
    /// Port → port-set tables (ids into `tables`).
    dst: IntervalIndex<u16>,
    src: IntervalIndex<u16>,
    /// The table every packet meets besides the shared one: short fast patterns whose occurrence must end within
    /// the payload's first [`HEAD_SPLIT`] bytes, in rules filed under no port set (datagram tables only; see
    /// [`Table::head`]).
    head: Option<u32>,
    /// A flow's application protocol → the tables of the rules it admits (the rules naming it, and those naming a
    /// protocol that admits it, such as `http` for `http2`; datagram tables only, see above).
    apps: Vec<(&'static str, Vec<u32>)>,
    /// Names of the port sets' tables, for the rules profile (`dst port 69`, `src port 80,8080`, ...).
    names: Vec<String>,
    /// Rule-group id of table 0 in the rules profile ([`crate::RuleSet::group_name`]); table `i` is `base + i`.
    pub base: u32,
}

impl PortTables {
    /// Splits one table's entries and always-checked targets; `grouped` false keeps a single table. `by_app`:
    /// rules naming an application protocol get that protocol's table (datagrams; see above). `bound`, for packet
    /// tables: where a target's fast-pattern occurrence must end ([`Table::head`]).
    pub fn build(
        rules: &[Rule],
        entries: &[Entry],
        always: Vec<Target>,
        grouped: bool,
        by_app: bool,
        bound: Option<&dyn Fn(Target) -> Option<u64>>,
    ) -> PortTables {
        let mut keys: HashMap<PartKey, usize> = HashMap::new();
        let mut parts: Vec<(Vec<Entry>, Vec<Target>)> = vec![Default::default()];
        let mut sets: Vec<PartKey> = vec![PartKey::Shared];
        let mut part_of = |t: Target,
                           short: bool,
                           parts: &mut Vec<(Vec<Entry>, Vec<Target>)>|
         -> usize {
            let Some(rule) = rules.get(t.rule as usize).filter(|_| grouped) else {
                return 0;
            };
            let key = match (rule.proto, filed(rule)) {
                (Proto::App(name), _) if by_app => PartKey::App(name),
                // A port table is one more scan for every packet of its ports: worth it only for the fast
                // patterns that are found nearly everywhere (a NUL byte, `|00 02|`), not for the rest, which the
                // shared table finds at no extra cost.
                _ if !short => return 0,
                (_, Filed::ByDestinationPort) => {
                    PartKey::Port(true, rule.dst_ports.ranges().to_vec())
                }
                (_, Filed::BySourcePort) => PartKey::Port(false, rule.src_ports.ranges().to_vec()),
                // Narrow addresses are rare among content rules: those share the table.
                _ if !rule.bidirectional && narrow_ports(&rule.dst_ports) => {
                    PartKey::Port(true, rule.dst_ports.ranges().to_vec())
                }
                _ if !rule.bidirectional && narrow_ports(&rule.src_ports) => {
                    PartKey::Port(false, rule.src_ports.ranges().to_vec())
                }
                // A short pattern that can only count near the payload's start (`depth:2`, `dsize:<20`) would
                // keep the short-pattern gate on every byte of every datagram: its own table scans only the head.
                _ if by_app && bound.and_then(|b| b(t)).is_some_and(|h| h <= HEAD_SPLIT) => {
                    PartKey::Head
                }
                _ => return 0,
            };
            if !keys.contains_key(&key) && parts.len() >= MAX_PORT_TABLES {
                return 0;
            }
            *keys.entry(key.clone()).or_insert_with(|| {
                parts.push(Default::default());
                sets.push(key);
                parts.len() - 1
            })
        };
        for e in entries {
            let p = part_of(e.2, e.0.len() <= SPLIT_PATTERN, &mut parts);
            if let Some(part) = parts.get_mut(p) {
                part.0.push(e.clone());
            }
        }
        for t in always {
            let p = part_of(t, true, &mut parts);
            if let Some(part) = parts.get_mut(p) {
                part.1.push(t);
            }
        }
        let mut global: HashMap<(&[u8], bool), u32> = HashMap::new();
        for (bytes, nocase, _) in entries {
            let n = global.len() as u32;
            global.entry((bytes.as_slice(), *nocase)).or_insert(n);
        }
        let mut ranks = Vec::with_capacity(parts.len());
        for (es, _) in &parts {
            let mut seen: HashMap<(&[u8], bool), ()> = HashMap::new();
            let mut rank = Vec::new();
            for (bytes, nocase, _) in es {
                if seen.insert((bytes.as_slice(), *nocase), ()).is_none() {
                    rank.push(
                        global
                            .get(&(bytes.as_slice(), *nocase))
                            .copied()
                            .unwrap_or(u32::MAX),
                    );
                }
            }
            ranks.push(rank);
        }
        let by = |dst: bool| -> IntervalIndex<u16> {
            let v: Vec<(u32, &[(u16, u16)])> = sets
                .iter()
                .enumerate()
                .filter_map(|(i, k)| match k {
                    PartKey::Port(d, r) if *d == dst => Some((i as u32, r.as_slice())),
                    _ => None,
                })
                .collect();
            IntervalIndex::build(&v)
        };
        let (dst, src) = (by(true), by(false));
        let head = sets
            .iter()
            .position(|k| *k == PartKey::Head)
            .map(|i| i as u32);
        let mut apps: Vec<(&'static str, Vec<u32>)> = Vec::new();
        for (i, k) in sets.iter().enumerate() {
            let PartKey::App(name) = k else { continue };
            let aliases = crate::scan::APP_PROTO_ALIASES
                .iter()
                .filter(|(r, _)| name.eq_ignore_ascii_case(r))
                .map(|&(_, f)| f);
            for flow in std::iter::once(*name).chain(aliases) {
                match apps.iter_mut().find(|(f, _)| f.eq_ignore_ascii_case(flow)) {
                    Some((_, ids)) => ids.push(i as u32),
                    None => apps.push((flow, vec![i as u32])),
                }
            }
        }
        let names = sets
            .iter()
            .map(|k| {
                let (d, r) = match k {
                    PartKey::Shared => return "any port".to_string(),
                    PartKey::App(name) => return format!("app {name}"),
                    PartKey::Head => return "any port, payload start".to_string(),
                    PartKey::Port(d, r) => (d, r),
                };
                let ports: Vec<String> = r
                    .iter()
                    .map(|&(lo, hi)| {
                        if lo == hi {
                            format!("{lo}")
                        } else {
                            format!("{lo}:{hi}")
                        }
                    })
                    .collect();
                if *d {
                    format!("dst port {}", ports.join(","))
                } else {
                    format!("src port {}", ports.join(","))
                }
            })
            .collect();
        let tables = parts
            .into_iter()
            .map(|(e, a)| {
                let t = Table::build(&e, a);
                match bound {
                    Some(b) => t.with_head(&e, b),
                    None => t,
                }
            })
            .collect();
        PortTables {
            tables,
            ranks,
            dst,
            src,
            head,
            apps,
            names,
            base: 0,
        }
    }

    /// Whether no table can report anything.
    pub fn is_empty(&self) -> bool {
        self.tables.iter().all(Table::is_empty)
    }

    /// The tables a packet with ports (and application protocol) `ctx` meets, as ids (the shared one first),
    /// into `out`.
    pub fn select(&self, ctx: &PacketCtx<'_>, out: &mut Vec<u32>) {
        out.clear();
        out.push(0);
        out.extend(self.head);
        out.extend_from_slice(self.dst.lookup(ctx.dst_port));
        out.extend_from_slice(self.src.lookup(ctx.src_port));
        if let Some(flow) = ctx.app_proto
            && let Some((_, ids)) = self.apps.iter().find(|(f, _)| f.eq_ignore_ascii_case(flow))
        {
            out.extend_from_slice(ids);
        }
    }

    /// Table `i` and its pattern ranks.
    pub fn get(&self, i: u32) -> Option<(&Table, &[u32])> {
        Some((self.tables.get(i as usize)?, self.ranks.get(i as usize)?))
    }

    /// Number of tables (the shared one included).
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    /// The name of table `i`'s port set.
    pub fn name(&self, i: usize) -> &str {
        self.names.get(i).map_or("?", String::as_str)
    }

    /// Every table with its port set's name (the shared one first).
    pub fn named(&self) -> impl Iterator<Item = (&str, &Table)> {
        self.tables
            .iter()
            .enumerate()
            .map(|(i, t)| (self.name(i), t))
    }

    /// Lets the patterns of `other`'s shared table ride along in this one's shared table, when both have patterns:
    /// one pass over a TCP packet's payload then serves the stream rules and the single-packet rules (`dsize`,
    /// `tcp-pkt`, header keywords), which otherwise scanned every TCP payload a second time. The stream scan hands
    /// the riders' occurrences that lie wholly inside its chunk to the packet scan ([`crate::RuleSet`]'s
    /// `scan_streamed_packet`), which uses them instead of scanning when the chunk was exactly the packet's payload.
    pub fn carry_riders(&mut self, other: &PortTables) {
        let (Some(mine), Some(theirs)) = (self.tables.first_mut(), other.tables.first()) else {
            return;
        };
        if mine.patterns.is_empty() || theirs.patterns.is_empty() {
            return;
        }
        let mut pats = mine.patterns.patterns();
        let ridden = theirs.patterns.patterns();
        mine.own = pats.len() as u32;
        pats.extend(ridden);
        let vector = mine.patterns.vector_gate();
        mine.patterns = crate::prefilter::PatternSet::new(&pats);
        mine.patterns.set_vector_gate(vector);
    }

    /// Whether no table has a pattern.
    pub fn no_patterns(&self) -> bool {
        self.tables.iter().all(|t| t.patterns.is_empty())
    }

    /// The longest pattern of any table.
    pub fn max_len(&self) -> usize {
        self.tables
            .iter()
            .map(|t| t.patterns.max_len())
            .max()
            .unwrap_or(0)
    }

    /// Memory of the prefilter tables.
    pub fn memory(&self) -> usize {
        self.tables.iter().map(|t| t.patterns.memory()).sum()
    }
}

/// What a table of a [`PortTables`] is for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum PartKey {
    /// The shared table.
    Shared,
    /// A port set: destination ports (`true`) or source ports, as ranges.
    Port(bool, Vec<(u16, u16)>),
    /// The rules naming an application protocol in their header.
    App(&'static str),
    /// Short fast patterns bounded to the payload's start (see [`PortTables`]'s `head`).
    Head,
}

/// Furthest end (bytes from the payload's start) of a short fast pattern's occurrence for its rule to go to the
/// head table rather than the shared one: ET Open's eDonkey, eMule and KuGoo rules (`|e3 0d|` with `depth:2`,
/// `|50 37|` with `dsize:<30`) put eight two-byte patterns in the shared UDP tables, which then ran both gates over
/// every byte of every datagram.
const HEAD_SPLIT: u64 = 64;

/// Most tables of one [`PortTables`] (the shared one included); port sets beyond it share the shared table. Stream
/// matching numbers a pattern by table and id in one `u32` ([`crate::scan`]'s quiet patterns), 8 bits of table.
pub(crate) const MAX_PORT_TABLES: usize = 256;

/// Longest fast pattern a rule takes to its port set's table (longer ones stay in the shared table).
const SPLIT_PATTERN: usize = 3;

/// Most ports in a set a rule is filed under.
const NARROW_PORTS: u32 = 1024;

fn narrow_ports(set: &PortSet) -> bool {
    !set.is_any()
        && set
            .ranges()
            .iter()
            .map(|&(lo, hi)| u32::from(hi - lo) + 1)
            .sum::<u32>()
            <= NARROW_PORTS
}

/// Where `rule` is filed: under a narrow address field the packet must carry in that place, else a narrow port
/// field. A bidirectional rule (`<>`) may match with its addresses and ports swapped, so it is filed under none.
fn filed(rule: &Rule) -> Filed {
    if rule.bidirectional {
        Filed::Unindexed
    } else if narrow(&rule.src) {
        Filed::BySource
    } else if narrow(&rule.dst) {
        Filed::ByDestination
    } else if narrow_ports(&rule.dst_ports) {
        Filed::ByDestinationPort
    } else if narrow_ports(&rule.src_ports) {
        Filed::BySourcePort
    } else {
        Filed::Unindexed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_meets_the_tables_of_the_protocols_its_flow_admits() {
        let text = "alert http any any -> any any (content:\"=\"; sid:1;)\n\
                    alert dcerpc any any -> any any (content:\"abcd\"; sid:2;)\n\
                    alert dns any any -> any any (content:\"|01|\"; sid:3;)\n\
                    alert udp any any -> any any (content:\"|02|\"; sid:4;)\n";
        let (set, _) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        let tables = &set.packet[0];
        let app_tables: Vec<(usize, &str)> = (0..tables.len())
            .filter_map(|i| Some((i, tables.name(i).strip_prefix("app ")?)))
            .collect();
        assert_eq!(app_tables.len(), 3, "{app_tables:?}");
        let mut out = Vec::new();
        for flow in [
            None,
            Some("http"),
            Some("http2"),
            Some("smb"),
            Some("dcerpc"),
            Some("DNS"),
            Some("failed"),
        ] {
            let ctx = PacketCtx {
                transport: Transport::Udp,
                app_proto: flow,
                ..PacketCtx::default()
            };
            tables.select(&ctx, &mut out);
            let mut want: Vec<u32> = vec![0];
            want.extend(app_tables.iter().filter_map(|&(i, name)| {
                flow.is_some_and(|f| crate::scan::app_proto_admits(name, f))
                    .then_some(i as u32)
            }));
            out.sort_unstable();
            assert_eq!(out, want, "{flow:?}");
        }
    }

    #[test]
    fn short_patterns_bounded_to_the_payload_start_get_the_head_table() {
        let text = "alert udp any 1024: -> any 1024: (dsize:<20; content:\"|e3 0d|\"; depth:2; sid:1;)\n\
                    alert udp any 1024: -> any 1024: (dsize:<30; content:\"|64|\"; depth:1; content:\"|50 37|\"; distance:4; sid:2;)\n\
                    alert udp any any -> any any (content:\"|50 37|\"; sid:3;)\n\
                    alert udp any any -> any any (content:\"longer\"; depth:6; sid:4;)\n";
        let (set, _) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        let tables = &set.packet[0];
        let names: Vec<&str> = (0..tables.len()).map(|i| tables.name(i)).collect();
        assert_eq!(names, ["any port", "any port, payload start"]);
        let (shared, _) = tables.get(0).unwrap();
        let (head, _) = tables.get(1).unwrap();
        // The unbounded short pattern (sid 3) and the long one stay shared; the bounded short ones go to the head
        // table, which scans the first 29 bytes at most (`dsize:<30`).
        assert_eq!(shared.patterns.short_patterns().len(), 1);
        assert_eq!(head.patterns.len(), 2);
        assert_eq!(head.head, Some(29));
        let ctx = PacketCtx {
            transport: Transport::Udp,
            src_port: 2000,
            dst_port: 3000,
            ..PacketCtx::default()
        };
        let mut out = Vec::new();
        tables.select(&ctx, &mut out);
        assert_eq!(out, [0, 1]);
        // The rules still match where they did, and only there.
        let fired = |payload: &[u8]| -> Vec<u32> {
            let mut sc = set.scanner();
            let mut alerts: Vec<crate::AlertRecord> = Vec::new();
            set.scan_packet(
                &mut sc,
                &mut crate::FlowMatchState::default(),
                &ctx,
                payload,
                &mut alerts,
            );
            let mut sids: Vec<u32> = alerts.iter().map(|a| a.sid).collect();
            sids.sort_unstable();
            sids
        };
        assert_eq!(fired(b"\xe3\x0dabc"), [1]);
        assert_eq!(fired(b"x\xe3\x0dabc"), [] as [u32; 0]);
        assert_eq!(fired(b"\xe3\x0d0123456789012345678"), [] as [u32; 0]);
        assert_eq!(fired(b"\x64abcd\x70xxxx\x50\x37"), [2, 3]);
        assert_eq!(fired(b"longer and \x50\x37 after 30 bytes ....."), [3, 4]);
    }

    #[test]
    fn pieces_list_the_rules_covering_them() {
        let a: &[(u32, u32)] = &[(10, 20), (40, 40)];
        let b: &[(u32, u32)] = &[(15, 50)];
        let ix = IntervalIndex::build(&[(1, a), (2, b)]);
        assert_eq!(ix.lookup(9), &[] as &[u32]);
        assert_eq!(ix.lookup(10), &[1]);
        assert_eq!(ix.lookup(15), &[1, 2]);
        assert_eq!(ix.lookup(20), &[1, 2]);
        assert_eq!(ix.lookup(21), &[2]);
        assert_eq!(ix.lookup(40), &[1, 2]);
        assert_eq!(ix.lookup(51), &[] as &[u32]);
        assert_eq!(ix.lookup(u32::MAX), &[] as &[u32]);
        let top: &[(u32, u32)] = &[(u32::MAX - 1, u32::MAX)];
        let ix = IntervalIndex::build(&[(7, top)]);
        assert_eq!(ix.lookup(u32::MAX), &[7]);
        assert_eq!(ix.lookup(0), &[] as &[u32]);
    }
}
