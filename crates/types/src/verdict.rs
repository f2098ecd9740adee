//! Where an identification stands: the three-valued answer every identifier (built-in detectors, L7-filter
//! signatures) gives about a flow.

/// Where an identification of a flow stands (L7-filter's NO_MATCH_YET / MATCHED / NO_MATCH; the protocol registry's
/// pending / identified / unknown). `T` is what a decision names: a protocol and its evidence, a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Verdict<T> {
    /// Still looking: feed more of the flow.
    Pending,
    /// Decided. Final.
    Matched(T),
    /// Nothing can match any more (every candidate declined, or the budget is spent). Final.
    NoMatch,
}

impl<T> Verdict<T> {
    /// True once the verdict can no longer change.
    #[inline]
    pub fn is_final(&self) -> bool {
        !matches!(self, Verdict::Pending)
    }

    /// The decision, if any.
    #[inline]
    pub fn matched(&self) -> Option<&T> {
        match self {
            Verdict::Matched(t) => Some(t),
            _ => None,
        }
    }
}
