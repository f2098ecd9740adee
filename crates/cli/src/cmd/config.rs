//! `flowbundle config dump`, and the `--config FILE` / `--var NAME=VALUE` options other commands share.
//!
//! The file's layout and what is read from it are described in `flowbundle_inspect::config_file`.

use std::path::PathBuf;

use flowbundle_inspect::ConfigFile;

/// The configuration options of commands that load rules.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// Configuration file in suricata.yaml's layout: rule variables (vars), rule-files under default-rule-path,
    /// the eve-log output's filename (used without -o), flow-timeouts, stream.midstream and
    /// stream.reassembly.memcap. Other sections and keys are not read (a notice names them).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Set a key of the configuration by its dotted path, over the file (repeatable), as Suricata's --set: e.g.
    /// --set stream.midstream=false --set flow-timeouts.tcp.established=3600. In the `outputs` list an item is named
    /// by its key or its position: --set outputs.eve-log.filetype=redis or --set outputs.1.eve-log.redis.port=6380.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,

    /// Set a rule variable, over the configuration file and the defaults (repeatable), e.g.
    /// --var HOME_NET=[10.0.0.0/8] --var HTTP_PORTS=[80,8080].
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
}

impl ConfigArgs {
    /// The effective configuration: the defaults, the file with each `--set`, then each `--var`. Says on standard
    /// error which sections and keys of the file were not read.
    pub fn load(&self) -> anyhow::Result<ConfigFile> {
        let mut cfg = ConfigFile::load_with(self.config.as_deref(), &self.sets)?;
        if !cfg.ignored.is_empty() {
            const SHOWN: usize = 12;
            let more = cfg.ignored.len().saturating_sub(SHOWN);
            eprintln!(
                "notice: {}: not read: {}{} (flowbundle has no counterpart)",
                self.config
                    .as_deref()
                    .map_or_else(|| "--set".to_string(), |p| p.display().to_string()),
                cfg.ignored[..cfg.ignored.len().min(SHOWN)].join(", "),
                if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                }
            );
        }
        for v in &self.vars {
            cfg.set_var(v)?;
        }
        cfg.check()?;
        Ok(cfg)
    }
}

/// `flowbundle config ...`
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Print the effective configuration (defaults, then --config with each --set, then --var) as YAML, each value
    /// with its origin.
    ///
    /// Examples:
    ///   flowbundle config dump
    ///   flowbundle config dump -c site.yaml --var HOME_NET=[10.1.0.0/16]
    ///   flowbundle config dump --set stream.midstream=false
    Dump(ConfigArgs),
}

pub fn run(c: Command) -> anyhow::Result<()> {
    match c {
        Command::Dump(a) => {
            let cfg = a.load()?;
            out!("{}", cfg.dump());
        }
    }
    Ok(())
}
