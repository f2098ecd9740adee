//! Merging keeps every packet and flow, and aggregation scales as the Verdú thesis describes.

mod common;

use std::path::Path;

use common::{flow_sizes, synthetic};
use flowbundle_ingest::{CaptureReader, LinkType, Trace};
use flowbundle_trace::merge::{MergeConfig, merge_files, merge_traces};
use flowbundle_trace::rewrite::ToolError;
use flowbundle_trace::stats::{StatsConfig, stats_file, stats_trace};
use proptest::prelude::*;

fn link_of(p: &Path) -> LinkType {
    CaptureReader::open(p)
        .unwrap()
        .next_packet()
        .unwrap()
        .unwrap()
        .link_type
}

#[test]
fn different_captures_and_link_types_add_up() {
    let names = [
        "reassembly/example2.pcap",
        "ndpi/pcap/http_ipv6.pcap",
        "ndpi/pcap/6in4tunnel.pcap",
        "ndpi/pcap/teredo.pcap",
    ];
    let inputs: Vec<_> = names
        .iter()
        .filter_map(|n| flowbundle_testsupport::data(n))
        .collect();
    if inputs.len() < 2 {
        return;
    }
    // Mix in a capture of another link type when there is one.
    let mut inputs = inputs;
    if let Some(raw) = flowbundle_testsupport::data("ndpi/pcap/ipv6_in_gtp.pcap") {
        inputs.push(raw);
    }
    let links: Vec<LinkType> = inputs.iter().map(|p| link_of(p)).collect();
    eprintln!("input link types: {links:?}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged.pcap");
    let rep = merge_files(&inputs, &out, &MergeConfig::default()).unwrap();
    let cfg = StatsConfig::default();
    let after = stats_file(&out, &cfg).unwrap();
    let mut packets = 0;
    let mut flows = 0;
    let mut conns = 0;
    let mut sizes = Vec::new();
    for p in &inputs {
        let s = stats_file(p, &cfg).unwrap();
        packets += s.packets;
        flows += s.connections.flows;
        conns += s.connections.tcp_udp;
        sizes.extend(flow_sizes(p).0);
    }
    assert_eq!(rep.counts.read, packets);
    assert_eq!(rep.counts.written, packets, "every packet written");
    assert_eq!(after.packets, packets);
    assert_eq!(after.connections.flows, flows, "flows add up");
    assert_eq!(after.connections.tcp_udp, conns, "connections add up");
    assert_eq!(rep.expected_flows(), Some(flows));
    assert_eq!(rep.after.map(|a| a.flows), Some(flows));
    // Per-flow packets: the same multiset, except that link conversion adds 14 bytes to raw-IP packets.
    let mut merged: Vec<u64> = flow_sizes(&out).0.iter().map(|f| f.0).collect();
    let mut want: Vec<u64> = sizes.iter().map(|f| f.0).collect();
    merged.sort_unstable();
    want.sort_unstable();
    assert_eq!(merged, want);
    // Time order, and the common start.
    let mut r = CaptureReader::open(&out).unwrap();
    let mut last = 0;
    let mut first = None;
    while let Some(p) = r.next_packet().unwrap() {
        assert!(p.ts_ns >= last, "merged output out of time order");
        last = p.ts_ns;
        first.get_or_insert(p.ts_ns);
    }
    let earliest = inputs
        .iter()
        .map(|p| {
            CaptureReader::open(p)
                .unwrap()
                .next_packet()
                .unwrap()
                .unwrap()
                .ts_ns
        })
        .min();
    assert_eq!(first, earliest);
}

#[test]
fn factor_scales_the_window_linearly_at_a_similar_unique_flow_rate() {
    let Some(input) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = StatsConfig::default();
    let base = stats_file(&input, &cfg).unwrap();
    let w0 = base.unique_flow_rate.avg_window.unwrap();
    let u0 = base.unique_flow_rate.rate.unwrap();
    for k in [2u32, 4, 8] {
        let out = dir.path().join(format!("x{k}.pcap"));
        let rep = merge_files(
            &[&input],
            &out,
            &MergeConfig {
                factor: k,
                ..MergeConfig::default()
            },
        )
        .unwrap();
        let s = stats_file(&out, &cfg).unwrap();
        assert_eq!(s.packets, base.packets * u64::from(k));
        assert_eq!(s.connections.flows, base.connections.flows * u64::from(k));
        let w = s.unique_flow_rate.avg_window.unwrap();
        let u = s.unique_flow_rate.rate.unwrap();
        eprintln!(
            "factor {k}: window {w0:.1} → {w:.1} ({:.2}×), unique flow rate {u0:.3} → {u:.3}, density {:?}",
            w / w0,
            s.connection_density.mean
        );
        let ratio = w / w0;
        assert!(
            (ratio - f64::from(k)).abs() < 0.15 * f64::from(k),
            "window grew {ratio:.2}× for {k} copies"
        );
        // "Similar": the unique flow rate moves far less than the window (the window grows k times).
        assert!(
            (u - u0).abs() < 0.35 * u0 * f64::from(k).log2(),
            "unique flow rate {u0} → {u}"
        );
        // The report computed the same metrics on the fly.
        let after = rep.after.unwrap();
        assert_eq!(after.avg_window, s.unique_flow_rate.avg_window);
        assert_eq!(after.unique_flow_rate, s.unique_flow_rate.rate);
        assert_eq!(rep.inputs[0].before.unwrap().avg_window, Some(w0));
    }
}

#[test]
fn in_memory_merge_equals_the_file_merge() {
    let (Some(a), Some(b)) = (
        flowbundle_testsupport::data("reassembly/example.pcap"),
        flowbundle_testsupport::data("ndpi/pcap/http_ipv6.pcap"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.pcap");
    let cfg = MergeConfig {
        report: false,
        ..MergeConfig::default()
    };
    merge_files(&[&a, &b], &out, &cfg).unwrap();
    let (ta, tb) = (Trace::load(&a).unwrap(), Trace::load(&b).unwrap());
    let (t, rep) = merge_traces(&[&ta, &tb], &cfg).unwrap();
    assert_eq!(rep.counts.written as usize, t.len());
    let f = Trace::load(&out).unwrap();
    assert_eq!(f.len(), t.len());
    for (x, y) in f.iter().zip(t.iter()) {
        assert_eq!((x.ts_ns, x.data, x.orig_len), (y.ts_ns, y.data, y.orig_len));
    }
    let s = stats_trace(&t, &StatsConfig::default());
    assert_eq!(s.packets as usize, ta.len() + tb.len());
}

#[test]
fn bad_arguments_are_refused() {
    let Some(a) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.pcap");
    let once = merge_files(&[&a], &out, &MergeConfig::default());
    assert!(matches!(once, Err(ToolError::Usage(_))), "{once:?}");
    let zero = MergeConfig {
        factor: 0,
        ..MergeConfig::default()
    };
    assert!(matches!(
        merge_files(&[&a, &a], &out, &zero),
        Err(ToolError::Usage(_))
    ));
    assert!(matches!(
        merge_files(&[&a, &out], &out, &MergeConfig::default()),
        Err(ToolError::Usage(_))
    ));
    let missing = merge_files(
        &[&a, &dir.path().join("nope.pcap")],
        &out,
        &MergeConfig::default(),
    );
    assert!(missing.unwrap_err().to_string().contains("nope.pcap"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Any inputs (even sharing every address) merge into the sum of their packets and flows.
    #[test]
    fn counts_add_up(
        a in proptest::collection::vec((0u8..30, any::<bool>(), prop_oneof![Just(6u8), Just(17u8)], 0u16..200), 1..80),
        b in proptest::collection::vec((0u8..30, any::<bool>(), prop_oneof![Just(6u8), Just(17u8)], 0u16..200), 1..80),
        factor in 1u32..4,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb, out) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"), dir.path().join("o.pcap"));
        synthetic(&pa, &a);
        synthetic(&pb, &b);
        let cfg = MergeConfig { factor, ..MergeConfig::default() };
        let rep = merge_files(&[&pa, &pb], &out, &cfg).unwrap();
        let k = u64::from(factor);
        prop_assert_eq!(rep.counts.written, (a.len() + b.len()) as u64 * k);
        let (fa, fb, fo) = (flow_sizes(&pa).0, flow_sizes(&pb).0, flow_sizes(&out).0);
        let mut want: Vec<(u64, u64)> = Vec::new();
        for _ in 0..k {
            want.extend(&fa);
            want.extend(&fb);
        }
        want.sort_unstable();
        prop_assert_eq!(fo, want);
    }
}
