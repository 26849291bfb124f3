//! The AVX-512 kernels of the exact `exp` and `ln`: eight lanes at a time, with the same
//! contract as the AVX2 ones (`avx2.rs`, whose doc argues why an unmasked lane is libm's
//! bits): a result rounded from an evaluation accurate to 2^-61 relative or better, its exact
//! rounding error, and the same rounding test with the same margins. Each lane is therefore
//! exactly std's or goes to std, on either path, so the two paths give the same bits.
//!
//! What differs: `exp` reads a 16-entry table of `2^(j/16)` held in two pairs of registers
//! by `vpermi2pd` (no memory gather) and makes up for the wider reduced argument with a
//! longer polynomial; the lane masks live in mask registers. There is no AVX-512 `ln`: the
//! same kernel with its 256-row table read by `vgatherqpd` measured slower on Zen 4 than
//! `avx2::ln4` with its four row loads, so both kernel sets use the latter.
//!
//! Not here: the tables (`tables.rs`), the dispatch and self-check (`mod.rs`).

use std::arch::x86_64::*;

use super::super::instr::CHUNK;
use super::tables::Tables;

const _: () = assert!(
    CHUNK.is_multiple_of(8),
    "the AVX-512 kernels run 8 lanes at a time"
);

/// Adding it to `y` (`|y| < 2^51`) rounds `y` to an integer held in the low mantissa bits.
const ROUNDER: f64 = 6_755_399_441_055_744.0;
/// See `avx2.rs`: `exp` is `+0` below, and exact in vector code inside `[EXP_LO, EXP_HI]`.
const EXP_ZERO_BELOW: f64 = -746.0;
const EXP_LO: f64 = -708.0;
const EXP_HI: f64 = 709.0;
/// `1 - 2 M` for `exp` (`M = 1/64`), as in `avx2.rs`.
const EXP_PASS: f64 = 1.0 - 2.0 / 64.0;
/// Entries of the register table of `exp`: `2^(j/16)`, `j` in `0..16`.
const N: u64 = 16;

#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
fn splat(x: f64) -> __m512d {
    _mm512_set1_pd(x)
}

#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
fn splat_i(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

/// `a + b = s + e` exactly, given `|a| >= |b|`.
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
fn fast_two_sum(a: __m512d, b: __m512d) -> (__m512d, __m512d) {
    let s = _mm512_add_pd(a, b);
    (s, _mm512_sub_pd(b, _mm512_sub_pd(s, a)))
}

/// Lanes where `s` may not round `s + err` as libm does (as `avx2::unsafe_rounding`).
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
fn unsafe_rounding(s: __m512d, err: __m512d, pass: f64) -> __mmask8 {
    // 2^floor(log2 |s|) (zero for zero), from the exponent field alone.
    let p2 = _mm512_castsi512_pd(_mm512_and_si512(
        _mm512_castpd_si512(s),
        splat_i(0x7ff0_0000_0000_0000),
    ));
    let half = _mm512_mul_pd(p2, splat(pass * f64::EPSILON / 2.0));
    let at_p2 = _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(_mm512_abs_pd(s), p2);
    let lim = _mm512_mask_mul_pd(half, at_p2, half, splat(0.5));
    _mm512_cmp_pd_mask::<_CMP_NLT_UQ>(_mm512_abs_pd(err), lim)
}

/// `exp` of eight lanes and the mask of lanes to recompute with std.
///
/// As `avx2::exp4` with `N = 16`: `k = round(x 16 / ln2) = 16 K + j`, `r = x - k ln2/16` as
/// `r + r_lo` (`|r| <= ln2/32 < 2^-5.5`, `|r_lo| <= 2^-59`), `T_j = 2^(j/16)` as a
/// double-double picked by `vpermi2pd`, and `exp(r) - 1 = a + tail` with `a = r + r^2/2` (by
/// Fast2Sum: `|r^2/2| < |r|`; `r^2/2` split exactly by FMA) and
/// `tail = r^3 (1/6 + r/24 + ... + r^5/40320) + r_lo (1 + r)` plus the low parts.
/// Error budget, relative to the result: truncation `r^9/9! < 2^-68`; `r_lo r^2/2 < 2^-71`;
/// `tail < 2^-18.5`, so each of its four roundings, the polynomial's (relative 2^-52 of
/// `r^3/6 < 2^-19`) and that of `small = T_hi tail + ...` are below 2^-71, under 2^-68
/// together; `tl tail < 2^-71`; the table and `ln 2/16` below 2^-95; the other steps (as
/// in `exp4`: exact products and Fast2Sums, `u` and `tl a` rounded at 2^-52) below 2^-100.
/// In all below 2^-66 of `T_hi >= 1` (the result is at least `0.97 T_hi`), well inside the
/// 2^-61 the rounding test assumes.
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
pub fn exp8(t: &Tables, x: __m512d) -> (__m512d, __mmask8) {
    let ok = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(x, splat(EXP_LO))
        & _mm512_cmp_pd_mask::<_CMP_LE_OQ>(x, splat(EXP_HI));
    let zero = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(x, splat(EXP_ZERO_BELOW));

    let tt = _mm512_fmadd_pd(x, splat(t.exp16_inv_step), splat(ROUNDER));
    let kf = _mm512_sub_pd(tt, splat(ROUNDER));
    // k + 1023 N, non-negative in range: K + 1023 = that >> log2 N with a logical shift.
    let kb = _mm512_sub_epi64(
        _mm512_castpd_si512(tt),
        splat_i(ROUNDER.to_bits() - 1023 * N),
    );
    let scale = _mm512_slli_epi64::<52>(_mm512_srli_epi64::<4>(kb));
    // `vpermi2pd` reads the low 4 bits of each index: j = k mod 16.
    // SAFETY: each half of the table is eight doubles.
    let (h0, h1, l0, l1) = unsafe {
        (
            _mm512_loadu_pd(t.exp16_hi.as_ptr()),
            _mm512_loadu_pd(t.exp16_hi.as_ptr().add(8)),
            _mm512_loadu_pd(t.exp16_lo.as_ptr()),
            _mm512_loadu_pd(t.exp16_lo.as_ptr().add(8)),
        )
    };
    let th = _mm512_permutex2var_pd(h0, kb, h1);
    let tl = _mm512_permutex2var_pd(l0, kb, l1);

    let r1 = _mm512_fnmadd_pd(kf, splat(t.exp16_step_hi), x);
    let r = _mm512_fnmadd_pd(kf, splat(t.exp16_step_lo), r1);
    // The rounding error of `r` (see `exp4`).
    let r_lo = _mm512_fnmadd_pd(kf, splat(t.exp16_step_lo), _mm512_sub_pd(r1, r));

    // r^2/2 = h + h_lo exactly.
    let hr = _mm512_mul_pd(r, splat(0.5));
    let h = _mm512_mul_pd(hr, r);
    let h_lo = _mm512_fmsub_pd(hr, r, h);
    let mut q = splat(1.0 / 40320.0);
    for c in [
        1.0 / 5040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
    ] {
        q = _mm512_fmadd_pd(q, r, splat(c));
    }
    let r3q = _mm512_mul_pd(_mm512_mul_pd(r, h), _mm512_add_pd(q, q));
    let (a, a_e) = fast_two_sum(r, h);
    let tail = _mm512_add_pd(
        _mm512_add_pd(a_e, h_lo),
        _mm512_add_pd(_mm512_fmadd_pd(r_lo, r, r_lo), r3q),
    );

    let a_hi = _mm512_mul_pd(th, a);
    let a_lo = _mm512_fmsub_pd(th, a, a_hi);
    let (s1, e1) = fast_two_sum(th, a_hi);
    let u = _mm512_add_pd(_mm512_add_pd(tl, a_lo), e1);
    let small = _mm512_fmadd_pd(th, tail, _mm512_fmadd_pd(tl, a, u));
    let (s, err) = fast_two_sum(s1, small);

    let y = _mm512_mul_pd(s, _mm512_castsi512_pd(scale));
    let y = _mm512_mask_mov_pd(y, zero, _mm512_setzero_pd());
    let bad = !(ok | zero) | (ok & unsafe_rounding(s, err, EXP_PASS));
    (y, bad)
}

/// Four lanes at `p` by one 256-bit load the compiler cannot merge with its neighbour: the
/// tape writes its lanes with 256-bit stores just before, and a 512-bit load across two of
/// them cannot take its data from the store buffer (Zen 4 then waits for the stores to
/// retire, which cost the kernel's whole gain inside the models).
///
/// # Safety
/// `p..p + 4` must be readable.
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
unsafe fn load4(p: *const f64) -> __m256d {
    let v: __m256d;
    // SAFETY: the caller's.
    unsafe {
        std::arch::asm!(
            "vmovupd {v}, ymmword ptr [{p}]",
            v = out(ymm_reg) v,
            p = in(reg) p,
            options(pure, readonly, nostack, preserves_flags)
        )
    };
    v
}

/// `f` (an eight-lane kernel) over a chunk with its fallback lanes recomputed by `std`.
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
fn chunk(
    t: &Tables,
    a: &[f64; CHUNK],
    f: fn(&Tables, __m512d) -> (__m512d, __mmask8),
    std: fn(f64) -> f64,
) -> ([f64; CHUNK], u32) {
    let mut ys = [_mm512_setzero_pd(); CHUNK / 8];
    let mut bad = 0u32;
    for (q, y) in ys.iter_mut().enumerate() {
        // SAFETY: lanes 8q..8q + 8 are inside `a`.
        let x = unsafe {
            let p = a.as_ptr().add(8 * q);
            _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(load4(p)), load4(p.add(4)))
        };
        let (v, m) = f(t, x);
        *y = v;
        bad |= (m as u32) << (8 * q);
    }
    // One branch per chunk; on the common path the results go from registers to `out`.
    if bad != 0 {
        redo(&mut ys, a, bad, std);
    }
    let mut out = [0.0; CHUNK];
    for (q, y) in ys.iter().enumerate() {
        // SAFETY: lanes 8q..8q + 8 are inside `out`.
        unsafe { _mm512_storeu_pd(out.as_mut_ptr().add(8 * q), *y) };
    }
    (out, bad)
}

/// The lanes in `bad` of `ys` recomputed by `std`, in registers (no narrow stores under a
/// wide load).
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline(never)]
fn redo(ys: &mut [__m512d; CHUNK / 8], a: &[f64; CHUNK], bad: u32, std: fn(f64) -> f64) {
    for (q, y) in ys.iter_mut().enumerate() {
        let mut m = (bad >> (8 * q)) & 0xff;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            *y = _mm512_mask_mov_pd(*y, 1 << l, _mm512_set1_pd(std(a[8 * q + l])));
            m &= m - 1;
        }
    }
}

/// `f64::exp` over a chunk: the results and the mask of the lanes `std` computed.
#[target_feature(enable = "avx512f,avx2,fma")]
#[inline]
pub fn exp_chunk(t: &Tables, a: &[f64; CHUNK]) -> ([f64; CHUNK], u32) {
    chunk(t, a, |t, x| exp8(t, x), f64::exp)
}
