//! Test helper shared by the capture-driven tests: rebuilds UDP/TCP flows from a pcap or pcapng file with
//! `pcap-parser` (Ethernet/VLAN/PPPoE, raw IP, Linux cooked, loopback; IPv4, IPv6, IP-in-IP), naive TCP
//! reassembly (arrival order, retransmitted bytes trimmed), client = SYN sender or first sender.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;

use flowbundle_protocols::{Direction, EventSink, FlowApp, Registry, Transport, Verdict};
use pcap_parser::{Block, PcapBlockOwned, PcapError};

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Key {
    pub tcp: bool,
    pub a: (IpAddr, u16),
    pub b: (IpAddr, u16),
}

impl Key {
    pub fn new(tcp: bool, x: (IpAddr, u16), y: (IpAddr, u16)) -> Key {
        if x <= y {
            Key { tcp, a: x, b: y }
        } else {
            Key { tcp, a: y, b: x }
        }
    }
}

#[derive(Default)]
pub struct Flow {
    pub client: Option<(IpAddr, u16)>,
    from_syn: bool,
    /// Payloads in arrival order: direction, bytes, and the bytes missing before them (a TCP sequence gap).
    pub payloads: Vec<(Direction, Vec<u8>, u64)>,
    /// TCP: next expected sequence number per direction (to trim retransmitted bytes).
    next_seq: [Option<u32>; 2],
}

struct Pkt<'a> {
    src: (IpAddr, u16),
    dst: (IpAddr, u16),
    tcp: bool,
    syn: bool,
    seq: u32,
    payload: &'a [u8],
}

fn be16(d: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(o)?, *d.get(o + 1)?]))
}

fn be32(d: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(o..o + 4)?.try_into().ok()?))
}

fn decode_l2(linktype: i32, d: &[u8]) -> Option<Pkt<'_>> {
    match linktype {
        1 => {
            let mut off = 12;
            let mut et = be16(d, off)?;
            while et == 0x8100 || et == 0x88a8 {
                off += 4;
                et = be16(d, off)?;
            }
            decode_et(et, d.get(off + 2..)?)
        }
        0 | 108 => decode_ip(d.get(4..)?),
        101 | 12 | 14 | 228 | 229 => decode_ip(d),
        113 => decode_et(be16(d, 14)?, d.get(16..)?),
        276 => decode_et(be16(d, 0)?, d.get(20..)?),
        _ => None,
    }
}

fn decode_et(et: u16, d: &[u8]) -> Option<Pkt<'_>> {
    match et {
        0x0800 | 0x86dd => decode_ip(d),
        0x8864 if matches!(be16(d, 6)?, 0x0021 | 0x0057) => decode_ip(d.get(8..)?),
        _ => None,
    }
}

fn decode_ip(d: &[u8]) -> Option<Pkt<'_>> {
    let v = d.first()? >> 4;
    let (src, dst, proto, l4) = if v == 4 {
        let ihl = usize::from(d[0] & 0x0f) * 4;
        let total = usize::from(be16(d, 2)?);
        if be16(d, 6)? & 0x1fff != 0 {
            return None; // non-first fragment
        }
        let src = IpAddr::from(<[u8; 4]>::try_from(d.get(12..16)?).ok()?);
        let dst = IpAddr::from(<[u8; 4]>::try_from(d.get(16..20)?).ok()?);
        (src, dst, *d.get(9)?, d.get(ihl..total.clamp(ihl, d.len()))?)
    } else if v == 6 {
        let plen = usize::from(be16(d, 4)?);
        let src = IpAddr::from(<[u8; 16]>::try_from(d.get(8..24)?).ok()?);
        let dst = IpAddr::from(<[u8; 16]>::try_from(d.get(24..40)?).ok()?);
        let mut nh = *d.get(6)?;
        let mut rest = d.get(40..(40 + plen).min(d.len()))?;
        while matches!(nh, 0 | 43 | 60) {
            nh = *rest.first()?;
            rest = rest.get((usize::from(*rest.get(1)?) + 1) * 8..)?;
        }
        (src, dst, nh, rest)
    } else {
        return None;
    };
    match proto {
        6 => {
            let off = usize::from(l4.get(12)? >> 4) * 4;
            Some(Pkt {
                src: (src, be16(l4, 0)?),
                dst: (dst, be16(l4, 2)?),
                tcp: true,
                syn: *l4.get(13)? & 0x12 == 0x02,
                seq: be32(l4, 4)?,
                payload: l4.get(off..).unwrap_or(&[]),
            })
        }
        17 => {
            let len = usize::from(be16(l4, 4)?).clamp(8, l4.len());
            Some(Pkt {
                src: (src, be16(l4, 0)?),
                dst: (dst, be16(l4, 2)?),
                tcp: false,
                syn: false,
                seq: 0,
                payload: l4.get(8..len)?,
            })
        }
        4 | 41 => decode_ip(l4),
        _ => None,
    }
}

fn add_packet(flows: &mut HashMap<Key, Flow>, p: Pkt<'_>, max_payloads: usize) {
    let f = flows.entry(Key::new(p.tcp, p.src, p.dst)).or_default();
    if f.client.is_none() || (p.syn && !f.from_syn) {
        f.client = Some(p.src);
        f.from_syn = p.syn;
    }
    if p.tcp && p.syn {
        let i = usize::from(Some(p.src) != f.client);
        f.next_seq[i] = Some(p.seq.wrapping_add(1));
    }
    if p.payload.is_empty() || f.payloads.len() >= max_payloads {
        return;
    }
    let dir = if Some(p.src) == f.client {
        Direction::ToServer
    } else {
        Direction::ToClient
    };
    let mut data = p.payload;
    let mut gap = 0u64;
    if p.tcp {
        let i = dir.index();
        if let Some(next) = f.next_seq[i] {
            let end = p.seq.wrapping_add(data.len() as u32);
            if (end.wrapping_sub(next) as i32) <= 0 {
                return; // entirely retransmitted
            }
            let overlap = next.wrapping_sub(p.seq) as i32;
            if overlap > 0 {
                data = &data[overlap as usize..];
            } else if overlap < 0 {
                gap = overlap.unsigned_abs().into(); // bytes never captured (or reordered: naive)
            }
        }
        f.next_seq[i] = Some(p.seq.wrapping_add(p.payload.len() as u32));
    }
    f.payloads.push((dir, data.to_vec(), gap));
}

pub fn read_flows(path: &Path, max_payloads: usize) -> HashMap<Key, Flow> {
    let mut flows = HashMap::new();
    let Ok(file) = std::fs::File::open(path) else {
        return flows;
    };
    let Ok(mut reader) = pcap_parser::create_reader(1 << 20, file) else {
        return flows;
    };
    let mut linktypes: Vec<i32> = Vec::new();
    let mut legacy = 1;
    loop {
        match reader.next() {
            Ok((off, block)) => {
                let pkt = match block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        legacy = h.network.0;
                        None
                    }
                    PcapBlockOwned::Legacy(b) => decode_l2(legacy, b.data),
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => {
                        linktypes.clear();
                        None
                    }
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                        linktypes.push(idb.linktype.0);
                        None
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                        let lt = linktypes.get(epb.if_id as usize).copied().unwrap_or(1);
                        let n = (epb.caplen as usize).min(epb.data.len());
                        decode_l2(lt, &epb.data[..n])
                    }
                    PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                        decode_l2(linktypes.first().copied().unwrap_or(1), spb.data)
                    }
                    PcapBlockOwned::NG(_) => None,
                };
                if let Some(p) = pkt {
                    add_packet(&mut flows, p, max_payloads);
                }
                reader.consume(off);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => {
                if reader.refill().is_err() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    flows
}

impl Flow {
    /// (transport, client port, server port) of this flow under `key`.
    pub fn endpoints(&self, key: &Key) -> Option<(Transport, u16, u16)> {
        let client = self.client?;
        let server_port = if key.a == client { key.b.1 } else { key.a.1 };
        Some((
            if key.tcp {
                Transport::Tcp
            } else {
                Transport::Udp
            },
            client.1,
            server_port,
        ))
    }

    /// Runs the flow through a fresh [`FlowApp`]: every payload in order, then `finish`.
    pub fn run(&self, reg: &Registry, key: &Key, sink: &mut dyn EventSink) -> Verdict {
        let Some((t, cp, sp)) = self.endpoints(key) else {
            return Verdict::NoMatch;
        };
        let mut app = FlowApp::new(reg, t, cp, sp);
        for (i, (dir, data, gap)) in self.payloads.iter().enumerate() {
            if *gap > 0 {
                app.on_gap(*dir, *gap);
            }
            app.on_payload(reg, *dir, data, i as u64, sink);
        }
        app.finish(sink)
    }
}
