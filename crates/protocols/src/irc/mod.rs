//! Internet Relay Chat (RFC 2812; TCP 6667 and others): nDPI's `IRC`.
//!
//! The client speaks first and registers with `NICK <nickname>` and `USER <user> <mode> <unused> :<real name>`
//! (optionally after `PASS <password>` or `CAP LS`). A first line that is `NICK` with one parameter, or `USER` with
//! its four parameters (the last after ` :`), is certain: FTP and POP3 also have `USER`, but their servers speak
//! first and their `USER` has one parameter.

use crate::scan::{find, first_line, printable};
use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Detector for nDPI's `Irc`.
pub struct IrcDetector;

impl Detector for IrcDetector {
    fn proto(&self) -> AppProto {
        AppProto::Irc
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"CNPU")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.dir != Direction::ToServer || ctx.payload_index != ctx.dir_index {
            return Probe::NotForUs;
        }
        let Some(line) = first_line(ctx.prefix) else {
            return if ctx.prefix.len() < 512 && printable(ctx.prefix) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        if !printable(line) {
            return Probe::NotForUs;
        }
        let words = line.split(|&b| b == b' ').count();
        let certain = if let Some(rest) = line.strip_prefix(b"NICK ") {
            !rest.is_empty() && !rest.contains(&b' ')
        } else if line.starts_with(b"USER ") {
            find(line, b" :").is_some() && words >= 5
        } else {
            false
        };
        if certain {
            Probe::Certain
        } else if line.starts_with(b"PASS ") || line.starts_with(b"CAP LS") {
            Probe::Unsure
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe_tcp(d: &[u8]) -> Probe {
        IrcDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(
            probe_tcp(b"USER guest 0 * :Ronnie Reagan\r\n"),
            Probe::Certain
        );
        assert_eq!(probe_tcp(b"NICK amy\r\n"), Probe::Certain);
        assert_eq!(probe_tcp(b"USER anonymous\r\n"), Probe::NotForUs);
        assert_eq!(probe_tcp(b"CAP LS 302\r\nNICK amy\r\n"), Probe::Unsure);
        let mut after_greeting = ctx_tcp(Direction::ToServer, b"NICK amy\r\n");
        after_greeting.payload_index = 1;
        assert_eq!(IrcDetector.probe(&after_greeting), Probe::NotForUs);
    }
}
