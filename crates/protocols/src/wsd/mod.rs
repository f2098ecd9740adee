//! WS-Discovery (SOAP over UDP multicast, port 3702): nDPI's `WSD`.
//!
//! A datagram is a SOAP envelope that uses the WS-Discovery namespace
//! (`schemas.xmlsoap.org/ws/2005/04/discovery` or the OASIS 2009 one). Port 3702 plus the namespace is certain.

use crate::scan::find;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for WSD.
pub struct WsdDetector;

impl Detector for WsdDetector {
    fn proto(&self) -> AppProto {
        AppProto::Wsd
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let ok = ctx.either_port_is(3702)
            && d.starts_with(b"<")
            && (find(d, b"/ws/2005/04/discovery").is_some()
                || find(d, b"docs.oasis-open.org/ws-dd/ns/discovery").is_some());
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::Transport;

    #[allow(non_upper_case_globals)]
    const Det: WsdDetector = WsdDetector;

    #[test]
    fn recognises_real_shapes() {
        let d = b"<?xml version=\"1.0\"?><soap:Envelope xmlns:wsd=\"http://schemas.xmlsoap.org/ws/2005/04/discovery\"></soap:Envelope>";
        let c = crate::testkit::ctx_ports(Transport::Udp, Direction::ToServer, d, 63957, 3702);
        assert_eq!(Det.probe(&c), Probe::Certain);
        let c = crate::testkit::ctx_ports(
            Transport::Udp,
            Direction::ToServer,
            b"<?xml version=\"1.0\"?><x/>",
            63957,
            3702,
        );
        assert_eq!(Det.probe(&c), Probe::NotForUs);
    }
}
