//! The Toeplitz hash of Microsoft's Receive Side Scaling, with any key.
//!
//! Definition (Microsoft, "RSS hashing functions"): for every input bit from the left, if the bit is 1, XOR the
//! leftmost 32 bits of the key into the result, then shift the key left by one bit. The input is source address,
//! destination address, then source and destination ports (when the hash type includes ports).
//!
//! **Implementation.** [`Toeplitz::new`] precomputes, for each input byte position and each of the 256 byte
//! values, the XOR of the eight key windows that byte selects; a hash is then one table load and XOR per input
//! byte (12 loads for IPv4 with ports, 36 for IPv6). The tables take `key.len() × 1 KiB` (40 KiB for the standard
//! 40-byte key), built once. A key shorter than `input + 4` bytes behaves as if extended with zero bits, the
//! convention of the bitwise definition ([`toeplitz_reference`], kept for tests).
//!
//! **Symmetric RSS.** With the key 0x6d5a repeated ([`SYMMETRIC_KEY`], Woo & Park), every key window depends
//! only on its bit position modulo 16. Swapping source and destination moves each address by a multiple of 32
//! bits and each port by 16, so the hash is the same in both directions. The price: every window is of the form
//! `(w << 16) | w`, so every hash is too: **the output has only 16 bits of entropy** (its two halves are equal,
//! see the test `symmetric_key_has_16_bits_of_entropy`). Use its low 16 bits, never the 32-bit value, as a
//! bucket number.
//!
//! The same periodicity gives a much cheaper way to compute it ([`SymmetricToeplitz`]): the hash depends only on
//! the XOR of the input's 16-bit words (bit `i` of the input selects window `i mod 16`, and XOR-ing windows is
//! linear), so it is one XOR-fold of the input and two lookups in 256-entry tables. That fold is also the plain
//! reason why the hash is symmetric (XOR does not care which address comes first) and why it cannot carry more
//! than 16 bits. Inputs up to 36 bytes (the IPv6 4-tuple) are exact; tests compare it with the generic tables.

use std::net::IpAddr;

/// Microsoft's sample key, with which its published verification values are computed.
pub const MICROSOFT_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// The symmetric RSS key: 0x6d5a repeated 20 times.
pub const SYMMETRIC_KEY: [u8; 40] = {
    let mut k = [0u8; 40];
    let mut i = 0;
    while i < 40 {
        k[i] = if i % 2 == 0 { 0x6d } else { 0x5a };
        i += 1;
    }
    k
};

/// The 32-bit key window starting at bit `bit` (zero past the end of the key).
fn window(key: &[u8], bit: usize) -> u32 {
    let byte = bit / 8;
    let mut w: u64 = 0;
    for i in 0..5 {
        w = (w << 8) | u64::from(key.get(byte + i).copied().unwrap_or(0));
    }
    // 40 bits loaded; drop the (bit % 8) leading bits and keep the next 32.
    ((w << (bit % 8)) >> 8) as u32
}

/// The bitwise definition, for tests and as the specification of [`Toeplitz::hash`].
pub fn toeplitz_reference(key: &[u8], input: &[u8]) -> u32 {
    let mut r = 0u32;
    for (i, &b) in input.iter().enumerate() {
        for k in 0..8 {
            if b & (0x80 >> k) != 0 {
                r ^= window(key, i * 8 + k);
            }
        }
    }
    r
}

/// A Toeplitz hasher for one key, with precomputed byte tables.
#[derive(Clone)]
pub struct Toeplitz {
    tables: Box<[[u32; 256]]>,
}

impl core::fmt::Debug for Toeplitz {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Toeplitz {{ {} byte tables }}", self.tables.len())
    }
}

impl Toeplitz {
    /// Builds the tables for `key` (any length; inputs up to `key.len()` bytes are hashed, beyond that the key is
    /// zero and further bytes do not change the hash).
    pub fn new(key: &[u8]) -> Self {
        let mut tables = vec![[0u32; 256]; key.len()].into_boxed_slice();
        for (pos, t) in tables.iter_mut().enumerate() {
            let w: [u32; 8] = core::array::from_fn(|k| window(key, pos * 8 + k));
            for (v, slot) in t.iter_mut().enumerate() {
                let mut r = 0;
                for (k, wk) in w.iter().enumerate() {
                    if v & (0x80 >> k) != 0 {
                        r ^= wk;
                    }
                }
                *slot = r;
            }
        }
        Toeplitz { tables }
    }

    /// The hash of `input`.
    #[inline]
    pub fn hash(&self, input: &[u8]) -> u32 {
        let mut r = 0;
        for (t, &b) in self.tables.iter().zip(input) {
            r ^= t[usize::from(b)];
        }
        r
    }
}

/// Symmetric Toeplitz ([`SYMMETRIC_KEY`]) computed through the XOR-fold of the input's 16-bit words. Equal to
/// `Toeplitz::new(&SYMMETRIC_KEY).hash(input)` for inputs of at most 36 bytes; 1 KiB of tables instead of 40.
#[derive(Clone)]
pub struct SymmetricToeplitz {
    hi: [u32; 256],
    lo: [u32; 256],
}

impl core::fmt::Debug for SymmetricToeplitz {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SymmetricToeplitz")
    }
}

impl Default for SymmetricToeplitz {
    fn default() -> Self {
        Self::new()
    }
}

impl SymmetricToeplitz {
    pub fn new() -> Self {
        let w: [u32; 16] = core::array::from_fn(|k| window(&SYMMETRIC_KEY, k));
        let table = |base: usize| -> [u32; 256] {
            core::array::from_fn(|v| {
                (0..8)
                    .filter(|k| v & (0x80 >> k) != 0)
                    .fold(0, |acc, k| acc ^ w[base + k])
            })
        };
        SymmetricToeplitz {
            hi: table(0),
            lo: table(8),
        }
    }

    /// The hash of `input` (at most 36 bytes for an exact match with the definition).
    #[inline]
    pub fn hash(&self, input: &[u8]) -> u32 {
        let mut fold = 0u16;
        let mut words = input.chunks_exact(2);
        for w in &mut words {
            fold ^= u16::from_be_bytes([w[0], w[1]]);
        }
        if let [b] = words.remainder() {
            fold ^= u16::from(*b) << 8;
        }
        let [h, l] = fold.to_be_bytes();
        self.hi[usize::from(h)] ^ self.lo[usize::from(l)]
    }
}

/// The RSS input for a packet: source address, destination address and, with `ports`, source and destination
/// port (12 bytes for IPv4 with ports, 8 without; 36 or 32 for IPv6). Returns the buffer and the used length. A
/// mixed-family pair is encoded as IPv6 (IPv4-mapped).
pub fn rss_input(
    src: IpAddr,
    dst: IpAddr,
    sport: u16,
    dport: u16,
    ports: bool,
) -> ([u8; 36], usize) {
    let mut b = [0u8; 36];
    let n = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            b[..4].copy_from_slice(&s.octets());
            b[4..8].copy_from_slice(&d.octets());
            8
        }
        (s, d) => {
            let to6 = |a: IpAddr| match a {
                IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
                IpAddr::V6(v) => v.octets(),
            };
            b[..16].copy_from_slice(&to6(s));
            b[16..32].copy_from_slice(&to6(d));
            32
        }
    };
    if !ports {
        return (b, n);
    }
    b[n..n + 2].copy_from_slice(&sport.to_be_bytes());
    b[n + 2..n + 4].copy_from_slice(&dport.to_be_bytes());
    (b, n + 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// Microsoft's published verification values: (source, source port, destination, destination port,
    /// IPs-only hash, IPs+ports hash).
    const V4: [(&str, u16, &str, u16, u32, u32); 5] = [
        (
            "66.9.149.187",
            2794,
            "161.142.100.80",
            1766,
            0x323e_8fc2,
            0x51cc_c178,
        ),
        (
            "199.92.111.2",
            14230,
            "65.69.140.83",
            4739,
            0xd718_262a,
            0xc626_b0ea,
        ),
        (
            "24.19.198.95",
            12898,
            "12.22.207.184",
            38024,
            0xd2d0_a5de,
            0x5c2b_394a,
        ),
        (
            "38.27.205.30",
            48228,
            "209.142.163.6",
            2217,
            0x8298_9176,
            0xafc7_327f,
        ),
        (
            "153.39.163.191",
            44251,
            "202.188.127.2",
            1303,
            0x5d18_09c5,
            0x10e8_28a2,
        ),
    ];
    const V6: [(&str, u16, &str, u16, u32, u32); 3] = [
        (
            "3ffe:2501:200:1fff::7",
            2794,
            "3ffe:2501:200:3::1",
            1766,
            0x2cc1_8cd5,
            0x4020_7d3d,
        ),
        (
            "3ffe:501:8::260:97ff:fe40:efab",
            14230,
            "ff02::1",
            4739,
            0x0f0c_461c,
            0xdde5_1bbf,
        ),
        (
            "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
            44251,
            "fe80::200:f8ff:fe21:67cf",
            38024,
            0x4b61_e985,
            0x02d1_feef,
        ),
    ];

    #[test]
    fn microsoft_verification_values() {
        let t = Toeplitz::new(&MICROSOFT_KEY);
        for (s, sp, d, dp, two, four) in V4.iter().chain(V6.iter()) {
            let (i2, n2) = rss_input(ip(s), ip(d), *sp, *dp, false);
            let (i4, n4) = rss_input(ip(s), ip(d), *sp, *dp, true);
            assert_eq!(t.hash(&i2[..n2]), *two, "{s} -> {d} IPs only");
            assert_eq!(t.hash(&i4[..n4]), *four, "{s}:{sp} -> {d}:{dp}");
            assert_eq!(toeplitz_reference(&MICROSOFT_KEY, &i4[..n4]), *four);
        }
    }

    #[test]
    fn symmetric_key_is_symmetric() {
        let t = Toeplitz::new(&SYMMETRIC_KEY);
        for (s, sp, d, dp, _, _) in V4.iter().chain(V6.iter()) {
            let (a, n) = rss_input(ip(s), ip(d), *sp, *dp, true);
            let (b, m) = rss_input(ip(d), ip(s), *dp, *sp, true);
            assert_eq!(t.hash(&a[..n]), t.hash(&b[..m]));
        }
    }

    #[test]
    fn symmetric_key_has_16_bits_of_entropy() {
        let t = Toeplitz::new(&SYMMETRIC_KEY);
        let mut distinct = std::collections::HashSet::new();
        for i in 0..20_000u32 {
            let (inp, n) = rss_input(
                IpAddr::from(i.wrapping_mul(2_654_435_761).to_be_bytes()),
                ip("10.0.0.1"),
                (i % 60_000) as u16,
                443,
                true,
            );
            let h = t.hash(&inp[..n]);
            // The two halves are always equal: only 16 bits carry information.
            assert_eq!(h >> 16, h & 0xffff);
            distinct.insert(h);
        }
        assert!(distinct.len() <= 1 << 16);
    }

    #[test]
    fn symmetric_fast_path_equals_the_tables() {
        let fast = SymmetricToeplitz::new();
        let t = Toeplitz::new(&SYMMETRIC_KEY);
        for (s, sp, d, dp, _, _) in V4.iter().chain(V6.iter()) {
            for ports in [false, true] {
                let (a, n) = rss_input(ip(s), ip(d), *sp, *dp, ports);
                assert_eq!(fast.hash(&a[..n]), t.hash(&a[..n]));
            }
        }
        assert_eq!(fast.hash(&[0xab]), t.hash(&[0xab]));
    }

    #[test]
    fn short_key_extends_with_zeros() {
        let k = [0xffu8; 4];
        assert_eq!(
            Toeplitz::new(&k).hash(&[0x80, 0, 0, 0, 0xff]),
            toeplitz_reference(&k, &[0x80, 0, 0, 0, 0xff])
        );
        assert_eq!(toeplitz_reference(&k, &[0x80]), 0xffff_ffff);
    }
}
