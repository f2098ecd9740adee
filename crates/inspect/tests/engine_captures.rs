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
            .any(|e| matches!(&e.kind, EventKind::App(a) if matches!(**a, AppEvent::Http(_))))
    );
    assert_eq!(e.table().len(), 0);
}
