//! The online scheduler on the real clock (Pythia §IV–V): a trace replayed at the offered rate of a rate schedule,
//! one worker per application forming flow-whole batches, devices running them, and the [`Monitor`] waking every
//! interval with live figures and re-placing the applications.
//!
//! # The path of a packet
//! ```text
//!  Replay ──pacer──▶ backlog ──FlowBatcher──▶ part k ──▶ executor k (device handle) ──▶ completion
//!  (decoded once,     (bounded,   (window = batch ×        (one thread per device       (counted, observer
//!   flow ids)          counted)    devices, flows whole)    of the application)          called, recycled)
//! ```
//! * **Replay.** Before the clock starts, every packet of the preloaded [`Trace`] is decoded once to its canonical
//!   5-tuple ([`FlowKey`], ports of non-first fragments from a [`FragmentPorts`] cache) and its L4 payload, as the
//!   ANCS'10 harness parses keys while preloading. The flow id is the keyed 64-bit hash of the key
//!   ([`ConnHasher`]), so both directions of a connection are one flow. Packets without an IP header or without
//!   payload are not replayed (counted in [`ReplayCounters`]): the applications work on payloads, and the offered
//!   rate is measured in payload bits, the unit of the profile.
//! * **Pacing.** Each application's worker releases packets in trace order (looping over the trace when asked)
//!   so that the payload bits released by time `t` never exceed the schedule's integral up to `t`
//!   ([`RateSchedule::gbit_between`]); it catches up on every wake-up (at least every `poll`), so the offered
//!   rate is exact over any interval longer than a poll, steps and bursts included. A released packet enters the
//!   application's backlog, a queue of at most `max_backlog_packets`; what arrives at a full backlog is dropped
//!   and counted, as a NIC ring drops what it cannot hold.
//! * **Batching.** When the backlog holds a window (`batch × devices` packets), or its oldest packet has waited
//!   `flush_after`, the worker feeds the window to the [`FlowBatcher`], which groups it by flow and cuts it into one
//!   batch per device, each flow whole in batch `flow % devices` ([`crate::batch`]). A device takes a batch only
//!   while it has fewer than `max_in_flight` (default 2: one running, one waiting, i.e. double buffering).
//! * **Devices.** Each device of the application's placement is a handle forked from the [`DeviceSet`] (own queue
//!   and buffers, shared hardware) driven by its own executor thread, which runs batches in FIFO order. Modelled
//!   devices are [paced](crate::device::ModelledDevice::paced): they take their modelled time on the wall clock.
//! * **Order.** A flow always lands on the same device while the device set is unchanged, and each device is FIFO,
//!   so its packets complete in order. When the monitor changes an application's *device set*, the worker stops
//!   cutting batches, waits until every batch in flight has completed (**drain**), and only then starts the new
//!   devices; a change of batch size alone needs no drain (flows keep their device). No flow is ever reordered;
//!   `tests/runtime.rs` checks it packet by packet.
//! * **Monitor.** The calling thread wakes every `interval` on the wall clock, reads each application's figures
//!   for the interval (offered and achieved Gbit/s, mean batch service time, backlog, drops), records a timeline
//!   [`Sample`] (latency there is what a packet waits, arrival to results; power from RAPL when it is readable and
//!   no modelled device is active, otherwise the profile's model, labelled `estimated`), and calls
//!   [`Monitor::tick`]. Changed placements go to the workers with freshly forked device handles.
//!
//! # What it costs
//! One worker thread per application and one executor thread per (application, device); a 24-byte index entry per
//! replayed packet; a backlog of at most `max_backlog_packets` 16-byte entries per application; the batches in
//! flight (each at most a window of payload, recycled, not reallocated). Everything is bounded and counted.
//!
//! # Timing honesty
//! This runtime measures on a shared machine: the figures it reports are what the run achieved, and the tests
//! assert timing only loosely. The virtual clock ([`crate::sim`]) remains the place for exact, deterministic
//! checks of the monitor's decisions.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flowbundle_decode::hash::ConnHasher;
use flowbundle_decode::{DecodeOptions, FlowKey, FragmentPorts, decode};
use flowbundle_ingest::Trace;
use serde::{Deserialize, Serialize};

use crate::batch::{BatchLimits, BatcherConfig, BatcherCounters, FlowBatcher, Packet, PacketBatch};
use crate::device::{CpuDevice, Device, DeviceError, DeviceInfo, DeviceKind, ModelledDevice};
use crate::dfa::Dfa;
use crate::energy::{PowerMeters, PowerSource};
use crate::kernels::{BatchOutput, PacketApp};
use crate::monitor::{Monitor, Observation, Placement, Policy};
use crate::profile::Profile;
use crate::schedule::RateSchedule;
use crate::sim::{RunLog, Sample};

/// Seed of the flow-id hash (fixed, so that runs are reproducible: AES keys derive from flow ids).
pub const FLOW_SEED: u64 = 0x5eed_f10b_4e7e_0001;

/// First fragments remembered for the ports of later ones.
const FRAGMENT_CACHE: usize = 4096;
/// How long a first fragment's ports are remembered, capture time.
const FRAGMENT_TIMEOUT_NS: u64 = 30_000_000_000;
/// Device error messages kept per application (the count is kept whatever).
const MAX_ERRORS_KEPT: usize = 16;

/// One replayed packet: where its payload is in the trace and which flow it belongs to.
#[derive(Clone, Copy, Debug)]
struct ReplayPacket {
    /// Packet number in the trace.
    index: u32,
    /// Payload offset in the captured bytes.
    offset: u32,
    /// Payload length.
    len: u32,
    /// Flow id: keyed hash of the canonical 5-tuple.
    flow: u64,
}

/// What preparing a replay found in the trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayCounters {
    /// Packets in the trace.
    pub packets: u64,
    /// Packets replayed (an IP header and a non-empty payload).
    pub replayed: u64,
    /// Payload bytes of the replayed packets (one pass over the trace).
    pub payload_bytes: u64,
    /// Packets without an IP header (no 5-tuple): not replayed.
    pub no_flow_key: u64,
    /// Packets with an empty L4 payload (handshakes, pure ACKs): not replayed.
    pub empty_payload: u64,
    /// Payloads whose IP datagram was longer than the captured bytes (replayed with what was captured).
    pub truncated_payload: u64,
    /// Distinct flows among the replayed packets.
    pub flows: u64,
}

/// A trace prepared for replay: every packet decoded once to its flow id and payload, before the clock starts.
pub struct Replay<'t> {
    trace: &'t Trace,
    packets: Vec<ReplayPacket>,
    counters: ReplayCounters,
}

impl<'t> Replay<'t> {
    /// Decodes every packet of `trace` (see the module docs for what is replayed).
    pub fn new(trace: &'t Trace) -> Self {
        let hasher = ConnHasher::new(FLOW_SEED);
        let mut frags = FragmentPorts::new(FRAGMENT_CACHE, FRAGMENT_TIMEOUT_NS);
        let opts = DecodeOptions::default();
        let mut counters = ReplayCounters {
            packets: trace.len() as u64,
            ..Default::default()
        };
        let mut packets = Vec::new();
        let mut flows = std::collections::HashSet::new();
        for (i, rec) in trace.iter().enumerate() {
            let d = decode(&rec, &opts);
            let Some((key, _)) = FlowKey::from_decoded_with(&d, &mut frags, rec.ts_ns) else {
                counters.no_flow_key += 1;
                continue;
            };
            if d.payload.is_empty() {
                counters.empty_payload += 1;
                continue;
            }
            let offset = d.payload_offset;
            let (Ok(index), Ok(len)) = (u32::try_from(i), u32::try_from(d.payload.len())) else {
                // A trace beyond 4 G packets or a payload beyond 4 GB: not representable, skipped and counted.
                counters.no_flow_key += 1;
                continue;
            };
            if d.payload_truncated {
                counters.truncated_payload += 1;
            }
            let flow = hasher.hash(&key);
            flows.insert(flow);
            counters.replayed += 1;
            counters.payload_bytes += u64::from(len);
            packets.push(ReplayPacket {
                index,
                offset,
                len,
                flow,
            });
        }
        counters.flows = flows.len() as u64;
        Self {
            trace,
            packets,
            counters,
        }
    }

    /// Replayed packets in one pass.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// True when nothing in the trace can be replayed.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// What preparing the replay found.
    pub fn counters(&self) -> ReplayCounters {
        self.counters
    }

    /// Flow id of replayed packet `i` (0 past the end).
    pub fn flow(&self, i: usize) -> u64 {
        self.packets.get(i).map_or(0, |p| p.flow)
    }

    /// Packet number in the trace of replayed packet `i`.
    pub fn trace_index(&self, i: usize) -> Option<usize> {
        self.packets.get(i).map(|p| p.index as usize)
    }

    /// Payload of replayed packet `i` (empty past the end).
    pub fn payload(&self, i: usize) -> &'t [u8] {
        let Some(p) = self.packets.get(i) else {
            return &[];
        };
        let Some(rec) = self.trace.try_get(p.index as usize) else {
            return &[];
        };
        let (a, b) = (p.offset as usize, p.offset as usize + p.len as usize);
        rec.data.get(a..b).unwrap_or(&[])
    }

    /// The replayed packet a tag stands for: tags count released packets, so tag `t` is packet `t % len()` of
    /// pass `t / len()`.
    pub fn packet_of_tag(&self, tag: u64) -> usize {
        if self.packets.is_empty() {
            0
        } else {
            (tag % self.packets.len() as u64) as usize
        }
    }

    fn payload_bits(&self, i: usize) -> f64 {
        self.packets.get(i).map_or(0.0, |p| f64::from(p.len) * 8.0)
    }
}

/// Releases packets at the rate of a schedule (see the module docs).
#[derive(Debug, Default)]
struct Pacer {
    credit_bits: f64,
    last_t: f64,
    next_tag: u64,
    exhausted: bool,
}

impl Pacer {
    /// Releases every packet whose bits are covered by the schedule up to `t_s`, calling `arrive(tag, bits)`.
    fn advance(
        &mut self,
        t_s: f64,
        schedule: &RateSchedule,
        replay: &Replay<'_>,
        loop_trace: bool,
        mut arrive: impl FnMut(u64, f64),
    ) {
        let n = replay.len() as u64;
        if n == 0 {
            self.exhausted = true;
            return;
        }
        self.credit_bits += schedule.gbit_between(self.last_t, t_s) * 1e9;
        self.last_t = self.last_t.max(t_s);
        loop {
            if !loop_trace && self.next_tag >= n {
                self.exhausted = true;
                // Nothing more to offer: credit would only grow.
                self.credit_bits = 0.0;
                return;
            }
            let bits = replay.payload_bits((self.next_tag % n) as usize);
            if bits > self.credit_bits {
                return;
            }
            self.credit_bits -= bits;
            arrive(self.next_tag, bits);
            self.next_tag += 1;
        }
    }
}

/// How the runtime replays and batches.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// Applications, one worker each.
    pub apps: Vec<PacketApp>,
    /// Offered rate per application (same order as `apps`).
    pub schedules: Vec<RateSchedule>,
    /// Monitor interval.
    pub interval: Duration,
    /// Length of the run (arrivals stop then; what was accepted is still processed, within `end_grace`).
    pub duration: Duration,
    /// Replay the trace again from its start when it is exhausted (tags keep counting, flows continue).
    pub loop_trace: bool,
    /// Most packets waiting per application; arrivals beyond are dropped and counted.
    pub max_backlog_packets: usize,
    /// Batches handed to one device and not yet completed (2 = double buffering).
    pub max_in_flight: usize,
    /// A partial window is cut when its oldest packet has waited this long.
    pub flush_after: Duration,
    /// Longest a worker sleeps between looks at its pacer and its devices.
    pub poll: Duration,
    /// After `duration`, how long workers keep processing their backlog; what is left then is counted as
    /// `unprocessed_at_end`.
    pub end_grace: Duration,
    /// Policy changes on the fly: (seconds, policy).
    pub policy_changes: Vec<(f64, Policy)>,
    /// Secret mixed into the per-connection AES keys.
    pub key_secret: u64,
    /// Longest payload kept per packet (longer ones are cut and counted by the batcher).
    pub max_payload: usize,
}

impl RuntimeConfig {
    /// Defaults for `apps`, each offered `schedule`: 100 ms interval, 10 s, looping replay, a backlog of 2^20
    /// packets, double buffering, a partial window cut after half an interval, 1 ms polls, 5 s grace.
    pub fn new(apps: &[PacketApp], schedule: &RateSchedule) -> Self {
        Self {
            apps: apps.to_vec(),
            schedules: vec![schedule.clone(); apps.len()],
            interval: Duration::from_millis(100),
            duration: Duration::from_secs(10),
            loop_trace: true,
            max_backlog_packets: 1 << 20,
            max_in_flight: 2,
            flush_after: Duration::from_millis(50),
            poll: Duration::from_millis(1),
            end_grace: Duration::from_secs(5),
            policy_changes: Vec::new(),
            key_secret: BatcherConfig::default().key_secret,
            max_payload: BatchLimits::default().max_payload,
        }
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("no application to run")]
    NoApps,
    #[error("{apps} applications but {schedules} rate schedules")]
    ScheduleCount { apps: usize, schedules: usize },
    #[error("nothing to replay: the trace has no packet with an IP header and a payload")]
    EmptyReplay,
    #[error("the monitor may place applications on `{0}`, which the device set does not have")]
    UnknownDevice(String),
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("starting a thread: {0}")]
    Thread(String),
}

/// The devices a run may use, by id; workers get handles forked from them.
#[derive(Default)]
pub struct DeviceSet {
    devices: Vec<Box<dyn Device>>,
    notes: Vec<String>,
}

impl DeviceSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a device (replacing one with the same id).
    pub fn insert(&mut self, device: Box<dyn Device>) {
        let id = device.info().id.clone();
        self.devices.retain(|d| d.info().id != id);
        self.devices.push(device);
    }

    /// Opens the devices `ids` name: `cpu` is the CPU pool of `cpu_threads` threads (0 = every core), `oclN` the
    /// OpenCL devices found at run time, and any id the profile lists as `modelled` a [paced](ModelledDevice::paced)
    /// modelled device.
    pub fn open(
        ids: &[String],
        profile: &Arc<Profile>,
        dfa: &Arc<Dfa>,
        cpu_threads: usize,
    ) -> Result<DeviceSet, DeviceError> {
        let mut set = DeviceSet::new();
        #[cfg(feature = "opencl")]
        let mut ocl: Option<Vec<crate::opencl::OpenClDevice>> = None;
        for id in ids {
            if set.get(id).is_some() {
                continue;
            }
            if id == "cpu" {
                set.insert(Box::new(CpuDevice::new(cpu_threads, dfa.clone())?));
            } else if profile.kind_of(id) == Some(DeviceKind::Modelled) {
                set.insert(Box::new(
                    ModelledDevice::new(id, profile.clone(), dfa.clone())?.paced(true),
                ));
            } else if id.starts_with("ocl") {
                #[cfg(feature = "opencl")]
                {
                    let found = ocl.get_or_insert_with(|| {
                        let (devs, notes) = crate::opencl::discover(dfa.clone());
                        set.notes.extend(notes);
                        devs
                    });
                    let pos = found
                        .iter()
                        .position(|d| d.info().id == *id)
                        .ok_or_else(|| {
                            DeviceError::Other(format!("no OpenCL device `{id}` on this machine"))
                        })?;
                    set.insert(Box::new(found.remove(pos)));
                }
                #[cfg(not(feature = "opencl"))]
                return Err(DeviceError::Other(format!(
                    "`{id}` needs the `opencl` feature, which this build lacks"
                )));
            } else {
                return Err(DeviceError::Other(format!(
                    "unknown device `{id}` (cpu, oclN, or a modelled id of the profile)"
                )));
            }
        }
        Ok(set)
    }

    /// Ids of the devices, in insertion order.
    pub fn ids(&self) -> Vec<String> {
        self.devices.iter().map(|d| d.info().id.clone()).collect()
    }

    /// Description of device `id`.
    pub fn info(&self, id: &str) -> Option<&DeviceInfo> {
        self.get(id).map(|d| d.info())
    }

    /// What opening the devices noted (why OpenCL devices are missing, ...).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    fn get(&self, id: &str) -> Option<&dyn Device> {
        self.devices
            .iter()
            .find(|d| d.info().id == id)
            .map(|d| d.as_ref())
    }

    fn fork(&self, id: &str) -> Result<Box<dyn Device>, DeviceError> {
        self.get(id)
            .ok_or_else(|| DeviceError::Other(format!("no device `{id}` in the set")))?
            .fork()
    }
}

/// A batch that completed, as the observer sees it (in the worker's thread, in completion order).
pub struct Completion<'a> {
    /// Application.
    pub app: PacketApp,
    /// Device that ran it.
    pub device: &'a str,
    /// The batch (for `aes`, its payloads are now encrypted).
    pub batch: &'a PacketBatch,
    /// The kernel's per-packet results.
    pub output: &'a BatchOutput,
    /// When the worker handed it to the device's executor.
    pub submitted: Instant,
    /// When the device started it.
    pub started: Instant,
    /// When its results were back.
    pub finished: Instant,
}

/// A placement a worker put into effect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    /// When the monitor decided it, seconds since the start.
    pub decided_s: f64,
    /// When the worker started using it (after draining, for a new device set), seconds since the start.
    pub applied_s: f64,
    /// The placement.
    pub placement: Placement,
    /// Whether the device set changed (so batches in flight were drained first).
    pub drained: bool,
}

/// What one application's worker did over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AppReport {
    /// Application.
    pub app: Option<PacketApp>,
    /// Packets released by the pacer.
    pub arrived_packets: u64,
    /// Their payload bytes.
    pub arrived_bytes: u64,
    /// Released packets dropped at a full backlog.
    pub dropped_packets: u64,
    /// Packets whose batch completed.
    pub processed_packets: u64,
    /// Their payload bytes.
    pub processed_bytes: u64,
    /// Packets whose batch failed on its device.
    pub failed_packets: u64,
    /// Packets still waiting when the grace period after the run ended (not processed).
    pub unprocessed_at_end: u64,
    /// Batches completed.
    pub batches: u64,
    /// Device errors seen.
    pub device_errors: u64,
    /// The first few error messages.
    pub errors: Vec<String>,
    /// Placements put into effect, in order.
    pub applied: Vec<Applied>,
    /// The batcher's counters.
    pub batcher: BatcherCounters,
}

/// Outcome of a real-clock run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Decisions and the timeline (one sample per monitor interval).
    pub log: RunLog,
    /// Per application, in the order of the configuration.
    pub apps: Vec<AppReport>,
    /// What the replay found in the trace.
    pub replay: ReplayCounters,
    /// Wall-clock length of the run, seconds (including the end's grace).
    pub wall_s: f64,
    /// Notes: power sources, device handles that could not be forked, ...
    pub notes: Vec<String>,
}

impl RunReport {
    /// Pretty JSON of the whole report.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// One update to a worker: the new placement and, when the device set changed, the handles for it.
struct Update {
    placement: Placement,
    handles: Option<Vec<Box<dyn Device>>>,
    decided_s: f64,
}

/// Figures of one interval, reset by the monitor at each tick.
#[derive(Clone, Debug, Default)]
struct Interval {
    /// Per device slot: seconds spent running batches that completed in the interval.
    busy_s: Vec<f64>,
    arrived_bits: f64,
    dropped_bits: f64,
    completed_bits: f64,
    service_us_sum: f64,
    batches: u64,
    packet_latency_us_sum: f64,
    packets: u64,
}

/// What a worker and the monitor share.
#[derive(Default)]
struct Shared {
    pending: Option<Update>,
    interval: Interval,
    backlog_bits: f64,
    devices: Vec<String>,
    in_flight: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked leaves consistent plain counters behind; keep going with them.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Job {
    batch: PacketBatch,
    out: BatchOutput,
    submitted: Instant,
    arrival_sum_s: f64,
    slot: usize,
}

struct Done {
    job: Job,
    started: Instant,
    finished: Instant,
    error: Option<String>,
}

/// One device of an application's placement and the thread driving it.
struct Executor {
    id: String,
    tx: mpsc::Sender<Job>,
    thread: JoinHandle<()>,
    in_flight: usize,
}

impl Executor {
    fn spawn(
        app: PacketApp,
        mut dev: Box<dyn Device>,
        done: mpsc::Sender<Done>,
    ) -> Result<Executor, String> {
        let id = dev.info().id.clone();
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name(format!("hetero-{app}-{id}"))
            .spawn(move || {
                // Ends when the worker drops its sender (after draining).
                for mut job in rx {
                    let started = Instant::now();
                    let r = dev.run(
                        app,
                        std::slice::from_mut(&mut job.batch),
                        std::slice::from_mut(&mut job.out),
                    );
                    let finished = Instant::now();
                    let error = r.err().map(|e| e.to_string());
                    if done
                        .send(Done {
                            job,
                            started,
                            finished,
                            error,
                        })
                        .is_err()
                    {
                        break;
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(Executor {
            id,
            tx,
            thread,
            in_flight: 0,
        })
    }

    fn stop(self) {
        drop(self.tx);
        // The executor thread only runs device code; if that panicked there is nothing left to clean up.
        let _ = self.thread.join();
    }
}

/// Everything the worker of one packet application reads (not the engine's `WorkerCtx`: a hetero worker runs one
/// application's batches on its devices).
struct AppWorkerInputs<'a, 't> {
    app: PacketApp,
    replay: &'a Replay<'t>,
    schedule: &'a RateSchedule,
    cfg: &'a RuntimeConfig,
    start: Instant,
    stop: &'a AtomicBool,
    shared: &'a Mutex<Shared>,
    observer: &'a (dyn Fn(&Completion<'_>) + Sync),
}

/// The worker of one application: pacing, batching, dispatch, draining, completions (see the module docs).
fn run_worker(ctx: AppWorkerInputs<'_, '_>) -> AppReport {
    let cfg = ctx.cfg;
    let replay = ctx.replay;
    let mut rep = AppReport {
        app: Some(ctx.app),
        ..Default::default()
    };
    // A window is cut into batches by flow, so one batch may receive the whole window: size the packet cap
    // for that (a cap, not an allocation).
    let limits = BatchLimits {
        max_payload: cfg.max_payload,
        max_packets: 1 << 20,
        ..BatchLimits::default()
    };
    let mut batcher = FlowBatcher::new(BatcherConfig {
        window: 1,
        limits,
        max_connections: 1 << 20,
        key_secret: cfg.key_secret,
    });
    let mut queue: VecDeque<(u64, f64)> = VecDeque::new();
    let mut queued_bits = 0.0f64;
    let mut pacer = Pacer::default();
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let mut execs: Vec<Executor> = Vec::new();
    let mut placement: Option<Placement> = None;
    let mut draining: Option<Update> = None;
    let mut spare_batches: Vec<PacketBatch> = Vec::new();
    let mut spare_outs: Vec<BatchOutput> = Vec::new();
    let mut cut: Vec<PacketBatch> = Vec::new();
    let mut arrival_sums: Vec<f64> = Vec::new();
    let mut closed = false;
    let grace_end = (cfg.duration + cfg.end_grace).as_secs_f64();
    let flush_s = cfg.flush_after.as_secs_f64();
    let max_in_flight = cfg.max_in_flight.max(1);

    loop {
        let now = Instant::now();
        let t = now.duration_since(ctx.start).as_secs_f64();

        // 1. Arrivals.
        if !closed {
            if ctx.stop.load(Ordering::Acquire) || pacer.exhausted {
                closed = true;
            } else {
                let (mut arrived, mut dropped) = (0.0, 0.0);
                pacer.advance(t, ctx.schedule, replay, cfg.loop_trace, |tag, bits| {
                    arrived += bits;
                    rep.arrived_packets += 1;
                    rep.arrived_bytes += (bits / 8.0) as u64;
                    if queue.len() < cfg.max_backlog_packets {
                        queue.push_back((tag, t));
                        queued_bits += bits;
                    } else {
                        dropped += bits;
                        rep.dropped_packets += 1;
                    }
                });
                if arrived > 0.0 {
                    let mut sh = lock(ctx.shared);
                    sh.interval.arrived_bits += arrived;
                    sh.interval.dropped_bits += dropped;
                }
            }
        }
        if closed && t > grace_end && !queue.is_empty() {
            rep.unprocessed_at_end += queue.len() as u64;
            queue.clear();
            queued_bits = 0.0;
        }

        // 2. Placement updates: a batch size applies at once; a device set after draining.
        if let Some(u) = lock(ctx.shared).pending.take() {
            match (u.handles.is_some(), draining.as_mut()) {
                (true, _) => draining = Some(u),
                (false, Some(d)) => d.placement.batch = u.placement.batch,
                (false, None) => {
                    if let Some(p) = placement.as_mut() {
                        p.batch = u.placement.batch;
                        rep.applied.push(Applied {
                            decided_s: u.decided_s,
                            applied_s: t,
                            placement: p.clone(),
                            drained: false,
                        });
                    }
                }
            }
        }
        let in_flight: usize = execs.iter().map(|e| e.in_flight).sum();
        if in_flight == 0
            && let Some(u) = draining.take()
        {
            for e in execs.drain(..) {
                e.stop();
            }
            let mut ids = Vec::new();
            for h in u.handles.into_iter().flatten() {
                match Executor::spawn(ctx.app, h, done_tx.clone()) {
                    Ok(e) => {
                        ids.push(e.id.clone());
                        execs.push(e);
                    }
                    Err(e) => note_error(&mut rep, format!("starting an executor: {e}")),
                }
            }
            lock(ctx.shared).devices = ids;
            rep.applied.push(Applied {
                decided_s: u.decided_s,
                applied_s: t,
                placement: u.placement.clone(),
                drained: true,
            });
            placement = Some(u.placement);
        }

        // 3. Dispatch whole windows (or a partial one that waited long enough) while every device has room.
        while let Some(p) = placement.as_ref() {
            let parts = execs.len();
            if draining.is_some()
                || parts == 0
                || execs.iter().any(|e| e.in_flight >= max_in_flight)
            {
                break;
            }
            let window = p.batch.max(1).saturating_mul(parts);
            let ready = queue.len() >= window
                || queue
                    .front()
                    .is_some_and(|&(_, at)| closed || t - at >= flush_s);
            if !ready {
                break;
            }
            let take = window.min(queue.len());
            batcher.set_window(take);
            arrival_sums.clear();
            arrival_sums.resize(parts, 0.0);
            for (tag, at) in queue.drain(..take) {
                let i = replay.packet_of_tag(tag);
                let flow = replay.flow(i);
                let payload = replay.payload(i);
                queued_bits -= payload.len() as f64 * 8.0;
                batcher.push(Packet { flow, tag, payload });
                if let Some(s) = arrival_sums.get_mut((flow % parts as u64) as usize) {
                    *s += at;
                }
            }
            cut.clear();
            cut.extend(spare_batches.drain(..spare_batches.len().min(parts)));
            batcher.cut(parts, &mut cut);
            for (k, b) in cut.drain(..).enumerate() {
                if b.is_empty() {
                    spare_batches.push(b);
                    continue;
                }
                let job = Job {
                    batch: b,
                    out: spare_outs.pop().unwrap_or_default(),
                    submitted: now,
                    arrival_sum_s: arrival_sums.get(k).copied().unwrap_or(0.0),
                    slot: k,
                };
                let Some(e) = execs.get_mut(k) else {
                    break;
                };
                match e.tx.send(job) {
                    Ok(()) => e.in_flight += 1,
                    Err(mpsc::SendError(job)) => {
                        rep.failed_packets += job.batch.len() as u64;
                        note_error(&mut rep, format!("executor of {} stopped", e.id));
                    }
                }
            }
        }
        {
            let mut sh = lock(ctx.shared);
            sh.backlog_bits = queued_bits.max(0.0);
            sh.in_flight = execs.iter().map(|e| e.in_flight).sum();
        }

        // 4. Completions.
        let in_flight: usize = execs.iter().map(|e| e.in_flight).sum();
        let idle = closed && queue.is_empty();
        if idle && in_flight == 0 {
            if draining.is_none() {
                break;
            }
            // A device change decided at the very end: nothing left to move, so nothing to drain.
            continue;
        }
        if closed && execs.is_empty() && draining.is_none() {
            // Never placed: nothing can process what is left.
            rep.unprocessed_at_end += queue.len() as u64;
            break;
        }
        let mut got = done_rx.recv_timeout(cfg.poll).ok();
        while let Some(d) = got {
            complete(
                &ctx,
                d,
                &mut execs,
                &mut rep,
                &mut spare_batches,
                &mut spare_outs,
            );
            got = done_rx.try_recv().ok();
        }
    }
    for e in execs {
        e.stop();
    }
    rep.batcher = batcher.counters();
    rep
}

fn note_error(rep: &mut AppReport, msg: String) {
    rep.device_errors += 1;
    if rep.errors.len() < MAX_ERRORS_KEPT {
        rep.errors.push(msg);
    }
}

/// Accounts for one completed batch and hands it to the observer; recycles its buffers.
fn complete(
    ctx: &AppWorkerInputs<'_, '_>,
    d: Done,
    execs: &mut [Executor],
    rep: &mut AppReport,
    spare_batches: &mut Vec<PacketBatch>,
    spare_outs: &mut Vec<BatchOutput>,
) {
    let Done {
        job,
        started,
        finished,
        error,
    } = d;
    let packets = job.batch.len() as u64;
    let device = match execs.get_mut(job.slot) {
        Some(e) => {
            e.in_flight = e.in_flight.saturating_sub(1);
            e.id.clone()
        }
        None => String::new(),
    };
    match error {
        Some(msg) => {
            rep.failed_packets += packets;
            note_error(rep, format!("{device}: {msg}"));
        }
        None => {
            let bytes = job.batch.bytes() as u64;
            rep.processed_packets += packets;
            rep.processed_bytes += bytes;
            rep.batches += 1;
            let fin_s = finished.duration_since(ctx.start).as_secs_f64();
            {
                let mut sh = lock(ctx.shared);
                let iv = &mut sh.interval;
                let service = finished.duration_since(started).as_secs_f64();
                iv.completed_bits += bytes as f64 * 8.0;
                iv.service_us_sum += service * 1e6;
                if iv.busy_s.len() <= job.slot {
                    iv.busy_s.resize(job.slot + 1, 0.0);
                }
                if let Some(b) = iv.busy_s.get_mut(job.slot) {
                    *b += service;
                }
                iv.batches += 1;
                iv.packet_latency_us_sum += (fin_s * packets as f64 - job.arrival_sum_s) * 1e6;
                iv.packets += packets;
            }
            (ctx.observer)(&Completion {
                app: ctx.app,
                device: &device,
                batch: &job.batch,
                output: &job.out,
                submitted: job.submitted,
                started,
                finished,
            });
        }
    }
    spare_batches.push(job.batch);
    spare_outs.push(job.out);
}

/// Sends every changed placement to its worker, with handles forked for a new device set.
fn send_updates(
    monitor: &Monitor,
    devices: &DeviceSet,
    apps: &[PacketApp],
    shared: &[Mutex<Shared>],
    sent: &mut [Option<Placement>],
    t_s: f64,
    notes: &mut Vec<String>,
) {
    for (i, &app) in apps.iter().enumerate() {
        let Some(p) = monitor.placement(app).cloned() else {
            continue;
        };
        let Some(slot) = sent.get_mut(i) else {
            continue;
        };
        if slot.as_ref() == Some(&p) {
            continue;
        }
        let new_devices = slot.as_ref().is_none_or(|s| s.devices != p.devices);
        let handles = if new_devices {
            let forked: Result<Vec<Box<dyn Device>>, DeviceError> =
                p.devices.iter().map(|id| devices.fork(id)).collect();
            match forked {
                Ok(h) => Some(h),
                Err(e) => {
                    notes.push(format!(
                        "{t_s:.2}s {app}: cannot open {:?} ({e}); placement not applied",
                        p.devices
                    ));
                    continue;
                }
            }
        } else {
            None
        };
        let Some(sh) = shared.get(i) else {
            continue;
        };
        let mut sh = lock(sh);
        match (&mut sh.pending, handles) {
            // A device set still waiting to be picked up keeps its handles; only the batch changes.
            (Some(pending), None) if pending.handles.is_some() => {
                pending.placement.batch = p.batch;
            }
            (pending, handles) => {
                *pending = Some(Update {
                    placement: p.clone(),
                    handles,
                    decided_s: t_s,
                })
            }
        }
        *slot = Some(p);
    }
}

/// Replays `replay` through `devices` under `monitor` on the wall clock (see the module docs). `observer` sees
/// every completed batch, in each worker's thread, in completion order.
pub fn run(
    replay: &Replay<'_>,
    devices: &DeviceSet,
    monitor: &mut Monitor,
    cfg: &RuntimeConfig,
    observer: &(dyn Fn(&Completion<'_>) + Sync),
) -> Result<RunReport, RuntimeError> {
    let apps = &cfg.apps;
    if apps.is_empty() {
        return Err(RuntimeError::NoApps);
    }
    if cfg.schedules.len() != apps.len() {
        return Err(RuntimeError::ScheduleCount {
            apps: apps.len(),
            schedules: cfg.schedules.len(),
        });
    }
    if replay.is_empty() {
        return Err(RuntimeError::EmptyReplay);
    }
    for id in &monitor.config().devices {
        if devices.get(id).is_none() {
            return Err(RuntimeError::UnknownDevice(id.clone()));
        }
    }
    let mut report = RunReport {
        replay: replay.counters(),
        ..Default::default()
    };
    report.log.virtual_clock = false;
    let mut meters = PowerMeters::open();
    report.notes.extend(meters.notes.iter().cloned());
    let shared: Vec<Mutex<Shared>> = apps.iter().map(|_| Mutex::new(Shared::default())).collect();
    let mut sent: Vec<Option<Placement>> = vec![None; apps.len()];
    let stop = AtomicBool::new(false);
    let mut policy_changes = cfg.policy_changes.clone();
    policy_changes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut next_policy = 0;

    // Initial placement at the rates of time zero.
    let obs0: Vec<Observation> = apps
        .iter()
        .zip(&cfg.schedules)
        .map(|(&app, s)| Observation {
            app,
            offered_gbps: s.rate_at(0.0),
            achieved_gbps: 0.0,
            latency_us: 0.0,
            busy: None,
        })
        .collect();
    report.log.decisions.extend(monitor.tick(0.0, &obs0));
    send_updates(
        monitor,
        devices,
        apps,
        &shared,
        &mut sent,
        0.0,
        &mut report.notes,
    );

    let start = Instant::now();
    let interval = cfg.interval.max(Duration::from_millis(1));
    let result: Result<Vec<AppReport>, RuntimeError> = std::thread::scope(|s| {
        let mut workers = Vec::new();
        for (i, &app) in apps.iter().enumerate() {
            let (Some(schedule), Some(sh)) = (cfg.schedules.get(i), shared.get(i)) else {
                continue;
            };
            let ctx = AppWorkerInputs {
                app,
                replay,
                schedule,
                cfg,
                start,
                stop: &stop,
                shared: sh,
                observer,
            };
            let h = std::thread::Builder::new()
                .name(format!("hetero-worker-{app}"))
                .spawn_scoped(s, move || run_worker(ctx));
            match h {
                Ok(h) => workers.push(h),
                Err(e) => {
                    stop.store(true, Ordering::Release);
                    for w in workers {
                        let _ = w.join();
                    }
                    return Err(RuntimeError::Thread(e.to_string()));
                }
            }
        }

        let mut last_t = 0.0f64;
        let mut k: u32 = 1;
        let mut last_cpu_power: Option<f64> = None;
        loop {
            let due = interval.saturating_mul(k);
            if due > cfg.duration {
                break;
            }
            // Sleep to the tick in short steps, so a run whose workers all ended (trace exhausted) stops early.
            let mut all_done = false;
            loop {
                let el = start.elapsed();
                if el >= due {
                    break;
                }
                if workers.iter().all(|w| w.is_finished()) {
                    all_done = true;
                    break;
                }
                std::thread::sleep((due - el).min(Duration::from_millis(20)));
            }
            if all_done {
                break;
            }
            let t = start.elapsed().as_secs_f64();
            let dt = (t - last_t).max(1e-9);
            last_t = t;
            let mut obs = Vec::with_capacity(apps.len());
            let mut shown = Vec::with_capacity(apps.len());
            let (mut backlog, mut dropped) = (0.0, 0.0);
            let mut active: Vec<String> = Vec::new();
            for (i, &app) in apps.iter().enumerate() {
                let Some(sh) = shared.get(i) else { continue };
                let (iv, bl, devs, in_flight) = {
                    let mut g = lock(sh);
                    (
                        std::mem::take(&mut g.interval),
                        g.backlog_bits,
                        g.devices.clone(),
                        g.in_flight,
                    )
                };
                // A batch still running through a whole interval kept its device busy all of it.
                let busy = if iv.batches == 0 && in_flight > 0 {
                    1.0
                } else {
                    (iv.busy_s.iter().copied().fold(0.0, f64::max) / dt).min(1.0)
                };
                backlog += bl;
                dropped += iv.dropped_bits;
                active.extend(devs);
                let o = Observation {
                    app,
                    offered_gbps: iv.arrived_bits / dt / 1e9,
                    achieved_gbps: iv.completed_bits / dt / 1e9,
                    latency_us: if iv.batches > 0 {
                        iv.service_us_sum / iv.batches as f64
                    } else {
                        0.0
                    },
                    busy: Some(busy),
                };
                shown.push(Observation {
                    latency_us: if iv.packets > 0 {
                        iv.packet_latency_us_sum / iv.packets as f64
                    } else {
                        0.0
                    },
                    ..o
                });
                obs.push(o);
            }
            active.sort();
            active.dedup();
            let mut smp: Sample = crate::sim::sample(monitor, t, &shown);
            smp.backlog_gbit = backlog / 1e9;
            smp.dropped_gbit = dropped / 1e9;
            smp.active_devices = active.clone();
            // Measured package power covers the CPU and CPU OpenCL devices, not hardware that is not here.
            let any_modelled = active.iter().any(|d| {
                devices
                    .info(d)
                    .is_some_and(|i| i.kind == DeviceKind::Modelled)
            });
            if let Some(w) = meters.cpu_power() {
                last_cpu_power = Some(w);
            }
            if !any_modelled && let Some(w) = last_cpu_power {
                smp.power_w = w;
                smp.power_source = PowerSource::Rapl;
            }
            report.log.samples.push(smp);
            while let Some(&(pt, pol)) = policy_changes.get(next_policy) {
                if pt > t {
                    break;
                }
                monitor.set_policy(pol);
                next_policy += 1;
            }
            report.log.decisions.extend(monitor.tick(t, &obs));
            send_updates(
                monitor,
                devices,
                apps,
                &shared,
                &mut sent,
                t,
                &mut report.notes,
            );
            k = k.saturating_add(1);
        }
        stop.store(true, Ordering::Release);
        Ok(workers
            .into_iter()
            .map(|w| w.join().unwrap_or_default())
            .collect())
    });
    report.apps = result?;
    report.wall_s = start.elapsed().as_secs_f64();
    Ok(report)
}
