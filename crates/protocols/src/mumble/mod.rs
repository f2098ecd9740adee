//! Mumble voice chat: nDPI's `Mumble`.
//!
//! Mumble's control channel is TLS; its UDP side starts, before any voice, with the server list ping (Mumble's
//! protocol documentation, "UDP ping"): the client sends 12 bytes, a zero 32-bit request type and a 64-bit
//! identifier; the server answers 24 bytes: its version (`00 major minor patch`), the same identifier, then the
//! user count, the user limit and the allowed bandwidth. An answer that echoes the request's identifier is
//! certain; a request alone waits for it.

use crate::scan::be32;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for Mumble's UDP ping.
pub struct MumbleDetector;

/// Whether `d` is a ping request.
fn request(d: &[u8]) -> bool {
    d.len() == 12 && be32(d, 0) == Some(0)
}

/// Whether `d` is a ping answer to `req`.
fn answer(d: &[u8], req: &[u8]) -> bool {
    d.len() == 24 && d.first() == Some(&0) && request(req) && d.get(4..12) == req.get(4..12)
}

impl Detector for MumbleDetector {
    fn proto(&self) -> AppProto {
        AppProto::Mumble
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.transport != Transport::Udp {
            return Probe::NotForUs;
        }
        let d = ctx.data;
        if answer(d, ctx.peer) || answer(ctx.peer, d) {
            Probe::Certain
        } else if request(d) && ctx.dir_index < 3 {
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
    fn ping_and_answer() {
        let req = [0, 0, 0, 0, 0x03, 0xd7, 0x20, 0, 0xfa, 0x76, 0x28, 0x7e];
        let mut ans = vec![0, 1, 3, 4];
        ans.extend_from_slice(&req[4..]);
        ans.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0x64, 0, 1, 0x19, 0x40]);
        let probe = |d: &[u8], peer: &[u8]| {
            MumbleDetector.probe(&ProbeCtx {
                peer,
                ..ctx_udp(Direction::ToServer, d, &[])
            })
        };
        assert_eq!(probe(&req, &[]), Probe::Unsure);
        assert_eq!(probe(&ans, &req), Probe::Certain);
        let mut other = ans.clone();
        other[5] ^= 1;
        assert_eq!(
            probe(&other, &req),
            Probe::NotForUs,
            "the identifier is not echoed"
        );
    }
}
