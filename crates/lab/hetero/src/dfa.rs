//! Aho-Corasick as one dense DFA table: the `dpi` kernel's automaton, shared bit for bit by the CPU and OpenCL.
//!
//! # What it computes
//! For a packet payload and a pattern set (ids are the 0-based order in which patterns were given, duplicates keep
//! their own ids), the kernel reports a [`DpiResult`]:
//!
//! * `count`: the number of occurrences, i.e. of distinct (pattern id, end offset) pairs, overlapping occurrences
//!   included (the classic Aho-Corasick "report every match" semantics);
//! * `first`: the id of the *first* occurrence, defined as the one that **ends earliest** in the payload, ties (several
//!   patterns ending at the same byte) broken by the **smallest pattern id**; [`NO_MATCH`] when `count == 0`.
//!
//! Both are pure functions of the bytes, so any device that walks the same table agrees with the CPU exactly.
//!
//! # Why a dense DFA
//! The Pythia paper (and Gnort/GASPP before it) runs Aho-Corasick on GPUs as a full transition table: one load per
//! input byte, no failure-link loop, no data-dependent branching except on a match, and the same table can be copied
//! verbatim into device memory. The `aho-corasick` crate is faster on a CPU for small sets (prefilters, contiguous
//! NFA), but its automaton cannot be shipped to an OpenCL device, and with 10,000 patterns its prefilters give up
//! anyway. We use it in tests as an independent oracle.
//!
//! Layout choices, each for the inner loop `s = trans[s + class[b]]`:
//! * **byte classes**: bytes that no pattern tells apart share a column (with literal patterns: every byte that
//!   appears in some pattern has its own class, all others share one; a Snort-derived set uses all 256 byte
//!   values, so the 10k set has 256 classes);
//! * **premultiplied state ids**: a state is stored as `index * row`, so the next row is one add away;
//! * **rows of an odd number of cache lines** (272 entries, 1,088 bytes, for 256 classes; see `row_len`): text
//!   uses a few hot columns per row, and with 1 KiB rows every row's hot columns fell into the same few L1/L2 sets.
//!   Padding the rows by one line spread them over all sets: 3.5 → 4.0 Gbit/s per core on real payload;
//! * **outputs in the row**: after the class columns, each row holds the number of patterns the state reports
//!   (own outputs plus those inherited through failure links), the smallest such pattern id, and the state's trie
//!   depth, so a hit costs two loads from a line next to the one just read, whatever the output set's size;
//! * **match states last**: states are renumbered so that every state with a non-empty output set has an id
//!   `>= match_start`. The hot loop tests one comparison per byte, off the dependency chain, and only reads the
//!   outputs on a hit.
//!
//! # The CPU walk ([`Dfa::scan_lanes`], the batch kernel's)
//! One walk is one dependent load per byte: the core waits on the load's latency (an L1 miss on about 40 % of
//! the bytes of real payload with the 10k set: 5,089 states and ~680 KiB of table lines are touched, far more
//! than L1's 48 KiB). The kernel walks **eight packets at once**, so eight loads are in flight, over blocks of
//! [`LANE_BLOCK`] bytes whose classes are looked up first into a small position-major array. Two details carried
//! most of the speed, both found in the generated code: the table loads are unchecked (a verified layout
//! invariant, see `check_layout`, instead of a compare and a register per lane, which spilled lane states to the
//! stack), and the per-position "any lane in a match state?" test ORs flags, because a chain of `max` compiled to
//! data-dependent branches. Figures (one core, thread CPU time, `examples/kernel_speed.rs`): one walk per packet
//! 1.5 Gbit/s, four interleaved walks ([`Dfa::scan4`]) 4.2–4.5, eight walks over class blocks 4.8–5.1.
//!
//! [`Dfa::reorder_by_visits`] renumbers states by the visits of a sample so the hot rows share pages; it changes
//! no result. On real payload it gained 3–7 % when the sample and the scanned payload were disjoint halves of the
//! corpus (15 % when they were the same bytes), so the kernel does not depend on it.
//!
//! Where the time goes, and what was measured and not kept (one core, thread CPU time, `examples/kernel_speed.rs`
//! on 1,500-byte packets of real payload with the 10k set; the figures of record are in `BENCHMARKS.md`):
//! * the walk's working set: real payload touches 5,089 states and about 10,900 distinct 64-byte table lines
//!   (~680 KiB; half the steps fall in the 143 most visited states, 99 % in 3,302). Byte classes cannot shrink the
//!   rows (the 10k set uses all 256 byte values), and ordering the columns by byte frequency did not reduce the
//!   lines touched (10,898 against 10,877);
//! * the steps that carried the speed, each measured alone: rows of 272 entries instead of 256, 3.6 → 3.9–4.1
//!   Gbit/s; OR-ed match flags instead of a `max` of the states, four walks 4.1 → 4.4–4.5 and eight walks
//!   3.0 → 4.3–4.8 (the `max` chain had compiled to data-dependent branches, which is why eight walks were slower
//!   than four); unchecked table loads over class blocks, 4.8–5.1;
//! * `valgrind --tool=cachegrind --D1=49152,12,64 --LL=2097152,16,64` over the kernel on 1,024 packets twice
//!   (3.07 M bytes): 1.72 M D1 read misses (0.56 per byte) and 64 k L2 misses before those steps, 1.20 M (0.39 per
//!   byte) and 51 k after, at 9.3 instructions per byte (7.8 before: the class pre-pass). About 40 % of the steps
//!   still miss L1 and wait some 16 cycles for L2, with eight chains in flight: that bounds the walk now;
//! * not kept: 16 walks (4.9–5.0, within noise of eight and more sensitive to register allocation); branch-free
//!   match accounting (3.7–4.3 against 4.1–4.5 with four walks); the prefiltered scan below (0.35× the kernel).
//!
//! # The CPU's prefilter ([`Dfa::scan_prefiltered`])
//! Walking the table costs one dependent load per byte, and with 10,000 patterns the rows touched by real payload
//! spill out of L1 and L2: the plain walk ran at 0.7–1.5 Gbit/s per core here. Most bytes cannot start an
//! occurrence, though, and every occurrence starts with its pattern's first bytes. When every pattern is at least
//! 4 bytes long, the build also makes
//! * a hashed table of the first 4 bytes of every pattern (128 KiB of flags: "a pattern of 4–7 bytes starts so",
//!   "a pattern of 8 or more bytes starts so"), and a hashed bitmap of the first 8 bytes of the long patterns, so
//!   that "an occurrence may start at `i`" costs a load or two and has no false negatives (the split removes the
//!   common 4-byte prefixes of long patterns, `http`, `Cont`, `appl`, ...: candidates fell from 5.8 % to 3 % of
//!   positions of the real payload corpus);
//! * each state's depth in the trie (stored in the table's rows).
//!
//! The scan jumps from candidate to candidate (four positions per 8-byte load while no 4-gram is flagged) and
//! walks the DFA **from the root** at each candidate `c`. After byte `p` the state's string is the longest suffix
//! of `hay[c..=p]` that some pattern starts with, so any occurrence still in progress began within the last
//! `depth` bytes, and began at a candidate. When no candidate lies there, no occurrence is in progress: the walk
//! stops and resumes from the root at the next candidate. Occurrences starting between candidates do not exist,
//! so the matches reported, in the same order, are exactly those of the full walk: `count` and `first` are
//! bit-identical (tested against [`Dfa::scan`] and the `aho-corasick` oracle).
//!
//! **Measured, it loses** on real payload with the 10k set: 1.7 Gbit/s per core against 4.8–5.1 for the
//! interleaved walks ([`Dfa::scan_lanes`]), thread CPU time, same run (`examples/kernel_speed.rs`). Snort
//! contents are mostly text, the payload is mostly text, so a quarter of the 8-byte words have a flagged 4-gram
//! and the candidate tests and root restarts cost more than the walk they avoid. The batch kernel therefore walks
//! every byte; the prefiltered scan stays, tested, for pattern sets and traffic where candidates are rare (binary
//! signatures over encrypted or compressed payload). The OpenCL kernel keeps the plain walk too.
//!
//! # What it costs
//! `states * row * 4` bytes: 132,539 states for the 10k set, i.e. 144 MB at 272 entries per row (asked for in
//! 2 MiB pages, see `advise_huge_pages`), plus 160 KiB of prefilter tables. Building writes every cell once and
//! checks every class cell once (about 0.1 s in release mode). Scanning real payload touches far more than the
//! states near the root (text follows the many text prefixes of Snort contents deep into the trie), so the walk
//! is bound by load latency on L1 misses: see the speed figures in `BENCHMARKS.md`. The table size is capped ([`DfaLimits`]) so a hostile rule file cannot exhaust memory.

use serde::{Deserialize, Serialize};

/// `first` when a payload matched no pattern.
pub const NO_MATCH: u32 = u32::MAX;

/// Result of the `dpi` kernel for one packet. `repr(C)` because OpenCL writes the same struct (two `uint`s).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DpiResult {
    /// Occurrences: distinct (pattern id, end offset) pairs in the payload.
    pub count: u32,
    /// Id of the occurrence ending earliest, smallest id on ties; [`NO_MATCH`] when `count == 0`.
    pub first: u32,
}

impl DpiResult {
    /// The result of a payload without any match.
    pub const NONE: DpiResult = DpiResult {
        count: 0,
        first: NO_MATCH,
    };
}

/// Caps on what a pattern set may build. Exceeding one is an error, never an allocation failure.
#[derive(Clone, Copy, Debug)]
pub struct DfaLimits {
    /// Most patterns accepted.
    pub max_patterns: usize,
    /// Longest pattern accepted, in bytes (longer ones are skipped and counted).
    pub max_pattern_len: usize,
    /// Largest transition table, in bytes.
    pub max_table_bytes: usize,
}

impl Default for DfaLimits {
    fn default() -> Self {
        Self {
            max_patterns: 1 << 20,
            max_pattern_len: 4096,
            max_table_bytes: 1 << 30,
        }
    }
}

/// Why a pattern set could not become a DFA.
#[derive(Debug, thiserror::Error)]
pub enum DfaError {
    #[error("no usable pattern (empty set, or every pattern empty or too long)")]
    NoPatterns,
    #[error("{0} patterns exceed the cap of {1}")]
    TooManyPatterns(usize, usize),
    #[error("the DFA would need {0} bytes, over the cap of {1}")]
    TableTooLarge(u64, usize),
    #[error("internal error: the built table breaks its layout invariant")]
    Layout,
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// Counters of what loading and building dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DfaBuildStats {
    /// Patterns given.
    pub patterns: usize,
    /// Empty patterns skipped (they would match everywhere).
    pub skipped_empty: usize,
    /// Patterns longer than the cap, skipped.
    pub skipped_long: usize,
    /// DFA states.
    pub states: usize,
    /// Distinct byte classes.
    pub classes: usize,
    /// Entries per state row: the classes plus count, first id and depth, padded (see `Dfa::row_len`).
    pub stride: usize,
    /// Size of the transition table in bytes.
    pub table_bytes: usize,
    /// Whether [`Dfa::scan_prefiltered`] has a prefilter (every pattern at least 4 bytes long).
    #[serde(default)]
    pub prefilter: bool,
}

/// The automaton. Immutable once built; share it with `Arc`.
#[derive(Clone)]
pub struct Dfa {
    classes: [u8; 256],
    /// Entries per state row (the premultiplier of state ids).
    row: u32,
    /// Column of a row's output count; the smallest output id follows it, then the state's trie depth.
    out_off: u32,
    trans: Vec<u32>,
    match_start: u32,
    stats: DfaBuildStats,
    /// The CPU's shortcut past bytes where no pattern can start (see [`Dfa::scan_prefiltered`]).
    prefilter: Option<Prefilter>,
}

impl std::fmt::Debug for Dfa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dfa").field("stats", &self.stats).finish()
    }
}

/// Bits of the hashed 4-gram table (128 KiB of flags: fits L2, ~4 % of slots set by the 10k set).
const T4_BITS: u32 = 17;
/// Bits of the hashed 8-gram bitmap (32 KiB).
const T8_BITS: u32 = 18;
/// 4-gram flag: a pattern of 4 to 7 bytes starts with it.
const SHORT: u8 = 1;
/// 4-gram flag: a pattern of 8 bytes or more starts with it (confirm with the 8-gram bitmap).
const LONG: u8 = 2;

#[inline(always)]
fn h4(x: u32) -> usize {
    (x.wrapping_mul(0x9E37_79B1) >> (32 - T4_BITS)) as usize
}

#[inline(always)]
fn h8(x: u64) -> usize {
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - T8_BITS)) as usize
}

/// Where patterns can start: hashed tables of the patterns' first 4 and 8 bytes (no false negatives, a few false
/// positives). The stopping rule of [`Dfa::scan_prefiltered`] also needs each state's trie depth, which the
/// table's rows carry.
#[derive(Clone)]
struct Prefilter {
    t4: Box<[u8]>,
    t8: Box<[u64]>,
}

impl Prefilter {
    /// `None` when some pattern is shorter than 4 bytes (the 4-gram test would miss its occurrences).
    fn build(patterns: &[&[u8]]) -> Option<Prefilter> {
        if patterns.is_empty() || patterns.iter().any(|p| p.len() < 4) {
            return None;
        }
        let mut t4 = vec![0u8; 1 << T4_BITS].into_boxed_slice();
        let mut t8 = vec![0u64; (1 << T8_BITS) / 64].into_boxed_slice();
        for p in patterns {
            let x = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
            let slot = &mut t4[h4(x)];
            if p.len() < 8 {
                *slot |= SHORT;
            } else {
                *slot |= LONG;
                let y = u64::from_le_bytes([p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]]);
                let h = h8(y);
                t8[h >> 6] |= 1 << (h & 63);
            }
        }
        Some(Prefilter { t4, t8 })
    }

    #[inline(always)]
    fn flag4(&self, x: u32) -> u8 {
        self.t4.get(h4(x)).copied().unwrap_or(0)
    }

    /// Whether any of the 4-grams at `i..i + 4` (four positions, read as one 8-byte word) has a flag.
    #[inline(always)]
    fn any_flag4(&self, hay: &[u8], i: usize) -> bool {
        let Some(w) = hay.get(i..i + 8) else {
            return true;
        };
        let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        (self.flag4(x as u32)
            | self.flag4((x >> 8) as u32)
            | self.flag4((x >> 16) as u32)
            | self.flag4((x >> 24) as u32))
            != 0
    }

    /// Whether an occurrence may start at `i`: its 4-gram starts a short pattern, or its 8-gram a long one.
    #[inline(always)]
    fn candidate(&self, hay: &[u8], i: usize) -> bool {
        let Some(w) = hay.get(i..i + 4) else {
            return false;
        };
        let f = self.flag4(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        if f & SHORT != 0 {
            return true;
        }
        if f & LONG == 0 {
            return false;
        }
        let Some(w) = hay.get(i..i + 8) else {
            return false;
        };
        let h = h8(u64::from_le_bytes([
            w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7],
        ]));
        self.t8
            .get(h >> 6)
            .is_some_and(|b| (b >> (h & 63)) & 1 != 0)
    }
}

/// Bytes per lane that [`Dfa::scan_lanes`] maps to classes before walking them (the class block of 8 lanes is
/// 512 bytes: L1-resident).
pub const LANE_BLOCK: usize = 64;

/// Entries per state row for `nclasses` byte classes plus the three per-state words (output count, first output
/// id, depth). Small rows stay tight (several states share a cache line). Large rows are padded to a whole, **odd**
/// number of 64-byte lines: a walk over text uses a few hot columns per row, and with a power-of-two row (1 KiB at
/// 256 classes) every row's hot columns land in the same few cache sets, so the L1 and L2 held only a fraction of
/// the hot cells; an odd line count rotates successive rows through all sets.
fn row_len(nclasses: usize) -> usize {
    let need = nclasses + 3;
    if need <= 16 {
        return need;
    }
    let lines = need.div_ceil(16);
    (lines | 1) * 16
}

/// Asks the kernel to back the transition table with 2 MiB pages (Linux, transparent huge pages in `madvise` mode,
/// the usual default). The table of the 10k set is ~135 MB and a walk over real payload hops between rows spread
/// over all of it, so on 4 KiB pages nearly every step that leaves the few hottest rows also misses the TLB. Called
/// before the table is first written, so the pages are faulted in huge. Advisory only: when the kernel refuses
/// (THP `never`, no memory to compact) nothing changes but the speed.
fn advise_huge_pages(table: &mut [u32]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = table.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(table);
        let (a, b) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if b > a {
            // SAFETY: `a..b` lies inside `table`'s allocation, which this function borrows mutably; MADV_HUGEPAGE
            // changes how the kernel backs those pages, never their contents or their validity.
            unsafe {
                libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = table;
}

/// Parses a hex pattern file (one pattern per line, `#` comments and blank lines ignored) with the rules crate's
/// reader ([`flowbundle_rules::text::hex_patterns`]). Returns the patterns and the number of malformed lines skipped.
pub fn parse_hex_patterns(text: &str) -> (Vec<Vec<u8>>, usize) {
    let mut out = Vec::new();
    let mut bad = 0;
    for (_, pattern) in flowbundle_rules::text::hex_patterns(text.as_bytes()) {
        match pattern {
            Ok(p) => out.push(p),
            Err(_) => bad += 1,
        }
    }
    (out, bad)
}

/// Extracts the `content:` strings of a Snort/Suricata rule file, in file order, with the rules crate's readers
/// (logical lines, option splitting, quoting, `|hex|` runs and escapes: [`flowbundle_rules::text`]). This is only
/// the literal list the `dpi` kernel searches for; the rule semantics (modifiers, pcre, flow state) belong to
/// `flowbundle-rules`. Malformed rules and contents are skipped and counted.
pub fn parse_rule_contents(text: &str) -> (Vec<Vec<u8>>, usize) {
    use flowbundle_rules::text::{Line, Lines, content_bytes, quoted, split_rule};
    let mut out = Vec::new();
    let mut bad = 0;
    for line in Lines::new(text.as_bytes()) {
        let text = match line {
            Line::Text { text, .. } => text,
            Line::CommentedRule { .. } => continue,
            Line::Error { .. } => {
                bad += 1;
                continue;
            }
        };
        let Ok((_, options)) = split_rule(&text) else {
            bad += 1;
            continue;
        };
        for opt in options.iter().filter(|o| o.name == "content") {
            match quoted(opt.value.unwrap_or("")).and_then(|(_, inner, _)| content_bytes(inner)) {
                Ok(p) => out.push(p),
                Err(_) => bad += 1,
            }
        }
    }
    (out, bad)
}

impl Dfa {
    /// Loads a pattern file: `.hex` files as [`parse_hex_patterns`], anything else as a rule file
    /// ([`parse_rule_contents`]).
    pub fn from_file(path: &std::path::Path, limits: DfaLimits) -> Result<(Dfa, usize), DfaError> {
        let text = std::fs::read_to_string(path).map_err(|source| DfaError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let (pats, bad) = if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("hex"))
        {
            parse_hex_patterns(&text)
        } else {
            parse_rule_contents(&text)
        };
        Ok((Dfa::build(&pats, limits)?, bad))
    }

    /// Builds the DFA for `patterns` (ids = positions in the slice).
    pub fn build<P: AsRef<[u8]>>(patterns: &[P], limits: DfaLimits) -> Result<Dfa, DfaError> {
        if patterns.len() > limits.max_patterns {
            return Err(DfaError::TooManyPatterns(
                patterns.len(),
                limits.max_patterns,
            ));
        }
        let mut stats = DfaBuildStats {
            patterns: patterns.len(),
            ..Default::default()
        };

        // Byte classes: a byte that appears in some pattern gets its own class, all others share class 0.
        let mut used = [false; 256];
        for p in patterns {
            let p = p.as_ref();
            if p.is_empty() || p.len() > limits.max_pattern_len {
                continue;
            }
            for &b in p {
                used[b as usize] = true;
            }
        }
        let mut classes = [0u8; 256];
        let mut nclasses = 0usize;
        let any_unused = used.iter().any(|u| !u);
        if any_unused {
            nclasses = 1;
        }
        for b in 0..256 {
            if used[b] {
                // At most 256 classes, so the value fits a u8 (255 max).
                classes[b] = nclasses as u8;
                nclasses += 1;
            }
        }
        let nclasses = nclasses.max(1);
        let row = row_len(nclasses);

        // 1. Trie over classes. Node 0 is the root; children kept as small sorted vectors except at the root.
        let mut children: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
        let mut own_count: Vec<u32> = vec![0];
        let mut own_first: Vec<u32> = vec![NO_MATCH];
        let mut node_depth: Vec<u32> = vec![0];
        let mut used: Vec<&[u8]> = Vec::new();
        for (id, p) in patterns.iter().enumerate() {
            let p = p.as_ref();
            if p.is_empty() {
                stats.skipped_empty += 1;
                continue;
            }
            if p.len() > limits.max_pattern_len {
                stats.skipped_long += 1;
                continue;
            }
            let mut node = 0usize;
            for &b in p {
                let c = classes[b as usize];
                node = match children[node].binary_search_by_key(&c, |&(k, _)| k) {
                    Ok(i) => children[node][i].1 as usize,
                    Err(i) => {
                        let new = children.len();
                        children[node].insert(i, (c, new as u32));
                        children.push(Vec::new());
                        own_count.push(0);
                        own_first.push(NO_MATCH);
                        node_depth.push(node_depth[node] + 1);
                        new
                    }
                };
            }
            own_count[node] += 1;
            own_first[node] = own_first[node].min(id as u32);
            used.push(p);
        }
        let n = children.len();
        if n == 1 {
            return Err(DfaError::NoPatterns);
        }
        let table_bytes = (n as u64) * (row as u64) * 4;
        if table_bytes > limits.max_table_bytes as u64
            || (n as u64) * (row as u64) >= u64::from(u32::MAX)
        {
            return Err(DfaError::TableTooLarge(table_bytes, limits.max_table_bytes));
        }

        // 2. Failure links and inherited outputs, breadth first (a failure target is always shallower).
        let goto = |children: &[Vec<(u8, u32)>], s: usize, c: u8| -> Option<usize> {
            children[s]
                .binary_search_by_key(&c, |&(k, _)| k)
                .ok()
                .map(|i| children[s][i].1 as usize)
        };
        let mut fail = vec![0u32; n];
        let mut order = Vec::with_capacity(n);
        let mut out_count = own_count;
        let mut out_first = own_first;
        order.push(0usize);
        let mut head = 0;
        while head < order.len() {
            let s = order[head];
            head += 1;
            for &(c, t) in &children[s] {
                let t = t as usize;
                let f = if s == 0 {
                    0
                } else {
                    let mut f = fail[s] as usize;
                    loop {
                        if let Some(g) = goto(&children, f, c) {
                            break g;
                        }
                        if f == 0 {
                            break 0;
                        }
                        f = fail[f] as usize;
                    }
                };
                fail[t] = f as u32;
                out_count[t] = out_count[t].saturating_add(out_count[f]);
                out_first[t] = out_first[t].min(out_first[f]);
                order.push(t);
            }
        }

        // 3. Renumber: non-matching states first (in BFS order, root = 0), matching states after.
        let mut new_id = vec![0u32; n];
        let mut next = 0u32;
        for &s in &order {
            if out_count[s] == 0 {
                new_id[s] = next;
                next += 1;
            }
        }
        let match_index = next;
        for &s in &order {
            if out_count[s] != 0 {
                new_id[s] = next;
                next += 1;
            }
        }

        // 4. Rows in BFS order so that a failure target's row is complete before it is copied: the class columns
        //    (the failure target's, overwritten by the state's own children), then count, first id and depth.
        let out_off = nclasses;
        let mut trans = vec![0u32; n * row];
        advise_huge_pages(&mut trans);
        for &s in &order {
            let base = new_id[s] as usize * row;
            if s != 0 {
                let fbase = new_id[fail[s] as usize] as usize * row;
                trans.copy_within(fbase..fbase + nclasses, base);
            }
            for &(c, t) in &children[s] {
                trans[base + c as usize] = new_id[t as usize] * row as u32;
            }
            trans[base + out_off] = out_count[s];
            trans[base + out_off + 1] = out_first[s];
            trans[base + out_off + 2] = node_depth[s];
        }

        stats.states = n;
        stats.classes = nclasses;
        stats.stride = row;
        stats.table_bytes = trans.len() * 4;
        let prefilter = Prefilter::build(&used);
        stats.prefilter = prefilter.is_some();
        let dfa = Dfa {
            classes,
            row: row as u32,
            out_off: out_off as u32,
            trans,
            match_start: match_index * row as u32,
            stats,
            prefilter,
        };
        if !dfa.check_layout() {
            return Err(DfaError::Layout);
        }
        Ok(dfa)
    }

    /// Renumbers the states so that the ones `sample` visits most come first, in each of the two ranges
    /// (non-matching states from the root, matching states from `match_start`), in order of visits. The automaton
    /// and every scan result stay the same (ids are only names); what changes is which states share pages and
    /// lie close together. Returns the number of distinct states the sample visited.
    pub fn reorder_by_visits(&mut self, sample: &[&[u8]]) -> usize {
        let row = self.row as usize;
        let n = self.trans.len() / row.max(1);
        let mut visits = vec![0u64; n];
        for hay in sample {
            let mut st = 0u32;
            for &b in *hay {
                st = self.step(st, b);
                if let Some(v) = visits.get_mut(st as usize / row) {
                    *v += 1;
                }
            }
        }
        let split = self.match_start as usize / row;
        let mut order: Vec<usize> = (0..n).collect();
        // Root first, then by visits (descending), ties in the old order: a stable, deterministic permutation.
        order[1..split].sort_by_key(|&i| std::cmp::Reverse(visits[i]));
        order[split..].sort_by_key(|&i| std::cmp::Reverse(visits[i]));
        let mut new_of = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            new_of[old] = (new * row) as u32;
        }
        let nc = self.out_off as usize;
        let mut trans = vec![0u32; self.trans.len()];
        advise_huge_pages(&mut trans);
        for (new, &old) in order.iter().enumerate() {
            let (src, dst) = (&self.trans[old * row..old * row + row], new * row);
            for c in 0..row {
                trans[dst + c] = if c < nc {
                    new_of[src[c] as usize / row]
                } else {
                    src[c]
                };
            }
        }
        let old = std::mem::replace(&mut self.trans, trans);
        if !self.check_layout() {
            // Cannot happen (a permutation of valid ids is valid); keep the table that was checked.
            self.trans = old;
            return 0;
        }
        visits.iter().filter(|&&v| v > 0).count()
    }

    /// Verifies the invariant the unchecked loads of [`Dfa::next`] rely on: rows of `row` entries, classes below
    /// `out_off <= row`, every class-column entry the premultiplied id of an existing state. Cheap next to
    /// building (one pass over the table), run on every table handed out.
    fn check_layout(&self) -> bool {
        let row = self.row as usize;
        let nc = self.out_off as usize;
        if row == 0 || nc > row || !self.trans.len().is_multiple_of(row) || self.trans.is_empty() {
            return false;
        }
        let states = self.trans.len() / row;
        // In u32 (every id fits one: `build` checks that): a 32-bit division is cheaper than a 64-bit one, and
        // this runs once per class-column entry (34 M for the 10k set).
        let (row32, states32) = (self.row, u32::try_from(states).unwrap_or(u32::MAX));
        let classes_ok = self.classes.iter().all(|&c| (c as usize) < nc);
        let ms_ok = (self.match_start as usize).is_multiple_of(row)
            && self.match_start as usize <= self.trans.len();
        classes_ok
            && ms_ok
            && self.trans.chunks_exact(row).all(|r| {
                r[..nc]
                    .iter()
                    .all(|&t| t.is_multiple_of(row32) && t / row32 < states32)
            })
    }

    /// What was built and what was dropped.
    pub fn stats(&self) -> DfaBuildStats {
        self.stats
    }

    /// The byte-to-class map (256 entries).
    pub fn classes(&self) -> &[u8; 256] {
        &self.classes
    }

    /// The table, one row of [`Dfa::row_len`] entries per state: `trans[state + class]` is the next premultiplied
    /// state; `trans[state + out_offset()]` the number of patterns the state reports, the entry after it the
    /// smallest of their ids ([`NO_MATCH`] when none), the next one the state's trie depth.
    pub fn transitions(&self) -> &[u32] {
        &self.trans
    }

    /// First premultiplied id of a matching state: `state >= match_start()` exactly when it reports patterns.
    pub fn match_start(&self) -> u32 {
        self.match_start
    }

    /// Entries per row: state ids are `index * row_len()`.
    pub fn row_len(&self) -> u32 {
        self.row
    }

    /// Column of a row's output count (the number of byte classes).
    pub fn out_offset(&self) -> u32 {
        self.out_off
    }

    /// Scans one payload like [`Dfa::scan`], bit for bit, walking the table only near positions where a pattern
    /// can start (see the module docs, *The CPU's prefilter*). Falls back to [`Dfa::scan`] when the pattern set
    /// has a pattern shorter than 4 bytes.
    pub fn scan_prefiltered(&self, hay: &[u8]) -> DpiResult {
        let Some(pf) = &self.prefilter else {
            return self.scan(hay);
        };
        let mut r = DpiResult::NONE;
        let mut i = 0usize;
        // Every pattern is at least 4 bytes long, so no occurrence starts past `len - 4`.
        let Some(last) = hay.len().checked_sub(4) else {
            return r;
        };
        while i <= last {
            // Skip 4 positions at a time while none of them starts a 4-gram any pattern starts with.
            while i + 8 <= hay.len() && !pf.any_flag4(hay, i) {
                i += 4;
            }
            if i > last {
                break;
            }
            if !pf.candidate(hay, i) {
                i += 1;
                continue;
            }
            i = self.window(pf, hay, i, &mut r) + 1;
        }
        r
    }

    /// Walks the DFA from the root at candidate position `c` until no occurrence can be in progress: after byte
    /// `p` the state's string is the longest suffix of `hay[c..=p]` that a pattern starts with, so an occurrence
    /// still running began in `p + 1 - depth ..= p`; when no candidate lies there, stop. Returns the last `p`
    /// walked.
    fn window(&self, pf: &Prefilter, hay: &[u8], c: usize, r: &mut DpiResult) -> usize {
        let mut s = 0u32;
        let mut last_candidate = c;
        let mut p = c;
        loop {
            let Some(&b) = hay.get(p) else {
                return p;
            };
            s = self.step(s, b);
            if s >= self.match_start {
                self.hit(s, r);
            }
            if p > c && pf.candidate(hay, p) {
                last_candidate = p;
            }
            let depth = self.depth(s);
            if (p + 1).saturating_sub(depth) > last_candidate {
                return p;
            }
            p += 1;
        }
    }

    /// Scans one payload. The reference every device is compared with.
    #[inline]
    pub fn scan(&self, hay: &[u8]) -> DpiResult {
        let mut s = 0u32;
        let mut r = DpiResult::NONE;
        for &b in hay {
            s = self.step(s, b);
            if s >= self.match_start {
                self.hit(s, &mut r);
            }
        }
        r
    }

    /// Scans four payloads at once, interleaving their walks. A DFA walk is one dependent load per byte, so a
    /// single walk leaves the core waiting on load latency; four independent walks keep four loads in flight.
    /// Results are identical to four calls of [`Dfa::scan`].
    pub fn scan4(&self, hays: [&[u8]; 4]) -> [DpiResult; 4] {
        let mut r = [DpiResult::NONE; 4];
        let common = hays.iter().map(|h| h.len()).min().unwrap_or(0);
        let cut = |k: usize| hays[k].get(..common).unwrap_or(&[]);
        let mut s = [0u32; 4];
        for (((&b0, &b1), &b2), &b3) in cut(0).iter().zip(cut(1)).zip(cut(2)).zip(cut(3)) {
            s[0] = self.step(s[0], b0);
            s[1] = self.step(s[1], b1);
            s[2] = self.step(s[2], b2);
            s[3] = self.step(s[3], b3);
            // Flags ORed, not a maximum: LLVM turns chains of `max` into data-dependent branches.
            let ms = self.match_start;
            if (s[0] >= ms) | (s[1] >= ms) | (s[2] >= ms) | (s[3] >= ms) {
                for k in 0..4 {
                    if s[k] >= self.match_start {
                        self.hit(s[k], &mut r[k]);
                    }
                }
            }
        }
        for k in 0..4 {
            for &b in hays[k].get(common..).unwrap_or(&[]) {
                s[k] = self.step(s[k], b);
                if s[k] >= self.match_start {
                    self.hit(s[k], &mut r[k]);
                }
            }
        }
        r
    }

    /// Scans eight payloads at once, like [`Dfa::scan4`] with twice the loads in flight. Results are identical to
    /// calls of [`Dfa::scan`]; `out` gets one result per payload.
    pub fn scan8(&self, hays: &[&[u8]; 8], out: &mut [DpiResult; 8]) {
        *out = self.scan_lanes(*hays);
    }

    /// Scans `N` payloads at once, interleaving their walks (one state per lane, in registers for small `N`).
    /// Results are identical to `N` calls of [`Dfa::scan`].
    ///
    /// The lanes advance together over blocks of [`LANE_BLOCK`] bytes. A first pass maps each block's bytes to
    /// their classes into a small array laid out position-major (`cls[j][k]`: byte `j` of lane `k`), so the walk
    /// itself reads one L1-resident array with constant bounds: per lane and byte, one load of the class, the add,
    /// the table load and the running maximum for the match test, with no bounds checks on the payloads.
    #[inline]
    pub fn scan_lanes<const N: usize>(&self, hays: [&[u8]; N]) -> [DpiResult; N] {
        let mut r = [DpiResult::NONE; N];
        let common = hays.iter().map(|h| h.len()).min().unwrap_or(0);
        let mut s = [0u32; N];
        let mut cls = [[0u8; N]; LANE_BLOCK];
        let mut i = 0;
        while i + LANE_BLOCK <= common {
            for (k, hay) in hays.iter().enumerate() {
                let src = hay.get(i..i + LANE_BLOCK).unwrap_or(&[]);
                for (c, &b) in cls.iter_mut().zip(src) {
                    c[k] = self.classes[b as usize];
                }
            }
            for c in &cls {
                let mut any = false;
                for k in 0..N {
                    s[k] = self.next(s[k], c[k]);
                    any |= s[k] >= self.match_start;
                }
                if any {
                    for k in 0..N {
                        if s[k] >= self.match_start {
                            self.hit(s[k], &mut r[k]);
                        }
                    }
                }
            }
            i += LANE_BLOCK;
        }
        for k in 0..N {
            for &b in hays[k].get(i..).unwrap_or(&[]) {
                s[k] = self.step(s[k], b);
                if s[k] >= self.match_start {
                    self.hit(s[k], &mut r[k]);
                }
            }
        }
        r
    }

    /// The transition from premultiplied state `s` on byte class `c`.
    ///
    /// Unchecked: the bounds check cost a compare, a branch and a register per lane and byte, and with eight
    /// lanes the missing register spilled states to the stack (5.2 against 4.5 Gbit/s per core). Callers pass
    /// only the root (0) or ids read from the class columns of the table, and classes from `self.classes`.
    #[inline(always)]
    fn next(&self, s: u32, c: u8) -> u32 {
        debug_assert!((s as usize) + (c as usize) < self.trans.len());
        // SAFETY: `Dfa::build` and `reorder_by_visits` (the only writers of `trans`, `classes`, `row` and
        // `out_off`, all private) guarantee, and `check_layout` verifies before a `Dfa` is returned, that every
        // class-column entry is `index * row` for an index < states, and that every class is < `out_off` <= `row`.
        // So `s + c` is inside row `index`, i.e. < trans.len().
        unsafe { *self.trans.get_unchecked(s as usize + c as usize) }
    }

    #[inline(always)]
    fn step(&self, s: u32, b: u8) -> u32 {
        self.next(s, self.classes[b as usize])
    }

    #[inline(always)]
    fn hit(&self, s: u32, r: &mut DpiResult) {
        let i = s as usize + self.out_off as usize;
        if let (Some(&c), Some(&f)) = (self.trans.get(i), self.trans.get(i + 1)) {
            r.count = r.count.saturating_add(c);
            if r.first == NO_MATCH {
                r.first = f;
            }
        }
    }

    /// Trie depth of state `s`; an unknown state counts as infinitely deep (never stop early: always correct).
    #[inline(always)]
    fn depth(&self, s: u32) -> usize {
        self.trans
            .get(s as usize + self.out_off as usize + 2)
            .map_or(usize::MAX, |&d| d as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::{AhoCorasick, MatchKind};
    use proptest::prelude::*;

    /// Independent oracle: the aho-corasick crate's overlapping search (ids mapped back past skipped empties).
    struct Oracle {
        ac: AhoCorasick,
        ids: Vec<u32>,
    }

    impl Oracle {
        fn new(pats: &[Vec<u8>]) -> Self {
            let usable: Vec<(usize, &Vec<u8>)> = pats
                .iter()
                .enumerate()
                .filter(|(_, p)| !p.is_empty())
                .collect();
            let ac = AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(usable.iter().map(|(_, p)| p.as_slice()))
                .unwrap();
            Self {
                ac,
                ids: usable.iter().map(|(i, _)| *i as u32).collect(),
            }
        }

        fn scan(&self, hay: &[u8]) -> DpiResult {
            let mut r = DpiResult::NONE;
            let mut best: Option<(usize, u32)> = None;
            for m in self.ac.find_overlapping_iter(hay) {
                r.count += 1;
                let key = (m.end(), self.ids[m.pattern().as_usize()]);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
            if let Some((_, id)) = best {
                r.first = id;
            }
            r
        }
    }

    fn oracle(pats: &[Vec<u8>], hay: &[u8]) -> DpiResult {
        Oracle::new(pats).scan(hay)
    }

    #[test]
    fn textbook_example() {
        let pats = vec![
            b"he".to_vec(),
            b"she".to_vec(),
            b"his".to_vec(),
            b"hers".to_vec(),
        ];
        let dfa = Dfa::build(&pats, DfaLimits::default()).unwrap();
        // "ushers": she (ends 4), he (ends 4), hers (ends 6).
        assert_eq!(dfa.scan(b"ushers"), DpiResult { count: 3, first: 0 });
        assert_eq!(dfa.scan(b"xyz"), DpiResult::NONE);
        assert_eq!(dfa.scan(b""), DpiResult::NONE);
        assert_eq!(dfa.scan(b"his"), DpiResult { count: 1, first: 2 });
    }

    #[test]
    fn duplicates_count_twice_and_smallest_id_wins() {
        let pats = vec![b"abc".to_vec(), b"bc".to_vec(), b"abc".to_vec(), Vec::new()];
        let dfa = Dfa::build(&pats, DfaLimits::default()).unwrap();
        assert_eq!(dfa.stats().skipped_empty, 1);
        assert_eq!(dfa.scan(b"zabc"), DpiResult { count: 3, first: 0 });
        assert_eq!(dfa.scan(b"bcabc"), DpiResult { count: 4, first: 1 });
    }

    #[test]
    fn caps_are_errors() {
        let pats = vec![vec![7u8; 64]; 4];
        let lim = DfaLimits {
            max_table_bytes: 100,
            ..Default::default()
        };
        assert!(matches!(
            Dfa::build(&pats, lim),
            Err(DfaError::TableTooLarge(..))
        ));
        let lim = DfaLimits {
            max_patterns: 2,
            ..Default::default()
        };
        assert!(matches!(
            Dfa::build(&pats, lim),
            Err(DfaError::TooManyPatterns(4, 2))
        ));
        assert!(matches!(
            Dfa::build::<Vec<u8>>(&[], DfaLimits::default()),
            Err(DfaError::NoPatterns)
        ));
    }

    #[test]
    fn hex_and_rule_parsing() {
        let (p, bad) = parse_hex_patterns("# c\n41 42\n\nzz\n414\n0aFf\n");
        assert_eq!(p, vec![b"AB".to_vec(), vec![0x0a, 0xff]]);
        assert_eq!(bad, 2);
        let rule = r#"alert tcp any any -> any 80 (msg:"x"; content:"GET|20|/"; content:!"a\"b"; content:"|zz|"; sid:1;)"#;
        let (p, bad) = parse_rule_contents(rule);
        assert_eq!(p, vec![b"GET /".to_vec(), b"a\"b".to_vec()]);
        assert_eq!(bad, 1);
    }

    #[test]
    fn real_10k_set_matches_the_oracle_on_real_payload() {
        let Some(hex) = flowbundle_testsupport::data("rules/content-10k.hex") else {
            return;
        };
        let (pats, _) = parse_hex_patterns(&std::fs::read_to_string(&hex).unwrap());
        let dfa = Dfa::build(&pats, DfaLimits::default()).unwrap();
        let st = dfa.stats();
        assert_eq!(st.patterns, 10_000);
        assert!(st.states > 10_000, "{st:?}");
        let payloads =
            crate::payload::real_payloads(&flowbundle_testsupport::data_root(), 1500, 400);
        assert!(!payloads.is_empty(), "no real payload in the shared data");
        let mut matched = 0;
        let oracle = Oracle::new(&pats);
        assert!(st.prefilter);
        for p in &payloads {
            let r = dfa.scan(p);
            assert_eq!(r, oracle.scan(p));
            assert_eq!(dfa.scan_prefiltered(p), r);
            assert_eq!(
                dfa.scan_prefiltered(&p[..p.len() / 3]),
                dfa.scan(&p[..p.len() / 3])
            );
            matched += usize::from(r.count > 0);
        }
        assert!(matched > 0, "real payload should hit some Snort contents");
        for ch in payloads.chunks_exact(4) {
            let r4 = dfa.scan4([&ch[0], &ch[1], &ch[2], &ch[3][..ch[3].len() / 2]]);
            assert_eq!(r4[0], dfa.scan(&ch[0]));
            assert_eq!(r4[3], dfa.scan(&ch[3][..ch[3].len() / 2]));
        }
        let mut r8 = [DpiResult::NONE; 8];
        for ch in payloads.chunks_exact(8) {
            let h: [&[u8]; 8] = std::array::from_fn(|k| &ch[k][..ch[k].len() * (k + 1) / 8]);
            dfa.scan8(&h, &mut r8);
            for k in 0..8 {
                assert_eq!(r8[k], dfa.scan(h[k]));
            }
            // Equal lengths (the kernel's case: whole class blocks, then a 28-byte tail) and 16 lanes.
            let full: [&[u8]; 8] = std::array::from_fn(|k| &ch[k][..]);
            let r = dfa.scan_lanes(full);
            for k in 0..8 {
                assert_eq!(r[k], dfa.scan(full[k]));
            }
        }
        for ch in payloads.chunks_exact(16) {
            let h: [&[u8]; 16] = std::array::from_fn(|k| &ch[k][k..]);
            let r = dfa.scan_lanes(h);
            for k in 0..16 {
                assert_eq!(r[k], dfa.scan(h[k]));
            }
        }

        // Renumbering by the visits of half the payload changes no result, on either half.
        let mut hot = dfa.clone();
        let half: Vec<&[u8]> = payloads[..payloads.len() / 2]
            .iter()
            .map(|p| &p[..])
            .collect();
        let visited = hot.reorder_by_visits(&half);
        assert!(visited > 100 && visited < st.states, "{visited}");
        assert!(hot.check_layout());
        assert_eq!(hot.match_start(), dfa.match_start());
        for p in &payloads {
            assert_eq!(hot.scan(p), dfa.scan(p));
            assert_eq!(hot.scan_prefiltered(p), dfa.scan(p));
        }
    }

    #[test]
    fn rows_are_padded_to_an_odd_number_of_lines() {
        assert_eq!(row_len(4), 7);
        assert_eq!(row_len(13), 16);
        assert_eq!(row_len(14), 48);
        assert_eq!(row_len(29), 48);
        assert_eq!(row_len(256), 272);
        for n in 14..=256 {
            let r = row_len(n);
            assert!(
                r >= n + 3 && r.is_multiple_of(16) && !(r / 16).is_multiple_of(2),
                "{n}: {r}"
            );
        }
    }

    proptest! {
        #[test]
        fn agrees_with_oracle(
            pats in proptest::collection::vec(proptest::collection::vec(0u8..6, 0..5), 1..12),
            hay in proptest::collection::vec(0u8..7, 0..80),
        ) {
            match Dfa::build(&pats, DfaLimits::default()) {
                Ok(dfa) => {
                    prop_assert_eq!(dfa.scan(&hay), oracle(&pats, &hay));
                    let r4 = dfa.scan4([&hay, &hay[..hay.len() / 2], &[], &hay]);
                    prop_assert_eq!(r4[1], dfa.scan(&hay[..hay.len() / 2]));
                    prop_assert_eq!(r4[3], oracle(&pats, &hay));
                    let h: [&[u8]; 8] = std::array::from_fn(|k| &hay[..hay.len() * k / 7]);
                    let mut r8 = [DpiResult::NONE; 8];
                    dfa.scan8(&h, &mut r8);
                    for k in 0..8 {
                        prop_assert_eq!(r8[k], dfa.scan(h[k]));
                    }
                }
                Err(DfaError::NoPatterns) => prop_assert!(pats.iter().all(|p| p.is_empty())),
                Err(e) => prop_assert!(false, "{e}"),
            }
        }

        /// Interleaved walks over class blocks (several whole blocks, ragged tails) and a renumbered table agree
        /// with the single walk and the oracle.
        #[test]
        fn lanes_and_reordering_are_bit_identical(
            pats in proptest::collection::vec(proptest::collection::vec(0u8..4, 1..6), 1..12),
            hays in proptest::collection::vec(proptest::collection::vec(0u8..5, 0..300), 5),
        ) {
            let mut dfa = Dfa::build(&pats, DfaLimits::default()).unwrap();
            let h: [&[u8]; 5] = std::array::from_fn(|k| &hays[k][..]);
            let want: Vec<DpiResult> = h.iter().map(|x| oracle(&pats, x)).collect();
            prop_assert_eq!(dfa.scan_lanes(h).to_vec(), want.clone());
            let same: [&[u8]; 3] = [h[0], h[0], h[0]];
            prop_assert_eq!(dfa.scan_lanes(same), [want[0]; 3]);
            dfa.reorder_by_visits(&h[1..3]);
            prop_assert!(dfa.check_layout());
            prop_assert_eq!(dfa.scan_lanes(h).to_vec(), want);
        }

        /// The prefiltered scan equals the full walk and the oracle: patterns of 4–11 bytes (short and long kinds
        /// of the filter) over a 3-letter alphabet, so occurrences are dense, overlap, and chain across windows.
        #[test]
        fn prefiltered_scan_is_bit_identical(
            pats in proptest::collection::vec(proptest::collection::vec(0u8..3, 4..12), 1..16),
            hay in proptest::collection::vec(0u8..3, 0..300),
        ) {
            let dfa = Dfa::build(&pats, DfaLimits::default()).unwrap();
            prop_assert!(dfa.stats().prefilter);
            let r = dfa.scan(&hay);
            prop_assert_eq!(dfa.scan_prefiltered(&hay), r);
            prop_assert_eq!(r, oracle(&pats, &hay));
        }

        /// With a pattern shorter than 4 bytes there is no prefilter, and the scan falls back to the full walk.
        #[test]
        fn short_patterns_fall_back(hay in proptest::collection::vec(0u8..3, 0..100)) {
            let pats = vec![vec![0u8, 1], vec![1, 2, 0, 1, 2]];
            let dfa = Dfa::build(&pats, DfaLimits::default()).unwrap();
            prop_assert!(!dfa.stats().prefilter);
            prop_assert_eq!(dfa.scan_prefiltered(&hay), dfa.scan(&hay));
        }

        #[test]
        fn parsers_never_panic(s in ".{0,200}") {
            let _ = parse_hex_patterns(&s);
            let _ = parse_rule_contents(&s);
        }
    }
}
