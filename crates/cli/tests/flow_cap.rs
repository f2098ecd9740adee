//! `--max-flows` is one budget for all workers together: a flood of new flows past it leaves at most that many
//! tracked at once whatever the thread count, scheduler and execution model, the rest counted in flow.memcap.

use std::path::Path;
use std::process::Command;

/// Distinct flows in the flood.
const FLOWS: u32 = 3_000;
/// The cap, well under the flood.
const CAP: u64 = 700;

/// A pcap (LINKTYPE_RAW, IPv4) of `flows` UDP datagrams, each from its own source to one server, 1 µs apart: a
/// flood of new flows none of which ends or goes idle long enough to be evicted before the input does.
fn udp_flood(path: &Path, flows: u32) {
    let mut out = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    for v in [0u32, 0, 65_535, 101] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for i in 0..flows {
        let payload = b"flood!!!";
        let total = 20 + 8 + payload.len();
        let mut ip = vec![
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            1,
            0x40,
            0,
            64,
            17,
            0,
            0,
            10,
            (i >> 16) as u8,
            (i >> 8) as u8,
            i as u8,
            192,
            168,
            0,
            1,
        ];
        let sum = ip
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum::<u32>();
        let sum = (sum & 0xffff) + (sum >> 16);
        let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        ip.extend_from_slice(&(20_000 + (i % 40_000) as u16).to_be_bytes());
        ip.extend_from_slice(&9_999u16.to_be_bytes());
        ip.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&0u16.to_be_bytes());
        ip.extend_from_slice(payload);
        let ts_us = 100 + i;
        for v in [1_700_000_000u32, ts_us, ip.len() as u32, ip.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&ip);
    }
    std::fs::write(path, out).unwrap();
}

/// The number after `before` in `text` (thousands separators allowed).
fn number_after(text: &str, before: &str) -> u64 {
    text.split(before)
        .nth(1)
        .and_then(|t| t.split([' ', ')', ';']).next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no number after {before:?} in the summary:\n{text}"))
}

/// (flows created, peak tracked at once, the cap the summary names, flow.memcap) of one run over `input`.
fn run(input: &Path, extra: &[&str]) -> (u64, u64, u64, u64) {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(input)
        .args(["--max-flows", &CAP.to_string()])
        .args(extra)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{extra:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let traffic = text
        .lines()
        .find(|l| l.trim_start().starts_with("traffic: "))
        .unwrap_or_else(|| panic!("no traffic line:\n{text}"));
    let created = traffic
        .split(" flows (peak ")
        .next()
        .and_then(|t| t.rsplit(' ').next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no flow count: {traffic}"));
    (
        created,
        number_after(traffic, "(peak "),
        number_after(traffic, "tracked at once, cap "),
        number_after(&text, "flow.memcap "),
    )
}

#[test]
fn the_flow_cap_is_one_budget_for_all_workers() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("flood.pcap");
    udp_flood(&input, FLOWS);
    let total = u64::from(FLOWS);
    // The single-threaded run: the first CAP flows tracked, every later one refused.
    let serial = run(&input, &["--threads", "1"]);
    assert_eq!(serial, (CAP, CAP, CAP, total - CAP), "single-threaded");
    let modes: &[&[&str]] = &[
        // Every worker reading the input, under each placement.
        &["--scheduler", "dh"],
        &["--scheduler", "lfb"],
        &["--scheduler", "rss"],
        // A reader thread dispatching.
        &["--scheduler", "lfb", "--workers-read=false"],
        &["--scheduler", "dh", "--workers-read=false"],
        &["--scheduler", "lfb", "--reader-inspects"],
        // The staged models: a flow group and a detection group.
        &["--exec", "pipeline"],
    ];
    for threads in ["2", "3"] {
        for mode in modes {
            let what = format!("--threads {threads} {}", mode.join(" "));
            let mut args = vec!["--threads", threads];
            args.extend_from_slice(mode);
            let (created, peak, cap, memcap) = run(&input, &args);
            assert_eq!(cap, CAP, "{what}: the cap named");
            // Never more than the cap at once, all workers together; and since no flow of the flood ends before the
            // input does, the table fills to the cap and every later flow is refused, as in the single-threaded
            // run (which flows those are may differ: see `--max-flows`).
            assert!(peak <= CAP, "{what}: peak {peak} over the cap");
            assert_eq!(created, CAP, "{what}: flows created");
            assert_eq!(peak, CAP, "{what}: the flood fills the table");
            assert_eq!(
                created + memcap,
                total,
                "{what}: every flow tracked or counted"
            );
        }
    }
}
