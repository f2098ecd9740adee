//! IAX2, the Inter-Asterisk eXchange protocol (RFC 5456): nDPI's `IAX`.
//!
//! A full frame (RFC 5456 section 8.1.1) has a 12-byte header: the F bit set with the 15-bit source call number,
//! the R bit with the destination call number, a 32-bit timestamp, the outbound and inbound sequence numbers, the
//! frame type (1 to 12) and the subclass. IAX control frames (type 6: NEW, PING, POKE, REGREQ, ...; subclasses
//! 1 to 0x22) carry information elements, each a type, a length and that many bytes, which must fill the rest of
//! the datagram exactly.
//!
//! * On IAX's port (4569, either end) one such control frame is certain, as in nDPI.
//! * Elsewhere the other direction must answer it: a full frame addressed to the sender's call number (its
//!   destination call number is this frame's source) and itself well formed.
//!
//! Mini frames (voice with a 16-bit timestamp) carry too little structure to name a flow on their own.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// IAX's UDP port.
const PORT: u16 = 4569;
/// The IAX control frame type.
const IAX_CONTROL: u8 = 6;

/// A full frame's `(source call, destination call, frame type)`, when `d` is a well-formed one: a known frame type
/// and, for IAX control frames, a known subclass and information elements that fill the datagram.
fn full_frame(d: &[u8]) -> Option<(u16, u16, u8)> {
    let src = be16(d, 0)?;
    let dst = be16(d, 2)? & 0x7fff;
    let (&ty, &sub) = (d.get(10)?, d.get(11)?);
    if src & 0x8000 == 0 || src & 0x7fff == 0 || !(1..=12).contains(&ty) {
        return None;
    }
    if ty == IAX_CONTROL {
        if sub & 0x80 != 0 || !(1..=0x22).contains(&sub) {
            return None;
        }
        let mut ies = &d[12..];
        while !ies.is_empty() {
            let len = usize::from(*ies.get(1)?);
            ies = ies.get(2 + len..)?;
        }
    }
    Some((src & 0x7fff, dst, ty))
}

/// Detector for IAX2.
pub struct IaxDetector;

impl Detector for IaxDetector {
    fn proto(&self) -> AppProto {
        AppProto::Iax
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let Some((src, _, ty)) = full_frame(ctx.data) else {
            return Probe::NotForUs;
        };
        if ctx.either_port_is(PORT) && ty == IAX_CONTROL {
            return Probe::Certain;
        }
        let answered = |a: &[u8], b: &[u8]| matches!((full_frame(a), full_frame(b)), (Some((_, dst, _)), Some((s, _, t))) if dst == s && t == IAX_CONTROL);
        if answered(ctx.data, ctx.peer) || answered(ctx.peer, ctx.data) {
            Probe::Certain
        } else if ctx.peer.is_empty() && src != 0 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_ports;
    use crate::{Direction, ProbeCtx, Transport};

    /// A full frame from call `src` to call `dst`, type and subclass, then `ies`.
    fn frame(src: u16, dst: u16, ty: u8, sub: u8, ies: &[u8]) -> Vec<u8> {
        let mut d = (0x8000 | src).to_be_bytes().to_vec();
        d.extend_from_slice(&dst.to_be_bytes());
        d.extend_from_slice(&[0, 0, 0, 3, 0, 0, ty, sub]);
        d.extend_from_slice(ies);
        d
    }

    /// NEW with VERSION (IE 0x0b = 2) and CALLED NUMBER (IE 0x01 = "100").
    fn new_call() -> Vec<u8> {
        frame(
            0x0123,
            0,
            IAX_CONTROL,
            0x01,
            &[0x0b, 2, 0, 2, 0x01, 3, b'1', b'0', b'0'],
        )
    }

    fn probe(d: &[u8], peer: &[u8], ports: (u16, u16)) -> Probe {
        IaxDetector.probe(&ProbeCtx {
            peer,
            ..ctx_ports(Transport::Udp, Direction::ToServer, d, ports.0, ports.1)
        })
    }

    #[test]
    fn control_frames_on_its_port() {
        assert_eq!(probe(&new_call(), &[], (4566, 4569)), Probe::Certain);
        let mut cut = new_call();
        cut.pop();
        assert_eq!(
            probe(&cut, &[], (4566, 4569)),
            Probe::NotForUs,
            "an element cut short"
        );
        assert_eq!(
            probe(&frame(0x0123, 0, IAX_CONTROL, 0x40, &[]), &[], (4566, 4569)),
            Probe::NotForUs,
            "no such subclass"
        );
        assert_eq!(
            probe(&frame(0, 0, IAX_CONTROL, 2, &[]), &[], (4566, 4569)),
            Probe::NotForUs
        );
    }

    #[test]
    fn elsewhere_an_answer_to_the_call() {
        let ports = (40000, 5000);
        assert_eq!(probe(&new_call(), &[], ports), Probe::Unsure);
        // ACCEPT from call 0x0456 back to call 0x0123.
        let accept = frame(0x0456, 0x0123, IAX_CONTROL, 0x07, &[0x09, 4, 0, 0, 0, 4]);
        assert_eq!(probe(&accept, &new_call(), ports), Probe::Certain);
        let stray = frame(0x0456, 0x0777, IAX_CONTROL, 0x07, &[]);
        assert_eq!(probe(&stray, &new_call(), ports), Probe::NotForUs);
    }
}
