//! NTP (RFC 5905, and the v2/v3 control and private modes): `NTP` in nDPI.
//!
//! NTP has no magic number; what identifies it is the port (123 on at least one side, as nDPI requires) together
//! with a header that makes sense: version 1..=4, a mode that matches the packet's length (48 bytes plus optional
//! extension fields and MAC for modes 1..=5, a 12-byte control header for mode 6, the `ntpdc` private format for
//! mode 7), and a stratum of at most 16. One datagram is enough.

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for NTP over UDP.
pub struct NtpDetector;

/// Whether `d` is a well-formed NTP header of any mode.
pub fn is_ntp(d: &[u8]) -> bool {
    let Some(&b0) = d.first() else { return false };
    let version = (b0 >> 3) & 0x07;
    let mode = b0 & 0x07;
    if !(1..=4).contains(&version) {
        return false;
    }
    match mode {
        1..=5 => {
            // Header 48 bytes; v4 may add extension fields and a MAC (key id + 16/20-byte digest).
            d.len() >= 48
                && d.get(1).is_some_and(|&stratum| stratum <= 16)
                && (d.len() - 48).is_multiple_of(4)
                && d.len() <= 48 + 1024
        }
        6 => {
            // Control message: 12-byte header, `count` data bytes (padded to 4), optional authenticator.
            let Some(count) = be16(d, 10) else {
                return false;
            };
            d.len() >= 12
                && usize::from(count) + 12 <= d.len()
                && d.get(1).is_some_and(|&op| op & 0x1f != 0)
        }
        7 => d.len() >= 8,
        _ => false,
    }
}

impl Detector for NtpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Ntp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.either_port_is(123) && is_ntp(ctx.data) {
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
    use crate::Transport;
    use crate::testkit::ctx_ports;

    #[test]
    fn client_request() {
        // NTPv4 client request (mode 3), as in NTPv4.pcap: LI 0, version 4, mode 3, then zeros and a transmit time.
        let mut d = vec![0u8; 48];
        d[0] = 0x23;
        d[2] = 6;
        d[3] = 0xec;
        d[40..48].copy_from_slice(&[0xe1, 0x3e, 0x5a, 0x3c, 0x12, 0x34, 0x56, 0x78]);
        assert_eq!(
            NtpDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &d,
                40000,
                123
            )),
            Probe::Certain
        );
        assert_eq!(
            NtpDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &d,
                40000,
                5000
            )),
            Probe::NotForUs
        );
        d[0] = 0x3b; // version 7
        assert_eq!(
            NtpDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &d,
                40000,
                123
            )),
            Probe::NotForUs
        );
        assert_eq!(
            NtpDetector.probe(&ctx_ports(
                Transport::Udp,
                Direction::ToServer,
                &d[..20],
                40000,
                123
            )),
            Probe::NotForUs
        );
    }
}
