//! The set of built-in detectors, the per-flow [`Classifier`] that probes them, and [`FlowApp`], which hands an
//! identified flow to its protocol's parser.
//!
//! ## How a flow is classified
//! The [`Registry`] is built once and shared (read-only) by every worker. Each flow holds a [`Classifier`]: a
//! 256-bit [`DetectorSet`] of the detectors still in the running (initially those that run on the flow's
//! transport), a payload count per direction, and, for TCP flows that stay undecided past their first payload,
//! a capped copy of each direction's first stream bytes so that a detector sees a header split across segments.
//!
//! Every payload (both directions) goes to the surviving detectors in registry order. The first `Certain` wins
//! ([`Verdict::Identified`] with [`Evidence::Parser`] and the payload index); a `NotForUs` removes the detector
//! from the set; when the set is empty, or the payload budget is spent (default 10 payloads per direction, like
//! nDPI's per-flow packet limit), the verdict is [`Verdict::NoMatch`].
//!
//! ## What it costs
//! A payload of an unknown protocol costs one table lookup (the detectors that accept its first byte, from
//! [`Detector::first_bytes`]: 32 bytes ANDed into the running set) and one dynamic call per detector left, each of
//! which looks at a few leading bytes; on the first payload most detectors drop out, so later payloads cost less. Nothing is allocated
//! for a flow decided on its first payload (the common case: HTTP requests, TLS ClientHellos, DNS queries). The
//! prefix copy (at most [`ClassifierConfig::prefix_cap`] bytes per direction) exists only for undecided TCP flows,
//! and for UDP the previous datagram (at most [`PREV_CAP`] bytes) so heuristics can check continuity.
//!
//! ## Order
//! Detectors are probed in the order [`builtin_detectors`] lists them: cheap, specific detectors (fixed magic
//! bytes, text verbs) before expensive ones (QUIC decrypts nothing while probing, but parses a long header) and
//! before statistical heuristics (RTP), so a payload matched by both a specific and a loose rule goes to the
//! specific protocol.

use crate::{
    AppProto, Detector, Direction, EventSink, Evidence, Limits, Parser, ParserStats, Probe,
    ProbeCtx, Transport,
};

/// Bytes of the previous UDP datagram per direction kept for [`ProbeCtx::prev`].
pub const PREV_CAP: usize = 512;

/// Most detectors a registry can hold (the width of [`DetectorSet`]).
pub const MAX_DETECTORS: usize = 256;

/// Every built-in detector, in probing order: the `[[detector]]` entries of every protocol's registration record
/// (`src/<name>/protocol.toml`), sorted by their `rank`.
///
/// ## Why this order
/// * The ranks below 40 hold the only detectors that must beat a core detector: nDPI names TLS on 465/993/995
///   `SMTPS`/`POPS`/`IMAPS`, so those look at the port before `TLS` sees the ClientHello.
/// * The core detectors (TLS, HTTP and its proxy forms, QUIC, DTLS, the DNS family; ranks 40-120) come next, fixed
///   magic bytes or text verbs decided on the first payload. No other detector can be certain on an HTTP request
///   line, a TLS record, a QUIC long header or a DNS message (checked on every DPI flow of the nDPI captures by
///   `tests/ground_truth_extra.rs` with `GT_EXTRA_ALL=1`), so the rest's position only matters among themselves:
///   magic numbers (`SSH-`, `ZBXD`, `GND`, `\x13BitTorrent`, ...) and exact-length structures first, port-assisted
///   checks next, and last (ranks from 1090) the detectors that wait for a second payload (RTP continuity, the ICE
///   window of STUN, the command after a mail/FTP greeting).
///
/// ## What it costs
/// A detector that does not recognise a payload answers from its first one to eight bytes (or a port
/// comparison), so an unknown payload costs a few nanoseconds per detector left in the running:
/// `classifier_cost` in `tests/ground_truth_extra.rs` measures the full registry against the core one over every
/// flow of the nDPI captures.
pub fn builtin_detectors() -> Vec<Box<dyn Detector>> {
    crate::ranked_detectors()
        .into_iter()
        .map(|(_, _, d)| d)
        .collect()
}

/// [`builtin_detectors`] with the protocol directory (module) that registered each one.
pub fn builtin_detectors_by_module() -> Vec<(&'static str, Box<dyn Detector>)> {
    crate::ranked_detectors()
        .into_iter()
        .map(|(_, m, d)| (m, d))
        .collect()
}

/// A set of detector indices: which detectors are still in the running for a flow. Fixed size (32 bytes), no
/// allocation, iteration by `trailing_zeros`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DetectorSet([u64; MAX_DETECTORS / 64]);

impl DetectorSet {
    /// The empty set.
    pub const EMPTY: DetectorSet = DetectorSet([0; MAX_DETECTORS / 64]);

    /// Adds detector `i` (ignored when `i >= MAX_DETECTORS`).
    #[inline]
    pub fn insert(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1u64 << (i % 64);
        }
    }

    /// Removes detector `i`.
    #[inline]
    pub fn remove(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w &= !(1u64 << (i % 64));
        }
    }

    /// Whether detector `i` is in the set.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.0
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Keeps only the detectors also in `other`.
    #[inline]
    pub fn intersect(&mut self, other: &DetectorSet) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a &= *b;
        }
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// How many detectors are in the set.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Indices in ascending order (probing order).
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(wi, &w)| {
            let mut bits = w;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(wi * 64 + b)
            })
        })
    }
}

/// Classifier knobs, shared by every flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassifierConfig {
    /// Payloads probed per direction before giving up (nDPI gives up after a similar number of packets).
    pub max_payloads_per_dir: u32,
    /// Stream bytes per direction kept for [`ProbeCtx::prefix`] and replayed to the parser on identification.
    pub prefix_cap: usize,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            max_payloads_per_dir: 10,
            prefix_cap: 4096,
        }
    }
}

/// The detectors, their transport masks, the port-guess table, and the limits given to parsers.
pub struct Registry {
    detectors: Vec<Box<dyn Detector>>,
    /// Index 0: detectors that run on TCP; 1: on UDP.
    by_transport: [DetectorSet; TRANSPORTS],
    /// For each first byte, the detectors that accept it ([`Detector::first_bytes`]).
    by_first: Box<[DetectorSet; 256]>,
    /// (port, protocol), sorted by port, first registration of a port wins; per transport.
    ports: [Vec<(u16, AppProto)>; TRANSPORTS],
    /// Every (protocol, default port), sorted, per transport: a protocol's own ports even where another protocol
    /// registered the same port first.
    own_ports: [Vec<(AppProto, u16)>; TRANSPORTS],
    config: ClassifierConfig,
    limits: Limits,
    /// Detection ports set by configuration ([`Registry::with_detection_ports`]): (port, protocol), sorted by port,
    /// per transport.
    configured: [Vec<(u16, AppProto)>; TRANSPORTS],
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field(
                "detectors",
                &self.detectors.iter().map(|d| d.proto()).collect::<Vec<_>>(),
            )
            .field("config", &self.config)
            .field("limits", &self.limits)
            .finish()
    }
}

/// Per-transport tables: TCP, UDP, and every other IP protocol (no built-in detector probes those).
const TRANSPORTS: usize = 3;

fn tindex(t: Transport) -> usize {
    match t {
        Transport::Tcp => 0,
        Transport::Udp => 1,
        Transport::Icmp | Transport::Other(_) => 2,
    }
}

impl Registry {
    /// The built-in detectors with default budget and limits.
    pub fn builtin() -> Self {
        Self::new(
            builtin_detectors(),
            ClassifierConfig::default(),
            Limits::default(),
        )
    }

    /// A registry over `detectors` in the given order. Detectors past [`MAX_DETECTORS`] are dropped (a
    /// configuration error the tests catch: the built-in list is far below it).
    pub fn new(
        mut detectors: Vec<Box<dyn Detector>>,
        config: ClassifierConfig,
        limits: Limits,
    ) -> Self {
        detectors.truncate(MAX_DETECTORS);
        let mut by_transport = [DetectorSet::EMPTY; TRANSPORTS];
        let mut ports: [Vec<(u16, AppProto)>; TRANSPORTS] = Default::default();
        let mut own_ports: [Vec<(AppProto, u16)>; TRANSPORTS] = Default::default();
        for (i, d) in detectors.iter().enumerate() {
            for &t in d.transports() {
                by_transport[tindex(t)].insert(i);
                for &p in d.default_ports(t) {
                    own_ports[tindex(t)].push((d.proto(), p));
                    let table = &mut ports[tindex(t)];
                    if !table.iter().any(|&(q, _)| q == p) {
                        table.push((p, d.proto()));
                    }
                }
            }
        }
        for t in &mut ports {
            t.sort_by_key(|&(p, _)| p);
        }
        for t in &mut own_ports {
            t.sort_unstable();
            t.dedup();
        }
        let mut by_first = Box::new([DetectorSet::EMPTY; 256]);
        for (i, d) in detectors.iter().enumerate() {
            let fb = d.first_bytes();
            for (b, set) in by_first.iter_mut().enumerate() {
                if fb.contains(b as u8) {
                    set.insert(i);
                }
            }
        }
        Registry {
            detectors,
            by_transport,
            by_first,
            ports,
            own_ports,
            config,
            limits,
            configured: Default::default(),
        }
    }

    /// Adds detection ports from the configuration (Suricata's `app-layer.protocols.<name>.detection-ports`):
    /// `(protocol, transport, port)`. A flow on a configured port is probed for that protocol as on its well-known
    /// port, and the configuration outranks the registration records: the detectors of other protocols whose own
    /// port it is are not asked (a DNS port set to 5353 is DNS, not mDNS), and the port guess names the configured
    /// protocol. A later entry for the same port and transport replaces an earlier one.
    pub fn with_detection_ports(mut self, ports: &[(AppProto, Transport, u16)]) -> Self {
        for &(proto, t, port) in ports {
            let ti = tindex(t);
            self.configured[ti].retain(|&(q, _)| q != port);
            self.configured[ti].push((port, proto));
            self.ports[ti].retain(|&(q, _)| q != port);
            self.ports[ti].push((port, proto));
            self.own_ports[ti].push((proto, port));
        }
        for t in 0..TRANSPORTS {
            self.configured[t].sort_by_key(|&(p, _)| p);
            self.ports[t].sort_by_key(|&(p, _)| p);
            self.own_ports[t].sort_unstable();
            self.own_ports[t].dedup();
        }
        self
    }

    /// The protocol the configuration assigns to a flow's ports (the server's first), with the side it was found
    /// on (`true`: the server's port).
    fn configured_for(
        &self,
        transport: Transport,
        client_port: u16,
        server_port: u16,
    ) -> Option<(AppProto, bool)> {
        let table = &self.configured[tindex(transport)];
        let find = |p: u16| {
            table
                .binary_search_by_key(&p, |&(q, _)| q)
                .ok()
                .and_then(|i| table.get(i))
                .map(|e| e.1)
        };
        find(server_port)
            .map(|p| (p, true))
            .or_else(|| find(client_port).map(|p| (p, false)))
    }

    /// Whether `proto` runs off its default ports (nDPI's "known protocol on a non-standard port"): `proto` has
    /// default ports on `transport` and neither port of the flow is one of them.
    pub fn off_default_ports(
        &self,
        proto: AppProto,
        transport: Transport,
        client_port: u16,
        server_port: u16,
    ) -> bool {
        let table = &self.own_ports[tindex(transport)];
        let start = table.partition_point(|&(p, _)| p < proto);
        let mut own = table
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .take_while(|&&(p, _)| p == proto)
            .peekable();
        own.peek().is_some() && own.all(|&(_, port)| port != client_port && port != server_port)
    }

    /// Whether the first datagram of a UDP flow, `data` sent from `src_port` to `dst_port`, is its server's answer
    /// ([`Detector::answers_first`] of the protocol that owns `src_port`): the flow's client is then the receiver.
    /// One port lookup for most flows.
    pub fn first_datagram_answers(&self, src_port: u16, dst_port: u16, data: &[u8]) -> bool {
        let table = &self.ports[tindex(Transport::Udp)];
        let Some(owner) = table
            .binary_search_by_key(&src_port, |&(q, _)| q)
            .ok()
            .and_then(|i| table.get(i))
            .map(|e| e.1)
        else {
            return false;
        };
        let ctx = ProbeCtx {
            transport: Transport::Udp,
            client_port: src_port,
            server_port: dst_port,
            dir: Direction::ToServer,
            payload_index: 0,
            dir_index: 0,
            prefix: data,
            data,
            prev: &[],
            peer: &[],
        };
        self.detectors
            .iter()
            .filter(|d| d.proto() == owner && d.transports().contains(&Transport::Udp))
            .any(|d| d.answers_first(&ctx))
    }

    /// Whether `port` is one of `proto`'s ports in its registration record (configuration aside).
    fn registered_port(&self, proto: AppProto, transport: Transport, port: u16) -> bool {
        matches!(transport, Transport::Tcp | Transport::Udp)
            && proto.default_ports(transport).contains(&port)
    }

    /// Whether `port` is one of `proto`'s default ports on `transport` (its registration record's, and the ports
    /// the configuration adds).
    pub fn owns_port(&self, proto: AppProto, transport: Transport, port: u16) -> bool {
        self.own_ports[tindex(transport)]
            .binary_search(&(proto, port))
            .is_ok()
    }

    /// Whether detector `i` has the first say on this flow ([`Detector::port_first`] and a port of its protocol).
    fn first_say(&self, i: usize, c: &Classifier) -> bool {
        self.detectors.get(i).is_some_and(|d| {
            d.port_first()
                && (self.owns_port(d.proto(), c.transport, c.server_port)
                    || self.owns_port(d.proto(), c.transport, c.client_port))
        })
    }

    /// The detectors in probing order.
    pub fn detectors(&self) -> &[Box<dyn Detector>] {
        &self.detectors
    }

    /// The classifier configuration.
    pub fn config(&self) -> &ClassifierConfig {
        &self.config
    }

    /// The parser limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// nDPI-style guess from well-known ports: the server port first, then the client port (a flow picked up
    /// from its reply, or a UDP exchange whose "client" is the well-known side). Evidence [`Evidence::Port`].
    pub fn port_guess(
        &self,
        transport: Transport,
        client_port: u16,
        server_port: u16,
    ) -> Option<AppProto> {
        let table = &self.ports[tindex(transport)];
        let find = |p: u16| {
            table
                .binary_search_by_key(&p, |&(q, _)| q)
                .ok()
                .and_then(|i| table.get(i))
                .map(|e| e.1)
        };
        find(server_port).or_else(|| find(client_port))
    }

    /// [`Registry::port_guess`] for a flow that ends unidentified, unless its payload refuted the guess: when the
    /// flow carried payload and every detector of the guessed protocol said `NotForUs` to it, the port is
    /// contradicted by what was seen, and the flow stays unknown rather than being named after its port.
    pub fn port_guess_unrefuted(&self, c: &Classifier) -> Option<AppProto> {
        let guess = self.port_guess(c.transport, c.client_port, c.server_port)?;
        if c.total == 0 {
            return Some(guess);
        }
        let still_running = self.detectors.iter().enumerate().any(|(i, d)| {
            d.proto() == guess && d.transports().contains(&c.transport) && c.running.contains(i)
        });
        still_running.then_some(guess)
    }

    /// A parser for `proto` on `transport`, from the first detector of that protocol that has one. Used by
    /// [`FlowApp`] and by the engine when a signature (not a detector) identified the flow.
    pub fn parser_for(&self, proto: AppProto, transport: Transport) -> Option<Box<dyn Parser>> {
        self.detectors
            .iter()
            .filter(|d| d.proto() == proto && d.transports().contains(&transport))
            .find_map(|d| d.parser(transport, &self.limits))
    }
}

/// A decided identification: the protocol, how, and the 0-based index (both directions) of the payload that decided
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Identified {
    pub proto: AppProto,
    pub evidence: Evidence,
    pub at_payload: u32,
}

/// Where a flow's identification stands: pending while probing, matched, or no match once every detector said
/// `NotForUs` or the payload budget is spent.
pub type Verdict = flowbundle_types::Verdict<Identified>;

/// Per-flow identification state. About 100 bytes plus, for undecided flows only, the capped prefixes.
#[derive(Clone, Debug)]
pub struct Classifier {
    transport: Transport,
    client_port: u16,
    server_port: u16,
    running: DetectorSet,
    verdict: Verdict,
    /// Which detector decided (index into the registry), for the parser hand-over.
    winner: Option<u16>,
    dir_count: [u32; 2],
    total: u32,
    first_dir: Option<Direction>,
    /// TCP: the first stream bytes per direction (filled only once a flow stays undecided); UDP: previous datagram.
    saved: [Vec<u8>; 2],
    /// TCP: stream bytes that did not fit in `saved` (or fell after a gap), per direction.
    lost: [u64; 2],
    /// TCP: a gap was reported in this direction, so `saved` is no longer the stream's start.
    broken: [bool; 2],
    /// A detector that was certain while a detector with the first say on the flow's port was still unsure: its
    /// index and the payload that decided. It wins once no such detector is left, or when probing ends.
    deferred: Option<(u16, Identified)>,
    /// The protocol whose detection port (set by configuration) the flow uses, and the port its detectors are
    /// shown instead (the protocol's own well-known port, on the side the configured port was found).
    configured: Option<(AppProto, u16, bool)>,
}

impl Classifier {
    /// A classifier for a new flow. `client_port` is the initiator's port.
    pub fn new(reg: &Registry, transport: Transport, client_port: u16, server_port: u16) -> Self {
        let mut running = reg.by_transport[tindex(transport)];
        // A configured detection port: the configured protocol is probed as on its own port, and the protocols
        // whose registered port it is are not asked.
        let configured =
            reg.configured_for(transport, client_port, server_port)
                .map(|(proto, server_side)| {
                    let port = if server_side {
                        server_port
                    } else {
                        client_port
                    };
                    for (i, d) in reg.detectors.iter().enumerate() {
                        if d.proto() != proto && reg.registered_port(d.proto(), transport, port) {
                            running.remove(i);
                        }
                    }
                    let own = proto
                        .default_ports(transport)
                        .first()
                        .copied()
                        .unwrap_or(port);
                    (proto, own, server_side)
                });
        let verdict = if running.is_empty() {
            Verdict::NoMatch
        } else {
            Verdict::Pending
        };
        Classifier {
            transport,
            client_port,
            server_port,
            running,
            verdict,
            winner: None,
            dir_count: [0; 2],
            total: 0,
            first_dir: None,
            saved: [Vec::new(), Vec::new()],
            lost: [0; 2],
            broken: [false; 2],
            deferred: None,
            configured,
        }
    }

    /// The current verdict.
    #[inline]
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// Detectors still in the running.
    pub fn running(&self) -> DetectorSet {
        self.running
    }

    /// Index of the detector that decided, if a detector did.
    pub fn winner(&self) -> Option<usize> {
        self.winner.map(usize::from)
    }

    /// Payloads seen so far in each direction (while pending).
    pub fn payloads(&self) -> [u32; 2] {
        self.dir_count
    }

    /// Probes one payload (TCP: the in-order bytes a segment contributed; UDP: one datagram). Empty payloads are
    /// ignored. Returns the verdict after it.
    pub fn feed(&mut self, reg: &Registry, dir: Direction, data: &[u8]) -> Verdict {
        if self.verdict != Verdict::Pending || data.is_empty() {
            return self.verdict;
        }
        let d = dir.index();
        let cfg = reg.config;
        if self.dir_count[d] >= cfg.max_payloads_per_dir {
            return self.verdict;
        }
        self.first_dir.get_or_insert(dir);
        let first_in_dir = self.dir_count[d] == 0;
        // Build the prefix the detectors see. TCP: on the first payload of a direction, the payload itself (no
        // copy); later, the saved stream start with this payload appended (capped).
        // After a gap the saved bytes stop: what follows is counted as lost for the replay.
        if self.transport == Transport::Tcp && !first_in_dir {
            if self.broken[d] {
                self.lost[d] = self.lost[d].saturating_add(data.len() as u64);
            } else {
                append_capped(&mut self.saved[d], &mut self.lost[d], data, cfg.prefix_cap);
            }
        }
        let (prefix, prev): (&[u8], &[u8]) = match self.transport {
            Transport::Tcp if !first_in_dir && !self.broken[d] => (&self.saved[d], &[]),
            Transport::Tcp => (data, &[]),
            Transport::Udp | Transport::Icmp | Transport::Other(_) => (data, &self.saved[d]),
        };
        let peer: &[u8] = self.saved.get(1 - d).map_or(&[], Vec::as_slice);
        let ctx = ProbeCtx {
            transport: self.transport,
            client_port: self.client_port,
            server_port: self.server_port,
            dir,
            payload_index: self.total,
            dir_index: self.dir_count[d],
            prefix,
            data,
            prev,
            peer,
        };
        // What the configured protocol's detectors see: the flow on that protocol's own port.
        let configured_ctx = self.configured.map(|(proto, own, server_side)| {
            let mut c = ctx;
            if server_side {
                c.server_port = own;
            } else {
                c.client_port = own;
            }
            (proto, c)
        });
        // Detectors that cannot accept this first byte are out without a call (TCP: the stream's first byte,
        // checked once per direction; UDP: every datagram's).
        if (first_in_dir || self.transport == Transport::Udp)
            && let Some(&b0) = prefix.first()
            && let Some(accept) = reg.by_first.get(usize::from(b0))
        {
            self.running.intersect(accept);
        }
        let mut running = self.running;
        let mut winner = None;
        // Detectors with the first say on this flow's port that were unsure of this payload (asked before any
        // detector they hold back, by rank).
        let mut first_say_unsure = false;
        for i in self.running.iter() {
            let Some(det) = reg.detectors.get(i) else {
                running.remove(i);
                continue;
            };
            let probe_ctx = match &configured_ctx {
                Some((proto, c)) if det.proto() == *proto => c,
                _ => &ctx,
            };
            match det.probe(probe_ctx) {
                Probe::Certain => {
                    if first_say_unsure && !reg.first_say(i, self) {
                        let held = Identified {
                            proto: det.proto(),
                            evidence: Evidence::Parser,
                            at_payload: self.total,
                        };
                        self.deferred.get_or_insert((i as u16, held));
                        continue;
                    }
                    winner = Some(i);
                    break;
                }
                Probe::Unsure => first_say_unsure |= reg.first_say(i, self),
                Probe::NotForUs => running.remove(i),
            }
        }
        let at = self.total;
        self.running = running;
        self.dir_count[d] += 1;
        self.total = self.total.saturating_add(1);
        if let Some(i) = winner.and_then(|i| reg.detectors.get(i).map(|det| (i, det))) {
            // A detector that was held back and is certain again decided when it was first certain.
            let at = match self.deferred.take() {
                Some((j, held)) if usize::from(j) == i.0 => held.at_payload,
                _ => at,
            };
            self.verdict = Verdict::Matched(Identified {
                proto: i.1.proto(),
                evidence: Evidence::Parser,
                at_payload: at,
            });
            self.winner = u16::try_from(i.0).ok();
            return self.verdict;
        }
        if self.deferred.is_some() && !self.running.iter().any(|i| reg.first_say(i, self)) {
            return self.end_probing();
        }
        if self.running.is_empty() || self.budget_spent(cfg.max_payloads_per_dir) {
            return self.end_probing();
        }
        // Still pending: remember what the next probe needs.
        match self.transport {
            Transport::Tcp if first_in_dir && self.broken[d] => {
                self.lost[d] = self.lost[d].saturating_add(data.len() as u64);
            }
            Transport::Tcp if first_in_dir => {
                append_capped(&mut self.saved[d], &mut self.lost[d], data, cfg.prefix_cap)
            }
            Transport::Tcp => {}
            Transport::Udp | Transport::Icmp | Transport::Other(_) => {
                self.saved[d].clear();
                self.saved[d].extend_from_slice(&data[..data.len().min(PREV_CAP)]);
            }
        }
        self.verdict
    }

    /// Probing ends: the detector that was held back wins (see [`Detector::port_first`]), else there is no match.
    fn end_probing(&mut self) -> Verdict {
        self.verdict = match self.deferred.take() {
            Some((i, held)) => {
                self.winner = Some(i);
                Verdict::Matched(held)
            }
            None => Verdict::NoMatch,
        };
        self.saved = [Vec::new(), Vec::new()];
        self.verdict
    }

    fn budget_spent(&self, max: u32) -> bool {
        let [a, b] = self.dir_count;
        // Both directions spent, or one spent while the other never carried a payload.
        let (sa, sb) = (a >= max, b >= max);
        (sa && (sb || b == 0)) || (sb && a == 0)
    }

    /// A TCP gap of `len` bytes in direction `dir` while pending: the saved prefix no longer continues, so later
    /// payloads of that direction are probed on their own.
    pub fn gap(&mut self, dir: Direction, len: u64) {
        if self.verdict == Verdict::Pending {
            self.broken[dir.index()] = true;
            self.lost[dir.index()] = self.lost[dir.index()].saturating_add(len);
        }
    }

    /// Sets the verdict from another source (a signature match, a port guess, an FTP data association). Ignored
    /// once the flow is identified.
    pub fn set_identified(&mut self, proto: AppProto, evidence: Evidence) {
        if !matches!(self.verdict, Verdict::Matched(Identified { .. })) {
            self.verdict = Verdict::Matched(Identified {
                proto,
                evidence,
                at_payload: self.total.saturating_sub(1),
            });
            self.winner = None;
        }
    }

    /// The flow ended (or the engine stops probing it): a pending verdict becomes `Unknown`.
    pub fn give_up(&mut self) -> Verdict {
        if self.verdict == Verdict::Pending {
            return self.end_probing();
        }
        self.verdict
    }

    /// The bytes of direction `dir` seen while pending, for replay to a parser: `(bytes, lost)` where `lost` is
    /// the count that did not fit the prefix cap or fell in a gap. TCP only; UDP returns nothing (datagrams are
    /// not replayed).
    fn replay(&self, dir: Direction) -> (&[u8], u64) {
        let d = dir.index();
        if self.transport == Transport::Udp {
            return (&[], 0);
        }
        (&self.saved[d], self.lost[d])
    }
}

fn append_capped(buf: &mut Vec<u8>, lost: &mut u64, data: &[u8], cap: usize) {
    let room = cap.saturating_sub(buf.len());
    let take = room.min(data.len());
    if let Some(head) = data.get(..take) {
        buf.extend_from_slice(head);
    }
    *lost = lost.saturating_add((data.len() - take) as u64);
}

/// A flow's application layer: the classifier, then the identified protocol's parser. This is what the engine
/// keeps per flow; it feeds every in-order payload (and gap) and gets events out.
///
/// On identification the parser first receives what the classifier saw (TCP: each direction's saved stream
/// start, direction of the flow's first payload first; bytes beyond the prefix cap are reported to the parser
/// as a gap), so a request split across segments before the flow was recognised is still parsed whole. For UDP
/// the parser starts with the datagram that decided.
pub struct FlowApp {
    classifier: Classifier,
    parser: Option<Box<dyn Parser>>,
    /// Parser stats of a parser that was dropped (none today; kept for symmetry with `stats`).
    done_stats: ParserStats,
}

impl std::fmt::Debug for FlowApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowApp")
            .field("classifier", &self.classifier)
            .field("parser", &self.parser.is_some())
            .finish()
    }
}

impl FlowApp {
    /// State for a new flow.
    pub fn new(reg: &Registry, transport: Transport, client_port: u16, server_port: u16) -> Self {
        FlowApp {
            classifier: Classifier::new(reg, transport, client_port, server_port),
            parser: None,
            done_stats: ParserStats::default(),
        }
    }

    /// The classifier (verdict, payload counts).
    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    /// The current verdict.
    pub fn verdict(&self) -> Verdict {
        self.classifier.verdict()
    }

    /// Whether a parser is attached (the flow was identified as a protocol that has one).
    pub fn has_parser(&self) -> bool {
        self.parser.is_some()
    }

    /// One in-order payload (TCP) or datagram (UDP).
    pub fn on_payload(
        &mut self,
        reg: &Registry,
        dir: Direction,
        data: &[u8],
        ts_ns: u64,
        out: &mut dyn EventSink,
    ) -> Verdict {
        if let Some(p) = self.parser.as_mut() {
            p.parse(dir, data, ts_ns, out);
            return self.classifier.verdict();
        }
        let before = self.classifier.verdict();
        let v = self.classifier.feed(reg, dir, data);
        if before == Verdict::Pending
            && let Verdict::Matched(Identified { proto, .. }) = v
        {
            self.attach(reg, proto, dir, data, ts_ns, out);
        }
        v
    }

    fn attach(
        &mut self,
        reg: &Registry,
        proto: AppProto,
        dir: Direction,
        data: &[u8],
        ts_ns: u64,
        out: &mut dyn EventSink,
    ) {
        let transport = self.classifier.transport;
        let parser = match self.classifier.winner().and_then(|i| reg.detectors.get(i)) {
            Some(det) => det.parser(transport, &reg.limits),
            None => reg.parser_for(proto, transport),
        };
        let Some(mut parser) = parser else { return };
        if transport == Transport::Udp {
            parser.parse(dir, data, ts_ns, out);
        } else {
            let first = self.classifier.first_dir.unwrap_or(dir);
            for d in [first, first.reverse()] {
                // The deciding payload of a direction's first segment was not copied: it is `data` itself.
                let (bytes, lost) = if d == dir && self.classifier.dir_count[d.index()] == 1 {
                    (data, 0)
                } else {
                    self.classifier.replay(d)
                };
                if !bytes.is_empty() {
                    parser.parse(d, bytes, ts_ns, out);
                }
                if lost > 0 {
                    parser.gap(d, lost);
                }
            }
        }
        self.classifier.saved = [Vec::new(), Vec::new()];
        self.parser = Some(parser);
    }

    /// Identification from another source (signature, port, association): attaches the protocol's parser, if it
    /// has one, from the next payload on.
    pub fn set_identified(&mut self, reg: &Registry, proto: AppProto, evidence: Evidence) {
        if matches!(
            self.classifier.verdict(),
            Verdict::Matched(Identified { .. })
        ) {
            return;
        }
        self.classifier.set_identified(proto, evidence);
        self.classifier.saved = [Vec::new(), Vec::new()];
        self.parser = reg.parser_for(proto, self.classifier.transport);
    }

    /// A reassembly gap of `len` bytes in `dir`.
    pub fn on_gap(&mut self, dir: Direction, len: u64) {
        match self.parser.as_mut() {
            Some(p) => p.gap(dir, len),
            None => self.classifier.gap(dir, len),
        }
    }

    /// The flow ended: flush the parser; a pending verdict becomes `Unknown`.
    pub fn finish(&mut self, out: &mut dyn EventSink) -> Verdict {
        if let Some(p) = self.parser.as_mut() {
            p.finish(out);
        }
        self.classifier.give_up()
    }

    /// The parser's counters (zero when no parser is attached).
    pub fn stats(&self) -> ParserStats {
        let mut s = self.done_stats;
        if let Some(p) = self.parser.as_ref() {
            s += p.stats();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A detector that is certain when the payload starts with its magic, unsure on empty-ish input.
    struct Magic(
        AppProto,
        &'static [u8],
        &'static [Transport],
        &'static [u16],
    );

    impl Detector for Magic {
        fn proto(&self) -> AppProto {
            self.0
        }
        fn transports(&self) -> &'static [Transport] {
            self.2
        }
        fn default_ports(&self, _t: Transport) -> &'static [u16] {
            self.3
        }
        fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
            let m = self.1;
            if ctx.prefix.len() < m.len() {
                if m.starts_with(ctx.prefix) {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            } else if ctx.prefix.starts_with(m) {
                Probe::Certain
            } else {
                Probe::NotForUs
            }
        }
    }

    const TCP: &[Transport] = &[Transport::Tcp];
    const BOTH: &[Transport] = &[Transport::Tcp, Transport::Udp];

    fn reg() -> Registry {
        Registry::new(
            vec![
                Box::new(Magic(AppProto::Ssh, b"SSH-", TCP, &[22])),
                Box::new(Magic(AppProto::Http, b"GET ", BOTH, &[80, 8080])),
                Box::new(Magic(AppProto::Tls, b"GEX", TCP, &[80, 443])),
            ],
            ClassifierConfig {
                max_payloads_per_dir: 3,
                prefix_cap: 16,
            },
            Limits::default(),
        )
    }

    /// Accepts only payloads starting with `Z`, and must never be asked about anything else.
    struct OnlyZ;

    impl Detector for OnlyZ {
        fn proto(&self) -> AppProto {
            AppProto::Ssh
        }
        fn transports(&self) -> &'static [Transport] {
            BOTH
        }
        fn first_bytes(&self) -> crate::ByteSet {
            crate::ByteSet::bytes(b"Z")
        }
        fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
            assert_eq!(
                ctx.prefix.first(),
                Some(&b'Z'),
                "called for a first byte it does not accept"
            );
            if ctx.prefix.len() >= 3 {
                Probe::Certain
            } else {
                Probe::Unsure
            }
        }
    }

    #[test]
    fn first_byte_filter_drops_without_calling() {
        let dets: Vec<Box<dyn Detector>> = vec![
            Box::new(OnlyZ),
            Box::new(Magic(AppProto::Http, b"GET ", BOTH, &[])),
        ];
        let r = Registry::new(dets, ClassifierConfig::default(), Limits::default());
        let mut c = Classifier::new(&r, Transport::Tcp, 1, 2);
        assert_eq!(c.feed(&r, Direction::ToServer, b"GE"), Verdict::Pending);
        assert!(!c.running().contains(0));
        let mut c = Classifier::new(&r, Transport::Tcp, 1, 2);
        assert_eq!(c.feed(&r, Direction::ToServer, b"Z"), Verdict::Pending);
        assert!(c.running().contains(0));
        // The other direction's stream start is checked too: OnlyZ stays only if both could be its.
        assert_eq!(c.feed(&r, Direction::ToClient, b"Q"), Verdict::NoMatch);
        let mut c = Classifier::new(&r, Transport::Udp, 1, 2);
        assert_eq!(c.feed(&r, Direction::ToServer, b"Z"), Verdict::Pending);
        assert_eq!(
            c.feed(&r, Direction::ToServer, b"x"),
            Verdict::NoMatch,
            "UDP: every datagram's first byte"
        );
        let mut c = Classifier::new(&r, Transport::Udp, 1, 2);
        c.feed(&r, Direction::ToServer, b"Z");
        assert_eq!(
            c.feed(&r, Direction::ToServer, b"ZZZ")
                .matched()
                .map(|i| i.proto),
            Some(AppProto::Ssh)
        );
    }

    #[test]
    fn detector_set_iterates_in_order() {
        let mut s = DetectorSet::EMPTY;
        for i in [0, 5, 63, 64, 130, 255, 256] {
            s.insert(i);
        }
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 5, 63, 64, 130, 255]);
        assert_eq!(s.len(), 6);
        s.remove(64);
        assert!(!s.contains(64));
        assert!(s.contains(130));
    }

    #[test]
    fn header_split_across_segments_is_found_through_the_prefix() {
        let r = reg();
        let mut c = Classifier::new(&r, Transport::Tcp, 40000, 8080);
        assert_eq!(c.feed(&r, Direction::ToServer, b"G"), Verdict::Pending);
        assert_eq!(c.feed(&r, Direction::ToServer, b"E"), Verdict::Pending);
        // SSH dropped out on the first byte; TLS ("GEX") is still in.
        assert_eq!(c.running().iter().collect::<Vec<_>>(), vec![1, 2]);
        let v = c.feed(&r, Direction::ToServer, b"T /");
        assert_eq!(
            v,
            Verdict::Matched(Identified {
                proto: AppProto::Http,
                evidence: Evidence::Parser,
                at_payload: 2
            })
        );
        // Later payloads do not change anything.
        assert_eq!(c.feed(&r, Direction::ToClient, b"SSH-2.0"), v);
    }

    #[test]
    fn all_not_for_us_is_unknown_at_once() {
        let r = reg();
        let mut c = Classifier::new(&r, Transport::Tcp, 1, 2);
        assert_eq!(
            c.feed(&r, Direction::ToServer, b"\x16\x03\x01"),
            Verdict::NoMatch
        );
    }

    #[test]
    fn budget_is_per_direction() {
        let r = reg();
        let mut c = Classifier::new(&r, Transport::Udp, 1, 2);
        // "GE" keeps HTTP unsure on UDP (TLS and SSH are TCP-only, so not even asked).
        for _ in 0..2 {
            assert_eq!(c.feed(&r, Direction::ToServer, b"GE"), Verdict::Pending);
        }
        // Third payload of a unidirectional flow spends the budget.
        assert_eq!(c.feed(&r, Direction::ToServer, b"GE"), Verdict::NoMatch);

        let mut c = Classifier::new(&r, Transport::Udp, 1, 2);
        for _ in 0..3 {
            c.feed(&r, Direction::ToServer, b"GE");
        }
        assert_eq!(c.verdict(), Verdict::NoMatch);
        let mut c = Classifier::new(&r, Transport::Udp, 1, 2);
        c.feed(&r, Direction::ToClient, b"GE");
        for _ in 0..5 {
            c.feed(&r, Direction::ToServer, b"GE");
        }
        // ToServer spent (3), ToClient has 1 of 3: still pending, and further ToServer payloads are not probed.
        assert_eq!(c.verdict(), Verdict::Pending);
        assert_eq!(c.payloads(), [3, 1]);
        c.feed(&r, Direction::ToClient, b"GE");
        assert_eq!(c.feed(&r, Direction::ToClient, b"GE"), Verdict::NoMatch);
    }

    #[test]
    fn prefix_is_capped() {
        let r = reg();
        let mut c = Classifier::new(&r, Transport::Tcp, 1, 2);
        assert_eq!(c.feed(&r, Direction::ToServer, b"G"), Verdict::Pending);
        let big = [b'x'; 100];
        c.feed(&r, Direction::ToServer, &big);
        assert_eq!(c.verdict(), Verdict::NoMatch);
        assert!(c.saved[0].is_empty(), "prefixes are freed once decided");
    }

    #[test]
    fn port_guess_prefers_server_port_and_first_registration() {
        let r = reg();
        assert_eq!(r.port_guess(Transport::Tcp, 22, 80), Some(AppProto::Http));
        assert_eq!(r.port_guess(Transport::Tcp, 22, 9999), Some(AppProto::Ssh));
        assert_eq!(r.port_guess(Transport::Udp, 22, 9999), None);
        assert_eq!(r.port_guess(Transport::Tcp, 443, 9999), Some(AppProto::Tls));
    }

    #[test]
    fn a_port_guess_the_payload_refuted_is_dropped() {
        let r = Registry::builtin();
        // No payload: the port is the only evidence.
        let quiet = Classifier::new(&r, Transport::Udp, 40000, 5353);
        assert_eq!(r.port_guess_unrefuted(&quiet), Some(AppProto::Mdns));
        // A datagram on 5353 whose header no DNS sender writes (opcode 13): MDNS said NotForUs.
        let mut c = Classifier::new(&r, Transport::Udp, 40000, 5353);
        let mut junk = vec![0xe3, 0xc3, 0xea, 0xc4, 0x70, 0x1b];
        junk.extend_from_slice(&[0x5a; 200]);
        c.feed(&r, Direction::ToServer, &junk);
        c.give_up();
        assert_eq!(
            r.port_guess(Transport::Udp, 40000, 5353),
            Some(AppProto::Mdns)
        );
        assert_eq!(r.port_guess_unrefuted(&c), None);
    }

    /// An SNMP v1 GetRequest (community `public`, sysDescr.0).
    const SNMP_GET: &[u8] = &[
        0x30, 0x26, 0x02, 0x01, 0x00, 0x04, 0x06, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0, 0x19,
        0x02, 0x01, 0x26, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x30, 0x0e, 0x30, 0x0c, 0x06, 0x08,
        0x2b, 0x06, 0x01, 0x02, 0x01, 0x01, 0x01, 0x00, 0x05, 0x00,
    ];

    /// A DNS query for `a.example`, type A.
    fn dns_query() -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(b"\x01a\x07example\x00");
        q.extend_from_slice(&[0, 1, 0, 1]);
        q
    }

    #[test]
    fn the_dns_port_skips_a_junk_datagram_before_queries() {
        let r = Registry::builtin();
        // Elsewhere the SNMP message is SNMP at once.
        let mut c = Classifier::new(&r, Transport::Udp, 40000, 161);
        assert_eq!(
            c.feed(&r, Direction::ToServer, SNMP_GET)
                .matched()
                .map(|i| i.proto),
            Some(AppProto::Snmp)
        );
        // On port 53 DNS has the first say: the junk waits, the query that follows names the flow.
        let mut c = Classifier::new(&r, Transport::Udp, 40000, 53);
        assert_eq!(c.feed(&r, Direction::ToServer, SNMP_GET), Verdict::Pending);
        let v = c.feed(&r, Direction::ToServer, &dns_query());
        assert_eq!(
            v.matched().map(|i| (i.proto, i.at_payload)),
            Some((AppProto::Dns, 1))
        );
    }

    #[test]
    fn a_protocol_held_back_on_the_dns_port_wins_when_dns_never_comes() {
        let r = Registry::builtin();
        // This message's first bytes also read as a sane DNS header (opcode 0, four questions), so DNS waits for
        // as long as the budget lasts; then SNMP, as decided on the first payload.
        let mut c = Classifier::new(&r, Transport::Udp, 40000, 53);
        let budget = r.config().max_payloads_per_dir;
        for _ in 1..budget {
            assert_eq!(c.feed(&r, Direction::ToServer, SNMP_GET), Verdict::Pending);
        }
        let v = c.feed(&r, Direction::ToServer, SNMP_GET);
        assert_eq!(
            v.matched().map(|i| (i.proto, i.at_payload)),
            Some((AppProto::Snmp, 0))
        );
        // An SNMPv3 discovery request (user `admin`), which DNS rules out after three junk datagrams (its "question
        // count" is 816): SNMP once DNS is out, as decided on the first payload.
        let v3: &[u8] = &[
            0x30, 0x40, 0x02, 0x01, 0x03, 0x30, 0x0f, 0x02, 0x03, 0x00, 0x91, 0xc8, 0x02, 0x02,
            0x05, 0xdc, 0x04, 0x01, 0x04, 0x02, 0x01, 0x03, 0x04, 0x15, 0x30, 0x13, 0x04, 0x00,
            0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x04, 0x05, b'a', b'd', b'm', b'i', b'n', 0x04,
            0x00, 0x04, 0x00, 0x30, 0x13, 0x04, 0x00, 0x04, 0x00, 0xa0, 0x0d, 0x02, 0x03, 0x00,
            0x91, 0xc8, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00, 0x30, 0x00,
        ];
        let mut c = Classifier::new(&r, Transport::Udp, 40000, 53);
        for _ in 0..3 {
            assert_eq!(c.feed(&r, Direction::ToServer, v3), Verdict::Pending);
        }
        assert_eq!(
            c.feed(&r, Direction::ToServer, v3)
                .matched()
                .map(|i| (i.proto, i.at_payload)),
            Some((AppProto::Snmp, 0))
        );
        // A flow that ends while DNS is still unsure goes to the held-back protocol too.
        let mut c = Classifier::new(&r, Transport::Udp, 40000, 53);
        c.feed(&r, Direction::ToServer, SNMP_GET);
        assert_eq!(c.give_up().matched().map(|i| i.proto), Some(AppProto::Snmp));
    }

    #[test]
    fn a_configured_detection_port_outranks_the_registered_one() {
        let q = dns_query();
        let name = |r: &Registry, t: Transport, sport: u16, dport: u16, data: &[u8]| {
            let mut c = Classifier::new(r, t, sport, dport);
            c.feed(r, Direction::ToServer, data)
                .matched()
                .map(|i| i.proto)
        };
        let plain = Registry::builtin();
        assert_eq!(
            name(&plain, Transport::Udp, 40000, 5353, &q),
            Some(AppProto::Mdns)
        );
        assert_eq!(name(&plain, Transport::Udp, 40000, 1053, &q), None);
        let r = Registry::builtin().with_detection_ports(&[
            (AppProto::Dns, Transport::Udp, 5353),
            (AppProto::Dns, Transport::Tcp, 1053),
        ]);
        assert_eq!(
            name(&r, Transport::Udp, 40000, 5353, &q),
            Some(AppProto::Dns)
        );
        assert_eq!(
            r.port_guess(Transport::Udp, 40000, 5353),
            Some(AppProto::Dns)
        );
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        assert_eq!(
            name(&r, Transport::Tcp, 40000, 1053, &framed),
            Some(AppProto::Dns)
        );
        // Only where configured: port 1053 is set for DNS over TCP, not over UDP.
        assert_eq!(name(&r, Transport::Udp, 40000, 1053, &q), None);
        assert!(!r.off_default_ports(AppProto::Dns, Transport::Udp, 40000, 5353));
    }

    #[test]
    fn a_flow_picked_up_from_a_dns_response_is_turned_around() {
        let r = Registry::builtin();
        let mut resp = dns_query();
        resp[2] |= 0x80; // QR: a response
        assert!(r.first_datagram_answers(53, 40000, &resp));
        // A query, a response towards port 53, junk from port 53, or a response from another port: as sent.
        assert!(!r.first_datagram_answers(53, 40000, &dns_query()));
        assert!(!r.first_datagram_answers(40000, 53, &resp));
        assert!(!r.first_datagram_answers(53, 40000, SNMP_GET));
        assert!(!r.first_datagram_answers(40001, 40000, &resp));
    }

    #[test]
    fn builtin_detectors_follow_their_records() {
        let by_module = builtin_detectors_by_module();
        for (module, d) in &by_module {
            let p = d.proto();
            assert_eq!(d.transports(), p.transports(), "{module}: {p:?}");
            for t in [Transport::Tcp, Transport::Udp] {
                assert_eq!(d.default_ports(t), p.default_ports(t), "{module}: {p:?}");
            }
        }
        // Every protocol a record registers is named by some detector, except FTP data connections, which the
        // engine names from the control connection's announcement.
        for &p in AppProto::ALL {
            if p == AppProto::Unknown || p == AppProto::FtpData {
                continue;
            }
            assert!(
                by_module.iter().any(|(_, d)| d.proto() == p),
                "{p:?} is registered but no detector names it"
            );
        }
    }

    #[test]
    fn builtin_registry_fits_the_set() {
        assert!(builtin_detectors().len() < MAX_DETECTORS);
        let r = Registry::builtin();
        assert_eq!(
            r.port_guess(Transport::Tcp, 50000, 443),
            Some(AppProto::Tls)
        );
        assert_eq!(r.port_guess(Transport::Udp, 50000, 53), Some(AppProto::Dns));
    }

    /// A TLS record: `16 03 01 LEN` + a minimal ClientHello carrying SNI `a.example`.
    fn client_hello() -> Vec<u8> {
        let sni = b"a.example";
        let mut ext = vec![0, 0];
        let list_len = 3 + sni.len();
        ext.extend_from_slice(&((list_len + 2) as u16).to_be_bytes());
        ext.extend_from_slice(&(list_len as u16).to_be_bytes());
        ext.push(0);
        ext.extend_from_slice(&(sni.len() as u16).to_be_bytes());
        ext.extend_from_slice(sni);
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.push(0); // session id
        body.extend_from_slice(&[0, 2, 0x13, 0x01]); // one cipher suite
        body.extend_from_slice(&[1, 0]); // null compression
        body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        body.extend_from_slice(&ext);
        let mut hs = vec![1, 0];
        hs.extend_from_slice(&(body.len() as u16).to_be_bytes());
        hs.extend_from_slice(&body);
        let mut rec = vec![0x16, 3, 1];
        rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        rec.extend_from_slice(&hs);
        rec
    }

    fn sni_of(events: &[crate::AppEvent]) -> Option<String> {
        events.iter().find_map(|e| match e {
            crate::AppEvent::Tls(t) => t.sni.clone(),
            _ => None,
        })
    }

    #[test]
    fn flow_app_replays_what_the_classifier_saw() {
        let reg = Registry::builtin();
        let ch = client_hello();
        // Split inside the record header: undecided after the first segment, identified on the second.
        for cut in 1..11 {
            let mut app = FlowApp::new(&reg, Transport::Tcp, 50000, 443);
            let mut out = Vec::new();
            assert_eq!(
                app.on_payload(&reg, Direction::ToServer, &ch[..cut], 0, &mut out),
                Verdict::Pending,
                "cut {cut}"
            );
            let v = app.on_payload(&reg, Direction::ToServer, &ch[cut..], 1, &mut out);
            assert_eq!(
                v.matched().map(|i| i.proto),
                Some(AppProto::Tls),
                "cut {cut}"
            );
            app.finish(&mut out);
            assert_eq!(sni_of(&out).as_deref(), Some("a.example"), "cut {cut}");
        }
        // An HTTP request whose method arrives one byte at a time.
        let req = b"GET /x HTTP/1.1\r\nHost: h.example\r\n\r\n";
        let mut app = FlowApp::new(&reg, Transport::Tcp, 50000, 80);
        let mut out = Vec::new();
        for (i, b) in req[..3].iter().enumerate() {
            assert_eq!(
                app.on_payload(&reg, Direction::ToServer, &[*b], i as u64, &mut out),
                Verdict::Pending
            );
        }
        assert_eq!(
            app.on_payload(&reg, Direction::ToServer, &req[3..], 3, &mut out)
                .matched()
                .map(|i| i.proto),
            Some(AppProto::Http)
        );
        assert!(app.has_parser());
        app.on_payload(
            &reg,
            Direction::ToClient,
            b"HTTP/1.1 204 No Content\r\n\r\n",
            4,
            &mut out,
        );
        app.finish(&mut out);
        let [crate::AppEvent::Http(h)] = out.as_slice() else {
            panic!("{out:?}")
        };
        assert_eq!(
            (h.http_method.as_deref(), h.hostname.as_deref(), h.status),
            (Some("GET"), Some("h.example"), Some(204))
        );
    }

    #[test]
    fn replay_beyond_the_prefix_cap_is_a_gap() {
        // A 20-byte prefix: enough to see the request line, not the whole head.
        let cfg = ClassifierConfig {
            max_payloads_per_dir: 10,
            prefix_cap: 20,
        };
        let reg = Registry::new(builtin_detectors(), cfg, Limits::default());
        let mut app = FlowApp::new(&reg, Transport::Tcp, 50000, 80);
        let mut out = Vec::new();
        assert_eq!(
            app.on_payload(&reg, Direction::ToServer, b"G", 0, &mut out),
            Verdict::Pending
        );
        let v = app.on_payload(
            &reg,
            Direction::ToServer,
            b"ET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
            1,
            &mut out,
        );
        assert_eq!(v.matched().map(|i| i.proto), Some(AppProto::Http));
        // The parser got the 20 saved bytes, then a gap for the rest: it cannot trust the head and says so. The
        // request line had arrived whole, so its transaction is logged with what the line holds.
        assert_eq!(app.stats().gave_up, 1);
        app.finish(&mut out);
        let [crate::AppEvent::Http(h)] = out.as_slice() else {
            panic!("{out:?}")
        };
        assert_eq!(
            (
                h.http_method.as_deref(),
                h.url.as_deref(),
                h.hostname.as_deref()
            ),
            (Some("GET"), Some("/"), None)
        );
    }

    #[test]
    fn set_identified_attaches_the_parser() {
        let reg = Registry::builtin();
        let mut app = FlowApp::new(&reg, Transport::Tcp, 50000, 8443);
        app.set_identified(&reg, AppProto::Tls, Evidence::Signature);
        assert!(app.has_parser());
        let mut out = Vec::new();
        app.on_payload(&reg, Direction::ToServer, &client_hello(), 0, &mut out);
        app.finish(&mut out);
        assert_eq!(sni_of(&out).as_deref(), Some("a.example"));
        assert!(matches!(
            app.verdict(),
            Verdict::Matched(Identified {
                evidence: Evidence::Signature,
                ..
            })
        ));
    }
}
