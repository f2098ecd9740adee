//! # Application identification and everything that reads payload
//!
//! Per flow, [`AppState`] holds the protocol classifier and parser ([`FlowApp`]), the L7-filter signature state, the
//! content-rule matcher state and the flow's label. The engine feeds it in-order data as it leaves TCP reassembly
//! (through [`StreamCx`], a [`StreamSink`]) and UDP datagrams whole ([`on_datagram`]); the parser's events and HTTP
//! buffers come back through [`Emit`], which turns them into engine [`Event`]s, runs the rules on the HTTP buffers,
//! and registers FTP data-connection expectations.
//!
//! ## How the label is decided
//! 1. **Built-in detectors first**: the classifier's verdict, as soon as a detector is certain.
//! 2. **L7-filter signatures second** (when a signature set is loaded): fed every packet of the connection in arrival
//!    order, both directions (in-order stream bytes for TCP, empty packets included, as l7-filter counts them); a
//!    match labels the flow only once every detector has given up. A signature naming a built-in protocol hands the
//!    flow to that protocol's parser.
//! 3. **Port guess last**, when the flow ends unidentified, unless its payload refuted it (every detector of the
//!    port's protocol rejected the payload): then the flow stays unknown rather than being confidently mislabelled.
//!
//! FTP data connections are labelled `FTP_DATA` whenever an FTP control connection announced them (see
//! [`crate::expect`]); that label wins over the others because the payload of a data connection is whatever file was
//! transferred. Flows without ports are named after their IP protocol (`ICMP`, `IGMP`, ...), as nDPI does. The
//! packet at which the label was decided (its 1-based position in the flow) is kept for the flow record.

use std::net::IpAddr;

use flowbundle_decode::{Decoded, FlowKey, KeySide, L4};
use flowbundle_protocols::application::{
    ApplicationEvidence, application_for_certificate, application_for_host, ip_owner,
};
use flowbundle_protocols::ftp::FtpEvent;
use flowbundle_protocols::ftp::data::FtpDataFile;
use flowbundle_protocols::risk::{FlowRisk, RiskSet, event_risks, executable_magic};
use flowbundle_protocols::{AppEvent, AppProto, EventSink, FlowApp, Identified, Verdict};
use flowbundle_rules::dataset::Captured;
use flowbundle_rules::{
    Alert, AlertSource, Checksums, FlowMatchState, IcmpHeader, PacketCtx, PacketHeader, RawHeaders,
    Scanner, TcpHeader,
};
use flowbundle_signatures::{ConnState, Verdict as SigVerdict};
use flowbundle_types::{AppLayerEvents, Direction, HttpBuffer, Transport};

use crate::detect::{Announced, Detection, Produced};
use crate::event::{AlertEvent, Anomaly, AppLabel, Event, EventKind, Evidence};
use crate::reassembly::StreamSink;
use crate::staged::{BufferKind, Call, Data, Script};

/// A flow's application-layer state.
pub(crate) struct AppState {
    /// Classifier then parser (TCP and UDP flows).
    pub fa: Option<FlowApp>,
    /// L7-filter state while signatures may still decide.
    pub sig: Option<ConnState>,
    pub rules: FlowMatchState,
    pub label: AppLabel,
    /// The application beside the master protocol (nDPI's `APP` in `MASTER.APP`) and what named it, see
    /// [`Application`].
    pub application: Application,
    /// The risks the flow's application events showed (see [`flowbundle_protocols::risk`]).
    pub risks: RiskSet,
    pub evidence: Option<Evidence>,
    pub decided_at: Option<u32>,
    /// Identification reached its final answer (a label, or nothing more to try before the flow ends).
    pub done: bool,
    /// The detection epoch whose signatures and rules the matcher states (`sig`, `rules`) belong to (see the
    /// engine's "Reloading"), truncated.
    epoch: u32,
    /// The file the flow carries if it is an FTP data connection (see [`FtpDataCandidate`]).
    pub ftp_file: FtpDataCandidate,
}

/// A TCP flow's bytes, kept in case the flow is an FTP data connection, whose file is inspected when it ends.
///
/// Whether a flow is one is known for certain only at its end (see [`crate::expect`]: in a parallel run the
/// announcement may reach the table after the data connection's first packet), so what is kept must not depend
/// on that answer: every TCP flow keeps its first bytes ([`flowbundle_protocols::Limits::ftp_data_file_cap`])
/// until a detector recognises a protocol in its payload, which depends on the flow's own bytes alone. At its end
/// a flow labelled `FTP_DATA` hands its file over; any other flow drops it. The cost is a copy of each
/// unidentified flow's first bytes; a flow with no payload allocates nothing.
#[derive(Debug)]
pub(crate) struct FtpDataCandidate {
    /// Still a candidate: TCP, and no detector recognised a protocol yet.
    open: bool,
    file: Option<Box<FtpDataFile>>,
}

impl FtpDataCandidate {
    fn new(tcp: bool) -> Self {
        FtpDataCandidate {
            open: tcp,
            file: None,
        }
    }

    /// In-order bytes in direction `dir`, after the classifier `fa` saw them.
    fn data(
        &mut self,
        fa: Option<&FlowApp>,
        limits: &flowbundle_protocols::Limits,
        dir: Direction,
        bytes: &[u8],
    ) {
        if !self.open || bytes.is_empty() {
            return;
        }
        if fa.is_some_and(|fa| matches!(fa.verdict(), Verdict::Matched(_))) {
            self.open = false;
            self.file = None;
            return;
        }
        self.file
            .get_or_insert_with(|| Box::new(FtpDataFile::new(limits)))
            .data(dir, bytes);
    }

    fn gap(&mut self, dir: Direction, len: u64) {
        if let Some(f) = self.file.as_deref_mut().filter(|_| self.open) {
            f.gap(dir, len);
        }
    }

    /// The flow ends: what it kept, if it is still a candidate.
    pub(crate) fn take(&mut self) -> Option<Box<FtpDataFile>> {
        let open = std::mem::replace(&mut self.open, false);
        self.file.take().filter(|_| open)
    }
}

impl AppState {
    pub(crate) fn new(
        eng: &Detection,
        epoch: u64,
        key: &FlowKey,
        client: KeySide,
        transport: Transport,
    ) -> Self {
        let (client_port, server_port) = match client {
            KeySide::Forward => (key.lo_port, key.hi_port),
            KeySide::Reverse => (key.hi_port, key.lo_port),
        };
        let (fa, label, evidence, done) = match transport {
            Transport::Tcp => (
                Some(FlowApp::new(
                    eng.registry(),
                    Transport::Tcp,
                    client_port,
                    server_port,
                )),
                AppLabel::Unknown,
                None,
                false,
            ),
            Transport::Udp => (
                Some(FlowApp::new(
                    eng.registry(),
                    Transport::Udp,
                    client_port,
                    server_port,
                )),
                AppLabel::Unknown,
                None,
                false,
            ),
            Transport::Icmp | Transport::Other(_) => match ip_protocol_name(key.proto, key.v6) {
                Some(n) => (None, AppLabel::Ip(n), Some(Evidence::IpProtocol), true),
                None => (None, AppLabel::Unknown, None, true),
            },
        };
        let sig = match (transport, eng.signatures()) {
            (Transport::Tcp | Transport::Udp, Some(set)) => Some(set.new_state()),
            _ => None,
        };
        AppState {
            fa,
            sig,
            rules: FlowMatchState::default(),
            label,
            application: Application::default(),
            risks: RiskSet::EMPTY,
            evidence,
            decided_at: (!matches!(transport, Transport::Tcp | Transport::Udp)
                && evidence.is_some())
            .then_some(1),
            done,
            epoch: epoch as u32,
            ftp_file: FtpDataCandidate::new(transport == Transport::Tcp),
        }
    }

    /// Before inspecting with the detection context of `epoch`: when the flow's matcher states belong to another
    /// (a reload replaced the sets), restarts them: the rules' state afresh from the flow's next data (a dropped flow
    /// stays dropped) and, when the signature set changed too, no more L7-filter matching (signatures match a
    /// connection's first bytes, and the old state means nothing to the new set).
    #[inline]
    pub(crate) fn adopt(&mut self, eng: &Detection, epoch: u64) {
        if self.epoch == epoch as u32 {
            return;
        }
        let dropped = self.rules.dropped();
        self.rules = FlowMatchState::default();
        if dropped {
            self.rules.set_dropped();
        }
        if eng.sig_epoch as u32 > self.epoch {
            self.sig = None;
        }
        self.epoch = epoch as u32;
    }

    /// Labels the flow `FTP_DATA` (an expectation matched) at packet `position`.
    pub(crate) fn set_ftp_data(&mut self, position: u32) {
        if self.label != AppLabel::Proto(AppProto::FtpData) {
            self.label = AppLabel::Proto(AppProto::FtpData);
            self.evidence = Some(Evidence::Expectation);
            self.decided_at = Some(position);
            self.done = true;
        }
    }

    /// Re-reads the classifier and signature verdicts after a packet at `position`. True when identification
    /// became final now.
    pub(crate) fn settle(&mut self, eng: &Detection, position: u32) -> bool {
        if self.done {
            return false;
        }
        let Some(fa) = self.fa.as_mut() else {
            self.done = true;
            return true;
        };
        match fa.verdict() {
            Verdict::Matched(Identified { proto, .. }) => {
                self.label = AppLabel::Proto(proto);
                self.evidence = Some(Evidence::Parser);
                self.decided_at = Some(position);
                self.done = true;
                self.sig = None;
                true
            }
            Verdict::Pending => false,
            Verdict::NoMatch => match self.sig.map(|s| s.verdict()) {
                None | Some(SigVerdict::NoMatch) => {
                    self.done = true;
                    true
                }
                Some(SigVerdict::Pending) => false,
                Some(SigVerdict::Matched(id)) => {
                    self.apply_signature(eng, id, position);
                    true
                }
            },
        }
    }

    fn apply_signature(
        &mut self,
        eng: &Detection,
        id: flowbundle_signatures::SigId,
        position: u32,
    ) {
        let (label, proto) = eng.signature_label(id);
        if let (Some(p), Some(fa)) = (proto, self.fa.as_mut()) {
            fa.set_identified(eng.registry(), p, flowbundle_protocols::Evidence::Signature);
        }
        self.label = label;
        self.evidence = Some(Evidence::Signature);
        self.decided_at = Some(position);
        self.done = true;
        self.sig = None;
    }

    /// The flow ended: whatever is still pending is decided now (signature match, else port guess), at `position`.
    pub(crate) fn conclude(
        &mut self,
        eng: &Detection,
        transport: Transport,
        client_port: u16,
        server_port: u16,
        position: u32,
    ) {
        if !self.label.is_known()
            && let Some(SigVerdict::Matched(id)) = self.sig.map(|s| s.verdict())
        {
            self.apply_signature(eng, id, position);
        }
        if !self.label.is_known() {
            let t = match transport {
                Transport::Tcp | Transport::Udp => Some(transport),
                Transport::Icmp | Transport::Other(_) => None,
            };
            // A guess the flow's own payload refuted (the port's detector rejected it) is no evidence.
            let guess = match (t, self.fa.as_ref()) {
                (Some(_), Some(fa)) => eng.registry().port_guess_unrefuted(fa.classifier()),
                (Some(t), None) => eng.registry().port_guess(t, client_port, server_port),
                (None, _) => None,
            };
            if let Some(p) = guess {
                self.label = AppLabel::Proto(p);
                self.evidence = Some(Evidence::Port);
                self.decided_at = Some(position);
            }
        }
        self.done = true;
        self.sig = None;
    }
}

/// A flow's risks when it ends: what its application events showed, plus what needs the whole flow: packets in one
/// direction only towards a unicast server (announcements to multicast and broadcast addresses are one-way by
/// design), a protocol unsafe by design ([`AppProto::is_insecure`]) named from evidence other than a port, and a
/// protocol recognised from its payload off its default ports
/// ([`flowbundle_protocols::Registry::off_default_ports`]; Gnutella excepted: its servents listen on whatever port
/// they pick, 6346 is only a default, and nDPI does not flag it either).
pub(crate) fn flow_risks(
    app: &AppState,
    eng: &Detection,
    meta: (Transport, IpAddr),
    ports: (u16, u16),
    pkts: [u64; 2],
) -> RiskSet {
    let (transport, server) = meta;
    let mut r = app.risks;
    if (pkts[0] == 0) != (pkts[1] == 0) && !group_address(server) {
        r.insert(FlowRisk::UnidirectionalTraffic);
    }
    if let AppLabel::Proto(p) = app.label {
        if p.is_insecure() && app.evidence.is_some_and(|e| e != Evidence::Port) {
            r.insert(FlowRisk::UnsafeProtocol);
        }
        if app.evidence == Some(Evidence::Parser)
            && p != AppProto::Gnutella
            && matches!(transport, Transport::Tcp | Transport::Udp)
            && eng
                .registry()
                .off_default_ports(p, transport, ports.0, ports.1)
        {
            r.insert(FlowRisk::KnownProtocolOnNonStandardPort);
        }
    }
    r
}

/// Whether `ip` addresses a group rather than one host: multicast, the limited broadcast, or (IPv4) an address
/// ending in `.255`, the directed broadcast of the /24 and wider networks LANs use.
fn group_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_multicast() || v4.is_broadcast() || v4.octets()[3] == 255,
        IpAddr::V6(v6) => v6.is_multicast(),
    }
}

/// nDPI's names for flows of protocols without ports.
pub fn ip_protocol_name(proto: u8, v6: bool) -> Option<&'static str> {
    Some(match proto {
        1 => "ICMP",
        2 => "IGMP",
        4 => "IP_in_IP",
        47 => "GRE",
        50 | 51 => "IPSec",
        58 => "ICMPV6",
        89 => "OSPF",
        103 => "IP_PIM",
        112 => "VRRP",
        113 => "PGM",
        132 => "SCTP",
        0 if v6 => return None,
        _ => return None,
    })
}

/// What the app layer needs to know about the flow while it handles one packet (a copy: cheap, and it leaves the
/// flow's fields free to borrow).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlowMeta {
    pub id: u64,
    pub key: FlowKey,
    pub client: KeySide,
    pub start_ns: u64,
    pub pkts: [u64; 2],
    pub bytes: [u64; 2],
    pub established: bool,
    pub transport: Transport,
    /// 1-based input position of the packet being handled (`None` in the end-of-flow flush).
    pub pcap_cnt: Option<u64>,
    /// ICMP type and code of the packet being handled, on ICMP flows.
    pub icmp: Option<(u8, u8)>,
    /// The TCP session's sizes after the packet being handled, for `stream_size`.
    pub stream_size: Option<flowbundle_rules::StreamSizes>,
}

impl FlowMeta {
    /// The direction of data sent from key side `side`.
    fn direction(&self, side: KeySide) -> Direction {
        Direction::from_client(side == self.client)
    }

    /// The key side that sends data in direction `dir`.
    pub(crate) fn side(&self, dir: Direction) -> KeySide {
        match dir {
            Direction::ToServer => self.client,
            Direction::ToClient => self.client.flip(),
        }
    }

    /// The rules' view of data going in key direction `dir`.
    pub(crate) fn packet_ctx<'a>(&self, dir: KeySide, app: Option<&'a str>) -> PacketCtx<'a> {
        let (src, dst, sp, dp) = self.key.endpoints(dir);
        PacketCtx {
            dir: self.direction(dir),
            transport: self.transport,
            src,
            dst,
            src_port: sp,
            dst_port: dp,
            established: self.established,
            app_proto: app,
            header: None,
            stream_size: self.stream_size,
            repeat_in_dir: self.pkts.get(dir.index()).is_some_and(|&n| n > 1),
            raw: RawHeaders::default(),
        }
    }

    /// Client and server addresses.
    fn client_server_ips(&self) -> (IpAddr, IpAddr) {
        let (c, s, _, _) = self.key.endpoints(self.client);
        (c, s)
    }
}

/// Where the app layer's output goes while one packet is handled: the worker's event list, scanner and what it
/// produced for the engine to fold in ([`Produced`]), plus the flow's event counter and alerted flag. It reads the
/// read-only [`Detection`] context, never the engine.
pub(crate) struct Out<'a> {
    pub det: &'a Detection,
    pub events: &'a mut Vec<Event>,
    pub scanner: Option<&'a mut Scanner>,
    pub produced: &'a mut Produced,
    pub meta: &'a FlowMeta,
    pub seq: &'a mut u32,
    pub alerted: &'a mut bool,
    /// Capture time of the packet being handled.
    pub ts_ns: u64,
    /// What `drop` and `pass` rules decided about this packet, applied by the engine once the packet is done.
    pub verdict: PacketVerdict,
    /// In the flow stage of a staged execution model: the packet's script, where events and rules calls are
    /// recorded for the detection stage instead of going to `events` and running now (see [`crate::staged`]).
    pub defer: Option<&'a mut Script>,
}

/// What the rules that matched a packet decided beyond alerting: collected while the packet is inspected and applied
/// when it is done (`Engine::on_packet`), as Suricata applies actions after running every rule on a packet, in the
/// configured action order ([`crate::EngineConfig::action_order`]; each field holds the earliest rank that asked for
/// it). A `pass` withdraws what comes after it in that order: the alerts of later-ranked rules, and their drops; with
/// flow scope the flow is passed. In the default order (pass first) that is every alert and drop of the packet. A
/// flow-scoped drop ranked before any pass drops the flow (nothing more of it is inspected), a packet-scoped drop the
/// packet alone (see `flowbundle_rules::Rule::flow_scoped`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PacketVerdict {
    pub pass: Option<u8>,
    pub pass_flow: bool,
    pub drop: Option<u8>,
    pub drop_flow: Option<u8>,
}

impl PacketVerdict {
    fn earliest(slot: &mut Option<u8>, rank: u8) {
        *slot = Some(slot.map_or(rank, |r| r.min(rank)));
    }

    /// Whether what a rule of `rank` did on this packet stands (no pass ranked before it matched; a pass rule's own
    /// alert, `pass ...; alert;`, stands).
    pub fn stands(&self, rank: u8) -> bool {
        self.pass.is_none_or(|p| rank <= p)
    }

    /// Whether the packet is dropped: a drop ranked before any pass matched.
    pub fn dropped(&self) -> bool {
        self.drop.is_some_and(|d| self.stands(d))
    }

    /// Whether the flow is dropped: a flow-scoped drop ranked before any pass matched.
    pub fn flow_dropped(&self) -> bool {
        self.drop_flow.is_some_and(|d| self.stands(d))
    }

    /// Adds what another call on the same packet decided, as if its rules had matched through the same [`Out`] (the
    /// detection stage runs a packet's calls one by one, `crate::staged`).
    pub fn merge(&mut self, other: PacketVerdict) {
        for (slot, rank) in [
            (&mut self.pass, other.pass),
            (&mut self.drop, other.drop),
            (&mut self.drop_flow, other.drop_flow),
        ] {
            if let Some(r) = rank {
                Self::earliest(slot, r);
            }
        }
        self.pass_flow |= other.pass_flow;
    }
}

impl Out<'_> {
    /// The EVE `anomaly` records of packet `d` travelling in direction `dir`: one per decoder event and one per
    /// stream event, each when its kind is written ([`crate::EngineConfig::anomaly`]), with the packet's head when
    /// `packethdr` is on.
    pub(crate) fn packet_anomalies(
        &mut self,
        dir: KeySide,
        d: &flowbundle_decode::Decoded<'_>,
        decode: flowbundle_decode::DecodeEvents,
        stream: flowbundle_types::StreamEvents,
    ) {
        let kinds = self.det.anomaly();
        let packet = packet_head(kinds, d);
        if kinds.decode {
            for event in decode.iter() {
                self.push(
                    dir,
                    EventKind::Anomaly(Box::new(Anomaly::Decode { event, packet })),
                );
            }
        }
        if kinds.stream {
            for event in stream.iter() {
                self.push(
                    dir,
                    EventKind::Anomaly(Box::new(Anomaly::Stream { event, packet })),
                );
            }
        }
    }

    fn push(&mut self, dir: KeySide, kind: EventKind) {
        let m = self.meta;
        let ev = Event {
            ts_ns: self.ts_ns,
            flow_id: m.id,
            pcap_cnt: m.pcap_cnt,
            seq: *self.seq,
            key: m.key,
            client: m.client,
            dir,
            kind,
        };
        match self.defer.as_deref_mut() {
            Some(script) => script.event(ev),
            None => self.events.push(ev),
        }
        *self.seq = self.seq.wrapping_add(1);
    }

    /// One call into the rules with the flow's matcher state: run now, or recorded for the detection stage in the
    /// flow stage of a staged execution model (see [`crate::staged`]). Nothing without rules.
    pub(crate) fn detect(&mut self, flow_rules: &mut FlowMatchState, call: Call<'_>) {
        if self.det.rules().is_none() {
            return;
        }
        match self.defer.as_deref_mut() {
            Some(script) => script.record(self.meta, self.ts_ns, &call, self.det.rules()),
            None => crate::staged::run(self, flow_rules, &call),
        }
    }

    fn alert(
        &mut self,
        a: &Alert<'_>,
        dir: KeySide,
        label: &AppLabel,
        extras: AlertExtras,
        tx: TxRef<'_>,
    ) {
        *self.alerted = true;
        self.produced.alerts += 1;
        self.alert_event(a, dir, label, extras, tx);
    }

    /// The alert's event; alone (without counting it or marking the flow alerted), the event of a `noalert` rule's
    /// match that only carries its xbits (see [`emit_owned`]).
    fn alert_event(
        &mut self,
        a: &Alert<'_>,
        dir: KeySide,
        label: &AppLabel,
        extras: AlertExtras,
        tx: TxRef<'_>,
    ) {
        let AlertExtras {
            datasets: dataset_values,
            context,
        } = extras;
        let m = self.meta;
        let (ts, tc) = (m.client.index(), m.client.flip().index());
        // The worker's own copy of the rule's text (see `Scanner::alert_text`): the rule's own reference counts are
        // shared by every worker.
        let text = match self.scanner.as_deref_mut() {
            Some(sc) => sc.alert_text(a.rule, a.rule_index),
            None => flowbundle_rules::AlertText {
                msg: a.rule.msg.clone(),
                category: a.rule.category.clone(),
                metadata: a.rule.metadata.clone(),
            },
        };
        let ev = AlertEvent {
            signature_id: a.sid(),
            gid: a.gid(),
            rev: a.rev(),
            signature: text.msg,
            category: text.category,
            metadata: text.metadata,
            icmp: m.icmp,
            severity: a.severity(),
            rule_index: a.rule_index,
            app: label.is_known().then(|| label.clone()),
            source: match a.source {
                AlertSource::Stream => "stream",
                AlertSource::Packet => "packet",
                AlertSource::Http { .. } => "http",
            },
            offset: a.offset,
            target: a.rule.target,
            blocked: self.det.ips() && a.rule.action.drops(),
            pkts_toserver: m.pkts[ts],
            pkts_toclient: m.pkts[tc],
            bytes_toserver: m.bytes[ts],
            bytes_toclient: m.bytes[tc],
            flow_start_ns: m.start_ns,
            tx: tx.event(),
            tx_id: match a.source {
                AlertSource::Http { tx_id, .. } => Some(tx_id),
                AlertSource::Stream | AlertSource::Packet => None,
            },
            // The alert's own captures; the flow's and the packet's variables are added once the packet is done
            // (`engine::apply_verdict`).
            vars: (!context.is_empty()).then(|| {
                Box::new(flowbundle_rules::flowvar::AlertVars {
                    context,
                    ..Default::default()
                })
            }),
            dataset_values,
        };
        self.push(dir, EventKind::Alert(Box::new(ev)));
    }
}

/// The [`EventSink`] given to a flow's parser: events become engine events (FTP announcements also go to the
/// expectation table), HTTP buffers go to the rules.
pub(crate) struct Emit<'o, 'a> {
    pub out: &'o mut Out<'a>,
    pub rules: &'o mut FlowMatchState,
    pub label: &'o AppLabel,
    pub application: &'o mut Application,
    /// The flow's risks so far: each event's are added as it passes.
    pub risks: &'o mut RiskSet,
    /// The FTP command read last in this parser call, as its transaction stands, while a rule inspects FTP's
    /// anomalies: the alerts of that transaction's anomalies (`app-layer-event:ftp.*`, raised right after its line)
    /// carry it.
    pub ftp_tx: Option<AppEvent>,
}

/// The application-layer transaction a buffer belongs to, as it stands when the buffer goes to the rules: an alert
/// on the buffer carries it (EVE writes it beside the alert under its event type, as Suricata writes an alert's
/// transaction). Borrowed, so that nothing is built for a buffer no rule alerts on: it becomes an [`AppEvent`] only
/// when a rule fires ([`TxRef::event`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) enum TxRef<'d> {
    /// No logged transaction: the payload, the stream, a buffer of a protocol without a transaction log.
    #[default]
    None,
    /// The transaction's own event: the buffers an event carries go to the rules as it passes.
    Event(&'d AppEvent),
    /// A TLS handshake at its ClientHello, before the server answers.
    TlsHello(&'d flowbundle_protocols::tls::TlsEvent),
    /// An HTTP transaction as the parser holds it (HTTP/1's event, a request line, an HTTP/2 stream).
    Http(flowbundle_protocols::http::HttpTx<'d>),
    /// An FTP command as it arrived, before any reply.
    FtpCommand {
        tx_id: u64,
        command: &'d [u8],
        data: &'d [u8],
    },
}

impl TxRef<'_> {
    /// The transaction as its event, for an alert that fired on it.
    pub(crate) fn event(self) -> Option<Box<AppEvent>> {
        match self {
            TxRef::None => None,
            TxRef::Event(e) => Some(Box::new(e.clone())),
            TxRef::TlsHello(t) => Some(Box::new(AppEvent::Tls(t.clone()))),
            TxRef::Http(h) => Some(Box::new(AppEvent::Http(h.event()))),
            TxRef::FtpCommand {
                tx_id,
                command,
                data,
            } => Some(Box::new(AppEvent::Ftp(ftp_command_tx(
                tx_id, command, data,
            )))),
        }
    }

    /// Whether `e` is this transaction's event, field for field (a staged script keeps one copy for the calls in a
    /// row that carry the same transaction; comparing builds nothing). An FTP command's transaction, built only
    /// for an alert, never compares equal.
    pub(crate) fn is(self, e: &AppEvent) -> bool {
        match (self, e) {
            (TxRef::Event(t), e) => t == e,
            (TxRef::TlsHello(t), AppEvent::Tls(e)) => t == e,
            (TxRef::Http(h), AppEvent::Http(e)) => h.is(e),
            _ => false,
        }
    }
}

/// An FTP command's transaction as it stands when the command arrives: the command and its argument, no reply yet.
fn ftp_command_tx(tx_id: u64, command: &[u8], data: &[u8]) -> FtpEvent {
    FtpEvent {
        tx_id,
        command: Some(String::from_utf8_lossy(command).into_owned()),
        command_data: Some(String::from_utf8_lossy(data).into_owned()),
        reply_received: "no",
        ..FtpEvent::default()
    }
}

/// The host name an event carries that names the flow's application: the TLS or QUIC SNI, the HTTP `Host`, a DNS
/// question's name.
fn event_host(event: &AppEvent) -> Option<&str> {
    match event {
        AppEvent::Tls(t) => t.sni.as_deref(),
        AppEvent::Quic(q) => q.sni.as_deref(),
        AppEvent::Http(h) => h.hostname.as_deref(),
        AppEvent::Dns(d) => d.rrname.as_deref(),
        _ => None,
    }
}

/// A flow's application (nDPI's `APP` in `MASTER.APP`: `TLS.Google`) and what named it. The first name the payload
/// gives stays (content, then host names, then the TLS certificate, in the order the parsers report them); when
/// the flow ends without one, [`Application::conclude`] asks weaker evidence: a service's registered port, then
/// the organisation that holds the server's address, the latter only if the flow carried no host name at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Application {
    pub name: Option<&'static str>,
    pub evidence: Option<ApplicationEvidence>,
    /// The flow carried a host name (SNI, `Host`, DNS question), whether or not it names a listed service.
    pub host_seen: bool,
}

impl Application {
    /// Names the application unless something named it already.
    fn name_once(&mut self, name: &'static str, evidence: ApplicationEvidence) {
        if self.name.is_none() {
            self.name = Some(name);
            self.evidence = Some(evidence);
        }
    }

    /// What an application event says: its host name, else (TLS) the server certificate's names.
    fn learn_from(&mut self, event: &AppEvent) {
        let host = event_host(event);
        self.host_seen |= host.is_some();
        if self.name.is_some() {
            return;
        }
        if let Some(a) = host.and_then(application_for_host) {
            self.name_once(a, ApplicationEvidence::HostName);
        } else if let AppEvent::Tls(t) = event {
            let names = t.cert_check.as_ref().map_or(&[][..], |c| &c.names[..]);
            if let Some(a) = application_for_certificate(t.subject.as_deref(), names) {
                self.name_once(a, ApplicationEvidence::Certificate);
            }
        }
    }

    /// When the flow ends unnamed, with master protocol `label`: DNS over TLS or QUIC on its registered port 853
    /// (RFC 7858, RFC 9250), TLS to Apple's push port 5223 on Apple's addresses (`ApplePush`), else, for a flow that carried no host name, the owner of the server's address (then
    /// the client's, for a flow whose first packet was the server's) by [`ip_owner`]. A flow without a master
    /// protocol gets no application: an address names who runs a server, not what the flow is.
    /// Only a label the payload decided (a detector or a signature, not a port guess) gets an application here.
    pub(crate) fn conclude(
        &mut self,
        label: &AppLabel,
        evidence: Option<Evidence>,
        server_port: u16,
        (server, client): (IpAddr, IpAddr),
    ) {
        let AppLabel::Proto(proto) = *label else {
            return;
        };
        if self.name.is_some() || !matches!(evidence, Some(Evidence::Parser | Evidence::Signature))
        {
            return;
        }
        if server_port == 853 && matches!(proto, AppProto::Tls | AppProto::Quic) {
            self.name_once("DoH_DoT", ApplicationEvidence::Port);
        } else if server_port == 5223
            && proto == AppProto::Tls
            && ip_owner::owner(server).is_some_and(|o| o.name == "Apple")
        {
            // Apple's push service: devices keep a TLS connection to TCP 5223 of its 17.0.0.0/8 block (Apple's
            // "If your Apple devices aren't getting Apple push notifications", HT203609), which is how nDPI names
            // `ApplePush` for a connection whose handshake was not seen.
            self.name_once("ApplePush", ApplicationEvidence::Port);
        } else if !self.host_seen
            && let Some(o) = ip_owner::owner(server).or_else(|| ip_owner::owner(client))
        {
            self.name_once(o.application_for(proto), ApplicationEvidence::IpOwner);
        }
    }
}

impl EventSink for Emit<'_, '_> {
    /// The client side of a TLS handshake, as its ClientHello completes: `tls.sni`, `ja3.hash`/`ja3.string` and
    /// `ja4.hash` go to the rules now, in the client's direction.
    fn tls_client_hello(&mut self, t: &flowbundle_protocols::tls::TlsEvent) {
        let tx_ref = TxRef::TlsHello(t);
        if self.out.det.rules().is_none() {
            return;
        }
        use flowbundle_rules::Buffer as B;
        let mut each = |b: B, data: &[u8]| {
            self.scan_tx_buffer(
                AppProto::Tls,
                true,
                0,
                BufferKind::App(b),
                Data::One(data),
                tx_ref,
            );
        };
        if let Some(sni) = &t.sni {
            each(B::TlsSni, sni.as_bytes());
        }
        if let Some(j) = &t.ja3 {
            each(B::Ja3Hash, j.hash.as_bytes());
            each(B::Ja3String, j.string.as_bytes());
        }
        if let Some(j) = &t.ja4 {
            each(B::Ja4Hash, j.as_bytes());
        }
        if t.client_version != 0 {
            each(B::TlsVersion, &tls_version_bytes(t.client_version));
        }
        self.tls_side_buffers(true, t.client_random.as_deref(), &t.client_alpns, tx_ref);
    }

    fn event(&mut self, event: AppEvent) {
        self.event_buffers(&event);
        self.log_event(event);
    }

    fn application(&mut self, name: &'static str) {
        self.application
            .name_once(name, ApplicationEvidence::Content);
    }

    fn dcerpc(&mut self, call: &flowbundle_protocols::dcerpc::DcerpcCall<'_>) {
        self.dcerpc_call(call);
    }

    /// A QUIC packet's version apart from the client's hello (the server's Initial, a gQUIC Q046 packet):
    /// `quic.version` in its direction, a transaction of its own (the client's hello is transaction 0), as Suricata
    /// makes one of each packet it reads.
    fn quic_version(&mut self, to_server: bool, version: u32) {
        let b = flowbundle_rules::Buffer::QuicVersion;
        if self.out.det.rules().is_some_and(|r| r.inspects(b)) {
            let data = Data::One(&version.to_be_bytes());
            self.scan_buffer(AppProto::Quic, to_server, 1, BufferKind::App(b), data);
        }
    }

    fn krb5_message(&mut self, tx_id: u64, to_server: bool, msg_type: u8) {
        if self.out.det.rules().is_none() {
            return;
        }
        self.scan_buffer(
            AppProto::Kerberos,
            to_server,
            tx_id,
            BufferKind::App(flowbundle_rules::Buffer::Krb5MsgType),
            Data::One(&[msg_type]),
        );
    }

    /// A parser's anomalies of one message: an EVE `anomaly` record each (Suricata's `applayer` kind, on by
    /// default), in the direction the message travelled, then the rules' `app-layer-event` buffer.
    fn app_layer_events(&mut self, tx_id: u64, to_server: bool, events: AppLayerEvents) {
        self.anomaly_records(tx_id, to_server, events);
        let ftp = self.ftp_tx.take().filter(|t| {
            matches!(t, AppEvent::Ftp(f) if f.tx_id == tx_id)
                && events.iter().next().map(|e| e.proto()) == Some(AppProto::Ftp)
        });
        let tx = ftp.as_ref().map_or(TxRef::None, TxRef::Event);
        self.anomaly_rules(tx_id, to_server, events, tx);
    }

    /// An event and its transaction's anomalies: the event's buffers and the anomalies' go to the rules while the
    /// event is at hand (their alerts carry it), then the event's record and the anomalies' records are written.
    fn event_with_anomalies(
        &mut self,
        event: AppEvent,
        tx_id: u64,
        to_server: bool,
        anomalies: AppLayerEvents,
    ) {
        self.event_buffers(&event);
        if !anomalies.is_empty() {
            self.anomaly_rules(tx_id, to_server, anomalies, TxRef::Event(&event));
        }
        self.log_event(event);
        if !anomalies.is_empty() {
            self.anomaly_records(tx_id, to_server, anomalies);
        }
    }

    /// A file the flow carried, of any carrier: its name (`file.name`), type (`file.magic`), state, size and hashes
    /// (`filesize`, the hash lists), then its bytes (`file.data` of its protocol; an HTTP response body went to the
    /// rules as the transaction's body already), all in the transaction it belongs to and the direction it travelled.
    fn file(&mut self, file: &flowbundle_protocols::FileData<'_>) {
        if self.out.det.rules().is_none() {
            return;
        }
        use flowbundle_rules::Buffer as B;
        let mut each = |b: B, data: &[u8]| {
            self.scan_buffer(
                file.proto,
                file.to_server,
                file.tx_id,
                BufferKind::App(b),
                Data::One(data),
            );
        };
        if !file.name.is_empty() {
            each(B::FileName, file.name);
        }
        if let Some(m) = file.magic {
            each(B::FileMagic, m.as_bytes());
        }
        let d = &file.digests;
        let meta = flowbundle_rules::file::meta(
            file.complete,
            file.size,
            d.md5.as_ref(),
            d.sha1.as_ref(),
            d.sha256.as_ref(),
        );
        each(B::FileMeta, &meta);
        match file.proto {
            AppProto::Smtp => each(B::SmtpFileData, file.data),
            AppProto::FtpData => each(B::FtpDataFileData, file.data),
            AppProto::Smb | AppProto::Smbv1 => each(B::SmbFileData, file.data),
            // A request's files (a POST or PUT body, a multipart form's file parts, an HTTP/2 request body); a
            // response's file is its body, which the rules had as the transaction's body already.
            AppProto::Http | AppProto::Http2 if file.to_server => {
                each(B::HttpRequestFileData, file.data);
                each(B::HttpFileData, file.data);
            }
            _ => {}
        }
    }

    /// An SMB field: its rules buffer, in the SMB transaction it belongs to.
    fn smb_buffer(
        &mut self,
        tx_id: u64,
        to_server: bool,
        field: flowbundle_protocols::smb::SmbField,
        data: &[u8],
    ) {
        use flowbundle_protocols::smb::SmbField as F;
        use flowbundle_rules::Buffer as B;
        if self.out.det.rules().is_none() {
            return;
        }
        let buffer = match field {
            F::Share => B::SmbShare,
            F::NamedPipe => B::SmbNamedPipe,
            F::NtlmsspUser => B::SmbNtlmsspUser,
            F::NtlmsspDomain => B::SmbNtlmsspDomain,
            F::Version => B::SmbVersion,
        };
        self.scan_buffer(
            AppProto::Smb,
            to_server,
            tx_id,
            BufferKind::App(buffer),
            Data::One(data),
        );
    }

    /// A transfer command names the file of the data connection announced last (see [`crate::expect`]).
    fn ftp_transfer(&mut self, t: &flowbundle_protocols::ftp::FtpTransfer<'_>) {
        let (c, s) = self.out.meta.client_server_ips();
        let (peer, (listener, port)) = t.channel.data_endpoint(c, s);
        self.out.produced.named.push((
            Announced {
                listener,
                port,
                peer,
                ts_ns: self.out.ts_ns,
            },
            flowbundle_protocols::ftp::data::Transfer {
                command: t.command,
                filename: t.filename.into(),
            },
        ));
    }

    /// An FTP command as it arrives: `ftp.command` and `ftp.command_data`, to the server, in the transaction it
    /// opens.
    fn ftp_command(&mut self, tx_id: u64, command: &[u8], data: &[u8]) {
        if self.out.det.rules().is_none() {
            return;
        }
        use flowbundle_rules::Buffer as B;
        // The transaction as it stands (no reply yet), for the alerts' EVE `ftp`: built only for an alert.
        let tx = TxRef::FtpCommand {
            tx_id,
            command,
            data,
        };
        for (b, v) in [(B::FtpCommand, command), (B::FtpCommandData, data)] {
            self.scan_tx_buffer(
                AppProto::Ftp,
                true,
                tx_id,
                BufferKind::App(b),
                Data::One(v),
                tx,
            );
        }
        // The command's anomalies follow its line: their alerts carry it too (kept only while a rule reads them).
        let anomalies = self
            .out
            .det
            .rules()
            .is_some_and(|r| r.inspects(B::FtpEvents));
        self.ftp_tx = anomalies.then(|| AppEvent::Ftp(ftp_command_tx(tx_id, command, data)));
    }

    /// A data connection announced: the expectation (see [`crate::expect`]), and for an active-mode command
    /// (`PORT`, `EPRT`) `ftpbounce`'s verdict, 1 when the address it announces is not the client's, in the
    /// command's transaction.
    fn ftp_announce(&mut self, a: &flowbundle_protocols::ftp::FtpAnnouncement) {
        let m = *self.out.meta;
        let (c, s) = m.client_server_ips();
        let (peer, (listener, port)) = a.data_endpoint(c, s);
        self.out.produced.announced.push(Announced {
            listener,
            port,
            peer,
            ts_ns: self.out.ts_ns,
        });
        if a.channel.listener == flowbundle_protocols::ftp::Listener::Client
            && self.out.det.rules().is_some()
        {
            let bounce = a.channel.expected_ip.is_some_and(|ip| !same_host(ip, c));
            self.scan_buffer(
                AppProto::Ftp,
                true,
                a.tx_id,
                BufferKind::App(flowbundle_rules::Buffer::FtpBounce),
                Data::One(&[u8::from(bounce)]),
            );
        }
    }

    /// An HTTP/2 stream's buffer: inspected as the flow's HTTP/2 whatever its label (a connection upgraded from
    /// HTTP/1.1 is labelled HTTP), so `alert http2` rules see it and `alert http1` rules do not.
    fn http2_buffer(
        &mut self,
        tx: flowbundle_protocols::http::HttpTx<'_>,
        buffer: HttpBuffer,
        data: &[u8],
    ) {
        if buffer == HttpBuffer::ResponseBody && executable_magic(data) {
            self.risks.insert(FlowRisk::BinaryApplicationTransfer);
        }
        let m = *self.out.meta;
        let dir = m.side(Direction::from_client(buffer.is_request()));
        self.out.detect(
            self.rules,
            Call::Buffer {
                dir,
                label: &AppLabel::Proto(AppProto::Http2),
                tx: tx.tx_id(),
                kind: BufferKind::Http(buffer),
                data: Data::One(data),
                transaction: TxRef::Http(tx),
            },
        );
    }

    /// One HTTP/2 frame's fields for the `http2.*` keywords, in the frame's direction, as the flow's HTTP/2.
    fn http2_frame(&mut self, f: &flowbundle_protocols::http2::Http2Frame<'_>) {
        let Some(rules) = self.out.det.rules() else {
            return;
        };
        use flowbundle_rules::Buffer as B;
        let mut ones: [(B, Option<Vec<u8>>); 5] = [
            (B::Http2FrameType, Some(vec![f.ty])),
            (
                B::Http2ErrorCode,
                f.error_code.map(|c| c.to_be_bytes().to_vec()),
            ),
            (B::Http2Priority, f.priority.map(|p| vec![p])),
            (B::Http2Window, f.window.map(|w| w.to_be_bytes().to_vec())),
            (
                B::Http2SizeUpdate,
                f.size_update
                    .map(|u| u32::try_from(u).unwrap_or(u32::MAX).to_be_bytes().to_vec()),
            ),
        ];
        for (b, v) in &mut ones {
            if !rules.inspects(*b) {
                *v = None;
            }
        }
        let settings: Vec<Vec<u8>> = if rules.inspects(B::Http2Settings) {
            f.settings.chunks_exact(6).map(<[u8]>::to_vec).collect()
        } else {
            Vec::new()
        };
        let names: Vec<Vec<u8>> = if rules.inspects(B::Http2HeaderName) {
            f.headers.iter().map(|(n, _)| n.clone()).collect()
        } else {
            Vec::new()
        };
        // `http.request_header` / `http.response_header` on HTTP/2: each field as `name: value`, pseudo-headers
        // included, as Suricata builds them.
        let each = if f.to_server {
            B::HttpRequestHeaderLine
        } else {
            B::HttpResponseHeaderLine
        };
        let fields: Vec<Vec<u8>> = if rules.inspects(each) {
            f.headers
                .iter()
                .map(|(n, v)| [n.as_slice(), b": ", v.as_slice()].concat())
                .collect()
        } else {
            Vec::new()
        };
        let m = *self.out.meta;
        let dir = m.side(Direction::from_client(f.to_server));
        let label = AppLabel::Proto(AppProto::Http2);
        for (b, v) in &ones {
            if let Some(v) = v {
                self.out.detect(
                    self.rules,
                    Call::Buffer {
                        dir,
                        label: &label,
                        tx: f.tx_id,
                        kind: BufferKind::App(*b),
                        data: Data::One(v),
                        transaction: TxRef::None,
                    },
                );
            }
        }
        for (b, parts) in [
            (B::Http2Settings, &settings),
            (B::Http2HeaderName, &names),
            (each, &fields),
        ] {
            if !parts.is_empty() {
                self.out.detect(
                    self.rules,
                    Call::Buffer {
                        dir,
                        label: &label,
                        tx: f.tx_id,
                        kind: BufferKind::AppEach(b),
                        data: Data::Parts(parts),
                        transaction: TxRef::None,
                    },
                );
            }
        }
    }

    fn http_buffer(
        &mut self,
        tx: flowbundle_protocols::http::HttpTx<'_>,
        buffer: HttpBuffer,
        data: &[u8],
    ) {
        if buffer == HttpBuffer::ResponseBody && executable_magic(data) {
            self.risks.insert(FlowRisk::BinaryApplicationTransfer);
        }
        // Only the HTTP parser hands over HTTP buffers, so the flow is HTTP even when the packet that identified it
        // is still being inspected (the label is settled after the packet): `alert http` rules must see it.
        self.scan_tx_buffer(
            AppProto::Http,
            buffer.is_request(),
            tx.tx_id(),
            BufferKind::Http(buffer),
            Data::One(data),
            TxRef::Http(tx),
        );
    }
}

impl Emit<'_, '_> {
    /// The transfer command (`RETR`, `STOR`, ...) of an FTP data connection's file, for `ftpdata_command`: a
    /// property of the connection's one transaction, so handed over in both directions (Suricata inspects it on
    /// either side: an active-mode upload travels to the data connection's initiator, and `flow:to_server` rules
    /// still see its `STOR`). Handed over before the file.
    pub(crate) fn ftp_data_command(&mut self, command: &str) {
        if self.out.det.rules().is_none() {
            return;
        }
        for to_server in [true, false] {
            self.scan_buffer(
                AppProto::FtpData,
                to_server,
                0,
                BufferKind::App(flowbundle_rules::Buffer::FtpDataCommand),
                Data::One(command.as_bytes()),
            );
        }
    }

    /// Hands the rules one side of a DCE/RPC call: its call header (interface, opnum) and stub, in one transaction.
    fn dcerpc_call(&mut self, call: &flowbundle_protocols::dcerpc::DcerpcCall<'_>) {
        if self.out.det.rules().is_none() {
            return;
        }
        let header = flowbundle_rules::dcerpc::call_header(
            call.iface.map(|i| (i.uuid, i.version)),
            call.opnum,
            call.first_frag,
        );
        self.scan_buffer(
            AppProto::Dcerpc,
            call.to_server,
            call.tx_id,
            BufferKind::Dcerpc {
                little_endian: call.little_endian,
            },
            Data::Two(&header, call.stub),
        );
    }

    /// An application event passes: it names the flow's application and adds its risks, and is written (when
    /// application events are logged).
    fn log_event(&mut self, event: AppEvent) {
        let m = *self.out.meta;
        self.application.learn_from(&event);
        *self.risks |= event_risks(&event, self.out.ts_ns);
        self.out.produced.app_events += 1;
        if !self.out.det.app_events() {
            return;
        }
        // DNS answers travel from the server, files the way they went; everything else is logged in the flow's
        // direction, as Suricata does.
        let dir = match &event {
            AppEvent::Dns(d) if d.is_response() => m.client.flip(),
            AppEvent::Fileinfo(f) if f.to_client => m.client.flip(),
            AppEvent::Sip(s) if !s.to_server => m.client.flip(),
            _ => m.client,
        };
        self.out.push(dir, EventKind::App(Box::new(event.into())));
    }

    /// An EVE `anomaly` record for each of a message's anomalies, in the direction it travelled.
    fn anomaly_records(&mut self, tx_id: u64, to_server: bool, events: AppLayerEvents) {
        if self.out.det.app_events() && self.out.det.anomaly().applayer {
            let client = self.out.meta.client;
            let dir = if to_server { client } else { client.flip() };
            for event in events.iter() {
                self.out.push(
                    dir,
                    EventKind::Anomaly(Box::new(Anomaly::AppLayer { event, tx_id })),
                );
            }
        }
    }

    /// A message's anomalies to the rules (`app-layer-event`), in transaction `tx_id`: their alerts carry `tx`.
    fn anomaly_rules(
        &mut self,
        tx_id: u64,
        to_server: bool,
        events: AppLayerEvents,
        tx: TxRef<'_>,
    ) {
        if self.out.det.rules().is_none() {
            return;
        }
        let Some(proto) = events.iter().next().map(|e| e.proto()) else {
            return;
        };
        let Some(buffer) = flowbundle_rules::Buffer::app_layer_events(proto) else {
            return;
        };
        let flags = events.flags();
        self.scan_tx_buffer(
            proto,
            to_server,
            tx_id,
            BufferKind::App(buffer),
            Data::One(&flags),
            tx,
        );
    }

    /// Hands the rules' application-layer buffers that an event carries (`dns.query`, `tls.sni`, JA3/JA3S/JA4,
    /// `ssh.proto`/`ssh.software`) to the rules engine, each in the direction its field travelled.
    fn event_buffers(&mut self, event: &AppEvent) {
        let tx_ref = TxRef::Event(event);
        if self.out.det.rules().is_none() {
            return;
        }
        use flowbundle_rules::Buffer as B;
        let mut each = |tx: u64, proto: AppProto, to_server: bool, b: B, data: &[u8]| {
            self.scan_tx_buffer(
                proto,
                to_server,
                tx,
                BufferKind::App(b),
                Data::One(data),
                tx_ref,
            );
        };
        match event {
            AppEvent::Dns(d) => {
                // `dns.query` is Suricata's `dns` app-layer buffer: an mDNS or LLMNR question is not one.
                if !d.is_response() && d.flavour == flowbundle_protocols::dns::DnsFlavour::Dns {
                    for q in &d.queries {
                        each(
                            d.tx_id,
                            AppProto::Dns,
                            true,
                            B::DnsQuery,
                            q.rrname.as_bytes(),
                        );
                    }
                }
                self.dns_buffers(d, tx_ref);
            }
            // A Kerberos KDC message: the names' components (multi-buffers), the error code and the ticket's
            // encryption type, in the message's direction. The names only of messages to the client (replies and
            // errors), as Suricata registers `krb5.cname` and `krb5.sname`: a request's are logged, not inspected.
            AppEvent::Krb5(k) => {
                let m = &k.message;
                let (tx, to_server) = (k.tx_id, k.to_server);
                for (b, name) in [(B::Krb5Cname, &m.cname), (B::Krb5Sname, &m.sname)] {
                    if let Some(p) = name
                        .as_ref()
                        .filter(|p| !to_server && !p.components.is_empty())
                    {
                        self.scan_tx_buffer(
                            AppProto::Kerberos,
                            to_server,
                            tx,
                            BufferKind::AppEach(b),
                            Data::Parts(&p.components),
                            tx_ref,
                        );
                    }
                }
                let mut each = |b: B, data: &[u8]| {
                    self.scan_tx_buffer(
                        AppProto::Kerberos,
                        to_server,
                        tx,
                        BufferKind::App(b),
                        Data::One(data),
                        tx_ref,
                    );
                };
                if let Some(c) = m.error_code {
                    each(B::Krb5ErrCode, &(c as u32).to_be_bytes());
                }
                if let Some(e) = m.ticket_etype {
                    let mut v = [0u8; 5];
                    v[0] = u8::from(flowbundle_types::krb5::weak_encryption(e));
                    v[1..].copy_from_slice(&(e as u32).to_be_bytes());
                    each(B::Krb5TicketEncryption, &v);
                }
            }
            // A finished FTP transaction: its replies and codes (one part per line) to the client; the announced
            // port and mode both ways and whether the reply came to the client, for the commands Suricata knows
            // (its keywords ignore the others and the greeting). The command and its argument went to the rules
            // as they arrived (`ftp_command`).
            AppEvent::Ftp(f) => {
                let tx = f.tx_id;
                for (b, parts) in [
                    (B::FtpReply, &f.reply),
                    (B::FtpCompletionCode, &f.completion_code),
                ] {
                    if !parts.is_empty() {
                        self.scan_tx_buffer(
                            AppProto::Ftp,
                            false,
                            tx,
                            BufferKind::AppEach(b),
                            Data::Strs(parts),
                            tx_ref,
                        );
                    }
                }
                if f.known_command {
                    let port = f.dynamic_port.unwrap_or(0).to_be_bytes();
                    let active = f
                        .announced
                        .map(|a| a.channel.listener == flowbundle_protocols::ftp::Listener::Client);
                    let mut each = |to_server: bool, b: B, data: &[u8]| {
                        self.scan_tx_buffer(
                            AppProto::Ftp,
                            to_server,
                            tx,
                            BufferKind::App(b),
                            Data::One(data),
                            tx_ref,
                        );
                    };
                    for to_server in [true, false] {
                        each(to_server, B::FtpDynamicPort, &port);
                        if let Some(active) = active {
                            each(to_server, B::FtpMode, &[u8::from(active)]);
                        }
                    }
                    each(
                        false,
                        B::FtpReplyReceived,
                        &[u8::from(f.reply_received == "yes")],
                    );
                }
            }
            // The client's buffers went to the rules with the ClientHello (`tls_client_hello`); the server's go now.
            AppEvent::Tls(t) => {
                if t.server_version != 0 {
                    let v = tls_version_bytes(t.server_version);
                    each(0, AppProto::Tls, false, B::TlsVersion, &v);
                }
                if let Some(j) = &t.ja3s {
                    each(0, AppProto::Tls, false, B::Ja3sHash, j.hash.as_bytes());
                    each(0, AppProto::Tls, false, B::Ja3sString, j.string.as_bytes());
                }
                for (b, field) in [
                    (B::TlsCertSubject, &t.subject),
                    (B::TlsCertIssuer, &t.issuerdn),
                    (B::TlsCertSerial, &t.serial),
                    (B::TlsCertFingerprint, &t.fingerprint),
                ] {
                    if let Some(v) = field {
                        each(0, AppProto::Tls, false, b, v.as_bytes());
                    }
                }
                if !t.certificates.is_empty() {
                    self.scan_tx_buffer(
                        AppProto::Tls,
                        false,
                        0,
                        BufferKind::AppEach(B::TlsCerts),
                        Data::Parts(&t.certificates),
                        tx_ref,
                    );
                }
                self.tls_server_buffers(t, tx_ref);
            }
            // A mail transaction: its envelope and its message's headers, all to the server.
            AppEvent::Smtp(s) => {
                let tx = s.tx_id;
                let mut one = |b: B, v: &Option<String>| {
                    if let Some(v) = v {
                        each(tx, AppProto::Smtp, true, b, v.as_bytes());
                    }
                };
                one(B::SmtpHelo, &s.helo);
                one(B::SmtpMailFrom, &s.mail_from);
                if let Some(e) = &s.email {
                    one(B::EmailFrom, &e.from);
                    one(B::EmailSubject, &e.subject);
                    one(B::EmailDate, &e.date);
                    one(B::EmailMessageId, &e.message_id);
                    one(B::EmailXMailer, &e.x_mailer);
                }
                let lists =
                    [(B::SmtpRcptTo, &s.rcpt_to)]
                        .into_iter()
                        .chain(s.email.iter().flat_map(|e| {
                            [
                                (B::EmailTo, &e.to),
                                (B::EmailCc, &e.cc),
                                (B::EmailReceived, &e.received),
                                (B::EmailUrl, &e.url),
                            ]
                        }));
                for (b, list) in lists {
                    if !list.is_empty() {
                        self.scan_tx_buffer(
                            AppProto::Smtp,
                            true,
                            tx,
                            BufferKind::AppEach(b),
                            Data::Strs(list),
                            tx_ref,
                        );
                    }
                }
            }
            AppEvent::Quic(q) => self.quic_buffers(q, tx_ref),
            AppEvent::Sip(s) => self.sip_buffers(s, tx_ref),
            AppEvent::Ssh(s) => {
                for (to_server, side) in [(true, &s.client), (false, &s.server)] {
                    if let Some(sw) = side {
                        each(
                            0,
                            AppProto::Ssh,
                            to_server,
                            B::SshProto,
                            sw.proto_version.as_bytes(),
                        );
                        each(
                            0,
                            AppProto::Ssh,
                            to_server,
                            B::SshSoftware,
                            sw.software_version.as_bytes(),
                        );
                        if let Some(h) = &sw.hassh {
                            let (hash, string) = if to_server {
                                (B::SshHassh, B::SshHasshString)
                            } else {
                                (B::SshHasshServer, B::SshHasshServerString)
                            };
                            each(0, AppProto::Ssh, to_server, hash, h.hash.as_bytes());
                            each(0, AppProto::Ssh, to_server, string, h.string.as_bytes());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// A SIP message's buffers, in the direction it travelled (each message is a transaction of its own): the
    /// request or status line's parts, the header lists (one part per value), and its session description's
    /// fields (the lists one part per entry). A list is built only when some rule inspects it.
    fn sip_buffers(&mut self, s: &flowbundle_protocols::sip::SipEvent, tx_ref: TxRef<'_>) {
        use flowbundle_rules::Buffer as B;
        let Some(rules) = self.out.det.rules() else {
            return;
        };
        let (tx, to_server) = (s.tx_id, s.to_server);
        // The buffer table's SIP rows (`sip.*`, `sdp.*`): a row added there is asked for here (and
        // `every_sip_buffer_reads_its_field` fails until the match below fills it).
        let wanted: Vec<B> = B::ALL
            .into_iter()
            .filter(|&b| b.app_proto() == Some("sip") && rules.inspects(b))
            .collect();
        if wanted.is_empty() {
            return;
        }
        let h = &s.headers;
        let sdp = s.sdp.as_ref();
        let media = sdp.map_or(&[][..], |d| &d.media_descriptions[..]);
        for b in wanted {
            let one: Option<&str> = match b {
                B::SipMethod => s.method.as_deref(),
                B::SipUri => s.uri.as_deref(),
                B::SipRequestLine => s.request_line.as_deref(),
                B::SipStatCode => s.code.as_deref(),
                B::SipStatMsg => s.reason.as_deref(),
                B::SipResponseLine => s.response_line.as_deref(),
                B::SipProtocol => Some(s.version.as_str()),
                B::SdpOrigin => sdp.map(|d| d.origin.as_str()),
                B::SdpSessionName => sdp.map(|d| d.session_name.as_str()),
                B::SdpSessionInfo => sdp.and_then(|d| d.session_info.as_deref()),
                B::SdpUri => sdp.and_then(|d| d.uri.as_deref()),
                B::SdpEmail => sdp.and_then(|d| d.email.as_deref()),
                B::SdpPhoneNumber => sdp.and_then(|d| d.phone_number.as_deref()),
                B::SdpConnectionData => sdp.and_then(|d| d.connection_data.as_deref()),
                B::SdpTimezone => sdp.and_then(|d| d.timezone.as_deref()),
                B::SdpEncryptionKey => sdp.and_then(|d| d.encryption_key.as_deref()),
                _ => None,
            };
            if let Some(v) = one.filter(|v| !v.is_empty()) {
                let data = Data::One(v.as_bytes());
                self.scan_tx_buffer(
                    AppProto::Sip,
                    to_server,
                    tx,
                    BufferKind::App(b),
                    data,
                    tx_ref,
                );
                continue;
            }
            let list: Vec<&str> = match b {
                B::SipFrom => h.from.iter().map(String::as_str).collect(),
                B::SipTo => h.to.iter().map(String::as_str).collect(),
                B::SipVia => h.via.iter().map(String::as_str).collect(),
                B::SipUserAgent => h.user_agent.iter().map(String::as_str).collect(),
                B::SipContentType => h.content_type.iter().map(String::as_str).collect(),
                B::SipContentLength => h.content_length.iter().map(String::as_str).collect(),
                B::SdpBandwidth => sdp.map_or(Vec::new(), |d| {
                    d.bandwidths.iter().map(String::as_str).collect()
                }),
                B::SdpAttribute => sdp.map_or(Vec::new(), |d| {
                    d.attributes.iter().map(String::as_str).collect()
                }),
                B::SdpTime => sdp.map_or(Vec::new(), |d| {
                    d.time_descriptions
                        .iter()
                        .map(|t| t.time.as_str())
                        .collect()
                }),
                B::SdpRepeatTime => sdp.map_or(Vec::new(), |d| {
                    d.time_descriptions
                        .iter()
                        .filter_map(|t| t.repeat_time.as_deref())
                        .collect()
                }),
                B::SdpMediaMedia => media.iter().map(|m| m.media.as_str()).collect(),
                B::SdpMediaMediaInfo => media
                    .iter()
                    .filter_map(|m| m.media_info.as_deref())
                    .collect(),
                B::SdpMediaConnectionData => media
                    .iter()
                    .filter_map(|m| m.connection_data.as_deref())
                    .collect(),
                B::SdpMediaEncryptionKey => media
                    .iter()
                    .filter_map(|m| m.encryption_key.as_deref())
                    .collect(),
                _ => Vec::new(),
            };
            if !list.is_empty() {
                let parts: Vec<&[u8]> = list.iter().map(|v| v.as_bytes()).collect();
                self.scan_tx_buffer(
                    AppProto::Sip,
                    to_server,
                    tx,
                    BufferKind::AppEach(b),
                    Data::Slices(&parts),
                    tx_ref,
                );
            }
        }
    }

    /// A DNS message's other buffers, in the direction it travelled: the names of each section (`dns.queries.rrname`,
    /// `dns.answers.rrname`, `dns.authorities.rrname`, `dns.additionals.rrname`, one part per name), a response's
    /// `dns.response.rrname`, and the header's `dns.opcode` and `dns.rcode` and the questions' `dns.rrtype`; on a
    /// multicast DNS flow the `mdns.*` name lists instead, on an LLMNR flow none. A list is built only when some rule
    /// inspects it.
    fn dns_buffers(&mut self, d: &flowbundle_protocols::dns::DnsEvent, tx_ref: TxRef<'_>) {
        use flowbundle_rules::Buffer as B;
        let Some(rules) = self.out.det.rules() else {
            return;
        };
        use flowbundle_protocols::dns::DnsFlavour;
        let (proto, [queries, answers, authorities, additionals, response]) = match d.flavour {
            // Suricata parses LLMNR as neither DNS nor mDNS: none of their buffers reads it.
            DnsFlavour::Llmnr => return,
            DnsFlavour::Mdns => (
                AppProto::Mdns,
                [
                    B::MdnsQueriesRrname,
                    B::MdnsAnswersRrname,
                    B::MdnsAuthoritiesRrname,
                    B::MdnsAdditionalsRrname,
                    B::MdnsResponseRrname,
                ],
            ),
            DnsFlavour::Dns => (
                AppProto::Dns,
                [
                    B::DnsQueriesRrname,
                    B::DnsAnswersRrname,
                    B::DnsAuthoritiesRrname,
                    B::DnsAdditionalsRrname,
                    B::DnsResponseRrname,
                ],
            ),
        };
        let (to_server, tx) = (d.to_server, d.tx_id);
        let names = |records: &[flowbundle_protocols::dns::DnsRecord]| -> Vec<Vec<u8>> {
            records.iter().map(|r| name_bytes(&r.rrname)).collect()
        };
        let lists = [
            (
                queries,
                d.queries.iter().map(|q| name_bytes(&q.rrname)).collect(),
            ),
            (answers, names(&d.answers)),
            (authorities, names(&d.authorities)),
            (additionals, names(&d.additionals)),
        ];
        for (b, parts) in lists {
            if !parts.is_empty() && rules.inspects(b) {
                self.scan_tx_buffer(
                    proto,
                    to_server,
                    tx,
                    BufferKind::AppEach(b),
                    Data::Parts(&parts),
                    tx_ref,
                );
            }
        }
        if d.is_response() && rules.inspects(response) {
            let mut parts: Vec<Vec<u8>> = d.queries.iter().map(|q| name_bytes(&q.rrname)).collect();
            for r in d.answers.iter().chain(&d.authorities).chain(&d.additionals) {
                parts.push(name_bytes(&r.rrname));
                let data = match r.rrtype.as_str() {
                    "CNAME" | "PTR" | "MX" | "NS" => r.rdata.as_deref(),
                    "SOA" => r.soa.as_ref().map(|s| s.mname.as_str()),
                    _ => None,
                };
                parts.extend(data.map(name_bytes));
            }
            self.scan_tx_buffer(
                proto,
                to_server,
                tx,
                BufferKind::AppEach(response),
                Data::Parts(&parts),
                tx_ref,
            );
        }
        if d.flavour != DnsFlavour::Dns {
            return;
        }
        let [hi, lo] = d.flags.to_be_bytes();
        for (b, v) in [(B::DnsOpcode, (hi >> 3) & 0xf), (B::DnsRcode, lo & 0xf)] {
            if rules.inspects(b) {
                self.scan_tx_buffer(
                    proto,
                    to_server,
                    tx,
                    BufferKind::App(b),
                    Data::One(&[v]),
                    tx_ref,
                );
            }
        }
        if !d.queries.is_empty() && rules.inspects(B::DnsRrtype) {
            let types: Vec<Vec<u8>> = d
                .queries
                .iter()
                .map(|q| q.qtype.to_be_bytes().to_vec())
                .collect();
            self.scan_tx_buffer(
                proto,
                to_server,
                tx,
                BufferKind::AppEach(B::DnsRrtype),
                Data::Parts(&types),
                tx_ref,
            );
        }
    }

    /// One TLS side's hello buffers: `tls.random` and its two parts, and `tls.alpn` (each protocol the side
    /// named), in the side's direction.
    fn tls_side_buffers(
        &mut self,
        to_server: bool,
        random: Option<&[u8; 32]>,
        alpns: &[String],
        tx_ref: TxRef<'_>,
    ) {
        use flowbundle_rules::Buffer as B;
        let Some(rules) = self.out.det.rules() else {
            return;
        };
        if let Some(r) = random {
            for (b, part) in [
                (B::TlsRandom, &r[..]),
                (B::TlsRandomTime, &r[..4]),
                (B::TlsRandomBytes, &r[4..]),
            ] {
                if rules.inspects(b) {
                    let data = Data::One(part);
                    self.scan_tx_buffer(
                        AppProto::Tls,
                        to_server,
                        0,
                        BufferKind::App(b),
                        data,
                        tx_ref,
                    );
                }
            }
        }
        if !alpns.is_empty() && rules.inspects(B::TlsAlpn) {
            let data = Data::Strs(alpns);
            self.scan_tx_buffer(
                AppProto::Tls,
                to_server,
                0,
                BufferKind::AppEach(B::TlsAlpn),
                data,
                tx_ref,
            );
        }
    }

    /// The server side's other TLS buffers, to the client: its hello's (see [`Self::tls_side_buffers`]), the
    /// certificate's `tls.subjectaltname` entries, the chain's length (`tls.cert_chain_len`) and the leaf's validity
    /// for the date keywords, expired or valid as of this packet's time (Suricata compares the flow's last time).
    fn tls_server_buffers(&mut self, t: &flowbundle_protocols::tls::TlsEvent, tx_ref: TxRef<'_>) {
        use flowbundle_rules::Buffer as B;
        self.tls_side_buffers(false, t.server_random.as_deref(), &t.server_alpns, tx_ref);
        let Some(rules) = self.out.det.rules() else {
            return;
        };
        let sans = t.cert_check.as_ref().map_or(&[][..], |c| &c.sans[..]);
        if !sans.is_empty() && rules.inspects(B::TlsSubjectAltName) {
            let data = Data::Strs(sans);
            let kind = BufferKind::AppEach(B::TlsSubjectAltName);
            self.scan_tx_buffer(AppProto::Tls, false, 0, kind, data, tx_ref);
        }
        if !t.certificates.is_empty() && rules.inspects(B::TlsCertChainLen) {
            let n = u32::try_from(t.certificates.len()).unwrap_or(u32::MAX);
            let data = Data::One(&n.to_be_bytes());
            self.scan_tx_buffer(
                AppProto::Tls,
                false,
                0,
                BufferKind::App(B::TlsCertChainLen),
                data,
                tx_ref,
            );
        }
        if let Some(c) = &t.cert_check
            && rules.inspects(B::TlsCertValidity)
        {
            let now = i64::try_from(self.out.ts_ns / 1_000_000_000).unwrap_or(i64::MAX);
            let number = flowbundle_rules::rule::cert_date_number;
            let mut v = [0u8; 18];
            v[..8].copy_from_slice(&number(c.not_before).to_be_bytes());
            v[8..16].copy_from_slice(&number(c.not_after).to_be_bytes());
            v[16] = u8::from(now > c.not_after);
            v[17] = u8::from(now <= c.not_after);
            let data = Data::One(&v);
            self.scan_tx_buffer(
                AppProto::Tls,
                false,
                0,
                BufferKind::App(B::TlsCertValidity),
                data,
                tx_ref,
            );
        }
    }

    /// A QUIC client hello's buffers, to the server (the parser reads the client's Initial packets only):
    /// `quic.version` (the long header's 4 bytes), `quic.sni`, `quic.ua`, and the hello's `ja3.hash`, `ja3.string`
    /// and `ja4.hash`, which Suricata 8 inspects on QUIC flows as on TLS ones.
    fn quic_buffers(&mut self, q: &flowbundle_protocols::quic::QuicEvent, tx_ref: TxRef<'_>) {
        use flowbundle_rules::Buffer as B;
        let Some(rules) = self.out.det.rules() else {
            return;
        };
        let version = q.wire_version.to_be_bytes();
        let ja3 = q.ja3.as_ref();
        let fields: [(B, Option<&[u8]>); 6] = [
            (
                B::QuicVersion,
                Some(&version[..]).filter(|_| q.wire_version != 0),
            ),
            (B::QuicSni, q.sni.as_deref().map(str::as_bytes)),
            (B::QuicUa, q.ua.as_deref().map(str::as_bytes)),
            (B::Ja3Hash, ja3.map(|j| j.hash.as_bytes())),
            (B::Ja3String, ja3.map(|j| j.string.as_bytes())),
            (B::Ja4Hash, q.ja4.as_deref().map(str::as_bytes)),
        ];
        let cyu = q.cyu.iter().flat_map(|c| {
            [
                (B::QuicCyuHash, Some(c.hash.as_bytes())),
                (B::QuicCyuString, Some(c.string.as_bytes())),
            ]
        });
        for (b, data) in fields.into_iter().chain(cyu) {
            if let Some(d) = data
                && rules.inspects(b)
            {
                self.scan_tx_buffer(
                    AppProto::Quic,
                    true,
                    0,
                    BufferKind::App(b),
                    Data::One(d),
                    tx_ref,
                );
            }
        }
    }

    /// One rules call for a buffer of the flow's application protocol (`proto` stands in for the flow's label
    /// while it is not settled yet) in the direction given by `to_server`.
    fn scan_buffer(
        &mut self,
        proto: AppProto,
        to_server: bool,
        tx: u64,
        kind: BufferKind,
        data: Data<'_>,
    ) {
        self.scan_tx_buffer(proto, to_server, tx, kind, data, TxRef::None);
    }

    /// [`Self::scan_buffer`] for a buffer of a logged transaction: its alerts carry the transaction.
    fn scan_tx_buffer(
        &mut self,
        proto: AppProto,
        to_server: bool,
        tx: u64,
        kind: BufferKind,
        data: Data<'_>,
        transaction: TxRef<'_>,
    ) {
        let m = *self.out.meta;
        let dir = m.side(Direction::from_client(to_server));
        let fallback = AppLabel::Proto(proto);
        let label = if self.label.is_known() {
            self.label
        } else {
            &fallback
        };
        self.out.detect(
            self.rules,
            Call::Buffer {
                dir,
                label,
                tx,
                kind,
                data,
                transaction,
            },
        );
    }
}

/// An alert copied out of the rules' callback (the callback cannot reach the event list while the scanner is
/// borrowed), with the values its deferred dataset operations saw (taken in the callback, before anything else is
/// verified).
#[derive(Clone)]
pub(crate) struct OwnedAlert {
    rule_index: u32,
    source: AlertSourceOwned,
    offset: u64,
    len: u64,
    pub(crate) dir: Direction,
    datasets: Option<Captured>,
    /// The match's captures into its alert (`alert.context`), copied in the callback; empty (nothing allocated)
    /// for a match that captured none or does not write an alert.
    context: Vec<(String, Vec<u8>)>,
}

/// What an alert's event carries beside the rule's match: its dataset values and its own captures.
pub(crate) struct AlertExtras {
    datasets: Option<Captured>,
    context: Vec<(String, Vec<u8>)>,
}

impl OwnedAlert {
    fn extras(self) -> AlertExtras {
        AlertExtras {
            datasets: self.datasets,
            context: self.context,
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) enum AlertSourceOwned {
    Stream,
    Packet,
    Http(u64, flowbundle_rules::Buffer),
}

pub(crate) fn owned(a: &Alert<'_>) -> OwnedAlert {
    OwnedAlert {
        rule_index: a.rule_index,
        source: match a.source {
            AlertSource::Stream => AlertSourceOwned::Stream,
            AlertSource::Packet => AlertSourceOwned::Packet,
            AlertSource::Http { tx_id, buffer } => AlertSourceOwned::Http(tx_id, buffer),
        },
        offset: a.offset,
        len: a.len,
        dir: a.dir,
        datasets: flowbundle_rules::dataset::take_captured(a.rule),
        // Only an alert that is written needs them (a `noalert` match is reported for its drop or xbits).
        context: match a.context {
            Some(c) if a.rule.alerts() => c.owned(),
            _ => Vec::new(),
        },
    }
}

fn to_alert<'r>(rule: &'r flowbundle_rules::Rule, a: &OwnedAlert) -> Alert<'r> {
    Alert {
        rule,
        rule_index: a.rule_index,
        dir: a.dir,
        source: match a.source {
            AlertSourceOwned::Stream => AlertSource::Stream,
            AlertSourceOwned::Packet => AlertSource::Packet,
            AlertSourceOwned::Http(tx_id, buffer) => AlertSource::Http { tx_id, buffer },
        },
        offset: a.offset,
        len: a.len,
        context: None,
    }
}

pub(crate) fn emit_owned(
    out: &mut Out<'_>,
    rules: &flowbundle_rules::RuleSet,
    a: OwnedAlert,
    dir: KeySide,
    label: &AppLabel,
    tx: TxRef<'_>,
) {
    let Some(rule) = rules.rules().get(a.rule_index as usize) else {
        return;
    };
    // A match on stream data or an application buffer acts on the flow; one on a packet as the rule's type says.
    let flow_scope = !matches!(a.source, AlertSourceOwned::Packet) || rule.flow_scoped();
    let rank = out.det.action_rank(rule.action);
    if rule.action.passes() {
        PacketVerdict::earliest(&mut out.verdict.pass, rank);
        out.verdict.pass_flow |= flow_scope;
        if !rule.alert || rule.noalert {
            // Its xbits and dataset operations still apply where alerts meet in input order, from a silent event
            // (see below).
            if rule.applies_in_order() {
                out.alert_event(&to_alert(rule, &a), dir, label, a.extras(), tx);
            }
            return;
        }
    }
    if rule.noalert {
        // A `noalert` rule with xbits: its match goes on, silent, to where alerts meet in input order, which applies
        // its xbits and drops it (`crate::alert_filter`); it neither counts as an alert nor marks the flow alerted.
        if rule.applies_in_order() {
            out.alert_event(&to_alert(rule, &a), dir, label, a.extras(), tx);
        }
        // A dropping `noalert` rule: its drop applies, no alert is written.
        if rule.action.drops() {
            PacketVerdict::earliest(&mut out.verdict.drop, rank);
            if flow_scope {
                PacketVerdict::earliest(&mut out.verdict.drop_flow, rank);
            }
        }
        return;
    }
    out.alert(&to_alert(rule, &a), dir, label, a.extras(), tx);
    if rule.action.drops() {
        PacketVerdict::earliest(&mut out.verdict.drop, rank);
        if flow_scope {
            PacketVerdict::earliest(&mut out.verdict.drop_flow, rank);
        }
    }
}

/// Adds the flow's and the packet's variables (EVE's top-level `metadata`: flowbits, flowints, flowvars, pktvars,
/// measured entropy; see [`flowbundle_rules::RuleSet::packet_metadata`]) to the alerts and the application records
/// among `events`, the events one packet (or a flow's close-time flush) raised, once its whole detection is done:
/// packet, stream and application-layer inspections alike. As Suricata's loggers (alert and transaction loggers
/// alike) read them after every rule has run on the packet, every alert and record of the packet writes the same,
/// whatever order its rules ran in. `flow` is the flow's matcher state (`None` for a packet without a flow). Nothing
/// is read or built for a packet that raised neither an alert nor an application record, nor for the silent event
/// of a rule that does not alert (never written).
pub(crate) fn add_packet_metadata(
    det: &Detection,
    scanner: Option<&Scanner>,
    flow: Option<&FlowMatchState>,
    events: &mut [Event],
) {
    let Some(rules) = det.rules() else {
        return;
    };
    let written = |a: &AlertEvent| {
        rules
            .rules()
            .get(a.rule_index as usize)
            .is_some_and(|r| r.alerts())
    };
    if !events.iter().any(|e| match &e.kind {
        EventKind::Alert(a) => written(a),
        EventKind::App(_) => true,
        _ => false,
    }) {
        return;
    }
    let Some(meta) = scanner.and_then(|sc| rules.packet_metadata(flow, sc)) else {
        return;
    };
    for e in events {
        match &mut e.kind {
            EventKind::Alert(a) if written(a) => match a.vars.as_deref_mut() {
                // The alert's own captures stay.
                Some(v) => {
                    v.flowbits.clone_from(&meta.flowbits);
                    v.flowints.clone_from(&meta.flowints);
                    v.flowvars.clone_from(&meta.flowvars);
                    v.pktvars.clone_from(&meta.pktvars);
                    v.entropy.clone_from(&meta.entropy);
                }
                None => a.vars = Some(Box::new(meta.clone())),
            },
            EventKind::App(r) => r.vars = Some(Box::new(meta.clone())),
            _ => {}
        }
    }
}

/// A flow record's variables (EVE's top-level `metadata` and `traffic` on `event_type: flow`): the flow's as its
/// end left them, read from its matcher state (`rules`: the flow's own under run-to-completion, the detection
/// stage's under a staged model), through the one reader alerts use ([`flowbundle_rules::RuleSet::flow_metadata`]).
pub(crate) fn flow_metadata(
    det: &Detection,
    rules: &FlowMatchState,
) -> Option<Box<flowbundle_rules::flowvar::AlertVars>> {
    det.rules()?.flow_metadata(rules).map(Box::new)
}

/// The reassembler's sink for one TCP packet: in-order data to the classifier/parser, the signatures and the rules.
pub(crate) struct StreamCx<'o, 'a> {
    pub out: &'o mut Out<'a>,
    pub fa: &'o mut Option<FlowApp>,
    pub sig: &'o mut Option<ConnState>,
    pub rules: &'o mut FlowMatchState,
    pub label: &'o AppLabel,
    pub application: &'o mut Application,
    pub risks: &'o mut RiskSet,
    /// The file of an FTP data connection, fed its in-order bytes.
    pub ftp_file: &'o mut FtpDataCandidate,
    /// Some payload reached the signatures during this packet.
    pub fed_sig: bool,
    /// Cycles spent in detection during this packet (only measured when `timing`).
    pub timing: bool,
    pub detect_cycles: u64,
    /// The packet's payload, and whether the last data handed on during this packet was exactly it (in order, in
    /// one piece): the packet scan may then use what the stream scan of that data found
    /// (`flowbundle_rules::RuleSet::scan_streamed_packet`).
    pub payload: &'o [u8],
    pub whole: bool,
    /// The stream offset of the first gap handed on during this packet, per key direction (for the
    /// `reassembly_seq_gap` stream event).
    pub gap_at: [Option<u64>; 2],
}

impl StreamSink for StreamCx<'_, '_> {
    fn data(&mut self, dir: KeySide, offset: u64, bytes: &[u8], ts_ns: u64) {
        self.whole = !bytes.is_empty()
            && std::ptr::eq(bytes.as_ptr(), self.payload.as_ptr())
            && bytes.len() == self.payload.len();
        let t0 = if self.timing { crate::cost::now() } else { 0 };
        let m = *self.out.meta;
        let pdir = m.direction(dir);
        self.out.ts_ns = ts_ns;
        let eng = self.out.det;
        if let Some(fa) = self.fa.as_mut() {
            let mut emit = Emit {
                out: self.out,
                rules: self.rules,
                label: self.label,
                application: self.application,
                risks: self.risks,
                ftp_tx: None,
            };
            fa.on_payload(eng.registry(), pdir, bytes, ts_ns, &mut emit);
        }
        self.ftp_file
            .data(self.fa.as_ref(), eng.registry().limits(), pdir, bytes);
        if let (Some(st), Some(set)) = (self.sig.as_mut(), self.out.det.signatures())
            && !st.verdict().is_final()
        {
            set.feed(st, bytes);
            self.fed_sig = true;
        }
        if self.out.det.rules().is_some() {
            let now = identified_now(self.label, self.fa.as_ref());
            let label = now.as_ref().unwrap_or(self.label);
            let failed = gave_up(label, self.fa.as_ref(), self.sig.as_ref());
            self.out.detect(
                self.rules,
                Call::Stream {
                    dir,
                    offset,
                    bytes,
                    label,
                    failed,
                },
            );
        }
        if self.timing {
            self.detect_cycles += crate::cost::now().wrapping_sub(t0);
        }
    }

    fn gap(&mut self, dir: KeySide, offset: u64, len: u64) {
        let first = &mut self.gap_at[dir.index()];
        *first = Some(first.map_or(offset, |o| o.min(offset)));
        let pdir = self.out.meta.direction(dir);
        self.ftp_file.gap(pdir, len);
        if let Some(fa) = self.fa.as_mut() {
            fa.on_gap(pdir, len);
        }
    }
}

/// Whether two addresses name the same host (an IPv4 address and its IPv4-mapped IPv6 form do).
fn same_host(a: IpAddr, b: IpAddr) -> bool {
    a.to_canonical() == b.to_canonical()
}

/// A DNS name's bytes as on the wire, for the rule buffers: the parser writes a byte outside printable ASCII (and
/// `\` itself) as `\xHH` in its text, which this undoes, so a rule's content matches the name's own bytes (UTF-8
/// names included) as in Suricata.
fn name_bytes(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'\\'
            && b.get(i + 1) == Some(&b'x')
            && let Some(v) = b
                .get(i + 2..i + 4)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 4;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// A TLS side's version as `tls.version` reads it ([`flowbundle_rules::Buffer::TlsVersion`]): as recorded, then
/// with a TLS 1.3 draft version (`7f xx`) read as TLS 1.3.
fn tls_version_bytes(v: u16) -> [u8; 4] {
    let norm = if v >> 8 == 0x7f { 0x0304 } else { v };
    let [a, b] = v.to_be_bytes();
    let [c, d] = norm.to_be_bytes();
    [a, b, c, d]
}

/// One UDP datagram (or other non-TCP payload) in key direction `dir`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn on_datagram(
    out: &mut Out<'_>,
    app: &mut AppState,
    dir: KeySide,
    payload: &[u8],
    header: PacketHeaders<'_>,
) {
    let m = *out.meta;
    let ts = out.ts_ns;
    let AppState {
        fa,
        sig,
        rules: flow_rules,
        label,
        application,
        risks,
        ..
    } = app;
    if let Some(fa) = fa.as_mut() {
        let mut emit = Emit {
            out,
            rules: flow_rules,
            label,
            application,
            risks,
            ftp_tx: None,
        };
        fa.on_payload(
            emit.out.det.registry(),
            m.direction(dir),
            payload,
            ts,
            &mut emit,
        );
    }
    if let (Some(st), Some(set)) = (sig.as_mut(), out.det.signatures())
        && !st.verdict().is_final()
    {
        set.feed(st, payload);
    }
    let now = identified_now(label, fa.as_ref());
    let label = now.as_ref().unwrap_or(label);
    let failed = gave_up(label, fa.as_ref(), sig.as_ref());
    scan_packet(out, flow_rules, label, failed, dir, payload, header, false);
}

/// What the rules read of a packet's headers: the fields header keywords test and the bytes header buffers
/// inspect.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PacketHeaders<'d> {
    pub fields: Option<PacketHeader>,
    pub raw: RawHeaders<'d>,
}

/// [`packet_header_with`] and, where a loaded rule inspects a header buffer, the packet's headers as on the wire
/// ([`raw_headers`]).
pub(crate) fn packet_headers<'d>(
    det: &Detection,
    d: &Decoded<'d>,
    meta: Option<&FlowMeta>,
    ts_ns: u64,
) -> PacketHeaders<'d> {
    PacketHeaders {
        fields: packet_header_with(det, d, meta, ts_ns),
        raw: if det.rules().is_some_and(|r| r.header_needs().raw) {
            raw_headers(d)
        } else {
            RawHeaders::default()
        },
    }
}

/// The packet's IP header (with options or extension headers) and transport header, borrowed from its bytes, for
/// the header buffers; empty without an IP header, and the transport's for a non-first fragment.
pub(crate) fn raw_headers<'d>(d: &Decoded<'d>) -> RawHeaders<'d> {
    let Some(ip) = d.ip.as_ref() else {
        return RawHeaders::default();
    };
    let (l3, l4, end) = (
        d.l3_offset as usize,
        d.l4_offset as usize,
        d.l3_end as usize,
    );
    let ip_bytes = d.data.get(l3..l4).unwrap_or(&[]);
    let segment = match d.l4 {
        L4::Tcp(_) | L4::Udp(_) | L4::Icmp(_) | L4::Icmpv6(_) => {
            d.data.get(l4..end.max(l4)).unwrap_or(&[])
        }
        _ => &[],
    };
    RawHeaders::new(ip_bytes, segment, ip.proto)
}

/// The header fields header keywords (`ttl`, `flags`, `itype`, ...) test, from a decoded packet; `None` without
/// an IP header. Read from the decoded fields, plus the two bytes the decoder does not keep (IPv4 type of service
/// and reserved flag, IPv6 traffic class) from the packet's own bytes.
pub(crate) fn packet_header(d: &Decoded<'_>) -> Option<PacketHeader> {
    let Some(ip) = d.ip.as_ref() else {
        // A frame without an IP header still carries its decoder events (`ethernet.pkt_too_small`).
        return (!d.events.is_empty()).then(|| PacketHeader {
            events: d.events,
            flowless: true,
            no_ip: true,
            ..PacketHeader::default()
        });
    };
    let l3 = d.data.get(d.l3_offset as usize..).unwrap_or(&[]);
    let (tos, reserved_bit) = if ip.is_v4() {
        (
            l3.get(1).copied().unwrap_or(0),
            l3.get(6).is_some_and(|b| b & 0x80 != 0),
        )
    } else {
        let tc = match (l3.first(), l3.get(1)) {
            (Some(a), Some(b)) => ((a & 0x0f) << 4) | (b >> 4),
            _ => 0,
        };
        (tc, false)
    };
    let tcp = match &d.l4 {
        L4::Tcp(t) => Some(TcpHeader {
            flags: t.flags as u8,
            seq: t.seq,
            ack: t.ack,
            window: t.window,
            mss: None,
            wscale: None,
        }),
        _ => None,
    };
    let icmp = match &d.l4 {
        L4::Icmp(i) | L4::Icmpv6(i) => Some(IcmpHeader {
            msg_type: i.msg_type,
            code: i.code,
            rest: i.rest,
        }),
        _ => None,
    };
    Some(PacketHeader {
        ipv6: ip.is_v6(),
        ip_proto: ip.proto,
        ttl: ip.ttl,
        tos,
        ip_id: ip.id,
        reserved_bit,
        dont_fragment: ip.dont_fragment,
        more_fragments: ip.more_fragments,
        frag_offset: if ip.is_v4() {
            ip.frag_offset / 8
        } else {
            ip.frag_offset
        },
        same_ip: ip.src == ip.dst,
        tcp,
        icmp,
        events: d.events,
        flowless: false,
        ..PacketHeader::default()
    })
}

/// [`packet_header`] with the optional fields the loaded rules read ([`flowbundle_rules::HeaderNeeds`]): VLAN ids,
/// IPv4 options, the TCP MSS and window scale options, the checksums' verdicts, and the flow's counters after this packet (`meta`, at `ts_ns`). A field no
/// loaded rule reads is left empty, so it costs nothing per packet.
pub(crate) fn packet_header_with(
    det: &Detection,
    d: &Decoded<'_>,
    meta: Option<&FlowMeta>,
    ts_ns: u64,
) -> Option<PacketHeader> {
    let mut h = packet_header(d)?;
    let Some(needs) = det.rules().map(|r| r.header_needs()).filter(|n| n.any()) else {
        return Some(h);
    };
    fill_optional(&mut h, needs, d, meta, ts_ns);
    Some(h)
}

/// Fills the optional header fields `needs` names.
fn fill_optional(
    h: &mut PacketHeader,
    needs: flowbundle_rules::HeaderNeeds,
    d: &Decoded<'_>,
    meta: Option<&FlowMeta>,
    ts_ns: u64,
) {
    if needs.vlan && d.vlan_count > 0 {
        let (ids, n) = if d.link_type == flowbundle_ingest::LinkType::ETHERNET {
            flowbundle_rules::header::vlan_ids_of(d.data)
        } else {
            ([0; 3], 0)
        };
        h.vlan = if n == d.vlan_count {
            ids
        } else {
            // Tags the frame's first bytes do not show (another link type, a tag inside a tunnel): the decoder's
            // outermost and innermost ids (a middle one of three is not kept).
            let (outer, inner) = (d.vlan_outer.unwrap_or(0), d.vlan_inner.unwrap_or(0));
            match d.vlan_count {
                1 => [outer, 0, 0],
                2 => [outer, inner, 0],
                _ => [outer, 0, inner],
            }
        };
        h.vlan_layers = d.vlan_count;
    }
    if needs.ip_opts
        && let Some(ip) = d.ip.as_ref()
        && ip.is_v4()
        && ip.header_len > 20
    {
        let l3 = d.l3_offset as usize;
        if let Some(opts) = d.data.get(l3 + 20..l3 + usize::from(ip.header_len)) {
            h.ip_opts = flowbundle_rules::header::ip_opts_of(opts);
        }
    }
    if needs.tcp_mss
        && let (Some(t), L4::Tcp(th)) = (h.tcp.as_mut(), &d.l4)
    {
        t.mss = th.options().map_while(Result::ok).find_map(|o| match o {
            flowbundle_decode::wire::tcp::TcpOption::Mss(m) => Some(m),
            _ => None,
        });
    }
    if needs.flow
        && let Some(m) = meta
        && !h.flowless
    {
        let (ts, tc) = (m.client.index(), m.client.flip().index());
        let narrow = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        h.flow = flowbundle_rules::FlowCounters {
            pkts: [narrow(m.pkts[ts]), narrow(m.pkts[tc])],
            bytes: [m.bytes[ts], m.bytes[tc]],
            age_secs: narrow((ts_ns / 1_000_000_000).saturating_sub(m.start_ns / 1_000_000_000)),
            known: true,
        };
    }
    if needs.tcp_wscale
        && let (Some(t), L4::Tcp(th)) = (h.tcp.as_mut(), &d.l4)
    {
        t.wscale = th.options().map_while(Result::ok).find_map(|o| match o {
            flowbundle_decode::wire::tcp::TcpOption::WindowScale(w) => Some(w),
            _ => None,
        });
    }
    if needs.checksums
        && let Some(ip) = d.ip.as_ref()
    {
        h.csum = checksums(d, ip);
    }
}

/// The verdicts of the packet's IPv4 header checksum and its transport checksum (TCP, UDP, ICMP, ICMPv6): the
/// one's-complement sum over the covered bytes (with the pseudo-header for TCP, UDP and ICMPv6) folds to all ones.
/// The transport's is left unknown for a fragment and for a datagram the capture cut short.
fn checksums(d: &Decoded<'_>, ip: &flowbundle_decode::Ip) -> Checksums {
    use flowbundle_decode::wire::checksum::{fold, pseudo_header, sum};
    let l3 = d.l3_offset as usize;
    let ipv4 = ip.is_v4().then(|| {
        d.data
            .get(l3..l3 + usize::from(ip.header_len))
            .is_some_and(|h| fold(sum(h)) == 0xffff)
    });
    let seg = d.data.get(d.l4_offset as usize..d.l3_end as usize);
    let l4 = match (&d.l4, seg) {
        (_, None) => None,
        _ if ip.fragmented || d.payload_truncated => None,
        (L4::Tcp(_) | L4::Udp(_) | L4::Icmpv6(_), Some(seg)) => {
            let udp_none =
                matches!(d.l4, L4::Udp(_)) && ip.is_v4() && seg.get(6..8) == Some(&[0, 0]);
            let len = u32::try_from(seg.len()).unwrap_or(u32::MAX);
            Some(
                udp_none || fold(pseudo_header(ip.src, ip.dst, ip.proto, len) + sum(seg)) == 0xffff,
            )
        }
        (L4::Icmp(_), Some(seg)) => Some(fold(sum(seg)) == 0xffff),
        _ => None,
    };
    Checksums { ipv4, l4 }
}

/// The EVE `anomaly` records of a packet no flow tracks: one per decoder event (`extra` adds the defragmenter's),
/// when decoder anomalies are written, after the packet's alerts (numbered from `u32::MAX / 2` so they sort after
/// them).
pub(crate) fn flowless_anomalies(
    det: &Detection,
    events: &mut Vec<Event>,
    num: u64,
    ts_ns: u64,
    d: &Decoded<'_>,
    extra: flowbundle_decode::DecodeEvents,
) {
    let all = d.events.union(extra);
    if !det.anomaly().decode || all.is_empty() {
        return;
    }
    let packet = packet_head(det.anomaly(), d);
    let unspecified = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
    let (src, dst, proto) = d.ip.map_or((unspecified, unspecified, 0), |ip| {
        (ip.src, ip.dst, ip.proto)
    });
    let (sp, dp) = d.ports().unwrap_or((0, 0));
    let (key, side) = FlowKey::new(src, sp, dst, dp, proto);
    for (i, event) in all.iter().enumerate() {
        events.push(Event {
            ts_ns,
            flow_id: crate::event::NO_FLOW,
            pcap_cnt: Some(num + 1),
            seq: (u32::MAX / 2).saturating_add(i as u32),
            key,
            client: side,
            dir: side,
            kind: EventKind::Anomaly(Box::new(Anomaly::Decode { event, packet })),
        });
    }
}

/// Packet `d`'s head for its anomaly records, when they carry it ([`crate::config::AnomalyTypes::packet_head`]).
fn packet_head(
    kinds: crate::config::AnomalyTypes,
    d: &flowbundle_decode::Decoded<'_>,
) -> Option<flowbundle_events::PacketHead> {
    kinds
        .packet_head()
        .then(|| flowbundle_events::PacketHead::new(d.link_type.0, d.data))
}

/// The packet rules on a packet no flow tracks (a fragment, an IP packet whose transport header did not decode, a
/// frame without IP that carries decoder events), as Suricata inspects such packets without a flow: the rules see
/// its header fields and decoder events (plus `extra`, the defragmenter's), its payload, and no flow state (rules
/// with `flow`, `flowbits` or `app-layer-protocol` conditions do not match). Its alerts are events with flow id 0
/// and the packet's own addresses; a `pass` withdraws them; a `drop` drops the packet. Returns whether a drop
/// matched.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_flowless(
    det: &Detection,
    scanner: &mut Option<Scanner>,
    events: &mut Vec<Event>,
    produced: &mut Produced,
    num: u64,
    ts_ns: u64,
    d: &Decoded<'_>,
    extra: flowbundle_decode::DecodeEvents,
) -> bool {
    if det.rules().is_none() {
        return false;
    }
    let d = Decoded {
        events: d.events.union(extra),
        ..*d
    };
    let Some(mut header) = packet_header_with(det, &d, None, ts_ns) else {
        return false;
    };
    let raw = if det.rules().is_some_and(|r| r.header_needs().raw) {
        raw_headers(&d)
    } else {
        RawHeaders::default()
    };
    header.flowless = true;
    if let Some(needs) = det.rules().map(|r| r.header_needs()).filter(|n| n.any()) {
        fill_optional(&mut header, needs, &d, None, ts_ns);
    }
    let unspecified = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
    let (src, dst, proto) = d.ip.map_or((unspecified, unspecified, 0), |ip| {
        (ip.src, ip.dst, ip.proto)
    });
    let (sp, dp) = d.ports().unwrap_or((0, 0));
    let (key, side) = FlowKey::new(src, sp, dst, dp, proto);
    let icmp = match d.l4 {
        L4::Icmp(i) | L4::Icmpv6(i) => Some((i.msg_type, i.code)),
        _ => None,
    };
    let meta = FlowMeta {
        id: crate::event::NO_FLOW,
        key,
        client: side,
        start_ns: ts_ns,
        pkts: [0; 2],
        bytes: [0; 2],
        established: false,
        transport: Transport::from_ip_proto(proto),
        pcap_cnt: Some(num + 1),
        icmp,
        stream_size: None,
    };
    let mut seq = 0u32;
    let mut alerted = false;
    let start = events.len();
    let mut out = Out {
        det,
        events,
        scanner: scanner.as_mut(),
        produced,
        meta: &meta,
        seq: &mut seq,
        alerted: &mut alerted,
        ts_ns,
        verdict: PacketVerdict::default(),
        // Run now, also in a staged model's flow stage: no flow state for the detection stage to keep (the engine
        // moves the alerts into the packet's script).
        defer: None,
    };
    let mut state = FlowMatchState::default();
    scan_packet(
        &mut out,
        &mut state,
        &AppLabel::Unknown,
        false,
        side,
        d.payload,
        PacketHeaders {
            fields: Some(header),
            raw,
        },
        false,
    );
    let verdict = out.verdict;
    if verdict.pass.is_some() {
        // A pass withdraws the packet's alerts ranked after it, as for a packet of a flow.
        for e in events.split_off(start) {
            if let EventKind::Alert(a) = &e.kind {
                let rule = det
                    .rules()
                    .and_then(|r| r.rules().get(a.rule_index as usize));
                let rank = rule.map_or(u8::MAX, |r| det.action_rank(r.action));
                if !verdict.stands(rank) {
                    // The silent event of a rule that does not alert (it carries xbits) was never counted.
                    if rule.is_none_or(|r| r.alerts()) {
                        produced.alerts = produced.alerts.saturating_sub(1);
                    }
                    if let Some(sc) = scanner.as_mut() {
                        sc.withdraw_hit(a.rule_index);
                    }
                    continue;
                }
            }
            events.push(e);
        }
    }
    // The packet's variables in its alerts, now that every rule has run on it (what its `entropy` keywords
    // measured has no flow to stay on).
    if let (Some(r), Some(sc)) = (det.rules(), scanner.as_mut()) {
        r.keep_measured(None, sc);
    }
    add_packet_metadata(
        det,
        scanner.as_ref(),
        None,
        events.get_mut(start..).unwrap_or_default(),
    );
    // A host tag covers the host's packets that no flow tracks too (as Suricata tags every packet): while the rule
    // set has host tags, the packet is a candidate for the alert filter (see `tag_packet`).
    if det.host_tags() && d.ip.is_some() {
        events.push(Event {
            ts_ns,
            flow_id: crate::event::NO_FLOW,
            pcap_cnt: Some(num + 1),
            seq,
            key,
            client: side,
            dir: side,
            kind: EventKind::Packet(Box::new(crate::event::TaggedPacket {
                data: d.data.into(),
                linktype: d.link_type.0,
                wire_len: u32::try_from(d.data.len()).unwrap_or(u32::MAX),
                session: false,
            })),
        });
    }
    verdict.dropped()
}

/// The label content rules see for data inspected now. A flow's label is settled after each packet
/// ([`AppState::settle`]), but the classifier may identify the flow on this very packet and run its parser on the
/// same bytes at once; rules on the application protocol (`alert http`, `app-layer-protocol:dns`) must already see
/// that identification, as in Suricata, where the protocol is known before detection runs on the data that revealed
/// it. `None`: use the flow's label.
pub(crate) fn identified_now(label: &AppLabel, fa: Option<&FlowApp>) -> Option<AppLabel> {
    if label.is_known() {
        return None;
    }
    match fa?.verdict() {
        Verdict::Matched(Identified { proto, .. }) => Some(AppLabel::Proto(proto)),
        _ => None,
    }
}

/// Whether identification of a flow still labelled unknown has given up for good: the classifier answered
/// `Unknown` (every detector said NotForUs, or its limits ran out) and no L7-filter signature can still decide
/// (none loaded, or all gave up). Flows without a classifier (ICMP and other IP protocols) never "fail": Suricata
/// leaves their protocol unknown rather than failed.
pub(crate) fn gave_up(label: &AppLabel, fa: Option<&FlowApp>, sig: Option<&ConnState>) -> bool {
    !label.is_known()
        && fa.is_some_and(|f| f.verdict() == Verdict::NoMatch)
        && sig.is_none_or(|s| s.verdict() == SigVerdict::NoMatch)
}

/// The `app_proto` content rules see: the label once known; `"failed"` once identification has given up, so that
/// `app-layer-protocol:failed` matches as in Suricata (whose `ALPROTO_FAILED` is distinct from "not known yet");
/// `None` while identification may still succeed, when no `app-layer-protocol` condition holds.
pub(crate) fn rules_app(label: &AppLabel, failed: bool) -> Option<&str> {
    if label.is_known() {
        Some(label.eve_name())
    } else if failed {
        Some("failed")
    } else {
        None
    }
}

/// The rules' per-packet pass (payload rules for non-TCP, header-only rules for every packet). `unstreamed`: a TCP
/// packet whose payload the stream does not take (see [`flowbundle_rules::RuleSet::scan_unstreamed_packet`] and
/// `Engine::on_packet`), so the stream rules also see this payload as a chunk of its own.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_packet(
    out: &mut Out<'_>,
    flow_rules: &mut FlowMatchState,
    label: &AppLabel,
    failed: bool,
    dir: KeySide,
    payload: &[u8],
    header: PacketHeaders<'_>,
    unstreamed: bool,
) {
    scan_packet_as(
        out, flow_rules, label, failed, dir, payload, header, unstreamed, false,
    );
}

/// [`scan_packet`] for a TCP packet whose payload, whole, was the last data the stream took during this packet
/// (`whole`, see [`StreamCx::whole`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_packet_as(
    out: &mut Out<'_>,
    flow_rules: &mut FlowMatchState,
    label: &AppLabel,
    failed: bool,
    dir: KeySide,
    payload: &[u8],
    header: PacketHeaders<'_>,
    unstreamed: bool,
    whole: bool,
) {
    out.detect(
        flow_rules,
        Call::Packet {
            dir,
            payload,
            header,
            label,
            failed,
            unstreamed,
            whole,
        },
    );
}

/// Settles pending stream candidates of the rules at the end of a flow. A dropped flow's candidates are settled too:
/// they come from data inspected before the drop took effect (a rule that needed the end of the stream, on the same
/// data as the drop rule, matches on that packet in Suricata, which inspects every rule before the verdict); a
/// passed flow's are not (the pass withdrew that packet's alerts).
pub(crate) fn finish_rules(out: &mut Out<'_>, flow_rules: &mut FlowMatchState, label: &AppLabel) {
    out.detect(flow_rules, Call::Finish { label });
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use flowbundle_ingest::CaptureReader;
    use flowbundle_rules::{RuleSet, Vars};

    use crate::{Engine, EngineConfig, EventKind, Prestage};

    /// The DNS parser's name text back to the name's bytes: `\xHH` escapes undone (UTF-8 names, a literal
    /// backslash), everything else as written, a cut escape kept as text.
    #[test]
    fn dns_names_back_to_their_bytes() {
        assert_eq!(
            super::name_bytes("John\\xe2\\x80\\x99s iMac._tcp.local"),
            "John\u{2019}s iMac._tcp.local".as_bytes()
        );
        assert_eq!(super::name_bytes("a\\x5cb"), b"a\\b");
        assert_eq!(super::name_bytes("plain.example"), b"plain.example");
        assert_eq!(super::name_bytes("cut\\x4"), b"cut\\x4");
        assert_eq!(super::name_bytes("bad\\xzz"), b"bad\\xzz");
    }

    /// A suricata-verify capture, or `None` (with a message; a failure under `FLOWBUNDLE_REQUIRE_DATA=1`) when the
    /// shared data is absent.
    fn sv_pcap(_test: &str, rel: &str) -> Option<PathBuf> {
        flowbundle_testsupport::data(&format!("suricata-verify/{rel}"))
    }

    /// Runs a capture through the serial engine path with `rules`; returns the signature id of every alert.
    fn alerts(pcap: &PathBuf, rules: &str, midstream: bool) -> Vec<u32> {
        let (set, report) = RuleSet::parse(rules, &Vars::default()).expect("rules parse");
        assert_eq!(report.skipped, 0, "{:?}", report.skipped_rules);
        let cfg = EngineConfig {
            app_events: false,
            midstream,
            ..EngineConfig::default()
        };
        let mut engine = Engine::new(cfg, None, Some(set));
        let mut pre = Prestage::new(engine.config());
        let mut ctx = engine.new_ctx();
        let mut r = CaptureReader::open(pcap).expect("capture opens");
        let mut n = 0u64;
        while let Ok(Some(rec)) = r.next_packet() {
            engine.process_serial(&mut ctx, &mut pre, n, &rec);
            n += 1;
        }
        engine
            .finish([ctx])
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Alert(a) => Some(a.signature_id),
                _ => None,
            })
            .collect()
    }

    /// suricata-verify `drop-protocol-change`: a header-only `alert http` rule fires on every packet of the flow once
    /// it is HTTP; the same rule as `drop` fires once, because the match drops the flow and its later packets are
    /// not inspected (Suricata's flow action `drop`, which Suricata applies in IDS mode too).
    #[test]
    fn a_drop_rule_alerts_once_and_stops_inspection_of_the_flow() {
        let Some(p) = sv_pcap(
            "a_drop_rule_alerts_once_and_stops_inspection_of_the_flow",
            "drop-protocol-change/input.pcap",
        ) else {
            return;
        };
        let alert = alerts(&p, "alert http any any -> any any (sid:1;)", true);
        assert!(alert.len() > 1, "alert fires per packet: {alert:?}");
        let drop = alerts(&p, "drop http any any -> any any (sid:1;)", true);
        assert_eq!(drop, vec![1]);
        // Every rule of the flow stops with the drop, not only the dropping one.
        let both = alerts(
            &p,
            "drop http any any -> any any (sid:1;)\nalert tcp any any -> any any (sid:2;)",
            true,
        );
        let after = both.iter().filter(|&&s| s == 2).count();
        let alone = alerts(&p, "alert tcp any any -> any any (sid:2;)", true).len();
        assert!(after < alone, "sid 2 after the drop {after}, alone {alone}");
    }

    /// `app-layer-protocol:failed` matches once identification has given up (the NSH capture's one UDP datagram,
    /// `data\n\n`, is no protocol we know), never on an identified flow, and `unknown` is its alias.
    #[test]
    fn app_layer_protocol_failed_matches_once_identification_gave_up() {
        let (Some(udp), Some(http)) = (
            sv_pcap(
                "app_layer_protocol_failed_matches_once_identification_gave_up",
                "decode-nsh-type1/input.pcap",
            ),
            sv_pcap(
                "app_layer_protocol_failed_matches_once_identification_gave_up",
                "http-close-headers/input.pcap",
            ),
        ) else {
            return;
        };
        let rules = "alert udp any any -> any any (app-layer-protocol:failed; sid:1;)\n\
                     alert udp any any -> any any (app-layer-protocol:unknown; sid:2;)\n\
                     alert tcp any any -> any any (app-layer-protocol:failed; sid:3;)\n\
                     alert tcp any any -> any any (app-layer-protocol:!failed; flow:to_server; sid:4;)";
        assert_eq!(alerts(&udp, rules, false), vec![1, 2]);
        // The HTTP flow is never "failed": before identification no condition holds, after it `!failed` does.
        let h = alerts(&http, rules, false);
        assert!(!h.contains(&3), "{h:?}");
        assert!(h.contains(&4), "{h:?}");
    }

    /// suricata-verify `http-close-headers`: the server's head is cut by its FIN; the parser hands it over when the
    /// flow ends, and a `flow:established` header rule matches it because the connection was established before
    /// it closed.
    #[test]
    fn headers_flushed_at_close_match_established_rules() {
        let Some(p) = sv_pcap(
            "headers_flushed_at_close_match_established_rules",
            "http-close-headers/input.pcap",
        ) else {
            return;
        };
        let rule = r#"alert http any any -> any any (msg:"ng1nx"; flow:established,from_server; content:"ng1nx"; nocase; http_header; sid:1;)"#;
        assert_eq!(alerts(&p, rule, false), vec![1]);
        // Not established at all (the rule asks for a state the flow never had): no alert.
        let never = r#"alert http any any -> any any (flow:not_established,from_server; content:"ng1nx"; http_header; sid:2;)"#;
        assert!(alerts(&p, never, false).is_empty());
    }

    /// `stream_size` on suricata-verify's `smb-eicar-file` capture: the client's packet carrying `EICAR` (relative
    /// sequence 818, 136 bytes, acknowledging 1008) is inspected when the client has used 1 + 953 sequence numbers
    /// (SYN and data) and the server 1 + 1007, so exactly these sizes match, on the stream's content match.
    #[test]
    fn stream_size_counts_each_side_from_its_initial_sequence_number() {
        let Some(p) = sv_pcap(
            "stream_size_counts_each_side_from_its_initial_sequence_number",
            "smb-eicar-file/input.pcap",
        ) else {
            return;
        };
        let rules = "alert tcp any any -> any any (flow:to_server; stream_size:server,=,1008; content:\"EICAR\"; sid:1;)\n\
                     alert tcp any any -> any any (flow:to_server; stream_size:server,=,1007; content:\"EICAR\"; sid:2;)\n\
                     alert tcp any any -> any any (flow:to_server; stream_size:client,=,954; content:\"EICAR\"; sid:3;)\n\
                     alert tcp any any -> any any (flow:to_server; stream_size:client,>,954; content:\"EICAR\"; sid:4;)\n\
                     alert tcp any any -> any any (flow:to_server; stream_size:both,<,1009; content:\"EICAR\"; sid:5;)\n\
                     alert tcp any any -> any any (flow:to_server; stream_size:both,<,1000; content:\"EICAR\"; sid:6;)\n\
                     alert tcp any any -> any any (flow:to_server; stream_size:either,<,1000; content:\"EICAR\"; sid:7;)\n\
                     alert tcp any any -> any any (flow:to_server; stream_size:server,!=,1008; content:\"EICAR\"; sid:8;)\n\
                     alert udp any any -> any any (stream_size:either,>=,0; sid:9;)";
        let mut got = alerts(&p, rules, false);
        got.sort_unstable();
        assert_eq!(got, vec![1, 3, 5, 7]);
    }

    /// `tls.version` on suricata-verify's `ja4-tls-quic` capture (a TLS 1.3 handshake over TCP): to the server it
    /// reads the ClientHello's version (0x0303, "1.2"), to the client the ServerHello's negotiated one (0x0304 from
    /// `supported_versions`, "1.3"); a content after it stays on the payload.
    #[test]
    fn tls_version_reads_each_sides_recorded_version() {
        let Some(p) = sv_pcap(
            "tls_version_reads_each_sides_recorded_version",
            "ja4-tls-quic/input.pcap",
        ) else {
            return;
        };
        let rules = "alert tls any any -> any any (flow:to_server; tls.version:1.2; sid:1;)\n\
                     alert tls any any -> any any (flow:to_client; tls.version:1.3; sid:2;)\n\
                     alert tls any any -> any any (flow:to_client; tls.version:1.2; sid:3;)\n\
                     alert tls any any -> any any (flow:to_server; tls.version:1.3; sid:4;)\n\
                     alert tls any any -> any any (flow:to_client; tls.version:0x0304; sid:5;)\n\
                     alert tls any any -> any any (flow:to_server; tls.version:\"1.2\"; content:\"|16 03|\"; sid:6;)\n\
                     alert tls any any -> any any (flow:to_server; tls.version:1.2; content:\"not in the hello\"; sid:7;)";
        let mut got = alerts(&p, rules, false);
        got.sort_unstable();
        got.dedup();
        assert_eq!(got, vec![1, 2, 5, 6]);
    }

    /// The TLS keywords on suricata-verify's `tls-alpn-log-detect-02` capture (TLS 1.2 to an iCloud server,
    /// 2024-06-01): the client offers ALPN `h2` and `http/1.1`, the server picks `http/1.1` and sends two
    /// certificates, the leaf valid from 2023-10-23 11:42:34 to 2024-11-21 11:42:33 with 16 DNS names
    /// (`p127-contacts.icloud.com` to `p142-...`). Each keyword matches the side it describes, a multi-buffer
    /// rule's contents one entry at a time, and `!` holds where the certificate lacks the value.
    #[test]
    fn tls_keywords_read_the_hellos_and_the_certificate() {
        let Some(p) = sv_pcap(
            "tls_keywords_read_the_hellos_and_the_certificate",
            "tls-alpn-log-detect-02/input.pcap",
        ) else {
            return;
        };
        let rules = r#"alert tls any any -> any any (tls.sni; content:"icloud"; tls.alpn; content:"http/1.1"; sid:1;)
alert tls any any -> any any (tls.subjectaltname; content:"p142-contacts.icloud.com"; tls.alpn; content:"http/1.1"; sid:2;)
alert tls any any -> any any (tls.alpn; content:"h2"; flow:to_client; sid:3;)
alert tls any any -> any any (tls.alpn; content:"h2"; flow:to_server; sid:4;)
alert tls any any -> any any (tls.alpn; content:"h2"; content:"http"; sid:5;)
alert tls any any -> any any (tls.subject:"CN=p127-contacts.icloud.com"; sid:6;)
alert tls any any -> any any (tls.subject:!"CN=p127-contacts"; sid:7;)
alert tls any any -> any any (tls.issuerdn:"CN=Apple IST CA 2 - G1"; sid:8;)
alert tls any any -> any any (tls.fingerprint:"30:83:82:c5:9d:c2:3b:b4:a9:a6:1a:f2:29:3d:ea:2d:84:1a:19:2e"; sid:9;)
alert tls any any -> any any (tls.fingerprint:!"30:83:82:C5"; sid:10;)
alert tls any any -> any any (tls.cert_chain_len:2; sid:11;)
alert tls any any -> any any (tls.cert_chain_len:>2; sid:12;)
alert tls any any -> any any (tls_cert_notbefore:2023-10-23T11:42:34; sid:13;)
alert tls any any -> any any (tls_cert_notafter:2024-01<>2024-12-01; sid:14;)
alert tls any any -> any any (tls_cert_notafter:<2024-11-21 11:42; sid:15;)
alert tls any any -> any any (tls_cert_valid; sid:16;)
alert tls any any -> any any (tls_cert_expired; sid:17;)
alert tls any any -> any any (flow:to_server; tls.random; content:"|78 94 75 75|"; startswith; bsize:32; sid:18;)
alert tls any any -> any any (flow:to_client; tls.random_time; content:"|7c 76 f7 a1|"; bsize:4; sid:19;)
alert tls any any -> any any (tls.random_bytes; content:"|7c 76 f7 a1|"; sid:20;)
alert tls any any -> any any (tls.random_bytes; bsize:28; flow:to_server; tls.store; sid:21;)
alert tls any any -> any any (tls.subjectaltname; content:"p127"; content:"p142"; sid:22;)"#;
        let mut got = alerts(&p, rules, false);
        got.sort_unstable();
        assert_eq!(got, vec![1, 2, 4, 6, 8, 9, 10, 11, 13, 14, 16, 18, 19, 21]);
    }

    /// The QUIC keywords on suricata-verify's `quic-ietf` capture (QUIC v1 to `msquic.net`) and `quic-alerts`
    /// (Google QUIC Q046, cleartext CHLO): `quic.version` reads each side's long header (the client's hello and the
    /// server's first packet: one alert each), `quic.sni` and `quic.ua` the client hello, and `ja3.*` / `ja4.hash`
    /// apply to QUIC flows as Suricata 8 applies them, while an `alert tls` rule stays off them.
    #[test]
    fn quic_keywords_read_the_client_hello_and_both_versions() {
        let (Some(ietf), Some(gquic)) = (
            sv_pcap(
                "quic_keywords_read_the_client_hello_and_both_versions",
                "quic-ietf/input.pcap",
            ),
            sv_pcap(
                "quic_keywords_read_the_client_hello_and_both_versions",
                "quic-alerts/input.pcap",
            ),
        ) else {
            return;
        };
        let rules = r#"alert quic any any -> any any (quic.sni; content:"msquic.net"; sid:1;)
alert quic any any -> any any (quic.version; content:"|00 00 00 01|"; bsize:4; sid:2;)
alert quic any any -> any any (ja4.hash; content:"q"; startswith; bsize:36; sid:3;)
alert tls any any -> any any (ja4.hash; content:"q"; startswith; sid:4;)
alert udp any any -> any any (ja3.hash; bsize:32; sid:5;)
alert quic any any -> any any (quic.ua; bsize:>0; sid:6;)
alert quic any any -> any any (quic.version; content:"Q046"; sid:7;)
alert ip any any -> any any (quic.sni; content:"google.com"; endswith; quic.version; content:"Q0"; sid:8;)
alert quic any any -> any any (ja4.hash; content:"q"; quic.version; content:"|00 00 00 01|"; sid:9;)"#;
        let mut got = alerts(&ietf, rules, false);
        got.sort_unstable();
        assert_eq!(got, vec![1, 2, 2, 3, 5, 9]);
        let mut got = alerts(&gquic, rules, false);
        got.sort_unstable();
        got.dedup();
        assert_eq!(got, vec![6, 7, 8]);
    }

    /// A UDP datagram (IPv4, no link header) from `src:sport` to `dst:dport` carrying `payload`; checksums zero
    /// (the engine does not verify them).
    fn udp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut b = vec![0x45, 0];
        b.extend_from_slice(&(28 + payload.len() as u16).to_be_bytes());
        b.extend_from_slice(&[0, 1, 0x40, 0, 64, 17, 0, 0]);
        b.extend_from_slice(&src);
        b.extend_from_slice(&dst);
        b.extend_from_slice(&sport.to_be_bytes());
        b.extend_from_slice(&dport.to_be_bytes());
        b.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(payload);
        b
    }

    /// Crafted packets (raw IPv4, one per second) through the serial engine with `rules`; each alert's signature id
    /// and whether it went to the server.
    fn alerts_on(packets: &[Vec<u8>], rules: &str) -> Vec<(u32, bool)> {
        use flowbundle_ingest::{LinkType, PacketRecord};
        let (set, report) = RuleSet::parse(rules, &Vars::default()).expect("rules parse");
        assert_eq!(
            (report.skipped, report.errors.len()),
            (0, 0),
            "{:?} {:?}",
            report.skipped_rules,
            report.errors
        );
        let cfg = EngineConfig {
            app_events: false,
            ..EngineConfig::default()
        };
        let mut engine = Engine::new(cfg, None, Some(set));
        let mut pre = Prestage::new(engine.config());
        let mut ctx = engine.new_ctx();
        for (i, data) in packets.iter().enumerate() {
            let rec = PacketRecord {
                ts_ns: (i as u64 + 1) * 1_000_000_000,
                orig_len: data.len() as u32,
                interface: 0,
                link_type: LinkType::RAW,
                data,
            };
            engine.process_serial(&mut ctx, &mut pre, i as u64, &rec);
        }
        let mut out: Vec<(u32, bool)> = engine
            .finish([ctx])
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Alert(a) => Some((a.signature_id, e.dir == e.client)),
                _ => None,
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// A DNS name in wire form.
    fn dns_name(name: &str) -> Vec<u8> {
        let mut b = Vec::new();
        for label in name.split('.').filter(|l| !l.is_empty()) {
            b.push(label.len() as u8);
            b.extend_from_slice(label.as_bytes());
        }
        b.push(0);
        b
    }

    /// A DNS message: header `flags`, one question, then the answer, authority and additional records, each
    /// `(name, type, rdata)`.
    fn dns_message(
        flags: u16,
        question: (&str, u16),
        sections: [&[(&str, u16, Vec<u8>)]; 3],
    ) -> Vec<u8> {
        let mut b = vec![0x12, 0x34];
        b.extend_from_slice(&flags.to_be_bytes());
        b.extend_from_slice(&1u16.to_be_bytes());
        for s in sections {
            b.extend_from_slice(&(s.len() as u16).to_be_bytes());
        }
        b.extend_from_slice(&dns_name(question.0));
        b.extend_from_slice(&question.1.to_be_bytes());
        b.extend_from_slice(&1u16.to_be_bytes());
        for s in sections {
            for (name, ty, rdata) in s {
                b.extend_from_slice(&dns_name(name));
                b.extend_from_slice(&ty.to_be_bytes());
                b.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
                b.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
                b.extend_from_slice(rdata);
            }
        }
        b
    }

    /// The DNS keywords on a crafted exchange: a request for `www.example.com` (opcode 0, an EDNS `OPT` record in
    /// its additional section) and its NXDOMAIN-coded response with a CNAME answer, an SOA authority and an A
    /// additional. Header keywords read each message in its own direction, the name lists each section of either
    /// direction, `dns.response.rrname` every name and name-valued data of the response; contents of one rule must
    /// match within one name (multi-buffer), and `!` holds when a name lacks the content.
    #[test]
    fn dns_keywords_read_the_header_and_each_section_of_either_direction() {
        let (c, s) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let opt: &[(&str, u16, Vec<u8>)] = &[("", 41, Vec::new())];
        let request = dns_message(0x0100, ("www.example.com", 1), [&[], &[], opt]);
        let mut soa = dns_name("ns1.example.org");
        soa.extend(dns_name("admin.example.org"));
        soa.extend([0u8; 20]);
        let response = dns_message(
            0x8183,
            ("www.example.com", 1),
            [
                &[("www.example.com", 5, dns_name("cdn.example.net"))],
                &[("example.org", 6, soa)],
                &[("ns1.example.org", 1, vec![192, 0, 2, 1])],
            ],
        );
        let packets = [
            udp(c, 40000, s, 53, &request),
            udp(s, 53, c, 40000, &response),
        ];
        let rules = r#"alert dns any any -> any any (dns.opcode:0; flow:to_server; sid:1;)
alert dns any any -> any any (dns.opcode:!0; sid:2;)
alert dns any any -> any any (dns.rcode:nxdomain; flow:to_client; sid:3;)
alert dns any any -> any any (dns.rcode:3; flow:to_server; sid:4;)
alert dns any any -> any any (dns.rrtype:1; sid:5;)
alert dns any any -> any any (dns.rrtype:28; sid:6;)
alert dns any any -> any any (dns.queries.rrname; content:"www.example.com"; bsize:15; flow:to_client; sid:7;)
alert dns any any -> any any (dns.answers.rrname; content:"www.example"; sid:8;)
alert dns any any -> any any (dns.response.rrname; content:"cdn.example.net"; sid:9;)
alert dns any any -> any any (dns.response.rrname; content:"ns1.example.org"; sid:10;)
alert dns any any -> any any (dns.additionals.rrname; content:"ns1"; flow:to_server; sid:11;)
alert dns any any -> any any (dns.additionals.rrname; content:"ns1"; flow:to_client; sid:12;)
alert dns any any -> any any (dns.authorities.rrname; content:"example.org"; startswith; sid:13;)
alert dns any any -> any any (dns.response.rrname; content:"cdn"; content:"org"; sid:14;)
alert dns any any -> any any (dns.queries.rrname; content:!"example"; sid:15;)
alert dns any any -> any any (dns.answers.rrname; content:!"nomatch"; sid:16;)
alert dns any any -> any any (dns.query; content:"www.example.com"; sid:17;)
alert mdns any any -> any any (mdns.queries.rrname; content:"www"; sid:18;)
alert dns any any -> any any (dns.query.name; content:"www.example.com"; bsize:15; sid:19;)
alert dns any any -> any any (dns.answer.name; content:"www.example.com"; bsize:15; sid:20;)
alert dns any any -> any any (dns.answer.name; content:"cdn"; sid:21;)"#;
        assert_eq!(
            alerts_on(&packets, rules),
            [
                (1, true),
                (3, false),
                (5, false),
                (5, true),
                (7, false),
                (8, false),
                (9, false),
                (10, false),
                (12, false),
                (13, false),
                (16, false),
                (17, true),
                (19, false),
                (19, true),
                (20, false),
            ]
        );
    }

    /// The `mdns.*` buffers on a multicast DNS flow (port 5353 to 224.0.0.251): a query and a response, both sent
    /// to the group, so both travel the flow's first direction. The `dns.*` buffers stay silent there, and the
    /// `mdns.*` ones on a unicast DNS flow.
    #[test]
    fn mdns_buffers_read_multicast_dns_flows_only() {
        let (host, group) = ([192, 168, 1, 20], [224, 0, 0, 251]);
        let query = dns_message(0, ("_apple-mobdev._tcp.local", 12), [&[], &[], &[]]);
        let answer: &[(&str, u16, Vec<u8>)] = &[(
            "_apple-mobdev._tcp.local",
            12,
            dns_name("John's Mac._apple-mobdev._tcp.local"),
        )];
        let response = dns_message(0x8400, ("_apple-mobdev._tcp.local", 12), [answer, &[], &[]]);
        let packets = [
            udp(host, 5353, group, 5353, &query),
            udp(host, 5353, group, 5353, &response),
            udp([10, 0, 0, 1], 40000, [10, 0, 0, 2], 53, &query),
        ];
        let rules = r#"alert mdns any any -> any any (mdns.queries.rrname; content:"_apple"; sid:1;)
alert mdns any any -> any any (mdns.answers.rrname; content:"_apple"; sid:2;)
alert ip any any -> any any (mdns.response.rrname; content:"John's Mac"; sid:3;)
alert dns any any -> any any (dns.queries.rrname; content:"_apple"; sid:4;)
alert udp any any -> any any (mdns.authorities.rrname; content:"_apple"; sid:5;)"#;
        assert_eq!(
            alerts_on(&packets, rules),
            // Both mDNS messages ask the question: two transactions, one alert each.
            [(1, true), (1, true), (2, true), (3, true), (4, true)]
        );
    }

    /// `dns.query` and the other `dns.*` buffers read unicast DNS only, as Suricata's `dns` app-layer: an mDNS
    /// question (port 5353) and an LLMNR question (port 5355) for the same name leave them silent, whether the
    /// rule names `dns` or `udp`; the same question to port 53 makes each alert once.
    #[test]
    fn dns_buffers_read_unicast_dns_only() {
        let query = dns_message(0x0100, ("wpad.example", 1), [&[], &[], &[]]);
        let response = dns_message(
            0x8180,
            ("wpad.example", 1),
            [&[("wpad.example", 1, vec![10, 0, 0, 9])], &[], &[]],
        );
        let (h, o) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let rules = r#"alert dns any any -> any any (dns.query; content:"wpad"; sid:1;)
alert udp any any -> any any (dns.query; content:"wpad"; sid:2;)
alert udp any any -> any any (dns.queries.rrname; content:"wpad"; flow:to_server; sid:3;)
alert udp any any -> any any (dns.answers.rrname; content:"wpad"; sid:4;)
alert udp any any -> any any (dns.response.rrname; content:"wpad"; sid:5;)
alert udp any any -> any any (dns.opcode:0; flow:to_server; sid:6;)
alert udp any any -> any any (dns.rcode:0; flow:to_client; sid:7;)
alert udp any any -> any any (dns.rrtype:1; flow:to_server; sid:8;)"#;
        for port in [5353, 5355] {
            let packets = [
                udp(h, 40000, [224, 0, 0, 251], port, &query),
                udp(o, port, h, 40000, &response),
                udp(h, 40001, o, port, &query),
                udp(o, port, h, 40001, &response),
            ];
            assert_eq!(alerts_on(&packets, rules), [], "port {port}");
        }
        let packets = [
            udp(h, 40000, o, 53, &query),
            udp(o, 53, h, 40000, &response),
        ];
        assert_eq!(
            alerts_on(&packets, rules),
            [
                (1, true),
                (2, true),
                (3, true),
                (4, false),
                (5, false),
                (6, true),
                (7, false),
                (8, true)
            ]
        );
    }

    /// One-way traffic to a group address is an announcement, not a risk.
    #[test]
    fn group_addresses() {
        for g in [
            "224.0.0.251",
            "239.255.255.250",
            "255.255.255.255",
            "192.168.1.255",
            "ff02::1:3",
        ] {
            assert!(super::group_address(g.parse().unwrap()), "{g}");
        }
        for h in ["192.168.1.20", "8.8.8.8", "2001:db8::1", "fe80::1"] {
            assert!(!super::group_address(h.parse().unwrap()), "{h}");
        }
    }
}

/// What tagging one packet needs of it (see [`tag_packet`]). `D` is how the packet's bytes are held: borrowed while
/// the packet is at hand, a handle into the staged script's store while it waits for the detection stage.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PacketNote<D> {
    pub flow_id: u64,
    /// EVE `pcap_cnt`.
    pub pcap_cnt: Option<u64>,
    pub ts_ns: u64,
    pub key: FlowKey,
    pub client: KeySide,
    pub dir: KeySide,
    pub wire_len: u32,
    pub linktype: u32,
    /// The packet as captured.
    pub data: D,
}

impl<D> PacketNote<D> {
    /// The same note with its bytes held another way.
    pub fn with_data<E>(self, data: E) -> PacketNote<E> {
        PacketNote {
            flow_id: self.flow_id,
            pcap_cnt: self.pcap_cnt,
            ts_ns: self.ts_ns,
            key: self.key,
            client: self.client,
            dir: self.dir,
            wire_len: self.wire_len,
            linktype: self.linktype,
            data,
        }
    }
}

/// A rule's `tag` on one packet of a flow (`flowbundle_rules::tag`), once the packet's alerts are final
/// (`engine::apply_verdict` has run; `ctx.events[ev_start..]` holds them): the session tags of the rules that alerted
/// are installed in the flow's matcher state `rules`, the packet counts towards the flow's tags, and a packet they
/// cover becomes a `packet` event after the packet's other events (numbered from `seq`, the flow's event counter).
/// While the rule set has host tags every packet becomes such an event, marked with whether a session tag covers it,
/// and the alert filter decides the host tags where events meet in input order (see
/// [`crate::event::TaggedPacket`]). Both execution paths call this at the same point, run to completion from
/// `Engine::on_packet` and the staged models from their detection stage, so the records are the same.
pub(crate) fn tag_packet(
    ctx: &mut crate::engine::WorkerCtx,
    rules: &mut FlowMatchState,
    seq: &mut u32,
    ev_start: usize,
    note: &PacketNote<&[u8]>,
) {
    let det = &ctx.det;
    if !det.tagging() {
        return;
    }
    let ts_s = note.ts_ns / 1_000_000_000;
    if det.session_tags()
        && let Some(set) = det.rules()
    {
        let start = ev_start.min(ctx.events.len());
        for e in &ctx.events[start..] {
            let EventKind::Alert(a) = &e.kind else {
                continue;
            };
            let Some(r) = set.rules().get(a.rule_index as usize) else {
                continue;
            };
            // Tags are set by alerts only: never by the silent match of a rule that does not alert.
            if e.flow_id != note.flow_id || !r.alerts() {
                continue;
            }
            let session = r
                .tags
                .iter()
                .filter(|t| t.scope == flowbundle_rules::tag::TagScope::Session);
            // A rule whose alert may yet be dropped (a threshold, an xbits condition) has its tags decided where
            // alerts meet in input order; the flow's packets go there as candidates from now on.
            if flowbundle_rules::tag::filtered(r) {
                if session.count() > 0 {
                    rules.tags_mut().defer();
                }
                continue;
            }
            for t in session {
                rules.tags_mut().add(r.gid, r.sid, t, ts_s);
            }
        }
    }
    let session = rules.has_tags() && rules.tags_mut().on_packet(ts_s, note.wire_len);
    if !session && !det.host_tags() && !rules.tags_deferred() {
        return;
    }
    ctx.events.push(Event {
        ts_ns: note.ts_ns,
        flow_id: note.flow_id,
        pcap_cnt: note.pcap_cnt,
        seq: *seq,
        key: note.key,
        client: note.client,
        dir: note.dir,
        kind: EventKind::Packet(Box::new(crate::event::TaggedPacket {
            data: note.data.into(),
            linktype: note.linktype,
            wire_len: note.wire_len,
            session,
        })),
    });
    *seq = seq.wrapping_add(1);
}
