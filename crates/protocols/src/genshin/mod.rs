//! miHoYo's game servers (Genshin Impact and later titles): nDPI's `GenshinImpact`.
//!
//! The game runs KCP over UDP and opens (and closes) each session with 20-byte handshake datagrams, five
//! big-endian 32-bit words: a magic, the conversation id, a token, the constant `1234567890` and a second magic.
//! The pairs are `0xff`/`0xffffffff` (connect), `0x145`/`0x14514545` (connect reply) and
//! `0x194`/`0x19419494` (disconnect). A 20-byte datagram with one of the pairs and the constant is certain.
//!
//! Over TCP the same servers frame messages with a 32-bit little-endian version 1, the message's length in the
//! fifth byte, a type and sequence bytes, then the session's eight-byte id at offset 10, which both sides repeat.
//! First messages from both sides whose lengths agree and that carry the same session id are certain.

use crate::scan::{be32, le32};
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// The handshake's length.
const HANDSHAKE: usize = 20;
/// The constant fourth word.
const CONSTANT: u32 = 1_234_567_890;
/// (first, last) magic words of the connect, connect-reply and disconnect handshakes.
const PAIRS: [(u32, u32); 3] = [
    (0xff, 0xffff_ffff),
    (0x145, 0x1451_4545),
    (0x194, 0x1941_9494),
];

/// Detector for miHoYo's handshakes.
pub struct GenshinDetector;

/// The session id of a TCP stream's first message, `Err(true)` while it may still come.
fn tcp_session(p: &[u8]) -> Result<&[u8], bool> {
    if p.len() < 18 {
        let head = [1u8, 0, 0, 0];
        return Err(head.starts_with(&p[..p.len().min(4)]));
    }
    let len = usize::from(p[4]);
    if le32(p, 0) != Some(1) || len < 18 {
        return Err(false);
    }
    if len > p.len() {
        return Err(true);
    }
    Ok(&p[10..18])
}

impl Detector for GenshinDetector {
    fn proto(&self) -> AppProto {
        AppProto::GenshinImpact
    }
    fn first_bytes(&self) -> ByteSet {
        // UDP handshakes start with a zero byte, TCP messages with version 1.
        ByteSet::bytes(&[0, 1])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.transport == Transport::Tcp {
            return match (tcp_session(ctx.prefix), tcp_session(ctx.peer)) {
                (Ok(a), Ok(b)) if a == b => Probe::Certain,
                (Ok(_), Err(true)) | (Err(true), _) => Probe::Unsure,
                _ => Probe::NotForUs,
            };
        }
        let d = ctx.data;
        let words = (be32(d, 0), be32(d, 12), be32(d, 16));
        let handshake = d.len() == HANDSHAKE
            && matches!(words, (Some(a), Some(CONSTANT), Some(b)) if PAIRS.contains(&(a, b)));
        if handshake {
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

    fn handshake(first: u32, conv: u32, token: u32, last: u32) -> Vec<u8> {
        [first, conv, token, CONSTANT, last]
            .iter()
            .flat_map(|w| w.to_be_bytes())
            .collect()
    }

    #[test]
    fn handshakes() {
        let probe = |d: &[u8]| GenshinDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(&handshake(0xff, 0, 0, 0xffff_ffff)), Probe::Certain);
        assert_eq!(
            probe(&handshake(0x145, 0x0003_1832, 0x3a0d_a215, 0x1451_4545)),
            Probe::Certain
        );
        assert_eq!(
            probe(&handshake(0xff, 0, 0, 0x1451_4545)),
            Probe::NotForUs,
            "mismatched magics"
        );
        let mut long = handshake(0xff, 0, 0, 0xffff_ffff);
        long.push(0);
        assert_eq!(probe(&long), Probe::NotForUs);
    }

    fn message(len: u8, kind: u8, seq: u8, session: &[u8; 8]) -> Vec<u8> {
        let mut m = vec![1, 0, 0, 0, len, kind, 0, 0, 0, seq];
        m.extend_from_slice(session);
        m.resize(usize::from(len), 0);
        m
    }

    #[test]
    fn tcp_sessions() {
        let session = [0xae, 0xc6, 0x75, 0xe1, 0, 0, 0x4d, 0xa6];
        let probe = |d: &[u8], peer: &[u8]| {
            GenshinDetector.probe(&crate::ProbeCtx {
                peer,
                ..crate::testkit::ctx_tcp(Direction::ToClient, d)
            })
        };
        let hello = message(42, 7, 0, &session);
        let reply = message(50, 8, 1, &session);
        assert_eq!(probe(&hello, &[]), Probe::Unsure);
        assert_eq!(probe(&reply, &hello), Probe::Certain);
        assert_eq!(
            probe(&reply, &message(42, 7, 0, &[1; 8])),
            Probe::NotForUs,
            "another session"
        );
        assert_eq!(
            probe(&reply[..40], &hello),
            Probe::Unsure,
            "the reply is not complete yet"
        );
    }
}
