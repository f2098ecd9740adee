//! OpenFlow, the SDN switch control protocol (TCP 6653, formerly 6633): nDPI's `OpenFlow`.
//!
//! Every message starts with an 8-byte header: version (`0x01` 1.0 .. `0x06` 1.5), type, 16-bit length and
//! transaction id. Both ends open with `OFPT_HELLO` (type 0). That header is the shape of a TPKT header too (ISO
//! transport over TCP: `03 00` and a length, as RDP and S7 start), so the IANA ports are part of the test: on 6653
//! or 6633, a first message that is a HELLO of a known version whose length is the segment's is certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `OpenFlow`.
pub struct OpenFlowDetector;

impl Detector for OpenFlowDetector {
    fn proto(&self) -> AppProto {
        AppProto::OpenFlow
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::ranges(&[(1, 6)])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if !ctx.either_port_is(6653) && !ctx.either_port_is(6633) {
            return Probe::NotForUs;
        }
        if d.len() < 8 {
            return if d.first().is_none_or(|v| (1..=6).contains(v))
                && d.get(1).is_none_or(|&t| t == 0)
            {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        let hello = (1..=6).contains(&d[0]) && d[1] == 0;
        if hello && be16(d, 2).is_some_and(|l| usize::from(l) == d.len() && l >= 8) {
            Probe::Certain
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::Transport;
    use crate::testkit::ctx_ports;

    #[test]
    fn recognises_the_specified_shapes() {
        let hello = [0x06, 0, 0, 16, 0, 0, 0, 1, 0, 1, 0, 8, 0, 0, 0, 0x40];
        let probe = |d: &[u8], port: u16| {
            OpenFlowDetector.probe(&ctx_ports(
                Transport::Tcp,
                Direction::ToServer,
                d,
                49234,
                port,
            ))
        };
        assert_eq!(probe(&hello, 6653), Probe::Certain);
        assert_eq!(probe(&hello[..4], 6653), Probe::Unsure);
        assert_eq!(probe(&hello[..12], 6653), Probe::NotForUs);
        // An RDP connection request in TPKT: the same shape, another port.
        let tpkt = [
            0x03, 0, 0, 0x13, 0x0e, 0xe0, 0, 0, 0, 0, 0, 0x01, 0, 0x08, 0, 0x03, 0, 0, 0,
        ];
        assert_eq!(probe(&tpkt, 3389), Probe::NotForUs);
    }
}
