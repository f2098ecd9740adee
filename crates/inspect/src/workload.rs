//! # The engine as the parallel runtime's workload
//!
//! [`InspectWorkload`] implements the shared [`Workload`] trait over a [`PacketSource`], usually a preloaded trace
//! made ready by [`Prestage::run`](crate::Prestage::run) ([`PreparedTrace`]): for each descriptor the runtime hands a
//! worker, with the token of the bundle the worker holds, it calls [`Engine::process`] on the packet's bytes, with the descriptor id as the packet
//! number (so cost records index like `Desc::id`, which is what the synthetic workload reads). Each worker's
//! [`WorkerCtx`] comes back in the run report's `locals`; hand them to [`Engine::finish`].
//!
//! ## Decoding before the claim under `ph`
//! With `ph`'s late claim (`SchedOptions::ph_late_claim`, the bench harness's default) the runtime calls
//! [`Workload::prepare`] between taking a packet from the receive queue and claiming its connection, as PAM's threads
//! parse L2–L4 before locking the connection entry. The engine's `prepare` is its decode ([`Engine::predecode`]),
//! which touches no flow state; `process` then inspects the decoded packet ([`Engine::process_predecoded`]) instead
//! of decoding it again. The decoded packet (borrowed views of the packet's bytes, about 200 bytes, no allocation) waits
//! in a per-worker slot of the workload, found by the context's worker number ([`WorkerCtx::worker`]). The slot
//! takes no lock: the first context to use it becomes its owner for good (one compare-and-swap of the context's
//! unique number, [`WorkerCtx::uid`]), and only its owner reads or writes it, always through `&mut WorkerCtx`, so the
//! borrow of that one context serialises every access; a packet then costs one load of the owner word. (A mutex here
//! cost 45 ns per packet, 7–9% of `ph`'s throughput.) A context that finds its slot owned by another (a caller that
//! made two contexts for one worker number) decodes in `process` instead. A slot holding another packet (a handoff:
//! the claim failed and the packet went to the connection's owner, which prepares it again) is simply overwritten;
//! `process` uses the slot only when it holds the very descriptor it was given, and decodes afresh otherwise.
//! Policies that claim inside `next` skip `prepare` (it would
//! only move the decode and add the slot's cost).
//!
//! ## Keeping per-flow order under `ph`
//! Every policy but `ph` hands a flow's packets to the engine in arrival order. `ph` may not: two workers can take
//! two packets of one connection from the receive queue, and the later one may claim the connection first. TCP data
//! would still come out of reassembly in order, but a flow's first packet (its start time, flow id and client side),
//! the order of UDP datagrams (identification, DNS transaction order), L7-filter's arrival-order buffer and idle
//! timeouts all depend on packet order. With the *order guard* on ([`InspectWorkload::with_order_guard`], default on
//! when the policy is `ph`), a packet whose predecessor in its flow (from [`Prepared::prev_in_flow`]) has not been
//! inspected yet is not inspected now: it is marked deferred, and the worker that inspects the predecessor (it holds
//! the same bundle, under the same exclusivity) then inspects the deferred packets that follow it, in order. The
//! engine therefore sees every flow in arrival order under every policy, and its output is identical to the
//! single-threaded run. What it costs: one byte of state per descriptor and two atomic accesses per packet; the
//! runtime's records then time a deferred packet inside its predecessor's processing. A predecessor that never comes
//! (a packet dropped in scaled mode) leaves its successors deferred until [`InspectWorkload::finish_deferred`].

use std::cell::UnsafeCell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use flowbundle_decode::{DecodeEvents, Decoded};
use flowbundle_ingest::{PacketRecord, Trace};
use flowbundle_types::{BundleToken, Desc, Outcome, PolicyShape, WorkerId, Workload};

use crate::engine::{Engine, PreDecoded, WorkerCtx};
use crate::prestage::{NO_PREV, Prepared};
use crate::stream::StreamOrder;

const PENDING: u8 = 0;
const DEFERRED: u8 = 1;
const DONE: u8 = 2;

/// Per-descriptor inspection state and the successor chain (see the module documentation).
struct OrderGuard {
    state: Vec<AtomicU8>,
    next: Vec<u32>,
}

impl OrderGuard {
    fn new(prev: &[u32]) -> Self {
        let mut next = vec![NO_PREV; prev.len()];
        for (id, &p) in prev.iter().enumerate() {
            if let Some(n) = next.get_mut(p as usize) {
                *n = id as u32;
            }
        }
        OrderGuard {
            state: (0..prev.len()).map(|_| AtomicU8::new(PENDING)).collect(),
            next,
        }
    }
}

/// What a dispatched packet was to the defragmenter ([`PacketSource::fragment`]). The single-threaded loop runs the
/// packet rules on every fragment without a flow, with the defragmenter's events on it
/// ([`crate::Engine::inspect_fragment`]); a streaming source dispatches fragments so that its workers do the same.
#[derive(Debug, Clone, Copy)]
pub enum FragmentRole<'a> {
    /// The descriptor's packet is a fragment the defragmenter held or dropped: inspected without a flow, alone.
    Absorbed(DecodeEvents),
    /// The descriptor's packet is the datagram this fragment (decoded) completed: the fragment is inspected without
    /// a flow first, then the datagram.
    Completing(Decoded<'a>, DecodeEvents),
}

/// Inspects descriptor `id`'s packet `rec` (packet number `num`) from `source`: with the source's decoded view when
/// it has one, and a fragment as the single-threaded loop inspects it ([`FragmentRole`]). Returns whether a flow got
/// its final identification.
pub(crate) fn inspect_record(
    engine: &Engine,
    source: &(impl PacketSource + ?Sized),
    ctx: &mut WorkerCtx,
    held: &mut BundleToken,
    id: u32,
    num: u64,
    rec: &PacketRecord<'_>,
) -> bool {
    match source.fragment(id) {
        None => {}
        Some(FragmentRole::Absorbed(events)) => {
            let d = source
                .decoded(id)
                .unwrap_or_else(|| flowbundle_decode::decode(rec, &engine.config().decode));
            engine.inspect_fragment(ctx, held, num, rec.ts_ns, &d, events);
            return false;
        }
        Some(FragmentRole::Completing(f, events)) => {
            engine.inspect_fragment(ctx, held, num, rec.ts_ns, &f, events);
        }
    }
    match source.decoded(id) {
        Some(d) => engine.process_decoded(ctx, held, num, rec.ts_ns, rec.orig_len, &d),
        None => engine.process(ctx, held, num, rec),
    }
}

/// Where the workload finds the packet a descriptor stands for.
///
/// Implemented for [`PreparedTrace`] (a trace and its [`Prepared`] from [`crate::Prestage::run`]); the bench
/// harness may implement it over its own preloaded form.
pub trait PacketSource: Sync {
    /// The packet descriptor `id` stands for.
    fn record(&self, id: u32) -> Option<PacketRecord<'_>>;
    /// Per descriptor, the id of the previous descriptor of the same connection ([`NO_PREV`] for none), when known:
    /// what the order guard needs ([`prev_in_flow`] builds it from a dense flow index).
    fn prev_in_flow(&self) -> Option<&[u32]> {
        None
    }
    /// The packet's decoded view, when the source decoded it already (a streaming source whose reader decoded the
    /// packet in its buffer for the pre-scheduling stage): the engine then inspects it without decoding it again.
    fn decoded(&self, _id: u32) -> Option<Decoded<'_>> {
        None
    }
    /// What the descriptor's packet was to the defragmenter, when the source dispatches fragments for inspection
    /// without a flow as the single-threaded loop does (default: nothing, the packet is inspected as it is).
    fn fragment(&self, _id: u32) -> Option<FragmentRole<'_>> {
        None
    }
    /// The number cost records give the packet (default: the descriptor id).
    fn packet_number(&self, id: u32) -> u64 {
        u64::from(id)
    }
    /// Called once a descriptor's packet has been inspected, on the worker that inspected it, with that worker's
    /// context: a streaming source takes the events the packet produced and frees the packet's buffer (default:
    /// nothing; a preloaded source keeps its packets and the events stay in the context).
    ///
    /// # Safety
    /// The caller uses no record of `id` borrowed from this source afterwards (the buffer may be reused at once),
    /// and calls this once per inspection of the descriptor.
    unsafe fn consumed(&self, _id: u32, _ctx: &mut WorkerCtx) {}
    /// Called once a worker has done its stage of a descriptor's packet and handed the packet to a later stage's
    /// worker (a staged execution model's flow stage), with the worker's context: the packet is not consumed here,
    /// but the worker is done with it, which a source that publishes each worker's counters counts as
    /// [`consumed`](Self::consumed) does (default: nothing).
    fn passed_on(&self, _ctx: &mut WorkerCtx) {}
    /// A streaming source's per-flow order guard (descriptor ids are its buffers), used instead of
    /// [`prev_in_flow`](Self::prev_in_flow) when the policy does not keep flow order.
    fn stream_order(&self) -> Option<&StreamOrder> {
        None
    }
}

/// A preloaded trace and the [`Prepared`] descriptors made from it.
#[derive(Clone, Copy)]
pub struct PreparedTrace<'a> {
    pub trace: &'a Trace,
    pub prepared: &'a Prepared,
    /// Added to the input packet index to number cost records (the single-threaded numbering), when set; else
    /// records are numbered by descriptor id.
    pub number_base: Option<u64>,
}

impl PacketSource for PreparedTrace<'_> {
    fn record(&self, id: u32) -> Option<PacketRecord<'_>> {
        self.prepared.record(self.trace, id)
    }
    fn prev_in_flow(&self) -> Option<&[u32]> {
        Some(&self.prepared.prev_in_flow)
    }
    fn packet_number(&self, id: u32) -> u64 {
        match self.number_base {
            Some(base) => base + u64::from(self.prepared.trace_index(id).unwrap_or(id)),
            None => u64::from(id),
        }
    }
}

/// Per descriptor, the previous descriptor of the same flow, from a dense flow index per descriptor (`none` marks
/// packets without a flow).
pub fn prev_in_flow(flows: &[u32], none: u32) -> Vec<u32> {
    let mut last: hashbrown::HashMap<u32, u32> = hashbrown::HashMap::new();
    flows
        .iter()
        .enumerate()
        .map(|(id, &f)| {
            if f == none {
                NO_PREV
            } else {
                last.insert(f, id as u32).unwrap_or(NO_PREV)
            }
        })
        .collect()
}

/// One worker's packet decoded by `prepare`, waiting for `process` (see the module documentation). Aligned to two
/// cache lines so that workers' slots never share one.
#[repr(align(128))]
struct Slot<'a> {
    /// The [`WorkerCtx::uid`] of the only context that may touch `packet`; 0 while nobody has.
    owner: AtomicU64,
    packet: UnsafeCell<Option<(u32, PreDecoded<'a>)>>,
}

// SAFETY: `packet` is read and written only by the context whose uid `owner` holds (set once, by compare-and-swap
// from 0, never changed afterwards), and only inside calls that hold `&mut` of that context (`prepare`, `process`).
// Uids are unique and contexts are not `Clone`, so at most one thread at a time can be inside such a call, and a
// context moved to another thread carries the happens-before of that move.
unsafe impl Sync for Slot<'_> {}

impl<'a> Slot<'a> {
    /// The packet cell, if `ctx` owns the slot or can become its owner now.
    ///
    /// The returned pointer may be dereferenced only while the caller holds `&mut` of `ctx` (see the `Sync`
    /// implementation).
    fn cell_for(&self, ctx: &mut WorkerCtx) -> Option<*mut Option<(u32, PreDecoded<'a>)>> {
        let me = ctx.uid();
        let owner = self.owner.load(Ordering::Acquire);
        let mine = owner == me
            || (owner == 0
                && self
                    .owner
                    .compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok());
        mine.then(|| self.packet.get())
    }
}

/// The engine over a packet source, for `flowbundle_worker::run`. See the module documentation.
pub struct InspectWorkload<'a> {
    engine: &'a Engine,
    source: &'a dyn PacketSource,
    guard: Option<OrderGuard>,
    /// The streaming source's order guard is on (the policy does not keep flow order).
    stream_guard: bool,
    pool: Mutex<Vec<Option<WorkerCtx>>>,
    /// Per worker, when the policy claims late: the packet `prepare` decoded.
    slots: Box<[Slot<'a>]>,
}

impl<'a> InspectWorkload<'a> {
    /// The engine inspecting the packets of `source` under a policy of this `shape` (the runtime gives each packet's
    /// bundle with it; the engine's shard is the policy's bundle). The order guard is on when the policy does not
    /// keep flow order (`ph`) and the source knows each packet's predecessor.
    pub fn new(engine: &'a Engine, shape: PolicyShape, source: &'a dyn PacketSource) -> Self {
        let w = InspectWorkload {
            engine,
            source,
            guard: None,
            stream_guard: !shape.keeps_flow_order && source.stream_order().is_some(),
            pool: Mutex::new(Vec::new()),
            slots: if shape.claims_late {
                (0..shape.workers.max(1))
                    .map(|_| Slot {
                        owner: AtomicU64::new(0),
                        packet: UnsafeCell::new(None),
                    })
                    .collect()
            } else {
                Box::default()
            },
        };
        w.with_order_guard(!shape.keeps_flow_order)
    }

    /// Turns the per-flow order guard on or off (it needs [`PacketSource::prev_in_flow`]).
    pub fn with_order_guard(mut self, on: bool) -> Self {
        self.guard = match (on, self.source.prev_in_flow()) {
            (true, Some(prev)) => Some(OrderGuard::new(prev)),
            _ => None,
        };
        self
    }

    /// Worker contexts to continue with (worker `w` gets `ctxs[w]`; workers beyond get fresh ones): a caller that
    /// runs the runtime several times over consecutive batches keeps counters, rule scanners and cost figures.
    pub fn with_contexts(self, ctxs: Vec<WorkerCtx>) -> Self {
        *self.pool.lock().unwrap_or_else(|e| e.into_inner()) = ctxs.into_iter().map(Some).collect();
        self
    }

    /// Whether the order guard is on.
    pub fn order_guard(&self) -> bool {
        self.guard.is_some() || self.stream_guard
    }

    /// The streaming source's order guard: inspects the packet of buffer `id` if its flow's previous packet has
    /// been inspected, then every deferred successor, in order; else defers it.
    fn process_in_stream_order(
        &self,
        order: &StreamOrder,
        ctx: &mut WorkerCtx,
        id: u32,
        held: &mut BundleToken,
    ) -> Outcome {
        // The engine's packet number (input position); the order guard keeps the arena's own numbers.
        let mut num = self.source.packet_number(id);
        if !order.ready(id) {
            order.defer(id);
            return Outcome::Processed;
        }
        let mut classified = false;
        let mut cur = id;
        while let Some(rec) = self.source.record(cur) {
            classified |= self.process_record(ctx, held, cur, num, &rec);
            let next = order.done(cur);
            // SAFETY: `rec` is not used after this; this is the packet's one inspection.
            unsafe { self.source.consumed(cur, ctx) };
            // A deferred successor is a packet of the same connection, hence of the bundle this worker holds.
            match next {
                Some(n) => {
                    cur = n;
                    num = self.source.packet_number(n);
                }
                None => break,
            }
        }
        if classified {
            Outcome::Classified
        } else {
            Outcome::Processed
        }
    }

    /// Inspects descriptor `id`'s packet `rec`, with the source's decoded view when it has one.
    fn process_record(
        &self,
        ctx: &mut WorkerCtx,
        held: &mut BundleToken,
        id: u32,
        num: u64,
        rec: &PacketRecord<'_>,
    ) -> bool {
        inspect_record(self.engine, self.source, ctx, held, id, num, rec)
    }

    /// Whether `prepare` decodes the packet before the policy's claim (the policy claims late: `ph` with
    /// `ph_late_claim`).
    pub fn decodes_before_claim(&self) -> bool {
        !self.slots.is_empty()
    }

    /// The packet `prepare` decoded for descriptor `id` on the worker of `ctx`, if it is still there.
    fn take_prepared(&self, ctx: &mut WorkerCtx, id: u32) -> Option<PreDecoded<'a>> {
        let cell = self.slots.get(ctx.worker())?.cell_for(ctx)?;
        // SAFETY: `ctx` owns the slot and this call holds `&mut ctx` (see `Slot`'s `Sync` implementation).
        match unsafe { (*cell).take() } {
            Some((i, p)) if i == id => Some(p),
            _ => None,
        }
    }

    /// Inspects one descriptor's packet in the bundle `held`.
    fn inspect(&self, ctx: &mut WorkerCtx, id: u32, held: &mut BundleToken) -> bool {
        let Some(rec) = self.source.record(id) else {
            return false;
        };
        let num = self.source.packet_number(id);
        let classified = self.process_record(ctx, held, id, num, &rec);
        // SAFETY: `rec` is not used after this; this is the descriptor's one inspection.
        unsafe { self.source.consumed(id, ctx) };
        classified
    }

    /// Inspects the packets left deferred by the order guard because their predecessor was never inspected (it was
    /// dropped), in descriptor order, with the bundles `bundle_of` gives them (the policy's). Call after the run.
    ///
    /// # Safety
    /// No other thread touches the engine's flow state while this runs (the run is over: no worker is left).
    pub unsafe fn finish_deferred(
        &self,
        ctx: &mut WorkerCtx,
        descs: &[Desc],
        bundle_of: impl Fn(&Desc) -> u16,
    ) -> u64 {
        let Some(g) = &self.guard else {
            return 0;
        };
        let mut n = 0;
        for (id, s) in g.state.iter().enumerate() {
            if s.load(Ordering::Acquire) == DEFERRED
                && let Some(d) = descs.get(id)
            {
                // SAFETY: the caller's promise: this thread is the only one touching the engine.
                let mut held = unsafe { BundleToken::assume_held(bundle_of(d)) };
                self.inspect(ctx, d.id, &mut held);
                s.store(DONE, Ordering::Release);
                n += 1;
            }
        }
        n
    }
}

impl Workload for InspectWorkload<'_> {
    type Local = WorkerCtx;

    fn local(&self, w: WorkerId) -> WorkerCtx {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let mut ctx = pool
            .get_mut(w)
            .and_then(Option::take)
            .unwrap_or_else(|| self.engine.new_ctx());
        ctx.set_worker(w);
        ctx
    }

    /// The decode, before the claim, when the policy claims late (see the module documentation); nothing otherwise.
    fn prepare(&self, ctx: &mut WorkerCtx, desc: Desc) {
        let Some(cell) = self.slots.get(ctx.worker()).and_then(|s| s.cell_for(ctx)) else {
            return;
        };
        if self.source.fragment(desc.id).is_some() {
            // Inspected with the fragment's view and events (`process_record`), not a fresh decode.
            return;
        }
        let Some(rec) = self.source.record(desc.id) else {
            return;
        };
        // Decoding reads only the packet's bytes and the context's sampling counter: no flow state, no bundle needed.
        let p = self.engine.predecode(ctx, &rec);
        // SAFETY: `ctx` owns the slot and this call holds `&mut ctx` (see `Slot`'s `Sync` implementation).
        unsafe { *cell = Some((desc.id, p)) };
    }

    fn process(&self, ctx: &mut WorkerCtx, desc: Desc, held: &mut BundleToken) -> Outcome {
        if self.stream_guard
            && let Some(order) = self.source.stream_order()
        {
            return self.process_in_stream_order(order, ctx, desc.id, held);
        }
        let mut classified = false;
        let pre = if self.slots.is_empty() {
            None
        } else {
            self.take_prepared(ctx, desc.id)
        };
        let inspect_this = |ctx: &mut WorkerCtx, held: &mut BundleToken| match &pre {
            Some(p) => {
                let c = self.engine.process_predecoded(
                    ctx,
                    held,
                    self.source.packet_number(desc.id),
                    p,
                );
                // SAFETY: the decoded packet `p` borrows the record and is not used after this; this is the
                // descriptor's one inspection.
                unsafe { self.source.consumed(desc.id, ctx) };
                c
            }
            None => self.inspect(ctx, desc.id, held),
        };
        let Some(g) = &self.guard else {
            classified = inspect_this(ctx, held);
            return if classified {
                Outcome::Classified
            } else {
                Outcome::Processed
            };
        };
        let id = desc.id as usize;
        let prev = self
            .source
            .prev_in_flow()
            .and_then(|p| p.get(id).copied())
            .unwrap_or(NO_PREV);
        let ready = prev == NO_PREV
            || g.state
                .get(prev as usize)
                .is_none_or(|s| s.load(Ordering::Acquire) == DONE);
        let Some(state) = g.state.get(id) else {
            return Outcome::Processed;
        };
        if !ready {
            state.store(DEFERRED, Ordering::Release);
            return Outcome::Processed;
        }
        classified |= inspect_this(ctx, held);
        state.store(DONE, Ordering::Release);
        let mut cur = id;
        while let Some(&n) = g.next.get(cur) {
            let Some(s) = g.state.get(n as usize) else {
                break;
            };
            if s.load(Ordering::Acquire) != DEFERRED {
                break;
            }
            // Deferred successors are packets of the same connection, hence of the bundle this worker holds.
            classified |= self.inspect(ctx, n, held);
            s.store(DONE, Ordering::Release);
            cur = n as usize;
        }
        if classified {
            Outcome::Classified
        } else {
            Outcome::Processed
        }
    }
}
