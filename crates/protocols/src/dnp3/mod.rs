//! DNP3 (IEEE 1815) over TCP: nDPI's `DNP3`.
//!
//! Every link-layer frame starts with `05 64`, a length (at least 5), a control byte, 16-bit destination and
//! source addresses, and a CRC-16/DNP over those eight header bytes. The CRC makes one header certain.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// CRC-16/DNP (poly 0x3D65 reflected as 0xA6BC, init 0, final complement), as DNP3 link headers carry it.
pub fn crc_dnp(d: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in d {
        crc ^= u16::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xa6bc
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Judges a DNP3 link header at the start of `d`.
fn header(d: &[u8]) -> Probe {
    let want = [0x05, 0x64];
    let n = d.len().min(2);
    if d[..n] != want[..n] {
        return Probe::NotForUs;
    }
    let Some(h) = d.get(..10) else {
        return Probe::Unsure;
    };
    if h[2] < 5 {
        return Probe::NotForUs;
    }
    let crc = u16::from_le_bytes([h[8], h[9]]);
    if crc == crc_dnp(&h[..8]) {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// Detector for DNP3.
pub struct Dnp3Detector;

impl Detector for Dnp3Detector {
    fn proto(&self) -> AppProto {
        AppProto::Dnp3
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        header(ctx.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[test]
    fn link_header_crc() {
        let mut h = vec![0x05, 0x64, 0x05, 0xc9, 0x01, 0x00, 0x00, 0x04];
        let crc = crc_dnp(&h);
        h.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(
            Dnp3Detector.probe(&ctx_tcp(Direction::ToServer, &h)),
            Probe::Certain
        );
        h[9] ^= 1;
        assert_eq!(
            Dnp3Detector.probe(&ctx_tcp(Direction::ToServer, &h)),
            Probe::NotForUs
        );
        assert_eq!(
            Dnp3Detector.probe(&ctx_tcp(Direction::ToServer, &h[..4])),
            Probe::Unsure
        );
        // Known vector: CRC-16/DNP of "123456789" is 0xEA82.
        assert_eq!(crc_dnp(b"123456789"), 0xea82);
    }
}
