//! Suricata's `stats` record (`inspect --eve-stats`): the last EVE line, valid against Suricata 8's EVE schema, and the
//! same totals whether the single-threaded loop or the streaming runtime on two workers ran the capture; the
//! per-worker `threads` section adds up to the totals where a worker counts alone.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Runs `inspect` over `inputs` with `extra`; the EVE lines, parsed.
fn eve(inputs: &[PathBuf], extra: &[&str]) -> Vec<Value> {
    let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .args(inputs)
        .args(["-o", "-", "--eve-stats"])
        .args(extra)
        .output()
        .expect("running flowbundle inspect");
    assert!(
        r.status.success(),
        "inspect {extra:?} failed: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    String::from_utf8_lossy(&r.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("an EVE line is JSON"))
        .collect()
}

/// Checks `v` against the JSON-schema fragment `s` (the subset Suricata's schema uses for `stats`: `type`,
/// `properties`, `additionalProperties: false`, `$ref` into `$defs`). Returns the first violation.
fn check(root: &Value, s: &Value, v: &Value, path: &str) -> Result<(), String> {
    let s = match s.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.trim_start_matches("#/$defs/");
            &root["$defs"][name]
        }
        None => s,
    };
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => v.is_object(),
            "integer" => v.is_u64() || v.is_i64(),
            "number" => v.is_number(),
            "string" => v.is_string(),
            "array" => v.is_array(),
            "boolean" => v.is_boolean(),
            _ => true,
        };
        if !ok {
            return Err(format!("{path}: {v} is not of type {t}"));
        }
    }
    if let Some(obj) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for (k, x) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(sub) => check(root, sub, x, &format!("{path}.{k}"))?,
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{path}.{k}: not in the schema"));
                }
                None => {}
            }
        }
    }
    Ok(())
}

fn stats_of(lines: &[Value]) -> &Value {
    let last = lines.last().expect("EVE output");
    assert_eq!(last["event_type"], "stats", "the stats record comes last");
    assert_eq!(
        lines.iter().filter(|l| l["event_type"] == "stats").count(),
        1
    );
    last
}

#[test]
fn stats_record_validates_and_totals_agree_across_runtimes() {
    let (Some(a), Some(b), Some(frag), Some(schema)) = (
        flowbundle_testsupport::data("reassembly/example.pcap"),
        flowbundle_testsupport::data("ndpi/pcap/dns.pcap"),
        flowbundle_testsupport::data("reassembly/ip4_fragments.pcap"),
        flowbundle_testsupport::data("suricata-eve/schema.json"),
    ) else {
        return;
    };
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(&schema)).unwrap()).unwrap();
    let inputs = [a, b, frag];
    let one = eve(&inputs, &["--threads", "1"]);
    let two = eve(
        &inputs,
        &[
            "--threads",
            "2",
            "--scheduler",
            "lfb",
            "--eve-stats-threads",
        ],
    );
    let s1 = stats_of(&one);
    let s2 = stats_of(&two);

    // The record without `threads` is what Suricata's schema describes: it validates field by field.
    check(&schema, &schema, s1, "").unwrap();
    let mut totals2 = s2.clone();
    let threads = totals2["stats"]
        .as_object_mut()
        .unwrap()
        .remove("threads")
        .expect("--eve-stats-threads adds a threads section");
    check(&schema, &schema, &totals2, "").unwrap();

    // Same totals single- and multi-threaded (uptime aside).
    let strip = |v: &Value| {
        let mut v = v["stats"].clone();
        v.as_object_mut().unwrap().remove("uptime");
        v
    };
    assert_eq!(strip(s1), strip(&totals2));

    let t = &s1["stats"];
    let n = |sec: &str, f: &str| t[sec][f].as_u64().unwrap_or_else(|| panic!("{sec}.{f}"));
    // Every packet read (example.pcap alone has 4,631); fragments absorbed into datagrams are inspected as one.
    assert!(n("capture", "kernel_packets") > 4631);
    assert!(n("capture", "kernel_packets") > n("decoder", "pkts"));
    assert!(n("decoder", "ipv4") > 4000 && n("decoder", "tcp") > 4000 && n("decoder", "udp") > 0);
    assert!(n("decoder", "ipv4") + n("decoder", "ipv6") <= n("decoder", "pkts"));
    assert!(n("flow", "total") > 136);
    assert!(
        n("flow", "tcp") + n("flow", "udp") + n("flow", "icmpv4") + n("flow", "icmpv6")
            <= n("flow", "total")
    );
    assert_eq!(n("flow", "tcp"), n("tcp", "sessions"));
    assert_eq!(
        t["flow"]["active"], 0,
        "every flow is ended at the end of the run"
    );

    // Two workers, each counting its own packets: they add up to the totals.
    let threads = threads.as_object().unwrap();
    assert_eq!(threads.len(), 2);
    for field in [
        ("decoder", "pkts"),
        ("decoder", "bytes"),
        ("decoder", "tcp"),
        ("flow", "total"),
    ] {
        let sum: u64 = threads
            .values()
            .map(|w| w[field.0][field.1].as_u64().unwrap())
            .sum();
        assert_eq!(Some(sum), t[field.0][field.1].as_u64(), "{field:?}");
    }
}

/// `--stats-interval SECS` (capture time): `stats` records while the run goes on, each with counters no smaller than
/// the one before, ending with the final record, whose figures are the summary's; the single-threaded loop and two
/// workers alike, under run-to-completion and the staged execution models (whose flow-stage workers publish the
/// packet counters). The input is one capture four times over, an hour apart, so a 30-minute interval falls due at the
/// start of each later copy.
#[test]
fn periodic_stats_records_grow_up_to_the_final_one() {
    let Some(capture) = flowbundle_testsupport::data("reassembly/example.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let merged = dir.path().join("x4.pcap");
    let r = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(["trace", "merge"])
        .arg(&capture)
        .arg("-o")
        .arg(&merged)
        .args([
            "--factor",
            "4",
            "--shift",
            "3600",
            "--no-report",
            "--no-progress",
        ])
        .output()
        .expect("running flowbundle trace merge");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    for threads in [
        &["--threads", "1"][..],
        &["--threads", "2", "--scheduler", "lfb"],
        &[
            "--threads",
            "2",
            "--scheduler",
            "lfb",
            "--workers-read=false",
        ],
        &["--threads", "2", "--scheduler", "lfb", "--exec", "pipeline"],
        &[
            "--threads",
            "2",
            "--scheduler",
            "lfb",
            "--exec",
            "multilayer",
        ],
    ] {
        let mut args = vec!["--stats-interval", "1800", "--summary"];
        args.extend_from_slice(threads);
        let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .arg("inspect")
            .arg(&merged)
            .args(["-o", "-", "--eve-stats"])
            .args(&args)
            .output()
            .expect("running flowbundle inspect");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let records: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("an EVE line is JSON"))
            .filter(|v| v["event_type"] == "stats")
            .collect();
        if threads.len() == 2 && threads[1] == "1" {
            assert_eq!(
                records.len(),
                4,
                "{threads:?}: one record at the start of each later copy, and the final one"
            );
        } else {
            assert!(
                records.len() >= 2,
                "{threads:?}: {} stats records, expected periodic ones before the final one",
                records.len()
            );
        }
        let fields = [
            ("capture", "kernel_packets"),
            ("decoder", "pkts"),
            ("decoder", "bytes"),
            ("decoder", "tcp"),
            ("flow", "total"),
            ("tcp", "sessions"),
        ];
        for pair in records.windows(2) {
            for (sec, f) in fields {
                let (a, b) = (&pair[0]["stats"][sec][f], &pair[1]["stats"][sec][f]);
                assert!(
                    a.as_u64().unwrap() <= b.as_u64().unwrap(),
                    "{threads:?}: {sec}.{f} went from {a} to {b}"
                );
            }
            let ended = |v: &Value| -> u64 {
                v["stats"]["app_layer"]["flow"]
                    .as_object()
                    .map_or(0, |m| m.values().filter_map(Value::as_u64).sum())
            };
            assert!(
                ended(&pair[0]) <= ended(&pair[1]),
                "{threads:?}: app_layer.flow shrank"
            );
        }
        let last = &records[records.len() - 1]["stats"];
        let first = &records[0]["stats"];
        assert!(
            first["decoder"]["pkts"].as_u64() < last["decoder"]["pkts"].as_u64(),
            "{threads:?}: the first record is taken during the run"
        );
        // The final record is the summary's figures.
        let summary = String::from_utf8_lossy(&out.stderr);
        let traffic = summary
            .lines()
            .find(|l| l.trim_start().starts_with("traffic:"))
            .unwrap_or_else(|| panic!("no traffic line in the summary:\n{summary}"));
        // "traffic: N packets read, N inspected, <bytes> on the wire, N flows (peak ...)"
        let parts: Vec<&str> = traffic
            .trim_start()
            .trim_start_matches("traffic: ")
            .split(", ")
            .collect();
        let lead = |i: usize| -> Option<u64> { parts.get(i)?.split(' ').next()?.parse().ok() };
        assert_eq!(
            lead(0),
            last["capture"]["kernel_packets"].as_u64(),
            "{traffic}"
        );
        assert_eq!(lead(1), last["decoder"]["pkts"].as_u64(), "{traffic}");
        assert_eq!(lead(3), last["flow"]["total"].as_u64(), "{traffic}");
        assert_eq!(last["flow"]["active"], 0);
        assert!(
            last["app_layer"]["flow"]["http"].as_u64() > Some(0),
            "{threads:?}: app_layer.flow.http counts the capture's HTTP flows: {}",
            last["app_layer"]
        );
    }
}
