//! ANSI C12.22, the utility meter protocol over IP (ANSI C12.22 / IEEE 1703): nDPI's `ANSI_C1222`.
//!
//! Each message is an ACSE association PDU in BER: the tag `60` (application 0, constructed), its length (short or
//! long form) covering the rest of the message, then context-specific constructed elements `A1`-`BE` (called and
//! calling AP titles and invocation ids, authentication, user information). A PDU whose length matches the
//! datagram (UDP) or the message (TCP) and whose first element is one of those is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for ANSI C12.22.
pub struct C1222Detector;

/// The BER length at `d[1..]`: (content length, header length).
fn ber_length(d: &[u8]) -> Option<(usize, usize)> {
    match *d.get(1)? {
        n @ 0..=0x7f => Some((usize::from(n), 2)),
        0x81 => Some((usize::from(*d.get(2)?), 3)),
        0x82 => Some((usize::from(u16::from_be_bytes([*d.get(2)?, *d.get(3)?])), 4)),
        _ => None,
    }
}

impl Detector for C1222Detector {
    fn proto(&self) -> AppProto {
        AppProto::AnsiC1222
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x60])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let stream = ctx.transport == Transport::Tcp;
        let d = if stream { ctx.prefix } else { ctx.data };
        if d.first() != Some(&0x60) {
            return Probe::NotForUs;
        }
        let Some((len, head)) = ber_length(d) else {
            return if stream && d.len() < 4 {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        if !d.get(head).is_none_or(|t| (0xa1..=0xbe).contains(t)) || len < 4 {
            return Probe::NotForUs;
        }
        let total = head + len;
        match total.cmp(&d.len()) {
            std::cmp::Ordering::Equal => Probe::Certain,
            std::cmp::Ordering::Less if stream => Probe::Certain,
            std::cmp::Ordering::Greater if stream && total <= 65536 => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    /// An association with a called AP title (relative OID) and a user-information element.
    fn message() -> Vec<u8> {
        let mut body = vec![0xa2, 0x05, 0x80, 0x03, 0x7c, 0x86, 0xf7];
        body.extend_from_slice(&[0xbe, 0x04, 0x28, 0x02, 0x81, 0x00]);
        let mut m = vec![0x60, body.len() as u8];
        m.extend_from_slice(&body);
        m
    }

    #[test]
    fn acse_pdu() {
        let m = message();
        let udp = |d: &[u8]| C1222Detector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        let tcp = |d: &[u8]| C1222Detector.probe(&ctx_tcp(Direction::ToServer, d));
        assert_eq!(udp(&m), Probe::Certain);
        assert_eq!(tcp(&m), Probe::Certain);
        assert_eq!(tcp(&m[..6]), Probe::Unsure);
        assert_eq!(udp(&m[..6]), Probe::NotForUs);
        let mut v = m.clone();
        v[2] = 0x30;
        assert_eq!(
            udp(&v),
            Probe::NotForUs,
            "a universal SEQUENCE is no ACSE element"
        );
    }
}
