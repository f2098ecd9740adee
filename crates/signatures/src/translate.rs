//! Translation of l7-filter's regular expressions into `regex-syntax` HIR (bytes, no Unicode).
//!
//! # The dialect
//!
//! l7-filter ran each pattern through two libraries: the kernel version used Henry Spencer's 1986 `regexp.c`
//! (the "V8" library: `^ $ . [] * + ? () |`, a backslash makes the next character literal, no intervals), the
//! userspace version glibc's POSIX `regcomp(REG_EXTENDED | REG_ICASE | REG_NOSUB)`. Both read a pattern after
//! l7-filter's own `pre_process`, which replaces every `\xHH` by the byte it names *before* the regex library sees
//! it. The rules implemented here, and where the two libraries part ways:
//!
//! * **`\xHH` first.** A hex escape becomes its byte and that byte then has its regex meaning: `\x7c` is an
//!   alternation bar, not a literal `|` (the set's CHANGELOG, 2005-05-23: "`\x7c` is treated _exactly_ like
//!   `|`"). l7-filter warns about such escapes and so do we ([`WarningKind::HexMetachar`]). `\x00` ends the
//!   pattern, because both loaders hand the library a C string ([`WarningKind::NulTruncates`]).
//! * **Case-insensitive, ASCII only.** The kernel lower-cases the packet data (ASCII bytes only) and the
//!   pattern; userspace passes `REG_ICASE`. We fold every ASCII letter of the pattern (literals and bracket
//!   sets) to both cases and leave bytes ≥ 0x80 exact, so the data itself is never copied or rewritten.
//! * **`.` is any byte**, newline included: neither library is given `REG_NEWLINE`. For the same reason `^`
//!   only matches at the start of the connection's data and `$` only at its current end.
//! * **Backslash outside brackets** makes the next byte literal (`\.`, `\|`, `\{`; `\t` is a `t`, as in
//!   Spencer's library; GNU's `\w \s \b \< \>` extensions are not operators here and earn a
//!   [`WarningKind::GnuEscape`]). A trailing backslash is an error.
//! * **Brackets are POSIX**: `]` first (after an optional `^`) is a literal, so is `-` first or last, so is `[`
//!   (eDonkey's `\x58[\x60`), and so is a backslash (`[\x01\\]` holds `\x01` and `\`; `[0-9a-z\-_]` holds the
//!   range `\`..`_`). `[:alpha:]` and the other eleven POSIX classes work inside brackets (glibc; Spencer would
//!   read them as plain characters, no pattern in the set uses them); `[.c.]` and `[=c=]` are accepted for one
//!   byte. A `[:` with no closing `:]` is a literal `[`, as in Spencer's library. Reversed ranges are errors,
//!   as in both libraries.
//! * **Intervals** `{m}`, `{m,}`, `{m,n}` after an atom follow POSIX ERE (userspace); Spencer's library has
//!   none and would match the braces literally ([`WarningKind::Interval`]; no pattern in the set uses one, `rtf`
//!   escapes its brace). Bounds above [`MAX_REPEAT`] are refused. A `{` that does not open a valid interval is
//!   a literal.
//! * **Errors** (never silent): unbalanced `(`/`)`/`[`, a repetition operator with nothing before it, nesting
//!   deeper than [`MAX_NESTING`] (so hostile patterns cannot exhaust the stack). Spencer's library also refused
//!   `*` on an operand that can be empty (`(a?)*`); glibc accepts it and so do we, as its meaning is plain.
//!
//! # Cost
//!
//! One pass over the pattern, no backtracking; the HIR is small (repetitions are not expanded here). The size
//! of the automaton built from it is bounded separately by the compiler's limits in [`crate::set`].

use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, Hir, Look, Repetition};
use std::fmt;
use thiserror::Error;

/// Largest bound accepted in an interval `{m,n}` (glibc's `RE_DUP_MAX` is 32767; bounds that large only serve to
/// blow up automata, and the set uses none).
pub const MAX_REPEAT: u32 = 255;
/// Deepest parenthesis nesting accepted.
pub const MAX_NESTING: usize = 64;

/// Something l7-filter would also have noticed (and mostly warned about), or a place where its two libraries
/// disagree and we had to pick one reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Byte offset in the raw pattern line.
    pub offset: usize,
    /// What was noticed.
    pub kind: WarningKind,
}

/// Kinds of [`Warning`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// A `\xHH` escape named a regex metacharacter, which then acts as one.
    HexMetachar(u8),
    /// A `\x00` escape: the pattern ends there.
    NulTruncates,
    /// A POSIX interval `{m,n}`: the kernel version (Spencer) would have matched the braces literally.
    Interval,
    /// A backslash before one of GNU's extension letters (`w W s S b B < > \` '`): taken as that letter.
    GnuEscape(u8),
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            WarningKind::HexMetachar(b) => write!(
                f,
                "byte {}: \\x{b:02x} is the regex operator '{}' (l7-filter substitutes hex escapes before compiling)",
                self.offset, b as char
            ),
            WarningKind::NulTruncates => {
                write!(
                    f,
                    "byte {}: \\x00 ends the pattern (l7-filter passes it as a C string)",
                    self.offset
                )
            }
            WarningKind::Interval => write!(
                f,
                "byte {}: POSIX interval (userspace l7-filter); the kernel version would match the braces literally",
                self.offset
            ),
            WarningKind::GnuEscape(b) => write!(
                f,
                "byte {}: \\{} is a literal '{}' (Henry Spencer); GNU regex would read an operator",
                self.offset, b as char, b as char
            ),
        }
    }
}

/// Why a pattern could not be translated. Offsets are bytes in the raw pattern line.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TranslateError {
    /// Nothing left to match (an empty line, or `\x00` at the start).
    #[error("empty pattern")]
    Empty,
    /// `(` without its `)`.
    #[error("unmatched '(' at byte {0}")]
    UnmatchedOpen(usize),
    /// `)` without its `(`.
    #[error("unmatched ')' at byte {0}")]
    UnmatchedClose(usize),
    /// `[` without its `]`.
    #[error("unmatched '[' at byte {0}")]
    UnmatchedBracket(usize),
    /// `*`, `+` or `?` at the start of the pattern, a group or a branch.
    #[error("repetition operator '{op}' at byte {offset} follows nothing")]
    RepeatNothing {
        /// Where.
        offset: usize,
        /// Which operator.
        op: char,
    },
    /// A range whose end is below its start, or whose endpoint is a class.
    #[error("invalid range in brackets at byte {0}")]
    BadRange(usize),
    /// `[:name:]` with a name POSIX does not define.
    #[error("unknown character class [:{name}:] at byte {offset}")]
    UnknownClass {
        /// Where.
        offset: usize,
        /// The name as written.
        name: String,
    },
    /// `[.xx.]` or `[=xx=]` naming more than one byte (multi-character collating elements need a locale).
    #[error("collating element at byte {0} is not a single byte")]
    Collating(usize),
    /// A backslash as the last byte.
    #[error("trailing backslash")]
    TrailingBackslash,
    /// `{m,n}` with a bound above [`MAX_REPEAT`] or `m > n`.
    #[error("interval at byte {0} has min > max or a bound above {MAX_REPEAT}")]
    BadInterval(usize),
    /// Parentheses nested deeper than [`MAX_NESTING`].
    #[error("parentheses nested deeper than {MAX_NESTING} at byte {0}")]
    TooDeep(usize),
}

/// A translated pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    /// The regular expression, case folding already applied.
    pub hir: Hir,
    /// The pattern after `\xHH` substitution (what l7-filter handed its regex library), for reports.
    pub preprocessed: Vec<u8>,
    /// Everything noticed on the way.
    pub warnings: Vec<Warning>,
}

impl Translation {
    /// Every match must start at the first byte of the connection (`^` leads every branch), so the pattern is
    /// decided within its first few bytes.
    pub fn is_start_anchored(&self) -> bool {
        self.hir
            .properties()
            .look_set_prefix()
            .contains(Look::Start)
    }

    /// The pattern uses `$` somewhere, so whether it matches depends on where the data currently ends.
    pub fn uses_end_anchor(&self) -> bool {
        self.hir.properties().look_set().contains(Look::End)
    }
}

/// Translates one raw pattern line (as read from the `.pat` file, `\xHH` escapes still in it).
pub fn translate(raw: &[u8]) -> Result<Translation, TranslateError> {
    let (bytes, origin, mut warnings) = preprocess(raw);
    if bytes.is_empty() {
        return Err(TranslateError::Empty);
    }
    let mut parser = Parser {
        s: &bytes,
        origin: &origin,
        pos: 0,
        warnings: &mut warnings,
    };
    let hir = parser.parse_alternation(0)?;
    if parser.pos < bytes.len() {
        // parse_alternation only stops early at a ')' that closes nothing.
        return Err(TranslateError::UnmatchedClose(parser.offset(parser.pos)));
    }
    Ok(Translation {
        hir,
        preprocessed: bytes,
        warnings,
    })
}

/// l7-filter's `pre_process`: `\xHH` → the byte, scanning left to right without regard to other escapes.
/// Returns the bytes, the raw offset of each output byte, and warnings. Stops at a `\x00`.
fn preprocess(raw: &[u8]) -> (Vec<u8>, Vec<usize>, Vec<Warning>) {
    let mut out = Vec::with_capacity(raw.len());
    let mut origin = Vec::with_capacity(raw.len() + 1);
    let mut warnings = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        if let [b'\\', b'x', h, l, ..] = raw[i..]
            && let (Some(h), Some(l)) = (hex_value(h), hex_value(l))
        {
            let byte = h * 16 + l;
            if byte == 0 {
                warnings.push(Warning {
                    offset: i,
                    kind: WarningKind::NulTruncates,
                });
                break;
            }
            if b"$()*+.?[]^|{}\\".contains(&byte) {
                warnings.push(Warning {
                    offset: i,
                    kind: WarningKind::HexMetachar(byte),
                });
            }
            out.push(byte);
            origin.push(i);
            i += 4;
            continue;
        }
        // A literal NUL in the file also ends the C string.
        if raw[i] == 0 {
            warnings.push(Warning {
                offset: i,
                kind: WarningKind::NulTruncates,
            });
            break;
        }
        out.push(raw[i]);
        origin.push(i);
        i += 1;
    }
    origin.push(raw.len());
    (out, origin, warnings)
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The case-insensitive HIR of one literal byte.
fn literal(b: u8) -> Hir {
    if b.is_ascii_alphabetic() {
        let lower = b.to_ascii_lowercase();
        let upper = b.to_ascii_uppercase();
        Hir::class(Class::Bytes(ClassBytes::new([
            ClassBytesRange::new(upper, upper),
            ClassBytesRange::new(lower, lower),
        ])))
    } else {
        Hir::literal([b])
    }
}

fn any_byte() -> Hir {
    Hir::class(Class::Bytes(ClassBytes::new([ClassBytesRange::new(
        0, 255,
    )])))
}

/// The twelve POSIX classes in the C locale.
fn posix_class(name: &[u8]) -> Option<ClassBytes> {
    let r = |a: u8, b: u8| ClassBytesRange::new(a, b);
    let ranges: Vec<ClassBytesRange> = match name {
        b"alpha" => vec![r(b'A', b'Z'), r(b'a', b'z')],
        b"digit" => vec![r(b'0', b'9')],
        b"alnum" => vec![r(b'0', b'9'), r(b'A', b'Z'), r(b'a', b'z')],
        b"upper" => vec![r(b'A', b'Z')],
        b"lower" => vec![r(b'a', b'z')],
        b"space" => vec![r(b'\t', b'\r'), r(b' ', b' ')],
        b"blank" => vec![r(b'\t', b'\t'), r(b' ', b' ')],
        b"punct" => vec![r(b'!', b'/'), r(b':', b'@'), r(b'[', b'`'), r(b'{', b'~')],
        b"print" => vec![r(b' ', b'~')],
        b"graph" => vec![r(b'!', b'~')],
        b"cntrl" => vec![r(0, 0x1f), r(0x7f, 0x7f)],
        b"xdigit" => vec![r(b'0', b'9'), r(b'A', b'F'), r(b'a', b'f')],
        _ => return None,
    };
    Some(ClassBytes::new(ranges))
}

enum Element {
    Byte(u8),
    Class(ClassBytes),
}

struct Parser<'a> {
    s: &'a [u8],
    origin: &'a [usize],
    pos: usize,
    warnings: &'a mut Vec<Warning>,
}

impl Parser<'_> {
    fn offset(&self, pos: usize) -> usize {
        self.origin.get(pos).copied().unwrap_or(usize::MAX)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn parse_alternation(&mut self, depth: usize) -> Result<Hir, TranslateError> {
        let mut branches = vec![self.parse_branch(depth)?];
        while self.peek() == Some(b'|') {
            self.pos += 1;
            branches.push(self.parse_branch(depth)?);
        }
        Ok(Hir::alternation(branches))
    }

    fn parse_branch(&mut self, depth: usize) -> Result<Hir, TranslateError> {
        let mut pieces = Vec::new();
        while let Some(c) = self.peek() {
            if c == b'|' || c == b')' {
                break;
            }
            let atom = self.parse_atom(depth)?;
            pieces.push(self.parse_repeats(atom)?);
        }
        Ok(Hir::concat(pieces))
    }

    fn parse_atom(&mut self, depth: usize) -> Result<Hir, TranslateError> {
        let start = self.pos;
        let Some(c) = self.peek() else {
            return Ok(Hir::empty());
        };
        self.pos += 1;
        match c {
            b'(' => {
                if depth >= MAX_NESTING {
                    return Err(TranslateError::TooDeep(self.offset(start)));
                }
                let inner = self.parse_alternation(depth + 1)?;
                if self.peek() != Some(b')') {
                    return Err(TranslateError::UnmatchedOpen(self.offset(start)));
                }
                self.pos += 1;
                Ok(inner)
            }
            b'[' => self.parse_bracket(start),
            b'.' => Ok(any_byte()),
            b'^' => Ok(Hir::look(Look::Start)),
            b'$' => Ok(Hir::look(Look::End)),
            b'\\' => {
                let Some(next) = self.peek() else {
                    return Err(TranslateError::TrailingBackslash);
                };
                self.pos += 1;
                if b"wWsSbB<>`'".contains(&next) {
                    self.warnings.push(Warning {
                        offset: self.offset(start),
                        kind: WarningKind::GnuEscape(next),
                    });
                }
                Ok(literal(next))
            }
            b'*' | b'+' | b'?' => Err(TranslateError::RepeatNothing {
                offset: self.offset(start),
                op: c as char,
            }),
            _ => Ok(literal(c)),
        }
    }

    fn parse_repeats(&mut self, mut hir: Hir) -> Result<Hir, TranslateError> {
        loop {
            let (min, max) = match self.peek() {
                Some(b'*') => (0, None),
                Some(b'+') => (1, None),
                Some(b'?') => (0, Some(1)),
                Some(b'{') => match self.interval()? {
                    Some(bounds) => bounds,
                    None => return Ok(hir),
                },
                _ => return Ok(hir),
            };
            // At the operator, or at the closing '}' of an interval.
            self.pos += 1;
            hir = Hir::repetition(Repetition {
                min,
                max,
                greedy: true,
                sub: Box::new(hir),
            });
        }
    }

    /// At a `{`: if it opens a valid interval, consumes all of it but the closing `}` and returns the bounds.
    fn interval(&mut self) -> Result<Option<(u32, Option<u32>)>, TranslateError> {
        let start = self.pos;
        let mut i = self.pos + 1;
        let number = |i: &mut usize| -> Option<u32> {
            let begin = *i;
            let mut value: u32 = 0;
            while let Some(d) = self.s.get(*i).filter(|d| d.is_ascii_digit()) {
                value = value.saturating_mul(10).saturating_add(u32::from(d - b'0'));
                *i += 1;
            }
            (*i > begin).then_some(value)
        };
        let Some(min) = number(&mut i) else {
            return Ok(None);
        };
        let max = if self.s.get(i) == Some(&b',') {
            i += 1;
            number(&mut i)
        } else {
            Some(min)
        };
        if self.s.get(i) != Some(&b'}') {
            return Ok(None);
        }
        if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT || m < min) {
            return Err(TranslateError::BadInterval(self.offset(start)));
        }
        self.warnings.push(Warning {
            offset: self.offset(start),
            kind: WarningKind::Interval,
        });
        self.pos = i; // at the closing '}', which parse_repeats consumes
        Ok(Some((min, max)))
    }

    /// After the opening `[` (at `open`).
    fn parse_bracket(&mut self, open: usize) -> Result<Hir, TranslateError> {
        let negate = self.peek() == Some(b'^');
        if negate {
            self.pos += 1;
        }
        let mut class = ClassBytes::empty();
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(TranslateError::UnmatchedBracket(self.offset(open)));
            };
            if c == b']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            let element_start = self.pos;
            match self.bracket_element()? {
                Element::Class(set) => class.union(&set),
                Element::Byte(lo) => {
                    let is_range = self.peek() == Some(b'-')
                        && self.s.get(self.pos + 1).is_some_and(|&b| b != b']');
                    if is_range {
                        self.pos += 1;
                        match self.bracket_element()? {
                            Element::Byte(hi) if hi >= lo => {
                                class.push(ClassBytesRange::new(lo, hi))
                            }
                            _ => return Err(TranslateError::BadRange(self.offset(element_start))),
                        }
                    } else {
                        class.push(ClassBytesRange::new(lo, lo));
                    }
                }
            }
        }
        class.case_fold_simple();
        if negate {
            class.negate();
        }
        Ok(Hir::class(Class::Bytes(class)))
    }

    /// One element inside brackets: a byte, `[:class:]`, `[.c.]` or `[=c=]`. The caller made sure one exists.
    fn bracket_element(&mut self) -> Result<Element, TranslateError> {
        let start = self.pos;
        let Some(c) = self.peek() else {
            return Err(TranslateError::UnmatchedBracket(self.offset(start)));
        };
        if c == b'['
            && let Some(&delim) = self
                .s
                .get(start + 1)
                .filter(|d| matches!(d, b':' | b'.' | b'='))
        {
            let body = start + 2;
            let close = self
                .s
                .get(body..)
                .and_then(|rest| rest.windows(2).position(|w| w == [delim, b']']));
            if let Some(len) = close {
                let name = &self.s[body..body + len];
                self.pos = body + len + 2;
                return match delim {
                    b':' => posix_class(name).map(Element::Class).ok_or_else(|| {
                        TranslateError::UnknownClass {
                            offset: self.offset(start),
                            name: String::from_utf8_lossy(name).into_owned(),
                        }
                    }),
                    _ => match name {
                        [b] => Ok(Element::Byte(*b)),
                        _ => Err(TranslateError::Collating(self.offset(start))),
                    },
                };
            }
        }
        self.pos += 1;
        Ok(Element::Byte(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::meta::Regex;
    use regex_automata::util::syntax;

    fn regex(pattern: &str) -> Regex {
        let t = translate(pattern.as_bytes()).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        Regex::builder()
            .syntax(syntax::Config::new().utf8(false))
            .build_from_hir(&t.hir)
            .unwrap()
    }

    fn matches(pattern: &str, hay: &[u8]) -> bool {
        regex(pattern).is_match(hay)
    }

    #[test]
    fn hex_escapes_become_bytes_before_parsing() {
        assert!(matches(r"^\x01\xff", b"\x01\xff"));
        assert!(!matches(r"^\x01\xff", b"\x01\xfe"));
        // \x7c is an alternation bar, exactly like '|'.
        let t = translate(br"a\x7cb").unwrap();
        assert_eq!(
            t.warnings,
            [Warning {
                offset: 1,
                kind: WarningKind::HexMetachar(b'|')
            }]
        );
        assert!(matches(r"^a\x7cb", b"b"));
        // \x2e is any byte.
        assert!(matches(r"^a\x2eb", b"a\nb"));
        // An escape needs two hex digits; otherwise the backslash escapes the 'x'.
        assert!(matches(r"^\xg", b"xg"));
        assert!(matches(r"^\x4", b"x4"));
        // Upper-case hex digits work too.
        assert!(matches(r"^\xFF", b"\xff"));
    }

    #[test]
    fn nul_escape_ends_the_pattern() {
        let t = translate(br"abc\x00def").unwrap();
        assert_eq!(t.preprocessed, b"abc");
        assert_eq!(t.warnings[0].kind, WarningKind::NulTruncates);
        assert_eq!(translate(br"\x00abc"), Err(TranslateError::Empty));
    }

    #[test]
    fn case_insensitive_ascii_only() {
        assert!(matches("^get /", b"GET /"));
        assert!(matches("^GET /", b"get /"));
        assert!(matches("^[a-c]x", b"BX"));
        assert!(matches("^[A-P]", b"p"));
        assert!(!matches("^[^a]", b"A"), "negation applies after folding");
        // Bytes above 0x7f are not folded (0xc0 and 0xe0 are Latin-1 case pairs).
        assert!(!matches(r"^\xc0", b"\xe0"));
    }

    #[test]
    fn dot_matches_every_byte_and_anchors_are_absolute() {
        assert!(matches("^a.b$", b"a\nb"));
        assert!(matches("^a.b$", b"a\x00b"));
        assert!(!matches("^b", b"a\nb"), "^ is not a line anchor");
        assert!(!matches("a$", b"a\nb"), "$ is not a line anchor");
        assert!(matches("x|^b", b"b"));
    }

    #[test]
    fn brackets_follow_posix() {
        // ']' first is a literal (battlefield2's []\x01]).
        assert!(matches(r"^[]\x01]x", b"]x"));
        assert!(matches(r"^[]\x01]x", b"\x01x"));
        assert!(matches(r"^[^]a]", b"b"));
        assert!(!matches(r"^[^]a]", b"]"));
        // '[' inside brackets is a literal (eDonkey's \x58[\x60).
        assert!(matches(r"^[\x58[\x60]$", b"["));
        assert!(matches(r"^[\x58[\x60]$", b"`"));
        assert!(!matches(r"^[\x58[\x60]$", b"]"));
        // A backslash inside brackets is a literal and can start a range.
        assert!(matches(r"^[\x01\\]$", b"\\"));
        assert!(matches(r"^[a\-_]$", b"]"), "\\-_ is the range 0x5c..0x5f");
        assert!(matches(r"^[a\-_]$", b"^"));
        assert!(!matches(r"^[a\-_]$", b"-"));
        // '-' first or last is literal.
        assert!(matches("^[-a]$", b"-"));
        assert!(matches("^[a-]$", b"-"));
        assert!(matches("^[^-a]$", b"b"));
        assert!(!matches("^[^-a]$", b"-"));
        // Ranges by byte value, hex endpoints.
        assert!(matches(r"^[\x01-?]$", b"5"));
        assert!(!matches(r"^[\x01-?]$", b"@"));
        assert!(matches(r"^[\x09-\x0d -~]+$", b"GET / HTTP/1.1\r\n"));
    }

    #[test]
    fn posix_classes_and_collating_elements() {
        assert!(matches("^[[:alpha:]]+$", b"abcXYZ"));
        assert!(!matches("^[[:alpha:]]$", b"1"));
        assert!(matches("^[[:digit:][:space:]]+$", b"12 \t3"));
        assert!(matches("^[^[:print:]]$", b"\x01"));
        assert!(matches("^[[:xdigit:]]+$", b"deadBEEF"));
        assert!(matches("^[[:punct:]]$", b"["));
        assert!(matches("^[[.-.]a]$", b"-"));
        assert!(matches("^[[=a=]]$", b"A"));
        // A '[:' with no ':]' is a literal '[' (Spencer).
        assert!(matches("^[[:a]+$", b"[:a"));
        assert_eq!(
            translate(b"[[:bogus:]]"),
            Err(TranslateError::UnknownClass {
                offset: 1,
                name: "bogus".into()
            })
        );
        assert_eq!(translate(b"[[.ab.]]"), Err(TranslateError::Collating(1)));
        assert!(
            matches("^[[:upper:]]$", b"a"),
            "classes fold case too (REG_ICASE)"
        );
    }

    #[test]
    fn backslash_escapes_and_braces() {
        assert!(matches(r"^\{\\rtf[12]", b"{\\rtf1"));
        assert!(matches(r"^a\.b\|c\*$", b"a.b|c*"));
        assert!(matches(r"^\t$", b"t"), "Spencer: backslash t is a t");
        let t = translate(br"\w").unwrap();
        assert_eq!(t.warnings[0].kind, WarningKind::GnuEscape(b'w'));
        assert_eq!(translate(b"abc\\"), Err(TranslateError::TrailingBackslash));
        // Intervals (POSIX ERE), with a warning; '{' that opens no interval is literal.
        let t = translate(b"^a{2,3}$").unwrap();
        assert_eq!(t.warnings[0].kind, WarningKind::Interval);
        assert!(matches("^a{2,3}$", b"aaa"));
        assert!(!matches("^a{2,3}$", b"aaaa"));
        assert!(matches("^a{2}$", b"aa"));
        assert!(matches("^a{2,}$", b"aaaaa"));
        assert!(matches("^a{x}$", b"a{x}"));
        assert!(matches("^{a$", b"{a"));
        assert!(matches("^a{$", b"a{"));
        assert_eq!(translate(b"a{3,2}"), Err(TranslateError::BadInterval(1)));
        assert_eq!(translate(b"a{256}"), Err(TranslateError::BadInterval(1)));
        assert_eq!(
            translate(b"a{99999999999999}"),
            Err(TranslateError::BadInterval(1))
        );
    }

    #[test]
    fn structural_errors_are_reported_with_offsets() {
        assert_eq!(translate(b"(ab"), Err(TranslateError::UnmatchedOpen(0)));
        assert_eq!(translate(b"ab)"), Err(TranslateError::UnmatchedClose(2)));
        assert_eq!(translate(b"a[bc"), Err(TranslateError::UnmatchedBracket(1)));
        assert_eq!(translate(b"[]"), Err(TranslateError::UnmatchedBracket(0)));
        assert_eq!(
            translate(b"*a"),
            Err(TranslateError::RepeatNothing { offset: 0, op: '*' })
        );
        assert_eq!(
            translate(b"a|+b"),
            Err(TranslateError::RepeatNothing { offset: 2, op: '+' })
        );
        assert_eq!(
            translate(b"(?:a)"),
            Err(TranslateError::RepeatNothing { offset: 1, op: '?' })
        );
        assert_eq!(translate(b"[z-a]"), Err(TranslateError::BadRange(1)));
        assert_eq!(
            translate(b"[a-[:digit:]]"),
            Err(TranslateError::BadRange(1))
        );
        // Offsets point into the raw line, before hex substitution.
        assert_eq!(
            translate(br"\x41\x42)"),
            Err(TranslateError::UnmatchedClose(8))
        );
        let deep = "(".repeat(MAX_NESTING + 1) + &")".repeat(MAX_NESTING + 1);
        assert_eq!(
            translate(deep.as_bytes()),
            Err(TranslateError::TooDeep(MAX_NESTING))
        );
    }

    #[test]
    fn empty_branches_and_groups_are_allowed() {
        assert!(matches("^(a|)b$", b"b"));
        assert!(matches("^()b$", b"b"));
        assert!(matches("^a**$", b"aaa"));
        assert!(matches("^(a?)*b$", b"aab"));
    }

    #[test]
    fn anchoring_properties() {
        assert!(translate(b"^(a|b)").unwrap().is_start_anchored());
        assert!(translate(b"^a|^b").unwrap().is_start_anchored());
        assert!(!translate(b"^a|b").unwrap().is_start_anchored());
        assert!(translate(b"a$|b").unwrap().uses_end_anchor());
        assert!(!translate(b"a|b").unwrap().uses_end_anchor());
    }
}
