//! Syslog (RFC 3164 / RFC 5424) over UDP or TCP: nDPI's `Syslog`.
//!
//! A message starts with `<PRI>`: one to three digits, PRI at most 191 (facility 0..=23, severity 0..=7), no
//! leading zero unless PRI is 0. What follows is text: an RFC 5424 version (`1 `), an RFC 3164 timestamp
//! (`Oct 11 22:14:15`) or the message itself. The PRI and ten printable characters after it decide.

use crate::scan::parse_u32;
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// Whether `d` starts with a syslog header.
pub fn is_syslog(d: &[u8]) -> bool {
    if d.first() != Some(&b'<') {
        return false;
    }
    let Some(end) = d.iter().take(5).position(|&b| b == b'>') else {
        return false;
    };
    let digits = &d[1..end];
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return false;
    }
    let Some(pri) = parse_u32(digits) else {
        return false;
    };
    let rest = &d[end + 1..];
    pri <= 191 && rest.len() >= 10 && rest[..10].iter().all(|&b| (0x20..0x7f).contains(&b))
}

/// Detector for syslog.
pub struct SyslogDetector;

impl Detector for SyslogDetector {
    fn proto(&self) -> AppProto {
        AppProto::Syslog
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        if is_syslog(p) {
            Probe::Certain
        } else if ctx.transport == Transport::Tcp && p.first() == Some(&b'<') && p.len() < 16 {
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
    use crate::testkit::ctx_udp;

    #[test]
    fn messages() {
        let m = b"<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8";
        assert_eq!(
            SyslogDetector.probe(&ctx_udp(Direction::ToServer, m, &[])),
            Probe::Certain
        );
        let m5424 = b"<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 - An application event";
        assert_eq!(
            SyslogDetector.probe(&ctx_udp(Direction::ToServer, m5424, &[])),
            Probe::Certain
        );
        assert_eq!(
            SyslogDetector.probe(&ctx_udp(
                Direction::ToServer,
                b"<200>too big a priority",
                &[]
            )),
            Probe::NotForUs
        );
        assert_eq!(
            SyslogDetector.probe(&ctx_udp(Direction::ToServer, b"<html><body>", &[])),
            Probe::NotForUs
        );
    }
}
