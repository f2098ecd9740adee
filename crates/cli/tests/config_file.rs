//! The configuration file beyond rule variables: `rule-files` under `default-rule-path`, the `eve-log` output's
//! file, engine settings (`flow-timeouts`, `stream`) in suricata.yaml's layout, and `--set KEY=VALUE` over them.

use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(args)
        .output()
        .expect("running flowbundle")
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

/// The `flows: N created` count of an inspect summary.
fn flows_created(summary: &str) -> u64 {
    summary
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("flows: "))
        .and_then(|r| r.split_once(" created"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no flows line: {summary}"))
}

#[test]
fn rule_files_and_the_eve_file_come_from_the_configuration() {
    let (Some(cap), Some(rules)) = (
        flowbundle_testsupport::data("reassembly/example2.pcap"),
        flowbundle_testsupport::data("rules/snort3-community.rules"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rule_dir = rules.parent().unwrap();
    let site = dir.path().join("site.yaml");
    std::fs::write(
        &site,
        format!(
            "default-rule-path: {}\nrule-files:\n  - snort3-community.rules\ndefault-log-dir: {}\noutputs:\n  \
             - eve-log:\n      enabled: yes\n      filename: eve.json\n",
            rule_dir.display(),
            dir.path().display()
        ),
    )
    .unwrap();
    let by_config = run(&[
        os("inspect"),
        cap.as_os_str(),
        os("-c"),
        site.as_os_str(),
        os("--threads"),
        os("1"),
    ]);
    ok(&by_config);
    let by_options = dir.path().join("options.json");
    ok(&run(&[
        os("inspect"),
        cap.as_os_str(),
        os("--rules"),
        rules.as_os_str(),
        os("-o"),
        by_options.as_os_str(),
        os("--threads"),
        os("1"),
    ]));
    let alerts = |p: &Path| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .lines()
            .filter(|l| l.contains("\"event_type\":\"alert\""))
            .map(|l| l.split_once(",\"flow_id\"").map_or(l, |x| x.1).to_string())
            .collect()
    };
    let want = alerts(&by_options);
    assert!(
        !want.is_empty(),
        "the community rules fire on example2.pcap"
    );
    assert_eq!(alerts(&dir.path().join("eve.json")), want);
}

#[test]
fn engine_settings_and_set_overrides() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let summary = |extra: &[&str]| {
        let mut a = vec![os("inspect"), cap.as_os_str(), os("--threads"), os("1")];
        a.extend(extra.iter().map(|s| os(s)));
        ok(&run(&a))
    };
    let default = flows_created(&summary(&[]));
    // Timeouts of 0 s end a flow at every gap between its packets: many more flows.
    let zero: Vec<String> = [
        "default.new",
        "default.established",
        "tcp.new",
        "tcp.established",
        "tcp.closed",
        "udp.new",
        "udp.established",
    ]
    .iter()
    .map(|k| format!("flow-timeouts.{k}=0"))
    .collect();
    let mut args: Vec<&str> = Vec::new();
    for z in &zero {
        args.extend(["--set", z.as_str()]);
    }
    let split = flows_created(&summary(&args));
    assert!(
        split > default * 2,
        "{split} flows with 0 s timeouts, {default} without"
    );
    // The same from a file, and --set over the file.
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site.yaml");
    std::fs::write(
        &site,
        "flow-timeouts:\n  default: {new: 0, established: 0}\n  tcp: {new: 0, established: 0, closed: 0}\n  \
         udp: {new: 0, established: 0}\nstream:\n  midstream: true\n  inline: auto\n",
    )
    .unwrap();
    let site_s = site.to_str().unwrap();
    let out = run(&[
        os("inspect"),
        cap.as_os_str(),
        os("--threads"),
        os("1"),
        os("-c"),
        os(site_s),
    ]);
    assert_eq!(flows_created(&ok(&out)), split);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not read") && err.contains("stream.inline"),
        "{err}"
    );
    let back = flows_created(&summary(&[
        "-c",
        site_s,
        "--set",
        "flow-timeouts.tcp.established=600",
        "--set",
        "flow-timeouts.tcp.new=60",
        "--set",
        "flow-timeouts.tcp.closed=60",
    ]));
    assert!(
        back < split,
        "--set over the file: {back} flows, {split} from the file alone"
    );
    // `config dump` shows each value with where it came from.
    let dump = ok(&run(&[
        os("config"),
        os("dump"),
        os("-c"),
        os(site_s),
        os("--set"),
        os("stream.midstream=false"),
    ]));
    assert!(dump.contains("midstream: false  # --set\n"), "{dump}");
    assert!(dump.contains("    new: 0  # "), "{dump}");
    // A bad key value is one line.
    let bad = run(&[
        os("config"),
        os("dump"),
        os("--set"),
        os("stream.midstream=perhaps"),
    ]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(
        err.trim_end(),
        "flowbundle: --set stream.midstream: expected yes or no"
    );
}

/// `--set outputs.eve-log.filename=PATH` without a configuration file sends EVE there, as the file's eve-log item
/// would; `config dump` says where the value came from.
#[test]
fn set_names_the_eve_log_output_without_a_file() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let eve = dir.path().join("by-set.json");
    let set = format!("outputs.eve-log.filename={}", eve.display());
    ok(&run(&[
        os("inspect"),
        cap.as_os_str(),
        os("--set"),
        os(&set),
        os("--threads"),
        os("1"),
    ]));
    let text = std::fs::read_to_string(&eve).unwrap();
    assert!(text.contains("\"event_type\":\"flow\""), "{text}");
    let dump = ok(&run(&[os("config"), os("dump"), os("--set"), os(&set)]));
    assert!(
        dump.contains(&format!("filename: \"{}\"  # --set", eve.display())),
        "{dump}"
    );
}

/// `engine: init-failure-fatal: yes` (Suricata's `--init-errors-fatal`): a rule that does not load fails the run
/// before anything is inspected; without it (or with `no`) the rule is reported and skipped and the run goes on.
#[test]
fn init_failure_fatal_makes_a_bad_rule_fail_the_run() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("local.rules");
    std::fs::write(
        &rules,
        "alert tcp any any -> any any (msg:\"good\"; content:\"GET\"; sid:1;)\n\
         alert tcp any any -> any any (msg:\"bad\"; no-such-keyword; sid:2;)\n",
    )
    .unwrap();
    let inspect = |conf: Option<&str>, set: Option<&str>| {
        let mut args = vec![
            os("inspect"),
            cap.as_os_str(),
            os("--rules"),
            rules.as_os_str(),
            os("--threads"),
            os("1"),
        ];
        let site = dir.path().join("site.yaml");
        if let Some(text) = conf {
            std::fs::write(&site, text).unwrap();
            args.extend([os("-c"), site.as_os_str()]);
        }
        let set = set.map(|s| format!("engine.init-failure-fatal={s}"));
        if let Some(s) = &set {
            args.extend([os("--set"), os(s)]);
        }
        run(&args)
    };
    // Reported and skipped by default, and with `no`.
    for conf in [None, Some("engine:\n  init-failure-fatal: no\n")] {
        let out = inspect(conf, None);
        assert!(
            out.status.success(),
            "{conf:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Fatal from the file and from --set: the run fails, nothing inspected.
    for (conf, set) in [
        (Some("engine:\n  init-failure-fatal: yes\n"), None),
        (None, Some("yes")),
    ] {
        let out = inspect(conf, set);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{conf:?} {set:?}: {err}");
        assert!(err.contains("local.rules"), "{conf:?} {set:?}: {err}");
        assert!(out.stdout.is_empty(), "{conf:?} {set:?}: a run went ahead");
    }
}
