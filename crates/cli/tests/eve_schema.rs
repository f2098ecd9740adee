//! Every EVE line `flowbundle inspect` writes validates against Suricata 8's own schema
//! (`suricata-eve/schema.json`, which refuses keys it does not know), on every shared capture (nDPI's and
//! PcapPlusPlus's) with the Snort 3 community rules loaded so that alerts appear. The output must also hold what
//! Suricata writes there: alerts with `pcap_cnt` and the rules' `metadata`, alerts on HTTP transactions with their
//! `http` object and `tx_id`, ICMP flows with their type and code and no `app_proto`, `dns` events with their
//! `version`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use flowbundle_testsupport::json_schema::Schema;

fn captures() -> Option<Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir in ["ndpi/pcap", "reassembly"] {
        let d = flowbundle_testsupport::data(dir)?;
        let mut here: Vec<PathBuf> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e == "pcap" || e == "pcapng" || e == "cap")
            })
            .collect();
        here.sort();
        files.extend(here);
    }
    Some(files)
}

/// The EVE lines of `inspect --per-file` over `files` with `extra` arguments.
fn eve(files: &[PathBuf], extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eve.json");
    let run = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg("--per-file")
        .args(files)
        .args(extra)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read_to_string(&out).unwrap()
}

#[test]
fn every_eve_line_validates_against_suricatas_schema() {
    let (Some(schema), Some(rules), Some(files)) = (
        flowbundle_testsupport::data("suricata-eve/schema.json"),
        flowbundle_testsupport::data("rules/snort3-community.rules"),
        captures(),
    ) else {
        return;
    };
    let schema = Schema::load(&schema).unwrap();
    let text = eve(&files, &["--rules", rules.to_str().unwrap()]);
    // Failures by event type and reason, with the first line that shows each.
    let mut failures: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut types: BTreeMap<String, usize> = BTreeMap::new();
    let (mut alerts_with_metadata, mut alerts_with_pcap_cnt, mut icmp_flows) = (0, 0, 0);
    let mut alerts_with_http = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let ty = v["event_type"].as_str().unwrap().to_string();
        for e in schema.errors(&v) {
            let f = failures
                .entry(format!("{ty}: {e}"))
                .or_insert((0, line.to_string()));
            f.0 += 1;
        }
        if ty == "alert" {
            alerts_with_metadata += usize::from(v["alert"]["metadata"].is_object());
            alerts_with_pcap_cnt += usize::from(v["pcap_cnt"].is_u64());
            // An alert on an HTTP transaction carries it, and its number, as Suricata writes them.
            if v["http"].is_object() {
                assert!(
                    v["tx_id"].is_u64(),
                    "an alert with its transaction but no tx_id: {line}"
                );
                alerts_with_http += 1;
            }
        }
        if ty == "flow" && v["proto"] == "ICMP" {
            assert!(
                v["icmp_type"].is_u64(),
                "an ICMP flow without its type: {line}"
            );
            assert!(
                v.get("app_proto").is_none(),
                "Suricata gives ICMP flows no app_proto: {line}"
            );
            icmp_flows += 1;
        }
        *types.entry(ty).or_default() += 1;
    }
    let report: Vec<String> = failures
        .iter()
        .take(20)
        .map(|(k, (n, line))| format!("{n} × {k}\n    e.g. {}", &line[..line.len().min(300)]))
        .collect();
    assert!(
        failures.is_empty(),
        "{} kinds of schema failure:\n{}",
        failures.len(),
        report.join("\n")
    );
    // What the check covered: every event type the engine writes on these captures.
    for ty in ["flow", "alert", "dns", "http", "tls", "quic", "ssh", "ftp"] {
        assert!(
            types.get(ty).is_some_and(|&n| n > 0),
            "no {ty} event: {types:?}"
        );
    }
    // 321 alerts with Suricata's default HOME_NET/EXTERNAL_NET (rules fire only in the direction they name).
    assert!(types["alert"] > 250 && types["flow"] > 5000, "{types:?}");
    // Alerts of the end-of-flow flush (reassembled data inspected when the flow ends) come from no packet and, as
    // from Suricata's pseudo packets, carry no pcap_cnt; every other alert does.
    assert!(
        alerts_with_pcap_cnt * 20 > types["alert"] * 19,
        "{alerts_with_pcap_cnt} of {} alerts with a pcap_cnt",
        types["alert"]
    );
    assert!(
        alerts_with_metadata > 0,
        "the community rules' metadata reaches alert.metadata"
    );
    assert!(icmp_flows > 0, "ICMP flows covered");
    assert!(alerts_with_http > 0, "alerts on HTTP transactions covered");
}

/// The checker bites: the `flowbundle` object `--eve-extra` adds to flow records is outside the schema, and each such
/// record is refused for exactly that key.
#[test]
fn the_extra_flow_object_is_outside_the_schema() {
    let (Some(schema), Some(capture)) = (
        flowbundle_testsupport::data("suricata-eve/schema.json"),
        flowbundle_testsupport::data("reassembly/example2.pcap"),
    ) else {
        return;
    };
    let schema = Schema::load(&schema).unwrap();
    let text = eve(&[capture], &["--eve-extra"]);
    let mut flows = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let errors = schema.errors(&v);
        if v["event_type"] == "flow" {
            assert_eq!(
                errors,
                ["/flowbundle: property not in the schema"],
                "{line}"
            );
            flows += 1;
        } else {
            assert!(errors.is_empty(), "{errors:?}: {line}");
        }
    }
    assert!(flows > 100, "{flows} flow records");
}
