//! Protocol identification against ndpiReader on captures outside nDPI's ground truth: the detectors were written
//! against `ndpi/groundtruth.csv`, so this is how they fare on traffic they were not fitted to.
//!
//! The captures are every one of the shared data's that the ground truth does not list: the suricata-verify
//! regression captures, the PcapPlusPlus examples (`reassembly/`) and the nDPI captures without ground-truth rows.
//! Each goes through the installed ndpiReader (`ndpiReader -q -i CAPTURE -v 2`, nDPI 4.2 on Debian) and through the
//! engine's single-threaded path (default configuration, no rules); each flow ndpiReader classified from payload
//! (`Confidence: DPI`) is matched to the engine's flow record of the same canonical 5-tuple and ends as *agree*,
//! *unknown* or *wrong* (the engine names another protocol), as in `ndpi_agreement.rs`, whose matching rules
//! (stacked names, single-name services) it shares. The table lists the confident errors by pair; `NDPI_VERBOSE=1`
//! lists every one.
//!
//! The ground truth comes from a later nDPI than the installed 4.2, and the engine names flows as the later one does
//! where the two differ ([`LATER_NAMES`], each with the change that made it): such a flow is counted apart as
//! agreeing with the later naming, never silently as agreement.
//!
//! The confident errors left when this was written are nDPI 4.2's own misreadings, which later nDPI versions
//! fixed: its MQTT rule takes LDAP messages (a BER `0x30` SEQUENCE, like MQTT's PUBLISH type byte) on port 389 in
//! the suricata-verify LDAP tests and an SMTP session on port 25 for MQTT, and its NATS rule takes a UPnP
//! `SUBSCRIBE` request over HTTP for NATS's `SUB` command.
//!
//! Running ndpiReader on about 900 captures takes about a minute of CPU, so the test is `#[ignore]`d in the
//! default run; `scripts/ndpi-compare` runs it. It fails when the confident errors exceed [`WRONG_AT_MOST`] or
//! the agreeing flows fall below [`AGREE_AT_LEAST`].

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use flowbundle_decode::FlowKey;
use flowbundle_inspect::{AppLabel, ApplicationEvidence, Engine, EngineConfig, EventKind};
use flowbundle_testsupport::ndpi::{ReaderFlow, ground_truth, reader_flows};

/// Most flows the engine may name as another protocol than ndpiReader.
const WRONG_AT_MOST: u64 = 13;
/// Fewest flows on which the engine must name ndpiReader's protocol (by 4.2's name or the later one).
const AGREE_AT_LEAST: u64 = 1_862;

/// Where nDPI 4.2 names a flow otherwise than the later nDPI of the ground truth, which the engine follows:
/// `(4.2's name, the later name the engine gives, what changed)`.
const LATER_NAMES: &[(&str, &str, &str)] = &[
    (
        "DCE_RPC",
        "DCERPC",
        "renamed: the ground truth's nDPI spells it DCERPC",
    ),
    (
        "NetBIOS",
        "SMBv1",
        "SMB in a NetBIOS session: later nDPI stacks NetBIOS.SMBv1 (ground truth)",
    ),
    (
        "NetBIOS",
        "SMBv23",
        "SMB in a NetBIOS session: later nDPI stacks NetBIOS.SMBv23 (ground truth)",
    ),
    (
        "HTTP",
        "HTTP_Proxy",
        "HTTP to a proxy port (8080, 3128): later nDPI names it HTTP_Proxy (ground truth)",
    ),
    (
        "SMTP",
        "SMTPS",
        "SMTP upgraded by STARTTLS: SMTPS since ntop/nDPI pull request 1639 (July 2022)",
    ),
];

/// Every capture file under `dir`, recursively, in name order.
fn captures_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            captures_under(&p, out);
        } else if p
            .extension()
            .is_some_and(|e| e == "pcap" || e == "pcapng" || e == "cap")
        {
            out.push(p);
        }
    }
}

/// What the engine said about one flow.
struct Said {
    label: AppLabel,
    application: Option<&'static str>,
    application_evidence: Option<ApplicationEvidence>,
}

impl Said {
    /// Whether the engine names ndpiReader's protocol (see `ndpi_agreement.rs`).
    fn names(&self, f: &ReaderFlow) -> bool {
        let name = self.label.name();
        name == f.master()
            || (!f.app().is_empty() && name == f.app())
            || (self.application == Some(f.master())
                && self.application_evidence != Some(ApplicationEvidence::IpOwner))
    }
}

#[test]
#[ignore = "runs ndpiReader on ~900 captures (about a minute of CPU): scripts/ndpi-compare runs it"]
fn agreement_on_captures_outside_the_ground_truth() {
    let Some(reader) = flowbundle_testsupport::tool("ndpiReader") else {
        return;
    };
    let Some(gt) = flowbundle_testsupport::data("ndpi/groundtruth.csv") else {
        return;
    };
    let listed: BTreeSet<String> = ground_truth(&gt).into_iter().map(|f| f.pcap).collect();
    let mut paths = Vec::new();
    for dir in ["suricata-verify", "reassembly", "ndpi/pcap"] {
        if let Some(d) = flowbundle_testsupport::data(dir) {
            captures_under(&d, &mut paths);
        }
    }
    paths.retain(|p| {
        !(p.parent().is_some_and(|d| d.ends_with("ndpi/pcap"))
            && p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| listed.contains(n)))
    });
    assert!(!paths.is_empty(), "no captures outside the ground truth");
    let verbose = std::env::var_os("NDPI_VERBOSE").is_some();
    let (mut flows, mut agree, mut wrong, mut captures) = (0u64, 0u64, 0u64, 0u64);
    let mut later: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let mut pairs: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut per_proto: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    for path in &paths {
        let Ok(out) = Command::new(&reader)
            .arg("-q")
            .arg("-i")
            .arg(path)
            .args(["-v", "2"])
            .output()
        else {
            continue;
        };
        let listing = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<ReaderFlow> = reader_flows(&listing)
            .into_iter()
            .filter(|f| f.confidence == "DPI")
            .collect();
        if rows.is_empty() {
            continue;
        }
        captures += 1;
        let mut engine = Engine::new(EngineConfig::default(), None, None);
        let fin = common::run_serial(&mut engine, std::slice::from_ref(path));
        let mut labels: HashMap<FlowKey, Said> = HashMap::new();
        for e in &fin.events {
            if let EventKind::Flow(r) = &e.kind {
                labels.entry(e.key).or_insert_with(|| Said {
                    label: r.app.clone(),
                    application: r.application,
                    application_evidence: r.application_evidence,
                });
            }
        }
        let name = path
            .strip_prefix(gt.parent().and_then(Path::parent).unwrap_or(Path::new("")))
            .unwrap_or(path)
            .display()
            .to_string();
        for f in &rows {
            let proto = match f.l4.as_str() {
                "TCP" => 6,
                "UDP" => 17,
                _ => continue,
            };
            let key = FlowKey::new(f.src, f.sport, f.dst, f.dport, proto).0;
            flows += 1;
            let t = per_proto.entry(f.master().to_string()).or_default();
            t[0] += 1;
            match labels.get(&key) {
                Some(s) if s.names(f) => {
                    agree += 1;
                    t[1] += 1;
                }
                Some(s)
                    if let Some(&(old, new, _)) = LATER_NAMES
                        .iter()
                        .find(|l| l.0 == f.master() && l.1 == s.label.name()) =>
                {
                    *later.entry((old, new)).or_default() += 1;
                    t[1] += 1;
                }
                Some(Said {
                    label: AppLabel::Unknown,
                    ..
                })
                | None => {}
                Some(s) => {
                    wrong += 1;
                    t[2] += 1;
                    *pairs
                        .entry((f.master().to_string(), s.label.name().to_string()))
                        .or_default() += 1;
                    if verbose {
                        eprintln!(
                            "{name}: {key} nDPI {} engine {} (wrong)",
                            f.proto_name,
                            s.label.name()
                        );
                    }
                }
            }
        }
    }
    let pct = |a: u64, n: u64| 100.0 * a as f64 / n.max(1) as f64;
    println!(
        "Captures outside the ground truth: {captures} with DPI flows (of {} read), {flows} DPI flows (ndpiReader 4.2)",
        paths.len()
    );
    println!(
        "{:<24} {:>6} {:>6} {:>6}",
        "protocol (nDPI)", "flows", "agree", "wrong"
    );
    let mut rows: Vec<(&String, &[u64; 3])> = per_proto.iter().collect();
    rows.sort_by(|a, b| b.1[0].cmp(&a.1[0]).then(a.0.cmp(b.0)));
    for (p, [n, a, w]) in rows {
        println!("{p:<24} {n:>6} {a:>6} {w:>6}");
    }
    let renamed: u64 = later.values().sum();
    println!(
        "agree {} of {flows} ({:.1}%: {agree} by 4.2's name, {renamed} by the later nDPI's), confidently wrong \
         {wrong} ({:.2}%), unknown {}",
        agree + renamed,
        pct(agree + renamed, flows),
        pct(wrong, flows),
        flows - agree - renamed - wrong
    );
    for ((old, new), c) in &later {
        let why = LATER_NAMES
            .iter()
            .find(|l| l.0 == *old && l.1 == *new)
            .map_or("", |l| l.2);
        println!("  4.2 {old}, engine {new} (later nDPI's name: {why}): {c}");
    }
    for ((n, e), c) in &pairs {
        println!("  nDPI {n}, engine {e}: {c}");
    }
    assert!(flows > 100, "ndpiReader classified too few flows: {flows}");
    assert!(
        wrong <= WRONG_AT_MOST,
        "{wrong} flows confidently wrong, more than the {WRONG_AT_MOST} pinned"
    );
    let agree = agree + renamed;
    assert!(
        agree >= AGREE_AT_LEAST,
        "{agree} flows agree, fewer than the {AGREE_AT_LEAST} pinned"
    );
}
