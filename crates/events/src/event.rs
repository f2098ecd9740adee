//! What the engine reports: flow records, application events and alerts, each tagged so that the output of any
//! number of workers sorts into one deterministic order.
//!
//! Every event carries its flow's id and a per-flow sequence number. A flow's packets are inspected in order by one
//! worker at a time, so the events of one flow, and their numbering, are the same whichever worker produced them;
//! sorting by `(ts_ns, flow_id, seq)` ([`Event::sort_key`]) therefore gives the same list for any thread count and
//! scheduler. The sinks crate writes these as Suricata EVE JSON.

use std::sync::Arc;

use flowbundle_decode::{FlowKey, KeySide};
use flowbundle_protocols::AppEvent;
pub use flowbundle_protocols::application::ApplicationEvidence;
pub use flowbundle_protocols::ftp::FtpEvent;
use flowbundle_types::{AppLayerEvent, AppProto, DecodeEvent, RiskSet, StreamEvent};

/// A flow's application label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AppLabel {
    /// Nothing identified it.
    Unknown,
    /// A built-in protocol (nDPI's name).
    Proto(AppProto),
    /// An L7-filter signature with no built-in counterpart: its name as in the `.pat` file.
    Signature(Arc<str>),
    /// A flow of a protocol without ports, named after its IP protocol as nDPI names it (`ICMP`, `ICMPV6`, `IGMP`,
    /// `GRE`, ...).
    Ip(&'static str),
}

impl AppLabel {
    /// The name as nDPI (or the signature file) spells it: `HTTP`, `TLS`, `ICMP`, `Unknown`, ...
    pub fn name(&self) -> &str {
        match self {
            AppLabel::Unknown => "Unknown",
            AppLabel::Proto(p) => p.name(),
            AppLabel::Signature(s) => s,
            AppLabel::Ip(s) => s,
        }
    }

    /// The EVE `app_proto` value, as Suricata would write it: Suricata's lowercase name where Suricata parses the
    /// protocol; `failed` when nothing identified the flow, and for protocols and L7-filter signatures Suricata
    /// has no parser for (its own detection fails there); the IP protocol's name for flows without ports. The
    /// engine's finer name is [`AppLabel::name`].
    pub fn eve_name(&self) -> &str {
        match self {
            AppLabel::Unknown | AppLabel::Signature(_) => "failed",
            AppLabel::Proto(p) => p.eve_name(),
            AppLabel::Ip(s) => s,
        }
    }

    pub fn is_known(&self) -> bool {
        !matches!(self, AppLabel::Unknown)
    }
}

/// How a flow's label was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// A built-in detector recognised the payload.
    Parser,
    /// An L7-filter signature matched.
    Signature,
    /// The payload gave nothing; a well-known port did.
    Port,
    /// An FTP control connection announced this data connection.
    Expectation,
    /// No ports: the IP protocol names the flow.
    IpProtocol,
}

impl Evidence {
    pub fn name(self) -> &'static str {
        match self {
            Evidence::Parser => "parser",
            Evidence::Signature => "signature",
            Evidence::Port => "port",
            Evidence::Expectation => "expectation",
            Evidence::IpProtocol => "ip_protocol",
        }
    }
}

/// Suricata's flow states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowState {
    /// One direction only, or a TCP handshake not completed.
    New,
    Established,
    /// TCP closed by FIN in both directions or a RST.
    Closed,
}

impl FlowState {
    pub fn name(self) -> &'static str {
        match self {
            FlowState::New => "new",
            FlowState::Established => "established",
            FlowState::Closed => "closed",
        }
    }
}

/// TCP connection states, named as Suricata's EVE `tcp.state` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TcpState {
    /// Picked up without a handshake and nothing seen that says more.
    None,
    SynSent,
    SynRecv,
    Established,
    /// The client sent FIN first.
    FinWait1,
    /// The server sent FIN first.
    CloseWait,
    /// FIN in both directions, or RST.
    Closed,
}

impl TcpState {
    pub fn name(self) -> &'static str {
        match self {
            TcpState::None => "none",
            TcpState::SynSent => "syn_sent",
            TcpState::SynRecv => "syn_recv",
            TcpState::Established => "established",
            TcpState::FinWait1 => "fin_wait1",
            TcpState::CloseWait => "close_wait",
            TcpState::Closed => "closed",
        }
    }
}

/// Why a flow record was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EndReason {
    /// Idle for longer than its timeout (capture time).
    Timeout,
    /// Still open at the end of the input.
    Shutdown,
    /// Evicted to make room under the flow cap.
    Forced,
    /// A new SYN reused the 5-tuple of a closed TCP connection.
    TcpReuse,
}

impl EndReason {
    pub fn name(self) -> &'static str {
        match self {
            EndReason::Timeout => "timeout",
            EndReason::Shutdown => "shutdown",
            EndReason::Forced => "forced",
            EndReason::TcpReuse => "tcp_reuse",
        }
    }
}

/// A rule's verdict on a whole flow (EVE `flow.action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowAction {
    /// A `drop` or `reject` rule matched with flow scope: the rest of the flow is dropped, not inspected.
    Drop,
    /// A `pass` rule matched with flow scope: the rest of the flow is not inspected.
    Pass,
}

impl FlowAction {
    pub fn name(self) -> &'static str {
        match self {
            FlowAction::Drop => "drop",
            FlowAction::Pass => "pass",
        }
    }
}

/// TCP facts of a flow record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpSummary {
    /// TCP flag bits seen (OR of all packets): both directions, to server, to client.
    pub flags: u8,
    pub flags_ts: u8,
    pub flags_tc: u8,
    pub state: TcpState,
    /// Holes given up by reassembly in this connection.
    pub gaps: u32,
}

/// A flow's record, written when the flow ends (EVE `event_type: flow`).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowRecord {
    pub app: AppLabel,
    /// The service behind the flow (nDPI's `APP` in `MASTER.APP`: `Google`, `NetFlix`, ...), named from its content,
    /// a host name it carried, its TLS certificate, or at the weakest the owner of the server's address; see
    /// [`flowbundle_protocols::application`].
    pub application: Option<&'static str>,
    /// What named the application (`None` when nothing did).
    pub application_evidence: Option<ApplicationEvidence>,
    /// How the label was decided (`None` when nothing did).
    pub evidence: Option<Evidence>,
    /// The flow's risks, as nDPI names them (see [`flowbundle_protocols::risk`]).
    pub risks: RiskSet,
    /// 1-based position, among the flow's packets, of the packet at which the label was decided.
    pub decided_at: Option<u32>,
    /// Packets and bytes (on the wire; a reassembled IP datagram counts once, with its length) to server, to client.
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub state: FlowState,
    pub reason: EndReason,
    pub alerted: bool,
    /// What a `drop` or `pass` rule decided for the whole flow (EVE `flow.action`), if one did.
    pub action: Option<FlowAction>,
    pub tcp: Option<TcpSummary>,
    /// ICMP flows: the ICMP type and code of the first message to the server and of the first to the client (EVE
    /// `icmp_type`, `icmp_code`, `response_icmp_type`, `response_icmp_code`).
    pub icmp_toserver: Option<(u8, u8)>,
    pub icmp_toclient: Option<(u8, u8)>,
    /// The flow's variables as its end left them (its flowbits, integers, variables and measured entropy: the
    /// top-level `metadata` and `traffic` Suricata writes on a flow record); `None` when it has none.
    pub vars: Option<Box<crate::AlertVars>>,
}

/// An alert (EVE `event_type: alert`).
#[derive(Debug, Clone, PartialEq)]
pub struct AlertEvent {
    pub signature_id: u32,
    pub gid: u32,
    pub rev: u32,
    /// The rule's `msg` and category, shared with the rule set (no copy per alert).
    pub signature: Arc<str>,
    pub category: Arc<str>,
    pub severity: u8,
    /// Index of the rule in the loaded rule set (for hit counters).
    pub rule_index: u32,
    /// The rule's `metadata` entries (EVE `alert.metadata`), shared with the rule set.
    pub metadata: Arc<[(String, String)]>,
    /// ICMP type and code of the packet that matched, on ICMP flows (EVE `icmp_type`, `icmp_code`).
    pub icmp: Option<(u8, u8)>,
    /// The flow's label when the alert fired, if it had one.
    pub app: Option<AppLabel>,
    /// Where the match was: `stream`, `packet` or `http`, and the match's offset in that buffer.
    pub source: &'static str,
    pub offset: u64,
    /// The rule's `target` (EVE `alert.source` and `alert.target`).
    pub target: Option<flowbundle_rules::AlertTarget>,
    /// In IPS mode, the rule drops or rejects what it matched (EVE `alert.action: blocked`, else `allowed`).
    pub blocked: bool,
    /// The flow's counters and start when the alert fired (EVE `alert.flow`).
    pub pkts_toserver: u64,
    pub pkts_toclient: u64,
    pub bytes_toserver: u64,
    pub bytes_toclient: u64,
    pub flow_start_ns: u64,
    /// The application-layer transaction the alert is about, as it stood when the rule matched: EVE writes it
    /// beside the alert under its event type (`dns`, `http`, `tls`, `ftp`, `sip`, `smtp` with its `email`, ...), as
    /// Suricata writes an alert's transaction. `None` for a match on the payload or the stream, and on a buffer no
    /// logged transaction carries. Built when an alert fires, never for a packet that raises none.
    pub tx: Option<Box<AppEvent>>,
    /// The application-layer transaction the rule matched in (EVE's top-level `tx_id`, as Suricata writes it for an
    /// alert of a rule that inspected a transaction's buffer); `None` for a match on the payload or the stream.
    pub tx_id: Option<u64>,
    /// The variables the record writes: the match's own captures (`alert.context`), and Suricata's top-level
    /// `metadata` (the flow's flowbits, integers and variables and the packet's variables as they stand once every
    /// rule has run on the packet, the same for every alert of the packet); `None` when there is none.
    pub vars: Option<Box<crate::AlertVars>>,
    /// The buffer values the rule's dataset operations on written sets saw, for the alert filter to apply in input
    /// order ([`flowbundle_rules::dataset`]); `None` for other rules. Never written out.
    pub dataset_values: Option<flowbundle_rules::dataset::Captured>,
}

/// An application event as EVE writes it (`http`, `dns`, `fileinfo`, ...): the parser's event, and the flow's and
/// the packet's variables as the packet that logged it left them (the top-level `metadata` and `traffic` Suricata
/// writes on every record of a flow that has some: its loggers read them once the packet's detection is done). It
/// reads as its [`AppEvent`] (`Deref`).
#[derive(Debug, Clone, PartialEq)]
pub struct AppRecord {
    pub event: AppEvent,
    /// `None` when the flow and the packet have none (or no rules are loaded).
    pub vars: Option<Box<crate::AlertVars>>,
}

impl From<AppEvent> for AppRecord {
    fn from(event: AppEvent) -> Self {
        AppRecord { event, vars: None }
    }
}

impl std::ops::Deref for AppRecord {
    type Target = AppEvent;
    fn deref(&self) -> &AppEvent {
        &self.event
    }
}

/// What an [`Event`] is.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    Flow(Box<FlowRecord>),
    /// An application event from a protocol parser, with the flow's variables when it was logged.
    App(Box<AppRecord>),
    Alert(Box<AlertEvent>),
    /// An anomaly as Suricata's EVE `anomaly` output reports it.
    Anomaly(Box<Anomaly>),
    /// A packet a rule's `tag` covers (EVE `packet`), written when tagged packets are logged (Suricata's
    /// `types.alert.tagged-packets`).
    Packet(Box<TaggedPacket>),
}

/// A packet that follows an alert of a rule with `tag` (see `flowbundle_rules::tag`): EVE writes it whole, as
/// captured, in an `event_type: packet` record. Its flow's session tags are decided where the flow is inspected;
/// host tags cross flows, so while a rule set has host tags the engine reports every IP packet as a candidate
/// (`session` false when only a host tag could cover it) and the host tags are decided where events meet in input
/// order (`flowbundle_inspect`'s alert filter), which drops the candidates no tag covers before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaggedPacket {
    /// The packet as captured, from its link-layer header (a reassembled IP datagram: from its IP header).
    pub data: Box<[u8]>,
    /// The link type `data` starts with (pcap's numbers: 1 Ethernet, 101 raw IP, ...).
    pub linktype: u32,
    /// Its length on the wire (what a `bytes` tag counts).
    pub wire_len: u32,
    /// Its flow's session tags cover it.
    pub session: bool,
}

/// The first bytes of a packet as an `anomaly` record carries them when the anomaly output's `packethdr` is on
/// (Suricata writes up to 32 bytes of the packet as captured, with its link type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketHead {
    /// The link type the bytes start with (pcap's numbers: 1 Ethernet, 101 raw IP, ...).
    pub linktype: u32,
    len: u8,
    bytes: [u8; PacketHead::MAX],
}

impl PacketHead {
    /// The most bytes kept, as Suricata's anomaly logger keeps them.
    pub const MAX: usize = 32;

    /// The first [`PacketHead::MAX`] bytes of `data` (all of it when shorter), of link type `linktype`.
    pub fn new(linktype: u32, data: &[u8]) -> PacketHead {
        let n = data.len().min(Self::MAX);
        let mut bytes = [0u8; Self::MAX];
        bytes[..n].copy_from_slice(&data[..n]);
        PacketHead {
            linktype,
            len: n as u8,
            bytes,
        }
    }

    /// The bytes kept.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// What an EVE `anomaly` record reports. Suricata writes three kinds (`decode`, `stream`, `applayer`), each enabled
/// by the `anomaly` output's `types` (by default `applayer` only); the engine writes all three, each when its kind
/// is enabled (`flowbundle_inspect::EngineConfig::anomaly`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anomaly {
    /// A protocol parser found `event` wrong in transaction `tx_id` (Suricata's `type: applayer`,
    /// `layer: proto_parser`).
    AppLayer { event: AppLayerEvent, tx_id: u64 },
    /// The decoder (or the defragmenter) found `event` wrong in the packet's headers (Suricata's `type: decode`,
    /// `event: decoder.NAME`), one record per event of the packet; `packet`: its first bytes when the output's
    /// `packethdr` is on.
    Decode {
        event: DecodeEvent,
        packet: Option<PacketHead>,
    },
    /// TCP tracking or reassembly found `event` wrong in the packet (Suricata's `type: stream`,
    /// `event: stream.NAME`), one record per event of the packet; `packet` as for [`Anomaly::Decode`].
    Stream {
        event: StreamEvent,
        packet: Option<PacketHead>,
    },
}

impl EventKind {
    /// EVE `event_type`.
    pub fn event_type(&self) -> &'static str {
        match self {
            EventKind::Flow(_) => "flow",
            EventKind::App(a) => a.event_type(),
            EventKind::Alert(_) => "alert",
            EventKind::Anomaly(_) => "anomaly",
            EventKind::Packet(_) => "packet",
        }
    }
}

/// One event of one flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Capture time: of the packet that caused it, or the flow's last packet for flow records.
    pub ts_ns: u64,
    /// The flow's id (EVE `flow_id`): a permutation of the input position of the flow's first packet, so no two
    /// flows of a run share one, at most 2^52 so JSON readers keep it exact; [`NO_FLOW`] for an event of a packet no
    /// flow tracks (an alert on a fragment, a packet whose transport header did not decode).
    pub flow_id: u64,
    /// 1-based position in the input of the packet that caused it (EVE `pcap_cnt`); `None` for what no single packet
    /// caused (flow records, events of the end-of-flow flush).
    pub pcap_cnt: Option<u64>,
    /// Position among the flow's events.
    pub seq: u32,
    pub key: FlowKey,
    /// KeySide (relative to the key) of the client's packets.
    pub client: KeySide,
    /// KeySide of the data or packet the event is about (the client's for flow records and most app events).
    pub dir: KeySide,
    pub kind: EventKind,
}

/// The [`Event::flow_id`] of an event about a packet no flow tracks: no flow's id is 0, and EVE writes no
/// `flow_id` (nor an alert's `flow` object) for it, as Suricata does for packets without a flow.
pub const NO_FLOW: u64 = 0;

impl Event {
    /// Whether the event belongs to a flow (see [`NO_FLOW`]).
    pub fn has_flow(&self) -> bool {
        self.flow_id != NO_FLOW
    }

    /// The order events are written and compared in.
    pub fn sort_key(&self) -> (u64, u64, u32) {
        (self.ts_ns, self.flow_id, self.seq)
    }

    /// True when the event is about data going from client to server.
    pub fn to_server(&self) -> bool {
        self.dir == self.client
    }
}

/// Sorts events into their deterministic order.
pub fn sort_events(events: &mut [Event]) {
    events.sort_by_key(Event::sort_key);
}
