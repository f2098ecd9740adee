//! What a rule load tells the user: each rule that could not be read as `file:line: reason` (the first
//! [`SHOWN_ERRORS`], the rest counted), every skipped or unreadable rule in a CSV report on request, and a refusal
//! when a non-empty rule set yields no rule at all (a capture given as `--rules` is 17,000 "errors", not a rule set).

use std::io::Write as _;
use std::path::Path;

use flowbundle_inspect::rules::LoadReport;

/// Rule errors printed on standard error; the rest are counted (all of them are in `--rules-report`).
pub const SHOWN_ERRORS: usize = 20;

/// Prints the load's summary and errors, writes the report if asked, and refuses a set of which nothing loaded.
pub fn check(
    report: &LoadReport,
    report_path: Option<&Path>,
    inputs: &[&Path],
) -> anyhow::Result<()> {
    eprintln!("{}", report.summary());
    let file = |i: usize| report.files.get(i).map_or("?", String::as_str);
    for e in report.errors.iter().take(SHOWN_ERRORS) {
        eprintln!("{}:{}: {}", file(e.file), e.line, e.message);
    }
    if report.errors_total > SHOWN_ERRORS {
        eprintln!(
            "... and {} more rule errors{}",
            report.errors_total - SHOWN_ERRORS,
            if report_path.is_some() {
                " (all in the rules report)"
            } else {
                " (--rules-report FILE lists them all)"
            }
        );
    }
    if let Some(path) = report_path {
        crate::output::write_output(path, inputs, csv(report))?;
    }
    if report.loaded == 0 && report.rules_read > 0 {
        let first = report
            .errors
            .first()
            .map(|e| format!(" (first: {}:{}: {})", file(e.file), e.line, e.message))
            .unwrap_or_default();
        anyhow::bail!(
            "no rule loaded from {}: {} errors, {} skipped{first}",
            report.files.join(", "),
            report.errors_total,
            report.skipped
        );
    }
    Ok(())
}

/// The report as CSV: `file,line,sid,outcome,reason`, one row per skipped (`skipped`) or unreadable (`error`) rule.
pub fn csv(report: &LoadReport) -> Vec<u8> {
    let mut out = Vec::new();
    let file = |i: usize| report.files.get(i).map_or("?", String::as_str);
    let _ = writeln!(out, "file,line,sid,outcome,reason");
    let mut rows: Vec<(usize, usize, String, &str, &str)> = report
        .skipped_rules
        .iter()
        .map(|s| {
            let sid = s.sid.map(|x| x.to_string()).unwrap_or_default();
            (s.file, s.line, sid, "skipped", s.reason.as_str())
        })
        .chain(
            report
                .errors
                .iter()
                .map(|e| (e.file, e.line, String::new(), "error", e.message.as_str())),
        )
        .collect();
    rows.sort_by_key(|r| (r.0, r.1));
    for (f, line, sid, outcome, reason) in rows {
        let _ = writeln!(
            out,
            "{},{line},{sid},{outcome},{}",
            field(file(f)),
            field(reason)
        );
    }
    out
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
