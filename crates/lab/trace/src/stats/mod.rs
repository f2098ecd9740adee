//! # `trace stats`: what a capture looks like to a packet scheduler
//!
//! The ANCS'10 paper characterises its three captures (Table 1) by packets, TCP and UDP connections, average and
//! maximum bandwidth, cycles per packet and connection density, and Verdú's thesis (§3.2.2) adds the unique flow
//! rate: together they predict how a scheduler will fare (a dominant connection caps flow-affine schedulers; a
//! high density interleaves connections and costs cache misses). [`Collector`] computes them, and more, in one
//! streaming pass; [`TraceStats`] is the result, as JSON (serde) or a table ([`TraceStats::render_table`]).
//!
//! ## Definitions
//! * **Packets, bytes**: every record of the capture. *Captured* bytes are what the file holds, *wire* bytes the
//!   packets' original lengths (`orig_len`); rates and per-connection bytes use wire bytes.
//! * **Duration**: latest minus earliest timestamp (captures are not always in time order, so not last − first,
//!   as `capinfos` computes it). **Average Mb/s**: wire bits / duration.
//! * **Maximum Mb/s**: the most wire bits in any 1 ms window, per ms, the window sliding in 1 µs steps; see
//!   [`rate`] for the exact definition.
//! * **Flow, connection**: a canonical bidirectional 5-tuple ([`FlowKey`]: addresses, ports, IP protocol) of the
//!   decoded (outermost, or innermost with `--decap`) IP header, counted **once over the whole capture** however
//!   long it idles and whatever VLAN it was seen on. Protocols without ports have ports 0, so all ICMP between two
//!   hosts is one flow. Non-first fragments take their first fragment's ports ([`FragmentPorts`]), so a fragmented
//!   datagram belongs to one flow. *TCP connections* are flows with protocol 6, *UDP connections* protocol 17;
//!   Table 1's "Conns." is their sum. A TCP 5-tuple reused by a later connection counts once.
//! * **Connection density**: distinct flows per 100 consecutive IP packets, non-overlapping windows; see
//!   [`density`] for the last partial window.
//! * **Unique flow rate**: for each IP packet whose flow had an earlier packet, the *window* is the packets
//!   strictly between the two; the packet's ratio is the number of distinct flows in the window over the window's
//!   size (0 for an empty window: back-to-back packets of one flow); the rate is the mean ratio over all such
//!   packets. The mean window size and mean distinct flows per window are reported too (the thesis' Figure 3.8
//!   plots both). Computed in O(log n) per packet with a Fenwick tree ([`recency`]).
//! * **Top connections**: the flows with the most packets and the most wire bytes, with their share of the
//!   capture's packets and wire bytes.
//! * **Packet sizes**: wire length in RMON (RFC 2819) buckets.
//! * **Protocol mix**: IPv4 / IPv6 / not IP, and the IP protocols; **VLAN-tagged** packets carry at least one
//!   802.1Q/802.1ad tag; **fragmented** packets are IP fragments, first or not ([`Ip::is_fragment`]).
//! * **Decode outcomes**: [`DecodeStats`], every packet's [`Outcome`](flowbundle_decode::Outcome) by reason.
//!
//! ## Memory
//! Constant except the flow table, which is capped ([`StatsConfig::max_flows`], about 100 bytes per flow): when it
//! is full, packets of new flows are counted as *untracked* and the report says the connection counts are a lower
//! bound and the unique flow rate approximate (windows still count untracked packets in their size but not in
//! their distinct flows). Density, rates, sizes and protocol counters stay exact.
//!
//! ## Cost hook
//! [`CostModel`] gives each packet an inspection cost (the paper's cycles per packet, Table 1's "Avg. CPP" and
//! Figure 1's top ten connections by cycles). `flowbundle trace stats --cost` plugs the engine's own per-packet
//! cycle count in here (`crates/cli/src/cmd/trace.rs`: each packet through `Engine::process_serial`, its cost the
//! growth of the engine's cycle total, see `flowbundle_inspect::cost`), so this crate does not depend on the
//! engine; without a model the report has no `cost` section.
//!
//! With a model the report also has the Verdú thesis' view (ch. 4) of **cost by position in flow**: the 1st, 2nd,
//! ... packet of each flow (positions 1 to [`COST_POSITIONS`] one by one, every later packet in one bucket), where
//! a flow is the same capture-wide 5-tuple as everywhere above (so a TCP 5-tuple reused by a later connection
//! continues its positions, and the engine's own idle timeouts do not restart them). Packets outside any tracked
//! flow (not IP, or a full flow table) have no position: their cost is reported apart. The thesis expects the
//! first packets, where identification happens, to cost the most.

mod density;
mod flows;
mod progress;
pub mod rate;
mod recency;
mod report;

use std::path::Path;

use flowbundle_decode::{
    DecodeOptions, DecodeStats, Decoded, FlowKey, FragmentPorts, Ip, Layer, Malformed, Outcome,
    decode,
};
use flowbundle_ingest::{CaptureReader, Error, LinkType, PacketRecord, Trace};
use serde::Serialize;

pub use density::{Density, DensityMeter};
pub use flows::{FlowEntry, FlowTable, Slot, hash_of};
pub use progress::Progress;
pub use rate::{Peak, RateMeter};

use progress::DelayedBar;
use recency::Recency;

/// Default cap on tracked flows (about 100 MiB at most).
pub const DEFAULT_MAX_FLOWS: usize = 1 << 20;
/// Default number of top connections reported (ANCS'10 Figure 1 shows ten).
pub const DEFAULT_TOP: usize = 10;
/// Packets per connection-density window (ANCS'10: per one hundred packets).
pub const DEFAULT_DENSITY_WINDOW: usize = 100;
/// Maximum-rate window (ANCS'10: at least one millisecond).
pub const DEFAULT_RATE_WINDOW_NS: u64 = 1_000_000;
/// Largest density window accepted (its set is cleared once per window).
pub const MAX_DENSITY_WINDOW: usize = 1 << 16;
/// Fragment-ports cache: entries and capture-time timeout (Linux's `ipfrag_time`).
const FRAGMENT_PORTS: usize = 4096;
const FRAGMENT_TIMEOUT_NS: u64 = 30_000_000_000;
/// Distinct link types listed by name; more are summed as "other".
const MAX_LINK_TYPES: usize = 16;
/// Packets between two progress updates.
const PROGRESS_EVERY: u64 = 4096;
/// Positions in flow whose cost is reported one by one (the engine's cost accounting keeps as many); later
/// packets share one bucket.
pub const COST_POSITIONS: usize = 64;

/// What [`Collector`] computes and with which limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatsConfig {
    /// How packets are decoded (`decap_tunnels` keys flows on the innermost header).
    pub decode: DecodeOptions,
    /// Most flows tracked at once; see the module documentation.
    pub max_flows: usize,
    /// Top connections reported by packets and by bytes.
    pub top: usize,
    /// Packets per connection-density window (1 to [`MAX_DENSITY_WINDOW`]).
    pub density_window: usize,
    /// Window of the maximum sustained rate (at least 1 µs).
    pub rate_window_ns: u64,
}

impl Default for StatsConfig {
    fn default() -> Self {
        StatsConfig {
            decode: DecodeOptions::default(),
            max_flows: DEFAULT_MAX_FLOWS,
            top: DEFAULT_TOP,
            density_window: DEFAULT_DENSITY_WINDOW,
            rate_window_ns: DEFAULT_RATE_WINDOW_NS,
        }
    }
}

/// Per-packet inspection cost: the hook for `trace stats --cost`.
///
/// The engine issue implements it with the inspector's measured cycles per packet; any deterministic model (bytes
/// of payload, a table per protocol) works too. [`Collector`] calls [`CostModel::cost`] once per packet in capture
/// order, after decoding, and sums the result per flow and in total.
pub trait CostModel {
    /// The unit of the costs, for reports ("cycles", "ns", ...).
    fn unit(&self) -> &str;
    /// The cost of inspecting this packet.
    fn cost(&mut self, rec: &PacketRecord<'_>, decoded: &Decoded<'_>) -> u64;
    /// Nanoseconds per unit, when the unit converts to time (cycles at a known clock rate); the report then gives
    /// nanoseconds per packet too.
    fn ns_per_unit(&self) -> Option<f64> {
        None
    }
}

/// Plain counters of the pass.
#[derive(Debug, Clone, Default)]
struct Counters {
    packets: u64,
    captured_bytes: u64,
    wire_bytes: u64,
    first_ts: Option<u64>,
    last_ts: u64,
    min_ts: u64,
    max_ts: u64,
    out_of_order: u64,
    sizes: [u64; SIZE_BUCKETS.len()],
    size_bytes: [u64; SIZE_BUCKETS.len()],
    ipv4: u64,
    ipv6: u64,
    ip_protocols: PerProto,
    ip_protocol_bytes: PerProto,
    tcp: u64,
    udp: u64,
    icmp: u64,
    icmpv6: u64,
    sctp: u64,
    vlan_tagged: u64,
    multi_tagged: u64,
    mpls: u64,
    pppoe: u64,
    tunnelled: u64,
    fragments: u64,
    first_fragments: u64,
    later_fragments: u64,
    ipv4_fragments: u64,
    ipv6_fragments: u64,
    /// IP packets, the sequence density and unique flow rate are defined over.
    ip_seq: u64,
    ufr_samples: u64,
    ufr_sum_ratio: f64,
    ufr_sum_window: u128,
    ufr_sum_distinct: u128,
    cost_total: u64,
    /// `(packets, cost)` by position in flow: index 0 is position 1, index [`COST_POSITIONS`] every later one.
    /// Empty until the first costed flow packet.
    cost_by_position: Vec<(u64, u64)>,
    link_types: Vec<(LinkType, u64)>,
    other_link_types: u64,
}

/// A counter per IP protocol number (arrays this long have no derived `Default`).
#[derive(Debug, Clone)]
struct PerProto([u64; 256]);

impl Default for PerProto {
    fn default() -> Self {
        PerProto([0; 256])
    }
}

/// RMON etherStats packet-size buckets (RFC 2819), by wire length: (lowest, highest) inclusive.
const SIZE_BUCKETS: [(u32, u32); 8] = [
    (0, 63),
    (64, 64),
    (65, 127),
    (128, 255),
    (256, 511),
    (512, 1023),
    (1024, 1518),
    (1519, u32::MAX),
];

/// The streaming pass: feed it every packet with [`Collector::push`], then read [`Collector::finish`].
pub struct Collector {
    cfg: StatsConfig,
    c: Counters,
    decode_stats: DecodeStats,
    frag_ports: FragmentPorts,
    flows: FlowTable,
    recency: Recency,
    density: DensityMeter,
    rate: RateMeter,
    cost: Option<Box<dyn CostModel>>,
    source: Option<String>,
    format: Option<String>,
    read_error: Option<String>,
    truncated_records: u64,
    clamped_lengths: u64,
    skipped_blocks: u64,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("cfg", &self.cfg)
            .field("packets", &self.c.packets)
            .field("flows", &self.flows.len())
            .finish_non_exhaustive()
    }
}

impl Collector {
    pub fn new(cfg: StatsConfig) -> Self {
        let mut cfg = cfg;
        cfg.density_window = cfg.density_window.clamp(1, MAX_DENSITY_WINDOW);
        cfg.max_flows = cfg.max_flows.clamp(1, u32::MAX as usize);
        Collector {
            cfg,
            c: Counters::default(),
            decode_stats: DecodeStats::default(),
            frag_ports: FragmentPorts::new(FRAGMENT_PORTS, FRAGMENT_TIMEOUT_NS),
            flows: FlowTable::new(cfg.max_flows),
            recency: Recency::new(),
            density: DensityMeter::new(cfg.density_window),
            rate: RateMeter::new(cfg.rate_window_ns),
            cost: None,
            source: None,
            format: None,
            read_error: None,
            truncated_records: 0,
            clamped_lengths: 0,
            skipped_blocks: 0,
        }
    }

    /// Adds a per-packet cost model (see [`CostModel`]); the report then has a `cost` section.
    pub fn with_cost(mut self, model: Box<dyn CostModel>) -> Self {
        self.cost = Some(model);
        self
    }

    /// Names the input in the report.
    pub fn set_source(&mut self, source: impl Into<String>, format: Option<String>) {
        self.source = Some(source.into());
        self.format = format;
    }

    /// Records why reading stopped early and the reader's counters, for the report.
    pub fn set_read_outcome(&mut self, error: Option<String>, read: &flowbundle_ingest::ReadStats) {
        self.read_error = error;
        self.truncated_records = read.truncated_records;
        self.clamped_lengths = read.clamped_lengths;
        self.skipped_blocks = read.skipped.total();
    }

    pub fn config(&self) -> &StatsConfig {
        &self.cfg
    }

    /// Packets pushed so far.
    pub fn packets(&self) -> u64 {
        self.c.packets
    }

    /// The flow table (for tests of the cap, and for tools that want every flow rather than the top ten).
    pub fn flow_table(&self) -> &FlowTable {
        &self.flows
    }

    /// Approximate bytes held: flow table, recency tree, density set, rate ring, fragment cache.
    pub fn memory_bytes(&self) -> usize {
        self.flows.memory_bytes()
            + self.recency.memory_bytes()
            + self.density.memory_bytes()
            + rate::BUCKETS * 8
            + self.frag_ports.capacity() * 64
            + size_of::<Counters>()
    }

    /// Counts one packet.
    pub fn push(&mut self, rec: &PacketRecord<'_>) {
        let c = &mut self.c;
        let wire = u64::from(rec.orig_len);
        c.packets += 1;
        c.captured_bytes += rec.data.len() as u64;
        c.wire_bytes += wire;
        let ts = rec.ts_ns;
        match c.first_ts {
            None => {
                c.first_ts = Some(ts);
                c.min_ts = ts;
                c.max_ts = ts;
            }
            Some(_) => {
                c.out_of_order += u64::from(ts < c.last_ts);
                c.min_ts = c.min_ts.min(ts);
                c.max_ts = c.max_ts.max(ts);
            }
        }
        c.last_ts = ts;
        let b = SIZE_BUCKETS
            .iter()
            .position(|&(_, hi)| rec.orig_len <= hi)
            .unwrap_or(SIZE_BUCKETS.len() - 1);
        c.sizes[b] += 1;
        c.size_bytes[b] += wire;
        count_link_type(c, rec.link_type);
        self.rate.add(ts, wire);

        let d = decode(rec, &self.cfg.decode);
        self.decode_stats.record(&d);
        let c = &mut self.c;
        c.vlan_tagged += u64::from(d.vlan_count > 0);
        c.multi_tagged += u64::from(d.vlan_count > 1);
        c.mpls += u64::from(d.mpls_depth > 0);
        c.pppoe += u64::from(d.pppoe_session.is_some());
        c.tunnelled += u64::from(d.tunnels > 0);
        let cost = match &mut self.cost {
            Some(m) => {
                let x = m.cost(rec, &d);
                self.c.cost_total += x;
                x
            }
            None => 0,
        };
        let Some(ip) = d.ip else { return };
        self.count_ip(&ip, wire);
        let Some(key) = flow_key(&d, &ip, &mut self.frag_ports, ts) else {
            return;
        };
        self.count_flow(&key, ts, wire, cost);
    }

    fn count_ip(&mut self, ip: &Ip, wire: u64) {
        let c = &mut self.c;
        if ip.is_v4() {
            c.ipv4 += 1;
        } else {
            c.ipv6 += 1;
        }
        c.ip_protocols.0[usize::from(ip.proto)] += 1;
        c.ip_protocol_bytes.0[usize::from(ip.proto)] += wire;
        if ip.is_fragment() {
            c.fragments += 1;
            if ip.is_later_fragment() {
                c.later_fragments += 1;
            } else {
                c.first_fragments += 1;
            }
            if ip.is_v4() {
                c.ipv4_fragments += 1;
            } else {
                c.ipv6_fragments += 1;
            }
        }
        // Transport packets: those that carry the start of a transport header (not later fragments), whether or
        // not the header was captured whole (a cut header is still a TCP packet on the wire).
        if !ip.is_later_fragment() {
            match (ip.proto, ip.is_v6()) {
                (6, _) => c.tcp += 1,
                (17, _) => c.udp += 1,
                (1, false) => c.icmp += 1,
                (58, true) => c.icmpv6 += 1,
                (132, _) => c.sctp += 1,
                _ => {}
            }
        }
    }

    fn count_flow(&mut self, key: &FlowKey, ts: u64, wire: u64, cost: u64) {
        let hash = hash_of(key);
        let seq = self.c.ip_seq;
        self.c.ip_seq += 1;
        self.density.add(hash);
        let i = match self.flows.count(hash, key, ts, wire) {
            Slot::Known(i) | Slot::New(i) => i,
            Slot::Full => return,
        };
        if self.cost.is_some() {
            self.flows.add_cost(i, cost);
            let position = self.flows.get_mut(i).map_or(1, |e| e.packets);
            let by = &mut self.c.cost_by_position;
            if by.is_empty() {
                by.resize(COST_POSITIONS + 1, (0, 0));
            }
            let b = (position.clamp(1, COST_POSITIONS as u64 + 1) - 1) as usize;
            if let Some(slot) = by.get_mut(b) {
                slot.0 += 1;
                slot.1 += cost;
            }
        }
        let prev = self.last_seq(i, seq);
        if let Some(distinct) = self.recency.touch(i) {
            let window = seq - prev - 1;
            let c = &mut self.c;
            c.ufr_samples += 1;
            c.ufr_sum_window += u128::from(window);
            c.ufr_sum_distinct += u128::from(distinct);
            if window > 0 {
                c.ufr_sum_ratio += distinct as f64 / window as f64;
            }
        }
    }

    /// The flow's previous position in the IP-packet sequence (its current one for a new flow), replaced by `seq`.
    fn last_seq(&mut self, i: u32, seq: u64) -> u64 {
        match self.flows.get_mut(i) {
            Some(e) if e.packets > 1 => std::mem::replace(&mut e.last_seq, seq),
            Some(e) => {
                e.last_seq = seq;
                seq
            }
            None => seq,
        }
    }

    /// The report so far (the collector can keep counting afterwards).
    pub fn finish(&self) -> TraceStats {
        report::build(self)
    }
}

/// The packet's flow: the 5-tuple of [`FlowKey::from_decoded_with`] (later fragments take their first fragment's ports), and
/// one more rule: a TCP, UDP or SCTP header cut short by the snap length, or with a bad length field, has no
/// decoded ports, yet its first four bytes (inside the IP datagram) still name them. Keying such a packet on ports 0
/// would make a phantom connection of every damaged packet; nDPI and tshark read the ports too.
fn flow_key(d: &Decoded<'_>, ip: &Ip, ports: &mut FragmentPorts, ts: u64) -> Option<FlowKey> {
    // The canonical 5-tuple alone (not the engine's ICMP type pairs or tunnel depth): the flows the reference tools
    // count.
    let key = FlowKey::from_decoded_with(d, ports, ts)?.0.five_tuple();
    let cut = matches!(
        d.outcome,
        Outcome::Truncated(Layer::Tcp | Layer::Udp | Layer::Sctp)
            | Outcome::Malformed(Malformed::Tcp | Malformed::Udp)
    );
    if !cut || ip.is_later_fragment() || d.ports().is_some() {
        return Some(key);
    }
    let at = d.l4_offset as usize;
    match d.data.get(at..at + 4) {
        Some(&[a, b, c, e]) if at + 4 <= d.l3_end as usize => Some(
            FlowKey::new(
                ip.src,
                u16::from_be_bytes([a, b]),
                ip.dst,
                u16::from_be_bytes([c, e]),
                ip.proto,
            )
            .0,
        ),
        _ => Some(key),
    }
}

fn count_link_type(c: &mut Counters, lt: LinkType) {
    if let Some(e) = c.link_types.iter_mut().find(|(l, _)| *l == lt) {
        e.1 += 1;
    } else if c.link_types.len() < MAX_LINK_TYPES {
        c.link_types.push((lt, 1));
    } else {
        c.other_link_types += 1;
    }
}

/// Reads a whole capture through `collector`, stopping at the end or at the first read error (kept in the
/// report: the packets before the damage are counted, as tshark prints what it could read).
pub fn run_reader(reader: &mut CaptureReader, collector: &mut Collector, progress: Progress) {
    let total = match (reader.format().gzip, collector.source.as_deref()) {
        (false, Some(p)) => std::fs::metadata(p).ok().map(|m| m.len()),
        _ => None,
    };
    let mut bar = DelayedBar::new(progress, total);
    let mut error = None;
    loop {
        match reader.next_packet() {
            Ok(Some(rec)) => {
                collector.push(&rec);
                if collector.c.packets.is_multiple_of(PROGRESS_EVERY) {
                    bar.tick(reader.position(), collector.c.packets);
                }
            }
            Ok(None) => break,
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    bar.finish();
    collector.set_read_outcome(error, reader.stats());
}

/// Statistics of a capture file with the default cost-free collector. Fails only when the file cannot be opened
/// or is not a capture at all; damage later in the file ends the count there and is reported in
/// [`ReadInfo::error`].
pub fn stats_file(path: impl AsRef<Path>, cfg: &StatsConfig) -> Result<TraceStats, Error> {
    run_file(path, Collector::new(*cfg), Progress::Hidden)
}

/// [`stats_file`] with a prepared collector (a cost model) and optional progress bar.
pub fn run_file(
    path: impl AsRef<Path>,
    mut collector: Collector,
    progress: Progress,
) -> Result<TraceStats, Error> {
    let path = path.as_ref();
    let mut reader = CaptureReader::open(path)?;
    let format = format_name(&reader);
    collector.set_source(path.display().to_string(), Some(format));
    run_reader(&mut reader, &mut collector, progress);
    Ok(collector.finish())
}

/// Statistics of a preloaded trace.
pub fn stats_trace(trace: &Trace, cfg: &StatsConfig) -> TraceStats {
    let mut c = Collector::new(*cfg);
    for rec in trace.iter() {
        c.push(&rec);
    }
    let s = trace.stats();
    c.set_read_outcome(None, s);
    c.finish()
}

fn format_name(r: &CaptureReader) -> String {
    let f = r.format();
    let container = match f.container {
        flowbundle_ingest::Container::Pcap => "pcap",
        flowbundle_ingest::Container::PcapModified => "pcap (modified)",
        flowbundle_ingest::Container::PcapNg => "pcapng",
    };
    if f.gzip {
        format!("{container}, gzip")
    } else {
        container.to_string()
    }
}

/// The result of a pass: serialise it with serde (`--json`) or print [`TraceStats::render_table`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceStats {
    /// The file read, when there was one.
    pub source: Option<String>,
    /// Container and compression.
    pub format: Option<String>,
    /// Packets per link type.
    pub link_types: Vec<LinkTypeCount>,
    pub packets: u64,
    pub captured_bytes: u64,
    pub wire_bytes: u64,
    pub time: TimeStats,
    /// Wire Mb/s over the duration (`None` when the duration is 0).
    pub avg_mbps: Option<f64>,
    /// The best window's Mb/s (`None` without packets); details in `max_rate`.
    pub max_mbps: Option<f64>,
    pub max_rate: MaxRate,
    pub connections: Connections,
    pub connection_density: ConnectionDensity,
    pub unique_flow_rate: UniqueFlowRate,
    pub top_by_packets: Vec<TopConnection>,
    pub top_by_bytes: Vec<TopConnection>,
    pub packet_sizes: Vec<SizeBucket>,
    pub protocols: ProtocolMix,
    pub encapsulation: Encapsulation,
    pub decode: DecodeStats,
    pub read: ReadInfo,
    /// Present with a [`CostModel`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostStats>,
    /// Bytes the collector held at the end (flow table included).
    pub memory_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinkTypeCount {
    /// LINKTYPE_ number; `None` for the sum of link types beyond the first 16.
    pub link_type: Option<u32>,
    pub name: String,
    pub packets: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimeStats {
    /// Timestamps of the first and last packets in file order (ns since the epoch).
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    /// Earliest and latest timestamps.
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// `max_ns - min_ns`.
    pub duration_ns: u64,
    pub duration_s: f64,
    /// Packets whose timestamp is earlier than the previous packet's.
    pub out_of_order: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MaxRate {
    pub window_ns: u64,
    /// Wire bytes in the best window, and where it starts.
    pub bytes: u64,
    pub start_ns: Option<u64>,
    /// True when the capture is shorter than one window (the "sustained" rate then covers all of it).
    pub shorter_than_window: bool,
    /// Packets out of time order that could not count in every window they belong to (see [`rate`]).
    pub reordered: u64,
    pub too_late: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Connections {
    pub tcp: u64,
    pub udp: u64,
    /// Table 1's "Conns.": TCP + UDP.
    pub tcp_udp: u64,
    /// Flows of other IP protocols (ICMP, ESP, GRE, ...).
    pub other: u64,
    /// All flows tracked.
    pub flows: u64,
    /// The flow-table cap.
    pub max_flows: u64,
    /// Packets and wire bytes of flows that found the table full.
    pub untracked_packets: u64,
    pub untracked_bytes: u64,
    /// False when packets went untracked: the counts above are then lower bounds.
    pub exact: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ConnectionDensity {
    /// Packets per window.
    pub window: usize,
    /// Mean distinct flows per full window (see [`density`]).
    pub mean: Option<f64>,
    pub full_windows: u64,
    pub partial_packets: u64,
    pub partial_flows: u64,
    /// The mean comes from the one partial window (fewer IP packets than a window).
    pub partial: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UniqueFlowRate {
    /// Mean share of distinct flows in the window between two packets of a flow.
    pub rate: Option<f64>,
    /// Mean window size (packets strictly between two packets of a flow).
    pub avg_window: Option<f64>,
    /// Mean distinct flows per window.
    pub avg_unique_flows: Option<f64>,
    /// Packets whose flow was seen before (the samples averaged).
    pub samples: u64,
    /// False when the flow table overflowed (see the module documentation).
    pub exact: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopConnection {
    /// IP protocol number and name.
    pub proto: u8,
    pub proto_name: String,
    /// The canonical key's endpoints (the lower address and port first).
    pub a: String,
    pub a_port: u16,
    pub b: String,
    pub b_port: u16,
    pub packets: u64,
    pub bytes: u64,
    /// Share of all the capture's packets and wire bytes.
    pub packet_share: f64,
    pub byte_share: f64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// Inspection cost (with a [`CostModel`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SizeBucket {
    /// Wire length range, inclusive (`max` absent for the last, open bucket).
    pub min: u32,
    pub max: Option<u32>,
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProtocolMix {
    /// Packets with an IPv4 / IPv6 header (the outermost, or the innermost with `--decap`).
    pub ipv4: u64,
    pub ipv6: u64,
    /// Packets without a decoded IP header (ARP, LLDP, other link types, cut before IP).
    pub non_ip: u64,
    /// IP packets that carry the start of a transport header of this protocol (later fragments excluded; a
    /// header cut by the snap length still counts).
    pub tcp: u64,
    pub udp: u64,
    pub icmp: u64,
    pub icmpv6: u64,
    pub sctp: u64,
    /// IP packets by protocol number (after IPv6 extension headers), later fragments included.
    pub ip_protocols: Vec<IpProtocolCount>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpProtocolCount {
    pub proto: u8,
    pub name: String,
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Encapsulation {
    /// Packets with at least one VLAN tag, and with two or more (QinQ).
    pub vlan_tagged: u64,
    pub multi_tagged: u64,
    pub mpls: u64,
    pub pppoe: u64,
    /// Packets decapsulated through a tunnel (with `--decap`).
    pub tunnelled: u64,
    /// IP fragments (first or not), split by position and family.
    pub fragmented: u64,
    pub first_fragments: u64,
    pub later_fragments: u64,
    pub ipv4_fragments: u64,
    pub ipv6_fragments: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadInfo {
    /// A record cut by the end of the file (0 or 1).
    pub truncated_records: u64,
    /// Packets whose recorded original length was impossible, counted at their captured length instead.
    pub clamped_lengths: u64,
    /// pcapng blocks that are not packets.
    pub skipped_blocks: u64,
    /// Why reading stopped before the end, if it did.
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostStats {
    pub unit: String,
    /// Cost of every packet.
    pub total: u64,
    /// Mean cost per packet (the ANCS'10 Table 1 "Avg. CPP" with cycles).
    pub per_packet: Option<f64>,
    /// Mean nanoseconds per packet, when the model's unit converts to time.
    pub ns_per_packet: Option<f64>,
    /// The flows with the highest total cost (their `cost` field), most expensive first.
    pub top: Vec<TopConnection>,
    /// Cost by a packet's position in its flow (see the module documentation): positions 1 to
    /// [`COST_POSITIONS`], then one bucket for every later packet; positions no packet reached are left out.
    pub by_position: Vec<PositionCost>,
    /// Packets outside any tracked flow (not IP, or the flow table was full) and their cost.
    pub unpositioned_packets: u64,
    pub unpositioned_cost: u64,
}

/// The cost of the packets at one position in their flows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PositionCost {
    /// 1 for flows' first packets; the last bucket starts at [`COST_POSITIONS`] + 1.
    pub position: u32,
    /// False for the last bucket, which holds every later position.
    pub exact: bool,
    pub packets: u64,
    pub total: u64,
    /// Mean cost of one packet at this position.
    pub mean: f64,
    /// `mean` in nanoseconds, when the unit converts to time.
    pub mean_ns: Option<f64>,
}

/// Name of an IP protocol number, for reports.
pub fn ip_proto_name(p: u8) -> Option<&'static str> {
    Some(match p {
        0 => "hopopt",
        1 => "icmp",
        2 => "igmp",
        4 => "ipip",
        6 => "tcp",
        17 => "udp",
        41 => "ipv6",
        43 => "ipv6-route",
        44 => "ipv6-frag",
        46 => "rsvp",
        47 => "gre",
        50 => "esp",
        51 => "ah",
        58 => "icmpv6",
        59 => "ipv6-nonxt",
        60 => "ipv6-opts",
        88 => "eigrp",
        89 => "ospf",
        103 => "pim",
        112 => "vrrp",
        115 => "l2tp",
        132 => "sctp",
        136 => "udplite",
        _ => return None,
    })
}
