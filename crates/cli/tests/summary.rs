//! The summary people read: the capture's own start, end and span beside the processing time, and a long input
//! list shortened to its first few and a count.

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
