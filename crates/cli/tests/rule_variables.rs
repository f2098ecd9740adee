//! Rule variables, the configuration file and thresholds through the command line, on the shared captures:
//! addresses match as Suricata's defaults say (the SSH rule of issue-report fame no longer fires on TLS flows),
//! `--var` and `--config` move them, `config dump` shows the effective values, and thresholded alerts are the same
//! with one worker or two.

use flowbundle_testsupport::data;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(args)
        .output()
        .expect("running flowbundle")
}

/// `inspect` with `extra` arguments then `-- inputs`, EVE to standard output: (alert lines, stderr).
fn alerts(inputs: &[PathBuf], extra: &[&str]) -> (Vec<String>, String) {
    let mut args: Vec<&std::ffi::OsStr> = vec!["inspect".as_ref(), "-o".as_ref(), "-".as_ref()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    args.push("--".as_ref());
    args.extend(inputs.iter().map(|p| p.as_os_str()));
    let out = run(&args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "inspect {extra:?}: {err}");
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"event_type\":\"alert\""))
        .map(str::to_owned)
        .collect();
    (lines, err)
}

fn count(lines: &[String], sid: u32) -> usize {
    let needle = format!("\"signature_id\":{sid},");
    lines.iter().filter(|l| l.contains(&needle)).count()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("writing a test file");
    p
}

/// Snort's community sid 1325 is an SSH rule (`$EXTERNAL_NET any -> $HOME_NET $SSH_PORTS`): with every variable
/// read as `any` it fired ten times on the TLS flows of example2.pcap. With Suricata's defaults it does not.
#[test]
fn community_ssh_rule_no_longer_fires_on_tls_flows() {
    let (Some(rules), Some(cap)) = (
        data("rules/snort3-community.rules"),
        data("reassembly/example2.pcap"),
    ) else {
        return;
    };
    let r = rules.to_string_lossy().into_owned();
    let (lines, err) = alerts(&[cap], &["--threads", "1", "--rules", &r]);
    assert_eq!(count(&lines, 1325), 0);
    assert!(
        err.lines().any(|l| l
            .starts_with("notice: rules use variables left at Suricata's defaults: ")
            && l.contains("HOME_NET")),
        "{err}"
    );
}

#[test]
fn var_and_config_move_home_net() {
    let Some(cap) = data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rules = write(
        dir.path(),
        "t.rules",
        "alert tcp any any -> $HOME_NET any (msg:\"syn to home\"; flags:S; sid:1;)\n\
         alert tcp any any -> $EXTERNAL_NET any (msg:\"syn to the outside\"; flags:S; sid:2;)\n\
         alert tcp any any -> $MY_NET any (msg:\"undefined\"; flags:S; sid:3;)\n",
    );
    let r = rules.to_string_lossy().into_owned();
    let caps = [cap];
    let (base, err) = alerts(&caps, &["--threads", "1", "--rules", &r]);
    // The capture's client is 10.0.0.1 and talks to public addresses: every SYN goes out.
    let syns = count(&base, 2);
    assert!(syns > 100 && count(&base, 1) == 0, "{syns}");
    assert!(err.contains("undefined variable $MY_NET"), "{err}");
    // Two of the servers made "home" by --var: their SYNs change sides, none is lost.
    let (moved, err) = alerts(
        &caps,
        &[
            "--threads",
            "1",
            "--rules",
            &r,
            "--var",
            "HOME_NET=[212.199.202.69,212.199.202.53]",
        ],
    );
    assert_eq!(count(&moved, 1), 20);
    assert_eq!(count(&moved, 1) + count(&moved, 2), syns);
    assert!(!err.contains("defaults: EXTERNAL_NET, HOME_NET"), "{err}");
    // The same from a configuration file in suricata.yaml's layout.
    let conf = write(
        dir.path(),
        "site.yaml",
        "%YAML 1.1\n---\nvars:\n  address-groups:\n    HOME_NET: \"[212.199.202.0/24]\"\n  port-groups:\n    HTTP_PORTS: 80\nlogging: {}\n",
    );
    let c = conf.to_string_lossy().into_owned();
    let (from_file, err) = alerts(&caps, &["--threads", "1", "--rules", &r, "-c", &c]);
    // The /24 holds the two servers above and more.
    assert!(count(&from_file, 1) > 20, "{}", count(&from_file, 1));
    assert_eq!(count(&from_file, 1) + count(&from_file, 2), syns);
    assert!(err.contains("not read: logging"), "{err}");
}

#[test]
fn config_dump_and_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    let conf = write(
        dir.path(),
        "site.yaml",
        "vars:\n  address-groups:\n    HOME_NET: \"[10.1.0.0/16]\"\n",
    );
    let out = run(&[
        "config".as_ref(),
        "dump".as_ref(),
        "--config".as_ref(),
        conf.as_os_str(),
        "--var".as_ref(),
        "SSH_PORTS=[22,2222]".as_ref(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!(
        "    HOME_NET: \"[10.1.0.0/16]\"  # {}:3\n",
        conf.display()
    )));
    assert!(
        text.contains("    SSH_PORTS: \"[22,2222]\"  # --var\n"),
        "{text}"
    );
    assert!(
        text.contains("    EXTERNAL_NET: \"!$HOME_NET\"  # default\n"),
        "{text}"
    );
    // The dump is itself a configuration file.
    let again = write(dir.path(), "dump.yaml", &text);
    let out2 = run(&[
        "config".as_ref(),
        "dump".as_ref(),
        "-c".as_ref(),
        again.as_os_str(),
    ]);
    assert!(out2.status.success());
    let bad = write(
        dir.path(),
        "bad.yaml",
        "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8,$LAN]\"\n",
    );
    let out = run(&[
        "config".as_ref(),
        "dump".as_ref(),
        "-c".as_ref(),
        bad.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        err.trim_end(),
        format!(
            "flowbundle: {}:3: HOME_NET: undefined variable $LAN",
            bad.display()
        )
    );
}

/// Thresholds count across flows, so they are applied where the events meet in input order: one worker and two
/// (under two schedulers) give the same alerts, line for line, and the thresholds do suppress.
#[test]
fn thresholded_alerts_are_the_same_serial_and_parallel() {
    let (Some(a), Some(b)) = (
        data("reassembly/example2.pcap"),
        data("ndpi/pcap/bt-http.pcapng"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rules = write(
        dir.path(),
        "t.rules",
        "alert tcp any any -> any any (msg:\"every syn\"; flags:S; sid:1;)\n\
         alert tcp any any -> any any (msg:\"limit\"; flags:S; threshold: type limit, track by_src, count 2, seconds 60; sid:3;)\n\
         alert tcp any any -> any any (msg:\"filter\"; flags:S; detection_filter: track by_dst, count 3, seconds 10; sid:4;)\n\
         alert ip any any -> any any (msg:\"both\"; ttl:<255; threshold: type both, track by_rule, count 5, seconds 1; sid:5;)\n\
         alert tcp any any -> any any (msg:\"every 3rd\"; flow:established; content:\"|16 03|\"; threshold: type threshold, track by_both, count 3, seconds 30; sid:6;)\n",
    );
    let r = rules.to_string_lossy().into_owned();
    let caps = [a, b];
    let (serial, _) = alerts(&caps, &["--threads", "1", "--rules", &r]);
    let all = count(&serial, 1);
    // Two clients send the SYNs: at most two alerts each.
    assert!(all > 100);
    assert!(
        (1..=4).contains(&count(&serial, 3)),
        "{}",
        count(&serial, 3)
    );
    assert!(count(&serial, 4) > 0 && count(&serial, 4) < all);
    assert!(count(&serial, 5) > 0 && count(&serial, 6) > 0);
    for sched in ["lfb", "rss"] {
        let (par, _) = alerts(
            &caps,
            &["--threads", "2", "--scheduler", sched, "--rules", &r],
        );
        assert!(par == serial, "--threads 2 --scheduler {sched} differs");
    }
}

/// The `src_ip` of an EVE line.
fn src_ip(line: &str) -> &str {
    let at = line.find("\"src_ip\":\"").expect("an alert has src_ip") + 10;
    let len = line[at..].find('"').expect("a closed string");
    &line[at..at + len]
}

/// `--threshold-file`: a suppress removes a rule's alerts (all of them, or those of one source address), a
/// threshold line replaces the rule's own, and a line it cannot read is named with its file and line while the others
/// still apply.
#[test]
fn threshold_file_suppresses_and_limits() {
    let Some(cap) = data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rules = write(
        dir.path(),
        "t.rules",
        "alert tcp any any -> any any (msg:\"every syn\"; flags:S; sid:1;)\n\
         alert tcp any any -> any any (msg:\"suppressed\"; flags:S; sid:2;)\n\
         alert tcp any any -> any any (msg:\"limited\"; flags:S; threshold: type limit, track by_rule, count 1000, seconds 60; sid:3;)\n\
         alert tcp any any -> any any (msg:\"one source suppressed\"; flags:S; sid:5;)\n",
    );
    let r = rules.to_string_lossy().into_owned();
    let caps = [cap];
    let (plain, _) = alerts(&caps, &["--threads", "1", "--rules", &r]);
    let all = count(&plain, 1);
    assert!(all > 10, "{all}");
    assert_eq!(count(&plain, 2), all);
    assert_eq!(count(&plain, 3), all);
    let syn: Vec<&String> = plain
        .iter()
        .filter(|l| l.contains("\"signature_id\":1,"))
        .collect();
    let quiet = src_ip(syn[0]).to_string();
    let others = syn.iter().filter(|l| src_ip(l) != quiet).count();
    let tf = write(
        dir.path(),
        "threshold.config",
        &format!(
            "suppress gen_id 1, sig_id 2\n\
             threshold gen_id 1, sig_id 3, type limit, track by_rule, count 2, seconds 3600\n\
             suppress gen_id 1, sig_id 5, track by_src, ip {quiet}\n\
             suppress gen_id 1, sig_id 1, track by_moon, ip 10.0.0.1\n"
        ),
    );
    let t = tf.to_string_lossy().into_owned();
    let (lines, err) = alerts(
        &caps,
        &["--threads", "1", "--rules", &r, "--threshold-file", &t],
    );
    assert_eq!(count(&lines, 1), all, "the unreadable line changes nothing");
    assert_eq!(count(&lines, 2), 0);
    assert_eq!(count(&lines, 3), 2);
    assert_eq!(count(&lines, 5), others);
    assert!(others < all);
    assert!(
        err.contains(&format!(
            "{}:4: suppress: unknown track `by_moon`",
            tf.display()
        )),
        "{err}"
    );
    // The parallel run filters the same alerts.
    let (par, _) = alerts(
        &caps,
        &["--threads", "2", "--rules", &r, "--threshold-file", &t],
    );
    assert!(par == lines, "--threads 2 differs");
}

/// A `classification.config` beside the rules (or named with `--classification-file`) sets EVE's `alert.category`
/// and `alert.severity`; a rule's `priority` still wins; a broken line is named with its file and line.
#[test]
fn classification_file_sets_category_and_severity() {
    let Some(cap) = data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "t.rules",
        "alert tcp any any -> any any (msg:\"syn\"; flags:S; classtype:site-scan; sid:1;)\n\
         alert tcp any any -> any any (msg:\"syn, priority\"; flags:S; classtype:site-scan; priority:1; sid:2;)\n\
         alert tcp any any -> any any (msg:\"syn, stock\"; flags:S; classtype:trojan-activity; sid:3;)\n",
    );
    let cls = write(
        dir.path(),
        "classification.config",
        "# site classes\nconfig classification: site-scan,Site Scan Seen,4\n\
         config classification: trojan-activity,Trojan Here,2\nconfig classification: broken\n",
    );
    let d = dir.path().to_string_lossy().into_owned();
    let (lines, err) = alerts(&[cap], &["--threads", "1", "--rules", &d]);
    let first = |sid: u32| {
        let needle = format!("\"signature_id\":{sid},");
        lines
            .iter()
            .find(|l| l.contains(&needle))
            .unwrap_or_else(|| panic!("no alert of sid {sid}"))
            .clone()
    };
    let one = first(1);
    assert!(
        one.contains("\"category\":\"Site Scan Seen\",\"severity\":4"),
        "{one}"
    );
    assert!(first(2).contains("\"category\":\"Site Scan Seen\",\"severity\":1"));
    assert!(first(3).contains("\"category\":\"Trojan Here\",\"severity\":2"));
    assert!(
        err.contains(&format!(
            "{}:4: expected three comma-separated fields",
            cls.display()
        )),
        "{err}"
    );
    // Without the file the class is unknown and its rules are skipped.
    std::fs::remove_file(&cls).unwrap();
    let (lines, _) = alerts(
        &[data("reassembly/example2.pcap").unwrap()],
        &["--threads", "1", "--rules", &d],
    );
    assert_eq!(count(&lines, 1) + count(&lines, 2), 0);
    assert!(count(&lines, 3) > 0);
}
