//! Gnutella and Gnutella2: nDPI's `Gnutella`.
//!
//! * TCP: the handshake lines `GNUTELLA CONNECT/<version>` (request) and `GNUTELLA/<version> <code>` (reply),
//!   `GIV <index>:<servent id>/` (push). File transfers (`GET /uri-res/...`) are HTTP, as nDPI names them.
//! * UDP (Gnutella 0.6 and its Mojito DHT): the 23-byte message header with a payload length matching the datagram.
//! * UDP (Gnutella2): every datagram starts with `GND`, a flags byte (deflate / acknowledge-me bits only), a
//!   16-bit sequence number, a part number of at least 1 and a part count not below it.

use crate::scan::{Lit, lit_ci, starts_ci};
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// Whether `d` is a Gnutella2 UDP datagram header.
pub fn is_g2_udp(d: &[u8]) -> bool {
    // Flags: the low bits are deflate / acknowledge-me; clients set others too (0x10 in gnutella.pcap), so only
    // the part numbering is checked.
    d.len() >= 8 && d.starts_with(b"GND") && d[6] >= 1 && d[7] >= d[6]
}

/// Whether `d` is one Gnutella 0.6 message over UDP: a 16-byte GUID, a payload type (ping, pong, bye, vendor
/// messages, push, Mojito DHT 0x44, query, query hit), small TTL and hop counts, and a little-endian payload length
/// that accounts for the rest of the datagram exactly.
pub fn is_g1_udp(d: &[u8]) -> bool {
    let (Some(&ty), Some(&ttl), Some(&hops), Some(len)) =
        (d.get(16), d.get(17), d.get(18), crate::scan::le32(d, 19))
    else {
        return false;
    };
    matches!(
        ty,
        0x00 | 0x01 | 0x02 | 0x31 | 0x32 | 0x40 | 0x44 | 0x80 | 0x81
    ) && ttl <= 16
        && hops <= 16
        && u64::from(len) + 23 == d.len() as u64
}

/// Detector for Gnutella.
pub struct GnutellaDetector;

impl Detector for GnutellaDetector {
    fn proto(&self) -> AppProto {
        AppProto::Gnutella
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.transport {
            Transport::Icmp | Transport::Other(_) => Probe::NotForUs,
            Transport::Udp => {
                if is_g2_udp(ctx.data) || is_g1_udp(ctx.data) {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            Transport::Tcp => {
                let p = ctx.prefix;
                if starts_ci(p, b"GNUTELLA CONNECT/")
                    || p.starts_with(b"GNUTELLA/0.")
                    || p.starts_with(b"GIV ")
                {
                    return Probe::Certain;
                }

                let could = [&b"GNUTELLA CONNECT/"[..], b"GNUTELLA/", b"GIV "]
                    .iter()
                    .any(|l| lit_ci(p, l) == Lit::Maybe);
                if could {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    #[test]
    fn handshakes() {
        // gnutella.pcap
        let c = b"GNUTELLA CONNECT/0.6\r\nNode: 93.47.226.53:28681\r\n";
        assert_eq!(
            GnutellaDetector.probe(&ctx_tcp(Direction::ToServer, c)),
            Probe::Certain
        );
        assert_eq!(
            GnutellaDetector.probe(&ctx_tcp(Direction::ToServer, b"GNUT")),
            Probe::Unsure
        );
        assert_eq!(
            GnutellaDetector.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1\r\n")),
            Probe::NotForUs
        );
        let g2 = [
            0x47, 0x4e, 0x44, 0x10, 0x3e, 0x8f, 0x01, 0x01, 0x54, 0x0b, 0x51, 0x4b, 0x52, 0x50,
            0x06, 0x52, 0x4e, 0x41, 0x5d, 0x2f, 0xe2, 0x35, 0x09, 0x70,
        ];
        assert_eq!(
            GnutellaDetector.probe(&ctx_udp(Direction::ToServer, &g2, &[])),
            Probe::Certain
        );
        // gnutella.pcap, Mojito DHT over the Gnutella header (vendor GTKG).
        let mut mojito = vec![
            0xa7, 0x45, 0x31, 0x02, 0x89, 0x21, 0x3e, 0xe4, 0x7e, 0x64, 0x9b, 0xba, 0xc3, 0x02,
            0xeb, 0x3a, 0x44, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00,
        ];
        mojito.extend_from_slice(&[0x00, 0x00, 0x00, 0x05, 0x47, 0x54, 0x4b, 0x47, 0x00, 0x00]);
        assert_eq!(
            GnutellaDetector.probe(&ctx_udp(Direction::ToServer, &mojito, &[])),
            Probe::Certain
        );
        mojito.push(0);
        assert_eq!(
            GnutellaDetector.probe(&ctx_udp(Direction::ToServer, &mojito, &[])),
            Probe::NotForUs
        );
        let mut bad = g2;
        bad[6] = 0;
        assert_eq!(
            GnutellaDetector.probe(&ctx_udp(Direction::ToServer, &bad, &[])),
            Probe::NotForUs
        );
    }
}
