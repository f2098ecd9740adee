//! The engine's counters: what a worker counted, summed over the workers at the end of a run, and what the summary
//! and the EVE `stats` record report. Each sub-block comes from the stage that counts it: decode outcomes and layers
//! from the decoder, parser cuts from the protocols crate, rule scanning from the rules crate, reassembly and flows
//! from the engine.

use std::collections::BTreeMap;

use flowbundle_decode::{DecodeStats, LayerCounts};
use flowbundle_protocols::ParserStats;
use flowbundle_rules::ScanStats;

/// Flows, packets and bytes of one application protocol (the summary's protocol table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProtoCount {
    pub flows: u64,
    pub packets: u64,
    pub bytes: u64,
}

/// Counters of one worker, or of a whole run after the engine's `finish`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineStats {
    /// Packets inspected (a reassembled IP datagram counts once) and their bytes on the wire.
    pub packets: u64,
    pub bytes: u64,
    /// Decode outcomes of every inspected packet.
    pub decode: DecodeStats,
    /// Decoded packets that belong to no flow (not IP).
    pub not_ip: u64,
    /// IP fragments that reached the engine (defragmentation runs before scheduling; these were not reassembled).
    pub fragments_unreassembled: u64,
    pub flows_created: u64,
    /// Flows created, by the layers of their first packet (Suricata's `flow.tcp`, `flow.udp`, ...).
    pub flows_by_layer: LayerCounts,
    /// Flows ended, by reason.
    pub flows_timeout: u64,
    pub flows_shutdown: u64,
    pub flows_forced: u64,
    pub flows_tcp_reuse: u64,
    /// Idle-flow sweeps run (the engine's `expire_all`; the flows they end count as `flows_timeout`).
    pub flow_sweeps: u64,
    /// New flows that could not be tracked because the table was full and nothing idle could be evicted
    /// (Suricata's `flow.memcap`), and the packets inspected without a flow because of it.
    pub flow_memcap: u64,
    pub untracked_packets: u64,
    /// TCP connections picked up without a SYN.
    pub tcp_midstream: u64,
    pub reassembly: ReassemblyStats,
    pub parsers: ParserStats,
    /// Application events produced (written or not), and alerts.
    pub app_events: u64,
    pub alerts: u64,
    /// Alerts a packet raised beyond the per-packet limit (Suricata's `packet-alert-max`), withdrawn (Suricata's
    /// `detect.alert_queue_overflow`).
    pub alert_queue_overflow: u64,
    pub rules: ScanStats,
    /// Flows per label, and how they were labelled.
    pub protocols: BTreeMap<String, ProtoCount>,
    /// Flows ended, per Suricata `app_layer.flow` counter name (the flow's EVE `app_proto`, split by transport
    /// where Suricata splits it: `dns_udp`, `dns_tcp`, ...; `failed_tcp` and `failed_udp` for flows nothing
    /// identified, protocols Suricata has no parser for, signature names and port guesses, as in EVE). The
    /// engine's own names are in [`EngineStats::protocols`].
    pub app_layer_flows: BTreeMap<&'static str, u64>,
    pub by_evidence: BTreeMap<&'static str, u64>,
    /// Flows per risk (nDPI's risk names).
    pub risks: BTreeMap<&'static str, u64>,
}

impl EngineStats {
    /// Adds another worker's counters.
    pub fn merge(&mut self, o: &EngineStats) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.decode.merge(&o.decode);
        self.not_ip += o.not_ip;
        self.fragments_unreassembled += o.fragments_unreassembled;
        self.flows_created += o.flows_created;
        self.flows_by_layer.merge(&o.flows_by_layer);
        self.flows_timeout += o.flows_timeout;
        self.flows_shutdown += o.flows_shutdown;
        self.flows_forced += o.flows_forced;
        self.flows_tcp_reuse += o.flows_tcp_reuse;
        self.flow_sweeps += o.flow_sweeps;
        self.flow_memcap += o.flow_memcap;
        self.untracked_packets += o.untracked_packets;
        self.tcp_midstream += o.tcp_midstream;
        self.reassembly += o.reassembly;
        self.parsers += o.parsers;
        self.app_events += o.app_events;
        self.alerts += o.alerts;
        self.alert_queue_overflow += o.alert_queue_overflow;
        self.rules += o.rules;
        for (k, v) in &o.protocols {
            let e = self.protocols.entry(k.clone()).or_default();
            e.flows += v.flows;
            e.packets += v.packets;
            e.bytes += v.bytes;
        }
        for (k, v) in &o.by_evidence {
            *self.by_evidence.entry(k).or_default() += v;
        }
        for (k, v) in &o.app_layer_flows {
            *self.app_layer_flows.entry(k).or_default() += v;
        }
        for (k, v) in &o.risks {
            *self.risks.entry(k).or_default() += v;
        }
    }

    /// Flows ended for any reason.
    pub fn flows_ended(&self) -> u64 {
        self.flows_timeout + self.flows_shutdown + self.flows_forced + self.flows_tcp_reuse
    }
}

/// Counters of one worker's reassembly (add them up with `+=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReassemblyStats {
    /// Segments handed to a reassembler (pure ACKs are not).
    pub segments: u64,
    /// Payload bytes delivered in order.
    pub bytes_delivered: u64,
    /// Segments that arrived ahead of a hole and were buffered.
    pub segments_buffered: u64,
    /// Payload bytes already delivered that came again (retransmissions, overlaps with delivered data).
    pub retransmitted_bytes: u64,
    /// Bytes of a buffered segment that overlapped bytes already buffered (the earlier copy was kept).
    pub overlap_bytes: u64,
    /// Overlaps whose bytes differed from the copy kept.
    pub overlap_differs: u64,
    /// Holes given up (EVE stats `tcp.reassembly_gap`), and the bytes they skipped.
    pub gaps: u64,
    pub gap_bytes: u64,
    /// Holes given up because a per-direction limit was passed.
    pub limit_skips: u64,
    /// Segments delivered unbuffered because the global memcap was reached.
    pub memcap_skips: u64,
    /// Holes given up because their data waited longer than the timeout.
    pub timeout_skips: u64,
    /// Segments ignored because their direction (or the connection) was already closed by FIN or RST.
    pub after_close: u64,
    /// Segments whose payload lay before the start of the stream (before the SYN), ignored.
    pub before_start: u64,
}

impl std::ops::AddAssign for ReassemblyStats {
    fn add_assign(&mut self, o: Self) {
        self.segments += o.segments;
        self.bytes_delivered += o.bytes_delivered;
        self.segments_buffered += o.segments_buffered;
        self.retransmitted_bytes += o.retransmitted_bytes;
        self.overlap_bytes += o.overlap_bytes;
        self.overlap_differs += o.overlap_differs;
        self.gaps += o.gaps;
        self.gap_bytes += o.gap_bytes;
        self.limit_skips += o.limit_skips;
        self.memcap_skips += o.memcap_skips;
        self.timeout_skips += o.timeout_skips;
        self.after_close += o.after_close;
        self.before_start += o.before_start;
    }
}

/// What an inline run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InlineReport {
    /// Packets sent on after inspection.
    pub forwarded: u64,
    /// Packets of dropped flows (not sent on).
    pub dropped: u64,
    /// Packets forwarded uninspected because every packet buffer was in use (fail-open).
    pub fail_open: u64,
    /// Packets the egress interface refused (e.g. larger than its MTU).
    pub send_errors: u64,
    /// Frames cut by the snaplen, inspected but not sent on (inline captures whole frames: none expected).
    pub not_forwardable: u64,
    /// IP fragments sent on ahead of their datagram's inspection (every fragment but the one completing it).
    pub fragments: u64,
    /// Receive-to-send latency of the forwarded packets: samples, p50, p99, max (ns).
    pub latency_samples: u64,
    pub latency_p50_ns: u64,
    pub latency_p99_ns: u64,
    pub latency_max_ns: u64,
}
