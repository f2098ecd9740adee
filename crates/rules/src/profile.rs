//! Rule profiling: where matching time goes, as Suricata's rule profiling reports it.
//!
//! Off by default (a [`Scanner`](crate::Scanner) does not time anything); [`Scanner::enable_profile`] turns it on
//! for one worker, [`RulesProfile::merge`] adds workers up, [`RulesProfile::report`] writes the table. Three views:
//! * **per rule**: how often the rule was evaluated after the prefilter or its header lists (*checks*), how often it
//!   matched, and the time those evaluations took (header and `flow` checks, verification, pcre);
//! * **per inspection point** (stream or datagram per direction, each application-layer buffer, the rules without
//!   content): calls, bytes, time in the prefilter, candidates it produced and the time spent evaluating them;
//! * **per rule group**: the same for each group a packet is routed to (see [`crate::group`]).
//!
//! Times are wall-clock nanoseconds around each evaluation (`std::time::Instant`), so a profiled run is slower than a
//! plain one, and the per-rule sum includes the clock's own cost (about 20 ns per check).
//!
//! [`Scanner::enable_profile`]: crate::Scanner::enable_profile

use std::time::Instant;

use crate::rule::Buffer;
use crate::ruleset::RuleSet;

/// Inspection points that are not application-layer buffers.
const FIXED_POINTS: [&str; 4] = ["stream", "datagram", "tcp-packet", "header-only"];

/// Where a buffer is inspected: one of [`FIXED_POINTS`] or an application-layer buffer, in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Point {
    Stream,
    Datagram,
    TcpPacket,
    HeaderOnly,
    App(Buffer),
}

impl Point {
    const COUNT: usize = FIXED_POINTS.len() + Buffer::COUNT;

    fn index(self) -> usize {
        match self {
            Point::Stream => 0,
            Point::Datagram => 1,
            Point::TcpPacket => 2,
            Point::HeaderOnly => 3,
            Point::App(b) => FIXED_POINTS.len() + b.index(),
        }
    }

    fn name(i: usize) -> &'static str {
        match FIXED_POINTS.get(i) {
            Some(n) => n,
            None => Buffer::ALL
                .get(i - FIXED_POINTS.len())
                .map_or("?", |b| b.name()),
        }
    }
}

/// What one rule cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleCost {
    /// Evaluations: prefilter candidates, entries of an always-checked list, pending stream checks.
    pub checks: u64,
    pub matches: u64,
    pub nanos: u64,
}

/// What one inspection point (or rule group) cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PointCost {
    pub calls: u64,
    pub bytes: u64,
    pub prefilter_nanos: u64,
    pub candidates: u64,
    pub eval_nanos: u64,
}

impl PointCost {
    fn add(&mut self, o: &PointCost) {
        self.calls += o.calls;
        self.bytes += o.bytes;
        self.prefilter_nanos += o.prefilter_nanos;
        self.candidates += o.candidates;
        self.eval_nanos += o.eval_nanos;
    }

    fn total(&self) -> u64 {
        self.prefilter_nanos + self.eval_nanos
    }
}

/// One worker's profile, or the sum of several ([`RulesProfile::merge`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesProfile {
    /// Indexed like the rule set's rules.
    pub rules: Vec<RuleCost>,
    /// Per inspection point and direction: `[point][direction]`.
    points: Vec<[PointCost; 2]>,
    /// Per rule group (indexed by [`crate::group`]'s group ids) and direction.
    groups: Vec<[PointCost; 2]>,
}

impl RulesProfile {
    pub(crate) fn new(rules: usize, groups: usize) -> RulesProfile {
        RulesProfile {
            rules: vec![RuleCost::default(); rules],
            points: vec![Default::default(); Point::COUNT],
            groups: vec![Default::default(); groups],
        }
    }

    /// Adds another worker's profile.
    pub fn merge(&mut self, o: &RulesProfile) {
        if self.rules.len() < o.rules.len() {
            self.rules.resize(o.rules.len(), RuleCost::default());
        }
        for (a, b) in self.rules.iter_mut().zip(&o.rules) {
            a.checks += b.checks;
            a.matches += b.matches;
            a.nanos += b.nanos;
        }
        for (mine, theirs) in [(&mut self.points, &o.points), (&mut self.groups, &o.groups)] {
            if mine.len() < theirs.len() {
                mine.resize(theirs.len(), Default::default());
            }
            for (a, b) in mine.iter_mut().zip(theirs) {
                a[0].add(&b[0]);
                a[1].add(&b[1]);
            }
        }
    }

    pub(crate) fn point(&mut self, p: Point, dir: usize) -> Option<&mut PointCost> {
        self.points.get_mut(p.index())?.get_mut(dir)
    }

    pub(crate) fn group(&mut self, g: u32, dir: usize) -> Option<&mut PointCost> {
        self.groups.get_mut(g as usize)?.get_mut(dir)
    }

    /// Records one evaluation of rule `r` that started at `t0`, charged to point `p` (and group `g` when the
    /// evaluation was routed through one).
    pub(crate) fn check(&mut self, r: u32, p: Point, g: Option<u32>, dir: usize, t0: Instant) {
        let ns = t0.elapsed().as_nanos() as u64;
        if let Some(c) = self.rules.get_mut(r as usize) {
            c.checks += 1;
            c.nanos += ns;
        }
        if let Some(c) = self.point(p, dir) {
            c.candidates += 1;
            c.eval_nanos += ns;
        }
        if let Some(c) = g.and_then(|g| self.group(g, dir)) {
            c.candidates += 1;
            c.eval_nanos += ns;
        }
    }

    /// Records one prefilter pass over `bytes` bytes that started at `t0`.
    pub(crate) fn scanned(
        &mut self,
        p: Point,
        g: Option<u32>,
        dir: usize,
        bytes: usize,
        t0: Instant,
    ) {
        let ns = t0.elapsed().as_nanos() as u64;
        if let Some(c) = self.point(p, dir) {
            c.calls += 1;
            c.bytes += bytes as u64;
            c.prefilter_nanos += ns;
        }
        if let Some(c) = g.and_then(|g| self.group(g, dir)) {
            c.calls += 1;
            c.bytes += bytes as u64;
            c.prefilter_nanos += ns;
        }
    }

    pub(crate) fn matched(&mut self, r: u32) {
        if let Some(c) = self.rules.get_mut(r as usize) {
            c.matches += 1;
        }
    }

    /// Total nanoseconds recorded: prefilter passes plus evaluations.
    pub fn total_nanos(&self) -> u64 {
        self.points.iter().flatten().map(PointCost::total).sum()
    }

    /// The profile as text: the totals, every inspection point and rule group that was used (most expensive
    /// first), and the `top` most expensive rules with their checks, matches and time.
    pub fn report(&self, set: &RuleSet, top: usize) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let total = self.total_nanos().max(1);
        let pct = |n: u64| 100.0 * n as f64 / total as f64;
        let _ = writeln!(
            s,
            "rules profile: {:.3} s in matching ({} checks of {} rules)",
            total as f64 / 1e9,
            self.rules.iter().map(|r| r.checks).sum::<u64>(),
            self.rules.iter().filter(|r| r.checks > 0).count()
        );
        let table = |s: &mut String, title: &str, rows: Vec<(String, PointCost)>| {
            let _ = writeln!(
                s,
                "\n{title:<34} {:>9} {:>12} {:>10} {:>11} {:>10} {:>6}",
                "calls", "bytes", "prefilter", "candidates", "checks", "%"
            );
            for (name, c) in rows {
                let _ = writeln!(
                    s,
                    "{name:<34} {:>9} {:>12} {:>8.1}ms {:>11} {:>8.1}ms {:>5.1}%",
                    c.calls,
                    c.bytes,
                    c.prefilter_nanos as f64 / 1e6,
                    c.candidates,
                    c.eval_nanos as f64 / 1e6,
                    pct(c.total())
                );
            }
        };
        let dirs = ["to_server", "to_client"];
        let mut rows: Vec<(String, PointCost)> = Vec::new();
        for (i, p) in self.points.iter().enumerate() {
            for (d, c) in p.iter().enumerate() {
                if c.calls + c.candidates > 0 {
                    rows.push((format!("{} {}", Point::name(i), dirs[d]), *c));
                }
            }
        }
        rows.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then(a.0.cmp(&b.0)));
        table(&mut s, "inspection point", rows);
        let mut rows: Vec<(String, PointCost)> = Vec::new();
        for (g, p) in self.groups.iter().enumerate() {
            for (d, c) in p.iter().enumerate() {
                if c.calls + c.candidates > 0 {
                    rows.push((format!("{} {}", set.group_name(g as u32), dirs[d]), *c));
                }
            }
        }
        if !rows.is_empty() {
            rows.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then(a.0.cmp(&b.0)));
            rows.truncate(top);
            table(&mut s, "rule group (most expensive)", rows);
        }
        s.push_str(&prefilter_tables(set));
        let mut by_rule: Vec<(usize, &RuleCost)> = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, c)| c.checks > 0)
            .collect();
        by_rule.sort_by(|a, b| b.1.nanos.cmp(&a.1.nanos).then(a.0.cmp(&b.0)));
        let _ = writeln!(
            s,
            "\n{:>4} {:>10} {:>10} {:>9} {:>10} {:>8} {:>6}  msg",
            "rank", "sid", "checks", "matches", "time", "ns/check", "%"
        );
        for (rank, (ri, c)) in by_rule.into_iter().take(top).enumerate() {
            let Some(rule) = set.rules().get(ri) else {
                continue;
            };
            let _ = writeln!(
                s,
                "{:>4} {:>10} {:>10} {:>9} {:>8.2}ms {:>8} {:>5.1}%  {}",
                rank + 1,
                rule.sid,
                c.checks,
                c.matches,
                c.nanos as f64 / 1e6,
                c.nanos / c.checks.max(1),
                pct(c.nanos),
                rule.msg
            );
        }
        s
    }
}

/// The prefilter tables of a rule set: per table, its patterns by length and the rules checked on every buffer
/// without a pattern; the short patterns (under 4 bytes) of a table are listed when there are few, since they decide
/// how fast its scan is.
fn prefilter_tables(set: &RuleSet) -> String {
    use std::fmt::Write;
    let mut rows: Vec<(String, &crate::ruleset::Table)> = Vec::new();
    for (kind, tables) in [
        ("stream", &set.stream),
        ("datagram", &set.packet),
        ("tcp-packet", &set.tcp_packet),
    ] {
        for (d, pt) in tables.iter().enumerate() {
            for (name, t) in pt.named() {
                let dir = ["to_server", "to_client"].get(d).copied().unwrap_or("?");
                rows.push((format!("{kind}, {name} {dir}"), t));
            }
        }
    }
    for b in Buffer::ALL {
        if let Some(t) = set.http.get(b.index()) {
            rows.push((b.name().to_string(), t));
        }
    }
    for (b, chain, t) in &set.transformed {
        rows.push((format!("{} ({} transforms)", b.name(), chain.len()), t));
    }
    let mut s = format!(
        "\n{:<34} {:>8} {:>6} {:>6} {:>6} {:>6} {:>7}  short patterns\n",
        "prefilter table", "patterns", "1", "2-3", "4-7", "8+", "always"
    );
    for (name, t) in rows {
        if t.is_empty() {
            continue;
        }
        let [a, b, c, d] = t.patterns.length_classes();
        let short = t.patterns.short_patterns();
        let listed = if short.is_empty() {
            String::new()
        } else if short.len() <= 48 {
            short
                .iter()
                .map(|(p, nocase)| {
                    let hex: Vec<String> = p.iter().map(|x| format!("{x:02x}")).collect();
                    format!("|{}|{}", hex.join(" "), if *nocase { "i" } else { "" })
                })
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            format!("({} distinct)", short.len())
        };
        let _ = writeln!(
            s,
            "{name:<34} {:>8} {a:>6} {b:>6} {c:>6} {d:>6} {:>7}  {listed}",
            t.patterns.len(),
            t.always.len()
        );
    }
    s
}
