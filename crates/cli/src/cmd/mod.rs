//! One module per command group; each owns its clap arguments and a `run` function.

/// `print!` to standard output that returns a failed write (a closed pipe, a full disk) from the enclosing function as
/// an error instead of panicking; `main` exits quietly on a closed pipe and with one line on anything else.
///
/// The text goes to standard error instead when the command's JSON report goes to standard output (`--json -`, see
/// [`json_output`]), so that the two never mix.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(crate::cmd::text_output(), $($arg)*).map_err(crate::cmd::stdout_error)?
    }};
}

/// `println!` with the error handling of [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(crate::cmd::text_output(), $($arg)*).map_err(crate::cmd::stdout_error)?
    }};
}

/// A failed write to standard output, as an error `main` can recognise (a closed pipe is not a failure).
pub use flowbundle_run::output::stdout_error;

/// Set when the JSON report takes standard output: the text report then goes to standard error.
static TEXT_ON_STDERR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The one `--json OUT` convention of every command that writes a JSON report: the option takes a value (so it never
/// swallows the positional argument after it), a file name or `-` for standard output. With `-` the JSON is all
/// that goes to standard output and the text report moves to standard error; with a file the text report stays on
/// standard output. Call it before the command prints anything; it returns `json` for chaining.
pub fn json_output(json: Option<&std::path::Path>) -> Option<&std::path::Path> {
    if json.is_some_and(|p| p.as_os_str() == "-") {
        TEXT_ON_STDERR.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    json
}

/// [`json_output`] at a command's start, and a JSON file refused there (before any work) when it is one of `inputs`.
pub fn json_start<P: AsRef<std::path::Path>>(
    json: Option<&std::path::Path>,
    inputs: impl IntoIterator<Item = P>,
) -> anyhow::Result<()> {
    if let Some(out) = json_output(json)
        && out.as_os_str() != "-"
    {
        check_output(out, inputs)?;
    }
    Ok(())
}

/// Where [`out!`] and [`outln!`] write: standard output, or standard error under `--json -`.
pub fn text_output() -> Box<dyn std::io::Write> {
    if TEXT_ON_STDERR.load(std::sync::atomic::Ordering::Relaxed) {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    }
}

pub mod bench;
pub mod config;
pub mod demo;
pub mod eve_output;
pub mod hetero;
pub mod inspect;

/// A streamed output (standard output, a file renamed into place at the end, an EVE output).
pub use flowbundle_run::Output;
pub mod simulate;
pub mod trace;

/// The machine's cores (1 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// One meaning of `--threads N` across commands: `0` is every core; a count above the core count runs, with a
/// warning (the threads then share cores, so timings say little).
pub fn thread_count(n: usize) -> usize {
    let cores = cores();
    match n {
        0 => cores,
        n => {
            if n > cores {
                eprintln!(
                    "warning: --threads {n} is more than the {cores} cores of this machine: threads share cores"
                );
            }
            n
        }
    }
}

/// A `--threads` list (`bench`, `demo`): each count as [`thread_count`] reads it, each at most `max`.
pub fn thread_counts(list: &[usize], max: usize) -> anyhow::Result<Vec<usize>> {
    if list.is_empty() {
        anyhow::bail!("--threads needs at least one count");
    }
    let counts: Vec<usize> = list.iter().map(|&n| thread_count(n)).collect();
    if let Some(n) = counts.iter().find(|&&n| n > max) {
        anyhow::bail!(
            "--threads {n} is out of range: counts go from 1 to {max} (0 for every core)"
        );
    }
    Ok(counts)
}

/// `--synth` of `bench` and `simulate`: a warning when the profile cannot make the packets asked (a profile scaled
/// down keeps its per-connection cap), so that a shorter trace is not measured as if it were the one asked for.
pub fn warn_short_synth(name: &str, cfg: &flowbundle_trace::synth::SynthConfig) {
    if let Err(e) = cfg.check_deliverable() {
        eprintln!(
            "warning: --synth {name}: {e}; running on those (`flowbundle trace synth --profile {name} --packets N` \
             names the fewest that deliver N)"
        );
    }
}

/// The `--scheduler` list of `bench` and `simulate`: `all` means every policy; any other name must be a known one,
/// in any spelling the scheduler crate accepts (`lfb_affinity`, `lfb_bounded`), and is reported by its canonical name.
pub fn scheduler_list(names: &[String]) -> anyhow::Result<Vec<String>> {
    let all = flowbundle_scheduler::ALL;
    if names.iter().any(|s| s == "all") {
        return Ok(all.iter().map(|s| s.to_string()).collect());
    }
    names
        .iter()
        .map(|s| match flowbundle_scheduler::canonical(s) {
            Some(name) => Ok(name.to_string()),
            None => anyhow::bail!("unknown scheduler `{s}` (known: {})", all.join(", ")),
        })
        .collect()
}

/// Refuse an output path that names one of the inputs (the same file, however spelled); see
/// [`flowbundle_ingest::output`], where the rule lives.
pub fn check_output<P: AsRef<std::path::Path>>(
    output: &std::path::Path,
    inputs: impl IntoIterator<Item = P>,
) -> anyhow::Result<()> {
    flowbundle_ingest::refuse_input_as_output(output, inputs)?;
    Ok(())
}

/// Write a whole output file (a JSON report), through a temporary file renamed at the end.
pub use flowbundle_run::output::write_output;

#[cfg(test)]
mod tests {
    use super::scheduler_list;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scheduler_list_takes_every_spelling_and_names_each_policy_canonically() {
        let got = scheduler_list(&names(&["lfb_bounded", "dh", "lfb_affinity"])).unwrap();
        assert_eq!(got, names(&["lfb-bounded", "dh", "lfb-affinity"]));
        assert_eq!(
            scheduler_list(&names(&["all"])).unwrap().len(),
            flowbundle_scheduler::ALL.len()
        );
        let err = scheduler_list(&names(&["lfb", "fastest"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown scheduler `fastest`"), "{err}");
    }
}
