//! Rule-file text: logical lines (with `\` continuations), option splitting, quoted strings and content bytes.
//!
//! Everything here works on untrusted text with hard caps: a logical line longer than [`MAX_RULE_LEN`] is an error
//! (its remaining continuation lines are skipped without being buffered), strings are scanned once, and nothing
//! recurses.

use std::borrow::Cow;

/// Longest logical rule line (after joining continuations). Suricata's own limit is far lower; real rules with
/// thousands of contents stay well under this.
pub const MAX_RULE_LEN: usize = 64 * 1024;
/// Most options in one rule.
pub const MAX_OPTIONS: usize = 1024;

/// One logical line of a rule file.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A rule (or directive) starting on 1-based line `line`.
    Text { line: usize, text: Cow<'a, str> },
    /// A comment that looks like a disabled rule (`# alert ...`).
    CommentedRule { line: usize },
    /// A logical line that could not be read.
    Error { line: usize, message: String },
}

/// Iterates over the logical lines of a rule file, skipping blank lines and comments.
pub struct Lines<'a> {
    rest: &'a [u8],
    next_line: usize,
}

impl<'a> Lines<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        Lines {
            rest: input,
            next_line: 1,
        }
    }

    fn physical(&mut self) -> Option<(usize, &'a [u8])> {
        if self.rest.is_empty() {
            return None;
        }
        let n = self.next_line;
        self.next_line += 1;
        let (line, rest) = match memchr::memchr(b'\n', self.rest) {
            Some(i) => (&self.rest[..i], &self.rest[i + 1..]),
            None => (self.rest, &self.rest[self.rest.len()..]),
        };
        self.rest = rest;
        Some((n, line.strip_suffix(b"\r").unwrap_or(line)))
    }
}

fn continues(line: &[u8]) -> bool {
    line.trim_ascii_end().ends_with(b"\\")
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        loop {
            let (start, first) = self.physical()?;
            let trimmed = first.trim_ascii_start();
            if trimmed.is_empty() {
                continue;
            }
            if let Some(c) = trimmed.strip_prefix(b"#") {
                let c = c.trim_ascii_start();
                let looks_like_rule = [
                    "alert ", "drop ", "reject ", "pass ", "log ", "sdrop ", "block ",
                ]
                .iter()
                .any(|k| c.starts_with(k.as_bytes()));
                // A comment never continues: Snort and Suricata treat `#` lines as whole comments.
                if looks_like_rule {
                    return Some(Line::CommentedRule { line: start });
                }
                continue;
            }
            if !continues(first) {
                if first.len() > MAX_RULE_LEN {
                    return Some(Line::Error {
                        line: start,
                        message: too_long(),
                    });
                }
                return Some(match std::str::from_utf8(first) {
                    Ok(s) => Line::Text {
                        line: start,
                        text: Cow::Borrowed(s),
                    },
                    Err(e) => Line::Error {
                        line: start,
                        message: utf8_error(first, e),
                    },
                });
            }
            // Join continuation lines, dropping each trailing backslash, up to the cap.
            let mut buf: Vec<u8> = Vec::new();
            let mut cur = first;
            let mut overflow = false;
            loop {
                let more = continues(cur);
                let piece = if more {
                    let t = cur.trim_ascii_end();
                    &t[..t.len() - 1]
                } else {
                    cur
                };
                if !overflow && buf.len() + piece.len() <= MAX_RULE_LEN {
                    buf.extend_from_slice(piece);
                } else {
                    overflow = true;
                    buf = Vec::new();
                }
                if !more {
                    break;
                }
                match self.physical() {
                    Some((_, l)) => cur = l,
                    None => break,
                }
            }
            if overflow {
                return Some(Line::Error {
                    line: start,
                    message: too_long(),
                });
            }
            return Some(match String::from_utf8(buf) {
                Ok(s) => Line::Text {
                    line: start,
                    text: Cow::Owned(s),
                },
                Err(e) => {
                    let msg = utf8_error(e.as_bytes(), e.utf8_error());
                    Line::Error {
                        line: start,
                        message: msg,
                    }
                }
            });
        }
    }
}

fn too_long() -> String {
    format!("rule longer than {MAX_RULE_LEN} bytes")
}

fn utf8_error(bytes: &[u8], e: std::str::Utf8Error) -> String {
    let at = e.valid_up_to();
    let bad = bytes.get(at).copied().unwrap_or(0);
    format!("invalid UTF-8 (byte 0x{bad:02x} at column {})", at + 1)
}

/// One `name[:value]` option, value untrimmed of its quotes and escapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opt<'a> {
    pub name: &'a str,
    pub value: Option<&'a str>,
}

/// Splits a rule into its header text and its options. `text` is a whole logical line.
pub fn split_rule(text: &str) -> Result<(&str, Vec<Opt<'_>>), String> {
    let open = text.find('(').ok_or("missing `(` before the options")?;
    let header = &text[..open];
    let body = text[open + 1..].trim_end();
    let body = body
        .strip_suffix(')')
        .ok_or("missing `)` at the end of the rule")?;
    Ok((header, split_options(body)?))
}

/// Splits `name:value; name; ...` at every semicolon not escaped by `\`, as Suricata does: quotes do not protect a
/// `;` (a `;` in a content string is written `\;` or `|3b|`), and a `"` inside a value needs no escape where the
/// option's own parser takes the value between its first and last quote (`pcre:"/^["']?post/Ri";`).
pub fn split_options(body: &str) -> Result<Vec<Opt<'_>>, String> {
    let mut out = Vec::new();
    let bytes = body.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 1,
            b';' => {
                push_opt(&mut out, &body[start..i])?;
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = body.get(start..).unwrap_or("");
    if !last.trim().is_empty() {
        // Both engines require the last option to end with `;`; accept its absence, it is unambiguous.
        push_opt(&mut out, last)?;
    }
    Ok(out)
}

fn push_opt<'a>(out: &mut Vec<Opt<'a>>, raw: &'a str) -> Result<(), String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(());
    }
    if out.len() >= MAX_OPTIONS {
        return Err(format!("more than {MAX_OPTIONS} options"));
    }
    let (name, value) = match raw.split_once(':') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (raw, None),
    };
    if name.is_empty()
        || !name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
    {
        let shown: String = name.chars().take(40).collect();
        return Err(format!("invalid option name `{shown}`"));
    }
    out.push(Opt { name, value });
    Ok(())
}

/// Splits a value that starts with a quoted string: returns (negated, inside of quotes, text after the quotes).
pub fn quoted(value: &str) -> Result<(bool, &str, &str), String> {
    let v = value.trim_start();
    let (neg, v) = match v.strip_prefix('!') {
        Some(r) => (true, r.trim_start()),
        None => (false, v),
    };
    let Some(inner) = v.strip_prefix('"') else {
        return Err("expected a quoted string".into());
    };
    let bytes = inner.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Ok((neg, &inner[..i], &inner[i + 1..])),
            _ => i += 1,
        }
    }
    Err("unterminated quoted string".into())
}

/// Unescapes a `msg`-like string: `\"`, `\\`, `\;` and `\:` lose their backslash, anything else is kept as is.
pub fn unescape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some(n @ ('"' | '\\' | ';' | ':')) => out.push(n),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes a content string: literal text, `|41 42|` hex sections (read by [`hex_bytes`]), and the escapes `\"`,
/// `\\`, `\;`, `\:`, `\|`.
pub fn content_bytes(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        match b {
            b'|' => {
                let Some(len) = memchr::memchr(b'|', &bytes[i..]) else {
                    return Err("unterminated `|` hex section in content".into());
                };
                hex_bytes(&bytes[i..i + len], &mut out).map_err(|e| format!("{e} in content"))?;
                i += len + 1;
            }
            b'\\' => match bytes.get(i) {
                Some(&n @ (b'"' | b'\\' | b';' | b':' | b'|')) => {
                    out.push(n);
                    i += 1;
                }
                Some(&n) => {
                    return Err(format!(
                        "invalid escape `\\{}` in content",
                        (n as char).escape_default()
                    ));
                }
                None => return Err("content ends with a lone backslash".into()),
            },
            b'"' => return Err("unescaped `\"` in content".into()),
            b';' => return Err("unescaped `;` in content".into()),
            _ => out.push(b),
        }
    }
    if out.is_empty() {
        return Err("empty content".into());
    }
    Ok(out)
}

/// Appends the bytes of a run of hex digit pairs (either case) to `out`; spaces and tabs may separate bytes but not
/// split one. The one hex reader of the project's pattern text: the inside of a content's `|..|` section and each
/// line of a hex pattern file ([`hex_patterns`]).
pub fn hex_bytes(s: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let mut nibble: Option<u8> = None;
    for &b in s {
        if matches!(b, b' ' | b'\t') {
            if nibble.is_some() {
                return Err("hex byte split by a space".into());
            }
            continue;
        }
        let d = (b as char)
            .to_digit(16)
            .ok_or_else(|| format!("invalid hex digit `{}`", (b as char).escape_default()))?
            as u8;
        match nibble.take() {
            Some(h) => out.push(h << 4 | d),
            None => nibble = Some(d),
        }
    }
    if nibble.is_some() {
        return Err("odd number of hex digits".into());
    }
    Ok(())
}

/// The patterns of a hex pattern file such as `content-10k.hex`: one pattern per line as [`hex_bytes`] reads it,
/// blank lines and `#` comments skipped, each with its 1-based line number.
pub fn hex_patterns(text: &[u8]) -> impl Iterator<Item = (usize, Result<Vec<u8>, String>)> + '_ {
    text.split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, line)| {
            let line = line.trim_ascii();
            if line.is_empty() || line.starts_with(b"#") {
                return None;
            }
            let mut bytes = Vec::with_capacity(line.len() / 2);
            Some((i + 1, hex_bytes(line, &mut bytes).map(|()| bytes)))
        })
}

/// The physical lines of a configuration text read as bytes (`threshold.config`, `classification.config`): each
/// with its 1-based number, `\n`-separated, a `\r` before the `\n` dropped. The empty piece after a final `\n` is
/// not a line.
pub fn physical_lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> + '_ {
    let end = text.strip_suffix(b"\n").unwrap_or(text);
    let pieces = if text.is_empty() {
        None
    } else {
        Some(end.split(|&b| b == b'\n'))
    };
    pieces
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix(b"\r").unwrap_or(l)))
}

/// One physical line as text, or why it is not (`invalid UTF-8 (byte 0xff at column 7)`): a configuration line
/// that is not UTF-8 is skipped and reported as a malformed line is, the rest of its file read on.
pub fn line_text(line: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(line).map_err(|e| utf8_error(line, e))
}

/// Longest physical line of a text input that is read whole before it is parsed (rule files, `--content-hex`
/// pattern files, `threshold.config`, `classification.config`, hash lists, the YAML configuration): the logical rule
/// line's cap, [`MAX_RULE_LEN`]. Suricata's own rule line limit is 8 KiB.
pub const MAX_LINE_BYTES: usize = MAX_RULE_LEN;

/// A text input that could not be read whole within its bounds ([`read_text_file`]).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: larger than {limit} bytes")]
    TooLarge {
        path: std::path::PathBuf,
        limit: u64,
    },
    /// A line went past `limit` bytes; nothing after the first `limit + 1` bytes of it was kept, and the reading
    /// stopped there (at most one read buffer further).
    #[error("{path}:{line}: line longer than {limit} bytes")]
    LineTooLong {
        path: std::path::PathBuf,
        line: usize,
        limit: usize,
    },
}

/// Reads the text file at `path` whole, refusing it as soon as it goes past `max_bytes` bytes or one of its lines
/// (`\n`-separated, the `\n` not counted) past `max_line` bytes: a hostile file (a 100 MB line, a device that never
/// ends) costs at most the bounds and one 8 KiB read buffer, never its own length, and the error names the file and
/// the line.
pub fn read_text_file(
    path: &std::path::Path,
    max_bytes: u64,
    max_line: usize,
) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    read_text(file, path, max_bytes, max_line)
}

/// [`read_text_file`] over any reader, naming `path` in errors.
pub fn read_text(
    mut reader: impl std::io::Read,
    path: &std::path::Path,
    max_bytes: u64,
    max_line: usize,
) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut line = 1usize;
    let mut line_len = 0usize;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(ReadError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let got = &chunk[..n];
        let mut pieces = got.split(|&b| b == b'\n').peekable();
        while let Some(piece) = pieces.next() {
            line_len = line_len.saturating_add(piece.len());
            if line_len > max_line {
                return Err(ReadError::LineTooLong {
                    path: path.to_path_buf(),
                    line,
                    limit: max_line,
                });
            }
            if pieces.peek().is_some() {
                line += 1;
                line_len = 0;
            }
        }
        if out.len() as u64 + n as u64 > max_bytes {
            return Err(ReadError::TooLarge {
                path: path.to_path_buf(),
                limit: max_bytes,
            });
        }
        out.extend_from_slice(got);
    }
    Ok(out)
}

/// A text file read whole with its over-long lines left out ([`read_text_lines`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TextLines {
    /// The bytes, each line longer than the bound emptied (its `\n` kept, so the lines keep their numbers).
    pub text: Vec<u8>,
    /// The 1-based numbers of the lines left out, in order.
    pub long_lines: Vec<usize>,
}

/// Reads the text file at `path` whole as [`read_text_lines_from`] does.
pub fn read_text_lines(
    path: &std::path::Path,
    max_bytes: u64,
    max_line: usize,
) -> Result<TextLines, ReadError> {
    let file = std::fs::File::open(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    read_text_lines_from(file, path, max_bytes, max_line)
}

/// Reads `reader` whole as [`read_text`] does, but a line longer than `max_line` bytes does not stop the reading:
/// it is left out (read on to its end without being kept) and its number returned, so the caller can skip and
/// report it as a malformed line, as Suricata reads on past a rule it cannot parse. The bytes read, kept or not,
/// count against `max_bytes`: a reader that never ends (one endless line) is refused at that bound.
pub fn read_text_lines_from(
    mut reader: impl std::io::Read,
    path: &std::path::Path,
    max_bytes: u64,
    max_line: usize,
) -> Result<TextLines, ReadError> {
    let mut out = TextLines::default();
    let mut chunk = [0u8; 8192];
    let mut total = 0u64;
    let mut line = 1usize;
    // Where the current line starts in `out.text`, its length so far, and whether it is being left out.
    let mut line_start = 0usize;
    let mut line_len = 0usize;
    let mut skipping = false;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(ReadError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        total += n as u64;
        if total > max_bytes {
            return Err(ReadError::TooLarge {
                path: path.to_path_buf(),
                limit: max_bytes,
            });
        }
        let mut pieces = chunk[..n].split(|&b| b == b'\n').peekable();
        while let Some(piece) = pieces.next() {
            line_len = line_len.saturating_add(piece.len());
            if !skipping && line_len > max_line {
                skipping = true;
                out.text.truncate(line_start);
                out.long_lines.push(line);
            }
            if !skipping {
                out.text.extend_from_slice(piece);
            }
            if pieces.peek().is_some() {
                out.text.push(b'\n');
                line += 1;
                line_len = 0;
                line_start = out.text.len();
                skipping = false;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn physical_lines_number_every_line_and_drop_cr() {
        let got: Vec<(usize, &[u8])> = physical_lines(b"a\r\n\nb\xff\r\n\rc\n").collect();
        assert_eq!(
            got,
            [
                (1, &b"a"[..]),
                (2, &b""[..]),
                (3, &b"b\xff"[..]),
                (4, &b"\rc"[..])
            ]
        );
        assert_eq!(physical_lines(b"").count(), 0);
        assert_eq!(physical_lines(b"\n").collect::<Vec<_>>(), [(1, &b""[..])]);
        assert_eq!(physical_lines(b"x").collect::<Vec<_>>(), [(1, &b"x"[..])]);
        assert_eq!(line_text(b"ok"), Ok("ok"));
        assert_eq!(
            line_text(b"ab\xc3"),
            Err("invalid UTF-8 (byte 0xc3 at column 3)".to_string())
        );
    }

    #[test]
    fn logical_lines() {
        let input = b"# a comment\n\nalert tcp any any -> any any (msg:\"a\"; \\\n  sid:1;)\r\n# alert udp x\nbad \xff line\n";
        let lines: Vec<Line> = Lines::new(input).collect();
        assert_eq!(
            lines[0],
            Line::Text {
                line: 3,
                text: Cow::Owned("alert tcp any any -> any any (msg:\"a\";   sid:1;)".into())
            }
        );
        assert_eq!(lines[1], Line::CommentedRule { line: 5 });
        assert!(
            matches!(&lines[2], Line::Error { line: 6, message } if message.contains("invalid UTF-8"))
        );
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn too_long_continuations_are_bounded() {
        let mut s = Vec::new();
        for _ in 0..2000 {
            s.extend_from_slice(&[b'a'; 100]);
            s.extend_from_slice(b"\\\n");
        }
        s.extend_from_slice(b"end\nalert ip any any -> any any (sid:1;)\n");
        let lines: Vec<Line> = Lines::new(&s).collect();
        assert!(
            matches!(&lines[0], Line::Error { line: 1, message } if message.contains("longer"))
        );
        assert!(matches!(&lines[1], Line::Text { line: 2002, .. }));
    }

    #[test]
    fn options() {
        let (h, o) = split_rule(
            r#"alert tcp any any -> any any (msg:"a\;b\"c"; content:"x\;y"; nocase; sid:1;)"#,
        )
        .unwrap();
        assert_eq!(h.trim(), "alert tcp any any -> any any");
        assert_eq!(o.len(), 4);
        assert_eq!(
            o[0],
            Opt {
                name: "msg",
                value: Some(r#""a\;b\"c""#)
            }
        );
        assert_eq!(
            o[2],
            Opt {
                name: "nocase",
                value: None
            }
        );
        // As in Suricata, a quote does not hide a `;`: the value ends there, and its own parser finds the quote open.
        let (_, o) = split_rule("alert tcp any any -> any any (msg:\"a; sid:1;)").unwrap();
        assert_eq!(o[0].value, Some("\"a"));
        assert!(quoted(o[0].value.unwrap()).is_err());
        // A `"` inside a pcre needs no escape (ET Open sid 2029732).
        let (_, o) = split_rule(
            r#"alert http any any -> any any (pcre:"/^["']?post/Ri"; content:"x"; sid:2029732;)"#,
        )
        .unwrap();
        assert_eq!(o.len(), 3);
        assert_eq!(o[0].value, Some(r#""/^["']?post/Ri""#));
        assert!(split_rule("alert tcp any any -> any any (sid:1;").is_err());
        assert!(split_rule("alert tcp any any -> any any (s i d:1;)").is_err());
    }

    #[test]
    fn contents() {
        assert_eq!(content_bytes("a|20 41|b\\\"\\;\\\\").unwrap(), b"a Ab\";\\");
        assert_eq!(content_bytes("|0d0A|").unwrap(), b"\r\n");
        for bad in ["|0|", "|zz|", "|41", "a\\q", "", "a\"b", "|4 1|"] {
            assert!(content_bytes(bad).is_err(), "{bad}");
        }
        let (neg, inner, rest) = quoted(r#"!"a\"b",nocase,depth 4"#).unwrap();
        assert!(neg);
        assert_eq!(inner, r#"a\"b"#);
        assert_eq!(rest, ",nocase,depth 4");
        assert_eq!(
            content_bytes("|zz|").unwrap_err(),
            "invalid hex digit `z` in content"
        );
    }

    #[test]
    fn hex_pattern_files() {
        let text = b"# comment\n41 42\n\n  0aFf\t\r\nzz\n414\n4 1\n|41|\n";
        let got: Vec<_> = hex_patterns(text).collect();
        assert_eq!(
            got,
            vec![
                (2, Ok(b"AB".to_vec())),
                (4, Ok(vec![0x0a, 0xff])),
                (5, Err("invalid hex digit `z`".to_string())),
                (6, Err("odd number of hex digits".to_string())),
                (7, Err("hex byte split by a space".to_string())),
                (8, Err("invalid hex digit `|`".to_string())),
            ]
        );
    }

    /// [`read_text_lines_from`]: an over-long line is left out, emptied in place, and numbered; the lines around it
    /// come back whole, at their numbers; the bytes read count against the bound, kept or not.
    #[test]
    fn over_long_lines_are_left_out_and_numbered() {
        let path = std::path::Path::new("long.rules");
        let mut text = b"a\n".to_vec();
        text.extend_from_slice(&[b'x'; 20_000]);
        text.extend_from_slice(b"\nb\r\n");
        text.extend_from_slice(&[b'y'; 21]);
        let got = read_text_lines_from(&text[..], path, 1 << 20, 20).unwrap();
        assert_eq!(got.text, b"a\n\nb\r\n");
        assert_eq!(got.long_lines, [2, 4]);
        // A line at the bound is kept; nothing left out reads as the file itself.
        let ok = b"0123456789\n01234567890123456789\n";
        let got = read_text_lines_from(&ok[..], path, 1 << 20, 20).unwrap();
        assert_eq!((got.text.as_slice(), got.long_lines.len()), (&ok[..], 0));
        // Every byte read counts, the skipped ones too: an endless line stops at the bound.
        let endless = std::io::repeat(b'z');
        let err = read_text_lines_from(endless, path, 100_000, 20).unwrap_err();
        assert_eq!(err.to_string(), "long.rules: larger than 100000 bytes");
    }

    /// A line past the bound stops the reading there: the error names the file and the line, and the reader was
    /// not read much further than the bound (a 100 MB line from a reader that never ends).
    #[test]
    fn a_line_past_the_bound_stops_the_reading() {
        struct Endless {
            served: u64,
        }
        impl std::io::Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                // One short line, then an endless one.
                let head = b"alert ip any any -> any any (sid:1;)\n";
                let n = buf.len().min(4096);
                for (i, b) in buf[..n].iter_mut().enumerate() {
                    let at = self.served as usize + i;
                    *b = head.get(at).copied().unwrap_or(b'a');
                }
                self.served += n as u64;
                Ok(n)
            }
        }
        let mut r = Endless { served: 0 };
        let path = std::path::Path::new("long.rules");
        let err = read_text(&mut r, path, 100 << 20, 1000).unwrap_err();
        assert_eq!(err.to_string(), "long.rules:2: line longer than 1000 bytes");
        assert!(r.served <= 1000 + 2 * 8192, "{}", r.served);
        // Within the bounds the text comes back whole, lines counted across reads.
        let text: Vec<u8> = (0..5000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        assert_eq!(read_text(&text[..], path, 1 << 20, 20).unwrap(), text);
        let err = read_text(&text[..], path, 1000, 20).unwrap_err();
        assert_eq!(err.to_string(), "long.rules: larger than 1000 bytes");
        let mut last_long = text.clone();
        last_long.extend_from_slice(&[b'x'; 21]);
        let err = read_text(&last_long[..], path, 1 << 20, 20).unwrap_err();
        assert_eq!(
            err.to_string(),
            "long.rules:5001: line longer than 20 bytes"
        );
        // Exactly at the bound is fine.
        let mut at_bound = text.clone();
        at_bound.extend_from_slice(&[b'x'; 20]);
        assert_eq!(
            read_text(&at_bound[..], path, 1 << 20, 20).unwrap(),
            at_bound
        );
    }
}
