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
//! capped ([`EngineConfig::max_flows`](crate::EngineConfig)); it has cache lines of its own, away from what the workers
//! read on every packet. Memory: an empty shard is about 48 bytes (3 MiB for the
//! 65,536 shards), plus its table, whose slots hold each flow's key and where the flow lives; a table keeps its
//! capacity until an idle sweep empties the shard and gives it back ([`crate::sweep`]).
//!
//! ## Where a flow lives: one store for every worker
//! The flows themselves are kept in one store the workers share ([`FlowStore`]), not in the shards' tables: slots
//! in blocks of [`STORE_BLOCK`] flows, a slot given back when its flow ends and taken again, most recently freed
//! first, by the next flow created on any worker. Its blocks are never given back until the table goes; the store
//! grows only when every slot it has holds a live flow, so it never holds more slots than the most flows ever
//! tracked at once, whichever worker created them. Taking and giving back a slot takes the store's lock, once per
//! flow, never per packet.
//!
//! Kept in the tables, the flows (about 600 bytes each, in tables that double as their shard grows) came from the
//! allocator's arena of the worker that created the flow or grew its shard. Under a scheduler that hands a bundle to
//! whichever worker is free (`lfb` with a reader thread) which worker that is follows the timing, and each worker's
//! arena keeps what it held at its own peak: the sum of those peaks grew with the input's length (10.6 → 13.1 MB of
//! live bytes from the merged nDPI trace to ten times it) while the peak of their sum did not (see `BENCHMARKS.md`).
//! In the store the flows' memory follows how many flows are alive, not which worker touched them.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::ptr::NonNull;
#[cfg(debug_assertions)]
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

use crossbeam::utils::CachePadded;
use flowbundle_decode::FlowKey;
use flowbundle_types::{BUNDLES, BundleToken};
use hashbrown::HashMap;

use crate::flow::Flow;

/// The flows of one bundle: each key with its flow's slot in the [`FlowStore`].
type ShardMap = HashMap<FlowKey, FlowSlot, foldhash::fast::FixedState>;

/// Flows a block of the [`FlowStore`] holds.
pub const STORE_BLOCK: usize = 256;

/// Where one flow lives in the [`FlowStore`]: owned by the shard's table entry that holds it, as a `Box` would be.
struct FlowSlot {
    flow: NonNull<Flow>,
    index: u32,
}

// SAFETY: a slot is owned by one table entry, as a `Box<Flow>` is; its flow is reached only through that entry.
unsafe impl Send for FlowSlot {}

/// The flows of every shard, in slots shared by the workers (see the module documentation).
struct FlowStore {
    inner: Mutex<StoreSlots>,
}

struct StoreSlots {
    /// Blocks of [`STORE_BLOCK`] flows each, never moved or freed before the store.
    blocks: Vec<NonNull<Flow>>,
    /// Slots given back, the most recently freed last.
    free: Vec<u32>,
    /// Slots ever handed out: slot `n` is in block `n / STORE_BLOCK`.
    used: u32,
}

// SAFETY: the blocks are plain memory; who may use a slot is decided under the lock.
unsafe impl Send for StoreSlots {}

impl FlowStore {
    fn new() -> Self {
        FlowStore {
            inner: Mutex::new(StoreSlots {
                blocks: Vec::new(),
                free: Vec::new(),
                used: 0,
            }),
        }
    }

    fn block_layout() -> Layout {
        Layout::array::<Flow>(STORE_BLOCK).expect("a block of flows fits in memory")
    }

    /// Moves `flow` into a slot: a freed one if there is one, else the next never used.
    fn put(&self, flow: Flow) -> FlowSlot {
        let (at, index) = {
            let mut s = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            let index = match s.free.pop() {
                Some(i) => i,
                None => {
                    let i = s.used;
                    if i as usize == s.blocks.len() * STORE_BLOCK {
                        let layout = Self::block_layout();
                        // SAFETY: the layout has a non-zero size (a flow is not zero-sized).
                        let block = unsafe { std::alloc::alloc(layout) }.cast::<Flow>();
                        let Some(block) = NonNull::new(block) else {
                            std::alloc::handle_alloc_error(layout)
                        };
                        s.blocks.push(block);
                    }
                    s.used = i.checked_add(1).expect("fewer than 2^32 flows at once");
                    i
                }
            };
            let i = index as usize;
            // SAFETY: slot `i` lies in block `i / STORE_BLOCK`, allocated above or before for `STORE_BLOCK` flows.
            let at = unsafe { s.blocks[i / STORE_BLOCK].add(i % STORE_BLOCK) };
            (at, index)
        };
        // SAFETY: the slot is free (popped from the free list or never used) and now ours alone.
        unsafe { at.write(flow) };
        FlowSlot { flow: at, index }
    }

    /// Moves the flow out of `slot` and gives the slot back.
    fn take(&self, slot: FlowSlot) -> Flow {
        // SAFETY: the slot holds a flow (written by `put`) and was owned by the table entry that gave it here.
        let flow = unsafe { slot.flow.read() };
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .free
            .push(slot.index);
        flow
    }

    /// Slots the store has memory for (blocks × [`STORE_BLOCK`]).
    fn slots(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .blocks
            .len()
            * STORE_BLOCK
    }
}

impl Drop for FlowStore {
    fn drop(&mut self) {
        let s = self.inner.get_mut().unwrap_or_else(PoisonError::into_inner);
        for b in s.blocks.drain(..) {
            // SAFETY: allocated by `put` with this layout; the flows in it were dropped or moved out by the table.
            unsafe { std::alloc::dealloc(b.as_ptr().cast(), Self::block_layout()) };
        }
    }
}

struct Shard {
    map: UnsafeCell<ShardMap>,
    #[cfg(debug_assertions)]
    owned: AtomicBool,
}

/// The connection table: [`BUNDLES`] shards and a global flow count. See the module documentation.
pub struct FlowTable {
    shards: Box<[Shard]>,
    store: CachePadded<FlowStore>,
    counts: CachePadded<Counts>,
    cap: usize,
}

/// The flow count and its peak, written by every worker as it creates and ends flows.
struct Counts {
    count: AtomicUsize,
    peak: AtomicUsize,
}

// SAFETY: shards are only reached through `shard()`, whose contract gives one thread at a time each shard; the
// counters are atomics.
unsafe impl Sync for FlowTable {}

/// Exclusive access to one shard (see [`FlowTable::shard`]).
pub(crate) struct ShardGuard<'t> {
    map: &'t mut ShardMap,
    store: &'t FlowStore,
    #[cfg(debug_assertions)]
    owned: &'t AtomicBool,
}

impl ShardGuard<'_> {
    /// The flow with `key`.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: &FlowKey) -> Option<&mut Flow> {
        // SAFETY: the entry owns its slot, and the guard is this shard's one user.
        self.map.get_mut(key).map(|s| unsafe { s.flow.as_mut() })
    }

    /// Every flow of the shard with its key.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&FlowKey, &Flow)> {
        // SAFETY: as in `get_mut`.
        self.map
            .iter()
            .map(|(k, s)| (k, unsafe { s.flow.as_ref() }))
    }

    /// Files `flow` under `key` (replacing a flow filed there, which is dropped) and returns it in place.
    pub(crate) fn insert(&mut self, key: FlowKey, flow: Flow) -> &mut Flow {
        let slot = match self.map.entry(key) {
            hashbrown::hash_map::Entry::Occupied(o) => {
                let s = o.into_mut();
                // SAFETY: as in `get_mut`; the assignment drops the flow the slot held.
                unsafe { *s.flow.as_mut() = flow };
                s
            }
            hashbrown::hash_map::Entry::Vacant(v) => v.insert(self.store.put(flow)),
        };
        // SAFETY: as in `get_mut`.
        unsafe { slot.flow.as_mut() }
    }

    /// Takes the flow with `key` out of the shard (its slot goes back to the store).
    pub(crate) fn remove(&mut self, key: &FlowKey) -> Option<Flow> {
        let slot = self.map.remove(key)?;
        Some(self.store.take(slot))
    }

    /// Takes every flow out of the shard.
    pub(crate) fn drain(&mut self) -> Vec<Flow> {
        let store = self.store;
        self.map.drain().map(|(_, s)| store.take(s)).collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Gives back the table's spare room (all of it when the shard is empty).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.map.shrink_to_fit();
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
            store: CachePadded::new(FlowStore::new()),
            counts: CachePadded::new(Counts {
                count: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
            }),
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
            store: &self.store,
            #[cfg(debug_assertions)]
            owned: &s.owned,
        }
    }

    /// Entries the shards' tables have room for, all shards together, and the flow slots the store has memory for.
    pub(crate) fn slots(&mut self) -> (usize, usize) {
        let entries = self
            .shards
            .iter_mut()
            .map(|s| s.map.get_mut().capacity())
            .sum();
        (entries, self.store.slots())
    }

    /// Takes a slot for a new flow; false when the table is full.
    ///
    /// One count for every worker, so the cap is one budget however many workers create flows. A compare-and-swap
    /// rather than an add taken back when over the cap: with the add, a worker refused at the cap left the count one
    /// too high for a moment, and another worker creating a flow then (while a third ended one) was refused with
    /// room left; here a flow is refused only when the table held the cap at that instant. Once per new flow, never
    /// per packet.
    pub(crate) fn try_add(&self) -> bool {
        let c = &*self.counts;
        let mut before = c.count.load(Relaxed);
        loop {
            if before >= self.cap {
                return false;
            }
            match c
                .count
                .compare_exchange_weak(before, before + 1, Relaxed, Relaxed)
            {
                Ok(_) => break,
                Err(now) => before = now,
            }
        }
        // Written only when it rises (a `fetch_max` writes the line whatever the value).
        if before + 1 > c.peak.load(Relaxed) {
            c.peak.fetch_max(before + 1, Relaxed);
        }
        true
    }

    /// Gives back a flow's slot.
    pub(crate) fn remove_one(&self) {
        self.counts.count.fetch_sub(1, Relaxed);
    }

    /// Flows tracked now.
    pub fn len(&self) -> usize {
        self.counts.count.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most flows ever tracked at once.
    pub fn peak(&self) -> usize {
        self.counts.peak.load(Relaxed)
    }

    /// The cap.
    pub fn capacity(&self) -> usize {
        self.cap
    }
}

impl Drop for FlowTable {
    fn drop(&mut self) {
        // The flows still filed are dropped in their slots before the store frees its blocks.
        for shard in self.shards.iter_mut() {
            for (_, slot) in shard.map.get_mut().drain() {
                // SAFETY: the entry owned its slot, which holds a flow; nothing reaches it after this.
                unsafe { slot.flow.drop_in_place() };
            }
        }
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
