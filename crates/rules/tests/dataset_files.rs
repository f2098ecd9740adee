//! Hostile and refused dataset files of suricata-verify: the tests where Suricata refuses to start (bad base64, a bad
//! reputation, dataset and datarep values mixed in one file, absolute or traversing paths for files rules would
//! write, writes switched off). suricata-verify runs Suricata with `--init-errors-fatal`; loading their rules here
//! with it ([`Policy::init_errors_fatal`]) gives the same refusal, as a rule error naming the data file and line
//! where the fault is in one. Without it, as Suricata without it, a bad line of a data file is skipped and
//! reported and the rule loads with the other lines.

use flowbundle_rules::dataset::{Datasets, Policy};
use flowbundle_rules::{LoadOptions, RuleSet};

/// (test folder, rule file, `allow-write`, what Suricata's log says, where our error says it is). The first four
/// are bad lines of a data file (refused only with `--init-errors-fatal`), the rest refused in any case.
const CASES: &[(&str, &str, bool, &str, &str)] = &[
    (
        "datasets-invalid-encoding",
        "test.rules",
        true,
        "bad base64 encoding ua-seen",
        "datasets.csv:1:",
    ),
    (
        "datasets/datarep-bad-datarep-string",
        "datarep.rules",
        true,
        "bad base64 encoding dns_string",
        "dns_string.rep:1:",
    ),
    (
        "datasets/datarep-bad-datarep-value",
        "datarep.rules",
        true,
        "invalid datarep value dns_string",
        "dns_string.rep:1:",
    ),
    (
        "datarep-03-bad-reputation",
        "datarep.rules",
        true,
        "invalid datarep value",
        "dns_md5.rep:1:",
    ),
    (
        "datasets/datarep-datasets-mix",
        "test.rules",
        true,
        "cannot mix dataset and datarep values for set ua-seen",
        "datasets.csv:2:",
    ),
    (
        "datasets/datasets-datarep-mix",
        "datarep.rules",
        true,
        "cannot mix dataset and datarep values for set dns_string",
        "dns_string.rep:2:",
    ),
    (
        "datasets/datasets-absolute-path",
        "test.rules",
        true,
        "absolute paths not allowed: /dns-seen.txt",
        "",
    ),
    (
        "datasets/datasets-parent-path",
        "test.rules",
        true,
        "directory traversals not allowed: namespace/../dns-seen-1.txt",
        "",
    ),
    (
        "datasets/datasets-deny-save",
        "test.rules",
        false,
        "rules containing save/state datasets have been disabled",
        "",
    ),
];

#[test]
fn refused_dataset_files_give_suricatas_error_with_file_and_line() {
    let Some(root) = flowbundle_testsupport::data("suricata-verify") else {
        return;
    };
    let out = std::env::temp_dir().join(format!("flowbundle-dataset-files-{}", std::process::id()));
    for &(folder, rules, allow_write, message, place) in CASES {
        let opts = LoadOptions {
            datasets: Datasets::new(Policy {
                allow_write,
                data_dir: out.clone(),
                init_errors_fatal: true,
                ..Policy::default()
            }),
            ..LoadOptions::default()
        };
        let path = root.join(folder).join(rules);
        let (set, report) = RuleSet::load_files_with(&[&path], &opts).expect("the rule file reads");
        assert!(
            set.is_empty(),
            "{folder}: a rule loaded despite the refusal"
        );
        let hit = report.errors.iter().find(|e| {
            e.message.to_lowercase().contains(&message.to_lowercase()) && e.message.contains(place)
        });
        assert!(
            hit.is_some(),
            "{folder}: no error with `{message}` at `{place}`: {:?}",
            report.errors
        );
        // The rule's own place: the file and its line.
        assert!(report.errors.iter().all(|e| e.line >= 1), "{folder}");
    }
    assert!(
        !out.exists(),
        "a refused load wrote into the data directory"
    );
}

/// Without `--init-errors-fatal` (the default), the suricata-verify data files whose fault is one bad line load
/// their rules: the line is skipped and reported with its file and line, as Suricata logs it and starts. A file
/// mixing dataset and datarep lines, and a rule's path the policy refuses, still fail their rules.
#[test]
fn a_bad_data_line_is_skipped_and_reported_without_init_errors_fatal() {
    let Some(root) = flowbundle_testsupport::data("suricata-verify") else {
        return;
    };
    let out = std::env::temp_dir().join(format!("flowbundle-dataset-lines-{}", std::process::id()));
    for (i, &(folder, rules, allow_write, message, place)) in CASES.iter().enumerate() {
        let opts = LoadOptions {
            datasets: Datasets::new(Policy {
                allow_write,
                data_dir: out.clone(),
                ..Policy::default()
            }),
            ..LoadOptions::default()
        };
        let path = root.join(folder).join(rules);
        let (set, report) = RuleSet::load_files_with(&[&path], &opts).expect("the rule file reads");
        let (skipped, total) = set.datasets().skipped_lines();
        if i < 4 {
            assert_eq!(
                (report.errors_total, set.len()),
                (0, report.rules_read),
                "{folder}: {:?}",
                report.errors
            );
            // datarep-03's file has two bad reputations, the others one bad line.
            assert!((1..=2).contains(&total), "{folder}: {total}");
            assert_eq!(skipped.len(), total, "{folder}");
            let got = skipped[0].to_string();
            assert!(
                got.to_lowercase().contains(&message.to_lowercase()) && got.contains(place),
                "{folder}: {got}"
            );
        } else {
            assert!(
                set.is_empty(),
                "{folder}: a rule loaded despite the refusal"
            );
            assert_eq!(total, 0, "{folder}");
        }
    }
    assert!(!out.exists(), "a load wrote into the data directory");
}
