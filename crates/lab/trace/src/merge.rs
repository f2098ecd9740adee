//! # `trace merge`: traffic aggregation (Verdú thesis §3.4.1)
//!
//! Public captures come from narrow links; stateful processing must be tested at higher *traffic aggregation*
//! (more flows active between two packets of one flow). The thesis builds it by merging several captures:
//! each input is rebased to a common start, its addresses are renormalized so that flows of different inputs are
//! independent, and the packets are interleaved by timestamp, equal timestamps being taken round-robin. The result
//! behaves like a node with N input links: about N times the bandwidth, **the window between two packets of a flow
//! grows linearly with N while the unique flow rate stays similar** (its Figure 3.8 and §3.4.1). This module does
//! exactly that, streaming:
//!
//! * **Inputs** are read with one [`CaptureReader`] each (constant memory per input). Each input's timestamps are
//!   shifted so that its first packet lands on the earliest first timestamp among the inputs.
//! * **`--factor K`** replicates every input K times, copy `c` (0-based) shifted by `c` seconds (`--shift` sets
//!   another step). The shift must be long against a flow's bursts: copies shifted by less than the gaps inside a
//!   burst interleave *within* it, which turns back-to-back packets of a flow into packets separated by a copy of
//!   themselves and inflates the unique flow rate (on `reassembly/example2.pcap` at 4×: 0.15 → 0.20 with a 1 s
//!   step, 0.32 with 10 ms). It must be short against the capture, because the first and last `(K−1)·shift` are
//!   only partly aggregated. One second does both for captures of a minute or more: the window between two
//!   packets of a flow grows K times (4.04× at 4×) at a similar unique flow rate, as in the thesis. (Copies are
//!   the same traffic, time-shifted: merging *different* captures gives independent traffic.)
//! * **Addresses**: every (input, copy) is its own address space: each distinct address of a source is given the
//!   next address of a counter shared by all sources (`10.0.0.1`, `10.0.0.2`, ...; IPv6 `fd00::1`, ...), the
//!   thesis's "normalize sanitized IP addresses and guarantee independency among sanitized traces". Flows of
//!   different sources can therefore never collide, and flows within a source stay distinct: the output has
//!   exactly the sum of the inputs' packets and flows. Checksums are fixed as in [`crate::rewrite::addresses`]
//!   (ICMP quotes and ARP included). The table of addresses is capped (`max_addresses`); a full table stops the
//!   run with a clear error rather than growing.
//! * **Merging** is a k-way merge on (timestamp, load order): a binary heap holds one head packet per source, and
//!   a source whose head ties with another's goes after it, which serves equal timestamps round-robin.
//! * **Link types**: if every input starts with the same link type, the output has it; otherwise the output is
//!   Ethernet and raw-IP, loopback and Linux-cooked frames get an Ethernet header ([`crate::rewrite::link`]).
//!   Frames that cannot be converted are counted and left out.
//!
//! With `report`, the run feeds every input packet (first copy) to one [`Collector`] per input and every output
//! packet to another, so the report gives the unique flow rate, mean window and connection density before and
//! after (the `trace stats` definitions) without another pass over the files.
//!
//! Cost per packet: a copy into the source's buffer, a decode and two table lookups for the addresses, a heap
//! operation, the write; about 2–3 M packets/s on one core (`BENCHMARKS.md`), more without the report.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use flowbundle_ingest::{CaptureReader, LinkType, PacketRecord, Trace, TraceBuilder};
use hashbrown::HashMap;
use serde::Serialize;

use crate::rewrite::progress::{Bar, TICK_EVERY, Unit};
use crate::rewrite::{
    AddressMap, AddressRewriter, Output, RewriteStats, RunCounts, ToolError, link,
};
use crate::stats::{Collector, Progress, StatsConfig, TraceStats};

/// Default cap on distinct (source, address) pairs.
pub const DEFAULT_MAX_ADDRESSES: usize = 1 << 22;
/// Default time between successive copies of `--factor`: one second (see the module documentation).
pub const DEFAULT_COPY_SHIFT_NS: u64 = 1_000_000_000;
/// Most copies `--factor` makes of each input.
pub const MAX_FACTOR: u32 = 4096;

/// How to merge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MergeConfig {
    /// Copies of each input (1 = each input once).
    pub factor: u32,
    /// Time between successive copies, in ns; `None`: [`DEFAULT_COPY_SHIFT_NS`].
    pub shift_ns: Option<u64>,
    /// Rewrite the inner header of tunnelled packets too.
    pub tunnels: bool,
    /// Cap on distinct (source, address) pairs.
    pub max_addresses: usize,
    /// Compute the aggregation metrics before and after.
    pub report: bool,
    pub progress: Progress,
}

impl Default for MergeConfig {
    fn default() -> Self {
        MergeConfig {
            factor: 1,
            shift_ns: None,
            tunnels: false,
            max_addresses: DEFAULT_MAX_ADDRESSES,
            report: true,
            progress: Progress::Hidden,
        }
    }
}

/// The traffic-aggregation metrics of one trace (from `trace stats`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Aggregation {
    pub packets: u64,
    /// Flows (all IP protocols).
    pub flows: u64,
    /// TCP and UDP connections (ANCS'10 Table 1's "Conns.").
    pub connections: u64,
    /// Verdú's unique flow rate.
    pub unique_flow_rate: Option<f64>,
    /// Mean packets between two packets of a flow.
    pub avg_window: Option<f64>,
    /// Mean distinct flows in that window.
    pub avg_unique_flows: Option<f64>,
    /// Distinct connections per 100 packets (ANCS'10).
    pub connection_density: Option<f64>,
    pub avg_mbps: Option<f64>,
    /// False when a flow table overflowed (the flow figures are then lower bounds).
    pub exact: bool,
}

impl Aggregation {
    /// The metrics of a `trace stats` result.
    pub fn from_stats(s: &TraceStats) -> Aggregation {
        Aggregation {
            packets: s.packets,
            flows: s.connections.flows,
            connections: s.connections.tcp_udp,
            unique_flow_rate: s.unique_flow_rate.rate,
            avg_window: s.unique_flow_rate.avg_window,
            avg_unique_flows: s.unique_flow_rate.avg_unique_flows,
            connection_density: s.connection_density.mean,
            avg_mbps: s.avg_mbps,
            exact: s.connections.exact && s.unique_flow_rate.exact,
        }
    }
}

/// One input of a merge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputReport {
    pub path: String,
    /// Packets read from one copy.
    pub packets: u64,
    /// Shift applied to copy 0 (ns, may be negative) and between copies (ns).
    pub rebase_ns: i64,
    pub copy_shift_ns: u64,
    /// The input's metrics (`report` only).
    pub before: Option<Aggregation>,
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeReport {
    pub counts: RunCounts,
    pub inputs: Vec<InputReport>,
    pub factor: u32,
    /// Link type of the output (LINKTYPE_ number).
    pub link_type: u32,
    /// Distinct (source, address) pairs given a new address.
    pub distinct_addresses: u64,
    pub rewrite: RewriteStats,
    /// The output's metrics (`report` only).
    pub after: Option<Aggregation>,
}

impl MergeReport {
    /// The sum of the inputs' flows times the factor: what the output must have (with exact tables).
    pub fn expected_flows(&self) -> Option<u64> {
        self.inputs
            .iter()
            .map(|i| i.before.map(|b| b.flows))
            .sum::<Option<u64>>()
            .map(|f| f * u64::from(self.factor))
    }
}

/// Gives each (source, address) the next sequential address; shared by all sources so their spaces are
/// disjoint.
#[derive(Debug)]
struct Remap {
    table: HashMap<(u32, IpAddr), IpAddr, foldhash::fast::FixedState>,
    next_v4: u32,
    next_v6: u128,
    cap: usize,
}

impl Remap {
    fn new(cap: usize) -> Remap {
        Remap {
            table: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0x6d65_7267)),
            next_v4: 0x0a00_0001,
            next_v6: (0xfd00 << 112) | 1,
            cap,
        }
    }
}

/// The view of the shared table for one source.
struct SourceMap<'a> {
    remap: &'a mut Remap,
    source: u32,
}

impl AddressMap for SourceMap<'_> {
    fn map(&mut self, addr: IpAddr) -> Result<IpAddr, ToolError> {
        let r = &mut *self.remap;
        if let Some(&a) = r.table.get(&(self.source, addr)) {
            return Ok(a);
        }
        if r.table.len() >= r.cap {
            return Err(ToolError::AddressCap { cap: r.cap });
        }
        let new = match addr {
            IpAddr::V4(_) => {
                let a = IpAddr::V4(Ipv4Addr::from(r.next_v4));
                r.next_v4 = r
                    .next_v4
                    .checked_add(1)
                    .ok_or(ToolError::AddressSpace("IPv4 merge"))?;
                a
            }
            IpAddr::V6(_) => {
                let a = IpAddr::V6(Ipv6Addr::from(r.next_v6));
                r.next_v6 += 1;
                a
            }
        };
        r.table.insert((self.source, addr), new);
        Ok(new)
    }
}

/// Where merged packets go.
trait MergeSink {
    fn write(
        &mut self,
        ts_ns: u64,
        link: LinkType,
        data: &[u8],
        orig_len: u32,
    ) -> Result<(), ToolError>;
}

impl MergeSink for Output {
    fn write(
        &mut self,
        ts_ns: u64,
        link: LinkType,
        data: &[u8],
        orig_len: u32,
    ) -> Result<(), ToolError> {
        Output::write(self, ts_ns, link, data, orig_len)
    }
}

/// An in-memory sink that converts to one link type as [`Output`] does.
struct BuilderSink {
    builder: TraceBuilder,
    link: LinkType,
    scratch: Vec<u8>,
    dropped: u64,
}

impl MergeSink for BuilderSink {
    fn write(
        &mut self,
        ts_ns: u64,
        link: LinkType,
        data: &[u8],
        orig_len: u32,
    ) -> Result<(), ToolError> {
        if link == self.link {
            self.builder.push(ts_ns, link, data, orig_len);
        } else if self.link == LinkType::ETHERNET
            && let Some(added) = link::to_ethernet(link, data, &mut self.scratch)
        {
            let orig = (i64::from(orig_len) + added).max(self.scratch.len() as i64);
            self.builder.push(
                ts_ns,
                self.link,
                &self.scratch,
                u32::try_from(orig).unwrap_or(u32::MAX),
            );
        } else {
            self.dropped += 1;
        }
        Ok(())
    }
}

/// A packet source: a file reader or a preloaded trace.
trait Source {
    fn next_record(&mut self) -> Result<Option<PacketRecord<'_>>, ToolError>;
    fn position(&self) -> u64;
}

impl Source for CaptureReader {
    fn next_record(&mut self) -> Result<Option<PacketRecord<'_>>, ToolError> {
        Ok(self.next_packet()?)
    }
    fn position(&self) -> u64 {
        CaptureReader::position(self)
    }
}

struct TraceSource<'a> {
    trace: &'a Trace,
    next: usize,
}

impl Source for TraceSource<'_> {
    fn next_record(&mut self) -> Result<Option<PacketRecord<'_>>, ToolError> {
        let r = self.trace.try_get(self.next);
        if r.is_some() {
            self.next += 1;
        }
        Ok(r)
    }
    fn position(&self) -> u64 {
        self.next as u64
    }
}

/// One (input, copy) stream with its current head packet.
struct Stream<S> {
    src: S,
    input: usize,
    copy: u32,
    /// Added to every timestamp.
    offset: i128,
    buf: Vec<u8>,
    ts: u64,
    orig_len: u32,
    link: LinkType,
    done: bool,
    consumed: u64,
}

impl<S: Source> Stream<S> {
    /// Loads the next packet; feeds the original record to `before` when given.
    fn load(&mut self, before: Option<&mut Collector>) -> Result<(), ToolError> {
        let last = self.src.position();
        match self.src.next_record()? {
            Some(p) => {
                if let Some(c) = before {
                    c.push(&p);
                }
                self.buf.clear();
                self.buf.extend_from_slice(p.data);
                self.ts = (i128::from(p.ts_ns) + self.offset).clamp(0, i128::from(u64::MAX)) as u64;
                self.orig_len = p.orig_len;
                self.link = p.link_type;
            }
            None => self.done = true,
        }
        self.consumed = self.src.position().saturating_sub(last);
        Ok(())
    }
}

/// A prepared merge: every stream opened with its head packet loaded and the output link type decided.
struct Merger<S> {
    streams: Vec<Stream<S>>,
    befores: Vec<Option<Collector>>,
    inputs: Vec<InputReport>,
    link: LinkType,
    cfg: MergeConfig,
}

impl<S: Source> Merger<S> {
    fn prepare(
        mut open: impl FnMut(usize) -> Result<S, ToolError>,
        names: &[String],
        cfg: &MergeConfig,
    ) -> Result<Merger<S>, ToolError> {
        if names.is_empty() {
            return Err(ToolError::usage("trace merge needs at least one input"));
        }
        if cfg.factor == 0 || cfg.factor > MAX_FACTOR {
            return Err(ToolError::usage(format!(
                "--factor must be between 1 and {MAX_FACTOR}, not {}",
                cfg.factor
            )));
        }
        if names.len() == 1 && cfg.factor == 1 {
            return Err(ToolError::usage(
                "merging one input once changes nothing but its addresses: give several inputs or --factor K",
            ));
        }
        let k = cfg.factor;
        // First timestamps of every input.
        let mut firsts = Vec::with_capacity(names.len());
        for i in 0..names.len() {
            let mut s = open(i)?;
            firsts.push(s.next_record()?.map(|p| p.ts_ns));
        }
        let shift = cfg.shift_ns.unwrap_or(DEFAULT_COPY_SHIFT_NS);
        let base = firsts.iter().flatten().copied().min().unwrap_or(0);
        let mut streams = Vec::with_capacity(names.len() * k as usize);
        let mut befores: Vec<Option<Collector>> = names
            .iter()
            .map(|_| cfg.report.then(|| Collector::new(StatsConfig::default())))
            .collect();
        let mut inputs: Vec<InputReport> = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let rebase = i128::from(base) - i128::from(firsts[i].unwrap_or(base));
            inputs.push(InputReport {
                path: name.clone(),
                packets: 0,
                rebase_ns: i64::try_from(rebase).unwrap_or(i64::MIN),
                copy_shift_ns: shift,
                before: None,
            });
            for c in 0..k {
                let mut s = Stream {
                    src: open(i)?,
                    input: i,
                    copy: c,
                    offset: rebase + i128::from(c) * i128::from(shift),
                    buf: Vec::with_capacity(2048),
                    ts: 0,
                    orig_len: 0,
                    link: LinkType::ETHERNET,
                    done: false,
                    consumed: 0,
                };
                s.load(if c == 0 { befores[i].as_mut() } else { None })?;
                streams.push(s);
            }
        }
        // The output's link type: the common one, else Ethernet.
        let mut links = streams.iter().filter(|s| !s.done).map(|s| s.link);
        let link = match links.next() {
            Some(l) if links.all(|m| m == l) => l,
            _ => LinkType::ETHERNET,
        };
        Ok(Merger {
            streams,
            befores,
            inputs,
            link,
            cfg: *cfg,
        })
    }

    /// Runs the k-way merge into `sink`.
    fn run(
        mut self,
        sink: &mut dyn MergeSink,
        bar: &mut Bar,
    ) -> Result<(MergeReport, Option<Aggregation>), ToolError> {
        let mut after = self
            .cfg
            .report
            .then(|| Collector::new(StatsConfig::default()));
        let mut remap = Remap::new(self.cfg.max_addresses);
        let mut rewriter = AddressRewriter::new(self.cfg.tunnels);
        let mut heap: BinaryHeap<Reverse<(u64, u64, u32)>> =
            BinaryHeap::with_capacity(self.streams.len());
        let mut order: u64 = 0;
        for (j, s) in self.streams.iter().enumerate() {
            if !s.done {
                heap.push(Reverse((s.ts, order, j as u32)));
                order += 1;
            }
        }
        let mut counts = RunCounts::default();
        let mut position: u64 = self.streams.iter().map(|s| s.consumed).sum();
        while let Some(Reverse((_, _, j))) = heap.pop() {
            let Some(s) = self.streams.get_mut(j as usize) else {
                break;
            };
            counts.read += 1;
            let mut map = SourceMap {
                remap: &mut remap,
                source: j,
            };
            rewriter.rewrite(s.link, &mut s.buf, &mut map)?;
            sink.write(s.ts, s.link, &s.buf, s.orig_len)?;
            if let Some(c) = after.as_mut() {
                c.push(&PacketRecord {
                    ts_ns: s.ts,
                    orig_len: s.orig_len,
                    interface: 0,
                    link_type: s.link,
                    data: &s.buf,
                });
            }
            let before = if s.copy == 0 {
                self.inputs[s.input].packets += 1;
                self.befores[s.input].as_mut()
            } else {
                None
            };
            s.load(before)?;
            position += s.consumed;
            if !s.done {
                heap.push(Reverse((s.ts, order, j)));
                order += 1;
            }
            if counts.read.is_multiple_of(TICK_EVERY) {
                bar.tick(position, counts.read);
            }
        }
        for (inp, c) in self.inputs.iter_mut().zip(self.befores) {
            inp.before = c.map(|c| Aggregation::from_stats(&c.finish()));
        }
        let report = MergeReport {
            counts,
            inputs: self.inputs,
            factor: self.cfg.factor,
            link_type: self.link.0,
            distinct_addresses: remap.table.len() as u64,
            rewrite: rewriter.stats(),
            after: None,
        };
        Ok((report, after.map(|c| Aggregation::from_stats(&c.finish()))))
    }
}

/// Merges capture files into `output`; see the module documentation.
pub fn merge_files(
    inputs: &[impl AsRef<Path>],
    output: impl AsRef<Path>,
    cfg: &MergeConfig,
) -> Result<MergeReport, ToolError> {
    let paths: Vec<PathBuf> = inputs.iter().map(|p| p.as_ref().to_path_buf()).collect();
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let output = output.as_ref();
    if paths.iter().any(|p| p.as_path() == output) {
        return Err(ToolError::usage(format!(
            "the output {} is also an input",
            output.display()
        )));
    }
    let mut total = 0u64;
    let mut gzip = false;
    for p in &paths {
        let r = CaptureReader::open(p)?;
        gzip |= r.format().gzip;
        total += std::fs::metadata(p).map_or(0, |m| m.len());
    }
    let total = total.saturating_mul(u64::from(cfg.factor.max(1)));
    let merger = Merger::prepare(|i| Ok(CaptureReader::open(&paths[i])?), &names, cfg)?;
    let mut out = Output::with_link(output, merger.link)?;
    let mut bar = Bar::new(cfg.progress, Unit::Bytes, (!gzip).then_some(total), "merge");
    let result = merger.run(&mut out, &mut bar);
    bar.finish();
    let (mut report, after) = result?;
    let written = out.finish(LinkType(report.link_type))?;
    report.counts.written = written.written;
    report.counts.dropped_link_type = written.dropped_link_type;
    report.after = after;
    Ok(report)
}

/// Merges preloaded traces into a new in-memory trace (the bench harness and tests build big traces this way).
pub fn merge_traces(
    traces: &[&Trace],
    cfg: &MergeConfig,
) -> Result<(Trace, MergeReport), ToolError> {
    let names: Vec<String> = (0..traces.len()).map(|i| format!("trace {i}")).collect();
    let packets: usize = traces.iter().map(|t| t.len()).sum();
    let bytes: u64 = traces.iter().map(|t| t.bytes()).sum();
    let k = cfg.factor.max(1) as usize;
    let merger = Merger::prepare(
        |i| {
            Ok(TraceSource {
                trace: traces[i],
                next: 0,
            })
        },
        &names,
        cfg,
    )?;
    let mut sink = BuilderSink {
        builder: TraceBuilder::with_capacity(packets * k, usize::try_from(bytes).unwrap_or(0) * k),
        link: merger.link,
        scratch: Vec::new(),
        dropped: 0,
    };
    let mut bar = Bar::new(Progress::Hidden, Unit::Packets, None, "merge");
    let (mut report, after) = merger.run(&mut sink, &mut bar)?;
    report.counts.dropped_link_type = sink.dropped;
    report.counts.written = report.counts.read - sink.dropped;
    report.after = after;
    Ok((sink.builder.build(), report))
}
