//! NAT-PMP (RFC 6886) on UDP 5351: nDPI's `NAT-PMP`.
//!
//! Requests are version 0 with opcode 0 (external address, 2 bytes) or 1/2 (map UDP/TCP, 12 bytes); responses
//! set the top bit of the opcode and have fixed sizes (12 or 16 bytes). The sizes and the port decide.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Whether `d` is a NAT-PMP request or response.
pub fn is_natpmp(d: &[u8]) -> bool {
    if d.first() != Some(&0) {
        return false;
    }
    matches!(
        (d.get(1), d.len()),
        (Some(0), 2) | (Some(1 | 2), 12) | (Some(128), 12) | (Some(129 | 130), 16)
    )
}

/// Detector for NAT-PMP.
pub struct NatPmpDetector;

impl Detector for NatPmpDetector {
    fn proto(&self) -> AppProto {
        AppProto::NatPmp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.either_port_is(5351) && is_natpmp(ctx.data) {
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
    fn external_address() {
        let q = [0u8, 0];
        assert_eq!(
            NatPmpDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &q,
                40000,
                5351
            )),
            Probe::Certain
        );
        assert_eq!(
            NatPmpDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &q,
                40000,
                53
            )),
            Probe::NotForUs
        );
        let r = [0u8, 128, 0, 0, 0, 0, 0x10, 0, 192, 168, 1, 1];
        assert_eq!(
            NatPmpDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToClient,
                &r,
                40000,
                5351
            )),
            Probe::Certain
        );
    }
}
