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

/// A line past the bound (built here: a file whose third line is 100,000 bytes long) in a rule file, a threshold or
/// a classification file is skipped and reported naming the file and the line, and the run goes on with the other
/// lines (Suricata reads on past a rule line longer than its buffer); in a `--content-hex` pattern file or the
/// YAML configuration it fails the run in one line naming the file and the line, read no further than the bound.
#[test]
fn a_line_past_the_bound_is_skipped_or_fails_the_run_naming_the_file_and_line() {
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
    // Skipped and reported, the run goes on: (arguments, file, what is said).
    let skipped: Vec<(Vec<&std::ffi::OsStr>, &std::path::Path, &str)> = vec![
        (
            vec!["--rules".as_ref(), rules.as_os_str()],
            &rules,
            "rules: 1 loaded, 0 skipped, 1 errors",
        ),
        (
            vec![
                "--rules".as_ref(),
                good.as_os_str(),
                "--threshold-file".as_ref(),
                threshold.as_os_str(),
            ],
            &threshold,
            "configuration lines not applied: 1",
        ),
        (
            vec![
                "--rules".as_ref(),
                good.as_os_str(),
                "--classification-file".as_ref(),
                classification.as_os_str(),
            ],
            &classification,
            "configuration lines not applied: 1",
        ),
    ];
    for (args, path, said) in skipped {
        let mut all = vec![cap.as_os_str()];
        all.extend(args);
        let out = inspect(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        let summary = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}: {err}", path.display());
        let line = format!(
            "{}:3: line longer than 65536 bytes, not read",
            path.display()
        );
        assert_eq!(
            err.lines().filter(|l| l.contains(&line)).count(),
            1,
            "{}: {err}",
            path.display()
        );
        assert!(summary.contains(said), "{}: {summary}", path.display());
    }
    let cases: Vec<(Vec<&std::ffi::OsStr>, &std::path::Path)> = vec![
        (vec!["--content-hex".as_ref(), hex.as_os_str()], &hex),
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

/// A capture with no packet (a classic pcap header only), written into `dir`.
fn empty_capture(dir: &std::path::Path) -> std::path::PathBuf {
    let cap = dir.join("empty.pcap");
    let mut pcap = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    pcap.extend_from_slice(&[0; 8]);
    pcap.extend_from_slice(&65535u32.to_le_bytes());
    pcap.extend_from_slice(&1u32.to_le_bytes());
    std::fs::write(&cap, &pcap).unwrap();
    cap
}

/// A byte that is not UTF-8 in a classification or threshold file skips that line only, as a malformed line does
/// (Suricata logs a bad line of these files and reads on): one warning naming the file and line, the file's count
/// of lines not applied, the summary's count, and the run goes on with the other lines.
#[test]
fn a_config_line_that_is_not_utf8_is_skipped_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let cap = empty_capture(dir.path());
    let rules = dir.path().join("classes.rules");
    std::fs::write(
        &rules,
        "alert ip any any -> any any (msg:\"mine\"; classtype:mine; sid:1;)\r\n\
         alert ip any any -> any any (msg:\"bad\"; classtype:bad; sid:2;)\n\
         alert ip any any -> any any (msg:\"three\"; classtype:three; sid:3;)\n",
    )
    .unwrap();
    let classification = dir.path().join("classification.config");
    std::fs::write(
        &classification,
        b"config classification: mine,Mine,2\n\
          config classification: bad,B\xffad,1\n\
          config classification: three,Three,3\r\n",
    )
    .unwrap();
    let threshold = dir.path().join("threshold.config");
    std::fs::write(
        &threshold,
        b"suppress gen_id 1, sig_id 9\xfe\nsuppress gen_id 1, sig_id 3\n",
    )
    .unwrap();
    let out = inspect(&[
        cap.as_os_str(),
        "--rules".as_ref(),
        rules.as_os_str(),
        "--classification-file".as_ref(),
        classification.as_os_str(),
        "--threshold-file".as_ref(),
        threshold.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    let named = |l: &&str| {
        l.contains(&*classification.to_string_lossy()) || l.contains(&*threshold.to_string_lossy())
    };
    let warnings: Vec<&str> = err.lines().filter(named).collect();
    assert_eq!(
        warnings,
        [
            format!(
                "warning: {}:2: invalid UTF-8 (byte 0xff at column 29)",
                classification.display()
            ),
            format!("warning: {}: 1 lines not applied", classification.display()),
            format!(
                "warning: {}:1: invalid UTF-8 (byte 0xfe at column 28)",
                threshold.display()
            ),
            format!("warning: {}: 1 lines not applied", threshold.display()),
        ],
        "{err}"
    );
    // The classes of lines 1 and 3 were read (their rules load); the rule naming the skipped class does not.
    assert!(
        summary.contains("rules: 2 loaded, 1 skipped, 0 errors"),
        "{summary}"
    );
    assert!(
        summary.contains("configuration lines not applied: 2"),
        "{summary}"
    );
}

/// Hostile rule and configuration files, each ending in one clear line: a rule with NUL bytes is one error naming
/// its line (the others load, CRLF endings read as LF); a rules path that is a directory without `*.rules`, a file
/// that cannot be read, or a missing file fails the run in one line naming it; a YAML configuration with a byte
/// that is not UTF-8 fails the run in one line naming the file, line and column (a YAML document is not read line
/// by line, nor is it by Suricata).
#[test]
fn hostile_rule_and_config_files_end_in_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let cap = empty_capture(dir.path());
    let rules = dir.path().join("nul.rules");
    std::fs::write(
        &rules,
        b"alert ip any any -> any any (msg:\"a\"; content:\"a\"; sid:1;)\r\n\
          alert ip any any -> any any (msg:\"b\0\"; content:\"\0\0\"; sid:2;\0)\r\n\
          \0\0\0\0\n\
          alert ip any any -> any any (msg:\"c\"; content:\"c\"; sid:3;)\r\n",
    )
    .unwrap();
    let out = inspect(&[cap.as_os_str(), "--rules".as_ref(), rules.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Lines 1 and 4 load; line 2 (a NUL where an option stands) is skipped or an error, line 3 (NULs only) an
    // error naming its line.
    assert!(err.contains("4 rules read: 2 loaded, "), "{err}");
    assert!(
        err.contains(&format!("{}:3: ", rules.display())),
        "line 3: {err}"
    );

    let empty_dir = dir.path().join("no-rules-here");
    std::fs::create_dir(&empty_dir).unwrap();
    std::fs::write(empty_dir.join("notes.txt"), "x").unwrap();
    let missing = dir.path().join("missing.rules");
    let yaml = dir.path().join("flowbundle.yaml");
    std::fs::write(
        &yaml,
        b"%YAML 1.1\n---\nvars:\n  address-groups:\n    HOME_NET: \"[10.0.0.\xff]\"\n",
    )
    .unwrap();
    let cases: Vec<(Vec<&std::ffi::OsStr>, String)> = vec![
        (
            vec!["--rules".as_ref(), empty_dir.as_os_str()],
            format!("{}: no *.rules file in this directory", empty_dir.display()),
        ),
        // Opens, then fails to read (as root too): an unreadable file.
        (
            vec!["--rules".as_ref(), "/proc/self/mem".as_ref()],
            "/proc/self/mem: ".to_string(),
        ),
        (
            vec!["--rules".as_ref(), missing.as_os_str()],
            format!("{}: No such file or directory", missing.display()),
        ),
        (
            vec![
                "--rules".as_ref(),
                rules.as_os_str(),
                "--classification-file".as_ref(),
                empty_dir.as_os_str(),
            ],
            format!("{}: Is a directory", empty_dir.display()),
        ),
        (
            vec!["--config".as_ref(), yaml.as_os_str()],
            format!(
                "{}:5: invalid UTF-8 (byte 0xff at column 24)",
                yaml.display()
            ),
        ),
    ];
    for (args, want) in cases {
        let mut all = vec![cap.as_os_str()];
        all.extend(args);
        let out = inspect(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{want}: {err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("flowbundle: ") && last.contains(&want),
            "{want}: {err}"
        );
        // Nothing but the refusal (and, for the rules, the loader's lines before it).
        assert!(
            err.lines()
                .filter(|l| l.starts_with("flowbundle: "))
                .count()
                == 1,
            "{want}: {err}"
        );
    }
}

/// One bad line of a dataset file costs that line only, as in Suricata started without `--init-errors-fatal`: a
/// warning naming the file and line, the count, the summary's count, and the rule loads with the other values. A
/// file mixing dataset and datarep lines is refused whole (as Suricata 8 refuses it): the rule naming it fails.
#[test]
fn a_bad_dataset_line_is_skipped_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let cap = empty_capture(dir.path());
    let rules = dir.path().join("sets.rules");
    std::fs::write(
        &rules,
        "alert http any any -> any any (http.user_agent; dataset:isset,ua,type string,load ua.lst; sid:1;)\n\
         alert dns any any -> any any (dns.query; dataset:isset,mixed,type string,load mixed.lst; sid:2;)\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("ua.lst"), "Y3VybA==\nY3Vy!bA==\naGVsbG8=\n").unwrap();
    std::fs::write(dir.path().join("mixed.lst"), "Y3VybA==\naGVsbG8=,1\n").unwrap();
    let out = inspect(&[cap.as_os_str(), "--rules".as_ref(), rules.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    let summary = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let ua = dir.path().join("ua.lst");
    let warning = format!("warning: {}:2: bad base64 encoding ua", ua.display());
    assert_eq!(err.lines().filter(|l| *l == warning).count(), 1, "{err}");
    assert!(
        err.contains("warning: datasets: 1 lines not loaded"),
        "{err}"
    );
    assert!(summary.contains("dataset lines not loaded: 1"), "{summary}");
    assert!(
        summary.contains("rules: 1 loaded, 0 skipped, 1 errors"),
        "{summary}"
    );
    assert!(
        err.contains("mixed.lst:2: cannot mix dataset and datarep values for set mixed"),
        "{err}"
    );
}
