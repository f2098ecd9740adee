//! `threshold.config` text (`threshold`, `event_filter`, `rate_filter`, `suppress` lines, continued lines): read
//! as `inspect --threshold-file` reads it, then asked for the entries of a few signature ids. Never panics; every
//! line it reports is a line of the text.
#![no_main]

use flowbundle_rules::{ThresholdConfig, Vars};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (cfg, errors) = ThresholdConfig::parse(&text, &Vars::suricata_defaults());
    let lines = text.lines().count();
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
