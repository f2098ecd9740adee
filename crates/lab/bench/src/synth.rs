//! In-memory synthetic traces with the shapes of the ANCS'10 captures (Table 1), so `flowbundle bench --synth
//! dominant|many|balanced` needs no file.
//!
//! This is the harness's own small generator, built while the trace tools' realistic one (`flowbundle_trace::synth`,
//! with real application payloads, packet trains and rate control) was not yet in the workspace; it aims only at the
//! two properties that drive scheduling, **connection density** and **the share of the largest connection**:
//!
//! * `K` connections are active at any time. Each packet belongs to the dominant connection with probability `d`
//!   (when the profile has one), else to one of the other active connections chosen uniformly. With `K − 1` others
//!   sharing `1 − d` of the packets, the expected number of distinct connections in 100 packets is
//!   `1 + (K − 1)(1 − (1 − (1 − d)/(K − 1))^100)`, which sets `K` for a target density:
//!   `dominant` (d = 0.55, K = 7) gives about 7; `balanced` (d = 0.08, K = 31) about 29.6; `many` (no dominant
//!   connection, K = 63) about 50.
//! * A connection other than the dominant one lives for a geometric number of packets (mean from Table 1's packets
//!   per connection, capped so none exceeds 0.4% of the trace in `many`), then closes and a new one opens, so the
//!   active set turns over as in real traffic.
//! * Every connection is TCP over IPv4 over Ethernet with a handshake, consistent sequence and acknowledgment numbers
//!   per direction, an HTTP request and response header at the start (so an engine has something to identify),
//!   pseudo-random payload after it, and a FIN at the end. Checksums are correct (decode's `Repr::emit`).
//! * Timestamps follow exponential gaps at the profile's average rate (13, 27 and 57 Mb/s, Table 1).
//!
//! Everything is derived from a seed (SplitMix64), so a profile and a seed give the same bytes.

use flowbundle_decode::wire::{ethernet, ethertype, ip_proto, ipv4, tcp};
use flowbundle_ingest::{LinkType, Trace, TraceBuilder};
use flowbundle_scheduler::check::SplitMix64;
use std::net::{IpAddr, Ipv4Addr};

/// The shape of a synthetic trace. See the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct SynthProfile {
    pub name: String,
    /// Packets to generate.
    pub packets: usize,
    /// Share of packets on one long-lived dominant connection (0: none).
    pub dominant_share: f64,
    /// Connections active at once (including the dominant one).
    pub active: usize,
    /// Mean packets of a (non-dominant) connection, and the most it may have.
    pub mean_packets: f64,
    pub max_packets: u64,
    /// Average rate, megabits per second of wire bytes.
    pub avg_mbps: f64,
    pub seed: u64,
}

/// The profile names [`SynthProfile::named`] knows.
pub const PROFILES: &[&str] = &["dominant", "many", "balanced"];

impl SynthProfile {
    /// `dominant`, `many` or `balanced` (ANCS'10 Table 1 shapes) with `packets` packets.
    pub fn named(name: &str, packets: usize) -> Option<SynthProfile> {
        let (dominant_share, active, mean_packets, avg_mbps) = match name {
            "dominant" => (0.55, 7, 92.0, 13.0),
            "many" => (0.0, 63, 15.0, 27.0),
            "balanced" => (0.08, 31, 28.0, 57.0),
            _ => return None,
        };
        Some(SynthProfile {
            name: name.to_string(),
            packets,
            dominant_share,
            active,
            mean_packets,
            // Table 1's "many": no connection above 0.4% of the packets.
            max_packets: ((packets as f64 * 0.004) as u64).max(8),
            avg_mbps,
            seed: 1,
        })
    }
}

/// One direction of a connection.
#[derive(Clone, Copy)]
struct Side {
    addr: Ipv4Addr,
    port: u16,
    mac: [u8; 6],
    seq: u32,
}

struct Conn {
    client: Side,
    server: Side,
    /// Packets sent so far, and the budget.
    sent: u64,
    budget: u64,
    bulk: bool,
}

impl Conn {
    fn new(n: u64, budget: u64, bulk: bool, rng: &mut SplitMix64) -> Conn {
        let c = n.wrapping_mul(2_654_435_761) as u32;
        Conn {
            client: Side {
                addr: Ipv4Addr::new(10, (c >> 16) as u8, (c >> 8) as u8, (c as u8).max(1)),
                port: 1024 + (n % 60_000) as u16,
                mac: [0x02, 0, 0, 0, (c >> 8) as u8, c as u8],
                seq: rng.next() as u32,
            },
            server: Side {
                addr: Ipv4Addr::new(172, 16, (n % 251) as u8, 1 + (n % 13) as u8),
                port: if n.is_multiple_of(3) { 443 } else { 80 },
                mac: [0x02, 0, 0, 1, 0, 1],
                seq: rng.next() as u32,
            },
            sent: 0,
            budget: budget.max(5),
            bulk,
        }
    }
}

const REQUEST: &[u8] = b"GET /index.html HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: flowbundle-bench\r\nAccept: */*\r\n\r\n";
const RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 1048576\r\n\r\n";

/// Generate a profile's packets into an in-memory trace.
pub fn generate(p: &SynthProfile) -> Trace {
    let mut rng = SplitMix64(p.seed ^ 0x5eed_5eed);
    let mut b = TraceBuilder::with_capacity(p.packets, p.packets * 600);
    let active = p.active.max(1);
    let has_dominant = p.dominant_share > 0.0 && active > 1;
    let mut next_id = 0u64;
    let mut new_conn = |rng: &mut SplitMix64, bulk: bool| {
        next_id += 1;
        let budget = if bulk {
            u64::MAX
        } else {
            // Geometric with the profile's mean (at least the handshake, request, response and FIN), capped.
            let u = (rng.below(1 << 30) as f64 + 1.0) / f64::from(1u32 << 30);
            let extra = -u.ln() * (p.mean_packets - 5.0).max(1.0);
            (5 + extra as u64).min(p.max_packets.max(5))
        };
        Conn::new(next_id, budget, bulk, rng)
    };
    let mut conns: Vec<Conn> = (0..active)
        .map(|i| new_conn(&mut rng, has_dominant && i == 0))
        .collect();
    let mut buf = vec![0u8; 1514];
    let mut payload = vec![0u8; 1460];
    let mut ts: u64 = 1_700_000_000_000_000_000;
    let bits_per_ns = (p.avg_mbps * 1e6 / 1e9).max(1e-6);
    for _ in 0..p.packets {
        let i = if has_dominant && (rng.below(1_000_000) as f64) < p.dominant_share * 1e6 {
            0
        } else if has_dominant {
            1 + rng.below(active as u64 - 1) as usize
        } else {
            rng.below(active as u64) as usize
        };
        let c = &mut conns[i];
        let len = emit_next(c, &mut rng, &mut buf, &mut payload);
        b.push(ts, LinkType::ETHERNET, &buf[..len], len as u32);
        // Exponential gap at the average rate.
        let u = (rng.below(1 << 30) as f64 + 1.0) / f64::from(1u32 << 30);
        ts += (-u.ln() * len as f64 * 8.0 / bits_per_ns) as u64;
        if c.sent >= c.budget {
            conns[i] = new_conn(&mut rng, false);
        }
    }
    b.build()
}

/// Write the connection's next packet into `buf`; returns its length.
fn emit_next(c: &mut Conn, rng: &mut SplitMix64, buf: &mut [u8], payload: &mut [u8]) -> usize {
    use tcp::flags::{ACK, FIN, PSH, SYN};
    let n = c.sent;
    c.sent += 1;
    let last = c.sent >= c.budget;
    // (from client?, flags, payload length)
    let (from_client, flags, plen) = match n {
        0 => (true, SYN, 0),
        1 => (false, SYN | ACK, 0),
        2 => (true, ACK, 0),
        3 => (true, PSH | ACK, REQUEST.len()),
        4 => (false, PSH | ACK, RESPONSE.len()),
        _ if last => (true, FIN | ACK, 0),
        _ => {
            // Downloads: mostly full-size server segments, some client acks.
            if c.bulk || rng.below(4) != 0 {
                let full = c.bulk || rng.below(3) != 0;
                (
                    false,
                    ACK,
                    if full {
                        1460
                    } else {
                        64 + rng.below(1300) as usize
                    },
                )
            } else {
                (true, ACK, 0)
            }
        }
    };
    let plen = plen.min(payload.len());
    match n {
        3 => payload[..plen].copy_from_slice(&REQUEST[..plen]),
        4 => payload[..plen].copy_from_slice(&RESPONSE[..plen]),
        _ => {
            for chunk in payload[..plen].chunks_mut(8) {
                let r = rng.next().to_le_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
        }
    }
    let (src, dst) = if from_client {
        (c.client, c.server)
    } else {
        (c.server, c.client)
    };
    let seg = tcp::Repr {
        src_port: src.port,
        dst_port: dst.port,
        seq: src.seq,
        ack: if flags == SYN { 0 } else { dst.seq },
        flags,
        window: 64_240,
        urgent: 0,
        mss: (flags & SYN != 0).then_some(1460),
        window_scale: None,
        sack_permitted: false,
        sack: [None; 3],
        timestamps: None,
        payload: &payload[..plen],
    };
    let tlen = seg.buffer_len();
    let ip = ipv4::Repr {
        src: src.addr,
        dst: dst.addr,
        protocol: ip_proto::TCP,
        payload_len: tlen,
        ttl: 64,
        ident: c.sent as u16,
        dscp: 0,
        ecn: 0,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    };
    let eth = ethernet::Repr {
        src: src.mac,
        dst: dst.mac,
        ethertype: ethertype::IPV4,
    };
    let total = 14 + 20 + tlen;
    // Emitting into a buffer sized for the largest segment cannot fail; a failure would only shorten the packet.
    let ok = eth.emit(&mut buf[..14]).is_ok()
        && ip.emit(&mut buf[14..34]).is_ok()
        && seg
            .emit(
                &mut buf[34..total],
                IpAddr::V4(src.addr),
                IpAddr::V4(dst.addr),
            )
            .is_ok();
    // Sequence space: data bytes, plus one for SYN and FIN.
    let consumed = plen as u32 + u32::from(flags & (SYN | FIN) != 0);
    let side = if from_client {
        &mut c.client
    } else {
        &mut c.server
    };
    side.seq = side.seq.wrapping_add(consumed);
    if ok { total } else { 14 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::connection_density;
    use crate::prep::{PrepOptions, prepare};

    fn shape(name: &str) -> (f64, f64, usize) {
        let p = SynthProfile::named(name, 40_000).unwrap();
        let prep = prepare(vec![(name.into(), generate(&p))], &PrepOptions::default());
        assert_eq!(prep.len(), 40_000);
        assert_eq!(prep.stats.non_ip, 0);
        let mut counts = std::collections::HashMap::new();
        for &f in &prep.flows {
            *counts.entry(f).or_insert(0u64) += 1;
        }
        let top = counts.values().copied().max().unwrap_or(0) as f64 / prep.len() as f64;
        (connection_density(&prep.flows), top, counts.len())
    }

    #[test]
    fn profiles_hit_their_density_and_top_share() {
        let (cd, top, _) = shape("dominant");
        assert!((cd - 7.0).abs() <= 7.0 * 0.15, "dominant CD {cd}");
        assert!(top > 0.5, "dominant top share {top}");
        let (cd, top, flows) = shape("many");
        assert!((cd - 50.0).abs() <= 50.0 * 0.15, "many CD {cd}");
        assert!(top <= 0.004 + 1e-9, "many top share {top}");
        assert!(flows > 1000);
        let (cd, top, _) = shape("balanced");
        assert!((cd - 29.0).abs() <= 29.0 * 0.15, "balanced CD {cd}");
        assert!((0.06..0.10).contains(&top), "balanced top share {top}");
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes_and_packets_decode_cleanly() {
        let p = SynthProfile::named("balanced", 2000).unwrap();
        let (a, b) = (generate(&p), generate(&p));
        assert!(a.iter().zip(b.iter()).all(|(x, y)| x == y));
        let opts = flowbundle_decode::DecodeOptions {
            verify_ipv4_checksum: true,
            ..Default::default()
        };
        for r in a.iter() {
            let d = flowbundle_decode::decode(&r, &opts);
            assert!(d.outcome.is_decoded(), "{:?}", d.outcome);
            let t = d.tcp().expect("tcp");
            let (src, dst) = (d.ip.unwrap().src, d.ip.unwrap().dst);
            let seg = tcp::Packet::new_checked(&r.data[34..]).unwrap();
            assert!(seg.verify_checksum(src, dst), "bad TCP checksum");
            let _ = t;
        }
        assert!(
            a.iter()
                .map(|r| r.ts_ns)
                .collect::<Vec<_>>()
                .windows(2)
                .all(|w| w[0] <= w[1])
        );
        assert!(SynthProfile::named("nope", 10).is_none());
    }
}
