//! `flowbundle config dump`, and the `--config FILE` / `--var NAME=VALUE` options other commands share.
//!
//! The file's layout and what is read from it are described in `flowbundle_inspect::config_file`.

use std::path::PathBuf;

use flowbundle_inspect::ConfigFile;

/// The configuration options of commands that load rules.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// Configuration file in suricata.yaml's layout; its rule variables (vars: address-groups, port-groups) replace
    /// Suricata's defaults. Other sections are not read (a notice names them).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Set a rule variable, over the configuration file and the defaults (repeatable), e.g.
    /// --var HOME_NET=[10.0.0.0/8] --var HTTP_PORTS=[80,8080].
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
}

impl ConfigArgs {
    /// The effective configuration: the defaults, the file, then each `--var`. Says on standard error which
    /// sections of the file were not read.
    pub fn load(&self) -> anyhow::Result<ConfigFile> {
        let mut cfg = match &self.config {
            Some(p) => ConfigFile::load(p)?,
            None => ConfigFile::default(),
        };
        if let Some(p) = &self.config
            && !cfg.ignored.is_empty()
        {
            eprintln!(
                "notice: {}: only `vars` is read; not read: {}",
                p.display(),
                cfg.ignored.join(", ")
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
    /// Print the effective configuration (defaults, then --config, then --var) as YAML, each value with its origin.
    ///
    /// Examples:
    ///   flowbundle config dump
    ///   flowbundle config dump -c site.yaml --var HOME_NET=[10.1.0.0/16]
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
