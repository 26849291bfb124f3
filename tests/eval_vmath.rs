//! The elementary functions (`dsgd::elementary`: `exp`, `ln`, `log1p`, the sigmoid and
//! softplus) are within 2 ulp of the correctly rounded result, and their chunk versions
//! (`dsgd::eval::vmath`) give the same bits in every kernel set the CPU runs.
//!
//! The reference is independent of the code under test and far more accurate than a double:
//! double-double arithmetic (about 2^-100 relative), `exp` by `r / 1024`'s Taylor series
//! squared ten times, `ln` by the `atanh` series of the double-double argument, both with a
//! 106-bit `ln 2`. Errors are measured in ulps of the true value's binade (subnormal results
//! in units of 2^-1074), so "within 2 ulp of the correctly rounded result" holds whenever the
//! measured error is below 1.5 ulp, and the test asserts the stricter bound 2 ulp of the true
//! value only where the functions' own docs promise less. In-suite: about 2^17 random inputs
//! per function and range plus edge sweeps; the `#[ignore]`d test runs 10^7 per function
//! (`cargo test --release --test eval_vmath -- --ignored --nocapture`).

use dsgd::elementary;
use dsgd::eval::CHUNK;
use dsgd::eval::vmath::{self, KernelSet};

/// A double-double `hi + lo`, `|lo| <= ulp(hi) / 2`.
#[derive(Clone, Copy, Debug)]
struct Dd {
    hi: f64,
    lo: f64,
}

fn fast_two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    Dd {
        hi: s,
        lo: b - (s - a),
    }
}

fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    Dd {
        hi: s,
        lo: (a - (s - bb)) + (b - bb),
    }
}

impl Dd {
    fn from(x: f64) -> Dd {
        Dd { hi: x, lo: 0.0 }
    }
    fn add(self, y: Dd) -> Dd {
        let s = two_sum(self.hi, y.hi);
        let t = two_sum(self.lo, y.lo);
        let s = fast_two_sum(s.hi, s.lo + t.hi);
        fast_two_sum(s.hi, s.lo + t.lo)
    }
    fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }
    fn sub(self, y: Dd) -> Dd {
        self.add(y.neg())
    }
    fn mul(self, y: Dd) -> Dd {
        let p = self.hi * y.hi;
        let e = self.hi.mul_add(y.hi, -p);
        fast_two_sum(p, e + (self.hi * y.lo + self.lo * y.hi))
    }
    fn div(self, y: Dd) -> Dd {
        let q1 = self.hi / y.hi;
        let r = self.sub(y.mul(Dd::from(q1)));
        let q2 = r.hi / y.hi;
        let r = r.sub(y.mul(Dd::from(q2)));
        let q3 = r.hi / y.hi;
        fast_two_sum(q1, q2).add(Dd::from(q3))
    }
    /// `self * 2^k`, exact while no part leaves the normal range.
    fn ldexp(self, k: i32) -> Dd {
        let s = pow2(k);
        Dd {
            hi: self.hi * s,
            lo: self.lo * s,
        }
    }
}

/// `2^k` for `k <= 1023` (0 below -1074).
fn pow2(k: i32) -> f64 {
    if k < -1074 {
        0.0
    } else if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
}

/// `ln 2` to 106 bits.
const LN2: Dd = Dd {
    hi: f64::from_bits(0x3fe6_2e42_fefa_39ef),
    lo: f64::from_bits(0x3c7a_bc9e_3b39_803f),
};

/// `e^x = r 2^k` with `r` in about [0.7, 1.42], for finite `x`.
fn exp_dd(x: f64) -> (Dd, i32) {
    let k = (x / LN2.hi).round();
    // x - k ln 2: k has at most 11 bits, so k * LN2.hi is exact in two parts.
    let kh = Dd::from(k).mul(LN2);
    let r = Dd::from(x).sub(kh).ldexp(-10);
    let mut sum = Dd::from(1.0);
    let mut term = Dd::from(1.0);
    for n in 1..=14 {
        term = term.mul(r).div(Dd::from(n as f64));
        sum = sum.add(term);
    }
    for _ in 0..10 {
        sum = sum.mul(sum);
    }
    (sum, k as i32)
}

/// `ln(m)` for a positive double-double `m`.
fn ln_dd(m: Dd) -> Dd {
    // m = 2^e t, t in [sqrt(1/2), sqrt(2)).
    let mut e = m.hi.log2().floor() as i32;
    let mut t = m.ldexp(-e);
    if t.hi >= std::f64::consts::SQRT_2 {
        t = t.ldexp(-1);
        e += 1;
    } else if t.hi < std::f64::consts::FRAC_1_SQRT_2 {
        t = t.ldexp(1);
        e -= 1;
    }
    let one = Dd::from(1.0);
    let s = t.sub(one).div(t.add(one));
    let z = s.mul(s);
    // 2 (s + s^3/3 + s^5/5 + ...), |s| <= 0.172: 24 terms reach 2^-120.
    let mut sum = Dd::from(0.0);
    for k in (0..24).rev() {
        sum = sum
            .mul(z)
            .add(Dd::from(1.0).div(Dd::from((2 * k + 1) as f64)));
    }
    let ln_t = s.mul(sum).ldexp(1);
    LN2.mul(Dd::from(e as f64)).add(ln_t)
}

/// A double with the value `2^e t` for a subnormal `x` scaled up, and its exponent.
fn ln_of(x: f64) -> Dd {
    if x < f64::MIN_POSITIVE {
        ln_dd(Dd::from(x * pow2(600))).sub(LN2.mul(Dd::from(600.0)))
    } else {
        ln_dd(Dd::from(x))
    }
}

/// The error of `y` in ulps of the true value `r 2^k` (its binade's ulp, at least 2^-1074);
/// `+-inf` counts as `+-2^1024`.
fn ulps(y: f64, r: Dd, k: i32) -> f64 {
    if y.is_nan() || r.hi.is_nan() {
        return if y.is_nan() && r.hi.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if r.hi.is_infinite() {
        return if y == r.hi { 0.0 } else { f64::INFINITY };
    }
    let binade = if r.hi == 0.0 {
        -2000
    } else {
        r.hi.abs().log2().floor() as i32
    };
    if y.is_infinite() && y.signum() == r.hi.signum() && binade + k >= 1024 {
        // The true value is beyond the largest double's rounding boundary too.
        return 0.0;
    }
    // y 2^-k, exactly, in two steps (either factor alone may overflow).
    let (k1, k2) = (k / 2, k - k / 2);
    let scaled = if y.is_infinite() {
        y.signum() * pow2(1023 - k1) * pow2(1 - k2)
    } else {
        y * pow2(-k1) * pow2(-k2)
    };
    let ulp_true = (binade + k - 52).max(-1074);
    let ulp = pow2(ulp_true - k1) * pow2(-k2);
    ((scaled - r.hi) - r.lo).abs() / ulp
}

/// The true `f(x)` as `r 2^k` (NaN where the result is NaN).
type Reference = fn(f64) -> (Dd, i32);

fn ref_exp(x: f64) -> (Dd, i32) {
    if x.is_nan() {
        return (Dd::from(f64::NAN), 0);
    }
    // Beyond these the true value rounds to 0 or overflows whatever r is.
    exp_dd(x.clamp(-800.0, 800.0))
}

fn ref_ln(x: f64) -> (Dd, i32) {
    if x.is_nan() || x < 0.0 {
        (Dd::from(f64::NAN), 0)
    } else if x == 0.0 {
        (Dd::from(f64::NEG_INFINITY), 0)
    } else if x == f64::INFINITY {
        (Dd::from(f64::INFINITY), 0)
    } else {
        (ln_of(x), 0)
    }
}

fn ref_log1p(x: f64) -> (Dd, i32) {
    if x.is_nan() || x < -1.0 {
        (Dd::from(f64::NAN), 0)
    } else if x == -1.0 {
        (Dd::from(f64::NEG_INFINITY), 0)
    } else if x == f64::INFINITY {
        (Dd::from(f64::INFINITY), 0)
    } else if x.abs() < 1e-200 {
        // ln(1 + x) = x - x^2/2: the square is far below x's last bit.
        (Dd::from(x).ldexp(600), -600)
    } else {
        (ln_dd(two_sum(1.0, x)), 0)
    }
}

/// `ln(1 + r 2^k)` as `r' 2^k'`.
fn log1p_scaled(r: Dd, k: i32) -> (Dd, i32) {
    if k < -200 {
        (r, k)
    } else {
        (ln_dd(Dd::from(1.0).add(r.ldexp(k))), 0)
    }
}

fn ref_sigmoid(x: f64) -> (Dd, i32) {
    if x.is_nan() {
        return (Dd::from(f64::NAN), 0);
    }
    let (r, k) = ref_exp(-x.abs());
    let e = if k < -200 { Dd::from(0.0) } else { r.ldexp(k) };
    let one = Dd::from(1.0);
    if x >= 0.0 {
        (one.div(one.add(e)), 0)
    } else {
        // e^x / (1 + e^x), kept scaled for deep tails.
        (r.div(one.add(e)), k)
    }
}

fn ref_softplus(x: f64) -> (Dd, i32) {
    if x.is_nan() {
        return (Dd::from(f64::NAN), 0);
    }
    if x == f64::INFINITY {
        return (Dd::from(f64::INFINITY), 0);
    }
    let (r, k) = ref_exp(-x.abs());
    let (l, kl) = log1p_scaled(r, k);
    if x > 0.0 && kl < -200 {
        // x > 138: the logarithm is below x's last bit by far.
        (Dd::from(x), 0)
    } else if x > 0.0 {
        (Dd::from(x).add(l.ldexp(kl)), 0)
    } else {
        (l, kl)
    }
}

/// SplitMix64: the inputs' source.
struct Inputs(u64);

impl Inputs {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// Any double with a random sign, exponent and mantissa (NaN and infinities included).
    fn any_bits(&mut self) -> f64 {
        f64::from_bits(self.next())
    }
    /// `+-2^e (1 + m)` with `e` uniform in `lo..hi`.
    fn log_uniform(&mut self, lo: i32, hi: i32) -> f64 {
        let e = lo + (self.next() % (hi - lo) as u64) as i32;
        let m = 1.0 + self.unit();
        let sign = if self.next() & 1 == 0 { 1.0 } else { -1.0 };
        sign * m * pow2(e.clamp(-1074, 1023))
    }
}

/// A function under test, its reference, and the ranges to sample: each a generator.
struct Case {
    name: &'static str,
    f: fn(f64) -> f64,
    reference: Reference,
    ranges: Vec<fn(&mut Inputs) -> f64>,
    edges: Vec<f64>,
}

fn cases() -> Vec<Case> {
    let specials = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        f64::MAX,
        -f64::MAX,
        5e-324,
        -5e-324,
        1.0,
        -1.0,
    ];
    let with = |extra: &[f64]| {
        let mut v = specials.clone();
        v.extend_from_slice(extra);
        v
    };
    vec![
        Case {
            name: "exp",
            f: elementary::exp,
            reference: ref_exp,
            ranges: vec![
                |g| g.uniform(-746.0, 710.0),
                |g| g.uniform(-1.0, 1.0),
                |g| g.log_uniform(-1074, 0),
                // Subnormal results and the overflow edge.
                |g| g.uniform(-745.2, -708.0),
                |g| g.uniform(709.0, 709.8),
                |g| g.any_bits(),
            ],
            edges: with(&[
                709.782712893384,
                709.7827128933841,
                -745.1332191019411,
                -745.1332191019412,
                -708.3964185322641,
                -744.44007192138,
            ]),
        },
        Case {
            name: "ln",
            f: elementary::ln,
            reference: ref_ln,
            ranges: vec![
                |g| f64::from_bits(g.next() >> 1),
                |g| g.uniform(0.5, 2.0),
                |g| 1.0 + g.uniform(-1e-3, 1e-3),
                |g| 1.0 + g.log_uniform(-60, -10),
                |g| g.log_uniform(-1074, -1022).abs(),
            ],
            edges: with(&[
                std::f64::consts::FRAC_1_SQRT_2,
                std::f64::consts::SQRT_2,
                1.0 + f64::EPSILON,
                1.0 - f64::EPSILON / 2.0,
                2.0,
                0.5,
            ]),
        },
        Case {
            name: "log1p",
            f: elementary::log1p,
            reference: ref_log1p,
            ranges: vec![
                |g| g.uniform(-1.0, 1.0),
                |g| g.log_uniform(-1074, 0),
                |g| g.log_uniform(-60, 1024).abs(),
                |g| -1.0 + g.log_uniform(-53, -1).abs(),
                |g| g.any_bits(),
            ],
            edges: with(&[
                -1.0 + f64::EPSILON / 2.0,
                f64::EPSILON,
                -f64::EPSILON / 2.0,
                1e-300,
                9007199254740992.0,
            ]),
        },
        Case {
            name: "sigmoid",
            f: elementary::sigmoid,
            reference: ref_sigmoid,
            ranges: vec![
                |g| g.uniform(-750.0, 750.0),
                |g| g.uniform(-40.0, 40.0),
                |g| g.log_uniform(-1074, 10),
                |g| g.any_bits(),
            ],
            edges: with(&[-745.2, -745.0, -709.0, 36.0, 37.5, 745.0]),
        },
        Case {
            name: "softplus",
            f: elementary::softplus,
            reference: ref_softplus,
            ranges: vec![
                |g| g.uniform(-750.0, 750.0),
                |g| g.uniform(-40.0, 40.0),
                |g| g.log_uniform(-1074, 10),
                |g| g.any_bits(),
            ],
            edges: with(&[-745.2, -745.0, -709.0, 36.0, 37.5, 745.0]),
        },
    ]
}

/// The worst error over `per_range` inputs of each range plus the edges, and where.
fn worst(case: &Case, per_range: usize, seed: u64) -> (f64, f64) {
    let mut g = Inputs(seed);
    let mut max = (0.0, f64::NAN);
    let mut check = |x: f64| {
        let (r, k) = (case.reference)(x);
        let e = ulps((case.f)(x), r, k);
        if e > max.0 || e.is_nan() {
            max = (e, x);
        }
    };
    for &x in &case.edges {
        check(x);
        // The neighbouring doubles of each edge.
        for d in 1..=4u64 {
            check(f64::from_bits(x.to_bits().wrapping_add(d)));
            check(f64::from_bits(x.to_bits().wrapping_sub(d)));
        }
    }
    for range in &case.ranges {
        for _ in 0..per_range {
            check(range(&mut g));
        }
    }
    max
}

#[test]
fn the_reference_is_right_where_the_answer_is_known() {
    // ln 2 = 0.693147180559945309417232121458..., e = 2.718281828459045235360287471352...
    let (e, k) = exp_dd(1.0);
    assert_eq!(k, 1);
    let e = e.ldexp(1);
    assert_eq!(e.hi, std::f64::consts::E);
    assert!((e.lo - 1.4456468917292502e-16).abs() < 1e-28, "{e:?}");
    let l = ln_dd(Dd::from(2.0));
    assert_eq!(l.hi, LN2.hi);
    assert!((l.lo - LN2.lo).abs() < 1e-31, "{l:?}");
    // exp(ln x) = x to double-double precision.
    for x in [0.3, 1.7, 1e-300, 123456.789] {
        let l = ln_of(x);
        let (r, k) = exp_dd(l.hi);
        // e^(hi + lo) = e^hi (1 + lo).
        let back = r.add(r.mul(Dd::from(l.lo))).ldexp(k);
        assert!(
            ((back.hi - x) + back.lo).abs() <= x * 1e-28,
            "{x}: {back:?}"
        );
    }
}

#[test]
fn elementary_functions_are_within_2_ulp() {
    for case in cases() {
        let (e, x) = worst(&case, 1 << 15, 0xe1e0);
        eprintln!("{}: worst {e:.3} ulp at {x:e}", case.name);
        assert!(e <= 2.0, "{}: {e} ulp at {x:e}", case.name);
    }
}

#[test]
#[ignore = "10^7 inputs per function: run with --release --ignored"]
fn elementary_functions_are_within_2_ulp_over_ten_million_inputs() {
    for case in cases() {
        let per_range = 10_000_000usize.div_ceil(case.ranges.len());
        let (e, x) = worst(&case, per_range, 0x5eed_0010);
        eprintln!(
            "{}: worst {e:.4} ulp at {x:e} over {} inputs",
            case.name,
            per_range * case.ranges.len()
        );
        assert!(e <= 2.0, "{}: {e} ulp at {x:e}", case.name);
    }
}

/// The weights of a plate body's smoothed if-statements leave out the sigmoid's rounding
/// corrections (`elementary::sigmoid_big_small_plain`): they stay within 3 ulp of the
/// correctly rounded sigmoid, over the sigmoid's own ranges and edges.
#[test]
fn the_plain_sigmoid_is_within_3_ulp() {
    let sigmoid = cases()
        .into_iter()
        .find(|c| c.name == "sigmoid")
        .expect("the sigmoid's case");
    let plain = Case {
        name: "sigmoid_plain",
        f: elementary::sigmoid_plain,
        ..sigmoid
    };
    let (e, x) = worst(&plain, 1 << 17, 0x91a1);
    eprintln!("sigmoid_plain: worst {e:.3} ulp at {x:e}");
    assert!(e <= 3.0, "sigmoid_plain: {e} ulp at {x:e}");
}

/// The arguments of the plate weights' exponential (`exp_of_nonpositive_tabled`): uniform
/// over its whole range and over the last binades before 0, log-uniform down to the smallest
/// subnormal, and its edges (the clamp, where results turn subnormal and then 0).
fn nonpositive_case(name: &'static str, f: fn(f64) -> f64) -> Case {
    Case {
        name,
        f,
        reference: ref_exp,
        ranges: vec![
            |g| g.uniform(-750.0, 0.0),
            |g| g.uniform(-40.0, 0.0),
            |g| g.uniform(-1.0, 0.0),
            |g| g.uniform(-746.0, -700.0),
            |g| -g.log_uniform(-1074, 10).abs(),
        ],
        // (Not 0: the four neighbours of each edge's bits on either side are checked too, and
        // those of +-0 are positive or NaN. The test checks `+-0` itself.)
        edges: vec![
            -2.5e-323, -1e-300, -708.39, -708.4, -709.0, -744.4, -745.13, -745.14, -749.9, -750.0,
        ],
    }
}

/// The plate weights' exponential is within 1.5 ulp of the true value: 1/2 ulp from its
/// table's rounding, 1/2 from its last, and its polynomial's and reduced argument's errors.
#[test]
fn the_tabled_exponential_is_within_1_5_ulp() {
    let case = nonpositive_case(
        "exp_of_nonpositive_tabled",
        elementary::exp_of_nonpositive_tabled,
    );
    assert_eq!(elementary::exp_of_nonpositive_tabled(0.0), 1.0);
    assert_eq!(elementary::exp_of_nonpositive_tabled(-0.0), 1.0);
    assert_eq!(
        elementary::exp_of_nonpositive_tabled(f64::NEG_INFINITY),
        0.0
    );
    let (e, x) = worst(&case, 1 << 16, 0x7ab1);
    eprintln!("exp_of_nonpositive_tabled: worst {e:.3} ulp at {x:e}");
    assert!(e <= 1.5, "exp_of_nonpositive_tabled: {e} ulp at {x:e}");
}

#[test]
#[ignore = "10^7 inputs: run with --release --ignored"]
fn the_tabled_exponential_is_within_1_5_ulp_over_ten_million_inputs() {
    let case = nonpositive_case(
        "exp_of_nonpositive_tabled",
        elementary::exp_of_nonpositive_tabled,
    );
    let per_range = 10_000_000usize.div_ceil(case.ranges.len());
    let (e, x) = worst(&case, per_range, 0x5eed_0011);
    eprintln!("exp_of_nonpositive_tabled: worst {e:.4} ulp at {x:e} over 10^7 inputs");
    assert!(e <= 1.5, "exp_of_nonpositive_tabled: {e} ulp at {x:e}");
}

/// The tabled exponential's table holds the doubles nearest `2^(j/16)`: `T^16`, in
/// double-double arithmetic, is `2^j` within 16 times half an ulp of `T`, and not within
/// that for `T`'s neighbours.
#[test]
fn the_tabled_exponentials_table_is_rounded_to_nearest() {
    // The relative error of `t` as `2^(j/16)`, to first order: (t^16 / 2^j - 1) / 16.
    let rel = |t: f64, j: i32| {
        let mut p = Dd::from(t);
        for _ in 0..4 {
            p = p.mul(p);
        }
        let d = p.ldexp(-j).sub(Dd::from(1.0));
        (d.hi + d.lo) / 16.0
    };
    for (j, &t) in elementary::EXP2_SIXTEENTHS.iter().enumerate() {
        let j = j as i32;
        let half_ulp = pow2(-53); // t in [1, 2): half an ulp relative is at most 2^-53
        let err = rel(t, j).abs() * t;
        assert!(
            err <= half_ulp * 1.0000001,
            "entry {j}: {t:e} off by {err:e}"
        );
        for n in [t.next_up(), t.next_down()] {
            assert!(
                rel(n, j).abs() * n > err,
                "entry {j}: its neighbour {n:e} is nearer"
            );
        }
    }
}

/// A plate body's weights (`sigmoid_big_small_plain` of the tabled exponential) stay within
/// 3 ulp of the correctly rounded sigmoid over the sigmoid's own ranges and edges.
#[test]
fn the_plate_sigmoid_is_within_3_ulp() {
    let sigmoid = cases()
        .into_iter()
        .find(|c| c.name == "sigmoid")
        .expect("the sigmoid's case");
    let plate = Case {
        name: "sigmoid_tabled",
        f: elementary::sigmoid_tabled,
        ..sigmoid
    };
    let (e, x) = worst(&plate, 1 << 17, 0x91a2);
    eprintln!("sigmoid_tabled: worst {e:.3} ulp at {x:e}");
    assert!(e <= 3.0, "sigmoid_tabled: {e} ulp at {x:e}");
}

/// The smoothed if-statement's weights take `exp(-|x|)` from `exp_of_nonpositive`, which
/// scales by one power of two instead of `exp`'s two: it must give `exp`'s bits for every
/// argument at most 0, subnormal results (below about -708.4) and the clamp at -750 included.
#[test]
fn exp_of_nonpositive_gives_the_bits_of_exp() {
    use elementary::{exp, exp_of_nonpositive};
    let mut inputs = Inputs(0x0e4b_0001);
    let mut xs: Vec<f64> = vec![
        0.0,
        -0.0,
        -1e-300,
        -5e-324,
        -0.5,
        -708.39,
        -708.4,
        -709.0,
        -744.4,
        -745.13,
        -745.14,
        -745.2,
        -749.9,
        -750.0,
        -750.1,
        -1e5,
        -1e300,
        -f64::MAX,
        f64::NEG_INFINITY,
    ];
    for _ in 0..1_000_000 {
        xs.push(inputs.uniform(-760.0, 0.0));
        xs.push(inputs.uniform(-746.0, -700.0));
        xs.push(-inputs.log_uniform(-1074, 10).abs());
    }
    for x in xs {
        assert_eq!(
            exp_of_nonpositive(x).to_bits(),
            exp(x).to_bits(),
            "exp_of_nonpositive({x:e})"
        );
    }
}

#[test]
fn special_values_are_the_limits() {
    use elementary::{exp, ln, log1p, sigmoid, softplus};
    let inf = f64::INFINITY;
    assert_eq!(exp(inf), inf);
    assert_eq!(exp(-inf), 0.0);
    assert_eq!(exp(0.0), 1.0);
    assert_eq!(exp(-0.0), 1.0);
    assert_eq!(exp(710.0), inf);
    assert_eq!(exp(-746.0), 0.0);
    assert_eq!(exp(-745.0), 5e-324);
    assert!(exp(f64::NAN).is_nan());
    assert_eq!(ln(1.0), 0.0);
    assert_eq!(ln(0.0), -inf);
    assert_eq!(ln(-0.0), -inf);
    assert_eq!(ln(inf), inf);
    assert!(ln(-1.0).is_nan() && ln(-inf).is_nan() && ln(f64::NAN).is_nan());
    assert!((ln(5e-324) + 744.4400719213812).abs() < 2e-13);
    assert_eq!(log1p(0.0).to_bits(), 0.0f64.to_bits());
    assert_eq!(log1p(-0.0).to_bits(), (-0.0f64).to_bits());
    assert_eq!(log1p(5e-324), 5e-324);
    assert_eq!(log1p(-1.0), -inf);
    assert_eq!(log1p(inf), inf);
    assert!(log1p(-2.0).is_nan() && log1p(-inf).is_nan() && log1p(f64::NAN).is_nan());
    assert_eq!(sigmoid(inf), 1.0);
    assert_eq!(sigmoid(-inf), 0.0);
    assert_eq!(sigmoid(0.0), 0.5);
    assert!(sigmoid(f64::NAN).is_nan());
    assert_eq!(softplus(inf), inf);
    assert_eq!(softplus(-inf), 0.0);
    assert_eq!(softplus(1000.0), 1000.0);
    assert!(softplus(f64::NAN).is_nan());
}

#[test]
fn every_kernel_set_gives_the_scalar_bits() {
    let sets = KernelSet::available();
    let wide = sets.contains(&KernelSet::Avx512);
    // AVX2 and AVX-512 each come with a compiled forward sweep's set (where the crate is
    // built with the machine-code generator), whose lane routines are their own.
    let jit = cfg!(all(feature = "jit", target_arch = "x86_64")) as usize;
    assert_eq!(
        sets.len(),
        if dsgd::eval::simd_available() {
            2 + jit + wide as usize * (1 + jit)
        } else {
            1
        }
    );
    let mut g = Inputs(77);
    let gens: [fn(&mut Inputs) -> f64; 4] = [
        |g| g.any_bits(),
        |g| g.uniform(-750.0, 750.0),
        |g| g.uniform(-2.0, 2.0),
        |g| g.log_uniform(-1074, 1024).abs(),
    ];
    for round in 0..20_000 {
        let x: [f64; CHUNK] = std::array::from_fn(|_| gens[round % gens.len()](&mut g));
        let want_exp = x.map(|v| elementary::exp(v).to_bits());
        let want_ln = x.map(|v| elementary::ln(v).to_bits());
        for &set in &sets {
            assert_eq!(
                vmath::exp_lanes_on(set, &x).map(f64::to_bits),
                want_exp,
                "{set:?} {x:?}"
            );
            assert_eq!(
                vmath::ln_lanes_on(set, &x).map(f64::to_bits),
                want_ln,
                "{set:?} {x:?}"
            );
        }
    }
}
