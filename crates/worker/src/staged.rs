//! The staged streaming run: a packet's work cut into stages ([`StagedWorkload`]), each run by a group of workers
//! of its own under its own instance of the policy, for the execution models beyond run-to-completion (a software
//! pipeline, MultiLayer Processing).
//!
//! The reader dispatches into stage 0's group, as [`run_stream`](crate::run_stream) does. A worker of group `g`
//! takes a packet from its group's policy (`next`), runs stage `g` on it holding its bundle in that group, and, when
//! the packet needs a later stage `h`, dispatches it into group `h`'s policy *before* calling `done` in its own:
//! a bundle's next packet cannot start stage `g` before this one is queued in group `h`, so each group receives a
//! bundle's packets in the first group's order, and the policy (one that keeps flow order) keeps it. A full queue in
//! group `h` makes the worker back off (yield, then sleep from 5 µs), holding its packet and bundle, exactly as the
//! reader backs off when group 0 is full: that wait is the model's contention, counted per group. Groups only hand
//! packets forward, so the waits cannot form a cycle. Several workers hand packets to one group, and a policy's
//! `dispatch` is made for one dispatcher thread: each group's hand-overs take turns under a lock of their own (see
//! `place`).
//!
//! A group with one upstream worker receives its packets in **batches** ([`HAND_OVER_BATCH`]): that worker keeps the
//! packets it finished in an outbox and hands them over together (the policy's `dispatch` for each, then one wake-up
//! for the batch) when the outbox is full, when it finds nothing more to do, and before it leaves; it calls `done`
//! in its own group at once. One worker's outbox is first in, first out, so the receiving group still sees each
//! bundle's packets in order. With several upstream workers a packet waiting in one worker's outbox could be
//! overtaken by the bundle's next packet, finished by another worker and handed over first, so into those groups
//! each packet is *placed* (the policy's `dispatch`, under the group's lock) before `done`, and only the wake-up and
//! the count wait for the batch: the worker wakes the receiving group once per [`HAND_OVER_BATCH`] packets placed,
//! and whenever it runs out of work or leaves. Per packet, a hand-over is a dispatch, a fence and, when the
//! receiving worker had gone to sleep, a futex wake; batched, the fence and the wake are paid once per batch, and a
//! receiver that sleeps is woken for a batch rather than for each packet (`scripts/exec-handoff` measures what a hand-off costs in all:
//! `BENCHMARKS.md`, "Real runs of the execution models").
//!
//! A bundle's order holds across groups that each receive from the group just before them; a packet
//! that skips a group may overtake an earlier packet of its bundle still in the skipped group, so a workload that
//! skips must not rely on that order (the engine's two stages have nothing to skip to).
//!
//! A group ends when everything upstream has ended (the reader for group 0; the reader and every worker of the
//! groups before it for the others) and its policy has nothing left for its workers: no packet can reach it any
//! more (see `run` for why a policy with nothing for a worker has nothing for it later).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::thread::Thread;
use std::time::Duration;

use flowbundle_scheduler::{Desc, Scheduler, WorkerId};
use flowbundle_types::{BundleToken, Outcome, StagedWorkload};

use crate::abort::{Abort, Aborted, OnUnwind, Start, reporting};
use crate::park::Wakes;
use crate::runtime::{
    DispatchReport, Pinning, Shared, WorkerReport, dispatch_raw, idle_round, pin_to, plan_pinning,
    tighten_timer_slack,
};
use crate::stream::StreamConfig;

/// Most packets a worker keeps in its outbox before handing them to a group it alone feeds (see the module
/// documentation): large enough that a sleeping receiver is woken once per many packets, small enough that the
/// receiver never waits long for work the sender has finished (a batch is also handed over whenever the sender
/// runs out of work).
pub const HAND_OVER_BATCH: usize = 32;

/// One group's side of a staged run.
#[derive(Clone, Debug, Default)]
pub struct GroupReport {
    /// The group's workers' reports, in worker order (their cores, when pinned).
    pub workers: Vec<WorkerReport>,
    /// Packets handed to this group by the groups before it (not counting the reader's).
    pub received: u64,
    /// Refusals met handing packets to this group (its queue was full), and the time workers of earlier groups spent
    /// waiting for a place, ns.
    pub refused: u64,
    pub blocked_ns: u64,
    /// The group's policy's counters.
    pub sched: flowbundle_scheduler::SchedStats,
}

/// Everything a staged run measured.
#[derive(Debug)]
pub struct StagedReport<L> {
    /// From the start to the last worker's last packet.
    pub elapsed_ns: u64,
    pub dispatcher: DispatchReport,
    pub groups: Vec<GroupReport>,
    /// Each group's workers' local states, group by group.
    pub locals: Vec<Vec<L>>,
    /// Packets that entered a group (dispatched by the reader, or handed over) and that its workers never processed,
    /// summed over the groups: 0 unless a policy breaks its contract.
    pub lost: u64,
    pub pinning: Pinning,
}

/// Per group: its shared state, policy and threads.
struct Group<'a> {
    sched: &'a dyn Scheduler,
    shared: Shared,
    /// Serialises the hand-overs into this group when more than one thread makes them (see [`place`]); `None`
    /// when one thread does (the reader into the first group, the one worker of a one-worker group before it).
    handoff: Option<Mutex<()>>,
    /// Threads (the reader, the earlier groups' workers) that can still hand packets to this group.
    upstream: AtomicUsize,
    received: AtomicU64,
    refused: AtomicU64,
    blocked_ns: AtomicU64,
}

/// Runs the descriptors `feed` produces through the stages of `workload`, stage `s` on `scheds[s].workers()`
/// workers of its own (see the module documentation). The calling thread runs `collect` as in
/// [`run_stream`](crate::run_stream), and a thread that panics abandons the run as there ([`Aborted`]). Every policy
/// must keep flow order and claim in `next` (the staged models rely on a group receiving a bundle's packets in
/// order); `scheds` has one policy per stage.
pub fn run_stream_staged<W, F>(
    scheds: &[&dyn Scheduler],
    workload: &W,
    feed: F,
    collect: &mut dyn FnMut(bool),
    cfg: &StreamConfig<'_>,
) -> Result<(StagedReport<W::Local>, F), Aborted>
where
    W: StagedWorkload + ?Sized,
    F: FnMut() -> Option<Desc> + Send,
{
    assert_eq!(
        scheds.len(),
        workload.stages(),
        "one policy per stage of the workload"
    );
    let sizes: Vec<usize> = scheds.iter().map(|s| s.workers().max(1)).collect();
    let total: usize = sizes.iter().sum();
    let groups: Vec<Group<'_>> = scheds
        .iter()
        .enumerate()
        .map(|(g, &sched)| Group {
            sched,
            shared: {
                let mut shared = Shared::new(sizes[g], 0);
                // As in `run_stream`: nothing reads per-packet times unless asked.
                shared.timed = cfg.timing;
                shared
            },
            handoff: (g > 0 && sizes[..g].iter().sum::<usize>() > 1).then(|| Mutex::new(())),
            upstream: AtomicUsize::new(1 + sizes[..g].iter().sum::<usize>()),
            received: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            blocked_ns: AtomicU64::new(0),
        })
        .collect();
    let pinning = plan_pinning(cfg.pin, total);
    let barrier = Start::new(total + 1);
    // Worker `k` of all groups together (pinning order): group g's worker w is `offset[g] + w`.
    let offset: Vec<usize> = sizes
        .iter()
        .scan(0, |at, &n| {
            let o = *at;
            *at += n;
            Some(o)
        })
        .collect();
    // The workers' threads, known once they are spawned: set before the start barrier lets anyone read them.
    let threads_cell: std::sync::OnceLock<Vec<Vec<Thread>>> = std::sync::OnceLock::new();
    let abort = Abort::new(cfg.on_abort);
    let names: Vec<Vec<String>> = sizes
        .iter()
        .enumerate()
        .map(|(g, &n)| (0..n).map(|w| format!("stage{g}-worker-{w}")).collect())
        .collect();
    let mut panics = Vec::new();
    let (dispatch, results) = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(sizes.len());
        let threads_ref = &threads_cell;
        let groups_ref = &groups;
        let abort_ref = &abort;
        for (g, &n) in sizes.iter().enumerate() {
            let hs: Vec<_> = (0..n)
                .map(|w| {
                    let barrier = &barrier;
                    let core = pinning.core_of(offset[g] + w + 1);
                    let name = &names[g][w];
                    std::thread::Builder::new()
                        .name(name.clone())
                        .spawn_scoped(scope, move || {
                            crate::abort::reported_by_run();
                            let _on_unwind = OnUnwind {
                                abort: abort_ref,
                                thread: name,
                            };
                            staged_worker(
                                g,
                                w,
                                groups_ref,
                                workload,
                                threads_ref,
                                barrier,
                                core,
                                abort_ref,
                            )
                        })
                        .expect("spawning a worker thread")
                })
                .collect();
            handles.push(hs);
        }
        let threads: Vec<Vec<Thread>> = handles
            .iter()
            .map(|hs| hs.iter().map(|h| h.thread().clone()).collect())
            .collect();
        let _ = threads_cell.set(threads);
        let (barrier_ref, core) = (&barrier, pinning.core_of(0));
        let reader = std::thread::Builder::new()
            .name("reader".into())
            .spawn_scoped(scope, move || {
                crate::abort::reported_by_run();
                let _on_unwind = OnUnwind {
                    abort: abort_ref,
                    thread: "reader",
                };
                reader_loop(groups_ref, feed, barrier_ref, threads_ref, core, abort_ref)
            })
            .expect("spawning the reader thread");
        let mut collecting = true;
        while !handles.iter().flatten().all(|h| h.is_finished()) {
            if collecting
                && let Err(p) = catch_unwind(AssertUnwindSafe(|| reporting(|| collect(false))))
            {
                abort.raise("collector");
                panics.push(("collector".to_string(), p));
                collecting = false;
            }
            std::thread::park_timeout(cfg.collect_every);
        }
        let dispatch = reader.join().map_err(|p| panics.push(("reader".into(), p)));
        let results: Vec<Vec<(WorkerReport, W::Local)>> = handles
            .into_iter()
            .zip(&names)
            .map(|(hs, ns)| {
                hs.into_iter()
                    .zip(ns)
                    .filter_map(|(h, name)| {
                        h.join().map_err(|p| panics.push((name.clone(), p))).ok()
                    })
                    .collect()
            })
            .collect();
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
    let mut last = disp.end_ns;
    let mut reports = Vec::with_capacity(groups.len());
    let mut locals = Vec::with_capacity(groups.len());
    let mut lost = 0;
    for (g, (res, group)) in results.into_iter().zip(&groups).enumerate() {
        let mut workers = Vec::new();
        let mut ls = Vec::new();
        for (w, (r, l)) in res.into_iter().enumerate() {
            last = last.max(r.last_end_ns);
            workers.push(WorkerReport {
                core: pinning.core_of(offset[g] + w + 1),
                ..r
            });
            ls.push(l);
        }
        let processed: u64 = workers.iter().map(|w| w.packets).sum();
        let entered = if g == 0 {
            disp.dispatched
        } else {
            group.received.load(Relaxed)
        };
        lost += entered.saturating_sub(processed);
        reports.push(GroupReport {
            workers,
            received: group.received.load(Relaxed),
            refused: group.refused.load(Relaxed),
            blocked_ns: group.blocked_ns.load(Relaxed),
            sched: group.sched.stats(),
        });
        locals.push(ls);
    }
    let report = StagedReport {
        elapsed_ns: last.saturating_sub(start_ns),
        lost,
        dispatcher: disp,
        groups: reports,
        locals,
        pinning,
    };
    Ok((report, feed))
}

/// Marks one upstream thread of every group after `g` (the reader counts as upstream of all) as gone, waking a
/// group's workers when its last upstream thread leaves.
fn leave_upstream(groups: &[Group<'_>], from: usize, threads: &[Vec<Thread>]) {
    for (h, grp) in groups.iter().enumerate().skip(from) {
        if grp.upstream.fetch_sub(1, AcqRel) == 1 {
            grp.shared.finished.store(true, Release);
            if let Some(t) = threads.get(h) {
                grp.shared.sleepers.wake_all(t);
            }
        }
    }
}

fn reader_loop<F: FnMut() -> Option<Desc> + Send>(
    groups: &[Group<'_>],
    mut feed: F,
    barrier: &Start,
    threads: &std::sync::OnceLock<Vec<Vec<Thread>>>,
    core: Option<usize>,
    abort: &Abort<'_>,
) -> (u64, DispatchReport, F) {
    pin_to(core);
    tighten_timer_slack();
    let mut report = DispatchReport::default();
    if !barrier.wait(abort) {
        // A thread died before the start: the run is abandoned before it began.
        return (0, report, feed);
    }
    let threads = threads.get().map_or(&[][..], Vec::as_slice);
    let g0 = &groups[0];
    let t0 = threads.first().map_or(&[][..], Vec::as_slice);
    let start = g0.shared.now();
    while !abort.is_raised()
        && let Some(d) = feed()
    {
        if !dispatch_raw(g0.sched, d, &g0.shared, t0, &mut report, abort, None) {
            break;
        }
    }
    report.end_ns = g0.shared.now();
    leave_upstream(groups, 0, threads);
    (start, report, feed)
}

/// Now, on the run's one clock (group 0's base instant), ns.
fn clock(groups: &[Group<'_>]) -> u64 {
    groups[0].shared.now()
}

/// Places `d` in group `h`'s policy, backing off while it refuses (see the module documentation), and notes whom to
/// wake in `wakes`; the wake-ups and the group's counters wait for [`settle`], once per batch.
///
/// A policy's `dispatch` has one caller in the contract (the dispatcher thread: `lfb`'s table raises a bundle's count
/// from zero and links its tail without an atomic read-modify-write, other policies push to single-producer rings),
/// but every worker of the earlier groups hands packets to group `h`. Two of them dispatching at once corrupted the
/// policy's queues (a packet delivered twice, so that a slot's script was read while another packet rewrote it, or
/// never delivered, so that the run waited for it for ever). The group's hand-over lock makes the dispatches one
/// sequence, as if one dispatcher made them; the lock is held for one `dispatch` (bounded work, no waiting inside),
/// never across a back-off, and a group with one upstream thread has none. Returns `false`, the packet not placed,
/// when the run is abandoned meanwhile (a worker of group `h` that died never makes room).
#[inline]
fn place(
    groups: &[Group<'_>],
    h: usize,
    d: Desc,
    threads: &[Vec<Thread>],
    wakes: &mut Wakes,
    abort: &Abort<'_>,
) -> bool {
    let grp = &groups[h];
    let t = threads.get(h).map_or(&[][..], Vec::as_slice);
    let mut tries = 0u32;
    let mut since = None;
    loop {
        let placed = {
            let _one_at_a_time = grp
                .handoff
                .as_ref()
                .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
            grp.sched.dispatch(d)
        };
        match placed {
            Ok(p) => {
                wakes.note(p);
                break;
            }
            Err(_) => {
                if abort.is_raised() {
                    return false;
                }
                grp.refused.fetch_add(1, Relaxed);
                since.get_or_insert_with(|| clock(groups));
                // Whoever can drain the group must be awake: the packets placed so far, and any sleeper.
                grp.shared.sleepers.wake_noted(wakes, t);
                grp.shared.sleepers.wake_all_if_any(t);
                tries += 1;
                if tries <= 3 {
                    std::thread::yield_now();
                } else {
                    let us = 5u64 << (tries - 4).min(6);
                    std::thread::sleep(Duration::from_micros(us));
                }
            }
        }
    }
    if let Some(s) = since {
        grp.blocked_ns
            .fetch_add(clock(groups).saturating_sub(s), Relaxed);
    }
    true
}

/// After `n` packets were placed in group `h` ([`place`]): wakes the workers they were placed for once for them all,
/// and counts them.
fn settle(groups: &[Group<'_>], h: usize, n: usize, threads: &[Vec<Thread>], wakes: &mut Wakes) {
    // The last group's workers hand nothing on: their outbox names a group that does not exist, and stays empty.
    let Some(grp) = groups.get(h) else {
        return;
    };
    let t = threads.get(h).map_or(&[][..], Vec::as_slice);
    grp.shared.sleepers.wake_noted(wakes, t);
    if n > 0 {
        grp.received.fetch_add(n as u64, Relaxed);
    }
}

/// A worker's packets finished in its group and not yet handed to the next, or handed over and not yet announced
/// (see the module documentation).
struct Outbox {
    /// The group they go to.
    to: usize,
    /// Packets not yet placed, in the order they were finished (a group this worker alone feeds).
    descs: Vec<Desc>,
    /// Packets placed already (a group several workers feed: each is placed before its `done`) whose wake-ups and
    /// count wait for the batch.
    placed: usize,
    wakes: Wakes,
}

impl Outbox {
    /// Hands everything kept to its group and wakes its workers once for the batch; `false` when the run was
    /// abandoned meanwhile.
    fn flush(&mut self, groups: &[Group<'_>], threads: &[Vec<Thread>], abort: &Abort<'_>) -> bool {
        if self.descs.is_empty() && self.placed == 0 {
            // Nothing kept, nothing placed unannounced (a worker that ran out of work finds this most times).
            return true;
        }
        let mut handed = true;
        for &d in &self.descs {
            if !place(groups, self.to, d, threads, &mut self.wakes, abort) {
                handed = false;
                break;
            }
            self.placed += 1;
        }
        settle(groups, self.to, self.placed, threads, &mut self.wakes);
        self.descs.clear();
        self.placed = 0;
        handed
    }

    /// Places `d` in group `h` at once (several workers feed it: before this worker's `done`, to keep each bundle's
    /// order), leaving the wake-up for the batch; `false` when the run was abandoned meanwhile.
    #[inline]
    fn place_now(
        &mut self,
        groups: &[Group<'_>],
        h: usize,
        d: Desc,
        threads: &[Vec<Thread>],
        abort: &Abort<'_>,
    ) -> bool {
        let mut handed = true;
        if self.to != h {
            handed = self.flush(groups, threads, abort);
            self.to = h;
        }
        if !place(groups, h, d, threads, &mut self.wakes, abort) {
            return false;
        }
        self.placed += 1;
        if self.placed >= HAND_OVER_BATCH {
            handed &= self.flush(groups, threads, abort);
        }
        handed
    }

    /// Keeps `d` for group `h` (which this worker alone feeds), handing the batch over when it is full.
    #[inline]
    fn keep(
        &mut self,
        groups: &[Group<'_>],
        h: usize,
        d: Desc,
        threads: &[Vec<Thread>],
        abort: &Abort<'_>,
    ) -> bool {
        let mut handed = true;
        if self.to != h {
            handed = self.flush(groups, threads, abort);
            self.to = h;
        }
        self.descs.push(d);
        if self.descs.len() >= HAND_OVER_BATCH {
            handed &= self.flush(groups, threads, abort);
        }
        handed
    }
}

#[allow(clippy::too_many_arguments)]
fn staged_worker<W: StagedWorkload + ?Sized>(
    g: usize,
    w: WorkerId,
    groups: &[Group<'_>],
    workload: &W,
    threads: &std::sync::OnceLock<Vec<Vec<Thread>>>,
    barrier: &Start,
    core: Option<usize>,
    abort: &Abort<'_>,
) -> (WorkerReport, W::Local) {
    pin_to(core);
    let grp = &groups[g];
    let sched = grp.sched;
    let shared = &grp.shared;
    let mut local = workload.local(g, w);
    let mut report = WorkerReport::default();
    let mut idle = 0u32;
    let mut pending: Option<Desc> = None;
    let mut outbox = Outbox {
        to: g + 1,
        descs: Vec::with_capacity(HAND_OVER_BATCH),
        placed: 0,
        wakes: Wakes::default(),
    };
    let timed = shared.timed;
    let now = || if timed { clock(groups) } else { 0 };
    if !barrier.wait(abort) {
        // A thread died before the start: this worker leaves without running (and hands nothing on).
        return (report, local);
    }
    let threads = threads.get().map_or(&[][..], Vec::as_slice);
    let mut idle_since = Some(now());
    loop {
        if abort.is_raised() {
            // Another thread died: the run is abandoned, with whatever is still queued.
            break;
        }
        let finished = shared.finished.load(Acquire);
        if let Some(d) = pending.take().or_else(|| sched.next(w)) {
            let start = now();
            if let Some(t) = idle_since.take() {
                report.idle_ns += start.saturating_sub(t);
            }
            // Staged groups claim in `next` (the caller's promise): the claim holds.
            let _ = sched.claim(w, &d);
            let (outcome, next) = {
                // SAFETY: between `next` (the claim) and `done`, the group's policy gives this worker the packet's
                // bundle alone in this group; the token is gone before `done`.
                let mut held = unsafe { BundleToken::assume_held(sched.bundle(&d)) };
                workload.process_stage(g, &mut local, d, &mut held)
            };
            if outcome == Outcome::Classified {
                sched.classified(w, &d);
            }
            let end = now();
            if let Some(h) = next.filter(|&h| h > g && h < groups.len()) {
                let handed = if groups[h].handoff.is_some() {
                    // Several workers feed group `h`: this packet is placed before `done` (see the module docs).
                    outbox.place_now(groups, h, d, threads, abort)
                } else {
                    outbox.keep(groups, h, d, threads, abort)
                };
                if !handed {
                    break;
                }
            }
            sched.done(w, d);
            shared.completed_one(w);
            report.packets += 1;
            report.busy_ns += end - start;
            report.last_end_ns = end;
            idle = 0;
            continue;
        }
        // Nothing more to do now: what this worker finished goes on before it waits (or leaves).
        if !outbox.flush(groups, threads, abort) {
            break;
        }
        if finished {
            break;
        }
        if idle_since.is_none() {
            idle_since = Some(now());
        }
        pending = idle_round(shared, sched, w, &mut idle, &mut report.parks);
    }
    if let Some(since) = idle_since {
        report.idle_ns += now().saturating_sub(since);
    }
    if !abort.is_raised() {
        outbox.flush(groups, threads, abort);
    }
    // This worker hands nothing to the later groups any more.
    leave_upstream(groups, g + 1, threads);
    (report, local)
}
