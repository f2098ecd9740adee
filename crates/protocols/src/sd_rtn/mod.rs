//! Agora's Software Defined Real-time Network: nDPI's `SD-RTN`.
//!
//! A client joins an edge server with a UDP datagram whose message type (offset 6) is `0x21` and whose tag list
//! (offset 12) opens with the tag `04 'S' 'N' 'I'`, then the name's length (16 bits, big-endian), a zero byte and
//! the edge server's host name (`<address>.edge.agora.io`). The name must fit the datagram and look like a host
//! name; that is certain from the first datagram.

use crate::scan::{be16, is_host_name};
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// The join request's message type.
const JOIN: u8 = 0x21;

/// Detector for SD-RTN.
pub struct SdRtnDetector;

/// The edge host name a join request carries, if `d` is one.
pub fn join_host(d: &[u8]) -> Option<&[u8]> {
    if d.get(6) != Some(&JOIN) || d.get(12..16) != Some(&b"\x04SNI"[..]) || d.get(18) != Some(&0) {
        return None;
    }
    let len = usize::from(be16(d, 16)?);
    let host = d.get(19..19 + len)?;
    is_host_name(host).then_some(host)
}

impl Detector for SdRtnDetector {
    fn proto(&self) -> AppProto {
        AppProto::SdRtn
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if join_host(ctx.data).is_some() {
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

    fn join(host: &[u8]) -> Vec<u8> {
        let mut d = vec![0x00, 0x5a, 0x38, 0x4c, 0x00, 0x00, JOIN, 0, 0, 0, 0, 0];
        d.extend_from_slice(b"\x04SNI");
        d.extend_from_slice(&(host.len() as u16).to_be_bytes());
        d.push(0);
        d.extend_from_slice(host);
        d.extend_from_slice(b"PDMD\0\0CPTO");
        d
    }

    #[test]
    fn join_request_names_its_edge() {
        let d = join(b"10-0-0-1.edge.agora.io");
        assert_eq!(join_host(&d), Some(&b"10-0-0-1.edge.agora.io"[..]));
        assert_eq!(
            SdRtnDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        // A name longer than the datagram, a name that is no host name, another message type.
        let mut long = join(b"a.b");
        long[17] = 200;
        let mut other = join(b"a.b");
        other[6] = 0x23;
        for d in [long, join(b"a b.c"), other] {
            assert_eq!(
                SdRtnDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
                Probe::NotForUs
            );
        }
    }
}
