//! The Snort 3 community rule set loads with every rule accounted for, and the counts are pinned.
//!
//! When the supported subset grows, these numbers move: update them together with the change that moved them.

mod common;

use flowbundle_rules::{Buffer, RuleSet};

/// Skipped rules per reason (the first unsupported keyword or keyword option of each rule).
const PINNED_SKIPS: &[(&str, usize)] = &[
    // DCE/RPC over SMB (`service:netbios-ssn`): no SMB parser hands the named pipe's bytes to the DCE/RPC parser.
    ("dcerpc buffer on a non-dcerpc protocol", 5),
    // Suricata's default configuration has no SIP_SERVERS (Snort's has): Suricata refuses these rules too.
    ("undefined variable $SIP_SERVERS", 9),
    ("header keyword with an http buffer", 1),
    ("isdataat from a variable", 1),
];

#[test]
fn community_rules_load_with_every_skip_explained() {
    let Some(path) = flowbundle_testsupport::data("rules/snort3-community.rules") else {
        return;
    };
    let (set, report) = RuleSet::load_files(&[&path]).expect("file loads");
    println!("{}", report.summary());
    assert_eq!(report.rules_read, 4004);
    assert_eq!(report.errors_total, 0, "{:#?}", report.errors);
    assert_eq!(report.loaded, 3988);
    assert!(report.loaded * 100 >= report.rules_read * 98);
    assert_eq!(report.skipped, 16);
    assert_eq!(
        report.rules_read,
        report.loaded + report.skipped + report.errors_total
    );
    let mut got: Vec<(&str, usize)> = report
        .skip_reasons
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    let mut want = PINNED_SKIPS.to_vec();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(report.skipped_rules.len(), report.skipped);
    assert!(
        report
            .skipped_rules
            .iter()
            .all(|s| s.sid.is_some() && s.line > 0)
    );
    assert_eq!(set.len(), report.loaded);
    // $HOME_NET and the others are Suricata's defaults, and reported as such.
    assert!(report.vars_defaulted.iter().any(|v| v == "HOME_NET"));
    // Snort 3 sticky `http_uri` is read as a buffer, not as a content modifier.
    let http_uri = set
        .rules()
        .iter()
        .filter(|r| r.groups.iter().any(|g| g.buffer == Buffer::HttpUri))
        .count();
    assert!(http_uri > 1000, "{http_uri} rules inspect http_uri");
    // `file_data` with `service:ftp-data,...` or `service:ftp` inspects the files of FTP data connections.
    let mut ftp_files: Vec<u32> = set
        .rules()
        .iter()
        .filter(|r| r.groups.iter().any(|g| g.buffer == Buffer::FtpDataFileData))
        .map(|r| r.sid)
        .collect();
    ftp_files.sort();
    assert_eq!(ftp_files, vec![26381, 38950]);
    // The per-flow window stays bounded.
    assert!(
        report.stream_retain <= 2 * 1024 + 257,
        "{}",
        report.stream_retain
    );
}
