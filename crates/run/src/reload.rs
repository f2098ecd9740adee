//! `inspect`'s signature and rule sets: loaded at the start, and again while a live run goes on when the operator
//! sends SIGHUP or SIGUSR2 (Suricata's rule-reload signal; SIGHUP also reopens the output files).
//!
//! A reload reads the files the run started with (`--rules` files and directories, `--content-hex`,
//! `--signatures`, the classification and threshold files, with the variables of the configuration) on a thread of
//! its own, so packets keep flowing while a large set compiles; the new sets are then handed to the engine
//! (`flowbundle_inspect::Engine::reload`; in a parallel run through the live reader, which applies them between two
//! packets with none in flight). Before loading, the files are fingerprinted (their names and bytes): when they read
//! the same as the sets in use, nothing is reloaded (logrotate's SIGHUP then costs one read of the files), and a
//! signature set whose files did not change is kept, so flows keep their signature matching state.
//!
//! A reload that fails (a file unreadable or gone, a rule file of which no rule loads) keeps the sets in use and
//! says so in one line on standard error; the run goes on.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use flowbundle_inspect::rules::dataset::{Datasets, Policy, SetDef};
use flowbundle_inspect::rules::{LoadOptions, RuleSet, ThresholdConfig, Vars};
use flowbundle_inspect::signatures::{Options as SigOptions, SignatureSet};
use flowbundle_inspect::{ConfigFile, Signals};
use flowbundle_sinks::{ReloadInfo, RulesInfo};

/// Where a run's signature and rule sets come from.
#[derive(Clone, Debug)]
pub struct DetectionSources {
    pub signatures: Option<PathBuf>,
    pub rules: Vec<PathBuf>,
    pub content_hex: Option<PathBuf>,
    pub classification: Option<PathBuf>,
    pub threshold: Option<PathBuf>,
    pub vars: Vars,
    /// The configuration's `datasets:` sets and policy.
    pub datasets: (Vec<(String, SetDef)>, Policy),
    /// `--rules-report`: rewritten by each load.
    pub rules_report: Option<PathBuf>,
    /// Every file the run reads (no report may overwrite one).
    pub inputs: Vec<PathBuf>,
}

/// A loaded signature and rule set, with what the summary says of them.
#[derive(Clone)]
pub struct Loaded {
    pub signatures: Option<Arc<SignatureSet>>,
    /// Signatures loaded and rejected.
    pub signatures_info: Option<(usize, usize)>,
    pub rules: Option<Arc<RuleSet>>,
    pub rules_info: Option<RulesInfo>,
    pub rule_names: Vec<(u32, String)>,
    pub threshold: ThresholdConfig,
    /// Fingerprints of the signature files and of the rule files (see the module documentation).
    pub fingerprints: (u64, u64),
}

impl DetectionSources {
    /// The classification file of a run: `classification`, else the `classification.config` of the first rules
    /// directory that holds one.
    pub fn new(
        signatures: Option<PathBuf>,
        rules: Vec<PathBuf>,
        content_hex: Option<PathBuf>,
        classification: Option<PathBuf>,
        threshold: Option<PathBuf>,
        conf: &ConfigFile,
    ) -> Self {
        let classification = classification.or_else(|| {
            rules
                .iter()
                .filter(|p| p.is_dir())
                .map(|d| d.join("classification.config"))
                .find(|p| p.is_file())
        });
        DetectionSources {
            signatures,
            rules,
            content_hex,
            classification,
            threshold,
            vars: conf.vars.clone(),
            datasets: (conf.datasets.clone(), conf.dataset_policy.clone()),
            rules_report: None,
            inputs: Vec::new(),
        }
    }

    /// These sources, read by a run of the capture `files`: [`DetectionSources::inputs`] is every file the run reads
    /// (the captures, then the rule sources), which no output or report may overwrite.
    pub fn read_with(mut self, files: &[PathBuf]) -> Self {
        self.inputs = files
            .iter()
            .chain(&self.rules)
            .chain(&self.content_hex)
            .chain(&self.classification)
            .chain(&self.threshold)
            .cloned()
            .collect();
        self
    }

    /// Loads the sets, saying on standard error what was loaded (and every unreadable rule, as `file:line`).
    pub fn load(&self) -> anyhow::Result<Loaded> {
        let fingerprints = self.fingerprints();
        let (signatures, signatures_info) = match &self.signatures {
            Some(dir) => {
                let (set, rejected) = load_signatures(dir)?;
                let info = (set.len(), rejected);
                (Some(Arc::new(set)), Some(info))
            }
            None => (None, None),
        };
        let mut loaded = self.load_rules()?;
        loaded.signatures = signatures;
        loaded.signatures_info = signatures_info;
        loaded.fingerprints = fingerprints;
        Ok(loaded)
    }

    fn load_rules(&self) -> anyhow::Result<Loaded> {
        let mut out = Loaded {
            signatures: None,
            signatures_info: None,
            rules: None,
            rules_info: None,
            rule_names: Vec::new(),
            threshold: ThresholdConfig::default(),
            fingerprints: (0, 0),
        };
        if self.rules.is_empty() && self.content_hex.is_none() {
            return Ok(out);
        }
        if !self.rules.is_empty() && self.content_hex.is_some() {
            bail!("--rules and --content-hex cannot be combined (one rule set per run)");
        }
        let mut config_lines_skipped = 0usize;
        let (set, report) = match &self.content_hex {
            Some(p) => {
                RuleSet::from_content_hex(p).with_context(|| format!("loading {}", p.display()))?
            }
            None => {
                let mut opts = LoadOptions {
                    vars: self.vars.clone(),
                    datasets: Datasets::new(self.datasets.1.clone()),
                    // `engine.init-failure-fatal: yes` (Suricata's `--init-errors-fatal`): a rule that does not load
                    // fails the run, as a bad dataset line does under the same policy.
                    strict: self.datasets.1.init_errors_fatal,
                    ..LoadOptions::default()
                };
                for (name, def) in &self.datasets.0 {
                    opts.datasets
                        .define(name, def.clone())
                        .map_err(|e| anyhow::anyhow!("datasets.{name}: {e}"))?;
                }
                if let Some(path) = &self.classification {
                    let read = read_config_text(path)?;
                    let errors = opts.classifications.parse_config_bytes(&read.text);
                    config_lines_skipped += report_config_errors(
                        path,
                        with_long_lines(
                            &read.long_lines,
                            errors.iter().map(|(l, m)| (*l, m.as_str())),
                        ),
                    );
                }
                if let Some(path) = &self.threshold {
                    let read = read_config_text(path)?;
                    let (tc, errors) = ThresholdConfig::parse_bytes(&read.text, &opts.vars);
                    config_lines_skipped += report_config_errors(
                        path,
                        with_long_lines(
                            &read.long_lines,
                            errors.iter().map(|e| (e.line, e.message.as_str())),
                        ),
                    );
                    out.threshold = tc;
                }
                RuleSet::load_files_with(&self.rules, &opts).context("loading rules")?
            }
        };
        if !report.vars_defaulted.is_empty() {
            eprintln!(
                "notice: rules use variables left at Suricata's defaults: {} (set them with --config or --var)",
                report.vars_defaulted.join(", ")
            );
        }
        let (dataset_errors, dataset_lines_skipped) = set.datasets().skipped_lines();
        report_dataset_errors(dataset_errors, dataset_lines_skipped);
        let read: Vec<&Path> = self.inputs.iter().map(PathBuf::as_path).collect();
        crate::rule_report::check(&report, self.rules_report.as_deref(), &read)?;
        let mut reasons: Vec<(String, usize)> = report.skip_reasons.clone().into_iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.rules_info = Some(RulesInfo {
            loaded: report.loaded,
            skipped: report.skipped,
            errors: report.errors_total,
            skip_reasons: reasons,
            config_lines_skipped,
            dataset_lines_skipped,
        });
        out.rule_names = set
            .rules()
            .iter()
            .map(|r| (r.sid, r.msg.to_string()))
            .collect();
        out.rules = Some(Arc::new(set));
        Ok(out)
    }

    /// Fingerprints of the signature files and of the rule files (rules, content patterns, classification and
    /// threshold files): their paths and bytes. A file that cannot be read counts by its name and error, so a file
    /// that goes away changes the fingerprint (and the load then says why it failed).
    pub fn fingerprints(&self) -> (u64, u64) {
        let mut sigs = std::hash::DefaultHasher::new();
        if let Some(dir) = &self.signatures {
            hash_tree(dir, &mut sigs, 0);
        }
        let mut rules = std::hash::DefaultHasher::new();
        for p in self
            .rules
            .iter()
            .chain(&self.content_hex)
            .chain(&self.classification)
            .chain(&self.threshold)
        {
            hash_tree(p, &mut rules, 0);
        }
        (sigs.finish(), rules.finish())
    }
}

/// Reads a `classification.config` or `threshold.config` whole as bytes, within the rule files' bounds. A line
/// longer than [`flowbundle_inspect::rules::text::MAX_LINE_BYTES`] is left out and numbered (the caller reports it
/// as a line not applied, [`with_long_lines`]); a line that is not UTF-8 is the parser's to skip and report, as a
/// malformed line is.
fn read_config_text(path: &Path) -> anyhow::Result<flowbundle_inspect::rules::text::TextLines> {
    Ok(flowbundle_inspect::rules::text::read_text_lines(
        path,
        flowbundle_inspect::rules::ruleset::MAX_FILE_BYTES,
        flowbundle_inspect::rules::text::MAX_LINE_BYTES,
    )?)
}

/// A configuration file's lines not applied, in line order: the parser's `errors` (in line order) and the lines
/// the reader left out for their length.
fn with_long_lines<'a>(
    long_lines: &[usize],
    errors: impl Iterator<Item = (usize, &'a str)>,
) -> impl Iterator<Item = (usize, &'a str)> {
    const TOO_LONG: &str = "line longer than 65536 bytes, not read";
    const _: () = assert!(flowbundle_inspect::rules::text::MAX_LINE_BYTES == 65536);
    let mut all: Vec<(usize, &'a str)> = long_lines
        .iter()
        .map(|&l| (l, TOO_LONG))
        .chain(errors)
        .collect();
    all.sort_by_key(|e| e.0);
    all.into_iter()
}

/// Hashes `path`: a file's name and bytes, a directory's entries in name order (four levels down at most, as a
/// signature set's protocol folders are).
fn hash_tree(path: &Path, h: &mut impl Hasher, depth: u32) {
    path.hash(h);
    if path.is_dir() {
        if depth > 4 {
            return;
        }
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
            Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(e) => {
                e.kind().hash(h);
                return;
            }
        };
        entries.sort();
        for e in entries {
            hash_tree(&e, h, depth + 1);
        }
        return;
    }
    // Streamed, at most one byte past the largest file a load accepts (a device or a file that never ends is not
    // read whole: the load that follows refuses it).
    let read = std::fs::File::open(path).and_then(|f| {
        let mut src =
            std::io::Read::take(f, flowbundle_inspect::rules::ruleset::MAX_FILE_BYTES + 1);
        let mut buf = [0u8; 8192];
        let mut len = 0u64;
        loop {
            match std::io::Read::read(&mut src, &mut buf) {
                Ok(0) => break Ok(len),
                Ok(n) => {
                    h.write(&buf[..n]);
                    len += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        }
    });
    match read {
        Ok(len) => len.hash(h),
        Err(e) => e.kind().hash(h),
    }
}

/// What a reload thread found.
enum Outcome {
    Loaded(Box<Loaded>),
    /// The files read the same as the sets in use.
    Unchanged,
}

/// Reloads the sets when the operator asks (see the module documentation). Poll it between packets, or where the
/// events are written; it never blocks.
pub struct Reloader {
    sources: Arc<DetectionSources>,
    signals: Signals,
    /// The signal count acted on last.
    seen: u64,
    loading: Option<std::thread::JoinHandle<anyhow::Result<Outcome>>>,
    /// The sets in use: their fingerprints, and the signature set (kept when its files did not change).
    fingerprints: (u64, u64),
    signatures: Option<(Arc<SignatureSet>, (usize, usize))>,
    /// The sets in use, described.
    in_use: String,
    /// What the reloads did.
    pub info: ReloadInfo,
}

/// Now, in ns since the Unix epoch.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Reloader {
    /// A reloader of `sources`, whose sets in use are `loaded`, acting on `signals`.
    pub fn new(sources: DetectionSources, loaded: &Loaded, signals: Signals) -> Self {
        Reloader {
            sources: Arc::new(sources),
            signals,
            // Every signal since the handlers were installed (before the sets were loaded): one that came while
            // they loaded may name files changed after they were read.
            seen: 0,
            loading: None,
            fingerprints: loaded.fingerprints,
            signatures: loaded.signatures.clone().zip(loaded.signatures_info),
            in_use: describe(loaded),
            info: ReloadInfo {
                last_ns: now_ns(),
                ..ReloadInfo::default()
            },
        }
    }

    /// Starts a reload when a signal came since the last one, and returns the sets of a reload that finished
    /// loading (the caller makes them the engine's, then calls [`Reloader::applied`]). A reload that failed or found
    /// nothing changed says so on standard error and returns nothing.
    pub fn poll(&mut self) -> Option<Loaded> {
        if self.loading.is_none() {
            let count = self.signals.hangups() + self.signals.usr2s();
            if count != self.seen {
                self.seen = count;
                self.start();
            }
            return None;
        }
        if !self.loading.as_ref().is_some_and(|h| h.is_finished()) {
            return None;
        }
        let result = self
            .loading
            .take()
            .map(std::thread::JoinHandle::join)
            .map(|r| r.unwrap_or_else(|_| Err(anyhow::anyhow!("the loading thread panicked"))));
        let in_use = &self.in_use;
        match result {
            Some(Ok(Outcome::Loaded(l))) => {
                self.fingerprints = l.fingerprints;
                self.signatures = l.signatures.clone().zip(l.signatures_info);
                Some(*l)
            }
            Some(Ok(Outcome::Unchanged)) => {
                self.info.unchanged += 1;
                eprintln!(
                    "rules: reload asked; the files are unchanged, the sets in use kept ({in_use})"
                );
                None
            }
            Some(Err(e)) => {
                self.info.failed += 1;
                eprintln!("rules: reload failed, the sets in use kept ({in_use}): {e:#}");
                None
            }
            None => None,
        }
    }

    /// The sets `l` (from [`Reloader::poll`]) are the engine's now: says so on standard error.
    pub fn applied(&mut self, l: &Loaded) {
        self.info.applied += 1;
        self.info.last_ns = now_ns();
        self.in_use = describe(l);
        eprintln!("rules: reloaded ({})", self.in_use);
    }

    fn start(&mut self) {
        let sources = Arc::clone(&self.sources);
        let fingerprints = self.fingerprints;
        let signatures = self.signatures.clone();
        eprintln!("rules: reload asked, loading");
        self.loading = Some(std::thread::spawn(move || {
            let now = sources.fingerprints();
            if now == fingerprints {
                return Ok(Outcome::Unchanged);
            }
            let mut l = sources.load_rules()?;
            l.fingerprints = now;
            match signatures {
                // The signature files did not change: the set in use stays (flows keep their matching state).
                Some((set, info)) if now.0 == fingerprints.0 => {
                    l.signatures = Some(set);
                    l.signatures_info = Some(info);
                }
                _ => {
                    let only_sigs = DetectionSources {
                        rules: Vec::new(),
                        content_hex: None,
                        ..(*sources).clone()
                    };
                    let s = only_sigs.load()?;
                    l.signatures = s.signatures;
                    l.signatures_info = s.signatures_info;
                }
            }
            Ok(Outcome::Loaded(Box::new(l)))
        }));
    }

    /// Waits for a reload still loading and drops its result (the run is ending).
    pub fn abandon(&mut self) {
        if let Some(h) = self.loading.take() {
            let _ = h.join();
        }
    }
}

fn describe(l: &Loaded) -> String {
    let mut parts = Vec::new();
    if let Some(r) = &l.rules_info {
        parts.push(format!(
            "{} rules loaded, {} skipped, {} errors",
            r.loaded, r.skipped, r.errors
        ));
    }
    if let Some((n, rejected)) = l.signatures_info {
        parts.push(format!("{n} signatures, {rejected} rejected"));
    }
    if parts.is_empty() {
        parts.push("no rules, no signatures".into());
    }
    parts.join("; ")
}

/// Most lines of a configuration file reported one by one; the rest are counted.
const MAX_CONFIG_ERRORS: usize = 20;

/// Reports a configuration file's unread lines (malformed, or not UTF-8) on standard error as `file:line: reason`,
/// then their count, and returns the count. The run goes on with the lines that were read, as Suricata's does.
pub fn report_config_errors<'a>(
    path: &std::path::Path,
    errors: impl Iterator<Item = (usize, &'a str)>,
) -> usize {
    let mut n = 0usize;
    for (line, message) in errors {
        if n < MAX_CONFIG_ERRORS {
            eprintln!("warning: {}:{line}: {message}", path.display());
        }
        n += 1;
    }
    if n > 0 {
        eprintln!("warning: {}: {n} lines not applied", path.display());
    }
    n
}

/// Reports the dataset files' lines not loaded on standard error as `warning: file:line: reason` (the first
/// [`MAX_CONFIG_ERRORS`]), then their count. The sets hold the lines that were read, as Suricata's do.
fn report_dataset_errors(errors: &[flowbundle_inspect::rules::dataset::LoadError], total: usize) {
    for e in errors.iter().take(MAX_CONFIG_ERRORS) {
        eprintln!("warning: {e}");
    }
    if total > 0 {
        eprintln!("warning: datasets: {total} lines not loaded");
    }
}

/// Loads the L7-filter signatures of `dir`, saying on standard error how many loaded and how many were rejected;
/// returns the set and the number rejected. Every command taking `--signatures` loads them through here.
pub fn load_signatures(dir: &Path) -> anyhow::Result<(SignatureSet, usize)> {
    let (set, report) = SignatureSet::load_dir(dir, &SigOptions::default())
        .with_context(|| format!("loading signatures from {}", dir.display()))?;
    eprintln!(
        "signatures: {} loaded, {} rejected from {}",
        set.len(),
        report.rejected.len(),
        dir.display()
    );
    Ok((set, report.rejected.len()))
}
