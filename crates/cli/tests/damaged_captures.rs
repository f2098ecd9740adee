//! Damaged captures are read as far as they go, and the user is told: a capture cut in the middle of a record is a
//! warning and a count (in `trace stats` and the inspect summary), and a record claiming an impossible original
//! length (4 GB) is read at its captured length, as Wireshark does, instead of making the rates absurd.

mod common;

use common::inspect_piped;
use flowbundle_testsupport::data;
use std::path::Path;
use std::process::{Command, Output};

fn flowbundle(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(args)
        .output()
        .expect("running flowbundle")
}

fn stats_json(path: &Path) -> (serde_json::Value, String) {
    let out = flowbundle(&[
        "trace".as_ref(),
        "stats".as_ref(),
        "--json".as_ref(),
        "-".as_ref(),
        "--no-progress".as_ref(),
        path.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_capture_cut_in_a_record_is_a_warning_and_a_count() {
    let Some(src) = data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.pcap");
    let bytes = std::fs::read(&src).unwrap();
    std::fs::write(&cut, &bytes[..1000]).unwrap();

    let (json, err) = stats_json(&cut);
    assert_eq!(json["read"]["truncated_records"], 1, "{json}");
    assert!(err.contains("cut by the end of the file"), "{err}");

    let out = flowbundle(&["inspect".as_ref(), cut.as_os_str()]);
    let (stdout, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    assert!(err.contains("cut by the end of the file"), "{err}");
    assert!(
        stdout.contains("read: 1 records cut by the end of their file"),
        "{stdout}"
    );
}

#[test]
fn an_impossible_original_length_is_read_as_the_captured_length() {
    let Some(src) = data("reassembly/DnsPackets.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.pcap");
    let mut bytes = std::fs::read(&src).unwrap();
    // Classic pcap, little-endian: the first record's original length is at 24 + 12.
    assert_eq!(
        bytes[..4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        "expected a little-endian pcap"
    );
    let caplen = u32::from_le_bytes(bytes[32..36].try_into().unwrap());
    bytes[36..40].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&bad, &bytes).unwrap();

    let (good, _) = stats_json(&src);
    let (json, err) = stats_json(&bad);
    assert_eq!(json["read"]["clamped_lengths"], 1, "{json}");
    assert!(err.contains("impossible original length"), "{err}");
    let (g, b) = (
        good["wire_bytes"].as_u64().unwrap(),
        json["wire_bytes"].as_u64().unwrap(),
    );
    assert!(
        b <= g && g - b < 65_536 && b >= u64::from(caplen),
        "{g} vs {b} wire bytes"
    );
    let max = json["max_mbps"].as_f64().unwrap();
    let max_good = good["max_mbps"].as_f64().unwrap();
    assert!(
        (max - max_good).abs() <= max_good * 0.01 + 0.01,
        "{max} Mb/s vs {max_good}"
    );

    let out = flowbundle(&["inspect".as_ref(), bad.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("1 impossible original lengths"), "{stdout}");
    let gbits: f64 = stdout
        .split(" Mpps, ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no rate: {stdout}"));
    assert!(gbits < 100.0, "{gbits} Gbit/s from 64 KB of DNS");
}

/// A classic little-endian pcap (Ethernet) of `records` (captured length, bytes).
fn pcap(records: &[(u32, &[u8])]) -> Vec<u8> {
    let mut b = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for (i, (caplen, data)) in records.iter().enumerate() {
        b.extend_from_slice(&(1000 + i as u32).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&caplen.to_le_bytes());
        b.extend_from_slice(&caplen.to_le_bytes());
        b.extend_from_slice(data);
    }
    b
}

/// The ways `inspect` runs a file: the single-threaded loop, every worker reading (dh, rss) and a reader thread.
const RUNS: [&[&str]; 4] = [
    &["--threads", "1"],
    &["--threads", "2", "--scheduler", "dh"],
    &["--threads", "2", "--scheduler", "rss", "--workers-read"],
    &[
        "--threads",
        "2",
        "--scheduler",
        "lfb",
        "--workers-read=false",
    ],
];

/// An input that is not a capture at all (empty, a header cut short, an unknown magic) fails the run before
/// anything is inspected, with one line naming it, whatever the thread count: the parallel runs used to count it as
/// an input error, inspect the other inputs and exit 0 (`--threads 2`), while the single-threaded loop stopped at
/// it with status 1.
#[test]
fn an_input_that_is_not_a_capture_fails_the_run_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.pcap");
    std::fs::write(&good, pcap(&[(60, &[0; 60])])).unwrap();
    let header = pcap(&[]);
    for (name, bytes) in [
        ("empty.pcap", &[][..]),
        ("short.pcap", &header[..10]),
        (
            "magic.pcap",
            &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 0][..],
        ),
    ] {
        let bad = dir.path().join(name);
        std::fs::write(&bad, bytes).unwrap();
        for run in RUNS {
            let mut args: Vec<&std::ffi::OsStr> = vec!["inspect".as_ref()];
            args.extend(run.iter().map(std::ffi::OsStr::new));
            args.extend([good.as_os_str(), bad.as_os_str()]);
            let out = flowbundle(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{name} {run:?}: {err}");
            assert!(
                err.starts_with(&format!("flowbundle: cannot open {}", bad.display())),
                "{name} {run:?}: {err}"
            );
            assert!(
                out.stdout.is_empty(),
                "{name} {run:?}: nothing is inspected"
            );
        }
    }
}

/// A record whose length no capture holds ends the input there: the packets before it are inspected and written,
/// the damage is named, and the run exits with a failure (it used to exit 0, the rest of the file silently
/// unread); a capture merely cut short at its end stays a warning (see above).
#[test]
fn a_capture_damaged_in_the_middle_is_inspected_to_the_damage_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("huge.pcap");
    let mut bytes = pcap(&[(60, &[0; 60]), (60, &[0; 60])]);
    // A record header claiming a captured length of almost 4 GiB, then bytes that are never read.
    bytes.extend_from_slice(&pcap(&[(0xffff_fff0, &[0; 64])])[24..]);
    std::fs::write(&bad, &bytes).unwrap();
    for run in RUNS {
        let eve = dir.path().join("eve.json");
        let mut args: Vec<&std::ffi::OsStr> = vec!["inspect".as_ref(), "--summary".as_ref()];
        args.extend(run.iter().map(std::ffi::OsStr::new));
        args.extend([bad.as_os_str(), "-o".as_ref(), eve.as_os_str()]);
        let out = flowbundle(&args);
        let (stdout, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(!out.status.success(), "{run:?}: {err}");
        assert!(
            err.contains("exceeds the sanity cap") && err.contains("stopping this input here"),
            "{run:?}: {err}"
        );
        assert!(
            err.trim_end().ends_with(
                "flowbundle: 1 input could not be read to the end (named above); the output covers the packets \
                 before the damage"
            ),
            "{run:?}: {err}"
        );
        assert!(stdout.contains(" 2 packets read"), "{run:?}: {stdout}");
        assert!(stdout.contains("input errors 1"), "{run:?}: {stdout}");
        assert!(eve.exists(), "{run:?}: the EVE output is written");
    }
}

/// `trace stats` of a capture damaged in the middle writes its report of the packets before the damage (the JSON
/// names the error) and fails, as `inspect` does; it used to exit 0 with a warning.
#[test]
fn trace_stats_of_a_capture_damaged_in_the_middle_reports_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("huge.pcap");
    let mut bytes = pcap(&[(60, &[0; 60])]);
    bytes.extend_from_slice(&pcap(&[(0xffff_fff0, &[0; 64])])[24..]);
    std::fs::write(&bad, &bytes).unwrap();
    let json = dir.path().join("stats.json");
    let out = flowbundle(&[
        "trace".as_ref(),
        "stats".as_ref(),
        "--no-progress".as_ref(),
        "--json".as_ref(),
        json.as_os_str(),
        bad.as_os_str(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.trim_end()
            .ends_with("(the report covers the packets before)")
            && err.contains("reading stopped early: captured length of 4294967280 bytes"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["packets"], 1, "{v}");
    assert!(v["read"]["error"].is_string(), "{v}");
}

/// The ways `inspect` runs standard input (read once: no --workers-read).
const STDIN_RUNS: [&[&str]; 3] = [
    &["--threads", "1"],
    &["--threads", "2"],
    &["--threads", "2", "--scheduler", "lfb"],
];

/// Standard input that is not a capture fails the run before anything runs, with one line naming it and no EVE file
/// left behind, whatever the thread count: `--threads 2` used to start the run, count an input error, leave an empty
/// EVE file and say "1 input could not be read to the end".
#[test]
fn standard_input_that_is_not_a_capture_fails_alike_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let header = pcap(&[]);
    let garbage: Vec<u8> = (0u32..4000).map(|i| (i * 7 + 3) as u8).collect();
    for (name, bytes) in [
        ("empty", Vec::new()),
        ("a header cut short", header[..10].to_vec()),
        ("garbage", garbage),
    ] {
        for run in STDIN_RUNS {
            let eve = dir.path().join("eve.json");
            let mut args: Vec<&std::ffi::OsStr> = run.iter().map(std::ffi::OsStr::new).collect();
            args.extend(["-".as_ref(), "-o".as_ref(), eve.as_os_str()]);
            let out = inspect_piped(&args, bytes.clone());
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{name} {run:?}: {err}");
            assert!(
                err.starts_with("flowbundle: cannot open -: ") && err.lines().count() == 1,
                "{name} {run:?}: {err}"
            );
            assert!(!eve.exists(), "{name} {run:?}: an EVE file was left behind");
        }
    }
}

/// A capture on standard input or through a pipe named by its path (`/dev/stdin`, a shell's `<(...)`) is checked
/// before the run without losing the bytes the check read: every packet is inspected, whatever the thread count
/// (the check used to read a pipe's first bytes away, and the run then found no capture in the rest).
#[test]
fn a_capture_through_a_pipe_is_read_whole_in_every_mode() {
    let records: Vec<(u32, Vec<u8>)> = (0..300u32)
        .map(|i| (60, (0..60).map(|b| (b ^ i) as u8).collect()))
        .collect();
    let refs: Vec<(u32, &[u8])> = records.iter().map(|(l, d)| (*l, &d[..])).collect();
    let bytes = pcap(&refs);
    for input in ["-", "/dev/stdin"] {
        for run in STDIN_RUNS {
            let mut args: Vec<&std::ffi::OsStr> = run.iter().map(std::ffi::OsStr::new).collect();
            args.extend([
                std::ffi::OsStr::new(input),
                std::ffi::OsStr::new("--summary"),
            ]);
            let out = inspect_piped(&args, bytes.clone());
            let (stdout, err) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(out.status.success(), "{input} {run:?}: {err}");
            assert!(
                stdout.contains(" 300 packets read"),
                "{input} {run:?}: {stdout}"
            );
        }
    }
}
