//! Tuya smart-device LAN protocol (UDP 6666/6667 broadcasts, TCP 6668): nDPI's `TuyaLP`.
//!
//! A frame is a 16-byte header starting with the prefix `00 00 55 aa` (sequence, command, length of the rest)
//! and ends with the suffix `00 00 aa 55`; the length field counts the bytes after the header. Prefix, suffix and
//! length together are certain.

use crate::scan::be32;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for TuyaLP.
pub struct TuyaLpDetector;

impl Detector for TuyaLpDetector {
    fn proto(&self) -> AppProto {
        AppProto::TuyaLp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let ok = d.starts_with(&[0x00, 0x00, 0x55, 0xaa])
            && d.ends_with(&[0x00, 0x00, 0xaa, 0x55])
            && be32(d, 12).is_some_and(|l| u64::from(l) + 16 == d.len() as u64);
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    #[allow(non_upper_case_globals)]
    const Det: TuyaLpDetector = TuyaLpDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut d = vec![0, 0, 0x55, 0xaa, 0, 0, 0, 0, 0, 0, 0, 0x13, 0, 0, 0, 0];
        d.extend_from_slice(&[0x11; 20]);
        d.extend_from_slice(&[0, 0, 0xaa, 0x55]);
        d[15] = (d.len() - 16) as u8;
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        d.insert(20, 0);
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::NotForUs
        );
    }
}
