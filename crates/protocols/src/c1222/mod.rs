//! ANSI C12.22, the utility meter protocol over IP (ANSI C12.22 / IEEE 1703): nDPI's `ANSI_C1222`.
//!
//! Each message is an ACSE association PDU in BER: the tag `60` (application 0, constructed), its length (short or
//! long form) covering the rest of the message, then context-specific constructed elements `A1`-`BE` (called and
//! calling AP titles and invocation ids, authentication, user information). A PDU whose length matches the
//! datagram (UDP) or fits the stream (TCP), and whose elements are all of those and chain exactly to its end, is
//! certain.

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

/// Whether `body` is a sequence of the association's elements (context-specific constructed tags `A1`-`BE`, each
/// with a BER length) that ends exactly at its end.
fn elements_chain(mut body: &[u8]) -> bool {
    while !body.is_empty() {
        let Some((len, head)) = body
            .first()
            .filter(|t| (0xa1..=0xbe).contains(*t))
            .and_then(|_| ber_length(body))
        else {
            return false;
        };
        let Some(rest) = body.get(head + len..) else {
            return false;
        };
        body = rest;
    }
    true
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
            std::cmp::Ordering::Equal | std::cmp::Ordering::Less
                if (total == d.len() || stream) && elements_chain(&d[head..total]) =>
            {
                Probe::Certain
            }
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
        // The second element's length runs past the PDU, or a byte is left over after the last element.
        let mut long = m.clone();
        long[10] = 0x05;
        assert_eq!(udp(&long), Probe::NotForUs);
        assert_eq!(tcp(&long), Probe::NotForUs);
        let mut spare = m.clone();
        spare[1] += 1;
        spare.push(0);
        assert_eq!(udp(&spare), Probe::NotForUs);
    }
}
