//! Verification: does a content chain match a buffer (or a window of a stream)?
//!
//! The prefilter only says that a rule's fast pattern occurs; this module checks the whole chain of one buffer:
//! every content with its `offset`/`depth` (absolute) or `distance`/`within` (relative to the end of the previous
//! positive match, the *cursor*), negated contents over the region their modifiers describe, and `pcre` (from the
//! cursor when relative). Like Snort and Suricata it backtracks: when a later relative item fails, the previous item
//! is retried at its next occurrence, but only when something after it actually depends on its position.
//! Backtracking is bounded by a step budget ([`STEP_BUDGET`]); running out counts as no match and is counted.
//!
//! Positions: a chain is checked over `bytes[lo..hi]`; `base` is the absolute offset of `bytes[0]` (non-zero for a
//! stream window), so `offset`/`depth` keep their meaning "from the start of the buffer". Bytes just outside
//! `lo..hi` are look-around context for `pcre` assertions, never part of a match.

use crate::rule::{Content, Group, Item};

/// Occurrences tried plus pcre searches per chain check (Suricata's inspection recursion limit is 3,000).
pub const STEP_BUDGET: u32 = 4096;

/// The bytes a chain is checked against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hay<'a> {
    pub bytes: &'a [u8],
    pub lo: usize,
    pub hi: usize,
    /// Absolute offset of `bytes[0]` in its buffer or stream.
    pub base: u64,
    /// `hi` is the real end of the buffer (`endswith` may match there).
    pub real_end: bool,
    /// The buffer came from a little-endian DCE/RPC PDU (byte keywords with `dce` read so).
    pub dce_little: bool,
}

/// Per-group facts computed once at load.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    /// For each item: whether retrying it at a later occurrence can change the outcome of the items after it.
    pub backtrack: Vec<bool>,
}

impl Plan {
    pub fn new(g: &Group) -> Plan {
        let n = g.items.len();
        let mut backtrack = vec![false; n];
        for (i, b) in backtrack.iter_mut().enumerate() {
            // Items up to and including the next positive one see this item's cursor.
            for it in g.items.iter().skip(i + 1) {
                if it.is_relative() {
                    *b = true;
                    break;
                }
                if !it.is_negated() {
                    break;
                }
            }
        }
        Plan { backtrack }
    }
}

/// Lazily created pcre caches of one worker, indexed by pcre id.
#[derive(Debug, Default)]
pub(crate) struct PcreCaches {
    caches: Vec<Option<regex_automata::meta::Cache>>,
    /// Capture scratch of the expressions that capture into variables, by pcre id (created on first use).
    caps: Vec<Option<regex_automata::util::captures::Captures>>,
    /// What the capturing expressions captured on the paths that matched ([`crate::flowvar`]).
    pub staged: crate::flowvar::Staged,
    /// What the packet's `entropy` keywords measured, for its flow ([`crate::RuleSet::keep_measured`]).
    pub measured: crate::flowvar::Measured,
}

impl PcreCaches {
    /// Makes room for `n` expressions (caches are still created on first use).
    pub fn reserve(&mut self, n: usize) {
        if self.caches.len() < n {
            self.caches.resize_with(n, || None);
        }
    }

    fn get(&mut self, id: u32, p: &crate::pcre::Pcre) -> &mut regex_automata::meta::Cache {
        let i = id as usize;
        if self.caches.len() <= i {
            self.caches.resize_with(i + 1, || None);
        }
        // The slot exists after the resize above.
        let slot = &mut self.caches[i];
        slot.get_or_insert_with(|| p.create_cache())
    }

    /// Records what expression `id` captures at its match `span` of `hay` into the staging slots.
    fn capture(
        &mut self,
        id: u32,
        p: &crate::pcre::Pcre,
        hay: &[u8],
        span: std::ops::Range<usize>,
    ) {
        let i = id as usize;
        self.get(id, p);
        if self.caps.len() <= i {
            self.caps.resize_with(i + 1, || None);
        }
        let (Some(Some(cache)), Some(caps)) = (self.caches.get_mut(i), self.caps.get_mut(i)) else {
            return;
        };
        let staged = &mut self.staged;
        p.capture(cache, caps, hay, span, |c, v| staged.record(c.op, v));
    }
}

/// Counters of verification work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyStats {
    /// Chain checks started.
    pub checks: u64,
    /// Checks that ran out of [`STEP_BUDGET`] (counted as no match).
    pub budget_exhausted: u64,
    /// Searches of backtracking pcres that ran out of [`crate::pcre::BACKTRACK_LIMIT`] (counted as no match).
    pub pcre_limit: u64,
}

/// Checks `g` against `hay`. Returns the absolute span (first start, last end) of the positive items matched, or
/// `None`. A chain with only negated items matches with an empty span at `lo`.
///
/// With `pin = Some((item, start))`, content `item` may only match at index `start` of `hay.bytes`: a stream check
/// asks whether the rule matches *with its fast pattern at this occurrence*, so that negations and window edges are
/// judged around that occurrence and not around another one that happens to lie in the same window.
pub(crate) fn check(
    g: &Group,
    plan: &Plan,
    hay: &Hay<'_>,
    pin: Option<(usize, usize)>,
    caches: &mut PcreCaches,
    stats: &mut VerifyStats,
) -> Option<(u64, u64)> {
    stats.checks += 1;
    let mut budget = STEP_BUDGET;
    let mut v = Verifier {
        g,
        plan,
        hay,
        pin,
        caches,
        budget: &mut budget,
        pcre_limit: 0,
        vars: [0; crate::byte::MAX_VARS],
    };
    let r = v.step(0, None, None);
    stats.pcre_limit += v.pcre_limit;
    if budget == 0 && r.is_none() {
        stats.budget_exhausted += 1;
    }
    r.map(|(s, e)| (hay.base + s as u64, hay.base + e as u64))
}

thread_local! {
    /// Pcre caches for the chains on the packet's own fields, which are checked with the header, outside a scanner.
    static ADDR_CACHES: std::cell::RefCell<PcreCaches> = std::cell::RefCell::new(PcreCaches::default());
}

/// Whether the rule's chains on the packet's own fields match: `ip.src` / `ip.dst` on its addresses (4 bytes for
/// IPv4, 16 for IPv6), the header buffers on its headers ([`crate::header::RawHeaders`]; a header the packet lacks
/// fails its chain, negated contents included, as Suricata's inspection of a missing buffer does).
pub(crate) fn packet_fields_match(rule: &crate::Rule, ctx: &crate::PacketCtx<'_>) -> bool {
    rule.packet_groups.iter().all(|(g, plan)| {
        let (b4, b16);
        let bytes: &[u8] = match g.buffer {
            crate::Buffer::IpSrc | crate::Buffer::IpDst => {
                let a = if g.buffer == crate::Buffer::IpSrc {
                    ctx.src
                } else {
                    ctx.dst
                };
                match a {
                    std::net::IpAddr::V4(v) => {
                        b4 = v.octets();
                        &b4
                    }
                    std::net::IpAddr::V6(v) => {
                        b16 = v.octets();
                        &b16
                    }
                }
            }
            b => match ctx.raw.get(b) {
                Some(bytes) => bytes,
                None => return false,
            },
        };
        let hay = Hay {
            bytes,
            lo: 0,
            hi: bytes.len(),
            base: 0,
            real_end: true,
            dce_little: false,
        };
        ADDR_CACHES.with(|c| {
            let mut stats = VerifyStats::default();
            check(g, plan, &hay, None, &mut c.borrow_mut(), &mut stats).is_some()
        })
    })
}

thread_local! {
    /// Scratch for `base64_decode` output, kept per thread so that verification does not allocate per check.
    static DECODED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Verifier<'a, 'b> {
    g: &'a Group,
    plan: &'a Plan,
    hay: &'a Hay<'b>,
    pin: Option<(usize, usize)>,
    caches: &'a mut PcreCaches,
    budget: &'a mut u32,
    /// Backtracking pcre searches that ran out of their limit.
    pcre_limit: u64,
    /// Byte variables (`byte_extract`, `byte_math`) of the path being tried.
    vars: [u64; crate::byte::MAX_VARS],
}

impl Verifier<'_, '_> {
    fn spend(&mut self) -> bool {
        if *self.budget == 0 {
            return false;
        }
        *self.budget -= 1;
        true
    }

    /// The region `[start, end)` (indices into `bytes`, clipped to `lo..hi`) where content `c` may lie.
    fn region(&self, c: &Content, cursor: Option<usize>) -> Option<(usize, usize)> {
        let h = self.hay;
        let base = h.base as i64;
        let (mut rs, mut re) = (h.lo as i64, h.hi as i64);
        if c.is_relative() {
            // Relative to the previous match's end, or to the start of the buffer when there is none.
            let cur = cursor.map(|c| c as i64).unwrap_or(-base);
            let (d, w) = match c.var_position {
                // Suricata reads a variable `distance`/`within` as a 32-bit signed number.
                Some(vp) => (
                    i64::from(vp.distance.get(&self.vars) as i32),
                    vp.within.map(|w| i64::from(w.get(&self.vars) as i32)),
                ),
                None => (i64::from(c.distance.unwrap_or(0)), c.within.map(i64::from)),
            };
            // Variables hold whatever the packet said: saturate rather than overflow.
            rs = rs.max(cur.saturating_add(d)).max(-base);
            if let Some(w) = w {
                re = re.min(cur.saturating_add(d).saturating_add(w));
            }
        } else {
            let o = i64::from(c.offset.unwrap_or(0)) - base;
            rs = rs.max(o);
            if let Some(d) = c.depth {
                re = re.min(o + i64::from(d));
            }
        }
        if c.endswith {
            if !h.real_end {
                return None;
            }
            rs = rs.max(re - c.bytes.len() as i64);
        }
        let len = c.bytes.len() as i64;
        if re.saturating_sub(rs) < len || rs < 0 {
            return None;
        }
        Some((rs as usize, re as usize))
    }

    /// First occurrence of `c` starting at or after `from` and ending by `end`.
    fn find(&self, c: &Content, from: usize, end: usize) -> Option<usize> {
        let hay = self.hay.bytes.get(from..end)?;
        let p = &c.bytes;
        if c.endswith {
            // Only one place can end at `end`.
            let s = hay.len().checked_sub(p.len())?;
            let cand = hay.get(s..)?;
            let ok = if c.nocase {
                cand.eq_ignore_ascii_case(p)
            } else {
                cand == p.as_slice()
            };
            return ok.then_some(from + s);
        }
        if !c.nocase {
            return c.finder.find(hay).map(|i| from + i);
        }
        let first = *p.first()?;
        let (lo, up) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
        let mut i = 0;
        while i + p.len() <= hay.len() {
            let rel = hay.get(i..)?;
            let k = if lo == up {
                memchr::memchr(lo, rel)?
            } else {
                memchr::memchr2(lo, up, rel)?
            };
            let s = i + k;
            if hay
                .get(s..s + p.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(p))
            {
                return Some(from + s);
            }
            i = s + 1;
        }
        None
    }

    fn step(
        &mut self,
        i: usize,
        cursor: Option<usize>,
        span: Option<(usize, usize)>,
    ) -> Option<(usize, usize)> {
        let Some(item) = self.g.items.get(i) else {
            return Some(span.unwrap_or((self.hay.lo, self.hay.lo)));
        };
        let retry = self.plan.backtrack.get(i).copied().unwrap_or(false);
        match item {
            Item::Content(c) => {
                let (rs, re) = match self.region(c, cursor) {
                    Some(r) => r,
                    None => {
                        return if c.negated {
                            self.step(i + 1, cursor, span)
                        } else {
                            None
                        };
                    }
                };
                if c.negated {
                    if !self.spend() {
                        return None;
                    }
                    return match self.find(c, rs, re) {
                        Some(_) => None,
                        None => self.step(i + 1, cursor, span),
                    };
                }
                let pinned = self.pin.filter(|p| p.0 == i).map(|p| p.1);
                let mut from = pinned.map_or(rs, |p| p.max(rs));
                loop {
                    if !self.spend() {
                        return None;
                    }
                    let s = self.find(c, from, re)?;
                    if pinned.is_some_and(|p| p != s) {
                        return None;
                    }
                    let e = s + c.bytes.len();
                    let sp = Some(span.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
                    if let Some(r) = self.step(i + 1, Some(e), sp) {
                        return Some(r);
                    }
                    if !retry || c.endswith || pinned.is_some() {
                        return None;
                    }
                    from = s + 1;
                }
            }
            Item::DataAt {
                n,
                relative,
                negated,
            } => {
                let h = self.hay;
                let len = (h.hi - h.lo) as u64;
                let at = |x: usize| (x.saturating_sub(h.lo)) as u64;
                let ok = if *relative {
                    cursor.map_or(0, at) + u64::from(*n) <= len
                } else {
                    u64::from(*n) < (h.base + h.hi as u64)
                };
                if ok != *negated {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Byte(b) => {
                let h = self.hay;
                if !self.spend() {
                    return None;
                }
                let bytes = h.bytes.get(..h.hi)?;
                let saved = self.vars;
                let moved = b.eval_in(
                    bytes,
                    -(h.base as i64),
                    cursor,
                    &mut self.vars,
                    h.dce_little,
                )?;
                let r = self.step(i + 1, moved.or(cursor), span);
                if r.is_none() {
                    self.vars = saved;
                }
                r
            }
            Item::Base64(b) => {
                let h = self.hay;
                if !self.spend() {
                    return None;
                }
                // Where decoding starts: the buffer start (index `-base`) or the cursor, plus `offset`.
                let from = if b.relative {
                    cursor.map_or(-(h.base as i64), |c| c as i64)
                } else {
                    -(h.base as i64)
                } + i64::from(b.offset);
                let from = usize::try_from(from)
                    .ok()
                    .filter(|&f| f >= h.lo && f < h.hi)?;
                let take = if b.bytes == 0 {
                    crate::rule::MAX_BASE64_INPUT
                } else {
                    b.bytes
                };
                let to = h.hi.min(from.saturating_add(take as usize));
                let mut decoded = DECODED.with(|d| std::mem::take(&mut *d.borrow_mut()));
                crate::base64::decode_rfc4648(h.bytes.get(from..to).unwrap_or(&[]), &mut decoded);
                let matched = !decoded.is_empty() && {
                    let sub_hay = Hay {
                        bytes: &decoded,
                        lo: 0,
                        hi: decoded.len(),
                        base: 0,
                        real_end: true,
                        dce_little: h.dce_little,
                    };
                    let mut sub = Verifier {
                        g: &b.data,
                        plan: &b.plan,
                        hay: &sub_hay,
                        pin: None,
                        caches: &mut *self.caches,
                        budget: &mut *self.budget,
                        pcre_limit: 0,
                        vars: self.vars,
                    };
                    let r = sub.step(0, None, None).is_some();
                    self.pcre_limit += sub.pcre_limit;
                    r
                };
                DECODED.with(|d| *d.borrow_mut() = decoded);
                if matched {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Asn1(a) => {
                let h = self.hay;
                if !self.spend() {
                    return None;
                }
                // Where decoding starts: the buffer start (index `-base`) plus `absolute_offset`, or the cursor
                // (the buffer start without one) plus `relative_offset`.
                let from = match a.absolute_offset {
                    Some(o) => -(h.base as i64) + i64::from(o),
                    None => {
                        cursor.map_or(-(h.base as i64), |c| c as i64)
                            + i64::from(a.relative_offset.unwrap_or(0))
                    }
                };
                let from = usize::try_from(from)
                    .ok()
                    .filter(|&f| f >= h.lo && f < h.hi)?;
                if a.matches(h.bytes.get(from..h.hi)?) {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Dataset(d) => {
                // The whole buffer: an application buffer is checked as one hay from its start.
                let h = self.hay;
                if h.base != 0 || !h.real_end {
                    return None;
                }
                let value = h.bytes.get(h.lo..h.hi)?;
                let ok = match &d.inline {
                    Some(t) => t.check(d.op, value),
                    None => {
                        crate::dataset::capture(d.op_id, value);
                        d.may_match(value)
                    }
                };
                if ok {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Num { at, width, test } => {
                // A field the parser handed over: read from the buffer's start.
                let h = self.hay;
                if h.base != 0 {
                    return None;
                }
                let at = usize::from(*at);
                let field = h.bytes.get(..h.hi)?.get(at..at + usize::from(*width))?;
                let x = field.iter().fold(0u64, |a, &b| a << 8 | u64::from(b));
                if test.test(x) {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::NumIn { at, width, values } => {
                let h = self.hay;
                if h.base != 0 {
                    return None;
                }
                let at = usize::from(*at);
                let field = h.bytes.get(..h.hi)?.get(at..at + usize::from(*width))?;
                let x = field.iter().fold(0u64, |a, &b| a << 8 | u64::from(b));
                if values.contains(&x) {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::File(c) => {
                let h = self.hay;
                if h.base == 0 && c.matches(h.bytes.get(..h.hi)?) {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Dce(c) => {
                let h = self.hay;
                if h.base == 0 && c.matches(h.bytes.get(..h.hi)?) {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Tls(c) => {
                // The records begin the buffer: a window that does not start there shows none.
                let h = self.hay;
                if h.base != 0 {
                    return None;
                }
                if c.matches(crate::tls_record::scan(h.bytes.get(..h.hi)?)) {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Entropy(e) => {
                // The whole buffer, whatever the cursor (as Suricata computes it): an application buffer or a
                // packet's payload, never a stream window (such a rule inspects packets).
                let h = self.hay;
                if h.base != 0 || !h.real_end {
                    return None;
                }
                // What it measured stays on the flow whether or not the rule matches (EVE `metadata.entropy`).
                let value = e.measure(h.bytes.get(h.lo..h.hi)?)?;
                self.caches.measured.record(e.var, value);
                if e.cmp.holds(value) {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            // The buffer is present here: `absent` fails, `absent: or_else` lets the rest decide (the absent case is
            // decided where the engine learns it, without a chain check).
            Item::Absent { or_else } => {
                if *or_else {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Rpc(t) => {
                // The packet's whole payload (an `rpc` rule inspects packets).
                let h = self.hay;
                if h.base == 0 && h.real_end && t.matches(h.bytes.get(h.lo..h.hi)?) {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Len { min, max } => {
                let h = self.hay;
                let len = (h.hi - h.lo) as u64;
                if h.real_end && (*min..=*max).contains(&len) {
                    self.step(i + 1, cursor, span)
                } else {
                    None
                }
            }
            Item::Pcre(p, id) => {
                let h = self.hay;
                let start = if p.relative {
                    cursor.unwrap_or(h.lo).max(h.lo)
                } else {
                    h.lo
                };
                if start > h.hi {
                    return if p.negated {
                        self.step(i + 1, cursor, span)
                    } else {
                        None
                    };
                }
                // A relative pcre sees the buffer from the cursor on, as PCRE does when Snort and Suricata hand it
                // the rest of the buffer: `^` matches at the cursor. Otherwise the whole buffer is the subject and
                // the bytes around the window are look-around context.
                let (sub, shift) = if p.relative {
                    (h.bytes.get(start..).unwrap_or(&[]), start)
                } else {
                    (h.bytes, 0)
                };
                let (lo, hi) = (start - shift, h.hi - shift);
                if p.negated {
                    if !self.spend() {
                        return None;
                    }
                    let cache = self.caches.get(*id, p);
                    let found = p
                        .search(cache, sub, lo..hi, p.anchored)
                        .unwrap_or_else(|_| {
                            self.pcre_limit += 1;
                            None
                        });
                    return match found {
                        Some(_) => None,
                        None => self.step(i + 1, cursor, span),
                    };
                }
                let mut from = lo;
                loop {
                    if !self.spend() {
                        return None;
                    }
                    let cache = self.caches.get(*id, p);
                    let found = p
                        .search(cache, sub, from..hi, p.anchored)
                        .unwrap_or_else(|_| {
                            self.pcre_limit += 1;
                            None
                        });
                    let (s, e) = found?;
                    let ms = s;
                    let (s, e) = (s + shift, e + shift);
                    let sp = Some(span.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
                    if let Some(r) = self.step(i + 1, Some(e), sp) {
                        if !p.captures.is_empty() {
                            // The path that matched: what this expression captured on it is what the rule stores.
                            self.caches.capture(*id, p, sub, ms..hi);
                        }
                        return Some(r);
                    }
                    if !retry || p.anchored || s >= h.hi {
                        return None;
                    }
                    from = s + 1 - shift;
                }
            }
        }
    }
}
