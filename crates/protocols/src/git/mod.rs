//! The Git protocol (`git://`, TCP 9418): nDPI's `Git`.
//!
//! The client opens with one pkt-line: four hex digits giving the line's length (itself included), then the
//! service, `git-upload-pack`, `git-receive-pack` or `git-upload-archive`, a space and the repository path. A
//! pkt-line naming one of those services is certain.

use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Detector for nDPI's `Git`.
pub struct GitDetector;

impl Detector for GitDetector {
    fn proto(&self) -> AppProto {
        AppProto::Git
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::ranges(&[(b'0', b'9'), (b'a', b'f')])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if ctx.dir != Direction::ToServer {
            return Probe::NotForUs;
        }
        let Some(hex) = d.get(..4) else {
            return if d.iter().all(u8::is_ascii_hexdigit) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let Some(len) = std::str::from_utf8(hex)
            .ok()
            .and_then(|h| usize::from_str_radix(h, 16).ok())
        else {
            return Probe::NotForUs;
        };
        let rest = &d[4..];
        let service = [
            &b"git-upload-pack "[..],
            b"git-receive-pack ",
            b"git-upload-archive ",
        ]
        .iter()
        .any(|s| rest.starts_with(s));
        if service && len > 4 {
            Probe::Certain
        } else if rest.len() < 19
            && [&b"git-upload-pack "[..], b"git-receive-pack "]
                .iter()
                .any(|s| s.starts_with(rest))
        {
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
        GitDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn recognises_the_specified_shapes() {
        assert_eq!(
            probe_tcp(b"0032git-upload-pack /project.git\0host=example.org\0"),
            Probe::Certain
        );
        assert_eq!(probe_tcp(b"0032git-upl"), Probe::Unsure);
        assert_eq!(probe_tcp(b"0032http-upload"), Probe::NotForUs);
        assert_eq!(probe_tcp(b"zz32git-upload-pack /"), Probe::NotForUs);
    }
}
