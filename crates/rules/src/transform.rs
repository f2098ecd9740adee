//! Suricata's transforms: a sticky buffer rewritten before its keywords inspect it (`dns.query; dotprefix;
//! content:".example.com"; endswith;`). A group of a rule inspects one buffer through one chain of transforms; the
//! rule set keeps one prefilter table per (buffer, chain) and the scanner builds each transformed buffer once per
//! buffer handed over, into scratch space it reuses.

use md5::{Digest, Md5};

/// One transform (Suricata 8 names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transform {
    /// `dotprefix`: a `.` before the buffer (so `.example.com` matches the domain and its subdomains only).
    DotPrefix,
    /// `to_lowercase`: ASCII letters to lower case.
    ToLowercase,
    /// `to_uppercase`: ASCII letters to upper case.
    ToUppercase,
    /// `strip_whitespace`: every ASCII white space byte removed.
    StripWhitespace,
    /// `compress_whitespace`: each run of ASCII white space becomes one space.
    CompressWhitespace,
    /// `url_decode`: `%XX` to its byte and `+` to a space; a `%` without two hex digits stays as it is.
    UrlDecode,
    /// `to_md5`: the 16-byte MD5 digest of the buffer.
    ToMd5,
}

impl Transform {
    /// The transform called `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Transform> {
        Some(match name {
            "dotprefix" => Transform::DotPrefix,
            "to_lowercase" => Transform::ToLowercase,
            "to_uppercase" => Transform::ToUppercase,
            "strip_whitespace" => Transform::StripWhitespace,
            "compress_whitespace" => Transform::CompressWhitespace,
            "url_decode" => Transform::UrlDecode,
            "to_md5" => Transform::ToMd5,
            _ => return None,
        })
    }

    /// Writes the transform of `input` to `out` (cleared first).
    pub fn apply(self, input: &[u8], out: &mut Vec<u8>) {
        out.clear();
        match self {
            Transform::DotPrefix => {
                out.push(b'.');
                out.extend_from_slice(input);
            }
            Transform::ToLowercase => out.extend(input.iter().map(u8::to_ascii_lowercase)),
            Transform::ToUppercase => out.extend(input.iter().map(u8::to_ascii_uppercase)),
            Transform::StripWhitespace => {
                out.extend(input.iter().copied().filter(|b| !is_space(*b)));
            }
            Transform::CompressWhitespace => {
                let mut prev_space = false;
                for &b in input {
                    let space = is_space(b);
                    if !(space && prev_space) {
                        out.push(if space { b' ' } else { b });
                    }
                    prev_space = space;
                }
            }
            Transform::UrlDecode => {
                let mut i = 0;
                while let Some(&b) = input.get(i) {
                    let hex = |k: usize| input.get(k).and_then(|c| (*c as char).to_digit(16));
                    match (b, hex(i + 1), hex(i + 2)) {
                        (b'%', Some(h), Some(l)) => {
                            out.push((h * 16 + l) as u8);
                            i += 3;
                        }
                        (b'+', _, _) => {
                            out.push(b' ');
                            i += 1;
                        }
                        _ => {
                            out.push(b);
                            i += 1;
                        }
                    }
                }
            }
            Transform::ToMd5 => out.extend_from_slice(&Md5::digest(input)),
        }
    }
}

/// Suricata's white space (C `isspace`): space, `\t \n \v \f \r`.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Applies `chain` to `input` using two scratch vectors; returns the result (in one of them, or `input` itself for
/// an empty chain).
pub(crate) fn apply_chain<'a>(
    chain: &[Transform],
    input: &'a [u8],
    a: &'a mut Vec<u8>,
    b: &'a mut Vec<u8>,
) -> &'a [u8] {
    let Some((first, rest)) = chain.split_first() else {
        return input;
    };
    first.apply(input, a);
    let (mut cur, mut next) = (a, b);
    for t in rest {
        t.apply(cur, next);
        std::mem::swap(&mut cur, &mut next);
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chain: &[Transform], input: &[u8]) -> Vec<u8> {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        apply_chain(chain, input, &mut a, &mut b).to_vec()
    }

    #[test]
    fn transforms_as_suricata_documents_them() {
        use Transform::*;
        assert_eq!(run(&[DotPrefix], b"google.com"), b".google.com");
        assert_eq!(run(&[ToLowercase], b"GeT /A"), b"get /a");
        assert_eq!(run(&[ToUppercase], b"GeT /a"), b"GET /A");
        assert_eq!(run(&[StripWhitespace], b" a b\t\r\nc "), b"abc");
        assert_eq!(run(&[CompressWhitespace], b"a  \t b\r\n\r\nc"), b"a b c");
        assert_eq!(run(&[UrlDecode], b"a%20b+c%2"), b"a b c%2");
        assert_eq!(
            run(&[ToMd5], b""),
            [
                0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04, 0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8,
                0x42, 0x7e
            ]
        );
        assert_eq!(run(&[ToLowercase, DotPrefix, ToUppercase], b"Ab"), b".AB");
        assert_eq!(run(&[], b"x"), b"x");
        assert_eq!(Transform::from_name("dotprefix"), Some(DotPrefix));
        assert_eq!(Transform::from_name("nope"), None);
    }
}
