//! The `flowbundle` binary: parses arguments and wires the crates together. No logic lives here: each command
//! group is a module under `cmd/` that turns its arguments into calls on the library crates.

use clap::Parser;

mod cmd;
mod logging;

#[derive(Parser)]
#[command(
    name = "flowbundle",
    version,
    about = "Parallel stateful DPI engine and packet-scheduling lab",
    long_about = "flowbundle inspects captures with a stateful DPI engine on every core, and measures how packets \
                  should be scheduled across those cores (ANCS'10 schedulers, L7-filter affinity, RSS, ...)."
)]
enum Cli {
    /// Build a demo trace, inspect it, and compare the schedulers on it (needs nothing outside the repository).
    Demo(cmd::demo::Args),
    /// Trace tools: statistics, synthesis, merging, anonymization, rescaling, cutting.
    #[command(subcommand)]
    Trace(cmd::trace::Command),
    /// Inspect captures: connections, protocols, content rules; writes EVE JSON.
    Inspect(cmd::inspect::Args),
    /// Measure schedulers on a preloaded trace: throughput, latency, reordering, balance.
    Bench(cmd::bench::Args),
    /// Simulate the schedulers on 1 to 64 cores with a cache model.
    Simulate(cmd::simulate::Args),
    /// Packet applications on CPU and OpenCL devices, placed by policy.
    #[command(subcommand)]
    Hetero(cmd::hetero::Command),
    /// The configuration file: print the effective configuration.
    #[command(subcommand)]
    Config(cmd::config::Command),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    logging::init();
    quiet_run_panics();
    let result = match cli {
        Cli::Demo(a) => cmd::demo::run(a),
        Cli::Trace(c) => cmd::trace::run(c),
        Cli::Inspect(a) => cmd::inspect::run(a),
        Cli::Bench(a) => cmd::bench::run(a),
        Cli::Simulate(a) => cmd::simulate::run(a),
        Cli::Hetero(c) => cmd::hetero::run(c),
        Cli::Config(c) => cmd::config::run(c),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The reader went away (`| head`): what it did not read is not wanted; nothing to report.
        Err(e) if closed_pipe(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "flowbundle: {}", one_line(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// A thread of a streaming run that panics abandons the run, which ends with one line naming the thread and the
/// panic's message (`flowbundle: inspection abandoned: worker-1 panicked: ...`): the default hook's own message and
/// backtrace hint before it are left out then, unless `RUST_BACKTRACE` is set (the hook's full report, backtrace
/// included). Every other panic is reported by the default hook as before.
fn quiet_run_panics() {
    if std::env::var_os("RUST_BACKTRACE").is_some() {
        return;
    }
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !flowbundle_worker::panic_reported_by_run() {
            default(info);
        }
    }));
}

/// Whether the error comes from writing to a pipe whose reader has closed it.
fn closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<flowbundle_ingest::Error>()
                .is_some_and(|i| {
                    std::error::Error::source(i)
                        .and_then(|s| s.downcast_ref::<std::io::Error>())
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
                })
    })
}

/// An error and its causes on one line, each cause once: a cause whose text an outer message already carries
/// (`opening x.pcap` over `x.pcap: No such file or directory`) is not repeated.
fn one_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        let mut text = text.lines().next().unwrap_or("").trim();
        // io::Error's ` (os error 2)`: the words before it say it already.
        if let Some(i) = text.find(" (os error ")
            && text.ends_with(')')
        {
            text = &text[..i];
        }
        if text.is_empty() || line.contains(text) {
            continue;
        }
        if line.is_empty() {
            line.push_str(text);
        } else if let Some(rest) = common_tail(&line, text) {
            // `opening x.pcap` + `x.pcap: No such file`: join on the shared name.
            line.push_str(rest);
        } else {
            line.push_str(": ");
            line.push_str(text);
        }
    }
    line
}

/// When `next` starts with the last word of `line` (a path both name), the part of `next` after it.
fn common_tail<'a>(line: &str, next: &'a str) -> Option<&'a str> {
    let last = line.rsplit(' ').next()?;
    (last.len() > 1)
        .then(|| next.strip_prefix(last))
        .flatten()
        .filter(|rest| rest.starts_with(':'))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every command's options, walked from the top: what `--help` shows for each must say what it does.
    fn walk(cmd: &clap::Command, path: &str, problems: &mut Vec<String>) {
        let here = format!("{path} {}", cmd.get_name()).trim().to_string();
        if cmd
            .get_about()
            .is_none_or(|a| a.to_string().trim().is_empty())
        {
            problems.push(format!("`{here}` has no description"));
        }
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            // clap's own --help and --version say what they do.
            if id == "help" || id == "version" || arg.is_hide_set() {
                continue;
            }
            let help = arg
                .get_help()
                .or(arg.get_long_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            if help.trim().is_empty() {
                problems.push(format!("`{here}`: option `{id}` has no description"));
            }
            // Help is for users: no crate paths (`flowbundle_inspect::...`) or source files.
            if help.contains("::") || help.contains(".rs`") || help.contains("crate") {
                problems.push(format!(
                    "`{here}`: option `{id}` points at the code: {help}"
                ));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_name() != "help" {
                walk(sub, &here, problems);
            }
        }
    }

    #[test]
    fn every_option_of_every_command_has_a_description() {
        let cmd = super::Cli::command();
        cmd.clone().debug_assert();
        let mut problems = Vec::new();
        walk(&cmd, "", &mut problems);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        // The walk reached the commands and their options.
        let subs: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
        assert!(
            subs.contains(&"inspect") && subs.contains(&"trace"),
            "{subs:?}"
        );
    }
}
