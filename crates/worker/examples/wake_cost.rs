//! What waking a parked worker costs, measured the way the runtime wakes one (`src/park.rs`: the sleeper announces
//! itself, parks with `std::thread::park_timeout`; the waker stores the work, sees the announcement and calls
//! `Thread::unpark`, a futex wake system call when the thread is parked, nothing more when it is running).
//!
//! ```text
//! cargo run --release -p flowbundle-worker --example wake_cost [ROUNDS] [--no-pin]
//! ```
//!
//! Two threads, pinned to cores 0 and 1 unless `--no-pin` (a staged run's sending and receiving workers are on
//! different cores). Each round the waker waits until the sleeper has announced itself, gives it 100 µs to enter the
//! kernel's wait, then times:
//! * `unpark_parked_ns`: the waker's `unpark` of the parked thread (the futex wake, on the waker's core);
//! * `wake_to_run_ns`: from just before that `unpark` to the moment the woken thread runs again (the kernel's wake-up
//!   and scheduling latency, on the sleeper's core; the sleeper's return from the futex wait is in it);
//! * `unpark_running_ns`: for comparison, `unpark` of a thread that is not parked (no system call): what a hand-off
//!   pays when the receiver is awake.
//!
//! Prints one JSON object: the medians, 10th and 90th percentiles in ns, the rounds, and the 1-minute load average at
//! the start and the end (the latency depends on what else runs on the cores). `scripts/measure-handoff` runs it and
//! writes the medians into the simulator's hand-off file.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::time::{Duration, Instant};

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "null".into())
}

fn pin(core: usize, on: bool) {
    if !on {
        return;
    }
    if let Some(id) = core_affinity::get_core_ids().and_then(|ids| ids.into_iter().nth(core)) {
        core_affinity::set_for_current(id);
    }
}

/// 10th, 50th and 90th percentiles of `v` (sorted here).
fn pcts(v: &mut [u64]) -> [u64; 3] {
    v.sort_unstable();
    let at = |q: f64| {
        v.get(((v.len() as f64 - 1.0) * q) as usize)
            .copied()
            .unwrap_or(0)
    };
    [at(0.1), at(0.5), at(0.9)]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(2000)
        .max(1);
    let pinned = !args.iter().any(|a| a == "--no-pin");
    let load_start = load();
    let base = Instant::now();
    let ns = move || base.elapsed().as_nanos() as u64;
    // The sleeper's announcement (the runtime's `sleeping` flag), the round it was woken for, and when it ran.
    let sleeping = Arc::new(AtomicBool::new(false));
    let go = Arc::new(AtomicU64::new(0));
    let woke_at = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // Set while the waker wants the woken sleeper running (not parked again): it spins until cleared.
    let hold = Arc::new(AtomicBool::new(false));
    let sleeper = {
        let (sleeping, go, woke_at, stop, hold) = (
            sleeping.clone(),
            go.clone(),
            woke_at.clone(),
            stop.clone(),
            hold.clone(),
        );
        std::thread::spawn(move || {
            pin(1, pinned);
            let mut round = 0u64;
            while !stop.load(Acquire) {
                round += 1;
                sleeping.store(true, SeqCst);
                // Park until woken for this round (park may return spuriously or time out: park again).
                while go.load(Acquire) < round && !stop.load(Acquire) {
                    std::thread::park_timeout(Duration::from_millis(50));
                }
                woke_at.store(ns(), Release);
                while hold.load(Acquire) {
                    std::hint::spin_loop();
                }
            }
        })
    };
    pin(0, pinned);
    let t = sleeper.thread().clone();
    let mut unpark_parked = Vec::with_capacity(rounds);
    let mut wake_to_run = Vec::with_capacity(rounds);
    let mut unpark_running = Vec::with_capacity(rounds);
    for round in 1..=rounds as u64 {
        while !sleeping.load(SeqCst) {
            std::hint::spin_loop();
        }
        // Long enough for the sleeper to be in the kernel's wait.
        std::thread::sleep(Duration::from_micros(100));
        sleeping.store(false, SeqCst);
        woke_at.store(0, Relaxed);
        hold.store(true, Release);
        let t0 = ns();
        go.store(round, Release);
        t.unpark();
        let t1 = ns();
        let woke = loop {
            let w = woke_at.load(Acquire);
            if w != 0 {
                break w;
            }
            std::hint::spin_loop();
        };
        unpark_parked.push(t1 - t0);
        wake_to_run.push(woke.saturating_sub(t0));
        // The sleeper is running now (it spins while `hold`): an unpark of a running thread. It leaves a token that
        // makes the sleeper's next park return at once, which its loop absorbs (go < round: park again).
        let t2 = ns();
        t.unpark();
        unpark_running.push(ns() - t2);
        hold.store(false, Release);
    }
    stop.store(true, Release);
    t.unpark();
    sleeper.join().expect("the sleeper thread");
    let [p10, p50, p90] = pcts(&mut unpark_parked);
    let [l10, l50, l90] = pcts(&mut wake_to_run);
    let [r10, r50, r90] = pcts(&mut unpark_running);
    println!(
        "{{\"rounds\": {rounds}, \"pinned\": {pinned}, \"unpark_parked_ns\": {{\"p10\": {p10}, \"median\": {p50}, \
         \"p90\": {p90}}}, \"wake_to_run_ns\": {{\"p10\": {l10}, \"median\": {l50}, \"p90\": {l90}}}, \
         \"unpark_running_ns\": {{\"p10\": {r10}, \"median\": {r50}, \"p90\": {r90}}}, \"load_start\": {load_start}, \
         \"load_end\": {}}}",
        load()
    );
}
