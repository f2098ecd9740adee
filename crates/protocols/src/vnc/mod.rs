//! VNC's remote framebuffer protocol (RFC 6143): nDPI's `VNC`.
//!
//! The handshake opens with the ProtocolVersion message (RFC 6143 section 7.1.1): the server sends exactly twelve
//! bytes `RFB xxx.yyy\n` (three-digit major and minor versions, `RFB 003.008\n` today), and the client answers with
//! the version it picked in the same form. Either message is certain, on any port (servers listen on 5900 + the
//! display number, and on whatever a user configured).

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Whether `d` is, or starts like, a ProtocolVersion message: `Some(true)` complete, `Some(false)` a prefix of one.
fn version(d: &[u8]) -> Option<bool> {
    let shape = |i: usize, b: u8| match i {
        0..=3 => b == b"RFB "[i],
        7 => b == b'.',
        11 => b == b'\n',
        _ => b.is_ascii_digit(),
    };
    if d.iter().take(12).enumerate().all(|(i, &b)| shape(i, b)) {
        Some(d.len() >= 12)
    } else {
        None
    }
}

/// Detector for VNC.
pub struct VncDetector;

impl Detector for VncDetector {
    fn proto(&self) -> AppProto {
        AppProto::Vnc
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"R")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match version(ctx.prefix) {
            // The message travels alone: nothing may follow it before the other side answers.
            Some(true) if ctx.prefix.len() == 12 => Probe::Certain,
            Some(false) => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    fn probe(d: &[u8]) -> Probe {
        VncDetector.probe(&ctx_tcp(Direction::ToClient, d))
    }

    #[test]
    fn protocol_version_messages() {
        assert_eq!(probe(b"RFB 003.008\n"), Probe::Certain);
        assert_eq!(probe(b"RFB 003.003\n"), Probe::Certain);
        assert_eq!(probe(b"RFB 00"), Probe::Unsure);
        assert_eq!(probe(b"RFB 3.8\n"), Probe::NotForUs);
        assert_eq!(probe(b"RFB 003.008\r\n"), Probe::NotForUs);
        assert_eq!(probe(b"RFB 003.008\nxyz"), Probe::NotForUs);
        assert_eq!(probe(b"RFC 003.008\n"), Probe::NotForUs);
    }
}
