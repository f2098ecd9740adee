//! OpenVPN (UDP, or TCP with a 2-byte length per packet): nDPI's `OpenVPN`.
//!
//! The first packet of a session is a control "hard reset" from the client: opcode 7 (`P_CONTROL_HARD_RESET_
//! CLIENT_V2`) or 10 (`_V3`, tls-crypt-v2) in the top 5 bits, key id 0, then the 8-byte session id. Without
//! `tls-auth` it is 14 bytes: opcode, session id, an empty ACK array and a zero packet id. With `tls-auth` an
//! HMAC (20 or 32 bytes) and a replay packet id and time come first, making it 42 or 54 bytes; `tls-crypt` wraps
//! it further. The known lengths (plus the structure of the 14-byte form) are certain; other hard resets wait for
//! the server's `P_CONTROL_HARD_RESET_SERVER_V2` (opcode 8) to confirm.

use crate::scan::be16;
use crate::{AppProto, Detector, Direction, Probe, ProbeCtx, Transport};

fn opcode(b: u8) -> (u8, u8) {
    (b >> 3, b & 0x07)
}

fn judge(pkt: &[u8], dir: Direction, first: bool) -> Probe {
    let Some(&b0) = pkt.first() else {
        return Probe::Unsure;
    };
    let (op, key) = opcode(b0);
    if key != 0 {
        return Probe::NotForUs;
    }
    match (op, dir) {
        (7 | 10, Direction::ToServer) if first => match pkt.len() {
            14 if pkt[9] == 0 && pkt[10..14] == [0, 0, 0, 0] => Probe::Certain,
            // tls-auth: opcode, session id, HMAC (16/20/32/48/64 bytes), packet id, time, empty ACK array,
            // message packet id.
            38 | 42 | 54 | 70 | 86 => Probe::Certain,
            n if (14..=1500).contains(&n) => Probe::Unsure,
            _ => Probe::NotForUs,
        },
        (8, Direction::ToClient) if !first && pkt.len() >= 14 => Probe::Certain,
        (4 | 5 | 6 | 9, _) if !first => Probe::Unsure,
        _ => Probe::NotForUs,
    }
}

/// Detector for OpenVPN.
pub struct OpenVpnDetector;

impl Detector for OpenVpnDetector {
    fn proto(&self) -> AppProto {
        AppProto::OpenVpn
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let first = ctx.payload_index == 0;
        match ctx.transport {
            Transport::Icmp | Transport::Other(_) => Probe::NotForUs,
            Transport::Udp => judge(ctx.data, ctx.dir, first),
            Transport::Tcp => {
                let p = ctx.prefix;
                let Some(len) = be16(p, 0) else {
                    return Probe::Unsure;
                };
                let len = usize::from(len);
                if !(14..=1600).contains(&len) {
                    return Probe::NotForUs;
                }
                match p.get(2..2 + len) {
                    Some(pkt) => judge(pkt, ctx.dir, first),
                    None if p.len() < 3 => Probe::Unsure,
                    None => match judge(&p[2..], ctx.dir, true) {
                        Probe::NotForUs => Probe::NotForUs,
                        _ => Probe::Unsure,
                    },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{ctx_tcp, ctx_udp};

    // openvpn.pcap: client hard reset v2 without tls-auth (14 bytes).
    const RESET: [u8; 14] = [
        0x38, 0x33, 0x48, 0x57, 0x70, 0x3d, 0x96, 0xdb, 0x39, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn hard_reset() {
        assert_eq!(
            OpenVpnDetector.probe(&ctx_udp(Direction::ToServer, &RESET, &[])),
            Probe::Certain
        );
        let mut tcp = vec![0x00, 0x0e];
        tcp.extend_from_slice(&RESET);
        assert_eq!(
            OpenVpnDetector.probe(&ctx_tcp(Direction::ToServer, &tcp)),
            Probe::Certain
        );
        assert_eq!(
            OpenVpnDetector.probe(&ctx_udp(Direction::ToServer, &[0x39; 14], &[])),
            Probe::NotForUs
        );
        let mut odd = RESET.to_vec();
        odd.extend_from_slice(&[1; 10]);
        assert_eq!(
            OpenVpnDetector.probe(&ctx_udp(Direction::ToServer, &odd, &[])),
            Probe::Unsure
        );
    }
}
