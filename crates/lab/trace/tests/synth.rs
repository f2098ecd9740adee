//! The generated profiles have the ANCS'10 Table 1 shapes (`trace stats` within ±15% of the targets), and the
//! generated conversations are what they claim to be.

use flowbundle_trace::stats::{StatsConfig, stats_trace};
use flowbundle_trace::synth::{SynthConfig, generate_trace};

fn within(what: &str, got: f64, want: f64) {
    let err = (got - want).abs() / want;
    assert!(
        err <= 0.15,
        "{what}: {got:.3} vs target {want:.3} ({:.1}% off)",
        err * 100.0
    );
}

#[test]
fn profiles_match_their_targets() {
    for (name, packets) in [
        ("dominant", 120_000),
        ("many", 200_000),
        ("balanced", 150_000),
    ] {
        let cfg = SynthConfig::profile(name).unwrap().with_packets(packets);
        let (trace, summary) = generate_trace(&cfg).unwrap();
        let s = stats_trace(&trace, &StatsConfig::default());
        let top = s.top_by_packets.first().map_or(0.0, |t| t.packet_share);
        eprintln!(
            "{name}: {} packets, {} connections (tcp {} udp {}), density {:?} (target {:?}), top share {top:.4}, \
             avg {:?} Mb/s, max {:?} Mb/s, concurrency {}, ufr {:?} window {:?}",
            s.packets,
            s.connections.tcp_udp,
            s.connections.tcp,
            s.connections.udp,
            s.connection_density.mean,
            cfg.density,
            s.avg_mbps,
            s.max_mbps,
            summary.concurrency,
            s.unique_flow_rate.rate,
            s.unique_flow_rate.avg_window,
        );
        assert_eq!(s.packets, summary.packets);
        assert_eq!(
            s.connections.tcp_udp, cfg.connections,
            "every planned connection is there"
        );
        within(
            &format!("{name} density"),
            s.connection_density.mean.unwrap(),
            cfg.density.unwrap(),
        );
        within(
            &format!("{name} average rate"),
            s.avg_mbps.unwrap(),
            cfg.rate.unwrap().mbps(),
        );
        // Not a Table 1 target the issue asks to test, but the peak control should be honoured as well.
        within(
            &format!("{name} maximum 1 ms rate"),
            s.max_mbps.unwrap(),
            cfg.peak.unwrap().mbps(),
        );
        match name {
            "dominant" => {
                assert!(top > 0.5, "dominant connection has {top}");
                within("dominant share", top, cfg.dominant_share);
            }
            "many" => assert!(top < 0.004, "largest connection of `many` has {top}"),
            _ => within("balanced largest share", top, 0.08),
        }
    }
}

mod classify {
    use std::collections::HashMap;

    use flowbundle_decode::{DecodeOptions, L4, decode_bytes};
    use flowbundle_ingest::LinkType;
    use flowbundle_protocols::{
        AppEvent, Direction, EventSink, FlowApp, HttpBuffer, Registry, Transport, Verdict,
    };
    use flowbundle_trace::synth::{GeneratedApp, SynthConfig, generate};

    #[derive(Default)]
    struct Sink {
        events: Vec<AppEvent>,
        bodies: Vec<Vec<u8>>,
    }

    impl EventSink for Sink {
        fn event(&mut self, e: AppEvent) {
            self.events.push(e);
        }
        fn http_buffer(
            &mut self,
            _tx: flowbundle_protocols::http::HttpTx<'_>,
            b: HttpBuffer,
            data: &[u8],
        ) {
            if b == HttpBuffer::ResponseBody {
                self.bodies.push(data.to_vec());
            }
        }
    }

    struct Flow {
        app: GeneratedApp,
        fa: FlowApp,
        sink: Sink,
    }

    /// Feeds every generated flow's payloads, in order and per direction, to the protocols crate's per-flow
    /// classifier and parsers (what the engine runs after TCP reassembly; the generator sends in order).
    #[test]
    fn the_classifier_names_every_flow_as_generated() {
        let reg = Registry::builtin();
        let cfg = SynthConfig {
            dominant_share: 0.05,
            ipv6_share: 0.3,
            ..SynthConfig::default().with_packets(60_000)
        };
        let mut flows: HashMap<u64, Flow> = HashMap::new();
        let opts = DecodeOptions::default();
        for p in generate(&cfg).unwrap() {
            let d = decode_bytes(LinkType::ETHERNET, &p.data, &opts);
            let (transport, ports) = match d.l4 {
                L4::Tcp(t) => (Transport::Tcp, (t.src_port, t.dst_port)),
                L4::Udp(u) => (Transport::Udp, (u.src_port, u.dst_port)),
                other => panic!("unexpected transport {other:?}"),
            };
            let (client_port, server_port) = if p.from_client {
                ports
            } else {
                (ports.1, ports.0)
            };
            let f = flows.entry(p.flow).or_insert_with(|| Flow {
                app: p.app,
                fa: FlowApp::new(&reg, transport, client_port, server_port),
                sink: Sink::default(),
            });
            assert_eq!(f.app, p.app);
            if !d.payload.is_empty() {
                let dir = if p.from_client {
                    Direction::ToServer
                } else {
                    Direction::ToClient
                };
                f.fa.on_payload(&reg, dir, d.payload, p.ts_ns, &mut f.sink);
            }
        }
        let mut per_app: HashMap<GeneratedApp, (u64, u64)> = HashMap::new();
        let mut wrong = Vec::new();
        for (id, f) in flows.iter_mut() {
            let v = f.fa.finish(&mut f.sink);
            let got = v.matched().map(|i| i.proto).map(|p| p.name());
            let want = f.app.ndpi_name();
            let e = per_app.entry(f.app).or_default();
            e.0 += 1;
            if got == want || (want.is_none() && v == Verdict::NoMatch) {
                e.1 += 1;
            } else {
                wrong.push(format!("flow {id} {:?}: classified {got:?}", f.app));
            }
            // What the parsers extracted.
            match f.app {
                GeneratedApp::Tls => assert!(
                    f.sink
                        .events
                        .iter()
                        .any(|e| matches!(e, AppEvent::Tls(t) if t.sni.is_some())),
                    "TLS flow {id} without SNI"
                ),
                GeneratedApp::Quic => assert!(
                    f.sink
                        .events
                        .iter()
                        .any(|e| matches!(e, AppEvent::Quic(q) if q.sni.is_some())),
                    "QUIC flow {id}: the ClientHello was not decrypted"
                ),
                GeneratedApp::Ssh => {
                    assert!(f.sink.events.iter().any(|e| matches!(e, AppEvent::Ssh(_))))
                }
                GeneratedApp::Dns => {
                    assert!(f.sink.events.iter().any(|e| matches!(e, AppEvent::Dns(_))))
                }
                GeneratedApp::Http => {
                    let tx = f.sink.events.iter().find_map(|e| match e {
                        AppEvent::Http(h) => Some(h.clone()),
                        _ => None,
                    });
                    let tx = tx.unwrap_or_else(|| panic!("HTTP flow {id} without a transaction"));
                    assert_eq!(tx.status, Some(200));
                    if tx.content_encoding.as_deref() == Some("gzip") {
                        let body = f.sink.bodies.first().expect("decompressed body");
                        assert!(
                            body.starts_with(b"<!DOCTYPE html>"),
                            "gzip body of flow {id} inflates to HTML"
                        );
                    }
                }
                _ => {}
            }
        }
        let mut apps: Vec<_> = per_app.into_iter().collect();
        apps.sort();
        for (app, (n, ok)) in &apps {
            eprintln!("{app:?}: {ok}/{n} flows classified as generated");
        }
        assert_eq!(
            apps.len(),
            GeneratedApp::ALL.len(),
            "every application appears"
        );
        assert!(
            wrong.is_empty(),
            "{} misclassified: {:?}",
            wrong.len(),
            &wrong[..wrong.len().min(20)]
        );
    }
}
