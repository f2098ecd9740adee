//! Epic Games' Unreal Engine game servers (Fortnite and other Unreal titles): nDPI's `EpicGames`.
//!
//! Unreal Engine's stateless connection handshake (`StatelessConnectHandlerComponent`) starts with a handshake
//! packet from the client whose 24-byte cookie is still zero; the server answers with a challenge that repeats the
//! first 32-bit word of the request with bit 3 (`0x08`) set and fills the cookie. A request of that shape (at least
//! 34 bytes, bit 3 clear, zero cookie at offsets 10-33) answered by a datagram starting with the same word plus the
//! bit is certain.

use crate::scan::be32;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Unreal Engine's handshake.
pub struct EpicGamesDetector;

/// Whether `d` is a handshake request: its first word, if so.
fn request(d: &[u8]) -> Option<u32> {
    let word = be32(d, 0)?;
    (d.len() >= 34 && word & 0x08 == 0 && d.get(10..34)?.iter().all(|&b| b == 0)).then_some(word)
}

impl Detector for EpicGamesDetector {
    fn proto(&self) -> AppProto {
        AppProto::EpicGames
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let answered = |req: &[u8], ans: &[u8]| {
            request(req).is_some_and(|w| be32(ans, 0) == Some(w | 0x08) && ans.len() > 4)
        };
        if answered(ctx.peer, d) || answered(d, ctx.peer) {
            Probe::Certain
        } else if request(d).is_some() && ctx.payload_index < 4 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_udp;
    use crate::{Direction, ProbeCtx};

    #[test]
    fn handshake_and_challenge() {
        let mut req = vec![0x47, 0x1a, 0x20, 0x00, 0x08, 0x98, 0x22, 0x65, 0x74, 0x04];
        req.extend_from_slice(&[0; 24]);
        req.extend_from_slice(&[0; 20]);
        let mut challenge = vec![0x47, 0x1a, 0x20, 0x08, 0x08, 0x98, 0x22, 0x65, 0x74, 0x04];
        challenge.extend_from_slice(&[0x40, 0x62, 0x29, 0xfc, 0xaa, 0x0d, 0x0e, 0x84]);
        let probe = |d: &[u8], peer: &[u8]| {
            EpicGamesDetector.probe(&ProbeCtx {
                peer,
                ..ctx_udp(Direction::ToClient, d, &[])
            })
        };
        assert_eq!(probe(&req, &[]), Probe::Unsure);
        assert_eq!(probe(&challenge, &req), Probe::Certain);
        let mut wrong = challenge.clone();
        wrong[3] = 0x00;
        assert_eq!(probe(&wrong, &req), Probe::NotForUs, "bit 3 not set");
        let mut cookie = req.clone();
        cookie[20] = 1;
        assert_eq!(
            probe(&challenge, &cookie),
            Probe::NotForUs,
            "the request's cookie is not zero"
        );
    }
}
