//! Threema's chat server connection: nDPI's `Threema`.
//!
//! Threema's cryptography whitepaper (chat protocol, transport layer) fixes the handshake's sizes. The client
//! opens with its temporary public key (32 bytes) and its connection cookie (16): 48 bytes. The server answers
//! with its own cookie (16 bytes) and a box (its temporary public key and the client's cookie, 48 bytes, plus
//! the 16-byte MAC): 80 bytes. Everything is random or encrypted. On Threema's ports (5222, 443), a 48-byte
//! binary opening answered by exactly 80 binary bytes is certain.

use crate::{AppProto, Detector, Direction, Probe, ProbeCtx};

/// The client's hello: key and cookie.
const CLIENT_HELLO: usize = 32 + 16;
/// The server's hello: cookie and box.
const SERVER_HELLO: usize = 16 + 48 + 16;
/// The ports Threema's chat servers listen on.
const PORTS: [u16; 2] = [5222, 443];

/// Detector for Threema.
pub struct ThreemaDetector;

/// Whether `d` looks like random bytes rather than text (a fifth or more outside printable ASCII).
fn binary(d: &[u8]) -> bool {
    d.iter().filter(|b| !(0x20..0x7f).contains(*b)).count() * 5 >= d.len()
}

impl Detector for ThreemaDetector {
    fn proto(&self) -> AppProto {
        AppProto::Threema
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if !PORTS.contains(&ctx.server_port) {
            return Probe::NotForUs;
        }
        let (client, server) = match ctx.dir {
            Direction::ToServer => (ctx.prefix, ctx.peer),
            Direction::ToClient => (ctx.peer, ctx.prefix),
        };
        if client.len() > CLIENT_HELLO || server.len() > SERVER_HELLO {
            return Probe::NotForUs;
        }
        if !binary(client) || !binary(server) {
            return Probe::NotForUs;
        }
        if client.len() == CLIENT_HELLO && server.len() == SERVER_HELLO {
            Probe::Certain
        } else {
            Probe::Unsure
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_ports;
    use crate::{ProbeCtx, Transport};

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed) | 0x80)
            .collect()
    }

    #[test]
    fn handshake_sizes() {
        let hello = bytes(CLIENT_HELLO, 1);
        let answer = bytes(SERVER_HELLO, 2);
        let probe = |dir, d: &[u8], peer: &[u8], port| {
            ThreemaDetector.probe(&ProbeCtx {
                peer,
                ..ctx_ports(Transport::Tcp, dir, d, 50484, port)
            })
        };
        assert_eq!(probe(Direction::ToServer, &hello, &[], 5222), Probe::Unsure);
        assert_eq!(
            probe(Direction::ToClient, &answer, &hello, 5222),
            Probe::Certain
        );
        assert_eq!(
            probe(Direction::ToClient, &answer[..79], &hello, 5222),
            Probe::Unsure
        );
        assert_eq!(
            probe(Direction::ToClient, &answer, &hello, 5223),
            Probe::NotForUs
        );
        let xml = b"<stream:stream to='example.com' xmlns='jabber:client' version='1.0'>";
        assert_eq!(probe(Direction::ToServer, xml, &[], 5222), Probe::NotForUs);
    }
}
