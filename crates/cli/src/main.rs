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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    logging::init();
    match cli {
        Cli::Demo(a) => cmd::demo::run(a),
        Cli::Trace(c) => cmd::trace::run(c),
        Cli::Inspect(a) => cmd::inspect::run(a),
        Cli::Bench(a) => cmd::bench::run(a),
        Cli::Simulate(a) => cmd::simulate::run(a),
        Cli::Hetero(c) => cmd::hetero::run(c),
    }
}
