//! Ubiquiti device discovery (UDP 10001): nDPI's `UBNTAC2`.
//!
//! A 4-byte header (version 1 or 2, command, 16-bit length of the rest) followed by TLVs (type, 16-bit length,
//! value) that must fill the datagram exactly. Only on port 10001, as nDPI.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for UBNTAC2.
pub struct Ubntac2Detector;

impl Detector for Ubntac2Detector {
    fn proto(&self) -> AppProto {
        AppProto::Ubntac2
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if !ctx.either_port_is(10001)
            || !matches!(d.first(), Some(1 | 2))
            || be16(d, 2).is_none_or(|l| usize::from(l) + 4 != d.len())
        {
            return Probe::NotForUs;
        }
        let mut i = 4;
        while i < d.len() {
            let Some(l) = be16(d, i + 1) else {
                return Probe::NotForUs;
            };
            i += 3 + usize::from(l);
        }
        if i == d.len() {
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

    #[allow(non_upper_case_globals)]
    const Det: Ubntac2Detector = Ubntac2Detector;

    #[test]
    fn recognises_real_shapes() {
        let d = [
            0x02, 0x06, 0x00, 0x0a, 0x02, 0x00, 0x07, 0x80, 0x2a, 0xa8, 0x8d, 0x69, 0x2b, 0xc0,
        ];
        let c = crate::testkit::ctx_ports(Transport::Udp, Direction::ToClient, &d, 10001, 50000);
        assert_eq!(Det.probe(&c), Probe::Certain);
        let c =
            crate::testkit::ctx_ports(Transport::Udp, Direction::ToClient, &d[..13], 10001, 50000);
        assert_eq!(Det.probe(&c), Probe::NotForUs);
    }
}
