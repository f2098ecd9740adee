//! Protocol Buffers messages sent bare over TCP or UDP: nDPI's `Protobuf`.
//!
//! ## The wire format (protobuf.dev, "Encoding")
//! A message is a sequence of fields, each a *key* then a value. The key is a base-128 varint holding
//! `field_number << 3 | wire_type`; field numbers run from 1 to 2^29 - 1. Wire types: 0 `VARINT` (a varint of at
//! most 10 bytes), 1 `I64` (8 bytes), 2 `LEN` (a varint length, then that many bytes: a string, bytes, a nested
//! message or a packed repeated field), 5 `I32` (4 bytes); 3 and 4 are the deprecated group markers. A message has
//! no header and no end marker, so there is no magic number to look for: the only evidence is that the payload
//! reads as fields from its first byte to its last.
//!
//! ## How sure
//! Random bytes read as a few fields often enough, so the detector demands more than parsing:
//! * every key is well formed (field number not 0, wire type 0, 1, 2 or 5) and every value fits;
//! * every complete `LEN` value is text (UTF-8 without control characters other than white space) or itself a
//!   whole message, checked to a nesting depth of 4: arbitrary binary bytes are what a random payload would show;
//! * the payload is not all printable text: keys of the first fields of a message are control bytes (`08`, `0a`,
//!   `10`, `12`, ...), while a line of a text protocol (an FTP reply continuing with `" files larger..."`) can read
//!   as a few fields of high numbers and text values;
//! * the payload ends exactly at a field's end, or inside its last field (a message split across TCP segments, or
//!   followed by bytes of the next), as long as what is there of it is well formed;
//! * certain from four complete fields in one payload, or from two in each of three payloads of a direction (the
//!   detector is asked again only while every earlier payload of the flow parsed: any that did not ruled it out).
//!
//! Asked last of all detectors (its rank), so a protocol with a signature of its own always wins the payload.

use crate::{AppProto, ByteSet, Detector, Probe, ProbeCtx};

/// Detector for bare protobuf messages.
pub struct ProtobufDetector;

/// Nested messages checked at most this deep.
const MAX_DEPTH: u8 = 4;

/// What one payload reads as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fields {
    /// Complete fields at the top level.
    complete: u32,
    /// The payload ends inside a field.
    truncated: bool,
}

/// Reads a varint at `*at`: `Ok(Some(v))`, `Ok(None)` when the bytes end first, `Err` when it is longer than
/// `max` bytes (or its last byte overflows 64 bits).
fn varint(d: &[u8], at: &mut usize, max: usize) -> Result<Option<u64>, ()> {
    let mut v = 0u64;
    for i in 0..max {
        let Some(&b) = d.get(*at + i) else {
            return Ok(None);
        };
        if i == 9 && b > 1 {
            return Err(());
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *at += i + 1;
            return Ok(Some(v));
        }
    }
    Err(())
}

/// Text as a protobuf `string` holds it: UTF-8 without control characters other than tab, CR and LF.
fn is_text(d: &[u8]) -> bool {
    std::str::from_utf8(d).is_ok_and(|s| {
        s.chars()
            .all(|c| !c.is_control() || matches!(c, '\t' | '\r' | '\n'))
    })
}

/// Printable ASCII and white space only: a line of a text protocol.
fn is_printable(d: &[u8]) -> bool {
    d.iter()
        .all(|&b| (0x20..0x7f).contains(&b) || matches!(b, b'\t' | b'\r' | b'\n'))
}

/// A `LEN` value as a field holds it: text or a nested message (whole, or up to the end of `d` when `partial`).
fn plausible_len_value(v: &[u8], depth: u8, partial: bool) -> bool {
    v.is_empty()
        || is_text(v)
        || (depth < MAX_DEPTH
            && read(v, depth + 1).is_some_and(|f| partial || (f.complete > 0 && !f.truncated)))
}

/// Reads `d` as a sequence of fields; `None` when it is not one.
fn read(d: &[u8], depth: u8) -> Option<Fields> {
    let mut at = 0usize;
    let mut complete = 0u32;
    let truncated = |complete| {
        Some(Fields {
            complete,
            truncated: true,
        })
    };
    while at < d.len() {
        let Some(key) = varint(d, &mut at, 5).ok()? else {
            return truncated(complete);
        };
        let field = key >> 3;
        if field == 0 || field > (1 << 29) - 1 {
            return None;
        }
        match key & 7 {
            0 => {
                if varint(d, &mut at, 10).ok()?.is_none() {
                    return truncated(complete);
                }
            }
            1 | 5 => {
                let n = if key & 7 == 1 { 8 } else { 4 };
                if d.len() - at < n {
                    return truncated(complete);
                }
                at += n;
            }
            2 => {
                let Some(len) = varint(d, &mut at, 5).ok()? else {
                    return truncated(complete);
                };
                let rest = d.get(at..).unwrap_or_default();
                let len = usize::try_from(len).ok()?;
                if len > rest.len() {
                    // The value continues past the payload: what is here must still look like one.
                    return plausible_len_value(rest, depth, true).then_some(Fields {
                        complete,
                        truncated: true,
                    });
                }
                if !plausible_len_value(&rest[..len], depth, false) {
                    return None;
                }
                at += len;
            }
            _ => return None,
        }
        complete += 1;
    }
    Some(Fields {
        complete,
        truncated: false,
    })
}

/// Bytes a message can start with: a one-byte key's low three bits are a valid wire type and its field number is
/// not 0, or the key continues (bit 7).
const FIRST: ByteSet = {
    let mut words = [0u64; 4];
    let mut b = 0usize;
    while b < 256 {
        let wire = b & 7;
        if (wire == 0 || wire == 1 || wire == 2 || wire == 5) && (b >> 3) != 0 {
            words[b / 64] |= 1 << (b % 64);
        }
        b += 1;
    }
    ByteSet(words)
};

impl Detector for ProtobufDetector {
    fn proto(&self) -> AppProto {
        AppProto::Protobuf
    }
    fn first_bytes(&self) -> ByteSet {
        FIRST
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        // The wire format first: most payloads fail on their first keys, before a scan of the whole for text.
        match read(ctx.data, 0) {
            None => Probe::NotForUs,
            Some(_) if is_printable(ctx.data) => Probe::NotForUs,
            Some(f) if f.complete >= 4 || (f.complete >= 2 && ctx.dir_index >= 2) => Probe::Certain,
            Some(f) if f.complete == 0 && !f.truncated => Probe::NotForUs,
            Some(_) => Probe::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::{ctx_tcp, ctx_udp};

    /// A field's key.
    fn key(field: u32, wire: u8) -> Vec<u8> {
        varint_bytes((u64::from(field) << 3) | u64::from(wire))
    }

    fn varint_bytes(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    /// `message Item { int32 id = 1; string name = 2; }` and
    /// `message Order { string customer = 1; repeated Item items = 4; fixed32 crc = 5; double price = 6;
    ///  sint64 delta = 7; }`, encoded by the rules of the wire format.
    fn order() -> Vec<u8> {
        let item = |id: u64, name: &str| {
            let mut m = key(1, 0);
            m.extend(varint_bytes(id));
            m.extend(key(2, 2));
            m.extend(varint_bytes(name.len() as u64));
            m.extend(name.as_bytes());
            m
        };
        let mut m = key(1, 2);
        m.extend(varint_bytes(5));
        m.extend(b"alice");
        for (id, name) in [(1, "pen"), (300, "ink")] {
            let it = item(id, name);
            m.extend(key(4, 2));
            m.extend(varint_bytes(it.len() as u64));
            m.extend(it);
        }
        m.extend(key(5, 5));
        m.extend(0xdead_beefu32.to_le_bytes());
        m.extend(key(6, 1));
        m.extend(12.5f64.to_le_bytes());
        m.extend(key(7, 0));
        m.extend(varint_bytes(u64::MAX)); // sint64 -1 zigzagged is 1; a negative int64 takes ten bytes
        m
    }

    fn probe_tcp(d: &[u8]) -> Probe {
        ProtobufDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn a_whole_message_is_certain_on_either_transport() {
        let m = order();
        assert_eq!(
            read(&m, 0),
            Some(Fields {
                complete: 6,
                truncated: false
            })
        );
        assert_eq!(probe_tcp(&m), Probe::Certain);
        assert_eq!(
            ProtobufDetector.probe(&ctx_udp(Direction::ToServer, &m, &[])),
            Probe::Certain
        );
        assert!(FIRST.contains(m[0]));
    }

    #[test]
    fn a_message_cut_by_segmentation_still_reads() {
        let m = order();
        // Cut inside the price (an I64), inside the second item (a nested LEN), and after the next key.
        for cut in [m.len() - 12, 20, m.len() - 10] {
            let f = read(&m[..cut], 0).expect("a prefix of a message");
            assert!(f.truncated, "cut at {cut}");
        }
        let mut two = order();
        two.extend(key(1, 2)); // the next message's first key
        assert_eq!(probe_tcp(&two), Probe::Certain);
    }

    #[test]
    fn few_fields_wait_for_more_payloads() {
        let mut m = key(7, 0);
        m.extend(varint_bytes(u64::from(u32::MAX)));
        m.extend(key(10, 0));
        m.extend(varint_bytes(u64::MAX));
        assert_eq!(probe_tcp(&m), Probe::Unsure);
        let third = ProbeCtx {
            dir_index: 2,
            ..ctx_tcp(Direction::ToServer, &m)
        };
        assert_eq!(ProtobufDetector.probe(&third), Probe::Certain);
    }

    #[test]
    fn what_is_not_a_message_is_ruled_out() {
        // Field number 0, group wire types, a varint of eleven bytes, binary bytes in a LEN value.
        assert_eq!(probe_tcp(&[0x00, 0x01, 0x02, 0x03]), Probe::NotForUs);
        assert_eq!(probe_tcp(&[0x0b, 0x08, 0x01, 0x0c]), Probe::NotForUs);
        let mut long = key(1, 0);
        long.extend([0xff; 10]);
        long.push(0x01);
        assert_eq!(probe_tcp(&long), Probe::NotForUs);
        let mut bin = key(1, 2);
        bin.extend([4, 0x00, 0xff, 0x10, 0x80]);
        bin.extend(key(2, 0));
        bin.push(1);
        assert_eq!(probe_tcp(&bin), Probe::NotForUs);
        // Text reads as fields of high numbers with text values, but is text: an FTP reply's continuation line.
        let line = b" files larger then 250MB will be deleted after 5 days !!!\r\n";
        assert!(read(line, 0).is_some());
        assert_eq!(probe_tcp(line), Probe::NotForUs);
        // Text protocols fail on their first bytes.
        assert_eq!(probe_tcp(b"GET / HTTP/1.1\r\n\r\n"), Probe::NotForUs);
        assert_eq!(probe_tcp(b"SSH-2.0-OpenSSH_9.6\r\n"), Probe::NotForUs);
        // A TLS record: 0x16 is field 2 of wire type 6.
        assert_eq!(probe_tcp(&[0x16, 0x03, 0x01, 0x00, 0x05]), Probe::NotForUs);
    }

    #[test]
    fn never_panics_and_stays_bounded_on_any_bytes() {
        let mut x = 0x1234_5678u32;
        for len in 0..300usize {
            let d: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let _ = probe_tcp(&d);
        }
        // Deep nesting stops at the depth cap.
        let mut m = key(1, 0);
        m.push(1);
        for _ in 0..50 {
            let mut outer = key(1, 2);
            outer.extend(varint_bytes(m.len() as u64));
            outer.extend(&m);
            m = outer;
        }
        let _ = read(&m, 0);
    }
}
