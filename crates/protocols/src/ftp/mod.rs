//! FTP control connections: identification, and the data-connection endpoints announced by `PASV` / `EPSV` replies
//! and `PORT` / `EPRT` commands (RFC 959, RFC 2428), so the engine can label the data connection `FTP_DATA`.
//!
//! **Identification.** A server greets with `220` (or `120`/`421`); SMTP greets the same way, so a banner alone is
//! only certain when it names FTP and not SMTP. Otherwise the client's first command decides: `USER`, `AUTH TLS`,
//! `FEAT`, `SYST`, ... are FTP, `EHLO`/`HELO` are not.
//!
//! **Expectations.** Each `227` / `229` reply (passive: the *server* listens) and each `PORT` / `EPRT` command
//! (active: the *client* listens) yields an [`FtpEvent`] with Suricata's `ftp` fields (`command`, `dynamic_port`,
//! `mode`, ...) plus [`FtpEvent::expected_ip`], the listener's address. `EPSV` replies carry no address: the listener
//! is then the server's own address. [`FtpEvent::data_endpoint`] resolves it against the control connection.
//!
//! **Transfers.** A `STOR` / `RETR` / `APPE` / `STOU` command after an announcement yields an [`FtpTransfer`]
//! ([`EventSink::ftp_transfer`]): the command, its file name and the data connection announced last, which is the
//! one the file goes over ([`data`] handles that connection's file).
//!
//! **Cost and bounds.** Lines are buffered up to [`MAX_LINE`] bytes per direction (longer lines are skipped and
//! counted); after a successful `AUTH TLS` (`234`) the control channel is encrypted and the parser stops.
//!
//! **Anomalies.** A line longer than Suricata's default `max-line-length` ([`SURICATA_MAX_LINE`]) raises
//! `ftp.request_command_too_long` (a command) or `ftp.response_command_too_long` (a reply) for the rules'
//! `app-layer-event`, each on its own transaction number.

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

/// An announced data connection (Suricata's EVE `ftp` event for the command that announced it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FtpEvent {
    /// `PASV`, `EPSV`, `PORT` or `EPRT`.
    pub command: &'static str,
    /// The command's argument (`PORT`/`EPRT`) or the reply text (`PASV`/`EPSV`), as sent (lossy UTF-8).
    pub command_data: String,
    /// The reply code for passive replies (`227`, `229`); empty for active commands. EVE writes it as Suricata
    /// does, a list of strings (`["227"]`).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "code_list")]
    pub completion_code: Option<u16>,
    /// Port the data connection goes to.
    pub dynamic_port: u16,
    /// `passive` or `active`, as Suricata writes it.
    pub mode: &'static str,
    /// Who listens. For the expectation table; not in Suricata's schema, not written.
    #[serde(skip)]
    pub listener: Listener,
    /// The listener's address as announced; `None` for `EPSV` (the server's own address). Not written, as
    /// `listener`.
    #[serde(skip)]
    pub expected_ip: Option<IpAddr>,
}

/// A reply code as Suricata's `completion_code`: a list of the codes as strings.
fn code_list<S: serde::Serializer>(code: &Option<u16>, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq as _;
    let mut seq = s.serialize_seq(Some(usize::from(code.is_some())))?;
    if let Some(c) = code {
        seq.serialize_element(&c.to_string())?;
    }
    seq.end()
}

impl FtpEvent {
    /// The data connection's destination `(ip, port)` and the address it will come from, given the control
    /// connection's client and server addresses. The source port is never known in advance.
    pub fn data_endpoint(&self, client_ip: IpAddr, server_ip: IpAddr) -> (IpAddr, (IpAddr, u16)) {
        self.announced().data_endpoint(client_ip, server_ip)
    }

    fn announced(&self) -> DataChannel {
        DataChannel {
            listener: self.listener,
            expected_ip: self.expected_ip,
            port: self.dynamic_port,
        }
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

#[derive(Default)]
struct LineBuf {
    buf: Vec<u8>,
    skipping: bool,
    /// Bytes of the line being read so far, kept or skipped.
    len: usize,
}

/// Streaming FTP control parser: line-buffers both directions and emits an [`FtpEvent`] per data connection
/// announced.
#[derive(Default)]
pub struct FtpParser {
    lines: [LineBuf; 2],
    encrypted: bool,
    auth_pending: bool,
    /// Transaction numbers given to anomalies.
    next_tx: u64,
    /// The data connection announced last: the one a transfer command's file goes over.
    channel: Option<DataChannel>,
    stats: ParserStats,
}

impl FtpParser {
    fn line(&mut self, dir: Direction, line: &[u8], out: &mut dyn EventSink) {
        match dir {
            Direction::ToServer => {
                let (cmd, arg) = match line.iter().position(|&b| b == b' ') {
                    Some(p) => (&line[..p], line[p + 1..].trim_ascii()),
                    None => (line, &[][..]),
                };
                if cmd.eq_ignore_ascii_case(b"PORT") {
                    match parse_host_port(arg) {
                        Some((ip, port)) => {
                            self.announce(active("PORT", arg, IpAddr::V4(ip), port), out)
                        }
                        None => self.stats.malformed += 1,
                    }
                } else if cmd.eq_ignore_ascii_case(b"EPRT") {
                    match parse_eprt(arg) {
                        Some((ip, port)) => self.announce(active("EPRT", arg, ip, port), out),
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
            }
            Direction::ToClient => {
                let Some(code) = reply_code(line) else { return };
                let text = line.get(4..).unwrap_or(&[]);
                match code {
                    227 => match find_227(text) {
                        Some((ip, port)) => self
                            .announce(passive("PASV", text, Some(IpAddr::V4(ip)), port, code), out),
                        None => self.stats.malformed += 1,
                    },
                    229 => match parse_epsv_reply(text) {
                        Some(port) => self.announce(passive("EPSV", text, None, port, code), out),
                        None => self.stats.malformed += 1,
                    },
                    234 if self.auth_pending => self.encrypted = true,
                    _ => {}
                }
            }
        }
    }
}

impl FtpParser {
    /// Reports an announcement and remembers it for the transfer commands after it.
    fn announce(&mut self, event: FtpEvent, out: &mut dyn EventSink) {
        self.channel = Some(event.announced());
        out.event(AppEvent::Ftp(event));
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn active(command: &'static str, arg: &[u8], ip: IpAddr, port: u16) -> FtpEvent {
    FtpEvent {
        command,
        command_data: lossy(arg),
        completion_code: None,
        dynamic_port: port,
        mode: "active",
        listener: Listener::Client,
        expected_ip: Some(ip),
    }
}

fn passive(
    command: &'static str,
    text: &[u8],
    ip: Option<IpAddr>,
    port: u16,
    code: u16,
) -> FtpEvent {
    FtpEvent {
        command,
        command_data: lossy(text),
        completion_code: Some(code),
        dynamic_port: port,
        mode: "passive",
        listener: Listener::Server,
        expected_ip: ip,
    }
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
            if !lb.skipping {
                let room = MAX_LINE.saturating_sub(lb.buf.len());
                if chunk.len() > room {
                    lb.skipping = true;
                    lb.buf.clear();
                    self.stats.bytes_cut += chunk.len() as u64;
                } else {
                    lb.buf.extend_from_slice(chunk);
                }
            } else {
                self.stats.bytes_cut += chunk.len() as u64;
            }
            if nl.is_none() {
                break;
            }
            let len = std::mem::take(&mut lb.len);
            if lb.skipping {
                lb.skipping = false;
                // The line without its end of line: `\n` or `\r\n`.
                let eol = if chunk.ends_with(b"\r\n") { 2 } else { 1 };
                if len.saturating_sub(eol) > SURICATA_MAX_LINE {
                    let (to_server, e) = match dir {
                        Direction::ToServer => (true, AppLayerEvent::FtpRequestCommandTooLong),
                        Direction::ToClient => (false, AppLayerEvent::FtpResponseCommandTooLong),
                    };
                    out.app_layer_events(self.next_tx, to_server, std::iter::once(e).collect());
                    self.next_tx += 1;
                }
                continue;
            }
            let line = std::mem::take(&mut lb.buf);
            let l = line.strip_suffix(b"\n").unwrap_or(&line);
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            self.line(dir, l, out);
            // Give the allocation back for the next line.
            let lb = &mut self.lines[dir.index()];
            lb.buf = line;
            lb.buf.clear();
        }
    }
    fn gap(&mut self, dir: Direction, _len: u64) {
        let lb = &mut self.lines[dir.index()];
        lb.buf.clear();
        lb.skipping = true;
        // What the gap held is unknown: the line's length is no longer measured.
        lb.len = 0;
    }
    fn stats(&self) -> ParserStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{ctx_tcp, run_parser};

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

    #[test]
    fn passive_reply_gives_expectation() {
        let ev = run_parser(
            &mut FtpParser::default(),
            &[
                (Direction::ToClient, BANNER),
                (Direction::ToServer, b"PASV\r\n"),
                (Direction::ToClient, &PASV_REPLY[..20]),
                (Direction::ToClient, &PASV_REPLY[20..]),
            ],
        );
        assert_eq!(ev.len(), 1);
        let AppEvent::Ftp(e) = &ev[0] else {
            panic!("not ftp")
        };
        assert_eq!(e.dynamic_port, 100 * 256 + 85);
        assert_eq!(
            e.dynamic_port, 25685,
            "the FTP_DATA flow of ftp.pcap goes to port 25685"
        );
        assert_eq!(e.listener, Listener::Server);
        assert_eq!(e.expected_ip, Some("90.130.70.73".parse().unwrap()));
        let client: IpAddr = "192.168.1.212".parse().unwrap();
        let server: IpAddr = "90.130.70.73".parse().unwrap();
        assert_eq!(e.data_endpoint(client, server), (client, (server, 25685)));
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
        let ev = run_parser(
            &mut FtpParser::default(),
            &[
                (
                    Direction::ToServer,
                    b"PORT 192,168,1,2,7,138\r\nEPRT |2|2001:db8::1|5282|\r\n",
                ),
                (
                    Direction::ToClient,
                    b"229 Entering Extended Passive Mode (|||6446|)\r\n",
                ),
            ],
        );
        let ports: Vec<(u16, Listener, Option<IpAddr>)> = ev
            .iter()
            .filter_map(|e| match e {
                AppEvent::Ftp(f) => Some((f.dynamic_port, f.listener, f.expected_ip)),
                _ => None,
            })
            .collect();
        assert_eq!(
            ports,
            vec![
                (1930, Listener::Client, Some("192.168.1.2".parse().unwrap())),
                (5282, Listener::Client, Some("2001:db8::1".parse().unwrap())),
                (6446, Listener::Server, None),
            ]
        );
    }

    #[test]
    fn malformed_and_encrypted() {
        let mut p = FtpParser::default();
        let ev = run_parser(
            &mut p,
            &[
                (Direction::ToServer, b"PORT 300,1,1,1,1,1\r\nAUTH TLS\r\n"),
                (Direction::ToClient, b"234 Proceed\r\n227 (1,2,3,4,5,6)\r\n"),
            ],
        );
        assert!(ev.is_empty());
        assert_eq!(p.stats().malformed, 1);
    }

    #[test]
    fn long_lines_are_cut_and_counted() {
        let long = vec![b'A'; MAX_LINE * 3];
        let mut p = FtpParser::default();
        let ev = run_parser(
            &mut p,
            &[
                (Direction::ToServer, &long),
                (Direction::ToServer, b"\r\nPORT 1,2,3,4,0,21\r\n"),
            ],
        );
        assert_eq!(ev.len(), 1);
        assert!(p.stats().bytes_cut > 0);
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
        assert_eq!(
            out.0,
            vec![
                (0, true, vec![AppLayerEvent::FtpRequestCommandTooLong]),
                (1, false, vec![AppLayerEvent::FtpResponseCommandTooLong]),
            ]
        );
    }
}
