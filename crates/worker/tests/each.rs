//! `run_each`: every worker runs the caller's work with its own number while the calling thread collects; a worker
//! that panics abandons the run, the others ending through the run's abort hook. Each run goes on a thread of its own
//! and the test waits for it with a deadline, a harness against a hang (nothing here is timed).

use flowbundle_worker::{StreamConfig, run_each};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

/// Far above any run here (each lasts milliseconds), so only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HANG) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => panic!("{what}: the run hangs"),
        Err(RecvTimeoutError::Disconnected) => {
            panic!("{what}: the run panicked instead of failing")
        }
    }
}

#[test]
fn every_worker_runs_once_with_its_number_and_the_last_collection_comes_after_all() {
    for workers in 1..=4 {
        let (results, calls) = within_deadline("run_each", move || {
            let done = AtomicU64::new(0);
            let mut calls = Vec::new();
            let results = run_each(
                workers,
                &|w| {
                    std::thread::sleep(Duration::from_millis(3));
                    done.fetch_add(1, SeqCst);
                    (w, std::thread::current().name().map(str::to_owned))
                },
                &mut |last| calls.push((last, done.load(SeqCst))),
                &StreamConfig::default(),
            )
            .expect("no thread panicked");
            (results, calls)
        });
        let expected: Vec<_> = (0..workers)
            .map(|w| (w, Some(format!("worker-{w}"))))
            .collect();
        assert_eq!(results, expected);
        assert_eq!(calls.iter().filter(|c| c.0).count(), 1, "{calls:?}");
        assert_eq!(calls.last(), Some(&(true, workers as u64)), "{calls:?}");
    }
}

#[test]
fn a_worker_that_panics_abandons_the_run_and_the_hook_stops_the_others() {
    let aborted = within_deadline("run_each with a panicking worker", || {
        let stop = AtomicBool::new(false);
        let hook = || stop.store(true, SeqCst);
        let cfg = StreamConfig {
            on_abort: Some(&hook),
            ..StreamConfig::default()
        };
        run_each(
            3,
            &|w| {
                if w == 1 {
                    panic!("worker one fails");
                }
                // The others would run for ever without the hook.
                while !stop.load(SeqCst) {
                    std::thread::sleep(Duration::from_micros(200));
                }
            },
            &mut |_| {},
            &cfg,
        )
        .expect_err("a worker panicked")
    });
    assert_eq!(aborted.thread, "worker-1");
    assert!(aborted.message.contains("worker one fails"), "{aborted}");
}
