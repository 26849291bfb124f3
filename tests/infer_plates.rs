//! Plates in the estimators: a model whose loop is kept as a plate gives the values and
//! gradient samples of the same model unrolled (within 1e-12 relative: the additions are in
//! another order), under every estimator (LYY18's in `infer_plates_lyy18.rs`); the results do
//! not depend on the number of threads; and a subsampled plate's gradient is unbiased for
//! the full-data one.

use std::sync::Arc;

use dsgd::estimate::{Engine, EstimatorKind, Problem, Purpose, StreamKey, build};
use dsgd::ir::{Builder, Dist, Mode, Model, Plate, Shared, Var};

/// One row's term: `log N(u | a, 1)` (with row latents) plus
/// `y ln p + (1 - y) ln(1 - p)`, `p = if a + b x + c t + u < 0 then 0.1 else 0.9` with
/// `t = theta * x` (`theta` a model parameter), minus `0.05 (b x - y)^2` (a smooth part, so
/// that the crisp pathwise gradient sees the rows too).
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
    let mut guard = a + b * x + c * (theta * x);
    let mut term = bld.constant(0.0);
    if let Some(u) = u {
        guard = guard + u;
        term = bld.log_density(Dist::Normal, u, &[a, one]).unwrap();
    }
    let p = bld.if_neg(guard, bld.constant(0.1), bld.constant(0.9));
    let smooth = b * x - y;
    term + y * p.ln() + (1.0 - y) * (1.0 - p).ln() - 0.05 * smooth * smooth
}

/// The outer part: priors on `a` and `b` (not on `c`, which only the rows read) and a
/// penalty on `theta`.
fn outer_term<'b>(bld: &'b Builder, a: Var<'b>, b: Var<'b>, theta: Var<'b>) -> Var<'b> {
    let (zero, five) = (bld.constant(0.0), bld.constant(5.0));
    bld.log_density(Dist::Normal, a, &[zero, five]).unwrap()
        + bld.log_density(Dist::Normal, b, &[zero, five]).unwrap()
        - 0.5 * theta * theta
}

mod plate_models;
use plate_models::{Terms, guided};

const TERMS: Terms = Terms {
    outer: outer_term,
    row: row_term,
    c_std: 0.3,
};

/// The model with its loop unrolled.
fn unrolled(n: usize, rl: bool) -> Model {
    plate_models::unrolled(n, rl, &TERMS)
}

/// The same model with its loop kept as a plate (as lowering will build it).
fn plated(n: usize, rl: bool) -> Model {
    plate_models::plated(n, rl, &TERMS)
}

const PLATED: [EstimatorKind; 5] = [
    EstimatorKind::Dsgd,
    EstimatorKind::Fixed,
    EstimatorKind::Reparam,
    EstimatorKind::Score,
    EstimatorKind::Rloo,
];

fn engine(model: &Model, kind: EstimatorKind) -> Engine {
    let problem = Problem::new(model).unwrap();
    let est = build(kind, &problem, 0.3, None).unwrap();
    Engine::new(problem, est)
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

/// A plate and its unrolled loop: the same numbers, for every estimator that runs plates,
/// with and without row latents, over several blocks of rows and a short chunk of lanes.
/// Catches a row summed twice or not at all, a gradient sent to the wrong row, a row
/// latent's value formed from another row's noise, the entropy of a row latent lost.
#[test]
fn a_plate_gives_the_unrolled_loops_values_and_gradients() {
    for (n, rl) in [(1100, false), (700, true)] {
        let (flat, plate) = (unrolled(n, rl), plated(n, rl));
        let theta = Problem::new(&flat).unwrap().family().init();
        for kind in PLATED {
            let (mut ef, mut ep) = (engine(&flat, kind), engine(&plate, kind));
            for (it, lanes) in [(0, 16), (5, 37)] {
                let key = StreamKey::new(11, it, Purpose::Step);
                let want = batch(&mut ef, &theta, key, lanes);
                let got = batch(&mut ep, &theta, key, lanes);
                assert_close(&want, &got, &format!("{kind} n {n} row latents {rl}"));
                // An optimisation step's sweeps (values only checked): the same gradient
                // samples (each sample's, not their mean, whose terms may cancel).
                ef.step(&theta, key, lanes).unwrap();
                ep.step(&theta, key, lanes).unwrap();
                assert_close(
                    &ef.sample_gradients(),
                    &ep.sample_gradients(),
                    &format!("{kind} step n {n} row latents {rl}"),
                );
            }
        }
    }
}

/// One thread or two: the same bits (the rows' sums are in row order in each lane).
#[test]
fn a_plates_results_do_not_depend_on_the_threads() {
    let model = plated(900, true);
    let theta = Problem::new(&model).unwrap().family().init();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            PLATED
                .iter()
                .flat_map(|&k| {
                    let mut e = engine(&model, k);
                    batch(&mut e, &theta, StreamKey::new(3, 2, Purpose::Step), 50)
                })
                .map(f64::to_bits)
                .collect::<Vec<_>>()
        })
    };
    assert!(run(1) == run(2));
}

/// The mean of subsampled gradients is the full-data gradient: the paired differences
/// (the same key, subsampled and not; with row latents, DSGD, Fixed and Reparam draw noise
/// for the latents a step reads alone, so their pairs share less of it) have mean zero
/// within 4 standard errors, for each
/// estimator, with and without row latents; and they are not all zero (the subsample does
/// change the gradient). Catches a missing `n / M`, a drawn row latent's entropy not scaled,
/// an undrawn row latent given a gradient.
#[test]
fn subsampled_gradients_are_unbiased() {
    for (n, m, rl) in [(60, 7, false), (40, 6, true)] {
        let model = plated(n, rl);
        let theta = Problem::new(&model).unwrap().family().init();
        for kind in PLATED {
            let mut full = engine(&model, kind);
            let mut sub = engine(&model, kind);
            sub.set_subsample(Some(m));
            let what = format!("{kind} n {n} m {m} row latents {rl}");
            plate_models::assert_subsample_unbiased(&mut full, &mut sub, &theta, &what);
        }
    }
}

/// What the estimators' analysis sees of a plate: its body's if-statement among the
/// model's (a jump whose guard reads a latent, as in the unrolled model, where every row's
/// is one), counted once per row, and the nesting depth of the unrolled model.
#[test]
fn a_plates_if_statements_are_analysed_and_counted_per_row() {
    let n = 12;
    let (flat, plate) = (
        Problem::new(&unrolled(n, true)).unwrap(),
        Problem::new(&plated(n, true)).unwrap(),
    );
    assert_eq!(plate.if_statements(), n);
    assert_eq!(flat.if_statements(), n);
    let (fa, pa) = (flat.analysis(), plate.analysis());
    assert_eq!(pa.if_count(), 1);
    assert_eq!(pa.nesting_depth, fa.nesting_depth);
    assert_eq!(pa.latent_dependent().count(), 1);
    assert_eq!(fa.latent_dependent().count(), n);
    assert_eq!(
        pa.param_dependent().count() > 0,
        fa.param_dependent().count() > 0
    );
}

/// A run with `subsample` reports it and climbs the full-data ELBO (its measurements read
/// every row); zero rows are refused, naming the option.
#[test]
fn a_subsampled_run_reports_it_and_zero_rows_are_refused() {
    let model = plated(400, false);
    let base = dsgd::RunConfig {
        iterations: 300,
        log_every: 100,
        log_samples: 200,
        threads: Some(1),
        ..dsgd::RunConfig::default()
    };
    let sub = dsgd::fit(
        &model,
        &dsgd::RunConfig {
            subsample: Some(40),
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!(sub.subsample, Some(40));
    assert!(sub.to_json().contains("\"subsample\": 40"));
    let full = dsgd::fit(&model, &base).unwrap();
    assert_eq!(full.subsample, None);
    assert!(!full.to_json().contains("subsample"));
    let (first, last) = (&sub.trajectory[0], sub.trajectory.last().unwrap());
    assert!(
        last.value - first.value > 4.0 * last.value_se.hypot(first.value_se),
        "{} -> {}",
        first.value,
        last.value
    );
    let bad = dsgd::RunConfig {
        subsample: Some(0),
        ..base.clone()
    };
    let msg = bad.validate().unwrap_err().to_string();
    assert!(msg.contains("subsample"), "{msg}");
    let lyy18 = dsgd::RunConfig {
        subsample: Some(5),
        estimator: EstimatorKind::Lyy18,
        ..base.clone()
    };
    assert!(lyy18.validate().is_ok());
}

/// A run that stops on a non-finite value names the plate's row behind it: the first row
/// whose body is not finite at the failing sample.
#[test]
fn a_non_finite_row_is_named() {
    let n = 30;
    let bad = 7;
    let bld = Builder::new();
    let a = bld.latent("a");
    let (zero, one) = (bld.constant(0.0), bld.constant(1.0));
    let outer = bld
        .finish(&[bld.log_density(Dist::Normal, a, &[zero, one]).unwrap()])
        .unwrap();
    let body = Builder::new();
    let (ba, x) = (body.param("a"), body.latent("x"));
    let g = (x - 0.1 * ba).ln();
    let x: Vec<f64> = (0..n)
        .map(|r| if r == bad { -50.0 } else { 5.0 + r as f64 })
        .collect();
    let model = Model {
        name: "bad_row".into(),
        mode: Mode::Variational,
        program: outer.into(),
        latents: vec![guided("a".into(), 0.0, 0.5)],
        params: Vec::new(),
        loops: Vec::new(),
        plates: vec![Plate {
            var: "i".into(),
            span: None,
            rows: n,
            body: Arc::new(body.finish(&[g]).unwrap()),
            shared: vec![Shared::Latent(0)],
            columns: vec![x.into()],
            row_latents: Vec::new(),
        }],
    };
    let report = dsgd::fit(
        &model,
        &dsgd::RunConfig {
            iterations: 5,
            threads: Some(1),
            ..dsgd::RunConfig::default()
        },
    )
    .unwrap();
    let msg = report.stop_message.unwrap_or_default();
    assert!(msg.contains("row 7 of the loop over `i`"), "{msg}");
}

/// A subsampled measurement (each chunk of samples on rows of its own) estimates the
/// full-data value without bias: over many measurements at one point, on the same samples,
/// the mean difference from the full-data value is within its standard error.
#[test]
fn a_subsampled_measurement_is_unbiased_with_an_honest_standard_error() {
    let (n, m, samples) = (700, 40, 160);
    for rl in [false, true] {
        let model = plated(n, rl);
        let theta = Problem::new(&model).unwrap().family().init();
        let mut full = engine(&model, EstimatorKind::Reparam);
        let mut sub = engine(&model, EstimatorKind::Reparam);
        sub.set_subsample(Some(m));
        sub.set_rows_per_chunk(true);
        assert!(sub.rows_per_chunk());
        let reps = 300;
        let (mut diffs, mut values) = (Vec::new(), Vec::new());
        for it in 0..reps {
            // The same samples (same key) with every row and with each chunk's rows.
            let key = StreamKey::new(9, it, Purpose::Measure);
            full.evaluate(&theta, key, samples, true).unwrap();
            sub.evaluate(&theta, key, samples, true).unwrap();
            assert!(sub.subsample().is_none(), "no one subsample for the batch");
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let (f, s) = (mean(full.crisp_values()), mean(sub.crisp_values()));
            diffs.push(s - f);
            values.push(s);
        }
        let k = reps as f64;
        let mean = diffs.iter().sum::<f64>() / k;
        let var = diffs.iter().map(|d| (d - mean) * (d - mean)).sum::<f64>() / (k - 1.0);
        assert!(
            mean.abs() <= 4.0 * (var / k).sqrt(),
            "rows {rl}: bias {mean} against se {}",
            (var / k).sqrt()
        );
        // Different rows per chunk: the measurements differ from the full-data ones.
        assert!(var > 0.0);
    }
}
