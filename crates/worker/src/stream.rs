//! The streaming run: a reader thread that produces descriptors as it reads (a [`Feed`]), the same raw-mode dispatch
//! step and the same worker loop as the preloaded run, and a collector on the calling thread that drains output while
//! the run goes on.
//!
//! Memory is bounded by the feed, not by the input: a feed that copies packets into a bounded arena
//! (`flowbundle_ingest::PacketArena`) waits for a free slot before producing the next descriptor, so a slow worker
//! slows the reader and nothing is dropped. The scheduler's own queues are bounded too (a refusal makes the reader
//! back off exactly as in the preloaded raw mode).
//!
//! The feed gets a [`Crew`] with each call: what it needs to hand every worker a job at once (a sweep of the
//! workers' shared state, the end of the input), see [`crate::crew`]. Workers do not time their packets here
//! ([`StreamConfig::timing`]): nothing reads it, and two clock reads per packet were a tenth of a worker's time.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering::*;
use std::thread::Thread;
use std::time::Duration;

use flowbundle_scheduler::{Desc, Scheduler};
use flowbundle_types::Workload;

use crate::abort::{Abort, Aborted, OnUnwind, Start, reporting};
use crate::crew::{Crew, Jobs, OwnShare};
use crate::runtime::{
    DispatchReport, RunReport, Shared, WorkerReport, dispatch_raw, handle_packet, pin_to,
    plan_pinning, tighten_timer_slack, worker_loop,
};
use std::cell::RefCell;

/// Where a streaming run's descriptors come from: called on the reader thread until it answers `None` (end of input,
/// or the caller asked to stop). It may block (waiting for a free packet buffer is the runtime's backpressure), and
/// may hand the workers jobs through the [`Crew`] (whose state is `L`, the workload's
/// [`Local`](Workload::Local)).
pub trait Feed<L>: Send {
    fn next_desc(&mut self, crew: &Crew<'_, L>) -> Option<Desc>;
}

impl<L, F: FnMut(&Crew<'_, L>) -> Option<Desc> + Send> Feed<L> for F {
    fn next_desc(&mut self, crew: &Crew<'_, L>) -> Option<Desc> {
        self(crew)
    }
}

/// Parameters of a streaming run.
#[derive(Clone)]
pub struct StreamConfig<'a> {
    /// Pin the reader and each worker to its own core when there are enough cores.
    pub pin: bool,
    /// How often the collector runs on the calling thread while the run goes on.
    pub collect_every: Duration,
    /// Workers time each packet (the reports' `busy_ns` and `idle_ns`); off by default (two clock reads a packet).
    pub timing: bool,
    /// Called once, on the thread that died, when a thread of the run panics and the run is abandoned (see
    /// [`crate::abort`]): it must end every wait of the feed that only the workers could end (close the packet
    /// arena the feed waits on), and make the feed answer `None` soon. The runtime's own waits end by themselves.
    pub on_abort: Option<&'a (dyn Fn() + Sync)>,
    /// The reader is also worker 0: one thread fewer than the policy's workers plus a reader. It dispatches as
    /// usual, and inspects its own share when it would otherwise wait: when the policy refuses a packet, and
    /// whenever the feed would wait for the workers (the feed must call [`Crew::help`] then, see there); after the
    /// last packet it works as any worker. On a machine with as many cores as workers, the reader then does not hold
    /// a core of its own for the time it waits, and the threads do not outnumber the cores.
    pub reader_works: bool,
}

impl std::fmt::Debug for StreamConfig<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamConfig")
            .field("pin", &self.pin)
            .field("collect_every", &self.collect_every)
            .field("timing", &self.timing)
            .field("on_abort", &self.on_abort.is_some())
            .field("reader_works", &self.reader_works)
            .finish()
    }
}

impl Default for StreamConfig<'_> {
    fn default() -> Self {
        StreamConfig {
            pin: true,
            collect_every: Duration::from_millis(2),
            timing: false,
            on_abort: None,
            reader_works: false,
        }
    }
}

/// Runs the descriptors `feed` produces through `sched` with `workload` on `sched.workers()` worker threads, the feed
/// on a reader thread. The calling thread runs `collect` every [`StreamConfig::collect_every`] while the run goes on,
/// and once more after every worker has left (its argument says which call is the last). Returns the run's report
/// (without per-packet records) and the feed; or, when a thread of the run panicked (a worker, the reader, or
/// `collect` on the calling thread), which one and why, once every other thread has left (see [`crate::abort`]: the
/// run is abandoned within milliseconds, never left hanging).
pub fn run_stream<W, F>(
    sched: &dyn Scheduler,
    workload: &W,
    feed: F,
    collect: &mut dyn FnMut(bool),
    cfg: &StreamConfig<'_>,
) -> Result<(RunReport<W::Local>, F), Aborted>
where
    W: Workload + ?Sized,
    F: Feed<W::Local>,
{
    let workers = sched.workers().max(1);
    let mut shared = Shared::new(workers, 0);
    shared.timed = cfg.timing;
    let jobs = Jobs::new(workers);
    // Worker threads: all the policy's workers, or all but worker 0 when the reader is it.
    let first = usize::from(cfg.reader_works);
    let pinning = plan_pinning(cfg.pin, workers - first);
    let barrier = Start::new(workers - first + 1);
    let abort = Abort::new(cfg.on_abort);
    let names: Vec<String> = (0..workers).map(|w| format!("worker-{w}")).collect();
    let mut panics = Vec::new();
    let (dispatch, results) = std::thread::scope(|scope| {
        let handles: Vec<_> = (first..workers)
            .map(|w| {
                let (shared, barrier, core, jobs, abort, name) = (
                    &shared,
                    &barrier,
                    pinning.core_of(w + 1 - first),
                    &jobs,
                    &abort,
                    &names[w],
                );
                std::thread::Builder::new()
                    .name(name.clone())
                    .spawn_scoped(scope, move || {
                        crate::abort::reported_by_run();
                        let _on_unwind = OnUnwind {
                            abort,
                            thread: name,
                        };
                        worker_loop(w, sched, workload, shared, barrier, core, Some(jobs), abort)
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        // By worker number; a reader that is worker 0 never parks as one, the calling thread stands in for it.
        let threads: Vec<Thread> = (first > 0)
            .then(std::thread::current)
            .into_iter()
            .chain(handles.iter().map(|h| h.thread().clone()))
            .collect();
        let (shared_ref, barrier_ref, core, jobs, abort_ref) =
            (&shared, &barrier, pinning.core_of(0), &jobs, &abort);
        let reader = std::thread::Builder::new()
            .name("reader".into())
            .spawn_scoped(scope, move || {
                crate::abort::reported_by_run();
                let _on_unwind = OnUnwind {
                    abort: abort_ref,
                    thread: "reader",
                };
                let own = (first > 0).then(|| ReaderShare {
                    sched,
                    workload,
                    shared: shared_ref,
                    jobs,
                    state: RefCell::new((workload.local(0), WorkerReport::default(), 0)),
                });
                let crew = Crew::new(
                    jobs,
                    &shared_ref.sleepers,
                    &threads,
                    own.as_ref().map(|o| o as &dyn OwnShare),
                );
                let r = reader_loop(
                    sched,
                    feed,
                    shared_ref,
                    barrier_ref,
                    &threads,
                    core,
                    &crew,
                    abort_ref,
                    own.as_ref(),
                );
                (
                    r,
                    own.map(|o| {
                        let (local, report, _) = o.state.into_inner();
                        (report, local)
                    }),
                )
            })
            .expect("spawning the reader thread");
        let mut collecting = true;
        while !(reader.is_finished() && handles.iter().all(|h| h.is_finished())) {
            if collecting
                && let Err(p) = catch_unwind(AssertUnwindSafe(|| reporting(|| collect(false))))
            {
                // The collector died: the run is abandoned as for any other thread, and nothing more is collected.
                abort.raise("collector");
                panics.push(("collector".to_string(), p));
                collecting = false;
            }
            std::thread::park_timeout(cfg.collect_every);
        }
        let (dispatch, own) = match reader.join() {
            Ok((d, own)) => (Ok(d), own),
            Err(p) => {
                panics.push(("reader".into(), p));
                (Err(()), None)
            }
        };
        let results: Vec<_> = own
            .into_iter()
            .chain(
                handles
                    .into_iter()
                    .zip(&names[first..])
                    .filter_map(|(h, name)| {
                        h.join().map_err(|p| panics.push((name.clone(), p))).ok()
                    }),
            )
            .collect();
        shared.workers_done.store(true, Relaxed);
        (dispatch, results)
    });
    let dispatch = match dispatch {
        Ok(d) if !abort.is_raised() && panics.is_empty() => d,
        _ => return Err(abort.report(panics)),
    };
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| reporting(|| collect(true)))) {
        abort.raise("collector");
        return Err(abort.report(vec![("collector".into(), p)]));
    }
    let (start_ns, disp, feed) = dispatch;
    let (mut reports, locals, processed, last) =
        crate::runtime::gather_workers(results, &pinning, start_ns, disp.end_ns);
    if first > 0 {
        // Worker 0 ran on the reader's core, worker w on the w-th worker thread's.
        for (w, r) in reports.iter_mut().enumerate() {
            r.core = pinning.core_of(w);
        }
    }
    let report = RunReport {
        start_ns,
        elapsed_ns: last.saturating_sub(start_ns),
        lost: disp.dispatched.saturating_sub(processed),
        dispatcher: disp,
        workers: reports,
        sched: sched.stats(),
        records: None,
        locals,
        pinning,
        clobber_passes: 0,
    };
    Ok((report, feed))
}

// Never inlined: profiles (scripts/measure-threads) find the reader thread by this function's name.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn reader_loop<W: Workload + ?Sized, F: Feed<W::Local>>(
    sched: &dyn Scheduler,
    mut feed: F,
    shared: &Shared,
    barrier: &Start,
    threads: &[Thread],
    core: Option<usize>,
    crew: &Crew<'_, W::Local>,
    abort: &Abort<'_>,
    own: Option<&ReaderShare<'_, W>>,
) -> (u64, DispatchReport, F) {
    pin_to(core);
    tighten_timer_slack();
    let mut report = DispatchReport::default();
    if !barrier.wait(abort) {
        // A thread died before the start: the run is abandoned before it began.
        return (0, report, feed);
    }
    let start = shared.now();
    if let Some(o) = own {
        let mut st = o.state.borrow_mut();
        o.workload.on_start(&mut st.0);
    }
    let help = || crew.help();
    let help: Option<&dyn Fn() -> bool> = own.map(|_| &help as &dyn Fn() -> bool);
    while !abort.is_raised()
        && let Some(d) = feed.next_desc(crew)
    {
        if !dispatch_raw(sched, d, shared, threads, &mut report, abort, help) {
            break;
        }
    }
    report.end_ns = shared.now();
    shared.finished.store(true, Release);
    shared.sleepers.wake_all(threads);
    if let Some(o) = own {
        // What is left of worker 0's share: once dispatching has ended, a worker with nothing gets nothing more
        // (see `crate::run`).
        while !abort.is_raised() && o.help() {}
        let mut st = o.state.borrow_mut();
        o.workload.on_stop(&mut st.0);
    }
    (start, report, feed)
}

/// Worker 0's state and work on a reader that is worker 0 ([`StreamConfig::reader_works`]).
struct ReaderShare<'a, W: Workload + ?Sized> {
    sched: &'a dyn Scheduler,
    workload: &'a W,
    shared: &'a Shared,
    jobs: &'a Jobs<W::Local>,
    /// Its local state, report, and the generation of the last job it ran. Only the reader thread touches it, and
    /// never re-entrantly: a packet's processing neither helps nor broadcasts.
    state: RefCell<(W::Local, WorkerReport, u64)>,
}

impl<W: Workload + ?Sized> OwnShare for ReaderShare<'_, W> {
    fn help(&self) -> bool {
        let Some(d) = self.sched.next(0) else {
            return false;
        };
        let mut st = self.state.borrow_mut();
        let (local, report, _) = &mut *st;
        handle_packet(
            0,
            d,
            self.sched,
            self.workload,
            self.shared,
            local,
            report,
            0,
        );
        true
    }

    fn run_job(&self) {
        let mut st = self.state.borrow_mut();
        let (local, _, seen) = &mut *st;
        self.jobs.run_pending(0, seen, local);
    }
}

/// Runs `work` on `workers` threads at once (named `worker-0`, ...; `work` gets the worker number), while the calling
/// thread runs `collect` every [`StreamConfig::collect_every`], and once more after every worker has left (its
/// argument says which call is the last), as in [`run_stream`]. Returns each worker's result by worker number; or,
/// when a thread panicked (a worker, or `collect`), which one and why, once every other thread has left: the run's
/// [`StreamConfig::on_abort`] hook must then make the other workers' `work` return soon (they share nothing with
/// the runtime that it could end for them).
///
/// What it is for: a policy that places every packet by a fixed function of its flow (`dh`) needs no dispatcher when
/// each worker can read the input itself. Each worker then reads every packet, keeps its own share, and nothing
/// crosses between cores but the output: no reader thread (on two cores, three busy threads time-share them), no
/// hand-over of a packet's bytes and decoded view to another core's cache, no wake-ups. Reading and decoding a
/// packet to its flow key is a few percent of inspecting it, which each worker pays for the packets it skips.
pub fn run_each<R: Send>(
    workers: usize,
    work: &(dyn Fn(usize) -> R + Sync),
    collect: &mut dyn FnMut(bool),
    cfg: &StreamConfig<'_>,
) -> Result<Vec<R>, Aborted> {
    let workers = workers.max(1);
    // Pinned as the workers of `run_stream` are, the collector standing for the reader: with as many workers as
    // cores the threads float (the collector wakes on any core).
    let pinning = plan_pinning(cfg.pin, workers);
    let abort = Abort::new(cfg.on_abort);
    let names: Vec<String> = (0..workers).map(|w| format!("worker-{w}")).collect();
    let mut panics = Vec::new();
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (abort, name, core) = (&abort, &names[w], pinning.core_of(w + 1));
                std::thread::Builder::new()
                    .name(name.clone())
                    .spawn_scoped(scope, move || {
                        crate::abort::reported_by_run();
                        let _on_unwind = OnUnwind {
                            abort,
                            thread: name,
                        };
                        pin_to(core);
                        work(w)
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        let mut collecting = true;
        while !handles.iter().all(|h| h.is_finished()) {
            if collecting
                && let Err(p) = catch_unwind(AssertUnwindSafe(|| reporting(|| collect(false))))
            {
                abort.raise("collector");
                panics.push(("collector".to_string(), p));
                collecting = false;
            }
            std::thread::park_timeout(cfg.collect_every);
        }
        handles
            .into_iter()
            .zip(&names)
            .filter_map(|(h, name)| h.join().map_err(|p| panics.push((name.clone(), p))).ok())
            .collect::<Vec<R>>()
    });
    if abort.is_raised() || !panics.is_empty() {
        return Err(abort.report(panics));
    }
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| reporting(|| collect(true)))) {
        abort.raise("collector");
        return Err(abort.report(vec![("collector".into(), p)]));
    }
    Ok(results)
}
