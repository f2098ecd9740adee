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
//! A test folder is *selected* when everything it asks for is something we can honour and at least one of its
//! checks can be evaluated; otherwise it is *excluded*. Every blocking reason is collected ([`TestResult::blockers`]);
//! the verdict names the first, in this order:
//! 1. `test.yaml` exists and is plain: no `skip`, no custom `command`, no `setup` script, no expected non-zero
//!    `exit-code`;
//! 2. `requires`: versions are compared with the Suricata version we emulate ([`EMULATED`]): `lt-version` at or
//!    below it excludes (so do `script`, `features` and `arch`: we cannot tell);
//! 3. `args`: the Suricata command-line options; those that do not change what is logged (`-k none`, `--runmode`,
//!    `-v`, `--no-random`, output/stats/logging settings) are accepted, `--set vars.address-groups.X=`,
//!    `--set stream.midstream=true`, `--set stream.inline=true` (the engine inspects data as it arrives, as
//!    Suricata's inline stream mode does) and `threshold-file` are honoured, and everything else
//!    (`--set stream.reassembly.depth`, app-layer settings, `--engine-analysis`, ...) excludes the test, named;
//!    like suricata-verify's runner, a folder whose name contains `ips` runs with `--simulate-ips`;
//! 4. the folder's `suricata.yaml` (the override config): the same rule, per dotted key. Honoured besides: the
//!    `action-order` list ([`EngineConfig::action_order`]), `packet-alert-max`
//!    ([`EngineConfig::packet_alert_max`]), `detect.prefilter.default` (which prefilter Suricata
//!    builds, never which rules match), `decoder.recursion-level.use-for-tracking`
//!    ([`flowbundle_decode::DecodeOptions::tunnel_depth_in_key`]), an exception policy set to `ignore` (the engine's only behaviour) and an
//!    X-Forwarded-For block that is switched off;
//! 5. one pcap: `pcap:` from `test.yaml`, else the folder's single `*.pcap`/`*.pcapng`;
//! 6. the rules, found as the runner finds them ([`rule_file`]): the folder's single `*.rules` file must load
//!    completely ([`LoadOptions::strict`] semantics: any skipped rule excludes the test under the rules crate's skip
//!    reason, e.g. `unsupported keyword: byte_test`), except rules whose `requires` is not met, which Suricata skips
//!    too (their `requires: version` is compared with [`EMULATED`]); a folder without one runs with detection
//!    disabled.
//!    `--simulate-ips` runs the engine in IPS mode ([`EngineConfig::ips`]: drop and reject alerts are `blocked`;
//!    drops and passes act on the packet or the flow as the rule's type says, in either mode); what IPS mode does
//!    beyond rule actions (inline normalisation of overlapping segments, drops on stream errors) is not emulated and
//!    shows as failures named in the fixture;
//! 7. at least one check can be evaluated (see below).
//!
//! ## Checks
//! The engine's events are written as EVE lines by the product's writer (`flowbundle_sinks::render`) and each
//! `filter` check counts the lines matching every `match` entry with suricata-verify's semantics: dotted paths with
//! `[N]` indices, `has-key`/`not-has-key`, the `__len`, `__find`, `__contains`, `__startswith` and `__endswith`
//! operators, Python's equality. With `count: N` the number must equal N; with `lt: N` / `gt: N` be below / above it;
//! with none of them at least one line must match. A check's own `requires` (or `min-version`, `lt-version`,
//! `version`, `feature` on the filter) is evaluated like the test's; a check whose requirement is not met is not run,
//! as in suricata-verify.
//!
//! A check is *evaluated* when its event type is one the engine writes in these runs ([`EVALUATED_TYPES`]: `alert`,
//! `flow` and `dns`, the last in Suricata 8's default layout; a test that configures its DNS logger otherwise, e.g.
//! `version: 2`, has its `dns` checks not evaluated) and every path it names is one the writer writes for that type
//! ([`Written`], read off the writer itself); an alert check also needs rules. `stats` checks are evaluated on the
//! rule load's counters only ([`STATS_PATHS`], the product's `stats` record written from the load report). The
//! others (`http`, the other `stats` counters,
//! `shell` commands, fields such as `pkt_src` or `payload` that the writer does not write) are listed as *not
//! evaluated*, with the reason (the table prints how many, by reason): counting lines without such a field would
//! decide the check on something we do not produce. A selected test whose rules load and that has an evaluated alert
//! check is an *alert test* (the narrower selection the issue's target counts); the summary gives both.
//!
//! ## Running
//! The pcap goes through the single-threaded engine path (streaming reader, prestage, engine, finish) with the rules
//! loaded, application events on, and [`EngineConfig::midstream`] off unless the test sets `stream.midstream`
//! (Suricata's default: a TCP connection picked up without its handshake is never `flow:established`). ICMPv4 errors are
//! filed as Suricata files them ([`flowbundle_decode::DecodeOptions::icmp_errors_in_quoted_flow`]). Alerts are
//! the engine's `Alert` events, with the rules' thresholds applied over them in order as the command line applies
//! them ([`AlertFilter`]).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use flowbundle_ingest::CaptureReader;
use flowbundle_inspect::rules::{LoadOptions, RuleSet, ThresholdConfig, ThresholdTable, Vars};
use flowbundle_inspect::{
    AlertFilter, AnomalyTypes, Engine, EngineConfig, Event, EventKind, Prestage,
};
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
    /// Alert checks among them (run with the test's rules loaded).
    pub alert_checks: usize,
    /// Checks of a selected test that were not evaluated, each with the reason.
    pub not_run: Vec<String>,
    /// Every reason an excluded test was not selected (the verdict names the first).
    pub blockers: Vec<String>,
}

impl TestResult {
    pub fn selected(&self) -> bool {
        !matches!(self.verdict, Verdict::Excluded { .. })
    }
    pub fn passed(&self) -> bool {
        matches!(self.verdict, Verdict::Pass)
    }
    /// Selected under the narrower definition of an alert test: its rules load and at least one of its alert checks
    /// is evaluated.
    pub fn alert_test(&self) -> bool {
        self.selected() && self.alert_checks > 0
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
    let reason = reason.into();
    TestResult {
        name: name.to_string(),
        blockers: vec![reason.clone()],
        verdict: Verdict::Excluded {
            reason,
            detail: detail.into(),
        },
        alerts: BTreeMap::new(),
        checks_run: 0,
        alert_checks: 0,
        not_run: Vec::new(),
    }
}

/// The rule file of a test folder, as suricata-verify's runner picks it: the folder's single `*.rules` file (any
/// name: `test.rules`, `input.rules`, `flowbit-prefilter.rules`, ...), loaded with `-S`; a `min<version>.rules` file
/// only when the emulated version is at least that; none: Suricata runs with detection disabled (`Ok(None)`). A
/// `firewall.rules` file (alone, or beside `td.rules`) runs Suricata's firewall mode, which is not emulated.
fn rule_file(dir: &Path) -> Result<Option<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "rules"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    match files.as_slice() {
        [] => Ok(None),
        [one] => {
            let name = dir_name(one);
            if name == "firewall.rules" {
                return Err("firewall.rules (firewall mode)".to_string());
            }
            if let Some(v) = name
                .strip_prefix("min")
                .and_then(|n| n.strip_suffix(".rules"))
                && parse_version(&Value::String(v.to_string())).is_some_and(|want| EMULATED < want)
            {
                return Ok(None);
            }
            Ok(Some(one.clone()))
        }
        _ => Err(if files.iter().any(|f| dir_name(f) == "firewall.rules") {
            "firewall.rules (firewall mode)".to_string()
        } else {
            "several rule files".to_string()
        }),
    }
}

/// One evaluable `filter` check: the EVE events of `event_type` matching every field, counted.
#[derive(Debug, Clone)]
struct Check {
    event_type: String,
    fields: Vec<FieldMatch>,
    count: Option<u64>,
    lt: Option<u64>,
    gt: Option<u64>,
}

/// One entry of a filter's `match`, as suricata-verify reads it.
#[derive(Debug, Clone)]
enum FieldMatch {
    /// `has-key: path`.
    Has(String),
    /// `not-has-key: path`.
    HasNot(String),
    /// `path: value` (the path may end in `__len`, `__find`, `__contains`, `__startswith`, `__endswith`).
    Value(String, serde_json::Value),
}

impl FieldMatch {
    fn path(&self) -> &str {
        match self {
            FieldMatch::Has(p) | FieldMatch::HasNot(p) | FieldMatch::Value(p, _) => p,
        }
    }

    fn describe(&self) -> String {
        match self {
            FieldMatch::Has(p) => format!("has-key {p}"),
            FieldMatch::HasNot(p) => format!("not-has-key {p}"),
            FieldMatch::Value(p, v) => format!("{p}={v}"),
        }
    }
}

/// The key paths the product's EVE writer writes, per event type: read off the lines it renders for sample events
/// with every optional part filled (a TCP and an ICMP alert, a TCP and an ICMP flow record), so that this list cannot
/// drift from the writer. A check on a path outside it is not evaluated: the writer never writes that field, and
/// counting events without it would decide the check on a field we do not produce. `alert.metadata` holds the
/// rule's own keys, so any path below it is written when the rule has that key.
pub struct Written {
    paths: BTreeMap<String, std::collections::BTreeSet<String>>,
}

/// Event types whose checks the harness evaluates: those the engine writes with every run's settings, in the layout
/// Suricata 8 writes by default (`dns`: version 3; a test that configures its DNS logger otherwise has its `dns`
/// checks not evaluated, see [`Settings::dns_logger`]; `anomaly`: the application-layer kind, the one Suricata writes by
/// default, see [`anomaly_unevaluable`]; `sip`: one record per message, as Suricata's SIP logger writes a
/// transaction). The other application events the engine writes (`http`, `tls`, ...) are not evaluated yet: their
/// layouts have not been checked field by field against Suricata's; so are their objects beside an alert (an
/// alert's `dns`, `sip`, `ftp` and HTTP/1 `http` are, [`sample_transactions`], and its top-level `tx_id`). `packet`:
/// the packets a rule's `tag` covers, written when the test's alert output logs tagged packets, as Suricata writes
/// them then ([`Settings::tagged_packets`]; without the option neither writes any). `dcerpc`: one record per
/// transaction of DCE/RPC over TCP, as Suricata 8 writes it (`flowbundle_protocols::dcerpc::log`), with the
/// interfaces' `service` and `procedure` names Suricata 9 adds (`Limits::dcerpc_names`, on for the emulated 9.0).
/// `smb`: one record per SMB transaction, numbered as Suricata numbers them (`flowbundle_protocols::smb::log`).
const EVALUATED_TYPES: &[&str] = &[
    "alert", "flow", "dns", "anomaly", "packet", "sip", "dcerpc", "smb",
];

/// The `stats` fields evaluated: the rule load's counters of the one detection engine, which the product's `stats`
/// record writes from the load report (`rules_skipped` counts every skipped rule; a selected test's are those whose
/// `requires` is not met, the ones Suricata skips).
const STATS_PATHS: &[&str] = &[
    "stats.detect.engines[0].rules_loaded",
    "stats.detect.engines[0].rules_failed",
    "stats.detect.engines[0].rules_skipped",
];

/// Paths below which any key may be written (the rule's metadata keys; the DNS answers' record types; the names of
/// an alert's variables), for an event type whose records write the path itself.
const OPEN_PATHS: &[&str] = &[
    "alert.metadata",
    "dns.grouped",
    "alert.context",
    "metadata.flowints",
    "metadata.flowvars",
    "metadata.pktvars",
    "metadata.entropy",
];

impl Written {
    pub fn from_writer() -> Self {
        use flowbundle_inspect::{
            AlertEvent, AppLabel, EndReason, FlowRecord, FlowState, TcpState, TcpSummary,
        };
        use std::sync::Arc;
        let mut paths: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
        for proto in [6u8, 1] {
            let (key, side) = flowbundle_decode::FlowKey::new(
                "10.0.0.2".parse().expect("address"),
                40000,
                "10.0.0.1".parse().expect("address"),
                80,
                proto,
            );
            let icmp = (proto == 1).then_some((8u8, 0u8));
            let alert = AlertEvent {
                signature_id: 1,
                gid: 1,
                rev: 1,
                signature: Arc::from("sample"),
                category: Arc::from("sample"),
                severity: 3,
                rule_index: 0,
                metadata: Arc::from(vec![("k".to_string(), "v".to_string())]),
                icmp,
                app: Some(AppLabel::Unknown),
                source: "packet",
                offset: 0,
                target: Some(flowbundle_inspect::rules::AlertTarget::DestIp),
                blocked: true,
                pkts_toserver: 1,
                pkts_toclient: 1,
                bytes_toserver: 1,
                bytes_toclient: 1,
                flow_start_ns: 1,
                tx: None,
                tx_id: Some(1),
                vars: Some(Box::new(flowbundle_inspect::rules::flowvar::AlertVars {
                    context: vec![("c".into(), b"v".to_vec())],
                    flowbits: vec!["b".into(), "traffic/id/i".into(), "traffic/label/l".into()],
                    flowints: vec![("i".into(), 1)],
                    flowvars: vec![("f".into(), b"v".to_vec())],
                    pktvars: vec![("p".into(), b"v".to_vec())],
                    entropy: vec![("file_data".into(), 4.0)],
                })),
                dataset_values: None,
            };
            // A transaction's record writes the flow's and the packet's variables (not an alert's own captures).
            let record_vars = alert.vars.as_deref().map(|v| {
                Box::new(flowbundle_inspect::rules::flowvar::AlertVars {
                    context: Vec::new(),
                    ..v.clone()
                })
            });
            let flow = FlowRecord {
                app: AppLabel::Unknown,
                application: None,
                application_evidence: None,
                evidence: None,
                risks: Default::default(),
                decided_at: None,
                pkts_toserver: 1,
                pkts_toclient: 1,
                bytes_toserver: 1,
                bytes_toclient: 1,
                start_ns: 1,
                end_ns: 2,
                state: FlowState::Established,
                reason: EndReason::Timeout,
                alerted: true,
                action: Some(flowbundle_inspect::FlowAction::Drop),
                tcp: (proto == 6).then_some(TcpSummary {
                    flags: 0xff,
                    flags_ts: 0xff,
                    flags_tc: 0xff,
                    state: TcpState::Established,
                    gaps: 0,
                }),
                icmp_toserver: icmp,
                icmp_toclient: icmp,
                // A flow's own variables (no packet's, no alert's own captures).
                vars: record_vars.clone().map(|mut v| {
                    v.pktvars.clear();
                    v
                }),
            };
            // An alert on a transaction's buffer carries the transaction, as its own record writes it: one sample
            // alert per transaction kind whose layout is checked (every field filled).
            let mut kinds: Vec<EventKind> = std::iter::once(None)
                .chain(sample_transactions().into_iter().map(Some))
                .map(|tx| {
                    EventKind::Alert(Box::new(AlertEvent {
                        tx: tx.map(Box::new),
                        ..alert.clone()
                    }))
                })
                .collect();
            kinds.push(EventKind::Flow(Box::new(flow)));
            if proto == 6 {
                kinds.push(EventKind::App(Box::new(
                    flowbundle_inspect::event::AppRecord {
                        event: sample_dns(),
                        vars: record_vars.clone(),
                    },
                )));
                kinds.push(EventKind::App(Box::new(
                    flowbundle_inspect::event::AppRecord {
                        event: sample_sip(),
                        vars: record_vars.clone(),
                    },
                )));
                kinds.push(EventKind::App(Box::new(
                    flowbundle_inspect::event::AppRecord {
                        event: sample_dcerpc(),
                        vars: record_vars.clone(),
                    },
                )));
                kinds.push(EventKind::App(Box::new(
                    flowbundle_inspect::event::AppRecord {
                        event: sample_smb(),
                        vars: record_vars.clone(),
                    },
                )));
                kinds.push(EventKind::Packet(Box::new(
                    flowbundle_inspect::TaggedPacket {
                        data: vec![0; 60].into(),
                        linktype: 1,
                        wire_len: 60,
                        session: true,
                    },
                )));
                kinds.push(EventKind::Anomaly(Box::new(
                    flowbundle_inspect::event::Anomaly::AppLayer {
                        event: flowbundle_types::AppLayerEvent::DnsZFlagSet,
                        tx_id: 1,
                    },
                )));
            }
            for kind in kinds {
                let e = Event {
                    ts_ns: 1,
                    flow_id: 1,
                    pcap_cnt: Some(1),
                    seq: 0,
                    key,
                    client: side,
                    dir: side,
                    kind,
                };
                let mut buf = Vec::new();
                flowbundle_sinks::render(&mut buf, &e);
                let v: serde_json::Value =
                    serde_json::from_slice(&buf).expect("the EVE writer writes JSON");
                let set = paths.entry(e.kind.event_type().to_string()).or_default();
                collect_paths("", &v, set);
            }
        }
        Written { paths }
    }

    /// Why a check on `event_type` and `path` cannot be evaluated, if it cannot.
    fn unevaluable(&self, event_type: &str, path: &str) -> Option<String> {
        if !EVALUATED_TYPES.contains(&event_type) {
            return Some(format!("check on event_type `{event_type}`"));
        }
        let plain = plain_path(path);
        let set = self.paths.get(event_type);
        let written = set.is_some_and(|set| set.contains(&plain))
            || OPEN_PATHS.iter().any(|p| {
                plain.starts_with(&format!("{p}.")) && set.is_some_and(|set| set.contains(*p))
            });
        (!written).then(|| format!("check on field `{plain}`"))
    }
}

/// The transactions an alert may carry whose layout has been checked against Suricata's, each with every part the
/// writer can write filled: checks on their fields beside an alert are evaluated.
fn sample_transactions() -> Vec<flowbundle_protocols::AppEvent> {
    vec![
        sample_dns(),
        sample_sip(),
        // An HTTP/1 transaction: the fields of Suricata's `http` object beside an alert (its basic and extended
        // fields, whatever the `http` logger's settings). HTTP/2's header lists and `http2` object are not
        // sampled: their layout has not been checked against Suricata's.
        flowbundle_protocols::AppEvent::Http(flowbundle_protocols::http::HttpEvent {
            tx_id: 1,
            hostname: Some("a".into()),
            http_port: Some(8080),
            url: Some("/".into()),
            http_user_agent: Some("a".into()),
            http_content_type: Some("text/html".into()),
            http_refer: Some("a".into()),
            xff: Some("a".into()),
            http_method: Some("GET".into()),
            protocol: Some("HTTP/1.1".into()),
            status: Some(200),
            redirect: Some("a".into()),
            length: 1,
            ..Default::default()
        }),
        flowbundle_protocols::AppEvent::Ftp(flowbundle_inspect::event::FtpEvent {
            command: Some("RETR".into()),
            command_data: Some("a".into()),
            command_truncated: true,
            completion_code: vec!["150".into()],
            reply: vec!["ok".into()],
            dynamic_port: Some(1),
            mode: Some("active"),
            reply_received: "yes",
            reply_truncated: true,
            ..Default::default()
        }),
    ]
}

/// A SIP message with every part the writer can write filled: request and status line fields, a session
/// description with its lists and a media description.
/// A DCE/RPC transaction with every part the writer can write filled (a request's and a response's sides, a
/// bind's interfaces, a call id and a connectionless activity: no record has all, the sample only lists the
/// paths).
fn sample_dcerpc() -> flowbundle_protocols::AppEvent {
    use flowbundle_protocols::dcerpc::log::{DcerpcEvent, DcerpcInterface, DcerpcSide};
    let side = DcerpcSide {
        opnum: Some(1),
        frag_cnt: 1,
        stub_data_size: 1,
    };
    flowbundle_protocols::AppEvent::Dcerpc(DcerpcEvent {
        tx_id: 1,
        request: "REQUEST",
        req: Some(side),
        interfaces: vec![DcerpcInterface {
            uuid: "a".into(),
            version: "1.0".into(),
            ack_result: Some(0),
            service: Some("a"),
            procedure: Some("a"),
        }],
        response: "RESPONSE",
        res: Some(side),
        call_id: Some(1),
        activityuuid: Some("a".into()),
        seqnum: Some(1),
        rpc_version: "5.0",
    })
}

/// An SMB transaction with every field the writer can write filled (no record has all: the sample only lists the
/// paths).
fn sample_smb() -> flowbundle_protocols::AppEvent {
    use flowbundle_protocols::smb::log::{
        SmbDcerpc, SmbDcerpcInterface, SmbDcerpcSide, SmbEvent, SmbHost, SmbKerberos, SmbNtlmssp,
        SmbRename, SmbService, SmbSetInfo,
    };
    let s = || Some("a".to_string());
    let side = SmbDcerpcSide {
        frag_cnt: 1,
        stub_data_size: 1,
    };
    flowbundle_protocols::AppEvent::Smb(Box::new(SmbEvent {
        tx_id: 0,
        id: 1,
        dialect: "2.02".into(),
        command: s(),
        status: s(),
        status_code: s(),
        session_id: 1,
        tree_id: 1,
        ntlmssp: Some(SmbNtlmssp {
            domain: "d".into(),
            user: "u".into(),
            host: "h".into(),
            version: s(),
            warning: true,
        }),
        kerberos: Some(SmbKerberos {
            realm: "r".into(),
            snames: vec!["s".into()],
        }),
        request: Some(SmbHost {
            native_os: "a".into(),
            native_lm: "a".into(),
        }),
        response: Some(SmbHost {
            native_os: "a".into(),
            native_lm: "a".into(),
        }),
        filename: s(),
        directory: s(),
        disposition: Some("FILE_OPEN"),
        access: Some("normal"),
        subcmd: Some("SET_FILE_INFO"),
        level_of_interest: Some("Set Disposition Information"),
        created: Some(1),
        accessed: Some(1),
        modified: Some(1),
        changed: Some(1),
        size: Some(1),
        client_dialects: Some(vec!["2.02".into()]),
        client_guid: s(),
        server_guid: s(),
        max_read_size: Some(1),
        max_write_size: Some(1),
        named_pipe: s(),
        share: s(),
        share_type: Some("FILE"),
        service: Some(SmbService {
            request: s(),
            response: s(),
        }),
        set_info: Some(SmbSetInfo {
            class: "FILE_INFO",
            info_level: "SMB2_FILE_RENAME_INFO",
        }),
        rename: Some(SmbRename {
            from: "a".into(),
            to: "b".into(),
        }),
        function: s(),
        dcerpc: Some(SmbDcerpc {
            request: "REQUEST",
            response: "RESPONSE",
            opnum: Some(1),
            req: Some(side),
            interfaces: vec![SmbDcerpcInterface {
                uuid: "a".into(),
                version: "1.0".into(),
                ack_result: Some(0),
                ack_reason: Some(0),
                service: Some("a"),
                procedure: Some("a"),
            }],
            res: Some(side),
            call_id: 1,
        }),
        fuid: s(),
    }))
}

fn sample_sip() -> flowbundle_protocols::AppEvent {
    use flowbundle_protocols::sip::SipEvent;
    use flowbundle_protocols::sip::sdp::{MediaDescription, SdpEvent, TimeDescription};
    let some = |s: &str| Some(s.to_string());
    let list = || vec!["a".to_string()];
    flowbundle_protocols::AppEvent::Sip(SipEvent {
        tx_id: 1,
        to_server: true,
        method: some("INVITE"),
        uri: some("sip:a"),
        version: "SIP/2.0".into(),
        code: some("200"),
        reason: some("OK"),
        request_line: some("INVITE sip:a SIP/2.0"),
        response_line: some("SIP/2.0 200 OK"),
        sdp: Some(SdpEvent {
            version: 0,
            origin: "o".into(),
            session_name: "s".into(),
            session_info: some("i"),
            uri: some("u"),
            email: some("e"),
            phone_number: some("p"),
            connection_data: some("c"),
            bandwidths: list(),
            time_descriptions: vec![TimeDescription {
                time: "t".into(),
                repeat_time: some("r"),
            }],
            timezone: some("z"),
            encryption_key: some("k"),
            attributes: list(),
            media_descriptions: vec![MediaDescription {
                media: "m".into(),
                media_info: some("i"),
                bandwidths: list(),
                connection_data: some("c"),
                encryption_key: some("k"),
                attributes: list(),
            }],
            ..SdpEvent::default()
        }),
        ..SipEvent::default()
    })
}

/// A DNS response event with every part the writer can write filled: flags, questions, answers with address,
/// SOA, SRV and SSHFP data, authorities.
fn sample_dns() -> flowbundle_protocols::AppEvent {
    use flowbundle_protocols::dns::{DnsEvent, DnsQuery, DnsRecord, Soa, Srv, Sshfp};
    let record = |rdata: bool, soa: bool, srv: bool, sshfp: bool| DnsRecord {
        rrname: "a".into(),
        rrtype: "A".into(),
        ttl: 1,
        rdata: rdata.then(|| "1.2.3.4".into()),
        soa: soa.then(Soa::default),
        srv: srv.then(Srv::default),
        sshfp: sshfp.then(Sshfp::default),
    };
    let records = vec![
        record(true, false, false, false),
        record(false, true, false, false),
        record(false, false, true, false),
        record(false, false, false, true),
    ];
    flowbundle_protocols::AppEvent::Dns(DnsEvent {
        tx_id: 1,
        version: Some(3),
        kind: "response".into(),
        id: 1,
        flags: 0xffff,
        opcode: 0,
        rrname: Some("a".into()),
        rrname_truncated: true,
        rrtype: Some("A".into()),
        rcode: Some("NOERROR".into()),
        queries: vec![DnsQuery {
            rrname: "a".into(),
            rrtype: "A".into(),
            qtype: 1,
            rrname_truncated: true,
        }],
        answers: records.clone(),
        authorities: records,
        additionals: Vec::new(),
        to_server: false,
        flavour: flowbundle_protocols::dns::DnsFlavour::Dns,
        udp_len: 0,
    })
}

/// Every object key path of a JSON value (`alert`, `alert.signature_id`, ...), array elements under their array's
/// path.
fn collect_paths(
    prefix: &str,
    v: &serde_json::Value,
    out: &mut std::collections::BTreeSet<String>,
) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, val) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(p.clone());
                collect_paths(&p, val, out);
            }
        }
        serde_json::Value::Array(a) => {
            for val in a {
                collect_paths(prefix, val, out);
            }
        }
        _ => {}
    }
}

/// A check path without array indices and without suricata-verify's operator suffixes: `dns.answers[0].rrname` →
/// `dns.answers.rrname`, `alert.metadata.x.__len` → `alert.metadata.x`.
fn plain_path(path: &str) -> String {
    path.split('.')
        .filter(|p| !p.starts_with("__"))
        .map(|p| match p.find('[') {
            Some(i) if p.ends_with(']') => &p[..i],
            _ => p,
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// suricata-verify's `find_value`: follows a dotted path with `name[index]` steps; `__len` gives the length of what
/// it reached (-1 for what has none); the string operators stop there and leave the comparison to the caller.
fn find_value<'a>(
    path: &str,
    v: &'a serde_json::Value,
) -> Option<std::borrow::Cow<'a, serde_json::Value>> {
    use std::borrow::Cow;
    let mut cur = v;
    for part in path.split('.') {
        if part == "__len" {
            let n = match cur {
                serde_json::Value::String(s) => s.chars().count() as i64,
                serde_json::Value::Array(a) => a.len() as i64,
                serde_json::Value::Object(o) => o.len() as i64,
                _ => -1,
            };
            return Some(Cow::Owned(serde_json::Value::from(n)));
        }
        if matches!(
            part,
            "__contains" | "__find" | "__startswith" | "__endswith"
        ) {
            break;
        }
        let (name, index) = match part.find('[') {
            Some(i) if part.ends_with(']') => (
                &part[..i],
                part[i + 1..part.len() - 1].parse::<usize>().ok(),
            ),
            _ => (part, None),
        };
        cur = cur.as_object()?.get(name)?;
        if let Some(i) = index {
            cur = cur.as_array()?.get(i)?;
        }
    }
    // JSON null reads as Python's None: absent.
    (!cur.is_null()).then_some(Cow::Borrowed(cur))
}

/// Python's `==` between values read from JSON and YAML: numbers compare by value (1 == 1.0), booleans equal 1 and 0.
fn py_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    let num = |v: &J| match v {
        J::Number(n) => n.as_f64(),
        J::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    match (a, b) {
        (J::Number(_) | J::Bool(_), J::Number(_) | J::Bool(_)) => num(a) == num(b),
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| py_eq(p, q)))
        }
        _ => a == b,
    }
}

/// Does one EVE line satisfy every entry of a check (its event type included)?
fn check_matches(ch: &Check, e: &serde_json::Value) -> bool {
    if e.get("event_type").and_then(|t| t.as_str()) != Some(ch.event_type.as_str()) {
        return false;
    }
    ch.fields.iter().all(|f| match f {
        FieldMatch::Has(p) => find_value(p, e).is_some(),
        FieldMatch::HasNot(p) => find_value(p, e).is_none(),
        FieldMatch::Value(p, want) => {
            let Some(got) = find_value(p, e) else {
                return false;
            };
            let (got_s, want_s) = (got.as_str(), want.as_str());
            if p.ends_with("__find") || p.ends_with("__contains") {
                match (&*got, want_s) {
                    (serde_json::Value::Array(a), _) => a.iter().any(|x| py_eq(x, want)),
                    (serde_json::Value::String(s), Some(w)) => s.contains(w),
                    _ => false,
                }
            } else if p.ends_with("__startswith") {
                got_s.zip(want_s).is_some_and(|(g, w)| g.starts_with(w))
            } else if p.ends_with("__endswith") {
                got_s.zip(want_s).is_some_and(|(g, w)| g.ends_with(w))
            } else {
                py_eq(&got, want)
            }
        }
    })
}

/// Runs or excludes one folder.
pub fn run_one(dir: &Path) -> TestResult {
    run_named(&dir_name(dir), dir)
}

/// Runs (or excludes) the test in `dir`, reported as `name`.
///
/// Every blocking reason is collected (not only the first), so that the report can say which tests a single piece
/// of work would select ([`TestResult::blockers`]); the verdict names the first, in the order of the module docs.
fn run_named(name: &str, dir: &Path) -> TestResult {
    let name = name.to_string();
    let mut blockers: Vec<(String, String)> = Vec::new();
    let mut block = |reason: String, detail: String| {
        if !blockers.iter().any(|(r, _)| *r == reason) {
            blockers.push((reason, detail));
        }
    };
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
            block(format!("test.yaml `{key}`"), String::new());
        }
    }
    if let Some(code) = y.get("exit-code")
        && code.as_i64() != Some(0)
    {
        block(
            "test.yaml `exit-code` (expects a failing run)".to_string(),
            String::new(),
        );
    }
    for key in ["requires", "requirements"] {
        if let Some(r) = y.get(key)
            && let Err(why) = requirements_met(r)
        {
            block(why, String::new());
        }
    }
    if let Some(v) = y.get("min-version")
        && let Err(why) = version_at_least(v)
    {
        block(why, String::new());
    }

    // Settings: command-line args, then the folder's suricata.yaml.
    let mut settings = Settings::default();
    let args: Vec<String> = match y.get("args") {
        None => Vec::new(),
        Some(Value::Sequence(s)) => s.iter().map(scalar_string).collect(),
        Some(v) => vec![scalar_string(v)],
    };
    for why in settings.apply_args(&args) {
        block(why, args.join(" "));
    }
    // suricata-verify's runner adds `--simulate-ips` for every test whose folder name contains "ips".
    if dir_name(dir).contains("ips") {
        settings.simulate_ips = true;
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
                // An X-Forwarded-For block that is switched off changes nothing, whatever else it sets.
                let xff_off: Vec<String> = flat
                    .iter()
                    .filter(|(k, v)| {
                        k.ends_with(".xff.enabled") && matches!(v.as_str(), "no" | "false" | "0")
                    })
                    .map(|(k, _)| k.trim_end_matches("enabled").to_string())
                    .collect();
                for (k, val) in flat {
                    if xff_off.iter().any(|p| k.starts_with(p.as_str())) {
                        continue;
                    }
                    if let Err(why) = settings.apply(&k, &val, "suricata.yaml") {
                        block(why, format!("{k}: {val}"));
                    }
                }
            }
            Err(e) => block("suricata.yaml unreadable".to_string(), e),
        }
    }
    if !settings.action_order.is_empty() {
        match flowbundle_inspect::rules::ActionOrder::parse(
            settings.action_order.iter().map(String::as_str),
        ) {
            Ok(o) => settings.action_order_parsed = o,
            Err(e) => block("action-order unreadable".to_string(), e),
        }
    }

    // The pcap.
    let pcap = match y.get("pcap") {
        Some(Value::Bool(false)) => {
            block("no pcap (pcap: false)".to_string(), String::new());
            None
        }
        Some(Value::String(p)) => Some(dir.join(p)),
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
                0 => {
                    block("no pcap in the folder".to_string(), String::new());
                    None
                }
                1 => Some(pcaps.remove(0)),
                n => {
                    block("several pcaps, none named".to_string(), format!("{n}"));
                    None
                }
            }
        }
    };
    if let Some(p) = &pcap
        && !p.exists()
    {
        block(
            "pcap named in test.yaml is missing".to_string(),
            p.display().to_string(),
        );
    }

    // The run's data directory (`save` and `state` files), empty.
    let out_dir = std::env::temp_dir().join(format!(
        "flowbundle-sv-{}-{}",
        std::process::id(),
        name.replace('/', "-")
    ));
    let _ = std::fs::remove_dir_all(&out_dir);
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        block("data directory not created".to_string(), e.to_string());
    }
    // The rules, found as suricata-verify finds them (see [`rule_file`]).
    let mut rules = None;
    // The load's counts, for the `stats` record's `detect.engines` (Suricata's `rules_loaded`, ...).
    let mut load_counts: Option<flowbundle_sinks::RulesInfo> = None;
    let rules_file = rule_file(dir);
    let detection = matches!(rules_file, Ok(Some(_)));
    match rules_file {
        Err(why) => block(why, String::new()),
        // No rule file: Suricata runs with detection disabled; the test is selected on its other checks.
        Ok(None) => {}
        Ok(Some(rules_path)) => {
            let mut opts = LoadOptions {
                vars: settings.vars.clone(),
                // `requires: version ...` is compared with the version the suite's own requirements are.
                requires: flowbundle_inspect::rules::requires::Requirements {
                    version: flowbundle_inspect::rules::requires::Version::new(
                        EMULATED.0 as u16,
                        EMULATED.1 as u16,
                        EMULATED.2 as u16,
                    ),
                },
                ..LoadOptions::default()
            };
            match dataset_options(&settings, &out_dir) {
                Ok(d) => opts.datasets = d,
                Err(e) => block("datasets configuration unreadable".to_string(), e),
            }
            match RuleSet::load_files_with(&[&rules_path], &opts) {
                Err(e) => block("rules file unreadable".to_string(), e.to_string()),
                Ok((set, report)) => {
                    // A rule whose `requires` is not met is skipped by Suricata too: not a blocker.
                    for reason in report.skip_reasons.keys() {
                        if !flowbundle_inspect::rules::requires::is_unmet_reason(reason) {
                            block(format!("rule skipped: {reason}"), String::new());
                        }
                    }
                    load_counts = Some(flowbundle_sinks::RulesInfo {
                        loaded: report.loaded,
                        skipped: report.skipped,
                        errors: report.errors_total,
                        skip_reasons: Vec::new(),
                        config_lines_skipped: 0,
                        dataset_lines_skipped: 0,
                    });
                    for e in &report.errors {
                        let short = e.message.split('`').next().unwrap_or("").trim().to_string();
                        block(format!("rule error: {short}"), e.message.clone());
                    }
                    if report.loaded == 0 && report.skipped == 0 && report.errors.is_empty() {
                        block("no rules in test.rules".to_string(), String::new());
                    }
                    rules = Some(set);
                }
            }
        }
    }
    // The threshold file, as `inspect --threshold-file` reads it; a line it does not apply excludes the test.
    let mut thresholds = ThresholdConfig::default();
    if let Some(f) = &settings.threshold_file {
        let path = f.replace("${TEST_DIR}", &dir.to_string_lossy());
        match std::fs::read_to_string(&path) {
            Err(e) => block("threshold-file unreadable".to_string(), e.to_string()),
            Ok(text) => {
                let (tc, errors) = ThresholdConfig::parse(&text, &settings.vars);
                for e in &errors {
                    let short = e.message.split([' ', '(']).next().unwrap_or("").to_string();
                    block(
                        format!("threshold-file line not applied: {short}"),
                        e.message.clone(),
                    );
                }
                thresholds = tc;
            }
        }
    }

    // The checks: those we can evaluate run; the others (other event types, other check kinds, alert fields we do
    // not produce) are listed as not evaluated. A test with no evaluable check is excluded.
    let mut checks = Vec::new();
    let mut not_run = Vec::new();
    let mut compares: Vec<(String, PathBuf)> = Vec::new();
    match y.get("checks") {
        Some(Value::Sequence(list)) => {
            for c in list {
                if let Some(fc) = c.get("file-compare") {
                    match file_compare(fc, dir, &settings) {
                        Ok(pair) => compares.push(pair),
                        Err(why) => not_run.push(why),
                    }
                    continue;
                }
                match parse_check(
                    c,
                    detection,
                    settings.dns_logger.as_deref(),
                    settings.smb_logger.as_deref(),
                    (settings.anomaly_output.as_deref(), settings.anomaly),
                ) {
                    Ok(Some(ch)) => checks.push(ch),
                    Ok(None) => {}
                    Err(why) => not_run.push(why),
                }
            }
            if checks.is_empty() && compares.is_empty() {
                let why = not_run
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "no check applies to the emulated version".to_string());
                block(format!("no evaluable check ({why})"), String::new());
            }
        }
        _ => block("no checks".to_string(), String::new()),
    }

    let (Some(pcap), true) = (pcap, blockers.is_empty()) else {
        let mut r = match blockers.first() {
            Some((reason, detail)) => excluded(&name, reason.clone(), detail.clone()),
            None => excluded(&name, "not runnable", ""),
        };
        r.blockers = blockers.into_iter().map(|(r, _)| r).collect();
        return r;
    };
    let (events, engine_stats, saved) = run_engine(&pcap, rules, &thresholds, &settings);
    let mut alerts = BTreeMap::new();
    for e in &events {
        if let EventKind::Alert(a) = &e.kind {
            *alerts.entry(a.signature_id).or_insert(0u64) += 1;
        }
    }
    // The EVE lines, as the product writes them.
    let eve = flowbundle_sinks::eve::EveOptions {
        ipv6_compress: settings.ipv6_compress,
        ..Default::default()
    };
    let mut lines: Vec<serde_json::Value> = events
        .iter()
        .filter_map(|e| {
            let mut buf = Vec::new();
            flowbundle_sinks::eve::render_with(&mut buf, e, eve);
            serde_json::from_slice(&buf).ok()
        })
        .collect();
    // `FLOWBUNDLE_SV_EVE=1`: print the lines the checks read, to see why one fails.
    if std::env::var_os("FLOWBUNDLE_SV_EVE").is_some() {
        for l in &lines {
            eprintln!("{l}");
        }
    }
    // The `stats` record the product writes at the end of a run (`inspect` with an EVE output), with the rule load's
    // counts; only its `detect.engines` counters are evaluated (see [`STATS_PATHS`]).
    if let Some(ri) = load_counts {
        let info = flowbundle_sinks::RunInfo {
            rules: Some(ri),
            ..Default::default()
        };
        let rec = flowbundle_sinks::StatsRecord {
            now_ns: 0,
            uptime: std::time::Duration::ZERO,
            total: &engine_stats,
            prestage: None,
            info: &info,
            workers: &[],
        };
        lines.push(flowbundle_sinks::stats_event(&rec));
    }
    // `SV_EVE=1 scripts/suricata-verify NAME` prints the EVE lines the checks were run on.
    if std::env::var_os("SV_EVE").is_some() {
        for l in &lines {
            println!("  eve: {l}");
        }
    }
    let mut failed = Vec::new();
    for ch in &checks {
        let n = lines.iter().filter(|e| check_matches(ch, e)).count() as u64;
        let ok = match (ch.count, ch.lt, ch.gt) {
            (Some(c), _, _) => n == c,
            (None, Some(lt), gt) => n < lt && gt.is_none_or(|g| n > g),
            (None, None, Some(gt)) => n > gt,
            (None, None, None) => n > 0,
        };
        if !ok {
            let what: Vec<String> = ch.fields.iter().map(FieldMatch::describe).collect();
            let want = match (ch.count, ch.lt, ch.gt) {
                (Some(c), _, _) => format!("{c}"),
                (None, Some(lt), _) => format!("<{lt}"),
                (None, None, Some(gt)) => format!(">{gt}"),
                _ => ">0".to_string(),
            };
            failed.push(format!(
                "{} {}: want {want}, got {n}",
                ch.event_type,
                what.join(",")
            ));
        }
    }
    if let Err(e) = saved {
        failed.push(format!("datasets not saved: {e}"));
    }
    for (file, expected) in &compares {
        let lines = |p: &Path| -> Option<Vec<String>> {
            let t = std::fs::read_to_string(p).ok()?;
            let mut v: Vec<String> = t.lines().map(str::to_string).collect();
            v.sort();
            Some(v)
        };
        let got = lines(&out_dir.join(file));
        let want = lines(expected);
        if got.is_none() || got != want {
            failed.push(format!(
                "file-compare {file}: want {:?}, got {:?}",
                want.unwrap_or_default(),
                got
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    let checks_run = checks.len() + compares.len();
    TestResult {
        name,
        verdict: if failed.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail(failed)
        },
        alerts,
        checks_run,
        alert_checks: checks.iter().filter(|c| c.event_type == "alert").count(),
        not_run,
        blockers: Vec::new(),
    }
}

/// Runs one pcap through the single-threaded engine path with the rules and returns its events.
fn run_engine(
    pcap: &Path,
    rules: Option<RuleSet>,
    thresholds: &ThresholdConfig,
    settings: &Settings,
) -> (
    Vec<Event>,
    flowbundle_inspect::EngineStats,
    Result<(), String>,
) {
    let cfg = EngineConfig {
        app_events: true,
        midstream: settings.midstream,
        ips: settings.simulate_ips,
        action_order: settings.action_order_parsed,
        packet_alert_max: settings.packet_alert_max,
        tagged_packets: settings.tagged_packets,
        anomaly: settings.anomaly,
        detection_ports: settings.detection_ports.clone(),
        ..EngineConfig::default()
    };
    let cfg = EngineConfig {
        decode: flowbundle_decode::DecodeOptions {
            tunnel_depth_in_key: settings.tunnel_depth_in_key,
            // Suricata files an ICMPv4 error under the flow it quotes and never starts a flow for one.
            icmp_errors_in_quoted_flow: true,
            ..cfg.decode
        },
        // The emulated Suricata 9 names DCE/RPC interfaces (`service`, `procedure`) in its records.
        limits: flowbundle_protocols::Limits {
            dcerpc_names: true,
            ..cfg.limits
        },
        ..cfg
    };
    // Thresholds, as the command line applies them: over the events in order.
    let mut filter = rules
        .as_ref()
        .and_then(|r| AlertFilter::with_config(r, thresholds, ThresholdTable::default()))
        .map(|f| f.ips(settings.simulate_ips));
    let mut engine = Engine::new(cfg, None, rules);
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    if let Ok(mut r) = CaptureReader::open(pcap) {
        let mut n = 0u64;
        while let Ok(Some(rec)) = r.next_packet() {
            engine.process_serial(&mut ctx, &mut pre, n, &rec);
            n += 1;
        }
    }
    let finished = engine.finish([ctx]);
    let (mut events, stats) = (finished.events, finished.stats);
    let mut saved = Ok(());
    if let Some(f) = filter.as_mut() {
        f.retain(&mut events);
        saved = f.save_datasets();
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
    (events, stats, saved)
}

/// The dataset registry a test's rules start from: its `datasets.*` settings read as the product's configuration
/// reads them, with `out_dir` as the data directory.
fn dataset_options(
    settings: &Settings,
    out_dir: &Path,
) -> Result<flowbundle_inspect::rules::dataset::Datasets, String> {
    let conf = flowbundle_inspect::ConfigFile::parse_with("", "suricata.yaml", &settings.datasets)
        .map_err(|e| e.to_string())?;
    let mut policy = conf.dataset_policy.clone();
    policy.data_dir = out_dir.to_path_buf();
    let mut d = flowbundle_inspect::rules::dataset::Datasets::new(policy);
    for (name, def) in conf.datasets {
        d.define(&name, def)?;
    }
    Ok(d)
}

/// A `file-compare` check: the file the run writes into its data directory and the expected one. Only files of a
/// run with `--data-dir` (dataset `save`/`state` files) can be compared. The lines are compared as a set: Suricata
/// writes a set's values in its hash table's order, which is not part of the format.
fn file_compare(fc: &Value, dir: &Path, settings: &Settings) -> Result<(String, PathBuf), String> {
    if fc
        .get("requires")
        .is_some_and(|r| requirements_met(r).is_err())
    {
        return Err("file-compare for another version".to_string());
    }
    let file = fc.get("filename").map(scalar_string).unwrap_or_default();
    let expected = fc.get("expected").map(scalar_string).unwrap_or_default();
    if !settings.data_dir || file.is_empty() || expected.is_empty() || file.contains('/') {
        return Err(format!("check type `file-compare` on `{file}`"));
    }
    Ok((file, dir.join(expected)))
}

/// Why a check on `anomaly` events cannot be evaluated, if it cannot. The engine writes the kinds of anomaly
/// records the test's configuration turns on (`kinds`: Suricata's default is `applayer` only) for the events it
/// raises: the parsers' application-layer events, the decoder's and TCP tracking's events. A check on an event
/// the engine never raises, on every anomaly of a kind that is written (events the engine does not raise would
/// count), on another layer (`proto_detect`), on anomalies of any protocol, or under an anomaly output option the
/// engine does not follow (`anomaly_output`), would be decided by records the engine never writes.
fn anomaly_unevaluable(
    fields: &[FieldMatch],
    anomaly_output: Option<&str>,
    kinds: AnomalyTypes,
) -> Option<String> {
    use flowbundle_types::{AppLayerEvent, DecodeEvent, StreamEvent};
    if let Some(cfg) = anomaly_output {
        return Some(format!(
            "check on event_type `anomaly` (anomaly output {cfg})"
        ));
    }
    let value = |want: &serde_json::Value| {
        want.as_str()
            .map_or_else(|| want.to_string(), str::to_string)
    };
    let field = |name: &str| {
        fields.iter().find_map(|f| match f {
            FieldMatch::Value(p, want) if plain_path(p) == name => Some(value(want)),
            _ => None,
        })
    };
    let kind = field("anomaly.type");
    let event = field("anomaly.event");
    let app_proto = field("anomaly.app_proto");
    match kind.as_deref() {
        None | Some("applayer") => {}
        Some(k @ ("decode" | "stream")) => {
            let on = if k == "decode" {
                kinds.decode
            } else {
                kinds.stream
            };
            // Every anomaly of a kind that is written counts events the engine does not raise; of a kind that is
            // not, the engine must write none, as Suricata.
            if on && event.is_none() {
                return Some(format!("check on every `{k}` anomaly"));
            }
        }
        Some(k) => return Some(format!("check on anomaly type `{k}`")),
    }
    if kind.is_none() && event.is_none() && app_proto.is_none() {
        return Some("check on anomalies of any protocol".to_string());
    }
    if let Some(layer) = field("anomaly.layer")
        && layer != "proto_parser"
    {
        return Some(format!("check on anomaly layer `{layer}`"));
    }
    if let Some(v) = event {
        let raised = if let Some(n) = v.strip_prefix("decoder.") {
            DecodeEvent::ALL.iter().any(|e| e.name() == n)
        } else if let Some(n) = v.strip_prefix("stream.") {
            StreamEvent::ALL.iter().any(|e| e.name() == n)
        } else {
            AppLayerEvent::ALL.iter().any(|e| e.event() == v)
        };
        if !raised {
            return Some(format!(
                "check on anomaly event `{v}` (not raised by the engine)"
            ));
        }
    }
    if let Some(v) = app_proto
        && !AppLayerEvent::ALL
            .iter()
            .any(|e| e.proto().suricata_name() == Some(v.as_str()))
    {
        return Some(format!("check on `{v}` anomalies (its parser raises none)"));
    }
    None
}

/// Parses one entry of `checks:`; `Ok(None)` when its own `requires` is not met (not run, as in suricata-verify),
/// `Err` (the reason) when it cannot be evaluated. `detection`: whether the test has rules (without a rule file
/// Suricata runs with detection disabled, and an alert check would be decided by nothing of ours).
fn parse_check(
    c: &Value,
    detection: bool,
    dns_logger: Option<&str>,
    smb_logger: Option<&str>,
    anomaly_output: (Option<&str>, AnomalyTypes),
) -> Result<Option<Check>, String> {
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
    // Version conditions may also sit on the filter itself, as suricata-verify reads them.
    for key in ["min-version", "lt-version", "version", "feature"] {
        if let Some(v) = f.get(key) {
            let mut m = serde_norway::Mapping::new();
            let (k, v) = match key {
                "feature" => ("features", Value::Sequence(vec![v.clone()])),
                other => (other, v.clone()),
            };
            m.insert(Value::String(k.to_string()), v);
            if requirements_met(&Value::Mapping(m)).is_err() {
                return Ok(None);
            }
        }
    }
    if let Some(name) = f.get("filename")
        && scalar_string(name) != "eve.json"
    {
        return Err(format!("check on file `{}`", scalar_string(name)));
    }
    let Some(m) = f.get("match").and_then(Value::as_mapping) else {
        return Err("filter without match".to_string());
    };
    let mut fields = Vec::new();
    let mut event_type = None;
    for (k, v) in m {
        let k = scalar_string(k);
        match k.as_str() {
            "event_type" => event_type = Some(scalar_string(v)),
            "has-key" => fields.push(FieldMatch::Has(scalar_string(v))),
            "not-has-key" => fields.push(FieldMatch::HasNot(scalar_string(v))),
            _ => {
                let want = serde_json::to_value(v).map_err(|e| format!("match value: {e}"))?;
                fields.push(FieldMatch::Value(k, want));
            }
        }
    }
    // Without `event_type` the filter counts events of every type; evaluable when its fields name one type's
    // object (`alert.signature_id`), so that no event of a type we do not write could have matched.
    let event_type = match event_type {
        Some(t) => t,
        None => {
            let roots: std::collections::BTreeSet<&str> = fields
                .iter()
                .map(|f| f.path().split('.').next().unwrap_or(""))
                .collect();
            // Alerts carry a transaction's application fields too (`dns` in an alert): an application object names
            // its event type only in a run without rules, where no alert can carry it.
            match roots.iter().next() {
                Some(r) if roots.len() == 1 && ["alert", "flow"].contains(r) => r.to_string(),
                Some(r) if roots.len() == 1 && *r == "dns" && !detection => r.to_string(),
                _ => return Err("check without event_type".to_string()),
            }
        }
    };
    if event_type == "stats" {
        // Only the rule load's counters: the other `stats` counters have not been compared with Suricata's.
        if !detection {
            return Err("check on event_type `stats` without rules".to_string());
        }
        for f in &fields {
            let FieldMatch::Value(path, _) = f else {
                return Err("check on event_type `stats`".to_string());
            };
            if !STATS_PATHS.contains(&path.as_str()) {
                return Err(format!("check on field `{}`", plain_path(path)));
            }
        }
    } else if !EVALUATED_TYPES.contains(&event_type.as_str()) {
        return Err(format!("check on event_type `{event_type}`"));
    }
    if event_type == "dns"
        && let Some(opt) = dns_logger
    {
        return Err(format!("check on event_type `dns` (dns logger {opt})"));
    }
    if event_type == "smb"
        && let Some(opt) = smb_logger
    {
        return Err(format!("check on event_type `smb` (smb logger {opt})"));
    }
    if event_type == "anomaly"
        && let Some(why) = anomaly_unevaluable(&fields, anomaly_output.0, anomaly_output.1)
    {
        return Err(why);
    }
    let written = written();
    if event_type == "alert" && !detection {
        return Err("alert check without rules (detection disabled)".to_string());
    }
    for f in fields.iter().filter(|_| event_type != "stats") {
        if let Some(why) = written.unevaluable(&event_type, f.path()) {
            return Err(why);
        }
    }
    let mut ch = Check {
        event_type,
        fields,
        count: None,
        lt: None,
        gt: None,
    };
    if let Some(fm) = f.as_mapping() {
        for (k, v) in fm {
            match scalar_string(k).as_str() {
                "match" | "requires" | "comment" | "min-version" | "lt-version" | "version"
                | "feature" | "filename" => {}
                "count" => ch.count = v.as_u64(),
                "lt" => ch.lt = v.as_u64(),
                "gt" => ch.gt = v.as_u64(),
                other => return Err(format!("filter option `{other}`")),
            }
        }
    }
    Ok(Some(ch))
}

/// The writer's paths, read once.
fn written() -> &'static Written {
    static WRITTEN: std::sync::OnceLock<Written> = std::sync::OnceLock::new();
    WRITTEN.get_or_init(Written::from_writer)
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
            "version" => {
                // Equal in the parts given: `8` is any 8.x.y, `8.0` any 8.0.y.
                let s = scalar_string(v);
                let given = s.split('-').next().unwrap_or("").split('.').count();
                let want = parse_version(v).ok_or("requires: unreadable version")?;
                let equal = want.0 == EMULATED.0
                    && (given < 2 || want.1 == EMULATED.1)
                    && (given < 3 || want.2 == EMULATED.2);
                if !equal {
                    return Err(format!("requires version {s}"));
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
    /// `action-order` items, in order (empty: Suricata's default).
    pub action_order: Vec<String>,
    /// The action order the engine runs with.
    pub action_order_parsed: flowbundle_inspect::rules::ActionOrder,
    /// A DNS logger option other than Suricata 8's defaults (`version: 2`, `types`, `formats`, `requests`, ...):
    /// the writer writes the default layout only, so the test's `dns` checks are not evaluated.
    pub dns_logger: Option<String>,
    /// An SMB logger option (`types`: the kinds of transactions written): the writer writes every transaction, so
    /// the test's `smb` checks are not evaluated.
    pub smb_logger: Option<String>,
    /// `eve-log.ipv6-compress: yes`: IPv6 addresses written compressed.
    pub ipv6_compress: bool,
    /// An `anomaly` output option the engine does not follow (one it does not know): the test's `anomaly` checks
    /// are not evaluated.
    pub anomaly_output: Option<String>,
    /// The kinds of anomaly records the test's `anomaly` output writes ([`EngineConfig::anomaly`]).
    pub anomaly: AnomalyTypes,
    /// `packet-alert-max` (0: Suricata's default).
    pub packet_alert_max: usize,
    /// The alert output's `tagged-packets` (`outputs.N.eve-log.types.N.alert.tagged-packets`): the packets a rule's
    /// `tag` covers are logged ([`EngineConfig::tagged_packets`]).
    pub tagged_packets: bool,
    /// `decoder.recursion-level.use-for-tracking` (default on): the tunnel depth is part of the flow key.
    pub tunnel_depth_in_key: bool,
    /// `app-layer.protocols.<name>.detection-ports` ([`EngineConfig::detection_ports`]).
    pub detection_ports: Vec<flowbundle_inspect::config_file::DetectionPort>,
    /// `datasets.*` keys (`KEY=VALUE`), read as the product's configuration reads them.
    pub datasets: Vec<String>,
    /// `--data-dir=${OUTPUT_DIR}`: the run's `save`/`state` files are checked by `file-compare`.
    pub data_dir: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            vars: Vars::suricata_defaults(),
            midstream: false,
            threshold_file: None,
            simulate_ips: false,
            action_order: Vec::new(),
            action_order_parsed: Default::default(),
            dns_logger: None,
            smb_logger: None,
            ipv6_compress: false,
            anomaly_output: None,
            anomaly: AnomalyTypes::default(),
            packet_alert_max: 0,
            tagged_packets: false,
            tunnel_depth_in_key: true,
            detection_ports: Vec::new(),
            datasets: Vec::new(),
            data_dir: false,
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
    /// Applies the command-line `args` of a test; returns every option it cannot honour.
    fn apply_args(&mut self, args: &[String]) -> Vec<String> {
        let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
        let mut unmet = Vec::new();
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
                        unmet.push("arg --set without value".to_string());
                        break;
                    };
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    if let Err(why) = self.apply(k, v, "--set") {
                        unmet.push(why);
                    }
                    i += 2;
                    continue;
                }
                "-v" | "-vv" | "-vvv" | "-vvvv" | "--no-random" => {}
                // Where `save` and `state` files go: each test runs with a data directory of its own.
                "--data-dir=${OUTPUT_DIR}" => self.data_dir = true,
                "--simulate-ips" => self.simulate_ips = true,
                _ if w.starts_with("-vvv") => {}
                _ if w.starts_with("--runmode") => {
                    if w == "--runmode" {
                        i += 1;
                    }
                }
                _ => unmet.push(format!("arg {w}")),
            }
            i += 1;
        }
        unmet
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
        if let Some(opt) = dns_logger_option(key)
            && !(opt == "enabled" && matches!(value, "yes" | "true"))
            && !(opt == "version" && value == "3")
        {
            self.dns_logger = Some(format!("{opt}: {value}"));
        }
        if let Some(opt) = logger_option(key, ".smb.")
            && !(opt == "enabled" && matches!(value, "yes" | "true"))
        {
            self.smb_logger = Some(opt.to_string());
        }
        if let Some(opt) = anomaly_output_option(key) {
            let on = matches!(value, "yes" | "true" | "1");
            match opt {
                "enabled" if !on => self.anomaly = AnomalyTypes::NONE,
                "enabled" => {}
                "types.decode" => self.anomaly.decode = on,
                "types.stream" => self.anomaly.stream = on,
                "types.applayer" => self.anomaly.applayer = on,
                "packethdr" => self.anomaly.packethdr = on,
                // Anything else: records the writer does not write.
                _ => self.anomaly_output = Some(format!("{opt}: {value}")),
            }
        }
        if key.starts_with("outputs.") && key.ends_with(".alert.tagged-packets") {
            self.tagged_packets = matches!(value, "yes" | "true" | "1");
        }
        if key.starts_with("outputs.") && key.ends_with(".eve-log.ipv6-compress") {
            self.ipv6_compress = matches!(value, "yes" | "true" | "1");
        }
        // The stream engine not validating checksums is what the engine does; the checksum keywords compute
        // theirs whatever this says.
        if key == "stream.checksum-validation" && matches!(value, "no" | "false" | "0") {
            return Ok(());
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
        // The `datasets:` section: read as `flowbundle inspect --config` reads it (sets are always enabled).
        if let Some(rest) = key.strip_prefix("datasets.") {
            if rest == "enabled" && matches!(value, "yes" | "true" | "1") {
                return Ok(());
            }
            if rest.starts_with("defaults.") || rest.starts_with("rules.") || rest.contains('.') {
                self.datasets.push(format!("{key}={value}"));
                return Ok(());
            }
        }
        // Suricata's inline stream mode inspects and parses a direction's data when it arrives; the engine always
        // does (its IDS-mode difference, inspection when the other side acknowledges, is named in the fixture
        // where a test shows it), so asking for it changes nothing here.
        if key == "stream.inline" && matches!(value, "true" | "yes" | "1") {
            return Ok(());
        }
        // Suricata's action order (`action-order: [drop, pass, reject, alert]`): the items in list order; the
        // engine applies it (`EngineConfig::action_order`), checked once every item is read.
        if key.starts_with("action-order.") {
            self.action_order.push(value.to_string());
            return Ok(());
        }
        // A reassembly depth of 0 is Suricata's "unlimited": the engine inspects every reassembled byte of a
        // stream (it has no depth setting), so that value changes nothing; any other depth would.
        if key == "stream.reassembly.depth" && value == "0" {
            return Ok(());
        }
        // Detection ports of a parser: Suricata probes its traffic on those ports, and so does the engine
        // (`EngineConfig::detection_ports`, read as the configuration file reads them: the port counts as the
        // protocol's own, ahead of the protocol that registered it).
        if let Some(ports) = flowbundle_inspect::config_file::detection_ports_setting(key, value) {
            let ports = ports.map_err(|e| format!("{from} {e}"))?;
            self.detection_ports.extend(ports);
            return Ok(());
        }
        // An exception policy set to `ignore` (`exception-policy`, `stream.midstream-policy`,
        // `app-layer.error-policy`, ...): the engine has no exception policies, it always goes on as `ignore` says.
        if (key == "exception-policy" || key.ends_with("-policy")) && value == "ignore" {
            return Ok(());
        }
        // The bucket counts of Suricata's flow, host and IP-pair hash tables change where entries collide, never
        // what they hold: the engine's tables (flows, xbits) compare whole addresses, so any size is the same here.
        if matches!(
            key,
            "flow.hash-size" | "host.hash-size" | "ippair.hash-size"
        ) {
            return Ok(());
        }
        // Suricata 7's switch that loaded rules with unknown `requires` requirements: Suricata 8 no longer reads it
        // (such a rule is skipped whatever it says), and neither does the rules crate.
        if key == "ignore-unknown-requirements" {
            return Ok(());
        }
        // Which prefilter engine Suricata builds (`mpm`, `auto`) changes how fast rules are matched, never which
        // match: the engine's prefilter is its own either way.
        if key == "detect.prefilter.default" {
            return Ok(());
        }
        // Whether the tunnel depth is part of the flow key (`DecodeOptions::tunnel_depth_in_key`).
        if key == "decoder.recursion-level.use-for-tracking" {
            self.tunnel_depth_in_key = !matches!(value, "false" | "no" | "0");
            return Ok(());
        }
        // The most alerts a packet reports: the engine keeps the same ones (`EngineConfig::packet_alert_max`).
        if key == "packet-alert-max" {
            return match value.trim().parse() {
                Ok(n) => {
                    self.packet_alert_max = n;
                    Ok(())
                }
                Err(_) => Err(format!("{from} {key} unreadable")),
            };
        }
        if key == "stream.midstream" {
            self.midstream = matches!(value, "true" | "yes" | "1");
            return Ok(());
        }
        Err(format!("{from} {key}"))
    }
}

/// The option of an EVE `anomaly` logger that a dotted configuration key sets
/// (`outputs.0.eve-log.types.2.anomaly.types.decode` → `types.decode`), if it is one.
fn anomaly_output_option(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("outputs.")?;
    let (_, rest) = rest.split_once(".eve-log.types.")?;
    let (_, rest) = rest.split_once(".anomaly.")?;
    Some(rest)
}

/// The option of the EVE logger `kind` (`.smb.`) that a dotted configuration key sets
/// (`outputs.0.eve-log.types.0.smb.types.1` → `types`), if it is one.
fn logger_option<'k>(key: &'k str, kind: &str) -> Option<&'k str> {
    let rest = key.strip_prefix("outputs.")?;
    let (_, rest) = rest.split_once(".eve-log.types.")?;
    let (_, rest) = rest.split_once(kind)?;
    Some(rest.split('.').next().unwrap_or(rest))
}

/// The option of an EVE `dns` logger that a dotted configuration key sets
/// (`outputs.0.eve-log.types.1.dns.version` → `version`), if it is one.
fn dns_logger_option(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("outputs.")?;
    let (_, rest) = rest.split_once(".eve-log.types.")?;
    let (_, rest) = rest.split_once(".dns.")?;
    Some(rest.split('.').next().unwrap_or(rest))
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
    let alert_tests: Vec<&&TestResult> = selected.iter().filter(|r| r.alert_test()).collect();
    let alert_passed = alert_tests.iter().filter(|r| r.passed()).count();
    let _ = writeln!(
        s,
        "alert tests (rules load, an alert check evaluated): {} selected, {alert_passed} pass ({:.1}%)",
        alert_tests.len(),
        if alert_tests.is_empty() {
            0.0
        } else {
            100.0 * alert_passed as f64 / alert_tests.len() as f64
        }
    );
    let run: usize = selected.iter().map(|r| r.checks_run).sum();
    let fully = selected.iter().filter(|r| r.not_run.is_empty()).count();
    let _ = writeln!(
        s,
        "{run} checks evaluated; {fully} selected tests have every check evaluated; checks not evaluated \
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
    let _ = writeln!(s, "excluded, by first reason:");
    for (r, n) in by_reason {
        let _ = writeln!(s, "  {n:>5}  {r}");
    }
    // What a piece of work would gain: per reason, the excluded tests it blocks, and those it blocks alone (they
    // would be selected, to pass or fail, once that reason is gone).
    let mut per_reason: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in results.iter().filter(|r| !r.selected()) {
        for b in &r.blockers {
            let e = per_reason.entry(b.as_str()).or_default();
            e.0 += 1;
            if r.blockers.len() == 1 {
                e.1 += 1;
            }
        }
    }
    let mut per_reason: Vec<(&str, (usize, usize))> = per_reason.into_iter().collect();
    per_reason.sort_by(|a, b| (b.1.1, b.1.0).cmp(&(a.1.1, a.1.0)).then(a.0.cmp(b.0)));
    let _ = writeln!(
        s,
        "blocking reasons (every reason of every excluded test): alone / in all, reason"
    );
    for (r, (all, alone)) in per_reason {
        let _ = writeln!(s, "  {alone:>5} / {all:>5}  {r}");
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
