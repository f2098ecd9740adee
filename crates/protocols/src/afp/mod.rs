//! AFP, the Apple Filing Protocol, over its TCP session layer DSI: nDPI's `AFP`.
//!
//! Every DSI message has a 16-byte header (Apple's "AFP over TCP" reference, the Data Stream Interface): a flags
//! byte (0 request, 1 reply), a command (1 CloseSession, 2 Command, 3 GetStatus, 4 OpenSession, 5 Tickle, 6 Write,
//! 8 Attention), a 16-bit request id, an error code or write offset, the length of the data that follows, and four
//! reserved zero bytes. A session opens with OpenSession (or a client asks GetStatus first); such a request whose
//! reserved bytes are zero and whose data length is what follows in the segment is certain, as is a reply that
//! repeats the command and request id of the request the other side sent.

use crate::scan::{be16, be32};
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

const GET_STATUS: u8 = 3;
const OPEN_SESSION: u8 = 4;

/// `(flags, command, request id)` of a DSI header at the start of `d` whose reserved bytes are zero and whose data
/// `d` holds exactly.
fn header(d: &[u8]) -> Option<(u8, u8, u16)> {
    let (&flags, &cmd, id, len, reserved) = (
        d.first()?,
        d.get(1)?,
        be16(d, 2)?,
        be32(d, 8)?,
        be32(d, 12)?,
    );
    let exact = usize::try_from(len).ok()?.checked_add(16) == Some(d.len());
    (flags <= 1 && (1..=8).contains(&cmd) && cmd != 7 && reserved == 0 && exact)
        .then_some((flags, cmd, id))
}

/// Detector for AFP.
pub struct AfpDetector;

impl Detector for AfpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Afp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0, 1])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if d.len() < 16 {
            return if d.first().is_some_and(|&f| f <= 1) && ctx.dir_index < 2 {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        match header(d) {
            Some((0, GET_STATUS | OPEN_SESSION, _)) => Probe::Certain,
            Some((1, cmd, id)) if header(ctx.peer) == Some((0, cmd, id)) => Probe::Certain,
            Some((1, _, _)) if ctx.peer.is_empty() => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;
    use crate::{Direction, ProbeCtx};

    fn dsi(flags: u8, cmd: u8, id: u16, data: &[u8]) -> Vec<u8> {
        let mut d = vec![flags, cmd];
        d.extend_from_slice(&id.to_be_bytes());
        d.extend_from_slice(&[0; 4]);
        d.extend_from_slice(&(data.len() as u32).to_be_bytes());
        d.extend_from_slice(&[0; 4]);
        d.extend_from_slice(data);
        d
    }

    fn probe(d: &[u8], peer: &[u8]) -> Probe {
        AfpDetector.probe(&ProbeCtx {
            peer,
            ..ctx_tcp(Direction::ToServer, d)
        })
    }

    #[test]
    fn open_session_and_its_reply() {
        // OpenSession with the attention-quantum option (type 1, length 4).
        let open = dsi(0, OPEN_SESSION, 1, &[1, 4, 0, 0, 4, 0]);
        assert_eq!(probe(&open, &[]), Probe::Certain);
        assert_eq!(probe(&dsi(0, GET_STATUS, 1, &[]), &[]), Probe::Certain);
        let reply = dsi(1, OPEN_SESSION, 1, &[0, 4, 0, 0, 4, 0]);
        assert_eq!(probe(&reply, &open), Probe::Certain);
        assert_eq!(probe(&reply, &[]), Probe::Unsure);
        assert_eq!(
            probe(&dsi(1, OPEN_SESSION, 2, &[]), &open),
            Probe::NotForUs,
            "another request id"
        );
        let mut reserved = open.clone();
        reserved[15] = 1;
        assert_eq!(probe(&reserved, &[]), Probe::NotForUs);
        let mut long = open.clone();
        long.push(0);
        assert_eq!(
            probe(&long, &[]),
            Probe::NotForUs,
            "the length must be what follows"
        );
    }
}
