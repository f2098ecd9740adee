//! RTSP (RFC 2326 / 7826): nDPI's `RTSP`.
//!
//! Requests are `METHOD SP rtsp://... SP RTSP/1.0` (or `*` for OPTIONS), responses start with `RTSP/1.0 SP 3DIGIT`.
//! The method list and the `RTSP/` version make one line certain. Must be probed before HTTP, whose request line
//! has the same shape.

use crate::scan::{Lit, first_line, lit_ci};
use crate::{AppProto, Detector, Probe, ProbeCtx};

const METHODS: &[&[u8]] = &[
    b"OPTIONS ",
    b"DESCRIBE ",
    b"SETUP ",
    b"PLAY ",
    b"PAUSE ",
    b"TEARDOWN ",
    b"ANNOUNCE ",
    b"RECORD ",
    b"GET_PARAMETER ",
    b"SET_PARAMETER ",
    b"REDIRECT ",
];

/// Judges the first line of an RTSP message.
fn judge(p: &[u8]) -> Probe {
    let Some(line) = first_line(p) else {
        let can = lit_ci(p, b"RTSP/") != Lit::No || METHODS.iter().any(|m| lit_ci(p, m) != Lit::No);
        return if can && p.len() < 1024 {
            Probe::Unsure
        } else {
            Probe::NotForUs
        };
    };
    if let Some(rest) = line
        .strip_prefix(b"RTSP/1.0 ")
        .or_else(|| line.strip_prefix(b"RTSP/2.0 "))
    {
        return if rest.len() >= 3 && rest[..3].iter().all(u8::is_ascii_digit) {
            Probe::Certain
        } else {
            Probe::NotForUs
        };
    }
    if METHODS.iter().any(|m| line.starts_with(m))
        && (line.ends_with(b" RTSP/1.0") || line.ends_with(b" RTSP/2.0"))
    {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// Detector for RTSP.
pub struct RtspDetector;

impl Detector for RtspDetector {
    fn proto(&self) -> AppProto {
        AppProto::Rtsp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        judge(ctx.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[test]
    fn request_and_reply() {
        // rtsp_setup_http.pcapng
        let s = b"SETUP rtsp://172.28.4.26:8554/trackID=88 RTSP/1.0\r\nCSeq: 4\r\n\r\n";
        assert_eq!(
            RtspDetector.probe(&ctx_tcp(Direction::ToServer, s)),
            Probe::Certain
        );
        assert_eq!(
            RtspDetector.probe(&ctx_tcp(
                Direction::ToClient,
                b"RTSP/1.0 200 OK\r\nCSeq: 4\r\n"
            )),
            Probe::Certain
        );
        assert_eq!(
            RtspDetector.probe(&ctx_tcp(Direction::ToServer, b"OPTIONS * HTTP/1.1\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            RtspDetector.probe(&ctx_tcp(Direction::ToServer, b"DESCRIBE rtsp://x")),
            Probe::Unsure
        );
    }
}
