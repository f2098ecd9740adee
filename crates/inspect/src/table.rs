//! # The connection table, sharded by bundle
//!
//! Every scheduler partitions packets into [`BUNDLES`] bundles and promises that no two workers hold packets of one
//! bundle at the same time, and that all packets of a connection fall in one bundle (see the scheduler crate). The
//! table is therefore one small hash map per bundle, and the worker holding a packet of bundle `b` reaches shard `b`
//! through an [`UnsafeCell`] with no lock and no atomic read-modify-write on the packet path: the exclusivity the
//! scheduler already pays for is the lock.
//!
//! ## The safety contract
//! [`FlowTable::shard`] is `unsafe`: its caller promises that no other thread uses shard `b` until the returned
//! guard is dropped. The parallel runtime keeps that promise by calling the engine only between a policy's `next` (or
//! `claim`) and `done` for a packet of bundle `b`; the single-threaded path keeps it by holding `&mut` of the engine.
//! Debug and test builds check the promise: each shard has an owner flag set with a compare-and-swap when a guard is
//! taken and cleared when it is dropped, and a second taker panics naming the bundle. Release builds compile the flag
//! away.
//!
//! ## Capacity
//! The flow count is global (one atomic counter, touched when a flow is created or removed, never per packet) and
//! capped ([`EngineConfig::max_flows`](crate::EngineConfig)). Memory: an empty shard is about 48 bytes (3 MiB for the
//! 65,536 shards), plus its table, whose slots hold the flows themselves; a table keeps its capacity until an idle
//! sweep empties the shard and gives it back ([`crate::sweep`]).

use std::cell::UnsafeCell;
#[cfg(debug_assertions)]
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use flowbundle_decode::FlowKey;
use flowbundle_types::{BUNDLES, BundleToken};
use hashbrown::HashMap;

use crate::flow::Flow;

/// The flows of one bundle.
pub(crate) type ShardMap = HashMap<FlowKey, Flow, foldhash::fast::FixedState>;

struct Shard {
    map: UnsafeCell<ShardMap>,
    #[cfg(debug_assertions)]
    owned: AtomicBool,
}

/// The connection table: [`BUNDLES`] shards and a global flow count. See the module documentation.
pub struct FlowTable {
    shards: Box<[Shard]>,
    count: AtomicUsize,
    peak: AtomicUsize,
    cap: usize,
}

// SAFETY: shards are only reached through `shard()`, whose contract gives one thread at a time each shard; the
// counters are atomics.
unsafe impl Sync for FlowTable {}

/// Exclusive access to one shard (see [`FlowTable::shard`]).
pub(crate) struct ShardGuard<'t> {
    map: &'t mut ShardMap,
    #[cfg(debug_assertions)]
    owned: &'t AtomicBool,
}

impl std::ops::Deref for ShardGuard<'_> {
    type Target = ShardMap;
    fn deref(&self) -> &ShardMap {
        self.map
    }
}

impl std::ops::DerefMut for ShardGuard<'_> {
    fn deref_mut(&mut self) -> &mut ShardMap {
        self.map
    }
}

#[cfg(debug_assertions)]
impl Drop for ShardGuard<'_> {
    fn drop(&mut self) {
        self.owned
            .store(false, std::sync::atomic::Ordering::Release);
    }
}

impl FlowTable {
    /// An empty table for at most `cap` flows.
    pub fn new(cap: usize) -> Self {
        let hasher = foldhash::fast::FixedState::with_seed(0x7ab1e5);
        FlowTable {
            shards: (0..BUNDLES)
                .map(|_| Shard {
                    map: UnsafeCell::new(HashMap::with_hasher(hasher.clone())),
                    #[cfg(debug_assertions)]
                    owned: AtomicBool::new(false),
                })
                .collect(),
            count: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            cap: cap.max(1),
        }
    }

    /// Exclusive access to the shard of the bundle `held` proves this thread holds. The guard borrows the token, so
    /// it cannot outlive the proof. Debug builds panic when the token's minting promise was broken (two threads in
    /// one shard).
    pub(crate) fn shard<'t>(&'t self, held: &'t mut BundleToken) -> ShardGuard<'t> {
        let bundle = held.bundle();
        let s = &self.shards[usize::from(bundle)];
        #[cfg(debug_assertions)]
        if s.owned
            .compare_exchange(
                false,
                true,
                std::sync::atomic::Ordering::Acquire,
                std::sync::atomic::Ordering::Relaxed,
            )
            .is_err()
        {
            panic!(
                "bundle {bundle}: two workers inside one shard at once (scheduler exclusivity broken)"
            );
        }
        ShardGuard {
            // SAFETY: the token's holder has this shard to itself while the token lives (its `assume_held`
            // contract), and the guard cannot outlive the borrow of the token.
            map: unsafe { &mut *s.map.get() },
            #[cfg(debug_assertions)]
            owned: &s.owned,
        }
    }

    /// Exclusive access to shard `bundle` through `&mut self` (single-threaded paths, end of input).
    pub(crate) fn shard_mut(&mut self, bundle: u16) -> &mut ShardMap {
        self.shards[usize::from(bundle)].map.get_mut()
    }

    /// Takes a slot for a new flow; false when the table is full.
    pub(crate) fn try_add(&self) -> bool {
        let before = self.count.fetch_add(1, Relaxed);
        if before >= self.cap {
            self.count.fetch_sub(1, Relaxed);
            return false;
        }
        self.peak.fetch_max(before + 1, Relaxed);
        true
    }

    /// Gives back a flow's slot.
    pub(crate) fn remove_one(&self) {
        self.count.fetch_sub(1, Relaxed);
    }

    /// Flows tracked now.
    pub fn len(&self) -> usize {
        self.count.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most flows ever tracked at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Relaxed)
    }

    /// The cap.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Number of shards.
    pub(crate) fn shards(&self) -> usize {
        self.shards.len()
    }
}

impl std::fmt::Debug for FlowTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowTable")
            .field("flows", &self.len())
            .field("cap", &self.cap)
            .finish()
    }
}
