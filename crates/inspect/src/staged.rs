//! # Detection as a stage of its own: the software pipeline and MultiLayer Processing
//!
//! Under run-to-completion one worker does all of a packet's work, so one connection's packets run serially on one
//! core and the largest connection caps the run (BENCHMARKS.md, "Execution models"). The execution models of the
//! Verdú thesis cut a packet's processing between groups of cores. This module cuts the engine where its state
//! splits cleanly: the **flow stage** (connection table, TCP reassembly, identification and parsers: everything that
//! decides what the rules must see) and the **detection stage** (the content rules and each flow's matcher state).
//! While the detection stage matches packet *n* of a connection, the flow stage can already reassemble packet
//! *n + 1*: one connection's work is no longer bounded by one core, only each stage's share of it.
//!
//! ## What crosses between the stages: a script per packet
//!
//! Every place the app layer calls the rules ([`Call`]: stream data, a packet's payload and header, an application
//! buffer, the end of a flow) goes through [`crate::app::Out::detect`]. Run to completion, the call runs at once.
//! In the flow stage it is *recorded* instead, in the packet's [`Script`], with everything the call reads copied:
//! the bytes (reassembled stream data, a buffer, the payload), the flow's label and whether identification gave up,
//! and the flow's metadata at that moment (packet counts, `established`). The events the flow stage produces (flow
//! records, application events) are recorded in the same script, in production order. The detection stage runs the
//! script in order: an event passes through, a call runs with the flow's matcher state and emits its alerts where
//! the call was made. A packet's output is therefore, event for event, what run-to-completion produces; the
//! streaming runtime then merges packets in input order as for any policy.
//!
//! ## State: which stage owns what
//!
//! * The flow stage owns the connection table (sharded by bundle, as always).
//! * The detection stage owns a second table, [`DetectTable`], sharded by the same bundles: per flow (by flow id)
//!   its [`FlowMatchState`] (pending candidates, flowbits, the drop flag), whether it alerted, and its event counter
//!   (every event of a flow passes the detection stage, which numbers them as run-to-completion does; the numbers
//!   order a flow's events when the engine sorts them). A flow's entry ends with its flow record, which takes its
//!   `alerted` flag from here.
//! * Nothing flows back: no flow-stage decision reads detection state. The one exception would be an inline
//!   sensor's verdict (a dropped flow is not forwarded), so the staged models do not run inline.
//!
//! ## Order and exclusivity
//!
//! Each stage's group of workers runs the same policy, and a flow-stage worker hands a packet to the detection
//! group (the policy's `dispatch`) before it releases the packet's bundle in its own group (`done`): a bundle's
//! packets enter the detection group in the order they left the flow group, and the policy keeps that order there.
//! A detection worker holding bundle `b` is the only thread in shard `b` of the detection table (the policy's
//! exclusivity, proved by the [`BundleToken`]); sweeps and the end of input, which hold every bundle, run the flows'
//! end scripts at once.
//!
//! ## What it costs
//!
//! A label clone per call, an event moved twice, and a copy of the bytes a call reads only when they are not the
//! packet's own: in-order stream data and payloads are slices of the packet, which stays in its arena slot until
//! the detection stage has run, so the script keeps their place in the packet ([`Script::packet_is`]) and copies
//! only reassembled, buffered or decoded bytes. The detection stage looks a flow's state up once per run of its
//! steps, not per step, and reads the steps where they lie. Scripts live per packet buffer of the streaming runtime
//! and keep their capacity, so steady state allocates nothing beyond what run-to-completion does (events, alert
//! vectors), with one exception: a buffer that some rule inspects and that belongs to a logged transaction takes a
//! copy of the transaction along (one for the calls in a row that carry the same one), which its alerts carry
//! (run to completion builds it only when a rule fires). What a hand-off costs in all, measured: `scripts/exec-handoff` (BENCHMARKS.md, "Real runs of the
//! execution models").

use std::cell::UnsafeCell;
use std::ops::Range;

use flowbundle_decode::KeySide;
use flowbundle_protocols::AppEvent;
use flowbundle_rules::{Alert, Buffer, FlowMatchState, PacketCtx, PacketHeader, RawHeaders};
use flowbundle_types::{BUNDLES, BundleToken, HttpBuffer};
use hashbrown::HashMap;

use crate::app::{
    FlowMeta, Out, PacketHeaders, PacketVerdict, TxRef, emit_owned, owned, rules_app,
};
use crate::engine::{apply_verdict, flow_action};
use crate::event::{AppLabel, Event, EventKind};

/// Bytes a buffer call reads: one slice, or several parts (a TLS certificate chain).
#[derive(Clone, Copy)]
pub(crate) enum Data<'d> {
    One(&'d [u8]),
    /// Two slices (a DCE/RPC call's header and stub).
    Two(&'d [u8], &'d [u8]),
    Parts(&'d [Vec<u8>]),
    /// Text fields of an event (the SMTP envelope's recipients, an e-mail's `To` addresses), one part each.
    Strs(&'d [String]),
    /// Borrowed parts (a SIP message's header values, its session description's lists), one part each.
    Slices(&'d [&'d [u8]]),
    /// Parts recorded in a script: ranges of its byte store or of the packet.
    Held(Store<'d>, &'d [Held]),
}

impl<'d> Data<'d> {
    fn each(self, mut f: impl FnMut(&'d [u8])) {
        match self {
            Data::One(b) => f(b),
            Data::Two(a, b) => {
                f(a);
                f(b);
            }
            Data::Parts(ps) => ps.iter().for_each(|p| f(p)),
            Data::Strs(ps) => ps.iter().for_each(|p| f(p.as_bytes())),
            Data::Slices(ps) => ps.iter().for_each(|p| f(p)),
            Data::Held(store, hs) => hs.iter().for_each(|h| f(store.get(h))),
        }
    }
}

/// Which rules entry point an application buffer goes to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BufferKind {
    /// An HTTP buffer of a transaction (`scan_http`).
    Http(HttpBuffer),
    /// Another protocol's field (`scan_app`), or a list of them inspected part by part (`scan_app_each`).
    App(Buffer),
    AppEach(Buffer),
    /// A DCE/RPC call's header and stub, in two parts (`scan_dcerpc`).
    Dcerpc {
        little_endian: bool,
    },
}

/// One call into the rules, with what it reads borrowed. See the module documentation.
pub(crate) enum Call<'d> {
    /// In-order stream data of direction `dir` at stream `offset` (`scan_stream`).
    Stream {
        dir: KeySide,
        offset: u64,
        bytes: &'d [u8],
        label: &'d AppLabel,
        failed: bool,
    },
    /// A packet's payload and header (`scan_packet`; `scan_unstreamed_packet` for a TCP payload kept out of the
    /// stream, see `app::scan_packet`).
    Packet {
        dir: KeySide,
        payload: &'d [u8],
        header: PacketHeaders<'d>,
        label: &'d AppLabel,
        failed: bool,
        unstreamed: bool,
        /// The payload was, whole, the last stream data of this packet (`scan_streamed_packet`).
        whole: bool,
    },
    /// An application buffer of transaction `tx`, travelling in direction `dir`.
    Buffer {
        dir: KeySide,
        label: &'d AppLabel,
        tx: u64,
        kind: BufferKind,
        data: Data<'d>,
        /// The transaction the buffer belongs to, as it stands: its alerts carry it.
        transaction: TxRef<'d>,
    },
    /// The flow ends: pending candidates are settled (`finish_flow`).
    Finish { label: &'d AppLabel },
}

/// Runs `call` now with the worker's scanner and the flow's matcher state, emitting its alerts through `out`. The one
/// implementation of each call: run-to-completion calls it from [`Out::detect`], the detection stage from a script.
pub(crate) fn run(out: &mut Out<'_>, flow_rules: &mut FlowMatchState, call: &Call<'_>) {
    let (Some(rules), Some(sc)) = (out.det.rules(), out.scanner.as_deref_mut()) else {
        return;
    };
    // A dropped flow's pending candidates are still settled at its end (see `app::finish_rules`); a passed flow's
    // are not, and nothing else runs on a flow the rules stopped.
    let stopped = match call {
        Call::Finish { .. } => flow_rules.passed(),
        _ => flow_rules.stopped(),
    };
    if stopped {
        return;
    }
    let m = *out.meta;
    // Packet variables last for one packet ([`flowbundle_rules::flowvar`]).
    sc.begin_packet(m.pcap_cnt);
    // Alerts are copied out of the callback (it cannot reach the event list while the scanner is borrowed); the
    // vector allocates only when a rule fires.
    let mut fired = Vec::new();
    let (dir, label) = match *call {
        Call::Stream {
            dir,
            offset,
            bytes,
            label,
            failed,
        } => {
            let ctx = m.packet_ctx(dir, rules_app(label, failed));
            rules.scan_stream(sc, flow_rules, &ctx, bytes, offset, &mut |a: &Alert<'_>| {
                fired.push(owned(a))
            });
            (Some(dir), label)
        }
        Call::Packet {
            dir,
            payload,
            header,
            label,
            failed,
            unstreamed,
            whole,
        } => {
            let ctx = PacketCtx {
                header: header.fields,
                raw: header.raw,
                ..m.packet_ctx(dir, rules_app(label, failed))
            };
            let mut sink = |a: &Alert<'_>| fired.push(owned(a));
            if unstreamed {
                rules.scan_unstreamed_packet(sc, flow_rules, &ctx, payload, &mut sink);
            } else if whole {
                rules.scan_streamed_packet(sc, flow_rules, &ctx, payload, &mut sink);
            } else {
                rules.scan_packet(sc, flow_rules, &ctx, payload, &mut sink);
            }
            (Some(dir), label)
        }
        Call::Buffer {
            dir,
            label,
            tx,
            kind,
            data,
            transaction: _,
        } => {
            let ctx = m.packet_ctx(dir, Some(label.eve_name()));
            let mut sink = |a: &Alert<'_>| fired.push(owned(a));
            match kind {
                BufferKind::Http(b) => {
                    let mut one: &[u8] = &[];
                    data.each(|d| one = d);
                    rules.scan_http(sc, flow_rules, &ctx, tx, b, one, &mut sink);
                }
                BufferKind::App(b) => {
                    let mut one: &[u8] = &[];
                    data.each(|d| one = d);
                    rules.scan_app(sc, flow_rules, &ctx, tx, b, one, &mut sink);
                }
                BufferKind::Dcerpc { little_endian } => {
                    let mut parts: [&[u8]; 2] = [&[], &[]];
                    let mut k = 0;
                    data.each(|d| {
                        if let Some(p) = parts.get_mut(k) {
                            *p = d;
                        }
                        k += 1;
                    });
                    let [header, stub] = parts;
                    rules.scan_dcerpc(
                        sc,
                        flow_rules,
                        &ctx,
                        tx,
                        header,
                        stub,
                        little_endian,
                        &mut sink,
                    );
                }
                BufferKind::AppEach(b) => {
                    let mut parts: Vec<&[u8]> = Vec::new();
                    data.each(|d| parts.push(d));
                    rules.scan_app_each(sc, flow_rules, &ctx, tx, b, parts, &mut sink);
                }
            }
            (Some(dir), label)
        }
        Call::Finish { label } => {
            rules.finish_flow(sc, flow_rules, &mut |a: &Alert<'_>| fired.push(owned(a)));
            (None, label)
        }
    };
    let tx = match call {
        Call::Buffer { transaction, .. } => *transaction,
        _ => TxRef::None,
    };
    for a in fired {
        let d = dir.unwrap_or_else(|| m.side(a.dir));
        emit_owned(out, rules, a, d, label, tx);
    }
}

/// Where recorded bytes are: copied into the script's store, or still in the packet's own buffer (in-order stream
/// data and payloads are slices of the packet, which stays in its arena slot until the detection stage is done
/// with it: no copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    Kept(Range<usize>),
    Packet(Range<usize>),
}

/// What a script's [`Held`] ranges point into: its byte store and the packet's bytes.
#[derive(Clone, Copy)]
pub(crate) struct Store<'d> {
    kept: &'d [u8],
    packet: &'d [u8],
    txs: &'d [AppEvent],
}

impl<'d> Store<'d> {
    fn get(&self, h: &Held) -> &'d [u8] {
        match h {
            Held::Kept(r) => self.kept.get(r.clone()),
            Held::Packet(r) => self.packet.get(r.clone()),
        }
        .unwrap_or(&[])
    }
}

/// A recorded call: what [`Call`] borrows, owned (bytes as ranges of the script's store or of the packet).
enum Recorded {
    Stream {
        dir: KeySide,
        offset: u64,
        bytes: Held,
        label: AppLabel,
        failed: bool,
    },
    Packet {
        dir: KeySide,
        payload: Held,
        header: Option<PacketHeader>,
        /// Where the header buffers' bytes ([`RawHeaders`]) are, in 4 bytes (the step stays as small as it was, and
        /// nothing is allocated): 0 for none, else the transport header's IP protocol in the top byte and, below,
        /// `n` for the IP header at `parts[n - 1]` and the transport header at `parts[n]`.
        raw: u32,
        label: AppLabel,
        failed: bool,
        unstreamed: bool,
        whole: bool,
    },
    Buffer {
        dir: KeySide,
        label: AppLabel,
        tx: u64,
        kind: BufferKind,
        /// Ranges of the script's part list.
        parts: Range<usize>,
        /// The transaction the buffer belongs to: an index of the script's transactions.
        transaction: Option<u32>,
    },
    Finish {
        label: AppLabel,
    },
}

/// One step of a script. Not boxed although a rules call is much larger than the other steps: the script's
/// vector is reused from packet to packet, so a large step costs no allocation, and boxing would allocate per call.
#[allow(clippy::large_enum_variant)]
enum Op {
    /// An event the flow stage produced.
    Event(Event),
    /// A rules call, with the flow's metadata and the capture time at the call.
    Call {
        meta: FlowMeta,
        ts_ns: u64,
        call: Recorded,
    },
    /// A flow's record: the flow's detection state ends here.
    End(Event),
    /// An event of no flow the detection stage keeps state for (a flowless packet's alert): passed on as it is.
    Pass(Event),
    /// The calls of the packet being inspected (or of a flow's close-time flush) begin, and end: their rules'
    /// actions (a `pass`, a drop) apply at the end, to the flow with this id (`engine::apply_verdict`), as
    /// run-to-completion applies them. The flag says whether the calls were a packet's own (its drop drops the
    /// packet) or a close-time flush's.
    PacketStart(u64),
    PacketEnd(u64, bool),
    /// What tagging the packet needs (`app::tag_packet`), recorded while rules have tags and tagged packets are
    /// logged; the detection stage tags the packet at its end.
    Note(Box<Noted>),
}

/// A packet's [`crate::app::PacketNote`], its bytes held in the script.
type Noted = crate::app::PacketNote<Held>;

/// What the flow stage left for the detection stage for one packet (or for the flows a sweep ended), in
/// production order. See the module documentation.
#[derive(Default)]
pub struct Script {
    /// Each step with the bundle of its flow.
    ops: Vec<(u16, Op)>,
    bytes: Vec<u8>,
    parts: Vec<Held>,
    /// The transactions of the buffers recorded (see [`crate::app::TxRef`]): one copy for the calls in a row that
    /// carry the same one, made only for a buffer some rule inspects.
    txs: Vec<AppEvent>,
    /// The address and length of the packet's bytes while it is inspected (0, 0: none): bytes inside them are
    /// recorded as a range of the packet instead of copied (see [`Held`]). An address, never dereferenced.
    packet: (usize, usize),
    /// The bundle of the flows being recorded now (set by the engine before it inspects a packet or ends a shard's
    /// flows).
    pub(crate) bundle: u16,
}

impl Script {
    /// Nothing recorded: the packet needs no detection stage.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Steps recorded.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Forgets everything recorded, keeping the capacity.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.bytes.clear();
        self.parts.clear();
        self.txs.clear();
        self.packet = (0, 0);
    }

    /// The bytes of the packet about to be inspected: recorded slices of them are kept as ranges of the packet, which
    /// the detection stage must then pass to [`crate::Engine::detect_stage`].
    pub fn packet_is(&mut self, data: &[u8]) {
        self.packet = (data.as_ptr() as usize, data.len());
    }

    fn keep(&mut self, b: &[u8]) -> Held {
        let (base, len) = self.packet;
        let at = (b.as_ptr() as usize).wrapping_sub(base);
        if base != 0 && at <= len && b.len() <= len - at {
            return Held::Packet(at..at + b.len());
        }
        let at = self.bytes.len();
        self.bytes.extend_from_slice(b);
        Held::Kept(at..self.bytes.len())
    }

    pub(crate) fn packet_start(&mut self, flow_id: u64) {
        self.ops.push((self.bundle, Op::PacketStart(flow_id)));
    }

    pub(crate) fn packet_end(&mut self, flow_id: u64, own: bool) {
        // A packet that made no rules call and produced no event leaves nothing to do (its verdict is empty): its
        // start goes, so that a model that visits only the stages a packet needs skips detection for it.
        if matches!(self.ops.last(), Some((b, Op::PacketStart(f))) if *b == self.bundle && *f == flow_id)
        {
            self.ops.pop();
            return;
        }
        self.ops.push((self.bundle, Op::PacketEnd(flow_id, own)));
    }

    /// Records what tagging the packet needs (see [`Op::Note`]).
    pub(crate) fn note(&mut self, n: &crate::app::PacketNote<&[u8]>) {
        let data = self.keep(n.data);
        self.ops
            .push((self.bundle, Op::Note(Box::new(n.with_data(data)))));
    }

    pub(crate) fn event(&mut self, ev: Event) {
        let op = if matches!(ev.kind, EventKind::Flow(_)) {
            Op::End(ev)
        } else {
            Op::Event(ev)
        };
        self.ops.push((self.bundle, op));
    }

    pub(crate) fn pass(&mut self, ev: Event) {
        self.ops.push((self.bundle, Op::Pass(ev)));
    }

    /// The index of `tx` among the script's transactions, copying it unless the last one copied is the same.
    fn keep_tx(&mut self, tx: TxRef<'_>) -> Option<u32> {
        if matches!(tx, TxRef::None) {
            return None;
        }
        let last = self.txs.len().checked_sub(1);
        if let Some(i) = last.filter(|&i| self.txs.get(i).is_some_and(|e| tx.is(e))) {
            return u32::try_from(i).ok();
        }
        let at = u32::try_from(self.txs.len()).ok()?;
        self.txs.push(*tx.event()?);
        Some(at)
    }

    pub(crate) fn record(
        &mut self,
        meta: &FlowMeta,
        ts_ns: u64,
        call: &Call<'_>,
        rules: Option<&flowbundle_rules::RuleSet>,
    ) {
        let call = match *call {
            Call::Stream {
                dir,
                offset,
                bytes,
                label,
                failed,
            } => Recorded::Stream {
                dir,
                offset,
                bytes: self.keep(bytes),
                label: label.clone(),
                failed,
            },
            Call::Packet {
                dir,
                payload,
                header,
                label,
                failed,
                unstreamed,
                whole,
            } => Recorded::Packet {
                dir,
                payload: self.keep(payload),
                header: header.fields,
                // Only where a rule reads them (else the slices are empty).
                raw: match u32::try_from(self.parts.len() + 1) {
                    Ok(n) if n < 1 << 24 && header.raw != RawHeaders::default() => {
                        let (ip, l4) = (self.keep(header.raw.ip), self.keep(header.raw.l4));
                        self.parts.push(ip);
                        self.parts.push(l4);
                        n | u32::from(header.raw.l4_proto) << 24
                    }
                    // Only where a rule reads them (else the slices are empty); a script of 2^24 parts is beyond
                    // any batch.
                    _ => 0,
                },
                label: label.clone(),
                failed,
                unstreamed,
                whole,
            },
            Call::Buffer {
                dir,
                label,
                tx,
                kind,
                data,
                transaction,
            } => {
                // Copied only where a rule may alert on the buffer (where none inspects it, nothing can fire).
                let inspected = match kind {
                    BufferKind::App(b) | BufferKind::AppEach(b) => {
                        rules.is_some_and(|r| r.inspects(b))
                    }
                    BufferKind::Http(_) | BufferKind::Dcerpc { .. } => true,
                };
                let transaction = if inspected {
                    self.keep_tx(transaction)
                } else {
                    None
                };
                let first = self.parts.len();
                data.each(|d| {
                    let r = self.keep(d);
                    self.parts.push(r);
                });
                Recorded::Buffer {
                    dir,
                    label: label.clone(),
                    tx,
                    kind,
                    parts: first..self.parts.len(),
                    transaction,
                }
            }
            Call::Finish { label } => Recorded::Finish {
                label: label.clone(),
            },
        };
        self.ops.push((
            self.bundle,
            Op::Call {
                meta: *meta,
                ts_ns,
                call,
            },
        ));
    }
}

/// A flow's detection state (see the module documentation).
#[derive(Default)]
struct DetectFlow {
    rules: FlowMatchState,
    alerted: bool,
    /// The flow's next event number.
    seq: u32,
    /// The rule set's epoch the matcher state belongs to: a reload restarts it, keeping a drop (as the flow's own
    /// state does under run-to-completion, `AppState::adopt`).
    epoch: u32,
}

type DetectShard = HashMap<u64, DetectFlow, foldhash::fast::FixedState>;

/// The detection stage's per-flow state, sharded by bundle like the connection table (see the module
/// documentation).
pub struct DetectTable {
    shards: Box<[UnsafeCell<DetectShard>]>,
}

// SAFETY: a shard is reached only through `shard`, whose `BundleToken` proves the calling thread holds that bundle
// alone in the detection group (the policy's exclusivity), or through `shard_mut` with `&mut self`.
unsafe impl Sync for DetectTable {}

impl std::fmt::Debug for DetectTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DetectTable").finish_non_exhaustive()
    }
}

impl Default for DetectTable {
    fn default() -> Self {
        let hasher = foldhash::fast::FixedState::with_seed(0xde7ec7);
        DetectTable {
            shards: (0..BUNDLES)
                .map(|_| UnsafeCell::new(HashMap::with_hasher(hasher.clone())))
                .collect(),
        }
    }
}

impl DetectTable {
    /// The shard of the bundle `held` proves the calling thread holds.
    #[allow(clippy::mut_from_ref)]
    fn shard<'t>(&'t self, held: &'t mut BundleToken) -> &'t mut DetectShard {
        // SAFETY: the token's holder has this bundle to itself while the token lives, and the returned borrow
        // cannot outlive the borrow of the token.
        unsafe { &mut *self.shards[usize::from(held.bundle())].get() }
    }

    /// Flows with detection state (tests: every ended flow's entry is gone).
    pub fn flows(&mut self) -> usize {
        self.shards.iter_mut().map(|s| s.get_mut().len()).sum()
    }
}

/// A packet whose calls are being run: where its events begin, its flow's `alerted` flag before it, and what its
/// rules decided so far.
struct Open {
    flow: u64,
    ev_start: usize,
    alerted_before: bool,
    verdict: PacketVerdict,
    /// What tagging the packet needs, when it was recorded.
    note: Option<Box<Noted>>,
    /// The flow was still inspected when the packet came (no rule had dropped or passed it): only then is the packet
    /// tagged, as run to completion decides.
    inspected: bool,
}

/// The flow whose detection state a step reads or writes (none for an event passed on as it is).
fn flow_of(op: &Op) -> Option<u64> {
    match op {
        Op::PacketStart(f) | Op::PacketEnd(f, _) => Some(*f),
        Op::Note(n) => Some(n.flow_id),
        Op::Event(ev) | Op::End(ev) => Some(ev.flow_id),
        Op::Call { meta, .. } => Some(meta.id),
        Op::Pass(_) => None,
    }
}

/// The detection table's shards a script may touch.
trait Shards {
    /// Bundle `b`'s shard, or `None` when the caller does not hold it.
    fn get(&mut self, b: u16) -> Option<&mut DetectShard>;
}

/// The one shard of the bundle a detection worker holds.
struct Held1<'t> {
    bundle: u16,
    shard: &'t mut DetectShard,
}

impl Shards for Held1<'_> {
    fn get(&mut self, b: u16) -> Option<&mut DetectShard> {
        debug_assert_eq!(b, self.bundle, "a script step of another bundle");
        (b == self.bundle).then_some(&mut *self.shard)
    }
}

/// Every shard, for a caller that holds every bundle (see [`run_script_all`]).
struct Every<'t>(&'t DetectTable);

impl Shards for Every<'_> {
    fn get(&mut self, b: u16) -> Option<&mut DetectShard> {
        // SAFETY: `Every` is made only by `run_script_all`, whose caller holds every bundle; the borrow ends before
        // the next `get`.
        let mut held = unsafe { BundleToken::assume_held(b) };
        let shard: *mut DetectShard = self.0.shard(&mut held);
        // SAFETY: as above: no other thread touches the shard, and `&mut self` keeps this the only borrow of it.
        Some(unsafe { &mut *shard })
    }
}

/// Runs a script's steps in order. A flow's state is taken out of its shard at the first of a run of its steps
/// and put back after the last (a packet's steps are mostly of its one flow): one look-up per run, not per step.
/// Steps of a bundle the caller does not hold (a broken contract) are dropped. Returns whether a packet's own end
/// dropped it.
fn run_ops(
    ctx: &mut crate::engine::WorkerCtx,
    ops: &mut Vec<(u16, Op)>,
    store: Store<'_>,
    parts: &[Held],
    shards: &mut impl Shards,
) -> bool {
    fn put_back(cur: &mut Option<(u16, u64, DetectFlow)>, shards: &mut impl Shards) {
        if let Some((b, flow, st)) = cur.take()
            && let Some(shard) = shards.get(b)
        {
            shard.insert(flow, st);
        }
    }
    let mut dropped = false;
    let mut open = None;
    let mut cur: Option<(u16, u64, DetectFlow)> = None;
    for (b, op) in ops.iter_mut() {
        let b = *b;
        let Some(flow) = flow_of(op) else {
            ctx.events.extend(take_event(op));
            continue;
        };
        let current = matches!(&cur, Some((cb, cf, _)) if *cb == b && *cf == flow);
        if !current {
            put_back(&mut cur, shards);
        }
        if matches!(op, Op::End(_)) {
            // The flow's state ends with its record.
            let st = match cur.take() {
                Some((_, _, st)) => Some(st),
                None => shards.get(b).map(|s| s.remove(&flow).unwrap_or_default()),
            };
            if let (Some(st), Some(ev)) = (st, take_event(op)) {
                end_flow(ctx, ev, st);
            }
            continue;
        }
        if !current {
            let Some(shard) = shards.get(b) else {
                continue;
            };
            cur = Some((b, flow, shard.remove(&flow).unwrap_or_default()));
        }
        if let Some((_, _, st)) = cur.as_mut() {
            dropped |= step(ctx, op, store, parts, st, &mut open);
        }
    }
    put_back(&mut cur, shards);
    ops.clear();
    dropped
}

/// Moves the event out of an event step (leaving a step that does nothing in its place).
fn take_event(op: &mut Op) -> Option<Event> {
    match std::mem::replace(op, Op::PacketStart(0)) {
        Op::Event(ev) | Op::End(ev) | Op::Pass(ev) => Some(ev),
        other => {
            *op = other;
            None
        }
    }
}

/// A flow's record leaves the detection stage with its detection state (`st`, removed from its shard).
fn end_flow(ctx: &mut crate::engine::WorkerCtx, mut ev: Event, st: DetectFlow) {
    ev.seq = st.seq;
    // The flow stage's record knows neither: the detection stage alone keeps the rules' state.
    if let EventKind::Flow(rec) = &mut ev.kind {
        rec.alerted = st.alerted;
        rec.action = flow_action(&st.rules);
        rec.vars = crate::app::flow_metadata(&ctx.det, &st.rules);
    }
    ctx.events.push(ev);
}

/// Runs one step of a flow with its detection state `st`, keeping `open` (the packet being run) up to date; returns
/// whether the packet is dropped when the step ends one. A flow's end and events passed on are [`run_ops`]'.
///
/// Steps are read where they lie in the script (an event is moved out, a call is read in place): a step is a few
/// hundred bytes, and moving each one twice per packet showed in the instruction counts.
fn step(
    ctx: &mut crate::engine::WorkerCtx,
    op: &mut Op,
    store: Store<'_>,
    parts: &[Held],
    st: &mut DetectFlow,
    open: &mut Option<Open>,
) -> bool {
    match op {
        &mut Op::PacketStart(flow) => {
            *open = Some(Open {
                flow,
                ev_start: ctx.events.len(),
                alerted_before: st.alerted,
                verdict: PacketVerdict::default(),
                note: None,
                inspected: !(st.rules.dropped() || st.rules.passed()),
            });
            false
        }
        &mut Op::PacketEnd(flow, own) => {
            let Some(o) = open.take().filter(|o| o.flow == flow) else {
                return false;
            };
            apply_verdict(
                ctx,
                (&mut st.alerted, o.alerted_before),
                &mut st.rules,
                o.ev_start,
                o.verdict,
            );
            if let Some(n) = o.note.filter(|_| own && o.inspected) {
                let data = store.get(&n.data);
                let note = n.with_data(data);
                crate::app::tag_packet(ctx, &mut st.rules, &mut st.seq, o.ev_start, &note);
            }
            // As run-to-completion: a packet is dropped by its own drop or by its flow's.
            own && (o.verdict.dropped() || st.rules.dropped())
        }
        Op::Note(_) => {
            if let Some(o) = open.as_mut()
                && let Op::Note(n) = std::mem::replace(op, Op::PacketStart(0))
                && o.flow == n.flow_id
            {
                o.note = Some(n);
            }
            false
        }
        Op::Event(_) => {
            if let Some(mut ev) = take_event(op) {
                ev.seq = st.seq;
                st.seq = st.seq.wrapping_add(1);
                ctx.events.push(ev);
            }
            false
        }
        // Not given to a flow's steps (`run_ops` handles them).
        Op::Pass(_) | Op::End(_) => {
            debug_assert!(false, "a flow's end or a passed event run as a flow's step");
            ctx.events.extend(take_event(op));
            false
        }
        Op::Call { meta, ts_ns, call } => {
            let (meta, ts_ns) = (*meta, *ts_ns);
            let crate::engine::WorkerCtx {
                events,
                scanner,
                produced,
                det,
                det_epoch,
                ..
            } = ctx;
            if st.epoch != *det_epoch as u32 {
                let dropped = st.rules.dropped();
                st.rules = FlowMatchState::default();
                if dropped {
                    st.rules.set_dropped();
                }
                st.epoch = *det_epoch as u32;
            }
            let mut out = Out {
                det,
                events,
                scanner: scanner.as_mut(),
                produced,
                meta: &meta,
                seq: &mut st.seq,
                alerted: &mut st.alerted,
                ts_ns,
                verdict: PacketVerdict::default(),
                defer: None,
            };
            let at = |h: &Held| store.get(h);
            let call = match call {
                Recorded::Stream {
                    dir,
                    offset,
                    bytes: b,
                    label,
                    failed,
                } => Call::Stream {
                    dir: *dir,
                    offset: *offset,
                    bytes: at(b),
                    label,
                    failed: *failed,
                },
                Recorded::Packet {
                    dir,
                    payload,
                    header,
                    raw,
                    label,
                    failed,
                    unstreamed,
                    whole,
                } => Call::Packet {
                    dir: *dir,
                    payload: at(payload),
                    header: PacketHeaders {
                        fields: *header,
                        raw: match ((*raw & 0x00ff_ffff) as usize).checked_sub(1) {
                            Some(n) => RawHeaders {
                                ip: parts.get(n).map_or(&[], |h| store.get(h)),
                                l4: parts.get(n + 1).map_or(&[], |h| store.get(h)),
                                l4_proto: (*raw >> 24) as u8,
                            },
                            None => RawHeaders::default(),
                        },
                    },
                    label,
                    failed: *failed,
                    unstreamed: *unstreamed,
                    whole: *whole,
                },
                Recorded::Buffer {
                    dir,
                    label,
                    tx,
                    kind,
                    parts: p,
                    transaction,
                } => Call::Buffer {
                    dir: *dir,
                    label,
                    tx: *tx,
                    kind: *kind,
                    data: Data::Held(store, parts.get(p.clone()).unwrap_or(&[])),
                    transaction: transaction
                        .and_then(|i| store.txs.get(i as usize))
                        .map_or(TxRef::None, TxRef::Event),
                },
                Recorded::Finish { label } => Call::Finish { label },
            };
            run(&mut out, &mut st.rules, &call);
            // A call of the packet (or close-time flush) being run counts in its verdict.
            if let Some(o) = open.as_mut().filter(|o| o.flow == meta.id) {
                o.verdict.merge(out.verdict);
            }
            false
        }
    }
}

/// Runs a packet's script in the detection stage, holding bundle `held` (steps of another bundle, a broken
/// contract, are dropped); `packet` is the packet's bytes, as the flow stage saw them ([`Script::packet_is`]).
/// Returns whether the packet's flow is dropped.
pub(crate) fn run_script(
    table: &DetectTable,
    ctx: &mut crate::engine::WorkerCtx,
    held: &mut BundleToken,
    script: &mut Script,
    packet: &[u8],
) -> bool {
    let bundle = held.bundle();
    let mut shards = Held1 {
        bundle,
        shard: table.shard(held),
    };
    let Script {
        ops,
        bytes,
        parts,
        txs,
        ..
    } = script;
    let store = Store {
        kept: bytes,
        packet,
        txs,
    };
    let dropped = run_ops(ctx, ops, store, parts, &mut shards);
    script.clear();
    dropped
}

/// Runs a script of steps of any bundles (the ends of flows a sweep or the end of input recorded).
///
/// # Safety
/// The calling thread holds every bundle: no worker runs (a sweep, the end of input).
pub(crate) unsafe fn run_script_all(
    table: &DetectTable,
    ctx: &mut crate::engine::WorkerCtx,
    script: &mut Script,
) {
    let Script {
        ops,
        bytes,
        parts,
        txs,
        ..
    } = script;
    let store = Store {
        kept: bytes,
        packet: &[],
        txs,
    };
    run_ops(ctx, ops, store, parts, &mut Every(table));
    script.clear();
}

/// Per packet buffer of a streaming run's arena, the script its flow stage left (see [`crate::stream`]): written by
/// the flow-stage worker that holds the packet, read by the detection-stage worker it hands the packet to, in that
/// order (the hand-over through the policy's queue orders them).
pub struct Scripts {
    slots: Box<[UnsafeCell<Script>]>,
}

// SAFETY: a slot is touched only by the worker holding its packet's descriptor (see `get`).
unsafe impl Sync for Scripts {}

impl Scripts {
    /// Scripts for an arena of `slots` buffers.
    pub fn new(slots: usize) -> Self {
        Scripts {
            slots: (0..slots)
                .map(|_| UnsafeCell::new(Script::default()))
                .collect(),
        }
    }

    /// The script of buffer `slot`.
    ///
    /// # Safety
    /// The calling thread holds buffer `slot`'s descriptor (it was handed to it and not passed on or freed), and no
    /// other borrow of this slot is alive.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get(&self, slot: u32) -> Option<&mut Script> {
        let cell = self.slots.get(slot as usize)?;
        // SAFETY: the caller's promise.
        Some(unsafe { &mut *cell.get() })
    }
}

/// Which packets the detection stage sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetectVisits {
    /// Every packet passes every stage (the software pipeline).
    Every,
    /// Only packets whose flow stage left something for it: a rules call or an event (MultiLayer Processing: a packet
    /// visits the layers its processing needs).
    Needed,
}

/// The engine as a two-stage workload for the staged streaming runtime (`flowbundle_worker::run_stream_staged`):
/// stage 0, the flow stage, inspects a packet with a recording context and leaves its script in the packet buffer's
/// slot of `scripts`; stage 1, the detection stage, runs the script ([`crate::Engine::detect_stage`]) and hands the
/// packet's events to the source (which sends them to the collector and frees the buffer). A packet that skips the
/// detection stage is handed back to the source by the flow stage. The engine must be [`crate::Engine::staged`],
/// the policies of both groups must keep flow order, and `scripts` must have a slot per descriptor id of `source`.
pub struct StagedInspect<'a> {
    engine: &'a crate::Engine,
    source: &'a dyn crate::PacketSource,
    scripts: &'a Scripts,
    visits: DetectVisits,
    flow_workers: usize,
}

impl<'a> StagedInspect<'a> {
    /// The stages over `source`; `flow_workers` is the flow stage's group size (the detection stage's workers are
    /// numbered after them, [`crate::WorkerCtx::worker`], so per-worker boards see every worker once).
    pub fn new(
        engine: &'a crate::Engine,
        source: &'a dyn crate::PacketSource,
        scripts: &'a Scripts,
        visits: DetectVisits,
        flow_workers: usize,
    ) -> Self {
        StagedInspect {
            engine,
            source,
            scripts,
            visits,
            flow_workers,
        }
    }
}

impl flowbundle_types::StagedWorkload for StagedInspect<'_> {
    type Local = crate::WorkerCtx;

    fn stages(&self) -> usize {
        2
    }

    fn local(&self, stage: usize, w: flowbundle_types::WorkerId) -> crate::WorkerCtx {
        let mut ctx = self.engine.new_ctx();
        // Detection-stage workers are numbered after the flow stage's (each group numbers its own from 0).
        ctx.set_worker(if stage == 0 { w } else { self.flow_workers + w });
        ctx
    }

    fn process_stage(
        &self,
        stage: usize,
        ctx: &mut crate::WorkerCtx,
        desc: flowbundle_types::Desc,
        held: &mut BundleToken,
    ) -> (flowbundle_types::Outcome, Option<usize>) {
        use flowbundle_types::Outcome;
        let id = desc.id;
        // SAFETY: this worker holds the descriptor (the runtime handed it over and it is not passed on yet).
        let Some(script) = (unsafe { self.scripts.get(id) }) else {
            return (Outcome::Processed, None);
        };
        if stage == 0 {
            let Some(rec) = self.source.record(id) else {
                return (Outcome::Processed, None);
            };
            let num = self.source.packet_number(id);
            script.clear();
            script.packet_is(rec.data);
            // The slot's script (its capacity kept) goes into the context while the packet is inspected, and back.
            ctx.record_for_detection(std::mem::take(script));
            let classified =
                crate::workload::inspect_record(self.engine, self.source, ctx, held, id, num, &rec);
            *script = ctx.take_script().unwrap_or_default();
            let outcome = if classified {
                Outcome::Classified
            } else {
                Outcome::Processed
            };
            if self.visits == DetectVisits::Every || !script.is_empty() {
                self.source.passed_on(ctx);
                return (outcome, Some(1));
            }
            // SAFETY: no record of `id` is used after this; this is the packet's one hand-back.
            unsafe { self.source.consumed(id, ctx) };
            return (outcome, None);
        }
        let packet = self.source.record(id).map_or(&[][..], |r| r.data);
        self.engine.detect_stage(ctx, held, script, packet);
        // SAFETY: as above: the detection stage is the packet's last.
        unsafe { self.source.consumed(id, ctx) };
        (Outcome::Processed, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet that made no rules call and produced no event leaves an empty script (a model visiting only the
    /// stages a packet needs skips detection for it); a start followed by another flow's end stays.
    #[test]
    fn a_packet_without_calls_leaves_nothing_for_detection() {
        let mut script = Script {
            bundle: 3,
            ..Script::default()
        };
        script.packet_start(7);
        script.packet_end(7, true);
        assert!(script.is_empty());
        script.packet_start(7);
        script.packet_end(8, false);
        assert_eq!(script.len(), 2, "the end of another flow's packet is kept");
    }

    /// Bytes inside the packet are recorded as a range of it and read back from the packet; anything else (a
    /// reassembled or decompressed buffer) is copied; without a packet everything is copied.
    #[test]
    fn bytes_of_the_packet_are_referenced_and_others_copied() {
        let packet = b"GET /index.html HTTP/1.1\r\n".to_vec();
        let other = b"elsewhere".to_vec();
        let mut script = Script::default();
        script.packet_is(&packet);
        let a = script.keep(&packet[4..15]);
        let b = script.keep(&other);
        let c = script.keep(&packet[..]);
        let d = script.keep(&packet[packet.len()..]);
        assert_eq!(a, Held::Packet(4..15));
        assert_eq!(b, Held::Kept(0..other.len()));
        assert_eq!(c, Held::Packet(0..packet.len()));
        assert_eq!(d, Held::Packet(packet.len()..packet.len()));
        let store = Store {
            kept: &script.bytes,
            packet: &packet,
            txs: &[],
        };
        assert_eq!(store.get(&a), b"/index.html");
        assert_eq!(store.get(&b), b"elsewhere");
        assert_eq!(store.get(&c), &packet[..]);
        // A slice that starts inside the packet's buffer but runs past its end is copied, not cut.
        let wide = [packet.clone(), other.clone()].concat();
        script.clear();
        script.packet_is(&wide[..packet.len()]);
        assert_eq!(
            script.keep(&wide[4..]),
            Held::Kept(0..wide.len() - 4),
            "bytes beyond the packet"
        );
        script.clear();
        assert_eq!(
            script.keep(&packet[1..3]),
            Held::Kept(0..2),
            "no packet given"
        );
    }
}
