//! Per-component sums over a batch's gradient samples (for the measurement statistics of
//! [`Engine::gradient_spread`](super::Engine::gradient_spread)), in lane order within each
//! component so that they have the bits of a plain one-component-at-a-time loop.
//!
//! A sum over a thousand samples is a chain of a thousand dependent additions, so what bounds
//! it is how many chains run at once. The gradient blocks are component-major (`[p * w + l]`:
//! one row of `w` lanes per component), which suits the lanes but not a vector across
//! components. The portable build keeps four scalar chains; the AVX2 build transposes two
//! lanes of four rows at a time in registers and keeps up to sixteen components (four
//! vectors) in flight, the same additions in the same order per component.
//!
//! Not here: the blocks' layout (`engine.rs`).

/// What is summed per element.
#[derive(Copy, Clone)]
pub(super) enum Summand<'a> {
    /// The element itself.
    Value,
    /// `(x - mean[p]) * (x - mean[p])` for component `p` (a multiply, never fused).
    SquaredDeviation(&'a [f64]),
}

impl Summand<'_> {
    #[inline(always)]
    fn of(self, p: usize, x: f64) -> f64 {
        match self {
            Summand::Value => x,
            Summand::SquaredDeviation(mean) => (x - mean[p]) * (x - mean[p]),
        }
    }
}

/// `acc[p] += what(p, block[p * w + l])` for every component `p` and lane `l`, in lane order
/// for each `p`.
pub(super) fn add_rows(acc: &mut [f64], block: &[f64], w: usize, what: Summand) {
    debug_assert!(block.len() >= acc.len() * w);
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::avx2_fma() {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { add_rows_avx2(acc, block, w, what) };
        return;
    }
    add_rows_portable(acc, block, w, what);
}

/// The portable build: four components at a time (four independent chains of additions).
// A lane loop over four rows at once: the shape that keeps four chains in flight.
#[allow(clippy::needless_range_loop)]
pub(super) fn add_rows_portable(acc: &mut [f64], block: &[f64], w: usize, what: Summand) {
    let d = acc.len();
    let mut p = 0;
    while p + 4 <= d {
        let rows: [&[f64]; 4] = std::array::from_fn(|j| &block[(p + j) * w..(p + j + 1) * w]);
        let mut a = [acc[p], acc[p + 1], acc[p + 2], acc[p + 3]];
        for l in 0..w {
            for j in 0..4 {
                a[j] += what.of(p + j, rows[j][l]);
            }
        }
        acc[p..p + 4].copy_from_slice(&a);
        p += 4;
    }
    add_rows_scalar(acc, block, w, what, p);
}

/// Components `from..` one at a time (the fewer than four left over).
fn add_rows_scalar(acc: &mut [f64], block: &[f64], w: usize, what: Summand, from: usize) {
    for (q, v) in acc.iter_mut().enumerate().skip(from) {
        for &x in &block[q * w..(q + 1) * w] {
            *v += what.of(q, x);
        }
    }
}

/// The AVX2 build: groups of four components as one vector each, up to four groups at once.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) fn add_rows_avx2(acc: &mut [f64], block: &[f64], w: usize, what: Summand) {
    let d = acc.len();
    let mut p = 0;
    while p + 16 <= d {
        groups_avx2::<4>(acc, block, w, what, p);
        p += 16;
    }
    while p + 4 <= d {
        groups_avx2::<1>(acc, block, w, what, p);
        p += 4;
    }
    add_rows_scalar(acc, block, w, what, p);
}

/// Components `p..p + 4 * G` as `G` vectors of four: per pair of lanes, each group's four
/// rows are loaded two lanes at a time and transposed (two 128-bit loads into one register,
/// then an unpack gives lane `l` of the four components and another lane `l + 1`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn groups_avx2<const G: usize>(acc: &mut [f64], block: &[f64], w: usize, what: Summand, p: usize) {
    use std::arch::x86_64::*;
    assert!(acc.len() >= p + 4 * G && block.len() >= (p + 4 * G) * w);
    let base = block.as_ptr();
    // SAFETY: every pointer below is `base + (p + 4 q + j) * w + l` (or `+ l + 1`) with
    // `q < G`, `j < 4` and `l + 1 < w` (or `l < w`), inside `block` by the assertion above;
    // the loads are unaligned ones; `acc` and `mean` are read at `p..p + 4 G`, in bounds.
    unsafe {
        let row = |q: usize, j: usize, l: usize| base.add((p + 4 * q + j) * w + l);
        let mut a: [__m256d; G] =
            std::array::from_fn(|q| _mm256_loadu_pd(acc.as_ptr().add(p + 4 * q)));
        let mean: [__m256d; G] = std::array::from_fn(|q| match what {
            Summand::Value => _mm256_setzero_pd(),
            Summand::SquaredDeviation(mean) => {
                assert!(mean.len() >= p + 4 * G);
                _mm256_loadu_pd(mean.as_ptr().add(p + 4 * q))
            }
        });
        let term = |q: usize, x: __m256d| match what {
            Summand::Value => x,
            Summand::SquaredDeviation(_) => {
                let dx = _mm256_sub_pd(x, mean[q]);
                _mm256_mul_pd(dx, dx)
            }
        };
        let mut l = 0;
        while l + 2 <= w {
            for (q, aq) in a.iter_mut().enumerate() {
                // [r0[l], r0[l+1], r2[l], r2[l+1]] and [r1[l], r1[l+1], r3[l], r3[l+1]].
                let even = _mm256_insertf128_pd::<1>(
                    _mm256_castpd128_pd256(_mm_loadu_pd(row(q, 0, l))),
                    _mm_loadu_pd(row(q, 2, l)),
                );
                let odd = _mm256_insertf128_pd::<1>(
                    _mm256_castpd128_pd256(_mm_loadu_pd(row(q, 1, l))),
                    _mm_loadu_pd(row(q, 3, l)),
                );
                let at_l = _mm256_unpacklo_pd(even, odd);
                let at_next = _mm256_unpackhi_pd(even, odd);
                *aq = _mm256_add_pd(*aq, term(q, at_l));
                *aq = _mm256_add_pd(*aq, term(q, at_next));
            }
            l += 2;
        }
        if l < w {
            for (q, aq) in a.iter_mut().enumerate() {
                let at_l =
                    _mm256_setr_pd(*row(q, 0, l), *row(q, 1, l), *row(q, 2, l), *row(q, 3, l));
                *aq = _mm256_add_pd(*aq, term(q, at_l));
            }
        }
        for (q, aq) in a.into_iter().enumerate() {
            _mm256_storeu_pd(acc.as_mut_ptr().add(p + 4 * q), aq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbers of every magnitude and both signs, so that the order of additions shows in
    /// the bits.
    fn block(d: usize, w: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..d * w)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let m = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                m * 10f64.powi(((s >> 3) % 17) as i32 - 8)
            })
            .collect()
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_vector_build_gives_the_bits_of_the_portable_one() {
        if !crate::cpu::avx2_fma() {
            return;
        }
        let bits = |xs: &[f64]| xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let mut checked = 0;
        for d in [1, 3, 4, 5, 15, 16, 17, 33, 50] {
            let mean = block(d, 1, 99);
            for w in [1, 2, 7, 16] {
                for what in [Summand::Value, Summand::SquaredDeviation(&mean)] {
                    let init = block(d, 1, 5);
                    let (mut want, mut got) = (init.clone(), init);
                    for seed in 0..3 {
                        let b = block(d, w, seed);
                        add_rows_portable(&mut want, &b, w, what);
                        // SAFETY: the CPU has AVX2 (checked above).
                        unsafe { add_rows_avx2(&mut got, &b, w, what) };
                    }
                    assert_eq!(bits(&got), bits(&want), "d {d} w {w}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 9 * 4 * 2);
    }

    #[test]
    fn sums_are_plain_sums_in_lane_order() {
        let (d, w) = (6, 5);
        let b = block(d, w, 7);
        let mut acc = vec![0.0; d];
        add_rows(&mut acc, &b, w, Summand::Value);
        for p in 0..d {
            let mut s = 0.0;
            for l in 0..w {
                s += b[p * w + l];
            }
            assert_eq!(acc[p].to_bits(), s.to_bits(), "component {p}");
        }
    }
}
