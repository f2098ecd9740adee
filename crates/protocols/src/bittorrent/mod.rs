//! BitTorrent: the peer wire handshake (TCP), the Mainline DHT (bencoded KRPC over UDP), uTP (BEP 29) and the UDP
//! tracker protocol (BEP 15). nDPI names all of them `BitTorrent`.
//!
//! * Peer wire: `0x13` then `BitTorrent protocol` (BEP 3): 20 fixed bytes.
//! * DHT: a bencoded dictionary whose keys include `1:y` with a one-letter message type and `1:t` (transaction id),
//!   e.g. `d1:ad2:id20:...e1:q4:ping1:t2:aa1:y1:qe`.
//! * UDP tracker: the connect request's 64-bit protocol id `0x41727101980`.
//! * uTP: a 20-byte header, version 1, type 0..=4, known extension; one header is weak, so a uTP packet counts
//!   only with the previous datagram of its direction on the same connection id, or as a 20-byte SYN.

use crate::scan::{Lit, be16, find, lit_ci};
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

const HANDSHAKE: &[u8] = b"\x13BitTorrent protocol";

/// Whether `d` is a bencoded KRPC (DHT) message.
pub fn is_dht(d: &[u8]) -> bool {
    if !d.starts_with(b"d") || !d.ends_with(b"e") || d.len() < 12 {
        return false;
    }
    let typed = find(d, b"1:y1:q").is_some()
        || find(d, b"1:y1:r").is_some()
        || find(d, b"1:y1:e").is_some();
    typed || d.starts_with(b"d1:ad2:id20:") || d.starts_with(b"d1:rd2:id20:")
}

/// uTP header: `(type, connection id, timestamp, seq_nr)`.
fn utp(d: &[u8]) -> Option<(u8, u16, u32, u16)> {
    let b0 = *d.first()?;
    let (ty, ver) = (b0 >> 4, b0 & 0x0f);
    let ext = *d.get(1)?;
    if ver != 1 || ty > 4 || ext > 4 || d.len() < 20 {
        return None;
    }
    // Window size (bytes 12..16) of 0 only appears in RESET/FIN corner cases; keep it simple.
    Some((ty, be16(d, 2)?, crate::scan::be32(d, 4)?, be16(d, 16)?))
}

/// Detector for BitTorrent.
pub struct BitTorrentDetector;

impl Detector for BitTorrentDetector {
    fn proto(&self) -> AppProto {
        AppProto::BitTorrent
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.transport {
            Transport::Icmp | Transport::Other(_) => Probe::NotForUs,
            Transport::Tcp => match lit_ci(ctx.prefix, HANDSHAKE) {
                Lit::Yes if ctx.prefix.starts_with(HANDSHAKE) => Probe::Certain,
                Lit::Maybe => Probe::Unsure,
                _ => Probe::NotForUs,
            },
            Transport::Udp => {
                let d = ctx.data;
                if is_dht(d) {
                    return Probe::Certain;
                }
                if d.len() == 16
                    && d.starts_with(&[0, 0, 0x04, 0x17, 0x27, 0x10, 0x19, 0x80, 0, 0, 0, 0])
                {
                    return Probe::Certain;
                }
                match (utp(d), utp(ctx.prev)) {
                    (Some((4, ..)), _) if d.len() == 20 => Probe::Certain,
                    // Same connection, time moving forward (< 10 s), data sequence advancing by one.
                    (Some((ty, a, ts, seq)), Some((pty, b, pts, pseq)))
                        if a == b
                            && ts.wrapping_sub(pts) < 10_000_000
                            && ts != pts
                            && (seq == pseq.wrapping_add(1)
                                || (ty == 2 && pty == 2 && seq == pseq)) =>
                    {
                        Probe::Certain
                    }
                    (Some(_), _) if ctx.dir_index < 4 => Probe::Unsure,
                    _ => Probe::NotForUs,
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
    fn handshake_and_dht() {
        let mut hs = HANDSHAKE.to_vec();
        hs.extend_from_slice(&[0u8; 8]);
        assert_eq!(
            BitTorrentDetector.probe(&ctx_tcp(Direction::ToServer, &hs)),
            Probe::Certain
        );
        assert_eq!(
            BitTorrentDetector.probe(&ctx_tcp(Direction::ToServer, &hs[..5])),
            Probe::Unsure
        );
        assert_eq!(
            BitTorrentDetector.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1")),
            Probe::NotForUs
        );
        let ping = b"d1:ad2:id20:abcdefghij0123456789e1:q4:ping1:t2:aa1:y1:qe";
        assert_eq!(
            BitTorrentDetector.probe(&ctx_udp(Direction::ToServer, ping, &[])),
            Probe::Certain
        );
        assert_eq!(
            BitTorrentDetector.probe(&ctx_udp(Direction::ToServer, b"d8:announce3:xyze", &[])),
            Probe::NotForUs
        );
    }

    #[test]
    fn utp_syn_and_data() {
        let mut syn = vec![0x41, 0x00, 0x30, 0x39];
        syn.extend_from_slice(&[0u8; 16]);
        assert_eq!(
            BitTorrentDetector.probe(&ctx_udp(Direction::ToServer, &syn, &[])),
            Probe::Certain
        );
        let mut data = vec![0x01, 0x00, 0x30, 0x3a, 0, 0, 0x10, 0];
        data.extend_from_slice(&[7u8; 8]);
        data.extend_from_slice(&[0x00, 0x05, 0x00, 0x01]);
        data.extend_from_slice(&[9u8; 20]);
        let mut next = data.clone();
        next[6] = 0x20;
        next[17] = 0x06;
        assert_eq!(
            BitTorrentDetector.probe(&ctx_udp(Direction::ToServer, &data, &[])),
            Probe::Unsure
        );
        assert_eq!(
            BitTorrentDetector.probe(&ctx_udp(Direction::ToServer, &next, &data)),
            Probe::Certain
        );
        // The same datagram twice (RakNet retries in roblox.pcapng look like this) is no progress.
        assert_eq!(
            BitTorrentDetector.probe(&ctx_udp(Direction::ToServer, &data, &data)),
            Probe::Unsure
        );
    }
}
