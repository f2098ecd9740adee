//! The pre-scheduling stage, run while the trace is preloaded (ANCS'10 §4.1: "the packets are parsed by the packet
//! scheduler during load to extract the FID and calculate the hash"), so the timed run dispatches 16-byte
//! descriptors and nothing else.
//!
//! For every captured packet, in capture order, decode's one pre-scheduling stage ([`Prestage`]): decode to the flow
//! key, IP defragmentation (ARCHITECTURE.md: before scheduling, so every policy sees a datagram's real ports), then
//! the three flow hashes into a [`Desc`]. Fragments are absorbed; the fragment that
//! completes a datagram is replaced by the whole datagram (a raw-IP packet), so the dispatched sequence can differ
//! from the file. When it does, the dispatched packets are copied into a new [`Trace`] (through [`TraceBuilder`]) so
//! that a descriptor's `id` still indexes the trace the workers read; when no fragment was seen the loaded trace is
//! used as it is (no copy).
//!
//! Several inputs are **merged in memory**: each input's timestamps are rebased to start at zero and the packets are
//! interleaved by time (a k-way merge), which raises the connection density as traffic aggregation does. Their
//! address spaces are kept apart by salting every hash with the input's index ([`salted`]: input 0 is unsalted, so one
//! file gives exactly `flowbundle-decode`'s hashes) and by keying flows on (input, flow key). The packet bytes are not
//! rewritten: a workload that keys flows on the packet's own addresses (the engine) sees two inputs' identical 5-tuples
//! as one connection; `flowbundle trace merge` (which rewrites addresses) avoids that when it matters.
//!
//! Per packet the stage also keeps a dense flow index (for per-flow reordering and delay variation) and the packet's
//! number in its input (to read per-packet cost files). Packets without an IP header get all-zero hashes (one bundle,
//! as a dispatcher that finds no FID would do) and no flow. Memory: the trace, plus 24 bytes per packet, plus one
//! hash-map entry per flow; the defragmenter is bounded by its own caps (counted in [`PrepStats::defrag`]).

use flowbundle_decode::prestage::{Dispatch, Keyed, Prestage, PrestageOptions, desc, salted};
use flowbundle_decode::{DecodeOptions, DefragConfig, FlowKey};
use flowbundle_ingest::{LinkType, PacketRecord, Trace, TraceBuilder};
use flowbundle_scheduler::Desc;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Flow index of a packet that has none (not IP).
pub const NO_FLOW: u32 = u32::MAX;

/// Most packets a prepared trace may hold (descriptor ids are 32-bit).
pub const MAX_PACKETS: usize = u32::MAX as usize - 1;

/// How the pre-scheduling stage decodes and hashes.
#[derive(Clone, Debug)]
pub struct PrepOptions {
    pub decode: DecodeOptions,
    pub defrag: DefragConfig,
    /// Key of the connection hash (`Desc::conn`); fixed so runs are reproducible.
    pub seed: u64,
    /// Keep at most this many packets (of the merged input, before defragmentation).
    pub limit: usize,
}

impl Default for PrepOptions {
    fn default() -> Self {
        PrepOptions {
            decode: DecodeOptions::default(),
            defrag: DefragConfig::default(),
            seed: PrestageOptions::default().seed,
            limit: MAX_PACKETS,
        }
    }
}

impl From<&PrepOptions> for PrestageOptions {
    fn from(o: &PrepOptions) -> Self {
        PrestageOptions {
            decode: o.decode,
            defrag: o.defrag,
            seed: o.seed,
        }
    }
}

/// Counters of the pre-scheduling stage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PrepStats {
    /// Packets read from the inputs (after `limit`).
    pub input_packets: u64,
    /// Packets dispatched (input packets − absorbed fragments + reassembled datagrams).
    pub packets: u64,
    /// Packets with no IP header (hashed as bundle 0, no flow).
    pub non_ip: u64,
    /// IP packets whose headers did not decode completely: hashed by their host pair (FID) only, no flow.
    pub undecoded: u64,
    /// Fragments held by the defragmenter, or dropped by it (never dispatched).
    pub fragments_absorbed: u64,
    /// Datagrams reassembled (dispatched as raw IP packets).
    pub reassembled: u64,
    /// Distinct flows (canonical 5-tuples per input).
    pub flows: u64,
    /// Defragmenter counters (drops by reason, overlaps), as `flowbundle-decode` serialises its `DefragStats`.
    pub defrag: serde_json::Value,
    /// Decode outcomes (every input packet, plus each reassembled datagram), as `flowbundle-decode` serialises its
    /// `DecodeStats`.
    pub decode: serde_json::Value,
}

/// A trace ready for the harness: the packets the dispatcher sends, one descriptor each.
pub struct Prepared {
    /// Name for reports (the file name, or the inputs joined with `+`).
    pub name: String,
    /// The dispatched packets; `descs[i].id == i` indexes it.
    pub trace: Trace,
    pub descs: Vec<Desc>,
    /// Capture time of each dispatched packet, rebased so the first input packet is at 0 (ns).
    pub ts_ns: Vec<u64>,
    /// Dense flow index of each packet (`NO_FLOW` for non-IP).
    pub flows: Vec<u32>,
    /// Number of the packet in its input file (for a reassembled datagram: the fragment that completed it).
    pub orig: Vec<u32>,
    /// Index of the input the packet came from.
    pub input: Vec<u16>,
    pub stats: PrepStats,
}

impl Prepared {
    pub fn len(&self) -> usize {
        self.descs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.descs.is_empty()
    }

    /// Bytes on the wire of all dispatched packets.
    pub fn wire_bytes(&self) -> u64 {
        self.trace.iter().map(|r| u64::from(r.orig_len)).sum()
    }

    /// From the first to the last timestamp, ns.
    pub fn duration_ns(&self) -> u64 {
        let lo = self.ts_ns.iter().copied().min().unwrap_or(0);
        let hi = self.ts_ns.iter().copied().max().unwrap_or(0);
        hi - lo
    }
}

/// Where a dispatched packet's bytes are.
#[derive(Clone, Copy)]
enum Src {
    /// Packet `index` of input `input`.
    Input { input: u16, index: u32 },
    /// Reassembled datagram `n` (in `extra`).
    Extra(u32),
}

/// Run the pre-scheduling stage over one or more loaded inputs (`(name, trace)`), merged by time.
pub fn prepare(inputs: Vec<(String, Trace)>, opts: &PrepOptions) -> Prepared {
    let name = inputs
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join("+");
    let order = merge_order(&inputs, opts.limit.min(MAX_PACKETS));
    let mut pre = Prestage::new(opts);
    let mut stats = PrepStats {
        input_packets: order.len() as u64,
        ..PrepStats::default()
    };
    let mut flow_ids: HashMap<(u16, FlowKey), u32> = HashMap::new();
    let mut srcs: Vec<Src> = Vec::with_capacity(order.len());
    let mut extra: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut descs = Vec::with_capacity(order.len());
    let mut ts = Vec::with_capacity(order.len());
    let mut flows = Vec::with_capacity(order.len());
    let mut orig = Vec::with_capacity(order.len());
    let mut input_of = Vec::with_capacity(order.len());
    let bases: Vec<u64> = inputs.iter().map(|(_, t)| min_ts(t)).collect();

    for &(input, index) in &order {
        let trace = &inputs[usize::from(input)].1;
        let Some(rec) = trace.try_get(index as usize) else {
            continue;
        };
        let rel_ts = rec.ts_ns.saturating_sub(bases[usize::from(input)]);
        // Every packet goes through the one defragmenter (it also expires old datagrams by capture time).
        let Some(Dispatch {
            hashes,
            keyed,
            datagram,
        }) = pre.stage(&rec)
        else {
            continue;
        };
        let (src, len) = match datagram {
            None => (Src::Input { input, index }, rec.orig_len),
            Some(bytes) => {
                // The datagram keeps its completing fragment's capture time (the engine reads flow times from it).
                extra.push((rec.ts_ns, bytes.to_vec()));
                (Src::Extra(extra.len() as u32 - 1), bytes.len() as u32)
            }
        };
        let id = descs.len() as u32;
        let flow = match keyed {
            Keyed::Flow(k) => {
                let next = flow_ids.len() as u32;
                *flow_ids.entry((input, k)).or_insert(next)
            }
            Keyed::HostPair => {
                stats.undecoded += 1;
                NO_FLOW
            }
            Keyed::None => {
                stats.non_ip += 1;
                NO_FLOW
            }
        };
        descs.push(desc(id, salted(hashes, &keyed, input), len));
        ts.push(rel_ts);
        flows.push(flow);
        orig.push(index);
        input_of.push(input);
        srcs.push(src);
    }
    let pre = pre.stats();
    // The stage counts a completing fragment as absorbed too; here it is the datagram it was replaced by.
    stats.fragments_absorbed = pre.absorbed - pre.reassembled;
    stats.reassembled = pre.reassembled;
    stats.packets = descs.len() as u64;
    stats.flows = flow_ids.len() as u64;
    stats.defrag = to_value(&pre.defrag);
    // Every input packet, plus each reassembled datagram.
    let mut decode = pre.decode;
    decode.merge(&pre.reassembled_decode);
    stats.decode = to_value(&decode);

    let identity = inputs.len() == 1
        && extra.is_empty()
        && srcs.len() == inputs[0].1.len()
        && srcs
            .iter()
            .enumerate()
            .all(|(i, s)| matches!(s, Src::Input { index, .. } if *index as usize == i));
    let trace = if identity {
        inputs
            .into_iter()
            .next()
            .map(|(_, t)| t)
            .unwrap_or_else(|| TraceBuilder::new().build())
    } else {
        rebuild(&inputs, &srcs, &extra)
    };
    Prepared {
        name,
        trace,
        descs,
        ts_ns: ts,
        flows,
        orig,
        input: input_of,
        stats,
    }
}

/// Load and prepare capture files (one, or several merged by time).
pub fn prepare_files(
    paths: &[std::path::PathBuf],
    opts: &PrepOptions,
) -> Result<Prepared, flowbundle_ingest::Error> {
    let mut inputs = Vec::with_capacity(paths.len());
    for p in paths {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string());
        inputs.push((name, Trace::load(p)?));
    }
    Ok(prepare(inputs, opts))
}

fn to_value<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

fn min_ts(t: &Trace) -> u64 {
    t.iter().map(|r| r.ts_ns).min().unwrap_or(0)
}

/// Packets of all inputs in merged order: by rebased timestamp, ties by input then number. Within one input the file
/// order is kept even where timestamps go backwards (captures are not always sorted; the file order is what a live
/// capture delivered). At most `limit` packets.
fn merge_order(inputs: &[(String, Trace)], limit: usize) -> Vec<(u16, u32)> {
    let inputs = &inputs[..inputs.len().min(usize::from(u16::MAX))];
    if inputs.len() == 1 {
        let n = inputs[0].1.len().min(limit);
        return (0..n as u32).map(|i| (0, i)).collect();
    }
    let bases: Vec<u64> = inputs.iter().map(|(_, t)| min_ts(t)).collect();
    let mut heap = std::collections::BinaryHeap::new();
    let key = |input: usize, i: usize| -> Option<std::cmp::Reverse<(u64, usize, usize)>> {
        let r = inputs[input].1.try_get(i)?;
        Some(std::cmp::Reverse((
            r.ts_ns.saturating_sub(bases[input]),
            input,
            i,
        )))
    };
    for input in 0..inputs.len() {
        if let Some(k) = key(input, 0) {
            heap.push(k);
        }
    }
    let total: usize = inputs.iter().map(|(_, t)| t.len()).sum();
    let mut out = Vec::with_capacity(total.min(limit));
    while let Some(std::cmp::Reverse((_, input, i))) = heap.pop() {
        if out.len() >= limit {
            break;
        }
        out.push((input as u16, i as u32));
        if let Some(k) = key(input, i + 1) {
            heap.push(k);
        }
    }
    out
}

fn rebuild(inputs: &[(String, Trace)], srcs: &[Src], extra: &[(u64, Vec<u8>)]) -> Trace {
    let bytes: usize = srcs
        .iter()
        .map(|s| match *s {
            Src::Input { input, index } => inputs[usize::from(input)]
                .1
                .try_get(index as usize)
                .map_or(0, |r| r.data.len()),
            Src::Extra(n) => extra.get(n as usize).map_or(0, |e| e.1.len()),
        })
        .sum();
    let mut b = TraceBuilder::with_capacity(srcs.len(), bytes);
    for s in srcs {
        match *s {
            Src::Input { input, index } => {
                if let Some(r) = inputs[usize::from(input)].1.try_get(index as usize) {
                    b.push_record(&r);
                } else {
                    // Unreachable (the index came from this trace); keep ids aligned regardless.
                    b.push(0, LinkType::RAW, &[], 0);
                }
            }
            Src::Extra(n) => {
                let (ts, bytes) = extra
                    .get(n as usize)
                    .map_or((0, &[][..]), |(t, b)| (*t, b.as_slice()));
                let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
                b.push(ts, LinkType::RAW, bytes, len);
            }
        }
    }
    b.build()
}

/// The record of packet `id` of a prepared trace (what a worker reads).
pub fn record(p: &Prepared, id: u32) -> Option<PacketRecord<'_>> {
    p.trace.try_get(id as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowbundle_decode::{FlowHasher, decode_bytes};

    use flowbundle_testsupport::data as shared;

    #[test]
    fn one_file_keeps_the_trace_and_both_directions_share_hashes() {
        let Some(p) = shared("reassembly/example.pcap") else {
            return;
        };
        let prep = prepare_files(&[p], &PrepOptions::default()).unwrap();
        assert_eq!(prep.len(), 4631, "example.pcap has 4,631 packets");
        assert_eq!(prep.stats.fragments_absorbed, 0);
        assert_eq!(prep.trace.len(), prep.len());
        for (i, d) in prep.descs.iter().enumerate() {
            assert_eq!(d.id as usize, i);
        }
        // Every flow maps to one set of hashes (both directions agree).
        let mut by_flow: HashMap<u32, (u32, u32, u16)> = HashMap::new();
        for (d, &f) in prep.descs.iter().zip(&prep.flows) {
            if f != NO_FLOW {
                let e = by_flow.entry(f).or_insert((d.conn, d.rss, d.fid));
                assert_eq!(*e, (d.conn, d.rss, d.fid));
            }
        }
        assert!(prep.stats.flows > 50, "{} flows", prep.stats.flows);
        assert_eq!(by_flow.len() as u64, prep.stats.flows);
    }

    #[test]
    fn fragments_are_absorbed_and_the_datagram_carries_its_ports() {
        let Some(p) = shared("reassembly/frag_http_req.pcap") else {
            return;
        };
        let raw = Trace::load(&p).unwrap();
        let n = raw.len();
        let prep = prepare(vec![("frag".into(), raw)], &PrepOptions::default());
        assert!(prep.stats.reassembled >= 1, "{:?}", prep.stats);
        assert_eq!(
            prep.len() as u64,
            n as u64 - prep.stats.fragments_absorbed,
            "absorbed fragments are not dispatched; the completing one is replaced by its datagram"
        );
        assert_eq!(prep.trace.len(), prep.len());
        // The reassembled datagram is a raw IP packet with TCP ports: its flow is the HTTP connection's.
        let (i, rec) = prep
            .trace
            .iter()
            .enumerate()
            .find(|(_, r)| r.link_type == LinkType::RAW)
            .expect("a reassembled datagram");
        let d = decode_bytes(LinkType::RAW, rec.data, &DecodeOptions::default());
        assert_eq!(d.ports().map(|(_, dp)| dp), Some(80));
        assert_ne!(prep.flows[i], NO_FLOW);
        // Its descriptor carries the hashes of the full 5-tuple (ports included), as the decode crate computes them.
        let key = FlowKey::from_decoded(&d).unwrap().0;
        assert_eq!(
            prep.descs[i].conn,
            FlowHasher::new(PrepOptions::default().seed)
                .hashes(&key)
                .conn
        );
    }

    #[test]
    fn merged_inputs_interleave_by_time_and_keep_address_spaces_apart() {
        let (Some(a), Some(b)) = (
            shared("reassembly/example.pcap"),
            shared("reassembly/example2.pcap"),
        ) else {
            return;
        };
        let ta = Trace::load(&a).unwrap();
        let tb = Trace::load(&b).unwrap();
        let (na, nb) = (ta.len(), tb.len());
        // The same file twice: identical 5-tuples must still be two flows with different hashes.
        let same = prepare(
            vec![
                ("a".into(), Trace::load(&a).unwrap()),
                ("a".into(), Trace::load(&a).unwrap()),
            ],
            &PrepOptions::default(),
        );
        assert_eq!(same.len(), 2 * na);
        let one = prepare(vec![("a".into(), ta)], &PrepOptions::default());
        assert_eq!(same.stats.flows, 2 * one.stats.flows);
        let first_of = |input: u16| {
            (0..same.len())
                .find(|&i| same.input[i] == input && same.flows[i] != NO_FLOW)
                .unwrap()
        };
        let (x, y) = (first_of(0), first_of(1));
        assert_eq!(same.orig[x], same.orig[y]);
        assert_ne!(same.descs[x].conn, same.descs[y].conn);
        assert_ne!(same.flows[x], same.flows[y]);
        // Time order after rebasing.
        assert!(same.ts_ns.windows(2).filter(|w| w[1] < w[0]).count() < same.len() / 100);
        let merged = prepare(
            vec![("a".into(), Trace::load(&a).unwrap()), ("b".into(), tb)],
            &PrepOptions::default(),
        );
        assert_eq!(merged.len(), na + nb);
        assert_eq!(merged.name, "a+b");
        let switches = same.input.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(
            switches > same.len() / 2,
            "inputs interleave ({switches} switches)"
        );
    }

    #[test]
    fn the_limit_cuts_the_input() {
        let Some(p) = shared("reassembly/example.pcap") else {
            return;
        };
        let prep = prepare_files(
            &[p],
            &PrepOptions {
                limit: 100,
                ..PrepOptions::default()
            },
        )
        .unwrap();
        assert_eq!(prep.len(), 100);
        assert_eq!(prep.trace.len(), 100);
    }

    /// A raw IPv4 packet (TCP or UDP) with the given fragment fields and payload.
    fn ipv4(id: u16, more: bool, offset8: u16, udp: bool, payload: &[u8]) -> Vec<u8> {
        let total = (20 + payload.len()) as u16;
        let frag = (u16::from(more) << 13) | (offset8 & 0x1fff);
        let mut v = vec![0x45, 0];
        v.extend_from_slice(&total.to_be_bytes());
        v.extend_from_slice(&id.to_be_bytes());
        v.extend_from_slice(&frag.to_be_bytes());
        v.extend_from_slice(&[64, if udp { 17 } else { 6 }, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        v.extend_from_slice(payload);
        v
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, failure_persistence: None, ..Default::default() })]

        /// Hostile captures: arbitrary bytes on several link types, and IPv4 fragments with arbitrary ids, offsets
        /// and flags. The stage never panics, ids index the dispatched trace, no more packets come out than went
        /// in, and packets of one flow share their hashes.
        #[test]
        fn any_packets_prepare_consistently(
            junk in proptest::collection::vec((0usize..4, proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120), 0u64..1_000_000), 0..30),
            frags in proptest::collection::vec((0u16..3, proptest::prelude::any::<bool>(), 0u16..16, proptest::prelude::any::<bool>(), 1usize..5), 0..30),
        ) {
            let links = [LinkType::ETHERNET, LinkType::RAW, LinkType::LINUX_SLL, LinkType::NULL];
            let mut b = TraceBuilder::new();
            for (l, data, ts) in &junk {
                b.push(*ts, links[*l], data, data.len() as u32);
            }
            for (i, (id, more, off, udp, words)) in frags.iter().enumerate() {
                let pkt = ipv4(*id, *more, *off, *udp, &vec![i as u8; words * 8]);
                b.push(2_000_000 + i as u64, LinkType::RAW, &pkt, pkt.len() as u32);
            }
            let n = b.len();
            let p = prepare(vec![("x".into(), b.build())], &PrepOptions::default());
            proptest::prop_assert_eq!(p.trace.len(), p.len());
            proptest::prop_assert!(p.len() <= n);
            proptest::prop_assert_eq!(p.stats.packets as usize + p.stats.fragments_absorbed as usize, n);
            let mut by_flow: HashMap<u32, (u32, u32, u16)> = HashMap::new();
            for (i, d) in p.descs.iter().enumerate() {
                proptest::prop_assert_eq!(d.id as usize, i);
                if p.flows[i] != NO_FLOW {
                    let e = by_flow.entry(p.flows[i]).or_insert((d.conn, d.rss, d.fid));
                    proptest::prop_assert_eq!(*e, (d.conn, d.rss, d.fid));
                }
            }
        }
    }

    #[test]
    fn an_empty_input_prepares_nothing() {
        let prep = prepare(
            vec![("empty".into(), TraceBuilder::new().build())],
            &PrepOptions::default(),
        );
        assert!(prep.is_empty());
        assert_eq!(prep.duration_ns(), 0);
    }
}
