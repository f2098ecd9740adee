//! RMCP, the transport of IPMI-over-LAN and ASF (UDP 623): nDPI's `RMCP`.
//!
//! A 4-byte header: version `0x06`, reserved `0x00`, a sequence number, and the message class (6 ASF, 7 IPMI,
//! with bit 7 for acknowledgements). On port 623 that header is certain.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for RMCP.
pub struct RmcpDetector;

impl Detector for RmcpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Rmcp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let ok = ctx.either_port_is(623)
            && d.len() >= 8
            && d[0] == 0x06
            && d[1] == 0x00
            && matches!(d[3] & 0x7f, 6..=8);
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::Transport;

    #[allow(non_upper_case_globals)]
    const Det: RmcpDetector = RmcpDetector;

    #[test]
    fn recognises_real_shapes() {
        let d = [
            0x06, 0x00, 0xff, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09,
            0x20,
        ];
        let c = crate::testkit::ctx_ports(Transport::Udp, Direction::ToServer, &d, 40000, 623);
        assert_eq!(Det.probe(&c), Probe::Certain);
        let c = crate::testkit::ctx_ports(Transport::Udp, Direction::ToServer, &d, 40000, 624);
        assert_eq!(Det.probe(&c), Probe::NotForUs);
    }
}
