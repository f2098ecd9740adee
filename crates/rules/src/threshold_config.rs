//! Suricata's `threshold.config`: thresholds and suppressions set on the sensor rather than in the rules.
//!
//! Lines (a trailing `\` continues a line; `#` comments and blank lines are ignored):
//!
//! * `threshold gen_id G, sig_id S, type limit|threshold|both, track by_src|by_dst|by_both|by_rule|by_flow, count N,
//!   seconds T` (`event_filter` is the same): for one rule it *replaces* the rule's own `threshold` or
//!   `detection_filter`; with `gen_id 0` or `sig_id 0` (every rule, or every rule of a generator) it applies only to
//!   rules without one, as Suricata's "Global thresholds vs rule thresholds" documents;
//! * `suppress gen_id G, sig_id S`: the rule never alerts (its other effects, such as flowbits, still happen);
//! * `suppress gen_id G, sig_id S, track by_src|by_dst|by_either, ip ADDR`: it does not alert when the alert's
//!   source (destination, either) address is in ADDR, an address expression as rules write them (`10.0.0.0/8`,
//!   `[a,b,!c]`, `$HOME_NET`). Suppressions combine with every threshold.
//!
//! * `rate_filter gen_id G, sig_id S, track T, count N, seconds S, new_action A, timeout T`: the rule's action
//!   changes after N matches in S seconds, for T seconds ([`RateFilter`]); with `gen_id 0` or `sig_id 0` it
//!   applies to every rule (of the generator) that has no line of its own.
//!
//! Every line that cannot be read is reported with its number and the reason, and the rest of the file still applies.

use std::net::IpAddr;

use crate::addr::{AddrSet, Resolver};
use crate::threshold::{RateFilter, Threshold, ThresholdError};
use crate::vars::Vars;

/// Which addresses a suppression looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuppressTrack {
    BySrc,
    ByDst,
    ByEither,
}

/// A suppression for one rule: always, or when an address of the alert is in a set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suppress {
    /// `None`: every alert of the rule.
    pub only: Option<(SuppressTrack, AddrSet)>,
}

impl Suppress {
    /// Whether an alert from `src` to `dst` is suppressed.
    #[inline]
    pub fn applies(&self, src: IpAddr, dst: IpAddr) -> bool {
        match &self.only {
            None => true,
            Some((SuppressTrack::BySrc, a)) => a.contains(src),
            Some((SuppressTrack::ByDst, a)) => a.contains(dst),
            Some((SuppressTrack::ByEither, a)) => a.contains(src) || a.contains(dst),
        }
    }
}

/// Which rules a line names: `gen_id 0` is every generator, `sig_id 0` every rule of the generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Selector {
    gid: u32,
    sid: u32,
}

impl Selector {
    fn selects(self, gid: u32, sid: u32) -> bool {
        (self.gid == 0 || self.gid == gid) && (self.sid == 0 || self.sid == sid)
    }

    fn is_global(self) -> bool {
        self.gid == 0 || self.sid == 0
    }
}

/// A read `threshold.config`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThresholdConfig {
    thresholds: Vec<(Selector, Threshold)>,
    suppressions: Vec<(Selector, Suppress)>,
    rate_filters: Vec<(Selector, RateFilter)>,
}

/// A line of a `threshold.config` that was not applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigLineError {
    /// 1-based line number (the first line of a continued line).
    pub line: usize,
    pub message: String,
}

impl ThresholdConfig {
    /// Reads `text`; `vars` resolves `$VAR` in suppressions' `ip`. Returns the lines that were not applied too.
    pub fn parse(text: &str, vars: &Vars) -> (ThresholdConfig, Vec<ConfigLineError>) {
        ThresholdConfig::parse_bytes(text.as_bytes(), vars)
    }

    /// [`ThresholdConfig::parse`] over the file's bytes: a line that is not UTF-8 is not applied and is reported
    /// with its number, as a malformed line is (Suricata logs a bad line and reads on), the others applied. A
    /// continued line (`\`) with such a piece is not applied at all: applying the rest would change its meaning (a
    /// suppression without its `ip`).
    pub fn parse_bytes(text: &[u8], vars: &Vars) -> (ThresholdConfig, Vec<ConfigLineError>) {
        let mut cfg = ThresholdConfig::default();
        let mut errors = Vec::new();
        let mut logical = String::new();
        // The first undecodable piece of the logical line being read: its line and why.
        let mut bad: Option<(usize, String)> = None;
        let mut start = 0;
        let mut open = false;
        let mut end =
            |cfg: &mut ThresholdConfig, l: &str, bad: Option<(usize, String)>, start: usize| {
                let result = match bad {
                    Some((n, e)) if n == start => Err(e),
                    Some((n, e)) => Err(format!("line {n}: {e}")),
                    None => cfg.add_line(l.trim(), vars),
                };
                if let Err(message) = result {
                    errors.push(ConfigLineError {
                        line: start,
                        message,
                    });
                }
            };
        for (n, raw) in crate::text::physical_lines(text) {
            if !open {
                start = n;
                open = true;
            }
            let more = raw.trim_ascii_end().ends_with(b"\\");
            match crate::text::line_text(raw) {
                Ok(line) => {
                    let line = line.trim();
                    match line.strip_suffix('\\') {
                        Some(head) => {
                            logical.push_str(head);
                            logical.push(' ');
                        }
                        None => logical.push_str(line),
                    }
                }
                Err(e) => {
                    bad.get_or_insert((n, e));
                }
            }
            if more {
                continue;
            }
            let l = std::mem::take(&mut logical);
            end(&mut cfg, &l, bad.take(), start);
            open = false;
        }
        if open && (bad.is_some() || !logical.trim().is_empty()) {
            end(&mut cfg, &logical, bad.take(), start);
        }
        (cfg, errors)
    }

    /// Whether the file set nothing.
    pub fn is_empty(&self) -> bool {
        self.thresholds.is_empty() && self.suppressions.is_empty() && self.rate_filters.is_empty()
    }

    fn add_line(&mut self, line: &str, vars: &Vars) -> Result<(), String> {
        if line.is_empty() || line.starts_with('#') {
            return Ok(());
        }
        let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match verb {
            "threshold" | "event_filter" => {
                let (sel, rest) = selector(rest)?;
                let t = Threshold::parse(&rest.join(","), false).map_err(|e| match e {
                    ThresholdError::Unsupported(m) => format!("not supported: {m}"),
                    ThresholdError::Invalid(m) => m,
                })?;
                if let Some((_, prev)) = self.thresholds.iter().find(|(s, _)| *s == sel)
                    && *prev != t
                {
                    return Err(format!(
                        "gen_id {}, sig_id {} already has a threshold",
                        sel.gid, sel.sid
                    ));
                }
                self.thresholds.push((sel, t));
                Ok(())
            }
            "suppress" => {
                let (sel, rest) = selector(rest)?;
                let (mut track, mut ip) = (None, None);
                for part in rest {
                    let (k, v) = part
                        .split_once(char::is_whitespace)
                        .map(|(k, v)| (k.trim(), v.trim()))
                        .ok_or_else(|| format!("suppress: `{}` needs a value", short(part)))?;
                    match k {
                        "track" if track.is_none() => {
                            track = Some(match v {
                                "by_src" => SuppressTrack::BySrc,
                                "by_dst" => SuppressTrack::ByDst,
                                "by_either" => SuppressTrack::ByEither,
                                other => {
                                    return Err(format!(
                                        "suppress: unknown track `{}`",
                                        short(other)
                                    ));
                                }
                            })
                        }
                        "ip" if ip.is_none() => {
                            ip = Some(
                                Resolver::new(vars)
                                    .addr(v)
                                    .map_err(|e| format!("suppress: ip `{}`: {e}", short(v)))?,
                            )
                        }
                        other => {
                            return Err(format!(
                                "suppress: unexpected or repeated `{}`",
                                short(other)
                            ));
                        }
                    }
                }
                let only = match (track, ip) {
                    (None, None) => None,
                    (Some(t), Some(a)) => Some((t, a)),
                    _ => return Err("suppress: `track` and `ip` go together".to_string()),
                };
                self.suppressions.push((sel, Suppress { only }));
                Ok(())
            }
            "rate_filter" => {
                let (sel, rest) = selector(rest)?;
                let rf = RateFilter::parse(&rest)?;
                if self.rate_filters.iter().any(|(s, _)| *s == sel) {
                    return Err(format!(
                        "gen_id {}, sig_id {} already has a rate_filter",
                        sel.gid, sel.sid
                    ));
                }
                self.rate_filters.push((sel, rf));
                Ok(())
            }
            other => Err(format!(
                "expected threshold, event_filter, suppress or rate_filter, found `{}`",
                short(other)
            )),
        }
    }

    /// The threshold a rule with `gid`/`sid` and its own threshold `own` runs with: the file's line for this very
    /// rule if there is one, else its own, else the file's global line (the first that selects it).
    pub fn threshold_for(&self, gid: u32, sid: u32, own: Option<Threshold>) -> Option<Threshold> {
        let exact = self
            .thresholds
            .iter()
            .find(|(s, _)| !s.is_global() && s.selects(gid, sid));
        if let Some((_, t)) = exact {
            return Some(*t);
        }
        own.or_else(|| {
            self.thresholds
                .iter()
                .find(|(s, _)| s.selects(gid, sid))
                .map(|(_, t)| *t)
        })
    }

    /// The rate filter of a rule with `gid`/`sid`: its own line, else the first global line that selects it.
    pub fn rate_filter_for(&self, gid: u32, sid: u32) -> Option<RateFilter> {
        self.rate_filters
            .iter()
            .find(|(s, _)| !s.is_global() && s.selects(gid, sid))
            .or_else(|| self.rate_filters.iter().find(|(s, _)| s.selects(gid, sid)))
            .map(|(_, r)| *r)
    }

    /// The suppressions that apply to a rule with `gid`/`sid`.
    pub fn suppressions_for(&self, gid: u32, sid: u32) -> Vec<Suppress> {
        self.suppressions
            .iter()
            .filter(|(s, _)| s.selects(gid, sid))
            .map(|(_, x)| x.clone())
            .collect()
    }
}

/// Reads the leading `gen_id G, sig_id S` of a line; returns them and the remaining comma-separated parts.
fn selector(rest: &str) -> Result<(Selector, Vec<&str>), String> {
    let mut parts = rest.split(',').map(str::trim);
    let mut num = |name: &str| -> Result<u32, String> {
        let p = parts.next().unwrap_or("");
        let v = p
            .strip_prefix(name)
            .map(str::trim)
            .ok_or_else(|| format!("expected `{name} N`, found `{}`", short(p)))?;
        v.parse::<u32>()
            .map_err(|_| format!("invalid {name} `{}`", short(v)))
    };
    let gid = num("gen_id")?;
    let sid = num("sig_id")?;
    Ok((
        Selector { gid, sid },
        parts.filter(|p| !p.is_empty()).collect(),
    ))
}

fn short(s: &str) -> String {
    s.chars().take(32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::threshold::{ThresholdKind, Track};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn reads_suricatas_lines_and_reports_the_others() {
        let mut vars = Vars::suricata_defaults();
        vars.set("SUPPRESS", "[10.1.0.0/16]");
        let text = "# comment\n\
            threshold gen_id 1, sig_id 10, type limit, track by_src, count 1, seconds 60\n\
            event_filter gen_id 0, sig_id 0, type both, \\\n  track by_rule, count 2, seconds 5\n\
            suppress gen_id 1, sig_id 20\n\
            suppress gen_id 1, sig_id 30, track by_either, ip $SUPPRESS\n\
            suppress gen_id 1, sig_id 31, track by_src, ip 192.0.2.0/24\n\
            rate_filter gen_id 1, sig_id 1, track by_rule, count 1, seconds 1, new_action drop, timeout 1\n\
            rate_filter gen_id 1, sig_id 2, track by_rule, count 1, seconds 1, new_action explode, timeout 1\n\
            threshold gen_id 1, sig_id 11, type sometimes, track by_src, count 1, seconds 60\n\
            suppress gen_id 1, sig_id 32, track by_src\n\
            suppress gen_id 1, sig_id 33, track by_src, ip $NOPE\n\
            suppress gen_id x, sig_id 1\n\
            bogus\n";
        let (cfg, errs) = ThresholdConfig::parse(text, &vars);
        let lines: Vec<usize> = errs.iter().map(|e| e.line).collect();
        assert_eq!(lines, [9, 10, 11, 12, 13, 14], "{errs:?}");
        let rf = cfg.rate_filter_for(1, 1).unwrap();
        assert_eq!((rf.count, rf.timeout), (1, 1));
        assert!(cfg.rate_filter_for(1, 2).is_none() && cfg.rate_filter_for(1, 3).is_none());
        // The rule's own line replaces its threshold; the global line applies to rules without one.
        let own = Threshold::parse("type threshold, track by_dst, count 9, seconds 9", false).ok();
        let t10 = cfg.threshold_for(1, 10, own).unwrap();
        assert_eq!(
            (t10.kind, t10.track, t10.count),
            (ThresholdKind::Limit, Track::BySrc, 1)
        );
        assert_eq!(cfg.threshold_for(1, 99, own), own);
        let g = cfg.threshold_for(1, 99, None).unwrap();
        assert_eq!(
            (g.kind, g.track, g.count, g.seconds),
            (ThresholdKind::Both, Track::ByRule, 2, 5)
        );
        // Suppressions.
        let (a, b) = (ip("10.1.2.3"), ip("8.8.8.8"));
        assert!(cfg.suppressions_for(1, 20)[0].applies(b, b));
        let s30 = &cfg.suppressions_for(1, 30)[0];
        assert!(s30.applies(b, a) && s30.applies(a, b) && !s30.applies(b, b));
        let s31 = &cfg.suppressions_for(1, 31)[0];
        assert!(s31.applies(ip("192.0.2.7"), b) && !s31.applies(b, ip("192.0.2.7")));
        assert!(cfg.suppressions_for(2, 20).is_empty());
    }

    /// A line that is not UTF-8 is reported with its number and not applied; the lines around it are (a NUL byte or
    /// a CRLF ending is text: the first is a malformed value, the second reads as LF). A continued line with such
    /// a piece is not applied at all: without its `ip` the suppression would hide the rule from every host.
    #[test]
    fn a_line_not_utf8_is_skipped_and_the_others_applied() {
        let vars = Vars::suricata_defaults();
        let text: &[u8] = b"suppress gen_id 1, sig_id 1\r\n\
            suppress gen_id 1, sig_id 2, track by_src, ip 10.\xff.0.1\n\
            suppress gen_id 1, sig_id 3, \\\n  track by_src, \\\n  ip 10.0.0.\xfe\n\
            suppress gen_id 1, sig_id 4, track by\x00_src, ip 10.0.0.1\n\
            suppress gen_id 1, sig_id 5\n\
            suppress gen_id 1, sig_id 6, \\\n\xc3\n";
        let (cfg, errs) = ThresholdConfig::parse_bytes(text, &vars);
        let got: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.message.as_str())).collect();
        assert_eq!(got.len(), 4, "{errs:?}");
        assert_eq!(got[0], (2, "invalid UTF-8 (byte 0xff at column 50)"));
        assert_eq!(
            got[1],
            (3, "line 5: invalid UTF-8 (byte 0xfe at column 13)")
        );
        assert_eq!(got[2].0, 6);
        assert!(got[2].1.contains("unknown track"), "{errs:?}");
        assert_eq!(got[3], (8, "line 9: invalid UTF-8 (byte 0xc3 at column 1)"));
        assert_eq!(cfg.suppressions_for(1, 1).len(), 1);
        assert_eq!(cfg.suppressions_for(1, 5).len(), 1);
        for sid in [2, 3, 4, 6] {
            assert!(cfg.suppressions_for(1, sid).is_empty(), "sid {sid}");
        }
        // The text reader and the byte reader agree on valid text.
        let valid = "suppress gen_id 1, sig_id 1\r\nsuppress gen_id 1, sig_id 2, \\\n track by_dst, ip 1.2.3.4";
        assert_eq!(
            ThresholdConfig::parse(valid, &vars),
            ThresholdConfig::parse_bytes(valid.as_bytes(), &vars)
        );
        assert_eq!(
            ThresholdConfig::parse(valid, &vars)
                .0
                .suppressions_for(1, 2)
                .len(),
            1
        );
    }
}
