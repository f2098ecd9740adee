//! `trace anonymize` with payloads kept: the addresses DNS answers carry are counted and named in a warning, and
//! `--dns` maps them as the IP headers are mapped, so that a lookup still names the (anonymized) server the client
//! then reaches. Checked through `flowbundle inspect`'s EVE output of the anonymized capture.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn flowbundle(args: &[&str]) -> std::process::Output {
    let o = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The A/AAAA addresses of the DNS answers, and the servers flows went to.
fn answers_and_servers(cap: &Path, dir: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let eve = dir.join("eve.json");
    flowbundle(&[
        "inspect",
        cap.to_str().unwrap(),
        "--threads",
        "1",
        "-o",
        eve.to_str().unwrap(),
    ]);
    let (mut answers, mut servers) = (BTreeSet::new(), BTreeSet::new());
    for line in std::fs::read_to_string(&eve).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        match v["event_type"].as_str() {
            Some("dns") => {
                for a in v["dns"]["answers"].as_array().into_iter().flatten() {
                    if a["rrtype"] == "A" || a["rrtype"] == "AAAA" {
                        answers.insert(a["rdata"].as_str().unwrap().to_string());
                    }
                }
            }
            Some("flow") => {
                servers.insert(v["dest_ip"].as_str().unwrap().to_string());
            }
            _ => {}
        }
    }
    (answers, servers)
}

#[test]
fn dns_answers_are_named_or_mapped_with_the_header_mapping() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (answers, servers) = answers_and_servers(&cap, dir.path());
    let reached = answers.intersection(&servers).count();
    assert!(
        answers.len() > 100 && reached > 10,
        "{} answers, {reached} reached",
        answers.len()
    );

    let anonymize = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            "trace",
            "anonymize",
            cap.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--method",
            "prefix",
            "--key",
            "a test key",
            "--no-progress",
        ];
        args.extend_from_slice(extra);
        (flowbundle(&args), out)
    };
    // Without --dns: the real addresses stay, and the command says so.
    let (run, kept) = anonymize("kept.pcap", &[]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("addresses in DNS answers") && err.contains("--dns"),
        "{err}"
    );
    let (kept_answers, kept_servers) = answers_and_servers(&kept, dir.path());
    assert_eq!(kept_answers, answers);
    assert_eq!(
        kept_answers.intersection(&kept_servers).count(),
        0,
        "headers mapped, answers not"
    );

    // With --dns: no real answer is left, and the answers still name the servers the clients reached.
    let (run, mapped) = anonymize("mapped.pcap", &["--dns"]);
    assert!(!String::from_utf8_lossy(&run.stderr).contains("addresses in DNS answers"));
    let (new_answers, new_servers) = answers_and_servers(&mapped, dir.path());
    assert_eq!(new_answers.len(), answers.len());
    assert_eq!(
        new_answers.intersection(&answers).count(),
        0,
        "a real address is left"
    );
    assert_eq!(new_answers.intersection(&new_servers).count(), reached);
}
