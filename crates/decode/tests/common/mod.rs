//! Helpers shared by the integration tests: where the shared captures are, and reading them.

#![allow(dead_code)]

use std::path::PathBuf;

use flowbundle_ingest::Trace;

/// `../shared/data` beside the repository, or `None` (with a message) when it is absent.
pub fn data_dir(test: &str) -> Option<PathBuf> {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data"));
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!(
            "{test}: skipped, shared test data not found at {}",
            p.display()
        );
        None
    }
}

/// A capture under `shared/data`, loaded whole; `None` (with a message) when the data or the file is missing.
pub fn load(test: &str, rel: &str) -> Option<Trace> {
    let p = data_dir(test)?.join(rel);
    if !p.is_file() {
        eprintln!("{test}: skipped, {} not found", p.display());
        return None;
    }
    match Trace::load_partial(&p) {
        Ok((t, _)) => Some(t),
        Err(e) => panic!("{}: {e}", p.display()),
    }
}

/// Reads a PcapPlusPlus reference file: the packet's bytes as one hex string.
pub fn hex_file(test: &str, rel: &str) -> Option<Vec<u8>> {
    let p = data_dir(test)?.join(rel);
    let s = std::fs::read_to_string(&p).ok()?;
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    Some(
        digits
            .chunks(2)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
            .collect(),
    )
}

/// Runs a tool and returns its stdout, or `None` (with a message) when the tool is not installed.
pub fn tool(test: &str, cmd: &str, args: &[&str]) -> Option<String> {
    match std::process::Command::new(cmd).args(args).output() {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => {
            eprintln!(
                "{test}: {cmd} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        Err(_) => {
            eprintln!("{test}: skipped, {cmd} not installed");
            None
        }
    }
}
