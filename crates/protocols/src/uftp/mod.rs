//! UFTP, the encrypted multicast file transfer protocol (uftp 4.x and 5.x): nDPI's `UFTP`.
//!
//! Every message starts with a 16-byte header: the protocol id (`0x40` for version 4, `0x50` for version 5), the
//! message function (1 ANNOUNCE, 2 REGISTER, ... 17 PROXY_KEY, 80 ENCRYPTED, 99 ABORT, 100/101 congestion
//! control), a sequence number, the sender and group ids, the group instance, the round-trip time and group size
//! codes and a reserved zero byte. Each message body repeats the function as its first byte. Header, reserved
//! byte and the repeated function are certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Header length.
const HEADER: usize = 16;

/// Detector for UFTP.
pub struct UftpDetector;

impl Detector for UftpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Uftp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x40, 0x50])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let func = d.get(1).copied();
        let known = matches!(func, Some(1..=17 | 80 | 99..=101));
        let version = matches!(d.first(), Some(0x40 | 0x50));
        if version && known && d.get(15) == Some(&0) && d.get(HEADER).copied() == func {
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
    fn header_and_body() {
        let probe = |d: &[u8]| UftpDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        // An ANNOUNCE from 10.0.0.1 to group 0x96f4c304.
        let mut a = vec![
            0x40, 1, 0, 0, 10, 0, 0, 1, 0x96, 0xf4, 0xc3, 0x04, 0, 0x9d, 0, 0,
        ];
        a.extend_from_slice(&[1, 6, 0, 20, 0, 0, 5, 20]);
        assert_eq!(probe(&a), Probe::Certain);
        a[0] = 0x50;
        assert_eq!(probe(&a), Probe::Certain, "version 5");
        a[HEADER] = 2;
        assert_eq!(probe(&a), Probe::NotForUs, "body names another function");
        a[HEADER] = 1;
        a[15] = 1;
        assert_eq!(probe(&a), Probe::NotForUs, "reserved byte");
    }
}
