//! The suricata-verify runner: selects the suite's tests this engine can run faithfully, runs each through the
//! engine with its rules, and compares the alerts with the test's checks.
//!
//! Shared by the integration test `tests/suricata_verify.rs` (which asserts the pass rate and a floor on the number of
//! selected tests) and the example `examples/suricata_verify.rs` (which prints the per-test table, driven by
//! `scripts/suricata-verify`). It lives under `tests/` so that both can include it without adding test-only code
//! (and a YAML dependency) to the library.
//!
//! The suite's `test.yaml` and `suricata.yaml` files are read with `serde_norway`: `serde_yaml` (same API) is
//! deprecated and unmaintained, and `serde_norway` is its maintained continuation, with its own maintained fork of
//! the libyaml port underneath (`serde_yaml_ng` still builds on the archived `unsafe-libyaml`). The configuration
//! file of the binary is meant to use the same crate.
//!
//! ## Selection
//! A test folder is *selected* when everything it asks for is something we can honour; otherwise it is *excluded*
//! with the first reason found, in this order:
//! 1. `test.yaml` exists and is plain: no `skip`, no custom `command`, no `setup` script, no expected non-zero
//!    `exit-code`;
//! 2. `requires`: versions are compared with the Suricata version we emulate ([`EMULATED`]): `lt-version` at or
//!    below it excludes (so do `version`, `script`, `features` and `arch`: we cannot tell);
//! 3. `args`: the Suricata command-line options; those that do not change what alerts (`-k none`, `--runmode`,
//!    `-v`, `--no-random`, output/stats/logging settings) are accepted, `--set vars.address-groups.X=` and
//!    `--set stream.midstream=true` are honoured, and everything else (`--simulate-ips`, `--set stream.inline`,
//!    `stream.reassembly.depth`, app-layer settings, `--engine-analysis`, ...) excludes the test, named;
//! 4. the folder's `suricata.yaml` (the override config): the same rule, per dotted key;
//! 5. one pcap: `pcap:` from `test.yaml`, else the folder's single `*.pcap`/`*.pcapng`;
//! 6. `test.rules` exists and loads completely ([`LoadOptions::strict`] semantics: any skipped rule excludes the
//!    test under the rules crate's skip reason, e.g. `unsupported keyword: byte_test`);
//! 7. at least one check is an alert `filter` we can evaluate (see below).
//!
//! Most suite tests check more than alerts (their `http`, `flow` or `stats` records, `shell` commands on the
//! logs). Requiring *every* check to be an alert check would leave about 25 tests; instead a selected test runs its
//! alert checks and lists the others as *not evaluated*, with the reason (the table prints how many, by reason).
//! An alert filter on a field we do not produce (`pkt_src`, `pcap_cnt`, `alert.action`, ...) is not evaluated
//! either: dropping the field would change the count.
//!
//! ## Checks
//! A `filter` check counts EVE events matching every `match` entry: `event_type: alert` (required), and any of
//! `alert.signature_id`, `alert.signature`, `alert.rev`, `alert.gid`, `src_ip`, `dest_ip`, `src_port`,
//! `dest_port`, `proto`. With `count: N` the number must equal N; with `lt: N` / `gt: N` be below / above it;
//! with none of them at least one event must match (suricata-verify's rules). A check's own `requires` is evaluated
//! like the test's; a check whose requirement is not met is not run, as in suricata-verify.
//!
//! ## Running
//! The pcap goes through the single-threaded engine path (streaming reader, prestage, engine, finish) with the rules
//! loaded, application events off, and [`EngineConfig::midstream`] off unless the test sets `stream.midstream`
//! (Suricata's default: a TCP connection picked up without its handshake is never `flow:established`). Alerts are
//! the engine's `Alert` events, with the rules' thresholds applied over them in order as the command line applies
//! them ([`AlertFilter`]).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use flowbundle_ingest::CaptureReader;
use flowbundle_inspect::rules::{
    Action, LoadOptions, RuleSet, ThresholdConfig, ThresholdTable, Vars,
};
use flowbundle_inspect::{AlertFilter, Engine, EngineConfig, Event, EventKind, Prestage};
use serde_norway::Value;

/// The Suricata version whose behaviour the suite's version requirements are compared with: the newest the suite
/// snapshot knows (its newest tests ask for 9.0). `min-version` therefore never excludes a test (a test for a newer
/// feature fails or is excluded by its keywords instead); `lt-version` does, since such a test pins older behaviour.
pub const EMULATED: (u64, u64, u64) = (9, 0, 0);

/// What happened to one test folder.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Not selected: the reason (grouping key) and a detail.
    Excluded {
        reason: String,
        detail: String,
    },
    Pass,
    /// Selected, ran, and at least one check failed: the failed checks, described.
    Fail(Vec<String>),
}

/// One test folder's result.
#[derive(Debug, Clone)]
pub struct TestResult {
    pub name: String,
    pub verdict: Verdict,
    /// Alerts per signature id (selected tests only).
    pub alerts: BTreeMap<u32, u64>,
    /// Checks run (selected tests only).
    pub checks_run: usize,
    /// Checks of a selected test that were not evaluated, each with the reason.
    pub not_run: Vec<String>,
}

impl TestResult {
    pub fn selected(&self) -> bool {
        !matches!(self.verdict, Verdict::Excluded { .. })
    }
    pub fn passed(&self) -> bool {
        matches!(self.verdict, Verdict::Pass)
    }
}

/// The suite's root folder, or `None` when the shared data is absent (see `flowbundle_testsupport::data`).
pub fn suite_root() -> Option<PathBuf> {
    flowbundle_testsupport::data("suricata-verify")
}

/// Runs (or excludes) every test folder under `root` whose name contains `filter` (all when `None`), in name order.
/// A folder without a `test.yaml` whose subfolders have one is a group (the suite's `threshold/`): its tests are
/// named `group/test`.
pub fn run_suite(root: &Path, filter: Option<&str>) -> Vec<TestResult> {
    let subdirs = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut tests: Vec<(String, PathBuf)> = Vec::new();
    for d in subdirs(root) {
        let inner: Vec<PathBuf> = subdirs(&d)
            .into_iter()
            .filter(|s| s.join("test.yaml").exists())
            .collect();
        if !d.join("test.yaml").exists() && !inner.is_empty() {
            for s in inner {
                tests.push((format!("{}/{}", dir_name(&d), dir_name(&s)), s));
            }
        } else {
            tests.push((dir_name(&d), d));
        }
    }
    tests
        .into_iter()
        .filter(|(n, _)| filter.is_none_or(|f| n.contains(f)))
        .map(|(n, d)| run_named(&n, &d))
        .collect()
}

fn dir_name(d: &Path) -> String {
    d.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn excluded(name: &str, reason: impl Into<String>, detail: impl Into<String>) -> TestResult {
    TestResult {
        name: name.to_string(),
        verdict: Verdict::Excluded {
            reason: reason.into(),
            detail: detail.into(),
        },
        alerts: BTreeMap::new(),
        checks_run: 0,
        not_run: Vec::new(),
    }
}

/// One supported check.
#[derive(Debug, Clone)]
struct Check {
    /// (field, expected value) pairs besides `event_type: alert`.
    fields: Vec<(String, Value)>,
    count: Option<u64>,
    lt: Option<u64>,
    gt: Option<u64>,
}

/// Fields of an alert event a check may compare.
const CHECK_FIELDS: &[&str] = &[
    "alert.signature_id",
    "alert.signature",
    "alert.rev",
    "alert.gid",
    "src_ip",
    "dest_ip",
    "src_port",
    "dest_port",
    "proto",
];

/// Runs or excludes one folder.
pub fn run_one(dir: &Path) -> TestResult {
    run_named(&dir_name(dir), dir)
}

/// Runs (or excludes) the test in `dir`, reported as `name`.
fn run_named(name: &str, dir: &Path) -> TestResult {
    let name = name.to_string();
    let yaml_path = dir.join("test.yaml");
    let Ok(text) = std::fs::read_to_string(&yaml_path) else {
        return excluded(&name, "no test.yaml", "");
    };
    let y: Value = match serde_norway::from_str(&text) {
        Ok(v) => v,
        Err(e) => return excluded(&name, "test.yaml unreadable", e.to_string()),
    };
    for key in ["skip", "command", "setup"] {
        if y.get(key).is_some() {
            return excluded(&name, format!("test.yaml `{key}`"), "");
        }
    }
    if let Some(code) = y.get("exit-code")
        && code.as_i64() != Some(0)
    {
        return excluded(&name, "test.yaml `exit-code` (expects a failing run)", "");
    }
    for key in ["requires", "requirements"] {
        if let Some(r) = y.get(key)
            && let Err(why) = requirements_met(r)
        {
            return excluded(&name, why, "");
        }
    }
    if let Some(v) = y.get("min-version")
        && let Err(why) = version_at_least(v)
    {
        return excluded(&name, why, "");
    }

    // Settings: command-line args, then the folder's suricata.yaml.
    let mut settings = Settings::default();
    let args: Vec<String> = match y.get("args") {
        None => Vec::new(),
        Some(Value::Sequence(s)) => s.iter().map(scalar_string).collect(),
        Some(v) => vec![scalar_string(v)],
    };
    if let Err(why) = settings.apply_args(&args) {
        return excluded(&name, why, args.join(" "));
    }
    let conf = dir.join("suricata.yaml");
    if conf.exists() {
        let parsed = std::fs::read_to_string(&conf)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_norway::from_str::<Value>(&t).map_err(|e| e.to_string()));
        match parsed {
            Ok(v) => {
                let mut flat = Vec::new();
                flatten("", &v, &mut flat);
                for (k, val) in flat {
                    if let Err(why) = settings.apply(&k, &val, "suricata.yaml") {
                        return excluded(&name, why, format!("{k}: {val}"));
                    }
                }
            }
            Err(e) => return excluded(&name, "suricata.yaml unreadable", e),
        }
    }

    // The pcap.
    let pcap = match y.get("pcap") {
        Some(Value::Bool(false)) => return excluded(&name, "no pcap (pcap: false)", ""),
        Some(Value::String(p)) => dir.join(p),
        _ => {
            let mut pcaps: Vec<PathBuf> = std::fs::read_dir(dir)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
                        .collect()
                })
                .unwrap_or_default();
            match pcaps.len() {
                0 => return excluded(&name, "no pcap in the folder", ""),
                1 => pcaps.remove(0),
                n => return excluded(&name, "several pcaps, none named", format!("{n}")),
            }
        }
    };
    if !pcap.exists() {
        return excluded(
            &name,
            "pcap named in test.yaml is missing",
            pcap.display().to_string(),
        );
    }

    // The rules: `test.rules`, else `input.rules` (the `threshold/` group's name).
    let Some(rules_path) = ["test.rules", "input.rules"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.exists())
    else {
        return excluded(&name, "no test.rules", "");
    };
    let opts = LoadOptions {
        vars: settings.vars.clone(),
        ..LoadOptions::default()
    };
    let (rules, report) = match RuleSet::load_files_with(&[&rules_path], &opts) {
        Ok(x) => x,
        Err(e) => return excluded(&name, "rules file unreadable", e.to_string()),
    };
    if let Some((reason, _)) = report.skip_reasons.iter().next() {
        return excluded(&name, format!("rule skipped: {reason}"), "");
    }
    if let Some(e) = report.errors.first() {
        let short = e.message.split('`').next().unwrap_or("").trim().to_string();
        return excluded(&name, format!("rule error: {short}"), e.message.clone());
    }
    if report.loaded == 0 {
        return excluded(&name, "no rules in test.rules", "");
    }
    // `--simulate-ips` changes what a drop rule does to the rest of its flow; with alert rules only it changes no
    // alert.
    if settings.simulate_ips && rules.rules().iter().any(|r| r.action != Action::Alert) {
        return excluded(&name, "--simulate-ips with drop/reject rules", "");
    }
    // The threshold file, as `inspect --threshold-file` reads it; a line it does not apply excludes the test.
    let thresholds = match &settings.threshold_file {
        None => ThresholdConfig::default(),
        Some(f) => {
            let path = f.replace("${TEST_DIR}", &dir.to_string_lossy());
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) => return excluded(&name, "threshold-file unreadable", e.to_string()),
            };
            let (tc, errors) = ThresholdConfig::parse(&text, &settings.vars);
            if let Some(e) = errors.first() {
                let short = e.message.split([' ', '(']).next().unwrap_or("").to_string();
                return excluded(
                    &name,
                    format!("threshold-file line not applied: {short}"),
                    e.message.clone(),
                );
            }
            tc
        }
    };

    // The checks: those we can evaluate run; the others (other event types, other check kinds, alert fields we do
    // not produce) are listed as not evaluated. A test with no evaluable check is excluded.
    let mut checks = Vec::new();
    let mut not_run = Vec::new();
    let Some(Value::Sequence(list)) = y.get("checks") else {
        return excluded(&name, "no checks", "");
    };
    for c in list {
        match parse_check(c) {
            Ok(Some(ch)) => checks.push(ch),
            Ok(None) => {}
            Err(why) => not_run.push(why),
        }
    }
    if checks.is_empty() {
        let why = not_run
            .first()
            .cloned()
            .unwrap_or_else(|| "no check applies to the emulated version".to_string());
        return excluded(&name, format!("no alert check ({why})"), "");
    }

    let events = run_engine(&pcap, rules, &thresholds, &settings);
    let alerts_ev: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Alert(_)))
        .collect();
    let mut alerts = BTreeMap::new();
    for e in &alerts_ev {
        if let EventKind::Alert(a) = &e.kind {
            *alerts.entry(a.signature_id).or_insert(0u64) += 1;
        }
    }
    let mut failed = Vec::new();
    for ch in &checks {
        let n = alerts_ev.iter().filter(|e| check_matches(ch, e)).count() as u64;
        let ok = match (ch.count, ch.lt, ch.gt) {
            (Some(c), _, _) => n == c,
            (None, Some(lt), gt) => n < lt && gt.is_none_or(|g| n > g),
            (None, None, Some(gt)) => n > gt,
            (None, None, None) => n > 0,
        };
        if !ok {
            let what: Vec<String> = ch
                .fields
                .iter()
                .map(|(k, v)| format!("{k}={}", scalar_string(v)))
                .collect();
            let want = match (ch.count, ch.lt, ch.gt) {
                (Some(c), _, _) => format!("{c}"),
                (None, Some(lt), _) => format!("<{lt}"),
                (None, None, Some(gt)) => format!(">{gt}"),
                _ => ">0".to_string(),
            };
            failed.push(format!("alert {}: want {want}, got {n}", what.join(",")));
        }
    }
    TestResult {
        name,
        verdict: if failed.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail(failed)
        },
        alerts,
        checks_run: checks.len(),
        not_run,
    }
}

/// Runs one pcap through the single-threaded engine path with the rules and returns its events.
fn run_engine(
    pcap: &Path,
    rules: RuleSet,
    thresholds: &ThresholdConfig,
    settings: &Settings,
) -> Vec<Event> {
    let cfg = EngineConfig {
        app_events: false,
        midstream: settings.midstream,
        ..EngineConfig::default()
    };
    // Thresholds, as the command line applies them: over the events in order.
    let mut filter = AlertFilter::with_config(&rules, thresholds, ThresholdTable::default());
    let mut engine = Engine::new(cfg, None, Some(rules));
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    if let Ok(mut r) = CaptureReader::open(pcap) {
        let mut n = 0u64;
        while let Ok(Some(rec)) = r.next_packet() {
            engine.process_serial(&mut ctx, &mut pre, n, &rec);
            n += 1;
        }
    }
    let mut events = engine.finish([ctx]).events;
    if let Some(f) = filter.as_mut() {
        f.retain(&mut events);
    }
    // `SV_TRACE=1 scripts/suricata-verify NAME` lists every alert with its time, flow, direction and source: how a
    // count that differs from Suricata's is traced back to packets.
    if std::env::var_os("SV_TRACE").is_some() {
        for e in &events {
            if let EventKind::Alert(a) = &e.kind {
                let (src, dst, sp, dp) = e.key.endpoints(e.dir);
                println!(
                    "  trace: ts {}.{:06} flow {:x} {src}:{sp} -> {dst}:{dp} sid {} ({}, offset {})",
                    e.ts_ns / 1_000_000_000,
                    e.ts_ns % 1_000_000_000 / 1000,
                    e.flow_id,
                    a.signature_id,
                    a.source,
                    a.offset
                );
            }
        }
    }
    events
}

/// Does an alert event satisfy every field of a check?
fn check_matches(ch: &Check, e: &Event) -> bool {
    let EventKind::Alert(a) = &e.kind else {
        return false;
    };
    let (src, dst, sp, dp) = e.key.endpoints(e.dir);
    ch.fields.iter().all(|(k, v)| match k.as_str() {
        "alert.signature_id" => v.as_u64() == Some(u64::from(a.signature_id)),
        "alert.rev" => v.as_u64() == Some(u64::from(a.rev)),
        "alert.gid" => v.as_u64() == Some(u64::from(a.gid)),
        "alert.signature" => v.as_str() == Some(&*a.signature),
        "src_ip" => ip_eq(v, src),
        "dest_ip" => ip_eq(v, dst),
        "src_port" => v.as_u64() == Some(u64::from(sp)),
        "dest_port" => v.as_u64() == Some(u64::from(dp)),
        "proto" => {
            let name = match e.key.proto {
                6 => "TCP".to_string(),
                17 => "UDP".to_string(),
                1 => "ICMP".to_string(),
                58 => "IPv6-ICMP".to_string(),
                p => p.to_string(),
            };
            v.as_str().is_some_and(|s| s.eq_ignore_ascii_case(&name))
        }
        _ => false,
    })
}

fn ip_eq(v: &Value, ip: IpAddr) -> bool {
    v.as_str()
        .and_then(|s| s.parse::<IpAddr>().ok())
        .is_some_and(|want| want == ip)
}

/// Parses one entry of `checks:`; `Ok(None)` when its own `requires` is not met (not run, as in suricata-verify).
fn parse_check(c: &Value) -> Result<Option<Check>, String> {
    let Some(f) = c.get("filter") else {
        let kind = c
            .as_mapping()
            .and_then(|m| m.keys().next())
            .map(scalar_string)
            .unwrap_or_else(|| "?".to_string());
        return Err(format!("check type `{kind}`"));
    };
    if let Some(r) = f.get("requires")
        && requirements_met(r).is_err()
    {
        return Ok(None);
    }
    let Some(m) = f.get("match").and_then(Value::as_mapping) else {
        return Err("filter without match".to_string());
    };
    let mut fields = Vec::new();
    let mut is_alert = false;
    for (k, v) in m {
        let k = scalar_string(k);
        if k == "event_type" {
            let t = scalar_string(v);
            if t != "alert" {
                return Err(format!("check on event_type `{t}`"));
            }
            is_alert = true;
        } else if CHECK_FIELDS.contains(&k.as_str()) {
            fields.push((k, v.clone()));
        } else {
            return Err(format!("check on field `{k}`"));
        }
    }
    if !is_alert {
        return Err("check without event_type".to_string());
    }
    let mut ch = Check {
        fields,
        count: None,
        lt: None,
        gt: None,
    };
    if let Some(fm) = f.as_mapping() {
        for (k, v) in fm {
            match scalar_string(k).as_str() {
                "match" | "requires" | "comment" => {}
                "count" => ch.count = v.as_u64(),
                "lt" => ch.lt = v.as_u64(),
                "gt" => ch.gt = v.as_u64(),
                other => return Err(format!("filter option `{other}`")),
            }
        }
    }
    Ok(Some(ch))
}

/// Checks a `requires` block against what we emulate; `Err` names the first unmet requirement.
fn requirements_met(r: &Value) -> Result<(), String> {
    let Some(m) = r.as_mapping() else {
        return Ok(());
    };
    for (k, v) in m {
        match scalar_string(k).as_str() {
            "min-version" => version_at_least(v)?,
            "lt-version" => {
                let want = parse_version(v).ok_or("requires: unreadable lt-version")?;
                if EMULATED >= want {
                    return Err(format!("requires lt-version {}", scalar_string(v)));
                }
            }
            "gt-version" => {
                let want = parse_version(v).ok_or("requires: unreadable gt-version")?;
                if EMULATED <= want {
                    return Err(format!("requires gt-version {}", scalar_string(v)));
                }
            }
            // Suricata-verify's own conditions on the run, not on Suricata.
            "pcap" | "os" => {}
            "features" => {
                let list: Vec<String> = match v {
                    Value::Sequence(s) => s.iter().map(scalar_string).collect(),
                    other => vec![scalar_string(other)],
                };
                if let Some(first) = list.first() {
                    return Err(format!("requires feature {first}"));
                }
            }
            other => return Err(format!("requires `{other}`")),
        }
    }
    Ok(())
}

fn version_at_least(v: &Value) -> Result<(), String> {
    let want = parse_version(v).ok_or("requires: unreadable min-version")?;
    if want > EMULATED {
        return Err(format!("requires min-version {}", scalar_string(v)));
    }
    Ok(())
}

/// `7`, `7.0`, `7.0.3`, `8.0.0-dev` → (major, minor, patch).
fn parse_version(v: &Value) -> Option<(u64, u64, u64)> {
    let s = scalar_string(v);
    let core = s.split('-').next()?.trim();
    let mut it = core.split('.').map(|p| p.trim().parse::<u64>());
    let major = it.next()?.ok()?;
    let minor = it.next().transpose().ok()?.unwrap_or(0);
    let patch = it.next().transpose().ok()?.unwrap_or(0);
    Some((major, minor, patch))
}

/// A YAML scalar as text (numbers and booleans as written).
pub fn scalar_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        other => serde_norway::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

/// Flattens a YAML tree into dotted keys (sequence items as `key.N`) and scalar values.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Mapping(m) => {
            for (k, val) in m {
                flatten(&join(&scalar_string(k)), val, out);
            }
        }
        Value::Sequence(s) => {
            for (i, val) in s.iter().enumerate() {
                flatten(&join(&i.to_string()), val, out);
            }
        }
        Value::Tagged(t) => flatten(prefix, &t.value, out),
        other => out.push((prefix.to_string(), scalar_string(other))),
    }
}

/// The settings a test asks for that we honour.
#[derive(Debug, Clone)]
pub struct Settings {
    pub vars: Vars,
    /// `stream.midstream: true`.
    pub midstream: bool,
    /// `threshold-file` as given (`${TEST_DIR}` not yet replaced).
    pub threshold_file: Option<String>,
    /// `--simulate-ips`.
    pub simulate_ips: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            vars: Vars::suricata_defaults(),
            midstream: false,
            threshold_file: None,
            simulate_ips: false,
        }
    }
}

/// Setting prefixes that never change which alerts fire.
const BENIGN_PREFIXES: &[&str] = &[
    "include",
    "logging",
    "outputs",
    "default-log-dir",
    "stats",
    "pcap-file",
    "runmode",
    "max-pending-packets",
    "unix-command",
    "classification-file",
    "reference-config-file",
    "profiling",
    "threading",
    "plugins",
    "security.limit-noproc",
    "engine-analysis",
];

impl Settings {
    /// Applies the command-line `args` of a test.
    fn apply_args(&mut self, args: &[String]) -> Result<(), String> {
        let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            match w {
                "-k" => {
                    // Checksum validation off: the engine does not validate checksums either.
                    i += 2;
                    continue;
                }
                "--set" => {
                    let Some(kv) = words.get(i + 1) else {
                        return Err("arg --set without value".to_string());
                    };
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    self.apply(k, v, "--set")?;
                    i += 2;
                    continue;
                }
                "-v" | "-vv" | "-vvv" | "-vvvv" | "--no-random" => {}
                "--simulate-ips" => self.simulate_ips = true,
                _ if w.starts_with("-vvv") => {}
                _ if w.starts_with("--runmode") => {
                    if w == "--runmode" {
                        i += 1;
                    }
                }
                _ => return Err(format!("arg {w}")),
            }
            i += 1;
        }
        Ok(())
    }

    /// Applies one setting from `--set` or `suricata.yaml`; `Err` when it changes semantics we do not emulate.
    fn apply(&mut self, key: &str, value: &str, from: &str) -> Result<(), String> {
        if key.is_empty() || key.starts_with('%') {
            return Ok(());
        }
        // X-Forwarded-For handling rewrites the addresses an alert reports: not emulated.
        if key.contains(".xff.") {
            return Err(format!("{from} {key}"));
        }
        if BENIGN_PREFIXES
            .iter()
            .any(|p| key == *p || key.starts_with(&format!("{p}.")))
        {
            return Ok(());
        }
        if let Some(name) = key
            .strip_prefix("vars.address-groups.")
            .or_else(|| key.strip_prefix("vars.port-groups."))
        {
            self.vars.set(name, value);
            return Ok(());
        }
        // Enabling a parser changes nothing here (ours run when they recognise traffic); disabling one does.
        if key.starts_with("app-layer.protocols.")
            && key.ends_with(".enabled")
            && matches!(value, "yes" | "true")
        {
            return Ok(());
        }
        if key == "threshold-file" {
            self.threshold_file = Some(value.trim_matches('"').to_string());
            return Ok(());
        }
        if key == "stream.midstream" {
            self.midstream = matches!(value, "true" | "yes" | "1");
            return Ok(());
        }
        Err(format!("{from} {key}"))
    }
}

/// The per-test table and the summary: selected, passed, failures with their checks, exclusions by reason.
pub fn report(results: &[TestResult], known: &BTreeMap<String, String>) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let selected: Vec<&TestResult> = results.iter().filter(|r| r.selected()).collect();
    let passed = selected.iter().filter(|r| r.passed()).count();
    let _ = writeln!(
        s,
        "{:<48} {:<5} alerts (sid:count) / failed checks",
        "test", "result"
    );
    for r in &selected {
        let alerts: Vec<String> = r.alerts.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        match &r.verdict {
            Verdict::Pass => {
                let _ = writeln!(s, "{:<48} pass  {}", r.name, alerts.join(" "));
            }
            Verdict::Fail(f) => {
                let _ = writeln!(s, "{:<48} FAIL  {}", r.name, alerts.join(" "));
                for c in f {
                    let _ = writeln!(s, "{:<48}       {c}", "");
                }
                let why = known
                    .get(&r.name)
                    .map(String::as_str)
                    .unwrap_or("UNEXPLAINED (not in the fixture)");
                let _ = writeln!(s, "{:<48}       why: {why}", "");
            }
            Verdict::Excluded { .. } => {}
        }
    }
    let total = results.len();
    let _ = writeln!(
        s,
        "\n{total} test folders; {} selected, {passed} pass ({:.1}%), {} fail; {} excluded",
        selected.len(),
        if selected.is_empty() {
            0.0
        } else {
            100.0 * passed as f64 / selected.len() as f64
        },
        selected.len() - passed,
        total - selected.len()
    );
    let mut skipped_checks: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &selected {
        for c in &r.not_run {
            *skipped_checks.entry(c.as_str()).or_default() += 1;
        }
    }
    let run: usize = selected.iter().map(|r| r.checks_run).sum();
    let fully = selected.iter().filter(|r| r.not_run.is_empty()).count();
    let _ = writeln!(
        s,
        "{run} alert checks evaluated; {fully} selected tests have every check evaluated; checks not evaluated \
         in selected tests, by reason:"
    );
    let mut skipped_checks: Vec<(&str, usize)> = skipped_checks.into_iter().collect();
    skipped_checks.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for (r, n) in skipped_checks {
        let _ = writeln!(s, "  {n:>5}  {r}");
    }
    let mut by_reason: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results {
        if let Verdict::Excluded { reason, .. } = &r.verdict {
            *by_reason.entry(reason.as_str()).or_default() += 1;
        }
    }
    let mut by_reason: Vec<(&str, usize)> = by_reason.into_iter().collect();
    by_reason.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let _ = writeln!(s, "excluded, by reason:");
    for (r, n) in by_reason {
        let _ = writeln!(s, "  {n:>5}  {r}");
    }
    s
}

/// The fixture of known failures: `name<TAB>reason` lines, `#` comments.
pub fn known_failures() -> BTreeMap<String, String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/suricata_verify_failures.txt");
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
        .collect()
}
