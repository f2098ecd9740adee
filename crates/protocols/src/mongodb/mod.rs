//! The MongoDB wire protocol: nDPI's `MongoDB`.
//!
//! Every message starts with a 16-byte header of little-endian 32-bit fields (MongoDB's "Wire Protocol" reference):
//! `messageLength` (the whole message), `requestID`, `responseTo` (0 in a request) and `opCode`. The opcodes are few
//! (`OP_MSG` 2013, `OP_COMPRESSED` 2012, the legacy `OP_QUERY` 2004 and `OP_REPLY` 1, and the other legacy ones
//! 2001-2007), and the body is BSON, whose documents start with their own little-endian length and end with a zero
//! byte. The detector reads the first message of a direction once it is whole and is certain when the header's
//! length, the opcode and the first BSON document all fit:
//! * `OP_MSG`: flag bits among the defined ones (checksum present, more to come, exhaust allowed), then a section of
//!   kind 0 (one document) or 1 (a size, an identifier, documents);
//! * `OP_QUERY`: flags, a collection name `db.collection` ending in a zero byte, two counts, a document;
//! * `OP_REPLY`: a reply to a request (`responseTo` set), flags, a cursor id, a start, a count and, when the count
//!   is not zero, a document;
//! * `OP_COMPRESSED`: the original opcode among the others, a compressor id (0 none, 1 snappy, 2 zlib, 3 zstd).
//!
//! No port is needed: a length that must equal the message's, an opcode from a handful and a BSON document whose
//! length and terminator fit are together far from chance.

use crate::scan::le32;
use crate::{AppProto, Detector, Probe, ProbeCtx, Transport};

const OP_REPLY: u32 = 1;
const OP_QUERY: u32 = 2004;
const OP_COMPRESSED: u32 = 2012;
const OP_MSG: u32 = 2013;
/// The largest message a server accepts (48 MB).
const MAX_MESSAGE: u32 = 48_000_000;

/// Whether `d` starts with a BSON document that fits in it: a length of at least 5 that `d` holds, a zero last
/// byte, and an element type (or the end) first.
fn bson(d: &[u8]) -> bool {
    let Some(len) = le32(d, 0).and_then(|l| usize::try_from(l).ok()) else {
        return false;
    };
    let valid_type = |t: u8| matches!(t, 0x00..=0x13 | 0x7f | 0xff);
    len >= 5
        && d.get(len - 1) == Some(&0)
        && d.get(4).is_some_and(|&t| valid_type(t))
        && (len > 5 || d.get(4) == Some(&0))
}

/// Whether `m` (one whole message, header included) is a MongoDB message.
fn message(m: &[u8]) -> bool {
    let (Some(response_to), Some(op)) = (le32(m, 8), le32(m, 12)) else {
        return false;
    };
    let body = m.get(16..).unwrap_or(&[]);
    match op {
        OP_MSG => {
            let flags_ok = le32(body, 0).is_some_and(|f| f & !0x0001_0003 == 0);
            let section = body.get(4..).unwrap_or(&[]);
            flags_ok
                && match section.first() {
                    Some(0) => bson(&section[1..]),
                    Some(1) => le32(section, 1).is_some_and(|n| n >= 5),
                    _ => false,
                }
        }
        OP_QUERY => {
            let name = body.get(4..).unwrap_or(&[]);
            let Some(end) = name.iter().position(|&b| b == 0) else {
                return false;
            };
            let collection = &name[..end];
            response_to == 0
                && collection.contains(&b'.')
                && collection.iter().all(|b| b.is_ascii_graphic())
                && name.get(end + 9..).is_some_and(bson)
        }
        OP_REPLY => {
            let returned = le32(body, 16);
            response_to != 0
                && le32(body, 0).is_some_and(|f| f < 16)
                && match returned {
                    Some(0) => body.len() == 20,
                    Some(_) => body.get(20..).is_some_and(bson),
                    None => false,
                }
        }
        OP_COMPRESSED => {
            let original = le32(body, 0);
            original.is_some_and(|o| matches!(o, OP_REPLY | 2001..=2007 | OP_MSG))
                && le32(body, 4).is_some()
                && body.get(8).is_some_and(|&c| c <= 3)
        }
        _ => false,
    }
}

/// Detector for MongoDB.
pub struct MongoDbDetector;

impl Detector for MongoDbDetector {
    fn proto(&self) -> AppProto {
        AppProto::MongoDb
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.transport != Transport::Tcp {
            return Probe::NotForUs;
        }
        let d = ctx.prefix;
        let Some(len) = le32(d, 0) else {
            return Probe::Unsure;
        };
        if !(21..=MAX_MESSAGE).contains(&len) {
            return Probe::NotForUs;
        }
        if le32(d, 12)
            .is_some_and(|op| !matches!(op, OP_REPLY | 2001..=2007 | OP_COMPRESSED | OP_MSG))
        {
            return Probe::NotForUs;
        }
        match d.get(..len as usize) {
            Some(m) if message(m) => Probe::Certain,
            Some(_) => Probe::NotForUs,
            // Not whole yet: wait while the prefix can still hold it.
            None if ctx.dir_index < 4 && len <= 16_384 => Probe::Unsure,
            None => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    /// A message with header fields `request`, `response_to`, `op` around `body`.
    fn msg(request: u32, response_to: u32, op: u32, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&(16 + body.len() as u32).to_le_bytes());
        m.extend_from_slice(&request.to_le_bytes());
        m.extend_from_slice(&response_to.to_le_bytes());
        m.extend_from_slice(&op.to_le_bytes());
        m.extend_from_slice(body);
        m
    }

    /// `{"hello": 1}` as BSON: an int32 element.
    fn hello_doc() -> Vec<u8> {
        let mut e = vec![0x10];
        e.extend_from_slice(b"hello\0");
        e.extend_from_slice(&1i32.to_le_bytes());
        let mut d = ((4 + e.len() + 1) as u32).to_le_bytes().to_vec();
        d.extend_from_slice(&e);
        d.push(0);
        d
    }

    fn probe(d: &[u8]) -> Probe {
        MongoDbDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn op_msg_query_and_reply() {
        let mut body = 0u32.to_le_bytes().to_vec();
        body.push(0);
        body.extend_from_slice(&hello_doc());
        let m = msg(7, 0, OP_MSG, &body);
        assert_eq!(probe(&m), Probe::Certain);
        assert_eq!(probe(&m[..20]), Probe::Unsure, "not whole yet");

        let mut q = 0u32.to_le_bytes().to_vec();
        q.extend_from_slice(b"admin.$cmd\0");
        q.extend_from_slice(&0u32.to_le_bytes());
        q.extend_from_slice(&1u32.to_le_bytes());
        q.extend_from_slice(&hello_doc());
        assert_eq!(probe(&msg(1, 0, OP_QUERY, &q)), Probe::Certain);

        let mut r = 8u32.to_le_bytes().to_vec();
        r.extend_from_slice(&[0; 8]);
        r.extend_from_slice(&0u32.to_le_bytes());
        r.extend_from_slice(&1u32.to_le_bytes());
        r.extend_from_slice(&hello_doc());
        assert_eq!(probe(&msg(2, 1, OP_REPLY, &r)), Probe::Certain);
        assert_eq!(
            probe(&msg(2, 0, OP_REPLY, &r)),
            Probe::NotForUs,
            "a reply to nothing"
        );
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let mut body = 0u32.to_le_bytes().to_vec();
        body.push(0);
        let mut doc = hello_doc();
        *doc.last_mut().unwrap() = 1;
        body.extend_from_slice(&doc);
        assert_eq!(
            probe(&msg(7, 0, OP_MSG, &body)),
            Probe::NotForUs,
            "no BSON terminator"
        );
        let mut flags = 0x0000_0100u32.to_le_bytes().to_vec();
        flags.push(0);
        flags.extend_from_slice(&hello_doc());
        assert_eq!(
            probe(&msg(7, 0, OP_MSG, &flags)),
            Probe::NotForUs,
            "undefined flag"
        );
        assert_eq!(probe(&msg(7, 0, 3000, &hello_doc())), Probe::NotForUs);
        assert_eq!(probe(b"GET / HTTP/1.1\r\n\r\n"), Probe::NotForUs);
        assert_eq!(probe(&[1, 2]), Probe::Unsure);
    }
}
