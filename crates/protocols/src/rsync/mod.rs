//! The rsync daemon protocol (TCP 873): nDPI's `RSYNC`.
//!
//! Both ends open with a greeting line `@RSYNCD: ` followed by the protocol version (`@RSYNCD: 31.0`). That
//! greeting is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for nDPI's `Rsync`.
pub struct RsyncDetector;

impl Detector for RsyncDetector {
    fn proto(&self) -> AppProto {
        AppProto::Rsync
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"@")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let want: &[u8] = b"@RSYNCD: ";
        if d.len() < want.len() {
            return if want.starts_with(d) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        if d.starts_with(want) && d.get(want.len()).is_some_and(u8::is_ascii_digit) {
            Probe::Certain
        } else if d.len() == want.len() && d == want {
            Probe::Unsure
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

    fn probe_tcp(d: &[u8]) -> Probe {
        RsyncDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(probe_tcp(b"@RSYNCD: 31.0\n"), Probe::Certain);
        assert_eq!(probe_tcp(b"@RSY"), Probe::Unsure);
        assert_eq!(probe_tcp(b"@RSYNCD: x"), Probe::NotForUs);
    }
}
