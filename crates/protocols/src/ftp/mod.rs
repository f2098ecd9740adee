//! FTP control connections: identification, transactions (each command with the replies that answer it, as
//! Suricata's EVE `ftp` event and its `ftp.*` keywords read them), and the data-connection endpoints announced by
//! `PASV` / `EPSV` replies and `PORT` / `EPRT` commands (RFC 959, RFC 2428), so the engine can label the data
//! connection `FTP_DATA`.
//!
//! **Identification.** A server greets with `220` (or `120`/`421`); SMTP greets the same way, so a banner alone is
//! only certain when it names FTP and not SMTP. Otherwise the client's first command decides: `USER`, `AUTH TLS`,
//! `FEAT`, `SYST`, ... are FTP, `EHLO`/`HELO` are not.
//!
//! **Transactions.** Each client command opens a transaction ([`EventSink::ftp_command`] hands its verb and
//! argument to the rules at once); reply lines go to the oldest transaction still waiting, and its final line (a
//! code and a space, not a `1xx` preliminary reply: `150` then `226` both answer one `RETR`) closes it: an
//! [`FtpEvent`] with Suricata's fields (`command`, `command_data`, `completion_code`, `reply`, `dynamic_port`,
//! `mode`, `reply_received`, the truncation flags). A reply no command asked for (the greeting) is a transaction of
//! its own. Transactions still open when the flow ends are emitted with `reply_received: "no"`.
//!
//! **Expectations.** Each `227` / `229` reply (passive: the *server* listens) and each `PORT` / `EPRT` command
//! (active: the *client* listens) is reported at once as an [`FtpAnnouncement`] ([`EventSink::ftp_announce`]):
//! who listens, the announced address (`None` for `EPSV`: the server's own) and the port.
//! [`FtpAnnouncement::data_endpoint`] resolves it against the control connection.
//!
//! **Transfers.** A `STOR` / `RETR` / `APPE` / `STOU` command after an announcement yields an [`FtpTransfer`]
//! ([`EventSink::ftp_transfer`]): the command, its file name and the data connection announced last, which is the
//! one the file goes over ([`data`] handles that connection's file).
//!
//! **Cost and bounds.** Lines are kept up to [`MAX_LINE`] bytes per direction (the rest of a longer line is
//! counted and the transaction marked truncated); at most [`MAX_PENDING`] transactions wait for replies and
//! [`MAX_REPLIES`] reply lines are kept each; after a successful `AUTH TLS` (`234`) the control channel is
//! encrypted and the parser stops.
//!
//! **Anomalies.** A line longer than Suricata's default `max-line-length` ([`SURICATA_MAX_LINE`]) raises
//! `ftp.request_command_too_long` (a command) or `ftp.response_command_too_long` (a reply) for the rules'
//! `app-layer-event`, on the transaction the line belongs to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub mod data;

use crate::scan::{first_line, parse_u32, reply_code, starts_ci};
use crate::{
    AppEvent, AppLayerEvent, AppProto, Detector, Direction, EventSink, Limits, Parser, ParserStats,
    Probe, ProbeCtx, Transport,
};

/// FTP's control port (its registration record's).
const FTP_PORT: u16 = 21;

/// Longest control line kept; FTP lines are short (RFC 959 has no limit, servers use 512 or so).
pub const MAX_LINE: usize = 512;
/// Suricata's default FTP `max-line-length`: a longer line (its end of line not counted) is an anomaly.
pub const SURICATA_MAX_LINE: usize = 4096;

/// Which endpoint listens for the data connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Listener {
    /// Passive mode (`PASV`, `EPSV`): the client connects to the server.
    Server,
    /// Active mode (`PORT`, `EPRT`): the server connects to the client.
    Client,
}

/// One FTP transaction, as Suricata counts them and writes its EVE `ftp` event: a client command with the reply
/// lines that answer it, or a reply no command asked for (the server's greeting). Emitted when its final reply
/// arrives (a line with a code and a space, not a `1xx` preliminary reply), or with `reply_received: "no"` when the
/// flow ends first (or too many commands wait for their replies, [`MAX_PENDING`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FtpEvent {
    /// The transaction's number on its flow (0-based, greeting included), as the rules count them. Not written.
    #[serde(skip)]
    pub tx_id: u64,
    /// The command verb, upper-cased (`USER`, `RETR`); absent for a reply without a command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command's argument as sent, without the separating space (lossy UTF-8); empty when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_data: Option<String>,
    /// The command line was longer than [`MAX_LINE`]: `command_data` holds its first bytes. Written only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub command_truncated: bool,
    /// Each reply line's code, as strings (`["150", "226"]`); lines without a code (inside a multi-line reply)
    /// have none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub completion_code: Vec<String>,
    /// Each reply line's text, without its code and separator.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reply: Vec<String>,
    /// The data connection's port a `PORT`/`EPRT` command or a `227`/`229` reply announced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_port: Option<u16>,
    /// `active` for `PORT`/`EPRT` (written for those commands only, as Suricata writes it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    /// `yes` when the final reply arrived, `no` when the flow ended (or the transaction was dropped) before.
    pub reply_received: &'static str,
    /// Reply lines were cut ([`MAX_LINE`]) or dropped (more than [`MAX_REPLIES`]). Written only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reply_truncated: bool,
    /// The data connection the transaction announced, if it announced one. Not written.
    #[serde(skip)]
    pub announced: Option<FtpAnnouncement>,
    /// The command is one Suricata's FTP parser knows (`ftp.dynamic_port`, `ftp.mode` and `ftp.reply_received`
    /// read only those transactions). Not written.
    #[serde(skip)]
    pub known_command: bool,
}

/// A data connection announced on the control connection: by a `PORT`/`EPRT` command (active: the client
/// listens) or a `227`/`229` reply (passive: the server listens). Handed to [`EventSink::ftp_announce`] as soon as
/// it is read, so the expectation exists before the data connection opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FtpAnnouncement {
    /// The transaction that announced it.
    pub tx_id: u64,
    /// `PASV`, `EPSV`, `PORT` or `EPRT`.
    pub command: &'static str,
    /// Who listens, where and on which port.
    pub channel: DataChannel,
}

impl FtpAnnouncement {
    /// The data connection's destination `(ip, port)` and the address it will come from, given the control
    /// connection's client and server addresses. The source port is never known in advance.
    pub fn data_endpoint(&self, client_ip: IpAddr, server_ip: IpAddr) -> (IpAddr, (IpAddr, u16)) {
        self.channel.data_endpoint(client_ip, server_ip)
    }
}

/// A data connection as announced: who listens, at which address (`None`: the server's own) and port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataChannel {
    pub listener: Listener,
    pub expected_ip: Option<IpAddr>,
    pub port: u16,
}

impl DataChannel {
    /// The data connection's destination `(ip, port)` and the address it will come from, given the control
    /// connection's client and server addresses.
    pub fn data_endpoint(&self, client_ip: IpAddr, server_ip: IpAddr) -> (IpAddr, (IpAddr, u16)) {
        match self.listener {
            Listener::Server => (
                client_ip,
                (self.expected_ip.unwrap_or(server_ip), self.port),
            ),
            Listener::Client => (
                server_ip,
                (self.expected_ip.unwrap_or(client_ip), self.port),
            ),
        }
    }
}

/// A file transfer command and the data connection it goes over (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FtpTransfer<'a> {
    /// `STOR`, `RETR`, `APPE` or `STOU`.
    pub command: &'static str,
    /// The command's argument, trimmed (the file name; empty for `STOU`).
    pub filename: &'a [u8],
    /// The data connection announced last on this control connection.
    pub channel: DataChannel,
}

/// The commands that move a file over the data connection, as Suricata's `ftp_data.command` names them.
const TRANSFER_COMMANDS: &[&str] = &["STOR", "RETR", "APPE", "STOU"];

/// Client commands that only FTP sends first (after the greeting).
const CLIENT_CMDS: &[&[u8]] = &[
    b"USER ",
    b"AUTH TLS",
    b"AUTH SSL",
    b"FEAT",
    b"SYST",
    b"OPTS ",
    b"CLNT ",
    b"PBSZ ",
    b"HOST ",
    b"PASV",
    b"EPSV",
];

/// RFC 959's command verbs (and the common extensions of RFC 2389, 2428, 3659): on FTP's own port a client line
/// that opens with one of them is an FTP command even where the greeting is missing or shared with another protocol
/// (`QUIT` is also SMTP's and POP3's; a server that closes before greeting leaves only the client's line).
const RFC959_VERBS: &[&[u8]] = &[
    b"USER", b"PASS", b"ACCT", b"CWD", b"CDUP", b"SMNT", b"QUIT", b"REIN", b"PORT", b"PASV",
    b"TYPE", b"STRU", b"MODE", b"RETR", b"STOR", b"STOU", b"APPE", b"ALLO", b"REST", b"RNFR",
    b"RNTO", b"ABOR", b"DELE", b"RMD", b"MKD", b"PWD", b"LIST", b"NLST", b"SITE", b"SYST", b"STAT",
    b"HELP", b"NOOP", b"FEAT", b"OPTS", b"EPRT", b"EPSV", b"MDTM", b"SIZE", b"MLST", b"MLSD",
];

/// Whether `p` opens with a complete FTP command line: a verb of [`RFC959_VERBS`], then the end of the line or a
/// space and printable arguments, ended by CRLF or LF.
fn ftp_command_line(p: &[u8]) -> bool {
    let Some(line) = first_line(p) else {
        return false;
    };
    RFC959_VERBS.iter().any(|v| {
        starts_ci(line, v)
            && line.get(v.len()..).is_some_and(|rest| {
                rest.is_empty() || (rest[0] == b' ' && crate::scan::printable(rest))
            })
    })
}

/// Detector for the FTP control connection: plain (`FTP_CONTROL`) or upgraded with `AUTH TLS` (`FTPS`).
pub struct FtpDetector {
    /// Recognise the `AUTH TLS` / `AUTH SSL` flavour (nDPI's `FTPS`) instead of plain FTP.
    pub tls: bool,
}

impl FtpDetector {
    /// Judges the server's greeting: a `120`/`220`/`421` reply line keeps FTP possible, anything else rules it out.
    fn judge_greeting(server: &[u8]) -> Probe {
        let Some(code) = reply_code(server) else {
            return if server.len() < 4 && server.iter().all(u8::is_ascii_digit) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        if !matches!(code, 120 | 220 | 421)
            || (first_line(server).is_none() && server.len() > MAX_LINE)
        {
            return Probe::NotForUs;
        }
        Probe::Unsure
    }
}

impl Detector for FtpDetector {
    fn proto(&self) -> AppProto {
        if self.tls {
            AppProto::Ftps
        } else {
            AppProto::Ftp
        }
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.dir {
            Direction::ToClient => Self::judge_greeting(ctx.prefix),
            Direction::ToServer => {
                // The client speaks after the greeting, which this probe no longer sees; its first command must
                // be one of FTP's and the line must be text.
                let p = ctx.prefix;
                if !self.tls && ctx.server_port == FTP_PORT {
                    if ftp_command_line(p) {
                        return Probe::Certain;
                    }
                    if first_line(p).is_none()
                        && p.len() < 8
                        && p.iter().all(|b| b.is_ascii_alphabetic() || *b == b' ')
                    {
                        return Probe::Unsure;
                    }
                }
                if ctx.payload_index == ctx.dir_index {
                    // The client spoke before any greeting: not an FTP client (IRC's `USER` is the classic case).
                    return Probe::NotForUs;
                }
                let tls = starts_ci(p, b"AUTH TLS") || starts_ci(p, b"AUTH SSL");
                if CLIENT_CMDS.iter().any(|c| starts_ci(p, c))
                    && first_line(p).is_some_and(crate::scan::printable)
                {
                    return if tls == self.tls {
                        Probe::Certain
                    } else {
                        Probe::NotForUs
                    };
                }
                if p.len() < 8 && p.iter().all(|b| b.is_ascii_alphabetic() || *b == b' ') {
                    return Probe::Unsure;
                }
                Probe::NotForUs
            }
        }
    }
    fn parser(&self, transport: Transport, _limits: &Limits) -> Option<Box<dyn Parser>> {
        // After `AUTH TLS` the control channel is encrypted: no announcements can be read.
        (transport == Transport::Tcp && !self.tls)
            .then(|| Box::new(FtpParser::default()) as Box<dyn Parser>)
    }
}

/// Parses `h1,h2,h3,h4,p1,p2` (spaces tolerated) into an IPv4 address and port.
pub fn parse_host_port(s: &[u8]) -> Option<(Ipv4Addr, u16)> {
    let mut v = [0u8; 6];
    let mut parts = s.split(|&b| b == b',');
    for slot in v.iter_mut() {
        let p = parts.next()?;
        let p = p.trim_ascii();
        *slot = u8::try_from(parse_u32(p)?).ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some((
        Ipv4Addr::new(v[0], v[1], v[2], v[3]),
        u16::from(v[4]) << 8 | u16::from(v[5]),
    ))
}

/// Finds the first run of six comma-separated numbers in a `227` reply's text.
fn find_227(text: &[u8]) -> Option<(Ipv4Addr, u16)> {
    let mut i = 0;
    while i < text.len() {
        if text[i].is_ascii_digit() {
            let end = text[i..]
                .iter()
                .position(|&b| !(b.is_ascii_digit() || b == b',' || b == b' '))
                .map_or(text.len(), |p| i + p);
            if let Some(hp) = parse_host_port(text[i..end].trim_ascii()) {
                return Some(hp);
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    None
}

/// Parses an `EPRT` argument `|af|addr|port|` (any delimiter in 33..=126).
pub fn parse_eprt(arg: &[u8]) -> Option<(IpAddr, u16)> {
    let d = *arg.first()?;
    if !(33..=126).contains(&d) {
        return None;
    }
    let mut f = arg[1..].split(|&b| b == d);
    let af = f.next()?;
    let addr = std::str::from_utf8(f.next()?).ok()?;
    let port = u16::try_from(parse_u32(f.next()?)?).ok()?;
    let ip = match af {
        b"1" => IpAddr::V4(addr.parse::<Ipv4Addr>().ok()?),
        b"2" => IpAddr::V6(addr.parse::<Ipv6Addr>().ok()?),
        _ => return None,
    };
    (port != 0).then_some((ip, port))
}

/// Parses the port out of a `229 ... (|||port|)` reply text.
pub fn parse_epsv_reply(text: &[u8]) -> Option<u16> {
    let open = text.iter().position(|&b| b == b'(')?;
    let inner = &text[open + 1..];
    let d = *inner.first()?;
    if inner.get(1) != Some(&d) || inner.get(2) != Some(&d) {
        return None;
    }
    let digits = &inner[3..];
    let end = digits.iter().position(|&b| b == d)?;
    let port = u16::try_from(parse_u32(&digits[..end])?).ok()?;
    (port != 0).then_some(port)
}

/// Most transactions waiting for their replies (commands sent ahead of the server's answers); beyond it the oldest
/// is emitted without its reply and counted ([`ParserStats::state_cut`]).
pub const MAX_PENDING: usize = 32;
/// Most reply lines kept per transaction; further lines are counted ([`ParserStats::bytes_cut`]) and mark the
/// reply truncated.
pub const MAX_REPLIES: usize = 64;

/// Commands beyond [`RFC959_VERBS`] that Suricata's FTP command table knows (security extensions of RFC 2228 and
/// RFC 4217, RFC 1639's long addresses, the `X` forms of RFC 775, RFC 3659's and later additions). A transaction
/// of an unknown command never matches `ftp.dynamic_port`, `ftp.mode` or `ftp.reply_received`, as in Suricata.
const KNOWN_EXTRA: &[&[u8]] = &[
    b"AUTH", b"ADAT", b"PBSZ", b"PROT", b"CCC", b"CONF", b"ENC", b"MIC", b"LANG", b"LPRT", b"LPSV",
    b"CLNT", b"HOST", b"MFMT", b"MFCT", b"MFF", b"XCUP", b"XCWD", b"XMKD", b"XPWD", b"XRMD",
    b"AVBL", b"CSID", b"DSIZ", b"RMDA", b"SPSV", b"THMB", b"EPSV", b"MODE",
];

fn known_command(verb: &[u8]) -> bool {
    RFC959_VERBS
        .iter()
        .chain(KNOWN_EXTRA)
        .any(|v| verb.eq_ignore_ascii_case(v))
}

#[derive(Default)]
struct LineBuf {
    /// The line's first [`MAX_LINE`] bytes.
    buf: Vec<u8>,
    /// Bytes past [`MAX_LINE`] were dropped.
    truncated: bool,
    /// A gap hit the line: what it held is unknown, it is skipped.
    lost: bool,
    /// Bytes of the line read so far, kept or not.
    len: usize,
}

/// A transaction being built (see [`FtpEvent`]).
struct Tx {
    id: u64,
    command: Option<String>,
    command_data: Option<String>,
    command_truncated: bool,
    known: bool,
    codes: Vec<String>,
    replies: Vec<String>,
    reply_truncated: bool,
    announced: Option<FtpAnnouncement>,
}

impl Tx {
    fn new(id: u64) -> Tx {
        Tx {
            id,
            command: None,
            command_data: None,
            command_truncated: false,
            known: false,
            codes: Vec::new(),
            replies: Vec::new(),
            reply_truncated: false,
            announced: None,
        }
    }

    fn into_event(self, received: bool) -> FtpEvent {
        let active = self
            .announced
            .is_some_and(|a| a.channel.listener == Listener::Client);
        FtpEvent {
            tx_id: self.id,
            command: self.command,
            command_data: self.command_data,
            command_truncated: self.command_truncated,
            completion_code: self.codes,
            reply: self.replies,
            dynamic_port: self.announced.map(|a| a.channel.port),
            mode: active.then_some("active"),
            reply_received: if received { "yes" } else { "no" },
            reply_truncated: self.reply_truncated,
            announced: self.announced,
            known_command: self.known,
        }
    }
}

/// Streaming FTP control parser: line-buffers both directions, pairs each command with the reply lines that answer
/// it (one [`FtpEvent`] per transaction) and reports each data connection announced ([`FtpAnnouncement`]).
#[derive(Default)]
pub struct FtpParser {
    lines: [LineBuf; 2],
    encrypted: bool,
    auth_pending: bool,
    /// The next transaction's number.
    next_tx: u64,
    /// Transactions waiting for their final reply, oldest first (at most [`MAX_PENDING`]).
    pending: std::collections::VecDeque<Tx>,
    /// The data connection announced last: the one a transfer command's file goes over.
    channel: Option<DataChannel>,
    stats: ParserStats,
}

impl FtpParser {
    /// Handles one line without its end of line; returns the transaction it belongs to.
    fn line(
        &mut self,
        dir: Direction,
        line: &[u8],
        truncated: bool,
        out: &mut dyn EventSink,
    ) -> u64 {
        match dir {
            Direction::ToServer => self.request(line, truncated, out),
            Direction::ToClient => self.reply(line, truncated, out),
        }
    }

    fn request(&mut self, line: &[u8], truncated: bool, out: &mut dyn EventSink) -> u64 {
        let (cmd, arg) = match line.iter().position(|&b| b == b' ') {
            Some(p) => (&line[..p], line[p + 1..].trim_ascii()),
            None => (line, &[][..]),
        };
        let id = self.next_tx;
        self.next_tx += 1;
        let verb = String::from_utf8_lossy(cmd).to_ascii_uppercase();
        out.ftp_command(id, verb.as_bytes(), arg);
        let mut tx = Tx::new(id);
        tx.known = known_command(cmd);
        tx.command_data = Some(lossy(arg));
        tx.command_truncated = truncated;
        let active = |command, ip, port| FtpAnnouncement {
            tx_id: id,
            command,
            channel: DataChannel {
                listener: Listener::Client,
                expected_ip: Some(ip),
                port,
            },
        };
        if cmd.eq_ignore_ascii_case(b"PORT") {
            match parse_host_port(arg) {
                Some((ip, port)) => {
                    tx.announced = Some(active("PORT", IpAddr::V4(ip), port));
                }
                None => self.stats.malformed += 1,
            }
        } else if cmd.eq_ignore_ascii_case(b"EPRT") {
            match parse_eprt(arg) {
                Some((ip, port)) => tx.announced = Some(active("EPRT", ip, port)),
                None => self.stats.malformed += 1,
            }
        } else if let Some(command) = TRANSFER_COMMANDS
            .iter()
            .find(|c| cmd.eq_ignore_ascii_case(c.as_bytes()))
        {
            if let Some(channel) = self.channel {
                out.ftp_transfer(&FtpTransfer {
                    command,
                    filename: arg,
                    channel,
                });
            }
        } else if cmd.eq_ignore_ascii_case(b"AUTH") {
            self.auth_pending = true;
        }
        tx.command = Some(verb);
        if let Some(a) = tx.announced {
            self.announce(a, out);
        }
        self.pending.push_back(tx);
        if self.pending.len() > MAX_PENDING
            && let Some(old) = self.pending.pop_front()
        {
            self.stats.state_cut += 1;
            out.event(AppEvent::Ftp(old.into_event(false)));
        }
        id
    }

    fn reply(&mut self, line: &[u8], truncated: bool, out: &mut dyn EventSink) -> u64 {
        if self.pending.is_empty() {
            // A reply no command asked for (the greeting): a transaction of its own.
            self.pending.push_back(Tx::new(self.next_tx));
            self.next_tx += 1;
        }
        let code = reply_code(line);
        let text = if code.is_some() {
            line.get(4..).unwrap_or(&[])
        } else {
            line
        };
        let Some(tx) = self.pending.front_mut() else {
            return self.next_tx;
        };
        let id = tx.id;
        let passive = |command, ip, port| FtpAnnouncement {
            tx_id: id,
            command,
            channel: DataChannel {
                listener: Listener::Server,
                expected_ip: ip,
                port,
            },
        };
        let announced = match code {
            Some(227) => {
                find_227(text).map(|(ip, port)| passive("PASV", Some(IpAddr::V4(ip)), port))
            }
            Some(229) => parse_epsv_reply(text).map(|port| passive("EPSV", None, port)),
            _ => None,
        };
        if matches!(code, Some(227 | 229)) && announced.is_none() {
            self.stats.malformed += 1;
        }
        if tx.replies.len() < MAX_REPLIES {
            if let Some(c) = code {
                tx.codes.push(c.to_string());
            }
            tx.replies.push(lossy(text));
            tx.reply_truncated |= truncated;
        } else {
            tx.reply_truncated = true;
            self.stats.bytes_cut += line.len() as u64;
        }
        if announced.is_some() {
            tx.announced = announced;
        }
        // The final line of a reply: a code and a space (not `-`, which opens a multi-line reply), not `1xx`.
        let last = code.is_some_and(|c| c >= 200) && line.get(3) != Some(&b'-');
        if let Some(a) = announced {
            self.announce(a, out);
        }
        if last && let Some(done) = self.pending.pop_front() {
            out.event(AppEvent::Ftp(done.into_event(true)));
            if code == Some(234) && self.auth_pending {
                self.encrypted = true;
            }
        }
        id
    }

    /// Reports an announcement and remembers it for the transfer commands after it.
    fn announce(&mut self, a: FtpAnnouncement, out: &mut dyn EventSink) {
        self.channel = Some(a.channel);
        out.ftp_announce(&a);
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Parser for FtpParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        let mut data = data;
        while !self.encrypted && !data.is_empty() {
            let nl = data.iter().position(|&b| b == b'\n');
            let take = nl.map_or(data.len(), |p| p + 1);
            let (chunk, rest) = data.split_at(take);
            data = rest;
            let lb = &mut self.lines[dir.index()];
            lb.len += chunk.len();
            if lb.lost {
                self.stats.bytes_cut += chunk.len() as u64;
            } else {
                let room = MAX_LINE.saturating_sub(lb.buf.len());
                if chunk.len() > room {
                    lb.buf.extend_from_slice(&chunk[..room]);
                    lb.truncated = true;
                    self.stats.bytes_cut += (chunk.len() - room) as u64;
                } else {
                    lb.buf.extend_from_slice(chunk);
                }
            }
            if nl.is_none() {
                break;
            }
            let len = std::mem::take(&mut lb.len);
            let truncated = std::mem::take(&mut lb.truncated);
            if std::mem::take(&mut lb.lost) {
                lb.buf.clear();
                continue;
            }
            // The line without its end of line: `\n` or `\r\n` (a cut line lost its end with its tail).
            let line = std::mem::take(&mut lb.buf);
            let l = if truncated {
                &line[..]
            } else {
                let l = line.strip_suffix(b"\n").unwrap_or(&line);
                l.strip_suffix(b"\r").unwrap_or(l)
            };
            let tx = self.line(dir, l, truncated, out);
            let eol = if chunk.ends_with(b"\r\n") { 2 } else { 1 };
            if truncated && len.saturating_sub(eol) > SURICATA_MAX_LINE {
                let (to_server, e) = match dir {
                    Direction::ToServer => (true, AppLayerEvent::FtpRequestCommandTooLong),
                    Direction::ToClient => (false, AppLayerEvent::FtpResponseCommandTooLong),
                };
                out.app_layer_events(tx, to_server, std::iter::once(e).collect());
            }
            // Give the allocation back for the next line.
            let lb = &mut self.lines[dir.index()];
            lb.buf = line;
            lb.buf.clear();
        }
    }
    fn gap(&mut self, dir: Direction, _len: u64) {
        let lb = &mut self.lines[dir.index()];
        lb.buf.clear();
        lb.truncated = false;
        lb.lost = true;
        // What the gap held is unknown: the line's length is no longer measured.
        lb.len = 0;
    }
    /// Transactions still waiting for their reply are emitted with `reply_received: "no"`.
    fn finish(&mut self, out: &mut dyn EventSink) {
        while let Some(tx) = self.pending.pop_front() {
            out.event(AppEvent::Ftp(tx.into_event(false)));
        }
    }
    fn stats(&self) -> ParserStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    // From ftp.pcap (nDPI test suite): 192.168.1.212:50694 -> 90.130.70.73:21.
    const BANNER: &[u8] = b"220 (vsFTPd 3.0.3)\r\n";
    const PASV_REPLY: &[u8] = b"227 Entering Passive Mode (90,130,70,73,100,85).\r\n";

    const FTP: FtpDetector = FtpDetector { tls: false };
    const FTPS: FtpDetector = FtpDetector { tls: true };

    fn after_greeting(d: &[u8]) -> ProbeCtx<'_> {
        let mut c = ctx_tcp(Direction::ToServer, d);
        c.payload_index = 1;
        c
    }

    #[test]
    fn a_command_line_on_the_ftp_port_is_ftp_without_a_greeting() {
        let on_21 = |d: &'static [u8]| {
            let mut c = ctx_tcp(Direction::ToServer, d);
            c.server_port = 21;
            c
        };
        // The server closed before greeting: the client's QUIT alone, on port 21.
        assert_eq!(FTP.probe(&on_21(b"QUIT\r\n")), Probe::Certain);
        assert_eq!(FTP.probe(&on_21(b"USER anonymous\r\n")), Probe::Certain);
        // Not a command, not a whole line, binary arguments, or another port: the old rules.
        assert_eq!(FTP.probe(&on_21(b"QUITE\r\n")), Probe::NotForUs);
        assert_eq!(FTP.probe(&on_21(b"QUIT")), Probe::Unsure);
        assert_eq!(FTP.probe(&on_21(b"STOR \x01\x02\r\n")), Probe::NotForUs);
        assert_eq!(
            FTP.probe(&ctx_tcp(Direction::ToServer, b"QUIT\r\n")),
            Probe::NotForUs
        );
        // The FTPS detector still needs AUTH TLS.
        assert_eq!(FTPS.probe(&on_21(b"QUIT\r\n")), Probe::NotForUs);
    }

    #[test]
    fn greeting_then_first_command_decides() {
        assert_eq!(
            FTP.probe(&ctx_tcp(Direction::ToClient, BANNER)),
            Probe::Unsure
        );
        assert_eq!(
            FTP.probe(&ctx_tcp(
                Direction::ToClient,
                b"220 mx.example.com ESMTP Postfix\r\n"
            )),
            Probe::Unsure
        );
        assert_eq!(
            FTP.probe(&ctx_tcp(Direction::ToClient, b"+OK POP3 ready\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            FTP.probe(&ctx_tcp(Direction::ToClient, b"HTTP/1.1 200 OK\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            FTP.probe(&after_greeting(b"USER anonymous\r\n")),
            Probe::Certain
        );
        assert_eq!(
            FTPS.probe(&after_greeting(b"USER anonymous\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            FTP.probe(&after_greeting(b"EHLO client\r\n")),
            Probe::NotForUs
        );
        // ftp-start-tls.pcap
        assert_eq!(FTPS.probe(&after_greeting(b"AUTH TLS\r\n")), Probe::Certain);
        assert_eq!(FTP.probe(&after_greeting(b"AUTH TLS\r\n")), Probe::NotForUs);
        // irc.pcap: the IRC client sends USER before the server says anything.
        assert_eq!(
            FTP.probe(&ctx_tcp(
                Direction::ToServer,
                b"USER xxxxx +iw xxxxx :Xxxxxx Xxxx\r\n"
            )),
            Probe::NotForUs
        );
    }

    /// What a parser hands over: events, announcements, commands for the rules.
    #[derive(Default)]
    struct Rec {
        events: Vec<FtpEvent>,
        announced: Vec<FtpAnnouncement>,
        commands: Vec<(u64, Vec<u8>, Vec<u8>)>,
    }
    impl EventSink for Rec {
        fn event(&mut self, e: AppEvent) {
            if let AppEvent::Ftp(f) = e {
                self.events.push(f);
            }
        }
        fn ftp_command(&mut self, tx: u64, c: &[u8], d: &[u8]) {
            self.commands.push((tx, c.to_vec(), d.to_vec()));
        }
        fn ftp_announce(&mut self, a: &FtpAnnouncement) {
            self.announced.push(*a);
        }
    }

    fn record(chunks: &[(Direction, &[u8])]) -> (FtpParser, Rec) {
        let mut p = FtpParser::default();
        let mut out = Rec::default();
        for (dir, d) in chunks {
            p.parse(*dir, d, 0, &mut out);
        }
        p.finish(&mut out);
        (p, out)
    }

    #[test]
    fn passive_reply_gives_expectation() {
        let (_, out) = record(&[
            (Direction::ToClient, BANNER),
            (Direction::ToServer, b"PASV\r\n"),
            (Direction::ToClient, &PASV_REPLY[..20]),
            (Direction::ToClient, &PASV_REPLY[20..]),
        ]);
        assert_eq!(out.announced.len(), 1);
        let a = out.announced[0];
        assert_eq!((a.tx_id, a.command), (1, "PASV"));
        assert_eq!(
            a.channel.port, 25685,
            "the FTP_DATA flow of ftp.pcap goes to port 25685"
        );
        assert_eq!(a.channel.listener, Listener::Server);
        assert_eq!(a.channel.expected_ip, Some("90.130.70.73".parse().unwrap()));
        let client: IpAddr = "192.168.1.212".parse().unwrap();
        let server: IpAddr = "90.130.70.73".parse().unwrap();
        assert_eq!(a.data_endpoint(client, server), (client, (server, 25685)));
        // The greeting and the PASV transaction; the latter carries the port, passive (no `mode` written).
        assert_eq!(out.events.len(), 2);
        let pasv = &out.events[1];
        assert_eq!(pasv.command.as_deref(), Some("PASV"));
        assert_eq!(pasv.dynamic_port, Some(25685));
        assert_eq!(pasv.mode, None);
        assert_eq!(pasv.completion_code, vec!["227"]);
        assert_eq!(
            pasv.reply,
            vec!["Entering Passive Mode (90,130,70,73,100,85)."]
        );
    }

    /// The control connection of suricata-verify's `bug-3519` capture (vsFTPd 2.3.5, active mode), line by line as
    /// tshark shows it: eight transactions, the greeting's first, each command's replies with it (`150` and `226`
    /// both answer `NLST` and `RETR`), as Suricata's EVE `ftp` events list them.
    #[test]
    fn transactions_pair_commands_with_their_replies() {
        let c = Direction::ToServer;
        let s = Direction::ToClient;
        let (_, out) = record(&[
            (s, b"220 (vsFTPd 2.3.5)\r\n"),
            (c, b"USER anonymous\r\n"),
            (s, b"331 Please specify the password.\r\n"),
            (c, b"PASS anonymous\r\n"),
            (s, b"230 Login successful.\r\n"),
            (c, b"PORT 192,168,0,13,234,10\r\n"),
            (s, b"200 PORT command successful. Consider using PASV.\r\n"),
            (c, b"NLST\r\n"),
            (s, b"150 Here comes the directory listing.\r\n"),
            (s, b"226 Directory send OK.\r\n"),
            (c, b"PORT 192,168,0,13,234,22\r\n"),
            (s, b"200 PORT command successful. Consider using PASV.\r\n"),
            (c, b"RETR temp.txt\r\n"),
            (
                s,
                b"150 Opening BINARY mode data connection for temp.txt (1164 bytes).\r\n226 Transfer complete.\r\n",
            ),
            (c, b"QUIT\r\n"),
            (s, b"221 Goodbye.\r\n"),
        ]);
        let cmds: Vec<Option<&str>> = out.events.iter().map(|e| e.command.as_deref()).collect();
        assert_eq!(
            cmds,
            [
                None,
                Some("USER"),
                Some("PASS"),
                Some("PORT"),
                Some("NLST"),
                Some("PORT"),
                Some("RETR"),
                Some("QUIT")
            ]
        );
        assert!(out.events.iter().all(|e| e.reply_received == "yes"));
        assert_eq!(
            out.events.iter().map(|e| e.tx_id).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
        let pass = &out.events[2];
        assert_eq!(pass.command_data.as_deref(), Some("anonymous"));
        assert_eq!(
            (pass.completion_code.clone(), pass.reply.clone()),
            (
                vec!["230".to_string()],
                vec!["Login successful.".to_string()]
            )
        );
        let retr = &out.events[6];
        assert_eq!(retr.completion_code, ["150", "226"]);
        assert_eq!(
            retr.reply,
            [
                "Opening BINARY mode data connection for temp.txt (1164 bytes).",
                "Transfer complete."
            ]
        );
        let port = &out.events[3];
        assert_eq!(
            (port.dynamic_port, port.mode, port.known_command),
            (Some(59914), Some("active"), true)
        );
        assert_eq!(out.events[5].dynamic_port, Some(59926));
        assert_eq!(out.events[0].reply, ["(vsFTPd 2.3.5)"]);
        assert!(!out.events[0].known_command);
        // Commands go to the rules as they arrive, with the transaction they open.
        assert_eq!(
            out.commands[0],
            (1, b"USER".to_vec(), b"anonymous".to_vec())
        );
        assert_eq!(out.commands[5], (6, b"RETR".to_vec(), b"temp.txt".to_vec()));
        // Suricata's EVE layout: lists of strings, `reply_received`, nothing for the flags when unset.
        let v = serde_json::to_value(retr).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"command": "RETR", "command_data": "temp.txt",
                "completion_code": ["150", "226"],
                "reply": ["Opening BINARY mode data connection for temp.txt (1164 bytes).", "Transfer complete."],
                "reply_received": "yes"})
        );
        let v = serde_json::to_value(port).unwrap();
        assert_eq!(v["dynamic_port"], 59914);
        assert_eq!(v["mode"], "active");
    }

    /// A command the flow ends without answering is emitted at the end, `reply_received: "no"`; a multi-line
    /// reply (`230-` ... `230 `) stays one transaction; pipelined commands take their replies in order; commands
    /// beyond [`MAX_PENDING`] push out the oldest, counted.
    #[test]
    fn unanswered_multiline_and_pipelined() {
        let c = Direction::ToServer;
        let s = Direction::ToClient;
        let (_, out) = record(&[
            (c, b"USER a\r\nPASS b\r\n"),
            (
                s,
                b"331 Password?\r\n230-Welcome\r\n to the server\r\n230 Done\r\n",
            ),
            (c, b"CWD /x\r\n"),
        ]);
        assert_eq!(out.events.len(), 3);
        assert_eq!(out.events[1].completion_code, ["230", "230"]);
        assert_eq!(out.events[1].reply, ["Welcome", " to the server", "Done"]);
        assert_eq!(out.events[2].command.as_deref(), Some("CWD"));
        assert_eq!(out.events[2].reply_received, "no");
        let v = serde_json::to_value(&out.events[2]).unwrap();
        assert_eq!(v["reply_received"], "no");
        assert!(v.get("reply").is_none() && v.get("completion_code").is_none());

        let many = b"NOOP\r\n".repeat(MAX_PENDING + 3);
        let (p, out) = record(&[(c, &many)]);
        assert_eq!(out.events.len(), MAX_PENDING + 3);
        assert_eq!(p.stats().state_cut, 3);
        assert!(out.events.iter().all(|e| e.reply_received == "no"));
    }

    #[test]
    fn transfer_commands_name_the_last_announced_channel() {
        #[derive(Default)]
        struct Out(Vec<(&'static str, Vec<u8>, DataChannel)>);
        impl EventSink for Out {
            fn event(&mut self, _: AppEvent) {}
            fn ftp_transfer(&mut self, t: &FtpTransfer<'_>) {
                self.0.push((t.command, t.filename.to_vec(), t.channel));
            }
        }
        let mut p = FtpParser::default();
        let mut out = Out::default();
        for (dir, d) in [
            (Direction::ToClient, BANNER),
            // Before any announcement a transfer has no channel: nothing reported.
            (Direction::ToServer, b"RETR early.txt\r\n".as_slice()),
            (Direction::ToServer, b"PASV\r\n"),
            (Direction::ToClient, PASV_REPLY),
            (Direction::ToServer, b"retr  docs/report.pdf \r\n"),
            (Direction::ToServer, b"PORT 10,0,0,2,4,1\r\n"),
            (Direction::ToServer, b"STOR up load.bin\r\n"),
            (Direction::ToServer, b"STOU\r\n"),
            (Direction::ToServer, b"LIST\r\n"),
        ] {
            p.parse(dir, d, 0, &mut out);
        }
        let passive = DataChannel {
            listener: Listener::Server,
            expected_ip: Some("90.130.70.73".parse().unwrap()),
            port: 25685,
        };
        let active = DataChannel {
            listener: Listener::Client,
            expected_ip: Some("10.0.0.2".parse().unwrap()),
            port: 1025,
        };
        assert_eq!(
            out.0,
            vec![
                ("RETR", b"docs/report.pdf".to_vec(), passive),
                ("STOR", b"up load.bin".to_vec(), active),
                ("STOU", b"".to_vec(), active),
            ]
        );
    }

    #[test]
    fn active_and_extended_modes() {
        let (_, out) = record(&[
            (
                Direction::ToServer,
                b"PORT 192,168,1,2,7,138\r\nEPRT |2|2001:db8::1|5282|\r\nEPSV\r\n",
            ),
            (
                Direction::ToClient,
                b"200 ok\r\n200 ok\r\n229 Entering Extended Passive Mode (|||6446|)\r\n",
            ),
        ]);
        let ports: Vec<(u64, &str, u16, Listener, Option<IpAddr>)> = out
            .announced
            .iter()
            .map(|a| {
                (
                    a.tx_id,
                    a.command,
                    a.channel.port,
                    a.channel.listener,
                    a.channel.expected_ip,
                )
            })
            .collect();
        assert_eq!(
            ports,
            vec![
                (
                    0,
                    "PORT",
                    1930,
                    Listener::Client,
                    Some("192.168.1.2".parse().unwrap())
                ),
                (
                    1,
                    "EPRT",
                    5282,
                    Listener::Client,
                    Some("2001:db8::1".parse().unwrap())
                ),
                (2, "EPSV", 6446, Listener::Server, None),
            ]
        );
        let modes: Vec<(Option<u16>, Option<&str>)> = out
            .events
            .iter()
            .map(|e| (e.dynamic_port, e.mode))
            .collect();
        assert_eq!(
            modes,
            [
                (Some(1930), Some("active")),
                (Some(5282), Some("active")),
                (Some(6446), None)
            ]
        );
    }

    #[test]
    fn malformed_and_encrypted() {
        let (p, out) = record(&[
            (Direction::ToServer, b"PORT 300,1,1,1,1,1\r\nAUTH TLS\r\n"),
            (
                Direction::ToClient,
                b"500 no\r\n234 Proceed\r\n227 (1,2,3,4,5,6)\r\n",
            ),
            (Direction::ToServer, b"USER hidden\r\n"),
        ]);
        assert!(out.announced.is_empty());
        assert_eq!(p.stats().malformed, 1);
        // PORT and AUTH answered; nothing read after the upgrade.
        assert_eq!(out.events.len(), 2);
        assert_eq!(out.events[0].dynamic_port, None);
    }

    #[test]
    fn long_lines_are_cut_and_counted() {
        let mut long = b"RETR ".to_vec();
        long.resize(MAX_LINE * 3, b'A');
        let (p, out) = record(&[
            (Direction::ToServer, &long),
            (Direction::ToServer, b"\r\nPORT 1,2,3,4,0,21\r\n"),
        ]);
        assert_eq!(out.announced.len(), 1);
        assert!(p.stats().bytes_cut > 0);
        let cut = &out.events[0];
        assert!(cut.command_truncated);
        assert_eq!(cut.command.as_deref(), Some("RETR"));
        assert_eq!(
            cut.command_data.as_ref().map(String::len),
            Some(MAX_LINE - 5)
        );
        assert!(!out.events[1].command_truncated);
    }

    /// Lines longer than Suricata's 4096 bytes raise the direction's anomaly once each, whatever the segmenting;
    /// long lines up to the limit raise nothing.
    #[test]
    fn too_long_lines_raise_anomalies() {
        #[derive(Default)]
        struct Anomalies(Vec<(u64, bool, Vec<AppLayerEvent>)>);
        impl EventSink for Anomalies {
            fn event(&mut self, _: AppEvent) {}
            fn app_layer_events(&mut self, tx: u64, to_server: bool, e: crate::AppLayerEvents) {
                self.0.push((tx, to_server, e.iter().collect()));
            }
        }
        let line = |n: usize| {
            let mut l = b"RETR ".to_vec();
            l.resize(n, b'a');
            l.extend_from_slice(b"\r\n");
            l
        };
        let mut p = FtpParser::default();
        let mut out = Anomalies::default();
        p.parse(Direction::ToServer, &line(SURICATA_MAX_LINE), 0, &mut out);
        assert!(out.0.is_empty());
        let long = line(SURICATA_MAX_LINE + 1);
        for piece in long.chunks(700) {
            p.parse(Direction::ToServer, piece, 0, &mut out);
        }
        p.parse(Direction::ToServer, b"RETR index.html\r\n", 0, &mut out);
        let mut reply = b"227 ".to_vec();
        reply.resize(5000, b'x');
        reply.push(b'\n');
        p.parse(Direction::ToClient, &reply, 0, &mut out);
        // The long command is transaction 1; the long reply answers the oldest waiting one, 0.
        assert_eq!(
            out.0,
            vec![
                (1, true, vec![AppLayerEvent::FtpRequestCommandTooLong]),
                (0, false, vec![AppLayerEvent::FtpResponseCommandTooLong]),
            ]
        );
    }
}
