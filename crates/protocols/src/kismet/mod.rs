//! The Kismet wireless monitor's client/server protocol: nDPI's `Kismet`.
//!
//! A Kismet server greets each client with text lines of the form `*NAME: fields`; the first one is
//! `*KISMET: <version> <start time> ...`. The eight bytes `*KISMET:` at the start of the server's stream are
//! certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for Kismet.
pub struct KismetDetector;

impl Detector for KismetDetector {
    fn proto(&self) -> AppProto {
        AppProto::Kismet
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"*!")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match Probe::magic(ctx.prefix, b"*KISMET: ") {
            // A client's first line is a command (`!1 ENABLE ...`): wait for the server's greeting.
            Probe::NotForUs if ctx.prefix.first() == Some(&b'!') => Probe::Unsure,
            p => p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[test]
    fn greeting() {
        let probe = |d: &[u8]| KismetDetector.probe(&ctx_tcp(Direction::ToClient, d));
        assert_eq!(
            probe(b"*KISMET: 0.0.0 1144004381 \x01Kismet\x01 1 0 0\n"),
            Probe::Certain
        );
        assert_eq!(probe(b"*KIS"), Probe::Unsure);
        assert_eq!(probe(b"!1 ENABLE NETWORK bssid\n"), Probe::Unsure);
        assert_eq!(probe(b"*TIME: 1144004385\n"), Probe::NotForUs);
    }
}
