//! Packet batches, and the batcher that keeps flows whole.
//!
//! # The batch
//! A [`PacketBatch`] is the unit a device works on: every payload back to back in one buffer plus an offsets array,
//! which is exactly what an OpenCL kernel wants (one upload, one work-item per packet indexing `offsets[i]..
//! offsets[i+1]`). Beside it, per packet, the connection index (into the batch's key table, for `aes`), the
//! packet's sequence number in its connection (the nonce of the AES IV), the flow id and a caller tag (the packet's
//! number in the trace). A batch is reused: [`PacketBatch::clear`] keeps its allocations.
//!
//! Memory is bounded: a batch refuses packets beyond `max_packets` or `max_bytes` ([`BatchFull`]) and cuts payloads
//! longer than `max_payload`, counting what it cut.
//!
//! # Flows stay whole (Pythia §III-a)
//! Placing packets into batches in arrival order and spreading batches over devices reorders packets of a flow when
//! a fast device overtakes a slow one; a barrier between devices prevents that but makes the fast wait for the slow.
//! Pythia instead groups packets by 5-tuple before forming batches. [`FlowBatcher`] does the same: it fills a
//! window, groups the window's packets by flow (flows in order of first appearance, packets of a flow in arrival
//! order), and cuts the window into one batch per active device, assigning each flow *whole* to the batch
//! `flow % parts`. The assignment depends only on the flow id and the number of parts, so while the set of devices
//! is stable a flow always lands on the same device and, as every device completes its batches in FIFO order, its
//! packets are never reordered; when the number of parts changes, the runtime drains the devices first
//! (see `runtime`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Caps on one batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchLimits {
    /// Most packets in a batch.
    pub max_packets: usize,
    /// Most payload bytes in a batch (must fit the `u32` offsets).
    pub max_bytes: usize,
    /// Longest payload kept per packet; longer ones are cut and counted.
    pub max_payload: usize,
    /// Most connections (keys) in a batch.
    pub max_connections: usize,
}

impl Default for BatchLimits {
    fn default() -> Self {
        Self {
            max_packets: 1 << 16,
            max_bytes: 256 << 20,
            max_payload: 65_535,
            max_connections: 1 << 16,
        }
    }
}

/// What the caps cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchCounters {
    /// Payloads longer than `max_payload`, cut to it.
    pub truncated_payloads: u64,
    /// Bytes those cuts removed.
    pub truncated_bytes: u64,
    /// Packets refused because the batch was full.
    pub refused: u64,
}

/// A batch refused a packet: it is full (packets, bytes or connections).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("batch full")]
pub struct BatchFull;

/// Payloads of many packets in one buffer, plus what the kernels need per packet.
#[derive(Clone, Debug, Default)]
pub struct PacketBatch {
    limits: BatchLimits,
    data: Vec<u8>,
    offsets: Vec<u32>,
    conn: Vec<u32>,
    seq: Vec<u32>,
    flow: Vec<u64>,
    tag: Vec<u64>,
    keys: Vec<[u8; 16]>,
    key_index: HashMap<u64, u32>,
    counters: BatchCounters,
}

impl PacketBatch {
    /// An empty batch with these caps.
    pub fn new(limits: BatchLimits) -> Self {
        let limits = BatchLimits {
            max_bytes: limits.max_bytes.min(u32::MAX as usize),
            ..limits
        };
        Self {
            limits,
            offsets: vec![0],
            ..Default::default()
        }
    }

    /// Empties the batch, keeping its allocations and its counters.
    pub fn clear(&mut self) {
        self.data.clear();
        self.offsets.clear();
        self.offsets.push(0);
        self.conn.clear();
        self.seq.clear();
        self.flow.clear();
        self.tag.clear();
        self.keys.clear();
        self.key_index.clear();
    }

    /// Appends a packet of flow `flow` whose connection key is `key`, with sequence number `seq` in its
    /// connection (the AES IV nonce) and a caller `tag`.
    pub fn push(
        &mut self,
        flow: u64,
        key: &[u8; 16],
        seq: u32,
        tag: u64,
        payload: &[u8],
    ) -> Result<(), BatchFull> {
        let keep = payload.len().min(self.limits.max_payload);
        let new_conn = !self.key_index.contains_key(&flow);
        if self.len() >= self.limits.max_packets
            || self.data.len() + keep > self.limits.max_bytes
            || (new_conn && self.keys.len() >= self.limits.max_connections)
        {
            self.counters.refused += 1;
            return Err(BatchFull);
        }
        if keep < payload.len() {
            self.counters.truncated_payloads += 1;
            self.counters.truncated_bytes += (payload.len() - keep) as u64;
        }
        let next_key = self.keys.len() as u32;
        let conn = *self.key_index.entry(flow).or_insert(next_key);
        if conn == next_key {
            self.keys.push(*key);
        }
        self.data.extend_from_slice(&payload[..keep]);
        // max_bytes <= u32::MAX, so the cast is exact.
        self.offsets.push(self.data.len() as u32);
        self.conn.push(conn);
        self.seq.push(seq);
        self.flow.push(flow);
        self.tag.push(tag);
        Ok(())
    }

    /// Number of packets.
    pub fn len(&self) -> usize {
        self.conn.len()
    }

    /// True without packets.
    pub fn is_empty(&self) -> bool {
        self.conn.is_empty()
    }

    /// Payload bytes.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    /// Payload of packet `i`.
    pub fn payload(&self, i: usize) -> Option<&[u8]> {
        let (a, b) = (
            *self.offsets.get(i)? as usize,
            *self.offsets.get(i + 1)? as usize,
        );
        self.data.get(a..b)
    }

    /// All payloads, back to back.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// All payloads, mutable (the `aes` kernel encrypts in place).
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }

    /// `len() + 1` offsets into [`PacketBatch::data`].
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// Per packet: index into [`PacketBatch::keys`].
    pub fn conns(&self) -> &[u32] {
        &self.conn
    }

    /// Per packet: sequence number in its connection.
    pub fn seqs(&self) -> &[u32] {
        &self.seq
    }

    /// Per packet: flow id.
    pub fn flows(&self) -> &[u64] {
        &self.flow
    }

    /// Per packet: caller tag.
    pub fn tags(&self) -> &[u64] {
        &self.tag
    }

    /// Per connection in this batch: the AES-128 key.
    pub fn keys(&self) -> &[[u8; 16]] {
        &self.keys
    }

    /// What the caps cut so far.
    pub fn counters(&self) -> BatchCounters {
        self.counters
    }

    /// Splits the payload buffer into per-packet mutable slices (for in-place kernels run in parallel).
    pub fn payloads_mut(&mut self) -> Vec<&mut [u8]> {
        let mut out = Vec::with_capacity(self.conn.len());
        let mut rest: &mut [u8] = &mut self.data;
        let mut consumed = 0usize;
        for w in self.offsets.windows(2) {
            let len = (w[1] as usize).saturating_sub(consumed).min(rest.len());
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
            out.push(head);
            rest = tail;
            consumed += len;
        }
        out
    }
}

/// One packet handed to the batcher (payload borrowed; the batcher copies it into its window).
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    /// Flow id: a hash of the canonical 5-tuple (both directions of a connection share it).
    pub flow: u64,
    /// Caller tag (the packet's number in the trace).
    pub tag: u64,
    /// Application payload.
    pub payload: &'a [u8],
}

/// How the batcher forms windows and tracks connections.
#[derive(Clone, Copy, Debug)]
pub struct BatcherConfig {
    /// Packets per window (the batch size times the number of devices sharing the application).
    pub window: usize,
    /// Caps of each batch produced.
    pub limits: BatchLimits,
    /// Most connections whose key and sequence number are remembered; beyond it the oldest-inserted half is
    /// forgotten and counted (a forgotten connection restarts its sequence numbers).
    pub max_connections: usize,
    /// Secret mixed into every connection key (a stand-in for a key exchange).
    pub key_secret: u64,
}

impl Default for BatcherConfig {
    fn default() -> Self {
        Self {
            window: 4096,
            limits: BatchLimits::default(),
            max_connections: 1 << 20,
            key_secret: 0x5eed_f10b,
        }
    }
}

/// Counters of the batcher.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatcherCounters {
    /// Packets accepted.
    pub packets: u64,
    /// Windows formed.
    pub windows: u64,
    /// Connections forgotten because the connection table was full.
    pub connections_forgotten: u64,
    /// Packets a batch refused (its caps are smaller than the window).
    pub refused: u64,
}

struct ConnState {
    key: [u8; 16],
    next_seq: u32,
    born: u64,
}

/// Groups packets by flow and cuts windows into batches that keep every flow whole.
pub struct FlowBatcher {
    cfg: BatcherConfig,
    staging: Vec<u8>,
    pending: Vec<(u64, u64, u32, u32, u32)>, // flow, tag, seq, start, len
    conns: HashMap<u64, ConnState>,
    born: u64,
    counters: BatcherCounters,
}

impl FlowBatcher {
    /// A batcher with an empty window.
    pub fn new(cfg: BatcherConfig) -> Self {
        let cfg = BatcherConfig {
            window: cfg.window.max(1),
            max_connections: cfg.max_connections.max(2),
            ..cfg
        };
        Self {
            cfg,
            staging: Vec::new(),
            pending: Vec::new(),
            conns: HashMap::new(),
            born: 0,
            counters: Default::default(),
        }
    }

    /// Changes the window size (takes effect for the next window).
    pub fn set_window(&mut self, window: usize) {
        self.cfg.window = window.max(1);
    }

    /// The window size.
    pub fn window(&self) -> usize {
        self.cfg.window
    }

    /// Packets waiting in the current window.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Counters so far.
    pub fn counters(&self) -> BatcherCounters {
        self.counters
    }

    /// The AES key of a connection: MD5(secret ‖ flow id), both little-endian. Deterministic so that every device
    /// and every run agree; a real deployment would take keys from its key exchange.
    pub fn connection_key(secret: u64, flow: u64) -> [u8; 16] {
        use md5::Digest;
        let mut h = md5::Md5::new();
        h.update(secret.to_le_bytes());
        h.update(flow.to_le_bytes());
        h.finalize().into()
    }

    /// Adds a packet to the window; returns true when the window is full and should be cut.
    pub fn push(&mut self, pkt: Packet<'_>) -> bool {
        if self.conns.len() >= self.cfg.max_connections && !self.conns.contains_key(&pkt.flow) {
            self.forget_oldest_half();
        }
        let secret = self.cfg.key_secret;
        let born = self.born;
        let st = self.conns.entry(pkt.flow).or_insert_with(|| ConnState {
            key: Self::connection_key(secret, pkt.flow),
            next_seq: 0,
            born,
        });
        self.born += 1;
        let seq = st.next_seq;
        st.next_seq = st.next_seq.wrapping_add(1);
        let keep = pkt.payload.len().min(self.cfg.limits.max_payload);
        let start = self.staging.len() as u32;
        self.staging.extend_from_slice(&pkt.payload[..keep]);
        self.pending
            .push((pkt.flow, pkt.tag, seq, start, keep as u32));
        self.counters.packets += 1;
        self.pending.len() >= self.cfg.window
    }

    fn forget_oldest_half(&mut self) {
        let mut ages: Vec<u64> = self.conns.values().map(|c| c.born).collect();
        ages.sort_unstable();
        let cut = ages.get(ages.len() / 2).copied().unwrap_or(0);
        let before = self.conns.len();
        self.conns.retain(|_, c| c.born >= cut);
        self.counters.connections_forgotten += (before - self.conns.len()) as u64;
    }

    /// Cuts the current window into `parts` batches (`out[k]` for part `k`, cleared first): flow `f` goes whole to
    /// part `f % parts`; inside a batch, flows in order of first appearance, each flow's packets in arrival order.
    pub fn cut(&mut self, parts: usize, out: &mut Vec<PacketBatch>) {
        let parts = parts.max(1);
        out.resize_with(parts, || PacketBatch::new(self.cfg.limits));
        for b in out.iter_mut() {
            b.clear();
        }
        if self.pending.is_empty() {
            return;
        }
        self.counters.windows += 1;
        let mut first_seen: HashMap<u64, usize> = HashMap::with_capacity(self.pending.len());
        let mut order: Vec<(usize, usize, usize)> = Vec::with_capacity(self.pending.len());
        for (i, p) in self.pending.iter().enumerate() {
            let first = *first_seen.entry(p.0).or_insert(i);
            order.push(((p.0 % parts as u64) as usize, first, i));
        }
        order.sort_unstable();
        for (part, _, i) in order {
            let (flow, tag, seq, start, len) = self.pending[i];
            let key = self.conns.get(&flow).map_or_else(
                || Self::connection_key(self.cfg.key_secret, flow),
                |c| c.key,
            );
            let payload = &self.staging[start as usize..(start + len) as usize];
            if out[part].push(flow, &key, seq, tag, payload).is_err() {
                self.counters.refused += 1;
            }
        }
        self.pending.clear();
        self.staging.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn push_and_read_back() {
        let mut b = PacketBatch::new(BatchLimits {
            max_payload: 4,
            max_packets: 3,
            ..Default::default()
        });
        b.push(7, &[1; 16], 0, 10, b"abcdef").unwrap();
        b.push(8, &[2; 16], 0, 11, b"").unwrap();
        b.push(7, &[1; 16], 1, 12, b"xy").unwrap();
        assert_eq!(b.push(9, &[3; 16], 0, 13, b"z"), Err(BatchFull));
        assert_eq!(b.len(), 3);
        assert_eq!(b.payload(0), Some(&b"abcd"[..]));
        assert_eq!(b.payload(1), Some(&b""[..]));
        assert_eq!(b.payload(2), Some(&b"xy"[..]));
        assert_eq!(b.payload(3), None);
        assert_eq!(b.conns(), &[0, 1, 0]);
        assert_eq!(b.keys().len(), 2);
        assert_eq!(
            b.counters(),
            BatchCounters {
                truncated_payloads: 1,
                truncated_bytes: 2,
                refused: 1
            }
        );
        let parts = b.payloads_mut();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![4, 0, 2]
        );
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.offsets(), &[0]);
    }

    /// Feeds `(flow, tag)` packets through the batcher window by window with a changing number of parts and
    /// returns the batches in the order they were cut (window by window, part by part).
    fn run(
        packets: &[(u64, u64)],
        window: usize,
        parts_of_window: impl Fn(usize) -> usize,
    ) -> Vec<Vec<PacketBatch>> {
        let mut b = FlowBatcher::new(BatcherConfig {
            window,
            ..Default::default()
        });
        let mut windows = Vec::new();
        let mut out = Vec::new();
        for &(flow, tag) in packets {
            let payload = tag.to_le_bytes();
            if b.push(Packet {
                flow,
                tag,
                payload: &payload,
            }) {
                b.cut(parts_of_window(windows.len()), &mut out);
                windows.push(out.clone());
            }
        }
        b.cut(parts_of_window(windows.len()), &mut out);
        windows.push(out.clone());
        windows
    }

    proptest! {
        /// All packets of a flow in a window land in one batch; within a flow, tags (arrival order) only grow
        /// across the whole run, whatever the number of parts; nothing is lost or duplicated; sequence numbers
        /// count each connection's packets.
        #[test]
        fn flows_stay_whole_and_ordered(
            flows in proptest::collection::vec(0u64..12, 1..400),
            window in 1usize..64,
            parts in proptest::collection::vec(1usize..4, 1..8),
        ) {
            let packets: Vec<(u64, u64)> = flows.iter().enumerate().map(|(i, &f)| (f, i as u64)).collect();
            let windows = run(&packets, window, |w| parts[w % parts.len()]);
            let mut last_tag: HashMap<u64, u64> = HashMap::new();
            let mut next_seq: HashMap<u64, u32> = HashMap::new();
            let mut seen = 0usize;
            for batches in &windows {
                let mut owner: HashMap<u64, usize> = HashMap::new();
                for (k, batch) in batches.iter().enumerate() {
                    for i in 0..batch.len() {
                        let (flow, tag, seq) = (batch.flows()[i], batch.tags()[i], batch.seqs()[i]);
                        prop_assert_eq!(*owner.entry(flow).or_insert(k), k, "flow split across batches");
                        prop_assert_eq!(flow % batches.len() as u64, k as u64);
                        if let Some(&t) = last_tag.get(&flow) { prop_assert!(tag > t, "reordered"); }
                        last_tag.insert(flow, tag);
                        let s = next_seq.entry(flow).or_insert(0);
                        prop_assert_eq!(seq, *s);
                        *s += 1;
                        prop_assert_eq!(batch.payload(i), Some(&tag.to_le_bytes()[..]));
                        seen += 1;
                    }
                }
            }
            prop_assert_eq!(seen, packets.len());
        }
    }

    #[test]
    fn connection_table_is_bounded() {
        let mut b = FlowBatcher::new(BatcherConfig {
            window: 1 << 20,
            max_connections: 8,
            ..Default::default()
        });
        for f in 0..100u64 {
            b.push(Packet {
                flow: f,
                tag: f,
                payload: b"x",
            });
        }
        assert!(b.conns.len() <= 8);
        assert!(b.counters().connections_forgotten >= 92);
    }
}
