//! Rule variables: the address groups and port groups (`$HOME_NET`, `$HTTP_PORTS`, ...) a rule header names.
//!
//! Values are address or port expressions exactly as a rule would write them (`[10.0.0.0/8,!$DNS_SERVERS]`,
//! `[80,8000:8080]`) and may refer to other variables; they are expanded when a rule is read ([`crate::addr`]).
//! [`Vars::suricata_defaults`] is the `vars:` section of Suricata 8's default `suricata.yaml`, which the engine
//! uses when nothing else is configured, as Suricata does. Each value remembers where it came from ([`Origin`]) so
//! that a run can say which variables its rules used at their default values (a `HOME_NET` left at RFC 1918 on a
//! network that is not decides which "inbound" rules fire).
//!
//! A rule naming a variable that is not defined is skipped with the reason `undefined variable $NAME` (Suricata
//! refuses such a rule too); a variable whose expansion comes back to itself is an error (`variable cycle`).
//! [`Vars::check`] compiles every value once, so a configuration file with a bad value fails before any rule is
//! read.

use std::collections::{BTreeMap, BTreeSet};

use crate::addr::{ExprError, Resolver};

/// Whether a variable holds addresses or ports (Suricata's `address-groups` and `port-groups`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VarKind {
    Address,
    Port,
}

impl VarKind {
    /// The `vars:` section of `suricata.yaml` the kind lives in.
    pub fn section(self) -> &'static str {
        match self {
            VarKind::Address => "address-groups",
            VarKind::Port => "port-groups",
        }
    }
}

/// Where a variable's value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Suricata's default `suricata.yaml`.
    Default,
    /// Set by the user: a configuration file (`file:line`), `--var`, or a program.
    Set(String),
}

/// One variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Var {
    pub value: String,
    pub kind: VarKind,
    pub origin: Origin,
}

/// Named rule variables, without the `$`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vars {
    map: BTreeMap<String, Var>,
}

/// The `vars:` section of Suricata 8's default `suricata.yaml`.
const SURICATA_ADDRESS_GROUPS: &[(&str, &str)] = &[
    ("HOME_NET", "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"),
    ("EXTERNAL_NET", "!$HOME_NET"),
    ("HTTP_SERVERS", "$HOME_NET"),
    ("SMTP_SERVERS", "$HOME_NET"),
    ("SQL_SERVERS", "$HOME_NET"),
    ("DNS_SERVERS", "$HOME_NET"),
    ("TELNET_SERVERS", "$HOME_NET"),
    ("AIM_SERVERS", "$EXTERNAL_NET"),
    ("DC_SERVERS", "$HOME_NET"),
    ("DNP3_SERVER", "$HOME_NET"),
    ("DNP3_CLIENT", "$HOME_NET"),
    ("MODBUS_CLIENT", "$HOME_NET"),
    ("MODBUS_SERVER", "$HOME_NET"),
    ("ENIP_CLIENT", "$HOME_NET"),
    ("ENIP_SERVER", "$HOME_NET"),
];

const SURICATA_PORT_GROUPS: &[(&str, &str)] = &[
    ("HTTP_PORTS", "80"),
    ("SHELLCODE_PORTS", "!80"),
    ("ORACLE_PORTS", "1521"),
    ("SSH_PORTS", "22"),
    ("DNP3_PORTS", "20000"),
    ("MODBUS_PORTS", "502"),
    ("FILE_DATA_PORTS", "[$HTTP_PORTS,110,143]"),
    ("FTP_PORTS", "21"),
    ("GENEVE_PORTS", "6081"),
    ("VXLAN_PORTS", "4789"),
    ("TEREDO_PORTS", "3544"),
];

impl Vars {
    /// No variables: a rule naming one is skipped (`undefined variable $NAME`).
    pub fn new() -> Vars {
        Vars::default()
    }

    /// The address and port groups of Suricata's default `suricata.yaml` (what the engine uses unless configured,
    /// and what the suricata-verify tests assume).
    pub fn suricata_defaults() -> Vars {
        let mut v = Vars::new();
        for (kind, list) in [
            (VarKind::Address, SURICATA_ADDRESS_GROUPS),
            (VarKind::Port, SURICATA_PORT_GROUPS),
        ] {
            for (k, val) in list {
                v.define(k, val, kind, Origin::Default);
            }
        }
        v
    }

    /// Defines (or redefines) `name` (with or without a leading `$`), with the kind it had (addresses if new, or
    /// ports when the name ends in `_PORTS`), as set by a program.
    pub fn set(&mut self, name: &str, value: &str) -> &mut Vars {
        let kind = self.kind_for(name);
        self.define(name, value, kind, Origin::Set("set".into()))
    }

    /// Defines (or redefines) `name` with its kind and where the value comes from.
    pub fn define(&mut self, name: &str, value: &str, kind: VarKind, origin: Origin) -> &mut Vars {
        self.map.insert(
            name.trim_start_matches('$').to_string(),
            Var {
                value: value.trim().to_string(),
                kind,
                origin,
            },
        );
        self
    }

    /// The kind `name` has, or would get: its current kind, else ports for `*_PORTS`/`*_PORT`, else addresses.
    pub fn kind_for(&self, name: &str) -> VarKind {
        let name = name.trim_start_matches('$');
        match self.map.get(name) {
            Some(v) => v.kind,
            None if name.ends_with("_PORTS") || name.ends_with("_PORT") => VarKind::Port,
            None => VarKind::Address,
        }
    }

    /// The value of `name`, if defined.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.var(name).map(|v| v.value.as_str())
    }

    /// The variable `name`, if defined.
    pub fn var(&self, name: &str) -> Option<&Var> {
        self.map.get(name.trim_start_matches('$'))
    }

    /// Every variable, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Var)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Those of `names` whose value is still Suricata's default.
    pub fn at_default<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Vec<String> {
        let set: BTreeSet<&str> = names
            .into_iter()
            .filter(|n| self.var(n).is_some_and(|v| v.origin == Origin::Default))
            .collect();
        set.into_iter().map(str::to_string).collect()
    }

    /// Compiles every value as its kind: the first variable whose value is not a valid expression (bad syntax, an
    /// undefined variable inside it, a cycle), with the reason.
    pub fn check(&self) -> Result<(), (String, String)> {
        let mut r = Resolver::new(self);
        for (name, v) in &self.map {
            let res = match v.kind {
                VarKind::Address => r.addr(&format!("${name}")).map(|_| ()),
                VarKind::Port => r.port(&format!("${name}")).map(|_| ()),
            };
            if let Err(e) = res {
                // Named where it is written: the innermost variable whose own value failed.
                let at = r.error_in.take().unwrap_or_else(|| name.clone());
                let why = match e {
                    ExprError::Undefined(u) => format!("undefined variable ${u}"),
                    ExprError::Invalid(m) => m,
                };
                return Err((at, why));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_suricatas() {
        let v = Vars::suricata_defaults();
        assert_eq!(v.iter().count(), 26);
        assert_eq!(v.get("$EXTERNAL_NET"), Some("!$HOME_NET"));
        assert_eq!(v.var("HTTP_PORTS").map(|x| x.kind), Some(VarKind::Port));
        assert!(v.check().is_ok());
        let mut v = v;
        v.define(
            "HOME_NET",
            "10.1.0.0/16",
            VarKind::Address,
            Origin::Set("--var".into()),
        );
        assert_eq!(
            v.at_default(["HOME_NET", "EXTERNAL_NET", "NOPE"]),
            vec!["EXTERNAL_NET".to_string()]
        );
    }

    #[test]
    fn check_names_the_bad_variable() {
        let mut v = Vars::suricata_defaults();
        v.set("HOME_NET", "[10.0.0.0/8,$MY_NET]");
        assert_eq!(
            v.check(),
            Err((
                "HOME_NET".to_string(),
                "undefined variable $MY_NET".to_string()
            ))
        );
        let mut v = Vars::new();
        v.set("A", "[1.2.3.4,$B]").set("B", "!$A");
        let (name, why) = v.check().unwrap_err();
        assert_eq!(name, "B");
        assert!(why.contains("variable cycle $A -> $B -> $A"), "{why}");
        let mut v = Vars::new();
        v.set("WEB_PORTS", "80,443");
        assert!(v.check().unwrap_err().1.contains("invalid port"));
    }
}
