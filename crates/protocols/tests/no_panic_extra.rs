//! Property tests for the extra detectors and parsers: arbitrary bytes, in any split, never panic, and the
//! answers are consistent (a detector that is certain names its own protocol; parsers keep their caps).

use flowbundle_protocols::{AppEvent, AppProto, Direction, Limits, Parser, ProbeCtx, Transport};
use proptest::prelude::*;

/// Every built-in detector but the core ones (HTTP, TLS, QUIC, DNS), which their own tests cover.
fn extra_detectors() -> Vec<Box<dyn flowbundle_protocols::Detector>> {
    flowbundle_protocols::registry::builtin_detectors_by_module()
        .into_iter()
        .filter(|(m, _)| !["http", "tls", "quic", "dns"].contains(m))
        .map(|(_, d)| d)
        .collect()
}

fn dir(b: bool) -> Direction {
    if b {
        Direction::ToServer
    } else {
        Direction::ToClient
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    /// Every detector answers on any payload, prefix, previous datagram and ports.
    #[test]
    fn detectors_never_panic(
        data in proptest::collection::vec(any::<u8>(), 0..600),
        extra in proptest::collection::vec(any::<u8>(), 0..64),
        prev in proptest::collection::vec(any::<u8>(), 0..128),
        udp: bool, to_server: bool, cport: u16, sport: u16, pidx in 0u32..30, didx in 0u32..15,
    ) {
        let mut prefix = extra.clone();
        prefix.extend_from_slice(&data);
        let transport = if udp { Transport::Udp } else { Transport::Tcp };
        let ctx = ProbeCtx {
            transport,
            client_port: cport,
            server_port: sport,
            dir: dir(to_server),
            payload_index: pidx.max(didx),
            dir_index: didx,
            prefix: if udp { &data } else { &prefix },
            data: &data,
            prev: if udp { &prev } else { &[] },
            peer: &extra,
        };
        for d in extra_detectors() {
            if d.transports().contains(&transport) {
                let _ = d.probe(&ctx);
            }
        }
    }

    /// Detectors also survive payloads that start like their protocol: a known magic followed by noise.
    #[test]
    fn detectors_never_panic_on_near_misses(
        magic in prop::sample::select(vec![
            &b"SSH-2.0-"[..], b"220 ", b"+OK ", b"* OK ", b"\x00\x00\x00\x40\xfeSMB", b"\x81\x00\x00\x44 ",
            b"\x13BitTorrent protocol", b"d1:ad2:id20:", b"\x10\x20\x00\x04MQTT", b"\x03\x00\x00\x13\x0e\xe0",
            b"*3\r\n$3\r\n", b"\x00\x00\x00\x08\x04\xd2\x16\x2f", b"\x12\x01\x00\x2f\x00\x00\x01\x00", b"INVITE sip:",
            b"\x80\x00", b"\x81\xc8", b"\x00\x01\x00\x00\x21\x12\xa4\x42", b"GND", b"GNUTELLA CONNECT/0.6",
            b"M-SEARCH * HTTP/1.1", b"<34>", b"ZBXD\x01", b"\x05\x64", b"\x81\x0b", b"<?xml version='1.0'?>",
            b"\x38", b"\x01\x00\x00\x00", b"\x6a\x81", b"\x02\x01\x00",
        ]),
        tail in proptest::collection::vec(any::<u8>(), 0..300),
        udp: bool, to_server: bool, sport: u16, pidx in 0u32..12,
    ) {
        let mut data = magic.to_vec();
        data.extend_from_slice(&tail);
        let transport = if udp { Transport::Udp } else { Transport::Tcp };
        let ctx = ProbeCtx {
            transport, client_port: 40000, server_port: sport, dir: dir(to_server), payload_index: pidx,
            dir_index: pidx / 2, prefix: &data, data: &data, prev: if udp { &data } else { &[] }, peer: &data,
        };
        for d in extra_detectors() {
            if d.transports().contains(&transport) {
                let _ = d.probe(&ctx);
            }
        }
    }

    /// The stateful parsers (SSH, FTP) accept any chunks in any direction, with gaps, and emit bounded events.
    #[test]
    fn parsers_never_panic(
        chunks in proptest::collection::vec((any::<bool>(), proptest::collection::vec(any::<u8>(), 0..700), any::<bool>()), 0..12),
    ) {
        let limits = Limits::default();
        let mut parsers: Vec<(AppProto, Box<dyn Parser>)> = Vec::new();
        for d in extra_detectors() {
            if let Some(p) = d.parser(Transport::Tcp, &limits) {
                parsers.push((d.proto(), p));
            }
        }
        for (proto, p) in parsers.iter_mut() {
            let mut out: Vec<AppEvent> = Vec::new();
            for (i, (to_server, data, gap)) in chunks.iter().enumerate() {
                p.parse(dir(*to_server), data, i as u64, &mut out);
                if *gap {
                    p.gap(dir(*to_server), 100);
                }
            }
            p.finish(&mut out);
            // At most one event per line (FTP) or one in all (SSH): never more events than newlines + 1; DCE/RPC
            // one transaction record per PDU, each at least its 16-byte header; SMB a few per message.
            let newlines: usize = chunks.iter().map(|c| c.1.iter().filter(|&&b| b == b'\n').count()).sum();
            let bytes = chunks.iter().map(|c| c.1.len()).sum::<usize>();
            let pdus = match proto {
                AppProto::Dcerpc => bytes / 16,
                // SMB: at most 16 transaction records per message (an SMB1 AndX chain of 8 commands), a message at
                // least its 4-byte frame and 32-byte header.
                AppProto::Smb | AppProto::Smbv1 => bytes * 16 / 36,
                _ => 0,
            };
            prop_assert!(out.len() <= newlines + pdus + 1);
        }
    }

    /// FTP: a PORT command built from any address and port round-trips into the expectation.
    #[test]
    fn ftp_port_round_trip(a: u8, b: u8, c: u8, d: u8, port in 1u16..) {
        let cmd = format!("PORT {a},{b},{c},{d},{},{}\r\n", port >> 8, port & 0xff);
        let mut p = flowbundle_protocols::ftp::FtpParser::default();
        let mut out: Vec<AppEvent> = Vec::new();
        p.parse(Direction::ToServer, cmd.as_bytes(), 0, &mut out);
        // The transaction waits for its reply; the flow's end emits it unanswered.
        prop_assert!(out.is_empty());
        p.finish(&mut out);
        prop_assert_eq!(out.len(), 1);
        let AppEvent::Ftp(e) = &out[0] else { panic!("not an ftp event") };
        prop_assert_eq!(e.dynamic_port, Some(port));
        prop_assert_eq!(e.reply_received, "no");
        let ann = e.announced.expect("announced");
        prop_assert_eq!(ann.channel.expected_ip, Some(std::net::IpAddr::from([a, b, c, d])));
    }
}

/// kerberos-error.pcap's AS-REQ and KRB-ERROR (nDPI's test suite), as in the parser's unit tests.
const KRB_AS_REQ: &str = "6a82011b30820117a103020105a20302010aa35830563048a103020102a241043f303da003020117a2360434b60e0b505f98104206f62503b8e0e7c82d842e6f01e5c7f0e1540d1ea4c7e89181e69691e0c41d775649bd7fa5ac4b1874a91915300aa10402020095a2020400a481b03081ada00703050000810000a11f301da003020101a11630141b04686f73741b0c6d75732d6e2d636a30373039a2111b0f4c494e55582e5348454c4c2e434f4da3243022a003020102a11b30191b066b72627467741b0f4c494e55582e5348454c4c2e434f4da511180f32303232303232333037343630335aa611180f32303232303330343037343630335aa706020447a1fa99a81a301802011702011202011102011402011302011002011902011a";
const KRB_ERROR: &str = "7e643062a003020105a10302011ea411180f32303232303232323037343630345aa50502030ec26da603020134a9111b0f4c494e55582e5348454c4c2e434f4daa243022a003020102a11b30191b066b72627467741b0f4c494e55582e5348454c4c2e434f4d";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn krb5_events(transport: Transport, chunks: &[(bool, &[u8])]) -> Vec<AppEvent> {
    use flowbundle_protocols::Detector as _;
    let mut p = flowbundle_protocols::kerberos::KerberosDetector
        .parser(transport, &Limits::default())
        .expect("a parser");
    let mut out: Vec<AppEvent> = Vec::new();
    for (to_server, d) in chunks {
        p.parse(dir(*to_server), d, 0, &mut out);
    }
    p.finish(&mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, .. ProptestConfig::default() })]

    /// Kerberos: a real message with bytes changed, cut or extended never panics the reader or the parser; one
    /// datagram gives at most one event.
    #[test]
    fn krb5_mutated_messages(
        which: bool,
        edits in proptest::collection::vec((any::<u16>(), any::<u8>()), 0..8),
        cut in any::<u16>(),
        tail in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        let mut m = unhex(if which { KRB_AS_REQ } else { KRB_ERROR });
        for (at, b) in edits {
            let i = usize::from(at) % m.len();
            m[i] = b;
        }
        m.truncate(usize::from(cut) % (m.len() + 1));
        m.extend_from_slice(&tail);
        let _ = flowbundle_protocols::kerberos::message::parse(&m);
        prop_assert!(krb5_events(Transport::Udp, &[(true, &m)]).len() <= 1);
    }

    /// Kerberos over TCP: the real messages as records, cut anywhere, give the events they give over UDP.
    #[test]
    fn krb5_tcp_records_equal_datagrams(cuts in proptest::collection::vec(any::<u16>(), 0..6)) {
        let req = unhex(KRB_AS_REQ);
        let err = unhex(KRB_ERROR);
        let mut stream = Vec::new();
        for m in [&req, &err, &req] {
            stream.extend_from_slice(&(m.len() as u32).to_be_bytes());
            stream.extend_from_slice(m);
        }
        let mut at: Vec<usize> = cuts.iter().map(|c| usize::from(*c) % stream.len()).collect();
        at.push(0);
        at.push(stream.len());
        at.sort_unstable();
        let chunks: Vec<(bool, &[u8])> = at.windows(2).map(|w| (true, &stream[w[0]..w[1]])).collect();
        let tcp = krb5_events(Transport::Tcp, &chunks);
        let udp = krb5_events(Transport::Udp, &[(true, &req), (true, &err), (true, &req)]);
        prop_assert_eq!(tcp.len(), 3);
        prop_assert_eq!(tcp, udp);
    }
}

/// An INVITE with a session description (compact header names) and its answer, as in the SIP parser's tests.
fn sip_messages() -> [Vec<u8>; 2] {
    let sdp: &[u8] = b"v=0\r\no=SIPPS 105015165 105015162 IN IP4 192.168.1.2\r\ns=SIP call\r\nc=IN IP4 192.168.1.2\r\n\
t=0 0\r\nm=audio 30000 RTP/AVP 0 8\r\na=rtpmap:0 pcmu/8000\r\n";
    let head = |first: &str| {
        format!(
            "{first}\r\nv: SIP/2.0/UDP 10.0.0.1:5060\r\nf: <sip:a@b>;tag=1\r\nt: <sip:c@d>\r\n\
c: application/sdp\r\nl: {}\r\n\r\n",
            sdp.len()
        )
        .into_bytes()
    };
    let mut invite = head("INVITE sip:c@d SIP/2.0");
    invite.extend_from_slice(sdp);
    let mut ok = head("SIP/2.0 200 OK");
    ok.extend_from_slice(sdp);
    [invite, ok]
}

fn sip_events(transport: Transport, chunks: &[(bool, &[u8])]) -> Vec<AppEvent> {
    use flowbundle_protocols::Detector as _;
    let mut p = flowbundle_protocols::sip::SipDetector
        .parser(transport, &Limits::default())
        .expect("a parser");
    let mut out: Vec<AppEvent> = Vec::new();
    for (to_server, d) in chunks {
        p.parse(dir(*to_server), d, 0, &mut out);
    }
    p.finish(&mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, .. ProptestConfig::default() })]

    /// SIP: a real message with bytes changed, cut or extended never panics the head reader, the SDP reader or the
    /// parser; one datagram gives at most one event, and a TCP stream at most one per header block.
    #[test]
    fn sip_mutated_messages(
        which: bool,
        edits in proptest::collection::vec((any::<u16>(), any::<u8>()), 0..8),
        cut in any::<u16>(),
        tail in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let [invite, ok] = sip_messages();
        let mut m = if which { invite } else { ok };
        for (at, b) in edits {
            let i = usize::from(at) % m.len();
            m[i] = b;
        }
        m.truncate(usize::from(cut) % (m.len() + 1));
        m.extend_from_slice(&tail);
        let _ = flowbundle_protocols::sip::message::parse_head(&m);
        let _ = flowbundle_protocols::sip::sdp::parse(&m);
        prop_assert!(sip_events(Transport::Udp, &[(which, &m)]).len() <= 1);
        let tcp = sip_events(Transport::Tcp, &[(which, &m), (which, &m)]);
        // The shortest message (`A a SIP/2\n\n`) is 11 bytes.
        prop_assert!(tcp.len() <= 2 * m.len() / 11 + 2);
    }

    /// SIP over TCP: the real messages, framed by their `Content-Length` and cut anywhere, give the events they
    /// give as datagrams.
    #[test]
    fn sip_tcp_stream_equals_datagrams(cuts in proptest::collection::vec(any::<u16>(), 0..6)) {
        let [invite, ok] = sip_messages();
        let mut stream = invite.clone();
        stream.extend_from_slice(b"\r\n\r\n");
        stream.extend_from_slice(&invite);
        let mut at: Vec<usize> = cuts.iter().map(|c| usize::from(*c) % stream.len()).collect();
        at.push(0);
        at.push(stream.len());
        at.sort_unstable();
        let mut chunks: Vec<(bool, &[u8])> =
            at.windows(2).map(|w| (true, &stream[w[0]..w[1]])).collect();
        chunks.insert(chunks.len() / 2, (false, &ok));
        let tcp = sip_events(Transport::Tcp, &chunks);
        let udp = sip_events(Transport::Udp, &[(true, &invite), (false, &ok), (true, &invite)]);
        prop_assert_eq!(tcp.len(), 3);
        // The answer may arrive between the requests or before the first ends: compare as sets of messages.
        let key = |e: &AppEvent| match e {
            AppEvent::Sip(s) => (s.to_server, serde_json::to_string(s).unwrap_or_default()),
            _ => (false, String::new()),
        };
        let mut t: Vec<_> = tcp.iter().map(key).collect();
        let mut u: Vec<_> = udp.iter().map(key).collect();
        t.sort();
        u.sort();
        prop_assert_eq!(t, u);
    }
}
