//! TRDP, the Train Real-time Data Protocol (IEC 61375-2-3): nDPI's `TRDP`.
//!
//! Process data (UDP 17224) and message data (UDP or TCP 17225) share a header: a 32-bit sequence counter, the
//! protocol version `01 00`, a two-letter message type (`Pd`, `Pp`, `Pr`, `Pe` for process data; `Mn`, `Mr`,
//! `Mp`, `Mq`, `Mc`, `Me` for messages), then ids, topology counters and the dataset length, and it ends with a
//! frame check sequence: the CRC-32 of the header before it, little-endian (40-byte process data header, 116-byte
//! message header). A header whose CRC matches is certain.

use crate::scan::{be32, le32};
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

/// Header lengths (FCS included).
const PD_HEADER: usize = 40;
const MD_HEADER: usize = 116;

/// Detector for TRDP.
pub struct TrdpDetector;

/// Whether `d` opens with a TRDP header whose frame check sequence matches.
fn header(d: &[u8]) -> Option<bool> {
    if d.get(4..6)? != [1, 0] {
        return Some(false);
    }
    let len = match d.get(6..8)? {
        b"Pd" | b"Pp" | b"Pr" | b"Pe" => PD_HEADER,
        b"Mn" | b"Mr" | b"Mp" | b"Mq" | b"Mc" | b"Me" => MD_HEADER,
        _ => return Some(false),
    };
    let fcs = le32(d, len - 4)?;
    // The dataset length (offset 20) is bounded by the standard's 64 KiB.
    let dataset = be32(d, 20)?;
    Some(dataset <= 65536 && crc32fast::hash(d.get(..len - 4)?) == fcs)
}

impl Detector for TrdpDetector {
    fn proto(&self) -> AppProto {
        AppProto::Trdp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let (d, stream) = match ctx.transport {
            Transport::Tcp => (ctx.prefix, true),
            _ => (ctx.data, false),
        };
        match header(d) {
            Some(true) => Probe::Certain,
            None if stream && d.len() < MD_HEADER => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    /// A process data frame: sequence 1, type `Pd`, comId 1000, dataset of `data`.
    fn pd(data: &[u8]) -> Vec<u8> {
        let mut h = vec![0, 0, 0, 1, 1, 0, b'P', b'd', 0, 0, 0x03, 0xe8];
        h.extend_from_slice(&[0; 8]);
        h.extend_from_slice(&(data.len() as u32).to_be_bytes());
        h.extend_from_slice(&[0; 12]);
        let fcs = crc32fast::hash(&h);
        h.extend_from_slice(&fcs.to_le_bytes());
        h.extend_from_slice(data);
        h
    }

    #[test]
    fn header_checksum() {
        let udp = |d: &[u8]| TrdpDetector.probe(&ctx_udp(Direction::ToServer, d, &[]));
        let f = pd(b"Hello World");
        assert_eq!(f.len(), PD_HEADER + 11);
        assert_eq!(udp(&f), Probe::Certain);
        let mut bad = f.clone();
        bad[3] ^= 1;
        assert_eq!(
            udp(&bad),
            Probe::NotForUs,
            "the FCS covers the sequence counter"
        );
        assert_eq!(udp(&f[..30]), Probe::NotForUs);
        assert_eq!(
            TrdpDetector.probe(&ctx_tcp(Direction::ToServer, &f[..30])),
            Probe::Unsure
        );
        // The checksum is the standard CRC-32 (IEEE 802.3), as zlib computes it.
        assert_eq!(crc32fast::hash(b"123456789"), 0xcbf4_3926);
    }
}
