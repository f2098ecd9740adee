//! The staged runtime's per-packet hand-off cost from callgrind profiles (`flowbundle_sim::handoff`), written as the
//! JSON the simulator reads. `scripts/measure-handoff` runs the whole measurement.
//!
//! `handoff_measure SOURCE CLOCK_GHZ COPIED CPU_S CPU_S_SMALL ONE_PREFIX ONE_SMALL_PREFIX RTC_PREFIX STAGED_PREFIX`:
//! * RTC_PREFIX: the per-thread profiles (`callgrind --separate-threads=yes`, files `RTC_PREFIX-01`, `-02`, ...) of
//!   `flowbundle inspect --threads 2 --exec rtc` (the streaming runtime, two workers running to completion);
//! * STAGED_PREFIX: the same for `--threads 2 --exec pipeline` (one flow worker, one detection worker) on the same
//!   trace, rules and policy: the two runs differ only by the hand-off;
//! * CPU_S, CPU_S_SMALL: user + system time of native runs of `--threads 1` on the trace and on a trace of a few
//!   packets; ONE_PREFIX, ONE_SMALL_PREFIX: the same two runs' profiles. The differences (rule loading and start-up
//!   cancel) give the engine's cycles per instruction at CLOCK_GHZ, the host's clock;
//! * COPIED: bytes the script copies per payload byte of a packet entering the detection group.
//!
//! Detection is the inclusive instructions of the calls into `flowbundle_inspect::staged::run` (the one
//! implementation of a rules call, which run-to-completion calls at once and the detection stage from a script);
//! idle is the calls into `idle_round` (spinning, yielding, parking: waiting, not work); output is the calls into
//! the packet source's `consumed` (EVE rendering, which run-to-completion's workers do too). The staged run's
//! detection worker is its thread with the most detection; the packets it was handed are its calls into the
//! workload's `process_stage`. Then, per packet handed over:
//! * receive = the detection worker's instructions, less its idle loops, its detection and its output;
//! * send = every thread's instructions of the staged run less the run-to-completion run's (idle loops left out of
//!   both: rule loading, reading and output cancel), less receive.
//!
//! The JSON goes to standard output, a summary to standard error.

use flowbundle_sim::handoff::Handoff;
use flowbundle_sim::layers::{Dump, Names, parse};

/// One thread's profile, reduced to what the measurement needs.
#[derive(Debug)]
struct Thread {
    file: String,
    total: u64,
    idle: u64,
    detection: u64,
    output: u64,
    scripts: u64,
}

fn threads(prefix: &str, names: &mut Names) -> Vec<Thread> {
    let dir = std::path::Path::new(prefix)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let base = std::path::Path::new(prefix)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{base}-")))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = match std::fs::read_to_string(&f) {
            Ok(t) => t,
            Err(e) => fail(&format!("{}: {e}", f.display())),
        };
        let d: Dump = match parse(&text, names) {
            Ok(d) => d,
            Err(e) => fail(&format!("{}: {e}", f.display())),
        };
        let (_, idle) = d.calls_into(names, &|n| n.contains("idle_round"));
        let (_, detection) = d.calls_into(names, &|n| n == "flowbundle_inspect::staged::run");
        let (scripts, _) = d.calls_into(names, &|n| n.ends_with("::process_stage"));
        let (_, output) = d.calls_into(names, &|n| n.ends_with("::consumed"));
        out.push(Thread {
            file: f.display().to_string(),
            total: d.total(),
            idle,
            detection,
            output,
            scripts,
        });
    }
    out
}

fn fail(msg: &str) -> ! {
    eprintln!("handoff_measure: {msg}");
    std::process::exit(1);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 10 {
        eprintln!(
            "usage: handoff_measure SOURCE CLOCK_GHZ COPIED CPU_S CPU_S_SMALL ONE_PREFIX ONE_SMALL_PREFIX RTC_PREFIX \
             STAGED_PREFIX"
        );
        std::process::exit(2);
    }
    let num = |s: &str, what: &str| -> f64 {
        s.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .unwrap_or_else(|| fail(&format!("{what}: not a number: {s}")))
    };
    let (ghz, copied, cpu_s, cpu_small) = (
        num(&args[2], "CLOCK_GHZ"),
        num(&args[3], "COPIED"),
        num(&args[4], "CPU_S"),
        num(&args[5], "CPU_S_SMALL"),
    );
    let mut names = Names::default();
    let one = threads(&args[6], &mut names);
    let small = threads(&args[7], &mut names);
    let rtc = threads(&args[8], &mut names);
    let staged = threads(&args[9], &mut names);
    for (what, ts) in [
        ("one worker", &one),
        ("one worker, small trace", &small),
        ("run to completion", &rtc),
        ("staged", &staged),
    ] {
        eprintln!("{what}:");
        for t in ts.iter() {
            eprintln!(
                "  {}: {} instructions, idle loops {}, detection {}, output {}, stages run {}",
                t.file, t.total, t.idle, t.detection, t.output, t.scripts
            );
        }
    }
    let det = staged
        .iter()
        .max_by_key(|t| t.detection)
        .filter(|t| t.detection > 0 && t.scripts > 0)
        .unwrap_or_else(|| fail("no thread of the staged run runs detection stages"));
    let busy = |t: &Thread| t.total as f64 - t.idle as f64;
    let sum = |ts: &[Thread]| ts.iter().map(busy).sum::<f64>();
    let detection = |ts: &[Thread]| ts.iter().map(|t| t.detection).sum::<u64>();
    let hops = det.scripts as f64;
    let receive = (busy(det) - det.detection as f64 - det.output as f64) / hops;
    let send = (sum(&staged) - sum(&rtc)) / hops - receive;
    let instructions = sum(&one) - sum(&small);
    let cpu = cpu_s - cpu_small;
    if !(instructions > 0.0 && cpu > 0.0) {
        fail(&format!(
            "no difference to time: {instructions} instructions, {cpu} s of CPU between the trace and the small one"
        ));
    }
    let cpi = cpu * ghz * 1e9 / instructions;
    eprintln!(
        "{hops} packets handed over; detection {} (run to completion) vs {} (staged); per packet: send {send:.0}, \
         receive {receive:.0} instructions; {instructions} instructions in {cpu:.3} s of CPU at {ghz:.2} GHz: \
         {cpi:.3} cycles per instruction",
        detection(&rtc),
        detection(&staged)
    );
    let h = Handoff {
        source: args[1].clone(),
        send_instructions: send.max(0.0),
        receive_instructions: receive.max(0.0),
        // The descriptor's line and the script's header (its vectors' pointers and the first ops).
        record_lines: 2.0,
        copied_per_payload_byte: copied,
        cycles_per_instruction: cpi,
        batch: 1,
        // Measured apart (`scripts/measure-handoff --wake-only` adds them).
        wakeups_per_packet: 0.0,
        wake_ns: 0.0,
    };
    if let Err(e) = h.validate() {
        fail(&e);
    }
    println!("{}", h.to_json());
}
