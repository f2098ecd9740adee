//! SIP (RFC 3261) over UDP or TCP: nDPI's `SIP`, Suricata's `sip`.
//!
//! **Detector.** The first line is decisive: a request line `METHOD SP Request-URI SP SIP/2.0` with one of the RFC
//! methods and a `sip:`/`sips:`/`tel:` URI (method and scheme suffice), or a status line `SIP/2.0 SP 3DIGIT`. A
//! datagram must hold the whole line; on TCP the detector waits (bounded by the probe prefix) while what arrived is
//! still a prefix of such a line.
//!
//! **Parser.** Each message is a transaction of its own, numbered per flow, as Suricata makes them (its SIP
//! transactions are one-directional): a request to the server, a response to the client; a message of the other
//! kind in a direction (a request from the server) is counted as malformed and not reported, as Suricata's parser
//! fails it. A datagram holds one message (leading `CRLF` keep-alives skipped), its body the rest of it; on TCP messages are framed by their
//! `Content-Length` (none means no body, RFC 3261 section 18.3). [`message`] reads the start line and headers
//! (compact names expanded); a body whose `Content-Type` is `application/sdp` is read as a session description
//! ([`sdp`]). Each message becomes a [`SipEvent`]: Suricata's EVE `sip` fields, with the headers the rules read
//! (`sip.from`, `sip.to`, `sip.via`, `sip.user_agent`, `sip.content_type`, `sip.content_length`) beside them.
//!
//! **Bounds.** On TCP a header block is buffered up to [`MAX_HEAD`] bytes (a longer one gives the direction up,
//! counted in [`ParserStats::gave_up`]); a body is kept up to [`MAX_BODY`] bytes and the rest skipped (counted in
//! [`ParserStats::bytes_cut`]; a cut body is not read as SDP). What does not parse is counted in
//! [`ParserStats::malformed`]; headers and SDP entries past their caps in [`ParserStats::state_cut`].

pub mod message;
pub mod sdp;

use crate::scan::{Lit, first_line, lit_ci, starts_ci};
use crate::{
    AppEvent, AppProto, Detector, Direction, EventSink, Limits, Parser, ParserStats, Probe,
    ProbeCtx, Transport,
};
use message::{Head, Parsed, SipHeaders, StartLine};
use sdp::SdpEvent;

/// Longest header block (start line and headers) buffered on TCP.
pub const MAX_HEAD: usize = 16 * 1024;
/// Body bytes kept per message; the rest are skipped, counted.
pub const MAX_BODY: usize = 64 * 1024;

/// One SIP message as Suricata's EVE `sip` event writes it, with the header values the rules read.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SipEvent {
    /// The transaction (one per message, numbered per flow). Not written.
    #[serde(skip)]
    pub tx_id: u64,
    /// A request (to the server) rather than a response. Not written.
    #[serde(skip)]
    pub to_server: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// `SIP/2.0`, from the request or status line.
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_line: Option<String>,
    /// The body's session description, when it carried one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sdp: Option<SdpEvent>,
    /// The headers the rules read. Not written.
    #[serde(skip)]
    pub headers: SipHeaders,
}

impl SipEvent {
    fn new(tx_id: u64, head: Head, sdp: Option<SdpEvent>) -> SipEvent {
        let mut e = SipEvent {
            tx_id,
            sdp,
            headers: head.headers,
            ..SipEvent::default()
        };
        match head.start {
            StartLine::Request {
                method,
                uri,
                version,
            } => {
                e.to_server = true;
                e.method = Some(method);
                e.uri = Some(uri);
                e.version = version;
                e.request_line = Some(head.line);
            }
            StartLine::Response {
                version,
                code,
                reason,
            } => {
                e.version = version;
                e.code = Some(code);
                e.reason = Some(reason);
                e.response_line = Some(head.line);
            }
        }
        e
    }
}

/// One direction of a TCP flow: the message being read.
#[derive(Debug, Default)]
struct Side {
    /// Bytes of the message being read (and of those after it).
    buf: Vec<u8>,
    /// Bytes of `buf` searched for the end of the header block without finding it.
    scanned: usize,
    /// The start line was checked (its line end arrived).
    line_checked: bool,
    /// The message's head, once its header block is complete; the parser waits for its body.
    head: Option<Box<Head>>,
    /// Body bytes past [`MAX_BODY`] still to skip.
    skip: u64,
    /// The direction was given up.
    dead: bool,
}

/// Reads each message (see the module documentation).
struct SipParser {
    transport: Transport,
    sides: [Side; 2],
    next_tx: u64,
    stats: ParserStats,
}

impl SipParser {
    /// One message: its head and its body (`whole` unless bytes of it were cut).
    fn message(
        &mut self,
        dir: Direction,
        head: Box<Head>,
        body: &[u8],
        whole: bool,
        out: &mut dyn EventSink,
    ) {
        let request = matches!(head.start, StartLine::Request { .. });
        if request != (dir == Direction::ToServer) {
            self.stats.malformed += 1;
            return;
        }
        let sdp = if whole && !body.is_empty() && head.is_sdp() {
            sdp::parse(body)
        } else {
            None
        };
        let cut = head.headers_cut + sdp.as_ref().map_or(0, |s| s.cut);
        if cut > 0 {
            self.stats.state_cut += u64::from(cut);
        }
        let tx = self.next_tx;
        self.next_tx += 1;
        out.event(AppEvent::Sip(SipEvent::new(tx, *head, sdp)));
    }

    /// A datagram: one message, its body the rest of the datagram. RFC 3261 (section 18.3) would cut the body at
    /// a smaller `Content-Length`; Suricata reads the rest of the datagram whatever the header says (its sip-sdp
    /// test sends `Content-Length: 272` before a longer description and inspects all of it), and so does this.
    fn datagram(&mut self, dir: Direction, d: &[u8], out: &mut dyn EventSink) {
        let start = d
            .iter()
            .position(|&b| !matches!(b, b'\r' | b'\n' | 0))
            .unwrap_or(d.len());
        let d = &d[start..];
        if d.is_empty() {
            return;
        }
        let Parsed::Head(head) = message::parse_head(d) else {
            self.stats.malformed += 1;
            return;
        };
        let body = d.get(head.len..).unwrap_or_default();
        let len = body.len();
        let keep = len.min(MAX_BODY);
        self.stats.bytes_cut += (len - keep) as u64;
        self.message(dir, head, &body[..keep], keep == len, out);
    }

    /// Gives a TCP direction up.
    fn give_up(&mut self, si: usize) {
        let s = &mut self.sides[si];
        s.dead = true;
        s.buf = Vec::new();
        s.head = None;
        self.stats.malformed += 1;
        self.stats.gave_up += 1;
    }

    /// In-order stream bytes of one direction.
    fn stream(&mut self, dir: Direction, mut data: &[u8], out: &mut dyn EventSink) {
        let si = usize::from(dir != Direction::ToServer);
        loop {
            let s = &mut self.sides[si];
            if s.dead {
                return;
            }
            if s.skip > 0 {
                let n = usize::try_from(s.skip)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                s.skip -= n as u64;
                self.stats.bytes_cut += n as u64;
                data = &data[n..];
                if s.skip > 0 {
                    return;
                }
            }
            // A message fits whole in the buffer (head and kept body), so it always makes progress.
            let room = (MAX_HEAD + MAX_BODY).saturating_sub(s.buf.len());
            let n = room.min(data.len());
            s.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if !self.messages(si, dir, out) || data.is_empty() {
                return;
            }
            if n == 0 && self.sides[si].buf.len() >= MAX_HEAD + MAX_BODY {
                // Cannot happen (a message fits the buffer); never spin on it.
                self.give_up(si);
                return;
            }
        }
    }

    /// Reads the whole messages the buffer of direction `si` holds; false when the direction was given up.
    fn messages(&mut self, si: usize, dir: Direction, out: &mut dyn EventSink) -> bool {
        loop {
            let s = &mut self.sides[si];
            if s.head.is_none() {
                if s.scanned == 0 {
                    // Keep-alives (RFC 5626: CRLF CRLF, answered by CRLF) between messages.
                    let lead = s
                        .buf
                        .iter()
                        .take_while(|&&b| matches!(b, b'\r' | b'\n'))
                        .count();
                    s.buf.drain(..lead);
                }
                if s.buf.is_empty() {
                    return true;
                }
                let limit = s.buf.len().min(MAX_HEAD);
                let from = s.scanned.saturating_sub(2);
                if message::head_end(&s.buf[from..limit]).is_none() {
                    let line_end = !s.line_checked && s.buf[from..limit].contains(&b'\n');
                    if line_end && message::parse_head(&s.buf[..limit]) == Parsed::Invalid {
                        self.give_up(si);
                        return false;
                    }
                    s.line_checked |= line_end;
                    s.scanned = limit;
                    if limit >= MAX_HEAD {
                        self.give_up(si);
                        return false;
                    }
                    return true;
                }
                let Parsed::Head(head) = message::parse_head(&s.buf[..limit]) else {
                    self.give_up(si);
                    return false;
                };
                s.head = Some(head);
                s.scanned = 0;
                s.line_checked = false;
            }
            let Some(head) = s.head.as_ref() else {
                return true;
            };
            let body_len = head.content_length.unwrap_or(0);
            let keep = usize::try_from(body_len)
                .unwrap_or(usize::MAX)
                .min(MAX_BODY);
            let end = head.len + keep;
            if s.buf.len() < end {
                return true;
            }
            let Some(head) = s.head.take() else {
                return true;
            };
            let cut = body_len - keep as u64;
            let buf = std::mem::take(&mut s.buf);
            self.message(dir, head, &buf[end - keep..end], cut == 0, out);
            let s = &mut self.sides[si];
            s.buf = buf;
            s.buf.drain(..end);
            let n = usize::try_from(cut).unwrap_or(usize::MAX).min(s.buf.len());
            s.buf.drain(..n);
            self.stats.bytes_cut += n as u64;
            s.skip = cut - n as u64;
            if s.skip > 0 {
                return true;
            }
        }
    }
}

impl Parser for SipParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.transport == Transport::Tcp {
            self.stream(dir, data, out);
        } else {
            self.datagram(dir, data, out);
        }
    }

    fn gap(&mut self, dir: Direction, _len: u64) {
        // The message boundary is lost: read what follows as a new message.
        let s = &mut self.sides[usize::from(dir != Direction::ToServer)];
        if !s.dead {
            *s = Side::default();
        }
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}

const METHODS: &[&[u8]] = &[
    b"INVITE ",
    b"ACK ",
    b"BYE ",
    b"CANCEL ",
    b"REGISTER ",
    b"OPTIONS ",
    b"PRACK ",
    b"SUBSCRIBE ",
    b"NOTIFY ",
    b"PUBLISH ",
    b"INFO ",
    b"REFER ",
    b"MESSAGE ",
    b"UPDATE ",
];

/// What the start of a payload says about SIP.
fn judge(d: &[u8]) -> Probe {
    let Some(line) = first_line(d) else {
        // No complete line yet: keep going only while it can still become a SIP first line.
        let can =
            lit_ci(d, b"SIP/2.0 ") != Lit::No || METHODS.iter().any(|m| lit_ci(d, m) != Lit::No);
        return if can && d.len() < 512 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    if let Some(rest) = line.strip_prefix(b"SIP/2.0 ") {
        let ok = rest.len() >= 3
            && rest[..3].iter().all(u8::is_ascii_digit)
            && rest.get(3).is_none_or(|&b| b == b' ');
        return if ok { Probe::Certain } else { Probe::NotForUs };
    }
    let Some(m) = METHODS.iter().find(|m| line.starts_with(m)) else {
        return Probe::NotForUs;
    };
    let uri = &line[m.len()..];
    let uri_ok = starts_ci(uri, b"sip:") || starts_ci(uri, b"sips:") || starts_ci(uri, b"tel:");
    // The URI scheme right after a SIP method is specific enough; the version at the end is not required
    // (nDPI accepts damaged request lines too).
    if uri_ok {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// Detector for SIP signalling.
pub struct SipDetector;

impl Detector for SipDetector {
    fn proto(&self) -> AppProto {
        AppProto::Sip
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        // RFC 5626 keep-alives (CRLF CRLF, or a lone NUL some phones send) decide nothing.
        if !ctx.data.is_empty() && ctx.data.iter().all(|&b| b == b'\r' || b == b'\n' || b == 0) {
            return Probe::Unsure;
        }
        match (judge(ctx.prefix), ctx.transport) {
            // A datagram is complete: what is not a SIP line now never will be.
            (Probe::Unsure, Transport::Udp) => Probe::NotForUs,
            (p, _) => p,
        }
    }
    fn parser(&self, transport: Transport, _limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(new_parser(transport)))
    }
}

fn new_parser(transport: Transport) -> SipParser {
    SipParser {
        transport,
        sides: [Side::default(), Side::default()],
        next_tx: 0,
        stats: ParserStats::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    #[test]
    fn request_and_response_lines() {
        // sip.pcap (nDPI test suite)
        let invite = b"INVITE sip:6713@192.168.1.2:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 192.168.1.3:5060\r\n\r\n";
        let ok = b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.168.1.3:5060\r\n\r\n";
        assert_eq!(
            SipDetector.probe(&ctx_udp(Direction::ToServer, invite, &[])),
            Probe::Certain
        );
        assert_eq!(
            SipDetector.probe(&ctx_udp(Direction::ToClient, ok, &[])),
            Probe::Certain
        );
        assert_eq!(
            SipDetector.probe(&ctx_udp(Direction::ToServer, b"INVITE sip:x", &[])),
            Probe::NotForUs
        );
        assert_eq!(
            SipDetector.probe(&ctx_tcp(Direction::ToServer, b"INVITE sip:x")),
            Probe::Unsure
        );
        assert_eq!(
            SipDetector.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            SipDetector.probe(&ctx_tcp(Direction::ToServer, b"OPTIONS * HTTP/1.1\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            SipDetector.probe(&ctx_udp(Direction::ToServer, b"\r\n\r\n", &[])),
            Probe::Unsure
        );
    }

    fn events(transport: Transport, chunks: &[(bool, &[u8])]) -> (Vec<SipEvent>, ParserStats) {
        let mut p = new_parser(transport);
        let mut out: Vec<AppEvent> = Vec::new();
        for &(to_server, c) in chunks {
            let dir = if to_server {
                Direction::ToServer
            } else {
                Direction::ToClient
            };
            p.parse(dir, c, 0, &mut out);
        }
        let events = out
            .into_iter()
            .map(|e| match e {
                AppEvent::Sip(s) => s,
                e => panic!("{e:?}"),
            })
            .collect();
        (events, p.stats)
    }

    const REGISTER: &[u8] = b"REGISTER sip:sip.cybercity.dk SIP/2.0\r\n\
Via: SIP/2.0/UDP 192.168.1.2;branch=z9hG4bKnp112903503-43a64480192.168.1.2;rport\r\n\
From: <sip:voi18063@sip.cybercity.dk>;tag=903df0a\r\n\
To: <sip:voi18063@sip.cybercity.dk>\r\n\
User-Agent: Nero SIPPS IP Phone Version 2.0.51.16\r\n\
Content-Length: 0\r\n\r\n";
    const UNAUTHORIZED: &[u8] = b"SIP/2.0 401 Unauthorized\r\n\
Via: SIP/2.0/UDP 192.168.1.2;branch=z9hG4bKnp112903503-43a64480192.168.1.2;rport=5060\r\n\
From: <sip:voi18063@sip.cybercity.dk>;tag=903df0a\r\n\
To: <sip:voi18063@sip.cybercity.dk>;tag=00-04092-1701af62-120c67172\r\n\
Content-Length: 0\r\n\r\n";

    fn check_register_and_401(e: &[SipEvent]) {
        let [req, resp] = e else { panic!("{e:?}") };
        assert_eq!(
            serde_json::to_value(req).unwrap(),
            serde_json::json!({"method": "REGISTER", "uri": "sip:sip.cybercity.dk", "version": "SIP/2.0",
                "request_line": "REGISTER sip:sip.cybercity.dk SIP/2.0"})
        );
        assert_eq!(
            serde_json::to_value(resp).unwrap(),
            serde_json::json!({"version": "SIP/2.0", "code": "401", "reason": "Unauthorized",
                "response_line": "SIP/2.0 401 Unauthorized"})
        );
        assert_eq!(
            (req.tx_id, req.to_server, resp.tx_id, resp.to_server),
            (0, true, 1, false)
        );
        assert_eq!(
            req.headers.user_agent,
            ["Nero SIPPS IP Phone Version 2.0.51.16"]
        );
        assert_eq!(resp.headers.content_length, ["0"]);
    }

    /// sip-tcp-pattern-matching's exchange (suricata-verify): one transaction per message, as Suricata's EVE.
    #[test]
    fn a_request_and_its_response_over_udp_and_tcp() {
        let (e, stats) = events(Transport::Udp, &[(true, REGISTER), (false, UNAUTHORIZED)]);
        check_register_and_401(&e);
        assert_eq!(stats, ParserStats::default());
        for size in [1, 2, 3, 7, 50, 1000] {
            let mut chunks: Vec<(bool, &[u8])> = REGISTER.chunks(size).map(|c| (true, c)).collect();
            chunks.extend(UNAUTHORIZED.chunks(size).map(|c| (false, c)));
            let (e, stats) = events(Transport::Tcp, &chunks);
            check_register_and_401(&e);
            assert_eq!(stats, ParserStats::default(), "{size}");
        }
    }

    #[test]
    fn tcp_frames_messages_by_content_length() {
        let sdp = super::sdp::tests::SDP;
        let mut stream = format!(
            "\r\n\r\nINVITE sip:bob@example.com SIP/2.0\r\nc: application/sdp\r\nl: {}\r\n\r\n",
            sdp.len()
        )
        .into_bytes();
        stream.extend_from_slice(sdp);
        stream.extend_from_slice(
            b"\r\n\r\nACK sip:bob@example.com SIP/2.0\r\nContent-Length: 0\r\n\r\n",
        );
        for size in [1, 5, 64, 4096] {
            let chunks: Vec<(bool, &[u8])> = stream.chunks(size).map(|c| (true, c)).collect();
            let (e, stats) = events(Transport::Tcp, &chunks);
            assert_eq!(e.len(), 2, "{size}");
            let d = e[0].sdp.as_ref().expect("sdp");
            assert_eq!(d.session_name, "SIP call");
            assert_eq!(d.media_descriptions.len(), 1);
            assert_eq!(e[1].method.as_deref(), Some("ACK"));
            assert_eq!(e[1].tx_id, 1);
            assert_eq!(stats, ParserStats::default());
        }
    }

    #[test]
    fn long_bodies_are_cut_and_garbage_gives_a_direction_up() {
        let mut msg = format!(
            "MESSAGE sip:a@b SIP/2.0\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 100
        )
        .into_bytes();
        msg.resize(msg.len() + MAX_BODY + 100, b'x');
        msg.extend_from_slice(b"OPTIONS sip:a@b SIP/2.0\r\n\r\n");
        let chunks: Vec<(bool, &[u8])> = msg.chunks(1400).map(|c| (true, c)).collect();
        let (e, stats) = events(Transport::Tcp, &chunks);
        assert_eq!(e.len(), 2);
        assert_eq!(stats.bytes_cut, 100);
        // A request sent to the client is not a transaction (Suricata's parser fails it); garbage ends the side.
        let (e, stats) = events(
            Transport::Tcp,
            &[
                (false, REGISTER),
                (true, b"GET / HTTP/1.1\r\n\r\n"),
                (true, REGISTER),
            ],
        );
        assert!(e.is_empty());
        assert_eq!((stats.malformed, stats.gave_up), (2, 1));
        // A header block that never ends is given up at the cap.
        let mut endless = b"OPTIONS sip:a@b SIP/2.0\r\n".to_vec();
        endless.resize(MAX_HEAD + 10, b'a');
        let (e, stats) = events(Transport::Tcp, &[(true, &endless)]);
        assert!(e.is_empty());
        assert_eq!(stats.gave_up, 1);
        // Keep-alives decide nothing.
        let (e, stats) = events(Transport::Udp, &[(true, b"\r\n\r\n"), (false, b"\r\n")]);
        assert!(e.is_empty());
        assert_eq!(stats, ParserStats::default());
    }
}
