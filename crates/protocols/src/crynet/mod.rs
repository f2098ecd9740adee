//! Crytek's CryEngine multiplayer network (CryNetwork): nDPI's `CryNetwork`.
//!
//! A client joins a CryEngine server with a connect datagram whose first byte is its length minus ten, followed
//! by two zero bytes, and whose protocol fields read 1 (32-bit little-endian at offset 16), 7 (at offset 20) and
//! the version bytes `03 07` at offset 24. A datagram with that length byte and those fields is certain.

use crate::scan::le32;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for CryNetwork.
pub struct CryNetDetector;

impl Detector for CryNetDetector {
    fn proto(&self) -> AppProto {
        AppProto::CryNetwork
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let length_ok = d.first().is_some_and(|&n| usize::from(n) + 10 == d.len());
        let fields = d.get(1..3) == Some(&[0, 0][..])
            && le32(d, 16) == Some(1)
            && le32(d, 20) == Some(7)
            && d.get(24..26) == Some(&[3, 7][..]);
        if d.len() >= 26 && length_ok && fields {
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

    #[test]
    fn connect() {
        let mut d = vec![0u8; 70];
        d[0] = 60;
        d[3] = 0x0b;
        d[4] = 0xf6;
        d[16] = 1;
        d[20] = 7;
        d[24] = 3;
        d[25] = 7;
        let probe = |d: &[u8]| CryNetDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(&d), Probe::Certain);
        d[0] = 61;
        assert_eq!(probe(&d), Probe::NotForUs, "length byte disagrees");
        d[0] = 60;
        d[20] = 8;
        assert_eq!(probe(&d), Probe::NotForUs);
    }
}
