//! Declares one module per protocol directory and lists the built-in detectors in probing order.
//!
//! A protocol directory is a folder under `src/` holding `mod.rs` and `protocol.toml` (its registration record, see
//! `README.md`). This script declares each as a public module and builds
//! `registry::builtin_detectors` from the records' `[[detector]]` entries, sorted by `rank` (the probing order:
//! cheap, specific detectors first). `crates/types/build.rs` reads the `[[protocol]]` entries of the same records
//! for `AppProto`. Adding a protocol is adding its directory; nothing else is edited.
//!
//! Two detectors with the same rank stop the build: the probing order must be stated, never left to file order.
//!
//! It also turns `data/ip-owners.txt` (organisations' network prefixes, see the file's header) into the sorted,
//! disjoint range tables that `application::ip_owner` searches: a wrong line stops the build with its number.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(serde::Deserialize)]
struct File {
    #[serde(default)]
    detector: Vec<DetectorEntry>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DetectorEntry {
    /// Probing position: lower ranks are asked first.
    rank: u32,
    /// The detector's value, an expression in the scope of its module (`ZabbixDetector`,
    /// `MailDetector { mail: Mail::Smtp, tls: true }`).
    new: String,
}

fn fail(path: &Path, msg: &str) -> ! {
    panic!("{}: {msg}", path.display())
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let src = manifest.join("src");
    println!("cargo:rerun-if-changed={}", src.display());
    let mut dirs: Vec<(String, PathBuf)> = std::fs::read_dir(&src)
        .unwrap_or_else(|e| fail(&src, &e.to_string()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("protocol.toml").is_file())
        .filter_map(|p| Some((p.file_name()?.to_str()?.to_string(), p)))
        .collect();
    dirs.sort();
    let mut code = String::new();
    let mut ranks: BTreeMap<u32, (String, String)> = BTreeMap::new();
    for (name, dir) in &dirs {
        let record = dir.join("protocol.toml");
        println!("cargo:rerun-if-changed={}", record.display());
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            fail(
                dir,
                "a protocol directory's name must be a lowercase module name",
            );
        }
        if !dir.join("mod.rs").is_file() {
            fail(dir, "a protocol directory needs its mod.rs");
        }
        let text =
            std::fs::read_to_string(&record).unwrap_or_else(|e| fail(&record, &e.to_string()));
        let file: File = toml::from_str(&text).unwrap_or_else(|e| fail(&record, &e.to_string()));
        let path = dir.join("mod.rs");
        let _ = writeln!(
            code,
            "#[path = {:?}]\npub mod {name};",
            path.display().to_string()
        );
        for d in file.detector {
            if let Some((other, _)) = ranks.insert(d.rank, (name.clone(), d.new.clone())) {
                fail(
                    &record,
                    &format!("rank {} is also taken by a detector of {other}", d.rank),
                );
            }
        }
    }
    let _ = writeln!(
        code,
        "\n/// Every built-in detector with its rank, in probing order (generated from the `[[detector]]` entries of the\n\
         /// registration records) and the module that registered it.\npub(crate) fn ranked_detectors() -> Vec<(u32, &'static str, Box<dyn crate::Detector>)> {{\n    vec!["
    );
    for (rank, (module, new)) in &ranks {
        let _ = writeln!(
            code,
            "        ({rank}, {module:?}, {{\n            #[allow(unused_imports)]\n            use crate::{module}::*;\n            \
             Box::new({new}) as Box<dyn crate::Detector>\n        }}),"
        );
    }
    let _ = writeln!(code, "    ]\n}}");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let out = out_dir.join("protocols.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| fail(&out, &e.to_string()));
    ip_owners(&manifest.join("data").join("ip-owners.txt"), &out_dir);
}

/// One organisation of `ip-owners.txt`.
struct Org {
    name: String,
    calls: Option<String>,
    sources: usize,
    /// (first address, last address, prefix length, line) per prefix, IPv4 mapped into the low 32 bits.
    v4: Vec<(u128, u128, u8, usize)>,
    v6: Vec<(u128, u128, u8, usize)>,
}

/// Reads the organisations' prefixes and writes `ip_owners.rs`: the organisations, and per address family the
/// sorted disjoint ranges `(first, last, organisation)` where the longest covering prefix names the owner.
fn ip_owners(path: &Path, out_dir: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(path, &e.to_string()));
    let mut orgs: Vec<Org> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |msg: &str| fail(path, &format!("line {n}: {msg}: {raw:?}"));
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        let name_ok =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        match word {
            "org" => {
                if !name_ok(rest) {
                    bad("an organisation's name is one word");
                }
                if orgs.iter().any(|o| o.name == rest) {
                    bad("organisation listed twice");
                }
                orgs.push(Org {
                    name: rest.to_string(),
                    calls: None,
                    sources: 0,
                    v4: Vec::new(),
                    v6: Vec::new(),
                });
            }
            _ => {
                let Some(org) = orgs.last_mut() else {
                    bad("an item before the first `org`")
                };
                match word {
                    "calls" if name_ok(rest) && org.calls.is_none() => {
                        org.calls = Some(rest.to_string())
                    }
                    "calls" => bad("one calling service, one word"),
                    "source" if !rest.is_empty() => org.sources += 1,
                    "source" => bad("a source says where the prefixes come from"),
                    _ if rest.is_empty() => {
                        let Some((addr, len)) = line.split_once('/') else {
                            bad("not a prefix")
                        };
                        let len: u8 = len.parse().unwrap_or_else(|_| bad("bad prefix length"));
                        if let Ok(a) = addr.parse::<std::net::Ipv4Addr>() {
                            if len > 32 {
                                bad("IPv4 prefix longer than 32");
                            }
                            let a = u128::from(u32::from(a));
                            let host = (1u128 << (32 - len)) - 1;
                            if a & host != 0 {
                                bad("host bits set");
                            }
                            org.v4.push((a, a | host, len, n));
                        } else if let Ok(a) = addr.parse::<std::net::Ipv6Addr>() {
                            if len > 128 || len == 0 {
                                bad("IPv6 prefix length out of range");
                            }
                            let a = u128::from(a);
                            let host = if len == 128 { 0 } else { u128::MAX >> len };
                            if a & host != 0 {
                                bad("host bits set");
                            }
                            org.v6.push((a, a | host, len, n));
                        } else {
                            bad("not an address");
                        }
                    }
                    _ => bad("unknown item"),
                }
            }
        }
    }
    let mut code = String::from(
        "/// `(organisation, its calling service)`, indexed by the range tables.\npub(crate) static ORGS: &[(&str, Option<&str>)] = &[\n",
    );
    for o in &orgs {
        if o.sources == 0 || o.v4.len() + o.v6.len() == 0 {
            fail(
                path,
                &format!("organisation {} needs a source and a prefix", o.name),
            );
        }
        let _ = writeln!(code, "    ({:?}, {:?}),", o.name, o.calls.as_deref());
    }
    code.push_str("];\n");
    for (family, ty, pick) in [
        (
            "V4",
            "u32",
            (|o: &Org| &o.v4) as fn(&Org) -> &Vec<(u128, u128, u8, usize)>,
        ),
        ("V6", "u128", |o: &Org| &o.v6),
    ] {
        let mut all: Vec<(u128, u128, u8, usize, usize)> = Vec::new();
        for (k, o) in orgs.iter().enumerate() {
            all.extend(pick(o).iter().map(|&(a, b, len, n)| (a, b, len, n, k)));
        }
        for (i, x) in all.iter().enumerate() {
            for y in &all[i + 1..] {
                if x.0 == y.0 && x.2 == y.2 {
                    fail(
                        path,
                        &format!("lines {} and {}: the same prefix twice", x.3, y.3),
                    );
                }
            }
        }
        // Elementary intervals between every start and every end + 1, each owned by its longest covering prefix,
        // then neighbours with the same owner merged.
        let mut cuts: Vec<u128> = all
            .iter()
            .flat_map(|x| [x.0, x.1.saturating_add(1)])
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut ranges: Vec<(u128, u128, usize)> = Vec::new();
        for w in cuts.windows(2) {
            let (lo, hi) = (w[0], w[1] - 1);
            let owner = all
                .iter()
                .filter(|x| x.0 <= lo && hi <= x.1)
                .max_by_key(|x| x.2)
                .map(|x| x.4);
            if let Some(k) = owner {
                match ranges.last_mut() {
                    Some(last) if last.2 == k && last.1.checked_add(1) == Some(lo) => last.1 = hi,
                    _ => ranges.push((lo, hi, k)),
                }
            }
        }
        let _ = writeln!(
            code,
            "/// IPv{} ranges `(first, last, index into ORGS)`, sorted and disjoint.\npub(crate) static {family}: &[({ty}, {ty}, u16)] = &[",
            &family[1..]
        );
        for (lo, hi, k) in ranges {
            let _ = writeln!(code, "    ({lo:#x}, {hi:#x}, {k}),");
        }
        code.push_str("];\n");
    }
    let out = out_dir.join("ip_owners.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| fail(&out, &e.to_string()));
}
