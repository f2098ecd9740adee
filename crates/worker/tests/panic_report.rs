//! Which panics a streaming run reports itself (`flowbundle_worker::panic_reported_by_run`, what the binary's panic
//! hook asks before it prints anything): a worker's and the reader's in a streaming run, the collector's while the run
//! calls it; not a panic on a thread outside any run, nor one in the preloaded run (which passes the panic on to its
//! caller). One test in a binary of its own, since the panic hook it installs is the process's.

use flowbundle_scheduler::{Desc, SchedOptions, build};
use flowbundle_types::{BundleToken, Outcome, Workload};
use flowbundle_worker::{Crew, RunConfig, StreamConfig, panic_reported_by_run, run, run_stream};
use std::sync::Mutex;

/// Panics on the packet with id 50.
struct PanicAt50;

impl Workload for PanicAt50 {
    type Local = ();
    fn local(&self, _w: usize) {}
    fn process(&self, _l: &mut (), d: Desc, _held: &mut BundleToken) -> Outcome {
        assert!(d.id != 50, "injected worker panic");
        Outcome::Processed
    }
}

fn desc(id: u32) -> Desc {
    Desc {
        id,
        fid: (id % 7) as u16,
        conn: id % 7,
        ..Desc::default()
    }
}

#[test]
fn the_run_reports_its_threads_panics_and_only_those() {
    // (thread name, message, reported by the run) of every panic while the hook is installed.
    static SEEN: Mutex<Vec<(String, String, bool)>> = Mutex::new(Vec::new());
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let name = std::thread::current().name().unwrap_or("").to_string();
        SEEN.lock()
            .unwrap()
            .push((name, msg, panic_reported_by_run()));
    }));
    let opts = SchedOptions::default();
    let cfg = StreamConfig {
        pin: false,
        ..StreamConfig::default()
    };

    // A worker of a streaming run.
    let sched = build("lfb", 2, &opts).unwrap();
    let mut k = 0u32;
    let feed = |_: &Crew<'_, ()>| {
        k += 1;
        (k <= 200).then(|| desc(k))
    };
    let e = run_stream(sched.as_ref(), &PanicAt50, feed, &mut |_| {}, &cfg)
        .map(|_| ())
        .expect_err("a worker died");
    assert!(e.thread.starts_with("worker-"), "{e}");

    // The reader of a streaming run.
    let sched = build("dh", 2, &opts).unwrap();
    let mut k = 0u32;
    let feed = |_: &Crew<'_, ()>| {
        k += 1;
        assert!(k < 20, "injected reader panic");
        Some(desc(k + 100))
    };
    let e = run_stream(sched.as_ref(), &PanicAt50, feed, &mut |_| {}, &cfg)
        .map(|_| ())
        .expect_err("the reader died");
    assert_eq!(e.thread, "reader");

    // The collector (the calling thread) while the run calls it.
    let sched = build("dh", 2, &opts).unwrap();
    let mut k = 0u32;
    let feed = |_: &Crew<'_, ()>| {
        k += 1;
        (k <= 40).then(|| desc(k + 100))
    };
    let mut collect = |last: bool| assert!(!last, "injected collector panic");
    let e = run_stream(sched.as_ref(), &PanicAt50, feed, &mut collect, &cfg)
        .map(|_| ())
        .expect_err("the collector died");
    assert_eq!(e.thread, "collector");

    // A thread outside any run, and the calling thread after the runs.
    let outside = std::thread::Builder::new()
        .name("outside".into())
        .spawn(|| panic!("injected outside panic"))
        .unwrap()
        .join();
    assert!(outside.is_err());
    assert!(
        !panic_reported_by_run(),
        "the calling thread after the runs"
    );

    // A worker of the preloaded run: the panic goes on in the caller, which must see it reported.
    let sched = build("dh", 2, &opts).unwrap();
    let descs: Vec<Desc> = (0..100).map(desc).collect();
    let preloaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(
            sched.as_ref(),
            &PanicAt50,
            &descs,
            &RunConfig {
                pin: false,
                ..RunConfig::default()
            },
        )
        .map(|_| ())
    }));
    assert!(preloaded.is_err());
    let _ = std::panic::take_hook();

    let seen = SEEN.lock().unwrap().clone();
    let reported = |msg: &str| {
        let hits: Vec<bool> = seen
            .iter()
            .filter(|(_, m, _)| m == msg)
            .map(|s| s.2)
            .collect();
        assert!(!hits.is_empty(), "no panic \"{msg}\" seen: {seen:?}");
        hits
    };
    // The streaming run's worker, reader and collector: reported by the run.
    assert!(
        seen.iter()
            .filter(|(n, m, _)| n.starts_with("worker-") && m == "injected worker panic")
            .any(|s| s.2),
        "{seen:?}"
    );
    assert_eq!(reported("injected reader panic"), [true]);
    assert_eq!(reported("injected collector panic"), [true]);
    // Outside any run: not reported by a run.
    assert_eq!(reported("injected outside panic"), [false]);
    // The preloaded run's worker: the last "injected worker panic" seen, not reported by a run.
    assert!(
        seen.iter()
            .rev()
            .find(|(_, m, _)| m == "injected worker panic")
            .is_some_and(|s| !s.2),
        "{seen:?}"
    );
}
