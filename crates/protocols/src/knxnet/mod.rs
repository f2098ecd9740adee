//! KNXnet/IP, building automation over IP (UDP and TCP 3671): nDPI's `KNXnet_IP`.
//!
//! Every frame starts with a 6-byte header: header length `06`, protocol version `10` (1.0), a service type
//! (core 0x02xx, device management 0x03xx, tunnelling 0x04xx, routing 0x05xx, remote 0x06xx-0x07xx, secure
//! 0x09xx) and the total length. A header whose total length is the datagram's (UDP) or fits the stream (TCP) is
//! certain.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for nDPI's `KnxNetIp`.
pub struct KnxNetIpDetector;

impl Detector for KnxNetIpDetector {
    fn proto(&self) -> AppProto {
        AppProto::KnxNetIp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x06])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let (Some(&[hl, ver]), Some(service), Some(total)) = (
            d.get(..2).map(|h| [h[0], h[1]]).as_ref(),
            be16(d, 2),
            be16(d, 4),
        ) else {
            return if ctx.transport == Transport::Tcp && d.first().is_none_or(|&b| b == 0x06) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let service_ok = matches!(service >> 8, 0x02..=0x07 | 0x09) && service & 0xff != 0xff;
        let total = usize::from(total);
        let fits = match ctx.transport {
            Transport::Udp => total == d.len(),
            _ => total >= 6,
        };
        if hl == 0x06 && ver == 0x10 && service_ok && fits {
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
    use crate::testkit::{ctx_tcp, ctx_udp};

    fn probe_tcp(d: &[u8]) -> Probe {
        KnxNetIpDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    fn probe_udp(d: &[u8]) -> Probe {
        KnxNetIpDetector.probe(&ctx_udp(Direction::ToServer, d, &[]))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        // A search request: header, then a 8-byte HPAI.
        let search = [
            0x06, 0x10, 0x02, 0x01, 0x00, 0x0e, 0x08, 0x01, 192, 0, 2, 1, 0x0e, 0x57,
        ];
        assert_eq!(probe_udp(&search), Probe::Certain);
        assert_eq!(probe_udp(&search[..13]), Probe::NotForUs);
        let mut bad = search;
        bad[1] = 0x20;
        assert_eq!(probe_udp(&bad), Probe::NotForUs);
        assert_eq!(probe_tcp(&search[..3]), Probe::Unsure);
    }
}
