//! TLS and DTLS: detection from the first record, and a streaming handshake parser that yields EVE `tls` events
//! (SNI, version as Suricata writes it, ALPN, JA3/JA3S, JA4, cipher suites).
//!
//! ## Detection
//! A TLS connection starts with a handshake record (`16 03 0x`) holding a ClientHello (or, picked up from the
//! reply, a ServerHello). Eleven bytes decide: record type, record version, a plausible record length, the
//! handshake type, and the ClientHello's own `03 0x` version. A shorter prefix that agrees so far is `Unsure`.
//! SSLv2-compatible ClientHellos (`80 xx 01 03 0x`) are accepted too. DTLS (UDP) is a record header with version
//! `fe ff` / `fe fd` / `fe fc` whose length fits the datagram.
//!
//! ## Parsing
//! Per direction, records are cut from the byte stream without buffering their bodies: only handshake bytes are
//! collected, and only for the messages we read (ClientHello, ServerHello, up to [`crate::Limits::tls_handshake_cap`]);
//! other handshake messages (certificates) are skipped by length. Handshake messages may span records and a
//! record may hold several messages. Once a direction sends ChangeCipherSpec or application data, the rest of it
//! is encrypted and is skipped record by record, which costs a few branches per record.
//!
//! The event is emitted once per flow: when the server side finishes its cleartext part (TLS 1.3 ServerHello,
//! ServerHelloDone, ChangeCipherSpec, application data) or at the end of the flow with whatever was seen.
//!
//! ## Layout
//! This file holds the detectors (TLS and DTLS); `hello.rs` reads Client/ServerHellos and computes the
//! fingerprints, `cert.rs` reads certificates, `event.rs` is the EVE `tls` event, `parser.rs` the per-flow record
//! and handshake state machine.

use crate::{
    AppEvent, AppProto, ByteSet, Detector, Direction, EventSink, Limits, Parser, ParserStats,
    Probe, ProbeCtx, Transport,
};

mod cert;
mod event;
mod hello;
mod parser;

pub use cert::*;
pub use event::*;
pub use hello::*;
pub use parser::*;

/// Handshake message types we read.
const HS_CLIENT_HELLO: u8 = 1;
const HS_SERVER_HELLO: u8 = 2;
const HS_SERVER_HELLO_DONE: u8 = 14;
const HS_CERTIFICATE: u8 = 11;

/// Record content types.
const CT_CCS: u8 = 20;
const CT_HANDSHAKE: u8 = 22;
const CT_APPDATA: u8 = 23;
const CT_HEARTBEAT: u8 = 24;

/// Largest record a peer may send (2^14 plus expansion allowance, RFC 8446 §5.2).
const MAX_RECORD: usize = 16384 + 2048;

/// Judges the start of a TCP stream: a TLS handshake record holding a Client/ServerHello, an SSLv2 hello, or
/// (a flow picked up mid-session) a run of well-formed records.
pub fn probe_tls(p: &[u8]) -> Probe {
    let Some(&b0) = p.first() else {
        return Probe::Unsure;
    };
    if b0 & 0x80 != 0 {
        return probe_sslv2(p);
    }
    if b0 == CT_HANDSHAKE
        && let Some(v) = probe_hello(p)
    {
        return v;
    }
    probe_records(p)
}

/// The common case: `16 03 0x LL LL  HT LL LL LL  03 0x` with HT a Client/ServerHello. `None` when the record
/// is a handshake record of another kind (left to the record walker).
fn probe_hello(p: &[u8]) -> Option<Probe> {
    for (off, ok) in [(1, 3u8), (2, 4)] {
        match p.get(off) {
            None => return Some(Probe::Unsure),
            Some(&b) if (off == 1 && b != ok) || (off == 2 && b > ok) => {
                return Some(Probe::NotForUs);
            }
            _ => {}
        }
    }
    match p.get(5) {
        None => return Some(Probe::Unsure),
        Some(&HS_CLIENT_HELLO | &HS_SERVER_HELLO) => {}
        Some(_) => return None,
    }
    let rlen = usize::from(u16::from_be_bytes([*p.get(3)?, *p.get(4)?]));
    if !(4..=MAX_RECORD).contains(&rlen) {
        return Some(Probe::NotForUs);
    }
    Some(match (p.get(9), p.get(10)) {
        (None, _) | (Some(3), None) => Probe::Unsure,
        (Some(3), Some(&m)) if m <= 4 => Probe::Certain,
        _ => Probe::NotForUs,
    })
}

/// A stream picked up mid-session: records (types 20-24, version 3.0-3.4, length within bounds) that tile the
/// prefix. One complete record followed by the end of the prefix or by another valid header is enough (five
/// bytes of structure per header, and the length must land exactly); an incomplete first record is `Unsure`.
fn probe_records(p: &[u8]) -> Probe {
    let mut off = 0usize;
    let mut complete = 0;
    loop {
        let Some(h) = p.get(off..off + 5) else {
            if off == p.len() && complete > 0 {
                return Probe::Certain;
            }
            // A partial header: check what there is.
            let part = p.get(off..).unwrap_or(&[]);
            let bad = part
                .first()
                .is_some_and(|&t| !(CT_CCS..=CT_HEARTBEAT).contains(&t))
                || part.get(1).is_some_and(|&b| b != 3)
                || part.get(2).is_some_and(|&b| b > 4);
            return if bad {
                Probe::NotForUs
            } else if complete > 0 {
                Probe::Certain
            } else {
                Probe::Unsure
            };
        };
        let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
        if !(CT_CCS..=CT_HEARTBEAT).contains(&h[0])
            || h[1] != 3
            || h[2] > 4
            || len == 0
            || len > MAX_RECORD
        {
            return Probe::NotForUs;
        }
        if complete > 0 {
            return Probe::Certain; // a complete record, then another valid header
        }
        off += 5 + len;
        if off > p.len() {
            return Probe::Unsure;
        }
        complete += 1;
    }
}

/// SSLv2 record: 2-byte length with the top bit set, then MSG-CLIENT-HELLO (1) and version 3.x or 0.2.
fn probe_sslv2(p: &[u8]) -> Probe {
    match (p.get(2), p.get(3), p.get(4)) {
        (Some(&t), ..) if t != 1 => Probe::NotForUs,
        (None, ..) | (_, None, _) | (_, _, None) => Probe::Unsure,
        (Some(1), Some(3), Some(&m)) if m <= 4 => {
            let len = usize::from(u16::from_be_bytes([p[0] & 0x7f, p[1]]));
            if (9..=MAX_RECORD).contains(&len) {
                Probe::Certain
            } else {
                Probe::NotForUs
            }
        }
        (Some(1), Some(0), Some(2)) => Probe::Certain,
        _ => Probe::NotForUs,
    }
}

/// TLS over TCP.
#[derive(Clone, Copy, Debug, Default)]
pub struct TlsDetector;

impl Detector for TlsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Tls
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        probe_tls(ctx.prefix)
    }
    fn first_bytes(&self) -> ByteSet {
        // Record types 20-24, or an SSLv2 record length with the top bit set.
        ByteSet::ranges(&[(CT_CCS, CT_HEARTBEAT), (0x80, 0xff)])
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(TlsParser::new(limits, false)))
    }
}

/// Judges one UDP datagram as DTLS: a sequence of records whose headers (type 20..=25, version fe ff/fd/fc, or
/// OpenSSL's pre-RFC `01 00`) and lengths tile the datagram exactly.
///
/// RFC 7983 multiplexes STUN (first byte 0-3), DTLS (20-63) and RTP/RTCP (128-191) on one port, and WebRTC flows
/// start with STUN: those first bytes are `Unsure`, so the DTLS that follows is still seen.
pub fn probe_dtls(d: &[u8]) -> Probe {
    match d.first() {
        Some(0..=3 | 128..=191) => return Probe::Unsure,
        Some(20..=63) => {}
        _ => return Probe::NotForUs,
    }
    let mut r = Reader::new(d);
    let mut records = 0;
    while !r.is_empty() {
        let Ok(hdr) = r.take(13) else {
            return Probe::NotForUs;
        };
        let ty = hdr[0];
        let ver = u16::from_be_bytes([hdr[1], hdr[2]]);
        if !(CT_CCS..=25).contains(&ty) || !matches!(ver, 0xfeff | 0xfefd | 0xfefc | 0x0100) {
            return Probe::NotForUs;
        }
        // The first record of a flow has epoch 0 unless we picked the flow up late; do not insist.
        let len = usize::from(u16::from_be_bytes([hdr[11], hdr[12]]));
        if len > MAX_RECORD || r.take(len).is_err() {
            return Probe::NotForUs;
        }
        records += 1;
    }
    if records > 0 {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// DTLS over UDP.
#[derive(Clone, Copy, Debug, Default)]
pub struct DtlsDetector;

impl Detector for DtlsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Dtls
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        probe_dtls(ctx.data)
    }
    fn first_bytes(&self) -> ByteSet {
        // DTLS records, and the STUN and RTP ranges it shares a port with (RFC 7983).
        ByteSet::ranges(&[(0, 3), (20, 63), (128, 191)])
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(TlsParser::new(limits, true)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn certificate_lists_and_hostile_lengths() {
        // Two certificates of 2 and 1 bytes.
        let body = [0, 0, 9, 0, 0, 2, 0xaa, 0xbb, 0, 0, 1, 0xcc];
        assert_eq!(
            certificate_list(&body),
            Some(vec![vec![0xaa, 0xbb], vec![0xcc]])
        );
        assert_eq!(certificate_list(&[0, 0, 0]), Some(vec![]));
        for bad in [
            &[][..],
            &[0, 0],
            &[0, 0, 9, 0, 0, 2, 0xaa],
            &[0, 0, 4, 0, 0, 9, 0xaa],
            &[0xff, 0xff, 0xff],
        ] {
            assert_eq!(certificate_list(bad), None, "{bad:?}");
        }
        // A leaf that is not X.509 keeps the chain and its fingerprint, and no text fields.
        let mut ev = TlsEvent::default();
        ev.set_certificates(vec![vec![1, 2, 3]]);
        assert_eq!(
            ev.fingerprint.as_deref(),
            Some("70:37:80:71:98:c2:2a:7d:2b:08:07:37:1d:76:37:79:a8:4f:df:cf")
        );
        assert_eq!((ev.subject, ev.serial), (None, None));
        assert_eq!(ev.certificates.len(), 1);
    }

    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The ClientHello of RFC 9001 Appendix A.2 (TLS 1.3, SNI example.com, ALPN "alpn"), handshake header included.
    const CLIENT_HELLO: &str = "\
        010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868\
        04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578\
        616d706c652e636f6dff01000100000a00080006001d00170018001000070005\
        04616c706e000500050100000000003300260024001d00209370b2c9caa47fba\
        baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400\
        0d0010000e0403050306030203080408050806002d00020101001c0002400100\
        3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000\
        75300901100f088394c8f03e51570806048000ffff";

    /// The ServerHello of RFC 9001 Appendix A.3 (TLS 1.3, TLS_AES_128_GCM_SHA256).
    const SERVER_HELLO: &str = "\
        020000560303eefce7f7b37ba1d1632e96677825ddf73988cfc79825df566dc5430b9a045a1200130100002e00330024001d00\
        209d3c940d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00020304";

    fn record(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut r = vec![ty, 3, 3];
        r.extend_from_slice(&(body.len() as u16).to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    fn run(conv: &[(Direction, Vec<u8>)], cuts: &[usize]) -> (Vec<AppEvent>, ParserStats) {
        let mut p = TlsParser::new(&Limits::default(), false);
        let mut out = Vec::new();
        for (dir, data) in conv {
            let mut last = 0;
            for &c in cuts {
                if c > last && c < data.len() {
                    p.parse(*dir, &data[last..c], 0, &mut out);
                    last = c;
                }
            }
            p.parse(*dir, &data[last..], 0, &mut out);
        }
        p.finish(&mut out);
        (out, p.stats())
    }

    fn tls13_conversation() -> Vec<(Direction, Vec<u8>)> {
        let ch = unhex(CLIENT_HELLO);
        // The ClientHello split over two records, as a long hello may be.
        let mut c = record(CT_HANDSHAKE, &ch[..100]);
        c.extend_from_slice(&record(CT_HANDSHAKE, &ch[100..]));
        c.extend_from_slice(&record(CT_CCS, &[1]));
        c.extend_from_slice(&record(CT_APPDATA, &[0xaa; 300]));
        let mut s = record(CT_HANDSHAKE, &unhex(SERVER_HELLO));
        s.extend_from_slice(&record(CT_CCS, &[1]));
        s.extend_from_slice(&record(CT_APPDATA, &[0xbb; 2000]));
        vec![(Direction::ToServer, c), (Direction::ToClient, s)]
    }

    #[test]
    fn parses_rfc_hellos() {
        let ch = parse_client_hello(&unhex(CLIENT_HELLO)[4..], false).unwrap();
        assert_eq!(ch.sni.as_deref(), Some("example.com"));
        assert_eq!(ch.alpn, vec!["alpn".to_string()]);
        assert_eq!(ch.ciphers, vec![0x1301, 0x1302]);
        assert_eq!(ch.supported_versions, vec![0x0304]);
        assert_eq!(ch.max_version(), 0x0304);
        assert_eq!(
            ch.ja3().string,
            "771,4865-4866,0-65281-10-16-5-51-43-13-45-28-57,29-23-24,"
        );
        let sh = parse_server_hello(&unhex(SERVER_HELLO)[4..]).unwrap();
        assert_eq!((sh.version(), sh.cipher), (0x0304, 0x1301));
        assert_eq!(sh.ja3s().string, "771,4865,51-43");
    }

    #[test]
    fn tls13_event_at_any_split() {
        let conv = tls13_conversation();
        let (whole, stats) = run(&conv, &[]);
        assert_eq!(stats, ParserStats::default());
        let [AppEvent::Tls(t)] = whole.as_slice() else {
            panic!("{whole:?}")
        };
        assert_eq!(t.sni.as_deref(), Some("example.com"));
        assert_eq!(t.version, "TLS 1.3");
        // What `tls.version` reads: the client's legacy version, the server's negotiated one.
        assert_eq!((t.client_version, t.server_version), (0x0303, 0x0304));
        assert_eq!(t.client_alpns, vec!["alpn".to_string()]);
        assert_eq!(t.server_handshake.as_ref().map(|s| s.cipher), Some(0x1301));
        assert_eq!(
            t.client_handshake.as_ref().map(|c| c.version.as_str()),
            Some("TLS 1.3")
        );
        assert!(
            t.ja4
                .as_deref()
                .is_some_and(|j| j.starts_with("t13d0211an_"))
        );
        for cut in 1..conv[1].1.len().max(conv[0].1.len()) {
            assert_eq!(run(&conv, &[cut]).0, whole, "split at {cut}");
        }
        let all: Vec<usize> = (1..2500).collect();
        assert_eq!(run(&conv, &all).0, whole);
    }

    /// The ClientHello's fields are announced as it completes, before the server answers; the event follows with
    /// the same client fields once the server's hello arrives.
    #[test]
    fn client_hello_is_announced_before_the_server_answers() {
        #[derive(Default)]
        struct Seen {
            hellos: Vec<TlsEvent>,
            events: Vec<AppEvent>,
        }
        impl EventSink for Seen {
            fn event(&mut self, event: AppEvent) {
                self.events.push(event);
            }
            fn tls_client_hello(&mut self, hello: &TlsEvent) {
                self.hellos.push(hello.clone());
            }
        }
        let conv = tls13_conversation();
        let mut p = TlsParser::new(&Limits::default(), false);
        let mut seen = Seen::default();
        p.parse(Direction::ToServer, &conv[0].1, 0, &mut seen);
        assert!(seen.events.is_empty(), "no event before the server's hello");
        let [hello] = seen.hellos.as_slice() else {
            panic!("{:?}", seen.hellos)
        };
        let hello = hello.clone();
        assert_eq!(hello.sni.as_deref(), Some("example.com"));
        assert!(hello.ja3.is_some() && hello.ja4.is_some() && hello.ja3s.is_none());
        assert_eq!((hello.client_version, hello.server_version), (0x0303, 0));
        p.parse(Direction::ToClient, &conv[1].1, 0, &mut seen);
        p.finish(&mut seen);
        let [AppEvent::Tls(t)] = seen.events.as_slice() else {
            panic!("{:?}", seen.events)
        };
        assert_eq!(
            (&t.sni, &t.ja3, &t.ja4),
            (&hello.sni, &hello.ja3, &hello.ja4)
        );
        assert_eq!(seen.hellos.len(), 1, "announced once");
    }

    #[test]
    fn several_handshake_messages_in_one_record() {
        // TLS 1.2: ServerHello, Certificate (skipped by length), ServerHelloDone in one record.
        let mut sh = unhex(SERVER_HELLO);
        // Drop the supported_versions extension: a TLS 1.2 ServerHello (extensions length 0x2e -> 0x28).
        sh.truncate(sh.len() - 6);
        sh[3] -= 6;
        let ext_len_at = sh.len() - 0x28 - 2;
        sh[ext_len_at + 1] = 0x28;
        let mut rec = sh.clone();
        rec.extend_from_slice(&[11, 0, 0, 7, 0, 0, 4, 0, 0, 1, 0x30]);
        rec.extend_from_slice(&[HS_SERVER_HELLO_DONE, 0, 0, 0]);
        let ch = record(CT_HANDSHAKE, &unhex(CLIENT_HELLO));
        let conv = vec![
            (Direction::ToServer, ch),
            (Direction::ToClient, record(CT_HANDSHAKE, &rec)),
        ];
        let (ev, stats) = run(&conv, &[]);
        assert_eq!(stats, ParserStats::default());
        let [AppEvent::Tls(t)] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert_eq!(t.version, "TLS 1.2");
        assert_eq!(
            t.ja3s.as_ref().map(|j| j.string.as_str()),
            Some("771,4865,51")
        );
    }

    #[test]
    fn detection() {
        let ch = record(CT_HANDSHAKE, &unhex(CLIENT_HELLO));
        assert_eq!(probe_tls(&ch), Probe::Certain);
        for n in 0..11 {
            assert_eq!(probe_tls(&ch[..n]), Probe::Unsure, "{n} bytes");
        }
        // Mid-session: application data records.
        let mut mid = record(CT_APPDATA, &[1; 40]);
        assert_eq!(probe_tls(&mid[..20]), Probe::Unsure);
        assert_eq!(probe_tls(&mid), Probe::Certain);
        mid.extend_from_slice(&[CT_APPDATA, 3]);
        assert_eq!(probe_tls(&mid), Probe::Certain);
        assert_eq!(probe_tls(b"GET / HTTP/1.1\r\n"), Probe::NotForUs);
        assert_eq!(probe_tls(&[0x17, 0x03, 0x03, 0x00, 0x00]), Probe::NotForUs);
        assert_eq!(probe_tls(&[0x16, 0x03, 0x09]), Probe::NotForUs);
        // SSLv2-compatible ClientHello.
        assert_eq!(
            probe_tls(&[0x80, 0x2e, 0x01, 0x03, 0x01, 0x00, 0x15]),
            Probe::Certain
        );
    }

    #[test]
    fn dtls_client_hello() {
        let ch = unhex(CLIENT_HELLO);
        // DTLS body: version, random, session id, cookie (empty), then the rest.
        let mut body = vec![0xfe, 0xfd];
        body.extend_from_slice(&ch[6..6 + 33]);
        body.push(0);
        body.extend_from_slice(&ch[6 + 33..]);
        let mut hs = vec![HS_CLIENT_HELLO];
        hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&[0, 0, 0, 0, 0]);
        hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&body);
        let mut dg = vec![CT_HANDSHAKE, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0];
        dg.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        dg.extend_from_slice(&hs);
        assert_eq!(probe_dtls(&dg), Probe::Certain);
        assert_eq!(probe_dtls(&dg[..dg.len() - 1]), Probe::NotForUs);
        assert_eq!(
            probe_dtls(&[0x00, 0x01, 0x00, 0x08, 0x21, 0x12, 0xa4, 0x42]),
            Probe::Unsure,
            "STUN first"
        );
        let mut p = TlsParser::new(&Limits::default(), true);
        let mut out = Vec::new();
        p.parse(Direction::ToServer, &dg, 0, &mut out);
        p.finish(&mut out);
        let [AppEvent::Tls(t)] = out.as_slice() else {
            panic!("{out:?}")
        };
        assert_eq!(t.sni.as_deref(), Some("example.com"));
        assert!(t.ja4.as_deref().is_some_and(|j| j.starts_with('d')));
    }

    #[test]
    fn oversized_hello_is_cut_and_counted() {
        let limits = Limits {
            tls_handshake_cap: 100,
            ..Limits::default()
        };
        let mut p = TlsParser::new(&limits, false);
        let mut out = Vec::new();
        p.parse(
            Direction::ToServer,
            &record(CT_HANDSHAKE, &unhex(CLIENT_HELLO)),
            0,
            &mut out,
        );
        p.finish(&mut out);
        assert!(out.is_empty());
        assert_eq!(p.stats().bytes_cut, 0xed);
    }

    #[test]
    fn grease_and_versions() {
        assert!(is_grease(0x0a0a) && is_grease(0xfafa) && !is_grease(0x0a1a) && !is_grease(0x1301));
        assert_eq!(version_name(0x0303), "TLS 1.2");
        assert_eq!(version_name(0x0301), "TLSv1");
        assert_eq!(version_name(0x1234), "UNDETERMINED");
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn arbitrary_bytes_never_panic(a in proptest::collection::vec(any::<u8>(), 0..800),
                                           b in proptest::collection::vec(any::<u8>(), 0..800),
                                           cuts in proptest::collection::vec(0usize..800, 0..6)) {
                let _ = (probe_tls(&a), probe_dtls(&a));
                let _ = parse_client_hello(&a, false);
                let _ = parse_client_hello(&a, true);
                let _ = parse_server_hello(&a);
                let mut cuts = cuts;
                cuts.sort_unstable();
                let _ = run(&[(Direction::ToServer, a.clone()), (Direction::ToClient, b)], &cuts);
                let mut p = TlsParser::new(&Limits::default(), true);
                p.parse(Direction::ToServer, &a, 0, &mut Vec::new());
            }

            #[test]
            fn mutated_hello_never_panics(pos in 0usize..260, byte in any::<u8>()) {
                let mut ch = unhex(CLIENT_HELLO);
                let n = ch.len();
                ch[pos % n] = byte;
                let _ = parse_client_hello(&ch[4..], false).map(|c| (c.ja3(), c.ja4('t')));
                let _ = run(&[(Direction::ToServer, record(CT_HANDSHAKE, &ch))], &[]);
            }

            #[test]
            fn any_splits_same_event(cuts in proptest::collection::vec(0usize..2400, 0..10)) {
                let conv = tls13_conversation();
                let mut cuts = cuts;
                cuts.sort_unstable();
                prop_assert_eq!(run(&conv, &cuts).0, run(&conv, &[]).0);
            }
        }
    }
}
