//! Agreement with nDPI, flow by flow, for the extra detectors (every protocol directory but the core `http`, `tls`,
//! `quic` and `dns`). The core protocols are checked through the engine's own path by `ground_truth.rs`.
//!
//! Reads every capture named in `../shared/data/ndpi/groundtruth.csv`, rebuilds flows (5-tuple, client = SYN sender
//! or first sender), feeds each flow's first payloads to a small probing loop (the same three-valued protocol the
//! engine's classifier runs), and compares the answer with nDPI's master protocol on the rows nDPI classified by
//! payload (confidence `DPI`). Prints recall per protocol and, as false positives, every other DPI flow one of
//! these detectors claimed. Fails if a covered protocol with at least 5 flows falls below 80% or false positives
//! exceed 1% of the flows. A flow whose label is disputed (`ndpi::DISPUTES`: the capture's bytes and an outside
//! source contradict it) is left out when the detectors name it what the dispute says it is.
//!
//! The flow rebuilding is `flowbundle_testcapture::flows` (no defragmentation, TCP segments in arrival order with
//! retransmitted bytes trimmed); the engine's reassembler is the real one. Flows it cannot rebuild are reported
//! as "not found" and left out of the percentages.
//!
//! Set `GT_EXTRA_ALL=1` to probe with the whole registry (`registry::detectors()`) instead of this module's set, and
//! `GT_EXTRA_VERBOSE=1` to list every disagreement.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::Path;

use flowbundle_protocols::{AppProto, Detector, Direction, Probe, ProbeCtx, Transport};
use flowbundle_testcapture::{Flow, Key, flows as read_flows};

/// Payload-carrying packets kept per flow for classification (the classifier's budget is smaller).
const MAX_PAYLOADS: usize = 40;

/// The protocol directories of the core detectors (HTTP, TLS, QUIC, DNS); the others are the "extra" ones.
const CORE_MODULES: &[&str] = &["http", "tls", "quic", "dns"];

/// Every built-in detector but the core ones, in probing order.
fn extra_detectors() -> Vec<Box<dyn Detector>> {
    flowbundle_protocols::registry::builtin_detectors_by_module()
        .into_iter()
        .filter(|(m, _)| !CORE_MODULES.contains(m))
        .map(|(_, d)| d)
        .collect()
}
/// Payloads kept per flow by the parser tests, which follow a whole control connection.
const MAX_PAYLOADS_PARSE: usize = 4000;
/// Stream prefix per direction handed to detectors, as `registry::PROBE_PREFIX`.
const PREFIX: usize = 2048;

/// The probing loop: every detector for the transport is asked about each payload until one is certain or all
/// are out. Returns the protocol and the payload index that decided it.
fn classify(dets: &[Box<dyn Detector>], key: &Key, flow: &Flow, budget: usize) -> AppProto {
    let Some(client) = flow.client else {
        return AppProto::Unknown;
    };
    let tcp = key.tcp;
    let server_port = if key.a == client { key.b.1 } else { key.a.1 };
    let transport = if tcp { Transport::Tcp } else { Transport::Udp };
    let mut live: Vec<&dyn Detector> = dets
        .iter()
        .map(|d| d.as_ref())
        .filter(|d| d.transports().contains(&transport))
        .collect();
    let mut prefix: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut prev: [&[u8]; 2] = [&[], &[]];
    let mut dir_count = [0u32; 2];
    for (i, (dir, data, _)) in flow.payloads.iter().enumerate().take(budget) {
        let di = usize::from(*dir == Direction::ToClient);
        let pre: &[u8] = if tcp {
            let room = PREFIX.saturating_sub(prefix[di].len());
            prefix[di].extend_from_slice(&data[..data.len().min(room)]);
            &prefix[di]
        } else {
            data
        };
        let ctx = ProbeCtx {
            transport,
            client_port: client.1,
            server_port,
            dir: *dir,
            payload_index: i as u32,
            dir_index: dir_count[di],
            prefix: pre,
            data,
            prev: if tcp {
                &[]
            } else {
                &prev[di][..prev[di].len().min(flowbundle_protocols::registry::PREV_CAP)]
            },
            peer: if tcp {
                &prefix[1 - di]
            } else {
                &prev[1 - di][..prev[1 - di]
                    .len()
                    .min(flowbundle_protocols::registry::PREV_CAP)]
            },
        };
        dir_count[di] += 1;
        let mut k = 0;
        while k < live.len() {
            match live[k].probe(&ctx) {
                Probe::Certain => return live[k].proto(),
                Probe::NotForUs => {
                    live.remove(k);
                }
                Probe::Unsure => k += 1,
            }
        }
        if live.is_empty() {
            break;
        }
        if !tcp {
            prev[di] = data;
        }
    }
    AppProto::Unknown
}

struct Row {
    pcap: String,
    tcp: bool,
    src: (IpAddr, u16),
    dst: (IpAddr, u16),
    master: String,
    /// The application part of `MASTER.APP` (empty when nDPI gave one name).
    app: String,
    confidence: String,
    /// The dispute over nDPI's label (`ndpi::DISPUTES`), if there is one.
    dispute: Option<&'static flowbundle_testsupport::ndpi::Dispute>,
}

/// Covered protocols with at least this many flows must agree on 80% of them.
const FLOOR_FROM_FLOWS: u32 = 5;

fn read_rows(path: &Path) -> Vec<Row> {
    flowbundle_testsupport::ndpi::ground_truth(path)
        .into_iter()
        .filter(|f| matches!(f.l4.as_str(), "TCP" | "UDP"))
        .map(|f| Row {
            tcp: f.l4 == "TCP",
            src: (f.src, f.sport),
            dst: (f.dst, f.dport),
            master: f.master().to_string(),
            app: f.app().to_string(),
            confidence: f.confidence.clone(),
            dispute: f.dispute(),
            pcap: f.pcap,
        })
        .collect()
}

#[test]
fn agreement_with_ndpi() {
    let Some(dir) = flowbundle_testsupport::data("ndpi") else {
        return;
    };
    let rows = read_rows(&dir.join("groundtruth.csv"));
    assert!(
        !rows.is_empty(),
        "{}/groundtruth.csv has no rows",
        dir.display()
    );
    let all = std::env::var_os("GT_EXTRA_ALL").is_some();
    let verbose = std::env::var_os("GT_EXTRA_VERBOSE").is_some();
    let dets = if all {
        flowbundle_protocols::registry::builtin_detectors()
    } else {
        extra_detectors()
    };
    // Protocols this set answers for. DTLS is protocols-a's; ours only claims DTLS that follows ICE (STUN), so it
    // is scored with the whole registry (GT_EXTRA_ALL=1).
    let covered: Vec<&'static str> = dets
        .iter()
        .map(|d| d.proto().name())
        .filter(|n| all || *n != "DTLS")
        .collect();

    let mut by_pcap: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.confidence == "DPI") {
        by_pcap.entry(r.pcap.as_str()).or_default().push(r);
    }
    // protocol -> (flows, agreed, not found)
    let mut stats: BTreeMap<String, (u32, u32, u32)> = BTreeMap::new();
    let mut false_pos: BTreeMap<(String, String), u32> = BTreeMap::new();
    let mut other_flows = 0u32;
    for (pcap, rows) in &by_pcap {
        let flows = read_flows(&dir.join("pcap").join(pcap), MAX_PAYLOADS);
        for r in rows.iter() {
            // nDPI stacks some protocols on a carrier (`NetBIOS.SMBv1`): naming either part agrees.
            let ours = covered.contains(&r.master.as_str());
            let key = Key::new(r.tcp, r.src, r.dst);
            let Some(flow) = flows.get(&key) else {
                if ours {
                    stats.entry(r.master.clone()).or_default().2 += 1;
                }
                continue;
            };
            let got = classify(&dets, &key, flow, 24);
            if r.dispute.is_some_and(|d| d.actual == got.name()) {
                continue;
            }
            if ours {
                let s = stats.entry(r.master.clone()).or_default();
                s.0 += 1;
                if got.name() == r.master || (!r.app.is_empty() && got.name() == r.app) {
                    s.1 += 1;
                } else if verbose {
                    eprintln!(
                        "MISS {pcap} {:?} {:?}->{:?} ndpi={} ours={}",
                        r.tcp, r.src, r.dst, r.master, got
                    );
                }
            } else {
                other_flows += 1;
                if got != AppProto::Unknown && got.name() != r.master {
                    *false_pos
                        .entry((got.name().to_string(), r.master.clone()))
                        .or_default() += 1;
                    if verbose {
                        eprintln!(
                            "FP {pcap} {:?}->{:?} ndpi={} ours={}",
                            r.src, r.dst, r.master, got
                        );
                    }
                }
            }
        }
    }
    let (mut tot, mut ok) = (0, 0);
    println!(
        "{:<28} {:>6} {:>6} {:>7} {:>9}",
        "protocol", "flows", "agree", "pct", "not found"
    );
    for (p, (n, a, nf)) in &stats {
        tot += n;
        ok += a;
        let pct = if *n > 0 {
            100.0 * f64::from(*a) / f64::from(*n)
        } else {
            0.0
        };
        println!("{p:<28} {n:>6} {a:>6} {pct:>6.1}% {nf:>9}");
    }
    let fp: u32 = false_pos.values().sum();
    println!(
        "overall {ok}/{tot} = {:.1}%",
        100.0 * f64::from(ok) / f64::from(tot.max(1))
    );
    println!("false positives on {other_flows} other DPI flows: {fp}");
    for ((ours, truth), n) in &false_pos {
        println!("  claimed {ours} on {truth}: {n}");
    }
    let low: Vec<String> = stats
        .iter()
        .filter(|(_, (n, a, _))| *n >= FLOOR_FROM_FLOWS && f64::from(*a) < 0.8 * f64::from(*n))
        .map(|(p, (n, a, _))| format!("{p} {a}/{n}"))
        .collect();
    if !all {
        assert!(
            low.is_empty(),
            "protocols below 80% agreement with nDPI: {low:?}"
        );
        assert!(
            f64::from(fp) <= 0.01 * f64::from(other_flows),
            "too many false positives: {fp}"
        );
    }
}

/// Runs a whole flow through the registry's `FlowApp` (classification, then the winning parser with the replayed
/// prefix), returning the verdict's protocol and the events.
fn run_flow_app(key: &Key, flow: &Flow) -> (AppProto, Vec<flowbundle_protocols::AppEvent>) {
    let reg = flowbundle_protocols::Registry::builtin();
    let client = flow.client.unwrap_or(key.a);
    let server_port = if key.a == client { key.b.1 } else { key.a.1 };
    let transport = if key.tcp {
        Transport::Tcp
    } else {
        Transport::Udp
    };
    let mut app = flowbundle_protocols::FlowApp::new(&reg, transport, client.1, server_port);
    let mut out = Vec::new();
    for (i, (dir, data, _)) in flow.payloads.iter().enumerate() {
        app.on_payload(&reg, *dir, data, i as u64, &mut out);
    }
    let proto = match app.finish(&mut out) {
        flowbundle_protocols::Verdict::Matched(flowbundle_protocols::Identified {
            proto, ..
        }) => proto,
        _ => AppProto::Unknown,
    };
    (proto, out)
}

fn capture_flows(name: &str) -> Option<HashMap<Key, Flow>> {
    let path = flowbundle_testsupport::data(&format!("ndpi/pcap/{name}"))?;
    Some(read_flows(&path, MAX_PAYLOADS_PARSE))
}

/// ftp.pcap: the control connection's `227` reply announces the data connection that nDPI labels `FTP_DATA`
/// (192.168.1.212:50695 -> 90.130.70.73:25685); the event must predict exactly that endpoint.
#[test]
fn ftp_pasv_predicts_the_data_connection() {
    let Some(flows) = capture_flows("ftp.pcap") else {
        return;
    };
    let (key, flow) = flows
        .iter()
        .find(|(k, _)| k.tcp && (k.a.1 == 21 || k.b.1 == 21))
        .expect("control flow");
    let (proto, events) = run_flow_app(key, flow);
    assert_eq!(proto, AppProto::Ftp);
    let client = flow.client.expect("client");
    let server = if key.a == client { key.b } else { key.a };
    let expected: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            flowbundle_protocols::AppEvent::Ftp(f) => {
                f.announced.map(|a| a.data_endpoint(client.0, server.0))
            }
            _ => None,
        })
        .collect();
    assert!(!expected.is_empty(), "no data connection announced");
    let data_server: (IpAddr, u16) = ("90.130.70.73".parse().unwrap(), 25685);
    assert!(
        expected
            .iter()
            .any(|(from, to)| *from == client.0 && *to == data_server),
        "{expected:?}"
    );
    // And that connection exists in the capture.
    assert!(
        flows
            .keys()
            .any(|k| k.a == data_server || k.b == data_server)
    );
}

/// ssh.pcap: the SSH event carries both banners' software.
#[test]
fn ssh_event_from_capture() {
    let Some(flows) = capture_flows("ssh.pcap") else {
        return;
    };
    let (key, flow) = flows
        .iter()
        .find(|(k, _)| k.a.1 == 22 || k.b.1 == 22)
        .expect("ssh flow");
    let (proto, events) = run_flow_app(key, flow);
    assert_eq!(proto, AppProto::Ssh);
    let ssh: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            flowbundle_protocols::AppEvent::Ssh(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(ssh.len(), 1);
    assert_eq!(
        ssh[0].server.as_ref().map(|s| s.software_version.as_str()),
        Some("OpenSSH_5.3")
    );
    assert_eq!(
        ssh[0].client.as_ref().map(|s| s.software_version.as_str()),
        Some("OpenSSH_5.6")
    );
}

/// What the extra detectors add to the classifier's cost: every flow of the nDPI captures is classified
/// (up to the classifier's payload budget) with the full registry and with the registry minus the extra
/// detectors, and the time per probed payload is printed for both. A measurement, not a check (no timed
/// assertions): run with `cargo test -p flowbundle-protocols --release --test ground_truth_extra -- --ignored
/// --nocapture classifier_cost`.
#[test]
#[ignore]
fn classifier_cost() {
    use flowbundle_protocols::{ClassifierConfig, Limits, Registry};
    let Some(dir) = flowbundle_testsupport::data("ndpi/pcap") else {
        return;
    };
    let entries = std::fs::read_dir(&dir).expect("reading ndpi/pcap");
    let mut flows: Vec<(Key, Flow)> = Vec::new();
    for e in entries.flatten() {
        flows.extend(read_flows(&e.path(), 24));
    }
    let core: Vec<Box<dyn flowbundle_protocols::Detector>> =
        flowbundle_protocols::registry::builtin_detectors_by_module()
            .into_iter()
            .filter(|(m, _)| CORE_MODULES.contains(m))
            .map(|(_, d)| d)
            .collect();
    for (name, dets) in [
        ("core (protocols-a)", core),
        (
            "full registry",
            flowbundle_protocols::registry::builtin_detectors(),
        ),
    ] {
        let reg = Registry::new(dets, ClassifierConfig::default(), Limits::default());
        let mut best = f64::MAX;
        let mut payloads = 0u64;
        let mut unknown = 0u64;
        for _ in 0..5 {
            payloads = 0;
            unknown = 0;
            let t = std::time::Instant::now();
            for (key, flow) in &flows {
                let client = flow.client.unwrap_or(key.a);
                let sport = if key.a == client { key.b.1 } else { key.a.1 };
                let tr = if key.tcp {
                    Transport::Tcp
                } else {
                    Transport::Udp
                };
                let mut c = flowbundle_protocols::Classifier::new(&reg, tr, client.1, sport);
                for (d, data, _) in &flow.payloads {
                    let v = c.feed(&reg, *d, data);
                    payloads += 1;
                    if v != flowbundle_protocols::Verdict::Pending {
                        break;
                    }
                }
                if !matches!(
                    c.give_up(),
                    flowbundle_protocols::Verdict::Matched(flowbundle_protocols::Identified { .. })
                ) {
                    unknown += 1;
                }
            }
            best = best.min(t.elapsed().as_nanos() as f64);
        }
        println!(
            "{name:<20} {} detectors: {} flows, {payloads} payloads probed, {unknown} unknown, {:.0} ns/payload (best of 5)",
            reg.detectors().len(),
            flows.len(),
            best / payloads as f64
        );
    }
}
