//! Anonymization keeps the flow structure exactly and the checksums valid, on real captures and by property tests.
//!
//! For every method and payload mode, on captures with IPv4, IPv6, VLANs, fragments, ICMP errors and tunnels:
//! the same packets, wire bytes, flow count, per-flow packets and bytes (as multisets: addresses change), the same
//! connection density and unique flow rate (`trace stats`), and every checksum that was valid stays valid.

mod common;

use std::net::IpAddr;
use std::path::Path;

use common::{checksums, flow_sizes, synthetic};
use flowbundle_decode::{DecodeOptions, decode_bytes};
use flowbundle_ingest::CaptureReader;
use flowbundle_trace::anonymize::{AnonymizeConfig, Method, PayloadMode, anonymize_file};
use flowbundle_trace::stats::{StatsConfig, stats_file};
use proptest::prelude::*;

fn assert_same_structure(input: &Path, output: &Path, what: &str) {
    let cfg = StatsConfig::default();
    let a = stats_file(input, &cfg).unwrap();
    let b = stats_file(output, &cfg).unwrap();
    assert_eq!(a.packets, b.packets, "{what}: packets");
    assert_eq!(a.wire_bytes, b.wire_bytes, "{what}: wire bytes");
    assert_eq!(a.connections, b.connections, "{what}: connections");
    assert_eq!(
        a.connection_density, b.connection_density,
        "{what}: density"
    );
    assert_eq!(
        a.unique_flow_rate, b.unique_flow_rate,
        "{what}: unique flow rate"
    );
    let (fa, sa) = flow_sizes(input);
    let (fb, sb) = flow_sizes(output);
    assert_eq!(fa, fb, "{what}: per-flow packets and bytes");
    assert_eq!(sa, sb, "{what}: the sequence of flows packet by packet");
}

const CAPTURES: &[&str] = &[
    "reassembly/example2.pcap",
    "reassembly/VlanPackets.pcap",
    "reassembly/ip4_fragments.pcap",
    "reassembly/ip6_fragments.pcap",
    "reassembly/GrePackets.cap",
    "reassembly/ICMPv6_echos.cap",
    "ndpi/pcap/http_ipv6.pcap",
    "ndpi/pcap/6in4tunnel.pcap",
    "ndpi/pcap/4in6tunnel.pcap",
    "ndpi/pcap/teredo.pcap",
    "ndpi/pcap/malformed_icmp.pcap",
    "ndpi/pcap/ipv6_in_gtp.pcap",
    "ndpi/pcap/gre.pcapng",
];

#[test]
fn real_captures_keep_flows_and_checksums() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("anon.pcap");
    let mut ran = 0;
    for rel in CAPTURES {
        let Some(input) = flowbundle_testsupport::data(rel) else {
            continue;
        };
        let sums_in = checksums(&input);
        for method in [Method::Sn1, Method::Sn2, Method::Sn3, Method::Prefix] {
            for (payload, tunnels) in [
                (PayloadMode::Keep, false),
                (PayloadMode::Keep, true),
                (PayloadMode::Strip, false),
                (PayloadMode::Truncate(16), true),
            ] {
                let mut cfg = AnonymizeConfig::new(method);
                cfg.payload = payload;
                cfg.tunnels = tunnels;
                if matches!(method, Method::Sn3 | Method::Prefix) {
                    cfg.key = Some("test key".into());
                }
                let what = format!("{rel} {method:?} {payload:?} tunnels={tunnels}");
                let rep = anonymize_file(&input, &out, &cfg).unwrap();
                assert_eq!(rep.counts.read, rep.counts.written, "{what}");
                assert_same_structure(&input, &out, &what);
                if payload == PayloadMode::Keep {
                    let sums_out = checksums(&out);
                    assert_eq!(sums_in.len(), sums_out.len());
                    for (i, (a, b)) in sums_in.iter().zip(&sums_out).enumerate() {
                        assert_eq!(a, b, "{what}: checksum validity of packet {}", i + 1);
                    }
                }
                ran += 1;
            }
        }
    }
    eprintln!("{ran} anonymizations checked");
}

#[test]
fn addresses_really_change_and_prefixes_survive_on_a_real_capture() {
    let Some(input) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("anon.pcap");
    let mut cfg = AnonymizeConfig::new(Method::Prefix);
    cfg.key = Some("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".into());
    anonymize_file(&input, &out, &cfg).unwrap();
    let addrs = |p: &Path| {
        let mut r = CaptureReader::open(p).unwrap();
        let mut v = Vec::new();
        while let Some(pkt) = r.next_packet().unwrap() {
            let d = decode_bytes(pkt.link_type, pkt.data, &DecodeOptions::default());
            if let Some(ip) = d.ip {
                v.push((ip.src, ip.dst));
            }
        }
        v
    };
    let (a, b) = (addrs(&input), addrs(&out));
    assert_eq!(a.len(), b.len());
    let bits = |x: IpAddr| match x {
        IpAddr::V4(v) => u128::from(u32::from(v)) << 96,
        IpAddr::V6(v) => u128::from(v),
    };
    let mut changed = 0;
    for (&(s0, d0), &(s1, d1)) in a.iter().zip(&b) {
        changed += usize::from(s0 != s1);
        if s0.is_ipv4() == d0.is_ipv4() {
            let before = (bits(s0) ^ bits(d0)).leading_zeros();
            let after = (bits(s1) ^ bits(d1)).leading_zeros();
            assert_eq!(before, after, "{s0} {d0} → {s1} {d1}");
        }
    }
    assert!(changed > a.len() * 9 / 10, "addresses were not rewritten");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any mix of flows, families and protocols keeps its exact flow structure under every method.
    #[test]
    fn any_trace_keeps_its_flow_structure(
        packets in proptest::collection::vec((0u8..40, any::<bool>(), prop_oneof![Just(6u8), Just(17u8)], 0u16..300), 1..120),
        method in prop_oneof![Just(Method::Sn1), Just(Method::Sn2), Just(Method::Sn3), Just(Method::Prefix)],
        key in "[a-z]{1,12}",
        strip in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (input, out) = (dir.path().join("in.pcap"), dir.path().join("out.pcap"));
        synthetic(&input, &packets);
        let mut cfg = AnonymizeConfig::new(method);
        if matches!(method, Method::Sn3 | Method::Prefix) {
            cfg.key = Some(key);
        }
        if strip {
            cfg.payload = PayloadMode::Strip;
        }
        anonymize_file(&input, &out, &cfg).unwrap();
        assert_same_structure(&input, &out, "proptest");
        if !strip {
            prop_assert_eq!(checksums(&input), checksums(&out));
        }
    }
}
