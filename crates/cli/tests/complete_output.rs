//! What a run with rules writes is complete when the process ends: the loaded rule sets are left to the process's
//! end instead of being freed one by one, and nothing the run writes may depend on that. The EVE file holds every
//! event whole, its alerts are the summary's and the stats record's, the summary names the loaded rules, and two
//! threads write what one writes. A `pcre` value written in several rules (compiled once, shared) alerts in each.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Rules of our own beside the community set: two pairs of rules whose `pcre` values are written twice, one pair on
/// the linear engine and one on the backtracking engine (a look-ahead).
const EXTRA: &str = r#"alert tcp any any -> any any (msg:"status line a"; content:"HTTP/1."; pcre:"/HTTP\/1\.[01] [23]\d\d/"; sid:9000001;)
alert tcp any any -> any any (msg:"status line b"; content:"HTTP/1."; pcre:"/HTTP\/1\.[01] [23]\d\d/"; sid:9000002;)
alert tcp any any -> any any (msg:"look-ahead a"; content:"HTTP/1."; pcre:"/HTTP\/1\.(?=[01] )/"; sid:9000003;)
alert tcp any any -> any any (msg:"look-ahead b"; content:"HTTP/1."; pcre:"/HTTP\/1\.(?=[01] )/"; sid:9000004;)
"#;

struct Run {
    eve: String,
    summary: String,
}

fn run(cap: &Path, rules: &Path, extra: &Path, eve: &Path, threads: &str) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(cap)
        .arg("--rules")
        .arg(rules)
        .arg("--rules")
        .arg(extra)
        .args(["--threads", threads, "--summary", "--eve-stats", "-o"])
        .arg(eve)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Run {
        eve: std::fs::read_to_string(eve).unwrap(),
        summary: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// The number before ` alerts` on the summary's `rules:` line, and the number before ` loaded` on it.
fn summary_rules(summary: &str) -> (u64, u64) {
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with("rules: "))
        .unwrap_or_else(|| panic!("no rules line: {summary}"));
    let number_before = |word: &str| -> u64 {
        let head = &line[..line.find(word).unwrap_or_else(|| panic!("{line}"))];
        let digits = head.trim_end().rsplit([' ', ';']).next().unwrap();
        digits.parse().unwrap_or_else(|_| panic!("{line}"))
    };
    (number_before(" loaded"), number_before(" alerts"))
}

#[test]
fn eve_file_and_summary_are_complete_at_exit_with_rules() {
    let (Some(cap), Some(rules)) = (
        flowbundle_testsupport::data("reassembly/example2.pcap"),
        flowbundle_testsupport::data("rules/snort3-community.rules"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let extra = dir.path().join("extra.rules");
    std::fs::write(&extra, EXTRA).unwrap();
    let mut sorted_events = Vec::new();
    for threads in ["1", "2"] {
        let eve = dir.path().join(format!("eve-{threads}.json"));
        let r = run(&cap, &rules, &extra, &eve, threads);
        assert!(r.eve.ends_with('\n'), "the last line is cut");
        let events: Vec<Value> = r
            .eve
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let kind = |e: &Value| e["event_type"].as_str().unwrap_or("").to_string();
        // The stats record comes last, after every event of the run.
        let stats = events.last().unwrap();
        assert_eq!(kind(stats), "stats", "{}", r.eve.lines().last().unwrap());
        assert_eq!(events.iter().filter(|e| kind(e) == "stats").count(), 1);
        let alerts: Vec<&Value> = events.iter().filter(|e| kind(e) == "alert").collect();
        let (loaded, summary_alerts) = summary_rules(&r.summary);
        assert!(loaded > 3_900, "{}", r.summary);
        assert_eq!(alerts.len() as u64, summary_alerts, "{}", r.summary);
        assert_eq!(stats["stats"]["detect"]["alert"], summary_alerts);
        assert_eq!(
            stats["stats"]["detect"]["engines"][0]["rules_loaded"],
            loaded
        );
        let flows = events.iter().filter(|e| kind(e) == "flow").count();
        assert!(flows > 100, "{flows} flow records");
        // Each rule of a pair alerts where the other does.
        let hits = |sid: u64| {
            alerts
                .iter()
                .filter(|a| a["alert"]["signature_id"] == sid)
                .count()
        };
        assert!(hits(9000001) > 0 && hits(9000003) > 0);
        assert_eq!(hits(9000001), hits(9000002));
        assert_eq!(hits(9000003), hits(9000004));
        let mut lines: Vec<&str> = r
            .eve
            .lines()
            .filter(|l| !l.contains("\"event_type\":\"stats\""))
            .collect();
        lines.sort_unstable();
        sorted_events.push(lines.join("\n"));
    }
    assert!(
        sorted_events[0] == sorted_events[1],
        "two threads wrote other events than one"
    );
}
