//! Helpers shared by the integration tests: segments of a capture, and the prefilter oracle (`prefilter`).
#![allow(dead_code)]

pub mod prefilter;

/// One TCP segment or UDP datagram of a capture, with its flow key (sender first).
#[derive(Clone, Debug)]
pub struct Seg {
    pub src: std::net::IpAddr,
    pub dst: std::net::IpAddr,
    pub sport: u16,
    pub dport: u16,
    /// TCP: true. UDP: false.
    pub tcp: bool,
    pub seq: u32,
    pub syn: bool,
    pub payload: Vec<u8>,
}

/// TCP segments and UDP datagrams of an Ethernet pcap, in capture order (IPv4/IPv6, VLAN tags skipped; fragments,
/// other link types and truncated packets ignored). A test helper, not a decoder.
pub fn segments(path: &std::path::Path) -> Vec<Seg> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let bytes = std::fs::read(path).expect("read capture");
    let Ok((_, cap)) = pcap_parser::parse_pcap(&bytes) else {
        return Vec::new();
    };
    if cap.header.network.0 != 1 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for b in &cap.blocks {
        let f = b.data;
        let mut et = u16::from_be_bytes([
            f.get(12).copied().unwrap_or(0),
            f.get(13).copied().unwrap_or(0),
        ]);
        let mut off = 14;
        while et == 0x8100 && f.len() >= off + 4 {
            et = u16::from_be_bytes([f[off + 2], f[off + 3]]);
            off += 4;
        }
        let (src, dst, proto, l4) = match et {
            0x0800 if f.len() >= off + 20 => {
                let ihl = usize::from(f[off] & 0x0f) * 4;
                let total = usize::from(u16::from_be_bytes([f[off + 2], f[off + 3]]));
                let frag = u16::from_be_bytes([f[off + 6], f[off + 7]]) & 0x3fff;
                if frag != 0 || ihl < 20 || f.len() < off + total.max(ihl) {
                    continue;
                }
                let s = IpAddr::V4(Ipv4Addr::new(
                    f[off + 12],
                    f[off + 13],
                    f[off + 14],
                    f[off + 15],
                ));
                let d = IpAddr::V4(Ipv4Addr::new(
                    f[off + 16],
                    f[off + 17],
                    f[off + 18],
                    f[off + 19],
                ));
                (s, d, f[off + 9], &f[off + ihl..off + total])
            }
            0x86dd if f.len() >= off + 40 => {
                let plen = usize::from(u16::from_be_bytes([f[off + 4], f[off + 5]]));
                if f.len() < off + 40 + plen {
                    continue;
                }
                let a: [u8; 16] = f[off + 8..off + 24].try_into().unwrap();
                let b2: [u8; 16] = f[off + 24..off + 40].try_into().unwrap();
                (
                    IpAddr::V6(Ipv6Addr::from(a)),
                    IpAddr::V6(Ipv6Addr::from(b2)),
                    f[off + 6],
                    &f[off + 40..off + 40 + plen],
                )
            }
            _ => continue,
        };
        match proto {
            6 if l4.len() >= 20 => {
                let doff = usize::from(l4[12] >> 4) * 4;
                if doff < 20 || l4.len() < doff {
                    continue;
                }
                out.push(Seg {
                    src,
                    dst,
                    sport: u16::from_be_bytes([l4[0], l4[1]]),
                    dport: u16::from_be_bytes([l4[2], l4[3]]),
                    tcp: true,
                    seq: u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]),
                    syn: l4[13] & 0x02 != 0,
                    payload: l4[doff..].to_vec(),
                });
            }
            17 if l4.len() >= 8 => out.push(Seg {
                src,
                dst,
                sport: u16::from_be_bytes([l4[0], l4[1]]),
                dport: u16::from_be_bytes([l4[2], l4[3]]),
                tcp: false,
                seq: 0,
                syn: false,
                payload: l4[8..].to_vec(),
            }),
            _ => {}
        }
    }
    out
}

/// Key of one direction of a TCP connection.
pub type DirKey = (std::net::IpAddr, u16, std::net::IpAddr, u16);

/// Segments of one direction as (stream offset, payload).
pub type Parts = Vec<(u64, Vec<u8>)>;

/// One TCP direction: its segments as (stream offset, payload) in capture order, offsets from the SYN (or the first
/// segment seen).
pub fn tcp_directions(segs: &[Seg]) -> Vec<(DirKey, Parts)> {
    let mut order: Vec<DirKey> = Vec::new();
    let mut map: std::collections::HashMap<DirKey, (u32, Parts)> = Default::default();
    for s in segs.iter().filter(|s| s.tcp) {
        let k = (s.src, s.sport, s.dst, s.dport);
        let e = map.entry(k).or_insert_with(|| {
            order.push(k);
            (
                if s.syn { s.seq.wrapping_add(1) } else { s.seq },
                Vec::new(),
            )
        });
        if s.payload.is_empty() {
            continue;
        }
        let rel = s.seq.wrapping_sub(e.0);
        if rel > 1 << 30 {
            continue; // before the start we chose (a retransmitted SYN-era segment)
        }
        e.1.push((u64::from(rel), s.payload.clone()));
    }
    order
        .into_iter()
        .filter_map(|k| map.remove(&k).map(|(_, v)| (k, v)))
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

/// The contiguous stream from offset 0 built from segments placed by offset (stops at the first hole).
pub fn assemble(segs: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut sorted: Vec<&(u64, Vec<u8>)> = segs.iter().collect();
    sorted.sort_by_key(|s| s.0);
    let mut out: Vec<u8> = Vec::new();
    for (off, p) in sorted {
        let off = *off as usize;
        if off > out.len() {
            break;
        }
        let skip = out.len() - off;
        if skip < p.len() {
            out.extend_from_slice(&p[skip..]);
        }
    }
    out
}
