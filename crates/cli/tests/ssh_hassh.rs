//! HASSH through `flowbundle inspect`: off by default as in Suricata (no `hassh` in EVE `ssh` records), on with
//! `app-layer.protocols.ssh.hassh` or with a rule that reads a hassh buffer; the fingerprints equal tshark's
//! (`ssh.kex.hassh`, `ssh.kex.hasshserver`) on nDPI's SSH capture, the records validate against Suricata's schema,
//! and the `ssh.hassh*` buffers (and their legacy names) fire only on the side and value they name.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use flowbundle_testsupport::json_schema::Schema;

/// The EVE lines of `inspect` over `pcap` with `extra` arguments.
fn eve(pcap: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eve.json");
    let run = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(pcap)
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
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// (client port, server port, client hassh, server hassh) of each `ssh` record.
fn hasshes(lines: &[serde_json::Value]) -> BTreeSet<(u64, u64, String, String)> {
    lines
        .iter()
        .filter(|v| v["event_type"] == "ssh")
        .map(|v| {
            let h = |side: &str| {
                v["ssh"][side]["hassh"]["hash"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            };
            (
                v["src_port"].as_u64().unwrap(),
                v["dest_port"].as_u64().unwrap(),
                h("client"),
                h("server"),
            )
        })
        .collect()
}

#[test]
fn hassh_is_logged_when_enabled_and_equals_tsharks() {
    let (Some(pcap), Some(schema)) = (
        flowbundle_testsupport::data("ndpi/pcap/ssh.pcap"),
        flowbundle_testsupport::data("suricata-eve/schema.json"),
    ) else {
        return;
    };
    let schema = Schema::load(&schema).unwrap();
    // Suricata's default: no HASSH.
    let off = eve(&pcap, &[]);
    assert!(off.iter().filter(|v| v["event_type"] == "ssh").count() == 2);
    assert!(
        hasshes(&off)
            .iter()
            .all(|(_, _, c, s)| c.is_empty() && s.is_empty())
    );
    let on = eve(&pcap, &["--set", "app-layer.protocols.ssh.hassh=yes"]);
    for v in on.iter().filter(|v| v["event_type"] == "ssh") {
        assert_eq!(schema.errors(v), Vec::<String>::new(), "{v}");
    }
    let ours = hasshes(&on);
    assert_eq!(ours.len(), 2, "{ours:?}");
    assert!(
        ours.iter()
            .all(|(_, _, c, s)| c.len() == 32 && s.len() == 32),
        "{ours:?}"
    );
    let Some(tshark) = flowbundle_testsupport::tool("tshark") else {
        return;
    };
    // tshark dissects the flow on port 8000 as SSH when told to; one KEXINIT per line, each side's hash in its
    // own column.
    let run = Command::new(tshark)
        .args(["-r", pcap.to_str().unwrap(), "-d", "tcp.port==8000,ssh"])
        .args(["-Y", "ssh.message_code==20", "-T", "fields"])
        .args(["-e", "tcp.srcport", "-e", "tcp.dstport"])
        .args(["-e", "ssh.kex.hassh", "-e", "ssh.kex.hasshserver"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    let mut theirs = BTreeSet::new();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    for c in rows.iter().filter(|r| !r[2].is_empty()) {
        let s = rows
            .iter()
            .find(|r| r[0] == c[1] && r[1] == c[0] && !r[3].is_empty())
            .expect("the server's KEXINIT");
        theirs.insert((
            c[0].parse().unwrap(),
            c[1].parse().unwrap(),
            c[2].to_string(),
            s[3].to_string(),
        ));
    }
    assert_eq!(ours, theirs);
    flowbundle_testsupport::reference(
        "hassh of ssh.pcap equals tshark's ssh.kex.hassh/hasshserver",
    );
}

#[test]
fn hassh_rules_fire_on_their_side_and_value() {
    let Some(pcap) = flowbundle_testsupport::data("ndpi/pcap/ssh.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("hassh.rules");
    std::fs::write(
        &rules,
        concat!(
            "alert ssh any any -> any any (msg:\"client hassh\"; ssh.hassh; content:\"21b457a327ce7a2d4fce5ef2c42400bd\"; sid:1;)\n",
            "alert ssh any any -> any any (msg:\"legacy server hassh\"; hassh.server; content:\"b1c6c0d56317555b85c7005a3de29325\"; sid:2;)\n",
            "alert ssh any any -> any any (msg:\"client string\"; ssh.hassh.string; content:\"arcfour256\"; content:\"none,zlib@openssh.com,zlib\"; endswith; sid:3;)\n",
            "alert ssh any any -> any any (msg:\"server string\"; hassh.server.string; content:\"none,zlib@openssh.com\"; endswith; sid:4;)\n",
            "alert ssh any any -> any any (msg:\"server hash as client's: never\"; ssh.hassh; content:\"b1c6c0d56317555b85c7005a3de29325\"; sid:5;)\n",
            "alert ssh any any -> any any (msg:\"client hash as server's: never\"; ssh.hassh.server; content:\"21b457a327ce7a2d4fce5ef2c42400bd\"; sid:6;)\n",
            "alert ssh any any -> any any (msg:\"server string has no zlib at its end: never\"; ssh.hassh.server.string; content:\"zlib@openssh.com,zlib\"; endswith; sid:7;)\n",
        ),
    )
    .unwrap();
    let lines = eve(&pcap, &["--rules", rules.to_str().unwrap()]);
    let mut fired: Vec<(u64, u64)> = lines
        .iter()
        .filter(|v| v["event_type"] == "alert")
        .map(|v| {
            (
                v["alert"]["signature_id"].as_u64().unwrap(),
                v["src_port"].as_u64().unwrap(),
            )
        })
        .collect();
    fired.sort();
    // Once each, in the direction the fingerprint travelled.
    assert_eq!(fired, [(1, 58395), (2, 22), (3, 58395), (4, 22)]);
    // A rule that reads HASSH turns it on, and EVE logs it then, as Suricata's keywords do.
    assert!(
        hasshes(&lines)
            .iter()
            .all(|(_, _, c, s)| c.len() == 32 && s.len() == 32)
    );
}
