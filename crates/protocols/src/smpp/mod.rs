//! SMPP 3.4 / 5.0, the short message peer-to-peer protocol: nDPI's `SMPP`.
//!
//! Every PDU opens with four big-endian 32-bit fields (SMPP v3.4 section 3.2): `command_length` (the whole PDU),
//! `command_id` (responses have the top bit set), `command_status` (0 in requests) and `sequence_number` (1 to
//! 0x7FFFFFFF). A session starts with a bind (receiver 1, transmitter 2, transceiver 9) whose body is the
//! system id (at most 16 bytes), password (9), system type (13), each a C string, then the interface version, the
//! address's type of number and numbering plan, and an address range (a C string of at most 41 bytes) that ends the
//! PDU exactly. A bind of that shape is certain; so is a bind response (0x80000001/2/9) that repeats the sequence
//! number of the bind the other side sent, and the link check (`enquire_link`, 0x15, a bare header) once answered
//! by its response with the same sequence number.

use crate::scan::be32;
use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

const ENQUIRE_LINK: u32 = 0x15;
const RESPONSE: u32 = 0x8000_0000;

/// The header fields `(length, id, status, sequence)` of `d` when it holds a whole PDU of at most 64 KiB.
fn header(d: &[u8]) -> Option<(usize, u32, u32, u32)> {
    let len = usize::try_from(be32(d, 0)?).ok()?;
    let (id, status, seq) = (be32(d, 4)?, be32(d, 8)?, be32(d, 12)?);
    let fits = (16..=65_536).contains(&len) && len <= d.len() && (1..=0x7fff_ffff).contains(&seq);
    fits.then_some((len, id, status, seq))
}

fn is_bind(id: u32) -> bool {
    matches!(id, 1 | 2 | 9)
}

/// Whether `body` is a bind's body: three bounded C strings, three bytes, a bounded C string, nothing more.
fn bind_body(body: &[u8]) -> bool {
    let mut at = 0;
    let cstring = |max: usize, at: &mut usize| -> bool {
        let Some(rest) = body.get(*at..) else {
            return false;
        };
        match rest.iter().take(max).position(|&b| b == 0) {
            Some(n) if rest[..n].iter().all(|&b| (0x20..0x7f).contains(&b)) => {
                *at += n + 1;
                true
            }
            _ => false,
        }
    };
    if !(cstring(16, &mut at) && cstring(9, &mut at) && cstring(13, &mut at)) {
        return false;
    }
    let version_ok = body.get(at).is_some_and(|&v| v <= 0x50);
    at += 3;
    version_ok && cstring(41, &mut at) && at == body.len()
}

/// Whether `d` (whole) is a bind request.
fn bind(d: &[u8]) -> Option<u32> {
    let (len, id, status, seq) = header(d)?;
    (is_bind(id) && status == 0 && bind_body(&d[16..len])).then_some(seq)
}

/// Detector for SMPP.
pub struct SmppDetector;

impl Detector for SmppDetector {
    fn proto(&self) -> AppProto {
        AppProto::Smpp
    }
    fn first_bytes(&self) -> ByteSet {
        // The high byte of a length below 16 MiB.
        ByteSet::bytes(&[0])
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        if d.len() < 16 {
            return if d.iter().take(2).all(|&b| b == 0) {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        }
        if bind(d).is_some() {
            return Probe::Certain;
        }
        let Some((len, id, _, seq)) = header(d) else {
            return if be32(d, 0).is_some_and(|l| (16..=65_536).contains(&l)) && ctx.dir_index < 4 {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let peer = header(ctx.peer);
        let answered = |req: u32| peer.is_some_and(|(_, pid, _, pseq)| pid == req && pseq == seq);
        match id {
            // A bind response repeating the bind's sequence number.
            _ if id & RESPONSE != 0 && is_bind(id & !RESPONSE) => {
                if bind(ctx.peer) == Some(seq) {
                    Probe::Certain
                } else if ctx.peer.is_empty() {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            }
            ENQUIRE_LINK if len == 16 => {
                if answered(ENQUIRE_LINK | RESPONSE) {
                    Probe::Certain
                } else {
                    Probe::Unsure
                }
            }
            _ if id == ENQUIRE_LINK | RESPONSE && len == 16 => {
                if answered(ENQUIRE_LINK) {
                    Probe::Certain
                } else {
                    Probe::Unsure
                }
            }
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::ProbeCtx;
    use crate::testkit::ctx_tcp;

    fn pdu(id: u32, status: u32, seq: u32, body: &[u8]) -> Vec<u8> {
        let mut d = Vec::new();
        for w in [16 + body.len() as u32, id, status, seq] {
            d.extend_from_slice(&w.to_be_bytes());
        }
        d.extend_from_slice(body);
        d
    }

    /// bind_transmitter: system id "esme01", password "secret", system type "", version 0x34, TON 1, NPI 1, empty
    /// address range.
    fn bind_tx() -> Vec<u8> {
        pdu(2, 0, 1, b"esme01\0secret\0\0\x34\x01\x01\0")
    }

    fn probe(d: &[u8], peer: &[u8]) -> Probe {
        SmppDetector.probe(&ProbeCtx {
            peer,
            ..ctx_tcp(Direction::ToServer, d)
        })
    }

    #[test]
    fn binds_and_their_responses() {
        assert_eq!(probe(&bind_tx(), &[]), Probe::Certain);
        let resp = pdu(0x8000_0002, 0, 1, b"smsc\0");
        assert_eq!(probe(&resp, &bind_tx()), Probe::Certain);
        assert_eq!(
            probe(&pdu(0x8000_0002, 0, 2, b"smsc\0"), &bind_tx()),
            Probe::NotForUs
        );
        let mut long_id = bind_tx();
        long_id.splice(16..16, *b"0123456789abcdefg");
        let len = long_id.len() as u32;
        long_id[..4].copy_from_slice(&len.to_be_bytes());
        assert_eq!(
            probe(&long_id, &[]),
            Probe::NotForUs,
            "system id over 16 bytes"
        );
        let mut trailing = bind_tx();
        trailing.push(0);
        let len = trailing.len() as u32;
        trailing[..4].copy_from_slice(&len.to_be_bytes());
        assert_eq!(probe(&trailing, &[]), Probe::NotForUs);
    }

    #[test]
    fn enquire_link_needs_its_answer() {
        let q = pdu(ENQUIRE_LINK, 0, 9, &[]);
        assert_eq!(probe(&q, &[]), Probe::Unsure);
        assert_eq!(
            probe(&pdu(ENQUIRE_LINK | RESPONSE, 0, 9, &[]), &q),
            Probe::Certain
        );
        assert_eq!(
            probe(&q, &pdu(ENQUIRE_LINK | RESPONSE, 0, 9, &[])),
            Probe::Certain
        );
        assert_eq!(
            probe(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", &[]),
            Probe::NotForUs
        );
    }
}
