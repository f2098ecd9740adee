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
