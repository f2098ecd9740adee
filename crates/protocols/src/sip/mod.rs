//! SIP (RFC 3261) over UDP or TCP: nDPI's `SIP`.
//!
//! The first line is decisive: a request line `METHOD SP Request-URI SP SIP/2.0` with one of the RFC methods and
//! a `sip:`/`sips:`/`tel:` URI (method and scheme suffice), or a status line `SIP/2.0 SP 3DIGIT`. A datagram must hold the whole line; on TCP
//! the detector waits (bounded by the probe prefix) while what arrived is still a prefix of such a line.

use crate::scan::{Lit, first_line, lit_ci, starts_ci};
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

const METHODS: &[&[u8]] = &[
    b"INVITE ",
    b"ACK ",
    b"BYE ",
    b"CANCEL ",
    b"REGISTER ",
    b"OPTIONS ",
    b"PRACK ",
    b"SUBSCRIBE ",
    b"NOTIFY ",
    b"PUBLISH ",
    b"INFO ",
    b"REFER ",
    b"MESSAGE ",
    b"UPDATE ",
];

/// What the start of a payload says about SIP.
fn judge(d: &[u8]) -> Probe {
    let Some(line) = first_line(d) else {
        // No complete line yet: keep going only while it can still become a SIP first line.
        let can =
            lit_ci(d, b"SIP/2.0 ") != Lit::No || METHODS.iter().any(|m| lit_ci(d, m) != Lit::No);
        return if can && d.len() < 512 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    if let Some(rest) = line.strip_prefix(b"SIP/2.0 ") {
        let ok = rest.len() >= 3
            && rest[..3].iter().all(u8::is_ascii_digit)
            && rest.get(3).is_none_or(|&b| b == b' ');
        return if ok { Probe::Certain } else { Probe::NotForUs };
    }
    let Some(m) = METHODS.iter().find(|m| line.starts_with(m)) else {
        return Probe::NotForUs;
    };
    let uri = &line[m.len()..];
    let uri_ok = starts_ci(uri, b"sip:") || starts_ci(uri, b"sips:") || starts_ci(uri, b"tel:");
    // The URI scheme right after a SIP method is specific enough; the version at the end is not required
    // (nDPI accepts damaged request lines too).
    if uri_ok {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// Detector for SIP signalling.
pub struct SipDetector;

impl Detector for SipDetector {
    fn proto(&self) -> AppProto {
        AppProto::Sip
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        // RFC 5626 keep-alives (CRLF CRLF, or a lone NUL some phones send) decide nothing.
        if !ctx.data.is_empty() && ctx.data.iter().all(|&b| b == b'\r' || b == b'\n' || b == 0) {
            return Probe::Unsure;
        }
        match (judge(ctx.prefix), ctx.transport) {
            // A datagram is complete: what is not a SIP line now never will be.
            (Probe::Unsure, Transport::Udp) => Probe::NotForUs,
            (p, _) => p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    #[test]
    fn request_and_response_lines() {
        // sip.pcap (nDPI test suite)
        let invite = b"INVITE sip:6713@192.168.1.2:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 192.168.1.3:5060\r\n\r\n";
        let ok = b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.168.1.3:5060\r\n\r\n";
        assert_eq!(
            SipDetector.probe(&ctx_udp(Direction::ToServer, invite, &[])),
            Probe::Certain
        );
        assert_eq!(
            SipDetector.probe(&ctx_udp(Direction::ToClient, ok, &[])),
            Probe::Certain
        );
        assert_eq!(
            SipDetector.probe(&ctx_udp(Direction::ToServer, b"INVITE sip:x", &[])),
            Probe::NotForUs
        );
        assert_eq!(
            SipDetector.probe(&ctx_tcp(Direction::ToServer, b"INVITE sip:x")),
            Probe::Unsure
        );
        assert_eq!(
            SipDetector.probe(&ctx_tcp(Direction::ToServer, b"GET / HTTP/1.1\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            SipDetector.probe(&ctx_tcp(Direction::ToServer, b"OPTIONS * HTTP/1.1\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            SipDetector.probe(&ctx_udp(Direction::ToServer, b"\r\n\r\n", &[])),
            Probe::Unsure
        );
    }
}
