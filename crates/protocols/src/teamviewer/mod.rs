//! TeamViewer's TCP connections (port 5938, or tunnelled): nDPI's `TeamViewer`.
//!
//! TeamViewer frames its commands with the magic `17 24`, a command byte and a 16-bit little-endian length of
//! the payload that follows the five-byte header. A stream whose first frame ends exactly where the data ends or
//! where a second `17 24` frame starts is certain.

use crate::scan::le16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// The command framing's magic.
const MAGIC: [u8; 2] = [0x17, 0x24];
/// Magic, command, length.
const HEADER: usize = 5;

/// Detector for TeamViewer.
pub struct TeamViewerDetector;

impl Detector for TeamViewerDetector {
    fn proto(&self) -> AppProto {
        AppProto::TeamViewer
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[MAGIC[0]])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.transport != Transport::Tcp {
            return Probe::NotForUs;
        }
        let p = ctx.prefix;
        match Probe::magic(p, &MAGIC) {
            Probe::Certain => {}
            short_or_other => return short_or_other,
        }
        let Some(len) = le16(p, 3) else {
            return Probe::Unsure;
        };
        let end = HEADER + usize::from(len);
        match p.get(end..) {
            Some([]) => Probe::Certain,
            Some(rest) if rest.starts_with(&MAGIC) => Probe::Certain,
            Some(rest) if rest.len() < 2 && MAGIC.starts_with(rest) => Probe::Unsure,
            Some(_) => Probe::NotForUs,
            None if end <= 8192 => Probe::Unsure,
            None => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    fn frame(cmd: u8, body: &[u8]) -> Vec<u8> {
        let mut f = MAGIC.to_vec();
        f.push(cmd);
        f.extend_from_slice(&(body.len() as u16).to_le_bytes());
        f.extend_from_slice(body);
        f
    }

    #[test]
    fn framing() {
        let probe = |d: &[u8]| TeamViewerDetector.probe(&ctx_tcp(Direction::ToServer, d));
        let one = frame(0x0a, &[0; 32]);
        assert_eq!(probe(&one), Probe::Certain);
        let mut two = frame(0x28, &[1; 24]);
        two.extend_from_slice(&frame(0x3c, &[2; 32]));
        assert_eq!(probe(&two), Probe::Certain);
        assert_eq!(probe(&one[..20]), Probe::Unsure);
        let mut bad = one.clone();
        bad.extend_from_slice(b"xx");
        assert_eq!(
            probe(&bad),
            Probe::NotForUs,
            "the frame's length does not end the data"
        );
        assert_eq!(
            probe(b"\x17\x03\x03\x00\x20"),
            Probe::NotForUs,
            "TLS application data"
        );
    }
}
