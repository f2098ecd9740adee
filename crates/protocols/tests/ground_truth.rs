//! Agreement with nDPI, flow by flow, through the engine's own path: [`Registry::builtin`] and one [`FlowApp`] per
//! flow (classifier, then the identified protocol's parser on the rest of the flow).
//!
//! Reads every capture named in `../shared/data/ndpi/groundtruth.csv`, rebuilds flows by 5-tuple (client = the SYN
//! sender, else the first sender), concatenates each direction's TCP payloads in arrival order with retransmitted
//! bytes trimmed (naive: no reordering, no defragmentation, no tunnels other than IP-in-IP), and feeds them to the
//! flow's `FlowApp`. Compares the verdict with nDPI's master protocol on the rows nDPI classified by payload
//! (confidence `DPI`) and prints, per protocol, agreement (our label equals nDPI's) and the flows we gave another
//! protocol (false positives).
//!
//! Asserts the protocols this file's owner wrote (HTTP incl. HTTP_Proxy/HTTP_Connect, TLS, QUIC, DNS, MDNS, LLMNR,
//! DTLS) each reach 80% and together 90%; every other protocol is reported. Parsers run on every identified flow, so this also checks that
//! no real capture makes a parser panic. `GT_VERBOSE=1` lists every disagreement.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{Key, RunFlow, read_flows};
use flowbundle_protocols::{AppEvent, EventSink, Registry, Verdict};

/// Payload-carrying packets fed per flow (the classifier stops far earlier; the rest exercises parsers).
const MAX_PAYLOADS: usize = 400;

/// Protocols asserted here, by nDPI name.
const MINE: &[&str] = &[
    "HTTP",
    "HTTP_Proxy",
    "HTTP_Connect",
    "TLS",
    "QUIC",
    "DNS",
    "MDNS",
    "LLMNR",
    "DTLS",
];

struct Row {
    pcap: String,
    key: Key,
    master: String,
}

fn load_rows(dir: &Path) -> Option<Vec<Row>> {
    let rows: Vec<Row> = flowbundle_testsupport::ndpi::ground_truth(&dir.join("groundtruth.csv"))
        .into_iter()
        .filter(|f| f.by_payload() && matches!(f.l4.as_str(), "TCP" | "UDP"))
        .map(|f| Row {
            key: Key::new(f.l4 == "TCP", (f.src, f.sport), (f.dst, f.dport)),
            master: f.master().to_string(),
            pcap: f.pcap,
        })
        .collect();
    (!rows.is_empty()).then_some(rows)
}

/// Counts events and the bytes of HTTP buffers, so parsers run with a sink that wants everything.
#[derive(Default)]
struct CountSink {
    events: BTreeMap<&'static str, u64>,
    http_buffer_bytes: u64,
}

impl EventSink for CountSink {
    fn event(&mut self, e: AppEvent) {
        *self.events.entry(e.event_type()).or_default() += 1;
    }
    fn http_buffer(
        &mut self,
        _tx: flowbundle_protocols::http::HttpTx<'_>,
        _b: flowbundle_protocols::HttpBuffer,
        data: &[u8],
    ) {
        self.http_buffer_bytes += data.len() as u64;
    }
}

#[derive(Default, Clone, Copy)]
struct Tally {
    flows: u64,
    agree: u64,
    unknown: u64,
    other: u64,
    /// Flows of other protocols we labelled as this one.
    false_pos: u64,
}

#[test]
fn agreement_with_ndpi() {
    let Some(dir) = flowbundle_testsupport::data("ndpi") else {
        return;
    };
    let Some(rows) = load_rows(&dir) else {
        panic!("{}/groundtruth.csv: unreadable or empty", dir.display());
    };
    let verbose = std::env::var_os("GT_VERBOSE").is_some();
    let reg = Registry::builtin();
    let mut by_pcap: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_pcap.entry(r.pcap.as_str()).or_default().push(r);
    }
    let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
    let mut sink = CountSink::default();
    let (mut found, mut missing) = (0u64, 0u64);
    for (pcap, rows) in &by_pcap {
        let path = dir.join("pcap").join(pcap);
        if !path.exists() {
            missing += rows.len() as u64;
            continue;
        }
        let flows = read_flows(&path, MAX_PAYLOADS);
        for r in rows {
            let Some(flow) = flows.get(&r.key) else {
                missing += 1;
                continue;
            };
            found += 1;
            let v = flow.run(&reg, &r.key, &mut sink);
            let ours = match v {
                Verdict::Matched(flowbundle_protocols::Identified { proto, .. }) => {
                    proto.name().to_string()
                }
                _ => "Unknown".to_string(),
            };
            let t = tally.entry(r.master.clone()).or_default();
            t.flows += 1;
            if ours == r.master {
                t.agree += 1;
            } else {
                if ours == "Unknown" {
                    t.unknown += 1;
                } else {
                    t.other += 1;
                    tally.entry(ours.clone()).or_default().false_pos += 1;
                }
                if verbose && (MINE.contains(&r.master.as_str()) || MINE.contains(&ours.as_str())) {
                    eprintln!("  {pcap} {:?}: nDPI {} ours {ours}", r.key, r.master);
                }
            }
        }
    }
    eprintln!("ground truth: {found} DPI flows rebuilt, {missing} not found in the captures");
    eprintln!(
        "{:<28} {:>6} {:>6} {:>7} {:>6} {:>6} {:>6}",
        "protocol", "flows", "agree", "%", "unkn", "other", "fp"
    );
    let (mut mine_flows, mut mine_agree) = (0, 0);
    let mut supported = (0u64, 0u64);
    let mut failures = Vec::new();
    for (name, t) in &tally {
        let pct = if t.flows > 0 {
            100.0 * t.agree as f64 / t.flows as f64
        } else {
            0.0
        };
        let supported_here = t.agree > 0 || t.false_pos > 0;
        if t.flows > 0 && (supported_here || verbose) {
            eprintln!(
                "{name:<28} {:>6} {:>6} {pct:>6.1}% {:>6} {:>6} {:>6}",
                t.flows, t.agree, t.unknown, t.other, t.false_pos
            );
        }
        if supported_here {
            supported.0 += t.flows;
            supported.1 += t.agree;
        }
        if MINE.contains(&name.as_str()) {
            mine_flows += t.flows;
            mine_agree += t.agree;
            if t.flows >= 5 && pct < 80.0 {
                failures.push(format!("{name}: {pct:.1}%"));
            }
        }
    }
    let mine_pct = 100.0 * mine_agree as f64 / mine_flows.max(1) as f64;
    let sup_pct = 100.0 * supported.1 as f64 / supported.0.max(1) as f64;
    eprintln!(
        "HTTP(+Proxy/Connect)/TLS/QUIC/DNS/MDNS/LLMNR/DTLS: {mine_agree}/{mine_flows} = {mine_pct:.1}%"
    );
    eprintln!(
        "all protocols with a detector: {}/{} = {sup_pct:.1}%",
        supported.1, supported.0
    );
    eprintln!(
        "parser events: {:?}, HTTP buffer bytes: {}",
        sink.events, sink.http_buffer_bytes
    );
    assert!(failures.is_empty(), "protocols below 80%: {failures:?}");
    assert!(mine_pct >= 90.0, "overall agreement {mine_pct:.1}% < 90%");
}
