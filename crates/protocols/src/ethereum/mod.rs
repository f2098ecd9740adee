//! Ethereum's devp2p: RLPx sessions (TCP) and node discovery v4 (UDP): nDPI's `ETHEREUM`.
//!
//! * RLPx (EIP-8): the initiator's auth message is a 16-bit size prefix equal to the rest of the message, then an
//!   ECIES ciphertext that starts with an uncompressed public key (`0x04`).
//! * Discovery v4: a 32-byte hash, a 65-byte signature, a packet type 1..=6 (ping, pong, findnode, neighbors, ENR
//!   request/response) and an RLP list; on the discovery ports (30301, 30303) that layout is certain.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// Detector for ETHEREUM.
pub struct EthereumDetector;

impl Detector for EthereumDetector {
    fn proto(&self) -> AppProto {
        AppProto::Ethereum
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        match ctx.transport {
            Transport::Icmp | Transport::Other(_) => Probe::NotForUs,
            Transport::Tcp => {
                if ctx.dir_index != 0 || ctx.payload_index != 0 {
                    return Probe::NotForUs;
                }
                let ok = p.len() >= 300
                    && be16(p, 0).is_some_and(|l| usize::from(l) + 2 == p.len())
                    && p[2] == 0x04;
                if ok { Probe::Certain } else { Probe::NotForUs }
            }
            Transport::Udp => {
                let ports = ctx.either_port_is(30303) || ctx.either_port_is(30301);
                let ok = ports && p.len() > 98 && (1..=6).contains(&p[97]) && p[98] >= 0xc0;
                if ok { Probe::Certain } else { Probe::NotForUs }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;

    #[allow(non_upper_case_globals)]
    const Det: EthereumDetector = EthereumDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut auth = vec![0x01, 0x80, 0x04];
        auth.extend_from_slice(&[0x5a; 0x180 - 1]);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &auth)),
            Probe::Certain
        );
        auth.push(0);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &auth)),
            Probe::NotForUs
        );
        let mut ping = vec![0x11; 97];
        ping.extend_from_slice(&[0x01, 0xdd, 0x04, 0xcb]);
        let c = crate::testkit::ctx_ports(Transport::Udp, Direction::ToServer, &ping, 56693, 30303);
        assert_eq!(Det.probe(&c), Probe::Certain);
    }
}
