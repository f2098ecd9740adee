//! Xiaomi's push and cloud connection (MiPush, TCP 5222): nDPI's `Xiaomi`.
//!
//! Every message is framed by a 12-byte header: the magic `c2 fe`, a 16-bit version, a 32-bit big-endian length
//! of the body, and four more header bytes; the body follows (a protobuf message naming the `xiaomi.com` realm in
//! the opening exchange, encrypted after it). A first message whose magic and length account exactly for the
//! bytes that arrived, or for a whole message and the start of the next one, is certain.

use crate::scan::be32;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// The frame's magic.
const MAGIC: [u8; 2] = [0xc2, 0xfe];
/// Magic, version, length, and the rest of the header.
const HEADER: usize = 12;
/// The largest body a first message is believed to carry.
const MAX_BODY: usize = 1 << 16;

/// Detector for Xiaomi.
pub struct XiaomiDetector;

impl Detector for XiaomiDetector {
    fn proto(&self) -> AppProto {
        AppProto::Xiaomi
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
        // The version is a small number (5 in today's clients).
        if p.get(2).is_some_and(|&v| v != 0) {
            return Probe::NotForUs;
        }
        let Some(len) = be32(p, 4) else {
            return Probe::Unsure;
        };
        let len = len as usize;
        if len > MAX_BODY {
            return Probe::NotForUs;
        }
        let end = HEADER + len;
        match p.get(end..) {
            Some([]) => Probe::Certain,
            Some(rest) if MAGIC.starts_with(&rest[..rest.len().min(2)]) => Probe::Certain,
            Some(_) => Probe::NotForUs,
            None => Probe::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    fn message(body: &[u8]) -> Vec<u8> {
        let mut m = MAGIC.to_vec();
        m.extend_from_slice(&[0, 5]);
        m.extend_from_slice(&(body.len() as u32).to_be_bytes());
        m.extend_from_slice(&[0, 2, 0, 0x16]);
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn framing() {
        let probe = |d: &[u8]| XiaomiDetector.probe(&ctx_tcp(Direction::ToServer, d));
        let hello = message(b"\x08\x00\x1a\x0axiaomi.com*\x04CONN");
        assert_eq!(probe(&hello), Probe::Certain);
        let mut two = hello.clone();
        two.extend_from_slice(&message(&[7; 40]));
        assert_eq!(probe(&two), Probe::Certain);
        assert_eq!(
            probe(&hello[..20]),
            Probe::Unsure,
            "the body still arriving"
        );
        let mut long = hello.clone();
        long.extend_from_slice(b"xyz");
        assert_eq!(
            probe(&long),
            Probe::NotForUs,
            "the length does not end the message"
        );
        let mut big = hello.clone();
        big[2] = 1;
        assert_eq!(probe(&big), Probe::NotForUs, "not a small version");
        assert_eq!(probe(b"\x16\x03\x01\x00\x10"), Probe::NotForUs);
    }
}
