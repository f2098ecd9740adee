//! RTP and RTCP (RFC 3550) over UDP: nDPI's `RTP` and `RTCP`.
//!
//! RTP has only two fixed bits (version 2), so one packet proves nothing: a random datagram passes the header
//! checks one time in a few dozen. The detector therefore asks for *continuity* between two datagrams of the same
//! direction ([`ProbeCtx::prev`]): same SSRC, same payload type, sequence number advanced by 1..=16 (wrapping),
//! timestamp not going backwards by much. Random data passes that about once in 2^40.
//!
//! RTCP is more self-describing: a compound packet starts with a Sender or Receiver Report (PT 200/201), every
//! packet in it is version 2 with a length in 32-bit words, and the lengths chain exactly to the end of the datagram
//! (SRTCP adds a 4-byte index and a 10-byte tag, also accepted). One datagram is enough.

use crate::scan::{be16, be32};
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Fields of an RTP fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtpHeader {
    pub payload_type: u8,
    pub seq: u16,
    pub timestamp: u32,
    pub ssrc: u32,
}

/// Parses an RTP fixed header: version 2, a payload type that RTP uses (static 0..=34 or dynamic 96..=127; 72..=76
/// collide with RTCP and are refused), room for the CSRC list.
pub fn rtp_header(d: &[u8]) -> Option<RtpHeader> {
    let b0 = *d.first()?;
    if b0 >> 6 != 2 {
        return None;
    }
    let cc = usize::from(b0 & 0x0f);
    if d.len() < 12 + 4 * cc {
        return None;
    }
    let pt = d[1] & 0x7f;
    if !(pt <= 34 || (96..=127).contains(&pt)) {
        return None;
    }
    Some(RtpHeader {
        payload_type: pt,
        seq: be16(d, 2)?,
        timestamp: be32(d, 4)?,
        ssrc: be32(d, 8)?,
    })
}

/// Whether `d` is an RTCP compound packet (plain or SRTCP).
pub fn is_rtcp(d: &[u8]) -> bool {
    match d.get(1) {
        Some(200 | 201) => {}
        _ => return false,
    }
    let mut i = 0;
    let mut n = 0;
    while i < d.len() {
        let (Some(&b0), Some(&pt), Some(words)) = (d.get(i), d.get(i + 1), be16(d, i + 2)) else {
            break;
        };
        if b0 >> 6 != 2 || !(192..=213).contains(&pt) {
            break;
        }
        i += 4 + 4 * usize::from(words);
        n += 1;
    }
    // Exact chain, or SRTCP's E|index (4 bytes) and authentication tag (10, or 4 for 32-bit tags) after it.
    n > 0 && (i == d.len() || i + 14 == d.len() || i + 8 == d.len() || i + 4 == d.len())
}

/// Detector for RTP media streams.
pub struct RtpDetector;

impl Detector for RtpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Rtp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let Some(h) = rtp_header(ctx.data) else {
            return Probe::NotForUs;
        };
        let Some(p) = rtp_header(ctx.prev) else {
            return Probe::Unsure;
        };
        let step = h.seq.wrapping_sub(p.seq);
        // The timestamp moves forward by less than 2^24 ticks (over 3 minutes at 90 kHz) between neighbours.
        let ts_step = h.timestamp.wrapping_sub(p.timestamp);
        if h.ssrc == p.ssrc
            && h.payload_type == p.payload_type
            && (1..=16).contains(&step)
            && ts_step < 1 << 24
        {
            Probe::Certain
        } else if h.ssrc == p.ssrc {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

/// Detector for RTCP control streams.
pub struct RtcpDetector;

impl Detector for RtcpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Rtcp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if is_rtcp(ctx.data) {
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

    fn rtp(seq: u16, ts: u32) -> Vec<u8> {
        let mut v = vec![0x80, 0x00];
        v.extend_from_slice(&seq.to_be_bytes());
        v.extend_from_slice(&ts.to_be_bytes());
        v.extend_from_slice(&0x1234_5678u32.to_be_bytes());
        v.extend_from_slice(&[0xd5; 160]);
        v
    }

    #[test]
    fn rtp_needs_continuity() {
        let a = rtp(100, 8000);
        let b = rtp(101, 8160);
        assert_eq!(
            RtpDetector.probe(&ctx_udp(Direction::ToServer, &a, &[])),
            Probe::Unsure
        );
        assert_eq!(
            RtpDetector.probe(&ctx_udp(Direction::ToServer, &b, &a)),
            Probe::Certain
        );
        assert_eq!(
            RtpDetector.probe(&ctx_udp(Direction::ToServer, &a, &b)),
            Probe::Unsure
        );
        let mut other = rtp(101, 8160);
        other[8] = 0;
        assert_eq!(
            RtpDetector.probe(&ctx_udp(Direction::ToServer, &other, &a)),
            Probe::NotForUs
        );
        assert_eq!(
            RtpDetector.probe(&ctx_udp(Direction::ToServer, b"\x01\x02", &[])),
            Probe::NotForUs
        );
    }

    #[test]
    fn rtcp_compound() {
        // Receiver report with one report block (32 bytes) + SDES CNAME (12 bytes).
        let mut d = vec![0x81, 201, 0x00, 0x07];
        d.extend_from_slice(&[0x11; 28]);
        d.extend_from_slice(&[
            0x81, 202, 0x00, 0x02, 0x11, 0x11, 0x11, 0x11, 0x01, 0x01, b'x', 0x00,
        ]);
        assert!(is_rtcp(&d));
        assert_eq!(
            RtcpDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::Certain
        );
        d.push(0);
        assert_eq!(
            RtcpDetector.probe(&ctx_udp(Direction::ToServer, &d, &[])),
            Probe::NotForUs
        );
    }
}
