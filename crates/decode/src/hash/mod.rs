//! # Flow hashes: CRC-16 of the FID, Toeplitz (RSS), and a keyed hash for tables
//!
//! Three hashes, because the schedulers compared in the lab each use the one their origin used:
//!
//! | hash | input | used by | cost (see `benches/decode.rs`) |
//! |---|---|---|---|
//! | [`crc16`] (CRC-16/IBM-3740, "CCITT-FALSE") | FID: IP pair, smaller first | `dh`, `lfb`, `lfb-affinity` (ANCS'10 §3) | table-driven, ~1 ns/byte |
//! | [`Toeplitz`] with [`SYMMETRIC_KEY`] ([`SymmetricToeplitz`]) | IPs + ports (RSS input order) | `rss`: what a NIC with symmetric RSS computes | XOR-fold + 2 lookups, ~2 ns |
//! | [`ConnHasher`] (foldhash, keyed) | canonical [`FlowKey`] | `ph`, `flow`, `l7aff`, table indexing | a few ns |
//!
//! [`FlowHasher::hashes`] computes all three for a key: the `conn`, `rss` and `fid` fields of the scheduler's
//! `Desc`.

mod crc16;
mod keyed;
mod toeplitz;

pub use crc16::{CRC16, crc16};
pub use keyed::ConnHasher;
pub use toeplitz::{
    MICROSOFT_KEY, SYMMETRIC_KEY, SymmetricToeplitz, Toeplitz, rss_input, toeplitz_reference,
};

use crate::flow::FlowKey;
use flowbundle_types::DescHashes;

/// The three flow hashes of one packet (the hash fields of `flowbundle_scheduler::Desc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlowHashes {
    /// Symmetric keyed hash of the canonical 5-tuple (low 32 bits of [`ConnHasher::hash`]).
    pub conn: u32,
    /// Symmetric Toeplitz hash of the 5-tuple (only 16 bits of entropy, see [`Toeplitz`]).
    pub rss: u32,
    /// CRC-16 of the FID.
    pub fid: u16,
}

/// Everything needed to hash flows: the keyed hasher and the symmetric Toeplitz tables (built once, 2 KiB).
#[derive(Debug, Clone)]
pub struct FlowHasher {
    conn: ConnHasher,
    rss: SymmetricToeplitz,
}

impl FlowHasher {
    /// A hasher whose `conn` hash is keyed with `seed` (fix it for reproducible experiments).
    pub fn new(seed: u64) -> Self {
        FlowHasher {
            conn: ConnHasher::new(seed),
            rss: SymmetricToeplitz::new(),
        }
    }

    /// The three hashes of a flow key. Symmetric by construction: both directions give the same values.
    #[inline]
    pub fn hashes(&self, key: &FlowKey) -> FlowHashes {
        self.hashes_only(key, DescHashes::ALL)
    }

    /// The hashes of a flow key that `which` names, the others 0: a pre-stage computes only what its scheduler
    /// reads (the three together were the largest single cost of the streaming reader thread, 4% of a parallel
    /// run's CPU on the merged nDPI trace without rules).
    #[inline]
    pub fn hashes_only(&self, key: &FlowKey, which: DescHashes) -> FlowHashes {
        let mut h = FlowHashes::default();
        if which.conn {
            h.conn = self.conn.hash32(key);
        }
        if which.fid {
            h.fid = key.fid().crc16();
        }
        if !which.rss {
            return h;
        }
        // The RSS input straight from the key's bytes (lo endpoint first: the symmetric key makes the order moot).
        let mut input = [0u8; 36];
        let mut n = if key.v6 {
            input[..16].copy_from_slice(&key.lo_addr);
            input[16..32].copy_from_slice(&key.hi_addr);
            32
        } else {
            input[..4].copy_from_slice(&key.lo_addr[..4]);
            input[4..8].copy_from_slice(&key.hi_addr[..4]);
            8
        };
        if has_ports(key) {
            input[n..n + 2].copy_from_slice(&key.lo_port.to_be_bytes());
            input[n + 2..n + 4].copy_from_slice(&key.hi_port.to_be_bytes());
            n += 4;
        }
        h.rss = self.rss.hash(&input[..n]);
        h
    }

    /// The hashes of a decoded packet's flow (`None` without an IP header). Non-first fragments have no ports
    /// here: key them through [`FlowKey::from_decoded_with`] or defragment first, then call [`FlowHasher::hashes`].
    #[inline]
    pub fn hashes_for(&self, d: &crate::Decoded<'_>) -> Option<FlowHashes> {
        FlowKey::from_decoded(d).map(|(k, _)| self.hashes(&k))
    }

    pub fn conn_hasher(&self) -> &ConnHasher {
        &self.conn
    }

    pub fn toeplitz(&self) -> &SymmetricToeplitz {
        &self.rss
    }
}

/// RSS hashes ports only for TCP and UDP (and NICs do the same for SCTP on some models; we include it).
fn has_ports(key: &FlowKey) -> bool {
    matches!(key.proto, 6 | 17 | 132)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    #[test]
    fn flow_hashes_are_symmetric() {
        let h = FlowHasher::new(7);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "192.168.1.20".parse().unwrap();
        let (k1, d1) = FlowKey::new(a, 1234, b, 80, 6);
        let (k2, d2) = FlowKey::new(b, 80, a, 1234, 6);
        assert_eq!(k1, k2);
        assert_ne!(d1, d2);
        let x = h.hashes(&k1);
        assert_eq!(x, h.hashes(&k2));
        // The rss field equals a direct symmetric Toeplitz of the packet's own (src, dst, sport, dport) order.
        let (inp, n) = rss_input(b, a, 80, 1234, true);
        assert_eq!(x.rss, Toeplitz::new(&SYMMETRIC_KEY).hash(&inp[..n]));
        assert_eq!(x.fid, crate::flow::Fid::new(b, a).crc16());
    }

    #[test]
    fn hashes_only_computes_the_named_hashes_and_leaves_the_others_zero() {
        let h = FlowHasher::new(7);
        let (k, _) = FlowKey::new(
            "10.0.0.1".parse().unwrap(),
            1234,
            "192.168.1.20".parse().unwrap(),
            80,
            6,
        );
        let all = h.hashes(&k);
        assert!(all.conn != 0 && all.rss != 0 && all.fid != 0);
        let fid = h.hashes_only(&k, DescHashes::FID);
        assert_eq!(
            fid,
            FlowHashes {
                fid: all.fid,
                ..FlowHashes::default()
            }
        );
        let rss = h.hashes_only(&k, DescHashes::RSS);
        assert_eq!(
            rss,
            FlowHashes {
                rss: all.rss,
                ..FlowHashes::default()
            }
        );
        assert_eq!(h.hashes_only(&k, DescHashes::ALL), all);
    }
}
