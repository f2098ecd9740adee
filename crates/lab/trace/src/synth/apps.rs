//! The application conversations the synthesizer writes, with their exact packet counts.
//!
//! A TCP conversation is a fixed *shape*: a list of messages, each one segment long except the TLS server's
//! handshake flight (three), and one *bulk* message whose length is free. Its packet count is then a closed form
//! ([`TcpShape::packets`]): the handshake (3), each message's segments plus the receiver's delayed ACKs (one per
//! two segments, the last one replaced by the reply when the peer answers), and the teardown (FIN in three or four
//! packets, or a single RST). Solving that form for the bulk's segment count and the teardown hits any requested
//! packet count at or above the shape's minimum exactly, which is what lets the planner promise each flow its size
//! and the dominant connection its share.

use std::sync::Arc;

use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;

use super::content::{Content, Fill, LINE, Pools, host_name, token};
use super::dns::{self, Qtype};
use super::quic;
use super::tls;
use flowbundle_types::AppProto;
use serde::Serialize;

/// What a generated flow carries. The engine must classify each as the protocol of the same name
/// ([`GeneratedApp::ndpi_name`]); the opaque ones as nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum GeneratedApp {
    /// HTTP/1.1 GET and a response: gzip-compressed HTML, or a binary download for large flows.
    Http,
    /// TLS 1.3: ClientHello with SNI, ServerHello, encrypted records.
    Tls,
    /// SSH-2: banners, KEXINIT, curve25519 key exchange, encrypted packets.
    Ssh,
    /// SMTP: ESMTP dialogue and one mail.
    Smtp,
    /// FTP control connection: login, SYST, a directory listing by STAT, QUIT.
    Ftp,
    /// Encrypted-looking bytes over TCP on an unregistered port.
    OpaqueTcp,
    /// DNS queries and answers over UDP.
    Dns,
    /// QUIC v1: protected Initials with the ClientHello, then 1-RTT packets.
    Quic,
    /// Encrypted-looking datagrams on an unregistered port.
    OpaqueUdp,
}

impl GeneratedApp {
    /// Every application, in a fixed order.
    pub const ALL: [GeneratedApp; 9] = [
        GeneratedApp::Http,
        GeneratedApp::Tls,
        GeneratedApp::Ssh,
        GeneratedApp::Smtp,
        GeneratedApp::Ftp,
        GeneratedApp::OpaqueTcp,
        GeneratedApp::Dns,
        GeneratedApp::Quic,
        GeneratedApp::OpaqueUdp,
    ];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            GeneratedApp::Http => "http",
            GeneratedApp::Tls => "tls",
            GeneratedApp::Ssh => "ssh",
            GeneratedApp::Smtp => "smtp",
            GeneratedApp::Ftp => "ftp",
            GeneratedApp::OpaqueTcp => "opaque-tcp",
            GeneratedApp::Dns => "dns",
            GeneratedApp::Quic => "quic",
            GeneratedApp::OpaqueUdp => "opaque-udp",
        }
    }

    /// The protocol the engine must name a flow of this application (none for the opaque ones).
    pub fn proto(self) -> Option<AppProto> {
        Some(match self {
            GeneratedApp::Http => AppProto::Http,
            GeneratedApp::Tls => AppProto::Tls,
            GeneratedApp::Ssh => AppProto::Ssh,
            GeneratedApp::Smtp => AppProto::Smtp,
            GeneratedApp::Ftp => AppProto::Ftp,
            GeneratedApp::Dns => AppProto::Dns,
            GeneratedApp::Quic => AppProto::Quic,
            GeneratedApp::OpaqueTcp | GeneratedApp::OpaqueUdp => return None,
        })
    }

    /// nDPI's name of [`GeneratedApp::proto`].
    pub fn ndpi_name(self) -> Option<&'static str> {
        self.proto().map(AppProto::name)
    }

    /// Whether the flow runs over TCP.
    pub fn is_tcp(self) -> bool {
        !matches!(
            self,
            GeneratedApp::Dns | GeneratedApp::Quic | GeneratedApp::OpaqueUdp
        )
    }

    /// Server port (the opaque applications draw theirs from a range no detector claims).
    pub(crate) fn server_port(self, rng: &mut ChaCha8Rng) -> u16 {
        match self {
            GeneratedApp::Http => 80,
            GeneratedApp::Tls | GeneratedApp::Quic => 443,
            GeneratedApp::Ssh => 22,
            GeneratedApp::Smtp => 25,
            GeneratedApp::Ftp => 21,
            GeneratedApp::OpaqueTcp => rng.random_range(20_000..20_900),
            GeneratedApp::Dns => 53,
            GeneratedApp::OpaqueUdp => rng.random_range(30_000..30_900),
        }
    }

    /// The fewest packets a flow of this application has.
    pub fn min_packets(self) -> u64 {
        match self.shape() {
            Some(s) => s.min_packets(),
            None => match self {
                GeneratedApp::OpaqueUdp => 1,
                _ => 2,
            },
        }
    }

    /// The most packets a flow of this application is given (DNS conversations stay short; the rest is unbounded).
    pub fn max_packets(self) -> u64 {
        match self {
            GeneratedApp::Dns => 16,
            GeneratedApp::Smtp | GeneratedApp::Ftp => 4_000,
            _ => u64::MAX,
        }
    }

    pub(crate) fn shape(self) -> Option<TcpShape> {
        use Step::*;
        let (steps, closer): (&'static [Step], Side) = match self {
            GeneratedApp::Http | GeneratedApp::OpaqueTcp => (&[C(1), BulkS], Side::Client),
            GeneratedApp::Tls => (&[C(1), S(3), C(1), BulkS], Side::Client),
            GeneratedApp::Ssh => (
                &[S(1), C(1), C(1), S(1), C(1), S(1), C(1), BulkS],
                Side::Client,
            ),
            GeneratedApp::Smtp => (
                &[
                    S(1),
                    C(1),
                    S(1),
                    C(1),
                    S(1),
                    C(1),
                    S(1),
                    C(1),
                    S(1),
                    BulkC,
                    S(1),
                    C(1),
                    S(1),
                ],
                Side::Server,
            ),
            GeneratedApp::Ftp => (
                &[
                    S(1),
                    C(1),
                    S(1),
                    C(1),
                    S(1),
                    C(1),
                    S(1),
                    C(1),
                    BulkS,
                    C(1),
                    S(1),
                ],
                Side::Server,
            ),
            _ => return None,
        };
        Some(TcpShape { steps, closer })
    }
}

/// A side of a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Client,
    Server,
}

impl Side {
    pub(crate) fn index(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Server => 1,
        }
    }
    pub(crate) fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// One message of a TCP shape: a side and a segment count, or the bulk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    C(u8),
    S(u8),
    BulkC,
    BulkS,
}

impl Step {
    fn side(self) -> Side {
        match self {
            Step::C(_) | Step::BulkC => Side::Client,
            Step::S(_) | Step::BulkS => Side::Server,
        }
    }
}

/// How a TCP conversation ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Teardown {
    /// FIN, FIN, ACK.
    Fin3,
    /// FIN, ACK, FIN, ACK.
    Fin4,
    /// One RST.
    Rst,
}

impl Teardown {
    pub(crate) fn packets(self) -> u64 {
        match self {
            Teardown::Fin3 => 3,
            Teardown::Fin4 => 4,
            Teardown::Rst => 1,
        }
    }
}

/// The message structure of a TCP application.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TcpShape {
    pub steps: &'static [Step],
    pub closer: Side,
}

/// Packets of a message of `n` segments: the segments, a delayed ACK per two, the last replaced by the peer's
/// reply when the peer speaks next.
pub(crate) fn message_packets(n: u64, reply_follows: bool) -> u64 {
    n + n.div_ceil(2) - u64::from(reply_follows)
}

impl TcpShape {
    fn reply_follows(&self, i: usize) -> bool {
        match (self.steps.get(i), self.steps.get(i + 1)) {
            (Some(a), Some(b)) => a.side() != b.side(),
            _ => false,
        }
    }

    /// Packets before the teardown with a bulk of `n` segments (handshake included).
    pub(crate) fn packets(&self, n: u64) -> u64 {
        let mut total = 3;
        for (i, s) in self.steps.iter().enumerate() {
            let segs = match s {
                Step::C(k) | Step::S(k) => u64::from(*k),
                Step::BulkC | Step::BulkS => n,
            };
            total += message_packets(segs, self.reply_follows(i));
        }
        total
    }

    pub(crate) fn min_packets(&self) -> u64 {
        self.packets(1) + Teardown::Fin3.packets()
    }

    /// The bulk's segment count and the teardown that make exactly `target` packets (or the minimum, for a smaller
    /// target). `rst` asks for a RST teardown where one fits.
    pub(crate) fn solve(&self, target: u64, rst: bool) -> (u64, Teardown) {
        if target <= self.min_packets() {
            return (1, Teardown::Fin3);
        }
        // packets(n) grows by 1 or 2 per segment: find the largest n that leaves room for the teardown.
        let fits = |n: u64, td: u64| self.packets(n) + td <= target;
        let search = |td: u64| {
            let (mut lo, mut hi) = (1u64, target);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if fits(mid, td) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            lo
        };
        if rst {
            let n = search(1);
            if self.packets(n) + 1 == target {
                return (n, Teardown::Rst);
            }
        }
        let n = search(3);
        match target - self.packets(n) {
            3 => (n, Teardown::Fin3),
            _ => (n, Teardown::Fin4),
        }
    }
}

/// What a conversation builder needs besides its random stream.
pub(crate) struct Ctx<'a> {
    pub gzip: &'a [Arc<[u8]>],
    /// Maximum segment size of this flow (1460 over IPv4, 1440 over IPv6).
    pub mss: u64,
    /// `Date:` header value of the run.
    pub date: &'a str,
}

/// Picks a message length whose segment count is exactly `n`: in `((n-1)·mss, n·mss]`, at least `min`.
fn length_for(rng: &mut ChaCha8Rng, n: u64, mss: u64, min: u64) -> u64 {
    let lo = ((n - 1) * mss + 1).max(min.min(n * mss));
    rng.random_range(lo..=n * mss)
}

/// Builds the messages of a TCP conversation of `app` with a bulk of `n` segments.
pub(crate) fn tcp_messages(
    app: GeneratedApp,
    n: u64,
    rng: &mut ChaCha8Rng,
    ctx: &Ctx<'_>,
) -> Vec<(Side, Content)> {
    use Side::{Client as C, Server as S};
    let mss = ctx.mss;
    let text = |s: String| Content::bytes(s.into_bytes());
    match app {
        GeneratedApp::Http => {
            let host = host_name(rng);
            let path = match rng.random_range(0..4) {
                0 => "/".to_string(),
                1 => format!("/index-{}.html", token(rng, 6)),
                2 => format!(
                    "/api/v1/{}?id={}",
                    token(rng, 8),
                    rng.random_range(1..100_000)
                ),
                _ => format!("/static/{}.js", token(rng, 10)),
            };
            let ua = [
                "Mozilla/5.0 (X11; Linux x86_64; rv:124.0) Gecko/20100101 Firefox/124.0",
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0 Safari/537.36",
                "curl/8.5.0",
            ][rng.random_range(0..3)];
            let req = format!(
                "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n\r\n"
            );
            let len = length_for(rng, n, mss, 400);
            vec![(C, text(req)), (S, http_response(len, rng, ctx))]
        }
        GeneratedApp::OpaqueTcp => {
            let first = rng.random_range(64..600u64);
            let len = length_for(rng, n, mss, 64);
            vec![
                (
                    C,
                    Content::framed(Vec::new(), Fill::Random(rng.next_u64()), first, Vec::new()),
                ),
                (
                    S,
                    Content::framed(Vec::new(), Fill::Random(rng.next_u64()), len, Vec::new()),
                ),
            ]
        }
        GeneratedApp::Tls => {
            let sni = host_name(rng);
            let ch = tls::client_hello(rng, &sni, &["h2", "http/1.1"], false);
            let hello = tls::record(0x16, 0x0301, &ch);
            // Server flight: ServerHello, ChangeCipherSpec, then encrypted handshake records filling 3 segments.
            let sh = tls::record(0x16, 0x0303, &tls::server_hello(rng, true));
            let mut head = sh;
            head.extend_from_slice(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]);
            let flight = length_for(rng, 3, mss, 2 * mss + 1);
            let enc = flight - head.len() as u64;
            let server = Content::framed(head, Fill::TlsRecords(rng.next_u64()), enc, Vec::new());
            // Client: ChangeCipherSpec, Finished (53-byte record), first request record.
            let mut fin = vec![0x14, 0x03, 0x03, 0x00, 0x01, 0x01];
            let mut f = vec![0u8; 53 - 5];
            rng.fill_bytes(&mut f);
            fin.extend_from_slice(&tls::record(0x17, 0x0303, &f));
            let mut req = vec![0u8; rng.random_range(100..500)];
            rng.fill_bytes(&mut req);
            fin.extend_from_slice(&tls::record(0x17, 0x0303, &req));
            let len = length_for(rng, n, mss, 64);
            vec![
                (C, Content::bytes(hello)),
                (S, server),
                (C, Content::bytes(fin)),
                (
                    S,
                    Content::framed(
                        Vec::new(),
                        Fill::TlsRecords(rng.next_u64()),
                        len,
                        Vec::new(),
                    ),
                ),
            ]
        }
        GeneratedApp::Ssh => {
            let server_banner = [
                "SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n",
                "SSH-2.0-OpenSSH_8.9p1 Debian-3\r\n",
                "SSH-2.0-dropbear_2022.83\r\n",
            ][rng.random_range(0..3)];
            let client_banner = ["SSH-2.0-OpenSSH_9.6\r\n", "SSH-2.0-PuTTY_Release_0.80\r\n"]
                [rng.random_range(0..2)];
            let len = length_for(rng, n, mss, 64);
            let mut enc = vec![0u8; rng.random_range(44..120)];
            rng.fill_bytes(&mut enc);
            let mut newkeys_c = ssh_packet(rng, &[21]);
            newkeys_c.extend_from_slice(&enc);
            let mut reply = ssh_kex_reply(rng);
            reply.extend_from_slice(&ssh_packet(rng, &[21]));
            vec![
                (S, text(server_banner.to_string())),
                (C, text(client_banner.to_string())),
                (C, Content::bytes(ssh_kexinit(rng, true))),
                (S, Content::bytes(ssh_kexinit(rng, false))),
                (C, Content::bytes(ssh_ecdh_init(rng))),
                (S, Content::bytes(reply)),
                (C, Content::bytes(newkeys_c)),
                (
                    S,
                    Content::framed(Vec::new(), Fill::Random(rng.next_u64()), len, Vec::new()),
                ),
            ]
        }
        GeneratedApp::Smtp => {
            let server = format!("mail.{}-{}.example", word(rng), word(rng));
            let client = format!("{}.{}.example", word(rng), word(rng));
            let from = format!("{}@{}", word(rng), client);
            let to = format!("{}@{}", word(rng), &server[5..]);
            let id = token(rng, 10).to_uppercase();
            let head = format!(
                "From: <{from}>\r\nTo: <{to}>\r\nSubject: {} {}\r\nDate: {}\r\nMessage-ID: <{}@{client}>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n",
                word(rng),
                word(rng),
                ctx.date,
                token(rng, 16)
            );
            let tail = b"\r\n.\r\n".to_vec();
            let len = length_for(rng, n, mss, head.len() as u64 + tail.len() as u64 + LINE);
            let body = len - head.len() as u64 - tail.len() as u64;
            vec![
                (S, text(format!("220 {server} ESMTP Postfix (Ubuntu)\r\n"))),
                (C, text(format!("EHLO {client}\r\n"))),
                (
                    S,
                    text(format!(
                        "250-{server}\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250-VRFY\r\n250-ETRN\r\n250-ENHANCEDSTATUSCODES\r\n250-8BITMIME\r\n250 DSN\r\n"
                    )),
                ),
                (C, text(format!("MAIL FROM:<{from}>\r\n"))),
                (S, text("250 2.1.0 Ok\r\n".into())),
                (C, text(format!("RCPT TO:<{to}>\r\n"))),
                (S, text("250 2.1.5 Ok\r\n".into())),
                (C, text("DATA\r\n".into())),
                (S, text("354 End data with <CR><LF>.<CR><LF>\r\n".into())),
                (
                    C,
                    Content::framed(
                        head.into_bytes(),
                        Fill::MailText(rng.next_u64()),
                        body,
                        tail,
                    ),
                ),
                (S, text(format!("250 2.0.0 Ok: queued as {id}\r\n"))),
                (C, text("QUIT\r\n".into())),
                (S, text("221 2.0.0 Bye\r\n".into())),
            ]
        }
        GeneratedApp::Ftp => {
            let dir = format!("/pub/{}", word(rng));
            let head = format!("213-Status of {dir}:\r\n");
            let tail = b"213 End of status\r\n".to_vec();
            let len = length_for(rng, n, mss, head.len() as u64 + tail.len() as u64 + LINE);
            let body = len - head.len() as u64 - tail.len() as u64;
            vec![
                (S, text("220 (vsFTPd 3.0.5)\r\n".into())),
                (C, text("USER anonymous\r\n".into())),
                (S, text("331 Please specify the password.\r\n".into())),
                (C, text(format!("PASS {}@\r\n", word(rng)))),
                (S, text("230 Login successful.\r\n".into())),
                (C, text("SYST\r\n".into())),
                (S, text("215 UNIX Type: L8\r\n".into())),
                (C, text(format!("STAT {dir}\r\n"))),
                (
                    S,
                    Content::framed(head.into_bytes(), Fill::Listing(rng.next_u64()), body, tail),
                ),
                (C, text("QUIT\r\n".into())),
                (S, text("221 Goodbye.\r\n".into())),
            ]
        }
        GeneratedApp::Dns | GeneratedApp::Quic | GeneratedApp::OpaqueUdp => Vec::new(),
    }
}

fn word(rng: &mut ChaCha8Rng) -> &'static str {
    super::content::WORDS[rng.random_range(0..super::content::WORDS.len())]
}

/// An HTTP response of exactly `len` bytes: gzip-compressed HTML (one of the run's precomputed bodies, the headers
/// padded to the length) when one fits, else a binary download.
fn http_response(len: u64, rng: &mut ChaCha8Rng, ctx: &Ctx<'_>) -> Content {
    let etag = token(rng, 16);
    let base = |ctype: &str, extra: &str, body: u64, pad: usize| {
        format!(
            "HTTP/1.1 200 OK\r\nDate: {}\r\nServer: nginx/1.24.0\r\nContent-Type: {ctype}\r\n{extra}Content-Length: {body}\r\nETag: \"{etag}\"\r\nCache-Control: max-age=3600\r\nX-Request-Id: {}\r\n\r\n",
            ctx.date,
            "0".repeat(pad)
        )
    };
    // Largest gzip body that fits with the headers and at most 1,000 bytes of padding.
    let probe = base(
        "text/html; charset=utf-8",
        "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n",
        0,
        8,
    );
    let fixed = probe.len() as u64 - 8 - 1;
    let pick = ctx
        .gzip
        .iter()
        .filter(|b| {
            let body = b.len() as u64;
            let digits = body.to_string().len() as u64;
            let need = fixed + digits + body + 8;
            need <= len && len - need <= 1_000
        })
        .max_by_key(|b| b.len());
    if let Some(body) = pick {
        let blen = body.len() as u64;
        let digits = blen.to_string().len() as u64;
        let pad = (len - (fixed + digits + blen)) as usize;
        let head = base(
            "text/html; charset=utf-8",
            "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n",
            blen,
            pad,
        );
        debug_assert_eq!(head.len() as u64 + blen, len);
        return Content::framed(
            head.into_bytes(),
            Fill::Shared(Arc::clone(body)),
            blen,
            Vec::new(),
        );
    }
    // A type no dissector parses: random bytes labelled image/jpeg would be "malformed" to Wireshark.
    let ctype = "application/octet-stream";
    // Solve header + body = len, the header holding the body length's digits.
    let h0 = base(ctype, "", 0, 8).len() as u64 - 8 - 1;
    let mut body = len.saturating_sub(h0 + 1 + 8);
    for _ in 0..3 {
        let digits = body.to_string().len() as u64;
        body = len.saturating_sub(h0 + digits + 8);
    }
    let digits = body.to_string().len() as u64;
    let pad = (len - h0 - digits - body) as usize;
    let head = base(ctype, "", body, pad);
    Content::framed(
        head.into_bytes(),
        Fill::Random(rng.next_u64()),
        body,
        Vec::new(),
    )
}

/// An SSH binary packet (RFC 4253 §6) around `payload`, unencrypted, padded to a multiple of 8.
fn ssh_packet(rng: &mut ChaCha8Rng, payload: &[u8]) -> Vec<u8> {
    let mut pad = 8 - (4 + 1 + payload.len()) % 8;
    if pad < 4 {
        pad += 8;
    }
    let len = 1 + payload.len() + pad;
    let mut p = (len as u32).to_be_bytes().to_vec();
    p.push(pad as u8);
    p.extend_from_slice(payload);
    let mut padding = vec![0u8; pad];
    rng.fill_bytes(&mut padding);
    p.extend_from_slice(&padding);
    p
}

fn ssh_string(s: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s);
}

fn ssh_kexinit(rng: &mut ChaCha8Rng, client: bool) -> Vec<u8> {
    let mut p = vec![20u8];
    let mut cookie = [0u8; 16];
    rng.fill_bytes(&mut cookie);
    p.extend_from_slice(&cookie);
    let kex = if client {
        "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,diffie-hellman-group14-sha256,ext-info-c"
    } else {
        "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,diffie-hellman-group14-sha256"
    };
    let lists = [
        kex,
        "ssh-rsa,rsa-sha2-512,rsa-sha2-256,ssh-ed25519",
        "chacha20-poly1305@openssh.com,aes128-gcm@openssh.com,aes256-gcm@openssh.com,aes128-ctr",
        "chacha20-poly1305@openssh.com,aes128-gcm@openssh.com,aes256-gcm@openssh.com,aes128-ctr",
        "umac-64-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-256",
        "umac-64-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-256",
        "none,zlib@openssh.com",
        "none,zlib@openssh.com",
        "",
        "",
    ];
    for l in lists {
        ssh_string(l.as_bytes(), &mut p);
    }
    p.push(0);
    p.extend_from_slice(&[0, 0, 0, 0]);
    ssh_packet(rng, &p)
}

fn ssh_ecdh_init(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut q = [0u8; 32];
    rng.fill_bytes(&mut q);
    let mut p = vec![30u8];
    ssh_string(&q, &mut p);
    ssh_packet(rng, &p)
}

/// KEX_ECDH_REPLY with an RSA host key and an `ssh-rsa` signature (RFC 4253 §6.6). Wireshark 4.0 parses only
/// this signature type completely: for ECDSA and Ed25519 signatures it warns on every real exchange, which a
/// generated trace can avoid.
fn ssh_kex_reply(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut n = [0u8; 257];
    rng.fill_bytes(&mut n[1..]);
    n[0] = 0;
    n[1] |= 0x80;
    n[256] |= 1;
    let mut q = [0u8; 32];
    rng.fill_bytes(&mut q);
    let mut blob = Vec::new();
    ssh_string(b"ssh-rsa", &mut blob);
    ssh_string(&[0x01, 0x00, 0x01], &mut blob);
    ssh_string(&n, &mut blob);
    let mut sig = [0u8; 256];
    rng.fill_bytes(&mut sig);
    let mut sblob = Vec::new();
    ssh_string(b"ssh-rsa", &mut sblob);
    ssh_string(&sig, &mut sblob);
    let mut p = vec![31u8];
    ssh_string(&blob, &mut p);
    ssh_string(&q, &mut p);
    ssh_string(&sblob, &mut p);
    ssh_packet(rng, &p)
}

/// A UDP conversation, one datagram at a time.
pub(crate) struct UdpConv {
    app: GeneratedApp,
    total: u64,
    sent: u64,
    /// DNS: the current query's id, name and type.
    dns: Option<(u16, String, Qtype)>,
    /// QUIC: client and server connection ids and the client's original destination id.
    cids: ([u8; 8], [u8; 8], [u8; 8]),
    sni: String,
    pn: [u32; 2],
}

impl UdpConv {
    pub(crate) fn new(app: GeneratedApp, packets: u64, rng: &mut ChaCha8Rng) -> UdpConv {
        let mut cids = ([0u8; 8], [0u8; 8], [0u8; 8]);
        rng.fill_bytes(&mut cids.0);
        rng.fill_bytes(&mut cids.1);
        rng.fill_bytes(&mut cids.2);
        UdpConv {
            app,
            total: packets.max(1),
            sent: 0,
            dns: None,
            cids,
            sni: host_name(rng),
            pn: [0, 0],
        }
    }

    /// The next datagram's side and payload (into `out`), or `None` when the conversation is over.
    pub(crate) fn next(
        &mut self,
        rng: &mut ChaCha8Rng,
        pools: &Pools,
        out: &mut Vec<u8>,
    ) -> Option<Side> {
        if self.sent >= self.total {
            return None;
        }
        let i = self.sent;
        self.sent += 1;
        out.clear();
        match self.app {
            GeneratedApp::Dns => {
                if i.is_multiple_of(2) {
                    let qtype =
                        [Qtype::A, Qtype::A, Qtype::Aaaa, Qtype::Https][rng.random_range(0..4)];
                    let id: u16 = rng.random();
                    let name = host_name(rng);
                    out.extend_from_slice(&dns::query(id, &name, qtype));
                    self.dns = Some((id, name, qtype));
                    Some(Side::Client)
                } else {
                    let (id, name, qtype) =
                        self.dns
                            .take()
                            .unwrap_or((0, "example.com".into(), Qtype::A));
                    out.extend_from_slice(&dns::answer(rng, id, &name, qtype));
                    Some(Side::Server)
                }
            }
            GeneratedApp::Quic => Some(self.quic(i, rng, pools, out)),
            _ => {
                let side = if i.is_multiple_of(2) {
                    Side::Client
                } else {
                    Side::Server
                };
                let n = match side {
                    Side::Client => rng.random_range(40..300),
                    Side::Server => rng.random_range(100..1200),
                };
                out.resize(n, 0);
                pools.random_at(rng.next_u64(), out);
                // Keep the first byte away from values protocol heuristics key on (STUN, RTP versions, DNS-like
                // ids are all possible in random bytes; 0xff/0xfe start no protocol we detect).
                out[0] = 0xfe | (out[0] & 1);
                Some(side)
            }
        }
    }

    fn quic(&mut self, i: u64, rng: &mut ChaCha8Rng, pools: &Pools, out: &mut Vec<u8>) -> Side {
        let (client_cid, server_cid, odcid) = self.cids;
        match i {
            0 => {
                let ch = tls::client_hello(rng, &self.sni, &["h3"], true);
                let mut frames = Vec::new();
                quic::crypto_frame(0, &ch, &mut frames);
                let keys = quic::initial_keys(&odcid, true);
                out.extend_from_slice(&quic::initial_packet(
                    &keys,
                    &odcid,
                    &client_cid,
                    0,
                    &frames,
                    1250,
                ));
                self.pn[0] = 1;
                Side::Client
            }
            1 => {
                // Server Initial (ACK + ServerHello), then a Handshake packet we cannot encrypt meaningfully:
                // opaque bytes under a well-formed long header.
                let sh = tls::server_hello(rng, false);
                let mut frames = vec![0x02, 0x00, 0x00, 0x00, 0x00];
                quic::crypto_frame(0, &sh, &mut frames);
                let keys = quic::initial_keys(&odcid, false);
                out.extend_from_slice(&quic::initial_packet(
                    &keys,
                    &client_cid,
                    &server_cid,
                    0,
                    &frames,
                    0,
                ));
                let hs_len = rng.random_range(700..1000usize);
                out.push(0xe3);
                out.extend_from_slice(&1u32.to_be_bytes());
                out.push(8);
                out.extend_from_slice(&client_cid);
                out.push(8);
                out.extend_from_slice(&server_cid);
                out.extend_from_slice(&((hs_len as u16) | 0x4000).to_be_bytes());
                let at = out.len();
                out.resize(at + hs_len, 0);
                pools.random_at(rng.next_u64(), &mut out[at..]);
                self.pn[1] = 1;
                Side::Server
            }
            _ => {
                // 1-RTT: the server sends most of the data; the client acknowledges every third packet.
                let side = if i % 3 == 2 {
                    Side::Client
                } else {
                    Side::Server
                };
                let dcid = match side {
                    Side::Client => server_cid,
                    Side::Server => client_cid,
                };
                let n = match side {
                    Side::Client => rng.random_range(30..80),
                    Side::Server => rng.random_range(900..1350),
                };
                out.push(0x40 | (rng.random::<u8>() & 0x3f));
                out.extend_from_slice(&dcid);
                let at = out.len();
                out.resize(at + n, 0);
                pools.random_at(rng.next_u64(), &mut out[at..]);
                self.pn[side.index()] += 1;
                side
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_hits_every_target_exactly() {
        for app in GeneratedApp::ALL {
            let Some(shape) = app.shape() else { continue };
            let min = shape.min_packets();
            for target in min..min + 400 {
                for rst in [false, true] {
                    let (n, td) = shape.solve(target, rst);
                    assert_eq!(
                        shape.packets(n) + td.packets(),
                        target,
                        "{app:?} target {target}"
                    );
                }
            }
            let (n, td) = shape.solve(min - 1, false);
            assert_eq!(shape.packets(n) + td.packets(), min);
            let big = 1_000_000;
            let (n, td) = shape.solve(big, false);
            assert_eq!(shape.packets(n) + td.packets(), big);
        }
        assert_eq!(GeneratedApp::Http.min_packets(), 9);
        assert_eq!(GeneratedApp::Tls.min_packets(), 14);
    }
}
