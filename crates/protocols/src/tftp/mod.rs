//! TFTP (RFC 1350, options RFC 2347): nDPI's `TFTP`.
//!
//! Five packet kinds, each opening with a 16-bit opcode: a read or write request (1, 2: a file name and a transfer
//! mode, `netascii`, `octet` or `mail`, each ending in a zero byte, then optional option/value pairs), DATA (3: a
//! block number and at most 512 bytes, or the block size an option agreed), ACK (4: a block number, four bytes in
//! all), ERROR (5: a code and a message ending in a zero byte) and the option acknowledgement (6).
//!
//! * A request is certain: the mode is one of three words and every string must end where the datagram says.
//! * The transfer itself runs on a new pair of ports (each side picks its transfer identifier), so a flow may start
//!   with DATA or an option acknowledgement: certain only once the other direction answers it, an ACK of the same
//!   block (block 0 for an option acknowledgement) or an ERROR.

use crate::scan::be16;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Zero-terminated strings of `d`, and whether `d` ends right after the last one.
fn strings(d: &[u8]) -> Option<Vec<&[u8]>> {
    if d.last() != Some(&0) {
        return None;
    }
    Some(d[..d.len() - 1].split(|&b| b == 0).collect())
}

/// Whether `d` is a read or write request.
fn request(d: &[u8]) -> bool {
    if !matches!(be16(d, 0), Some(1 | 2)) {
        return false;
    }
    let Some(s) = d.get(2..).and_then(strings) else {
        return false;
    };
    let (Some(file), Some(mode)) = (s.first(), s.get(1)) else {
        return false;
    };
    let mode_ok = [&b"netascii"[..], b"octet", b"mail"]
        .iter()
        .any(|m| mode.eq_ignore_ascii_case(m));
    !file.is_empty()
        && file.iter().all(|&b| (0x20..0x7f).contains(&b))
        && mode_ok
        && s.len() % 2 == 0
        && s[2..]
            .iter()
            .all(|o| o.iter().all(|&b| (0x20..0x7f).contains(&b)))
}

/// The block a DATA packet carries (`Some(0)` for an option acknowledgement), if `d` is one.
fn data_block(d: &[u8]) -> Option<u16> {
    match be16(d, 0)? {
        3 if d.len() >= 4 && d.len() <= 4 + 65_464 => be16(d, 2),
        6 => strings(d.get(2..)?).filter(|s| s.len() % 2 == 0).map(|_| 0),
        _ => None,
    }
}

/// Whether `d` answers `block`: its ACK, or an ERROR with a code below 9 and a terminated message.
fn answers(d: &[u8], block: u16) -> bool {
    match be16(d, 0) {
        Some(4) => d.len() == 4 && be16(d, 2) == Some(block),
        Some(5) => be16(d, 2).is_some_and(|c| c < 9) && d.len() >= 5 && d.last() == Some(&0),
        _ => false,
    }
}

/// Detector for TFTP.
pub struct TftpDetector;

impl Detector for TftpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Tftp
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(&[0])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if request(d) {
            return Probe::Certain;
        }
        if let Some(block) = data_block(ctx.peer)
            && answers(d, block)
        {
            return Probe::Certain;
        }
        if let Some(block) = data_block(d) {
            return if answers(ctx.peer, block) {
                Probe::Certain
            } else {
                Probe::Unsure
            };
        }
        // An ACK or ERROR waiting for its DATA (a flow picked up from the receiver's side).
        if matches!(be16(d, 0), Some(4 | 5)) && ctx.peer.is_empty() && ctx.dir_index == 0 {
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
    use crate::testkit::ctx_udp;

    fn probe(d: &[u8], peer: &[u8]) -> Probe {
        TftpDetector.probe(&ProbeCtx {
            peer,
            ..ctx_udp(Direction::ToServer, d, &[])
        })
    }

    #[test]
    fn requests_are_certain() {
        assert_eq!(
            probe(b"\x00\x01boot/pxelinux.0\x00octet\x00", &[]),
            Probe::Certain
        );
        assert_eq!(
            probe(b"\x00\x02cfg.txt\x00NETASCII\x00blksize\x001428\x00", &[]),
            Probe::Certain
        );
        assert_eq!(
            probe(b"\x00\x01file\x00binary\x00", &[]),
            Probe::NotForUs,
            "no such mode"
        );
        assert_eq!(
            probe(b"\x00\x01file\x00octet", &[]),
            Probe::NotForUs,
            "unterminated"
        );
        assert_eq!(
            probe(b"\x00\x01file\x00octet\x00blksize\x00", &[]),
            Probe::NotForUs,
            "an option without its value"
        );
    }

    #[test]
    fn a_transfer_needs_its_acknowledgement() {
        let mut data = vec![0, 3, 0, 1];
        data.extend_from_slice(&[0xab; 512]);
        assert_eq!(probe(&data, &[]), Probe::Unsure);
        assert_eq!(probe(&[0, 4, 0, 1], &data), Probe::Certain);
        assert_eq!(probe(&data, &[0, 4, 0, 1]), Probe::Certain);
        assert_eq!(
            probe(&[0, 4, 0, 2], &data),
            Probe::NotForUs,
            "another block"
        );
        assert_eq!(
            probe(b"\x00\x05\x00\x01File not found\x00", &data),
            Probe::Certain
        );
        // An option acknowledgement answered by the ACK of block 0.
        assert_eq!(
            probe(&[0, 4, 0, 0], b"\x00\x06blksize\x001428\x00"),
            Probe::Certain
        );
        assert_eq!(probe(&[0, 9, 0, 0], &[]), Probe::NotForUs);
    }
}
