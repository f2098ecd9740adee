//! The BSD remote shell (`rsh`, TCP 514 "shell"): nDPI's `RSH`.
//!
//! From rshd(8): the client connects to port 514 and sends an ASCII port number for the error stream (possibly
//! empty) ended by NUL, then three NUL-terminated strings: the local user name, the remote user name and the
//! command. On port 514 (the service's own port: the request alone is a few strings), a client stream of that
//! shape is certain; the start of one is `Unsure`.

use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Longest user name or command accepted while waiting for its NUL.
const FIELD_MAX: usize = 1024;

/// Detector for RSH.
pub struct RshDetector;

impl Detector for RshDetector {
    fn proto(&self) -> AppProto {
        AppProto::Rsh
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::ranges(&[(0, 0), (b'0', b'9'), (b'a', b'z'), (b'A', b'Z')])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.server_port != 514 || ctx.dir != Direction::ToServer {
            return Probe::NotForUs;
        }
        let d = ctx.prefix;
        // The port, then up to three strings; the last piece is what follows the last NUL. At most six pieces are
        // looked at (a request has five), so nothing grows with the input.
        let mut pieces: [&[u8]; 6] = [&[]; 6];
        let mut n = 0;
        for (i, p) in d.split(|&b| b == 0).take(6).enumerate() {
            pieces[i] = p;
            n = i + 1;
        }
        let port = pieces[0];
        if port.len() > 5 || !port.iter().all(u8::is_ascii_digit) {
            return Probe::NotForUs;
        }
        let complete = n.saturating_sub(1);
        let printable = |f: &[u8]| f.iter().all(|&b| (0x20..0x7f).contains(&b));
        if !pieces[1..n.max(1)]
            .iter()
            .all(|f| printable(f) && f.len() <= FIELD_MAX)
        {
            return Probe::NotForUs;
        }
        // Complete pieces: the port and the three strings (user names not empty).
        match complete {
            4 if !pieces[1].is_empty() && !pieces[2].is_empty() && pieces[4].is_empty() => {
                Probe::Certain
            }
            4.. => Probe::NotForUs,
            _ => Probe::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transport;
    use crate::testkit::ctx_ports;

    fn probe(d: &[u8], server_port: u16) -> Probe {
        RshDetector.probe(&ctx_ports(
            Transport::Tcp,
            Direction::ToServer,
            d,
            1023,
            server_port,
        ))
    }

    #[test]
    fn a_remote_shell_request() {
        assert_eq!(probe(b"1022\0alice\0root\0ls -l\0", 514), Probe::Certain);
        assert_eq!(probe(b"\0alice\0root\0ls -l\0", 514), Probe::Certain);
        assert_eq!(probe(b"1022\0", 514), Probe::Unsure);
        assert_eq!(
            probe(b"1022\0alice\0root\0ls -l\0extra", 514),
            Probe::NotForUs
        );
        assert_eq!(
            probe(b"<34>Oct 11 22:14:15 host su: x", 514),
            Probe::NotForUs
        );
        assert_eq!(probe(b"1022\0alice\0root\0ls -l\0", 2514), Probe::NotForUs);
    }
}
