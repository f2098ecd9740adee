//! DRDA, the Distributed Relational Database Architecture of IBM Db2 and Apache Derby: nDPI's `DRDA`.
//!
//! Requests and replies travel as data stream structures (DSS): a 16-bit length, the magic byte `0xD0`, a format
//! byte (its low nibble the DSS type 1-5, its high bits chaining flags), a 16-bit correlation id, then a DDM
//! command whose own 16-bit length is the DSS's minus the six header bytes, and its code point. A first DSS whose
//! two lengths agree is certain.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// DSS header length.
const HEADER: usize = 6;

/// Detector for DRDA.
pub struct DrdaDetector;

impl Detector for DrdaDetector {
    fn proto(&self) -> AppProto {
        AppProto::Drda
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        let (Some(len), Some(ddm)) = (be16(p, 0), be16(p, 6)) else {
            return match (p.get(2), p.get(3)) {
                (None | Some(0xd0), None) => Probe::Unsure,
                (Some(0xd0), Some(f)) if (1..=5).contains(&(f & 0x0f)) => Probe::Unsure,
                _ => Probe::NotForUs,
            };
        };
        let format_ok =
            p.get(2) == Some(&0xd0) && p.get(3).is_some_and(|f| (1..=5).contains(&(f & 0x0f)));
        if format_ok
            && usize::from(len) >= HEADER + 4
            && usize::from(ddm) + HEADER == usize::from(len)
        {
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
    use crate::testkit::ctx_tcp;

    #[test]
    fn dss_header() {
        let probe = |d: &[u8]| DrdaDetector.probe(&ctx_tcp(Direction::ToServer, d));
        // EXCSAT (code point 0x1041) with one 8-byte parameter, in a request DSS chained to the next.
        let mut d = vec![0, 0, 0xd0, 0x41, 0, 1, 0, 0, 0x10, 0x41];
        d.extend_from_slice(&[0, 8, 0x11, 0x5e, b'a', b'b', b'c', b'd']);
        let n = d.len() as u16;
        d[..2].copy_from_slice(&n.to_be_bytes());
        d[6..8].copy_from_slice(&(n - 6).to_be_bytes());
        assert_eq!(probe(&d), Probe::Certain);
        assert_eq!(probe(&d[..4]), Probe::Unsure);
        let mut v = d.clone();
        v[7] ^= 1;
        assert_eq!(probe(&v), Probe::NotForUs, "lengths disagree");
        v = d.clone();
        v[3] = 0x49;
        assert_eq!(probe(&v), Probe::NotForUs, "DSS type 9");
    }
}
