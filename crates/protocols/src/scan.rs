//! Small, panic-free byte helpers shared by the extra detectors (SSH, mail, FTP, SMB, ...).
//!
//! Every accessor returns `Option` instead of indexing, so a detector written with `?` cannot panic on a short
//! or hostile payload. They are `#[inline]` and allocation-free: a detector that answers `NotForUs` usually does so
//! after one or two of these calls.

/// Big-endian u16 at `off`.
#[inline]
pub(crate) fn be16(d: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes([
        *d.get(off)?,
        *d.get(off.checked_add(1)?)?,
    ]))
}

/// Big-endian 24-bit value at `off`.
#[inline]
pub(crate) fn be24(d: &[u8], off: usize) -> Option<u32> {
    let b = d.get(off..off.checked_add(3)?)?;
    Some(u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]))
}

/// Big-endian u32 at `off`.
#[inline]
pub(crate) fn be32(d: &[u8], off: usize) -> Option<u32> {
    let b = d.get(off..off.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Little-endian u16 at `off`.
#[inline]
pub(crate) fn le16(d: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes([
        *d.get(off)?,
        *d.get(off.checked_add(1)?)?,
    ]))
}

/// Little-endian 24-bit value at `off`.
#[inline]
pub(crate) fn le24(d: &[u8], off: usize) -> Option<u32> {
    let b = d.get(off..off.checked_add(3)?)?;
    Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
}

/// Little-endian u32 at `off`.
#[inline]
pub(crate) fn le32(d: &[u8], off: usize) -> Option<u32> {
    let b = d.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Whether `d` starts with `pat`, ASCII case-insensitively.
#[inline]
pub(crate) fn starts_ci(d: &[u8], pat: &[u8]) -> bool {
    d.len() >= pat.len() && d[..pat.len()].eq_ignore_ascii_case(pat)
}

/// What a prefix of a stream says about a literal the stream must start with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lit {
    /// The stream starts with the literal.
    Yes,
    /// The stream is shorter than the literal but agrees so far: more bytes may decide.
    Maybe,
    /// The stream cannot start with the literal.
    No,
}

/// Compares a stream prefix with a literal it should begin with (case-insensitively).
#[inline]
pub(crate) fn lit_ci(d: &[u8], pat: &[u8]) -> Lit {
    let n = d.len().min(pat.len());
    if !d[..n].eq_ignore_ascii_case(&pat[..n]) {
        Lit::No
    } else if n == pat.len() {
        Lit::Yes
    } else {
        Lit::Maybe
    }
}

/// Position of `needle` in `hay` (a short linear scan: inputs here are probe prefixes of at most a few KiB).
#[inline]
pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Position of `needle` in `hay`, ASCII case-insensitively.
#[inline]
pub(crate) fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// Complete lines (terminated by `\n`) of `d`, without the `\r\n` / `\n`. A trailing partial line is not yielded.
#[inline]
pub(crate) fn lines(d: &[u8]) -> impl Iterator<Item = &[u8]> {
    let end = d.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    d[..end].split_inclusive(|&b| b == b'\n').map(|l| {
        let l = l.strip_suffix(b"\n").unwrap_or(l);
        l.strip_suffix(b"\r").unwrap_or(l)
    })
}

/// The first complete line of `d` (without its terminator), if a terminator arrived.
#[inline]
pub(crate) fn first_line(d: &[u8]) -> Option<&[u8]> {
    let p = d.iter().position(|&b| b == b'\n')?;
    let l = &d[..p];
    Some(l.strip_suffix(b"\r").unwrap_or(l))
}

/// Whether every byte is printable ASCII or a tab (a text protocol's line).
#[inline]
pub(crate) fn printable(d: &[u8]) -> bool {
    d.iter().all(|&b| (0x20..0x7f).contains(&b) || b == b'\t')
}

/// Parses an unsigned decimal number made only of ASCII digits (no sign, no spaces), without overflow.
#[inline]
pub(crate) fn parse_u32(d: &[u8]) -> Option<u32> {
    if d.is_empty() || d.len() > 10 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in d {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
    }
    u32::try_from(v).ok()
}

/// Three ASCII digits followed by a space, dash or end of line: the reply code of SMTP/FTP-style protocols.
#[inline]
pub(crate) fn reply_code(line: &[u8]) -> Option<u16> {
    let d = line.get(..3)?;
    if !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    match line.get(3) {
        None | Some(b' ') | Some(b'-') | Some(b'\r') => {}
        _ => return None,
    }
    Some(u16::from(d[0] - b'0') * 100 + u16::from(d[1] - b'0') * 10 + u16::from(d[2] - b'0'))
}

/// Whether `d` is a plausible DNS host name: 1 to 253 bytes of letters, digits, `-`, `_` and dots, with at least one
/// dot, no empty label and no label longer than 63 bytes.
pub(crate) fn is_host_name(d: &[u8]) -> bool {
    !d.is_empty()
        && d.len() <= 253
        && d.contains(&b'.')
        && d.split(|&b| b == b'.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.iter()
                    .all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_are_bounds_checked() {
        let d = [1u8, 2, 3, 4, 5];
        assert_eq!(be16(&d, 0), Some(0x0102));
        assert_eq!(be16(&d, 4), None);
        assert_eq!(be16(&d, usize::MAX), None);
        assert_eq!(be24(&d, 2), Some(0x030405));
        assert_eq!(be32(&d, 1), Some(0x02030405));
        assert_eq!(be32(&d, 2), None);
        assert_eq!(le16(&d, 3), Some(0x0504));
        assert_eq!(le24(&d, 0), Some(0x030201));
        assert_eq!(le32(&d, 0), Some(0x04030201));
    }

    #[test]
    fn literal_prefixes() {
        assert_eq!(lit_ci(b"SS", b"SSH-"), Lit::Maybe);
        assert_eq!(lit_ci(b"ssh-2.0", b"SSH-"), Lit::Yes);
        assert_eq!(lit_ci(b"SSX", b"SSH-"), Lit::No);
        assert_eq!(lit_ci(b"", b"SSH-"), Lit::Maybe);
    }

    #[test]
    fn line_splitting() {
        let v: Vec<&[u8]> = lines(b"a\r\nbc\nde").collect();
        assert_eq!(v, vec![&b"a"[..], &b"bc"[..]]);
        assert_eq!(lines(b"no newline").count(), 0);
        assert_eq!(first_line(b"220 hi\r\nx"), Some(&b"220 hi"[..]));
        assert_eq!(reply_code(b"220-hello"), Some(220));
        assert_eq!(reply_code(b"22x"), None);
        assert_eq!(parse_u32(b"65535"), Some(65535));
        assert_eq!(parse_u32(b"99999999999"), None);
        assert_eq!(find_ci(b"xxSTARTtls", b"starttls"), Some(2));
    }
}
