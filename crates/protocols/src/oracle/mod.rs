//! Oracle's Transparent Network Substrate (TNS; TCP 1521): nDPI's `Oracle`.
//!
//! Every TNS packet starts with an 8-byte header: packet length, packet checksum (zero in practice), packet type
//! and a reserved byte, header checksum (zero). A connection opens with a CONNECT packet (type 1) whose body
//! begins with the client's TNS version (300..=319) and the lowest version it accepts. That header is certain.

use crate::scan::be16;
use crate::{AppProto, Detector, Direction, Probe, ProbeCtx};

/// Detector for nDPI's `Oracle`.
pub struct OracleTnsDetector;

impl Detector for OracleTnsDetector {
    fn proto(&self) -> AppProto {
        AppProto::Oracle
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if ctx.dir != Direction::ToServer {
            return Probe::NotForUs;
        }
        if d.len() < 12 {
            return if d.get(2..4).is_none_or(|c| c.iter().all(|&b| b == 0))
                && d.get(4).is_none_or(|&t| t == 1)
            {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        let header = be16(d, 0).is_some_and(|l| l >= 34)
            && d[2..4] == [0, 0]
            && d[4] == 1
            && d[6..8] == [0, 0];
        let versions = matches!((be16(d, 8), be16(d, 10)), (Some(v), Some(lo)) if (300..=319).contains(&v) && (300..=v).contains(&lo));
        if header && versions {
            Probe::Certain
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        OracleTnsDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        let mut connect = vec![0x00, 0xd4, 0, 0, 0x01, 0, 0, 0, 0x01, 0x3b, 0x01, 0x2c];
        connect.resize(0xd4, 0);
        assert_eq!(probe_tcp(&connect), Probe::Certain);
        assert_eq!(probe_tcp(&connect[..6]), Probe::Unsure);
        connect[9] = 0xff;
        assert_eq!(probe_tcp(&connect), Probe::NotForUs);
    }
}
