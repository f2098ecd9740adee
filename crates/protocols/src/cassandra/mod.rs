//! Apache Cassandra's CQL native protocol (TCP 9042): nDPI's `Cassandra`.
//!
//! From the CQL binary protocol specifications (v3 to v5): every frame starts with a 9-byte header, the version
//! (`0x03`..`0x05` for requests, with the high bit set for responses), flags, a 16-bit stream id, the opcode and a
//! 32-bit body length. A connection opens with the client's `OPTIONS` (0x05) or `STARTUP` (0x01); a first
//! request of that kind whose length is what the segment holds, or a first response (`ERROR`, `READY`,
//! `AUTHENTICATE`, `SUPPORTED`) of the same shape, is certain.

use crate::scan::be32;
use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

const HEADER: usize = 9;

/// Detector for Cassandra.
pub struct CassandraDetector;

impl Detector for CassandraDetector {
    fn proto(&self) -> AppProto {
        AppProto::Cassandra
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x03, 0x04, 0x05, 0x83, 0x84, 0x85])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let Some(len) = be32(d, 5) else {
            return Probe::Unsure;
        };
        let (version, flags, opcode) = (d[0], d[1], d[4]);
        let opening = match ctx.dir {
            Direction::ToServer => matches!(version, 3..=5) && matches!(opcode, 0x01 | 0x05),
            Direction::ToClient => {
                matches!(version, 0x83..=0x85) && matches!(opcode, 0x00 | 0x02 | 0x03 | 0x06)
            }
        };
        if !opening || flags > 0x1f || len > 1 << 20 {
            return Probe::NotForUs;
        }
        let whole = HEADER + len as usize;
        if d.len() == whole {
            Probe::Certain
        } else if d.len() < whole {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    #[test]
    fn options_and_supported() {
        let options = [0x04, 0, 0, 0, 0x05, 0, 0, 0, 0];
        assert_eq!(
            CassandraDetector.probe(&ctx_tcp(Direction::ToServer, &options)),
            Probe::Certain
        );
        let mut supported = vec![0x84, 0, 0, 0, 0x06, 0, 0, 0, 4];
        supported.extend_from_slice(&[0, 1, 0, 0]);
        assert_eq!(
            CassandraDetector.probe(&ctx_tcp(Direction::ToClient, &supported)),
            Probe::Certain
        );
        assert_eq!(
            CassandraDetector.probe(&ctx_tcp(Direction::ToClient, &supported[..11])),
            Probe::Unsure
        );
        let query = [0x04, 0, 0, 0, 0x07, 0, 0, 0, 0];
        assert_eq!(
            CassandraDetector.probe(&ctx_tcp(Direction::ToServer, &query)),
            Probe::NotForUs
        );
    }
}
