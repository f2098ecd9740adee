//! # The configuration file: rule variables in `suricata.yaml`'s shape
//!
//! `flowbundle inspect --config FILE` reads a YAML file laid out as `suricata.yaml` is, so a user's existing file
//! (or its `vars:` section) works as it is. The subset read today:
//!
//! ```yaml
//! vars:
//!   address-groups:
//!     HOME_NET: "[10.0.0.0/8,192.168.0.0/16]"
//!     EXTERNAL_NET: "!$HOME_NET"
//!   port-groups:
//!     HTTP_PORTS: "[80,8080]"
//!     SSH_PORTS: 22
//! ```
//!
//! Besides `vars`, the sections whose concepts the engine shares with Suricata are read, under Suricata's names:
//!
//! ```yaml
//! default-rule-path: /etc/suricata/rules
//! rule-files: [local.rules, emerging-all.rules]   # relative names are taken under default-rule-path
//! default-log-dir: /var/log/suricata/
//! outputs:
//!   - eve-log: {enabled: yes, filename: eve.json}  # EVE goes there when no -o is given
//! flow-timeouts:                                   # seconds of capture time
//!   default: {new: 30, established: 300}
//!   tcp: {new: 60, established: 600, closed: 60}
//!   udp: {new: 30, established: 300}
//! stream:
//!   midstream: true
//!   reassembly: {memcap: 64mb}
//! action-order: [drop, pass, reject, alert]        # Suricata's default: pass, drop, reject, alert
//! engine:
//!   init-failure-fatal: yes                        # a rule or dataset line that does not load fails the run
//! packet-alert-max: 15                             # the most alerts one packet reports
//! decoder:
//!   recursion-level: {use-for-tracking: true}      # the tunnel depth is part of the flow key
//!   icmp-errors-in-quoted-flow: false              # flowbundle's own key: true files an ICMPv4 error under the
//!                                                  # flow it quotes, as Suricata does (off: a flow of its own, as nDPI)
//! app-layer:
//!   protocols:
//!     dns:                                         # dns.tcp / dns.udp: one transport only
//!       detection-ports: {dp: 5353}                # DNS is probed on 5353 too, ahead of mDNS
//!     dcerpc:
//!       interface-names: yes                       # flowbundle's own key: DCE/RPC interfaces in EVE carry
//!                                                  # Suricata 9's service and procedure names (default: no,
//!                                                  # Suricata 8's layout)
//! default-data-dir: /var/lib/flowbundle            # where dataset save/state files go (default: .)
//! datasets:                                        # sets for the dataset and datarep keywords
//!   defaults: {memcap: 100mb, hashsize: 2048}
//!   rules: {allow-write: yes, allow-absolute-filenames: no}
//!   ua-seen: {type: string, state: ua-seen.lst}    # files relative to default-data-dir
//! ```
//!
//! Every engine setting read is one row of [`SETTINGS`] (its key, unit, and how it reads and writes
//! [`EngineConfig`]), so applying, dumping and the list of known keys cannot drift apart. Keys of those sections
//! that the engine has no counterpart for are listed in [`ConfigFile::ignored`], as whole sections the engine
//! does not read are. `--set KEY=VALUE` ([`ConfigFile::parse_with`]) sets any key of the file by its dotted path
//! before it is read (`--set stream.midstream=false`, `--set vars.address-groups.HOME_NET=[10.0.0.0/8]`), as
//! Suricata's own `--set` does; in the `outputs` list a part names an item by its key or position
//! (`--set outputs.eve-log.filetype=redis`, `--set outputs.1.eve-log.filename=eve.json`).
//!
//! Variables start from Suricata's defaults ([`Vars::suricata_defaults`]); the file replaces those it names and adds
//! others; `--var NAME=VALUE` ([`ConfigFile::set_var`]) then overrides either. Every value is compiled once after
//! loading ([`Vars::check`]), so a bad address, an undefined variable or a cycle is reported with the file and line
//! of the variable (`site.yaml:7: HOME_NET: invalid address ...`) before any rule is read. Other top-level sections
//! of a `suricata.yaml` (`outputs` beyond `eve-log`, `app-layer` beyond detection ports, ...) are not read; they are listed in [`ConfigFile::ignored`] so
//! the command can say so. [`ConfigFile::dump`] writes the effective configuration in the same layout, each value
//! with where it came from; reading the dump back gives the same variables.

use std::path::{Path, PathBuf};

use flowbundle_rules::{Origin, VarKind, Vars};
use serde_norway::Value;

use crate::EngineConfig;

/// How a setting's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Whole seconds.
    Seconds,
    /// Bytes, with Suricata's suffixes (`64mb`, `1gb`, `512kb`).
    Bytes,
    /// `yes`/`no`, `true`/`false`.
    Bool,
    /// A plain count.
    Count,
}

/// One engine setting of the configuration file: its key in `suricata.yaml`, and how it reads and writes the
/// [`EngineConfig`] (in the unit's integer: seconds, bytes, 0/1).
pub struct Setting {
    pub key: &'static str,
    pub unit: Unit,
    pub get: fn(&EngineConfig) -> u64,
    pub set: fn(&mut EngineConfig, u64),
}

const NS: u64 = 1_000_000_000;

/// A flow timeout: whole seconds in the file, nanoseconds in [`EngineConfig::timeouts`].
macro_rules! timeout {
    ($key:literal, $field:ident) => {
        Setting {
            key: $key,
            unit: Unit::Seconds,
            get: |c| c.timeouts.$field / NS,
            set: |c, v| c.timeouts.$field = v.saturating_mul(NS),
        }
    };
}

/// The engine settings the configuration file reads, under Suricata's keys.
pub static SETTINGS: &[Setting] = &[
    timeout!("flow-timeouts.default.new", other_new_ns),
    timeout!("flow-timeouts.default.established", other_established_ns),
    timeout!("flow-timeouts.tcp.new", tcp_new_ns),
    timeout!("flow-timeouts.tcp.established", tcp_established_ns),
    timeout!("flow-timeouts.tcp.closed", tcp_closed_ns),
    timeout!("flow-timeouts.udp.new", udp_new_ns),
    timeout!("flow-timeouts.udp.established", udp_established_ns),
    Setting {
        key: "stream.midstream",
        unit: Unit::Bool,
        get: |c| u64::from(c.midstream),
        set: |c, v| c.midstream = v != 0,
    },
    Setting {
        key: "stream.reassembly.memcap",
        unit: Unit::Bytes,
        get: |c| c.reassembly_memcap as u64,
        set: |c, v| c.reassembly_memcap = usize::try_from(v).unwrap_or(usize::MAX),
    },
    Setting {
        key: "decoder.recursion-level.use-for-tracking",
        unit: Unit::Bool,
        get: |c| u64::from(c.decode.tunnel_depth_in_key),
        set: |c, v| c.decode.tunnel_depth_in_key = v != 0,
    },
    Setting {
        key: "decoder.icmp-errors-in-quoted-flow",
        unit: Unit::Bool,
        get: |c| u64::from(c.decode.icmp_errors_in_quoted_flow),
        set: |c, v| c.decode.icmp_errors_in_quoted_flow = v != 0,
    },
    Setting {
        key: "app-layer.protocols.ssh.hassh",
        unit: Unit::Bool,
        get: |c| u64::from(c.limits.ssh_hassh),
        set: |c, v| c.limits.ssh_hassh = v != 0,
    },
    Setting {
        // flowbundle's own key: Suricata 9 always writes these names, Suricata 8 (whose schema EVE follows) never.
        key: "app-layer.protocols.dcerpc.interface-names",
        unit: Unit::Bool,
        get: |c| u64::from(c.limits.dcerpc_names),
        set: |c, v| c.limits.dcerpc_names = v != 0,
    },
    Setting {
        key: "packet-alert-max",
        unit: Unit::Count,
        get: |c| c.packet_alert_max as u64,
        set: |c, v| c.packet_alert_max = usize::try_from(v).unwrap_or(usize::MAX),
    },
];

/// The sections whose keys are matched against [`SETTINGS`] (their other keys are listed as not read).
/// `packet-alert-max` is a top-level key of its own.
const SETTING_SECTIONS: [&str; 4] = ["flow-timeouts", "stream", "packet-alert-max", "decoder"];

/// Writes `key: value  # from` under its dotted key's sections, opening only the sections `open` (the sections
/// written for the previous key, updated here) does not already hold, so consecutive keys share their sections.
fn write_nested<'k>(
    s: &mut String,
    open: &mut Vec<&'k str>,
    key: &'k str,
    value: &str,
    from: &str,
) {
    let parts: Vec<&str> = key.split('.').collect();
    let (leaf, sections) = parts.split_last().unwrap_or((&"", &[]));
    let common = open
        .iter()
        .zip(sections)
        .take_while(|(a, b)| a == b)
        .count();
    open.truncate(common);
    for (depth, sec) in sections.iter().enumerate().skip(common) {
        s.push_str(&format!("{}{sec}:\n", "  ".repeat(depth)));
        open.push(sec);
    }
    s.push_str(&format!(
        "{}{leaf}: {value}  # {from}\n",
        "  ".repeat(sections.len())
    ));
}

/// A value of `unit` written as YAML gives it: a number, `64mb`, `yes`.
fn parse_unit(unit: Unit, v: &str) -> Option<u64> {
    let v = v.trim();
    match unit {
        Unit::Seconds | Unit::Count => v.parse().ok(),
        Unit::Bool => match v.to_ascii_lowercase().as_str() {
            "yes" | "true" | "on" | "1" => Some(1),
            "no" | "false" | "off" | "0" => Some(0),
            _ => None,
        },
        Unit::Bytes => {
            let lower = v.to_ascii_lowercase();
            let (digits, mult) = [
                ("gb", 1u64 << 30),
                ("mb", 1 << 20),
                ("kb", 1 << 10),
                ("b", 1),
            ]
            .iter()
            .find_map(|(suf, m)| lower.strip_suffix(suf).map(|d| (d.trim(), *m)))
            .unwrap_or((lower.as_str(), 1));
            digits.parse::<u64>().ok()?.checked_mul(mult)
        }
    }
}

/// A value of `unit` as the dump writes it.
fn show_unit(unit: Unit, v: u64) -> String {
    match unit {
        Unit::Seconds | Unit::Count => v.to_string(),
        Unit::Bool => (if v != 0 { "true" } else { "false" }).to_string(),
        Unit::Bytes if v > 0 && v.is_multiple_of(1 << 30) => format!("{}gb", v >> 30),
        Unit::Bytes if v > 0 && v.is_multiple_of(1 << 20) => format!("{}mb", v >> 20),
        Unit::Bytes if v > 0 && v.is_multiple_of(1 << 10) => format!("{}kb", v >> 10),
        Unit::Bytes => v.to_string(),
    }
}

/// Sections that Suricata's layout writes as a list of one-key items (`outputs:` then `- eve-log: {...}`).
const LIST_SECTIONS: &[&str] = &["outputs"];

/// Sets `dotted` (`stream.reassembly.memcap`) to `value` in a YAML document, making the mappings on the way. In a
/// list (`outputs`), a part names an item by its key (`outputs.eve-log.filename`, the item added when missing) or by
/// its position (`outputs.1.eve-log.filename`, as Suricata's `--set` does). Returns the path with positions left
/// out (`outputs.eve-log.filename`), the one the reader names values by.
fn set_path(doc: &mut Value, dotted: &str, value: Value) -> Result<String, String> {
    let parts: Vec<&str> = dotted.split('.').collect();
    let mut named: Vec<&str> = Vec::new();
    let mut at = doc;
    let mut i = 0;
    let mut value = Some(value);
    while let Some(&part) = parts.get(i) {
        if part.is_empty() {
            return Err(format!("`{dotted}` has an empty part"));
        }
        if at.is_null() {
            *at = if i == 1 && LIST_SECTIONS.contains(&parts[0]) {
                Value::Sequence(Vec::new())
            } else {
                Value::Mapping(Default::default())
            };
        }
        at = match at {
            Value::Sequence(items) => {
                let len = items.len();
                let item = match part.parse::<usize>() {
                    Ok(n) => {
                        // A position: the item itself; its key comes next.
                        i += 1;
                        items.get_mut(n).ok_or_else(|| {
                            format!(
                                "`{}` has {len} items, none at position {n}",
                                parts[..i - 1].join(".")
                            )
                        })?
                    }
                    Err(_) => {
                        // A key: the item holding it (the key itself is taken as the item's mapping is walked).
                        let found = items.iter().position(|it| it.get(part).is_some());
                        let n = match found {
                            Some(n) => n,
                            None => {
                                let mut m = serde_norway::Mapping::new();
                                m.insert(Value::String(part.to_string()), Value::Null);
                                items.push(Value::Mapping(m));
                                len
                            }
                        };
                        &mut items[n]
                    }
                };
                if parts.get(i).is_none() {
                    return Err(format!("`{dotted}` names a list item, not a key"));
                }
                item
            }
            Value::Mapping(m) => {
                named.push(part);
                let key = Value::String(part.to_string());
                i += 1;
                if i == parts.len() {
                    m.insert(key, value.take().unwrap_or(Value::Null));
                    return Ok(named.join("."));
                }
                m.entry(key).or_insert(Value::Null)
            }
            _ => return Err(format!("`{}` is not a section", parts[..i].join("."))),
        };
    }
    Ok(named.join("."))
}

/// Largest configuration file read.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The effective configuration: defaults, then a file, then command-line overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigFile {
    /// Rule variables.
    pub vars: Vars,
    /// Engine settings given (index into [`SETTINGS`], value in the setting's unit, where it was set), in
    /// [`SETTINGS`] order; [`ConfigFile::apply`] writes them into an [`EngineConfig`].
    pub settings: Vec<(usize, u64, String)>,
    /// `rule-files`, under `default-rule-path` when relative, and where they were set.
    pub rule_files: Vec<PathBuf>,
    pub rule_files_origin: Option<String>,
    /// The enabled `eve-log` output's file (under `default-log-dir` when relative; a socket's path for the
    /// `unix_*` filetypes), and where it was set.
    pub eve_log: Option<(PathBuf, String)>,
    /// The enabled `eve-log` output's `filetype` and `redis:` settings (`filetype`, `redis.server`, `redis.port`,
    /// `redis.mode`, `redis.key`) and flowbundle's own waits of a socket or Redis output (`write-timeout`,
    /// `finish-timeout`), as written, each with where it was set; the sink reads them.
    pub eve_settings: Vec<(String, String, String)>,
    /// The enabled `eve-log` output's `types: [alert: {tagged-packets: ...}]` ([`EngineConfig::tagged_packets`]) and
    /// where it was set.
    pub tagged_packets: Option<(bool, String)>,
    /// The enabled `eve-log` output's `types: [anomaly: {enabled, types: {decode, stream, applayer}}]`
    /// ([`EngineConfig::anomaly`]) and where it was set; `None` when the output lists no `anomaly` item (the
    /// engine's default then stands: application-layer anomalies only, as Suricata's default configuration).
    pub anomaly: Option<(crate::config::AnomalyTypes, String)>,
    /// `action-order` ([`EngineConfig::action_order`]) and where it was set.
    pub action_order: Option<(flowbundle_rules::ActionOrder, String)>,
    /// `app-layer.protocols.<name>.detection-ports` ([`EngineConfig::detection_ports`]): each dotted key with its
    /// value, the ports it sets and where it was set.
    pub detection_ports: Vec<(String, String, Vec<DetectionPort>, String)>,
    /// `engine.init-failure-fatal` (Suricata's `--init-errors-fatal`) and where it was set: a rule or a dataset line
    /// that does not load fails the run instead of being reported and skipped. Written into
    /// [`ConfigFile::dataset_policy`]'s `init_errors_fatal`, the policy a strict rule load also sets.
    pub init_failure_fatal: Option<(bool, String)>,
    /// Sections and keys of the file that are not read (in file order).
    pub ignored: Vec<String>,
    /// The `datasets:` section's sets, and its policy with `default-data-dir` ([`flowbundle_rules::dataset`]).
    pub datasets: Vec<(String, flowbundle_rules::dataset::SetDef)>,
    pub dataset_policy: flowbundle_rules::dataset::Policy,
}

/// One configured detection port: the protocol, the transport and the port ([`EngineConfig::detection_ports`]).
pub type DetectionPort = (flowbundle_types::AppProto, flowbundle_types::Transport, u16);

/// The detection ports set by the configuration key `key` (dotted) with `value`, as Suricata reads
/// `app-layer.protocols.<name>.detection-ports.dp` (both transports the protocol runs on) and
/// `app-layer.protocols.<name>.tcp.detection-ports.dp` / `.udp.` (one): `None` when `key` is not such a key of a
/// protocol the engine has under Suricata's name; the ports of `dp` and `sp` alike (a flow's port on either side
/// counts), written as one port or a list (`"53, 5353"`, `[53,5353]`).
pub fn detection_ports_setting(
    key: &str,
    value: &str,
) -> Option<Result<Vec<DetectionPort>, String>> {
    use flowbundle_types::{AppProto, Transport};
    let (proto, rest) = key
        .strip_prefix("app-layer.protocols.")?
        .split_once(".detection-ports")?;
    let (name, transport) = match proto.split_once('.') {
        Some((n, t)) => (n, Some(t)),
        None => (proto, None),
    };
    let p = *AppProto::ALL
        .iter()
        .find(|p| p.suricata_name() == Some(name))?;
    let transports: Vec<Transport> = match transport {
        Some("tcp") => vec![Transport::Tcp],
        Some("udp") => vec![Transport::Udp],
        Some(_) => return None,
        None => p.transports().to_vec(),
    };
    if !matches!(rest, ".dp" | ".sp") {
        return None;
    }
    let mut out = Vec::new();
    for port in value
        .trim()
        .trim_matches(|c| c == '[' || c == ']' || c == '"')
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        let Ok(port) = port.parse::<u16>() else {
            return Some(Err(format!(
                "{key}: expected ports such as 53 or \"53, 5353\", not `{port}`"
            )));
        };
        out.extend(transports.iter().map(|&t| (p, t, port)));
    }
    Some(Ok(out))
}

impl Default for ConfigFile {
    fn default() -> Self {
        ConfigFile {
            vars: Vars::suricata_defaults(),
            settings: Vec::new(),
            rule_files: Vec::new(),
            rule_files_origin: None,
            eve_log: None,
            eve_settings: Vec::new(),
            tagged_packets: None,
            anomaly: None,
            action_order: None,
            detection_ports: Vec::new(),
            init_failure_fatal: None,
            ignored: Vec::new(),
            datasets: Vec::new(),
            dataset_policy: flowbundle_rules::dataset::Policy::default(),
        }
    }
}

/// Reads the `datasets:` section (Suricata's layout): `defaults` (`memcap`, `hashsize`), `rules` (`allow-write`,
/// `allow-absolute-filenames`), and one mapping per set (`type`, `load`, `save`, `state`, `memcap`, `hashsize`;
/// relative files under the data directory). `enabled` is accepted (sets are always available); `limits` and
/// anything else are errors naming the key. `fail(dotted, message)` makes the error.
fn read_datasets(
    v: &Value,
    policy: &mut flowbundle_rules::dataset::Policy,
    sets: &mut Vec<(String, flowbundle_rules::dataset::SetDef)>,
    fail: &dyn Fn(&str, String) -> ConfigError,
) -> Result<(), ConfigError> {
    use flowbundle_rules::dataset::{SetDef, SetType, parse_size};
    let Value::Mapping(m) = v else {
        return match v {
            Value::Null => Ok(()),
            _ => Err(fail("datasets", "datasets: expected a mapping".into())),
        };
    };
    let size = |dotted: &str, v: &Value| -> Result<u64, ConfigError> {
        scalar(v)
            .and_then(|s| parse_size(&s))
            .ok_or_else(|| fail(dotted, format!("{dotted}: invalid size")))
    };
    let flag = |dotted: &str, v: &Value| -> Result<bool, ConfigError> {
        scalar(v)
            .and_then(|s| parse_unit(Unit::Bool, &s))
            .map(|b| b == 1)
            .ok_or_else(|| fail(dotted, format!("{dotted}: expected yes or no")))
    };
    for (k, sub) in m {
        let key = scalar(k).unwrap_or_default();
        let dotted = format!("datasets.{key}");
        let entries: Vec<(String, &Value)> = match sub {
            Value::Mapping(sm) => sm
                .iter()
                .map(|(k, v)| (scalar(k).unwrap_or_default(), v))
                .collect(),
            _ if key == "enabled" => {
                flag(&dotted, sub)?;
                continue;
            }
            _ => return Err(fail(&dotted, format!("{dotted}: expected a mapping"))),
        };
        match key.as_str() {
            "defaults" => {
                for (k, v) in entries {
                    let d = format!("{dotted}.{k}");
                    match k.as_str() {
                        "memcap" => policy.default_memcap = size(&d, v)?,
                        "hashsize" => {
                            policy.default_hashsize = Some(
                                u32::try_from(size(&d, v)?)
                                    .map_err(|_| fail(&d, format!("{d}: too large")))?,
                            )
                        }
                        _ => return Err(fail(&d, format!("{d}: unknown key"))),
                    }
                }
            }
            "rules" => {
                for (k, v) in entries {
                    let d = format!("{dotted}.{k}");
                    match k.as_str() {
                        "allow-write" => policy.allow_write = flag(&d, v)?,
                        "allow-absolute-filenames" => policy.allow_absolute = flag(&d, v)?,
                        _ => return Err(fail(&d, format!("{d}: unknown key"))),
                    }
                }
            }
            name => {
                let mut def = SetDef::default();
                for (k, v) in entries {
                    let d = format!("{dotted}.{k}");
                    let text = scalar(v).unwrap_or_default();
                    match k.as_str() {
                        "type" => {
                            def.kind =
                                Some(SetType::parse(&text).ok_or_else(|| {
                                    fail(&d, format!("{d}: unknown type `{text}`"))
                                })?)
                        }
                        "load" => def.load = Some(PathBuf::from(text)),
                        "save" => def.save = Some(PathBuf::from(text)),
                        "state" => {
                            def.load = Some(PathBuf::from(&text));
                            def.save = Some(PathBuf::from(text));
                        }
                        "memcap" => def.memcap = Some(size(&d, v)?),
                        "hashsize" => {
                            def.hashsize = Some(
                                u32::try_from(size(&d, v)?)
                                    .map_err(|_| fail(&d, format!("{d}: too large")))?,
                            )
                        }
                        _ => return Err(fail(&d, format!("{d}: unknown key"))),
                    }
                }
                if def.kind.is_none() {
                    return Err(fail(&dotted, format!("{dotted}: `type` needed")));
                }
                sets.push((name.to_string(), def));
            }
        }
    }
    Ok(())
}

/// A configuration error, one line, `file:line: what` where the line is known.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// `s` as a YAML double-quoted scalar (escapes `\`, `"` and control characters).
fn quoted(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if c.is_control() => q.push_str(&format!("\\u{:04x}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The 1-based line where `key:` is first written at the start of a line (after indentation), after line `after`.
fn line_of(text: &str, key: &str, after: usize) -> Option<usize> {
    text.lines().enumerate().skip(after).find_map(|(i, l)| {
        let t = l.trim_start().trim_start_matches(['"', '\'']);
        t.strip_prefix(key)
            .map(|r| r.trim_start_matches(['"', '\'']).trim_start())
            .filter(|r| r.starts_with(':'))
            .map(|_| i + 1)
    })
}

impl ConfigFile {
    /// Reads `path` over the defaults.
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        ConfigFile::load_with(Some(path), &[])
    }

    /// Reads `path` (or nothing) over the defaults, with `--set KEY=VALUE` assignments applied to it first.
    pub fn load_with(path: Option<&Path>, sets: &[String]) -> Result<ConfigFile, ConfigError> {
        match path {
            Some(p) => {
                let name = p.display().to_string();
                let bytes = flowbundle_rules::text::read_text_file(
                    p,
                    MAX_CONFIG_BYTES,
                    flowbundle_rules::text::MAX_LINE_BYTES,
                )
                .map_err(|e| ConfigError(e.to_string()))?;
                // A YAML document is not read line by line: a line that is not UTF-8 fails the load (as Suricata's
                // YAML loader does), named by its line and column.
                let text = String::from_utf8(bytes).map_err(|e| {
                    let b = e.as_bytes();
                    let at = e.utf8_error().valid_up_to();
                    let line = 1 + b[..at].iter().filter(|&&c| c == b'\n').count();
                    let start = b[..at]
                        .iter()
                        .rposition(|&c| c == b'\n')
                        .map_or(0, |i| i + 1);
                    let msg = flowbundle_rules::text::line_text(&b[start..])
                        .err()
                        .unwrap_or_default();
                    ConfigError(format!("{name}:{line}: {msg}"))
                })?;
                ConfigFile::parse_with(&text, &name, sets)
            }
            None => ConfigFile::parse_with("", "--set", sets),
        }
    }

    /// Reads configuration text named `name` (for messages) over the defaults.
    pub fn parse(text: &str, name: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse_with(text, name, &[])
    }

    /// Reads configuration text named `name` over the defaults, after setting each `KEY=VALUE` of `sets` (a dotted
    /// path into the file, the value read as YAML) in it; those values say `--set` as their origin.
    pub fn parse_with(text: &str, name: &str, sets: &[String]) -> Result<ConfigFile, ConfigError> {
        let mut cfg = ConfigFile::default();
        let at = |line: Option<usize>, m: String| match line {
            Some(l) => ConfigError(format!("{name}:{l}: {m}")),
            None => ConfigError(format!("{name}: {m}")),
        };
        let doc: Value = serde_norway::from_str(text).map_err(|e| {
            let msg = e.to_string();
            let mut msg = msg.lines().next().unwrap_or("").to_string();
            match e.location() {
                Some(l) => {
                    // The parser's `... at line N column M`: the line goes in front, as for every other error.
                    if let Some(i) = msg.find(" at line ") {
                        let tail = msg[i + " at line ".len()..].to_string();
                        let rest = tail.split_once(", ").map(|(_, r)| r.to_string());
                        msg.truncate(i);
                        if let Some(r) = rest {
                            msg.push_str(", ");
                            msg.push_str(&r);
                        }
                    }
                    at(Some(l.line()), msg)
                }
                None => ConfigError(format!("{name}: {msg}")),
            }
        })?;
        let mut doc = doc;
        let mut set_keys: Vec<String> = Vec::new();
        for a in sets {
            let (key, value) = a
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| {
                    ConfigError(format!(
                        "--set {a}: expected KEY=VALUE, e.g. stream.midstream=false"
                    ))
                })?;
            // As Suricata's --set: the value is text (`[10.0.0.0/8]` is an address group, not a YAML list).
            let named = set_path(&mut doc, key, Value::String(value.to_string()))
                .map_err(|e| ConfigError(format!("--set {a}: {e}")))?;
            set_keys.push(named);
        }
        // Where a value came from: `--set`, or the file's line of its last key part (after its section's line).
        let origin = |dotted: &str| -> String {
            if set_keys.iter().any(|k| k == dotted) {
                return "--set".to_string();
            }
            let mut line = 0;
            for part in dotted.split('.') {
                line = line_of(text, part, line).unwrap_or(line);
            }
            if line > 0 {
                format!("{name}:{line}")
            } else {
                name.to_string()
            }
        };
        let top = match doc {
            Value::Mapping(m) => m,
            Value::Null => return Ok(cfg),
            _ => return Err(at(Some(1), "expected a mapping of sections".into())),
        };
        let text_of = |v: &Value| scalar(v).unwrap_or_default();
        let default_rule_path = top
            .get("default-rule-path")
            .and_then(scalar)
            .map(PathBuf::from);
        let default_log_dir = top
            .get("default-log-dir")
            .and_then(scalar)
            .map(PathBuf::from);
        let under = |dir: &Option<PathBuf>, f: &str| match dir {
            Some(d) if Path::new(f).is_relative() => d.join(f),
            _ => PathBuf::from(f),
        };
        for (k, v) in &top {
            let key = scalar(k).unwrap_or_default();
            if SETTING_SECTIONS.contains(&key.as_str()) {
                cfg.read_settings(&key, v, &origin, &at)?;
                continue;
            }
            match key.as_str() {
                "vars" => {}
                "default-rule-path" | "default-log-dir" => continue,
                "default-data-dir" => {
                    cfg.dataset_policy.data_dir = PathBuf::from(text_of(v));
                    continue;
                }
                "datasets" => {
                    let fail = |dotted: &str, m: String| {
                        let from = origin(dotted);
                        if from == "--set" {
                            return ConfigError(format!("--set {m}"));
                        }
                        at(from.rsplit_once(':').and_then(|(_, l)| l.parse().ok()), m)
                    };
                    read_datasets(v, &mut cfg.dataset_policy, &mut cfg.datasets, &fail)?;
                    continue;
                }
                "action-order" => {
                    let line = line_of(text, "action-order", 0);
                    let names = match v {
                        Value::Sequence(s) => s.iter().map(text_of).collect::<Vec<_>>(),
                        _ => {
                            return Err(at(
                                line,
                                "action-order: expected a list such as [pass, drop, reject, alert]"
                                    .into(),
                            ));
                        }
                    };
                    let order =
                        flowbundle_rules::ActionOrder::parse(names.iter().map(String::as_str))
                            .map_err(|e| at(line, e))?;
                    cfg.action_order = Some((order, origin("action-order")));
                    continue;
                }
                "engine" => {
                    // `init-failure-fatal` is read; the section's other keys are listed as not read.
                    let Value::Mapping(m) = v else {
                        cfg.ignored.push(key);
                        continue;
                    };
                    for (k, sub) in m {
                        let dotted = format!("engine.{}", scalar(k).unwrap_or_default());
                        if dotted != "engine.init-failure-fatal" {
                            cfg.ignored.push(dotted);
                            continue;
                        }
                        let from = origin(&dotted);
                        let on = scalar(sub)
                            .and_then(|t| parse_unit(Unit::Bool, &t))
                            .ok_or_else(|| {
                                let m = format!("{dotted}: expected yes or no");
                                if from == "--set" {
                                    ConfigError(format!("--set {m}"))
                                } else {
                                    at(from.rsplit_once(':').and_then(|(_, l)| l.parse().ok()), m)
                                }
                            })?
                            == 1;
                        cfg.dataset_policy.init_errors_fatal = on;
                        cfg.init_failure_fatal = Some((on, from));
                    }
                    continue;
                }
                "rule-files" => {
                    let files = match v {
                        Value::Sequence(s) => s.iter().map(text_of).collect::<Vec<_>>(),
                        Value::Null => Vec::new(),
                        _ => {
                            return Err(at(
                                line_of(text, "rule-files", 0),
                                "rule-files: expected a list of file names".into(),
                            ));
                        }
                    };
                    cfg.rule_files = files
                        .iter()
                        .filter(|f| !f.is_empty())
                        .map(|f| under(&default_rule_path, f))
                        .collect();
                    cfg.rule_files_origin = Some(origin("rule-files"));
                    continue;
                }
                "outputs" => {
                    let Value::Sequence(outputs) = v else {
                        continue;
                    };
                    for o in outputs {
                        let Some(eve) = o.get("eve-log") else {
                            continue;
                        };
                        let enabled = eve
                            .get("enabled")
                            .and_then(scalar)
                            .is_none_or(|e| parse_unit(Unit::Bool, &e) == Some(1));
                        if let Some(f) = eve.get("filename").and_then(scalar)
                            && enabled
                        {
                            cfg.eve_log = Some((
                                under(&default_log_dir, &f),
                                origin("outputs.eve-log.filename"),
                            ));
                        }
                        // `types:` lists the records written; the `alert` item's `tagged-packets` says whether
                        // packets a rule's `tag` covers are written too.
                        let tagged = eve
                            .get("types")
                            .and_then(Value::as_sequence)
                            .into_iter()
                            .flatten()
                            .filter_map(|t| t.get("alert")?.get("tagged-packets").and_then(scalar))
                            .next_back();
                        if let Some(t) = tagged.filter(|_| enabled) {
                            let on = parse_unit(Unit::Bool, &t).ok_or_else(|| {
                                at(
                                    line_of(text, "tagged-packets", 0),
                                    "outputs.eve-log.types.alert.tagged-packets: expected yes or no".into(),
                                )
                            })?;
                            cfg.tagged_packets = Some((
                                on == 1,
                                origin("outputs.eve-log.types.alert.tagged-packets"),
                            ));
                        }
                        // The `anomaly` item: which kinds of anomaly records are written (Suricata's defaults:
                        // `applayer` on, `decode` and `stream` off; `enabled: no` writes none).
                        let anomaly = eve
                            .get("types")
                            .and_then(Value::as_sequence)
                            .into_iter()
                            .flatten()
                            .filter_map(|t| t.get("anomaly"))
                            .next_back();
                        if let Some(a) = anomaly.filter(|_| enabled) {
                            let flag = |v: Option<&Value>, name: &str, default: bool| {
                                match v.and_then(scalar) {
                                    None => Ok(default),
                                    Some(t) => parse_unit(Unit::Bool, &t).map(|n| n == 1).ok_or_else(|| {
                                        at(
                                            line_of(text, name, 0),
                                            format!("outputs.eve-log.types.anomaly.{name}: expected yes or no"),
                                        )
                                    }),
                                }
                            };
                            let types = a.get("types");
                            let on = flag(a.get("enabled"), "enabled", true)?;
                            let kinds = crate::config::AnomalyTypes {
                                packethdr: flag(a.get("packethdr"), "packethdr", false)?,
                                decode: flag(types.and_then(|t| t.get("decode")), "decode", false)?,
                                stream: flag(types.and_then(|t| t.get("stream")), "stream", false)?,
                                applayer: flag(
                                    types.and_then(|t| t.get("applayer")),
                                    "applayer",
                                    true,
                                )?,
                            };
                            cfg.anomaly = Some((
                                if on {
                                    kinds
                                } else {
                                    crate::config::AnomalyTypes::NONE
                                },
                                origin("outputs.eve-log.types.anomaly"),
                            ));
                        }
                        if enabled {
                            let redis = eve.get("redis");
                            for (key, value) in [
                                ("filetype", eve.get("filetype")),
                                ("redis.server", redis.and_then(|r| r.get("server"))),
                                ("redis.port", redis.and_then(|r| r.get("port"))),
                                ("redis.mode", redis.and_then(|r| r.get("mode"))),
                                ("redis.key", redis.and_then(|r| r.get("key"))),
                                // flowbundle's own: how long a socket or Redis output waits (Suricata has none).
                                ("write-timeout", eve.get("write-timeout")),
                                ("finish-timeout", eve.get("finish-timeout")),
                            ] {
                                if let Some(v) = value.and_then(scalar) {
                                    cfg.eve_settings.push((
                                        key.to_string(),
                                        v,
                                        origin(&format!("outputs.eve-log.{key}")),
                                    ));
                                }
                            }
                        }
                    }
                    continue;
                }
                "app-layer" => {
                    // Detection ports are read; the section's other keys are listed as not read.
                    let mut stack: Vec<(String, &Value)> = vec![(key.clone(), v)];
                    while let Some((dotted, v)) = stack.pop() {
                        if let Value::Mapping(m) = v {
                            for (k, sub) in m.iter().collect::<Vec<_>>().into_iter().rev() {
                                stack.push((
                                    format!("{dotted}.{}", scalar(k).unwrap_or_default()),
                                    sub,
                                ));
                            }
                            continue;
                        }
                        if SETTINGS.iter().any(|s| s.key == dotted) {
                            cfg.read_settings(&dotted, v, &origin, &at)?;
                            continue;
                        }
                        let value = scalar(v).unwrap_or_default();
                        match detection_ports_setting(&dotted, &value) {
                            Some(Ok(ports)) => {
                                let from = origin(&dotted);
                                cfg.detection_ports.push((dotted, value, ports, from));
                            }
                            Some(Err(e)) => {
                                let from = origin(&dotted);
                                let line = from.rsplit_once(':').and_then(|(_, l)| l.parse().ok());
                                return Err(if from == "--set" {
                                    ConfigError(format!("--set {e}"))
                                } else {
                                    at(line, e)
                                });
                            }
                            None => cfg.ignored.push(dotted),
                        }
                    }
                    continue;
                }
                _ => {
                    cfg.ignored.push(key);
                    continue;
                }
            }
            let vars_line = line_of(text, "vars", 0);
            let groups = match v {
                Value::Mapping(m) => m,
                Value::Null => continue,
                _ => return Err(at(vars_line, "vars: expected a mapping".into())),
            };
            for (gk, gv) in groups {
                let gname = scalar(gk).unwrap_or_default();
                let kind = match gname.as_str() {
                    "address-groups" => VarKind::Address,
                    "port-groups" => VarKind::Port,
                    other => {
                        return Err(at(
                            line_of(text, other, vars_line.unwrap_or(0)),
                            format!(
                                "vars: unknown section `{other}` (address-groups, port-groups)"
                            ),
                        ));
                    }
                };
                let gline = line_of(text, &gname, 0);
                let entries = match gv {
                    Value::Mapping(m) => m,
                    Value::Null => continue,
                    _ => return Err(at(gline, format!("vars.{gname}: expected a mapping"))),
                };
                for (vk, vv) in entries {
                    let vname = scalar(vk).unwrap_or_default();
                    let vline = line_of(text, &vname, gline.unwrap_or(0));
                    if vname.is_empty()
                        || !vname
                            .bytes()
                            .all(|c| c.is_ascii_alphanumeric() || c == b'_')
                    {
                        return Err(at(
                            vline,
                            format!("vars.{gname}: invalid variable name `{vname}`"),
                        ));
                    }
                    let value = scalar(vv).ok_or_else(|| {
                        at(
                            vline,
                            format!("{vname}: expected a value such as \"[10.0.0.0/8]\""),
                        )
                    })?;
                    let set_key = format!("vars.{gname}.{vname}");
                    let origin = Origin::Set(if set_keys.contains(&set_key) {
                        "--set".to_string()
                    } else {
                        match vline {
                            Some(l) => format!("{name}:{l}"),
                            None => name.to_string(),
                        }
                    });
                    cfg.vars.define(&vname, &value, kind, origin);
                }
            }
        }
        cfg.check()?;
        Ok(cfg)
    }

    /// Reads the settings under section `section` (a mapping walked to its leaves): a leaf whose dotted key is a
    /// row of [`SETTINGS`] is recorded, any other leaf is listed as not read.
    fn read_settings(
        &mut self,
        section: &str,
        v: &Value,
        origin: &dyn Fn(&str) -> String,
        at: &dyn Fn(Option<usize>, String) -> ConfigError,
    ) -> Result<(), ConfigError> {
        let mut stack: Vec<(String, &Value)> = vec![(section.to_string(), v)];
        while let Some((key, v)) = stack.pop() {
            if let Value::Mapping(m) = v {
                let subs: Vec<_> = m.iter().collect();
                for (k, sub) in subs.into_iter().rev() {
                    stack.push((format!("{key}.{}", scalar(k).unwrap_or_default()), sub));
                }
                continue;
            }
            let Some(i) = SETTINGS.iter().position(|s| s.key == key) else {
                self.ignored.push(key);
                continue;
            };
            let where_ = origin(&key);
            let value = scalar(v)
                .and_then(|t| parse_unit(SETTINGS[i].unit, &t))
                .ok_or_else(|| {
                    let what = match SETTINGS[i].unit {
                        Unit::Seconds => "a whole number of seconds",
                        Unit::Bytes => "a size such as 64mb",
                        Unit::Bool => "yes or no",
                        Unit::Count => "a whole number",
                    };
                    let line = where_.rsplit_once(':').and_then(|(_, l)| l.parse().ok());
                    if where_ == "--set" {
                        ConfigError(format!("--set {key}: expected {what}"))
                    } else {
                        at(line, format!("{key}: expected {what}"))
                    }
                })?;
            self.settings.retain(|s| s.0 != i);
            self.settings.push((i, value, where_));
        }
        self.settings.sort_by_key(|s| s.0);
        Ok(())
    }

    /// Writes the settings given into `engine`.
    pub fn apply(&self, engine: &mut EngineConfig) {
        for (_, _, ports, _) in &self.detection_ports {
            engine.detection_ports.extend_from_slice(ports);
        }
        for &(i, v, _) in &self.settings {
            if let Some(s) = SETTINGS.get(i) {
                (s.set)(engine, v);
            }
        }
        if let Some((order, _)) = &self.action_order {
            engine.action_order = *order;
        }
        if let Some((on, _)) = &self.tagged_packets {
            engine.tagged_packets = *on;
        }
        if let Some((kinds, _)) = &self.anomaly {
            engine.anomaly = *kinds;
        }
    }

    /// Applies `--var NAME=VALUE`: the variable keeps its kind (a new one is a port group when its name ends in
    /// `_PORTS` or `_PORT`, else an address group).
    pub fn set_var(&mut self, assignment: &str) -> Result<(), ConfigError> {
        let (name, value) = assignment
            .split_once('=')
            .map(|(n, v)| (n.trim().trim_start_matches('$'), v.trim()))
            .filter(|(n, v)| {
                !n.is_empty()
                    && !v.is_empty()
                    && n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
            })
            .ok_or_else(|| {
                ConfigError(format!(
                    "--var {assignment}: expected NAME=VALUE, e.g. HOME_NET=[10.0.0.0/8]"
                ))
            })?;
        let kind = self.vars.kind_for(name);
        self.vars
            .define(name, value, kind, Origin::Set("--var".into()));
        Ok(())
    }

    /// Compiles every variable: the first bad one, as `where: NAME: reason`.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.vars.check().map_err(|(name, why)| {
            let place = match self.vars.var(&name).map(|v| &v.origin) {
                Some(Origin::Set(w)) => format!("{w}: "),
                _ => String::new(),
            };
            ConfigError(format!("{place}{name}: {why}"))
        })
    }

    /// The effective configuration as YAML, each value with its origin as a comment.
    pub fn dump(&self) -> String {
        let mut s = String::from(
            "# flowbundle: effective configuration (defaults are Suricata's suricata.yaml)\n",
        );
        if !self.rule_files.is_empty() {
            s.push_str(&format!(
                "rule-files:  # {}\n",
                self.rule_files_origin.as_deref().unwrap_or("")
            ));
            for f in &self.rule_files {
                s.push_str(&format!("  - {}\n", quoted(&f.display().to_string())));
            }
        }
        if let Some((f, from)) = &self.eve_log {
            s.push_str(&format!(
                "outputs:\n  - eve-log:\n      enabled: yes\n      filename: {}  # {from}\n",
                quoted(&f.display().to_string())
            ));
        } else if !self.eve_settings.is_empty()
            || self.tagged_packets.is_some()
            || self.anomaly.is_some()
        {
            s.push_str("outputs:\n  - eve-log:\n      enabled: yes\n");
        }
        if self.tagged_packets.is_some() || self.anomaly.is_some() {
            s.push_str("      types:\n");
        }
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        if let Some((on, from)) = &self.tagged_packets {
            s.push_str(&format!(
                "        - alert:\n            tagged-packets: {}  # {from}\n",
                yes_no(*on)
            ));
        }
        if let Some((k, from)) = &self.anomaly {
            s.push_str(&format!(
                "        - anomaly:  # {from}\n            packethdr: {}\n            types:\n              \
                 decode: {}\n              stream: {}\n              applayer: {}\n",
                yes_no(k.packethdr),
                yes_no(k.decode),
                yes_no(k.stream),
                yes_no(k.applayer)
            ));
        }
        let mut redis_open = false;
        for (key, value, from) in &self.eve_settings {
            match key.strip_prefix("redis.") {
                Some(leaf) => {
                    if !redis_open {
                        s.push_str("      redis:\n");
                        redis_open = true;
                    }
                    s.push_str(&format!("        {leaf}: {}  # {from}\n", quoted(value)));
                }
                None => s.push_str(&format!("      {key}: {}  # {from}\n", quoted(value))),
            }
        }
        // The engine settings, nested by their dotted keys, each with its value (given or default) and origin.
        let mut engine = EngineConfig::default();
        self.apply(&mut engine);
        // The `app-layer` section's settings are written with its detection ports below (one section).
        let app_layer = |key: &str| key.starts_with("app-layer.");
        let write_settings = |s: &mut String, open: &mut Vec<&str>, app: bool| {
            for (i, setting) in SETTINGS.iter().enumerate() {
                if app_layer(setting.key) != app {
                    continue;
                }
                let from = self
                    .settings
                    .iter()
                    .find(|x| x.0 == i)
                    .map_or("default", |x| x.2.as_str());
                let value = show_unit(setting.unit, (setting.get)(&engine));
                write_nested(s, open, setting.key, &value, from);
            }
        };
        let mut open: Vec<&str> = Vec::new();
        write_settings(&mut s, &mut open, false);
        let (order, from) = self.action_order.as_ref().map_or(
            (flowbundle_rules::ActionOrder::default(), "default"),
            |(o, f)| (*o, f.as_str()),
        );
        s.push_str(&format!(
            "action-order: [{}]  # {from}\n",
            order.names().join(", ")
        ));
        let (fatal, from) = self
            .init_failure_fatal
            .as_ref()
            .map_or((false, "default"), |(on, f)| (*on, f.as_str()));
        s.push_str(&format!(
            "engine:\n  init-failure-fatal: {}  # {from}\n",
            if fatal { "yes" } else { "no" }
        ));
        // The `app-layer` settings, then the detection ports, nested by their dotted keys as written.
        let mut open: Vec<&str> = Vec::new();
        write_settings(&mut s, &mut open, true);
        for (key, value, _, from) in &self.detection_ports {
            write_nested(&mut s, &mut open, key, &quoted(value), from);
        }
        s.push_str("vars:\n");
        for kind in [VarKind::Address, VarKind::Port] {
            s.push_str(&format!("  {}:\n", kind.section()));
            for (name, v) in self.vars.iter().filter(|(_, v)| v.kind == kind) {
                let from = match &v.origin {
                    Origin::Default => "default",
                    Origin::Set(w) => w.as_str(),
                };
                s.push_str(&format!("    {name}: {}  # {from}\n", quoted(&v.value)));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SITE: &str = "%YAML 1.1\n---\n# a site\nvars:\n  address-groups:\n    HOME_NET: \"[10.1.0.0/16]\"\n    WEB_SERVERS: \"[$HOME_NET,!10.1.9.9]\"\n  port-groups:\n    HTTP_PORTS: \"[80,8080]\"\n    ORACLE_PORTS: 1521\noutputs:\n  - eve-log:\n      enabled: yes\nlogging:\n  default-log-level: notice\n";

    #[test]
    fn reads_the_suricata_layout_over_the_defaults() {
        let c = ConfigFile::parse(SITE, "site.yaml").unwrap();
        assert_eq!(c.vars.get("HOME_NET"), Some("[10.1.0.0/16]"));
        assert_eq!(
            c.vars.var("HOME_NET").map(|v| v.origin.clone()),
            Some(Origin::Set("site.yaml:6".into()))
        );
        assert_eq!(c.vars.get("ORACLE_PORTS"), Some("1521"));
        assert_eq!(
            c.vars.var("WEB_SERVERS").map(|v| v.kind),
            Some(VarKind::Address)
        );
        assert_eq!(
            c.vars.var("EXTERNAL_NET").map(|v| v.origin.clone()),
            Some(Origin::Default)
        );
        assert_eq!(
            c.ignored,
            ["logging"],
            "outputs is read (an eve-log without a file names none)"
        );
        assert_eq!(c.eve_log, None);
        // The dump reads back to the same variables.
        let back = ConfigFile::parse(&c.dump(), "dump.yaml").unwrap();
        let vals = |c: &ConfigFile| {
            c.vars
                .iter()
                .map(|(n, v)| (n.to_string(), v.value.clone(), v.kind))
                .collect::<Vec<_>>()
        };
        assert_eq!(vals(&back), vals(&c));
        assert!(
            c.dump()
                .contains("    HOME_NET: \"[10.1.0.0/16]\"  # site.yaml:6\n")
        );
        assert!(ConfigFile::parse("", "empty.yaml").unwrap() == ConfigFile::default());
    }

    #[test]
    fn init_failure_fatal_is_read_into_the_load_policy_and_dumped() {
        let c = ConfigFile::parse("engine:\n  init-failure-fatal: yes\n  other: 1\n", "s.yaml")
            .unwrap();
        assert!(c.dataset_policy.init_errors_fatal);
        assert_eq!(c.init_failure_fatal, Some((true, "s.yaml:2".to_string())));
        assert_eq!(c.ignored, ["engine.other"]);
        assert!(
            c.dump()
                .contains("engine:\n  init-failure-fatal: yes  # s.yaml:2\n"),
            "{}",
            c.dump()
        );
        let back = ConfigFile::parse(&c.dump(), "dump").unwrap();
        assert!(back.dataset_policy.init_errors_fatal);
        // Off by default, and said so; `--set` turns it on; anything but yes or no is refused with its line.
        let d = ConfigFile::default();
        assert!(!d.dataset_policy.init_errors_fatal);
        assert!(d.dump().contains("  init-failure-fatal: no  # default\n"));
        let set =
            ConfigFile::parse_with("", "s.yaml", &["engine.init-failure-fatal=yes".to_string()])
                .unwrap();
        assert_eq!(set.init_failure_fatal, Some((true, "--set".to_string())));
        assert!(set.dataset_policy.init_errors_fatal);
        let off = ConfigFile::parse("engine:\n  init-failure-fatal: no\n", "s.yaml").unwrap();
        assert!(!off.dataset_policy.init_errors_fatal);
        let bad =
            ConfigFile::parse("engine:\n  init-failure-fatal: maybe\n", "s.yaml").unwrap_err();
        assert!(
            bad.to_string()
                .starts_with("s.yaml:2: engine.init-failure-fatal: expected yes or no"),
            "{bad}"
        );
    }

    #[test]
    fn action_order_is_read_applied_dumped_and_checked() {
        let c = ConfigFile::parse(
            "action-order:\n  - drop\n  - pass\n  - reject\n  - alert\n",
            "s.yaml",
        )
        .unwrap();
        let mut e = EngineConfig::default();
        c.apply(&mut e);
        assert_eq!(e.action_order.names(), ["drop", "pass", "reject", "alert"]);
        assert!(
            c.dump()
                .contains("action-order: [drop, pass, reject, alert]  # s.yaml:1\n")
        );
        let back = ConfigFile::parse(&c.dump(), "dump").unwrap();
        assert_eq!(back.action_order.map(|(o, _)| o), Some(e.action_order));
        assert!(
            ConfigFile::default()
                .dump()
                .contains("action-order: [pass, drop, reject, alert]  # default\n")
        );
        let bad = ConfigFile::parse("action-order: [pass, drop, alert]\n", "s.yaml").unwrap_err();
        assert!(
            bad.to_string().starts_with("s.yaml:1: action-order:"),
            "{bad}"
        );
        assert!(ConfigFile::parse("action-order: pass\n", "s.yaml").is_err());
    }

    #[test]
    fn errors_are_one_line_with_file_and_line() {
        for (text, want) in [
            (
                "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/33]\"\n",
                "x.yaml:3: HOME_NET: invalid address",
            ),
            (
                "vars:\n  address-groups:\n    HOME_NET: \"$NOPE\"\n",
                "x.yaml:3: HOME_NET: undefined variable $NOPE",
            ),
            (
                "vars:\n  address-groups:\n    A: \"$B\"\n    B: \"[1.2.3.4,$A]\"\n",
                "x.yaml:4: B: variable cycle $A -> $B -> $A",
            ),
            (
                "vars:\n  port-groups:\n    HTTP_PORTS: [80, 8080]\n",
                "x.yaml:3: HTTP_PORTS: expected a value",
            ),
            (
                "vars:\n  host-groups:\n    X: 1\n",
                "x.yaml:2: vars: unknown section `host-groups`",
            ),
            ("vars: [\n", "x.yaml:2: did not find expected node content"),
            ("- a\n- b\n", "x.yaml:1: expected a mapping"),
        ] {
            let e = ConfigFile::parse(text, "x.yaml").unwrap_err().0;
            assert!(e.starts_with(want) && !e.contains('\n'), "{text:?}: {e}");
        }
    }

    #[test]
    fn hostile_values_survive_the_dump() {
        let mut c = ConfigFile::default();
        c.vars.set("ODD", "a\"b\\c\nd");
        let back = ConfigFile::parse(&c.dump(), "dump.yaml");
        // The value is not a valid address, but it reads back as written.
        let e = back.unwrap_err().0;
        assert!(e.starts_with("dump.yaml:") && e.contains("ODD"), "{e}");
    }

    #[test]
    fn tunnel_depth_in_the_flow_key_is_read_under_suricatas_key() {
        let mut e = EngineConfig::default();
        assert!(e.decode.tunnel_depth_in_key);
        let c = ConfigFile::parse(
            "decoder:\n  recursion-level:\n    use-for-tracking: false\n",
            "d.yaml",
        )
        .unwrap();
        c.apply(&mut e);
        assert!(!e.decode.tunnel_depth_in_key);
        assert!(c.dump().contains("use-for-tracking: false"));
    }

    #[test]
    fn icmp_errors_in_the_quoted_flow_is_a_setting_off_by_default() {
        let mut e = EngineConfig::default();
        assert!(!e.decode.icmp_errors_in_quoted_flow);
        let c =
            ConfigFile::parse("decoder:\n  icmp-errors-in-quoted-flow: yes\n", "d.yaml").unwrap();
        c.apply(&mut e);
        assert!(e.decode.icmp_errors_in_quoted_flow);
        assert!(
            c.dump().contains("icmp-errors-in-quoted-flow: true"),
            "{}",
            c.dump()
        );
    }

    #[test]
    fn command_line_overrides() {
        let mut c = ConfigFile::parse(SITE, "site.yaml").unwrap();
        c.set_var("HOME_NET=[192.168.7.0/24]").unwrap();
        c.set_var("$MY_PORTS=[22,2222]").unwrap();
        c.check().unwrap();
        assert_eq!(c.vars.get("HOME_NET"), Some("[192.168.7.0/24]"));
        assert_eq!(c.vars.var("MY_PORTS").map(|v| v.kind), Some(VarKind::Port));
        assert!(c.dump().contains("HOME_NET: \"[192.168.7.0/24]\"  # --var"));
        assert!(c.set_var("HOME_NET").is_err() && c.set_var("=1").is_err());
        c.set_var("HOME_NET=[10.0.0.0/8,$LAN]").unwrap();
        assert_eq!(
            c.check().unwrap_err().0,
            "--var: HOME_NET: undefined variable $LAN"
        );
    }

    #[test]
    fn tagged_packets_are_read_from_the_alert_output_and_dumped() {
        let text = "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - alert:\n            \
                    tagged-packets: yes\n        - dns\n";
        let c = ConfigFile::parse(text, "s.yaml").unwrap();
        assert_eq!(c.tagged_packets.as_ref().map(|t| t.0), Some(true));
        let mut e = EngineConfig::default();
        assert!(
            !e.tagged_packets,
            "off unless the configuration turns it on"
        );
        c.apply(&mut e);
        assert!(e.tagged_packets);
        // The dump reads back the same.
        let again = ConfigFile::parse(&c.dump(), "dump").unwrap();
        assert_eq!(again.tagged_packets.map(|t| t.0), Some(true));
        // A disabled output logs nothing; a value that is not yes or no is an error with its line.
        let off = text.replace("enabled: yes", "enabled: no");
        assert_eq!(
            ConfigFile::parse(&off, "s.yaml").unwrap().tagged_packets,
            None
        );
        let bad = text.replace("tagged-packets: yes", "tagged-packets: maybe");
        let e = ConfigFile::parse(&bad, "s.yaml").unwrap_err().to_string();
        assert!(
            e.starts_with("s.yaml:6: ") && e.contains("tagged-packets"),
            "{e}"
        );
    }

    #[test]
    fn anomaly_kinds_are_read_from_the_anomaly_output_and_dumped() {
        let text = "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - alert\n        - anomaly:\n            \
                    enabled: yes\n            packethdr: yes\n            types:\n              decode: yes\n              stream: yes\n";
        let c = ConfigFile::parse(text, "s.yaml").unwrap();
        let want = crate::config::AnomalyTypes {
            decode: true,
            stream: true,
            applayer: true,
            packethdr: true,
        };
        assert_eq!(c.anomaly.as_ref().map(|a| a.0), Some(want));
        let mut e = EngineConfig::default();
        assert_eq!(
            e.anomaly,
            crate::config::AnomalyTypes {
                decode: false,
                stream: false,
                applayer: true,
                packethdr: false,
            },
            "Suricata's default: application-layer anomalies only"
        );
        c.apply(&mut e);
        assert_eq!(e.anomaly, want);
        let again = ConfigFile::parse(&c.dump(), "dump").unwrap();
        assert_eq!(again.anomaly.map(|a| a.0), Some(want));
        // `enabled: no` writes none; an output without an `anomaly` item keeps the default.
        let off = text.replace("            enabled: yes", "            enabled: no");
        assert_eq!(
            ConfigFile::parse(&off, "s.yaml")
                .unwrap()
                .anomaly
                .map(|a| a.0),
            Some(crate::config::AnomalyTypes::NONE)
        );
        let none = "outputs:\n  - eve-log:\n      enabled: yes\n      types:\n        - alert\n";
        assert_eq!(ConfigFile::parse(none, "s.yaml").unwrap().anomaly, None);
        let bad = text.replace("decode: yes", "decode: maybe");
        let e = ConfigFile::parse(&bad, "s.yaml").unwrap_err().to_string();
        assert!(e.starts_with("s.yaml:10: ") && e.contains("decode"), "{e}");
    }

    #[test]
    fn the_eve_log_filetype_and_redis_settings_are_read_and_dumped() {
        let text = "outputs:\n  - eve-log:\n      enabled: yes\n      filetype: redis\n      redis:\n        \
                    server: 10.0.0.5\n        port: 6380\n        mode: channel\n        key: ids\n        \
                    async: true\n";
        let c = ConfigFile::parse(text, "r.yaml").unwrap();
        let got: Vec<(&str, &str)> = c
            .eve_settings
            .iter()
            .map(|(k, v, _)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("filetype", "redis"),
                ("redis.server", "10.0.0.5"),
                ("redis.port", "6380"),
                ("redis.mode", "channel"),
                ("redis.key", "ids")
            ]
        );
        assert_eq!(c.eve_settings[0].2, "r.yaml:4");
        let back = ConfigFile::parse(&c.dump(), "dump.yaml").unwrap();
        let values = |c: &ConfigFile| -> Vec<(String, String)> {
            c.eve_settings
                .iter()
                .map(|(k, v, _)| (k.clone(), v.clone()))
                .collect()
        };
        assert_eq!(values(&back), values(&c), "{}", c.dump());
        // A disabled output names nothing.
        let off = ConfigFile::parse(
            "outputs:\n  - eve-log:\n      enabled: no\n      filetype: redis\n",
            "o.yaml",
        )
        .unwrap();
        assert!(off.eve_settings.is_empty());
    }

    #[test]
    fn engine_settings_rule_files_and_eve_in_the_suricata_layout() {
        let text = "default-rule-path: /etc/suricata/rules\nrule-files:\n  - local.rules\n  - /abs/x.rules\n\
                    default-log-dir: /var/log/suricata/\noutputs:\n  - fast: {enabled: yes}\n  - eve-log:\n      \
                    enabled: yes\n      filename: eve.json\nflow-timeouts:\n  tcp:\n    established: 3600\n\
                    stream:\n  midstream: false\n  checksum-validation: yes\n  reassembly:\n    memcap: 256mb\n";
        let c = ConfigFile::parse(text, "s.yaml").unwrap();
        assert_eq!(
            c.rule_files,
            [
                PathBuf::from("/etc/suricata/rules/local.rules"),
                PathBuf::from("/abs/x.rules")
            ]
        );
        assert_eq!(
            c.eve_log.as_ref().map(|e| e.0.clone()),
            Some(PathBuf::from("/var/log/suricata/eve.json"))
        );
        assert_eq!(c.ignored, ["stream.checksum-validation"]);
        let mut e = EngineConfig::default();
        c.apply(&mut e);
        assert_eq!(e.timeouts.tcp_established_ns, 3600 * NS);
        assert!(!e.midstream);
        assert_eq!(e.reassembly_memcap, 256 << 20);
        let d = c.dump();
        assert!(
            d.contains("flow-timeouts:\n  default:\n    new: 30  # default\n"),
            "{d}"
        );
        assert!(
            d.contains("  tcp:\n    new: 60  # default\n    established: 3600  # s.yaml:13\n"),
            "{d}"
        );
        assert!(
            d.contains(
                "stream:\n  midstream: false  # s.yaml:15\n  reassembly:\n    memcap: 256mb"
            ),
            "{d}"
        );
        // The dump reads back to the same configuration.
        let back = ConfigFile::parse(&d, "dump.yaml").unwrap();
        let mut e2 = EngineConfig::default();
        back.apply(&mut e2);
        assert_eq!(
            SETTINGS.iter().map(|s| (s.get)(&e2)).collect::<Vec<_>>(),
            SETTINGS.iter().map(|s| (s.get)(&e)).collect::<Vec<_>>()
        );
        assert_eq!(back.rule_files, c.rule_files);
        assert_eq!(back.eve_log.map(|e| e.0), c.eve_log.map(|e| e.0));
        // A bad value names the file, line and key.
        let e = ConfigFile::parse("stream:\n  midstream: maybe\n", "x.yaml")
            .unwrap_err()
            .0;
        assert_eq!(e, "x.yaml:2: stream.midstream: expected yes or no");
    }

    /// `packet-alert-max`, a top-level key: read from the file or `--set`, dumped with its origin, checked.
    #[test]
    fn detection_ports_are_read_applied_and_dumped() {
        use flowbundle_types::{AppProto, Transport};
        let text = "app-layer:\n  protocols:\n    dns:\n      tcp:\n        detection-ports:\n          dp: 1053\n      \
                    enabled: yes\n";
        let c = ConfigFile::parse_with(
            text,
            "s.yaml",
            &["app-layer.protocols.dns.detection-ports.dp=5353".into()],
        )
        .unwrap();
        let mut e = EngineConfig::default();
        c.apply(&mut e);
        assert_eq!(
            e.detection_ports,
            [
                (AppProto::Dns, Transport::Tcp, 1053),
                (AppProto::Dns, Transport::Udp, 5353),
                (AppProto::Dns, Transport::Tcp, 5353),
            ]
        );
        assert_eq!(c.ignored, ["app-layer.protocols.dns.enabled"]);
        let dump = c.dump();
        assert!(
            dump.contains("        detection-ports:\n          dp: \"1053\"  # s.yaml:6\n"),
            "{dump}"
        );
        assert!(
            dump.contains("      detection-ports:\n        dp: \"5353\"  # --set\n"),
            "{dump}"
        );
        // The dump reads back to the same ports.
        let again = ConfigFile::parse(&dump, "dump").unwrap();
        let mut e2 = EngineConfig::default();
        again.apply(&mut e2);
        assert_eq!(e2.detection_ports, e.detection_ports);
        // Lists, unknown protocols, and a port that is not one.
        assert_eq!(
            detection_ports_setting("app-layer.protocols.rfb.detection-ports.dp", "[5900, 5901]"),
            Some(Ok(vec![
                (AppProto::Vnc, Transport::Tcp, 5900),
                (AppProto::Vnc, Transport::Tcp, 5901)
            ]))
        );
        assert_eq!(
            detection_ports_setting("app-layer.protocols.nosuch.detection-ports.dp", "1"),
            None
        );
        let e = ConfigFile::parse_with(
            "",
            "x",
            &["app-layer.protocols.dns.detection-ports.dp=any".into()],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("--set app-layer.protocols.dns.detection-ports.dp: expected ports"),
            "{e}"
        );
    }

    #[test]
    fn packet_alert_max_is_read_and_dumped() {
        let c = ConfigFile::parse("packet-alert-max: 3\n", "a.yaml").unwrap();
        let mut e = EngineConfig::default();
        assert_eq!(e.packet_alert_max, crate::config::DEFAULT_PACKET_ALERT_MAX);
        c.apply(&mut e);
        assert_eq!(e.packet_alert_max, 3);
        let d = c.dump();
        assert!(d.contains("packet-alert-max: 3  # a.yaml:1\n"), "{d}");
        let d0 = ConfigFile::parse("", "b.yaml").unwrap().dump();
        assert!(d0.contains("packet-alert-max: 15  # default\n"), "{d0}");
        let err = ConfigFile::parse("packet-alert-max: many\n", "x.yaml")
            .unwrap_err()
            .0;
        assert_eq!(err, "x.yaml:1: packet-alert-max: expected a whole number");
    }

    /// `outputs` is a list in Suricata's layout: `--set outputs.eve-log.KEY` names the eve-log item by its key
    /// (added when the file has none), `--set outputs.N.eve-log.KEY` by its position, and the values say `--set`.
    #[test]
    fn set_reaches_the_eve_log_output_by_name_or_position() {
        let sets = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // No file: the item is made.
        let c = ConfigFile::parse_with(
            "",
            "--set",
            &sets(&[
                "outputs.eve-log.filename=/tmp/e.sock",
                "outputs.eve-log.filetype=unix_dgram",
            ]),
        )
        .unwrap();
        assert_eq!(
            c.eve_log,
            Some((PathBuf::from("/tmp/e.sock"), "--set".to_string()))
        );
        assert_eq!(
            c.eve_settings,
            vec![(
                "filetype".to_string(),
                "unix_dgram".to_string(),
                "--set".to_string()
            )]
        );
        // A file with a fast item before eve-log: by name and by position, over the file's values.
        let file = "outputs:\n  - fast: {enabled: yes}\n  - eve-log:\n      enabled: yes\n      filename: a.json\n      \
                    filetype: redis\n      redis:\n        port: 6379\n";
        let c = ConfigFile::parse_with(
            file,
            "s.yaml",
            &sets(&[
                "outputs.1.eve-log.redis.port=6380",
                "outputs.eve-log.redis.key=ev",
            ]),
        )
        .unwrap();
        let got: Vec<_> = c
            .eve_settings
            .iter()
            .map(|(k, v, o)| format!("{k}={v} ({o})"))
            .collect();
        assert_eq!(
            got,
            [
                "filetype=redis (s.yaml:6)",
                "redis.port=6380 (--set)",
                "redis.key=ev (--set)"
            ]
        );
        assert_eq!(c.eve_log.map(|e| e.0), Some(PathBuf::from("a.json")));
        // Turned off by --set.
        let c =
            ConfigFile::parse_with(file, "s.yaml", &sets(&["outputs.eve-log.enabled=no"])).unwrap();
        assert_eq!(c.eve_log, None);
        for (bad, want) in [
            (
                "outputs.5.eve-log.filename=x",
                "`outputs` has 2 items, none at position 5",
            ),
            ("outputs.1=x", "names a list item, not a key"),
            (
                "outputs.eve-log.filename.x=1",
                "`outputs.eve-log.filename` is not a section",
            ),
        ] {
            let e = ConfigFile::parse_with(file, "s.yaml", &sets(&[bad]))
                .unwrap_err()
                .0;
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    /// `app-layer.protocols.dcerpc.interface-names` (flowbundle's own key) turns on Suricata 9's interface names,
    /// from the file or `--set`; off by default.
    #[test]
    fn dcerpc_interface_names_setting() {
        let mut e = EngineConfig::default();
        ConfigFile::parse("", "x.yaml").unwrap().apply(&mut e);
        assert!(!e.limits.dcerpc_names);
        let c = ConfigFile::parse(
            "app-layer:\n  protocols:\n    dcerpc:\n      interface-names: yes\n",
            "x.yaml",
        )
        .unwrap();
        assert!(c.ignored.is_empty(), "{:?}", c.ignored);
        c.apply(&mut e);
        assert!(e.limits.dcerpc_names);
        let c = ConfigFile::parse_with(
            "",
            "--set",
            &["app-layer.protocols.dcerpc.interface-names=no".to_string()],
        )
        .unwrap();
        c.apply(&mut e);
        assert!(!e.limits.dcerpc_names);
    }

    #[test]
    fn set_overrides_any_key_by_its_dotted_path() {
        let sets = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let c = ConfigFile::parse_with(
            SITE,
            "site.yaml",
            &sets(&[
                "vars.address-groups.HOME_NET=[192.168.0.0/16]",
                "stream.midstream=no",
                "flow-timeouts.udp.new=5",
            ]),
        )
        .unwrap();
        assert_eq!(c.vars.get("HOME_NET"), Some("[192.168.0.0/16]"));
        assert_eq!(
            c.vars.var("HOME_NET").map(|v| v.origin.clone()),
            Some(Origin::Set("--set".into()))
        );
        assert_eq!(
            c.vars.get("HTTP_PORTS"),
            Some("[80,8080]"),
            "the file's other values stay"
        );
        let mut e = EngineConfig::default();
        c.apply(&mut e);
        assert!(!e.midstream);
        assert_eq!(e.timeouts.udp_new_ns, 5 * NS);
        assert!(c.dump().contains("midstream: false  # --set\n"));
        // Without a file, and refused with the reason.
        let c =
            ConfigFile::parse_with("", "--set", &sets(&["stream.reassembly.memcap=1gb"])).unwrap();
        let mut e = EngineConfig::default();
        c.apply(&mut e);
        assert_eq!(e.reassembly_memcap, 1 << 30);
        for (bad, want) in [
            ("nokey", "--set nokey: expected KEY=VALUE"),
            (
                "stream.midstream=perhaps",
                "--set stream.midstream: expected yes or no",
            ),
            (
                "vars.address-groups.HOME_NET.x=1",
                "--set vars.address-groups.HOME_NET.x=1: `vars.address-groups.HOME_NET` is not a section",
            ),
        ] {
            let e = ConfigFile::parse_with(SITE, "site.yaml", &sets(&[bad]))
                .unwrap_err()
                .0;
            assert!(e.starts_with(want), "{bad}: {e}");
        }
    }

    #[test]
    fn the_datasets_section_is_read_with_its_errors_placed() {
        let c = ConfigFile::parse(
            "default-data-dir: /srv/data\ndatasets:\n  defaults:\n    memcap: 10mb\n  rules:\n    allow-write: no\n  ua-seen:\n    type: string\n    state: ua.lst\n",
            "x.yaml",
        )
        .unwrap();
        assert_eq!(c.dataset_policy.data_dir, PathBuf::from("/srv/data"));
        assert_eq!(c.dataset_policy.default_memcap, 10 << 20);
        assert!(!c.dataset_policy.allow_write);
        assert_eq!(c.datasets.len(), 1);
        assert_eq!(c.datasets[0].0, "ua-seen");
        assert_eq!(c.datasets[0].1.save.as_deref(), Some(Path::new("ua.lst")));
        for (text, want) in [
            (
                "datasets:\n  a:\n    type: blob\n",
                "x.yaml:3: datasets.a.type: unknown type `blob`",
            ),
            (
                "datasets:\n  a:\n    load: f\n",
                "x.yaml:2: datasets.a: `type` needed",
            ),
            (
                "datasets:\n  defaults:\n    memcap: lots\n",
                "x.yaml:3: datasets.defaults.memcap: invalid size",
            ),
            (
                "datasets:\n  a: 3\n",
                "x.yaml:2: datasets.a: expected a mapping",
            ),
        ] {
            let e = ConfigFile::parse(text, "x.yaml").unwrap_err().to_string();
            assert_eq!(e, want, "{text:?}");
        }
    }
}
