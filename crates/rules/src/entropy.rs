//! `entropy`: the Shannon entropy (bits per byte, 0 to 8) of the current buffer, or of part of it, compared with a
//! value, as Suricata 8 defines the keyword:
//!
//! ```text
//! entropy: [bytes <n>,] [offset <n>,] value <comparison>
//! ```
//!
//! `offset` skips that many bytes from the buffer's start (not from the previous match: Suricata computes it over
//! the whole buffer whatever the cursor; a negative offset is accepted and ignored, as there), `bytes` takes that
//! many after it (0 or absent: the rest). A buffer shorter than `offset`, or than `offset + bytes`, does not match.
//! The comparison is Suricata's floating-point syntax: `V` or `=V` or `==V`, `!=V`, `<V`, `<=V`, `>V`, `>=V`, and
//! the open range `A-B` (`A < e < B`) or its negation `!A-B`. Each option once, `value` required; anything else is a
//! one-line error. The count is one pass over the bytes into a 256-entry table, on the stack: no allocation.

use crate::rule::{Step, err, trunc};

/// How the entropy is compared with the rule's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FloatCmp {
    Eq(f64),
    Ne(f64),
    Lt(f64),
    Le(f64),
    Gt(f64),
    Ge(f64),
    /// Strictly between the two.
    Range(f64, f64),
    /// Outside the open range (at either end included).
    NotRange(f64, f64),
}

impl FloatCmp {
    /// Whether `x` passes the comparison.
    pub fn holds(self, x: f64) -> bool {
        match self {
            FloatCmp::Eq(v) => x == v,
            FloatCmp::Ne(v) => x != v,
            FloatCmp::Lt(v) => x < v,
            FloatCmp::Le(v) => x <= v,
            FloatCmp::Gt(v) => x > v,
            FloatCmp::Ge(v) => x >= v,
            FloatCmp::Range(a, b) => x > a && x < b,
            FloatCmp::NotRange(a, b) => x <= a || x >= b,
        }
    }

    /// Parses Suricata's floating-point comparison (`>= 4.5`, `4-5`, `!4-5`, `7`).
    pub fn parse(s: &str) -> Step<FloatCmp> {
        let s = s.trim();
        let num = |t: &str| -> Step<f64> {
            let t = t.trim();
            // Rust's parser also takes `inf` and `nan`, which are no entropy: plain decimal numbers only.
            if t.is_empty()
                || !t
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
            {
                return Err(err(format!("entropy: invalid value `{}`", trunc(t))));
            }
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| err(format!("entropy: invalid value `{}`", trunc(t))))
        };
        let range = |t: &str| -> Option<Step<(f64, f64)>> {
            // `A-B` with A not negative: the dash after the first character separates the two numbers.
            let (a, b) = t.get(1..)?.split_once('-').map(|(a, b)| {
                let first = t.get(..1).unwrap_or("");
                (format!("{first}{a}"), b.to_string())
            })?;
            Some(num(&a).and_then(|a| {
                let b = num(&b)?;
                if a < b {
                    Ok((a, b))
                } else {
                    Err(err(format!(
                        "entropy: range `{}` must go from low to high",
                        trunc(t)
                    )))
                }
            }))
        };
        type Make = fn(f64) -> FloatCmp;
        let ops: [(&str, Make); 7] = [
            ("<=", FloatCmp::Le),
            (">=", FloatCmp::Ge),
            ("!=", FloatCmp::Ne),
            ("==", FloatCmp::Eq),
            ("<", FloatCmp::Lt),
            (">", FloatCmp::Gt),
            ("=", FloatCmp::Eq),
        ];
        for (op, make) in ops {
            if let Some(rest) = s.strip_prefix(op) {
                return num(rest).map(make);
            }
        }
        if let Some(rest) = s.strip_prefix('!') {
            return match range(rest.trim()) {
                Some(r) => r.map(|(a, b)| FloatCmp::NotRange(a, b)),
                None => Err(err(format!("entropy: invalid value `{}`", trunc(s)))),
            };
        }
        match range(s) {
            Some(r) => r.map(|(a, b)| FloatCmp::Range(a, b)),
            None => num(s).map(FloatCmp::Eq),
        }
    }
}

/// One `entropy` keyword.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entropy {
    /// Bytes skipped from the buffer's start.
    pub offset: u32,
    /// Bytes measured after the offset (0: the rest of the buffer).
    pub bytes: u32,
    pub cmp: FloatCmp,
    /// Where what it measures is kept on the flow: the id, among the load's [`crate::flowvar::VarScope::Entropy`]
    /// names, of the buffer's name ([`crate::flowvar::entropy_name`]), set when the rule is built.
    pub var: u32,
}

/// Largest `offset` Suricata accepts (either sign).
const MAX_OFFSET: i64 = 65535;

impl Entropy {
    /// Parses the keyword's value.
    pub fn parse(v: &str) -> Step<Entropy> {
        let (mut offset, mut bytes, mut cmp) = (None, None, None);
        let parts: Vec<&str> = v.split(',').collect();
        if parts.len() > 3 {
            return Err(err("entropy: at most bytes, offset and value"));
        }
        for part in parts {
            let part = part.trim();
            let (name, val) = part.split_once(char::is_whitespace).unwrap_or((part, ""));
            let dup = |set: bool| {
                if set {
                    Err(err(format!("entropy: {name} given twice")))
                } else {
                    Ok(())
                }
            };
            match name {
                "bytes" => {
                    dup(bytes.is_some())?;
                    let n: i64 = val.trim().parse().map_err(|_| {
                        err(format!("entropy: invalid bytes `{}`", trunc(val.trim())))
                    })?;
                    // Suricata's count is a signed 32-bit number, and a count below 1 means the rest of the buffer.
                    let n = i32::try_from(n).map_err(|_| {
                        err(format!(
                            "entropy: bytes `{}` out of range",
                            trunc(val.trim())
                        ))
                    })?;
                    bytes = Some(u32::try_from(n).unwrap_or(0));
                }
                "offset" => {
                    dup(offset.is_some())?;
                    let n: i64 = val.trim().parse().map_err(|_| {
                        err(format!("entropy: invalid offset `{}`", trunc(val.trim())))
                    })?;
                    if !(-MAX_OFFSET..=MAX_OFFSET).contains(&n) {
                        return Err(err(format!(
                            "entropy: offset `{n}` must lie between -65535 and 65535"
                        )));
                    }
                    // A negative offset is accepted and has no effect, as in Suricata.
                    offset = Some(u32::try_from(n).unwrap_or(0));
                }
                "value" => {
                    dup(cmp.is_some())?;
                    cmp = Some(FloatCmp::parse(val)?);
                }
                "" => return Err(err("entropy: empty option")),
                other => {
                    return Err(err(format!("entropy: unknown option `{}`", trunc(other))));
                }
            }
        }
        let cmp = cmp.ok_or_else(|| err("entropy needs a value (`value <comparison>`)"))?;
        Ok(Entropy {
            offset: offset.unwrap_or(0),
            bytes: bytes.unwrap_or(0),
            cmp,
            var: 0,
        })
    }

    /// Whether `buf` (a whole buffer) passes: the entropy of the bytes the offset and count select, compared.
    pub fn matches(&self, buf: &[u8]) -> bool {
        self.measure(buf).is_some_and(|e| self.cmp.holds(e))
    }

    /// The entropy of the bytes of `buf` (a whole buffer) the offset and count select; `None` (nothing measured,
    /// the keyword fails) when the buffer is shorter than they ask, as Suricata does.
    pub fn measure(&self, buf: &[u8]) -> Option<f64> {
        let rest = buf.get(self.offset as usize..)?;
        let part = if self.bytes > 0 {
            rest.get(..self.bytes as usize)?
        } else {
            rest
        };
        Some(shannon(part))
    }
}

/// The Shannon entropy of `data` in bits per byte (0 for no bytes).
pub fn shannon(data: &[u8]) -> f64 {
    if data.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in data {
        if let Some(c) = counts.get_mut(usize::from(b)) {
            *c = c.saturating_add(1);
        }
    }
    let len = data.len() as f64;
    counts.iter().filter(|&&c| c > 0).fold(0.0, |h, &c| {
        let p = f64::from(c) / len;
        h - p * p.log2()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_of_known_strings() {
        assert_eq!(shannon(b""), 0.0);
        assert_eq!(shannon(b"aaaaaaa"), 0.0);
        assert!((shannon(b"abcdabcd") - 2.0).abs() < 1e-12);
        let all: Vec<u8> = (0..=255).collect();
        assert!((shannon(&all) - 8.0).abs() < 1e-12);
        // 12 bytes, "hello, world": the figure commonly quoted for it.
        assert!((shannon(b"hello, world") - 3.022_055_1).abs() < 1e-6);
    }

    #[test]
    fn options_parse_as_suricata_documents_them() {
        let e = Entropy::parse("value 7").unwrap();
        assert_eq!((e.offset, e.bytes, e.cmp), (0, 0, FloatCmp::Eq(7.0)));
        let e = Entropy::parse("bytes 4, offset 30, value >= 7").unwrap();
        assert_eq!((e.offset, e.bytes, e.cmp), (30, 4, FloatCmp::Ge(7.0)));
        assert_eq!(
            Entropy::parse("offset 10, value > 4.14").unwrap().cmp,
            FloatCmp::Gt(4.14)
        );
        assert_eq!(
            Entropy::parse("value 4-5").unwrap().cmp,
            FloatCmp::Range(4.0, 5.0)
        );
        assert_eq!(
            Entropy::parse("value !4-5").unwrap().cmp,
            FloatCmp::NotRange(4.0, 5.0)
        );
        assert_eq!(Entropy::parse("value != 4").unwrap().cmp, FloatCmp::Ne(4.0));
        assert_eq!(Entropy::parse("value = 4").unwrap().cmp, FloatCmp::Eq(4.0));
        assert_eq!(Entropy::parse("value <7").unwrap().cmp, FloatCmp::Lt(7.0));
        assert_eq!(Entropy::parse("offset -5, value 1").unwrap().offset, 0);
        for bad in [
            "",
            "bytes 100",
            "offset 100",
            "value ? 7.0",
            "value",
            "value inf",
            "value nan",
            "value 5-4",
            "value 7, value 8",
            "bytes 1, offset 10, value 7.0, extra",
            "bytes x, value 1",
            "offset 70000, value 1",
            "bytes 99999999999, value 1",
            "colour 3, value 1",
        ] {
            assert!(Entropy::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn offset_and_count_select_the_bytes() {
        let e = |v: &str| Entropy::parse(v).unwrap();
        let buf = b"aaaaabcdabcd";
        assert!(e("value 0").matches(b"aaaa"));
        assert!(e("offset 4, value 2").matches(b"zzzzabcd"));
        assert!(e("bytes 4, value 0").matches(buf));
        assert!(e("offset 4, bytes 4, value > 1").matches(buf));
        // Past the end: no match, whatever the comparison.
        assert!(!e("offset 13, value >= 0").matches(buf));
        assert!(!e("offset 10, bytes 3, value >= 0").matches(buf));
        assert!(e("offset 12, value 0").matches(buf));
        assert!(e("value 2-3").matches(b"abcde") && !e("value !2-3").matches(b"abcde"));
    }

    #[test]
    fn rules_load_entropy_and_hostile_values_name_their_line() {
        let text = "alert udp any any -> any any (entropy: value > 7; sid:1;)\n\
                    alert http any any -> any any (file.data; entropy: bytes 64, value 3-6; sid:2;)\n\
                    alert tcp any any -> any any (content:\"a\"; entropy: value >= 1; sid:3;)\n";
        let (set, report) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        assert_eq!((set.len(), report.errors.len()), (3, 0), "{report:?}");
        // A whole-buffer measure: a TCP rule inspects packets, not the stream.
        assert!(
            set.rules()
                .iter()
                .filter(|r| r.proto == crate::Proto::Tcp)
                .all(|r| r.tcp_inspect == crate::rule::TcpInspect::Packet)
        );
        let opts = crate::LoadOptions {
            strict: true,
            vars: crate::Vars::suricata_defaults(),
            ..crate::LoadOptions::default()
        };
        let bad = b"alert udp any any -> any any (entropy: value 1; sid:1;)\n\
                    alert udp any any -> any any (entropy: bytes 4; sid:2;)\n";
        let Err(e) = crate::RuleSet::parse_with(&[("e.rules", bad.as_slice())], &opts) else {
            panic!("a rule without a value does not load");
        };
        assert!(e.to_string().contains("e.rules:2"), "{e}");
    }
}
