//! # Application protocol identification and parsing
//!
//! Each protocol lives in its own module and implements [`Detector`]: given one payload of a connection that is
//! not yet identified, it answers [`Probe::Certain`], [`Probe::Unsure`] or [`Probe::NotForUs`] (Retina's
//! three-valued probing, which is the L7-filter's MATCHED / NO_MATCH_YET / NO_MATCH as an interface). The engine's
//! per-flow [`Classifier`](registry) asks every detector still in the running until one is certain, all are out,
//! or a packet budget is spent.
//!
//! Once a flow is identified, a protocol may provide a [`Parser`] that sees the rest of the flow (in order, per
//! direction, as it leaves TCP reassembly; or datagram by datagram for UDP) and emits [`AppEvent`]s: HTTP
//! transactions, TLS handshakes, DNS messages. Parsers are allocated once per flow, never per packet, and every
//! buffer they keep has a byte cap.
//!
//! Names follow nDPI (`HTTP`, `TLS`, `QUIC`, `DNS`, `SSH`, ...), so results compare with nDPI's ground truth.

pub mod proto;
pub mod registry;

pub use proto::AppProto;

/// Which way a payload travels, relative to the connection's client (the side that opened it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Dir {
    ToServer,
    ToClient,
}

/// Transport carrying the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Transport {
    Tcp,
    Udp,
}

/// Everything a detector may look at for one payload.
#[derive(Clone, Copy, Debug)]
pub struct ProbeCtx<'a> {
    pub transport: Transport,
    /// Port of the client (connection initiator) and of the server.
    pub client_port: u16,
    pub server_port: u16,
    pub dir: Dir,
    /// 0-based index of this payload among the flow's payload-carrying packets (both directions).
    pub payload_index: u32,
    /// For TCP: the in-order stream bytes of this direction seen so far, *including* `data` at its end, capped
    /// at a small prefix (see `registry::PROBE_PREFIX`). Lets a detector see a header split across segments.
    /// For UDP: equal to `data`.
    pub prefix: &'a [u8],
    /// This packet's payload (TCP: the in-order bytes it contributed).
    pub data: &'a [u8],
}

/// A detector's answer for one payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// This flow is the detector's protocol.
    Certain,
    /// Cannot tell yet: ask again with the next payload.
    Unsure,
    /// Not this protocol; do not ask again for this flow.
    NotForUs,
}

/// Recognises one application protocol from a connection's first payloads.
pub trait Detector: Send + Sync {
    /// The protocol this detector recognises.
    fn proto(&self) -> AppProto;
    /// Transports on which the protocol runs.
    fn transports(&self) -> &'static [Transport];
    /// Judge one payload.
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe;
    /// A parser for the rest of an identified flow, if the protocol has one.
    fn parser(&self) -> Option<Box<dyn Parser>> {
        None
    }
}

/// Parses an identified flow's payloads and emits events.
pub trait Parser: Send {
    /// In-order bytes (TCP) or one datagram (UDP) in direction `dir`, captured at `ts_ns`.
    fn parse(&mut self, dir: Dir, data: &[u8], ts_ns: u64, out: &mut dyn EventSink);
    /// `len` bytes in direction `dir` will never arrive (a reassembly gap). Parsers resynchronise or give up.
    fn gap(&mut self, dir: Dir, len: u64) {
        let _ = (dir, len);
    }
    /// The flow ended; flush anything pending (e.g. an HTTP response body without a length).
    fn finish(&mut self, out: &mut dyn EventSink) {
        let _ = out;
    }
}

/// Where parsers put their events. The engine implements it (it adds flow ids and timestamps).
pub trait EventSink {
    fn event(&mut self, event: AppEvent);
}

impl EventSink for Vec<AppEvent> {
    fn event(&mut self, event: AppEvent) {
        self.push(event);
    }
}

/// An application-layer event. Field names inside each variant follow Suricata's EVE JSON so a sink can
/// serialise them as they are. (Filled in by the protocol modules.)
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum AppEvent {
    /// Free-form metadata for protocols without a dedicated event type: (key, value) pairs.
    Meta { proto: AppProto, fields: Vec<(String, String)> },
}
