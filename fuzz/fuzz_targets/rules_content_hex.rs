//! A hex pattern file as `inspect --content-hex` reads it (one hex-encoded pattern a line, `#` comments), then
//! the rules it makes matched on the file's own bytes. Never panics; the alerts do not depend on the split.
#![no_main]

use flowbundle_rules::RuleSet;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok((rules, report)) = RuleSet::from_content_hex_bytes(data, Path::new("fuzz.hex")) else {
        return;
    };
    assert_eq!(rules.len(), report.loaded);
    let cuts = [data.len() / 3, data.len() / 2];
    if let Err(e) = flowbundle_rules::testing::match_checked(&rules, data, &cuts) {
        panic!("{e}");
    }
});
