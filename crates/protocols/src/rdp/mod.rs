//! RDP (MS-RDPBCGR): nDPI's `RDP`.
//!
//! A connection starts with an X.224 Connection Request inside a TPKT (RFC 1006): `03 00` + 16-bit length, the
//! X.224 length indicator (TPKT length - 5), the CR code `0xE0`, zero destination reference; optionally a
//! `Cookie: mstshash=` line and an RDP_NEG_REQ. The server answers with a Connection Confirm (`0xD0`). Checking
//! the two length fields against each other and the TPDU code is certain from the request (or the confirm).

use crate::scan::be16;
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Judges a TPKT-framed X.224 connection request (`0xE0`) or confirm (`0xD0`).
fn x224_connect(d: &[u8]) -> Probe {
    if d.len() < 7 {
        let want = [0x03, 0x00];
        let n = d.len().min(2);
        return if d[..n] == want[..n] {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    }
    let Some(tpkt_len) = be16(d, 2) else {
        return Probe::NotForUs;
    };
    let li = d[4];
    let code = d[5] & 0xf0;
    let ok = d[0] == 0x03
        && d[1] == 0x00
        && usize::from(tpkt_len) >= 11
        && usize::from(li) + 5 == usize::from(tpkt_len)
        && (code == 0xe0 || code == 0xd0)
        && d[6] == 0
        && d.get(7).is_none_or(|&b| b == 0);
    if !ok {
        return Probe::NotForUs;
    }
    // After the 7-byte X.224 header RDP puts a cookie or routing token (text), an RDP_NEG_REQ/RSP/FAILURE
    // (type 1/2/3, flags, length 8), or nothing; ISO-TSAP users on port 102 (S7, MMS) put TSAP parameters
    // (0xC0..0xC2) there instead.
    match d.get(11) {
        None => Probe::Certain,
        Some(b'C') if d[11..].starts_with(b"Cookie: ") || d.len() < 19 => Probe::Certain,
        Some(1..=3) if d.get(13) == Some(&8) && d.get(14) == Some(&0) => Probe::Certain,
        Some(1..=3) if d.len() < 15 => Probe::Unsure,
        _ => Probe::NotForUs,
    }
}

/// Detector for RDP's connection sequence.
pub struct RdpDetector;

impl Detector for RdpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Rdp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        x224_connect(ctx.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[test]
    fn tsap_users_are_not_rdp() {
        // s7comm.pcap: an X.224 CR on port 102 with TSAP parameters.
        let s7 = [
            0x03, 0x00, 0x00, 0x16, 0x11, 0xe0, 0x00, 0x00, 0x00, 0x01, 0x00, 0xc1, 0x02, 0x01,
            0x00, 0xc2, 0x02, 0x01, 0x02, 0xc0, 0x01, 0x09,
        ];
        assert_eq!(
            RdpDetector.probe(&ctx_tcp(Direction::ToServer, &s7)),
            Probe::NotForUs
        );
    }

    #[test]
    fn connection_request() {
        // rdp.pcap: TPKT, X.224 CR, "Cookie: mstshash=..." and an RDP_NEG_REQ.
        let mut d = vec![
            0x03, 0x00, 0x00, 0x2f, 0x2a, 0xe0, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        d.extend_from_slice(b"Cookie: mstshash=eltons\r\n");
        d.extend_from_slice(&[0x01, 0x00, 0x08, 0x00, 0x03, 0x00, 0x00, 0x00]);
        d[3] = d.len() as u8;
        d[4] = d.len() as u8 - 5;
        assert_eq!(
            RdpDetector.probe(&ctx_tcp(Direction::ToServer, &d)),
            Probe::Certain
        );
        assert_eq!(
            RdpDetector.probe(&ctx_tcp(Direction::ToServer, &d[..3])),
            Probe::Unsure
        );
        let mut bad = d.clone();
        bad[4] = 0x10;
        assert_eq!(
            RdpDetector.probe(&ctx_tcp(Direction::ToServer, &bad)),
            Probe::NotForUs
        );
        assert_eq!(
            RdpDetector.probe(&ctx_tcp(
                Direction::ToServer,
                b"\x16\x03\x01\x02\x00\x01\x00"
            )),
            Probe::NotForUs
        );
    }
}
