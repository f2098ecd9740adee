//! Test helpers: connections from pcap files, as l7-filter sees them.
//!
//! l7-filter works on packets, not streams: it appends each packet's payload to the connection's buffer in
//! arrival order, both directions, retransmissions included. So a "connection" here is the list of payloads of
//! its packets in capture order, keyed by the unordered 5-tuple; no reassembly. Only Ethernet (with VLAN tags),
//! Linux cooked and raw IP link types, unfragmented IPv4 and IPv6 without extension headers, TCP and UDP: enough
//! for the nDPI captures these tests read. Everything is bounds-checked; what does not parse is skipped.

#![allow(dead_code)]

use pcap_parser::{Block, PcapBlockOwned, PcapError, create_reader};
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;

/// One connection: its endpoints as first seen (the first packet's source is `client`), its packets' payloads.
#[derive(Debug, Clone)]
pub struct Conn {
    /// 6 (TCP) or 17 (UDP).
    pub proto: u8,
    /// Source of the first packet seen.
    pub client: (IpAddr, u16),
    /// Destination of the first packet seen.
    pub server: (IpAddr, u16),
    /// Payloads in capture order, both directions, empty ones included, at most `keep` of them.
    pub packets: Vec<Vec<u8>>,
}

/// Reads a pcap or pcapng file and groups its TCP/UDP packets into connections, in order of first appearance.
/// Keeps at most `keep` packets per connection (l7-filter looks at 10).
pub fn connections(path: &Path, keep: usize) -> Vec<Conn> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let Ok(mut reader) = create_reader(1 << 20, file) else {
        return Vec::new();
    };
    let mut linktypes: Vec<i32> = Vec::new();
    let mut index: HashMap<(u8, Endpoint, Endpoint), usize> = HashMap::new();
    let mut conns: Vec<Conn> = Vec::new();
    loop {
        match reader.next() {
            Ok((offset, block)) => {
                let packet = match &block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        linktypes = vec![h.network.0];
                        None
                    }
                    PcapBlockOwned::Legacy(b) => {
                        Some((b.data, linktypes.first().copied().unwrap_or(1)))
                    }
                    PcapBlockOwned::NG(Block::InterfaceDescription(i)) => {
                        linktypes.push(i.linktype.0);
                        None
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(e)) => Some((
                        e.data,
                        linktypes.get(e.if_id as usize).copied().unwrap_or(1),
                    )),
                    _ => None,
                };
                if let Some((proto, src, dst, payload)) =
                    packet.and_then(|(data, lt)| parse(data, lt))
                {
                    let key = if src <= dst {
                        (proto, src, dst)
                    } else {
                        (proto, dst, src)
                    };
                    let i = *index.entry(key).or_insert_with(|| {
                        conns.push(Conn {
                            proto,
                            client: src,
                            server: dst,
                            packets: Vec::new(),
                        });
                        conns.len() - 1
                    });
                    if conns[i].packets.len() < keep {
                        conns[i].packets.push(payload.to_vec());
                    }
                }
                reader.consume(offset);
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
    conns
}

fn be16(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]))
}

type Endpoint = (IpAddr, u16);

fn parse(data: &[u8], linktype: i32) -> Option<(u8, Endpoint, Endpoint, &[u8])> {
    let (mut ethertype, mut d) = match linktype {
        1 => (be16(data, 12)?, data.get(14..)?),
        113 => (be16(data, 14)?, data.get(16..)?),
        12 | 14 | 101 => (
            if data.first()? >> 4 == 6 {
                0x86dd
            } else {
                0x0800
            },
            data,
        ),
        _ => return None,
    };
    while ethertype == 0x8100 || ethertype == 0x88a8 {
        ethertype = be16(d, 2)?;
        d = d.get(4..)?;
    }
    let (proto, src, dst, l4): (u8, IpAddr, IpAddr, &[u8]) = match ethertype {
        0x0800 => {
            let ihl = usize::from(d.first()? & 0x0f) * 4;
            let total = usize::from(be16(d, 2)?).min(d.len());
            if ihl < 20 || total < ihl || be16(d, 6)? & 0x3fff != 0 {
                return None;
            }
            let s: [u8; 4] = d.get(12..16)?.try_into().ok()?;
            let t: [u8; 4] = d.get(16..20)?.try_into().ok()?;
            (*d.get(9)?, s.into(), t.into(), d.get(ihl..total)?)
        }
        0x86dd => {
            let end = (usize::from(be16(d, 4)?) + 40).min(d.len());
            let s: [u8; 16] = d.get(8..24)?.try_into().ok()?;
            let t: [u8; 16] = d.get(24..40)?.try_into().ok()?;
            (*d.get(6)?, s.into(), t.into(), d.get(40..end)?)
        }
        _ => return None,
    };
    let (sport, dport, payload) = match proto {
        6 => {
            let off = usize::from(l4.get(12)? >> 4) * 4;
            (be16(l4, 0)?, be16(l4, 2)?, l4.get(off.max(20)..)?)
        }
        17 => (be16(l4, 0)?, be16(l4, 2)?, l4.get(8..)?),
        _ => return None,
    };
    Some((proto, (src, sport), (dst, dport), payload))
}
