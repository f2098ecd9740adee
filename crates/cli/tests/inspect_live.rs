//! `flowbundle inspect --interface`: the options that only make sense for live capture are refused without it, and a
//! build without the `live` feature says how to get live capture instead of failing obscurely. With the feature (and
//! the privileges to capture), the loopback test captures a few packets through libpcap and writes the summary; the
//! AF_PACKET rings of the default build are tested on networks of their own in `live_netns.rs`.

use std::process::{Command, Output};

fn flowbundle(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("running flowbundle")
}

#[test]
fn live_only_options_need_an_interface() {
    for extra in [
        &["--count", "5"][..],
        &["--seconds", "1"],
        &["--no-promisc"],
        &["--snaplen", "96"],
        &["--tpacket", "2"],
    ] {
        let mut args = vec!["inspect", "missing.pcap"];
        args.extend_from_slice(extra);
        let out = flowbundle(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{extra:?} accepted without --interface"
        );
        assert!(err.contains("apply to live capture"), "{extra:?}: {err}");
    }
}

#[test]
fn files_and_interface_exclude_each_other() {
    let out = flowbundle(&["inspect", "-i", "lo", "a.pcap"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
    let out = flowbundle(&[
        "inspect",
        "-i",
        "lo",
        "--fanout",
        "hash",
        "--scheduler",
        "lfb",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--scheduler does not apply"));
}

/// A TPACKET_V2 ring hands each frame over as it arrives: a block timeout means nothing to it, and asking for both
/// is refused before any socket is opened; an unknown version is refused by name.
#[test]
fn a_block_timeout_with_a_frame_ring_is_refused() {
    let out = flowbundle(&[
        "inspect",
        "-i",
        "lo",
        "--tpacket",
        "2",
        "--block-timeout-ms",
        "5",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("--block-timeout-ms applies to TPACKET_V3"),
        "{err}"
    );
    let out = flowbundle(&["inspect", "-i", "lo", "--tpacket", "4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("one of 2, 3"), "{err}");
}

#[cfg(not(feature = "live"))]
#[test]
fn without_the_feature_the_interface_option_says_how_to_get_it() {
    let out = flowbundle(&["inspect", "-i", "lo", "--capture", "pcap", "--count", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--features live"), "{err}");
}

/// Captures on loopback while sending it a few UDP datagrams. Needs the `live` feature and the right to capture
/// (root or CAP_NET_RAW); without the right it says so and returns.
#[cfg(feature = "live")]
#[test]
fn loopback_capture_inspects_packets_and_writes_the_summary() {
    let child = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args([
            "inspect",
            "-i",
            "lo",
            "--capture",
            "pcap",
            "--threads",
            "1",
            "--seconds",
            "3",
            "--summary",
        ])
        .env("RUST_BACKTRACE", "0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running flowbundle");
    std::thread::sleep(std::time::Duration::from_millis(800));
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    for i in 0..20u8 {
        let _ = sock.send_to(&[i; 64], "127.0.0.1:9");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("waiting for flowbundle");
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && (err.contains("ermission") || err.contains("not permitted")) {
        flowbundle_testsupport::missing_tool(&format!("permission to capture on lo ({err})"));
        return;
    }
    assert!(out.status.success(), "{err}");
    let out_text = String::from_utf8_lossy(&out.stdout);
    let n: u64 = out_text
        .split("capture.kernel_packets ")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    assert!(n >= 20, "expected the 20 datagrams, saw {n}: {err}");
}
