//! The rule files of the suricata-verify suite: every rule of every test loads, is skipped with a reason, or is an
//! error with a line. This is the rule half of the future suite harness, which runs only tests whose rules all
//! load (see the crate docs); it prints how many test rule files qualify and the skip reasons across the suite.

mod common;

use std::collections::BTreeMap;

use flowbundle_rules::{LoadOptions, RuleSet, Vars};

#[test]
fn suricata_verify_rule_files_are_accounted_for() {
    let Some(root) = flowbundle_testsupport::data("suricata-verify") else {
        return;
    };
    let opts = LoadOptions {
        vars: Vars::suricata_defaults(),
        ..LoadOptions::default()
    };
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    let (mut files, mut clean, mut rules, mut loaded) = (0, 0, 0, 0);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut clean_names = Vec::new();
    for d in dirs {
        let f = d.join("test.rules");
        if !f.exists() {
            continue;
        }
        let (rs, rep) = RuleSet::load_files_with(&[&f], &opts).unwrap();
        assert_eq!(
            rep.rules_read,
            rep.loaded + rep.skipped + rep.errors_total,
            "{}",
            f.display()
        );
        assert_eq!(rs.len(), rep.loaded);
        files += 1;
        rules += rep.rules_read;
        loaded += rep.loaded;
        if rep.skipped == 0 && rep.errors_total == 0 && rep.loaded > 0 {
            clean += 1;
            clean_names.push(
                d.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        if let Ok(out) = std::env::var("SV_REASONS") {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(out)
                .unwrap();
            let name = d
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            for r in rep.skip_reasons.keys() {
                writeln!(f, "{name}\t{r}").unwrap();
            }
            for e in &rep.errors {
                writeln!(f, "{name}\terror: {}", e.message).unwrap();
            }
        }
        for (r, n) in rep.skip_reasons {
            *reasons.entry(r).or_default() += n;
        }
        for e in &rep.errors {
            *reasons
                .entry(format!(
                    "error: {}",
                    e.message.split('`').next().unwrap_or("")
                ))
                .or_default() += 1;
        }
    }
    println!("{files} test.rules files, {clean} load completely; {rules} rules, {loaded} loaded");
    let mut top: Vec<_> = reasons.into_iter().collect();
    top.sort_by_key(|t| std::cmp::Reverse(t.1));
    for (r, n) in top.iter().take(40) {
        println!("  {n:>5}  {r}");
    }
    if let Ok(out) = std::env::var("SV_CLEAN_LIST") {
        std::fs::write(out, clean_names.join("\n")).unwrap();
    }
    assert!(files > 500 && clean > 100, "{files} files, {clean} clean");
}
