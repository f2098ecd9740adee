//! The summary people read: the capture's own start, end and span beside the processing time, and a long input
//! list shortened to its first few and a count.

mod common;

use common::{decode_line, user0_pcap};
use std::process::Command;

#[test]
fn capture_time_beside_processing_time_and_a_short_input_list() {
    let Some(dir) = flowbundle_testsupport::data("ndpi/pcap") else {
        return;
    };
    let mut caps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    caps.sort();
    caps.truncate(9);
    let run = |files: &[std::path::PathBuf]| {
        let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .arg("inspect")
            .args(files)
            .args(["--threads", "1"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let one = run(&caps[..1]);
    let line = one
        .lines()
        .find(|l| l.trim_start().starts_with("capture: "))
        .unwrap_or_else(|| panic!("no capture line: {one}"));
    // `capture: 2014-...T...+0000 to 2014-...+0000 (12.345 s of capture time)`
    let (from, rest) = line.trim_start()["capture: ".len()..]
        .split_once(" to ")
        .unwrap();
    let (to, span) = rest.split_once(" (").unwrap();
    assert!(from.len() >= 26 && from <= to, "{line}");
    assert!(span.ends_with("s of capture time)"), "{line}");
    assert!(one.contains("processing time: "), "{one}");

    let many = run(&caps);
    let inputs = many
        .lines()
        .find(|l| l.trim_start().starts_with("inputs: "))
        .unwrap();
    assert!(inputs.ends_with("... and 4 more (9 in all)"), "{inputs}");
    assert_eq!(inputs.matches(".pcap").count(), 5, "{inputs}");
}

fn summary_of(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .args(args)
        .args(["--threads", "1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn frames_without_ip_are_not_ip_rather_than_decode_failures() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    // example2.pcap holds ARP frames beside its IP traffic.
    let text = summary_of(&[cap.as_os_str()]);
    let line = decode_line(&text);
    assert!(line.contains(" 0 failed;"), "{line}");
    let not_ip: u64 = line
        .rsplit_once("; ")
        .and_then(|(_, r)| r.strip_suffix(" not IP"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(not_ip > 0, "{line}");
    assert!(text.contains("not decoded 0,"), "{text}");
}

#[test]
fn an_unsupported_link_type_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("user0.pcap");
    std::fs::write(&path, user0_pcap()).unwrap();
    let text = summary_of(&[path.as_os_str()]);
    let line = decode_line(&text);
    assert!(
        line.contains("1 failed: unsupported link type linktype 147 in ")
            && line.contains("user0.pcap 1"),
        "{line}"
    );
}

#[test]
fn the_cost_block_only_with_cost() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/DnsPackets.pcap") else {
        return;
    };
    let plain = summary_of(&[cap.as_os_str()]);
    assert!(
        !plain.contains("\nCost:") && !plain.contains("cycles per packet"),
        "{plain}"
    );
    let cost = summary_of(&[cap.as_os_str(), "--cost".as_ref()]);
    assert!(
        cost.contains("\nCost:") && cost.contains("cycles per packet"),
        "{cost}"
    );
}

#[test]
fn eve_to_a_file_ends_with_one_line_saying_what_was_written() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let eve = dir.path().join("eve.json");
    for threads in ["1", "2"] {
        let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .arg("inspect")
            .arg(&cap)
            .args(["--threads", threads, "-o"])
            .arg(&eve)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(out.stdout.is_empty(), "no summary without --summary");
        let err = String::from_utf8_lossy(&out.stderr);
        let lines = std::fs::read_to_string(&eve).unwrap().lines().count();
        let last = err.lines().last().unwrap_or("");
        assert!(
            last.starts_with(&format!("wrote {lines} EVE events to {}: ", eve.display()))
                && last.contains(" packets, ")
                && last.ends_with(" s"),
            "--threads {threads}: {err}"
        );
    }
}

/// First fragments whose datagrams never complete are accounted for: the ones still held when the input ends are
/// counted as incomplete (they were neither inspected nor counted among the defragmenter's drops, so the summary's
/// packets read did not add up), in every run mode. Built here: three IPv4 first fragments of distinct ids.
#[test]
fn fragments_of_datagrams_incomplete_at_the_end_are_counted() {
    fn checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = h
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }
    let mut pcap = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    pcap.extend_from_slice(&[0; 8]);
    pcap.extend_from_slice(&65535u32.to_le_bytes());
    pcap.extend_from_slice(&1u32.to_le_bytes());
    for id in 1u16..=3 {
        let mut ip = vec![0x45, 0, 0, 28];
        ip.extend_from_slice(&id.to_be_bytes());
        ip.extend_from_slice(&[0x20, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        let c = checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        ip.extend_from_slice(b"12345678");
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&[0x08, 0x00]);
        frame.extend_from_slice(&ip);
        pcap.extend_from_slice(&(1000 + u32::from(id)).to_le_bytes());
        pcap.extend_from_slice(&0u32.to_le_bytes());
        pcap.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        pcap.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        pcap.extend_from_slice(&frame);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fragments.pcap");
    std::fs::write(&path, &pcap).unwrap();
    for threads in [
        &["--threads", "1"][..],
        &["--threads", "2"],
        &["--threads", "2", "--scheduler", "lfb"],
        &[
            "--threads",
            "2",
            "--scheduler",
            "lfb",
            "--workers-read=false",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
            .arg("inspect")
            .arg(&path)
            .args(threads)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("defrag: "))
            .unwrap_or_else(|| panic!("no defrag line: {text}"));
        assert!(
            line.starts_with("  defrag: 3 fragments, 0 datagrams reassembled"),
            "{line}"
        );
        assert!(
            line.ends_with("evicted 0, 3 incomplete at the end"),
            "{threads:?}: {line}"
        );
    }
}
