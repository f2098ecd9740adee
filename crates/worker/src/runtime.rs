//! The run: barrier, dispatcher loop (raw or scaled), worker loops, records and report. See the crate documentation.

use crate::abort::{Abort, OnUnwind, Start};
use crate::crew::{Jobs, LeaveGuard};
use crate::park::Sleepers;
use crossbeam::utils::CachePadded;
use flowbundle_scheduler::{Desc, SchedStats, Scheduler, WorkerId};
use flowbundle_types::{BundleToken, Outcome, Workload};
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::*};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The paper's limit on outstanding packets in scaled mode ("latency starts to increase significantly when it is
/// exceeded").
pub const MAX_OUTSTANDING: usize = 4096;

/// Longest scaled run accepted (one day): a later release time is an error, not a dispatcher asleep for ever.
pub const MAX_RUN_NS: u64 = 86_400 * 1_000_000_000;

/// Scaled mode: default period of the dispatcher's release tick (see the crate documentation, "Scaled mode
/// releases in batches"). 50 µs: long enough that the sleep between ticks (about 5–10 µs of kernel work and a
/// context switch) is a small share of a core, short enough that the batching delay (25 µs on average) stays below
/// the queueing delays being measured near the maximum scaled rate.
pub const RELEASE_TICK_NS: u64 = 50_000;

/// How the dispatcher paces packets.
#[derive(Clone, Copy, Debug)]
pub enum Mode<'a> {
    /// As fast as possible, pausing only when the policy refuses a packet (a queue is full).
    Raw,
    /// Packet `i` arrives `release_ns[i]` nanoseconds after the start (timestamps rescaled by the caller to the
    /// target rate, non-decreasing) and is enqueued at the first release tick at or after that time
    /// ([`RunConfig::release_tick_ns`]); its recorded arrival is the scheduled time. An arrival finding
    /// `max_outstanding` packets in the system, or refused by the policy, is dropped and counted.
    Scaled { release_ns: &'a [u64] },
}

/// Run parameters.
#[derive(Clone, Debug)]
pub struct RunConfig<'a> {
    pub mode: Mode<'a>,
    /// Scaled mode: most packets in the system (dispatched, not finished); default [`MAX_OUTSTANDING`].
    pub max_outstanding: usize,
    /// Pin the dispatcher and each worker to its own core when there are enough cores.
    pub pin: bool,
    /// Keep per-packet records (arrival, enqueue, start, end, worker). Costs about 40 bytes per packet, allocated
    /// before the start.
    pub records: bool,
    /// The paper's cache clobber option: bytes of a buffer that an extra thread reads one cache line at a time for
    /// the whole run (ANCS'10 used 4 MB). 0: off.
    pub clobber_bytes: usize,
    /// Scaled mode: the dispatcher wakes every `release_tick_ns` nanoseconds (default [`RELEASE_TICK_NS`]) and
    /// releases every packet whose time has come, parking in between; latency still counts from each packet's own
    /// scheduled time. 0: pace every packet individually (sleep when its time is more than 60 µs away, else yield
    /// or spin), which holds a core whenever packets are closer than that.
    pub release_tick_ns: u64,
}

impl Default for RunConfig<'_> {
    fn default() -> Self {
        RunConfig {
            mode: Mode::Raw,
            max_outstanding: MAX_OUTSTANDING,
            pin: true,
            records: true,
            clobber_bytes: 0,
            release_tick_ns: RELEASE_TICK_NS,
        }
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RunError {
    #[error("descriptor {index} has id {id}: ids must be the indexes 0..n of the preloaded trace")]
    BadId { index: usize, id: u32 },
    #[error("scaled mode needs one release time per packet ({packets} packets, {times} times)")]
    ReleaseTimes { packets: usize, times: usize },
    #[error("release times must not decrease and must end within {MAX_RUN_NS} ns (packet {index})")]
    ReleaseOrder { index: usize },
    #[error("too many packets for 32-bit ids: {0}")]
    TooMany(usize),
}

/// What happened to a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Status {
    /// Not reached (only if the run was cut short; never in a complete run).
    #[default]
    Pending,
    /// Accepted by the policy and processed.
    Processed,
    /// Scaled mode: dropped because `max_outstanding` packets were in the system.
    DroppedOutstanding,
    /// Scaled mode: dropped because the policy refused it (a queue was full).
    DroppedFull,
}

/// Per-packet records, indexed by packet id; times in ns since the run's base instant (the start is
/// [`RunReport::start_ns`]). Unprocessed packets have zero start/end and worker `u16::MAX`.
#[derive(Clone, Debug, Default)]
pub struct Records {
    /// When the packet arrived: raw mode, when the dispatcher took it up (before the first try); scaled mode, its
    /// scheduled time (the run's start plus its release time), whenever the dispatcher actually got to it, so the
    /// release tick's batching and any lateness of the dispatcher count as delay.
    pub arrival_ns: Vec<u64>,
    /// When the policy accepted it.
    pub enqueue_ns: Vec<u64>,
    pub start_ns: Vec<u64>,
    pub end_ns: Vec<u64>,
    pub worker: Vec<u16>,
    pub status: Vec<Status>,
}

/// The dispatcher's side of a run.
#[derive(Clone, Debug, Default)]
pub struct DispatchReport {
    /// Packets the policy accepted.
    pub dispatched: u64,
    pub dropped_outstanding: u64,
    pub dropped_full: u64,
    /// Raw mode: refusals met (each followed by a back-off).
    pub full_waits: u64,
    /// Times the dispatcher slept (back-off or waiting for a packet's time).
    pub sleeps: u64,
    /// Scaled mode: packets handled later than their time by more than one release tick plus 10 µs (the
    /// dispatcher fell behind beyond the batching it chose; with a tick of 0, by more than 10 µs).
    pub late: u64,
    /// Scaled mode: batches released (wake-ups that found at least one packet due).
    pub batches: u64,
    /// Scaled mode: the dispatcher runs one real-time priority level above the workers (the process runs under
    /// `SCHED_FIFO`/`SCHED_RR`, see the crate documentation); false under the normal scheduler.
    pub priority_raised: bool,
    /// When the last packet was handled, ns since the base instant.
    pub end_ns: u64,
}

/// One worker's side of a run.
#[derive(Clone, Debug, Default)]
pub struct WorkerReport {
    pub packets: u64,
    /// Packets this worker took and prepared but whose claim the policy refused (`ph` handoffs with late claim);
    /// their preparation time is in `busy_ns`.
    pub handoffs: u64,
    /// Time inside the workload (sum over packets of end − start).
    pub busy_ns: u64,
    /// Time with nothing to do (spinning, yielding or parked), from the start to leaving.
    pub idle_ns: u64,
    /// Times the worker parked.
    pub parks: u64,
    /// When it finished its last packet, ns since the base instant.
    pub last_end_ns: u64,
    /// The core it was pinned to.
    pub core: Option<usize>,
}

/// Whether threads were pinned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pinning {
    /// Dispatcher on the first core, worker `w` on the `w + 1`th.
    Pinned {
        dispatcher: usize,
        workers: Vec<usize>,
    },
    /// Not pinned, and why.
    Floating(String),
}

impl Pinning {
    /// The core of thread `i` (0: the dispatcher, `w + 1`: worker `w`), when pinned.
    pub(crate) fn core_of(&self, i: usize) -> Option<usize> {
        match self {
            Pinning::Pinned {
                dispatcher,
                workers,
            } => {
                if i == 0 {
                    Some(*dispatcher)
                } else {
                    workers.get(i - 1).copied()
                }
            }
            Pinning::Floating(_) => None,
        }
    }
}

/// Everything a run measured.
#[derive(Debug)]
pub struct RunReport<L> {
    /// The start (after the barrier), ns since the base instant.
    pub start_ns: u64,
    /// From the start to the last worker's last packet (the paper's "largest cycle count recorded by a thread").
    pub elapsed_ns: u64,
    pub dispatcher: DispatchReport,
    pub workers: Vec<WorkerReport>,
    /// The policy's counters.
    pub sched: SchedStats,
    /// Packets dispatched but not processed when the workers left: always 0 unless a policy breaks its contract.
    pub lost: u64,
    pub records: Option<Records>,
    /// Each worker's workload state, by worker id.
    pub locals: Vec<L>,
    pub pinning: Pinning,
    /// Cache clobber passes over its buffer (0 when off; at least 1 when on, however short the run).
    pub clobber_passes: u64,
}

impl<L> RunReport<L> {
    /// Packets processed.
    pub fn processed(&self) -> u64 {
        self.workers.iter().map(|w| w.packets).sum()
    }

    /// Packets processed per second over [`elapsed_ns`](Self::elapsed_ns).
    pub fn pps(&self) -> f64 {
        self.processed() as f64 * 1e9 / self.elapsed_ns.max(1) as f64
    }
}

/// Shared state of a run.
pub(crate) struct Shared {
    base: Instant,
    pub(crate) finished: AtomicBool,
    /// Raised when every worker has left: stops the clobber thread.
    pub(crate) workers_done: AtomicBool,
    completed: Box<[CachePadded<AtomicU64>]>,
    pub(crate) sleepers: Sleepers,
    start: Vec<AtomicU64>,
    end: Vec<AtomicU64>,
    worker: Vec<AtomicU16>,
    /// Workers time each packet (busy and idle time in their reports): two clock reads per packet, about 10% of a
    /// worker's samples in the streaming runtime, which reports none of it; the preloaded run measures with them.
    pub(crate) timed: bool,
}

impl Shared {
    /// Shared state for `workers` workers, with per-packet timing records for `records` packets (0: none).
    pub(crate) fn new(workers: usize, records: usize) -> Self {
        Shared {
            base: Instant::now(),
            finished: AtomicBool::new(false),
            workers_done: AtomicBool::new(false),
            completed: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            sleepers: Sleepers::new(workers),
            start: (0..records).map(|_| AtomicU64::new(0)).collect(),
            end: (0..records).map(|_| AtomicU64::new(0)).collect(),
            worker: (0..records).map(|_| AtomicU16::new(u16::MAX)).collect(),
            timed: true,
        }
    }

    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// Worker `w` finished a packet (what the dispatcher's back-off waits for).
    #[inline]
    pub(crate) fn completed_one(&self, w: usize) {
        if let Some(c) = self.completed.get(w) {
            c.fetch_add(1, Release);
        }
    }

    fn outstanding(&self, dispatched: u64) -> u64 {
        let done: u64 = self.completed.iter().map(|c| c.load(Acquire)).sum();
        dispatched.saturating_sub(done)
    }
}

/// Run `descs` (ids `0..n`) through `sched` with `workload` on `sched.workers()` worker threads plus a dispatcher.
///
/// Why workers can leave when the end flag is up and the policy gives them nothing: after dispatching ends, every
/// queue a packet can reach a worker through is either one the dispatcher fills (no longer filled) or a bundle or
/// connection queue owned by the worker that will take it (`lfb` FBQ heads, `ph` CQs); a worker that holds nothing
/// owns none, so it can get nothing more. The report's `lost` checks this.
pub fn run<W: Workload + ?Sized>(
    sched: &dyn Scheduler,
    workload: &W,
    descs: &[Desc],
    cfg: &RunConfig<'_>,
) -> Result<RunReport<W::Local>, RunError> {
    validate(descs, cfg)?;
    let n = descs.len();
    let workers = sched.workers().max(1);
    let rec = |len: usize| if cfg.records { len } else { 0 };
    let shared = Shared::new(workers, rec(n));
    let pinning = plan_pinning(cfg.pin, workers);
    let core_of = |i: usize| pinning.core_of(i);
    let clobber = cfg.clobber_bytes > 0;
    let barrier = Start::new(workers + 1 + usize::from(clobber));
    // A thread that panics abandons the run (see `crate::abort`); the panic then goes on in the caller.
    let abort = Abort::new(None);

    let (dispatch, results, clobber_passes) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (shared, barrier, core, abort) = (&shared, &barrier, core_of(w + 1), &abort);
                std::thread::Builder::new()
                    .name(format!("worker-{w}"))
                    .spawn_scoped(scope, move || {
                        let name = format!("worker-{w}");
                        let _on_unwind = OnUnwind {
                            abort,
                            thread: &name,
                        };
                        worker_loop(w, sched, workload, shared, barrier, core, None, abort)
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        let threads: Vec<Thread> = handles.iter().map(|h| h.thread().clone()).collect();
        let clob = clobber.then(|| {
            let (shared, barrier, bytes, abort) = (&shared, &barrier, cfg.clobber_bytes, &abort);
            scope.spawn(move || clobber_loop(bytes, shared, barrier, abort))
        });
        let (shared_ref, barrier_ref, core, abort) = (&shared, &barrier, core_of(0), &abort);
        let disp = std::thread::Builder::new()
            .name("dispatcher".into())
            .spawn_scoped(scope, move || {
                let _on_unwind = OnUnwind {
                    abort,
                    thread: "dispatcher",
                };
                dispatcher_loop(
                    sched,
                    descs,
                    cfg,
                    shared_ref,
                    barrier_ref,
                    &threads,
                    core,
                    abort,
                )
            })
            .expect("spawning the dispatcher thread");
        let dispatch = disp.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        shared.workers_done.store(true, Relaxed);
        let passes = clob.map_or(0, |h| h.join().unwrap_or(0));
        (dispatch, results, passes)
    });

    let (start_ns, disp, mut records) = dispatch;
    let (reports, locals, processed, last) =
        gather_workers(results, &pinning, start_ns, disp.end_ns);
    if let Some(r) = records.as_mut() {
        r.start_ns = shared
            .start
            .into_iter()
            .map(AtomicU64::into_inner)
            .collect();
        r.end_ns = shared.end.into_iter().map(AtomicU64::into_inner).collect();
        r.worker = shared
            .worker
            .into_iter()
            .map(AtomicU16::into_inner)
            .collect();
    }
    Ok(RunReport {
        start_ns,
        elapsed_ns: last.saturating_sub(start_ns),
        lost: disp.dispatched.saturating_sub(processed),
        dispatcher: disp,
        workers: reports,
        sched: sched.stats(),
        records,
        locals,
        pinning,
        clobber_passes,
    })
}

fn validate(descs: &[Desc], cfg: &RunConfig<'_>) -> Result<(), RunError> {
    if descs.len() > u32::MAX as usize {
        return Err(RunError::TooMany(descs.len()));
    }
    if let Some((index, d)) = descs.iter().enumerate().find(|(i, d)| d.id as usize != *i) {
        return Err(RunError::BadId { index, id: d.id });
    }
    if let Mode::Scaled { release_ns } = cfg.mode
        && release_ns.len() != descs.len()
    {
        return Err(RunError::ReleaseTimes {
            packets: descs.len(),
            times: release_ns.len(),
        });
    }
    if let Mode::Scaled { release_ns } = cfg.mode {
        let bad = release_ns
            .windows(2)
            .position(|w| w[1] < w[0])
            .map(|i| i + 1);
        let bad = bad.or_else(|| release_ns.iter().position(|&t| t > MAX_RUN_NS));
        if let Some(index) = bad {
            return Err(RunError::ReleaseOrder { index });
        }
    }
    Ok(())
}

/// The workers' reports (each with the core it ran on) and locals, in worker order, with the packets they processed
/// and the time the last of them (or the dispatcher, ending at `dispatch_end_ns`) finished: what every run reports.
pub(crate) fn gather_workers<L>(
    results: Vec<(WorkerReport, L)>,
    pinning: &Pinning,
    start_ns: u64,
    dispatch_end_ns: u64,
) -> (Vec<WorkerReport>, Vec<L>, u64, u64) {
    let mut locals = Vec::with_capacity(results.len());
    let mut reports = Vec::with_capacity(results.len());
    for (w, (report, local)) in results.into_iter().enumerate() {
        reports.push(WorkerReport {
            core: pinning.core_of(w + 1),
            ..report
        });
        locals.push(local);
    }
    let processed = reports.iter().map(|r| r.packets).sum();
    let last = reports
        .iter()
        .map(|r| r.last_end_ns)
        .max()
        .unwrap_or(start_ns)
        .max(dispatch_end_ns);
    (reports, locals, processed, last)
}

pub(crate) fn plan_pinning(pin: bool, workers: usize) -> Pinning {
    if !pin {
        return Pinning::Floating("pinning not requested".into());
    }
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    if cores.len() < workers + 1 {
        let why = format!(
            "{} threads (dispatcher + {workers} workers) on {} cores: threads share cores and float",
            workers + 1,
            cores.len()
        );
        // More workers than cores is worth a warning (they will time-share); the dispatcher sharing a core with the
        // workers is the normal case of `--threads` = cores, not worth one.
        if workers > cores.len() {
            tracing::warn!("threads could not be pinned: {why}");
        } else {
            tracing::info!("{why}");
        }
        return Pinning::Floating(why);
    }
    Pinning::Pinned {
        dispatcher: cores[0].id,
        workers: cores[1..=workers].iter().map(|c| c.id).collect(),
    }
}

pub(crate) fn pin_to(core: Option<usize>) {
    if let Some(id) = core {
        core_affinity::set_for_current(core_affinity::CoreId { id });
    }
}

/// Timer slack of 1 µs for the calling thread (Linux), so the dispatcher's short sleeps end on time.
pub(crate) fn tighten_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only affects the calling thread's timers.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong, 0, 0, 0);
    }
}

type DispatchResult = (u64, DispatchReport, Option<Records>);

#[allow(clippy::too_many_arguments)]
fn dispatcher_loop(
    sched: &dyn Scheduler,
    descs: &[Desc],
    cfg: &RunConfig<'_>,
    shared: &Shared,
    barrier: &Start,
    threads: &[Thread],
    core: Option<usize>,
    abort: &Abort<'_>,
) -> DispatchResult {
    pin_to(core);
    tighten_timer_slack();
    let n = descs.len();
    let rec = cfg.records;
    let mut records = rec.then(|| Records {
        arrival_ns: vec![0; n],
        enqueue_ns: vec![0; n],
        status: vec![Status::Pending; n],
        ..Records::default()
    });
    let mut report = DispatchReport::default();
    if !barrier.wait(abort) {
        // A thread died before the start: the run is abandoned before it began.
        return (0, report, records);
    }
    let start = shared.now();
    match cfg.mode {
        Mode::Raw => {
            for (i, d) in descs.iter().enumerate() {
                let arrival = if rec { shared.now() } else { 0 };
                if !dispatch_raw(sched, *d, shared, threads, &mut report, abort, None) {
                    break;
                }
                if let Some(r) = records.as_mut() {
                    r.arrival_ns[i] = arrival;
                    r.enqueue_ns[i] = shared.now();
                    r.status[i] = Status::Processed;
                }
            }
        }
        Mode::Scaled { release_ns } => {
            report.priority_raised = raise_priority();
            let mut pace = Pacer {
                shared,
                sched,
                threads,
                max: cfg.max_outstanding as u64,
                done_seen: 0,
            };
            let slack = cfg.release_tick_ns.saturating_add(10_000);
            let mut i = 0;
            while i < n && !abort.is_raised() {
                let due = start.saturating_add(release_ns[i]);
                let now = if cfg.release_tick_ns == 0 {
                    wait_until(shared, due, &mut report)
                } else {
                    let now = shared.now();
                    if now < due {
                        // Park until the tick after this one, or until the next packet's time if that is later.
                        let wake = due.max(now + cfg.release_tick_ns);
                        std::thread::sleep(Duration::from_nanos(wake - now));
                        report.sleeps += 1;
                        continue;
                    }
                    now
                };
                // Release every packet whose time has come by `now` (one packet with a tick of 0).
                report.batches += 1;
                let last = if cfg.release_tick_ns == 0 {
                    i + 1
                } else {
                    let end_due = now.saturating_sub(start);
                    i + release_ns[i..].partition_point(|&t| t <= end_due)
                };
                for (j, d) in descs.iter().enumerate().take(last).skip(i) {
                    let due = start.saturating_add(release_ns[j]);
                    if now.saturating_sub(due) > slack {
                        report.late += 1;
                    }
                    let status = pace.offer(*d, &mut report);
                    if let Some(r) = records.as_mut() {
                        r.arrival_ns[j] = due;
                        r.enqueue_ns[j] = if status == Status::Processed {
                            shared.now()
                        } else {
                            0
                        };
                        r.status[j] = status;
                    }
                }
                i = last.max(i + 1);
            }
        }
    }
    report.end_ns = shared.now();
    shared.finished.store(true, Release);
    shared.sleepers.wake_all(threads);
    (start, report, records)
}

/// Raw mode's dispatch of one packet: offer it until the policy accepts it (backing off while its queues are full),
/// then wake the worker that can take it. Returns `false`, the packet not dispatched, when the run is abandoned
/// meanwhile (a worker that died never drains its queue). A dispatcher that is also a worker (`help`: processes one
/// packet of its own share, `false` when it has none) works instead of backing off while it can: the full queue may
/// be its own.
pub(crate) fn dispatch_raw(
    sched: &dyn Scheduler,
    d: Desc,
    shared: &Shared,
    threads: &[Thread],
    report: &mut DispatchReport,
    abort: &Abort<'_>,
    help: Option<&dyn Fn() -> bool>,
) -> bool {
    let placed = loop {
        match sched.dispatch(d) {
            Ok(p) => break p,
            Err(_) => {
                if abort.is_raised() {
                    return false;
                }
                if help.is_some_and(|h| h()) {
                    continue;
                }
                report.full_waits += 1;
                // Make sure whoever can drain the queues is awake, then get off the core until half of what is
                // outstanding has been processed: retrying as soon as one slot frees would wake the dispatcher once
                // per packet, on cores the workers need.
                shared.sleepers.wake_all_if_any(threads);
                let target = shared.outstanding(report.dispatched) / 2;
                let mut backoff = Backoff::default();
                while shared.outstanding(report.dispatched) > target
                    && !backoff.exhausted()
                    && !abort.is_raised()
                {
                    report.sleeps += u64::from(backoff.wait());
                }
            }
        }
    };
    shared.sleepers.wake(placed, threads);
    report.dispatched += 1;
    true
}

/// Scaled mode's admission of one arrival: drop it when `max` packets are in the system or the policy refuses it,
/// else dispatch it and wake the worker that can take it.
struct Pacer<'a> {
    shared: &'a Shared,
    sched: &'a dyn Scheduler,
    threads: &'a [Thread],
    max: u64,
    /// Packets completed when last counted: completions only grow, so `dispatched - done_seen` over-estimates what
    /// is outstanding, and the workers' counters (other cores' cache lines) are read again only when the estimate
    /// reaches the limit, not once per packet.
    done_seen: u64,
}

impl Pacer<'_> {
    fn offer(&mut self, d: Desc, report: &mut DispatchReport) -> Status {
        if report.dispatched.saturating_sub(self.done_seen) >= self.max {
            self.done_seen = self.shared.completed.iter().map(|c| c.load(Acquire)).sum();
        }
        if report.dispatched.saturating_sub(self.done_seen) >= self.max {
            report.dropped_outstanding += 1;
            return Status::DroppedOutstanding;
        }
        match self.sched.dispatch(d) {
            Ok(p) => {
                self.shared.sleepers.wake(p, self.threads);
                report.dispatched += 1;
                Status::Processed
            }
            Err(_) => {
                report.dropped_full += 1;
                Status::DroppedFull
            }
        }
    }
}

/// Scaled mode: when the process runs under a real-time policy (`chrt -r`/`-f`, as the bench runs are made), put the
/// calling thread (the dispatcher) one priority level above the workers, which inherit the process's level. Under
/// `SCHED_RR` a thread woken at the workers' level waits until a running worker yields or exhausts its 100 ms slice,
/// so a dispatcher at their level would release its batch up to that late; the dispatcher stands for the wire, which
/// does not wait for the CPU. Returns whether the priority was raised (never under the normal scheduler).
fn raise_priority() -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: the sched_* calls with pid 0 read or change only the calling thread's scheduling parameters; `p` is a
    // valid, initialised `sched_param` for the duration of each call.
    unsafe {
        let policy = libc::sched_getscheduler(0);
        if policy != libc::SCHED_RR && policy != libc::SCHED_FIFO {
            return false;
        }
        let mut p = libc::sched_param { sched_priority: 0 };
        if libc::sched_getparam(0, &mut p) != 0
            || p.sched_priority >= libc::sched_get_priority_max(policy)
        {
            return false;
        }
        p.sched_priority += 1;
        libc::sched_setscheduler(0, policy, &p) == 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Wait for time `due` without spinning: sleep while far, yield while near. Returns the time reached.
fn wait_until(shared: &Shared, due: u64, report: &mut DispatchReport) -> u64 {
    loop {
        let now = shared.now();
        if now >= due {
            return now;
        }
        let gap = due - now;
        if gap > 60_000 {
            std::thread::sleep(Duration::from_nanos(gap - 40_000));
            report.sleeps += 1;
        } else if gap > 2_000 {
            std::thread::yield_now();
        } else {
            spin_loop();
        }
    }
}

/// Raw-mode back-off when the policy is full: a few yields, then sleeps doubling from 5 µs to 1 ms; exhausted after
/// about 5 ms in all, when the dispatcher retries whatever the queues look like.
#[derive(Default)]
struct Backoff(u32);

impl Backoff {
    fn exhausted(&self) -> bool {
        self.0 >= 3 + 12
    }

    /// Returns whether it slept.
    fn wait(&mut self) -> bool {
        self.0 += 1;
        if self.0 <= 3 {
            std::thread::yield_now();
            return false;
        }
        let us = 5u64 << (self.0 - 4).min(8);
        std::thread::sleep(Duration::from_micros(us.min(1000)));
        true
    }
}

/// Spins before yielding, and yields before parking, when a worker finds nothing.
pub(crate) const IDLE_SPINS: u32 = 64;
pub(crate) const IDLE_YIELDS: u32 = 4;

/// One idle round of worker `w` that found no packet: spin first, then yield, then announce itself asleep and park
/// (looking at its queue once more after announcing, so a packet dispatched meanwhile is not missed). Returns a
/// packet found that last time; `idle` counts the rounds since the last packet (a wake-up looks again briefly
/// before parking again), `parks` the parks.
pub(crate) fn idle_round(
    shared: &Shared,
    sched: &dyn Scheduler,
    w: usize,
    idle: &mut u32,
    parks: &mut u64,
) -> Option<Desc> {
    *idle += 1;
    if *idle <= IDLE_SPINS {
        spin_loop();
    } else if *idle <= IDLE_SPINS + IDLE_YIELDS {
        std::thread::yield_now();
    } else {
        shared.sleepers.announce(w);
        if shared.finished.load(Acquire) {
            shared.sleepers.withdraw(w);
            return None;
        }
        match sched.next(w) {
            Some(d) => {
                shared.sleepers.withdraw(w);
                return Some(d);
            }
            None => {
                shared.sleepers.park(w);
                *parks += 1;
                *idle = IDLE_SPINS;
            }
        }
    }
    None
}

// Never inlined: profiles (scripts/measure-threads) find the worker threads by this function's name.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn worker_loop<W: Workload + ?Sized>(
    w: WorkerId,
    sched: &dyn Scheduler,
    workload: &W,
    shared: &Shared,
    barrier: &Start,
    core: Option<usize>,
    jobs: Option<&Jobs<W::Local>>,
    abort: &Abort<'_>,
) -> (WorkerReport, W::Local) {
    pin_to(core);
    let mut local = workload.local(w);
    let mut report = WorkerReport::default();
    let rec = !shared.start.is_empty();
    let timed = shared.timed || rec;
    let now = || if timed { shared.now() } else { 0 };
    let mut idle = 0u32;
    let mut idle_since: Option<u64> = None;
    let mut pending: Option<Desc> = None;
    let mut seen_job = 0u64;
    if !barrier.wait(abort) {
        // A thread died before the start: this worker leaves without running.
        if let Some(j) = jobs {
            j.leave(w);
        }
        return (report, local);
    }
    let _leave = jobs.map(|j| LeaveGuard(j, w));
    workload.on_start(&mut local);
    let t0 = now();
    idle_since.get_or_insert(t0);
    loop {
        if abort.is_raised() {
            // Another thread died: the run is abandoned, with whatever is still queued.
            break;
        }
        if let Some(j) = jobs {
            j.run_pending(w, &mut seen_job, &mut local);
        }
        let finished = shared.finished.load(Acquire);
        if let Some(d) = pending.take().or_else(|| sched.next(w)) {
            let start = now();
            if let Some(t) = idle_since.take() {
                report.idle_ns += start.saturating_sub(t);
            }
            handle_packet(
                w,
                d,
                sched,
                workload,
                shared,
                &mut local,
                &mut report,
                start,
            );
            idle = 0;
            continue;
        }
        if finished {
            break;
        }
        if idle_since.is_none() {
            idle_since = Some(now());
        }
        pending = idle_round(shared, sched, w, &mut idle, &mut report.parks);
    }
    let t = now();
    if let Some(since) = idle_since {
        report.idle_ns += t.saturating_sub(since);
    }
    workload.on_stop(&mut local);
    (report, local)
}

/// Worker `w`'s handling of packet `d`, which the policy's `next` gave it at `start` (0 when untimed): prepare, claim,
/// process, done; counted in `report`, and in the per-packet records when the run keeps them.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn handle_packet<W: Workload + ?Sized>(
    w: WorkerId,
    d: Desc,
    sched: &dyn Scheduler,
    workload: &W,
    shared: &Shared,
    local: &mut W::Local,
    report: &mut WorkerReport,
    start: u64,
) {
    let rec = !shared.start.is_empty();
    let timed = shared.timed || rec;
    let now = || if timed { shared.now() } else { 0 };
    workload.prepare(local, d);
    if !sched.claim(w, &d) {
        // Handed off (`ph`, late claim): another worker owns the connection and will process the packet.
        let end = now();
        report.handoffs += 1;
        report.busy_ns += end - start;
        return;
    }
    let classified = {
        // SAFETY: between a successful `claim` (for most policies, `next` itself) and `done`, the scheduler's
        // exclusivity contract gives this worker the packet's bundle alone; the token is gone before `done`.
        let mut held = unsafe { BundleToken::assume_held(sched.bundle(&d)) };
        workload.process(local, d, &mut held) == Outcome::Classified
    };
    if classified {
        sched.classified(w, &d);
    }
    let end = now();
    sched.done(w, d);
    shared.completed_one(w);
    report.packets += 1;
    report.busy_ns += end - start;
    report.last_end_ns = end;
    if rec {
        let i = d.id as usize;
        if let (Some(s), Some(e), Some(k)) =
            (shared.start.get(i), shared.end.get(i), shared.worker.get(i))
        {
            s.store(start, Relaxed);
            e.store(end, Relaxed);
            k.store(w as u16, Relaxed);
        }
    }
}

fn clobber_loop(bytes: usize, shared: &Shared, barrier: &Start, abort: &Abort<'_>) -> u64 {
    let buf: Vec<u8> = (0..bytes).map(|i| i as u8).collect();
    if !barrier.wait(abort) {
        return 0;
    }
    let mut passes = 0;
    let mut sum = 0u64;
    // At least one pass, then until the workers are done: a thread that the scheduler starts only after a short run
    // ended still makes its pass, so the option's effect (and its count) does not depend on the machine's load. An
    // abandoned run never says its workers are done (its caller unwinds): the abort flag ends the loop then.
    loop {
        for i in (0..buf.len()).step_by(64) {
            sum = sum.wrapping_add(u64::from(std::hint::black_box(buf[i])));
        }
        passes += 1;
        if shared.workers_done.load(Relaxed) || abort.is_raised() {
            break;
        }
    }
    std::hint::black_box(sum);
    passes
}
