//! The proof that a worker holds a bundle, as a type the compiler checks.
//!
//! The engine's flow table is sharded by bundle and its shards take no lock: a worker may touch shard `b` only while
//! the scheduler guarantees that no other worker holds a packet of bundle `b` (the exclusivity contract in the
//! scheduler crate). That guarantee is a property of the runtime's calls (`next`/`claim` ... `done`), which safe code
//! elsewhere cannot see. So the right to touch a shard is a value, a [`BundleToken`], that only code which knows it
//! holds the bundle can create, through an `unsafe` constructor whose contract is written down. Safe functions take
//! `&BundleToken`: a caller without one cannot reach flow state, and a token cannot leave its thread (`!Send`,
//! `!Sync`) nor be copied.

use std::marker::PhantomData;

/// The calling thread holds bundle [`BundleToken::bundle`] exclusively. See the module documentation.
#[derive(Debug)]
pub struct BundleToken {
    bundle: u16,
    /// Neither `Send` nor `Sync`: the token is valid on the thread the runtime created it on, and nowhere else.
    _this_thread: PhantomData<*const ()>,
}

impl BundleToken {
    /// A token for `bundle`.
    ///
    /// # Safety
    /// Until the token is dropped, no other thread holds a token for the same bundle, nor touches state sharded by
    /// that bundle in any other way. The parallel runtime mints one between a scheduler's successful `claim` of a
    /// packet and the matching `done` (the scheduler's exclusivity guarantee); single-threaded code that holds
    /// `&mut` of the sharded state may mint one for any bundle.
    #[inline]
    pub unsafe fn assume_held(bundle: u16) -> Self {
        BundleToken {
            bundle,
            _this_thread: PhantomData,
        }
    }

    /// The bundle this token proves is held.
    #[inline]
    pub fn bundle(&self) -> u16 {
        self.bundle
    }
}

/// What a workload must know of the policy that feeds it, given by the runtime (the engine does not know
/// schedulers; it meets them through this and [`crate::Desc`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyShape {
    /// Workers the policy hands packets to.
    pub workers: usize,
    /// The policy gives a worker a packet before the worker owns its bundle (`ph`'s late claim), so
    /// [`crate::Workload::prepare`] runs between the two.
    pub claims_late: bool,
    /// The policy hands a flow's packets to workers in arrival order (every policy but `ph`).
    pub keeps_flow_order: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_bundle() {
        // SAFETY: no state is sharded in this test.
        let t = unsafe { BundleToken::assume_held(7) };
        assert_eq!(t.bundle(), 7);
    }
}
