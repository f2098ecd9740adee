//! Kerberos v5 (RFC 4120): nDPI's `Kerberos`, Suricata's `krb5`.
//!
//! Messages are DER: an application tag (AS-REQ 10 = `0x6a`, AS-REP `0x6b`, TGS-REQ `0x6c`, TGS-REP `0x6d`,
//! AP-REQ `0x6e`, AP-REP `0x6f`, KRB-ERROR `0x7e`), a SEQUENCE, then the protocol version number 5 as the first
//! field (`[0]` or `[1]` `INTEGER 5`). Over TCP a 4-byte record marker (the length, high bit reserved) precedes
//! each message. The tag, the lengths and `pvno = 5` are checked: certain from one message.
//!
//! **Parser.** One transaction per message, as Suricata counts them: a datagram on UDP, a record on TCP. Each
//! message's type goes to the rules (`krb5_msg_type`) through [`EventSink::krb5_message`]; a KDC message (AS-REQ,
//! TGS-REQ, AS-REP, TGS-REP, KRB-ERROR) is read whole ([`message`], over the bounded DER reader [`der`]) into a
//! [`Krb5Event`]: Suricata's EVE `krb5` fields (message type, the request a KRB-ERROR answers, the error code,
//! client and server names, realm, encryption types and whether they are weak) and, for the rules, the names'
//! components (`krb5.cname`, `krb5.sname`), the error code (`krb5_err_code`) and the ticket's encryption type
//! (`krb5.ticket_encryption`). A reply whose own encryption type is weak raises `krb5.weak_encryption`
//! ([`AppLayerEvent::Krb5WeakEncryption`]), as Suricata does.
//!
//! **Bounds.** A TCP record is buffered up to [`MAX_RECORD`] bytes; a longer one is typed from its first [`HEAD`]
//! bytes and skipped (counted in [`ParserStats::bytes_cut`]). A message that does not parse is counted
//! ([`ParserStats::malformed`]).

pub mod der;
pub mod message;

use crate::scan::be32;
use crate::snmp::ber_header;
use crate::{
    AppEvent, AppLayerEvent, AppLayerEvents, AppProto, Detector, Direction, EventSink, Limits,
    Parser, ParserStats, Probe, ProbeCtx, Transport,
};
use flowbundle_types::krb5 as names;
use message::{Krb5Message, Principal};

/// Bytes of a record too long to keep that are read to type it (tag, lengths, the SEQUENCE header and `pvno`).
pub const HEAD: usize = 16;
/// Longest TCP record kept whole (a TGS-REP with a large PAC runs to some kilobytes; Windows caps tickets at 64 KiB).
pub const MAX_RECORD: usize = 64 * 1024;

/// The message type of a Kerberos message (its application tag number), if `d` begins with one.
pub fn msg_type(d: &[u8]) -> Option<u8> {
    is_krb(d).then(|| d[0] & 0x1f)
}

/// One KDC message as Suricata's EVE `krb5` event writes it (absent names as `<empty>`, no encryption type as
/// `<none>`), with what the rules read beside it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Krb5Event {
    /// The transaction (one per message, numbered per flow). Not written.
    #[serde(skip)]
    pub tx_id: u64,
    /// The message travelled to the server. Not written.
    #[serde(skip)]
    pub to_server: bool,
    /// `KRB_AS_REQ`, `KRB_TGS_REP`, `KRB_ERROR`, ...
    pub msg_type: String,
    /// For a KRB-ERROR: the type of the request it answers (the flow's last), `UNKNOWN` when none was seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_request: Option<String>,
    /// For a KRB-ERROR: the error code's name (`KDC_ERR_PREAUTH_REQUIRED`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The client's name, components joined by `/`.
    pub cname: String,
    /// The realm (a request's, a reply's or error's client realm).
    pub realm: String,
    /// The server's name, components joined by `/`.
    pub sname: String,
    /// A reply's encryption type (`aes256-cts-hmac-sha1-96`).
    pub encryption: String,
    /// Whether that encryption type is weak or deprecated.
    pub weak_encryption: bool,
    /// A reply's ticket's encryption type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket_encryption: Option<String>,
    /// Whether the ticket's encryption type is weak.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket_weak_encryption: Option<bool>,
    /// The message as parsed (names' components, encryption type numbers, the error code). Not written.
    #[serde(skip)]
    pub message: Krb5Message,
}

impl Krb5Event {
    fn new(tx_id: u64, to_server: bool, m: Krb5Message, request: Option<u8>) -> Krb5Event {
        let name = |p: &Option<Principal>| {
            p.as_ref()
                .map_or_else(|| "<empty>".into(), Principal::joined)
        };
        let is_error = m.msg_type == message::KRB_ERROR;
        Krb5Event {
            tx_id,
            to_server,
            msg_type: names::msg_type_name(m.msg_type).into_owned(),
            failed_request: is_error.then(|| {
                request.map_or_else(
                    || "UNKNOWN".into(),
                    |r| names::msg_type_name(r).into_owned(),
                )
            }),
            error_code: m.error_code.map(|c| names::error_name(c).into_owned()),
            cname: name(&m.cname),
            realm: m.realm.as_ref().map_or_else(
                || "<empty>".into(),
                |r| String::from_utf8_lossy(r).into_owned(),
            ),
            sname: name(&m.sname),
            encryption: m
                .etype
                .map_or_else(|| "<none>".into(), |e| names::etype_name(e).into_owned()),
            weak_encryption: m.etype.is_some_and(names::weak_encryption),
            ticket_encryption: m.ticket_etype.map(|e| names::etype_name(e).into_owned()),
            ticket_weak_encryption: m.ticket_etype.map(names::weak_encryption),
            message: m,
        }
    }
}

/// One direction of a TCP flow: the record being read.
#[derive(Debug, Default)]
struct Record {
    /// The 4-byte record marker, as it arrives.
    len_buf: Vec<u8>,
    /// The record's bytes (all of them up to [`MAX_RECORD`], else its first [`HEAD`]).
    buf: Vec<u8>,
    /// Bytes of the record still to come.
    remaining: usize,
    /// The record is longer than [`MAX_RECORD`]: only its head is kept.
    too_long: bool,
    /// The record was reported (a long one as soon as its head is in).
    reported: bool,
}

/// Reads each message (see the module documentation).
struct KerberosParser {
    transport: Transport,
    sides: [Record; 2],
    /// Messages numbered per flow.
    next_tx: u64,
    /// The type of the flow's last request (AS-REQ, TGS-REQ, AP-REQ), for the KRB-ERROR that answers it.
    request: Option<u8>,
    stats: ParserStats,
}

impl KerberosParser {
    /// One message: `whole` when `d` holds all of it.
    fn report(&mut self, dir: Direction, d: &[u8], whole: bool, out: &mut dyn EventSink) {
        let Some(t) = msg_type(d) else {
            self.stats.malformed += 1;
            return;
        };
        let tx = self.next_tx;
        self.next_tx += 1;
        let to_server = dir == Direction::ToServer;
        out.krb5_message(tx, to_server, t);
        if !whole {
            return;
        }
        let Some(m) = message::parse(d) else {
            self.stats.malformed += 1;
            return;
        };
        if m.cut {
            self.stats.state_cut += 1;
        }
        let request = self.request;
        self.request = match t {
            message::AS_REQ | message::TGS_REQ | message::AP_REQ => Some(t),
            _ => None,
        };
        if matches!(t, message::AP_REQ | message::AP_REP) {
            return;
        }
        let weak = m.etype.is_some_and(names::weak_encryption);
        let anomalies = if weak {
            std::iter::once(AppLayerEvent::Krb5WeakEncryption).collect()
        } else {
            AppLayerEvents::EMPTY
        };
        let event = AppEvent::Krb5(Krb5Event::new(tx, to_server, m, request));
        out.event_with_anomalies(event, tx, to_server, anomalies);
    }
}

impl Parser for KerberosParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.transport != Transport::Tcp {
            self.report(dir, data, true, out);
            return;
        }
        let si = usize::from(dir != Direction::ToServer);
        let mut rest = data;
        while !rest.is_empty() {
            let r = &mut self.sides[si];
            if r.remaining == 0 {
                let take = (4 - r.len_buf.len()).min(rest.len());
                r.len_buf.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if r.len_buf.len() < 4 {
                    return;
                }
                // The high bit is reserved (RFC 4120 7.2.2).
                let len = be32(&r.len_buf, 0).unwrap_or(0) & 0x7fff_ffff;
                r.len_buf.clear();
                r.remaining = len as usize;
                r.buf.clear();
                r.too_long = r.remaining > MAX_RECORD;
                r.reported = false;
                continue;
            }
            // This record's bytes in the chunk: kept up to the cap, the rest skipped.
            let n = r.remaining.min(rest.len());
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            r.remaining -= n;
            if r.reported {
                self.stats.bytes_cut += n as u64;
                continue;
            }
            let cap = if r.too_long { HEAD } else { MAX_RECORD };
            let room = cap.saturating_sub(r.buf.len()).min(chunk.len());
            r.buf.extend_from_slice(&chunk[..room]);
            self.stats.bytes_cut += (chunk.len() - room) as u64;
            let whole = !r.too_long && r.remaining == 0;
            if whole || (r.too_long && r.buf.len() >= HEAD) || r.remaining == 0 {
                r.reported = true;
                let buf = std::mem::take(&mut r.buf);
                self.report(dir, &buf, whole, out);
                // Keep the allocation for the next record.
                let r = &mut self.sides[si];
                r.buf = buf;
                r.buf.clear();
            }
        }
    }

    fn gap(&mut self, dir: Direction, _len: u64) {
        // The record boundary is lost: read the next data as a new record.
        self.sides[usize::from(dir != Direction::ToServer)] = Record::default();
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}

/// Whether `d` starts with a Kerberos message (not necessarily complete).
pub fn is_krb(d: &[u8]) -> bool {
    let Some((tag, _, h)) = ber_header(d) else {
        return false;
    };
    if !matches!(tag, 0x6a..=0x6f | 0x7e) {
        return false;
    }
    let Some((seq, _, h2)) = d.get(h..).and_then(ber_header) else {
        return false;
    };
    let Some(rest) = d.get(h + h2..) else {
        return false;
    };
    // [0] or [1] (context tags a0/a1), length 3, INTEGER length 1 value 5.
    seq == 0x30
        && rest.len() >= 5
        && matches!(rest[0], 0xa0 | 0xa1)
        && rest[1..5] == [0x03, 0x02, 0x01, 0x05]
}

/// Detector for Kerberos over UDP and TCP.
pub struct KerberosDetector;

impl Detector for KerberosDetector {
    fn proto(&self) -> AppProto {
        AppProto::Kerberos
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.transport {
            Transport::Icmp | Transport::Other(_) => Probe::NotForUs,
            Transport::Udp => {
                if is_krb(ctx.data) {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            Transport::Tcp => {
                let p = ctx.prefix;
                let Some(len) = be32(p, 0) else {
                    return if p.first().is_none_or(|&b| b == 0) {
                        Probe::Unsure
                    } else {
                        Probe::NotForUs
                    };
                };
                if !(20..=1 << 20).contains(&len) {
                    return Probe::NotForUs;
                }
                if p.len() < 16 {
                    return Probe::Unsure;
                }
                if is_krb(&p[4..]) {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
        }
    }
    fn parser(&self, transport: Transport, _limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(KerberosParser {
            transport,
            sides: [Record::default(), Record::default()],
            next_tx: 0,
            request: None,
            stats: ParserStats::default(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    // Start of an AS-REQ (kerberos-login.pcap): 6a 81 e6, 30 81 e3, a1 03 02 01 05, a2 03 02 01 0a ...
    const AS_REQ: &[u8] = &[
        0x6a, 0x81, 0xe6, 0x30, 0x81, 0xe3, 0xa1, 0x03, 0x02, 0x01, 0x05, 0xa2, 0x03, 0x02, 0x01,
        0x0a, 0xa3, 0x00,
    ];

    #[derive(Default)]
    struct Msgs(Vec<(u64, bool, u8)>);
    impl EventSink for Msgs {
        fn event(&mut self, _: crate::AppEvent) {}
        fn krb5_message(&mut self, tx_id: u64, to_server: bool, msg_type: u8) {
            self.0.push((tx_id, to_server, msg_type));
        }
    }

    #[test]
    fn message_types_over_udp_and_tcp_records() {
        let mut udp = KerberosDetector
            .parser(Transport::Udp, &Limits::default())
            .unwrap();
        let mut m = Msgs::default();
        udp.parse(Direction::ToServer, AS_REQ, 0, &mut m);
        udp.parse(Direction::ToClient, b"junk", 0, &mut m);
        assert_eq!(m.0, vec![(0, true, 10)]);
        // Two TCP records, the second a KRB-ERROR, split anywhere; a record longer than what is kept.
        let mut tcp = KerberosDetector
            .parser(Transport::Tcp, &Limits::default())
            .unwrap();
        let mut long = AS_REQ.to_vec();
        long.extend_from_slice(&[0u8; 300]);
        let mut err = AS_REQ.to_vec();
        err[0] = 0x7e;
        let mut bytes = Vec::new();
        for msg in [&long, &err] {
            bytes.extend_from_slice(&(msg.len() as u32).to_be_bytes());
            bytes.extend_from_slice(msg);
        }
        let mut m = Msgs::default();
        for c in bytes.chunks(7) {
            tcp.parse(Direction::ToServer, c, 0, &mut m);
        }
        assert_eq!(m.0, vec![(0, true, 10), (1, true, 30)]);
    }

    /// kerberos-error.pcap (nDPI's test suite), over UDP: an AS-REQ for `host/mus-n-cj0709@LINUX.SHELL.COM` and
    /// the KDC's KRB-ERROR 52 (`KRB_ERR_RESPONSE_TOO_BIG`: retry over TCP). tshark reads the same fields:
    /// `kerberos.CNameString host,mus-n-cj0709`, `kerberos.realm LINUX.SHELL.COM`, `kerberos.SNameString
    /// krbtgt,LINUX.SHELL.COM`, `kerberos.etype 23` (the first requested), `kerberos.error_code 52`.
    pub(crate) fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
    pub(crate) const ERROR_PCAP_AS_REQ: &str = "6a82011b30820117a103020105a20302010aa35830563048a103020102a241043f303da003020117a2360434b60e0b505f98104206f62503b8e0e7c82d842e6f01e5c7f0e1540d1ea4c7e89181e69691e0c41d775649bd7fa5ac4b1874a91915300aa10402020095a2020400a481b03081ada00703050000810000a11f301da003020101a11630141b04686f73741b0c6d75732d6e2d636a30373039a2111b0f4c494e55582e5348454c4c2e434f4da3243022a003020102a11b30191b066b72627467741b0f4c494e55582e5348454c4c2e434f4da511180f32303232303232333037343630335aa611180f32303232303330343037343630335aa706020447a1fa99a81a301802011702011202011102011402011302011002011902011a";
    pub(crate) const ERROR_PCAP_KRB_ERROR: &str = "7e643062a003020105a10302011ea411180f32303232303232323037343630345aa50502030ec26da603020134a9111b0f4c494e55582e5348454c4c2e434f4daa243022a003020102a11b30191b066b72627467741b0f4c494e55582e5348454c4c2e434f4d";

    #[derive(Default)]
    struct Rec {
        events: Vec<Krb5Event>,
        types: Vec<(u64, bool, u8)>,
        anomalies: Vec<(u64, AppLayerEvent)>,
    }
    impl EventSink for Rec {
        fn event(&mut self, e: crate::AppEvent) {
            if let crate::AppEvent::Krb5(k) = e {
                self.events.push(k);
            }
        }
        fn krb5_message(&mut self, tx_id: u64, to_server: bool, msg_type: u8) {
            self.types.push((tx_id, to_server, msg_type));
        }
        fn app_layer_events(&mut self, tx: u64, _: bool, e: crate::AppLayerEvents) {
            self.anomalies.extend(e.iter().map(|e| (tx, e)));
        }
    }

    fn check_request_and_error(out: &Rec) {
        assert_eq!(out.types, [(0, true, 10), (1, false, 30)]);
        let [req, error] = &out.events[..] else {
            panic!("{:?}", out.events)
        };
        assert_eq!(
            serde_json::to_value(req).unwrap(),
            serde_json::json!({"msg_type": "KRB_AS_REQ", "cname": "host/mus-n-cj0709",
                "realm": "LINUX.SHELL.COM", "sname": "krbtgt/LINUX.SHELL.COM", "encryption": "<none>",
                "weak_encryption": false})
        );
        assert_eq!(req.message.etypes, [23, 18, 17, 20, 19, 16, 25, 26]);
        assert_eq!(
            req.message.cname.as_ref().unwrap().components,
            [b"host".to_vec(), b"mus-n-cj0709".to_vec()]
        );
        assert_eq!(
            serde_json::to_value(error).unwrap(),
            serde_json::json!({"msg_type": "KRB_ERROR", "failed_request": "KRB_AS_REQ",
                "error_code": "KRB_ERR_RESPONSE_TOO_BIG", "cname": "<empty>", "realm": "<empty>",
                "sname": "krbtgt/LINUX.SHELL.COM", "encryption": "<none>", "weak_encryption": false})
        );
        assert_eq!(error.message.error_code, Some(52));
        assert!(out.anomalies.is_empty());
    }

    #[test]
    fn request_and_error_over_udp() {
        let mut p = KerberosDetector
            .parser(Transport::Udp, &Limits::default())
            .unwrap();
        let mut out = Rec::default();
        p.parse(Direction::ToServer, &hex(ERROR_PCAP_AS_REQ), 0, &mut out);
        p.parse(Direction::ToClient, &hex(ERROR_PCAP_KRB_ERROR), 0, &mut out);
        check_request_and_error(&out);
        assert_eq!(p.stats(), ParserStats::default());
    }

    /// The same messages as TCP records, cut at every segment size: the same events; a record past
    /// [`MAX_RECORD`] is typed from its head and skipped, counted.
    #[test]
    fn records_over_tcp_whatever_the_segmenting() {
        let record = |m: &[u8]| {
            let mut r = (m.len() as u32).to_be_bytes().to_vec();
            r.extend_from_slice(m);
            r
        };
        let req = record(&hex(ERROR_PCAP_AS_REQ));
        let err = record(&hex(ERROR_PCAP_KRB_ERROR));
        for size in [1, 3, 4, 5, 17, 100, 1000] {
            let mut p = KerberosDetector
                .parser(Transport::Tcp, &Limits::default())
                .unwrap();
            let mut out = Rec::default();
            for c in req.chunks(size) {
                p.parse(Direction::ToServer, c, 0, &mut out);
            }
            for c in err.chunks(size) {
                p.parse(Direction::ToClient, c, 0, &mut out);
            }
            check_request_and_error(&out);
        }
        let mut huge = hex(ERROR_PCAP_AS_REQ);
        huge.resize(MAX_RECORD + 10, 0);
        let mut p = KerberosDetector
            .parser(Transport::Tcp, &Limits::default())
            .unwrap();
        let mut out = Rec::default();
        for c in record(&huge).chunks(1500) {
            p.parse(Direction::ToServer, c, 0, &mut out);
        }
        assert_eq!(out.types, [(0, true, 10)]);
        assert!(out.events.is_empty());
        assert_eq!(p.stats().bytes_cut, (MAX_RECORD + 10 - HEAD) as u64);
    }

    #[test]
    fn as_req() {
        assert_eq!(
            KerberosDetector.probe(&ctx_udp(Direction::ToServer, AS_REQ, &[])),
            Probe::Certain
        );
        let mut tcp = vec![0, 0, 0, 0xe9];
        tcp.extend_from_slice(AS_REQ);
        assert_eq!(
            KerberosDetector.probe(&ctx_tcp(Direction::ToServer, &tcp)),
            Probe::Certain
        );
        let mut v4 = AS_REQ.to_vec();
        v4[10] = 4;
        assert_eq!(
            KerberosDetector.probe(&ctx_udp(Direction::ToServer, &v4, &[])),
            Probe::NotForUs
        );
    }
}
