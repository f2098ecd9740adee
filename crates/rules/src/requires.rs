//! `requires`: a rule states the Suricata version, features and keywords it needs, and a rule whose requirements
//! are not met is skipped, counted under a named reason, never an error (Suricata 7.0.3 and 8).
//!
//! The parser honours `requires` before anything else in the rule ([`crate::rule`] looks for it right after
//! splitting the header from the options): a rule for a newer version may use a header or keywords this parser does
//! not know, and must be skipped as unmet, not refused as malformed. Only a malformed `requires` value is an error
//! (a second `version`, an unreadable version expression), as in Suricata.
//!
//! The value is a comma-separated list of `<name> <expression>`:
//! * `version <expression>`: alternatives joined by `|`, each one or more comparisons (`>=`, `>`, `<=`, `<`)
//!   with a version `MAJOR[.MINOR[.PATCH]]` (missing parts are 0) that must all hold: `version >= 7.0.3 < 8 |
//!   >= 8.0.1`. At most one `version` per rule;
//! * `feature <name>`: one of [`FEATURES`] (repeat it for several);
//! * `keyword <name>`: a keyword of the table ([`crate::keyword`]);
//! * any other name is an unknown requirement, which is unmet (Suricata 8 ignores the `ignore-unknown-requirements`
//!   setting that Suricata 7 had).
//!
//! The version compared is [`Requirements::version`] ([`crate::LoadOptions::requires`]), by default
//! [`SURICATA_VERSION`]. Cost: a load-time check per rule; nothing at run time.

use std::fmt;

/// A Suricata release number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl Version {
    pub const fn new(major: u16, minor: u16, patch: u16) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// `MAJOR[.MINOR[.PATCH]]`, missing parts 0.
    pub fn parse(s: &str) -> Option<Version> {
        let mut parts = s.trim().split('.');
        let mut next = |required: bool| -> Option<u16> {
            match parts.next() {
                Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.parse().ok(),
                None if !required => Some(0),
                _ => None,
            }
        };
        let v = Version::new(next(true)?, next(false)?, next(false)?);
        parts.next().is_none().then_some(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The Suricata release whose rule language the parser follows (its EVE schema is that release's), the version
/// `requires: version ...` is compared with unless the load says otherwise.
pub const SURICATA_VERSION: Version = Version::new(8, 0, 6);

/// The features `requires: feature X` finds: those of Suricata's that this engine provides.
pub const FEATURES: &[&str] = &["ja3", "ja4"];

/// What the rules' requirements are compared with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirements {
    pub version: Version,
}

impl Default for Requirements {
    fn default() -> Self {
        Requirements {
            version: SURICATA_VERSION,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Ge,
    Gt,
    Le,
    Lt,
}

impl Op {
    fn holds(self, have: Version, want: Version) -> bool {
        match self {
            Op::Ge => have >= want,
            Op::Gt => have > want,
            Op::Le => have <= want,
            Op::Lt => have < want,
        }
    }
}

/// Why a rule's requirements are not met: the skip reason, named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unmet {
    /// The version compared is older than every alternative asks for (the least version that would do).
    VersionTooOld(Version),
    /// The version compared is newer than the rule is written for.
    VersionTooNew,
    Feature(String),
    Keyword(String),
    Unknown(String),
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unmet::VersionTooOld(v) => write!(f, "requires version >= {v}"),
            Unmet::VersionTooNew => write!(f, "requires an older version"),
            Unmet::Feature(x) => write!(f, "requires feature {x}"),
            Unmet::Keyword(x) => write!(f, "requires keyword {x}"),
            Unmet::Unknown(x) => write!(f, "requires unknown requirement {x}"),
        }
    }
}

/// Whether a skip reason is an unmet requirement's (every [`Unmet`] reason starts `requires `).
pub fn is_unmet_reason(reason: &str) -> bool {
    reason.starts_with("requires ")
}

fn short(s: &str) -> String {
    s.chars().take(32).collect()
}

/// Parses a version expression: `|`-separated alternatives of one or more `OP VERSION`.
fn version_expr(v: &str) -> Result<Vec<Vec<(Op, Version)>>, String> {
    let mut alts = Vec::new();
    for alt in v.split('|') {
        let mut rest = alt.trim_start();
        let mut terms = Vec::new();
        while !rest.is_empty() {
            let (op, after) = if let Some(r) = rest.strip_prefix(">=") {
                (Op::Ge, r)
            } else if let Some(r) = rest.strip_prefix("<=") {
                (Op::Le, r)
            } else if let Some(r) = rest.strip_prefix('>') {
                (Op::Gt, r)
            } else if let Some(r) = rest.strip_prefix('<') {
                (Op::Lt, r)
            } else {
                return Err(format!(
                    "requires: version expects >=, >, <= or < before `{}`",
                    short(rest)
                ));
            };
            let after = after.trim_start();
            let end = after
                .find(|c: char| c.is_whitespace())
                .unwrap_or(after.len());
            let (num, tail) = after.split_at(end);
            let version = Version::parse(num)
                .ok_or_else(|| format!("requires: invalid version `{}`", short(num)))?;
            terms.push((op, version));
            rest = tail.trim_start();
        }
        if terms.is_empty() {
            return Err(format!(
                "requires: empty version expression in `{}`",
                short(v)
            ));
        }
        alts.push(terms);
    }
    Ok(alts)
}

/// Checks one `requires` value: `Ok(None)` met, `Ok(Some)` unmet (skip the rule), `Err` malformed (a rule error).
pub fn check(v: &str, req: &Requirements) -> Result<Option<Unmet>, String> {
    let mut version = None;
    let mut features = Vec::new();
    let mut keywords = Vec::new();
    let mut unknown = Vec::new();
    for part in v.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let end = part
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(part.len());
        let (name, value) = part.split_at(end);
        let value = value.trim();
        match name {
            "" => return Err(format!("requires: invalid requirement `{}`", short(part))),
            "version" => {
                if version.is_some() {
                    return Err("requires: version may only be given once".to_string());
                }
                version = Some(version_expr(value)?);
            }
            "feature" => features.push(value),
            "keyword" => keywords.push(value),
            _ => unknown.push(name),
        }
    }
    if version.is_none() && features.is_empty() && keywords.is_empty() && unknown.is_empty() {
        return Err("requires needs a value".to_string());
    }
    // In Suricata's order: unknown requirements, the version, features, keywords.
    if let Some(u) = unknown.first() {
        return Ok(Some(Unmet::Unknown(short(u))));
    }
    if let Some(alts) = version {
        let have = req.version;
        let mut too_old: Option<Version> = None;
        let mut met = false;
        for terms in &alts {
            match terms.iter().find(|(op, want)| !op.holds(have, *want)) {
                None => met = true,
                Some(&(Op::Ge | Op::Gt, want)) => {
                    too_old = Some(too_old.map_or(want, |w| w.min(want)));
                }
                Some(_) => {}
            }
        }
        if !met {
            return Ok(Some(match too_old {
                Some(w) => Unmet::VersionTooOld(w),
                None => Unmet::VersionTooNew,
            }));
        }
    }
    if let Some(f) = features.iter().find(|f| !FEATURES.contains(f)) {
        return Ok(Some(Unmet::Feature(short(f))));
    }
    if let Some(k) = keywords
        .iter()
        .find(|k| crate::keyword::lookup(k).is_none())
    {
        return Ok(Some(Unmet::Keyword(short(k))));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(v: (u16, u16, u16)) -> Requirements {
        Requirements {
            version: Version::new(v.0, v.1, v.2),
        }
    }

    #[test]
    fn versions_parse_with_missing_parts_zero() {
        assert_eq!(Version::parse("7"), Some(Version::new(7, 0, 0)));
        assert_eq!(Version::parse("7.0.3"), Some(Version::new(7, 0, 3)));
        assert_eq!(Version::parse("8.1"), Some(Version::new(8, 1, 0)));
        for bad in ["", "7.", "x", "7.0.3.1", "-1", "99999999"] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
    }

    /// The documented forms and suricata-verify's `requires-ok` rules.
    #[test]
    fn version_expressions() {
        let r8 = at((8, 0, 6));
        assert_eq!(check("version >= 7.0.0", &r8), Ok(None));
        assert_eq!(
            check("version >= 7 < 8", &r8),
            Ok(Some(Unmet::VersionTooNew))
        );
        assert_eq!(check("version >= 7.0.4 < 8 | >= 8.0.3", &r8), Ok(None));
        assert_eq!(
            check("version >= 7.0.10 < 8 | >= 8.0.7 < 9 | >= 9.0.3", &r8),
            Ok(Some(Unmet::VersionTooOld(Version::new(8, 0, 7))))
        );
        assert_eq!(
            check("version >= 10", &r8),
            Ok(Some(Unmet::VersionTooOld(Version::new(10, 0, 0))))
        );
        assert_eq!(check("version  >= 8", &r8), Ok(None));
        assert_eq!(check("version <= 8.0.6", &r8), Ok(None));
        assert_eq!(check("version > 8.0.6", &r8).map(|u| u.is_some()), Ok(true));
        let r9 = at((9, 0, 0));
        assert_eq!(
            check("version >= 7.0.3 < 8 | >= 9.0.99", &r9),
            Ok(Some(Unmet::VersionTooOld(Version::new(9, 0, 99))))
        );
        assert_eq!(check("version >= 9.0.0, keyword sid", &r9), Ok(None));
    }

    #[test]
    fn features_keywords_and_unknown_requirements() {
        let r = Requirements::default();
        assert_eq!(check("feature ja4", &r), Ok(None));
        assert_eq!(check("feature ja3, feature ja4", &r), Ok(None));
        assert_eq!(
            check("feature geoip, version >= 7.0.0", &r),
            Ok(Some(Unmet::Feature("geoip".into())))
        );
        assert_eq!(check("keyword content", &r), Ok(None));
        assert_eq!(
            check("version >= 8, keyword foobar", &r),
            Ok(Some(Unmet::Keyword("foobar".into())))
        );
        assert_eq!(check("foo bar", &r), Ok(Some(Unmet::Unknown("foo".into()))));
        // The reasons are one-line and name what is missing.
        let reason = check("feature lua", &r).unwrap().unwrap().to_string();
        assert_eq!(reason, "requires feature lua");
        assert!(is_unmet_reason(&reason) && !is_unmet_reason("keyword requiresx"));
    }

    #[test]
    fn malformed_values_are_errors() {
        let r = Requirements::default();
        for bad in [
            "",
            "version >= 7, version >= 8",
            "version 7",
            "version >= x",
            "version >= 7 |",
            "version",
            ">= 7",
        ] {
            let e = check(bad, &r).unwrap_err();
            assert!(e.starts_with("requires") && !e.contains('\n'), "{bad}: {e}");
        }
    }
}
