//! The prefilter's gate, 64 positions at a time: one bit per position saying whether its 4-byte window's hash bit
//! is set in the gate bitmap (see [`crate::prefilter`]).
//!
//! ## Why
//! The scalar gate costs about ten instructions and one data-dependent branch per byte, and with the 10,000-pattern
//! set a few per cent of positions pass, so the branch mispredicts often. Computing the pass bits of 64 positions
//! first (hash, bitmap lookup and bit test in vector registers, no branch) and then walking only the set bits
//! (`trailing_zeros`) takes the per-byte work off the scalar pipeline: on this lab's Xeon the gate alone over the
//! merged shared captures goes from about 55 ms to about 21 ms (`examples/gate_speed.rs`).
//!
//! ## How (AVX2)
//! Eight positions per step: one 16-byte load, a byte shuffle that lays out the eight overlapping 4-byte windows as
//! 32-bit lanes (little-endian, exactly the scalar key), a 32-bit multiply by the hash constant and a shift give the
//! 19-bit bit index, a gather fetches the bitmap's 32-bit word of each lane, and a variable left shift moves the
//! wanted bit to the lane's sign bit, which `movemask` collects. Eight such steps fill a `u64`.
//!
//! The scalar version ([`mask64_scalar`]) computes the same bits and is what other CPUs use; the tests compare the
//! two on random data and on the shared captures.

/// Multiplicative hash constant of the gate (the 32-bit golden ratio), shared with [`crate::prefilter`].
pub(crate) const HASH_MUL: u32 = 0x9E37_79B1;

/// Bits of the largest gate bitmap: 2^19 (64 KiB), reached above 4,096 keys (the 10k content set). Every position
/// of every scanned byte reads one random word of a gate, so a table's gate should stay in the first-level data
/// cache (32 KiB here) beside the packet and the other tables: when every table had 2^19 bits, ET Open's gates took
/// 70% of all first-level read misses of `flowbundle inspect` on the merged nDPI trace (see `BENCHMARKS.md`); its
/// stream tables now have 2^17 bits at most, its largest buffer tables (`http.uri`, `dns.query`) 2^18.
const MAX_GATE_LOG2: u32 = 19;

/// Bits of the smallest gate bitmap: 2^12 (512 bytes, eight cache lines).
const MIN_GATE_LOG2: u32 = 12;

/// Gate bits per key: with 64, about one position in 64 passes for a random window (fewer with fewer keys).
const GATE_BITS_PER_KEY: usize = 64;

/// Folds a 4-byte window for the gate: bit 5 of every byte cleared, so the case variants of a `nocase` key are
/// one key (ET Open's tables are full of `nocase` contents, up to 16 variants each), at the price of also folding
/// bytes that differ in bit 5 without being letters (the levels behind the gate compare exact keys).
pub(crate) const GATE_FOLD: u32 = 0xDFDF_DFDF;

/// The gate bitmap: one bit per value of the top bits of a folded key's hash; its size follows the number of keys
/// (from [`MIN_GATE_LOG2`] to [`MAX_GATE_LOG2`] bits), so a small table's gate takes a few cache lines.
#[derive(Clone, Debug)]
pub(crate) struct Gate {
    /// 2^(32 - shift) bits: `bits.len() == 1 << (26 - shift)` always (what the vector gather relies on).
    bits: Box<[u64]>,
    /// The hash is shifted right by this much to index a bit: `32 - log2(bits)`.
    shift: u32,
}

impl Gate {
    /// A gate passing every window whose folded 4-byte key is one of `keys` (unfolded keys are folded here).
    pub(crate) fn build(keys: &[u32]) -> Gate {
        let mut folded: Vec<u32> = keys.iter().map(|k| k & GATE_FOLD).collect();
        folded.sort_unstable();
        folded.dedup();
        let log2 = (folded.len().saturating_mul(GATE_BITS_PER_KEY))
            .next_power_of_two()
            .trailing_zeros()
            .clamp(MIN_GATE_LOG2, MAX_GATE_LOG2);
        let shift = 32 - log2;
        let mut bits = vec![0u64; 1usize << (log2 - 6)].into_boxed_slice();
        for k in folded {
            let b = (k.wrapping_mul(HASH_MUL) >> shift) as usize;
            if let Some(w) = bits.get_mut(b >> 6) {
                *w |= 1u64 << (b & 63);
            }
        }
        Gate { bits, shift }
    }

    /// The gate bit (0 or 1) of the 4-byte window `x`.
    #[inline(always)]
    pub(crate) fn bit(&self, x: u32) -> u64 {
        let b = ((x & GATE_FOLD).wrapping_mul(HASH_MUL) >> self.shift) as usize;
        self.bits.get(b >> 6).map_or(0, |w| (w >> (b & 63)) & 1)
    }

    /// Bytes of the bitmap.
    pub(crate) fn memory(&self) -> usize {
        self.bits.len() * 8
    }
}

/// Bytes a 64-position block reads: the 4-byte window of its first position starts 3 bytes before it, and the last
/// 16-byte vector load (for positions 56..64) reaches 13 bytes past position 56.
pub(crate) const BLOCK_BYTES: usize = 72;

/// Words of the short gate: one bit per value of a position's last two bytes (2^16 bits, 8 KiB).
pub(crate) const SHORT_WORDS: usize = 1 << 10;

/// The short-gate bit (0 or 1) of the 4-byte window `x`: its top two bytes (the position's last two) index the table.
#[inline(always)]
pub(crate) fn short_bit(bits: &[u64; SHORT_WORDS], x: u32) -> u64 {
    let k = x >> 16;
    (bits[(k >> 6) as usize % SHORT_WORDS] >> (k & 63)) & 1
}

/// Pass bits of the 64 positions whose windows end at `block[3..67]` (bit k: the window `block[k..k + 4]`).
pub(crate) fn mask64_scalar(gate: &Gate, block: &[u8; BLOCK_BYTES]) -> u64 {
    let mut m = 0u64;
    for (k, w) in block.windows(4).take(64).enumerate() {
        if let &[a, b, c, d] = w {
            m |= gate.bit(u32::from_le_bytes([a, b, c, d])) << k;
        }
    }
    m
}

/// Pass bits of both gates for the 64 positions of `block` (see [`mask64_scalar`]): the hashed 4-byte gate (none
/// without one) and the direct two-byte gate of the short patterns.
pub(crate) fn mask64_pair_scalar(
    gate: Option<&Gate>,
    short: &[u64; SHORT_WORDS],
    block: &[u8; BLOCK_BYTES],
) -> (u64, u64) {
    let (mut m4, mut m2) = (0u64, 0u64);
    for (k, w) in block.windows(4).take(64).enumerate() {
        if let &[a, b, c, d] = w {
            let x = u32::from_le_bytes([a, b, c, d]);
            if let Some(gate) = gate {
                m4 |= gate.bit(x) << k;
            }
            m2 |= short_bit(short, x) << k;
        }
    }
    (m4, m2)
}

/// A gate evaluator chosen once for the CPU: the AVX2 version where the CPU has it, else the scalar one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GateKind {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl GateKind {
    /// The best the running CPU supports. `FLOWBUNDLE_GATE=scalar` forces the scalar one (for comparisons).
    pub(crate) fn detect() -> GateKind {
        if std::env::var_os("FLOWBUNDLE_GATE").is_some_and(|v| v == "scalar") {
            return GateKind::Scalar;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return GateKind::Avx2;
        }
        GateKind::Scalar
    }

    /// Whether this evaluator is worth a block loop (the scalar one is better run inline, position by position).
    pub(crate) fn vector(self) -> bool {
        self != GateKind::Scalar
    }

    /// Pass bits of one block (see [`mask64_scalar`]).
    #[inline(always)]
    pub(crate) fn mask64(self, gate: &Gate, block: &[u8; BLOCK_BYTES]) -> u64 {
        match self {
            GateKind::Scalar => mask64_scalar(gate, block),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Avx2` is only constructed after `is_x86_feature_detected!("avx2")` returned true.
            GateKind::Avx2 => unsafe { x86::mask64_avx2(gate, block) },
        }
    }

    /// Pass bits of both gates of one block (see [`mask64_pair_scalar`]).
    #[inline(always)]
    pub(crate) fn mask64_pair(
        self,
        gate: Option<&Gate>,
        short: &[u64; SHORT_WORDS],
        block: &[u8; BLOCK_BYTES],
    ) -> (u64, u64) {
        match self {
            GateKind::Scalar => mask64_pair_scalar(gate, short, block),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Avx2` is only constructed after `is_x86_feature_detected!("avx2")` returned true.
            GateKind::Avx2 => unsafe { x86::mask64_pair_avx2(gate, short, block) },
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{BLOCK_BYTES, GATE_FOLD, Gate, HASH_MUL, SHORT_WORDS};
    use std::arch::x86_64::*;

    /// AVX2 version of [`super::mask64_scalar`].
    ///
    /// # Safety
    /// The CPU must support AVX2. Memory safety does not depend on the input: every load reads 16 bytes at an
    /// offset of at most 56 into the 72-byte block, and every gather index is a (32 - shift)-bit hash shifted right
    /// by 5, below the bitmap's 2^(27 - shift) 32-bit words ([`Gate`]'s invariant).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn mask64_avx2(gate: &Gate, block: &[u8; BLOCK_BYTES]) -> u64 {
        let base = gate.bits.as_ptr().cast::<i32>();
        let count = _mm_cvtsi32_si128(gate.shift as i32);
        let fold = _mm256_set1_epi32(GATE_FOLD as i32);
        // Lane k of each 128-bit half takes bytes k..k+4 (low half) and k+4..k+8 (high half) of the 16 loaded.
        let shuf = _mm256_setr_epi8(
            0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, 4, 5, 6, 7, 5, 6, 7, 8, 6, 7, 8, 9, 7,
            8, 9, 10,
        );
        let mul = _mm256_set1_epi32(HASH_MUL as i32);
        let low5 = _mm256_set1_epi32(31);
        let mut m = 0u64;
        let p = block.as_ptr();
        for step in 0..8 {
            // SAFETY: step * 8 + 16 <= 72 = BLOCK_BYTES.
            let v = unsafe { _mm_loadu_si128(p.add(step * 8).cast::<__m128i>()) };
            let w = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(v), shuf);
            let h = _mm256_srl_epi32(_mm256_mullo_epi32(_mm256_and_si256(w, fold), mul), count);
            let word = _mm256_srli_epi32::<5>(h);
            // SAFETY: `word` < 2^(27 - shift), the bitmap holds 2^(26 - shift) u64 = 2^(27 - shift) i32 words.
            let g = unsafe { _mm256_i32gather_epi32::<4>(base, word) };
            // Bit (h & 31) of the word to the sign bit: shift left by 31 - (h & 31).
            let t = _mm256_sllv_epi32(g, _mm256_andnot_si256(h, low5));
            let bits8 = _mm256_movemask_ps(_mm256_castsi256_ps(t)) as u32 as u64;
            m |= bits8 << (step * 8);
        }
        m
    }

    /// AVX2 version of [`super::mask64_pair_scalar`]: the windows are laid out once for both gates.
    ///
    /// # Safety
    /// The CPU must support AVX2. Memory safety does not depend on the input: loads as in [`mask64_avx2`]; the
    /// short gate's gather index is a window's top 16 bits shifted right by 5, below the table's 2^11 32-bit words.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn mask64_pair_avx2(
        gate: Option<&Gate>,
        short: &[u64; SHORT_WORDS],
        block: &[u8; BLOCK_BYTES],
    ) -> (u64, u64) {
        let sbase = short.as_ptr().cast::<i32>();
        let fold = _mm256_set1_epi32(GATE_FOLD as i32);
        let shuf = _mm256_setr_epi8(
            0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, 4, 5, 6, 7, 5, 6, 7, 8, 6, 7, 8, 9, 7,
            8, 9, 10,
        );
        let mul = _mm256_set1_epi32(HASH_MUL as i32);
        let low5 = _mm256_set1_epi32(31);
        let (mut m4, mut m2) = (0u64, 0u64);
        let p = block.as_ptr();
        for step in 0..8 {
            // SAFETY: step * 8 + 16 <= 72 = BLOCK_BYTES.
            let v = unsafe { _mm_loadu_si128(p.add(step * 8).cast::<__m128i>()) };
            let w = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(v), shuf);
            if let Some(gate) = gate {
                let base = gate.bits.as_ptr().cast::<i32>();
                let count = _mm_cvtsi32_si128(gate.shift as i32);
                let h = _mm256_srl_epi32(_mm256_mullo_epi32(_mm256_and_si256(w, fold), mul), count);
                let word = _mm256_srli_epi32::<5>(h);
                // SAFETY: `word` < 2^(27 - shift), the bitmap holds 2^(26 - shift) u64 = 2^(27 - shift) i32 words.
                let g = unsafe { _mm256_i32gather_epi32::<4>(base, word) };
                let t = _mm256_sllv_epi32(g, _mm256_andnot_si256(h, low5));
                m4 |= (_mm256_movemask_ps(_mm256_castsi256_ps(t)) as u32 as u64) << (step * 8);
            }
            let k = _mm256_srli_epi32::<16>(w);
            let word = _mm256_srli_epi32::<5>(k);
            // SAFETY: `word` < 2^11, the table holds 2^10 u64 = 2^11 i32 words.
            let g = unsafe { _mm256_i32gather_epi32::<4>(sbase, word) };
            let t = _mm256_sllv_epi32(g, _mm256_andnot_si256(k, low5));
            m2 |= (_mm256_movemask_ps(_mm256_castsi256_ps(t)) as u32 as u64) << (step * 8);
        }
        (m4, m2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate_from(keys: &[u32]) -> Gate {
        Gate::build(keys)
    }

    /// Every evaluator gives the scalar bits, on pseudo-random blocks and on blocks made of the keys themselves.
    #[test]
    fn vector_equals_scalar() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let keys: Vec<u32> = (0..5000).map(|_| next() as u32).collect();
        let bits = gate_from(&keys);
        let kind = GateKind::detect();
        let mut set = 0u32;
        for round in 0..2000 {
            let mut block = [0u8; BLOCK_BYTES];
            for (i, b) in block.iter_mut().enumerate() {
                *b = if round % 2 == 0 {
                    next() as u8
                } else {
                    // Keys laid end to end: many positions pass.
                    keys[(round + i / 4) % keys.len()].to_le_bytes()[i % 4]
                };
            }
            let s = mask64_scalar(&bits, &block);
            set += s.count_ones();
            assert_eq!(kind.mask64(&bits, &block), s, "round {round}");
        }
        // The test must exercise both outcomes.
        assert!(set > 1000 && set < 2000 * 64 - 1000, "{set}");
    }

    /// The pair evaluator gives the scalar bits of both gates, with and without the 4-byte gate.
    #[test]
    fn pair_vector_equals_scalar() {
        let mut x = 0x0bad_cafe_1234_5678u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let keys: Vec<u32> = (0..3000).map(|_| next() as u32).collect();
        let bits = gate_from(&keys);
        let mut short = Box::new([0u64; SHORT_WORDS]);
        for _ in 0..4000 {
            let k = (next() & 0xffff) as usize;
            short[k >> 6] |= 1u64 << (k & 63);
        }
        let kind = GateKind::detect();
        let (mut set4, mut set2) = (0u32, 0u32);
        for round in 0..2000 {
            let mut block = [0u8; BLOCK_BYTES];
            for (i, b) in block.iter_mut().enumerate() {
                *b = if round % 2 == 0 {
                    next() as u8
                } else {
                    keys[(round + i / 4) % keys.len()].to_le_bytes()[i % 4]
                };
            }
            for g in [Some(&bits), None] {
                let s = mask64_pair_scalar(g, &short, &block);
                if g.is_some() {
                    assert_eq!(s.0, mask64_scalar(&bits, &block));
                    set4 += s.0.count_ones();
                } else {
                    assert_eq!(s.0, 0);
                }
                set2 += s.1.count_ones();
                assert_eq!(kind.mask64_pair(g, &short, &block), s, "round {round}");
            }
        }
        assert!(
            set4 > 1000 && set2 > 1000 && set2 < 4000 * 64 - 1000,
            "{set4} {set2}"
        );
    }

    #[test]
    fn scalar_bits_match_gate_bit() {
        let bits = gate_from(&[
            u32::from_le_bytes(*b"abcd"),
            u32::from_le_bytes(*b"\0\0\0\0"),
        ]);
        let mut block = [b'x'; BLOCK_BYTES];
        block[10..14].copy_from_slice(b"abcd");
        block[40..48].fill(0);
        let m = mask64_scalar(&bits, &block);
        // Window k = block[k..k + 4]: "abcd" at k = 10, zeros at k = 40..=44.
        assert_eq!(m & (1 << 10), 1 << 10);
        for k in 40..=44 {
            assert_ne!(m & (1 << k), 0, "{k}");
        }
        assert_eq!(m & (1 << 9), 0);
    }
}
