//! CORBA's General Inter-ORB Protocol (GIOP over TCP, and MIOP, its multicast packet form, over UDP): nDPI's
//! `Corba`.
//!
//! A GIOP message starts with the magic `GIOP`, the protocol version 1.0 to 1.3, a flags byte and a message type
//! (0 Request .. 7 Fragment); a MIOP packet starts with `MIOP` and version 1.0. Either is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for nDPI's `Corba`.
pub struct GiopDetector;

impl Detector for GiopDetector {
    fn proto(&self) -> AppProto {
        AppProto::Corba
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"GM")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let (Some(magic), Some(&major), Some(&minor)) = (d.get(..4), d.get(4), d.get(5)) else {
            return if ctx.transport == Transport::Tcp
                && (b"GIOP".starts_with(d) || b"MIOP".starts_with(d))
            {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let giop = magic == b"GIOP" && major == 1 && minor <= 3 && d.get(7).is_none_or(|&t| t <= 7);
        let miop = magic == b"MIOP" && major == 1 && minor == 0;
        if giop || miop {
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
    use crate::testkit::{ctx_tcp, ctx_udp};

    fn probe_tcp(d: &[u8]) -> Probe {
        GiopDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    fn probe_udp(d: &[u8]) -> Probe {
        GiopDetector.probe(&ctx_udp(Direction::ToServer, d, &[]))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(
            probe_tcp(b"GIOP\x01\x02\x00\x00\x00\x00\x00\x10"),
            Probe::Certain
        );
        assert_eq!(probe_udp(b"MIOP\x10\x03\xe4\x00"), Probe::NotForUs);
        assert_eq!(probe_udp(b"MIOP\x01\x00\x00\x00"), Probe::Certain);
        assert_eq!(probe_tcp(b"GIOP\x02\x00\x00\x00"), Probe::NotForUs);
        assert_eq!(probe_tcp(b"GI"), Probe::Unsure);
    }
}
