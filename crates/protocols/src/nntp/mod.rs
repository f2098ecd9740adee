//! The Network News Transfer Protocol (RFC 3977; TCP 119): nDPI's `Usenet`.
//!
//! The server greets first with `200` (posting allowed) or `201` (no posting) and a text line; the client then
//! sends NNTP commands (`CAPABILITIES`, `MODE READER`, `AUTHINFO`, `GROUP`, `ARTICLE`, ...). The greeting alone is
//! `Unsure` (other servers answer `200` too); the greeting followed by an NNTP command from the client is certain.

use crate::scan::{first_line, printable, reply_code, starts_ci};
use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Commands of RFC 3977 and its extensions (RFC 4643 AUTHINFO, RFC 2980 X-commands) a reader or feeder opens with.
const COMMANDS: &[&[u8]] = &[
    b"ARTICLE",
    b"AUTHINFO ",
    b"BODY",
    b"CAPABILITIES",
    b"DATE",
    b"GROUP ",
    b"HEAD",
    b"HELP",
    b"IHAVE ",
    b"LIST",
    b"LISTGROUP",
    b"MODE READER",
    b"MODE STREAM",
    b"NEWGROUPS ",
    b"NEWNEWS ",
    b"OVER",
    b"POST",
    b"QUIT",
    b"STAT",
    b"STARTTLS",
    b"XHDR ",
    b"XOVER",
];

/// Detector for NNTP.
pub struct NntpDetector;

impl Detector for NntpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Usenet
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::ranges(&[(b'2', b'2'), (b'A', b'Z'), (b'a', b'z')])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let Some(line) = first_line(ctx.prefix) else {
            return if ctx.prefix.len() < 512 {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        match ctx.dir {
            // The server speaks first.
            Direction::ToClient if ctx.payload_index == 0 || ctx.dir_index == 0 => {
                if matches!(reply_code(line), Some(200 | 201)) && printable(line) {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            }
            Direction::ToServer if ctx.payload_index > 0 => {
                if printable(line) && COMMANDS.iter().any(|c| starts_ci(line, c)) {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe(dir: Direction, d: &[u8], payload_index: u32) -> Probe {
        let mut c = ctx_tcp(dir, d);
        c.payload_index = payload_index;
        NntpDetector.probe(&c)
    }

    #[test]
    fn greeting_then_command() {
        assert_eq!(
            probe(
                Direction::ToClient,
                b"200 news.example.org NNTP ready\r\n",
                0
            ),
            Probe::Unsure
        );
        assert_eq!(
            probe(Direction::ToServer, b"MODE READER\r\n", 1),
            Probe::Certain
        );
        assert_eq!(
            probe(Direction::ToServer, b"AUTHINFO USER me\r\n", 1),
            Probe::Certain
        );
        assert_eq!(
            probe(Direction::ToServer, b"EHLO me\r\n", 1),
            Probe::NotForUs
        );
        assert_eq!(
            probe(Direction::ToClient, b"220 smtp ready\r\n", 0),
            Probe::NotForUs
        );
        assert_eq!(
            probe(Direction::ToServer, b"GROUP a.b\r\n", 0),
            Probe::NotForUs
        );
    }
}
