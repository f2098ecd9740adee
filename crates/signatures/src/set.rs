//! The signature set and the per-connection matcher.
//!
//! # What l7-filter does, and what we keep of it
//!
//! l7-filter (kernel `xt_layer7.c` and userspace `l7-queue.cpp` alike) keeps, per connection, one buffer of
//! application data from *both* directions in arrival order, with NUL bytes removed (its regex libraries take C
//! strings). For each of the connection's first `num_packets` packets (default 10, counting every packet, even
//! the handshake's empty ones) it appends the payload, at most `maxdatalen - 1` bytes in all (default 2048 − 1
//! for the string's terminator), and re-runs every pattern over the *whole* buffer, in the user's rule order; the
//! first pattern that matches classifies the connection (MATCHED). A packet that adds no byte runs nothing. When
//! the packet count passes the limit without a match, the connection is "unknown" (NO_MATCH); until then it is
//! "unset" (NO_MATCH_YET). The ANCS'10 and multithreaded-L7-filter papers model exactly these three states.
//!
//! [`SignatureSet::feed`] gives the same answers without keeping the buffer and without re-scanning it:
//!
//! * **Each byte is read once.** The patterns are compiled into a few dense DFAs (`regex-automata`, all
//!   patterns of a group in one automaton, `MatchKind::All` so every pattern's matches are reported). The
//!   per-connection state is one DFA state index per group ([`ConnState`], `Copy`, 60 bytes), so a packet's
//!   bytes are fed from where the previous packet stopped. A pattern matches the buffer iff one of its matches
//!   ends somewhere in it, and the DFA reports every match end as it passes it.
//! * **Anchors.** `^` holds only at the connection's first byte: each DFA starts in its start-of-text state, so
//!   `^` needs nothing more. `$` holds at the *current* end of the buffer, i.e. wherever a packet happens to
//!   end, which a streaming matcher cannot know in advance: after each packet we take the DFA's end-of-input
//!   transition on a copy of the state (one table lookup per group) and count its matches, without committing
//!   it, so the next packet continues from the real state. This is exact: `$` patterns match exactly when
//!   l7-filter's re-scan would have.
//! * **Precedence.** l7-filter's answer depends on rule order, and on nothing else once a packet makes several
//!   patterns match. Signatures here are numbered in a documented priority order ([`SigId`] 0 first, see
//!   [`Options::priority`] and [`crate::Signature::tier`]): after each packet the lowest-numbered signature
//!   that matched so far wins. Patterns matching only in a later packet never compete, exactly as in l7-filter.
//! * **Early answers.** l7-filter reports NO_MATCH only once a packet beyond the limit arrives; we answer NoMatch
//!   as soon as the outcome is certain: after the last examined packet, when the byte budget is used up (later
//!   bytes would be dropped anyway), or when every DFA is dead (no pattern can match any continuation, which
//!   for start-anchored patterns usually happens within a few bytes).
//!
//! # Why groups of dense DFAs, not one automaton
//!
//! One DFA for the whole L7-filter set does not exist in practice: the set is the classic example of DFA state
//! explosion (many patterns have `.*` or `[\x09-\x0d -~]*` gaps, and a union must track every combination of
//! their progress). Determinizing the 27 unanchored protocol patterns together passed 512 MiB of states after
//! seven minutes before the builder gave up. A lazy DFA (`regex-automata`'s hybrid) avoids building states no
//! traffic reaches, but its state ids live in a per-thread cache that is cleared when full, which would make a
//! saved per-connection state id meaningless after a clear or when a flow bundle moves to another worker.
//! Dense DFAs are immutable and shared by all workers without locks, and a state index is valid forever. So
//! the loader packs patterns into groups whose DFA stays under [`Options::group_size_limit`] (1 MiB by default:
//! bigger groups measured no faster and build slower), start-anchored patterns apart from the others (their
//! DFAs die within a few bytes on most connections and then cost nothing), and unanchored patterns with good
//! literal prefixes apart from those without (so that their groups keep a fast prefilter). The report lists the
//! groups; `protocols/` packs into 19 (9 start-anchored, 10 unanchored, 23 MiB, built in about 3 s).
//!
//! # Skipping bytes
//!
//! A DFA step is a dependent memory load; most bytes never need one. [`SignatureSet::feed`] runs each live group
//! over the packet in turn, and a group skips ahead exactly when the skipped bytes could not change its state:
//!
//! * in its *idle* state (no partial match alive, away from the first byte) with a SIMD prefilter (Teddy or
//!   memchr over the group's prefix literals, cut to 4 bytes, taken from the patterns without their `^`
//!   branches, which cannot start there), or a table of the bytes that keep it idle on short stretches;
//! * in an accelerated state (inside `.*X`), with `memchr` for the one to three bytes that leave it;
//! * in any other state that loops on many bytes (`.*(thawte|verisign)`, `[\x09-\x0d -~]*`), with a table of
//!   those bytes, once a byte has left the DFA where it was.
//!
//! The prefilters look for one spelling of each literal: the data is lower-cased on the way in (in 256-byte
//! stack chunks, which also drop the NULs), which changes no DFA transition because every pattern is
//! case-folded, and the last `needle - 1` bytes of a chunk are always stepped, so a literal cut by a packet
//! boundary or a NUL is still seen.
//!
//! # Costs
//!
//! Per byte: a DFA step per live group when it cannot skip; per packet: a copy of the data to the stack while a
//! group with a prefilter is alive, and one end-of-input lookup per live group; per connection: [`ConnState`],
//! no allocation. Measured on the first 10 packets of the 4,349 connections in the nDPI captures (2.1 MB
//! examined, `protocols/`): about 4× less CPU than re-running every regex over the buffer after each packet
//! as l7-filter does ([`crate::reference`], same data, same run), and the gap widens with longer connections
//! because the re-scan is quadratic in the buffer. See `benches/feed.rs`. Load: determinization, a few
//! seconds for `protocols/` (groups are packed by trial builds; anchored and unanchored packings run on two
//! threads).

use crate::pat::{self, PatFile};
use crate::translate::{self, Translation};
use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::nfa::thompson;
use regex_automata::util::prefilter::Prefilter;
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;
use regex_automata::{Anchored, MatchKind, Span};
use regex_syntax::hir::Hir;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use thiserror::Error;

/// A packet is matched in chunks of this many bytes, copied to the stack when NULs must be removed or the data
/// lower-cased for the prefilters.
const SCRATCH: usize = 256;
/// Shortest stretch of data worth a prefilter call: below it, SIMD searchers fall back to slower scalar
/// code (Rabin-Karp) and stepping the DFA is cheaper.
const PREFILTER_MIN_SPAN: usize = 64;
/// A state gets a self-loop table (see [`Group`]) when it loops on at least this many byte values.
const LOOP_MIN: u32 = 32;
/// Most DFA groups a set may have: the size of [`ConnState`]'s state array.
pub const MAX_GROUPS: usize = 26;
/// Most signatures a set may hold ([`SigId`] is a `u16`, and one value is reserved).
pub const MAX_SIGNATURES: usize = u16::MAX as usize - 1;
/// Largest `.pat` file read (the pattern itself is capped at 8 KiB by the format).
pub const MAX_PAT_FILE_BYTES: u64 = 1 << 20;
/// Most `.pat` files read from one directory.
pub const MAX_PAT_FILES: usize = 10_000;

/// The subdirectories of an L7-filter signature set, in the order they are loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// `protocols/`: the mainstream patterns, always loaded.
    Protocols,
    /// `extra/`: "patterns of less general interest", mostly subsets of HTTP.
    Extra,
    /// `malware/`: Code Red, Nimda.
    Malware,
    /// `file_types/`: file formats, whatever protocol carries them.
    FileTypes,
    /// `from-layer7-patterns/`: older versions of some patterns kept by the set.
    Legacy,
    /// Patterns from a plain directory or given in memory.
    Other,
}

impl Category {
    /// The subdirectory name in the signature set.
    pub fn dir_name(self) -> &'static str {
        match self {
            Category::Protocols => "protocols",
            Category::Extra => "extra",
            Category::Malware => "malware",
            Category::FileTypes => "file_types",
            Category::Legacy => "from-layer7-patterns",
            Category::Other => ".",
        }
    }
}

/// Loading and matching options. `Default` is l7-filter's defaults with the `protocols/` directory only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Also load `extra/`.
    pub extra: bool,
    /// Also load `malware/`.
    pub malware: bool,
    /// Also load `file_types/`.
    pub file_types: bool,
    /// Also load `from-layer7-patterns/` (older duplicates; a name already loaded is rejected as a duplicate).
    pub legacy: bool,
    /// Load only these protocol names (like an `l7-filter.conf` that lists them); `None` loads everything.
    pub only: Option<Vec<String>>,
    /// Signatures to try first, in this order (l7-filter's rule order). Every other signature follows, ordered
    /// by [`crate::Signature::tier`], then category, then name; signatures from `from-layer7-patterns/` come
    /// last (the set's maintainers retired them, `mysql` for "too many false matches").
    pub priority: Vec<String>,
    /// Data bytes examined per connection, NUL bytes not counted. l7-filter's kernel default `maxdatalen` is
    /// 2048, which holds 2047 bytes and the C string's terminator. 1 to 65535.
    pub max_bytes: usize,
    /// Packets examined per connection, both directions, empty ones included (l7-filter: `num_packets`,
    /// default 10, at most 99 in the kernel). 1 to 255.
    pub max_packets: usize,
    /// Drop NUL bytes from the data, as both l7-filter versions do (the patterns are written for it: x11's
    /// comment says "If it's a null, it won't appear").
    pub strip_nul: bool,
    /// Largest DFA of a group of several patterns, in bytes.
    pub group_size_limit: usize,
    /// Largest DFA of one pattern, in bytes; a pattern above it is rejected as too large.
    pub pattern_size_limit: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            extra: false,
            malware: false,
            file_types: false,
            legacy: false,
            only: None,
            priority: Vec::new(),
            max_bytes: 2047,
            max_packets: 10,
            strip_nul: true,
            group_size_limit: 1 << 20,
            pattern_size_limit: 32 << 20,
        }
    }
}

impl Options {
    /// Every directory of the set except the legacy one.
    pub fn all() -> Self {
        Options {
            extra: true,
            malware: true,
            file_types: true,
            ..Options::default()
        }
    }

    fn categories(&self) -> Vec<Category> {
        let mut cats = vec![Category::Protocols];
        for (on, cat) in [
            (self.extra, Category::Extra),
            (self.malware, Category::Malware),
            (self.file_types, Category::FileTypes),
            (self.legacy, Category::Legacy),
        ] {
            if on {
                cats.push(cat);
            }
        }
        cats
    }

    fn validate(&self) -> Result<(), LoadError> {
        if !(1..=u16::MAX as usize).contains(&self.max_bytes) {
            return Err(LoadError::Options(format!(
                "max_bytes {} is not in 1..=65535",
                self.max_bytes
            )));
        }
        if !(1..=u8::MAX as usize).contains(&self.max_packets) {
            return Err(LoadError::Options(format!(
                "max_packets {} is not in 1..=255",
                self.max_packets
            )));
        }
        Ok(())
    }
}

/// A failure that stops loading altogether (problems with single patterns go to the [`LoadReport`]).
#[derive(Debug, Error)]
pub enum LoadError {
    /// The directory could not be listed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// An option is out of range.
    #[error("invalid options: {0}")]
    Options(String),
}

/// Index of a signature in its set. Lower ids take precedence when several match in the same packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SigId(u16);

impl SigId {
    /// The position in the set (and in the priority order).
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// The L7-filter connection states: `Pending` is NO_MATCH_YET (still looking; feed the next packet), `Matched` is
/// MATCHED (this signature classified the connection), `NoMatch` is NO_MATCH (the packet or byte limit passed, or no
/// pattern can match any more). The last two are final.
pub type Verdict = flowbundle_types::Verdict<SigId>;

/// One loaded signature.
#[derive(Debug, Clone)]
pub struct Signature {
    /// The protocol name, as in the `.pat` file's name line.
    pub name: String,
    /// Where it came from.
    pub category: Category,
    /// The file, when loaded from one.
    pub path: Option<PathBuf>,
    /// The file's first comment line.
    pub description: String,
    /// Words of the `# Pattern attributes:` line.
    pub attributes: Vec<String>,
    /// The raw pattern line.
    pub pattern: Vec<u8>,
    /// The pattern as handed to the regex library (after `\xHH` substitution).
    pub preprocessed: Vec<u8>,
    /// Translation warnings, rendered.
    pub warnings: Vec<String>,
    /// Precedence tier from the attributes: 0 `subset` (a more specific pattern, e.g. `validcertssl` inside
    /// `ssl`), 1 plain, 2 `superset` (`http`, `ssl`, `snmp`), 3 `overmatch` (`skypeout`, `edonkey`, `ntp`...,
    /// patterns their authors say match too much). l7-filter's documentation asks users to order their rules
    /// this way; names in [`Options::priority`] come before all tiers.
    pub tier: u8,
    /// Every match starts at the connection's first byte.
    pub start_anchored: bool,
    /// The pattern uses `$`.
    pub end_anchored: bool,
    /// The DFA group that holds it.
    pub group: usize,
}

/// What loading did, for humans and tests: every pattern file is either loaded or listed here with a reason.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Per directory: category, path, `.pat` files seen, loaded, rejected.
    pub dirs: Vec<DirReport>,
    /// Patterns that were not loaded, with the reason.
    pub rejected: Vec<Rejection>,
    /// `unknown` and `unset`: dummy files naming l7-filter's NO_MATCH and NO_MATCH_YET states, not patterns.
    pub special: Vec<String>,
    /// Names listed in [`Options::only`] that no file provided.
    pub missing: Vec<String>,
    /// One line per translation warning, prefixed with the signature name.
    pub warnings: Vec<String>,
    /// The DFA groups built.
    pub groups: Vec<GroupInfo>,
    /// Total memory of all DFAs.
    pub dfa_bytes: usize,
    /// Time spent building DFAs (individual builds and packing).
    pub build_time: Duration,
}

/// Counts for one directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirReport {
    /// Which directory.
    pub category: Category,
    /// Its path.
    pub path: PathBuf,
    /// `.pat` files found.
    pub files: usize,
    /// Signatures loaded from it.
    pub loaded: usize,
    /// Files rejected (not counting the special `unknown`/`unset`).
    pub rejected: usize,
}

/// A pattern that was not loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The file, if any.
    pub path: Option<PathBuf>,
    /// The protocol name, if it got that far.
    pub name: Option<String>,
    /// Why.
    pub reason: RejectReason,
}

/// Why a pattern was not loaded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RejectReason {
    /// The file could not be read, or is larger than [`MAX_PAT_FILE_BYTES`].
    #[error("unreadable: {0}")]
    Io(String),
    /// The file is not a valid `.pat` file.
    #[error("{0}")]
    Pat(#[from] pat::PatError),
    /// l7-filter refuses a file whose protocol name differs from its file name.
    #[error("protocol name '{name}' does not match the file name '{file}'")]
    NameMismatch {
        /// The name line.
        name: String,
        /// The file name without `.pat`.
        file: String,
    },
    /// A signature of that name is already loaded.
    #[error("duplicate of the signature already loaded from {0}")]
    Duplicate(String),
    /// The regex could not be translated.
    #[error("{0}")]
    Translate(#[from] translate::TranslateError),
    /// The pattern's automaton exceeds [`Options::pattern_size_limit`] (or cannot be compiled).
    #[error("automaton too large: {0}")]
    TooLarge(String),
    /// More than [`MAX_SIGNATURES`] signatures, or more than [`MAX_GROUPS`] groups needed.
    #[error("set is full: {0}")]
    Full(String),
}

/// One DFA group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// Every pattern in it is start-anchored.
    pub anchored: bool,
    /// Its signatures' names.
    pub names: Vec<String>,
    /// DFA memory in bytes.
    pub bytes: usize,
    /// The group has a fast prefix prefilter that skips bytes while no match is in progress.
    pub prefilter: bool,
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.dirs {
            writeln!(
                f,
                "{:<22} {:>4} files  {:>4} loaded  {:>3} rejected",
                d.category.dir_name(),
                d.files,
                d.loaded,
                d.rejected
            )?;
        }
        if !self.special.is_empty() {
            writeln!(
                f,
                "skipped (l7-filter state names, not patterns): {}",
                self.special.join(", ")
            )?;
        }
        if !self.missing.is_empty() {
            writeln!(f, "requested but not found: {}", self.missing.join(", "))?;
        }
        for r in &self.rejected {
            let what = r
                .name
                .clone()
                .or_else(|| r.path.as_ref().map(|p| p.display().to_string()));
            writeln!(f, "rejected {}: {}", what.unwrap_or_default(), r.reason)?;
        }
        for w in &self.warnings {
            writeln!(f, "warning {w}")?;
        }
        for (i, g) in self.groups.iter().enumerate() {
            writeln!(
                f,
                "group {i:>2}: {:<10} {:>9} bytes{} {}",
                if g.anchored { "anchored" } else { "unanchored" },
                g.bytes,
                if g.prefilter { " prefilter" } else { "" },
                g.names.join(" ")
            )?;
        }
        let anchored = self.groups.iter().filter(|g| g.anchored).count();
        writeln!(
            f,
            "{} DFA groups ({} start-anchored, {} unanchored), {:.1} MiB, built in {:.1} s",
            self.groups.len(),
            anchored,
            self.groups.len() - anchored,
            self.dfa_bytes as f64 / (1 << 20) as f64,
            self.build_time.as_secs_f64()
        )
    }
}

/// A loaded, compiled signature set. Immutable and `Sync`: share one between all workers.
#[derive(Debug)]
pub struct SignatureSet {
    sigs: Vec<Signature>,
    groups: Vec<Group>,
    max_bytes: u16,
    max_packets: u8,
    strip_nul: bool,
}

#[derive(Debug)]
struct Group {
    dfa: dense::DFA<Vec<u32>>,
    /// Start state (start of text, anchored or not as the group is built).
    start: StateID,
    /// log2 of the DFA's stride: a state index is its id shifted right by this.
    stride2: usize,
    /// Number of states: indices at or above it are invalid.
    states: usize,
    /// Pattern index inside the DFA → signature.
    sigs: Vec<SigId>,
    /// Unanchored groups: the state in which no match is in progress (the unanchored start state away from
    /// the first byte), with the bytes that leave it there, and the prefix prefilter that may skip ahead
    /// from it.
    idle: Option<Idle>,
    /// Per state index: 0, or 1 + the index in `loop_bytes` of the bytes on which that state loops to itself
    /// (for states with at least [`LOOP_MIN`] such bytes that are not accelerated already).
    loops: Vec<u32>,
    loop_bytes: Vec<[u64; 4]>,
}

#[derive(Debug)]
struct Idle {
    state: StateID,
    /// `stays[b]`: byte `b` leads from the idle state back to it.
    stays: [bool; 256],
    prefilter: Option<Prefilter>,
}

/// Per-connection matching state: one DFA state per group, byte and packet counts, the verdict once final.
/// `Copy`, 60 bytes, no heap. Get one from [`SignatureSet::new_state`] and only feed it to that set.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnState {
    /// State index per group; 0 is the dead state (a dense DFA's state 0).
    states: [u16; MAX_GROUPS],
    /// Data bytes kept so far (after NUL removal).
    bytes: u16,
    /// Packets counted so far.
    packets: u8,
    /// 0: still matching; 1: NoMatch; 2: Matched(`sig`).
    status: u8,
    sig: u16,
    /// Data bytes (NULs included) that arrived after the byte budget was used up, saturating.
    cut: u16,
}

impl fmt::Debug for ConnState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnState")
            .field("bytes", &self.bytes)
            .field("packets", &self.packets)
            .field("status", &self.status)
            .field("sig", &self.sig)
            .field("cut", &self.cut)
            .finish_non_exhaustive()
    }
}

impl ConnState {
    /// Data bytes examined so far (NULs not counted).
    pub fn bytes(&self) -> usize {
        usize::from(self.bytes)
    }

    /// Packets counted so far.
    pub fn packets(&self) -> usize {
        usize::from(self.packets)
    }

    /// Bytes that arrived after the byte budget was full and were not examined (saturates at 65535): the
    /// counter for what the cap cut.
    pub fn bytes_cut(&self) -> usize {
        usize::from(self.cut)
    }

    /// The verdict so far.
    pub fn verdict(&self) -> Verdict {
        match self.status {
            0 => Verdict::Pending,
            2 => Verdict::Matched(SigId(self.sig)),
            _ => Verdict::NoMatch,
        }
    }
}

/// A signature ready to be compiled: translated, with its metadata.
struct Candidate {
    sig: Signature,
    hir: Hir,
    /// The pattern's own DFA and its size, built in the first phase.
    dfa: Option<dense::DFA<Vec<u32>>>,
    dfa_bytes: usize,
    /// [`prefilter_hir`] of the pattern.
    pre_hir: Hir,
    /// Away from the first byte, every match starts with one of a few literals of 3 bytes or more: worth
    /// grouping with similar patterns under one prefilter.
    prefilter_friendly: bool,
}

impl SignatureSet {
    /// Loads a signature set. `path` is either the root of an L7-filter set (it has a `protocols/`
    /// subdirectory; the other subdirectories are loaded as `options` say) or a plain directory of `.pat` files.
    /// Files are read in name order. Every file ends up in the set or in the report's `rejected` list.
    pub fn load_dir(
        path: impl AsRef<Path>,
        options: &Options,
    ) -> Result<(SignatureSet, LoadReport), LoadError> {
        options.validate()?;
        let root = path.as_ref();
        let mut report = LoadReport::default();
        let mut files: Vec<(Category, PathBuf, Vec<PathBuf>)> = Vec::new();
        if root.join(Category::Protocols.dir_name()).is_dir() {
            for cat in options.categories() {
                let dir = root.join(cat.dir_name());
                if cat != Category::Protocols && !dir.is_dir() {
                    // An optional directory the set does not have: nothing to load, nothing to report.
                    continue;
                }
                let list = list_pat_files(&dir)?;
                files.push((cat, dir, list));
            }
        } else {
            let list = list_pat_files(root)?;
            files.push((Category::Other, root.to_path_buf(), list));
        }

        let mut candidates: Vec<Candidate> = Vec::new();
        for (category, dir, list) in files {
            let mut dir_report = DirReport {
                category,
                path: dir.clone(),
                files: list.len(),
                loaded: 0,
                rejected: 0,
            };
            for file in list {
                let stem = file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let reject =
                    |report: &mut LoadReport, name: Option<String>, reason: RejectReason| {
                        report.rejected.push(Rejection {
                            path: Some(file.clone()),
                            name,
                            reason,
                        });
                    };
                let bytes = match read_capped(&file) {
                    Ok(b) => b,
                    Err(e) => {
                        reject(&mut report, None, RejectReason::Io(e));
                        dir_report.rejected += 1;
                        continue;
                    }
                };
                let parsed = match pat::parse_pat_file(&bytes) {
                    Ok(p) => p,
                    Err(e) => {
                        reject(&mut report, None, e.into());
                        dir_report.rejected += 1;
                        continue;
                    }
                };
                if parsed.name != stem {
                    reject(
                        &mut report,
                        Some(parsed.name.clone()),
                        RejectReason::NameMismatch {
                            name: parsed.name,
                            file: stem,
                        },
                    );
                    dir_report.rejected += 1;
                    continue;
                }
                if parsed.name == "unknown" || parsed.name == "unset" {
                    report.special.push(parsed.name);
                    continue;
                }
                if options
                    .only
                    .as_ref()
                    .is_some_and(|only| !only.contains(&parsed.name))
                {
                    continue;
                }
                match make_candidate(parsed, category, Some(file.clone()), &candidates) {
                    Ok(c) => candidates.push(c),
                    Err((name, reason)) => {
                        reject(&mut report, Some(name), reason);
                        dir_report.rejected += 1;
                        continue;
                    }
                }
                dir_report.loaded += 1;
            }
            report.dirs.push(dir_report);
        }
        if let Some(only) = &options.only {
            report.missing = only
                .iter()
                .filter(|n| !candidates.iter().any(|c| &c.sig.name == *n))
                .cloned()
                .collect();
        }
        let set = Self::compile(candidates, options, &mut report);
        // Loaded counts are final only after compilation (a pattern may still be rejected as too large).
        for d in &mut report.dirs {
            let late = report
                .rejected
                .iter()
                .filter(|r| {
                    matches!(r.reason, RejectReason::TooLarge(_) | RejectReason::Full(_))
                        && r.path
                            .as_ref()
                            .is_some_and(|p| p.parent() == Some(d.path.as_path()))
                })
                .count();
            d.loaded -= late.min(d.loaded);
            d.rejected += late;
        }
        Ok((set, report))
    }

    /// Builds a set from in-memory `(name, pattern line)` pairs, as if each were a `.pat` file with that name
    /// and pattern (category [`Category::Other`], no attributes). For tests, fuzzing and embedding.
    pub fn from_patterns<N: AsRef<str>, P: AsRef<[u8]>>(
        patterns: &[(N, P)],
        options: &Options,
    ) -> Result<(SignatureSet, LoadReport), LoadError> {
        options.validate()?;
        let mut report = LoadReport::default();
        let mut candidates = Vec::new();
        for (name, pattern) in patterns {
            let parsed = PatFile {
                name: name.as_ref().to_string(),
                pattern: pattern.as_ref().to_vec(),
                userspace_pattern: None,
                userspace_flags: None,
                description: String::new(),
                attributes: Vec::new(),
                groups: Vec::new(),
            };
            match make_candidate(parsed, Category::Other, None, &candidates) {
                Ok(c) => candidates.push(c),
                Err((name, reason)) => report.rejected.push(Rejection {
                    path: None,
                    name: Some(name),
                    reason,
                }),
            }
        }
        let set = Self::compile(candidates, options, &mut report);
        Ok((set, report))
    }

    /// Orders the candidates by precedence, builds each one's DFA, packs them into groups.
    fn compile(
        mut candidates: Vec<Candidate>,
        options: &Options,
        report: &mut LoadReport,
    ) -> SignatureSet {
        let started = Instant::now();
        let explicit = |name: &str| {
            options
                .priority
                .iter()
                .position(|p| p == name)
                .unwrap_or(usize::MAX)
        };
        candidates.sort_by(|a, b| {
            let key = |c: &Candidate| {
                let legacy = c.sig.category == Category::Legacy;
                (explicit(&c.sig.name), legacy, c.sig.tier, c.sig.category)
            };
            key(a)
                .cmp(&key(b))
                .then_with(|| a.sig.name.cmp(&b.sig.name))
        });
        for c in candidates.iter().skip(MAX_SIGNATURES) {
            report.rejected.push(Rejection {
                path: c.sig.path.clone(),
                name: Some(c.sig.name.clone()),
                reason: RejectReason::Full(format!("more than {MAX_SIGNATURES} signatures")),
            });
        }
        candidates.truncate(MAX_SIGNATURES);

        // Phase 1: each pattern's own DFA (rejects what cannot be compiled at all; sizes guide the packing).
        build_individual(&mut candidates, options.pattern_size_limit);
        let mut kept = Vec::with_capacity(candidates.len());
        for c in candidates {
            match c.dfa {
                Some(_) => kept.push(c),
                None => report.rejected.push(Rejection {
                    path: c.sig.path.clone(),
                    name: Some(c.sig.name.clone()),
                    reason: RejectReason::TooLarge(format!(
                        "its DFA exceeds {} bytes or {} states",
                        options.pattern_size_limit,
                        u16::MAX
                    )),
                }),
            }
        }
        let mut candidates = kept;

        // Phase 2: pack into groups, anchored and unanchored apart, on two threads.
        let (anchored, unanchored): (Vec<usize>, Vec<usize>) =
            (0..candidates.len()).partition(|&i| candidates[i].sig.start_anchored);
        let limit = options.group_size_limit;
        let (mut packs_a, mut packs_u) = std::thread::scope(|s| {
            let c = &candidates;
            let a = s.spawn(move || pack(c, anchored, true, limit));
            let u = pack(c, unanchored, false, limit);
            (a.join().unwrap_or_default(), u)
        });
        let mut packs = Vec::new();
        packs.append(&mut packs_a);
        packs.append(&mut packs_u);

        // Groups beyond MAX_GROUPS cannot be tracked by ConnState: their signatures are rejected, loudly.
        let mut in_group: Vec<Option<usize>> = vec![None; candidates.len()];
        let mut groups: Vec<(Vec<usize>, dense::DFA<Vec<u32>>, bool)> = Vec::new();
        for (members, dfa, anchored) in packs {
            if groups.len() == MAX_GROUPS {
                for &m in &members {
                    report.rejected.push(Rejection {
                        path: candidates[m].sig.path.clone(),
                        name: Some(candidates[m].sig.name.clone()),
                        reason: RejectReason::Full(format!(
                            "more than {MAX_GROUPS} DFA groups needed; raise group_size_limit"
                        )),
                    });
                }
                continue;
            }
            for &m in &members {
                in_group[m] = Some(groups.len());
            }
            groups.push((members, dfa, anchored));
        }

        // Final numbering: precedence order among the signatures that made it into a group.
        let mut new_id: Vec<Option<SigId>> = vec![None; candidates.len()];
        let mut sigs = Vec::new();
        for (i, c) in candidates.iter_mut().enumerate() {
            if let Some(g) = in_group[i] {
                new_id[i] = Some(SigId(sigs.len() as u16));
                c.sig.group = g;
                for w in &c.sig.warnings {
                    report.warnings.push(format!("{}: {w}", c.sig.name));
                }
                sigs.push(c.sig.clone());
            }
        }
        let mut built = Vec::with_capacity(groups.len());
        for (members, dfa, anchored) in groups {
            let ids: Vec<SigId> = members.iter().filter_map(|&m| new_id[m]).collect();
            report.dfa_bytes += dfa.memory_usage();
            let mode = if anchored {
                Anchored::Yes
            } else {
                Anchored::No
            };
            // A start state always exists for the start kind the DFA was built with; a failure here would
            // be a bug in the packing, and the dead state keeps the group inert rather than panicking.
            let start = dfa
                .start_state(&start::Config::new().anchored(mode))
                .unwrap_or(StateID::ZERO);
            let stride2 = dfa.stride2();
            let reachable = explore(
                &dfa,
                if anchored {
                    Anchored::Yes
                } else {
                    Anchored::No
                },
            );
            let states = reachable
                .iter()
                .map(|s| (s.as_usize() >> stride2) + 1)
                .max()
                .unwrap_or(1);
            let (loops, loop_bytes) = self_loops(&dfa, &reachable, states);
            let idle = if anchored {
                None
            } else {
                // Away from the first byte, any look-behind byte gives the same start state (the patterns use
                // no word or line assertions); it is the state the DFA returns to when nothing is in progress.
                dfa.start_state(
                    &start::Config::new()
                        .anchored(Anchored::No)
                        .look_behind(Some(0xff)),
                )
                .ok()
                .map(|state| {
                    let mut stays = [false; 256];
                    for (b, stay) in stays.iter_mut().enumerate() {
                        *stay = dfa.next_state(state, b as u8) == state;
                    }
                    let hirs: Vec<&Hir> = members.iter().map(|&m| &candidates[m].pre_hir).collect();
                    let prefilter = prefix_literals(&hirs).and_then(|lits| fast_prefilter(&lits));
                    Idle {
                        state,
                        stays,
                        prefilter,
                    }
                })
            };
            report.groups.push(GroupInfo {
                anchored,
                names: ids.iter().map(|id| sigs[id.index()].name.clone()).collect(),
                bytes: dfa.memory_usage(),
                prefilter: idle.as_ref().is_some_and(|i| i.prefilter.is_some()),
            });
            built.push(Group {
                dfa,
                start,
                stride2,
                states,
                sigs: ids,
                idle,
                loops,
                loop_bytes,
            });
        }
        report.build_time = started.elapsed();
        SignatureSet {
            sigs,
            groups: built,
            max_bytes: options.max_bytes as u16,
            max_packets: options.max_packets as u8,
            strip_nul: options.strip_nul,
        }
    }

    /// Number of signatures.
    pub fn len(&self) -> usize {
        self.sigs.len()
    }

    /// True when no signature loaded.
    pub fn is_empty(&self) -> bool {
        self.sigs.is_empty()
    }

    /// The protocol name of a signature.
    pub fn name(&self, id: SigId) -> &str {
        self.sigs.get(id.index()).map_or("", |s| s.name.as_str())
    }

    /// Everything known about a signature.
    pub fn signature(&self, id: SigId) -> Option<&Signature> {
        self.sigs.get(id.index())
    }

    /// The signature of that protocol name.
    pub fn find(&self, name: &str) -> Option<SigId> {
        self.sigs
            .iter()
            .position(|s| s.name == name)
            .map(|i| SigId(i as u16))
    }

    /// All signatures in precedence order, with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (SigId, &Signature)> {
        self.sigs
            .iter()
            .enumerate()
            .map(|(i, s)| (SigId(i as u16), s))
    }

    /// Number of DFA groups.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Total DFA memory in bytes.
    pub fn memory_usage(&self) -> usize {
        self.groups.iter().map(|g| g.dfa.memory_usage()).sum()
    }

    /// The byte budget per connection.
    pub fn max_bytes(&self) -> usize {
        usize::from(self.max_bytes)
    }

    /// The packet budget per connection.
    pub fn max_packets(&self) -> usize {
        usize::from(self.max_packets)
    }

    /// Whether NUL bytes are dropped from the data.
    pub fn strip_nul(&self) -> bool {
        self.strip_nul
    }

    /// A fresh state for a new connection (NO_MATCH_YET, nothing seen).
    pub fn new_state(&self) -> ConnState {
        let mut states = [0u16; MAX_GROUPS];
        for (slot, g) in states.iter_mut().zip(&self.groups) {
            *slot = (g.start.as_usize() >> g.stride2) as u16;
        }
        let status = if self.groups.is_empty() { 1 } else { 0 };
        ConnState {
            states,
            bytes: 0,
            packets: 0,
            status,
            sig: 0,
            cut: 0,
        }
    }

    /// Feeds one packet's application data (either direction, in arrival order) and returns the verdict.
    ///
    /// Call it for every packet of the connection, including those without payload (pass an empty slice):
    /// l7-filter counts them towards its packet limit. Once the verdict is final, further calls return it
    /// without looking at the data.
    pub fn feed(&self, state: &mut ConnState, data: &[u8]) -> Verdict {
        if state.status != 0 {
            return state.verdict();
        }
        state.packets = state.packets.saturating_add(1);
        let room = usize::from(self.max_bytes.saturating_sub(state.bytes));
        // l7-filter reads at most `room` raw bytes of the packet, NULs included, and keeps the non-NUL ones.
        let (window, rest) = data.split_at(data.len().min(room));
        let cut = if state.bytes as usize + window.len() >= usize::from(self.max_bytes) {
            rest.len()
        } else {
            0
        };
        state.cut = state.cut.saturating_add(cut.min(u16::MAX as usize) as u16);
        let added = if self.strip_nul {
            window.len() - count_nul(window)
        } else {
            window.len()
        };

        if added > 0 {
            let best = self.run(state, window);
            state.bytes += added as u16; // added <= room, so this stays within max_bytes
            if let Some(sig) = best {
                state.status = 2;
                state.sig = sig.0;
                return Verdict::Matched(sig);
            }
        }
        let all_dead = state.states[..self.groups.len()].iter().all(|&s| s == 0);
        if state.bytes >= self.max_bytes || state.packets >= self.max_packets || all_dead {
            state.status = 1;
            return Verdict::NoMatch;
        }
        Verdict::Pending
    }

    /// Runs the live groups over `window` (skipping NULs if configured), then takes the end-of-input peek.
    /// Returns the best signature that matched, and leaves the groups' states in `state`.
    fn run(&self, state: &mut ConnState, window: &[u8]) -> Option<SigId> {
        let mut sids = [StateID::ZERO; MAX_GROUPS];
        let mut live = 0;
        for ((sid, group), &index) in sids.iter_mut().zip(&self.groups).zip(&state.states) {
            let index = usize::from(index);
            // Index 0 is dead; an index beyond the DFA can only come from another set's ConnState.
            if index != 0 && index < group.states {
                *sid = StateID::new_unchecked(index << group.stride2);
                live += 1;
            }
        }
        let groups = &self.groups[..self.groups.len().min(MAX_GROUPS)];
        let mut best: Option<SigId> = None;
        // The DFAs and prefilters read the data as l7-filter's kernel buffer holds it: NULs removed (if
        // configured) and ASCII lower-cased. Lower-casing changes no DFA transition (every pattern is
        // case-folded) but lets the prefilters look for one spelling of each literal instead of all of them, so
        // it is only done while a group with a prefilter is alive. The packet is taken in small chunks so that
        // DFAs dying in the first bytes (most start-anchored ones) do not pay for copying the rest.
        let mut buf = [0u8; SCRATCH];
        let mut raw = window;
        while !raw.is_empty() && live > 0 {
            let (piece, rest) = raw.split_at(raw.len().min(SCRATCH));
            raw = rest;
            let lower = sids.iter().zip(groups).any(|(&sid, g)| {
                sid != StateID::ZERO && g.idle.as_ref().is_some_and(|i| i.prefilter.is_some())
            });
            let chunk: &[u8] = if self.strip_nul && piece.contains(&0) {
                let mut kept = 0;
                for &b in piece {
                    buf[kept] = b.to_ascii_lowercase();
                    kept += usize::from(b != 0);
                }
                &buf[..kept]
            } else if lower {
                for (out, &b) in buf.iter_mut().zip(piece) {
                    *out = b.to_ascii_lowercase();
                }
                &buf[..piece.len()]
            } else {
                piece
            };
            for (sid, group) in sids.iter_mut().zip(groups) {
                if *sid != StateID::ZERO {
                    *sid = group.scan(*sid, chunk, &mut best);
                    live -= usize::from(*sid == StateID::ZERO);
                }
            }
        }
        state.states = [0; MAX_GROUPS];
        for ((slot, group), &sid) in state.states.iter_mut().zip(groups).zip(&sids) {
            if sid == StateID::ZERO {
                continue;
            }
            // `$` holds here, at the end of what has arrived: peek at the end-of-input transition.
            let eoi = group.dfa.next_eoi_state(sid);
            if group.dfa.is_match_state(eoi) {
                group.collect(eoi, &mut best);
            }
            *slot = (sid.as_usize() >> group.stride2) as u16;
        }
        best
    }

    /// Classifies a whole connection given as its packets' payloads in arrival order. Returns the verdict and
    /// the number of packets fed (the rest were not needed).
    pub fn classify<'a>(&self, packets: impl IntoIterator<Item = &'a [u8]>) -> (Verdict, usize) {
        let mut state = self.new_state();
        let mut fed = 0;
        let mut verdict = state.verdict();
        for p in packets {
            if verdict.is_final() {
                break;
            }
            verdict = self.feed(&mut state, p);
            fed += 1;
        }
        (verdict, fed)
    }

    /// Every signature whose pattern matches somewhere in `data` taken as one buffer (NULs stripped if
    /// configured, no byte or packet limit), in precedence order. For overmatch reports and tests: this is
    /// "which patterns would l7-filter's re-scan find", not a verdict.
    pub fn matching(&self, data: &[u8]) -> Vec<SigId> {
        let mut hit = vec![false; self.sigs.len()];
        for group in &self.groups {
            let mut sid = group.start;
            let mut mark = |s: StateID| {
                for i in 0..group.dfa.match_len(s) {
                    let pid = group.dfa.match_pattern(s, i).as_usize();
                    if let Some(id) = group.sigs.get(pid) {
                        hit[id.index()] = true;
                    }
                }
            };
            for &b in data {
                if b == 0 && self.strip_nul {
                    continue;
                }
                sid = group.dfa.next_state(sid, b);
                if group.dfa.is_dead_state(sid) {
                    break;
                }
                if group.dfa.is_match_state(sid) {
                    mark(sid);
                }
            }
            if !group.dfa.is_dead_state(sid) {
                let eoi = group.dfa.next_eoi_state(sid);
                if group.dfa.is_match_state(eoi) {
                    mark(eoi);
                }
            }
        }
        hit.iter()
            .enumerate()
            .filter(|(_, h)| **h)
            .map(|(i, _)| SigId(i as u16))
            .collect()
    }
}

impl Group {
    /// Runs the DFA from `sid` over `bytes` (NUL-stripped, lower-cased), lowering `best` at every match state,
    /// and returns the new state (the dead state as soon as it is reached).
    ///
    /// Two ways to skip bytes without changing the answer:
    /// * In the idle state (no partial match in progress, away from the first byte), the group's prefilter
    ///   jumps to the next place where one of its patterns' literal prefixes starts: no match can start
    ///   before it and nothing earlier is alive, so the skipped bytes would have left the DFA idle. The last
    ///   `max_needle_len - 1` bytes are never skipped, because a literal may continue in the next packet.
    ///   Without a prefilter, or on short stretches, a table of the bytes that keep the DFA idle is used.
    /// * In an accelerated state (every byte but one to three loops back to it, as inside `.*X`), `memchr`
    ///   finds the next byte that leaves it.
    /// * Other states that loop on many bytes (the gap in `^\x16\x03.*(thawte|verisign)` once the prefix
    ///   matched, a `[\x09-\x0d -~]*` run): when a byte leaves the DFA where it was, the following bytes are
    ///   checked against the state's table (one L1 lookup each, no dependency between them) instead of stepped.
    #[inline]
    fn scan(&self, mut sid: StateID, bytes: &[u8], best: &mut Option<SigId>) -> StateID {
        let dfa = &self.dfa;
        let len = bytes.len();
        let mut i = 0;
        while i < len {
            // Dead, match, accelerated and (in unanchored groups) start states are "special": one comparison
            // keeps the common case to a table lookup per byte. The idle state is the mid-text start state.
            if dfa.is_special_state(sid) {
                if dfa.is_dead_state(sid) {
                    return sid;
                }
                if dfa.is_match_state(sid) {
                    self.collect(sid, best);
                }
                if let Some(idle) = &self.idle
                    && sid == idle.state
                {
                    match &idle.prefilter {
                        Some(pre) if len - i >= PREFILTER_MIN_SPAN => match pre
                            .find(bytes, Span::from(i..len))
                        {
                            Some(span) => i = span.start,
                            None => {
                                i = i
                                    .max(len.saturating_sub(pre.max_needle_len().saturating_sub(1)))
                            }
                        },
                        // Short stretches: walk over the bytes that keep the DFA idle (a 256-entry table in
                        // L1, no dependency between iterations, unlike DFA steps).
                        _ => {
                            while i < len && idle.stays[usize::from(bytes[i])] {
                                i += 1;
                            }
                        }
                    }
                } else if dfa.is_accel_state(sid) {
                    let rest = &bytes[i..];
                    let next = match *dfa.accelerator(sid) {
                        [a] => memchr::memchr(a, rest),
                        [a, b] => memchr::memchr2(a, b, rest),
                        [a, b, c] => memchr::memchr3(a, b, c, rest),
                        _ => Some(0),
                    };
                    i += next.unwrap_or(rest.len());
                }
                if i >= len {
                    break;
                }
            }
            let next = dfa.next_state(sid, bytes[i]);
            i += 1;
            // Stayed put: if this state loops on many bytes, walk over them with its table.
            if next == sid
                && let Some(&k) = self.loops.get(sid.as_usize() >> self.stride2)
                && let Some(bits) = (k as usize)
                    .checked_sub(1)
                    .and_then(|k| self.loop_bytes.get(k))
            {
                while i < len && bits[usize::from(bytes[i] >> 6)] >> (bytes[i] & 63) & 1 == 1 {
                    i += 1;
                }
            }
            sid = next;
        }
        if dfa.is_match_state(sid) {
            self.collect(sid, best);
        }
        sid
    }

    /// Lowers `best` to the best signature matched in match state `sid`.
    fn collect(&self, sid: StateID, best: &mut Option<SigId>) {
        for i in 0..self.dfa.match_len(sid) {
            let pid = self.dfa.match_pattern(sid, i).as_usize();
            if let Some(&id) = self.sigs.get(pid)
                && best.is_none_or(|b| id < b)
            {
                *best = Some(id);
            }
        }
    }
}

/// Number of NUL bytes, counted in blocks of 255 with byte-sized sums so that it vectorizes.
fn count_nul(data: &[u8]) -> usize {
    data.chunks(255)
        .map(|block| usize::from(block.iter().fold(0u8, |n, &b| n + u8::from(b == 0))))
        .sum()
}

fn list_pat_files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let io = |source| LoadError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().is_some_and(|e| e == "pat") && path.is_file() {
            files.push(path);
            if files.len() > MAX_PAT_FILES {
                return Err(LoadError::Options(format!(
                    "more than {MAX_PAT_FILES} .pat files in {}",
                    dir.display()
                )));
            }
        }
    }
    files.sort();
    Ok(files)
}

fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_PAT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_PAT_FILE_BYTES {
        return Err(format!("larger than {MAX_PAT_FILE_BYTES} bytes"));
    }
    Ok(bytes)
}

fn tier(attributes: &[String]) -> u8 {
    let has = |w: &str| attributes.iter().any(|a| a == w);
    if has("overmatch") {
        3
    } else if has("superset") {
        2
    } else if has("subset") {
        0
    } else {
        1
    }
}

fn make_candidate(
    parsed: PatFile,
    category: Category,
    path: Option<PathBuf>,
    existing: &[Candidate],
) -> Result<Candidate, (String, RejectReason)> {
    if let Some(first) = existing.iter().find(|c| c.sig.name == parsed.name) {
        let from = first
            .sig
            .path
            .as_ref()
            .map_or_else(|| "memory".to_string(), |p| p.display().to_string());
        return Err((parsed.name, RejectReason::Duplicate(from)));
    }
    let t: Translation = match translate::translate(&parsed.pattern) {
        Ok(t) => t,
        Err(e) => return Err((parsed.name, e.into())),
    };
    let sig = Signature {
        tier: tier(&parsed.attributes),
        start_anchored: t.is_start_anchored(),
        end_anchored: t.uses_end_anchor(),
        warnings: t.warnings.iter().map(ToString::to_string).collect(),
        preprocessed: t.preprocessed.clone(),
        name: parsed.name,
        category,
        path,
        description: parsed.description,
        attributes: parsed.attributes,
        pattern: parsed.pattern,
        group: 0,
    };
    let pre_hir = prefilter_hir(&t.hir);
    let prefilter_friendly = !t.is_start_anchored()
        && prefix_literals(&[&pre_hir]).is_some_and(|lits| {
            lits.iter().all(|l| l.len() >= 3) && fast_prefilter(&lits).is_some()
        });
    Ok(Candidate {
        sig,
        hir: t.hir,
        dfa: None,
        dfa_bytes: 0,
        pre_hir,
        prefilter_friendly,
    })
}

/// The pattern as the idle-state prefilter needs it: branches that must start at the connection's first byte
/// removed (the prefilter only runs away from it), and ASCII letters in lower case only (it runs on
/// lower-cased data, so `http/` is one literal instead of sixteen spellings).
fn prefilter_hir(hir: &Hir) -> Hir {
    use regex_syntax::hir::{Class, HirKind, Look};
    if hir.properties().look_set_prefix().contains(Look::Start) {
        return Hir::fail();
    }
    match hir.kind() {
        HirKind::Class(Class::Bytes(class)) => {
            let mut lower = class.clone();
            lower.difference(&regex_syntax::hir::ClassBytes::new([
                regex_syntax::hir::ClassBytesRange::new(b'A', b'Z'),
            ]));
            Hir::class(Class::Bytes(lower))
        }
        HirKind::Literal(lit) => Hir::literal(lit.0.to_ascii_lowercase()),
        HirKind::Repetition(rep) => {
            let mut rep = rep.clone();
            rep.sub = Box::new(prefilter_hir(&rep.sub));
            Hir::repetition(rep)
        }
        HirKind::Capture(cap) => prefilter_hir(&cap.sub),
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(prefilter_hir).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(prefilter_hir).collect()),
        _ => hir.clone(),
    }
}

/// Literals that every match of these patterns (away from the first byte, on lower-cased data) starts with,
/// cut to 4 bytes and deduplicated so that class-heavy prefixes (`http/1.1 [1-5][0-9][0-9]`) stay a handful
/// of needles; `None` when some match can start with anything.
fn prefix_literals(hirs: &[&Hir]) -> Option<Vec<Vec<u8>>> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor, Seq};
    let mut extractor = Extractor::new();
    extractor.kind(ExtractKind::Prefix);
    let mut seq = Seq::empty();
    for hir in hirs {
        seq.union(&mut extractor.extract(hir));
    }
    seq.keep_first_bytes(4);
    seq.dedup();
    let lits: Vec<Vec<u8>> = seq
        .literals()?
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .collect();
    (!lits.is_empty() && lits.iter().all(|l| !l.is_empty())).then_some(lits)
}

/// A prefilter for these needles, if it is a fast (SIMD) one.
fn fast_prefilter(lits: &[Vec<u8>]) -> Option<Prefilter> {
    Prefilter::new(MatchKind::All, lits).filter(Prefilter::is_fast)
}

/// Compiles patterns into one dense DFA with every match reported, or `None` if it exceeds `limit` bytes or
/// has more states than a `u16` state index can name.
fn build_dfa(hirs: &[&Hir], anchored: bool, limit: usize) -> Option<dense::DFA<Vec<u32>>> {
    let nfa = thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .shrink(false)
                .nfa_size_limit(Some(limit.max(1 << 20))),
        )
        .build_many_from_hir(hirs)
        .ok()?;
    let config = dense::Config::new()
        .match_kind(MatchKind::All)
        .start_kind(if anchored {
            StartKind::Anchored
        } else {
            StartKind::Unanchored
        })
        // Accelerated states (inside `.*X`) let scan() jump with memchr.
        .accelerate(true)
        // Unanchored groups: make the start states special, so that scan() notices the idle state (where the
        // prefilter can run) with the same comparison that finds match and dead states.
        .specialize_start_states(!anchored)
        .minimize(false)
        .dfa_size_limit(Some(limit))
        .determinize_size_limit(Some(limit));
    let dfa = dense::Builder::new()
        .configure(config)
        .build_from_nfa(&nfa)
        .ok()?;
    (state_count(&dfa) <= usize::from(u16::MAX)).then_some(dfa)
}

/// Every state reachable from the start states (all look-behind contexts) by bytes or end of input.
fn explore(dfa: &dense::DFA<Vec<u32>>, mode: Anchored) -> Vec<StateID> {
    let stride2 = dfa.stride2();
    let mut seen: Vec<bool> = Vec::new();
    let mut queue: Vec<StateID> = Vec::new();
    let mut visit = |sid: StateID, queue: &mut Vec<StateID>| {
        let index = sid.as_usize() >> stride2;
        if seen.len() <= index {
            seen.resize(index + 1, false);
        }
        if !seen[index] {
            seen[index] = true;
            queue.push(sid);
        }
    };
    for behind in [None, Some(b'\n'), Some(b'\r'), Some(b'a'), Some(0xff)] {
        if let Ok(sid) = dfa.start_state(&start::Config::new().anchored(mode).look_behind(behind)) {
            visit(sid, &mut queue);
        }
    }
    let mut all = Vec::new();
    while let Some(sid) = queue.pop() {
        all.push(sid);
        for b in 0..=255u8 {
            visit(dfa.next_state(sid, b), &mut queue);
        }
        visit(dfa.next_eoi_state(sid), &mut queue);
    }
    all
}

/// Tables of the bytes on which a state loops to itself, for the states (not dead, not accelerated) with at
/// least [`LOOP_MIN`] of them, indexed by state index: 0 for none, else 1 + the table's index.
fn self_loops(
    dfa: &dense::DFA<Vec<u32>>,
    states: &[StateID],
    count: usize,
) -> (Vec<u32>, Vec<[u64; 4]>) {
    let mut loops = vec![0u32; count];
    let mut tables = Vec::new();
    for &sid in states {
        if dfa.is_dead_state(sid) || dfa.is_accel_state(sid) {
            continue;
        }
        let mut bits = [0u64; 4];
        for b in 0..=255u8 {
            if dfa.next_state(sid, b) == sid {
                bits[usize::from(b >> 6)] |= 1 << (b & 63);
            }
        }
        if bits.iter().map(|w| w.count_ones()).sum::<u32>() >= LOOP_MIN
            && let Some(slot) = loops.get_mut(sid.as_usize() >> dfa.stride2())
        {
            tables.push(bits);
            *slot = tables.len() as u32;
        }
    }
    (loops, tables)
}

/// An upper bound on a dense DFA's number of states (its transition table over its stride).
fn state_count(dfa: &dense::DFA<Vec<u32>>) -> usize {
    (dfa.memory_usage() / 4) >> dfa.stride2()
}

/// Phase 1: every candidate's own DFA, spread over the available cores.
fn build_individual(candidates: &mut [Candidate], limit: usize) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let chunk = candidates.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for part in candidates.chunks_mut(chunk) {
            s.spawn(move || {
                for c in part {
                    c.dfa = build_dfa(&[&c.hir], c.sig.start_anchored, limit);
                    c.dfa_bytes = c.dfa.as_ref().map_or(usize::MAX, |d| d.memory_usage());
                }
            });
        }
    });
}

/// Phase 2: next-fit packing of `members` (indices into `candidates`) into DFAs of at most `limit` bytes.
///
/// Patterns with good literal prefixes go first and stay among themselves, so their groups keep a fast
/// prefilter; then patterns without unbounded repetition (their unions grow about additively, like a trie),
/// then by size. A group grows by trying to add the next `k` patterns at once, doubling `k` after a success and
/// halving it after a failure, so a group of n patterns costs about 2·log n builds instead of n.
fn pack(
    candidates: &[Candidate],
    mut members: Vec<usize>,
    anchored: bool,
    limit: usize,
) -> Vec<(Vec<usize>, dense::DFA<Vec<u32>>, bool)> {
    let gappy = |i: usize| candidates[i].hir.properties().maximum_len().is_none();
    let friendly = |i: usize| candidates[i].prefilter_friendly;
    members.sort_by_key(|&i| (!friendly(i), gappy(i), candidates[i].dfa_bytes, i));
    let mut packs = Vec::new();
    let mut next = 0;
    while next < members.len() {
        let first = members[next];
        let Some(mut dfa) = candidates[first].dfa.clone() else {
            next += 1;
            continue;
        };
        let mut group = vec![first];
        next += 1;
        let mut k = 1;
        while next < members.len() {
            let end = (next + k).min(members.len());
            let estimate: usize = dfa.memory_usage()
                + members[next..end]
                    .iter()
                    .map(|&i| candidates[i].dfa_bytes)
                    .sum::<usize>();
            // A group whose patterns all have good literal prefixes keeps a fast prefilter: it only takes more of
            // the same, and only while the union of their prefixes still makes a fast prefilter.
            let keeps_prefilter = || {
                let batch = &members[next..end];
                batch.iter().all(|&i| friendly(i)) && {
                    let hirs: Vec<&Hir> = group
                        .iter()
                        .chain(batch)
                        .map(|&i| &candidates[i].pre_hir)
                        .collect();
                    prefix_literals(&hirs)
                        .and_then(|lits| fast_prefilter(&lits))
                        .is_some()
                }
            };
            let attempt = if estimate > limit || (friendly(first) && !keeps_prefilter()) {
                None
            } else {
                let hirs: Vec<&Hir> = group
                    .iter()
                    .chain(&members[next..end])
                    .map(|&i| &candidates[i].hir)
                    .collect();
                build_dfa(&hirs, anchored, limit)
            };
            match attempt {
                Some(bigger) => {
                    dfa = bigger;
                    group.extend_from_slice(&members[next..end]);
                    next = end;
                    k *= 2;
                }
                None if k > 1 => k /= 2,
                None => break,
            }
        }
        packs.push((group, dfa, anchored));
    }
    packs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::Reference;

    fn set(patterns: &[(&str, &str)]) -> SignatureSet {
        let (set, report) = SignatureSet::from_patterns(patterns, &Options::default()).unwrap();
        assert!(report.rejected.is_empty(), "{report}");
        set
    }

    fn verdicts(set: &SignatureSet, packets: &[&[u8]]) -> Vec<Verdict> {
        let mut st = set.new_state();
        packets.iter().map(|p| set.feed(&mut st, p)).collect()
    }

    #[test]
    fn conn_state_is_small_and_copy() {
        fn is_copy<T: Copy>() {}
        is_copy::<ConnState>();
        assert!(
            std::mem::size_of::<ConnState>() <= 64,
            "{}",
            std::mem::size_of::<ConnState>()
        );
    }

    #[test]
    fn matches_across_packet_boundaries() {
        let s = set(&[("ftp", r"^220[\x09-\x0d -~]*ftp")]);
        let ftp = s.find("ftp").unwrap();
        assert_eq!(
            verdicts(&s, &[b"", b"22", b"0 Welcome to F", b"TP.kernel.org\r\n"]),
            [
                Verdict::Pending,
                Verdict::Pending,
                Verdict::Pending,
                Verdict::Matched(ftp)
            ]
        );
        // Once final, the verdict sticks and data is not looked at.
        let mut st = s.new_state();
        assert_eq!(s.feed(&mut st, b"220 ftp"), Verdict::Matched(ftp));
        assert_eq!(s.feed(&mut st, b"anything"), Verdict::Matched(ftp));
        assert_eq!(st.packets(), 1);
    }

    #[test]
    fn anchored_patterns_die_early() {
        let s = set(&[("ssh", r"^ssh-[12]\.[0-9]")]);
        assert_eq!(verdicts(&s, &[b"GET / HTTP/1.1\r\n"]), [Verdict::NoMatch]);
        assert_eq!(
            verdicts(&s, &[b"SS", b"H-2.0-OpenSSH"]),
            [Verdict::Pending, Verdict::Matched(SigId(0))]
        );
    }

    #[test]
    fn end_anchor_holds_at_each_packet_end_only() {
        // gkrellm: the whole first packet must be the greeting.
        let s = set(&[("gkrellm", r"^gkrellm [23].[0-9].[0-9]\x0a$")]);
        assert_eq!(
            verdicts(&s, &[b"gkrellm 2.1.2\n"]),
            [Verdict::Matched(SigId(0))]
        );
        // Split inside: `$` does not hold after the first piece, holds after the second.
        assert_eq!(
            verdicts(&s, &[b"gkrellm 2.", b"1.2\n"]),
            [Verdict::Pending, Verdict::Matched(SigId(0))]
        );
        // More data after the newline in the same packet: `$` never held at a packet end.
        assert_eq!(verdicts(&s, &[b"gkrellm 2.1.2\nmore"]), [Verdict::NoMatch]);
        // An unanchored `$` pattern can match later, at a later packet's end.
        let s = set(&[("x", r"ab$")]);
        assert_eq!(
            verdicts(&s, &[b"abc", b"xab"]),
            [Verdict::Pending, Verdict::Matched(SigId(0))]
        );
        assert_eq!(
            verdicts(&s, &[b"a", b"b", b"c"]),
            [
                Verdict::Pending,
                Verdict::Matched(SigId(0)),
                Verdict::Matched(SigId(0))
            ]
        );
    }

    #[test]
    fn nul_bytes_are_removed_before_matching() {
        let s = set(&[("x11", r"^[lb].?\x0b")]);
        assert_eq!(
            verdicts(&s, &[b"l\x00\x0b\x00\x00\x00"]),
            [Verdict::Matched(SigId(0))]
        );
        let (keep, _) = SignatureSet::from_patterns(
            &[("x", "^ab")],
            &Options {
                strip_nul: false,
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(verdicts(&keep, &[b"a\x00b"]), [Verdict::NoMatch]);
        let s = set(&[("x", "^ab")]);
        assert_eq!(verdicts(&s, &[b"a\x00b"]), [Verdict::Matched(SigId(0))]);
    }

    #[test]
    fn packet_limit_counts_every_packet() {
        let s = set(&[("x", "needle")]);
        let mut packets: Vec<&[u8]> = vec![b""; 9];
        packets.push(b"needle");
        assert_eq!(
            *verdicts(&s, &packets).last().unwrap(),
            Verdict::Matched(SigId(0))
        );
        packets.insert(0, b"");
        let v = verdicts(&s, &packets);
        assert_eq!(
            v[9],
            Verdict::NoMatch,
            "the 10th packet was the last one examined"
        );
        assert_eq!(v[10], Verdict::NoMatch);
    }

    #[test]
    fn byte_limit_counts_raw_bytes_like_the_kernel() {
        let opts = Options {
            max_bytes: 8,
            ..Options::default()
        };
        let (s, _) = SignatureSet::from_patterns(&[("x", "abc")], &opts).unwrap();
        // 8 bytes fit, "abc" starts at byte 7: cut.
        assert_eq!(verdicts(&s, &[b"0123456abc"]), [Verdict::NoMatch]);
        let mut st = s.new_state();
        s.feed(&mut st, b"0123456abc");
        assert_eq!((st.bytes(), st.bytes_cut()), (8, 2));
        // NULs inside the window are dropped but still use the packet's share of the window.
        let mut st = s.new_state();
        assert_eq!(
            s.feed(&mut st, b"\x00\x00\x00\x00\x00\x00\x00\x00ab"),
            Verdict::Pending
        );
        assert_eq!(st.bytes(), 0);
        assert_eq!(s.feed(&mut st, b"abc"), Verdict::Matched(SigId(0)));
    }

    #[test]
    fn precedence_within_a_packet_and_across_packets() {
        let (s, _) = SignatureSet::from_patterns(
            &[("late", "world"), ("early", "hello")],
            &Options {
                priority: vec!["late".into()],
                ..Options::default()
            },
        )
        .unwrap();
        let late = s.find("late").unwrap();
        let early = s.find("early").unwrap();
        assert!(late < early);
        // Both match within one packet: priority decides, wherever the matches are.
        assert_eq!(verdicts(&s, &[b"hello world"]), [Verdict::Matched(late)]);
        // The lower-priority one matches one packet earlier: it wins, as in l7-filter.
        assert_eq!(
            verdicts(&s, &[b"hello ", b"world"]),
            [Verdict::Matched(early), Verdict::Matched(early)]
        );
    }

    #[test]
    fn tiers_order_subsets_before_supersets_and_overmatches() {
        assert_eq!(tier(&["good".into(), "subset".into()]), 0);
        assert_eq!(tier(&["great".into()]), 1);
        assert_eq!(tier(&["great".into(), "superset".into()]), 2);
        assert_eq!(tier(&["undermatch".into(), "overmatch".into()]), 3);
    }

    #[test]
    fn empty_set_and_bad_options() {
        let (s, _) = SignatureSet::from_patterns::<&str, &str>(&[], &Options::default()).unwrap();
        assert_eq!(verdicts(&s, &[b"x"]), [Verdict::NoMatch]);
        assert!(
            SignatureSet::from_patterns(
                &[("x", "a")],
                &Options {
                    max_bytes: 0,
                    ..Options::default()
                }
            )
            .is_err()
        );
        assert!(
            SignatureSet::from_patterns(
                &[("x", "a")],
                &Options {
                    max_packets: 300,
                    ..Options::default()
                }
            )
            .is_err()
        );
    }

    #[test]
    fn rejected_patterns_are_reported() {
        let (s, report) = SignatureSet::from_patterns(
            &[("ok", "abc"), ("bad", "(abc"), ("ok", "dup")],
            &Options::default(),
        )
        .unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(report.rejected.len(), 2);
        assert!(matches!(
            report.rejected[0].reason,
            RejectReason::Translate(_)
        ));
        assert!(matches!(
            report.rejected[1].reason,
            RejectReason::Duplicate(_)
        ));
    }

    #[test]
    fn engine_agrees_with_the_reference_on_a_small_set() {
        let s = set(&[
            ("a", "^ab"),
            ("b", "b.*c$"),
            ("c", "x[0-9]+y"),
            ("d", r"^\x01\x02"),
            ("e", "q|^z"),
            ("f", r"[]\x01]-"),
        ]);
        let r = Reference::new(&s).unwrap();
        let cases: &[&[&[u8]]] = &[
            &[b"ab"],
            &[b"zb", b"c"],
            &[b"bxc", b"x12", b"3y"],
            &[b"\x01\x00\x02"],
            &[b"-", b"]-"],
            &[b"", b"", b"aq"],
        ];
        for packets in cases {
            let mut st = s.new_state();
            let mut rc = r.new_conn();
            for p in *packets {
                let (e, f) = (s.feed(&mut st, p), r.feed(&mut rc, p));
                assert!(
                    Reference::agrees(e, f),
                    "{packets:?}: engine {e:?}, reference {f:?}"
                );
            }
        }
    }
}
