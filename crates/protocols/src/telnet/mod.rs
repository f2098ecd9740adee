//! Telnet (RFC 854; TCP 23): nDPI's `Telnet`.
//!
//! A Telnet session opens with option negotiation: `IAC` (`0xFF`) followed by `WILL`, `WONT`, `DO` or `DONT`
//! (`0xFB`..`0xFE`) and an option code, or a subnegotiation `IAC SB`. A segment that starts with two such
//! commands (or is one whole command) is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `Telnet`.
pub struct TelnetDetector;

impl Detector for TelnetDetector {
    fn proto(&self) -> AppProto {
        AppProto::Telnet
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0xff])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let cmd = |i: usize| match (d.get(i), d.get(i + 1), d.get(i + 2)) {
            (Some(0xff), Some(0xfb..=0xfe), Some(_)) => Some(3),
            (Some(0xff), Some(0xfa), Some(_)) => Some(3),
            _ => None,
        };
        match cmd(0) {
            Some(n) if d.len() == n || cmd(n).is_some() => Probe::Certain,
            _ if d.len() < 3 && d.first().is_none_or(|&b| b == 0xff) => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        TelnetDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(
            probe_tcp(&[0xff, 0xfd, 0x03, 0xff, 0xfb, 0x18]),
            Probe::Certain
        );
        assert_eq!(probe_tcp(&[0xff, 0xfd, 0x25]), Probe::Certain);
        assert_eq!(probe_tcp(&[0xff, 0xfd, 0x25, 0x41]), Probe::NotForUs);
        assert_eq!(probe_tcp(&[0xff, 0x10, 0x25]), Probe::NotForUs);
    }
}
