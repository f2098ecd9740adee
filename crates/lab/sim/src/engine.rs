//! # The discrete-event loop
//!
//! One thread, virtual time in integer cycles of the simulated clock, a binary heap of events (at most one per
//! worker plus one for the dispatcher, ordered by time and then by the order they were scheduled, so every run is
//! deterministic). The policy is the real one, built by [`flowbundle_scheduler::build`], and the loop calls its
//! methods in the order the threaded runtime (`flowbundle-worker`) would, at the virtual times the model says:
//!
//! * **dispatcher** — *raw*: one packet after another, `dispatch` at the event's time, then busy for the dispatch
//!   cost (plus the second enqueue when an FBQ policy opens a bundle). A refusal (a bounded queue is full) is
//!   counted, and the dispatcher waits, as the runtime's back-off does, until half of what was outstanding has
//!   been processed. *Scaled*: packet `i` is taken up at its rescaled time (or later, if the dispatcher is still busy,
//!   counted as late beyond 10 µs); with `max_outstanding` packets in the system it is dropped and counted, as is a
//!   packet the policy refuses: the ANCS'10 harness's oversubscription rule, same as the runtime.
//! * **worker** — `next`; the decode (the cost model's share before the claim) plus the runtime's per-packet cost;
//!   `claim` and the connection entry's first state line through the cache model (a refused claim, `ph` handing the
//!   packet to the owner of its connection, costs that line plus the handoff cost, and the worker asks `next` again);
//!   then the rest of the base cost plus the stall cycles of the packet's other state lines, with the packet's own
//!   lines streamed through the core's caches; `done`; `next` at once.
//! * **idle workers** spin on their queues, as PAM threads do (ANCS'10 §3.2): after every event, while packets are
//!   waiting that no worker holds, the idle workers ask `next` in the order they became idle.
//!
//! Cache effects are applied when a packet's processing starts (its accesses happen inside its service time, and no
//! other core can touch the same state meanwhile: every policy but `ph` keeps a bundle on one worker, and `ph` holds
//! the connection entry).
//!
//! The run produces the runtime's own report type ([`RunReport`], times converted to ns), so the bench harness's
//! metric functions (latency, order, life, balance) apply unchanged.

use crate::cache::{CoreCounters, Hierarchy, STREAM_BASE};
use crate::input::SimInput;
use crate::params::{CostModel, MAX_CORES, Params, StateKey};
use flowbundle_lab_core::prep::NO_FLOW;
use flowbundle_scheduler::{BuildError, Desc, Placed, SchedOptions, Scheduler, build};
use flowbundle_worker::{DispatchReport, Pinning, Records, RunReport, Status, WorkerReport};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How the dispatcher paces packets.
#[derive(Clone, Copy, Debug)]
pub enum Mode<'a> {
    /// As fast as the dispatcher goes, waiting only when the policy refuses a packet.
    Raw,
    /// Packet `i` arrives `release_ns[i]` ns after the start (non-decreasing; see `flowbundle_lab_core::search`).
    Scaled { release_ns: &'a [u64] },
}

/// One simulated run.
#[derive(Clone, Debug)]
pub struct RunConfig<'a> {
    pub scheduler: &'a str,
    pub cores: usize,
    pub sched: SchedOptions,
    pub mode: Mode<'a>,
    /// Scaled mode: packets in the system beyond which arrivals are dropped (ANCS'10: 4,096).
    pub max_outstanding: usize,
    /// Keep per-packet records (needed for latency, order and life; about 35 bytes per packet).
    pub records: bool,
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("simulated cores must be 1 to {MAX_CORES}, got {0}")]
    Cores(usize),
    #[error("bad input: {0}")]
    Input(String),
    #[error("bad parameters: {0}")]
    Params(String),
    #[error("{lost} packets dispatched but never processed under {scheduler} on {cores} cores")]
    Lost {
        scheduler: String,
        cores: usize,
        lost: u64,
    },
}

/// Per-packet facts the loop needs, computed once per (input, parameters) and shared by every run of a sweep.
#[derive(Clone, Debug)]
pub struct Model {
    /// Base service time, cycles (cost model × scale).
    pub base: Vec<u32>,
    /// First state line of the packet's connection (or bundle).
    pub state: Vec<u32>,
    /// Lines streamed while processing it.
    pub stream: Vec<u16>,
    /// State lines in the directory.
    pub state_space: usize,
    /// Connections whose lines wrapped around the state address range (only beyond 2^31 lines).
    pub aliased: u64,
}

impl Model {
    pub fn new(input: &SimInput, params: &Params) -> Result<Model, SimError> {
        params.validate().map_err(SimError::Params)?;
        input.validate().map_err(SimError::Input)?;
        let w = &params.work;
        let ghz = params.machine.clock_ghz;
        let n = input.len();
        let scale = w.cost_scale;
        let mut base = Vec::with_capacity(n);
        for i in 0..n {
            let c = match &w.cost {
                CostModel::Cycles {
                    tcp,
                    udp,
                    other,
                    per_payload_byte,
                } => {
                    let fixed = match input.proto[i] {
                        6 => *tcp,
                        17 => *udp,
                        _ => *other,
                    };
                    fixed + per_payload_byte * f64::from(input.payload_len[i])
                }
                CostModel::Nanos {
                    base_ns,
                    per_wire_byte_ns,
                } => (base_ns + per_wire_byte_ns * f64::from(input.wire_len[i].min(65_535))) * ghz,
                CostModel::PerPacket => match &input.cost_ns {
                    Some(v) => f64::from(v[i]) * ghz,
                    None => {
                        return Err(SimError::Input(
                            "the per-packet cost model needs a cost file".into(),
                        ));
                    }
                },
            };
            base.push((c * scale).clamp(0.0, f64::from(u32::MAX)) as u32);
        }
        let lines = w.state_lines.max(1) as u64;
        let keys = match w.state_key {
            StateKey::Flow => u64::from(input.flow_count) + 1,
            StateKey::ConnBundle => 1 << 16,
        };
        let limit = u64::from(STREAM_BASE);
        let state_space = (keys * lines).min(limit) as usize;
        let aliased = keys.saturating_sub(limit / lines);
        let state = (0..n)
            .map(|i| {
                let key = match w.state_key {
                    StateKey::Flow => match input.flows[i] {
                        NO_FLOW => u64::from(input.flow_count),
                        f => u64::from(f),
                    },
                    StateKey::ConnBundle => u64::from(input.descs[i].conn as u16),
                };
                ((key * lines) % limit) as u32
            })
            .collect();
        let stream = (0..n)
            .map(|i| {
                let payload = if w.stream_payload {
                    (input.wire_len[i] as usize).div_ceil(crate::params::LINE)
                } else {
                    0
                };
                (payload + w.stream_lines).min(u16::MAX as usize) as u16
            })
            .collect();
        Ok(Model {
            base,
            state,
            stream,
            state_space,
            aliased,
        })
    }
}

/// A finished run: the runtime's report (times in ns) plus what only the model knows.
#[derive(Debug)]
pub struct SimRun {
    pub report: RunReport<()>,
    pub elapsed_cycles: u64,
    /// Cache counters per core.
    pub cache: Vec<CoreCounters>,
    /// Cycles each worker spent with a packet in hand (decode, handoffs and processing).
    pub busy_cycles: Vec<u64>,
}

impl SimRun {
    /// Processed packets per second of simulated time.
    pub fn pps(&self) -> f64 {
        self.report.pps()
    }

    /// All cores' cache counters summed.
    pub fn cache_total(&self) -> CoreCounters {
        let mut t = CoreCounters::default();
        for c in &self.cache {
            t.add(c);
        }
        t
    }
}

const DISPATCHER: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
enum Worker {
    Idle,
    /// Taken with `next`, decoding; the claim comes at the event.
    Prepared(Desc),
    Processing(Desc),
    /// Its claim was refused; appending the packet to the owner's queue.
    HandingOff,
}

struct Loop<'a> {
    sched: &'a dyn Scheduler,
    input: &'a SimInput,
    model: &'a Model,
    params: &'a Params,
    cache: Hierarchy,
    fbq: bool,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    workers: Vec<Worker>,
    taken_at: Vec<u64>,
    /// Per packet: the worker that last handed it off (+1; 0 when none).
    handed: Vec<u8>,
    idle: Vec<usize>,
    held: usize,
    // dispatcher
    next_pkt: usize,
    first_try: Option<u64>,
    waiting_for: Option<u64>,
    release: Option<Vec<u64>>,
    max_outstanding: u64,
    dispatched: u64,
    completed: u64,
    disp: DispatchReport,
    disp_end: u64,
    // results
    rec: Option<Records>,
    wrep: Vec<WorkerReport>,
    busy: Vec<u64>,
}

impl<'a> Loop<'a> {
    fn schedule(&mut self, at: u64, who: u32) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, who)));
    }

    fn outstanding(&self) -> u64 {
        self.dispatched - self.completed
    }

    fn dispatcher(&mut self) {
        let n = self.input.len();
        match self.release.take() {
            None => self.dispatch_raw(n),
            Some(release) => {
                self.dispatch_scaled(n, &release);
                self.release = Some(release);
            }
        }
    }

    fn cost_of(&self, placed: Placed) -> u64 {
        let o = &self.params.overheads;
        let dual = self.fbq && placed != Placed::Joined;
        u64::from(o.dispatch) + if dual { u64::from(o.dual_enqueue) } else { 0 }
    }

    fn dispatch_raw(&mut self, n: usize) {
        let i = self.next_pkt;
        if i >= n {
            self.disp_end = self.now;
            return;
        }
        let d = self.input.descs[i];
        let arrival = *self.first_try.get_or_insert(self.now);
        match self.sched.dispatch(d) {
            Ok(placed) => {
                self.first_try = None;
                self.dispatched += 1;
                if let Some(r) = self.rec.as_mut() {
                    r.arrival_ns[i] = arrival;
                    r.enqueue_ns[i] = self.now;
                    r.status[i] = Status::Processed;
                }
                self.next_pkt += 1;
                let cost = self.cost_of(placed);
                self.schedule(self.now + cost, DISPATCHER);
            }
            Err(_) => {
                self.disp.full_waits += 1;
                self.disp.sleeps += 1;
                self.waiting_for = Some(self.outstanding() / 2);
            }
        }
    }

    fn dispatch_scaled(&mut self, n: usize, release: &[u64]) {
        let i = self.next_pkt;
        if i >= n {
            self.disp_end = self.now;
            return;
        }
        let due = release[i];
        if self.now > due + self.params.machine.ns_to_cycles(10_000.0) {
            self.disp.late += 1;
        }
        let status = if self.outstanding() >= self.max_outstanding {
            self.disp.dropped_outstanding += 1;
            Status::DroppedOutstanding
        } else {
            match self.sched.dispatch(self.input.descs[i]) {
                Ok(placed) => {
                    self.dispatched += 1;
                    let cost = self.cost_of(placed);
                    self.next_pkt += 1;
                    if let Some(r) = self.rec.as_mut() {
                        r.arrival_ns[i] = self.now;
                        r.enqueue_ns[i] = self.now;
                        r.status[i] = Status::Processed;
                    }
                    let next = release
                        .get(i + 1)
                        .copied()
                        .unwrap_or(0)
                        .max(self.now + cost);
                    self.schedule(next, DISPATCHER);
                    return;
                }
                Err(_) => {
                    self.disp.dropped_full += 1;
                    Status::DroppedFull
                }
            }
        };
        if let Some(r) = self.rec.as_mut() {
            r.arrival_ns[i] = self.now;
            r.status[i] = status;
        }
        self.next_pkt += 1;
        let next = release.get(i + 1).copied().unwrap_or(0).max(self.now);
        self.schedule(next, DISPATCHER);
    }

    /// Worker `w` asks the policy for a packet; true when it got one.
    fn take(&mut self, w: usize) -> bool {
        let Some(d) = self.sched.next(w) else {
            return false;
        };
        self.taken_at[w] = self.now;
        self.held += 1;
        let base = self.model.base.get(d.id as usize).copied().unwrap_or(0);
        let prep = (f64::from(base) * self.params.work.prepare_share) as u64;
        self.workers[w] = Worker::Prepared(d);
        let at = self.now + u64::from(self.params.overheads.worker) + prep;
        self.schedule(at, w as u32);
        true
    }

    fn go_idle(&mut self, w: usize) {
        self.workers[w] = Worker::Idle;
        self.idle.push(w);
    }

    fn worker(&mut self, w: usize) {
        match self.workers[w] {
            Worker::Idle => {}
            Worker::Prepared(d) => {
                let i = d.id as usize;
                let claimed = self.sched.claim(w, &d);
                let line0 = self.model.state.get(i).copied().unwrap_or(0);
                let (_, ce) = self.cache.access_state(w, line0);
                let mut pen = u64::from(ce);
                if !claimed {
                    if let Some(h) = self.handed.get_mut(i) {
                        *h = w as u8 + 1;
                    }
                    self.held -= 1;
                    self.wrep[w].handoffs += 1;
                    self.workers[w] = Worker::HandingOff;
                    let at = self.now + pen + u64::from(self.params.overheads.handoff);
                    self.schedule(at, w as u32);
                    return;
                }
                if let Some(&h) = self.handed.get(i)
                    && h > 0
                {
                    let n = self.params.overheads.handoff_lines as usize;
                    pen += self.cache.transfer(w, usize::from(h - 1), n);
                    self.handed[i] = 0;
                }
                let lines = self.params.work.state_lines.max(1) as u32;
                for k in 1..lines {
                    let (_, c) = self
                        .cache
                        .access_state(w, line0.wrapping_add(k) % STREAM_BASE);
                    pen += u64::from(c);
                }
                self.cache.stream(
                    w,
                    usize::from(self.model.stream.get(i).copied().unwrap_or(0)),
                );
                let base = self.model.base.get(i).copied().unwrap_or(0);
                let prep = (f64::from(base) * self.params.work.prepare_share) as u64;
                let rest = u64::from(base).saturating_sub(prep);
                self.workers[w] = Worker::Processing(d);
                self.schedule(self.now + rest + pen, w as u32);
            }
            Worker::Processing(d) => {
                self.sched.done(w, d);
                self.held -= 1;
                self.completed += 1;
                let start = self.taken_at[w];
                self.busy[w] += self.now - start;
                let r = &mut self.wrep[w];
                r.packets += 1;
                r.last_end_ns = self.now;
                if let Some(rec) = self.rec.as_mut() {
                    let i = d.id as usize;
                    if i < rec.start_ns.len() {
                        rec.start_ns[i] = start;
                        rec.end_ns[i] = self.now;
                        rec.worker[i] = w as u16;
                    }
                }
                if let Some(target) = self.waiting_for
                    && self.outstanding() <= target
                {
                    self.waiting_for = None;
                    self.schedule(self.now, DISPATCHER);
                }
                if !self.take(w) {
                    self.go_idle(w);
                }
            }
            Worker::HandingOff => {
                self.busy[w] += self.now - self.taken_at[w];
                if !self.take(w) {
                    self.go_idle(w);
                }
            }
        }
    }

    /// Idle workers ask `next`, longest idle first, while packets wait that nobody holds.
    fn poll_idle(&mut self) {
        let mut k = 0;
        while k < self.idle.len() && self.outstanding() > self.held as u64 {
            let w = self.idle[k];
            if self.take(w) {
                self.idle.remove(k);
            } else {
                k += 1;
            }
        }
    }

    fn run(&mut self) {
        let first = self
            .release
            .as_ref()
            .and_then(|r| r.first().copied())
            .unwrap_or(0);
        self.schedule(first, DISPATCHER);
        loop {
            while let Some(Reverse((t, _, who))) = self.heap.pop() {
                self.now = t;
                if who == DISPATCHER {
                    self.dispatcher();
                } else {
                    self.worker(who as usize);
                }
                if !self.idle.is_empty() && self.outstanding() > self.held as u64 {
                    self.poll_idle();
                }
            }
            // Nothing scheduled: either done, or (a policy contract broken) packets nobody was offered.
            let before = self.held;
            if self.outstanding() > 0 {
                for k in 0..self.idle.len() {
                    let w = self.idle[k];
                    if self.take(w) {
                        self.idle.remove(k);
                        break;
                    }
                }
            }
            if self.held == before {
                break;
            }
        }
    }
}

/// Simulate one run of `input` under `cfg.scheduler` on `cfg.cores` cores.
pub fn simulate(
    input: &SimInput,
    model: &Model,
    params: &Params,
    cfg: &RunConfig<'_>,
) -> Result<SimRun, SimError> {
    if cfg.cores == 0 || cfg.cores > MAX_CORES {
        return Err(SimError::Cores(cfg.cores));
    }
    let n = input.len();
    if model.base.len() != n {
        return Err(SimError::Input(
            "the model was built for another input".into(),
        ));
    }
    let sched = build(cfg.scheduler, cfg.cores, &cfg.sched)?;
    let release = match cfg.mode {
        Mode::Raw => None,
        Mode::Scaled { release_ns } => {
            if release_ns.len() != n {
                return Err(SimError::Input(format!(
                    "{} release times for {n} packets",
                    release_ns.len()
                )));
            }
            if release_ns.windows(2).any(|w| w[1] < w[0]) {
                return Err(SimError::Input("release times decrease".into()));
            }
            Some(
                release_ns
                    .iter()
                    .map(|&t| params.machine.ns_to_cycles(t as f64))
                    .collect::<Vec<u64>>(),
            )
        }
    };
    let cores = cfg.cores;
    let mut lp = Loop {
        sched: sched.as_ref(),
        input,
        model,
        params,
        cache: Hierarchy::new(&params.machine, cores, model.state_space),
        // The FBQ policies (`lfb` and its variants) enqueue an opening packet twice: its FBQ and a receive queue.
        fbq: sched.queues_opening_twice(),
        now: 0,
        seq: 0,
        heap: BinaryHeap::with_capacity(cores + 2),
        workers: vec![Worker::Idle; cores],
        taken_at: vec![0; cores],
        handed: if cfg.scheduler == "ph" {
            vec![0; n]
        } else {
            Vec::new()
        },
        idle: (0..cores).collect(),
        held: 0,
        next_pkt: 0,
        first_try: None,
        waiting_for: None,
        release,
        max_outstanding: cfg.max_outstanding.max(1) as u64,
        dispatched: 0,
        completed: 0,
        disp: DispatchReport::default(),
        disp_end: 0,
        rec: cfg.records.then(|| Records {
            arrival_ns: vec![0; n],
            enqueue_ns: vec![0; n],
            start_ns: vec![0; n],
            end_ns: vec![0; n],
            worker: vec![u16::MAX; n],
            status: vec![Status::Pending; n],
        }),
        wrep: vec![WorkerReport::default(); cores],
        busy: vec![0; cores],
    };
    lp.run();
    let lost = lp.dispatched - lp.completed;
    if lost > 0 {
        return Err(SimError::Lost {
            scheduler: cfg.scheduler.to_string(),
            cores,
            lost,
        });
    }
    let m = &params.machine;
    let last = lp
        .wrep
        .iter()
        .map(|w| w.last_end_ns)
        .max()
        .unwrap_or(0)
        .max(lp.disp_end);
    let mut disp = lp.disp.clone();
    disp.dispatched = lp.dispatched;
    disp.end_ns = m.cycles_to_ns(lp.disp_end);
    let workers: Vec<WorkerReport> = lp
        .wrep
        .iter()
        .enumerate()
        .map(|(w, r)| WorkerReport {
            packets: r.packets,
            handoffs: r.handoffs,
            busy_ns: m.cycles_to_ns(lp.busy[w]),
            idle_ns: m.cycles_to_ns(last.saturating_sub(lp.busy[w])),
            parks: 0,
            last_end_ns: m.cycles_to_ns(r.last_end_ns),
            core: Some(w),
        })
        .collect();
    let records = lp.rec.take().map(|mut r| {
        for v in [
            &mut r.arrival_ns,
            &mut r.enqueue_ns,
            &mut r.start_ns,
            &mut r.end_ns,
        ] {
            for t in v.iter_mut() {
                *t = m.cycles_to_ns(*t);
            }
        }
        r
    });
    let cache = lp.cache.counters.clone();
    let busy_cycles = lp.busy.clone();
    Ok(SimRun {
        report: RunReport {
            start_ns: 0,
            elapsed_ns: m.cycles_to_ns(last),
            dispatcher: disp,
            workers,
            sched: sched.stats(),
            lost: 0,
            records,
            locals: vec![(); cores],
            pinning: Pinning::Floating("simulated cores".into()),
            clobber_passes: 0,
        },
        elapsed_cycles: last,
        cache,
        busy_cycles,
    })
}
