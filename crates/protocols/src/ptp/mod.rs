//! The Precision Time Protocol, version 2 (IEEE 1588-2008; UDP 319 event and 320 general messages): nDPI's
//! `PTPv2`.
//!
//! Every message starts with a 34-byte header: transport-specific nibble and message type (0..3 event messages
//! Sync, Delay_Req, Pdelay_Req, Pdelay_Resp; 8..0xD general messages Follow_Up, Delay_Resp, Pdelay_Resp_Follow_Up,
//! Announce, Signaling, Management), reserved nibble and version 2, the message length, domain number, ... Over
//! UDP (Annex D/E) event messages go to port 319 and general messages to 320; a datagram on one of those ports, of
//! version 2, with a defined type and a message length that fits the datagram (senders may pad it), is certain.
//! The port is part of the test: the header alone is too short to tell PTP from other small binary protocols.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

const HEADER: usize = 34;

/// Detector for PTPv2.
pub struct PtpDetector;

impl Detector for PtpDetector {
    fn proto(&self) -> AppProto {
        AppProto::PtpV2
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let (Some(&t), Some(&v), Some(len)) = (d.first(), d.get(1), be16(d, 2)) else {
            return Probe::NotForUs;
        };
        let type_ok = matches!(t & 0x0f, 0..=3 | 8..=0xd);
        let port_ok = [319, 320].iter().any(|&p| ctx.either_port_is(p));
        let len = usize::from(len);
        if port_ok && type_ok && v & 0x0f == 2 && (HEADER..=d.len()).contains(&len) {
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
    fn an_announce_message() {
        let mut m = vec![0x0b, 0x02, 0, 64];
        m.resize(64, 0);
        let probe = |d: &[u8]| {
            PtpDetector.probe(&ctx_ports(Transport::Udp, Direction::ToServer, d, 320, 320))
        };
        assert_eq!(probe(&m), Probe::Certain);
        m[1] = 0x01; // PTPv1
        assert_eq!(probe(&m), Probe::NotForUs);
        m[1] = 0x02;
        m[0] = 0x05; // undefined type
        assert_eq!(probe(&m), Probe::NotForUs);
        m[0] = 0x0b;
        assert_eq!(probe(&m[..60]), Probe::NotForUs);
        m.extend_from_slice(&[0, 0]); // padding after the message
        assert_eq!(probe(&m), Probe::Certain);
        assert_eq!(
            PtpDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &m,
                29200,
                1812
            )),
            Probe::NotForUs
        );
    }
}
