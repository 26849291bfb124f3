//! Standard normals from uniform bits: the Box-Muller transform with our own polynomial
//! `ln` ([`crate::elementary::ln`]), `sqrt` and a quadrant-reduced `sin`/`cos`, written as
//! straight-line code so that a lane loop over it vectorises, and the same in every build.
//!
//! Box-Muller is exact in distribution: for independent uniforms `u`, `v` on (0, 1),
//! `sqrt(-2 ln u) (cos 2 pi v, sin 2 pi v)` are two independent standard normals. The only
//! approximations are the uniforms' grid (`(k + 1/2) 2^-52`: the radius stops at 8.57, and
//! the radius's tail mass beyond 8.49, `2^-52`, sits on the last grid point) and the last bits of the elementary functions.
//! Unlike a ziggurat it has no rejection step, so every lane takes the same instructions and
//! each pair of normals consumes exactly one Philox block.

use std::f64::consts::FRAC_PI_2;

use crate::elementary::{self, poly_even_odd};

/// `1.5 * 2^52`: adding it rounds to an integer held in the low bits.
const ROUND: f64 = 6_755_399_441_055_744.0;

/// `(-1)^k / (2k + 1)!` for `k = 8..=0`: `sin x = x * S(x^2)` on `|x| <= pi/4` to 1e-19.
const SIN_COEFFS: [f64; 9] = [
    1.0 / 355_687_428_096_000.0,
    -1.0 / 1_307_674_368_000.0,
    1.0 / 6_227_020_800.0,
    -1.0 / 39_916_800.0,
    1.0 / 362_880.0,
    -1.0 / 5_040.0,
    1.0 / 120.0,
    -1.0 / 6.0,
    1.0,
];

/// `(-1)^k / (2k)!` for `k = 9..=0`: `cos x = C(x^2)` on `|x| <= pi/4` to 1e-20.
const COS_COEFFS: [f64; 10] = [
    -1.0 / 6_402_373_705_728_000.0,
    1.0 / 20_922_789_888_000.0,
    -1.0 / 87_178_291_200.0,
    1.0 / 479_001_600.0,
    -1.0 / 3_628_800.0,
    1.0 / 40_320.0,
    -1.0 / 720.0,
    1.0 / 24.0,
    -1.0 / 2.0,
    1.0,
];

/// A uniform on (0, 1) from the top 52 bits of `w`: `(k + 1/2) 2^-52`, exactly.
#[inline(always)]
pub fn open_unit(w: u64) -> f64 {
    f64::from_bits(0x3ff0_0000_0000_0000 | (w >> 12)) - (1.0 - f64::EPSILON / 2.0)
}

/// `(cos 2 pi u, sin 2 pi u)` for `u` in (0, 1) a multiple of 2^-53: `4u = q + t` with `q` the
/// nearest integer (exact), then the quarter turns `q` rotate `(cos, sin)` of `t pi / 2`.
#[inline(always)]
pub fn cos_sin_turns(u: f64) -> (f64, f64) {
    let t4 = 4.0 * u;
    let qr = t4 + ROUND;
    let q = qr.to_bits() & 3;
    let x = (t4 - (qr - ROUND)) * FRAC_PI_2;
    let x2 = x * x;
    let s = x * poly_even_odd(x2, &SIN_COEFFS);
    let c = poly_even_odd(x2, &COS_COEFFS);
    // Quarter turn q: (c, s), (-s, c), (-c, -s), (s, -c).
    let (a, b) = if q & 1 == 0 { (c, s) } else { (s, c) };
    let a = if q == 1 || q == 2 { -a } else { a };
    let b = if q >= 2 { -b } else { b };
    (a, b)
}

/// The two standard normals of Box-Muller from two 64-bit words: the first sets the radius,
/// the second the angle.
#[inline(always)]
pub fn box_muller(radius_bits: u64, angle_bits: u64) -> (f64, f64) {
    let r = (-2.0 * elementary::ln(open_unit(radius_bits))).sqrt();
    let (c, s) = cos_sin_turns(open_unit(angle_bits));
    (r * c, r * s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniforms_are_open_and_exact() {
        assert_eq!(open_unit(0), f64::EPSILON / 2.0);
        assert_eq!(open_unit(u64::MAX), 1.0 - f64::EPSILON / 2.0);
        assert_eq!(open_unit(1 << 63), 0.5 + f64::EPSILON / 2.0);
    }

    #[test]
    fn cos_sin_turns_matches_std_around_the_circle() {
        for k in 0..10_000u64 {
            let u = open_unit(k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let (c, s) = cos_sin_turns(u);
            let th = 2.0 * std::f64::consts::PI * u;
            // std's argument 2 pi u carries its own rounding (up to 4e-16 absolute).
            assert!((c - th.cos()).abs() < 2e-15, "cos at {u}");
            assert!((s - th.sin()).abs() < 2e-15, "sin at {u}");
        }
    }
}
