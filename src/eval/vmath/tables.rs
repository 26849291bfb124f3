//! The constants and lookup tables of the exact vector `exp` and `ln`, computed at first use
//! in double-double arithmetic by our own series (nothing is copied from a libm).
//!
//! A double-double `hi + lo` carries about 104 bits; the entries are accurate to about 2^-100
//! relative (`2^(j/N)`) or 2^-95 absolute (`ln c`, whose `hi` is cut to a multiple of 2^-43),
//! far below the kernels' error budget (2^-61 of a result of at least 2^-9 there).
//! `ln 2 = 2 atanh(1/3)`, `2^(j/N) = exp(j ln2 / N)` by its Taylor series, and
//! `ln c = 2 atanh((c - 1) / (c + 1))`, all summed until the next term is below 2^-112.
//!
//! Not here: the kernels that read the tables (`avx2.rs`), or when they are used (`mod.rs`).

/// Entries of the `exp` table: `2^(j / EXP_N)` for `j` in `0..EXP_N`.
pub const EXP_N: usize = 256;
/// Entries of the `ln` table (see [`Tables::ln`]).
pub const LN_N: usize = 256;
/// `ln`'s argument is reduced to `x = 2^E m` with `m` in `[LN_M0, 2 LN_M0)`: subtracting the
/// bits of `LN_M0` from those of `x` puts `E` in the exponent field and the position of `m`
/// in its interval in the mantissa field, whose top 8 bits index the table.
pub const LN_M0: f64 = 0.6875;

/// A double-double: the unevaluated sum `hi + lo` with `|lo| <= ulp(hi) / 2`.
#[derive(Clone, Copy, Debug)]
pub struct Dd {
    pub hi: f64,
    pub lo: f64,
}

/// `a + b = s + e` exactly (Knuth's 2Sum, any magnitudes).
#[inline(always)]
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a + b = s + e` exactly, given `|a| >= |b|` (or `a == 0`).
#[inline(always)]
fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

impl Dd {
    fn from(x: f64) -> Dd {
        Dd { hi: x, lo: 0.0 }
    }

    fn add(self, o: Dd) -> Dd {
        let (s, e) = two_sum(self.hi, o.hi);
        let (t, f) = two_sum(self.lo, o.lo);
        let (s, e) = fast_two_sum(s, e + t);
        let (hi, lo) = fast_two_sum(s, e + f);
        Dd { hi, lo }
    }

    fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }

    fn sub(self, o: Dd) -> Dd {
        self.add(o.neg())
    }

    fn mul(self, o: Dd) -> Dd {
        let p = self.hi * o.hi;
        let e = self.hi.mul_add(o.hi, -p);
        let e = e + (self.hi * o.lo + self.lo * o.hi);
        let (hi, lo) = fast_two_sum(p, e);
        Dd { hi, lo }
    }

    /// `self / d` for a double `d`.
    fn div_f(self, d: f64) -> Dd {
        let q1 = self.hi / d;
        let p = q1 * d;
        let e = q1.mul_add(d, -p);
        let q2 = (((self.hi - p) - e) + self.lo) / d;
        let (hi, lo) = fast_two_sum(q1, q2);
        Dd { hi, lo }
    }

    fn div(self, o: Dd) -> Dd {
        // Three quotient digits, each from the remainder of the ones before.
        let q1 = self.hi / o.hi;
        let r = self.sub(o.mul(Dd::from(q1)));
        let q2 = r.hi / o.hi;
        let r = r.sub(o.mul(Dd::from(q2)));
        let q3 = r.hi / o.hi;
        let (hi, lo) = fast_two_sum(q1, q2);
        Dd { hi, lo }.add(Dd::from(q3))
    }
}

/// Below this a series term no longer matters (2^-112).
const TINY: f64 = 1.925_929_944_387_236e-34;

/// `2 atanh(u) = 2 (u + u^3/3 + u^5/5 + ...)` for `|u| <= 1/3`.
fn two_atanh(u: Dd) -> Dd {
    let u2 = u.mul(u);
    let mut power = u;
    let mut sum = u;
    let mut k = 1.0;
    while power.hi.abs() > TINY {
        power = power.mul(u2);
        k += 2.0;
        sum = sum.add(power.div_f(k));
    }
    sum.add(sum)
}

/// `ln c` for a double `c` in `[1/2, 2]`, given `ln 2` and the table `2^(j/N)`:
/// `c = 2^(k/N) w` with `w` within `2^-9` of 1, and `ln w = 2 atanh((w - 1) / (w + 1))`
/// converges in a few terms.
fn ln_dd(c: f64, ln2: Dd, exp: &[[f64; 2]; EXP_N]) -> Dd {
    // `k` only has to be near `N log2 c`; std's `log2` is good enough for choosing it.
    let k = (c.log2() * EXP_N as f64).round() as i64;
    let j = k.rem_euclid(EXP_N as i64) as usize;
    let scale = if k < 0 { 0.5 } else { 1.0 };
    let t = Dd {
        hi: exp[j][0] * scale,
        lo: exp[j][1] * scale,
    };
    let w = Dd::from(c).div(t);
    let u = w.sub(Dd::from(1.0)).div(w.add(Dd::from(1.0)));
    ln2.mul(Dd::from(k as f64))
        .div_f(EXP_N as f64)
        .add(two_atanh(u))
}

/// `exp(y)` for `|y| <= 1` by its Taylor series.
fn exp_dd(y: Dd) -> Dd {
    let mut term = Dd::from(1.0);
    let mut sum = term;
    let mut n = 0.0;
    while term.hi.abs() > TINY {
        n += 1.0;
        term = term.mul(y).div_f(n);
        sum = sum.add(term);
    }
    sum
}

/// 2^43.
const TWO_43: f64 = 8_796_093_022_208.0;

/// Everything the kernels read.
pub struct Tables {
    /// `(2^(j/N)).hi, (2^(j/N)).lo` for `j` in `0..EXP_N`, interleaved (one gather index).
    pub exp: [[f64; 2]; EXP_N],
    /// `N / ln 2`, to find `k = round(x N / ln 2)`.
    pub exp_inv_step: f64,
    /// `ln 2 / N` as `hi + lo`: `x - k hi` is exact with a fused multiply-add.
    pub exp_step_hi: f64,
    pub exp_step_lo: f64,
    /// `2^(j/16)` for `j` in `0..16` as `hi` and `lo` (every 16th entry of `exp`): the AVX-512
    /// `exp` holds them in registers.
    pub exp16_hi: [f64; 16],
    pub exp16_lo: [f64; 16],
    /// `16 / ln 2` and `ln 2 / 16` as `hi + lo`, as `exp_inv_step` and `exp_step_*` for 16.
    pub exp16_inv_step: f64,
    pub exp16_step_hi: f64,
    pub exp16_step_lo: f64,
    /// Per interval `j` of `m`: `c_j ~ 1/m` and `-ln c_j` as `hi, lo` with `hi` a multiple
    /// of 2^-43 (and padding to four: a row is one 32-byte load). `c_j = 1` on the two intervals beside
    /// `m = 1`, so `ln` near 1 has no cancellation at all.
    pub ln: [[f64; 4]; LN_N],
    /// `ln 2` as `hi + lo` with `hi` of 42 significant bits (a multiple of 2^-42): `E hi` is
    /// exact for any exponent, and so is `E hi + (-ln c_j)_hi`.
    pub ln2_hi: f64,
    pub ln2_lo: f64,
}

impl Tables {
    /// Computes every table (about a hundred microseconds, once per process).
    pub fn compute() -> Box<Tables> {
        let ln2 = two_atanh(Dd::from(1.0).div(Dd::from(3.0)));

        // 2^(j/N) = 2^(16 a / N) 2^(b / N), j = 16 a + b: 32 Taylor series instead of 256.
        let two_pow = |i: usize| exp_dd(ln2.mul(Dd::from(i as f64)).div_f(EXP_N as f64));
        let fine: Vec<Dd> = (0..16).map(two_pow).collect();
        let coarse: Vec<Dd> = (0..EXP_N / 16).map(|a| two_pow(16 * a)).collect();
        let mut exp = [[0.0; 2]; EXP_N];
        for (j, e) in exp.iter_mut().enumerate() {
            let t = coarse[j / 16].mul(fine[j % 16]);
            *e = [t.hi, t.lo];
        }
        let step = ln2.div(Dd::from(EXP_N as f64));

        let mut ln = [[0.0; 4]; LN_N];
        // Intervals below m = 1 are half as wide (the mantissa's step halves below 1).
        // The mantissa field spans [LN_M0, 1) over its first 2 - 2 LN_M0 (exactly).
        let below = ((2.0 - 2.0 * LN_M0) * LN_N as f64) as usize;
        for (j, e) in ln.iter_mut().enumerate() {
            let c = if j + 1 == below || j == below {
                1.0
            } else {
                let width = if j < below { 0.5 } else { 1.0 } / LN_N as f64;
                let lo = if j < below {
                    LN_M0 + j as f64 * width
                } else {
                    1.0 + (j - below) as f64 * width
                };
                1.0 / (lo + width / 2.0)
            };
            let l = ln_dd(c, ln2, &exp).neg();
            // A multiple of 2^-43 (|l| < 1/2: at most 42 bits), so `E ln2_hi + hi` is exact.
            let hi = (l.hi * TWO_43).round() / TWO_43;
            *e = [c, hi, l.sub(Dd::from(hi)).hi, 0.0];
        }
        let ln2_hi = f64::from_bits(ln2.hi.to_bits() & !0x7ff);
        let ln2_lo = ln2.sub(Dd::from(ln2_hi)).hi;

        // Scaling by a power of two is exact: ln2/16 = (ln2/N) (N/16).
        let to16 = (EXP_N / 16) as f64;
        Box::new(Tables {
            exp16_hi: std::array::from_fn(|j| exp[j * EXP_N / 16][0]),
            exp16_lo: std::array::from_fn(|j| exp[j * EXP_N / 16][1]),
            exp16_inv_step: 16.0 / ln2.hi,
            exp16_step_hi: step.hi * to16,
            exp16_step_lo: step.lo * to16,
            exp,
            exp_inv_step: EXP_N as f64 / ln2.hi,
            exp_step_hi: step.hi,
            exp_step_lo: step.lo,
            ln,
            ln2_hi,
            ln2_lo,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_double_constants_agree_with_std_to_the_last_bit() {
        let t = Tables::compute();
        // The high parts are the correctly rounded values, which std's (nearly correctly
        // rounded) functions return for these arguments.
        assert_eq!(t.ln2_hi + t.ln2_lo, std::f64::consts::LN_2);
        assert_eq!(t.exp[0], [1.0, 0.0]);
        assert_eq!(t.exp[128][0], std::f64::consts::SQRT_2);
        for (j, e) in t.exp.iter().enumerate() {
            let want = (j as f64 / EXP_N as f64).exp2();
            assert!((e[0] - want).abs() <= f64::EPSILON * want, "j {j}");
            assert!(e[1].abs() <= f64::EPSILON * e[0] / 2.0, "j {j}");
        }
        for (j, e) in t.ln.iter().enumerate() {
            let want = -e[0].ln();
            assert!(
                (e[1] + e[2] - want).abs() <= f64::EPSILON * want.abs(),
                "j {j}"
            );
            assert_eq!(e[1], (e[1] * TWO_43).round() / TWO_43, "j {j}");
        }
        // The 16-entry table and step: every 16th entry, and ln2/16 to the last bit.
        for j in 0..16 {
            assert_eq!([t.exp16_hi[j], t.exp16_lo[j]], t.exp[16 * j], "j {j}");
        }
        assert_eq!(
            t.exp16_step_hi + t.exp16_step_lo,
            std::f64::consts::LN_2 / 16.0
        );
        assert_eq!(t.exp16_step_hi * 16.0, t.ln2_hi + t.ln2_lo);
        assert!(t.exp16_step_lo.abs() <= f64::EPSILON * t.exp16_step_hi / 2.0);
        assert_eq!(t.ln[159][..3], [1.0, 0.0, 0.0]);
        assert_eq!(t.ln[160][..3], [1.0, 0.0, 0.0]);
        // 2^(j/N) squared N/j times over is 2 (checks the low parts: to ~2^-100).
        let x = Dd {
            hi: t.exp[64][0],
            lo: t.exp[64][1],
        };
        let x4 = x.mul(x).mul(x.mul(x));
        assert!((x4.hi - 2.0).abs() + x4.lo.abs() < 1e-30, "{x4:?}");
        // exp(ln c_j) = c_j by the Taylor series directly: the ln table to ~2^-100 (ln c is
        // below 1/2, where the series converges in a few dozen terms).
        for (j, e) in t.ln.iter().enumerate() {
            let back = exp_dd(Dd {
                hi: -e[1],
                lo: -e[2],
            });
            let diff = back.sub(Dd::from(e[0]));
            assert!((diff.hi / e[0]).abs() < 1e-29, "j {j}: {diff:?}");
        }
    }
}
