//! HART-IP, the HART field-device protocol over IP (HART Communication Foundation spec 85): nDPI's `HART-IP`.
//!
//! Every message has an eight-byte header: version (1 or 2), message type (0 request, 1 response, 2 publish,
//! 3 error, 15 NAK), message id (0 session initiate, 1 session close, 2 keep-alive, 3 token-passing PDU, 4 direct
//! PDU, 5 read audit log), a status byte, a 16-bit sequence number and a 16-bit byte count of the whole message,
//! header included. A header whose byte count matches the datagram (UDP) or fits the stream start (TCP) is certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// The header's length.
const HEADER: usize = 8;

/// Detector for HART-IP.
pub struct HartIpDetector;

/// Whether `d` opens with a HART-IP header whose byte count is `exact` (UDP) or at most `d`'s length (TCP).
fn header(d: &[u8], exact: bool) -> Probe {
    if d.len() < HEADER {
        return if d.first().is_some_and(|v| matches!(v, 1 | 2)) {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    }
    let fields = matches!(d[0], 1 | 2) && matches!(d[1], 0..=3 | 15) && d[2] <= 5;
    let count = usize::from(be16(d, 6).unwrap_or(0));
    if !fields || count < HEADER {
        return Probe::NotForUs;
    }
    match (exact, count.cmp(&d.len())) {
        (true, std::cmp::Ordering::Equal)
        | (false, std::cmp::Ordering::Less | std::cmp::Ordering::Equal) => Probe::Certain,
        (false, std::cmp::Ordering::Greater) if count <= 4096 => Probe::Unsure,
        _ => Probe::NotForUs,
    }
}

impl Detector for HartIpDetector {
    fn proto(&self) -> AppProto {
        AppProto::HartIp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[1, 2])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.transport {
            Transport::Tcp => header(ctx.prefix, false),
            _ => header(ctx.data, true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    /// A session-initiate request: master type 1, inactivity timeout 30 s.
    const INITIATE: [u8; 13] = [1, 0, 0, 0, 0, 2, 0, 13, 1, 0, 0, 0x75, 0x30];

    #[test]
    fn header_and_byte_count() {
        let udp = |d: &[u8]| HartIpDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        let tcp = |d: &[u8]| HartIpDetector.probe(&ctx_tcp(Direction::ToServer, d));
        assert_eq!(udp(&INITIATE), Probe::Certain);
        assert_eq!(tcp(&INITIATE), Probe::Certain);
        assert_eq!(tcp(&INITIATE[..5]), Probe::Unsure);
        assert_eq!(
            tcp(&INITIATE[..10]),
            Probe::Unsure,
            "the message is not complete yet"
        );
        assert_eq!(
            udp(&INITIATE[..12]),
            Probe::NotForUs,
            "byte count disagrees"
        );
        let mut bad = INITIATE;
        bad[2] = 9;
        assert_eq!(udp(&bad), Probe::NotForUs, "unknown message id");
    }
}
