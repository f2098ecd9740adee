//! `trace stats` on real captures against brute-force oracles written from the definitions (module documentation
//! of `flowbundle_trace::stats`), the flow-table cap under a flood of a million flows, the cost hook, and
//! property tests on arbitrary packets.

use std::collections::{HashMap, HashSet};

use flowbundle_decode::{DecodeOptions, Decoded, FlowKey, FragmentPorts, decode};
use flowbundle_ingest::{LinkType, PacketRecord, Trace, TraceBuilder};
use flowbundle_trace::stats::{
    Collector, CostModel, StatsConfig, TraceStats, stats_file, stats_trace,
};
use proptest::prelude::*;

/// The flow key of every IP packet, in order (the sequence density and unique flow rate are defined over).
fn keys(t: &Trace) -> Vec<(FlowKey, u64, u64)> {
    let mut ports = FragmentPorts::new(4096, 30_000_000_000);
    t.iter()
        .filter_map(|r| {
            let d = decode(&r, &DecodeOptions::default());
            FlowKey::from_decoded_with(&d, &mut ports, r.ts_ns)
                .map(|(k, _)| (k, r.ts_ns, u64::from(r.orig_len)))
        })
        .collect()
}

/// Density by the definition: distinct keys per full window of 100, averaged.
fn density_oracle(k: &[(FlowKey, u64, u64)]) -> Option<f64> {
    let full: Vec<usize> = k
        .chunks(100)
        .filter(|c| c.len() == 100)
        .map(|c| c.iter().map(|x| x.0).collect::<HashSet<_>>().len())
        .collect();
    if full.is_empty() {
        return (!k.is_empty()).then(|| k.iter().map(|x| x.0).collect::<HashSet<_>>().len() as f64);
    }
    Some(full.iter().sum::<usize>() as f64 / full.len() as f64)
}

/// Unique flow rate by the definition, scanning every window: (rate, mean window, mean distinct, samples).
fn ufr_oracle(k: &[(FlowKey, u64, u64)]) -> (f64, f64, f64, u64) {
    let mut last: HashMap<FlowKey, usize> = HashMap::new();
    let (mut sum, mut win, mut dist, mut n) = (0.0, 0usize, 0usize, 0u64);
    for (i, (key, _, _)) in k.iter().enumerate() {
        if let Some(&p) = last.get(key) {
            let w = &k[p + 1..i];
            let d = w.iter().map(|x| x.0).collect::<HashSet<_>>().len();
            if !w.is_empty() {
                sum += d as f64 / w.len() as f64;
            }
            win += w.len();
            dist += d;
            n += 1;
        }
        last.insert(*key, i);
    }
    let m = |x: f64| x / n as f64;
    (m(sum), m(win as f64), m(dist as f64), n)
}

/// Maximum bytes in a 1 ms window starting on a µs boundary, over every start (the packets' own buckets suffice).
fn max_rate_oracle(t: &Trace) -> u64 {
    let pk: Vec<(u64, u64)> = t
        .iter()
        .map(|r| (r.ts_ns / 1000, u64::from(r.orig_len)))
        .collect();
    pk.iter()
        .map(|&(s, _)| {
            pk.iter()
                .filter(|&&(b, _)| b >= s && b < s + 1000)
                .map(|&(_, n)| n)
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

/// Real captures whose TCP/UDP headers all decode (the oracle keys packets with the decoder's own ports).
const ORACLE_CAPTURES: &[&str] = &[
    "reassembly/example.pcap",
    "reassembly/VlanPackets.pcap",
    "reassembly/ip4_fragments.pcap",
    "ndpi/pcap/dns_fragmented.pcap",
    "ndpi/pcap/quic.pcap",
    "ndpi/pcap/443-chrome.pcap",
];

#[test]
fn real_captures_match_the_definitions() {
    let cfg = StatsConfig::default();
    for rel in ORACLE_CAPTURES {
        let Some(path) = flowbundle_testsupport::data(rel) else {
            continue;
        };
        let t = Trace::load(&path).unwrap();
        let s = stats_file(&path, &cfg).unwrap();
        let cut_transport = s.decode.failures().into_iter().any(|(o, _)| {
            matches!(
                o.reason(),
                "tcp" | "udp" | "sctp" | "tcp_header" | "udp_length"
            )
        });
        assert!(
            !cut_transport,
            "{rel}: the oracle assumes whole transport headers"
        );

        // Streaming and preloaded passes give the same report (less the file name).
        let mut p = stats_trace(&t, &cfg);
        p.source = s.source.clone();
        p.format = s.format.clone();
        assert_eq!(p, s, "{rel}: streaming vs preloaded");

        assert_eq!(s.packets, t.len() as u64, "{rel}");
        assert_eq!(s.captured_bytes, t.bytes(), "{rel}");
        assert_eq!(s.time.duration_ns, t.duration_ns(), "{rel}");
        let wire: u64 = t.iter().map(|r| u64::from(r.orig_len)).sum();
        assert_eq!(s.wire_bytes, wire, "{rel}");

        let k = keys(&t);
        let distinct: HashSet<FlowKey> = k.iter().map(|x| x.0).collect();
        assert_eq!(s.connections.flows, distinct.len() as u64, "{rel}: flows");
        let tcp = distinct.iter().filter(|k| k.proto == 6).count() as u64;
        let udp = distinct.iter().filter(|k| k.proto == 17).count() as u64;
        assert_eq!((s.connections.tcp, s.connections.udp), (tcp, udp), "{rel}");
        assert!(s.connections.exact);

        // Top connections: the largest counts, in order, with their shares.
        let mut per: HashMap<FlowKey, (u64, u64)> = HashMap::new();
        for (key, _, len) in &k {
            let e = per.entry(*key).or_default();
            e.0 += 1;
            e.1 += len;
        }
        let mut by_packets: Vec<u64> = per.values().map(|v| v.0).collect();
        by_packets.sort_unstable_by(|a, b| b.cmp(a));
        let top: Vec<u64> = s.top_by_packets.iter().map(|c| c.packets).collect();
        assert_eq!(
            top,
            by_packets[..by_packets.len().min(10)],
            "{rel}: top by packets"
        );
        let mut by_bytes: Vec<u64> = per.values().map(|v| v.1).collect();
        by_bytes.sort_unstable_by(|a, b| b.cmp(a));
        let top: Vec<u64> = s.top_by_bytes.iter().map(|c| c.bytes).collect();
        assert_eq!(
            top,
            by_bytes[..by_bytes.len().min(10)],
            "{rel}: top by bytes"
        );
        for c in &s.top_by_packets {
            assert!(close(c.packet_share, c.packets as f64 / s.packets as f64));
        }

        let d = s.connection_density.mean;
        let want = density_oracle(&k);
        assert!(
            d.zip(want).is_some_and(|(a, b)| close(a, b)) || d == want,
            "{rel}: density {d:?} vs {want:?}"
        );
        let (rate, win, dist, n) = ufr_oracle(&k);
        let u = &s.unique_flow_rate;
        assert_eq!(u.samples, n, "{rel}: unique flow rate samples");
        if n > 0 {
            assert!(
                close(u.rate.unwrap(), rate),
                "{rel}: {:?} vs {rate}",
                u.rate
            );
            assert!(close(u.avg_window.unwrap(), win), "{rel}: window");
            assert!(close(u.avg_unique_flows.unwrap(), dist), "{rel}: distinct");
        }
        if s.time.out_of_order == 0 {
            assert_eq!(s.max_rate.bytes, max_rate_oracle(&t), "{rel}: max rate");
        }
        let sizes: u64 = s.packet_sizes.iter().map(|b| b.packets).sum();
        assert_eq!(sizes, s.packets);
        let p = &s.protocols;
        assert_eq!(p.ipv4 + p.ipv6 + p.non_ip, s.packets);
        eprintln!(
            "{rel}: {} packets, {} flows, density {:?}, unique flow rate {:?} (window {:?}), max {:?} Mb/s",
            s.packets,
            s.connections.flows,
            s.connection_density.mean,
            u.rate,
            u.avg_window,
            s.max_mbps
        );
    }
}

#[test]
fn example_pcap_report_has_every_section() {
    let Some(path) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let s = stats_file(&path, &StatsConfig::default()).unwrap();
    let j: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    for k in [
        "packets",
        "wire_bytes",
        "avg_mbps",
        "max_mbps",
        "connections",
        "connection_density",
        "unique_flow_rate",
        "top_by_packets",
        "top_by_bytes",
        "packet_sizes",
        "protocols",
        "encapsulation",
        "decode",
    ] {
        assert!(j.get(k).is_some(), "JSON lacks {k}");
    }
    assert!(j.get("cost").is_none(), "no cost without a cost model");
    assert_eq!(j["top_by_packets"].as_array().unwrap().len(), 10);
    let table = s.render_table();
    for k in [
        "connections",
        "connection density",
        "unique flow rate",
        "maximum Mb/s",
        "top connections by packets",
    ] {
        assert!(table.contains(k), "table lacks {k}:\n{table}");
    }
}

/// An Ethernet/IPv4/UDP packet of flow `i` (addresses and ports from `i`).
fn udp_packet(i: u32) -> Vec<u8> {
    let mut p = vec![0u8; 14 + 20 + 8 + 4];
    p[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut p[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&32u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&(0x0a00_0000 | (i >> 8)).to_be_bytes());
    ip[16..20].copy_from_slice(&[192, 168, 0, 1]);
    let udp = &mut p[34..42];
    udp[0..2].copy_from_slice(&(1024 + (i & 0xff) as u16).to_be_bytes());
    udp[2..4].copy_from_slice(&53u16.to_be_bytes());
    udp[4..6].copy_from_slice(&12u16.to_be_bytes());
    p
}

#[test]
fn a_million_flows_stay_within_the_cap() {
    const FLOWS: u32 = 1_000_000;
    const CAP: usize = 50_000;
    let mut c = Collector::new(StatsConfig {
        max_flows: CAP,
        ..StatsConfig::default()
    });
    let mut peak = 0;
    for i in 0..FLOWS {
        let data = udp_packet(i);
        let rec = PacketRecord {
            ts_ns: u64::from(i) * 1000,
            orig_len: data.len() as u32,
            interface: 0,
            link_type: LinkType::ETHERNET,
            data: &data,
        };
        c.push(&rec);
        if i % 65_536 == 0 {
            peak = peak.max(c.memory_bytes());
        }
    }
    peak = peak.max(c.memory_bytes());
    let s = c.finish();
    assert_eq!(s.packets, u64::from(FLOWS));
    assert_eq!(c.flow_table().len(), CAP);
    assert_eq!(s.connections.flows, CAP as u64);
    assert_eq!(
        s.connections.untracked_packets,
        u64::from(FLOWS) - CAP as u64
    );
    assert!(!s.connections.exact && !s.unique_flow_rate.exact);
    // Density does not depend on the table: every window holds 100 distinct flows.
    assert_eq!(s.connection_density.mean, Some(100.0));
    // About 100 bytes per tracked flow plus fixed parts; far below what a million flows would take.
    assert!(
        peak < CAP * 200 + (1 << 20),
        "collector peaked at {peak} bytes"
    );
    eprintln!("a million flows, cap {CAP}: collector peaked at {peak} bytes");
}

/// Cost = payload length, so the totals can be checked by hand.
struct PayloadCost;

impl CostModel for PayloadCost {
    fn unit(&self) -> &str {
        "payload bytes"
    }
    fn cost(&mut self, _rec: &PacketRecord<'_>, d: &Decoded<'_>) -> u64 {
        d.payload.len() as u64
    }
}

#[test]
fn cost_hook_sums_per_flow_and_in_total() {
    let Some(path) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let t = Trace::load(&path).unwrap();
    let mut c = Collector::new(StatsConfig::default()).with_cost(Box::new(PayloadCost));
    let mut total = 0;
    for r in t.iter() {
        total += decode(&r, &DecodeOptions::default()).payload.len() as u64;
        c.push(&r);
    }
    let s = c.finish();
    let cost = s.cost.clone().expect("cost section");
    assert_eq!(cost.unit, "payload bytes");
    assert_eq!(cost.total, total);
    let flows: u64 = c.flow_table().entries().iter().map(|e| e.cost).sum();
    assert!(flows <= total, "non-IP packets have cost but no flow");
    let top: Vec<u64> = cost.top.iter().map(|x| x.cost.unwrap()).collect();
    assert!(top.windows(2).all(|w| w[0] >= w[1]), "{top:?}");
    assert_eq!(
        top[0],
        c.flow_table()
            .entries()
            .iter()
            .map(|e| e.cost)
            .max()
            .unwrap()
    );
    assert!(s.render_table().contains("top connections by cost"));
}

fn arbitrary_trace(pkts: &[(u64, u8, Vec<u8>)]) -> Trace {
    let links = [
        LinkType::ETHERNET,
        LinkType::RAW,
        LinkType::LINUX_SLL,
        LinkType::NULL,
    ];
    let mut b = TraceBuilder::new();
    for (ts, pick, data) in pkts {
        let lt = links[usize::from(*pick) % links.len()];
        b.push(*ts, lt, data, data.len() as u32 + u32::from(*pick));
    }
    b.build()
}

/// Arbitrary bytes after a valid Ethernet + IPv4 start, so that decoding gets past the first checks.
fn packet() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..120),
        (proptest::collection::vec(any::<u8>(), 0..80), any::<u8>()).prop_map(|(tail, proto)| {
            let mut p = vec![0u8; 14];
            p[12] = 0x08;
            p.extend_from_slice(&[0x45, 0, 0, 60, 0, 0, 0x20, 0, 64, proto % 20, 0, 0]);
            p.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
            p.extend_from_slice(&tail);
            p
        }),
    ]
}

proptest! {
    #[test]
    fn arbitrary_packets_keep_the_invariants(
        pkts in proptest::collection::vec((0u64..5_000_000, any::<u8>(), packet()), 0..300),
        cap in 1usize..20,
    ) {
        let t = arbitrary_trace(&pkts);
        let cfg = StatsConfig { max_flows: cap, ..StatsConfig::default() };
        let s: TraceStats = stats_trace(&t, &cfg);
        prop_assert_eq!(s.packets, pkts.len() as u64);
        prop_assert!(s.connections.flows <= cap as u64);
        prop_assert_eq!(s.decode.packets(), s.packets);
        let p = &s.protocols;
        prop_assert_eq!(p.ipv4 + p.ipv6 + p.non_ip, s.packets);
        prop_assert!(p.tcp + p.udp + p.icmp + p.icmpv6 + p.sctp <= p.ipv4 + p.ipv6);
        prop_assert_eq!(s.packet_sizes.iter().map(|b| b.packets).sum::<u64>(), s.packets);
        prop_assert!(s.encapsulation.fragmented <= p.ipv4 + p.ipv6);
        if let Some(r) = s.unique_flow_rate.rate {
            prop_assert!((0.0..=1.0).contains(&r));
        }
        if let Some(d) = s.connection_density.mean {
            prop_assert!((1.0..=100.0).contains(&d));
        }
        prop_assert!(s.max_rate.bytes <= s.wire_bytes);
        let json = s.to_json();
        prop_assert!(json.starts_with('{'), "JSON: {}", json);
    }
}
