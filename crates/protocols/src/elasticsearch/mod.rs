//! Elasticsearch's node-to-node transport protocol (TCP 9300): nDPI's `Elasticsearch`.
//!
//! Every message starts with the marker `ES` and a 32-bit big-endian length of what follows; the first message of
//! a connection fills its segment exactly (a ping has length 0xffffffff and nothing after it).

use crate::scan::be32;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Elasticsearch.
pub struct ElasticsearchDetector;

impl Detector for ElasticsearchDetector {
    fn proto(&self) -> AppProto {
        AppProto::Elasticsearch
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        if !p.starts_with(b"ES") {
            return if p.len() < 2 && p.first().is_none_or(|&b| b == b'E') {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        match be32(p, 2) {
            Some(0xffff_ffff) if p.len() == 6 => Probe::Certain,
            Some(l) if u64::from(l) + 6 == ctx.data.len() as u64 && l >= 8 => Probe::Certain,
            Some(_) => Probe::NotForUs,
            None => Probe::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;

    #[allow(non_upper_case_globals)]
    const Det: ElasticsearchDetector = ElasticsearchDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut m = vec![0x45, 0x53, 0, 0, 0, 0x34];
        m.extend_from_slice(&[0u8; 0x34]);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &m)),
            Probe::Certain
        );
        m.push(1);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &m)),
            Probe::NotForUs
        );
    }
}
