//! Base64 decoding as `base64_decode` does it: RFC 4648's alphabet, stopping at the first byte outside it.
//!
//! Suricata 8 decodes `base64_decode` input in RFC 4648 mode: a byte that is not in the alphabet ends the input
//! (that byte and the rest are not decoded), as does padding (`=`). A final group of two or three characters
//! yields the one or two bytes it holds; a single leftover character yields nothing.

/// The value of a base64 character, or `None` outside the alphabet.
fn value(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Whether `c` is one of the 64 characters of the alphabet.
pub fn is_alphabet(c: u8) -> bool {
    value(c).is_some()
}

/// Decodes `input` into `out` (cleared first), stopping at the first byte outside the alphabet.
pub fn decode_rfc4648(input: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut acc: u32 = 0;
    let mut n = 0u32;
    for &c in input {
        let Some(v) = value(c) else { break };
        acc = (acc << 6) | v;
        n += 1;
        if n == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            acc = 0;
            n = 0;
        }
    }
    match n {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        decode_rfc4648(s, &mut v);
        v
    }

    #[test]
    fn decodes_and_stops_where_rfc4648_says() {
        assert_eq!(dec(b"dGVzdA=="), b"test");
        assert_eq!(dec(b"dGVzdA"), b"test");
        assert_eq!(dec(b"aGVsbG8gd29ybGQ="), b"hello world");
        assert_eq!(dec(b"Zm9vYmFy"), b"foobar");
        // A byte outside the alphabet ends the input.
        assert_eq!(dec(b"Zm9v YmFy"), b"foo");
        assert_eq!(dec(b"Zm9vY&mFy"), b"foo");
        assert_eq!(dec(b"Z"), b"");
        assert_eq!(dec(b""), b"");
    }
}
