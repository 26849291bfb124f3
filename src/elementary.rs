//! `exp`, `ln`, `log1p`, the sigmoid and softplus: one polynomial family, written once.
//!
//! A run must be a pure function of (model, options, seed, version) whatever kernel set the
//! binary picks at run time, and the tape must agree with the plain one-sample reference sweep
//! bit for bit. So every elementary function the tape evaluates is defined here once, as
//! straight-line code (selects, no data-dependent branches) with every multiply-add written as
//! [`f64::mul_add`]. The scalar callers (constant folding, the reference interpreter,
//! [`crate::special`]) and the tape's lane loops (`eval::vmath`, vectorised by LLVM inside
//! `#[target_feature(enable = "avx2,fma")]` functions) run the same operations in the same
//! order, and a fused multiply-add is correctly rounded in hardware and in libm's software
//! `fma` alike, so the portable build, the AVX2/FMA build and a future AVX-512 build of the
//! same source give identical bits.
//!
//! Accuracy instead of identity with libm: each function is within 2 ulp of the correctly
//! rounded result (measured in `tests/eval_vmath.rs` against a double-double reference; the
//! worst cases found are in the doc of each function). The polynomials are minimax fits
//! (Remez's exchange, `scripts/fit_polys.py`) with their coefficients written as the bits of
//! doubles; their errors, coefficients' rounding included, are below 2^-55.5 relative, a
//! fifth of an ulp at most: a lane loop's cost is its operation count, and each term dropped
//! against the Taylor series is one multiply-add per lane.

/// `ln 2` split so that `k * LN2_HI` is exact for `|k| < 2^21` (its low 21 bits are zero).
pub(crate) const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
/// `ln 2 - LN2_HI`, to double precision.
pub(crate) const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// `1 / ln 2`.
pub(crate) const INV_LN2: f64 = f64::from_bits(0x3ff7_1547_652b_82fe);
/// `1.5 * 2^52`: adding it rounds a double of magnitude below 2^51 to an integer, which then
/// sits in the low bits of the sum's representation.
pub(crate) const ROUND: f64 = 6_755_399_441_055_744.0;

/// `Q(r)` in `e^r = 1 + r + r^2 Q(r)`, highest power first (evaluated in Estrin's order by
/// `exp_q`): degree 9, the minimax fit on `|r| <= ln 2 / 2` (`scripts/fit_polys.py`
/// re-derives these bits), so that `e^r` is of degree 11 with a relative error below
/// 2^-55.7 (Taylor's degree 11 would give 2^-47; degree 13 was used before).
pub(crate) const EXP_COEFFS: [f64; 10] = [
    f64::from_bits(0x3e5af631ec604297), // 2.5110039179932824e-08
    f64::from_bits(0x3e928917d2f3a3d8), // 2.762007679917023e-07
    f64::from_bits(0x3ec71ddf6ba48e19), // 2.755724236484932e-06
    f64::from_bits(0x3efa019b913fad39), // 2.480152132015615e-05
    f64::from_bits(0x3f2a01a01b009f52), // 0.00019841269886566399
    f64::from_bits(0x3f56c16c1788a1f2), // 0.0013888888917198386
    f64::from_bits(0x3f8111111110f808), // 0.008333333333322215
    f64::from_bits(0x3fa5555555553d67), // 0.04166666666662416
    f64::from_bits(0x3fc5555555555558), // 0.16666666666666674
    f64::from_bits(0x3fe0000000000001), // 0.5000000000000001
];

/// `R(z)` in `2 atanh(s) = 2s + s z R(z)`, `z = s^2`, highest power first: degree 6, the
/// minimax fit on `z <= (3 - 2 sqrt 2)^2` (the range of `ln_core`'s `s`; re-derived by
/// `scripts/fit_polys.py`), with an error below 2^-57.5 relative to `2 atanh(s)` (the atanh
/// series needed ten terms for that).
pub(crate) const ATANH_COEFFS: [f64; 7] = [
    f64::from_bits(0x3fc2b5f0a2d7966d), // 0.1461773676993973
    f64::from_bits(0x3fc39fdc7e16407d), // 0.15331607967937436
    f64::from_bits(0x3fc7462b9b7bfd08), // 0.1818289288712338
    f64::from_bits(0x3fcc71c62d1c77dc), // 0.22222211077399734
    f64::from_bits(0x3fd2492492e02b0c), // 0.28571428626371254
    f64::from_bits(0x3fd999999999522e), // 0.39999999999898506
    f64::from_bits(0x3fe5555555555558), // 0.666666666666667
];

/// [`EXP_COEFFS`]' polynomial at `r` (with `r2 = r * r`) in Estrin's order: pairs, then
/// pairs of pairs, so that its longest chain is four multiply-adds instead of Horner's nine.
#[inline(always)]
fn exp_q(r: f64, r2: f64) -> f64 {
    let c = &EXP_COEFFS;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let p0 = c[8].mul_add(r, c[9]);
    let p1 = c[6].mul_add(r, c[7]);
    let p2 = c[4].mul_add(r, c[5]);
    let p3 = c[2].mul_add(r, c[3]);
    let p4 = c[0].mul_add(r, c[1]);
    let q0 = p1.mul_add(r2, p0);
    let q1 = p3.mul_add(r2, p2);
    let s0 = q1.mul_add(r4, q0);
    p4.mul_add(r8, s0)
}

/// `2^k` for an integer `k` in `-1022..=1023` given as `k + 1023`.
#[inline(always)]
fn pow2_biased(biased: u64) -> f64 {
    f64::from_bits(biased << 52)
}

/// `e^x`, within 2 ulp of the correctly rounded result (subnormal results are rounded once). `+inf`
/// above 709.78, `+0` below -745.14, NaN for NaN.
///
/// `x = k ln 2 + r` with `|r| <= ln 2 / 2`: `x - k LN2_HI` is exact (the product needs no rounding
/// and the difference fits 53 bits), and the `LN2_LO` term rounds `r` once, by at most 2^-55. `e^r
/// = 1 + (r + r^2 Q(r))` (`EXP_COEFFS`, within 2^-55.7): the bracket rounds by at most 2^-55 and
/// the last addition by half an ulp, so the error from the true value stays near `1/2 + 1/4 + 1/4`
/// ulp where `e^r < 1` and below 0.81 ulp above, plus the fit's 2^-55.7 relative (1.09 ulp from the
/// true value measured over 10^7 inputs). No double-double tail (which kept the error near 1/2
/// ulp): a smoothed if-statement's weights are mostly this function, and the tail's ten operations
/// cost a third of it. The scaling by `2^k` is split into two exact powers so that a subnormal
/// result is rounded once and `k = 1024` needs no branch.
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    // One NaN for every build (the fused multiply-adds may pick either NaN operand).
    if x.is_nan() {
        x + x
    } else {
        exp_of_at_most(x.min(710.0))
    }
}

/// `e^x` for `x <= 710`, as [`exp`] gives it, without [`exp`]'s clamp from above and its
/// choice of NaN: for a NaN `x` the result is unspecified.
#[inline(always)]
fn exp_of_at_most(x: f64) -> f64 {
    let (p, kb) = exp_reduced(x);
    // 2^k = 2^(k1 - 541) * 2^(k - k1 + 541), both factors normal.
    let k1 = kb >> 1;
    let s1 = pow2_biased(k1.wrapping_add(482));
    let s2 = pow2_biased(kb.wrapping_sub(k1).wrapping_add(482));
    p * s1 * s2
}

/// `e^x` for `x <= 0`, as [`exp`] gives it (for a NaN `x` the result is unspecified): the
/// smoothed if-statement's weights take `exp(-|x|)` and [`sigmoid_pair_order`] sets both to
/// `x + x` for a NaN `x`. With `k <= 0`, `2^(k + 64)` is normal for every `k` the clamp
/// allows, so the scaling is one exact multiplication by it and one by the constant `2^-64`,
/// which rounds a subnormal result once: the bits of `exp_of_at_most`'s two factors with
/// fewer operations.
#[inline(always)]
pub fn exp_of_nonpositive(x: f64) -> f64 {
    let (p, kb) = exp_reduced(x);
    // k + 1087 = (k + 64) + 1023, in 5..=1087.
    p * pow2_biased(kb.wrapping_add(5)) * TWO_TO_MINUS_64
}

/// Where [`exp_reduced`] clamps its argument from below: every result under it is 0.
pub(crate) const EXP_FLOOR: f64 = -750.0;

/// `2^-64`.
pub(crate) const TWO_TO_MINUS_64: f64 = f64::from_bits((1023 - 64) << 52);

/// The common part of [`exp_of_at_most`] and [`exp_of_nonpositive`]: `e^r` for the reduced
/// argument and `k + 1082`, where `x = k ln 2 + r` (`x` clamped below at -750, under which
/// every result is 0 anyway; NaN passes through the comparisons and gives garbage `k` and a
/// NaN `e^r`).
#[inline(always)]
fn exp_reduced(x: f64) -> (f64, u64) {
    let x_c = x.max(EXP_FLOOR);
    let kr = x_c.mul_add(INV_LN2, ROUND);
    let k = kr - ROUND;
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, x_c));
    let r2 = r * r;
    let q = exp_q(r, r2);
    let p = 1.0 + r2.mul_add(q, r);
    // k + 1082 in 0..=2106, read from the low bits of `kr`.
    let kb = kr
        .to_bits()
        .wrapping_sub(ROUND.to_bits())
        .wrapping_add(1082);
    (p, kb)
}

/// `1.5 * 2^48`: adding it rounds a double of magnitude below 2^47 to a multiple of 1/16,
/// whose sixteenths then sit in the low bits of the sum's representation.
pub(crate) const ROUND_SIXTEENTHS: f64 = 422_212_465_065_984.0;

/// `2^(j/16)` for `j` in `0..16`, each the double nearest it (`tests/eval_vmath.rs` checks
/// them): the table of [`exp_of_nonpositive_tabled`].
pub const EXP2_SIXTEENTHS: [f64; 16] = [
    f64::from_bits(0x3ff0000000000000), // 1.0
    f64::from_bits(0x3ff0b5586cf9890f), // 1.0442737824274138
    f64::from_bits(0x3ff172b83c7d517b), // 1.0905077326652577
    f64::from_bits(0x3ff2387a6e756238), // 1.1387886347566916
    f64::from_bits(0x3ff306fe0a31b715), // 1.189207115002721
    f64::from_bits(0x3ff3dea64c123422), // 1.241857812073484
    f64::from_bits(0x3ff4bfdad5362a27), // 1.2968395546510096
    f64::from_bits(0x3ff5ab07dd485429), // 1.3542555469368927
    f64::from_bits(0x3ff6a09e667f3bcd), // 1.4142135623730951
    f64::from_bits(0x3ff7a11473eb0187), // 1.4768261459394993
    f64::from_bits(0x3ff8ace5422aa0db), // 1.5422108254079407
    f64::from_bits(0x3ff9c49182a3f090), // 1.6104903319492543
    f64::from_bits(0x3ffae89f995ad3ad), // 1.681792830507429
    f64::from_bits(0x3ffc199bdd85529c), // 1.7562521603732995
    f64::from_bits(0x3ffd5818dcfba487), // 1.8340080864093424
    f64::from_bits(0x3ffea4afa2a490da), // 1.9152065613971474
];

/// `Q(r)` in `e^r = 1 + r + r^2 Q(r)` on `|r| <= ln 2 / 32`, highest power first (evaluated
/// in Estrin's order): degree 4, the minimax fit of the error relative to `e^r`
/// (`scripts/fit_polys.py`), below 2^-56.2 with the coefficients rounded.
pub(crate) const EXP_TABLED_COEFFS: [f64; 5] = [
    f64::from_bits(0x3f56c14c6ebcb2b8), // 0.0013888594066415027
    f64::from_bits(0x3f811123aae4eff1), // 0.008333471920757037
    f64::from_bits(0x3fa55555558fca5e), // 0.04166666669324991
    f64::from_bits(0x3fc555555548f893), // 0.1666666666441797
    f64::from_bits(0x3fdfffffffffffb9), // 0.49999999999999606
];

/// What [`exp_of_nonpositive_tabled`] adds to the bits of its `kr` before a shift by 4 to
/// get `m + 1087`, `m` the power of two of the result (`m + 64` biased as an exponent).
pub(crate) const TABLED_BIAS: u64 = (16 * 1087u64).wrapping_sub(ROUND_SIXTEENTHS.to_bits());

/// `e^x` for `x <= 0` (for a NaN or positive `x` the result is unspecified), within 1.5 ulp
/// of the true value (subnormal results rounded once): the exponential of a plate body's smoothed
/// if-statements' weights (`Tape::with_plain_weights`), eleven multiply-add-class operations
/// where [`exp_of_nonpositive`] takes seventeen.
///
/// `x = (m + j/16) ln 2 + r` with `|r| <= ln 2 / 32`: `k = m + j/16` is `x / ln 2` rounded to
/// a sixteenth by adding `ROUND_SIXTEENTHS` (its sixteenths `16 k` are the low bits of the
/// sum, `j` the lowest four), and `r` is reduced in two parts as [`exp`]'s is (`k LN2_HI` is
/// exact: `16 k` has at most 15 bits). `e^x = 2^m * T_j * (1 + s)`, `T_j = 2^(j/16)` from
/// [`EXP2_SIXTEENTHS`] and `s = r + r^2 Q(r)` (`EXP_TABLED_COEFFS`), with `T_j (1 + s)`
/// one fused multiply-add. Its error: `T_j`'s rounding (1/2 ulp of `T_j`, up to 1 ulp of a
/// result just below a power of two), the last rounding (1/2 ulp), and `s`'s (its rounding,
/// `r`'s and the fit's, together below 2^-56 relative): within 1.5 ulp, 1.105 ulp the worst
/// measured over 10^7 inputs (`tests/eval_vmath.rs`; [`exp`]'s: 1.09). The scaling by `2^m`
/// is [`exp_of_nonpositive`]'s, by `2^(m + 64)` (normal for every `m >= -1083` the clamp
/// allows: exact) and then `2^-64` (rounding a subnormal result once), the correctly
/// rounded product `vscalefpd` gives in one instruction.
///
/// Why a table: a shorter argument needs a polynomial of degree 6 where [`exp`]'s range
/// needs 11; the compiled AVX-512 code reads `T_j` with one permutation of the table in two
/// registers' worth of constants (`vpermt2pd`), the AVX2 code with a gather.
#[inline(always)]
pub fn exp_of_nonpositive_tabled(x: f64) -> f64 {
    let x_c = x.max(EXP_FLOOR);
    let kr = x_c.mul_add(INV_LN2, ROUND_SIXTEENTHS);
    let k = kr - ROUND_SIXTEENTHS;
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, x_c));
    let t = EXP2_SIXTEENTHS[(kr.to_bits() & 15) as usize];
    // Q in Estrin's order: two pairs side by side, joined by `r^2` twice (three multiply-adds
    // deep after `r`, where Horner's order is four, with as many operations).
    let c = &EXP_TABLED_COEFFS;
    let r2 = r * r;
    let low = c[3].mul_add(r, c[4]);
    let high = c[0].mul_add(r2, c[1].mul_add(r, c[2]));
    let q = high.mul_add(r2, low);
    let s = r2.mul_add(q, r);
    let p = t.mul_add(s, t);
    // m + 1087 = (16 k + 16 * 1087) / 16, the sum non-negative.
    let biased = kr.to_bits().wrapping_add(TABLED_BIAS) >> 4;
    p * pow2_biased(biased) * TWO_TO_MINUS_64
}

/// `2^54`: [`ln_core`] and [`ln_stand_in`] scale a subnormal argument by it first.
pub(crate) const SUBNORMAL_SCALE: f64 = 18_014_398_509_481_984.0;

/// [`ln_core`]'s bias of the exponent's bits: the bits of `m / sqrt(1/2)` biased so that its
/// exponent `e + 1023` is read with a logical shift.
pub(crate) const LN_OFFSET: u64 = 0x3fe6_a09e_667f_3bcd;

/// `2^52 + 1023` (and that plus the 54 of a subnormal's scaling): what [`ln_core`] subtracts
/// from `2^52 + eb` read as a double to get `e`.
pub(crate) const E_BIAS: f64 = 4_503_599_627_371_519.0;
pub(crate) const E_BIAS_SUBNORMAL: f64 = 4_503_599_627_371_573.0;

/// `ln(m) + c` for `m = 2^e (1 + f)`, `f` in `[sqrt(1/2) - 1, sqrt(2) - 1)`, with `c` a small
/// correction added where it loses nothing (`log1p`'s rounding of `1 + x`); only for positive
/// finite `m` (the callers select the special cases).
///
/// `ln(1 + f) = 2 atanh(s) = f - (f^2/2 - (s f^2/2 + s^3 R(s^2)))` with `s = f / (2 + f)`: the
/// leading `f` is exact, and the rounding of `s` only touches the small correction.
///
/// Written for latency, which bounds a lane loop of it (a few vectors of lanes at once): the
/// divisor `2 + f` is `(1 + f) + 1`, the same double, from the mantissa in parallel with `f`;
/// `R` in Estrin's order (three dependent steps after `s^2` instead of five); `s f^2/2` and
/// `s^3` while `R` is computed, so that one multiply-add joins them after it.
#[inline(always)]
fn ln_core(m: f64, c: f64) -> f64 {
    // Subnormal arguments are scaled into the normal range first, by a factor chosen by a
    // select (`m * 1.0` is `m`): selecting between `m` and `m * 2^54` instead had LLVM
    // duplicate the bit arithmetic below for both and select after.
    let sub = m < f64::MIN_POSITIVE;
    let m = m * if sub { SUBNORMAL_SCALE } else { 1.0 };
    let bits = m.to_bits();
    // Biased so that the exponent of `m / sqrt(1/2)` is read with a logical shift: `eb` is
    // `e + 1023` with the mantissa in `[sqrt(1/2), sqrt(2))`.
    let eb = bits.wrapping_add(0x3ff0_0000_0000_0000 - LN_OFFSET) >> 52;
    let mantissa = f64::from_bits(bits.wrapping_sub(eb.wrapping_sub(1023) << 52));
    // Both exact or rounded alike: `mantissa - 1` is exact (Sterbenz), and `mantissa + 1` is
    // the real number `2 + f`.
    let f = mantissa - 1.0;
    let s = f / (mantissa + 1.0);
    // `e` as a double, exactly: `2^52 + eb` read as a double, minus `2^52 + 1023` (and the
    // 54 of a subnormal's scaling).
    let e = f64::from_bits((ROUND.to_bits() - (1u64 << 51)) | eb)
        - if sub { E_BIAS_SUBNORMAL } else { E_BIAS };
    let hfsq = 0.5 * f * f;
    let z = s * s;
    let r = estrin7(z, &ATANH_COEFFS);
    let near = s.mul_add(hfsq, e.mul_add(LN2_LO, c));
    let tail = (s * z).mul_add(r, near);
    e.mul_add(LN2_HI, f - (hfsq - tail))
}

/// `c[0] x^6 + ... + c[6]` in Estrin's order: pairs `c[i] x + c[i+1]` side by side, joined by
/// `x^2` and then `x^4`, three multiply-adds deep after `x^2` (Horner's scheme: six).
#[inline(always)]
fn estrin7(x: f64, c: &[f64; 7]) -> f64 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let p0 = c[5].mul_add(x, c[6]);
    let p1 = c[3].mul_add(x, c[4]);
    let p2 = c[1].mul_add(x, c[2]);
    let q0 = p1.mul_add(x2, p0);
    let q1 = c[0].mul_add(x2, p2);
    q1.mul_add(x4, q0)
}

/// The natural logarithm, within 1 ulp of the correctly rounded result (0.83 ulp from the
/// true value measured over 10^7 inputs).
/// `-inf` at `+-0`, NaN below 0, `+inf` at `+inf`, NaN for NaN.
#[inline(always)]
pub fn ln(x: f64) -> f64 {
    let y = ln_core(x, 0.0);
    // Three comparisons and three selects. The chain `x > 0 && x < inf`, `x == 0`, `x < 0`
    // written as one if-else had LLVM classify `x` by integer tests of its bits (three times
    // the instructions, and spills) in the lane loops.
    let y = if x < f64::INFINITY { y } else { x }; // +inf and NaN are themselves
    at_most_zero_as_ln(x, y)
}

/// `y`, but `-inf` where `x` is `+-0` and NaN where it is below 0: the logarithm's values
/// there (`ln` and [`ln_stand_in`] select them alike).
#[inline(always)]
fn at_most_zero_as_ln(x: f64, y: f64) -> f64 {
    let at_most_zero = if x == 0.0 {
        f64::NEG_INFINITY
    } else {
        f64::NAN
    };
    if x <= 0.0 { at_most_zero } else { y }
}

/// A stand-in for [`ln`] where only whether the logarithm is finite matters:
/// `floor(log2 x) * ln 2`, finite exactly where `ln` is (every `x > 0` below `+inf`, subnormals
/// too), within `ln 2` below it, and `-inf` at `+-0`, NaN below 0 (`-inf` included), `+inf` at
/// `+inf`, NaN for NaN, as `ln` gives them.
///
/// Why: a training step reads each sample's log-density only to find the ones that are not
/// finite, and a logarithm whose value nothing else reads (a Poisson term's `ln(rate)`, a
/// normal density's `ln(scale)`) costs a polynomial and a division per lane. This is the
/// exponent field and one product, and what `vgetexppd` and `vmulpd` give bit for bit, so the
/// compiled code and every build of the interpreter agree.
#[inline(always)]
pub fn ln_stand_in(x: f64) -> f64 {
    let field = |v: f64| ((v.to_bits() >> 52) & 0x7ff) as i32;
    // The exponent of a normal number; a subnormal's is that of its product with 2^54 (exact,
    // and a normal number) less 54. (Not from the mantissa's leading zeros: no vector
    // instruction counts them below AVX-512, and LLVM's stand-in sequence was a sixth of
    // textmsg's forward sweep in the AVX2 build. Nor through `i64`: no conversion of it to
    // `f64` below AVX-512 either.) At zero it is wrong, and `at_most_zero_as_ln` replaces it.
    let exponent = if field(x) == 0 {
        field(x * SUBNORMAL_SCALE) - (1023 + 54)
    } else {
        field(x) - 1023
    };
    let y = f64::from(exponent) * std::f64::consts::LN_2;
    let y = if x < f64::INFINITY { y } else { x + x }; // +inf, and NaN quieted
    at_most_zero_as_ln(x, y)
}

/// A stand-in for [`log1p`] where only whether it is finite matters (see [`ln_stand_in`]):
/// `ln_stand_in(1 + x)`, finite exactly where `log1p` is (`1 + x` rounds to a positive number
/// for every `x > -1`), `-inf` at -1, NaN below it, `+inf` at `+inf`, and within about `ln 2`
/// of it.
#[inline(always)]
pub fn log1p_stand_in(x: f64) -> f64 {
    ln_stand_in(1.0 + x)
}

/// A stand-in for [`softplus`] where only whether it is finite matters (see [`ln_stand_in`]):
/// `max(x, 0)`, finite exactly where `softplus` is (0 at `-inf`), `+inf` at `+inf`, NaN for
/// NaN, within `ln 2` below it. As `vmaxpd` with zero and then `x + x` where `x` is NaN give
/// it, bit for bit.
#[inline(always)]
pub fn softplus_stand_in(x: f64) -> f64 {
    let pos = if x > 0.0 { x } else { 0.0 };
    if x.is_nan() { x + x } else { pos }
}

/// `ln(1 + x)`, accurate for small `x`, within 1 ulp of the correctly rounded result (0.83 ulp from
/// the true value measured over 10^7 inputs). `-inf` at -1, NaN below it, `x` itself for `|x| <
/// 2^-1022` and at `+inf`.
///
/// `u = 1 + x` is rounded; the rounding error `d` (exact, by the two-sum identities) is put back as
/// `d / u`, the first-order change of the logarithm.
#[inline(always)]
pub fn log1p(x: f64) -> f64 {
    let u = 1.0 + x;
    let d = if x.abs() < 1.0 {
        x - (u - 1.0)
    } else {
        1.0 - (u - x)
    };
    let y = ln_core(u, d / u);
    // Selects between values, as in `ln` (an if-else chain is classified by integer tests).
    let y = if x.abs() < f64::MIN_POSITIVE { x } else { y };
    let y = if u < f64::INFINITY { y } else { x }; // +inf and NaN are themselves
    let at_most_zero = if u == 0.0 {
        f64::NEG_INFINITY
    } else {
        f64::NAN
    };
    if u <= 0.0 { at_most_zero } else { y }
}

/// The logistic function `1 / (1 + e^-x)`, stable for any `x` (it never evaluates `exp` of a
/// positive number); within 2 ulp of the correctly rounded result.
#[inline(always)]
pub fn sigmoid(x: f64) -> f64 {
    sigmoid_pair_from_exp(x, exp(-x.abs())).0
}

/// `(sigmoid(x), sigmoid(-x))` given `e = exp(-|x|)`: the two weights of a smoothed
/// if-statement, from one `exp` and one division.
#[inline(always)]
pub fn sigmoid_pair_from_exp(x: f64, e: f64) -> (f64, f64) {
    let (big, small) = sigmoid_big_small(e);
    sigmoid_pair_order(x, big, small)
}

/// `(1 / (1 + e), e / (1 + e))` for `e = exp(-|x|)` in `[0, 1]`: the larger and the smaller
/// of the two sigmoids, plain arithmetic with no selects (so a lane loop of it is straight
/// vector code whatever the compiler's heuristics; [`sigmoid_pair_order`] selects after).
///
/// The rounding error of `1 + e` (exact, `e <= 1`) and of each quotient (exact residuals by
/// fused multiply-add) are corrected to first order, so each weight is within about 1/2 ulp
/// plus what `e`'s own error contributes (the sigmoid's worst over 10^7 inputs: 1.46 ulp).
/// Both corrections start from `1 / d` and run side by side (the small weight's first guess
/// is `e / d`, not `e` times the corrected large weight): the weights are most of a smoothed
/// if-statement's cost and wait on this chain's latency more than on its operations.
#[inline(always)]
pub fn sigmoid_big_small(e: f64) -> (f64, f64) {
    let d = 1.0 + e;
    let d_err = (1.0 - d) + e;
    let inv = 1.0 / d;
    let big = (-inv)
        .mul_add(d_err, (-inv).mul_add(d, 1.0))
        .mul_add(inv, inv);
    let s0 = e * inv;
    let small = (-s0).mul_add(d_err, (-s0).mul_add(d, e)).mul_add(inv, s0);
    (big, small)
}

/// [`sigmoid_big_small`] without its corrections: `1 / (1 + e)` and `e` times that, one
/// division and one product, each weight within a few ulp (the rounding of `1 + e` is left
/// in). The weights of a plate body's smoothed if-statements (`Tape::with_plain_weights`):
/// there the corrections' six fused multiply-adds were an eighth of a gradient's time, and
/// the weights feed a smoothing whose own error is of the order of `eta`, not of an ulp.
#[inline(always)]
pub fn sigmoid_big_small_plain(e: f64) -> (f64, f64) {
    let big = 1.0 / (1.0 + e);
    (big, e * big)
}

/// The logistic function from [`sigmoid_big_small_plain`]'s weights (for its accuracy test).
pub fn sigmoid_plain(x: f64) -> f64 {
    let (big, small) = sigmoid_big_small_plain(exp_of_nonpositive(-x.abs()));
    sigmoid_pair_order(x, big, small).0
}

/// The logistic function as a plate body's smoothed if-statements weigh (for its accuracy
/// test): [`sigmoid_big_small_plain`] of [`exp_of_nonpositive_tabled`].
pub fn sigmoid_tabled(x: f64) -> f64 {
    let (big, small) = sigmoid_big_small_plain(exp_of_nonpositive_tabled(-x.abs()));
    sigmoid_pair_order(x, big, small).0
}

/// `(sigmoid(x), sigmoid(-x))` from [`sigmoid_big_small`]'s pair: selects only, and one NaN
/// for every build where `x` is NaN.
#[inline(always)]
pub fn sigmoid_pair_order(x: f64, big: f64, small: f64) -> (f64, f64) {
    let pos = x >= 0.0;
    let first = if pos { big } else { small };
    let second = if pos { small } else { big };
    if x.is_nan() {
        (x + x, x + x)
    } else {
        (first, second)
    }
}

/// `ln(1 + e^x)` without overflow for large `x` or loss of precision for very negative `x`;
/// within 2 ulp of the correctly rounded result.
#[inline(always)]
pub fn softplus(x: f64) -> f64 {
    softplus_from_exp(x, exp(-x.abs()))
}

/// [`softplus`] given `e = exp(-|x|)`.
#[inline(always)]
pub fn softplus_from_exp(x: f64, e: f64) -> f64 {
    let pos = if x > 0.0 { x } else { 0.0 };
    // NaN stays NaN through `e`.
    pos + log1p(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`ln_stand_in`] is `floor(log2 x) * ln 2` for every positive finite `x`, subnormals
    /// included: the exponent read from the bits (a subnormal's from its mantissa's leading
    /// one), converted and multiplied once.
    #[test]
    fn the_logarithms_stand_in_is_the_exponent_times_ln2_subnormals_too() {
        let exponent = |x: f64| -> i64 {
            let bits = x.to_bits();
            let field = ((bits >> 52) & 0x7ff) as i64;
            let mantissa = bits & ((1u64 << 52) - 1);
            if field == 0 {
                63 - i64::from(mantissa.leading_zeros()) - 1074
            } else {
                field - 1023
            }
        };
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state
        };
        let mut xs = vec![f64::MIN_POSITIVE, f64::MAX, 1.0, 5e-324];
        for k in 0..52 {
            // The smallest and largest subnormals with their leading one at bit `k`, and
            // random ones between.
            let low = 1u64 << k;
            xs.push(f64::from_bits(low));
            xs.push(f64::from_bits((low << 1) - 1));
            xs.extend((0..100).map(|_| f64::from_bits(low | (next() & (low - 1)))));
        }
        xs.extend((0..100_000).map(|_| f64::from_bits(next() >> 1)));
        let mut checked = 0;
        for x in xs.into_iter().filter(|x| x.is_finite() && *x > 0.0) {
            let want = exponent(x) as f64 * std::f64::consts::LN_2;
            assert_eq!(ln_stand_in(x).to_bits(), want.to_bits(), "at {x:e}");
            checked += 1;
        }
        assert!(checked > 100_000);
    }
}
