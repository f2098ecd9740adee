//! Where a run's output goes while it runs: the events (EVE, through the rules' thresholds), the cost records, the
//! periodic `stats` records, and at the end the rules profile.

use std::time::Instant;

use anyhow::Context;
use flowbundle_inspect::cost::{CostRecord, CostWriter};
use flowbundle_inspect::rules::{RuleSet, ThresholdTable};
use flowbundle_inspect::{AlertFilter, EngineStats, Event, Piece};
use flowbundle_sinks::{EveWriter, RunInfo, StatsRecord};

/// Most rules and rule groups listed in a rules profile.
pub const PROFILE_TOP: usize = 40;

/// Writes the rules profile of a run (every input's, summed) to `path`, or standard error for `-`.
pub fn write_rules_profile<P, I>(
    path: &std::path::Path,
    rules: Option<&RuleSet>,
    reports: &[(flowbundle_inspect::Finished, P, I)],
) -> anyhow::Result<()> {
    let Some(rules) = rules else {
        eprintln!("warning: --rules-profile without --rules or --content-hex: no rules to profile");
        return Ok(());
    };
    let mut total = flowbundle_inspect::rules::RulesProfile::default();
    for (finished, _, _) in reports {
        if let Some(p) = &finished.rules_profile {
            total.merge(p);
        }
    }
    let text = total.report(rules, PROFILE_TOP);
    if path.as_os_str() == "-" {
        eprint!("{text}");
        return Ok(());
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Where events go: EVE (or nowhere), through the rules' thresholds when they have any.
pub struct Sink {
    pub eve: Option<EveWriter<crate::Output>>,
    /// `threshold`/`detection_filter`: applied here, where events arrive in input order in both the
    /// single-threaded loop and the parallel merge (see `flowbundle_inspect::alert_filter`).
    pub filter: Option<AlertFilter>,
    /// The filters of rule sets a reload replaced (their suppressed alerts still correct the totals).
    pub retired_filters: Vec<AlertFilter>,
    /// The rule set of the last reload (the rules profile names its rules).
    pub reloaded_rules: Option<std::sync::Arc<RuleSet>>,
    /// A live run's signals: SIGHUP reopens an EVE file.
    pub signals: Option<flowbundle_inspect::Signals>,
    pub hangups_seen: u64,
    /// A live run flushes its EVE output every second, so readers of the file see lines as they come.
    pub last_flush: Instant,
    /// IPS mode, for the filters of reloaded rule sets.
    pub ips: bool,
}

impl Sink {
    /// A run's event sink, its EVE output opened: `target` when the EVE output is one of Suricata's kinds (a file
    /// appended to and reopened, a Unix socket, Redis; written with `waits`), else `output` (`-` for standard
    /// output, a file written whole and renamed into place at the end), else none. An output that is one of
    /// `inputs` (every file the run reads) is refused. `signals`: a live run's (SIGHUP reopens an EVE file).
    pub fn open(
        target: Option<flowbundle_sinks::Target>,
        output: Option<&std::path::Path>,
        waits: flowbundle_sinks::Waits,
        inputs: &[&std::path::Path],
        eve: flowbundle_sinks::EveOptions,
        signals: Option<flowbundle_inspect::Signals>,
        ips: bool,
    ) -> anyhow::Result<Sink> {
        let out = match (target, output) {
            (Some(t), _) => {
                if let flowbundle_sinks::Target::Regular(p) = &t {
                    flowbundle_ingest::refuse_input_as_output(p, inputs)?;
                }
                let what = t.to_string();
                Some(crate::Output::Eve(
                    flowbundle_sinks::EveOutput::open_with(t, waits)
                        .map_err(|e| anyhow::anyhow!("EVE output {what}: {e}"))?,
                ))
            }
            (None, Some(p)) => Some(crate::Output::open(p, inputs)?),
            (None, None) => None,
        };
        Ok(Sink {
            eve: out.map(|o| EveWriter::with_options(o, eve)),
            filter: None,
            retired_filters: Vec::new(),
            reloaded_rules: None,
            signals,
            hangups_seen: 0,
            last_flush: Instant::now(),
            ips,
        })
    }

    /// In a live run, between events: reopens the EVE file after SIGHUP (logrotate), and flushes the output once a
    /// second.
    pub fn maintain(&mut self) -> anyhow::Result<()> {
        let Some(sig) = self.signals else {
            return Ok(());
        };
        let Some(w) = self.eve.as_mut() else {
            return Ok(());
        };
        let hangups = sig.hangups();
        if hangups != self.hangups_seen {
            self.hangups_seen = hangups;
            if let crate::Output::Eve(o) = w.get_mut() {
                o.reopen()
                    .with_context(|| format!("reopening {}", o.target()))?;
                if matches!(o.target(), flowbundle_sinks::Target::Regular(_)) {
                    eprintln!("eve: reopened {} (SIGHUP)", o.target());
                }
            }
        }
        if self.last_flush.elapsed() >= std::time::Duration::from_secs(1) {
            self.last_flush = Instant::now();
            w.flush().context("writing EVE output")?;
        }
        Ok(())
    }

    /// From the next event on, the thresholds of a reloaded set; the summary's rule counts become its own.
    pub fn adopt(&mut self, l: &crate::reload::Loaded, info: &mut RunInfo) {
        let filter = l
            .rules
            .as_deref()
            .and_then(|r| AlertFilter::with_config(r, &l.threshold, ThresholdTable::default()))
            .map(|f| f.ips(self.ips));
        if let Some(old) = std::mem::replace(&mut self.filter, filter) {
            self.retired_filters.push(old);
        }
        self.reloaded_rules = l.rules.clone();
        info.rules = l.rules_info.clone();
        info.signatures = l.signatures_info;
        // Alerts of the sets before stay in the hit table: their names stay, the new set's win.
        for (sid, name) in &l.rule_names {
            match info.rule_names.iter_mut().find(|(s, _)| s == sid) {
                Some(e) => e.1.clone_from(name),
                None => info.rule_names.push((*sid, name.clone())),
            }
        }
    }

    pub fn write(&mut self, events: &[Event]) -> anyhow::Result<()> {
        match (&mut self.filter, &mut self.eve) {
            (None, Some(w)) => w.write_all(events).context("writing EVE output")?,
            (None, None) => {}
            (Some(f), eve) => {
                for e in events {
                    // A rate filter may change what is written (the alert's action, a flow's action).
                    if let Some(e) = f.apply(e)
                        && let Some(w) = eve.as_mut()
                    {
                        w.write(&e).context("writing EVE output")?;
                    }
                }
            }
        }
        Ok(())
    }

    pub fn write_piece(&mut self, p: Piece<'_>) -> anyhow::Result<()> {
        match p {
            // Lines rendered on the workers: with a filter, of events it keeps as they are
            // (`EventSender::whole_when`).
            Piece::Rendered(n, bytes) => {
                if let Some(w) = &mut self.eve {
                    w.write_rendered(bytes, n).context("writing EVE output")?
                }
            }
            Piece::RenderedParts(n, parts) => {
                if let Some(w) = &mut self.eve {
                    w.write_rendered_parts(parts, n)
                        .context("writing EVE output")?
                }
            }
            Piece::Events(evs) => self.write(evs)?,
        }
        Ok(())
    }
}

/// The `stats` records written while the run goes on (`--stats-interval`): when the capture time reaches the next
/// interval, one record with the counters as they stand.
pub struct PeriodicStats {
    every_ns: u64,
    next_ns: Option<u64>,
    start: Instant,
}

impl PeriodicStats {
    /// A record every `every_secs` seconds of capture time, if any.
    pub fn new(every_secs: Option<f64>) -> Option<Self> {
        every_secs.map(|s| PeriodicStats {
            every_ns: ((s * 1e9) as u64).max(1),
            next_ns: None,
            start: Instant::now(),
        })
    }

    /// Whether a record is due now that capture time `ts_ns` has been reached.
    pub fn due(&mut self, ts_ns: u64) -> bool {
        let next = *self
            .next_ns
            .get_or_insert(ts_ns.saturating_add(self.every_ns));
        if ts_ns < next {
            return false;
        }
        self.next_ns = Some(ts_ns.saturating_add(self.every_ns));
        true
    }

    pub fn write(
        &self,
        sink: &mut Sink,
        total: &EngineStats,
        packets_read: u64,
    ) -> anyhow::Result<()> {
        let Some(w) = &mut sink.eve else {
            return Ok(());
        };
        let info = RunInfo {
            packets_read,
            ..RunInfo::default()
        };
        let mut line = Vec::new();
        flowbundle_sinks::render_stats(
            &mut line,
            &StatsRecord {
                now_ns: wall_clock_ns(),
                uptime: self.start.elapsed(),
                total,
                prestage: None,
                info: &info,
                workers: &[],
            },
        );
        w.write_rendered(&line, 1).context("writing EVE output")
    }
}

/// Now, in ns since the Unix epoch.
pub fn wall_clock_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

pub struct CostSink(pub Option<CostWriter<crate::Output>>);

impl CostSink {
    /// Per-packet cost records to `path` (binary, or CSV if the name ends in `.csv`; `-` for standard output),
    /// refused when it is one of `inputs`; none without a path.
    pub fn open(
        path: Option<&std::path::Path>,
        inputs: &[&std::path::Path],
    ) -> anyhow::Result<CostSink> {
        Ok(CostSink(match path {
            Some(p) => {
                let csv = p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
                Some(CostWriter::new(crate::Output::open(p, inputs)?, csv)?)
            }
            None => None,
        }))
    }

    pub fn write(&mut self, recs: &[CostRecord]) -> anyhow::Result<()> {
        if let Some(w) = &mut self.0 {
            for r in recs {
                w.write(r).context("writing cost records")?;
            }
        }
        Ok(())
    }

    /// Flushes the cost records and gives their file its name.
    pub fn finish(self) -> anyhow::Result<()> {
        if let Some(w) = self.0 {
            w.finish().context("flushing cost records")?.finish()?;
        }
        Ok(())
    }
}
