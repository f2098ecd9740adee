//! Test helper shared by the capture-driven tests: a capture's flows (`flowbundle_testcapture::flows`, the one
//! capture-to-flows helper) run through a fresh [`FlowApp`].
#![allow(dead_code)]

use flowbundle_protocols::{EventSink, FlowApp, Registry, Transport, Verdict};
pub use flowbundle_testcapture::{Flow, Key, flows as read_flows};

/// What the tests do with a flow of the capture.
pub trait RunFlow {
    /// (transport, client port, server port) of this flow under `key`.
    fn endpoints(&self, key: &Key) -> Option<(Transport, u16, u16)>;
    /// Runs the flow through a fresh [`FlowApp`]: every payload in order, then `finish`.
    fn run(&self, reg: &Registry, key: &Key, sink: &mut dyn EventSink) -> Verdict;
}

impl RunFlow for Flow {
    fn endpoints(&self, key: &Key) -> Option<(Transport, u16, u16)> {
        let client = self.client?;
        Some((
            if key.tcp {
                Transport::Tcp
            } else {
                Transport::Udp
            },
            client.1,
            key.server_of(client).1,
        ))
    }

    fn run(&self, reg: &Registry, key: &Key, sink: &mut dyn EventSink) -> Verdict {
        let Some((t, cp, sp)) = self.endpoints(key) else {
            return Verdict::NoMatch;
        };
        let mut app = FlowApp::new(reg, t, cp, sp);
        for (i, (dir, data, gap)) in self.payloads.iter().enumerate() {
            if *gap > 0 {
                app.on_gap(*dir, *gap);
            }
            app.on_payload(reg, *dir, data, i as u64, sink);
        }
        app.finish(sink)
    }
}
