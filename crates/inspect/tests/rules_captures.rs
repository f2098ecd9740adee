//! Content rules through the engine on real captures: matches that straddle TCP segments, and matches
//! inside gzip-compressed HTTP response bodies. The rules are small strings written for these captures; each test
//! has a negative control showing that the match needs what it claims to need (stream reassembly, decompression).
//! The engine is run as `flowbundle inspect --rules` runs it single-threaded (reader, prestage, engine, finish).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use flowbundle_ingest::CaptureReader;
use flowbundle_inspect::rules::{RuleSet, Vars};
use flowbundle_inspect::{Engine, EngineConfig, EventKind};

/// Runs `pcap` through the engine with `rules` (which must all load) and counts alerts per signature id.
fn alerts(pcap: &Path, rules: &str) -> BTreeMap<u32, u64> {
    alerts_with(pcap, rules, EngineConfig::default())
}

fn alerts_with(pcap: &Path, rules: &str, cfg: EngineConfig) -> BTreeMap<u32, u64> {
    let (set, report) = RuleSet::parse(rules, &Vars::suricata_defaults()).expect("rules parse");
    assert_eq!(report.loaded, report.rules_read, "{}", report.summary());
    let mut engine = Engine::new(cfg, None, Some(set));
    let f = common::run_serial(&mut engine, &[pcap.to_path_buf()]);
    let mut out = BTreeMap::new();
    for e in &f.events {
        if let EventKind::Alert(a) = &e.kind {
            *out.entry(a.signature_id).or_insert(0) += 1;
        }
    }
    out
}

/// True when some captured packet holds `needle` whole.
fn any_packet_contains(pcap: &Path, needle: &[u8]) -> bool {
    let mut r = CaptureReader::open(pcap).expect("open");
    while let Ok(Some(rec)) = r.next_packet() {
        if rec.data.windows(needle.len()).any(|w| w == needle) {
            return true;
        }
    }
    false
}

/// `one_http_stream_fin.pcap`: a 3,549-byte HTTP response in four segments (stream offsets 0, 1380, 1701, 3081).
/// Each rule's content is unique in the response and crosses one segment boundary.
#[test]
fn matches_straddling_tcp_segments() {
    let Some(p) = flowbundle_testsupport::data("reassembly/one_http_stream_fin.pcap") else {
        return;
    };
    let straddling: [&[u8]; 3] = [
        b"7)\r\nbin(u7iavi",
        b"q.bin)grp(ichjw:4)dep(ic",
        b"\nbin(x8xplsb_98k",
    ];
    for s in straddling {
        assert!(
            !any_packet_contains(&p, s),
            "{:?} must not sit whole in one packet",
            String::from_utf8_lossy(s)
        );
    }
    let rules = r#"
alert tcp any 80 -> any any (msg:"straddles 1380"; flow:to_client; content:"7)|0d 0a|bin(u7iavi"; sid:1;)
alert tcp any 80 -> any any (msg:"straddles 1701"; flow:to_client,established; content:"q.bin)grp(ichjw:4)dep(ic"; sid:2;)
alert tcp any 80 -> any any (msg:"straddles 3081, relative"; flow:to_client; content:"|0a|bin(x8"; content:"plsb_98k"; distance:1; within:8; sid:3;)
alert tcp-pkt any 80 -> any any (msg:"packet-only inspection cannot see it"; content:"7)|0d 0a|bin(u7iavi"; sid:4;)
alert tcp any 80 -> any any (msg:"wrong direction"; flow:to_server; content:"7)|0d 0a|bin(u7iavi"; sid:5;)
"#;
    let got = alerts(&p, rules);
    assert_eq!(got.get(&1), Some(&1), "{got:?}");
    assert_eq!(got.get(&2), Some(&1), "{got:?}");
    assert_eq!(got.get(&3), Some(&1), "{got:?}");
    assert_eq!(got.get(&4), None, "{got:?}");
    assert_eq!(got.get(&5), None, "{got:?}");
}

/// nDPI's `xss.pcap` and `sql_injection.pcap`: DVWA pages served with `Content-Encoding: gzip`. The page titles are
/// found in the decompressed response body (`file_data`, `http.response_body`), never in the raw stream.
#[test]
fn matches_inside_gzip_http_bodies() {
    for (pcap, title) in [
        (
            "ndpi/pcap/xss.pcap",
            "Vulnerability: DOM Based Cross Site Scripting (XSS)",
        ),
        (
            "ndpi/pcap/sql_injection.pcap",
            "Vulnerability: SQL Injection",
        ),
    ] {
        let Some(p) = flowbundle_testsupport::data(pcap) else {
            return;
        };
        assert!(
            !any_packet_contains(&p, title.as_bytes()),
            "{pcap}: the title must be compressed on the wire"
        );
        let rules = format!(
            r#"
alert http any any -> any any (msg:"title in file_data"; flow:to_client; file_data; content:"{title}"; sid:10;)
alert http any any -> any any (msg:"title in response body"; http.response_body; content:"{title}"; content:"Damn Vulnerable Web Application"; distance:0; within:40; sid:11;)
alert tcp any any -> any any (msg:"raw stream holds only gzip"; content:"{title}"; sid:12;)
alert http any any -> any any (msg:"request body has no title"; http.request_body; content:"{title}"; sid:13;)
"#
        );
        let got = alerts(&p, &rules);
        assert_eq!(got.get(&10), Some(&1), "{pcap}: {got:?}");
        assert_eq!(got.get(&11), Some(&1), "{pcap}: {got:?}");
        assert_eq!(got.get(&12), None, "{pcap}: {got:?}");
        assert_eq!(got.get(&13), None, "{pcap}: {got:?}");
    }
}

/// suricata-verify's `no-3whs.pcap`: a client's data segment with no handshake, an RST, a retransmission, an RST.
/// Picked up mid-stream, the connection is `flow:established` only when [`EngineConfig::midstream`] says mid-stream
/// pickups count (Suricata's `stream.midstream`, off by default there); content without `established` matches
/// either way: once on the stream when pickups count, and on each data packet (the retransmission too) when they
/// do not, as no stream then takes the data.
#[test]
fn established_after_a_midstream_pickup_follows_the_midstream_setting() {
    let Some(p) =
        flowbundle_testsupport::data("suricata-verify/alert-no-3whs-established/no-3whs.pcap")
    else {
        return;
    };
    let rules = r#"
alert tcp any any -> any 1212 (msg:"established"; flow:to_server,established; content:"MATCH?"; sid:1;)
alert tcp any any -> any 1212 (msg:"any state"; flow:to_server; content:"MATCH?"; sid:2;)
"#;
    let on = alerts(&p, rules);
    assert_eq!((on.get(&1), on.get(&2)), (Some(&1), Some(&1)), "{on:?}");
    let off = alerts_with(
        &p,
        rules,
        EngineConfig {
            midstream: false,
            ..EngineConfig::default()
        },
    );
    assert_eq!((off.get(&1), off.get(&2)), (None, Some(&2)), "{off:?}");
}

/// suricata-verify's `krb5-frag.pcap` (four TCP connections from 192.168.51.206, each with a full handshake): a
/// header-only `flow:established` rule fires on the client's packets after the handshake's last ACK, not on that
/// ACK itself (Suricata marks a packet established from the flow's state before it): 17 packets, where counting the
/// four handshake ACKs would give 21 (suricata-verify `like-ip-only-01`).
#[test]
fn handshake_last_ack_is_not_yet_established() {
    let Some(p) = flowbundle_testsupport::data("suricata-verify/like-ip-only-01/krb5-frag.pcap")
    else {
        return;
    };
    let got = alerts(
        &p,
        r#"alert tcp 192.168.51.206 any -> !192.168.51.206 any (flow:established; sid:1;)"#,
    );
    assert_eq!(got.get(&1), Some(&17), "{got:?}");
}

/// suricata-verify's `app-layer-protocol-prefilter` capture: a TLS connection whose ClientHello identifies it and
/// whose server only ACKs, an HTTP connection, a DNS exchange. `app-layer-protocol:tls` alone (Suricata's PD-only
/// type) matches once, on the ClientHello: the packet that identifies the flow already sees its protocol, and a
/// direction without payload never completes detection.
#[test]
fn app_layer_protocol_alone_matches_on_the_identifying_packet() {
    let Some(p) =
        flowbundle_testsupport::data("suricata-verify/app-layer-protocol-prefilter/input.pcap")
    else {
        return;
    };
    let got = alerts(
        &p,
        r#"alert tcp any any -> any any (app-layer-protocol:tls; sid:1;)
alert tcp any any -> any any (app-layer-protocol:http; sid:2;)
alert tcp any any -> any any (app-layer-protocol:tls; flow:to_server; sid:3;)"#,
    );
    // sid 2: the request and the response each complete detection in their direction.
    // sid 3 (not PD-only: it has `flow`): every to-server packet from the ClientHello on (ClientHello, FIN, ACK).
    assert_eq!(
        (got.get(&1), got.get(&2), got.get(&3)),
        (Some(&1), Some(&2), Some(&3)),
        "{got:?}"
    );
}

/// A rule header naming an application protocol matches flows of that protocol under Suricata's `app_proto` name:
/// `dcerpc`, `pgsql` and `enip` flows (nDPI's DCERPC, PostgreSQL and EthernetIP captures) each fire their own rule and
/// not the others'.
#[test]
fn rule_headers_name_protocols_as_suricata_does() {
    let rules = r#"alert dcerpc any any -> any any (msg:"dcerpc"; sid:1;)
alert pgsql any any -> any any (msg:"pgsql"; sid:2;)
alert enip any any -> any any (msg:"enip"; sid:3;)"#;
    for (rel, sid) in [
        ("ndpi/pcap/dcerpc.pcap", 1u32),
        ("ndpi/pcap/pgsql.pcap", 2),
        ("ndpi/pcap/ethernetIP.pcap", 3),
    ] {
        let Some(p) = flowbundle_testsupport::data(rel) else {
            return;
        };
        let got = alerts(&p, rules);
        assert!(
            got.contains_key(&sid),
            "{rel}: sid {sid} did not fire: {got:?}"
        );
        assert_eq!(
            got.len(),
            1,
            "{rel}: only its own protocol's rule fires: {got:?}"
        );
    }
}

/// The sticky buffers the engine fills from DNS and TLS events, on captures: `dns.query` (and its legacy name and
/// `dotprefix`), `tls.sni`, `ja3.hash`, and the server certificate's subject, serial, fingerprint and DER. Each has a
/// negative control with a value the capture does not carry.
#[test]
fn dns_and_tls_sticky_buffers_on_captures() {
    if let Some(p) = flowbundle_testsupport::data("ndpi/pcap/dns.pcap") {
        let got = alerts(
            &p,
            r#"alert dns any any -> any any (dns.query; content:"www.example.com"; bsize:15; sid:1;)
alert udp any any -> any any (dns_query; dotprefix; content:".example.com"; endswith; sid:2;)
alert dns any any -> any any (dns.query; content:"www.example.org"; sid:3;)"#,
        );
        assert_eq!(got, BTreeMap::from([(1, 1), (2, 1)]));
    }
    if let Some(p) = flowbundle_testsupport::data("ndpi/pcap/tls-rdn-extract.pcap") {
        let got = alerts(
            &p,
            r#"alert tls any any -> any any (flow:to_server; tls.sni; content:"ads1.msads.net"; bsize:14; sid:1;)
alert tls any any -> any any (ja3.hash; content:"2201d8e006f8f005a6b415f61e677532"; sid:2;)
alert tls any any -> any any (flow:to_client; tls.cert_subject; content:"O=Microsoft, OU=GFS"; sid:3;)
alert tls any any -> any any (tls.certs; content:"Redmond"; sid:4;)
alert tls any any -> any any (tls.sni; content:"example.org"; sid:5;)
alert tls any any -> any any (tls.cert_subject; content:"O=Google"; sid:6;)"#,
        );
        assert_eq!(got.get(&1), Some(&1));
        assert_eq!(got.get(&2), Some(&1));
        assert_eq!(got.get(&3), Some(&1));
        assert_eq!(
            got.get(&4),
            Some(&1),
            "one alert for the chain, not one per certificate"
        );
        assert_eq!(got.get(&5), None);
        assert_eq!(got.get(&6), None);
    }
    // Suricata-verify's SSLv2-upgrade capture: the serial and fingerprint as Suricata writes them.
    if let Some(p) =
        flowbundle_testsupport::data("suricata-verify/sslv2-tls-upgrade-01/ssl-v2-s1.pcap")
    {
        let got = alerts(
            &p,
            r#"alert tls any any -> any any (tls.cert_serial; content:"55"; bsize:2; sid:1;)
alert tls any any -> any any (tls.cert_fingerprint; content:"8c:90:bd:2a:b3:ae:e6:0b"; startswith; sid:2;)
alert tls any any -> any any (tls.cert_issuer; content:"O=OneSecure, Inc., OU=Fulfillment"; sid:3;)
alert tls any any -> any any (tls.cert_serial; content:"56"; sid:4;)"#,
        );
        assert_eq!(got.get(&1), Some(&1));
        assert_eq!(got.get(&2), Some(&1));
        assert_eq!(got.get(&3), Some(&1));
        assert_eq!(got.get(&4), None);
    }
}

/// HTTP/2 with prior knowledge (suricata-verify's `http2-authority-mismatch` capture: a GET with `:authority`
/// example.com and a `host` header foo.com, answered 403 with an HTML body): the stream fills HTTP/1's buffers,
/// `alert http` and `alert http2` rules see them, `alert http1` rules do not, and `file.data` is the DATA frames'
/// body. Each buffer has a negative control.
#[test]
fn http2_streams_fill_the_http_buffers() {
    let Some(p) = flowbundle_testsupport::data(
        "suricata-verify/http2-authority-mismatch/authority_and_host_2.pcap",
    ) else {
        return;
    };
    let got = alerts(
        &p,
        r#"alert http2 any any -> any any (http.method; content:"GET"; bsize:3; sid:1;)
alert http any any -> any any (http.host; content:"example.com"; bsize:11; sid:2;)
alert http1 any any -> any any (http.method; content:"GET"; sid:3;)
alert http2 any any -> any any (http.stat_code; content:"403"; sid:4;)
alert http2 any any -> any any (file.data; content:"403 Forbidden"; sid:5;)
alert http2 any any -> any any (http.user_agent; content:"Scapy HTTP/2"; startswith; sid:6;)
alert http2 any any -> any any (flow:to_server; http.header; content:"accept-language: fr-FR|0d 0a|"; sid:7;)
alert http2 any any -> any any (http.uri; content:"/"; bsize:1; sid:8;)
alert http2 any any -> any any (http.uri; content:"/admin"; sid:9;)
alert http2 any any -> any any (http.response_body; content:"cloudflare"; sid:10;)
alert http2 any any -> any any (http.stat_code; content:"200"; sid:11;)
alert http2 any any -> any any (http.request_line; content:"GET / HTTP/2|0d 0a|"; bsize:14; sid:12;)
alert http any any -> any any (http.header_names; content:"|0d 0a|accept-encoding|0d 0a|"; sid:13;)"#,
    );
    assert_eq!(
        got,
        BTreeMap::from([
            (1, 1),
            (2, 1),
            (4, 1),
            (5, 1),
            (6, 1),
            (7, 1),
            (8, 1),
            (10, 1),
            (12, 1),
            (13, 1)
        ])
    );
}

/// The `http2.*` keywords on the same capture: the client's SETTINGS (ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 65535, ...),
/// the WINDOW_UPDATE frames, the frame types, and the header names of both sides. Each has a negative control.
#[test]
fn http2_frame_keywords() {
    let Some(p) = flowbundle_testsupport::data(
        "suricata-verify/http2-authority-mismatch/authority_and_host_2.pcap",
    ) else {
        return;
    };
    let got = alerts(
        &p,
        r#"alert http2 any any -> any any (flow:to_server; http2.frametype:HEADERS; sid:1;)
alert http2 any any -> any any (http2.frametype:PUSH_PROMISE; sid:2;)
alert http2 any any -> any any (flow:to_client; http2.settings:SETTINGS_MAX_CONCURRENT_STREAMS>50; sid:3;)
alert http2 any any -> any any (http2.settings:SETTINGS_MAX_CONCURRENT_STREAMS>1000; sid:4;)
alert http2 any any -> any any (http2.window:>1000; sid:5;)
alert http2 any any -> any any (http2.window:1; sid:6;)
alert http2 any any -> any any (flow:to_client; http2.header_name; content:"cf-ray"; sid:7;)
alert http2 any any -> any any (http2.header_name; content:"x-nothing"; sid:8;)
alert http2 any any -> any any (http2.errorcode:CANCEL; sid:9;)"#,
    );
    assert!(
        got.contains_key(&1)
            && got.contains_key(&3)
            && got.contains_key(&5)
            && got.contains_key(&7),
        "{got:?}"
    );
    for sid in [2, 4, 6, 8, 9] {
        assert!(!got.contains_key(&sid), "sid {sid}: {got:?}");
    }
}

/// suricata-verify's `bug-3519` capture: one FTP control connection (vsFTPd 2.3.5, active mode), which tshark reads
/// as the greeting then USER, PASS, PORT 192,168,0,13,234,10, NLST (150, 226), PORT ...,234,22, RETR temp.txt
/// (150, 226) and QUIT. Each rule's count is what those lines give, one alert per transaction; the EVE `ftp`
/// events are the eight transactions, as Suricata's `output-eve-ftp` test counts them.
#[test]
fn ftp_keywords_on_a_real_control_connection() {
    let Some(p) = flowbundle_testsupport::data("suricata-verify/bug-3519/input.pcap") else {
        return;
    };
    let rules = r#"alert ftp any any -> any any (ftp.command; content:"PORT"; bsize:4; sid:1;)
alert ftp any any -> any any (ftp.command; content:"RETR"; ftp.command_data; content:"temp.txt"; sid:2;)
alert ftp any any -> any any (ftp.reply; content:"Transfer complete."; sid:3;)
alert ftp any any -> any any (ftp.completion_code; content:"226"; bsize:3; sid:4;)
alert ftp any any -> any any (ftp.reply; content:"Directory send OK."; ftp.completion_code; content:"150"; sid:5;)
alert ftp any any -> any any (ftp.dynamic_port:59914; sid:6;)
alert ftp any any -> any any (ftp.dynamic_port:59925-59927; ftp.command; content:"PORT"; sid:7;)
alert ftp any any -> any any (ftp.mode:active; sid:8;)
alert ftp any any -> any any (ftp.mode:passive; sid:9;)
alert ftp any any -> any any (ftp.reply_received:yes; sid:10;)
alert ftp any any -> any any (ftp.reply_received:no; sid:11;)
alert ftp any any -> any any (ftp.command_data; content:"anonymous"; sid:12;)
alert ftp any any -> any any (ftp.command; content:"USER"; ftp.reply; content:"Login successful"; sid:13;)
"#;
    let got = alerts(&p, rules);
    // 4: NLST's and RETR's 226; 5: NLST's two replies, one per buffer; 6: the first PORT (234*256+10); 7: the
    // second (234*256+22 = 59926); 10: the seven commands (not the greeting); 13: USER's reply is 331. 6 and 8
    // count twice per transaction: Suricata registers `ftp.dynamic_port` and `ftp.mode` in both directions (its
    // `ftp-mode-01` test counts four alerts for these two PORTs); 7 reads `ftp.command`, to the server only.
    let want: BTreeMap<u32, u64> = [
        (1, 2),
        (2, 1),
        (3, 1),
        (4, 2),
        (5, 1),
        (6, 2),
        (7, 1),
        (8, 4),
        (10, 7),
        (12, 2),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);

    let mut engine = Engine::new(EngineConfig::default(), None, None);
    let f = common::run_serial(&mut engine, &[p]);
    let ftp: Vec<&flowbundle_protocols::ftp::FtpEvent> = f
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::App(a) => match &a.event {
                flowbundle_protocols::AppEvent::Ftp(t) => Some(t),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let commands: Vec<Option<&str>> = ftp.iter().map(|t| t.command.as_deref()).collect();
    assert_eq!(
        commands,
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
    assert_eq!(ftp[6].completion_code, ["150", "226"]);
    assert_eq!(ftp[5].dynamic_port, Some(59926));
}

/// Kerberos over UDP (nDPI's `kerberos-login.pcap`: thirteen TGS exchanges) and TCP (`kerberos.pcap`: eight
/// AS-REQs, three TGS exchanges, five KRB-ERRORs, four of them 25 and one 13). tshark's fields give the counts:
/// the TGS-REPs' client names (`des` six times), server names (`cifs/...` four times), every ticket RC4
/// (`kerberos.etype` 23 first), every reply's own part weak (DES or RC4); the errors' codes and server names.
#[test]
fn krb5_keywords_on_real_captures() {
    let (Some(udp), Some(tcp)) = (
        flowbundle_testsupport::data("ndpi/pcap/kerberos-login.pcap"),
        flowbundle_testsupport::data("ndpi/pcap/kerberos.pcap"),
    ) else {
        return;
    };
    let rules = r#"alert krb5 any any -> any any (krb5.cname; content:"des"; bsize:3; sid:1;)
alert krb5 any any -> any any (krb5.sname; content:"cifs"; bsize:4; sid:2;)
alert krb5 any any -> any any (krb5.ticket_encryption: rc4-hmac; sid:3;)
alert krb5 any any -> any any (krb5.ticket_encryption: weak; sid:4;)
alert krb5 any any -> any any (krb5.ticket_encryption: !weak; sid:5;)
alert krb5 any any -> any any (krb5.ticket_encryption: aes256-cts-hmac-sha1-96, 17; sid:6;)
alert krb5 any any -> any any (app-layer-event:krb5.weak_encryption; sid:7;)
alert krb5 any any -> any any (krb5_msg_type:13; sid:8;)
alert krb5 any any -> any any (krb5_err_code:25; sid:9;)
alert krb5 any any -> any any (krb5_err_code:13; sid:10;)
alert krb5 any any -> any any (krb5.sname; content:"krbtgt"; sid:11;)
alert krb5 any any -> any any (krb5_msg_type:10; sid:12;)
alert krb5 any any -> any any (krb5.cname; content:"johnson-pc$"; sid:13;)
"#;
    let got = alerts(&udp, rules);
    // 11: the TGS-REPs for krbtgt/DENYDC.COM (frames 8 and 20).
    let want: BTreeMap<u32, u64> = [(1, 6), (2, 4), (3, 13), (4, 13), (7, 13), (8, 13), (11, 2)]
        .into_iter()
        .collect();
    assert_eq!(got, want, "kerberos-login.pcap");
    let got = alerts(&tcp, rules);
    // 11: four errors and two TGS-REPs name krbtgt; 13: requests' names are not inspected (to the server), the
    // replies' client is JOHNSON-PC$ in capitals.
    // 10: the KRB-ERROR 13 (tcp.stream 14) is on a connection caught mid-stream (no handshake; the client's only
    // segment starts inside a record, which tshark does not decode either): not inspected, as Suricata's default
    // (`stream.midstream: false`) leaves it.
    let want: BTreeMap<u32, u64> = [(8, 3), (9, 4), (11, 6), (12, 8)].into_iter().collect();
    let mut got_tcp = got.clone();
    for sid in [3, 4, 5, 6, 7] {
        got_tcp.remove(&sid);
    }
    assert_eq!(got_tcp, want, "kerberos.pcap");
}
