//! AJP 1.3, the Apache JServ Protocol between a web server and a servlet container: nDPI's `AJP`.
//!
//! Packets from the web server start with `0x12 0x34` and a 16-bit payload length, those of the container with
//! `AB` and a length; the payload's first byte is its type (Apache Tomcat's "AJPv13" reference). The web server's
//! Forward Request (type 2) carries an HTTP method code (1 OPTIONS .. 28, RFC 2518 and RFC 3253 methods included)
//! and then the request's protocol as an AJP string (a 16-bit length, the bytes, a zero byte), `HTTP/1.1`: that
//! request is certain. The health check CPing (type 10, a one-byte payload) is certain once the container answers
//! with CPong (type 9).

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

const FORWARD_REQUEST: u8 = 2;
const CPONG: u8 = 9;
const CPING: u8 = 10;

/// The payload of an AJP packet `d` whose magic is `magic`, when `d` holds it whole.
fn payload<'a>(d: &'a [u8], magic: &[u8; 2]) -> Option<&'a [u8]> {
    if !d.starts_with(magic) {
        return None;
    }
    let len = usize::from(be16(d, 2)?);
    d.get(4..4 + len).filter(|p| !p.is_empty())
}

/// Whether `p` is a Forward Request whose protocol string names HTTP.
fn forward_request(p: &[u8]) -> bool {
    let (Some(&FORWARD_REQUEST), Some(&method)) = (p.first(), p.get(1)) else {
        return false;
    };
    let Some(len) = be16(p, 2).map(usize::from) else {
        return false;
    };
    (1..=28).contains(&method)
        && p.get(4..4 + len).is_some_and(|s| s.starts_with(b"HTTP/"))
        && p.get(4 + len) == Some(&0)
}

/// Detector for AJP.
pub struct AjpDetector;

impl Detector for AjpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Ajp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0x12, b'A'])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if d.len() < 4 {
            let magic_prefix = [0x12u8, 0x34].starts_with(&d[..d.len().min(2)])
                || b"AB".starts_with(&d[..d.len().min(2)]);
            return if magic_prefix {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        if let Some(p) = payload(d, &[0x12, 0x34]) {
            if forward_request(p) {
                return Probe::Certain;
            }
            if p == [CPING] {
                return if payload(ctx.peer, b"AB") == Some(&[CPONG][..]) {
                    Probe::Certain
                } else {
                    Probe::Unsure
                };
            }
        }
        if payload(d, b"AB") == Some(&[CPONG][..])
            && payload(ctx.peer, &[0x12, 0x34]) == Some(&[CPING][..])
        {
            return Probe::Certain;
        }
        // A Forward Request not whole yet (split over segments): the web server's magic, a length within the
        // largest packet size a connector may set, and the request type.
        let pending = d.starts_with(&[0x12, 0x34])
            && be16(d, 2).is_some_and(|l| usize::from(l) + 4 > d.len())
            && d.get(4).is_none_or(|&t| t == FORWARD_REQUEST);
        if pending && ctx.dir_index < 4 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::ProbeCtx;
    use crate::testkit::ctx_tcp;

    /// A Forward Request for `GET /index.jsp HTTP/1.1` (method 2), protocol, URI, remote address, then the rest cut
    /// short: AJPv13's field order.
    fn get() -> Vec<u8> {
        let mut p = vec![FORWARD_REQUEST, 2];
        for s in [&b"HTTP/1.1"[..], b"/index.jsp", b"10.0.0.1"] {
            p.extend_from_slice(&(s.len() as u16).to_be_bytes());
            p.extend_from_slice(s);
            p.push(0);
        }
        let mut d = vec![0x12, 0x34];
        d.extend_from_slice(&(p.len() as u16).to_be_bytes());
        d.extend_from_slice(&p);
        d
    }

    fn probe(d: &[u8], peer: &[u8]) -> Probe {
        AjpDetector.probe(&ProbeCtx {
            peer,
            ..ctx_tcp(Direction::ToServer, d)
        })
    }

    #[test]
    fn forward_request_and_cping() {
        assert_eq!(probe(&get(), &[]), Probe::Certain);
        let g = get();
        assert_eq!(probe(&g[..20], &[]), Probe::Unsure, "not whole yet");
        let mut bad = get();
        bad[5] = 40; // no such method
        assert_eq!(probe(&bad, &[]), Probe::NotForUs);
        let cping = [0x12, 0x34, 0, 1, CPING];
        let cpong = [b'A', b'B', 0, 1, CPONG];
        assert_eq!(probe(&cping, &[]), Probe::Unsure);
        assert_eq!(probe(&cping, &cpong), Probe::Certain);
        assert_eq!(probe(&cpong, &cping), Probe::Certain);
        assert_eq!(probe(&cpong, &[]), Probe::NotForUs);
        assert_eq!(probe(b"ABCD", &[]), Probe::NotForUs);
    }
}
