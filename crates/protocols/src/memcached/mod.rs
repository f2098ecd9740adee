//! memcached's protocols on its port 11211: nDPI's `Memcached`.
//!
//! memcached speaks a text protocol (its `protocol.txt`: a command word and arguments ending in `\r\n`: `get`,
//! `set`, `delete`, `stats`, the meta commands `mg`, `ms`, ...; answers such as `VALUE`, `STORED`, `END`) and a
//! binary one (24-byte header: magic 0x80 for a request or 0x81 for a response, an opcode, key and extras lengths,
//! data type 0, a total body length that covers key and extras). Over UDP each datagram starts with an 8-byte frame
//! header (request id, sequence number, datagram count, zero). The command words are ordinary English, so the
//! detector asks for memcached's port at one end (as nDPI does) and then a whole first line of a known command
//! or answer, or a consistent binary header.

use crate::scan::{be16, be32};
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// memcached's port.
const PORT: u16 = 11211;

/// Command and answer words of the text protocol.
const WORDS: &[&[u8]] = &[
    b"get",
    b"gets",
    b"gat",
    b"gats",
    b"set",
    b"add",
    b"replace",
    b"append",
    b"prepend",
    b"cas",
    b"delete",
    b"incr",
    b"decr",
    b"touch",
    b"stats",
    b"version",
    b"flush_all",
    b"verbosity",
    b"quit",
    b"mg",
    b"ms",
    b"md",
    b"ma",
    b"mn",
    b"me",
    b"VALUE",
    b"END",
    b"STORED",
    b"NOT_STORED",
    b"EXISTS",
    b"NOT_FOUND",
    b"DELETED",
    b"TOUCHED",
    b"OK",
    b"ERROR",
    b"CLIENT_ERROR",
    b"SERVER_ERROR",
    b"STAT",
    b"VERSION",
    b"HD",
    b"VA",
    b"EN",
    b"NF",
    b"NS",
    b"EX",
    b"MN",
];

/// Whether `d` opens with a whole text line whose first word is a memcached command or answer.
fn text(d: &[u8]) -> Option<bool> {
    let Some(end) = d.windows(2).position(|w| w == b"\r\n") else {
        return (d.len() < 256 && d.iter().all(|b| b.is_ascii_graphic() || *b == b' '))
            .then_some(false);
    };
    let line = &d[..end];
    let word = line.split(|&b| b == b' ').next().unwrap_or(&[]);
    let printable = line.iter().all(|b| b.is_ascii_graphic() || *b == b' ');
    (printable && WORDS.contains(&word)).then_some(true)
}

/// Whether `d` opens with a binary header whose lengths agree (and, `exact`, whose body ends the payload).
fn binary(d: &[u8], exact: bool) -> bool {
    let (Some(&magic), Some(&op), Some(key), Some(&extras), Some(&dtype), Some(body)) = (
        d.first(),
        d.get(1),
        be16(d, 2),
        d.get(4),
        d.get(5),
        be32(d, 8),
    ) else {
        return false;
    };
    let total = 24usize.saturating_add(body as usize);
    matches!(magic, 0x80 | 0x81)
        && op <= 0x48
        && dtype == 0
        && u32::from(key) + u32::from(extras) <= body
        && d.len() >= 24
        && (!exact || total == d.len())
}

/// Detector for memcached.
pub struct MemcachedDetector;

impl Detector for MemcachedDetector {
    fn proto(&self) -> AppProto {
        AppProto::Memcached
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if !ctx.either_port_is(PORT) {
            return Probe::NotForUs;
        }
        let (d, udp) = match ctx.transport {
            Transport::Udp => {
                // The frame header: a datagram count of at least one, a sequence number below it, zero reserved.
                let ok = matches!((be16(ctx.data, 2), be16(ctx.data, 4), be16(ctx.data, 6)), (Some(s), Some(n), Some(0)) if s < n);
                if !ok {
                    return Probe::NotForUs;
                }
                (&ctx.data[8..], true)
            }
            _ => (ctx.prefix, false),
        };
        if binary(d, udp) {
            return Probe::Certain;
        }
        match text(d) {
            Some(true) => Probe::Certain,
            Some(false) if !udp => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_ports;

    fn tcp(d: &[u8], server_port: u16) -> Probe {
        MemcachedDetector.probe(&ctx_ports(
            Transport::Tcp,
            Direction::ToServer,
            d,
            40000,
            server_port,
        ))
    }

    #[test]
    fn text_commands_and_answers() {
        assert_eq!(
            tcp(b"set user:1 0 3600 5\r\nalice\r\n", PORT),
            Probe::Certain
        );
        assert_eq!(
            tcp(b"VALUE user:1 0 5\r\nalice\r\nEND\r\n", PORT),
            Probe::Certain
        );
        assert_eq!(tcp(b"stats\r\n", PORT), Probe::Certain);
        assert_eq!(
            tcp(b"get user", PORT),
            Probe::Unsure,
            "the line is not whole yet"
        );
        assert_eq!(tcp(b"GET / HTTP/1.1\r\n", PORT), Probe::NotForUs);
        assert_eq!(
            tcp(b"set user:1 0 3600 5\r\nalice\r\n", 8080),
            Probe::NotForUs
        );
    }

    #[test]
    fn binary_and_udp() {
        // A binary GET of key "k": 24-byte header, body = the key.
        let mut get = vec![0x80, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 7];
        get.extend_from_slice(&[0; 8]);
        get.push(b'k');
        assert_eq!(tcp(&get, PORT), Probe::Certain);
        let mut bad = get.clone();
        bad[5] = 1; // data type must be 0
        assert_eq!(tcp(&bad, PORT), Probe::NotForUs);
        // UDP: frame header (request 7, datagram 0 of 1) before a text command.
        let mut dgram = vec![0, 7, 0, 0, 0, 1, 0, 0];
        dgram.extend_from_slice(b"get k\r\n");
        let udp = |d: &[u8]| {
            MemcachedDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                d,
                40000,
                PORT,
            ))
        };
        assert_eq!(udp(&dgram), Probe::Certain);
        dgram[5] = 0; // no datagrams in the message
        assert_eq!(udp(&dgram), Probe::NotForUs);
    }
}
