//! Multi-pattern prefilter: finds every occurrence of every fast pattern, resumable across chunks.
//!
//! ## What it does
//! Given a set of literal patterns (each case-sensitive or ASCII case-insensitive, 1 to [`MAX_PATTERN`] bytes) it
//! reports every `(pattern, end position)` where a pattern occurs, overlapping occurrences included, over data that
//! arrives in chunks. The only state carried between chunks is [`ScanState`] (the last four bytes, 8 bytes in all)
//! plus the caller's tail of recent bytes, which a pattern that straddles the boundary is compared against. No byte
//! is ever scanned twice.
//!
//! ## Why not `aho-corasick`
//! The obvious tool is an Aho-Corasick automaton driven byte by byte with its state saved per flow, and the test
//! suite uses exactly that as the oracle. On the 10,000-pattern `content-10k.hex` set it measured 0.8–0.9 Gbit/s
//! per core (DFA: 136 MB of transition table, a cache miss per byte; contiguous NFA: 3 MB, fail transitions), while
//! the engine goal (10k rules cost less than half of a rule-less inspection) needs several Gbit/s. So this module
//! does what Hyperscan's FDR and Wu-Manber do in spirit: a *hashed q-gram filter* keyed on each pattern's last
//! bytes, then exact comparison of the few candidates.
//!
//! ## How
//! Patterns are split by length into levels keyed on their last bytes: 4..=7 bytes on the last 4, 8 or more on the
//! last 8 (hashed, case-folded: hundreds of patterns end in `.com`, they must not share a bucket), 2..=3 on the last
//! 2, 1 byte on itself. Every position passes two gates before any bucket is read: a bitmap over a hash of the last
//! four bytes, case-folded (64 bits per key from 2^12 to 2^19 bits, so a few per cent of positions pass; 64 KiB with
//! 10k patterns, 16 KiB for ET Open's largest table; see [`crate::gate::Gate`]) and, only if short patterns exist, a direct 65,536-bit table of the last
//! two bytes. A `nocase` pattern is entered under every case variant of its key bytes (at most 16), so the loop
//! never folds case. Behind a gate, each bucket entry carries a *check word* (the pattern's last eight bytes,
//! masked) that decides a pattern of up to eight bytes exactly with one 64-bit comparison, and a second one for
//! the eight bytes before, which decides up to 16 bytes; longer patterns then compare their other bytes. The gate is
//! evaluated 64 positions at a time with AVX2 where the CPU has it ([`crate::gate`]), both gates at once when the
//! set has short patterns; otherwise, per byte, the common path is ten instructions: a multiply that reads the
//! 4-byte window, two shifts, a load, a bit test, a branch and the loop (see `loop_long`).
//!
//! Real rule sets always have a few short patterns (ET Open's table for TCP streams to servers: 14 of 1,491 under
//! four bytes, such as `=` and `GET`), so the two-gate case is the one users run. Evaluated per byte (both gates,
//! about 20 instructions a byte) it was half of all instructions of `flowbundle inspect` with ET Open on the merged
//! nDPI captures; with both gates in the vector block loop the whole run went from 2,498 M to 1,631 M instructions
//! (the same run without rules: 539 M).
//!
//! ## Cost
//! Memory: the gate bitmap (512 bytes to 64 KiB), the level bitmaps (≤ 128 KiB each), one `u32` per bucket, 40 bytes per
//! bucket entry, and the pattern bytes. Per chunk: a short
//! prologue for the first three bytes (the 4-byte window straddles the previous chunk, taken from [`ScanState`]),
//! then the loop above. Candidate verification touches the caller's tail only for occurrences that straddle.
//!
//! ## What was tried, and what bounds the cost
//!
//! Measured on the merged nDPI and PcapPlusPlus trace with `content-10k.hex` (figures and commands in
//! `BENCHMARKS.md`, "Throughput: 10,000 content rules").
//!
//! Tried and dropped: a 4-way unrolled gate loop (one 8-byte load for four positions, bits ORed without branching):
//! about 12.5 instructions per byte with the rechecks behind a set bit, more than the plain loop's 10. A rolling hash
//! does not apply: the 4-byte window is one load and one multiply already. Aho-corasick once more, on the 6.5 MB of
//! PcapPlusPlus streams of the `scan` bench (same 10,000 patterns, overlapping search, no per-flow state, no rules):
//! full DFA (`MatchKind::Standard`, prefilter on, 136 MB of tables) 65 ms (96 MiB/s), default (contiguous NFA) 77 ms
//! (81 MiB/s), in a quieter run (under load average 8.7 the DFA took 135 ms); the prefilter alone 11.0 ms (566
//! MiB/s), and the whole stream rule matching with the 10k set 19.6 ms (318 MiB/s), before the run replay.
//!
//! What bounds it: the goal allows the rules about half of 0.072 s, 0.036 s for 30.8 MB, i.e. 1.2 ns (about 3.5
//! cycles at 3 GHz) per inspected byte for everything. The gate alone is 10 instructions per byte (308 M
//! instructions, three quarters of the whole rule-less run's 408 M; measured 356 M with the run checks), and the hits
//! cost the rest: 392 M, about 355 instructions per true hit (probe, confirm, hit list, fired check or stamp, and the
//! 79,039 alerts), plus cache misses into 10,000-rule tables; at 30 ns per hit the 1.10 M hits alone would take 0.033
//! s. Reaching 1.5 needs both a SIMD filter (Hyperscan's FDR/Teddy class: about one cycle per byte for thousands of
//! literals) and hits that cost next to nothing, e.g. a per-flow-direction mask that stops reporting patterns whose
//! rules have all fired (most hits are the all-zero patterns firing again and again in the same flow). The quiet set
//! (the per-direction list of patterns whose rules all fired, passed to `scan_quiet`) is that mask's cheap form, and
//! it shows the limit: dropping the repeat hits saved about 50 M instructions in `scan_stream` (what they cost after
//! the prefilter, less the quiet checks); the 709 M left are the gate loop (about 350 M) and the probes behind it
//! (`long_candidates` 162 M for 1.1 M gate passes, replays 60 M), paid before a hit is known to be quiet. A mask
//! inside the gate itself would need a per-flow gate bitmap (64 KiB per flow direction: not bounded enough). The SIMD
//! filter is not done; the vector gate ([`crate::gate`]) removes the per-byte branch.
//!
//! Where the gate passes go (instrumented once, not committed): of 1.317 M positions past the gate, 212,644 are
//! replayed inside runs, 100,622 are all-zero windows, 209,105 probe the buckets and find a pattern, and **795,159
//! (60%) probe and find nothing**: the 4-byte key lets through every `.com`, `php?`, `.net`, `tle>` of the traffic
//! (692 patterns end in `.com`). Tried and dropped: a second gate bitmap keyed on the last eight bytes (case-folded)
//! for the patterns of 8 bytes or more, the first one keeping only the 1,807 patterns of 4 to 7 bytes. It removes
//! most empty probes, but the second gather per eight positions costs what they did: the prefilter alone 77.9 ms
//! against 75.3 (slow state), and the whole rules run got slower (0.196–0.200 s against 0.168–0.172 s, fast state);
//! bitmap sizes from 2^17 to 2^21 bits changed nothing.

/// Longest pattern the prefilter takes. Rule compilation uses the last `MAX_PATTERN` bytes of a longer content as
/// its fast pattern and lets the verifier check the whole content, so the per-flow tail stays bounded.
pub const MAX_PATTERN: usize = 255;

use crate::gate::{BLOCK_BYTES, Gate, GateKind, HASH_MUL, SHORT_WORDS, short_bit};

/// Clears bit 5 of every byte: `a`..`z` and `A`..`Z` collapse (the 8-byte level's key only).
const FOLD8: u64 = 0xDFDF_DFDF_DFDF_DFDF;

/// The little-endian keys of `bytes` (1 to 4 of them): just the bytes, or every ASCII case variant of them for a
/// `nocase` pattern. The scan loop then compares keys without folding case per byte.
fn variants(bytes: &[u8], nocase: bool) -> impl Iterator<Item = u32> + Clone {
    let letters: Vec<usize> = if nocase {
        (0..bytes.len())
            .filter(|&i| bytes[i].is_ascii_alphabetic())
            .collect()
    } else {
        Vec::new()
    };
    let base: Vec<u8> = bytes
        .iter()
        .map(u8::to_ascii_lowercase)
        .map(|b| if nocase { b } else { 0 })
        .collect();
    let exact: Vec<u8> = bytes.to_vec();
    (0u32..1 << letters.len()).map(move |m| {
        let mut v = if nocase { base.clone() } else { exact.clone() };
        for (bit, &i) in letters.iter().enumerate() {
            if m & (1 << bit) != 0 {
                v[i] = v[i].to_ascii_uppercase();
            }
        }
        v.iter()
            .enumerate()
            .fold(0u32, |acc, (k, &b)| acc | u32::from(b) << (8 * k))
    })
}

/// Hashes a folded 8-byte window to the 32-bit key the level tables take.
#[inline(always)]
fn key8(w: u64) -> u32 {
    let k = w & FOLD8;
    ((k ^ (k >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
}

/// A pattern in a bucket with its *check words*: the last (up to) eight bytes of the pattern as they sit at the top
/// of the 8-byte window ending where the pattern ends, and a mask that keeps only those bytes, with bit 5 cleared
/// for letters of a `nocase` pattern. `window & mask == value` is then an exact test for a pattern of at most
/// eight bytes (letters compare case-insensitively because both cases differ only in bit 5), and a cheap first
/// test for longer ones. A longer pattern carries a second word for the (up to) eight bytes before those, tested
/// the same way against the 8-byte window before: that decides patterns of up to 16 bytes without a byte-wise
/// comparison, and keeps the byte-wise one (for the rest of a longer pattern) to true hits. It matters because
/// many patterns share their last eight bytes (71 of the 10k set end in `</title>`, 13 in `HTTP/1.1`), and every
/// occurrence of those bytes in traffic tests each of them.
#[derive(Clone, Copy, Debug)]
struct Entry {
    value: u64,
    mask: u64,
    value2: u64,
    mask2: u64,
    pid: u32,
    len: u32,
}

/// The check word of the last (up to) eight bytes of `p`: (value, mask); see [`Entry`].
fn check_word(p: &[u8], nocase: bool) -> (u64, u64) {
    let (mut value, mut mask) = (0u64, 0u64);
    for (k, &b) in p.iter().rev().take(8).enumerate() {
        let m: u8 = if nocase && b.is_ascii_alphabetic() {
            0xDF
        } else {
            0xFF
        };
        let shift = 56 - 8 * k;
        value |= u64::from(b & m) << shift;
        mask |= u64::from(m) << shift;
    }
    (value, mask)
}

impl Entry {
    fn new(pid: u32, p: &[u8], nocase: bool) -> Entry {
        let (value, mask) = check_word(p, nocase);
        let (value2, mask2) = check_word(p.get(..p.len().saturating_sub(8)).unwrap_or(&[]), nocase);
        Entry {
            value,
            mask,
            value2,
            mask2,
            pid,
            len: p.len() as u32,
        }
    }
}

/// One filter level: patterns of a length class, keyed by (a hash of) their last bytes.
#[derive(Clone, Debug)]
struct Level {
    /// Bitmap over the top bits of the hash: a clear bit means "no pattern ends here".
    bits: Box<[u64]>,
    bit_shift: u32,
    /// Bucket index = hash >> bucket_shift; bucket i holds `entries[starts[i]..starts[i + 1]]`.
    bucket_shift: u32,
    starts: Box<[u32]>,
    entries: Box<[Entry]>,
}

impl Level {
    /// `keys` holds (32-bit key or key hash, entry); a pattern listed under several keys (its case variants) is
    /// stored once per bucket.
    fn build(keys: &[(u32, Entry)], bits_per_pattern: usize, max_bits_log2: u32) -> Option<Level> {
        if keys.is_empty() {
            return None;
        }
        let want_bits = (keys.len() * bits_per_pattern)
            .next_power_of_two()
            .max(1 << 10);
        let bits_log2 = want_bits.trailing_zeros().min(max_bits_log2);
        let buckets_log2 = keys
            .len()
            .next_power_of_two()
            .trailing_zeros()
            .clamp(4, bits_log2);
        let bit_shift = 32 - bits_log2;
        let bucket_shift = 32 - buckets_log2;
        let mut bits = vec![0u64; (1usize << bits_log2) / 64].into_boxed_slice();
        for &(key, _) in keys {
            let b = (key.wrapping_mul(HASH_MUL) >> bit_shift) as usize;
            if let Some(w) = bits.get_mut(b / 64) {
                *w |= 1u64 << (b % 64);
            }
        }
        let mut placed: Vec<(usize, Entry)> = keys
            .iter()
            .map(|&(k, e)| ((k.wrapping_mul(HASH_MUL) >> bucket_shift) as usize, e))
            .collect();
        placed.sort_unstable_by_key(|(b, e)| (*b, e.pid));
        placed.dedup_by_key(|(b, e)| (*b, e.pid));
        let nb = 1usize << buckets_log2;
        let mut counts = vec![0u32; nb + 1];
        for &(b, _) in &placed {
            if let Some(c) = counts.get_mut(b + 1) {
                *c += 1;
            }
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let starts = counts.clone().into_boxed_slice();
        let mut fill = counts;
        let empty = Entry {
            value: 0,
            mask: 0,
            value2: 0,
            mask2: 0,
            pid: 0,
            len: 0,
        };
        let mut entries = vec![empty; placed.len()].into_boxed_slice();
        for &(bucket, e) in &placed {
            if let Some(slot) = fill.get_mut(bucket) {
                if let Some(dst) = entries.get_mut(*slot as usize) {
                    *dst = e;
                }
                *slot += 1;
            }
        }
        Some(Level {
            bits,
            bit_shift,
            bucket_shift,
            starts,
            entries,
        })
    }

    /// The candidate bucket for a (masked) key, or `None` when the bitmap rules every pattern out.
    #[inline(always)]
    fn probe(&self, key: u32) -> Option<&[Entry]> {
        let h = key.wrapping_mul(HASH_MUL);
        let b = (h >> self.bit_shift) as usize;
        let word = *self.bits.get(b >> 6)?;
        if word & (1u64 << (b & 63)) == 0 {
            return None;
        }
        self.bucket((h >> self.bucket_shift) as usize)
    }

    #[inline]
    fn bucket(&self, i: usize) -> Option<&[Entry]> {
        let s = *self.starts.get(i)? as usize;
        let e = *self.starts.get(i + 1)? as usize;
        self.entries.get(s..e)
    }

    fn memory(&self) -> usize {
        self.bits.len() * 8
            + self.starts.len() * 4
            + self.entries.len() * std::mem::size_of::<Entry>()
    }
}

/// Per-stream scanning state: the last eight bytes seen and how many of them are real.
///
/// Sixteen bytes, `Copy`, kept per flow and direction; a fresh value starts a new stream (or a new buffer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanState {
    /// The last eight bytes, the newest in the top byte (the little-endian 8-byte window ending at that byte).
    hist: u64,
    /// How many of those bytes belong to the stream (0..=8): keys are never formed from bytes before its start.
    valid: u8,
}

/// Most entries a [`Memo`] holds; a position with more check-word passes is not memoized.
const MEMO_LEN: usize = 8;

/// The bucket entries that passed their check words at the last position the hot loop probed (`at`). Inside a run
/// of one byte value (17 or more equal bytes ending at `j`), the 4-byte key, both 8-byte check windows and so every
/// bucket and check-word result at `j` are those at `j - 1`: the hits are replayed from here instead of probing two
/// levels and walking their buckets again. It matters because runs of NUL bytes are the commonest thing the 10k
/// set matches (the 8- and 12-byte all-zero patterns are about three quarters of its occurrences in the shared
/// captures), each byte of a run being a new overlapping occurrence.
struct Memo<'q> {
    /// Position the entries are for; `usize::MAX` when nothing valid is held.
    at: usize,
    n: usize,
    /// (pattern, length) of each entry that passed.
    entries: [(u32, u32); MEMO_LEN],
    /// The caller's quiet patterns, and the end of the run whose replays are skipped (see [`PatternSet::replay`]).
    quiet: &'q [u32],
    skip_to: usize,
    /// Start of the run being replayed, once [`PatternSet::run_is_silent`] looked for it; `usize::MAX` otherwise
    /// (reset whenever the entries are probed afresh).
    run_start: usize,
}

impl Memo<'_> {
    fn new(quiet: &[u32]) -> Memo<'_> {
        Memo {
            quiet,
            skip_to: 0,
            run_start: usize::MAX,
            at: usize::MAX,
            n: 0,
            entries: [(0, 0); MEMO_LEN],
        }
    }

    fn push(&mut self, pid: u32, len: u32) {
        match self.entries.get_mut(self.n) {
            Some(slot) => {
                *slot = (pid, len);
                self.n += 1;
            }
            None => self.at = usize::MAX,
        }
    }
}

/// End (exclusive) of the run of `data[j]`'s value that contains `j`: the first later index holding another value.
#[cold]
fn run_end(data: &[u8], j: usize) -> usize {
    match data.get(j..) {
        Some(rest) => {
            let b = rest.first().copied().unwrap_or(0);
            j + rest.iter().position(|&x| x != b).unwrap_or(rest.len())
        }
        None => data.len(),
    }
}

/// Whether `data[j - 16..=j]` is one byte value repeated (then the windows ending at `j` and `j - 1` are equal).
#[inline]
fn in_run(data: &[u8], j: usize) -> bool {
    let w = |e: usize| {
        e.checked_sub(7)
            .and_then(|s| data.get(s..=e))
            .and_then(|x| <[u8; 8]>::try_from(x).ok())
            .map(u64::from_le_bytes)
    };
    j >= 17 && w(j).is_some() && w(j) == w(j - 1) && w(j - 8) == w(j - 9)
}

/// Fewest positions left at a buffer's end for which the vector gate runs on a padded copy of the last block rather
/// than the scalar loop taking them one by one (a copy and one block cost about what ten scalar positions do).
const MIN_PADDED: usize = 10;

/// A compiled set of literal patterns; see the module documentation.
#[derive(Clone, Debug)]
pub struct PatternSet {
    /// All pattern bytes back to back; pattern i is `bytes[starts[i]..starts[i + 1]]`.
    bytes: Box<[u8]>,
    starts: Box<[u32]>,
    nocase: Box<[bool]>,
    max_len: usize,
    /// Gate for every pattern of 4 bytes or more, keyed on the last 4 (case-folded): a clear bit skips the position.
    gate: Option<Gate>,
    /// Gate for patterns of 1 to 3 bytes: a direct 65,536-bit table indexed by the last two bytes (every case
    /// variant of a `nocase` key is set).
    short_gate: Option<Box<[u64; SHORT_WORDS]>>,
    /// Patterns of 4..=7 bytes keyed on their last 4, of 8 bytes or more on their last 8 (so that the hundreds of
    /// patterns ending in `.com` or `.php` do not share one bucket), of 2..=3 bytes on their last 2, of 1 byte.
    l4: Option<Level>,
    l8: Option<Level>,
    l2: Option<Level>,
    l1: Option<Level>,
    /// How the gate is evaluated on this CPU (64 positions at a time with AVX2; see [`crate::gate`]).
    gate_kind: GateKind,
    /// What probing both levels yields for an all-zero 8-byte window, precomputed: the entries of the 4-byte
    /// bucket of key 0 and of the 8-byte bucket of 8 zero bytes whose check word is all zero, in probe order.
    /// Windows of eight NUL bytes are where three quarters of the 10k set's occurrences are (the 8- and 12-byte
    /// all-zero patterns over padding and binary headers); they skip the hashing and the dependent loads.
    zero: Box<[Entry]>,
}

impl PatternSet {
    /// Compiles `patterns` (bytes, nocase). Patterns must be 1..=[`MAX_PATTERN`] bytes; longer ones are cut to their
    /// last `MAX_PATTERN` bytes and empty ones never match (rule compilation never passes either).
    /// Pattern ids are the indices into `patterns`.
    pub fn new(patterns: &[(Vec<u8>, bool)]) -> PatternSet {
        let mut bytes = Vec::new();
        let mut starts = Vec::with_capacity(patterns.len() + 1);
        let mut nocase = Vec::with_capacity(patterns.len());
        let (mut kg, mut k8, mut k4, mut k2, mut k1) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut max_len = 0;
        starts.push(0u32);
        for (i, (p, nc)) in patterns.iter().enumerate() {
            let p = &p[p.len().saturating_sub(MAX_PATTERN)..];
            bytes.extend_from_slice(p);
            starts.push(bytes.len() as u32);
            nocase.push(*nc);
            max_len = max_len.max(p.len());
            let e = Entry::new(i as u32, p, *nc);
            let n = p.len();
            match n {
                0 => {}
                1 => k1.extend(variants(p, *nc).map(|v| (v, e))),
                2 | 3 => k2.extend(variants(&p[n - 2..], *nc).map(|v| (v, e))),
                _ => {
                    let last4 = variants(&p[n - 4..], *nc);
                    kg.extend(last4.clone().map(|v| (v, e)));
                    if n >= 8 {
                        let mut last = [0u8; 8];
                        last.copy_from_slice(&p[n - 8..]);
                        k8.push((key8(u64::from_le_bytes(last)), e));
                    } else {
                        k4.extend(last4.map(|v| (v, e)));
                    }
                }
            }
        }
        kg.sort_unstable_by_key(|k| k.0);
        kg.dedup_by_key(|k| k.0);
        let short_gate = (!k1.is_empty() || !k2.is_empty()).then(|| {
            let mut t = Box::new([0u64; SHORT_WORDS]);
            let mut set = |i: usize| {
                if let Some(w) = t.get_mut(i >> 6) {
                    *w |= 1u64 << (i & 63);
                }
            };
            for &(k, _) in &k2 {
                set(k as usize);
            }
            for &(k, _) in &k1 {
                // Any previous byte, this last byte.
                for prev in 0..256usize {
                    set(prev | ((k as usize) << 8));
                }
            }
            t
        });
        PatternSet {
            short_gate,
            bytes: bytes.into_boxed_slice(),
            starts: starts.into_boxed_slice(),
            nocase: nocase.into_boxed_slice(),
            max_len,
            gate: (!kg.is_empty())
                .then(|| Gate::build(&kg.iter().map(|k| k.0).collect::<Vec<_>>())),
            l8: Level::build(&k8, 16, 20),
            l4: Level::build(&k4, 16, 20),
            l2: Level::build(&k2, 8, 16),
            l1: Level::build(&k1, 4, 10),
            gate_kind: GateKind::detect(),
            zero: Box::new([]),
        }
        .with_zero_entries()
    }

    /// Whether the gate is evaluated 64 positions at a time with vector instructions (AVX2 CPUs), and
    /// `false` to force the scalar loop: tests compare both, and `FLOWBUNDLE_GATE=scalar` does the same for a
    /// whole run. Results never depend on it.
    pub fn vector_gate(&self) -> bool {
        self.gate_kind.vector()
    }

    /// Forces the scalar gate loop (`false`) or the CPU's best one (`true`); see [`PatternSet::vector_gate`].
    #[doc(hidden)]
    pub fn set_vector_gate(&mut self, on: bool) {
        self.gate_kind = if on {
            GateKind::detect()
        } else {
            GateKind::Scalar
        };
    }

    /// Fills [`PatternSet::zero`] from the levels' own buckets.
    fn with_zero_entries(mut self) -> PatternSet {
        let mut zero = Vec::new();
        for (level, key) in [(&self.l4, 0u32), (&self.l8, key8(0))] {
            if let Some(bucket) = level.as_ref().and_then(|l| l.probe(key)) {
                zero.extend(bucket.iter().filter(|e| e.value == 0));
            }
        }
        self.zero = zero.into_boxed_slice();
        self
    }

    /// Number of patterns.
    pub fn len(&self) -> usize {
        self.nocase.len()
    }

    /// True when the set has no patterns (scanning then reports nothing).
    pub fn is_empty(&self) -> bool {
        self.nocase.is_empty()
    }

    /// Length of the longest pattern: a caller keeps at least `max_len() - 1` bytes of tail between chunks.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Length of pattern `pid` (0 for an unknown id).
    pub fn pattern_len(&self, pid: u32) -> usize {
        self.pattern(pid).len()
    }

    /// The patterns as compiled (bytes, nocase), in id order: what [`PatternSet::new`] takes to build the same set.
    pub fn patterns(&self) -> Vec<(Vec<u8>, bool)> {
        (0..self.len() as u32)
            .map(|pid| {
                let nc = self.nocase.get(pid as usize).copied().unwrap_or(false);
                (self.pattern(pid).to_vec(), nc)
            })
            .collect()
    }

    /// Bytes of the tables and patterns.
    pub fn memory(&self) -> usize {
        self.bytes.len()
            + self.starts.len() * 4
            + self.nocase.len()
            + self.short_gate.as_ref().map_or(0, |t| t.len() * 8)
            + self.gate.as_ref().map_or(0, Gate::memory)
            + [&self.l8, &self.l4, &self.l2, &self.l1]
                .iter()
                .filter_map(|l| l.as_ref())
                .map(|l| l.memory())
                .sum::<usize>()
    }

    /// Patterns by length class: 1 byte, 2..=3, 4..=7, 8 or more (the levels they are filed in).
    pub fn length_classes(&self) -> [usize; 4] {
        let mut n = [0usize; 4];
        for pid in 0..self.len() as u32 {
            let i = match self.pattern_len(pid) {
                0 | 1 => 0,
                2 | 3 => 1,
                4..=7 => 2,
                _ => 3,
            };
            if let Some(c) = n.get_mut(i) {
                *c += 1;
            }
        }
        n
    }

    /// The patterns shorter than 4 bytes, with their `nocase` flags (what makes a table scan slower per byte).
    pub fn short_patterns(&self) -> Vec<(&[u8], bool)> {
        (0..self.len() as u32)
            .filter(|&pid| self.pattern_len(pid) < 4)
            .map(|pid| {
                (
                    self.pattern(pid),
                    self.nocase.get(pid as usize).copied().unwrap_or(false),
                )
            })
            .collect()
    }

    fn pattern(&self, pid: u32) -> &[u8] {
        let i = pid as usize;
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&s), Some(&e)) => self.bytes.get(s as usize..e as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Scans one buffer on its own (a datagram, an HTTP buffer): every `(pattern, end)` with `end` exclusive.
    pub fn scan_buffer(&self, data: &[u8], on_hit: impl FnMut(u32, usize)) {
        let mut st = ScanState::default();
        self.scan(&mut st, &[], data, on_hit);
    }

    /// Scans `data`, the bytes that follow `tail` in the stream whose state is `st`, and calls `on_hit(pattern, end)`
    /// for every occurrence ending inside `data` (`end` is the exclusive end, an index into `data`). An occurrence
    /// that began before `data` is compared against the end of `tail`, which must hold the stream's preceding bytes
    /// (at least `max_len() - 1` of them, or all there are); it is missed, not misreported, if `tail` is shorter.
    pub fn scan(
        &self,
        st: &mut ScanState,
        tail: &[u8],
        data: &[u8],
        on_hit: impl FnMut(u32, usize),
    ) {
        self.scan_quiet(st, tail, data, &[], on_hit);
    }

    /// [`PatternSet::scan`] for a caller to whom the patterns in `quiet` no longer matter (a flow direction where
    /// every rule of theirs already fired): inside a run of one byte value whose occurrences are all of quiet
    /// patterns (or of none), the rest of the run is skipped instead of replayed byte by byte. Quiet patterns may
    /// still be reported elsewhere (the caller drops them); every other occurrence is reported as by `scan`.
    /// `quiet` is searched linearly: keep it short.
    pub fn scan_quiet(
        &self,
        st: &mut ScanState,
        tail: &[u8],
        data: &[u8],
        quiet: &[u32],
        mut on_hit: impl FnMut(u32, usize),
    ) {
        if data.is_empty() || self.is_empty() {
            st.valid = (usize::from(st.valid) + data.len()).min(8) as u8;
            for &b in data.iter().rev().take(8).rev() {
                st.hist = (st.hist >> 8) | (u64::from(b) << 56);
            }
            return;
        }
        // Prologue: the windows ending at data[0..7] reach back into the previous chunk (held in `hist`).
        let mut hist = st.hist;
        let mut valid = st.valid;
        for (j, &b) in data.iter().enumerate().take(7) {
            hist = (hist >> 8) | (u64::from(b) << 56);
            valid = (valid + 1).min(8);
            self.check_all(hist, valid, j, tail, data, &mut on_hit);
        }
        if data.len() > 7 {
            // From here on the 8-byte window lies entirely in `data` and every byte is real.
            if self.short_gate.is_none() || self.gate_kind.vector() {
                self.loop_long(data, tail, quiet, &mut on_hit);
            } else {
                self.loop_mixed(data, tail, &mut on_hit);
            }
            if let Some(&[a, b, c, d, e, f, g, h]) = data.get(data.len() - 8..) {
                hist = u64::from_le_bytes([a, b, c, d, e, f, g, h]);
            }
            valid = 8;
        }
        st.hist = hist;
        st.valid = valid;
    }

    /// The hot loop when every pattern has at least 4 bytes (the 10k content set): one gate probe per byte on the
    /// last 4 bytes, the buckets only behind the gate. `data` is longer than 7 bytes; starts at index 7.
    ///
    /// On AVX2 CPUs the gate bits of 64 positions are computed at once ([`crate::gate`]) and only the set bits are
    /// visited; a run being skipped (see below) is masked off without visiting its positions. A buffer's last
    /// positions that do not fill a block are gated the same way on a zero-padded copy of the block, their bits past
    /// the data cleared ([`MIN_PADDED`] or more of them: up to 68 positions of every datagram, packet and stream chunk
    /// went through the scalar loop before, 40 M of this loop's 425 M instructions with ET Open on the merged nDPI
    /// trace, see `BENCHMARKS.md`). The last few positions, and every position
    /// on other CPUs, go through the scalar loop: ten instructions per byte (the
    /// multiply reads the 4-byte window from memory, the top 13 bits of the hash pick a word of the fixed-size
    /// bitmap, `bt` tests the bit, one branch, and the loop). An unrolled scalar variant (one 8-byte load serving
    /// four positions, the four bits ORed without branching) counted more instructions (about 12.5 per byte), as
    /// did an earlier loop with a variable shift and a bounds check (14.8); the vector gate is what removed the
    /// per-byte branch.
    ///
    /// Inside a run where nothing can be reported any more (see [`PatternSet::run_is_silent`]) the replay returns
    /// at once.
    #[inline(never)]
    fn loop_long(
        &self,
        data: &[u8],
        tail: &[u8],
        quiet: &[u32],
        on_hit: &mut impl FnMut(u32, usize),
    ) {
        let gate = self.gate.as_ref();
        let short = self.short_gate.as_deref();
        let mut memo = Memo::new(quiet);
        let mut j: usize = 7;
        if self.gate_kind.vector() {
            // The last block of a buffer that does not fill one: its bytes copied here, zeros after them, and the
            // positions past the data masked off.
            let mut padded = [0u8; BLOCK_BYTES];
            // Blocks of 64 positions: the pass bits first, then only the set ones (see `crate::gate`).
            loop {
                let s = j - 3;
                let (block, live) = match data
                    .get(s..s + BLOCK_BYTES)
                    .and_then(|b| <&[u8; BLOCK_BYTES]>::try_from(b).ok())
                {
                    Some(b) => (b, u64::MAX),
                    None => {
                        let left = data.len().saturating_sub(j);
                        let Some(rest) = data.get(s..).filter(|_| left >= MIN_PADDED) else {
                            break;
                        };
                        // `rest` is shorter than a block here.
                        padded.fill(0);
                        if let Some(dst) = padded.get_mut(..rest.len()) {
                            dst.copy_from_slice(rest);
                        }
                        let live = u64::MAX
                            .checked_shr(64u32.saturating_sub(left as u32))
                            .unwrap_or(0);
                        (&padded, if left >= 64 { u64::MAX } else { live })
                    }
                };
                let (m4, m2) = match (gate, short) {
                    (Some(g), None) => (self.gate_kind.mask64(g, block), 0),
                    (g, Some(s)) => self.gate_kind.mask64_pair(g, s, block),
                    (None, None) => return,
                };
                let (mut m4, m2) = (m4 & live, m2 & live);
                // Inside a run being skipped (see `replay`), its positions are not even visited (by the 4-byte
                // gate's patterns; the short ones are never skipped).
                let skip = |to: usize, m: &mut u64| {
                    if to > j {
                        *m &= u64::MAX.checked_shl((to - j).min(64) as u32).unwrap_or(0);
                    }
                };
                skip(memo.skip_to, &mut m4);
                let mut m = m4 | m2;
                while m != 0 {
                    let k = m.trailing_zeros();
                    let p = j + k as usize;
                    let bit = 1u64 << k;
                    m &= m - 1;
                    if m2 & bit != 0
                        && let Some(&[a, b, c, d]) = data.get(p - 3..=p)
                    {
                        self.short_candidates(
                            u32::from_le_bytes([a, b, c, d]),
                            p,
                            tail,
                            data,
                            on_hit,
                        );
                    }
                    if m4 & bit != 0 {
                        self.pass(p, data, tail, &mut memo, on_hit);
                        if memo.skip_to > p + 1 {
                            skip(memo.skip_to, &mut m4);
                            m &= m4 | m2;
                        }
                    }
                }
                j += 64;
            }
        }
        for j in j..data.len() {
            if let Some(x) = data
                .get(j - 3..=j)
                .and_then(|w| <[u8; 4]>::try_from(w).ok())
                .map(u32::from_le_bytes)
            {
                if let Some(s) = short
                    && short_bit(s, x) != 0
                {
                    self.short_candidates(x, j, tail, data, on_hit);
                }
                if let Some(g) = gate
                    && g.bit(x) != 0
                {
                    self.pass(j, data, tail, &mut memo, on_hit);
                }
            }
        }
    }

    /// A gate pass at `data[j]` (j >= 7): replayed from the memo inside a run, else the buckets are probed.
    #[inline(always)]
    fn pass(
        &self,
        j: usize,
        data: &[u8],
        tail: &[u8],
        memo: &mut Memo<'_>,
        on_hit: &mut impl FnMut(u32, usize),
    ) {
        if memo.at == j - 1 && in_run(data, j) {
            self.replay(memo, j, tail, data, on_hit);
        } else {
            self.long_candidates(j, tail, data, on_hit, memo);
        }
    }

    /// Inside a run (the memo holds the check-word passes of the position before `j`, with the same windows),
    /// whether no position from `j` to the run's end can report anything but `quiet` patterns: every entry is
    /// quiet, or longer than 16 bytes (decided by the byte-wise compare), not one byte value throughout, and
    /// already wholly inside the run at `j` (so it cannot match anywhere further in the run). The latter are the
    /// patterns ending in 16 NUL bytes after other bytes: they pass the check words at every position of a NUL run
    /// and never match in it, so they would keep a run whose other patterns are all quiet from being skipped.
    #[cold]
    #[inline(never)]
    fn run_is_silent(&self, memo: &mut Memo<'_>, j: usize, data: &[u8]) -> bool {
        // First without the run's start: a short entry that is not quiet keeps the run loud (always so for a
        // datagram or HTTP buffer, which have no quiet patterns), and costs no backward walk.
        if !memo
            .entries
            .iter()
            .take(memo.n)
            .all(|&(pid, len)| len > 16 || memo.quiet.contains(&pid))
        {
            return false;
        }
        let Some(&b) = data.get(j) else { return false };
        if memo.run_start == usize::MAX {
            let mut s = j;
            while s > 0 && data.get(s - 1) == Some(&b) {
                s -= 1;
            }
            memo.run_start = s;
        }
        let rs = memo.run_start;
        memo.entries.iter().take(memo.n).all(|&(pid, len)| {
            if memo.quiet.contains(&pid) {
                return true;
            }
            if len <= 16 || j + 1 < rs + len as usize {
                return false;
            }
            let nocase = self.nocase.get(pid as usize).copied().unwrap_or(false);
            self.pattern(pid)
                .iter()
                .any(|&c| c != b && !(nocase && c.eq_ignore_ascii_case(&b)))
        })
    }

    /// The loop when short patterns exist: the direct two-byte gate and the hashed four-byte gate per byte.
    #[inline(never)]
    fn loop_mixed(&self, data: &[u8], tail: &[u8], on_hit: &mut impl FnMut(u32, usize)) {
        let Some(short) = &self.short_gate else {
            return;
        };
        for (k, w) in data.get(4..).unwrap_or(&[]).windows(4).enumerate() {
            if let &[a, b, c, d] = w {
                let g = u32::from_le_bytes([a, b, c, d]);
                let k2 = (g >> 16) as usize;
                if short
                    .get(k2 >> 6)
                    .is_some_and(|x| x & (1u64 << (k2 & 63)) != 0)
                {
                    self.short_candidates(g, k + 7, tail, data, on_hit);
                }
                if let Some(gate) = &self.gate
                    && gate.bit(g) != 0
                {
                    self.long_candidates(k + 7, tail, data, on_hit, &mut Memo::new(&[]));
                }
            }
        }
    }

    /// Behind a short-gate pass at `data[j]` (j >= 7): the 1-byte and 2..=3-byte buckets.
    #[cold]
    #[inline(never)]
    fn short_candidates(
        &self,
        g: u32,
        j: usize,
        tail: &[u8],
        data: &[u8],
        on_hit: &mut impl FnMut(u32, usize),
    ) {
        let Some(&[a, b, c, d, e, f, g8, h]) = data.get(j.wrapping_sub(7)..=j) else {
            return;
        };
        let w8 = u64::from_le_bytes([a, b, c, d, e, f, g8, h]);
        if let Some(l1) = &self.l1
            && let Some(bucket) = l1.probe(g >> 24)
        {
            self.confirm(bucket, w8, 8, j, tail, data, on_hit, &mut Memo::new(&[]));
        }
        if let Some(l2) = &self.l2
            && let Some(bucket) = l2.probe(g >> 16)
        {
            self.confirm(bucket, w8, 8, j, tail, data, on_hit, &mut Memo::new(&[]));
        }
    }

    /// Behind a gate pass at `data[j]` (j >= 7): the 4..=7-byte bucket and the 8-byte bucket.
    #[cold]
    #[inline(never)]
    fn long_candidates(
        &self,
        j: usize,
        tail: &[u8],
        data: &[u8],
        on_hit: &mut impl FnMut(u32, usize),
        memo: &mut Memo<'_>,
    ) {
        memo.at = j;
        memo.n = 0;
        memo.run_start = usize::MAX;
        let Some(&[a, b, c, d, e, f, g, h]) = data.get(j.wrapping_sub(7)..=j) else {
            memo.at = usize::MAX;
            return;
        };
        let w8 = u64::from_le_bytes([a, b, c, d, e, f, g, h]);
        if w8 == 0 {
            // What the probes below would find, without them (see `zero`).
            self.confirm(&self.zero, 0, 8, j, tail, data, on_hit, memo);
            return;
        }
        if let Some(l4) = &self.l4
            && let Some(bucket) = l4.probe((w8 >> 32) as u32)
        {
            self.confirm(bucket, w8, 8, j, tail, data, on_hit, memo);
        }
        if let Some(l8) = &self.l8
            && let Some(bucket) = l8.probe(key8(w8))
        {
            self.confirm(bucket, w8, 8, j, tail, data, on_hit, memo);
        }
    }

    /// Inside a run (see [`Memo`]): the entries that passed at `j - 1` pass at `j`; a pattern longer than 16 bytes
    /// still has its other bytes compared (the run may be shorter than the pattern). Once the run cannot report
    /// anything but quiet patterns ([`PatternSet::run_is_silent`]), its remaining positions return at once.
    #[cold]
    #[inline(never)]
    fn replay(
        &self,
        memo: &mut Memo<'_>,
        j: usize,
        tail: &[u8],
        data: &[u8],
        on_hit: &mut impl FnMut(u32, usize),
    ) {
        memo.at = j;
        if j < memo.skip_to {
            return;
        }
        if self.run_is_silent(memo, j, data) {
            memo.skip_to = run_end(data, j);
            return;
        }
        for &(pid, len) in memo.entries.iter().take(memo.n) {
            if len <= 16 || self.confirm_long(pid, j, tail, data) {
                on_hit(pid, j + 1);
            }
        }
    }

    /// Probes every level for the 8-byte window `w` ending at `data[j]`, of which `valid` bytes are real.
    #[inline(always)]
    fn check_all(
        &self,
        w: u64,
        valid: u8,
        j: usize,
        tail: &[u8],
        data: &[u8],
        on_hit: &mut impl FnMut(u32, usize),
    ) {
        let g = (w >> 32) as u32;
        if let Some(l1) = &self.l1
            && valid >= 1
            && let Some(bucket) = l1.probe(g >> 24)
        {
            self.confirm(bucket, w, valid, j, tail, data, on_hit, &mut Memo::new(&[]));
        }
        if let Some(l2) = &self.l2
            && valid >= 2
            && let Some(bucket) = l2.probe(g >> 16)
        {
            self.confirm(bucket, w, valid, j, tail, data, on_hit, &mut Memo::new(&[]));
        }
        if valid >= 4
            && let Some(gate) = &self.gate
            && gate.bit(g) != 0
        {
            if let Some(l4) = &self.l4
                && let Some(bucket) = l4.probe(g)
            {
                self.confirm(bucket, w, valid, j, tail, data, on_hit, &mut Memo::new(&[]));
            }
            if valid >= 8
                && let Some(l8) = &self.l8
                && let Some(bucket) = l8.probe(key8(w))
            {
                self.confirm(bucket, w, valid, j, tail, data, on_hit, &mut Memo::new(&[]));
            }
        }
    }

    /// Tests each candidate of `bucket` against the window `w` (whose top `valid` bytes are real) ending at
    /// `data[j]`; a pattern longer than 8 bytes then has its other bytes compared (reaching into `tail`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn confirm(
        &self,
        bucket: &[Entry],
        w: u64,
        valid: u8,
        j: usize,
        tail: &[u8],
        data: &[u8],
        on_hit: &mut impl FnMut(u32, usize),
        memo: &mut Memo<'_>,
    ) {
        for e in bucket {
            if w & e.mask != e.value {
                continue;
            }
            let ok = if e.len <= 8 {
                // Exact already, provided every compared byte belongs to the stream.
                let ok = e.len <= u32::from(valid);
                if ok {
                    memo.push(e.pid, e.len);
                }
                ok
            } else if valid < 8 {
                false
            } else if let Some(&[a, b, c, d, f, g, h, i]) =
                j.checked_sub(15).and_then(|s| data.get(s..s + 8))
            {
                // The eight bytes before the window lie in `data`: the second check word decides up to 16 bytes.
                u64::from_le_bytes([a, b, c, d, f, g, h, i]) & e.mask2 == e.value2 && {
                    memo.push(e.pid, e.len);
                    e.len <= 16 || self.confirm_long(e.pid, j, tail, data)
                }
            } else {
                // Not memoized: the second window is not in `data`.
                memo.at = usize::MAX;
                self.confirm_long(e.pid, j, tail, data)
            };
            if ok {
                on_hit(e.pid, j + 1);
            }
        }
    }

    /// Compares a pattern longer than 8 bytes whose last 8 already matched, ending at `data[j]`.
    #[cold]
    fn confirm_long(&self, pid: u32, j: usize, tail: &[u8], data: &[u8]) -> bool {
        let end = j + 1;
        let p = self.pattern(pid);
        let nocase = self.nocase.get(pid as usize).copied().unwrap_or(false);
        let eq = |a: &[u8], b: &[u8]| {
            if nocase {
                a.eq_ignore_ascii_case(b)
            } else {
                a == b
            }
        };
        if p.len() <= end {
            data.get(end - p.len()..end).is_some_and(|s| eq(s, p))
        } else {
            // Straddles the chunk boundary: the first bytes come from the tail.
            let (head, rest) = p.split_at(p.len() - end);
            match (
                tail.get(tail.len().wrapping_sub(head.len())..),
                data.get(..end),
            ) {
                (Some(t), Some(d)) if tail.len() >= head.len() => eq(t, head) && eq(d, rest),
                _ => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(ps: &PatternSet, chunks: &[&[u8]]) -> Vec<(u32, usize)> {
        let mut st = ScanState::default();
        let mut tail: Vec<u8> = Vec::new();
        let mut base = 0;
        let mut out = Vec::new();
        for c in chunks {
            ps.scan(&mut st, &tail, c, |p, e| out.push((p, base + e)));
            tail.extend_from_slice(c);
            base += c.len();
        }
        out.sort();
        out
    }

    #[test]
    fn finds_all_lengths_and_cases() {
        let ps = PatternSet::new(&[
            (b"a".to_vec(), false),
            (b"bc".to_vec(), true),
            (b"XYZ".to_vec(), false),
            (b"hello".to_vec(), true),
            (b"World".to_vec(), false),
        ]);
        let got = hits(&ps, &[b"a BC xyz XYZ HeLLo World world"]);
        // "a" at 0 (case-sensitive: only lowercase), "BC" nocase, "XYZ" sensitive once, "hello" nocase, "World" once.
        assert_eq!(got, vec![(0, 1), (1, 4), (2, 12), (3, 18), (4, 24)]);
    }

    #[test]
    fn straddling_and_overlapping() {
        let ps = PatternSet::new(&[
            (b"abcabc".to_vec(), false),
            (b"bcab".to_vec(), false),
            (b"c".to_vec(), false),
        ]);
        let whole = hits(&ps, &[b"xabcabcabcx"]);
        for split in 0..11 {
            let (a, b) = b"xabcabcabcx".split_at(split);
            assert_eq!(hits(&ps, &[a, b]), whole, "split at {split}");
        }
        let one_by_one: Vec<&[u8]> = b"xabcabcabcx".chunks(1).collect();
        assert_eq!(hits(&ps, &one_by_one), whole);
        assert_eq!(whole.iter().filter(|h| h.0 == 0).count(), 2);
    }

    #[test]
    fn short_tail_misses_rather_than_misreports() {
        let ps = PatternSet::new(&[
            (b"abcdefghijkl".to_vec(), false),
            (b"abcdef".to_vec(), false),
        ]);
        let mut st = ScanState::default();
        let mut out = Vec::new();
        ps.scan(&mut st, b"", b"abcdef", |p, e| out.push((p, e)));
        assert_eq!(out, vec![(1, 6)]);
        out.clear();
        // Tail not kept by the caller: the long straddling occurrence is not reported, and nothing bogus is.
        ps.scan(&mut st, b"", b"ghijkl", |p, e| out.push((p, e)));
        assert!(out.is_empty());
        // Patterns of up to 8 bytes need no tail: the 8 bytes of state are enough.
        let ps = PatternSet::new(&[(b"abcdefgh".to_vec(), true)]);
        let mut st = ScanState::default();
        for (i, b) in b"xxABCDEFGH".iter().enumerate() {
            ps.scan(&mut st, b"", std::slice::from_ref(b), |p, e| {
                out.push((p, i + e))
            });
        }
        assert_eq!(out, vec![(0, 10)]);
    }
}
