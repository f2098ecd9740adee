//! The Binary Floor Control Protocol (RFC 8855, formerly RFC 4582): nDPI's `BFCP`.
//!
//! Every message opens with a 12-byte common header: a 3-bit version (1 over TCP, 1 or 2 over UDP), the
//! responder and fragmentation flags and three reserved bits (zero), a primitive (1..=17: FloorRequest,
//! FloorRelease, ... GoodbyeAck), the payload length in 4-octet units, then the conference ID (32 bits), the
//! transaction ID and the user ID (16 bits each). The answer to a request repeats its conference, transaction
//! and user IDs (RFC 8855 §8). One header waits; an answer repeating the other side's three IDs is certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// The common header's size.
const HEADER: usize = 12;

/// Detector for BFCP.
pub struct BfcpDetector;

/// Whether `d` starts with a BFCP common header: version 1 or 2, reserved bits clear, a known primitive, and a
/// payload no longer than a message could be.
fn header(d: &[u8]) -> bool {
    let (Some(&first), Some(&primitive)) = (d.first(), d.get(1)) else {
        return false;
    };
    matches!(first >> 5, 1 | 2)
        && first & 0x07 == 0
        && (1..=17).contains(&primitive)
        && d.len() >= HEADER
        && be16(d, 2).is_some_and(|words| usize::from(words) * 4 <= 0xffff)
}

/// The conference, transaction and user IDs of a header.
fn ids(d: &[u8]) -> Option<&[u8]> {
    d.get(4..HEADER)
}

impl Detector for BfcpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Bfcp
    }
    fn first_bytes(&self) -> ByteSet {
        // Version 1 or 2, either flag, reserved bits clear.
        ByteSet::bytes(&[0x20, 0x28, 0x30, 0x38, 0x40, 0x48, 0x50, 0x58])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if !header(d) {
            return Probe::NotForUs;
        }
        if ctx.peer.is_empty() {
            return Probe::Unsure;
        }
        if header(ctx.peer) && ids(ctx.peer) == ids(d) {
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

    fn message(primitive: u8, conference: u32, tx: u16, user: u16) -> Vec<u8> {
        let mut m = vec![0x20, primitive, 0, 1];
        m.extend_from_slice(&conference.to_be_bytes());
        m.extend_from_slice(&tx.to_be_bytes());
        m.extend_from_slice(&user.to_be_bytes());
        m.extend_from_slice(&[0x05, 0x04, 0x00, 0x01]);
        m
    }

    #[test]
    fn answer_repeats_the_ids() {
        let query = message(3, 1, 2, 0x0504);
        let status = message(4, 1, 2, 0x0504);
        let probe = |t, dir, d: &[u8], peer: &[u8]| {
            BfcpDetector.probe(&ProbeCtx {
                peer,
                ..ctx_ports(t, dir, d, 44450, 5070)
            })
        };
        for t in [Transport::Tcp, Transport::Udp] {
            assert_eq!(probe(t, Direction::ToServer, &query, &[]), Probe::Unsure);
            assert_eq!(
                probe(t, Direction::ToClient, &status, &query),
                Probe::Certain
            );
        }
        let other = message(4, 1, 3, 0x0504);
        assert_eq!(
            probe(Transport::Udp, Direction::ToClient, &other, &query),
            Probe::NotForUs,
            "another transaction"
        );
        let mut bad = query.clone();
        bad[1] = 18;
        assert_eq!(
            probe(Transport::Udp, Direction::ToServer, &bad, &[]),
            Probe::NotForUs
        );
        bad[1] = 3;
        bad[0] = 0x21;
        assert_eq!(
            probe(Transport::Udp, Direction::ToServer, &bad, &[]),
            Probe::NotForUs,
            "reserved bits set"
        );
    }
}
