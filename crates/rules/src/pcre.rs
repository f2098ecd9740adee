//! `pcre` options, run on the `regex-automata` engine where it can express them and on a backtracking engine where
//! it cannot, or rejected with a reason.
//!
//! Snort and Suricata hand `pcre:"/…/flags"` to PCRE. The `regex` family matches in time linear in the input (no
//! catastrophic backtracking, which matters when the input is hostile traffic), supports most of what rule writers
//! use, and matches raw bytes with Unicode off: every expression it can express runs there. Expressions with
//! back-references (numbered or `(?P=name)`), look-around, atomic groups, possessive quantifiers or conditionals run
//! on `fancy-regex` in its ASCII bytes mode (PCRE's non-UTF mode: `.` any byte, `\w \d \s` ASCII), each search
//! capped at [`BACKTRACK_LIMIT`] backtracking steps as Suricata caps PCRE with its match limit; a search that runs
//! out counts as no match (counted in [`crate::verify::VerifyStats::pcre_limit`]). Recursion, callouts and branch
//! reset are refused with a precise reason instead of being approximated. A few PCRE spellings that `regex-syntax`
//! reads differently are rewritten first: `\/`, `\<`, `\>` and other escaped punctuation become literals, `\Q…\E`
//! becomes escaped literals, a `{` that does not start a quantifier is a literal brace (as in PCRE), `-` next to a
//! class escape inside `[...]` is a literal, `\e` is ESC.
//!
//! Flags: `i s m x` map to the syntax options, `G` swaps greediness (linear engine only), `A` anchors at the start
//! of the search, `R` makes the search start where the previous match ended, `E B O` have no effect on what matches
//! here and are accepted; the HTTP buffer flags select the buffer (see [`PcreBuffer`]: `U I P Q H D M C K S Y V W
//! Z`). Any other flag rejects the rule.
//!
//! Known difference: without `m`, PCRE's `$` also matches before a final newline; here it matches only at the
//! end (likewise `\Z`, read as `\z`).

use regex_automata::meta;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input};
use regex_syntax::hir::Look;

/// Compiled-program size cap per expression (Thompson NFA bytes): a hostile `(a{1000}){1000}` is refused.
const NFA_SIZE_LIMIT: usize = 2 << 20;
/// Lazy-DFA cache per expression and worker (created on first use): 1,000 expressions in use cost at most 64 MiB
/// per worker; an expression that thrashes its cache falls back to a slower engine inside `regex-automata`.
const DFA_CACHE: usize = 64 << 10;

/// A buffer named by a pcre flag (Snort 2 / Suricata legacy style), instead of by a sticky buffer keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcreBuffer {
    /// `U`: normalised URI.
    Uri,
    /// `I`: raw URI.
    RawUri,
    /// `P`: request body.
    RequestBody,
    /// `Q`: response body (file data).
    ResponseBody,
    /// `H`: headers (normalised).
    Header,
    /// `D`: raw headers.
    RawHeader,
    /// `M`: method.
    Method,
    /// `C`: cookie.
    Cookie,
    /// `S`: status code.
    StatCode,
    /// `V`: user agent.
    UserAgent,
    /// `W`: host (normalised).
    Host,
    /// `Z`: raw host.
    RawHost,
    /// `Y`: status message.
    StatMsg,
}

/// A translated, compiled `pcre` option.
#[derive(Clone, Debug)]
pub struct Pcre {
    pub(crate) regex: Engine,
    /// `R`: search from the end of the previous match in the same buffer.
    pub relative: bool,
    /// `A`: the match must start where the search starts.
    pub anchored: bool,
    /// `pcre:!"…"`: the rule requires that the expression does *not* match.
    pub negated: bool,
    /// Buffer selected by a flag, if any.
    pub buffer: Option<PcreBuffer>,
    /// The expression has an assertion that looks at bytes after a match (`$`, `\b`, `\z`, ...): on a stream its
    /// answer can change when more data arrives, so stream verification waits for the full window.
    pub end_sensitive: bool,
    /// The expression as written in the rule (for reports).
    pub source: String,
    /// What a match captures into variables ([`crate::flowvar`]): named groups `flow_*`, `pkt_*`, `alert_*`, or
    /// the list after the flags (`/…/flags, pkt:a, flow:b`); empty for most expressions.
    pub captures: Vec<crate::flowvar::Capture>,
}

/// The engine an expression runs on.
#[derive(Clone, Debug)]
pub(crate) enum Engine {
    /// `regex-automata`: linear time in the input.
    Linear(meta::Regex),
    /// `fancy-regex` over bytes, for back-references, look-around, atomic groups and possessive quantifiers; its
    /// backtracking is capped at [`BACKTRACK_LIMIT`] steps per search.
    Backtrack {
        regex: Box<fancy_regex::Regex>,
        /// The empty expression: [`Pcre::create_cache`] hands out its (tiny) cache, which the search ignores.
        placeholder: meta::Regex,
    },
}

/// Backtracking steps one search of a backtracking expression may take before it counts as no match (Suricata's
/// default `pcre.match-limit` is 3,500 calls of PCRE's match function; this limit counts fancy-regex's backtracks,
/// a comparable unit).
pub const BACKTRACK_LIMIT: usize = 3_500;

/// The features the linear-time engine lacks and the backtracking engine runs (the reasons `translate` gives).
const BACKTRACKING_FEATURES: &[&str] = &[
    "pcre: backreference",
    "pcre: look-around",
    "pcre: atomic group",
    "pcre: possessive quantifier",
    "pcre: conditional",
    "pcre: escape \\g",
    "pcre: escape \\k",
    "pcre: escape \\K",
];

/// A search that ran out of [`BACKTRACK_LIMIT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitExceeded;

impl Engine {
    /// Bytes of the compiled program (for the backtracking engine an estimate: its delegate programs are capped at
    /// the same size limit as the linear engine's, and most are far smaller).
    pub(crate) fn memory_usage(&self) -> usize {
        match self {
            Engine::Linear(r) => r.memory_usage(),
            Engine::Backtrack { .. } => NFA_SIZE_LIMIT / 8,
        }
    }
}

/// Why a `pcre` option was not taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PcreError {
    /// Valid PCRE that this engine does not express (the rule is skipped with this reason).
    Unsupported(String),
    /// Not a valid option value at all (a parse error).
    Invalid(String),
}

impl Pcre {
    /// Parses the option value (`"/expr/flags"`, optionally preceded by `!`).
    pub fn parse(value: &str) -> Result<Pcre, PcreError> {
        let mut v = value.trim();
        let negated = if let Some(rest) = v.strip_prefix('!') {
            v = rest.trim_start();
            true
        } else {
            false
        };
        // Suricata takes the value with or without its double quotes (`pcre:"/a/i";` and `pcre:/a/i;`).
        let inner = match v.strip_prefix('"') {
            Some(q) => q.strip_suffix('"').ok_or_else(|| {
                PcreError::Invalid("pcre value opens a quote it does not close".into())
            })?,
            None => v,
        };
        let inner = unescape_rule_level(inner);
        let body = inner
            .strip_prefix('/')
            .ok_or_else(|| PcreError::Invalid("pcre must start with `/`".into()))?;
        let slash = body
            .rfind('/')
            .ok_or_else(|| PcreError::Invalid("pcre without closing `/`".into()))?;
        let (expr, flags) = (&body[..slash], &body[slash + 1..]);
        // Suricata 8: the flags may be followed by the variables the groups are captured into.
        let (flags, list) = match flags.split_once(',') {
            Some((f, l)) => (f.trim_end(), Some(l)),
            None => (flags, None),
        };
        let placeholder = empty_regex()?;
        let mut p = Pcre {
            regex: Engine::Linear(placeholder.clone()),
            relative: false,
            anchored: false,
            negated,
            buffer: None,
            end_sensitive: false,
            source: inner.clone(),
            captures: Vec::new(),
        };
        let (mut i, mut m, mut s, mut x, mut g) = (false, false, false, false, false);
        for f in flags.chars() {
            let buf = match f {
                'i' => {
                    i = true;
                    None
                }
                'm' => {
                    m = true;
                    None
                }
                's' => {
                    s = true;
                    None
                }
                'x' => {
                    x = true;
                    None
                }
                'G' => {
                    g = true;
                    None
                }
                'A' => {
                    p.anchored = true;
                    None
                }
                'R' => {
                    p.relative = true;
                    None
                }
                'E' | 'B' | 'O' => None,
                'U' => Some(PcreBuffer::Uri),
                'I' => Some(PcreBuffer::RawUri),
                'P' => Some(PcreBuffer::RequestBody),
                'Q' => Some(PcreBuffer::ResponseBody),
                'H' => Some(PcreBuffer::Header),
                'D' => Some(PcreBuffer::RawHeader),
                'M' => Some(PcreBuffer::Method),
                'C' => Some(PcreBuffer::Cookie),
                'S' => Some(PcreBuffer::StatCode),
                'V' => Some(PcreBuffer::UserAgent),
                'W' => Some(PcreBuffer::Host),
                'Z' => Some(PcreBuffer::RawHost),
                'Y' => Some(PcreBuffer::StatMsg),
                // Snort's raw cookie: the engine keeps one cookie buffer.
                'K' => Some(PcreBuffer::Cookie),
                c if c.is_ascii_alphabetic() => {
                    return Err(PcreError::Unsupported(format!("pcre flag {c}")));
                }
                c => return Err(PcreError::Invalid(format!("invalid pcre flag `{c}`"))),
            };
            if let Some(b) = buf {
                if p.buffer.is_some_and(|old| old != b) {
                    return Err(PcreError::Invalid("pcre names two buffers".into()));
                }
                p.buffer = Some(b);
            }
        }
        let translated = match translate(expr, false) {
            Err(PcreError::Unsupported(r)) if BACKTRACKING_FEATURES.contains(&r.as_str()) => {
                if g {
                    return Err(PcreError::Unsupported(format!("{r} with flag G")));
                }
                let translated = translate(expr, true)?;
                let re = fancy_regex::RegexBuilder::new(&translated)
                    .bytes_mode(fancy_regex::BytesMode::Ascii)
                    .case_insensitive(i)
                    .multi_line(m)
                    .dot_matches_new_line(s)
                    .ignore_whitespace(x)
                    .backtrack_limit(BACKTRACK_LIMIT)
                    .delegate_size_limit(NFA_SIZE_LIMIT)
                    .delegate_dfa_size_limit(DFA_CACHE)
                    .build()
                    .map_err(|e| {
                        PcreError::Unsupported(format!(
                            "pcre: {}",
                            short_syntax_error(&e.to_string())
                        ))
                    })?;
                let names: Vec<Option<String>> =
                    re.capture_names().map(|n| n.map(str::to_string)).collect();
                p.regex = Engine::Backtrack {
                    regex: Box::new(re),
                    placeholder,
                };
                // Look-ahead and back-references may depend on any later byte.
                p.end_sensitive = true;
                p.captures = captures(&names, list)?;
                return Ok(p);
            }
            other => other?,
        };
        let hir = regex_syntax::ParserBuilder::new()
            .unicode(false)
            .utf8(false)
            .octal(true)
            .case_insensitive(i)
            .multi_line(m)
            .dot_matches_new_line(s)
            .ignore_whitespace(x)
            .swap_greed(g)
            .nest_limit(64)
            .build()
            .parse(&translated)
            .map_err(|e| {
                PcreError::Unsupported(format!("pcre: {}", short_syntax_error(&e.to_string())))
            })?;
        p.end_sensitive = hir
            .properties()
            .look_set()
            .iter()
            .any(|l| !matches!(l, Look::Start | Look::StartLF | Look::StartCRLF));
        let mut names = vec![None; hir.properties().explicit_captures_len() + 1];
        group_names(&hir, &mut names);
        p.captures = captures(&names, list)?;
        // The groups are compiled only when the expression captures into variables: a search needs the match's
        // bounds alone, and the groups' states (and the one-pass DFA built for them) were most of the compile of
        // the rule sets' expressions.
        let groups = match p.captures.is_empty() {
            true => regex_automata::nfa::thompson::WhichCaptures::Implicit,
            false => regex_automata::nfa::thompson::WhichCaptures::All,
        };
        // Built from the expression as parsed above (the same syntax options), not parsed again.
        p.regex = Engine::Linear(
            meta::Regex::builder()
                .configure(
                    meta::Regex::config()
                        .nfa_size_limit(Some(NFA_SIZE_LIMIT))
                        .hybrid_cache_capacity(DFA_CACHE)
                        .utf8_empty(BYTES_UTF8_EMPTY)
                        .which_captures(groups),
                )
                .build_from_hir(&hir)
                .map_err(|e| {
                    PcreError::Unsupported(format!("pcre: {}", short_syntax_error(&e.to_string())))
                })?,
        );
        Ok(p)
    }

    /// Compiles an expression written without slashes or flags (the `pcrexform` transform's value) for the
    /// linear-time engine, with the capture groups it has.
    pub(crate) fn compile_plain(expr: &str) -> Result<meta::Regex, PcreError> {
        let translated = translate(expr, false)?;
        meta::Regex::builder()
            .syntax(
                syntax::Config::new()
                    .unicode(false)
                    .utf8(false)
                    .octal(true)
                    .nest_limit(64),
            )
            .configure(
                meta::Regex::config()
                    .nfa_size_limit(Some(NFA_SIZE_LIMIT))
                    .hybrid_cache_capacity(DFA_CACHE)
                    .utf8_empty(BYTES_UTF8_EMPTY),
            )
            .build(&translated)
            .map_err(|e| {
                PcreError::Unsupported(format!("pcre: {}", short_syntax_error(&e.to_string())))
            })
    }

    /// A cache for [`Pcre::find`]; one per expression and worker thread (the backtracking engine keeps its state
    /// per search and gets an empty one).
    pub fn create_cache(&self) -> meta::Cache {
        match &self.regex {
            Engine::Linear(r) => r.create_cache(),
            Engine::Backtrack { placeholder, .. } => placeholder.create_cache(),
        }
    }

    /// Whether the expression runs on the backtracking engine.
    pub fn backtracks(&self) -> bool {
        matches!(self.regex, Engine::Backtrack { .. })
    }

    /// First match within `hay[span]`, with `hay` outside the span as look-around context. `anchored` forces the
    /// match to start at `span.start`. A search that exceeds [`BACKTRACK_LIMIT`] is no match.
    pub fn find(
        &self,
        cache: &mut meta::Cache,
        hay: &[u8],
        span: std::ops::Range<usize>,
        anchored: bool,
    ) -> Option<(usize, usize)> {
        self.search(cache, hay, span, anchored).ok().flatten()
    }

    /// [`Pcre::find`], telling a search that ran out of [`BACKTRACK_LIMIT`] apart from no match.
    pub fn search(
        &self,
        cache: &mut meta::Cache,
        hay: &[u8],
        span: std::ops::Range<usize>,
        anchored: bool,
    ) -> Result<Option<(usize, usize)>, LimitExceeded> {
        if span.start > span.end || span.end > hay.len() {
            return Ok(None);
        }
        match &self.regex {
            Engine::Linear(r) => {
                let input = Input::new(hay).span(span).anchored(if anchored {
                    Anchored::Yes
                } else {
                    Anchored::No
                });
                Ok(r.search_with(cache, &input).map(|m| (m.start(), m.end())))
            }
            Engine::Backtrack { regex: r, .. } => {
                let input = fancy_regex::RegexInput::new(hay)
                    .range(span)
                    .anchored(anchored);
                match r.find_input(input) {
                    Ok(m) => Ok(m.map(|m| (m.start(), m.end()))),
                    Err(_) => Err(LimitExceeded),
                }
            }
        }
    }
}

impl Pcre {
    /// Runs the expression anchored at `span.start` (where a search found its match) and hands each capture's
    /// bytes to `f`. `caps` is the worker's reusable capture scratch for this expression (created on first use);
    /// a backtracking expression returns its groups in a vector of `fancy-regex`'s own.
    pub(crate) fn capture(
        &self,
        cache: &mut meta::Cache,
        caps: &mut Option<regex_automata::util::captures::Captures>,
        hay: &[u8],
        span: std::ops::Range<usize>,
        mut f: impl FnMut(&crate::flowvar::Capture, &[u8]),
    ) {
        if self.captures.is_empty() || span.start > span.end || span.end > hay.len() {
            return;
        }
        match &self.regex {
            Engine::Linear(r) => {
                let caps = caps.get_or_insert_with(|| r.create_captures());
                let input = Input::new(hay).span(span).anchored(Anchored::Yes);
                r.search_captures_with(cache, &input, caps);
                for c in &self.captures {
                    if let Some(s) = caps.get_group(c.group) {
                        f(c, hay.get(s.range()).unwrap_or(&[]));
                    }
                }
            }
            Engine::Backtrack { regex: r, .. } => {
                let input = fancy_regex::RegexInput::new(hay).range(span).anchored(true);
                if let Ok(Some(m)) = r.captures_input(input) {
                    for c in &self.captures {
                        if let Some(g) = m.get(c.group) {
                            f(c, hay.get(g.start()..g.end()).unwrap_or(&[]));
                        }
                    }
                }
            }
        }
    }
}

/// The empty expression, compiled once (every [`Pcre`] holds a clone: see [`Engine::Backtrack`]).
fn empty_regex() -> Result<meta::Regex, PcreError> {
    static EMPTY: std::sync::OnceLock<Result<meta::Regex, String>> = std::sync::OnceLock::new();
    EMPTY
        .get_or_init(|| meta::Regex::new("").map_err(|e| e.to_string()))
        .clone()
        .map_err(PcreError::Invalid)
}

/// The name of each capture group of `hir`, by group index (`names` holds one entry per group, the whole match's
/// first).
fn group_names(hir: &regex_syntax::hir::Hir, names: &mut [Option<String>]) {
    use regex_syntax::hir::HirKind;
    match hir.kind() {
        HirKind::Capture(c) => {
            if let Some(slot) = names.get_mut(c.index as usize) {
                *slot = c.name.as_deref().map(str::to_string);
            }
            group_names(&c.sub, names);
        }
        HirKind::Repetition(r) => group_names(&r.sub, names),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => {
            for sub in subs {
                group_names(sub, names);
            }
        }
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => {}
    }
}

/// The captures an expression names: its groups named `flow_*`, `pkt_*`, `alert_*` (by `names`, the group names by
/// index), then the list after the flags, whose n-th entry names group n. Staging slots are numbered later, by the
/// rule parser.
fn captures(
    names: &[Option<String>],
    list: Option<&str>,
) -> Result<Vec<crate::flowvar::Capture>, PcreError> {
    use crate::flowvar::{
        Capture, MAX_CAPTURES, check_name, named_group_scope, parse_capture_list,
    };
    let mut out = Vec::new();
    for (group, name) in names.iter().enumerate() {
        if let Some((scope, var)) = name.as_deref().and_then(named_group_scope) {
            check_name(var).map_err(|e| PcreError::Invalid(format!("pcre: {e}")))?;
            out.push(Capture {
                group,
                scope,
                name: var.to_string(),
                op: 0,
            });
        }
    }
    if let Some(list) = list {
        let listed = parse_capture_list(list).map_err(PcreError::Invalid)?;
        // `pkt:key, pkt:value`: a packet variable named by what the first group captured (Suricata's key/value
        // captures), not built. Only the packet scope has them: `flow:key` is a flow variable named `key`, as
        // Suricata's pcre setup reads it.
        if listed
            .iter()
            .any(|(s, n)| *s == crate::flowvar::VarScope::Packet && (n == "key" || n == "value"))
        {
            return Err(PcreError::Unsupported(
                "pcre: key/value capture (a variable named by the data)".into(),
            ));
        }
        for (i, (scope, name)) in listed.into_iter().enumerate() {
            let group = i + 1;
            if group >= names.len() {
                return Err(PcreError::Invalid(format!(
                    "pcre: capture `{name}` names group {group}, the expression has {}",
                    names.len().saturating_sub(1)
                )));
            }
            out.push(Capture {
                group,
                scope,
                name,
                op: 0,
            });
        }
    }
    if out.len() > MAX_CAPTURES {
        return Err(PcreError::Invalid(format!(
            "pcre: more than {MAX_CAPTURES} captures"
        )));
    }
    Ok(out)
}

/// Empty matches may fall anywhere in the bytes, not only on UTF-8 boundaries: PCRE runs over packet bytes, and with
/// regex-automata's default (`utf8_empty` on) over a haystack that is not UTF-8, its forward and reverse searches
/// disagree and it panics ("reverse search must match if forward search does": `.x|.|` on `/\x9c\x8c`, found by
/// the `rules_keywords` fuzz target).
const BYTES_UTF8_EMPTY: bool = false;

/// Keeps the first line of a regex-syntax error and drops the pattern echo.
fn short_syntax_error(e: &str) -> String {
    let last = e
        .lines()
        .rev()
        .find(|l| l.starts_with("error:"))
        .unwrap_or("unsupported syntax");
    last.trim_start_matches("error:").trim().to_string()
}

/// Undoes the rule-level escapes inside the quoted value (`\"`, `\;`), leaving PCRE's own escapes alone.
pub(crate) fn unescape_rule_level(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some(n @ ('"' | ';')) => out.push(n),
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

fn unsupported(what: &str) -> PcreError {
    PcreError::Unsupported(format!("pcre: {what}"))
}

/// Rewrites PCRE spellings into regex-syntax ones, refusing what has no equivalent (see the module docs).
fn translate(expr: &str, backtracking: bool) -> Result<String, PcreError> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = String::with_capacity(expr.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    let mut prev_quant = false;
    let mut prev_class_escape = false;
    let at = |k: usize| chars.get(k).copied();
    while let Some(c) = at(i) {
        let mut quant = false;
        let mut class_escape = false;
        if c == '\\' {
            let Some(n) = at(i + 1) else {
                return Err(PcreError::Invalid("pcre ends with a lone backslash".into()));
            };
            i += 2;
            match n {
                '1'..='9' if !in_class && !backtracking => {
                    return Err(unsupported("backreference"));
                }
                'g' if !in_class && backtracking => {
                    // PCRE's `\gN`, `\g{N}` and `\g{name}`: the backtracking engine's `\N` (grouped, so a digit
                    // after it is not read as part of the number) and `\k<name>`. A relative `\g{-N}` is refused.
                    let braced = at(i) == Some('{');
                    let start = i + usize::from(braced);
                    let mut end = start;
                    while at(end).is_some_and(|c| {
                        c.is_ascii_digit() || (braced && (c.is_ascii_alphabetic() || c == '_'))
                    }) {
                        end += 1;
                    }
                    let name: String = chars.get(start..end).unwrap_or(&[]).iter().collect();
                    if name.is_empty() || (braced && at(end) != Some('}')) {
                        return Err(unsupported("escape \\g"));
                    }
                    if name.bytes().all(|b| b.is_ascii_digit()) {
                        out.push_str(&format!("(?:\\{name})"));
                    } else if braced {
                        out.push_str(&format!("\\k<{name}>"));
                    } else {
                        return Err(unsupported("escape \\g"));
                    }
                    i = end + usize::from(braced);
                }
                '1'..='9' | 'k' | 'K' if !in_class && backtracking => {
                    out.push('\\');
                    out.push(n);
                }
                'x' if at(i) != Some('{') => {
                    // PCRE reads up to two hex digits after `\x` (none: a NUL byte); the regex engines want two.
                    let mut v = 0u32;
                    for _ in 0..2 {
                        match at(i).and_then(|c| c.to_digit(16)) {
                            Some(d) => {
                                v = v * 16 + d;
                                i += 1;
                            }
                            None => break,
                        }
                    }
                    out.push_str(&format!("\\x{v:02X}"));
                }
                'Q' => {
                    // \Q...\E: everything up to \E (or the end) is literal.
                    while let Some(q) = at(i) {
                        if q == '\\' && at(i + 1) == Some('E') {
                            i += 2;
                            break;
                        }
                        out.push_str(&regex_syntax::escape(&q.to_string()));
                        i += 1;
                    }
                    prev_quant = false;
                    continue;
                }
                'E' => {}
                'e' => out.push_str("\\x1B"),
                'Z' => out.push_str("\\z"),
                'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                    out.push('\\');
                    out.push(n);
                    class_escape = true;
                }
                'b' | 'B' | 'A' | 'z' | 'n' | 'r' | 't' | 'f' | 'a' | 'x' | '0'..='9' => {
                    out.push('\\');
                    out.push(n);
                }
                c2 if c2.is_ascii_alphanumeric() => {
                    return Err(unsupported(&format!("escape \\{c2}")));
                }
                c2 => out.push_str(&regex_syntax::escape(&c2.to_string())),
            }
            prev_quant = false;
            prev_class_escape = class_escape;
            continue;
        }
        if in_class {
            match c {
                // The first position's `]` was consumed as a literal when the class opened.
                ']' => {
                    in_class = false;
                    out.push(']');
                }
                '[' if at(i + 1) == Some(':') => {
                    // POSIX class [:alpha:] inside a bracket expression: copy through its closing ":]".
                    let mut j = i;
                    while let Some(k) = at(j) {
                        out.push(k);
                        j += 1;
                        if k == ']' && j > i + 2 {
                            break;
                        }
                    }
                    i = j;
                    prev_class_escape = false;
                    continue;
                }
                '[' | '&' | '~' => out.push_str(&regex_syntax::escape(&c.to_string())),
                '-' => {
                    let next_is_class_escape = at(i + 1) == Some('\\')
                        && matches!(at(i + 2), Some('d' | 'D' | 'w' | 'W' | 's' | 'S'));
                    if prev_class_escape || next_is_class_escape || at(i + 1) == Some(']') {
                        out.push_str("\\-");
                    } else {
                        out.push('-');
                    }
                }
                _ => out.push(c),
            }
            i += 1;
            prev_class_escape = false;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                out.push('[');
                i += 1;
                if at(i) == Some('^') {
                    out.push('^');
                    i += 1;
                }
                // A `]` right after `[` or `[^` is a literal.
                if at(i) == Some(']') {
                    out.push_str("\\]");
                    i += 1;
                }
                prev_quant = false;
                continue;
            }
            '(' if at(i + 1) == Some('?') => {
                // The backtracking engine runs these as written.
                let group = match (at(i + 2), at(i + 3)) {
                    (Some('=' | '!' | '>' | '('), _) => 3,
                    (Some('<'), Some('=' | '!')) | (Some('P'), Some('=')) => 4,
                    _ => 0,
                };
                if backtracking && group > 0 {
                    for k in i..i + group {
                        if let Some(ch) = at(k) {
                            out.push(ch);
                        }
                    }
                    i += group;
                    prev_quant = false;
                    prev_class_escape = false;
                    continue;
                }
                match (at(i + 2), at(i + 3)) {
                    (Some('=' | '!'), _) | (Some('<'), Some('=' | '!')) => {
                        return Err(unsupported("look-around"));
                    }
                    (Some('>'), _) => return Err(unsupported("atomic group")),
                    (Some('P'), Some('=')) => return Err(unsupported("backreference")),
                    (Some('|'), _) => return Err(unsupported("branch reset")),
                    (Some('('), _) => return Err(unsupported("conditional")),
                    (Some('R' | '&' | '+' | '0'..='9'), _) | (Some('P'), Some('>')) => {
                        return Err(unsupported("recursion"));
                    }
                    (Some('C'), _) => return Err(unsupported("callout")),
                    (Some('#'), _) => {
                        // (?# comment )
                        while let Some(k) = at(i) {
                            i += 1;
                            if k == ')' {
                                break;
                            }
                        }
                        continue;
                    }
                    _ => out.push('('),
                }
            }
            '+' if prev_quant && !backtracking => return Err(unsupported("possessive quantifier")),
            '+' if prev_quant => out.push('+'),
            '*' | '+' | '?' => {
                out.push(c);
                quant = c != '?' || !prev_quant;
                // `x??` and `x+?` are lazy forms: the `?` is part of the quantifier, not a new one.
                if c == '?' && prev_quant {
                    quant = false;
                }
            }
            '{' => {
                // A counted quantifier is {n}, {n,} or {n,m}; anything else is a literal brace in PCRE.
                let mut j = i + 1;
                let mut digits = 0;
                while at(j).is_some_and(|d| d.is_ascii_digit()) {
                    j += 1;
                    digits += 1;
                }
                let mut ok = digits > 0;
                if ok && at(j) == Some(',') {
                    j += 1;
                    while at(j).is_some_and(|d| d.is_ascii_digit()) {
                        j += 1;
                    }
                }
                ok = ok && at(j) == Some('}');
                if ok {
                    for k in i..=j {
                        if let Some(ch) = at(k) {
                            out.push(ch);
                        }
                    }
                    i = j + 1;
                    prev_quant = true;
                    prev_class_escape = false;
                    continue;
                }
                out.push_str("\\{");
            }
            '}' => out.push_str("\\}"),
            _ => out.push(c),
        }
        prev_quant = quant;
        prev_class_escape = false;
        i += 1;
    }
    if in_class {
        return Err(PcreError::Invalid(
            "pcre has an unterminated character class".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An expression that can match empty, searched over bytes that are not UTF-8 from inside a span, neither
    /// panics nor misses (regex-automata's UTF-8 empty-match handling disagreed between its forward and reverse
    /// searches here).
    #[test]
    fn empty_alternatives_over_bytes_that_are_not_utf8() {
        let p = Pcre::parse(r#""/.x|.|/""#).unwrap();
        let hay = b"/\x9c\x8c";
        for s in 0..=hay.len() {
            for e in s..=hay.len() {
                assert!(
                    p.find(&mut p.create_cache(), hay, s..e, false).is_some(),
                    "{s}..{e}"
                );
            }
        }
    }

    fn m(p: &Pcre, hay: &[u8]) -> Option<(usize, usize)> {
        let mut c = p.create_cache();
        p.find(&mut c, hay, 0..hay.len(), p.anchored)
    }

    #[test]
    fn flags_and_matching() {
        let p = Pcre::parse(r#""/^USER\s+w0rm/ims""#).unwrap();
        assert_eq!(m(&p, b"xx\r\nuser   W0RM\r\n"), Some((4, 15)));
        assert!(!p.end_sensitive && !p.relative && !p.negated);
        let p = Pcre::parse(r#"!"/a.b/sR""#).unwrap();
        assert!(p.negated && p.relative);
        assert!(m(&p, b"a\nb").is_some());
        let p = Pcre::parse(r#""/\/cgi-bin\/[^\/]+\.cgi$/U""#).unwrap();
        assert_eq!(p.buffer, Some(PcreBuffer::Uri));
        assert!(p.end_sensitive);
        assert!(m(&p, b"/cgi-bin/x.cgi").is_some() && m(&p, b"/cgi-bin/x.cgi?").is_none());
        let p = Pcre::parse(r#""/\xff\x00{2}/""#).unwrap();
        assert_eq!(m(&p, b"a\xff\x00\x00"), Some((1, 4)));
    }

    /// Suricata reads the value with or without its quotes; a quote opened and not closed is an error.
    #[test]
    fn quotes_are_optional() {
        let p = Pcre::parse(r"/\.\/a/I").unwrap();
        assert_eq!(p.buffer, Some(PcreBuffer::RawUri));
        assert!(m(&p, b"x./a").is_some() && m(&p, b"x/a").is_none());
        let p = Pcre::parse(r"!/abc/i").unwrap();
        assert!(p.negated && m(&p, b"ABC").is_some());
        assert!(matches!(
            Pcre::parse(r#""/abc/"#),
            Err(PcreError::Invalid(_))
        ));
    }

    #[test]
    fn pcre_spellings_rewritten() {
        for (pat, hay, want) in [
            (r#""/a{b/""#, &b"xa{b"[..], true),
            (r#""/[\w-.]+@/""#, b"a-b.c@", true),
            (r#""/\Qa.b\E/""#, b"a.b", true),
            (r#""/\Qa.b\E/""#, b"axb", false),
            (r#""/x\<y\>/""#, b"x<y>", true),
            (r#""/a(?#comment)b/""#, b"ab", true),
            (r#""/[]a]+/""#, b"]]a", true),
            (r#""/[[:digit:]]{3}/""#, b"123", true),
            (r#""/^GET[^s]{4}/ms""#, b"GET abcd", true),
            (r#""/[^>]*x/""#, b"aax", true),
            (r#""/a\"b\;c/""#, b"a\"b;c", true),
        ] {
            let p = Pcre::parse(pat).unwrap_or_else(|e| panic!("{pat}: {e:?}"));
            assert_eq!(m(&p, hay).is_some(), want, "{pat}");
        }
    }

    #[test]
    fn backtracking_features_run_on_the_fallback_engine() {
        for (pat, hay, want) in [
            // Back-references, numbered and named.
            (r#""/(a|b)x\1/""#, &b"bxb"[..], Some((0, 3))),
            (r#""/(a|b)x\1/""#, b"axb", None),
            (r#""/(?P<q>[\x22\x27])v(?P=q)/""#, b"='v'", Some((1, 4))),
            // Look-ahead and look-behind, on bytes that are not UTF-8.
            (r#""/\xff(?=\x80)/""#, b"\xff\x81\xff\x80", Some((2, 3))),
            (r#""/(?<!a)b/""#, b"abcb", Some((3, 4))),
            (r#""/(?!ab)a./""#, b"abac", Some((2, 4))),
            // Atomic groups and possessive quantifiers give up no characters.
            (r#""/(?>a+)b/""#, b"aab", Some((0, 3))),
            (r#""/a++a/""#, b"aaaa", None),
            (r#""/\d++x/i""#, b"12X", Some((0, 3))),
            // Flags keep their meaning; `.` matches any byte, `\w` ASCII only.
            (r#""/^(a).\1$/smi""#, b"A\xe9a", Some((0, 3))),
            (r#""/(\w)\1/""#, b"\xe9\xe9zz", Some((2, 4))),
        ] {
            let p = Pcre::parse(pat).unwrap_or_else(|e| panic!("{pat}: {e:?}"));
            assert!(p.backtracks(), "{pat}");
            assert_eq!(m(&p, hay), want, "{pat}");
        }
        // An expression without those features stays on the linear-time engine.
        assert!(!Pcre::parse(r#""/(a|b)x/""#).unwrap().backtracks());
        // Relative search with the preceding bytes as context, and anchoring.
        let p = Pcre::parse(r#""/(?<=x)(y)\1/A""#).unwrap();
        let mut c = p.create_cache();
        assert_eq!(p.find(&mut c, b"xyy", 1..3, true), Some((1, 3)));
        assert_eq!(p.find(&mut c, b"zyy", 1..3, true), None);
        // Catastrophic backtracking stops at the limit and is reported as such.
        let p = Pcre::parse(r#""/^(?:(a)\1?|a)+(?=b)$/""#).unwrap();
        let hay = [b'a'; 64];
        assert_eq!(
            p.search(&mut p.create_cache(), &hay, 0..hay.len(), false),
            Err(LimitExceeded)
        );
    }

    #[test]
    fn g_references_and_short_hex_escapes() {
        let m = |pat: &str, hay: &[u8]| m(&Pcre::parse(pat).unwrap(), hay).is_some();
        // `\g{1}`, `\g1`, `\g{name}` are back-references (ET sid 2021178 uses `\g{1}` before `\x30`).
        assert!(m(r#""/(ab)\g{1}\x30/""#, b"xabab0"));
        assert!(!m(r#""/(ab)\g{1}\x30/""#, b"xabac0"));
        assert!(m(r#""/(a)\g1/""#, b"aa"));
        assert!(m(r#""/(?P<v>b+)-\g{v}/""#, b"bb-bb"));
        assert!(Pcre::parse(r#""/(a)\g{-1}/""#).is_err());
        // PCRE's `\x` takes one or two hex digits (ET sid 2025916: `[\x22\x2]`), none being NUL.
        assert!(m(r#""/[\x22\x2]/""#, b"\x02") && m(r#""/[\x22\x2]/""#, b"\""));
        assert!(!m(r#""/[\x22\x2]/""#, b"2"));
        assert!(m(r#""/a\xq/""#, b"a\x00q"));
        assert!(m(r#""/\x{41}\x4/""#, b"A\x04"));
    }

    #[test]
    fn unsupported_reasons() {
        for (pat, why) in [
            (r#""/(a)\1/G""#, "pcre: backreference with flag G"),
            (r#""/\h/""#, "pcre: escape \\h"),
            (r#""/a/L""#, "pcre flag L"),
            (r#""/(?R)/""#, "pcre: recursion"),
        ] {
            assert_eq!(
                Pcre::parse(pat).unwrap_err(),
                PcreError::Unsupported(why.into()),
                "{pat}"
            );
        }
        assert!(matches!(
            Pcre::parse(r#""abc""#),
            Err(PcreError::Invalid(_))
        ));
        assert!(matches!(
            Pcre::parse(r#""/abc""#),
            Err(PcreError::Unsupported(_) | PcreError::Invalid(_))
        ));
        assert!(matches!(Pcre::parse("abc"), Err(PcreError::Invalid(_))));
        // A huge program is refused, not built.
        assert!(matches!(
            Pcre::parse(r#""/(a{1000}){1000}/""#),
            Err(PcreError::Unsupported(_))
        ));
    }

    #[test]
    fn lookbehind_context_respected() {
        let p = Pcre::parse(r#""/\bfoo/""#).unwrap();
        let mut c = p.create_cache();
        // "xfoo": searching from index 1 with the preceding "x" as context finds no word boundary.
        assert_eq!(p.find(&mut c, b"xfoo", 1..4, false), None);
        assert_eq!(p.find(&mut c, b" foo", 1..4, false), Some((1, 4)));
        let p = Pcre::parse(r#""/^foo/""#).unwrap();
        assert_eq!(p.find(&mut c_for(&p), b"xfoo", 1..4, false), None);
    }

    fn c_for(p: &Pcre) -> meta::Cache {
        p.create_cache()
    }
}
