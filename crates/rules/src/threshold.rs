//! `threshold` and `detection_filter`: which of a rule's matches become alerts, counted per source, destination,
//! address pair, flow or rule over a time window, as Suricata's `detect-engine-threshold.c` counts them.
//!
//! * `type limit, count N, seconds S`: the first N matches of each window of S seconds alert;
//! * `type threshold`: every N-th match in a window alerts (the count restarts after each alert);
//! * `type both`: the N-th match of a window alerts, once per window;
//! * `type backoff, count N, multiplier M` (no window): the N-th match alerts, then the N·M-th, the N·M²-th, ...
//!   (`count 1, multiplier 10`: the 1st, 10th, 100th, ...), as Suricata 7's backoff counts them;
//! * `detection_filter: track T, count N, seconds S`: every match after the N-th in a window alerts;
//! * `detection_filter: ..., unique_on src_port|dst_port` (Suricata 9): as above, but a window counts the distinct
//!   ports of its matches, not the matches: every match once more than N distinct ports were seen alerts. An entry
//!   keeps the ports it saw until it has N + 1 of them (no more is needed to decide), so its memory is bounded by the
//!   rule's count and the 65,536 ports.
//!
//! A window starts at the first match of its key and lasts S seconds of *capture time* (the alert's packet), so the
//! outcome depends on the input alone. Matching itself is not affected (flowbits are still set): only whether the
//! match is reported. The state crosses flows (`by_src` counts one host's matches in every flow), so it cannot live
//! in a worker: the engine applies [`ThresholdTable`] where alerts come together in input order (the ordered event
//! merge and the single-threaded loop), which keeps a parallel run's alerts equal to the serial run's.
//!
//! The table is bounded ([`ThresholdTable::with_capacity`]): when it is full, entries whose window has passed are
//! dropped first (they are equivalent to no entry); if none has, the match is judged as the first of a new window
//! without remembering it, counted in [`ThresholdStats::table_full`].

use std::collections::HashMap;
use std::net::IpAddr;

/// Default most (rule, key) entries in a [`ThresholdTable`] (about 64 bytes each).
pub const DEFAULT_CAPACITY: usize = 1 << 16;
/// Longest window accepted, in seconds (a day is what ET Open uses at most; a year is generous).
pub const MAX_SECONDS: u32 = 366 * 86_400;

/// What a rule's `threshold` or `detection_filter` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThresholdKind {
    Limit,
    Threshold,
    Both,
    /// `type backoff`: alerts at the `count`-th match, then each time the count reaches the previous alert's
    /// count times `multiplier`; no time window.
    Backoff {
        multiplier: u32,
    },
    /// `detection_filter`.
    DetectionFilter,
}

/// What the matches are counted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Track {
    /// The alert's source address.
    BySrc,
    /// The alert's destination address.
    ByDst,
    /// The address pair, either way round.
    ByBoth,
    /// The rule alone.
    ByRule,
    /// The flow.
    ByFlow,
}

/// What a `detection_filter` with `unique_on` counts: the distinct values of this port of its matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UniqueOn {
    SrcPort,
    DstPort,
}

/// A rule's `threshold` or `detection_filter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Threshold {
    pub kind: ThresholdKind,
    pub track: Track,
    pub count: u32,
    pub seconds: u32,
    /// `detection_filter` only: count distinct ports rather than matches.
    pub unique_on: Option<UniqueOn>,
}

impl Threshold {
    /// Parses the value of `threshold` (`detection_filter` when `filter`): comma-separated `type T`, `track T`,
    /// `count N`, `seconds N` in any order, each once (`type` is not allowed for `detection_filter`, `unique_on
    /// src_port|dst_port` only there); `type backoff` takes `multiplier N` (at least 1) instead of `seconds`.
    pub fn parse(value: &str, filter: bool) -> Result<Threshold, ThresholdError> {
        let keyword = if filter {
            "detection_filter"
        } else {
            "threshold"
        };
        let bad = |m: String| ThresholdError::Invalid(format!("{keyword}: {m}"));
        let (mut kind, mut track, mut count, mut seconds, mut unique_on) =
            (None, None, None, None, None);
        let mut multiplier: Option<u32> = None;
        for part in value.split(',') {
            let part = part.trim();
            let (k, v) = part
                .split_once(char::is_whitespace)
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| bad(format!("`{}` needs a value", short(part))))?;
            let once = |slot: bool| {
                if slot {
                    Err(bad(format!("`{k}` given twice")))
                } else {
                    Ok(())
                }
            };
            match k {
                "type" if !filter => {
                    once(kind.is_some())?;
                    kind = Some(match v {
                        "limit" => ThresholdKind::Limit,
                        "threshold" => ThresholdKind::Threshold,
                        "both" => ThresholdKind::Both,
                        "backoff" => ThresholdKind::Backoff { multiplier: 0 },
                        other => return Err(bad(format!("unknown type `{}`", short(other)))),
                    });
                }
                "track" => {
                    once(track.is_some())?;
                    track = Some(match v {
                        "by_src" => Track::BySrc,
                        "by_dst" => Track::ByDst,
                        "by_both" => Track::ByBoth,
                        "by_rule" => Track::ByRule,
                        "by_flow" => Track::ByFlow,
                        other => return Err(bad(format!("unknown track `{}`", short(other)))),
                    });
                }
                "count" => {
                    once(count.is_some())?;
                    count = Some(
                        v.parse::<u32>()
                            .map_err(|_| bad(format!("invalid count `{}`", short(v))))?,
                    );
                }
                "seconds" => {
                    once(seconds.is_some())?;
                    let s = v
                        .parse::<u32>()
                        .ok()
                        .filter(|&s| s <= MAX_SECONDS)
                        .ok_or_else(|| bad(format!("invalid seconds `{}`", short(v))))?;
                    seconds = Some(s);
                }
                "multiplier" if !filter => {
                    once(multiplier.is_some())?;
                    let m = v
                        .parse::<u32>()
                        .ok()
                        .filter(|&m| m >= 1)
                        .ok_or_else(|| bad(format!("invalid multiplier `{}`", short(v))))?;
                    multiplier = Some(m);
                }
                "unique_on" if filter => {
                    once(unique_on.is_some())?;
                    unique_on = Some(match v {
                        "src_port" => UniqueOn::SrcPort,
                        "dst_port" => UniqueOn::DstPort,
                        other => return Err(bad(format!("unknown unique_on `{}`", short(other)))),
                    });
                }
                other => return Err(bad(format!("unknown option `{}`", short(other)))),
            }
        }
        let kind = if filter {
            ThresholdKind::DetectionFilter
        } else {
            kind.ok_or_else(|| bad("missing `type`".into()))?
        };
        // Backoff counts without a window: `multiplier` replaces `seconds`.
        let (kind, seconds) = match (kind, multiplier) {
            (ThresholdKind::Backoff { .. }, Some(m)) if seconds.is_none() => {
                (ThresholdKind::Backoff { multiplier: m }, 0)
            }
            (ThresholdKind::Backoff { .. }, None) => {
                return Err(bad("missing `multiplier`".into()));
            }
            (ThresholdKind::Backoff { .. }, Some(_)) => {
                return Err(bad("`seconds` with type backoff".into()));
            }
            (_, Some(_)) => return Err(bad("`multiplier` needs type backoff".into())),
            (k, None) => (k, seconds.ok_or_else(|| bad("missing `seconds`".into()))?),
        };
        let t = Threshold {
            kind,
            track: track.ok_or_else(|| bad("missing `track`".into()))?,
            count: count.ok_or_else(|| bad("missing `count`".into()))?,
            seconds,
            unique_on,
        };
        if t.count == 0 && kind != ThresholdKind::DetectionFilter {
            return Err(bad("count must be 1 or more".into()));
        }
        Ok(t)
    }
}

fn short(s: &str) -> String {
    s.chars().take(32).collect()
}

/// Why a `threshold` or `detection_filter` value was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThresholdError {
    /// Valid in Suricata, not supported here (the rule is skipped with this reason).
    Unsupported(String),
    /// Malformed.
    Invalid(String),
}

/// The key one rule's matches are counted under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Rule,
    Addr(IpAddr),
    Pair(IpAddr, IpAddr),
    Flow(u64),
}

#[derive(Clone, Debug)]
struct Entry {
    /// End of the window (capture time, ns): matches before it count in it.
    until_ns: u64,
    count: u32,
    /// With `unique_on`: the distinct ports seen in the window, at most the rule's count plus one (`count` is then
    /// their number).
    ports: Vec<u16>,
    /// `type backoff`: the count at which the next alert comes.
    next: u64,
}

impl Entry {
    /// A window opened at a match with `port` (the `unique_on` port, if any).
    fn open(until_ns: u64, port: Option<u16>) -> Entry {
        Entry {
            until_ns,
            count: 1,
            ports: port.into_iter().collect(),
            next: 0,
        }
    }
}

/// What [`ThresholdTable`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThresholdStats {
    /// Matches of rules with a threshold or detection filter that were not reported.
    pub suppressed: u64,
    /// Matches judged without an entry because the table was full of live windows.
    pub table_full: u64,
    /// Entries dropped because their window had passed, to make room.
    pub expired: u64,
}

/// The counting state of every thresholded rule and key (see the module documentation).
#[derive(Debug)]
pub struct ThresholdTable {
    entries: HashMap<(u32, Key), Entry>,
    capacity: usize,
    stats: ThresholdStats,
}

impl Default for ThresholdTable {
    fn default() -> Self {
        ThresholdTable::with_capacity(DEFAULT_CAPACITY)
    }
}

impl ThresholdTable {
    /// A table holding at most `capacity` (rule, key) entries.
    pub fn with_capacity(capacity: usize) -> ThresholdTable {
        ThresholdTable {
            entries: HashMap::new(),
            capacity: capacity.max(1),
            stats: ThresholdStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> ThresholdStats {
        self.stats
    }

    /// Whether a match of rule `rule` (index in its rule set) with threshold `t`, from `src` to `dst` (address and
    /// port; port 0 where the protocol has none) in flow `flow_id` at capture time `ts_ns`, is reported. Call in
    /// input order.
    pub fn check(
        &mut self,
        rule: u32,
        t: &Threshold,
        (src, src_port): (IpAddr, u16),
        (dst, dst_port): (IpAddr, u16),
        flow_id: u64,
        ts_ns: u64,
    ) -> bool {
        let port = t.unique_on.map(|u| match u {
            UniqueOn::SrcPort => src_port,
            UniqueOn::DstPort => dst_port,
        });
        let key = match t.track {
            Track::BySrc => Key::Addr(src),
            Track::ByDst => Key::Addr(dst),
            Track::ByBoth => Key::Pair(src.min(dst), src.max(dst)),
            Track::ByRule => Key::Rule,
            Track::ByFlow => Key::Flow(flow_id),
        };
        let window = u64::from(t.seconds).saturating_mul(1_000_000_000);
        let until = match t.kind {
            // Backoff has no window: its entry lasts as long as the table keeps it.
            ThresholdKind::Backoff { .. } => u64::MAX,
            _ => ts_ns.saturating_add(window),
        };
        let k = (rule, key);
        let alert = match self.entries.get_mut(&k) {
            Some(e) if ts_ns < e.until_ns => {
                match port {
                    // Distinct ports: a port already seen adds nothing; once more than `count` were seen, the
                    // rest need not be kept.
                    Some(p) => {
                        if e.ports.len() <= t.count as usize && !e.ports.contains(&p) {
                            e.ports.push(p);
                        }
                        e.count = e.ports.len() as u32;
                    }
                    None => e.count = e.count.saturating_add(1),
                }
                match t.kind {
                    ThresholdKind::Limit => e.count <= t.count,
                    ThresholdKind::Threshold => {
                        let hit = e.count >= t.count;
                        if hit {
                            e.count = 0;
                        }
                        hit
                    }
                    ThresholdKind::Both => e.count == t.count,
                    ThresholdKind::Backoff { multiplier } => {
                        let hit = u64::from(e.count) == e.next;
                        if hit {
                            e.next = e.next.saturating_mul(u64::from(multiplier));
                        }
                        hit
                    }
                    ThresholdKind::DetectionFilter => e.count > t.count,
                }
            }
            Some(e) => {
                // The window has passed: this match opens a new one.
                *e = Entry::open(until, port);
                first_alerts(t)
            }
            None => {
                if self.entries.len() >= self.capacity {
                    let before = self.entries.len();
                    self.entries.retain(|_, e| ts_ns < e.until_ns);
                    self.stats.expired += (before - self.entries.len()) as u64;
                }
                if self.entries.len() < self.capacity {
                    let mut e = Entry::open(until, port);
                    if let ThresholdKind::Backoff { multiplier } = t.kind {
                        // The first match alerts with `count 1`; the next alert comes at `count` (times the
                        // multiplier once the first has alerted).
                        e.next = u64::from(t.count);
                        if t.count == 1 {
                            e.next = e.next.saturating_mul(u64::from(multiplier));
                        }
                    }
                    self.entries.insert(k, e);
                } else {
                    self.stats.table_full += 1;
                }
                first_alerts(t)
            }
        };
        if !alert {
            self.stats.suppressed += 1;
        }
        alert
    }
}

/// `rate_filter` (a `threshold.config` line): once a rule has matched more than `count` times within `seconds` (per
/// key, as `track` says), its action becomes `new_action` for that match and for every match in the `timeout`
/// seconds after it; then counting starts again. As Suricata's rate filter, it changes what a match does, never
/// whether it is a match: with `alert` the alert is reported as allowed, with `drop` or `reject` as blocked (and
/// the packet or flow is dropped), with `pass` not reported (and the packet or flow is passed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RateFilter {
    pub track: Track,
    pub count: u32,
    pub seconds: u32,
    pub new_action: crate::rule::Action,
    pub timeout: u32,
}

impl RateFilter {
    /// Parses the comma-separated options after `gen_id G, sig_id S`: `track`, `count`, `seconds`, `new_action`,
    /// `timeout`, each once, all required.
    pub fn parse(parts: &[&str]) -> Result<RateFilter, String> {
        use crate::rule::Action;
        let (mut track, mut count, mut seconds, mut new_action, mut timeout) =
            (None, None, None, None, None);
        for part in parts {
            let (k, v) = part
                .split_once(char::is_whitespace)
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| format!("rate_filter: `{}` needs a value", short(part)))?;
            let num = |max: u32| {
                v.parse::<u32>()
                    .ok()
                    .filter(|n| *n <= max)
                    .ok_or_else(|| format!("rate_filter: invalid {k} `{}`", short(v)))
            };
            let dup = match k {
                "track" => track
                    .replace(match v {
                        "by_src" => Track::BySrc,
                        "by_dst" => Track::ByDst,
                        "by_both" => Track::ByBoth,
                        "by_rule" => Track::ByRule,
                        "by_flow" => Track::ByFlow,
                        other => {
                            return Err(format!("rate_filter: unknown track `{}`", short(other)));
                        }
                    })
                    .is_some(),
                "count" => count.replace(num(u32::MAX)?).is_some(),
                "seconds" => seconds.replace(num(MAX_SECONDS)?).is_some(),
                "timeout" => timeout.replace(num(MAX_SECONDS)?).is_some(),
                "new_action" => new_action
                    .replace(match v {
                        "alert" => Action::Alert,
                        "drop" => Action::Drop,
                        "reject" => Action::Reject,
                        "sdrop" => Action::Sdrop,
                        "log" => Action::Log,
                        "pass" => Action::Pass,
                        other => {
                            return Err(format!(
                                "rate_filter: unknown new_action `{}`",
                                short(other)
                            ));
                        }
                    })
                    .is_some(),
                other => return Err(format!("rate_filter: unknown option `{}`", short(other))),
            };
            if dup {
                return Err(format!("rate_filter: `{k}` given twice"));
            }
        }
        let missing = |what: &str| format!("rate_filter: missing `{what}`");
        Ok(RateFilter {
            track: track.ok_or_else(|| missing("track"))?,
            count: count.ok_or_else(|| missing("count"))?,
            seconds: seconds.ok_or_else(|| missing("seconds"))?,
            new_action: new_action.ok_or_else(|| missing("new_action"))?,
            timeout: timeout.ok_or_else(|| missing("timeout"))?,
        })
    }
}

#[derive(Clone, Copy, Debug)]
struct RateEntry {
    /// Start of the counting window (capture time, ns).
    window_ns: u64,
    count: u32,
    /// When the new action took effect, while it does.
    active_ns: Option<u64>,
}

/// The state of every rate-filtered rule and key, bounded like [`ThresholdTable`]: when full, entries that neither
/// count in a live window nor hold an active new action are dropped first; if none can be, the match is judged as
/// the first of a new window without remembering it ([`ThresholdStats::table_full`]).
#[derive(Debug)]
pub struct RateTable {
    entries: HashMap<(u32, Key), RateEntry>,
    capacity: usize,
    stats: ThresholdStats,
}

impl Default for RateTable {
    fn default() -> Self {
        RateTable::with_capacity(DEFAULT_CAPACITY)
    }
}

impl RateTable {
    pub fn with_capacity(capacity: usize) -> RateTable {
        RateTable {
            entries: HashMap::new(),
            capacity: capacity.max(1),
            stats: ThresholdStats::default(),
        }
    }

    /// Counters so far (`suppressed` stays 0: a rate filter changes actions, not alerts).
    pub fn stats(&self) -> ThresholdStats {
        self.stats
    }

    /// Whether the new action of `rf` applies to this match of rule `rule` from `src` to `dst` in flow `flow_id` at
    /// capture time `ts_ns`. Call in input order.
    pub fn check(
        &mut self,
        rule: u32,
        rf: &RateFilter,
        src: IpAddr,
        dst: IpAddr,
        flow_id: u64,
        ts_ns: u64,
    ) -> bool {
        const NS: u64 = 1_000_000_000;
        let key = match rf.track {
            Track::BySrc => Key::Addr(src),
            Track::ByDst => Key::Addr(dst),
            Track::ByBoth => Key::Pair(src.min(dst), src.max(dst)),
            Track::ByRule => Key::Rule,
            Track::ByFlow => Key::Flow(flow_id),
        };
        let window = u64::from(rf.seconds).saturating_mul(NS);
        let timeout = u64::from(rf.timeout).saturating_mul(NS);
        let k = (rule, key);
        if !self.entries.contains_key(&k) {
            if self.entries.len() >= self.capacity {
                let before = self.entries.len();
                self.entries.retain(|_, e| {
                    ts_ns < e.window_ns.saturating_add(window)
                        || e.active_ns
                            .is_some_and(|a| ts_ns.saturating_sub(a) <= timeout)
                });
                self.stats.expired += (before - self.entries.len()) as u64;
            }
            let first = RateEntry {
                window_ns: ts_ns,
                count: 1,
                active_ns: (rf.count == 0).then_some(ts_ns),
            };
            if self.entries.len() < self.capacity {
                self.entries.insert(k, first);
            } else {
                self.stats.table_full += 1;
            }
            return first.active_ns.is_some();
        }
        let Some(e) = self.entries.get_mut(&k) else {
            return false;
        };
        if let Some(since) = e.active_ns {
            if ts_ns.saturating_sub(since) <= timeout {
                return true;
            }
            e.active_ns = None;
        }
        if ts_ns.saturating_sub(e.window_ns) < window {
            e.count = e.count.saturating_add(1);
            if e.count > rf.count {
                e.active_ns = Some(ts_ns);
                return true;
            }
        } else {
            e.window_ns = ts_ns;
            e.count = 1;
        }
        false
    }
}

/// Whether the first match of a window is reported.
fn first_alerts(t: &Threshold) -> bool {
    match t.kind {
        ThresholdKind::Limit => true,
        ThresholdKind::Threshold | ThresholdKind::Both | ThresholdKind::Backoff { .. } => {
            t.count <= 1
        }
        ThresholdKind::DetectionFilter => t.count == 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    const S: u64 = 1_000_000_000;

    /// Which of matches at `times` (seconds) alert, all from one source.
    fn run(t: &str, filter: bool, times: &[u64]) -> Vec<u64> {
        let th = Threshold::parse(t, filter).unwrap();
        let mut tab = ThresholdTable::default();
        times
            .iter()
            .copied()
            .filter(|&s| {
                tab.check(
                    0,
                    &th,
                    (ip("10.0.0.1"), 1024),
                    (ip("8.8.8.8"), 53),
                    7,
                    s * S,
                )
            })
            .collect()
    }

    /// A rate filter acts on the match after `count` in a window and on every match of the timeout after it, then
    /// counts again; each key counts on its own.
    #[test]
    fn rate_filter_changes_the_action_after_count_for_timeout() {
        let rf = RateFilter::parse(&[
            "track by_src",
            "count 2",
            "seconds 10",
            "new_action drop",
            "timeout 5",
        ])
        .unwrap();
        assert_eq!(rf.new_action, crate::rule::Action::Drop);
        let mut tab = RateTable::default();
        let (a, b) = (ip("10.0.0.1"), ip("10.0.0.2"));
        let mut at = |src, s: u64| tab.check(0, &rf, src, b, 7, s * S);
        // Two matches in the window pass unchanged, the third takes the new action, so does the timeout after it.
        assert!(!at(a, 0) && !at(a, 1) && at(a, 2) && at(a, 6) && at(a, 7));
        // Another source counts on its own.
        assert!(!at(b, 7) && !at(b, 8));
        // The timeout over (7 + 5 < 13), the window (from 0) long over: a new window starts.
        assert!(!at(a, 13) && !at(a, 14) && at(a, 15));
        for bad in [
            &["track by_src", "count 2", "seconds 10", "new_action drop"][..],
            &[
                "track by_host",
                "count 2",
                "seconds 10",
                "new_action drop",
                "timeout 1",
            ],
            &[
                "track by_src",
                "count x",
                "seconds 10",
                "new_action drop",
                "timeout 1",
            ],
            &[
                "track by_src",
                "count 2",
                "seconds 10",
                "new_action smile",
                "timeout 1",
            ],
            &[
                "track by_src",
                "track by_dst",
                "count 2",
                "seconds 10",
                "new_action drop",
                "timeout 1",
            ],
        ] {
            assert!(RateFilter::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn parses_every_spelling_et_open_uses() {
        let t = Threshold::parse("type limit, track by_src, seconds 60, count 1", false).unwrap();
        assert_eq!(
            t,
            Threshold {
                kind: ThresholdKind::Limit,
                track: Track::BySrc,
                count: 1,
                seconds: 60,
                unique_on: None,
            }
        );
        assert_eq!(
            Threshold::parse("type both,track by_dst,count 5,seconds 360", false)
                .unwrap()
                .kind,
            ThresholdKind::Both
        );
        assert_eq!(
            Threshold::parse("track by_src, count 10, seconds 60", true)
                .unwrap()
                .kind,
            ThresholdKind::DetectionFilter
        );
        for bad in [
            "type limit, track by_src, count 1",
            "type limit, track by_moon, count 1, seconds 1",
            "type limit, type both, track by_src, count 1, seconds 1",
            "type limit, track by_src, count x, seconds 1",
            "type limit, track by_src, count 0, seconds 1",
            "type limit, track by_src, count 1, seconds 99999999999",
            "type",
        ] {
            assert!(
                matches!(
                    Threshold::parse(bad, false),
                    Err(ThresholdError::Invalid(_))
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            Threshold::parse("type limit, track by_src, count 1, seconds 1", true),
            Err(ThresholdError::Invalid(_))
        ));
        assert_eq!(
            Threshold::parse("type backoff, track by_flow, count 1, multiplier 10", false),
            Ok(Threshold {
                kind: ThresholdKind::Backoff { multiplier: 10 },
                track: Track::ByFlow,
                count: 1,
                seconds: 0,
                unique_on: None,
            })
        );
        for bad in [
            "type backoff, track by_flow, count 1",
            "type backoff, track by_flow, count 1, multiplier 0",
            "type backoff, track by_flow, count 1, multiplier 10, seconds 5",
            "type limit, track by_flow, count 1, seconds 5, multiplier 10",
        ] {
            assert!(
                matches!(
                    Threshold::parse(bad, false),
                    Err(ThresholdError::Invalid(_))
                ),
                "{bad}"
            );
        }
    }

    /// Backoff: with `count 1, multiplier 10` the 1st, 10th and 100th matches alert; with `count 3, multiplier 2`
    /// the 3rd, 6th and 12th; per key, whatever time passes.
    #[test]
    fn backoff_alerts_at_count_times_powers_of_the_multiplier() {
        let mut tab = ThresholdTable::default();
        let a = (ip("10.0.0.1"), 1);
        let b = (ip("10.0.0.2"), 2);
        for (v, want) in [
            (
                "type backoff, track by_flow, count 1, multiplier 10",
                vec![1, 10, 100],
            ),
            (
                "type backoff, track by_flow, count 3, multiplier 2",
                vec![3, 6, 12, 24, 48, 96],
            ),
        ] {
            let t = Threshold::parse(v, false).unwrap();
            let rule = want[1];
            let got: Vec<u32> = (1..=120u32)
                .filter(|n| tab.check(rule, &t, a, b, 7, u64::from(*n) * 1000 * S))
                .collect();
            assert_eq!(got, want, "{v}");
            // Another flow counts on its own.
            assert_eq!(tab.check(rule, &t, a, b, 8, 0), want[0] == 1);
        }
    }

    /// The behaviours of Suricata's documentation ("Thresholding keywords"), match by match.
    #[test]
    fn counts_as_suricata_documents() {
        let t = [0, 1, 2, 3, 4, 5, 6, 61, 62, 63];
        // limit: the first 2 per 60 s window.
        assert_eq!(
            run("type limit, track by_src, count 2, seconds 60", false, &t),
            [0, 1, 61, 62]
        );
        // threshold: every 3rd in a window; the count restarts with the window.
        assert_eq!(
            run(
                "type threshold, track by_src, count 3, seconds 60",
                false,
                &t
            ),
            [2, 5, 63]
        );
        // both: the 3rd of a window, once.
        assert_eq!(
            run("type both, track by_src, count 3, seconds 60", false, &t),
            [2, 63]
        );
        // detection_filter: every match after the 3rd of a window.
        assert_eq!(
            run("track by_src, count 3, seconds 60", true, &t),
            [3, 4, 5, 6]
        );
    }

    /// `unique_on`: a window counts the distinct ports of its matches; a repeated port adds nothing.
    #[test]
    fn detection_filter_unique_on_counts_distinct_ports() {
        let th = Threshold::parse(
            "track by_dst, count 1, seconds 60, unique_on dst_port",
            true,
        )
        .unwrap();
        assert_eq!(th.unique_on, Some(UniqueOn::DstPort));
        let mut tab = ThresholdTable::default();
        let (a, b) = (ip("3.3.3.3"), ip("1.1.1.1"));
        let mut at = |dport: u16, s: u64| tab.check(0, &th, (a, 12345), (b, dport), 1, s * S);
        // Port 80 twice is one distinct port; 81 makes two, more than 1: that match alerts, and every one after.
        assert!(!at(80, 0) && !at(80, 1) && at(81, 2) && at(80, 3));
        // A new window (60 s on) counts afresh.
        assert!(!at(82, 70) && at(83, 71));
        let th3 = Threshold::parse(
            "track by_src, count 3, seconds 60, unique_on src_port",
            true,
        )
        .unwrap();
        let mut tab = ThresholdTable::default();
        let mut at = |sport: u16| tab.check(0, &th3, (a, sport), (b, 80), 1, 0);
        assert!(!at(1) && !at(1) && !at(2) && !at(3) && at(4) && at(1));
        for bad in [
            "track by_dst, count 1, seconds 60, unique_on dst_ip",
            "track by_dst, count 1, seconds 60, unique_on dst_port, unique_on src_port",
        ] {
            assert!(Threshold::parse(bad, true).is_err(), "{bad}");
        }
        assert!(
            Threshold::parse(
                "type limit, track by_dst, count 1, seconds 60, unique_on dst_port",
                false
            )
            .is_err()
        );
    }

    #[test]
    fn keys_are_separate_and_the_table_is_bounded() {
        let th = Threshold::parse("type limit, track by_dst, count 1, seconds 10", false).unwrap();
        let mut tab = ThresholdTable::with_capacity(2);
        let a = ip("10.0.0.1");
        assert!(tab.check(0, &th, (a, 0), (ip("1.1.1.1"), 0), 1, 0));
        assert!(tab.check(0, &th, (a, 0), (ip("2.2.2.2"), 0), 1, 0));
        assert!(!tab.check(0, &th, (a, 0), (ip("1.1.1.1"), 0), 1, S));
        // Another rule has its own count; the table is full of live windows: judged as a first match, not
        // remembered, counted.: judged as a first match, not remembered, counted.
        assert!(tab.check(1, &th, (a, 0), (ip("1.1.1.1"), 0), 1, S));
        assert!(tab.check(1, &th, (a, 0), (ip("1.1.1.1"), 0), 1, S));
        assert_eq!(tab.stats().table_full, 2);
        // Once the windows have passed, their entries make room.
        assert!(tab.check(1, &th, (a, 0), (ip("1.1.1.1"), 0), 1, 20 * S));
        assert!(!tab.check(1, &th, (a, 0), (ip("1.1.1.1"), 0), 1, 21 * S));
        assert_eq!(tab.stats().expired, 2);
        assert_eq!(tab.stats().suppressed, 2);
        // by_both counts a pair either way round.
        let both =
            Threshold::parse("type limit, track by_both, count 1, seconds 10", false).unwrap();
        let mut tab = ThresholdTable::default();
        assert!(tab.check(0, &both, (a, 0), (ip("1.1.1.1"), 0), 1, 0));
        assert!(!tab.check(0, &both, (ip("1.1.1.1"), 0), (a, 0), 2, 0));
    }
}
