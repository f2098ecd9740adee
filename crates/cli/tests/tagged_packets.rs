//! The rule keyword `tag` through `flowbundle inspect` on the shared captures: with the EVE alert output's
//! `tagged-packets` on (as Suricata's configuration says it), the packets that follow an alert of a rule with a session
//! tag in its flow, or with a host tag to or from its host in any flow, are written as `event_type: packet` records
//! that validate against Suricata's schema; the alerting packet is not one of them; without the option none is
//! written; and the records are the same at any thread count, scheduler and execution model.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use flowbundle_testsupport::data;
use serde_json::Value;

/// `inspect` with `extra` arguments then `-- inputs`, EVE to standard output: the EVE lines.
fn eve(inputs: &[PathBuf], extra: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(["inspect", "-o", "-"])
        .args(extra)
        .arg("--")
        .args(inputs)
        .output()
        .expect("running flowbundle");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "inspect {extra:?}: {err}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("writing a test file");
    p.to_string_lossy().into_owned()
}

/// The configuration that turns tagged packets on, as in a `suricata.yaml`.
const TAGGED: &str = "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - alert:\n            tagged-packets: yes\n        - flow\n";

const SESSION_RULE: &str =
    "alert tcp any any -> any any (msg:\"syn\"; flags:S; tag:session,3,packets; sid:1;)\n";
const HOST_RULE: &str =
    "alert tcp any any -> any any (msg:\"syn-ack\"; flags:SA; tag:host,100,packets,dst; sid:2;)\n";

/// A host tag set by fragments, which no flow tracks: the host's packets without a flow are tagged too.
const FRAGMENT_RULE: &str = "alert ip any any -> any any (msg:\"more fragments\"; fragbits:M; tag:host,10,packets,dst; sid:3;)\n";

/// A session tag of a rule with a threshold: decided where alerts meet in input order, set only by the alerts the
/// threshold lets through.
const LIMITED_RULE: &str = "alert tcp any any -> any any (msg:\"syn, twice per host\"; flags:S; threshold:type limit,track by_src,count 2,seconds 3600; tag:session,4,packets; sid:4;)\n";

fn inputs() -> Option<Vec<PathBuf>> {
    Some(vec![
        data("reassembly/example2.pcap")?,
        data("ndpi/pcap/bt-http.pcapng")?,
    ])
}

fn parse(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("EVE lines are JSON"))
        .collect()
}

fn of_type<'v>(events: &'v [Value], ty: &str) -> Vec<&'v Value> {
    events.iter().filter(|e| e["event_type"] == ty).collect()
}

#[test]
fn session_and_host_tags_write_the_packets_that_follow_as_suricata_does() {
    let (Some(inputs), Some(schema)) = (inputs(), data("suricata-eve/schema.json")) else {
        return;
    };
    let schema = flowbundle_testsupport::json_schema::Schema::load(&schema).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "suricata.yaml", TAGGED);
    let session = write(dir.path(), "session.rules", SESSION_RULE);
    let host = write(dir.path(), "host.rules", HOST_RULE);

    // Session tags: the two packets after each SYN's alert in its flow (three packets counted, the first being
    // the alerting one), never the alerting packet itself.
    let events = parse(&eve(&inputs, &["--config", &cfg, "--rules", &session]));
    for e in &events {
        let errors = schema.errors(e);
        assert!(errors.is_empty(), "{errors:?}: {e}");
    }
    let alerts = of_type(&events, "alert");
    let packets = of_type(&events, "packet");
    assert!(
        alerts.len() > 20 && packets.len() > 20,
        "{} alerts, {} packets",
        alerts.len(),
        packets.len()
    );
    let mut alerts_by_flow: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for a in &alerts {
        alerts_by_flow
            .entry(a["flow_id"].as_u64().unwrap())
            .or_default()
            .push(a["pcap_cnt"].as_u64().unwrap());
    }
    let mut packets_by_flow: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for p in &packets {
        let flow = p["flow_id"].as_u64().expect("a tagged packet of a flow");
        let cnt = p["pcap_cnt"].as_u64().unwrap();
        let alerted = alerts_by_flow
            .get(&flow)
            .expect("a session tag covers only the packets of a flow that alerted");
        assert!(
            alerted.iter().any(|&a| a < cnt) && !alerted.contains(&cnt),
            "packet {cnt} of flow {flow}: after an alert of its flow and not an alerting one ({alerted:?})"
        );
        assert_eq!(p["packet_info"]["linktype"], 1, "{p}");
        assert_eq!(p["packet_info"]["linktype_name"], "EN10MB", "{p}");
        assert!(
            p["packet"].as_str().is_some_and(|b| b.len() >= 56),
            "a whole frame: {p}"
        );
        packets_by_flow.entry(flow).or_default().push(cnt);
    }
    for (flow, cnts) in &packets_by_flow {
        let renewals = alerts_by_flow[flow].len();
        assert!(
            cnts.len() <= 2 * renewals,
            "flow {flow}: {cnts:?} tagged for {renewals} alerts"
        );
    }
    // A flow whose SYN alerted and that went on (a handshake) has the next two packets tagged.
    assert!(packets_by_flow.values().filter(|c| c.len() == 2).count() > 10);

    // Host tags: the destination of each SYN-ACK (a client) is tagged for 100 packets counted in any flow, so
    // packets of its flows that never alerted are written too; each is to or from such a client.
    let events = parse(&eve(&inputs, &["--config", &cfg, "--rules", &host]));
    for e in &events {
        let errors = schema.errors(e);
        assert!(errors.is_empty(), "{errors:?}: {e}");
    }
    let alerts = of_type(&events, "alert");
    let packets = of_type(&events, "packet");
    let hosts: BTreeSet<&str> = alerts
        .iter()
        .map(|a| a["dest_ip"].as_str().unwrap())
        .collect();
    let alerted_flows: BTreeSet<u64> = alerts
        .iter()
        .map(|a| a["flow_id"].as_u64().unwrap())
        .collect();
    assert!(!packets.is_empty());
    for p in &packets {
        let (src, dst) = (
            p["src_ip"].as_str().unwrap(),
            p["dest_ip"].as_str().unwrap(),
        );
        assert!(hosts.contains(src) || hosts.contains(dst), "{p}");
    }
    let alerting: BTreeSet<u64> = alerts
        .iter()
        .map(|a| a["pcap_cnt"].as_u64().unwrap())
        .collect();
    assert!(
        packets
            .iter()
            .any(|p| !alerted_flows.contains(&p["flow_id"].as_u64().unwrap())),
        "a host tag covers the host's other flows"
    );
    // The first tagged packet comes after the first alert.
    let first_alert = alerting.first().copied().unwrap();
    assert!(
        packets
            .iter()
            .all(|p| p["pcap_cnt"].as_u64().unwrap() > first_alert)
    );

    // Without `tagged-packets` nothing is written, as Suricata's alert output writes none by default.
    let both = write(
        dir.path(),
        "both.rules",
        &format!("{SESSION_RULE}{HOST_RULE}"),
    );
    let plain = eve(&inputs, &["--rules", &both]);
    assert!(
        plain
            .iter()
            .all(|l| !l.contains("\"event_type\":\"packet\""))
    );
    assert!(plain.iter().any(|l| l.contains("\"event_type\":\"alert\"")));
}

/// Session tags live in each flow's matcher state (on the worker, or on the detection stage of a staged model),
/// host tags where events meet in input order: the records are the same with one worker or several, under every
/// scheduler and execution model, fragments (packets without a flow) and a thresholded rule's tags included.
#[test]
fn tagged_packets_are_the_same_at_any_thread_count_scheduler_and_execution_model() {
    let (Some(mut inputs), Some(frags), Some(frag_req)) = (
        inputs(),
        data("reassembly/ip4_fragments.pcap"),
        data("reassembly/frag_http_req.pcap"),
    ) else {
        return;
    };
    inputs.extend([frags, frag_req]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "suricata.yaml", TAGGED);
    let rules = write(
        dir.path(),
        "t.rules",
        &format!("{SESSION_RULE}{HOST_RULE}{FRAGMENT_RULE}{LIMITED_RULE}"),
    );
    let base = ["--config", cfg.as_str(), "--rules", rules.as_str()];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let mut lines = eve(&inputs, &args);
        lines.sort();
        lines
    };
    let serial = run(&["--threads", "1"]);
    let tagged = serial
        .iter()
        .filter(|l| l.contains("\"event_type\":\"packet\""))
        .count();
    assert!(tagged > 100, "{tagged}");
    let flowless = serial
        .iter()
        .filter(|l| l.contains("\"event_type\":\"packet\"") && !l.contains("\"flow_id\""))
        .count();
    assert!(flowless > 10, "fragments tagged by their host: {flowless}");
    let mut cases: Vec<Vec<&str>> = Vec::new();
    for &sched in flowbundle_scheduler::ALL {
        cases.push(vec![
            "--threads",
            "2",
            "--scheduler",
            sched,
            "--packet-buffers",
            "8",
        ]);
    }
    cases.push(vec![
        "--threads",
        "2",
        "--scheduler",
        "dh",
        "--workers-read",
    ]);
    for exec in ["pipeline", "multilayer"] {
        cases.push(vec![
            "--threads",
            "2",
            "--exec",
            exec,
            "--packet-buffers",
            "8",
        ]);
        cases.push(vec![
            "--threads",
            "3",
            "--detect-workers",
            "2",
            "--exec",
            exec,
        ]);
    }
    for extra in cases {
        let par = run(&extra);
        assert!(
            par == serial,
            "{extra:?}: {} lines against {}, first difference: {:?}",
            par.len(),
            serial.len(),
            par.iter().zip(&serial).find(|(a, b)| a != b)
        );
    }
}

/// An ICMP error filed under the flow it quotes (`decoder.icmp-errors-in-quoted-flow`, as Suricata files them) is
/// tagged with that flow's session tags and its own host's, and written with its own addresses and protocol, as
/// Suricata writes the packet: suricata-verify's `eve-tag-01` capture and rule, whose DNS lookup is followed by
/// ICMP errors from a router.
#[test]
fn an_icmp_error_in_a_tagged_flow_is_written_with_its_own_addresses() {
    let Some(pcap) = data("suricata-verify/bug-3616-smtp/input.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "suricata.yaml",
        &format!("{TAGGED}decoder:\n  icmp-errors-in-quoted-flow: true\n"),
    );
    let rules = write(
        dir.path(),
        "t.rules",
        "alert dns any any -> any any (dns.query; content:\"mail\"; tag:host,100,packets,src; tag:session; sid:1;)\n",
    );
    let events = parse(&eve(&[pcap], &["--config", &cfg, "--rules", &rules]));
    assert_eq!(of_type(&events, "alert").len(), 1);
    // Suricata writes 58 tagged packets here (the test's own check).
    let packets = of_type(&events, "packet");
    assert_eq!(packets.len(), 58);
    let icmp: Vec<_> = packets.iter().filter(|p| p["proto"] == "ICMP").collect();
    assert!(!icmp.is_empty());
    for p in icmp {
        assert!(p["flow_id"].is_u64(), "counted in the flow it quotes: {p}");
        assert!(p.get("src_port").is_none(), "{p}");
        assert_ne!(
            p["src_ip"], "10.10.1.1",
            "the router's address, not the quoted flow's: {p}"
        );
    }
}
