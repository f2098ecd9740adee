//! Service Location Protocol v1 (RFC 2165) and v2 (RFC 2608): nDPI's `Service_Location_Protocol`.
//!
//! SLP has no magic, but its header states the message length, which must equal the datagram's (or the TCP
//! segment's) length, and a function id in the version's range. nDPI decides on exactly these three checks; so
//! does this detector, plus a sane language-tag length for v2 (which rejects most of what slips through).

use crate::scan::{be16, be24};
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Whether `d` is one whole SLP message.
pub fn is_slp(d: &[u8]) -> bool {
    match d.first() {
        Some(1) => {
            // v1: version, function (1..=10), 16-bit length, flags, dialect, language (2), encoding (2), xid.
            d.len() >= 12
                && be16(d, 2).is_some_and(|l| usize::from(l) == d.len())
                && d.get(1).is_some_and(|f| (1..=10).contains(f))
                // Reserved flag bits and dialect are zero; the language is two ASCII letters ("en").
                && d[4] & 0x07 == 0
                && d[5] == 0
                && d[6..8].iter().all(u8::is_ascii_alphabetic)
        }
        Some(2) => {
            // v2: version, function (1..=11), 24-bit length, flags (2), next extension offset (3), xid (2),
            // language tag length (2) and tag.
            d.len() >= 16
                && be24(d, 2).is_some_and(|l| l as usize == d.len())
                && d.get(1).is_some_and(|f| (1..=11).contains(f))
                && be16(d, 12)
                    .is_some_and(|l| (1..=64).contains(&l) && 14 + usize::from(l) <= d.len())
        }
        _ => false,
    }
}

/// Detector for SLP.
pub struct SlpDetector;

impl Detector for SlpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Slp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if is_slp(ctx.data) {
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
    fn v2_service_request() {
        // srvloc.pcap: SrvRqst, length 0x31, language "en", service type "service:directory-agent".
        let mut d = vec![
            0x02, 0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02,
        ];
        d.extend_from_slice(b"en");
        d.extend_from_slice(&[0x00, 0x00, 0x00, 0x17]);
        d.extend_from_slice(b"service:directory-agent");
        d.extend_from_slice(&[0x00, 0x00, 0x00, 0x00]);
        d[4] = d.len() as u8;
        assert!(is_slp(&d));
        assert_eq!(
            SlpDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        d.push(0);
        assert_eq!(
            SlpDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::NotForUs
        );
    }
}
