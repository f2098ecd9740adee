//! RADIUS (RFC 2865/2866, with CoA RFC 5176): nDPI's `Radius`.
//!
//! A 20-byte header (code, identifier, 16-bit length, 16-byte authenticator) followed by attributes (type, a
//! length of at least 2, value). The code must be a RADIUS code, the length must equal the datagram's, and the attributes must
//! chain exactly to it: certain from one datagram. On the RADIUS ports the header checks suffice (damaged
//! attribute lists still count, as nDPI counts them).

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Whether `d` is one RADIUS packet.
pub fn is_radius(d: &[u8], strict: bool) -> bool {
    let (Some(&code), Some(len)) = (d.first(), be16(d, 2)) else {
        return false;
    };
    if !matches!(code, 1..=5 | 11..=13 | 40..=45)
        || usize::from(len) != d.len()
        || !(20..=4096).contains(&len)
    {
        return false;
    }
    if !strict {
        return true;
    }
    let mut i = 20;
    while i < d.len() {
        let Some(&l) = d.get(i + 1) else { return false };
        if l < 2 {
            return false;
        }
        i += usize::from(l);
    }
    i == d.len()
}

/// Detector for RADIUS.
pub struct RadiusDetector;

impl Detector for RadiusDetector {
    fn proto(&self) -> AppProto {
        AppProto::Radius
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        // On RADIUS's ports the header (code, exact length) is enough, as in nDPI; elsewhere the attributes must
        // chain exactly too.
        let ports = [1812, 1813, 1645, 1646, 3799]
            .iter()
            .any(|&p| ctx.either_port_is(p));
        if is_radius(ctx.data, !ports) {
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
    use crate::testkit::ctx_udp;

    #[test]
    fn access_request() {
        let mut d = vec![0x01, 0x2a, 0x00, 0x00];
        d.extend_from_slice(&[0x5a; 16]);
        d.extend_from_slice(&[0x01, 0x07, b's', b't', b'e', b'v', b'e']);
        d.extend_from_slice(&[0x04, 0x06, 192, 168, 0, 28]);
        d[3] = d.len() as u8;
        assert_eq!(
            RadiusDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        d[3] += 1;
        assert_eq!(
            RadiusDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::NotForUs
        );
    }
}
