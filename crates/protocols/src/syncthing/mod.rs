//! Syncthing local discovery (UDP 21027 broadcasts): nDPI's `Syncthing`.
//!
//! Announcements start with the 32-bit magic `0x2EA7D90B` (v2; `0x7D79BC40` was v1) followed by a protobuf
//! message. The magic is certain.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Syncthing.
pub struct SyncthingDetector;

impl Detector for SyncthingDetector {
    fn proto(&self) -> AppProto {
        AppProto::Syncthing
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let ok = d.len() > 8
            && (d.starts_with(&[0x2e, 0xa7, 0xd9, 0x0b])
                || d.starts_with(&[0x7d, 0x79, 0xbc, 0x40]));
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    #[allow(non_upper_case_globals)]
    const Det: SyncthingDetector = SyncthingDetector;

    #[test]
    fn recognises_real_shapes() {
        let d = [0x2e, 0xa7, 0xd9, 0x0b, 0x0a, 0x20, 0x92, 0xb7, 0x62, 0x62];
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&ctx_udp(Direction::ToServer, &d[..4], &[])),
            Probe::NotForUs
        );
    }
}
