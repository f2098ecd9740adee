//! Engine configuration: limits, timeouts and what to produce. One value per engine, read by every worker.

use flowbundle_decode::{DecodeOptions, DefragConfig};
use flowbundle_protocols::{ClassifierConfig, Limits};

use crate::reassembly::ReassemblyConfig;
use crate::sweep::SweepConfig;

/// Idle timeouts, in nanoseconds of *capture time*: a flow whose next packet comes later than this after its
/// previous one ends, and the packet starts a new flow. Measured with the flow's own timestamps, never a wall clock
/// or another flow's packets, so the result is the same whichever worker handles the flow and whenever. Defaults are
/// Suricata's `flow-timeouts` (TCP new 60 s, established 600 s, closed 60 s; UDP and others new 30 s, established
/// 300 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP before the handshake completes (or only one direction seen).
    pub tcp_new_ns: u64,
    pub tcp_established_ns: u64,
    /// TCP after FIN in both directions or a RST.
    pub tcp_closed_ns: u64,
    /// UDP with one direction seen, and established (both directions).
    pub udp_new_ns: u64,
    pub udp_established_ns: u64,
    /// ICMP and every other IP protocol.
    pub other_new_ns: u64,
    pub other_established_ns: u64,
}

const S: u64 = 1_000_000_000;

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            tcp_new_ns: 60 * S,
            tcp_established_ns: 600 * S,
            tcp_closed_ns: 60 * S,
            udp_new_ns: 30 * S,
            udp_established_ns: 300 * S,
            other_new_ns: 30 * S,
            other_established_ns: 300 * S,
        }
    }
}

/// What the engine measures about its own cost (see [`crate::cost`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostConfig {
    /// Keep one [`crate::cost::CostRecord`] per packet in the worker context (32 bytes each), for `--cost-out`.
    pub per_packet_records: bool,
    /// Time the inspection stages (decode, flow lookup, reassembly, detection) of one packet in this many; 0 turns
    /// stage timing off. Default 16: about 8 extra cycle-counter reads on 1 packet in 16.
    pub stage_sample_every: u32,
}

impl Default for CostConfig {
    fn default() -> Self {
        CostConfig {
            per_packet_records: false,
            stage_sample_every: 16,
        }
    }
}

/// Everything an [`Engine`](crate::Engine) is built with besides its signature set and rules.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Decoding. The default decapsulates tunnels (GRE, IP-in-IP, VXLAN, GTP-U), as nDPI and Suricata do: a DPI
    /// engine inspects the inner flows. [`crate::Prestage`] decodes with the same options, so the scheduler's
    /// hashes and the engine's flow keys both describe the inner packet.
    pub decode: DecodeOptions,
    /// Defragmentation before scheduling ([`crate::Prestage`]).
    pub defrag: DefragConfig,
    /// Most flows tracked at once, all workers together (a hard cap: a new flow beyond it evicts an idle flow of its
    /// shard or is not tracked, counted in `flow.memcap`). Default 262,144. One budget, as Suricata's `flow.memcap`:
    /// the table's one count ([`crate::table::FlowTable`]) is shared by every worker. Below it every thread count and
    /// scheduler tracks the flows the single-threaded run tracks; at it, which new flow takes a slot another worker's
    /// flow freed (or finds none) depends on the workers' timing. What a flow costs depends on its
    /// protocol: the flow and its table entry are [`crate::Engine::flow_size`] (about 600 bytes, 160 MB at the
    /// cap), and its parser, open transactions and buffers come on top. Measured with heaptrack (live heap of a run
    /// held open on standard input, 20,000 HTTP connections that each sent three pipelined requests and got the
    /// head of the first response, never ended): 4.4 KB a flow, 3.7 KB once the HTTP parser boxed its inflaters, so a
    /// cap full of such flows holds about 1 GB. Lower the cap to bound memory on hostile traffic.
    pub max_flows: usize,
    /// Under the cap, a flow idle for at least this long (capture time, relative to the new flow's packet) may be
    /// evicted to make room. Default 1 s.
    pub evict_min_idle_ns: u64,
    pub timeouts: Timeouts,
    /// When the loops that drive the engine sweep idle flows out in capture time ([`crate::sweep`]).
    pub sweep: SweepConfig,
    pub reassembly: ReassemblyConfig,
    /// Out-of-order bytes buffered by all TCP connections together. Default 64 MiB.
    pub reassembly_memcap: usize,
    /// The protocol classifier's payload budget and prefix cap.
    pub classifier: ClassifierConfig,
    /// Parser byte caps.
    pub limits: Limits,
    /// Emit application events (EVE `http`, `tls`, `dns`, ...). Off, parsers still run (identification and rules
    /// need them) but their events are dropped at once.
    pub app_events: bool,
    /// Most pending FTP data-connection expectations (oldest replaced beyond it, counted).
    pub max_expectations: usize,
    /// How long an FTP expectation stays valid, in capture time after the reply or command that announced it.
    /// Default 300 s.
    pub expectation_ttl_ns: u64,
    pub cost: CostConfig,
    /// Whether a TCP connection picked up mid-stream (no handshake seen) is tracked as a stream (Suricata's
    /// `stream.midstream`): counted as established for `flow:established`, reassembled and identified, and with it
    /// whatever else the engine sees (one-sided captures, data before the handshake completes). Off, TCP is tracked
    /// as strictly as Suricata does: payload outside a connection started by a handshake (a mid-stream pickup, data
    /// on a SYN without Fast Open, data before the SYN-ACK) stays out of any stream, no parser sees it and the rules
    /// match each such packet's payload on its own. Default on, the engine's behaviour for flow records; Suricata's
    /// own default is off, which the suricata-verify harness sets unless a test asks for `stream.midstream: true`.
    pub midstream: bool,
    /// Seed of the flow ids (a seeded permutation of the position of each flow's first packet in the input).
    pub flow_id_seed: u64,
    /// Seed of the scheduler hashes computed by [`crate::Prestage`] (`Desc::conn`).
    pub hash_seed: u64,
    /// Time every rule evaluation for a rules profile ([`crate::Finished::rules_profile`]); off by default (it slows
    /// matching down).
    pub rules_profile: bool,
    /// IPS mode (Suricata's inline mode, and its `--simulate-ips` on files): an alert of a `drop` or `reject` rule
    /// reports its packet as blocked (EVE `alert.action: blocked`). Drops take effect either way (a dropped flow is
    /// not inspected further, as Suricata's flow action `drop` in IDS mode too); off by default.
    pub ips: bool,
    /// Suricata's `action-order`: in which order the actions of a packet's matching rules apply, so which of them a
    /// `pass` withdraws (see [`flowbundle_rules::ActionOrder`]). Default `pass, drop, reject, alert`.
    pub action_order: flowbundle_rules::ActionOrder,
    /// Suricata's `packet-alert-max`: the most alerts one packet reports (default 15, Suricata's; 0 reads as the
    /// default, as in Suricata). Beyond it the packet keeps the alerts of the rules that come first in Suricata's
    /// rule order (action order, then `priority`, then rule file order); the others are dropped and counted
    /// (`EngineStats::alert_queue_overflow`), while their actions (`drop`, `pass`) still apply.
    pub packet_alert_max: usize,
    /// Log the packets a rule's `tag` covers (Suricata's EVE `types.alert.tagged-packets`): each becomes an
    /// `event_type: packet` event (see `flowbundle_rules::tag`). Off by default, as Suricata's alert output has it
    /// when the option is not given; off, `tag` costs nothing.
    pub tagged_packets: bool,
    /// Which EVE `anomaly` records are written (Suricata's `outputs.eve-log.types: - anomaly: types:`): by default
    /// the application layer's only, as Suricata's; decoder and stream anomalies when the configuration turns them
    /// on.
    pub anomaly: AnomalyTypes,
    /// Detection ports set by configuration (Suricata's `app-layer.protocols.<name>.detection-ports`): a flow on one
    /// of them is probed for its protocol as on the protocol's well-known port, ahead of the protocols whose
    /// registered port it is (see `flowbundle_protocols::Registry::with_detection_ports`). Default none.
    pub detection_ports: Vec<(
        flowbundle_protocols::AppProto,
        flowbundle_types::Transport,
        u16,
    )>,
}

/// The kinds of EVE `anomaly` records written, as Suricata's `anomaly` output names them in its `types:`
/// (`decode`, `stream`, `applayer`). Suricata's default when the output is listed without `types:` is the
/// application layer alone; so is this type's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnomalyTypes {
    /// Decoder anomalies (`"type":"decode"`, one record per event of a packet, with or without a flow).
    pub decode: bool,
    /// TCP tracking and reassembly anomalies (`"type":"stream"`).
    pub stream: bool,
    /// Protocol parsers' anomalies (`"type":"applayer"`), written while application events are kept
    /// ([`EngineConfig::app_events`]).
    pub applayer: bool,
    /// `packethdr`: decoder and stream records carry the packet's first 32 bytes and its link type (`packet`,
    /// `packet_info`); as in Suricata, only while decoder records are written.
    pub packethdr: bool,
}

impl Default for AnomalyTypes {
    fn default() -> Self {
        AnomalyTypes {
            decode: false,
            stream: false,
            applayer: true,
            packethdr: false,
        }
    }
}

impl AnomalyTypes {
    /// No anomaly record at all (the output disabled or not listed).
    pub const NONE: AnomalyTypes = AnomalyTypes {
        decode: false,
        stream: false,
        applayer: false,
        packethdr: false,
    };

    /// Whether decoder and stream records carry the packet's head: `packethdr` with decoder records written
    /// (Suricata ignores `packethdr` otherwise, with a warning).
    pub fn packet_head(self) -> bool {
        self.packethdr && self.decode
    }
}

/// Suricata's default `packet-alert-max`.
pub const DEFAULT_PACKET_ALERT_MAX: usize = 15;

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            decode: DecodeOptions {
                decap_tunnels: true,
                ..DecodeOptions::default()
            },
            defrag: DefragConfig::default(),
            max_flows: 1 << 18,
            evict_min_idle_ns: S,
            timeouts: Timeouts::default(),
            sweep: SweepConfig::default(),
            reassembly: ReassemblyConfig::default(),
            reassembly_memcap: 64 << 20,
            classifier: ClassifierConfig::default(),
            limits: Limits::default(),
            app_events: true,
            max_expectations: 4096,
            expectation_ttl_ns: 300 * S,
            cost: CostConfig::default(),
            midstream: true,
            flow_id_seed: 0x0f10_b00d_1e5e_ed00,
            hash_seed: 0x5eed,
            rules_profile: false,
            ips: false,
            action_order: flowbundle_rules::ActionOrder::default(),
            packet_alert_max: DEFAULT_PACKET_ALERT_MAX,
            tagged_packets: false,
            anomaly: AnomalyTypes::default(),
            detection_ports: Vec::new(),
        }
    }
}

/// The pre-scheduling stage decodes, defragments and hashes as the engine is configured to, so the scheduler's hashes
/// and the engine's flow keys describe the same packet.
impl From<&EngineConfig> for flowbundle_decode::prestage::PrestageOptions {
    fn from(cfg: &EngineConfig) -> Self {
        flowbundle_decode::prestage::PrestageOptions {
            decode: cfg.decode,
            defrag: cfg.defrag,
            seed: cfg.hash_seed,
        }
    }
}
