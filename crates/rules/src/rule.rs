//! One rule: header, options, and the content chains it matches, built from the text of a rule.
//!
//! ## Dialects
//! Snort 3 and Suricata share most syntax but disagree on one thing that changes meaning: `http_uri;` (and the
//! other `http_*` keywords) is a *sticky buffer* in Snort 3 (it applies to the contents after it) and a *content
//! modifier* in Suricata's legacy syntax and Snort 2 (it applies to the content before it). A rule is read as
//! Snort 3 when it shows Snort 3 syntax: content modifiers inline (`content:"x",nocase,depth 4`), a `service`
//! option, or an `http_*` keyword before any content. Suricata's dotted sticky buffers (`http.uri`) mean the same in
//! both.
//!
//! ## Skips and errors
//! A rule that uses a keyword (or a keyword option) outside the supported subset is *skipped* with a reason naming
//! the first such keyword, e.g. `keyword flowbits` or `flow:only_stream`. A rule that is malformed (bad quoting,
//! non-numeric depth, modifier without a content, missing sid) is an *error* with its line number. Both are counted
//! in the [`crate::LoadReport`]; neither stops the rest of the file from loading.

use std::sync::Arc;

use memchr::memmem;

use flowbundle_types::{AppLayerEvent, AppProto, EventKind};

use crate::addr::{AddrSet, ExprError, PortSet, Resolver};
use crate::byte::{self, ByteItem};
use crate::classify::Classifications;
use crate::header::{HeaderTest, Num};
use crate::keyword::{self, Handler};
use crate::pcre::{Pcre, PcreBuffer, PcreError};
use crate::stream_size::StreamSize;
use crate::tag::Tag;
use crate::text::{self, Opt};
use crate::threshold::{Threshold, ThresholdError};
use crate::transform::Transform;
use crate::xbits::{Xbit, XbitError, XbitSpec};

/// Largest offset, depth, distance or within accepted (Suricata keeps them in 16 bits; 1 MiB is generous).
pub const MAX_POSITION: i64 = 1 << 20;
/// Most transforms on one sticky buffer.
pub const MAX_TRANSFORMS: usize = 8;
/// Most content and pcre items in one rule.
pub const MAX_ITEMS: usize = 256;
/// Most bytes of compiled pcre programs in one rule set (each is also capped, see [`crate::pcre`]): a rule file of
/// thousands of huge expressions cannot exhaust memory; the rules beyond it are skipped with a reason.
pub const MAX_PCRE_MEMORY: usize = 256 << 20;

/// What a rule asks for when it matches. Every action but `pass` produces an alert; `drop`, `reject` and `sdrop`
/// also drop the packet or the flow, and `pass` stops inspection of the packet or the flow, as Suricata applies
/// them (see [`Rule::flow_scoped`] for which of the two).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Alert,
    Drop,
    Reject,
    /// Snort 2 `sdrop`: drop without alerting (reported, so nothing is silent).
    Sdrop,
    /// Snort `log`.
    Log,
    /// `pass`: no alert; nothing else is inspected on the packet (or, for flow-scoped matches, the flow), and the
    /// alerts other rules raised on that packet are withdrawn, as Suricata's default action order (pass before
    /// drop, reject and alert) gives.
    Pass,
}

impl Action {
    /// Whether a match drops the packet or flow (`drop`, `reject`, `sdrop`): see
    /// [`crate::FlowMatchState::set_dropped`].
    pub fn drops(self) -> bool {
        matches!(self, Action::Drop | Action::Reject | Action::Sdrop)
    }

    /// Whether a match passes the packet or flow (`pass`).
    pub fn passes(self) -> bool {
        self == Action::Pass
    }

    /// Suricata's spelling, as EVE prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Alert => "alert",
            Action::Drop => "drop",
            Action::Reject => "reject",
            Action::Sdrop => "sdrop",
            Action::Log => "log",
            Action::Pass => "pass",
        }
    }
}

/// Suricata's `action-order`: the order in which the actions of the rules that matched one packet are applied.
/// Suricata sorts its rules by action first, so a packet's matches are applied in this order, and a `pass` withdraws
/// the matches that come after it (their alerts and their drops) while those before it keep theirs. The default,
/// `pass, drop, reject, alert`, makes a `pass` withdraw everything else; `drop, pass, reject, alert` lets a drop
/// alert and act even where a pass also matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ActionOrder {
    /// The rank of `pass`, `drop`, `reject` and `alert`, in that order (0 is applied first).
    ranks: [u8; 4],
}

impl Default for ActionOrder {
    fn default() -> Self {
        ActionOrder {
            ranks: [0, 1, 2, 3],
        }
    }
}

impl ActionOrder {
    /// The four names as Suricata's configuration lists them (`pass`, `drop`, `reject`, `alert`), each exactly once.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<ActionOrder, String> {
        let mut ranks = [u8::MAX; 4];
        let mut n = 0u8;
        for name in names {
            let slot = match name.trim() {
                "pass" => 0,
                "drop" => 1,
                "reject" => 2,
                "alert" => 3,
                other => {
                    return Err(format!(
                        "action-order: unknown action `{other}` (expected pass, drop, reject and alert)"
                    ));
                }
            };
            if ranks[slot] != u8::MAX || n > 3 {
                return Err(format!("action-order: `{}` listed twice", name.trim()));
            }
            ranks[slot] = n;
            n += 1;
        }
        if n != 4 {
            return Err(
                "action-order: expected pass, drop, reject and alert, each once".to_string(),
            );
        }
        Ok(ActionOrder { ranks })
    }

    /// Where a rule's matches are applied among a packet's (lower first): `sdrop` ranks as `drop`, `log` as
    /// `alert`.
    pub fn rank(&self, action: Action) -> u8 {
        let slot = match action {
            Action::Pass => 0,
            Action::Drop | Action::Sdrop => 1,
            Action::Reject => 2,
            Action::Alert | Action::Log => 3,
        };
        self.ranks[slot]
    }

    /// The actions in the order they are applied, as the configuration lists them.
    pub fn names(&self) -> [&'static str; 4] {
        let mut out = [""; 4];
        for (name, &r) in ["pass", "drop", "reject", "alert"].iter().zip(&self.ranks) {
            out[usize::from(r)] = name;
        }
        out
    }
}

/// `target`: which side of the alerting packet the rule says is attacked (EVE `alert.source` and `alert.target`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlertTarget {
    /// `target:src_ip`: the packet's source is the target, its destination the source.
    SrcIp,
    /// `target:dest_ip`: the packet's destination is the target.
    DestIp,
}

/// Protocol named in the rule header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    /// `ip`: every packet (TCP data is inspected as a stream).
    Ip,
    Tcp,
    Udp,
    /// `icmp`: ICMP and ICMPv6.
    Icmp,
    /// A transport the engine tracks by IP protocol number alone (`sctp`: 132): packets of that protocol.
    IpProto(u8),
    /// An application protocol (`http`, `dns`, `tls`, ...): the flow's detected protocol must be this one, named as
    /// Suricata's EVE `app_proto` names it.
    App(&'static str),
}

/// `http1` and `http2` as `http`: their rules take HTTP buffers (Suricata's `http` header means either version), and
/// the HTTP/2 parser fills HTTP/1's buffers.
pub(crate) fn http_family(p: &str) -> &str {
    match p {
        "http1" | "http2" => "http",
        p => p,
    }
}

/// Application protocols a header may name, by EVE `app_proto` name, with their aliases.
const APP_PROTOS: &[(&str, &str)] = &[
    ("http", "http"),
    ("http1", "http1"),
    ("http2", "http2"),
    ("tls", "tls"),
    ("ssl", "tls"),
    ("dns", "dns"),
    ("mdns", "mdns"),
    ("ssh", "ssh"),
    ("ftp", "ftp"),
    ("ftp-data", "ftp-data"),
    ("smtp", "smtp"),
    ("imap", "imap"),
    ("pop3", "pop3"),
    ("smb", "smb"),
    ("dcerpc", "dcerpc"),
    ("pgsql", "pgsql"),
    ("enip", "enip"),
    ("dnp3", "dnp3"),
    ("ike", "ike"),
    ("dhcp", "dhcp"),
    ("ntp", "ntp"),
    ("sip", "sip"),
    ("snmp", "snmp"),
    ("mqtt", "mqtt"),
    ("rdp", "rdp"),
    ("quic", "quic"),
    ("krb5", "krb5"),
    ("tftp", "tftp"),
    ("telnet", "telnet"),
];

/// A date of `tls_cert_notbefore` / `tls_cert_notafter` as seconds since the epoch (see
/// [`Builder::tls_validity`]).
fn cert_date(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let invalid = || format!("invalid date `{}`", trunc(s));
    if s.is_empty() {
        return Err("missing date".into());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| invalid());
    }
    let (date, time) = match s.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t.trim())),
        None => (s, None),
    };
    let num = |t: &str, lo: i64, hi: i64| -> Result<i64, String> {
        match t.parse::<i64>() {
            Ok(n) if t.bytes().all(|b| b.is_ascii_digit()) && (lo..=hi).contains(&n) => Ok(n),
            _ => Err(invalid()),
        }
    };
    let mut d = date.split('-');
    let (Some(y), Some(m)) = (d.next(), d.next()) else {
        return Err(invalid());
    };
    let (y, m) = (num(y, 0, 9999)?, num(m, 1, 12)?);
    let day = match d.next() {
        Some(x) => num(x, 1, 31)?,
        None if time.is_none() => 1,
        None => return Err(invalid()),
    };
    if d.next().is_some() {
        return Err(invalid());
    }
    let mut secs = 0;
    if let Some(t) = time {
        let mut parts = t.split(':');
        for (unit, hi) in [(3600, 23), (60, 59), (1, 60)] {
            match parts.next() {
                Some(p) => secs += unit * num(p, 0, hi)?,
                None if unit != 3600 => break,
                None => return Err(invalid()),
            }
        }
        if parts.next().is_some() {
            return Err(invalid());
        }
    }
    // Days from 1970-01-01 in the proleptic Gregorian calendar (the civil-from-days inverse of H. Hinnant).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Ok((era * 146_097 + doe - 719_468) * 86_400 + secs)
}

/// A certificate date as [`Buffer::TlsCertValidity`] holds it: the seconds offset by 2^63, so that comparing the
/// unsigned numbers compares the dates (before 1970 included).
pub fn cert_date_number(secs: i64) -> u64 {
    (secs as u64) ^ (1 << 63)
}

/// `dns.rcode`'s value with the response codes it names (`nxdomain`, case-insensitive; RFC 1035 and RFC 2136's
/// 0 to 10, as Suricata's enumeration) written as their numbers; anything else is left for the number parser.
fn rcode_numbers(v: &str) -> String {
    const NAMES: [&str; 11] = [
        "noerror", "formerr", "servfail", "nxdomain", "notimp", "refused", "yxdomain", "yxrrset",
        "nxrrset", "notauth", "notzone",
    ];
    let mut out = String::with_capacity(v.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(word.as_str()))
        {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in v.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Whether buffers of application protocol `app` may be inspected on a `udp` rule (the protocol runs over UDP).
fn udp_app(app: &str) -> bool {
    matches!(app, "dns" | "mdns" | "quic")
}

/// How a rule that applies to TCP inspects its payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TcpInspect {
    /// The reassembled stream (the default, as Suricata does for `tcp`).
    #[default]
    Stream,
    /// Each packet's payload on its own: Suricata's `tcp-pkt` protocol, and rules with `dsize` (which Suricata
    /// makes packet-only).
    Packet,
}

/// Direction constraint from `flow`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FlowDir {
    #[default]
    Any,
    /// `to_server` / `from_client`.
    ToServer,
    /// `to_client` / `from_server`.
    ToClient,
}

impl FlowDir {
    /// Whether data travelling `dir` may match.
    #[inline]
    pub fn admits(self, dir: flowbundle_types::Direction) -> bool {
        use flowbundle_types::Direction;
        match self {
            FlowDir::Any => true,
            FlowDir::ToServer => dir == Direction::ToServer,
            FlowDir::ToClient => dir == Direction::ToClient,
        }
    }
}

/// Connection-state constraint from `flow`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FlowState {
    /// No constraint (also `stateless`).
    #[default]
    Any,
    Established,
    NotEstablished,
}

/// Declares `Buffer` from one table, a row per buffer with its properties: the name rules know it by, the side of a
/// transaction it belongs to, the application protocol whose parser hands it over, and whether a transaction has
/// one value of it or any number; after a `;`, `Last` marks a buffer after which nothing else of its transaction
/// reaches the rules. Its count, its list and every property are derived from the rows, so a new buffer
/// cannot be left out of `Buffer::ALL` (per-buffer arrays, the profile and the keyword table's check all walk it) nor
/// lack a property.
macro_rules! buffers {
    ($($(#[$doc:meta])* $variant:ident => ($name:literal, $side:ident, $proto:tt, $inst:ident $(, $role:ident)? $(; $last:ident)? $(,)?),)*) => {
        /// The buffer a content chain inspects.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Buffer {
            $($(#[$doc])* $variant,)*
        }

        impl Buffer {
            /// Number of buffer kinds (array sizes).
            pub const COUNT: usize = [$(Buffer::$variant),*].len();

            /// Every buffer kind, in index order.
            pub const ALL: [Buffer; Buffer::COUNT] = [$(Buffer::$variant),*];

            /// Every buffer's properties, in index order.
            const PROPS: [BufferProps; Buffer::COUNT] = [$(BufferProps {
                name: $name,
                side: Side::$side,
                app_proto: buffer_proto!($proto),
                multi_instance: matches!(Instances::$inst, Instances::Many),
                role: buffer_role!($($role)?),
                ends_transaction: buffer_last!($($last)?),
            }),*];
        }
    };
}

/// A buffer row's application protocol: `None` or its EVE `app_proto` name.
macro_rules! buffer_proto {
    (None) => {
        None
    };
    ($p:literal) => {
        Some($p)
    };
}

/// A buffer row's role: [`Role::Field`] unless the row names another.
macro_rules! buffer_role {
    () => {
        Role::Field
    };
    ($r:ident) => {
        Role::$r
    };
}

/// A buffer row's `Last` mark: whether nothing of its transaction follows it.
macro_rules! buffer_last {
    () => {
        false
    };
    (Last) => {
        true
    };
}

/// What a buffer is, beyond its side, protocol and instance count (the last column of a buffer table row; a row
/// without one is a [`Role::Field`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A field of a transaction, or the payload.
    Field,
    /// A `file.data` buffer: the contents of a transaction's files, handed over one by one as each file closes
    /// (see [`Buffer::is_file_data`]).
    FileData,
    /// A field of the client hello that TLS and QUIC share (Suricata 8 inspects `ja3.hash`, `ja3.string` and
    /// `ja4.hash` on TLS and QUIC flows alike): its row names TLS, a rule may name QUIC.
    AlsoQuic,
    /// One of the packet's addresses (`ip.src`, `ip.dst`), checked with the rule's header on each packet.
    Address,
    /// One of the packet's raw headers (`ipv4.hdr`, `tcp.hdr`, ...), checked with the rule's header on each
    /// packet: bytes of the packet being inspected, which stream data does not have.
    RawHeader,
    /// The row's protocol's application-layer anomalies, as `app-layer-event:<proto>.<name>` reads them (one per
    /// protocol whose parser raises any: [`Buffer::app_layer_events`]).
    Events,
}

/// How many values of a buffer a transaction has (a row of the buffer table says): one, or any number (Suricata's
/// multi-instance buffers, see [`Buffer::multi_instance`]).
enum Instances {
    One,
    Many,
}

/// What the buffer table says of a buffer ([`Buffer::props`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferProps {
    /// Suricata's sticky-buffer keyword for it (or, for a buffer several keywords or sides share, a description).
    pub name: &'static str,
    /// The side of a transaction it belongs to.
    pub side: Side,
    /// The application protocol whose parser hands it over (EVE `app_proto` name); `None` for the payload, the
    /// packet's own fields and the files of any carrier.
    pub app_proto: Option<&'static str>,
    /// A transaction has any number of values of it (see [`Buffer::multi_instance`]).
    pub multi_instance: bool,
    /// What kind of buffer it is.
    pub role: Role,
    /// Nothing else of its transaction reaches the rules after it (see [`Buffer::ends_transaction`]).
    pub ends_transaction: bool,
}

buffers! {
    /// The payload: reassembled stream data for TCP, the datagram for anything else.
    Payload => ("payload", Either, None, One),
    HttpMethod => ("http.method", Request, "http", One),
    /// Normalised request URI (percent-decoding and dot segments resolved in the path).
    HttpUri => ("http.uri", Request, "http", One),
    HttpRawUri => ("http.uri.raw", Request, "http", One),
    /// Host header value, lowercased.
    HttpHost => ("http.host", Request, "http", One),
    HttpRawHost => ("http.host.raw", Request, "http", One),
    HttpUserAgent => ("http.user_agent", Request, "http", One),
    /// `http.cookie`: the request's `Cookie` value(s), or the response's `Set-Cookie` value(s) (Suricata inspects
    /// both; Snort 3's `http_cookie` to the client is `Set-Cookie` too).
    HttpCookie => ("http.cookie", Either, "http", One),
    /// Request header lines, `Name: value\r\n`, without `Cookie` (as Suricata's `http.header`).
    HttpRequestHeader => ("http.header (request)", Request, "http", One),
    /// Request header block as sent.
    HttpRequestRawHeader => ("http.header.raw (request)", Request, "http", One),
    HttpRequestBody => ("http.request_body", Request, "http", One),
    HttpStatCode => ("http.stat_code", Response, "http", One),
    /// Response header lines without `Set-Cookie`.
    HttpResponseHeader => ("http.header (response)", Response, "http", One),
    HttpResponseRawHeader => ("http.header.raw (response)", Response, "http", One),
    /// De-chunked, decompressed response body: the HTTP/1 and HTTP/2 parsers hand it over after everything else of
    /// its transaction, its file (`file.name`, `file.magic`, `filesize`) included (their tests check it).
    HttpResponseBody => ("http.response_body", Response, "http", One; Last),
    /// `http.request_line`: `GET /index.html HTTP/1.1`.
    HttpRequestLine => ("http.request_line", Request, "http", One),
    /// `http.response_line`: `HTTP/1.1 200 OK`.
    HttpResponseLine => ("http.response_line", Response, "http", One),
    /// `http.protocol`: `HTTP/1.1`, of the request or the response.
    HttpProtocol => ("http.protocol", Either, "http", One),
    /// `http.stat_msg`: the response's reason phrase (`OK`).
    HttpStatMsg => ("http.stat_msg", Response, "http", One),
    /// `http.start`: the request or status line, the header lines and the empty line, as sent.
    HttpStart => ("http.start", Either, "http", One),
    /// `http.header_names`: `\r\n` before each header name, and `\r\n\r\n` at the end (request or response).
    HttpHeaderNames => ("http.header_names", Either, "http", One),
    /// `http.content_type`: the `Content-Type` value (request or response).
    HttpContentType => ("http.content_type", Either, "http", One),
    /// `http.content_len`: the `Content-Length` value (request or response).
    HttpContentLen => ("http.content_len", Either, "http", One),
    /// `http.connection`: the `Connection` value (request or response).
    HttpConnection => ("http.connection", Either, "http", One),
    HttpAccept => ("http.accept", Request, "http", One),
    HttpAcceptEnc => ("http.accept_enc", Request, "http", One),
    HttpAcceptLang => ("http.accept_lang", Request, "http", One),
    HttpReferer => ("http.referer", Request, "http", One),
    /// `http.location`: the response's `Location` value.
    HttpLocation => ("http.location", Response, "http", One),
    /// `http.server`: the response's `Server` value.
    HttpServer => ("http.server", Response, "http", One),
    /// `dns.query`: a query name, dotted (`www.example.com`).
    DnsQuery => ("dns.query", Request, "dns", Many),
    /// `tls.sni`: the ClientHello's server name.
    TlsSni => ("tls.sni", Request, "tls", One),
    /// `tls.cert_subject`: the server certificate's subject (`C=US, O=Example, CN=www.example.com`).
    TlsCertSubject => ("tls.cert_subject", Response, "tls", One),
    /// `tls.cert_issuer`: the server certificate's issuer.
    TlsCertIssuer => ("tls.cert_issuer", Response, "tls", One),
    /// `tls.cert_serial`: the server certificate's serial, upper-case hex bytes joined by `:`.
    TlsCertSerial => ("tls.cert_serial", Response, "tls", One),
    /// `tls.cert_fingerprint`: SHA-1 of the server certificate, lower-case hex bytes joined by `:`.
    TlsCertFingerprint => ("tls.cert_fingerprint", Response, "tls", One),
    /// `tls.certs`: each certificate of the server's chain (DER), one buffer each; a rule matches when one does.
    TlsCerts => ("tls.certs", Response, "tls", Many),
    /// `ja3.hash`: MD5 of the ClientHello's JA3 string, 32 lowercase hex digits.
    Ja3Hash => ("ja3.hash", Request, "tls", One, AlsoQuic),
    Ja3String => ("ja3.string", Request, "tls", One, AlsoQuic),
    /// `ja3s.hash`: MD5 of the ServerHello's JA3S string.
    Ja3sHash => ("ja3s.hash", Response, "tls", One),
    Ja3sString => ("ja3s.string", Response, "tls", One),
    /// `ja4.hash`: the ClientHello's JA4 fingerprint.
    Ja4Hash => ("ja4.hash", Request, "tls", One, AlsoQuic),
    /// The TLS version a side recorded, as `tls.version` reads it: two bytes big-endian as recorded (the
    /// ClientHello's version to the server, the ServerHello's negotiated one to the client), then two bytes with a
    /// TLS 1.3 draft version (`7f xx`) read as 1.3 (`03 04`).
    TlsVersion => ("tls.version", Either, "tls", One),
    /// `ssh.proto`: the protocol version of the banner (`2.0`), of the client or the server.
    SshProto => ("ssh.proto", Either, "ssh", One),
    /// `ssh.software`: the software version of the banner (`OpenSSH_8.2p1`).
    SshSoftware => ("ssh.software", Either, "ssh", One),
    /// `ssh.hassh`: MD5 of the client's KEXINIT algorithm string, 32 lower-case hex digits.
    SshHassh => ("ssh.hassh", Request, "ssh", One),
    /// `ssh.hassh.string`: the client's `kex;encryption;mac;compression` lists.
    SshHasshString => ("ssh.hassh.string", Request, "ssh", One),
    /// `ssh.hassh.server`: MD5 of the server's KEXINIT algorithm string.
    SshHasshServer => ("ssh.hassh.server", Response, "ssh", One),
    /// `ssh.hassh.server.string`: the server's `kex;encryption;mac;compression` lists.
    SshHasshServerString => ("ssh.hassh.server.string", Response, "ssh", One),
    /// `smb.share`: a TREE_CONNECT's path to a share that is not a pipe share (`\\host\share`).
    SmbShare => ("smb.share", Request, "smb", One),
    /// `smb.named_pipe`: a TREE_CONNECT's path to a pipe share (`\\host\IPC$`).
    SmbNamedPipe => ("smb.named_pipe", Request, "smb", One),
    /// `smb.ntlmssp_user`: the user of a SESSION_SETUP's NTLMSSP AUTHENTICATE.
    SmbNtlmsspUser => ("smb.ntlmssp_user", Request, "smb", One),
    /// `smb.ntlmssp_domain`: its domain.
    SmbNtlmsspDomain => ("smb.ntlmssp_domain", Request, "smb", One),
    /// The version of an SMB message's transaction, one byte (1 or 2), as `smb.version` reads it.
    SmbVersion => ("smb.version", Either, "smb", One),
    /// `file.data` on SMB: a file read or written over SMB2 (its READ/WRITE data in offset order, from the start),
    /// up to the parser's cap, in the direction it travelled.
    SmbFileData => ("file.data (smb)", Either, "smb", Many, FileData),
    /// A DCE/RPC call's interface, version, operation number and first-fragment flag, as the conditions
    /// `dcerpc.iface` and `dcerpc.opnum` read them ([`crate::dcerpc::call_header`]); of the request or the response.
    DcerpcHeader => ("dcerpc.iface", Either, "dcerpc", One),
    /// `dcerpc.stub_data`: a DCE/RPC request's or response's stub, its fragments joined.
    DcerpcStubData => ("dcerpc.stub_data", Either, "dcerpc", One),
    /// A Kerberos message's type (one byte: its application tag number), as `krb5_msg_type` reads it.
    Krb5MsgType => ("krb5_msg_type", Either, "krb5", One),
    /// `krb5.cname`: each component of a KDC reply's (or error's) client name, one buffer each (a
    /// multi-buffer), to the client only as Suricata registers it.
    Krb5Cname => ("krb5.cname", Response, "krb5", Many),
    /// `krb5.sname`: each component of the server name, one buffer each, to the client only.
    Krb5Sname => ("krb5.sname", Response, "krb5", Many),
    /// `krb5_err_code`: a KRB-ERROR's error code (four bytes, big-endian, the `Int32`'s bits).
    Krb5ErrCode => ("krb5_err_code", Response, "krb5", One),
    /// `krb5.ticket_encryption`: a reply's ticket's encryption type: one byte, 1 when weak, then the type (four
    /// bytes, big-endian, the `Int32`'s bits).
    Krb5TicketEncryption => ("krb5.ticket_encryption", Response, "krb5", One),
    /// The Kerberos parser's anomalies on a message, as `app-layer-event:krb5.<name>` reads them.
    Krb5Events => ("app-layer-event (krb5)", Either, "krb5", One, Events),
    /// The DNS parser's anomalies on a message (one byte per [`AppLayerEvent`], 1 where it is set), as
    /// `app-layer-event:dns.<name>` reads them.
    DnsEvents => ("app-layer-event (dns)", Either, "dns", One, Events),
    /// The FTP parser's anomalies on a control line, as `app-layer-event:ftp.<name>` reads them.
    FtpEvents => ("app-layer-event (ftp)", Either, "ftp", One, Events),
    /// An FTP `PORT` or `EPRT` command's verdict for `ftpbounce`: one byte, 1 when the address it announces is not
    /// the client's own (the server would connect to a third host), else 0.
    FtpBounce => ("ftpbounce", Request, "ftp", One),
    /// `ftp.command`: an FTP transaction's command verb, upper-cased (`USER`, `RETR`), to the server.
    FtpCommand => ("ftp.command", Request, "ftp", One),
    /// `ftp.command_data`: the command's argument as sent (`anonymous`, `temp.txt`), to the server.
    FtpCommandData => ("ftp.command_data", Request, "ftp", One),
    /// `ftp.reply`: each reply line's text of the transaction, without its code, one buffer each (a
    /// multi-buffer), to the client.
    FtpReply => ("ftp.reply", Response, "ftp", Many),
    /// `ftp.completion_code`: each reply line's code as text (`150`, `226`), one buffer each, to the client.
    FtpCompletionCode => ("ftp.completion_code", Response, "ftp", Many),
    /// `ftp.dynamic_port`: the data port the transaction announced (two bytes, big-endian; 0 when it announced
    /// none), of a known command's transaction, either direction.
    FtpDynamicPort => ("ftp.dynamic_port", Either, "ftp", One),
    /// `ftp.mode`: one byte, 1 for an active-mode announcement (`PORT`, `EPRT`), 0 for a passive one, of a
    /// transaction that announced a port, either direction.
    FtpMode => ("ftp.mode", Either, "ftp", One),
    /// `ftp.reply_received`: one byte, 1 when the transaction's final reply arrived, 0 when the flow ended first,
    /// of a known command's transaction, to the client.
    FtpReplyReceived => ("ftp.reply_received", Response, "ftp", One),
    /// The HTTP parser's anomalies on a transaction, as `app-layer-event:http.<name>` reads them.
    HttpEvents => ("app-layer-event (http)", Either, "http", One, Events),
    /// The SMTP parser's anomalies on a mail transaction (its MIME decoder's), as `app-layer-event:smtp.<name>`
    /// reads them.
    SmtpEvents => ("app-layer-event (smtp)", Either, "smtp", One, Events),
    /// `file.data` on SMTP: a mail attachment, decoded (base64, quoted-printable), up to the parser's cap.
    SmtpFileData => ("file.data (smtp)", Request, "smtp", Many, FileData),
    /// `smtp.helo`: the argument of the session's `HELO`/`EHLO`, on each mail transaction.
    SmtpHelo => ("smtp.helo", Request, "smtp", One),
    /// `smtp.mail_from`: the `MAIL FROM` address as sent (`<a@example.org>`, without ESMTP parameters).
    SmtpMailFrom => ("smtp.mail_from", Request, "smtp", One),
    /// `smtp.rcpt_to`: each `RCPT TO` address, one buffer each (a multi-buffer).
    SmtpRcptTo => ("smtp.rcpt_to", Request, "smtp", Many),
    /// `email.from`: the message's `From` header value.
    EmailFrom => ("email.from", Request, "smtp", One),
    /// `email.subject`: the message's `Subject` header value.
    EmailSubject => ("email.subject", Request, "smtp", One),
    /// `email.to`: each address of the `To` header (split at commas outside quotes), one buffer each.
    EmailTo => ("email.to", Request, "smtp", Many),
    /// `email.cc`: each address of the `Cc` header, one buffer each.
    EmailCc => ("email.cc", Request, "smtp", Many),
    /// `email.date`: the `Date` header value.
    EmailDate => ("email.date", Request, "smtp", One),
    /// `email.message_id`: the `Message-Id` header value.
    EmailMessageId => ("email.message_id", Request, "smtp", One),
    /// `email.x_mailer`: the `X-Mailer` header value.
    EmailXMailer => ("email.x_mailer", Request, "smtp", One),
    /// `email.received`: each `Received` header value, one buffer each.
    EmailReceived => ("email.received", Request, "smtp", Many),
    /// `email.url`: each URL of the message's text and attachments (without its `http://`), one buffer each.
    EmailUrl => ("email.url", Request, "smtp", Many),
    /// `sip.method`: a request's method (`INVITE`).
    SipMethod => ("sip.method", Request, "sip", One),
    /// `sip.uri`: a request's Request-URI as sent.
    SipUri => ("sip.uri", Request, "sip", One),
    /// `sip.request_line`: a request's whole first line, without its line end.
    SipRequestLine => ("sip.request_line", Request, "sip", One),
    /// `sip.stat_code`: a response's status code (three digits).
    SipStatCode => ("sip.stat_code", Response, "sip", One),
    /// `sip.stat_msg`: a response's reason phrase.
    SipStatMsg => ("sip.stat_msg", Response, "sip", One),
    /// `sip.response_line`: a response's whole first line, without its line end.
    SipResponseLine => ("sip.response_line", Response, "sip", One),
    /// `sip.protocol`: the version (`SIP/2.0`) of a request or status line.
    SipProtocol => ("sip.protocol", Either, "sip", One),
    /// `sip.from`: each `From` (or `f`) header value, one buffer each (a multi-buffer).
    SipFrom => ("sip.from", Either, "sip", Many),
    /// `sip.to`: each `To` (or `t`) header value, one buffer each.
    SipTo => ("sip.to", Either, "sip", Many),
    /// `sip.via`: each `Via` (or `v`) header value, one buffer each.
    SipVia => ("sip.via", Either, "sip", Many),
    /// `sip.user_agent`: each `User-Agent` header value, one buffer each.
    SipUserAgent => ("sip.user_agent", Either, "sip", Many),
    /// `sip.content_type`: each `Content-Type` (or `c`) header value, one buffer each.
    SipContentType => ("sip.content_type", Either, "sip", Many),
    /// `sip.content_length`: each `Content-Length` (or `l`) header value as sent, one buffer each.
    SipContentLength => ("sip.content_length", Either, "sip", Many),
    /// `sdp.origin`: a SIP body's session description's `o=` value.
    SdpOrigin => ("sdp.origin", Either, "sip", One),
    /// `sdp.session_name`: the session description's `s=` value.
    SdpSessionName => ("sdp.session_name", Either, "sip", One),
    /// `sdp.session_info`: the session's `i=` value.
    SdpSessionInfo => ("sdp.session_info", Either, "sip", One),
    /// `sdp.uri`: the session's `u=` value.
    SdpUri => ("sdp.uri", Either, "sip", One),
    /// `sdp.email`: the session's `e=` value.
    SdpEmail => ("sdp.email", Either, "sip", One),
    /// `sdp.phone_number`: the session's `p=` value.
    SdpPhoneNumber => ("sdp.phone_number", Either, "sip", One),
    /// `sdp.connection_data`: the session's `c=` value.
    SdpConnectionData => ("sdp.connection_data", Either, "sip", One),
    /// `sdp.bandwidth`: each of the session's `b=` values, one buffer each.
    SdpBandwidth => ("sdp.bandwidth", Either, "sip", Many),
    /// `sdp.time`: each time description's `t=` value, one buffer each.
    SdpTime => ("sdp.time", Either, "sip", Many),
    /// `sdp.repeat_time`: each time description's (first) `r=` value, one buffer each.
    SdpRepeatTime => ("sdp.repeat_time", Either, "sip", Many),
    /// `sdp.timezone`: the session's `z=` value.
    SdpTimezone => ("sdp.timezone", Either, "sip", One),
    /// `sdp.encryption_key`: the session's `k=` value.
    SdpEncryptionKey => ("sdp.encryption_key", Either, "sip", One),
    /// `sdp.attribute`: each of the session's `a=` values, one buffer each.
    SdpAttribute => ("sdp.attribute", Either, "sip", Many),
    /// `sdp.media.media`: each media description's `m=` value, one buffer each.
    SdpMediaMedia => ("sdp.media.media", Either, "sip", Many),
    /// `sdp.media.media_info`: each media description's `i=` value, one buffer each.
    SdpMediaMediaInfo => ("sdp.media.media_info", Either, "sip", Many),
    /// `sdp.media.connection_data`: each media description's `c=` value, one buffer each.
    SdpMediaConnectionData => ("sdp.media.connection_data", Either, "sip", Many),
    /// `sdp.media.encryption_key`: each media description's `k=` value, one buffer each.
    SdpMediaEncryptionKey => ("sdp.media.encryption_key", Either, "sip", Many),
    /// `file.data` on FTP data connections: the file a data connection carried, up to the parser's cap, in
    /// whichever direction it travelled (`STOR` to the server, `RETR` to the client, active or passive).
    FtpDataFileData => ("file.data (ftp-data)", Either, "ftp-data", One, FileData),
    /// `http.header` of a rule that names neither direction nor a one-sided HTTP buffer: the request's header lines
    /// and the response's (Suricata inspects both), as [`Buffer::HttpRequestHeader`] and
    /// [`Buffer::HttpResponseHeader`] each.
    HttpHeader => ("http.header (either side)", Either, "http", One),
    /// `http.header.raw` likewise: the request's and the response's header blocks as sent.
    HttpRawHeader => ("http.header.raw (either side)", Either, "http", One),
    /// `file.name`: the name of a file any parser carried (an HTTP URI's path or `Content-Disposition` name, a mail
    /// attachment's, an FTP command's argument, an SMB file's), in the direction the file travelled.
    FileName => ("file.name", Either, None, Many),
    /// `file.magic`: a file's type as the built-in magic table describes it (`PE32 executable, for MS Windows`).
    FileMagic => ("file.magic", Either, None, Many),
    /// A file's state, size and digests, as `filesize` and the hash lists read them ([`crate::file::meta`]).
    FileMeta => ("filesize (file state, size and hashes)", Either, None, One),
    /// The transfer command of an FTP data connection's file (`RETR`, `STOR`), as `ftpdata_command` reads it.
    FtpDataCommand => ("ftpdata_command", Either, "ftp-data", One),
    /// `ip.src`: the packet's source address, 4 bytes (IPv4) or 16 (IPv6); checked with the rule's header
    /// ([`Rule::packet_groups`]).
    IpSrc => ("ip.src", Either, None, One, Address),
    /// `ip.dst`: the packet's destination address, likewise.
    IpDst => ("ip.dst", Either, None, One, Address),
    /// `ipv4.hdr`: the packet's IPv4 header as on the wire, options included (checked with the rule's header, as
    /// `ip.src`; the other header buffers too). Absent on IPv6.
    Ipv4Hdr => ("ipv4.hdr", Either, None, One, RawHeader),
    /// `ipv6.hdr`: the IPv6 header and its extension headers, as on the wire (Suricata's base header plus
    /// extension headers). Absent on IPv4.
    Ipv6Hdr => ("ipv6.hdr", Either, None, One, RawHeader),
    /// `tcp.hdr`: the TCP header with its options.
    TcpHdr => ("tcp.hdr", Either, None, One, RawHeader),
    /// `udp.hdr`: the UDP header's 8 bytes.
    UdpHdr => ("udp.hdr", Either, None, One, RawHeader),
    /// `icmpv4.hdr`: the ICMPv4 header as Suricata sizes it: 8 bytes, plus the 12 timestamp bytes of a timestamp
    /// request or reply and the address list of a router advertisement when the message holds them.
    Icmpv4Hdr => ("icmpv4.hdr", Either, None, One, RawHeader),
    /// `icmpv6.hdr`: the ICMPv6 header's first 8 bytes.
    Icmpv6Hdr => ("icmpv6.hdr", Either, None, One, RawHeader),
    /// `dns.queries.rrname`: each question's name, dotted, of a request or a response (one buffer each; a rule
    /// matches when one does).
    DnsQueriesRrname => ("dns.queries.rrname", Either, "dns", Many),
    /// `dns.answers.rrname`: each answer record's name, of a request or a response.
    DnsAnswersRrname => ("dns.answers.rrname", Either, "dns", Many),
    /// `dns.authorities.rrname`: each authority record's name.
    DnsAuthoritiesRrname => ("dns.authorities.rrname", Either, "dns", Many),
    /// `dns.additionals.rrname`: each additional record's name (an EDNS `OPT` record's is empty).
    DnsAdditionalsRrname => ("dns.additionals.rrname", Either, "dns", Many),
    /// `dns.response.rrname`: every name of a response, one buffer each: the questions', then each record's name
    /// followed by its data where that is a name (CNAME, PTR, MX, NS; SOA's primary server), answers, authorities
    /// and additionals in turn.
    DnsResponseRrname => ("dns.response.rrname", Response, "dns", Many),
    /// A DNS message's opcode, one byte, as `dns.opcode` reads it.
    DnsOpcode => ("dns.opcode", Either, "dns", One),
    /// A DNS message's response code, one byte, as `dns.rcode` reads it.
    DnsRcode => ("dns.rcode", Either, "dns", One),
    /// Each question's type, two bytes big-endian, one buffer each, as `dns.rrtype` reads them.
    DnsRrtype => ("dns.rrtype", Either, "dns", One),
    /// `mdns.queries.rrname`: as [`Buffer::DnsQueriesRrname`] on multicast DNS flows.
    MdnsQueriesRrname => ("mdns.queries.rrname", Either, "mdns", Many),
    /// `mdns.answers.rrname`.
    MdnsAnswersRrname => ("mdns.answers.rrname", Either, "mdns", Many),
    /// `mdns.authorities.rrname`.
    MdnsAuthoritiesRrname => ("mdns.authorities.rrname", Either, "mdns", Many),
    /// `mdns.additionals.rrname`.
    MdnsAdditionalsRrname => ("mdns.additionals.rrname", Either, "mdns", Many),
    /// `mdns.response.rrname`: as [`Buffer::DnsResponseRrname`], of an mDNS response whichever way it travels
    /// (responses go to the multicast group, the way the flow's first packet went).
    MdnsResponseRrname => ("mdns.response.rrname", Either, "mdns", Many),
    /// `tls.subjectaltname`: each subjectAltName entry of the server certificate, one buffer each.
    TlsSubjectAltName => ("tls.subjectaltname", Response, "tls", Many),
    /// `tls.alpn`: each ALPN protocol a side offered (the client's to the server, the server's choice to the
    /// client), one buffer each.
    TlsAlpn => ("tls.alpn", Either, "tls", Many),
    /// `tls.random`: a hello's 32 random bytes (the ClientHello's to the server, the ServerHello's to the client).
    TlsRandom => ("tls.random", Either, "tls", One),
    /// `tls.random_time`: the first 4 of them.
    TlsRandomTime => ("tls.random_time", Either, "tls", One),
    /// `tls.random_bytes`: the other 28.
    TlsRandomBytes => ("tls.random_bytes", Either, "tls", One),
    /// The server certificate's validity as the date keywords read it: `notBefore` and `notAfter` as 8-byte
    /// big-endian numbers (seconds since the epoch, offset by 2^63 so that the unsigned order is the signed one:
    /// [`cert_date_number`]), then one byte each for expired and valid at the packet's time.
    TlsCertValidity => (
        "tls_cert_notbefore, tls_cert_notafter, tls_cert_expired, tls_cert_valid",
        Response,
        "tls",
        One,
    ),
    /// The number of certificates the server sent, 4 bytes big-endian, as `tls.cert_chain_len` reads it.
    TlsCertChainLen => ("tls.cert_chain_len", Response, "tls", One),
    /// `quic.version`: the version of a QUIC long header, its 4 bytes as sent (`|00 00 00 01|`, `Q046`).
    QuicVersion => ("quic.version", Either, "quic", One),
    /// `quic.sni`: the server name of a QUIC client hello (IETF QUIC's TLS ClientHello, gQUIC's CHLO `SNI`).
    QuicSni => ("quic.sni", Request, "quic", One),
    /// `quic.ua`: the user agent of a gQUIC CHLO (`UAID`).
    QuicUa => ("quic.ua", Request, "quic", One),
    /// `quic.cyu.hash`: the CYU fingerprint's MD5 of a cleartext gQUIC CHLO (Q043 to Q046), 32 lower-case hex
    /// digits, one buffer per hello.
    QuicCyuHash => ("quic.cyu.hash", Request, "quic", Many),
    /// `quic.cyu.string`: the CYU fingerprint's string (`46,PAD-SNI-VER-...`).
    QuicCyuString => ("quic.cyu.string", Request, "quic", Many),
    /// An HTTP/2 frame's type, one byte, per frame of the transaction (`http2.frametype`).
    Http2FrameType => ("http2.frametype", Either, "http2", One),
    /// A RST_STREAM or GOAWAY frame's error code, 4 bytes big-endian (`http2.errorcode`).
    Http2ErrorCode => ("http2.errorcode", Either, "http2", One),
    /// The priority weight of a PRIORITY frame or a HEADERS frame with priority, one byte (`http2.priority`).
    Http2Priority => ("http2.priority", Either, "http2", One),
    /// A WINDOW_UPDATE frame's increment, 4 bytes big-endian (`http2.window`).
    Http2Window => ("http2.window", Either, "http2", One),
    /// A header block's dynamic table size update, 4 bytes big-endian (`http2.size_update`).
    Http2SizeUpdate => ("http2.size_update", Either, "http2", One),
    /// One SETTINGS entry: identifier (2 bytes) and value (4 bytes), big-endian, one part per entry
    /// (`http2.settings`).
    Http2Settings => ("http2.settings", Either, "http2", One),
    /// `http2.header_name`: each header field's name of the transaction's header blocks, one part per field.
    Http2HeaderName => ("http2.header_name", Either, "http2", Many),
    /// `http.request_header`: each request header as `Name: value` (no line end), one part per header (a
    /// multi-buffer). HTTP/1: as libhtp keeps them, a repeated name once with its values joined by `, ` and folded
    /// lines joined by a space; HTTP/2: each field of the request's header blocks, pseudo-headers included
    /// (`:authority: example.com`).
    HttpRequestHeaderLine => ("http.request_header", Request, "http", Many),
    /// `http.response_header`: likewise, each response header.
    HttpResponseHeaderLine => ("http.response_header", Response, "http", Many),
    /// `file.data` on HTTP to the server: each file of a request, one buffer each (a multi-buffer): a `POST` or
    /// `PUT` body that is not a multipart form, each part of a multipart form that carries a file name, an HTTP/2
    /// request body; decoded, up to the parser's cap (Suricata inspects a request's files, not its body).
    HttpRequestFileData => ("file.data (http request)", Request, "http", Many, FileData),
    /// `file.data` on HTTP of a rule that names neither direction nor a one-sided HTTP buffer: each file of a
    /// request (as [`Buffer::HttpRequestFileData`]) and each response body (as [`Buffer::HttpResponseBody`]), one
    /// buffer each, in the direction it travelled (Suricata inspects `file.data` both ways).
    HttpFileData => ("file.data (http)", Either, "http", Many, FileData),
}

/// Which side of a transaction a buffer belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Request,
    Response,
    /// Both sides carry it (`http.content_type`, `ssh.proto`, ...): the packet's direction tells which.
    Either,
}

impl Buffer {
    /// Index into per-buffer arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The buffer's row of the buffer table.
    pub fn props(self) -> &'static BufferProps {
        &Buffer::PROPS[self as usize]
    }

    /// Which side of a transaction the buffer belongs to (the payload: either).
    pub fn side(self) -> Side {
        self.props().side
    }

    /// Whether the buffer is one of Suricata's multi-instance buffers (a transaction has any number of values of
    /// it: [multiple buffer matching](https://docs.suricata.io/en/latest/rules/multi-buffer-matching.html)):
    /// each time a rule selects it starts an instance whose keywords must match within one value, and different
    /// instances may match different values.
    pub fn multi_instance(self) -> bool {
        self.props().multi_instance
    }

    /// The application protocol whose parser hands the buffer over (EVE `app_proto` name); `None` for the payload.
    pub fn app_proto(self) -> Option<&'static str> {
        self.props().app_proto
    }

    /// Suricata's sticky-buffer keyword for the buffer.
    pub fn name(self) -> &'static str {
        self.props().name
    }

    /// What kind of buffer it is (see [`Role`]).
    pub fn role(self) -> Role {
        self.props().role
    }

    /// Whether nothing else of a transaction reaches the rules after its value of this buffer (the table's `Last`
    /// rows): a rule's lead group can then never match after it, so its values are checked as they arrive and never
    /// kept for lazily checked groups ([`crate::ruleset::RuleInfo::lazy`]; a response body is the largest value a
    /// flow would keep).
    pub fn ends_transaction(self) -> bool {
        self.props().ends_transaction
    }

    /// The buffer that carries `proto`'s application-layer anomalies to the rules (`app-layer-event`), if its parser
    /// raises any: the table's [`Role::Events`] row of the protocol.
    pub fn app_layer_events(proto: AppProto) -> Option<Buffer> {
        let name = proto.eve_name();
        Buffer::ALL
            .into_iter()
            .find(|b| b.role() == Role::Events && b.app_proto() == Some(name))
    }

    /// Whether the buffer is a `file.data` one ([`Role::FileData`]): its values are the contents of a transaction's
    /// files, handed over one by one as each file closes (a transaction may carry several: a mail's attachments, a
    /// form's uploads). A rule on it alerts once per transaction however many files match, as Suricata's
    /// `file.data` inspection ends with the transaction's first match (its `file.name`/`file.magic` inspection may
    /// match each file).
    pub fn is_file_data(self) -> bool {
        self.role() == Role::FileData
    }

    /// Whether the buffer is also one of QUIC's ([`Role::AlsoQuic`]): the client hello's JA3 and JA4.
    pub fn also_quic(self) -> bool {
        self.role() == Role::AlsoQuic
    }

    /// Whether the buffer is one of the packet's own (`ip.src`, `ip.dst`, the raw header buffers `ipv4.hdr`,
    /// `tcp.hdr`, ...): checked with the rule's header on each packet the rule meets ([`Rule::packet_groups`]).
    pub fn is_packet_field(self) -> bool {
        matches!(self.role(), Role::Address | Role::RawHeader)
    }

    /// Whether the buffer is one of the raw header buffers ([`Role::RawHeader`]: `ipv4.hdr`, `ipv6.hdr`, `tcp.hdr`,
    /// `udp.hdr`, `icmpv4.hdr`, `icmpv6.hdr`): bytes of the packet being inspected, which stream data does not have.
    pub fn is_raw_header(self) -> bool {
        self.role() == Role::RawHeader
    }

    /// Whether the buffer belongs to the response only.
    pub fn is_response(self) -> bool {
        self.side() == Side::Response
    }

    /// Whether the buffer belongs to the request only.
    pub fn is_request(self) -> bool {
        self.side() == Side::Request
    }

    /// Whether this is an application-layer buffer (anything but the payload).
    pub fn is_app(self) -> bool {
        self != Buffer::Payload
    }

    /// Whether this is an HTTP buffer.
    pub fn is_http(self) -> bool {
        self.app_proto() == Some("http")
    }
}

/// A buffer as written, before the rule's side (request or response) is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PBuf {
    Fixed(Buffer),
    /// `http.header` / `http_header`: request or response headers.
    Header,
    /// `http.header.raw` / `http_raw_header`.
    RawHeader,
    /// `file_data` / `file.data`: response body to the client, request body to the server.
    FileData,
    /// `base64_data`: what the rule's `base64_decode` decoded (its items end up inside that [`Base64`] item).
    Base64Data,
}

impl PBuf {
    /// Suricata's name of the buffer.
    pub(crate) fn name(self) -> &'static str {
        match self {
            PBuf::Fixed(b) => b.name(),
            PBuf::Header => "http.header",
            PBuf::RawHeader => "http.header.raw",
            PBuf::FileData => "file.data",
            PBuf::Base64Data => "base64_data",
        }
    }
}

/// A `flowbits` operation. Names are numbered at load ([`crate::RuleSet::flowbit_names`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flowbit {
    Set(u32),
    Unset(u32),
    Toggle(u32),
    /// `isset,a|b` (any of them) or `isset,a&b` (all of them).
    IsSet {
        ids: Vec<u32>,
        all: bool,
    },
    /// `isnotset,a|b` (any of them unset) or `isnotset,a&b` (all of them unset).
    IsNotSet {
        ids: Vec<u32>,
        all: bool,
    },
    /// `flowint`: a condition on, or an action upon, one of the flow's integers. Flow integers live beside the
    /// flowbits in the flow's matcher state and follow the same order (conditions before the match, actions after
    /// it), so they are one more kind of flow variable operation.
    Int(Flowint),
    /// A `pcre` capture committed when the rule matches ([`crate::flowvar`]): the value staged in slot `op` goes
    /// to variable `var` of `scope` (an action).
    Capture {
        op: u32,
        scope: crate::flowvar::VarScope,
        var: u32,
    },
    /// `flowvar:name,"content"` / `pktvar:name,"content"`: variable `var` is set and `content` occurs in its value
    /// (a condition).
    VarHas {
        scope: crate::flowvar::VarScope,
        var: u32,
        content: Box<[u8]>,
    },
}

impl Flowbit {
    /// Whether this is a condition (checked before matching) rather than an action (done after).
    pub fn is_condition(&self) -> bool {
        match self {
            Flowbit::IsSet { .. } | Flowbit::IsNotSet { .. } => true,
            Flowbit::Int(i) => i.op.is_condition(),
            Flowbit::VarHas { .. } => true,
            Flowbit::Set(_) | Flowbit::Unset(_) | Flowbit::Toggle(_) | Flowbit::Capture { .. } => {
                false
            }
        }
    }
}

/// One `flowint:name,op[,value]` operation, as Suricata defines it: a per-flow unsigned 32-bit integer named
/// `name` (names numbered at load, apart from flowbits'), set (`=`), added to (`+`: an unset integer starts at the
/// value), subtracted from (`-`: only once set) after a match, or compared (`==`, `!=`, `<`, `<=`, `>`, `>=`: false
/// while unset), or tested (`isset`, `notset`) before it. Arithmetic wraps as Suricata's `uint32_t` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flowint {
    pub id: u32,
    pub op: FlowintOp,
    pub value: FlowintValue,
}

/// What a [`Flowint`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowintOp {
    Set,
    Add,
    Sub,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    IsSet,
    NotSet,
}

impl FlowintOp {
    /// Whether the operation is checked before the match (a comparison or a test) rather than applied after it.
    pub fn is_condition(self) -> bool {
        !matches!(self, FlowintOp::Set | FlowintOp::Add | FlowintOp::Sub)
    }
}

/// The right-hand side of a [`Flowint`]: a constant, another flow integer (0 while that one is unset, as in
/// Suricata), or none (`isset`, `notset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowintValue {
    None,
    Const(u32),
    Var(u32),
}

/// The buffers `absent` may name: the HTTP buffers made of one header field, whose absence the engine learns when
/// the message's header ends ([`crate::RuleSet::scan_http`]). Buffers whose absence is known only when a
/// transaction ends (bodies, `file.data`, lists of names) skip the rule with their reason.
pub const ABSENT_BUFFERS: &[Buffer] = &[
    Buffer::HttpUserAgent,
    Buffer::HttpHost,
    Buffer::HttpRawHost,
    Buffer::HttpCookie,
    Buffer::HttpContentType,
    Buffer::HttpContentLen,
    Buffer::HttpConnection,
    Buffer::HttpAccept,
    Buffer::HttpAcceptEnc,
    Buffer::HttpAcceptLang,
    Buffer::HttpReferer,
    Buffer::HttpLocation,
    Buffer::HttpServer,
];

/// Most distinct flow and packet variable names in a rule set (both scopes together).
pub const MAX_VAR_NAMES: usize = 1024;

/// Most distinct flowint names in a rule set.
pub const MAX_FLOWINTS: usize = 1024;
/// Most distinct xbit names in one load (both name spaces together).
pub const MAX_XBITS: usize = 4096;

/// Most distinct flowbit names in a rule set.
pub const MAX_FLOWBITS: usize = 4096;

/// One `content` option with its modifiers.
#[derive(Clone, Debug)]
pub struct Content {
    pub bytes: Vec<u8>,
    pub nocase: bool,
    pub negated: bool,
    pub offset: Option<u32>,
    pub depth: Option<u32>,
    pub distance: Option<i32>,
    pub within: Option<u32>,
    pub endswith: bool,
    pub fast_pattern: bool,
    /// `distance`/`within` taken from `byte_extract`/`byte_math` variables, evaluated per match. When set,
    /// `distance` is `Some(0)` and `within` `None` above, so that what reads them sees an unbounded relative content.
    pub var_position: Option<VarPosition>,
    /// Variable ids given as `distance` / `within` while the rule is read (folded into `var_position` at its end).
    var_distance: Option<u8>,
    var_within: Option<u8>,
    pub(crate) finder: memmem::Finder<'static>,
}

/// The `distance` and `within` of a content whose position comes from rule variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VarPosition {
    pub distance: byte::Operand,
    pub within: Option<byte::Operand>,
}

impl Content {
    fn new(bytes: Vec<u8>, negated: bool) -> Content {
        let finder = memmem::Finder::new(&bytes).into_owned();
        Content {
            bytes,
            nocase: false,
            negated,
            offset: None,
            depth: None,
            distance: None,
            within: None,
            endswith: false,
            fast_pattern: false,
            var_position: None,
            var_distance: None,
            var_within: None,
            finder,
        }
    }

    /// A case-sensitive content without modifiers.
    pub fn plain(bytes: Vec<u8>) -> Content {
        Content::new(bytes, false)
    }

    /// Whether the content's position is relative to the previous match (`distance` / `within`).
    pub fn is_relative(&self) -> bool {
        self.distance.is_some() || self.within.is_some()
    }
}

/// An inspection step of a chain.
#[derive(Clone, Debug)]
pub enum Item {
    Content(Box<Content>),
    /// A pcre and its id (index of its per-worker cache).
    Pcre(Box<Pcre>, u32),
    /// `isdataat:N[,relative]` (negated with `!`): Suricata's test, absolute `N < len`, relative
    /// `cursor + N <= len`.
    DataAt {
        n: u32,
        relative: bool,
        negated: bool,
    },
    /// `absent` (`or_else: false`): the buffer must be absent from the transaction; `absent: or_else` (`true`): absent,
    /// or else the items after it match it. First item of its group; a group that starts with it is checked where
    /// the engine learns that its buffer is absent (see [`ABSENT_BUFFERS`]) and passes there without reading
    /// anything; on a present buffer the plain form fails and `or_else` lets the rest decide.
    Absent {
        or_else: bool,
    },
    /// `rpc`: the packet's payload is an ONC RPC call to a program (see [`crate::rpc`]).
    Rpc(crate::rpc::RpcTest),
    /// `bsize` / `bufferlen` / `dsize`: the buffer's length lies in `min..=max`.
    Len {
        min: u64,
        max: u64,
    },
    /// `byte_test`, `byte_jump`, `byte_extract`, `byte_math` (see [`crate::byte`]).
    Byte(Box<ByteItem>),
    /// `base64_decode` and the `base64_data` items that inspect what it decoded.
    Base64(Box<Base64>),
    /// `ssl_state` / `ssl_version` on the TLS records that begin the payload ([`crate::tls_record`]).
    Tls(crate::tls_record::TlsCond),
    /// `dcerpc.iface` / `dcerpc.opnum` on a DCE/RPC call header ([`crate::dcerpc`]).
    Dce(crate::dcerpc::DceCond),
    /// `asn1`: BER objects from the buffer start, an offset or the previous match ([`crate::asn1`]).
    Asn1(Box<crate::asn1::Asn1>),
    /// `dataset` / `datarep`: the whole buffer against a set ([`crate::dataset`]).
    Dataset(Box<crate::dataset::DatasetItem>),
    /// An integer keyword of an application field (`dns.opcode`, `tls.cert_chain_len`, ...): the unsigned
    /// big-endian number of `width` bytes at `at` in the buffer the parser handed over, tested in Suricata's integer
    /// syntax. A buffer too short for it does not match.
    Num {
        at: u8,
        width: u8,
        test: Num,
    },
    /// A list of values one application field may take (`krb5.ticket_encryption: aes256-cts-hmac-sha1-96,23`): the
    /// number read as [`Item::Num`] reads it equals one of them.
    NumIn {
        at: u8,
        width: u8,
        values: Box<[u64]>,
    },
    /// `filesize`, `filemd5`, `filesha1`, `filesha256` on a file's meta buffer ([`crate::file`]).
    File(Box<crate::file::FileCond>),
    /// `entropy`: the Shannon entropy of the whole buffer, or of part of it, compared ([`crate::entropy`]).
    Entropy(Box<crate::entropy::Entropy>),
}

/// Most encoded bytes one `base64_decode` reads (Suricata limits `bytes` to 64 KiB).
pub const MAX_BASE64_INPUT: u32 = 64 << 10;

/// `base64_decode:[bytes N][, offset N][, relative]` with its `base64_data` chain.
///
/// From the buffer start plus `offset` (or, with `relative`, from the end of the previous match plus `offset`), up
/// to `bytes` encoded bytes (0: the rest of the buffer, at most [`MAX_BASE64_INPUT`]) are decoded as RFC 4648
/// base64, stopping at the first byte outside the alphabet or at padding, as Suricata 8 decodes by default. The item
/// matches when something was decoded and the `base64_data` items match the decoded bytes (a buffer of their own:
/// positions count from its start). The cursor of the outer buffer does not move.
#[derive(Clone, Debug)]
pub struct Base64 {
    pub bytes: u32,
    pub offset: u32,
    pub relative: bool,
    /// The `base64_data` items, as a group over the decoded bytes.
    pub data: Group,
    pub(crate) plan: crate::verify::Plan,
}

impl Item {
    /// Whether the item is positioned relative to the previous match.
    pub fn is_relative(&self) -> bool {
        match self {
            Item::Content(c) => c.is_relative(),
            Item::Pcre(p, _) => p.relative,
            Item::DataAt { relative, .. } => *relative,
            Item::Len { .. } | Item::Absent { .. } | Item::Rpc(_) => false,
            Item::Byte(b) => b.read.relative,
            Item::Base64(b) => b.relative,
            Item::Tls(_)
            | Item::Dce(_)
            | Item::Dataset(_)
            | Item::Num { .. }
            | Item::NumIn { .. }
            | Item::File(_)
            | Item::Entropy(_) => false,
            Item::Asn1(a) => a.absolute_offset.is_none(),
        }
    }

    /// Whether the item must *not* match (or, for the length tests, is not a match of its own).
    pub fn is_negated(&self) -> bool {
        match self {
            Item::Content(c) => c.negated,
            Item::Pcre(p, _) => p.negated,
            Item::DataAt { .. }
            | Item::Len { .. }
            | Item::Absent { .. }
            | Item::Rpc(_)
            | Item::Base64(_)
            | Item::Tls(_)
            | Item::Dce(_)
            | Item::Asn1(_)
            | Item::Dataset(_)
            | Item::Num { .. }
            | Item::NumIn { .. }
            | Item::File(_)
            | Item::Entropy(_) => true,
            // A jump or an extraction sets the cursor like a match; a test or a computation does not.
            Item::Byte(b) => !b.moves_cursor(),
        }
    }
}

/// The items of one rule that inspect one buffer, in rule order.
#[derive(Clone, Debug)]
pub struct Group {
    pub buffer: Buffer,
    /// Transforms applied to the buffer before the items inspect it, in order (usually none).
    pub transforms: Vec<Transform>,
    pub items: Vec<Item>,
}

/// A parsed, supported rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// 1-based line where the rule starts in its file.
    pub line: usize,
    /// Index of the file in [`crate::RuleSet::load_files`] order (0 for [`crate::RuleSet::parse`]).
    pub file: usize,
    pub action: Action,
    pub proto: Proto,
    pub src: AddrSet,
    pub src_ports: PortSet,
    pub dst: AddrSet,
    pub dst_ports: PortSet,
    /// `<>`: the header matches in either direction.
    pub bidirectional: bool,
    /// `ipv4` or `ipv6` as the header's protocol: only packets of that IP version (4 or 6).
    pub ip_version: Option<u8>,
    /// How TCP payload is inspected (stream or per packet).
    pub tcp_inspect: TcpInspect,
    /// `app-layer-protocol` (each one a condition, all must hold): the flow's application protocol in the packet's
    /// direction must (or, negated, must not) be this one. As in Suricata, none holds while the protocol is still
    /// unknown (a negated one included: `!http` does not match a flow whose protocol is not known yet); `failed`
    /// names a flow whose detection gave up.
    pub app_layer: Vec<(bool, &'static str)>,
    pub flow_dir: FlowDir,
    pub flow_state: FlowState,
    pub sid: u32,
    pub gid: u32,
    pub rev: u32,
    /// Shared (`Arc`) so that an alert event takes it by a reference count, not a copy: 10,000 rules firing
    /// 80,000 alerts copied each message string (an allocation and a free per alert).
    pub msg: Arc<str>,
    pub classtype: Option<String>,
    /// The classtype's description (EVE `alert.category`), empty without a classtype; shared like `msg`.
    pub category: Arc<str>,
    /// EVE `alert.severity`: `priority` if set, else the classtype's priority, else 3.
    pub severity: u8,
    /// `metadata` entries as `(key, value)`, split at the first space (`policy balanced-ips drop` is `policy` and
    /// `balanced-ips drop`), in rule order; shared like `msg` (EVE `alert.metadata`).
    pub metadata: Arc<[(String, String)]>,
    /// Snort 3 `service` names.
    pub services: Vec<String>,
    /// `flowbits` conditions and actions, in rule order.
    pub flowbits: Vec<Flowbit>,
    /// `xbits` conditions and actions, in rule order ([`crate::xbits`]: applied by the engine where alerts meet in
    /// input order, like thresholds).
    pub xbits: Vec<Xbit>,
    /// `tag` options, in rule order ([`crate::tag`]: each alert of the rule tags the packets that follow).
    pub tags: Vec<Tag>,
    /// `noalert` (or `flowbits:noalert`, `xbits:noalert`): the rule sets flowbits or xbits but never alerts.
    pub noalert: bool,
    /// `alert`: the rule alerts even where its action does not imply alerting (`pass ...; alert;`, Suricata's
    /// "alert then pass").
    pub alert: bool,
    /// `target`: EVE then names the alert's source and target.
    pub target: Option<AlertTarget>,
    /// `threshold` or `detection_filter`: which matches are reported ([`crate::threshold`]).
    pub threshold: Option<Threshold>,
    /// Header keywords (`ttl`, `flags`, `itype`, ...): all must pass on the packet ([`crate::header`]).
    pub header: Vec<HeaderTest>,
    /// `stream_size` tests: all must pass on the TCP session when the rule is checked ([`crate::stream_size`]).
    pub stream_size: Vec<StreamSize>,
    /// `flow:only_stream`: payload is matched on the reassembled stream only, never on datagrams.
    pub stream_only: bool,
    /// Content chains by buffer. Empty for a rule that checks only its header and flow.
    pub groups: Vec<Group>,
    /// The chains on the packet's own fields (`ip.src`, `ip.dst`: its addresses; `ipv4.hdr`, `tcp.hdr`, ...: its
    /// headers as on the wire), checked with the header on every packet the rule meets, with their verification
    /// plans.
    pub(crate) packet_groups: Vec<(Group, crate::verify::Plan)>,
}

impl Rule {
    /// Whether a match of this rule on a packet (not on stream data or an application buffer, which always act on
    /// the flow) applies its action to the whole flow, as Suricata decides it from the rule's type: IP-only rules
    /// (addresses and ports only, no `flow`), protocol-detection-only rules (`app-layer-protocol` alone) and
    /// application-protocol rules without other keywords (`alert http any any -> any any (...)`) act on the flow;
    /// packet rules (header keywords, `stream_size`, `dsize`, `tcp-pkt`, flowbit conditions, content on the packet)
    /// act on the packet alone, so a `drop` rule on `dsize:0` drops those packets and leaves the flow alone.
    pub fn flow_scoped(&self) -> bool {
        let conditions = self.flowbits.iter().any(Flowbit::is_condition)
            || self.xbits.iter().any(|x| x.op.is_condition());
        if !self.groups.is_empty()
            || !self.packet_groups.is_empty()
            || !self.header.is_empty()
            || !self.stream_size.is_empty()
            || self.tcp_inspect == TcpInspect::Packet
            || conditions
            || self.flow_state != FlowState::Any
        {
            return false;
        }
        match self.proto {
            Proto::App(_) => true,
            _ if !self.app_layer.is_empty() => true,
            _ => self.flow_dir == FlowDir::Any,
        }
    }

    /// Whether its matches are alerts: not for a `noalert` rule, nor for a `pass` rule without `alert`. (A match of
    /// such a rule with `xbits` still reaches the engine's output stage, silently, so its xbits apply there.)
    pub fn alerts(&self) -> bool {
        !(self.noalert || (self.action.passes() && !self.alert))
    }

    /// The rule's `dataset`/`datarep` operations, in rule order.
    pub fn datasets(&self) -> impl Iterator<Item = &crate::dataset::DatasetItem> {
        self.groups
            .iter()
            .chain(self.packet_groups.iter().map(|(g, _)| g))
            .flat_map(|g| {
                g.items.iter().filter_map(|it| match it {
                    Item::Dataset(d) => Some(&**d),
                    _ => None,
                })
            })
    }

    /// Whether its matches must reach where alerts meet in input order even when it does not alert: it has `xbits`
    /// or dataset operations on written sets, which apply there.
    pub fn applies_in_order(&self) -> bool {
        !self.xbits.is_empty() || self.deferred_datasets().next().is_some()
    }

    /// The operations that run where alerts meet in input order (on sets some rule writes), in rule order.
    pub fn deferred_datasets(&self) -> impl Iterator<Item = &crate::dataset::DatasetItem> {
        self.datasets().filter(|d| d.inline.is_none())
    }

    /// Whether this is an IP-only rule as Suricata classifies them: addresses alone decide (any ports, no content,
    /// header keyword, `flow` or application protocol; `flowbits` only to set bits). Suricata checks those on the
    /// first packet of each direction of a flow only, so such a rule alerts at most once per flow direction.
    pub fn ip_only(&self) -> bool {
        self.flow_scoped()
            && !matches!(self.proto, Proto::App(_))
            && self.app_layer.is_empty()
            && self.src_ports.is_any()
            && self.dst_ports.is_any()
            && self.flowbits.iter().all(|f| matches!(f, Flowbit::Set(_)))
    }
}

/// Outcome of reading one rule.
#[derive(Debug)]
pub enum Parsed {
    Rule(Box<Rule>),
    /// Supported syntax but a keyword outside the subset; the reason names it.
    Skipped {
        sid: Option<u32>,
        reason: String,
    },
    /// Malformed.
    Error(String),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Snort3,
    Legacy,
}

fn pcre_buffer(b: PcreBuffer) -> PBuf {
    match b {
        PcreBuffer::Uri => PBuf::Fixed(Buffer::HttpUri),
        PcreBuffer::RawUri => PBuf::Fixed(Buffer::HttpRawUri),
        PcreBuffer::RequestBody => PBuf::Fixed(Buffer::HttpRequestBody),
        PcreBuffer::ResponseBody => PBuf::Fixed(Buffer::HttpResponseBody),
        PcreBuffer::Header => PBuf::Header,
        PcreBuffer::RawHeader => PBuf::RawHeader,
        PcreBuffer::Method => PBuf::Fixed(Buffer::HttpMethod),
        PcreBuffer::Cookie => PBuf::Fixed(Buffer::HttpCookie),
        PcreBuffer::StatCode => PBuf::Fixed(Buffer::HttpStatCode),
        PcreBuffer::UserAgent => PBuf::Fixed(Buffer::HttpUserAgent),
        PcreBuffer::Host => PBuf::Fixed(Buffer::HttpHost),
        PcreBuffer::RawHost => PBuf::Fixed(Buffer::HttpRawHost),
        PcreBuffer::StatMsg => PBuf::Fixed(Buffer::HttpStatMsg),
    }
}

/// Everything a rule parse needs besides the text.
pub(crate) struct Ctx<'a, 'v> {
    pub resolver: &'a mut Resolver<'v>,
    pub classes: &'a Classifications,
    pub next_pcre_id: &'a mut u32,
    /// Flowbit name → id, shared by the whole load.
    pub flowbit_ids: &'a mut std::collections::HashMap<String, u32>,
    /// Flowint name → id, shared by the whole load.
    pub flowint_ids: &'a mut std::collections::HashMap<String, u32>,
    /// Flow and packet variable (scope, name) → id, shared by the whole load, and the next capture staging slot.
    pub var_ids: &'a mut std::collections::HashMap<(crate::flowvar::VarScope, String), u32>,
    pub next_capture_op: &'a mut u32,
    /// Xbit (name space, name) → id, shared by the whole load (host bits and pair bits are two name spaces).
    pub xbit_ids: &'a mut std::collections::HashMap<(bool, String), u32>,
    /// Bytes of compiled pcre programs so far in this load (each program once, however many rules share it).
    pub pcre_memory: &'a mut usize,
    /// Most bytes of compiled pcre programs in this load (`LoadOptions::pcre_memory`).
    pub pcre_budget: usize,
    /// Each `pcre` value compiled so far in this load, as compiled (or refused), and whether its programs are in
    /// `pcre_memory` yet: a value written again (ET Open repeats 4,508 expressions as 1,644 values, the community
    /// rules 1,069 as 708, one of them 106 times) takes a clone of the first compile, whose programs it shares.
    pub pcre_compiled: &'a mut std::collections::HashMap<String, (Result<Pcre, PcreError>, bool)>,
    /// The sets `dataset` and `datarep` name, shared by the whole load, and the next operation id.
    pub datasets: &'a mut crate::dataset::Datasets,
    pub next_dataset_op: &'a mut u32,
    /// The directory of the rule's file (`load` paths are relative to it), when it came from one.
    pub rule_dir: Option<&'a std::path::Path>,
    /// What `requires` is compared with.
    pub requires: &'a crate::requires::Requirements,
}

pub(crate) type Step<T> = Result<T, Parsed>;

fn skip(reason: impl Into<String>) -> Parsed {
    Parsed::Skipped {
        sid: None,
        reason: reason.into(),
    }
}

pub(crate) fn err(msg: impl Into<String>) -> Parsed {
    Parsed::Error(msg.into())
}

/// The id of flow or packet variable `name` (numbered per scope across the load, at most
/// [`MAX_VAR_NAMES`] names).
fn var_id(ctx: &mut Ctx<'_, '_>, scope: crate::flowvar::VarScope, name: &str) -> Step<u32> {
    let key = (scope, name.to_string());
    if let Some(&id) = ctx.var_ids.get(&key) {
        return Ok(id);
    }
    if ctx.var_ids.len() >= MAX_VAR_NAMES {
        return Err(err(format!(
            "more than {MAX_VAR_NAMES} flow and packet variable names"
        )));
    }
    let id = ctx.var_ids.keys().filter(|(s, _)| *s == scope).count() as u32;
    ctx.var_ids.insert(key, id);
    Ok(id)
}

fn num<T: std::str::FromStr>(name: &str, v: Option<&str>) -> Step<T> {
    let v = v
        .ok_or_else(|| err(format!("`{name}` needs a value")))?
        .trim();
    v.parse::<T>().map_err(|_| {
        err(format!(
            "`{name}`: invalid number `{}`",
            v.chars().take(32).collect::<String>()
        ))
    })
}

fn position(name: &str, v: &str) -> Step<i64> {
    let v = v.trim();
    let numeric = !v.is_empty()
        && v.trim_start_matches('-')
            .bytes()
            .all(|c| c.is_ascii_digit());
    match v.parse::<i64>() {
        Ok(n) if (-MAX_POSITION..=MAX_POSITION).contains(&n) => Ok(n),
        _ if numeric => Err(err(format!(
            "`{name}` {} out of range (|n| ≤ {MAX_POSITION})",
            trunc(v)
        ))),
        Err(_) if !v.is_empty() && v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') => {
            // Snort/Suricata accept a byte_extract variable name here.
            Err(skip(format!("{name} from a variable")))
        }
        _ => Err(err(format!("`{name}`: invalid number `{}`", trunc(v)))),
    }
}

pub(crate) struct Builder {
    dialect: Dialect,
    sticky: PBuf,
    /// Transforms given since the sticky buffer was selected.
    transforms: Vec<Transform>,
    items: Vec<(PBuf, Item)>,
    /// The transforms of each item's buffer, and the sticky-buffer instance it belongs to (see
    /// [`Buffer::multi_instance`]; 0 for an item not on the sticky buffer), parallel to `items`.
    item_transforms: Vec<(Vec<Transform>, u32)>,
    /// How many times a sticky buffer was selected so far: each selection is an instance of its own.
    instances: u32,
    /// Index in `items` of the last content (modifiers apply to it).
    last_content: Option<usize>,
    sid: Option<u32>,
    gid: u32,
    rev: u32,
    msg: String,
    classtype: Option<String>,
    priority: Option<u8>,
    flow_dir: FlowDir,
    flow_state: FlowState,
    services: Vec<String>,
    /// `dsize` was used: the rule inspects packets only.
    dsize: bool,
    app_layer: Vec<(bool, &'static str)>,
    flowbits: Vec<Flowbit>,
    xbits: Vec<Xbit>,
    tags: Vec<Tag>,
    noalert: bool,
    alert: bool,
    target: Option<AlertTarget>,
    /// Names of the rule's byte variables (`byte_extract`, `byte_math`), by id.
    byte_vars: Vec<String>,
    threshold: Option<Threshold>,
    header: Vec<HeaderTest>,
    stream_size: Vec<StreamSize>,
    /// `flow:no_stream`: packets only.
    no_stream: bool,
    /// `flow:only_stream`.
    only_stream: bool,
    metadata: Vec<(String, String)>,
}

/// Parses `N`, `<N`, `>N`, `<=N`, `>=N`, `=N`, `N<>M` (exclusive) and `N<=>M` (inclusive) as an inclusive range.
fn length_range(name: &str, v: Option<&str>) -> Step<(u64, u64)> {
    let raw = v
        .ok_or_else(|| err(format!("`{name}` needs a value")))?
        .trim();
    if raw.contains(',') {
        return Err(skip(format!("{name} with options")));
    }
    let n = |t: &str| -> Step<u64> {
        t.trim()
            .parse::<u64>()
            .map_err(|_| err(format!("`{name}`: invalid length `{}`", trunc(raw))))
    };
    let r = if let Some((a, b)) = raw.split_once("<=>") {
        (n(a)?, n(b)?)
    } else if let Some((a, b)) = raw.split_once("<>") {
        let (a, b) = (n(a)?, n(b)?);
        (a.saturating_add(1), b.saturating_sub(1))
    } else if let Some(x) = raw.strip_prefix("<=") {
        (0, n(x)?)
    } else if let Some(x) = raw.strip_prefix(">=") {
        (n(x)?, u64::MAX)
    } else if let Some(x) = raw.strip_prefix('<') {
        (
            0,
            n(x)?
                .checked_sub(1)
                .ok_or_else(|| err(format!("`{name}`: empty range `{raw}`")))?,
        )
    } else if let Some(x) = raw.strip_prefix('>') {
        (n(x)?.saturating_add(1), u64::MAX)
    } else if raw.starts_with('!') {
        return Err(skip(format!("{name}:!")));
    } else {
        let x = n(raw.trim_start_matches('='))?;
        (x, x)
    };
    if r.0 > r.1 {
        return Err(err(format!("`{name}`: empty range `{raw}`")));
    }
    Ok(r)
}

/// Parses the text of one logical rule line.
pub(crate) fn parse_rule(text: &str, line: usize, file: usize, ctx: &mut Ctx<'_, '_>) -> Parsed {
    match parse_inner(text, line, file, ctx) {
        Ok(r) => Parsed::Rule(Box::new(r)),
        Err(p) => p,
    }
}

fn parse_inner(text: &str, line: usize, file: usize, ctx: &mut Ctx<'_, '_>) -> Step<Rule> {
    let (header, opts) = text::split_rule(text).map_err(err)?;
    let sid_hint = opts
        .iter()
        .find(|o| o.name == "sid")
        .and_then(|o| o.value)
        .and_then(|v| v.trim().parse().ok());
    // `requires` first: a rule for another version may have a header or keywords this parser does not know.
    for o in opts.iter().filter(|o| o.name == "requires") {
        match crate::requires::check(o.value.unwrap_or(""), ctx.requires) {
            Ok(None) => {}
            Ok(Some(unmet)) => {
                return Err(Parsed::Skipped {
                    sid: sid_hint,
                    reason: unmet.to_string(),
                });
            }
            Err(e) => return Err(err(e)),
        }
    }
    let with_sid = |p: Parsed| match p {
        Parsed::Skipped { reason, .. } => Parsed::Skipped {
            sid: sid_hint,
            reason,
        },
        other => other,
    };
    let hdr = parse_header(header, ctx).map_err(with_sid)?;
    let mut b = Builder {
        dialect: detect_dialect(&opts),
        sticky: PBuf::Fixed(Buffer::Payload),
        transforms: Vec::new(),
        items: Vec::new(),
        item_transforms: Vec::new(),
        instances: 0,
        last_content: None,
        sid: None,
        gid: 1,
        rev: 0,
        msg: String::new(),
        classtype: None,
        priority: None,
        flow_dir: FlowDir::Any,
        flow_state: FlowState::Any,
        services: Vec::new(),
        dsize: false,
        app_layer: Vec::new(),
        flowbits: Vec::new(),
        xbits: Vec::new(),
        tags: Vec::new(),
        noalert: false,
        alert: false,
        target: None,
        byte_vars: Vec::new(),
        threshold: None,
        header: Vec::new(),
        stream_size: Vec::new(),
        no_stream: false,
        only_stream: false,
        metadata: Vec::new(),
    };
    for o in &opts {
        b.option(o, ctx).map_err(with_sid)?;
    }
    b.finish(hdr, line, file, ctx).map_err(with_sid)
}

fn detect_dialect(opts: &[Opt<'_>]) -> Dialect {
    let mut seen_content = false;
    for o in opts {
        match o.name {
            "service" => return Dialect::Snort3,
            "content" => {
                seen_content = true;
                if let Some(v) = o.value
                    && let Ok((_, _, rest)) = text::quoted(v)
                    && rest.trim_start().starts_with(',')
                {
                    return Dialect::Snort3;
                }
            }
            n if !seen_content
                && keyword::lookup(n).is_some_and(|k| k.kind == keyword::Kind::BufferModifier) =>
            {
                return Dialect::Snort3;
            }
            _ => {}
        }
    }
    Dialect::Legacy
}

struct Header {
    action: Action,
    proto: Proto,
    tcp_inspect: TcpInspect,
    src: AddrSet,
    src_ports: PortSet,
    dst: AddrSet,
    dst_ports: PortSet,
    bidirectional: bool,
    ip_version: Option<u8>,
}

/// Splits the header at whitespace outside brackets (address lists may contain spaces).
fn header_tokens(h: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start: Option<usize> = None;
    for (i, c) in h.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if c.is_whitespace() && depth <= 0 {
            if let Some(s) = start.take() {
                out.push(&h[s..i]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(&h[s..]);
    }
    out
}

fn parse_header(h: &str, ctx: &mut Ctx<'_, '_>) -> Step<Header> {
    let toks = header_tokens(h);
    let (action, proto) = match toks.as_slice() {
        [a, p, ..] => (*a, *p),
        _ => return Err(err("header needs at least an action and a protocol")),
    };
    let action = match action.to_ascii_lowercase().as_str() {
        "alert" => Action::Alert,
        "drop" | "block" => Action::Drop,
        "reject" | "rejectsrc" | "rejectdst" | "rejectboth" => Action::Reject,
        "sdrop" => Action::Sdrop,
        "log" => Action::Log,
        "pass" => Action::Pass,
        "react" | "rewrite" | "config" => return Err(skip(format!("action {action}"))),
        other => {
            return Err(err(format!(
                "unknown action `{}`",
                other.chars().take(32).collect::<String>()
            )));
        }
    };
    let mut tcp_inspect = TcpInspect::Stream;
    let mut ip_version = None;
    let proto = match proto.to_ascii_lowercase().as_str() {
        "ip" | "pkthdr" => Proto::Ip,
        // Suricata's `ipv4`/`ip4` and `ipv6`/`ip6`: every packet of that IP version.
        "ipv4" | "ip4" => {
            ip_version = Some(4);
            Proto::Ip
        }
        "ipv6" | "ip6" => {
            ip_version = Some(6);
            Proto::Ip
        }
        "tcp" | "tcp-stream" => Proto::Tcp,
        "tcp-pkt" => {
            tcp_inspect = TcpInspect::Packet;
            Proto::Tcp
        }
        "udp" => Proto::Udp,
        "icmp" | "icmpv4" | "icmpv6" => Proto::Icmp,
        "sctp" => Proto::IpProto(132),
        p => match APP_PROTOS.iter().find(|(n, _)| *n == p) {
            Some(&(_, canon)) => Proto::App(canon),
            None => {
                return Err(skip(format!(
                    "protocol {}",
                    p.chars().take(32).collect::<String>()
                )));
            }
        },
    };
    let (src, sp, dir, dst, dp) = match toks.as_slice() {
        [_, _] => ("any", "any", "->", "any", "any"),
        [_, _, s, sp, d, t, tp] => (*s, *sp, *d, *t, *tp),
        _ => {
            return Err(err(format!(
                "header has {} fields, expected 2 or 7",
                toks.len()
            )));
        }
    };
    let bidirectional = match dir {
        "->" => false,
        "<>" => true,
        // Suricata 8 transactional rules (both directions of one transaction in one rule).
        "=>" => return Err(skip("direction =>")),
        other => {
            return Err(err(format!(
                "invalid direction `{}`",
                other.chars().take(8).collect::<String>()
            )));
        }
    };
    let r = &mut *ctx.resolver;
    // An undefined variable skips the rule (Suricata refuses it too); anything else is malformed.
    let failed = |what: &str, s: &str, e: ExprError| match e {
        ExprError::Undefined(name) => skip(format!("undefined variable ${name}")),
        ExprError::Invalid(m) => err(format!("{what} `{}`: {m}", trunc(s))),
    };
    let addr = |r: &mut Resolver<'_>, s: &str| r.addr(s).map_err(|e| failed("address", s, e));
    let port = |r: &mut Resolver<'_>, s: &str| r.port(s).map_err(|e| failed("port", s, e));
    Ok(Header {
        action,
        proto,
        tcp_inspect,
        src: addr(r, src)?,
        src_ports: port(r, sp)?,
        dst: addr(r, dst)?,
        dst_ports: port(r, dp)?,
        bidirectional,
        ip_version,
    })
}

pub(crate) fn trunc(s: &str) -> String {
    s.chars().take(48).collect()
}

impl Builder {
    fn last_content(&mut self, modifier: &str) -> Step<&mut Content> {
        let idx = self
            .last_content
            .ok_or_else(|| err(format!("`{modifier}` without a preceding content")))?;
        match self.items.get_mut(idx) {
            Some((_, Item::Content(c))) => Ok(c),
            _ => Err(err(format!("`{modifier}` without a preceding content"))),
        }
    }

    /// Applies one option, as the keyword table says.
    fn option(&mut self, o: &Opt<'_>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        let (n, v) = (o.name, o.value);
        let Some(k) = keyword::lookup(n) else {
            return Err(skip(format!("keyword {}", trunc(n))));
        };
        match k.handler {
            Handler::Ignore => Ok(()),
            Handler::Parse(f) => f(self, n, v, ctx),
            Handler::Sticky(buf) => {
                if let Some(v) = v {
                    return Err(skip(format!("{n}:{}", trunc(v))));
                }
                self.sticky = buf;
                self.transforms.clear();
                self.instances += 1;
                Ok(())
            }
            Handler::HttpModifier(buf) => {
                if let Some(v) = v {
                    return Err(skip(format!(
                        "{n}:{}",
                        trunc(v).split(' ').next().unwrap_or("")
                    )));
                }
                match self.dialect {
                    Dialect::Snort3 => {
                        self.sticky = buf;
                        self.transforms.clear();
                        self.instances += 1;
                    }
                    Dialect::Legacy => {
                        let idx = self
                            .last_content
                            .ok_or_else(|| err(format!("`{n}` without a preceding content")))?;
                        if let Some(slot) = self.items.get_mut(idx) {
                            slot.0 = buf;
                        }
                        // A content modifier adds to its buffer's one list, as Suricata's do.
                        if let Some(t) = self.item_transforms.get_mut(idx) {
                            t.1 = 0;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// The transforms that apply to an item inspecting `buf`, and its instance: the current ones when it is the
    /// sticky buffer.
    fn transforms_for(&self, buf: PBuf) -> (Vec<Transform>, u32) {
        if buf == self.sticky {
            (self.transforms.clone(), self.instances)
        } else {
            (Vec::new(), 0)
        }
    }

    /// A transform keyword: applies to the current sticky buffer from here on.
    pub(crate) fn transform(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let t = if n == "xor" {
            let v = v.ok_or_else(|| err("xor needs a key"))?;
            Transform::Xor(crate::transform::Xor::parse(v).map_err(err)?)
        } else if n == "from_base64" {
            Transform::FromBase64(crate::transform::FromBase64::parse(v).map_err(err)?)
        } else if n == "gunzip" || n == "zlib_deflate" {
            let f = crate::transform::Inflate::parse(n, v).map_err(err)?;
            if n == "gunzip" {
                Transform::Gunzip(f)
            } else {
                Transform::ZlibDeflate(f)
            }
        } else if n == "pcrexform" {
            Transform::PcreXform(
                crate::transform::PcreXform::parse(v)
                    .map_err(err)?
                    .map_err(skip)?,
            )
        } else {
            let t = Transform::from_name(n).ok_or_else(|| skip(format!("keyword {}", trunc(n))))?;
            if v.is_some() {
                return Err(err(format!("`{n}` takes no value")));
            }
            t
        };
        if self.sticky == PBuf::Fixed(Buffer::Payload) {
            return Err(skip(format!("{n} on the payload")));
        }
        if self.transforms.len() >= MAX_TRANSFORMS {
            return Err(err(format!(
                "more than {MAX_TRANSFORMS} transforms on one buffer"
            )));
        }
        self.transforms.push(t);
        Ok(())
    }

    /// `byte_test`, `byte_jump`, `byte_extract`, `byte_math`.
    pub(crate) fn byte(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let v = v.ok_or_else(|| err(format!("{n} needs a value")))?;
        let vars = &mut self.byte_vars;
        let mut var = |name: &str, define: bool| -> Result<u8, String> {
            match vars.iter().position(|x| x == name) {
                Some(i) => Ok(i as u8),
                None if define && vars.len() < byte::MAX_VARS => {
                    vars.push(name.to_string());
                    Ok((vars.len() - 1) as u8)
                }
                None if define => Err(format!("more than {} variables", byte::MAX_VARS)),
                None => Err(format!("unknown variable `{}`", trunc(name))),
            }
        };
        let item = byte::parse(n, v, &mut var).map_err(|e| match e {
            Ok(reason) => skip(reason),
            Err(msg) => err(msg),
        })?;
        let buf = self.relative_buf(item.read.relative);
        self.push_item(buf, Item::Byte(Box::new(item)))
    }

    /// The buffer of a keyword that may be positioned relative to the previous match (`byte_*`, `isdataat`, `pcre`):
    /// the sticky buffer when there is one; with none, a relative keyword goes to the buffer of the rule's last
    /// content, pcre or byte keyword, as Suricata files it (`uricontent:"a"; byte_extract:1,0,v,relative;` reads
    /// the URI); otherwise the payload.
    fn relative_buf(&self, relative: bool) -> PBuf {
        if relative && self.sticky == PBuf::Fixed(Buffer::Payload) {
            let last = self.items.iter().rev().find(|(_, it)| {
                matches!(
                    it,
                    Item::Content(_) | Item::Pcre(..) | Item::Byte(_) | Item::DataAt { .. }
                )
            });
            if let Some((b, _)) = last {
                return *b;
            }
        }
        self.sticky
    }

    pub(crate) fn msg(&mut self, v: Option<&str>) -> Step<()> {
        let (_, inner, _) = text::quoted(v.unwrap_or("")).map_err(|e| err(format!("msg: {e}")))?;
        self.msg = text::unescape_text(inner);
        Ok(())
    }

    pub(crate) fn sid(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        self.sid = Some(num(n, v)?);
        Ok(())
    }

    pub(crate) fn rev(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        self.rev = num(n, v)?;
        Ok(())
    }

    pub(crate) fn gid(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        self.gid = num(n, v)?;
        Ok(())
    }

    pub(crate) fn priority(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let p: u8 = num(n, v)?;
        if p == 0 {
            return Err(err("priority must be 1 or more"));
        }
        self.priority = Some(p);
        Ok(())
    }

    pub(crate) fn classtype(&mut self, v: Option<&str>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        let c = v.ok_or_else(|| err("classtype needs a value"))?.trim();
        if ctx.classes.get(c).is_none() {
            return Err(skip(format!("unknown classtype {}", trunc(c))));
        }
        self.classtype = Some(c.to_ascii_lowercase());
        Ok(())
    }

    pub(crate) fn service(&mut self, v: Option<&str>) -> Step<()> {
        for s in v.unwrap_or("").split(',') {
            let s = s.trim().to_ascii_lowercase();
            if !s.is_empty() {
                self.services.push(s);
            }
        }
        Ok(())
    }

    /// `metadata`: `key value` entries, comma-separated (reported in EVE's `alert.metadata`).
    pub(crate) fn metadata(&mut self, v: Option<&str>) -> Step<()> {
        for entry in v.unwrap_or("").split(',') {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            let (key, value) = entry.split_once(' ').unwrap_or((entry, ""));
            self.metadata
                .push((key.to_string(), value.trim().to_string()));
        }
        Ok(())
    }

    pub(crate) fn set_noalert(&mut self) -> Step<()> {
        self.noalert = true;
        Ok(())
    }

    /// `alert`: alert even where the action does not (a `pass` rule).
    pub(crate) fn set_alert(&mut self) -> Step<()> {
        self.alert = true;
        Ok(())
    }

    /// `threshold` or `detection_filter` ([`crate::threshold`]).
    pub(crate) fn threshold(&mut self, name: &str, v: Option<&str>) -> Step<()> {
        if self.threshold.is_some() {
            // Suricata refuses two of them, or both kinds, in one rule.
            return Err(err("more than one threshold/detection_filter"));
        }
        let t = Threshold::parse(
            v.ok_or_else(|| err(format!("{name} needs a value")))?,
            name == "detection_filter",
        )
        .map_err(|e| match e {
            ThresholdError::Unsupported(r) => skip(r),
            ThresholdError::Invalid(m) => err(m),
        })?;
        self.threshold = Some(t);
        Ok(())
    }

    /// `decode-event:<name>`: a decoder anomaly on the packet ([`HeaderTest::decode_event`]).
    pub(crate) fn decode_event(&mut self, v: Option<&str>) -> Step<()> {
        let v = v.ok_or_else(|| err("decode-event needs a value"))?;
        let t = HeaderTest::decode_event(v).map_err(err)?.ok_or_else(|| {
            skip(format!(
                "decode-event {}: not raised by the decoder",
                v.trim().chars().take(48).collect::<String>()
            ))
        })?;
        if self.header.len() >= MAX_ITEMS {
            return Err(err(format!("more than {MAX_ITEMS} header keywords")));
        }
        self.header.push(t);
        Ok(())
    }

    /// `stream-event:<name>` and `engine-event:<name>` ([`crate::header::stream_event`],
    /// [`crate::header::engine_event`]): an event the engine raises becomes a header test; one of Suricata's that it
    /// does not raise skips the rule with that reason; an unknown name is an error.
    pub(crate) fn engine_event(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let v = v.ok_or_else(|| err(format!("{n} needs a value")))?;
        let parsed = if n == "stream-event" {
            crate::header::stream_event(v)
        } else {
            crate::header::engine_event(v)
        };
        let t = parsed.map_err(err)?.ok_or_else(|| {
            skip(format!(
                "{n} {}: not raised by the engine",
                v.trim().chars().take(48).collect::<String>()
            ))
        })?;
        if self.header.len() >= MAX_ITEMS {
            return Err(err(format!("more than {MAX_ITEMS} header keywords")));
        }
        self.header.push(t);
        Ok(())
    }

    /// `stream_size:<side>,<op>,<bytes>` ([`crate::stream_size`]).
    pub(crate) fn stream_size(&mut self, v: Option<&str>) -> Step<()> {
        let t = StreamSize::parse(v.unwrap_or("")).map_err(err)?;
        if self.stream_size.len() >= MAX_ITEMS {
            return Err(err(format!("more than {MAX_ITEMS} stream_size keywords")));
        }
        self.stream_size.push(t);
        Ok(())
    }

    /// A packet header keyword (`ttl`, `flags`, `itype`, ...: [`crate::header`]).
    pub(crate) fn header_test(&mut self, name: &str, v: Option<&str>) -> Step<()> {
        let t = HeaderTest::parse(name, v)
            .map_err(err)?
            .ok_or_else(|| err(format!("`{name}` is not a header keyword")))?;
        if self.header.len() >= MAX_ITEMS {
            return Err(err(format!("more than {MAX_ITEMS} header keywords")));
        }
        self.header.push(t);
        Ok(())
    }

    pub(crate) fn nocase(&mut self, n: &str) -> Step<()> {
        self.last_content(n)?.nocase = true;
        Ok(())
    }

    pub(crate) fn fast_pattern(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        match v.map(str::trim) {
            None | Some("only") => {}
            // Snort 2 `fast_pattern:offset,length` only picks a slice; the whole content is just as valid.
            Some(x) if x.split(',').all(|p| p.trim().parse::<u32>().is_ok()) => {}
            Some(x) => {
                return Err(err(format!("fast_pattern: invalid value `{}`", trunc(x))));
            }
        }
        self.last_content(n)?.fast_pattern = true;
        Ok(())
    }

    /// `depth`, `offset`, `distance`, `within`.
    pub(crate) fn position(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let v = v.ok_or_else(|| err(format!("`{n}` needs a value")))?;
        let var = self.position_var(n, v)?;
        let c = self.last_content(n)?;
        match var {
            Some(id) => set_var_position(c, n, id),
            None => set_position(c, n, position(n, v)?),
        }
    }

    /// The variable a `distance`/`within` value names, if it names one the rule defined (`byte_extract`,
    /// `byte_math`); `None` for a number. A variable anywhere else stays a skip (`offset from a variable`).
    fn position_var(&self, n: &str, v: &str) -> Step<Option<u8>> {
        let v = v.trim();
        if !matches!(n, "distance" | "within") {
            return Ok(None);
        }
        Ok(self.byte_vars.iter().position(|x| x == v).map(|i| i as u8))
    }

    pub(crate) fn startswith(&mut self, n: &str) -> Step<()> {
        let c = self.last_content(n)?;
        c.offset = Some(0);
        c.depth = Some(c.bytes.len() as u32);
        Ok(())
    }

    pub(crate) fn endswith(&mut self, n: &str) -> Step<()> {
        self.last_content(n)?.endswith = true;
        Ok(())
    }

    pub(crate) fn app_layer_protocol(&mut self, v: Option<&str>) -> Step<()> {
        let raw = v
            .ok_or_else(|| err("app-layer-protocol needs a value"))?
            .trim();
        let (neg, name) = match raw.strip_prefix('!') {
            Some(r) => (true, r.trim()),
            None => (false, raw),
        };
        if name.contains(',') {
            return Err(skip(format!("app-layer-protocol:{}", trunc(name))));
        }
        let name = name.to_ascii_lowercase();
        let canon = APP_PROTOS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, c)| c)
            .or(match name.as_str() {
                "failed" | "unknown" => Some("failed"),
                _ => None,
            })
            .ok_or_else(|| skip(format!("app-layer-protocol:{}", trunc(&name))))?;
        self.app_layer.push((neg, canon));
        Ok(())
    }

    /// `entropy: [bytes N,] [offset N,] value CMP` on the current buffer ([`crate::entropy`]).
    /// What it measures is kept on the flow under the buffer's name ([`crate::flowvar::entropy_name`]).
    pub(crate) fn entropy(&mut self, v: Option<&str>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        let mut e = crate::entropy::Entropy::parse(v.ok_or_else(|| err("entropy needs a value"))?)?;
        let name = crate::flowvar::entropy_name(self.sticky.name());
        e.var = var_id(ctx, crate::flowvar::VarScope::Entropy, name)?;
        self.push_item(self.sticky, Item::Entropy(Box::new(e)))
    }

    /// `absent` / `absent: or_else` on the current sticky buffer (see [`Item::Absent`]): right after the buffer is
    /// named, on a buffer whose absence the engine learns ([`ABSENT_BUFFERS`]).
    pub(crate) fn absent(&mut self, v: Option<&str>) -> Step<()> {
        let or_else = match v.map(str::trim) {
            None | Some("") => false,
            Some("or_else") => true,
            Some(o) => return Err(err(format!("absent: unknown option `{}`", trunc(o)))),
        };
        let PBuf::Fixed(buf) = self.sticky else {
            return Err(skip(format!("absent on {}", self.sticky.name())));
        };
        if !ABSENT_BUFFERS.contains(&buf) {
            return Err(skip(format!(
                "absent on {} (the engine does not learn that it is absent)",
                buf.name()
            )));
        }
        if self.items.iter().any(|(b, _)| *b == self.sticky) {
            return Err(err("absent must follow its sticky buffer directly"));
        }
        self.push_item(self.sticky, Item::Absent { or_else })
    }

    /// `rpc:PROGRAM,VERSION,PROCEDURE` on the packet's payload ([`crate::rpc`]): a packet keyword, as `dsize`.
    pub(crate) fn rpc(&mut self, v: Option<&str>) -> Step<()> {
        let t =
            crate::rpc::RpcTest::parse(v.ok_or_else(|| err("rpc needs a value"))?).map_err(err)?;
        self.push_item(PBuf::Fixed(Buffer::Payload), Item::Rpc(t))?;
        self.dsize = true;
        Ok(())
    }

    pub(crate) fn bsize(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let (min, max) = length_range(n, v)?;
        self.push_item(self.sticky, Item::Len { min, max })
    }

    /// `urilen:RANGE[,norm|raw]`: the length of the normalised (default) or raw URI.
    pub(crate) fn urilen(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let raw = v.ok_or_else(|| err("urilen needs a value"))?;
        let (range, buf) = match raw.split_once(',') {
            None => (raw, Buffer::HttpUri),
            Some((r, o)) => match o.trim() {
                "norm" => (r, Buffer::HttpUri),
                "raw" => (r, Buffer::HttpRawUri),
                other => return Err(err(format!("urilen: unknown option `{}`", trunc(other)))),
            },
        };
        let (min, max) = length_range(n, Some(range))?;
        self.push_item(PBuf::Fixed(buf), Item::Len { min, max })
    }

    pub(crate) fn dsize(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let (min, max) = length_range(n, v)?;
        self.push_item(PBuf::Fixed(Buffer::Payload), Item::Len { min, max })?;
        self.dsize = true;
        Ok(())
    }

    fn push_item(&mut self, buf: PBuf, item: Item) -> Step<()> {
        if self.items.len() >= MAX_ITEMS {
            return Err(err(format!("more than {MAX_ITEMS} content/pcre options")));
        }
        self.item_transforms.push(self.transforms_for(buf));
        self.items.push((buf, item));
        Ok(())
    }

    pub(crate) fn flowbits(&mut self, v: Option<&str>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        let raw = v.ok_or_else(|| err("flowbits needs a value"))?.trim();
        let mut parts = raw.splitn(3, ',').map(str::trim);
        let cmd = parts.next().unwrap_or("").to_ascii_lowercase();
        let names = parts.next();
        if parts.next().is_some() {
            return Err(skip("flowbits group"));
        }
        if !matches!(
            cmd.as_str(),
            "set" | "unset" | "toggle" | "isset" | "isnotset" | "noalert"
        ) {
            return Err(skip(format!("flowbits:{}", trunc(&cmd))));
        }
        if cmd == "noalert" {
            if names.is_some() {
                return Err(err("flowbits:noalert takes no name"));
            }
            self.noalert = true;
            return Ok(());
        }
        let names = names
            .filter(|n| !n.is_empty())
            .ok_or_else(|| err(format!("flowbits:{cmd} needs a name")))?;
        let all = names.contains('&');
        if all && names.contains('|') {
            return Err(err("flowbits: mixes `&` and `|`"));
        }
        let mut ids = Vec::new();
        for n in names.split(['&', '|']).map(str::trim) {
            if n.is_empty() || n.contains(char::is_whitespace) {
                return Err(err(format!("flowbits: invalid name `{}`", trunc(n))));
            }
            let next = ctx.flowbit_ids.len() as u32;
            if ctx.flowbit_ids.len() >= MAX_FLOWBITS && !ctx.flowbit_ids.contains_key(n) {
                return Err(err(format!("more than {MAX_FLOWBITS} flowbit names")));
            }
            ids.push(*ctx.flowbit_ids.entry(n.to_string()).or_insert(next));
        }
        match cmd.as_str() {
            // Snort allows `set,a&b`: each name is set (unset, toggled).
            "set" => self.flowbits.extend(ids.into_iter().map(Flowbit::Set)),
            "unset" => self.flowbits.extend(ids.into_iter().map(Flowbit::Unset)),
            "toggle" => self.flowbits.extend(ids.into_iter().map(Flowbit::Toggle)),
            "isset" => self.flowbits.push(Flowbit::IsSet { ids, all }),
            "isnotset" => self.flowbits.push(Flowbit::IsNotSet { ids, all }),
            other => return Err(skip(format!("flowbits:{}", trunc(other)))),
        }
        Ok(())
    }

    /// `xbits:cmd,name,track T[,expire N]` or `xbits:noalert` (see [`crate::xbits`]).
    pub(crate) fn xbits(&mut self, v: Option<&str>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        let raw = v.ok_or_else(|| err("xbits needs a value"))?.trim();
        self.add_xbit(XbitSpec::parse(raw), ctx)
    }

    /// `hostbits:<cmd>,<name>[,src|dst]` or `hostbits:noalert` ([`XbitSpec::parse_hostbits`]): host bits, the
    /// same store and name space as `xbits` with `track ip_src`/`ip_dst`.
    pub(crate) fn hostbits(&mut self, v: Option<&str>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        let raw = v.ok_or_else(|| err("hostbits needs a value"))?.trim();
        self.add_xbit(XbitSpec::parse_hostbits(raw), ctx)
    }

    fn add_xbit(&mut self, spec: Result<XbitSpec, XbitError>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        let (op, name, track, expire) = match spec {
            Ok(XbitSpec::NoAlert) => {
                self.noalert = true;
                return Ok(());
            }
            Ok(XbitSpec::Bit {
                op,
                name,
                track,
                expire,
            }) => (op, name, track, expire),
            Err(XbitError::Invalid(m)) => return Err(err(m)),
            Err(XbitError::Unsupported(m)) => return Err(skip(m)),
        };
        let key = (track.is_host(), name);
        let next = ctx.xbit_ids.len() as u32;
        if ctx.xbit_ids.len() >= MAX_XBITS && !ctx.xbit_ids.contains_key(&key) {
            return Err(err(format!("more than {MAX_XBITS} xbit names")));
        }
        let id = *ctx.xbit_ids.entry(key).or_insert(next);
        self.xbits.push(Xbit {
            op,
            id,
            track,
            expire,
        });
        Ok(())
    }

    /// `tag:session|host[,count,metric[,src|dst]]` (see [`crate::tag`]).
    pub(crate) fn tag(&mut self, v: Option<&str>) -> Step<()> {
        let t = Tag::parse(v.unwrap_or("").trim()).map_err(err)?;
        self.tags.push(t);
        Ok(())
    }

    /// `dataset:...` and `datarep:...` (see [`crate::dataset`]): an item on the current sticky buffer.
    pub(crate) fn dataset(&mut self, n: &str, v: Option<&str>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        use crate::dataset::{DatasetItem, KeywordSpec, SpecError};
        let raw = v.ok_or_else(|| err(format!("{n} needs a value")))?;
        let spec = if n == "datarep" {
            KeywordSpec::parse_datarep(raw)
        } else {
            KeywordSpec::parse_dataset(raw)
        };
        let spec = match spec {
            Ok(s) => s,
            Err(SpecError::Invalid(m)) => return Err(err(m)),
            Err(SpecError::Unsupported(m)) => return Err(skip(m)),
        };
        if matches!(self.sticky, PBuf::Fixed(Buffer::Payload)) {
            return Err(err(format!("{n}: only supported on sticky buffers")));
        }
        let set = ctx
            .datasets
            .resolve(&spec, ctx.rule_dir)
            .map_err(|m| err(format!("{n}: {m}")))?;
        let op_id = *ctx.next_dataset_op;
        *ctx.next_dataset_op = op_id.saturating_add(1);
        self.push_item(
            self.sticky,
            Item::Dataset(Box::new(DatasetItem {
                set,
                op: spec.op,
                op_id,
                inline: None,
                kind: crate::dataset::SetType::String,
            })),
        )
    }

    /// `flowvar:name,"content"` / `pktvar:name,"content"` (see [`crate::flowvar`]).
    pub(crate) fn var_has(
        &mut self,
        scope: crate::flowvar::VarScope,
        v: Option<&str>,
        ctx: &mut Ctx<'_, '_>,
    ) -> Step<()> {
        let kw = match scope {
            crate::flowvar::VarScope::Packet => "pktvar",
            _ => "flowvar",
        };
        let raw = v.ok_or_else(|| err(format!("{kw} needs a value")))?.trim();
        let (name, content) = raw
            .split_once(',')
            .ok_or_else(|| err(format!("{kw}: expected NAME,\"CONTENT\"")))?;
        let name = name.trim();
        crate::flowvar::check_name(name).map_err(|e| err(format!("{kw}: {e}")))?;
        let content = content.trim();
        let inner = match text::quoted(content) {
            Ok((false, inner, rest)) if rest.trim().is_empty() => inner,
            Ok(_) => {
                return Err(err(format!(
                    "{kw}: the content takes no modifiers or negation"
                )));
            }
            Err(_) if !content.contains('"') && !content.is_empty() => content,
            Err(e) => return Err(err(format!("{kw}: {e}"))),
        };
        let content = text::content_bytes(inner).map_err(|e| err(format!("{kw}: {e}")))?;
        let var = var_id(ctx, scope, name)?;
        self.flowbits.push(Flowbit::VarHas {
            scope,
            var,
            content: content.into_boxed_slice(),
        });
        Ok(())
    }

    /// `flowint:name,op[,value]` (see [`Flowint`]).
    pub(crate) fn flowint(&mut self, v: Option<&str>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        let raw = v.ok_or_else(|| err("flowint needs a value"))?.trim();
        let mut parts = raw.splitn(3, ',').map(str::trim);
        let name = parts.next().unwrap_or("");
        let op = parts.next().unwrap_or("");
        let value = parts.next().filter(|v| !v.is_empty());
        let valid_name = |n: &str| {
            n.starts_with(|c: char| c.is_ascii_alphabetic())
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/'))
        };
        if !valid_name(name) {
            return Err(err(format!("flowint: invalid name `{}`", trunc(name))));
        }
        let op = match op {
            "=" => FlowintOp::Set,
            "+" => FlowintOp::Add,
            "-" => FlowintOp::Sub,
            "==" => FlowintOp::Eq,
            "!=" => FlowintOp::Ne,
            "<" => FlowintOp::Lt,
            "<=" => FlowintOp::Le,
            ">" => FlowintOp::Gt,
            ">=" => FlowintOp::Ge,
            "isset" => FlowintOp::IsSet,
            "notset" | "isnotset" => FlowintOp::NotSet,
            other => return Err(err(format!("flowint: unknown operator `{}`", trunc(other)))),
        };
        let mut id_of = |n: &str| -> Step<u32> {
            let next = ctx.flowint_ids.len() as u32;
            if ctx.flowint_ids.len() >= MAX_FLOWINTS && !ctx.flowint_ids.contains_key(n) {
                return Err(err(format!("more than {MAX_FLOWINTS} flowint names")));
            }
            Ok(*ctx.flowint_ids.entry(n.to_string()).or_insert(next))
        };
        let value = match (op, value) {
            (FlowintOp::IsSet | FlowintOp::NotSet, _) => FlowintValue::None,
            (_, None) => return Err(err("flowint: the operator needs a value")),
            (_, Some(v)) if v.starts_with(|c: char| c.is_ascii_digit()) => {
                let n: u32 = v
                    .parse()
                    .map_err(|_| err(format!("flowint: invalid value `{}`", trunc(v))))?;
                FlowintValue::Const(n)
            }
            (_, Some(v)) if valid_name(v) => FlowintValue::Var(id_of(v)?),
            (_, Some(v)) => return Err(err(format!("flowint: invalid value `{}`", trunc(v)))),
        };
        let id = id_of(name)?;
        self.flowbits.push(Flowbit::Int(Flowint { id, op, value }));
        Ok(())
    }

    pub(crate) fn isdataat(&mut self, v: Option<&str>) -> Step<()> {
        let raw = v.ok_or_else(|| err("isdataat needs a value"))?.trim();
        let (negated, rest) = match raw.strip_prefix('!') {
            Some(r) => (true, r.trim()),
            None => (false, raw),
        };
        let mut parts = rest.split(',').map(str::trim);
        let n = position("isdataat", parts.next().unwrap_or(""))?;
        let n = u32::try_from(n).map_err(|_| err("isdataat must not be negative"))?;
        let mut relative = false;
        for p in parts {
            match p {
                "relative" => relative = true,
                "rawbytes" => {}
                other => return Err(err(format!("isdataat: unknown option `{}`", trunc(other)))),
            }
        }
        self.push_item(
            self.relative_buf(relative),
            Item::DataAt {
                n,
                relative,
                negated,
            },
        )
    }

    /// `target:src_ip` or `target:dest_ip`.
    pub(crate) fn target(&mut self, v: Option<&str>) -> Step<()> {
        self.target = Some(match v.map(str::trim) {
            Some("src_ip") => AlertTarget::SrcIp,
            Some("dest_ip") => AlertTarget::DestIp,
            other => {
                return Err(err(format!(
                    "target: `{}` is neither src_ip nor dest_ip",
                    trunc(other.unwrap_or(""))
                )));
            }
        });
        Ok(())
    }

    /// `ssl_state` / `ssl_version`: a condition on the payload's TLS records, whatever the sticky buffer.
    pub(crate) fn tls_record(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        use crate::tls_record::{TlsCond, TlsField};
        let field = if n == "ssl_state" {
            TlsField::State
        } else {
            TlsField::Version
        };
        let c = TlsCond::parse(field, v.unwrap_or("")).map_err(|e| err(format!("{n}: {e}")))?;
        self.push_item(PBuf::Fixed(Buffer::Payload), Item::Tls(c))
    }

    /// `dcerpc.iface` / `dcerpc.opnum`: a condition on the DCE/RPC call header, whatever the sticky buffer.
    pub(crate) fn dcerpc(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        use crate::dcerpc::DceCond;
        let v = v.unwrap_or("");
        let c = if n.ends_with("iface") {
            DceCond::parse_iface(v)
        } else {
            DceCond::parse_opnum(v)
        }
        .map_err(|e| err(format!("{n}: {e}")))?;
        self.push_item(PBuf::Fixed(Buffer::DcerpcHeader), Item::Dce(c))
    }

    /// `krb5_msg_type:[!|<|>|<=|>=]<type>`: the Kerberos message's type, a number or its name (`AS_REQ`, `AS_REP`,
    /// `TGS_REQ`, `TGS_REP`, `AP_REQ`, `AP_REP`, `KRB_ERROR`, with or without `KRB_`), read as a one-byte test of
    /// the message type the parser hands over ([`Buffer::Krb5MsgType`]).
    pub(crate) fn krb5_msg_type(&mut self, v: Option<&str>) -> Step<()> {
        let v = v.unwrap_or("").trim();
        let (op, rest) = ["<=", ">=", "!", "<", ">", "="]
            .iter()
            .find_map(|op| v.strip_prefix(op).map(|r| (*op, r.trim())))
            .unwrap_or(("=", v));
        let name = rest.strip_prefix("KRB_").unwrap_or(rest);
        let n: u8 = match name.to_ascii_uppercase().as_str() {
            "AS_REQ" => 10,
            "AS_REP" => 11,
            "TGS_REQ" => 12,
            "TGS_REP" => 13,
            "AP_REQ" => 14,
            "AP_REP" => 15,
            "ERROR" => 30,
            other => other.parse().map_err(|_| {
                err(format!(
                    "krb5_msg_type: invalid message type `{}`",
                    trunc(rest)
                ))
            })?,
        };
        let test = match op {
            "!" => format!("1,!=,{n},0"),
            op => format!("1,{op},{n},0"),
        };
        let item = byte::parse("byte_test", &test, &mut |_, _| Err(String::new()))
            .map_err(|_| err(format!("krb5_msg_type: invalid value `{}`", trunc(v))))?;
        self.push_item(PBuf::Fixed(Buffer::Krb5MsgType), Item::Byte(Box::new(item)))
    }

    /// An integer keyword of an application field, in Suricata's integer syntax (`N`, `!N`, `<N`, `>=N`, `N-M`
    /// exclusive, `!N-M`, ...): `dns.opcode` and `dns.rcode` (one byte each; `dns.rcode` also by name: `noerror`,
    /// `nxdomain`, ...), `dns.rrtype` (each question's type; a rule matches when one does), `tls.cert_chain_len`
    /// (the server's certificates). See [`Item::Num`].
    pub(crate) fn app_number(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let v = v.unwrap_or("").trim();
        let (buf, width, max) = match n {
            "dns.opcode" => (Buffer::DnsOpcode, 1, u64::from(u8::MAX)),
            "dns.rcode" => (Buffer::DnsRcode, 1, u64::from(u8::MAX)),
            "dns.rrtype" => (Buffer::DnsRrtype, 2, u64::from(u16::MAX)),
            "tls.cert_chain_len" => (Buffer::TlsCertChainLen, 4, u64::from(u32::MAX)),
            "smb.version" => (Buffer::SmbVersion, 1, 2),
            "http2.frametype" => (Buffer::Http2FrameType, 1, u64::from(u8::MAX)),
            "http2.errorcode" => (Buffer::Http2ErrorCode, 4, u64::from(u32::MAX)),
            "http2.priority" => (Buffer::Http2Priority, 1, u64::from(u8::MAX)),
            "http2.window" => (Buffer::Http2Window, 4, u64::from(u32::MAX)),
            "http2.size_update" => (Buffer::Http2SizeUpdate, 4, u64::from(u32::MAX)),
            "ftp.dynamic_port" => (Buffer::FtpDynamicPort, 2, u64::from(u16::MAX)),
            "krb5_err_code" => (Buffer::Krb5ErrCode, 4, u64::from(u32::MAX)),
            _ => return Err(err(format!("{n}: not an integer keyword"))),
        };
        // Frame types and error codes by name (`GOAWAY`, `NO_ERROR`), as Suricata accepts them.
        let named = |f: fn(&str) -> Option<u32>| -> Step<String> {
            f(v).map(|x| x.to_string())
                .ok_or_else(|| err(format!("{n}: unknown name `{}`", trunc(v))))
        };
        let v: &str = &match n {
            "http2.frametype" => {
                named(|x| flowbundle_types::http2::frame_type_from_name(x).map(u32::from))?
            }
            "http2.errorcode" => named(flowbundle_types::http2::error_code_from_name)?,
            _ => v.to_string(),
        };
        let text = if n == "dns.rcode" {
            rcode_numbers(v)
        } else {
            v.to_string()
        };
        let test = Num::parse(&text, max).map_err(|e| err(format!("{n}: {e}")))?;
        self.push_item(PBuf::Fixed(buf), Item::Num { at: 0, width, test })
    }

    /// `ftp.mode:active|passive` and `ftp.reply_received:yes|on|true|1|no|off|false|0`: a one-byte equality on
    /// [`Buffer::FtpMode`] (1 active) or [`Buffer::FtpReplyReceived`] (1 received). Any other value (`xactive`,
    /// `yes yes`) is an error, as in Suricata.
    pub(crate) fn ftp_flag(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let v = v.unwrap_or("").trim();
        let (buf, value) = match (n, v) {
            ("ftp.mode", "active") => (Buffer::FtpMode, 1),
            ("ftp.mode", "passive") => (Buffer::FtpMode, 0),
            ("ftp.reply_received", "yes" | "on" | "true" | "1") => (Buffer::FtpReplyReceived, 1),
            ("ftp.reply_received", "no" | "off" | "false" | "0") => (Buffer::FtpReplyReceived, 0),
            _ => return Err(err(format!("{n}: invalid value `{}`", trunc(v)))),
        };
        let test = Num::parse(&value.to_string(), 1).map_err(|e| err(format!("{n}: {e}")))?;
        self.push_item(
            PBuf::Fixed(buf),
            Item::Num {
                at: 0,
                width: 1,
                test,
            },
        )
    }

    /// `krb5.ticket_encryption:[!]weak` or a list of encryption types by name or number
    /// (`aes256-cts-hmac-sha1-96, 23`): a reply's ticket's encryption type is (not) weak, or is one of the list, on
    /// [`Buffer::Krb5TicketEncryption`]. A message without a ticket never matches, as in Suricata.
    pub(crate) fn krb5_ticket_encryption(&mut self, v: Option<&str>) -> Step<()> {
        let v = v.unwrap_or("").trim();
        let buf = PBuf::Fixed(Buffer::Krb5TicketEncryption);
        let weak = match v {
            "weak" => Some(1),
            "!weak" => Some(0),
            _ => None,
        };
        if let Some(w) = weak {
            let test = Num::parse(&w.to_string(), 1)
                .map_err(|e| err(format!("krb5.ticket_encryption: {e}")))?;
            return self.push_item(
                buf,
                Item::Num {
                    at: 0,
                    width: 1,
                    test,
                },
            );
        }
        let mut values = Vec::new();
        for name in v.split([',', ' ']).filter(|s| !s.is_empty()) {
            let e = flowbundle_types::krb5::etype_from_name(name).ok_or_else(|| {
                err(format!(
                    "krb5.ticket_encryption: unknown encryption type `{}`",
                    trunc(name)
                ))
            })?;
            // The type's bits, as the parser hands them over.
            values.push(u64::from(e as u32));
        }
        if values.is_empty() {
            return Err(err("krb5.ticket_encryption needs a value"));
        }
        self.push_item(
            buf,
            Item::NumIn {
                at: 1,
                width: 4,
                values: values.into(),
            },
        )
    }

    /// `http2.settings:NAME[OP VALUE]`: a SETTINGS entry with that identifier (by name, `SETTINGS_HEADER_TABLE_SIZE`,
    /// or number) and, when given, a value the integer test admits (`>1000`, `=0`, `10-20`), on
    /// [`Buffer::Http2Settings`] (one part per entry: identifier, 2 bytes, then value, 4 bytes).
    pub(crate) fn http2_settings(&mut self, v: Option<&str>) -> Step<()> {
        let v = v.unwrap_or("").trim();
        let cut = v.find(['<', '>', '=', '!', ' ']).unwrap_or(v.len());
        let (name, test) = (v[..cut].trim(), v[cut..].trim());
        let id = flowbundle_types::http2::setting_from_name(name)
            .ok_or_else(|| err(format!("http2.settings: unknown setting `{}`", trunc(name))))?;
        let id_test = Num::parse(&id.to_string(), u64::from(u16::MAX))
            .map_err(|e| err(format!("http2.settings: {e}")))?;
        let test = test.strip_prefix('=').map(str::trim).unwrap_or(test);
        let value_test = if test.is_empty() {
            None
        } else {
            Some(
                Num::parse(test, u64::from(u32::MAX))
                    .map_err(|e| err(format!("http2.settings: {e}")))?,
            )
        };
        let b = PBuf::Fixed(Buffer::Http2Settings);
        self.push_item(
            b,
            Item::Num {
                at: 0,
                width: 2,
                test: id_test,
            },
        )?;
        if let Some(test) = value_test {
            self.push_item(
                b,
                Item::Num {
                    at: 2,
                    width: 4,
                    test,
                },
            )?;
        }
        Ok(())
    }

    /// `tls.subject`, `tls.issuerdn`, `tls.fingerprint`: Suricata's legacy string keywords, a case-sensitive
    /// search for the value (quoted or not, `!` to negate) in the server certificate's subject, issuer or SHA-1
    /// fingerprint (lowercase hex joined by `:`); no modifier applies to it. Read as a content on that buffer, so
    /// neither the value nor its negation matches a flow without the certificate, as in Suricata.
    pub(crate) fn tls_legacy_string(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let raw = v.map(str::trim).unwrap_or("");
        let (negated, rest) = match raw.strip_prefix('!') {
            Some(r) => (true, r.trim_start()),
            None => (false, raw),
        };
        let inner = match rest.strip_prefix('"') {
            Some(r) => r
                .strip_suffix('"')
                .ok_or_else(|| err(format!("{n}: unterminated quoted string")))?,
            None => rest,
        };
        let value = text::unescape_text(inner);
        if value.is_empty() {
            return Err(err(format!("{n} needs a value")));
        }
        let buf = match n {
            "tls.subject" => Buffer::TlsCertSubject,
            "tls.issuerdn" => Buffer::TlsCertIssuer,
            _ => Buffer::TlsCertFingerprint,
        };
        if self.items.len() >= MAX_ITEMS {
            return Err(err(format!("more than {MAX_ITEMS} content/pcre options")));
        }
        let c = Content::new(value.into_bytes(), negated);
        self.item_transforms.push((Vec::new(), 0));
        self.items
            .push((PBuf::Fixed(buf), Item::Content(Box::new(c))));
        // Modifiers after it do not apply to it (Suricata: "can't use nocase, or other modifiers").
        self.last_content = None;
        Ok(())
    }

    /// `tls_cert_notbefore` / `tls_cert_notafter` (`[<|>]DATE` or `DATE<>DATE`, Suricata's comparisons: `<` and
    /// `>` include the date, the range both ends) and `tls_cert_expired` / `tls_cert_valid` (no value: `notAfter`
    /// before the packet's time, or not), on [`Buffer::TlsCertValidity`]. A date is seconds since the epoch when
    /// it is all digits, else `YYYY-MM`, `YYYY-MM-DD`, then optionally ` HH` or `THH`, `:MM`, `:SS`, in UTC.
    pub(crate) fn tls_validity(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let v = v.map(str::trim).unwrap_or("");
        let item = |at: u8, width: u8, test: Num| Item::Num { at, width, test };
        let buf = PBuf::Fixed(Buffer::TlsCertValidity);
        if matches!(n, "tls_cert_expired" | "tls_cert_valid") {
            if !v.is_empty() {
                return Err(err(format!("{n} takes no value")));
            }
            let at = if n == "tls_cert_expired" { 16 } else { 17 };
            return self.push_item(buf, item(at, 1, Num::Eq(1)));
        }
        let at = if n == "tls_cert_notbefore" { 0 } else { 8 };
        let bad = |why: &str| err(format!("{n}: {why}"));
        let date = |s: &str| cert_date(s).map(cert_date_number).map_err(|e| bad(&e));
        let tests = if let Some((a, b)) = v.split_once("<>") {
            let (a, b) = (date(a)?, date(b)?);
            if b <= a {
                return Err(bad("the range's second date is not after its first"));
            }
            vec![Num::Ge(a), Num::Le(b)]
        } else if let Some(x) = v.strip_prefix('<') {
            vec![Num::Le(date(x)?)]
        } else if let Some(x) = v.strip_prefix('>') {
            vec![Num::Ge(date(x)?)]
        } else {
            vec![Num::Eq(date(v)?)]
        };
        for t in tests {
            self.push_item(buf, item(at, 8, t))?;
        }
        Ok(())
    }

    /// `app-layer-event:<proto>.<event>`: the protocol's parser raised this anomaly on the transaction
    /// ([`AppLayerEvent`]), read as a one-byte test of the event's flag in the protocol's event buffer
    /// ([`Buffer::DnsEvents`], [`Buffer::FtpEvents`], [`Buffer::HttpEvents`]). Another of Suricata's events (one no parser here raises, a general `applayer_*`
    /// event) skips the rule with its name.
    pub(crate) fn app_layer_event(&mut self, v: Option<&str>) -> Step<()> {
        let v = v.unwrap_or("").trim();
        if v.is_empty() {
            return Err(err("app-layer-event needs a value"));
        }
        let Some(e) = AppLayerEvent::from_name(v) else {
            return Err(skip(format!(
                "app-layer-event {}: not raised by the engine",
                trunc(v)
            )));
        };
        let Some(buffer) = Buffer::app_layer_events(e.proto()) else {
            return Err(skip(format!(
                "app-layer-event {}: not raised by the engine",
                trunc(v)
            )));
        };
        let test = format!("1,=,1,{}", e.index());
        let item = byte::parse("byte_test", &test, &mut |_, _| Err(String::new()))
            .map_err(|_| err(format!("app-layer-event: invalid value `{}`", trunc(v))))?;
        self.push_item(PBuf::Fixed(buffer), Item::Byte(Box::new(item)))
    }

    /// `ftpbounce`: an FTP `PORT` (or `EPRT`) command announcing an address that is not the client's
    /// ([`Buffer::FtpBounce`]), Suricata's FTP bounce check on the request.
    pub(crate) fn ftpbounce(&mut self, v: Option<&str>) -> Step<()> {
        if v.is_some_and(|v| !v.trim().is_empty()) {
            return Err(err("ftpbounce takes no value"));
        }
        let item = byte::parse("byte_test", "1,=,1,0", &mut |_, _| Err(String::new()))
            .map_err(|_| err("ftpbounce: invalid test"))?;
        self.push_item(PBuf::Fixed(Buffer::FtpBounce), Item::Byte(Box::new(item)))
    }

    /// `filename:[!]"name"`, `fileext:[!]"ext"`, `filemagic:[!]"text"`: Suricata's legacy file keywords, a
    /// case-insensitive content on `file.name` (`fileext`: the name ends in `.ext`) or `file.magic`. The sticky
    /// buffer is left as it was.
    pub(crate) fn file_legacy(&mut self, n: &str, v: Option<&str>) -> Step<()> {
        let v = v.ok_or_else(|| err(format!("{n} needs a value")))?;
        let (negated, inner, rest) = text::quoted(v).map_err(|e| err(format!("{n}: {e}")))?;
        if !rest.trim().is_empty() {
            return Err(err(format!("{n}: text after the closing quote")));
        }
        let mut bytes = text::content_bytes(inner).map_err(|e| err(format!("{n}: {e}")))?;
        if bytes.is_empty() {
            return Err(err(format!("{n}: empty value")));
        }
        let buffer = match n {
            "filemagic" => Buffer::FileMagic,
            _ => Buffer::FileName,
        };
        if n == "fileext" {
            bytes.insert(0, b'.');
        }
        let mut c = Content::new(bytes, negated);
        c.nocase = true;
        c.endswith = n == "fileext";
        self.push_item(PBuf::Fixed(buffer), Item::Content(Box::new(c)))
    }

    /// `filesize:<test>` ([`crate::file::SizeTest`]).
    pub(crate) fn filesize(&mut self, v: Option<&str>) -> Step<()> {
        let v = v.ok_or_else(|| err("filesize needs a value"))?;
        let t = crate::file::SizeTest::parse(v).map_err(|e| err(format!("filesize: {e}")))?;
        self.push_item(
            PBuf::Fixed(Buffer::FileMeta),
            Item::File(Box::new(crate::file::FileCond::Size(t))),
        )
    }

    /// `filemd5:[!]<list>`, `filesha1:`, `filesha256:`: the file's hash in (or, negated, not in) a list file,
    /// read relative to the rule file's directory ([`crate::file::HashList`]).
    pub(crate) fn filehash(&mut self, n: &str, v: Option<&str>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        use crate::file::{FileCond, HashAlgo, HashList};
        let algo = match n {
            "filemd5" => HashAlgo::Md5,
            "filesha1" => HashAlgo::Sha1,
            _ => HashAlgo::Sha256,
        };
        let v = v
            .ok_or_else(|| err(format!("{n} needs a list file")))?
            .trim();
        let (negated, name) = match v.strip_prefix('!') {
            Some(r) => (true, r.trim()),
            None => (false, v),
        };
        let name = name.trim_matches('"');
        if name.is_empty() {
            return Err(err(format!("{n} needs a list file")));
        }
        let path = std::path::Path::new(name);
        let path = match ctx.rule_dir {
            Some(d) if path.is_relative() => d.join(path),
            _ => path.to_path_buf(),
        };
        let list = HashList::load(algo, &path).map_err(err)?;
        self.push_item(
            PBuf::Fixed(Buffer::FileMeta),
            Item::File(Box::new(FileCond::Hash {
                list: Arc::new(list),
                negated,
            })),
        )
    }

    /// `filestore[:<direction>[,<scope>]]`: Suricata stores the matching transaction's files. The engine stores
    /// no files: the option is checked and changes nothing that matches (EVE `fileinfo.stored` stays false).
    pub(crate) fn filestore(&mut self, v: Option<&str>) -> Step<()> {
        let Some(v) = v.map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(());
        };
        let mut parts = v.split(',').map(str::trim);
        let dir = parts.next().unwrap_or("");
        if !matches!(
            dir,
            "request" | "response" | "to_server" | "to_client" | "both"
        ) {
            return Err(err(format!(
                "filestore: invalid direction `{}`",
                trunc(dir)
            )));
        }
        if let Some(scope) = parts.next()
            && !matches!(scope, "file" | "tx" | "ssn" | "flow")
        {
            return Err(err(format!("filestore: invalid scope `{}`", trunc(scope))));
        }
        if parts.next().is_some() {
            return Err(err("filestore: more than a direction and a scope"));
        }
        Ok(())
    }

    /// `ftpdata_command:retr|stor`: the command that moved an FTP data connection's file.
    pub(crate) fn ftpdata_command(&mut self, v: Option<&str>) -> Step<()> {
        let v = v.unwrap_or("").trim();
        let cmd: &[u8] = match v.to_ascii_lowercase().as_str() {
            "retr" => b"RETR",
            "stor" => b"STOR",
            _ => {
                return Err(err(format!(
                    "ftpdata_command: expected retr or stor, got `{}`",
                    trunc(v)
                )));
            }
        };
        let mut c = Content::new(cmd.to_vec(), false);
        c.nocase = true;
        c.endswith = true;
        c.depth = Some(4);
        self.push_item(
            PBuf::Fixed(Buffer::FtpDataCommand),
            Item::Content(Box::new(c)),
        )
    }

    /// `asn1:<options>` on the current buffer ([`crate::asn1`]).
    pub(crate) fn asn1(&mut self, v: Option<&str>) -> Step<()> {
        let a = crate::asn1::Asn1::parse(v.unwrap_or("")).map_err(err)?;
        let buf = self.relative_buf(a.absolute_offset.is_none());
        self.push_item(buf, Item::Asn1(Box::new(a)))
    }

    /// `tls.version:<1.0|1.1|1.2|1.3|0xNNNN>` (optionally quoted): the version the TLS side of the packet's direction
    /// recorded ([`Buffer::TlsVersion`]), as Suricata matches it: `1.0` to `1.3` are 0x0301 to 0x0304 and also
    /// match a TLS 1.3 draft version; a hex value is compared as recorded.
    pub(crate) fn tls_version(&mut self, v: Option<&str>) -> Step<()> {
        let v = v.unwrap_or("").trim();
        let inner = v
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .unwrap_or(v);
        let (version, at) = match inner {
            "1.0" => (0x0301, 2),
            "1.1" => (0x0302, 2),
            "1.2" => (0x0303, 2),
            "1.3" => (0x0304, 2),
            h => match h.strip_prefix("0x").or_else(|| h.strip_prefix("0X")) {
                Some(x) if (1..=4).contains(&x.len()) => match u16::from_str_radix(x, 16) {
                    Ok(n) if x.bytes().all(|c| c.is_ascii_hexdigit()) => (n, 0),
                    _ => return Err(err(format!("tls.version: invalid version `{}`", trunc(v)))),
                },
                _ => return Err(err(format!("tls.version: invalid version `{}`", trunc(v)))),
            },
        };
        let test = format!("2,=,{version},{at}");
        let item = byte::parse("byte_test", &test, &mut |_, _| Err(String::new()))
            .map_err(|_| err(format!("tls.version: invalid version `{}`", trunc(v))))?;
        self.push_item(PBuf::Fixed(Buffer::TlsVersion), Item::Byte(Box::new(item)))
    }

    /// `base64_decode:[bytes N][, offset N][, relative]`: see [`Base64`].
    pub(crate) fn base64_decode(&mut self, v: Option<&str>) -> Step<()> {
        if self.sticky == PBuf::Base64Data {
            return Err(skip("base64_decode on base64_data"));
        }
        let mut b = Base64 {
            bytes: 0,
            offset: 0,
            relative: false,
            data: Group {
                buffer: Buffer::Payload,
                transforms: Vec::new(),
                items: Vec::new(),
            },
            plan: crate::verify::Plan::default(),
        };
        for part in v.unwrap_or("").split(',').map(str::trim) {
            let (k, val) = match part.split_once(char::is_whitespace) {
                Some((k, val)) => (k, Some(val.trim())),
                None => (part, None),
            };
            let number = |val: Option<&str>| -> Step<u32> {
                val.and_then(|x| x.parse::<u32>().ok())
                    .ok_or_else(|| err(format!("base64_decode: invalid `{}`", trunc(part))))
            };
            match (k, val) {
                ("", None) => {}
                ("relative", None) => b.relative = true,
                ("bytes", _) => {
                    b.bytes = number(val)?;
                    if b.bytes > MAX_BASE64_INPUT {
                        return Err(err(format!(
                            "base64_decode: bytes {} over {MAX_BASE64_INPUT}",
                            b.bytes
                        )));
                    }
                }
                ("offset", _) => b.offset = number(val)?,
                _ => {
                    return Err(err(format!(
                        "base64_decode: unknown option `{}`",
                        trunc(part)
                    )));
                }
            }
        }
        self.push_item(self.sticky, Item::Base64(Box::new(b)))
    }

    pub(crate) fn flow(&mut self, v: Option<&str>) -> Step<()> {
        for part in v.ok_or_else(|| err("flow needs a value"))?.split(',') {
            match part.trim().to_ascii_lowercase().as_str() {
                "to_server" | "from_client" => self.flow_dir = FlowDir::ToServer,
                "to_client" | "from_server" => self.flow_dir = FlowDir::ToClient,
                "established" => self.flow_state = FlowState::Established,
                "not_established" => self.flow_state = FlowState::NotEstablished,
                "stateless" => self.flow_state = FlowState::Any,
                "" => {}
                "only_stream" => self.only_stream = true,
                "no_stream" => self.no_stream = true,
                other @ ("only_frag" | "no_frag" | "noreassemble" | "only_frags" | "no_frags") => {
                    return Err(skip(format!("flow:{other}")));
                }
                other => return Err(err(format!("flow: unknown option `{}`", trunc(other)))),
            }
        }
        Ok(())
    }

    pub(crate) fn content(&mut self, name: &str, v: Option<&str>) -> Step<()> {
        if self.items.len() >= MAX_ITEMS {
            return Err(err(format!("more than {MAX_ITEMS} content/pcre options")));
        }
        let v = v.ok_or_else(|| err("content needs a value"))?;
        let (negated, inner, rest) = match text::quoted(v) {
            Ok(q) => q,
            // Snort 2 accepted unquoted contents.
            Err(_) if !v.contains('"') => {
                let t = v.trim();
                match t.strip_prefix('!') {
                    Some(r) => (true, r.trim(), ""),
                    None => (false, t, ""),
                }
            }
            Err(e) => return Err(err(format!("content: {e}"))),
        };
        let bytes = text::content_bytes(inner).map_err(err)?;
        let mut c = Content::new(bytes, negated);
        // Snort 3 inline modifiers: content:"x",nocase,depth 4,...
        let rest = rest.trim();
        if !rest.is_empty() {
            let mods = rest
                .strip_prefix(',')
                .ok_or_else(|| err("content: text after the closing quote"))?;
            for m in mods.split(',') {
                let m = m.trim();
                let (k, val) = match m.split_once(char::is_whitespace) {
                    Some((k, val)) => (k, Some(val.trim())),
                    None => (m, None),
                };
                match (k, val) {
                    ("nocase", None) => c.nocase = true,
                    ("fast_pattern", None) => c.fast_pattern = true,
                    ("fast_pattern_offset" | "fast_pattern_length", Some(x))
                        if x.parse::<u32>().is_ok() => {}
                    ("depth" | "offset" | "distance" | "within", Some(x)) => {
                        match self.position_var(k, x)? {
                            Some(id) => set_var_position(&mut c, k, id)?,
                            None => set_position(&mut c, k, position(k, x)?)?,
                        }
                    }
                    ("", None) => {}
                    _ => return Err(err(format!("content: unknown modifier `{}`", trunc(m)))),
                }
            }
        }
        let buf = if name == "uricontent" {
            PBuf::Fixed(Buffer::HttpUri)
        } else {
            self.sticky
        };
        self.item_transforms.push(self.transforms_for(buf));
        self.items.push((buf, Item::Content(Box::new(c))));
        self.last_content = Some(self.items.len() - 1);
        Ok(())
    }

    pub(crate) fn pcre(&mut self, v: Option<&str>, ctx: &mut Ctx<'_, '_>) -> Step<()> {
        if self.items.len() >= MAX_ITEMS {
            return Err(err(format!("more than {MAX_ITEMS} content/pcre options")));
        }
        let v = v.ok_or_else(|| err("pcre needs a value"))?;
        let (compiled, counted) = match ctx.pcre_compiled.get(v) {
            Some(c) => c.clone(),
            None => {
                let c = (Pcre::parse(v), false);
                ctx.pcre_compiled.insert(v.to_string(), c.clone());
                c
            }
        };
        let mut p = compiled.map_err(|e| match e {
            PcreError::Unsupported(r) => skip(r),
            PcreError::Invalid(r) => err(r),
        })?;
        // A program shared by several rules is counted once, by the first rule that takes it.
        let mem = if counted { 0 } else { p.regex.memory_usage() };
        if ctx.pcre_memory.saturating_add(mem) > ctx.pcre_budget {
            return Err(skip("pcre memory budget of the rule set exhausted"));
        }
        if p.negated && !p.captures.is_empty() {
            return Err(err("pcre: a negated expression captures nothing"));
        }
        *ctx.pcre_memory += mem;
        if !counted && let Some(c) = ctx.pcre_compiled.get_mut(v) {
            c.1 = true;
        }
        for c in &mut p.captures {
            c.op = *ctx.next_capture_op;
            *ctx.next_capture_op = ctx.next_capture_op.saturating_add(1);
            // An alert variable is committed too, into the match's alert (its EVE `alert.context`).
            let var = var_id(ctx, c.scope, &c.name)?;
            self.flowbits.push(Flowbit::Capture {
                op: c.op,
                scope: c.scope,
                var,
            });
        }
        let buf = p
            .buffer
            .map(pcre_buffer)
            .unwrap_or_else(|| self.relative_buf(p.relative));
        let id = *ctx.next_pcre_id;
        *ctx.next_pcre_id = id.saturating_add(1);
        self.item_transforms.push(self.transforms_for(buf));
        self.items.push((buf, Item::Pcre(Box::new(p), id)));
        Ok(())
    }

    fn finish(mut self, h: Header, line: usize, file: usize, ctx: &mut Ctx<'_, '_>) -> Step<Rule> {
        let sid = self.sid.ok_or_else(|| err("rule has no sid"))?;
        // `rpc` reads the call after TCP's record mark, or at once over UDP: the rule's protocol says which.
        for (_, it) in &mut self.items {
            if let Item::Rpc(t) = it {
                t.record_mark = match h.proto {
                    Proto::Tcp => true,
                    Proto::Udp => false,
                    _ => return Err(skip("rpc on a rule for more than tcp or udp")),
                };
            }
        }
        // Which side of an HTTP transaction the rule looks at decides what `http.header` and `file_data` mean.
        let response_side = match self.flow_dir {
            FlowDir::ToServer => false,
            FlowDir::ToClient => true,
            FlowDir::Any => {
                let fixed = |side: Side| {
                    self.items.iter().any(
                        |(b, _)| matches!(b, PBuf::Fixed(x) if x.is_http() && x.side() == side),
                    )
                };
                // Otherwise the buffers decide; `file_data` with `http.header` and nothing sided means the
                // response (Snort's meaning); `file_data` alone goes both ways (`file_either` below).
                fixed(Side::Response)
                    || (!fixed(Side::Request)
                        && self.items.iter().any(|(b, _)| *b == PBuf::FileData))
            }
        };
        // `http.header` (raw or not) with nothing that picks a side: Suricata inspects the request's and the
        // response's headers.
        let either_side = self.flow_dir == FlowDir::Any
            && !self.items.iter().any(|(b, _)| {
                *b == PBuf::FileData
                    || matches!(b, PBuf::Fixed(x) if x.is_http() && x.side() != Side::Either)
            });
        // `file.data` on HTTP in a rule that picks no side (no direction, no one-sided HTTP buffer, no
        // `http.header`): Suricata inspects it both ways, a request's files and a response's body.
        let file_either = self.flow_dir == FlowDir::Any
            && !self.items.iter().any(|(b, _)| {
                matches!(b, PBuf::Header | PBuf::RawHeader)
                    || matches!(b, PBuf::Fixed(x) if x.is_http() && x.side() != Side::Either)
            });
        // Which protocol's files `file_data` inspects: the header's protocol, else the rule's `service` list
        // (Snort 3). HTTP bodies unless the rule names only other protocols; of those, SMTP attachments and FTP
        // data connections' files are parsed (Snort 3's `service:ftp` inspects its files on the data connections).
        let file_proto: Option<&str> = match h.proto {
            Proto::App(p) => Some(http_family(p)),
            _ if self.services.is_empty() || self.services.iter().any(|s| s == "http") => {
                Some("http")
            }
            _ if self.services.iter().any(|s| s == "smtp") => Some("smtp"),
            _ if self.services.iter().any(|s| s == "ftp-data" || s == "ftp") => Some("ftp-data"),
            _ => None,
        };
        let mut groups: Vec<Group> = Vec::new();
        // Each group's sticky-buffer instance (parallel to `groups`; 0 where instances merge).
        let mut group_instances: Vec<u32> = Vec::new();
        // Where the last `base64_decode` went (group, item): the `base64_data` items after it go inside it.
        let mut base64_at: Option<(usize, usize)> = None;
        for ((pb, mut item), (transforms, instance)) in
            self.items.into_iter().zip(self.item_transforms)
        {
            if let Item::Content(c) = &mut item {
                fold_var_position(c);
            }
            if pb == PBuf::Base64Data {
                let Some((gi, ii)) = base64_at else {
                    return Err(err("base64_data without a preceding base64_decode"));
                };
                if !transforms.is_empty() {
                    return Err(skip("transform on base64_data"));
                }
                if let Some(Item::Base64(b)) = groups.get_mut(gi).and_then(|g| g.items.get_mut(ii))
                {
                    b.data.items.push(item);
                }
                continue;
            }
            let is_base64 = matches!(item, Item::Base64(_));
            let buffer = match pb {
                PBuf::Fixed(b) => b,
                PBuf::Header if either_side => Buffer::HttpHeader,
                PBuf::RawHeader if either_side => Buffer::HttpRawHeader,
                PBuf::Header if response_side => Buffer::HttpResponseHeader,
                PBuf::Header => Buffer::HttpRequestHeader,
                PBuf::RawHeader if response_side => Buffer::HttpResponseRawHeader,
                PBuf::RawHeader => Buffer::HttpRequestRawHeader,
                PBuf::FileData if file_proto == Some("smtp") => Buffer::SmtpFileData,
                PBuf::FileData if file_proto == Some("ftp-data") => Buffer::FtpDataFileData,
                PBuf::FileData if file_proto == Some("smb") => Buffer::SmbFileData,
                PBuf::FileData if file_either => Buffer::HttpFileData,
                PBuf::FileData if response_side => Buffer::HttpResponseBody,
                PBuf::FileData => Buffer::HttpRequestFileData,
                // Handled above.
                PBuf::Base64Data => continue,
            };
            if pb == PBuf::FileData
                && !matches!(file_proto, Some("http" | "smtp" | "ftp-data" | "smb"))
            {
                // HTTP bodies, SMTP attachments, FTP data connections' and SMB2 files are parsed; IMAP and POP3
                // files are not (Suricata parses none on IMAP and POP3 either).
                return Err(skip(format!(
                    "file_data on {}: no file parser",
                    match h.proto {
                        Proto::App(p) => p.to_string(),
                        _ => self.services.join(","),
                    }
                )));
            }
            // Suricata's multiple buffer matching: each selection of a multi-instance sticky buffer is an instance
            // of its own, which may match another value of the buffer than the other instances do (`dns.query;
            // content:"a"; dns.query; content:"b";` matches a message asking for `a` and for `b`); selecting any
            // other buffer again adds to its one list.
            let instance = if buffer.multi_instance() { instance } else { 0 };
            let gi = match groups.iter().zip(&group_instances).position(|(g, i)| {
                g.buffer == buffer && g.transforms == transforms && *i == instance
            }) {
                Some(gi) => gi,
                None => {
                    groups.push(Group {
                        buffer,
                        transforms,
                        items: Vec::new(),
                    });
                    group_instances.push(instance);
                    groups.len() - 1
                }
            };
            if let Some(g) = groups.get_mut(gi) {
                g.items.push(item);
                if is_base64 {
                    base64_at = Some((gi, g.items.len() - 1));
                }
            }
        }
        for g in &mut groups {
            let buffer = g.buffer;
            for it in &mut g.items {
                if let Item::Base64(b) = it {
                    if b.data.items.is_empty() {
                        // Suricata alerts only when base64_data inspects what was decoded.
                        return Err(skip("base64_decode without base64_data"));
                    }
                    b.data.buffer = buffer;
                    validate_group(&b.data, false)?;
                    b.plan = crate::verify::Plan::new(&b.data);
                }
            }
        }
        // `ip.src` / `ip.dst` inspect the packet's addresses, the header buffers its headers: checked with the
        // header, per packet.
        let (packet_groups, groups): (Vec<Group>, Vec<Group>) =
            groups.into_iter().partition(|g| g.buffer.is_packet_field());
        let raw_headers = packet_groups.iter().any(|g| g.buffer.is_raw_header());
        for g in &packet_groups {
            header_buffer_proto(g.buffer, h.proto)?;
            validate_group(g, false)?;
        }
        let packet_groups: Vec<(Group, crate::verify::Plan)> = packet_groups
            .into_iter()
            .map(|g| {
                let plan = crate::verify::Plan::new(&g);
                (g, plan)
            })
            .collect();
        // The rule's application protocol: its buffers' (a JA3/JA4 buffer belongs to TLS and QUIC alike, so a
        // rule with only those takes the header's `quic` when it names it, TLS otherwise).
        let app = groups
            .iter()
            .filter(|g| !g.buffer.also_quic())
            .find_map(|g| g.buffer.app_proto())
            .or_else(|| {
                let any = groups.iter().find_map(|g| g.buffer.app_proto());
                match h.proto {
                    Proto::App("quic") | Proto::Udp if any.is_some() => Some("quic"),
                    _ => any,
                }
            });
        let has_http = app.is_some();
        if let Some(app) = app {
            if let Some(g) = groups.iter().find(|g| {
                g.buffer
                    .app_proto()
                    .is_some_and(|p| http_family(p) != http_family(app))
                    && !(app == "quic" && g.buffer.also_quic())
            }) {
                return Err(skip(format!("{} with {app} buffers", g.buffer.name())));
            }
            if matches!(h.proto, Proto::App(p) if http_family(p) != http_family(app))
                || (!udp_app(app) && matches!(h.proto, Proto::Udp | Proto::Icmp))
                || (udp_app(app) && h.proto == Proto::Icmp)
                || matches!(h.proto, Proto::IpProto(_))
            {
                return Err(skip(format!("{app} buffer on a non-{app} protocol")));
            }
            if self.flow_dir == FlowDir::ToServer && groups.iter().any(|g| g.buffer.is_response()) {
                return Err(skip("response buffer with flow:to_server"));
            }
            if self.flow_dir == FlowDir::ToClient && groups.iter().any(|g| g.buffer.is_request()) {
                return Err(skip("request buffer with flow:to_client"));
            }
        }
        if self.only_stream && self.no_stream {
            return Err(err("flow: only_stream and no_stream together"));
        }
        if !self.header.is_empty() && has_http {
            return Err(skip("header keyword with an http buffer"));
        }
        if raw_headers && has_http {
            return Err(skip("header buffer with an http buffer"));
        }
        if self.only_stream {
            if !self.header.is_empty() || self.dsize || raw_headers {
                return Err(skip("flow:only_stream with a packet keyword"));
            }
            if groups.is_empty() || matches!(h.proto, Proto::Udp | Proto::Icmp | Proto::IpProto(_))
            {
                // Suricata's stream pseudo-packets: nothing else here is "stream only".
                return Err(skip("flow:only_stream without tcp payload"));
            }
        }
        // `dsize` makes a rule packet-only in Suricata: on TCP it then inspects each packet's payload. So do header
        // keywords here (they test the packet), the header buffers (the packet's bytes) and `flow:no_stream`.
        let mut tcp_inspect =
            if self.dsize || !self.header.is_empty() || raw_headers || self.no_stream {
                TcpInspect::Packet
            } else {
                h.tcp_inspect
            };
        if has_http && tcp_inspect == TcpInspect::Packet {
            return Err(skip("http buffer on tcp-pkt"));
        }
        // A payload chain that needs the end of its buffer (`isdataat:!`, `bsize`, `endswith`) or has no positive
        // content to anchor it cannot run on a stream, which has no end while it is inspected: on TCP it inspects
        // each packet's payload instead, as Suricata's stream chunks end where the packets acknowledged so far
        // end. In a rule that also has application-layer buffers, that payload part is matched per packet and the
        // rest per transaction.
        if tcp_inspect == TcpInspect::Stream
            && matches!(h.proto, Proto::Tcp | Proto::Ip | Proto::App(_))
            && let Some(why) = groups.iter().find_map(stream_obstacle)
        {
            if self.only_stream {
                return Err(skip(why));
            }
            tcp_inspect = TcpInspect::Packet;
        }
        for g in &groups {
            validate_group(
                g,
                h.proto == Proto::Tcp && tcp_inspect == TcpInspect::Stream,
            )?;
        }
        let (classtype, category, class_prio) = match &self.classtype {
            Some(c) => match ctx.classes.get(c) {
                Some(cl) => (Some(c.clone()), cl.description.clone(), Some(cl.priority)),
                None => (Some(c.clone()), Arc::from(""), None),
            },
            None => (None, Arc::from(""), None),
        };
        Ok(Rule {
            line,
            file,
            action: h.action,
            proto: h.proto,
            src: h.src,
            src_ports: h.src_ports,
            dst: h.dst,
            dst_ports: h.dst_ports,
            bidirectional: h.bidirectional,
            ip_version: h.ip_version,
            tcp_inspect,
            app_layer: self.app_layer,
            flow_dir: self.flow_dir,
            flow_state: self.flow_state,
            sid,
            gid: self.gid,
            rev: self.rev,
            msg: self.msg.into(),
            classtype,
            category,
            severity: self.priority.or(class_prio).unwrap_or(3),
            metadata: self.metadata.into(),
            services: self.services,
            flowbits: self.flowbits,
            xbits: self.xbits,
            tags: self.tags,
            noalert: self.noalert,
            alert: self.alert,
            target: self.target,
            threshold: self.threshold,
            header: self.header,
            stream_size: self.stream_size,
            stream_only: self.only_stream,
            groups,
            packet_groups,
        })
    }
}

/// Whether a header buffer fits the rule's protocol, as Suricata's setup of each checks it: `tcp.hdr` needs a
/// protocol that carries TCP, `udp.hdr` UDP, `icmpv4.hdr` and `icmpv6.hdr` ICMP (a rule that cannot carry them
/// does not load); the IP header buffers fit any rule.
fn header_buffer_proto(b: Buffer, proto: Proto) -> Step<()> {
    let ok = match b {
        Buffer::TcpHdr => matches!(proto, Proto::Ip | Proto::Tcp | Proto::App(_)),
        Buffer::UdpHdr => matches!(proto, Proto::Ip | Proto::Udp | Proto::App(_)),
        Buffer::Icmpv4Hdr | Buffer::Icmpv6Hdr => matches!(proto, Proto::Ip | Proto::Icmp),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(err(format!(
            "{} on a rule whose protocol cannot carry it",
            b.name()
        )))
    }
}

fn set_var_position(c: &mut Content, name: &str, id: u8) -> Step<()> {
    match name {
        "distance" => c.var_distance = Some(id),
        _ => c.var_within = Some(id),
    }
    Ok(())
}

/// Folds a content's variable `distance`/`within` into [`Content::var_position`].
fn fold_var_position(c: &mut Content) {
    if c.var_distance.is_none() && c.var_within.is_none() {
        return;
    }
    let distance = match c.var_distance {
        Some(id) => byte::Operand::Var(id),
        None => byte::Operand::Lit(i64::from(c.distance.unwrap_or(0))),
    };
    let within = match c.var_within {
        Some(id) => Some(byte::Operand::Var(id)),
        None => c.within.map(|w| byte::Operand::Lit(i64::from(w))),
    };
    c.var_position = Some(VarPosition { distance, within });
    c.distance = Some(0);
    c.within = None;
}

fn set_position(c: &mut Content, name: &str, n: i64) -> Step<()> {
    let unsigned = |n: i64| -> Step<u32> {
        u32::try_from(n).map_err(|_| err(format!("`{name}` must not be negative")))
    };
    match name {
        "offset" => c.offset = Some(unsigned(n)?),
        "depth" => {
            let d = unsigned(n)?;
            if (d as usize) < c.bytes.len() {
                return Err(err(format!(
                    "depth {d} shorter than the content ({} bytes)",
                    c.bytes.len()
                )));
            }
            c.depth = Some(d);
        }
        "distance" => c.distance = Some(n as i32),
        _ => {
            let w = unsigned(n)?;
            if (w as usize) < c.bytes.len() {
                return Err(err(format!(
                    "within {w} shorter than the content ({} bytes)",
                    c.bytes.len()
                )));
            }
            c.within = Some(w);
        }
    }
    Ok(())
}

/// Why a payload group cannot be inspected on a TCP stream, if it cannot.
pub(crate) fn stream_obstacle(g: &Group) -> Option<&'static str> {
    if g.buffer != Buffer::Payload {
        return None;
    }
    if !g
        .items
        .iter()
        .any(|it| matches!(it, Item::Content(c) if !c.negated))
    {
        return Some("tcp payload rule without a positive content");
    }
    g.items.iter().find_map(|it| match it {
        Item::Len { .. } => Some("buffer length on a tcp stream"),
        Item::Absent { .. } => Some("absent on a tcp stream"),
        Item::Rpc(_) => Some("rpc on a tcp stream"),
        Item::DataAt { negated: true, .. } => Some("isdataat:! on a tcp stream"),
        Item::Tls(_) => Some("ssl_state or ssl_version on a tcp stream"),
        Item::Asn1(_) => Some("asn1 on a tcp stream"),
        Item::Dataset(_) => Some("dataset on a tcp stream"),
        Item::File(_) => Some("file condition on a tcp stream"),
        Item::Entropy(_) => Some("entropy on a tcp stream"),
        // A stream has no end while it is inspected.
        Item::Content(c) if c.endswith => Some("endswith on a tcp stream"),
        _ => None,
    })
}

fn validate_group(g: &Group, tcp_only: bool) -> Step<()> {
    if tcp_only && let Some(why) = stream_obstacle(g) {
        return Err(skip(why));
    }
    for it in &g.items {
        if let Item::Content(c) = it
            && c.is_relative()
            && (c.offset.is_some() || c.depth.is_some())
        {
            return Err(err("content mixes offset/depth with distance/within"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Action, ActionOrder};

    #[test]
    fn action_order_ranks_as_listed() {
        let d = ActionOrder::default();
        assert_eq!(d.names(), ["pass", "drop", "reject", "alert"]);
        assert!(d.rank(Action::Pass) < d.rank(Action::Drop));
        let o = ActionOrder::parse(["drop", "pass", "reject", "alert"]).unwrap();
        assert!(o.rank(Action::Drop) < o.rank(Action::Pass));
        assert_eq!(o.rank(Action::Sdrop), o.rank(Action::Drop));
        assert_eq!(o.rank(Action::Log), o.rank(Action::Alert));
        assert_eq!(o.names(), ["drop", "pass", "reject", "alert"]);
    }

    /// `asn1` after a content, relative to it, and from an absolute offset, on TCP packets (a stream has no end
    /// to decode to, so the rule inspects packets).
    #[test]
    fn asn1_decodes_from_the_match_or_an_offset() {
        let text = "alert tcp any any -> any any (content:\"NEG\"; asn1:bitstring_overflow, relative_offset 1; sid:1;)\n\
                    alert tcp any any -> any any (content:\"NEG\"; asn1:oversize_length 100, absolute_offset 0; sid:2;)\n\
                    alert tcp any any -> any any (content:\"NEG\"; asn1:oversize_length 2; sid:3;)\n\
                    alert tcp any any -> any any (asn1:print; sid:4;)\n";
        let (set, report) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        assert_eq!(
            (set.len(), report.errors.len()),
            (3, 1),
            "{:?}",
            report.errors
        );
        assert!(
            set.rules()
                .iter()
                .all(|r| r.tcp_inspect == super::TcpInspect::Packet)
        );
        let run = |payload: &[u8]| {
            let mut sc = set.scanner();
            let mut out: Vec<crate::AlertRecord> = Vec::new();
            let ctx = crate::PacketCtx {
                header: Some(crate::PacketHeader {
                    ip_proto: 6,
                    tcp: Some(crate::TcpHeader::default()),
                    ..crate::PacketHeader::default()
                }),
                ..crate::PacketCtx::default()
            };
            set.scan_packet(
                &mut sc,
                &mut crate::FlowMatchState::default(),
                &ctx,
                payload,
                &mut out,
            );
            let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
            s.sort_unstable();
            s
        };
        // "NEG", one skipped byte, then a BIT STRING claiming 9 unused bits where its one other byte holds 8 (from
        // right after the match, `00 03` is a 3-byte object: above 2 for sid 3).
        assert_eq!(run(b"NEG\x00\x03\x02\x09\xff"), vec![1, 3]);
        assert_eq!(run(b"NEG\x00\x03\x02\x08\xff"), vec![3]);
        // From the start: "NEG" reads as an application tag 14 (`N`) of length 0x45 (`E`), below 100; after the
        // match, a 3-byte OCTET STRING is above 2.
        assert_eq!(run(b"NEG\x04\x03abc"), vec![3]);
        assert_eq!(run(b"N\x81\xffNEG"), vec![2]);
    }

    /// A rule whose only condition is `stream_size` is a packet rule (checked on every packet, as Suricata's packet
    /// match list makes it), not an IP-only rule checked on a direction's first packet.
    #[test]
    fn stream_size_alone_makes_a_packet_rule() {
        let text = "alert tcp any any -> any any (stream_size:server,>,100; sid:1;)";
        let (set, _) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        let r = &set.rules()[0];
        assert!(!r.flow_scoped() && !r.ip_only());
        let run = |server: u32, repeat: bool| {
            let mut sc = set.scanner();
            let mut out: Vec<crate::AlertRecord> = Vec::new();
            let ctx = crate::PacketCtx {
                header: Some(crate::PacketHeader {
                    ip_proto: 6,
                    tcp: Some(crate::TcpHeader::default()),
                    ..crate::PacketHeader::default()
                }),
                stream_size: Some(crate::StreamSizes { client: 1, server }),
                repeat_in_dir: repeat,
                ..crate::PacketCtx::default()
            };
            set.scan_packet(
                &mut sc,
                &mut crate::FlowMatchState::default(),
                &ctx,
                b"",
                &mut out,
            );
            out.len()
        };
        assert_eq!(
            (run(100, false), run(101, false), run(101, true)),
            (0, 1, 1)
        );
    }

    /// The DNS integer keywords in Suricata's integer syntax (with `!N-M` and `dns.rcode`'s names), each a test of
    /// its one-field buffer; bad values are errors naming the keyword, at their line.
    #[test]
    fn dns_integer_keywords_parse_suricatas_syntax() {
        use super::{Buffer, Item, Num};
        let text = "alert dns any any -> any any (dns.opcode:!7-15; sid:1;)\n\
                    alert dns any any -> any any (dns.rcode:!NXDomain; sid:2;)\n\
                    alert dns any any -> any any (dns.rrtype:>=28; sid:3;)\n\
                    alert dns any any -> any any (dns.opcode:query; sid:4;)\n\
                    alert dns any any -> any any (dns.rrtype:65536; sid:5;)\n\
                    alert dns any any -> any any (dns.rcode:; sid:6;)\n\
                    alert dns any any -> any any (dns.opcode:5-5; sid:7;)\n";
        let (set, report) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        let tests: Vec<(Buffer, Num)> = set
            .rules()
            .iter()
            .map(|r| match r.groups.as_slice() {
                [g] => match g.items.as_slice() {
                    [Item::Num { test, .. }] => (g.buffer, *test),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            tests,
            [
                (Buffer::DnsOpcode, Num::Outside(7, 15)),
                (Buffer::DnsRcode, Num::Ne(3)),
                (Buffer::DnsRrtype, Num::Ge(28)),
            ]
        );
        let lines: Vec<(usize, bool)> = report
            .errors
            .iter()
            .map(|e| (e.line, e.message.contains("dns.")))
            .collect();
        assert_eq!(
            lines,
            [(4, true), (5, true), (6, true), (7, true)],
            "{:?}",
            report.errors
        );
        assert!(Num::Outside(7, 15).test(7) && Num::Outside(7, 15).test(15));
        assert!(!Num::Outside(7, 15).test(8));
    }

    /// The certificate dates of `tls_cert_notbefore` / `tls_cert_notafter`: digits are epoch seconds, dates are
    /// UTC, and their numbers keep the order of the dates on both sides of 1970.
    #[test]
    fn certificate_dates_in_suricatas_formats() {
        use super::{cert_date, cert_date_number};
        assert_eq!(cert_date("2015"), Ok(2015));
        assert_eq!(cert_date(" 1970-01 "), Ok(0));
        assert_eq!(cert_date("2000-02-29"), Ok(951_782_400));
        assert_eq!(cert_date("2024-11-21 11:42:33"), Ok(1_732_189_353));
        assert_eq!(cert_date("2024-11-21T11:42:33"), Ok(1_732_189_353));
        assert_eq!(cert_date("2024-11-21T11"), Ok(1_732_186_800));
        assert_eq!(cert_date("1969-12-31T23:00"), Ok(-3600));
        for bad in [
            "",
            "2015-13",
            "2015-01-32",
            "10:30",
            "2015-01-01T25",
            "2015-01-01T1:2:3:4",
            "x",
        ] {
            assert!(cert_date(bad).is_err(), "{bad}");
        }
        assert!(cert_date_number(-3600) < cert_date_number(0));
        assert!(cert_date_number(0) < cert_date_number(1));
    }

    /// Bad values of the TLS keywords are errors at their line naming the keyword.
    #[test]
    fn tls_keyword_values_are_checked() {
        let text = "alert tls any any -> any any (tls_cert_notbefore:>2015<>2016; sid:1;)\n\
                    alert tls any any -> any any (tls_cert_notafter:2016<>2015; sid:2;)\n\
                    alert tls any any -> any any (tls_cert_expired:1; sid:3;)\n\
                    alert tls any any -> any any (tls.subject:\"\"; sid:4;)\n\
                    alert tls any any -> any any (tls.issuerdn:!; sid:5;)\n\
                    alert tls any any -> any any (tls.cert_chain_len:many; sid:6;)\n\
                    alert tls any any -> any any (tls_cert_notafter:2024-02-30T10:61; sid:7;)\n\
                    alert tls any any -> any any (tls_cert_notafter:>2015-06; tls_cert_valid; tls.fingerprint:!\"ab:cd\"; tls.store; sid:8;)\n";
        let (set, report) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        let lines: Vec<usize> = report.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [1, 2, 3, 4, 5, 6, 7], "{:?}", report.errors);
        assert!(
            report.errors.iter().all(|e| e.message.contains("tls")),
            "{:?}",
            report.errors
        );
        assert_eq!(set.len(), 1);
    }

    /// JA3 and JA4 buffers belong to TLS and QUIC: with a QUIC buffer or a `quic`/`udp` header the rule is a QUIC
    /// rule, with a TLS buffer a TLS one; other mixes skip with a reason.
    #[test]
    fn ja3_and_ja4_rules_may_be_quic_rules() {
        let text = "alert quic any any -> any any (ja4.hash; content:\"q13\"; sid:1;)\n\
                    alert ip any any -> any any (ja4.hash; content:\"q\"; quic.version; content:\"|00|\"; sid:2;)\n\
                    alert udp any any -> any any (ja3.hash; content:\"a\"; sid:3;)\n\
                    alert tls any any -> any any (ja3.string; content:\"771\"; sid:4;)\n\
                    alert tls any any -> any any (quic.sni; content:\"a\"; sid:5;)\n\
                    alert quic any any -> any any (ja4.hash; content:\"q\"; tls.sni; content:\"a\"; sid:6;)\n\
                    alert udp any any -> any any (quic.ua; content:\"Chrome\"; sid:7;)\n";
        let (set, report) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        let sids: Vec<u32> = set.rules().iter().map(|r| r.sid).collect();
        assert_eq!(sids, [1, 2, 3, 4, 7], "{:?}", report.skipped_rules);
        assert_eq!(report.skipped, 2);
    }

    #[test]
    fn ftpbounce_tests_the_active_command_verdict() {
        use super::Buffer;
        let text = "alert tcp any any -> any 21 (flow:to_server; content:\"PORT\"; nocase; ftpbounce; sid:1;)\n\
                    alert tcp any any -> any any (ftpbounce:1; sid:2;)\n";
        let (set, report) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        assert_eq!(
            (set.len(), report.errors.len()),
            (1, 1),
            "{:?}",
            report.errors
        );
        let bufs: Vec<Buffer> = set.rules()[0].groups.iter().map(|g| g.buffer).collect();
        assert!(
            bufs.contains(&Buffer::FtpBounce) && bufs.contains(&Buffer::Payload),
            "{bufs:?}"
        );
        let lone = "alert tcp any any -> any any (ftpbounce; sid:3;)";
        let (set, _) = crate::RuleSet::parse(lone, &crate::Vars::suricata_defaults()).unwrap();
        let mut sc = set.scanner();
        let ctx = crate::PacketCtx {
            app_proto: Some("ftp"),
            ..crate::PacketCtx::default()
        };
        for (verdict, want) in [(0u8, 0usize), (1, 1)] {
            let mut flow = crate::FlowMatchState::default();
            let mut out: Vec<crate::AlertRecord> = Vec::new();
            set.scan_app(
                &mut sc,
                &mut flow,
                &ctx,
                7,
                Buffer::FtpBounce,
                &[verdict],
                &mut out,
            );
            assert_eq!(out.len(), want);
        }
    }

    #[test]
    fn tls_version_reads_names_quotes_and_hex() {
        use super::Buffer;
        let text = "alert tls any any -> any any (tls.version:1.2; sid:1;)\n\
                    alert tls any any -> any any (tls.version:\"1.3\"; content:\"x\"; sid:2;)\n\
                    alert tls any any -> any any (tls.version:0x7f12; sid:3;)\n\
                    alert tls any any -> any any (tls.version:1.4; sid:4;)\n\
                    alert tls any any -> any any (tls.version:0x12345; sid:5;)\n\
                    alert tls any any -> any any (tls.version:; sid:6;)\n";
        let (set, report) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        assert_eq!(set.len(), 3);
        assert_eq!(report.errors.len(), 3, "{:?}", report.errors);
        let r = |sid| set.rules().iter().find(|r| r.sid == sid).unwrap();
        assert_eq!(r(1).groups[0].buffer, Buffer::TlsVersion);
        // The content after `tls.version` stays on the payload: the keyword is not a sticky buffer.
        let bufs: Vec<Buffer> = r(2).groups.iter().map(|g| g.buffer).collect();
        assert!(
            bufs.contains(&Buffer::Payload) && bufs.contains(&Buffer::TlsVersion),
            "{bufs:?}"
        );
        // A name compares the version with drafts read as 1.3 (bytes 2..4), hex the version as recorded (0..2).
        let mut sc = set.scanner();
        let mut flow = crate::FlowMatchState::default();
        let ctx = crate::PacketCtx {
            app_proto: Some("tls"),
            ..crate::PacketCtx::default()
        };
        let mut hits = |data: &[u8]| {
            let mut out: Vec<crate::AlertRecord> = Vec::new();
            set.scan_app(
                &mut sc,
                &mut flow,
                &ctx,
                0,
                Buffer::TlsVersion,
                data,
                &mut out,
            );
            flow = crate::FlowMatchState::default();
            let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
            s.sort_unstable();
            s
        };
        assert_eq!(hits(&[3, 3, 3, 3]), vec![1]);
        assert_eq!(hits(&[0x7f, 0x12, 3, 4]), vec![3]);
        assert!(hits(&[3, 2, 3, 2]).is_empty());
    }

    #[test]
    fn krb5_msg_type_reads_numbers_names_and_operators() {
        let text = "alert krb5 any any -> any any (krb5_msg_type:!AS_REQ; sid:1;)\n\
                    alert krb5 any any -> any any (krb5_msg_type:KRB_ERROR; sid:2;)\n\
                    alert krb5 any any -> any any (krb5_msg_type:>=12; sid:3;)\n\
                    alert krb5 any any -> any any (krb5_msg_type:SOMETHING; sid:4;)\n";
        let (set, report) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        assert_eq!(set.len(), 3);
        assert_eq!(report.errors.len(), 1);
        for r in set.rules() {
            assert_eq!(r.groups.len(), 1);
            assert_eq!(r.groups[0].buffer, super::Buffer::Krb5MsgType);
        }
    }

    #[test]
    fn http_header_without_a_side_inspects_both() {
        use super::Buffer as B;
        let text = "alert http any any -> any any (http.header; content:\"Server: \"; sid:1;)\n\
                    alert http any any -> any any (flow:to_server; http.header; content:\"a\"; sid:2;)\n\
                    alert http any any -> any any (http.stat_code; content:\"200\"; http.header; content:\"a\"; sid:3;)\n\
                    alert http any any -> any any (http.header.raw; content:\"a\"; sid:4;)\n";
        let (set, _) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        let last = |i: usize| set.rules()[i].groups.last().map(|g| g.buffer);
        assert_eq!(last(0), Some(B::HttpHeader));
        assert_eq!(last(1), Some(B::HttpRequestHeader));
        assert_eq!(last(2), Some(B::HttpResponseHeader));
        assert_eq!(last(3), Some(B::HttpRawHeader));
    }

    #[test]
    fn action_order_refuses_unknown_missing_and_repeated_actions() {
        assert!(ActionOrder::parse(["pass", "drop", "reject"]).is_err());
        assert!(ActionOrder::parse(["pass", "drop", "reject", "drop"]).is_err());
        assert!(ActionOrder::parse(["pass", "drop", "reject", "alert", "alert"]).is_err());
        assert!(ActionOrder::parse(["pass", "drop", "reject", "log"]).is_err());
    }
}

#[cfg(test)]
mod buffer_table {
    use super::*;

    /// Every buffer has its properties, and they agree with its name: the names are unique, each application
    /// protocol is one the engine names in EVE, a buffer named after a protocol's keywords (`dns.`, `sip.`, `sdp.`,
    /// `email.`, ...) belongs to that protocol, one named for a side (`request`, `response`) to that side, each
    /// protocol's `app-layer-event` buffer to that protocol, and every multi-instance buffer to a protocol's
    /// transactions or to the files of any carrier.
    #[test]
    fn every_buffer_has_its_properties_and_they_agree_with_its_name() {
        let eve: Vec<&str> = AppProto::ALL.iter().map(|p| p.eve_name()).collect();
        let mut names = std::collections::HashSet::new();
        let prefixes = [
            ("http.", "http"),
            ("http2.", "http2"),
            ("dns.", "dns"),
            ("mdns.", "mdns"),
            ("tls.", "tls"),
            ("ja3", "tls"),
            ("ja4", "tls"),
            ("quic.", "quic"),
            ("ssh.", "ssh"),
            ("smb.", "smb"),
            ("dcerpc.", "dcerpc"),
            ("krb5", "krb5"),
            ("ftp.", "ftp"),
            ("ftpdata_", "ftp-data"),
            ("smtp.", "smtp"),
            ("email.", "smtp"),
            ("sip.", "sip"),
            ("sdp.", "sip"),
        ];
        for b in Buffer::ALL {
            let p = b.props();
            assert_eq!(*p, Buffer::PROPS[b.index()]);
            assert!(!p.name.is_empty(), "{b:?} has no name");
            assert!(names.insert(p.name), "{b:?}: name {} twice", p.name);
            if let Some(proto) = p.app_proto {
                assert!(
                    eve.contains(&proto),
                    "{b:?}: app_proto {proto} is no EVE name"
                );
            }
            for (prefix, proto) in prefixes {
                if p.name.starts_with(prefix) {
                    assert_eq!(p.app_proto, Some(proto), "{b:?} ({})", p.name);
                }
            }
            if p.name.contains("request") {
                assert_eq!(p.side, Side::Request, "{b:?} ({})", p.name);
            }
            if p.name.contains("response_") || p.name.contains("(response)") {
                assert_eq!(p.side, Side::Response, "{b:?} ({})", p.name);
            }
            if p.multi_instance {
                assert!(
                    p.app_proto.is_some() || p.name.starts_with("file."),
                    "{b:?}: a multi-instance buffer of no transaction"
                );
            }
            // The role column agrees with the name: `file.data` rows are the files' contents, `app-layer-event`
            // rows their protocol's anomalies, `ip.` rows the packet's addresses, `.hdr` rows its raw headers, and
            // the client hello's JA3/JA4 rows are QUIC's too.
            let role = match p.name {
                n if n.starts_with("file.data") => Role::FileData,
                n if n.starts_with("app-layer-event (") => {
                    assert_eq!(
                        Some(
                            n.trim_start_matches("app-layer-event (")
                                .trim_end_matches(')')
                        ),
                        p.app_proto,
                        "{b:?}"
                    );
                    Role::Events
                }
                n if n.starts_with("ip.") => Role::Address,
                n if n.ends_with(".hdr") => Role::RawHeader,
                n if (n.starts_with("ja3.") || n.starts_with("ja4."))
                    && p.side == Side::Request =>
                {
                    Role::AlsoQuic
                }
                _ => Role::Field,
            };
            assert_eq!(p.role, role, "{b:?} ({})", p.name);
            if matches!(role, Role::Address | Role::RawHeader) {
                assert_eq!(p.app_proto, None, "{b:?}: a packet's own field");
            }
            assert_eq!(b.is_file_data(), role == Role::FileData);
            assert_eq!(b.also_quic(), role == Role::AlsoQuic);
            assert_eq!(b.is_raw_header(), role == Role::RawHeader);
            assert_eq!(
                b.is_packet_field(),
                matches!(role, Role::Address | Role::RawHeader)
            );
            if role == Role::Events {
                let proto = AppProto::ALL
                    .iter()
                    .find(|a| Some(a.eve_name()) == p.app_proto)
                    .copied();
                assert_eq!(proto.and_then(Buffer::app_layer_events), Some(b), "{b:?}");
            }
        }
        for proto in AppProto::ALL {
            if let Some(b) = Buffer::app_layer_events(*proto) {
                assert_eq!(b.app_proto(), Some(proto.eve_name()), "{proto:?}");
            }
        }
        // Each protocol whose parser raises an anomaly has the buffer that carries it to the rules.
        for e in flowbundle_types::AppLayerEvent::ALL {
            let b = Buffer::app_layer_events(e.proto());
            assert!(
                b.is_some_and(|b| b.role() == Role::Events),
                "{e:?}: no app-layer-event buffer for {:?}",
                e.proto()
            );
        }
        // Suricata 8's multi-instance buffers (registered with `DetectAppLayerMultiRegister` or
        // `DetectBufferTypeSupportsMultiInstance`, listed in its multiple buffer matching documentation) that the
        // engine has: each is multi-instance here too.
        for b in [
            Buffer::DnsQuery,
            Buffer::DnsQueriesRrname,
            Buffer::DnsAnswersRrname,
            Buffer::FileName,
            Buffer::FileMagic,
            Buffer::HttpFileData,
            Buffer::HttpRequestFileData,
            Buffer::SmtpFileData,
            Buffer::SmbFileData,
            Buffer::HttpRequestHeaderLine,
            Buffer::HttpResponseHeaderLine,
            Buffer::Http2HeaderName,
            Buffer::Krb5Cname,
            Buffer::Krb5Sname,
            Buffer::FtpReply,
            Buffer::FtpCompletionCode,
            Buffer::QuicCyuHash,
            Buffer::QuicCyuString,
            Buffer::SipFrom,
            Buffer::SipTo,
            Buffer::SipVia,
            Buffer::SipUserAgent,
            Buffer::SipContentType,
            Buffer::SipContentLength,
            Buffer::SmtpRcptTo,
            Buffer::TlsAlpn,
            Buffer::TlsCerts,
            Buffer::TlsSubjectAltName,
        ] {
            assert!(
                b.multi_instance(),
                "{b:?} ({}) is multi-instance in Suricata",
                b.name()
            );
        }
        // The table is what the rest reads.
        assert_eq!(
            Buffer::DnsQuery.props().multi_instance,
            Buffer::DnsQuery.multi_instance()
        );
        assert_eq!(Buffer::SipStatCode.side(), Side::Response);
        assert_eq!(Buffer::EmailTo.app_proto(), Some("smtp"));
    }
}
