//! Matching: the calls the engine makes per stream chunk, per datagram and per HTTP buffer.
//!
//! State lives in three places, so that nothing is allocated per packet and nothing is locked:
//! * [`RuleSet`]: immutable, shared by all workers.
//! * [`Scanner`]: one per worker thread: scratch buffers, pcre caches, per-rule hit counters and [`ScanStats`].
//! * [`FlowMatchState`]: one per flow, owned by the worker that owns the flow; 32 bytes until the flow carries data
//!   that a rule could inspect, then a small per-direction block (prefilter state, a tail of at most
//!   [`RuleSet::stream_retain`] bytes, pending candidates, rules already fired).
//!
//! See the crate documentation for the exact stream semantics.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

pub use flowbundle_types::{Direction, HttpBuffer, Transport};

use crate::prefilter::ScanState;
use crate::profile::{Point, RulesProfile};
use crate::rule::{
    Buffer, FlowDir, FlowState, Flowbit, Flowint, FlowintOp, FlowintValue, Group, Item, Proto, Rule,
};
use crate::ruleset::{GroupInfo, RuleSet, Table, Target};
use crate::verify::{self, Hay, PcreCaches, VerifyStats};

/// Most stream candidates waiting for more data, per flow direction; beyond it a candidate is checked at once
/// with the data at hand (counted in [`ScanStats::pending_overflow`]).
pub const MAX_PENDING: usize = 256;
/// Most rules remembered as fired per flow direction; beyond it a stream rule may alert again (counted).
pub const MAX_FIRED: usize = 4096;
/// Most fast patterns remembered as *quiet* per flow direction: patterns every rule of which already fired there, so
/// that a later occurrence is dropped as it is found, before it reaches the hit list or any rule table. A fixed array
/// in the direction's block (64 bytes): the patterns that keep re-firing in one flow are few (the all-zero ones of
/// the 10k set), and a pattern beyond the limit only costs what it did without the set (counted in
/// [`ScanStats::quiet_full`]).
pub const MAX_QUIET: usize = 16;
/// Most HTTP (transaction, rule) partial matches kept per flow (multi-buffer rules) by the grouped matcher; beyond it
/// the oldest go. Checking every rule, the bound follows the rule set (`RuleSet::http_partial_max`).
pub const MAX_HTTP_PARTIAL: usize = 256;
/// Transactions older than the newest by more than this lose their partial matches (HTTP pipelining depth).
pub const HTTP_TX_WINDOW: u64 = 16;

/// Most bytes of buffer values a flow keeps for lazily checked groups ([`crate::ruleset::RuleInfo::lazy`]); the
/// oldest values go first (counted in [`ScanStats::stored_evicted`]).
pub const MAX_STORED_BYTES: usize = 32 << 10;
/// Longest buffer value kept for lazily checked groups; a longer one is checked only where it arrives after its
/// rule's lead matched (counted in [`ScanStats::stored_too_long`]).
pub const MAX_STORED_VALUE: usize = 16 << 10;
/// Most buffer values a flow keeps for lazily checked groups.
pub const MAX_STORED: usize = 256;

/// Marks a table index of the stream rules' tables among a packet's candidates ([`RuleSet::scan_unstreamed_packet`]).
const STREAM_SET: u32 = 1 << 31;

/// What a rule header and `flow` option are checked against.
#[derive(Clone, Copy, Debug)]
pub struct PacketCtx<'a> {
    /// Direction of this data within its flow.
    pub dir: Direction,
    pub transport: Transport,
    /// Sender and receiver of this data (for stream data: of this direction).
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
    /// `flow:established`: TCP after the handshake; UDP once both directions have carried a packet (as Suricata).
    pub established: bool,
    /// The flow's application protocol as EVE's `app_proto` names it (`http`, `dns`, `tls`, ...), once known;
    /// `Some("failed")` once detection gave up, `None` while it is still unknown (no `app-layer-protocol` condition
    /// holds then, negated or not).
    pub app_proto: Option<&'a str>,
    /// The header fields of the packet inspected, for header keywords (`ttl`, `flags`, ...); `None` for stream data
    /// and HTTP buffers, where no rule with header keywords applies.
    pub header: Option<crate::header::PacketHeader>,
    /// The TCP session's sizes when this data is inspected, for `stream_size` ([`crate::stream_size`]); `None`
    /// outside TCP or before the engine knows them.
    pub stream_size: Option<crate::stream_size::StreamSizes>,
    /// An earlier packet of this flow went the same direction. IP-only rules ([`crate::Rule::ip_only`]) are checked
    /// on the first packet of each direction of a flow only, as Suricata checks them; `false` (the default) for a
    /// packet no flow tracks, which they check every time.
    pub repeat_in_dir: bool,
    /// The packet's headers as on the wire, for the header buffers (`ipv4.hdr`, `tcp.hdr`, ...); empty for stream
    /// data and application buffers, where a rule on them does not match.
    pub raw: crate::header::RawHeaders<'a>,
}

impl PacketCtx<'_> {
    /// The same flow seen in direction `dir`: sender and receiver swapped when `dir` is the other direction.
    pub fn toward(&self, dir: Direction) -> Self {
        if dir == self.dir {
            return *self;
        }
        PacketCtx {
            dir,
            src: self.dst,
            dst: self.src,
            src_port: self.dst_port,
            dst_port: self.src_port,
            ..*self
        }
    }
}

impl Default for PacketCtx<'_> {
    fn default() -> Self {
        PacketCtx {
            dir: Direction::ToServer,
            transport: Transport::Tcp,
            src: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            dst: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            src_port: 0,
            dst_port: 0,
            established: true,
            app_proto: None,
            header: None,
            stream_size: None,
            repeat_in_dir: false,
            raw: crate::header::RawHeaders::default(),
        }
    }
}

/// Where an alert's match was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlertSource {
    /// Reassembled stream: offsets are stream offsets of that direction.
    Stream,
    /// One datagram: offsets are into its payload.
    Packet,
    /// An HTTP buffer of transaction `tx_id`: offsets are into the buffer that completed the match.
    Http { tx_id: u64, buffer: Buffer },
}

/// One alert, borrowing the rule's static fields.
///
/// A match of a `noalert` rule whose action drops (`drop ...; noalert;`) or that has `xbits` is reported too, so
/// that its drop and its xbits apply; a caller writing alerts leaves it out (`alert.rule.noalert`).
#[derive(Clone, Copy, Debug)]
pub struct Alert<'r> {
    pub rule: &'r Rule,
    /// Index into [`RuleSet::rules`] and the hit counters.
    pub rule_index: u32,
    pub dir: Direction,
    pub source: AlertSource,
    /// First byte of the match (the earliest positive item) and its length up to the last positive item's end.
    pub offset: u64,
    pub len: u64,
    /// The match's captures into its alert (`alert_NAME`, `alert:NAME`: EVE's `alert.context`, see
    /// [`crate::flowvar`]); `None` when it captured none. The flow's and the packet's variables are not the
    /// alert's: they are read once the packet's detection is done ([`RuleSet::packet_metadata`]).
    pub context: Option<crate::flowvar::AlertContext<'r>>,
}

impl Alert<'_> {
    pub fn sid(&self) -> u32 {
        self.rule.sid
    }
    pub fn gid(&self) -> u32 {
        self.rule.gid
    }
    pub fn rev(&self) -> u32 {
        self.rule.rev
    }
    /// EVE `alert.signature`.
    pub fn msg(&self) -> &str {
        &self.rule.msg
    }
    /// EVE `alert.category` (the classtype's description; empty without classtype).
    pub fn category(&self) -> &str {
        &self.rule.category
    }
    /// EVE `alert.severity`.
    pub fn severity(&self) -> u8 {
        self.rule.severity
    }
    /// EVE `alert.action` is "allowed" in IDS mode; this is the rule's own action word.
    pub fn action(&self) -> &'static str {
        self.rule.action.as_str()
    }
}

/// Receives alerts. Implemented for closures and for `Vec<AlertRecord>`.
pub trait AlertSink {
    fn alert(&mut self, alert: &Alert<'_>);
}

impl<F: FnMut(&Alert<'_>)> AlertSink for F {
    fn alert(&mut self, alert: &Alert<'_>) {
        self(alert)
    }
}

/// An owned summary of an alert (for tests and simple sinks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AlertRecord {
    pub sid: u32,
    pub gid: u32,
    pub rule_index: u32,
    pub dir: u8,
    pub offset: u64,
    pub len: u64,
    /// Transaction id for HTTP alerts.
    pub tx_id: Option<u64>,
}

impl From<&Alert<'_>> for AlertRecord {
    fn from(a: &Alert<'_>) -> Self {
        AlertRecord {
            sid: a.sid(),
            gid: a.gid(),
            rule_index: a.rule_index,
            dir: a.dir.index() as u8,
            offset: a.offset,
            len: a.len,
            tx_id: match a.source {
                AlertSource::Http { tx_id, .. } => Some(tx_id),
                _ => None,
            },
        }
    }
}

impl AlertSink for Vec<AlertRecord> {
    fn alert(&mut self, alert: &Alert<'_>) {
        self.push(AlertRecord::from(alert));
    }
}

/// Counters of one worker's matching (add them up across workers with `+=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub stream_bytes: u64,
    pub packet_bytes: u64,
    pub http_bytes: u64,
    /// Fast-pattern occurrences found by the prefilter.
    pub prefilter_hits: u64,
    /// (rule, group) candidates those occurrences led to.
    pub candidates: u64,
    pub verify: VerifyStats,
    pub alerts: u64,
    /// Stream data that did not continue where the previous chunk ended (a reassembly gap).
    pub stream_gaps: u64,
    /// Stream bytes handed over twice (ignored).
    pub stream_overlap_bytes: u64,
    /// Stream candidates checked early because [`MAX_PENDING`] were already waiting.
    pub pending_overflow: u64,
    /// Stream candidates resolved by [`RuleSet::finish_flow`] or a gap rather than by later data.
    pub pending_at_end: u64,
    /// Stream checks whose window reached back beyond the bytes kept (a candidate that waited too long).
    pub window_clamped: u64,
    /// Stream rules that could not be remembered as fired ([`MAX_FIRED`]).
    pub fired_overflow: u64,
    /// HTTP partial matches dropped (over `MAX_HTTP_PARTIAL` grouped, a bound set by the rule set ungrouped).
    pub http_partial_dropped: u64,
    /// Stream fast-pattern occurrences dropped at once because every rule of the pattern had already fired in that
    /// flow direction (counted in `prefilter_hits` too, never in `candidates`).
    pub quiet_hits: u64,
    /// Stream hits of a pattern whose rules had all fired that could not make it quiet: the direction already held
    /// [`MAX_QUIET`] quiet patterns.
    pub quiet_full: u64,
    /// Buffer values kept for lazily checked groups that were dropped for newer ones ([`MAX_STORED_BYTES`],
    /// [`MAX_STORED`]): a rule whose lead matches after that misses them.
    pub stored_evicted: u64,
    /// Buffer values not kept for lazily checked groups because they are longer than [`MAX_STORED_VALUE`].
    pub stored_too_long: u64,
    /// TCP packets whose single-packet rules took their fast-pattern occurrences from the stream scan of the same
    /// payload instead of a second scan ([`RuleSet::scan_streamed_packet`]).
    pub packets_ridden: u64,
    /// Flow or packet variable values cut to their store's bound, or not stored ([`crate::flowvar`]).
    pub vars_cut: u64,
}

impl std::ops::AddAssign for ScanStats {
    fn add_assign(&mut self, o: Self) {
        self.stream_bytes += o.stream_bytes;
        self.packet_bytes += o.packet_bytes;
        self.http_bytes += o.http_bytes;
        self.prefilter_hits += o.prefilter_hits;
        self.candidates += o.candidates;
        self.verify.checks += o.verify.checks;
        self.verify.budget_exhausted += o.verify.budget_exhausted;
        self.verify.pcre_limit += o.verify.pcre_limit;
        self.alerts += o.alerts;
        self.stream_gaps += o.stream_gaps;
        self.stream_overlap_bytes += o.stream_overlap_bytes;
        self.pending_overflow += o.pending_overflow;
        self.pending_at_end += o.pending_at_end;
        self.window_clamped += o.window_clamped;
        self.fired_overflow += o.fired_overflow;
        self.http_partial_dropped += o.http_partial_dropped;
        self.quiet_hits += o.quiet_hits;
        self.quiet_full += o.quiet_full;
        self.stored_evicted += o.stored_evicted;
        self.stored_too_long += o.stored_too_long;
        self.packets_ridden += o.packets_ridden;
        self.vars_cut += o.vars_cut;
    }
}

/// What [`crate::group::AddrIndex::candidates`] reads of a packet, and the index it was read from (its address).
type HeaderKey = (usize, IpAddr, IpAddr, u16, u16, Transport);

/// One slot of [`Scanner`]'s cache of header-only candidates: the key and the rules looked up for it.
type HeaderSlot = (Option<HeaderKey>, Vec<(u32, crate::group::Filed)>);

/// Slots of [`Scanner`]'s cache of header-only candidates, per direction.
const HEADER_SLOTS: usize = 64;

/// The cache slot (within its direction's [`HEADER_SLOTS`]) of a packet's header fields.
fn header_slot(ctx: &PacketCtx<'_>) -> usize {
    let low = |a: IpAddr| match a {
        IpAddr::V4(a) => u32::from(a),
        IpAddr::V6(a) => a.to_bits() as u32,
    };
    let h = low(ctx.src)
        ^ low(ctx.dst).rotate_left(16)
        ^ (u32::from(ctx.src_port) << 16 | u32::from(ctx.dst_port));
    (h.wrapping_mul(0x9E37_79B1) >> 26) as usize % HEADER_SLOTS
}

/// Per-worker matching context: scratch space, pcre caches, per-rule hit counters, statistics.
#[derive(Debug, Default)]
pub struct Scanner {
    hits: Vec<u64>,
    stamp: Vec<u32>,
    generation: u32,
    /// Per rule: `generation << 1 | verdict` of its header and `flow` against the current packet ([`applies`]),
    /// so that a rule found through many fast-pattern occurrences (a run of zero bytes) is judged once per packet
    /// and those that cannot match never become candidates.
    verdict: Vec<u64>,
    pcre: PcreCaches,
    hitbuf: Vec<(u32, usize)>,
    /// Packet candidates: (end of the occurrence or `usize::MAX` for always-checked, pattern rank, target, table).
    cands: Vec<(usize, u32, Target, u32)>,
    /// Stream hits: (end, pattern rank, table, pattern id).
    shits: Vec<(usize, u32, u32, u32)>,
    /// Port tables a packet meets ([`crate::group::PortTables::select`]).
    tabs: Vec<u32>,
    /// Rules a lazily checked buffer completed ([`RuleSet::complete_lazy`]), with the span of their match in it.
    completed: Vec<(u32, (u64, u64))>,
    /// Rules without content a packet can meet ([`crate::group::AddrIndex::candidates`]), cached: each slot holds
    /// the list looked up for one index and one set of header fields (addresses, ports, transport), and a packet
    /// with the same ones (a later packet of the same flow and direction, mostly) reuses it instead of looking it
    /// up again. The look-up is four interval searches and a merge, 38 M instructions per run with ET Open on the
    /// merged nDPI trace; [`HEADER_SLOTS`] slots per direction, picked by a hash of the fields.
    header: Vec<HeaderSlot>,
    /// Occurrences (pattern id in the single-TCP-packet shared table, end) of the patterns that rode along in the
    /// last stream scan and lie wholly inside its chunk, and that chunk (address, length): the packet scan of the
    /// packet whose payload was that chunk uses them instead of scanning it again ([`RuleSet::scan_streamed_packet`]).
    rides: Vec<(u32, usize)>,
    ride_at: Option<(usize, usize)>,
    /// Candidates of rules with flowbit conditions, held back to the end of the call.
    deferred: Vec<(Target, usize)>,
    /// Payload groups of mixed rules that matched during the call (rule, direction, span), settled at its end.
    mixed: Vec<(u32, Direction, (u64, u64))>,
    scratch: Vec<u8>,
    norm: Vec<u8>,
    cookie: Vec<u8>,
    /// `http.request_header` / `http.response_header` parts end to end, and where each ends.
    fields: Vec<u8>,
    field_ends: Vec<usize>,
    /// Scratch for transformed buffers (a chain alternates between the two).
    transform_a: Vec<u8>,
    transform_b: Vec<u8>,
    /// Scratch for the transforms of lazily checked groups.
    lazy_a: Vec<u8>,
    lazy_b: Vec<u8>,
    stats: ScanStats,
    /// Rule profiling, when enabled ([`Scanner::enable_profile`]).
    profile: Option<Box<RulesProfile>>,
    /// The buffers being scanned come from a little-endian DCE/RPC PDU ([`RuleSet::scan_dcerpc`]).
    dce_little: bool,
    /// The packet variables of the packet being inspected ([`crate::flowvar`]).
    pktvars: crate::flowvar::PacketVars,
    /// The alert variables of the match being committed ([`crate::flowvar`]): cleared before each.
    alertvars: crate::flowvar::VarStore,
    /// The candidates being checked are `absent` groups whose buffer is absent ([`RuleSet::scan_http_absent`]).
    absent_pass: bool,
    /// Per rule, this scanner's own copy of its alert text ([`Scanner::alert_text`]), made at the rule's first
    /// alert here; empty until the first alert.
    texts: Vec<Option<Box<AlertText>>>,
}

/// What an alert event carries of its rule's text: `msg`, the classtype's category and `metadata`, shared with
/// the event by reference count (see [`Scanner::alert_text`]).
#[derive(Debug, Clone)]
pub struct AlertText {
    pub msg: Arc<str>,
    pub category: Arc<str>,
    pub metadata: Arc<[(String, String)]>,
}

impl AlertText {
    /// A copy of `rule`'s text in new allocations (no reference count shared with the rule).
    fn copy_of(rule: &Rule) -> AlertText {
        AlertText {
            msg: Arc::from(&*rule.msg),
            category: Arc::from(&*rule.category),
            metadata: Arc::from(&*rule.metadata),
        }
    }
}

impl Scanner {
    /// A scanner sized for `rules`.
    pub fn new(rules: &RuleSet) -> Scanner {
        let mut s = Scanner::default();
        s.fit(rules);
        s
    }

    fn fit(&mut self, rules: &RuleSet) {
        self.pcre.reserve(rules.pcre_count as usize);
        if self.hits.len() != rules.rules.len() {
            self.hits.resize(rules.rules.len(), 0);
            self.stamp.resize(rules.rules.len(), 0);
        }
        if self.verdict.len() != rules.rules.len() {
            self.verdict.resize(rules.rules.len(), 0);
        }
    }

    /// The inspection of the packet at input position `packet` begins or goes on (`None`: an end-of-flow flush):
    /// packet variables captured on another packet are forgotten. The engine calls it before each call into the
    /// rules; without it, packet variables last until the next call that names a different packet.
    pub fn begin_packet(&mut self, packet: Option<u64>) {
        if self.pktvars.begin(packet) {
            // Measures of another packet not yet kept (its flow's detection did not finish) are not this one's.
            self.pcre.measured.0.clear();
        }
    }

    /// The alert text of `rule`, rule `rule_index` of the set this scanner serves, for an alert event: clones of
    /// this scanner's own copy, made at the rule's first alert here. Cloning the rule's own `Arc`s instead would
    /// write their reference counts, which every worker the rule fires on shares: each alert (and each event
    /// dropped after rendering) would take the counts' cache line from the other core. A worker's scanner is
    /// its own, and so are its copies (allocated by the thread that alerts).
    pub fn alert_text(&mut self, rule: &Rule, rule_index: u32) -> AlertText {
        let i = rule_index as usize;
        if i >= self.texts.len() {
            // Sized to the rule count at the first alert (a scanner of another set than the rule's: grown to it).
            self.texts.resize_with(self.hits.len().max(i + 1), || None);
        }
        let text = self.texts[i].get_or_insert_with(|| Box::new(AlertText::copy_of(rule)));
        debug_assert_eq!(*text.msg, *rule.msg, "rule {rule_index} is another rule");
        AlertText::clone(text)
    }

    /// Alerts per rule, indexed like [`RuleSet::rules`].
    pub fn hit_counts(&self) -> &[u64] {
        &self.hits
    }

    /// Adds this worker's per-rule counts into `totals` (grown to the rule count if shorter): how the engine sums
    /// workers for the summary.
    pub fn add_hit_counts(&self, totals: &mut Vec<u64>) {
        if totals.len() < self.hits.len() {
            totals.resize(self.hits.len(), 0);
        }
        for (t, h) in totals.iter_mut().zip(&self.hits) {
            *t += *h;
        }
    }

    /// Takes back one match of rule `rule_index` from its count: the engine withdrew the alert (a `pass` rule
    /// matched the same packet), so it is not an alert per rule.
    pub fn withdraw_hit(&mut self, rule_index: u32) {
        if let Some(h) = self.hits.get_mut(rule_index as usize) {
            *h = h.saturating_sub(1);
        }
    }

    /// The worker's counters.
    pub fn stats(&self) -> &ScanStats {
        &self.stats
    }

    /// Turns rule profiling on for this worker (see [`crate::profile`]): every evaluation is timed from now on.
    pub fn enable_profile(&mut self, rules: &RuleSet) {
        self.profile = Some(Box::new(RulesProfile::new(
            rules.rules.len(),
            rules.group_count(),
        )));
    }

    /// The worker's rule profile, if profiling is on.
    pub fn profile(&self) -> Option<&RulesProfile> {
        self.profile.as_deref()
    }

    /// The start of a timed evaluation: `None` (and no clock read) unless profiling.
    #[inline]
    fn prof_now(&self) -> Option<std::time::Instant> {
        self.profile.as_ref().map(|_| std::time::Instant::now())
    }

    /// Records an evaluation of rule `r` started at `t0` (see [`Scanner::prof_now`]).
    #[inline]
    fn prof_check(
        &mut self,
        t0: Option<std::time::Instant>,
        r: u32,
        p: Point,
        g: Option<u32>,
        dir: usize,
    ) {
        if let (Some(t0), Some(pr)) = (t0, self.profile.as_deref_mut()) {
            pr.check(r, p, g, dir, t0);
        }
    }

    /// Records a prefilter pass over `bytes` bytes started at `t0`.
    #[inline]
    fn prof_scanned(
        &mut self,
        t0: Option<std::time::Instant>,
        p: Point,
        g: Option<u32>,
        dir: usize,
        bytes: usize,
    ) {
        if let (Some(t0), Some(pr)) = (t0, self.profile.as_deref_mut()) {
            pr.scanned(p, g, dir, bytes, t0);
        }
    }

    /// Starts a new dedup generation (one alert per rule per packet / per HTTP buffer).
    fn next_generation(&mut self) -> u32 {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.verdict.iter_mut().for_each(|s| *s = 0);
            self.generation = 1;
        }
        self.generation
    }

    /// Marks rule `r` for the current generation; false if it already was.
    fn stamp(&mut self, r: u32) -> bool {
        match self.stamp.get_mut(r as usize) {
            Some(s) if *s == self.generation => false,
            Some(s) => {
                *s = self.generation;
                true
            }
            None => false,
        }
    }
}

/// Per-flow matcher state; `Default` is the empty state of a new flow.
#[derive(Debug, Default)]
pub struct FlowMatchState {
    dirs: [Option<Box<DirState>>; 2],
    http: Option<Box<HttpState>>,
    /// Flowbits (one bit per name of the rule set) and the drop flag, allocated by the first `flowbits:set` or
    /// drop: both are rare, and keeping them behind one box keeps a flow's state at four words.
    bits: Option<Box<Bits>>,
}

/// A flow's flowbits, one bit per name, and whether a dropping rule matched.
#[derive(Debug, Default)]
struct Bits {
    words: Vec<u64>,
    /// The flow's integers (`flowint`) that are set, as (name id, value); a flow sets few.
    ints: Vec<(u32, u32)>,
    /// A `drop`/`reject`/`sdrop` rule matched: the flow is dropped (Suricata's flow action `drop`).
    dropped: bool,
    /// A `pass` rule matched with flow scope: nothing more of the flow is inspected (Suricata's flow action `pass`).
    passed: bool,
    /// The flow's session tags ([`crate::tag`]), installed by its alerts.
    tags: crate::tag::TagList,
    /// The flow's variables captured by `pcre` ([`crate::flowvar`]).
    vars: crate::flowvar::VarStore,
    /// What the flow's `entropy` keywords last measured, as (name id, bits per byte), one per name
    /// ([`crate::flowvar::VarScope::Entropy`]).
    entropy: Vec<(u32, f64)>,
}

impl FlowMatchState {
    /// Marks the flow dropped: a rule whose action drops ([`crate::Action::drops`]) matched. Suricata sets the
    /// flow's action to `drop` then, even when not inline, and inspects none of the flow's later packets (its
    /// `DetectFlow` returns early for such flows), so each drop rule alerts once per flow instead of on every packet.
    /// The caller (the engine) stops scanning the flow once this is set.
    pub fn set_dropped(&mut self) {
        self.bits.get_or_insert_with(Box::default).dropped = true;
    }

    /// The flow's session tags ([`crate::tag`]), for the engine to install its alerts' tags in and count its packets
    /// towards.
    pub fn tags_mut(&mut self) -> &mut crate::tag::TagList {
        &mut self.bits.get_or_insert_with(Box::default).tags
    }

    /// Whether the flow has a session tag running.
    pub fn has_tags(&self) -> bool {
        self.bits.as_ref().is_some_and(|b| !b.tags.is_empty())
    }

    /// Whether a session tag of the flow is decided where alerts meet ([`crate::tag::filtered`]).
    pub fn tags_deferred(&self) -> bool {
        self.bits.as_ref().is_some_and(|b| b.tags.deferred())
    }

    /// Whether a dropping rule matched on this flow ([`FlowMatchState::set_dropped`]).
    pub fn dropped(&self) -> bool {
        self.bits.as_ref().is_some_and(|b| b.dropped)
    }

    /// Marks the flow passed: a `pass` rule matched with flow scope ([`crate::Rule::flow_scoped`]); the caller
    /// inspects none of the flow's later packets.
    pub fn set_passed(&mut self) {
        self.bits.get_or_insert_with(Box::default).passed = true;
    }

    /// Whether the flow was passed ([`FlowMatchState::set_passed`]).
    pub fn passed(&self) -> bool {
        self.bits.as_ref().is_some_and(|b| b.passed)
    }

    /// Whether the flow's inspection has ended: dropped or passed.
    pub fn stopped(&self) -> bool {
        self.bits.as_ref().is_some_and(|b| b.dropped || b.passed)
    }

    /// Stream candidates waiting for more data in direction `dir`.
    pub fn pending(&self, dir: Direction) -> usize {
        self.dirs
            .get(dir.index())
            .and_then(|d| d.as_ref())
            .map_or(0, |d| d.pending.len())
    }

    /// Heap bytes held by this flow's state.
    pub fn memory(&self) -> usize {
        let d: usize = self
            .dirs
            .iter()
            .flatten()
            .map(|d| {
                std::mem::size_of::<DirState>()
                    + d.tail.capacity()
                    + d.pending.capacity() * std::mem::size_of::<Pending>()
                    + d.fired.capacity() * 4
            })
            .sum();
        d + self.http.as_ref().map_or(0, |h| {
            std::mem::size_of::<HttpState>()
                + h.partial.capacity() * 24
                + h.payload.capacity() * 4
                + h.stored.capacity() * std::mem::size_of::<Stored>()
                + h.stored.iter().map(|v| v.bytes.capacity()).sum::<usize>()
        }) + self.bits.as_ref().map_or(0, |b| {
            std::mem::size_of::<Bits>() + b.words.capacity() * 8 + b.vars.memory()
        })
    }
}

#[derive(Debug)]
struct DirState {
    /// Stream offset just past the last byte seen.
    end: u64,
    seen: bool,
    scan: ScanState,
    /// The last bytes before `end` (at most the rule set's retain size).
    tail: Vec<u8>,
    pending: Vec<Pending>,
    /// Rules that alerted in this direction (sorted).
    fired: Vec<u32>,
    /// Quiet patterns (see [`MAX_QUIET`]): `quiet[..nquiet]`, in the order they became quiet, as [`quiet_code`]s.
    quiet: [u32; MAX_QUIET],
    nquiet: u8,
    /// Whether the port groups of this direction were chosen (at its first stream data).
    selected: bool,
    /// The port groups' tables this direction's data meets besides the shared one, with their prefilter states.
    groups: Vec<(u32, ScanState)>,
}

impl DirState {
    fn new(end: u64, tail: Vec<u8>) -> DirState {
        DirState {
            end,
            seen: false,
            scan: ScanState::default(),
            tail,
            pending: Vec::new(),
            fired: Vec::new(),
            quiet: [0; MAX_QUIET],
            nquiet: 0,
            selected: false,
            groups: Vec::new(),
        }
    }
}

/// Pattern `pid` of port table `table` as one number for the quiet list (the shared table's ids are themselves);
/// `None` for an id too large to share the number with a table (such a pattern is never made quiet).
fn quiet_code(table: u32, pid: u32) -> Option<u32> {
    (pid < 1 << 24 && table < 1 << 8).then_some(table << 24 | pid)
}

/// Remembers pattern `pid` as quiet in a direction's set (`quiet[..*n]`); false when the set is full.
fn make_quiet(quiet: &mut [u32; MAX_QUIET], n: &mut u8, pid: u32) -> bool {
    match quiet.get_mut(usize::from(*n)) {
        Some(slot) => {
            *slot = pid;
            *n += 1;
            true
        }
        None => false,
    }
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    rule: u32,
    group: u8,
    /// Start of the fast-pattern occurrence the check is pinned to.
    hs: u64,
    /// Verification window, absolute stream offsets.
    ds: u64,
    de: u64,
}

#[derive(Debug, Default)]
struct HttpState {
    /// (tx_id, rule, groups matched so far, alerted).
    partial: Vec<(u64, u32, u32, bool)>,
    newest_tx: u64,
    /// Rules mixing the payload with application-layer buffers whose payload group matched in this flow (sorted).
    payload: Vec<u32>,
    /// The buffer values of recent transactions that lazily checked groups are checked against when their rule's
    /// lead matches ([`crate::ruleset::RuleInfo::lazy`]), oldest first; see [`MAX_STORED_BYTES`].
    stored: Vec<Stored>,
    stored_bytes: usize,
}

/// One buffer value kept for lazily checked groups, with what their rule's header is checked against.
#[derive(Debug)]
struct Stored {
    tx: u64,
    buffer: Buffer,
    dir: Direction,
    established: bool,
    bytes: Vec<u8>,
}

impl HttpState {
    /// Keeps a value of `buffer` for transaction `tx` (travelling in `ctx.dir`), dropping values of transactions
    /// beyond the pipelining window, then the oldest ones, to stay within the caps.
    fn store(
        &mut self,
        tx: u64,
        buffer: Buffer,
        ctx: &PacketCtx<'_>,
        data: &[u8],
        stats: &mut ScanStats,
    ) {
        if data.len() > MAX_STORED_VALUE {
            stats.stored_too_long += 1;
            return;
        }
        let oldest = tx.saturating_sub(HTTP_TX_WINDOW);
        let mut freed = 0;
        self.stored.retain(|v| {
            let keep = v.tx >= oldest;
            if !keep {
                freed += v.bytes.len();
            }
            keep
        });
        self.stored_bytes -= freed.min(self.stored_bytes);
        let mut reuse = Vec::new();
        while !self.stored.is_empty()
            && (self.stored.len() >= MAX_STORED
                || self.stored_bytes + data.len() > MAX_STORED_BYTES)
        {
            let v = self.stored.remove(0);
            self.stored_bytes -= v.bytes.len().min(self.stored_bytes);
            stats.stored_evicted += 1;
            reuse = v.bytes;
        }
        reuse.clear();
        reuse.extend_from_slice(data);
        self.stored_bytes += data.len();
        self.stored.push(Stored {
            tx,
            buffer,
            dir: ctx.dir,
            established: ctx.established,
            bytes: reuse,
        });
    }

    /// The groups of (tx, rule) that matched so far.
    fn matched_groups(&self, tx: u64, rule: u32) -> u32 {
        self.partial
            .iter()
            .find(|e| e.0 == tx && e.1 == rule)
            .map_or(0, |e| e.2)
    }
}

impl HttpState {
    /// Sets `bit` for (tx, rule); true exactly once, when every bit of `all` is set.
    /// At most `max` are kept ([`RuleSet::http_partial_max`]).
    fn record(
        &mut self,
        tx: u64,
        rule: u32,
        (bit, all): (u32, u32),
        max: usize,
        dropped: &mut u64,
    ) -> bool {
        if tx > self.newest_tx {
            self.newest_tx = tx;
            let oldest = tx.saturating_sub(HTTP_TX_WINDOW);
            let before = self.partial.len();
            self.partial.retain(|e| e.0 >= oldest);
            *dropped += (before - self.partial.len()) as u64;
        }
        let entry = match self
            .partial
            .iter_mut()
            .position(|e| e.0 == tx && e.1 == rule)
        {
            Some(i) => i,
            None => {
                if self.partial.len() >= max {
                    self.partial.remove(0);
                    *dropped += 1;
                }
                self.partial.push((tx, rule, 0, false));
                self.partial.len() - 1
            }
        };
        let Some(e) = self.partial.get_mut(entry) else {
            return false;
        };
        e.2 |= bit;
        if e.2 & all == all && !e.3 {
            e.3 = true;
            return true;
        }
        false
    }
}

/// Whether a rule header naming application protocol `rule` applies to a flow whose `app_proto` is `flow`: the
/// same name, or, as Suricata compares them (`AppProtoEquals`), a `dcerpc` rule on an `smb` flow, since DCE/RPC
/// travels over SMB named pipes; an `http` rule on an `http2` flow (Suricata's `http` means either version,
/// `http1` the first only).
pub(crate) fn app_proto_admits(rule: &str, flow: &str) -> bool {
    rule.eq_ignore_ascii_case(flow)
        || APP_PROTO_ALIASES
            .iter()
            .any(|(r, f)| rule.eq_ignore_ascii_case(r) && flow.eq_ignore_ascii_case(f))
}

/// The (rule, flow) pairs of different application protocol names that [`app_proto_admits`] accepts.
pub(crate) const APP_PROTO_ALIASES: [(&str, &str); 3] =
    [("dcerpc", "smb"), ("http", "http2"), ("http1", "http")];

/// Rule header and `flow` against the packet context.
#[inline]
fn applies(rule: &Rule, ctx: &PacketCtx<'_>) -> bool {
    let proto_ok = match rule.proto {
        Proto::Ip => true,
        Proto::Tcp => ctx.transport == Transport::Tcp,
        Proto::Udp => ctx.transport == Transport::Udp,
        Proto::Icmp => ctx.transport == Transport::Icmp,
        Proto::IpProto(n) => ctx.transport == Transport::Other(n),
        Proto::App(name) => ctx.app_proto.is_some_and(|a| app_proto_admits(name, a)),
    };
    if !proto_ok {
        return false;
    }
    if let Some(v) = rule.ip_version
        && (v == 4) != ctx.src.is_ipv4()
    {
        return false;
    }
    for &(negated, name) in &rule.app_layer {
        // Suricata's DetectAppLayerProtocolPacketMatch: no match at all while the protocol is unknown.
        let Some(a) = ctx.app_proto else {
            return false;
        };
        if app_proto_admits(name, a) == negated {
            return false;
        }
    }
    if !rule.flow_dir.admits(ctx.dir) {
        return false;
    }
    match rule.flow_state {
        FlowState::Any => {}
        FlowState::Established if !ctx.established => return false,
        FlowState::NotEstablished if ctx.established => return false,
        _ => {}
    }
    if !rule.header.is_empty()
        && !ctx
            .header
            .is_some_and(|h| rule.header.iter().all(|t| t.matches(&h)))
    {
        return false;
    }
    if !rule.stream_size.is_empty()
        && !ctx
            .stream_size
            .is_some_and(|s| rule.stream_size.iter().all(|t| t.matches(s)))
    {
        return false;
    }
    if ctx.header.is_some_and(|h| h.flowless)
        && (rule.flow_dir != FlowDir::Any
            || rule.flow_state != FlowState::Any
            || rule
                .flowbits
                .iter()
                .any(|f| !matches!(f, Flowbit::Capture { .. }))
            || !rule.app_layer.is_empty())
    {
        return false;
    }
    if !rule.packet_groups.is_empty() && !crate::verify::packet_fields_match(rule, ctx) {
        return false;
    }
    let fwd = rule.src.contains(ctx.src)
        && rule.src_ports.contains(ctx.src_port)
        && rule.dst.contains(ctx.dst)
        && rule.dst_ports.contains(ctx.dst_port);
    fwd || (rule.bidirectional
        && rule.src.contains(ctx.dst)
        && rule.src_ports.contains(ctx.dst_port)
        && rule.dst.contains(ctx.src)
        && rule.dst_ports.contains(ctx.src_port))
}

/// Suricata's "PD-only" signature: `app-layer-protocol` and nothing else (no content, no `flow`, no flowbits).
/// Suricata matches it only on the packets where protocol detection completes, one per direction at most; see
/// [`pd_first`].
#[inline]
fn pd_only(rule: &Rule) -> bool {
    rule.groups.is_empty()
        && !rule.app_layer.is_empty()
        && rule.flow_dir == FlowDir::Any
        && rule.flow_state == FlowState::Any
        && rule.flowbits.is_empty()
}

/// The packet where detection completes in direction `d`, as near as the engine's calls tell: the first packet of
/// that direction carrying payload once the protocol is known (the caller checked `app-layer-protocol`, which
/// fails while it is unknown). Records rule `r` as fired in that direction, so it matches there once; a direction
/// without payload never completes detection (a TLS server that only ACKs), as in Suricata.
fn pd_first(dirs: &mut [Option<Box<DirState>>; 2], d: usize, r: u32, payload: &[u8]) -> bool {
    if payload.is_empty() {
        return false;
    }
    let Some(slot) = dirs.get_mut(d) else {
        return false;
    };
    let st = slot.get_or_insert_with(|| Box::new(DirState::new(0, Vec::new())));
    match st.fired.binary_search(&r) {
        Ok(_) => false,
        Err(pos) => {
            if st.fired.len() < MAX_FIRED {
                st.fired.insert(pos, r);
            }
            true
        }
    }
}

/// Whether a rule tests only the TLS state (`ssl_state`, `ssl_version`: one payload group of such conditions). Such
/// a rule is about the flow's TLS session, which Suricata inspects as one transaction per direction: it alerts once
/// per flow direction, not on every packet that carries a TLS record.
fn tls_state_only(rule: &Rule) -> bool {
    matches!(rule.groups.as_slice(), [g] if g.buffer == Buffer::Payload
        && !g.items.is_empty()
        && g.items.iter().all(|i| matches!(i, Item::Tls(_))))
}

/// Whether rule `r` already fired in direction `d` ([`pd_first`] records it).
fn fired_in(dirs: &[Option<Box<DirState>>; 2], d: usize, r: u32) -> bool {
    dirs.get(d)
        .and_then(|s| s.as_deref())
        .is_some_and(|st| st.fired.binary_search(&r).is_ok())
}

/// Length of the content a group's fast pattern belongs to.
fn fp_content_len(g: &Group, gi: &GroupInfo) -> u64 {
    match gi.fp.and_then(|i| g.items.get(i)) {
        Some(Item::Content(c)) => c.bytes.len() as u64,
        _ => 0,
    }
}

/// Bytes of a stream direction available to a check: the tail (ending at `chunk_start`) then `data`.
struct StreamView<'a> {
    tail: &'a [u8],
    data: &'a [u8],
    chunk_start: u64,
}

impl StreamView<'_> {
    fn tail_start(&self) -> u64 {
        self.chunk_start - self.tail.len() as u64
    }
    fn end(&self) -> u64 {
        self.chunk_start + self.data.len() as u64
    }
}

/// The one-field buffers of a request's header and the field each is: the first [`REQUEST_OWN_PATHS`] (user agent,
/// host, cookie) are scanned from their own parts of the message, the rest from the header block; all of them are
/// `absent` when the header ends without the field.
const REQUEST_FIELDS: [(Buffer, &[u8]); 11] = [
    (Buffer::HttpUserAgent, b"user-agent"),
    (Buffer::HttpHost, b"host"),
    (Buffer::HttpRawHost, b"host"),
    (Buffer::HttpCookie, b"cookie"),
    (Buffer::HttpContentType, b"content-type"),
    (Buffer::HttpContentLen, b"content-length"),
    (Buffer::HttpConnection, b"connection"),
    (Buffer::HttpAccept, b"accept"),
    (Buffer::HttpAcceptEnc, b"accept-encoding"),
    (Buffer::HttpAcceptLang, b"accept-language"),
    (Buffer::HttpReferer, b"referer"),
];
const REQUEST_OWN_PATHS: usize = 4;

/// The same for a response's header: the cookie comes from its own path.
const RESPONSE_FIELDS: [(Buffer, &[u8]); 6] = [
    (Buffer::HttpCookie, b"set-cookie"),
    (Buffer::HttpContentType, b"content-type"),
    (Buffer::HttpContentLen, b"content-length"),
    (Buffer::HttpConnection, b"connection"),
    (Buffer::HttpLocation, b"location"),
    (Buffer::HttpServer, b"server"),
];
const RESPONSE_OWN_PATHS: usize = 1;

impl RuleSet {
    /// A [`Scanner`] for this rule set (one per worker thread).
    pub fn scanner(&self) -> Scanner {
        Scanner::new(self)
    }

    /// The rules that matched at least once, with their counts, most matched first (ties by sid): the per-rule
    /// hit table of the summary. `counts` is indexed like [`RuleSet::rules`] (see [`Scanner::add_hit_counts`]).
    pub fn rule_hits<'a>(&'a self, counts: &[u64]) -> Vec<(&'a Rule, u64)> {
        let mut v: Vec<(&Rule, u64)> = self
            .rules
            .iter()
            .zip(counts)
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| (r, *n))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.sid.cmp(&b.0.sid)));
        v
    }

    fn rule_group(&self, t: Target) -> Option<(&Rule, &Group, &GroupInfo)> {
        let r = self.rules.get(t.rule as usize)?;
        let g = r.groups.get(t.group as usize)?;
        let gi = self
            .info
            .get(t.rule as usize)?
            .groups
            .get(t.group as usize)?;
        Some((r, g, gi))
    }

    /// A rule matched: apply its flowbit actions, count it, and alert unless it is `noalert`. The payload group of a
    /// rule that mixes the payload with application-layer buffers is only recorded here ([`Scanner::mixed`]); the
    /// end of the call settles it against the flow's transactions ([`RuleSet::settle_mixed`]).
    #[allow(clippy::too_many_arguments)]
    fn matched(
        &self,
        sc: &mut Scanner,
        bits: &mut Option<Box<Bits>>,
        rule_index: u32,
        dir: Direction,
        source: AlertSource,
        span: (u64, u64),
        sink: &mut impl AlertSink,
    ) {
        if !matches!(source, AlertSource::Http { .. })
            && self
                .info
                .get(rule_index as usize)
                .is_some_and(|i| i.payload_bit.is_some())
        {
            sc.mixed.push((rule_index, dir, span));
            return;
        }
        self.alert_rule(sc, bits, rule_index, dir, source, span, sink);
    }

    /// The payload groups of mixed rules matched during this call: remembered for the flow, and each transaction
    /// whose application-layer groups had all matched already completes its rule now.
    fn settle_mixed(
        &self,
        sc: &mut Scanner,
        http: &mut Option<Box<HttpState>>,
        bits: &mut Option<Box<Bits>>,
        sink: &mut impl AlertSink,
    ) {
        if sc.mixed.is_empty() {
            return;
        }
        let mixed = std::mem::take(&mut sc.mixed);
        for &(rule, dir, _) in &mixed {
            let Some(info) = self.info.get(rule as usize) else {
                continue;
            };
            let (Some(pbit), all) = (info.payload_bit, info.all_groups) else {
                continue;
            };
            let st = http.get_or_insert_with(Box::default);
            if let Err(pos) = st.payload.binary_search(&rule) {
                if st.payload.len() >= self.http_partial_max {
                    st.payload.remove(0);
                    sc.stats.http_partial_dropped += 1;
                }
                st.payload.insert(pos.min(st.payload.len()), rule);
            }
            let mut done = Vec::new();
            for e in st.partial.iter_mut() {
                if e.1 == rule && !e.3 && (e.2 | pbit) & all == all {
                    e.3 = true;
                    done.push(e.0);
                }
            }
            for tx_id in done {
                let source = AlertSource::Http {
                    tx_id,
                    buffer: Buffer::Payload,
                };
                self.alert_rule(sc, bits, rule, dir, source, (0, 0), sink);
            }
        }
        sc.mixed = mixed;
        sc.mixed.clear();
    }

    /// Applies a matched rule's flowbit actions, counts it, and alerts unless it is `noalert`.
    #[allow(clippy::too_many_arguments)]
    fn alert_rule(
        &self,
        sc: &mut Scanner,
        bits: &mut Option<Box<Bits>>,
        rule_index: u32,
        dir: Direction,
        source: AlertSource,
        span: (u64, u64),
        sink: &mut impl AlertSink,
    ) {
        let Some(rule) = self.rules.get(rule_index as usize) else {
            return;
        };
        sc.alertvars.clear();
        if !rule.flowbits.is_empty() {
            apply_flowbits(rule, bits, self.flowbit_names.len(), sc);
        }
        if let Some(h) = sc.hits.get_mut(rule_index as usize) {
            *h += 1;
        }
        if let Some(p) = sc.profile.as_deref_mut() {
            p.matched(rule_index);
        }
        // A `noalert` rule raises no alert, but a dropping one still acts: its match is reported so that the caller
        // applies the drop (and writes no alert for it, see `Alert`); so is one with xbits, whose conditions and
        // actions the caller applies where alerts meet in input order (`crate::xbits`).
        if rule.noalert && !rule.action.drops() && !rule.applies_in_order() {
            return;
        }
        if !rule.noalert {
            sc.stats.alerts += 1;
        }
        let alert = Alert {
            rule,
            rule_index,
            dir,
            source,
            offset: span.0,
            len: span.1.saturating_sub(span.0),
            context: crate::flowvar::AlertContext::of(self, &sc.alertvars),
        };
        sink.alert(&alert);
    }

    /// What the top-level `metadata` of an alert's EVE record writes (Suricata's EVE `metadata` option, on by
    /// default): the flow's flowbits, integers and variables (`flow`: its matcher state; `None` for a packet without
    /// a flow) and the packet's variables, as they stand now. The engine calls it once the packet's whole detection
    /// is done (packet, stream and application-layer inspections alike), as Suricata's loggers read them after
    /// every rule has run on the packet, so that every alert of a packet writes the same whatever order its rules
    /// ran in; and only for a packet that raised an alert. `None` (nothing built) when nothing is set; the
    /// result's `context` is empty (an alert's own captures are its match's, [`Alert::context`]).
    pub fn packet_metadata(
        &self,
        flow: Option<&FlowMatchState>,
        sc: &Scanner,
    ) -> Option<crate::flowvar::AlertVars> {
        use crate::flowvar::{VarScope, named};
        let pkt = &sc.pktvars.store;
        let mut out = flow.and_then(|f| self.flow_metadata(f));
        if !pkt.is_empty() {
            out.get_or_insert_with(Default::default).pktvars =
                named(self.names(VarScope::Packet), pkt);
        }
        out
    }

    /// The flow's variables as they stand (its flowbits, integers, variables and what its `entropy` keywords last
    /// measured), as every EVE record of the flow writes them in its top-level `metadata` and `traffic` (Suricata's
    /// `EveAddMetadata`, which its flow record calls without a packet); `None` when the flow has none. Names are
    /// listed in the order they were met at load.
    pub fn flow_metadata(&self, flow: &FlowMatchState) -> Option<crate::flowvar::AlertVars> {
        use crate::flowvar::{VarScope, named};
        let b = flow.bits.as_deref().filter(|b| {
            b.words.iter().any(|&w| w != 0)
                || !b.ints.is_empty()
                || !b.vars.is_empty()
                || !b.entropy.is_empty()
        })?;
        let mut ints = b.ints.clone();
        ints.sort_unstable_by_key(|&(id, _)| id);
        let mut entropy = b.entropy.clone();
        entropy.sort_unstable_by_key(|&(id, _)| id);
        let names = self.names(VarScope::Entropy);
        Some(crate::flowvar::AlertVars {
            flowvars: named(self.names(VarScope::Flow), &b.vars),
            flowbits: b
                .words
                .iter()
                .enumerate()
                .flat_map(|(i, &w)| {
                    (0..64usize)
                        .filter(move |k| w & (1u64 << k) != 0)
                        .map(move |k| i * 64 + k)
                })
                .filter_map(|id| self.flowbit_names.get(id).cloned())
                .collect(),
            flowints: ints
                .into_iter()
                .filter_map(|(id, v)| Some((self.flowint_names.get(id as usize)?.clone(), v)))
                .collect(),
            entropy: entropy
                .into_iter()
                .filter_map(|(id, v)| Some((names.get(id as usize)?.clone(), v)))
                .collect(),
            ..Default::default()
        })
    }

    /// Keeps on the flow what the packet's `entropy` keywords measured (the last measure of each name stays, as
    /// Suricata stores each one into the flow as it is made); the engine calls it once the packet's detection is
    /// done, before reading the packet's metadata. Without a flow (a packet no flow tracks) they are forgotten, as
    /// Suricata keeps them nowhere then. Allocates only when a measure of a new name is kept.
    pub fn keep_measured(&self, flow: Option<&mut FlowMatchState>, sc: &mut Scanner) {
        let measured = &mut sc.pcre.measured.0;
        if measured.is_empty() {
            return;
        }
        if let Some(flow) = flow {
            let kept = &mut flow.bits.get_or_insert_with(Box::default).entropy;
            for &(id, v) in measured.iter() {
                match kept.iter_mut().find(|(i, _)| *i == id) {
                    Some(slot) => slot.1 = v,
                    None => kept.push((id, v)),
                }
            }
        }
        measured.clear();
    }

    /// Whether rule `r` has flowbit conditions (its candidates go in the second pass).
    fn has_condition(&self, r: u32) -> bool {
        self.info.get(r as usize).is_some_and(|i| i.has_condition)
    }

    /// Inspects in-order TCP stream bytes of one direction: `data` begins at `stream_offset` (bytes since the start
    /// of that direction's stream). Chunks may be of any size and split anywhere; a chunk that does not continue
    /// the previous one is a gap (pending candidates are settled, matching restarts), bytes already seen are
    /// skipped. Alerts go to `sink`, at most once per rule and direction for the life of the flow.
    pub fn scan_stream(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        data: &[u8],
        stream_offset: u64,
        sink: &mut impl AlertSink,
    ) {
        // Whatever happens below, the riders' occurrences of an earlier chunk are no longer the last chunk's.
        sc.ride_at = None;
        let d = ctx.dir.index();
        let Some(ports) = self.stream.get(d) else {
            return;
        };
        if ports.no_patterns() || data.is_empty() {
            return;
        }
        sc.fit(self);
        let FlowMatchState { dirs, bits, http } = flow;
        let Some(slot) = dirs.get_mut(d) else {
            return;
        };
        let st = slot.get_or_insert_with(|| {
            Box::new(DirState::new(
                stream_offset,
                Vec::with_capacity(self.retain),
            ))
        });
        if !st.selected {
            // The port groups of this direction (its ports are the flow's): one prefilter state each.
            st.selected = true;
            ports.select(ctx, &mut sc.tabs);
            st.groups = sc
                .tabs
                .iter()
                .skip(1)
                .map(|&ti| (ti, ScanState::default()))
                .collect();
        }
        let mut data = data;
        if stream_offset > st.end {
            if st.seen {
                sc.stats.stream_gaps += 1;
            }
            self.settle_pending(sc, st, bits, ctx.dir, sink);
            st.end = stream_offset;
            st.scan = ScanState::default();
            st.groups
                .iter_mut()
                .for_each(|g| g.1 = ScanState::default());
            st.tail.clear();
        } else if stream_offset < st.end {
            let skip = st.end - stream_offset;
            if skip >= data.len() as u64 {
                sc.stats.stream_overlap_bytes += data.len() as u64;
                return;
            }
            sc.stats.stream_overlap_bytes += skip;
            data = data.get(skip as usize..).unwrap_or(&[]);
        }
        st.seen = true;
        sc.stats.stream_bytes += data.len() as u64;
        let chunk_start = st.end;
        let mut hits = std::mem::take(&mut sc.shits);
        hits.clear();
        // Occurrences of quiet patterns are dropped here: nothing they lead to can alert (every rule of theirs fired
        // in this direction), and they are most of the hits (runs of NUL bytes re-firing the all-zero patterns).
        let quiet = st.quiet.get(..usize::from(st.nquiet)).unwrap_or(&[]);
        let mut quieted = 0u64;
        let t0 = sc.prof_now();
        let mut rides = std::mem::take(&mut sc.rides);
        rides.clear();
        if let Some((table, rank)) = ports.get(0) {
            let own = table.own;
            let patterns = &table.patterns;
            patterns.scan_quiet(&mut st.scan, &st.tail, data, quiet, |pid, end| {
                if pid >= own {
                    // A rider: only what a scan of this chunk alone would find (never quiet, never a stream hit).
                    if end >= patterns.pattern_len(pid) {
                        rides.push((pid - own, end));
                    }
                } else if quiet.contains(&pid) {
                    quieted += 1;
                } else {
                    let r = rank.get(pid as usize).copied().unwrap_or(u32::MAX);
                    hits.push((end, r, 0, pid))
                }
            });
            if table.patterns.len() as u32 > own {
                sc.ride_at = Some((data.as_ptr() as usize, data.len()));
            }
        }
        sc.rides = rides;
        sc.prof_scanned(t0, Point::Stream, Some(ports.base), d, data.len());
        // The port groups' tables: their quiet patterns are dropped as found (no run skipping).
        for (ti, scan) in st.groups.iter_mut() {
            let ti = *ti;
            let Some((table, rank)) = ports.get(ti) else {
                continue;
            };
            let t0 = sc.prof_now();
            table
                .patterns
                .scan_quiet(scan, &st.tail, data, &[], |pid, end| {
                    if quiet_code(ti, pid).is_some_and(|c| quiet.contains(&c)) {
                        quieted += 1;
                    } else {
                        let r = rank.get(pid as usize).copied().unwrap_or(u32::MAX);
                        hits.push((end, r, ti, pid))
                    }
                });
            sc.prof_scanned(t0, Point::Stream, Some(ports.base + ti), d, data.len());
        }
        // One order whatever the split: by end, then pattern rank, then table.
        if hits.len() > 1 {
            hits.sort_unstable_by_key(|&(end, r, ti, _)| (end, r, ti));
        }
        sc.stats.quiet_hits += quieted;
        sc.stats.prefilter_hits += hits.len() as u64 + quieted;
        let view = StreamView {
            tail: &st.tail,
            data,
            chunk_start,
        };
        // Rules with flowbit conditions go last, so that a bit set by this data is seen.
        let mut deferred = std::mem::take(&mut sc.deferred);
        deferred.clear();
        for &(end, _, ti, pid) in &hits {
            let code = quiet_code(ti, pid);
            // Made quiet by an earlier hit of this chunk: as if dropped by the prefilter.
            if let Some(c) = code
                && st
                    .quiet
                    .get(..usize::from(st.nquiet))
                    .is_some_and(|q| q.contains(&c))
            {
                sc.stats.quiet_hits += 1;
                continue;
            }
            // Candidates whose window is complete before this position are settled first, so that how many are
            // waiting at any position depends on the stream, not on how it was chunked.
            if !st.pending.is_empty() {
                let lists = (&mut st.pending, &mut st.fired);
                self.resolve_pending(
                    sc,
                    lists,
                    bits,
                    &view,
                    chunk_start + end as u64,
                    ctx.dir,
                    sink,
                );
            }
            let targets = ports.get(ti).map_or(&[][..], |(t, _)| t.targets(pid));
            // Whether every rule of this pattern had already fired: then the pattern becomes quiet.
            let mut all_fired = !targets.is_empty();
            for &t in targets {
                // Most hits of a busy pattern come after its rule fired in this direction (the 10k set: 95% of
                // stream candidates): reject those on the flow's own fired list before touching the rule tables,
                // whose entries for 10,000 rules are cache misses.
                if st.fired.binary_search(&t.rule).is_ok() {
                    sc.stats.candidates += 1;
                    continue;
                }
                all_fired = false;
                if self.has_condition(t.rule) {
                    deferred.push((t, end));
                    continue;
                }
                let t0 = sc.prof_now();
                let lists = (&mut st.pending, &mut st.fired);
                self.stream_candidate(sc, lists, bits, &view, ctx, t, end, sink);
                sc.prof_check(t0, t.rule, Point::Stream, None, d);
            }
            if let Some(c) = code.filter(|_| all_fired)
                && !make_quiet(&mut st.quiet, &mut st.nquiet, c)
            {
                sc.stats.quiet_full += 1;
            }
        }
        for &(t, end) in &deferred {
            let t0 = sc.prof_now();
            let lists = (&mut st.pending, &mut st.fired);
            self.stream_candidate(sc, lists, bits, &view, ctx, t, end, sink);
            sc.prof_check(t0, t.rule, Point::Stream, None, d);
        }
        sc.deferred = deferred;
        let lists = (&mut st.pending, &mut st.fired);
        self.resolve_pending(sc, lists, bits, &view, view.end(), ctx.dir, sink);
        self.settle_mixed(sc, http, bits, sink);
        sc.shits = hits;
        // Keep the last `retain` bytes as the tail for the next chunk.
        st.end = view.end();
        let keep = self.retain;
        if data.len() >= keep {
            st.tail.clear();
            st.tail
                .extend_from_slice(data.get(data.len() - keep..).unwrap_or(&[]));
        } else {
            let excess = (st.tail.len() + data.len()).saturating_sub(keep);
            st.tail.drain(..excess.min(st.tail.len()));
            st.tail.extend_from_slice(data);
        }
    }

    /// Checks a stream candidate against the bytes at hand (window clipped to what is available).
    fn check_stream(&self, sc: &mut Scanner, v: &StreamView<'_>, p: Pending) -> Option<(u64, u64)> {
        let (_, g, gi) = self.rule_group(Target {
            rule: p.rule,
            group: p.group,
        })?;
        let tail_start = v.tail_start();
        let end = v.end();
        if p.ds < tail_start {
            sc.stats.window_clamped += 1;
        }
        let lo = p.ds.max(tail_start);
        let hi = p.de.min(end);
        if lo >= hi {
            return None;
        }
        // One byte of context on each side where available, for pcre look-around.
        let clo = lo.saturating_sub(1).max(tail_start);
        let chi = (hi + 1).min(end);
        let Scanner {
            scratch,
            pcre,
            stats,
            ..
        } = sc;
        let bytes: &[u8] = if clo >= v.chunk_start {
            v.data
                .get((clo - v.chunk_start) as usize..(chi - v.chunk_start) as usize)?
        } else if chi <= v.chunk_start {
            v.tail
                .get((clo - tail_start) as usize..(chi - tail_start) as usize)?
        } else {
            scratch.clear();
            scratch.extend_from_slice(v.tail.get((clo - tail_start) as usize..)?);
            scratch.extend_from_slice(v.data.get(..(chi - v.chunk_start) as usize)?);
            scratch.as_slice()
        };
        let hay = Hay {
            bytes,
            lo: (lo - clo) as usize,
            hi: (hi - clo) as usize,
            base: clo,
            real_end: false,
            dce_little: false,
        };
        // Pinned to the occurrence (still in the bytes at hand unless the window was clipped).
        let pin = gi
            .fp
            .zip(p.hs.checked_sub(clo))
            .map(|(i, s)| (i, s as usize));
        verify::check(g, &gi.plan, &hay, pin, pcre, &mut stats.verify)
    }

    /// One prefilter hit (fast pattern ending at `end` in the chunk) for one (rule, group) of a stream.
    #[allow(clippy::too_many_arguments)]
    fn stream_candidate(
        &self,
        sc: &mut Scanner,
        (pending, fired): (&mut Vec<Pending>, &mut Vec<u32>),
        bits: &mut Option<Box<Bits>>,
        view: &StreamView<'_>,
        ctx: &PacketCtx<'_>,
        t: Target,
        end: usize,
        sink: &mut impl AlertSink,
    ) {
        sc.stats.candidates += 1;
        let Some((rule, g, gi)) = self.rule_group(t) else {
            return;
        };
        if fired.binary_search(&t.rule).is_ok()
            || !applies(rule, ctx)
            || !flowbits_ok(rule, bits, &sc.pktvars)
        {
            return;
        }
        let he = view.chunk_start + end as u64;
        let Some(hs) = he.checked_sub(fp_content_len(g, gi)) else {
            return;
        };
        if !gi.hit_ok(g, hs, he, None) {
            return;
        }
        if gi.fp_only {
            fire(sc, fired, t.rule);
            self.matched(
                sc,
                bits,
                t.rule,
                ctx.dir,
                AlertSource::Stream,
                (hs, he),
                sink,
            );
            return;
        }
        let (ds, de) = match gi.abs_end {
            Some(e) if he > e => return,
            Some(e) => (0, e),
            None => (hs.saturating_sub(gi.back), he.saturating_add(gi.fwd)),
        };
        let p = Pending {
            rule: t.rule,
            group: t.group,
            hs,
            ds,
            de,
        };
        let complete = view.end() > de;
        let full = pending.len() >= MAX_PENDING;
        if complete || gi.monotone || full {
            if !complete && !gi.monotone {
                sc.stats.pending_overflow += 1;
            }
            if let Some(span) = self.check_stream(sc, view, p) {
                fire(sc, fired, t.rule);
                self.matched(sc, bits, t.rule, ctx.dir, AlertSource::Stream, span, sink);
                return;
            }
            if complete || full {
                return;
            }
        }
        pending.push(p);
    }

    /// Settles the pending candidates whose window ends before stream offset `upto` (all bytes they need, plus one
    /// of context, are in `view`).
    #[allow(clippy::too_many_arguments)]
    fn resolve_pending(
        &self,
        sc: &mut Scanner,
        (pending, fired): (&mut Vec<Pending>, &mut Vec<u32>),
        bits: &mut Option<Box<Bits>>,
        view: &StreamView<'_>,
        upto: u64,
        dir: Direction,
        sink: &mut impl AlertSink,
    ) {
        let mut i = 0;
        while let Some(&p) = pending.get(i) {
            if fired.binary_search(&p.rule).is_ok() {
                pending.remove(i);
                continue;
            }
            if upto <= p.de {
                i += 1;
                continue;
            }
            pending.remove(i);
            let t0 = sc.prof_now();
            if let Some(span) = self.check_stream(sc, view, p) {
                fire(sc, fired, p.rule);
                self.matched(sc, bits, p.rule, dir, AlertSource::Stream, span, sink);
            }
            sc.prof_check(t0, p.rule, Point::Stream, None, dir.index());
        }
    }

    /// Settles every pending candidate of a direction with the data at hand (end of stream or gap).
    fn settle_pending(
        &self,
        sc: &mut Scanner,
        st: &mut DirState,
        bits: &mut Option<Box<Bits>>,
        dir: Direction,
        sink: &mut impl AlertSink,
    ) {
        let pending = std::mem::take(&mut st.pending);
        let view = StreamView {
            tail: &st.tail,
            data: &[],
            chunk_start: st.end,
        };
        for p in &pending {
            if st.fired.binary_search(&p.rule).is_ok() {
                continue;
            }
            sc.stats.pending_at_end += 1;
            let t0 = sc.prof_now();
            if let Some(span) = self.check_stream(sc, &view, *p) {
                fire(sc, &mut st.fired, p.rule);
                self.matched(sc, bits, p.rule, dir, AlertSource::Stream, span, sink);
            }
            sc.prof_check(t0, p.rule, Point::Stream, None, dir.index());
        }
        st.pending = pending;
        st.pending.clear();
    }

    /// The flow ended (or is evicted): settles candidates still waiting for stream data, in both directions.
    pub fn finish_flow(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        sink: &mut impl AlertSink,
    ) {
        sc.fit(self);
        let FlowMatchState { dirs, bits, http } = flow;
        for (d, dir) in [(0, Direction::ToServer), (1, Direction::ToClient)] {
            if let Some(Some(st)) = dirs.get_mut(d) {
                self.settle_pending(sc, st, bits, dir, sink);
            }
        }
        self.settle_mixed(sc, http, bits, sink);
    }

    /// Inspects one packet's payload; call it for every packet, TCP included. For non-TCP packets this runs the
    /// payload rules (`udp`, `icmp`, `ip`, ...); for TCP packets only the packet-only rules (`tcp-pkt`, `dsize`),
    /// the rest of TCP payload being inspected by [`RuleSet::scan_stream`]; for every packet the rules without
    /// content (header and flow checks only). At most one alert per rule per packet. `flow` carries flowbits.
    pub fn scan_packet(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        payload: &[u8],
        sink: &mut impl AlertSink,
    ) {
        self.scan_packet_with(sc, flow, ctx, payload, false, false, sink);
    }

    /// Inspects a TCP packet whose payload is not part of any stream (Suricata keeps such data out of stream
    /// reassembly: a connection picked up without its handshake while mid-stream pickups are off, data on a SYN
    /// without the Fast Open option, data sent before the handshake could complete): as [`RuleSet::scan_packet`],
    /// and besides, the stream rules inspect the payload as a chunk of its own, as Suricata inspects a packet that
    /// was not added to a stream. Each such packet is its own buffer: a rule alerts at most once per packet, and
    /// positions (`depth`, `offset`) count from the packet's first byte. Rules that ask for the stream alone
    /// (`flow:only_stream`) do not match.
    pub fn scan_unstreamed_packet(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        payload: &[u8],
        sink: &mut impl AlertSink,
    ) {
        self.scan_packet_with(
            sc,
            flow,
            ctx,
            payload,
            ctx.transport == Transport::Tcp,
            false,
            sink,
        );
    }

    /// Inspects a TCP packet whose payload was, whole, the last chunk handed to [`RuleSet::scan_stream`] while
    /// this packet was processed (in order, in one piece): as [`RuleSet::scan_packet`], but the single-packet rules'
    /// shared table is not scanned again when the stream scan of that chunk already found its patterns (they ride
    /// in the stream's table, see [`crate::group::PortTables::carry_riders`]). The caller vouches for "during this
    /// packet"; the chunk is checked to be the payload itself (same address and length), else the payload is
    /// scanned as by `scan_packet`. The alerts are the same either way.
    pub fn scan_streamed_packet(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        payload: &[u8],
        sink: &mut impl AlertSink,
    ) {
        self.scan_packet_with(sc, flow, ctx, payload, false, true, sink);
    }

    #[allow(clippy::too_many_arguments)]
    fn scan_packet_with(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        payload: &[u8],
        unstreamed: bool,
        whole: bool,
        sink: &mut impl AlertSink,
    ) {
        sc.fit(self);
        let d = ctx.dir.index();
        sc.next_generation();
        // The riders' occurrences of the last stream chunk, when that chunk was this payload (see
        // `scan_streamed_packet`); used once at most.
        let ride_at = sc.ride_at.take();
        let ridden = whole
            && !payload.is_empty()
            && ctx.transport == Transport::Tcp
            && ride_at == Some((payload.as_ptr() as usize, payload.len()));
        sc.stats.packets_ridden += u64::from(ridden);
        let rides = std::mem::take(&mut sc.rides);
        let FlowMatchState { dirs, bits, http } = flow;
        let (tables, point) = if ctx.transport == Transport::Tcp {
            (&self.tcp_packet, Point::TcpPacket)
        } else {
            (&self.packet, Point::Datagram)
        };
        // The table sets this packet meets: its own, then (unstreamed TCP data) the stream rules' tables, whose
        // table indices carry [`STREAM_SET`].
        let own = tables.get(d).filter(|t| !t.is_empty());
        let streamed = unstreamed
            .then(|| self.stream.get(d))
            .flatten()
            .filter(|t| !t.is_empty());
        let set_of = |ti: u32| -> Option<(&crate::group::PortTables, Point, u32)> {
            if ti & STREAM_SET != 0 {
                streamed.map(|p| (p, Point::Stream, ti & !STREAM_SET))
            } else {
                own.map(|p| (p, point, ti))
            }
        };
        let any_tables = own.is_some() || streamed.is_some();
        // Candidates of every table the packet meets (the shared one and its port groups), in one order that does
        // not depend on how the tables were split: by the end of the fast-pattern occurrence, the pattern's rank,
        // then rule and group; the always-checked ones last, in rule order.
        let mut cands = std::mem::take(&mut sc.cands);
        cands.clear();
        let mut tabs = std::mem::take(&mut sc.tabs);
        let mut verdict = std::mem::take(&mut sc.verdict);
        let generation = u64::from(sc.generation);
        // A target whose rule's header or `flow` rules out this packet is dropped here: `applies` depends on the
        // packet alone, so the candidate would have been rejected wherever it stood in the order.
        let mut ruled_out = 0u64;
        let mut keep = |t: &Target| {
            let Some(v) = verdict.get_mut(t.rule as usize) else {
                return true;
            };
            if *v >> 1 != generation {
                let ok = self
                    .rules
                    .get(t.rule as usize)
                    .is_some_and(|r| applies(r, ctx));
                *v = generation << 1 | u64::from(ok);
            }
            let ok = *v & 1 == 1;
            ruled_out += u64::from(!ok);
            ok
        };
        if any_tables {
            sc.stats.packet_bytes += payload.len() as u64;
        }
        for (ports, set, point) in [(own, 0, point), (streamed, STREAM_SET, Point::Stream)] {
            let Some(ports) = ports else {
                continue;
            };
            ports.select(ctx, &mut tabs);
            for &ti in &tabs {
                let Some((table, rank)) = ports.get(ti) else {
                    continue;
                };
                let t0 = sc.prof_now();
                let mut n = 0u64;
                let mut on_hit = |pid: u32, end: usize| {
                    n += 1;
                    let r = rank.get(pid as usize).copied().unwrap_or(u32::MAX);
                    for t in table.targets(pid) {
                        if keep(t) {
                            cands.push((end, r, *t, ti | set));
                        }
                    }
                };
                if ridden && set == 0 && ti == 0 {
                    // Found by the stream scan of this very payload.
                    for &(pid, end) in &rides {
                        on_hit(pid, end);
                    }
                } else if !table.patterns.is_empty() {
                    let bytes = table.head.and_then(|h| payload.get(..h)).unwrap_or(payload);
                    table.patterns.scan_buffer(bytes, on_hit);
                }
                for t in &table.always {
                    if keep(t) {
                        cands.push((usize::MAX, 0, *t, ti | set));
                    }
                }
                sc.prof_scanned(t0, point, Some(ports.base + ti), d, payload.len());
                sc.stats.prefilter_hits += n;
            }
        }
        if any_tables && cands.len() > 1 {
            cands.sort_unstable_by_key(|&(end, r, t, _)| (end, r, t.rule, t.group));
        }
        sc.verdict = verdict;
        sc.stats.candidates += ruled_out;
        // Whether the first pass left candidates with flowbit conditions: if not, the second pass skips the hits.
        let mut deferred = false;
        if sc.header.len() != 2 * HEADER_SLOTS {
            sc.header = (0..2 * HEADER_SLOTS).map(|_| (None, Vec::new())).collect();
        }
        let slot = d.min(1) * HEADER_SLOTS + header_slot(ctx);
        let (mut header_key, mut header) = sc
            .header
            .get_mut(slot)
            .map(std::mem::take)
            .unwrap_or_default();
        for second in [false, true] {
            if any_tables && (!second || deferred) {
                for &(end, _, t, ti) in &cands {
                    let Some((ports, point, ti)) = set_of(ti) else {
                        continue;
                    };
                    let cond = self.has_condition(t.rule);
                    deferred |= cond;
                    if cond == second {
                        // A rule of TLS state conditions alone matches once per flow direction.
                        let once = self.rules.get(t.rule as usize).is_some_and(tls_state_only);
                        if once && fired_in(dirs, d, t.rule) {
                            continue;
                        }
                        // A rule that asks for the stream alone never matches data outside one.
                        if point == Point::Stream
                            && self
                                .rules
                                .get(t.rule as usize)
                                .is_some_and(|r| r.stream_only)
                        {
                            continue;
                        }
                        let c = Cand {
                            t,
                            hit_end: (end != usize::MAX).then_some(end),
                            source: AlertSource::Packet,
                        };
                        let t0 = sc.prof_now();
                        let hit = self.buffer_candidate(sc, ctx, c, payload, bits, None, sink);
                        if once && hit {
                            pd_first(dirs, d, t.rule, payload);
                        }
                        sc.prof_check(t0, t.rule, point, Some(ports.base + ti), d);
                    }
                }
            }
            if let Some(index) = self.header_only.get(d).filter(|ix| !ix.is_empty()) {
                let key = (
                    std::ptr::from_ref(index) as usize,
                    ctx.src,
                    ctx.dst,
                    ctx.src_port,
                    ctx.dst_port,
                    ctx.transport,
                );
                if !second && header_key != Some(key) {
                    index.candidates(ctx, &mut header);
                    header_key = Some(key);
                }
                for &(r, filed) in &header {
                    if self.has_condition(r) != second {
                        continue;
                    }
                    let t0 = sc.prof_now();
                    if ctx.repeat_in_dir && self.info.get(r as usize).is_some_and(|i| i.ip_only) {
                        continue;
                    }
                    if let Some(rule) = self.rules.get(r as usize)
                        && applies(rule, ctx)
                        && flowbits_ok(rule, bits, &sc.pktvars)
                        && (!pd_only(rule) || pd_first(dirs, d, r, payload))
                        && sc.stamp(r)
                    {
                        self.matched(sc, bits, r, ctx.dir, AlertSource::Packet, (0, 0), sink);
                    }
                    let g = crate::group::group_id(filed, ctx.transport);
                    sc.prof_check(t0, r, Point::HeaderOnly, Some(g), d);
                }
            }
        }
        self.settle_mixed(sc, http, bits, sink);
        sc.cands = cands;
        sc.tabs = tabs;
        if let Some(s) = sc.header.get_mut(slot) {
            *s = (header_key, header);
        }
        sc.rides = rides;
    }

    /// A candidate in a whole buffer (datagram or HTTP buffer): verify and alert.
    #[allow(clippy::too_many_arguments)]
    fn buffer_candidate(
        &self,
        sc: &mut Scanner,
        ctx: &PacketCtx<'_>,
        c: Cand,
        buf: &[u8],
        bits: &mut Option<Box<Bits>>,
        partial: Option<&mut Option<Box<HttpState>>>,
        sink: &mut impl AlertSink,
    ) -> bool {
        let Cand { t, hit_end, source } = c;
        sc.stats.candidates += 1;
        // Already alerted for this buffer: decided before the rule tables are touched.
        if sc.stamp.get(t.rule as usize) == Some(&sc.generation) {
            return false;
        }
        let Some((rule, g, gi)) = self.rule_group(t) else {
            return false;
        };
        if !applies(rule, ctx) || !flowbits_ok(rule, bits, &sc.pktvars) {
            return false;
        }
        let span = match hit_end {
            // The buffer is absent: only a group that starts with `absent` matches, without reading anything.
            _ if sc.absent_pass => {
                if !matches!(g.items.first(), Some(Item::Absent { .. })) {
                    return false;
                }
                sc.stamp(t.rule);
                (0, 0)
            }
            Some(he) if gi.fp_only => {
                let he = he as u64;
                let hs = he.saturating_sub(fp_content_len(g, gi));
                if !gi.hit_ok(g, hs, he, Some(buf.len() as u64)) {
                    return false;
                }
                (hs, he)
            }
            _ => {
                if let Some(he) = hit_end {
                    let he = he as u64;
                    let hs = he.saturating_sub(fp_content_len(g, gi));
                    if !gi.hit_ok(g, hs, he, Some(buf.len() as u64)) {
                        return false;
                    }
                }
                // The whole buffer is checked once per rule, whichever occurrence led here.
                sc.stamp(t.rule);
                let hay = Hay {
                    bytes: buf,
                    lo: 0,
                    hi: buf.len(),
                    base: 0,
                    real_end: true,
                    dce_little: sc.dce_little,
                };
                let Scanner { pcre, stats, .. } = &mut *sc;
                match verify::check(g, &gi.plan, &hay, None, pcre, &mut stats.verify) {
                    Some(s) => s,
                    None => return false,
                }
            }
        };
        sc.stamp(t.rule);
        // A rule of several groups alerts once its last group matched; one of `file.data` (whose transaction may
        // carry several files, each handed over on its own as it closes) once per transaction.
        if let AlertSource::Http { tx_id, buffer } = source
            && (rule.groups.len() > 1 || buffer.is_file_data())
        {
            let Some(state) = partial else { return false };
            let info = self.info.get(t.rule as usize);
            let all = info.map_or(0, |i| i.all_groups);
            let mut bit = 1u32.checked_shl(u32::from(t.group)).unwrap_or(0);
            let st = state.get_or_insert_with(Box::default);
            if let Some(i) = info.filter(|i| i.lazy != 0) {
                let todo = i.lazy & !st.matched_groups(tx_id, t.rule);
                bit |= self.lazy_bits(sc, ctx, bits, t.rule, todo, &st.stored, tx_id);
            }
            // A mixed rule's payload group counts for every transaction once it matched in the flow.
            if let Some(pbit) = info.and_then(|i| i.payload_bit)
                && st.payload.binary_search(&t.rule).is_ok()
            {
                bit |= pbit;
            }
            if !st.record(
                tx_id,
                t.rule,
                (bit, all),
                self.http_partial_max,
                &mut sc.stats.http_partial_dropped,
            ) {
                return false;
            }
        }
        self.matched(sc, bits, t.rule, ctx.dir, source, span, sink);
        true
    }

    /// Inspects one HTTP buffer of transaction `tx_id` (as handed over by the HTTP parser, once per buffer and
    /// transaction). Rules whose contents span several buffers alert when the last of them matches.
    #[allow(clippy::too_many_arguments)]
    pub fn scan_http(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        tx_id: u64,
        kind: HttpBuffer,
        data: &[u8],
        sink: &mut impl AlertSink,
    ) {
        sc.fit(self);
        sc.stats.http_bytes += data.len() as u64;
        let wants = |b: Buffer| self.inspects(b);
        let mut norm = std::mem::take(&mut sc.norm);
        let mut cookie = std::mem::take(&mut sc.cookie);
        // The buffers this piece of the transaction makes: the piece itself, then what derives from it. Derived
        // buffers are built (into the scanner's scratch vectors) only when some rule inspects them.
        let mut scan = |sc: &mut Scanner, flow: &mut FlowMatchState, b: Buffer, bytes: &[u8]| {
            if wants(b) {
                self.scan_http_buffer(sc, flow, ctx, tx_id, b, bytes, sink);
            }
        };
        match kind {
            HttpBuffer::RequestLine => {
                scan(sc, flow, Buffer::HttpRequestLine, data);
                if let Some(p) = crate::http::request_protocol(data) {
                    scan(sc, flow, Buffer::HttpProtocol, p);
                }
            }
            HttpBuffer::RequestHead | HttpBuffer::ResponseHead => {
                scan(sc, flow, Buffer::HttpStart, data)
            }
            HttpBuffer::Method => scan(sc, flow, Buffer::HttpMethod, data),
            HttpBuffer::Uri => {
                scan(sc, flow, Buffer::HttpRawUri, data);
                if wants(Buffer::HttpUri) {
                    crate::http::normalize_uri(data, &mut norm);
                    scan(sc, flow, Buffer::HttpUri, &norm);
                }
            }
            HttpBuffer::Host => {
                scan(sc, flow, Buffer::HttpRawHost, data);
                if wants(Buffer::HttpHost) {
                    crate::http::normalize_host(data, &mut norm);
                    scan(sc, flow, Buffer::HttpHost, &norm);
                }
            }
            HttpBuffer::UserAgent => scan(sc, flow, Buffer::HttpUserAgent, data),
            HttpBuffer::RequestHeaders | HttpBuffer::ResponseHeaders => {
                // A header block, of either side: as sent, its lines without the cookie's (the cookie apart),
                // the one-field buffers that come from the block and the header names.
                let (raw, lines, cookie_name, fields) = if kind == HttpBuffer::RequestHeaders {
                    (
                        Buffer::HttpRequestRawHeader,
                        Buffer::HttpRequestHeader,
                        &b"cookie"[..],
                        &REQUEST_FIELDS[REQUEST_OWN_PATHS..],
                    )
                } else {
                    (
                        Buffer::HttpResponseRawHeader,
                        Buffer::HttpResponseHeader,
                        &b"set-cookie"[..],
                        &RESPONSE_FIELDS[RESPONSE_OWN_PATHS..],
                    )
                };
                scan(sc, flow, raw, data);
                scan(sc, flow, Buffer::HttpRawHeader, data);
                if wants(lines) || wants(Buffer::HttpCookie) || wants(Buffer::HttpHeader) {
                    crate::http::split_headers(data, cookie_name, &mut norm, &mut cookie);
                    scan(sc, flow, lines, &norm);
                    scan(sc, flow, Buffer::HttpHeader, &norm);
                    if !cookie.is_empty() {
                        scan(sc, flow, Buffer::HttpCookie, &cookie);
                    }
                }
                for &(b, name) in fields {
                    if wants(b)
                        && let Some(v) = crate::http::header_value(data, name)
                    {
                        scan(sc, flow, b, v);
                    }
                }
                if wants(Buffer::HttpHeaderNames) {
                    crate::http::header_names(data, &mut norm);
                    scan(sc, flow, Buffer::HttpHeaderNames, &norm);
                }
            }
            HttpBuffer::RequestBody => scan(sc, flow, Buffer::HttpRequestBody, data),
            HttpBuffer::ResponseLine => {
                scan(sc, flow, Buffer::HttpResponseLine, data);
                let (proto, msg) = crate::http::status_line_parts(data);
                scan(sc, flow, Buffer::HttpProtocol, proto);
                scan(sc, flow, Buffer::HttpStatMsg, msg);
            }
            HttpBuffer::StatusCode => scan(sc, flow, Buffer::HttpStatCode, data),
            HttpBuffer::ResponseBody => {
                scan(sc, flow, Buffer::HttpResponseBody, data);
                // `file.data` both ways: the response body is the response's file (a request's files come from
                // its file records, not from here).
                scan(sc, flow, Buffer::HttpFileData, data);
            }
        }
        sc.norm = norm;
        sc.cookie = cookie;
        // The header ended: the one-field buffers it lacks are absent from the transaction.
        if !self.absent.is_empty() {
            let fields: &[(Buffer, &[u8])] = match kind {
                HttpBuffer::RequestHeaders => &REQUEST_FIELDS,
                HttpBuffer::ResponseHeaders => &RESPONSE_FIELDS,
                _ => &[],
            };
            for &(b, name) in fields {
                if crate::http::header_value(data, name).is_none() {
                    self.scan_http_absent(sc, flow, ctx, tx_id, b, sink);
                }
            }
        }
        // The one-header multi-buffers. HTTP/2's come from its header frames, pseudo-headers included
        // (`http2_frame` in the inspect crate), not from this block, which leaves them out.
        let each = match kind {
            HttpBuffer::RequestHeaders => Buffer::HttpRequestHeaderLine,
            HttpBuffer::ResponseHeaders => Buffer::HttpResponseHeaderLine,
            _ => return,
        };
        if !wants(each) || ctx.app_proto == Some("http2") {
            return;
        }
        let mut fields = std::mem::take(&mut sc.fields);
        let mut ends = std::mem::take(&mut sc.field_ends);
        crate::http::header_fields(data, &mut fields, &mut ends);
        let mut start = 0;
        let parts = ends.iter().map(|&e| {
            let p = fields.get(start..e).unwrap_or_default();
            start = e;
            p
        });
        self.scan_app_each(sc, flow, ctx, tx_id, each, parts, sink);
        sc.fields = fields;
        sc.field_ends = ends;
    }

    /// Buffer `buffer` is absent from transaction `tx_id` (the message's header ended without the field): the groups
    /// that start with `absent` on it match (Suricata's `absent` and `absent: or_else`), as a matching buffer would.
    fn scan_http_absent(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        tx_id: u64,
        buffer: Buffer,
        sink: &mut impl AlertSink,
    ) {
        if !self.absent.iter().any(|(b, _)| *b == buffer) {
            return;
        }
        sc.next_generation();
        sc.absent_pass = true;
        let source = AlertSource::Http { tx_id, buffer };
        let FlowMatchState { bits, http, .. } = flow;
        for &(b, t) in &self.absent {
            if b == buffer {
                let c = Cand {
                    t,
                    hit_end: None,
                    source,
                };
                self.buffer_candidate(sc, ctx, c, &[], bits, Some(http), sink);
            }
        }
        sc.absent_pass = false;
    }

    /// Inspects one side of a DCE/RPC call (a request, or its response) of transaction `tx_id`: the call header
    /// ([`crate::dcerpc::call_header`]: what `dcerpc.iface` and `dcerpc.opnum` read), then the stub
    /// (`dcerpc.stub_data`), whose byte order (for `byte_test ... dce`) is little endian when `little_endian`.
    #[allow(clippy::too_many_arguments)]
    pub fn scan_dcerpc(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        tx_id: u64,
        header: &[u8],
        stub: &[u8],
        little_endian: bool,
        sink: &mut impl AlertSink,
    ) {
        sc.dce_little = little_endian;
        self.scan_app(sc, flow, ctx, tx_id, Buffer::DcerpcHeader, header, sink);
        self.scan_app(sc, flow, ctx, tx_id, Buffer::DcerpcStubData, stub, sink);
        sc.dce_little = false;
    }

    /// Inspects a multi-buffer (`tls.certs`: each certificate of a chain) of transaction `tx_id`: each part is
    /// inspected on its own, and a rule alerts once for the transaction however many parts match (its hit count and
    /// flowbit actions count each matching part).
    #[allow(clippy::too_many_arguments)]
    pub fn scan_app_each<'d>(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        tx_id: u64,
        buffer: Buffer,
        parts: impl IntoIterator<Item = &'d [u8]>,
        sink: &mut impl AlertSink,
    ) {
        let mut seen: Vec<u32> = Vec::new();
        let mut once = |a: &Alert<'_>| {
            if !seen.contains(&a.rule_index) {
                seen.push(a.rule_index);
                sink.alert(a);
            }
        };
        for part in parts {
            self.scan_app(sc, flow, ctx, tx_id, buffer, part, &mut once);
        }
    }

    /// Inspects one application-layer buffer other than HTTP's (`dns.query`, `tls.sni`, `ja3.hash`, `ssh.proto`,
    /// ...) of transaction `tx_id` (per flow; a DNS message, or 0 for a TLS or SSH handshake), handed over once.
    /// `ctx.dir` is the direction the field travelled in (a ClientHello's fields to the server).
    #[allow(clippy::too_many_arguments)]
    pub fn scan_app(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        tx_id: u64,
        buffer: Buffer,
        data: &[u8],
        sink: &mut impl AlertSink,
    ) {
        if buffer == Buffer::Payload {
            return;
        }
        sc.fit(self);
        sc.stats.http_bytes += data.len() as u64;
        self.scan_http_buffer(sc, flow, ctx, tx_id, buffer, data, sink);
    }

    #[allow(clippy::too_many_arguments)]
    fn scan_http_buffer(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        tx_id: u64,
        buffer: Buffer,
        bytes: &[u8],
        sink: &mut impl AlertSink,
    ) {
        // The alerts of one buffer go out in rule order, whichever way the matcher reached them (a table's
        // candidates, a transformed table, a lazily checked group completing a rule): the order never depends on
        // how the rules were grouped. Held here; an alert is rare, so the vector rarely allocates.
        // An alert's own variables (`alert.context`) are its match's: copied only for a rule that captured some.
        type Held = (
            u32,
            Direction,
            AlertSource,
            u64,
            u64,
            Option<crate::flowvar::VarStore>,
        );
        let mut held: Vec<Held> = Vec::new();
        let outer = sink;
        let sink = &mut |a: &Alert<'_>| {
            let own = a.context.map(|c| c.store.clone());
            held.push((a.rule_index, a.dir, a.source, a.offset, a.len, own));
        };
        let stores = self.stored.get(buffer.index()).copied().unwrap_or(false);
        if stores && !buffer.ends_transaction() {
            flow.http.get_or_insert_with(Box::default).store(
                tx_id,
                buffer,
                ctx,
                bytes,
                &mut sc.stats,
            );
        }
        if let Some(table) = self.http.get(buffer.index()).filter(|t| !t.is_empty()) {
            self.scan_app_table(sc, flow, ctx, tx_id, buffer, table, bytes, sink);
        }
        if self.transformed.iter().any(|v| v.0 == buffer) {
            let mut a = std::mem::take(&mut sc.transform_a);
            let mut b = std::mem::take(&mut sc.transform_b);
            for (vb, chain, table) in &self.transformed {
                if *vb == buffer {
                    let out = crate::transform::apply_chain(chain, bytes, &mut a, &mut b);
                    self.scan_app_table(sc, flow, ctx, tx_id, buffer, table, out, sink);
                }
            }
            sc.transform_a = a;
            sc.transform_b = b;
        }
        if stores {
            self.complete_lazy(sc, flow, ctx, tx_id, buffer, bytes, sink);
        }
        held.sort_by_key(|a| a.0);
        for (rule_index, dir, source, offset, len, own) in &held {
            if let Some(rule) = self.rules.get(*rule_index as usize) {
                outer.alert(&Alert {
                    rule,
                    rule_index: *rule_index,
                    dir: *dir,
                    source: *source,
                    offset: *offset,
                    len: *len,
                    context: own
                        .as_ref()
                        .and_then(|s| crate::flowvar::AlertContext::of(self, s)),
                });
            }
        }
    }

    /// Whether group `t` matches `bytes` (a value of its buffer): the group's transforms applied, then its chain
    /// verified over the whole value. The span of the match.
    fn group_matches(&self, sc: &mut Scanner, t: Target, bytes: &[u8]) -> Option<(u64, u64)> {
        let (_, g, info) = self.rule_group(t)?;
        let mut a = std::mem::take(&mut sc.lazy_a);
        let mut b = std::mem::take(&mut sc.lazy_b);
        let value = if g.transforms.is_empty() {
            bytes
        } else {
            crate::transform::apply_chain(&g.transforms, bytes, &mut a, &mut b)
        };
        let hay = Hay {
            bytes: value,
            lo: 0,
            hi: value.len(),
            base: 0,
            real_end: true,
            dce_little: sc.dce_little,
        };
        let Scanner { pcre, stats, .. } = &mut *sc;
        let r = verify::check(g, &info.plan, &hay, None, pcre, &mut stats.verify);
        sc.lazy_a = a;
        sc.lazy_b = b;
        r
    }

    /// The lazily checked groups (`mask`) of rule `r` that match a kept value of their buffer in transaction
    /// `tx`, as group bits: checked as their own candidates would have been when the value arrived (the rule's
    /// header against that value's direction, its flowbits now).
    #[allow(clippy::too_many_arguments)]
    fn lazy_bits(
        &self,
        sc: &mut Scanner,
        ctx: &PacketCtx<'_>,
        bits: &Option<Box<Bits>>,
        r: u32,
        mask: u32,
        stored: &[Stored],
        tx: u64,
    ) -> u32 {
        let Some(rule) = self.rules.get(r as usize) else {
            return 0;
        };
        if mask == 0 || !flowbits_ok(rule, bits, &sc.pktvars) {
            return 0;
        }
        let mut out = 0;
        let mut m = mask;
        while m != 0 {
            let gi = m.trailing_zeros();
            m &= m - 1;
            let t = Target {
                rule: r,
                group: gi as u8,
            };
            let Some(g) = rule.groups.get(gi as usize) else {
                continue;
            };
            for v in stored.iter().filter(|v| v.tx == tx && v.buffer == g.buffer) {
                let vctx = PacketCtx {
                    established: v.established,
                    ..ctx.toward(v.dir)
                };
                if applies(rule, &vctx) && self.group_matches(sc, t, &v.bytes).is_some() {
                    out |= 1 << gi;
                    break;
                }
            }
        }
        out
    }

    /// A value of `buffer` arrived in transaction `tx` (and was kept): the rules whose lead already matched in that
    /// transaction check their lazily checked groups on this buffer against it, and alert once complete.
    #[allow(clippy::too_many_arguments)]
    fn complete_lazy(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        tx: u64,
        buffer: Buffer,
        data: &[u8],
        sink: &mut impl AlertSink,
    ) {
        let FlowMatchState { bits, http, .. } = flow;
        let Some(st) = http.as_deref_mut() else {
            return;
        };
        let HttpState {
            partial, payload, ..
        } = st;
        let mut done = std::mem::take(&mut sc.completed);
        done.clear();
        let d = ctx.dir.index();
        for e in partial.iter_mut() {
            if e.0 != tx || e.3 {
                continue;
            }
            let (Some(info), Some(rule)) =
                (self.info.get(e.1 as usize), self.rules.get(e.1 as usize))
            else {
                continue;
            };
            let mut todo = 0u32;
            let mut m = info.lazy & !e.2;
            while m != 0 {
                let gi = m.trailing_zeros();
                m &= m - 1;
                if rule
                    .groups
                    .get(gi as usize)
                    .is_some_and(|g| g.buffer == buffer)
                {
                    todo |= 1 << gi;
                }
            }
            if todo == 0 {
                continue;
            }
            let t0 = sc.prof_now();
            if applies(rule, ctx) && flowbits_ok(rule, bits, &sc.pktvars) {
                let mut span = None;
                while todo != 0 {
                    let gi = todo.trailing_zeros();
                    todo &= todo - 1;
                    let t = Target {
                        rule: e.1,
                        group: gi as u8,
                    };
                    if let Some(s) = self.group_matches(sc, t, data) {
                        e.2 |= 1 << gi;
                        span = Some(s);
                    }
                }
                // A mixed rule's payload group counts once it matched in the flow.
                let pbit = info
                    .payload_bit
                    .filter(|_| payload.binary_search(&e.1).is_ok())
                    .unwrap_or(0);
                if (e.2 | pbit) & info.all_groups == info.all_groups {
                    e.3 = true;
                    done.push((e.1, span.unwrap_or((0, data.len() as u64))));
                }
            }
            sc.prof_check(t0, e.1, Point::App(buffer), None, d);
        }
        for &(r, span) in &done {
            let source = AlertSource::Http { tx_id: tx, buffer };
            self.matched(sc, bits, r, ctx.dir, source, span, sink);
        }
        sc.completed = done;
    }

    /// Whether any rule inspects `buffer` (plain or transformed): a parser's buffers that cost work to build (a
    /// DNS message's names, one part each) are built only then.
    pub fn inspects(&self, buffer: Buffer) -> bool {
        self.http.get(buffer.index()).is_some_and(|t| !t.is_empty())
            || self.transformed.iter().any(|v| v.0 == buffer)
            || self.stored.get(buffer.index()).copied().unwrap_or(false)
    }

    /// One application-layer buffer (as handed over, or transformed) against one prefilter table.
    #[allow(clippy::too_many_arguments)]
    fn scan_app_table(
        &self,
        sc: &mut Scanner,
        flow: &mut FlowMatchState,
        ctx: &PacketCtx<'_>,
        tx_id: u64,
        buffer: Buffer,
        table: &Table,
        bytes: &[u8],
        sink: &mut impl AlertSink,
    ) {
        sc.next_generation();
        let source = AlertSource::Http { tx_id, buffer };
        let mut hits = std::mem::take(&mut sc.hitbuf);
        hits.clear();
        let d = ctx.dir.index();
        let t0 = sc.prof_now();
        table
            .patterns
            .scan_buffer(bytes, |pid, end| hits.push((pid, end)));
        sc.prof_scanned(t0, Point::App(buffer), None, d, bytes.len());
        sc.stats.prefilter_hits += hits.len() as u64;
        let FlowMatchState { bits, http, .. } = flow;
        for second in [false, true] {
            let always = table.always.iter().map(|&t| (t, None));
            let found = hits
                .iter()
                .flat_map(|&(pid, end)| table.targets(pid).iter().map(move |&t| (t, Some(end))));
            for (t, end) in found.chain(always) {
                if self.has_condition(t.rule) == second {
                    let c = Cand {
                        t,
                        hit_end: end,
                        source,
                    };
                    let t0 = sc.prof_now();
                    self.buffer_candidate(sc, ctx, c, bytes, bits, Some(http), sink);
                    sc.prof_check(t0, t.rule, Point::App(buffer), None, d);
                }
            }
        }
        sc.hitbuf = hits;
    }
}

/// A candidate in a whole buffer: which (rule, group), where its fast pattern ended (if found by the prefilter),
/// and where the buffer came from.
#[derive(Clone, Copy)]
struct Cand {
    t: Target,
    hit_end: Option<usize>,
    source: AlertSource,
}

/// Whether a rule's flowbit conditions hold.
fn flowbits_ok(
    rule: &Rule,
    bits: &Option<Box<Bits>>,
    pktvars: &crate::flowvar::PacketVars,
) -> bool {
    let is = |id: u32| {
        bits.as_ref()
            .and_then(|b| b.words.get(id as usize / 64))
            .is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    };
    rule.flowbits.iter().all(|f| match f {
        Flowbit::IsSet { ids, all: true } => ids.iter().all(|&i| is(i)),
        Flowbit::IsSet { ids, all: false } => ids.iter().any(|&i| is(i)),
        Flowbit::IsNotSet { ids, all: true } => ids.iter().all(|&i| !is(i)),
        Flowbit::IsNotSet { ids, all: false } => ids.iter().any(|&i| !is(i)),
        Flowbit::Int(fi) if fi.op.is_condition() => flowint_holds(fi, bits),
        Flowbit::VarHas {
            scope,
            var,
            content,
        } => {
            let value = match scope {
                crate::flowvar::VarScope::Packet => pktvars.store.get(*var),
                _ => bits.as_ref().and_then(|b| b.vars.get(*var)),
            };
            value.is_some_and(|v| crate::flowvar::contains(v, content))
        }
        _ => true,
    })
}

/// The value of flow integer `id`, if set.
fn flowint_get(bits: &Option<Box<Bits>>, id: u32) -> Option<u32> {
    bits.as_ref()?
        .ints
        .iter()
        .find(|&&(i, _)| i == id)
        .map(|&(_, v)| v)
}

/// The right-hand side of a flowint operation: another integer reads as 0 while unset (Suricata's rule).
fn flowint_value(fi: &Flowint, bits: &Option<Box<Bits>>) -> u32 {
    match fi.value {
        FlowintValue::Const(v) => v,
        FlowintValue::Var(id) => flowint_get(bits, id).unwrap_or(0),
        FlowintValue::None => 0,
    }
}

/// Whether a flowint condition holds: a comparison is false while the integer is unset.
fn flowint_holds(fi: &Flowint, bits: &Option<Box<Bits>>) -> bool {
    let cur = flowint_get(bits, fi.id);
    let rhs = flowint_value(fi, bits);
    match (fi.op, cur) {
        (FlowintOp::IsSet, c) => c.is_some(),
        (FlowintOp::NotSet, c) => c.is_none(),
        (_, None) => false,
        (FlowintOp::Eq, Some(c)) => c == rhs,
        (FlowintOp::Ne, Some(c)) => c != rhs,
        (FlowintOp::Lt, Some(c)) => c < rhs,
        (FlowintOp::Le, Some(c)) => c <= rhs,
        (FlowintOp::Gt, Some(c)) => c > rhs,
        (FlowintOp::Ge, Some(c)) => c >= rhs,
        (FlowintOp::Set | FlowintOp::Add | FlowintOp::Sub, Some(_)) => true,
    }
}

/// Applies a matched rule's flowint action: `=` sets, `+` adds (an unset integer starts at the value), `-`
/// subtracts from a set integer only; arithmetic wraps.
fn apply_flowint(fi: &Flowint, bits: &mut Option<Box<Bits>>) {
    let rhs = flowint_value(fi, bits);
    let cur = flowint_get(bits, fi.id);
    let new = match (fi.op, cur) {
        (FlowintOp::Set, _) => rhs,
        (FlowintOp::Add, c) => c.unwrap_or(0).wrapping_add(rhs),
        (FlowintOp::Sub, Some(c)) => c.wrapping_sub(rhs),
        _ => return,
    };
    let b = bits.get_or_insert_with(Box::default);
    match b.ints.iter_mut().find(|(i, _)| *i == fi.id) {
        Some(slot) => slot.1 = new,
        None => b.ints.push((fi.id, new)),
    }
}

/// Applies a matched rule's flowbit actions (the flow's bit set is allocated on the first `set`).
fn apply_flowbits(rule: &Rule, bits: &mut Option<Box<Bits>>, names: usize, sc: &mut Scanner) {
    for f in &rule.flowbits {
        let (id, op) = match f {
            Flowbit::Capture { op, scope, var } => {
                let Some(value) = sc.pcre.staged.take(*op) else {
                    continue;
                };
                let stored = match scope {
                    crate::flowvar::VarScope::Packet => sc.pktvars.store.set(*var, value),
                    crate::flowvar::VarScope::Alert => sc.alertvars.set(*var, value),
                    crate::flowvar::VarScope::Flow => {
                        bits.get_or_insert_with(Box::default).vars.set(*var, value)
                    }
                    // Not a scope a `pcre` captures into (`VarScope::from_prefix` never names it).
                    crate::flowvar::VarScope::Entropy => continue,
                };
                if stored == crate::flowvar::Stored::Cut {
                    sc.stats.vars_cut += 1;
                }
                continue;
            }
            Flowbit::Set(i) => (*i, 0),
            Flowbit::Unset(i) => (*i, 1),
            Flowbit::Toggle(i) => (*i, 2),
            Flowbit::Int(fi) => {
                apply_flowint(fi, bits);
                continue;
            }
            _ => continue,
        };
        if bits.is_none() && op == 1 {
            continue;
        }
        let need = names.div_ceil(64).max(1);
        let b = bits.get_or_insert_with(|| {
            Box::new(Bits {
                words: vec![0u64; need],
                ..Bits::default()
            })
        });
        if b.words.len() < need {
            // Allocated by a drop before any flowbit was set.
            b.words.resize(need, 0);
        }
        if let Some(w) = b.words.get_mut(id as usize / 64) {
            let m = 1u64 << (id % 64);
            match op {
                0 => *w |= m,
                1 => *w &= !m,
                _ => *w ^= m,
            }
        }
    }
}

fn fire(sc: &mut Scanner, fired: &mut Vec<u32>, rule: u32) {
    if let Err(pos) = fired.binary_search(&rule) {
        if fired.len() < MAX_FIRED {
            fired.insert(pos, rule);
        } else {
            sc.stats.fired_overflow += 1;
        }
    }
}

#[cfg(test)]
mod app_proto_tests {
    use super::app_proto_admits;

    #[test]
    fn a_dcerpc_rule_also_applies_to_smb_flows() {
        assert!(app_proto_admits("dcerpc", "dcerpc"));
        assert!(app_proto_admits("dcerpc", "smb"));
        assert!(app_proto_admits("HTTP", "http"));
        assert!(app_proto_admits("http", "http2"));
        assert!(app_proto_admits("http1", "http"));
        assert!(!app_proto_admits("http1", "http2"));
        assert!(!app_proto_admits("http2", "http"));
        assert!(!app_proto_admits("smb", "dcerpc"));
        assert!(!app_proto_admits("dcerpc", "failed"));
        assert!(!app_proto_admits("tls", "http"));
    }
}

#[cfg(test)]
mod alert_text_tests {
    use std::sync::Arc;

    #[test]
    fn alert_text_is_the_rules_text_in_the_scanners_own_allocations() {
        let text = "alert tcp any any -> any any (msg:\"first\"; content:\"abc\"; classtype:trojan-activity; metadata:created_at 2024_01_01; sid:1;)\n\
                    alert tcp any any -> any any (msg:\"second\"; content:\"xyz\"; sid:2;)\n";
        let (set, _) = crate::RuleSet::parse(text, &crate::Vars::suricata_defaults()).unwrap();
        let mut sc = set.scanner();
        for (i, rule) in set.rules().iter().enumerate() {
            let a = sc.alert_text(rule, i as u32);
            assert_eq!((&*a.msg, &*a.category), (&*rule.msg, &*rule.category));
            assert_eq!(&*a.metadata, &*rule.metadata);
            // Not the rule's allocations, whose reference counts every worker shares.
            assert!(!Arc::ptr_eq(&a.msg, &rule.msg));
            assert!(!Arc::ptr_eq(&a.metadata, &rule.metadata));
            // The scanner's copy, made once: a second alert shares it.
            let b = sc.alert_text(rule, i as u32);
            assert!(Arc::ptr_eq(&a.msg, &b.msg) && Arc::ptr_eq(&a.category, &b.category));
        }
        assert_eq!(&*sc.alert_text(&set.rules()[0], 0).msg, "first");
        assert!(!set.rules()[0].metadata.is_empty());
    }
}
