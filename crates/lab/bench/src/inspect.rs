//! The inspection engine as the harness's workload (`flowbundle bench --workload inspect`).
//!
//! Each measurement gets a **fresh engine** (an empty connection table: every run inspects the trace from its first
//! packet, as the paper's harness did) and the engine's own runtime adapter, [`InspectWorkload`], which re-decodes
//! each packet on the worker (under `ph` with late claim, in `prepare`, before the claim, as PAM did), inspects it in
//! the shard of its bundle, and keeps per-flow order under `ph` with its order guard. L7-filter signatures and content
//! rules ([`InspectRunner::with_sets`]) are compiled once and shared by every run's engine
//! ([`Engine::with_shared`]). What this module adds is the harness side:
//!
//! * a [`PacketSource`] over the harness's [`Prepared`] trace: records by descriptor id, each packet's predecessor in
//!   its flow (for the order guard), and cost records numbered by the packet's number in its capture file (the
//!   single-threaded numbering, which `--cost-file` reads back);
//! * the **stage times** the engine samples (decode, flow lookup, reassembly, detection: one packet in 16 by default)
//!   for the life-of-a-packet table;
//! * after the run, the engine is finished (deferred packets of a dropped predecessor inspected, flows flushed) outside
//!   the timed region; optionally a digest of its sorted output is kept per run, so tests can check that every
//!   scheduler and thread count gives the single-threaded output.
//!
//! The engine must see the same flows as the policies: the harness prepares the trace with the engine's decode
//! options (tunnels decapsulated) and hash seed ([`prep_options`]), which makes its descriptors those of the engine's
//! own `Prestage` for one input. With several inputs merged, hashes are salted per input, so identical 5-tuples of two
//! inputs fall in different bundles and the engine (which looks flows up in the packet's bundle) keeps them apart.

use crate::harness::{BenchError, BenchWorkload, HarnessConfig, Measured, Runner, measure_with};
use crate::metrics::Stage;
use crate::prep::{NO_FLOW, PrepOptions, Prepared};
use flowbundle_ingest::PacketRecord;
use flowbundle_inspect::rules::RuleSet;
use flowbundle_inspect::signatures::SignatureSet;
use flowbundle_inspect::{Engine, EngineConfig, Event, InspectWorkload, PacketSource, WorkerCtx};
use flowbundle_scheduler::{Desc, WorkerId, build};
use flowbundle_worker::{BundleToken, Outcome, Workload};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

/// Pre-scheduling options matching an engine configuration (decode options, defragmentation, hash seed).
pub fn prep_options(cfg: &EngineConfig) -> PrepOptions {
    PrepOptions {
        decode: cfg.decode,
        defrag: cfg.defrag,
        seed: cfg.hash_seed,
        ..PrepOptions::default()
    }
}

/// The harness's prepared trace as the engine's packet source.
struct Source<'p> {
    prep: &'p Prepared,
    prev: Vec<u32>,
}

impl PacketSource for Source<'_> {
    fn record(&self, id: u32) -> Option<PacketRecord<'_>> {
        self.prep.trace.try_get(id as usize)
    }
    fn prev_in_flow(&self) -> Option<&[u32]> {
        Some(&self.prev)
    }
    fn packet_number(&self, id: u32) -> u64 {
        self.prep
            .orig
            .get(id as usize)
            .map_or(u64::from(id), |&o| u64::from(o))
    }
}

/// What one run's engine produced (kept when [`InspectRunner::keep_outputs`] is on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOutput {
    pub scheduler: String,
    pub threads: usize,
    /// Events (flow records, application events, alerts) after sorting, and a digest of them in order.
    pub events: usize,
    pub digest: u64,
    pub flows_created: u64,
    /// Alerts raised by content rules (0 without rules).
    pub alerts: u64,
    /// Packets the order guard had to inspect after the run (their predecessor in the flow was dropped).
    pub deferred: u64,
}

/// Digest of sorted events: each event's full debug form, hashed in order (for equality checks, not security).
pub fn digest(events: &[Event]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for e in events {
        format!("{e:?}").hash(&mut h);
    }
    h.finish()
}

/// The engine workload. See the module documentation.
pub struct InspectRunner<'p> {
    cfg: EngineConfig,
    source: Source<'p>,
    signatures: Option<Arc<SignatureSet>>,
    rules: Option<Arc<RuleSet>>,
    keep: bool,
    outputs: Mutex<Vec<RunOutput>>,
}

impl<'p> InspectRunner<'p> {
    /// The engine with `cfg` (built-in detectors; no L7-filter signatures or rules) over `prep`, which should have
    /// been prepared with [`prep_options`]`(&cfg)`.
    pub fn new(cfg: EngineConfig, prep: &'p Prepared) -> Self {
        InspectRunner {
            cfg,
            source: Source {
                prep,
                prev: flowbundle_inspect::prev_in_flow(&prep.flows, NO_FLOW),
            },
            signatures: None,
            rules: None,
            keep: false,
            outputs: Mutex::new(Vec::new()),
        }
    }

    /// Inspect with these L7-filter signatures and content rules too (compiled once, shared by every run's engine
    /// and by [`InspectRunner::serial`]).
    pub fn with_sets(
        mut self,
        signatures: Option<Arc<SignatureSet>>,
        rules: Option<Arc<RuleSet>>,
    ) -> Self {
        self.signatures = signatures;
        self.rules = rules;
        self
    }

    /// A fresh engine (empty connection table) over the shared sets.
    fn engine(&self) -> Engine {
        Engine::with_shared(
            self.cfg.clone(),
            self.signatures.clone(),
            self.rules.clone(),
        )
    }

    /// Keep a digest of every run's output ([`InspectRunner::outputs`]).
    pub fn keep_outputs(mut self, on: bool) -> Self {
        self.keep = on;
        self
    }

    /// The outputs kept so far, in run order.
    pub fn outputs(&self) -> Vec<RunOutput> {
        self.outputs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The single-threaded reference: every packet of the prepared trace inspected in order on this thread (no
    /// runtime), then finished. What every run must reproduce.
    pub fn serial(&self) -> RunOutput {
        let mut engine = self.engine();
        let mut ctx = engine.new_ctx();
        let bundles = build("dh", 1, &Default::default());
        for (i, d) in self.source.prep.descs.iter().enumerate() {
            let (Some(rec), Ok(b)) = (self.source.record(i as u32), bundles.as_ref()) else {
                continue;
            };
            // SAFETY: one thread, no runtime, and `engine` is this function's own: this thread holds every bundle.
            let mut held = unsafe { BundleToken::assume_held(b.bundle(d)) };
            engine.process(&mut ctx, &mut held, self.source.packet_number(d.id), &rec);
        }
        let fin = engine.finish([ctx]);
        RunOutput {
            scheduler: "serial".into(),
            threads: 1,
            events: fin.events.len(),
            digest: digest(&fin.events),
            flows_created: fin.stats.flows_created,
            alerts: fin.stats.alerts,
            deferred: 0,
        }
    }
}

/// [`InspectWorkload`] with the engine's stage times exposed to the harness.
struct Adapter<'a, 'w>(&'w InspectWorkload<'a>);

impl Workload for Adapter<'_, '_> {
    type Local = WorkerCtx;
    fn local(&self, w: WorkerId) -> WorkerCtx {
        self.0.local(w)
    }
    #[inline]
    fn prepare(&self, ctx: &mut WorkerCtx, desc: Desc) {
        self.0.prepare(ctx, desc);
    }
    #[inline]
    fn process(&self, ctx: &mut WorkerCtx, desc: Desc, held: &mut BundleToken) -> Outcome {
        self.0.process(ctx, desc, held)
    }
    fn on_start(&self, ctx: &mut WorkerCtx) {
        self.0.on_start(ctx);
    }
    fn on_stop(&self, ctx: &mut WorkerCtx) {
        self.0.on_stop(ctx);
    }
}

impl BenchWorkload for Adapter<'_, '_> {
    fn name(&self) -> String {
        "inspect".into()
    }
    fn detail(&self) -> String {
        String::new()
    }
    fn stages(&self, locals: &[&WorkerCtx]) -> Vec<Stage> {
        let mut st = flowbundle_inspect::cost::StageTimes::default();
        let mut hz = 0.0f64;
        for c in locals {
            st += c.cost().stages;
            hz = hz.max(c.cost().hz());
        }
        if st.samples == 0 || hz <= 0.0 {
            return Vec::new();
        }
        let per = |cycles: u64| cycles as f64 / st.samples as f64 * 1e9 / hz;
        vec![
            Stage {
                name: "decode".into(),
                mean_ns: per(st.decode),
            },
            Stage {
                name: "flow lookup".into(),
                mean_ns: per(st.lookup),
            },
            Stage {
                name: "reassembly".into(),
                mean_ns: per(st.reassembly),
            },
            Stage {
                name: "detection".into(),
                mean_ns: per(st.detection),
            },
        ]
    }
}

impl Runner for InspectRunner<'_> {
    fn name(&self) -> String {
        "inspect".into()
    }

    fn detail(&self) -> String {
        let sets = match (&self.signatures, &self.rules) {
            (None, None) => "no signatures or rules".to_string(),
            (s, r) => format!(
                "{} L7-filter signatures, {} content rules",
                s.as_ref().map_or(0, |s| s.len()),
                r.as_ref().map_or(0, |r| r.len())
            ),
        };
        format!(
            "the engine: built-in detectors, {sets}; tunnels {}; stage times sampled 1 packet in {}",
            if self.cfg.decode.decap_tunnels {
                "decapsulated"
            } else {
                "not decapsulated"
            },
            self.cfg.cost.stage_sample_every
        )
    }

    fn measure(
        &self,
        prep: &Prepared,
        scheduler: &str,
        threads: usize,
        cfg: &HarnessConfig,
        release: Option<&[u64]>,
    ) -> Result<Measured, BenchError> {
        let mut engine = self.engine();
        // The engine's shard is the policy's bundle, a pure function of the descriptor: a second instance of the
        // policy answers it without sharing state with the one the runtime drives.
        let bundles = build(scheduler, threads, &cfg.sched)?;
        let sched = build(scheduler, threads, &cfg.sched)?;
        let (measured, mut locals, deferred) = {
            let work = InspectWorkload::new(&engine, bundles.shape(), &self.source);
            let (m, mut locals) = measure_with(prep, sched, &Adapter(&work), cfg, release)?;
            let mut extra = engine.new_ctx();
            // SAFETY: `measure_with` joined every worker: this thread is the only one left touching `engine`.
            let deferred =
                unsafe { work.finish_deferred(&mut extra, &prep.descs, |d| bundles.bundle(d)) };
            locals.push(extra);
            (m, locals, deferred)
        };
        let fin = engine.finish(locals.drain(..));
        if self.keep {
            self.outputs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(RunOutput {
                    scheduler: scheduler.to_string(),
                    threads,
                    events: fin.events.len(),
                    digest: digest(&fin.events),
                    flows_created: fin.stats.flows_created,
                    alerts: fin.stats.alerts,
                    deferred,
                });
        }
        Ok(measured)
    }
}
