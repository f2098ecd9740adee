//! WHOIS (RFC 3912) and the Domain Availability Service: nDPI's `Whois-DAS`.
//!
//! A WHOIS client connects to port 43 (DAS: 4343), sends one query line ended by CR LF, and the server answers
//! with text and closes. On those ports, a first client payload that is exactly one printable line ended by CR LF
//! is certain.

use crate::scan::printable;
use crate::{AppProto, Detector, Direction, Probe, ProbeCtx};

/// WHOIS and DAS ports.
const PORTS: [u16; 2] = [43, 4343];

/// Detector for WHOIS.
pub struct WhoisDetector;

impl Detector for WhoisDetector {
    fn proto(&self) -> AppProto {
        AppProto::WhoisDas
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if !PORTS.contains(&ctx.server_port) || ctx.dir != Direction::ToServer {
            return Probe::NotForUs;
        }
        let p = ctx.prefix;
        match p.strip_suffix(b"\r\n") {
            Some(q) if !q.is_empty() && q.len() <= 1024 && printable(q) => Probe::Certain,
            None if p.len() < 1024 && printable(p) => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transport;
    use crate::testkit::ctx_ports;

    #[test]
    fn one_query_line() {
        let probe = |d: &[u8], port| {
            WhoisDetector.probe(&ctx_ports(
                Transport::Tcp,
                Direction::ToServer,
                d,
                44188,
                port,
            ))
        };
        assert_eq!(probe(b"example.com\r\n", 43), Probe::Certain);
        assert_eq!(probe(b"example", 43), Probe::Unsure);
        assert_eq!(probe(b"example.com\r\n", 80), Probe::NotForUs);
        assert_eq!(probe(b"\x16\x03\x01\x02\x00", 43), Probe::NotForUs);
    }
}
