//! The engine (`flowbundle_inspect`, no signatures, no rules) labels every generated connection with the protocol it
//! was generated as, end to end: decoding, flow tracking, TCP reassembly and identification, exactly as
//! `flowbundle inspect` runs on a capture. (`synth.rs` checks the payloads with the protocols crate alone.)

use std::collections::HashMap;

use flowbundle_decode::{DecodeOptions, FlowKey, decode_bytes};
use flowbundle_ingest::{LinkType, PacketRecord};
use flowbundle_inspect::{Engine, EngineConfig, EventKind, Prestage};
use flowbundle_trace::synth::{GeneratedApp, SynthConfig, generate};

#[test]
fn the_engine_labels_every_generated_connection_as_generated() {
    let cfg = SynthConfig {
        dominant_share: 0.05,
        ipv6_share: 0.3,
        ..SynthConfig::default().with_packets(40_000)
    };
    let mut engine = Engine::new(EngineConfig::default(), None, None);
    let mut pre = Prestage::new(engine.config());
    let mut ctx = engine.new_ctx();
    // The generated application of every 5-tuple; a 5-tuple the generator reused for two connections of
    // different applications would make the comparison ambiguous, so it must not happen.
    let mut apps: HashMap<FlowKey, GeneratedApp> = HashMap::new();
    let opts = DecodeOptions::default();
    let mut packets = 0u64;
    for (num, p) in generate(&cfg).unwrap().enumerate() {
        let d = decode_bytes(LinkType::ETHERNET, &p.data, &opts);
        let (key, _) = FlowKey::from_decoded(&d).expect("generated packets are TCP or UDP over IP");
        let prev = apps.insert(key, p.app);
        assert!(
            prev.is_none_or(|a| a == p.app),
            "5-tuple {key:?} generated as {prev:?} and {:?}",
            p.app
        );
        let rec = PacketRecord {
            ts_ns: p.ts_ns,
            orig_len: p.data.len() as u32,
            interface: 0,
            link_type: LinkType::ETHERNET,
            data: &p.data,
        };
        engine.process_serial(&mut ctx, &mut pre, num as u64, &rec);
        packets += 1;
    }
    let done = engine.finish([ctx]);
    assert_eq!(done.stats.packets, packets, "every packet inspected");
    assert_eq!(done.stats.untracked_packets, 0);

    let mut per_app: HashMap<GeneratedApp, (u64, u64)> = HashMap::new();
    let mut wrong = Vec::new();
    let mut seen = 0usize;
    for e in &done.events {
        let EventKind::Flow(rec) = &e.kind else {
            continue;
        };
        seen += 1;
        let app = *apps
            .get(&e.key)
            .unwrap_or_else(|| panic!("the engine made a flow {:?} nobody generated", e.key));
        let want = app.ndpi_name().unwrap_or("Unknown");
        let got = rec.app.name();
        let entry = per_app.entry(app).or_default();
        entry.0 += 1;
        if got == want {
            entry.1 += 1;
        } else {
            wrong.push(format!(
                "{:?} generated as {app:?}, labelled {got} ({:?})",
                e.key, rec.evidence
            ));
        }
    }
    let mut table: Vec<_> = per_app.into_iter().collect();
    table.sort();
    for (app, (n, ok)) in &table {
        eprintln!("{app:?}: {ok}/{n} engine flows labelled as generated");
    }
    assert_eq!(
        seen,
        apps.len(),
        "one flow record per generated connection (no timeout split a connection)"
    );
    assert_eq!(
        table.len(),
        GeneratedApp::ALL.len(),
        "every application appears"
    );
    assert!(
        wrong.is_empty(),
        "{} mislabelled: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(20)]
    );
}
