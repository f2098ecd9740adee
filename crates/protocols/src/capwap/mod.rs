//! CAPWAP, the wireless access point control protocol (RFC 5415): nDPI's `CAPWAP`.
//!
//! Control messages travel on UDP 5246 and data on 5247. Each starts with a preamble byte (version 0 in the top
//! four bits, type 0 for a clear header or 1 for a DTLS-encrypted payload). A clear header gives its own length
//! in 32-bit words (five bits, at least 2), a wireless binding id (1 IEEE 802.11, 3 EPCGlobal) and flags; a
//! DTLS preamble is followed by three reserved bytes and a DTLS record (content type 20-25, version `fe fd`/`fe ff`).
//! On CAPWAP's ports a well-formed preamble and header are certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// CAPWAP's control and data ports.
const PORTS: [u16; 2] = [5246, 5247];

/// Detector for CAPWAP.
pub struct CapwapDetector;

/// Whether `d` opens with a CAPWAP header.
fn header(d: &[u8]) -> bool {
    match d.first() {
        Some(0) => {
            let (Some(&b1), Some(&b2)) = (d.get(1), d.get(2)) else {
                return false;
            };
            // HLEN: the top 5 bits of byte 1; WBID: bits 5-1 of byte 2, after the radio id.
            let hlen = usize::from((b1 >> 3) & 0x1f) * 4;
            let wbid = (b2 >> 1) & 0x1f;
            hlen >= 8 && hlen <= d.len() && matches!(wbid, 0 | 1 | 3)
        }
        Some(1) => {
            d.get(1..4) == Some(&[0, 0, 0][..])
                && d.get(4).is_some_and(|t| (20..=25).contains(t))
                && matches!(d.get(5..7), Some([0xfe, 0xfd | 0xff]))
        }
        _ => false,
    }
}

impl Detector for CapwapDetector {
    fn proto(&self) -> AppProto {
        AppProto::Capwap
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0, 1])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if PORTS.iter().any(|&p| ctx.either_port_is(p)) && header(ctx.data) {
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

    fn probe(d: &[u8], port: u16) -> Probe {
        CapwapDetector.probe(&ctx_ports(
            Transport::Udp,
            Direction::ToServer,
            d,
            12380,
            port,
        ))
    }

    #[test]
    fn preambles() {
        // A Discovery Request's clear header: HLEN 2 words, RID 0, WBID 1 (802.11).
        let mut discovery = vec![0x00, 0x10, 0x02, 0x00, 0, 0, 0, 0];
        discovery.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0x10, 0]);
        assert_eq!(probe(&discovery, 5246), Probe::Certain);
        assert_eq!(
            probe(&discovery, 9999),
            Probe::NotForUs,
            "off CAPWAP's ports"
        );
        let mut dtls = vec![0x01, 0, 0, 0, 22, 0xfe, 0xff, 0, 1];
        dtls.extend_from_slice(&[0; 20]);
        assert_eq!(probe(&dtls, 5246), Probe::Certain);
        dtls[5] = 0x03;
        assert_eq!(probe(&dtls, 5246), Probe::NotForUs);
        assert_eq!(
            probe(&[0x00, 0x08, 0x02, 0, 0, 0, 0, 0], 5246),
            Probe::NotForUs,
            "a header of one word"
        );
        assert_eq!(
            probe(&[0x00, 0xf8, 0x02, 0, 0, 0, 0, 0], 5246),
            Probe::NotForUs,
            "header longer than the datagram"
        );
    }
}
