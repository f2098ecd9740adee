//! SSDP (UPnP discovery, HTTP over UDP multicast): nDPI's `SSDP`.
//!
//! Requests are `M-SEARCH * HTTP/1.1` and `NOTIFY * HTTP/1.1`; unicast answers to an M-SEARCH are
//! `HTTP/1.1 200 OK` datagrams that carry the discovery headers `ST:` or `USN:`. All are one datagram.

use crate::scan::{find_ci, starts_ci};
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Whether one datagram is SSDP.
pub fn is_ssdp(d: &[u8]) -> bool {
    if starts_ci(d, b"M-SEARCH * HTTP/1.") || starts_ci(d, b"NOTIFY * HTTP/1.") {
        return true;
    }
    starts_ci(d, b"HTTP/1.1 200 OK\r\n")
        && (find_ci(d, b"\r\nST:").is_some() || find_ci(d, b"\r\nUSN:").is_some())
}

/// Detector for SSDP.
pub struct SsdpDetector;

impl Detector for SsdpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Ssdp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if is_ssdp(ctx.data) {
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
    fn search_and_answer() {
        let m = b"M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: urn:dial-multiscreen-org:service:dial:1\r\n\r\n";
        assert_eq!(
            SsdpDetector.probe(&ctx_udp(Direction::ToServer, m, &[])),
            Probe::Certain
        );
        let r = b"HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=1800\r\nST: upnp:rootdevice\r\nUSN: uuid:1::upnp:rootdevice\r\n\r\n";
        assert_eq!(
            SsdpDetector.probe(&ctx_udp(Direction::ToClient, r, &[])),
            Probe::Certain
        );
        assert_eq!(
            SsdpDetector.probe(&ctx_udp(
                Direction::ToClient,
                b"HTTP/1.1 200 OK\r\n\r\n",
                &[]
            )),
            Probe::NotForUs
        );
    }
}
