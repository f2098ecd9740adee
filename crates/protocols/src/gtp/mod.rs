//! GTP, the GPRS tunnelling protocol of mobile core networks (3GPP TS 29.281 GTP-U, TS 29.060 GTPv1-C,
//! TS 29.274 GTPv2-C): nDPI's `GTP`.
//!
//! * GTPv1 (user plane on UDP 2152, control on 2123): a flags byte with version 1, protocol type 1 and a zero spare
//!   bit; a message type; a length counting every byte after the first eight; the tunnel endpoint id. When any of
//!   the E, S or PN flags is set, four more header bytes follow (sequence number, N-PDU number, next extension
//!   header type), all inside the length.
//! * GTPv2-C (2123): version 2, the piggyback and TEID flags and three zero spare bits; a message type; a length
//!   counting every byte after the first four; the TEID when flagged; a sequence number and a spare byte.
//!
//! A header whose version, spare bits and message type are valid and whose length is exactly the datagram's is
//! certain on GTP's ports (either end), as in nDPI; elsewhere the tunnel carries nothing to check the header against.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// GTP's ports: user plane, control plane.
const PORTS: [u16; 2] = [2152, 2123];

/// Whether `d` is one GTP message, its length exactly the datagram's.
fn message(d: &[u8]) -> bool {
    let (Some(&flags), Some(&ty), Some(len)) = (d.first(), d.get(1), be16(d, 2)) else {
        return false;
    };
    let len = usize::from(len);
    match flags >> 5 {
        1 => {
            // Protocol type GTP, spare bit zero; a message type in use (0 is not).
            let optional = flags & 0x07 != 0;
            flags & 0x18 == 0x10 && ty != 0 && d.len() == 8 + len && (!optional || len >= 4)
        }
        2 => {
            let teid = flags & 0x08 != 0;
            let header = if teid { 12 } else { 8 };
            flags & 0x07 == 0 && ty != 0 && d.len() == 4 + len && d.len() >= header
        }
        _ => false,
    }
}

/// Detector for GTP.
pub struct GtpDetector;

impl Detector for GtpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Gtp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::ranges(&[
            (0x30, 0x37),
            (0x40, 0x40),
            (0x48, 0x48),
            (0x50, 0x50),
            (0x58, 0x58),
        ])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if PORTS.iter().any(|&p| ctx.either_port_is(p)) && message(ctx.data) {
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

    fn probe(d: &[u8], server_port: u16) -> Probe {
        GtpDetector.probe(&ctx_ports(
            Transport::Udp,
            Direction::ToServer,
            d,
            40000,
            server_port,
        ))
    }

    #[test]
    fn gtpv1_user_plane_and_v2_control() {
        // G-PDU (255) on TEID 0x01020304 carrying a 20-byte IPv4 header.
        let mut gpdu = vec![0x30, 0xff, 0x00, 20, 1, 2, 3, 4];
        gpdu.extend_from_slice(&[0x45; 20]);
        assert_eq!(probe(&gpdu, 2152), Probe::Certain);
        // Echo request with a sequence number (S flag): four optional bytes inside the length.
        let echo = [0x32, 0x01, 0x00, 0x04, 0, 0, 0, 0, 0x12, 0x34, 0, 0];
        assert_eq!(probe(&echo, 2123), Probe::Certain);
        // GTPv2-C Echo Request: no TEID, sequence number, spare, a Recovery IE.
        let v2 = [
            0x40, 0x01, 0x00, 0x09, 0x00, 0x00, 0x01, 0x00, 0x03, 0x00, 0x01, 0x00, 0x07,
        ];
        assert_eq!(probe(&v2, 2123), Probe::Certain);
        // Off its ports; a length one short; version 0; a set spare bit; message type 0.
        assert_eq!(probe(&gpdu, 5000), Probe::NotForUs);
        assert_eq!(probe(&gpdu[..gpdu.len() - 1], 2152), Probe::NotForUs);
        let mut v0 = gpdu.clone();
        v0[0] = 0x10;
        assert_eq!(probe(&v0, 2152), Probe::NotForUs);
        let mut spare = gpdu.clone();
        spare[0] = 0x38;
        assert_eq!(probe(&spare, 2152), Probe::NotForUs);
        let mut zero = gpdu;
        zero[1] = 0;
        assert_eq!(probe(&zero, 2152), Probe::NotForUs);
    }
}
