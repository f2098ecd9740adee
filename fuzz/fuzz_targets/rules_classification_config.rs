//! `classification.config` bytes (`config classification: name,description,priority` lines), read as
//! `inspect --classification-file` reads them (`Classifications::parse_config_bytes` over the standard table, a line
//! that is not UTF-8 skipped and reported). Never panics; every line it reports is a line of the text, and every
//! line that is not UTF-8 is reported; every class a line defines can be looked up by its name;
//! and a rule naming the first such class (when the name can stand in a rule option) loads with its priority as
//! the alert severity.
#![no_main]

use flowbundle_rules::text::{line_text, physical_lines};
use flowbundle_rules::{Classifications, LoadOptions, RuleSet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut classes = Classifications::standard();
    let errors = classes.parse_config_bytes(data);
    let lines = physical_lines(data).count();
    for (line, _) in &errors {
        assert!(*line >= 1 && *line <= lines, "line {line} of {lines}");
    }
    let mut first = None;
    for (n, raw) in physical_lines(data) {
        let i = n - 1;
        let Ok(line) = line_text(raw) else {
            assert!(
                errors.iter().any(|(l, _)| *l == n),
                "line {n} not UTF-8, not reported"
            );
            continue;
        };
        let Some(rest) = line.trim().strip_prefix("config classification:") else {
            continue;
        };
        if errors.iter().any(|(l, _)| *l == i + 1) {
            continue;
        }
        let name = rest.split_once(',').map(|(n, _)| n.trim()).unwrap_or("");
        let class = classes
            .get(name)
            .unwrap_or_else(|| panic!("line {}: class `{name}` not found", i + 1));
        assert!(class.priority > 0);
        if first.is_none() && !name.contains([';', '"', '\\', '(', ')', '\r', '\n']) {
            first = Some((name.to_string(), class.priority));
        }
    }
    let Some((name, priority)) = first else {
        return;
    };
    let opts = LoadOptions {
        classifications: classes,
        ..LoadOptions::default()
    };
    let rule = format!("alert tcp any any -> any any (msg:\"c\"; classtype:{name}; sid:1;)\n");
    let (set, report) = RuleSet::parse_with(&[("<text>", rule.as_bytes())], &opts)
        .unwrap_or_else(|e| panic!("`{rule}`: {e}"));
    assert_eq!(report.loaded, 1, "`{rule}`: {report:?}");
    assert_eq!(set.rules()[0].severity, priority, "`{rule}`");
});
