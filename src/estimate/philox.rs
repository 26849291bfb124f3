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

/// One Philox round on every vector of `$x` (four lanes of `[__m256i; 4]`, each 32-bit word
/// in the low half of a 64-bit lane, as [`blocks8_avx2`] explains), with the multipliers
/// `$m0`, `$m1` and the round keys `$kv0`, `$kv1` broadcast. A macro rather than a function
/// so that it expands inside the AVX2 functions that use it, whose target features an
/// out-of-line helper would not have.
#[cfg(target_arch = "x86_64")]
macro_rules! philox_round_avx2 {
    ($x:expr, $m0:expr, $m1:expr, $kv0:expr, $kv1:expr) => {
        for [c0, c1, c2, c3] in $x.iter_mut() {
            let p0 = _mm256_mul_epu32(*c0, $m0);
            let p1 = _mm256_mul_epu32(*c2, $m1);
            let n0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32), *c1), $kv0);
            let n2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32), *c3), $kv1);
            (*c0, *c1, *c2, *c3) = (n0, p1, n2, p0);
        }
    };
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
        philox_round_avx2!(x, m0, m1, kv0, kv1);
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

/// Philox in the AVX2 build for sixteen lanes whose counters share three of their four words:
/// `[head, lane[l], a, b]`, with `head` chosen per call and `lane[l]` per lane. The normals'
/// blocks of a group of samples have this shape (the block index in `head`, the sample in
/// the second word, the iteration in the last two).
///
/// Why: the shared words make the first rounds the same for every lane, or the same for
/// every call. Round 0's two products are of shared words (scalars); round 1's first product
/// is of a word that depends on the lane only, so it is computed once, when the group is
/// set up; round 1's second and round 2's first product are of shared words again. Of the
/// twenty products a block needs per lane, fifteen are left: the same numbers, a quarter
/// fewer vector operations.
#[cfg(target_arch = "x86_64")]
pub struct Shared16 {
    /// The round keys, and those of rounds 3 to 9 in every lane (memory operands of the
    /// xors, instead of a broadcast per round).
    keys: [[u32; 2]; 10],
    key_lanes: [[std::arch::x86_64::__m256i; 2]; 7],
    /// Round 0's second output word, `lo(M1 a)`, and the shared last word `b`.
    x1: u32,
    b: u32,
    /// Round 1's first product, `M0 * (hi(M1 a) ^ lane ^ k0)`, per lane: its high and low
    /// halves.
    q_hi: [std::arch::x86_64::__m256i; 4],
    q_lo: [std::arch::x86_64::__m256i; 4],
}

/// The high and low halves of `m * x`.
#[inline(always)]
fn mul_hi_lo(m: u32, x: u32) -> (u32, u32) {
    let p = u64::from(m) * u64::from(x);
    ((p >> 32) as u32, p as u32)
}

#[cfg(target_arch = "x86_64")]
impl Shared16 {
    /// The group of counters `[_, lane[l], a, b]` under `key`.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn new(key: [u32; 2], lane: [u32; 16], a: u32, b: u32) -> Shared16 {
        use std::arch::x86_64::*;
        let mut keys = [key; 10];
        for r in 1..10 {
            keys[r] = [
                keys[r - 1][0].wrapping_add(W0),
                keys[r - 1][1].wrapping_add(W1),
            ];
        }
        let key_lanes =
            std::array::from_fn(|r| keys[3 + r].map(|k| _mm256_set1_epi64x(i64::from(k))));
        let (hi1, x1) = mul_hi_lo(M1, a);
        let m0 = _mm256_set1_epi64x(i64::from(M0));
        let shared = _mm256_set1_epi64x(i64::from(hi1 ^ key[0]));
        let mut q_hi = [_mm256_setzero_si256(); 4];
        let mut q_lo = [_mm256_setzero_si256(); 4];
        for v in 0..4 {
            // SAFETY: a 16-byte load of four of the sixteen lanes.
            let l =
                unsafe { _mm256_cvtepu32_epi64(_mm_loadu_si128(lane[4 * v..].as_ptr().cast())) };
            let q = _mm256_mul_epu32(_mm256_xor_si256(l, shared), m0);
            q_hi[v] = _mm256_srli_epi64::<32>(q);
            q_lo[v] = q;
        }
        Shared16 {
            keys,
            key_lanes,
            x1,
            b,
            q_hi,
            q_lo,
        }
    }

    /// The words of the block `[head, lane[l], a, b]` that rounds 0 to 2 share between the
    /// lanes: what [`Shared16::words`] starts from.
    #[inline(always)]
    pub fn head(&self, head: u32) -> Head {
        let k = &self.keys;
        // Round 0: both products of shared words (the first output word, per lane, went
        // into the group's `q`).
        let (hi0, x3) = mul_hi_lo(M0, head);
        let x2 = hi0 ^ self.b ^ k[0][1];
        // Round 1: the first product is the group's `q`; the second of the shared `x2`.
        let (hi1, y1) = mul_hi_lo(M1, x2);
        let y0 = hi1 ^ self.x1 ^ k[1][0];
        // Round 2: the first product of the shared `y0`; the second per lane.
        let (hi0, z3) = mul_hi_lo(M0, y0);
        Head {
            y2: x3 ^ k[1][1],
            z0: y1 ^ k[2][0],
            z2: hi0 ^ k[2][1],
            z3,
        }
    }

    /// The blocks of counters `[head, lane[l], a, b]` of the sixteen lanes (`head` through
    /// [`Shared16::head`]), as [`words64`] of each lane: four lanes per vector, the first
    /// words in `.0`, the second in `.1`. All sixteen lanes go in step: a round is a chain
    /// of a multiply, a shift and xors whose latency, not the count of operations, limits
    /// eight lanes at a time; sixteen give the processor four chains to overlap (measured
    /// faster, though the state then fills more than the sixteen AVX2 registers).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn words(
        &self,
        head: &Head,
    ) -> (
        [std::arch::x86_64::__m256i; 4],
        [std::arch::x86_64::__m256i; 4],
    ) {
        use std::arch::x86_64::*;
        let set = |x: u32| _mm256_set1_epi64x(i64::from(x));
        let m0 = set(M0);
        let m1 = set(M1);
        let (y2, z0, z2, z3) = (set(head.y2), set(head.z0), set(head.z2), set(head.z3));
        let mut x = [[_mm256_setzero_si256(); 4]; 4];
        for (v, [c0, c1, c2, c3]) in x.iter_mut().enumerate() {
            let p1 = _mm256_mul_epu32(_mm256_xor_si256(self.q_hi[v], y2), m1);
            *c0 = _mm256_xor_si256(_mm256_srli_epi64::<32>(p1), z0);
            *c1 = p1;
            *c2 = _mm256_xor_si256(self.q_lo[v], z2);
            *c3 = z3;
        }
        // Rounds 3 to 9 per lane, as in [`blocks8_avx2`], written out (a loop over the
        // rounds kept copying the state between registers).
        let round = |x: &mut [[__m256i; 4]; 4], [kv0, kv1]: [__m256i; 2]| {
            philox_round_avx2!(x, m0, m1, kv0, kv1);
        };
        let k = &self.key_lanes;
        round(&mut x, k[0]);
        round(&mut x, k[1]);
        round(&mut x, k[2]);
        round(&mut x, k[3]);
        round(&mut x, k[4]);
        round(&mut x, k[5]);
        round(&mut x, k[6]);
        let mut words0 = [_mm256_setzero_si256(); 4];
        let mut second = [_mm256_setzero_si256(); 4];
        for (v, [c0, c1, c2, c3]) in x.into_iter().enumerate() {
            words0[v] = _mm256_blend_epi32(c0, _mm256_slli_epi64(c1, 32), 0b1010_1010);
            second[v] = _mm256_blend_epi32(c2, _mm256_slli_epi64(c3, 32), 0b1010_1010);
        }
        (words0, second)
    }
}

/// The words of one block that the first rounds give every lane of a [`Shared16`] group.
#[cfg(target_arch = "x86_64")]
pub struct Head {
    /// Round 1's third word is `hi(q) ^ y2`.
    y2: u32,
    /// Round 2's first word is `hi(M1 y2') ^ z0`, its third `lo(q) ^ z2`, its fourth `z3`.
    z0: u32,
    z2: u32,
    z3: u32,
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
    fn sixteen_lanes_with_shared_words_give_what_one_block_gives() {
        use std::arch::x86_64::*;
        if !crate::cpu::avx2_fma() {
            return;
        }
        let key = [0x0bad_f00d, 0xdead_beef];
        let lanes: [u32; 16] = std::array::from_fn(|l| 0xffff_fff8u32.wrapping_add(l as u32));
        for (a, b) in [(0, 0), (0x8000_0001, 0xffff_ffff), (12345, 0x0001_0000)] {
            // SAFETY: the CPU has AVX2 (checked above).
            let group = unsafe { Shared16::new(key, lanes, a, b) };
            for head in [0, 1, 0x3fff_ffff, 0x4000_0007, u32::MAX] {
                // SAFETY: as above; the stores write four u64 into four.
                let (w0, w1) = unsafe { group.words(&group.head(head)) };
                let mut got = [[0u64; 4]; 8];
                for v in 0..4 {
                    unsafe {
                        _mm256_storeu_si256(got[v].as_mut_ptr().cast(), w0[v]);
                        _mm256_storeu_si256(got[4 + v].as_mut_ptr().cast(), w1[v]);
                    }
                }
                for (l, &lane) in lanes.iter().enumerate() {
                    let want = words64(block([head, lane, a, b], key));
                    let (v, i) = (l / 4, l % 4);
                    assert_eq!((got[v][i], got[4 + v][i]), want, "{a} {b} {head} lane {l}");
                }
            }
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
