//! # Scheduler: the third stage of the data path
//!
//! A scheduler decides which worker processes each packet. Every policy in this crate implements the same small
//! [`Scheduler`] trait, and the *same objects* run in two places:
//!
//! * the parallel runtime (`flowbundle-worker`), where one dispatcher thread calls [`Scheduler::dispatch`] and N
//!   worker threads call [`Scheduler::next`] and [`Scheduler::done`] concurrently;
//! * the simulator (`flowbundle-sim`), which calls the same three methods from one thread in virtual time.
//!
//! Because the simulator drives the real policy code instead of a model of it, the two cannot drift apart.
//!
//! ## The contract
//!
//! The dispatcher sees a packet as a [`Desc`]: its number and the hashes computed when the trace was loaded (the
//! ANCS'10 harness parses flow identifiers and hashes during load, before the clock starts). A policy
//!
//! 1. places the packet with `dispatch` (or refuses with the packet back when a bounded queue is full: the caller
//!    backs off and retries, or counts a drop, depending on the harness mode);
//! 2. hands it to some worker `w` through `next(w)`;
//! 3. learns that `w` finished it through `done(w, desc)`; policies that keep a packet queued while it is processed
//!    (LFB keeps it at the head of its flow bundle queue) release it here.
//!
//! ## Bundles: why workers need no lock on flow state
//!
//! Every policy partitions packets into [`BUNDLES`] *bundles* through [`Scheduler::bundle`] and guarantees:
//!
//! > **Exclusivity.** Between `next(w)` returning a packet of bundle `b` and the matching `done(w, _)`, no other
//! > worker is given a packet of bundle `b`; and every packet of one connection belongs to one bundle.
//!
//! The inspection engine shards its connection table by bundle, so a worker that holds a packet owns that shard
//! outright and touches its flow state without a lock. The guarantee is checked in tests by an
//! [`ExclusivityChecker`](crate) that panics on the first violation.
//!
//! Per-flow processing order (packets of one connection finish in arrival order) is a separate, weaker promise that
//! every policy except `ph` makes; `ph` may reorder, and the harness measures how much.

/// Number of ownership bundles. 16 bits: the CRC-16 of the paper's flow identifier is itself a bundle number.
pub const BUNDLES: usize = 1 << 16;

/// A worker's index, `0..threads`.
pub type WorkerId = usize;

/// What a policy may know about a packet. 16 bytes, `Copy`: it travels through every queue by value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Desc {
    /// Packet number: an index into the preloaded trace (bench) or the runtime's packet ring.
    pub id: u32,
    /// Symmetric keyed hash of the canonical 5-tuple (both directions equal; fragments carry their datagram's
    /// ports). Connection-granular policies (`ph`, `flow`, `l7aff`) key on it.
    pub conn: u32,
    /// Symmetric Toeplitz hash of the 5-tuple (`rss`). Only 16 bits of it are meaningful: see
    /// `flowbundle_decode::hash::toeplitz`.
    pub rss: u32,
    /// CRC-16 of the flow identifier FID (IP pair, smaller address first): the key of `dh`, `lfb`, `lfb-affinity`.
    pub fid: u16,
    /// Bytes on the wire, saturated at 65,535; used by policies that balance by load in bytes.
    pub len: u16,
}

/// Counters a policy keeps about its own decisions (all monotone, read at the end of a run).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedStats {
    /// `ph`: packets a worker put on another worker's connection queue instead of processing.
    pub handoffs: u64,
    /// `lfb`: packets that found their flow bundle queue non-empty (they joined a bundle already in the system).
    pub bundle_joins: u64,
    /// `lfb`: dispatches where a bundle held packets of more than one flow identifier (hash collisions).
    pub collisions: u64,
    /// `lfb`, `lfb-affinity`, `rss`, `flow`: a bundle (or bucket, or flow) started on a different worker than last time.
    pub migrations: u64,
    /// `rss`: rebalancing rounds that moved at least one bucket, and buckets moved.
    pub rebalances: u64,
    pub buckets_moved: u64,
    /// Times `dispatch` refused a packet because a bounded queue was full.
    pub full: u64,
}

/// A packet scheduling policy. See the crate documentation for the contract.
///
/// `dispatch` is called from one thread only (the dispatcher); `next` and `done` for worker `w` from that worker's
/// thread only. Implementations are `Sync` and use atomics or short critical sections accordingly.
pub trait Scheduler: Send + Sync {
    /// Name as given on the command line (`dh`, `ph`, `lfb`, ...).
    fn name(&self) -> &'static str;

    /// Number of workers this instance was built for.
    fn workers(&self) -> usize;

    /// Place a packet. `Err(desc)` hands the packet back when a bounded queue is full.
    fn dispatch(&self, desc: Desc) -> Result<(), Desc>;

    /// The next packet for worker `w`, or `None` when there is nothing for it right now.
    fn next(&self, w: WorkerId) -> Option<Desc>;

    /// Worker `w` has finished processing `desc`.
    fn done(&self, w: WorkerId, desc: Desc);

    /// The ownership bundle of a packet, `< BUNDLES` (see the crate documentation).
    fn bundle(&self, desc: &Desc) -> u16;

    /// Counters about the policy's decisions so far.
    fn stats(&self) -> SchedStats;
}
