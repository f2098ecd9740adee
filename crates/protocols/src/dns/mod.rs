//! DNS over UDP and TCP, and the two protocols that share its wire format: mDNS (RFC 6762, port 5353) and LLMNR
//! (RFC 4795, port 5355). Detection, a message decoder with name decompression, EVE `dns` events in Suricata 8's
//! default layout (version 3: one event per message, `type` request/response, `id`, `flags`, `queries`, `rcode`,
//! `answers`, `grouped`, `authorities`), and Suricata's DNS anomalies for the rules' `app-layer-event`.
//!
//! ## Detection
//! nDPI only looks for DNS on its well-known ports (53, 5353, 5355), and so do we: a twelve-byte header is too
//! weak a signature to look for everywhere. On the right port a payload is DNS when the header is sane (opcode
//! in use, counts that fit the payload) and the first question (or, for a reply without questions, the first
//! record) decodes. Over TCP the message follows a 2-byte length.
//!
//! ## Decoding
//! [`Message::parse`] walks header, questions and records with a bounds-checked cursor. Names follow compression
//! pointers with a hop limit and a 255-byte cap (loops and forward-pointer chains end there, the name marked
//! truncated); at most [`crate::Limits::dns_max_records`] records per section are decoded. Record data is decoded
//! for A, AAAA, CNAME, NS, PTR, MX, TXT, SRV and SOA; other types are logged with their type only.

use crate::tls::Reader;
use crate::{
    AppEvent, AppLayerEvent, AppLayerEvents, AppProto, Detector, Direction, EventSink, Limits,
    Parser, ParserStats, Probe, ProbeCtx, Transport,
};

/// Longest name (RFC 1035 §2.3.4); longer decoded names are cut and flagged.
pub const MAX_NAME: usize = 255;
/// Compression pointers followed per name before giving up (a loop or a hostile chain).
const MAX_HOPS: usize = 32;
/// Questions decoded per message.
const MAX_QUESTIONS: usize = 16;
/// Character strings of one TXT record logged (each one an answer entry, as Suricata logs them).
const MAX_TXT_STRINGS: usize = 16;

/// Resource record types, as Suricata names them.
pub fn rrtype_name(t: u16) -> String {
    let s = match t {
        1 => "A",
        2 => "NS",
        5 => "CNAME",
        6 => "SOA",
        10 => "NULL",
        12 => "PTR",
        13 => "HINFO",
        15 => "MX",
        16 => "TXT",
        28 => "AAAA",
        33 => "SRV",
        35 => "NAPTR",
        41 => "OPT",
        43 => "DS",
        44 => "SSHFP",
        46 => "RRSIG",
        47 => "NSEC",
        48 => "DNSKEY",
        50 => "NSEC3",
        52 => "TLSA",
        64 => "SVCB",
        65 => "HTTPS",
        99 => "SPF",
        250 => "TSIG",
        251 => "IXFR",
        252 => "AXFR",
        255 => "ANY",
        257 => "CAA",
        _ => return t.to_string(),
    };
    s.to_string()
}

/// Response codes, as Suricata names them.
pub fn rcode_name(r: u16) -> String {
    let s = match r {
        0 => "NOERROR",
        1 => "FORMERR",
        2 => "SERVFAIL",
        3 => "NXDOMAIN",
        4 => "NOTIMP",
        5 => "REFUSED",
        6 => "YXDOMAIN",
        7 => "YXRRSET",
        8 => "NXRRSET",
        9 => "NOTAUTH",
        10 => "NOTZONE",
        _ => return r.to_string(),
    };
    s.to_string()
}

/// A decoded domain name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Name {
    /// Dotted text; bytes outside printable ASCII (and `\`) are written as `\xHH`.
    pub text: String,
    /// The name was cut (too long, too many pointers, or a pointer outside the message).
    pub truncated: bool,
}

/// Reads a (possibly compressed) name starting at `pos` in `msg`. Returns the name and the offset just after its
/// in-place encoding (the first pointer, or the terminating zero).
///
/// The text is gathered in a fixed buffer on the stack and becomes one `String` of its exact length at the end:
/// growing the `String` a byte at a time (and a `format!` per escaped byte) made about three reallocations a name,
/// and every DNS message carries several names.
pub fn read_name(msg: &[u8], pos: usize) -> Result<(Name, usize), DnsError> {
    // Every byte of the at most MAX_NAME counted (label bytes and dots) is written as at most four.
    let mut text = [0u8; 4 * MAX_NAME];
    let mut n = 0usize;
    let mut truncated = false;
    let done = |text: &[u8], truncated| Name {
        text: std::str::from_utf8(text)
            .map(str::to_owned)
            .unwrap_or_default(),
        truncated,
    };
    let mut raw_len = 0usize;
    let mut p = pos;
    let mut after: Option<usize> = None;
    let mut hops = 0;
    loop {
        let &len = msg.get(p).ok_or(DnsError::Truncated)?;
        match len & 0xc0 {
            0x00 => {
                if len == 0 {
                    return Ok((done(&text[..n], truncated), after.unwrap_or(p + 1)));
                }
                let label = msg
                    .get(p + 1..p + 1 + usize::from(len))
                    .ok_or(DnsError::Truncated)?;
                p += 1 + usize::from(len);
                if raw_len + label.len() + 1 > MAX_NAME {
                    truncated = true;
                    // Keep walking to find where the name ends in place, without growing the text.
                    continue;
                }
                raw_len += label.len() + 1;
                if n > 0 {
                    text[n] = b'.';
                    n += 1;
                }
                for &b in label {
                    if b.is_ascii_graphic() && b != b'\\' || b == b' ' {
                        text[n] = b;
                        n += 1;
                    } else {
                        const HEX: &[u8; 16] = b"0123456789abcdef";
                        text[n..n + 4].copy_from_slice(&[
                            b'\\',
                            b'x',
                            HEX[usize::from(b >> 4)],
                            HEX[usize::from(b & 15)],
                        ]);
                        n += 4;
                    }
                }
            }
            0xc0 => {
                let &lo = msg.get(p + 1).ok_or(DnsError::Truncated)?;
                after.get_or_insert(p + 2);
                hops += 1;
                let target = usize::from(u16::from_be_bytes([len & 0x3f, lo]));
                if hops > MAX_HOPS || target >= msg.len() {
                    return Ok((done(&text[..n], true), after.unwrap_or(p + 2)));
                }
                p = target;
            }
            // 0x40 / 0x80: extended label types (obsolete): cannot continue.
            _ => return Err(DnsError::Invalid),
        }
    }
}

/// Why a message could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DnsError {
    Truncated,
    Invalid,
}

impl From<crate::tls::HelloError> for DnsError {
    fn from(e: crate::tls::HelloError) -> Self {
        match e {
            crate::tls::HelloError::Truncated => DnsError::Truncated,
            crate::tls::HelloError::Invalid => DnsError::Invalid,
        }
    }
}

/// SOA record data, as EVE's `soa` object.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Soa {
    pub mname: String,
    pub rname: String,
    pub serial: u32,
    pub refresh: u32,
    pub retry: u32,
    pub expire: u32,
    pub minimum: u32,
}

/// SRV record data, as EVE's `srv` object.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Srv {
    pub priority: u16,
    pub weight: u16,
    pub port: u16,
    pub name: String,
}

/// One resource record, as an entry of EVE's `answers` / `authorities`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DnsRecord {
    pub rrname: String,
    pub rrtype: String,
    pub ttl: u32,
    /// Text form of the data (addresses, names, TXT strings, MX exchange); absent for SOA/SRV/opaque types.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rdata: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soa: Option<Soa>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srv: Option<Srv>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sshfp: Option<Sshfp>,
}

/// SSHFP record data (RFC 4255), as EVE's `sshfp` object: the key's algorithm, the fingerprint's type, and the
/// fingerprint as lowercase hex bytes joined by `:`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Sshfp {
    pub algo: u8,
    #[serde(rename = "type")]
    pub fp_type: u8,
    pub fingerprint: String,
}

/// A question.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Question {
    pub name: Name,
    pub qtype: u16,
    pub qclass: u16,
}

/// A decoded message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub id: u16,
    pub flags: u16,
    pub questions: Vec<Question>,
    pub answers: Vec<DnsRecord>,
    pub authorities: Vec<DnsRecord>,
    /// The additional section's records that decode (an EDNS `OPT` record among them, with an empty name), read
    /// leniently: the first record that does not decode ends the section without failing the message, since
    /// Suricata keeps a message whose additional section is damaged.
    pub additionals: Vec<DnsRecord>,
    /// Records present but not decoded (over the per-section cap).
    pub skipped_records: u32,
}

impl Message {
    /// Whether this is a response (QR bit).
    pub fn is_response(&self) -> bool {
        self.flags & 0x8000 != 0
    }
    /// The opcode.
    pub fn opcode(&self) -> u16 {
        (self.flags >> 11) & 0xf
    }
    /// The response code.
    pub fn rcode(&self) -> u16 {
        self.flags & 0xf
    }

    /// Decodes a whole message. `max_records` caps the records decoded per section.
    pub fn parse(msg: &[u8], max_records: usize) -> Result<Message, DnsError> {
        let mut r = Reader::new(msg);
        let id = r.u16()?;
        let flags = r.u16()?;
        let qd = r.u16()?;
        let an = r.u16()?;
        let ns = r.u16()?;
        let ar = r.u16()?;
        let mut m = Message {
            id,
            flags,
            ..Message::default()
        };
        let mut pos = 12;
        for i in 0..qd {
            let (name, next) = read_name(msg, pos)?;
            let mut r = Reader::new(msg.get(next..).ok_or(DnsError::Truncated)?);
            let qtype = r.u16()?;
            let qclass = r.u16()?;
            pos = next + 4;
            if usize::from(i) < MAX_QUESTIONS {
                m.questions.push(Question {
                    name,
                    qtype,
                    qclass,
                });
            }
        }
        for (count, section) in [(an, 0), (ns, 1)] {
            for i in 0..count {
                let (rec, next, more_txt) = read_record(msg, pos)?;
                pos = next;
                let list = if section == 0 {
                    &mut m.answers
                } else {
                    &mut m.authorities
                };
                if usize::from(i) < max_records {
                    // A TXT record's further strings: one entry each, as Suricata logs them.
                    let more: Vec<DnsRecord> = more_txt
                        .into_iter()
                        .map(|t| DnsRecord {
                            rdata: Some(t),
                            ..rec.clone()
                        })
                        .collect();
                    list.push(rec);
                    list.extend(more);
                } else {
                    m.skipped_records += 1;
                }
            }
        }
        for i in 0..ar {
            let Ok((rec, next, _)) = read_record(msg, pos) else {
                break;
            };
            pos = next;
            if usize::from(i) < max_records {
                m.additionals.push(rec);
            } else {
                m.skipped_records += 1;
            }
        }
        Ok(m)
    }
}

/// One resource record at `pos`: the record, the position after it, and, for a TXT record of several character
/// strings, the strings after the first (the record's `rdata` holds the first).
fn read_record(msg: &[u8], pos: usize) -> Result<(DnsRecord, usize, Vec<String>), DnsError> {
    let (name, next) = read_name(msg, pos)?;
    let mut r = Reader::new(msg.get(next..).ok_or(DnsError::Truncated)?);
    let ty = r.u16()?;
    let _class = r.u16()?;
    let ttl = u32::from(r.u16()?) << 16 | u32::from(r.u16()?);
    let rdlen = usize::from(r.u16()?);
    let start = next + 10;
    let data = r.take(rdlen)?;
    let mut rec = DnsRecord {
        rrname: name.text,
        rrtype: rrtype_name(ty),
        ttl,
        ..DnsRecord::default()
    };
    let name_at = |off: usize| read_name(msg, start + off).map(|(n, _)| n.text);
    let mut more_txt = Vec::new();
    match ty {
        1 if data.len() == 4 => {
            rec.rdata = Some(format!("{}.{}.{}.{}", data[0], data[1], data[2], data[3]))
        }
        28 if data.len() == 16 => {
            let groups: Vec<String> = data
                .chunks_exact(2)
                .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
                .collect();
            rec.rdata = Some(groups.join(":"));
        }
        2 | 5 | 12 => rec.rdata = name_at(0).ok(),
        15 if data.len() >= 3 => rec.rdata = name_at(2).ok(),
        10 => rec.rdata = Some(text_from_bytes(data)),
        16 => {
            let mut t = Reader::new(data);
            let mut parts = Vec::new();
            while let Ok(part) = t.vec8() {
                if parts.len() == MAX_TXT_STRINGS {
                    break;
                }
                parts.push(String::from_utf8_lossy(part).into_owned());
            }
            let mut parts = parts.into_iter();
            rec.rdata = Some(parts.next().unwrap_or_default());
            more_txt = parts.collect();
        }
        44 if data.len() >= 2 => {
            let hex: Vec<String> = data[2..].iter().map(|b| format!("{b:02x}")).collect();
            rec.sshfp = Some(Sshfp {
                algo: data[0],
                fp_type: data[1],
                fingerprint: hex.join(":"),
            });
        }
        33 if data.len() >= 7 => {
            let mut t = Reader::new(data);
            rec.srv = Some(Srv {
                priority: t.u16()?,
                weight: t.u16()?,
                port: t.u16()?,
                name: name_at(6).unwrap_or_default(),
            });
        }
        6 => {
            let (mname, n1) = read_name(msg, start)?;
            let (rname, n2) = read_name(msg, n1)?;
            let mut t = Reader::new(msg.get(n2..start + rdlen).ok_or(DnsError::Truncated)?);
            let mut u32_ =
                || -> Result<u32, DnsError> { Ok(u32::from(t.u16()?) << 16 | u32::from(t.u16()?)) };
            rec.soa = Some(Soa {
                mname: mname.text,
                rname: rname.text,
                serial: u32_()?,
                refresh: u32_()?,
                retry: u32_()?,
                expire: u32_()?,
                minimum: u32_()?,
            });
        }
        _ => {}
    }
    Ok((rec, start + rdlen, more_txt))
}

/// One question, as an entry of EVE's `queries`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DnsQuery {
    pub rrname: String,
    pub rrtype: String,
    /// The question's type as a number (what `dns.rrtype` compares); not an EVE field.
    #[serde(skip)]
    pub qtype: u16,
    /// The name was cut at the decoder's limit.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rrname_truncated: bool,
}

/// The EVE `dns` event of one message, in Suricata 8's default layout (version 3): `type` request or response,
/// the header (`id`, `flags`, the flag bits set, `opcode`, `rcode`), `queries`, and for records `answers`,
/// `grouped` (the answers' data by record type) and `authorities`. Serialised by hand (see the `Serialize` impl):
/// `grouped` is derived from the answers, and the fields kept for the engine (`rrname`, `udp_len`) are not written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsEvent {
    /// Transaction number within the flow (EVE `dns.tx_id`).
    pub tx_id: u64,
    /// The layout's version (3).
    pub version: Option<u8>,
    /// `request` or `response` (the QR bit).
    pub kind: String,
    pub id: u16,
    /// The header's flags word.
    pub flags: u16,
    pub opcode: u16,
    /// The first question's name and type (what identification, host names and the rules' risk checks read); every
    /// question is in `queries`.
    pub rrname: Option<String>,
    pub rrname_truncated: bool,
    pub rrtype: Option<String>,
    pub rcode: Option<String>,
    pub queries: Vec<DnsQuery>,
    pub answers: Vec<DnsRecord>,
    pub authorities: Vec<DnsRecord>,
    /// The additional section's records ([`Message::additionals`]), for the rules' `dns.additionals.rrname`; not
    /// written (Suricata 8's default EVE layout has no additionals).
    pub additionals: Vec<DnsRecord>,
    /// The message travelled to the server (the flow's responder), whatever its QR bit says: an mDNS response goes
    /// the way its sender's first packet went. Not an EVE field.
    pub to_server: bool,
    /// Which of the DNS-format protocols the flow carries (the rules' `dns.*` or `mdns.*` buffers). Not an EVE
    /// field.
    pub flavour: DnsFlavour,
    /// Bytes of the message when it came as one UDP datagram (0 over TCP), for the flow risks on large and
    /// fragmented messages. Not in Suricata's schema: not written.
    pub udp_len: usize,
}

/// Which protocol in DNS's message format a flow carries: what decides the rule buffers its messages fill. Suricata
/// parses unicast DNS as `dns` (the `dns.*` buffers) and multicast DNS as `mdns` (the `mdns.*` ones); LLMNR it
/// does not parse as either, so no DNS rule buffer reads an LLMNR message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DnsFlavour {
    /// DNS (port 53, or found by content).
    #[default]
    Dns,
    /// Multicast DNS (port 5353).
    Mdns,
    /// Link-Local Multicast Name Resolution (port 5355).
    Llmnr,
}

impl DnsEvent {
    /// Whether the message is a response (QR set).
    pub fn is_response(&self) -> bool {
        self.kind == "response"
    }
}

impl serde::Serialize for DnsEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let f = self.flags;
        let mut m = s.serialize_map(None)?;
        if let Some(v) = self.version {
            m.serialize_entry("version", &v)?;
        }
        m.serialize_entry("type", &self.kind)?;
        m.serialize_entry("tx_id", &self.tx_id)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("flags", &format!("{f:x}"))?;
        for (bit, name) in [
            (0x8000, "qr"),
            (0x0400, "aa"),
            (0x0200, "tc"),
            (0x0100, "rd"),
            (0x0080, "ra"),
            (0x0040, "z"),
        ] {
            if f & bit != 0 {
                m.serialize_entry(name, &true)?;
            }
        }
        m.serialize_entry("opcode", &self.opcode)?;
        if let Some(r) = &self.rcode {
            m.serialize_entry("rcode", r)?;
        }
        if !self.queries.is_empty() {
            m.serialize_entry("queries", &self.queries)?;
        }
        if !self.answers.is_empty() {
            m.serialize_entry("answers", &self.answers)?;
            m.serialize_entry("grouped", &Grouped(&self.answers))?;
        }
        if !self.authorities.is_empty() {
            let list: Vec<Authority<'_>> = self.authorities.iter().map(Authority).collect();
            m.serialize_entry("authorities", &list)?;
        }
        m.end()
    }
}

/// An entry of EVE's `authorities`: a record as in `answers`, without the `srv` object, which the schema's authority
/// entries do not have (an mDNS probe carries SRV records in its authority section).
struct Authority<'a>(&'a DnsRecord);

impl serde::Serialize for Authority<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("rrname", &r.rrname)?;
        m.serialize_entry("rrtype", &r.rrtype)?;
        m.serialize_entry("ttl", &r.ttl)?;
        if let Some(d) = &r.rdata {
            m.serialize_entry("rdata", d)?;
        }
        if let Some(soa) = &r.soa {
            m.serialize_entry("soa", soa)?;
        }
        m.end()
    }
}

/// EVE's `grouped`: the answers' data by record type, in order of first appearance (addresses, names and texts as
/// strings; SOA, SRV, SSHFP as objects); types without decoded data are left out, as Suricata does.
struct Grouped<'a>(&'a [DnsRecord]);

impl serde::Serialize for Grouped<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        #[derive(serde::Serialize)]
        #[serde(untagged)]
        enum Data<'a> {
            Text(&'a str),
            Soa(&'a Soa),
            Srv(&'a Srv),
            Sshfp(&'a Sshfp),
        }
        let mut types: Vec<&str> = Vec::new();
        for r in self.0 {
            if (r.rdata.is_some() || r.soa.is_some() || r.srv.is_some() || r.sshfp.is_some())
                && !types.contains(&r.rrtype.as_str())
            {
                types.push(&r.rrtype);
            }
        }
        let mut m = s.serialize_map(Some(types.len()))?;
        for t in types {
            let list: Vec<Data<'_>> = self
                .0
                .iter()
                .filter(|r| r.rrtype == t)
                .filter_map(|r| {
                    r.rdata
                        .as_deref()
                        .map(Data::Text)
                        .or(r.soa.as_ref().map(Data::Soa))
                        .or(r.srv.as_ref().map(Data::Srv))
                        .or(r.sshfp.as_ref().map(Data::Sshfp))
                })
                .collect();
            m.serialize_entry(t, &list)?;
        }
        m.end()
    }
}

/// The event for one decoded message (Suricata 8 logs each message once); none for a message without a question,
/// which Suricata does not log.
///
/// The message is taken, not borrowed: its records move into the event (the parser drops the message right after),
/// where cloning them cost a copy of every record and name of every message, and their frees.
pub fn event(m: Message, tx_id: u64) -> Option<DnsEvent> {
    m.questions.first()?;
    Some(event_with(m, tx_id))
}

/// The event for one multicast DNS message: every message, a response of answers alone included (mDNS responses
/// carry no question), as Suricata 8's mDNS logger writes them.
pub fn mdns_event(m: Message, tx_id: u64) -> DnsEvent {
    DnsEvent {
        flavour: DnsFlavour::Mdns,
        ..event_with(m, tx_id)
    }
}

/// The event of `m`, its first question (if any) as the top-level `rrname` and `rrtype`.
fn event_with(m: Message, tx_id: u64) -> DnsEvent {
    let response = m.is_response();
    let (opcode, rcode) = (m.opcode(), m.rcode());
    let q = m.questions.first();
    DnsEvent {
        version: Some(3),
        tx_id,
        kind: if response { "response" } else { "request" }.into(),
        id: m.id,
        flags: m.flags,
        opcode,
        rrname: q.map(|q| q.name.text.clone()),
        rrname_truncated: q.is_some_and(|q| q.name.truncated),
        rrtype: q.map(|q| rrtype_name(q.qtype)),
        rcode: Some(rcode_name(rcode)),
        queries: m
            .questions
            .into_iter()
            .map(|q| DnsQuery {
                rrtype: rrtype_name(q.qtype),
                qtype: q.qtype,
                rrname_truncated: q.name.truncated,
                rrname: q.name.text,
            })
            .collect(),
        answers: m.answers,
        authorities: m.authorities,
        additionals: m.additionals,
        to_server: !response,
        flavour: DnsFlavour::Dns,
        udp_len: 0,
    }
}

/// Whether `msg` looks like a DNS message: a sane header and a first question (or, for a reply without one, a
/// first record) that decodes. Record counts are not checked against the length: on DNS's own ports nDPI accepts
/// damaged messages too, and the port already carries most of the evidence.
pub fn looks_like_dns(msg: &[u8]) -> bool {
    let mut r = Reader::new(msg);
    let (Ok(_id), Ok(flags), Ok(qd), Ok(an)) = (r.u16(), r.u16(), r.u16(), r.u16()) else {
        return false;
    };
    if msg.len() < 12 {
        return false;
    }
    let opcode = (flags >> 11) & 0xf;
    if qd > 64 {
        return false;
    }
    if !opcode_assigned(opcode) {
        // An unassigned opcode is still DNS to Suricata, which parses the message and raises
        // `dns.invalid_opcode`: accept it when the whole message decodes, a far stronger sign than a sane header.
        return qd > 0 && Message::parse(msg, MAX_QUESTIONS).is_ok();
    }
    let qr = flags & 0x8000 != 0;
    if !qr && qd == 0 && opcode == 0 && an == 0 {
        return false; // a standard query asks something
    }
    if qd > 0 {
        let Ok((_, next)) = read_name(msg, 12) else {
            return false;
        };
        return msg.len() >= next + 4;
    }
    read_record(msg, 12).is_ok()
}

/// Whether `msg` starts with a DNS header that a DNS sender could have written: 12 bytes, a defined opcode, a
/// question count a real message carries.
fn dns_header_plausible(msg: &[u8]) -> bool {
    let mut r = Reader::new(msg);
    let (Ok(_id), Ok(flags), Ok(qd)) = (r.u16(), r.u16(), r.u16()) else {
        return false;
    };
    msg.len() >= 12 && opcode_assigned((flags >> 11) & 0xf) && qd <= 64
}

/// The opcodes in use (RFC 6895: QUERY, IQUERY, STATUS, NOTIFY, UPDATE); 3 and 6 to 15 are unassigned.
fn opcode_assigned(opcode: u16) -> bool {
    matches!(opcode, 0 | 1 | 2 | 4 | 5)
}

/// Bytes as EVE text, as Suricata writes opaque record data: as they are when they are UTF-8, else with every byte
/// outside ASCII written as `\xNN`.
fn text_from_bytes(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        // One `String` pushed to, not a `String` per byte collected (40,000 instructions a record of a few hundred
        // bytes).
        Err(_) => {
            let mut out = String::with_capacity(b.len() * 2);
            for &c in b {
                if c.is_ascii() {
                    out.push(char::from(c));
                } else {
                    out.push_str("\\x");
                    crate::tls::push_hex(&mut out, c, false);
                }
            }
            out
        }
    }
}

/// Suricata's check of a header before it parses the message (and raises anomalies on it): the record counts fit
/// the length (two bytes each at least), a message without records is the bare header, a query asks something.
fn header_valid(msg: &[u8]) -> bool {
    let mut r = Reader::new(msg);
    let (Ok(_id), Ok(flags), Ok(qd), Ok(an), Ok(ns), Ok(ar)) =
        (r.u16(), r.u16(), r.u16(), r.u16(), r.u16(), r.u16())
    else {
        return false;
    };
    let records = [qd, an, ns, ar]
        .iter()
        .map(|&n| usize::from(n))
        .sum::<usize>();
    if 2 * records > msg.len() || (records == 0 && msg.len() > 12) {
        return false;
    }
    flags & 0x8000 != 0 || qd > 0
}

/// For a message [`Message::parse`] rejected: whether its questions or answers fail to decode. Suricata calls only
/// that malformed; a damaged authority section is logged as such and the message kept.
fn questions_and_answers_fail(msg: &[u8], max_records: usize) -> bool {
    let mut head = msg.to_vec();
    if let Some(ns) = head.get_mut(8..10) {
        ns.copy_from_slice(&[0, 0]);
    }
    Message::parse(&head, max_records).is_err()
}

/// The anomalies of a decoded message that belong to its own transaction: the reserved Z bit, an unassigned
/// opcode (7 and above), a query travelling to the client.
fn message_anomalies(m: &Message, to_server: bool) -> AppLayerEvents {
    let mut e = AppLayerEvents::EMPTY;
    if !to_server && !m.is_response() {
        e.set(AppLayerEvent::DnsNotAResponse);
    }
    if m.flags & 0x0040 != 0 {
        e.set(AppLayerEvent::DnsZFlagSet);
    }
    if m.opcode() >= 7 {
        e.set(AppLayerEvent::DnsInvalidOpcode);
    }
    e
}

/// DNS-over-TCP framing check: a 2-byte length that fits what we have, then a DNS message. A prefix shorter than
/// the header is undecided.
fn probe_tcp(p: &[u8]) -> Probe {
    let Some(len) = p
        .get(..2)
        .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    else {
        return Probe::Unsure;
    };
    if len < 12 {
        return Probe::NotForUs;
    }
    let Some(body) = p.get(2..(2 + len).min(p.len())) else {
        return Probe::Unsure;
    };
    if body.len() < len {
        // Header checks on what we have; certainty needs the whole message.
        if body.len() < 12 {
            return Probe::Unsure;
        }
        return if looks_like_dns(body) || body.len() < 64 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    }
    if looks_like_dns(body) {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// Datagrams per direction that DNS on its own port lets pass as junk before it rules itself out.
const JUNK_DATAGRAMS: u32 = 3;

/// DNS's probe on `port`. `unicast`: DNS proper (port 53), which also runs over TCP and skips junk datagrams as
/// Suricata's DNS probe does; mDNS and LLMNR do neither.
fn probe_on_ports(ctx: &ProbeCtx<'_>, port: u16, unicast: bool) -> Probe {
    if !ctx.either_port_is(port) {
        return Probe::NotForUs;
    }
    match ctx.transport {
        Transport::Icmp | Transport::Other(_) => Probe::NotForUs,
        Transport::Udp => {
            if looks_like_dns(ctx.data) {
                Probe::Certain
            } else if dns_header_plausible(ctx.data) {
                // A sound header with a damaged body: a corrupt or truncated DNS datagram on the DNS port. Wait
                // for the next one rather than ruling DNS out.
                Probe::Unsure
            } else if unicast && ctx.dir_index < JUNK_DATAGRAMS {
                // Junk on port 53 (a probe, a client that sent garbage first): Suricata's DNS probe skips it and
                // names the flow from the next datagrams; DNS keeps its first say on the port meanwhile.
                Probe::Unsure
            } else {
                Probe::NotForUs
            }
        }
        Transport::Tcp if unicast => probe_tcp(ctx.prefix),
        Transport::Tcp => Probe::NotForUs,
    }
}

/// DNS on port 53 (UDP and TCP).
#[derive(Clone, Copy, Debug, Default)]
pub struct DnsDetector;

impl Detector for DnsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Dns
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        probe_on_ports(ctx, 53, true)
    }
    fn port_first(&self) -> bool {
        true
    }
    fn answers_first(&self, ctx: &ProbeCtx<'_>) -> bool {
        // A response sent from the DNS port: its receiver asked.
        ctx.transport == Transport::Udp
            && ctx.client_port == 53
            && ctx.data.get(2).is_some_and(|&b| b & 0x80 != 0)
            && looks_like_dns(ctx.data)
    }
    fn parser(&self, t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(DnsParser::new(t, limits)))
    }
}

/// Multicast DNS on port 5353.
#[derive(Clone, Copy, Debug, Default)]
pub struct MdnsDetector;

impl Detector for MdnsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Mdns
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        probe_on_ports(ctx, 5353, false)
    }
    fn parser(&self, t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(DnsParser {
            flavour: DnsFlavour::Mdns,
            ..DnsParser::new(t, limits)
        }))
    }
}

/// Link-Local Multicast Name Resolution on port 5355.
#[derive(Clone, Copy, Debug, Default)]
pub struct LlmnrDetector;

impl Detector for LlmnrDetector {
    fn proto(&self) -> AppProto {
        AppProto::Llmnr
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        probe_on_ports(ctx, 5355, false)
    }
    fn parser(&self, t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(DnsParser {
            flavour: DnsFlavour::Llmnr,
            ..DnsParser::new(t, limits)
        }))
    }
}

/// The DNS parser of one flow (UDP datagrams or TCP stream with 2-byte framing).
#[derive(Debug)]
pub struct DnsParser {
    tcp: bool,
    cap: usize,
    max_records: usize,
    /// TCP: per direction, the bytes of a message being collected (length prefix included).
    buf: [Vec<u8>; 2],
    /// TCP: per direction, bytes to skip (a message over the cap), and whether the direction gave up.
    skip: [u64; 2],
    dead: [bool; 2],
    /// TCP: per direction, a gap lost the message being collected; data is dropped until it looks like DNS again.
    gap: [bool; 2],
    next_tx: u64,
    /// The transaction of the last message that made or joined one (where Suricata sets the anomalies of a message
    /// that makes none).
    latest_tx: Option<u64>,
    /// The flow's protocol, DNS, multicast DNS or LLMNR (its events say so, for the rules' `dns.*` and `mdns.*`
    /// buffers).
    flavour: DnsFlavour,
    stats: ParserStats,
}

impl DnsParser {
    /// A parser for one flow.
    pub fn new(t: Transport, limits: &Limits) -> Self {
        DnsParser {
            tcp: t == Transport::Tcp,
            cap: limits.dns_tcp_cap,
            max_records: limits.dns_max_records,
            buf: [Vec::new(), Vec::new()],
            skip: [0; 2],
            dead: [false; 2],
            gap: [false; 2],
            next_tx: 0,
            latest_tx: None,
            flavour: DnsFlavour::Dns,
            stats: ParserStats::default(),
        }
    }

    fn message(&mut self, dir: Direction, msg: &[u8], out: &mut dyn EventSink) {
        let to_server = dir == Direction::ToServer;
        let m = match Message::parse(msg, self.max_records) {
            Ok(m) => m,
            Err(_) => {
                self.stats.malformed += 1;
                if header_valid(msg) && questions_and_answers_fail(msg, self.max_records) {
                    self.latest_tx_event(to_server, AppLayerEvent::DnsMalformedData, out);
                }
                return;
            }
        };
        // Multicast DNS answers go to the group address, the flow's "server": every mDNS message is its own
        // transaction, as in Suricata 8's mDNS parser.
        let no_tx = to_server && m.is_response() && self.flavour != DnsFlavour::Mdns;
        if no_tx && header_valid(msg) {
            self.latest_tx_event(to_server, AppLayerEvent::DnsNotARequest, out);
        }
        // Suricata 8 makes each message its own transaction (a response does not join its query's), numbered in
        // the order the messages come, except a response sent to the server, which makes none.
        let tx = if no_tx {
            self.next_tx
        } else {
            self.next_tx += 1;
            self.next_tx - 1
        };
        let udp_len = if self.tcp { 0 } else { msg.len() };
        // A response sent to the server makes no transaction in Suricata: its anomaly went to the latest one.
        let anomalies = if no_tx || !header_valid(msg) {
            AppLayerEvents::EMPTY
        } else {
            message_anomalies(&m, to_server)
        };
        let ev = if self.flavour == DnsFlavour::Mdns {
            Some(mdns_event(m, tx))
        } else {
            event(m, tx)
        };
        if !no_tx {
            self.latest_tx = Some(tx);
        }
        match ev {
            Some(e) => {
                let e = AppEvent::Dns(DnsEvent {
                    udp_len,
                    to_server,
                    flavour: self.flavour,
                    ..e
                });
                out.event_with_anomalies(e, tx, to_server, anomalies);
            }
            None if !anomalies.is_empty() => out.app_layer_events(tx, to_server, anomalies),
            None => {}
        }
    }

    /// An anomaly Suricata sets on the flow's most recent transaction (a message that made none of its own), if
    /// there is one.
    fn latest_tx_event(&mut self, to_server: bool, e: AppLayerEvent, out: &mut dyn EventSink) {
        if let Some(tx) = self.latest_tx {
            out.app_layer_events(tx, to_server, std::iter::once(e).collect());
        }
    }

    fn stream(&mut self, d: usize, mut data: &[u8], out: &mut dyn EventSink) {
        if self.gap[d] {
            if probe_tcp(data) == Probe::NotForUs {
                return;
            }
            self.gap[d] = false;
        }
        while !data.is_empty() {
            if self.dead[d] {
                return;
            }
            if self.skip[d] > 0 {
                let n = self.skip[d].min(data.len() as u64);
                self.skip[d] -= n;
                data = &data[n as usize..];
                continue;
            }
            let buf = &mut self.buf[d];
            if buf.len() < 2 {
                let take = (2 - buf.len()).min(data.len());
                buf.extend_from_slice(&data[..take]);
                data = &data[take..];
                if buf.len() < 2 {
                    return;
                }
                let len = usize::from(u16::from_be_bytes([buf[0], buf[1]]));
                if len < 12 {
                    self.dead[d] = true;
                    self.stats.gave_up += 1;
                    return;
                }
                if len + 2 > self.cap {
                    self.skip[d] = len as u64;
                    self.stats.bytes_cut += len as u64;
                    buf.clear();
                }
                continue;
            }
            let len = usize::from(u16::from_be_bytes([buf[0], buf[1]]));
            let need = len + 2 - buf.len();
            let take = need.min(data.len());
            buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if buf.len() == len + 2 {
                let msg = std::mem::take(&mut self.buf[d]);
                let dir = if d == 0 {
                    Direction::ToServer
                } else {
                    Direction::ToClient
                };
                self.message(dir, msg.get(2..).unwrap_or(&[]), out);
                self.buf[d] = msg;
                self.buf[d].clear();
            }
        }
    }
}

impl Parser for DnsParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.tcp {
            self.stream(dir.index(), data, out);
        } else {
            self.message(dir, data, out);
        }
    }

    /// TCP: the message being collected is lost; the direction resumes at the next data that starts like a framed
    /// DNS message, as Suricata's parser does after a gap.
    fn gap(&mut self, dir: Direction, _len: u64) {
        let d = dir.index();
        if self.tcp && !self.dead[d] {
            self.buf[d].clear();
            self.skip[d] = 0;
            self.gap[d] = true;
        }
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_datagram_on_the_dns_port_waits_for_the_next() {
        use crate::testkit::ctx_udp;
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(&name("a.example"));
        q.extend_from_slice(&[0, 1, 0, 1]);
        let mut damaged = q.clone();
        damaged[12] = 0xc0; // a compression pointer cut short
        damaged.truncate(13);
        let probe = |d: &[u8]| {
            let mut c = ctx_udp(Direction::ToServer, d, &[]);
            c.server_port = 53;
            DnsDetector.probe(&c)
        };
        assert_eq!(probe(&q), Probe::Certain);
        assert_eq!(probe(&damaged), Probe::Unsure);
        // An unassigned opcode: DNS when the whole message decodes (Suricata parses it and raises
        // `dns.invalid_opcode`), not a reason to wait when it does not.
        let mut bad_opcode = q.clone();
        bad_opcode[2] = 0x68; // opcode 13
        assert_eq!(probe(&bad_opcode), Probe::Certain);
        let mut opcode9 = q.clone();
        opcode9[2] = 0x48;
        assert_eq!(probe(&opcode9), Probe::Certain);
        // A damaged body with an unassigned opcode is junk: skipped on the DNS port for a few datagrams, then out.
        let mut bad_opcode_damaged = damaged.clone();
        bad_opcode_damaged[2] = 0x68;
        assert_eq!(probe(&bad_opcode_damaged), Probe::Unsure);
        let mut c = ctx_udp(Direction::ToServer, &bad_opcode_damaged, &[]);
        c.server_port = 53;
        c.dir_index = JUNK_DATAGRAMS;
        assert_eq!(DnsDetector.probe(&c), Probe::NotForUs);
        // mDNS skips nothing.
        c.server_port = 5353;
        c.dir_index = 0;
        assert_eq!(MdnsDetector.probe(&c), Probe::NotForUs);
    }

    fn name(n: &str) -> Vec<u8> {
        let mut v = Vec::new();
        for l in n.split('.').filter(|l| !l.is_empty()) {
            v.push(l.len() as u8);
            v.extend_from_slice(l.as_bytes());
        }
        v.push(0);
        v
    }

    fn rr(owner: &[u8], ty: u16, ttl: u32, data: &[u8]) -> Vec<u8> {
        let mut v = owner.to_vec();
        v.extend_from_slice(&ty.to_be_bytes());
        v.extend_from_slice(&1u16.to_be_bytes());
        v.extend_from_slice(&ttl.to_be_bytes());
        v.extend_from_slice(&(data.len() as u16).to_be_bytes());
        v.extend_from_slice(data);
        v
    }

    fn header(id: u16, flags: u16, qd: u16, an: u16, ns: u16) -> Vec<u8> {
        [id, flags, qd, an, ns, 0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect()
    }

    fn query() -> Vec<u8> {
        let mut m = header(0x1234, 0x0100, 1, 0, 0);
        m.extend_from_slice(&name("www.example.com"));
        m.extend_from_slice(&[0, 1, 0, 1]);
        m
    }

    /// An answer with a CNAME and an A record (both owners compressed to the question), plus SOA in authority.
    fn answer() -> Vec<u8> {
        let mut m = header(0x1234, 0x8180, 1, 6, 1);
        m.extend_from_slice(&name("www.example.com"));
        m.extend_from_slice(&[0, 1, 0, 1]);
        let q = [0xc0, 12];
        let mut cname = name("edge");
        cname.pop();
        cname.extend_from_slice(&[0xc0, 16]); // edge.example.com
        m.extend_from_slice(&rr(&q, 5, 300, &cname));
        m.extend_from_slice(&rr(&q, 1, 60, &[93, 184, 216, 34]));
        m.extend_from_slice(&rr(
            &q,
            28,
            60,
            &[0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        ));
        m.extend_from_slice(&rr(&q, 16, 60, b"\x05hello\x05world"));
        let mut mx = vec![0, 10];
        mx.extend_from_slice(&name("mail.example.com"));
        m.extend_from_slice(&rr(&q, 15, 60, &mx));
        let mut srv = vec![0, 1, 0, 2, 0x13, 0xc4];
        srv.extend_from_slice(&name("sip.example.com"));
        m.extend_from_slice(&rr(&q, 33, 60, &srv));
        let mut soa = name("ns1.example.com");
        soa.extend_from_slice(&name("hostmaster.example.com"));
        for v in [2024u32, 7200, 900, 1_209_600, 86400] {
            soa.extend_from_slice(&v.to_be_bytes());
        }
        m.extend_from_slice(&rr(&[0xc0, 16], 6, 899, &soa));
        m
    }

    #[test]
    fn decodes_query_and_answer() {
        let q = Message::parse(&query(), 64).unwrap();
        let ev = event(q, 0).unwrap();
        assert_eq!((ev.kind.as_str(), ev.id), ("request", 0x1234));
        assert_eq!(
            (ev.rrname.as_deref(), ev.rrtype.as_deref()),
            (Some("www.example.com"), Some("A"))
        );
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"version": 3, "type": "request", "tx_id": 0, "id": 0x1234, "flags": "100",
                "rd": true, "opcode": 0, "rcode": "NOERROR",
                "queries": [{"rrname": "www.example.com", "rrtype": "A"}]})
        );
        // A message without a question is not logged, as in Suricata.
        let bare = Message::parse(&header(9, 0x8180, 0, 0, 0), 64).unwrap();
        assert_eq!(event(bare, 0), None);

        let a = Message::parse(&answer(), 64).unwrap();
        let e = event(a, 0).unwrap();
        assert_eq!(
            (e.kind.as_str(), e.version, e.flags),
            ("response", Some(3), 0x8180)
        );
        assert!(e.is_response());
        assert_eq!(e.rcode.as_deref(), Some("NOERROR"));
        let got: Vec<_> = e
            .answers
            .iter()
            .map(|r| (r.rrtype.as_str(), r.rdata.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("CNAME", "edge.example.com".to_string()),
                ("A", "93.184.216.34".to_string()),
                (
                    "AAAA",
                    "2001:0db8:0000:0000:0000:0000:0000:0001".to_string()
                ),
                // One entry per character string of the TXT record, as Suricata 8 logs them.
                ("TXT", "hello".to_string()),
                ("TXT", "world".to_string()),
                ("MX", "mail.example.com".to_string()),
                ("SRV", String::new()),
            ]
        );
        assert!(e.answers.iter().all(|r| r.rrname == "www.example.com"));
        let srv = e.answers[6].srv.as_ref().unwrap();
        assert_eq!(
            (srv.priority, srv.weight, srv.port, srv.name.as_str()),
            (1, 2, 5060, "sip.example.com")
        );
        let soa = e.authorities[0].soa.as_ref().unwrap();
        assert_eq!(
            (e.authorities[0].rrname.as_str(), e.authorities[0].ttl),
            ("example.com", 899)
        );
        assert_eq!(
            (
                soa.mname.as_str(),
                soa.rname.as_str(),
                soa.serial,
                soa.minimum
            ),
            ("ns1.example.com", "hostmaster.example.com", 2024, 86400)
        );
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["type"], "response");
        assert_eq!(json["flags"], "8180");
        assert_eq!(
            (&json["qr"], &json["rd"], &json["ra"]),
            (&true.into(), &true.into(), &true.into())
        );
        assert_eq!(json["queries"][0]["rrname"], "www.example.com");
        assert_eq!(json["answers"][1]["rdata"], "93.184.216.34");
        assert!(
            json.get("aa").is_none() && json.get("rrname").is_none(),
            "false flags are omitted, as Suricata does; the first question is in `queries` only"
        );
        // `grouped`: the answers' data by type, in order of first appearance; SOA and SRV as objects.
        assert_eq!(json["grouped"]["A"], serde_json::json!(["93.184.216.34"]));
        assert_eq!(json["grouped"]["CNAME"][0], "edge.example.com");
        assert_eq!(json["grouped"]["SRV"][0]["port"], 5060);
        assert_eq!(json["authorities"][0]["soa"]["serial"], 2024);
    }

    #[test]
    fn compression_loops_end() {
        // A question whose name points at itself, and a two-pointer cycle.
        let mut m = header(1, 0x0100, 1, 0, 0);
        m.extend_from_slice(&[3, b'a', b'b', b'c', 0xc0, 12, 0, 1, 0, 1]);
        let (n, next) = read_name(&m, 12).unwrap();
        assert!(n.truncated);
        assert_eq!(next, 18);
        assert!(n.text.len() <= MAX_NAME + 4 * 64);
        let mut m = header(1, 0x0100, 1, 0, 0);
        m.extend_from_slice(&[0xc0, 14, 0xc0, 12, 0, 1, 0, 1]);
        assert!(read_name(&m, 12).unwrap().0.truncated);
        // A pointer past the end.
        let mut m = header(1, 0x0100, 1, 0, 0);
        m.extend_from_slice(&[0xc0, 0xff]);
        assert!(read_name(&m, 12).unwrap().0.truncated);
    }

    #[test]
    fn long_names_are_cut_and_flagged() {
        let mut m = header(1, 0x0100, 1, 0, 0);
        for _ in 0..8 {
            m.push(63);
            m.extend_from_slice(&[b'x'; 63]);
        }
        m.push(0);
        m.extend_from_slice(&[0, 1, 0, 1]);
        let q = Message::parse(&m, 64).unwrap();
        assert!(q.questions[0].name.truncated);
        assert!(q.questions[0].name.text.len() <= MAX_NAME);
    }

    fn ctx<'a>(t: Transport, cp: u16, sp: u16, data: &'a [u8]) -> ProbeCtx<'a> {
        ProbeCtx {
            transport: t,
            client_port: cp,
            server_port: sp,
            dir: Direction::ToServer,
            payload_index: 0,
            dir_index: 0,
            prefix: data,
            data,
            prev: &[],
            peer: &[],
        }
    }

    #[test]
    fn detection_by_port() {
        let q = query();
        assert_eq!(
            DnsDetector.probe(&ctx(Transport::Udp, 5000, 53, &q)),
            Probe::Certain
        );
        assert_eq!(
            DnsDetector.probe(&ctx(Transport::Udp, 5000, 5353, &q)),
            Probe::NotForUs
        );
        assert_eq!(
            MdnsDetector.probe(&ctx(Transport::Udp, 5353, 5353, &q)),
            Probe::Certain
        );
        assert_eq!(
            LlmnrDetector.probe(&ctx(Transport::Udp, 5000, 5355, &q)),
            Probe::Certain
        );
        // Junk on port 53 is skipped for a few datagrams (Suricata's DNS probe waits for the next), then DNS is out.
        assert_eq!(
            DnsDetector.probe(&ctx(Transport::Udp, 5000, 53, b"GET / HTTP/1.1\r\n")),
            Probe::Unsure
        );
        let mut late = ctx(Transport::Udp, 5000, 53, b"GET / HTTP/1.1\r\n");
        late.dir_index = JUNK_DATAGRAMS;
        assert_eq!(DnsDetector.probe(&late), Probe::NotForUs);
        let mut tcp = (q.len() as u16).to_be_bytes().to_vec();
        tcp.extend_from_slice(&q);
        assert_eq!(
            DnsDetector.probe(&ctx(Transport::Tcp, 5000, 53, &tcp)),
            Probe::Certain
        );
        assert_eq!(
            DnsDetector.probe(&ctx(Transport::Tcp, 5000, 53, &tcp[..1])),
            Probe::Unsure
        );
        assert_eq!(
            DnsDetector.probe(&ctx(Transport::Tcp, 5000, 53, &tcp[..20])),
            Probe::Unsure
        );
    }

    #[test]
    fn tcp_framing_any_split_and_one_transaction_per_message() {
        let mut c = Vec::new();
        for m in [query(), query()] {
            c.extend_from_slice(&(m.len() as u16).to_be_bytes());
            c.extend_from_slice(&m);
        }
        let a = answer();
        let mut s = (a.len() as u16).to_be_bytes().to_vec();
        s.extend_from_slice(&a);
        let run = |cut: usize| {
            let mut p = DnsParser::new(Transport::Tcp, &Limits::default());
            let mut out = Vec::new();
            for data in [&c, &s] {
                let dir = if std::ptr::eq(data, &c) {
                    Direction::ToServer
                } else {
                    Direction::ToClient
                };
                let cut = cut.min(data.len());
                p.parse(dir, &data[..cut], 0, &mut out);
                p.parse(dir, &data[cut..], 0, &mut out);
            }
            out
        };
        let whole = run(0);
        assert_eq!(whole.len(), 3);
        for cut in 1..s.len() {
            assert_eq!(run(cut), whole, "cut {cut}");
        }
        let txs: Vec<u64> = whole
            .iter()
            .map(|e| {
                if let AppEvent::Dns(d) = e {
                    d.tx_id
                } else {
                    99
                }
            })
            .collect();
        // Suricata 8: every message is a transaction of its own, numbered in order (the answer does not join the
        // query with its id).
        assert_eq!(txs, vec![0, 1, 2]);
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn arbitrary_bytes_never_panic(a in proptest::collection::vec(any::<u8>(), 0..600), cut in 0usize..600) {
                let _ = looks_like_dns(&a);
                let _ = Message::parse(&a, 64).map(|m| event(m, 0));
                for t in [Transport::Udp, Transport::Tcp] {
                    let mut p = DnsParser::new(t, &Limits::default());
                    let cut = cut.min(a.len());
                    p.parse(Direction::ToServer, &a[..cut], 0, &mut Vec::new());
                    p.parse(Direction::ToServer, &a[cut..], 0, &mut Vec::new());
                }
            }

            #[test]
            fn mutated_answer_never_panics(pos in 0usize..400, byte in any::<u8>()) {
                let mut a = answer();
                let n = a.len();
                a[pos % n] = byte;
                let _ = Message::parse(&a, 64).map(|m| event(m, 0));
            }
        }
    }

    /// What a parser hands the rules: the anomalies of each message, with its transaction and direction.
    #[derive(Default)]
    struct Anomalies(Vec<(u64, bool, Vec<AppLayerEvent>)>);

    impl EventSink for Anomalies {
        fn event(&mut self, _: AppEvent) {}
        fn app_layer_events(&mut self, tx_id: u64, to_server: bool, events: AppLayerEvents) {
            assert!(!events.is_empty());
            self.0.push((tx_id, to_server, events.iter().collect()));
        }
    }

    /// Suricata's DNS anomalies: the Z bit and an unassigned opcode on the message's own transaction, a query sent
    /// to the client, and the anomalies of messages that make no transaction (a response sent to the server, a body
    /// that does not decode) on the latest transaction; clean messages raise none.
    #[test]
    fn anomalies_follow_suricata() {
        use AppLayerEvent as E;
        let udp = |msgs: &[(Direction, Vec<u8>)]| {
            let mut p = DnsParser::new(Transport::Udp, &Limits::default());
            let mut out = Anomalies::default();
            for (dir, m) in msgs {
                p.parse(*dir, m, 0, &mut out);
            }
            out.0
        };
        let (ts, tc) = (Direction::ToServer, Direction::ToClient);
        assert!(udp(&[(ts, query()), (tc, answer())]).is_empty());

        let mut z = query();
        z[3] |= 0x40;
        let mut opcode9 = answer();
        opcode9[2] = (opcode9[2] & 0x87) | (9 << 3);
        assert_eq!(
            udp(&[(ts, z), (tc, opcode9)]),
            vec![
                (0, true, vec![E::DnsZFlagSet]),
                (1, false, vec![E::DnsInvalidOpcode])
            ]
        );

        // A response travelling to the server before any transaction (nothing to set it on, and no transaction of
        // its own), a query travelling to the client (its own transaction, the second), then a response travelling
        // to the server (on the latest).
        assert_eq!(
            udp(&[(ts, answer()), (ts, query()), (tc, query()), (ts, answer())]),
            vec![
                (1, false, vec![E::DnsNotAResponse]),
                (1, true, vec![E::DnsNotARequest])
            ]
        );

        // A body cut inside its question: malformed, on the latest transaction; nothing before there is one.
        let mut cut = query();
        cut.truncate(20);
        assert_eq!(udp(&[(ts, cut.clone())]), vec![]);
        assert_eq!(
            udp(&[(ts, query()), (ts, cut.clone())]),
            vec![(0, true, vec![E::DnsMalformedData])]
        );
        // A header whose counts cannot fit the message is not parsed at all (no anomaly).
        let mut bogus = header(1, 0x0100, 40, 0, 0);
        bogus.extend_from_slice(&[0; 20]);
        assert_eq!(udp(&[(ts, query()), (ts, bogus)]), vec![]);
        // A damaged authority section alone is not malformed data.
        let mut auth = answer();
        auth.truncate(auth.len() - 3);
        assert_eq!(udp(&[(ts, query()), (tc, auth)]), vec![]);
    }

    /// NULL record data is written as text, bytes outside ASCII as `\xNN` (Suricata's layout).
    #[test]
    fn null_record_data_as_text() {
        assert_eq!(text_from_bytes(b"plain"), "plain");
        assert_eq!(
            text_from_bytes(b"VACKD\x03\xc5\xe9\x01"),
            "VACKD\u{3}\\xc5\\xe9\u{1}"
        );
        let mut m = header(1, 0x8180, 1, 1, 0);
        m.extend_from_slice(&name("x.example"));
        m.extend_from_slice(&[0, 10, 0, 1]);
        m.extend_from_slice(&rr(&[0xc0, 12], 10, 0, b"ab\xff"));
        let e = event(Message::parse(&m, 64).unwrap(), 0).unwrap();
        assert_eq!(e.answers[0].rdata.as_deref(), Some("ab\\xff"));
    }

    /// Over TCP a gap loses the message it cut; the direction resumes with the next message that starts cleanly.
    #[test]
    fn tcp_resumes_after_a_gap() {
        let framed = |m: Vec<u8>| {
            let mut v = (m.len() as u16).to_be_bytes().to_vec();
            v.extend_from_slice(&m);
            v
        };
        let q = framed(query());
        let mut p = DnsParser::new(Transport::Tcp, &Limits::default());
        let mut out = Vec::new();
        p.parse(Direction::ToServer, &q[..10], 0, &mut out);
        p.gap(Direction::ToServer, 100);
        // The rest of the cut message does not frame as DNS: dropped.
        p.parse(Direction::ToServer, &q[10..], 0, &mut out);
        assert!(out.is_empty());
        p.parse(Direction::ToServer, &q, 0, &mut out);
        assert_eq!(out.len(), 1);
    }

    /// SSHFP data: algorithm, fingerprint type and the fingerprint as `:`-joined hex, in `answers` and `grouped`.
    #[test]
    fn sshfp_record() {
        let mut m = header(1, 0x8180, 1, 1, 0);
        m.extend_from_slice(&name("host.example"));
        m.extend_from_slice(&[0, 44, 0, 1]);
        m.extend_from_slice(&rr(&[0xc0, 12], 44, 60, &[1, 1, 0x19, 0x8c, 0x34]));
        let e = event(Message::parse(&m, 64).unwrap(), 0).unwrap();
        let json = serde_json::to_value(&e).unwrap();
        let want = serde_json::json!({"algo": 1, "type": 1, "fingerprint": "19:8c:34"});
        assert_eq!(json["answers"][0]["sshfp"], want);
        assert_eq!(json["grouped"]["SSHFP"][0], want);
    }
}
