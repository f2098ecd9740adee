//! Ethernet Global Data, GE's producer/consumer PLC data exchange: nDPI's `EthernetGlobalData`.
//!
//! A producer sends each exchange as a UDP datagram to port 18246 with a 32-byte header: PDU type 13, version 1,
//! a request id, the producer id, the exchange id, a timestamp, a status and a configuration signature, then the
//! data. The two fixed bytes, the header's length and the well-known port together are certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// EGD's well-known port.
const PORT: u16 = 18246;

/// Detector for EGD.
pub struct EgdDetector;

impl Detector for EgdDetector {
    fn proto(&self) -> AppProto {
        AppProto::Egd
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x0d])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if d.len() >= 32 && d.starts_with(&[0x0d, 0x01]) && ctx.either_port_is(PORT) {
            Probe::Certain
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_ports;
    use crate::{Direction, Transport};

    #[test]
    fn header_on_its_port() {
        let mut d = vec![0x0d, 0x01, 0xd4, 0xf0, 192, 168, 8, 77, 0x7b, 0, 0, 0];
        d.extend_from_slice(&[0; 36]);
        let on = |d: &[u8], port| {
            EgdDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                d,
                PORT,
                port,
            ))
        };
        assert_eq!(on(&d, PORT), Probe::Certain);
        assert_eq!(
            on(&d[..20], PORT),
            Probe::NotForUs,
            "shorter than the header"
        );
        let off = EgdDetector.probe(&ctx_ports(
            Transport::Udp,
            Direction::ToServer,
            &d,
            40000,
            9999,
        ));
        assert_eq!(off, Probe::NotForUs);
    }
}
