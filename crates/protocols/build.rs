//! Declares one module per protocol directory and lists the built-in detectors in probing order.
//!
//! A protocol directory is a folder under `src/` holding `mod.rs` and `protocol.toml` (its registration record, see
//! `README.md`). This script declares each as a public module and builds
//! `registry::builtin_detectors` from the records' `[[detector]]` entries, sorted by `rank` (the probing order:
//! cheap, specific detectors first). `crates/types/build.rs` reads the `[[protocol]]` entries of the same records
//! for `AppProto`. Adding a protocol is adding its directory; nothing else is edited.
//!
//! Two detectors with the same rank stop the build: the probing order must be stated, never left to file order.

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
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("protocols.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| fail(&out, &e.to_string()));
}
