//! Captures as the identification crates' tests need them, read once, the same way, by the engine's own reader
//! (`flowbundle-ingest`: pcap, pcapng, gzip) and decoder (`flowbundle-decode`: every link type it knows, VLAN,
//! PPPoE, MPLS, tunnels decapsulated as the engine does).
//!
//! Three views, from the rawest:
//! * [`segments`]: every TCP segment and UDP datagram in capture order (non-first IP fragments are skipped: no
//!   defragmentation here; the engine's defragmenter has tests of its own);
//! * [`flows`]: segments grouped by unordered 5-tuple, the client being the sender of a SYN (without ACK) or else of
//!   the first packet, payloads in arrival order with a naive TCP clean-up (retransmitted bytes trimmed, a sequence
//!   jump recorded as a gap): what a parser sees, without the engine's reassembler;
//! * [`connections`]: what l7-filter sees: each packet's payload in capture order, both directions, retransmissions
//!   included, the first packet's source as the client.
//!
//! Dev-only: a dev-dependency, never part of a binary. Find the capture with `flowbundle_testsupport::data` first;
//! a capture that cannot be opened yields nothing and says so on standard error, and reading stops at the first
//! unreadable record, as the engine's reader does.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;

use flowbundle_decode::{DecodeOptions, L4};
use flowbundle_ingest::CaptureReader;
pub use flowbundle_types::Direction;

/// An address and port.
pub type Endpoint = (IpAddr, u16);

/// One TCP segment or UDP datagram of a capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    /// TCP (true) or UDP (false).
    pub tcp: bool,
    /// TCP sequence number (0 for UDP).
    pub seq: u32,
    /// TCP SYN flag.
    pub syn: bool,
    /// TCP ACK flag.
    pub ack: bool,
    /// The transport payload (Ethernet padding and bytes past the IP length excluded).
    pub payload: Vec<u8>,
}

impl Segment {
    /// The sender.
    pub fn source(&self) -> Endpoint {
        (self.src, self.sport)
    }

    /// The receiver.
    pub fn destination(&self) -> Endpoint {
        (self.dst, self.dport)
    }

    /// 6 for TCP, 17 for UDP.
    pub fn proto(&self) -> u8 {
        if self.tcp { 6 } else { 17 }
    }
}

/// Calls `f` with every TCP segment and UDP datagram of the capture at `path`, in capture order.
pub fn for_each_segment(path: &Path, mut f: impl FnMut(Segment)) {
    let mut reader = match CaptureReader::open(path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("testcapture: cannot open {}: {e}", path.display());
            return;
        }
    };
    let opts = DecodeOptions {
        decap_tunnels: true,
        ..DecodeOptions::default()
    };
    while let Ok(Some(rec)) = reader.next_packet() {
        let d = flowbundle_decode::decode(&rec, &opts);
        let Some(ip) = d.ip else { continue };
        if ip.frag_offset != 0 {
            continue;
        }
        let (sport, dport, tcp, seq, syn, ack) = match d.l4 {
            L4::Tcp(t) => (
                t.src_port,
                t.dst_port,
                true,
                t.seq,
                t.has(flowbundle_decode::wire::tcp::flags::SYN),
                t.has(flowbundle_decode::wire::tcp::flags::ACK),
            ),
            L4::Udp(u) => (u.src_port, u.dst_port, false, 0, false, false),
            _ => continue,
        };
        f(Segment {
            src: ip.src,
            dst: ip.dst,
            sport,
            dport,
            tcp,
            seq,
            syn,
            ack,
            payload: d.payload.to_vec(),
        });
    }
}

/// Every TCP segment and UDP datagram of the capture at `path`, in capture order.
pub fn segments(path: &Path) -> Vec<Segment> {
    let mut out = Vec::new();
    for_each_segment(path, |s| out.push(s));
    out
}

/// A flow's key: the transport and its two endpoints, the lower first.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Key {
    pub tcp: bool,
    pub a: Endpoint,
    pub b: Endpoint,
}

impl Key {
    /// The key of a flow between `x` and `y`, whichever sent first.
    pub fn new(tcp: bool, x: Endpoint, y: Endpoint) -> Key {
        if x <= y {
            Key { tcp, a: x, b: y }
        } else {
            Key { tcp, a: y, b: x }
        }
    }

    /// The endpoint of this flow that is not `client`.
    pub fn server_of(&self, client: Endpoint) -> Endpoint {
        if self.a == client { self.b } else { self.a }
    }
}

/// One flow of [`flows`].
#[derive(Default, Debug)]
pub struct Flow {
    /// The SYN sender, or the first packet's sender.
    pub client: Option<Endpoint>,
    client_from_syn: bool,
    /// Payloads in arrival order: direction, bytes, and the bytes missing before them (a TCP sequence gap).
    pub payloads: Vec<(Direction, Vec<u8>, u64)>,
    /// TCP: next expected sequence number per direction (to trim retransmitted bytes).
    next_seq: [Option<u32>; 2],
}

impl Flow {
    /// The server's endpoint under `key`.
    pub fn server(&self, key: &Key) -> Option<Endpoint> {
        self.client.map(|c| key.server_of(c))
    }

    fn add(&mut self, s: Segment, max_payloads: usize) {
        let syn_only = s.syn && !s.ack;
        if self.client.is_none() || (syn_only && !self.client_from_syn) {
            self.client = Some(s.source());
            self.client_from_syn = syn_only;
        }
        let dir = if Some(s.source()) == self.client {
            Direction::ToServer
        } else {
            Direction::ToClient
        };
        if s.tcp && syn_only {
            self.next_seq[dir.index()] = Some(s.seq.wrapping_add(1));
        }
        if s.payload.is_empty() || self.payloads.len() >= max_payloads {
            return;
        }
        let mut data = s.payload.as_slice();
        let mut gap = 0u64;
        if s.tcp {
            let i = dir.index();
            let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
            if let Some(next) = self.next_seq[i] {
                let end = s.seq.wrapping_add(len);
                if (end.wrapping_sub(next) as i32) <= 0 {
                    return; // entirely retransmitted
                }
                let overlap = next.wrapping_sub(s.seq) as i32;
                if overlap > 0 {
                    data = data.get(overlap as usize..).unwrap_or(&[]);
                } else if overlap < 0 {
                    gap = overlap.unsigned_abs().into(); // bytes never captured (or reordered: naive)
                }
            }
            self.next_seq[i] = Some(s.seq.wrapping_add(len));
        }
        self.payloads.push((dir, data.to_vec(), gap));
    }
}

/// The TCP and UDP flows of the capture at `path`, each with at most `max_payloads` payloads (see the crate docs).
pub fn flows(path: &Path, max_payloads: usize) -> HashMap<Key, Flow> {
    let mut flows: HashMap<Key, Flow> = HashMap::new();
    for_each_segment(path, |s| {
        flows
            .entry(Key::new(s.tcp, s.source(), s.destination()))
            .or_default()
            .add(s, max_payloads)
    });
    flows
}

/// One connection as l7-filter sees it.
#[derive(Debug, Clone)]
pub struct Connection {
    /// 6 (TCP) or 17 (UDP).
    pub proto: u8,
    /// Source of the first packet seen.
    pub client: Endpoint,
    /// Destination of the first packet seen.
    pub server: Endpoint,
    /// Payloads in capture order, both directions, empty ones included, at most `keep` of them.
    pub packets: Vec<Vec<u8>>,
}

/// The connections of the capture at `path` in order of first appearance, each with its first `keep` packets'
/// payloads (l7-filter looks at 10).
pub fn connections(path: &Path, keep: usize) -> Vec<Connection> {
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut conns: Vec<Connection> = Vec::new();
    for_each_segment(path, |s| {
        let i = *index
            .entry(Key::new(s.tcp, s.source(), s.destination()))
            .or_insert_with(|| {
                conns.push(Connection {
                    proto: s.proto(),
                    client: s.source(),
                    server: s.destination(),
                    packets: Vec::new(),
                });
                conns.len() - 1
            });
        if let Some(c) = conns.get_mut(i)
            && c.packets.len() < keep
        {
            c.packets.push(s.payload);
        }
    });
    conns
}
