//! Protocol identification against nDPI, flow by flow (the engine's acceptance test; `scripts/ndpi-compare` runs it).
//!
//! Every capture named in `shared/data/ndpi/groundtruth.csv` goes through the engine's single-threaded path (the
//! same code as `flowbundle inspect`). Each ground-truth flow nDPI classified from payload (confidence `DPI`) is
//! matched to the engine's flow record of the same canonical 5-tuple (the first one, when timeouts split it), and
//! the master protocol compared (`HTTP` for nDPI's `HTTP.Google`). Only flows whose nDPI protocol the engine can name
//! count ("supported": a built-in protocol, or a protocol without ports named after its IP protocol); the rest are
//! listed apart. Prints agreement per protocol and overall, and what the engine said instead where it disagreed
//! (`NDPI_VERBOSE=1` lists every disagreeing flow).
//!
//! Target: at least 90% overall, no protocol below 80%.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use flowbundle_decode::FlowKey;
use flowbundle_inspect::{AppLabel, Engine, EngineConfig, EventKind};
use flowbundle_protocols::AppProto;

struct Row {
    pcap: String,
    key: FlowKey,
    master: String,
}

/// Every name the engine can give a flow.
fn supported() -> Vec<String> {
    let mut v: Vec<String> = (1..200)
        .filter_map(flowbundle_inspect::cost::app_by_code)
        .filter(|p| *p != AppProto::Unknown)
        .map(|p| p.name().to_string())
        .collect();
    for (p, v6) in [
        (1, false),
        (2, false),
        (4, false),
        (47, false),
        (50, false),
        (58, true),
        (89, false),
        (103, false),
        (112, false),
        (132, false),
    ] {
        if let Some(n) = flowbundle_inspect::app::ip_protocol_name(p, v6) {
            v.push(n.to_string());
        }
    }
    v
}

#[derive(Default, Clone)]
struct Tally {
    flows: u64,
    agree: u64,
    missing: u64,
    got: BTreeMap<String, u64>,
}

#[test]
fn agreement_with_ndpi() {
    let Some(csv_path) = flowbundle_testsupport::data("ndpi/groundtruth.csv") else {
        return;
    };
    let dir = csv_path.parent().expect("the csv's folder").to_path_buf();
    let rows: Vec<Row> = flowbundle_testsupport::ndpi::ground_truth(&csv_path)
        .into_iter()
        .filter(|f| f.by_payload())
        .filter_map(|f| {
            let p = f.ip_proto()?;
            Some(Row {
                key: FlowKey::new(f.src, f.sport, f.dst, f.dport, p).0,
                master: f.master().to_string(),
                pcap: f.pcap,
            })
        })
        .collect();
    let mut by_pcap: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_pcap.entry(&r.pcap).or_default().push(r);
    }
    let supported = supported();
    let verbose = std::env::var_os("NDPI_VERBOSE").is_some();
    let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
    let mut unsupported: BTreeMap<String, u64> = BTreeMap::new();
    let mut packets = 0u64;
    for (pcap, rows) in &by_pcap {
        let path: PathBuf = dir.join("pcap").join(pcap);
        if !path.exists() {
            continue;
        }
        let mut engine = Engine::new(EngineConfig::default(), None, None);
        let fin = common::run_serial(&mut engine, &[path]);
        packets += fin.stats.packets;
        let mut labels: HashMap<FlowKey, AppLabel> = HashMap::new();
        for e in &fin.events {
            if let EventKind::Flow(r) = &e.kind {
                labels.entry(e.key).or_insert_with(|| r.app.clone());
                // nDPI keys SCTP flows by addresses only (ports 0): also file them that way.
                if e.key.proto == 132 {
                    let k = FlowKey {
                        lo_port: 0,
                        hi_port: 0,
                        ..e.key
                    };
                    labels.entry(k).or_insert_with(|| r.app.clone());
                }
            }
        }
        for r in rows {
            if !supported.contains(&r.master) {
                *unsupported.entry(r.master.clone()).or_default() += 1;
                continue;
            }
            let t = tally.entry(r.master.clone()).or_default();
            t.flows += 1;
            match labels.get(&r.key) {
                Some(app) if app.name() == r.master => t.agree += 1,
                Some(app) => {
                    *t.got.entry(app.name().to_string()).or_default() += 1;
                    if verbose {
                        eprintln!("{pcap}: {} nDPI {} engine {}", r.key, r.master, app.name());
                    }
                }
                None => {
                    t.missing += 1;
                    if verbose {
                        eprintln!("{pcap}: {} nDPI {} engine: no flow", r.key, r.master);
                    }
                }
            }
        }
    }
    let (flows, agree): (u64, u64) = tally
        .values()
        .fold((0, 0), |a, t| (a.0 + t.flows, a.1 + t.agree));
    println!(
        "Protocol identification vs nDPI ({} captures, {packets} packets inspected)",
        by_pcap.len()
    );
    println!(
        "{:<26} {:>6} {:>6} {:>8}  engine said instead",
        "protocol (nDPI)", "flows", "agree", "percent"
    );
    let mut worst: Vec<(String, f64, u64)> = Vec::new();
    for (name, t) in &tally {
        let pct = 100.0 * t.agree as f64 / t.flows.max(1) as f64;
        let mut other: Vec<String> = t.got.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if t.missing > 0 {
            other.push(format!("(no flow) {}", t.missing));
        }
        println!(
            "{name:<26} {:>6} {:>6} {pct:>7.1}%  {}",
            t.flows,
            t.agree,
            other.join(", ")
        );
        worst.push((name.clone(), pct, t.flows));
    }
    let overall = 100.0 * agree as f64 / flows.max(1) as f64;
    println!(
        "{:<26} {flows:>6} {agree:>6} {overall:>7.1}%",
        "OVERALL (supported)"
    );
    let uns: u64 = unsupported.values().sum();
    println!(
        "not supported (not counted): {uns} flows of {} protocols",
        unsupported.len()
    );
    worst.sort_by(|a, b| a.1.total_cmp(&b.1));
    let below: Vec<String> = worst
        .iter()
        .filter(|w| w.1 < 80.0)
        .map(|w| format!("{} {:.1}% of {}", w.0, w.1, w.2))
        .collect();
    println!(
        "protocols below 80%: {}",
        if below.is_empty() {
            "none".into()
        } else {
            below.join(", ")
        }
    );
    assert!(flows > 1000, "ground truth mostly present");
    assert!(overall >= 90.0, "overall agreement {overall:.1}% below 90%");
    assert!(below.is_empty(), "protocols below 80%: {below:?}");
}
