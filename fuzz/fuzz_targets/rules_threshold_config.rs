//! `threshold.config` bytes (`threshold`, `event_filter`, `rate_filter`, `suppress` lines, continued lines): read
//! as `inspect --threshold-file` reads them (`ThresholdConfig::parse_bytes`, a line that is not UTF-8 skipped and
//! reported), then asked for the entries of a few signature ids. Never panics; every line it reports is a line of
//! the text; on UTF-8 text it reads as the text reader does.
#![no_main]

use flowbundle_rules::{ThresholdConfig, Vars};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (cfg, errors) = ThresholdConfig::parse_bytes(data, &Vars::suricata_defaults());
    if let Ok(text) = std::str::from_utf8(data) {
        assert_eq!(
            ThresholdConfig::parse(text, &Vars::suricata_defaults()),
            (cfg.clone(), errors.clone())
        );
    }
    let lines = flowbundle_rules::text::physical_lines(data).count();
    for e in &errors {
        assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line);
    }
    let src = std::net::IpAddr::from([10, 0, 0, 1]);
    let dst = std::net::IpAddr::from([192, 168, 1, 2]);
    for &b in data.iter().take(8) {
        let (gid, sid) = (u32::from(b & 3), u32::from(b));
        let _ = cfg.threshold_for(gid, sid, None);
        let _ = cfg.rate_filter_for(gid, sid);
        for s in cfg.suppressions_for(gid, sid) {
            let _ = s.applies(src, dst);
        }
    }
});
