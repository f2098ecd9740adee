//! # Scheduler: the third stage of the data path
//!
//! A scheduler decides which worker processes each packet. Every policy in this crate implements the same small
//! [`Scheduler`] trait, and the *same objects* run in two places:
//!
//! * the parallel runtime (`flowbundle-worker`), where one dispatcher thread calls [`Scheduler::dispatch`] and N
//!   worker threads call [`Scheduler::next`] and [`Scheduler::done`] concurrently;
//! * the simulator (`flowbundle-sim`), which calls the same methods from one thread in virtual time.
//!
//! Because the simulator drives the real policy code instead of a model of it, the two cannot drift apart. For the
//! same reason no policy blocks, spins or reads a clock inside its methods: every call returns after a bounded amount
//! of work, and where a policy needs a notion of time (idle expiry in `flow`, the rebalancing period of `rss`) it counts
//! its own `dispatch` calls. A count of dispatches is the same in the runtime, in the simulator and in raw or scaled
//! mode, so a policy's decisions depend only on the trace and on the interleaving of calls, never on machine speed.
//!
//! | policy | module | source | per-flow order | where a packet waits |
//! |---|---|---|---|---|
//! | `dh` | [`dh`] | ANCS'10 §3.1 | yes | its worker's run queue (CRC-16 of the FID mod N) |
//! | `ph` | [`ph`] | ANCS'10 §3.2 | **no** | the receive queue, or the connection queue of the CE another worker owns |
//! | `lfb` | [`lfb`] | ANCS'10 §3.3 | yes | its flow bundle queue, plus the receive queue when it opens the bundle |
//! | `l7aff` | [`l7aff`] | Guo et al. ANCS'08 §3.3 | yes | the run queue of the worker holding its connection |
//! | `flow` | [`flow`] | ANCS'10 §2.1.2 | yes | the run queue of the worker its flow is bound to |
//! | `rss` | [`rss`] | ANCS'10 §2.1.4 | yes | the run queue its indirection-table bucket points to |
//! | `lfb-affinity` | [`lfb_affinity`] | ANCS'10 §5 | yes | as `lfb`, but a returning bundle may go to its last worker |
//! | `lfb-bounded` | [`lfb_bounded`] | this crate (LFB with a latency bound) | yes | as `lfb`; a bundle held for `lfb_bound` packets goes back behind waiting work |
//!
//! ## The contract
//!
//! The dispatcher sees a packet as a [`Desc`]: its number and the hashes computed when the trace was loaded (the
//! ANCS'10 harness parses flow identifiers and hashes during load, before the clock starts). A policy
//!
//! 1. places the packet with `dispatch`, which says who may take it ([`Placed`]) so the runtime wakes only that
//!    worker, or refuses with the packet back when a bounded queue is full: the caller backs off and retries, or
//!    counts a drop, depending on the harness mode. Every policy holds at most [`SchedOptions::capacity`] packets;
//! 2. hands it to some worker `w` through `next(w)`;
//! 3. between the two, lets `w` claim the packet's bundle with `claim(w, desc)` once it has decoded it; every policy
//!    but `ph` in its late-claim mode claims inside `next` and answers `true`, and a `false` means the policy took the
//!    packet back (see [`Scheduler::claim`]);
//! 4. learns that `w` finished it through `done(w, desc)`; policies that keep a packet queued while it is processed
//!    (LFB keeps it at the head of its flow bundle queue) release it here.
//!
//! A worker holds at most one packet at a time: it calls `done` for the packet `next` gave it before calling `next`
//! again. `classified` is an optional hint from the engine (see [`Scheduler::classified`]).
//!
//! ## Bundles: why workers need no lock on flow state
//!
//! Every policy partitions packets into [`BUNDLES`] *bundles* through [`Scheduler::bundle`] and guarantees:
//!
//! > **Exclusivity.** Between `w`'s successful `claim` of a packet of bundle `b` (for every policy but late-claiming
//! > `ph`, that is `next(w)` returning it) and the matching `done(w, _)`, no other worker holds a claimed packet of
//! > bundle `b`; and every packet of one connection belongs to one bundle.
//!
//! The inspection engine shards its connection table by bundle, so a worker that holds a packet owns that shard
//! outright and touches its flow state without a lock. The guarantee is checked in tests by the `check` module's
//! `ExclusivityChecker` (behind the `testing` feature), which panics on the first violation, driven by the seeded
//! interleavings of `check::drive` and by real threads.
//!
//! For the lock-free structures (the slot arena, the FBQ table of `lfb` and `lfb-affinity`, `ph`'s handoff) it is
//! also model-checked: `tests/loom.rs`, run by `scripts/loom`, explores every interleaving of a dispatcher and two
//! workers within a preemption bound, under loom's weak-memory model, and fails when a bundle's lock-free state is
//! touched by two workers or out of happens-before order (`src/sync.rs` swaps the primitives for loom's).
//!
//! Per-flow processing order (packets of one connection finish in arrival order) is a separate, weaker promise that
//! every policy except `ph` makes; `ph` may reorder, and the harness measures how much.
//!
//! ## Changes to the original contract, and why
//!
//! * `dispatch` returns [`Placed`] instead of `()`: the runtime parks idle workers, and without knowing who can take
//!   a packet it would have to wake all of them for every packet (a futex call each). With it, a packet that joins a
//!   bundle already held wakes nobody, and a packet for one worker's queue wakes that worker only.
//! * [`Scheduler::classified`] (default: nothing) lets the engine tell `l7aff` that a connection's identification is
//!   final, the event on which the L7-filter stops giving the connection to its matching thread.
//! * [`Scheduler::in_system`] reports how many packets the policy holds, for bounded-queue tests and the simulator.
//! * [`Scheduler::claim`] (default: `true`) separates taking a packet from owning its bundle, so `ph` can model PAM's
//!   parse-then-lock window ([`SchedOptions::ph_late_claim`]) and its reordering is real rather than a preemption
//!   accident.

#[cfg(feature = "testing")]
pub mod check;
pub mod dh;
pub mod flow;
pub mod l7aff;
pub mod lfb;
pub mod lfb_affinity;
pub mod lfb_bounded;
pub mod ph;
pub mod rss;
mod slots;
mod sync;
mod util;

pub use flowbundle_types::{BUNDLES, Desc, DescHashes, PolicyShape, WorkerId};

/// Who may take a packet that `dispatch` accepted: the runtime wakes a parked worker accordingly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    /// Only this worker will be given the packet (it went to that worker's queue).
    Worker(WorkerId),
    /// Any idle worker may take it (it went to a shared receive queue).
    Any,
    /// It queued behind a packet of the same bundle that a worker holds or is about to take: that worker is awake
    /// or will be woken for the earlier packet, so nobody needs waking now.
    Joined,
}

/// Counters a policy keeps about its own decisions (all monotone, read at the end of a run).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedStats {
    /// Packets accepted by `dispatch`.
    pub dispatched: u64,
    /// `ph`: packets a worker put on another worker's connection queue instead of processing.
    pub handoffs: u64,
    /// `lfb`, `lfb-affinity`: packets that found their flow bundle queue non-empty (they joined a bundle already in
    /// the system).
    pub bundle_joins: u64,
    /// `lfb`, `lfb-affinity`: joins where the bundle's previous packet had another flow identifier (hash
    /// collisions in the FBQ table). `l7aff`, `flow`: a packet of another connection found its bundle held.
    pub collisions: u64,
    /// `lfb`, `lfb-affinity`, `rss`, `flow`, `l7aff`: a bundle (or bucket, or flow) started on a different worker than
    /// last time.
    pub migrations: u64,
    /// `rss`: rebalancing rounds that moved at least one bucket, and buckets moved.
    pub rebalances: u64,
    pub buckets_moved: u64,
    /// `flow`: flows whose binding expired after being idle, and were bound again as new flows.
    pub expirations: u64,
    /// `lfb-affinity`: returning bundles given to their last worker; and bundle heads an idle worker took from
    /// another worker's affinity queue (work stealing, so a busy last worker never strands a bundle).
    pub affinity_hits: u64,
    pub steals: u64,
    /// `lfb-bounded`: bundles a worker gave up after its bound while other bundles waited.
    pub yields: u64,
    /// `l7aff`: connections the engine reported classified (they lose their affinity once idle).
    pub classified: u64,
    /// Times `dispatch` refused a packet because a bounded queue was full.
    pub full: u64,
}

/// A packet scheduling policy. See the crate documentation for the contract.
///
/// `dispatch` is called from one thread only (the dispatcher); `next`, `done` and `classified` for worker `w` from
/// that worker's thread only. Implementations are `Sync` and use atomics or short critical sections accordingly.
/// No method blocks, spins or reads a clock. Out-of-range worker ids are ignored (`next` answers `None`).
pub trait Scheduler: Send + Sync {
    /// Name as given on the command line (`dh`, `ph`, `lfb`, ...).
    fn name(&self) -> &'static str;

    /// Number of workers this instance was built for.
    fn workers(&self) -> usize;

    /// Place a packet. `Err(desc)` hands the packet back when a bounded queue is full.
    fn dispatch(&self, desc: Desc) -> Result<Placed, Desc>;

    /// The next packet for worker `w`, or `None` when there is nothing for it right now.
    fn next(&self, w: WorkerId) -> Option<Desc>;

    /// Worker `w` has finished processing `desc`.
    fn done(&self, w: WorkerId, desc: Desc);

    /// Worker `w` has done the work that precedes touching flow state for the packet `next` just gave it (decoding
    /// it) and claims the packet's bundle. `true`: the worker now holds the packet exclusively, processes it and calls
    /// `done`. `false`: the policy took the packet back (`ph` with [`SchedOptions::ph_late_claim`] hands it to the
    /// connection queue of the worker that owns its connection); the caller must neither process it nor call `done`,
    /// and asks `next` again.
    ///
    /// Every caller of `next` must call `claim` before processing. The default answers `true`: policies that claim
    /// inside `next` have nothing left to decide.
    fn claim(&self, _w: WorkerId, _desc: &Desc) -> bool {
        true
    }

    /// True when this instance claims bundles in [`claim`](Scheduler::claim) rather than in `next`: exclusivity then
    /// holds from a successful claim to `done`, and two workers may hold unclaimed packets of one bundle (they only
    /// decode them). Read by the exclusivity checker.
    fn claims_late(&self) -> bool {
        false
    }

    /// True when the policy hands a flow's packets to workers in arrival order (every policy but `ph`).
    fn keeps_flow_order(&self) -> bool {
        true
    }

    /// What a workload must know of this policy ([`PolicyShape`]).
    fn shape(&self) -> PolicyShape {
        PolicyShape {
            workers: self.workers(),
            claims_late: self.claims_late(),
            keeps_flow_order: self.keeps_flow_order(),
        }
    }

    /// True when `dispatch` queues a packet that opens its bundle (anything placed but [`Placed::Joined`]) twice: in
    /// the bundle's own queue and, as the bundle's head, in a queue workers take from (`lfb` and its variants). The
    /// simulator charges the second enqueue; the default is one queue per packet.
    fn queues_opening_twice(&self) -> bool {
        false
    }

    /// The engine's identification of `desc`'s connection reached a final result (a protocol, or no match) while
    /// worker `w` processed it; called between `next` and `done`. Only `l7aff` uses it.
    fn classified(&self, _w: WorkerId, _desc: &Desc) {}

    /// The ownership bundle of a packet, `< BUNDLES` (see the crate documentation).
    fn bundle(&self, desc: &Desc) -> u16;

    /// Which of a descriptor's hashes this policy reads (in `dispatch`, `bundle` and anywhere else): a pre-stage
    /// computes only those. The default, all three, is right for any policy; a policy that names fewer must never
    /// read the others (they are 0).
    fn hashes_read(&self) -> DescHashes {
        DescHashes::ALL
    }

    /// Packets accepted by `dispatch` and not yet released by `done` (queued or being processed).
    fn in_system(&self) -> usize;

    /// Counters about the policy's decisions so far.
    fn stats(&self) -> SchedStats;
}

/// Tunables shared by all policies. Each policy reads the fields that concern it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedOptions {
    /// Packets a policy may hold at once, queued or being processed (all its queues together; per-worker queues get
    /// an equal share, which includes the packet the worker processes, and at least one queued packet, so the bound is
    /// `max(capacity, 2 × workers)`). `dispatch` refuses beyond it. Default 8,192: above the harness's 4,096 outstanding-packet
    /// limit, so in scaled mode the harness's drop rule, not a queue, decides drops.
    pub capacity: usize,
    /// `lfb`, `lfb-affinity`: flow bundle queues in the FBQ table (ANCS'10: 4,096, over two orders of magnitude more
    /// than workers). At most [`BUNDLES`]; a warning is logged below 100 × workers.
    pub fbq_table: usize,
    /// `lfb-affinity`: a returning bundle goes to its last worker when that worker's load (queued bundle heads plus
    /// the one it processes) is at most the least loaded worker's plus this slack. Default 0: the last worker only
    /// when it is among the least loaded (the paper's "the last or least loaded thread").
    pub affinity_slack: usize,
    /// `flow`: a flow with no packet in the system for this many dispatches is expired and bound again as new.
    pub flow_idle_dispatches: u64,
    /// `rss`: dispatches between two rebalancing rounds.
    pub rss_interval: u64,
    /// `rss`: at most this many buckets moved per round.
    pub rss_max_moves: usize,
    /// `ph`: claim the connection entry in [`Scheduler::claim`], after the worker decoded the packet, as PAM does
    /// (ANCS'10 §3.2: a thread parses L2–L4 between taking a packet from the RQ and locking its CE, which is where the
    /// paper's reordering comes from), instead of inside `next`. Default `false`, so callers that never call `claim`
    /// keep exclusivity; the bench harness turns it on.
    pub ph_late_claim: bool,
    /// `lfb-bounded`: packets of one bundle a worker finishes in a row before it gives the bundle up to waiting work.
    pub lfb_bound: usize,
}

impl Default for SchedOptions {
    fn default() -> Self {
        SchedOptions {
            capacity: 8192,
            fbq_table: 4096,
            affinity_slack: 0,
            flow_idle_dispatches: 1 << 16,
            rss_interval: 8192,
            rss_max_moves: 4,
            ph_late_claim: false,
            lfb_bound: 16,
        }
    }
}

/// Why [`build`] refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BuildError {
    #[error("unknown scheduler `{0}` (known: {known})", known = ALL.join(", "))]
    Unknown(String),
    #[error("a scheduler needs 1 to {max} workers, got {got}")]
    Workers { got: usize, max: usize },
    #[error("{what} must be between {min} and {max}, got {got}")]
    Option {
        what: &'static str,
        got: u64,
        min: u64,
        max: u64,
    },
}

/// One row per policy: its command-line name (and any accepted spelling), the type `build` makes. The source of both
/// [`ALL`] and `build`'s dispatch, so a policy `build` accepts cannot be missing from the list the tests iterate over.
macro_rules! policies {
    ($($name:literal $(| $alias:literal)* => $ty:ty),+ $(,)?) => {
        /// Every policy name [`build`] accepts, in the order the paper discusses them.
        pub const ALL: &[&str] = &[$($name),+];

        /// The name in [`ALL`] of the policy `name` spells (any accepted spelling), `None` for an unknown one.
        pub fn canonical(name: &str) -> Option<&'static str> {
            match name {
                $($name $(| $alias)* => Some($name),)+
                _ => None,
            }
        }

        /// The policy named `name` (any accepted spelling), its options already checked.
        fn construct(name: &str, workers: usize, opts: &SchedOptions) -> Option<Box<dyn Scheduler>> {
            Some(match name {
                $($name $(| $alias)* => Box::new(<$ty>::new(workers, opts)),)+
                _ => return None,
            })
        }
    };
}

policies! {
    "dh" => dh::DirectHash,
    "ph" => ph::PacketHandoff,
    "lfb" => lfb::LastFlowBundle,
    "l7aff" => l7aff::L7Affinity,
    "flow" => flow::FlowBased,
    "rss" => rss::AdaptiveRss,
    "lfb-affinity" | "lfb_affinity" => lfb_affinity::LfbAffinity,
    "lfb-bounded" | "lfb_bounded" => lfb_bounded::LfbBounded,
}

/// Most workers a policy supports (worker ids are stored in 16 bits in the tables; 1,024 is far beyond any machine
/// this lab runs on and keeps per-worker arrays small).
pub const MAX_WORKERS: usize = 1024;

/// Most packets a policy may hold (slot indices are 32-bit with one value reserved).
pub const MAX_CAPACITY: usize = 1 << 24;

/// Build a policy by its command-line name (`lfb_affinity` is accepted for `lfb-affinity`).
pub fn build(
    name: &str,
    workers: usize,
    opts: &SchedOptions,
) -> Result<Box<dyn Scheduler>, BuildError> {
    if workers == 0 || workers > MAX_WORKERS {
        return Err(BuildError::Workers {
            got: workers,
            max: MAX_WORKERS,
        });
    }
    check_range("capacity", opts.capacity as u64, 1, MAX_CAPACITY as u64)?;
    check_range("fbq_table", opts.fbq_table as u64, 1, BUNDLES as u64)?;
    check_range("rss_interval", opts.rss_interval, 1, u64::MAX)?;
    check_range("lfb_bound", opts.lfb_bound as u64, 1, u64::from(u32::MAX))?;
    check_range(
        "flow_idle_dispatches",
        opts.flow_idle_dispatches,
        1,
        u64::MAX,
    )?;
    construct(name, workers, opts).ok_or_else(|| BuildError::Unknown(name.to_string()))
}

fn check_range(what: &'static str, got: u64, min: u64, max: u64) -> Result<(), BuildError> {
    if got < min || got > max {
        return Err(BuildError::Option {
            what,
            got,
            min,
            max,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desc_is_16_bytes() {
        assert_eq!(std::mem::size_of::<Desc>(), 16);
    }

    #[test]
    fn build_knows_every_name_and_refuses_others() {
        for name in ALL {
            let s = build(name, 4, &SchedOptions::default()).unwrap();
            assert_eq!(s.name(), *name);
            assert_eq!(s.workers(), 4);
            assert_eq!(canonical(name), Some(*name));
            let underscored = name.replace('-', "_");
            if let Some(alias) = canonical(&underscored) {
                assert_eq!(alias, *name);
                assert_eq!(
                    build(&underscored, 2, &SchedOptions::default())
                        .unwrap()
                        .name(),
                    *name
                );
            }
        }
        assert_eq!(canonical("lfb_bounded"), Some("lfb-bounded"));
        assert_eq!(canonical("rr"), None);
        assert!(matches!(
            build("rr", 2, &SchedOptions::default()),
            Err(BuildError::Unknown(_))
        ));
        assert!(matches!(
            build("dh", 0, &SchedOptions::default()),
            Err(BuildError::Workers { .. })
        ));
        let bad = SchedOptions {
            fbq_table: BUNDLES + 1,
            ..SchedOptions::default()
        };
        assert!(matches!(
            build("lfb", 2, &bad),
            Err(BuildError::Option { .. })
        ));
        let bad = SchedOptions {
            capacity: 0,
            ..SchedOptions::default()
        };
        assert!(matches!(
            build("ph", 2, &bad),
            Err(BuildError::Option { .. })
        ));
    }
}
