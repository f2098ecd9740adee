//! Beckhoff's Automation Device Specification over AMS/TCP (and AMS/UDP): nDPI's `BeckhoffADS`.
//!
//! An AMS/TCP packet starts with two reserved zero bytes and the 32-bit little-endian length of the AMS packet
//! that follows. The AMS header is 32 bytes: target and source AMS Net ids and ports, a command id (1-9: read
//! device info, read, write, read state, write control, add/delete notification, notification, read-write), state
//! flags (bit 2 set: an ADS command) and the length of the data after the header. A first packet whose three
//! lengths agree is certain.

use crate::scan::{le16, le32};
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// AMS/TCP header length.
const TCP_HEADER: usize = 6;
/// AMS header length.
const AMS_HEADER: usize = 32;

/// Detector for Beckhoff ADS.
pub struct BeckhoffAdsDetector;

/// Judges an AMS header at `ams` with `len` bytes of AMS packet announced.
fn ams(d: &[u8], ams: usize, len: usize) -> bool {
    let command = le16(d, ams + 16);
    let flags = le16(d, ams + 18);
    let data = le32(d, ams + 20);
    matches!(command, Some(1..=9))
        && flags.is_some_and(|f| f & 0x0004 != 0)
        && data.is_some_and(|n| n as usize + AMS_HEADER == len)
}

impl Detector for BeckhoffAdsDetector {
    fn proto(&self) -> AppProto {
        AppProto::BeckhoffAds
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.transport == Transport::Tcp {
            let p = ctx.prefix;
            let Some(len) = le32(p, 2) else {
                return if p.get(1).is_none_or(|&b| b == 0) {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                };
            };
            let len = len as usize;
            if p.get(1) != Some(&0) || !(AMS_HEADER..=65536).contains(&len) {
                return Probe::NotForUs;
            }
            if p.len() < TCP_HEADER + AMS_HEADER {
                return Probe::Unsure;
            }
            if ams(p, TCP_HEADER, len) {
                Probe::Certain
            } else {
                Probe::NotForUs
            }
        } else {
            // AMS/UDP carries the AMS header with no AMS/TCP prefix.
            let d = ctx.data;
            if d.len() >= AMS_HEADER && ams(d, 0, d.len()) {
                Probe::Certain
            } else {
                Probe::NotForUs
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    /// A Read State request (command 4, no data) from 192.168.1.99.1.1:32771 to 5.13.117.96.1.1:10000.
    fn read_state() -> Vec<u8> {
        let mut d = vec![0, 0, 32, 0, 0, 0];
        d.extend_from_slice(&[
            5, 13, 117, 96, 1, 1, 0x10, 0x27, 192, 168, 1, 99, 1, 1, 0x03, 0x80,
        ]);
        d.extend_from_slice(&[4, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0]);
        d
    }

    #[test]
    fn ams_tcp() {
        let probe = |d: &[u8]| BeckhoffAdsDetector.probe(&ctx_tcp(Direction::ToServer, d));
        let d = read_state();
        assert_eq!(probe(&d), Probe::Certain);
        assert_eq!(probe(&d[..12]), Probe::Unsure);
        let mut v = d.clone();
        v[22] = 12;
        assert_eq!(probe(&v), Probe::NotForUs, "unknown command");
        v = d.clone();
        v[26] = 1;
        assert_eq!(probe(&v), Probe::NotForUs, "data length disagrees");
    }
}
