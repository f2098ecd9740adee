//! A small DER reader for Kerberos messages: one tag-length-value element at a time, definite lengths only, every
//! length checked against the bytes that hold it. Nothing recurses on the input: the message parser
//! ([`super::message`]) walks the fixed structure of RFC 4120's types explicitly, so nesting is bounded by the code,
//! not by the bytes.
//!
//! Kerberos uses single-byte tags only (universal types, context tags `[0]`..`[12]`, application tags up to 30); a
//! multi-byte tag (`0x1f` in the low bits) or an indefinite length (`0x80`, which DER forbids) is malformed.

/// One element: its tag byte and its content bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element<'a> {
    pub tag: u8,
    pub body: &'a [u8],
}

/// The universal tags the messages use.
pub const INTEGER: u8 = 0x02;
pub const BIT_STRING: u8 = 0x03;
pub const OCTET_STRING: u8 = 0x04;
pub const SEQUENCE: u8 = 0x30;
pub const GENERAL_STRING: u8 = 0x1b;
pub const GENERALIZED_TIME: u8 = 0x18;

/// Context tag `[n]`, constructed (`0xa0 | n`).
pub const fn ctx(n: u8) -> u8 {
    0xa0 | n
}

/// Application tag `[APPLICATION n]`, constructed (`0x60 | n`), for `n` below 31.
pub const fn app(n: u8) -> u8 {
    0x60 | n
}

/// Reads the element at the start of `d`: the element and the bytes after it. `None` when the header is not DER
/// (multi-byte tag, indefinite or over-long length) or the content runs past `d`.
pub fn element(d: &[u8]) -> Option<(Element<'_>, &[u8])> {
    let tag = *d.first()?;
    if tag & 0x1f == 0x1f {
        return None;
    }
    let l0 = *d.get(1)?;
    let (len, hl) = if l0 < 0x80 {
        (usize::from(l0), 2)
    } else {
        let n = usize::from(l0 & 0x7f);
        // 0x80 is BER's indefinite length; four length bytes are far more than any message needs.
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = len << 8 | usize::from(*d.get(2 + i)?);
        }
        (len, 2 + n)
    };
    let end = hl.checked_add(len)?;
    let body = d.get(hl..end)?;
    Some((Element { tag, body }, &d[end..]))
}

/// The element at the start of `d`, if it has tag `tag`.
pub fn expect(d: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (e, rest) = element(d)?;
    (e.tag == tag).then_some((e.body, rest))
}

/// The elements of a SEQUENCE's content, in order; stops (and reports `false` through [`Elements::ok`]) at the
/// first malformed one.
pub struct Elements<'a> {
    rest: &'a [u8],
    ok: bool,
}

impl<'a> Elements<'a> {
    pub fn new(body: &'a [u8]) -> Self {
        Elements {
            rest: body,
            ok: true,
        }
    }

    /// Whether every element so far was well formed.
    pub fn ok(&self) -> bool {
        self.ok
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = Element<'a>;
    fn next(&mut self) -> Option<Element<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        match element(self.rest) {
            Some((e, rest)) => {
                self.rest = rest;
                Some(e)
            }
            None => {
                self.ok = false;
                self.rest = &[];
                None
            }
        }
    }
}

/// The fields of a SEQUENCE whose members are context-tagged (`[0] ..., [1] ...`): each field's content by its
/// number, at most 16 (Kerberos' types have 13 at most); a field outside that range or not context-tagged is
/// malformed.
pub fn fields(seq_body: &[u8]) -> Option<[Option<&[u8]>; 16]> {
    let mut out = [None; 16];
    let mut it = Elements::new(seq_body);
    for e in it.by_ref() {
        if e.tag & 0xe0 != 0xa0 {
            return None;
        }
        *out.get_mut(usize::from(e.tag & 0x1f))? = Some(e.body);
    }
    it.ok().then_some(out)
}

/// A DER INTEGER as an `i32` (Kerberos' `Int32`; encryption types and error codes may be negative). `None` for an
/// empty or wider value.
pub fn int32(d: &[u8]) -> Option<i32> {
    let (body, _) = expect(d, INTEGER)?;
    if body.is_empty() || body.len() > 5 {
        return None;
    }
    let mut v: i64 = if body[0] & 0x80 != 0 { -1 } else { 0 };
    for &b in body {
        v = v << 8 | i64::from(b);
    }
    i32::try_from(v).ok()
}

/// A KerberosString (GeneralString, IA5 in practice), its bytes.
pub fn string(d: &[u8]) -> Option<&[u8]> {
    let (body, _) = expect(d, GENERAL_STRING)?;
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_short_long_and_bad() {
        assert_eq!(
            element(&[0x02, 0x01, 0x05, 0xff]),
            Some((
                Element {
                    tag: 0x02,
                    body: &[5]
                },
                &[0xff][..]
            ))
        );
        let mut long = vec![0x04, 0x82, 0x01, 0x00];
        long.extend_from_slice(&[7; 256]);
        assert_eq!(element(&long).map(|(e, _)| e.body.len()), Some(256));
        // Runs past the input, indefinite, five length bytes, multi-byte tag, empty.
        assert_eq!(element(&[0x04, 0x82, 0x01, 0x00, 1, 2]), None);
        assert_eq!(element(&[0x30, 0x80, 0, 0]), None);
        assert_eq!(element(&[0x04, 0x85, 0, 0, 0, 0, 1, 0]), None);
        assert_eq!(element(&[0x1f, 0x01, 0x00]), None);
        assert_eq!(element(&[]), None);
        assert_eq!(element(&[0x04, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
    }

    #[test]
    fn integers_and_fields() {
        assert_eq!(int32(&[0x02, 0x01, 0x17]), Some(23));
        assert_eq!(int32(&[0x02, 0x01, 0x80]), Some(-128));
        assert_eq!(int32(&[0x02, 0x02, 0xff, 0x80]), Some(-128));
        assert_eq!(int32(&[0x02, 0x05, 0x00, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(int32(&[0x02, 0x04, 0x7f, 0xff, 0xff, 0xff]), Some(i32::MAX));
        assert_eq!(int32(&[0x02, 0x00]), None);
        // [0] INTEGER 5, [2] GeneralString "A".
        let seq = [0xa0, 0x03, 0x02, 0x01, 0x05, 0xa2, 0x03, 0x1b, 0x01, b'A'];
        let f = fields(&seq).unwrap();
        assert_eq!(f[0].and_then(int32), Some(5));
        assert_eq!(f[2].and_then(string), Some(&b"A"[..]));
        assert!(f[1].is_none());
        // A universal element among the fields, or a truncated one.
        assert!(fields(&[0x02, 0x01, 0x05]).is_none());
        assert!(fields(&seq[..seq.len() - 1]).is_none());
    }
}
