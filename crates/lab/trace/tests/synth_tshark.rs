//! tshark decodes generated traces without errors or warnings: no malformed packets, valid IP/TCP/UDP checksums,
//! nothing for TCP sequence analysis to flag. Skipped, with a message, where tshark is not installed.

use std::process::Command;

use flowbundle_trace::stats::Progress;
use flowbundle_trace::synth::{SynthConfig, write_pcap};

fn tshark() -> bool {
    flowbundle_testsupport::tool("tshark").is_some()
}

/// tshark's expert summary (`-z expert`) of a capture, with checksum validation on.
fn expert(path: &std::path::Path) -> String {
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(path)
        .args([
            "-n",
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-o",
            "tcp.analyze_sequence_numbers:TRUE",
            "-q",
            "-z",
            "expert,note",
        ])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lines of the "Warns" section of an expert report.
fn warnings(report: &str) -> Vec<&str> {
    let mut in_warns = false;
    let mut out = Vec::new();
    for line in report.lines() {
        if line.starts_with("Warns (") {
            in_warns = true;
            continue;
        }
        if in_warns
            && (line.starts_with("Notes (")
                || line.starts_with("Chats (")
                || line.starts_with("Errors ("))
        {
            break;
        }
        let t = line.trim();
        if in_warns && !t.is_empty() && !t.starts_with('=') && !t.starts_with("Frequency") {
            out.push(t);
        }
    }
    out
}

#[test]
fn generated_profiles_decode_cleanly() {
    if !tshark() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, packets) in [("balanced", 30_000), ("many", 30_000), ("dominant", 20_000)] {
        let cfg = SynthConfig::profile(name).unwrap().with_packets(packets);
        let path = dir.path().join(format!("{name}.pcap"));
        write_pcap(&cfg, &path, Progress::Hidden).unwrap();
        let report = expert(&path);
        eprintln!("== {name}\n{report}");
        // No errors; and warnings only of the two kinds real traffic of this shape has: QUIC packets after the
        // Initials cannot be decrypted without the session's secrets, and RST teardowns are reported as such.
        assert!(
            !report.contains("Errors ("),
            "{name}: tshark reports errors:\n{report}"
        );
        for line in warnings(&report) {
            assert!(
                line.contains("Secrets are not available")
                    || line.contains("Connection reset (RST)"),
                "{name}: unexpected tshark warning `{line}`:\n{report}"
            );
        }
        for bad in [
            "Malformed",
            "Bad checksum",
            "[incorrect",
            "not captured",
            "unseen",
            "Retransmission",
            "Dup ACK",
            "reused",
        ] {
            assert!(
                !report.contains(bad),
                "{name}: tshark reports `{bad}`:\n{report}"
            );
        }
    }
}
