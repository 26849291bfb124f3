//! The constants of the compiled forward code's long routines (a smoothed if-statement's
//! weights, `exp` and the logarithm), first in the constant table of every build's code, and
//! their indices: the AVX-512 routines read them as broadcasts (and the table of the plain
//! weights' exponential as two whole vectors), the AVX2 ones from a table that holds each
//! four times and continues with constants of its own.

use crate::elementary::{
    ATANH_COEFFS, E_BIAS, E_BIAS_SUBNORMAL, EXP_COEFFS, EXP_FLOOR, EXP_TABLED_COEFFS,
    EXP2_SIXTEENTHS, INV_LN2, LN_OFFSET, LN2_HI, LN2_LO, ROUND, ROUND_SIXTEENTHS, SUBNORMAL_SCALE,
};

/// The smoothed if-statement's and the logarithm's constants, first in every code's constant
/// table (integers as the doubles of their bits).
pub(super) const ROUTINES: [f64; 58] = [
    EXP_FLOOR,
    INV_LN2,
    ROUND,
    LN2_HI,
    LN2_LO,
    1.0,
    EXP_COEFFS[0],
    EXP_COEFFS[1],
    EXP_COEFFS[2],
    EXP_COEFFS[3],
    EXP_COEFFS[4],
    EXP_COEFFS[5],
    EXP_COEFFS[6],
    EXP_COEFFS[7],
    EXP_COEFFS[8],
    EXP_COEFFS[9],
    // The logarithm's, from `C_LN` on.
    f64::MIN_POSITIVE,
    SUBNORMAL_SCALE,
    f64::from_bits(0x3ff0_0000_0000_0000 - LN_OFFSET),
    f64::from_bits(1023),
    f64::from_bits(ROUND.to_bits() - (1u64 << 51)),
    E_BIAS,
    E_BIAS_SUBNORMAL,
    0.5,
    f64::INFINITY,
    f64::NAN,
    f64::NEG_INFINITY,
    ATANH_COEFFS[0],
    ATANH_COEFFS[1],
    ATANH_COEFFS[2],
    ATANH_COEFFS[3],
    ATANH_COEFFS[4],
    ATANH_COEFFS[5],
    ATANH_COEFFS[6],
    // `exp`'s clamp from above.
    710.0,
    // The logarithms' stand-ins' factor (`emit::ln_stand_in`).
    std::f64::consts::LN_2,
    // `exp_of_nonpositive_tabled`'s (the plain weights'), from `C_TABLED` on: its rounding
    // constant, its polynomial, and its table last.
    ROUND_SIXTEENTHS,
    EXP_TABLED_COEFFS[0],
    EXP_TABLED_COEFFS[1],
    EXP_TABLED_COEFFS[2],
    EXP_TABLED_COEFFS[3],
    EXP_TABLED_COEFFS[4],
    EXP2_SIXTEENTHS[0],
    EXP2_SIXTEENTHS[1],
    EXP2_SIXTEENTHS[2],
    EXP2_SIXTEENTHS[3],
    EXP2_SIXTEENTHS[4],
    EXP2_SIXTEENTHS[5],
    EXP2_SIXTEENTHS[6],
    EXP2_SIXTEENTHS[7],
    EXP2_SIXTEENTHS[8],
    EXP2_SIXTEENTHS[9],
    EXP2_SIXTEENTHS[10],
    EXP2_SIXTEENTHS[11],
    EXP2_SIXTEENTHS[12],
    EXP2_SIXTEENTHS[13],
    EXP2_SIXTEENTHS[14],
    EXP2_SIXTEENTHS[15],
];

/// Indices in [`ROUTINES`] (`C_COEFF + i` is `EXP_COEFFS[i]`).
pub(super) const C_FLOOR: usize = 0;
pub(super) const C_INV_LN2: usize = 1;
pub(super) const C_ROUND: usize = 2;
pub(super) const C_LN2_HI: usize = 3;
pub(super) const C_LN2_LO: usize = 4;
pub(super) const C_ONE: usize = 5;
pub(super) const C_COEFF: usize = 6;
pub(super) const C_LN: usize = 16;
pub(super) const C_MIN_POSITIVE: usize = C_LN;
pub(super) const C_SUB_SCALE: usize = C_LN + 1;
pub(super) const C_LN_OFFSET: usize = C_LN + 2;
pub(super) const C_1023: usize = C_LN + 3;
pub(super) const C_E_BITS: usize = C_LN + 4;
pub(super) const C_E_BIAS: usize = C_LN + 5;
pub(super) const C_E_BIAS_SUB: usize = C_LN + 6;
pub(super) const C_HALF: usize = C_LN + 7;
pub(super) const C_INF: usize = C_LN + 8;
pub(super) const C_NAN: usize = C_LN + 9;
pub(super) const C_NEG_INF: usize = C_LN + 10;
pub(super) const C_ATANH: usize = C_LN + 11;
pub(super) const C_EXP_CEIL: usize = C_ATANH + 7;
pub(super) const C_LN_2: usize = C_EXP_CEIL + 1;
pub(super) const C_TABLED: usize = C_LN_2 + 1;
pub(super) const C_ROUND_SIXTEENTHS: usize = C_TABLED;
/// `C_TABLED_COEFF + i` is `EXP_TABLED_COEFFS[i]`.
pub(super) const C_TABLED_COEFF: usize = C_TABLED + 1;
/// `C_EXP2_SIXTEENTHS + j` is `EXP2_SIXTEENTHS[j]`, the last of [`ROUTINES`].
pub(super) const C_EXP2_SIXTEENTHS: usize = C_TABLED_COEFF + 5;
const _: () = assert!(C_EXP2_SIXTEENTHS + 16 == ROUTINES.len());
