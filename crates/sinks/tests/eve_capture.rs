//! EVE JSON of real captures, parsed back: `flow`, `http`, `tls`, `dns` and `alert` events carry the field names
//! Suricata writes (and that `shared/data/suricata-verify/*/test.yaml` files check: `alert.signature_id`,
//! `http.hostname`, `tls.sni`, `dns.queries`, `flow.pkts_toserver`, ...), with Suricata's timestamp format, and the
//! `flow_id` of every event links it to a flow record. The captures go through the engine's single-threaded path,
//! as `flowbundle inspect FILE... --rules FILE -o eve.json` runs them.

use std::path::PathBuf;

use flowbundle_ingest::CaptureReader;
use flowbundle_inspect::rules::{RuleSet, Vars};
use flowbundle_inspect::{Engine, EngineConfig, Event, Prestage};
use flowbundle_sinks::EveWriter;
use serde_json::Value;

/// Rules on each path into the matcher: an HTTP sticky buffer and a Snort-style HTTP modifier (`alert http`: the
/// flow must already count as HTTP on the packet that identified it), stream data, and a UDP datagram of a flow
/// identified as DNS by that very datagram.
const RULES: &str = r#"
alert http any any -> any any (msg:"flowbundle EVE test: HTTP GET"; flow:established,to_server; http.method; content:"GET"; classtype:policy-violation; sid:9000001; rev:3;)
alert tcp any any -> any any (msg:"flowbundle EVE test: HTTP/1.1 in a stream"; flow:established; content:"HTTP/1.1"; sid:9000002; rev:1;)
alert dns any any -> any any (msg:"flowbundle EVE test: DNS example.com"; content:"example"; nocase; sid:9000003; rev:1;)
alert http any any -> any any (msg:"flowbundle EVE test: GET, Snort style"; content:"GET"; http_method; sid:9000004; rev:1;)
"#;

/// Runs `files` through the engine with the test rules and returns the EVE lines.
fn eve_of(files: &[PathBuf]) -> Vec<String> {
    let (rules, report) = RuleSet::parse(RULES, &Vars::default()).expect("test rules parse");
    assert_eq!(report.loaded, 4, "{}", report.summary());
    let mut engine = Engine::new(EngineConfig::default(), None, Some(rules));
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    let mut w = EveWriter::new(Vec::new());
    let mut events: Vec<Event> = Vec::new();
    let mut n = 0;
    for f in files {
        let mut r = CaptureReader::open(f).expect("capture opens");
        while let Ok(Some(rec)) = r.next_packet() {
            engine.process_serial(&mut ctx, &mut pre, n, &rec);
            n += 1;
        }
        ctx.take_events(&mut events);
        w.write_all(&events).expect("write to a Vec");
        events.clear();
    }
    let fin = engine.finish([ctx]);
    w.write_all(&fin.events).expect("write to a Vec");
    let bytes = w.into_inner().expect("flush a Vec");
    String::from_utf8(bytes)
        .expect("EVE is UTF-8")
        .lines()
        .map(str::to_string)
        .collect()
}

fn field<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

fn has_all(v: &Value, paths: &[&str]) {
    for p in paths {
        assert!(
            field(v, p).is_some(),
            "{} event without `{p}`: {v}",
            v["event_type"]
        );
    }
}

/// Suricata's timestamp: `2009-11-13T17:33:35.239416+0000`.
fn suricata_ts(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 31
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && s.ends_with("+0000")
        && b[20..26].iter().all(u8::is_ascii_digit)
}

#[test]
fn eve_of_real_captures_has_suricata_field_names() {
    let (Some(http), Some(tls), Some(dns)) = (
        flowbundle_testsupport::data("reassembly/one_http_stream_fin.pcap"),
        flowbundle_testsupport::data("ndpi/pcap/long_tls_certificate.pcap"),
        flowbundle_testsupport::data("ndpi/pcap/dns.pcap"),
    ) else {
        return;
    };
    let lines = eve_of(&[http, tls, dns]);
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let mut flow_ids = std::collections::HashSet::new();
    for v in &events {
        has_all(
            v,
            &[
                "timestamp",
                "flow_id",
                "event_type",
                "src_ip",
                "dest_ip",
                "proto",
            ],
        );
        assert!(
            suricata_ts(v["timestamp"].as_str().unwrap_or("")),
            "timestamp format: {v}"
        );
        if v["event_type"] == "flow" {
            flow_ids.insert(v["flow_id"].as_u64());
        }
    }
    let of = |t: &str| -> Vec<&Value> { events.iter().filter(|v| v["event_type"] == t).collect() };
    for t in ["flow", "http", "tls", "dns", "alert"] {
        println!("{t}: {} events", of(t).len());
        assert!(!of(t).is_empty(), "no {t} event");
    }
    // Every event belongs to a flow that has a record.
    for v in &events {
        assert!(
            flow_ids.contains(&v["flow_id"].as_u64()),
            "orphan event: {v}"
        );
    }

    for v in of("flow") {
        has_all(
            v,
            &[
                "app_proto",
                "flow.pkts_toserver",
                "flow.pkts_toclient",
                "flow.bytes_toserver",
                "flow.bytes_toclient",
                "flow.start",
                "flow.end",
                "flow.age",
                "flow.state",
                "flow.reason",
                "flow.alerted",
            ],
        );
        if v["proto"] == "TCP" {
            has_all(
                v,
                &[
                    "src_port",
                    "dest_port",
                    "tcp.tcp_flags",
                    "tcp.tcp_flags_ts",
                    "tcp.tcp_flags_tc",
                    "tcp.state",
                ],
            );
        }
    }
    // The HTTP flow of one_http_stream_fin: labelled, closed by FIN, alerted.
    let http_flow = of("flow")
        .into_iter()
        .find(|v| v["app_proto"] == "http")
        .expect("an http flow record");
    assert_eq!(http_flow["flow"]["state"], "closed");
    assert_eq!(http_flow["flow"]["alerted"], true);
    assert!(http_flow["tcp"]["syn"] == true && http_flow["tcp"]["fin"] == true);
    assert!(of("flow").iter().any(|v| v["app_proto"] == "tls"));
    assert!(of("flow").iter().any(|v| v["app_proto"] == "dns"));

    let get = of("http")
        .into_iter()
        .find(|v| v["http"]["http_method"] == "GET")
        .expect("an http GET event");
    has_all(
        get,
        &[
            "tx_id",
            "http.hostname",
            "http.url",
            "http.http_method",
            "http.protocol",
            "src_port",
            "dest_port",
        ],
    );
    assert!(
        of("http")
            .iter()
            .any(|v| field(v, "http.status").is_some() && field(v, "http.length").is_some()),
        "an http event with the response (status, length)"
    );

    assert!(
        of("tls")
            .iter()
            .any(|v| v["tls"]["sni"].is_string() && v["tls"]["version"].is_string()),
        "a tls event with sni and version: {:?}",
        of("tls")
    );

    let dns = of("dns");
    assert!(
        dns.iter().any(|v| v["dns"]["type"] == "request"
            && v["dns"]["queries"][0]["rrname"].is_string()
            && v["dns"]["queries"][0]["rrtype"].is_string()
            && v["dns"]["id"].is_u64()),
        "a dns request with type, id, queries (rrname, rrtype): {:?}",
        dns.first()
    );
    assert!(
        dns.iter()
            .any(|v| v["dns"]["type"] == "response" && v["dns"]["rcode"].is_string()),
        "a dns answer with rcode: {:?}",
        dns.last()
    );

    let alerts = of("alert");
    for v in &alerts {
        has_all(
            v,
            &[
                "alert.action",
                "alert.gid",
                "alert.signature_id",
                "alert.rev",
                "alert.signature",
                "alert.category",
                "alert.severity",
                "direction",
                "flow.pkts_toserver",
                "flow.pkts_toclient",
                "flow.bytes_toserver",
                "flow.bytes_toclient",
                "flow.start",
                "flow.src_ip",
                "flow.dest_ip",
            ],
        );
        assert_eq!(v["alert"]["action"], "allowed");
    }
    let sids: std::collections::BTreeSet<u64> = alerts
        .iter()
        .filter_map(|v| v["alert"]["signature_id"].as_u64())
        .collect();
    println!("alerts by sid: {sids:?}");
    let get_alert = alerts
        .iter()
        .find(|v| v["alert"]["signature_id"] == 9000001)
        .expect("the HTTP GET rule fired");
    assert_eq!(get_alert["alert"]["rev"], 3);
    assert_eq!(
        get_alert["alert"]["signature"],
        "flowbundle EVE test: HTTP GET"
    );
    assert_eq!(get_alert["app_proto"], "http");
    assert_eq!(get_alert["direction"], "to_server");
    assert!(sids.contains(&9000002), "stream rule fired");
    assert!(sids.contains(&9000003), "dns rule fired on a UDP datagram");
    assert!(
        sids.contains(&9000004),
        "Snort-style http_method rule fired"
    );
    let dns_alert = alerts
        .iter()
        .find(|v| v["alert"]["signature_id"] == 9000003)
        .expect("dns alert");
    assert_eq!(dns_alert["app_proto"], "dns");
    assert_eq!(dns_alert["proto"], "UDP");
}
