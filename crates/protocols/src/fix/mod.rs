//! The FIX financial messaging protocol (tag=value over TCP): nDPI's `FIX`.
//!
//! Every message starts with `8=` (BeginString), then SOH (0x01), `9=` (BodyLength) and, after another SOH,
//! `35=` (MsgType). The three tags in that order within the first bytes are certain.

use crate::scan::find;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for FIX.
pub struct FixDetector;

impl Detector for FixDetector {
    fn proto(&self) -> AppProto {
        AppProto::Fix
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        if !p.starts_with(b"8=") {
            return if p.len() < 2 && p.first().is_none_or(|&b| b == b'8') {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        let head = &p[..p.len().min(64)];
        let body_len = find(head, b"\x019=");
        let msg_type = find(head, b"\x0135=");
        match (body_len, msg_type) {
            (Some(a), Some(b)) if a < b && head[2..a].iter().all(|c| c.is_ascii_graphic()) => {
                Probe::Certain
            }
            _ if p.len() < 64 => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[allow(non_upper_case_globals)]
    const Det: FixDetector = FixDetector;

    #[test]
    fn recognises_real_shapes() {
        // fix.pcap: BeginString "O", BodyLength 75, MsgType G.
        let d = b"8=O\x019=0075\x0135=G\x01\x02\x20\x00\x00";
        assert_eq!(Det.probe(&ctx_tcp(Direction::ToServer, d)), Probe::Certain);
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToServer, b"8=FIX.4.2\x01")),
            Probe::Unsure
        );
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1\r\n")),
            Probe::NotForUs
        );
    }
}
