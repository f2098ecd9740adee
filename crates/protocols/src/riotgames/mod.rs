//! Riot Games' game servers (League of Legends, Valorant): nDPI's `RiotGames`.
//!
//! Riot's UDP connection messages end with a fixed eight-byte trailer, `aa aa aa aa bb bb bb bb`, after the
//! connection ids and the payload. A datagram of at least 16 bytes with that trailer is certain. A server also
//! answers a connection request by opening its datagram with the request's second 32-bit word (the connection id
//! the client proposed) followed by a zero or one word; that echo, for a request of at least 16 bytes, is certain.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// The connection messages' trailer.
const TRAILER: [u8; 8] = [0xaa, 0xaa, 0xaa, 0xaa, 0xbb, 0xbb, 0xbb, 0xbb];

/// Detector for Riot Games.
pub struct RiotGamesDetector;

/// Whether `answer` opens with `request`'s proposed connection id and a zero or one word.
fn echoes(answer: &[u8], request: &[u8]) -> bool {
    request.len() >= 16
        && answer.len() >= 16
        && answer.get(..4) == request.get(4..8)
        && matches!(answer.get(4..8), Some([0 | 1, 0, 0, 0]))
        && request.get(4..8) != Some(&[0, 0, 0, 0][..])
}

impl Detector for RiotGamesDetector {
    fn proto(&self) -> AppProto {
        AppProto::RiotGames
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if d.len() >= 16 && d.ends_with(&TRAILER) || echoes(d, ctx.peer) {
            Probe::Certain
        } else if ctx.peer.is_empty() && d.len() >= 16 && ctx.dir_index < 4 {
            // A connection request waits for its answer.
            Probe::Unsure
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

    #[test]
    fn trailer() {
        let mut d = vec![
            0x1e, 0x32, 0xfd, 0x15, 0, 0, 0, 0, 0xab, 0x59, 0x7f, 0x81, 0x1f, 0xcc,
        ];
        d.extend_from_slice(&[
            0x17, 0x16, 0x1d, 0xb1, 0, 0, 0x52, 0xf8, 0x62, 0xa7, 0x29, 0, 0, 0,
        ]);
        d.extend_from_slice(&TRAILER);
        let probe = |d: &[u8]| RiotGamesDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(&d), Probe::Certain);
        assert_eq!(
            probe(&TRAILER),
            Probe::NotForUs,
            "nothing before the trailer"
        );
        d.push(0);
        assert_eq!(
            probe(&d),
            Probe::Unsure,
            "no trailer: a request, perhaps, waiting for its answer"
        );
    }

    #[test]
    fn answer_echoes_the_proposed_id() {
        let mut req = vec![0xcd, 0xc6, 0xfb, 0x40, 0xfc, 0x32, 0xf9, 0x03, 0x01];
        req.extend_from_slice(&[0; 40]);
        let mut ans = vec![0xfc, 0x32, 0xf9, 0x03, 0x01, 0, 0, 0];
        ans.extend_from_slice(&[0xbc, 0x17, 0x02, 0xfc, 0x39, 0x0c, 0x2a, 0x77, 0xfc, 0xf2]);
        let probe = |d: &[u8], peer: &[u8]| {
            RiotGamesDetector.probe(&crate::ProbeCtx {
                peer,
                ..ctx_udp(Direction::ToClient, d, &[])
            })
        };
        assert_eq!(probe(&ans, &req), Probe::Certain);
        assert_eq!(probe(&req, &[]), Probe::Unsure);
        ans[2] ^= 1;
        assert_eq!(probe(&ans, &req), Probe::NotForUs);
    }
}
