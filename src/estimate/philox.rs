//! Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
//! 3", SC 2011): a counter-based generator, 128 random bits from a 128-bit counter and a
//! 64-bit key, with no state between calls.
//!
//! Why Philox: every sample's noise must be a pure function of its key and counter (so a batch
//! splits over threads freely), it passes TestU01's BigCrush, and its ten rounds are 32 x 32
//! -> 64-bit multiplies and xors, which AVX2 runs four lanes at a time (`vpmuludq`): a block
//! costs a few nanoseconds per lane in the vector build, against tens for a ChaCha block
//! written out in scalar code. It is the generator of JAX's and cuRAND's counter-based APIs.
//!
//! [`blocks`] runs `N` counters side by side (structure of arrays) so that the lane loops
//! vectorise in whichever build inlines it; it gives each lane what [`block`] gives.

/// The round multipliers and the key schedule's increments (the constants of the paper).
const M0: u32 = 0xd251_1f53;
const M1: u32 = 0xcd9e_8d57;
const W0: u32 = 0x9e37_79b9;
const W1: u32 = 0xbb67_ae85;

/// One block: the ten rounds on `ctr` under `key`.
pub fn block(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = ctr.map(|w| [w]);
    blocks::<1>(&mut c, key);
    c.map(|w| w[0])
}

/// [`block`] of `N` counters at once, in place: `c[word][lane]`.
// Indexed lane loops over four arrays at once: the shape LLVM vectorises.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub fn blocks<const N: usize>(c: &mut [[u32; N]; 4], key: [u32; 2]) {
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        for l in 0..N {
            let p0 = u64::from(M0) * u64::from(c[0][l]);
            let p1 = u64::from(M1) * u64::from(c[2][l]);
            let next = [
                (p1 >> 32) as u32 ^ c[1][l] ^ k0,
                p1 as u32,
                (p0 >> 32) as u32 ^ c[3][l] ^ k1,
                p0 as u32,
            ];
            for (w, v) in next.into_iter().enumerate() {
                c[w][l] = v;
            }
        }
    }
}

/// The words of a block as the normal transform reads them: `(w0 | w1 << 32, w2 | w3 << 32)`.
#[inline(always)]
pub fn words64(w: [u32; 4]) -> (u64, u64) {
    (
        u64::from(w[0]) | u64::from(w[1]) << 32,
        u64::from(w[2]) | u64::from(w[3]) << 32,
    )
}

/// [`blocks`] of eight counters with AVX2, returning each lane's [`words64`]: the same numbers.
///
/// Each 32-bit word lives in the low half of a 64-bit lane, so `vpmuludq` takes it as it is
/// and the product's halves need one shift and no shuffles. The high halves of the lanes
/// holding a product's low word are left as they are: every later read of them is either a
/// multiply (which reads the low half only) or an xor whose high half nobody reads, until
/// the words are packed at the end.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn blocks8_avx2(c: &[[u32; 8]; 4], key: [u32; 2]) -> ([u64; 8], [u64; 8]) {
    use std::arch::x86_64::*;
    // SAFETY (every block below): unaligned loads and stores of exactly the arrays' bytes.
    let load = |w: &[u32; 8], half: usize| unsafe {
        _mm256_cvtepu32_epi64(_mm_loadu_si128(w.as_ptr().add(4 * half).cast()))
    };
    let m0 = _mm256_set1_epi64x(i64::from(M0));
    let m1 = _mm256_set1_epi64x(i64::from(M1));
    let mut x = [[_mm256_setzero_si256(); 4]; 2];
    for (half, lanes) in x.iter_mut().enumerate() {
        for (word, v) in lanes.iter_mut().enumerate() {
            *v = load(&c[word], half);
        }
    }
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        let kv0 = _mm256_set1_epi64x(i64::from(k0));
        let kv1 = _mm256_set1_epi64x(i64::from(k1));
        for [c0, c1, c2, c3] in x.iter_mut() {
            let p0 = _mm256_mul_epu32(*c0, m0);
            let p1 = _mm256_mul_epu32(*c2, m1);
            let n0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32), *c1), kv0);
            let n2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32), *c3), kv1);
            (*c0, *c1, *c2, *c3) = (n0, p1, n2, p0);
        }
    }
    let mut first = [0u64; 8];
    let mut second = [0u64; 8];
    for (half, [c0, c1, c2, c3]) in x.into_iter().enumerate() {
        let r = _mm256_blend_epi32(c0, _mm256_slli_epi64(c1, 32), 0b1010_1010);
        let a = _mm256_blend_epi32(c2, _mm256_slli_epi64(c3, 32), 0b1010_1010);
        // SAFETY: four u64 lanes into four u64 of each array.
        unsafe {
            _mm256_storeu_si256(first.as_mut_ptr().add(4 * half).cast(), r);
            _mm256_storeu_si256(second.as_mut_ptr().add(4 * half).cast(), a);
        }
    }
    (first, second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers_of_the_reference_implementation() {
        // Random123's published known-answer vectors for Philox4x32-10.
        let cases = [
            (
                [0; 4],
                [0; 2],
                [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8],
            ),
            (
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd],
            ),
            (
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0],
                [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
            ),
        ];
        for (ctr, key, want) in cases {
            assert_eq!(block(ctr, key), want, "counter {ctr:x?}");
        }
    }

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn lanes_side_by_side_give_what_one_block_gives() {
        let key = [0x1234_5678, 0x9abc_def0];
        let mut c = [[0u32; 5]; 4];
        for l in 0..5 {
            c[0][l] = l as u32 * 7;
            c[1][l] = 3;
            c[3][l] = u32::MAX - l as u32;
        }
        let before = c;
        blocks(&mut c, key);
        for l in 0..5 {
            let one = block([0, 1, 2, 3].map(|w| before[w][l]), key);
            assert_eq!([0, 1, 2, 3].map(|w| c[w][l]), one);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    #[allow(clippy::needless_range_loop)]
    fn the_avx2_build_gives_what_one_block_gives() {
        if !crate::cpu::avx2_fma() {
            return;
        }
        // Words with high bits set everywhere, so that a stray high half would show.
        let key = [0xfedc_ba98, 0x7654_3210];
        let mut c = [[0u32; 8]; 4];
        for l in 0..8 {
            for w in 0..4 {
                c[w][l] = (0x9e37_79b9u32 ^ (w as u32) << 28).wrapping_mul(l as u32 + 1) | 1 << 31;
            }
        }
        // SAFETY: the CPU has AVX2 (checked above).
        let (first, second) = unsafe { blocks8_avx2(&c, key) };
        for l in 0..8 {
            let one = block([0, 1, 2, 3].map(|w| c[w][l]), key);
            assert_eq!((first[l], second[l]), words64(one), "lane {l}");
        }
    }
}
