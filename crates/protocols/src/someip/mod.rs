//! SOME/IP, the AUTOSAR scalable service-oriented middleware over IP (UDP and TCP; service discovery on 30490):
//! nDPI's `SOMEIP`.
//!
//! Every message starts with a 16-byte header (AUTOSAR SOME/IP protocol specification): message id (service,
//! method), a 32-bit length counting the bytes after the length field (so at least 8), request id, protocol
//! version `01`, interface version, message type (request, request without return, notification, response,
//! error, and their transport-protocol segment forms `0x20` and up) and a return code (`0x00`..`0x5E`). A payload
//! made of whole messages whose lengths add up exactly to its size is certain.

use crate::scan::be32;
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// Detector for SOME/IP.
pub struct SomeIpDetector;

/// The SOME/IP message types: request, request without return, notification, response, error, their
/// acknowledgement forms (older releases) and their segmented (SOME/IP-TP) forms.
fn message_type(t: u8) -> bool {
    matches!(
        t,
        0x00 | 0x01
            | 0x02
            | 0x40
            | 0x41
            | 0x42
            | 0x80
            | 0x81
            | 0xc0
            | 0xc1
            | 0x20
            | 0x21
            | 0x22
            | 0xa0
            | 0xa1
    )
}

/// Whether `d` is one or more whole SOME/IP messages (at most eight are walked).
fn whole_messages(d: &[u8]) -> bool {
    let mut off = 0usize;
    for _ in 0..8 {
        let (Some(len), Some(&[ver, _iface, ty, rc])) = (
            be32(d, off + 4),
            d.get(off + 12..off + 16)
                .map(|h| [h[0], h[1], h[2], h[3]])
                .as_ref(),
        ) else {
            return false;
        };
        if ver != 1 || !message_type(ty) || rc > 0x5e || len < 8 {
            return false;
        }
        let Some(next) = usize::try_from(len)
            .ok()
            .and_then(|l| (off + 8).checked_add(l))
        else {
            return false;
        };
        if next == d.len() {
            return true;
        }
        if next > d.len() {
            return false;
        }
        off = next;
    }
    false
}

impl Detector for SomeIpDetector {
    fn proto(&self) -> AppProto {
        AppProto::SomeIp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = match ctx.transport {
            Transport::Tcp => ctx.prefix,
            _ => ctx.data,
        };
        if whole_messages(d) {
            Probe::Certain
        } else if ctx.transport == Transport::Tcp && d.len() < 16 {
            Probe::Unsure
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

    /// A SOME/IP message for service 0x1234, method 0x0001, of type `ty`, carrying `body`.
    fn message(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0x00, 0x01];
        m.extend_from_slice(&(8 + body.len() as u32).to_be_bytes());
        m.extend_from_slice(&[0, 1, 0, 7, 1, 1, ty, 0]);
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn whole_messages_are_certain() {
        let req = message(0x00, b"\xab\xab\xab\xab\xab");
        assert_eq!(
            SomeIpDetector.probe(&ctx_udp(Direction::ToServer, &req, &[])),
            Probe::Certain
        );
        let mut two = message(0x02, b"ab");
        two.extend_from_slice(&message(0x80, b""));
        assert_eq!(
            SomeIpDetector.probe(&ctx_udp(Direction::ToServer, &two, &[])),
            Probe::Certain
        );
        let mut bad = req.clone();
        bad[12] = 2; // protocol version
        assert_eq!(
            SomeIpDetector.probe(&ctx_udp(Direction::ToServer, &bad, &[])),
            Probe::NotForUs
        );
        let mut short = req.clone();
        short.pop();
        assert_eq!(
            SomeIpDetector.probe(&ctx_udp(Direction::ToServer, &short, &[])),
            Probe::NotForUs
        );
        assert_eq!(
            SomeIpDetector.probe(&ctx_tcp(Direction::ToServer, &req[..10])),
            Probe::Unsure
        );
    }
}
