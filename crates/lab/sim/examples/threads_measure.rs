//! The streaming runtime's reader and collector threads, and the single-threaded loop, per packet, from callgrind
//! profiles (`flowbundle_sim::threads`), written as the JSON the simulator reads. `scripts/measure-threads` runs the
//! whole measurement.
//!
//! `threads_measure SOURCE CLOCK_GHZ CPU_S CPU_S_SMALL ONE ONE_SMALL RTC RTC_SMALL`:
//! * ONE, ONE_SMALL: the per-thread profiles (`callgrind --separate-threads=yes`, files `ONE-01`, ...) of
//!   `flowbundle inspect --threads 1` (the single-threaded loop) on the trace and on a short trace of the same
//!   profile; CPU_S, CPU_S_SMALL: user + system time of native runs of the same two commands;
//! * RTC, RTC_SMALL: the same for `--threads 2 --exec rtc` (a reader, two workers, the collector on the calling
//!   thread).
//!
//! Packets are the calls into `Engine::process_serial` of the single-threaded runs (one per packet read). A thread of
//! the threaded run is the reader when it calls `reader_loop`, a worker when it calls `worker_loop`, else the
//! collector (the calling thread, which also loads the rules: that cancels between the two traces). Idle loops
//! (`idle_round`) and the reader's back-off (`Backoff::wait`) are left out: waiting, not work. Per packet, each the
//! difference between the trace's run and the short one's over the difference of their packets:
//! * reader, collector: the thread's instructions;
//! * worker: the workers' instructions less the single-threaded run's inside `Engine::process_serial`;
//! * loop: the single-threaded run's instructions outside `Engine::process_serial`.
//!
//! Cycles per instruction: the single-threaded runs' CPU time difference over their instruction difference, at
//! CLOCK_GHZ. The JSON goes to standard output, a summary to standard error.

use flowbundle_sim::layers::{Dump, Names, parse};
use flowbundle_sim::threads::RuntimeThreads;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Reader,
    Worker,
    Collector,
}

/// One thread's profile, reduced to what the measurement needs.
#[derive(Debug)]
struct Thread {
    file: String,
    role: Role,
    total: u64,
    waits: u64,
    engine: u64,
    packets: u64,
}

fn threads(prefix: &str, names: &mut Names) -> Vec<Thread> {
    let path = std::path::Path::new(prefix);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let base = path
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
    if files.is_empty() {
        fail(&format!("no profiles {prefix}-*"));
    }
    let mut out = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).unwrap_or_else(|e| fail(&format!("{}: {e}", f.display())));
        let d: Dump =
            parse(&text, names).unwrap_or_else(|e| fail(&format!("{}: {e}", f.display())));
        let (reader, _) = d.calls_into(names, &|n| n.contains("reader_loop"));
        let (worker, _) = d.calls_into(names, &|n| n.contains("worker_loop"));
        let (_, idle) = d.calls_into(names, &|n| n.contains("idle_round"));
        let (_, backoff) = d.calls_into(names, &|n| n.contains("Backoff") && n.ends_with("::wait"));
        let (packets, engine) = d.calls_into(names, &|n| n.ends_with("Engine::process_serial"));
        let role = if reader > 0 {
            Role::Reader
        } else if worker > 0 {
            Role::Worker
        } else {
            Role::Collector
        };
        out.push(Thread {
            file: f.display().to_string(),
            role,
            total: d.total(),
            waits: idle + backoff,
            engine,
            packets,
        });
    }
    out
}

fn fail(msg: &str) -> ! {
    eprintln!("threads_measure: {msg}");
    std::process::exit(1);
}

/// Instructions of the threads of `role` (`None`: all), waits left out.
fn work(ts: &[Thread], role: Option<Role>) -> f64 {
    ts.iter()
        .filter(|t| role.is_none_or(|r| t.role == r))
        .map(|t| t.total as f64 - t.waits as f64)
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 9 {
        eprintln!(
            "usage: threads_measure SOURCE CLOCK_GHZ CPU_S CPU_S_SMALL ONE ONE_SMALL RTC RTC_SMALL"
        );
        std::process::exit(2);
    }
    let num = |s: &str, what: &str| -> f64 {
        s.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .unwrap_or_else(|| fail(&format!("{what}: not a number: {s}")))
    };
    let (ghz, cpu_s, cpu_small) = (
        num(&args[2], "CLOCK_GHZ"),
        num(&args[3], "CPU_S"),
        num(&args[4], "CPU_S_SMALL"),
    );
    let mut names = Names::default();
    let one = threads(&args[5], &mut names);
    let one_small = threads(&args[6], &mut names);
    let rtc = threads(&args[7], &mut names);
    let rtc_small = threads(&args[8], &mut names);
    for (what, ts) in [
        ("one thread", &one),
        ("one thread, short trace", &one_small),
        ("two workers", &rtc),
        ("two workers, short trace", &rtc_small),
    ] {
        eprintln!("{what}:");
        for t in ts.iter() {
            eprintln!(
                "  {}: {:?}, {} instructions, waits {}, process_serial {} in {} calls",
                t.file, t.role, t.total, t.waits, t.engine, t.packets
            );
        }
    }
    for ts in [&rtc, &rtc_small] {
        if !ts.iter().any(|t| t.role == Role::Reader) || !ts.iter().any(|t| t.role == Role::Worker)
        {
            fail("the threaded run has no reader or no worker thread (not --threads 2?)");
        }
    }
    let packets = |ts: &[Thread]| ts.iter().map(|t| t.packets).sum::<u64>() as f64;
    let engine = |ts: &[Thread]| ts.iter().map(|t| t.engine).sum::<u64>() as f64;
    let n = packets(&one) - packets(&one_small);
    if n <= 0.0 {
        fail("the short trace has as many packets as the trace");
    }
    let per = |big: f64, small: f64| (big - small) / n;
    let engine_pp = per(engine(&one), engine(&one_small));
    let reader = per(
        work(&rtc, Some(Role::Reader)),
        work(&rtc_small, Some(Role::Reader)),
    );
    let collector = per(
        work(&rtc, Some(Role::Collector)),
        work(&rtc_small, Some(Role::Collector)),
    );
    let workers = per(
        work(&rtc, Some(Role::Worker)),
        work(&rtc_small, Some(Role::Worker)),
    );
    let one_all = per(work(&one, None), work(&one_small, None));
    let looped = one_all - engine_pp;
    let instructions = one.iter().map(|t| t.total).sum::<u64>() as f64
        - one_small.iter().map(|t| t.total).sum::<u64>() as f64;
    let cpu = cpu_s - cpu_small;
    if !(instructions > 0.0 && cpu > 0.0) {
        fail(&format!(
            "no difference to time: {instructions} instructions, {cpu} s of CPU"
        ));
    }
    let cpi = cpu * ghz * 1e9 / instructions;
    eprintln!(
        "{n} packets more in the trace than in the short one; per packet: single-threaded {one_all:.0} instructions \
         (engine {engine_pp:.0}, loop {looped:.0}); two workers: reader {reader:.0}, workers {workers:.0} (engine \
         {engine_pp:.0} + {:.0}), collector {collector:.0}, total {:.0}; {cpi:.3} cycles per instruction",
        workers - engine_pp,
        reader + workers + collector
    );
    let t = RuntimeThreads {
        source: args[1].clone(),
        reader_instructions: reader.max(0.0),
        collector_instructions: collector.max(0.0),
        worker_instructions: workers - engine_pp,
        loop_instructions: looped.max(0.0),
        cycles_per_instruction: cpi,
        cpu: None,
    };
    if let Err(e) = t.validate() {
        fail(&e);
    }
    println!("{}", t.to_json());
}
