//! Helpers shared by the trace tools' integration tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;

use flowbundle_decode::wire::{ipv4, tcp, udp};
use flowbundle_decode::{DecodeOptions, FlowKey, FragmentPorts, L4, decode_bytes};
use flowbundle_ingest::{CaptureReader, LinkType, PcapWriter, WriterOptions};

/// Per-flow (packets, wire bytes), sorted: the flow structure without the addresses.
pub fn flow_sizes(path: &Path) -> (Vec<(u64, u64)>, Vec<u32>) {
    let mut r = CaptureReader::open(path).unwrap();
    let mut frag = FragmentPorts::new(4096, 30_000_000_000);
    let mut flows: HashMap<FlowKey, (u64, u64, u32)> = HashMap::new();
    // The flow index of every packet, in order (first-appearance numbering): the flow sequence itself.
    let mut seq = Vec::new();
    let opts = DecodeOptions::default();
    while let Some(p) = r.next_packet().unwrap() {
        let d = decode_bytes(p.link_type, p.data, &opts);
        if let Some((k, _)) = FlowKey::from_decoded_with(&d, &mut frag, p.ts_ns) {
            let n = flows.len() as u32;
            let e = flows.entry(k).or_insert((0, 0, n));
            e.0 += 1;
            e.1 += u64::from(p.orig_len);
            seq.push(e.2);
        }
    }
    let mut v: Vec<(u64, u64)> = flows.values().map(|&(p, b, _)| (p, b)).collect();
    v.sort_unstable();
    (v, seq)
}

/// (IPv4 header checksum valid, TCP/UDP checksum valid) of each packet, where checkable.
pub fn checksums(path: &Path) -> Vec<(Option<bool>, Option<bool>)> {
    let mut r = CaptureReader::open(path).unwrap();
    let mut out = Vec::new();
    let opts = DecodeOptions::default();
    while let Some(p) = r.next_packet().unwrap() {
        let d = decode_bytes(p.link_type, p.data, &opts);
        let ip_ok = d.ip.filter(|i| i.is_v4()).and_then(|_| {
            ipv4::Packet::new_checked(d.ip_packet())
                .ok()
                .map(|h| h.verify_checksum())
        });
        let l4_ok = match (d.ip, d.l4) {
            (Some(ip), L4::Tcp(_) | L4::Udp(_))
                if !ip.is_fragment()
                    && !d.payload_truncated
                    && (p.data.len() as u32) == p.orig_len =>
            {
                let seg = p
                    .data
                    .get(d.l4_offset as usize..d.l3_end as usize)
                    .unwrap_or(&[]);
                if matches!(d.l4, L4::Tcp(_)) {
                    tcp::Packet::new_checked(seg)
                        .ok()
                        .map(|t| t.verify_checksum(ip.src, ip.dst))
                } else {
                    udp::Packet::new_checked(seg)
                        .ok()
                        .map(|u| u.verify_checksum(ip.src, ip.dst))
                }
            }
            _ => None,
        };
        out.push((ip_ok, l4_ok));
    }
    out
}

/// Writes a raw-IP capture of `packets`: (flow index, ipv6, protocol, payload length).
pub fn synthetic(path: &Path, packets: &[(u8, bool, u8, u16)]) {
    use flowbundle_decode::wire::{ip_proto, ipv6};
    let mut w = PcapWriter::create(path, WriterOptions::new(LinkType::RAW)).unwrap();
    for (i, &(flow, v6, proto, len)) in packets.iter().enumerate() {
        let payload = vec![0xa5u8; usize::from(len)];
        let (sport, dport) = (1000 + u16::from(flow % 7), 80 + u16::from(flow / 7));
        let (src, dst): (IpAddr, IpAddr) = if v6 {
            (
                format!("2001:db8:{}::1", flow % 5).parse().unwrap(),
                format!("2001:db8:ff::{}", flow % 3 + 1).parse().unwrap(),
            )
        } else {
            (
                format!("192.0.2.{}", flow % 5 + 1).parse().unwrap(),
                format!("198.51.100.{}", flow % 3 + 1).parse().unwrap(),
            )
        };
        let l4: Vec<u8> = if proto == ip_proto::TCP {
            let t = tcp::Repr {
                src_port: sport,
                dst_port: dport,
                seq: i as u32,
                ack: 0,
                flags: tcp::flags::ACK,
                window: 100,
                urgent: 0,
                mss: None,
                window_scale: None,
                sack_permitted: false,
                sack: [None; 3],
                timestamps: None,
                payload: &payload,
            };
            let mut b = vec![0u8; t.buffer_len()];
            t.emit(&mut b, src, dst).unwrap();
            b
        } else {
            let u = udp::Repr {
                src_port: sport,
                dst_port: dport,
                payload: &payload,
            };
            let mut b = vec![0u8; u.buffer_len()];
            u.emit(&mut b, src, dst).unwrap();
            b
        };
        let mut pkt = Vec::new();
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let r = ipv4::Repr {
                    src: s,
                    dst: d,
                    protocol: proto,
                    payload_len: l4.len(),
                    ttl: 64,
                    ident: i as u16,
                    dscp: 0,
                    ecn: 0,
                    dont_frag: true,
                    more_frags: false,
                    frag_offset: 0,
                };
                pkt.resize(20, 0);
                r.emit(&mut pkt).unwrap();
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                let r = ipv6::Repr {
                    src: s,
                    dst: d,
                    next_header: proto,
                    payload_len: l4.len(),
                    hop_limit: 64,
                    traffic_class: 0,
                    flow_label: 0,
                };
                pkt.resize(40, 0);
                r.emit(&mut pkt).unwrap();
            }
            _ => unreachable!(),
        }
        pkt.extend_from_slice(&l4);
        w.write_packet(1_000_000_000 + i as u64 * 1000, &pkt, pkt.len() as u32)
            .unwrap();
    }
    w.close().unwrap();
}
