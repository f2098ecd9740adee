//! Decoding real captures from `shared/data`: the malformed corpus never panics and stays within memory caps,
//! and on well-formed traffic every packet's addresses, protocol and ports agree with tshark's dissection.

mod common;

use std::collections::HashSet;
use std::net::IpAddr;

use flowbundle_decode::{
    DecodeOptions, DecodeStats, DefragConfig, DefragOutcome, Defragmenter, Fid, FlowHasher,
    FlowKey, FragmentPorts, L4, Outcome, decode, decode_bytes,
};
use flowbundle_ingest::{LinkType, Trace};

/// Everything the dispatcher does with a packet: decode (with and without tunnels), key, hashes, defrag.
fn exercise(
    trace: &Trace,
    df: &mut Defragmenter,
    ports: &mut FragmentPorts,
    stats: &mut DecodeStats,
    h: &FlowHasher,
) {
    let plain = DecodeOptions::default();
    let decap = DecodeOptions {
        decap_tunnels: true,
        verify_ipv4_checksum: true,
        ..plain
    };
    for rec in trace.iter() {
        for opts in [&plain, &decap] {
            let d = decode(&rec, opts);
            stats.record(&d);
            if let Some((k, _)) = FlowKey::from_decoded_with(&d, ports, rec.ts_ns) {
                let _ = h.hashes(&k);
            }
            let _ = Fid::from_decoded(&d).map(|f| f.crc16());
            if let DefragOutcome::Reassembled(p) = df.push(&d, rec.ts_ns) {
                let r = decode_bytes(LinkType::RAW, p, opts);
                assert!(
                    r.ip.is_some_and(|ip| !ip.is_fragment()),
                    "a reassembled datagram is not a fragment"
                );
            }
            let cfg = df.config();
            assert!(df.in_progress() <= cfg.max_datagrams);
            assert!(df.bytes_held() <= cfg.max_bytes);
        }
    }
}

#[test]
fn malformed_corpus_decodes_without_panic() {
    let Some(dir) = flowbundle_testsupport::data("") else {
        return;
    };
    let dir = dir.join("malformed");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    files.sort();
    assert!(files.len() >= 830, "{} captures", files.len());
    let h = FlowHasher::new(1);
    // Small caps, so the corpus also exercises eviction.
    let mut df = Defragmenter::new(DefragConfig {
        max_datagrams: 64,
        max_bytes: 256 << 10,
        ..DefragConfig::default()
    });
    let mut ports = FragmentPorts::new(256, 30_000_000_000);
    let mut stats = DecodeStats::default();
    let mut read = 0;
    for f in &files {
        // Some captures are themselves unreadable (bad headers): that is ingest's outcome to report, not ours.
        let Ok((trace, _)) = Trace::load_partial(f) else {
            continue;
        };
        read += 1;
        exercise(&trace, &mut df, &mut ports, &mut stats, &h);
    }
    eprintln!(
        "{read} captures, {} packet decodes: {}",
        stats.packets(),
        serde_json_string(&stats)
    );
    assert!(
        read >= 800,
        "only {read} of {} captures readable",
        files.len()
    );
    assert!(stats.decoded > 0 && stats.failed() > 0);
}

fn serde_json_string(s: &DecodeStats) -> String {
    serde_json::to_string(s).unwrap()
}

/// Captures compared packet by packet with tshark: a spread of link types, VLANs, IPv6, tunnels and fragments.
const COMPARED: &[&str] = &[
    "reassembly/example.pcap",
    "reassembly/VlanPackets.pcap",
    "reassembly/sll.pcap",
    "reassembly/sll2.pcap",
    "reassembly/null_loopback.pcap",
    "reassembly/raw_ip.pcap",
    "reassembly/ip4_fragments.pcap",
    "reassembly/ip6_fragments.pcap",
    "reassembly/four_ipv6_http_streams.pcap",
    "reassembly/GrePackets.cap",
    "ndpi/pcap/6in4tunnel.pcap",
    "ndpi/pcap/ipv6_in_gtp.pcap",
    "ndpi/pcap/sctp.cap",
    "ndpi/pcap/dns_fragmented.pcap",
    "ndpi/pcap/443-chrome.pcap",
    "ndpi/pcap/quic.pcap",
];

fn first(field: &str) -> Option<&str> {
    let f = field.split(',').next().unwrap_or("");
    (!f.is_empty()).then_some(f)
}

#[test]
fn fields_agree_with_tshark() {
    const T: &str = "fields_agree_with_tshark";
    let Some(dir) = flowbundle_testsupport::data("") else {
        return;
    };
    let opts = DecodeOptions::default();
    let mut compared = 0;
    for rel in COMPARED {
        let path = dir.join(rel);
        if !path.is_file() {
            flowbundle_testsupport::missing_data(&path);
            continue;
        }
        let p = path.to_string_lossy();
        let args = [
            "-n",
            "-r",
            &p,
            "-o",
            "ip.defragment:FALSE",
            "-o",
            "ipv6.defragment:FALSE",
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "ipv6.src",
            "-e",
            "ipv6.dst",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.dstport",
            "-e",
            "udp.srcport",
            "-e",
            "udp.dstport",
            "-e",
            "vlan.id",
        ];
        let Some(out) = common::tool(T, "tshark", &args) else {
            return;
        };
        let trace = common::load(rel).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), trace.len(), "{rel}: packet count");
        for (i, (rec, line)) in trace.iter().zip(&lines).enumerate() {
            let f: Vec<&str> = line.split('|').collect();
            let d = decode(&rec, &opts);
            let Some(ip) = d.ip else { continue };
            let (src, dst) = if ip.is_v4() {
                (first(f[0]), first(f[1]))
            } else {
                (first(f[2]), first(f[3]))
            };
            let want_src: Option<IpAddr> = src.and_then(|s| s.parse().ok());
            let want_dst: Option<IpAddr> = dst.and_then(|s| s.parse().ok());
            assert_eq!(Some(ip.src), want_src, "{rel} #{}: source", i + 1);
            assert_eq!(Some(ip.dst), want_dst, "{rel} #{}: destination", i + 1);
            let want_ports = match d.l4 {
                L4::Tcp(_) => first(f[4]).zip(first(f[5])),
                L4::Udp(_) => first(f[6]).zip(first(f[7])),
                _ => None,
            };
            if let (Some((a, b)), Some((x, y))) = (want_ports, d.ports()) {
                assert_eq!(
                    (a.parse::<u16>().unwrap(), b.parse::<u16>().unwrap()),
                    (x, y),
                    "{rel} #{}: ports",
                    i + 1
                );
            } else if matches!(d.l4, L4::Tcp(_) | L4::Udp(_)) && d.outcome == Outcome::Decoded {
                panic!("{rel} #{}: we decoded ports, tshark did not: {line}", i + 1);
            }
            let vlans = f[8].split(',').filter(|s| !s.is_empty()).count();
            assert_eq!(
                usize::from(d.vlan_count),
                vlans,
                "{rel} #{}: VLAN tags",
                i + 1
            );
            if let Some(v) = first(f[8]) {
                assert_eq!(d.vlan_outer, v.parse().ok(), "{rel} #{}: outer VLAN", i + 1);
            }
            compared += 1;
        }
    }
    eprintln!("{T}: {compared} packets compared");
}

#[test]
fn ndpi_corpus_keys_are_symmetric_and_fragments_find_their_flow() {
    const T: &str = "ndpi_corpus_keys_are_symmetric_and_fragments_find_their_flow";
    let Some(dir) = flowbundle_testsupport::data("") else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(dir.join("ndpi/pcap"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let opts = DecodeOptions::default();
    let h = FlowHasher::new(9);
    let mut stats = DecodeStats::default();
    let mut ports = FragmentPorts::new(4096, 60_000_000_000);
    for f in &files {
        let Ok((trace, _)) = Trace::load_partial(f) else {
            continue;
        };
        let mut keys = HashSet::new();
        for rec in trace.iter() {
            let d = decode(&rec, &opts);
            stats.record(&d);
            // The fuzzed captures of the nDPI suite scramble fragment fields; they are only decoded.
            let fuzzed = f
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("fuzz"));
            let key = if fuzzed {
                FlowKey::from_decoded(&d)
            } else {
                FlowKey::from_decoded_with(&d, &mut ports, rec.ts_ns)
            };
            let Some((k, dir)) = key else { continue };
            let ip = d.ip.unwrap();
            // The reverse packet's key is the same key, the other direction.
            let (sp, dp) = d.ports().unwrap_or((0, 0));
            let (rk, rdir) = FlowKey::new(ip.dst, dp, ip.src, sp, ip.proto);
            if ip.is_later_fragment() {
                continue;
            }
            // (The key also carries ICMP types and the tunnel depth; its 5-tuple is the packet's.)
            assert_eq!(k.five_tuple(), rk);
            assert!(dir != rdir || (ip.src == ip.dst && sp == dp));
            assert_eq!(h.hashes(&k.five_tuple()), h.hashes(&rk));
            assert_eq!(k.fid(), Fid::new(ip.src, ip.dst));
            keys.insert(k);
        }
    }
    let frag = ports.stats();
    eprintln!(
        "{T}: {} packets, {:?}, fragment ports {frag:?}",
        stats.packets(),
        stats.failures()
    );
    assert!(
        stats.decoded * 100 / stats.packets() >= 95,
        "{}",
        serde_json::to_string(&stats).unwrap()
    );
    // Every later fragment of a real capture found its first fragment's ports.
    assert!(frag.hits > 0 && frag.misses == 0, "{frag:?}");
}
