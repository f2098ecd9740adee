//! Generates [`AppProto`]'s table from the protocols' registration records.
//!
//! Every application protocol has one directory under `crates/protocols/src/` holding its detector, its parser if it
//! has one, and `protocol.toml`, its registration record (see `crates/protocols/README.md` for the fields). This
//! script reads every record and writes the enumeration with its name tables, ports, categories and EVE names, so a
//! protocol is added by adding its directory and nothing else. The records are read here, in the vocabulary crate,
//! because every crate names the protocols through `AppProto` while only the identification crate holds their code;
//! `crates/protocols/build.rs` reads the same records for the detectors' probing order.
//!
//! The variants are ordered by name (`Unknown` first), so [`AppProto::index`] is stable for a given set of
//! protocols. A record that names an unknown category, a port on a transport the protocol does not run on, or a
//! name another record already took stops the build with a message naming the file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// nDPI's category names (`ndpiReader -a 1` of nDPI 4.x, as its results print them).
const CATEGORIES: &[&str] = &[
    "Unspecified",
    "Media",
    "VPN",
    "Email",
    "DataTransfer",
    "Web",
    "SocialNetwork",
    "Download",
    "Game",
    "Chat",
    "VoIP",
    "Database",
    "RemoteAccess",
    "Cloud",
    "Network",
    "Collaborative",
    "RPC",
    "Streaming",
    "System",
    "SoftwareUpdate",
    "Music",
    "Video",
    "Shopping",
    "Productivity",
    "FileSharing",
    "ConnCheck",
    "IoT-Scada",
    "VirtAssistant",
    "Cybersecurity",
    "AdultContent",
    "Mining",
    "Malware",
    "Advertisement",
    "Banned_Site",
    "Site_Unavailable",
    "Allowed_Site",
    "Antimalware",
    "Crypto_Currency",
    "Gambling",
];

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    protocol: Vec<Record>,
    /// Read by `crates/protocols/build.rs`; only its presence is checked here.
    #[serde(default)]
    #[allow(dead_code)]
    detector: Vec<toml::Value>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    variant: String,
    ndpi: String,
    #[serde(default)]
    suricata: Option<String>,
    category: String,
    transports: Vec<String>,
    #[serde(default)]
    tcp_ports: Vec<u16>,
    #[serde(default)]
    udp_ports: Vec<u16>,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    eve_event: Option<String>,
    #[serde(default)]
    rule_buffers: Vec<String>,
    #[serde(default)]
    l7filter: Option<String>,
    #[serde(default)]
    doc: Option<String>,
}

fn fail(path: &Path, msg: &str) -> ! {
    panic!("{}: {msg}", path.display())
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let dir = manifest.join("../protocols/src");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| fail(&dir, &format!("cannot list the protocol directories: {e}")))
        .filter_map(|e| e.ok().map(|e| e.path().join("protocol.toml")))
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    let mut records: Vec<(PathBuf, Record)> = Vec::new();
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| fail(&path, &e.to_string()));
        let file: File = toml::from_str(&text).unwrap_or_else(|e| fail(&path, &e.to_string()));
        for r in file.protocol {
            records.push((path.clone(), r));
        }
    }
    let mut variants = BTreeMap::new();
    let mut names = BTreeMap::new();
    let mut l7 = BTreeMap::new();
    for (path, r) in &records {
        if !r.variant.starts_with(|c: char| c.is_ascii_uppercase())
            || !r.variant.chars().all(|c| c.is_ascii_alphanumeric())
            || r.variant == "Unknown"
        {
            fail(
                path,
                &format!("variant {:?} is not a CamelCase identifier", r.variant),
            );
        }
        if let Some(other) = variants.insert(r.variant.clone(), path.clone()) {
            fail(
                path,
                &format!(
                    "variant {} is also registered by {}",
                    r.variant,
                    other.display()
                ),
            );
        }
        if r.ndpi == "Unknown" || names.insert(r.ndpi.clone(), path.clone()).is_some() {
            fail(path, &format!("nDPI name {:?} is registered twice", r.ndpi));
        }
        if let Some(n) = &r.l7filter
            && l7.insert(n.to_ascii_lowercase(), path.clone()).is_some()
        {
            fail(path, &format!("L7-filter name {n:?} is registered twice"));
        }
        if !CATEGORIES.contains(&r.category.as_str()) {
            fail(
                path,
                &format!(
                    "{}: category {:?} is not one of nDPI's",
                    r.variant, r.category
                ),
            );
        }
        if r.transports.is_empty() || !r.transports.iter().all(|t| t == "tcp" || t == "udp") {
            fail(
                path,
                &format!("{}: transports must be \"tcp\" and/or \"udp\"", r.variant),
            );
        }
        for (t, ports) in [("tcp", &r.tcp_ports), ("udp", &r.udp_ports)] {
            if !ports.is_empty() && !r.transports.iter().any(|x| x == t) {
                fail(
                    path,
                    &format!(
                        "{}: {t} ports on a protocol that does not run on {t}",
                        r.variant
                    ),
                );
            }
        }
        // Whether a parser writes that event type is checked where the events are defined (the protocols crate's
        // `registrations_name_event_types_the_parsers_write`); here only its spelling.
        if let Some(e) = &r.eve_event
            && (e.is_empty()
                || !e
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'))
        {
            fail(
                path,
                &format!(
                    "{}: EVE event type {e:?} is not a lowercase EVE name",
                    r.variant
                ),
            );
        }
        for b in &r.rule_buffers {
            if !b.ends_with('.') || b.len() < 2 {
                fail(
                    path,
                    &format!(
                        "{}: rule buffer prefix {b:?} must end with a dot",
                        r.variant
                    ),
                );
            }
        }
    }
    records.sort_by(|a, b| a.1.variant.cmp(&b.1.variant));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"))
        .join("app_proto_table.rs");
    std::fs::write(&out, generate(&records)).unwrap_or_else(|e| fail(&out, &e.to_string()));
}

fn generate(records: &[(PathBuf, Record)]) -> String {
    let mut s = String::new();
    let w = &mut s;
    let arms = |f: &dyn Fn(&Record) -> String| -> String {
        let mut a = String::new();
        for (_, r) in records {
            let _ = writeln!(a, "            AppProto::{} => {},", r.variant, f(r));
        }
        a
    };
    let _ = writeln!(
        w,
        "/// An application protocol. The string form is nDPI's protocol name, so flowbundle's output compares with\n\
         /// ndpiReader's at the master-protocol level. Generated from the registration records\n\
         /// (`crates/protocols/src/*/protocol.toml`).\n\
         #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]\n\
         #[repr(u16)]\n#[non_exhaustive]\npub enum AppProto {{\n    /// No protocol identified.\n    Unknown,"
    );
    for (path, r) in records {
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("?");
        let doc = r.doc.as_deref().unwrap_or(&r.ndpi);
        let _ = writeln!(
            w,
            "    /// {doc} (`crates/protocols/src/{dir}`).\n    {},",
            r.variant
        );
    }
    let _ = writeln!(w, "}}\n\nimpl AppProto {{");
    let _ = writeln!(
        w,
        "    /// Every protocol, `Unknown` first, then by variant name (the order of [`AppProto::index`]).\n    \
         pub const ALL: &'static [AppProto] = &[AppProto::Unknown, {}];\n",
        records
            .iter()
            .map(|(_, r)| format!("AppProto::{}", r.variant))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let q = |x: &str| format!("{x:?}");
    let _ = write!(
        w,
        "    /// nDPI's name for the protocol.\n    pub fn name(self) -> &'static str {{\n        match self {{\n            AppProto::Unknown => \"Unknown\",\n{}        }}\n    }}\n\n",
        arms(&|r| q(&r.ndpi))
    );
    let _ = write!(
        w,
        "    /// The EVE `app_proto` value, as Suricata writes it: its lowercase name where Suricata parses the protocol,\n    \
         /// `failed` where it does not (Suricata tried and found nothing) and for [`AppProto::Unknown`]. The engine's\n    \
         /// finer name is [`AppProto::name`] (EVE's `flowbundle.app` with `--eve-extra`).\n    pub fn eve_name(self) -> &'static str {{\n        match self {{\n            AppProto::Unknown => \"failed\",\n{}        }}\n    }}\n\n",
        arms(&|r| q(r.suricata.as_deref().unwrap_or("failed")))
    );
    let _ = write!(
        w,
        "    /// Suricata's `app_proto` name, where Suricata has the protocol.\n    pub fn suricata_name(self) -> Option<&'static str> {{\n        match self {{\n            AppProto::Unknown => None,\n{}        }}\n    }}\n\n",
        arms(&|r| match &r.suricata {
            Some(n) => format!("Some({n:?})"),
            None => "None".into(),
        })
    );
    let _ = write!(
        w,
        "    /// Whether the protocol is unsafe by design (`insecure = true` in its record): clear-text logins, SMB\n    \
         /// version 1, and protocols nDPI flags the same way (nDPI's `NDPI_UNSAFE_PROTOCOL` risk).\n    pub fn is_insecure(self) -> bool {{\n        match self {{\n            AppProto::Unknown => false,\n{}        }}\n    }}\n\n",
        arms(&|r| r.insecure.to_string())
    );
    let _ = write!(
        w,
        "    /// nDPI's category of the protocol (`Web`, `Network`, `Game`, ...); `Unspecified` for `Unknown`.\n    pub fn category(self) -> &'static str {{\n        match self {{\n            AppProto::Unknown => \"Unspecified\",\n{}        }}\n    }}\n\n",
        arms(&|r| q(&r.category))
    );
    let ts = |r: &Record| {
        let v: Vec<&str> = r
            .transports
            .iter()
            .map(|t| {
                if t == "tcp" {
                    "Transport::Tcp"
                } else {
                    "Transport::Udp"
                }
            })
            .collect();
        format!("&[{}]", v.join(", "))
    };
    let _ = write!(
        w,
        "    /// The transports the protocol runs on.\n    pub fn transports(self) -> &'static [Transport] {{\n        match self {{\n            AppProto::Unknown => &[],\n{}        }}\n    }}\n\n",
        arms(&ts)
    );
    let ports = |v: &[u16]| format!("&{v:?}");
    let _ = write!(
        w,
        "    /// The protocol's well-known ports on `transport` (nDPI's defaults): evidence only when payload gave nothing,\n    \
         /// and the reference of the \"known protocol on a non-standard port\" risk.\n    pub fn default_ports(self, transport: Transport) -> &'static [u16] {{\n        \
         match (self, transport) {{\n"
    );
    for (_, r) in records {
        if !r.tcp_ports.is_empty() {
            let _ = writeln!(
                w,
                "            (AppProto::{}, Transport::Tcp) => {},",
                r.variant,
                ports(&r.tcp_ports)
            );
        }
        if !r.udp_ports.is_empty() {
            let _ = writeln!(
                w,
                "            (AppProto::{}, Transport::Udp) => {},",
                r.variant,
                ports(&r.udp_ports)
            );
        }
    }
    let _ = write!(w, "            _ => &[],\n        }}\n    }}\n\n");
    let _ = write!(
        w,
        "    /// The EVE event type the protocol's parser writes (`http`, `tls`, `dns`, ...), if it has one.\n    pub fn eve_event_type(self) -> Option<&'static str> {{\n        match self {{\n            AppProto::Unknown => None,\n{}        }}\n    }}\n\n",
        arms(&|r| match &r.eve_event {
            Some(n) => format!("Some({n:?})"),
            None => "None".into(),
        })
    );
    let _ = write!(
        w,
        "    /// The prefixes of the rule keywords (sticky buffers) the protocol's parser fills (`http.`, `tls.`, `ja3.`).\n    pub fn rule_buffer_prefixes(self) -> &'static [&'static str] {{\n        match self {{\n            AppProto::Unknown => &[],\n{}        }}\n    }}\n\n",
        arms(&|r| format!("&{:?}", r.rule_buffers))
    );
    let _ = write!(
        w,
        "    /// The L7-filter signature name that names this protocol, if one does (`ssl` for TLS).\n    pub fn l7filter_name(self) -> Option<&'static str> {{\n        match self {{\n            AppProto::Unknown => None,\n{}        }}\n    }}\n",
        arms(&|r| match &r.l7filter {
            Some(n) => format!("Some({n:?})"),
            None => "None".into(),
        })
    );
    let _ = writeln!(w, "}}");
    s
}
