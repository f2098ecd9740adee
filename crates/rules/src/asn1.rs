//! `asn1`: checks on the BER-encoded ASN.1 objects found in a buffer, as Snort defined them and Suricata 8 keeps
//! them.
//!
//! `asn1:<option>[, <option>]...` with the options `bitstring_overflow`, `double_overflow`, `oversize_length N`,
//! `absolute_offset N` and `relative_offset N` (the last two exclusive). Decoding starts at the buffer's start plus
//! `absolute_offset`, at the end of the previous match plus `relative_offset` (which may be negative), or, with
//! neither, at the end of the previous match (the buffer's start when there is none); it reads the objects that
//! follow one another from there, and the objects nested in each constructed one, and the keyword matches when one
//! of them fails a check that the rule names:
//! * `bitstring_overflow`: a primitive universal BIT STRING whose unused-bits count (its first content byte) is
//!   larger than the bits its other content bytes hold (`(length - 1) * 8`), the MS04-007 encoding;
//! * `double_overflow`: a primitive universal REAL in decimal form (first content byte `00xxxxxx`) longer than 256
//!   bytes;
//! * `oversize_length N`: an object whose declared length is above `N`.
//!
//! A declared length is what the header says, even where the buffer ends sooner (the content is then what there
//! is): a length that overruns the buffer is itself what such exploits send. The walk is bounded: at most
//! [`MAX_DEPTH`] levels of nesting and [`MAX_OBJECTS`] objects per evaluation, and a header it cannot read (a tag or
//! length form beyond four bytes, the buffer's end, a primitive object of indefinite length) stops it, so any input
//! costs at most a few thousand steps. An indefinite length has no size to compare with `oversize_length`.

/// Deepest nesting of constructed objects the walk enters (Suricata's default `asn1-max-frames` is 256 objects;
/// nesting is bounded separately so that a chain of constructed headers cannot recurse deeply).
pub const MAX_DEPTH: usize = 32;
/// Most objects one evaluation looks at.
pub const MAX_OBJECTS: usize = 256;
/// Longest `oversize_length`, `absolute_offset` and `relative_offset` value accepted.
const MAX_VALUE: i64 = u32::MAX as i64;

/// One `asn1` keyword.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Asn1 {
    pub bitstring_overflow: bool,
    pub double_overflow: bool,
    pub oversize_length: Option<u32>,
    pub absolute_offset: Option<u32>,
    pub relative_offset: Option<i32>,
}

impl Asn1 {
    /// Parses the keyword's value; a one-line reason for anything else.
    pub fn parse(v: &str) -> Result<Asn1, String> {
        let mut a = Asn1::default();
        let mut any = false;
        for opt in v.split(',').map(str::trim) {
            let (name, arg) = match opt.split_once(char::is_whitespace) {
                Some((n, a)) => (n, Some(a.trim())),
                None => (opt, None),
            };
            let num = |what: &str| -> Result<i64, String> {
                let arg = arg.ok_or_else(|| format!("asn1: {what} needs a number"))?;
                arg.parse::<i64>()
                    .ok()
                    .filter(|n| (-MAX_VALUE..=MAX_VALUE).contains(n))
                    .ok_or_else(|| format!("asn1: {what}: invalid number `{}`", short(arg)))
            };
            match name {
                "bitstring_overflow" | "double_overflow" if arg.is_some() => {
                    return Err(format!("asn1: {name} takes no value"));
                }
                "bitstring_overflow" => a.bitstring_overflow = true,
                "double_overflow" => a.double_overflow = true,
                "oversize_length" => {
                    a.oversize_length =
                        Some(u32::try_from(num(name)?).map_err(|_| {
                            "asn1: oversize_length must not be negative".to_string()
                        })?);
                }
                "absolute_offset" => {
                    a.absolute_offset =
                        Some(u32::try_from(num(name)?).map_err(|_| {
                            "asn1: absolute_offset must not be negative".to_string()
                        })?);
                }
                "relative_offset" => {
                    a.relative_offset = Some(
                        i32::try_from(num(name)?)
                            .map_err(|_| "asn1: relative_offset out of range".to_string())?,
                    );
                }
                "" => return Err("asn1: empty option".to_string()),
                other => return Err(format!("asn1: unknown option `{}`", short(other))),
            }
            any = true;
        }
        if !any {
            return Err("asn1 needs an option".to_string());
        }
        if a.absolute_offset.is_some() && a.relative_offset.is_some() {
            return Err("asn1: absolute_offset and relative_offset together".to_string());
        }
        if !a.bitstring_overflow && !a.double_overflow && a.oversize_length.is_none() {
            return Err(
                "asn1: no check (bitstring_overflow, double_overflow or oversize_length)"
                    .to_string(),
            );
        }
        Ok(a)
    }

    /// Whether decoding from the start of `data` finds an object that fails a check (see the module docs).
    pub fn matches(&self, data: &[u8]) -> bool {
        let mut budget = MAX_OBJECTS;
        self.walk(data, 0, &mut budget)
    }

    /// The objects that follow one another in `data`, and those nested in them, at nesting `depth`.
    fn walk(&self, mut data: &[u8], depth: usize, budget: &mut usize) -> bool {
        while !data.is_empty() {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let Some(h) = Header::read(data) else {
                return false;
            };
            let rest = data.get(h.header_len..).unwrap_or(&[]);
            // Indefinite length (constructed only): the content runs to the end of what there is.
            if h.length.is_none() && !h.constructed {
                return false;
            }
            let take = h.length.map_or(rest.len(), |d| {
                usize::try_from(d).map_or(rest.len(), |d| d.min(rest.len()))
            });
            let content = &rest[..take];
            if self.fails(&h, content) {
                return true;
            }
            if h.constructed && depth + 1 < MAX_DEPTH && self.walk(content, depth + 1, budget) {
                return true;
            }
            data = &rest[take..];
        }
        false
    }

    fn fails(&self, h: &Header, content: &[u8]) -> bool {
        if let (Some(n), Some(len)) = (self.oversize_length, h.length)
            && len > u64::from(n)
        {
            return true;
        }
        let declared = h.length.unwrap_or(content.len() as u64);
        let universal_primitive = h.class == 0 && !h.constructed;
        if self.bitstring_overflow
            && universal_primitive
            && h.tag == 3
            && let Some(&unused) = content.first()
            && u64::from(unused) > declared.saturating_sub(1).saturating_mul(8)
        {
            return true;
        }
        self.double_overflow
            && universal_primitive
            && h.tag == 9
            && declared > 256
            && content.first().is_some_and(|b| b & 0xc0 == 0)
    }
}

/// A BER identifier and length.
struct Header {
    class: u8,
    constructed: bool,
    tag: u32,
    /// `None`: the indefinite form.
    length: Option<u64>,
    header_len: usize,
}

impl Header {
    fn read(data: &[u8]) -> Option<Header> {
        let first = *data.first()?;
        let mut i = 1;
        let mut tag = u32::from(first & 0x1f);
        if tag == 0x1f {
            // High tag number: base-128 digits, at most four.
            tag = 0;
            loop {
                let b = *data.get(i)?;
                i += 1;
                tag = (tag << 7) | u32::from(b & 0x7f);
                if b & 0x80 == 0 {
                    break;
                }
                if i > 5 {
                    return None;
                }
            }
        }
        let l = *data.get(i)?;
        i += 1;
        let length = if l & 0x80 == 0 {
            Some(u64::from(l))
        } else if l == 0x80 {
            None
        } else {
            let n = usize::from(l & 0x7f);
            if n > 4 {
                return None;
            }
            let mut v = 0u64;
            for _ in 0..n {
                v = (v << 8) | u64::from(*data.get(i)?);
                i += 1;
            }
            Some(v)
        };
        Some(Header {
            class: first >> 6,
            constructed: first & 0x20 != 0,
            tag,
            length,
            header_len: i,
        })
    }
}

fn short(s: &str) -> String {
    s.chars().take(32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &str) -> Asn1 {
        Asn1::parse(v).unwrap()
    }

    #[test]
    fn parses_snort_and_suricata_options() {
        let a = p("double_overflow, bitstring_overflow, relative_offset 54, oversize_length 2048");
        assert_eq!(
            a,
            Asn1 {
                bitstring_overflow: true,
                double_overflow: true,
                oversize_length: Some(2048),
                absolute_offset: None,
                relative_offset: Some(54),
            }
        );
        assert_eq!(
            p("oversize_length 10, relative_offset -4").relative_offset,
            Some(-4)
        );
        assert_eq!(
            p("bitstring_overflow,absolute_offset 0").absolute_offset,
            Some(0)
        );
        for bad in [
            "",
            "absolute_offset 1",
            "bitstring_overflow 1",
            "oversize_length",
            "oversize_length x",
            "oversize_length -1",
            "absolute_offset -1",
            "oversize_length 1, absolute_offset 1, relative_offset 1",
            "bitstring_overflow,,",
            "print",
            "oversize_length 99999999999",
        ] {
            let e = Asn1::parse(bad).unwrap_err();
            assert!(e.starts_with("asn1") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn bitstring_with_more_unused_bits_than_content() {
        let a = p("bitstring_overflow");
        // BIT STRING, length 2: unused bits 8 fit (8 <= 8), 9 do not.
        assert!(!a.matches(&[0x03, 0x02, 0x08, 0xff]));
        assert!(a.matches(&[0x03, 0x02, 0x09, 0xff]));
        // Nested in a SEQUENCE and an application tag, after another object.
        assert!(a.matches(&[
            0x02, 0x01, 0x05, 0x30, 0x06, 0x61, 0x04, 0x03, 0x02, 0x40, 0x00
        ]));
        // A constructed BIT STRING is not checked itself, nor a context-specific tag 3.
        assert!(!a.matches(&[0x23, 0x02, 0x09, 0xff]));
        assert!(!a.matches(&[0x83, 0x02, 0x09, 0xff]));
    }

    #[test]
    fn double_and_oversize() {
        let mut real = vec![0x09, 0x82, 0x01, 0x01, 0x00];
        real.extend(std::iter::repeat_n(b'1', 256));
        assert!(p("double_overflow").matches(&real));
        real[4] = 0x80; // binary encoding
        assert!(!p("double_overflow").matches(&real));
        // A declared length above the bound matches even where the data ends sooner.
        let long = [0x04, 0x84, 0x7f, 0xff, 0xff, 0xff, 0x41];
        assert!(p("oversize_length 2048").matches(&long));
        assert!(!p("oversize_length 2048").matches(&[0x04, 0x03, 1, 2, 3]));
        assert!(p("oversize_length 2").matches(&[0x04, 0x03, 1, 2, 3]));
        // Unreadable headers stop the walk without a match.
        assert!(!p("oversize_length 0").matches(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0xff]));
        assert!(!p("oversize_length 0").matches(&[0x04, 0x85, 1, 2, 3, 4, 5]));
        assert!(!p("oversize_length 0").matches(&[]));
    }

    #[test]
    fn deep_nesting_and_long_inputs_are_bounded() {
        // 10,000 nested indefinite-length SEQUENCEs, then an oversized object the walk never reaches.
        let mut deep: Vec<u8> = std::iter::repeat_n([0x30, 0x80], 10_000)
            .flatten()
            .collect();
        deep.extend([0x04, 0x84, 0x7f, 0xff, 0xff, 0xff]);
        assert!(!p("oversize_length 1000").matches(&deep));
        // 100,000 empty objects, then an oversized one: the budget ends the walk first.
        let mut flat: Vec<u8> = std::iter::repeat_n([0x05, 0x00], 100_000)
            .flatten()
            .collect();
        flat.extend([0x04, 0x84, 0x7f, 0xff, 0xff, 0xff]);
        assert!(!p("oversize_length 1000").matches(&flat));
        assert!(p("oversize_length 1000").matches(&flat[flat.len() - 6..]));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_any_options(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
                                 n in 0u32..300) {
            let a = Asn1 {
                bitstring_overflow: true,
                double_overflow: true,
                oversize_length: Some(n),
                ..Asn1::default()
            };
            let _ = a.matches(&data);
        }
    }
}
