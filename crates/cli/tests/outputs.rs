//! No command writes over one of its inputs: an output path naming the same file as an input (however spelled: the
//! same string, another path to it, a hard link) is refused before anything is read or written, and the input is
//! left as it was. Outputs appear only complete: no temporary file is left beside them.

use flowbundle_testsupport::data;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn flowbundle(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("running flowbundle")
}

/// A scratch copy of a small real capture, and the bytes it must still hold after every refused command.
fn scratch_capture() -> Option<(tempfile::TempDir, PathBuf, Vec<u8>)> {
    let src = data("reassembly/DnsPackets.pcap")?;
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.pcap");
    let bytes = std::fs::read(&src).unwrap();
    std::fs::write(&copy, &bytes).unwrap();
    Some((dir, copy, bytes))
}

fn assert_refused(args: &[&Path], input: &Path, original: &[u8]) {
    let out = flowbundle(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} was accepted");
    assert!(err.contains("is the input"), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err}"
    );
    assert_eq!(
        std::fs::read(input).unwrap(),
        original,
        "{args:?} changed its input"
    );
}

#[test]
fn every_writing_command_refuses_its_input_as_output() {
    let Some((dir, copy, original)) = scratch_capture() else {
        return;
    };
    let other_spelling = dir.path().join(".").join("copy.pcap");
    let linked = dir.path().join("linked.pcap");
    std::fs::hard_link(&copy, &linked).unwrap();
    let p = |s: &str| PathBuf::from(s);
    for out in [&copy, &other_spelling, &linked] {
        let cases: Vec<Vec<PathBuf>> = vec![
            vec![p("inspect"), copy.clone(), p("-o"), out.clone()],
            vec![p("inspect"), copy.clone(), p("--cost-out"), out.clone()],
            vec![
                p("trace"),
                p("cut"),
                copy.clone(),
                p("--packets"),
                p("1..=3"),
                p("-o"),
                out.clone(),
            ],
            vec![
                p("trace"),
                p("rescale"),
                copy.clone(),
                p("--factor"),
                p("2"),
                p("-o"),
                out.clone(),
            ],
            vec![
                p("trace"),
                p("anonymize"),
                copy.clone(),
                p("--method"),
                p("sn1"),
                p("-o"),
                out.clone(),
            ],
            vec![p("trace"), p("merge"), copy.clone(), p("-o"), out.clone()],
            vec![p("simulate"), copy.clone(), p("--json"), out.clone()],
            vec![p("bench"), copy.clone(), p("--json"), out.clone()],
        ];
        for args in cases {
            let args: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
            assert_refused(&args, &copy, &original);
        }
    }
}

#[test]
fn outputs_are_written_whole_and_leave_no_temporary_file() {
    let Some((dir, copy, _)) = scratch_capture() else {
        return;
    };
    let eve = dir.path().join("eve.json");
    let cut = dir.path().join("cut.pcap");
    std::fs::write(&eve, b"an older file").unwrap();
    let out = flowbundle(&[Path::new("inspect"), &copy, Path::new("-o"), &eve]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&eve).unwrap();
    assert!(text.lines().count() > 10 && text.starts_with('{'), "{text}");
    let out = flowbundle(&[
        Path::new("trace"),
        Path::new("cut"),
        &copy,
        Path::new("--packets"),
        Path::new("1..=3"),
        Path::new("-o"),
        &cut,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["copy.pcap", "cut.pcap", "eve.json"]);
}
