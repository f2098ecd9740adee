//! Modbus/TCP (the Modbus application protocol over TCP port 502): nDPI's `Modbus`.
//!
//! Every message starts with the 7-byte MBAP header: transaction id, protocol id 0, the length of what follows
//! (unit id + PDU), the unit id; then the function code (1..=127 for requests and normal answers, +0x80 for
//! exceptions). The header is only eight bytes of structure, so the registered port is part of the test: on
//! port 502, a header with protocol id 0, a length that fits the segment and a defined function code is certain.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `Modbus`.
pub struct ModbusDetector;

impl Detector for ModbusDetector {
    fn proto(&self) -> AppProto {
        AppProto::Modbus
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if !ctx.either_port_is(502) {
            return Probe::NotForUs;
        }
        let (Some(proto), Some(len), Some(&func)) = (be16(d, 2), be16(d, 4), d.get(7)) else {
            return Probe::Unsure;
        };
        let func_ok = matches!(func & 0x7f, 1..=8 | 11 | 12 | 15..=17 | 20..=24 | 43);
        if proto == 0 && (2..=254).contains(&len) && usize::from(len) + 6 <= d.len() && func_ok {
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
    use crate::testkit::{ctx_ports, ctx_tcp};

    fn probe_tcp(d: &[u8]) -> Probe {
        ModbusDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        let read = [0x00, 0xd1, 0, 0, 0, 6, 1, 3, 0, 1, 0, 1];
        assert_eq!(
            ModbusDetector.probe(&ctx_ports(
                Transport::Tcp,
                Direction::ToServer,
                &read,
                2074,
                502
            )),
            Probe::Certain
        );
        assert_eq!(probe_tcp(&read), Probe::NotForUs);
        let mut bad = read;
        bad[3] = 1;
        assert_eq!(
            ModbusDetector.probe(&ctx_ports(
                Transport::Tcp,
                Direction::ToServer,
                &bad,
                2074,
                502
            )),
            Probe::NotForUs
        );
    }
}
