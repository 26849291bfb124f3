//! The leave-one-out baseline (RLOO) keeps Score unbiased and lowers its variance.
//!
//! The lanes of one batch of 16 (one chunk) share baselines, so their gradient samples are
//! not independent: the standard errors here come from independent batch means.

mod infer_common;

use dsgd::estimate::{self, Engine, EstimatorKind, Problem, Purpose, StreamKey};
use dsgd::ir::{Builder, Dist, Mode, Model};
use dsgd::special::normal_pdf;
use infer_common::{example, vi_step, vi_step_gradient};

/// [`vi_step`] with `shift` added to `log p`, as a data set's log-likelihood adds a large
/// constant-like term: the gradient is unchanged, Score's variance grows with `shift^2`.
fn vi_step_shifted(a: [f64; 2], c: f64, shift: f64) -> Model {
    let base = vi_step(a, c);
    let b = Builder::new();
    let z1 = b.latent("z1");
    let z2 = b.latent("z2");
    let (zero, one) = (b.constant(0.0), b.constant(1.0));
    let prior = b.log_density(Dist::Normal, z1, &[zero, one]).unwrap()
        + b.log_density(Dist::Normal, z2, &[zero, one]).unwrap();
    let guard = a[0] * z1 + a[1] * z2 + c;
    let f = prior + b.if_neg(guard, zero, one) + shift;
    Model {
        name: "vi_step_shifted".into(),
        mode: Mode::Variational,
        program: b.finish(&[f]).unwrap().into(),
        latents: base.latents,
        params: vec![],
        plates: Vec::new(),
        loops: Vec::new(),
    }
}

fn engine(model: &dsgd::ir::Model, kind: EstimatorKind) -> Engine {
    let problem = Problem::new(model).unwrap();
    let est = estimate::build(kind, &problem, 0.1, None).unwrap();
    Engine::new(problem, est)
}

/// Mean, standard error and variance of the batch-mean gradient over `batches` independent
/// batches of 16.
fn batch_means(engine: &mut Engine, theta: &[f64], batches: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let d = theta.len();
    let (mut sum, mut sq) = (vec![0.0; d], vec![0.0; d]);
    for it in 0..batches {
        engine
            .evaluate(theta, StreamKey::new(11, it, Purpose::Other(3)), 16, false)
            .unwrap();
        for (p, g) in engine.mean_gradient().iter().enumerate() {
            sum[p] += g;
            sq[p] += g * g;
        }
    }
    let n = batches as f64;
    let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
    let var: Vec<f64> = (0..d)
        .map(|p| (sq[p] / n - mean[p] * mean[p]) * n / (n - 1.0))
        .collect();
    let se = var.iter().map(|v| (v / n).sqrt()).collect();
    (mean, se, var)
}

fn assert_within(name: &str, mean: f64, se: f64, expected: f64) {
    assert!(se > 0.0, "{name}: zero standard error");
    assert!(
        (mean - expected).abs() <= 4.0 * se,
        "{name}: mean {mean} vs expected {expected} (se {se})"
    );
}

#[test]
fn rloo_is_unbiased_on_example_1_1() {
    // d/dtheta E[-z^2/2 + [z >= 0]] = -theta + N(theta | 0, 1).
    for theta in [1.0, 0.3722, -0.5] {
        let truth = -theta + normal_pdf(theta);
        let mut e = engine(&example(), EstimatorKind::Rloo);
        let (m, se, _) = batch_means(&mut e, &[theta], 20_000);
        assert_within(&format!("rloo theta={theta}"), m[0], se[0], truth);
    }
}

#[test]
fn rloo_is_unbiased_on_a_variational_step_and_ignores_a_constant_in_f() {
    for (a, c) in [([1.0, 0.0], -0.2), ([1.0, -2.0], 0.5)] {
        let theta = [0.3, 0.5, -0.2, -0.4];
        let truth = vi_step_gradient(a, c, &theta);
        let mut var = Vec::new();
        for (kind, shift) in [
            (EstimatorKind::Rloo, 0.0),
            (EstimatorKind::Rloo, 20.0),
            (EstimatorKind::Score, 20.0),
        ] {
            let mut e = engine(&vi_step_shifted(a, c, shift), kind);
            let (m, se, v) = batch_means(&mut e, &theta, 20_000);
            for p in 0..4 {
                let name = format!("{kind} shift {shift} a={a:?} component {p}");
                assert_within(&name, m[p], se[p], truth[p]);
            }
            var.push(v.iter().sum::<f64>());
        }
        // The leave-one-out baseline removes the constant: the same variance with and
        // without it (the same samples; only rounding differs) ...
        assert!((var[0] - var[1]).abs() < 1e-6 * var[0], "{var:?}");
        // ... while Score's grows with it: by far more than the 1 % relative standard
        // error of a variance from 20,000 batch means.
        assert!(
            var[1] < 0.1 * var[2],
            "a={a:?}: RLOO {} vs Score {}",
            var[1],
            var[2]
        );
    }
}

#[test]
fn rloo_gives_the_same_bits_for_any_thread_count() {
    let model = vi_step([1.0, -2.0], 0.5);
    let theta = [0.3, 0.5, -0.2, -0.4];
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut e = engine(&model, EstimatorKind::Rloo);
            e.evaluate(&theta, StreamKey::new(3, 0, Purpose::Other(1)), 100, false)
                .unwrap();
            e.sample_gradients()
        })
    };
    assert_eq!(run(1), run(2));
}
