//! A rule load says what went wrong: each unreadable rule as `file:line: reason` (capped, the rest counted), every
//! skipped or unreadable rule in `--rules-report`, and a one-line refusal when nothing loads from a non-empty set.

use flowbundle_testsupport::data;
use std::process::{Command, Output};

fn inspect(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .args(args)
        .output()
        .expect("running flowbundle")
}

#[test]
fn a_capture_given_as_rules_is_refused_with_its_errors_shown() {
    let Some(cap) = data("reassembly/example2.pcap") else {
        return;
    };
    let out = inspect(&[cap.as_os_str(), "--rules".as_ref(), cap.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("flowbundle: no rule loaded from "),
        "{err}"
    );
    let shown = err
        .lines()
        .filter(|l| l.starts_with(&format!("{}:", cap.display())))
        .count();
    assert_eq!(shown, 20, "{err}");
    assert!(err.contains("more rule errors"), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).is_empty(),
        "a summary was printed"
    );
}

#[test]
fn errors_are_shown_with_file_and_line_and_the_report_lists_every_skipped_sid() {
    let (Some(et), Some(community), Some(cap)) = (
        data("rules/et-open/emerging-phishing.rules"),
        data("rules/snort3-community.rules"),
        data("reassembly/DnsPackets.pcap"),
    ) else {
        return;
    };
    // The ET rule with a quote inside its pcre, and a broken rule after it.
    let et_text = std::fs::read_to_string(&et).unwrap();
    let pcre_rule = et_text
        .lines()
        .find(|l| l.contains("sid:2029732;"))
        .expect("sid 2029732 in emerging-phishing.rules");
    let dir = tempfile::tempdir().unwrap();
    let mixed = dir.path().join("mixed.rules");
    std::fs::write(
        &mixed,
        format!("{pcre_rule}\nalert tcp any any -> any any (content:\"x\"; sid:7\n"),
    )
    .unwrap();
    let out = inspect(&[cap.as_os_str(), "--rules".as_ref(), mixed.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("2 rules read: 1 loaded, 0 skipped, 1 errors"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}:2: missing `)`", mixed.display())),
        "{err}"
    );

    let report = dir.path().join("report.csv");
    let out = inspect(&[
        cap.as_os_str(),
        "--rules".as_ref(),
        community.as_os_str(),
        "--rules-report".as_ref(),
        report.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let skipped: usize = err
        .split(" loaded, ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no skipped count: {err}"));
    // The community set keeps a handful of named skips (SIP variables, DCE/RPC over SMB, tag, ...).
    assert!(skipped >= 10, "{err}");
    let csv = std::fs::read_to_string(&report).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("file,line,sid,outcome,reason"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), skipped);
    for row in &rows {
        let f: Vec<&str> = row.splitn(5, ',').collect();
        assert_eq!(f[3], "skipped", "{row}");
        assert!(f[2].parse::<u32>().is_ok(), "no sid: {row}");
        assert!(!f[4].is_empty(), "no reason: {row}");
    }
    // A SIP rule: Suricata's default variables have no SIP_SERVERS, so it is skipped, naming it.
    let sid_11968 = community_line_of(&community, 11968);
    assert!(
        rows.iter().any(|r| r.contains(&format!(
            ",{sid_11968},11968,skipped,undefined variable $SIP_SERVERS"
        ))),
        "sid 11968 (line {sid_11968}) missing"
    );
}

/// The line of the community file that holds `sid`.
fn community_line_of(path: &std::path::Path, sid: u32) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    1 + text
        .lines()
        .position(|l| l.contains(&format!(" sid:{sid};")))
        .unwrap()
}

/// A text input with a line past the bound (rules, `--content-hex`, threshold and classification files, the YAML
/// configuration) fails the run in one line naming the file and the line, read no further than the bound: built
/// here, a file whose third line is 100,000 bytes long.
#[test]
fn a_line_past_the_bound_fails_the_run_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("empty.pcap");
    let mut pcap = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    pcap.extend_from_slice(&[0; 8]);
    pcap.extend_from_slice(&65535u32.to_le_bytes());
    pcap.extend_from_slice(&1u32.to_le_bytes());
    std::fs::write(&cap, &pcap).unwrap();
    let long = |name: &str, first: &str| {
        let path = dir.path().join(name);
        let mut text = format!("{first}\n# a comment\n").into_bytes();
        text.extend(std::iter::repeat_n(b'a', 100_000));
        text.push(b'\n');
        std::fs::write(&path, &text).unwrap();
        path
    };
    let good = dir.path().join("good.rules");
    std::fs::write(
        &good,
        "alert ip any any -> any any (msg:\"x\"; content:\"x\"; sid:1;)\n",
    )
    .unwrap();
    let rules = long(
        "long.rules",
        "alert ip any any -> any any (msg:\"x\"; content:\"x\"; sid:1;)",
    );
    let hex = long("long.hex", "4142");
    let threshold = long("threshold.config", "suppress gen_id 1, sig_id 1");
    let classification = long(
        "classification.config",
        "config classification: misc,Misc,3",
    );
    let config = long("flowbundle.yaml", "%YAML 1.1");
    let cases: Vec<(Vec<&std::ffi::OsStr>, &std::path::Path)> = vec![
        (vec!["--rules".as_ref(), rules.as_os_str()], &rules),
        (vec!["--content-hex".as_ref(), hex.as_os_str()], &hex),
        (
            vec![
                "--rules".as_ref(),
                good.as_os_str(),
                "--threshold-file".as_ref(),
                threshold.as_os_str(),
            ],
            &threshold,
        ),
        (
            vec![
                "--rules".as_ref(),
                good.as_os_str(),
                "--classification-file".as_ref(),
                classification.as_os_str(),
            ],
            &classification,
        ),
        (vec!["--config".as_ref(), config.as_os_str()], &config),
    ];
    for (args, path) in cases {
        let mut all = vec![cap.as_os_str()];
        all.extend(args);
        let out = inspect(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", path.display());
        assert_eq!(err.lines().count(), 1, "{}: {err}", path.display());
        assert!(
            err.contains(&format!(
                "{}:3: line longer than 65536 bytes",
                path.display()
            )),
            "{err}"
        );
    }
}
