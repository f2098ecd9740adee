//! Dropbox LAN Sync Discovery (UDP 17500 broadcasts): nDPI's `Dropbox`.
//!
//! The Dropbox client announces itself on the local network with one JSON object per datagram (Wireshark's
//! `db-lsp-disc`): `{"host_int": N, "version": [M, m], "displayname": "...", "port": 17500, "namespaces": [...]}`.
//! A datagram that is a JSON object carrying both the `host_int` and `namespaces` keys is certain; the port is not
//! needed (nor trusted: other protocols are seen on 17500).

use crate::scan::find;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for Dropbox LAN sync discovery.
pub struct DropboxDetector;

impl Detector for DropboxDetector {
    fn proto(&self) -> AppProto {
        AppProto::Dropbox
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"{")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        let object = d.first() == Some(&b'{')
            && d.iter().rev().find(|b| !b.is_ascii_whitespace()) == Some(&b'}');
        if object && find(d, b"\"host_int\"").is_some() && find(d, b"\"namespaces\"").is_some() {
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
    fn recognises_an_announcement() {
        let a = br#"{"version": [2, 0], "port": 17500, "host_int": 123456789, "displayname": "", "namespaces": [1, 2]}"#;
        let probe = |d: &[u8]| DropboxDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        assert_eq!(probe(a), Probe::Certain);
        assert_eq!(
            probe(br#"{"messageType":"UPDATE","host_int":1}"#),
            Probe::NotForUs
        );
        assert_eq!(probe(&a[..a.len() - 1]), Probe::NotForUs);
        assert_eq!(probe(b""), Probe::NotForUs);
    }
}
