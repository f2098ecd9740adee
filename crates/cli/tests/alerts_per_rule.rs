//! The summary's "alerts per rule" table counts alerts: its numbers are the alert events of the EVE output, sid by
//! sid, on the suricata-verify captures whose rules use `noalert` (matches that only set flowbits).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// sid → count from the summary's table.
fn table(summary: &str) -> BTreeMap<u64, u64> {
    summary
        .lines()
        .skip_while(|l| !l.contains("alerts per rule"))
        .skip(1)
        .map_while(|l| {
            let (sid, rest) = l.trim().split_once(':')?;
            Some((
                sid.trim().parse().ok()?,
                rest.split_whitespace().next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// sid → count of the EVE alert events.
fn eve_alerts(eve: &str) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for line in eve.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["event_type"] == "alert" {
            *m.entry(v["alert"]["signature_id"].as_u64().unwrap())
                .or_default() += 1;
        }
    }
    m
}

#[test]
fn alerts_per_rule_are_the_alerts_of_the_eve_output() {
    let Some(root) = flowbundle_testsupport::data("suricata-verify") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let eve_path = dir.path().join("eve.json");
    let mut checked = 0;
    let mut tests: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    tests.sort();
    for t in tests {
        let rules = t.join("test.rules");
        let Ok(text) = std::fs::read_to_string(&rules) else {
            continue;
        };
        if !text.contains("noalert") {
            continue;
        }
        let Some(pcap) = std::fs::read_dir(&t)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "pcap"))
        else {
            continue;
        };
        let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .arg("inspect")
            .arg(&pcap)
            .arg("--rules")
            .arg(&rules)
            .arg("-o")
            .arg(&eve_path)
            .arg("--summary")
            .output()
            .unwrap();
        if !out.status.success() {
            // A rule set of which nothing loads is refused; nothing to compare.
            continue;
        }
        let summary = String::from_utf8_lossy(&out.stdout);
        let eve = std::fs::read_to_string(&eve_path).unwrap();
        let (table, alerts) = (table(&summary), eve_alerts(&eve));
        assert_eq!(table, alerts, "{}:\n{summary}", t.display());
        if !alerts.is_empty() {
            checked += 1;
        }
    }
    assert!(
        checked >= 3,
        "only {checked} suricata-verify tests with noalert rules alerted"
    );
}
