//! Rule header addresses and ports: variables, lists, negation, ranges, compiled to sorted interval sets.
//!
//! Snort and Suricata write `[10.0.0.0/8,!10.1.0.0/16]`, `!$HOME_NET`, `[80,443,8000:8080]`, `1024:` and nest
//! them. Each expression compiles once, at load, to a set of disjoint inclusive intervals (IPv4 and IPv6 apart), so
//! a header check on the hot path is an "any" flag test or a binary search, never an expression walk. A list means
//! "any positive element (or everything, when it has none) and no negated one", which is how both engines read
//! `[a,!b]`; `!x` is the complement.
//!
//! Variables (`$HOME_NET`, `$HTTP_PORTS`, ...) come from [`Vars`]; an undefined one is an [`ExprError::Undefined`]
//! (the rule is skipped, naming it, as Suricata refuses it), and a variable that refers back to itself is a cycle
//! error naming the chain. Nesting (brackets and variables referring to variables) is capped at [`MAX_DEPTH`] and
//! list length at [`MAX_ITEMS`] so a hostile rule file cannot recurse deeply or build huge sets.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use crate::vars::Vars;

/// Deepest nesting of brackets, negations and variable references in one address or port expression.
pub const MAX_DEPTH: usize = 16;
/// Most elements in one expression after variable expansion.
pub const MAX_ITEMS: usize = 4096;

/// A set of values as sorted, disjoint, non-adjacent inclusive intervals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntervalSet<T> {
    ranges: Vec<(T, T)>,
}

/// The value types interval sets are built over.
pub trait Point: Copy + Ord + std::fmt::Debug {
    const MIN: Self;
    const MAX: Self;
    fn succ(self) -> Option<Self>;
    fn pred(self) -> Option<Self>;
}

macro_rules! point {
    ($t:ty) => {
        impl Point for $t {
            const MIN: Self = <$t>::MIN;
            const MAX: Self = <$t>::MAX;
            fn succ(self) -> Option<Self> {
                self.checked_add(1)
            }
            fn pred(self) -> Option<Self> {
                self.checked_sub(1)
            }
        }
    };
}
point!(u16);
point!(u32);
point!(u128);

impl<T: Point> IntervalSet<T> {
    /// The empty set.
    pub fn empty() -> Self {
        IntervalSet { ranges: Vec::new() }
    }

    /// Every value.
    pub fn full() -> Self {
        IntervalSet {
            ranges: vec![(T::MIN, T::MAX)],
        }
    }

    /// One interval (`lo > hi` gives the empty set).
    pub fn range(lo: T, hi: T) -> Self {
        if lo > hi {
            Self::empty()
        } else {
            IntervalSet {
                ranges: vec![(lo, hi)],
            }
        }
    }

    /// Whether every value is in the set.
    pub fn is_full(&self) -> bool {
        self.ranges.len() == 1 && self.ranges.first() == Some(&(T::MIN, T::MAX))
    }

    /// Whether no value is in the set.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Membership by binary search over the intervals.
    pub fn contains(&self, v: T) -> bool {
        match self.ranges.binary_search_by(|&(lo, _)| lo.cmp(&v)) {
            Ok(_) => true,
            Err(0) => false,
            Err(i) => self.ranges.get(i - 1).is_some_and(|&(_, hi)| v <= hi),
        }
    }

    /// The intervals, sorted.
    pub fn ranges(&self) -> &[(T, T)] {
        &self.ranges
    }

    fn normalize(mut ranges: Vec<(T, T)>) -> Self {
        ranges.sort_unstable();
        let mut out: Vec<(T, T)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            if let Some(last) = out.last_mut() {
                let adjacent = last.1.succ().is_none_or(|n| lo <= n);
                if adjacent {
                    if hi > last.1 {
                        last.1 = hi;
                    }
                    continue;
                }
            }
            out.push((lo, hi));
        }
        IntervalSet { ranges: out }
    }

    /// Union of two sets.
    pub fn union(&self, other: &Self) -> Self {
        let mut r = self.ranges.clone();
        r.extend_from_slice(&other.ranges);
        Self::normalize(r)
    }

    /// Every value not in the set.
    pub fn complement(&self) -> Self {
        let mut out = Vec::with_capacity(self.ranges.len() + 1);
        let mut next = Some(T::MIN);
        for &(lo, hi) in &self.ranges {
            if let Some(n) = next
                && n < lo
                && let Some(p) = lo.pred()
            {
                out.push((n, p));
            }
            next = hi.succ();
        }
        if let Some(n) = next {
            out.push((n, T::MAX));
        }
        IntervalSet { ranges: out }
    }

    /// Values in `self` but not in `other`.
    pub fn difference(&self, other: &Self) -> Self {
        self.intersect(&other.complement())
    }

    /// Values in both.
    pub fn intersect(&self, other: &Self) -> Self {
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        while let (Some(&(a0, a1)), Some(&(b0, b1))) = (self.ranges.get(i), other.ranges.get(j)) {
            let lo = a0.max(b0);
            let hi = a1.min(b1);
            if lo <= hi {
                out.push((lo, hi));
            }
            if a1 < b1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        IntervalSet { ranges: out }
    }
}

/// A compiled address expression: IPv4 and IPv6 interval sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrSet {
    any: bool,
    v4: IntervalSet<u32>,
    v6: IntervalSet<u128>,
}

impl AddrSet {
    /// Every address.
    pub fn any() -> AddrSet {
        AddrSet {
            any: true,
            v4: IntervalSet::full(),
            v6: IntervalSet::full(),
        }
    }

    fn from_parts(v4: IntervalSet<u32>, v6: IntervalSet<u128>) -> AddrSet {
        AddrSet {
            any: v4.is_full() && v6.is_full(),
            v4,
            v6,
        }
    }

    /// Whether the set holds every address (the header check is then skipped).
    pub fn is_any(&self) -> bool {
        self.any
    }

    /// The IPv4 intervals, sorted.
    pub fn v4_ranges(&self) -> &[(u32, u32)] {
        self.v4.ranges()
    }

    /// The IPv6 intervals, sorted.
    pub fn v6_ranges(&self) -> &[(u128, u128)] {
        self.v6.ranges()
    }

    /// Whether the set holds no address (a rule with it can never match).
    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    /// Membership. IPv4-mapped IPv6 addresses are not folded: rules name the family they mean.
    #[inline]
    pub fn contains(&self, ip: IpAddr) -> bool {
        if self.any {
            return true;
        }
        match ip {
            IpAddr::V4(a) => self.v4.contains(u32::from(a)),
            IpAddr::V6(a) => self.v6.contains(u128::from(a)),
        }
    }

    fn union(&self, o: &AddrSet) -> AddrSet {
        AddrSet::from_parts(self.v4.union(&o.v4), self.v6.union(&o.v6))
    }

    fn complement(&self) -> AddrSet {
        AddrSet::from_parts(self.v4.complement(), self.v6.complement())
    }

    fn difference(&self, o: &AddrSet) -> AddrSet {
        AddrSet::from_parts(self.v4.difference(&o.v4), self.v6.difference(&o.v6))
    }

    fn empty() -> AddrSet {
        AddrSet {
            any: false,
            v4: IntervalSet::empty(),
            v6: IntervalSet::empty(),
        }
    }
}

/// A compiled port expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSet {
    set: IntervalSet<u16>,
    any: bool,
}

impl PortSet {
    /// Every port.
    pub fn any() -> PortSet {
        PortSet {
            set: IntervalSet::full(),
            any: true,
        }
    }

    fn from_set(set: IntervalSet<u16>) -> PortSet {
        PortSet {
            any: set.is_full(),
            set,
        }
    }

    /// Whether the set holds every port.
    pub fn is_any(&self) -> bool {
        self.any
    }

    /// Whether the set holds no port.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Membership.
    #[inline]
    pub fn contains(&self, port: u16) -> bool {
        self.any || self.set.contains(port)
    }

    /// The intervals, sorted.
    pub fn ranges(&self) -> &[(u16, u16)] {
        self.set.ranges()
    }
}

/// Why an address or port expression did not compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExprError {
    /// It names a variable that is not defined (the name, without `$`).
    Undefined(String),
    /// Bad syntax, a variable cycle, or a cap exceeded.
    Invalid(String),
}

impl std::fmt::Display for ExprError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExprError::Undefined(n) => write!(f, "undefined variable ${n}"),
            ExprError::Invalid(m) => f.write_str(m),
        }
    }
}

impl From<String> for ExprError {
    fn from(m: String) -> Self {
        ExprError::Invalid(m)
    }
}

impl From<&str> for ExprError {
    fn from(m: &str) -> Self {
        ExprError::Invalid(m.to_string())
    }
}

/// Expands variables and compiles expressions; collects the names of the variables used.
pub(crate) struct Resolver<'v> {
    pub vars: &'v Vars,
    /// Every variable an expression compiled so far referred to, directly or through another variable.
    pub used: BTreeSet<String>,
    /// Variables being expanded, outermost first (a name already here is a cycle).
    stack: Vec<String>,
    /// After an error: the innermost variable whose value failed (`None`: the expression itself).
    pub error_in: Option<String>,
    items: usize,
}

/// A parsed expression before compilation: what addresses and ports share.
enum Elem<'s> {
    Any,
    Not(Box<Elem<'s>>),
    List(Vec<Elem<'s>>),
    Atom(&'s str),
    /// A variable: its name and value (kept owned because it comes from [`Vars`]).
    Var(String, String),
}

impl<'v> Resolver<'v> {
    pub fn new(vars: &'v Vars) -> Self {
        Resolver {
            vars,
            used: BTreeSet::new(),
            stack: Vec::new(),
            error_in: None,
            items: 0,
        }
    }

    /// Compiles an address expression such as `[10.0.0.0/8,!$DNS_SERVERS]`.
    pub fn addr(&mut self, text: &str) -> Result<AddrSet, ExprError> {
        self.items = 0;
        self.stack.clear();
        self.error_in = None;
        self.addr_at(text, 0)
    }

    /// Compiles a port expression such as `[80,8000:8080,!8081]`.
    pub fn port(&mut self, text: &str) -> Result<PortSet, ExprError> {
        self.items = 0;
        self.stack.clear();
        self.error_in = None;
        self.port_at(text, 0)
    }

    /// Expands variable `name` (value `value`) with `f`, refusing a variable already being expanded.
    fn expand<T>(
        &mut self,
        name: &str,
        value: &str,
        f: impl FnOnce(&mut Self, &str) -> Result<T, ExprError>,
    ) -> Result<T, ExprError> {
        if self.stack.iter().any(|n| n == name) {
            let mut chain: Vec<String> = self.stack.iter().map(|n| format!("${n}")).collect();
            chain.push(format!("${name}"));
            return Err(ExprError::Invalid(format!(
                "variable cycle {}",
                chain.join(" -> ")
            )));
        }
        self.used.insert(name.to_string());
        self.stack.push(name.to_string());
        let r = f(self, value);
        self.stack.pop();
        if r.is_err() && self.error_in.is_none() {
            self.error_in = Some(name.to_string());
        }
        r
    }

    fn addr_at(&mut self, text: &str, depth: usize) -> Result<AddrSet, ExprError> {
        let e = self.parse(text.trim(), depth)?;
        self.eval_addr(&e, depth)
    }

    fn port_at(&mut self, text: &str, depth: usize) -> Result<PortSet, ExprError> {
        Ok(PortSet::from_set(self.port_set_at(text, depth)?))
    }

    fn port_set_at(&mut self, text: &str, depth: usize) -> Result<IntervalSet<u16>, ExprError> {
        let e = self.parse(text.trim(), depth)?;
        self.eval_port(&e, depth)
    }

    fn parse<'s>(&mut self, s: &'s str, depth: usize) -> Result<Elem<'s>, ExprError> {
        if depth > MAX_DEPTH {
            return Err(format!("nesting deeper than {MAX_DEPTH}").into());
        }
        self.items += 1;
        if self.items > MAX_ITEMS {
            return Err(format!("more than {MAX_ITEMS} list elements").into());
        }
        let s = s.trim();
        if s.is_empty() {
            return Err("empty address or port element".into());
        }
        if let Some(rest) = s.strip_prefix('!') {
            return Ok(Elem::Not(Box::new(self.parse(rest, depth + 1)?)));
        }
        if s.eq_ignore_ascii_case("any") {
            return Ok(Elem::Any);
        }
        if let Some(inner) = s.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| ExprError::Invalid(format!("unbalanced brackets in `{s}`")))?;
            let mut out = Vec::new();
            for part in split_top_level(inner)? {
                out.push(self.parse(part, depth + 1)?);
            }
            return Ok(Elem::List(out));
        }
        if let Some(name) = s.strip_prefix('$') {
            let name = name.trim();
            return match self.vars.get(name) {
                Some(v) => Ok(Elem::Var(name.to_string(), v.to_string())),
                None => Err(ExprError::Undefined(name.chars().take(64).collect())),
            };
        }
        Ok(Elem::Atom(s))
    }

    fn eval_addr(&mut self, e: &Elem<'_>, depth: usize) -> Result<AddrSet, ExprError> {
        Ok(match e {
            Elem::Any => AddrSet::any(),
            Elem::Not(x) => self.eval_addr(x, depth + 1)?.complement(),
            Elem::Var(n, v) => self.expand(n, v, |r, v| r.addr_at(v, depth + 1))?,
            Elem::Atom(a) => parse_cidr(a)?,
            Elem::List(items) => {
                let (mut pos, mut neg, mut any_pos) = (AddrSet::empty(), AddrSet::empty(), false);
                for it in items {
                    match it {
                        Elem::Not(x) => neg = neg.union(&self.eval_addr(x, depth + 1)?),
                        other => {
                            any_pos = true;
                            pos = pos.union(&self.eval_addr(other, depth + 1)?);
                        }
                    }
                }
                if !any_pos {
                    pos = AddrSet::any();
                }
                pos.difference(&neg)
            }
        })
    }

    fn eval_port(&mut self, e: &Elem<'_>, depth: usize) -> Result<IntervalSet<u16>, ExprError> {
        Ok(match e {
            Elem::Any => IntervalSet::full(),
            Elem::Not(x) => self.eval_port(x, depth + 1)?.complement(),
            Elem::Var(n, v) => self.expand(n, v, |r, v| r.port_set_at(v, depth + 1))?,
            Elem::Atom(a) => parse_port_range(a)?,
            Elem::List(items) => {
                let (mut pos, mut neg, mut any_pos) =
                    (IntervalSet::empty(), IntervalSet::empty(), false);
                for it in items {
                    match it {
                        Elem::Not(x) => neg = neg.union(&self.eval_port(x, depth + 1)?),
                        other => {
                            any_pos = true;
                            pos = pos.union(&self.eval_port(other, depth + 1)?);
                        }
                    }
                }
                if !any_pos {
                    pos = IntervalSet::full();
                }
                pos.difference(&neg)
            }
        })
    }
}

/// Splits `a,[b,c],d` at commas outside brackets.
fn split_top_level(s: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("unbalanced brackets in `{s}`"))?
            }
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced brackets in `[{s}]`"));
    }
    out.push(&s[start..]);
    Ok(out)
}

/// `1.2.3.4`, `1.2.3.0/24`, `1.2.3.0/255.255.255.0`, `2001:db8::/32`.
fn parse_cidr(s: &str) -> Result<AddrSet, String> {
    let (ip, prefix) = match s.split_once('/') {
        Some((a, p)) => (a.trim(), Some(p.trim())),
        None => (s, None),
    };
    let bad = || format!("invalid address `{s}`");
    let ip: IpAddr = ip.parse().map_err(|_| bad())?;
    match ip {
        IpAddr::V4(a) => {
            let bits = match prefix {
                None => 32,
                Some(p) => match p.parse::<u32>() {
                    Ok(n) if n <= 32 => n,
                    Ok(_) => return Err(bad()),
                    Err(_) => {
                        let m: Ipv4Addr = p.parse().map_err(|_| bad())?;
                        let m = u32::from(m);
                        if m.leading_ones() + m.trailing_zeros() != 32 {
                            return Err(bad());
                        }
                        m.leading_ones()
                    }
                },
            };
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            let lo = u32::from(a) & mask;
            Ok(AddrSet::from_parts(
                IntervalSet::range(lo, lo | !mask),
                IntervalSet::empty(),
            ))
        }
        IpAddr::V6(a) => {
            let bits = match prefix {
                None => 128,
                Some(p) => match p.parse::<u32>() {
                    Ok(n) if n <= 128 => n,
                    _ => return Err(bad()),
                },
            };
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            let lo = u128::from(a) & mask;
            let _: Ipv6Addr = a;
            Ok(AddrSet::from_parts(
                IntervalSet::empty(),
                IntervalSet::range(lo, lo | !mask),
            ))
        }
    }
}

/// `80`, `1024:`, `:1023`, `8000:8080`.
fn parse_port_range(s: &str) -> Result<IntervalSet<u16>, String> {
    let num = |t: &str| -> Result<u16, String> {
        t.trim()
            .parse::<u16>()
            .map_err(|_| format!("invalid port `{s}`"))
    };
    match s.split_once(':') {
        None => {
            let p = num(s)?;
            Ok(IntervalSet::range(p, p))
        }
        Some((a, b)) => {
            let lo = if a.trim().is_empty() { 0 } else { num(a)? };
            let hi = if b.trim().is_empty() {
                u16::MAX
            } else {
                num(b)?
            };
            if lo > hi {
                return Err(format!("invalid port range `{s}`"));
            }
            Ok(IntervalSet::range(lo, hi))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses() {
        let vars = Vars::suricata_defaults();
        let mut r = Resolver::new(&vars);
        let home = r.addr("$HOME_NET").unwrap();
        assert!(
            home.contains(v4("10.1.2.3"))
                && home.contains(v4("192.168.1.1"))
                && !home.contains(v4("8.8.8.8"))
        );
        let ext = r.addr("$EXTERNAL_NET").unwrap();
        assert!(
            !ext.contains(v4("10.1.2.3")) && ext.contains(v4("8.8.8.8")) && ext.contains(v4("::1"))
        );
        let l = r
            .addr("[10.0.0.0/8, ![10.1.0.0/16,10.2.0.0/255.255.0.0]]")
            .unwrap();
        assert!(
            l.contains(v4("10.3.0.1"))
                && !l.contains(v4("10.1.0.1"))
                && !l.contains(v4("10.2.9.9"))
        );
        assert!(r.addr("any").unwrap().is_any());
        assert!(r.addr("!any").unwrap().is_empty());
        let v6 = r.addr("2001:db8::/32").unwrap();
        assert!(v6.contains(v4("2001:db8::1")) && !v6.contains(v4("2001:db9::1")));
        assert!(r.addr("[!1.2.3.4]").unwrap().contains(v4("1.2.3.5")));
        assert_eq!(
            r.used.iter().map(String::as_str).collect::<Vec<_>>(),
            ["EXTERNAL_NET", "HOME_NET"]
        );
        assert_eq!(r.addr("$NOPE"), Err(ExprError::Undefined("NOPE".into())));
        assert_eq!(
            r.addr("[10.0.0.0/8,!$NOPE]"),
            Err(ExprError::Undefined("NOPE".into()))
        );
    }

    #[test]
    fn ports() {
        let vars = Vars::suricata_defaults();
        let mut r = Resolver::new(&vars);
        let p = r.port("[80,8000:8080,!8081,1024:]").unwrap();
        assert!(
            p.contains(80)
                && p.contains(8080)
                && !p.contains(8081)
                && p.contains(65535)
                && !p.contains(81)
        );
        assert!(r.port("!$HTTP_PORTS").unwrap().contains(81));
        assert!(!r.port(":1023").unwrap().contains(1024));
        assert!(r.port("any").unwrap().is_any());
        assert!(r.port("70000").is_err() && r.port("90:80").is_err() && r.port("[80").is_err());
    }

    #[test]
    fn hostile_nesting_and_cycles() {
        let mut vars = Vars::new();
        vars.set("A", "$B").set("B", "[$A]");
        let mut r = Resolver::new(&vars);
        assert_eq!(
            r.addr("$A").unwrap_err().to_string(),
            "variable cycle $A -> $B -> $A"
        );
        // The same variable twice side by side is no cycle.
        vars.set("C", "[$D,!$D]").set("D", "10.0.0.0/8");
        let mut r = Resolver::new(&vars);
        assert!(r.addr("[$C,$D]").is_ok());
        let deep = format!("{}1.2.3.4{}", "[".repeat(100), "]".repeat(100));
        assert!(r.addr(&deep).is_err());
        let long = format!("[{}]", vec!["80"; 5000].join(","));
        assert!(r.port(&long).unwrap_err().to_string().contains("elements"));
    }

    #[test]
    fn interval_algebra() {
        let a = IntervalSet::range(10u16, 20).union(&IntervalSet::range(21, 30));
        assert_eq!(a.ranges(), &[(10, 30)]);
        assert_eq!(a.complement().ranges(), &[(0, 9), (31, u16::MAX)]);
        assert_eq!(a.complement().complement(), a);
        assert!(IntervalSet::<u16>::full().complement().is_empty());
    }
}
