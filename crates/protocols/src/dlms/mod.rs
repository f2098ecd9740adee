//! DLMS/COSEM, the electricity meter protocol of IEC 62056: nDPI's `IEC62056`.
//!
//! Two framings carry its messages over IP. The HDLC profile (IEC 62056-46) wraps each frame in `7e` flags:
//! after the opening flag a 16-bit frame format whose top four bits are `0xA` and whose low 11 bits give the
//! frame's length without the flags, so the frame ends with a `7e` exactly that far on. The wrapper profile
//! (IEC 62056-47) prefixes each APDU with version 1, the source and destination wrapper ports and the APDU's
//! length. Either framing, with its lengths agreeing, is certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// The HDLC flag.
const FLAG: u8 = 0x7e;

/// Detector for DLMS/COSEM.
pub struct DlmsDetector;

/// An HDLC frame at the start of `d`: `Some(true)` when complete and well-formed, `Some(false)` while it may
/// still be, `None` when it is not one.
fn hdlc(d: &[u8]) -> Option<bool> {
    if d.first() != Some(&FLAG) {
        return None;
    }
    let Some(format) = be16(d, 1) else {
        return d.get(1).is_none_or(|b| b >> 4 == 0xa).then_some(false);
    };
    let len = usize::from(format & 0x07ff);
    if format >> 12 != 0xa || len < 7 {
        return None;
    }
    match d.get(len + 1) {
        Some(&FLAG) => Some(true),
        Some(_) => None,
        None => Some(false),
    }
}

/// A wrapper-framed APDU at the start of `d`, with the same answers as [`hdlc`].
fn wrapper(d: &[u8]) -> Option<bool> {
    let Some(len) = be16(d, 6) else {
        return d
            .get(..2.min(d.len()))
            .is_some_and(|v| b"\x00\x01".starts_with(v))
            .then_some(false);
    };
    if be16(d, 0) != Some(1) || len == 0 {
        return None;
    }
    // The APDU opens with an association request/response or a (ciphered) service PDU tag.
    match d.get(8) {
        Some(0x60..=0x63 | 0xc0..=0xc7 | 0xcb..=0xcf | 0xd0..=0xdf) => {
            Some(d.len() >= usize::from(len) + 8)
        }
        Some(_) => None,
        None => Some(false),
    }
}

impl Detector for DlmsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Iec62056
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[FLAG, 0])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = if ctx.transport == Transport::Tcp {
            ctx.prefix
        } else {
            ctx.data
        };
        match hdlc(d).or_else(|| wrapper(d)) {
            Some(true) => Probe::Certain,
            Some(false) if ctx.transport == Transport::Tcp && d.len() < 2048 => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    /// An SNRM frame: format A0 07, addresses 03 21, control 93, HCS, flags.
    const SNRM: [u8; 9] = [0x7e, 0xa0, 0x07, 0x03, 0x21, 0x93, 0x0f, 0x01, 0x7e];

    #[test]
    fn hdlc_frames() {
        let udp = |d: &[u8]| DlmsDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        let tcp = |d: &[u8]| DlmsDetector.probe(&ctx_tcp(Direction::ToServer, d));
        assert_eq!(udp(&SNRM), Probe::Certain);
        assert_eq!(tcp(&SNRM[..4]), Probe::Unsure);
        let mut bad = SNRM;
        bad[2] = 0x08;
        assert_eq!(udp(&bad), Probe::NotForUs, "the length must end on a flag");
        bad = SNRM;
        bad[1] = 0x30;
        assert_eq!(udp(&bad), Probe::NotForUs, "frame format type 3");
    }

    #[test]
    fn wrapped_apdus() {
        let tcp = |d: &[u8]| DlmsDetector.probe(&ctx_tcp(Direction::ToServer, d));
        // Version 1, client wPort 0x10, server wPort 1, an AARQ of 5 bytes.
        let aarq = [0, 1, 0, 0x10, 0, 1, 0, 5, 0x60, 0x03, 0xa1, 0x01, 0x00];
        assert_eq!(tcp(&aarq), Probe::Certain);
        assert_eq!(tcp(&aarq[..10]), Probe::Unsure);
        let mut v = aarq;
        v[8] = 0x42;
        assert_eq!(tcp(&v), Probe::NotForUs);
    }
}
