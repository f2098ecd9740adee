//! Files on FTP data connections through `flowbundle inspect`: `file.data` rules on `ftp-data` fire on the
//! transferred file in whichever direction it went, and the EVE output has an `ftp_data` record (command and file
//! name from the control connection) and a `fileinfo` record per file, valid against Suricata's schema, as
//! Suricata writes them for suricata-verify's `bug-4877` capture (active mode: two uploads and two downloads).

use std::process::Command;

use flowbundle_testsupport::json_schema::Schema;
use serde_json::Value;

fn inspect(pcap: &std::path::Path, rules: &str, extra: &[&str]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let rules_path = dir.path().join("ftp.rules");
    std::fs::write(&rules_path, rules).unwrap();
    let eve = dir.path().join("eve.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(pcap)
        .arg("--rules")
        .arg(&rules_path)
        .args(extra)
        .arg("-o")
        .arg(&eve)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&eve)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event_type"] == t).collect()
}

const RULES: &str = r#"alert ftp-data any any -> any any (msg:"exe"; flow:established; file.data; content:"MZ"; depth:2; sid:1;)
alert ftp-data any any -> any any (msg:"pdf"; file.data; content:"%PDF-"; within:1024; sid:2;)
alert ftp-data any any -> any any (msg:"not in any file"; file.data; content:"no such bytes in these files"; sid:3;)
alert tcp any any -> any any (msg:"snort form"; flow:to_client; file_data; content:"%PDF-"; depth:5; service:ftp-data; sid:4;)
"#;

#[test]
fn file_data_on_ftp_data_fires_and_eve_names_each_file() {
    let (Some(pcap), Some(schema)) = (
        flowbundle_testsupport::data("suricata-verify/bug-4877/input.pcap"),
        flowbundle_testsupport::data("suricata-eve/schema.json"),
    ) else {
        return;
    };
    let schema = Schema::load(&schema).unwrap();
    let events = inspect(&pcap, RULES, &["--threads", "1"]);
    for e in &events {
        let errors = schema.errors(e);
        assert!(errors.is_empty(), "{errors:?}: {e}");
    }
    // Each file as Suricata logs it: direction, name, size (suricata-verify's bug-4877 checks).
    let mut files: Vec<(String, u64, String, u64, String, u64)> = of_type(&events, "fileinfo")
        .iter()
        .map(|e| {
            let f = &e["fileinfo"];
            assert_eq!(
                (&f["state"], &f["gaps"], &f["stored"]),
                (
                    &Value::from("CLOSED"),
                    &Value::from(false),
                    &Value::from(false)
                )
            );
            assert_eq!(f["tx_id"], 0);
            (
                e["src_ip"].as_str().unwrap().to_string(),
                e["src_port"].as_u64().unwrap(),
                e["dest_ip"].as_str().unwrap().to_string(),
                e["dest_port"].as_u64().unwrap(),
                f["filename"].as_str().unwrap().to_string(),
                f["size"].as_u64().unwrap(),
            )
        })
        .collect();
    files.sort();
    let (c, s) = ("192.168.100.16".to_string(), "192.168.100.230".to_string());
    assert_eq!(
        files,
        vec![
            (c.clone(), 42987, s.clone(), 20, "test.pdf".into(), 118196),
            (c.clone(), 57829, s.clone(), 20, "notepad.exe".into(), 69120),
            (s.clone(), 20, c.clone(), 48902, "notepad.exe".into(), 69120),
            (s.clone(), 20, c.clone(), 52407, "test.pdf".into(), 118196),
        ]
    );
    let mut cmds: Vec<(String, String)> = of_type(&events, "ftp_data")
        .iter()
        .map(|e| {
            (
                e["ftp_data"]["command"].as_str().unwrap().to_string(),
                e["ftp_data"]["filename"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    cmds.sort();
    assert_eq!(
        cmds,
        [
            ("RETR", "notepad.exe"),
            ("RETR", "test.pdf"),
            ("STOR", "notepad.exe"),
            ("STOR", "test.pdf")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    // `file.data` fires once per file whose content matches; the Snort form only on the download (in active mode
    // the server opens the data connection, so a download travels to the connection's server: to_server).
    let mut sids: Vec<(u64, u64)> = of_type(&events, "alert")
        .iter()
        .map(|a| {
            assert_eq!(a["app_proto"], "ftp-data");
            (
                a["alert"]["signature_id"].as_u64().unwrap(),
                a["dest_port"].as_u64().unwrap(),
            )
        })
        .collect();
    sids.sort();
    assert_eq!(
        sids,
        vec![(1, 20), (1, 48902), (2, 20), (2, 52407), (4, 20)]
    );
}

#[test]
fn ftp_data_files_are_the_same_in_parallel() {
    let Some(pcap) = flowbundle_testsupport::data("suricata-verify/bug-4877/input.pcap") else {
        return;
    };
    let key = |events: Vec<Value>| {
        let mut v: Vec<String> = events
            .into_iter()
            .filter(|e| e["event_type"] != "stats")
            .map(|mut e| {
                e.as_object_mut().unwrap().remove("timestamp");
                e.to_string()
            })
            .collect();
        v.sort();
        v
    };
    let serial = key(inspect(&pcap, RULES, &["--threads", "1"]));
    for sched in ["dh", "lfb", "l7aff"] {
        let par = key(inspect(
            &pcap,
            RULES,
            &["--threads", "2", "--scheduler", sched],
        ));
        assert_eq!(serial, par, "{sched}");
    }
}
