//! Mail attachments through `flowbundle inspect`: a `file.data` rule on SMTP fires on the decoded attachment, and
//! the EVE output has the attachment's `fileinfo` record and the transaction's `smtp` record with its `email`
//! object, as Suricata writes them for the same captures (suricata-verify's `smtp-file-data-01` and
//! `bug-3616-smtp`).

use std::process::Command;

use serde_json::Value;

fn inspect(pcap: &std::path::Path, rules: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let rules_path = dir.path().join("smtp.rules");
    std::fs::write(&rules_path, rules).unwrap();
    let eve = dir.path().join("eve.json");
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(pcap)
        .arg("--rules")
        .arg(&rules_path)
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

#[test]
fn file_data_rule_fires_on_an_smtp_attachment() {
    let Some(root) = flowbundle_testsupport::data("suricata-verify") else {
        return;
    };
    // An attachment `J.txt` of 16384 bytes whose text starts with "if was".
    let events = inspect(
        &root.join("smtp-file-data-01/input.pcap"),
        r#"alert smtp any any -> any any (msg:"file_data smtp"; flow:to_server; file_data; content:"if was"; sid:1;)
alert smtp any any -> any any (msg:"not in the attachment"; file_data; content:"no such text in J.txt"; sid:2;)
alert smtp any any -> any any (msg:"the envelope is no file"; file_data; content:"MAIL FROM"; nocase; sid:3;)
"#,
    );
    let alerts = of_type(&events, "alert");
    let sids: Vec<u64> = alerts
        .iter()
        .map(|a| a["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    assert_eq!(sids, vec![1], "{alerts:#?}");
    assert_eq!(alerts[0]["app_proto"], "smtp");
    assert_eq!(alerts[0]["dest_port"], 25);

    let files = of_type(&events, "fileinfo");
    assert_eq!(files.len(), 1, "{files:#?}");
    let f = &files[0]["fileinfo"];
    assert_eq!(
        (&f["filename"], &f["size"], &f["state"], &f["gaps"]),
        (
            &Value::from("J.txt"),
            &Value::from(16384),
            &Value::from("CLOSED"),
            &Value::from(false)
        )
    );

    let smtp = of_type(&events, "smtp");
    assert_eq!(
        smtp.len(),
        1,
        "one mail, and the QUIT after it is no transaction"
    );
    let s = smtp[0];
    assert_eq!(s["tx_id"], 0);
    assert_eq!(s["smtp"]["helo"], "client-1016363.example.int");
    assert_eq!(s["smtp"]["mail_from"], "<sender@example.com>");
    assert_eq!(s["smtp"]["rcpt_to"][0], "<recipient@example.com>");
    assert_eq!(s["email"]["status"], "PARSE_DONE");
    assert_eq!(s["email"]["from"], "<sender@example.com>");
    assert_eq!(s["email"]["to"][0], "<recipient@example.com>");
    assert_eq!(s["email"]["attachment"][0], "J.txt");
}

#[test]
fn snort_service_smtp_rule_fires_on_a_quoted_name_attachment() {
    let Some(root) = flowbundle_testsupport::data("suricata-verify/bug-3616-smtp/input.pcap")
    else {
        return;
    };
    // Snort 3's form: `alert tcp` with `service:smtp`; the attachment `NEWS.txt` holds "Added".
    let events = inspect(
        &root,
        r#"alert tcp any any -> any any (msg:"snort form"; flow:to_server,established; file_data; content:"Added"; service:smtp; sid:7;)"#,
    );
    let sids: Vec<u64> = of_type(&events, "alert")
        .iter()
        .map(|a| a["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    assert_eq!(sids, vec![7]);
    let smtp = of_type(&events, "smtp");
    assert_eq!(smtp[0]["email"]["attachment"][0], "NEWS.txt");
    assert_eq!(
        smtp[0]["email"]["from"],
        "\"Gurpartap Singh\" <gurpartap@patriots.in>"
    );
}

#[test]
fn mime_anomalies_are_app_layer_events_as_suricata_raises_them() {
    let (Some(root), Some(schema)) = (
        flowbundle_testsupport::data("suricata-verify"),
        flowbundle_testsupport::data("suricata-eve/schema.json"),
    ) else {
        return;
    };
    let schema = flowbundle_testsupport::json_schema::Schema::load(&schema).unwrap();
    // suricata-verify's `smtp-long-DATA-line`: one message with a line past 998 bytes and a base64 line past 76;
    // Suricata logs one `anomaly` record of each.
    let events = inspect(
        &root.join("smtp-long-DATA-line/input.pcap"),
        r#"alert smtp any any -> any any (msg:"long line"; flow:established,to_server; app-layer-event:smtp.mime_long_line; sid:1;)
alert smtp any any -> any any (msg:"long encoded line"; app-layer-event:smtp.mime_long_enc_line; sid:2;)
alert smtp any any -> any any (msg:"no bad quoted-printable here"; app-layer-event:smtp.mime_invalid_qp; sid:3;)
"#,
    );
    for e in &events {
        let errors = schema.errors(e);
        assert!(errors.is_empty(), "{errors:?}: {e}");
    }
    let mut anomalies: Vec<&str> = of_type(&events, "anomaly")
        .iter()
        .map(|a| {
            assert_eq!(a["anomaly"]["app_proto"], "smtp");
            assert_eq!(a["anomaly"]["type"], "applayer");
            a["anomaly"]["event"].as_str().unwrap()
        })
        .collect();
    anomalies.sort();
    assert_eq!(anomalies, ["MIME_LONG_ENC_LINE", "MIME_LONG_LINE"]);
    let mut sids: Vec<u64> = of_type(&events, "alert")
        .iter()
        .map(|a| a["alert"]["signature_id"].as_u64().unwrap())
        .collect();
    sids.sort();
    assert_eq!(sids, vec![1, 2]);
}
