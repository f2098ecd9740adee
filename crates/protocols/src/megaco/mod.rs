//! Megaco / H.248 (ITU-T H.248.1, text encoding, Annex B): nDPI's `Megaco`.
//!
//! A text-encoded message starts with its protocol token and version, `MEGACO/1` or the compact `!/1`, followed
//! by whitespace and the sender's message id (a `[address]`, `<domain name>`, device or MTP name). The token, a
//! version number and the opening of the message id are certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for Megaco.
pub struct MegacoDetector;

/// Judges the start of a text-encoded H.248 message.
fn text_message(d: &[u8]) -> Probe {
    let rest = if let Some(r) = d.strip_prefix(b"MEGACO/") {
        r
    } else if let Some(r) = d.strip_prefix(b"!/") {
        r
    } else if b"MEGACO/".starts_with(d) || b"!/".starts_with(d) {
        return Probe::Unsure;
    } else {
        return Probe::NotForUs;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 2 {
        return if rest.is_empty() {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    }
    let after = &rest[digits..];
    let spaces = after
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .count();
    match after.get(spaces) {
        _ if spaces == 0 && !after.is_empty() => Probe::NotForUs,
        Some(b'[' | b'<' | b'$') => Probe::Certain,
        Some(b) if b.is_ascii_alphabetic() => Probe::Certain,
        Some(_) => Probe::NotForUs,
        None => Probe::Unsure,
    }
}

impl Detector for MegacoDetector {
    fn proto(&self) -> AppProto {
        AppProto::Megaco
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"M!")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match ctx.transport {
            Transport::Tcp => text_message(ctx.prefix),
            _ => match text_message(ctx.data) {
                Probe::Unsure => Probe::NotForUs,
                p => p,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    #[test]
    fn text_encoding() {
        let udp = |d: &[u8]| MegacoDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(
            udp(b"MEGACO/1 [10.0.0.1]:2944\nTransaction = 9998 {Context = - {ServiceChange = ROOT {}}}"),
            Probe::Certain
        );
        assert_eq!(
            udp(b"!/1 <iMSS>\nT=5552{C=-{AV=DS/1/5{AT{M}}}}"),
            Probe::Certain
        );
        assert_eq!(udp(b"!/1"), Probe::NotForUs, "a datagram is whole");
        assert_eq!(
            MegacoDetector.probe(&ctx_tcp(Direction::ToServer, b"MEGA")),
            Probe::Unsure
        );
        assert_eq!(udp(b"!/x <a>"), Probe::NotForUs);
        assert_eq!(
            udp(b"!/1<a>"),
            Probe::NotForUs,
            "the message id follows whitespace"
        );
        assert_eq!(udp(b"MEGAPHONE"), Probe::NotForUs);
    }
}
