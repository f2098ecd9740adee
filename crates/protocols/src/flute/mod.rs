//! FLUTE, file delivery over unidirectional transport (RFC 6726) on ALC/LCT (RFC 5775, RFC 5651): nDPI's
//! `FLUTE`.
//!
//! Every packet starts with an LCT header: version 1 in the top four bits, the congestion control and
//! transport/object id field sizes in the flag bits, the header's length in 32-bit words and a codepoint, then
//! the fixed fields and the header extensions up to that length. FLUTE announces its file delivery table in
//! packets of object 0 that carry the `EXT_FDT` extension (type 192) with FLUTE version 1 or 2. A header whose
//! extensions add up and include `EXT_FDT` is certain; other well-formed LCT packets wait for one.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// The FDT extension's header extension type.
const EXT_FDT: u8 = 192;

/// Detector for FLUTE.
pub struct FluteDetector;

/// Parses an LCT header: `Some(true)` when it carries `EXT_FDT`, `Some(false)` when well-formed without it.
fn lct(d: &[u8]) -> Option<bool> {
    let (b0, b1) = (*d.first()?, *d.get(1)?);
    if b0 >> 4 != 1 {
        return None;
    }
    let hdr_len = usize::from(*d.get(2)?) * 4;
    let c = usize::from((b0 >> 2) & 3);
    let (s, o, h) = (
        usize::from(b1 >> 7),
        usize::from((b1 >> 5) & 3),
        usize::from((b1 >> 4) & 1),
    );
    // CCI is 32 (C+1) bits; TSI 32 S + 16 H bits; TOI 32 O + 16 H bits.
    let fixed = 4 + 4 * (c + 1) + (4 * s + 2 * h) + (4 * o + 2 * h);
    if hdr_len < fixed || hdr_len > d.len() || c == 3 {
        return None;
    }
    let mut at = fixed;
    let mut fdt = false;
    while at < hdr_len {
        let het = *d.get(at)?;
        let len = if het <= 127 {
            usize::from(*d.get(at + 1)?) * 4
        } else {
            4
        };
        if len == 0 {
            return None;
        }
        if het == EXT_FDT {
            // The FLUTE version is the top four bits after the type.
            fdt = matches!(d.get(at + 1).map(|b| b >> 4), Some(1 | 2));
            if !fdt {
                return None;
            }
        }
        at += len;
    }
    (at == hdr_len).then_some(fdt)
}

impl Detector for FluteDetector {
    fn proto(&self) -> AppProto {
        AppProto::Flute
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::ranges(&[(0x10, 0x1f)])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match lct(ctx.data) {
            Some(true) => Probe::Certain,
            Some(false) => Probe::Unsure,
            None => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    /// An FDT packet: half-word TSI and TOI (H), EXT_FDT (version 1, instance 2), EXT_FTI of 16 bytes.
    fn fdt_packet() -> Vec<u8> {
        let mut p = vec![0x10, 0x10, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        p.extend_from_slice(&[EXT_FDT, 0x10, 0x00, 0x02]);
        p.extend_from_slice(&[64, 4, 0, 0, 0, 0, 2, 0x36, 0, 0, 5, 0x9c, 0, 0, 0, 0x40]);
        p.extend_from_slice(b"<?xml version=\"1.0\"?><FDT-Instance/>");
        p
    }

    #[test]
    fn lct_headers() {
        let probe = |d: &[u8]| FluteDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        let fdt = fdt_packet();
        assert_eq!(probe(&fdt), Probe::Certain);
        // A data packet of object 1: no extension.
        let data = [
            0x10, 0x10, 3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, b'H', b'i',
        ];
        assert_eq!(probe(&data), Probe::Unsure);
        let mut v = fdt.clone();
        v[2] = 9;
        assert_eq!(
            probe(&v),
            Probe::NotForUs,
            "extensions do not fill the header"
        );
        v = fdt.clone();
        v[13] = 0x30;
        assert_eq!(probe(&v), Probe::NotForUs, "FLUTE version 3");
    }
}
