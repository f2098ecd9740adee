//! Damaged captures are read as far as they go, and the user is told: a capture cut in the middle of a record is a
//! warning and a count (in `trace stats` and the inspect summary), and a record claiming an impossible original
//! length (4 GB) is read at its captured length, as Wireshark does, instead of making the rates absurd.

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
