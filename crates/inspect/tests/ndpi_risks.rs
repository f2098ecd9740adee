//! Flow risks against nDPI, flow by flow and risk by risk (`scripts/ndpi-compare` runs it beside the protocol
//! agreement).
//!
//! Every capture named in `shared/data/ndpi/groundtruth.csv` goes through the engine's single-threaded path with the
//! default configuration. Each ground-truth flow (detected or not) is matched to the engine's flow record of the
//! same canonical 5-tuple (the first, when timeouts split it), and its risks compared with those `ndpiReader -v 2`
//! printed for it (`[Risk: ...]` in `ndpi/result/<pcap>.out`), for every risk the engine computes
//! ([`FlowRisk::ALL`]). Per risk the table gives the flows where both report it, where only nDPI does, and where
//! only the engine does.
//!
//! nDPI's heuristics behind some risks are its own (which cipher suites it calls weak, when a missing ALPN means "not
//! HTTPS"); the engine's are written from the specifications (see `flowbundle_protocols::risk`), so the two are
//! expected to differ at the edges. The test pins, per risk, the fewest flows where both agree and the most where
//! only the engine reports it ([`PINS`]): a risk that stops being found, or starts being reported where nDPI sees
//! none, fails the test. Raise the pins when the engine gets closer.

mod common;

use std::collections::{BTreeMap, HashMap};

use flowbundle_decode::FlowKey;
use flowbundle_inspect::{Engine, EngineConfig, EventKind};
use flowbundle_protocols::risk::{FlowRisk, RiskSet};

/// Per risk (nDPI's name): the fewest flows where nDPI and the engine both report it, and the most flows where only
/// the engine does. Every risk the engine computes has a row.
const PINS: &[(&str, u64, u64)] = &[
    ("NDPI_BINARY_APPLICATION_TRANSFER", 6, 0),
    // Engine only: includes the 4 CoAP flows on UDP 17500 that nDPI calls Dropbox on Dropbox's own port (a
    // disputed label, `flowbundle_testsupport::ndpi::DISPUTES`), and SMPP between ports 9000 and 1770 (IANA's
    // SMPP port is 2775; nDPI 4.2 gives SMPP no default port to compare with).
    ("NDPI_KNOWN_PROTOCOL_ON_NON_STANDARD_PORT", 158, 68),
    ("NDPI_TLS_SELFSIGNED_CERTIFICATE", 6, 1),
    ("NDPI_TLS_OBSOLETE_VERSION", 85, 50),
    ("NDPI_TLS_WEAK_CIPHER", 97, 20),
    ("NDPI_TLS_CERTIFICATE_EXPIRED", 5, 0),
    ("NDPI_TLS_CERTIFICATE_MISMATCH", 5, 12),
    ("NDPI_HTTP_SUSPICIOUS_USER_AGENT", 11, 0),
    ("NDPI_NUMERIC_IP_HOST", 60, 7),
    ("NDPI_TLS_NOT_CARRYING_HTTPS", 95, 5),
    ("NDPI_UNSAFE_PROTOCOL", 343, 309),
    ("NDPI_TLS_MISSING_SNI", 27, 17),
    ("NDPI_CLEAR_TEXT_CREDENTIALS", 2, 0),
    ("NDPI_DNS_LARGE_PACKET", 10, 4),
    ("NDPI_DNS_FRAGMENTED", 7, 0),
    ("NDPI_DNS_SUSPICIOUS_TRAFFIC", 5, 7),
    ("NDPI_UNIDIRECTIONAL_TRAFFIC", 3901, 50),
    ("NDPI_TLS_ALPN_SNI_MISMATCH", 9, 13),
];

#[derive(Default, Clone, Copy)]
struct Count {
    both: u64,
    ndpi_only: u64,
    engine_only: u64,
}

#[test]
fn risks_agree_with_ndpi() {
    let Some(csv_path) = flowbundle_testsupport::data("ndpi/groundtruth.csv") else {
        return;
    };
    let dir = csv_path.parent().expect("the csv's folder").to_path_buf();
    let mut by_pcap: BTreeMap<String, Vec<flowbundle_testsupport::ndpi::GroundTruthFlow>> =
        BTreeMap::new();
    for f in flowbundle_testsupport::ndpi::ground_truth(&csv_path) {
        by_pcap.entry(f.pcap.clone()).or_default().push(f);
    }
    let verbose = std::env::var_os("NDPI_VERBOSE").is_some();
    let mut counts: BTreeMap<FlowRisk, Count> = BTreeMap::new();
    let (mut flows, mut matched) = (0u64, 0u64);
    for (pcap, rows) in &by_pcap {
        let path = dir.join("pcap").join(pcap);
        let result = dir.join("result").join(format!("{pcap}.out"));
        if !path.exists() || !result.exists() {
            continue;
        }
        let reference = flowbundle_testsupport::ndpi::risk_labels(&result);
        let mut engine = Engine::new(EngineConfig::default(), None, None);
        let fin = common::run_serial(&mut engine, &[path]);
        let mut risks: HashMap<FlowKey, RiskSet> = HashMap::new();
        for e in &fin.events {
            if let EventKind::Flow(r) = &e.kind {
                risks.entry(e.key.five_tuple()).or_insert(r.risks);
            }
        }
        for row in rows {
            let Some(p) = row.ip_proto() else { continue };
            flows += 1;
            let key = FlowKey::new(row.src, row.sport, row.dst, row.dport, p).0;
            let Some(ours) = risks.get(&key).copied() else {
                continue;
            };
            matched += 1;
            let theirs: RiskSet = reference
                .get(&(row.detected, row.flow))
                .into_iter()
                .flatten()
                .filter_map(|l| FlowRisk::from_label(l))
                .collect();
            for &risk in FlowRisk::ALL {
                let c = counts.entry(risk).or_default();
                match (theirs.contains(risk), ours.contains(risk)) {
                    (true, true) => c.both += 1,
                    (true, false) => c.ndpi_only += 1,
                    (false, true) => c.engine_only += 1,
                    (false, false) => continue,
                }
                if verbose && theirs.contains(risk) != ours.contains(risk) {
                    eprintln!(
                        "{pcap}: {key} {} {} only ({})",
                        risk.name(),
                        if ours.contains(risk) {
                            "engine"
                        } else {
                            "nDPI"
                        },
                        row.proto_name
                    );
                }
            }
        }
    }
    println!(
        "Flow risks vs nDPI ({} captures, {matched} of {flows} flows matched by 5-tuple)",
        by_pcap.len()
    );
    println!(
        "{:<42} {:>6} {:>10} {:>12} {:>9} {:>7}",
        "risk", "both", "nDPI only", "engine only", "precision", "recall"
    );
    let pct = |a: u64, n: u64| 100.0 * a as f64 / n.max(1) as f64;
    for (risk, c) in &counts {
        println!(
            "{:<42} {:>6} {:>10} {:>12} {:>8.1}% {:>6.1}%",
            risk.name(),
            c.both,
            c.ndpi_only,
            c.engine_only,
            pct(c.both, c.both + c.engine_only),
            pct(c.both, c.both + c.ndpi_only)
        );
    }
    assert!(flows > 1000, "ground truth mostly present");
    let mut failed = Vec::new();
    for &risk in FlowRisk::ALL {
        assert!(
            PINS.iter().any(|p| p.0 == risk.name()),
            "{}: no pin; add its row to PINS",
            risk.name()
        );
    }
    for &(name, both_at_least, engine_only_at_most) in PINS {
        let risk = FlowRisk::from_name(name)
            .unwrap_or_else(|| panic!("{name}: not a risk the engine computes"));
        let c = counts.get(&risk).copied().unwrap_or_default();
        if c.both < both_at_least || c.engine_only > engine_only_at_most {
            failed.push(format!(
                "{}: both {} (pinned at least {both_at_least}), engine only {} (pinned at most {engine_only_at_most})",
                risk.name(),
                c.both,
                c.engine_only
            ));
        }
    }
    assert!(failed.is_empty(), "risks off their pins: {failed:#?}");
}
