//! Helpers shared by the command's integration tests: `inspect` fed through a pipe, a capture of a link type no
//! decoder follows, and the summary's decode line.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Write as _;
use std::process::{Command, Output, Stdio};

/// `inspect` with `args`, `input` written to its standard input through a pipe.
pub fn inspect_piped(args: &[&OsStr], input: Vec<u8>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running flowbundle inspect");
    let mut stdin = child.stdin.take().unwrap();
    // A run refused before reading, or one that stops early, closes the pipe: the writer's error is expected then.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("waiting for flowbundle");
    writer.join().unwrap();
    out
}

/// A pcap of link type 147 (DLT_USER0, which no decoder follows): one 20-byte record.
pub fn user0_pcap() -> Vec<u8> {
    let mut bytes = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    bytes.extend_from_slice(&2u16.to_le_bytes());
    bytes.extend_from_slice(&4u16.to_le_bytes());
    for v in [0u32, 0, 65_535, 147, 1, 0, 20, 20] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    bytes.extend_from_slice(&[0x45; 20]);
    bytes
}

/// The summary's decode line.
pub fn decode_line(summary: &str) -> &str {
    summary
        .lines()
        .find(|l| l.trim_start().starts_with("decode: "))
        .unwrap_or_else(|| panic!("no decode line:\n{summary}"))
}
