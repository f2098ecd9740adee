//! The packet descriptor every scheduler queue carries, and the bundle space that makes flow state lock-free.

/// Number of ownership bundles. 16 bits: the CRC-16 of the paper's flow identifier is itself a bundle number.
///
/// A scheduler partitions packets into this many bundles and guarantees that no two workers hold packets of one
/// bundle at the same time (see the scheduler crate's docs); the engine shards its connection table by bundle.
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

/// Which of a [`Desc`]'s hashes a policy reads (a scheduler's `hashes_read`): a pre-stage that knows its policy
/// computes only those and leaves the others 0. Policies that do not say read all three.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DescHashes {
    pub conn: bool,
    pub rss: bool,
    pub fid: bool,
}

impl DescHashes {
    /// All three hashes.
    pub const ALL: DescHashes = DescHashes {
        conn: true,
        rss: true,
        fid: true,
    };
    /// The FID's CRC-16 alone (`dh`, `lfb` and its variants).
    pub const FID: DescHashes = DescHashes {
        conn: false,
        rss: false,
        fid: true,
    };
    /// The Toeplitz hash alone (`rss`).
    pub const RSS: DescHashes = DescHashes {
        conn: false,
        rss: true,
        fid: false,
    };
}

impl Default for DescHashes {
    fn default() -> Self {
        DescHashes::ALL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desc_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<Desc>(), 16);
    }

    #[test]
    fn a_fid_is_a_bundle_number() {
        assert_eq!(BUNDLES, usize::from(u16::MAX) + 1);
    }
}
