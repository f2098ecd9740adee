//! # Suricata EVE JSON
//!
//! One JSON object per line with Suricata's field names, so that jq pipelines, Elastic and other EVE consumers read
//! the output unchanged:
//!
//! * the envelope: `timestamp` (UTC, microseconds, `+0000`), `flow_id`, `event_type`, `src_ip`, `src_port`,
//!   `dest_ip`, `dest_port` (ports omitted for protocols without them), `proto` (`TCP`, `UDP`, `ICMP`,
//!   `IPv6-ICMP`, ...);
//! * `flow`: `app_proto` (as Suricata writes it: its name for a protocol identified from the flow's data where
//!   Suricata parses that protocol, `failed` otherwise, including protocols Suricata has no parser for and labels
//!   guessed from a port alone; the engine's own, finer name is `flowbundle.app` with [`EveOptions::extra`]) and
//!   `flow.{pkts_toserver, pkts_toclient, bytes_toserver, bytes_toclient, start, end, age,
//!   state, reason, alerted, action}` (`action`: `drop` or `pass` when a rule decided the flow's fate), plus
//!   `tcp.{tcp_flags, tcp_flags_ts, tcp_flags_tc, syn, fin, rst, psh, ack, urg, ecn, cwr, state}` for TCP. Addresses
//!   are the client's as source, as Suricata writes flow records;
//! * application events (`http`, `tls`, `dns`, `quic`, `ssh`, `ftp`, ...): the parser's object under its event
//!   type; `tx_id` at the top level for HTTP; DNS answers are written server to client, everything else client to
//!   server;
//! * `alert`: `alert.{action, gid, signature_id, rev, signature, category, severity}` (`action` is `blocked` for a
//!   drop or reject rule in IPS mode, else `allowed`), `direction`,
//!   `app_proto` when known, and `flow.{pkts_*, bytes_*, start, src_ip, dest_ip, src_port, dest_port}`. Source and
//!   destination are those of the data that matched, as Suricata writes them for alerts.
//!
//! * `packet`: a packet a rule's `tag` covers (written when tagged packets are logged): the packet's own endpoints,
//!   `packet` (the frame as captured, base64) and `packet_info.{linktype, linktype_name}`.
//!
//! Every line validates against Suricata's own schema (`etc/schema.json`, which refuses keys it does not know).
//! `pcap_cnt` (the 1-based position of the packet in the input) is on the events one packet caused; ICMP flows carry
//! `icmp_type`/`icmp_code` (and `response_icmp_type`/`response_icmp_code`) and no `app_proto`, as Suricata writes
//! them; `alert.metadata` holds the rule's `metadata` entries grouped by key.
//!
//! With [`EveOptions::extra`], flow records also carry a `flowbundle` object Suricata does not write (outside its
//! schema): the label in nDPI's spelling (`app`), how it was decided (`evidence`: `parser`, `signature`, `port`,
//! `expectation`, `ip_protocol`), the service behind the flow (`application`, nDPI's `APP` in `MASTER.APP`, when
//! known) and what named it (`application_evidence`: `content`, `host_name`, `certificate`, `port`, `ip_owner`), the packet position at which it was (`decided_at`), the reassembly gaps of the
//! connection, and the flow's risks (`risks`: nDPI's risk names, e.g. `NDPI_TLS_SELFSIGNED_CERTIFICATE`; left out
//! when there are none; Suricata's `flow` schema has no such field).
//!
//! The writer builds each line in one reused buffer (strings escaped by `serde_json`) and writes it whole.

use std::io::{self, Write};
use std::net::IpAddr;

use flowbundle_decode::{FlowKey, KeySide};
use flowbundle_events::{
    AlertEvent, AlertTarget, Anomaly, AppEvent, AppLabel, AppRecord, Event, EventKind, Evidence,
    FlowRecord, TaggedPacket,
};

use crate::time::write_timestamp;

/// EVE's `proto` value for an IP protocol number.
pub fn proto_name(p: u8) -> std::borrow::Cow<'static, str> {
    std::borrow::Cow::Borrowed(match p {
        1 => "ICMP",
        2 => "IGMP",
        6 => "TCP",
        17 => "UDP",
        41 => "IPv6",
        47 => "GRE",
        50 => "ESP",
        51 => "AH",
        58 => "IPv6-ICMP",
        89 => "OSPF",
        103 => "PIM",
        112 => "VRRP",
        132 => "SCTP",
        other => return std::borrow::Cow::Owned(format!("{other:03}")),
    })
}

fn has_ports(p: u8) -> bool {
    matches!(p, 6 | 17 | 132)
}

/// How the EVE lines are written: what they carry beyond Suricata's schema, and Suricata's `eve-log` options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EveOptions {
    /// Flow records carry the `flowbundle` object (label in nDPI's spelling, evidence, decision position, gaps).
    pub extra: bool,
    /// IPv6 addresses in their compressed form (`fe80::20c:29ff:fef3:cf38`, Suricata's `eve-log.ipv6-compress:
    /// yes`); by default they are written in full, eight groups of four hex digits, as Suricata writes them.
    pub ipv6_compress: bool,
}

/// Writes events as EVE JSON lines.
pub struct EveWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    lines: u64,
    opts: EveOptions,
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    // serde_json escapes exactly as JSON requires; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, s);
}

/// Appends `n` in decimal.
///
/// Why not `write!`: every EVE line writes several numbers (flow id, ports, counters), and `core::fmt`'s machinery
/// (the `Arguments` walk, `pad_integral`, the `io::Write` adapter) cost several times the digits themselves; in
/// callgrind of `inspect` without rules, formatting was a fifth of the single-threaded run's instructions.
#[inline]
fn put_num<N: itoa::Integer>(buf: &mut Vec<u8>, n: N) {
    buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Appends `,"<prefix><name>":` (`prefix` empty or, e.g., `response_`).
#[inline]
fn put_key(buf: &mut Vec<u8>, prefix: &str, name: &str) {
    buf.extend_from_slice(b",\"");
    buf.extend_from_slice(prefix.as_bytes());
    buf.extend_from_slice(name.as_bytes());
    buf.extend_from_slice(b"\":");
}

/// Appends `,"<name>":<n>`.
#[inline]
fn put_int<N: itoa::Integer>(buf: &mut Vec<u8>, name: &str, n: N) {
    put_key(buf, "", name);
    put_num(buf, n);
}

/// Appends `,"<name>":"<value>"`, `value` known not to need JSON escapes (the engine's own names).
#[inline]
fn put_name(buf: &mut Vec<u8>, name: &str, value: &str) {
    put_key(buf, "", name);
    buf.push(b'"');
    buf.extend_from_slice(value.as_bytes());
    buf.push(b'"');
}

/// Appends `v` as lowercase hex digits, `width` of them with leading zeros (`{v:0width$x}` for `v` that fit).
#[inline]
fn put_hex(buf: &mut Vec<u8>, v: u16, width: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..width).rev() {
        buf.push(HEX[usize::from((v >> (4 * i)) & 0xf)]);
    }
}

fn put_ip(buf: &mut Vec<u8>, ip: IpAddr, compress: bool) {
    buf.push(b'"');
    match ip {
        IpAddr::V4(v4) => {
            for (i, o) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    buf.push(b'.');
                }
                put_num(buf, o);
            }
        }
        IpAddr::V6(v6) if !compress => {
            for (i, g) in v6.segments().into_iter().enumerate() {
                if i > 0 {
                    buf.push(b':');
                }
                put_hex(buf, g, 4);
            }
        }
        // The compressed form's rules (the longest run of zero groups, embedded IPv4) are std's.
        IpAddr::V6(v6) => {
            let _ = write!(buf, "{v6}");
        }
    }
    buf.push(b'"');
}

fn put_ts(buf: &mut Vec<u8>, ts: u64) {
    buf.push(b'"');
    let _ = write_timestamp(buf, ts);
    buf.push(b'"');
}

/// `"src_ip":..,"src_port":..,"dest_ip":..,"dest_port":..` for data going in key direction `dir`.
fn put_endpoints(buf: &mut Vec<u8>, key: &FlowKey, dir: KeySide, prefix: &str, opts: EveOptions) {
    let (src, dst, sp, dp) = key.endpoints(dir);
    buf.push(b'"');
    buf.extend_from_slice(prefix.as_bytes());
    buf.extend_from_slice(b"src_ip\":");
    put_ip(buf, src, opts.ipv6_compress);
    if has_ports(key.proto) {
        put_key(buf, prefix, "src_port");
        put_num(buf, sp);
    }
    put_key(buf, prefix, "dest_ip");
    put_ip(buf, dst, opts.ipv6_compress);
    if has_ports(key.proto) {
        put_key(buf, prefix, "dest_port");
        put_num(buf, dp);
    }
}

/// `,"proto":"TCP"`.
fn put_proto(buf: &mut Vec<u8>, p: u8) {
    put_name(buf, "proto", &proto_name(p));
}

fn tcp_flag_words(buf: &mut Vec<u8>, flags: u8) {
    for (bit, name) in [
        (0x02, "syn"),
        (0x01, "fin"),
        (0x04, "rst"),
        (0x08, "psh"),
        (0x10, "ack"),
        (0x20, "urg"),
        (0x40, "ecn"),
        (0x80, "cwr"),
    ] {
        if flags & bit != 0 {
            put_key(buf, "", name);
            buf.extend_from_slice(b"true");
        }
    }
}

impl<W: Write> EveWriter<W> {
    pub fn new(out: W) -> Self {
        Self::with_options(out, EveOptions::default())
    }

    pub fn with_options(out: W, opts: EveOptions) -> Self {
        EveWriter {
            out,
            buf: Vec::with_capacity(1024),
            lines: 0,
            opts,
        }
    }

    /// Lines written.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Writes one event as one line.
    pub fn write(&mut self, e: &Event) -> io::Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        render_with(&mut buf, e, self.opts);
        buf.push(b'\n');
        let r = self.out.write_all(&buf);
        self.buf = buf;
        self.lines += 1;
        r
    }

    /// Writes `lines` lines rendered elsewhere ([`render_lines`], e.g. on the worker that produced the events).
    pub fn write_rendered(&mut self, bytes: &[u8], lines: u64) -> io::Result<()> {
        self.lines += lines;
        self.out.write_all(bytes)
    }

    /// Writes `lines` lines rendered elsewhere as [`EveWriter::write_rendered`], in several parts one after another
    /// (several packets' output), with vectored writes: a writer that passes large writes through (a buffered file)
    /// writes them straight from the parts, without copying them into its buffer first.
    pub fn write_rendered_parts(&mut self, parts: &[&[u8]], lines: u64) -> io::Result<()> {
        self.lines += lines;
        // As many parts as one vectored write takes (IOV_MAX on Linux): a writer passes a write through only when
        // it is large, so the parts must not be cut into small writes.
        let mut slices = [io::IoSlice::new(&[]); 1024];
        for chunk in parts.chunks(slices.len()) {
            for (slot, part) in slices.iter_mut().zip(chunk) {
                *slot = io::IoSlice::new(part);
            }
            let mut bufs = &mut slices[..chunk.len()];
            io::IoSlice::advance_slices(&mut bufs, 0);
            while !bufs.is_empty() {
                match self.out.write_vectored(bufs) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => io::IoSlice::advance_slices(&mut bufs, n),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Writes every event of a slice.
    pub fn write_all(&mut self, events: &[Event]) -> io::Result<()> {
        for e in events {
            self.write(e)?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The inner writer (to reopen a file under it: lines are written whole, so between two calls no line is cut).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes and returns the inner writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Events as EVE lines (each a JSON object and a newline), appended to `buf`.
pub fn render_lines(buf: &mut Vec<u8>, events: &[Event]) {
    render_lines_with(buf, events, EveOptions::default());
}

/// [`render_lines`] with options.
pub fn render_lines_with(buf: &mut Vec<u8>, events: &[Event], opts: EveOptions) {
    for e in events {
        render_with(buf, e, opts);
        buf.push(b'\n');
    }
}

/// One event as a JSON object (no newline).
pub fn render(buf: &mut Vec<u8>, e: &Event) {
    render_with(buf, e, EveOptions::default());
}

/// [`render`] with options.
pub fn render_with(buf: &mut Vec<u8>, e: &Event, opts: EveOptions) {
    buf.extend_from_slice(b"{\"timestamp\":");
    put_ts(buf, e.ts_ns);
    if e.has_flow() {
        put_int(buf, "flow_id", e.flow_id);
    }
    if let Some(n) = e.pcap_cnt {
        put_int(buf, "pcap_cnt", n);
    }
    put_name(buf, "event_type", e.kind.event_type());
    buf.push(b',');
    match &e.kind {
        EventKind::Flow(r) => render_flow(buf, e, r, opts),
        EventKind::App(a) => render_app(buf, e, a, opts),
        EventKind::Alert(a) => render_alert(buf, e, a, opts),
        EventKind::Anomaly(a) => render_anomaly(buf, e, a, opts),
        EventKind::Packet(p) => render_packet(buf, e, p, opts),
    }
    buf.push(b'}');
}

/// An `anomaly` record as Suricata writes it: the packet's endpoints, the transaction, then what went wrong
/// (`"anomaly":{"app_proto":"dns","type":"applayer","event":"z_flag_set","layer":"proto_parser"}`); a decoder or
/// stream anomaly names its event with its kind's prefix, as Suricata's event table does
/// (`"anomaly":{"type":"decode","event":"decoder.ipv4.trunc_pkt"}`, `"type":"stream","event":"stream.…"`).
fn render_anomaly(buf: &mut Vec<u8>, e: &Event, a: &Anomaly, opts: EveOptions) {
    put_endpoints(buf, &e.key, e.dir, "", opts);
    put_proto(buf, e.key.proto);
    match *a {
        Anomaly::AppLayer { event, tx_id } => {
            let proto = event.proto();
            let _ = write!(buf, ",\"tx_id\":{tx_id},\"anomaly\":{{\"app_proto\":");
            put_str(buf, proto.suricata_name().unwrap_or(proto.name()));
            buf.extend_from_slice(b",\"type\":\"applayer\",\"event\":");
            put_str(buf, event.event());
            buf.extend_from_slice(b",\"layer\":\"proto_parser\"}");
        }
        Anomaly::Decode { event, packet } => {
            buf.extend_from_slice(b",\"anomaly\":{\"type\":\"decode\",\"event\":\"decoder.");
            buf.extend_from_slice(event.name().as_bytes());
            buf.extend_from_slice(b"\"}");
            if let Some(p) = packet {
                put_packet(buf, p.bytes(), p.linktype);
            }
        }
        Anomaly::Stream { event, packet } => {
            buf.extend_from_slice(b",\"anomaly\":{\"type\":\"stream\",\"event\":\"stream.");
            buf.extend_from_slice(event.name().as_bytes());
            buf.extend_from_slice(b"\"}");
            if let Some(p) = packet {
                put_packet(buf, p.bytes(), p.linktype);
            }
        }
    }
}

/// A packet's bytes, base64, and its link type, as Suricata writes them after a record's own object
/// (`,"packet":"AAEC...","packet_info":{"linktype":1,"linktype_name":"EN10MB"}`).
fn put_packet(buf: &mut Vec<u8>, data: &[u8], linktype: u32) {
    buf.extend_from_slice(b",\"packet\":\"");
    put_base64(buf, data);
    let _ = write!(
        buf,
        "\",\"packet_info\":{{\"linktype\":{},\"linktype_name\":\"{}\"}}",
        linktype,
        linktype_name(linktype)
    );
}

/// A tagged packet as Suricata writes it: the packet's endpoints, then the packet itself, base64, and its link type
/// (`"packet":"AAEC...","packet_info":{"linktype":1,"linktype_name":"EN10MB"}`).
fn render_packet(buf: &mut Vec<u8>, e: &Event, p: &TaggedPacket, opts: EveOptions) {
    put_endpoints(buf, &e.key, e.dir, "", opts);
    put_proto(buf, e.key.proto);
    put_packet(buf, &p.data, p.linktype);
}

/// A link type's name as Suricata writes it in `packet_info.linktype_name` (libpcap's `DLT_` names; `n/a` for one it
/// does not name).
fn linktype_name(linktype: u32) -> &'static str {
    match linktype {
        0 => "NULL",
        1 => "EN10MB",
        9 => "PPP",
        12 | 14 | 101 => "RAW",
        104 => "C_HDLC",
        113 => "LINUX_SLL",
        228 => "IPV4",
        229 => "IPV6",
        239 => "NFLOG",
        276 => "LINUX_SLL2",
        _ => "n/a",
    }
}

/// `bytes` in standard base64 with padding (RFC 4648 section 4), as Suricata writes whole packets. Fifteen lines of
/// the one alphabet are kept here rather than a dependency for the one field that needs them.
fn put_base64(buf: &mut Vec<u8>, bytes: &[u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    buf.reserve(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                buf.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]);
            } else {
                buf.push(b'=');
            }
        }
    }
}

/// `"icmp_type":..,"icmp_code":..` (with `prefix`, e.g. `response_`).
fn put_icmp(buf: &mut Vec<u8>, icmp: Option<(u8, u8)>, prefix: &str) {
    if let Some((t, c)) = icmp {
        put_key(buf, prefix, "icmp_type");
        put_num(buf, t);
        put_key(buf, prefix, "icmp_code");
        put_num(buf, c);
    }
}

/// `"app_proto":..`, except for flows named after their IP protocol (ICMP, GRE, ...), which Suricata gives none.
fn put_app_proto(buf: &mut Vec<u8>, app: &AppLabel) {
    if !matches!(app, AppLabel::Ip(_)) {
        buf.extend_from_slice(b",\"app_proto\":");
        put_str(buf, app.eve_name());
    }
}

fn render_flow(buf: &mut Vec<u8>, e: &Event, r: &FlowRecord, opts: EveOptions) {
    put_endpoints(buf, &e.key, e.client, "", opts);
    put_proto(buf, e.key.proto);
    put_icmp(buf, r.icmp_toserver, "");
    put_icmp(buf, r.icmp_toclient, "response_");
    // Suricata names a protocol only from the flow's data: a label guessed from a port alone is not its `app_proto`
    // (the guess stays in the summary and in `flowbundle.app`).
    if r.evidence == Some(Evidence::Port) {
        put_app_proto(buf, &AppLabel::Unknown);
    } else {
        put_app_proto(buf, &r.app);
    }
    buf.extend_from_slice(b",\"flow\":{\"pkts_toserver\":");
    put_num(buf, r.pkts_toserver);
    put_int(buf, "pkts_toclient", r.pkts_toclient);
    put_int(buf, "bytes_toserver", r.bytes_toserver);
    put_int(buf, "bytes_toclient", r.bytes_toclient);
    buf.extend_from_slice(b",\"start\":");
    put_ts(buf, r.start_ns);
    buf.extend_from_slice(b",\"end\":");
    put_ts(buf, r.end_ns);
    let age = r.end_ns / 1_000_000_000 - r.start_ns / 1_000_000_000;
    put_int(buf, "age", age);
    put_name(buf, "state", r.state.name());
    put_name(buf, "reason", r.reason.name());
    put_key(buf, "", "alerted");
    buf.extend_from_slice(if r.alerted { b"true" } else { b"false" });
    if let Some(action) = r.action {
        put_name(buf, "action", action.name());
    }
    buf.push(b'}');
    if let Some(t) = &r.tcp {
        buf.extend_from_slice(b",\"tcp\":{\"tcp_flags\":\"");
        put_hex(buf, t.flags.into(), 2);
        buf.extend_from_slice(b"\",\"tcp_flags_ts\":\"");
        put_hex(buf, t.flags_ts.into(), 2);
        buf.extend_from_slice(b"\",\"tcp_flags_tc\":\"");
        put_hex(buf, t.flags_tc.into(), 2);
        buf.push(b'"');
        tcp_flag_words(buf, t.flags);
        put_name(buf, "state", t.state.name());
        buf.push(b'}');
    }
    // The flow's variables as its end left them, as Suricata writes them on its flow record.
    if let Some(v) = &r.vars {
        put_flow_vars(buf, v);
    }
    if !opts.extra {
        return;
    }
    buf.extend_from_slice(b",\"flowbundle\":{\"app\":");
    put_str(buf, r.app.name());
    if let Some(a) = r.application {
        buf.extend_from_slice(b",\"application\":");
        put_str(buf, a);
    }
    if let Some(ev) = r.application_evidence {
        let _ = write!(buf, ",\"application_evidence\":\"{}\"", ev.name());
    }
    if let Some(ev) = r.evidence {
        let _ = write!(buf, ",\"evidence\":\"{}\"", ev.name());
    }
    if let Some(p) = r.decided_at {
        let _ = write!(buf, ",\"decided_at\":{p}");
    }
    if let Some(t) = &r.tcp {
        let _ = write!(buf, ",\"tcp_gaps\":{}", t.gaps);
    }
    if !r.risks.is_empty() {
        buf.extend_from_slice(b",\"risks\":[");
        for (i, risk) in r.risks.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            put_str(buf, risk.name());
        }
        buf.push(b']');
    }
    buf.push(b'}');
}

fn render_app(buf: &mut Vec<u8>, e: &Event, r: &AppRecord, opts: EveOptions) {
    put_endpoints(buf, &e.key, e.dir, "", opts);
    put_proto(buf, e.key.proto);
    // The flow's and the packet's variables, as Suricata writes them on every record of the flow.
    if let Some(v) = &r.vars {
        put_flow_vars(buf, v);
    }
    let a = &r.event;
    if let AppEvent::Http(h) = a {
        put_int(buf, "tx_id", h.tx_id);
    }
    if let AppEvent::Sip(s) = a {
        put_int(buf, "tx_id", s.tx_id);
    }
    if let AppEvent::Dcerpc(d) = a {
        put_int(buf, "tx_id", d.tx_id);
    }
    if let AppEvent::Smb(s) = a {
        put_int(buf, "tx_id", s.tx_id);
    }
    if let AppEvent::Smtp(s) = a {
        put_int(buf, "tx_id", s.tx_id);
    }
    put_app_object(buf, a);
}

/// `,"<event_type>":{...}`: an application event's object, as Suricata writes it in its own record and beside an
/// alert on its transaction. A mail transaction writes its envelope (`smtp`) and its message (`email`) beside it.
fn put_app_object(buf: &mut Vec<u8>, a: &AppEvent) {
    if let AppEvent::Smtp(s) = a {
        buf.extend_from_slice(b",\"smtp\":");
        let start = buf.len();
        if serde_json::to_writer(&mut *buf, s).is_err() {
            buf.truncate(start);
            buf.extend_from_slice(b"{}");
        }
        if let Some(email) = &s.email {
            buf.extend_from_slice(b",\"email\":");
            let start = buf.len();
            if serde_json::to_writer(&mut *buf, email).is_err() {
                buf.truncate(start);
                buf.extend_from_slice(b"{}");
            }
        }
        return;
    }
    // The event serialises as {"<event_type>":{...}}: splice its inside into this object.
    let start = buf.len();
    if serde_json::to_writer(&mut *buf, a).is_ok() && buf.len() >= start + 2 {
        // Replace the opening brace with the separating comma and drop the closing brace.
        buf[start] = b',';
        buf.pop();
    } else {
        buf.truncate(start);
    }
}

fn render_alert(buf: &mut Vec<u8>, e: &Event, a: &AlertEvent, opts: EveOptions) {
    put_endpoints(buf, &e.key, e.dir, "", opts);
    put_proto(buf, e.key.proto);
    put_icmp(buf, a.icmp, "");
    // The transaction the rule matched in, at the top level (Suricata's correlation key with the transaction's
    // own record).
    if let Some(id) = a.tx_id {
        put_int(buf, "tx_id", id);
    }
    let direction = if e.to_server() {
        "to_server"
    } else {
        "to_client"
    };
    put_name(buf, "direction", direction);
    buf.extend_from_slice(b",\"alert\":{\"action\":\"");
    buf.extend_from_slice(if a.blocked { b"blocked" } else { b"allowed" });
    buf.extend_from_slice(b"\",\"gid\":");
    put_num(buf, a.gid);
    put_int(buf, "signature_id", a.signature_id);
    put_int(buf, "rev", a.rev);
    buf.extend_from_slice(b",\"signature\":");
    put_str(buf, &a.signature);
    buf.extend_from_slice(b",\"category\":");
    put_str(buf, &a.category);
    put_int(buf, "severity", a.severity);
    put_metadata(buf, &a.metadata);
    if let Some(t) = a.target {
        put_source_target(buf, &e.key, e.dir, t, opts);
    }
    // The rule's own captures (`alert_NAME`), as Suricata 8 writes them.
    if let Some(v) = a.vars.as_deref().filter(|v| !v.context.is_empty()) {
        buf.extend_from_slice(b",\"context\":{");
        put_vars(buf, &v.context);
        buf.push(b'}');
    }
    buf.push(b'}');
    if let Some(v) = &a.vars {
        put_flow_vars(buf, v);
    }
    if let Some(app) = &a.app {
        put_app_proto(buf, app);
    }
    // The transaction the alert is about, beside it as Suricata writes it.
    if let Some(tx) = &a.tx {
        put_app_object(buf, tx);
    }
    // A packet no flow tracks has no flow to describe.
    if !e.has_flow() {
        return;
    }
    buf.extend_from_slice(b",\"flow\":{\"pkts_toserver\":");
    put_num(buf, a.pkts_toserver);
    put_int(buf, "pkts_toclient", a.pkts_toclient);
    put_int(buf, "bytes_toserver", a.bytes_toserver);
    put_int(buf, "bytes_toclient", a.bytes_toclient);
    buf.extend_from_slice(b",\"start\":");
    put_ts(buf, a.flow_start_ns);
    buf.push(b',');
    put_endpoints(buf, &e.key, e.client, "", opts);
    buf.push(b'}');
}

/// `,"source":{"ip":..,"port":..},"target":{..}`: the alerting packet's endpoints, the one the rule's `target`
/// names as the target (ports on TCP and UDP only), as Suricata writes them.
fn put_source_target(
    buf: &mut Vec<u8>,
    key: &FlowKey,
    dir: KeySide,
    t: AlertTarget,
    opts: EveOptions,
) {
    let (src, dst, sp, dp) = key.endpoints(dir);
    let (source, target) = match t {
        AlertTarget::DestIp => ((src, sp), (dst, dp)),
        AlertTarget::SrcIp => ((dst, dp), (src, sp)),
    };
    for (name, (ip, port)) in [("source", source), ("target", target)] {
        put_key(buf, "", name);
        buf.extend_from_slice(b"{\"ip\":");
        put_ip(buf, ip, opts.ipv6_compress);
        if has_ports(key.proto) {
            put_int(buf, "port", port);
        }
        buf.push(b'}');
    }
}

/// `,"metadata":{"key":["value",...],...}`: the rule's entries grouped by key, keys in order of first appearance,
/// as Suricata writes `alert.metadata`. Nothing when the rule has none.
fn put_metadata(buf: &mut Vec<u8>, entries: &[(String, String)]) {
    if entries.is_empty() {
        return;
    }
    buf.extend_from_slice(b",\"metadata\":{");
    for (i, (key, _)) in entries.iter().enumerate() {
        if entries[..i].iter().any(|(k, _)| k == key) {
            continue;
        }
        if i > 0 {
            buf.push(b',');
        }
        put_str(buf, key);
        buf.extend_from_slice(b":[");
        let values = entries.iter().filter(|(k, _)| k == key);
        for (j, (_, v)) in values.enumerate() {
            if j > 0 {
                buf.push(b',');
            }
            put_str(buf, v);
        }
        buf.push(b']');
    }
    buf.push(b'}');
}

/// `"name":"value",...`: variables as Suricata writes them, bytes outside printable ASCII as `.`.
fn put_vars(buf: &mut Vec<u8>, vars: &[(String, Vec<u8>)]) {
    for (i, (name, value)) in vars.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        put_str(buf, name);
        buf.push(b':');
        put_printable(buf, value);
    }
}

/// A byte string as Suricata's `SCJbSetPrintAsciiString` writes it: printable ASCII kept, every other byte `.`.
fn put_printable(buf: &mut Vec<u8>, value: &[u8]) {
    let text: String = value
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '.'
            }
        })
        .collect();
    put_str(buf, &text);
}

/// A number as JSON writes it, in the shortest form that reads back as the same `f64` (as Suricata's JSON builder
/// writes floats); `null` for what JSON cannot hold (no measure is NaN or infinite).
fn put_float(buf: &mut Vec<u8>, value: f64) {
    if serde_json::to_writer(&mut *buf, &value).is_err() {
        buf.extend_from_slice(b"null");
    }
}

/// Suricata's top-level `metadata` (on by default in its EVE output) for an alert or a flow record: the flow's
/// flowbits, integers, measured entropy and variables and the packet's variables (`{"flowbits":[..],"flowints":
/// {..},"entropy":{"file_data":4.15},"flowvars":[{name:value}],"pktvars":[..]}`; `entropy`: what the flow's
/// `entropy` keywords last measured, by buffer name), and `traffic` (`{"id":[..],"label":[..]}`) from the flowbits
/// named `traffic/id/X` and `traffic/label/X`, which Suricata lists there instead of under `flowbits`. Nothing for
/// what is empty.
fn put_flow_vars(buf: &mut Vec<u8>, v: &flowbundle_events::AlertVars) {
    const ID: &str = "traffic/id/";
    const LABEL: &str = "traffic/label/";
    let plain = || {
        v.flowbits
            .iter()
            .filter(|b| !b.starts_with(ID) && !b.starts_with(LABEL))
    };
    let any_plain = plain().next().is_some();
    if any_plain
        || !v.flowints.is_empty()
        || !v.entropy.is_empty()
        || !v.flowvars.is_empty()
        || !v.pktvars.is_empty()
    {
        buf.extend_from_slice(b",\"metadata\":{");
        let mut first = true;
        let mut key = |buf: &mut Vec<u8>, k: &str| {
            if !first {
                buf.push(b',');
            }
            first = false;
            let _ = write!(buf, "\"{k}\":");
        };
        if any_plain {
            key(buf, "flowbits");
            buf.push(b'[');
            for (i, b) in plain().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                put_str(buf, b);
            }
            buf.push(b']');
        }
        if !v.flowints.is_empty() {
            key(buf, "flowints");
            buf.push(b'{');
            for (i, (name, value)) in v.flowints.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                put_str(buf, name);
                let _ = write!(buf, ":{value}");
            }
            buf.push(b'}');
        }
        if !v.entropy.is_empty() {
            key(buf, "entropy");
            buf.push(b'{');
            for (i, (name, value)) in v.entropy.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                put_str(buf, name);
                buf.push(b':');
                put_float(buf, *value);
            }
            buf.push(b'}');
        }
        for (name, vars) in [("flowvars", &v.flowvars), ("pktvars", &v.pktvars)] {
            if vars.is_empty() {
                continue;
            }
            key(buf, name);
            buf.push(b'[');
            for (i, var) in vars.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                buf.push(b'{');
                put_vars(buf, std::slice::from_ref(var));
                buf.push(b'}');
            }
            buf.push(b']');
        }
        buf.push(b'}');
    }
    let ids = || v.flowbits.iter().filter_map(|b| b.strip_prefix(ID));
    let labels = || v.flowbits.iter().filter_map(|b| b.strip_prefix(LABEL));
    if ids().next().is_some() || labels().next().is_some() {
        buf.extend_from_slice(b",\"traffic\":{");
        let mut first = true;
        for (name, mut list) in [
            ("id", Box::new(ids()) as Box<dyn Iterator<Item = &str>>),
            ("label", Box::new(labels())),
        ] {
            let Some(head) = list.next() else {
                continue;
            };
            if !first {
                buf.push(b',');
            }
            first = false;
            let _ = write!(buf, "\"{name}\":[");
            put_str(buf, head);
            for x in list {
                buf.push(b',');
                put_str(buf, x);
            }
            buf.push(b']');
        }
        buf.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowbundle_events::{EndReason, FlowState, TcpState, TcpSummary};
    use flowbundle_types::{AppProto, FlowRisk};

    /// A writer that takes at most 7 bytes a call, vectored or not: the parts still come out whole and in order.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(7);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
            let mut left = 7;
            for b in bufs {
                let n = b.len().min(left);
                self.0.extend_from_slice(&b[..n]);
                left -= n;
            }
            Ok(7 - left)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn rendered_parts_are_written_whole_and_in_order_and_their_lines_counted() {
        let lines: Vec<Vec<u8>> = (0..2500)
            .map(|i| format!("{{\"n\":{i}}}\n").into_bytes())
            .collect();
        let mut parts: Vec<&[u8]> = lines.iter().map(|l| &l[..]).collect();
        // Empty parts are skipped.
        parts.insert(3, b"");
        let mut w = EveWriter::new(Trickle(Vec::new()));
        w.write_rendered_parts(&parts, 2500).unwrap();
        assert_eq!(w.lines(), 2500);
        assert!(w.into_inner().unwrap().0 == lines.concat());
    }

    fn key() -> (FlowKey, KeySide) {
        FlowKey::new(
            "10.0.0.2".parse().unwrap(),
            40000,
            "10.0.0.1".parse().unwrap(),
            80,
            6,
        )
    }

    /// The line `anomaly` is written as (packet 4 of flow 9, client to server), parsed.
    fn anomaly_line(anomaly: Anomaly) -> serde_json::Value {
        let (k, d) = key();
        let e = Event {
            ts_ns: 1_258_133_615_239_416_000,
            flow_id: 9,
            pcap_cnt: Some(4),
            seq: 0,
            key: k,
            client: d,
            dir: d,
            kind: EventKind::Anomaly(Box::new(anomaly)),
        };
        let mut b = Vec::new();
        render(&mut b, &e);
        serde_json::from_slice(&b).expect("JSON")
    }

    #[test]
    fn a_flow_record_line() {
        let (k, d) = key();
        let e = Event {
            ts_ns: 1_258_133_615_239_416_000,
            flow_id: 42,
            pcap_cnt: None,
            seq: 0,
            key: k,
            client: d,
            dir: d,
            kind: EventKind::Flow(Box::new(FlowRecord {
                app: AppLabel::Proto(AppProto::Http),
                application: Some("Google"),
                application_evidence: Some(flowbundle_events::ApplicationEvidence::HostName),
                evidence: Some(flowbundle_events::Evidence::Parser),
                risks: [FlowRisk::HttpSuspiciousUserAgent, FlowRisk::NumericIpHost]
                    .into_iter()
                    .collect(),
                decided_at: Some(4),
                pkts_toserver: 7,
                pkts_toclient: 8,
                bytes_toserver: 815,
                bytes_toclient: 3993,
                start_ns: 1_258_133_614_430_569_000,
                end_ns: 1_258_133_615_239_416_000,
                state: FlowState::Closed,
                reason: EndReason::Timeout,
                alerted: false,
                action: None,
                tcp: Some(TcpSummary {
                    flags: 0x1b,
                    flags_ts: 0x1b,
                    flags_tc: 0x1b,
                    state: TcpState::Closed,
                    gaps: 0,
                }),
                icmp_toserver: None,
                icmp_toclient: None,
                vars: None,
            })),
        };
        let mut b = Vec::new();
        render_with(
            &mut b,
            &e,
            EveOptions {
                extra: true,
                ..EveOptions::default()
            },
        );
        let s = String::from_utf8(b).unwrap();
        assert_eq!(
            s,
            "{\"timestamp\":\"2009-11-13T17:33:35.239416+0000\",\"flow_id\":42,\"event_type\":\"flow\",\
             \"src_ip\":\"10.0.0.2\",\"src_port\":40000,\"dest_ip\":\"10.0.0.1\",\"dest_port\":80,\"proto\":\"TCP\",\
             \"app_proto\":\"http\",\"flow\":{\"pkts_toserver\":7,\"pkts_toclient\":8,\"bytes_toserver\":815,\
             \"bytes_toclient\":3993,\"start\":\"2009-11-13T17:33:34.430569+0000\",\
             \"end\":\"2009-11-13T17:33:35.239416+0000\",\"age\":1,\"state\":\"closed\",\"reason\":\"timeout\",\
             \"alerted\":false},\"tcp\":{\"tcp_flags\":\"1b\",\"tcp_flags_ts\":\"1b\",\"tcp_flags_tc\":\"1b\",\
             \"syn\":true,\"fin\":true,\"psh\":true,\"ack\":true,\"state\":\"closed\"},\
             \"flowbundle\":{\"app\":\"HTTP\",\"application\":\"Google\",\"application_evidence\":\"host_name\",\"evidence\":\"parser\",\"decided_at\":4,\"tcp_gaps\":0,\
             \"risks\":[\"NDPI_HTTP_SUSPICIOUS_USER_AGENT\",\"NDPI_NUMERIC_IP_HOST\"]}}"
        );
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["flow"]["state"], "closed");
        // Without the option, nothing outside Suricata's schema.
        let mut b = Vec::new();
        render(&mut b, &e);
        let plain = String::from_utf8(b).unwrap();
        let (without, _) = s.split_once(",\"flowbundle\"").unwrap();
        assert_eq!(plain, format!("{without}}}"));
    }

    /// A flow record writes the flow's variables as its end left them, as Suricata's flow record does: flowbits,
    /// integers, the measured entropy and variables in the top-level `metadata`, traffic ids and labels in
    /// `traffic`; so does a transaction's record, with the packet's variables; both validate against Suricata's
    /// schema.
    #[test]
    fn a_flow_record_writes_the_flows_variables() {
        let (k, d) = key();
        let rec = FlowRecord {
            app: AppLabel::Proto(AppProto::Http),
            application: None,
            application_evidence: None,
            evidence: Some(flowbundle_events::Evidence::Parser),
            risks: Default::default(),
            decided_at: None,
            pkts_toserver: 5,
            pkts_toclient: 5,
            bytes_toserver: 400,
            bytes_toclient: 900,
            start_ns: 1_000_000_000,
            end_ns: 2_000_000_000,
            state: FlowState::Closed,
            reason: EndReason::Shutdown,
            alerted: true,
            action: None,
            tcp: None,
            icmp_toserver: None,
            icmp_toclient: None,
            vars: Some(Box::new(flowbundle_events::AlertVars {
                flowbits: vec![
                    "junkbit".into(),
                    "traffic/id/curl".into(),
                    "traffic/label/cli-http".into(),
                ],
                flowints: vec![("count".into(), 2)],
                flowvars: vec![("gid".into(), b"0".to_vec())],
                entropy: vec![("file_data".into(), 4.150007324019584)],
                ..Default::default()
            })),
        };
        let e = Event {
            ts_ns: 2_000_000_000,
            flow_id: 42,
            pcap_cnt: None,
            seq: 0,
            key: k,
            client: d,
            dir: d,
            kind: EventKind::Flow(Box::new(rec)),
        };
        let mut b = Vec::new();
        render(&mut b, &e);
        let v: serde_json::Value = serde_json::from_slice(&b).expect("JSON");
        assert_eq!(
            v["metadata"],
            serde_json::json!({
                "flowbits": ["junkbit"],
                "flowints": {"count": 2},
                "entropy": {"file_data": 4.150007324019584},
                "flowvars": [{"gid": "0"}],
            })
        );
        assert_eq!(
            v["traffic"],
            serde_json::json!({"id": ["curl"], "label": ["cli-http"]})
        );
        // The float is written in the shortest form that reads back as itself.
        assert!(
            std::str::from_utf8(&b)
                .expect("UTF-8")
                .contains("\"entropy\":{\"file_data\":4.150007324019584}")
        );
        // A transaction's record writes them too (with the packet's own variables), as Suricata's transaction
        // loggers do.
        let EventKind::Flow(rec) = &e.kind else {
            unreachable!()
        };
        let mut vars = rec.vars.clone().expect("vars");
        vars.pktvars = vec![("uid".into(), b"0".to_vec())];
        let ftp = AppEvent::Ftp(flowbundle_events::event::FtpEvent {
            command: Some("RETR".into()),
            reply_received: "no",
            ..Default::default()
        });
        let app = Event {
            pcap_cnt: Some(3),
            kind: EventKind::App(Box::new(AppRecord {
                event: ftp,
                vars: Some(vars),
            })),
            ..e.clone()
        };
        let mut b = Vec::new();
        render(&mut b, &app);
        let a: serde_json::Value = serde_json::from_slice(&b).expect("JSON");
        assert_eq!(a["event_type"], "ftp");
        assert_eq!(a["ftp"]["command"], "RETR");
        assert_eq!(a["metadata"]["flowbits"], serde_json::json!(["junkbit"]));
        assert_eq!(a["metadata"]["pktvars"], serde_json::json!([{"uid": "0"}]));
        assert_eq!(a["traffic"], v["traffic"]);
        if let Some(path) = flowbundle_testsupport::data("suricata-eve/schema.json") {
            let schema = flowbundle_testsupport::json_schema::Schema::load(&path).expect("schema");
            assert_eq!(schema.errors(&v), Vec::<String>::new(), "{v}");
            assert_eq!(schema.errors(&a), Vec::<String>::new(), "{a}");
        }
    }

    /// `app_proto` is Suricata's value: `failed` for a protocol Suricata has no parser for and for a label guessed
    /// from a port alone; the engine's name stays in `flowbundle.app`.
    #[test]
    fn app_proto_is_what_suricata_writes() {
        let (k, d) = key();
        let line = |app: AppLabel, evidence: Evidence| {
            let e = Event {
                ts_ns: 1_000_000_000,
                flow_id: 1,
                pcap_cnt: None,
                seq: 0,
                key: k,
                client: d,
                dir: d,
                kind: EventKind::Flow(Box::new(FlowRecord {
                    app,
                    application: None,
                    application_evidence: None,
                    evidence: Some(evidence),
                    risks: Default::default(),
                    decided_at: Some(0),
                    pkts_toserver: 1,
                    pkts_toclient: 1,
                    bytes_toserver: 60,
                    bytes_toclient: 60,
                    start_ns: 1_000_000_000,
                    end_ns: 1_000_000_000,
                    state: FlowState::Closed,
                    reason: EndReason::Timeout,
                    alerted: false,
                    action: None,
                    tcp: None,
                    icmp_toserver: None,
                    icmp_toclient: None,
                    vars: None,
                })),
            };
            let mut b = Vec::new();
            render_with(
                &mut b,
                &e,
                EveOptions {
                    extra: true,
                    ..EveOptions::default()
                },
            );
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            (
                v["app_proto"].as_str().unwrap_or("").to_string(),
                v["flowbundle"]["app"].as_str().unwrap_or("").to_string(),
            )
        };
        let proto = |p| AppLabel::Proto(p);
        assert_eq!(
            line(proto(AppProto::Smb), Evidence::Parser),
            ("smb".into(), "SMBv23".into())
        );
        assert_eq!(
            line(proto(AppProto::Smb), Evidence::Port),
            ("failed".into(), "SMBv23".into())
        );
        assert_eq!(
            line(proto(AppProto::NetBios), Evidence::Parser),
            ("failed".into(), "NetBIOS".into())
        );
        assert_eq!(
            line(
                AppLabel::Signature("bittorrent".into()),
                Evidence::Signature
            ),
            ("failed".into(), "bittorrent".into())
        );
    }

    /// `target:dest_ip` names the packet's destination as the target, `target:src_ip` its source, with ports on
    /// TCP, as Suricata's `alert.source` / `alert.target`.
    #[test]
    fn alert_source_and_target_follow_the_rule() {
        let (k, d) = key();
        let mut b = Vec::new();
        put_source_target(&mut b, &k, d, AlertTarget::DestIp, EveOptions::default());
        assert_eq!(
            String::from_utf8(b).unwrap(),
            ",\"source\":{\"ip\":\"10.0.0.2\",\"port\":40000},\"target\":{\"ip\":\"10.0.0.1\",\"port\":80}"
        );
        let mut b = Vec::new();
        put_source_target(&mut b, &k, d, AlertTarget::SrcIp, EveOptions::default());
        assert_eq!(
            String::from_utf8(b).unwrap(),
            ",\"source\":{\"ip\":\"10.0.0.1\",\"port\":80},\"target\":{\"ip\":\"10.0.0.2\",\"port\":40000}"
        );
    }

    #[test]
    fn alert_metadata_is_grouped_by_key() {
        let mut b = Vec::new();
        put_metadata(
            &mut b,
            &[
                ("policy".into(), "balanced-ips drop".into()),
                ("created_at".into(), "2010_07_30".into()),
                ("policy".into(), "security-ips drop".into()),
            ],
        );
        assert_eq!(
            String::from_utf8(b).unwrap(),
            ",\"metadata\":{\"policy\":[\"balanced-ips drop\",\"security-ips drop\"],\"created_at\":[\"2010_07_30\"]}"
        );
    }

    /// An alert on a packet no flow tracks carries neither `flow_id` nor a `flow` object, as in Suricata; the same
    /// alert on a flow's packet carries both.
    #[test]
    fn flowless_alerts_have_no_flow_id_and_no_flow() {
        let (k, d) = key();
        let alert = AlertEvent {
            signature_id: 7,
            gid: 1,
            rev: 1,
            signature: "frag".into(),
            category: "".into(),
            severity: 3,
            rule_index: 0,
            metadata: Vec::new().into(),
            icmp: None,
            app: None,
            source: "packet",
            offset: 0,
            target: None,
            blocked: false,
            pkts_toserver: 0,
            pkts_toclient: 0,
            bytes_toserver: 0,
            bytes_toclient: 0,
            flow_start_ns: 0,
            tx: None,
            tx_id: None,
            vars: None,
            dataset_values: None,
        };
        let mut e = Event {
            ts_ns: 1_258_133_615_239_416_000,
            flow_id: flowbundle_events::NO_FLOW,
            pcap_cnt: Some(3),
            seq: 0,
            key: k,
            client: d,
            dir: d,
            kind: EventKind::Alert(Box::new(alert)),
        };
        let line = |e: &Event| {
            let mut b = Vec::new();
            render(&mut b, e);
            serde_json::from_slice::<serde_json::Value>(&b).expect("JSON")
        };
        let v = line(&e);
        assert!(v.get("flow_id").is_none() && v.get("flow").is_none(), "{v}");
        assert_eq!(v["alert"]["signature_id"], 7);
        assert_eq!(v["pcap_cnt"], 3);
        e.flow_id = 42;
        let v = line(&e);
        assert_eq!(v["flow_id"], 42);
        assert_eq!(v["flow"]["src_ip"], "10.0.0.2");
        assert!(v.get("ftp").is_none(), "no transaction, no ftp object");
        assert!(v.get("tx_id").is_none(), "no transaction, no tx_id");
        // An alert on an FTP transaction: its `ftp` object beside the alert, as the `ftp` event writes it.
        let ftp = flowbundle_events::event::FtpEvent {
            command: Some("RETR".into()),
            completion_code: vec!["150".into()],
            reply_received: "no",
            ..Default::default()
        };
        let tx = AppEvent::Ftp(ftp);
        let mut record = Vec::new();
        put_app_object(&mut record, &tx);
        if let EventKind::Alert(a) = &mut e.kind {
            a.tx = Some(Box::new(tx));
            a.tx_id = Some(4);
        }
        let mut b = Vec::new();
        render(&mut b, &e);
        let text = String::from_utf8(b).expect("UTF-8");
        // The same object, byte for byte, as the transaction's own record writes.
        assert!(
            text.contains(std::str::from_utf8(&record).expect("UTF-8")),
            "{text}"
        );
        let v = line(&e);
        assert_eq!(v["ftp"]["command"], "RETR");
        assert_eq!(v["ftp"]["completion_code"][0], "150");
        assert_eq!(v["ftp"]["reply_received"], "no");
        // The transaction's number at the top level, as Suricata writes it.
        assert_eq!(v["tx_id"], 4);
        assert!(v["alert"].get("context").is_none() && v.get("metadata").is_none());
        // The alert's variables: its own in `alert.context`, the flow's and the packet's in the top-level
        // `metadata`, flowbits named traffic/id/X and traffic/label/X in `traffic`.
        if let EventKind::Alert(a) = &mut e.kind {
            a.vars = Some(Box::new(flowbundle_events::AlertVars {
                context: vec![("ua".into(), b"Mozilla".to_vec())],
                flowbits: vec![
                    "seen".into(),
                    "traffic/id/curl".into(),
                    "traffic/label/cli-http".into(),
                ],
                flowints: vec![("n".into(), 3)],
                flowvars: vec![
                    ("key".into(), b"Mozilla".to_vec()),
                    ("value".into(), b"5.0\x01".to_vec()),
                ],
                pktvars: vec![("uid".into(), b"0".to_vec())],
                entropy: Vec::new(),
            }));
        }
        let v = line(&e);
        assert_eq!(v["alert"]["context"], serde_json::json!({"ua": "Mozilla"}));
        assert_eq!(
            v["metadata"],
            serde_json::json!({
                "flowbits": ["seen"],
                "flowints": {"n": 3},
                "flowvars": [{"key": "Mozilla"}, {"value": "5.0."}],
                "pktvars": [{"uid": "0"}],
            })
        );
        assert_eq!(
            v["traffic"],
            serde_json::json!({"id": ["curl"], "label": ["cli-http"]})
        );
    }

    /// Whole packets are written in standard base64 with padding (RFC 4648's test vectors).
    #[test]
    fn base64_as_rfc_4648_writes_it() {
        for (raw, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut b = Vec::new();
            put_base64(&mut b, raw.as_bytes());
            assert_eq!(String::from_utf8(b).unwrap(), want, "{raw:?}");
        }
        let mut b = Vec::new();
        put_base64(&mut b, &[0xff, 0xfe, 0x00]);
        assert_eq!(b, b"//4A");
    }

    /// A tagged packet is written as Suricata writes one: the packet's own endpoints and direction, the packet
    /// whole, its link type.
    #[test]
    fn a_tagged_packet_as_suricata_writes_it() {
        let (k, d) = key();
        let e = Event {
            ts_ns: 1_258_133_615_239_416_000,
            flow_id: 42,
            pcap_cnt: Some(9),
            seq: 3,
            key: k,
            client: d,
            dir: d.flip(),
            kind: EventKind::Packet(Box::new(TaggedPacket {
                data: b"foobar".to_vec().into(),
                linktype: 1,
                wire_len: 6,
                session: true,
            })),
        };
        let mut b = Vec::new();
        render(&mut b, &e);
        let v: serde_json::Value = serde_json::from_slice(&b).expect("JSON");
        assert_eq!(v["event_type"], "packet");
        assert_eq!(v["flow_id"], 42);
        assert_eq!(v["pcap_cnt"], 9);
        assert_eq!(
            v["src_ip"], "10.0.0.1",
            "the packet's own source (to the client): {v}"
        );
        assert_eq!(v["proto"], "TCP");
        assert_eq!(v["packet"], "Zm9vYmFy");
        assert_eq!(v["packet_info"]["linktype"], 1);
        assert_eq!(v["packet_info"]["linktype_name"], "EN10MB");
        assert!(v.get("alert").is_none() && v.get("flow").is_none());
    }

    /// Decoder and stream anomalies are written as Suricata writes them: the packet's endpoints, then the kind and
    /// the event with its kind's prefix; no transaction, no layer.
    #[test]
    fn decode_and_stream_anomalies_as_suricata_writes_them() {
        for (anomaly, kind, name) in [
            (
                Anomaly::Decode {
                    event: flowbundle_types::DecodeEvent::Ipv4TruncPkt,
                    packet: None,
                },
                "decode",
                "decoder.ipv4.trunc_pkt",
            ),
            (
                Anomaly::Stream {
                    event: flowbundle_types::StreamEvent::ReassemblySeqGap,
                    packet: None,
                },
                "stream",
                "stream.reassembly_seq_gap",
            ),
        ] {
            let v = anomaly_line(anomaly);
            assert_eq!(v["event_type"], "anomaly");
            assert_eq!(v["pcap_cnt"], 4);
            assert_eq!(v["proto"], "TCP");
            assert!(v.get("tx_id").is_none(), "{v}");
            assert_eq!(
                v["anomaly"],
                serde_json::json!({"type": kind, "event": name}),
                "{v}"
            );
            assert!(v.get("packet").is_none() && v.get("packet_info").is_none());
        }
    }

    /// With the anomaly output's `packethdr`, a decoder or stream anomaly carries the packet's first 32 bytes
    /// (base64) and its link type, as Suricata's `packet` and `packet_info`.
    #[test]
    fn anomalies_carry_the_packet_head_with_packethdr() {
        let frame: Vec<u8> = (0u8..40).collect();
        let head = flowbundle_events::PacketHead::new(1, &frame);
        assert_eq!(head.bytes(), &frame[..32]);
        assert_eq!(
            flowbundle_events::PacketHead::new(101, &frame[..3]).bytes(),
            &frame[..3]
        );
        for anomaly in [
            Anomaly::Decode {
                event: flowbundle_types::DecodeEvent::Icmpv4UnknownType,
                packet: Some(head),
            },
            Anomaly::Stream {
                event: flowbundle_types::StreamEvent::ReassemblySeqGap,
                packet: Some(head),
            },
        ] {
            let v = anomaly_line(anomaly);
            assert_eq!(v["event_type"], "anomaly");
            // Bytes 0 to 31, base64.
            assert_eq!(
                v["packet"], "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                "{v}"
            );
            assert_eq!(v["packet_info"]["linktype"], 1);
            assert_eq!(v["packet_info"]["linktype_name"], "EN10MB");
        }
    }

    /// An application-layer anomaly is written as Suricata writes it: the transaction at the top level, then the
    /// protocol (Suricata's name), the kind, the event and the layer.
    #[test]
    fn applayer_anomaly_as_suricata_writes_it() {
        let v = anomaly_line(Anomaly::AppLayer {
            event: flowbundle_types::AppLayerEvent::FtpRequestCommandTooLong,
            tx_id: 3,
        });
        assert_eq!(v["event_type"], "anomaly");
        assert_eq!(v["tx_id"], 3);
        assert_eq!(v["proto"], "TCP");
        assert_eq!(
            v["anomaly"],
            serde_json::json!({
                "app_proto": "ftp",
                "type": "applayer",
                "event": "request_command_too_long",
                "layer": "proto_parser"
            })
        );
    }

    /// IPv6 addresses are written in full by default, as Suricata writes them, and compressed on request; IPv4 is
    /// the same either way.
    #[test]
    fn ipv6_addresses_full_unless_compressed() {
        let ip = |s: &str, compress: bool| {
            let mut b = Vec::new();
            put_ip(&mut b, s.parse().unwrap(), compress);
            String::from_utf8(b).unwrap()
        };
        assert_eq!(
            ip("fe80::20c:29ff:fef3:cf38", false),
            "\"fe80:0000:0000:0000:020c:29ff:fef3:cf38\""
        );
        assert_eq!(
            ip("fe80::20c:29ff:fef3:cf38", true),
            "\"fe80::20c:29ff:fef3:cf38\""
        );
        assert_eq!(
            ip("::1", false),
            "\"0000:0000:0000:0000:0000:0000:0000:0001\""
        );
        assert_eq!(ip("10.0.0.1", false), "\"10.0.0.1\"");
        assert_eq!(ip("10.0.0.1", true), "\"10.0.0.1\"");
    }
}
