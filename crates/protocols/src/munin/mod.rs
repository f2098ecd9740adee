//! Munin node protocol (TCP 4949): nDPI's `Munin`.
//!
//! The node greets with `# munin node at <hostname>\n`: a fixed text prefix, certain.

use crate::scan::{Lit, lit_ci};
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Munin.
pub struct MuninDetector;

impl Detector for MuninDetector {
    fn proto(&self) -> AppProto {
        AppProto::Munin
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match lit_ci(ctx.prefix, b"# munin node at ") {
            Lit::Yes => Probe::Certain,
            Lit::Maybe => Probe::Unsure,
            Lit::No => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[allow(non_upper_case_globals)]
    const Det: MuninDetector = MuninDetector;

    #[test]
    fn recognises_real_shapes() {
        assert_eq!(
            Det.probe(&ctx_tcp(
                Direction::ToClient,
                b"# munin node at kibana-node01\n"
            )),
            Probe::Certain
        );
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToClient, b"# mun")),
            Probe::Unsure
        );
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToClient, b"#!/bin/sh")),
            Probe::NotForUs
        );
    }
}
