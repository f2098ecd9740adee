//! # The pre-scheduling stage: decode → defragment → flow key → scheduler hashes
//!
//! The one stage that turns captured packets into what a scheduler dispatches, shared by the engine's
//! single-threaded loop and streaming runtime (`flowbundle-inspect`), the bench harness's preload
//! (`flowbundle-bench`'s `prep`) and the schedulers' tests on real captures ([`load_descs`]).
//!
//! It runs where packets arrive, before any scheduler sees them (`ARCHITECTURE.md`: "defragmentation happens before
//! scheduling"): only a datagram's first fragment carries its ports, so every policy must be handed whole datagrams
//! to see their real flow. Fragments are absorbed by the [`Defragmenter`]; a datagram they complete comes out as a
//! new raw-IP packet, dispatched in place of its last fragment. Every other packet, IP or not, is dispatched as it
//! is. What a packet is keyed by ([`Keyed`]): its canonical [`FlowKey`] (all three hashes of [`FlowHasher`]), only
//! its host pair when its headers did not decode completely (the FID hash, so it lands with its hosts' other
//! packets), or nothing (not IP: all-zero hashes, one bundle, as a dispatcher that finds no FID would do).
//!
//! Three ways to use it:
//! * [`Prestage::stage`] per record: decode, defragment and hash (the streaming reader, the bench's merge);
//! * [`Prestage::stage_decoded`] per already decoded packet: defragment only (the single-threaded loop, which
//!   decodes once and inspects the same view);
//! * [`Prestage::run`] over a preloaded [`Trace`]: a [`Prepared`] with the descriptors (ids `0..n`, the order to
//!   dispatch), where each one's bytes are (the trace, or the reassembled datagrams of [`Prepared::extra`]) and,
//!   per descriptor, the previous descriptor of the same 5-tuple (which lets a workload restore per-flow order
//!   under `ph`).
//!
//! Several inputs merged in memory keep their address spaces apart by salting every hash with the input's index
//! ([`salted`]; input 0 is unsalted, so one input gives exactly [`FlowHasher`]'s hashes).
//!
//! Cost: one decode and one defragmenter check per packet (no allocation unless it is a fragment), the three hashes
//! (a few tens of ns), and in [`Prestage::run`] one hash-map update per packet for the per-flow chain.

use crate::{
    DecodeOptions, DecodeStats, Decoded, DefragConfig, DefragOutcome, DefragStats, Defragmenter,
    Fid, FlowHasher, FlowHashes, FlowKey, decode, decode_bytes,
};
use flowbundle_ingest::{LinkType, PacketRecord, Trace, TraceBuilder};
use flowbundle_types::{DecodeEvents, Desc, DescHashes};
use hashbrown::HashMap;
use std::path::PathBuf;

/// How the pre-scheduling stage decodes, defragments and hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrestageOptions {
    pub decode: DecodeOptions,
    pub defrag: DefragConfig,
    /// Key of the connection hash (`Desc::conn`); fixed so runs are reproducible.
    pub seed: u64,
}

impl Default for PrestageOptions {
    fn default() -> Self {
        PrestageOptions {
            decode: DecodeOptions::default(),
            defrag: DefragConfig::default(),
            seed: 0x666c_6f77_6275_6e64, // "flowbund"
        }
    }
}

/// What became of one already decoded packet ([`Prestage::stage_decoded`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staged<'a> {
    /// Not a fragment: inspect the packet as it is.
    Whole,
    /// A fragment completed this datagram (raw IP, `LinkType::RAW`), valid until the next call: inspect it instead.
    Reassembled(&'a [u8]),
    /// A fragment held for later, or dropped (counted in the defragmenter's stats): nothing to inspect.
    Absorbed,
}

/// What a dispatched packet is keyed by. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyed {
    /// Its canonical flow key.
    Flow(FlowKey),
    /// An IP packet whose headers did not decode completely: only its host pair (the FID hash).
    HostPair,
    /// Not IP, or IP without a flow key: all-zero hashes.
    None,
}

impl Keyed {
    /// The flow key, when there is one.
    pub fn flow(&self) -> Option<FlowKey> {
        match *self {
            Keyed::Flow(k) => Some(k),
            _ => None,
        }
    }
}

/// A packet to dispatch ([`Prestage::stage`]): its descriptor hashes, what they were computed from and, when a
/// fragment completed a datagram, the datagram to dispatch instead of the packet (valid until the next call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dispatch<'s> {
    pub hashes: FlowHashes,
    pub keyed: Keyed,
    pub datagram: Option<&'s [u8]>,
}

/// What [`Prestage::stage_noting`] made of one record.
#[derive(Debug)]
pub struct Noted<'s, 'r> {
    /// What to dispatch; `None` when the defragmenter absorbed the packet (held or dropped it).
    pub dispatch: Option<Dispatch<'s>>,
    /// The packet's own decoded view (for a fragment that completed a datagram: the fragment's).
    pub decoded: Decoded<'r>,
    /// The defragmenter's events on the packet (overlaps, oversize, ...).
    pub events: DecodeEvents,
}

/// Counters of the pre-scheduling stage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrestageStats {
    /// Packets offered, and descriptors produced.
    pub packets: u64,
    /// Packets passed over unstaged ([`Prestage::pass`]): not in `packets` nor `decode`.
    pub passed: u64,
    pub dispatched: u64,
    /// Fragments absorbed (held or dropped), and datagrams reassembled from them.
    pub absorbed: u64,
    pub reassembled: u64,
    /// Decode outcomes of the offered packets.
    pub decode: DecodeStats,
    /// Decode outcomes of the reassembled datagrams ([`Prestage::stage`] only: the single-threaded loop decodes its
    /// datagrams itself).
    pub reassembled_decode: DecodeStats,
    pub defrag: DefragStats,
}

/// Marks a [`Prepared`] reference into [`Prepared::extra`] rather than the trace.
const EXTRA: u32 = 1 << 31;
/// No previous packet of the same 5-tuple.
pub const NO_PREV: u32 = u32::MAX;

/// A preloaded trace made ready for dispatch. See the module documentation.
#[derive(Debug)]
pub struct Prepared {
    /// Descriptors in dispatch order, `id` = index.
    pub descs: Vec<Desc>,
    /// Per descriptor: trace index, or `EXTRA | index` into `extra`.
    refs: Vec<u32>,
    /// Reassembled datagrams (raw IP).
    pub extra: Trace,
    /// Per reassembled datagram: the trace index of the fragment that completed it.
    extra_src: Vec<u32>,
    /// Per descriptor: the id of the previous descriptor with the same 5-tuple, or [`NO_PREV`].
    pub prev_in_flow: Vec<u32>,
    pub stats: PrestageStats,
}

impl Prepared {
    /// The packet descriptor `id` stands for.
    pub fn record<'a>(&'a self, trace: &'a Trace, id: u32) -> Option<PacketRecord<'a>> {
        let r = *self.refs.get(id as usize)?;
        if r & EXTRA != 0 {
            self.extra.try_get((r & !EXTRA) as usize)
        } else {
            trace.try_get(r as usize)
        }
    }

    /// The trace index of the packet descriptor `id` stands for (for a reassembled datagram: its last fragment's).
    pub fn trace_index(&self, id: u32) -> Option<u32> {
        let r = *self.refs.get(id as usize)?;
        Some(if r & EXTRA != 0 {
            self.extra_src
                .get((r & !EXTRA) as usize)
                .copied()
                .unwrap_or(0)
        } else {
            r
        })
    }

    pub fn len(&self) -> usize {
        self.descs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.descs.is_empty()
    }
}

/// The pre-scheduling stage. See the module documentation.
#[derive(Debug)]
pub struct Prestage {
    decode: DecodeOptions,
    defrag: Defragmenter,
    hasher: FlowHasher,
    /// The hashes computed ([`Prestage::computing`]); all three unless told.
    hashes: DescHashes,
    stats: PrestageStats,
}

impl Default for Prestage {
    fn default() -> Self {
        Prestage::new(PrestageOptions::default())
    }
}

/// The hashes of a decoded packet and what they were computed from.
pub fn key_and_hashes(hasher: &FlowHasher, d: &Decoded<'_>) -> (FlowHashes, Keyed) {
    key_and_hashes_only(hasher, d, DescHashes::ALL)
}

/// [`key_and_hashes`], computing only the hashes `which` names (the others 0; see [`FlowHasher::hashes_only`]).
pub fn key_and_hashes_only(
    hasher: &FlowHasher,
    d: &Decoded<'_>,
    which: DescHashes,
) -> (FlowHashes, Keyed) {
    if !d.outcome.is_decoded() {
        // Still give IP packets their FID hash so they land with their hosts' other packets.
        return match Fid::from_decoded(d) {
            Some(f) => (
                FlowHashes {
                    fid: f.crc16(),
                    ..FlowHashes::default()
                },
                Keyed::HostPair,
            ),
            None => (FlowHashes::default(), Keyed::None),
        };
    }
    match FlowKey::from_decoded(d) {
        Some((k, _)) => (hasher.hashes_only(&k, which), Keyed::Flow(k)),
        None => (FlowHashes::default(), Keyed::None),
    }
}

/// The hashes of input `input` of several merged in memory: input 0 keeps its hashes, every other one is salted so
/// that identical 5-tuples of two inputs fall in different bundles (both directions of a flow still agree). Hashes
/// that are zero because the packet has no flow key ([`Keyed`]) stay zero.
pub fn salted(h: FlowHashes, keyed: &Keyed, input: u16) -> FlowHashes {
    let salt = u32::from(input).wrapping_mul(0x9e37_79b9);
    match keyed {
        Keyed::Flow(_) => FlowHashes {
            conn: h.conn ^ salt,
            rss: h.rss ^ (salt >> 16),
            fid: h.fid ^ (salt >> 16) as u16,
        },
        Keyed::HostPair => FlowHashes {
            fid: h.fid ^ (salt >> 16) as u16,
            ..FlowHashes::default()
        },
        Keyed::None => FlowHashes::default(),
    }
}

impl Prestage {
    pub fn new(opts: impl Into<PrestageOptions>) -> Self {
        let opts = opts.into();
        Prestage {
            decode: opts.decode,
            defrag: Defragmenter::new(opts.defrag),
            hasher: FlowHasher::new(opts.seed),
            hashes: DescHashes::ALL,
            stats: PrestageStats::default(),
        }
    }

    /// Computes only the hashes `which` names for each descriptor, the others 0: the ones the scheduler that will
    /// dispatch them reads (`Scheduler::hashes_read`).
    pub fn computing(mut self, which: DescHashes) -> Self {
        self.hashes = which;
        self
    }

    /// Counters so far (defragmenter counters included).
    pub fn stats(&self) -> PrestageStats {
        PrestageStats {
            defrag: self.defrag.stats(),
            ..self.stats.clone()
        }
    }

    /// The defragmenter's gauges now: datagrams in progress and bytes they hold (bounded by
    /// [`DefragConfig::max_datagrams`] and `max_bytes`).
    pub fn defrag_held(&self) -> (usize, usize) {
        (self.defrag.in_progress(), self.defrag.bytes_held())
    }

    /// The hasher (for callers that build descriptors themselves).
    pub fn hasher(&self) -> &FlowHasher {
        &self.hasher
    }

    /// A packet passed over without being staged, which [`crate::keyonly::plain_fid`] found to be no fragment (a
    /// worker skipping another's packet): the defragmenter's clock advances as staging it would have (datagrams older
    /// than the timeout expire on any packet's time), and it is counted in [`PrestageStats::passed`] instead of
    /// `packets` and `decode`.
    #[inline]
    pub fn pass(&mut self, ts_ns: u64) {
        self.stats.passed += 1;
        self.defrag.expire(ts_ns);
    }

    /// One decoded packet through the defragmenter.
    pub fn stage_decoded<'s>(&'s mut self, d: &Decoded<'_>, ts_ns: u64) -> Staged<'s> {
        self.stage_decoded_noting(d, ts_ns, &mut DecodeEvents::default())
    }

    /// [`stage_decoded`](Self::stage_decoded), noting in `events` the defragmenter's events on the packet (see
    /// [`Defragmenter::push_noting`]); they are counted with the packet's own in the decode stats.
    pub fn stage_decoded_noting<'s>(
        &'s mut self,
        d: &Decoded<'_>,
        ts_ns: u64,
        events: &mut DecodeEvents,
    ) -> Staged<'s> {
        self.stats.packets += 1;
        self.stats.decode.record(d);
        let out = self.defrag.push_noting(d, ts_ns, events);
        self.stats.decode.record_events(*events);
        match out {
            DefragOutcome::NotFragment => {
                self.stats.dispatched += 1;
                Staged::Whole
            }
            DefragOutcome::Held | DefragOutcome::Dropped(_) => {
                self.stats.absorbed += 1;
                Staged::Absorbed
            }
            DefragOutcome::Reassembled(b) => {
                self.stats.absorbed += 1;
                self.stats.reassembled += 1;
                self.stats.dispatched += 1;
                Staged::Reassembled(b)
            }
        }
    }

    /// Decodes, defragments and hashes one record: what to dispatch, or `None` when the packet was absorbed.
    pub fn stage<'s>(&'s mut self, rec: &PacketRecord<'_>) -> Option<Dispatch<'s>> {
        self.stage_keeping(rec).map(|(d, _)| d)
    }

    /// [`stage`](Self::stage), also giving back the packet's decoded view when it is dispatched as it is (not for a
    /// reassembled datagram: decode the datagram where it is kept), so a consumer need not decode it again.
    pub fn stage_keeping<'s, 'r>(
        &'s mut self,
        rec: &PacketRecord<'r>,
    ) -> Option<(Dispatch<'s>, Option<Decoded<'r>>)> {
        let s = self.stage_noting(rec);
        let keep = s.dispatch.as_ref().is_some_and(|x| x.datagram.is_none());
        let d = s.decoded;
        s.dispatch.map(|x| (x, keep.then_some(d)))
    }

    /// [`stage_keeping`](Self::stage_keeping) for a consumer that inspects fragments as packets too (as the
    /// single-threaded loop does): the packet's own decoded view whatever the defragmenter did with it, and the
    /// defragmenter's events on it.
    pub fn stage_noting<'s, 'r>(&'s mut self, rec: &PacketRecord<'r>) -> Noted<'s, 'r> {
        let d = decode(rec, &self.decode);
        self.stats.packets += 1;
        self.stats.decode.record(&d);
        let mut events = DecodeEvents::default();
        let out = self.defrag.push_noting(&d, rec.ts_ns, &mut events);
        self.stats.decode.record_events(events);
        let dispatch = match out {
            DefragOutcome::NotFragment => {
                self.stats.dispatched += 1;
                let (hashes, keyed) = key_and_hashes_only(&self.hasher, &d, self.hashes);
                Some(Dispatch {
                    hashes,
                    keyed,
                    datagram: None,
                })
            }
            DefragOutcome::Held | DefragOutcome::Dropped(_) => {
                self.stats.absorbed += 1;
                None
            }
            DefragOutcome::Reassembled(b) => {
                self.stats.absorbed += 1;
                self.stats.reassembled += 1;
                self.stats.dispatched += 1;
                let dd = decode_bytes(LinkType::RAW, b, &self.decode);
                self.stats.reassembled_decode.record(&dd);
                let (hashes, keyed) = key_and_hashes_only(&self.hasher, &dd, self.hashes);
                Some(Dispatch {
                    hashes,
                    keyed,
                    datagram: Some(b),
                })
            }
        };
        Noted {
            dispatch,
            decoded: d,
            events,
        }
    }

    /// The hashes the stage computes for a decoded packet (for a fragment dispatched on its own, inspected without
    /// a flow: its host pair's or its 3-tuple's).
    pub fn hashes_of(&self, d: &Decoded<'_>) -> FlowHashes {
        key_and_hashes_only(&self.hasher, d, self.hashes).0
    }

    /// The decode options the stage decodes with.
    pub fn decode_options(&self) -> &DecodeOptions {
        &self.decode
    }

    /// Prepares a whole preloaded trace for dispatch.
    pub fn run(&mut self, trace: &Trace) -> Prepared {
        let n = trace.len();
        let mut descs = Vec::with_capacity(n);
        let mut refs = Vec::with_capacity(n);
        let mut prev_in_flow = Vec::with_capacity(n);
        let mut extra = TraceBuilder::new();
        let mut extra_src = Vec::new();
        let mut last: HashMap<FlowKey, u32, foldhash::fast::FixedState> =
            HashMap::with_hasher(foldhash::fast::FixedState::with_seed(1));
        for (i, rec) in trace.iter().enumerate() {
            let Some(Dispatch {
                hashes: h,
                keyed,
                datagram,
            }) = self.stage(&rec)
            else {
                continue;
            };
            let id = descs.len() as u32;
            let (r, len) = match datagram {
                Some(b) => {
                    let len = u32::try_from(b.len()).unwrap_or(u32::MAX);
                    let j = extra.push(rec.ts_ns, LinkType::RAW, b, len);
                    extra_src.push(i as u32);
                    (EXTRA | j as u32, len)
                }
                None => (i as u32, rec.orig_len),
            };
            descs.push(desc(id, h, len));
            refs.push(r);
            prev_in_flow.push(match keyed {
                Keyed::Flow(k) => last.insert(k, id).unwrap_or(NO_PREV),
                _ => NO_PREV,
            });
        }
        Prepared {
            descs,
            refs,
            extra: extra.build(),
            extra_src,
            prev_in_flow,
            stats: self.stats(),
        }
    }
}

/// The descriptor of packet `id`: its hashes and its length on the wire (saturated at 65,535).
pub fn desc(id: u32, h: FlowHashes, len: u32) -> Desc {
    Desc {
        id,
        conn: h.conn,
        rss: h.rss,
        fid: h.fid,
        len: len.min(u32::from(u16::MAX)) as u16,
    }
}

/// Captures read one after another into descriptors numbered `0..`, at most `limit` (for the schedulers' tests and
/// benches on real traffic). Each file goes through its own [`Prestage`] with the default options and its hashes
/// are [`salted`] by its position, so equal 5-tuples of two files stay apart as `trace merge` keeps them apart.
pub fn load_descs(paths: &[PathBuf], limit: usize) -> Result<Vec<Desc>, flowbundle_ingest::Error> {
    let mut out = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        if out.len() >= limit {
            break;
        }
        let trace = Trace::load(p)?;
        let mut pre = Prestage::default();
        let input = u16::try_from(i).unwrap_or(u16::MAX);
        for rec in trace.iter() {
            if out.len() >= limit {
                break;
            }
            let len = rec.orig_len;
            let Some(s) = pre.stage(&rec) else { continue };
            let len = s.datagram.map_or(len, |b| b.len() as u32);
            out.push(desc(
                out.len() as u32,
                salted(s.hashes, &s.keyed, input),
                len,
            ));
        }
    }
    Ok(out)
}
