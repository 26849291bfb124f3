//! The ziggurat's fast path for sixteen lanes in AVX-512 vector code: eight words per
//! instruction, the rejections straight into a mask register, with the same operations as
//! the scalar [`fast`](super::fast), so the same bits.

#[cfg(doc)]
use super::fast;
#[cfg(target_arch = "x86_64")]
use super::{LAYERS, Staged32, Ziggurat};

/// Stores the words `w` (eight lanes' words per vector: the first words of lanes `0..8`
/// and `8..16`, then the second words) into `out`, in the order [`Staged32`] keeps them.
///
/// # Safety
/// The CPU must have AVX-512 F, and the caller must be compiled with it (a function with
/// the target feature): it inlines there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn stage32_avx512(w: &[std::arch::x86_64::__m512i; 4], out: &mut Staged32) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's promise; each store writes eight words of the 32, at a multiple
    // of 64 bytes from the start of the 64-byte aligned array.
    unsafe {
        let words = out.words.as_mut_ptr().cast::<u64>();
        for (q, w) in w.iter().enumerate() {
            _mm512_store_si512(words.add(8 * q).cast(), *w);
        }
    }
}

/// [`fast`] on the 32 words of `staged`: the normals into `rows.0` (from the lanes' first
/// words) and `rows.1`, and a mask of the rejected words, bit `16 r + l` for lane `l`'s word
/// `r` (the order [`Staged32`] keeps them in). The table loads and the comparison are those
/// of [`super::fast32_avx2`] (a word's layer and sign bits index
/// [`Ziggurat::signed_x`], and the magnitudes compare as signed integers), eight lanes per
/// vector, with the comparison's result in a mask register (no packing of masks).
///
/// # Safety
/// The CPU must have AVX-512 F, and the caller must be compiled with it (a function with
/// the target feature): it inlines there, so that its constants stay in registers.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn fast32_avx512(
    t: &Ziggurat,
    staged: &Staged32,
    rows: (&mut [f64; 16], &mut [f64; 16]),
) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: the CPU has AVX-512 F and the caller's build uses it (the caller's promise);
    // the loads read eight words of the 32 (64-byte aligned), the stores write eight values
    // of a row's sixteen; a pair's load reads entries `j` and `j + 1` of `signed_x` for
    // `j < 2 LAYERS`.
    unsafe {
        let base = t.signed_x.as_ptr();
        let words = staged.words.as_ptr().cast::<u64>();
        // Volatile loads of the words, as in `fast32_avx2`: LLVM would otherwise forward
        // their stores and move them out of the vectors one by one.
        let pair = |i: usize| {
            let j = std::ptr::read_volatile(words.add(i)) & (2 * LAYERS as u64 - 1);
            _mm_loadu_pd(base.add(j as usize))
        };
        let one = _mm512_set1_epi64(0x3ff0_0000_0000_0000);
        let half_ulp_below_one = _mm512_set1_pd(1.0 - f64::EPSILON / 2.0);
        let mut rejected = 0u32;
        for q in 0..4 {
            let o = 8 * q;
            let w = _mm512_load_si512(words.add(o).cast());
            // [x0, n0, x2, n2, x4, n4, x6, n6] and [x1, n1, x3, n3, ...]: their low and
            // high halves of each 128 bits interleave to the widths and the next edges.
            let even = _mm512_insertf64x4::<1>(
                _mm512_castpd256_pd512(_mm256_set_m128d(pair(o + 2), pair(o))),
                _mm256_set_m128d(pair(o + 6), pair(o + 4)),
            );
            let odd = _mm512_insertf64x4::<1>(
                _mm512_castpd256_pd512(_mm256_set_m128d(pair(o + 3), pair(o + 1))),
                _mm256_set_m128d(pair(o + 7), pair(o + 5)),
            );
            let width = _mm512_unpacklo_pd(even, odd);
            let next = _mm512_unpackhi_pd(even, odd);
            let u = _mm512_sub_pd(
                _mm512_castsi512_pd(_mm512_or_si512(one, _mm512_srli_epi64::<12>(w))),
                half_ulp_below_one,
            );
            let z = _mm512_mul_pd(u, width);
            let inside = _mm512_cmpgt_epi64_mask(_mm512_castpd_si512(next), _mm512_castpd_si512(z));
            rejected |= u32::from(!inside) << o;
            let row = if q < 2 { &mut *rows.0 } else { &mut *rows.1 };
            _mm512_storeu_pd(row[8 * (q % 2)..].as_mut_ptr(), z);
        }
        rejected
    }
}

/// The vector path's tests run where it exists, on x86-64.
#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::{fast, fast_path_cases, tables};
    use super::*;

    /// [`fast32_avx512`] in a build with AVX-512 F.
    #[target_feature(enable = "avx512f")]
    fn fast32(t: &Ziggurat, words: &[u64; 32]) -> ([f64; 32], u32) {
        use std::arch::x86_64::*;
        let mut staged = Staged32::default();
        let v: [__m512i; 4] = std::array::from_fn(|q| {
            // SAFETY: eight words of 32.
            unsafe { _mm512_loadu_si512(words[8 * q..].as_ptr().cast()) }
        });
        fast_path_cases::joined(|rows| {
            // SAFETY: this function's feature, which the caller checked.
            unsafe {
                stage32_avx512(&v, &mut staged);
                fast32_avx512(t, &staged, rows)
            }
        })
    }

    #[test]
    fn the_512_bit_fast_path_gives_what_the_scalar_one_gives() {
        if !crate::cpu::avx512() {
            return;
        }
        let t = tables();
        let words = fast_path_cases::words();
        let mut rejected = 0;
        for chunk in words.chunks_exact(32) {
            let chunk: &[u64; 32] = chunk.try_into().expect("32 words");
            // SAFETY: the CPU has AVX-512 F (checked above).
            let (z, mask) = unsafe { fast32(t, chunk) };
            for (b, &word) in chunk.iter().enumerate() {
                let (want, ok) = fast(t, word);
                assert_eq!(mask >> b & 1 == 0, ok, "{word:x}");
                rejected += usize::from(!ok);
                if ok {
                    assert_eq!(z[b].to_bits(), want.to_bits(), "{word:x}");
                }
            }
        }
        // The two widest uniforms of every layer and sign are rejected, the two smallest
        // accepted but at the top layer.
        assert!(rejected >= 4 * LAYERS, "{rejected}");
        assert!(words.len() - rejected >= 4 * LAYERS - 4, "{rejected}");
    }
}
