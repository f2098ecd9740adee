//! The end of a run, once [`crate::run`] has returned: the EVE output closed, the cost records finished, the rules
//! profile written, the summaries, and whether the run was whole.

use std::path::Path;
use std::sync::Arc;

use anyhow::bail;
use flowbundle_inspect::rules::RuleSet;
use flowbundle_sinks::Summary;

use crate::drive::{Report, finish_eve, note_written};
use crate::sink::{CostSink, Sink, write_rules_profile};

/// What the end of a run writes, as asked.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ending<'a> {
    /// `-o`: where EVE went (`-` for standard output), if named.
    pub output: Option<&'a Path>,
    /// The summary asked for (it is written anyway without an output).
    pub summary: bool,
    /// `--rules-profile`: where the rules profile goes (`-` for standard error).
    pub rules_profile: Option<&'a Path>,
}

/// Ends a run: closes the EVE output of `sink` (without a summary asked for, one line on standard error says what
/// was written where), finishes `costs`, writes the rules profile (of `rules`, or of the last reload's), hands each
/// report's summary text to `summary` (standard error takes it when EVE went to standard output), and fails when an
/// input could not be read to its end (named when it happened: the output covers what was read, and the exit
/// status says the run was not whole).
pub fn finish(
    ending: Ending<'_>,
    sink: &mut Sink,
    costs: CostSink,
    mut reports: Vec<Report>,
    rules: Option<Arc<RuleSet>>,
    mut summary: impl FnMut(&str) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let eve_to_stdout = ending.output.is_some_and(|p| p.as_os_str() == "-");
    let profiled_rules = sink.reloaded_rules.take().or(rules);
    if let Some((lines, target)) = finish_eve(sink.eve.take(), &mut reports)? {
        // EVE in a file and no summary asked for: one line says what was written.
        let written_to = target.or_else(|| ending.output.map(|p| p.display().to_string()));
        if let Some(out) = written_to.filter(|_| !eve_to_stdout && !ending.summary) {
            note_written(lines, &out, &reports);
        }
    }
    costs.finish()?;
    if let Some(path) = ending.rules_profile {
        write_rules_profile(path, profiled_rules.as_deref(), &reports)?;
    }
    // A live run's reloaded sets (the last one) are left to the process's end as the loaded ones are.
    std::mem::forget(profiled_rules);
    if ending.summary || ending.output.is_none() {
        for (finished, prestage, info) in &reports {
            let text = Summary {
                finished,
                prestage: Some(prestage),
                info,
            }
            .to_string();
            if eve_to_stdout {
                eprint!("{text}");
            } else {
                summary(&text)?;
            }
        }
    }
    let input_errors: u64 = reports.iter().map(|r| r.2.input_errors).sum();
    if input_errors > 0 {
        bail!(
            "{input_errors} input{} could not be read to the end (named above); the output covers the packets \
             before the damage",
            if input_errors == 1 { "" } else { "s" }
        );
    }
    Ok(())
}
