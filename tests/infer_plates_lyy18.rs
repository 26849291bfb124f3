//! LYY18 on plates: a model whose loop is kept as a plate gives LYY18's values and gradient
//! samples of the same model unrolled (within 1e-12 relative: the plate takes each jump from
//! its row alone, the unrolled loop as the difference of two whole-program values); a guard
//! not affine at every row is refused, naming it; the results do not depend on the number of
//! threads; and a subsampled plate's LYY18 gradient is unbiased for the full-data one.

use dsgd::estimate::{Engine, EstimatorKind, Problem, Purpose, StreamKey, build};
use dsgd::ir::{Builder, Dist, Model, Var};

/// One row's term: `log N(u | a, 1)` (with row latents) plus a Bernoulli likelihood whose
/// probability jumps at `a + b x + 0.5 x c (+ u) = 0` (affine in the latents, its
/// coefficients read from the row's data), a second jump at `c - x = 0`, and a smooth part
/// `-0.05 (b x - y + theta)^2` (so that the model's parameter has a gradient).
#[allow(clippy::too_many_arguments)]
fn row_term<'b>(
    bld: &'b Builder,
    a: Var<'b>,
    b: Var<'b>,
    c: Var<'b>,
    theta: Var<'b>,
    x: Var<'b>,
    y: Var<'b>,
    u: Option<Var<'b>>,
) -> Var<'b> {
    let one = bld.constant(1.0);
    let mut guard = a + b * x + 0.5 * x * c;
    let mut term = bld.constant(0.0);
    if let Some(u) = u {
        guard = guard + u;
        term = bld.log_density(Dist::Normal, u, &[a, one]).unwrap();
    }
    let p = bld.if_neg(guard, bld.constant(0.1), bld.constant(0.9));
    let extra = bld.if_neg(c - x, bld.constant(0.3), bld.constant(-0.2));
    let smooth = b * x - y + theta;
    term + y * p.ln() + (1.0 - y) * (1.0 - p).ln() + extra - 0.05 * smooth * smooth
}

/// The outer part: priors on `a` and `b`, a jump on `a` of its own, a penalty on `theta`.
fn outer_term<'b>(bld: &'b Builder, a: Var<'b>, b: Var<'b>, theta: Var<'b>) -> Var<'b> {
    let (zero, five) = (bld.constant(0.0), bld.constant(5.0));
    let jump = bld.if_neg(a - 0.3, bld.constant(0.4), bld.constant(-0.4));
    jump + bld.log_density(Dist::Normal, a, &[zero, five]).unwrap()
        + bld.log_density(Dist::Normal, b, &[zero, five]).unwrap()
        - 0.5 * theta * theta
}

mod plate_models;
use plate_models::Terms;

const TERMS: Terms = Terms {
    outer: outer_term,
    row: row_term,
    c_std: 0.9,
};

/// The model with its loop unrolled (after the outer part, as the plate numbers its
/// if-statements).
fn unrolled(n: usize, rl: bool) -> Model {
    plate_models::unrolled(n, rl, &TERMS)
}

/// The same model with its loop kept as a plate, its body `term`.
fn plated_with(
    n: usize,
    rl: bool,
    term: impl for<'b> Fn(&'b Builder, [Var<'b>; 6], Option<Var<'b>>) -> Var<'b>,
) -> Model {
    plate_models::plated_with(n, rl, &TERMS, term)
}

fn plated(n: usize, rl: bool) -> Model {
    plate_models::plated(n, rl, &TERMS)
}

fn engine(model: &Model, subsample: Option<usize>) -> Engine {
    let problem = Problem::new(model).unwrap();
    let est = build(EstimatorKind::Lyy18, &problem, 0.3, None).unwrap();
    let mut e = Engine::new(problem, est);
    e.set_subsample(subsample);
    e
}

/// Gradient samples, values and crisp values of one batch.
fn batch(e: &mut Engine, theta: &[f64], key: StreamKey, n: usize) -> Vec<f64> {
    e.evaluate(theta, key, n, true).unwrap();
    let mut out = e.sample_gradients();
    out.extend(e.values());
    out.extend(e.crisp_values());
    out
}

/// `got` equals `want` within 1e-12 of the batch's scale of each kind of number.
fn assert_close(want: &[f64], got: &[f64], what: &str) {
    assert_eq!(want.len(), got.len());
    for (i, (&w, &g)) in want.iter().zip(got).enumerate() {
        assert!(
            (w - g).abs() <= 1e-12 * w.abs().max(g.abs()).max(1.0),
            "{what}: entry {i}: {w} against {g}"
        );
    }
}

/// A plate and its unrolled loop: LYY18's same numbers, with and without row latents, over
/// groups of rows and a remainder, full and short chunks of lanes. Catches a row's guard
/// read at another row's data, the wrong count of if-statements, a pick mapped to the wrong
/// row or if-statement, a jump not taken on the boundary, a moved row latent not moved.
#[test]
fn lyy18_on_a_plate_gives_the_unrolled_loops_values_and_gradients() {
    for (n, rl) in [(100, false), (45, true)] {
        let (flat, plate) = (unrolled(n, rl), plated(n, rl));
        let theta = Problem::new(&flat).unwrap().family().init();
        let (mut ef, mut ep) = (engine(&flat, None), engine(&plate, None));
        let mut boundary = 0;
        for (it, lanes) in [(0, 16), (5, 37), (9, 64)] {
            let key = StreamKey::new(11, it, Purpose::Step);
            let want = batch(&mut ef, &theta, key, lanes);
            let got = batch(&mut ep, &theta, key, lanes);
            assert_close(&want, &got, &format!("n {n} row latents {rl}"));
            // An optimisation step's sweeps (the plates' values only checked): the same
            // gradient samples.
            ef.step(&theta, key, lanes).unwrap();
            ep.step(&theta, key, lanes).unwrap();
            assert_close(
                &ef.sample_gradients(),
                &ep.sample_gradients(),
                &format!("step n {n} row latents {rl}"),
            );
            // The boundary term moved some samples off the crisp pathwise gradient.
            let mut reparam = Engine::new(
                Problem::new(&plate).unwrap(),
                build(EstimatorKind::Reparam, ep.problem(), 0.3, None).unwrap(),
            );
            let crisp = batch(&mut reparam, &theta, key, lanes);
            boundary += want.iter().zip(&crisp).filter(|(a, b)| a != b).count();
        }
        assert!(boundary > 0, "no boundary term at all");
    }
}

/// A guard of the body that is not affine at every row (a shared latent times a row's own)
/// is refused, naming the if-statement; so is one that reads a model parameter.
#[test]
fn lyy18_refuses_a_plate_guard_not_affine_at_every_row() {
    let nonlinear = plated_with(10, true, |b, [a, bb, _c, _t, x, y], u| {
        let u = u.unwrap();
        let p = b.if_neg(a + bb * u + x, b.constant(0.1), b.constant(0.9));
        y * p.ln()
    });
    let with_param = plated_with(10, false, |b, [a, _bb, _c, t, x, y], _u| {
        let p = b.if_neg(a + t * x, b.constant(0.1), b.constant(0.9));
        y * p.ln()
    });
    for (model, why) in [(nonlinear, "non-linear"), (with_param, "parameter")] {
        let problem = Problem::new(&model).unwrap();
        let msg = build(EstimatorKind::Lyy18, &problem, 0.3, None)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("not affine") && msg.contains(why), "{msg}");
    }
}

/// One thread or two: the same bits.
#[test]
fn lyy18_on_a_plate_does_not_depend_on_the_threads() {
    let model = plated(900, true);
    let theta = Problem::new(&model).unwrap().family().init();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut e = engine(&model, None);
            let mut out = batch(&mut e, &theta, StreamKey::new(3, 2, Purpose::Step), 50);
            let mut s = engine(&model, Some(70));
            out.extend(batch(
                &mut s,
                &theta,
                StreamKey::new(3, 4, Purpose::Step),
                50,
            ));
            out.into_iter().map(f64::to_bits).collect::<Vec<_>>()
        })
    };
    assert!(run(1) == run(2));
}

/// The mean of subsampled LYY18 gradients is the full-data LYY18 gradient: the paired
/// differences (the same noise, subsampled and not) have mean zero within 4 standard errors,
/// with and without row latents, and are not all zero. Catches a jump not scaled by `n / M`,
/// the if-statements counted over all rows instead of the drawn ones (or the reverse), an
/// undrawn row picked.
#[test]
fn subsampled_lyy18_gradients_are_unbiased() {
    for (n, m, rl) in [(60, 7, false), (40, 6, true)] {
        let model = plated(n, rl);
        let theta = Problem::new(&model).unwrap().family().init();
        let mut full = engine(&model, None);
        let mut sub = engine(&model, Some(m));
        let what = format!("n {n} m {m} row latents {rl}");
        plate_models::assert_subsample_unbiased(&mut full, &mut sub, &theta, &what);
    }
}
