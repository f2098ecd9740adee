//! `inspect`'s EVE output as Suricata's `eve-log` output names it: `--eve-filetype` (or the configuration's
//! `outputs.eve-log.filetype`) `regular`, `unix_dgram`, `unix_stream` or `redis`, the file or socket from `-o` (or
//! the configuration's `filename`), Redis from `--redis-server/-port/-mode/-key` over the configuration's
//! `redis:` settings (Suricata's defaults: 127.0.0.1, 6379, `list`, `suricata`). What each does when its receiver
//! is slow or gone is `flowbundle_sinks::output`'s policy.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use flowbundle_inspect::ConfigFile;
use flowbundle_sinks::{FileType, RedisMode, RedisTarget, Target, Waits};

/// The EVE options of the command line.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct EveArgs {
    /// Where EVE goes, as Suricata's eve-log filetype: `regular` (a file; in a live run appended to and reopened on
    /// SIGHUP, for logrotate), `unix_dgram` or `unix_stream` (-o names a listening Unix socket), `redis` (see
    /// --redis-server; no -o needed). A socket or Redis that is slow or gone never holds the sensor up: what cannot
    /// be shipped is dropped and counted in the summary. Default: the configuration's, else regular.
    #[arg(long, value_name = "TYPE")]
    pub eve_filetype: Option<FileType>,

    /// With --eve-filetype redis: the server (default: the configuration's redis.server, else 127.0.0.1).
    #[arg(long, value_name = "HOST")]
    pub redis_server: Option<String>,

    /// With --eve-filetype redis: the port (default: the configuration's, else 6379).
    #[arg(long, value_name = "PORT")]
    pub redis_port: Option<u16>,

    /// With --eve-filetype redis: `list`/`lpush` (LPUSH to the key), `rpush`, or `channel`/`publish` (PUBLISH on it)
    /// (default: the configuration's, else list).
    #[arg(long, value_name = "MODE")]
    pub redis_mode: Option<RedisMode>,

    /// With --eve-filetype redis: the list or channel (default: the configuration's, else suricata).
    #[arg(long, value_name = "KEY")]
    pub redis_key: Option<String>,

    /// With --eve-filetype unix_dgram, unix_stream or redis: seconds a connection, a write or a Redis reply may
    /// take before the batch is lost (counted) and the output retries a second later (default: the eve-log
    /// output's write-timeout, else 2).
    #[arg(long, value_name = "SECS")]
    pub eve_write_timeout: Option<String>,

    /// With --eve-filetype unix_dgram, unix_stream or redis: seconds the end of the run ships the events still
    /// queued before counting the rest as lost (default: the eve-log output's finish-timeout, else 5).
    #[arg(long, value_name = "SECS")]
    pub eve_finish_timeout: Option<String>,
}

fn setting<'a>(conf: &'a ConfigFile, key: &str) -> Option<(&'a str, &'a str)> {
    conf.eve_settings
        .iter()
        .rev()
        .find(|(k, _, _)| k == key)
        .map(|(_, v, from)| (v.as_str(), from.as_str()))
}

impl EveArgs {
    /// The waits of a socket or Redis output: each from the command line, else the configuration's eve-log key
    /// (`write-timeout`, `finish-timeout`: flowbundle's own, Suricata's eve-log has none), else the default; a bad
    /// value is an error naming where it was set.
    pub fn waits(&self, conf: &ConfigFile) -> anyhow::Result<Waits> {
        let d = Waits::default();
        let one = |given: &Option<String>, flag: &str, key: &str, default| match (
            given,
            setting(conf, key),
        ) {
            (Some(v), _) => Waits::parse_secs(flag, v).map_err(anyhow::Error::msg),
            (None, Some((v, from))) => {
                Waits::parse_secs(&format!("{from}: outputs.eve-log.{key}"), v)
                    .map_err(anyhow::Error::msg)
            }
            (None, None) => Ok(default),
        };
        let waits = Waits {
            io: one(
                &self.eve_write_timeout,
                "--eve-write-timeout",
                "write-timeout",
                d.io,
            )?,
            finish: one(
                &self.eve_finish_timeout,
                "--eve-finish-timeout",
                "finish-timeout",
                d.finish,
            )?,
        };
        Ok(waits)
    }

    /// The filetype in force.
    pub fn filetype(&self, conf: &ConfigFile) -> anyhow::Result<FileType> {
        match (self.eve_filetype, setting(conf, "filetype")) {
            (Some(t), _) => Ok(t),
            (None, Some((v, from))) => v
                .parse()
                .map_err(|e: String| anyhow::anyhow!("{from}: {e}")),
            (None, None) => Ok(FileType::Regular),
        }
    }

    /// Where EVE goes, when it is not a plain output file of an offline run: `None` for a regular file of an offline
    /// run (written whole through a temporary file, as every output file), or no output at all. `output` is `-o`
    /// (or the configuration's `filename`); a live run appends to a regular file.
    pub fn target(
        &self,
        conf: &ConfigFile,
        output: Option<&Path>,
        live: bool,
    ) -> anyhow::Result<Option<Target>> {
        let filetype = self.filetype(conf)?;
        let redis_given = self.redis_server.is_some()
            || self.redis_port.is_some()
            || self.redis_mode.is_some()
            || self.redis_key.is_some();
        if redis_given && filetype != FileType::Redis {
            bail!(
                "--redis-server, --redis-port, --redis-mode and --redis-key apply to --eve-filetype redis"
            );
        }
        if (self.eve_write_timeout.is_some() || self.eve_finish_timeout.is_some())
            && filetype == FileType::Regular
        {
            bail!(
                "--eve-write-timeout and --eve-finish-timeout apply to --eve-filetype unix_dgram, unix_stream and \
                 redis (a regular file does not wait)"
            );
        }
        let path = |what: &str| -> anyhow::Result<PathBuf> {
            match output {
                Some(p) if p.as_os_str() != "-" => Ok(p.to_path_buf()),
                _ => bail!(
                    "--eve-filetype {what} needs the socket's path as -o PATH (or the eve-log filename)"
                ),
            }
        };
        Ok(match filetype {
            FileType::Regular => match output {
                Some(p) if live && p.as_os_str() != "-" => Some(Target::Regular(p.to_path_buf())),
                _ => None,
            },
            FileType::UnixDgram => Some(Target::UnixDgram(path("unix_dgram")?)),
            FileType::UnixStream => Some(Target::UnixStream(path("unix_stream")?)),
            FileType::Redis => {
                let d = RedisTarget::default();
                let port = match (self.redis_port, setting(conf, "redis.port")) {
                    (Some(p), _) => p,
                    (None, Some((v, from))) => v
                        .parse()
                        .with_context(|| format!("{from}: redis.port {v:?}"))?,
                    (None, None) => d.port,
                };
                let mode = match (self.redis_mode, setting(conf, "redis.mode")) {
                    (Some(m), _) => m,
                    (None, Some((v, from))) => v
                        .parse()
                        .map_err(|e: String| anyhow::anyhow!("{from}: {e}"))?,
                    (None, None) => d.mode,
                };
                let text = |given: &Option<String>, key: &str, default: String| {
                    given
                        .clone()
                        .or_else(|| setting(conf, key).map(|(v, _)| v.to_string()))
                        .unwrap_or(default)
                };
                Some(Target::Redis(RedisTarget {
                    server: text(&self.redis_server, "redis.server", d.server),
                    port,
                    mode,
                    key: text(&self.redis_key, "redis.key", d.key),
                }))
            }
        })
    }
}
