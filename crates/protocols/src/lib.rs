//! # Application protocol identification and parsing
//!
//! Each protocol lives in its own module and implements [`Detector`]: given one payload of a connection that is
//! not yet identified, it answers [`Probe::Certain`], [`Probe::Unsure`] or [`Probe::NotForUs`] (Retina's
//! three-valued probing, which is the L7-filter's MATCHED / NO_MATCH_YET / NO_MATCH as an interface). The engine's
//! per-flow [`Classifier`] asks every detector still in the running until one is certain, all are out, or a
//! payload budget is spent; [`FlowApp`] adds the parser hand-over on top.
//!
//! Once a flow is identified, a protocol may provide a [`Parser`] that sees the rest of the flow (in order, per
//! direction, as it leaves TCP reassembly; or datagram by datagram for UDP) and emits [`AppEvent`]s: HTTP
//! transactions, TLS handshakes, DNS messages. Parsers are allocated once per flow, never per packet, and every
//! buffer they keep has a byte cap (see [`Limits`]) with a counter for what the cap cut ([`ParserStats`]).
//!
//! ## Why this shape
//! * **Probing is cheap when it fails.** The ANCS'10 paper measures an unknown protocol at ~600 cycles per packet
//!   and a compressed HTTP body at ~30,000: identification must not make the common "not mine" answer expensive.
//!   Detectors are stateless (`&self`), see only borrowed bytes, and most answer `NotForUs` from the first few
//!   bytes; the classifier keeps the survivors in a fixed-size bitset ([`registry::DetectorSet`]) so a flow never
//!   asks a detector twice after a `NotForUs`, and nothing is allocated per packet.
//! * **Parsers are streaming.** Data may be split at any byte (TCP segments, reassembly output); every parser is a
//!   state machine over what it has seen, buffering only what a record/header needs, up to a cap.
//! * **Events carry Suricata's EVE field names** (`http.hostname`, `tls.sni`, `dns.rrname`, ...) so the sinks can
//!   serialise them as they are: `AppEvent` serialises as `{"<event_type>": {...}}`, the sink adds the envelope
//!   (`timestamp`, `flow_id`, addresses, `event_type` from [`AppEvent::event_type`]).
//! * **HTTP buffers for the rules engine** go through [`EventSink::http_buffer`] as soon as each part is complete
//!   (request line and headers, request body, response headers, decompressed response body), so content rules on
//!   `http.uri` / `http.host` / `http.response_body` run without a second HTTP parser.
//!
//! Names follow nDPI (`HTTP`, `TLS`, `QUIC`, `DNS`, `SSH`, ...), so results compare with nDPI's ground truth.

pub mod registry;
pub mod risk;

pub mod dns;
pub mod http;
pub mod quic;
pub mod tls;

// The extra protocol modules, beyond the core four (see `extra.rs` for their probing order).
pub mod application;
pub mod avast;
pub mod bacnet;
pub mod bgp;
pub mod bitcoin;
pub mod bittorrent;
pub mod bjnp;
pub mod cassandra;
pub mod checkmk;
pub mod citrix;
pub mod coap;
pub mod dcerpc;
pub mod dhcp;
pub mod discord;
pub mod dnp3;
pub mod dnscrypt;
pub mod dropbox;
pub mod elasticsearch;
pub mod ethereum;
pub mod ethernetip;
pub mod extra;
pub mod fastcgi;
pub mod fix;
pub mod ftp;
pub mod gearman;
pub mod giop;
pub mod git;
pub mod gnutella;
pub mod haproxy;
pub mod hislip;
pub mod hl7;
pub mod hpvirtgrp;
pub mod http2;
pub mod ipsec;
pub mod irc;
pub mod jabber;
pub mod jrmi;
pub mod kafka;
pub mod kcp;
pub mod kerberos;
pub mod knxnet;
pub mod ldap;
pub mod ldp;
pub mod mail;
pub mod modbus;
pub mod monero;
pub mod mqtt;
pub mod munin;
pub mod natpmp;
pub mod nats;
pub mod netbios;
pub mod netflow;
pub mod nntp;
pub mod ntp;
pub mod oicq;
pub mod openflow;
pub mod openvpn;
pub mod oracle;
pub mod pptp;
pub mod ptp;
pub mod radius;
pub mod raknet;
pub mod rdp;
pub mod redis;
pub mod ripe_atlas;
pub mod rmcp;
pub mod rsh;
pub mod rsync;
pub mod rtp;
pub mod rtps;
pub mod rtsp;
mod scan;
pub mod sflow;
pub mod sip;
pub mod slp;
pub mod smb;
pub mod snmp;
pub mod socks;
pub mod someip;
pub mod source_engine;
pub mod spotify;
pub mod sql;
pub mod ssdp;
pub mod ssh;
pub mod stomp;
pub mod stratum;
pub mod stun;
pub mod syncthing;
pub mod syslog;
pub mod teamspeak;
pub mod telegram;
pub mod telnet;
pub mod teredo;
pub mod tivo;
pub mod tocaboca;
pub mod tuya;
pub mod ubntac2;
pub mod whatsapp;
pub mod wireguard;
pub mod wsd;
pub mod zabbix;

#[cfg(test)]
mod testkit;

pub use flowbundle_types::{AppProto, Direction, HttpBuffer, Transport};
pub use registry::{Classifier, ClassifierConfig, FlowApp, Identified, Registry, Verdict};

/// Everything a detector may look at for one payload.
#[derive(Clone, Copy, Debug)]
pub struct ProbeCtx<'a> {
    pub transport: Transport,
    /// Port of the client (connection initiator) and of the server.
    pub client_port: u16,
    pub server_port: u16,
    pub dir: Direction,
    /// 0-based index of this payload among the flow's payload-carrying packets (both directions).
    pub payload_index: u32,
    /// 0-based index of this payload among the payloads of its direction.
    pub dir_index: u32,
    /// For TCP: the in-order stream bytes of this direction seen so far, *including* `data` at its end, capped
    /// at [`ClassifierConfig::prefix_cap`] bytes (so a detector sees a header split across segments).
    /// For UDP: equal to `data`.
    pub prefix: &'a [u8],
    /// This packet's payload (TCP: the in-order bytes it contributed).
    pub data: &'a [u8],
    /// For UDP: the previous datagram in this direction (its first [`registry::PREV_CAP`] bytes), empty for the
    /// first one; lets a detector check continuity (RTP sequence numbers) without per-flow detector state.
    /// For TCP: empty (use `prefix`).
    pub prev: &'a [u8],
}

impl ProbeCtx<'_> {
    /// Whether either end of the connection uses `port` (protocols detected only on their well-known ports, such as
    /// DNS, test this rather than the server port: a flow may be picked up from its reply).
    #[inline]
    pub fn either_port_is(&self, port: u16) -> bool {
        self.server_port == port || self.client_port == port
    }
}

/// A set of byte values (256 bits), built at compile time: what a detector accepts as a payload's first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ByteSet(pub [u64; 4]);

impl ByteSet {
    /// Every byte.
    pub const ALL: ByteSet = ByteSet([u64::MAX; 4]);
    /// No byte.
    pub const NONE: ByteSet = ByteSet([0; 4]);

    /// The bytes in the inclusive ranges `(lo, hi)`.
    pub const fn ranges(ranges: &[(u8, u8)]) -> ByteSet {
        let mut words = [0u64; 4];
        let mut i = 0;
        while i < ranges.len() {
            let (lo, hi) = ranges[i];
            let mut b = lo as usize;
            while b <= hi as usize {
                words[b / 64] |= 1 << (b % 64);
                b += 1;
            }
            i += 1;
        }
        ByteSet(words)
    }

    /// The given bytes.
    pub const fn bytes(list: &[u8]) -> ByteSet {
        let mut words = [0u64; 4];
        let mut i = 0;
        while i < list.len() {
            let b = list[i] as usize;
            words[b / 64] |= 1 << (b % 64);
            i += 1;
        }
        ByteSet(words)
    }

    /// Whether `b` is in the set.
    #[inline]
    pub const fn contains(&self, b: u8) -> bool {
        self.0[(b / 64) as usize] & (1 << (b % 64)) != 0
    }
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

impl Probe {
    /// A flow that must open with the fixed bytes `magic`: `Certain` once `data` starts with them, `Unsure` while
    /// `data` is still a prefix of them, `NotForUs` otherwise.
    pub fn magic(data: &[u8], magic: &[u8]) -> Probe {
        if data.starts_with(magic) {
            Probe::Certain
        } else if magic.starts_with(data) {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

/// Recognises one application protocol from a connection's first payloads.
///
/// A detector is shared by every flow (and every worker thread), so it holds no per-flow state; what it needs
/// from earlier packets is in [`ProbeCtx::prefix`] (TCP) or [`ProbeCtx::prev`] (UDP).
pub trait Detector: Send + Sync {
    /// The protocol this detector recognises.
    fn proto(&self) -> AppProto;
    /// Transports on which the protocol runs.
    fn transports(&self) -> &'static [Transport];
    /// Judge one payload. Must not panic on any bytes and should answer `NotForUs` from as few bytes as it can.
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe;
    /// Well-known ports for the port-guess table (nDPI's defaults), per transport. A guess is only evidence
    /// when payload inspection gave nothing.
    fn default_ports(&self, transport: Transport) -> &'static [u16] {
        let _ = transport;
        &[]
    }
    /// The first bytes this detector can answer anything but `NotForUs` to: for TCP the first byte of either
    /// direction's stream, for UDP the first byte of any datagram. The classifier drops the detector without
    /// calling it when a payload starts otherwise, so declaring this makes an unknown protocol cheaper to rule
    /// out. The default, [`ByteSet::ALL`], never drops.
    fn first_bytes(&self) -> ByteSet {
        ByteSet::ALL
    }
    /// A parser for the rest of an identified flow, if the protocol has one.
    fn parser(&self, transport: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        let _ = (transport, limits);
        None
    }
}

/// Parses an identified flow's payloads and emits events.
pub trait Parser: Send {
    /// In-order bytes (TCP) or one datagram (UDP) in direction `dir`, captured at `ts_ns`.
    fn parse(&mut self, dir: Direction, data: &[u8], ts_ns: u64, out: &mut dyn EventSink);
    /// `len` bytes in direction `dir` will never arrive (a reassembly gap). Parsers resynchronise or give up.
    fn gap(&mut self, dir: Direction, len: u64) {
        let _ = (dir, len);
    }
    /// The flow ended; flush anything pending (e.g. an HTTP response body without a length).
    fn finish(&mut self, out: &mut dyn EventSink) {
        let _ = out;
    }
    /// What the parser's caps cut and what it could not parse, for the engine's counters.
    fn stats(&self) -> ParserStats {
        ParserStats::default()
    }
}

/// Counters a parser keeps so that no cap cuts silently. Summed by the engine into its stats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ParserStats {
    /// Bytes the parser skipped because a buffer cap was reached (header blocks, records, bodies).
    pub bytes_cut: u64,
    /// Body bytes not inspected because a decompression output cap was reached: compressed input no longer fed
    /// to the inflater plus inflated output beyond the cap.
    pub decompress_cut: u64,
    /// Messages (requests, records, datagrams) the parser could not make sense of.
    pub malformed: u64,
    /// Times the parser gave up on a direction (after a gap or garbage) and stopped parsing it.
    pub gave_up: u64,
}

impl std::ops::AddAssign for ParserStats {
    fn add_assign(&mut self, o: Self) {
        self.bytes_cut += o.bytes_cut;
        self.decompress_cut += o.decompress_cut;
        self.malformed += o.malformed;
        self.gave_up += o.gave_up;
    }
}

/// Byte caps for parsers. One value is shared by every flow; a parser copies what it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest HTTP request line + header block kept per message (Suricata's `request-hdr-limit` is 16 KiB).
    pub http_header_cap: usize,
    /// Request body bytes kept for `http.request_body` (Suricata `request-body-limit`: 100 KiB).
    pub http_request_body_cap: usize,
    /// Response body bytes kept for `http.response_body`, *after* decompression (Suricata `response-body-limit`).
    pub http_response_body_cap: usize,
    /// Whether to decompress gzip/deflate response bodies (the expensive part of HTTP inspection).
    pub http_decompress: bool,
    /// Largest TLS handshake message reassembled (ClientHello/ServerHello; certificates are skipped past this).
    pub tls_handshake_cap: usize,
    /// Largest DNS-over-TCP message buffered.
    pub dns_tcp_cap: usize,
    /// Most resource records decoded per DNS message section (the rest is counted, not decoded).
    pub dns_max_records: usize,
    /// Bytes of QUIC CRYPTO data reassembled from Initial packets to find the ClientHello.
    pub quic_crypto_cap: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            http_header_cap: 16 * 1024,
            http_request_body_cap: 100 * 1024,
            http_response_body_cap: 100 * 1024,
            http_decompress: true,
            tls_handshake_cap: 64 * 1024,
            dns_tcp_cap: 65_537,
            dns_max_records: 64,
            quic_crypto_cap: 16 * 1024,
        }
    }
}

/// How a flow's application protocol was decided. The classifier only ever produces `Parser` (a detector was
/// certain from payload); the engine adds the other two from its signature engine and the port table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// A built-in detector recognised the payload.
    Parser,
    /// An L7-filter signature matched.
    Signature,
    /// Nothing in the payload; the server port is the protocol's well-known port.
    Port,
}

/// Where parsers put their events. The engine implements it (it adds flow ids and timestamps).
pub trait EventSink {
    /// One application event (EVE `http`, `tls`, `dns`, ...).
    fn event(&mut self, event: AppEvent);
    /// One HTTP buffer of transaction `tx_id` (0-based per flow), delivered once, as soon as it is complete. The
    /// default ignores it; the engine forwards it to the rules engine.
    fn http_buffer(&mut self, tx_id: u64, buffer: HttpBuffer, data: &[u8]) {
        let _ = (tx_id, buffer, data);
    }
}

impl EventSink for Vec<AppEvent> {
    fn event(&mut self, event: AppEvent) {
        self.push(event);
    }
}

/// An application-layer event. Serialises as `{"<event_type>": {...}}` with Suricata's EVE field names inside, so a
/// sink writes it as it is next to the envelope fields.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AppEvent {
    /// An HTTP/1.x transaction (request, and response when there was one).
    Http(http::HttpEvent),
    /// A TLS (or DTLS) handshake: ClientHello and ServerHello fields.
    Tls(tls::TlsEvent),
    /// A QUIC Initial's cleartext and decrypted ClientHello fields.
    Quic(quic::QuicEvent),
    /// One DNS message (query or answer; mDNS and LLMNR too).
    Dns(dns::DnsEvent),
    /// An SSH version exchange: client and server software (EVE `ssh`).
    Ssh(ssh::SshEvent),
    /// An FTP data connection announced on the control connection (EVE `ftp`, plus the expected endpoint).
    Ftp(ftp::FtpEvent),
    /// Free-form metadata for protocols without a dedicated event type: (key, value) pairs.
    Meta {
        proto: AppProto,
        fields: Vec<(String, String)>,
    },
}

impl AppEvent {
    /// The EVE `event_type` (and the key under which the event's fields sit).
    pub fn event_type(&self) -> &'static str {
        match self {
            AppEvent::Http(_) => "http",
            AppEvent::Tls(_) => "tls",
            AppEvent::Quic(_) => "quic",
            AppEvent::Dns(_) => "dns",
            AppEvent::Ssh(_) => "ssh",
            AppEvent::Ftp(_) => "ftp",
            AppEvent::Meta { .. } => "meta",
        }
    }
}

#[cfg(test)]
mod eve_tests {
    use super::*;

    /// Events serialise as `{"<event_type>": {...}}` with Suricata's field names inside.
    #[test]
    fn events_carry_suricata_field_names() {
        let http = AppEvent::Http(http::HttpEvent {
            tx_id: 3,
            hostname: Some("example.com".into()),
            url: Some("/".into()),
            http_user_agent: Some("ua".into()),
            http_method: Some("GET".into()),
            protocol: Some("HTTP/1.1".into()),
            status: Some(200),
            length: 12,
            ..http::HttpEvent::default()
        });
        assert_eq!(http.event_type(), "http");
        let v = serde_json::to_value(&http).unwrap();
        let o = v["http"].as_object().unwrap();
        for k in [
            "hostname",
            "url",
            "http_user_agent",
            "http_method",
            "protocol",
            "status",
            "length",
        ] {
            assert!(o.contains_key(k), "http.{k} missing: {v}");
        }
        assert!(!o.contains_key("tx_id"), "tx_id is an envelope field");
        assert!(!o.contains_key("http_refer"), "absent fields are omitted");

        let tls = AppEvent::Tls(tls::TlsEvent {
            sni: Some("example.com".into()),
            version: "TLS 1.3".into(),
            ja3: Some(tls::Ja3 {
                hash: "h".into(),
                string: "s".into(),
            }),
            ..tls::TlsEvent::default()
        });
        let v = serde_json::to_value(&tls).unwrap();
        assert_eq!(v["tls"]["sni"], "example.com");
        assert_eq!(v["tls"]["version"], "TLS 1.3");
        assert_eq!(v["tls"]["ja3"]["hash"], "h");

        let dns = AppEvent::Dns(dns::DnsEvent {
            kind: "query".into(),
            id: 7,
            rrname: Some("a.b".into()),
            ..dns::DnsEvent::default()
        });
        let v = serde_json::to_value(&dns).unwrap();
        assert_eq!(
            (v["dns"]["type"].as_str(), v["dns"]["id"].as_u64()),
            (Some("query"), Some(7))
        );

        let quic = AppEvent::Quic(quic::QuicEvent {
            version: "1".into(),
            sni: Some("q".into()),
            ..quic::QuicEvent::default()
        });
        let v = serde_json::to_value(&quic).unwrap();
        assert_eq!(
            (v["quic"]["version"].as_str(), v["quic"]["sni"].as_str()),
            (Some("1"), Some("q"))
        );
        assert_eq!(quic.event_type(), "quic");
    }
}
