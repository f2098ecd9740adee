//! TiVo Connect discovery beacons (UDP and TCP 2190): nDPI's `TiVoConnect`.
//!
//! TiVo devices announce themselves with text beacons of `key=value` lines that start with `tivoconnect=`
//! (then `swversion=`, `method=`, `identity=`, `machine=`, `platform=`, `services=`). That first key is certain.

use crate::scan::starts_ci;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for nDPI's `TivoConnect`.
pub struct TivoConnectDetector;

impl Detector for TivoConnectDetector {
    fn proto(&self) -> AppProto {
        AppProto::TivoConnect
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"tT")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let want: &[u8] = b"tivoconnect=";
        if d.len() < want.len() {
            return if ctx.transport == Transport::Tcp && d.eq_ignore_ascii_case(&want[..d.len()]) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        if starts_ci(d, want) {
            Probe::Certain
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    fn probe_udp(d: &[u8]) -> Probe {
        TivoConnectDetector.probe(&ctx_udp(Direction::ToServer, d, &[]))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(
            probe_udp(b"TiVoConnect=1\nswversion=1.0\nmethod=broadcast\n"),
            Probe::Certain
        );
        assert_eq!(probe_udp(b"TiVo=1\n"), Probe::NotForUs);
    }
}
