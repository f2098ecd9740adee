//! NoMachine's NX remote desktop: nDPI's `NoMachine`.
//!
//! An NX session opens with version banners in clear text: the server sends `NXSH-<major>.<minor>.<patch>` and
//! the client answers `NXD-<version>`, each on its own line. A banner with a dotted numeric version is certain.

use crate::scan::first_line;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for NoMachine.
pub struct NoMachineDetector;

/// Whether `v` is a dotted version of one to four numbers.
fn dotted_version(v: &[u8]) -> bool {
    let parts = v.split(|&b| b == b'.');
    let mut n = 0;
    for p in parts {
        n += 1;
        if p.is_empty() || p.len() > 5 || !p.iter().all(u8::is_ascii_digit) {
            return false;
        }
    }
    (1..=4).contains(&n)
}

impl Detector for NoMachineDetector {
    fn proto(&self) -> AppProto {
        AppProto::NoMachine
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"N")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.transport != Transport::Tcp {
            return Probe::NotForUs;
        }
        let p = ctx.prefix;
        let banner = [&b"NXSH-"[..], b"NXD-"];
        let Some(tag) = banner.iter().find(|t| p.starts_with(t) || t.starts_with(p)) else {
            return Probe::NotForUs;
        };
        match first_line(p) {
            Some(line) if line.len() > tag.len() => {
                if dotted_version(&line[tag.len()..]) {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            Some(_) => Probe::NotForUs,
            None if p.len() < 32 => Probe::Unsure,
            None => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[test]
    fn banners() {
        let probe = |d: &[u8]| NoMachineDetector.probe(&ctx_tcp(Direction::ToClient, d));
        assert_eq!(probe(b"NXSH-8.10.1\n"), Probe::Certain);
        assert_eq!(probe(b"NXD-8.10.1\n"), Probe::Certain);
        assert_eq!(probe(b"NXSH-8.1"), Probe::Unsure);
        assert_eq!(probe(b"NXSH-latest\n"), Probe::NotForUs);
        assert_eq!(probe(b"NXT-1\n"), Probe::NotForUs);
    }
}
