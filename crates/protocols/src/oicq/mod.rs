//! OICQ, the Tencent QQ instant-messaging protocol over UDP: nDPI's `OICQ`.
//!
//! Packets start with the tag `0x02`, then a 16-bit client version, a 16-bit command and a sequence number, and
//! end with the tag `0x03`. Both tags plus the QQ ports (8000 on the server, 4000 on clients) decide.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for OICQ.
pub struct OicqDetector;

impl Detector for OicqDetector {
    fn proto(&self) -> AppProto {
        AppProto::Oicq
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let ok = d.len() >= 12
            && d.first() == Some(&0x02)
            && d.last() == Some(&0x03)
            && be16(d, 3).is_some_and(|cmd| cmd != 0 && cmd < 0x1000)
            && (ctx.either_port_is(8000) || ctx.either_port_is(4000));
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::Transport;

    #[allow(non_upper_case_globals)]
    const Det: OicqDetector = OicqDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut d = vec![
            0x02, 0x3b, 0x0b, 0x00, 0x01, 0x00, 0x17, 0x56, 0x1f, 0x0c, 0x7b,
        ];
        d.extend_from_slice(&[0x33; 32]);
        d.push(0x03);
        let c = crate::testkit::ctx_ports(Transport::Udp, Direction::ToServer, &d, 4000, 8000);
        assert_eq!(Det.probe(&c), Probe::Certain);
        let c =
            crate::testkit::ctx_ports(Transport::Udp, Direction::ToServer, &d[..20], 4000, 8000);
        assert_eq!(Det.probe(&c), Probe::NotForUs);
    }
}
