//! `trace synth` makes exactly the packets asked, or refuses with one line naming the fewest it can make with the
//! same options (a profile scaled down keeps its per-connection cap, which bounds what few connections can carry).

use std::process::Command;

fn synth(dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(["trace", "synth", "--no-progress", "-o"])
        .arg(dir.join("s.pcap"))
        .args(args)
        .output()
        .expect("running flowbundle");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn packets_in(path: &std::path::Path) -> u64 {
    let mut r = flowbundle_ingest::CaptureReader::open(path).unwrap();
    let mut n = 0;
    while r.next_packet().unwrap().is_some() {
        n += 1;
    }
    n
}

#[test]
fn synth_makes_the_packets_asked_or_names_the_fewest_it_can() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = synth(dir.path(), &["--profile", "many", "--packets", "500"]);
    assert!(!ok, "500 packets of the `many` profile were accepted");
    assert_eq!(err.lines().count(), 1, "{err}");
    let least: u64 = err
        .trim_end()
        .rsplit_once("--packets ")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or_else(|| panic!("no minimum named: {err}"));
    assert!(least > 500, "{err}");
    assert!(
        !dir.path().join("s.pcap").exists(),
        "a refused run wrote a file"
    );
    for (profile, n) in [("many", least), ("many", 5000), ("dominant", 5000)] {
        let n_text = n.to_string();
        let (ok, out, err) = synth(dir.path(), &["--profile", profile, "--packets", &n_text]);
        assert!(ok, "{profile} {n}: {err}");
        assert!(out.contains(&format!(": {n} packets")), "{out}");
        assert_eq!(packets_in(&dir.path().join("s.pcap")), n, "{profile}");
    }
}
