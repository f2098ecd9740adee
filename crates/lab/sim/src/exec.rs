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
//!   packet without payload skips identification and detection; but where the runtime's threads are modelled
//!   ([`Host::Runtime`]) the simulation follows the runtime's code, which calls the rules for every packet and
//!   hands every packet to detection: there a packet without payload visits those groups too, for the hop and the
//!   layer's code alone, [`Visits::Rules`]).
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
//! Moving a packet into a group that reads the payload (detection, the scan) crosses the boundary the runtime's
//! staged models cut, and costs what the runtime pays there, as measured on it ([`crate::handoff`],
//! [`ExecParams::handoff`]): the sending worker's instructions (recording the packet's script, copying what the rules
//! will read, the next group's lock and `dispatch`), the receiving worker's (`next`/`claim`/`done` in its group, the
//! script's replay), at the engine's measured cycles per instruction; and the lines the receiver reads from the
//! sender's core through the cache model (the record, and the copied payload), each a coherence transfer at the
//! machine's latency. The other hops (between the layers before detection, which the runtime does not cut) and every
//! hop without a measurement ([`Handoff::none`]) cost the policy's overheads (`dispatch`, `worker`) and the record's
//! lines. A full queue blocks the sender, which keeps its packet
//! (and its bundle in its own group, so per-flow order holds) until the next group frees a place: that wait, the
//! refusals and the hops are the *contention* measures per model.
//!
//! ## The runtime's own threads
//!
//! The workers are not the only threads of the real runtime: `flowbundle inspect --threads N` runs a reader (read,
//! decode to the flow key, defragment, dispatch) and a collector (events merged in order and written) beside them,
//! on as many cores as workers by default, and `--threads 1` runs none of this but the single-threaded loop. With
//! [`ExecConfig::host`] at [`Host::Runtime`] (the default) and the threads measured ([`ExecParams::threads`],
//! [`crate::threads`]), the simulation does what the runtime does: one worker pays the loop's measured cycles per
//! packet on top of the engine's; with N ≥ 2 the dispatcher is the reader, serial at its measured cycles per packet,
//! and each packet's reader and collector cycles run on the workers' cores (an idle core runs them at once, else the
//! core owing the least takes them from its processing, as the OS time-shares a core), unless the machine has cores
//! to spare ([`Host::RuntimeOn`]); a worker pays the runtime's measured per-packet cycles in place of the policy's
//! overhead. [`Host::Dedicated`] keeps the ANCS'10 model: a core per worker and a dispatcher that costs nobody.
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
//! ## Beyond one core per connection: the split scan
//!
//! Every model above keeps a connection's packets in each layer on one core at a time, so the layer a connection
//! spends most in caps the run at that connection's serial rate (detection is 71% of a payload packet's
//! instructions on this engine, `crate::layers`). [`ExecParams::split_scan`] cuts detection where the engine's own
//! state allows it: the content scan (the prefilter's pass over the bytes, 55% of detection's instructions,
//! [`SplitScan::measured`]) keeps no per-connection state but the last (longest pattern − 1) bytes of the stream, which
//! `flowbundle_rules::split` already exploits on real threads; the rest (candidate verification, PCRE, flowbits,
//! the alert order) keeps the connection's detection state. The scan becomes a *stateless* layer
//! ([`Layer::stateless`]): its group gives a packet of a backlogged connection (at least
//! [`ExecParams::split_backlog`] of its packets inside the group) a key of its own, so the policy may run it on any
//! core, at the price of rescanning the overlap ([`Layer::overlap_bytes`], charged at the scan's mean cycles per
//! byte); the group after it takes each connection's packets back in order through a reorder buffer (the core that
//! finishes the oldest packet releases it and every finished one after it). Under the pipeline the scan is a stage
//! of its own; under MultiLayer Processing a layer group like the others; under run-to-completion every core runs
//! every layer of a packet, except that a packet of a backlogged connection (or of one with staged packets still
//! on their way) stops before the scan, whose group spreads it, and its verification follows in a third group in
//! the connection's order; every core serves the three groups, the later first. A mouse never leaves its core; an
//! elephant's work is spread over three. What it costs is what the runtime would pay: a hop per group, the
//! overlap, the lines read from another core's cache.
//!
//! ## What it leaves out
//!
//! Raw mode only (as fast as the dispatcher goes); no hyper-threading (the thesis' streams); `ph`'s late claim (the
//! groups claim in `next`); migration as thread-context transfer (the thesis' 65-cycle hardware migration): a hop
//! here is a software queue, as this project's runtime would do it. The layers' cost shares and code footprints are
//! measured on this engine ([`ExecParams::engine`]); their state shares are the thesis' estimates. The reorder buffer
//! after a stateless group is bounded ([`ExecParams::reorder_cap`]: while full, nothing more is spread, each such
//! packet counted in [`ExecRun::reorder_overflow`]; its high-water mark is reported), and the staged groups' queues
//! under run-to-completion never refuse (a refusal would block a core that also serves them). A hop's wake-up of a
//! parked worker is charged only for its user-space instructions (the kernel's side is not measured), and so are the
//! runtime's threads (no context switches); idle workers' spinning costs nobody a cycle.

use crate::cache::{CoreCounters, Hierarchy, STREAM_BASE};
use crate::engine::{Model, SimError};
use crate::handoff::Handoff;
use crate::input::SimInput;
use crate::params::{LINE, MAX_CORES, Params};
use crate::threads::{Host, RuntimeThreads};
use flowbundle_lab_core::prep::NO_FLOW;
use flowbundle_scheduler::{Desc, SchedOptions, Scheduler, build};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

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
    /// Every packet, as this engine's detection with rules loaded: it calls the rules for each packet (header-only
    /// rules match packets without payload), so the runtime's staged models hand every packet to the detection
    /// group (`flowbundle inspect --exec multilayer` skips only packets that made no rules call); but the layer's
    /// share of a packet's cost is the payload's: a packet without payload takes none of it ([`costs`]) and pays
    /// the hop and the layer's code.
    Rules,
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
    /// The layer keeps no state of a connection between its packets but the last [`Layer::overlap_bytes`] of its
    /// stream (detection's content scan, a pure function of the bytes: Verdú §4.2's stateless workload). A group of
    /// such layers spreads a backlogged connection's packets over its cores, and the group after it takes them back
    /// in the connection's order ([`ExecParams::split_backlog`]).
    #[serde(default)]
    pub stateless: bool,
    /// Bytes of the preceding TCP segment a visit rescans when it cannot continue the previous visit's scan state
    /// (its connection's packets are spread): the longest pattern − 1 (`flowbundle_rules::split::overlap`).
    #[serde(default)]
    pub overlap_bytes: u32,
}

/// The execution models' parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecParams {
    /// The engine's layers, in processing order.
    pub layers: Vec<Layer>,
    /// Layers per software-pipeline stage, in order (they sum to the number of layers).
    pub pipeline_stages: Vec<usize>,
    /// What moving a packet to the next group costs: the sender's and the receiver's instructions, and the lines
    /// the receiver reads from the sender's core (the record, and the script's copy of the payload where the next
    /// group reads it), measured on the real runtime ([`Handoff::measured`]); [`Handoff::none`] charges the
    /// policy's overheads and two lines instead.
    #[serde(default)]
    pub handoff: Handoff,
    /// What the runtime's reader and collector threads cost per packet, and the single-threaded loop, measured on
    /// the real runtime ([`RuntimeThreads::measured`]); charged where [`ExecConfig::host`] runs the runtime's
    /// threads. [`RuntimeThreads::none`]: no reader or collector, a free dispatcher, whatever the host.
    #[serde(default)]
    pub threads: RuntimeThreads,
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
    /// A connection with this many packets inside a stateless group ([`Layer::stateless`]) when its next packet
    /// arrives is backlogged: that packet goes to any core of the group (it rescans the overlap), and the group after
    /// it takes the connection's packets back in order. 0: never spread.
    #[serde(default)]
    pub split_backlog: usize,
    /// Packets a stateless group's reorder buffer may hold (done, waiting for an older packet of their connection):
    /// while it holds this many, the group spreads no more packets (each refusal counted in
    /// [`ExecRun::reorder_overflow`]), so it holds at most this plus the packets inside the group.
    #[serde(default = "default_reorder_cap")]
    pub reorder_cap: usize,
}

fn yes() -> bool {
    true
}

/// A group's queue: the reorder buffer holds at most as many packets as the queue in front of the group.
fn default_reorder_cap() -> usize {
    1024
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
        let base = ExecParams {
            handoff: Handoff::measured(),
            threads: RuntimeThreads::measured(),
            ..ExecParams::thesis()
        };
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
                stateless: false,
                overlap_bytes: 0,
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
            handoff: Handoff::none(),
            threads: RuntimeThreads::none(),
            queue: 1024,
            code_in_base: true,
            split_backlog: 0,
            reorder_cap: default_reorder_cap(),
        }
    }

    /// The same engine with detection cut in two ([`SplitScan`]): `scan`, the content scan, a stateless layer
    /// ([`Layer::stateless`]) of `split.scan_share` of detection's cost and code, then `detect`, the rest (candidate
    /// verification, flowbits, thresholds, the alert order), which keeps the connection's detection state. The
    /// pipeline gets a stage for each (decode | flow, stream, app | scan | detect). An error when there is no layer
    /// named `detect` or the split is out of range.
    pub fn split_scan(&self, split: &SplitScan) -> Result<ExecParams, String> {
        split.validate()?;
        let k = self
            .layers
            .iter()
            .position(|l| l.name == "detect")
            .ok_or("no detect layer to split")?;
        let mut p = self.clone();
        let det = p.layers[k].clone();
        let s = split.scan_share;
        let part = |x: u32, f: f64| ((f64::from(x) * f).round() as u32).max(1);
        let scan = Layer {
            name: "scan".into(),
            cost_share: det.cost_share * s,
            state_share: 0.0,
            code_lines: part(det.code_lines, split.scan_code_share),
            code_touch: part(det.code_touch, split.scan_code_share),
            stateless: true,
            overlap_bytes: split.overlap_bytes,
            ..det.clone()
        };
        let rest = Layer {
            cost_share: det.cost_share * (1.0 - s),
            code_lines: part(det.code_lines, 1.0 - split.scan_code_share),
            code_touch: part(det.code_touch, 1.0 - split.scan_code_share),
            // Verification reads the candidates' bytes, not the whole payload again.
            reads_payload: false,
            ..det
        };
        p.layers[k] = rest;
        p.layers.insert(k, scan);
        // The pipeline stage that held detect holds the scan, and detect gets the next stage.
        let mut at = 0;
        let mut stages = Vec::with_capacity(p.pipeline_stages.len() + 1);
        for &n in &self.pipeline_stages {
            if (at..at + n).contains(&k) {
                // Layers `at..=k` (those before detect in its stage, and the scan), then detect and the rest.
                stages.push(k - at + 1);
                stages.push(at + n - k);
            } else {
                stages.push(n);
            }
            at += n;
        }
        p.pipeline_stages = stages;
        p.split_backlog = split.backlog;
        p.validate()?;
        Ok(p)
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
        if self.queue == 0 || self.reorder_cap == 0 {
            return Err("queue and reorder buffer ≥ 1 packet".into());
        }
        self.handoff.validate()?;
        self.threads.validate()
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

/// Detection cut into a stateless content scan and the stateful rest ([`ExecParams::split_scan`]): what lets one
/// connection's rule matching run on several cores at once (`flowbundle_rules::split` does it for one stream's
/// content matching on real threads: chunks with an overlap, hits merged in stream order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitScan {
    /// Share of detection's instructions spent in the content scan (the prefilter's pass over the payload).
    pub scan_share: f64,
    /// Share of detection's code (footprint and lines per visit) in the scan.
    pub scan_code_share: f64,
    /// Bytes a spread packet rescans before its own ([`Layer::overlap_bytes`]).
    pub overlap_bytes: u32,
    /// [`ExecParams::split_backlog`].
    pub backlog: usize,
}

impl SplitScan {
    /// Measured on this engine: the scan's share of the detect layer's instructions per visit and of its code
    /// footprint, from the same callgrind run as the layers ([`MEASURED_LAYERS`], `scripts/exec-layers`: the
    /// prefilter's code, `crates/rules/src/prefilter.rs` with what it calls and what is inlined from it, against
    /// the rules crate's). The overlap is the prefilter's cap (a pattern is matched on at most its last 255 bytes,
    /// so no set needs more than 254: `flowbundle_rules::split`), the most a chunk ever rescans. The backlog is
    /// `lfb-bounded`'s default bound (16 packets, `SchedOptions::lfb_bound`): a connection with as many packets
    /// waiting as that policy lets one worker run in one stint is the one to split.
    pub fn measured() -> Self {
        let m = crate::layers::LayerMeasures::from_json(MEASURED_LAYERS).ok();
        let (share, code) = m.as_ref().map_or((0.0, 0.0), |m| m.scan_shares());
        SplitScan {
            scan_share: share,
            scan_code_share: code,
            overlap_bytes: 254,
            backlog: SchedOptions::default().lfb_bound,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        let share = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
        if !share(self.scan_share) || !share(self.scan_code_share) {
            return Err("scan shares must be between 0 and 1".into());
        }
        if self.overlap_bytes > 1 << 16 {
            return Err("overlap above 64 KiB".into());
        }
        Ok(())
    }
}

/// Whether packet `i` visits layer `l`.
fn visits(l: &Layer, input: &SimInput, i: usize) -> bool {
    match l.visits {
        Visits::All | Visits::Rules => true,
        Visits::Tcp => input.proto.get(i) == Some(&6),
        Visits::Payload => input.payload_len.get(i).is_some_and(|&p| p > 0),
    }
}

/// Whether packet `i` takes a share of its cost in layer `l` (what it visits, except [`Visits::Rules`] for a packet
/// without payload).
fn costs(l: &Layer, input: &SimInput, i: usize) -> bool {
    match l.visits {
        Visits::Rules => input.payload_len.get(i).is_some_and(|&p| p > 0),
        _ => visits(l, input, i),
    }
}

/// One group of cores: the layers it runs and its cores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupInfo {
    pub layers: Vec<String>,
    pub cores: usize,
    /// Its cores serve other groups too (run-to-completion with a split scan).
    #[serde(default)]
    pub shared: bool,
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
    /// Share of the packets a stateless group spread over its cores (their connection was backlogged there), the
    /// overlap rescans' cycles per packet, and the most packets ever waiting, done, for an older packet of their
    /// connection to leave the stateless group (the reorder buffer's high-water mark). 0 without a stateless layer.
    #[serde(default)]
    pub spread_share: f64,
    #[serde(default)]
    pub overlap_per_packet: f64,
    #[serde(default)]
    pub parked_max: u64,
    /// Packets of a backlogged connection left unspread because the reorder buffer held
    /// [`ExecParams::reorder_cap`] packets.
    #[serde(default)]
    pub reorder_overflow: u64,
    /// Lines a hop moved from the sender's core, per packet (the record and the script's copied bytes).
    #[serde(default)]
    pub hop_lines_per_packet: f64,
    /// The machine's cores ([`ExecConfig::host`]): `cores` workers, and the reader and collector where the runtime's
    /// threads are modelled. 0 in reports written before the threads were.
    #[serde(default)]
    pub machine_cores: usize,
    /// Which threads ran: `dedicated` (workers only, a free dispatcher), `single loop` (`--threads 1`), `runtime`
    /// (a reader and a collector besides the workers).
    #[serde(default)]
    pub threads: String,
    /// The reader's and the collector's cycles per packet that ran on the workers' cores (0 when they had cores of
    /// their own or were not modelled), and the reader's cycles per packet dispatched (its serial rate).
    #[serde(default)]
    pub aux_on_workers_per_packet: f64,
    #[serde(default)]
    pub reader_cycles_per_packet: f64,
    /// The runtime's fixed time for such a run, in cycles ([`crate::threads::ThreadsCpu::loop_fixed_ns`] and the
    /// others, measured as the processing time of a run of one packet): what the real run spends in its processing
    /// time whatever its packets. Not in [`ExecRun::elapsed_cycles`] nor [`ExecRun::pps`] (the packets' rate); 0
    /// when not measured or not the runtime's threads.
    #[serde(default)]
    pub fixed_cycles: u64,
    /// Packets per second over the elapsed cycles plus the fixed time: the rate `flowbundle inspect --summary`
    /// reports for such a run (its processing time holds the fixed time), what calibration compares.
    #[serde(default)]
    pub run_pps: f64,
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
///
/// The boundary in front of a layer that reads the payload (detection) merges last: it is the one cut the runtime's
/// staged models make (a flow group hands each packet's script to a detection group), so with two cores both
/// staged models run what `flowbundle inspect --threads 2 --exec pipeline|multilayer` runs.
fn merge(
    mut groups: Vec<std::ops::Range<usize>>,
    layer_w: &[f64],
    cores: usize,
    layers: &[Layer],
) -> Vec<std::ops::Range<usize>> {
    let w = |r: &std::ops::Range<usize>| layer_w[r.clone()].iter().sum::<f64>();
    while groups.len() > cores.max(1) {
        let cut = |a: usize| {
            layers
                .get(groups[a + 1].start)
                .is_some_and(|l| l.reads_payload)
        };
        let inner = (0..groups.len() - 1).any(|a| !cut(a));
        let k = (0..groups.len() - 1)
            .filter(|&a| !inner || !cut(a))
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
    /// Releasing packet `.0`, already finished in its stateless group, into group `.1` in its connection's order.
    Releasing(u32, usize),
    /// Placed its packet in the next group; paying the dispatch cost.
    Sending,
    /// Running the reader's or the collector's work (the runtime's threads on the workers' cores).
    Aux,
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
    /// Per core: the groups it serves, each with its worker index in that group's policy, first served first (one
    /// group, except under run-to-completion with a split scan, where every core serves all three).
    serve: Vec<Vec<(usize, usize)>>,
    /// Per core: the group and worker index of the packet it holds.
    cur: Vec<(usize, usize)>,
    /// Run-to-completion with a split scan ([`Staging`]).
    staging: Option<Staging>,
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
    /// Per group: whether it runs only stateless layers (it may spread a connection's packets).
    order_free: Vec<bool>,
    /// Per group: whether a layer of it reads the payload (a hop into it carries the packet's script).
    reads_payload: Vec<bool>,
    /// Per order-free group and flow (empty for other groups): packets inside, spread packets inside, and the ids
    /// that entered, in order, not yet released to the next group; whether a core is releasing the flow.
    inside_flow: Vec<Vec<u32>>,
    spread_inside: Vec<Vec<u32>>,
    fifo: Vec<Vec<VecDeque<u32>>>,
    releasing: Vec<Vec<bool>>,
    /// Per packet: [`SPREAD`], [`OVERLAP`], [`SCANNED`].
    flags: Vec<u8>,
    /// Per core: the (group, flow) it is releasing in order.
    rel: Vec<Option<(usize, u32)>>,
    /// Cycles a stateless layer spends per payload byte (for the overlap rescans).
    per_byte: Vec<f64>,
    spread: u64,
    overlap_cycles: u64,
    parked: u64,
    parked_max: u64,
    /// Packets not spread because the reorder buffer was full.
    reorder_overflow: u64,
    /// Lines moved from a sender's core by hops.
    hop_lines: u64,
    /// The dispatcher's cycles per packet: the reader's where the runtime's threads are modelled, else the
    /// policy's `dispatch` overhead.
    dispatch_every: u64,
    /// What a worker pays on taking a packet from the dispatcher beyond its layers: the policy's `worker` overhead,
    /// the runtime's measured worker cycles (negative: fewer than the single-threaded engine's), or the
    /// single-threaded loop's.
    first_take: i64,
    /// The reader's and the collector's cycles per packet when they run on the workers' cores.
    steal: Option<(u64, u64)>,
    /// Per core: cycles of the reader's or the collector's work it owes (taken from its next processing).
    debt: Vec<u64>,
    aux_cycles: u64,
}

/// The packet went to its stateless group under a key of its own (any core).
const SPREAD: u8 = 1;
/// It rescans the overlap before its payload (an earlier packet of its connection was spread and may still run).
const OVERLAP: u8 = 2;
/// Done in its stateless group, waiting to be released in its connection's order.
const SCANNED: u8 = 4;
/// Under run-to-completion with a split scan: the packet's scan and what follows it leave its core.
const STAGED: u8 = 8;
/// Its connection was backlogged, but the reorder buffer was full: not spread (never stored in `flags`).
const DENIED: u8 = 16;

/// Run-to-completion with a split scan: group 0 runs every layer of a packet, except that a packet of a backlogged
/// connection stops before the scan, which group 1 (the stateless scan) spreads over every core, and group 2 (the
/// rest of detection) runs in the connection's order. Every core serves all three groups, the later first.
struct Staging {
    /// The scan layer's index: a staged packet runs the layers before it in group 0.
    scan: usize,
    /// Per flow: packets inside group 0, and staged packets not yet finished.
    inside: Vec<u32>,
    staged: Vec<u32>,
}

impl Run<'_> {
    fn schedule(&mut self, at: u64, who: u32) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, who)));
    }

    /// The first group at or after `from` that packet `i` visits: every group under run-to-completion and the
    /// pipeline, the groups with a layer it needs under MultiLayer Processing.
    fn next_group(&self, i: usize, from: usize) -> Option<usize> {
        if self.staging.is_some() && from == 1 && self.flags.get(i).is_none_or(|&f| f & STAGED == 0)
        {
            // Run to completion: done in group 0.
            return None;
        }
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
        let (d, flags) = self.desc_for(g, d.id);
        match self.groups[g].sched.dispatch(d) {
            Ok(_) => {
                self.enter(g, d.id, flags);
                self.next_pkt += 1;
                self.schedule(self.now + self.dispatch_every, DISPATCHER);
                if let Some((reader, _)) = self.steal {
                    self.place_aux(reader);
                }
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
        let mut got = None;
        for k in 0..self.serve[c].len() {
            let (g, w) = self.serve[c][k];
            if self.groups[g].inside > self.groups[g].held
                && let Some(d) = self.groups[g].sched.next(w)
            {
                got = Some((g, w, d));
                break;
            }
        }
        let Some((g, w, d)) = got else {
            return false;
        };
        self.cur[c] = (g, w);
        // The groups claim in `next` (no late claim): this always holds the bundle.
        let _ = self.groups[g].sched.claim(w, &d);
        self.groups[g].held += 1;
        let i = d.id as usize;
        let prev = self.last_core.get(i).copied().unwrap_or(0);
        let handoff = &self.exec_params.handoff;
        // A packet that comes from another group into one that reads the payload crosses what the runtime's staged
        // models cut (a script with the rules' bytes): its receiver pays the measured hand-off (which includes this
        // group's `next`/`done`); any other packet the policy's overhead. Then the lines the sender wrote, read from
        // its core.
        let scripted = prev > 0 && handoff.is_measured() && self.reads_payload[g];
        // A packet straight from the dispatcher: what the runtime's worker (or the single-threaded loop) pays
        // beyond the engine's own work; negative when the reader did part of it (the decode): a credit.
        let mut credit = 0u64;
        let mut t = if scripted {
            u64::from(handoff.receive_cycles())
        } else if prev == 0 {
            credit = self.first_take.min(0).unsigned_abs();
            self.first_take.max(0) as u64
        } else {
            u64::from(self.params.overheads.worker)
        };
        if prev > 0 && usize::from(prev - 1) != c {
            let payload = self.input.payload_len.get(i).copied().unwrap_or(0);
            let lines = handoff.lines(payload, self.reads_payload[g]);
            t += self.cache.transfer(c, usize::from(prev - 1), lines);
            self.hop_lines += lines as u64;
        }
        let line0 = self.model.state.get(i).copied().unwrap_or(0);
        let flow = self.input.flows.get(i).copied().unwrap_or(NO_FLOW);
        if self.order_free[g] {
            // A stateless group may run a connection's packets in any order: the next group's check stands.
        } else if let Some(last) = self.flow_started[g].get_mut(flow as usize) {
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
        let mut layers = self.groups[g].layers.clone();
        if g == 0
            && let Some(st) = &mut self.staging
        {
            // Stage the packet when its connection is backlogged in group 0, or still has staged packets on their
            // way (its detection must follow theirs).
            let f = flow as usize;
            let scans = visits(&self.exec_params.layers[st.scan], self.input, i);
            if scans
                && let Some(&inside) = st.inside.get(f)
                && (inside as usize >= self.exec_params.split_backlog || st.staged[f] > 0)
            {
                st.staged[f] += 1;
                if let Some(x) = self.flags.get_mut(i) {
                    *x |= STAGED;
                }
                layers = layers.start..st.scan;
            }
        }
        for l in layers {
            let cyc = self.plan.layer_cycles[l][i];
            let layer = &self.exec_params.layers[l];
            // A packet that only passes through (no payload for a [`Visits::Rules`] layer) pays the hop alone.
            if !costs(layer, self.input, i) {
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
            if layer.stateless
                && self.flags.get(i).is_some_and(|&f| f & OVERLAP != 0)
                && self.input.proto.get(i) == Some(&6)
            {
                let over = (f64::from(layer.overlap_bytes) * self.per_byte[l]) as u64;
                t += over;
                self.overlap_cycles += over;
                stream += (layer.overlap_bytes as usize).div_ceil(LINE);
            }
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
        let t = t.saturating_sub(credit);
        // The reader's or the collector's work this core owes runs first (not counted busy for the group).
        let owed = std::mem::take(&mut self.debt[c]);
        self.workers[c] = Worker::Busy(d);
        self.started[c] = self.now + owed;
        self.schedule(self.now + owed + t, c as u32);
        true
    }

    /// `cycles` of the reader's or the collector's work, on the workers' cores: an idle core runs it at once; else
    /// the core owing the least takes it from its current or next processing (the OS time-shares the cores).
    fn place_aux(&mut self, cycles: u64) {
        if cycles == 0 {
            return;
        }
        self.aux_cycles += cycles;
        if let Some(c) = (0..self.workers.len())
            .find(|&c| matches!(self.workers[c], Worker::Idle) && self.rel[c].is_none())
        {
            self.workers[c] = Worker::Aux;
            self.schedule(self.now + cycles, c as u32);
            return;
        }
        let c = (0..self.debt.len())
            .min_by_key(|&c| self.debt[c])
            .unwrap_or(0);
        self.debt[c] += cycles;
    }

    /// Core `c`'s event fired while it owes the reader or the collector: it pays first, and the event comes again.
    fn pay_debt(&mut self, c: usize) -> bool {
        let owed = std::mem::take(&mut self.debt[c]);
        if owed == 0 {
            return false;
        }
        if matches!(self.workers[c], Worker::Busy(_)) {
            self.started[c] += owed;
        }
        self.schedule(self.now + owed, c as u32);
        true
    }

    fn finish(&mut self, c: usize, d: Desc, g: usize) {
        let (_, w) = self.cur[c];
        if g == 0
            && let Some(st) = &mut self.staging
            && let Some(n) = st.inside.get_mut(
                self.input
                    .flows
                    .get(d.id as usize)
                    .copied()
                    .unwrap_or(NO_FLOW) as usize,
            )
        {
            *n -= 1;
        }
        let grp = &mut self.groups[g];
        grp.sched.done(w, d);
        grp.inside -= 1;
        grp.held -= 1;
        grp.info.packets += 1;
        // A place freed in group g: a blocked sender into g (or the dispatcher, for the first group) may go on.
        for k in 0..self.workers.len() {
            if let Worker::Blocked(_, to) | Worker::Releasing(_, to) = self.workers[k]
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
        let (g, _) = self.cur[c];
        if matches!(
            self.workers[c],
            Worker::Busy(_) | Worker::Sending | Worker::Aux
        ) && self.pay_debt(c)
        {
            return;
        }
        match self.workers[c] {
            Worker::Idle => {}
            Worker::Aux => {
                self.workers[c] = Worker::Idle;
                self.after(c);
            }
            Worker::Busy(d) => {
                self.groups[g].info.busy_cycles += self.now - self.started[c];
                let i = d.id as usize;
                if self.order_free[g] {
                    self.leave_stateless(c, g, d);
                    return;
                }
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
            Worker::Blocked(..) | Worker::Releasing(..) => self.place(c),
            Worker::Sending => self.after(c),
        }
    }

    /// A blocked core tries to place its packet in the next group.
    fn place(&mut self, c: usize) {
        let (held, id, h) = match self.workers[c] {
            Worker::Blocked(d, h) => (Some(d), d.id, h),
            Worker::Releasing(id, h) => (None, id, h),
            _ => return,
        };
        let (g, _) = self.cur[c];
        let (d, flags) = self.desc_for(h, id);
        match self.groups[h].sched.dispatch(d) {
            Ok(_) => {
                self.enter(h, id, flags);
                self.hops += 1;
                self.groups[g].info.blocked_cycles += self.now - self.blocked_since[c];
                if let Some(d) = held {
                    self.finish(c, d, g);
                }
                self.workers[c] = Worker::Sending;
                let handoff = &self.exec_params.handoff;
                let send = if handoff.is_measured() && self.reads_payload[h] {
                    handoff.send_cycles(self.params.machine.clock_ghz)
                } else {
                    self.params.overheads.dispatch
                };
                self.schedule(self.now + u64::from(send), c as u32);
            }
            Err(_) => self.groups[g].info.refusals += 1,
        }
    }

    /// Core `c` is free: go on releasing its connection, or take the next packet of its group, or go idle.
    fn after(&mut self, c: usize) {
        if self.rel[c].is_some() {
            self.release_next(c);
            return;
        }
        self.workers[c] = Worker::Idle;
        let _ = self.take(c);
    }

    /// The descriptor packet `id` enters group `h` with, and its flags: its own, unless `h` is stateless and its
    /// connection is backlogged there (then a key of its own, so the policy may give it to any core).
    fn desc_for(&self, h: usize, id: u32) -> (Desc, u8) {
        let i = id as usize;
        let d = self.input.descs[i];
        let backlog = self.exec_params.split_backlog;
        if !self.order_free[h] || backlog == 0 {
            return (d, 0);
        }
        let f = self.input.flows.get(i).copied().unwrap_or(NO_FLOW);
        let Some(&n) = self.inside_flow[h].get(f as usize) else {
            return (d, 0);
        };
        let mut flags = 0;
        let mut d = d;
        if n as usize >= backlog && self.parked as usize >= self.exec_params.reorder_cap {
            // The reorder buffer is full: the packet stays with its connection's order (counted on entry).
            flags |= DENIED;
        } else if n as usize >= backlog {
            flags |= SPREAD;
            // A key of its own: a multiplicative hash of the packet number (the policies key on fid, conn or rss).
            let k = id.wrapping_mul(0x9E37_79B1) ^ 0x5bd1_e995;
            d.fid = (k >> 16) as u16;
            d.conn = k;
            d.rss = k;
        }
        if flags & SPREAD != 0 || self.spread_inside[h][f as usize] > 0 {
            flags |= OVERLAP;
        }
        (d, flags)
    }

    /// Packet `id` was placed in group `h` with `flags`.
    fn enter(&mut self, h: usize, id: u32, flags: u8) {
        self.groups[h].inside += 1;
        if h == 0
            && let Some(st) = &mut self.staging
            && let Some(n) = st.inside.get_mut(
                self.input
                    .flows
                    .get(id as usize)
                    .copied()
                    .unwrap_or(NO_FLOW) as usize,
            )
        {
            *n += 1;
        }
        if !self.order_free[h] {
            return;
        }
        let i = id as usize;
        self.reorder_overflow += u64::from(flags & DENIED != 0);
        let flags = flags & !DENIED;
        if let Some(fl) = self.flags.get_mut(i) {
            *fl = (*fl & STAGED) | flags;
        }
        self.spread += u64::from(flags & SPREAD);
        let f = self.input.flows.get(i).copied().unwrap_or(NO_FLOW) as usize;
        if let Some(n) = self.inside_flow[h].get_mut(f) {
            *n += 1;
            self.spread_inside[h][f] += u32::from(flags & SPREAD);
            self.fifo[h][f].push_back(id);
        }
    }

    /// Core `c` finished packet `d` in stateless group `g`: it leaves the group; the connection's packets that are
    /// done there go on to their next group in order, released by the core that finished the oldest of them.
    fn leave_stateless(&mut self, c: usize, g: usize, d: Desc) {
        self.finish(c, d, g);
        let i = d.id as usize;
        let f = self.input.flows.get(i).copied().unwrap_or(NO_FLOW) as usize;
        if self.inside_flow[g].get(f).is_none() {
            self.forward(c, g, d.id);
            return;
        }
        self.inside_flow[g][f] -= 1;
        let fl = self.flags.get(i).copied().unwrap_or(0);
        self.spread_inside[g][f] -= u32::from(fl & SPREAD);
        if let Some(x) = self.flags.get_mut(i) {
            *x |= SCANNED;
        }
        self.parked += 1;
        self.parked_max = self.parked_max.max(self.parked);
        if !self.releasing[g][f] {
            self.releasing[g][f] = true;
            self.rel[c] = Some((g, f as u32));
        }
        self.after(c);
    }

    /// Core `c` releases the next packet of the connection it is releasing, if that one is done; else it stops.
    fn release_next(&mut self, c: usize) {
        let Some((g, f)) = self.rel[c] else {
            return;
        };
        let f = f as usize;
        let head = self.fifo[g][f].front().copied();
        match head {
            Some(id)
                if self
                    .flags
                    .get(id as usize)
                    .is_some_and(|&x| x & SCANNED != 0) =>
            {
                self.fifo[g][f].pop_front();
                self.parked -= 1;
                self.forward(c, g, id);
            }
            _ => {
                self.releasing[g][f] = false;
                self.rel[c] = None;
                self.workers[c] = Worker::Idle;
                let _ = self.take(c);
            }
        }
    }

    /// Packet `id`, done in stateless group `g`, goes on from core `c` to its next group, or leaves the system.
    fn forward(&mut self, c: usize, g: usize, id: u32) {
        match self.next_group(id as usize, g + 1) {
            Some(h) => {
                self.workers[c] = Worker::Releasing(id, h);
                self.blocked_since[c] = self.now;
                self.place(c);
            }
            None => {
                self.complete(self.input.descs[id as usize]);
                self.after(c);
            }
        }
    }

    fn complete(&mut self, d: Desc) {
        self.completed += 1;
        self.last_end = self.now;
        if let Some((_, collector)) = self.steal {
            self.place_aux(collector);
        }
        let i = d.id as usize;
        if let Some(st) = &mut self.staging
            && self.flags.get(i).is_some_and(|&x| x & STAGED != 0)
            && let Some(n) = st
                .staged
                .get_mut(self.input.flows.get(i).copied().unwrap_or(NO_FLOW) as usize)
        {
            *n -= 1;
        }
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
            if self.serve[c]
                .iter()
                .any(|&(g, _)| self.groups[g].inside > self.groups[g].held)
            {
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
    /// Expected cycles of each group (after neighbouring layers merged), replacing the cost model's estimate when
    /// cores are given to groups: [`measured_weights`] from a first run. `None`, or a length that does not match the
    /// groups: the estimate.
    pub group_weights: Option<Vec<f64>>,
    /// Where the runtime's reader and collector run ([`Host`]; `cores` is the workers). Without a measurement of
    /// those threads ([`ExecParams::threads`]) every host is [`Host::Dedicated`].
    pub host: Host,
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
    let threads = &exec_params.threads;
    let runtime = cfg.host.is_runtime() && threads.is_measured();
    let machine_cores = cfg.host.cores(cores);
    if runtime && machine_cores < cores {
        return Err(SimError::Params(format!(
            "{cores} workers on {machine_cores} cores: the machine needs a core per worker"
        )));
    }
    // The runtime's threads: one worker is the single-threaded loop (no reader, no collector, no policy: the loop's
    // own cycles per packet); more run a reader, serial at its cycles per packet, and a collector, on the cores the
    // workers leave them (none: on the workers' cores; one: both on it; two: one each).
    let over = &params.overheads;
    // The single-threaded loop's mean cycles per packet (the engine's as measured, its code stalls included, and the
    // loop's own), which the threads' measured shares are of.
    let loop_per_packet = if model.base.is_empty() {
        0.0
    } else {
        model.base.iter().map(|&b| f64::from(b)).sum::<f64>() / model.base.len() as f64
            + threads.loop_cycles() as f64
    };
    let tc = threads.cycles_for(loop_per_packet);
    // The runtime's fixed time for this many workers, staged or not (nothing without the runtime's threads).
    let fixed = if runtime {
        tc.fixed.of(cores, exec != Exec::Rtc)
    } else {
        0
    };
    let (dispatch_every, first_take, steal, threads_name) = if !runtime {
        (
            u64::from(over.dispatch),
            i64::from(over.worker),
            None,
            "dedicated",
        )
    } else if cores == 1 {
        (
            u64::from(over.dispatch),
            tc.looped as i64,
            None,
            "single loop",
        )
    } else {
        let (r, c) = (tc.reader, tc.collector);
        let (every, steal) = match machine_cores - cores {
            0 => (r, Some((r, c))),
            1 => (r + c, None),
            _ => (r.max(c), None),
        };
        (every.max(1), tc.worker, steal, "runtime")
    };
    if !(cfg.base_scale.is_finite() && (0.0..=1.0).contains(&cfg.base_scale)) {
        return Err(SimError::Params(format!(
            "base scale {} not in 0..=1",
            cfg.base_scale
        )));
    }
    exec_params.validate().map_err(SimError::Params)?;
    // The runtime's code: with rules loaded the engine calls them for every packet (header-only rules), so its
    // staged models hand every packet to detection, and identification runs on the flow workers for every packet:
    // a layer the thesis' model visits with payload only is visited by every packet, costing only with payload
    // ([`Visits::Rules`]). Without the runtime's threads (the thesis' and ANCS'10's dedicated cores), a packet
    // without payload skips them.
    let every_packet;
    let exec_params = if runtime
        && exec_params
            .layers
            .iter()
            .any(|l| l.visits == Visits::Payload)
    {
        let mut p = exec_params.clone();
        for l in p.layers.iter_mut().filter(|l| l.visits == Visits::Payload) {
            l.visits = Visits::Rules;
        }
        every_packet = p;
        &every_packet
    } else {
        exec_params
    };
    // The hand-off measured natively (its time on a CPU, kernel and cycles per instruction included) replaces its
    // instruction counts where the runtime's threads are modelled: both sides scaled so that a hop costs the
    // measured share of the loop's cycles, in the counts' proportion between sender and receiver.
    let rescaled;
    let exec_params = match tc.handoff {
        Some(hop) if runtime && cores >= 2 && exec_params.handoff.is_measured() => {
            let h = &exec_params.handoff;
            let counted = (h.send_instructions + h.receive_instructions) * h.cycles_per_instruction;
            let mut p = exec_params.clone();
            if counted > 0.0 {
                let k = hop as f64 / counted;
                p.handoff.send_instructions *= k;
                p.handoff.receive_instructions *= k;
            }
            rescaled = p;
            &rescaled
        }
        _ => exec_params,
    };
    let n = input.len();
    if model.base.len() != n {
        return Err(SimError::Input(
            "the model was built for another input".into(),
        ));
    }
    let layers = &exec_params.layers;
    // What a visit costs besides the layer's cycles, for the core allocation: the worker's overhead and the hop's
    // lines from a core of the same socket.
    let handoff = &exec_params.handoff;
    let hop_cost = f64::from(params.overheads.worker)
        + handoff.record_lines * f64::from(params.machine.lat.xfer_socket);
    // Per-packet layer cycles: the base cost split by share over the layers the packet visits.
    let mut layer_cycles = vec![vec![0u32; n]; layers.len()];
    let mut layer_w = vec![0f64; layers.len()];
    for (i, &base) in model.base.iter().enumerate() {
        let total: f64 = layers
            .iter()
            .filter(|l| costs(l, input, i))
            .map(|l| l.cost_share)
            .sum();
        if total <= 0.0 {
            continue;
        }
        let base = f64::from(base) * cfg.base_scale;
        for (k, (l, cycles)) in layers.iter().zip(layer_cycles.iter_mut()).enumerate() {
            if visits(l, input, i) {
                let c = if costs(l, input, i) {
                    base * l.cost_share / total
                } else {
                    0.0
                };
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
    // Run-to-completion with a split scan: a stateless layer with a stateful one after it, and spreading on.
    let staged_scan = (exec == Exec::Rtc && exec_params.split_backlog > 0)
        .then(|| layers.iter().position(|l| l.stateless))
        .flatten()
        .filter(|&k| k > 0 && k + 1 < layers.len());
    let (ranges, per, shared) = match staged_scan {
        Some(k) => (
            vec![0..layers.len(), k..k + 1, k + 1..layers.len()],
            vec![cores; 3],
            true,
        ),
        None => {
            let ranges = merge(exec_params.groups(exec), &layer_w, cores, layers);
            let weights: Vec<f64> = match &cfg.group_weights {
                Some(w)
                    if w.len() == ranges.len() && w.iter().all(|x| x.is_finite() && *x >= 0.0) =>
                {
                    w.clone()
                }
                _ => ranges
                    .iter()
                    .map(|r| layer_w[r.clone()].iter().sum())
                    .collect(),
            };
            let per = allocate(&weights, cores);
            (ranges, per, false)
        }
    };
    let mut groups = Vec::with_capacity(ranges.len());
    let mut serve: Vec<Vec<(usize, usize)>> = vec![Vec::new(); cores];
    let opts = SchedOptions {
        capacity: exec_params.queue,
        ph_late_claim: false,
        ..sched.clone()
    };
    let mut next_core = 0;
    for (g, (r, &k)) in ranges.iter().zip(&per).enumerate() {
        if shared {
            // Every core serves every group, the later groups first (they drain what group 0 staged).
            for (w, s) in serve.iter_mut().enumerate() {
                s.insert(0, (g, w));
            }
        } else {
            for w in 0..k {
                serve[next_core].push((g, w));
                next_core += 1;
            }
        }
        // The staged groups' queues take what group 0 hands them without refusal: a refusal would block a core
        // that also serves them.
        let capacity = if shared && g > 0 {
            exec_params.queue.max(n)
        } else {
            exec_params.queue
        };
        groups.push(Group {
            sched: build(
                scheduler,
                k,
                &SchedOptions {
                    capacity,
                    ..opts.clone()
                },
            )?,
            layers: r.clone(),
            inside: 0,
            held: 0,
            info: GroupInfo {
                layers: r.clone().map(|l| layers[l].name.clone()).collect(),
                cores: k,
                shared,
                packets: 0,
                busy_cycles: 0,
                blocked_cycles: 0,
                refusals: 0,
            },
        });
    }
    // A stateless layer's cycles per payload byte over the trace: what rescanning the overlap costs. Conservative:
    // the mean over its visits includes each visit's fixed cost, which a rescan does not pay again.
    let per_byte: Vec<f64> = (0..layers.len())
        .map(|l| {
            let (mut cyc, mut bytes) = (0f64, 0f64);
            for (i, &c) in layer_cycles[l].iter().enumerate() {
                if c > 0 {
                    cyc += f64::from(c);
                    bytes += f64::from(input.payload_len.get(i).copied().unwrap_or(0));
                }
            }
            if bytes > 0.0 { cyc / bytes } else { 0.0 }
        })
        .collect();
    let order_free: Vec<bool> = ranges
        .iter()
        .map(|r| layers[r.clone()].iter().all(|l| l.stateless))
        .collect();
    let per_flow = |free: bool, n: usize| if free { n } else { 0 };
    let flows = input.flow_count as usize;
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
        cur: serve
            .iter()
            .map(|s| s.last().copied().unwrap_or((0, 0)))
            .collect(),
        serve,
        staging: staged_scan.map(|scan| Staging {
            scan,
            inside: vec![0; input.flow_count as usize],
            staged: vec![0; input.flow_count as usize],
        }),
        workers: vec![Worker::Idle; cores],
        started: vec![0; cores],
        blocked_since: vec![0; cores],
        cache: Hierarchy::new(&params.machine, cores, model.state_space),
        every_group: exec != Exec::Multilayer && staged_scan.is_none(),
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
        inside_flow: order_free
            .iter()
            .map(|&f| vec![0; per_flow(f, flows)])
            .collect(),
        spread_inside: order_free
            .iter()
            .map(|&f| vec![0; per_flow(f, flows)])
            .collect(),
        fifo: order_free
            .iter()
            .map(|&f| vec![VecDeque::new(); per_flow(f, flows)])
            .collect(),
        releasing: order_free
            .iter()
            .map(|&f| vec![false; per_flow(f, flows)])
            .collect(),
        flags: if order_free.contains(&true) || staged_scan.is_some() {
            vec![0; n]
        } else {
            Vec::new()
        },
        reads_payload: ranges
            .iter()
            .map(|r| layers[r.clone()].iter().any(|l| l.reads_payload))
            .collect(),
        order_free,
        rel: vec![None; cores],
        per_byte,
        spread: 0,
        overlap_cycles: 0,
        parked: 0,
        parked_max: 0,
        reorder_overflow: 0,
        hop_lines: 0,
        dispatch_every,
        first_take,
        steal,
        debt: vec![0; cores],
        aux_cycles: 0,
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
        spread_share: run.spread as f64 / pk,
        overlap_per_packet: run.overlap_cycles as f64 / pk,
        parked_max: run.parked_max,
        reorder_overflow: run.reorder_overflow,
        hop_lines_per_packet: run.hop_lines as f64 / pk,
        machine_cores,
        threads: threads_name.into(),
        aux_on_workers_per_packet: run.aux_cycles as f64 / pk,
        reader_cycles_per_packet: if threads_name == "runtime" {
            tc.reader as f64
        } else {
            0.0
        },
        fixed_cycles: fixed,
        run_pps: n as f64 / ((elapsed + fixed) as f64 / (params.machine.clock_ghz * 1e9)),
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
        group_weights: None,
        host: Host::Dedicated,
    };
    // Plain run-to-completion: nothing staged or spread.
    let plain = ExecParams {
        split_backlog: 0,
        ..exec_params.clone()
    };
    let r = simulate_exec(input, model, params, &plain, &cfg)?;
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
            "| model | policy | cores | Mpps | I$ miss | D$ miss | code stall/pkt | hops/pkt | refusals/kpkt | blocked | spread (overlap cycles/pkt, reorder buffer max, not spread: buffer full) | hop lines/pkt | reordered | finished out of order | groups (cores) |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for r in &self.runs {
            let groups: Vec<String> = r
                .groups
                .iter()
                .map(|g| {
                    let shared = if g.shared { " shared" } else { "" };
                    format!("{} ({}{shared})", g.layers.join("+"), g.cores)
                })
                .collect();
            s.push_str(&format!(
                "| {} | {} | {} | {:.3} | {:.1}% | {:.1}% | {:.0} | {:.2} | {:.1} | {:.1}% | {:.1}% ({:.0}, {}, {}) | {:.1} | {} | {} | {} |\n",
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
                r.spread_share * 100.0,
                r.overlap_per_packet,
                r.parked_max,
                r.reorder_overflow,
                r.hop_lines_per_packet,
                r.reordered,
                r.completed_out_of_order,
                groups.join(", ")
            ));
        }
        s
    }
}

impl ExecReport {
    /// One line per core count for `scheduler`: each model's throughput, the best over run-to-completion, I- and
    /// D-cache miss rates, hops per packet and blocked share per model, and the multilayer groups (what
    /// BENCHMARKS.md, "Execution models", records).
    pub fn by_cores(&self, scheduler: &str) -> String {
        let mut cores: Vec<usize> = self
            .runs
            .iter()
            .filter(|r| r.scheduler == scheduler)
            .map(|r| r.cores)
            .collect();
        cores.sort_unstable();
        cores.dedup();
        let mut s = String::from(
            "| cores | rtc Mpps | pipeline Mpps | multilayer Mpps | best / rtc | I$ miss rtc / pipeline / multilayer | D$ miss rtc / pipeline / multilayer | hops/pkt rtc / pipeline / multilayer | blocked pipeline / multilayer | multilayer groups (cores) |\n\
             |---|---|---|---|---|---|---|---|---|---|\n",
        );
        let f = |r: Option<&ExecRun>, g: &dyn Fn(&ExecRun) -> String| r.map_or("-".into(), g);
        for n in cores {
            let [rtc, pipe, ml] =
                [Exec::Rtc, Exec::Pipeline, Exec::Multilayer].map(|e| self.run(e, scheduler, n));
            let pps = |r: Option<&ExecRun>| f(r, &|r| format!("{:.3}", r.pps / 1e6));
            let best = [pipe, ml, rtc]
                .iter()
                .flatten()
                .map(|r| r.pps)
                .fold(0.0, f64::max);
            let ratio = rtc.map_or("-".into(), |r| format!("{:.2}", best / r.pps));
            let three = |g: &dyn Fn(&ExecRun) -> String| {
                format!("{} / {} / {}", f(rtc, g), f(pipe, g), f(ml, g))
            };
            s.push_str(&format!(
                "| {n} | {} | {} | {} | {ratio} | {} | {} | {} | {} / {} | {} |\n",
                pps(rtc),
                pps(pipe),
                pps(ml),
                three(&|r| format!("{:.1}%", r.icache_miss_rate * 100.0)),
                three(&|r| format!("{:.1}%", r.dcache_miss_rate * 100.0)),
                three(&|r| format!("{:.2}", r.hops_per_packet)),
                f(pipe, &|r| format!("{:.1}%", r.blocked_share * 100.0)),
                f(ml, &|r| format!("{:.1}%", r.blocked_share * 100.0)),
                f(ml, &|r| {
                    r.groups
                        .iter()
                        .map(|g| format!("{} ({})", g.layers.join("+"), g.cores))
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
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
    /// Give the staged models' groups their cores by the busy cycles each group took in a first run of the same
    /// trace ([`measured_weights`]), as a runtime would size its groups after a warm-up, instead of by the cost
    /// model's estimate (which sees neither the stalls nor the per-visit overheads of a light layer). Each such
    /// run costs two simulations.
    pub measured_allocation: bool,
    /// Where the runtime's reader and collector run ([`ExecConfig::host`]).
    pub host: Host,
}

/// The busy cycles of each group of `run` (its processing, waits for the next queue left out): the weights
/// [`ExecConfig::group_weights`] takes.
pub fn measured_weights(run: &ExecRun) -> Vec<f64> {
    run.groups.iter().map(|g| g.busy_cycles as f64).collect()
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
                let mut cfg = ExecConfig {
                    exec,
                    scheduler: s,
                    cores,
                    sched: sweep.sched.clone(),
                    base_scale: scales.get(s).copied().unwrap_or(1.0),
                    group_weights: None,
                    host: sweep.host,
                };
                let mut r = simulate_exec(input, &model, params, exec_params, &cfg)?;
                if sweep.measured_allocation && r.groups.len() > 1 && !r.groups[0].shared {
                    // Size the groups by what each took in that run, and run again.
                    cfg.group_weights = Some(measured_weights(&r));
                    r = simulate_exec(input, &model, params, exec_params, &cfg)?;
                }
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
        let p = m
            .apply(&ExecParams {
                handoff: Handoff::measured(),
                threads: RuntimeThreads::measured(),
                ..ExecParams::thesis()
            })
            .unwrap();
        assert_eq!(ExecParams::engine(), p);
        assert!(p.handoff.is_measured());
        assert!(p.threads.is_measured());
        let split = SplitScan::measured();
        assert!(
            split.scan_share > 0.0 && split.scan_code_share > 0.0,
            "the layers' file measures the scan: {split:?}"
        );
        assert_ne!(p, ExecParams::thesis());
        let shares: f64 = p.layers.iter().map(|l| l.cost_share).sum();
        assert!((shares - 1.0).abs() < 1e-9);
        for l in &p.layers {
            assert!(l.code_touch > 0 && l.code_touch <= l.code_lines, "{l:?}");
        }
    }
}
