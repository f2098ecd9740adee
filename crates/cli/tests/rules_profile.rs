//! `flowbundle inspect --rules-profile FILE`: the profile names the rules that were evaluated, with their checks and
//! matches, and the inspection points and rule groups that cost time; rules that never met a packet are not there.

use std::process::Command;

/// Rows of the profile's rule table: sid → (checks, matches).
fn rule_rows(profile: &str) -> Vec<(u32, u64, u64)> {
    profile
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("rank"))
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _rank = f.next()?;
            Some((
                f.next()?.parse().ok()?,
                f.next()?.parse().ok()?,
                f.next()?.parse().ok()?,
            ))
        })
        .collect()
}

#[test]
fn rules_profile_names_the_rules_evaluated() {
    let Some(pcap) = flowbundle_testsupport::data("ndpi/pcap/http.pcapng") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("profile.rules");
    std::fs::write(
        &rules,
        concat!(
            // A stream rule whose fast pattern every request carries.
            "alert tcp any any -> any any (msg:\"get\"; flow:to_server; content:\"GET \"; depth:4; sid:1;)\n",
            // An HTTP buffer rule.
            "alert http any any -> any any (msg:\"uri\"; http.uri; content:\"/\"; sid:2;)\n",
            // A datagram rule whose pattern is in no packet of the capture: never a candidate.
            "alert udp any any -> any any (msg:\"never\"; content:\"|de ad be ef 01 02 03 04|\"; sid:3;)\n",
            // A rule without content, filed by its (narrow) destination port: met by no packet of this capture.
            "alert tcp any any -> any 5 (msg:\"port five\"; sid:4;)\n",
            // A rule without content met by every TCP packet.
            "alert tcp any any -> any any (msg:\"every tcp packet\"; flow:to_server; sid:5;)\n",
        ),
    )
    .unwrap();
    let profile = dir.path().join("profile.txt");
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(&pcap)
        .args(["--threads", "1", "-o", "/dev/null", "--rules"])
        .arg(&rules)
        .arg("--rules-profile")
        .arg(&profile)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&profile).unwrap();
    let rows = rule_rows(&text);
    let row = |sid: u32| rows.iter().find(|r| r.0 == sid).copied();
    for sid in [1, 2, 5] {
        let (_, checks, matches) = row(sid).unwrap_or_else(|| panic!("sid {sid} missing:\n{text}"));
        assert!(
            checks > 0 && matches > 0,
            "sid {sid}: {checks} checks, {matches} matches\n{text}"
        );
        assert!(matches <= checks, "{text}");
    }
    for sid in [3, 4] {
        assert!(row(sid).is_none(), "sid {sid} was never evaluated:\n{text}");
    }
    for point in [
        "stream to_server",
        "http.uri to_server",
        "header-only to_server",
    ] {
        assert!(text.contains(point), "no {point} line:\n{text}");
    }
    assert!(
        text.contains("header-only tcp, every packet to_server"),
        "{text}"
    );
    // Without the option nothing is profiled.
    let plain = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .arg("inspect")
        .arg(&pcap)
        .args(["--threads", "1", "-o", "/dev/null", "--rules"])
        .arg(&rules)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&plain.stderr).contains("rules profile"));
}
