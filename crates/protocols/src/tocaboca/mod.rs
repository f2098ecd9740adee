//! Toca Boca's game servers (nDPI's `TocaBoca`): Exit Games' Photon realtime protocol over UDP on Photon's ports
//! (5055 master/name server, 5056 game server, 5058 name server).
//!
//! A Photon UDP datagram is a 12-byte header (peer id `u16`, CRC flag `u8`: `0x00` or `0xCC`, command count
//! `u8`, sent time `u32`, challenge `u32`) followed by exactly that many commands, each with a 12-byte header
//! (type `u8`: 1 acknowledge to 12, channel `u8`, flags `u8`, reserved `u8`, length `u32` counting the header,
//! reliable sequence `u32`). Any datagram of the flow is judged on its own: the command lengths must add up to the
//! datagram's length exactly, which a random payload does once in billions, and flows are often seen from a single
//! datagram (a keep-alive or acknowledgement after a NAT rebinding). Big-endian throughout.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Photon's UDP ports.
const PORTS: &[u16] = &[5055, 5056, 5058];

/// Highest Photon command type (1 acknowledge, 2 connect, 3 verify connect, 4 disconnect, 5 ping, 6 send
/// reliable, 7 send unreliable, 8 send fragment, 11/12 unsequenced and server time).
const MAX_COMMAND: u8 = 12;

/// Whether `d` is one Photon datagram: a header whose command count matches the commands that follow, the last
/// one ending at the datagram's end.
pub fn is_photon(d: &[u8]) -> bool {
    let (Some(&crc), Some(&count)) = (d.get(2), d.get(3)) else {
        return false;
    };
    if !(crc == 0 || crc == 0xCC) || count == 0 {
        return false;
    }
    let mut at = 12usize;
    for _ in 0..count {
        let Some(h) = d.get(at..at + 12) else {
            return false;
        };
        let len = u32::from_be_bytes([h[4], h[5], h[6], h[7]]) as usize;
        if !(1..=MAX_COMMAND).contains(&h[0]) || len < 12 {
            return false;
        }
        at = match at.checked_add(len) {
            Some(n) if n <= d.len() => n,
            _ => return false,
        };
    }
    at == d.len()
}

/// Detector for Photon datagrams on Photon's ports.
pub struct TocaBocaDetector;

impl Detector for TocaBocaDetector {
    fn proto(&self) -> AppProto {
        AppProto::TocaBoca
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if PORTS.iter().any(|&p| ctx.either_port_is(p)) && is_photon(ctx.data) {
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

    /// A Photon datagram with the given commands: (type, payload length).
    fn datagram(peer: u16, commands: &[(u8, usize)]) -> Vec<u8> {
        let mut d = peer.to_be_bytes().to_vec();
        d.extend_from_slice(&[0, commands.len() as u8]);
        d.extend_from_slice(&7u32.to_be_bytes()); // sent time
        d.extend_from_slice(&0x22b6_e6bau32.to_be_bytes()); // challenge
        for (i, &(ty, body)) in commands.iter().enumerate() {
            d.extend_from_slice(&[ty, 0xff, 1, 4]);
            d.extend_from_slice(&((12 + body) as u32).to_be_bytes());
            d.extend_from_slice(&(i as u32 + 1).to_be_bytes());
            d.extend(std::iter::repeat_n(0xa5, body));
        }
        d
    }

    fn probe(d: &[u8], server_port: u16) -> Probe {
        TocaBocaDetector.probe(&ctx_ports(
            Transport::Udp,
            Direction::ToServer,
            d,
            50173,
            server_port,
        ))
    }

    #[test]
    fn connect_and_acknowledge() {
        // The client's CONNECT (peer id not assigned yet), then the server's ACK + VERIFY CONNECT.
        let connect = datagram(0xffff, &[(2, 32)]);
        assert_eq!(connect.len(), 56);
        assert_eq!(probe(&connect, 5055), Probe::Certain);
        let verify = datagram(0, &[(1, 8), (3, 32)]);
        assert_eq!(probe(&verify, 5056), Probe::Certain);
        // The same bytes off Photon's ports are not claimed.
        assert_eq!(probe(&connect, 9999), Probe::NotForUs);
    }

    #[test]
    fn lengths_must_add_up() {
        let mut d = datagram(0xbbc8, &[(6, 20), (7, 4)]);
        assert!(is_photon(&d));
        d.push(0);
        assert!(!is_photon(&d), "a trailing byte");
        let mut bad_type = datagram(1, &[(13, 4)]);
        assert!(!is_photon(&bad_type));
        bad_type[12] = 6;
        assert!(is_photon(&bad_type));
        let mut bad_crc = datagram(1, &[(5, 0)]);
        bad_crc[2] = 1;
        assert!(!is_photon(&bad_crc));
        assert!(!is_photon(&[0xff, 0xff, 0, 1]));
        assert!(!is_photon(&[]));
        // A command length that would overflow the offset.
        let mut huge = datagram(1, &[(6, 0)]);
        huge[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(!is_photon(&huge));
    }
}
