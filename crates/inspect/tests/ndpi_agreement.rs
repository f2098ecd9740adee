//! Protocol identification against nDPI, flow by flow (the engine's acceptance test; `scripts/ndpi-compare` runs it).
//!
//! Every capture named in `shared/data/ndpi/groundtruth.csv` goes through the engine's single-threaded path (the
//! same code as `flowbundle inspect`). Each ground-truth flow nDPI classified from payload (confidence `DPI`) is
//! matched to the engine's flow record of the same canonical 5-tuple (the first one, when timeouts split it), and
//! the master protocol compared (`HTTP` for nDPI's `HTTP.Google`).
//!
//! Every DPI flow counts, whether or not the engine has a detector for its protocol. A flow ends in one of three
//! ways: **agree** (the engine names nDPI's protocol), **unknown** (the engine names nothing, or has no flow with
//! that 5-tuple), or **wrong** (the engine confidently names another protocol: worse than unknown). The table
//! prints each protocol's counts and what the engine said instead (`NDPI_VERBOSE=1` lists every disagreeing flow).
//!
//! Where nDPI stacks two names, the engine agrees when it names either: `NetBIOS.SMBv23` is SMB in a NetBIOS
//! session, which the engine calls `SMBv23`; a service nDPI gives as one name (`ApplePush`) agrees with the
//! engine's application of that flow.
//!
//! **Application level**: over the DPI flows where nDPI names an application (`TLS.Google`, `DNS.NetFlix`), the
//! engine agrees when its flow record's application (named from the SNI, HTTP host or DNS question by
//! `flowbundle_protocols::application`) is nDPI's, and is counted apart when it names another.
//!
//! **Held out**: a fifth of the captures (`flowbundle_testsupport::ndpi::held_out`) is reported apart and left out of
//! the flow listings (`NDPI_SHOW_HELDOUT=1` lists them too): detectors are written without looking at them, so their
//! figure is the nearest thing to traffic the project has not seen.
//!
//! **Disputed labels** (`flowbundle_testsupport::ndpi::DISPUTES`): where the capture's bytes and a source outside
//! the project both contradict nDPI's label, a flow the engine names as the dispute says is **set aside**: neither
//! agreement nor confident error. A disputed flow the engine leaves unknown or names otherwise counts as usual. The
//! table shows each protocol's set-aside flows, and the summary gives the confident errors both ways: set aside, and
//! raw (every flow where the engine names another protocol than nDPI, disputes or not).
//!
//! The figures are pinned ([`AGREE_AT_LEAST`], [`WRONG_AT_MOST`], [`WRONG_RAW_AT_MOST`], [`APP_AGREE_AT_LEAST`]):
//! fewer agreeing flows or more wrong ones fails, as does a protocol the engine can name with at least
//! [`FLOOR_FROM_FLOWS`] flows (not counting the set-aside ones) falling below 80%. Raise the pins when the engine gets
//! better.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use flowbundle_decode::FlowKey;
use flowbundle_inspect::{
    AppLabel, ApplicationEvidence, Engine, EngineConfig, EventKind, Evidence,
};
use flowbundle_protocols::{AppEvent, AppProto};

/// Fewest DPI flows on which the engine must name nDPI's master protocol.
const AGREE_AT_LEAST: u64 = 3_745;
/// Most DPI flows the engine may name as a protocol other than nDPI's, disputed flows set aside.
const WRONG_AT_MOST: u64 = 1;
/// Most DPI flows the engine may name as a protocol other than nDPI's, counted raw (disputed flows included).
const WRONG_RAW_AT_MOST: u64 = 9;

/// Protocols with at least this many flows (not counting the set-aside ones) must agree on 80% of them.
const FLOOR_FROM_FLOWS: u64 = 5;
/// Fewest DPI flows with an nDPI application (`MASTER.APP`) on which the engine names the same application.
const APP_AGREE_AT_LEAST: u64 = 906;

struct Row {
    pcap: String,
    key: FlowKey,
    master: String,
    /// nDPI's application (after the dot), empty when it gave one name.
    app: String,
    /// The dispute over nDPI's label, if there is one.
    dispute: Option<&'static flowbundle_testsupport::ndpi::Dispute>,
    /// The capture is in the held-out fifth (`flowbundle_testsupport::ndpi::held_out`).
    held_out: bool,
}

/// What the engine said about one flow.
struct Said {
    label: AppLabel,
    evidence: Option<Evidence>,
    application: Option<&'static str>,
    application_evidence: Option<ApplicationEvidence>,
    /// The first host name the flow's events carried (for the verbose listing).
    host: Option<String>,
}

impl Said {
    /// Whether the engine names nDPI's master protocol. nDPI stacks names: for `NetBIOS.SMBv23` (SMB in NetBIOS
    /// sessions) the engine's `SMBv23` names the inner protocol; for a service nDPI gives as a single name
    /// (`ApplePush`, TLS to Apple's push servers) the engine names it as the application of its TLS flow. An
    /// application named only from the server's address owner never counts here: an address is no evidence of a
    /// protocol.
    fn names(&self, r: &Row) -> bool {
        let name = self.label.name();
        name == r.master
            || (!r.app.is_empty() && name == r.app)
            || (self.application == Some(&*r.master)
                && self.application_evidence != Some(ApplicationEvidence::IpOwner))
    }
}

/// Every name the engine can give a flow.
fn supported() -> Vec<String> {
    let mut v: Vec<String> = AppProto::ALL
        .iter()
        .filter(|p| **p != AppProto::Unknown)
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
        (113, false),
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
    /// The engine named another protocol.
    wrong: u64,
    /// The engine named nothing, or had no flow with the 5-tuple.
    unknown: u64,
    missing: u64,
    /// Disputed flows the engine names as the dispute says: set aside.
    disputed: u64,
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
                app: f.app().to_string(),
                dispute: f.dispute(),
                held_out: flowbundle_testsupport::ndpi::held_out(&f.pcap),
                pcap: f.pcap,
            })
        })
        .collect();
    let mut by_pcap: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_pcap.entry(&r.pcap).or_default().push(r);
    }
    let supported = supported();
    let verbose_all = std::env::var_os("NDPI_VERBOSE").is_some();
    // The held-out captures stay out of the flow listings unless asked for: detectors are written without them.
    let show_held_out = std::env::var_os("NDPI_SHOW_HELDOUT").is_some();
    // [development, held out]: (flows, agree, wrong, app flows, app agree, captures).
    let mut split = [[0u64; 6]; 2];
    let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
    // Application level: flows where nDPI named an application; `got` keys what the engine missed.
    let mut apps = Tally::default();
    // Agreeing applications by what named them.
    let mut app_by_evidence: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut packets = 0u64;
    for (pcap, rows) in &by_pcap {
        let path: PathBuf = dir.join("pcap").join(pcap);
        if !path.exists() {
            continue;
        }
        let held_out = flowbundle_testsupport::ndpi::held_out(pcap);
        let verbose = verbose_all && (show_held_out || !held_out);
        split[usize::from(held_out)][5] += 1;
        let mut engine = Engine::new(EngineConfig::default(), None, None);
        let fin = common::run_serial(&mut engine, &[path]);
        packets += fin.stats.packets;
        let mut hosts: HashMap<FlowKey, String> = HashMap::new();
        for e in &fin.events {
            if let EventKind::App(a) = &e.kind {
                let h = match &a.event {
                    AppEvent::Tls(t) => t.sni.clone(),
                    AppEvent::Quic(q) => q.sni.clone(),
                    AppEvent::Http(h) => h.hostname.clone(),
                    AppEvent::Dns(d) => d.rrname.clone(),
                    _ => None,
                };
                if let Some(h) = h {
                    hosts.entry(e.key).or_insert(h);
                }
            }
        }
        let mut labels: HashMap<FlowKey, Said> = HashMap::new();
        for e in &fin.events {
            if let EventKind::Flow(r) = &e.kind {
                let said = || Said {
                    label: r.app.clone(),
                    evidence: r.evidence,
                    application: r.application,
                    application_evidence: r.application_evidence,
                    host: hosts.get(&e.key).cloned(),
                };
                // The ground truth names flows by their 5-tuple (no ICMP types, no tunnel depth).
                let key = e.key.five_tuple();
                labels.entry(key).or_insert_with(said);
                // nDPI keys SCTP flows by addresses only (ports 0): also file them that way.
                if key.proto == 132 {
                    let k = FlowKey {
                        lo_port: 0,
                        hi_port: 0,
                        ..key
                    };
                    labels.entry(k).or_insert_with(said);
                }
            }
        }
        for r in rows {
            let row = &mut split[usize::from(r.held_out)];
            row[0] += 1;
            let t = tally.entry(r.master.clone()).or_default();
            t.flows += 1;
            let said = labels.get(&r.key);
            if !r.app.is_empty() {
                apps.flows += 1;
                let named =
                    said.is_some_and(|s| s.application == Some(&*r.app) || s.label.name() == r.app);
                row[3] += 1;
                if named {
                    row[4] += 1;
                }
                if named {
                    let ev = said
                        .and_then(|s| s.application_evidence)
                        .map_or("label", ApplicationEvidence::name);
                    *app_by_evidence.entry(ev).or_default() += 1;
                }
                match said.and_then(|s| s.application) {
                    _ if named => apps.agree += 1,
                    Some(other) => {
                        apps.wrong += 1;
                        *apps.got.entry(format!("{} as {other}", r.app)).or_default() += 1;
                    }
                    None => {
                        apps.unknown += 1;
                        *apps.got.entry(r.app.clone()).or_default() += 1;
                    }
                }
                if verbose && !named {
                    eprintln!(
                        "{pcap}: {} nDPI app {}.{} engine app {:?} ({:?}) host {:?}",
                        r.key,
                        r.master,
                        r.app,
                        said.and_then(|s| s.application),
                        said.and_then(|s| s.application_evidence),
                        said.and_then(|s| s.host.as_deref())
                    );
                }
            }
            match said {
                Some(s) if s.names(r) => {
                    t.agree += 1;
                    row[1] += 1;
                }
                Some(s) if r.dispute.is_some_and(|d| d.actual == s.label.name()) => {
                    t.disputed += 1;
                    *t.got.entry(s.label.name().to_string()).or_default() += 1;
                    if verbose {
                        eprintln!(
                            "{pcap}: {} nDPI {} engine {} (set aside: label disputed)",
                            r.key,
                            r.master,
                            s.label.name()
                        );
                    }
                }
                Some(Said {
                    label: AppLabel::Unknown,
                    ..
                }) => {
                    t.unknown += 1;
                    *t.got.entry("Unknown".into()).or_default() += 1;
                    if verbose {
                        eprintln!("{pcap}: {} nDPI {} engine Unknown", r.key, r.master);
                    }
                }
                Some(s) => {
                    row[2] += 1;
                    t.wrong += 1;
                    *t.got.entry(s.label.name().to_string()).or_default() += 1;
                    if verbose {
                        eprintln!(
                            "{pcap}: {} nDPI {} engine {} (wrong, evidence {:?}, application {:?})",
                            r.key,
                            r.master,
                            s.label.name(),
                            s.evidence,
                            s.application
                        );
                    }
                }
                None => {
                    t.unknown += 1;
                    t.missing += 1;
                    if verbose {
                        eprintln!("{pcap}: {} nDPI {} engine: no flow", r.key, r.master);
                    }
                }
            }
        }
    }
    let sum = |f: fn(&Tally) -> u64| tally.values().map(f).sum::<u64>();
    let (flows, agree, wrong) = (sum(|t| t.flows), sum(|t| t.agree), sum(|t| t.wrong));
    let disputed = sum(|t| t.disputed);
    let wrong_raw = wrong + disputed;
    let pct = |a: u64, n: u64| 100.0 * a as f64 / n.max(1) as f64;
    println!(
        "Protocol identification vs nDPI ({} captures, {packets} packets inspected, every DPI flow)",
        by_pcap.len()
    );
    println!(
        "{:<26} {:>6} {:>6} {:>6} {:>8}  engine said instead",
        "protocol (nDPI)", "flows", "agree", "wrong", "percent"
    );
    let mut below: Vec<String> = Vec::new();
    let (mut sup_flows, mut sup_agree, mut unsup_protos) = (0u64, 0u64, 0usize);
    let mut by_flows: Vec<(&String, &Tally)> = tally.iter().collect();
    by_flows.sort_by(|a, b| b.1.flows.cmp(&a.1.flows).then(a.0.cmp(b.0)));
    for (name, t) in by_flows {
        let p = pct(t.agree, t.flows);
        let named = supported.contains(name);
        if named {
            sup_flows += t.flows;
            sup_agree += t.agree;
            let undisputed = t.flows - t.disputed;
            if undisputed >= FLOOR_FROM_FLOWS && pct(t.agree, undisputed) < 80.0 {
                below.push(format!(
                    "{name} {:.1}% of {undisputed}",
                    pct(t.agree, undisputed)
                ));
            }
        } else {
            unsup_protos += 1;
        }
        let mut other: Vec<String> = t.got.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if t.missing > 0 {
            other.push(format!("(no flow) {}", t.missing));
        }
        if !named {
            other.push("(no detector)".into());
        }
        if t.disputed > 0 {
            let kept = t.flows - t.disputed;
            other.push(format!(
                "(label disputed, set aside) {}: {} of {kept} ({:.1}%) without them",
                t.disputed,
                t.agree,
                pct(t.agree, kept)
            ));
        }
        println!(
            "{name:<26} {:>6} {:>6} {:>6} {p:>7.1}%  {}",
            t.flows,
            t.agree,
            t.wrong,
            other.join(", ")
        );
    }
    let overall = pct(agree, flows);
    println!(
        "{:<26} {flows:>6} {agree:>6} {wrong:>6} {overall:>7.1}%",
        "OVERALL (every DPI flow)"
    );
    println!(
        "confidently wrong: {wrong} of {flows} flows ({:.2}%) with {disputed} disputed flows set aside; counted raw \
         against nDPI's labels: {wrong_raw} ({:.2}%); unknown: {}",
        pct(wrong, flows),
        pct(wrong_raw, flows),
        flows - agree - wrong - disputed
    );
    println!(
        "over the protocols the engine can name: {sup_agree} of {sup_flows} ({:.1}%); \
         {} flows of {unsup_protos} protocols have no detector",
        pct(sup_agree, sup_flows),
        flows - sup_flows
    );
    println!(
        "protocols the engine can name with {FLOOR_FROM_FLOWS} flows or more below 80%: {}",
        if below.is_empty() {
            "none".into()
        } else {
            below.join(", ")
        }
    );
    println!(
        "application level (nDPI's MASTER.APP): {} of {} flows name nDPI's application ({:.1}%), {} name another, \
         {} none",
        apps.agree,
        apps.flows,
        pct(apps.agree, apps.flows),
        apps.wrong,
        apps.unknown
    );
    println!(
        "  agreeing applications by evidence: {}",
        app_by_evidence
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (name, [f, a, w, af, aa, n]) in [("development", split[0]), ("held out", split[1])] {
        println!(
            "{name} ({n} captures): {a} of {f} agree ({:.1}%), {w} confidently wrong ({:.2}%); application level \
             {aa} of {af} ({:.1}%)",
            pct(a, f),
            pct(w, f),
            pct(aa, af)
        );
    }
    let mut missed: Vec<(&String, &u64)> = apps.got.iter().collect();
    missed.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let missed: Vec<String> = missed
        .iter()
        .take(25)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!("  most missed applications: {}", missed.join(", "));
    assert!(flows > 1000, "ground truth mostly present");
    assert!(
        apps.agree >= APP_AGREE_AT_LEAST,
        "{} flows name nDPI's application, fewer than the {APP_AGREE_AT_LEAST} pinned",
        apps.agree
    );
    assert!(
        agree >= AGREE_AT_LEAST,
        "{agree} flows agree, fewer than the {AGREE_AT_LEAST} pinned"
    );
    assert!(
        wrong <= WRONG_AT_MOST,
        "{wrong} flows confidently wrong, more than the {WRONG_AT_MOST} pinned"
    );
    assert!(
        wrong_raw <= WRONG_RAW_AT_MOST,
        "{wrong_raw} flows confidently wrong counted raw, more than the {WRONG_RAW_AT_MOST} pinned"
    );
    assert!(below.is_empty(), "protocols below 80%: {below:?}");
}
