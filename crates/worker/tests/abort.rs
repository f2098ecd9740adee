//! A thread that dies abandons a streaming run instead of hanging it: a worker that panics on its Nth packet under
//! every policy and thread count, in the run-to-completion and the staged runs; a worker whose setup panics before
//! the run's start (and the preloaded run's answer to it, the panic passed on); the reader; the collector. The feed
//! waits for a free buffer from a bounded pool that only the workers refill, as the packet arena does: a dead worker
//! never gives its buffers back, so the run ends only if the runtime abandons it and the abort hook closes the pool.
//! Each run goes on a thread of its own and the test waits for it with a deadline, a harness against a hang (the
//! deadline is far above any run's time; nothing here is timed).

use flowbundle_scheduler::{ALL, Desc, SchedOptions, Scheduler, build};
use flowbundle_types::{BundleToken, Outcome, StagedWorkload, WorkerId, Workload};
use flowbundle_worker::{
    Aborted, Crew, RunConfig, StreamConfig, run, run_stream, run_stream_staged,
};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Far above any run here (each lasts milliseconds), so only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

/// Runs `f` on a thread of its own and returns its result, failing the test if it has not returned within [`HANG`].
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

/// Buffers the feed takes one per packet and the workers give back once the packet is processed; a wait for one
/// ends only with a give-back or [`close`](Pool::close).
struct Pool {
    free: Mutex<(usize, bool)>,
    cv: Condvar,
}

impl Pool {
    fn new(n: usize) -> Self {
        Pool {
            free: Mutex::new((n, false)),
            cv: Condvar::new(),
        }
    }

    /// Takes a buffer, waiting for one; `false` once the pool is closed.
    fn take(&self) -> bool {
        let mut g = self.free.lock().unwrap();
        loop {
            if g.1 {
                return false;
            }
            if g.0 > 0 {
                g.0 -= 1;
                return true;
            }
            g = self.cv.wait(g).unwrap();
        }
    }

    /// Takes a buffer without waiting; `None` once the pool is closed.
    fn try_take(&self) -> Option<bool> {
        let mut g = self.free.lock().unwrap();
        if g.1 {
            return None;
        }
        let got = g.0 > 0;
        if got {
            g.0 -= 1;
        }
        Some(got)
    }

    /// Takes a buffer for a reader that may be worker 0: it inspects its share before it waits ([`Crew::help`]).
    fn take_helping<L>(&self, crew: &Crew<'_, L>) -> bool {
        loop {
            match self.try_take() {
                None => return false,
                Some(true) => return true,
                Some(false) if crew.help() => {}
                Some(false) => return self.take(),
            }
        }
    }

    fn give_back(&self) {
        self.free.lock().unwrap().0 += 1;
        self.cv.notify_all();
    }

    fn close(&self) {
        self.free.lock().unwrap().1 = true;
        self.cv.notify_all();
    }
}

/// Packet `k` of an endless trace over 64 connections.
fn desc(k: u64) -> Desc {
    let h = ((k % 64) as u32).wrapping_mul(0x9e37_79b9);
    Desc {
        id: (k % (1 << 20)) as u32,
        conn: h,
        rss: h.rotate_left(9),
        fid: (h >> 7) as u16,
        len: 100,
    }
}

/// A workload that panics on the `at`th packet processed (counting from 0, over all workers), and gives each other
/// packet's buffer back.
struct PanicAt<'a> {
    at: u64,
    seen: AtomicU64,
    pool: &'a Pool,
}

impl<'a> PanicAt<'a> {
    fn new(at: u64, pool: &'a Pool) -> Self {
        PanicAt {
            at,
            seen: AtomicU64::new(0),
            pool,
        }
    }

    fn packet(&self) {
        if self.seen.fetch_add(1, Relaxed) == self.at {
            panic!("injected panic at packet {}", self.at);
        }
        self.pool.give_back();
    }
}

impl Workload for PanicAt<'_> {
    type Local = ();
    fn local(&self, _w: WorkerId) {}
    fn process(&self, _l: &mut (), _d: Desc, _held: &mut BundleToken) -> Outcome {
        self.packet();
        Outcome::Processed
    }
}

/// Two stages; the packets' buffers go back after the second, which panics on its `at`th packet.
impl StagedWorkload for PanicAt<'_> {
    type Local = ();
    fn stages(&self) -> usize {
        2
    }
    fn local(&self, _stage: usize, _w: WorkerId) {}
    fn process_stage(
        &self,
        stage: usize,
        _l: &mut (),
        _d: Desc,
        _held: &mut BundleToken,
    ) -> (Outcome, Option<usize>) {
        if stage == 0 {
            return (Outcome::Processed, Some(1));
        }
        self.packet();
        (Outcome::Processed, None)
    }
}

fn opts() -> SchedOptions {
    SchedOptions {
        // Small queues, so the reader also meets full queues that the dead worker never drains.
        capacity: 16,
        ph_late_claim: false,
        ..SchedOptions::default()
    }
}

/// A run of an endless feed through `policy` on `workers` workers whose workload panics at packet `at`, with 32
/// buffers; the reader is worker 0 when `reader_works`.
fn worker_panics(
    policy: &'static str,
    workers: usize,
    at: u64,
    reader_works: bool,
) -> Result<u64, Aborted> {
    let pool = Pool::new(32);
    let sched = build(policy, workers, &opts()).unwrap();
    let work = PanicAt::new(at, &pool);
    let mut k = 0u64;
    let feed = |crew: &Crew<'_, ()>| {
        if !pool.take_helping(crew) {
            return None;
        }
        k += 1;
        Some(desc(k))
    };
    let close = || pool.close();
    let cfg = StreamConfig {
        pin: false,
        on_abort: Some(&close),
        reader_works,
        ..StreamConfig::default()
    };
    run_stream(sched.as_ref(), &work, feed, &mut |_| {}, &cfg).map(|(r, _)| r.processed())
}

#[test]
fn a_worker_that_panics_abandons_the_run_under_every_policy() {
    for policy in ALL {
        for workers in [1, 2, 3] {
            for at in [0, 5, 1000] {
                for reader_works in [false, true] {
                    let what = format!(
                        "{policy}, {workers} workers, panic at packet {at}, reader works: {reader_works}"
                    );
                    let r = within_deadline(&what, move || {
                        worker_panics(policy, workers, at, reader_works)
                    });
                    let e = r.expect_err(&what);
                    // A reader that is worker 0 dies as the reader when the packet is its own.
                    assert!(
                        e.thread.starts_with("worker-") || (reader_works && e.thread == "reader"),
                        "{what}: {e}"
                    );
                    assert_eq!(
                        e.message,
                        format!("injected panic at packet {at}"),
                        "{what}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_worker_of_a_later_stage_that_panics_abandons_the_staged_run() {
    for policy in ALL {
        if !build(policy, 1, &opts()).unwrap().shape().keeps_flow_order {
            continue;
        }
        for (first, second) in [(1, 1), (2, 1), (1, 2)] {
            for at in [0, 500] {
                let what = format!("{policy}, {first}+{second} workers, panic at packet {at}");
                let r = within_deadline(&what, move || {
                    let pool = Pool::new(32);
                    let a = build(policy, first, &opts()).unwrap();
                    let b = build(policy, second, &opts()).unwrap();
                    let work = PanicAt::new(at, &pool);
                    let mut k = 0u64;
                    let feed = || {
                        if !pool.take() {
                            return None;
                        }
                        k += 1;
                        Some(desc(k))
                    };
                    let close = || pool.close();
                    let cfg = StreamConfig {
                        pin: false,
                        on_abort: Some(&close),
                        ..StreamConfig::default()
                    };
                    let scheds: [&dyn Scheduler; 2] = [a.as_ref(), b.as_ref()];
                    run_stream_staged(&scheds, &work, feed, &mut |_| {}, &cfg).map(|_| ())
                });
                let e = r.expect_err(&what);
                assert!(e.thread.starts_with("stage1-worker-"), "{what}: {e}");
                assert_eq!(
                    e.message,
                    format!("injected panic at packet {at}"),
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn a_reader_that_panics_abandons_the_run() {
    for policy in ["dh", "lfb", "ph"] {
        let r = within_deadline(policy, move || {
            let sched = build(policy, 2, &opts()).unwrap();
            let mut k = 0u64;
            let feed = |_: &Crew<'_, ()>| {
                k += 1;
                assert!(k < 300, "injected reader panic");
                Some(desc(k))
            };
            run_stream(
                sched.as_ref(),
                &flowbundle_worker::Null,
                feed,
                &mut |_| {},
                &StreamConfig {
                    pin: false,
                    ..StreamConfig::default()
                },
            )
            .map(|_| ())
        });
        let e = r.expect_err(policy);
        assert_eq!(e.thread, "reader", "{e}");
        assert_eq!(e.message, "injected reader panic");
    }
}

#[test]
fn a_collector_that_panics_abandons_the_run() {
    // The feed never ends by itself: only the abort (its hook closing the pool) ends the run.
    let r = within_deadline("collector", || {
        let pool = Pool::new(32);
        let sched = build("lfb", 2, &opts()).unwrap();
        let work = PanicAt::new(u64::MAX, &pool);
        let feed = |_: &Crew<'_, ()>| pool.take().then(|| desc(1));
        let close = || pool.close();
        let calls = AtomicBool::new(false);
        let mut collect = |_last: bool| {
            if calls.swap(true, Relaxed) {
                panic!("injected collector panic");
            }
        };
        let cfg = StreamConfig {
            pin: false,
            on_abort: Some(&close),
            ..StreamConfig::default()
        };
        run_stream(sched.as_ref(), &work, feed, &mut collect, &cfg).map(|_| ())
    });
    let e = r.expect_err("collector");
    assert_eq!(e.thread, "collector", "{e}");
    assert_eq!(e.message, "injected collector panic");
}

#[test]
fn a_run_without_panics_still_ends_normally_with_the_hook_set() {
    // The abort path costs a complete run nothing: every packet processed, the hook never called.
    let r = within_deadline("normal", || {
        let pool = Pool::new(32);
        let sched = build("lfb", 2, &opts()).unwrap();
        let work = PanicAt::new(u64::MAX, &pool);
        let mut k = 0u64;
        let feed = |_: &Crew<'_, ()>| {
            if k == 10_000 || !pool.take() {
                return None;
            }
            k += 1;
            Some(desc(k))
        };
        let called = AtomicBool::new(false);
        let hook = || called.store(true, Relaxed);
        let cfg = StreamConfig {
            pin: false,
            on_abort: Some(&hook),
            ..StreamConfig::default()
        };
        let n =
            run_stream(sched.as_ref(), &work, feed, &mut |_| {}, &cfg).map(|(r, _)| r.processed());
        (n, called.load(Relaxed))
    });
    assert_eq!(r, (Ok(10_000), false));
}

/// A workload whose per-worker setup panics on one worker (`victim`: the stage, for a staged run, and the worker),
/// before the run's start.
struct PanicInLocal {
    victim: (usize, WorkerId),
}

impl PanicInLocal {
    fn setup(&self, stage: usize, w: WorkerId) {
        if (stage, w) == self.victim {
            panic!("injected panic in the setup of stage {stage}, worker {w}");
        }
    }
}

impl Workload for PanicInLocal {
    type Local = ();
    fn local(&self, w: WorkerId) {
        self.setup(0, w);
    }
    fn process(&self, _l: &mut (), _d: Desc, _held: &mut BundleToken) -> Outcome {
        Outcome::Processed
    }
}

impl StagedWorkload for PanicInLocal {
    type Local = ();
    fn stages(&self) -> usize {
        2
    }
    fn local(&self, stage: usize, w: WorkerId) {
        self.setup(stage, w);
    }
    fn process_stage(
        &self,
        stage: usize,
        _l: &mut (),
        _d: Desc,
        _held: &mut BundleToken,
    ) -> (Outcome, Option<usize>) {
        (Outcome::Processed, (stage == 0).then_some(1))
    }
}

/// A feed of 10 000 packets: a run that wrongly goes on after a setup panic ends, and fails its test.
fn short_feed() -> impl FnMut() -> Option<Desc> + Send {
    let mut k = 0u64;
    move || {
        k += 1;
        (k <= 10_000).then(|| desc(k))
    }
}

#[test]
fn a_worker_whose_setup_panics_abandons_the_run_under_every_policy() {
    for policy in ALL {
        for workers in [1, 2, 3] {
            for victim in 0..workers {
                for reader_works in [false, true] {
                    let what = format!(
                        "{policy}, {workers} workers, worker {victim}'s setup panics, reader works: {reader_works}"
                    );
                    let r = within_deadline(&what, move || {
                        let sched = build(policy, workers, &opts()).unwrap();
                        let work = PanicInLocal {
                            victim: (0, victim),
                        };
                        let mut next = short_feed();
                        let feed = move |_: &Crew<'_, ()>| next();
                        let cfg = StreamConfig {
                            pin: false,
                            reader_works,
                            ..StreamConfig::default()
                        };
                        run_stream(sched.as_ref(), &work, feed, &mut |_| {}, &cfg).map(|_| ())
                    });
                    let e = r.expect_err(&what);
                    // A reader that is worker 0 sets worker 0 up on its own thread.
                    let thread = if reader_works && victim == 0 {
                        "reader".to_string()
                    } else {
                        format!("worker-{victim}")
                    };
                    assert_eq!(e.thread, thread, "{what}: {e}");
                    assert_eq!(
                        e.message,
                        format!("injected panic in the setup of stage 0, worker {victim}"),
                        "{what}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_worker_whose_setup_panics_abandons_the_staged_run() {
    for policy in ALL {
        if !build(policy, 1, &opts()).unwrap().shape().keeps_flow_order {
            continue;
        }
        for (first, second) in [(1, 1), (2, 1), (1, 2)] {
            let victims = (0..first)
                .map(|w| (0, w))
                .chain((0..second).map(|w| (1, w)));
            for (stage, victim) in victims {
                let what = format!(
                    "{policy}, {first}+{second} workers, stage {stage} worker {victim}'s setup panics"
                );
                let r = within_deadline(&what, move || {
                    let a = build(policy, first, &opts()).unwrap();
                    let b = build(policy, second, &opts()).unwrap();
                    let work = PanicInLocal {
                        victim: (stage, victim),
                    };
                    let cfg = StreamConfig {
                        pin: false,
                        ..StreamConfig::default()
                    };
                    let scheds: [&dyn Scheduler; 2] = [a.as_ref(), b.as_ref()];
                    run_stream_staged(&scheds, &work, short_feed(), &mut |_| {}, &cfg).map(|_| ())
                });
                let e = r.expect_err(&what);
                assert_eq!(
                    e.thread,
                    format!("stage{stage}-worker-{victim}"),
                    "{what}: {e}"
                );
                assert_eq!(
                    e.message,
                    format!("injected panic in the setup of stage {stage}, worker {victim}"),
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn a_worker_whose_setup_panics_fails_the_preloaded_run() {
    // The preloaded run (the bench harness) passes the panic on to its caller instead of hanging at the start, with
    // and without the cache clobber thread.
    for policy in ALL {
        for workers in [1, 2, 3] {
            for clobber_bytes in [0, 1 << 16] {
                let what = format!("{policy}, {workers} workers, clobber {clobber_bytes}");
                let message = within_deadline(&what, move || {
                    let sched = build(policy, workers, &opts()).unwrap();
                    let work = PanicInLocal {
                        victim: (0, workers - 1),
                    };
                    let descs: Vec<Desc> = (0..1000u32)
                        .map(|i| Desc {
                            id: i,
                            ..desc(u64::from(i))
                        })
                        .collect();
                    let cfg = RunConfig {
                        pin: false,
                        clobber_bytes,
                        ..RunConfig::default()
                    };
                    let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        run(sched.as_ref(), &work, &descs, &cfg).map(|_| ())
                    }));
                    r.map_err(|p| {
                        p.downcast_ref::<String>()
                            .cloned()
                            .unwrap_or_else(|| "(another payload)".into())
                    })
                });
                let Err(message) = message else {
                    panic!("{what}: the run did not fail");
                };
                assert_eq!(
                    message,
                    format!(
                        "injected panic in the setup of stage 0, worker {}",
                        workers - 1
                    ),
                    "{what}"
                );
            }
        }
    }
}
