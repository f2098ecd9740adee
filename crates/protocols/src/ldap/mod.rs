//! The Lightweight Directory Access Protocol (RFC 4511; TCP 389, CLDAP on UDP 389): nDPI's `LDAP`.
//!
//! Every LDAP message is a BER `SEQUENCE` (`0x30`, a definite length) holding the message id (an `INTEGER` of one
//! to four bytes) and one protocol operation, an application-class tag: bind request/response (`0x60`/`0x61`),
//! unbind (`0x42`), search request (`0x63`), search result entry/done/reference (`0x64`/`0x65`/`0x73`), modify,
//! add, delete, modify-DN, compare (`0x66`..`0x6f`), abandon (`0x50`), extended request/response
//! (`0x77`/`0x78`), intermediate response (`0x79`). A message with that shape whose length fits the segment (for
//! UDP: fills the datagram) is certain.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for LDAP.
pub struct LdapDetector;

/// A BER definite length at `d[at..]`: `(length, bytes used)`.
fn ber_len(d: &[u8], at: usize) -> Option<(usize, usize)> {
    let first = *d.get(at)?;
    if first < 0x80 {
        return Some((usize::from(first), 1));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 4 {
        return None;
    }
    let bytes = d.get(at + 1..at + 1 + n)?;
    let len = bytes.iter().fold(0usize, |a, &b| (a << 8) | usize::from(b));
    Some((len, 1 + n))
}

fn operation(tag: u8) -> bool {
    matches!(tag, 0x60 | 0x61 | 0x42 | 0x63 | 0x64 | 0x65 | 0x73 | 0x66..=0x6f | 0x4a | 0x50 | 0x77..=0x79)
}

/// Whether `d` starts with an LDAP message; `None` when more bytes are needed to tell.
fn message(d: &[u8], whole: bool) -> Option<bool> {
    if d.first() != Some(&0x30) {
        return Some(false);
    }
    let (len, used) = ber_len(d, 1)?;
    let body = 1 + used;
    if d.get(body) != Some(&0x02) {
        return d.get(body).map(|_| false);
    }
    let id_len = usize::from(*d.get(body + 1)?);
    if !(1..=4).contains(&id_len) {
        return Some(false);
    }
    let op = *d.get(body + 2 + id_len)?;
    let total = body + len;
    // Over TCP the message may continue in later segments; a datagram holds exactly one.
    let fits = !whole || total == d.len();
    Some(operation(op) && fits && len > 2 + id_len)
}

impl Detector for LdapDetector {
    fn proto(&self) -> AppProto {
        AppProto::Ldap
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x30])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let udp = ctx.transport == Transport::Udp;
        match message(ctx.prefix, udp) {
            Some(true) => Probe::Certain,
            None if !udp => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    #[test]
    fn a_bind_request_and_response() {
        // Bind request, message id 1, version 3, empty name, simple authentication with an empty password.
        let bind = [
            0x30, 0x0c, 0x02, 0x01, 0x01, 0x60, 0x07, 0x02, 0x01, 0x03, 0x04, 0x00, 0x80, 0x00,
        ];
        assert_eq!(
            LdapDetector.probe(&ctx_tcp(Direction::ToServer, &bind)),
            Probe::Certain
        );
        assert_eq!(
            LdapDetector.probe(&ctx_udp(Direction::ToServer, &bind, &[])),
            Probe::Certain
        );
        assert_eq!(
            LdapDetector.probe(&ctx_tcp(Direction::ToServer, &bind[..3])),
            Probe::Unsure
        );
        let mut not_op = bind;
        not_op[5] = 0x30;
        assert_eq!(
            LdapDetector.probe(&ctx_tcp(Direction::ToServer, &not_op)),
            Probe::NotForUs
        );
        assert_eq!(
            LdapDetector.probe(&ctx_udp(Direction::ToServer, &bind[..13], &[])),
            Probe::NotForUs
        );
    }
}
