//! The ziggurat's fast path in AVX2 vector code: four words per instruction, and the
//! sixteen-lane form the bulk draws feed straight from the AES rounds ([`Staged32`]), with
//! the same operations as the scalar [`fast`](super::fast), so the same bits.

#[cfg(doc)]
use super::fast;
#[cfg(target_arch = "x86_64")]
use super::{LAYER_BITS, LAYERS, Ziggurat};

/// [`fast`] on four words with AVX2, and the mask of the rejected ones.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn fast4_avx2(t: &Ziggurat, w: [u64; 4]) -> ([f64; 4], u32) {
    use std::arch::x86_64::*;
    // SAFETY: an unaligned load of the four words.
    let w = unsafe { _mm256_loadu_si256(w.as_ptr().cast()) };
    // SAFETY: the caller's CPU has AVX2.
    let (z, rejected) = unsafe { fast4v_avx2(t, w) };
    let mut out = [0.0; 4];
    // SAFETY: four doubles into four.
    unsafe { _mm256_storeu_pd(out.as_mut_ptr(), z) };
    (out, rejected)
}

/// [`fast`] on the four words of a vector with AVX2: the normals, and the mask of the
/// rejected lanes. The table loads are four 16-byte loads (`[x[i], x[i + 1]]`, side by side
/// in [`Ziggurat::x`]) rearranged
/// into the widths and the next edges: fewer micro-operations than two gathers on the CPUs
/// we measured.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn fast4v_avx2(
    t: &Ziggurat,
    w: std::arch::x86_64::__m256i,
) -> (std::arch::x86_64::__m256d, u32) {
    use std::arch::x86_64::*;
    let pair = |i: i64| {
        // SAFETY: a 16-byte load of `x[i]` and `x[i + 1]`, inside `x` for a layer `i`.
        unsafe { _mm_loadu_pd(t.x.as_ptr().add((i as u64 & (LAYERS as u64 - 1)) as usize)) }
    };
    let lo = _mm256_castsi256_si128(w);
    let hi = _mm256_extracti128_si256::<1>(w);
    // [x0, n0, x2, n2] and [x1, n1, x3, n3]: their low and high halves interleave to the
    // widths and the next edges in lane order.
    let even = _mm256_insertf128_pd::<1>(
        _mm256_castpd128_pd256(pair(_mm_cvtsi128_si64(lo))),
        pair(_mm_cvtsi128_si64(hi)),
    );
    let odd = _mm256_insertf128_pd::<1>(
        _mm256_castpd128_pd256(pair(_mm_extract_epi64::<1>(lo))),
        pair(_mm_extract_epi64::<1>(hi)),
    );
    let width = _mm256_unpacklo_pd(even, odd);
    let next = _mm256_unpackhi_pd(even, odd);
    let one = _mm256_set1_epi64x(0x3ff0_0000_0000_0000);
    let u = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(one, _mm256_srli_epi64(w, 12))),
        _mm256_set1_pd(1.0 - f64::EPSILON / 2.0),
    );
    let x = _mm256_mul_pd(u, width);
    let ok = _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LT_OQ>(x, next)) as u32;
    // Bit `LAYER_BITS` of each word to its sign bit.
    let sign = _mm256_and_si256(
        _mm256_slli_epi64::<{ 63 - LAYER_BITS as i32 }>(w),
        _mm256_set1_epi64x(i64::MIN),
    );
    (_mm256_or_pd(x, _mm256_castsi256_pd(sign)), !ok & 0xf)
}

/// The 32 words of sixteen lanes' blocks, as [`fast32_avx2`] reads them: four lanes per
/// vector in lane order (`words[..4]` the lanes' first words, `words[4..]` their second).
///
/// Why in memory: the words reach the integer side (for the table loads' addresses) by
/// plain loads, which have three ports, rather than by vector-to-integer moves, which have one
/// and take two micro-operations for the upper words; and the caller can stage the next
/// block's words while the fast path works on these. Each address is then two integer
/// operations on the loaded word (the integer units are idle in this loop), where computing
/// the offsets in vectors and storing them cost a shift and an `and` on the vector units,
/// which the AES rounds and the fast path keep busy.
///
/// The AVX-512 build (`super::avx512`) stages the same 32 words in the same order, eight
/// to a 512-bit store (hence the alignment).
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
pub struct Staged32 {
    pub(super) words: [[u64; 4]; 8],
}

/// Stores the words `w` into `out` (see [`Staged32`]).
///
/// # Safety
/// The CPU must have AVX2, and the caller must be compiled with it (a function with the
/// target feature): it inlines there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn stage32_avx2(w: &[std::arch::x86_64::__m256i; 8], out: &mut Staged32) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's promise; the stores write four words into four, aligned.
    unsafe {
        for (w, words) in w.iter().zip(&mut out.words) {
            _mm256_store_si256(words.as_mut_ptr().cast(), *w);
        }
    }
}

/// [`fast`] on the 32 words of `staged`: the normals into `rows.0` (from the lanes' first
/// words) and `rows.1`, and a mask of the rejected words whose bit `b` stands for the word
/// [`REJECTED_WORD`]`[b]` names. The same bits as [`fast`]: the 32 rejection bits come from
/// one byte mask of packed comparisons instead of a mask move per four words, and the sign
/// comes with the width. The layer and sign bits of a word index [`Ziggurat::signed_x`],
/// whose entry and the next are `±x[i]` and `±x[i + 1]`: the product `u (±x[i])` is
/// `±(u x[i])` to the bit (rounding to nearest is symmetric), and for two doubles of one
/// sign, comparing their bits as signed integers compares their magnitudes, so
/// `bits(±u x[i]) < bits(±x[i + 1])` is `u x[i] < x[i + 1]`. At the top layer the next
/// entry is `-x[0]` (or `-0` for the last): of the other sign, or the smallest signed
/// integer, so the lane is rejected, as `x[LAYERS] = 0` rejects it. This saves the sign's
/// shift, `and` and `or` per four words.
///
/// # Safety
/// The CPU must have AVX2, and the caller must be compiled with it (a function with the
/// target feature): it inlines there, so that its constants stay in registers.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn fast32_avx2(
    t: &Ziggurat,
    staged: &Staged32,
    rows: (&mut [f64; 16], &mut [f64; 16]),
) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: the CPU has AVX2 and the caller's build uses it (the caller's promise); the
    // loads and stores read and write four values of four (the staged arrays, aligned, and
    // the rows from `4 (v % 4)`); a pair's load reads entries `j` and `j + 1` of
    // `signed_x` for `j < 2 LAYERS`.
    unsafe {
        let base = t.signed_x.as_ptr();
        // The words are read with volatile loads: LLVM would otherwise forward their
        // stores and move them out of the vectors one by one again.
        let pair = |word: &u64| {
            let j = std::ptr::read_volatile(word) & (2 * LAYERS as u64 - 1);
            _mm_loadu_pd(base.add(j as usize))
        };
        let one = _mm256_set1_epi64x(0x3ff0_0000_0000_0000);
        let half_ulp_below_one = _mm256_set1_pd(1.0 - f64::EPSILON / 2.0);
        let mut inside = [_mm256_setzero_si256(); 8];
        for v in 0..8 {
            let o = &staged.words[v];
            let w = _mm256_load_si256(staged.words[v].as_ptr().cast());
            // [x0, n0, x2, n2] and [x1, n1, x3, n3], as in `fast4v_avx2`.
            let even = _mm256_set_m128d(pair(&o[2]), pair(&o[0]));
            let odd = _mm256_set_m128d(pair(&o[3]), pair(&o[1]));
            let width = _mm256_unpacklo_pd(even, odd);
            let next = _mm256_unpackhi_pd(even, odd);
            let u = _mm256_sub_pd(
                _mm256_castsi256_pd(_mm256_or_si256(one, _mm256_srli_epi64(w, 12))),
                half_ulp_below_one,
            );
            let z = _mm256_mul_pd(u, width);
            inside[v] = _mm256_cmpgt_epi64(_mm256_castpd_si256(next), _mm256_castpd_si256(z));
            let row = if v < 4 { &mut *rows.0 } else { &mut *rows.1 };
            _mm256_storeu_pd(row[4 * (v % 4)..].as_mut_ptr(), z);
        }
        // Each comparison is all ones or all zeros per word: keep one 32-bit half of each
        // (blend), then pack with signed saturation down to a byte per word.
        let m: [__m256i; 4] = std::array::from_fn(|p| {
            _mm256_blend_epi32::<0b1010_1010>(inside[2 * p], inside[2 * p + 1])
        });
        let q0 = _mm256_packs_epi32(m[0], m[1]);
        let q1 = _mm256_packs_epi32(m[2], m[3]);
        !_mm256_movemask_epi8(_mm256_packs_epi16(q0, q1)) as u32
    }
}

/// Which word of [`fast32_avx2`]'s input bit `b` of its mask stands for: `(v, e)`, element
/// `e` of vector `v`. The order the blend and the two packs (each within 128-bit halves)
/// leave the words in.
pub const REJECTED_WORD: [(u8, u8); 32] = rejected_words();

const fn rejected_words() -> [(u8, u8); 32] {
    let mut out = [(0u8, 0u8); 32];
    let mut b = 0;
    while b < 32 {
        // The final pack: byte `r` of half `h` is 16-bit element `8h + r % 8` of `q[r / 8]`.
        let (h, r) = (b / 16, b % 16);
        let (q, r) = (r / 8, r % 8);
        // The packs of 32 bits: 16-bit element `r` of half `h` of `q` is 32-bit element
        // `4h + r % 4` of `m[2q + r / 4]`.
        let (p, e32) = (2 * q + r / 4, 4 * h + r % 4);
        // The blend: even 32-bit elements from `outside[2p]`, odd from `outside[2p + 1]`,
        // each the half of the 64-bit element `e32 / 2`.
        out[b] = ((2 * p + e32 % 2) as u8, (e32 / 2) as u8);
        b += 1;
    }
    out
}

/// The vector path's tests run where it exists, on x86-64.
#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::{fast, fast_path_cases, tables};
    use super::*;

    /// [`fast32_avx2`] in a build with AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn fast32(t: &Ziggurat, words: &[u64; 32]) -> ([f64; 32], u32) {
        use std::arch::x86_64::*;
        let mut staged = Staged32::default();
        let v: [__m256i; 8] = std::array::from_fn(|v| {
            // SAFETY: four words of 32.
            unsafe { _mm256_loadu_si256(words[4 * v..].as_ptr().cast()) }
        });
        fast_path_cases::joined(|rows| {
            // SAFETY: this function's feature, which the caller checked.
            unsafe {
                stage32_avx2(&v, &mut staged);
                fast32_avx2(t, &staged, rows)
            }
        })
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_vector_fast_path_gives_what_the_scalar_one_gives() {
        if !crate::cpu::avx2_fma() {
            return;
        }
        let t = tables();
        let words = fast_path_cases::words();
        for chunk in words.chunks_exact(32) {
            let chunk: &[u64; 32] = chunk.try_into().expect("32 words");
            // SAFETY: the CPU has AVX2 (checked above).
            let (z, mask) = unsafe { fast32(t, chunk) };
            for (b, &(v, e)) in REJECTED_WORD.iter().enumerate() {
                // Vector `v` is row `v / 4`, lanes `4 (v % 4)..`.
                let at = 16 * usize::from(v / 4) + 4 * usize::from(v % 4) + usize::from(e);
                let (want, ok) = fast(t, chunk[at]);
                assert_eq!(mask >> b & 1 == 0, ok, "{:x}", chunk[at]);
                if ok {
                    assert_eq!(z[at].to_bits(), want.to_bits(), "{:x}", chunk[at]);
                }
            }
        }
    }
}
