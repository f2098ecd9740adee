//! The engine on real captures, single-threaded: flows, labels, events, counters.

mod common;

use common::{engine, run_serial};
use flowbundle_inspect::{AppLabel, EventKind, FlowState, TcpState};
use flowbundle_protocols::{AppEvent, AppProto};

#[test]
fn one_http_stream() {
    let Some(p) = flowbundle_testsupport::data("reassembly/one_http_stream_fin.pcap") else {
        return;
    };
    let mut e = engine();
    let f = run_serial(&mut e, &[p]);
    for ev in &f.events {
        eprintln!("{} {:?}", ev.kind.event_type(), ev.kind);
    }
    let flows: Vec<_> = f
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Flow(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(flows.len(), 1);
    let r = flows[0];
    assert_eq!(r.app, AppLabel::Proto(AppProto::Http));
    assert_eq!(r.state, FlowState::Closed);
    assert_eq!(r.tcp.unwrap().state, TcpState::Closed);
    assert!(
        f.events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::App(a) if matches!(a.event, AppEvent::Http(_))))
    );
    assert_eq!(e.table().len(), 0);
}

/// The application beside the master protocol and what named it, on real captures: a TLS certificate where the
/// client sent no SNI (Waze's `*.waze.com`), the owner of a STUN relay's address (Meta's, for a WhatsApp call), a
/// service's documented port on its operator's addresses (Apple's push service), and
/// no address owner for a flow whose host name names no listed service (HTTP to an AWS address with the host
/// `setting.rayjump.com`: another tenant of the cloud, not Amazon).
#[test]
fn applications_by_evidence() {
    use flowbundle_inspect::ApplicationEvidence;
    use std::net::IpAddr;

    let flows = |name: &str| {
        let p = flowbundle_testsupport::data(&format!("ndpi/pcap/{name}"))?;
        let mut e = engine();
        let f = run_serial(&mut e, &[p]);
        Some(
            f.events
                .iter()
                .filter_map(|ev| match &ev.kind {
                    EventKind::Flow(r) => {
                        let (a, b, _, _) = ev.key.endpoints(flowbundle_decode::KeySide::Forward);
                        Some(([a, b], (**r).clone()))
                    }
                    _ => None,
                })
                .collect::<Vec<_>>(),
        )
    };
    let to = |s: &str| -> IpAddr { s.parse().unwrap() };

    let Some(waze) = flows("waze.pcap") else {
        return;
    };
    let cert: Vec<_> = waze
        .iter()
        .filter(|(ips, _)| ips.contains(&to("176.34.103.105")))
        .collect();
    assert!(!cert.is_empty());
    for (_, r) in &cert {
        assert_eq!(r.app, AppLabel::Proto(AppProto::Tls));
        assert_eq!(
            (r.application, r.application_evidence),
            (Some("Waze"), Some(ApplicationEvidence::Certificate))
        );
    }

    let Some(call) = flows("stun_wa_call.pcapng") else {
        return;
    };
    let relay: Vec<_> = call
        .iter()
        .filter(|(ips, r)| {
            ips.contains(&to("157.240.195.48")) && r.app == AppLabel::Proto(AppProto::Stun)
        })
        .collect();
    assert!(!relay.is_empty());
    for (_, r) in &relay {
        assert_eq!(
            (r.application, r.application_evidence),
            (Some("WhatsAppCall"), Some(ApplicationEvidence::IpOwner))
        );
    }

    // TLS to Apple's push port on Apple's block, its handshake before the capture: `ApplePush` from the port its
    // operator documents, not from the address alone.
    let Some(voice) = flows("wa_voice.pcap") else {
        return;
    };
    let push: Vec<_> = voice
        .iter()
        .filter(|(ips, _)| ips.contains(&to("17.242.60.84")))
        .collect();
    assert!(!push.is_empty());
    for (_, r) in &push {
        assert_eq!(r.app, AppLabel::Proto(AppProto::Tls));
        assert_eq!(
            (r.application, r.application_evidence),
            (Some("ApplePush"), Some(ApplicationEvidence::Port))
        );
    }

    let Some(kxun) = flows("1kxun.pcap") else {
        return;
    };
    let tenant: Vec<_> = kxun
        .iter()
        .filter(|(ips, r)| {
            ips.contains(&to("18.64.103.30")) && r.app == AppLabel::Proto(AppProto::Http)
        })
        .collect();
    assert!(!tenant.is_empty());
    for (_, r) in &tenant {
        assert_eq!((r.application, r.application_evidence), (None, None));
    }
}

/// CoAP off its ports (`coap_mqtt.pcap`: confirmable PUTs to UDP 17500, each acknowledged with the same message id
/// and token) is named from the request and its answer and flagged as a known protocol on a non-standard port; on
/// 5683 one message suffices (the IPv6 flows that go one way only).
#[test]
fn coap_off_its_ports_needs_an_answer() {
    use flowbundle_protocols::risk::FlowRisk;

    let Some(p) = flowbundle_testsupport::data("ndpi/pcap/coap_mqtt.pcap") else {
        return;
    };
    let mut e = engine();
    let f = run_serial(&mut e, &[p]);
    let udp: Vec<_> = f
        .events
        .iter()
        .filter_map(|ev| match &ev.kind {
            EventKind::Flow(r) if ev.key.proto == 17 => Some((ev.key, r)),
            _ => None,
        })
        .collect();
    let on = |port: u16| {
        udp.iter()
            .filter(move |(k, _)| k.lo_port == port || k.hi_port == port)
            .map(|(_, r)| r)
    };
    assert_eq!(on(17500).count(), 4);
    for r in on(17500) {
        assert_eq!(r.app, AppLabel::Proto(AppProto::Coap));
        assert!(r.risks.contains(FlowRisk::KnownProtocolOnNonStandardPort));
    }
    assert_eq!(on(5683).count(), 8);
    for r in on(5683) {
        assert_eq!(r.app, AppLabel::Proto(AppProto::Coap));
        assert!(!r.risks.contains(FlowRisk::KnownProtocolOnNonStandardPort));
    }
}
