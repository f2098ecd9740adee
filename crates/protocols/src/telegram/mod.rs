//! Telegram voice and video calls through Telegram's UDP reflectors (nDPI's `Telegram`), as libtgvoip frames them.
//!
//! Every datagram between a client and a reflector opens with the call's 16-byte peer tag. The reflector's own
//! control messages (a client's request for its public endpoint and the reflector's answer, sent in the clear
//! while the call is set up and as keep-alives) follow the tag with twelve `0xFF` bytes and a 4-byte message type;
//! media datagrams follow it with encrypted bytes. The twelve `0xFF` bytes at offset 16, after a tag that does not
//! end in `0xFF` bytes, decide (RTP carrying G.711 silence is a 12-byte header and a run of `0xFF`: its run starts
//! inside the would-be tag); until one arrives, a datagram whose tag differs from the previous one of its direction
//! rules the flow out.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Bytes of the peer tag that opens every datagram.
const TAG: usize = 16;
/// The marker of a reflector control message: twelve `0xFF` bytes after the tag.
const CONTROL: [u8; 12] = [0xff; 12];
/// The shortest datagram: tag, marker and message type.
const MIN_LEN: usize = TAG + 12 + 4;

/// Whether `d` is a reflector control message (tag, twelve `0xFF` bytes, message type). The marker must start
/// where the tag ends: a run of `0xFF` that began inside the tag is something else, such as an RTP packet of
/// G.711 mu-law silence (a 12-byte header, then `0xFF` bytes).
pub fn is_reflector_control(d: &[u8]) -> bool {
    d.len() >= MIN_LEN
        && d.get(TAG..TAG + 12) == Some(&CONTROL[..])
        && d.get(TAG - 4..TAG) != Some(&[0xff; 4][..])
}

/// Detector for Telegram calls through a UDP reflector.
pub struct TelegramDetector;

impl Detector for TelegramDetector {
    fn proto(&self) -> AppProto {
        AppProto::Telegram
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.data;
        if d.len() < MIN_LEN {
            return Probe::NotForUs;
        }
        if is_reflector_control(d) {
            return Probe::Certain;
        }
        match (ctx.prev.get(..TAG), d.get(..TAG)) {
            (Some(prev), Some(tag)) if prev != tag => Probe::NotForUs,
            _ => Probe::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_udp;

    const PEER_TAG: [u8; 16] = [
        0x2f, 0xe4, 0x9f, 0xa7, 0x6c, 0x4e, 0xb4, 0x33, 0xcb, 0xcd, 0x82, 0xa1, 0xbb, 0xea, 0x62,
        0x1e,
    ];

    fn control(kind: u32, rest: &[u8]) -> Vec<u8> {
        let mut d = PEER_TAG.to_vec();
        d.extend_from_slice(&CONTROL);
        d.extend_from_slice(&kind.to_le_bytes());
        d.extend_from_slice(rest);
        d
    }

    #[test]
    fn reflector_requests_and_answers() {
        // A client's public-endpoint request (type 0xFFFFFFFE, then an 8-byte query id) and a reflector's answer.
        let req = control(
            0xffff_fffe,
            &[0x8b, 0xad, 0x35, 0xd6, 0xe8, 0x16, 0x18, 0x0a],
        );
        assert_eq!(req.len(), 40);
        let probe =
            |d: &[u8], prev: &[u8]| TelegramDetector.probe(&ctx_udp(Direction::ToServer, d, prev));
        assert_eq!(probe(&req, &[]), Probe::Certain);
        let answer = control(0xc015_72c7, &[0; 32]);
        assert_eq!(probe(&answer, &[]), Probe::Certain);
    }

    #[test]
    fn media_waits_for_a_control_message_under_one_tag() {
        let mut media = PEER_TAG.to_vec();
        media.extend((0..60u8).map(|i| i.wrapping_mul(37)));
        let probe =
            |d: &[u8], prev: &[u8]| TelegramDetector.probe(&ctx_udp(Direction::ToServer, d, prev));
        assert_eq!(probe(&media, &[]), Probe::Unsure);
        assert_eq!(probe(&media, &media), Probe::Unsure, "same tag");
        let mut other = media.clone();
        other[3] ^= 1;
        assert_eq!(probe(&other, &media), Probe::NotForUs, "the tag changed");
        assert_eq!(probe(&media[..20], &[]), Probe::NotForUs, "too short");
        // RTP (version 2, PCMU) carrying mu-law silence: a 12-byte header, then 0xFF bytes.
        let mut silence = vec![
            0x80, 0x00, 0x12, 0x34, 0, 0, 0x0a, 0, 0xde, 0xad, 0xbe, 0xef,
        ];
        silence.extend_from_slice(&[0xff; 160]);
        assert_eq!(probe(&silence, &[]), Probe::Unsure);
        assert!(!is_reflector_control(&silence));
    }
}
