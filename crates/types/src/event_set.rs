//! A set of named events ([`DecodeEvent`](crate::DecodeEvent), [`AppLayerEvent`](crate::AppLayerEvent)): one bit
//! per event in `W` 64-bit words (one unless the kind says more). `Copy`, no allocation: 8 bytes for a list of up
//! to 64 events, 16 for up to 128 (two words rather than a `u128`, which would align every decoded packet to 16).

use core::hash::{Hash, Hasher};
use core::marker::PhantomData;

/// An event kind a set can hold: a field-less enum listed in declaration order.
pub trait EventKind: Copy + 'static {
    /// Every event, in declaration order (the variant's discriminant is its position).
    const ALL: &'static [Self];
    /// The event's position in [`EventKind::ALL`].
    fn index(self) -> usize;
}

/// A set of events of kind `E`, in `W` words (enough for `E`'s events: checked where the set is built). See the
/// module documentation.
pub struct EventSet<E, const W: usize = 1>([u64; W], PhantomData<E>);

impl<E: EventKind, const W: usize> EventSet<E, W> {
    /// No event. Every set starts from it, so a kind with more events than `W` words hold fails to build.
    pub const EMPTY: EventSet<E, W> = {
        assert!(
            E::ALL.len() <= 64 * W,
            "more events than the set's words hold"
        );
        EventSet([0; W], PhantomData)
    };

    /// The word and bit of `e`.
    #[inline]
    fn bit(e: E) -> (usize, u64) {
        let i = e.index();
        (i / 64, 1u64 << (i % 64))
    }
    #[inline]
    pub fn set(&mut self, e: E) {
        let (w, b) = Self::bit(e);
        if let Some(word) = self.0.get_mut(w) {
            *word |= b;
        }
    }
    #[inline]
    pub fn contains(self, e: E) -> bool {
        let (w, b) = Self::bit(e);
        self.0.get(w).is_some_and(|word| word & b != 0)
    }
    #[inline]
    pub fn is_empty(self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    /// Every event of `other` added.
    #[inline]
    pub fn union(mut self, other: EventSet<E, W>) -> EventSet<E, W> {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
        self
    }
    /// The events set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = E> {
        E::ALL.iter().copied().filter(move |e| self.contains(*e))
    }
}

// Written out rather than derived: a derive would demand the same trait of `E`.
impl<E, const W: usize> Clone for EventSet<E, W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, const W: usize> Copy for EventSet<E, W> {}
impl<E, const W: usize> PartialEq for EventSet<E, W> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<E, const W: usize> Eq for EventSet<E, W> {}
impl<E, const W: usize> Hash for EventSet<E, W> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}
impl<E: EventKind, const W: usize> Default for EventSet<E, W> {
    fn default() -> Self {
        Self::EMPTY
    }
}
impl<E: EventKind + core::fmt::Debug, const W: usize> core::fmt::Debug for EventSet<E, W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<E: EventKind, const W: usize> FromIterator<E> for EventSet<E, W> {
    fn from_iter<I: IntoIterator<Item = E>>(iter: I) -> Self {
        let mut s = Self::EMPTY;
        for e in iter {
            s.set(e);
        }
        s
    }
}
