//! `flowbundle demo` end to end, small: it needs nothing outside the repository (no shared data, no network), and its
//! output names every scheduler with a throughput figure, the engine's protocol summary and EVE lines.

use std::process::Command;

#[test]
fn the_demo_runs_every_scheduler_and_prints_throughput() {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args([
            "demo",
            "--packets",
            "3000",
            "--reps",
            "1",
            "--threads",
            "1,2",
        ])
        .env("NO_COLOR", "1")
        .output()
        .expect("running flowbundle demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed: {}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("== 1. Synthetic trace"), "{stdout}");
    assert!(stdout.contains("== 2. Inspection"), "{stdout}");
    assert!(
        stdout.contains("\"event_type\":\"flow\""),
        "no EVE flow line:\n{stdout}"
    );
    assert!(stdout.contains("== 3. Schedulers"), "{stdout}");
    assert!(
        stdout.contains("raw Mpps"),
        "no throughput column:\n{stdout}"
    );
    for s in flowbundle_scheduler::ALL {
        for threads in [1, 2] {
            // A table row: `| NAME | THREADS | MPPS |` with a positive throughput.
            let prefix = format!("| {s} | {threads} | ");
            let row = stdout
                .lines()
                .find(|l| l.starts_with(&prefix))
                .unwrap_or_else(|| panic!("no row for {s} × {threads}:\n{stdout}"));
            let mpps: f64 = row[prefix.len()..]
                .split('|')
                .next()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no throughput in `{row}`"));
            assert!(mpps > 0.0, "`{row}`");
        }
    }
}
