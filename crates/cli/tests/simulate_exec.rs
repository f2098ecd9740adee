//! `simulate --exec` runs the execution models on a generated trace and prints one row per model; `--exec-split`
//! cuts detection into its stateless scan and the rest (a `scan` group under the pipeline and multilayer, three
//! shared groups under run-to-completion); a bad combination is a one-line error.

use std::process::{Command, Output};

fn flowbundle(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(args)
        .output()
        .unwrap()
}

fn simulate(extra: &[&str]) -> (bool, String, String) {
    let mut args = vec![
        "simulate",
        "--synth",
        "balanced",
        "--synth-packets",
        "3000",
        "--scheduler",
        "lfb",
        "--cores",
        "6",
        "--exec",
        "rtc,pipeline,multilayer",
    ];
    args.extend_from_slice(extra);
    let run = flowbundle(&args);
    (
        run.status.success(),
        String::from_utf8_lossy(&run.stdout).into_owned(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

fn row<'a>(out: &'a str, model: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(&format!("| {model} | lfb | 6 |")))
        .unwrap_or_else(|| panic!("no {model} row in:\n{out}"))
}

#[test]
fn every_model_gets_a_row_and_the_split_adds_a_scan_group() {
    let (ok, out, err) = simulate(&[]);
    assert!(ok, "{err}");
    for m in ["rtc", "pipeline", "multilayer"] {
        assert!(!row(&out, m).contains("scan"), "{m} without the split");
    }
    let (ok, out, err) = simulate(&["--exec-split"]);
    assert!(ok, "{err}");
    assert!(row(&out, "pipeline").contains("scan ("));
    assert!(row(&out, "multilayer").contains("scan ("));
    assert!(
        row(&out, "rtc").contains("scan (6 shared)"),
        "{}",
        row(&out, "rtc")
    );
}

#[test]
fn the_split_needs_the_exec_models_raw_mode() {
    let (ok, _, err) = simulate(&["--exec-split", "--mode", "scaled"]);
    assert!(!ok);
    assert!(err.contains("raw mode"), "{err}");
}

/// `--exec-handoff none` charges a hop the policy's overheads instead of the measured hand-off, so the staged models
/// go faster and run-to-completion (which hops nowhere) does not move; a file that is not a hand-off measurement is
/// a one-line error naming it.
#[test]
fn the_measured_hand_off_can_be_replaced_and_a_bad_file_is_refused() {
    let mpps = |out: &str, m: &str| -> f64 {
        row(out, m)
            .split('|')
            .nth(4)
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or_else(|| panic!("no Mpps in {}", row(out, m)))
    };
    let (ok, measured, err) = simulate(&[]);
    assert!(ok, "{err}");
    let (ok, none, err) = simulate(&["--exec-handoff", "none"]);
    assert!(ok, "{err}");
    assert_eq!(mpps(&measured, "rtc"), mpps(&none, "rtc"));
    for m in ["pipeline", "multilayer"] {
        assert!(mpps(&measured, m) < mpps(&none, m), "{m}");
    }
    let dir = std::env::temp_dir().join(format!("fb-handoff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("handoff.json");
    std::fs::write(&bad, "{\"source\": \"x\", \"send_instructions\": -1}").unwrap();
    let (ok, _, err) = simulate(&["--exec-handoff", bad.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert!(!ok);
    let last = err.trim().lines().last().unwrap_or("");
    assert!(
        last.starts_with("flowbundle: ") && last.contains("handoff.json"),
        "{err}"
    );
}

/// The runtime's reader and collector (`--exec-machine-cores`): on as many cores as workers their measured work
/// takes cycles from the workers, so every model is slower than with a free dispatcher (a modelled cost, as here,
/// leaves them out by default); fewer cores than workers, or a file that is not a threads measurement, is a one-line
/// error.
#[test]
fn the_reader_and_collector_share_the_cores_when_asked_and_bad_inputs_are_refused() {
    let mpps = |out: &str, m: &str| -> f64 {
        row(out, m)
            .split('|')
            .nth(4)
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or_else(|| panic!("no Mpps in {}", row(out, m)))
    };
    let (ok, free, err) = simulate(&[]);
    assert!(ok, "{err}");
    let (ok, shared, err) = simulate(&["--exec-machine-cores", "6"]);
    assert!(ok, "{err}");
    for m in ["rtc", "pipeline", "multilayer"] {
        assert!(mpps(&shared, m) < mpps(&free, m), "{m}: {free}\n{shared}");
    }
    let (ok, _, err) = simulate(&["--exec-machine-cores", "5"]);
    assert!(!ok);
    assert!(err.contains("needs a core per worker"), "{err}");
    let dir = std::env::temp_dir().join(format!("fb-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("threads.json");
    std::fs::write(&bad, "{\"source\": 1}").unwrap();
    let (ok, _, err) = simulate(&["--exec-threads", bad.to_str().unwrap()]);
    assert!(!ok);
    let last = err.trim().lines().last().unwrap_or_default();
    assert!(last.contains("threads.json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
