//! The Label Distribution Protocol of MPLS networks (RFC 5036; UDP and TCP 646): nDPI's `LDP`.
//!
//! Every LDP PDU starts with a 10-byte header: version 1, the PDU length (the bytes after the length field), and
//! the 6-byte LDP identifier; messages follow, each a 16-bit type (with the unknown-message bit), a 16-bit length
//! and a message id. A PDU of version 1 whose first message is a defined type (Notification, Hello,
//! Initialization, KeepAlive, Address, Address Withdraw, the label messages) and fits the PDU is certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for LDP.
pub struct LdpDetector;

/// The message types RFC 5036 defines (without the U bit).
fn message_type(t: u16) -> bool {
    matches!(
        t & 0x7fff,
        0x0001
            | 0x0100
            | 0x0200
            | 0x0201
            | 0x0300
            | 0x0301
            | 0x0400
            | 0x0401
            | 0x0402
            | 0x0403
            | 0x0404
    )
}

impl Detector for LdpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Ldp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x00])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let (Some(version), Some(pdu_len), Some(ty), Some(msg_len)) =
            (be16(d, 0), be16(d, 2), be16(d, 10), be16(d, 12))
        else {
            return if ctx.transport == Transport::Tcp && d.len() < 14 {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let pdu = usize::from(pdu_len) + 4;
        let fits = match ctx.transport {
            Transport::Udp => pdu == d.len(),
            _ => pdu <= d.len(),
        };
        // The first message (its type and length fields, then the length's bytes) lies within the PDU, after the
        // 10-byte header; a PDU length below 6 leaves no room for it.
        let message_fits = pdu
            .checked_sub(10)
            .is_some_and(|room| usize::from(msg_len) + 4 <= room);
        if version == 1 && fits && message_type(ty) && message_fits {
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

    /// A Hello PDU from LSR 10.0.0.6:0 with one Common Hello Parameters TLV.
    fn hello() -> Vec<u8> {
        let mut m = vec![0x01, 0x00, 0, 0, 0, 0, 0, 1]; // Hello, length, message id
        m.extend_from_slice(&[0x04, 0x00, 0x00, 0x04, 0x00, 0x0f, 0x00, 0x00]);
        let len = (m.len() - 4) as u16;
        m[2..4].copy_from_slice(&len.to_be_bytes());
        let mut p = vec![0, 1, 0, 0, 10, 0, 0, 6, 0, 0];
        p.extend_from_slice(&m);
        let pl = (p.len() - 4) as u16;
        p[2..4].copy_from_slice(&pl.to_be_bytes());
        p
    }

    /// A PDU length shorter than the header (found by the fuzz target `proto_classifier`: the subtraction
    /// overflowed, a panic in debug builds and a certain verdict in release ones).
    #[test]
    fn a_pdu_shorter_than_its_header_is_not_ldp() {
        let d = [
            0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xab, 0xab, 0x01, 0x00, 0x01, 0x00, 0x00,
            0x00, 0x00, 0x00, 0xff, 0xff, 0x01, 0xff, 0xff,
        ];
        assert_eq!(
            LdpDetector.probe(&ctx_tcp(Direction::ToServer, &d)),
            Probe::NotForUs
        );
    }

    #[test]
    fn a_hello_pdu() {
        let h = hello();
        assert_eq!(
            LdpDetector.probe(&ctx_udp(Direction::ToServer, &h, &[])),
            Probe::Certain
        );
        assert_eq!(
            LdpDetector.probe(&ctx_tcp(Direction::ToServer, &h)),
            Probe::Certain
        );
        assert_eq!(
            LdpDetector.probe(&ctx_tcp(Direction::ToServer, &h[..8])),
            Probe::Unsure
        );
        let mut bad = h.clone();
        bad[1] = 2;
        assert_eq!(
            LdpDetector.probe(&ctx_udp(Direction::ToServer, &bad, &[])),
            Probe::NotForUs
        );
        assert_eq!(
            LdpDetector.probe(&ctx_udp(Direction::ToServer, &h[..h.len() - 1], &[])),
            Probe::NotForUs
        );
    }
}
