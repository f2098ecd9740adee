//! HP's virtual-group service on TCP 5223: nDPI's `HP_VIRTGRP`.
//!
//! Its messages are framed by a type byte and a 16-bit length of the whole message; a session opens with a
//! client message of type `0x16` that fills its segment exactly. Port 5223 is required, as in nDPI (the same port
//! carries XMPP, see `jabber.rs`, whose binary variant opens with type `0x25`).

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for HP_VIRTGRP.
pub struct HpVirtgrpDetector;

impl Detector for HpVirtgrpDetector {
    fn proto(&self) -> AppProto {
        AppProto::HpVirtgrp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        let ok = ctx.either_port_is(5223)
            && ctx.payload_index == 0
            && p.first() == Some(&0x16)
            && be16(p, 1).is_some_and(|l| usize::from(l) == ctx.data.len() && l >= 16);
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::Transport;

    #[allow(non_upper_case_globals)]
    const Det: HpVirtgrpDetector = HpVirtgrpDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut d = vec![0x16, 0x00, 0x84];
        d.extend_from_slice(&[0xaa; 129]);
        let c = crate::testkit::ctx_ports(Transport::Tcp, Direction::ToServer, &d, 46570, 5223);
        assert_eq!(Det.probe(&c), Probe::Certain);
        let c = crate::testkit::ctx_ports(Transport::Tcp, Direction::ToServer, &d, 46570, 443);
        assert_eq!(Det.probe(&c), Probe::NotForUs);
    }
}
