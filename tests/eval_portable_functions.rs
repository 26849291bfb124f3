//! The primitives that are neither in `dsgd::elementary` nor exact (`expm1`, `tanh`, `sin`,
//! `cos`, `pow`) come from portable Rust code, never from the platform's C library, so a run
//! gives the same bits on every machine. This checks they are accurate: within 2 ulp of the
//! platform's own functions (an independent implementation, itself within about 1 ulp of the
//! true value) over wide sweeps of arguments (3 for `tanh`, whose portable version is the
//! least accurate of them), and exact where the answer is.

use dsgd::ir::{Binary, Unary, binary_value, unary_value};

/// Distance in ulps of `b`'s binade (at least the smallest normal's), 0 for equal or both NaN.
fn ulps(a: f64, b: f64) -> f64 {
    if a.is_nan() && b.is_nan() || a == b {
        return 0.0;
    }
    if !a.is_finite() || !b.is_finite() {
        return f64::INFINITY;
    }
    let ulp = |x: f64| {
        let e = x.abs().max(f64::MIN_POSITIVE).log2().floor();
        2f64.powf(e - 52.0)
    };
    (a - b).abs() / ulp(b)
}

/// Arguments spread over several decades of both signs, plus the edges.
fn arguments(limit: f64) -> Vec<f64> {
    let mut xs = vec![
        0.0, -0.0, 1e-300, -1e-300, 1e-20, -1e-20, 0.5, -0.5, 1.0, -1.0,
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..100_000 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let u = (state >> 11) as f64 / (1u64 << 53) as f64;
        // Log-uniform magnitude in [1e-8, limit], random sign.
        let mag = 1e-8 * (limit / 1e-8f64).powf(u);
        xs.push(if state & 1 == 0 { mag } else { -mag });
    }
    xs
}

fn worst_unary(op: Unary, reference: fn(f64) -> f64, limit: f64) -> (f64, f64) {
    arguments(limit)
        .into_iter()
        .map(|x| (ulps(unary_value(op, x), reference(x)), x))
        .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

#[test]
fn expm1_tanh_sin_cos_are_within_their_bounds() {
    for (op, reference, limit, bound) in [
        (Unary::Expm1, f64::exp_m1 as fn(f64) -> f64, 700.0, 2.0),
        (Unary::Tanh, f64::tanh, 30.0, 3.0),
        (Unary::Sin, f64::sin, 1e5, 2.0),
        (Unary::Cos, f64::cos, 1e5, 2.0),
    ] {
        let (worst, at) = worst_unary(op, reference, limit);
        eprintln!("{op:?}: worst {worst} ulp at {at:e}");
        assert!(worst <= bound, "{op:?}: {worst} ulp at {at:e}");
    }
}

#[test]
fn pow_is_within_2_ulp_and_exact_on_exact_cases() {
    let bases = arguments(1e3);
    let mut worst: (f64, f64, f64) = (0.0, 0.0, 0.0);
    for (i, &a) in bases.iter().enumerate().step_by(7) {
        let a = a.abs();
        let b = bases[(i * 31 + 5) % bases.len()].clamp(-50.0, 50.0);
        let e = ulps(binary_value(Binary::Pow, a, b), a.powf(b));
        if e > worst.0 {
            worst = (e, a, b);
        }
    }
    assert!(
        worst.0 <= 2.0,
        "pow: {} ulp at {:e}^{:e}",
        worst.0,
        worst.1,
        worst.2
    );
    assert_eq!(binary_value(Binary::Pow, 2.0, 10.0), 1024.0);
    assert_eq!(binary_value(Binary::Pow, 9.0, 0.5), 3.0);
    assert_eq!(binary_value(Binary::Pow, 0.0, 0.0), 1.0);
    assert!(binary_value(Binary::Pow, -1.0, 0.5).is_nan());
}
