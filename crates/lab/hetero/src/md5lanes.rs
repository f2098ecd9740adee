//! MD5 of many packets at once: independent messages hashed in lock-step SIMD lanes ("multi-buffer" MD5).
//!
//! # Why
//! MD5 is a chain: each of a block's 64 steps needs the previous step's result, so one message runs at the
//! latency of that chain, about 4.5–5 cycles per byte on a current x86 core whatever its width (the `md-5` crate's
//! portable code measured 1.3 Gbit/s per core here). Packets, however, are independent messages. Hashing `L` of
//! them in the `L` lanes of a vector register turns the latency chain into throughput: the same 64 steps, each one
//! vector instruction per operation for all lanes. With AVX-512 (16 lanes, native rotate `vprold`, and
//! `vpternlogd` for the round functions) a step costs about as much for 16 packets as scalar code does for one.
//!
//! # How
//! The compression function is written once over `[u32; L]` arrays, element by element, and compiled three times:
//! for AVX-512F (16 lanes), AVX2 (8 lanes) and the x86-64 baseline SSE2 (4 lanes); the widest the CPU has is
//! picked at run time (`is_x86_feature_detected!`). Other architectures get the portable 4-lane build. The loops
//! over lanes are what LLVM's vectorisers turn into one vector operation each.
//!
//! A scheduler keeps every lane busy: a lane that finishes its message writes the digest and takes the next
//! packet, so packets of different lengths share the lanes without waiting for each other. Each step gathers one
//! 64-byte block per lane (from the payload, or from the lane's prepared tail: the last partial block, `0x80`,
//! zeros and the bit length, RFC 1321 §3.1–3.2). Lanes left without work at the end of a call hash zeros that are
//! thrown away.
//!
//! # What it costs
//! A few hundred bytes of state per call; no allocation. The result is bit-identical to the `md-5` crate (tested
//! against it on arbitrary inputs and against the RFC 1321 suite).

/// Per-step additive constants (RFC 1321, `floor(abs(sin(i + 1)) * 2^32)`).
const K: [u32; 64] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
];

/// Initial state (RFC 1321 §3.3).
const IV: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

#[inline(always)]
fn ff(x: u32, y: u32, z: u32) -> u32 {
    z ^ (x & (y ^ z))
}
#[inline(always)]
fn gg(x: u32, y: u32, z: u32) -> u32 {
    y ^ (z & (x ^ y))
}
#[inline(always)]
fn hh(x: u32, y: u32, z: u32) -> u32 {
    x ^ y ^ z
}
#[inline(always)]
fn ii(x: u32, y: u32, z: u32) -> u32 {
    y ^ (x | !z)
}

/// One MD5 step on every lane: `a = b + rotl(a + f(b, c, d) + k + m, s)`.
#[inline(always)]
fn step<const L: usize>(
    f: impl Fn(u32, u32, u32) -> u32,
    a: &mut [u32; L],
    b: &[u32; L],
    c: &[u32; L],
    d: &[u32; L],
    m: &[u32; L],
    (k, s): (u32, u32),
) {
    for l in 0..L {
        a[l] = f(b[l], c[l], d[l])
            .wrapping_add(a[l])
            .wrapping_add(k)
            .wrapping_add(m[l])
            .rotate_left(s)
            .wrapping_add(b[l]);
    }
}

/// The MD5 compression function on `L` lanes: `st[w][l]` is word `w` of lane `l`'s state, `m[w][l]` word `w` of
/// its block.
#[inline(always)]
fn compress<const L: usize>(st: &mut [[u32; L]; 4], m: &[[u32; L]; 16]) {
    let [mut a, mut b, mut c, mut d] = *st;
    for q in 0..4 {
        let i = q * 4;
        step(ff, &mut a, &b, &c, &d, &m[i], (K[i], 7));
        step(ff, &mut d, &a, &b, &c, &m[i + 1], (K[i + 1], 12));
        step(ff, &mut c, &d, &a, &b, &m[i + 2], (K[i + 2], 17));
        step(ff, &mut b, &c, &d, &a, &m[i + 3], (K[i + 3], 22));
    }
    for q in 0..4 {
        let i = 16 + q * 4;
        step(gg, &mut a, &b, &c, &d, &m[(5 * i + 1) & 15], (K[i], 5));
        step(gg, &mut d, &a, &b, &c, &m[(5 * i + 6) & 15], (K[i + 1], 9));
        step(
            gg,
            &mut c,
            &d,
            &a,
            &b,
            &m[(5 * i + 11) & 15],
            (K[i + 2], 14),
        );
        step(
            gg,
            &mut b,
            &c,
            &d,
            &a,
            &m[(5 * i + 16) & 15],
            (K[i + 3], 20),
        );
    }
    for q in 0..4 {
        let i = 32 + q * 4;
        step(hh, &mut a, &b, &c, &d, &m[(3 * i + 5) & 15], (K[i], 4));
        step(hh, &mut d, &a, &b, &c, &m[(3 * i + 8) & 15], (K[i + 1], 11));
        step(
            hh,
            &mut c,
            &d,
            &a,
            &b,
            &m[(3 * i + 11) & 15],
            (K[i + 2], 16),
        );
        step(
            hh,
            &mut b,
            &c,
            &d,
            &a,
            &m[(3 * i + 14) & 15],
            (K[i + 3], 23),
        );
    }
    for q in 0..4 {
        let i = 48 + q * 4;
        step(ii, &mut a, &b, &c, &d, &m[(7 * i) & 15], (K[i], 6));
        step(ii, &mut d, &a, &b, &c, &m[(7 * i + 7) & 15], (K[i + 1], 10));
        step(
            ii,
            &mut c,
            &d,
            &a,
            &b,
            &m[(7 * i + 14) & 15],
            (K[i + 2], 15),
        );
        step(
            ii,
            &mut b,
            &c,
            &d,
            &a,
            &m[(7 * i + 21) & 15],
            (K[i + 3], 21),
        );
    }
    for l in 0..L {
        st[0][l] = st[0][l].wrapping_add(a[l]);
        st[1][l] = st[1][l].wrapping_add(b[l]);
        st[2][l] = st[2][l].wrapping_add(c[l]);
        st[3][l] = st[3][l].wrapping_add(d[l]);
    }
}

/// A message in a lane: its payload, where its digest goes, and its prepared tail.
struct Job<'a> {
    msg: &'a [u8],
    out: usize,
    /// Next block to hash.
    block: usize,
    /// Whole 64-byte blocks of the payload.
    full: usize,
    /// `full` + the one or two tail blocks.
    blocks: usize,
    tail: [u8; 128],
}

impl<'a> Job<'a> {
    fn new(msg: &'a [u8], out: usize) -> Self {
        let full = msg.len() / 64;
        let rest = msg.get(full * 64..).unwrap_or(&[]);
        let mut tail = [0u8; 128];
        tail[..rest.len()].copy_from_slice(rest);
        tail[rest.len()] = 0x80;
        let tail_blocks = if rest.len() < 56 { 1 } else { 2 };
        let bits = (msg.len() as u64).wrapping_mul(8);
        tail[tail_blocks * 64 - 8..tail_blocks * 64].copy_from_slice(&bits.to_le_bytes());
        Self {
            msg,
            out,
            block: 0,
            full,
            blocks: full + tail_blocks,
            tail,
        }
    }

    /// The 64 bytes of the next block.
    fn block_bytes(&self) -> &[u8] {
        if self.block < self.full {
            self.msg
                .get(self.block * 64..self.block * 64 + 64)
                .unwrap_or(&[])
        } else {
            let t = (self.block - self.full) * 64;
            self.tail.get(t..t + 64).unwrap_or(&[])
        }
    }
}

/// Hashes `msgs[i]` into `out[i]` with `L` lanes (`out` shorter than `msgs` leaves the extra messages unhashed).
#[inline(always)]
fn digest_lanes<const L: usize>(msgs: &[&[u8]], out: &mut [[u8; 16]]) {
    let n = msgs.len().min(out.len());
    let mut st = [[0u32; L]; 4];
    let mut m = [[0u32; L]; 16];
    let mut lanes: [Option<Job<'_>>; L] = std::array::from_fn(|_| None);
    let mut next = 0usize;
    let mut active = 0usize;
    for (l, lane) in lanes.iter_mut().enumerate() {
        if next < n {
            *lane = Some(Job::new(msgs[next], next));
            for w in 0..4 {
                st[w][l] = IV[w];
            }
            next += 1;
            active += 1;
        }
    }
    while active > 0 {
        for (l, lane) in lanes.iter().enumerate() {
            match lane {
                Some(job) => {
                    let bytes = job.block_bytes();
                    for (w, word) in bytes.chunks_exact(4).enumerate().take(16) {
                        m[w][l] = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
                    }
                }
                None => {
                    for row in m.iter_mut() {
                        row[l] = 0;
                    }
                }
            }
        }
        compress(&mut st, &m);
        for (l, lane) in lanes.iter_mut().enumerate() {
            let Some(job) = lane else { continue };
            job.block += 1;
            if job.block < job.blocks {
                continue;
            }
            if let Some(d) = out.get_mut(job.out) {
                for w in 0..4 {
                    d[w * 4..w * 4 + 4].copy_from_slice(&st[w][l].to_le_bytes());
                }
            }
            if next < n {
                *job = Job::new(msgs[next], next);
                for w in 0..4 {
                    st[w][l] = IV[w];
                }
                next += 1;
            } else {
                *lane = None;
                active -= 1;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn digest_avx512(msgs: &[&[u8]], out: &mut [[u8; 16]]) {
    digest_lanes::<16>(msgs, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn digest_avx2(msgs: &[&[u8]], out: &mut [[u8; 16]]) {
    digest_lanes::<8>(msgs, out);
}

/// Which vector width [`digest_many`] uses on this CPU.
pub fn lanes() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return 16;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return 8;
        }
    }
    4
}

/// MD5 of every message: `out[i] = MD5(msgs[i])` for `i < min(msgs.len(), out.len())`.
pub fn digest_many(msgs: &[&[u8]], out: &mut [[u8; 16]]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F, checked just above.
            unsafe { digest_avx512(msgs, out) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { digest_avx2(msgs, out) };
            return;
        }
    }
    digest_lanes::<4>(msgs, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::Digest;
    use proptest::prelude::*;

    fn reference(m: &[u8]) -> [u8; 16] {
        md5::Md5::digest(m).into()
    }

    #[test]
    fn every_width_matches_the_reference_at_block_boundaries() {
        // Lengths around the one/two tail-block boundary (55/56) and whole blocks, in one call so lanes refill.
        let msgs: Vec<Vec<u8>> = (0..200usize)
            .map(|n| (0..n).map(|i| (i * 31 + n) as u8).collect())
            .collect();
        let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
        let want: Vec<[u8; 16]> = refs.iter().map(|m| reference(m)).collect();
        let mut out = vec![[0u8; 16]; refs.len()];
        digest_lanes::<4>(&refs, &mut out);
        assert_eq!(out, want);
        out.fill([0; 16]);
        digest_lanes::<16>(&refs, &mut out);
        assert_eq!(out, want);
        out.fill([0; 16]);
        digest_many(&refs, &mut out);
        assert_eq!(out, want);
        assert!(matches!(lanes(), 4 | 8 | 16));
    }

    #[test]
    fn rfc1321_suite() {
        let suite: [(&[u8], &str); 3] = [
            (b"", "d41d8cd98f00b204e9800998ecf8427e"),
            (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
            (
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ];
        let msgs: Vec<&[u8]> = suite.iter().map(|s| s.0).collect();
        let mut out = vec![[0u8; 16]; msgs.len()];
        digest_many(&msgs, &mut out);
        for (d, (_, hex)) in out.iter().zip(suite) {
            let s: String = d.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(s, hex);
        }
    }

    #[test]
    fn short_output_leaves_extra_messages() {
        let msgs: Vec<&[u8]> = vec![b"a", b"b", b"c"];
        let mut out = vec![[0u8; 16]; 2];
        digest_many(&msgs, &mut out);
        assert_eq!(out[1], reference(b"b"));
        digest_many(&[], &mut out);
    }

    proptest! {
        #[test]
        fn matches_md5_crate(msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..40)) {
            let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
            let mut out = vec![[0u8; 16]; refs.len()];
            digest_many(&refs, &mut out);
            for (m, d) in refs.iter().zip(&out) {
                prop_assert_eq!(*d, reference(m));
            }
        }
    }
}
