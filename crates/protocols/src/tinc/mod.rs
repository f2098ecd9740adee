//! tinc, the mesh VPN daemon's meta protocol: nDPI's `TINC`.
//!
//! Two tinc daemons open a meta connection by each sending an ID request as a text line: request number `0`,
//! the node's name (letters, digits and `_`), and the protocol version (`17`, optionally `.minor`). The line is
//! specific enough to wait for, and the other side answering with its own ID line makes it certain.

use crate::scan::first_line;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx, Transport};

/// Detector for tinc.
pub struct TincDetector;

/// Whether `line` is an ID request: `0 <name> <major>[.<minor>]`.
fn id_line(line: &[u8]) -> bool {
    let mut parts = line.split(|&b| b == b' ');
    let (Some(b"0"), Some(name), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let name_ok = !name.is_empty()
        && name.len() <= 64
        && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_');
    let mut v = version.splitn(2, |&b| b == b'.');
    let major = v.next().unwrap_or(&[]);
    let minor = v.next();
    name_ok
        && (1..=2).contains(&major.len())
        && major.iter().all(u8::is_ascii_digit)
        && minor.is_none_or(|m| !m.is_empty() && m.len() <= 3 && m.iter().all(u8::is_ascii_digit))
}

/// The verdict on one direction's stream start: `Some(true)` an ID line, `Some(false)` maybe one later.
fn starts_with_id(p: &[u8]) -> Option<bool> {
    match first_line(p) {
        Some(line) => id_line(line).then_some(true),
        None if p.starts_with(b"0 ") && p.len() < 80 => Some(false),
        None if p == b"0" => Some(false),
        None => None,
    }
}

impl Detector for TincDetector {
    fn proto(&self) -> AppProto {
        AppProto::Tinc
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"0")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.transport != Transport::Tcp {
            return Probe::NotForUs;
        }
        match (starts_with_id(ctx.prefix), starts_with_id(ctx.peer)) {
            (Some(true), Some(true)) => Probe::Certain,
            (Some(_), _) => Probe::Unsure,
            (None, _) => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;
    use crate::{Direction, ProbeCtx};

    #[test]
    fn id_requests_from_both_sides() {
        let probe = |d: &[u8], peer: &[u8]| {
            TincDetector.probe(&ProbeCtx {
                peer,
                ..ctx_tcp(Direction::ToClient, d)
            })
        };
        assert_eq!(probe(b"0 think 17\n", b"0 iniz 17\n"), Probe::Certain);
        assert_eq!(
            probe(b"0 alpha 17.7\n", b""),
            Probe::Unsure,
            "one side so far"
        );
        assert_eq!(probe(b"0 al", b""), Probe::Unsure);
        assert_eq!(probe(b"0 two words 17\n", b"0 iniz 17\n"), Probe::NotForUs);
        assert_eq!(probe(b"0 name x17\n", b""), Probe::NotForUs);
    }
}
