//! Loading rule files into a [`RuleSet`]: parsing, the load report, and compiling the prefilter tables.
//!
//! Every rule ends up in exactly one of three places, so nothing is silent: loaded, skipped (with the reason in
//! [`LoadReport::skip_reasons`]) or an error (with file and line in [`LoadReport::errors`]).
//!
//! Compilation sorts the loaded rules by *where they are inspected*:
//! * **stream** — payload rules that apply to TCP (`tcp`, `ip`, or an application protocol), one table per direction;
//! * **packet** — payload rules for everything else (`udp`, `icmp`, `ip`, application protocols over UDP), per
//!   direction, plus rules with no content at all, which are checked on every packet;
//! * **http** — one table per HTTP buffer kind (the buffer fixes the direction).
//!
//! Each table holds a [`PatternSet`] of fast patterns (each group's `fast_pattern` content, or its longest positive
//! content) with, per pattern, the (rule, group) pairs it triggers; groups without a positive content are kept in an
//! `always` list and checked on every buffer of their kind.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::addr::Resolver;
use crate::classify::Classifications;
use crate::group::{AddrIndex, PortTables};
use crate::prefilter::{MAX_PATTERN, PatternSet};
use crate::rule::{self, Buffer, Content, FlowDir, Group, Item, Parsed, Proto, Rule};
use crate::text::{Line, Lines};
use crate::transform::Transform;
use crate::vars::Vars;
use crate::verify::Plan;
use flowbundle_types::Direction;

/// Largest rule file read by [`RuleSet::load_files`].
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// Most rules (loaded, skipped or in error) in one rule set.
pub const MAX_RULES: usize = 1_000_000;
/// Most error and skip entries kept with their line numbers (all are counted).
pub const MAX_REPORTED: usize = 100_000;
/// Default stream window on each side of a fast-pattern hit (see the crate docs on stream semantics).
pub const DEFAULT_STREAM_WINDOW: usize = 1024;

/// Loading failed as a whole (per-rule problems go to the [`LoadReport`] instead, unless `strict`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: larger than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("more than {0} rules")]
    TooManyRules(usize),
    /// In strict mode: the first rule that did not load.
    #[error("{file}:{line}: {message}")]
    Rule {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{path}:{line}: {message}")]
    ContentHex {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A physical line longer than [`crate::text::MAX_LINE_BYTES`] where it cannot be skipped: in a strict load of
    /// rule files (a load that is not strict reports it as a rule error at its line and reads on), in a
    /// `--content-hex` pattern file.
    #[error("{path}:{line}: line longer than {limit} bytes")]
    LineTooLong {
        path: PathBuf,
        line: usize,
        limit: usize,
    },
}

impl From<crate::text::ReadError> for Error {
    fn from(e: crate::text::ReadError) -> Self {
        use crate::text::ReadError;
        match e {
            ReadError::Io { path, source } => Error::Io { path, source },
            ReadError::TooLarge { path, limit } => Error::TooLarge { path, limit },
            ReadError::LineTooLong { path, line, limit } => {
                Error::LineTooLong { path, line, limit }
            }
        }
    }
}

/// How to load.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Rule variables; default: Suricata's ([`Vars::suricata_defaults`]).
    pub vars: Vars,
    pub classifications: Classifications,
    /// Fail on the first rule that errors or is skipped (for test harnesses and `--strict` loads).
    pub strict: bool,
    /// Bytes of stream inspected before and after a fast-pattern hit when a rule's contents are not tied to it by
    /// `within` (see the crate docs). Per-flow memory is about twice this per direction with data.
    pub stream_window: usize,
    /// Route packets to rule groups ([`crate::group`]) so that each meets only the rules its header can match. Off:
    /// every rule of a kind is checked on every packet of that kind, the reference the grouped matcher is tested
    /// against (same alerts).
    pub rule_groups: bool,
    /// The sets `dataset` and `datarep` start from: those the configuration's `datasets:` section defines, and the
    /// policy for rules' files ([`crate::dataset`]).
    pub datasets: crate::dataset::Datasets,
    /// What the rules' `requires` options are compared with ([`crate::requires`]): a rule whose requirements are not
    /// met is skipped under a `requires ...` reason, also in strict mode (Suricata skips it too: see
    /// [`LoadReport::unmet_requirements`]).
    pub requires: crate::requires::Requirements,
    /// Most bytes of compiled `pcre` programs the set may hold, each program counted once however many rules share
    /// it (default [`crate::rule::MAX_PCRE_MEMORY`]); a rule whose new program would go past it is skipped.
    pub pcre_memory: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            vars: Vars::suricata_defaults(),
            classifications: Classifications::standard(),
            strict: false,
            stream_window: DEFAULT_STREAM_WINDOW,
            rule_groups: true,
            datasets: crate::dataset::Datasets::default(),
            requires: crate::requires::Requirements::default(),
            pcre_memory: crate::rule::MAX_PCRE_MEMORY,
        }
    }
}

/// A rule that was skipped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRule {
    pub file: usize,
    pub line: usize,
    pub sid: Option<u32>,
    pub reason: String,
}

/// A rule that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    pub file: usize,
    pub line: usize,
    pub message: String,
}

/// What happened to every rule of a load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Names of the files (or `<text>`), indexed by the `file` fields.
    pub files: Vec<String>,
    /// Rule lines read: `loaded + skipped + errors_total`.
    pub rules_read: usize,
    pub loaded: usize,
    pub skipped: usize,
    /// Skipped rules per reason (the first unsupported keyword or keyword option).
    pub skip_reasons: BTreeMap<String, usize>,
    /// Skipped rules with their lines (the first [`MAX_REPORTED`]).
    pub skipped_rules: Vec<SkippedRule>,
    /// Rules that could not be read, with their lines (the first [`MAX_REPORTED`]).
    pub errors: Vec<RuleError>,
    pub errors_total: usize,
    /// `# alert ...` lines: rules commented out in the file.
    pub commented_rules: usize,
    /// Variables the loaded rules used (directly or through another variable) whose value is still Suricata's
    /// default: no configuration file or `--var` set them ([`crate::Origin::Default`]).
    pub vars_defaulted: Vec<String>,
    /// Bytes of stream kept per flow and direction once it carries data (prefilter tail plus verification window).
    pub stream_retain: usize,
    /// Skipped rules whose `requires` is not met ([`crate::requires`]), also counted in `skipped` under their
    /// `requires ...` reasons: Suricata skips these rules too, so a strict load does not fail on them.
    pub unmet_requirements: usize,
}

impl LoadReport {
    fn skip(&mut self, file: usize, line: usize, sid: Option<u32>, reason: String) {
        self.skipped += 1;
        *self.skip_reasons.entry(reason.clone()).or_default() += 1;
        if self.skipped_rules.len() < MAX_REPORTED {
            self.skipped_rules.push(SkippedRule {
                file,
                line,
                sid,
                reason,
            });
        }
    }

    fn error(&mut self, file: usize, line: usize, message: String) {
        self.errors_total += 1;
        if self.errors.len() < MAX_REPORTED {
            self.errors.push(RuleError {
                file,
                line,
                message,
            });
        }
    }

    /// A one-paragraph summary: counts and the skip reasons, most frequent first.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} rules read: {} loaded, {} skipped, {} errors ({} commented out)",
            self.rules_read, self.loaded, self.skipped, self.errors_total, self.commented_rules
        );
        let mut reasons: Vec<_> = self.skip_reasons.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (r, n) in reasons {
            s.push_str(&format!("\n  skipped {n:>5}: {r}"));
        }
        s
    }
}

/// Where a fast pattern leads: rule index and group index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub rule: u32,
    pub group: u8,
}

/// A fast pattern (bytes, nocase) and where it leads.
pub(crate) type Entry = (Vec<u8>, bool, Target);

/// One prefilter table (see the module docs).
#[derive(Debug)]
pub(crate) struct Table {
    pub patterns: PatternSet,
    starts: Vec<u32>,
    targets: Vec<Target>,
    /// Groups with no positive content: checked on every buffer.
    pub always: Vec<Target>,
    /// Patterns `0..own` are this table's; pattern `own + i` is pattern `i` of another table that rides along in
    /// this one's scan (the single-TCP-packet patterns in the stream's table, see
    /// [`crate::group::PortTables::carry_riders`]). Riders have no targets here.
    pub own: u32,
    /// For a packet table (datagrams, single TCP packets): when every pattern's occurrence must end within the first
    /// `head` bytes of the payload for its rules to match (the fast-pattern content has an absolute `offset` and
    /// `depth`, `startswith` included) and no rule is checked without one, only those bytes are scanned. Occurrences
    /// further on are the ones [`GroupInfo::hit_ok`] turns down anyway. ET Open's port tables of NTP, SNMP and
    /// ToDesk rules (`|00 02 2a|` at offset 1, `|00 00 00|` at the start) scanned every packet of their ports whole.
    pub head: Option<usize>,
}

impl Table {
    pub(crate) fn build(entries: &[Entry], always: Vec<Target>) -> Table {
        let mut ids: HashMap<(&[u8], bool), u32> = HashMap::new();
        let mut pats: Vec<(Vec<u8>, bool)> = Vec::new();
        let mut per: Vec<Vec<Target>> = Vec::new();
        for (bytes, nocase, t) in entries {
            let id = *ids.entry((bytes.as_slice(), *nocase)).or_insert_with(|| {
                pats.push((bytes.clone(), *nocase));
                per.push(Vec::new());
                (pats.len() - 1) as u32
            });
            if let Some(v) = per.get_mut(id as usize) {
                v.push(*t);
            }
        }
        let mut starts = Vec::with_capacity(per.len() + 1);
        let mut targets = Vec::with_capacity(entries.len());
        starts.push(0);
        for v in per {
            targets.extend(v);
            starts.push(targets.len() as u32);
        }
        Table {
            own: pats.len() as u32,
            patterns: PatternSet::new(&pats),
            starts,
            targets,
            always,
            head: None,
        }
    }

    /// Sets [`Table::head`] from the bound of each entry's occurrence (`None`: unbounded), as given by `bound`.
    pub(crate) fn with_head(
        mut self,
        entries: &[Entry],
        bound: &dyn Fn(Target) -> Option<u64>,
    ) -> Table {
        self.head = if self.always.is_empty() && !entries.is_empty() {
            entries
                .iter()
                .map(|e| bound(e.2))
                .try_fold(0u64, |m, b| b.map(|b| m.max(b)))
                .and_then(|h| usize::try_from(h).ok())
        } else {
            None
        };
        self
    }

    /// The (rule, group) pairs pattern `pid` triggers.
    #[inline]
    pub fn targets(&self, pid: u32) -> &[Target] {
        let i = pid as usize;
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&s), Some(&e)) => self.targets.get(s as usize..e as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Whether nothing can ever be reported from this table.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.always.is_empty()
    }
}

/// Per-group facts for scanning, computed once at load.
#[derive(Clone, Debug, Default)]
pub(crate) struct GroupInfo {
    pub plan: Plan,
    /// Item index of the fast-pattern content, if the group has a positive content.
    pub fp: Option<usize>,
    /// The fast pattern is the whole chain (one positive content, only offset/depth/endswith around it): a
    /// prefilter hit that passes [`GroupInfo::hit_ok`] is a match, no verification needed.
    pub fp_only: bool,
    /// Stream window before the fast pattern's start and after its end.
    pub back: u64,
    pub fwd: u64,
    /// When every item is tied to the start of the stream: matches end by this absolute offset.
    pub abs_end: Option<u64>,
    /// A partial window can confirm a match (no negation, no end-looking assertion): checked at hit time.
    pub monotone: bool,
}

impl GroupInfo {
    /// Quick check of the fast-pattern content's own absolute constraints on a hit `[s, e)`.
    #[inline]
    pub fn hit_ok(&self, g: &Group, s: u64, e: u64, buffer_end: Option<u64>) -> bool {
        let Some(Item::Content(c)) = self.fp.and_then(|i| g.items.get(i)) else {
            return true;
        };
        if c.is_relative() {
            return true;
        }
        let o = u64::from(c.offset.unwrap_or(0));
        if s < o {
            return false;
        }
        if let Some(d) = c.depth
            && e > o + u64::from(d)
        {
            return false;
        }
        if c.endswith && buffer_end.is_some_and(|be| be != e) {
            return false;
        }
        true
    }
}

/// Per-rule facts for scanning.
#[derive(Clone, Debug, Default)]
pub(crate) struct RuleInfo {
    pub groups: Vec<GroupInfo>,
    /// Bit mask with one bit per group (HTTP rules are complete when all are set).
    pub all_groups: u32,
    /// The rule has `flowbits` conditions: its candidates are evaluated after those of other rules in the same
    /// call, so that a rule setting a bit on the same data is seen (Suricata orders setters first).
    pub has_condition: bool,
    /// For a rule that mixes the payload with application-layer buffers: the bit of its payload group. The payload
    /// group is matched on the stream or datagrams, the others per transaction; the rule matches a transaction
    /// once all have (see [`crate::scan`]).
    pub payload_bit: Option<u32>,
    /// Groups checked only once the rule's *lead* group matched in a transaction (see [`lead_group`]): they are in
    /// no prefilter table and no always-checked list. When the lead matches, each is checked against the values
    /// of its buffer the transaction already carried (the flow keeps them, see [`RuleSet::stored`]); a value that
    /// arrives later is checked as it arrives, for the transactions whose lead matched. So a rule is a candidate
    /// only where its most specific content is, as in Suricata, which puts one fast pattern per rule in its
    /// matcher: `http.header_names; content:!"Referer"` is no longer checked on every request, nor
    /// `http.method; content:"GET"` on every GET, nor a back-referencing `pcre` on every `http.start`.
    pub lazy: u32,
    /// [`Rule::ip_only`].
    pub ip_only: bool,
}

/// Short HTTP fields that lead a rule only when it has no other group with a content (Suricata ranks
/// `http.method` below every other buffer when it picks a rule's fast pattern).
pub(crate) const DEFERRED_FIELDS: [Buffer; 2] = [Buffer::HttpMethod, Buffer::HttpStatCode];

/// Of a rule's application-layer groups (two or more), the one that goes into the prefilter; the others are checked
/// lazily ([`RuleInfo::lazy`]). A payload group of the rule is matched on the stream or datagrams as before. As
/// Suricata picks a rule's fast pattern: the group holding a content marked `fast_pattern`; else, among the groups
/// with a positive content, not `http.method`/`http.stat_code` where another exists, the longest fast-pattern
/// content, then the one with more distinct bytes. `None` when no application-layer group has a positive content
/// (every group is then checked on every buffer of its kind, as before).
fn lead_group(r: &Rule, infos: &[GroupInfo]) -> Option<usize> {
    let fp = |gi: usize| -> Option<&Content> {
        let g = r.groups.get(gi)?;
        match g.items.get(infos.get(gi)?.fp?)? {
            Item::Content(c) => Some(c),
            _ => None,
        }
    };
    let app = |i: usize| r.groups.get(i).is_some_and(|g| g.buffer.is_app());
    let with_fp: Vec<usize> = (0..r.groups.len())
        .filter(|&i| app(i) && fp(i).is_some())
        .collect();
    if let Some(&i) = with_fp
        .iter()
        .find(|&&i| fp(i).is_some_and(|c| c.fast_pattern))
    {
        return Some(i);
    }
    let minor = |i: usize| {
        r.groups
            .get(i)
            .is_some_and(|g| DEFERRED_FIELDS.contains(&g.buffer))
    };
    let pool: Vec<usize> = if with_fp.iter().all(|&i| minor(i)) {
        with_fp
    } else {
        with_fp.into_iter().filter(|&i| !minor(i)).collect()
    };
    let strength = |c: &Content| {
        let mut seen = [false; 256];
        c.bytes
            .iter()
            .filter(|&&b| !std::mem::replace(&mut seen[usize::from(b)], true))
            .count()
    };
    pool.into_iter()
        .map(|i| {
            let c = fp(i);
            (c.map_or(0, |c| c.bytes.len()), c.map_or(0, strength), i)
        })
        .fold(None, |best: Option<(usize, usize, usize)>, x| match best {
            Some(b) if (b.0, b.1) >= (x.0, x.1) => Some(b),
            _ => Some(x),
        })
        .map(|(_, _, i)| i)
}

/// A loaded, compiled rule set. Immutable and `Sync`: one per process, shared by every worker.
#[derive(Debug)]
pub struct RuleSet {
    pub(crate) rules: Vec<Rule>,
    pub(crate) info: Vec<RuleInfo>,
    pub(crate) stream: [PortTables; 2],
    pub(crate) packet: [PortTables; 2],
    /// Payload rules inspecting single TCP packets (`tcp-pkt`, `dsize`).
    pub(crate) tcp_packet: [PortTables; 2],
    /// Rules with no content, per direction, filed by address ([`crate::group`]): a packet meets only those its
    /// addresses can match.
    pub(crate) header_only: [AddrIndex; 2],
    pub(crate) http: Vec<Table>,
    /// Groups that inspect a transformed application-layer buffer: one table per (buffer, chain of transforms).
    pub(crate) transformed: Vec<(Buffer, Vec<Transform>, Table)>,
    /// Bytes of stream kept per flow and direction.
    pub(crate) retain: usize,
    /// Most (transaction, rule) partial matches of multi-buffer rules a flow keeps
    /// ([`crate::scan::MAX_HTTP_PARTIAL`] grouped). Checking every rule (the reference), every group of a rule is a
    /// prefilter candidate, so a common buffer value (`http.method; content:"POST"`: two thousand ET Open rules)
    /// starts a partial match for each rule that has it: the reference keeps one per multi-buffer rule and
    /// transaction in the pipelining window, so that it never loses a match the grouped matcher finds (a bound
    /// set by the rule set, as its other tables are).
    pub(crate) http_partial_max: usize,
    /// Flowbit names by id.
    pub(crate) flowbit_names: Vec<String>,
    /// Flow integer names by id.
    pub(crate) flowint_names: Vec<String>,
    /// Variable names by id, per scope ([`crate::flowvar::VarScope::index`]).
    pub(crate) var_names: [Vec<String>; 4],
    pub(crate) pcre_count: u32,
    /// Per buffer kind ([`Buffer::index`]): some rule checks a group on it lazily ([`RuleInfo::lazy`]), so its
    /// values are kept per transaction in the flow's state.
    pub(crate) stored: Vec<bool>,
    /// Names of the rule groups packets are routed to, indexed by group id (see [`crate::profile`]).
    pub(crate) group_names: Vec<String>,
    /// The sets of `dataset` and `datarep`, as loaded.
    pub(crate) datasets: crate::dataset::Datasets,
    /// The optional packet header fields some loaded rule reads ([`crate::header::HeaderNeeds`]).
    pub(crate) header_needs: crate::header::HeaderNeeds,
    /// The groups that start with `absent` ([`crate::rule::Item::Absent`]), with their buffer: checked where the
    /// engine learns that the buffer is absent from a transaction.
    pub(crate) absent: Vec<(Buffer, Target)>,
}

/// The prefilter entries of one (buffer, chain of transforms) while a rule set is built.
type TransformedEntries = (Buffer, Vec<Transform>, Vec<Entry>, Vec<Target>);

/// Whether `rule` may match data travelling the direction whose [`Direction::index`] is `d`.
fn dir_ok(rule: &Rule, d: usize) -> bool {
    Direction::BOTH
        .get(d)
        .is_some_and(|&dir| rule.flow_dir.admits(dir))
}

impl RuleSet {
    /// Parses rule text (one file's contents) with the default options and `vars`.
    pub fn parse(text: impl AsRef<[u8]>, vars: &Vars) -> Result<(RuleSet, LoadReport), Error> {
        let opts = LoadOptions {
            vars: vars.clone(),
            ..LoadOptions::default()
        };
        RuleSet::parse_with(&[("<text>", text.as_ref())], &opts)
    }

    /// Reads and parses rule files, in order, with the default options (Suricata's default variables). A directory
    /// stands for the `*.rules` files in it, in name order (see [`rule_files`]).
    pub fn load_files<P: AsRef<Path>>(paths: &[P]) -> Result<(RuleSet, LoadReport), Error> {
        RuleSet::load_files_with(paths, &LoadOptions::default())
    }

    /// Reads and parses rule files with `opts`.
    pub fn load_files_with<P: AsRef<Path>>(
        paths: &[P],
        opts: &LoadOptions,
    ) -> Result<(RuleSet, LoadReport), Error> {
        let paths = rule_files(paths)?;
        let mut texts = Vec::with_capacity(paths.len());
        let mut long_lines = Vec::with_capacity(paths.len());
        for path in &paths {
            let path = path.as_path();
            let read =
                crate::text::read_text_lines(path, MAX_FILE_BYTES, crate::text::MAX_LINE_BYTES)?;
            // A strict load fails on the first rule that does not load, an over-long line included.
            if opts.strict
                && let Some(&line) = read.long_lines.first()
            {
                return Err(Error::LineTooLong {
                    path: path.to_path_buf(),
                    line,
                    limit: crate::text::MAX_LINE_BYTES,
                });
            }
            texts.push((path.display().to_string(), read.text));
            long_lines.push(read.long_lines);
        }
        let refs: Vec<(&str, &[u8])> = texts
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_slice()))
            .collect();
        let (set, mut report) = RuleSet::parse_with(&refs, opts)?;
        // A line too long to read is a rule that could not be read: skipped, counted and reported at its line
        // (Suricata reads on past a rule line longer than its buffer, each piece an unparsable rule).
        for (file, lines) in long_lines.iter().enumerate() {
            for &line in lines {
                report.rules_read += 1;
                if report.rules_read > MAX_RULES {
                    return Err(Error::TooManyRules(MAX_RULES));
                }
                report.error(
                    file,
                    line,
                    format!(
                        "line longer than {} bytes, not read",
                        crate::text::MAX_LINE_BYTES
                    ),
                );
            }
        }
        report.errors.sort_by_key(|e| (e.file, e.line));
        Ok((set, report))
    }

    /// Parses several named texts (file name, contents) as one rule set.
    pub fn parse_with(
        texts: &[(&str, &[u8])],
        opts: &LoadOptions,
    ) -> Result<(RuleSet, LoadReport), Error> {
        let mut report = LoadReport::default();
        let mut resolver = Resolver::new(&opts.vars);
        let mut next_pcre = 0u32;
        let mut flowbit_ids: HashMap<String, u32> = HashMap::new();
        let mut flowint_ids: HashMap<String, u32> = HashMap::new();
        let mut var_ids: HashMap<(crate::flowvar::VarScope, String), u32> = HashMap::new();
        let mut next_capture_op = 0u32;
        let mut xbit_ids: HashMap<(bool, String), u32> = HashMap::new();
        let mut pcre_memory = 0usize;
        let mut pcre_compiled = HashMap::new();
        let mut datasets = opts.datasets.clone();
        // A strict load fails on a data file's bad line too, as Suricata with `--init-errors-fatal` does.
        datasets.policy.init_errors_fatal |= opts.strict;
        let mut next_dataset_op = 0u32;
        let mut rules: Vec<Rule> = Vec::new();
        let mut sids: HashMap<(u32, u32), (usize, usize)> = HashMap::new();
        // Variables the loaded rules use (the resolver collects them per rule).
        let mut vars_used: std::collections::BTreeSet<String> = Default::default();
        for (file, (name, text)) in texts.iter().enumerate() {
            report.files.push((*name).to_string());
            for l in Lines::new(text) {
                let (line, parsed) = match l {
                    Line::CommentedRule { .. } => {
                        report.commented_rules += 1;
                        continue;
                    }
                    Line::Error { line, message } => (line, Parsed::Error(message)),
                    Line::Text { line, text } => {
                        let mut ctx = rule::Ctx {
                            resolver: &mut resolver,
                            classes: &opts.classifications,
                            next_pcre_id: &mut next_pcre,
                            flowbit_ids: &mut flowbit_ids,
                            flowint_ids: &mut flowint_ids,
                            var_ids: &mut var_ids,
                            next_capture_op: &mut next_capture_op,
                            xbit_ids: &mut xbit_ids,
                            pcre_memory: &mut pcre_memory,
                            pcre_budget: opts.pcre_memory,
                            pcre_compiled: &mut pcre_compiled,
                            datasets: &mut datasets,
                            next_dataset_op: &mut next_dataset_op,
                            rule_dir: (*name != "<text>")
                                .then(|| Path::new(*name).parent())
                                .flatten(),
                            requires: &opts.requires,
                        };
                        (line, rule::parse_rule(&text, line, file, &mut ctx))
                    }
                };
                let rule_vars = std::mem::take(&mut resolver.used);
                report.rules_read += 1;
                if report.rules_read > MAX_RULES {
                    return Err(Error::TooManyRules(MAX_RULES));
                }
                let failed = |message: String| Error::Rule {
                    file: (*name).to_string(),
                    line,
                    message,
                };
                match parsed {
                    Parsed::Rule(r) => match sids.get(&(r.gid, r.sid)) {
                        Some(&(f0, l0)) => {
                            let first = report.files.get(f0).cloned().unwrap_or_default();
                            let msg = format!(
                                "duplicate sid {}:{} (first at {first}:{l0})",
                                r.gid, r.sid
                            );
                            if opts.strict {
                                return Err(failed(msg));
                            }
                            report.error(file, line, msg);
                        }
                        None => {
                            sids.insert((r.gid, r.sid), (file, line));
                            vars_used.extend(rule_vars);
                            report.loaded += 1;
                            rules.push(*r);
                        }
                    },
                    Parsed::Skipped { sid, reason } => {
                        if crate::requires::is_unmet_reason(&reason) {
                            report.unmet_requirements += 1;
                        } else if opts.strict {
                            return Err(failed(format!("unsupported: {reason}")));
                        }
                        report.skip(file, line, sid, reason);
                    }
                    Parsed::Error(message) => {
                        if opts.strict {
                            return Err(failed(message));
                        }
                        report.error(file, line, message);
                    }
                }
            }
        }
        report.vars_defaulted = opts.vars.at_default(vars_used.iter().map(String::as_str));
        crate::dataset::settle(&mut rules, &mut datasets);
        let mut set = RuleSet::compile(rules, next_pcre, opts.stream_window, opts.rule_groups);
        set.datasets = datasets;
        let mut names: Vec<(u32, String)> = flowbit_ids.into_iter().map(|(n, i)| (i, n)).collect();
        names.sort();
        set.flowbit_names = names.into_iter().map(|(_, n)| n).collect();
        let mut ints: Vec<(u32, String)> = flowint_ids.into_iter().map(|(n, i)| (i, n)).collect();
        ints.sort();
        set.flowint_names = ints.into_iter().map(|(_, n)| n).collect();
        let mut vars: Vec<((usize, u32), String)> = var_ids
            .into_iter()
            .map(|((scope, n), i)| ((scope.index(), i), n))
            .collect();
        vars.sort();
        for ((scope, _), n) in vars {
            if let Some(names) = set.var_names.get_mut(scope) {
                names.push(n);
            }
        }
        report.stream_retain = set.retain;
        Ok((set, report))
    }

    /// The `content-10k.hex` pattern set (one hex-encoded pattern per line) as one `alert ip any any -> any any`
    /// rule per pattern, sid = line number, case-sensitive, no other condition: the throughput workload.
    pub fn from_content_hex(path: impl AsRef<Path>) -> Result<(RuleSet, LoadReport), Error> {
        let path = path.as_ref();
        let text = crate::text::read_text_file(path, MAX_FILE_BYTES, crate::text::MAX_LINE_BYTES)?;
        RuleSet::from_content_hex_bytes(&text, path)
    }

    /// [`RuleSet::from_content_hex`] on the file's bytes, read already (`path` names the file in errors and the
    /// report): the reader the fuzz target `rules_content_hex` calls.
    pub fn from_content_hex_bytes(
        text: &[u8],
        path: &Path,
    ) -> Result<(RuleSet, LoadReport), Error> {
        let mut rules = Vec::new();
        let mut report = LoadReport {
            files: vec![path.display().to_string()],
            ..LoadReport::default()
        };
        for (line, pattern) in crate::text::hex_patterns(text) {
            let bytes = pattern.map_err(|message| Error::ContentHex {
                path: path.to_path_buf(),
                line,
                message,
            })?;
            report.rules_read += 1;
            if report.rules_read > MAX_RULES {
                return Err(Error::TooManyRules(MAX_RULES));
            }
            report.loaded += 1;
            rules.push(Rule::simple_content(line as u32, line, bytes));
        }
        let set = RuleSet::compile(rules, 0, DEFAULT_STREAM_WINDOW, true);
        report.stream_retain = set.retain;
        Ok((set, report))
    }

    /// The optional packet header fields the loaded rules read: the engine fills only those
    /// ([`crate::header::HeaderNeeds`]).
    pub fn header_needs(&self) -> crate::header::HeaderNeeds {
        self.header_needs
    }

    /// The loaded rules, in load order (alerts and hit counters use these indices).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The names of the variables of `scope`, by id.
    pub(crate) fn names(&self, scope: crate::flowvar::VarScope) -> &[String] {
        self.var_names
            .get(scope.index())
            .map_or(&[][..], Vec::as_slice)
    }

    /// What the engine must compute for each file the parsers carry so that the file keywords of these rules can
    /// be answered: the hashes the hash lists test, and whether some rule reads `file.magic`.
    pub fn file_needs(&self) -> crate::file::FileNeeds {
        let mut n = crate::file::FileNeeds::default();
        for g in self.rules.iter().flat_map(|r| &r.groups) {
            if g.buffer == Buffer::FileMagic {
                n.magic = true;
            }
            for it in &g.items {
                if let Item::File(c) = it {
                    match c.hash() {
                        Some(crate::file::HashAlgo::Md5) => n.md5 = true,
                        Some(crate::file::HashAlgo::Sha1) => n.sha1 = true,
                        Some(crate::file::HashAlgo::Sha256) => n.sha256 = true,
                        None => {}
                    }
                }
            }
        }
        n
    }

    /// The first content of each rule that begins with one, with its `nocase` flag, in load order: for a set
    /// loaded by [`RuleSet::from_content_hex`], the file's patterns. Benches, tests and examples build a bare
    /// prefilter or an aho-corasick automaton from them.
    pub fn first_contents(&self) -> Vec<(Vec<u8>, bool)> {
        self.rules
            .iter()
            .filter_map(|r| match r.groups.first()?.items.first()? {
                Item::Content(c) => Some((c.bytes.clone(), c.nocase)),
                _ => None,
            })
            .collect()
    }

    /// Number of loaded rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule loaded.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The sets of `dataset` and `datarep` as loaded (their run-time state starts from these, see
    /// [`crate::dataset::DatasetState`]).
    pub fn datasets(&self) -> &crate::dataset::Datasets {
        &self.datasets
    }

    /// Flowbit names, indexed by the ids in [`rule::Flowbit`].
    pub fn flowbit_names(&self) -> &[String] {
        &self.flowbit_names
    }

    /// Number of rule groups packets are routed to.
    pub fn group_count(&self) -> usize {
        self.group_names.len()
    }

    /// The name of rule group `g` (its transport, direction and ports), as the rules profile prints it.
    pub fn group_name(&self, g: u32) -> &str {
        self.group_names.get(g as usize).map_or("?", String::as_str)
    }

    /// Bytes of stream kept per flow and direction once it carries data.
    pub fn stream_retain(&self) -> usize {
        self.retain
    }

    /// Memory of the prefilter tables.
    pub fn table_memory(&self) -> usize {
        self.http.iter().map(|t| t.patterns.memory()).sum::<usize>()
            + self
                .stream
                .iter()
                .chain(&self.packet)
                .chain(&self.tcp_packet)
                .map(PortTables::memory)
                .sum::<usize>()
    }

    fn compile(rules: Vec<Rule>, pcre_count: u32, window: usize, grouped: bool) -> RuleSet {
        let window = window as u64;
        let mut info = Vec::with_capacity(rules.len());
        let mut stream: [Vec<Entry>; 2] = Default::default();
        let mut packet: [Vec<Entry>; 2] = Default::default();
        let mut stream_always: [Vec<Target>; 2] = Default::default();
        let mut packet_always: [Vec<Target>; 2] = Default::default();
        let mut tcp_packet: [Vec<Entry>; 2] = Default::default();
        let mut tcp_packet_always: [Vec<Target>; 2] = Default::default();
        let mut header_only: [Vec<u32>; 2] = Default::default();
        let mut http: Vec<(Vec<Entry>, Vec<Target>)> =
            (0..Buffer::COUNT).map(|_| Default::default()).collect();
        let mut transformed: Vec<TransformedEntries> = Vec::new();
        let mut retain = 0u64;
        let mut stored = vec![false; Buffer::COUNT];
        for (ri, r) in rules.iter().enumerate() {
            let mut ri_info = RuleInfo {
                has_condition: r.flowbits.iter().any(rule::Flowbit::is_condition)
                    || r.xbits.iter().any(|x| x.op.is_condition()),
                groups: Vec::with_capacity(r.groups.len()),
                all_groups: 0,
                payload_bit: None,
                lazy: 0,
                ip_only: r.ip_only(),
            };
            if r.groups.iter().any(|g| g.buffer.is_app()) {
                ri_info.payload_bit = r
                    .groups
                    .iter()
                    .position(|g| g.buffer == Buffer::Payload)
                    .and_then(|i| 1u32.checked_shl(i as u32));
            }
            if r.groups.is_empty() {
                for (d, list) in header_only.iter_mut().enumerate() {
                    if dir_ok(r, d) {
                        list.push(ri as u32);
                    }
                }
            }
            let infos: Vec<GroupInfo> = r.groups.iter().map(|g| group_info(g, window)).collect();
            let lead = if grouped
                && r.groups.len() <= 32
                && r.groups.iter().filter(|g| g.buffer.is_app()).count() >= 2
            {
                lead_group(r, &infos)
            } else {
                None
            };
            for ((gi, g), gi_info) in r.groups.iter().enumerate().zip(infos) {
                if g.buffer.is_app() && lead.is_some_and(|l| l != gi) {
                    ri_info.lazy |= 1u32 << gi;
                    ri_info.all_groups |= 1u32 << gi;
                    if let Some(s) = stored.get_mut(g.buffer.index()) {
                        *s = true;
                    }
                    ri_info.groups.push(gi_info);
                    continue;
                }
                ri_info.all_groups |= 1u32.checked_shl(gi as u32).unwrap_or(0);
                let t = Target {
                    rule: ri as u32,
                    group: gi as u8,
                };
                let pat = gi_info.fp.and_then(|i| match g.items.get(i) {
                    Some(Item::Content(c)) => Some((fp_bytes(c), c.nocase, t)),
                    _ => None,
                });
                if g.buffer == Buffer::Payload {
                    // `ip` and application-protocol rules whose chain cannot run on a stream inspect datagrams only.
                    let covers_tcp = matches!(r.proto, Proto::Ip | Proto::Tcp | Proto::App(_));
                    let on_tcp = covers_tcp
                        && r.tcp_inspect == rule::TcpInspect::Stream
                        && rule::stream_obstacle(g).is_none();
                    let on_tcp_packet = covers_tcp && r.tcp_inspect == rule::TcpInspect::Packet;
                    let on_other = !r.stream_only
                        && matches!(
                            r.proto,
                            Proto::Ip
                                | Proto::Udp
                                | Proto::Icmp
                                | Proto::IpProto(_)
                                | Proto::App(_)
                        );
                    for d in 0..2 {
                        if !dir_ok(r, d) {
                            continue;
                        }
                        if on_tcp {
                            match &pat {
                                Some(p) => stream[d].push(p.clone()),
                                None => stream_always[d].push(t),
                            }
                        }
                        if on_other {
                            match &pat {
                                Some(p) => packet[d].push(p.clone()),
                                None => packet_always[d].push(t),
                            }
                        }
                        if on_tcp_packet {
                            match &pat {
                                Some(p) => tcp_packet[d].push(p.clone()),
                                None => tcp_packet_always[d].push(t),
                            }
                        }
                    }
                    if on_tcp && !gi_info.fp_only {
                        let need = match gi_info.abs_end {
                            Some(e) => e + 2,
                            None => gi_info.back + gi_info.fwd + fp_len(g, &gi_info) + 2,
                        };
                        retain = retain.max(need);
                    }
                } else if !g.transforms.is_empty() {
                    let k = match transformed
                        .iter()
                        .position(|v| v.0 == g.buffer && v.1 == g.transforms)
                    {
                        Some(k) => k,
                        None => {
                            transformed.push((
                                g.buffer,
                                g.transforms.clone(),
                                Vec::new(),
                                Vec::new(),
                            ));
                            transformed.len() - 1
                        }
                    };
                    if let Some(v) = transformed.get_mut(k) {
                        match pat {
                            Some(p) => v.2.push(p),
                            None => v.3.push(t),
                        }
                    }
                } else if let Some(slot) = http.get_mut(g.buffer.index()) {
                    match pat {
                        Some(p) => slot.0.push(p),
                        None => slot.1.push(t),
                    }
                }
                ri_info.groups.push(gi_info);
            }
            info.push(ri_info);
        }
        // Where a target's fast-pattern occurrence must end, counted from the buffer's start (see `Table::head`).
        let bound = |t: Target| -> Option<u64> {
            let g = rules
                .get(t.rule as usize)?
                .groups
                .get(usize::from(t.group))?;
            let fp = info
                .get(t.rule as usize)?
                .groups
                .get(usize::from(t.group))?
                .fp?;
            let by_fp = match g.items.get(fp)? {
                Item::Content(c) if !c.negated && !c.is_relative() => c
                    .depth
                    .map(|d| u64::from(c.offset.unwrap_or(0)) + u64::from(d)),
                _ => None,
            };
            // A length condition on the buffer (`dsize`, `bsize`) bounds every occurrence in one it can match.
            let by_len = g
                .items
                .iter()
                .filter_map(|it| match it {
                    Item::Len { max, .. } => Some(*max),
                    _ => None,
                })
                .min();
            match (by_fp, by_len) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        let [s0, s1] = stream;
        let [sa0, sa1] = stream_always;
        let [p0, p1] = packet;
        let [pa0, pa1] = packet_always;
        let stream = [
            PortTables::build(&rules, &s0, sa0, grouped, false, None),
            PortTables::build(&rules, &s1, sa1, grouped, false, None),
        ];
        let packet = [
            PortTables::build(&rules, &p0, pa0, grouped, true, Some(&bound)),
            PortTables::build(&rules, &p1, pa1, grouped, true, Some(&bound)),
        ];
        let [t0, t1] = tcp_packet;
        let [ta0, ta1] = tcp_packet_always;
        let tcp_packet = [
            PortTables::build(&rules, &t0, ta0, grouped, false, Some(&bound)),
            PortTables::build(&rules, &t1, ta1, grouped, false, Some(&bound)),
        ];
        let http: Vec<Table> = http.into_iter().map(|(e, a)| Table::build(&e, a)).collect();
        let transformed = transformed
            .into_iter()
            .map(|(b, c, e, a)| (b, c, Table::build(&e, a)))
            .collect();
        let max_pat = stream.iter().map(PortTables::max_len).max().unwrap_or(0) as u64;
        let retain = retain.max(max_pat).min(2 * window + MAX_PATTERN as u64 + 2) as usize;
        let header_only = header_only.map(|list| AddrIndex::build(&rules, &list, grouped));
        let mut group_names = crate::group::group_names();
        let mut packet = packet;
        let mut tcp_packet = tcp_packet;
        let mut stream = stream;
        for (kind, tables) in [
            ("stream", &mut stream),
            ("datagram", &mut packet),
            ("tcp-packet", &mut tcp_packet),
        ] {
            for pt in tables.iter_mut() {
                pt.base = group_names.len() as u32;
                for i in 0..pt.len() {
                    group_names.push(format!("{kind}, {}", pt.name(i)));
                }
            }
        }
        let header_needs = rules
            .iter()
            .map(|r| crate::header::HeaderNeeds {
                raw: r
                    .packet_groups
                    .iter()
                    .any(|(g, _)| g.buffer.is_raw_header()),
                ..crate::header::HeaderNeeds::of(&r.header)
            })
            .fold(crate::header::HeaderNeeds::default(), |a, b| a.union(b));
        // The single-TCP-packet patterns ride in the stream's scan (after `retain` above: a rider never needs the
        // tail, only occurrences wholly inside a packet count). Ungrouped, each keeps its own pass, which the
        // grouping tests compare against.
        if grouped {
            for (s, t) in stream.iter_mut().zip(&tcp_packet) {
                s.carry_riders(t);
            }
        }
        let absent = rules
            .iter()
            .enumerate()
            .flat_map(|(ri, r)| {
                r.groups.iter().enumerate().filter_map(move |(gi, g)| {
                    matches!(g.items.first(), Some(Item::Absent { .. })).then_some((
                        g.buffer,
                        Target {
                            rule: ri as u32,
                            group: gi as u8,
                        },
                    ))
                })
            })
            .collect();
        let http_partial_max = if grouped {
            crate::scan::MAX_HTTP_PARTIAL
        } else {
            let multi = rules.iter().filter(|r| r.groups.len() >= 2).count();
            (multi * (crate::scan::HTTP_TX_WINDOW as usize + 1)).max(crate::scan::MAX_HTTP_PARTIAL)
        };
        RuleSet {
            http_partial_max,
            absent,
            header_needs,
            rules,
            info,
            stream,
            packet,
            tcp_packet,
            flowbit_names: Vec::new(),
            flowint_names: Vec::new(),
            var_names: Default::default(),
            header_only,
            http,
            transformed,
            retain,
            pcre_count,
            group_names,
            stored,
            datasets: crate::dataset::Datasets::default(),
        }
    }
}

/// The prefilter pattern of a content: the whole content, or its last [`MAX_PATTERN`] bytes.
fn fp_bytes(c: &Content) -> Vec<u8> {
    c.bytes[c.bytes.len().saturating_sub(MAX_PATTERN)..].to_vec()
}

fn fp_len(g: &Group, gi: &GroupInfo) -> u64 {
    match gi.fp.and_then(|i| g.items.get(i)) {
        Some(Item::Content(c)) => c.bytes.len() as u64,
        _ => 0,
    }
}

/// Chooses the fast pattern and derives the stream window of a group.
fn group_info(g: &Group, window: u64) -> GroupInfo {
    let positives = || {
        g.items.iter().enumerate().filter_map(|(i, it)| match it {
            Item::Content(c) if !c.negated => Some((i, &**c)),
            _ => None,
        })
    };
    let fp = positives()
        .find(|(_, c)| c.fast_pattern)
        .or_else(|| {
            positives().fold(
                None,
                |best: Option<(usize, &Content)>, (i, c): (usize, &Content)| match best {
                    Some((_, b)) if b.bytes.len() >= c.bytes.len() => best,
                    _ => Some((i, c)),
                },
            )
        })
        .map(|(i, _)| i);
    let fp_only = match (fp, g.items.as_slice()) {
        (Some(0), [Item::Content(c)]) => !c.is_relative() && c.bytes.len() <= MAX_PATTERN,
        _ => false,
    };
    let monotone = g.items.iter().all(|it| match it {
        Item::Content(c) => !c.negated && !c.endswith,
        Item::Pcre(p, _) => !p.negated && !p.end_sensitive,
        Item::DataAt { negated, .. } => !negated,
        Item::Len { .. }
        | Item::Absent { .. }
        | Item::Rpc(_)
        | Item::Byte(_)
        | Item::Base64(_)
        | Item::Tls(_)
        | Item::Dce(_)
        | Item::Asn1(_)
        | Item::Dataset(_)
        | Item::Num { .. }
        | Item::NumIn { .. }
        | Item::File(_)
        | Item::Entropy(_) => false,
    });
    // Absolute bound: every item's end is tied to the buffer start (offset+depth, or within a bounded cursor).
    let mut abs_end: Option<u64> = Some(0);
    let mut cursor_max: Option<u64> = Some(0);
    for it in &g.items {
        let end = match it {
            Item::Content(c) if c.is_relative() => match (cursor_max, c.within) {
                (Some(cm), Some(w)) => Some(
                    (cm as i64 + i64::from(c.distance.unwrap_or(0)) + i64::from(w)).max(0) as u64,
                ),
                _ => None,
            },
            Item::Content(c) => c
                .depth
                .map(|d| u64::from(c.offset.unwrap_or(0)) + u64::from(d)),
            Item::Pcre(..) => None,
            Item::DataAt {
                n, relative: false, ..
            } => Some(u64::from(*n) + 1),
            Item::DataAt {
                n, relative: true, ..
            } => cursor_max.map(|c| c + u64::from(*n)),
            // The length of the whole buffer is no position; nor are the records at its start.
            Item::Len { .. }
            | Item::Absent { .. }
            | Item::Rpc(_)
            | Item::Tls(_)
            | Item::Dce(_)
            | Item::Dataset(_)
            | Item::Num { .. }
            | Item::NumIn { .. }
            | Item::File(_)
            | Item::Entropy(_) => Some(0),
            // A number read at a position that may come from another number; a decode of unknown length.
            Item::Byte(_) | Item::Base64(_) | Item::Asn1(_) => None,
        };
        abs_end = match (abs_end, end) {
            (Some(a), Some(e)) => Some(a.max(e)),
            _ => None,
        };
        if matches!(it, Item::Content(c) if !c.negated)
            || matches!(it, Item::Pcre(p, _) if !p.negated)
        {
            cursor_max = end;
        }
    }
    let abs_end = abs_end.filter(|&e| e > 0 && e <= 2 * window);
    // Relative bound: a chain where every item after the first is tied to the previous one by `within`.
    let mut span: Option<u64> = None;
    for (i, it) in g.items.iter().enumerate() {
        span = match (i, it) {
            (0, Item::Content(c)) => Some(c.bytes.len() as u64),
            (_, Item::Content(c)) if c.is_relative() => match (span, c.within) {
                (Some(s), Some(w)) => {
                    Some(s + u64::from(c.distance.unwrap_or(0).unsigned_abs()) + u64::from(w))
                }
                _ => None,
            },
            (
                _,
                Item::DataAt {
                    n, relative: true, ..
                },
            ) => span.map(|s| s + u64::from(*n)),
            (_, Item::Len { .. }) => span,
            _ => None,
        };
        if span.is_none() {
            break;
        }
    }
    let bound = span.map_or(window, |s| s.min(window));
    GroupInfo {
        plan: Plan::new(g),
        fp,
        fp_only,
        back: bound,
        fwd: bound,
        abs_end,
        monotone,
    }
}

/// The rule files `paths` name: a file stands for itself, a directory for the `*.rules` files directly in it, in
/// name order (Emerging Threats ships as such a directory). A directory without one is an error.
pub fn rule_files<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<std::path::PathBuf>, Error> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        let path = p.as_ref();
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        if !std::fs::metadata(path).map_err(io)?.is_dir() {
            out.push(path.to_path_buf());
            continue;
        }
        let mut found = Vec::new();
        for entry in std::fs::read_dir(path).map_err(io)? {
            let f = entry.map_err(io)?.path();
            if f.extension().is_some_and(|e| e == "rules") && f.is_file() {
                found.push(f);
            }
        }
        if found.is_empty() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no *.rules file in this directory",
            )));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

impl Rule {
    /// A rule with a single case-sensitive content on any IP traffic: `alert ip any any -> any any
    /// (content:"…"; sid:N;)`.
    pub fn simple_content(sid: u32, line: usize, bytes: Vec<u8>) -> Rule {
        Rule {
            line,
            file: 0,
            action: rule::Action::Alert,
            proto: Proto::Ip,
            src: crate::addr::AddrSet::any(),
            src_ports: crate::addr::PortSet::any(),
            dst: crate::addr::AddrSet::any(),
            dst_ports: crate::addr::PortSet::any(),
            bidirectional: false,
            ip_version: None,
            tcp_inspect: rule::TcpInspect::Stream,
            app_layer: Vec::new(),
            flow_dir: FlowDir::Any,
            flow_state: rule::FlowState::Any,
            sid,
            gid: 1,
            rev: 1,
            msg: std::sync::Arc::from(""),
            classtype: None,
            category: std::sync::Arc::from(""),
            severity: 3,
            metadata: std::sync::Arc::from([]),
            services: Vec::new(),
            flowbits: Vec::new(),
            xbits: Vec::new(),
            tags: Vec::new(),
            noalert: false,
            alert: false,
            target: None,
            threshold: None,
            header: Vec::new(),
            stream_size: Vec::new(),
            stream_only: false,
            packet_groups: Vec::new(),
            groups: vec![Group {
                transforms: Vec::new(),
                buffer: Buffer::Payload,
                items: vec![Item::Content(Box::new(Content::plain(bytes)))],
            }],
        }
    }
}
