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
//! Variables start from Suricata's defaults ([`Vars::suricata_defaults`]); the file replaces those it names and adds
//! others; `--var NAME=VALUE` ([`ConfigFile::set_var`]) then overrides either. Every value is compiled once after
//! loading ([`Vars::check`]), so a bad address, an undefined variable or a cycle is reported with the file and line
//! of the variable (`site.yaml:7: HOME_NET: invalid address ...`) before any rule is read. Other top-level sections
//! of a `suricata.yaml` (`outputs`, `app-layer`, ...) are not read; they are listed in [`ConfigFile::ignored`] so
//! the command can say so. [`ConfigFile::dump`] writes the effective configuration in the same layout, each value
//! with where it came from; reading the dump back gives the same variables.

use std::path::Path;

use flowbundle_rules::{Origin, VarKind, Vars};
use serde_norway::Value;

/// Largest configuration file read.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The effective configuration: defaults, then a file, then command-line overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigFile {
    /// Rule variables.
    pub vars: Vars,
    /// Top-level sections of the file that are not read (in file order).
    pub ignored: Vec<String>,
}

impl Default for ConfigFile {
    fn default() -> Self {
        ConfigFile {
            vars: Vars::suricata_defaults(),
            ignored: Vec::new(),
        }
    }
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
        let name = path.display().to_string();
        let io = |e: std::io::Error| ConfigError(format!("{name}: {e}"));
        let len = std::fs::metadata(path).map_err(io)?.len();
        if len > MAX_CONFIG_BYTES {
            return Err(ConfigError(format!(
                "{name}: larger than {MAX_CONFIG_BYTES} bytes"
            )));
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| ConfigError(format!("{name}: not UTF-8 text ({e})")))?;
        ConfigFile::parse(&text, &name)
    }

    /// Reads configuration text named `name` (for messages) over the defaults.
    pub fn parse(text: &str, name: &str) -> Result<ConfigFile, ConfigError> {
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
        let top = match doc {
            Value::Mapping(m) => m,
            Value::Null => return Ok(cfg),
            _ => return Err(at(Some(1), "expected a mapping of sections".into())),
        };
        for (k, v) in &top {
            let key = scalar(k).unwrap_or_default();
            if key != "vars" {
                cfg.ignored.push(key);
                continue;
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
                    let origin = Origin::Set(match vline {
                        Some(l) => format!("{name}:{l}"),
                        None => name.to_string(),
                    });
                    cfg.vars.define(&vname, &value, kind, origin);
                }
            }
        }
        cfg.check()?;
        Ok(cfg)
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
            "# flowbundle: effective configuration (defaults are Suricata's suricata.yaml)\nvars:\n",
        );
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

    const SITE: &str = "%YAML 1.1\n---\n# a site\nvars:\n  address-groups:\n    HOME_NET: \"[10.1.0.0/16]\"\n    WEB_SERVERS: \"[$HOME_NET,!10.1.9.9]\"\n  port-groups:\n    HTTP_PORTS: \"[80,8080]\"\n    ORACLE_PORTS: 1521\noutputs:\n  - eve-log:\n      enabled: yes\n";

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
        assert_eq!(c.ignored, ["outputs"]);
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
}
