//! FastCGI, between web servers and application servers (TCP 9000 by convention): nDPI's `FastCGI`.
//!
//! From the FastCGI specification: every record starts with version 1, a record type, a 16-bit request id, a
//! 16-bit content length, a padding length and a reserved byte. A connection's first record is
//! `FCGI_BEGIN_REQUEST` (type 1) with an 8-byte body whose role is 1 (responder), 2 (authorizer) or 3 (filter), or
//! `FCGI_GET_VALUES` (type 9). Such a first record is certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Detector for nDPI's `FastCgi`.
pub struct FastCgiDetector;

impl Detector for FastCgiDetector {
    fn proto(&self) -> AppProto {
        AppProto::FastCgi
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[1])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if ctx.dir != Direction::ToServer {
            return Probe::NotForUs;
        }
        if d.len() < 10 {
            return if d.first() == Some(&1) && d.get(1).is_none_or(|&t| t == 1 || t == 9) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        let (ty, content, reserved) = (d[1], be16(d, 4), d[7]);
        let begin = ty == 1 && content == Some(8) && matches!(be16(d, 8), Some(1..=3));
        let values = ty == 9 && be16(d, 2) == Some(0);
        if d[0] == 1 && reserved == 0 && (begin || values) {
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
        FastCgiDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        let begin = [1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        assert_eq!(probe_tcp(&begin), Probe::Certain);
        assert_eq!(probe_tcp(&begin[..5]), Probe::Unsure);
        let mut bad = begin;
        bad[9] = 7;
        assert_eq!(probe_tcp(&bad), Probe::NotForUs);
    }
}
