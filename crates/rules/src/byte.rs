//! The byte keywords: `byte_test`, `byte_jump`, `byte_extract` and `byte_math`, as Suricata's payload keyword
//! documentation describes them.
//!
//! Each reads a number from the buffer: `nbytes` raw bytes (1 to 8, big endian unless `little`) or, with `string`,
//! up to 23 characters of a decimal (default), hexadecimal or octal number (`0`: the rest of the buffer), at `offset` from the buffer start or,
//! with `relative`, from the end of the previous match (the cursor). A `bitmask` is applied to the value, which is
//! then shifted right by the mask's trailing zero bits. Then:
//! * `byte_test` compares the value with a number (`<`, `>`, `=`, `<=`, `>=`, `&` any common bit, `^` any differing
//!   bit; `!` before the operator negates; `!=` is `!=`), without moving the cursor;
//! * `byte_jump` multiplies it (`multiplier`), rounds it up to a multiple of 4 (`align`), adds `post_offset`, and
//!   moves the cursor that far past the bytes read (or from the buffer start with `from_beginning`, from its end with
//!   `from_end`); a jump before the start lands on the start, one at or past the end fails;
//! * `byte_extract` stores the value (times `multiplier`, aligned to `align` 2 or 4) in a rule variable and moves the
//!   cursor past the bytes read;
//! * `byte_math` combines it with `rvalue` (`+ - * / << >>`) into a rule variable; the cursor stays.
//!
//! Variables (`byte_extract`/`byte_math` results) can be the value of `byte_test`, the offset of any byte keyword,
//! the `rvalue` of `byte_math`, and a content's `distance` or `within` (read as a 32-bit signed number, as Suricata
//! does). `dce` reads raw bytes in the byte order of the DCE/RPC PDU the buffer came from (its data representation;
//! big endian on any other buffer). Not supported (the rule is skipped, with the option named): a variable as
//! `nbytes`, and variables as `offset`, `depth` or `isdataat`.

/// Most variables in one rule.
pub const MAX_VARS: usize = 8;

/// A number written in the rule, or a variable set by an earlier `byte_extract`/`byte_math`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    Lit(i64),
    Var(u8),
}

impl Operand {
    /// The value: the literal, or the variable's current value.
    pub(crate) fn get(self, vars: &[u64; MAX_VARS]) -> i64 {
        match self {
            Operand::Lit(n) => n,
            Operand::Var(i) => vars.get(usize::from(i)).copied().unwrap_or(0) as i64,
        }
    }
}

/// Where and how a number is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteRead {
    pub nbytes: u8,
    pub offset: Operand,
    pub relative: bool,
    pub little: bool,
    /// `dce`: the byte order of the DCE/RPC PDU the buffer came from, decides (`little` is ignored).
    pub dce: bool,
    /// `string` with its base (10, 16 or 8).
    pub string: Option<u32>,
    pub bitmask: Option<u64>,
}

/// `byte_test` comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Gt,
    Eq,
    Le,
    Ge,
    And,
    Xor,
}

/// `byte_math` operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathOp {
    Add,
    Sub,
    Mul,
    Div,
    Shl,
    Shr,
}

/// What a byte keyword does with the number it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ByteOp {
    Test {
        cmp: Cmp,
        negated: bool,
        value: Operand,
    },
    Jump {
        multiplier: u64,
        align: bool,
        post_offset: i64,
        from_beginning: bool,
        from_end: bool,
    },
    Extract {
        multiplier: u64,
        align: u8,
        var: u8,
    },
    Math {
        op: MathOp,
        rvalue: Operand,
        var: u8,
    },
}

/// One byte keyword.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ByteItem {
    pub read: ByteRead,
    pub op: ByteOp,
}

impl ByteItem {
    /// Whether the keyword sets the cursor (`byte_jump`, `byte_extract`).
    pub fn moves_cursor(&self) -> bool {
        matches!(self.op, ByteOp::Jump { .. } | ByteOp::Extract { .. })
    }

    /// Evaluates the keyword on `buf`, whose buffer starts at index `origin` (negative when `buf` is a window that
    /// begins after the buffer start), with the cursor at `cursor` (an index into `buf`; `None` before any match).
    /// `None` when it does not match; otherwise the new cursor when the keyword moves it.
    pub fn eval(
        &self,
        buf: &[u8],
        origin: i64,
        cursor: Option<usize>,
        vars: &mut [u64; MAX_VARS],
    ) -> Option<Option<usize>> {
        self.eval_in(buf, origin, cursor, vars, false)
    }

    /// [`ByteItem::eval`] on a buffer whose DCE/RPC byte order (for `dce`) is little endian when `dce_little`.
    pub fn eval_in(
        &self,
        buf: &[u8],
        origin: i64,
        cursor: Option<usize>,
        vars: &mut [u64; MAX_VARS],
        dce_little: bool,
    ) -> Option<Option<usize>> {
        let dce_read;
        let r = if self.read.dce {
            dce_read = ByteRead {
                little: dce_little,
                ..self.read.clone()
            };
            &dce_read
        } else {
            &self.read
        };
        let base = match cursor {
            Some(c) if r.relative => c as i64,
            _ => origin,
        };
        let at = base.checked_add(r.offset.get(vars))?;
        let at = usize::try_from(at).ok()?;
        let field = buf.get(at..)?;
        let (mut val, used) = read_number(field, r)?;
        if let Some(m) = r.bitmask {
            val &= m;
            if m != 0 {
                val >>= m.trailing_zeros();
            }
        }
        let after = at + used;
        match &self.op {
            ByteOp::Test {
                cmp,
                negated,
                value,
            } => {
                let v = value.get(vars) as u64;
                let hit = match cmp {
                    Cmp::Lt => val < v,
                    Cmp::Gt => val > v,
                    Cmp::Eq => val == v,
                    Cmp::Le => val <= v,
                    Cmp::Ge => val >= v,
                    Cmp::And => val & v != 0,
                    Cmp::Xor => val ^ v != 0,
                };
                (hit != *negated).then_some(None)
            }
            ByteOp::Jump {
                multiplier,
                align,
                post_offset,
                from_beginning,
                from_end,
            } => {
                let mut v = val.wrapping_mul(*multiplier);
                if *align && v % 4 != 0 {
                    v = v.wrapping_add(4 - v % 4);
                }
                let v = (v as i64).wrapping_add(*post_offset);
                let from = if *from_beginning {
                    origin
                } else if *from_end {
                    buf.len() as i64
                } else {
                    after as i64
                };
                // Before the start lands on the start; at or past the end fails.
                let to = from.saturating_add(v).max(origin).max(0);
                (to < buf.len() as i64).then_some(Some(to as usize))
            }
            ByteOp::Extract {
                multiplier,
                align,
                var,
            } => {
                let mut v = val.wrapping_mul(*multiplier);
                let a = u64::from(*align);
                if a > 1 && v % a != 0 {
                    v = v.wrapping_add(a - v % a);
                }
                *vars.get_mut(usize::from(*var))? = v;
                Some(Some(after))
            }
            ByteOp::Math { op, rvalue, var } => {
                let rv = rvalue.get(vars) as u64;
                let v = match op {
                    MathOp::Add => val.wrapping_add(rv),
                    MathOp::Sub => val.wrapping_sub(rv),
                    MathOp::Mul => val.wrapping_mul(rv),
                    MathOp::Div => val.checked_div(rv)?,
                    MathOp::Shl => val.checked_shl(u32::try_from(rv).ok()?).unwrap_or(0),
                    MathOp::Shr => val.checked_shr(u32::try_from(rv).ok()?).unwrap_or(0),
                };
                *vars.get_mut(usize::from(*var))? = v;
                Some(None)
            }
        }
    }
}

/// Reads the number at the start of `field`: the value and how many bytes it took.
fn read_number(field: &[u8], r: &ByteRead) -> Option<(u64, usize)> {
    // `0` with `string`: the rest of the buffer, up to the longest number; without (byte_jump only): no bytes, the
    // value 0 (also at the end of the buffer, as Suricata reads it).
    let n = match r.nbytes {
        0 if r.string.is_none() => return Some((0, 0)),
        0 => field.len().min(23),
        n => usize::from(n),
    };
    let bytes = field.get(..n)?;
    match r.string {
        None => {
            let fold = |acc: u64, b: &u8| (acc << 8) | u64::from(*b);
            let v = if r.little {
                bytes.iter().rev().fold(0, fold)
            } else {
                bytes.iter().fold(0, fold)
            };
            Some((v, n))
        }
        Some(base) => {
            // As strtoull over the `nbytes` characters: leading white space, an optional 0x for hex, then digits.
            let mut i = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
            if base == 16
                && bytes.get(i) == Some(&b'0')
                && matches!(bytes.get(i + 1), Some(b'x' | b'X'))
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
            {
                i += 2;
            }
            let start = i;
            let mut v: u64 = 0;
            while let Some(d) = bytes.get(i).and_then(|b| (*b as char).to_digit(base)) {
                v = v.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
                i += 1;
            }
            (i > start).then_some((v, i))
        }
    }
}

/// Parses the value of a byte keyword; `var` resolves (or, for results, allocates) a variable name. Errors are
/// `Err(Ok(reason))` for an unsupported option (skip) and `Err(Err(message))` for a malformed value.
pub(crate) fn parse(
    name: &str,
    value: &str,
    var: &mut dyn FnMut(&str, bool) -> Result<u8, String>,
) -> Result<ByteItem, Result<String, String>> {
    let bad = |m: String| Err(Err(format!("{name}: {m}")));
    let args: Vec<&str> = value.split(',').map(str::trim).collect();
    let mut it = args.iter().copied();
    let mut next = |what: &str| -> Result<&str, Result<String, String>> {
        it.next()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| Err(format!("{name}: missing {what}")))
    };
    let number = |s: &str| -> Option<i64> {
        match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(h) => i64::from_str_radix(h, 16).ok(),
            None => s.parse::<i64>().ok(),
        }
    };
    let operand = |s: &str, var: &mut dyn FnMut(&str, bool) -> Result<u8, String>| match number(s) {
        Some(n) => Ok(Operand::Lit(n)),
        None if s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic()) =>
        {
            var(s, false)
                .map(Operand::Var)
                .map_err(|e| Err(format!("{name}: {e}")))
        }
        None => Err(Err(format!("{name}: invalid number `{}`", trunc(s)))),
    };
    let mut read = ByteRead {
        nbytes: 0,
        offset: Operand::Lit(0),
        relative: false,
        little: false,
        dce: false,
        string: None,
        bitmask: None,
    };
    let mut op;
    let mut rest: Vec<&str> = Vec::new();
    match name {
        "byte_test" => {
            read.nbytes = nbytes(name, next("byte count")?)?;
            let mut o = next("operator")?;
            let negated = match o.strip_prefix('!') {
                Some(r) => {
                    o = r.trim();
                    true
                }
                None => false,
            };
            let cmp = match o {
                "<" => Cmp::Lt,
                ">" => Cmp::Gt,
                "=" => Cmp::Eq,
                // Snort's `!` alone: not equal.
                "" if negated => Cmp::Eq,
                "<=" => Cmp::Le,
                ">=" => Cmp::Ge,
                "&" => Cmp::And,
                "^" => Cmp::Xor,
                other => return bad(format!("invalid operator `{}`", trunc(other))),
            };
            let value = operand(next("value")?, var)?;
            read.offset = operand(next("offset")?, var)?;
            op = ByteOp::Test {
                cmp,
                negated,
                value,
            };
            rest.extend(it);
        }
        "byte_jump" => {
            read.nbytes = nbytes(name, next("byte count")?)?;
            read.offset = operand(next("offset")?, var)?;
            op = ByteOp::Jump {
                multiplier: 1,
                align: false,
                post_offset: 0,
                from_beginning: false,
                from_end: false,
            };
            rest.extend(it);
        }
        "byte_extract" => {
            read.nbytes = nbytes(name, next("byte count")?)?;
            read.offset = operand(next("offset")?, var)?;
            let v = next("variable name")?;
            let id = var(v, true).map_err(|e| Err(format!("{name}: {e}")))?;
            op = ByteOp::Extract {
                multiplier: 1,
                align: 0,
                var: id,
            };
            rest.extend(it);
        }
        "byte_math" => {
            // Named arguments: bytes N, offset N, oper OP, rvalue N|var, result var, and flags.
            let (mut bytes, mut offset, mut oper, mut rvalue, mut result) =
                (None, None, None, None, None);
            for a in it {
                let (k, v) = match a.split_once(char::is_whitespace) {
                    Some((k, v)) => (k, Some(v.trim())),
                    None => (a, None),
                };
                match (k, v) {
                    ("bytes", Some(v)) => bytes = Some(v),
                    ("offset", Some(v)) => offset = Some(v),
                    ("oper", Some(v)) => oper = Some(v),
                    ("rvalue", Some(v)) => rvalue = Some(v),
                    ("result", Some(v)) => result = Some(v),
                    _ => rest.push(a),
                }
            }
            read.nbytes = nbytes(
                name,
                bytes.ok_or_else(|| Err(format!("{name}: missing bytes")))?,
            )?;
            read.offset = operand(
                offset.ok_or_else(|| Err(format!("{name}: missing offset")))?,
                var,
            )?;
            let op_ = match oper.ok_or_else(|| Err(format!("{name}: missing oper")))? {
                "+" => MathOp::Add,
                "-" => MathOp::Sub,
                "*" => MathOp::Mul,
                "/" => MathOp::Div,
                "<<" => MathOp::Shl,
                ">>" => MathOp::Shr,
                other => return bad(format!("invalid oper `{}`", trunc(other))),
            };
            let rvalue = operand(
                rvalue.ok_or_else(|| Err(format!("{name}: missing rvalue")))?,
                var,
            )?;
            let result = result.ok_or_else(|| Err(format!("{name}: missing result")))?;
            let id = var(result, true).map_err(|e| Err(format!("{name}: {e}")))?;
            op = ByteOp::Math {
                op: op_,
                rvalue,
                var: id,
            };
        }
        _ => return bad("not a byte keyword".into()),
    }
    let mut k = 0;
    while let Some(&a) = rest.get(k) {
        k += 1;
        let (key, val) = match a.split_once(char::is_whitespace) {
            Some((key, v)) => (key, Some(v.trim())),
            None => (a, None),
        };
        match (key, val, &mut op) {
            ("relative", None, _) => read.relative = true,
            ("big", None, _) => read.little = false,
            ("little", None, _) => read.little = true,
            ("endian", Some("big"), _) => read.little = false,
            ("endian", Some("little"), _) => read.little = true,
            ("string", None, _) => {
                read.string = Some(10);
                if let Some(&b) = rest.get(k)
                    && let Some(base) = base_of(b)
                {
                    read.string = Some(base);
                    k += 1;
                }
            }
            ("string", Some(b), _) => {
                read.string =
                    Some(base_of(b).ok_or_else(|| {
                        Err(format!("{name}: invalid string base `{}`", trunc(b)))
                    })?);
            }
            ("hex" | "dec" | "oct", None, _) => read.string = base_of(key),
            ("bitmask", Some(m), _) => {
                let m = number(m)
                    .and_then(|m| u64::try_from(m).ok())
                    .ok_or_else(|| Err(format!("{name}: invalid bitmask `{}`", trunc(m))))?;
                read.bitmask = Some(m);
            }
            ("dce", None, _) => read.dce = true,
            (
                "multiplier",
                Some(m),
                ByteOp::Jump { multiplier, .. } | ByteOp::Extract { multiplier, .. },
            ) => {
                *multiplier = m
                    .parse::<u64>()
                    .ok()
                    .filter(|&m| m > 0 && m <= 65535)
                    .ok_or_else(|| Err(format!("{name}: invalid multiplier `{}`", trunc(m))))?;
            }
            ("align", None, ByteOp::Jump { align, .. }) => *align = true,
            ("align", Some(a), ByteOp::Extract { align, .. }) => {
                *align = match a {
                    "2" => 2,
                    "4" => 4,
                    other => return bad(format!("align must be 2 or 4, not `{}`", trunc(other))),
                };
            }
            ("from_beginning", None, ByteOp::Jump { from_beginning, .. }) => *from_beginning = true,
            ("from_end", None, ByteOp::Jump { from_end, .. }) => *from_end = true,
            ("post_offset", Some(p), ByteOp::Jump { post_offset, .. }) => {
                *post_offset = p
                    .parse::<i64>()
                    .ok()
                    .filter(|p| p.unsigned_abs() <= 1 << 20)
                    .ok_or_else(|| Err(format!("{name}: invalid post_offset `{}`", trunc(p))))?;
            }
            _ => return bad(format!("unknown option `{}`", trunc(a))),
        }
    }
    if let ByteOp::Jump {
        from_beginning: true,
        from_end: true,
        ..
    } = op
    {
        return bad("from_beginning and from_end together".into());
    }
    let max = if read.string.is_some() { 23 } else { 8 };
    if usize::from(read.nbytes) > max {
        return bad(format!("at most {max} bytes"));
    }
    // Suricata reads no bytes for a byte_jump of 0 (the value is 0: the jump is `post_offset` from the cursor);
    // byte_test, byte_extract and byte_math need a number to read.
    if read.nbytes == 0 && read.string.is_none() && !matches!(op, ByteOp::Jump { .. }) {
        return bad("a byte count of 0 needs `string` (or byte_jump)".into());
    }
    if let Operand::Lit(o) = read.offset
        && (o.unsigned_abs() > 65535 || (o < 0 && !read.relative))
    {
        return bad(format!("offset {o} out of range"));
    }
    Ok(ByteItem { read, op })
}

fn nbytes(name: &str, s: &str) -> Result<u8, Result<String, String>> {
    match s.parse::<u8>() {
        Ok(n @ 0..=23) => Ok(n),
        Ok(_) => Err(Err(format!("{name}: byte count must be 0 to 23"))),
        Err(_) if s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic()) => {
            Err(Ok(format!("{name} byte count from a variable")))
        }
        Err(_) => Err(Err(format!("{name}: invalid byte count `{}`", trunc(s)))),
    }
}

fn base_of(s: &str) -> Option<u32> {
    match s {
        "dec" => Some(10),
        "hex" => Some(16),
        "oct" => Some(8),
        _ => None,
    }
}

fn trunc(s: &str) -> String {
    s.chars().take(32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, v: &str) -> ByteItem {
        let mut names: Vec<String> = Vec::new();
        let mut var = |n: &str, define: bool| -> Result<u8, String> {
            match names.iter().position(|x| x == n) {
                Some(i) => Ok(i as u8),
                None if define => {
                    names.push(n.to_string());
                    Ok((names.len() - 1) as u8)
                }
                None => Err(format!("unknown variable `{n}`")),
            }
        };
        match parse(name, v, &mut var) {
            Ok(i) => i,
            Err(e) => panic!("{name}:{v}: {e:?}"),
        }
    }

    /// The cursor after the keyword (the old one when it does not move it), or `None` for no match.
    fn ok(i: &ByteItem, buf: &[u8], cursor: usize) -> Option<usize> {
        let c = Some(cursor).filter(|&c| c > 0);
        i.eval(buf, 0, c, &mut [0; MAX_VARS])
            .map(|moved| moved.unwrap_or(cursor))
    }

    #[test]
    fn byte_test_examples_from_the_documentation() {
        // byte_test:2, =, 0x01, 0; on |00 01| matches; on |00 02| does not.
        let t = item("byte_test", "2, =, 0x01, 0");
        assert_eq!(ok(&t, &[0, 1, 9], 0), Some(0));
        assert_eq!(ok(&t, &[0, 2], 0), None);
        assert_eq!(ok(&t, &[0], 0), None, "too short");
        // Little endian, relative, negated.
        let t = item("byte_test", "2,!=,0x0102,1,relative,little");
        assert_eq!(ok(&t, &[9, 9, 2, 1], 1), None);
        assert_eq!(ok(&t, &[9, 9, 2, 2], 1), Some(1));
        // & and !&.
        assert_eq!(ok(&item("byte_test", "1,&,0x80,0"), &[0x81], 0), Some(0));
        assert_eq!(ok(&item("byte_test", "1,!&,0x80,0"), &[0x81], 0), None);
        // String, decimal; bitmask shifts right by the mask's trailing zeros.
        assert_eq!(
            ok(&item("byte_test", "3,>,99,0,string,dec"), b"100", 0),
            Some(0)
        );
        assert_eq!(
            ok(&item("byte_test", "3,>,99,0,string,dec"), b"099", 0),
            None
        );
        assert_eq!(
            ok(&item("byte_test", "1,=,3,0,bitmask 0x30"), &[0x3f], 0),
            Some(0)
        );
        // A negative relative offset reads before the cursor.
        assert_eq!(
            ok(&item("byte_test", "1,=,7,-2,relative"), &[7, 0, 0], 2),
            Some(2)
        );
    }

    #[test]
    fn byte_jump_and_extract_move_the_cursor() {
        // byte_jump:1,0 on |02 aa bb cc|: past the length byte (1) plus 2 → cursor 3.
        let j = item("byte_jump", "1,0");
        assert_eq!(ok(&j, &[2, 0xaa, 0xbb, 0xcc], 0), Some(3));
        // Landing at the end fails.
        assert_eq!(ok(&j, &[2, 0xaa, 0xbb], 0), None);
        let j = item("byte_jump", "1,0,multiplier 2,post_offset -1");
        assert_eq!(ok(&j, &[2, 0, 0, 0, 0, 0], 0), Some(4));
        let j = item("byte_jump", "1,0,align");
        assert_eq!(ok(&j, &[1, 0, 0, 0, 0, 0, 0], 0), Some(5));
        let j = item("byte_jump", "1,0,from_beginning");
        assert_eq!(ok(&j, &[2, 0, 0], 0), Some(2));
        // A byte count of 0 reads nothing: the jump is the post_offset from the cursor (also from the end of the
        // buffer); before the start lands on the start.
        let z = item("byte_jump", "0,0,relative,post_offset -2");
        assert_eq!(
            z.eval(b"abcdef", 0, Some(3), &mut [0; MAX_VARS]),
            Some(Some(1))
        );
        assert_eq!(
            z.eval(b"abcdef", 0, Some(1), &mut [0; MAX_VARS]),
            Some(Some(0))
        );
        assert_eq!(
            z.eval(b"abcdef", 0, Some(6), &mut [0; MAX_VARS]),
            Some(Some(4))
        );
        let j = item("byte_jump", "1,0,from_end,post_offset -3");
        assert_eq!(ok(&j, &[0, 0, 0, 0], 0), Some(1));
        let j = item("byte_jump", "2,1,relative,string,dec");
        assert_eq!(ok(&j, b"x_12abcdefghijklm", 1), Some(16));
        // byte_extract stores the value and moves past the bytes read; byte_test reads the variable.
        let mut names = Vec::<String>::new();
        let mut var = |n: &str, define: bool| -> Result<u8, String> {
            match names.iter().position(|x| x == n) {
                Some(i) => Ok(i as u8),
                None if define => {
                    names.push(n.to_string());
                    Ok((names.len() - 1) as u8)
                }
                None => Err(format!("unknown variable `{n}`")),
            }
        };
        let e = parse("byte_extract", "1,0,len", &mut var).unwrap();
        let t = parse("byte_test", "1,=,len,0,relative", &mut var).unwrap();
        let m = parse(
            "byte_math",
            "bytes 1, offset 0, oper *, rvalue len, result sq, relative",
            &mut var,
        )
        .unwrap();
        let t2 = parse("byte_test", "1,<,sq,0", &mut var).unwrap();
        let mut vars = [0; MAX_VARS];
        let buf = [3u8, 3, 9];
        let c = e.eval(&buf, 0, None, &mut vars).unwrap();
        assert_eq!((c, vars[0]), (Some(1), 3));
        assert_eq!(t.eval(&buf, 0, c, &mut vars), Some(None));
        assert_eq!(m.eval(&buf, 0, c, &mut vars), Some(None));
        assert_eq!(vars[1], 9);
        assert_eq!(t2.eval(&buf, 0, None, &mut vars), Some(None));
        // In a window that starts 2 bytes into the buffer, offset 2 is the window's first byte.
        assert_eq!(
            item("byte_test", "1,=,5,2").eval(&[5], -2, None, &mut vars),
            Some(None)
        );
    }

    #[test]
    fn garbage_arguments_are_one_line_errors() {
        let mut var =
            |n: &str, _: bool| -> Result<u8, String> { Err(format!("unknown variable `{n}`")) };
        for (name, v) in [
            ("byte_test", ""),
            ("byte_test", "2"),
            ("byte_test", "2,~,1,0"),
            ("byte_test", "99,=,1,0"),
            ("byte_test", "0,=,1,0"),
            ("byte_test", "24,=,1,0,string"),
            ("byte_test", "2,=,1,-5"),
            ("byte_test", "2,=,nosuchvar,0"),
            ("byte_test", "2,=,1,0,bitmask zz"),
            ("byte_jump", "2,0,multiplier 0"),
            ("byte_jump", "2,0,from_beginning,from_end"),
            ("byte_jump", "2,0,post_offset x"),
            ("byte_jump", "2,0,frobnicate"),
            ("byte_extract", "2,0"),
            ("byte_extract", "2,0,x,align 3"),
            ("byte_math", "bytes 2, offset 0, oper %, rvalue 1, result r"),
            ("byte_math", "bytes 2"),
            ("byte_test", "\u{feff},\u{0},\"\""),
        ] {
            match parse(name, v, &mut var) {
                Err(Err(m)) => assert!(!m.contains('\n') && m.starts_with(name), "{m}"),
                other => panic!("{name}:{v} gave {other:?}"),
            }
        }
        let dce = parse("byte_test", "2,=,0x3700,0,dce", &mut var).unwrap();
        assert_eq!(
            dce.eval_in(&[0, 0x37], 0, None, &mut [0; MAX_VARS], true),
            Some(None)
        );
        assert_eq!(
            dce.eval_in(&[0, 0x37], 0, None, &mut [0; MAX_VARS], false),
            None
        );
        assert!(matches!(parse("byte_jump", "n,0", &mut var), Err(Ok(_))));
    }
}
