//! Helpers shared by the integration tests: reading the shared captures and reference files.

#![allow(dead_code)]

use flowbundle_ingest::Trace;

/// A capture under the shared data, loaded whole; `None` when it is missing (see `flowbundle_testsupport::data`).
pub fn load(rel: &str) -> Option<Trace> {
    let p = flowbundle_testsupport::data(rel)?;
    match Trace::load_partial(&p) {
        Ok((t, _)) => Some(t),
        Err(e) => panic!("{}: {e}", p.display()),
    }
}

/// Reads a PcapPlusPlus reference file: the packet's bytes as one hex string.
pub fn hex_file(rel: &str) -> Option<Vec<u8>> {
    let p = flowbundle_testsupport::data(rel)?;
    let s = std::fs::read_to_string(&p).ok()?;
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    Some(
        digits
            .chunks(2)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
            .collect(),
    )
}

/// Runs a tool and returns its stdout, or `None` when the tool is not installed (see
/// `flowbundle_testsupport::tool`); panics when it runs and fails.
pub fn tool(test: &str, cmd: &str, args: &[&str]) -> Option<String> {
    let cmd = flowbundle_testsupport::tool(cmd)?;
    match std::process::Command::new(&cmd).args(args).output() {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => panic!(
            "{test}: {} failed: {}",
            cmd.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("{test}: cannot run {}: {e}", cmd.display()),
    }
}
