//! # Execution models: run-to-completion, software pipeline, MultiLayer Processing
//!
//! Every policy of `flowbundle-scheduler` runs to completion: one worker does all of a packet's work, so one
//! connection's packets run serially on one core, and the largest connection caps throughput (BENCHMARKS.md,
//! "Simulator": LFB stops at 6.2 Mpps on `balanced` from 11 cores). The Verdú thesis (chapters 5–6) measures two
//! alternatives on Snort-MT, and this module simulates them with the same machinery as [`crate::engine`] (the real
//! policy objects, the cache model) so they can be compared with run-to-completion on the same trace:
//!
//! * **run-to-completion** (`rtc`): one group of every core running every layer of a packet;
//! * **software pipeline** (`pipeline`, §5.5.2): stage groups *decode | flow and reassembly | detection*; every
//!   packet passes every stage, in order, through a bounded queue between stages;
//! * **MultiLayer Processing** (`multilayer`, §6.2): a core group per state layer (packet, flow, stream, application,
//!   detection); a packet visits only the groups its processing needs, in order (a UDP packet skips reassembly, a
//!   packet without payload skips identification and detection).
//!
//! ## What a packet costs where
//!
//! A packet's base cost (the [`crate::params::WorkModel`]'s, the same number the run-to-completion engine charges) is
//! split over the layers by [`Layer::cost_share`], renormalised over the layers the packet visits; each layer also
//! touches its own share of the connection's state lines (the layer's state is bound to its group, §6.2.2), its
//! share of the per-packet scratch lines, and its own code: [`Layer::code_lines`] distinct lines of instructions, of
//! which a visit executes a window of [`Layer::code_touch`] chosen by the connection (a connection's protocol picks
//! its parser and rule-group paths, so packets of one connection run the same code). Those fetches go through a
//! per-core L1i ([`crate::params::Machine::l1i`]) and the unified L2/L3 ([`Hierarchy::fetch_code`]): under
//! run-to-completion a core cycles through every layer's code, under MultiLayer Processing through one layer's,
//! which is the thesis' I-cache argument (§6.4.1.1), reproduced by the cache model rather than assumed.
//!
//! Moving a packet to the next group costs what the runtime would pay: the sending worker's `dispatch` into the next
//! group's policy, the receiving worker's `next`/`done` overhead, and [`ExecParams::hop_lines`] lines (the descriptor
//! and decoded headers) read from the sending core's cache. A full queue blocks the sender, which keeps its packet
//! (and its bundle in its own group, so per-flow order holds) until the next group frees a place: that wait, the
//! refusals and the hops are the *contention* measures per model.
//!
//! ## Groups and cores
//!
//! Each group runs its own instance of the chosen policy over its cores (so `lfb` balances bundles within a group,
//! and per-flow order holds within every group and therefore end to end: a packet leaves a group in its bundle's
//! order and is placed in the next group in that order). Cores are given to groups statically, as the thesis' OS
//! does at start-up (§6.2.2.2): one each, then the rest one at a time to the group with the most expected cycles per
//! core (the layer's share of the trace's cost, computed from the model before the run). With fewer cores than
//! groups, neighbouring layers share a group (and its code) until the groups fit.
//!
//! ## What it leaves out
//!
//! Raw mode only (as fast as the dispatcher goes); no hyper-threading (the thesis' streams); `ph`'s late claim (the
//! groups claim in `next`); migration as thread-context transfer (the thesis' 65-cycle hardware migration): a hop
//! here is a software queue, as this project's runtime would do it. The layer shares and code footprints are
//! estimates from the thesis (sources on [`ExecParams::engine`]), not measurements of flowbundle's engine.

use crate::cache::{CoreCounters, Hierarchy, STREAM_BASE};
use crate::engine::{Model, SimError};
use crate::input::SimInput;
use crate::params::{LINE, MAX_CORES, Params};
use flowbundle_lab_core::prep::NO_FLOW;
use flowbundle_scheduler::{Desc, SchedOptions, Scheduler, build};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The execution model (the vocabulary type the runtime's `--exec` shares).
pub use flowbundle_types::Exec;

/// Which packets a layer processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visits {
    All,
    /// TCP packets (reassembly).
    Tcp,
    /// Packets with L4 payload (identification, detection).
    Payload,
}

/// A processing layer: the code bound to one category of state (Verdú §6.2.2.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    pub name: String,
    pub visits: Visits,
    /// Share of a packet's base cost (renormalised over the layers the packet visits).
    pub cost_share: f64,
    /// Share of the connection's state lines this layer owns (of [`crate::params::WorkModel::state_lines`]).
    pub state_share: f64,
    /// Distinct code lines of the layer, and the lines one visit executes.
    pub code_lines: u32,
    pub code_touch: u32,
    /// The layer reads the packet's payload (its lines are streamed through this layer's core).
    pub reads_payload: bool,
}

/// The execution models' parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecParams {
    /// The engine's layers, in processing order.
    pub layers: Vec<Layer>,
    /// Layers per software-pipeline stage, in order (they sum to the number of layers).
    pub pipeline_stages: Vec<usize>,
    /// Lines a group reads from the previous group's core when a packet moves: the descriptor's line and the decoded
    /// view's (offsets into the packet buffer, which the next layer reads anyway: ARCHITECTURE.md, "one decode per
    /// packet", measured the hand-over of a decoded view at a few cache lines). Default 2.
    pub hop_lines: u32,
    /// Packets each group's policy may hold: the bounded queue in front of the group.
    pub queue: usize,
    /// The base cost model's cycles already include run-to-completion's instruction fetch stalls. True for every
    /// cost model here: the PAM model was set against measured cycles per packet (ANCS'10 Table 1), and a measured
    /// engine's cycles include its I-cache misses. Adding the modelled code stalls on top would charge
    /// run-to-completion twice; so each packet's base is scaled down by run-to-completion's code stall share on one
    /// core ([`code_base_scale`]), and each model then pays the code stalls its own layout causes. False: the base
    /// is pure compute, every model's stalls come on top.
    #[serde(default = "yes")]
    pub code_in_base: bool,
}

fn yes() -> bool {
    true
}

impl Default for ExecParams {
    fn default() -> Self {
        ExecParams::engine()
    }
}

/// The engine's layers as measured with callgrind (`scripts/exec-layers`: instructions per visit and code lines of
/// each layer, one profile per packet of the single-threaded `flowbundle inspect`; see [`crate::layers`]).
pub const MEASURED_LAYERS: &str = include_str!("../data/engine-layers.json");

impl ExecParams {
    /// flowbundle's engine cut along its state (ARCHITECTURE.md): decode (`packet`), the connection table and
    /// counters (`flow`), TCP reassembly (`stream`), protocol identification (`app`) and rule matching (`detect`),
    /// with each layer's cost share, code footprint and code lines per visit as measured on this engine
    /// ([`MEASURED_LAYERS`], [`crate::layers`]) over the estimates of [`ExecParams::thesis`], which keep the state
    /// shares (not measured). Falls back to the estimates should the measured file not apply (a unit test checks
    /// it does).
    pub fn engine() -> Self {
        let base = ExecParams::thesis();
        crate::layers::LayerMeasures::from_json(MEASURED_LAYERS)
            .map_err(|e| e.to_string())
            .and_then(|m| m.apply(&base))
            .unwrap_or(base)
    }

    /// The same layers with the Verdú thesis' figures for Snort-MT instead of measurements of this engine.
    ///
    /// Sources and estimates:
    /// * cost shares: decode 0.2 (the PAM model's `prepare_share`: Snort's decode is about 2 K of 8–12 K instructions,
    ///   Verdú §5.2); the rest split so that the pipeline's middle stage (flow + stream + app) is the largest, as the
    ///   thesis found its preprocessing stage (§6.4.3: "this stage comprises most of the packet processing time"):
    ///   flow 0.15, stream 0.2, app 0.15, detect 0.3;
    /// * state: flow 4, stream 6, app 3, detect 3 of a connection's 16 lines (reassembly keeps the most per
    ///   connection; decode none);
    /// * code: 8–12 K instructions per packet (Verdú §5.2) at about 4 bytes each is 32–48 KB executed per packet; the
    ///   model executes 512 distinct lines (32 KB) per packet, split by cost share, out of a footprint three times that
    ///   (96 KB: the paths of other protocols, rule groups and states), so that run-to-completion's footprint is three
    ///   L1i's and one layer's fits one. Estimates, not measurements: `--exec-code-scale` scales them.
    pub fn thesis() -> Self {
        let layer = |name: &str, visits, cost: f64, state: f64, payload| {
            let touch = (512.0 * cost).round() as u32;
            Layer {
                name: name.into(),
                visits,
                cost_share: cost,
                state_share: state / 16.0,
                code_lines: 3 * touch,
                code_touch: touch,
                reads_payload: payload,
            }
        };
        ExecParams {
            layers: vec![
                layer("packet", Visits::All, 0.2, 0.0, false),
                layer("flow", Visits::All, 0.15, 4.0, false),
                layer("stream", Visits::Tcp, 0.2, 6.0, false),
                layer("app", Visits::Payload, 0.15, 3.0, false),
                layer("detect", Visits::Payload, 0.3, 3.0, true),
            ],
            pipeline_stages: vec![1, 3, 1],
            hop_lines: 2,
            queue: 1024,
            code_in_base: true,
        }
    }

    /// Multiply every layer's code footprint and executed lines (0: no instruction model).
    pub fn scale_code(&mut self, k: f64) {
        for l in &mut self.layers {
            l.code_lines = (f64::from(l.code_lines) * k).round() as u32;
            l.code_touch = (f64::from(l.code_touch) * k).round() as u32;
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.layers.is_empty() || self.layers.len() > 16 {
            return Err("1 to 16 layers".into());
        }
        if self.pipeline_stages.iter().sum::<usize>() != self.layers.len()
            || self.pipeline_stages.contains(&0)
        {
            return Err(format!(
                "pipeline stages {:?} must cover the {} layers, each at least one",
                self.pipeline_stages,
                self.layers.len()
            ));
        }
        for l in &self.layers {
            let shares = l.cost_share.is_finite()
                && l.cost_share >= 0.0
                && l.state_share.is_finite()
                && (0.0..=1.0).contains(&l.state_share);
            if !shares || l.code_touch > l.code_lines || l.code_lines > 1 << 20 {
                return Err(format!("layer {}: shares or code out of range", l.name));
            }
        }
        if self.layers.iter().map(|l| l.cost_share).sum::<f64>() <= 0.0 {
            return Err("the layers' cost shares sum to zero".into());
        }
        if self.queue == 0 || self.hop_lines > 256 {
            return Err("queue ≥ 1 packet and hop lines ≤ 256".into());
        }
        Ok(())
    }

    /// The layers of each group of `exec` before core allocation (consecutive index ranges).
    fn groups(&self, exec: Exec) -> Vec<std::ops::Range<usize>> {
        let n = self.layers.len();
        match exec {
            Exec::Rtc => std::iter::once(0..n).collect(),
            Exec::Multilayer => (0..n).map(|i| i..i + 1).collect(),
            Exec::Pipeline => {
                let mut at = 0;
                self.pipeline_stages
                    .iter()
                    .map(|&k| {
                        let r = at..at + k;
                        at += k;
                        r
                    })
                    .collect()
            }
        }
    }
}

/// Whether packet `i` visits layer `l`.
fn visits(l: &Layer, input: &SimInput, i: usize) -> bool {
    match l.visits {
        Visits::All => true,
        Visits::Tcp => input.proto.get(i) == Some(&6),
        Visits::Payload => input.payload_len.get(i).is_some_and(|&p| p > 0),
    }
}

/// One group of cores: the layers it runs and its cores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupInfo {
    pub layers: Vec<String>,
    pub cores: usize,
    /// Packets processed, and cycles its cores were busy (processing, blocked on the next queue excluded).
    pub packets: u64,
    pub busy_cycles: u64,
    /// Cycles its workers waited with a finished packet for a place in the next group's queue, and the refusals.
    pub blocked_cycles: u64,
    pub refusals: u64,
}

fn one() -> f64 {
    1.0
}

/// One simulated run of an execution model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecRun {
    pub exec: Exec,
    pub scheduler: String,
    pub cores: usize,
    /// The factor every packet's base cost was multiplied by ([`ExecConfig::base_scale`]).
    #[serde(default = "one")]
    pub base_scale: f64,
    pub packets: u64,
    pub elapsed_cycles: u64,
    pub pps: f64,
    pub groups: Vec<GroupInfo>,
    /// Moves of a packet from one group to the next, per packet.
    pub hops_per_packet: f64,
    /// I-cache: code lines fetched per packet and the share that missed the L1i.
    pub code_per_packet: f64,
    pub icache_miss_rate: f64,
    /// D-cache: state lines accessed per packet and the share that missed the L1d (flow state only, as the
    /// ANCS'10 figures count; stream lines miss by construction and are counted apart).
    pub state_per_packet: f64,
    pub dcache_miss_rate: f64,
    /// Stall cycles per packet for code and for state.
    pub code_stall_per_packet: f64,
    pub state_stall_per_packet: f64,
    /// Contention: refused placements in a full group queue per 1,000 packets, and the share of core time spent
    /// blocked on a full queue.
    pub refusals_per_kpkt: f64,
    pub blocked_share: f64,
    /// Packets a group started before an earlier packet of their connection that visits that group: a broken
    /// per-flow order within a layer, which the order-keeping policies never do (each layer's state sees its
    /// connection's packets in order).
    pub reordered: u64,
    /// Packets that left the system before an earlier packet of their connection. Under MultiLayer Processing a
    /// packet that skips the later layers (a TCP acknowledgement without payload) may finish before the data packet
    /// ahead of it, which is still being matched: no layer sees its packets out of order, but an inline verdict
    /// would be issued out of order.
    pub completed_out_of_order: u64,
}

/// The per-packet facts of a run that the layers add to [`Model`].
struct Plan {
    /// Cycles of each layer for each packet (0 when the packet does not visit it), layer-major.
    layer_cycles: Vec<Vec<u32>>,
    /// State-line offset and count of each layer within a connection's lines.
    state: Vec<(u32, u32)>,
    /// First code line of each layer.
    code_base: Vec<u32>,
    /// Scratch lines streamed by each layer per visit.
    scratch: Vec<u32>,
}

/// Cores per group: one each, then one at a time to the largest expected cycles per core.
fn allocate(weights: &[f64], cores: usize) -> Vec<usize> {
    let mut n = vec![1usize; weights.len()];
    for _ in weights.len()..cores {
        let g = (0..weights.len())
            .max_by(|&a, &b| (weights[a] / n[a] as f64).total_cmp(&(weights[b] / n[b] as f64)))
            .unwrap_or(0);
        n[g] += 1;
    }
    n
}

/// Merge neighbouring groups (smallest combined weight first) until there are at most `cores`.
fn merge(
    mut groups: Vec<std::ops::Range<usize>>,
    layer_w: &[f64],
    cores: usize,
) -> Vec<std::ops::Range<usize>> {
    let w = |r: &std::ops::Range<usize>| layer_w[r.clone()].iter().sum::<f64>();
    while groups.len() > cores.max(1) {
        let k = (0..groups.len() - 1)
            .min_by(|&a, &b| {
                (w(&groups[a]) + w(&groups[a + 1])).total_cmp(&(w(&groups[b]) + w(&groups[b + 1])))
            })
            .unwrap_or(0);
        let next = groups.remove(k + 1);
        groups[k] = groups[k].start..next.end;
    }
    groups
}

const DISPATCHER: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
enum Worker {
    Idle,
    Busy(Desc),
    /// Finished in its group; waiting for a place in group `.1`'s queue.
    Blocked(Desc, usize),
    /// Placed its packet in the next group; paying the dispatch cost.
    Sending,
}

struct Group {
    sched: Box<dyn Scheduler>,
    layers: std::ops::Range<usize>,
    /// Packets placed in the group and not yet released by `done`, and those a worker holds.
    inside: u64,
    held: u64,
    info: GroupInfo,
}

struct Run<'a> {
    input: &'a SimInput,
    model: &'a Model,
    params: &'a Params,
    exec_params: &'a ExecParams,
    plan: &'a Plan,
    groups: Vec<Group>,
    /// Per core: its group and its worker index in that group's policy.
    core_group: Vec<(usize, usize)>,
    workers: Vec<Worker>,
    started: Vec<u64>,
    blocked_since: Vec<u64>,
    cache: Hierarchy,
    every_group: bool,
    /// Per packet: the core that last processed it (+1; 0 before its first group).
    last_core: Vec<u8>,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    next_pkt: usize,
    dispatcher_waiting: bool,
    dispatcher_refusals: u64,
    completed: u64,
    hops: u64,
    last_end: u64,
    /// Per group and flow: the highest packet id started so far (+1), for the reorder count; and per flow the
    /// highest packet id finished (+1).
    flow_started: Vec<Vec<u32>>,
    flow_finished: Vec<u32>,
    reordered: u64,
    completed_out_of_order: u64,
}

impl Run<'_> {
    fn schedule(&mut self, at: u64, who: u32) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, who)));
    }

    /// The first group at or after `from` that packet `i` visits: every group under run-to-completion and the
    /// pipeline, the groups with a layer it needs under MultiLayer Processing.
    fn next_group(&self, i: usize, from: usize) -> Option<usize> {
        (from..self.groups.len()).find(|&g| {
            self.every_group
                || self.groups[g]
                    .layers
                    .clone()
                    .any(|l| visits(&self.exec_params.layers[l], self.input, i))
        })
    }

    fn dispatch(&mut self) {
        let n = self.input.len();
        if self.next_pkt >= n {
            return;
        }
        let d = self.input.descs[self.next_pkt];
        let Some(g) = self.next_group(d.id as usize, 0) else {
            // Visits nothing: cannot happen with a layer every packet visits; count it done.
            self.next_pkt += 1;
            self.completed += 1;
            self.schedule(self.now, DISPATCHER);
            return;
        };
        match self.groups[g].sched.dispatch(d) {
            Ok(_) => {
                self.groups[g].inside += 1;
                self.next_pkt += 1;
                self.schedule(
                    self.now + u64::from(self.params.overheads.dispatch),
                    DISPATCHER,
                );
            }
            Err(_) => {
                // The dispatcher outrunning the first group is raw mode's back-pressure, not contention between
                // groups: counted apart.
                self.dispatcher_refusals += 1;
                self.dispatcher_waiting = true;
            }
        }
    }

    /// Core `c` asks its group's policy for a packet; true when it got one.
    fn take(&mut self, c: usize) -> bool {
        let (g, w) = self.core_group[c];
        let Some(d) = self.groups[g].sched.next(w) else {
            return false;
        };
        // The groups claim in `next` (no late claim): this always holds the bundle.
        let _ = self.groups[g].sched.claim(w, &d);
        self.groups[g].held += 1;
        let i = d.id as usize;
        let mut t = u64::from(self.params.overheads.worker);
        if let Some(&prev) = self.last_core.get(i)
            && prev > 0
            && usize::from(prev - 1) != c
        {
            t += self.cache.transfer(
                c,
                usize::from(prev - 1),
                self.exec_params.hop_lines as usize,
            );
        }
        let line0 = self.model.state.get(i).copied().unwrap_or(0);
        let flow = self.input.flows.get(i).copied().unwrap_or(NO_FLOW);
        if let Some(last) = self.flow_started[g].get_mut(flow as usize) {
            if *last > d.id + 1 {
                self.reordered += 1;
            } else {
                *last = d.id + 1;
            }
        }
        let payload_lines = self
            .input
            .payload_len
            .get(i)
            .map_or(0, |&p| (p as usize).div_ceil(LINE));
        for l in self.groups[g].layers.clone() {
            let cyc = self.plan.layer_cycles[l][i];
            let layer = &self.exec_params.layers[l];
            if !visits(layer, self.input, i) {
                continue;
            }
            t += u64::from(cyc);
            let (off, n) = self.plan.state[l];
            for k in 0..n {
                let (_, s) = self
                    .cache
                    .access_state(c, line0.wrapping_add(off + k) % STREAM_BASE);
                t += u64::from(s);
            }
            if layer.code_touch > 0 {
                // The connection's path through the layer's code: one of eight windows.
                let paths = 8u32;
                let start = (flow % paths) * (layer.code_lines / paths);
                for k in 0..layer.code_touch {
                    let n = self.plan.code_base[l] + (start + k) % layer.code_lines.max(1);
                    t += u64::from(self.cache.fetch_code(c, n));
                }
            }
            let mut stream = self.plan.scratch[l] as usize;
            if layer.reads_payload {
                stream += payload_lines;
            } else if l == 0 {
                stream += 1; // the headers
            }
            self.cache.stream(c, stream);
        }
        if let Some(p) = self.last_core.get_mut(i) {
            *p = c as u8 + 1;
        }
        self.workers[c] = Worker::Busy(d);
        self.started[c] = self.now;
        self.schedule(self.now + t, c as u32);
        true
    }

    fn finish(&mut self, c: usize, d: Desc, g: usize) {
        let (_, w) = self.core_group[c];
        let grp = &mut self.groups[g];
        grp.sched.done(w, d);
        grp.inside -= 1;
        grp.held -= 1;
        grp.info.packets += 1;
        // A place freed in group g: a blocked sender into g (or the dispatcher, for the first group) may go on.
        for k in 0..self.workers.len() {
            if let Worker::Blocked(_, to) = self.workers[k]
                && to == g
            {
                self.schedule(self.now, k as u32);
            }
        }
        if self.dispatcher_waiting {
            self.dispatcher_waiting = false;
            self.schedule(self.now, DISPATCHER);
        }
    }

    fn worker(&mut self, c: usize) {
        let (g, _) = self.core_group[c];
        match self.workers[c] {
            Worker::Idle => {}
            Worker::Busy(d) => {
                self.groups[g].info.busy_cycles += self.now - self.started[c];
                let i = d.id as usize;
                match self.next_group(i, g + 1) {
                    Some(h) => {
                        self.workers[c] = Worker::Blocked(d, h);
                        self.blocked_since[c] = self.now;
                        self.place(c);
                    }
                    None => {
                        self.finish(c, d, g);
                        self.complete(d);
                        self.after(c);
                    }
                }
            }
            Worker::Blocked(..) => self.place(c),
            Worker::Sending => self.after(c),
        }
    }

    /// A blocked core tries to place its packet in the next group.
    fn place(&mut self, c: usize) {
        let Worker::Blocked(d, h) = self.workers[c] else {
            return;
        };
        let (g, _) = self.core_group[c];
        match self.groups[h].sched.dispatch(d) {
            Ok(_) => {
                self.groups[h].inside += 1;
                self.hops += 1;
                self.groups[g].info.blocked_cycles += self.now - self.blocked_since[c];
                self.finish(c, d, g);
                self.workers[c] = Worker::Sending;
                let at = self.now + u64::from(self.params.overheads.dispatch);
                self.schedule(at, c as u32);
            }
            Err(_) => self.groups[g].info.refusals += 1,
        }
    }

    /// Core `c` is free: take the next packet of its group, or go idle.
    fn after(&mut self, c: usize) {
        self.workers[c] = Worker::Idle;
        let _ = self.take(c);
    }

    fn complete(&mut self, d: Desc) {
        self.completed += 1;
        self.last_end = self.now;
        let i = d.id as usize;
        if let Some(&f) = self.input.flows.get(i)
            && f != NO_FLOW
            && let Some(last) = self.flow_finished.get_mut(f as usize)
        {
            if *last > d.id + 1 {
                self.completed_out_of_order += 1;
            } else {
                *last = d.id + 1;
            }
        }
    }

    fn poll_idle(&mut self) {
        for c in 0..self.workers.len() {
            if !matches!(self.workers[c], Worker::Idle) {
                continue;
            }
            let (g, _) = self.core_group[c];
            if self.groups[g].inside > self.groups[g].held {
                self.take(c);
            }
        }
    }

    fn run(&mut self) {
        self.schedule(0, DISPATCHER);
        while let Some(Reverse((t, _, who))) = self.heap.pop() {
            self.now = t;
            if who == DISPATCHER {
                self.dispatch();
            } else {
                self.worker(who as usize);
            }
            self.poll_idle();
        }
    }
}

/// One run of an execution model.
#[derive(Clone, Debug)]
pub struct ExecConfig<'a> {
    pub exec: Exec,
    /// The policy of every group.
    pub scheduler: &'a str,
    pub cores: usize,
    /// The policy's options (its `capacity` is replaced by [`ExecParams::queue`], its late claim turned off).
    pub sched: SchedOptions,
    /// Multiplies every packet's base cost: [`code_base_scale`]'s answer when the base includes
    /// run-to-completion's code stalls ([`ExecParams::code_in_base`]), else 1.
    pub base_scale: f64,
}

/// Simulate `cfg.exec` on `cfg.cores` cores with policy `cfg.scheduler` in every group (raw mode).
pub fn simulate_exec(
    input: &SimInput,
    model: &Model,
    params: &Params,
    exec_params: &ExecParams,
    cfg: &ExecConfig<'_>,
) -> Result<ExecRun, SimError> {
    let (exec, scheduler, cores, sched) = (cfg.exec, cfg.scheduler, cfg.cores, &cfg.sched);
    if cores == 0 || cores > MAX_CORES {
        return Err(SimError::Cores(cores));
    }
    if !(cfg.base_scale.is_finite() && (0.0..=1.0).contains(&cfg.base_scale)) {
        return Err(SimError::Params(format!(
            "base scale {} not in 0..=1",
            cfg.base_scale
        )));
    }
    exec_params.validate().map_err(SimError::Params)?;
    let n = input.len();
    if model.base.len() != n {
        return Err(SimError::Input(
            "the model was built for another input".into(),
        ));
    }
    let layers = &exec_params.layers;
    // What a visit costs besides the layer's cycles, for the core allocation: the worker's overhead and the hop's
    // lines from a core of the same socket.
    let hop_cost = f64::from(params.overheads.worker)
        + f64::from(exec_params.hop_lines) * f64::from(params.machine.lat.xfer_socket);
    // Per-packet layer cycles: the base cost split by share over the layers the packet visits.
    let mut layer_cycles = vec![vec![0u32; n]; layers.len()];
    let mut layer_w = vec![0f64; layers.len()];
    for (i, &base) in model.base.iter().enumerate() {
        let total: f64 = layers
            .iter()
            .filter(|l| visits(l, input, i))
            .map(|l| l.cost_share)
            .sum();
        if total <= 0.0 {
            continue;
        }
        let base = f64::from(base) * cfg.base_scale;
        for (k, (l, cycles)) in layers.iter().zip(layer_cycles.iter_mut()).enumerate() {
            if visits(l, input, i) {
                let c = base * l.cost_share / total;
                cycles[i] = c as u32;
                layer_w[k] += c + hop_cost;
            }
        }
    }
    let lines = params.work.state_lines.max(1) as f64;
    let mut state = Vec::with_capacity(layers.len());
    let mut off = 0u32;
    for l in layers {
        let k = (l.state_share * lines).round() as u32;
        state.push((off, k));
        off += k;
    }
    let mut code_base = Vec::with_capacity(layers.len());
    let mut at = 0u32;
    for l in layers {
        code_base.push(at);
        at = at.saturating_add(l.code_lines);
    }
    let share_sum: f64 = layers.iter().map(|l| l.cost_share).sum();
    let scratch = layers
        .iter()
        .map(|l| (params.work.stream_lines as f64 * l.cost_share / share_sum).round() as u32)
        .collect();
    let ranges = merge(exec_params.groups(exec), &layer_w, cores);
    let weights: Vec<f64> = ranges
        .iter()
        .map(|r| layer_w[r.clone()].iter().sum())
        .collect();
    let per = allocate(&weights, cores);
    let mut groups = Vec::with_capacity(ranges.len());
    let mut core_group = Vec::with_capacity(cores);
    let opts = SchedOptions {
        capacity: exec_params.queue,
        ph_late_claim: false,
        ..sched.clone()
    };
    for (g, (r, &k)) in ranges.iter().zip(&per).enumerate() {
        for w in 0..k {
            core_group.push((g, w));
        }
        groups.push(Group {
            sched: build(scheduler, k, &opts)?,
            layers: r.clone(),
            inside: 0,
            held: 0,
            info: GroupInfo {
                layers: r.clone().map(|l| layers[l].name.clone()).collect(),
                cores: k,
                packets: 0,
                busy_cycles: 0,
                blocked_cycles: 0,
                refusals: 0,
            },
        });
    }
    let plan = Plan {
        layer_cycles,
        state,
        code_base,
        scratch,
    };
    let mut run = Run {
        input,
        model,
        params,
        exec_params,
        plan: &plan,
        groups,
        core_group,
        workers: vec![Worker::Idle; cores],
        started: vec![0; cores],
        blocked_since: vec![0; cores],
        cache: Hierarchy::new(&params.machine, cores, model.state_space),
        every_group: exec != Exec::Multilayer,
        last_core: vec![0; n],
        now: 0,
        seq: 0,
        heap: BinaryHeap::with_capacity(cores + 2),
        next_pkt: 0,
        dispatcher_waiting: false,
        dispatcher_refusals: 0,
        completed: 0,
        hops: 0,
        last_end: 0,
        flow_started: vec![vec![0; input.flow_count as usize]; ranges.len()],
        flow_finished: vec![0; input.flow_count as usize],
        reordered: 0,
        completed_out_of_order: 0,
    };
    run.run();
    if run.completed != n as u64 {
        return Err(SimError::Lost {
            scheduler: format!("{scheduler} ({})", exec.name()),
            cores,
            lost: n as u64 - run.completed,
        });
    }
    let mut total = CoreCounters::default();
    for k in &run.cache.counters {
        total.add(k);
    }
    let pk = n.max(1) as f64;
    let elapsed = run.last_end.max(1);
    let blocked: u64 = run.groups.iter().map(|g| g.info.blocked_cycles).sum();
    let refusals: u64 = run.groups.iter().map(|g| g.info.refusals).sum();
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    Ok(ExecRun {
        exec,
        scheduler: scheduler.to_string(),
        cores,
        base_scale: cfg.base_scale,
        packets: n as u64,
        elapsed_cycles: elapsed,
        pps: n as f64 / (elapsed as f64 / (params.machine.clock_ghz * 1e9)),
        groups: run.groups.iter().map(|g| g.info.clone()).collect(),
        hops_per_packet: run.hops as f64 / pk,
        code_per_packet: total.code as f64 / pk,
        icache_miss_rate: ratio(total.code_l1_miss, total.code),
        state_per_packet: total.state as f64 / pk,
        dcache_miss_rate: ratio(
            total.l1_miss - total.handoff_lines.min(total.l1_miss),
            total.state,
        ),
        code_stall_per_packet: total.code_stall_cycles as f64 / pk,
        state_stall_per_packet: total.stall_cycles as f64 / pk,
        refusals_per_kpkt: refusals as f64 * 1000.0 / pk,
        blocked_share: blocked as f64 / (elapsed as f64 * cores as f64),
        reordered: run.reordered,
        completed_out_of_order: run.completed_out_of_order,
    })
}

/// The factor that takes run-to-completion's instruction fetch stalls on one core out of the base cost (see
/// [`ExecParams::code_in_base`]): one core running every layer, as the cost model's measurements did, with the base
/// unscaled; the answer is `1 - stall / base` over the trace (1 when the model has no code, never below 0.05).
pub fn code_base_scale(
    input: &SimInput,
    model: &Model,
    params: &Params,
    exec_params: &ExecParams,
    scheduler: &str,
    sched: &SchedOptions,
) -> Result<f64, SimError> {
    if !exec_params.code_in_base || exec_params.layers.iter().all(|l| l.code_touch == 0) {
        return Ok(1.0);
    }
    let cfg = ExecConfig {
        exec: Exec::Rtc,
        scheduler,
        cores: 1,
        sched: sched.clone(),
        base_scale: 1.0,
    };
    let r = simulate_exec(input, model, params, exec_params, &cfg)?;
    let base =
        model.base.iter().map(|&b| f64::from(b)).sum::<f64>() / model.base.len().max(1) as f64;
    if base <= 0.0 {
        return Ok(1.0);
    }
    Ok((1.0 - r.code_stall_per_packet / base).clamp(0.05, 1.0))
}

/// A sweep of execution models over core counts on one trace with one policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecReport {
    pub trace: String,
    pub runs: Vec<ExecRun>,
}

impl ExecReport {
    pub fn run(&self, exec: Exec, scheduler: &str, cores: usize) -> Option<&ExecRun> {
        self.runs
            .iter()
            .find(|r| r.exec == exec && r.scheduler == scheduler && r.cores == cores)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// One line per run: throughput, I- and D-cache miss rates, contention, and the groups' cores.
    pub fn table(&self) -> String {
        let mut s = String::from(
            "| model | policy | cores | Mpps | I$ miss | D$ miss | code stall/pkt | hops/pkt | refusals/kpkt | blocked | reordered | finished out of order | groups (cores) |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for r in &self.runs {
            let groups: Vec<String> = r
                .groups
                .iter()
                .map(|g| format!("{} ({})", g.layers.join("+"), g.cores))
                .collect();
            s.push_str(&format!(
                "| {} | {} | {} | {:.3} | {:.1}% | {:.1}% | {:.0} | {:.2} | {:.1} | {:.1}% | {} | {} | {} |\n",
                r.exec.name(),
                r.scheduler,
                r.cores,
                r.pps / 1e6,
                r.icache_miss_rate * 100.0,
                r.dcache_miss_rate * 100.0,
                r.code_stall_per_packet,
                r.hops_per_packet,
                r.refusals_per_kpkt,
                r.blocked_share * 100.0,
                r.reordered,
                r.completed_out_of_order,
                groups.join(", ")
            ));
        }
        s
    }
}

/// What a sweep of execution models covers.
#[derive(Clone, Debug, Default)]
pub struct ExecSweep {
    pub models: Vec<Exec>,
    pub schedulers: Vec<String>,
    pub cores: Vec<usize>,
    pub sched: SchedOptions,
}

/// Every (model, policy, core count) of `sweep`, the model built once.
pub fn sweep_exec(
    input: &SimInput,
    params: &Params,
    exec_params: &ExecParams,
    sweep: &ExecSweep,
    progress: &mut dyn FnMut(&ExecRun),
) -> Result<ExecReport, SimError> {
    let model = Model::new(input, params)?;
    let mut runs = Vec::new();
    let mut scales = std::collections::HashMap::new();
    for s in &sweep.schedulers {
        let k = code_base_scale(input, &model, params, exec_params, s, &sweep.sched)?;
        scales.insert(s.clone(), k);
    }
    for &exec in &sweep.models {
        for s in &sweep.schedulers {
            for &cores in &sweep.cores {
                let cfg = ExecConfig {
                    exec,
                    scheduler: s,
                    cores,
                    sched: sweep.sched.clone(),
                    base_scale: scales.get(s).copied().unwrap_or(1.0),
                };
                let r = simulate_exec(input, &model, params, exec_params, &cfg)?;
                progress(&r);
                runs.push(r);
            }
        }
    }
    Ok(ExecReport {
        trace: input.info.name.clone(),
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_measured_layers_apply_to_the_model() {
        let m = crate::layers::LayerMeasures::from_json(MEASURED_LAYERS).unwrap();
        let p = m.apply(&ExecParams::thesis()).unwrap();
        assert_eq!(ExecParams::engine(), p);
        assert_ne!(p, ExecParams::thesis());
        let shares: f64 = p.layers.iter().map(|l| l.cost_share).sum();
        assert!((shares - 1.0).abs() < 1e-9);
        for l in &p.layers {
            assert!(l.code_touch > 0 && l.code_touch <= l.code_lines, "{l:?}");
        }
    }
}
