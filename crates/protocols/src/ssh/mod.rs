//! SSH: identification from the version exchange, and the EVE `ssh` event (client and server software).
//!
//! RFC 4253 §4.2: each side first sends `SSH-protoversion-softwareversion [SP comments] CR LF` (at most 255 bytes);
//! a server may send other lines before it. Eight bytes such as `SSH-2.0-` are unlikely in any other protocol's
//! first payload, so one banner from either side is enough to be certain (nDPI also labels unidirectional captures).
//!
//! The parser keeps at most [`MAX_LINE`] bytes per direction until it has seen that direction's banner, then
//! ignores the rest of the flow (the binary packet protocol is encrypted): its cost after the handshake is a
//! branch per segment.

use crate::scan::{Lit, lit_ci};
use crate::{
    AppEvent, AppProto, Detector, Direction, EventSink, Limits, Parser, ParserStats, Probe,
    ProbeCtx, Transport,
};

/// Longest identification line kept (RFC 4253: 255 bytes including CR LF).
pub const MAX_LINE: usize = 255;
/// Bytes of other lines a server may send before its banner that we are willing to skip, per direction.
const MAX_PREAMBLE: usize = 4096;

/// One side's software, as Suricata's EVE `ssh.client` / `ssh.server`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SshSoftware {
    /// `2.0`, `1.99`, `1.5`.
    pub proto_version: String,
    /// e.g. `OpenSSH_8.2p1` (the text after the second dash, up to the first space).
    pub software_version: String,
}

/// The EVE `ssh` event: emitted once both banners are known (or at the end of the flow with what was seen).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SshEvent {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<SshSoftware>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<SshSoftware>,
}

/// Parses one identification line (without CR LF). `None` unless it is `SSH-<version>-<software>...`.
pub fn parse_banner(line: &[u8]) -> Option<SshSoftware> {
    let rest = line.strip_prefix(b"SSH-")?;
    let dash = rest.iter().position(|&b| b == b'-')?;
    let (ver, rest) = (&rest[..dash], &rest[dash + 1..]);
    if ver.is_empty() || ver.len() > 8 || !ver.iter().all(|&b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let sw_end = rest
        .iter()
        .position(|&b| b == b' ' || b == b'\r')
        .unwrap_or(rest.len());
    let sw = &rest[..sw_end];
    if !sw.iter().all(|&b| (0x21..0x7f).contains(&b)) {
        return None;
    }
    Some(SshSoftware {
        proto_version: String::from_utf8_lossy(ver).into_owned(),
        software_version: String::from_utf8_lossy(sw).into_owned(),
    })
}

/// Detector: `SSH-<digits.digits>-` at the start of either direction.
pub struct SshDetector;

impl Detector for SshDetector {
    fn proto(&self) -> AppProto {
        AppProto::Ssh
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        match lit_ci(p, b"SSH-") {
            Lit::No => return Probe::NotForUs,
            Lit::Maybe => return Probe::Unsure,
            Lit::Yes => {}
        }
        // Case matters in the real banner; lit_ci accepted "ssh-", require the exact bytes.
        if !p.starts_with(b"SSH-") {
            return Probe::NotForUs;
        }
        // Version: digits and dots, then a dash.
        let rest = &p[4..];
        for (i, &b) in rest.iter().enumerate().take(9) {
            if b == b'-' {
                return if i > 0 && rest[0].is_ascii_digit() {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                };
            }
            if !(b.is_ascii_digit() || b == b'.') {
                return Probe::NotForUs;
            }
        }
        if rest.len() >= 9 {
            Probe::NotForUs
        } else {
            Probe::Unsure
        }
    }
    fn parser(&self, transport: Transport, _limits: &Limits) -> Option<Box<dyn Parser>> {
        (transport == Transport::Tcp).then(|| Box::new(SshParser::default()) as Box<dyn Parser>)
    }
}

#[derive(Default)]
struct Side {
    line: Vec<u8>,
    seen: usize,
    banner: Option<SshSoftware>,
    done: bool,
}

/// Streaming parser of the version exchange; emits one [`SshEvent`].
#[derive(Default)]
pub struct SshParser {
    sides: [Side; 2],
    emitted: bool,
    stats: ParserStats,
}

impl SshParser {
    fn feed(&mut self, dir: Direction, data: &[u8]) {
        let side = &mut self.sides[dir.index()];
        let mut data = data;
        while !side.done && !data.is_empty() {
            let nl = data.iter().position(|&b| b == b'\n');
            let take = nl.map_or(data.len(), |p| p + 1);
            let (chunk, rest) = data.split_at(take);
            data = rest;
            side.seen += chunk.len();
            let room = MAX_LINE.saturating_sub(side.line.len());
            if chunk.len() > room {
                self.stats.bytes_cut += (chunk.len() - room) as u64;
            }
            side.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if nl.is_none() {
                // A line without a newline is a banner only if it already looks like one; keep waiting.
                if side.line.len() >= MAX_LINE {
                    side.done = true;
                    self.stats.gave_up += 1;
                }
                break;
            }
            let line = side.line.strip_suffix(b"\n").unwrap_or(&side.line);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.starts_with(b"SSH-") {
                side.banner = parse_banner(line);
                if side.banner.is_none() {
                    self.stats.malformed += 1;
                }
                side.done = true;
            } else if side.seen > MAX_PREAMBLE {
                side.done = true;
                self.stats.gave_up += 1;
            }
            side.line.clear();
        }
    }

    fn emit(&mut self, out: &mut dyn EventSink) {
        if self.emitted {
            return;
        }
        let [c, s] = &self.sides;
        if c.banner.is_none() && s.banner.is_none() {
            return;
        }
        self.emitted = true;
        out.event(AppEvent::Ssh(SshEvent {
            client: c.banner.clone(),
            server: s.banner.clone(),
        }));
    }
}

impl Parser for SshParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.emitted || self.sides[dir.index()].done {
            return;
        }
        self.feed(dir, data);
        if self.sides.iter().all(|s| s.done) {
            self.emit(out);
        }
    }
    fn gap(&mut self, dir: Direction, _len: u64) {
        let side = &mut self.sides[dir.index()];
        if !side.done {
            side.done = true;
            self.stats.gave_up += 1;
        }
    }
    fn finish(&mut self, out: &mut dyn EventSink) {
        self.emit(out);
    }
    fn stats(&self) -> ParserStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{ctx_tcp, run_parser};

    // The server banner of ssh.pcap (nDPI test suite); the client's carries a comment, as Debian's do.
    const SERVER: &[u8] = b"SSH-2.0-OpenSSH_5.3\r\n";
    const CLIENT: &[u8] = b"SSH-2.0-OpenSSH_6.6.1p1 Ubuntu-2ubuntu2\r\n";

    #[test]
    fn detects_banners() {
        assert_eq!(
            SshDetector.probe(&ctx_tcp(Direction::ToClient, SERVER)),
            Probe::Certain
        );
        assert_eq!(
            SshDetector.probe(&ctx_tcp(Direction::ToServer, CLIENT)),
            Probe::Certain
        );
        assert_eq!(
            SshDetector.probe(&ctx_tcp(Direction::ToServer, b"SSH")),
            Probe::Unsure
        );
        assert_eq!(
            SshDetector.probe(&ctx_tcp(Direction::ToServer, b"SSH-2.0")),
            Probe::Unsure
        );
        assert_eq!(
            SshDetector.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            SshDetector.probe(&ctx_tcp(Direction::ToServer, b"SSH-abc-x")),
            Probe::NotForUs
        );
    }

    #[test]
    fn event_has_both_sides() {
        let ev = run_parser(
            &mut SshParser::default(),
            &[
                (Direction::ToClient, SERVER),
                (Direction::ToServer, &CLIENT[..10]),
                (Direction::ToServer, &CLIENT[10..]),
            ],
        );
        assert_eq!(
            ev,
            vec![AppEvent::Ssh(SshEvent {
                client: Some(SshSoftware {
                    proto_version: "2.0".into(),
                    software_version: "OpenSSH_6.6.1p1".into()
                }),
                server: Some(SshSoftware {
                    proto_version: "2.0".into(),
                    software_version: "OpenSSH_5.3".into()
                }),
            })]
        );
    }

    #[test]
    fn server_preamble_lines_are_skipped() {
        let ev = run_parser(
            &mut SshParser::default(),
            &[(Direction::ToClient, b"hello\r\nSSH-1.99-Cisco-1.25\r\n")],
        );
        assert_eq!(ev.len(), 1);
        let AppEvent::Ssh(e) = &ev[0] else {
            panic!("not ssh")
        };
        assert_eq!(
            e.server.as_ref().map(|s| s.proto_version.as_str()),
            Some("1.99")
        );
        assert!(e.client.is_none());
    }
}
