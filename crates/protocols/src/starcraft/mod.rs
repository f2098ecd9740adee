//! Blizzard's Battle.net 2.0 service protocol, as StarCraft II's client speaks it: nDPI's `Starcraft`.
//!
//! Battle.net 2.0 clients connect to TCP port 1119 (IANA `bnetgame`, "Battle.net Chat/Game Protocol"). The protocol
//! is undocumented; what the captures of StarCraft II logins show (a 2011 client, and nDPI's own test traces of it)
//! is a client that opens every connection with the same ten bytes, the binding request of its first service
//! call, before the server says anything: `4a 00 00 0a 66 02 0a ed 2d 66`. The detector wants those ten bytes at the
//! start of the client's stream, on port 1119 at either end; the port alone is no evidence (a scanner's SYN to
//! 1119 is not a login).

use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Detector for Battle.net 2.0 logins.
pub struct StarcraftDetector;

/// The client's opening bytes.
const OPENING: &[u8] = b"\x4a\x00\x00\x0a\x66\x02\x0a\xed\x2d\x66";

/// Battle.net 2.0's registered port.
const PORT: u16 = 1119;

impl Detector for StarcraftDetector {
    fn proto(&self) -> AppProto {
        AppProto::Starcraft
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x4a])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        // The client opens the connection: its bytes come first. A flow picked up without its handshake may have
        // its ends guessed the wrong way round, so the flow's very first payload counts whichever way it went;
        // after that, a server that spoke first is another protocol.
        if !ctx.either_port_is(PORT) || (ctx.dir != Direction::ToServer && ctx.payload_index != 0) {
            return Probe::NotForUs;
        }
        Probe::magic(ctx.prefix, OPENING)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transport;
    use crate::testkit::ctx_ports;

    fn probe(dir: Direction, d: &[u8], client: u16, server: u16) -> Probe {
        StarcraftDetector.probe(&ctx_ports(Transport::Tcp, dir, d, client, server))
    }

    #[test]
    fn the_login_opening_on_the_battle_net_port() {
        let mut login = OPENING.to_vec();
        login.extend(b"\xad\xc8\xe8\x0a\x00\x00\x29\x99");
        assert_eq!(
            probe(Direction::ToServer, &login, 3517, 1119),
            Probe::Certain
        );
        assert_eq!(probe(Direction::ToServer, OPENING, 1, 1119), Probe::Certain);
        assert_eq!(
            probe(Direction::ToServer, &OPENING[..4], 3517, 1119),
            Probe::Unsure
        );
    }

    #[test]
    fn other_bytes_or_ports_are_not_a_login() {
        assert_eq!(
            probe(Direction::ToServer, b"\x4a\x00\x00\x0b\x66", 3517, 1119),
            Probe::NotForUs
        );
        assert_eq!(
            probe(Direction::ToServer, OPENING, 3517, 443),
            Probe::NotForUs
        );
        assert_eq!(
            probe(Direction::ToServer, b"\x16\x03\x01", 3517, 1119),
            Probe::NotForUs
        );
        // The server does not speak first.
        let reply = ProbeCtx {
            payload_index: 1,
            ..ctx_ports(Transport::Tcp, Direction::ToClient, OPENING, 3517, 1119)
        };
        assert_eq!(StarcraftDetector.probe(&reply), Probe::NotForUs);
        // A flow without its handshake, its ends guessed the other way round: the first payload still counts.
        assert_eq!(probe(Direction::ToClient, OPENING, 1119, 1), Probe::Certain);
    }
}
