//! KCP, a reliable ARQ protocol over UDP used by games and tunnels: nDPI's `KCP`.
//!
//! From the protocol description in the KCP project (skywind3000/kcp): a datagram holds one or more segments,
//! each a 24-byte little-endian header (conversation id, command, fragment count, window, timestamp, sequence
//! number, unacknowledged number, data length) followed by `len` data bytes. The command is one of `0x51` push,
//! `0x52` ack, `0x53` window probe, `0x54` window answer. A datagram made of whole segments with valid commands,
//! all of one conversation, is certain.

use crate::scan::le32;
use crate::{AppProto, Detector, Probe, ProbeCtx};

const HEADER: usize = 24;

/// Detector for KCP.
pub struct KcpDetector;

/// Whether `d` is whole KCP segments of one conversation (at most 16 walked).
fn whole_segments(d: &[u8]) -> bool {
    let Some(conv) = le32(d, 0) else {
        return false;
    };
    let mut off = 0usize;
    for _ in 0..16 {
        let (Some(c), Some(&cmd), Some(len)) = (le32(d, off), d.get(off + 4), le32(d, off + 20))
        else {
            return false;
        };
        if c != conv || !(0x51..=0x54).contains(&cmd) {
            return false;
        }
        // Only a push carries data.
        if cmd != 0x51 && len != 0 {
            return false;
        }
        let Some(next) = usize::try_from(len)
            .ok()
            .and_then(|l| (off + HEADER).checked_add(l))
        else {
            return false;
        };
        if next == d.len() {
            return true;
        }
        if next > d.len() {
            return false;
        }
        off = next;
    }
    false
}

impl Detector for KcpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Kcp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if whole_segments(ctx.data) {
            Probe::Certain
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

    /// A segment of conversation 10 with command `cmd` carrying `data`.
    fn segment(cmd: u8, sn: u32, data: &[u8]) -> Vec<u8> {
        let mut s = 10u32.to_le_bytes().to_vec();
        s.extend_from_slice(&[cmd, 0, 128, 0]);
        s.extend_from_slice(&20u32.to_le_bytes());
        s.extend_from_slice(&sn.to_le_bytes());
        s.extend_from_slice(&0u32.to_le_bytes());
        s.extend_from_slice(&(data.len() as u32).to_le_bytes());
        s.extend_from_slice(data);
        s
    }

    #[test]
    fn whole_segments_are_certain() {
        let probe = |d: &[u8]| KcpDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        let push = segment(0x51, 0, b"hello");
        assert_eq!(probe(&push), Probe::Certain);
        let mut two = segment(0x52, 1, b"");
        two.extend_from_slice(&push);
        assert_eq!(probe(&two), Probe::Certain);
        assert_eq!(probe(&push[..push.len() - 1]), Probe::NotForUs);
        assert_eq!(probe(&segment(0x50, 0, b"x")), Probe::NotForUs);
        assert_eq!(probe(&segment(0x52, 0, b"x")), Probe::NotForUs);
    }
}
