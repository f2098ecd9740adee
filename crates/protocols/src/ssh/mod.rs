//! SSH: identification from the version exchange, and the EVE `ssh` event (client and server software).
//!
//! RFC 4253 §4.2: each side first sends `SSH-protoversion-softwareversion [SP comments] CR LF` (at most 255 bytes);
//! a server may send other lines before it. Eight bytes such as `SSH-2.0-` are unlikely in any other protocol's
//! first payload, so one banner from either side is enough to be certain (nDPI also labels unidirectional captures).
//!
//! The parser keeps at most [`MAX_LINE`] bytes per direction until it has seen that direction's banner. When HASSH
//! is enabled ([`Limits::ssh_hassh`]: Suricata's `app-layer.protocols.ssh.hassh`, or a rule that reads a hassh
//! buffer) it then reads each side's binary packets (RFC 4253 §6: `uint32 packet_length`, `byte padding_length`,
//! payload, padding; cleartext until NEWKEYS) up to its `SSH_MSG_KEXINIT` (§7.1) and computes HASSH from the
//! client's and HASSHServer from the server's name-lists: MD5 of `kex;encryption;mac;compression`, the client's
//! lists in its client-to-server direction and the server's in its server-to-client one (Salesforce's definition,
//! as Suricata logs it). The event waits for both KEXINITs (or for a side to give up); afterwards the rest of the
//! flow is ignored (encrypted): a branch per segment. Only a KEXINIT is buffered (up to [`MAX_PACKET`] bytes);
//! other packets before it are skipped by length.

use crate::scan::{Lit, lit_ci};
use crate::{
    AppEvent, AppProto, Detector, Direction, EventSink, Limits, Parser, ParserStats, Probe,
    ProbeCtx, Transport,
};

/// Longest identification line kept (RFC 4253: 255 bytes including CR LF).
pub const MAX_LINE: usize = 255;
/// Bytes of other lines a server may send before its banner that we are willing to skip, per direction.
const MAX_PREAMBLE: usize = 4096;
/// Largest binary packet read (RFC 4253 §6.1: implementations must handle 35000 bytes); a longer length field is
/// malformed.
pub const MAX_PACKET: usize = 35_000;
/// Binary packets skipped before a side's KEXINIT before giving up on it.
const MAX_PACKETS_BEFORE_KEXINIT: u32 = 8;
/// `SSH_MSG_KEXINIT` and `SSH_MSG_NEWKEYS` (RFC 4253 §12).
const MSG_KEXINIT: u8 = 20;
const MSG_NEWKEYS: u8 = 21;

/// One side's software, as Suricata's EVE `ssh.client` / `ssh.server`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SshSoftware {
    /// `2.0`, `1.99`, `1.5`.
    pub proto_version: String,
    /// e.g. `OpenSSH_8.2p1` (the text after the second dash, up to the first space).
    pub software_version: String,
    /// HASSH (client) or HASSHServer (server) of this side's KEXINIT, when HASSH is enabled and it was seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hassh: Option<Hassh>,
}

/// A HASSH fingerprint, as EVE `ssh.client.hassh` / `ssh.server.hassh`: the algorithm string and its MD5.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Hassh {
    /// 32 lower-case hex digits.
    pub hash: String,
    /// `kex;encryption;mac;compression`, each the comma-separated name-list as sent.
    pub string: String,
}

impl Hassh {
    fn of(string: String) -> Hassh {
        use md5::Digest as _;
        use std::fmt::Write as _;
        let mut hash = String::with_capacity(32);
        for b in md5::Md5::digest(string.as_bytes()) {
            let _ = write!(hash, "{b:02x}");
        }
        Hassh { hash, string }
    }
}

/// The name-lists of an `SSH_MSG_KEXINIT` payload (message code included) that HASSH reads, borrowed from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KexInit<'a> {
    pub kex: &'a [u8],
    pub host_key: &'a [u8],
    pub enc: [&'a [u8]; 2],
    pub mac: [&'a [u8]; 2],
    pub comp: [&'a [u8]; 2],
}

impl<'a> KexInit<'a> {
    /// Parses a KEXINIT payload: code 20, 16-byte cookie, then the name-lists (each `uint32` length and bytes;
    /// pairs client-to-server then server-to-client). `None` when it is not one or a length runs past the end.
    pub fn parse(payload: &'a [u8]) -> Option<KexInit<'a>> {
        if *payload.first()? != MSG_KEXINIT {
            return None;
        }
        let mut at = 17usize;
        let mut next = || -> Option<&'a [u8]> {
            let len = u32::from_be_bytes(payload.get(at..at + 4)?.try_into().ok()?) as usize;
            let list = payload.get(at + 4..(at + 4).checked_add(len)?)?;
            at += 4 + len;
            Some(list)
        };
        let kex = next()?;
        let host_key = next()?;
        let enc = [next()?, next()?];
        let mac = [next()?, next()?];
        let comp = [next()?, next()?];
        Some(KexInit {
            kex,
            host_key,
            enc,
            mac,
            comp,
        })
    }

    /// HASSH of the side that sent it: the client's reads its client-to-server lists, the server's its
    /// server-to-client ones.
    pub fn hassh(&self, client: bool) -> Hassh {
        let i = usize::from(!client);
        let mut s = String::new();
        for (n, part) in [self.kex, self.enc[i], self.mac[i], self.comp[i]]
            .into_iter()
            .enumerate()
        {
            if n > 0 {
                s.push(';');
            }
            s.push_str(&String::from_utf8_lossy(part));
        }
        Hassh::of(s)
    }
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
        hassh: None,
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
    fn parser(&self, transport: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        (transport == Transport::Tcp).then(|| {
            Box::new(SshParser {
                hassh: limits.ssh_hassh,
                ..SshParser::default()
            }) as Box<dyn Parser>
        })
    }
}

#[derive(Default)]
struct Side {
    line: Vec<u8>,
    seen: usize,
    banner: Option<SshSoftware>,
    /// The banner line is over (parsed or given up on).
    done: bool,
    /// Reading binary packets after the banner, for the KEXINIT.
    packets: bool,
    /// The current binary packet: its first bytes (header, and the whole packet when it is a KEXINIT).
    packet: Vec<u8>,
    /// Bytes of a packet that is not a KEXINIT still to skip.
    skip: usize,
    /// Packets skipped before the KEXINIT.
    skipped: u32,
    /// Nothing more to read on this side (its KEXINIT was read, or it gave up).
    finished: bool,
}

/// Streaming parser of the version exchange (and, with HASSH, the KEXINITs); emits one [`SshEvent`].
#[derive(Default)]
pub struct SshParser {
    sides: [Side; 2],
    emitted: bool,
    /// Read the KEXINITs and compute HASSH ([`Limits::ssh_hassh`]).
    hassh: bool,
    stats: ParserStats,
}

impl SshParser {
    /// A parser that reads the KEXINITs for HASSH when `hassh` is set.
    pub fn new(hassh: bool) -> SshParser {
        SshParser {
            hassh,
            ..SshParser::default()
        }
    }

    fn feed(&mut self, dir: Direction, data: &[u8]) {
        let hassh = self.hassh;
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
                    side.finished = true;
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
                // SSH 1.x has no KEXINIT (1.99 speaks 2.0 as well).
                side.packets = hassh
                    && side.banner.as_ref().is_some_and(|b| {
                        b.proto_version.starts_with('2') || b.proto_version == "1.99"
                    });
                side.finished = !side.packets;
            } else if side.seen > MAX_PREAMBLE {
                side.done = true;
                side.finished = true;
                self.stats.gave_up += 1;
            }
            side.line.clear();
        }
        if side.packets && !side.finished {
            Self::packets(side, dir == Direction::ToServer, data, &mut self.stats);
        }
    }

    /// Reads binary packets up to the side's KEXINIT.
    fn packets(side: &mut Side, client: bool, mut data: &[u8], stats: &mut ParserStats) {
        while !data.is_empty() && !side.finished {
            if side.skip > 0 {
                let n = side.skip.min(data.len());
                side.skip -= n;
                data = &data[n..];
                continue;
            }
            // The header: length (4), padding length (1), message code (1).
            if side.packet.len() < 6 {
                let n = (6 - side.packet.len()).min(data.len());
                side.packet.extend_from_slice(&data[..n]);
                data = &data[n..];
                if side.packet.len() < 6 {
                    return;
                }
            }
            let len = u32::from_be_bytes([
                side.packet[0],
                side.packet[1],
                side.packet[2],
                side.packet[3],
            ]) as usize;
            let code = side.packet[5];
            if !(2..=MAX_PACKET).contains(&len) || usize::from(side.packet[4]) >= len {
                stats.malformed += 1;
                side.finished = true;
                return;
            }
            if code != MSG_KEXINIT {
                side.skipped += 1;
                if code == MSG_NEWKEYS || side.skipped > MAX_PACKETS_BEFORE_KEXINIT {
                    stats.gave_up += 1;
                    side.finished = true;
                    return;
                }
                side.skip = len + 4 - side.packet.len();
                side.packet.clear();
                continue;
            }
            let n = (len + 4 - side.packet.len()).min(data.len());
            side.packet.extend_from_slice(&data[..n]);
            data = &data[n..];
            if side.packet.len() < len + 4 {
                return;
            }
            side.finished = true;
            let pad = usize::from(side.packet[4]);
            let payload = &side.packet[5..len + 4 - pad];
            match KexInit::parse(payload) {
                Some(k) => {
                    if let Some(b) = side.banner.as_mut() {
                        b.hassh = Some(k.hassh(client));
                    }
                }
                None => stats.malformed += 1,
            }
            side.packet = Vec::new();
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
        self.sides = Default::default();
    }
}

impl Parser for SshParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        if self.emitted || self.sides[dir.index()].finished {
            return;
        }
        self.feed(dir, data);
        if self.sides.iter().all(|s| s.finished) {
            self.emit(out);
        }
    }
    fn gap(&mut self, dir: Direction, _len: u64) {
        let side = &mut self.sides[dir.index()];
        if !side.finished {
            side.done = true;
            side.finished = true;
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
                    software_version: "OpenSSH_6.6.1p1".into(),
                    hassh: None,
                }),
                server: Some(SshSoftware {
                    proto_version: "2.0".into(),
                    software_version: "OpenSSH_5.3".into(),
                    hassh: None,
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

    /// A binary packet holding `payload`, padded as RFC 4253 §6 asks (at least 4 bytes, to a multiple of 8).
    fn packet(payload: &[u8]) -> Vec<u8> {
        let mut pad = 8 - (payload.len() + 5) % 8;
        if pad < 4 {
            pad += 8;
        }
        let mut p = ((payload.len() + pad + 1) as u32).to_be_bytes().to_vec();
        p.push(pad as u8);
        p.extend_from_slice(payload);
        p.resize(p.len() + pad, 0);
        p
    }

    /// A KEXINIT payload with these name-lists (kex, host key, enc c2s/s2c, mac c2s/s2c, comp c2s/s2c, languages).
    fn kexinit(lists: [&str; 10]) -> Vec<u8> {
        let mut p = vec![MSG_KEXINIT];
        p.extend_from_slice(&[0xaa; 16]);
        for l in lists {
            p.extend_from_slice(&(l.len() as u32).to_be_bytes());
            p.extend_from_slice(l.as_bytes());
        }
        p.extend_from_slice(&[0, 0, 0, 0, 0]);
        p
    }

    const CLIENT_LISTS: [&str; 10] = [
        "curve25519-sha256,ext-info-c",
        "ssh-ed25519",
        "aes128-ctr,aes256-gcm@openssh.com",
        "aes256-ctr",
        "hmac-sha2-256",
        "hmac-sha1",
        "none,zlib@openssh.com",
        "zlib",
        "",
        "",
    ];

    fn hassh_of(s: &str) -> String {
        use md5::Digest as _;
        md5::Md5::digest(s.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The client's HASSH reads its client-to-server lists, the server's its server-to-client ones; the KEXINIT is
    /// found whatever the segmentation, after the banner in the same segment or not, behind an ignored packet.
    #[test]
    fn hassh_of_both_kexinits() {
        let client = [CLIENT, &packet(&kexinit(CLIENT_LISTS))].concat();
        let server = [
            SERVER,
            &packet(&[2, 0, 0, 0, 1, b'x']), // SSH_MSG_IGNORE
            &packet(&kexinit(CLIENT_LISTS)),
        ]
        .concat();
        let c_string = "curve25519-sha256,ext-info-c;aes128-ctr,aes256-gcm@openssh.com;hmac-sha2-256;none,zlib@openssh.com";
        let s_string = "curve25519-sha256,ext-info-c;aes256-ctr;hmac-sha1;zlib";
        for cut in [
            1,
            10,
            CLIENT.len(),
            CLIENT.len() + 3,
            CLIENT.len() + 7,
            client.len() - 1,
        ] {
            let ev = run_parser(
                &mut SshParser::new(true),
                &[
                    (Direction::ToServer, &client[..cut]),
                    (Direction::ToClient, &server[..cut.min(server.len())]),
                    (Direction::ToServer, &client[cut..]),
                    (Direction::ToClient, &server[cut.min(server.len())..]),
                ],
            );
            let [AppEvent::Ssh(e)] = ev.as_slice() else {
                panic!("{ev:?}")
            };
            let c = e.client.as_ref().and_then(|c| c.hassh.as_ref()).unwrap();
            let s = e.server.as_ref().and_then(|s| s.hassh.as_ref()).unwrap();
            assert_eq!(
                (c.string.as_str(), s.string.as_str()),
                (c_string, s_string),
                "cut {cut}"
            );
            assert_eq!(c.hash, hassh_of(c_string));
            assert_eq!(s.hash, hassh_of(s_string));
        }
        // Without HASSH enabled the event comes with the banners and carries none.
        let ev = run_parser(
            &mut SshParser::new(false),
            &[
                (Direction::ToServer, &client),
                (Direction::ToClient, SERVER),
            ],
        );
        let [AppEvent::Ssh(e)] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert!(e.client.as_ref().unwrap().hassh.is_none());
        assert!(!serde_json::to_string(e).unwrap().contains("hassh"));
    }

    /// Hostile packets: a length over the cap, a padding longer than the packet, name-lists running past the end,
    /// NEWKEYS before any KEXINIT: counted, the event still comes (without that side's HASSH), nothing panics.
    #[test]
    fn bad_packets_are_counted() {
        let mut truncated = kexinit(CLIENT_LISTS);
        truncated.truncate(40);
        for (bytes, malformed) in [
            (vec![0xff, 0xff, 0xff, 0xff, 4, 20], 1),
            (vec![0, 0, 0, 8, 9, 20, 0, 0, 0, 0, 0, 0], 1),
            (packet(&truncated), 1),
            (packet(&[MSG_NEWKEYS]), 0),
        ] {
            let mut p = SshParser::new(true);
            let ev = run_parser(
                &mut p,
                &[
                    (Direction::ToServer, &[CLIENT, &bytes].concat()),
                    (
                        Direction::ToClient,
                        &[SERVER, &packet(&kexinit(CLIENT_LISTS))].concat(),
                    ),
                ],
            );
            let [AppEvent::Ssh(e)] = ev.as_slice() else {
                panic!("{ev:?}")
            };
            assert!(e.client.as_ref().unwrap().hassh.is_none());
            assert!(e.server.as_ref().unwrap().hassh.is_some());
            assert_eq!(p.stats().malformed, malformed, "{bytes:?}");
        }
    }

    /// The HASSH of ssh-hassh's capture (suricata-verify) as tshark 4.0 computes it (`ssh.kex.hassh`,
    /// `ssh.kex.hasshserver`) and Suricata's test expects it.
    #[test]
    fn hassh_matches_tshark_on_a_capture() {
        let Some(path) = flowbundle_testsupport::data("suricata-verify/ssh-hassh/input.pcap")
        else {
            return;
        };
        let flows = flowbundle_testcapture::flows(&path, 64);
        let mut seen = 0;
        for flow in flows.values() {
            let mut p = SshParser::new(true);
            let chunks: Vec<(Direction, &[u8])> = flow
                .payloads
                .iter()
                .map(|(d, data, _)| (*d, data.as_slice()))
                .collect();
            for ev in run_parser(&mut p, &chunks) {
                let AppEvent::Ssh(e) = ev else { continue };
                let hash = |s: &Option<SshSoftware>| {
                    s.as_ref().and_then(|s| s.hassh.clone()).map(|h| h.hash)
                };
                assert_eq!(
                    hash(&e.client).as_deref(),
                    Some("2dd6531c7e89d3c925db9214711be76a")
                );
                assert_eq!(
                    hash(&e.server).as_deref(),
                    Some("6832f1ce43d4397c2c0a3e2f8c94334e")
                );
                seen += 1;
            }
        }
        assert_eq!(seen, 1);
    }
}
