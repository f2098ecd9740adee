//! Zoom's media connections to its servers (UDP 8801-8810, the ports Zoom publishes for its clients): nDPI's
//! `Zoom`.
//!
//! Before media, client and server exchange four small messages, the first byte giving the step: 1 (client,
//! with a 16-byte session id at offset 3), 2 (server, echoing that id at the same place), 3 (server, with a
//! token) and 4 (client, echoing the token datagram unchanged but for the step). On Zoom's ports, a datagram that
//! answers the other side's last one that way is certain.
//!
//! Peer-to-peer meetings (any port) open with a discovery datagram: `1f 02 01 00`, three 16-bit fields, a nonce and
//! counters, then two length-prefixed strings (32-bit big-endian lengths): the sender's IP address as text and the
//! meeting's UUID (36 characters, `8-4-4-4-12` hex digits), and a final zero word ending the datagram. A
//! datagram with that layout is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Zoom's media server ports.
const PORTS: std::ops::RangeInclusive<u16> = 8801..=8810;

/// Detector for Zoom.
pub struct ZoomDetector;

/// The peer-to-peer discovery datagram's first bytes, and where its strings start.
const P2P_MAGIC: [u8; 4] = [0x1f, 0x02, 0x01, 0x00];
const P2P_STRINGS: usize = 24;

/// A 32-bit big-endian length at `at` and the bytes it counts.
fn counted(d: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let n = crate::scan::be32(d, at)? as usize;
    let s = d.get(at + 4..at + 4 + n)?;
    Some((s, at + 4 + n))
}

/// Whether `s` is a UUID in its 36-character text form.
fn uuid_text(s: &[u8]) -> bool {
    s.len() == 36
        && s.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// Whether `d` is a peer-to-peer discovery datagram.
fn p2p_discovery(d: &[u8]) -> bool {
    if !d.starts_with(&P2P_MAGIC) {
        return false;
    }
    let Some((addr, next)) = counted(d, P2P_STRINGS) else {
        return false;
    };
    let addr_ok = (7..=45).contains(&addr.len())
        && addr
            .iter()
            .all(|b| b.is_ascii_hexdigit() || *b == b'.' || *b == b':');
    let Some((uuid, end)) = counted(d, next) else {
        return false;
    };
    addr_ok && uuid_text(uuid) && d.get(end..) == Some(&[0, 0, 0, 0][..])
}

/// Whether `d` answers `peer` in the handshake.
fn answers(d: &[u8], peer: &[u8]) -> bool {
    match (d.first(), peer.first()) {
        (Some(2), Some(1)) | (Some(1), Some(2)) => {
            d.len() >= 19 && peer.len() >= 19 && d.get(3..19) == peer.get(3..19)
        }
        (Some(4), Some(3)) | (Some(3), Some(4)) => {
            d.len() == peer.len() && d.len() >= 8 && d.get(1..) == peer.get(1..)
        }
        _ => false,
    }
}

impl Detector for ZoomDetector {
    fn proto(&self) -> AppProto {
        AppProto::Zoom
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[1, 2, 3, 4, P2P_MAGIC[0]])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if p2p_discovery(ctx.data) {
            return Probe::Certain;
        }
        if !PORTS.contains(&ctx.server_port) && !PORTS.contains(&ctx.client_port) {
            return Probe::NotForUs;
        }
        if answers(ctx.data, ctx.peer) {
            Probe::Certain
        } else if ctx.peer.is_empty() {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_ports;
    use crate::{Direction, ProbeCtx, Transport};

    #[test]
    fn handshake_echoes() {
        let id = [
            0x7d, 0x46, 0x4d, 0x35, 0xff, 0xfd, 0xa2, 0x34, 0x49, 0x5d, 0x0d, 0x6d, 0x3b, 0x51,
            0xe8, 0x96,
        ];
        let mut first = vec![1, 0, 2];
        first.extend_from_slice(&id);
        first.extend_from_slice(&[0; 40]);
        let mut second = vec![2, 0, 1];
        second.extend_from_slice(&id);
        second.extend_from_slice(&[
            0, 0x5a, 0x0e, 0x3e, 0, 0x7a, 0, 0x2a, 0, 0, 0, 0, 0, 0, 0, 0,
        ]);
        let token = [3, 0, 0, 0, 1, 0x76, 0x2a, 0x8d, 0x74, 0, 0x5a, 0x0e, 0x3e];
        let mut echo = token;
        echo[0] = 4;
        let probe = |d: &[u8], peer: &[u8], port| {
            ZoomDetector.probe(&ProbeCtx {
                peer,
                ..ctx_ports(Transport::Udp, Direction::ToClient, d, 58327, port)
            })
        };
        assert_eq!(probe(&first, &[], 8801), Probe::Unsure);
        assert_eq!(probe(&second, &first, 8801), Probe::Certain);
        assert_eq!(probe(&echo, &token, 8801), Probe::Certain);
        assert_eq!(
            probe(&second, &first, 8811),
            Probe::NotForUs,
            "off Zoom's ports"
        );
        let mut other = second.clone();
        other[5] ^= 1;
        assert_eq!(probe(&other, &first, 8801), Probe::NotForUs);
    }

    fn discovery(addr: &[u8], uuid: &[u8]) -> Vec<u8> {
        let mut d = P2P_MAGIC.to_vec();
        d.extend_from_slice(&[
            0, 8, 0, 1, 0, 4, 0x4e, 0x15, 0x0e, 0xf8, 0, 0, 0, 7, 0, 0, 0x63, 0xb6, 0xa5, 0,
        ]);
        d.truncate(P2P_STRINGS);
        d.extend_from_slice(&(addr.len() as u32).to_be_bytes());
        d.extend_from_slice(addr);
        d.extend_from_slice(&(uuid.len() as u32).to_be_bytes());
        d.extend_from_slice(uuid);
        d.extend_from_slice(&[0; 4]);
        d
    }

    #[test]
    fn peer_to_peer_discovery() {
        let probe = |d: &[u8]| {
            ZoomDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                d,
                46757,
                39065,
            ))
        };
        let uuid = b"AF065D88-AA9B-4A81-80A4-B85CD341B921";
        assert_eq!(probe(&discovery(b"192.168.1.226", uuid)), Probe::Certain);
        assert_eq!(probe(&discovery(b"2001:db8::1", uuid)), Probe::Certain);
        assert_eq!(
            probe(&discovery(
                b"192.168.1.226",
                b"AF065D88-AA9B-4A81-80A4-B85CD341B92"
            )),
            Probe::NotForUs
        );
        assert_eq!(probe(&discovery(b"host name", uuid)), Probe::NotForUs);
        let mut tail = discovery(b"10.0.0.1", uuid);
        tail.push(0);
        assert_eq!(
            probe(&tail),
            Probe::NotForUs,
            "the zero word ends the datagram"
        );
    }
}
