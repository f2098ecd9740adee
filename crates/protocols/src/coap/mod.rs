//! CoAP (RFC 7252) over UDP: nDPI's `COAP`.
//!
//! A 4-byte header: version 1, type, token length 0..=8, a code whose class is 0 (request/empty), 2, 4 or 5
//! with a detail below 32, and a message id. Four bytes are weak, so like nDPI the detector also requires the
//! CoAP ports (5683, 5684) on one side.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Whether `d` has a valid CoAP header.
pub fn coap_header(d: &[u8]) -> bool {
    let (Some(&b0), Some(&code)) = (d.first(), d.get(1)) else {
        return false;
    };
    let (ver, tkl) = (b0 >> 6, usize::from(b0 & 0x0f));
    let (class, detail) = (code >> 5, code & 0x1f);
    let code_ok = match class {
        0 => detail <= 8,
        2 => detail <= 31,
        4 | 5 => detail <= 31,
        _ => false,
    };
    ver == 1 && tkl <= 8 && code_ok && d.len() >= 4 + tkl
}

/// Detector for CoAP.
pub struct CoapDetector;

impl Detector for CoapDetector {
    fn proto(&self) -> AppProto {
        AppProto::Coap
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let port = ctx.either_port_is(5683) || ctx.either_port_is(5684);
        if port && coap_header(ctx.data) {
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
    fn confirmable_get() {
        // CON GET, token length 2, message id 0x1234, Uri-Path "temp".
        let d = [
            0x42, 0x01, 0x12, 0x34, 0xaa, 0xbb, 0xb4, b't', b'e', b'm', b'p',
        ];
        assert_eq!(
            CoapDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &d,
                40000,
                5683
            )),
            Probe::Certain
        );
        assert_eq!(
            CoapDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &d,
                40000,
                5000
            )),
            Probe::NotForUs
        );
        let bad = [0x82, 0x01, 0x12, 0x34];
        assert_eq!(
            CoapDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &bad,
                40000,
                5683
            )),
            Probe::NotForUs
        );
    }
}
