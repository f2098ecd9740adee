//! Tailscale's discovery messages (disco): nDPI's `Tailscale`.
//!
//! Peers find a path to each other with UDP datagrams that open with the six-byte magic `TS` followed by the
//! UTF-8 speech balloon (`54 53 f0 9f 92 ac`), then the sender's 32-byte disco key and a 24-byte nonce (the
//! sealed message follows). The magic and the minimum length are certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// The disco magic: "TS💬".
const MAGIC: &[u8] = "TS\u{1f4ac}".as_bytes();
/// Magic, key and nonce.
const HEADER: usize = 6 + 32 + 24;

/// Detector for Tailscale.
pub struct TailscaleDetector;

impl Detector for TailscaleDetector {
    fn proto(&self) -> AppProto {
        AppProto::Tailscale
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"T")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if d.starts_with(MAGIC) && d.len() > HEADER {
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
    fn disco_magic() {
        assert_eq!(MAGIC, &[0x54, 0x53, 0xf0, 0x9f, 0x92, 0xac]);
        let mut d = MAGIC.to_vec();
        d.extend_from_slice(&[7; 32 + 24 + 30]);
        let probe = |d: &[u8]| TailscaleDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(&d), Probe::Certain);
        assert_eq!(probe(&d[..HEADER]), Probe::NotForUs, "no sealed message");
        assert_eq!(
            probe(b"TSxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
            Probe::NotForUs
        );
    }
}
