//! # The engine: one packet at a time, on whichever worker holds its bundle
//!
//! [`Engine`] is built once and shared (`Sync`) by every worker: configuration, the protocol registry, the L7-filter
//! signature set, the content rules, and the connection table sharded by bundle (see [`crate::table`]). Each worker
//! owns a [`WorkerCtx`]: its event list, counters, rule scanner and cost figures. A packet goes through:
//!
//! 1. **decode** (again: the dispatcher only hashed it, see `ARCHITECTURE.md`, "workers re-decode");
//! 2. **flow lookup** in the shard of its bundle, creating the flow (client side, flow id, FTP expectation) or ending
//!    it first when it timed out or a SYN reuses a closed connection; a new flow also expires the idle flows of its
//!    shard, and evicts one when the table is full;
//! 3. **TCP state and reassembly**, whose in-order output, or a UDP datagram, goes to
//! 4. **detection**: classifier and parser, L7-filter signatures, content rules (see [`crate::app`]).
//!
//! [`Engine::finish`] ends every flow still open (end of input) and merges the workers' contexts. Output (flow
//! records, application events, alerts) depends only on each flow's own packets in order, so sorted events are the
//! same for any thread count and scheduler; flow eviction under the flow cap is the exception, and it is counted.
//!
//! ## Reloading the signature and rule sets while packets flow
//! The detection context ([`Detection`]: registry, signatures, rules) is immutable and shared as an `Arc`; each
//! [`WorkerCtx`] holds the one it inspects with and the *epoch* it belongs to. [`Engine::reload`] publishes a new
//! context under a new epoch (a mutex and an atomic counter, touched only by a reload); every worker compares the
//! epoch once per packet (one load of a word no one writes between reloads) and, when it moved, adopts the new
//! context before that packet: it retires its rule scanner (its counters and per-rule alert counts are kept, by
//! signature id) and builds one for the new rules. A flow keeps its state (TCP, reassembly, identification, counters,
//! flow id), so its record is written once, but its matcher state belongs to the set that made it: the first packet
//! of the flow inspected under the new epoch restarts it (the new rules see the flow's data from there on; a flow a
//! `drop` rule dropped stays dropped; flowbits set by the old rules are forgotten, and L7-filter signatures, which
//! match the first bytes of a connection, go on deciding only for flows that start after the reload), as Suricata
//! resets a flow's detection state when its detection engine version changes. Which packets see which set is up to
//! the caller: the live reader reloads when every packet it dispatched has been inspected, so the packets read before
//! the reload see the old set and those after it the new one, whatever the thread count.

use std::sync::Arc;
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use crossbeam::utils::CachePadded;
use flowbundle_decode::{DecodeEvents, Decoded, FlowKey, KeySide, L4, decode, decode_bytes};
use flowbundle_ingest::{LinkType, PacketRecord};
use flowbundle_protocols::AppProto;
use flowbundle_rules::{FlowMatchState, RuleSet, Scanner};
use flowbundle_signatures::SignatureSet;
use flowbundle_types::{BUNDLES, BundleToken, StreamEvent, StreamEvents, Transport};

use crate::app::{self, AppState, FlowMeta, Out, PacketVerdict, StreamCx};
use crate::config::EngineConfig;
use crate::cost::{self, CostRecord, CostSummary, TopConn};
use crate::detect::{Detection, Produced};
use crate::event::{
    AppLabel, EndReason, Event, EventKind, Evidence, FlowRecord, TcpSummary, sort_events,
};
use crate::expect::Expectations;
use crate::flow::{Flow, pick_client};
use crate::prestage::{Prestage, Staged};
use crate::reassembly::{self, ReassemblyMemcap, Segment};
use crate::staged::{DetectTable, Script};
use crate::table::{FlowTable, ShardGuard};

// The engine's counters and result belong to the events vocabulary, where the sinks read them.
pub use flowbundle_events::{EngineStats, Finished, ProtoCount};

/// When flow `f` times out: the last packet's time plus the timeout of its state (a packet later than this ends it,
/// `Flow::expired_at`).
#[inline]
fn deadline(f: &Flow, t: &crate::config::Timeouts) -> u64 {
    f.last_ns.saturating_add(f.timeout_ns(t))
}

/// The name of Suricata's `app_layer.flow.<name>` counter for a flow labelled `app` (decided by `evidence`) over
/// `transport`: the flow's EVE `app_proto` (see `AppLabel::eve_name`), with `_tcp` / `_udp` for the protocols
/// Suricata counts per transport, so `failed_tcp` / `failed_udp` for what Suricata's detection fails on
/// (unidentified flows, protocols Suricata has no parser for, signature names, port guesses); `None` for flows of
/// other IP protocols.
fn suricata_flow_counter(
    app: &AppLabel,
    evidence: Option<Evidence>,
    transport: Transport,
) -> Option<&'static str> {
    let tcp = match transport {
        Transport::Tcp => true,
        Transport::Udp => false,
        Transport::Icmp | Transport::Other(_) => return None,
    };
    let name = match app {
        AppLabel::Proto(p) if evidence != Some(Evidence::Port) => p.eve_name(),
        AppLabel::Unknown | AppLabel::Proto(_) | AppLabel::Signature(_) => "failed",
        AppLabel::Ip(_) => return None,
    };
    // Suricata's counters for the protocols it parses over both transports.
    Some(match (name, tcp) {
        ("failed", true) => "failed_tcp",
        ("failed", false) => "failed_udp",
        ("dns", true) => "dns_tcp",
        ("dns", false) => "dns_udp",
        ("krb5", true) => "krb5_tcp",
        ("krb5", false) => "krb5_udp",
        ("ldap", true) => "ldap_tcp",
        ("ldap", false) => "ldap_udp",
        ("nfs", true) => "nfs_tcp",
        ("nfs", false) => "nfs_udp",
        ("sip", true) => "sip_tcp",
        ("sip", false) => "sip_udp",
        ("enip", true) => "enip_tcp",
        ("enip", false) => "enip_udp",
        ("dcerpc", true) => "dcerpc_tcp",
        ("dcerpc", false) => "dcerpc_udp",
        // Suricata names RTSP in `app_proto` but keeps no flow counter for it.
        ("rtsp", _) => return None,
        (n, _) => n,
    })
}

/// A flow a sweep took out of its shard, to be ended later ([`Engine::take_expired`]).
pub(crate) struct Expired {
    deadline: u64,
    id: u64,
    bundle: u16,
    flow: Flow,
}

/// The input position of packet `num` for the FTP expectation table ([`WorkerCtx::input_at`]).
#[inline]
pub(crate) fn packet_at(num: u64) -> u64 {
    num.saturating_mul(2).saturating_add(1)
}

/// The input position of the sweep after packet `num` ([`WorkerCtx::input_at`]).
pub(crate) fn sweep_at(num: u64) -> u64 {
    num.saturating_mul(2).saturating_add(2)
}

/// Flow ids stay below 2^52 so that JSON readers that parse numbers as doubles keep them exact.
const FLOW_ID_MASK: u64 = (1 << 52) - 1;

/// One worker's state: events produced, counters, the rule scanner, cost figures. Create with
/// [`Engine::new_ctx`]; hand back to [`Engine::finish`].
pub struct WorkerCtx {
    pub(crate) events: Vec<Event>,
    pub(crate) stats: EngineStats,
    pub(crate) scanner: Option<Scanner>,
    pub(crate) cost: CostSummary,
    pub(crate) records: Vec<CostRecord>,
    pub(crate) max_ts: u64,
    /// What the app layer produced during the current packet, folded in by [`Engine::absorb`].
    pub(crate) produced: Produced,
    /// The detection context this worker inspects with, and its epoch (see "Reloading" in the module
    /// documentation).
    pub(crate) det: Arc<Detection>,
    pub(crate) det_epoch: u64,
    /// Alerts per signature id counted by the scanners of earlier epochs (a reload retires the scanner).
    retired_hits: Vec<(u32, u64)>,
    /// In the flow stage of a staged execution model: the script of the packet being inspected, where events and
    /// rules calls go instead (see [`crate::staged`]).
    pub(crate) defer: Option<Script>,
    sample_every: u32,
    sample_left: u32,
    /// The flow of the packet inspected last is dropped (a `drop`, `reject` or `sdrop` rule matched on it).
    packet_dropped: bool,
    slot: usize,
    /// Packets this context finished with, in whichever stage (see [`crate::stream::StatsBoard`]): what a worker's
    /// publication schedule counts, the same for a run-to-completion worker and for either stage of a staged model.
    pub(crate) handled: u64,
    /// Unique among every context ever made (never 0; see [`WorkerCtx::uid`]).
    uid: u64,
    /// Where in the input this context is, for the FTP expectation table's positions (see [`crate::expect`]):
    /// `2n + 1` while inspecting packet `n`, `2n + 2` in the sweep after it (set by the runtime); what it changes
    /// there is made at this position, and what it looks up sees the changes made before it.
    pub(crate) input_at: u64,
}

/// Source of [`WorkerCtx::uid`]s.
static NEXT_CTX_UID: AtomicU64 = AtomicU64::new(1);

impl WorkerCtx {
    /// The worker this context serves in a parallel run (set by the runtime adapter, [`crate::InspectWorkload`],
    /// which keeps per-worker scratch by it; 0 for a fresh context).
    pub fn worker(&self) -> usize {
        self.slot
    }

    /// Says which worker this context now serves (see [`WorkerCtx::worker`]).
    pub fn set_worker(&mut self, w: usize) {
        self.slot = w;
    }

    /// A number no other context has or will have in this process (contexts are not `Clone`): what lets the runtime
    /// adapter keep per-context scratch outside the context and know that only this context, through `&mut`, ever
    /// touches it.
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// Moves the events produced so far into `out` (streaming output: the single-threaded path writes them as it
    /// goes, in production order, which for one worker is already deterministic).
    pub fn take_events(&mut self, out: &mut Vec<Event>) {
        out.append(&mut self.events);
    }

    /// Hands the events produced so far to `f` and drops them here (no allocation: the context keeps its list's
    /// capacity); returns how many there were.
    pub fn render_events(&mut self, f: impl FnOnce(&[Event])) -> usize {
        let n = self.events.len();
        f(&self.events);
        self.events.clear();
        n
    }

    /// Counts a sweep run on every worker at once (each worker's share counts none; see
    /// [`Engine::expire_shards`]).
    pub(crate) fn add_sweep(&mut self) {
        self.stats.flow_sweeps += 1;
    }

    /// Events waiting to be taken.
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// The events waiting to be taken, in order.
    pub fn pending(&self) -> &[Event] {
        &self.events
    }

    /// Whether the packet inspected last belongs to a dropped flow (a dropping rule matched on it, on this packet or
    /// an earlier one): what an inline sensor must not forward.
    pub fn packet_dropped(&self) -> bool {
        self.packet_dropped
    }

    /// Moves the per-packet cost records kept so far into `out`.
    pub fn take_cost_records(&mut self, out: &mut Vec<CostRecord>) {
        out.append(&mut self.records);
    }

    /// The counters so far.
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// The cost figures so far.
    pub fn cost(&self) -> &CostSummary {
        &self.cost
    }

    /// Latest capture time seen.
    pub fn max_ts(&self) -> u64 {
        self.max_ts
    }

    /// Retires the scanner of the rules this context inspected with (a reload replaces them, and the end of a run
    /// reads them): its counters go into the context's, its alerts per rule into [`WorkerCtx::retired_hits`] by
    /// signature id (`noalert` rules left out: their matches raise no alert). A profile is not kept: it is indexed by
    /// the retired set's rules.
    fn retire_scanner(&mut self) {
        let Some(sc) = self.scanner.take() else {
            return;
        };
        self.stats.rules += *sc.stats();
        let Some(rules) = self.det.rules() else {
            return;
        };
        let mut hits = Vec::new();
        sc.add_hit_counts(&mut hits);
        for (r, n) in rules.rules().iter().zip(hits) {
            // `noalert` rules and `pass` rules without `alert` raise no alert: their matches are not alerts per rule.
            if n == 0 || r.noalert || (r.action.passes() && !r.alert) {
                continue;
            }
            match self.retired_hits.iter_mut().find(|(sid, _)| *sid == r.sid) {
                Some(h) => h.1 += n,
                None => self.retired_hits.push((r.sid, n)),
            }
        }
    }

    /// Makes this context a flow-stage context of a staged execution model (see [`crate::staged`]): the rules calls
    /// and events of the packets it inspects from now on are recorded in `script` for the detection stage
    /// ([`Engine::detect_stage`]) instead of running and going to the event list. Take the script back with
    /// [`WorkerCtx::take_script`].
    pub fn record_for_detection(&mut self, script: Script) {
        self.defer = Some(script);
    }

    /// The script this context records into, if any; the context runs every stage at once again afterwards.
    pub fn take_script(&mut self) -> Option<Script> {
        self.defer.take()
    }

    #[inline]
    fn sample(&mut self) -> bool {
        if self.sample_every == 0 {
            return false;
        }
        if self.sample_left == 0 {
            self.sample_left = self.sample_every - 1;
            true
        } else {
            self.sample_left -= 1;
            false
        }
    }
}

/// Per-packet timing state.
#[derive(Clone, Copy)]
struct Timing {
    t0: u64,
    t_decoded: u64,
    on: bool,
}

/// A packet decoded before its flow's bundle is held: made by [`Engine::predecode`], inspected by
/// [`Engine::process_predecoded`].
///
/// It exists for `ph`'s late claim, where, as in PAM, a worker decodes the packet it took from the receive queue and
/// only then claims its connection (the race between two workers decoding packets of one connection is where `ph`'s
/// reordering comes from). The decode touches no flow state, so it may run before the claim; keeping its result
/// saves decoding the packet twice. It borrows the packet's bytes and allocates nothing. Its cycle count starts
/// before the decode, so the claim between the two calls counts in the packet's cost (as flow lookup in the stage
/// times).
#[derive(Clone, Copy)]
pub struct PreDecoded<'p> {
    d: Decoded<'p>,
    ts_ns: u64,
    wire_len: u32,
    tm: Timing,
}

/// The detection context workers adopt, and its epoch (see "Reloading" in the module documentation).
struct DetectionSlot {
    current: std::sync::Mutex<Arc<Detection>>,
    /// Bumped by each [`Engine::reload`], after `current` was replaced.
    epoch: AtomicU64,
}

/// The inspection engine. See the module documentation.
///
/// Aligned to 128 bytes (two cache lines, the unit the L2 prefetcher pulls in) so that no other value shares a line
/// with it: every worker reads its fields on every packet, and a caller keeps it on its stack beside the
/// collector's busy state.
#[repr(align(128))]
pub struct Engine {
    cfg: EngineConfig,
    /// What the app layer reads: registry, signatures, rules (see [`crate::detect`]), replaced by a reload.
    det: DetectionSlot,
    table: FlowTable,
    /// Per bundle, a time no flow of its shard expires before: a lower bound of `last_ns + timeout` over the
    /// shard's flows (see [`Engine::note_deadline`]). A sweep ([`Engine::expire_all`]) reads only the shards whose
    /// bound it is past. Relaxed atomics: only the worker holding the bundle reads or writes its entry, and the
    /// scheduler's hand-over of the bundle orders successive holders, as it does for the shard itself (a sweep runs
    /// while no worker holds any).
    expiry_floor: Box<[AtomicU64]>,
    /// Written by every worker (a segment buffered or released, an FTP announcement or look-up, the expectation
    /// table's floor): each on cache lines of its own, away from what the workers read on every packet.
    memcap: CachePadded<ReassemblyMemcap>,
    expect: CachePadded<Expectations>,
    /// The detection stage's per-flow state when detection runs as a stage of its own ([`Engine::staged`]).
    detect_table: Option<DetectTable>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let det = self.detection();
        f.debug_struct("Engine")
            .field("table", &self.table)
            .field("signatures", &det.signatures().map(|s| s.len()))
            .field("rules", &det.rules().map(|r| r.len()))
            .field("epoch", &self.epoch())
            .finish()
    }
}

impl Engine {
    /// An engine with the built-in detectors, and optionally an L7-filter signature set and content rules.
    pub fn new(
        cfg: EngineConfig,
        signatures: Option<SignatureSet>,
        rules: Option<RuleSet>,
    ) -> Self {
        Self::with_shared(cfg, signatures.map(Arc::new), rules.map(Arc::new))
    }

    /// Like [`Engine::new`] with signature and rule sets shared with other engines: many engines (one per bench
    /// run, or per test) over sets compiled once. Per-flow and per-worker matching state lives in the engine's flows
    /// and [`WorkerCtx`]s, never in the sets, so sharing them changes no result.
    pub fn with_shared(
        cfg: EngineConfig,
        signatures: Option<Arc<SignatureSet>>,
        rules: Option<Arc<RuleSet>>,
    ) -> Self {
        let det = DetectionSlot {
            current: std::sync::Mutex::new(Arc::new(Detection::new(&cfg, signatures, rules))),
            epoch: AtomicU64::new(0),
        };
        Engine {
            table: FlowTable::new(cfg.max_flows),
            expiry_floor: (0..BUNDLES).map(|_| AtomicU64::new(u64::MAX)).collect(),
            memcap: CachePadded::new(ReassemblyMemcap::new(cfg.reassembly_memcap)),
            expect: CachePadded::new(Expectations::new(
                cfg.max_expectations,
                cfg.expectation_ttl_ns,
            )),
            cfg,
            det,
            detect_table: None,
        }
    }

    /// The engine with detection as a stage of its own, for the software pipeline and MultiLayer Processing (see
    /// [`crate::staged`]): workers whose context records ([`WorkerCtx::record_for_detection`]) leave each packet's
    /// rules calls and events in a [`Script`], and [`Engine::detect_stage`] runs it with the detection state this
    /// engine keeps apart from the connection table. Contexts that do not record run every stage at once, as
    /// usual, on the connection table's own matcher state: one engine must use one or the other throughout.
    pub fn staged(mut self) -> Self {
        self.detect_table = Some(DetectTable::default());
        self
    }

    /// Whether detection runs as a stage of its own ([`Engine::staged`]).
    pub fn is_staged(&self) -> bool {
        self.detect_table.is_some()
    }

    /// The detection stage of one packet of bundle `held`: runs the script its flow stage left (see
    /// [`crate::staged`]), appending the packet's events (its own, the alerts, flow records) to the context; `packet` is
    /// the packet's bytes as the flow stage saw them ([`Script::packet_is`], empty if it did not say). Without
    /// staged detection the script is dropped.
    pub fn detect_stage(
        &self,
        ctx: &mut WorkerCtx,
        held: &mut BundleToken,
        script: &mut Script,
        packet: &[u8],
    ) {
        ctx.packet_dropped = false;
        let Some(table) = &self.detect_table else {
            script.clear();
            return;
        };
        self.adopt(ctx);
        ctx.packet_dropped = crate::staged::run_script(table, ctx, held, script, packet);
        self.absorb(ctx);
    }

    /// Ends flows through `end` with a script when detection is staged, then runs the script at once.
    ///
    /// # Safety
    /// No other thread uses the shards of the flows `end` ends (their steps run on those shards of the detection
    /// table): a sweep's or the end of input's share of the shards, or every bundle held.
    unsafe fn ending_all(&self, ctx: &mut WorkerCtx, end: impl FnOnce(&Self, &mut WorkerCtx)) {
        let Some(table) = &self.detect_table else {
            end(self, ctx);
            return;
        };
        let outer = ctx.defer.replace(Script::default());
        end(self, ctx);
        if let Some(mut script) = std::mem::replace(&mut ctx.defer, outer) {
            // SAFETY: the caller's promise.
            unsafe { crate::staged::run_script_all(table, ctx, &mut script) };
        }
    }

    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// What identification and rule matching read now (registry, signatures, rules): the context of the latest
    /// [`Engine::reload`], or the one the engine was built with.
    pub fn detection(&self) -> Arc<Detection> {
        Arc::clone(&self.det.current.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The signature set inspected with now.
    pub fn signatures(&self) -> Option<Arc<SignatureSet>> {
        self.detection().shared_signatures()
    }

    /// The rule set inspected with now.
    pub fn rules(&self) -> Option<Arc<RuleSet>> {
        self.detection().shared_rules()
    }

    /// How many times the detection context was replaced ([`Engine::reload`]).
    pub fn epoch(&self) -> u64 {
        self.det.epoch.load(Acquire)
    }

    /// Replaces the signature and rule sets (see "Reloading" in the module documentation): each worker context
    /// adopts them before the next packet it inspects, flows keep their state, and what they inspect from then on
    /// meets the new sets. Passing the signature set in use (the same `Arc`) keeps the flows' signature matching. Safe at any time; which packets a concurrent worker inspects with which set is the
    /// caller's to arrange (the live reader drains its packets in flight first). Returns the new epoch.
    pub fn reload(
        &self,
        signatures: Option<Arc<SignatureSet>>,
        rules: Option<Arc<RuleSet>>,
    ) -> u64 {
        let mut det = Detection::new(&self.cfg, signatures, rules);
        let mut cur = self.det.current.lock().unwrap_or_else(|e| e.into_inner());
        let epoch = self.det.epoch.load(Acquire) + 1;
        let same_signatures = match (det.signatures.as_ref(), cur.signatures.as_ref()) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        det.sig_epoch = if same_signatures {
            cur.sig_epoch
        } else {
            epoch
        };
        *cur = Arc::new(det);
        // Under the lock, so that a worker that sees the new epoch finds the new context.
        self.det.epoch.store(epoch, Release);
        epoch
    }

    /// Brings `ctx` to the current detection context when a reload replaced it: retires its scanner (counters and
    /// alerts per rule kept) and builds one for the new rules. One atomic load when nothing changed.
    #[inline]
    fn adopt(&self, ctx: &mut WorkerCtx) {
        if ctx.det_epoch != self.det.epoch.load(Acquire) {
            self.adopt_slow(ctx);
        }
    }

    #[cold]
    fn adopt_slow(&self, ctx: &mut WorkerCtx) {
        let (det, epoch) = {
            let cur = self.det.current.lock().unwrap_or_else(|e| e.into_inner());
            (Arc::clone(&cur), self.det.epoch.load(Acquire))
        };
        ctx.retire_scanner();
        ctx.scanner = self.scanner_for(&det);
        ctx.det = det;
        ctx.det_epoch = epoch;
    }

    /// A scanner for `det`'s rules (profiling as configured).
    fn scanner_for(&self, det: &Detection) -> Option<Scanner> {
        det.rules().map(|r| {
            let mut sc = r.scanner();
            if self.cfg.rules_profile {
                sc.enable_profile(r);
            }
            sc
        })
    }

    pub fn expectations(&self) -> &Expectations {
        &self.expect
    }

    /// The connection table (flow count, cap, peak).
    pub fn table(&self) -> &FlowTable {
        &self.table
    }

    /// Entries the shards' tables have room for, all shards together, and the flow slots the flow store has
    /// memory for (see [`crate::table`]): what the table costs beyond the flows tracked now.
    pub fn table_slots(&mut self) -> (usize, usize) {
        self.table.slots()
    }

    /// The reassembly memcap (bytes held now, peak, cap).
    pub fn reassembly_memcap(&self) -> &ReassemblyMemcap {
        &self.memcap
    }

    /// Bytes of one tracked flow before its protocol state (parser, transactions, buffers, reassembly): what the
    /// flow cap multiplies at least. An open HTTP flow measured several times this (see
    /// [`crate::EngineConfig::max_flows`]).
    pub fn flow_size() -> usize {
        // The flow in the store, and its table entry: key, slot and control byte.
        std::mem::size_of::<Flow>() + std::mem::size_of::<FlowKey>() + 16 + 1
    }

    /// A fresh worker context.
    pub fn new_ctx(&self) -> WorkerCtx {
        let (det, det_epoch) = {
            let cur = self.det.current.lock().unwrap_or_else(|e| e.into_inner());
            (Arc::clone(&cur), self.det.epoch.load(Acquire))
        };
        WorkerCtx {
            events: Vec::new(),
            stats: EngineStats::default(),
            scanner: self.scanner_for(&det),
            det,
            det_epoch,
            retired_hits: Vec::new(),
            produced: Produced::default(),
            defer: None,
            cost: CostSummary::new(),
            records: Vec::new(),
            max_ts: 0,
            sample_every: self.cfg.cost.stage_sample_every,
            sample_left: 0,
            packet_dropped: false,
            handled: 0,
            slot: 0,
            uid: NEXT_CTX_UID.fetch_add(1, Relaxed),
            input_at: u64::MAX,
        }
    }

    /// The bundle the single-threaded path files a packet's flow under (any function of the flow works when one
    /// thread does everything; this is `dh`'s and `lfb`'s: the CRC-16 of the flow identifier).
    /// An ICMPv4 error goes with the flow it quotes ([`flowbundle_decode::quoted_flow`]), as the prestage's hashes
    /// send it there in a parallel run.
    pub fn serial_bundle(d: &Decoded<'_>) -> u16 {
        flowbundle_decode::bundle_of(d)
    }

    /// Inspects one packet of bundle `held` (the packet's flow lives in that bundle's shard of the table). `num`
    /// names the packet in cost records (the input packet index, or the bench harness's descriptor id). Returns true
    /// when the packet's flow got its final identification now (the runtime then tells the scheduler, see
    /// `Scheduler::classified`).
    ///
    /// The token is the exclusivity: whoever minted it promised that no other thread touches that shard meanwhile
    /// (the runtime does between a scheduler's `claim` and `done`). Every packet of a connection must be given the
    /// same bundle for the output to be right (a different one files the connection in another shard, a second flow);
    /// debug builds also check the exclusivity and panic when a minting promise was broken.
    pub fn process(
        &self,
        ctx: &mut WorkerCtx,
        held: &mut BundleToken,
        num: u64,
        rec: &PacketRecord<'_>,
    ) -> bool {
        let p = self.predecode(ctx, rec);
        self.process_predecoded(ctx, held, num, &p)
    }

    /// Decodes a packet for [`Engine::process_predecoded`]: the first half of [`Engine::process`], which touches no
    /// flow state and so needs no bundle (see [`PreDecoded`]). Decides whether this packet's stage times are sampled.
    pub fn predecode<'p>(&self, ctx: &mut WorkerCtx, rec: &PacketRecord<'p>) -> PreDecoded<'p> {
        let t0 = cost::now();
        let on = ctx.sample();
        let d = decode(rec, &self.cfg.decode);
        PreDecoded {
            d,
            ts_ns: rec.ts_ns,
            wire_len: rec.orig_len,
            tm: Timing {
                t0,
                t_decoded: if on { cost::now() } else { 0 },
                on,
            },
        }
    }

    /// Inspects a packet [`Engine::predecode`] decoded: the second half of [`Engine::process`], with the same result.
    pub fn process_predecoded(
        &self,
        ctx: &mut WorkerCtx,
        held: &mut BundleToken,
        num: u64,
        p: &PreDecoded<'_>,
    ) -> bool {
        self.process_timed(ctx, held, num, p.ts_ns, p.wire_len, &p.d, p.tm)
    }

    /// Like [`Engine::process`] for a packet already decoded (the bench harness decodes before claiming under `ph`).
    /// `wire_len` is the packet's length on the wire.
    pub fn process_decoded(
        &self,
        ctx: &mut WorkerCtx,
        held: &mut BundleToken,
        num: u64,
        ts_ns: u64,
        wire_len: u32,
        d: &Decoded<'_>,
    ) -> bool {
        let t0 = cost::now();
        let on = ctx.sample();
        let tm = Timing {
            t0,
            t_decoded: t0,
            on,
        };
        self.process_timed(ctx, held, num, ts_ns, wire_len, d, tm)
    }

    #[allow(clippy::too_many_arguments)]
    fn process_timed(
        &self,
        ctx: &mut WorkerCtx,
        held: &mut BundleToken,
        num: u64,
        ts_ns: u64,
        wire_len: u32,
        d: &Decoded<'_>,
        tm: Timing,
    ) -> bool {
        self.adopt(ctx);
        ctx.input_at = packet_at(num);
        ctx.stats.packets += 1;
        ctx.packet_dropped = false;
        if let Some(script) = ctx.defer.as_mut() {
            script.bundle = held.bundle();
        }
        ctx.stats.bytes += u64::from(wire_len);
        ctx.stats.decode.record(d);
        ctx.max_ts = ctx.max_ts.max(ts_ns);
        if d.outcome.is_decoded()
            && let Some(ip) = d.ip
        {
            if ip.is_fragment() {
                ctx.stats.fragments_unreassembled += 1;
                self.inspect_flowless(ctx, num, ts_ns, d, DecodeEvents::default());
            } else if d.icmp_errors_in_quoted_flow && flowbundle_decode::is_icmpv4_error(d) {
                // Filed as Suricata files ICMPv4 errors (`DecodeOptions::icmp_errors_in_quoted_flow`): one never
                // starts a flow. A destination unreachable that quotes a tracked flow's packet is counted and
                // inspected in that flow (its key is the quoted one, so it was dispatched to that flow's bundle);
                // any other is inspected without a flow.
                if let Some(c) = self.on_icmp_error(ctx, held, num, ts_ns, wire_len, d, tm) {
                    return c;
                }
                self.inspect_flowless(ctx, num, ts_ns, d, DecodeEvents::default());
            } else if let Some((key, dir)) = FlowKey::from_decoded(d) {
                let bundle = held.bundle();
                let mut shard = self.table.shard(held);
                // A tunnelled packet counts in its flow with the inner packet's length, as Suricata counts the
                // packet it makes of a tunnel's payload.
                let flow_len = if d.tunnels > 0 {
                    d.tunnel_len
                } else {
                    wire_len
                };
                let tracked = self.on_flow_packet(
                    ctx, &mut shard, bundle, num, key, dir, ts_ns, flow_len, d, tm,
                );
                self.absorb(ctx);
                if let Some(c) = tracked {
                    return c;
                }
            }
        } else if d.outcome.is_decoded() {
            ctx.stats.not_ip += 1;
        } else if d.ip.is_some() || !d.events.is_empty() {
            // Headers that did not decode: no flow, but the packet rules (decoder events) see it.
            self.inspect_flowless(ctx, num, ts_ns, d, DecodeEvents::default());
        }
        // No flow: count the cost, nothing else.
        let cycles = cost::now().wrapping_sub(tm.t0);
        ctx.cost.add_packet(0, cycles);
        if self.cfg.cost.per_packet_records {
            ctx.records.push(CostRecord {
                packet: num,
                ns: cost::cycles_to_ns(cycles).min(u32::MAX as f64) as u32,
                cycles: cycles.min(u64::from(u32::MAX)) as u32,
                proto: d.ip.map_or(0, |i| i.proto),
                dir: 2,
                ..CostRecord::default()
            });
        }
        false
    }

    /// An ICMPv4 destination unreachable in the flow it quotes: `None` when it quotes none that is tracked (and
    /// live). Its direction is Suricata's: to the server when the client sent it, to the client otherwise (a
    /// router's or the server's message about the client's packet).
    #[allow(clippy::too_many_arguments)]
    fn on_icmp_error(
        &self,
        ctx: &mut WorkerCtx,
        held: &mut BundleToken,
        num: u64,
        ts_ns: u64,
        wire_len: u32,
        d: &Decoded<'_>,
        tm: Timing,
    ) -> Option<bool> {
        let key = flowbundle_decode::quoted_flow(d)?;
        let src = d.ip?.src;
        let bundle = held.bundle();
        let mut shard = self.table.shard(held);
        let f = shard.get_mut(&key)?;
        if f.expired_at(ts_ns, &self.cfg.timeouts) {
            return None;
        }
        let (client_addr, _, _, _) = f.key.endpoints(f.client);
        let dir = if src == client_addr {
            f.client
        } else {
            f.client.flip()
        };
        let c = self.on_packet(ctx, f, num, dir, ts_ns, wire_len, d, tm);
        ctx.packet_dropped |= f.app.rules.dropped();
        self.note_deadline(bundle, f);
        drop(shard);
        self.absorb(ctx);
        Some(c)
    }

    /// Folds what the app layer produced during a packet into this engine's state: its counters into the worker's
    /// stats, its FTP data-connection announcements into the expectation table.
    fn absorb(&self, ctx: &mut WorkerCtx) {
        let p = &mut ctx.produced;
        ctx.stats.alerts += std::mem::take(&mut p.alerts);
        ctx.stats.app_events += std::mem::take(&mut p.app_events);
        for a in p.announced.drain(..) {
            self.expect
                .add(a.listener, a.port, a.peer, a.ts_ns, ctx.input_at);
        }
        for (a, file) in p.named.drain(..) {
            self.expect
                .name_file(a.listener, a.port, a.peer, file, ctx.input_at);
        }
    }

    /// The packet rules on a packet no flow tracks ([`app::scan_flowless`]); `extra` adds the defragmenter's events.
    fn inspect_flowless(
        &self,
        ctx: &mut WorkerCtx,
        num: u64,
        ts_ns: u64,
        d: &Decoded<'_>,
        extra: DecodeEvents,
    ) {
        // Borrowed, not cloned: the context's `Arc` is shared with every worker, whose reference count (beside the
        // detection context's fields, which every packet reads) a clone and its drop would write.
        let det = &*ctx.det;
        let start = ctx.events.len();
        app::flowless_anomalies(det, &mut ctx.events, num, ts_ns, d, extra);
        let dropped = app::scan_flowless(
            det,
            &mut ctx.scanner,
            &mut ctx.events,
            &mut ctx.produced,
            num,
            ts_ns,
            d,
            extra,
        );
        // In the flow stage of a staged model the packet rules run here (a flowless packet has no matcher state for
        // the detection stage to own), and its alerts travel in the packet's script, as its other events do.
        if let Some(script) = ctx.defer.as_mut() {
            for ev in ctx.events.drain(start..) {
                script.pass(ev);
            }
        }
        ctx.packet_dropped |= dropped;
        self.absorb(ctx);
    }

    /// A fragment the defragmenter saw (held, dropped, or the one that completed a datagram) is still a packet:
    /// Suricata runs its packet rules (`decode-event:ipv6.frag_overlap`, `alert ip ...`) on it, without a flow,
    /// with `frag_events`, the defragmenter's events on it. Its events are counted here, where the engine counts
    /// the packets it inspects. Every execution path calls this for each fragment, so they agree.
    /// `held` is the bundle the packet was dispatched in (a staged run's detection stage runs its steps there).
    pub fn inspect_fragment(
        &self,
        ctx: &mut WorkerCtx,
        held: &BundleToken,
        num: u64,
        ts_ns: u64,
        d: &Decoded<'_>,
        frag_events: DecodeEvents,
    ) {
        self.adopt(ctx);
        ctx.input_at = packet_at(num);
        ctx.packet_dropped = false;
        if let Some(script) = ctx.defer.as_mut() {
            script.bundle = held.bundle();
        }
        ctx.stats.decode.record_events(d.events.union(frag_events));
        self.inspect_flowless(ctx, num, ts_ns, d, frag_events);
    }

    /// The single-threaded path: one packet through defragmentation ([`Prestage`]) and inspection, decoding it once.
    /// `&mut self` is the exclusivity. Returns whether a flow got its final identification.
    pub fn process_serial(
        &mut self,
        ctx: &mut WorkerCtx,
        pre: &mut Prestage,
        num: u64,
        rec: &PacketRecord<'_>,
    ) -> bool {
        let mut latest = 0;
        // SAFETY: `&mut self` excludes every other user of the table, so every bundle is this caller's.
        unsafe { self.process_staged(ctx, pre, num, rec, |_| true, &mut latest) }.unwrap_or(false)
    }

    /// [`Engine::process_serial`] on one of several threads that each read the whole input, each with its own
    /// [`Prestage`] that sees every packet (so every thread defragments alike), and inspect only the packets filed
    /// under a bundle `owns` accepts ([`Engine::serial_bundle`] of the packet, or of the datagram a fragment
    /// completes; a fragment the defragmenter held or dropped goes with its own). `None` for a packet another thread
    /// inspects. `latest` is raised to the capture time of every packet the single-threaded loop counts in its
    /// latest time (whole packets and completed datagrams, whoever inspects them), so each thread knows the
    /// single-threaded run's end of input without asking the others.
    ///
    /// # Safety
    /// No other thread uses the shards of the bundles `owns` accepts while this runs (each thread owns a disjoint set
    /// of bundles, and only its owner ever inspects a packet of one).
    ///
    /// `owns` is asked once per packet. A packet whose link and IP headers settle its bundle
    /// ([`flowbundle_decode::keyonly::plain_bundle`]: no fragment, no tunnel, no quoted ICMP error) is keyed from them
    /// alone, and passed over without being decoded or staged when another thread owns it ([`Prestage::pass`]); the
    /// others go through decoding and the defragmenter first, as in the single-threaded loop.
    pub unsafe fn process_owned(
        &self,
        ctx: &mut WorkerCtx,
        pre: &mut Prestage,
        num: u64,
        rec: &PacketRecord<'_>,
        owns: impl Fn(u16) -> bool,
        latest: &mut u64,
    ) -> Option<bool> {
        let key = self.plain_bundle(rec);
        // SAFETY: the caller's promise.
        unsafe { self.process_keyed(ctx, pre, num, rec, key, owns, latest) }
    }

    /// The key-only bundle of `rec` ([`flowbundle_decode::keyonly::plain_bundle`] under this engine's decoding
    /// options): `Some` where its link and IP headers settle it, and then the bundle [`Engine::process_owned`] files
    /// the packet under.
    #[inline]
    pub fn plain_bundle(&self, rec: &PacketRecord<'_>) -> Option<u16> {
        flowbundle_decode::keyonly::plain_bundle(rec.link_type, rec.data, &self.cfg.decode)
    }

    /// [`Engine::process_owned`] with the packet's key-only bundle already taken ([`Engine::plain_bundle`] of
    /// `rec`), for a caller that needed it before: the same call, without keying the packet twice.
    ///
    /// # Safety
    /// As [`Engine::process_owned`]; `key` is `self.plain_bundle(rec)`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub unsafe fn process_keyed(
        &self,
        ctx: &mut WorkerCtx,
        pre: &mut Prestage,
        num: u64,
        rec: &PacketRecord<'_>,
        key: Option<u16>,
        owns: impl Fn(u16) -> bool,
        latest: &mut u64,
    ) -> Option<bool> {
        debug_assert_eq!(
            key,
            self.plain_bundle(rec),
            "the key-only bundle of another packet"
        );
        let Some(bundle) = key else {
            // SAFETY: the caller's promise.
            return unsafe { self.process_staged(ctx, pre, num, rec, owns, latest) };
        };
        // No fragment: a whole packet, which the single-threaded loop counts in its latest time.
        *latest = (*latest).max(rec.ts_ns);
        if !owns(bundle) {
            pre.pass(rec.ts_ns);
            return None;
        }
        let t0 = cost::now();
        let on = ctx.sample();
        let d = decode(rec, &self.cfg.decode);
        let staged = pre.stage_decoded(&d, rec.ts_ns);
        debug_assert_eq!(staged, Staged::Whole, "key-only decoding passed a fragment");
        // SAFETY: the caller's promise: this thread alone uses the shards of the bundles it owns.
        Some(unsafe { self.inspect_decoded(ctx, num, rec, bundle, &d, (t0, on)) })
    }

    /// What [`Engine::process_keyed`] and [`Engine::process_held`] do once the packet is decoded (`d`, the clock read
    /// at `t0` before decoding when `on`): inspects it, numbered `num`, in `bundle`.
    ///
    /// # Safety
    /// As [`Engine::process_owned`]: this thread alone uses the shards of `bundle` now.
    #[inline]
    unsafe fn inspect_decoded(
        &self,
        ctx: &mut WorkerCtx,
        num: u64,
        rec: &PacketRecord<'_>,
        bundle: u16,
        d: &Decoded<'_>,
        (t0, on): (u64, bool),
    ) -> bool {
        debug_assert_eq!(
            Self::serial_bundle(d),
            bundle,
            "key-only decoding and decoding disagree on the bundle"
        );
        let tm = Timing {
            t0,
            t_decoded: if on { cost::now() } else { 0 },
            on,
        };
        // SAFETY: the caller's promise.
        let mut held = unsafe { BundleToken::assume_held(bundle) };
        self.process_timed(ctx, &mut held, num, rec.ts_ns, rec.orig_len, d, tm)
    }

    /// The bundle [`Engine::process_keyed`] files a packet under when its key-only decoding does not answer
    /// ([`Engine::plain_bundle`] is `None`: a tunnel, an ICMPv4 error filed under its quoted flow, no IP) and it is no
    /// IP fragment (whose bundle depends on the defragmenter's state): decodes it in full. `None` for a fragment.
    pub fn whole_bundle(&self, rec: &PacketRecord<'_>) -> Option<u16> {
        let d = decode(rec, &self.cfg.decode);
        if d.ip.is_some_and(|ip| ip.fragmented) {
            return None;
        }
        Some(Self::serial_bundle(&d))
    }

    /// The first half of [`Engine::process_keyed`] for a packet this worker owns whose inspection it puts off (a
    /// packet of a bucket it took over while the worker that had the bucket is not done with it, see
    /// [`crate::EachReads`]): counts it in the latest time and runs it through the pre-scheduling stage, now, in
    /// input order. [`Engine::process_held`] inspects it later. `rec` is no IP fragment (its bundle is its key-only
    /// one, or [`Engine::whole_bundle`]).
    pub fn stage_held(&self, pre: &mut Prestage, rec: &PacketRecord<'_>, latest: &mut u64) {
        *latest = (*latest).max(rec.ts_ns);
        let d = decode(rec, &self.cfg.decode);
        let staged = pre.stage_decoded(&d, rec.ts_ns);
        debug_assert_eq!(staged, Staged::Whole, "key-only decoding passed a fragment");
    }

    /// The second half of [`Engine::process_keyed`] for a packet [`Engine::stage_held`] staged: decodes it again and
    /// inspects it, numbered `num`, in bundle `bundle` (its key-only bundle, or [`Engine::whole_bundle`]).
    ///
    /// # Safety
    /// As [`Engine::process_owned`]: this thread alone uses the shards of `bundle` now.
    pub unsafe fn process_held(
        &self,
        ctx: &mut WorkerCtx,
        num: u64,
        rec: &PacketRecord<'_>,
        bundle: u16,
    ) -> bool {
        let t0 = cost::now();
        let on = ctx.sample();
        let d = decode(rec, &self.cfg.decode);
        // SAFETY: the caller's promise: this thread alone uses the shards of `bundle`.
        unsafe { self.inspect_decoded(ctx, num, rec, bundle, &d, (t0, on)) }
    }

    /// [`Engine::process_owned`] through decoding and the defragmenter for every packet (the single-threaded loop,
    /// and the packets whose headers alone do not settle their bundle).
    ///
    /// # Safety
    /// As [`Engine::process_owned`].
    unsafe fn process_staged(
        &self,
        ctx: &mut WorkerCtx,
        pre: &mut Prestage,
        num: u64,
        rec: &PacketRecord<'_>,
        owns: impl Fn(u16) -> bool,
        latest: &mut u64,
    ) -> Option<bool> {
        let t0 = cost::now();
        let on = ctx.sample();
        let d = decode(rec, &self.cfg.decode);
        let mut frag_events = DecodeEvents::default();
        match pre.stage_decoded_noting(&d, rec.ts_ns, &mut frag_events) {
            Staged::Whole => {
                *latest = (*latest).max(rec.ts_ns);
                let bundle = Self::serial_bundle(&d);
                if !owns(bundle) {
                    return None;
                }
                let tm = Timing {
                    t0,
                    t_decoded: if on { cost::now() } else { 0 },
                    on,
                };
                // SAFETY: the caller's promise: this thread alone uses the shards of the bundles it owns.
                let mut held = unsafe { BundleToken::assume_held(bundle) };
                Some(self.process_timed(ctx, &mut held, num, rec.ts_ns, rec.orig_len, &d, tm))
            }
            Staged::Absorbed => {
                let bundle = Self::serial_bundle(&d);
                if !owns(bundle) {
                    return None;
                }
                // SAFETY: as above.
                let held = unsafe { BundleToken::assume_held(bundle) };
                self.inspect_fragment(ctx, &held, num, rec.ts_ns, &d, frag_events);
                Some(false)
            }
            Staged::Reassembled(datagram) => {
                *latest = (*latest).max(rec.ts_ns);
                let len = u32::try_from(datagram.len()).unwrap_or(u32::MAX);
                let dd = decode_bytes(LinkType::RAW, datagram, &self.cfg.decode);
                let bundle = Self::serial_bundle(&dd);
                if !owns(bundle) {
                    return None;
                }
                // The fragment that completed the datagram is inspected as a packet first, without a flow, by the
                // datagram's owner (so its events come just before the datagram's); it is filed under its own
                // bundle as the single-threaded loop files it (only a staged run's detection stage reads that).
                // SAFETY: the fragment's bundle is only named, not used: a flowless inspection touches no shard.
                let frag_held = unsafe { BundleToken::assume_held(Self::serial_bundle(&d)) };
                self.inspect_fragment(ctx, &frag_held, num, rec.ts_ns, &d, frag_events);
                let tm = Timing {
                    t0,
                    t_decoded: if on { cost::now() } else { 0 },
                    on,
                };
                // SAFETY: as above.
                let mut held = unsafe { BundleToken::assume_held(bundle) };
                Some(self.process_timed(ctx, &mut held, num, rec.ts_ns, len, &dd, tm))
            }
        }
    }

    /// The id of a flow whose first packet is packet `num` of the input: a bijection of the 52-bit space (seeded),
    /// so distinct first packets give distinct ids: no two flows of a run share one, even when the same capture is
    /// read twice or two flows share a key and a start time. The same packet numbering gives the same ids whatever
    /// the thread count. Never `NO_FLOW` (0).
    fn flow_id(&self, num: u64) -> u64 {
        let mut x = (num ^ self.cfg.flow_id_seed) & FLOW_ID_MASK;
        // Odd multipliers are invertible modulo 2^52, and `x ^= x >> k` is invertible on 52 bits.
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15) & FLOW_ID_MASK;
        x ^= x >> 26;
        x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9) & FLOW_ID_MASK;
        x ^= x >> 23;
        // 0 is `NO_FLOW`: the one position that maps there takes 2^52, outside the permutation's range.
        if x == crate::event::NO_FLOW {
            FLOW_ID_MASK + 1
        } else {
            x
        }
    }

    /// Finds or creates the packet's flow and inspects the packet. `None` when the flow could not be tracked.
    #[allow(clippy::too_many_arguments)]
    fn on_flow_packet(
        &self,
        ctx: &mut WorkerCtx,
        shard: &mut ShardGuard<'_>,
        bundle: u16,
        num: u64,
        key: FlowKey,
        dir: KeySide,
        ts_ns: u64,
        wire_len: u32,
        d: &Decoded<'_>,
        tm: Timing,
    ) -> Option<bool> {
        let tcp_flags = d.tcp().map(|t| t.flags);
        let ending = match shard.get_mut(&key) {
            Some(f) => {
                if f.expired_at(ts_ns, &self.cfg.timeouts) {
                    Some(EndReason::Timeout)
                } else if tcp_flags.is_some_and(|fl| f.reused_by(fl)) {
                    Some(EndReason::TcpReuse)
                } else {
                    let c = self.on_packet(ctx, f, num, dir, ts_ns, wire_len, d, tm);
                    ctx.packet_dropped |= f.app.rules.dropped();
                    self.note_deadline(bundle, f);
                    return Some(c);
                }
            }
            None => None,
        };
        if let Some(reason) = ending
            && let Some(old) = shard.remove(&key)
        {
            self.table.remove_one();
            self.end_flow(ctx, old, reason);
        }
        // A new flow. The idle flows of its shard are not ended here with the new packet's time: which flows share
        // a shard depends on the scheduler's bundles, and on an input whose time goes backwards (captures merged
        // or concatenated) a flow ended that way may still have had packets to come, so the output would depend on
        // the scheduler. Idle flows end by their own next packet, by a sweep (`crate::sweep`, at the same input
        // positions for every scheduler and thread count) or at the end.
        if !self.table.try_add() {
            // Full: evict the least recently active flow of this shard if it has been idle long enough.
            let victim = shard
                .iter()
                .filter(|(_, f)| ts_ns.saturating_sub(f.last_ns) >= self.cfg.evict_min_idle_ns)
                .min_by_key(|(_, f)| (f.last_ns, f.id))
                .map(|(k, _)| *k);
            let evicted = victim.and_then(|k| shard.remove(&k));
            match evicted {
                Some(f) => {
                    self.table.remove_one();
                    self.end_flow(ctx, f, EndReason::Forced);
                    if !self.table.try_add() {
                        ctx.stats.flow_memcap += 1;
                        ctx.stats.untracked_packets += 1;
                        return None;
                    }
                }
                None => {
                    ctx.stats.flow_memcap += 1;
                    ctx.stats.untracked_packets += 1;
                    return None;
                }
            }
        }
        let transport = Transport::from_ip_proto(key.proto);
        let t = match transport {
            Transport::Tcp | Transport::Udp => Some(transport),
            Transport::Icmp | Transport::Other(_) => None,
        };
        let mut client = pick_client(&key, dir, tcp_flags, |p| {
            p < 1024 || t.is_some_and(|t| ctx.det.registry().port_guess(t, 0, p).is_some())
        });
        // A UDP flow picked up from its server's answer (a DNS response): the receiver is the client.
        if transport == Transport::Udp && client == dir {
            let (_, _, sport, dport) = key.endpoints(dir);
            if ctx
                .det
                .registry()
                .first_datagram_answers(sport, dport, d.payload)
            {
                client = dir.flip();
            }
        }
        if transport == Transport::Tcp && tcp_flags.is_some_and(|f| f & 0x02 == 0) {
            ctx.stats.tcp_midstream += 1;
        }
        let app = AppState::new(&ctx.det, ctx.det_epoch, &key, client, transport);
        let mut flow = Flow::new(self.flow_id(num), key, client, ts_ns, app);
        if matches!(transport, Transport::Tcp | Transport::Udp) {
            let (a, b, ap, bp) = key.endpoints(KeySide::Forward);
            if self.expect.lookup(a, ap, b, bp, ts_ns, ctx.input_at) {
                flow.app.set_ftp_data(1);
            }
        }
        ctx.stats.flows_created += 1;
        ctx.stats.flows_by_layer.record(d);
        let f = shard.insert(key, flow);
        let c = self.on_packet(ctx, f, num, dir, ts_ns, wire_len, d, tm);
        ctx.packet_dropped |= f.app.rules.dropped();
        self.note_deadline(bundle, f);
        Some(c)
    }

    /// Keeps the shard's expiry floor at or below flow `f`'s deadline after a packet: a packet can bring a
    /// deadline forward (a FIN or RST shortens the timeout from the established one to the closed one).
    #[inline]
    fn note_deadline(&self, bundle: u16, f: &Flow) {
        if let Some(fl) = self.expiry_floor.get(usize::from(bundle)) {
            let d = deadline(f, &self.cfg.timeouts);
            if d < fl.load(Relaxed) {
                fl.store(d, Relaxed);
            }
        }
    }

    /// Inspects one packet of flow `f`.
    #[allow(clippy::too_many_arguments)]
    fn on_packet(
        &self,
        ctx: &mut WorkerCtx,
        f: &mut Flow,
        num: u64,
        dir: KeySide,
        ts_ns: u64,
        wire_len: u32,
        d: &Decoded<'_>,
        tm: Timing,
    ) -> bool {
        let t_found = if tm.on { cost::now() } else { 0 };
        f.app.adopt(&ctx.det, ctx.det_epoch);
        f.last_ns = f.last_ns.max(ts_ns);
        f.pkts[dir.index()] += 1;
        f.bytes[dir.index()] += u64::from(wire_len);
        let position = u32::try_from(f.packets()).unwrap_or(u32::MAX);
        let to_server = dir == f.client;
        let icmp = match d.l4 {
            L4::Icmp(i) | L4::Icmpv6(i) => Some((i.msg_type, i.code)),
            _ => None,
        };
        if icmp.is_some() && f.transport == Transport::Icmp && f.icmp[dir.index()].is_none() {
            f.icmp[dir.index()] = icmp;
        }
        let meta = FlowMeta {
            id: f.id,
            key: f.key,
            client: f.client,
            start_ns: f.start_ns,
            pkts: f.pkts,
            bytes: f.bytes,
            established: false,
            transport: f.transport,
            pcap_cnt: Some(num + 1),
            icmp,
            stream_size: None,
        };
        let mut detect = 0u64;
        // Where this packet's events begin, and whether the flow had alerted before it (a `pass` withdraws the
        // packet's alerts).
        let ev_start = ctx.events.len();
        let alerted_before = f.alerted;
        // A flow a rule dropped or passed is not inspected any more, so its packets are not tagged either (Suricata
        // runs no detection on them).
        let inspected = !(f.app.rules.dropped() || f.app.rules.passed());
        let mut verdict = PacketVerdict::default();
        if let Some(script) = ctx.defer.as_mut() {
            script.packet_start(f.id);
        }
        let Flow {
            tcp,
            app,
            events,
            alerted,
            transport,
            ..
        } = f;
        let WorkerCtx {
            events: ev_list,
            stats,
            scanner,
            produced,
            det,
            defer,
            ..
        } = ctx;
        let det: &Detection = det;
        let tr = *transport;
        if det.anomaly().decode && !d.events.is_empty() {
            // The decoder's anomalies of the packet: EVE `anomaly` records of its flow.
            Out {
                det,
                events: ev_list,
                scanner: scanner.as_mut(),
                produced,
                meta: &meta,
                seq: events,
                alerted,
                ts_ns,
                verdict: PacketVerdict::default(),
                defer: defer.as_mut(),
            }
            .packet_anomalies(dir, d, d.events, StreamEvents::EMPTY);
        }
        match (tr, d.l4) {
            // In IPS mode the packets of a dropped flow are dropped before stream tracking sees them, as Suricata
            // drops them: the flow keeps the TCP state it had when it was dropped, and is counted, not inspected.
            _ if self.cfg.ips && app.rules.dropped() => {}
            // An ICMP error counted in the TCP or UDP flow it quotes: the packet rules see it (an `icmp` rule
            // matches it), the stream and the parsers do not.
            (Transport::Tcp | Transport::Udp, L4::Icmp(_)) => {
                // The rules see the message as it is (its own addresses and protocol, so `icmp` rules match it and
                // `tcp` rules do not), in its flow's state and direction.
                let (own, side) = match d.ip {
                    Some(ip) => FlowKey::new(ip.src, 0, ip.dst, 0, ip.proto),
                    None => (meta.key, dir),
                };
                let meta = FlowMeta {
                    key: own,
                    client: if to_server { side } else { side.flip() },
                    transport: Transport::Icmp,
                    established: false,
                    ..meta
                };
                let dir = side;
                let mut out = Out {
                    det,
                    events: ev_list,
                    scanner: scanner.as_mut(),
                    produced,
                    meta: &meta,
                    seq: events,
                    alerted,
                    ts_ns,
                    verdict: PacketVerdict::default(),
                    defer: defer.as_mut(),
                };
                if det.rules().is_some() {
                    let t1 = if tm.on { cost::now() } else { 0 };
                    app::scan_packet(
                        &mut out,
                        &mut app.rules,
                        &app.label,
                        false,
                        dir,
                        d.payload,
                        app::packet_headers(det, d, Some(&meta), ts_ns),
                        false,
                    );
                    if tm.on {
                        detect = cost::now().wrapping_sub(t1);
                    }
                }
                verdict = out.verdict;
            }
            (Transport::Tcp, L4::Tcp(th)) => {
                let Some(t) = tcp.as_deref_mut() else {
                    return false;
                };
                let before = t.state;
                // Suricata's Fast Open handling looks at the option on SYNs only.
                let tfo = th.has(flowbundle_decode::wire::tcp::flags::SYN)
                    && has_fast_open(th.options_raw);
                let mut stream_events = t.stream_events(
                    dir,
                    to_server,
                    (th.seq, th.ack),
                    th.flags,
                    d.payload.len(),
                    tfo,
                    self.cfg.midstream,
                );
                t.on_flags(dir, to_server, th.flags);
                t.on_seq(dir, th.seq, th.ack, d.payload.len(), th.flags);
                // `flow:established` as Suricata marks packets: from the flow's state before the packet, so the
                // handshake's last ACK is not yet established (and a RST or last FIN still is); a mid-stream pickup
                // is established from its first packet, when such pickups count at all (`midstream`).
                let est = |s| {
                    matches!(
                        s,
                        crate::event::TcpState::Established
                            | crate::event::TcpState::FinWait1
                            | crate::event::TcpState::CloseWait
                    )
                };
                let pickup = t.midstream && before == crate::event::TcpState::None && est(t.state);
                // The ACK that completes the handshake carrying data (its own ACK was lost, or never sent) is
                // established for that data, as Suricata tags it since 7.0.7.
                let completes_with_data = before == crate::event::TcpState::SynRecv
                    && est(t.state)
                    && !d.payload.is_empty();
                let meta = FlowMeta {
                    established: (est(before) || pickup || completes_with_data)
                        && (self.cfg.midstream || !t.midstream),
                    stream_size: Some(t.stream_sizes(meta.client)),
                    ..meta
                };
                let mut out = Out {
                    det,
                    events: ev_list,
                    scanner: scanner.as_mut(),
                    produced,
                    meta: &meta,
                    seq: events,
                    alerted,
                    ts_ns,
                    verdict: PacketVerdict::default(),
                    defer: defer.as_mut(),
                };
                let gaps_before = stats.reassembly.gaps;
                let AppState {
                    fa,
                    sig,
                    rules,
                    label,
                    application,
                    risks,
                    ftp_file,
                    ..
                } = app;
                let mut rstats = std::mem::take(&mut stats.reassembly);
                let mut sink = StreamCx {
                    out: &mut out,
                    fa,
                    sig,
                    rules,
                    label,
                    application,
                    risks,
                    ftp_file,
                    fed_sig: false,
                    timing: tm.on,
                    detect_cycles: 0,
                    payload: d.payload,
                    whole: false,
                    gap_at: [None; 2],
                };
                let mut rcx = reassembly::Ctx {
                    cfg: &self.cfg.reassembly,
                    memcap: &self.memcap,
                    stats: &mut rstats,
                    sink: &mut sink,
                };
                // Data the stream does not take goes to neither reassembly nor the parsers; the rules inspect it
                // as a packet below. The segment's flags still move the reassembler's state.
                let unstreamed =
                    !d.payload.is_empty() && outside_stream(before, t, &th, self.cfg.midstream);
                t.reasm.segment(
                    dir,
                    &Segment {
                        seq: th.seq,
                        flags: th.flags,
                        payload: if unstreamed { &[] } else { d.payload },
                        ts_ns,
                    },
                    &mut rcx,
                );
                let fed = sink.fed_sig;
                let whole = sink.whole && !unstreamed;
                let gap_at = sink.gap_at;
                detect = sink.detect_cycles;
                stats.reassembly = rstats;
                t.gaps += (stats.reassembly.gaps - gaps_before) as u32;
                // Suricata raises `reassembly_seq_gap` on the packet whose processing hands a gap on to the
                // application layer, and only for a gap the receiver has acknowledged data past (capture loss);
                // bytes missing before a RST or FIN that nobody acknowledged are no gap to it.
                if stats.reassembly.gaps != gaps_before
                    && [KeySide::Forward, KeySide::Reverse]
                        .into_iter()
                        .any(|side| gap_at[side.index()].is_some_and(|o| t.acked_past(side, o)))
                {
                    stream_events.set(StreamEvent::ReassemblySeqGap);
                }
                out.packet_anomalies(dir, d, DecodeEvents::default(), stream_events);
                if !fed
                    && let (Some(st), Some(set)) = (app.sig.as_mut(), det.signatures())
                    && !st.verdict().is_final()
                {
                    // l7-filter counts packets without new data towards its packet limit.
                    set.feed(st, &[]);
                }
                if det.rules().is_some() {
                    out.ts_ns = ts_ns;
                    let t1 = if tm.on { cost::now() } else { 0 };
                    // Packet rules see an identification made by this packet's data, as stream rules do.
                    let now = app::identified_now(&app.label, app.fa.as_ref());
                    let label = now.as_ref().unwrap_or(&app.label);
                    let failed = app::gave_up(label, app.fa.as_ref(), app.sig.as_ref());
                    let mut hdr = app::packet_headers(det, d, Some(&meta), ts_ns);
                    if let Some(h) = hdr.fields.as_mut() {
                        h.stream_events = stream_events;
                    }
                    app::scan_packet_as(
                        &mut out,
                        &mut app.rules,
                        label,
                        failed,
                        dir,
                        d.payload,
                        hdr,
                        unstreamed,
                        whole,
                    );
                    if tm.on {
                        detect += cost::now().wrapping_sub(t1);
                    }
                }
                verdict = out.verdict;
            }
            (Transport::Udp | Transport::Icmp | Transport::Other(_), _) => {
                let meta = FlowMeta {
                    established: meta.pkts[0] > 0 && meta.pkts[1] > 0,
                    ..meta
                };
                let mut out = Out {
                    det,
                    events: ev_list,
                    scanner: scanner.as_mut(),
                    produced,
                    meta: &meta,
                    seq: events,
                    alerted,
                    ts_ns,
                    verdict: PacketVerdict::default(),
                    defer: defer.as_mut(),
                };
                let t1 = if tm.on { cost::now() } else { 0 };
                if tr == Transport::Udp {
                    let hdr = app::packet_headers(det, d, Some(&meta), ts_ns);
                    app::on_datagram(&mut out, app, dir, d.payload, hdr);
                } else {
                    let hdr = app::packet_headers(det, d, Some(&meta), ts_ns);
                    app::scan_packet(
                        &mut out,
                        &mut app.rules,
                        &app.label,
                        false,
                        dir,
                        d.payload,
                        hdr,
                        false,
                    );
                }
                if tm.on {
                    detect = cost::now().wrapping_sub(t1);
                }
                verdict = out.verdict;
            }
            // A TCP flow's packet without a TCP header cannot happen (the key has the TCP protocol number only when
            // the decoder read a TCP header); nothing to inspect.
            _ => {}
        }
        // The rules' actions on this packet (see `app::PacketVerdict`).
        apply_verdict(
            ctx,
            (&mut f.alerted, alerted_before),
            &mut f.app.rules,
            ev_start,
            verdict,
        );
        ctx.packet_dropped = verdict.dropped();
        if ctx.det.tagging() && inspected {
            // The rules' `tag`s on this packet, once its alerts are final (`app::tag_packet`). An ICMP error counted
            // in the flow it quotes is written, and counts towards host tags, with its own addresses.
            let (key, side) = match (f.transport, d.l4, d.ip) {
                (Transport::Tcp | Transport::Udp, L4::Icmp(_), Some(ip)) => {
                    FlowKey::new(ip.src, 0, ip.dst, 0, ip.proto)
                }
                _ => (f.key, dir),
            };
            let note = app::PacketNote {
                flow_id: f.id,
                pcap_cnt: Some(num + 1),
                ts_ns,
                key,
                client: if dir == f.client { side } else { side.flip() },
                dir: side,
                wire_len,
                linktype: d.link_type.0,
                data: d.data,
            };
            match ctx.defer.as_mut() {
                Some(script) => script.note(&note),
                None => app::tag_packet(ctx, &mut f.app.rules, &mut f.events, ev_start, &note),
            }
        }
        if let Some(script) = ctx.defer.as_mut() {
            // The detection stage applies the packet's verdict here (see `crate::staged`).
            script.packet_end(f.id, true);
        }
        let classified = f.app.settle(&ctx.det, position);
        // Cost accounting.
        let t_end = cost::now();
        let cycles = t_end.wrapping_sub(tm.t0);
        f.cycles += cycles;
        ctx.cost.add_packet(position, cycles);
        if tm.on {
            let s = &mut ctx.cost.stages;
            s.samples += 1;
            s.decode += tm.t_decoded.wrapping_sub(tm.t0);
            s.lookup += t_found.wrapping_sub(tm.t_decoded);
            let rest = t_end.wrapping_sub(t_found);
            s.detection += detect.min(rest);
            s.reassembly += rest.saturating_sub(detect);
        }
        if self.cfg.cost.per_packet_records {
            ctx.records.push(CostRecord {
                packet: num,
                flow_id: f.id,
                ns: cost::cycles_to_ns(cycles).min(u32::MAX as f64) as u32,
                position,
                cycles: cycles.min(u64::from(u32::MAX)) as u32,
                proto: f.key.proto,
                dir: u8::from(!to_server),
                app: cost::app_code(&f.app.label),
            });
        }
        classified
    }

    /// Ends a flow: flushes reassembly and the parser, settles pending rule candidates, decides what identification
    /// left pending, and emits its record.
    fn end_flow(&self, ctx: &mut WorkerCtx, mut f: Flow, reason: EndReason) {
        f.app.adopt(&ctx.det, ctx.det_epoch);
        let end_ts = f.last_ns;
        let meta = FlowMeta {
            id: f.id,
            key: f.key,
            client: f.client,
            start_ns: f.start_ns,
            pkts: f.pkts,
            bytes: f.bytes,
            // What the end-of-flow flush (reassembly, parser, pending rule candidates) inspects was sent while the
            // flow was established, if it ever was: a connection closed by FINs or a RST after both sides ACKed
            // still counts, as Suricata's end-of-stream pseudo packets and close-time flushes do (libhtp flushes a
            // head cut by the server's FIN on that FIN, an established packet).
            established: f.state() == crate::event::FlowState::Established
                || f.tcp.as_deref().is_some_and(|t| {
                    t.state == crate::event::TcpState::Closed
                        && t.flags.iter().all(|&fl| {
                            u16::from(fl) & flowbundle_decode::wire::tcp::flags::ACK != 0
                        })
                        && (self.cfg.midstream || !t.midstream)
                }),
            transport: f.transport,
            pcap_cnt: None,
            icmp: None,
            stream_size: f.tcp.as_deref().map(|t| t.stream_sizes(f.client)),
        };
        let ev_start = ctx.events.len();
        let alerted_before = f.alerted;
        if let Some(script) = ctx.defer.as_mut() {
            // The calls of the close-time flush begin: the detection stage collects their verdict (see
            // `crate::staged`).
            script.packet_start(f.id);
        }
        let verdict;
        let input_at = ctx.input_at;
        {
            let Flow {
                tcp,
                app,
                events,
                alerted,
                ..
            } = &mut f;
            let WorkerCtx {
                events: ev_list,
                stats,
                scanner,
                produced,
                det,
                defer,
                ..
            } = ctx;
            let mut out = Out {
                det,
                events: ev_list,
                scanner: scanner.as_mut(),
                produced,
                meta: &meta,
                seq: events,
                alerted,
                ts_ns: end_ts,
                verdict: PacketVerdict::default(),
                defer: defer.as_mut(),
            };
            if let Some(t) = tcp.as_deref_mut() {
                let gaps_before = stats.reassembly.gaps;
                let mut rstats = std::mem::take(&mut stats.reassembly);
                {
                    let AppState {
                        fa,
                        sig,
                        rules,
                        label,
                        application,
                        risks,
                        ftp_file,
                        ..
                    } = app;
                    let mut sink = StreamCx {
                        out: &mut out,
                        fa,
                        sig,
                        rules,
                        label,
                        application,
                        risks,
                        ftp_file,
                        fed_sig: false,
                        timing: false,
                        detect_cycles: 0,
                        payload: &[],
                        whole: false,
                        gap_at: [None; 2],
                    };
                    let mut rcx = reassembly::Ctx {
                        cfg: &self.cfg.reassembly,
                        memcap: &self.memcap,
                        stats: &mut rstats,
                        sink: &mut sink,
                    };
                    t.reasm.close(&mut rcx);
                }
                stats.reassembly = rstats;
                t.gaps += (stats.reassembly.gaps - gaps_before) as u32;
            }
            out.ts_ns = end_ts;
            let (a, b, ap, bp) = meta.key.endpoints(KeySide::Forward);
            if app.label != AppLabel::Proto(AppProto::FtpData)
                && matches!(meta.transport, Transport::Tcp | Transport::Udp)
                && self.expect.lookup(a, ap, b, bp, meta.start_ns, input_at)
            {
                // Announced before the flow's first packet (capture time): decided there, whichever lookup saw it.
                app.set_ftp_data(1);
            }
            if let Some(file) = app.ftp_file.take()
                && app.label == AppLabel::Proto(AppProto::FtpData)
            {
                // The data connection's file, named by the transfer command the control connection sent for it.
                let transfer = self.expect.file((a, ap), (b, bp), meta.start_ns, input_at);
                let closed = file.direction().is_some_and(|d| {
                    let side = meta.side(d).index();
                    tcp.as_deref().is_some_and(|t| {
                        u16::from(t.flags[side]) & flowbundle_decode::wire::tcp::flags::FIN != 0
                    })
                });
                let mut emit = app::Emit {
                    out: &mut out,
                    rules: &mut app.rules,
                    label: &app.label,
                    application: &mut app.application,
                    risks: &mut app.risks,
                    ftp_tx: None,
                };
                if let Some(t) = &transfer
                    && file.direction().is_some()
                {
                    emit.ftp_data_command(t.command);
                }
                file.finish(transfer.as_ref(), closed, &mut emit);
            }
            if let Some(fa) = app.fa.as_mut() {
                let mut emit = app::Emit {
                    out: &mut out,
                    rules: &mut app.rules,
                    label: &app.label,
                    application: &mut app.application,
                    risks: &mut app.risks,
                    ftp_tx: None,
                };
                // In IPS mode a dropped flow's transactions still open are discarded, not written at its end, as
                // Suricata (8.0.4 and later) cleans a dropped flow's transactions up.
                if !(self.cfg.ips && emit.rules.dropped()) {
                    fa.finish(&mut emit);
                }
                stats.parsers += fa.stats();
            }
            app::finish_rules(&mut out, &mut app.rules, &app.label);
            verdict = out.verdict;
        }
        // What the rules matched on the flow's last data decides as a packet's matches do.
        apply_verdict(
            ctx,
            (&mut f.alerted, alerted_before),
            &mut f.app.rules,
            ev_start,
            verdict,
        );
        if let Some(script) = ctx.defer.as_mut() {
            // The detection stage applies the flush's verdict here (see `crate::staged`).
            script.packet_end(f.id, false);
        }
        let position = u32::try_from(f.packets()).unwrap_or(u32::MAX);
        let _ = f.app.settle(&ctx.det, position);
        let (cport, sport) = match f.client {
            KeySide::Forward => (f.key.lo_port, f.key.hi_port),
            KeySide::Reverse => (f.key.hi_port, f.key.lo_port),
        };
        f.app
            .conclude(&ctx.det, f.transport, cport, sport, position);
        let (ts, tc) = (f.client.index(), f.client.flip().index());
        let (client, server, _, _) = f.key.endpoints(f.client);
        f.app
            .application
            .conclude(&f.app.label, f.app.evidence, sport, (server, client));
        let risks = app::flow_risks(
            &f.app,
            &ctx.det,
            (f.transport, server),
            (cport, sport),
            f.pkts,
        );
        let rec = FlowRecord {
            app: f.app.label.clone(),
            application: f.app.application.name,
            application_evidence: f.app.application.evidence,
            evidence: f.app.evidence,
            risks,
            decided_at: f.app.decided_at,
            pkts_toserver: f.pkts[ts],
            pkts_toclient: f.pkts[tc],
            bytes_toserver: f.bytes[ts],
            bytes_toclient: f.bytes[tc],
            start_ns: f.start_ns,
            end_ns: f.last_ns,
            state: f.state(),
            reason,
            alerted: f.alerted,
            action: flow_action(&f.app.rules),
            tcp: f.tcp.as_ref().map(|t| TcpSummary {
                flags: t.flags[0] | t.flags[1],
                flags_ts: t.flags[ts],
                flags_tc: t.flags[tc],
                state: t.state,
                gaps: t.gaps,
            }),
            icmp_toserver: f.icmp[ts],
            icmp_toclient: f.icmp[tc],
            // The detection stage of a staged model fills it (`crate::staged`), as it does `alerted`.
            vars: app::flow_metadata(&ctx.det, &f.app.rules),
        };
        let s = &mut ctx.stats;
        match reason {
            EndReason::Timeout => s.flows_timeout += 1,
            EndReason::Shutdown => s.flows_shutdown += 1,
            EndReason::Forced => s.flows_forced += 1,
            EndReason::TcpReuse => s.flows_tcp_reuse += 1,
        }
        let name = rec.app.name();
        let pc = match s.protocols.get_mut(name) {
            Some(pc) => pc,
            None => s.protocols.entry(name.to_string()).or_default(),
        };
        pc.flows += 1;
        pc.packets += f.packets();
        pc.bytes += f.bytes[0] + f.bytes[1];
        *s.by_evidence
            .entry(rec.evidence.map_or("none", |e| e.name()))
            .or_default() += 1;
        if let Some(name) = suricata_flow_counter(
            &rec.app,
            rec.evidence,
            Transport::from_ip_proto(f.key.proto),
        ) {
            *s.app_layer_flows.entry(name).or_default() += 1;
        }
        for r in rec.risks.iter() {
            *s.risks.entry(r.name()).or_default() += 1;
        }
        ctx.cost.offer_top(TopConn {
            cycles: f.cycles,
            flow_id: f.id,
            key: f.key,
            app: rec.app.clone(),
            packets: f.packets(),
            bytes: f.bytes[0] + f.bytes[1],
        });
        let ev = Event {
            ts_ns: end_ts,
            flow_id: f.id,
            pcap_cnt: None,
            seq: f.events,
            key: f.key,
            client: f.client,
            dir: f.client,
            kind: EventKind::Flow(Box::new(rec)),
        };
        match ctx.defer.as_mut() {
            // The detection stage numbers it and sets `alerted` (see `crate::staged`).
            Some(script) => script.event(ev),
            None => ctx.events.push(ev),
        }
        if let Some(t) = f.tcp.as_deref_mut() {
            t.reasm.discard(&self.memcap);
        }
    }

    /// Ends, in every shard, each flow whose timeout has passed at capture time `now_ns` (reason `timeout`), in the
    /// order of their deadlines, then flow ids, whatever the shard layout (see [`crate::sweep`]); returns how many.
    /// A shard whose expiry floor is not passed is not read.
    ///
    /// # Safety
    /// No other thread uses the connection table during the call: the caller holds every bundle (the streaming
    /// reader calls it when every packet it dispatched has been inspected and before it dispatches another).
    pub unsafe fn expire_all(&self, ctx: &mut WorkerCtx, now_ns: u64) -> usize {
        self.adopt(ctx);
        // SAFETY: the caller's promise covers every shard.
        let n = unsafe { self.expire_shards(ctx, now_ns, 0..BUNDLES, |_, _| {}) };
        ctx.stats.flow_sweeps += 1;
        n
    }

    /// The shards worker `w` of `workers` takes in a sweep or in the end-of-input flush run on every worker at once
    /// ([`Engine::expire_shards`], [`Engine::end_shards`]): a contiguous share of the 65,536.
    pub fn shard_share(w: usize, workers: usize) -> std::ops::Range<usize> {
        let n = workers.max(1);
        let w = w.min(n - 1);
        BUNDLES * w / n..BUNDLES * (w + 1) / n
    }

    /// The bundles worker `w` of `workers` owns when each worker reads the whole input and inspects its own share
    /// ([`Engine::process_owned`]): the bundle modulo the workers, `dh`'s placement (a bundle is the CRC-16 of the
    /// flow identifier, and `dh` sends it to worker CRC-16 mod N).
    pub fn owns_bundle(w: usize, workers: usize, bundle: u16) -> bool {
        usize::from(bundle) % workers.max(1) == w
    }

    /// The shards of the bundles worker `w` of `workers` owns ([`Engine::owns_bundle`]), for its sweeps.
    pub fn owned_shards(w: usize, workers: usize) -> impl Iterator<Item = usize> + Clone {
        (w..BUNDLES).step_by(workers.max(1))
    }

    /// A sweep ([`Engine::expire_all`]) of `shards` only, as one worker's share of a sweep run on every worker: ends
    /// each flow of those shards whose timeout has passed at `now_ns`, in the order of their deadlines, then flow ids,
    /// and after each calls `each` with the context (the flow's events pending in it) and the flow's place in that
    /// order, `(deadline, flow id)`, by which the shares of one sweep merge into the order of a sweep of every shard.
    /// Returns how many flows it ended. The sweep counter is the caller's (one sweep, however many shares).
    ///
    /// # Safety
    /// No other thread uses these shards during the call.
    pub unsafe fn expire_shards(
        &self,
        ctx: &mut WorkerCtx,
        now_ns: u64,
        shards: impl IntoIterator<Item = usize>,
        mut each: impl FnMut(&mut WorkerCtx, (u64, u64)),
    ) -> usize {
        self.adopt(ctx);
        // SAFETY: the caller's promise.
        let expired = unsafe { self.expired_in(now_ns, shards) };
        let n = expired.len();
        for (d, id, b, key) in expired {
            // SAFETY: the caller's promise: no other thread uses this shard now.
            let Some(f) = (unsafe { self.take_flow(b, &key) }) else {
                continue;
            };
            // SAFETY: as above.
            unsafe { self.end_timed_out(ctx, b, f) };
            each(ctx, (d, id));
        }
        self.absorb(ctx);
        n
    }

    /// The first half of [`Engine::expire_shards`]: takes each flow of `shards` whose timeout has passed at `now_ns`
    /// out of its shard, in the order of their deadlines, then flow ids, to be ended later by
    /// [`Engine::end_expired`], which may run while other threads use those shards (no later packet finds these
    /// flows: one of their keys starts a new flow, as after the sweep of a single-threaded run). Used when every
    /// worker reads the input and the flows' expectation lookups must wait for the others ([`crate::EachReads`]).
    ///
    /// # Safety
    /// No other thread uses these shards during the call; no staged detection (its steps for a flow run on the
    /// flow's shard of the detection table when the flow is ended).
    pub(crate) unsafe fn take_expired(
        &self,
        ctx: &mut WorkerCtx,
        now_ns: u64,
        shards: impl IntoIterator<Item = usize>,
    ) -> Vec<Expired> {
        self.adopt(ctx);
        // SAFETY: the caller's promise.
        let keys = unsafe { self.expired_in(now_ns, shards) };
        let mut taken = Vec::with_capacity(keys.len());
        for (deadline, id, bundle, key) in keys {
            // SAFETY: the caller's promise.
            if let Some(flow) = unsafe { self.take_flow(bundle, &key) } {
                taken.push(Expired {
                    deadline,
                    id,
                    bundle,
                    flow,
                });
            }
        }
        taken
    }

    /// The second half of [`Engine::expire_shards`]: ends the flows [`Engine::take_expired`] took, in its order,
    /// calling `each` after each as `expire_shards` does. Returns how many.
    pub(crate) fn end_expired(
        &self,
        ctx: &mut WorkerCtx,
        flows: Vec<Expired>,
        mut each: impl FnMut(&mut WorkerCtx, (u64, u64)),
    ) -> usize {
        self.adopt(ctx);
        let n = flows.len();
        for e in flows {
            // SAFETY: `take_expired`'s promise: no staged detection, so ending the flow touches no shard.
            unsafe { self.end_timed_out(ctx, e.bundle, e.flow) };
            each(ctx, (e.deadline, e.id));
        }
        self.absorb(ctx);
        n
    }

    /// The flows of `shards` whose timeout has passed at `now_ns`: `(deadline, flow id, shard, key)` in that order.
    ///
    /// # Safety
    /// No other thread uses these shards during the call.
    unsafe fn expired_in(
        &self,
        now_ns: u64,
        shards: impl IntoIterator<Item = usize>,
    ) -> Vec<(u64, u64, u16, FlowKey)> {
        let t = &self.cfg.timeouts;
        // What a flow ended here is found by: its place in the order, its shard and its key. The flows stay in their
        // shards until they are ended: collecting the flows themselves (a few hundred bytes each, in a vector grown by
        // doubling) made the sweep after a gap in capture time, which ends every flow at once, the process's largest
        // transient allocation, so the longer input, with more such sweeps, reached a higher peak.
        let mut expired: Vec<(u64, u64, u16, FlowKey)> = Vec::new();
        for b in shards {
            let Some(floor) = self.expiry_floor.get(b) else {
                break;
            };
            if now_ns <= floor.load(Relaxed) {
                continue;
            }
            // SAFETY: the caller's promise: no other thread uses this shard now.
            let mut held = unsafe { BundleToken::assume_held(b as u16) };
            let mut shard = self.table.shard(&mut held);
            let before = expired.len();
            let mut earliest = u64::MAX;
            for (k, f) in shard.iter() {
                let d = deadline(f, t);
                if f.expired_at(now_ns, t) {
                    expired.push((d, f.id, b as u16, *k));
                } else {
                    earliest = earliest.min(d);
                }
            }
            floor.store(earliest, Relaxed);
            if expired.len() == before && shard.is_empty() {
                shard.shrink_to_fit();
            }
        }
        expired.sort_unstable_by_key(|&(d, id, _, _)| (d, id));
        expired
    }

    /// Takes the flow with `key` out of shard `b`.
    ///
    /// # Safety
    /// No other thread uses shard `b` during the call.
    unsafe fn take_flow(&self, b: u16, key: &FlowKey) -> Option<Flow> {
        // SAFETY: the caller's promise: no other thread uses this shard now.
        let mut held = unsafe { BundleToken::assume_held(b) };
        let mut shard = self.table.shard(&mut held);
        let f = shard.remove(key);
        // A shard's table keeps its capacity, and its flows are stored in it: over a long input every one of
        // the 65,536 shards would keep the largest table it ever had, which grew the process with the
        // input's length after the flows themselves were gone. An emptied shard gives it back. (Shrinking
        // the tables that still hold flows, to what they need, was tried: the reallocations left the
        // allocator's heap more fragmented, and peak RSS rose by about 2 MiB on the merged nDPI trace.)
        if shard.is_empty() {
            shard.shrink_to_fit();
        }
        if f.is_some() {
            self.table.remove_one();
        }
        f
    }

    /// Ends flow `f`, taken out of shard `b`, by timeout.
    ///
    /// # Safety
    /// No other thread uses shard `b` when detection is staged (its script for the flow touches that shard of the
    /// detection table only).
    unsafe fn end_timed_out(&self, ctx: &mut WorkerCtx, b: u16, f: Flow) {
        // SAFETY: the caller's promise.
        unsafe {
            self.ending_all(ctx, |e, ctx| {
                if let Some(script) = ctx.defer.as_mut() {
                    script.bundle = b;
                }
                e.end_flow(ctx, f, EndReason::Timeout);
            })
        };
    }

    /// The end of the input for `shards` only, as one worker's share of the flush run on every worker at once: ends
    /// every flow of those shards as [`Engine::finish`] does (reason `timeout` when its timeout passed before
    /// `end_ns`, the latest capture time inspected, else `shutdown`); the events are left in `ctx`. Returns how many
    /// flows it ended.
    ///
    /// # Safety
    /// No other thread uses these shards during the call.
    pub unsafe fn end_shards(
        &self,
        ctx: &mut WorkerCtx,
        end_ns: u64,
        shards: impl IntoIterator<Item = usize>,
    ) -> usize {
        self.adopt(ctx);
        let mut n = 0;
        for b in shards {
            // The global count says when every flow has been ended: small inputs skip most of the 65,536 shards.
            if self.table.is_empty() || b >= BUNDLES {
                break;
            }
            // SAFETY: the caller's promise: no other thread uses this shard now.
            let mut held = unsafe { BundleToken::assume_held(b as u16) };
            let flows: Vec<Flow> = self.table.shard(&mut held).drain();
            n += flows.len();
            // SAFETY: as above; staged detection's script for these flows touches this shard of its table only.
            unsafe {
                self.ending_all(ctx, |e, ctx| {
                    if let Some(script) = ctx.defer.as_mut() {
                        script.bundle = b as u16;
                    }
                    for f in flows {
                        e.table.remove_one();
                        let reason = if f.expired_at(end_ns, &e.cfg.timeouts) {
                            EndReason::Timeout
                        } else {
                            EndReason::Shutdown
                        };
                        e.end_flow(ctx, f, reason);
                    }
                })
            };
        }
        self.absorb(ctx);
        n
    }

    /// [`Engine::expire_all`] for the single-threaded loop: `&mut self` is the exclusivity.
    pub fn expire_serial(&mut self, ctx: &mut WorkerCtx, now_ns: u64) -> usize {
        // SAFETY: `&mut self` excludes every other user of the table.
        unsafe { self.expire_all(ctx, now_ns) }
    }

    /// End of input: ends every flow still open (reason `timeout` when its timeout passed before the input's last
    /// packet, else `shutdown`), merges the workers' contexts and sorts the events. The engine is empty afterwards
    /// and may inspect more input.
    pub fn finish(&mut self, ctxs: impl IntoIterator<Item = WorkerCtx>) -> Finished {
        let mut ctx = self.new_ctx();
        let mut profile: Option<flowbundle_rules::RulesProfile> = None;
        let epoch = self.epoch();
        // A profile is indexed by its rule set: only the scanners of the current rules give one.
        let mut add_profile = |c: &WorkerCtx| {
            if c.det_epoch == epoch
                && let Some(p) = c.scanner.as_ref().and_then(Scanner::profile)
            {
                profile.get_or_insert_with(Default::default).merge(p);
            }
        };
        let mut hits: std::collections::BTreeMap<u32, u64> = Default::default();
        let mut events = Vec::new();
        for mut c in ctxs {
            self.absorb(&mut c);
            add_profile(&c);
            c.retire_scanner();
            for (sid, n) in c.retired_hits.drain(..) {
                *hits.entry(sid).or_default() += n;
            }
            ctx.stats.merge(&c.stats);
            ctx.cost.merge(&c.cost);
            ctx.max_ts = ctx.max_ts.max(c.max_ts);
            events.append(&mut c.events);
            ctx.records.append(&mut c.records);
        }
        let end = ctx.max_ts;
        // SAFETY: `&mut self` excludes every other user of the table.
        unsafe { self.end_shards(&mut ctx, end, 0..BUNDLES) };
        self.absorb(&mut ctx);
        add_profile(&ctx);
        ctx.retire_scanner();
        for (sid, n) in ctx.retired_hits.drain(..) {
            *hits.entry(sid).or_default() += n;
        }
        events.append(&mut ctx.events);
        sort_events(&mut events);
        // In the current set's rule order, then the rules of earlier sets (a reload) by signature id.
        let mut rule_hits = Vec::with_capacity(hits.len());
        if let Some(r) = ctx.det.rules() {
            for rule in r.rules() {
                if let Some(n) = hits.remove(&rule.sid) {
                    rule_hits.push((rule.sid, n));
                }
            }
        }
        rule_hits.extend(hits);
        Finished {
            events,
            stats: ctx.stats,
            cost: ctx.cost,
            cost_records: ctx.records,
            rule_hits,
            rules_profile: profile,
            peak_flows: self.table.peak(),
            max_flows: self.table.capacity(),
            peak_reassembly_bytes: self.memcap.peak(),
            expectations: self.expect.counters(),
        }
    }
}

/// What the rules decided for a whole flow (its record's `action`), from its matcher state: the flow's own under
/// run-to-completion, the detection stage's under a staged model (`crate::staged`).
pub(crate) fn flow_action(rules: &FlowMatchState) -> Option<crate::event::FlowAction> {
    if rules.dropped() {
        Some(crate::event::FlowAction::Drop)
    } else if rules.passed() {
        Some(crate::event::FlowAction::Pass)
    } else {
        None
    }
}

/// Applies the rules' actions on one packet (or the flow's close-time flush): see `app::PacketVerdict`. The alerts
/// the packet raised (`ctx.events[ev_start..]`) that a `pass` ranked before them withdraws are taken back (with
/// their counts); a flow-scoped drop ranked before any pass drops the flow, else a flow-scoped pass passes it.
/// `alerted` is the flow's flag (with its value before the packet) and `rules` its matcher state: the flow's own
/// under run-to-completion, the detection stage's under a staged model (`crate::staged`). Last, the alerts that
/// stand get the flow's and the packet's variables as the packet's detection left them (`app::add_packet_metadata`).
pub(crate) fn apply_verdict(
    ctx: &mut WorkerCtx,
    (alerted, alerted_before): (&mut bool, bool),
    rules: &mut FlowMatchState,
    ev_start: usize,
    verdict: PacketVerdict,
) {
    if verdict.pass.is_some() {
        let tail = ctx.events.split_off(ev_start.min(ctx.events.len()));
        let mut kept_alert = false;
        for e in tail {
            if let EventKind::Alert(a) = &e.kind {
                let rule = ctx
                    .det
                    .rules()
                    .and_then(|r| r.rules().get(a.rule_index as usize));
                let rank = rule.map_or(u8::MAX, |r| ctx.det.action_rank(r.action));
                if !verdict.stands(rank) {
                    // The silent event of a rule that does not alert (it carries xbits) was never counted.
                    if rule.is_none_or(|r| r.alerts()) {
                        ctx.produced.alerts = ctx.produced.alerts.saturating_sub(1);
                    }
                    if let Some(sc) = ctx.scanner.as_mut() {
                        sc.withdraw_hit(a.rule_index);
                    }
                    continue;
                }
                kept_alert = true;
            }
            ctx.events.push(e);
        }
        *alerted = alerted_before || kept_alert;
    }
    cap_alerts(ctx, alerted, alerted_before, ev_start);
    // Every rule has run on the packet: what its `entropy` keywords measured stays on the flow, and its alerts get
    // the flow's and the packet's variables as they stand now.
    if let (Some(r), Some(sc)) = (ctx.det.rules(), ctx.scanner.as_mut()) {
        r.keep_measured(Some(&mut *rules), sc);
    }
    let start = ev_start.min(ctx.events.len());
    app::add_packet_metadata(
        &ctx.det,
        ctx.scanner.as_ref(),
        Some(rules),
        ctx.events.get_mut(start..).unwrap_or_default(),
    );
    // A pass ranked after a drop that matched the same packet does not act: the drop decided the packet, and the
    // flow goes on being inspected (Suricata applies the first deciding action of a packet's sorted matches).
    if verdict.flow_dropped() {
        rules.set_dropped();
    } else if verdict.pass.is_some() && verdict.pass_flow && !verdict.dropped() {
        rules.set_passed();
    }
}

/// Keeps at most [`Detection::packet_alert_max`] of the alerts a packet raised (the events from `ev_start`), as
/// Suricata's per-packet alert queue does: those of the rules first in Suricata's rule order (action order, then
/// `priority`, then file order) stay, in the order they were raised; the others are withdrawn and counted as
/// `alert_queue_overflow`. Only alerts are limited: what the rules decided (drops, passes) stands.
fn cap_alerts(ctx: &mut WorkerCtx, alerted: &mut bool, alerted_before: bool, ev_start: usize) {
    let max = ctx.det.packet_alert_max();
    let start = ev_start.min(ctx.events.len());
    // The silent event of a rule that does not alert (it carries xbits, see `crate::alert_filter`) is not an
    // alert: not limited here.
    let silent = |a: &crate::event::AlertEvent| {
        ctx.det
            .rules()
            .and_then(|r| r.rules().get(a.rule_index as usize))
            .is_some_and(|r| !r.alerts())
    };
    let raised = ctx.events[start..]
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Alert(a) if !silent(a)))
        .count();
    if raised <= max {
        return;
    }
    let order = |a: &crate::event::AlertEvent| {
        let rank = ctx
            .det
            .rules()
            .and_then(|r| r.rules().get(a.rule_index as usize))
            .map_or(u8::MAX, |r| ctx.det.action_rank(r.action));
        (rank, a.severity, a.rule_index)
    };
    let mut keys: Vec<_> = ctx.events[start..]
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Alert(a) if !silent(a) => Some(order(a)),
            _ => None,
        })
        .collect();
    keys.sort_unstable();
    let Some(&last_kept) = keys.get(max.saturating_sub(1)) else {
        return;
    };
    let tail = ctx.events.split_off(start);
    let mut kept = 0usize;
    for e in tail {
        if let EventKind::Alert(a) = &e.kind
            && !silent(a)
        {
            if max == 0 || order(a) > last_kept || kept == max {
                ctx.produced.alerts = ctx.produced.alerts.saturating_sub(1);
                ctx.stats.alert_queue_overflow += 1;
                if let Some(sc) = ctx.scanner.as_mut() {
                    sc.withdraw_hit(a.rule_index);
                }
                continue;
            }
            kept += 1;
        }
        ctx.events.push(e);
    }
    *alerted = alerted_before || kept > 0;
}

/// Whether a TCP packet's payload stays out of the connection's stream (with `state` the connection's state before
/// the packet, `t` after it). With mid-stream pickups allowed (`midstream_ok`, the engine's default) the engine
/// tracks whatever it sees, one-sided captures and reordered handshakes included, and nothing stays out. Without
/// them it tracks connections as strictly as Suricata's stream engine, which keeps out: every packet of a
/// connection not started by a handshake (picked up mid-stream, or nothing with SYN or ACK seen yet); data on a SYN
/// without the TCP Fast Open option (RFC 7413: only a Fast Open SYN carries data into the stream); data sent while
/// the handshake still waits for the server's SYN-ACK; data on a RST. Such payload reaches no parser; the rules
/// inspect it as a
/// packet ([`flowbundle_rules::RuleSet::scan_unstreamed_packet`]).
fn outside_stream(
    state: crate::event::TcpState,
    t: &crate::flow::TcpConn,
    th: &flowbundle_decode::Tcp<'_>,
    midstream_ok: bool,
) -> bool {
    use crate::event::TcpState;
    use flowbundle_decode::wire::tcp::flags;
    if midstream_ok {
        return false;
    }
    let untracked = t.midstream || t.state == TcpState::None;
    let syn_data = th.has(flags::SYN) && !has_fast_open(th.options_raw);
    let before_synack = !th.has(flags::SYN) && state == TcpState::SynSent;
    // A RST's payload (an error text some stacks send with it) is not stream data: the peer discards it.
    let rst_data = th.has(flags::RST);
    untracked || syn_data || before_synack || rst_data
}

/// Whether TCP option bytes carry the Fast Open option: kind 34 (RFC 7413), or the experimental kind 254 with
/// Fast Open's magic 0xF989 (RFC 6994), which stacks sent before the kind was assigned (and Linux still can) use.
fn has_fast_open(mut opts: &[u8]) -> bool {
    while let Some((&kind, rest)) = opts.split_first() {
        match kind {
            0 => return false,
            1 => opts = rest,
            _ => {
                let len = usize::from(rest.first().copied().unwrap_or(0));
                if len < 2 || len > opts.len() {
                    return false;
                }
                if kind == 34 || (kind == 254 && opts.get(2..4) == Some(&[0xf9, 0x89][..])) {
                    return true;
                }
                opts = opts.get(len..).unwrap_or(&[]);
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// An IPv4 packet (no link header) from `src:sport` to `dst:dport`: TCP with `flags`, or UDP when `flags` is
    /// `None`. Checksums are left zero (the engine does not verify them).
    fn packet(src: u8, sport: u16, dst: u8, dport: u16, tcp: Option<(u32, u32, u8)>) -> Vec<u8> {
        let l4 = if tcp.is_some() { 20 } else { 8 };
        let total = (20 + l4) as u16;
        let mut b = vec![0x45, 0];
        b.extend_from_slice(&total.to_be_bytes());
        b.extend_from_slice(&[0, 1, 0x40, 0, 64, if tcp.is_some() { 6 } else { 17 }, 0, 0]);
        b.extend_from_slice(&[10, 0, 0, src, 10, 0, 0, dst]);
        b.extend_from_slice(&sport.to_be_bytes());
        b.extend_from_slice(&dport.to_be_bytes());
        match tcp {
            Some((seq, ack, flags)) => {
                b.extend_from_slice(&seq.to_be_bytes());
                b.extend_from_slice(&ack.to_be_bytes());
                b.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
            }
            None => b.extend_from_slice(&[0, 8, 0, 0]),
        }
        b
    }

    fn feed(e: &mut Engine, ctx: &mut WorkerCtx, pre: &mut Prestage, ts_ns: u64, data: &[u8]) {
        let rec = PacketRecord {
            ts_ns,
            orig_len: data.len() as u32,
            interface: 0,
            link_type: LinkType::RAW,
            data,
        };
        e.process_serial(ctx, pre, 0, &rec);
    }

    /// A UDP datagram (IPv4, no link header) from `10.0.0.src:sport` to `10.0.0.dst:dport` carrying `payload`.
    fn datagram(src: u8, sport: u16, dst: u8, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut b = packet(src, sport, dst, dport, None);
        let total = (28 + payload.len()) as u16;
        b[2..4].copy_from_slice(&total.to_be_bytes());
        b[24..26].copy_from_slice(&(8 + payload.len() as u16).to_be_bytes());
        b.extend_from_slice(payload);
        b
    }

    fn rules(text: &str) -> Option<Arc<RuleSet>> {
        let (set, report) = RuleSet::parse(text, &flowbundle_rules::Vars::new()).unwrap();
        assert_eq!(report.loaded, text.lines().count(), "{report:?}");
        Some(Arc::new(set))
    }

    fn alerts(evs: &[Event]) -> Vec<u32> {
        evs.iter()
            .filter_map(|e| match &e.kind {
                EventKind::Alert(a) => Some(a.signature_id),
                _ => None,
            })
            .collect()
    }

    /// A reload between two packets of one flow: the flow goes on (one record, its packets counted across the
    /// reload), the packet after the reload meets the new rules only, a flow a `drop` rule dropped (an IP-only rule:
    /// its drop acts on the flow) stays dropped, and the alerts per rule count both sets.
    #[test]
    fn a_reload_applies_the_new_rules_to_later_packets_and_keeps_the_flows() {
        let old = "alert udp any any -> any any (msg:\"old\"; content:\"foo\"; sid:1;)\n\
                   drop ip any any -> any 99 (msg:\"evil\"; sid:3;)";
        let new = "alert udp any any -> any any (msg:\"new\"; content:\"bar\"; sid:2;)";
        let mut e = Engine::with_shared(EngineConfig::default(), None, rules(old));
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        feed(
            &mut e,
            &mut ctx,
            &mut pre,
            S,
            &datagram(1, 5000, 2, 53, b"foo bar"),
        );
        feed(
            &mut e,
            &mut ctx,
            &mut pre,
            S + 1,
            &datagram(1, 6000, 2, 99, b"evil"),
        );
        assert!(ctx.packet_dropped());
        let mut evs = Vec::new();
        ctx.take_events(&mut evs);
        assert_eq!(alerts(&evs), [1, 3]);

        assert_eq!(e.reload(None, rules(new)), 1);
        assert_eq!(e.epoch(), 1);
        feed(
            &mut e,
            &mut ctx,
            &mut pre,
            2 * S,
            &datagram(1, 5000, 2, 53, b"foo bar"),
        );
        ctx.take_events(&mut evs);
        assert_eq!(
            alerts(&evs),
            [1, 3, 2],
            "the new rule alone matched after the reload"
        );
        feed(
            &mut e,
            &mut ctx,
            &mut pre,
            2 * S + 1,
            &datagram(1, 6000, 2, 99, b"bar"),
        );
        assert!(ctx.packet_dropped(), "a dropped flow stays dropped");

        let fin = e.finish([ctx]);
        let flows: Vec<&FlowRecord> = fin
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Flow(f) => Some(&**f),
                _ => None,
            })
            .collect();
        assert_eq!(flows.len(), 2, "one record per flow across the reload");
        assert!(flows.iter().all(|f| f.pkts_toserver == 2));
        assert_eq!(fin.rule_hits, [(2, 1), (1, 1), (3, 1)]);
        assert_eq!(fin.stats.alerts, 3);
    }

    /// A TCP segment (IPv4, no link header) with `flags` carrying `payload`.
    fn segment(
        src: u8,
        sport: u16,
        dst: u8,
        dport: u16,
        seq: u32,
        flags: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut b = packet(src, sport, dst, dport, Some((seq, 0, flags)));
        let total = (40 + payload.len()) as u16;
        b[2..4].copy_from_slice(&total.to_be_bytes());
        b.extend_from_slice(payload);
        b
    }

    /// The alerts of `packets` (in order, one second apart) with `rules`, mid-stream pickups allowed or not.
    fn tcp_alerts(rules_text: &str, midstream: bool, packets: &[Vec<u8>]) -> Vec<u32> {
        let cfg = EngineConfig {
            midstream,
            ..EngineConfig::default()
        };
        let mut e = Engine::with_shared(cfg, None, rules(rules_text));
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        for (i, p) in packets.iter().enumerate() {
            feed(&mut e, &mut ctx, &mut pre, (i as u64 + 1) * S, p);
        }
        alerts(&e.finish([ctx]).events)
    }

    /// With mid-stream pickups off (Suricata's strict tracking), data the stream does not take is matched packet by
    /// packet, as Suricata inspects packets it did not add to a stream: data on SYNs without Fast Open and data
    /// before the server's SYN-ACK (each packet once: two alerts here), and every packet of a connection picked up
    /// without its handshake (a pattern split over two packets is then in none). With a handshake, or pickups
    /// allowed (the engine's default, which tracks whatever it sees), the bytes are one stream.
    #[test]
    fn data_outside_the_stream_is_matched_per_packet() {
        let r = "alert tcp any any -> any any (content:\"Hi all\"; sid:1;)";
        const SYN: u8 = 0x02;
        const ACK: u8 = 0x10;
        const PSH_ACK: u8 = 0x18;
        let syn_data = [
            segment(1, 40000, 2, 80, 0, SYN, b"Hi all!\r\n"),
            segment(2, 80, 1, 40000, 0, SYN, b"wo!\r\n"),
            segment(1, 40000, 2, 80, 0, PSH_ACK, b"Hi all!\r\n"),
        ];
        assert_eq!(tcp_alerts(r, false, &syn_data), [1, 1]);
        assert_eq!(
            tcp_alerts(r, true, &syn_data),
            [1],
            "one stream when tracking is permissive"
        );
        let pickup = [
            segment(1, 40000, 2, 80, 100, PSH_ACK, b"Hi "),
            segment(1, 40000, 2, 80, 103, PSH_ACK, b"all!"),
        ];
        assert_eq!(
            tcp_alerts(r, false, &pickup),
            [0u32; 0],
            "no packet holds it"
        );
        assert_eq!(tcp_alerts(r, true, &pickup), [1], "the stream does");
        let handshake = [
            segment(1, 40000, 2, 80, 99, SYN, b""),
            segment(2, 80, 1, 40000, 499, SYN | ACK, b""),
            segment(1, 40000, 2, 80, 100, ACK, b""),
            segment(1, 40000, 2, 80, 100, PSH_ACK, b"Hi "),
            segment(1, 40000, 2, 80, 103, PSH_ACK, b"all!"),
        ];
        assert_eq!(tcp_alerts(r, false, &handshake), [1]);
        // A RST's payload joins no stream when tracking is strict.
        let joined = "alert tcp any any -> any any (content:\"in!Access\"; sid:2;)";
        let rst = [
            segment(1, 40000, 2, 80, 99, SYN, b""),
            segment(2, 80, 1, 40000, 499, SYN | ACK, b""),
            segment(1, 40000, 2, 80, 100, ACK, b""),
            segment(1, 40000, 2, 80, 100, PSH_ACK, b"Let me in!"),
            segment(1, 40000, 2, 80, 110, 0x04, b"Access Denied"),
        ];
        assert_eq!(tcp_alerts(joined, false, &rst), [0u32; 0]);
        assert_eq!(tcp_alerts(joined, true, &rst), [2]);
    }

    /// In IPS mode a dropped flow's later packets are dropped before TCP tracking: the flow record keeps the state
    /// of the SYN the drop matched, and counts the packets.
    #[test]
    fn ips_drops_a_dropped_flows_packets_before_tracking() {
        let cfg = EngineConfig {
            ips: true,
            ..EngineConfig::default()
        };
        let mut e =
            Engine::with_shared(cfg, None, rules("drop ip 10.0.0.1 any -> any any (sid:1;)"));
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        for (i, p) in [
            segment(1, 40000, 2, 80, 99, 0x02, b""),
            segment(2, 80, 1, 40000, 499, 0x12, b""),
            segment(1, 40000, 2, 80, 100, 0x10, b""),
        ]
        .iter()
        .enumerate()
        {
            feed(&mut e, &mut ctx, &mut pre, (i as u64 + 1) * S, p);
            assert!(ctx.packet_dropped());
        }
        let fin = e.finish([ctx]);
        let flow = fin
            .events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::Flow(f) => Some(f),
                _ => None,
            })
            .expect("a flow record");
        assert_eq!(
            flow.tcp.as_ref().map(|t| t.state),
            Some(crate::event::TcpState::SynSent)
        );
        assert_eq!(flow.pkts_toserver + flow.pkts_toclient, 3);
        assert_eq!(alerts(&fin.events), [1]);
    }

    /// `packet-alert-max`: a packet reports its limit of alerts, those of the rules first in Suricata's order
    /// (action order, then priority, then file order); the others are counted as overflow, and a drop whose alert
    /// was withdrawn still drops.
    #[test]
    fn a_packet_keeps_its_first_alerts_in_rule_order() {
        let text = "alert udp any any -> any any (msg:\"a\"; sid:1;)\n\
                    alert udp any any -> any any (msg:\"b\"; sid:2;)\n\
                    alert udp any any -> any any (msg:\"c\"; priority:1; sid:3;)\n\
                    drop udp any any -> any 99 (msg:\"d\"; sid:4;)";
        let run = |max: usize, dport: u16| {
            let cfg = EngineConfig {
                packet_alert_max: max,
                action_order: flowbundle_rules::ActionOrder::parse([
                    "alert", "drop", "pass", "reject",
                ])
                .unwrap(),
                ..EngineConfig::default()
            };
            let mut e = Engine::with_shared(cfg, None, rules(text));
            let mut ctx = e.new_ctx();
            let mut pre = Prestage::new(e.config());
            feed(
                &mut e,
                &mut ctx,
                &mut pre,
                S,
                &datagram(1, 5000, 2, dport, b"x"),
            );
            let dropped = ctx.packet_dropped();
            let fin = e.finish([ctx]);
            (
                alerts(&fin.events),
                fin.stats.alert_queue_overflow,
                fin.stats.alerts,
                dropped,
            )
        };
        assert_eq!(
            run(0, 53),
            (vec![1, 2, 3], 0, 3, false),
            "0 reads as the default, 15"
        );
        assert_eq!(run(2, 53), (vec![1, 3], 1, 2, false));
        assert_eq!(run(1, 53), (vec![3], 2, 1, false), "priority 1 comes first");
        let (kept, overflow, _, dropped) = run(2, 99);
        assert_eq!((kept, overflow), (vec![1, 3], 2));
        assert!(dropped, "the drop acts though its alert was withdrawn");
    }

    /// Suricata's `app_layer.flow` counters follow EVE's `app_proto`: what Suricata parses under its name, the rest
    /// (no parser in Suricata, a signature name, a port guess) as `failed`.
    #[test]
    fn app_layer_flow_counters_follow_eve() {
        let p = |p| AppLabel::Proto(p);
        let (tcp, udp) = (Transport::Tcp, Transport::Udp);
        let parser = Some(Evidence::Parser);
        assert_eq!(
            suricata_flow_counter(&p(AppProto::Dns), parser, udp),
            Some("dns_udp")
        );
        assert_eq!(
            suricata_flow_counter(&p(AppProto::Smb), parser, tcp),
            Some("smb")
        );
        assert_eq!(
            suricata_flow_counter(&p(AppProto::Smb), Some(Evidence::Port), tcp),
            Some("failed_tcp")
        );
        assert_eq!(
            suricata_flow_counter(&p(AppProto::NetBios), parser, udp),
            Some("failed_udp")
        );
        assert_eq!(
            suricata_flow_counter(&AppLabel::Signature("x".into()), None, tcp),
            Some("failed_tcp")
        );
        assert_eq!(
            suricata_flow_counter(&AppLabel::Ip("ICMP"), None, Transport::Icmp),
            None
        );
    }

    /// A UDP flow whose first datagram is a DNS response from port 53 is turned around, as Suricata's probe does:
    /// its client is the response's receiver. A flow opened by a query keeps its first sender as the client.
    #[test]
    fn a_flow_picked_up_from_a_dns_response_has_the_asker_as_client() {
        let mut msg = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0];
        msg.extend_from_slice(b"\x01a\x07example\x00\x00\x01\x00\x01");
        let mut query = msg.clone();
        query[2] = 0x01;
        let clients = |first: &[u8]| {
            let mut e = Engine::with_shared(EngineConfig::default(), None, None);
            let mut ctx = e.new_ctx();
            let mut pre = Prestage::new(e.config());
            feed(&mut e, &mut ctx, &mut pre, S, first);
            e.finish([ctx])
                .events
                .iter()
                .filter_map(|ev| match &ev.kind {
                    EventKind::Flow(r) => {
                        let (src, _, sport, _) = ev.key.endpoints(ev.client);
                        Some((src.to_string(), sport, r.app.name().to_string()))
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            clients(&datagram(2, 53, 1, 40000, &msg)),
            [("10.0.0.1".to_string(), 40000, "DNS".to_string())]
        );
        assert_eq!(
            clients(&datagram(1, 40000, 2, 53, &query)),
            [("10.0.0.1".to_string(), 40000, "DNS".to_string())]
        );
    }

    /// With `drop` ranked before `pass`, a packet both match is dropped and the flow-scoped pass does not act: the
    /// next packet is inspected again (its drop alerts again). The pass withdraws the alerts ranked after it on the
    /// packet it matched, the first: an IP-only rule, it is not checked on the second packet of the same direction,
    /// whose alert stands.
    #[test]
    fn a_pass_ranked_after_a_matching_drop_leaves_the_flow_inspected() {
        let text = "pass udp any any -> any any (msg:\"p\"; sid:1;)\n\
                    drop udp any any -> any any (msg:\"d\"; content:\"x\"; sid:2;)\n\
                    alert udp any any -> any any (msg:\"a\"; content:\"x\"; sid:3;)";
        let cfg = EngineConfig {
            action_order: flowbundle_rules::ActionOrder::parse(["drop", "pass", "reject", "alert"])
                .unwrap(),
            ..EngineConfig::default()
        };
        let mut e = Engine::with_shared(cfg, None, rules(text));
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        let mut dropped = Vec::new();
        for i in 0..2 {
            feed(
                &mut e,
                &mut ctx,
                &mut pre,
                S + i,
                &datagram(1, 5000, 2, 53, b"x"),
            );
            dropped.push(ctx.packet_dropped());
        }
        assert_eq!(dropped, [true, true]);
        assert_eq!(alerts(&e.finish([ctx]).events), [2, 2, 3]);
    }

    /// Fast Open's option, in its assigned kind (34) and its experimental form (254 with magic 0xF989, as in a
    /// captured Linux SYN: MSS, SACK-permitted, timestamps, NOP, window scale, then the option).
    #[test]
    fn fast_open_option_is_found_in_both_forms() {
        let linux = [
            0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x00, 0xd9, 0x68, 0xa3, 0, 0, 0, 0,
            0x01, 0x03, 0x03, 0x07, 0xfe, 0x04, 0xf9, 0x89,
        ];
        assert!(has_fast_open(&linux));
        assert!(has_fast_open(&[0x01, 0x01, 34, 10, 1, 2, 3, 4, 5, 6, 7, 8]));
        assert!(!has_fast_open(&linux[..20]), "without the last option");
        assert!(
            !has_fast_open(&[0xfe, 0x04, 0x12, 0x34]),
            "another experiment"
        );
        assert!(
            !has_fast_open(&[0x02, 0x00, 34, 2]),
            "a zero length stops the walk"
        );
        assert!(
            !has_fast_open(&[0x08, 0x40, 34, 2]),
            "a length past the end stops the walk"
        );
        assert!(!has_fast_open(&[0x00, 34, 2]), "after End of List");
    }

    /// The shard's expiry floor skips shards only when nothing in them can have expired: a sweep still ends every
    /// flow whose timeout passed, including one whose deadline a RST brought forward (established 600 s → closed,
    /// here 5 s) below the floor the shard had.
    #[test]
    fn a_sweep_ends_a_flow_whose_deadline_a_reset_brought_forward() {
        let mut cfg = EngineConfig::default();
        cfg.timeouts.tcp_closed_ns = 5 * S;
        let mut e = Engine::new(cfg, None, None);
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        let mut handshake = |e: &mut Engine, ctx: &mut WorkerCtx, t: u64, port: u16| {
            feed(
                e,
                ctx,
                &mut pre,
                t,
                &packet(1, port, 2, 80, Some((100, 0, 0x02))),
            );
            feed(
                e,
                ctx,
                &mut pre,
                t + 1_000,
                &packet(2, 80, 1, port, Some((500, 101, 0x12))),
            );
            feed(
                e,
                ctx,
                &mut pre,
                t + 2_000,
                &packet(1, port, 2, 80, Some((101, 501, 0x10))),
            );
        };
        // Flow A established at 0 s, flow B (same host pair: same shard) at 100 s; a sweep at 100 s keeps both and
        // sets the shard's floor to A's deadline (600 s).
        handshake(&mut e, &mut ctx, 0, 1000);
        handshake(&mut e, &mut ctx, 100 * S, 1001);
        assert_eq!(e.expire_serial(&mut ctx, 100 * S), 0);
        assert_eq!(e.table().len(), 2);
        // A is reset at 110 s: it now times out at 115 s, earlier than the floor.
        let mut pre2 = Prestage::new(e.config());
        feed(
            &mut e,
            &mut ctx,
            &mut pre2,
            110 * S,
            &packet(1, 1000, 2, 80, Some((101, 501, 0x04))),
        );
        // A sweep at 120 s ends A (closed, idle 10 s > 5 s) and keeps B.
        assert_eq!(
            e.expire_serial(&mut ctx, 120 * S),
            1,
            "flow A did not expire"
        );
        assert_eq!(e.table().len(), 1);
        assert_eq!(ctx.stats().flows_timeout, 1);
    }

    /// Which flows share a shard depends on the scheduler's bundles, so a new flow must not end the idle flows of its
    /// shard with its own time: on an input whose time goes backwards (captures merged or concatenated), a flow so
    /// ended could still have packets to come, and the output would depend on the scheduler. Here flow A (UDP, 30 s
    /// timeout) is idle when flow B of the same host pair (one shard under the single-threaded loop's host-pair
    /// bundles) starts 100 s later; A's next packet is dated before B's, and A goes on. A sweep ends A by its own
    /// time.
    #[test]
    fn a_new_flow_leaves_the_idle_flows_of_its_shard_alone() {
        let mut e = Engine::new(EngineConfig::default(), None, None);
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        feed(
            &mut e,
            &mut ctx,
            &mut pre,
            100 * S,
            &packet(1, 2000, 2, 53, None),
        );
        feed(
            &mut e,
            &mut ctx,
            &mut pre,
            200 * S,
            &packet(1, 2001, 2, 53, None),
        );
        assert_eq!(
            e.table().len(),
            2,
            "the new flow ended an idle flow of its shard"
        );
        feed(
            &mut e,
            &mut ctx,
            &mut pre,
            110 * S,
            &packet(1, 2000, 2, 53, None),
        );
        assert_eq!(
            ctx.stats().flows_created,
            2,
            "flow A was ended and started again"
        );
        assert_eq!(ctx.stats().flows_timeout, 0);
        // At 200 s A (last packet 110 s) is past its 30 s; B (200 s) is not.
        assert_eq!(e.expire_serial(&mut ctx, 200 * S), 1);
        assert_eq!(e.table().len(), 1);
    }

    /// An IPv4 ICMP message (no link header) from `10.0.0.src` to `10.0.0.dst`: type, code, 4 zero bytes, `body`.
    fn icmp(src: u8, dst: u8, t: u8, code: u8, body: &[u8]) -> Vec<u8> {
        let mut b = vec![0x45, 0];
        b.extend_from_slice(&(28 + body.len() as u16).to_be_bytes());
        b.extend_from_slice(&[0, 1, 0x40, 0, 64, 1, 0, 0, 10, 0, 0, src, 10, 0, 0, dst]);
        b.extend_from_slice(&[t, code, 0, 0, 0, 0, 0, 0]);
        b.extend_from_slice(body);
        b
    }

    /// With `icmp_errors_in_quoted_flow`, as Suricata files ICMPv4 errors.
    #[test]
    fn icmp_errors_count_in_the_flow_they_quote_and_echo_flows_follow_the_request() {
        let mut cfg = EngineConfig::default();
        cfg.decode.icmp_errors_in_quoted_flow = true;
        let mut e = Engine::with_shared(
            cfg,
            None,
            rules("alert icmp any any -> any any (itype:3; sid:1;)"),
        );
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        let query = datagram(1, 5000, 2, 53, b"q");
        let packets = [
            query.clone(),
            // A router's port unreachable about the query, to its sender: the query's flow, to the client.
            icmp(7, 1, 3, 3, &query),
            // The same about a datagram no flow tracks, and a time exceeded: no flow of their own.
            icmp(7, 1, 3, 3, &datagram(1, 5001, 2, 53, b"q")),
            icmp(7, 1, 11, 0, &query),
            // An echo request from each side, each answered: two flows.
            icmp(1, 2, 8, 0, b"ping"),
            icmp(2, 1, 0, 0, b"ping"),
            icmp(2, 1, 8, 0, b"ping"),
            icmp(1, 2, 0, 0, b"ping"),
        ];
        for (i, p) in packets.iter().enumerate() {
            feed(&mut e, &mut ctx, &mut pre, (i as u64 + 1) * S, p);
        }
        let fin = e.finish([ctx]);
        let flows: Vec<&FlowRecord> = fin
            .events
            .iter()
            .filter_map(|ev| match &ev.kind {
                EventKind::Flow(r) => Some(&**r),
                _ => None,
            })
            .collect();
        assert_eq!(flows.len(), 3, "{flows:#?}");
        let udp = flows
            .iter()
            .find(|r| r.tcp.is_none() && r.icmp_toserver.is_none())
            .expect("the UDP flow");
        assert_eq!((udp.pkts_toserver, udp.pkts_toclient), (1, 1));
        assert!(udp.alerted, "the rules see the unreachable in its flow");
        for r in flows.iter().filter(|r| r.icmp_toserver.is_some()) {
            assert_eq!((r.pkts_toserver, r.pkts_toclient), (1, 1));
            assert_eq!(
                (r.icmp_toserver, r.icmp_toclient),
                (Some((8, 0)), Some((0, 0)))
            );
        }
        // Both unreachables alert (the untracked one without a flow).
        assert_eq!(alerts(&fin.events), vec![1, 1]);
    }

    /// One-packet UDP flows between ever new host pairs, one a second for 20,000 s: almost every flow lands in a
    /// shard no later flow reaches, so only a sweep ends it. With sweeps (every 10 s of capture time, at least 64
    /// packets apart) the live-flow gauge stays within the UDP timeout (30 s) plus one sweep period; without them the
    /// table keeps nearly every flow it ever saw.
    #[test]
    fn sweeps_keep_the_flow_table_bounded_over_a_long_input() {
        let run = |sweep: bool| {
            let cfg = EngineConfig {
                sweep: crate::SweepConfig {
                    every_ns: 10 * S,
                    min_packets: 64,
                    gap_ns: 0,
                    min_packets_after_gap: 0,
                },
                ..EngineConfig::default()
            };
            let mut e = Engine::new(cfg, None, None);
            let mut ctx = e.new_ctx();
            let mut pre = Prestage::new(e.config());
            let mut clock = crate::SweepClock::new(e.config().sweep);
            let mut most = 0;
            for i in 0..20_000u64 {
                let ts = i * S;
                let mut p = packet(0, 4000, 0, 53, None);
                // Source 10.x.y.1, destination 10.0.0.2: a new host pair (and bundle) for each flow.
                p[13] = (i >> 8) as u8;
                p[14] = i as u8;
                p[15] = 1;
                p[19] = 2;
                feed(&mut e, &mut ctx, &mut pre, ts, &p);
                if sweep && let Some(now) = clock.packet(ts) {
                    e.expire_serial(&mut ctx, now);
                }
                most = most.max(e.table().len());
            }
            let ended_early = ctx.stats().flows_timeout;
            let slots = e.table_slots();
            let f = e.finish([ctx]);
            assert_eq!(f.stats.flows_created, 20_000);
            assert_eq!(f.stats.flows_ended(), 20_000, "every flow ends once");
            (most, ended_early, f.stats.flow_sweeps, slots)
        };
        let (most, ended, sweeps, (slots, stored)) = run(true);
        // Emptied shards give their tables back: what stays allocated follows the flows alive, not every shard the
        // input ever reached (20,000 here, 3 slots each at least).
        assert!(
            slots <= 8 * most,
            "{slots} table entries allocated for at most {most} flows"
        );
        // The store reuses the slots of ended flows: it holds no more than the most flows alive at once.
        assert!(
            stored <= most.div_ceil(crate::table::STORE_BLOCK) * crate::table::STORE_BLOCK,
            "{stored} flow slots in the store for at most {most} flows"
        );
        assert!(
            most <= 30 + 64 + 1,
            "{most} flows alive at once with sweeps"
        );
        assert!(
            ended >= 19_900,
            "only {ended} flows ended before the end of input"
        );
        assert!(sweeps >= 300, "{sweeps} sweeps");
        let (most, _, _, _) = run(false);
        assert!(
            most > 10_000,
            "without sweeps the table should keep most flows ({most})"
        );
    }

    /// Rule actions as Suricata applies them: a packet rule's `drop` drops that packet and the flow goes on being
    /// inspected, an IP-only rule's `drop` ends the flow's inspection (flow action `drop`), a `pass` withdraws the
    /// alerts other rules raised on its packet (and only that packet, for a packet rule), and in IPS mode a drop
    /// rule's alert is `blocked`.
    #[test]
    fn drop_and_pass_act_on_the_packet_or_the_flow() {
        let rules = r#"drop udp any any -> any 9 (dsize:4; sid:1;)
alert udp any any -> any 9 (content:"xy"; sid:2;)
drop ip 10.0.0.7 any -> any any (sid:3;)
pass udp any any -> any 53 (content:"pass"; sid:4;)
alert udp any any -> any 53 (content:"a"; sid:5;)"#;
        let (set, report) =
            RuleSet::parse(rules, &flowbundle_rules::Vars::default()).expect("rules parse");
        assert_eq!(report.loaded, 5, "{:?}", report.skipped_rules);
        let cfg = EngineConfig {
            ips: true,
            ..EngineConfig::default()
        };
        let mut e = Engine::new(cfg, None, Some(set));
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        let mut dropped = Vec::new();
        for (i, p) in [
            datagram(1, 1000, 2, 9, b"abcd"),
            datagram(1, 1000, 2, 9, b"xyz"),
            datagram(7, 1000, 2, 80, b"q"),
            datagram(7, 1000, 2, 80, b"r"),
            datagram(1, 2000, 2, 53, b"pass a"),
            datagram(1, 2000, 2, 53, b"a"),
        ]
        .iter()
        .enumerate()
        {
            feed(&mut e, &mut ctx, &mut pre, (i as u64 + 1) * S, p);
            dropped.push(ctx.packet_dropped());
        }
        // The dsize drop drops its packet only; the IP-only drop its flow's packets from then on.
        assert_eq!(dropped, [true, false, true, true, false, false]);
        let events = e.finish([ctx]).events;
        let alerts: Vec<(u32, bool)> = events
            .iter()
            .filter_map(|ev| match &ev.kind {
                EventKind::Alert(a) => Some((a.signature_id, a.blocked)),
                _ => None,
            })
            .collect();
        // sid 2 still fires after the packet drop; sid 3 fires once (its flow is no longer inspected); sid 5's
        // alert on the passed packet is withdrawn, not the one on the next packet.
        assert_eq!(alerts, [(1, true), (2, false), (3, true), (5, false)]);
        let actions: Vec<Option<&str>> = events
            .iter()
            .filter_map(|ev| match &ev.kind {
                EventKind::Flow(r) => Some(r.action.map(|a| a.name())),
                _ => None,
            })
            .collect();
        assert_eq!(actions.iter().filter(|a| **a == Some("drop")).count(), 1);
        assert!(actions.iter().all(|a| *a != Some("pass")));
    }

    /// Detection as a stage of its own (the software pipeline and MultiLayer Processing, `crate::staged`) decides
    /// what run-to-completion decides: the same alerts (a `pass` withdrawing the others of its packet, an IPS drop
    /// `blocked`), the same dropped packets, and each flow record's `action` and `alerted`, which only the detection
    /// stage's state knows. The flow stage's script runs at once here, on the packet's bundle.
    #[test]
    fn staged_detection_decides_what_run_to_completion_decides() {
        // Tags too: the packets after sid 2's alert are tagged, those of the flows dropped or passed are not.
        let rules_text = r#"drop udp any any -> any 9 (dsize:4; sid:1;)
alert udp any any -> any 9 (content:"xy"; tag:session,3,packets; sid:2;)
drop ip 10.0.0.7 any -> any any (tag:session; sid:3;)
pass udp any any -> any 53 (content:"pass"; sid:4;)
alert udp any any -> any 53 (content:"a"; tag:session; sid:5;)
pass ip 10.0.0.3 any -> any any (sid:6;)
alert udp any any -> any 99 (content:"o"; tag:host,5,packets; sid:7;)"#;
        let packets = [
            datagram(1, 1000, 2, 9, b"abcd"),
            datagram(1, 1000, 2, 9, b"xyz"),
            datagram(2, 9, 1, 1000, b"tagged"),
            datagram(7, 1000, 2, 80, b"q"),
            datagram(7, 1000, 2, 80, b"r"),
            datagram(1, 2000, 2, 53, b"pass a"),
            datagram(1, 2000, 2, 53, b"a"),
            datagram(3, 3000, 2, 99, b"ok"),
            datagram(3, 3000, 2, 99, b"o"),
        ];
        let cfg = EngineConfig {
            ips: true,
            tagged_packets: true,
            ..EngineConfig::default()
        };
        let run = |staged: bool| {
            let mut e = Engine::with_shared(cfg.clone(), None, rules(rules_text));
            if staged {
                e = e.staged();
            }
            let mut ctx = e.new_ctx();
            let mut detect = e.new_ctx();
            let mut pre = Prestage::new(e.config());
            let mut script = Script::default();
            let mut dropped = Vec::new();
            for (i, p) in packets.iter().enumerate() {
                if staged {
                    // The payloads the rules read are slices of the packet: recorded as ranges of it, not copied.
                    script.packet_is(p);
                    ctx.record_for_detection(std::mem::take(&mut script));
                }
                let rec = PacketRecord {
                    ts_ns: (i as u64 + 1) * S,
                    orig_len: p.len() as u32,
                    interface: 0,
                    link_type: LinkType::RAW,
                    data: p,
                };
                // Numbered packets: a flow's id comes from its first packet's number, and the detection stage
                // keys its state by flow id.
                e.process_serial(&mut ctx, &mut pre, i as u64, &rec);
                if staged {
                    script = ctx.take_script().expect("the flow stage recorded");
                    assert!(
                        !script.is_empty(),
                        "packet {i} left the detection stage nothing"
                    );
                    let bundle = Engine::serial_bundle(&decode(&rec, &e.config().decode));
                    // SAFETY: one thread, no other user of the engine.
                    let mut held = unsafe { BundleToken::assume_held(bundle) };
                    e.detect_stage(&mut detect, &mut held, &mut script, p);
                    dropped.push(detect.packet_dropped());
                } else {
                    dropped.push(ctx.packet_dropped());
                }
            }
            let mut events = e.finish([ctx, detect]).events;
            sort_events(&mut events);
            if staged {
                assert_eq!(e.detect_table.as_mut().map(DetectTable::flows), Some(0));
            }
            (dropped, events)
        };
        let (rtc_dropped, rtc) = run(false);
        let (staged_dropped, staged) = run(true);
        assert_eq!(staged_dropped, rtc_dropped);
        assert_eq!(
            rtc.iter()
                .filter(|ev| matches!(&ev.kind, EventKind::Flow(r) if r.action.is_some()))
                .count(),
            2,
            "the IP-only drop's flow and the flow-scoped pass's"
        );
        let tagged: Vec<u64> = rtc
            .iter()
            .filter(|ev| matches!(&ev.kind, EventKind::Packet(p) if p.session))
            .map(|ev| ev.ts_ns / S)
            .collect();
        assert_eq!(tagged, [3], "the packet after sid 2's alert");
        assert_eq!(staged.len(), rtc.len());
        for (s, r) in staged.iter().zip(&rtc) {
            assert_eq!(s, r);
        }
    }

    /// A parser's anomaly becomes an EVE `anomaly` event of its flow (Suricata's `applayer` kind, written by
    /// default), on the message's transaction and in its direction: a DNS query with the reserved Z bit set.
    #[test]
    fn parser_anomalies_are_anomaly_events() {
        let mut query = vec![0x12, 0x34, 0x01, 0x40, 0, 1, 0, 0, 0, 0, 0, 0];
        query.extend_from_slice(b"\x01a\x07example\x00\x00\x01\x00\x01");
        let mut e = Engine::with_shared(EngineConfig::default(), None, None);
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        feed(
            &mut e,
            &mut ctx,
            &mut pre,
            S,
            &datagram(1, 5000, 2, 53, &query),
        );
        let fin = e.finish([ctx]);
        let anomalies: Vec<(&crate::event::Anomaly, bool)> = fin
            .events
            .iter()
            .filter_map(|ev| match &ev.kind {
                EventKind::Anomaly(a) => Some((&**a, ev.to_server())),
                _ => None,
            })
            .collect();
        assert_eq!(
            anomalies,
            [(
                &crate::event::Anomaly::AppLayer {
                    event: flowbundle_types::AppLayerEvent::DnsZFlagSet,
                    tx_id: 0
                },
                true
            )]
        );
    }

    /// The events the alert filter says it needs ([`crate::FilterNeeds`]) are all it acts on: applied to those alone
    /// in order, every other event kept as it is, it drops and rewrites the same events as applied to every event
    /// (what lets the workers of a parallel run render every other event themselves). With thresholds, a
    /// suppression, xbits, host tags and session tags decided by the filter, then with a rate filter too (IPS mode:
    /// the alert it acts on is rewritten as blocked, the flow's later alerts dropped, its record given the action).
    #[test]
    fn the_filter_acts_on_the_events_it_says_it_needs_only() {
        let text = r#"alert udp any any -> any 9 (content:"a"; threshold:type limit,track by_src,count 1,seconds 60; tag:session,2,packets; sid:1;)
alert udp any any -> any 9 (content:"b"; sid:2;)
alert udp any any -> any 7 (content:"c"; sid:3;)
alert udp any any -> any 11 (content:"x"; xbits:set,seen,track ip_src,expire 60; noalert; sid:4;)
alert udp any any -> any 11 (content:"y"; xbits:isset,seen,track ip_src; sid:5;)
alert udp any any -> any 13 (content:"h"; tag:host,3,packets,src; sid:6;)
alert udp any any -> any any (content:"z"; sid:7;)"#;
        let set = rules(text).expect("rules");
        let cfg = EngineConfig {
            tagged_packets: true,
            ..EngineConfig::default()
        };
        let mut e = Engine::with_shared(cfg, None, Some(set.clone()));
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        let packets = [
            datagram(1, 1000, 2, 9, b"az"),
            datagram(2, 9, 1, 1000, b"z"),
            datagram(1, 1000, 2, 9, b"a"),
            datagram(1, 1000, 2, 9, b"bz"),
            datagram(3, 1001, 2, 7, b"c"),
            datagram(3, 1001, 2, 7, b"cz"),
            datagram(3, 1001, 2, 7, b"cz"),
            datagram(4, 1002, 2, 11, b"y"),
            datagram(4, 1002, 2, 11, b"x"),
            datagram(4, 1003, 2, 11, b"yz"),
            datagram(5, 1004, 2, 13, b"h"),
            datagram(6, 1005, 5, 80, b"z"),
            datagram(5, 1006, 8, 80, b"q"),
            datagram(9, 1007, 8, 80, b"z"),
        ];
        for (i, p) in packets.iter().enumerate() {
            feed(&mut e, &mut ctx, &mut pre, (i as u64 + 1) * S, p);
        }
        let events = e.finish([ctx]).events;
        let vars = flowbundle_rules::Vars::new();
        for (config, rewrites) in [
            ("suppress gen_id 1, sig_id 2\n", false),
            (
                "suppress gen_id 1, sig_id 2\n\
                 rate_filter gen_id 1, sig_id 3, track by_rule, count 1, seconds 60, new_action drop, timeout 60\n",
                true,
            ),
        ] {
            let (config, errors) = flowbundle_rules::ThresholdConfig::parse(config, &vars);
            assert!(errors.is_empty(), "{errors:?}");
            let filter = || {
                crate::AlertFilter::with_config(
                    &set,
                    &config,
                    flowbundle_rules::ThresholdTable::default(),
                )
                .expect("the rules need the filter")
                .ips(true)
            };
            let (mut every, mut needed_only) = (filter(), filter());
            let needs = every.needs();
            let (mut needed, mut dropped, mut rewritten) = (0, 0, 0);
            for ev in &events {
                let all = every.apply(ev).map(|c| format!("{:?}", &*c));
                let part = if needs.needs(ev) {
                    needed += 1;
                    needed_only.apply(ev).map(|c| format!("{:?}", &*c))
                } else {
                    Some(format!("{ev:?}"))
                };
                assert_eq!(all, part, "{ev:?}");
                match &all {
                    None => dropped += 1,
                    Some(s) if *s != format!("{ev:?}") => rewritten += 1,
                    Some(_) => {}
                }
            }
            // With a rate filter every alert is needed (its action ends a flow's alerts, whatever their rule);
            // without, the plain rule's alerts are not.
            assert!(needed > 0, "the filter needs some events");
            assert_eq!(
                needed < events.len(),
                !rewrites,
                "{needed} of {}",
                events.len()
            );
            assert!(dropped > 0, "the filter drops events");
            assert_eq!(rewritten > 0, rewrites, "{rewritten} rewritten");
        }
    }

    /// `tag` on datagrams, tagged packets logged: a session tag covers its flow's next packets (the alerting one
    /// counted, not reported), a host tag the host's packets in any flow, installed only by an alert that is
    /// reported (a threshold's suppressed match renews nothing), decided where events meet in input order.
    #[test]
    fn tags_report_the_packets_after_an_alert_in_the_flow_or_to_the_host() {
        let text = r#"alert udp any any -> any 9 (content:"go"; tag:session,2,packets; sid:1;)
alert udp any any -> any 7 (content:"h"; threshold:type limit,track by_src,count 1,seconds 60; tag:host,3,packets,src; sid:2;)
alert udp any any -> any 11 (content:"t"; tag:session,5,packets; sid:3;)
drop ip 10.0.0.9 any -> any any (sid:4;)
alert udp any any -> any 12 (content:"s"; threshold:type limit,track by_src,count 1,seconds 60; tag:session,2,packets; sid:5;)"#;
        let set = rules(text);
        let run = |tagged_packets: bool| {
            let cfg = EngineConfig {
                tagged_packets,
                ..EngineConfig::default()
            };
            let mut e = Engine::with_shared(cfg, None, set.clone());
            let mut ctx = e.new_ctx();
            let mut pre = Prestage::new(e.config());
            for (i, p) in [
                datagram(1, 1000, 2, 9, b"go"),
                datagram(2, 9, 1, 1000, b"x"),
                datagram(1, 1000, 2, 9, b"y"),
                datagram(3, 5, 4, 7, b"h"),
                datagram(3, 6, 5, 80, b"z"),
                datagram(4, 7, 3, 5, b"q"),
                datagram(3, 5, 4, 7, b"h"),
                datagram(3, 6, 5, 80, b"z"),
                datagram(8, 1, 9, 11, b"t"),
                datagram(9, 11, 8, 1, b"x"),
                datagram(8, 1, 9, 11, b"y"),
                datagram(20, 1, 21, 12, b"s"),
                datagram(21, 12, 20, 1, b"r"),
                datagram(20, 2, 21, 12, b"s"),
                datagram(21, 12, 20, 2, b"r"),
            ]
            .iter()
            .enumerate()
            {
                feed(&mut e, &mut ctx, &mut pre, (i as u64 + 1) * S, p);
            }
            let rules = e.rules().expect("rules");
            let mut events = e.finish([ctx]).events;
            crate::AlertFilter::new(&rules)
                .expect("host tags and a threshold need the filter")
                .retain(&mut events);
            events
        };
        let packets = |events: &[Event]| -> Vec<(u64, bool)> {
            events
                .iter()
                .filter_map(|ev| match &ev.kind {
                    EventKind::Packet(p) => Some((ev.ts_ns / S, p.session)),
                    _ => None,
                })
                .collect()
        };
        let events = run(true);
        let alerts: Vec<u64> = events
            .iter()
            .filter(|ev| matches!(ev.kind, EventKind::Alert(_)))
            .map(|ev| ev.ts_ns / S)
            .collect();
        assert_eq!(
            alerts,
            [1, 4, 9, 10, 12],
            "the second sid 2 match is over its threshold"
        );
        // Packets by their time (packet n at n seconds). 2: the session tag's second packet; 3 goes beyond it. 5, 6:
        // the host's second and third packets, in other flows and either way; 7 would be its fourth (the suppressed
        // match renewed nothing). 10: inspected (its drop rule matched on it), while 11 comes after its flow was
        // dropped: not inspected, not tagged. 13: after sid 5's reported alert, its tag decided where alerts meet
        // (the rule has a threshold); 15: after its suppressed one, so not tagged.
        assert_eq!(
            packets(&events),
            [(2, true), (5, false), (6, false), (10, true), (13, false)]
        );
        let p = events
            .iter()
            .find_map(|ev| match &ev.kind {
                EventKind::Packet(p) => Some(p),
                _ => None,
            })
            .expect("a tagged packet");
        assert_eq!(
            &p.data[..],
            &datagram(2, 9, 1, 1000, b"x")[..],
            "the packet as captured"
        );
        assert_eq!(p.wire_len as usize, p.data.len());
        // Without `tagged-packets` the engine reports none.
        assert!(packets(&run(false)).is_empty());
    }

    /// A 300,000-byte download through the engine: the file keywords see the whole file (its size, its hashes
    /// streamed past the 100 KiB inspection cap, its name from the URI, its magic), `file.data` only its first
    /// bytes, and EVE `fileinfo` carries the hashes the rules asked for.
    #[test]
    fn file_keywords_see_a_whole_http_download() {
        let mut body: Vec<u8> = (0..300_000usize).map(|i| (i % 251) as u8).collect();
        body[..2].copy_from_slice(b"MZ");
        body[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        body[0x80..0x84].copy_from_slice(b"PE\0\0");
        body[0x80 + 22..0x80 + 24].copy_from_slice(&0x102u16.to_le_bytes());
        body[0x80 + 24..0x80 + 26].copy_from_slice(&0x10bu16.to_le_bytes());
        body[250_000..250_008].copy_from_slice(b"TAILMARK");
        let dir =
            std::env::temp_dir().join(format!("flowbundle-engine-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("md5.list"), "ffdfe16249a30f2e2d3f783bebaef063\n").unwrap();
        std::fs::write(dir.join("other.list"), "00000000000000000000000000000000\n").unwrap();
        let text = "alert http any any -> any any (filemd5:md5.list; sid:1;)\n\
             alert http any any -> any any (filemd5:!other.list; sid:2;)\n\
             alert http any any -> any any (filemd5:other.list; sid:3;)\n\
             alert http any any -> any any (filesize:>200000; fileext:\"exe\"; sid:4;)\n\
             alert http any any -> any any (filesize:<200000; sid:5;)\n\
             alert http any any -> any any (filemagic:\"PE32 executable\"; file.name; content:\"/dl/setup.exe\"; startswith; endswith; sid:6;)\n\
             alert http any any -> any any (file.data; content:\"TAILMARK\"; sid:7;)\n\
             alert http any any -> any any (filename:!\"setup\"; sid:8;)\n";
        let rules_path = dir.join("files.rules");
        let name = rules_path.to_string_lossy().into_owned();
        let (set, report) = RuleSet::parse_with(
            &[(name.as_str(), text.as_bytes())],
            &flowbundle_rules::LoadOptions::default(),
        )
        .unwrap();
        assert_eq!(report.loaded, 8, "{report:?}");
        let cfg = EngineConfig {
            app_events: true,
            ..EngineConfig::default()
        };
        let mut e = Engine::with_shared(cfg, None, Some(Arc::new(set)));
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        const SYN: u8 = 0x02;
        const ACK: u8 = 0x10;
        const PSH_ACK: u8 = 0x18;
        const FIN_ACK: u8 = 0x11;
        let req = b"GET /dl/setup.exe?v=2 HTTP/1.1\r\nHost: example.com\r\n\r\n";
        let mut resp =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        resp.extend_from_slice(&body);
        let mut pkts = vec![
            segment(1, 40000, 2, 80, 99, SYN, b""),
            segment(2, 80, 1, 40000, 499, SYN | ACK, b""),
            segment(1, 40000, 2, 80, 100, ACK, b""),
            segment(1, 40000, 2, 80, 100, PSH_ACK, req),
        ];
        let mut seq = 500u32;
        for c in resp.chunks(1400) {
            pkts.push(segment(2, 80, 1, 40000, seq, PSH_ACK, c));
            seq += c.len() as u32;
        }
        pkts.push(segment(2, 80, 1, 40000, seq, FIN_ACK, b""));
        for (i, p) in pkts.iter().enumerate() {
            feed(&mut e, &mut ctx, &mut pre, (i as u64 + 1) * S, p);
        }
        let fin = e.finish([ctx]);
        let mut sids = alerts(&fin.events);
        sids.sort();
        assert_eq!(sids, [1, 2, 4, 6]);
        let info: Vec<&flowbundle_protocols::FileInfo> = fin
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::App(a) => match &a.event {
                    flowbundle_protocols::AppEvent::Fileinfo(f) => Some(f),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert_eq!(info.len(), 1);
        assert_eq!(info[0].filename, "/dl/setup.exe");
        assert_eq!(info[0].size, 300_000);
        assert_eq!(info[0].state, "CLOSED");
        assert_eq!(
            info[0].md5.as_deref(),
            Some("ffdfe16249a30f2e2d3f783bebaef063")
        );
        assert_eq!(info[0].sha256, None, "only the hashes the rules use");
        assert_eq!(info[0].magic, Some("PE32 executable, for MS Windows"));
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A TCP segment from `10.0.0.src:sport` to `10.0.0.dst:dport` with `seq`, `ack`, `flags` and `payload`.
    fn seg(
        src: u8,
        sport: u16,
        dst: u8,
        dport: u16,
        sa: (u32, u32),
        fl: u8,
        data: &[u8],
    ) -> Vec<u8> {
        let mut b = segment(src, sport, dst, dport, sa.0, fl, data);
        b[28..32].copy_from_slice(&sa.1.to_be_bytes());
        b
    }

    /// The alerts, as (signature, packet number), of `packets` with `rules`, mid-stream pickups allowed or not.
    fn tcp_alerts_at(rules_text: &str, midstream: bool, packets: &[Vec<u8>]) -> Vec<(u32, u64)> {
        let cfg = EngineConfig {
            midstream,
            ..EngineConfig::default()
        };
        let mut e = Engine::with_shared(cfg, None, rules(rules_text));
        let mut ctx = e.new_ctx();
        let mut pre = Prestage::new(e.config());
        for (i, p) in packets.iter().enumerate() {
            let rec = PacketRecord {
                ts_ns: (i as u64 + 1) * S,
                orig_len: p.len() as u32,
                interface: 0,
                link_type: LinkType::RAW,
                data: p,
            };
            e.process_serial(&mut ctx, &mut pre, i as u64, &rec);
        }
        e.finish([ctx])
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Alert(a) => Some((a.signature_id, e.pcap_cnt.unwrap_or(0))),
                _ => None,
            })
            .collect()
    }

    const FIN: u8 = 0x01;
    const SYN: u8 = 0x02;
    const RST: u8 = 0x04;
    const ACK: u8 = 0x10;

    /// A RST on a connection that nothing opened is `rst_but_no_session`, on that packet, as often as it comes; a
    /// RST that ends a connection opened by a SYN is not.
    #[test]
    fn stream_event_rst_but_no_session() {
        let r = "alert tcp any any -> any any (stream-event:rst_but_no_session; sid:1;)";
        let p = [
            seg(1, 40000, 2, 80, (5, 0), RST, b""),
            seg(1, 40000, 2, 80, (5, 0), RST | ACK, b""),
            seg(3, 40001, 2, 80, (9, 0), SYN, b""),
            seg(2, 80, 3, 40001, (100, 10), RST | ACK, b""),
        ];
        assert_eq!(tcp_alerts_at(r, false, &p), [(1, 1), (1, 2)]);
        // A mid-stream ACK opens a session only where pickups are allowed.
        let p = [
            seg(1, 40000, 2, 80, (5, 7), ACK, b""),
            seg(2, 80, 1, 40000, (7, 5), RST | ACK, b""),
        ];
        assert_eq!(tcp_alerts_at(r, false, &p), [(1, 2)]);
        assert_eq!(tcp_alerts_at(r, true, &p), []);
    }

    /// A FIN on a connection that nothing opened is `fin_but_no_session`; where mid-stream pickups are allowed a FIN
    /// carrying data opens the session instead (and a SYN with FIN is the FIN's event).
    #[test]
    fn stream_event_fin_but_no_session() {
        let r = "alert tcp any any -> any any (stream-event:fin_but_no_session; sid:7;)";
        let p = [
            seg(1, 40000, 2, 80, (5, 7), FIN | ACK, b"bye"),
            seg(1, 40000, 2, 80, (9, 7), FIN | ACK, b""),
        ];
        assert_eq!(tcp_alerts_at(r, false, &p), [(7, 1), (7, 2)]);
        assert_eq!(tcp_alerts_at(r, true, &p), []);
        let p = [
            seg(1, 40000, 2, 80, (5, 0), SYN | FIN, b""),
            seg(3, 40001, 2, 80, (9, 0), SYN, b""),
            seg(3, 40001, 2, 80, (10, 0), FIN | ACK, b""),
        ];
        assert_eq!(tcp_alerts_at(r, true, &p), [(7, 1)]);
        // The name in `engine-event` form is the same test.
        let r = "alert tcp any any -> any any (engine-event:stream.fin_but_no_session; sid:8;)";
        assert_eq!(
            tcp_alerts_at(r, false, &[seg(1, 40000, 2, 80, (5, 7), FIN, b"")]),
            [(8, 1)]
        );
    }

    /// `reassembly_seq_gap` is raised on the packet whose processing gives a hole up (here the server's answer,
    /// which tells that the request's missing bytes will not come), once; a stream without holes raises none.
    #[test]
    fn stream_event_reassembly_seq_gap() {
        let r = "alert tcp any any -> any any (stream-event:reassembly_seq_gap; sid:3;)";
        let hs = [
            seg(1, 40000, 2, 80, (0, 0), SYN, b""),
            seg(2, 80, 1, 40000, (0, 1), SYN | ACK, b""),
            seg(1, 40000, 2, 80, (1, 1), ACK, b""),
        ];
        let mut p = hs.to_vec();
        p.push(seg(1, 40000, 2, 80, (1, 1), ACK, b"GET "));
        p.push(seg(1, 40000, 2, 80, (100, 1), ACK, b"more"));
        p.push(seg(2, 80, 1, 40000, (1, 104), ACK, b"HTTP/1.1 200 OK\r\n"));
        p.push(seg(1, 40000, 2, 80, (104, 18), ACK, b"again"));
        assert_eq!(tcp_alerts_at(r, false, &p), [(3, 6)]);
        let mut p = hs.to_vec();
        p.push(seg(1, 40000, 2, 80, (1, 1), ACK, b"GET "));
        p.push(seg(1, 40000, 2, 80, (5, 1), ACK, b"more"));
        p.push(seg(2, 80, 1, 40000, (1, 9), ACK, b"HTTP/1.1 200 OK\r\n"));
        assert_eq!(tcp_alerts_at(r, false, &p), []);
        // A hole that a RST gives up before anyone acknowledged past it is no gap to Suricata: no event.
        let mut p = hs.to_vec();
        p.push(seg(1, 40000, 2, 80, (1, 1), ACK, b"GET "));
        p.push(seg(1, 40000, 2, 80, (100, 1), ACK, b"more"));
        p.push(seg(2, 80, 1, 40000, (1, 5), RST | ACK, b""));
        assert_eq!(tcp_alerts_at(r, false, &p), []);
        // Acknowledged past the hole first (a pure ACK gives nothing up), then the RST: the event is the RST's.
        p.insert(5, seg(2, 80, 1, 40000, (1, 104), ACK, b""));
        assert_eq!(tcp_alerts_at(r, false, &p), [(3, 7)]);
    }

    /// One rule per handshake event, sid = its position in this list plus one.
    const HANDSHAKE_EVENTS: [&str; 16] = [
        "3whs_synack_with_wrong_ack",
        "3whs_synack_tfo_data_ignored",
        "3whs_synack_in_wrong_direction",
        "4whs_synack_with_wrong_ack",
        "4whs_synack_with_wrong_syn",
        "3whs_synack_toserver_on_syn_recv",
        "3whs_synack_resend_with_different_ack",
        "3whs_syn_toclient_on_syn_recv",
        "3whs_syn_resend_diff_seq_on_syn_recv",
        "est_synack_toserver",
        "est_synack_resend_with_diff_ack",
        "est_synack_resend_with_diff_seq",
        "est_synack_resend",
        "est_syn_toclient",
        "est_syn_resend_diff_seq",
        "est_syn_resend",
    ];

    /// The handshake events of `packets`, as (event name, packet number).
    fn handshake_events(packets: &[Vec<u8>]) -> Vec<(&'static str, u64)> {
        let rules: String = HANDSHAKE_EVENTS
            .iter()
            .enumerate()
            .map(|(i, e)| {
                format!(
                    "alert tcp any any -> any any (stream-event:{e}; sid:{};)\n",
                    i + 1
                )
            })
            .collect();
        tcp_alerts_at(rules.trim_end(), false, packets)
            .into_iter()
            .map(|(sid, n)| (HANDSHAKE_EVENTS[sid as usize - 1], n))
            .collect()
    }

    const C: (u8, u16) = (1, 40000);
    const SV: (u8, u16) = (2, 80);

    /// A segment from `from` to `to` with (seq, ack) and flags.
    fn hs(from: (u8, u16), to: (u8, u16), sa: (u32, u32), fl: u8) -> Vec<u8> {
        seg(from.0, from.1, to.0, to.1, sa, fl, b"")
    }

    /// Decoder and stream anomalies become EVE `anomaly` events when their kinds are written (off by default, as in
    /// Suricata): a SYN-ACK acknowledging the wrong number is a stream anomaly of its flow, a UDP datagram whose IPv4
    /// length says more than was captured a decoder anomaly of its flow (the engine still tracks it).
    #[test]
    fn decode_and_stream_anomalies_are_events_when_configured() {
        use crate::config::AnomalyTypes;
        use crate::event::Anomaly;
        let run = |anomaly: AnomalyTypes| {
            let cfg = EngineConfig {
                anomaly,
                ..EngineConfig::default()
            };
            let mut e = Engine::new(cfg, None, None);
            let mut pre = Prestage::new(e.config());
            let mut ctx = e.new_ctx();
            let mut trunc = datagram(1, 5000, 2, 53, b"abcd");
            // The IPv4 total length says more than was captured.
            trunc[2..4].copy_from_slice(&200u16.to_be_bytes());
            let packets = [
                hs(C, SV, (100, 0), SYN),
                hs(SV, C, (500, 7), SYN | ACK),
                trunc,
            ];
            for (i, p) in packets.iter().enumerate() {
                feed(&mut e, &mut ctx, &mut pre, S + i as u64, p);
            }
            let fin = e.finish([ctx]);
            fin.events
                .iter()
                .filter_map(|ev| match &ev.kind {
                    EventKind::Anomaly(a) => Some((**a, ev.has_flow())),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(AnomalyTypes::default()), []);
        let stream = Anomaly::Stream {
            event: StreamEvent::ThreeWhsSynackWithWrongAck,
            packet: None,
        };
        let decode = Anomaly::Decode {
            event: flowbundle_types::DecodeEvent::Ipv4TruncPkt,
            packet: None,
        };
        let all = AnomalyTypes {
            decode: true,
            stream: true,
            applayer: true,
            packethdr: false,
        };
        assert_eq!(run(all), [(stream, true), (decode, true)]);
        let decode_only = AnomalyTypes {
            stream: false,
            ..all
        };
        assert_eq!(run(decode_only), [(decode, true)]);
    }

    /// The SYN-ACK must acknowledge the SYN; with TCP Fast Open its data too, or the data was ignored.
    #[test]
    fn stream_events_of_the_syn_ack() {
        let ok = [
            hs(C, SV, (100, 0), SYN),
            hs(SV, C, (500, 101), SYN | ACK),
            hs(C, SV, (101, 501), ACK),
        ];
        assert_eq!(handshake_events(&ok), []);
        let wrong = [
            hs(C, SV, (100, 0), SYN),
            hs(SV, C, (500, 7), SYN | ACK),
            hs(SV, C, (500, 101), SYN | ACK),
            hs(C, SV, (101, 501), ACK),
        ];
        assert_eq!(
            handshake_events(&wrong),
            [("3whs_synack_with_wrong_ack", 2)]
        );
        // A SYN carrying data and the Fast Open option (kind 34, then two NOPs): a SYN-ACK acknowledging only the
        // SYN ignored the data.
        let mut tfo = seg(C.0, C.1, SV.0, SV.1, (100, 0), SYN, b"");
        tfo[32] = 0x60;
        tfo.extend_from_slice(&[34, 2, 1, 1]);
        tfo.extend_from_slice(b"hello");
        let len = tfo.len() as u16;
        tfo[2..4].copy_from_slice(&len.to_be_bytes());
        let ignored = [tfo.clone(), hs(SV, C, (500, 101), SYN | ACK)];
        assert_eq!(
            handshake_events(&ignored),
            [("3whs_synack_tfo_data_ignored", 2)]
        );
        let taken = [tfo, hs(SV, C, (500, 106), SYN | ACK)];
        assert_eq!(handshake_events(&taken), []);
        // A SYN-ACK from the client: in the wrong direction, unless the server sent a SYN (four-way handshake),
        // where it must acknowledge the server's SYN and repeat the client's.
        let wrong_dir = [hs(C, SV, (100, 0), SYN), hs(C, SV, (100, 1), SYN | ACK)];
        assert_eq!(
            handshake_events(&wrong_dir),
            [("3whs_synack_in_wrong_direction", 2)]
        );
        let four = |sa| {
            [
                hs(C, SV, (100, 0), SYN),
                hs(SV, C, (700, 0), SYN),
                hs(C, SV, sa, SYN | ACK),
            ]
        };
        assert_eq!(
            handshake_events(&four((100, 5))),
            [("4whs_synack_with_wrong_ack", 3)]
        );
        assert_eq!(
            handshake_events(&four((9, 701))),
            [("4whs_synack_with_wrong_syn", 3)]
        );
        assert_eq!(handshake_events(&four((100, 701))), []);
    }

    /// After the server's SYN-ACK: a SYN-ACK from the client, a SYN from the server, the client's SYN with another
    /// sequence number, the server's SYN-ACK with another acknowledgement; a plain resend is no event.
    #[test]
    fn stream_events_after_the_syn_ack() {
        let p = [
            hs(C, SV, (100, 0), SYN),
            hs(SV, C, (500, 101), SYN | ACK),
            hs(C, SV, (100, 501), SYN | ACK),
            hs(SV, C, (500, 0), SYN),
            hs(C, SV, (300, 0), SYN),
            hs(SV, C, (500, 9), SYN | ACK),
            hs(C, SV, (100, 0), SYN),
            hs(SV, C, (500, 101), SYN | ACK),
        ];
        assert_eq!(
            handshake_events(&p),
            [
                ("3whs_synack_toserver_on_syn_recv", 3),
                ("3whs_syn_toclient_on_syn_recv", 4),
                ("3whs_syn_resend_diff_seq_on_syn_recv", 5),
                ("3whs_synack_resend_with_different_ack", 6),
            ]
        );
    }

    /// On an established connection: SYNs and SYN-ACKs resent or in the wrong direction; the server's SYN-ACK
    /// resent is no event until the server sent an ACK of its own (its final ACK may have been lost).
    #[test]
    fn stream_events_on_an_established_connection() {
        let p = [
            hs(C, SV, (100, 0), SYN),
            hs(SV, C, (500, 101), SYN | ACK),
            hs(C, SV, (101, 501), ACK),
            hs(SV, C, (500, 101), SYN | ACK),
            hs(C, SV, (100, 501), SYN | ACK),
            hs(SV, C, (500, 0), SYN),
            hs(C, SV, (100, 0), SYN),
            hs(C, SV, (42, 0), SYN),
            hs(SV, C, (501, 101), ACK),
            hs(SV, C, (500, 101), SYN | ACK),
            hs(SV, C, (500, 77), SYN | ACK),
            hs(SV, C, (9, 101), SYN | ACK),
        ];
        assert_eq!(
            handshake_events(&p),
            [
                ("est_synack_toserver", 5),
                ("est_syn_toclient", 6),
                ("est_syn_resend", 7),
                ("est_syn_resend_diff_seq", 8),
                ("est_synack_resend", 10),
                ("est_synack_resend_with_diff_ack", 11),
                ("est_synack_resend_with_diff_seq", 12),
            ]
        );
        // A connection picked up mid-stream has no handshake to check.
        let mid = [hs(C, SV, (101, 501), ACK), hs(SV, C, (500, 0), SYN)];
        assert_eq!(handshake_events(&mid), []);
    }
}
