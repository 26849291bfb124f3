//! The AVX2/FMA kernels of the exact `exp` and `ln`: four lanes at a time, each giving the
//! result rounded from an evaluation accurate to 2^-61 relative or better, plus a mask of the
//! lanes that result may not be libm's bits for (the caller recomputes those with std).
//!
//! Why the unmasked lanes equal std's bits: each kernel ends with `s + err`, where `s` is a
//! double, `err` the exact rounding error of the last addition, and the true value within
//! `2^-61 |s|` of `s + err` (the error budgets below). A lane passes when `|err|` is below
//! `(1/2 - M)` of the spacing of doubles at `s`, i.e. the true value lies at least `M` ulp
//! (less `2^-8` ulp for the budget) from the midpoint between `s` and its neighbour, so `s`
//! is the correctly rounded result. glibc documents a worst error of 0.511 ulp for `exp` and
//! 0.519 ulp for `log`: a result off by one from the correctly rounded value would be at least
//! `0.5 + d` ulp from the truth, `d` the distance to the midpoint, so whenever `d > 0.011`
//! (`exp`) or `d > 0.019` (`ln`) glibc returns the correctly rounded value too. We take
//! `M = 1/64` for `exp` and `M = 1/32` for `ln` (a margin of 40 % and 60 % over those bounds);
//! the fraction of lanes sent back to std is then about `2 M`: 3 % and 6 %. Measured against
//! glibc 2.36 on 1.7e7 inputs per function: with `M` shrunk to 1/4096, 4e-4 of the lanes
//! differ from std; with `M = 1/64`, `ln` still has 8 such lanes; from `M = 1/128` (`exp`)
//! and `M = 1/48` (`ln`) on, none does: our margins are twice and 1.5 times those. The one-time self-check in `mod.rs`
//! and the tests (`tests/eval_vmath.rs`) confirm the bits on the machine at hand.
//!
//! Not here: the tables (`tables.rs`), the dispatch and the fallback lanes (`mod.rs`).

use std::arch::x86_64::*;

use super::super::instr::CHUNK;
use super::tables::{EXP_N, LN_M0, Tables};

/// Adding it to `y` (`|y| < 2^51`) rounds `y` to an integer held in the low mantissa bits.
const ROUNDER: f64 = 6_755_399_441_055_744.0;
/// `exp` lanes below this are `+0.0` in every correctly-rounding-within-0.511-ulp libm:
/// `exp(-746) < 2^-1076` is less than a quarter of the smallest subnormal.
const EXP_ZERO_BELOW: f64 = -746.0;
/// The fast `exp` range: results are normal, so scaling by `2^K` is exact.
const EXP_LO: f64 = -708.0;
const EXP_HI: f64 = 709.0;
/// `1 - 2 M` for `exp` (`M = 1/64`) and `ln` (`M = 1/32`): the share of the half-spacing
/// `|err|` may take.
const EXP_PASS: f64 = 1.0 - 2.0 / 64.0;
const LN_PASS: f64 = 1.0 - 2.0 / 32.0;

#[target_feature(enable = "avx2,fma")]
#[inline]
fn splat(x: f64) -> __m256d {
    _mm256_set1_pd(x)
}

/// `a + b = s + e` exactly, given `|a| >= |b|`.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn fast_two_sum(a: __m256d, b: __m256d) -> (__m256d, __m256d) {
    let s = _mm256_add_pd(a, b);
    (s, _mm256_sub_pd(b, _mm256_sub_pd(s, a)))
}

/// Lanes where `s` may not round `s + err` as libm does: `|err| >= pass` times the half
/// spacing of doubles at `s` (the smaller one below a power of two; none at zero).
#[target_feature(enable = "avx2,fma")]
#[inline]
fn unsafe_rounding(s: __m256d, err: __m256d, pass: f64) -> __m256d {
    let exp_mask = splat(f64::from_bits(0x7ff0_0000_0000_0000));
    let sign = splat(-0.0);
    // 2^floor(log2 |s|) (zero for zero), from the exponent field alone.
    let p2 = _mm256_and_pd(s, exp_mask);
    let half = _mm256_mul_pd(p2, splat(pass * f64::EPSILON / 2.0));
    let at_p2 = _mm256_cmp_pd::<_CMP_EQ_OQ>(_mm256_andnot_pd(sign, s), p2);
    let lim = _mm256_blendv_pd(half, _mm256_mul_pd(half, splat(0.5)), at_p2);
    _mm256_cmp_pd::<_CMP_NLT_UQ>(_mm256_andnot_pd(sign, err), lim)
}

/// The four 64-bit lanes of `v` (table indices, already masked to the table's size).
#[target_feature(enable = "avx2,fma")]
#[inline]
fn lanes_u64(v: __m256i) -> [u64; 4] {
    let mut out = [0u64; 4];
    // SAFETY: `out` holds four 64-bit lanes.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, v) };
    out
}

/// `exp` of four lanes and the mask (low 4 bits) of lanes to recompute with std.
///
/// `x = k ln2/N + r` (`k = round(x N / ln2)`, `r = x - k hi - k lo` as a double-double: the
/// first step is exact with FMA, the second's rounding error is recovered by one more FMA),
/// then `exp(x) = 2^K T_j exp(r)` with `k = N K + j`, `T_j = 2^(j/N)` as a double-double and
/// `exp(r) - 1 = r + r^2 (1/2 + r/6 + ... + r^4/720)`. With `N = 256`, `|r| <= 2^-9.5`: the
/// truncation is below `r^7/5040 < 2^-78`, the table below 2^-100, each rounding after the
/// exact first sum `T_hi + T_hi r` below 2^-72: the budget of 2^-66 holds with room.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub fn exp4(t: &Tables, x: __m256d) -> (__m256d, i32) {
    let ok = _mm256_and_pd(
        _mm256_cmp_pd::<_CMP_GE_OQ>(x, splat(EXP_LO)),
        _mm256_cmp_pd::<_CMP_LE_OQ>(x, splat(EXP_HI)),
    );
    let zero = _mm256_cmp_pd::<_CMP_LT_OQ>(x, splat(EXP_ZERO_BELOW));

    let tt = _mm256_fmadd_pd(x, splat(t.exp_inv_step), splat(ROUNDER));
    let kf = _mm256_sub_pd(tt, splat(ROUNDER));
    // k + 1023 N, non-negative in range: K + 1023 = that >> log2 N with a logical shift.
    let kb = _mm256_sub_epi64(
        _mm256_castpd_si256(tt),
        _mm256_set1_epi64x((ROUNDER.to_bits() - 1023 * EXP_N as u64) as i64),
    );
    let j = _mm256_and_si256(kb, _mm256_set1_epi64x(EXP_N as i64 - 1));
    let scale = _mm256_slli_epi64::<52>(_mm256_srli_epi64::<8>(kb));
    let [j0, j1, j2, j3] = lanes_u64(j);
    // Rows [hi, lo] of lanes 0 and 2, 1 and 3 in the two halves: unpacking pairs them up.
    // SAFETY: a row holds two doubles (and indexing it is bounds-checked).
    let row = |j: u64| unsafe { _mm_loadu_pd(t.exp[j as usize].as_ptr()) };
    let r02 = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(row(j0)), row(j2));
    let r13 = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(row(j1)), row(j3));
    let (th, tl) = (_mm256_unpacklo_pd(r02, r13), _mm256_unpackhi_pd(r02, r13));

    let r1 = _mm256_fnmadd_pd(kf, splat(t.exp_step_hi), x);
    let r = _mm256_fnmadd_pd(kf, splat(t.exp_step_lo), r1);
    // The rounding error of `r`: `r1 - r` is exact (Sterbenz) unless `|r| < 2^-42`, where
    // the error is below 2^-95 anyway.
    let r_lo = _mm256_fnmadd_pd(kf, splat(t.exp_step_lo), _mm256_sub_pd(r1, r));

    let mut p = splat(1.0 / 720.0);
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5] {
        p = _mm256_fmadd_pd(p, r, splat(c));
    }
    let p = _mm256_mul_pd(_mm256_mul_pd(r, r), p);
    // exp(r) - 1 = r + tail, tail = r_lo + p (r_lo r is below 2^-71).
    let tail = _mm256_add_pd(r_lo, p);

    let a_hi = _mm256_mul_pd(th, r);
    let a_lo = _mm256_fmsub_pd(th, r, a_hi);
    let (s1, e1) = fast_two_sum(th, a_hi);
    let u = _mm256_add_pd(_mm256_add_pd(tl, a_lo), e1);
    let small = _mm256_fmadd_pd(th, tail, _mm256_fmadd_pd(tl, r, u));
    let (s, err) = fast_two_sum(s1, small);

    let y = _mm256_mul_pd(s, _mm256_castsi256_pd(scale));
    let y = _mm256_blendv_pd(y, _mm256_setzero_pd(), zero);
    let bad = _mm256_or_pd(
        _mm256_andnot_pd(
            _mm256_or_pd(ok, zero),
            _mm256_castsi256_pd(_mm256_set1_epi64x(-1)),
        ),
        _mm256_and_pd(ok, unsafe_rounding(s, err, EXP_PASS)),
    );
    (y, _mm256_movemask_pd(bad))
}

/// `ln` of four lanes and the mask (low 4 bits) of lanes to recompute with std.
///
/// `x = 2^E m`, `m` in `[0.6875, 1.375)`, `c ~ 1/m` from the table by the top 8 bits of `m`,
/// `r = m c - 1` as `r + r_lo` exactly (FMA product error; `m c - 1` is exact by
/// Sterbenz), then `ln x = E ln2 - ln c + ln(1 + r)` with
/// `ln(1 + r) = r + r^2 (-1/2 + r/3 - ... + r^7/9) + r_lo (1 - r)`. `|r| <= 2^-8`, so the
/// truncation is below `r^10/10 < 2^-83` (relative to `|ln x|`, which is at least `|r|/2`
/// where `c = 1` and at least 2^-9 elsewhere: 2^-74). `E ln2_hi - (ln c)_hi` is exact,
/// `+ r` is added by Fast2Sum; of the rest, the table and `ln 2` carry errors below 2^-95
/// absolute, and the rounding of `r^2 (...)` is at most 2^-54 r^2, which is 2^-62 relative
/// where `|ln x| ~ |r|`: the budget of 2^-61 holds. Next to `x = 1` the table has `c = 1`,
/// `-ln c = 0`, so there is no cancellation at all.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub fn ln4(t: &Tables, x: __m256d) -> (__m256d, i32) {
    let ok = _mm256_and_pd(
        _mm256_cmp_pd::<_CMP_GE_OQ>(x, splat(f64::MIN_POSITIVE)),
        _mm256_cmp_pd::<_CMP_LT_OQ>(x, splat(f64::INFINITY)),
    );
    let xi = _mm256_castpd_si256(x);
    // bits(x) - bits(M0) + bits(1): the exponent field holds E + 1023, the mantissa field
    // the position of m in [M0, 2 M0).
    let ib = _mm256_add_epi64(
        xi,
        _mm256_set1_epi64x((1f64.to_bits() - LN_M0.to_bits()) as i64),
    );
    let eb = _mm256_srli_epi64::<52>(ib);
    let j = _mm256_and_si256(_mm256_srli_epi64::<44>(ib), _mm256_set1_epi64x(255));
    let m = _mm256_castsi256_pd(_mm256_add_epi64(
        _mm256_sub_epi64(xi, _mm256_slli_epi64::<52>(eb)),
        _mm256_set1_epi64x(1f64.to_bits() as i64),
    ));
    // E as a double: the integer in the low bits of 2^52, less 2^52 + 1023.
    let e = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(
            eb,
            _mm256_set1_epi64x(4_503_599_627_370_496f64.to_bits() as i64),
        )),
        splat(4_503_599_627_371_519.0),
    );
    let [j0, j1, j2, j3] = lanes_u64(j);
    // Rows [c, hi, lo, 0] of the four lanes, transposed.
    // SAFETY: a row holds four doubles (and indexing it is bounds-checked).
    let row = |j: u64| unsafe { _mm256_loadu_pd(t.ln[j as usize].as_ptr()) };
    let (u0, u1) = (row(j0), row(j1));
    let (u2, u3) = (row(j2), row(j3));
    let (a, b) = (_mm256_unpacklo_pd(u0, u1), _mm256_unpacklo_pd(u2, u3));
    let (c, lc_lo) = (
        _mm256_permute2f128_pd::<0x20>(a, b),
        _mm256_permute2f128_pd::<0x31>(a, b),
    );
    let lc_hi =
        _mm256_permute2f128_pd::<0x20>(_mm256_unpackhi_pd(u0, u1), _mm256_unpackhi_pd(u2, u3));

    let pm = _mm256_mul_pd(m, c);
    let r_lo = _mm256_fmsub_pd(m, c, pm);
    let r = _mm256_sub_pd(pm, splat(1.0));
    // ln(1 + r) - r = r^2 (-1/2 + r/3 - ... + r^7/9).
    let mut q = splat(1.0 / 9.0);
    for c in [
        -1.0 / 8.0,
        1.0 / 7.0,
        -1.0 / 6.0,
        1.0 / 5.0,
        -1.0 / 4.0,
        1.0 / 3.0,
        -0.5,
    ] {
        q = _mm256_fmadd_pd(q, r, splat(c));
    }
    let q = _mm256_mul_pd(_mm256_mul_pd(r, r), q);

    // E ln2_hi + (-ln c)_hi is exact: both are multiples of 2^-43 and the sum is below 2^10.
    let b = _mm256_fmadd_pd(e, splat(t.ln2_hi), lc_hi);
    // `b` is zero next to m = 1 and otherwise larger than `r`: `|ln c| >= 2^-8.4 > |r|`.
    let (d, d_lo) = fast_two_sum(b, r);
    let small = _mm256_add_pd(
        _mm256_add_pd(d_lo, _mm256_fmadd_pd(e, splat(t.ln2_lo), lc_lo)),
        _mm256_add_pd(_mm256_fnmadd_pd(r, r_lo, r_lo), q),
    );
    let (s, err) = fast_two_sum(d, small);
    let bad = _mm256_or_pd(
        _mm256_andnot_pd(ok, _mm256_castsi256_pd(_mm256_set1_epi64x(-1))),
        unsafe_rounding(s, err, LN_PASS),
    );
    (s, _mm256_movemask_pd(bad))
}

/// The lanes of `y` in `mask` recomputed as `f(x)`, in registers: writing single lanes to
/// memory and reading the vector back would stall the load on the narrower stores.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn redo4(y: __m256d, x: __m256d, mut mask: i32, f: fn(f64) -> f64) -> __m256d {
    let mut xs = [0.0; 4];
    // SAFETY: `xs` holds four lanes.
    unsafe { _mm256_storeu_pd(xs.as_mut_ptr(), x) };
    let mut y = y;
    while mask != 0 {
        let l = mask.trailing_zeros() as usize;
        let lane = _mm256_castsi256_pd(_mm256_cmpeq_epi64(
            _mm256_set_epi64x(3, 2, 1, 0),
            _mm256_set1_epi64x(l as i64),
        ));
        y = _mm256_blendv_pd(y, _mm256_set1_pd(f(xs[l])), lane);
        mask &= mask - 1;
    }
    y
}

/// `f` (a four-lane kernel) over a chunk with its fallback lanes recomputed by `std`: the
/// results and the mask of the lanes `std` computed.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn chunk(
    t: &Tables,
    a: &[f64; CHUNK],
    f: fn(&Tables, __m256d) -> (__m256d, i32),
    std: fn(f64) -> f64,
) -> ([f64; CHUNK], u32) {
    let mut out = [0.0; CHUNK];
    let mut bad = 0u32;
    for q in 0..CHUNK / 4 {
        // SAFETY: lanes 4q..4q + 4 are inside both arrays.
        unsafe {
            let (y, m) = f(t, _mm256_loadu_pd(a.as_ptr().add(4 * q)));
            _mm256_storeu_pd(out.as_mut_ptr().add(4 * q), y);
            bad |= (m as u32) << (4 * q);
        }
    }
    // One branch per chunk, and no call inside the loop above (which would spill it).
    if bad != 0 {
        redo(&mut out, a, bad, std);
    }
    (out, bad)
}

/// The lanes in `bad` of `out` recomputed by `std`, a quad at a time in registers.
#[target_feature(enable = "avx2,fma")]
#[inline(never)]
fn redo(out: &mut [f64; CHUNK], a: &[f64; CHUNK], bad: u32, std: fn(f64) -> f64) {
    for q in 0..CHUNK / 4 {
        let m = ((bad >> (4 * q)) & 0xf) as i32;
        if m != 0 {
            // SAFETY: lanes 4q..4q + 4 are inside both arrays.
            unsafe {
                let x = _mm256_loadu_pd(a.as_ptr().add(4 * q));
                let y = _mm256_loadu_pd(out.as_ptr().add(4 * q));
                _mm256_storeu_pd(out.as_mut_ptr().add(4 * q), redo4(y, x, m, std));
            }
        }
    }
}

/// `f64::exp` over a chunk: the results and the mask of the lanes `std` computed.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub fn exp_chunk(t: &Tables, a: &[f64; CHUNK]) -> ([f64; CHUNK], u32) {
    chunk(t, a, |t, x| exp4(t, x), f64::exp)
}

/// `f64::ln` over a chunk: the results and the mask of the lanes `std` computed.
#[target_feature(enable = "avx2,fma")]
#[inline]
pub fn ln_chunk(t: &Tables, a: &[f64; CHUNK]) -> ([f64; CHUNK], u32) {
    chunk(t, a, |t, x| ln4(t, x), f64::ln)
}
