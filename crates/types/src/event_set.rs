//! A set of named events ([`DecodeEvent`](crate::DecodeEvent), [`AppLayerEvent`](crate::AppLayerEvent)): one bit
//! per event in one `u64`. `Copy`, 8 bytes, no allocation (8 bytes in every decoded packet: a `u128` would align
//! `Decoded` to 16 and cost copies; widen it to two words when a list outgrows 64).

use core::hash::{Hash, Hasher};
use core::marker::PhantomData;

/// An event kind a set can hold: a field-less enum with at most 64 variants, listed in declaration order.
pub trait EventKind: Copy + 'static {
    /// Every event, in declaration order (the variant's discriminant is its position).
    const ALL: &'static [Self];
    /// The event's position in [`EventKind::ALL`].
    fn index(self) -> usize;
}

/// A set of events of kind `E`. See the module documentation.
pub struct EventSet<E>(u64, PhantomData<E>);

impl<E: EventKind> EventSet<E> {
    pub const EMPTY: EventSet<E> = EventSet(0, PhantomData);

    #[inline]
    fn bit(e: E) -> u64 {
        1u64 << e.index()
    }
    #[inline]
    pub fn set(&mut self, e: E) {
        self.0 |= Self::bit(e);
    }
    #[inline]
    pub fn contains(self, e: E) -> bool {
        self.0 & Self::bit(e) != 0
    }
    #[inline]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// Every event of `other` added.
    #[inline]
    pub fn union(self, other: EventSet<E>) -> EventSet<E> {
        EventSet(self.0 | other.0, PhantomData)
    }
    /// The events set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = E> {
        E::ALL.iter().copied().filter(move |e| self.contains(*e))
    }
}

// Written out rather than derived: a derive would demand the same trait of `E`.
impl<E> Clone for EventSet<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for EventSet<E> {}
impl<E> PartialEq for EventSet<E> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<E> Eq for EventSet<E> {}
impl<E> Hash for EventSet<E> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}
impl<E> Default for EventSet<E> {
    fn default() -> Self {
        EventSet(0, PhantomData)
    }
}
impl<E: EventKind + core::fmt::Debug> core::fmt::Debug for EventSet<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<E: EventKind> FromIterator<E> for EventSet<E> {
    fn from_iter<I: IntoIterator<Item = E>>(iter: I) -> Self {
        let mut s = Self::EMPTY;
        for e in iter {
            s.set(e);
        }
        s
    }
}
