//! SN3 and prefix-preserving anonymization: keyed maps that need no table.
//!
//! * **SN3** (Verdú thesis §3.3.1: "random addresses for every unique real IP address") is a keyed
//!   pseudo-random *permutation*: IPv4 addresses go through an 8-round Feistel network over two 16-bit halves
//!   whose round function is AES-128 under the key (Luby–Rackoff: four rounds already make a pseudo-random
//!   permutation), IPv6 addresses through AES-128 itself (a permutation of 128-bit blocks). Being a permutation,
//!   it needs no table and can never map two addresses to one, whatever the trace size; the same key gives the same
//!   addresses in every run and every file.
//! * **Prefix-preserving** is Crypto-PAn (Xu, Fan, Ammar, Moon, ICNP 2002), bit for bit as the reference
//!   implementation: a 32-byte key, AES-128 under its first half, a pad that is the encryption of its second half;
//!   output bit `i` is input bit `i` XOR the first bit of `AES(input bits [0, i) ‖ pad bits [i, 128))`. Two
//!   addresses that share a `k`-bit prefix share exactly a `k`-bit prefix after mapping. IPv6 uses the same
//!   construction over 128 bits (as the common Go and C implementations do). It costs 32 AES blocks per new IPv4
//!   address and 128 per IPv6 address, so results are kept in a small direct-mapped cache.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use aes::Aes128;
use aes::cipher::{BlockCipherEncrypt, KeyInit};

use crate::rewrite::{AddressMap, ToolError};

/// Entries of the direct-mapped result cache (a few MiB; traces re-use few addresses many times).
const CACHE: usize = 1 << 15;

/// A direct-mapped cache from 128-bit inputs to outputs, keyed separately per family.
#[derive(Clone)]
struct Cache {
    slots: Vec<(u128, u128, u8)>,
}

impl Cache {
    fn new() -> Cache {
        Cache {
            slots: vec![(0, 0, 0); CACHE],
        }
    }
    fn index(k: u128, fam: u8) -> usize {
        let h = (k as u64 ^ (k >> 64) as u64 ^ u64::from(fam)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 49) as usize % CACHE
    }
    fn get(&self, k: u128, fam: u8) -> Option<u128> {
        self.slots
            .get(Self::index(k, fam))
            .and_then(|&(kk, v, f)| (f == fam && kk == k).then_some(v))
    }
    fn put(&mut self, k: u128, fam: u8, v: u128) {
        if let Some(s) = self.slots.get_mut(Self::index(k, fam)) {
            *s = (k, v, fam);
        }
    }
}

fn aes(c: &Aes128, block: [u8; 16]) -> [u8; 16] {
    let mut b = aes::Block::from(block);
    c.encrypt_block(&mut b);
    b.into()
}

/// SN3: a keyed permutation of each address family.
#[derive(Clone)]
pub struct Sn3 {
    cipher: Aes128,
    cache: Cache,
}

impl std::fmt::Debug for Sn3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sn3 { .. }")
    }
}

impl Sn3 {
    /// SN3 under a 16-byte key.
    pub fn new(key: [u8; 16]) -> Sn3 {
        Sn3 {
            cipher: Aes128::new(&key.into()),
            cache: Cache::new(),
        }
    }

    /// The permutation of IPv4 addresses.
    pub fn v4(&self, a: Ipv4Addr) -> Ipv4Addr {
        let x = u32::from(a);
        let (mut l, mut r) = ((x >> 16) as u16, x as u16);
        for round in 0u8..8 {
            let mut block = [0u8; 16];
            block[0] = round;
            block[1..3].copy_from_slice(&r.to_be_bytes());
            // Domain separation from the IPv6 permutation, which encrypts whole addresses.
            block[15] = 0x34;
            let f = aes(&self.cipher, block);
            let next = l ^ u16::from_be_bytes([f[0], f[1]]);
            l = r;
            r = next;
        }
        Ipv4Addr::from((u32::from(l) << 16) | u32::from(r))
    }

    /// The permutation of IPv6 addresses.
    pub fn v6(&self, a: Ipv6Addr) -> Ipv6Addr {
        Ipv6Addr::from(aes(&self.cipher, a.octets()))
    }
}

impl AddressMap for Sn3 {
    fn map(&mut self, addr: IpAddr) -> Result<IpAddr, ToolError> {
        let (k, fam) = match addr {
            IpAddr::V4(a) => (u128::from(u32::from(a)), 4),
            IpAddr::V6(a) => (u128::from(a), 6),
        };
        if let Some(v) = self.cache.get(k, fam) {
            return Ok(match addr {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(v as u32)),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(v)),
            });
        }
        let out = match addr {
            IpAddr::V4(a) => IpAddr::V4(self.v4(a)),
            IpAddr::V6(a) => IpAddr::V6(self.v6(a)),
        };
        let v = match out {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        };
        self.cache.put(k, fam, v);
        Ok(out)
    }
}

/// Crypto-PAn prefix-preserving anonymization.
#[derive(Clone)]
pub struct CryptoPan {
    cipher: Aes128,
    pad: u128,
    cache: Cache,
}

impl std::fmt::Debug for CryptoPan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CryptoPan { .. }")
    }
}

impl CryptoPan {
    /// Crypto-PAn under a 32-byte key (AES key, then the pad's seed), as the reference implementation takes it.
    pub fn new(key: [u8; 32]) -> CryptoPan {
        let mut k = [0u8; 16];
        k.copy_from_slice(&key[..16]);
        let mut p = [0u8; 16];
        p.copy_from_slice(&key[16..]);
        let cipher = Aes128::new(&k.into());
        let pad = u128::from_be_bytes(aes(&cipher, p));
        CryptoPan {
            cipher,
            pad,
            cache: Cache::new(),
        }
    }

    /// Maps the first `width` bits of `orig` (left-aligned in 128 bits); the other bits of the result are 0.
    fn bits(&self, orig: u128, width: u32) -> u128 {
        let mut otp: u128 = 0;
        for pos in 0..width {
            let mask = if pos == 0 { 0 } else { !0u128 << (128 - pos) };
            let input = (orig & mask) | (self.pad & !mask);
            let out = aes(&self.cipher, input.to_be_bytes());
            otp |= u128::from(out[0] >> 7) << (127 - pos);
        }
        orig ^ otp
    }

    /// The anonymized IPv4 address.
    pub fn v4(&self, a: Ipv4Addr) -> Ipv4Addr {
        Ipv4Addr::from((self.bits(u128::from(u32::from(a)) << 96, 32) >> 96) as u32)
    }

    /// The anonymized IPv6 address.
    pub fn v6(&self, a: Ipv6Addr) -> Ipv6Addr {
        Ipv6Addr::from(self.bits(u128::from(a), 128))
    }
}

impl AddressMap for CryptoPan {
    fn map(&mut self, addr: IpAddr) -> Result<IpAddr, ToolError> {
        let (k, fam) = match addr {
            IpAddr::V4(a) => (u128::from(u32::from(a)), 4),
            IpAddr::V6(a) => (u128::from(a), 6),
        };
        let v = match self.cache.get(k, fam) {
            Some(v) => v,
            None => {
                let v = match addr {
                    IpAddr::V4(a) => u128::from(u32::from(self.v4(a))),
                    IpAddr::V6(a) => u128::from(self.v6(a)),
                };
                self.cache.put(k, fam, v);
                v
            }
        };
        Ok(match addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(v as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(v)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The key of the Crypto-PAn reference distribution's sample trace.
    const REFERENCE_KEY: [u8; 32] = [
        21, 34, 23, 141, 51, 164, 207, 128, 19, 10, 91, 22, 73, 144, 125, 16, 216, 152, 143, 131,
        121, 121, 101, 39, 98, 87, 76, 45, 42, 132, 34, 2,
    ];

    #[test]
    fn reference_sample_trace_ipv4() {
        // sample_trace_raw.txt → sample_trace_sanitized.txt of the Crypto-PAn reference implementation.
        let cp = CryptoPan::new(REFERENCE_KEY);
        for (raw, sanitized) in [
            ("128.11.68.132", "135.242.180.132"),
            ("129.118.74.4", "134.136.186.123"),
            ("130.132.252.244", "133.68.164.234"),
            ("141.223.7.43", "141.167.8.160"),
            ("141.233.145.108", "141.129.237.235"),
            ("152.163.225.39", "151.140.114.167"),
            ("156.29.3.236", "147.225.12.42"),
            ("165.247.96.84", "162.9.99.234"),
            ("166.107.77.190", "160.132.178.185"),
            ("192.102.249.13", "252.138.62.131"),
            ("207.135.65.238", "241.202.129.222"),
            ("24.0.250.221", "100.15.198.226"),
            ("64.14.118.196", "0.255.183.58"),
            ("10.185.25.118", "117.161.29.118"),
        ] {
            assert_eq!(
                cp.v4(raw.parse().unwrap()),
                sanitized.parse::<Ipv4Addr>().unwrap(),
                "{raw}"
            );
        }
    }

    #[test]
    fn ipv6_matches_the_common_128_bit_extension() {
        // Vectors of the widely used Go implementation (Yawning/cryptopan) with the same key.
        let cp = CryptoPan::new(REFERENCE_KEY);
        for (raw, anon) in [
            ("::1", "78ff:f001:9fc0:20df:8380:b1f1:704:ed"),
            ("::2", "78ff:f001:9fc0:20df:8380:b1f1:704:ef"),
            ("2001:db8::1", "4401:2bc:603f:d91d:27f:ff8e:e6f1:dc1e"),
        ] {
            assert_eq!(
                cp.v6(raw.parse().unwrap()),
                anon.parse::<Ipv6Addr>().unwrap(),
                "{raw}"
            );
        }
    }

    fn common_prefix(a: u128, b: u128) -> u32 {
        (a ^ b).leading_zeros()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn prefix_preserving_v4(key in any::<[u8; 32]>(), a in any::<u32>(), b in any::<u32>()) {
            let cp = CryptoPan::new(key);
            let (x, y) = (u32::from(cp.v4(a.into())), u32::from(cp.v4(b.into())));
            prop_assert_eq!((a ^ b).leading_zeros(), (x ^ y).leading_zeros());
        }

        #[test]
        fn prefix_preserving_v4_shared_prefix(key in any::<[u8; 32]>(), a in any::<u32>(), k in 0u32..32, flip in any::<u32>()) {
            // b shares exactly k leading bits with a: flip bit k, anything below it.
            let low = if k == 31 { 0 } else { u32::MAX >> (k + 1) };
            let b = a ^ (1u32 << (31 - k)) ^ (flip & low);
            let cp = CryptoPan::new(key);
            let (x, y) = (u32::from(cp.v4(a.into())), u32::from(cp.v4(b.into())));
            prop_assert_eq!((a ^ b).leading_zeros(), k);
            prop_assert_eq!((x ^ y).leading_zeros(), k);
        }

        #[test]
        fn prefix_preserving_v6(key in any::<[u8; 32]>(), a in any::<u128>(), b in any::<u128>(), k in 0u32..128) {
            let cp = CryptoPan::new(key);
            // A second address sharing exactly k bits with a, and an unrelated one.
            let near = a ^ (1u128 << (127 - k));
            for other in [b, near] {
                let (x, y) = (u128::from(cp.v6(a.into())), u128::from(cp.v6(other.into())));
                prop_assert_eq!(common_prefix(a, other), common_prefix(x, y));
            }
        }

        #[test]
        fn sn3_is_injective_and_keyed(key in any::<[u8; 16]>(), a in any::<u32>(), b in any::<u32>()) {
            let s = Sn3::new(key);
            prop_assert_eq!(a == b, s.v4(a.into()) == s.v4(b.into()));
            prop_assert_eq!(s.v4(a.into()), Sn3::new(key).v4(a.into()));
        }
    }

    #[test]
    fn sn3_permutes_a_small_space_without_collisions() {
        let s = Sn3::new([7; 16]);
        let mut seen = std::collections::HashSet::new();
        for x in 0..100_000u32 {
            assert!(seen.insert(s.v4(Ipv4Addr::from(x))));
        }
        let mut m = s.clone();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(m.map(a).unwrap(), m.map(a).unwrap());
        assert_ne!(m.map(a).unwrap(), a);
    }
}
